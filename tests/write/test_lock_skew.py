"""Lock providers under clock skew: a contender process whose wall clock is shifted
(libfaketime, :func:`tests.faketime.skewed_env`) against a holder on the real clock.

A lease written with the holder's wall clock (the storage-based lock's ``validUntil``, the
file-system lock's ``expires``) used to be taken over as soon as it had passed on the
contender's clock: a host 10 minutes ahead took a live, heartbeating lease at once, and one 2 s
ahead took a stalled holder's lease 2 s before it ran out. Now a lease is only taken over once
the lock was also not written for a whole lease on the storage's own clock; the skew is named.
"""

from __future__ import annotations

import json
import re
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from hudi_ds.concurrency.dynamodb_lock import DynamoDBLock
from hudi_ds.concurrency.file_system_lock import FileSystemLock
from hudi_ds.concurrency.storage_lock import StorageBasedLock
from hudi_ds.errors import LockLostError
from hudi_ds.storage import Storage
from tests.conftest import finish_process, spawn_python
from tests.faketime import skewed_env
from tests.moto_server import ACCESS_KEY, REGION, SECRET_KEY, MotoServer

Lock = FileSystemLock | StorageBasedLock | DynamoDBLock

# The contender: builds its lock (the same settings as the holder's), says it is ready once a
# first attempt saw the lock held, then waits for the file ``go`` and tries again every 20 ms:
# ``live``: for 3 s, printing whether it ever took the lock and what it saw last; ``dead``: until
# it takes the lock (at most 60 s), printing the monotonic time (not faked) when it did.
CONTENDER = r"""
import json, os, sys, threading, time
# libfaketime 0.9.10 with DONT_FAKE_MONOTONIC fails time.sleep (clock_nanosleep: EINVAL)
time.sleep = lambda s: threading.Event().wait(s)
from hudi_ds.storage import Storage
from hudi_ds.concurrency import dynamodb_lock, file_system_lock, storage_lock
kind, where, lease, mode, go = (sys.argv[1], json.loads(sys.argv[2]), float(sys.argv[3]),
    sys.argv[4], sys.argv[5])
if kind == "dynamodb":
    lock = dynamodb_lock.DynamoDBLock(lease_ms=int(lease * 1000), retries=0, **where)
else:
    storage = Storage(where["uri"], storage_options=where["so"])
    if kind == "storage":
        lock = storage_lock.StorageBasedLock(storage, lease, lease / 10, wait_ms=20, retries=0)
    else:
        lock = file_system_lock.FileSystemLock(storage, lease, wait_ms=20, retries=0)
first = lock.try_acquire()
print(json.dumps({"ready": True, "first": first, "now": time.time()}), flush=True)
while not os.path.exists(go):
    time.sleep(0.01)
end = time.monotonic() + (3.0 if mode == "live" else 60.0)
took = False
while time.monotonic() < end and not took:
    took = lock.try_acquire()
    if not took:
        time.sleep(0.02)
at = time.monotonic()
seen = lock.last_seen
if took:
    lock.release()
print(json.dumps({"took": took, "at": at, "seen": seen}))
"""


def _setup(
    kind: str, lease_s: float, moto_s3: MotoServer, s3_uri: str, tmp_path: Path
) -> tuple[Lock, dict]:
    """The holder's lock (real clock) and where the contender finds the same lock."""
    if kind == "dynamodb":
        where = {
            "table": f"locks-{uuid.uuid4().hex[:8]}",
            "partition_key": "t",
            "region": REGION,
            "endpoint_url": moto_s3.endpoint,
            "credentials": {"aws_access_key_id": ACCESS_KEY, "aws_secret_access_key": SECRET_KEY},
        }
        return DynamoDBLock(lease_ms=int(lease_s * 1000), **where), where
    if kind == "filesystem-local":
        (tmp_path / ".hoodie").mkdir()
        where = {"uri": str(tmp_path), "so": None}
    else:
        where = {"uri": s3_uri, "so": moto_s3.storage_options()}
    storage = Storage(where["uri"], storage_options=where["so"])
    if kind == "storage":
        return StorageBasedLock(storage, lease_s, lease_s / 10, wait_ms=20, retries=0), where
    return FileSystemLock(storage, lease_s, wait_ms=20, retries=0), where


