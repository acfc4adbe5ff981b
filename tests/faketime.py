"""A process whose wall clock is off by a given offset: libfaketime (Debian's ``faketime``)
preloaded into a test's child process, installed with apt-get when missing (as root, as CI
runs). Only the wall clock moves (``DONT_FAKE_MONOTONIC``): a skewed host's monotonic clock
still measures durations right, and file modification times stay the kernel's."""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

LIB_DIRS = ("/usr/lib/x86_64-linux-gnu/faketime", "/usr/lib/aarch64-linux-gnu/faketime")
LIB = "libfaketimeMT.so.1"


def _find() -> Path | None:
    for d in LIB_DIRS:
        p = Path(d) / LIB
        if p.exists():
            return p
    return None


def ensure_faketime() -> Path:
    """The path of libfaketime, installing Debian's ``faketime`` if needed (skips the test
    when it cannot be installed: not root, or no apt-get)."""
    found = _find()
    if found is not None:
        return found
    apt = shutil.which("apt-get")
    if apt is None or os.geteuid() != 0:
        pytest.skip("clock-skew tests need libfaketime: apt-get install faketime (as root)")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    # one installer at a time: the suite's two workers may both get here first (dpkg's lock)
    with open(Path(tempfile.gettempdir()) / "hudi_ds_faketime.lock", "w") as guard:
        fcntl.flock(guard, fcntl.LOCK_EX)
        proc = None
        if _find() is None:
            subprocess.run([apt, "update", "-qq"], env=env, capture_output=True, timeout=600)
            proc = subprocess.run(
                [apt, "install", "-y", "-qq", "faketime"],
                env=env,
                capture_output=True,
                timeout=600,
            )
    found = _find()
    if found is None:
        why = proc.stderr.decode()[-2000:] if proc is not None else "not found after install"
        pytest.fail(f"could not install faketime: {why}")
    return found


def skewed_env(offset_s: float) -> dict[str, str]:
    """The environment additions that run a child process with its wall clock ``offset_s``
    seconds off (negative: behind)."""
    lib = ensure_faketime()
    return {
        "LD_PRELOAD": str(lib),
        "FAKETIME": f"{offset_s:+g}",
        "DONT_FAKE_MONOTONIC": "1",
        "FAKETIME_DONT_RESET": "1",
    }
