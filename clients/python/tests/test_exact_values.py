"""Offline: amounts never pass through a float (in requests or responses), exact JSON keeps every
digit, Retry-After is read in both its forms, and the client refuses bad arguments before sending."""

from __future__ import annotations

import unittest
from decimal import Decimal

from tabula import TabulaClient, amount_units
from tabula.amounts import amount_argument, exact_amount
from tabula.errors import ConflictError, IdempotencyConflictError, ServerError, ServiceUnavailableError, api_error_for
from tabula.exact_json import dumps, loads
from tabula.transport import retry_after_s


class AmountsTest(unittest.TestCase):
    def test_an_amount_argument_is_its_exact_decimal_text(self) -> None:
        self.assertEqual(amount_argument(Decimal("92233720368.54775807")), "92233720368.54775807")
        self.assertEqual(amount_argument(Decimal("1E-8")), "0.00000001")
        self.assertEqual(amount_argument(Decimal("1.50")), "1.50")
        self.assertEqual(amount_argument(12), "12")
        self.assertEqual(amount_argument("12.5"), "12.5")

    def test_a_float_or_bool_amount_is_a_type_error(self) -> None:
        for value in (0.1, 1.0, True, None, [1]):
            with self.subTest(value=value), self.assertRaises(TypeError):
                amount_argument(value)
        with self.assertRaises(ValueError):
            amount_argument(Decimal("NaN"))

    def test_base_units_are_exact_at_the_edges_of_the_decimals(self) -> None:
        self.assertEqual(amount_units(Decimal("92233720368.54775807"), "TAB"), 2**63 - 1)
        self.assertEqual(amount_units(Decimal("9223372036854.775807"), "USDG"), 2**63 - 1)
        self.assertEqual(amount_units(Decimal("0.00000001"), "TAB"), 1)
        self.assertEqual(amount_units(Decimal("0.000001"), "usdg"), 1)
        self.assertEqual(amount_units(100, "TAB"), 10_000_000_000)
        self.assertEqual(amount_units(Decimal("1.5E+3"), "TAB"), 150_000_000_000)
        for bad, token in ((Decimal("0.000000001"), "TAB"), (Decimal("0.0000001"), "USDG"), (Decimal("-1"), "TAB"), (Decimal("1E+100000"), "TAB")):
            with self.subTest(amount=bad), self.assertRaises(ValueError):
                amount_units(bad, token)

    def test_a_response_amount_must_be_an_exact_number(self) -> None:
        self.assertEqual(exact_amount(7), Decimal(7))
        for bad in (7.0, "7", True, None):
            with self.subTest(value=bad), self.assertRaises(ValueError):
                exact_amount(bad)


class ExactJsonTest(unittest.TestCase):
    def test_numbers_keep_every_digit(self) -> None:
        record = loads('{"amount": 92233720368.54775807, "timestamp": 1795305809, "big": 123456789012345678901234567890, "e": 1e21}')
        self.assertEqual(record["amount"], Decimal("92233720368.54775807"))
        self.assertEqual(record["timestamp"], 1795305809)
        self.assertIsInstance(record["timestamp"], int)
        self.assertEqual(record["big"], 123456789012345678901234567890)
        self.assertEqual(record["e"], Decimal("1e21"))
        with self.assertRaises(ValueError):
            loads('{"amount": NaN}')

    def test_dumps_writes_decimals_as_their_text(self) -> None:
        self.assertEqual(dumps({"amount": "1.5", "m": {"x": Decimal("0.10"), "y": [1, True, None, "é"]}}), '{"amount":"1.5","m":{"x":0.10,"y":[1,true,null,"é"]}}')
        self.assertEqual(loads(dumps({"d": Decimal("1E+21")}))["d"], Decimal("1e21"))
        for bad in (Decimal("Infinity"), float("nan")):
            with self.subTest(value=bad), self.assertRaises(ValueError):
                dumps({"x": bad})
        with self.assertRaises(TypeError):
            dumps({1: "key"})


class TransportPiecesTest(unittest.TestCase):
    def test_retry_after_in_seconds_or_as_a_date(self) -> None:
        self.assertEqual(retry_after_s("3"), 3.0)
        self.assertEqual(retry_after_s(" 0 "), 0.0)
        self.assertIsNone(retry_after_s(None))
        self.assertIsNone(retry_after_s("soon"))
        self.assertEqual(retry_after_s("Wed, 21 Oct 2015 07:28:10 GMT", now_s=1445412480.0), 10.0)
        self.assertEqual(retry_after_s("Wed, 21 Oct 2015 07:28:00 GMT", now_s=1445412500.0), 0.0)

    def test_errors_are_typed_by_status(self) -> None:
        def problem(status: int) -> dict[str, object]:
            return {"status": status, "code": "x", "detail": "d", "errors": [{"field": "amount", "message": "m"}]}

        self.assertIsInstance(api_error_for(problem(422)), ConflictError)
        self.assertIs(IdempotencyConflictError, ConflictError)
        self.assertIsInstance(api_error_for(problem(503)), ServiceUnavailableError)
        self.assertIsInstance(api_error_for(problem(500)), ServerError)
        error = api_error_for(problem(400))
        self.assertEqual((error.status, error.code, error.detail, error.errors), (400, "x", "d", [{"field": "amount", "message": "m"}]))

    def test_bad_arguments_are_refused_before_anything_is_sent(self) -> None:
        client = TabulaClient("http://127.0.0.1:9", retries=0)  # the discard port: nothing is ever sent here
        with self.assertRaises(ValueError):
            client.get_transaction("0x1234")
        with self.assertRaises(ValueError):
            client.get_block(-1)
        with self.assertRaises(ValueError):
            client.get_balance("")
        with self.assertRaises(ValueError):
            client.submit_batch([])
        with self.assertRaises(TypeError):
            client.submit_transaction({"from": "a", "to": "b", "amount": 2.5, "token": "TAB", "type": "transfer"})
        for options in ({"retries": -1}, {"retries": 10}, {"timeout_s": 0}, {"jwt": 42}):
            with self.subTest(options=options), self.assertRaises((ValueError, TypeError)):
                TabulaClient("http://127.0.0.1:9", **options)  # type: ignore[arg-type]
        with self.assertRaises(ValueError):
            TabulaClient("ftp://example.invalid")


if __name__ == "__main__":
    unittest.main()
