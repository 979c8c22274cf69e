"""JSON with exact numbers: no amount ever passes through a float.

The service writes amounts as JSON numbers whose text is the exact decimal of the base units
(``92233720368.54775807``). ``loads`` reads every number with a fraction or exponent as a ``Decimal``
and every integer as an ``int``; ``dumps`` writes ``Decimal`` values as their own text.
"""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any, Mapping, NoReturn, Sequence


def _refuse_constant(name: str) -> NoReturn:
    raise ValueError(f"{name} is not JSON")


def loads(text: str) -> Any:
    """Parses JSON text: fractions and exponents as ``Decimal``, integers as ``int``; NaN and Infinity refused."""
    return json.loads(text, parse_float=Decimal, parse_int=int, parse_constant=_refuse_constant)


def dumps(value: Any) -> str:
    """Serializes a request body: ``Decimal`` as its exact text; non-finite numbers refused."""
    if value is None or isinstance(value, (bool, str)):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, Decimal):
        if not value.is_finite():
            raise ValueError(f"{value} is not a JSON number")
        return str(value)
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise ValueError(f"{value} is not a JSON number")
        return repr(value)
    if isinstance(value, Mapping):
        members = []
        for key, item in value.items():
            if not isinstance(key, str):
                raise TypeError(f"JSON object keys must be strings, got {type(key).__name__}")
            members.append(f"{json.dumps(key, ensure_ascii=False)}:{dumps(item)}")
        return "{" + ",".join(members) + "}"
    if isinstance(value, Sequence) and not isinstance(value, (bytes, bytearray)):
        return "[" + ",".join(dumps(item) for item in value) + "]"
    raise TypeError(f"{type(value).__name__} is not JSON serializable")
