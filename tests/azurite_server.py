"""A real local Azure Blob server for tests: Azurite (npm ``azurite``) on a free loopback port.

The package is installed by ``npm install --prefix`` into a cache folder
(``$HUDI_DS_AZURITE_DIR``, default ``~/.cache/hudi_ds/azurite``) the first time; tests skip with
the reason when npm is absent or the install fails. ``AzuriteServer`` starts ``azurite-blob``
with its data in a temporary folder, creates containers (a Shared Key signed request), and
stops it -- no process is left behind.
"""

from __future__ import annotations

import base64
import email.utils
import hashlib
import hmac
import os
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from tests.moto_server import free_port, stop_process

#: Azurite's well-known development account
ACCOUNT = "devstoreaccount1"
ACCOUNT_KEY = (
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)
AZURITE_VERSION = "3"


def install_dir() -> Path:
    """Where azurite is installed (``$HUDI_DS_AZURITE_DIR`` or ``~/.cache/hudi_ds/azurite``)."""
    env = os.environ.get("HUDI_DS_AZURITE_DIR")
    return Path(env) if env else Path.home() / ".cache" / "hudi_ds" / "azurite"


def ensure_azurite() -> tuple[Path | None, str]:
    """The ``azurite-blob`` executable, installing it with npm if needed; else None and why."""
    prefix = install_dir()
    exe = prefix / "node_modules" / ".bin" / "azurite-blob"
    if exe.exists():
        return exe, ""
    npm = shutil.which("npm")
    if npm is None or shutil.which("node") is None:
        return None, "Azure tests need Azurite: npm/node are not installed"
    prefix.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(
        [
            npm,
            "install",
            "--prefix",
            str(prefix),
            "--no-audit",
            "--no-fund",
            f"azurite@{AZURITE_VERSION}",
        ],
        capture_output=True,
        text=True,
        timeout=900,
    )
    if proc.returncode != 0 or not exe.exists():
        return None, f"npm install azurite failed: {(proc.stderr or proc.stdout)[-500:]}"
    return exe, ""


class AzuriteServer:
    """``azurite-blob`` on 127.0.0.1 with its data in a temporary folder."""

    def __init__(self, exe: Path) -> None:
        self.exe = exe
        self.port = 0
        self.proc: subprocess.Popen[bytes] | None = None
        self._data: tempfile.TemporaryDirectory[str] | None = None

    @property
    def endpoint(self) -> str:
        """The account's blob endpoint (path-style, as the emulator serves it)."""
        return f"http://127.0.0.1:{self.port}/{ACCOUNT}"

    def start(self, timeout_s: float = 60.0) -> AzuriteServer:
        """Start the server and wait until it accepts connections.

        Raises:
            RuntimeError: it did not come up.
        """
        self._data = tempfile.TemporaryDirectory(prefix="azurite-")
        self.port = free_port()
        self.proc = subprocess.Popen(
            [
                str(self.exe),
                "--silent",
                "--location",
                self._data.name,
                "--blobHost",
                "127.0.0.1",
                "--blobPort",
                str(self.port),
                "--skipApiVersionCheck",
                "--loose",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline and self.proc.poll() is None:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return self
            except OSError:
                time.sleep(0.1)
        self.stop()
        raise RuntimeError("azurite did not start")

    def stop(self) -> None:
        """Stop the server, reap it and delete its data."""
        proc, self.proc = self.proc, None
        stop_process(proc)
        if self._data is not None:
            self._data.cleanup()
            self._data = None

    def create_container(self, name: str) -> None:
        """Create container ``name`` (a Shared Key signed ``PUT ?restype=container``)."""
        date = email.utils.formatdate(usegmt=True)
        version = "2021-08-06"
        to_sign = (
            "PUT\n" + "\n" * 11 + f"x-ms-date:{date}\nx-ms-version:{version}\n"
            f"/{ACCOUNT}/{ACCOUNT}/{name}\nrestype:container"
        )
        sig = base64.b64encode(
            hmac.new(base64.b64decode(ACCOUNT_KEY), to_sign.encode(), hashlib.sha256).digest()
        ).decode()
        req = urllib.request.Request(
            f"{self.endpoint}/{name}?restype=container",
            method="PUT",
            headers={
                "x-ms-date": date,
                "x-ms-version": version,
                "Authorization": f"SharedKey {ACCOUNT}:{sig}",
                "Content-Length": "0",
            },
        )
        with urllib.request.urlopen(req, timeout=10):
            pass

    def storage_options(self) -> dict[str, Any]:
        """The ``storage_options`` that reach this server (deltalake/hudi-rs key names)."""
        return {
            "azure_storage_account_name": ACCOUNT,
            "azure_storage_account_key": ACCOUNT_KEY,
            "azure_storage_endpoint": self.endpoint,
            "azure_allow_http": "true",
        }
