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


def stop_process(proc: subprocess.Popen[Any] | None) -> None:
    """Terminate a test server's process (killed after 10 s) and reap it."""
    if proc is None or proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(10)


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
        stop_process(proc)
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
