"""Who writes a pending instant, and whether that writer is still alive.

A single writer (``hoodie.write.concurrency.mode=single_writer``, the default) rolls back the
failed writes it finds when it starts, as Hudi's EAGER failed-writes policy does. Apache Hudi
rolls back *every* pending write then (``BaseHoodieTableServiceClient.getInstantsToRollback``
with ``HoodieFailedWritesCleaningPolicy.EAGER``) and starts no heartbeat
(``BaseHoodieWriteClient.startCommit`` starts ``HoodieHeartbeatClient`` for the LAZY policy
only): a second live writer's instant is rolled back under its feet and its acknowledged rows
are lost. hudi_ds tells a failed write from a live one first, with two files per write:

* the heartbeat ``.hoodie/.heartbeat/<instant>`` (Hudi's file, refreshed every
  ``hoodie.client.heartbeat.interval_in_ms``; expired after ``tolerable.misses`` intervals,
  as ``HoodieHeartbeatClient.isHeartbeatExpired`` decides) -- a writer on any machine;
* the writer record ``.hoodie/.aux/.hudi_py_writers/<instant>`` (JSON: host, pid, process
  start, kernel boot id, pid namespace), created before the instant's requested file and
  deleted after the write's post-commit table services. Hudi's auxiliary folder, which Hudi's
  readers and services do not read. On the machine that wrote it, the record answers at once
  whether the writer's process still runs: a writer restarted after a crash rolls back its
  own dead instant without waiting for the heartbeat to expire (2 minutes at Hudi's
  defaults). The records folder, listed when a write starts, shows every single writer at
  work, also one whose instant is already completed but whose table services still run. A
  record is also the write's *claim*: a writer that rolls back another's instant first
  deletes its record, and a write whose record is gone does not commit (see
  :meth:`hudi_ds.write.client.WriteClient.commit`).

A writer is alive when its heartbeat is fresh and, if its record says it ran on this machine,
its process still runs (a process of this one: its heartbeat thread still runs). A pending
instant with no heartbeat is a failed write (a crash before the first beat, a writer that
does not beat).
"""

from __future__ import annotations

import json
import logging
import os
import socket
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from functools import cache

from hudi_ds.concurrency.heartbeat import HEARTBEAT_DIR, Periodic, beat_once, heartbeat_expired
from hudi_ds.storage import Storage

log = logging.getLogger("hudi_ds.write")

#: the writer records of the single writers of a table, one file per instant
WRITERS_DIR = ".hoodie/.aux/.hudi_py_writers"

#: (base URI, instant) of the heartbeats running in this process
_running: set[tuple[str, str]] = set()


def record_path(instant: str) -> str:
    """The writer record of ``instant`` (relative to the table's base path)."""
    return f"{WRITERS_DIR}/{instant}"


def heartbeat_path(instant: str) -> str:
    return f"{HEARTBEAT_DIR}/{instant}"


@dataclass(frozen=True)
class WriterProcess:
    """A writer's process, as its record names it.

    Attributes:
        host: the machine's host name (for messages; ``boot`` identifies the machine).
        pid: the process id.
        start: the process's start time (``/proc/<pid>/stat``, clock ticks since boot), which
            tells a reused pid from the writer's.
        boot: the kernel's boot id (``/proc/sys/kernel/random/boot_id``).
        pidns: the pid namespace (a container's pids are not the host's).
    """

    host: str
    pid: int
    start: str | None = None
    boot: str | None = None
    pidns: str | None = None

    @staticmethod
    def current() -> WriterProcess:
        """This process (computed again after a fork)."""
        return _current(os.getpid())

    def to_bytes(self) -> bytes:
        return json.dumps(asdict(self), sort_keys=True).encode()

    @staticmethod
    def parse(data: bytes) -> WriterProcess | None:
        try:
            raw = json.loads(data)
            return WriterProcess(
                str(raw["host"]),
                int(raw["pid"]),
                raw.get("start"),
                raw.get("boot"),
                raw.get("pidns"),
            )
        except (ValueError, KeyError, TypeError):
            return None

    def on_this_machine(self) -> bool:
        """Whether this process can see the writer's process (same machine, same boot, same
        pid namespace). Without a boot id (not Linux) the host name decides."""
        me = WriterProcess.current()
        if self.boot is None or me.boot is None:
            return self.boot is None and me.boot is None and self.host == me.host
        return self.boot == me.boot and self.pidns == me.pidns

    def running(self) -> bool:
        """Whether the process still runs (a zombie does not; only asked on its machine)."""
        if self.start is None:
            try:
                os.kill(self.pid, 0)
            except ProcessLookupError:
                return False
            except PermissionError:
                return True
            return True
        fields = _stat_fields(self.pid)
        return fields is not None and fields[0] not in ("Z", "X") and fields[19] == self.start

    def describe(self) -> str:
        return f"process {self.pid} on {self.host}"


