"""Locks for multi-writer optimistic concurrency control, and writer heartbeats.

Lock providers (``hoodie.write.lock.provider``; Hudi's Java class names are accepted):

* :class:`FileSystemLock` (``...FileSystemBasedLockProvider``, the default): the lock is the file
  ``.hoodie/lock``, created atomically if absent; it records its holder and an expiry, so a dead
  holder's lock is broken once it expires (``hoodie.write.lock.filesystem.expire``, minutes).
  Works on local and network file systems (anything with atomic create-if-absent) and on object
  stores, where the create is a conditional put and an expired lock is taken over with one
  conditional overwrite of the very object read (``If-Match`` its ETag): of several writers
  breaking it, exactly one gets it.
* :class:`InProcessLock` (``...InProcessLockProvider``): a lock per table path shared by the
  threads of one process.

Heartbeats (``.hoodie/.heartbeat/<instant>``): a writer refreshes its instant's heartbeat while
it runs. Under optimistic concurrency a pending instant is only rolled back by another writer
once its heartbeat is older than ``interval x tolerable misses`` -- so live writers are never
rolled back by their peers (Hudi's LAZY failed-writes cleaning).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

from hudi_ds.config import ConcurrencyConfig, Options
from hudi_ds.errors import ConfigError, HudiError
from hudi_ds.storage import Storage

log = logging.getLogger("hudi_ds.write")

LOCK_FILE = ".hoodie/lock"
HEARTBEAT_DIR = ".hoodie/.heartbeat"

FS_LOCK_NAMES = (
    "org.apache.hudi.client.transaction.lock.FileSystemBasedLockProvider",
    "FileSystemBasedLockProvider",
    "filesystem",
)
IN_PROCESS_NAMES = (
    "org.apache.hudi.client.transaction.lock.InProcessLockProvider",
    "InProcessLockProvider",
    "in_process",
)


class LockTimeoutError(HudiError):
    """The table lock could not be acquired in time."""


class FileSystemLock:
    """``.hoodie/lock``: atomic create-if-absent, with expiry of a dead holder."""

    def __init__(
        self, storage: Storage, expire_s: float = 600.0, wait_ms: int = 100, retries: int = 600
    ) -> None:
        self.storage = storage
        self.expire_s = expire_s
        self.wait_s = wait_ms / 1000
        self.retries = retries
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"

    def acquire(self) -> None:
        for _ in range(self.retries + 1):
            now = time.time()
            body = json.dumps({"owner": self.owner, "expires": now + self.expire_s}).encode()
            if self.storage.create_if_absent(LOCK_FILE, body):
                return
            if self.storage.conditional_update:
                if self._take_if_expired(now, body):
                    return
            else:
                self._break_if_expired(now)
            time.sleep(self.wait_s)
        raise LockTimeoutError(
            f"could not acquire {self.storage.full_path(LOCK_FILE)} after {self.retries} retries"
        )

    def _take_if_expired(self, now: float, body: bytes) -> bool:
        """On an object store: replace an expired lock by ours in one conditional put of the
        object read (``If-Match`` its ETag); True if we hold the lock now. A rename there is a
        copy and a delete, which could delete a lock taken meanwhile.

        A lock whose body does not parse expires by its modification time, as in
        :meth:`_break_if_expired`.
        """
        try:
            raw, version = self.storage.read_versioned(LOCK_FILE)
        except FileNotFoundError:
            return False
        held = _parse_lock(raw)
        if held is None:
            info = self.storage.info(LOCK_FILE)
            if info is None or now - info.mtime_ms / 1000 <= self.expire_s:
                return False
        elif held[1] >= now:
            return False
        if not self.storage.replace_if_unchanged(LOCK_FILE, body, version):
            return False
        log.warning("took over the expired lock %s", self.storage.full_path(LOCK_FILE))
        return True

    def _break_if_expired(self, now: float) -> None:
        """Delete the lock if its holder's expiry passed (the holder died).

        A lock whose body cannot be read as a complete ``{"owner", "expires"}`` record is being
        created right now (on storage where a file appears before its content) or was left
        torn by a crash: it is only taken as expired once its modification time is older than
        the expiry -- never at once, or two writers would hold the lock together.
        """
        try:
            raw = self.storage.read_bytes(LOCK_FILE)
        except FileNotFoundError:
            return
        held = _parse_lock(raw)
        if held is None:
            info = self.storage.info(LOCK_FILE)
            if info is None or now - info.mtime_ms / 1000 <= self.expire_s:
                return
        elif held[1] >= now:
            return
        # move the expired lock aside (atomic): of several writers breaking it, one wins
        tomb = f"{LOCK_FILE}.{uuid.uuid4().hex}.expired"
        try:
            self.storage.rename(LOCK_FILE, tomb)
        except (FileNotFoundError, OSError):
            return
        try:
            moved = self.storage.read_bytes(tomb)
            # a writer took the lock between our read and the move: hand it back
            if moved != raw and not self.storage.create_if_absent(LOCK_FILE, moved):
                log.warning("a live lock was broken while breaking an expired one")
        finally:
            self.storage.delete(tomb)

    def release(self) -> None:
        try:
            held = _parse_lock(self.storage.read_bytes(LOCK_FILE))
        except FileNotFoundError:
            return
        if held is not None and held[0] == self.owner:
            self.storage.delete(LOCK_FILE)


def _parse_lock(raw: bytes) -> tuple[str, float] | None:
    """``(owner, expires)`` of a lock file body, or None if it is empty or incomplete."""
    try:
        body = json.loads(raw)
        return str(body["owner"]), float(body["expires"])
    except (ValueError, TypeError, KeyError):
        return None


_in_process: dict[str, threading.Lock] = {}
_registry_lock = threading.Lock()


class InProcessLock:
    """A lock per table shared by the threads of this process."""

    def __init__(self, storage: Storage) -> None:
        with _registry_lock:
            self._lock = _in_process.setdefault(storage.full_path(), threading.Lock())

    def acquire(self) -> None:
        self._lock.acquire()

    def release(self) -> None:
        self._lock.release()


def table_lock(storage: Storage, options: Options) -> FileSystemLock | InProcessLock | None:
    """The table lock that writers and table services take, from the ``hoodie.write.lock.*``
    options; None for a single writer (``hoodie.write.concurrency.mode=single_writer``)."""
    if options.get(ConcurrencyConfig.MODE) == "single_writer":
        return None
    return make_lock(
        options.get(ConcurrencyConfig.LOCK_PROVIDER),
        storage,
        options.get(ConcurrencyConfig.LOCK_EXPIRE_MIN),
        options.get(ConcurrencyConfig.LOCK_WAIT_MS),
        options.get(ConcurrencyConfig.LOCK_RETRIES),
    )


def make_lock(
    provider: str, storage: Storage, expire_min: float, wait_ms: int, retries: int
) -> FileSystemLock | InProcessLock:
    """The lock provider named by ``hoodie.write.lock.provider``."""
    if provider in FS_LOCK_NAMES:
        return FileSystemLock(
            storage, expire_min * 60 if expire_min > 0 else 600.0, wait_ms, retries
        )
    if provider in IN_PROCESS_NAMES:
        return InProcessLock(storage)
    raise ConfigError(
        f"unsupported lock provider {provider!r} (hoodie.write.lock.provider); use "
        f"{FS_LOCK_NAMES[0]} or {IN_PROCESS_NAMES[0]}"
    )


@contextmanager
def held(lock: FileSystemLock | InProcessLock | None) -> Iterator[None]:
    """Hold ``lock`` for the block (no-op for None: a single writer)."""
    if lock is None:
        yield
        return
    lock.acquire()
    try:
        yield
    finally:
        lock.release()


class Heartbeat:
    """Refreshes ``.hoodie/.heartbeat/<instant>`` every ``interval_s`` on a daemon thread."""

    def __init__(self, storage: Storage, instant: str, interval_s: float) -> None:
        self.storage = storage
        self.path = f"{HEARTBEAT_DIR}/{instant}"
        self.interval_s = interval_s
        self._stop = threading.Event()
        self.beat()
        self._thread = threading.Thread(target=self._run, name=f"heartbeat-{instant}", daemon=True)
        self._thread.start()

    def beat(self) -> None:
        # atomic: a peer reading the heartbeat never sees a half-written (empty) file
        self.storage.write_atomic(self.path, str(int(time.time() * 1000)).encode())

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            with contextlib.suppress(OSError):  # a storage hiccup: the next beat retries
                self.beat()

    def stop(self, delete: bool = True) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        if delete:
            self.storage.delete(self.path)


def beat_once(storage: Storage, instant: str) -> None:
    """Refresh ``instant``'s heartbeat once (writers without a long-lived process)."""
    storage.write_atomic(f"{HEARTBEAT_DIR}/{instant}", str(int(time.time() * 1000)).encode())


def heartbeat_expired(storage: Storage, instant: str, timeout_s: float) -> bool:
    """True if ``instant`` has no heartbeat or its last beat is older than ``timeout_s``."""
    info = storage.info(f"{HEARTBEAT_DIR}/{instant}")
    if info is None:
        return True
    try:
        last_ms = int(storage.read_bytes(f"{HEARTBEAT_DIR}/{instant}").decode())
    except (FileNotFoundError, ValueError):
        last_ms = 0
    last_ms = max(last_ms, info.mtime_ms)
    return (time.time() * 1000 - last_ms) / 1000 > timeout_s
