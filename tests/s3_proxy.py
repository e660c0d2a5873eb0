"""An HTTP proxy in front of the S3 server that counts requests and injects faults.

Both our engine and delta-rs talk to the server through it (``endpoint`` = the proxy), so requests
per operation are counted on the wire, the same way for both. Faults are injected on the wire too,
so the client's real retry logic runs:

- ``fail(method, status=503, times=n)``: answer the next ``n`` matching requests with an S3 error
  (``503 SlowDown`` is throttling) without forwarding them;
- ``drop_after_forward(method, times=n)``: forward the request (the server acts on it), then close
  the connection without answering, as when a response is lost on the network;
- ``blackhole()``: accept connections and never answer (an endpoint that hangs).

Signatures stay valid: the ``Host`` header the client signed is forwarded unchanged.
"""

from __future__ import annotations

import contextlib
import http.client
import threading
from collections import Counter
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlparse

HOST = "127.0.0.1"
_HOP_HEADERS = {"connection", "keep-alive", "transfer-encoding", "proxy-connection", "upgrade"}


@dataclass
class Fault:
    """One injected fault: which requests it hits and what it does."""

    method: str
    action: str  # "status" | "drop"
    times: int
    status: int = 503
    code: str = "SlowDown"
    key_contains: str = ""

    def matches(self, method: str, path: str) -> bool:
        return self.times > 0 and self.method in (method, "*") and self.key_contains in path


def request_kind(method: str, path: str) -> str:
    """``list``, ``get``, ``head``, ``put``, ``delete`` or ``post`` for one S3 request."""
    query = urlparse(path).query
    if method == "GET" and ("list-type" in query or "delimiter" in query or "prefix=" in query):
        return "list"
    return method.lower()


class S3Proxy:
    """A counting, fault-injecting proxy to ``target`` (``http://127.0.0.1:<port>``) on a free port."""

    def __init__(self, target: str) -> None:
        parsed = urlparse(target)
        self.target_host = parsed.hostname or HOST
        self.target_port = parsed.port or 80
        self.counts: Counter[str] = Counter()
        self.log: list[tuple[str, str]] = []
        self.faults: list[Fault] = []
        self.hang = False
        self._lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
                return

            def _handle(self) -> None:
                proxy._serve(self)

            do_GET = do_PUT = do_HEAD = do_POST = do_DELETE = _handle

        self.server = ThreadingHTTPServer((HOST, 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, name="s3-proxy", daemon=True)

    @property
    def endpoint(self) -> str:
        """``http://127.0.0.1:<proxy port>``."""
        return f"http://{HOST}:{self.server.server_address[1]}"

    def start(self) -> S3Proxy:
        """Serve in a background thread."""
        self.thread.start()
        return self

    def stop(self) -> None:
        """Stop serving."""
        self.hang = False
        self.server.shutdown()
        self.server.server_close()

    # ------------------------------------------------------------------ control

    def reset(self) -> None:
        """Forget counts, log and faults."""
        with self._lock:
            self.counts.clear()
            self.log.clear()
            self.faults.clear()
            self.hang = False

    def fail(
        self,
        method: str,
        *,
        status: int = 503,
        code: str = "SlowDown",
        times: int = 1,
        key_contains: str = "",
    ) -> None:
        """Answer the next ``times`` requests of ``method`` (``"*"``: any) with an S3 error."""
        with self._lock:
            self.faults.append(Fault(method, "status", times, status, code, key_contains))

    def drop_after_forward(self, method: str, *, times: int = 1, key_contains: str = "") -> None:
        """Forward the next ``times`` requests of ``method``, then close without answering."""
        with self._lock:
            self.faults.append(Fault(method, "drop", times, key_contains=key_contains))

    def blackhole(self) -> None:
        """Hold every new request without answering until :meth:`reset` or :meth:`stop`."""
        self.hang = True

    def snapshot(self) -> Counter[str]:
        """A copy of the request counts by kind (``list``, ``get``, ``head``, ``put`` ...)."""
        with self._lock:
            return Counter(self.counts)

    # ------------------------------------------------------------------ serving

    def _take_fault(self, method: str, path: str) -> Fault | None:
        with self._lock:
            for fault in self.faults:
                if fault.matches(method, path):
                    fault.times -= 1
                    return fault
        return None

    def _serve(self, handler: BaseHTTPRequestHandler) -> None:
        method, path = handler.command, handler.path
        length = int(handler.headers.get("Content-Length") or 0)
        body = handler.rfile.read(length) if length else None
        while self.hang:
            threading.Event().wait(0.05)
        with self._lock:
            self.counts[request_kind(method, path)] += 1
            self.log.append((method, path))
        fault = self._take_fault(method, path)
        if fault is not None and fault.action == "status":
            payload = (
                f'<?xml version="1.0" encoding="UTF-8"?><Error><Code>{fault.code}</Code>'
                f"<Message>injected by the test proxy</Message></Error>"
            ).encode()
            handler.send_response(fault.status)
            handler.send_header("Content-Type", "application/xml")
            handler.send_header("Content-Length", str(len(payload)))
            handler.end_headers()
            if method != "HEAD":
                handler.wfile.write(payload)
            return
        headers = {k: v for k, v in handler.headers.items() if k.lower() not in _HOP_HEADERS}
        conn = http.client.HTTPConnection(self.target_host, self.target_port, timeout=60)
        try:
            conn.request(method, path, body=body, headers=headers)
            response = conn.getresponse()
            data = response.read()
        finally:
            conn.close()
        if fault is not None and fault.action == "drop":
            handler.close_connection = True
            with contextlib.suppress(OSError):
                handler.connection.shutdown(2)
            return
        handler.send_response(response.status, response.reason)
        for key, value in response.getheaders():
            if key.lower() in _HOP_HEADERS or key.lower() == "content-length":
                continue
            handler.send_header(key, value)
        if method == "HEAD":
            handler.send_header("Content-Length", response.getheader("Content-Length") or "0")
        else:
            handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        if method != "HEAD":
            handler.wfile.write(data)
