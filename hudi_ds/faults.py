"""Crash and stall injection for tests (off unless ``HUDI_DS_CRASH_AT`` or ``HUDI_DS_STALL_AT``
is set).

The write path and the table services call :func:`crash_point` at each step where a real
process could die or stall. With ``HUDI_DS_CRASH_AT=<point>`` (optionally ``<point>:<n>`` for
the n-th time the point is reached, default the first) the process exits immediately with
status 137, as if killed by SIGKILL: no ``finally`` blocks, no flushing, no rollback. With
``HUDI_DS_STALL_AT=<point>[:<n>]`` it stops itself there with SIGSTOP -- every thread, its
heartbeats and lock renewals too, as a VM or GC pause stops them -- until the test sends
SIGCONT: a stall at a named step, not one waited for under load.

Points (see :data:`POINTS`):

* ``start_opened``      a write's start checked its files (and, with several writers, rolled
                        back failed writes); its instant is not created yet
* ``start_claimed``     a single writer's instant is claimed (writer record, heartbeat) and
                        requested; it has not looked for other writers yet
* ``after_requested``   the instant's requested file exists (its inflight file too, unless the
                        write saves a workload profile), nothing else
* ``after_inflight``    the inflight file holding the write's workload profile exists, no data
                        file (the embedded API: every record is tagged)
* ``handle_flush``      a log block or base file is being written (after its marker)
* ``after_files``       every data file is written, the commit has not started
* ``commit_check``      the commit holds the table lock, its conflict check has not run
* ``commit_locked``     the conflict check passed; the completed instant is not written yet
* ``commit_write``      the completed instant file is written to its temp name, not renamed
                        (on an object store: the put of the completed file is about to start)
* ``commit_written``    the completed instant file exists, the commit's fence has not been
                        checked (it may still be withdrawn)
* ``after_commit``      the instant completed (services not yet run)
* ``compaction``        a compaction wrote some of its base files
* ``clustering``        a clustering wrote some of its new base files (``:n``: the n-th)
* ``service_written``   a table service (compaction, clean, rollback, restore) wrote its
                        completed instant file under the table lock; its fence has not been
                        checked (it may still be withdrawn)
* ``service_plan``      a table service (compaction, clean, rollback, restore) made its plan
                        under the table lock; its requested file is not written yet
* ``clean``             a clean deleted some of its files
* ``rollback``          a rollback deleted some of the failed instant's files; a rollback of a
                        completed instant also stops here once inflight and once past its rollback
                        point (the target's completed file deleted), the rollback of a compaction
                        attempt once inflight and once its files are deleted
* ``clean_plan``        a clean's requested file exists (``:2``: its inflight file too)
* ``archive``           an archival wrote its archive file to its temporary name (``:1``),
                        renamed it (``:2``), or deleted its n-2-th instant file (``:n``)
* ``restore``           a restore is inflight (``:1``), or rolled back n-1 instants (``:n``)
* ``savepoint``         a savepoint's inflight file exists, its completed file does not
* ``table_config``      an update of ``hoodie.properties`` (backup-file protocol) wrote the
                        backup to its temporary name (``:1``), renamed it (``:2``), deleted
                        ``hoodie.properties`` (``:3``), wrote the new one to its temporary name
                        (``:4``), renamed it, the backup not yet deleted (``:5``)
* ``metadata``          the metadata table's writer: created the MDT, ``files`` not yet in
                        ``hoodie.properties`` (the first hit when it creates one); then, per
                        deltacommit, its inflight file exists (``:n``), its log file too
                        (``:n+1``), it completed, the data instant not (``:n+2``); an MDT
                        compaction is inflight; a build's record index files are written,
                        its MDT deltacommit not completed
* ``indexing``          a build of metadata table index partitions (``hudi-py metadata
                        --build``): its ``indexing`` instant is requested (``:1``), inflight
                        (``:2``), its partitions are named inflight in ``hoodie.properties``
                        (``:3``), built as MDT deltacommit T (``:4``), declared complete --
                        the instant not completed yet (``:5``)
* ``upgrade``           an upgrade to table version 8/9 rolled back the failed writes (``:1``),
                        wrote the layout-2 timeline (``:2``) and the LSM history (``:3``), not
                        yet ``hoodie.properties``; ``:4``: the new ``hoodie.properties`` is
                        written, the layout-1 instant files are not deleted yet

``<point>:<n>`` makes every step of a multi-step transition reachable: the crash matrix of
``tests/services/test_transitions_crash.py`` kills at each n in turn.
"""

from __future__ import annotations

import os
import signal

ENV = "HUDI_DS_CRASH_AT"
STALL_ENV = "HUDI_DS_STALL_AT"
EXIT_CODE = 137
POINTS = (
    "start_opened",
    "start_claimed",
    "after_requested",
    "after_inflight",
    "handle_flush",
    "after_files",
    "commit_check",
    "commit_locked",
    "commit_write",
    "commit_written",
    "after_commit",
    "compaction",
    "clustering",
    "service_written",
    "service_plan",
    "clean",
    "rollback",
    "clean_plan",
    "archive",
    "restore",
    "savepoint",
    "table_config",
    "metadata",
    "upgrade",
    "indexing",
)
_hits: dict[str, int] = {}
_stall_hits: dict[str, int] = {}


def _due(spec: str | None, name: str, hits: dict[str, int]) -> bool:
    if not spec:
        return False
    point, _, nth = spec.partition(":")
    if point != name:
        return False
    hits[name] = hits.get(name, 0) + 1
    return hits[name] == (int(nth) if nth else 1)


def crash_point(name: str) -> None:
    """Die here (``os._exit(137)``) if ``HUDI_DS_CRASH_AT`` names this point; stop here
    (SIGSTOP, once) if ``HUDI_DS_STALL_AT`` does."""
    if _due(os.environ.get(STALL_ENV), name, _stall_hits):
        os.kill(os.getpid(), signal.SIGSTOP)
    spec = os.environ.get(ENV)
    if not spec:
        return
    point, _, nth = spec.partition(":")
    if point != name:
        return
    _hits[name] = _hits.get(name, 0) + 1
    if _hits[name] >= (int(nth) if nth else 1):
        os._exit(EXIT_CODE)
