"""Fault injection for object store tests: an HTTP proxy in front of the local S3 server that
fails a random (seeded) fraction of the requests passing through it.

Faults, each drawn per request with its own probability:

* ``transient``: answered ``503 SlowDown`` without reaching the server (S3's throttling answer;
  the client retries it with backoff);
* ``lost``: forwarded (the server applies it), then answered ``500 InternalError``: the client
  retries a request whose effect already happened (e.g. a conditional put finds its own object);
* ``permanent``: answered ``403 AccessDenied`` without reaching the server (not retried: the call
  fails with :class:`~hudi_ds.errors.StorageError`).

Forced only (:meth:`FaultProxy.force`): ``held``, a request parked at the proxy until the test
calls :meth:`FaultProxy.let_go` (then forwarded and answered): a client's retry that lands only
after what the test does meanwhile (:meth:`FaultProxy.wait_held` tells when it is parked).

The requests that reach the server are also counted by kind (:func:`request_kind`,
:meth:`FaultProxy.take`): the request counts of ``make bench``'s S3 table and of the tests.
Each is also logged (method, path with query, ``Range`` header: :meth:`FaultProxy.take_log`)
so that a count can be explained request by request.
"""

from __future__ import annotations

import http.client
import http.server
import random
import threading
from collections import Counter
from typing import Any

_BODIES = {
    503: b"<Error><Code>SlowDown</Code><Message>Reduce your request rate</Message></Error>",
    500: b"<Error><Code>InternalError</Code><Message>injected</Message></Error>",
    403: b"<Error><Code>AccessDenied</Code><Message>injected</Message></Error>",
}


def request_kind(method: str, path_and_query: str, headers: Any) -> str:
    """The kind of an S3 request: ``list`` (GET with ``list-type``/``delimiter``), ``get``,
    ``put``, ``head``, ``delete``, ``post`` (multipart/bulk delete), ``copy`` (PUT with a copy
    source)."""
    if method == "GET" and ("list-type=" in path_and_query or "delimiter=" in path_and_query):
        return "list"
    if method == "PUT" and headers.get("x-amz-copy-source"):
        return "copy"
    return method.lower()


class FaultProxy:
    """The proxy: point ``aws_endpoint_url`` at :attr:`endpoint`. :attr:`counts` tells how many
    requests were forwarded and how many of each fault were injected; :meth:`take` the forwarded
    requests by kind."""

    def __init__(
        self,
        upstream: str,
        seed: int = 0,
        transient: float = 0.0,
        lost: float = 0.0,
        permanent: float = 0.0,
    ) -> None:
        self.rng = random.Random(seed)
        self.transient = transient
        self.lost = lost
        self.permanent = permanent
        self.counts = {"forwarded": 0, "transient": 0, "lost": 0, "permanent": 0}
        self.kinds: Counter[str] = Counter()
        #: the forwarded requests since the last :meth:`take_log`: (kind, method, path, range)
        self.log: list[tuple[str, str, str, str]] = []
        self._lock = threading.Lock()
        self._forced: list[tuple[str, str | None, tuple[str, ...] | None, str | None]] = []
        self._parked = threading.Event()
        self._gate = threading.Event()
        host, _, port = upstream.removeprefix("http://").partition(":")
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _reply(self, status: int, headers: list[tuple[str, str]], data: bytes) -> None:
                self.send_response(status)
                for k, v in headers:
                    if k.lower() not in ("transfer-encoding", "connection", "content-length"):
                        self.send_header(k, v)
                # a HEAD answer has no body but tells the object's size
                length = dict((k.lower(), v) for k, v in headers).get("content-length")
                self.send_header(
                    "Content-Length",
                    length if self.command == "HEAD" and length else str(len(data)),
                )
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)

            def _any(self) -> None:
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n) if n else None
                fault = proxy._draw(self.command, self.headers)
                if fault == "held":
                    proxy._parked.set()
                    proxy._gate.wait(timeout=120)
                if fault in ("forwarded", "lost", "held"):
                    kind = request_kind(self.command, self.path, self.headers)
                    with proxy._lock:
                        proxy.kinds[kind] += 1
                        proxy.log.append(
                            (kind, self.command, self.path, self.headers.get("Range") or "")
                        )
                if fault in ("transient", "permanent"):
                    status = 503 if fault == "transient" else 403
                    self._reply(status, [], _BODIES[status])
                    return
                conn = http.client.HTTPConnection(host, int(port), timeout=60)
                headers = {k: v for k, v in self.headers.items() if k.lower() != "host"}
                headers["Host"] = self.headers.get("Host", "")
                conn.request(self.command, self.path, body=body, headers=headers)
                resp = conn.getresponse()
                data = resp.read()
                conn.close()
                if fault == "lost":
                    self._reply(500, [], _BODIES[500])
                    return
                self._reply(resp.status, resp.getheaders(), data)

            do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _any

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.endpoint = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self._thread.start()

    def _draw(self, method: str, headers: Any) -> str:
        with self._lock:
            names = {k.lower() for k in headers}
            target = headers.get("X-Amz-Target") or ""
            forced = next(
                (
                    f
                    for f in self._forced
                    if (f[1] is None or f[1] in names)
                    and (f[2] is None or method in f[2])
                    and (f[3] is None or target.endswith("." + f[3]))
                ),
                None,
            )
            x = self.rng.random()
            fault = "forwarded"
            if forced is not None:
                self._forced.remove(forced)
                fault = forced[0]
            elif x < self.permanent:
                fault = "permanent"
            elif x < self.permanent + self.transient:
                fault = "transient"
            elif x < self.permanent + self.transient + self.lost:
                fault = "lost"
            self.counts[fault] = self.counts.get(fault, 0) + 1
            if fault in ("lost", "held"):
                self.counts["forwarded"] += 1
            return fault

    def force(
        self,
        fault: str,
        header: str | None = None,
        methods: tuple[str, ...] | None = None,
        target: str | None = None,
    ) -> None:
        """Inject ``fault`` into the next request (that carries ``header``, e.g.
        ``if-none-match``: a conditional create; whose HTTP method is one of ``methods``; whose
        DynamoDB operation, the ``X-Amz-Target`` header, is ``target``, e.g. ``DeleteItem``),
        whatever the rates draw."""
        with self._lock:
            self._forced.append((fault, header, methods, target))

    def wait_held(self, timeout: float = 60.0) -> None:
        """Wait until a ``held`` request is parked at the proxy.

        Raises:
            AssertionError: none arrived in ``timeout`` seconds.
        """
        assert self._parked.wait(timeout), "no request was held at the proxy"

    def let_go(self) -> None:
        """Forward the ``held`` requests (and any later one) to the server."""
        self._gate.set()

    def take(self) -> dict[str, int]:
        """The forwarded requests by kind so far (then reset to zero)."""
        with self._lock:
            out = dict(self.kinds)
            self.kinds.clear()
        return out

    def take_log(self) -> list[tuple[str, str, str, str]]:
        """The forwarded requests in order since the last call, each ``(kind, method, path
        and query, Range header or "")`` (then cleared)."""
        with self._lock:
            out = list(self.log)
            self.log.clear()
        return out

    def set_rates(self, transient: float = 0.0, lost: float = 0.0, permanent: float = 0.0) -> None:
        """Change the fault probabilities (all 0: a transparent proxy)."""
        with self._lock:
            self.transient, self.lost, self.permanent = transient, lost, permanent

    def close(self) -> None:
        """Stop the proxy and its thread."""
        self._gate.set()
        self.server.shutdown()
        self.server.server_close()
        self._thread.join()

    def __enter__(self) -> FaultProxy:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
