"""A real local S3 server for tests and the demo: moto in server mode on a free loopback port.

``MotoServer`` starts ``python -m moto.server`` as a child process, waits until it answers,
creates buckets, and stops it (terminate, then kill) -- no process is left behind.
"""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from typing import Any

#: credentials moto accepts (it does not check them); region of the buckets
ACCESS_KEY = "hudi-test-key"
SECRET_KEY = "hudi-test-secret"
REGION = "us-east-1"


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class MotoServer:
    """``moto.server`` on 127.0.0.1 (S3, and the other AWS services moto serves)."""

    def __init__(self) -> None:
        self.port = 0
        self.proc: subprocess.Popen[bytes] | None = None
        # its request log goes to a file: a pipe nobody reads fills up and blocks the server
        self._log: Any = None

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout_s: float = 60.0) -> MotoServer:
        """Start the server and wait until it answers (a few tries on a port taken meanwhile).

        Raises:
            RuntimeError: the server did not come up (its output is in the message).
        """
        last = ""
        for _ in range(3):
            self.port = free_port()
            self._log = tempfile.TemporaryFile()  # noqa: SIM115 - closed by stop()
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.port)],
                stdout=subprocess.DEVNULL,
                stderr=self._log,
            )
            deadline = time.monotonic() + timeout_s
            while time.monotonic() < deadline:
                if self.proc.poll() is not None:
                    break
                try:
                    with urllib.request.urlopen(f"{self.endpoint}/moto-api/data.json", timeout=2):
                        return self
                except (urllib.error.URLError, ConnectionError, TimeoutError):
                    time.sleep(0.1)
            last = self._stop_and_output()
        raise RuntimeError(f"moto server did not start: {last[-2000:]}")

    def _stop_and_output(self) -> str:
        proc, self.proc = self.proc, None
        if proc is None:
            return ""
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)
        log, self._log = self._log, None
        if log is None:
            return ""
        log.seek(0)
        err = log.read()
        log.close()
        return bytes(err).decode("utf-8", "replace")

    def stop(self) -> None:
        """Stop the server and reap it."""
        self._stop_and_output()

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def create_bucket(self, name: str) -> None:
        """Create bucket ``name`` (idempotent)."""
        req = urllib.request.Request(f"{self.endpoint}/{name}", method="PUT")
        with contextlib.suppress(urllib.error.HTTPError), urllib.request.urlopen(req, timeout=10):
            pass

    def storage_options(self) -> dict[str, Any]:
        """The ``storage_options`` that reach this server (deltalake/hudi-rs key names)."""
        return {
            "aws_access_key_id": ACCESS_KEY,
            "aws_secret_access_key": SECRET_KEY,
            "aws_endpoint_url": self.endpoint,
            "aws_region": REGION,
            "aws_allow_http": "true",
        }

    def __enter__(self) -> MotoServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def request_kind(method: str, path_and_query: str, headers: Any) -> str:
    """The kind of an S3 request: ``list`` (GET with ``list-type``/``delimiter``), ``get``,
    ``put``, ``head``, ``delete``, ``post`` (multipart/bulk delete), ``copy`` (PUT with a copy
    source)."""
    if method == "GET" and ("list-type=" in path_and_query or "delimiter=" in path_and_query):
        return "list"
    if method == "PUT" and headers.get("x-amz-copy-source"):
        return "copy"
    return method.lower()


class CountingProxy:
    """An HTTP proxy in front of an S3 server that counts the requests by kind
    (:func:`request_kind`) and can answer the first ``fail`` of them with 503 SlowDown (S3's
    throttling answer) before forwarding the rest, or (``fail_rate``) a random fraction of
    them (seeded by ``seed``)."""

    def __init__(self, upstream: str, fail: int = 0, fail_rate: float = 0.0, seed: int = 0) -> None:
        import http.client
        import http.server
        import random
        import threading
        from collections import Counter

        self.fail = fail
        self.fail_rate = fail_rate
        self._rng = random.Random(seed)
        self.failed = 0
        self.counts: Counter[str] = Counter()
        self._lock = threading.Lock()
        host, _, port = upstream.removeprefix("http://").partition(":")
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _any(self) -> None:
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n) if n else None
                with proxy._lock:
                    throttle = proxy.failed < proxy.fail or (
                        proxy.fail_rate > 0 and proxy._rng.random() < proxy.fail_rate
                    )
                    if throttle:
                        proxy.failed += 1
                    else:
                        proxy.counts[request_kind(self.command, self.path, self.headers)] += 1
                if throttle:
                    msg = b"<Error><Code>SlowDown</Code><Message>Reduce your rate</Message></Error>"
                    self.send_response(503)
                    self.send_header("Content-Length", str(len(msg)))
                    self.end_headers()
                    self.wfile.write(msg)
                    return
                conn = http.client.HTTPConnection(host, int(port), timeout=60)
                conn.request(self.command, self.path, body=body, headers=dict(self.headers.items()))
                resp = conn.getresponse()
                data = resp.read()
                self.send_response(resp.status)
                head = self.command == "HEAD"  # its Content-Length is the object's size
                for k, v in resp.getheaders():
                    skip = ("transfer-encoding", "connection") + (
                        () if head else ("content-length",)
                    )
                    if k.lower() not in skip:
                        self.send_header(k, v)
                if not head:
                    self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)
                conn.close()

            do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _any

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.endpoint = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def take(self) -> dict[str, int]:
        """The counts so far (then reset to zero)."""
        with self._lock:
            out = dict(self.counts)
            self.counts.clear()
        return out

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()
