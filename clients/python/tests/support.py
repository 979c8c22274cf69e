"""What the live tests share: the service under test, read from the environment, and a lying proxy.

- ``TABULA_URL``: the running service, e.g. ``http://127.0.0.1:8080`` (unset: the live tests are skipped).
- ``TABULA_TOKEN``: a JWT of an ordinary user (its ``sub`` is the account the tests transfer from).
- ``TABULA_ADMIN_TOKEN``: a JWT with the admin scope (to mint).
- ``TABULA_API_KEY``: sent as ``X-API-Key`` when the service is started with ``API_KEYS``.

``LyingProxy`` is a loopback HTTP server in a thread that forwards every request to the service and
can alter what it answers (a changed amount, audit path or block hash), answer in its place (a 429
or 503 with ``Retry-After``), drop the connection, or stall: the cases a client must survive or catch.
"""

from __future__ import annotations

import base64
import http.client
import json
import os
import threading
import time
import unittest
import urllib.parse
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Optional

from tabula import TabulaClient
from tabula import exact_json

_HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "host", "te", "trailer", "upgrade", "proxy-connection"}
_UPSTREAM_TIMEOUT_S = 30


@dataclass(frozen=True)
class Service:
    url: str
    token: str
    admin_token: str
    api_key: Optional[str]
    #: The ``sub`` of ``token``: the account an ordinary user may transfer from.
    user: str

    def client(self, *, admin: bool = False, url: Optional[str] = None, **options: Any) -> TabulaClient:
        options.setdefault("api_key", self.api_key)
        return TabulaClient(url or self.url, jwt=self.admin_token if admin else self.token, **options)


def service() -> Service:
    """The service under test; skips the calling test class when ``TABULA_URL`` is not set."""
    url = os.environ.get("TABULA_URL", "")
    if url == "":
        raise unittest.SkipTest("TABULA_URL is not set: start the service and set TABULA_URL, TABULA_TOKEN and TABULA_ADMIN_TOKEN")
    token, admin_token = os.environ.get("TABULA_TOKEN", ""), os.environ.get("TABULA_ADMIN_TOKEN", "")
    if token == "" or admin_token == "":
        raise AssertionError("TABULA_URL is set, so TABULA_TOKEN and TABULA_ADMIN_TOKEN must be too")
    host = urllib.parse.urlsplit(url).hostname or ""
    if host not in ("127.0.0.1", "localhost", "::1") and not host.startswith("127."):
        raise AssertionError(f"the live tests send traffic to loopback only, not to {host}")
    return Service(url=url.rstrip("/"), token=token, admin_token=admin_token, api_key=os.environ.get("TABULA_API_KEY") or None, user=subject_of(token))


def subject_of(token: str) -> str:
    """The ``sub`` claim of a JWT (read, not verified: the service verifies it)."""
    payload = token.split(".")[1]
    claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    return str(claims["sub"])


@dataclass(frozen=True)
class Seen:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass(frozen=True)
class Reply:
    """An answer the proxy gives instead of forwarding (``status`` None: drop the connection unanswered)."""

    status: Optional[int]
    body: Any = None
    headers: Optional[dict[str, str]] = None
    #: Forward the request first (the service acts on it) and then answer this instead: a lost answer.
    after_forwarding: bool = False


#: Decides, per request, whether the proxy answers in the service's place.
Intercept = Callable[[Seen], Optional[Reply]]
#: Rewrites a 200 JSON answer: (path without query, parsed body) -> body to send.
Tamper = Callable[[str, Any], Any]


class LyingProxy:
    """A loopback proxy in front of the service; ``tamper`` and ``intercept`` are set per test."""

    def __init__(self, upstream: str) -> None:
        parts = urllib.parse.urlsplit(upstream)
        self.upstream_host = parts.hostname or "127.0.0.1"
        self.upstream_port = parts.port or 80
        self.seen: list[Seen] = []
        self.tamper: Optional[Tamper] = None
        self.intercept: Optional[Intercept] = None
        self._lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                proxy._handle(self)

            def do_POST(self) -> None:
                proxy._handle(self)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="lying-proxy", daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def reset(self) -> None:
        with self._lock:
            self.seen.clear()
        self.tamper = None
        self.intercept = None

    def requests(self, method: str, path_prefix: str) -> list[Seen]:
        with self._lock:
            return [seen for seen in self.seen if seen.method == method and seen.path.startswith(path_prefix)]

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def _handle(self, handler: BaseHTTPRequestHandler) -> None:
        length = int(handler.headers.get("Content-Length") or 0)
        seen = Seen(handler.command, handler.path, {name.lower(): value for name, value in handler.headers.items()}, handler.rfile.read(length))
        with self._lock:
            self.seen.append(seen)
        reply = self.intercept(seen) if self.intercept is not None else None
        if reply is not None and not reply.after_forwarding:
            self._reply(handler, reply)
            return
        status, headers, body = self._forward(seen)
        if reply is not None:
            self._reply(handler, reply)
            return
        if status == 200 and self.tamper is not None and headers.get("content-type", "").startswith("application/json"):
            changed = self.tamper(seen.path.split("?")[0], exact_json.loads(body.decode("utf-8")))
            body = exact_json.dumps(changed).encode("utf-8")
        self._send(handler, status, headers, body)

    def _forward(self, seen: Seen) -> tuple[int, dict[str, str], bytes]:
        connection = http.client.HTTPConnection(self.upstream_host, self.upstream_port, timeout=_UPSTREAM_TIMEOUT_S)
        try:
            headers = {name: value for name, value in seen.headers.items() if name not in _HOP_BY_HOP}
            connection.request(seen.method, seen.path, body=seen.body if seen.body else None, headers=headers)
            response = connection.getresponse()
            return response.status, {name.lower(): value for name, value in response.getheaders()}, response.read()
        finally:
            connection.close()

    def _reply(self, handler: BaseHTTPRequestHandler, reply: Reply) -> None:
        if reply.status is None:
            handler.close_connection = True  # no answer at all: the client sees the connection closed
            return
        body = b"" if reply.body is None else json.dumps(reply.body).encode("utf-8")
        headers = {"content-type": "application/problem+json", **(reply.headers or {})}
        self._send(handler, reply.status, headers, body)

    @staticmethod
    def _send(handler: BaseHTTPRequestHandler, status: int, headers: dict[str, str], body: bytes) -> None:
        try:
            handler.send_response(status)
            for name, value in headers.items():
                if name.lower() not in _HOP_BY_HOP:
                    handler.send_header(name, value)
            handler.send_header("Content-Length", str(len(body)))
            handler.send_header("Connection", "close")
            handler.end_headers()
            handler.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (e.g. its timeout): nothing to do


def problem(status: int, code: str) -> dict[str, Any]:
    return {"type": f"urn:tabula:problem:{code}", "title": "stand-in", "status": status, "detail": f"the proxy says {code}", "code": code}


def stall(seconds: float) -> Callable[[Seen], Optional[Reply]]:
    """An intercept that holds the first request ``seconds`` before forwarding it (a slow answer)."""
    state = {"stalled": False}

    def intercept(seen: Seen) -> Optional[Reply]:
        if not state["stalled"]:
            state["stalled"] = True
            time.sleep(seconds)
        return None

    return intercept
