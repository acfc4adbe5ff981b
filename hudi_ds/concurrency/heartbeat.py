"""Heartbeats: a writer's or a table service's instant (``.hoodie/.heartbeat/<instant>``), and
the periodic thread that also renews the locks' leases.

A writer refreshes its instant's heartbeat while it runs. Under optimistic concurrency a
pending instant is only rolled back by another writer once its heartbeat is older than
``interval x tolerable misses`` -- so live writers are never rolled back by their peers (Hudi's
LAZY failed-writes cleaning).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from hudi_ds.storage import Storage

log = logging.getLogger("hudi_ds.write")

HEARTBEAT_DIR = ".hoodie/.heartbeat"


class Periodic:
    """Calls ``fn`` every ``period_s`` on a daemon thread until it returns False or
    :meth:`stop` is called: the heartbeats of the locks and of writers' instants.

    An exception of ``errors`` (a storage hiccup) is logged and the next period retries.
    """

    def __init__(
        self,
        fn: Callable[[], object],
        period_s: float,
        name: str,
        what: str,
        errors: tuple[type[BaseException], ...] = (OSError,),
    ) -> None:
        self.period_s = period_s
        self._fn, self._what, self._errors = fn, what, errors
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.period_s):
            try:
                if self._fn() is False:
                    return
            except self._errors as e:
                log.warning("%s heartbeat failed: %s", self._what, e)

    def stop(self) -> None:
        """Stop the beats and wait for a beat under way (not when called from a beat)."""
        self._stop.set()
        if self._thread is not threading.current_thread():
            self._thread.join(timeout=max(5.0, self.period_s))


class Heartbeat:
    """Refreshes ``.hoodie/.heartbeat/<instant>`` every ``interval_s`` on a daemon thread."""

    def __init__(self, storage: Storage, instant: str, interval_s: float) -> None:
        self.storage = storage
        self.path = f"{HEARTBEAT_DIR}/{instant}"
        self.interval_s = interval_s
        self.beat()
        self._beats = Periodic(self.beat, interval_s, f"heartbeat-{instant}", "instant")

    def beat(self) -> None:
        # atomic: a peer reading the heartbeat never sees a half-written (empty) file
        self.storage.write_atomic(self.path, str(int(time.time() * 1000)).encode())

    def stop(self, delete: bool = True) -> None:
        self._beats.stop()
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