def _contend(
    kind: str, where: dict, lease_s: float, mode: str, skew_s: float, go: Path
) -> subprocess.Popen[str]:
    """The contender process, once it is ready (its first attempt saw the lock held)."""
    proc = spawn_python(
        CONTENDER, kind, json.dumps(where), str(lease_s), mode, str(go), env=skewed_env(skew_s)
    )
    assert proc.stdout is not None
    ready = json.loads(proc.stdout.readline() or "{}")
    if ready.get("first") is not False:  # took the lock at once (or failed): do not wait
        proc.kill()
        raise AssertionError(f"the contender took the lock at once: {ready} {proc.communicate()}")
    # its wall clock is off by the skew, its monotonic clock is not
    assert abs(ready["now"] - time.time() - skew_s) < 1.0, ready
    return proc


@pytest.mark.parametrize("kind", ["storage", "filesystem", "filesystem-local", "dynamodb"])
def test_a_host_ten_minutes_ahead_never_takes_a_live_lease(
    moto_s3: MotoServer, s3_uri: str, tmp_path: Path, kind: str
) -> None:
    """The holder keeps its lease (heartbeats on an object store; a file-system lock's lease
    of 30 s from its creation); a contender whose clock runs 600 s ahead sees it expired by its
    own clock, yet never takes it, and names the skew."""
    lease = 2.0 if kind == "dynamodb" else 30.0 if kind == "filesystem-local" else 10.0
    holder, where = _setup(kind, lease, moto_s3, s3_uri, tmp_path)
    assert holder.try_acquire()
    proc = _contend(kind, where, lease, "live", 600, tmp_path / "go")
    (tmp_path / "go").touch()
    out = finish_process(proc, 60)
    assert out["took"] is False, out
    if kind != "dynamodb":  # the DynamoDB lock reads no wall clock: there is no skew to see
        assert re.search(r"runs about (59[89]|60[012]) s ahead of the holder's", out["seen"]), out
    holder.confirm()
    holder.release()


@pytest.mark.parametrize("kind", ["storage", "filesystem", "filesystem-local"])
def test_a_host_two_seconds_ahead_takes_a_dead_lease_only_once_it_ran_out(
    moto_s3: MotoServer, s3_uri: str, tmp_path: Path, kind: str
) -> None:
    """The holder writes its lease (3 s) one last time and stops renewing (it died or stalls);
    a contender 2 s ahead takes the lease over only after it ran out on the real clock -- and
    then within a few seconds; the old holder's ``confirm`` fences it."""
    lease = 3.0
    holder, where = _setup(kind, lease, moto_s3, s3_uri, tmp_path)
    assert holder.try_acquire()
    proc = _contend(kind, where, lease, "dead", 2, tmp_path / "go")
    heart = getattr(holder, "_heart", None)
    if heart is not None:
        heart.stop()
    start = time.monotonic()  # the lease written next ends no sooner than start + lease
    if kind == "filesystem-local":  # no renewal on a file system: take it anew
        holder.release()
        assert holder.try_acquire()
    else:
        assert holder.renew()
    (tmp_path / "go").touch()
    out = finish_process(proc, 90)
    assert out["took"] is True, out
    assert out["at"] - start >= lease, f"took a live lease {out['at'] - start:.2f} s in"
    assert out["at"] - start < lease + 6, f"took a dead lease only {out['at'] - start:.2f} s in"
    with pytest.raises(LockLostError):
        holder.confirm()
    holder.release()  # lost: writes nothing
