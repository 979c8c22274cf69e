"""One HTTP exchange with the service: credentials, a timeout per attempt, bounded retries with
backoff (honouring ``Retry-After``), one token refresh after a 401, and typed errors. Standard
library only (``urllib.request``).
"""

from __future__ import annotations

import email.utils
import http.client
import inspect
import random
import socket
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Optional

from . import exact_json
from .errors import (
    ApiError, NetworkError, RateLimitedError, RequestTimeoutError, ResponseFormatError, ServerError, TabulaError,
    api_error_for, problem_from,
)
from .types import Jwt

#: Attempts in all (the first included) that ``retries`` may allow.
ATTEMPTS_MAX = 10
RESPONSE_BYTES_MAX = 16 * 1024 * 1024
USER_AGENT = "tabula-client-python/0.1.0"


@dataclass(frozen=True)
class Answer:
    status: int
    headers: Mapping[str, str]
    text: str


@dataclass(frozen=True)
class RetryPolicy:
    #: Attempts in all, the first included: 1..ATTEMPTS_MAX.
    attempts: int = 4
    #: First backoff delay; doubles per attempt, with jitter.
    base_delay_s: float = 0.2
    #: The longest wait between attempts; a ``Retry-After`` beyond it is not waited for (the error is raised).
    max_delay_s: float = 10.0


@dataclass
class Transport:
    base_url: str
    api_key: Optional[str]
    jwt: Optional[Jwt]
    timeout_s: float
    retry: RetryPolicy
    sleep: Callable[[float], None] = time.sleep
    opener: urllib.request.OpenerDirector = field(default_factory=urllib.request.build_opener)

    def send(self, method: str, path: str, *, body: Any = None, headers: Optional[Mapping[str, str]] = None,
             auth: bool = True, retry: bool = True) -> Answer:
        """Sends a request until it gets a 2xx (returned) or a final error (raised)."""
        attempts = self.retry.attempts if retry else 1
        payload = None if body is None else exact_json.dumps(body).encode("utf-8")
        refreshed = False
        attempt = 1
        while True:
            try:
                answer = self._attempt(method, path, payload, headers or {}, auth, refreshed)
            except (NetworkError, RequestTimeoutError) as error:
                last_error: TabulaError = error
            else:
                if answer.status == 401 and not refreshed and callable(self.jwt) and auth:
                    refreshed = True  # a refresh is not a retry
                    continue
                if answer.status < 300:
                    return answer
                last_error = _api_error(answer)
            if not _is_retryable(last_error) or attempt >= attempts:
                raise last_error
            delay_s = self._delay_before(attempt + 1, last_error)
            if delay_s is None:
                raise last_error
            self.sleep(delay_s)
            attempt += 1

    def _attempt(self, method: str, path: str, payload: Optional[bytes], extra: Mapping[str, str], auth: bool, refresh: bool) -> Answer:
        request = urllib.request.Request(self.base_url + path, data=payload, method=method,
                                         headers=self._headers(extra, payload is not None, auth, refresh))
        try:
            with self.opener.open(request, timeout=self.timeout_s) as response:
                return Answer(response.status, _header_map(response.headers), _read_text(response))
        except urllib.error.HTTPError as error:
            with error:
                return Answer(error.code, _header_map(error.headers), _read_text(error))
        except urllib.error.URLError as error:
            if isinstance(error.reason, (socket.timeout, TimeoutError)):
                raise RequestTimeoutError(self.timeout_s) from error
            raise NetworkError(f"{method} {path} failed: {error.reason}") from error
        except (socket.timeout, TimeoutError) as error:
            raise RequestTimeoutError(self.timeout_s) from error
        except (OSError, http.client.HTTPException) as error:
            raise NetworkError(f"{method} {path} failed: {error!r}") from error

    def _headers(self, extra: Mapping[str, str], has_body: bool, auth: bool, refresh: bool) -> dict[str, str]:
        headers = {"Accept": "application/json, application/problem+json", "User-Agent": USER_AGENT, **extra}
        if has_body:
            headers["Content-Type"] = "application/json"
        if self.api_key is not None:
            headers["X-API-Key"] = self.api_key
        if auth and self.jwt is not None:
            headers["Authorization"] = f"Bearer {self._token(refresh)}"
        return headers

    def _token(self, refresh: bool) -> str:
        if isinstance(self.jwt, str):
            return self.jwt
        assert self.jwt is not None
        token = self.jwt(refresh=refresh) if _takes_refresh(self.jwt) else self.jwt()
        if not isinstance(token, str):
            raise TypeError(f"the jwt function returned a {type(token).__name__}, not a str")
        return token

    def _delay_before(self, next_attempt: int, error: TabulaError) -> Optional[float]:
        """Seconds to wait before ``next_attempt``, or None when ``Retry-After`` asks for longer than allowed."""
        if isinstance(error, ApiError) and error.retry_after_s is not None:
            return None if error.retry_after_s > self.retry.max_delay_s else error.retry_after_s
        ceiling = min(self.retry.max_delay_s, self.retry.base_delay_s * 2.0 ** (next_attempt - 2))
        return ceiling / 2 + random.random() * ceiling / 2


def _takes_refresh(function: Callable[..., str]) -> bool:
    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.name == "refresh" or p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters)


def _is_retryable(error: TabulaError) -> bool:
    """Network errors, timeouts, 429 and 5xx: the request may not have been processed, or may be again safely."""
    return isinstance(error, (NetworkError, RequestTimeoutError, RateLimitedError, ServerError))


def _header_map(headers: Any) -> dict[str, str]:
    return {str(name).lower(): str(value) for name, value in headers.items()} if headers is not None else {}


def _read_text(response: Any) -> str:
    length = response.headers.get("content-length") if response.headers is not None else None
    if length is not None and length.isdigit() and int(length) > RESPONSE_BYTES_MAX:
        raise ResponseFormatError(f"response of {length} bytes exceeds {RESPONSE_BYTES_MAX}")
    data = response.read(RESPONSE_BYTES_MAX + 1)
    if len(data) > RESPONSE_BYTES_MAX:
        raise ResponseFormatError(f"response exceeds {RESPONSE_BYTES_MAX} bytes")
    try:
        return str(data.decode("utf-8"))
    except UnicodeDecodeError as error:
        raise ResponseFormatError("the response is not UTF-8") from error


def _api_error(answer: Answer) -> ApiError:
    problem = None
    try:
        problem = problem_from(exact_json.loads(answer.text), answer.status)
    except ValueError:
        pass  # not problem+json: described below
    if problem is None:
        problem = {"type": "about:blank", "title": f"HTTP {answer.status}", "status": answer.status,
                   "detail": answer.text[:200], "code": "unexpected_status"}
    return api_error_for(problem, retry_after_s(answer.headers.get("retry-after")))


def retry_after_s(value: Optional[str], now_s: Optional[float] = None) -> Optional[float]:
    """``Retry-After`` as delay-seconds or an HTTP date (RFC 9110 section 10.2.3), in seconds from now."""
    if value is None:
        return None
    text = value.strip()
    if text.isdigit() and len(text) <= 9:
        return float(text)
    try:
        moment = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError):
        return None
    if moment is None:
        return None
    return max(0.0, moment.timestamp() - (time.time() if now_s is None else now_s))

