"""The background compactor: pending compactions of a MOR table executed off the write path.

Apache Hudi's Spark streaming sink (``HoodieStreamingSink``) schedules a compaction in the
micro-batch's commit when the trigger is met and hands it to an async compaction service, a
thread of the driver that executes it while the next micro-batches go on
(``hoodie.datasource.compaction.async.enable``, default true). pyspark runs a Python sink's
commit in a Python worker on the driver (the commit runner), which Spark forks once and reuses
for every commit of the session, idle in between: the ``hudi_py`` sink runs the compaction in a
thread there (:func:`start_compactor` ``in_this_process``), already warm -- a new process
first spends about a second of CPU on interpreter start and imports (hudi_ds, pyarrow,
pandas), on the cores the micro-batches need. Spark may end that worker with the thread
(it reaps a worker idle for a minute, and the session's stop ends them all); the attempt is
then left inflight and invisible, and its retry runs in a **process** on the driver machine,
detached from the commit (its own session: the commit returns at once, and a Spark worker
being reaped does not take it along).

One compactor per table and machine at a time: it holds an exclusive ``flock`` on a lock file
named after the table for its whole life (released by the kernel when it exits, also when it is
killed; the file is removed when it stops), and :func:`start_compactor` starts none while it
is held. :func:`start_compactor` takes the lock itself, looks at the timeline again under it,
and only then starts the thread or process, handing it the locked file: a commit that listed the
timeline before the previous compactor finished starts no compactor for work already done,
and the next commits see the lock held from the start (a new process takes a second or more to
import hudi_ds; a lock taken only by the child left that window open). The compactor runs
every pending compaction
(:func:`~hudi_ds.services.compaction.run_compaction`: an attempt a killed compactor left
inflight is rolled back first, as Hudi's single writer does), then looks again and stops when
none is pending; a compaction scheduled just as it stopped waits for the next commit, which
starts a compactor again.

Killing it (or the driver) at any point leaves the table readable and exact: a compaction's
base files are invisible until its ``C.commit`` exists, and writers meanwhile write their logs
into the compaction's file slices (see :mod:`hudi_ds.services.compaction`).

Run by hand: ``python -m hudi_ds.services.background TABLE_URI OPTIONS_JSON`` (``-``: the
options JSON on stdin, as :func:`start_compactor` passes them; a third argument, the number of
an inherited file descriptor holding the lock, is how :func:`start_compactor` hands it over).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import logging
import os
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from hudi_ds.errors import AttemptRolledBackError, HudiError
from hudi_ds.services import clustering
from hudi_ds.services.base import ServiceContext
from hudi_ds.services.compaction import run_compaction

log = logging.getLogger("hudi_ds.services")

__all__ = ["compactor_lock_path", "main", "start_compactor"]


def compactor_lock_path(base_uri: str) -> Path:
    """The lock file a table's background compactor holds (in the machine's temp dir)."""
    digest = hashlib.sha1(base_uri.encode()).hexdigest()[:20]
    return Path(tempfile.gettempdir()) / f"hudi_ds-compactor-{digest}.lock"


@contextmanager
def _exclusive(path: Path) -> Iterator[IO[str] | None]:
    """Hold ``flock(LOCK_EX)`` on ``path`` for the block (None: another process holds it).

    The holder removes the file when it lets go, so no lock file outlives its compactor. A
    process that opened the file just before it was removed would lock an unlinked inode: after
    locking, it checks that ``path`` still names the inode it holds, and starts over if not.
    """
    while True:
        f = path.open("a")
        try:
            fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            f.close()
            yield None
            return
        try:
            same = os.stat(path).st_ino == os.fstat(f.fileno()).st_ino
        except FileNotFoundError:
            same = False
        if same:
            break
        f.close()  # the holder removed it after we opened it: try the new file
    try:
        yield f
    finally:
        if not f.closed:  # closed by the holder: handed over to a process it started
            _release(path, f)


def _release(path: Path, f: IO[str]) -> None:
    """Let go of the lock held through ``f`` and remove its file."""
    # removed while still held: a waiter that opened it sees another inode and retries
    path.unlink(missing_ok=True)
    fcntl.flock(f.fileno(), fcntl.LOCK_UN)
    f.close()


@contextmanager
def _inherited(path: Path, fd: int) -> Iterator[IO[str]]:
    """Hold the lock of ``path`` that :func:`start_compactor` took and handed over as the
    inherited descriptor ``fd`` (the same open file, so the same ``flock``)."""
    f = os.fdopen(fd, "a")
    if os.stat(path).st_ino != os.fstat(fd).st_ino:
        f.close()
        raise HudiError(f"descriptor {fd} does not hold the compactor lock {path}")
    try:
        yield f
    finally:
        _release(path, f)


def compactor_running(base_uri: str) -> bool:
    """Whether a background compactor of the table runs on this machine."""
    with _exclusive(compactor_lock_path(base_uri)) as held:
        return held is None


#: what :func:`start_compactor` started: a thread of this process or a detached process
Compactor = threading.Thread | subprocess.Popen[bytes]


def start_compactor(ctx: ServiceContext, *, in_this_process: bool = False) -> Compactor | None:
    """Start a background compactor for the table of ``ctx`` unless one is running or nothing
    is pending any more.

    The lock is taken here and handed to the compactor, so no second compactor can start
    while the first one is still starting; under it the timeline is listed again (without
    changing ``ctx``), since a compactor that just finished may have run what the caller saw
    pending. The call returns at once.

    Where it runs:

    * ``in_this_process`` and every pending plan still only requested: a thread of this
      process (:func:`run_pending`), holding a duplicate of the locked descriptor. The
      streaming sink's commit runner is a long-lived, already warm Python worker that idles
      between commits (Spark reuses it for every commit of the session), as Hudi's sink runs
      its async compaction service in a driver thread: no interpreter start and imports (about
      a second of CPU on the cores the micro-batches need). The thread dies with its process
      (Spark reaps an idle worker after a minute without commits, or the session stops):
      the attempt stays inflight, invisible, and is rolled back by the next attempt.
    * otherwise a detached process: this interpreter (``sys.executable``, the same hudi_ds)
      in its own session (a Spark worker being reaped does not take it along), inheriting
      the environment and stderr (its log lines end up in the driver's log). An inflight
      plan is one whose attempt died, possibly with the worker that ran it in a thread: the
      retry runs where the worker's life cannot cut it short again.

    Returns:
        The thread or process started, or None when a compactor holds the table's lock or no
        compaction or clustering is pending.
    """
    base_uri = ctx.storage.base_uri
    path = compactor_lock_path(base_uri)
    with _exclusive(path) as held:
        if held is None:
            log.info("a background compactor of %s is running: it takes the new work", base_uri)
            return None
        tl = ctx.state.load_timeline()
        pending = [*tl.pending_compactions(), *clustering.pending_clusterings(tl)]
        if not pending:
            log.info("no compaction or clustering of %s is pending any more", base_uri)
            return None
        options = dict(ctx.options.raw)
        if in_this_process and all(i.is_requested for i in pending):
            thread = _start_thread(base_uri, options, held)
            log.info("background compaction of %s in thread %s", base_uri, thread.name)
            return thread
        proc = _start_process(base_uri, held)
    assert proc.stdin is not None
    with proc.stdin:
        proc.stdin.write(json.dumps(options).encode())
    log.info("started a background compactor for %s (pid %d)", base_uri, proc.pid)
    return proc


def _start_thread(base_uri: str, options: dict[str, str], held: IO[str]) -> threading.Thread:
    """Run :func:`run_pending` in a thread that takes over the lock held through ``held``
    (closed here: the thread's duplicate descriptor keeps the same open file, so the same
    ``flock``, until it releases it)."""
    fd = os.dup(held.fileno())
    held.close()
    thread = threading.Thread(
        target=_run_in_thread,
        args=(base_uri, options, fd),
        name=f"hudi_ds-compactor-{compactor_lock_path(base_uri).stem[-20:]}",
        # not a daemon: a worker that exits normally lets the compaction finish first
        daemon=False,
    )
    try:
        thread.start()
    except BaseException:
        _release(compactor_lock_path(base_uri), os.fdopen(fd, "a"))  # no compactor runs
        raise
    return thread


def _run_in_thread(base_uri: str, options: dict[str, str], fd: int) -> None:
    try:
        done = run_pending(base_uri, options, fd)
    except Exception:
        log.exception("background compaction of %s failed (the next commit retries it)", base_uri)
        return
    log.info("background compaction of %s: %d compaction(s) completed", base_uri, done)


def _start_process(base_uri: str, held: IO[str]) -> subprocess.Popen[bytes]:
    """Start ``python -m hudi_ds.services.background`` handing it the lock held through
    ``held`` (an inherited descriptor; ``held`` is closed here, the lock stays held)."""
    fd = held.fileno()
    # the options go through a pipe, not the command line (``ps`` shows that to everyone)
    cmd = [sys.executable, "-m", "hudi_ds.services.background", base_uri, "-", str(fd)]
    proc = subprocess.Popen(
        cmd,
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        start_new_session=True,
        close_fds=True,
        pass_fds=(fd,),
    )
    held.close()  # the process holds the lock now (the same open file): not released
    return proc


def run_pending(base_uri: str, options: dict[str, str], lock_fd: int | None = None) -> int:
    """Run every pending compaction and clustering of the table until none is left (the
    compactor's body).

    Args:
        lock_fd: an inherited descriptor holding the table's compactor lock
            (:func:`start_compactor`); None: take the lock here.

    Returns:
        How many compactions completed; 0 also when another compactor holds the lock.
    """
    path = compactor_lock_path(base_uri)
    with _exclusive(path) if lock_fd is None else _inherited(path, lock_fd) as held:
        if held is None:
            return 0
        ctx = ServiceContext.open(base_uri, options)
        done = 0
        taken_over = 0
        while True:
            try:
                results = run_compaction(ctx)  # lists the timeline afresh
            except AttemptRolledBackError as e:
                # another process took the compaction over (it runs or completed it): look
                # again -- the next round skips it while its heartbeat is live
                taken_over += 1
                if taken_over > 3:
                    raise
                log.warning("%s", e)
                continue
            done += len(results)
            clustered = []
            if clustering.pending_clusterings(ctx.timeline()):
                # Hudi's streaming sink runs async clustering beside async compaction
                # (HoodieStreamingSink's async clustering service); one process serves both
                try:
                    clustered = clustering.run_clustering(ctx)
                except HudiError as e:  # a conflict drops the plan; the next commit replans
                    log.warning("background clustering of %s failed: %s", base_uri, e)
                    return done
                done += len(clustered)
            tl = ctx.timeline()
            if not (results or clustered):
                return done  # nothing ran: what is pending runs elsewhere
            if not (tl.pending_compactions() or clustering.pending_clusterings(tl)):
                return done


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m hudi_ds.services.background TABLE_URI OPTIONS_JSON [LOCK_FD]`` (``-``: the
    options from stdin)."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) not in (2, 3) or (len(args) == 3 and not args[2].isdigit()):
        print(__doc__, file=sys.stderr)
        return 2
    logging.basicConfig(
        level=logging.INFO,
        format=f"%(asctime)s hudi_ds background compactor [{os.getpid()}] %(message)s",
    )
    try:
        options = json.loads(sys.stdin.read() if args[1] == "-" else args[1])
        done = run_pending(args[0], options, int(args[2]) if len(args) == 3 else None)
    except Exception:
        log.exception("background compaction of %s failed (the next commit retries it)", args[0])
        return 1
    log.info("background compactor of %s: %d compaction(s) completed", args[0], done)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