def _stat_fields(pid: int) -> list[str] | None:
    """The fields of ``/proc/<pid>/stat`` after the command name (state first)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()


def _read(path: str) -> str | None:
    try:
        with open(path) as f:
            return f.read().strip() or None
    except OSError:
        return None


@cache
def _current(pid: int) -> WriterProcess:
    fields = _stat_fields(pid)
    try:
        pidns: str | None = os.readlink("/proc/self/ns/pid")
    except OSError:
        pidns = None
    return WriterProcess(
        socket.gethostname(),
        pid,
        fields[19] if fields is not None else None,
        _read("/proc/sys/kernel/random/boot_id"),
        pidns,
    )


def claim(storage: Storage, instant: str) -> bool:
    """Create ``instant``'s writer record for this process (before its requested file).

    Returns:
        False if the record exists: another writer chose the same instant time.
    """
    return storage.create_if_absent(record_path(instant), WriterProcess.current().to_bytes())


def writer_of(storage: Storage, instant: str) -> WriterProcess | None:
    """The process named by ``instant``'s writer record (None: no or unreadable record)."""
    try:
        return WriterProcess.parse(storage.read_bytes(record_path(instant)))
    except FileNotFoundError:
        return None


def release(storage: Storage, instant: str, also: Sequence[str] = ()) -> None:
    """End ``instant``'s write: its record and its heartbeat, with the objects ``also`` (a
    completed write's markers) in the same request on an object store. A heartbeat thread of
    another process stops when it finds the record gone; one that beat just before may leave
    a heartbeat without a record, a write that is over either way."""
    storage.discard_all([record_path(instant), heartbeat_path(instant), *also])


def revoke(storage: Storage, instant: str) -> None:
    """Take ``instant`` from its writer, which another writer found dead and rolls back: its
    heartbeat first, then its record (a crash in between leaves a record without a heartbeat,
    a dead writer still). A writer that was only stalled finds its record gone and does not
    commit."""
    storage.discard(heartbeat_path(instant))
    storage.discard(record_path(instant))


def recorded_writers(storage: Storage) -> list[str]:
    """The instants that have a writer record (one listing)."""
    return sorted(f.name for f in storage.list_files(WRITERS_DIR) if not f.name.startswith("."))


@dataclass(frozen=True)
class Liveness:
    """Whether the writer of an instant is alive, and why (for messages).

    Attributes:
        alive: the writer is alive (or cannot be shown dead).
        why: what was found ("process 12 on host-a, heartbeat fresh", "no heartbeat", ...).
        recorded: the instant has a writer record (a hudi_ds single writer's write).
    """

    alive: bool
    why: str
    recorded: bool


def liveness(storage: Storage, instant: str, timeout_s: float) -> Liveness:
    """Whether the writer of ``instant`` is alive: its heartbeat is younger than
    ``timeout_s`` and, if its record names a process of this machine, that process runs."""
    writer = writer_of(storage, instant)
    who = writer.describe() if writer is not None else "a writer without a record"
    if heartbeat_expired(storage, instant, timeout_s):
        if storage.info(heartbeat_path(instant)) is None:
            return Liveness(False, f"{who}, no heartbeat", writer is not None)
        return Liveness(False, f"{who}, heartbeat older than {timeout_s:g} s", writer is not None)
    if writer is not None and writer.on_this_machine():
        if writer.pid == os.getpid() and writer.start == WriterProcess.current().start:
            if (storage.uri(), instant) not in _running:
                return Liveness(False, f"{who} (this process), heartbeat stopped", True)
        elif not writer.running():
            return Liveness(False, f"{who}, which is gone", True)
    return Liveness(True, f"{who}, heartbeat younger than {timeout_s:g} s", writer is not None)


class WriterHeartbeat:
    """The heartbeat of a single writer's instant: refreshed every ``interval_s`` on a daemon
    thread for as long as the instant's writer record exists.

    A write may finish in another process than the one that started it (Spark runs a batch
    write's ``commit`` in another Python worker than ``writer()``); that process deletes the
    record and the heartbeat, and the thread here stops at its next beat (after writing the
    heartbeat, it finds the record gone and deletes the heartbeat again).
    """

    def __init__(self, storage: Storage, instant: str, interval_s: float) -> None:
        self.storage = storage
        self.instant = instant
        self._key = (storage.uri(), instant)
        beat_once(storage, instant)
        _running.add(self._key)
        self._beats = Periodic(self._beat, interval_s, f"heartbeat-{instant}", "instant")

    def _beat(self) -> bool:
        beat_once(self.storage, self.instant)
        if self.storage.is_file(record_path(self.instant)):
            return True
        # the write ended elsewhere, or another writer rolled it back (it took the record)
        self.storage.delete(heartbeat_path(self.instant))
        _running.discard(self._key)
        return False

    def stop(self) -> None:
        """Stop the beats (the files stay: :func:`release` deletes them)."""
        self._beats.stop()
        _running.discard(self._key)
