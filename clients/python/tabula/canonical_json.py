"""RFC 8785 JSON Canonicalization Scheme (JCS), as the service hashes it (src/domain/shared/canonical-json.ts).

Object keys sorted by UTF-16 code units, no whitespace, strings escaped as ECMAScript's
``JSON.stringify`` does, and numbers written as ECMAScript writes a double (``Number::toString``):
a JSON number is a double in the service, so ``Decimal("0.1")``, ``1e21`` and ``10**20`` are first
rounded to the nearest double and then written (``0.1``, ``1e+21``, ``100000000000000000000``).
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any, Mapping, Sequence

_SHORT_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def canonical_json(value: Any) -> str:
    """The JCS text of a JSON value (dict, list, str, int, Decimal, float, bool, None).

    Raises TypeError for what has no canonical form: a non-finite number, a lone surrogate, a key
    that is not a string, or a value of another type.
    """
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, str):
        return canonical_string(value)
    if isinstance(value, (int, float, Decimal)):
        return number_text(value)
    if isinstance(value, Mapping):
        for key in value:
            if not isinstance(key, str):
                raise TypeError(f"canonical JSON object keys must be strings, got {type(key).__name__}")
        keys = sorted(value, key=_utf16_key)
        return "{" + ",".join(f"{canonical_string(key)}:{canonical_json(value[key])}" for key in keys) + "}"
    if isinstance(value, Sequence) and not isinstance(value, (bytes, bytearray)):
        return "[" + ",".join(canonical_json(item) for item in value) + "]"
    raise TypeError(f"canonical JSON has no representation for {type(value).__name__}")


def _utf16_key(key: str) -> bytes:
    # Big-endian UTF-16 bytes compare exactly as the code units do (RFC 8785 section 3.2.3).
    return key.encode("utf-16-be", "surrogatepass")


def canonical_string(text: str) -> str:
    """A string as ``JSON.stringify`` writes it; a lone surrogate has no canonical form (RFC 8785 3.2.2.2)."""
    parts = ['"']
    for char in text:
        code = ord(char)
        if 0xD800 <= code <= 0xDFFF:
            raise TypeError("canonical JSON has no representation for a lone surrogate")
        if char in _SHORT_ESCAPES:
            parts.append(_SHORT_ESCAPES[char])
        elif code < 0x20:
            parts.append(f"\\u{code:04x}")
        else:
            parts.append(char)
    parts.append('"')
    return "".join(parts)


def number_text(value: int | float | Decimal) -> str:
    """The nearest double to ``value``, written as ECMAScript's ``Number.prototype.toString`` does."""
    try:
        double = float(value)
    except OverflowError:
        raise TypeError(f"canonical JSON has no representation for {value!r}: beyond the range of a double") from None
    if double != double or double in (float("inf"), float("-inf")):
        raise TypeError(f"canonical JSON has no representation for a non-finite number ({value!r})")
    if double == 0:
        return "0"
    sign = "-" if double < 0 else ""
    # repr() gives the shortest digits that round-trip, the same digits ECMAScript chooses.
    _, digit_tuple, exponent = Decimal(repr(abs(double))).as_tuple()
    digits = "".join(str(digit) for digit in digit_tuple).rstrip("0") or "0"
    assert isinstance(exponent, int)
    point = len(digit_tuple) + exponent  # n in ECMA-262 Number::toString: value = 0.digits × 10^n
    return sign + _ecmascript_layout(digits, point)


def _ecmascript_layout(digits: str, point: int) -> str:
    count = len(digits)
    if count <= point <= 21:
        return digits + "0" * (point - count)
    if 0 < point <= 21:
        return f"{digits[:point]}.{digits[point:]}"
    if -6 < point <= 0:
        return f"0.{'0' * -point}{digits}"
    exponent = point - 1
    exponent_text = f"e+{exponent}" if exponent >= 0 else f"e-{-exponent}"
    mantissa = digits if count == 1 else f"{digits[0]}.{digits[1:]}"
    return mantissa + exponent_text
