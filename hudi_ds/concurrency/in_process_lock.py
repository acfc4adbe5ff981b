"""Hudi's ``InProcessLockProvider``: a mutex per table path shared by the threads of one
process."""

from __future__ import annotations

import threading

from hudi_ds.storage import Storage

_in_process: dict[str, threading.Lock] = {}
_registry_lock = threading.Lock()


class InProcessLock:
    """A lock per table shared by the threads of this process."""

    def __init__(self, storage: Storage) -> None:
        with _registry_lock:
            self._lock = _in_process.setdefault(storage.full_path(), threading.Lock())
        self._holds = False

    def acquire(self) -> None:
        self._lock.acquire()
        self._holds = True

    def confirm(self) -> None:
        """Nothing to prove: the lock is a mutex of this process, it has no lease to lose."""

    def held_until(self) -> float:
        """A mutex of this process never runs out."""
        return float("inf")

    def release(self) -> None:
        """Release the mutex if this provider took it (a provider that does not hold it --
        released already, or never acquired -- must not free another holder's)."""
        if self._holds:
            self._holds = False
            self._lock.release()
