"""Every exception the client raises is a ``TabulaError``.

Catch a class (``except NotFoundError``) or branch on ``code``: for API errors it is the stable
snake_case code of the problem+json body (the table in docs/api.md); for verification errors it
names the check that failed.
"""

from __future__ import annotations

from typing import Any, Mapping, Optional, Sequence


class TabulaError(Exception):
    """The base of every error of this client."""


class ApiError(TabulaError):
    """The API answered with an error status (an RFC 9457 problem+json body)."""

    status: int
    code: str
    title: str
    detail: str
    errors: list[dict[str, Any]]
    problem: dict[str, Any]
    retry_after_s: Optional[float]

    def __init__(self, problem: Mapping[str, Any], retry_after_s: Optional[float] = None) -> None:
        self.status = int(problem["status"])
        self.code = str(problem["code"])
        self.title = str(problem.get("title", ""))
        self.detail = str(problem.get("detail", ""))
        listed = problem.get("errors")
        self.errors = [dict(item) for item in listed if isinstance(item, Mapping)] if isinstance(listed, list) else []
        self.problem = dict(problem)
        self.retry_after_s = retry_after_s
        super().__init__(f"{self.status} {self.code}: {self.detail}")


class BadRequestError(ApiError):
    """400: invalid parameters or body (``validation_failed``, ``invalid_amount``, ``amount_too_precise``, ...)."""


class UnauthorizedError(ApiError):
    """401: missing or invalid token (``missing_token``, ``invalid_token``) or API key (``invalid_api_key``)."""


class ForbiddenError(ApiError):
    """403: authenticated but not allowed (``admin_required``, ``not_account_owner``)."""


class NotFoundError(ApiError):
    """404: no such transaction or block (``transaction_not_found``, ``transaction_not_sealed``, ``block_not_found``)."""


class ConflictError(ApiError):
    """409 or 422: the request conflicts with an earlier one (``idempotency_key_reused``)."""


#: The TypeScript SDK's name for the 422 ``idempotency_key_reused``.
IdempotencyConflictError = ConflictError


class GoneError(ApiError):
    """410: what was asked for is no longer kept (``cursor_expired``)."""


class PayloadTooLargeError(ApiError):
    """413: the body is too large (``payload_too_large``)."""


class UnsupportedMediaTypeError(ApiError):
    """415: a body without ``Content-Type: application/json`` (``unsupported_media_type``)."""


class RateLimitedError(ApiError):
    """429: over the rate limit (``rate_limited``); ``retry_after_s`` says when to come back."""


class ServerError(ApiError):
    """5xx: the service failed (``internal_error``) or cannot serve now."""


class ServiceUnavailableError(ServerError):
    """503: overloaded or unavailable (``service_overloaded``, ``storage_unavailable``, ``not_ready``, ...)."""


class NetworkError(TabulaError):
    """The request got no answer: connection refused or reset, DNS, TLS..."""


class RequestTimeoutError(TabulaError):
    """No answer within the per-request timeout (after the allowed retries)."""

    def __init__(self, timeout_s: float) -> None:
        self.timeout_s = timeout_s
        super().__init__(f"no answer within {timeout_s} s")


class WaitTimeoutError(TabulaError):
    """``wait_for_transaction`` ran out of time while the transaction was still pending."""

    def __init__(self, tx_hash: str, timeout_s: float) -> None:
        self.tx_hash = tx_hash
        self.timeout_s = timeout_s
        super().__init__(f"transaction {tx_hash} is still pending after {timeout_s} s")


class ResponseFormatError(TabulaError):
    """A 2xx answer that is not the JSON the API documents."""


def _placed_message(reason: str, block_number: Optional[int], tx_hash: Optional[str]) -> str:
    """The message `block N: reason (transaction H)`, each part only when known."""
    place = f"block {block_number}: " if block_number is not None else ""
    transaction = f" (transaction {tx_hash})" if tx_hash is not None else ""
    return f"{place}{reason}{transaction}"


class VerificationError(TabulaError):
    """What the server sent does not verify: a recomputed hash, root or link differs from what it claims.

    ``code`` names the failed check (``transaction_hash_mismatch``, ``transactions_root_mismatch``,
    ``block_hash_mismatch``, ``parent_hash_mismatch``, ``block_number_mismatch``,
    ``timestamp_backwards``, ``transactions_count_mismatch``, ``inclusion_proof_invalid``,
    ``malformed_record``, ``record_mismatch``); ``block_number`` and ``tx_hash`` say where, when known.
    """

    def __init__(self, code: str, reason: str, *, block_number: Optional[int] = None, tx_hash: Optional[str] = None) -> None:
        self.code = code
        self.reason = reason
        self.block_number = block_number
        self.tx_hash = tx_hash
        super().__init__(_placed_message(reason, block_number, tx_hash))


class MarketMismatchError(TabulaError):
    """What the pool replay (``verify_market``, ``MarketReplay``) found the chain's market records cannot be.

    ``code``: ``amount_out_mismatch`` (a swap's outcome is not the formula's), ``failure_implausible`` (a
    swap failed for a reason the replayed pool rules out), ``price_mismatch`` (a block's native_price is
    not the replayed pool's), ``reserves_mismatch`` (GET /api/market states other reserves),
    ``reserve_negative`` (more taken from @pool than it holds), ``malformed_record``. ``block_number`` and
    ``tx_hash`` say where; ``expected`` / ``actual`` what differed, when it is one value.
    """

    def __init__(self, code: str, reason: str, *, block_number: Optional[int] = None, tx_hash: Optional[str] = None,
                 expected: Optional[str] = None, actual: Optional[str] = None) -> None:
        self.code = code
        self.reason = reason
        self.block_number = block_number
        self.tx_hash = tx_hash
        self.expected = expected
        self.actual = actual
        super().__init__(_placed_message(reason, block_number, tx_hash))


_ERRORS_BY_STATUS: dict[int, type[ApiError]] = {
    400: BadRequestError,
    401: UnauthorizedError,
    403: ForbiddenError,
    404: NotFoundError,
    409: ConflictError,
    410: GoneError,
    413: PayloadTooLargeError,
    415: UnsupportedMediaTypeError,
    422: ConflictError,
    429: RateLimitedError,
    503: ServiceUnavailableError,
}


def api_error_for(problem: Mapping[str, Any], retry_after_s: Optional[float] = None) -> ApiError:
    """The typed exception for a problem: by status, ``ServerError`` for other 5xx, else ``ApiError``."""
    status = int(problem["status"])
    error_class = _ERRORS_BY_STATUS.get(status) or (ServerError if status >= 500 else ApiError)
    return error_class(problem, retry_after_s)


def problem_from(value: Any, status: int) -> Optional[dict[str, Any]]:
    """A problem+json body with ``status`` as given, or None when it carries no ``code``."""
    if not isinstance(value, Mapping) or not isinstance(value.get("code"), str):
        return None
    problem: dict[str, Any] = {
        "type": str(value.get("type", "about:blank")),
        "title": str(value.get("title", "")),
        "status": status,
        "detail": str(value.get("detail", "")),
        "code": value["code"],
    }
    errors: Optional[Sequence[Any]] = value.get("errors")
    if isinstance(errors, list):
        problem["errors"] = errors
    return problem
