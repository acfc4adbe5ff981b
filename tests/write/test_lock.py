"""The file-system lock admits one holder at a time.

``Storage.create_if_absent`` used to create the lock file first and write its body after; a
second writer reading the still-empty body took it as expired, deleted it and took the lock
too. Now the file appears with its body, and a lock whose body is unreadable is only broken once
its modification time is older than the expiry.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from hudi_ds.concurrency.file_system_lock import LOCK_FILE, FileSystemLock
from hudi_ds.concurrency.lock import LockTimeoutError
from hudi_ds.storage import Storage
from tests.conftest import spawn_python


def test_create_if_absent_never_shows_the_file_without_its_body(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    storage = Storage(str(tmp_path))
    target = tmp_path / "x" / "lock"
    seen_while_writing: list[bool] = []
    real_write = os.write

    def spying_write(fd: int, data: bytes) -> int:
        seen_while_writing.append(target.exists())
        return real_write(fd, data)

    monkeypatch.setattr(os, "write", spying_write)
    assert storage.create_if_absent("x/lock", b'{"owner": "a"}')
    monkeypatch.undo()
    assert seen_while_writing and not any(seen_while_writing)
    assert target.read_bytes() == b'{"owner": "a"}'
    assert not storage.create_if_absent("x/lock", b"other")
    assert target.read_bytes() == b'{"owner": "a"}'
    assert [p.name for p in target.parent.iterdir()] == ["lock"]  # no temporary file left


def test_a_lock_being_created_is_not_broken(tmp_path: Path) -> None:
    storage = Storage(str(tmp_path))
    (tmp_path / ".hoodie").mkdir()
    # writer A's lock file exists, its body not written yet (object stores, or a torn write)
    (tmp_path / LOCK_FILE).write_bytes(b"")
    b = FileSystemLock(storage, expire_s=600, wait_ms=5, retries=5)
    with pytest.raises(LockTimeoutError):
        b.acquire()
    assert (tmp_path / LOCK_FILE).exists()
    (tmp_path / LOCK_FILE).write_bytes(b'{"owner": "a')  # half written
    with pytest.raises(LockTimeoutError):
        b.acquire()


def test_an_expired_or_long_torn_lock_is_broken(tmp_path: Path) -> None:
    storage = Storage(str(tmp_path))
    (tmp_path / ".hoodie").mkdir()
    lock = tmp_path / LOCK_FILE
    lock.write_bytes(json.dumps({"owner": "dead", "expires": time.time() - 1}).encode())
    b = FileSystemLock(storage, expire_s=600, wait_ms=5, retries=5)
    # expired by its body, but written just now (by the file system's clock): a holder whose
    # clock runs behind this host's, not a dead one
    with pytest.raises(LockTimeoutError, match="expired by this host.s clock but written"):
        b.acquire()
    old = time.time() - 700
    os.utime(lock, (old, old))
    b.acquire()
    assert json.loads(lock.read_bytes())["owner"] == b.owner
    b.release()
    assert not lock.exists()
    lock.write_bytes(b"")
    old = time.time() - 700
    os.utime(lock, (old, old))
    b.acquire()  # an empty lock older than the expiry: its holder died while creating it
    assert json.loads(lock.read_bytes())["owner"] == b.owner
    b.release()
    assert sorted(p.name for p in lock.parent.iterdir()) == []


def test_a_release_racing_a_takeover_leaves_the_new_holders_lock(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A's lease ran out (A stalled); B breaks it and takes the lock right after A's release
    read the lock as A's own. A's release must not remove B's lock (it used to delete it: then
    C took the lock while B held it)."""
    (tmp_path / ".hoodie").mkdir()
    lock = tmp_path / LOCK_FILE
    a_storage = Storage(str(tmp_path))
    a = FileSystemLock(a_storage, expire_s=0.01, retries=0)
    b = FileSystemLock(Storage(str(tmp_path)), expire_s=600, wait_ms=1, retries=5)
    c = FileSystemLock(Storage(str(tmp_path)), expire_s=600, retries=0)
    a.acquire()
    old = time.time() - 700  # A's lease is over on the file system's clock too
    os.utime(lock, (old, old))
    time.sleep(0.6)  # and by its body's expiry (+ the clock drift allowance)
    real_read = a_storage.read_bytes
    raced: list[str] = []

    def read_then_taken_over(rel: str) -> bytes:
        data = real_read(rel)
        if rel == LOCK_FILE and not raced:
            b.acquire()
            raced.append(b.owner)
        return data

    monkeypatch.setattr(a_storage, "read_bytes", read_then_taken_over)
    a.release()
    assert raced == [b.owner]
    assert json.loads(lock.read_bytes())["owner"] == b.owner
    b.confirm()
    with pytest.raises(LockTimeoutError):
        c.acquire()
    b.release()
    assert sorted(p.name for p in lock.parent.iterdir()) == []


HOLDER = r"""
import os, sys, time
from hudi_ds.storage import Storage
from hudi_ds.concurrency.file_system_lock import FileSystemLock
path, seconds = sys.argv[1], float(sys.argv[2])
lock = FileSystemLock(Storage(path), expire_s=600, wait_ms=1, retries=100000)
inside = os.path.join(path, "inside")
end = time.time() + seconds
n = overlaps = 0
while time.time() < end:
    lock.acquire()
    try:
        fd = os.open(inside, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    except FileExistsError:
        overlaps += 1  # someone else is inside too
        lock.release()
        continue
    os.close(fd)
    time.sleep(0.0005)
    os.unlink(inside)
    lock.release()
    n += 1
print(n, overlaps)
"""


@pytest.mark.slow
def test_processes_never_hold_the_lock_together(tmp_path: Path) -> None:
    (tmp_path / ".hoodie").mkdir()
    procs = [spawn_python(HOLDER, str(tmp_path), "2.5") for _ in range(3)]
    counts = []
    for p in procs:
        out, err = p.communicate(timeout=60)
        assert p.returncode == 0, err[-2000:]
        counts.append(tuple(int(x) for x in out.split()))
    assert all(n > 0 for n, _ in counts), counts
    assert sum(o for _, o in counts) == 0, f"two holders of the lock: {counts}"
