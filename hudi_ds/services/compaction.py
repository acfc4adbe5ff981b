"""Compaction of MOR file slices: schedule a plan, execute it, complete it as a commit.

Protocol (Hudi's, table version 6 / timeline layout 1)::

    schedule:  C.compaction.requested   Avro HoodieCompactionPlan (one operation per file slice)
    execute:   C.compaction.inflight    (empty), then per operation a new base file
               <fileId>_<token>_C.parquet = the slice's base file + log blocks, merged
    complete:  C.commit                 JSON commit metadata, compacted=true, operationType COMPACT

Table versions 8 and 9 (timeline layout 2, Hudi 1.x) follow the same protocol with 1.x's
names and contents: the commit completes as ``C_<completion>.commit`` holding Avro commit
metadata; the plan is written as 1.x writes it (no strategy record, empty extra metadata,
whole-MB IO metrics in Java's map order); a file slice's log files are those whose delta
commit *completed* after the slice's base instant (log files are named after the delta commit
that wrote them), so logs written while C is pending fall into C's slice by their completion
time, and nothing is ever renamed (not when scheduling, nor when unscheduling).

* **Which slices** (the strategy, ``hoodie.compaction.strategy``): file slices with log files,
  not already under a pending compaction, ordered by total log size
  (``LogFileSizeBasedCompactionStrategy``, the default; slices below
  ``hoodie.compaction.logfile.size.threshold`` are skipped) or log file count
  (``LogFileNumBasedCompactionStrategy``, threshold ``hoodie.compaction.logfile.num.threshold``)
  and cut once the IO budget ``hoodie.compaction.target.io`` (MB read + written, Hudi's
  ``TOTAL_IO_MB`` metric) is spent; ``UnBoundedCompactionStrategy`` takes every slice.
* **Merging** goes through the MOR reader (:func:`hudi_ds.table.reader.read_file_slice`), so a
  compacted base file holds exactly what a snapshot read of the slice returned. Meta columns are
  kept as Hudi keeps them: each record's ``_hoodie_commit_time`` / ``_hoodie_commit_seqno`` stay,
  ``_hoodie_file_name`` becomes the new base file name.
* **While pending**, writers (table version 6) name new log files of the planned file groups
  with base instant C (``WriteClient`` maps them), and readers merge those logs into the slice
  being compacted until ``C.commit`` exists; base files of C are invisible until then.
* **Failures**: an execution that raises is rolled back at once (its files deleted, C back to
  requested) -- unless the timeline, listed again, shows C completed: a failure after the
  commit point (a store error for a completed file that was written, a step after it) undoes
  nothing, the error is raised as it is. A process killed mid-way leaves
  ``C.compaction.inflight``; the next :func:`run_compaction` (or the next write with inline
  compaction) rolls that attempt back -- recorded as a rollback instant, as Hudi does -- and
  executes the plan again; with several writers only once the attempt's heartbeat expired.
* **Attempts**: the re-run keeps instant time C, so each attempt has an identity
  (:class:`CompactionAttempt`: the rollback instants it knew when it began). An attempt checks
  that it is still the live one before and after writing each base file and, under the table
  lock, before completing; one that was rolled back meanwhile (a process paused past its
  heartbeat, then continued) stops with :class:`~hudi_ds.errors.AttemptRolledBackError`,
  deletes the files it wrote after the rollback and never completes. Its write tokens carry
  its attempt number (``<task>-<attempt>-<task attempt>``), and the completion deletes only
  files of its own attempt that its stats do not name (failed task attempts).
  :func:`unschedule_compaction` drops a plan altogether (on version 6 renaming log files written
  on top of it back into the previous slice).
"""

from __future__ import annotations

import dataclasses
import logging
import os
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed

from hudi_ds.concurrency.heartbeat import Heartbeat, heartbeat_expired
from hudi_ds.config import (
    ConcurrencyConfig,
    ServiceConfig,
)
from hudi_ds.errors import (
    AttemptRolledBackError,
    CorruptFileError,
    InstantNotFoundError,
    TimelineError,
    UnsupportedError,
)
from hudi_ds.layout.file_group import LogFile
from hudi_ds.layout.naming import (
    file_path,
    log_file_name,
)
from hudi_ds.metadata.records import FILES_PARTITION, declared_partitions
from hudi_ds.services.base import Progress, ServiceContext, under_table_lock
from hudi_ds.services.compaction_execute import (
    CompactionAttempt,
    CompactionJob,
    CompactionResult,
    _discard,
    attempt_token,
    execute_operation,
    finish_compaction,
    prepare_compaction,
    rollback_inflight_compaction,
)
from hudi_ds.services.compaction_plan import _pending_writes, plan_compaction
from hudi_ds.table.fs_view import FileSystemView
from hudi_ds.timeline.instant import (
    COMPACTION,
    Instant,
    State,
    instant_time_to_datetime,
)
from hudi_ds.timeline.metadata import WriteStat
from hudi_ds.timeline.plans import (
    CompactionPlan,
)
from hudi_ds.timeline.timeline import Timeline
from hudi_ds.write.conflict import retarget_logs
from hudi_ds.write.markers import marked_files
from hudi_ds.write.rollback_executor import (
    pending_rollback_of,
)

log = logging.getLogger("hudi_ds.services")


__all__ = [
    "CompactionAttempt",
    "CompactionJob",
    "CompactionResult",
    "attempt_token",
    "compaction_due",
    "execute_operation",
    "finish_compaction",
    "plan_compaction",
    "prepare_compaction",
    "rollback_inflight_compaction",
    "run_compaction",
    "run_inline_compaction",
    "schedule_compaction",
    "unschedule_compaction",
]


@under_table_lock
def schedule_compaction(ctx: ServiceContext) -> str | None:
    """Schedule a compaction: write ``C.compaction.requested`` with the strategy's plan.

    Runs under the table lock (multi-writer mode), as Hudi schedules table services inside a
    transaction: a writer starting meanwhile either sees C (and writes into C's slices) or
    started before it. Writes pending at C -- started before it -- keep going: their logs are
    not in the plan, and they move them into C's slices when they commit
    (:func:`hudi_ds.write.conflict.retarget_logs`). A single writer (no lock) keeps Hudi's rule
    that no write may be pending when a compaction is scheduled (``ScheduleCompactionAction
    Executor``: "Earliest write inflight instant time must be later than compaction time").

    Returns:
        The compaction instant C, or None when no file slice needs compacting.

    Raises:
        UnsupportedError: not a MOR table of version 6.
        TimelineError: single-writer mode and a write is in flight.
    """
    ctx.require_writable("compaction")
    if not ctx.config.is_mor:
        raise UnsupportedError(
            f"compaction needs a MERGE_ON_READ table; {ctx.config.table_name} is "
            f"{ctx.config.table_type}"
        )
    tl = ctx.timeline()
    pending = _pending_writes(tl)
    if pending and not ctx.multi_writer:
        raise TimelineError(
            "cannot schedule a compaction while writes are pending: "
            f"{', '.join(i.requested_time for i in pending)} (a write still running, or a "
            "failed one the next write will roll back)"
        )
    plan = plan_compaction(ctx, tl)
    if not plan.operations:
        return None
    req = ctx.new_instant(COMPACTION, plan.to_bytes(), tl)
    c = req.requested_time
    _retarget_missed_writes(ctx, tl, plan)
    log.info("scheduled compaction %s of %d file slice(s)", c, len(plan.operations))
    return c


def _retarget_missed_writes(ctx: ServiceContext, before: Timeline, plan: CompactionPlan) -> None:
    """Writes that completed between the planning and ``C.compaction.requested`` did not see C
    and their logs are not in its plan: move those logs into C's slices now. (Under the table
    lock no write can complete in between; without one, a write that is still pending now
    moves its logs itself when it commits. The moved files keep their old names in that
    write's commit metadata: snapshot reads list the file system and find the new ones.)"""
    if ctx.layout == 2:
        # layout 2 slices log files by completion time (Hudi 1.x): a write completing after C
        # was requested belongs to C's slice as it is; nothing is renamed
        return
    planned = {(op.partition_path or "", op.file_id or "") for op in plan.operations or []}
    tl = ctx.reload_timeline()  # writes of other processes that completed meanwhile
    for inst in tl.commits().filter_actions("deltacommit"):
        if before.is_completed(inst.requested_time):
            continue
        md = tl.read_commit_metadata(inst)
        stats = [
            st
            for p, sts in md.partition_to_write_stats.items()
            for st in sts
            if (p, st.file_id or "") in planned
        ]
        if stats:
            retarget_logs(ctx.state, stats)  # the state just listed again


def _attempts(ctx: ServiceContext, instant: str) -> int:
    """How many attempts of ``instant`` were rolled back before (for unique write tokens)."""
    tl = ctx.timeline()
    n = 0
    for r in tl.completed().filter_actions("rollback"):
        try:
            if instant in tl.read_rollback_metadata(r).rolled_back_instants:
                n += 1
        except CorruptFileError:
            continue
    return n


def run_compaction(
    ctx: ServiceContext,
    instant: str | None = None,
    *,
    executor: Callable[[CompactionJob], list[WriteStat]] | None = None,
) -> list[CompactionResult]:
    """Execute pending compactions (``instant``, or all of them, oldest first).

    A compaction left inflight by a failed or killed attempt is rolled back first, then run
    again. ``executor`` runs the operations of a job (default: here, one after the other;
    :mod:`hudi_ds.spark.compaction` passes one that runs them as Spark tasks).

    Returns:
        One result per completed compaction.

    Raises:
        InstantNotFoundError: ``instant`` is not a pending compaction.
    """
    ctx.require_writable("compaction")
    tl = ctx.reload_timeline()  # a service run starts from a fresh listing
    if instant is not None:
        inst = tl.get(instant)
        if inst is None or inst.action != COMPACTION or inst.is_completed:
            done = inst is not None and tl.origin_action(instant) == COMPACTION
            raise InstantNotFoundError(
                f"compaction {instant} is already completed"
                if done
                else f"no pending compaction {instant} on the timeline"
            )
        todo = [inst]
    else:
        todo = list(tl.pending_compactions())
    results = []
    for inst in todo:
        res = _run_one(ctx, inst, executor)
        if res is not None:
            results.append(res)
        elif instant is not None:
            raise TimelineError(f"compaction {instant} is running in another process")
    return results


def _multi_writer(ctx: ServiceContext) -> bool:
    """LAZY failed-writes policy (multi-writer tables): an inflight compaction is taken as
    failed only once its heartbeat expired; EAGER (single writer): at once."""
    policy = ctx.options.get(ConcurrencyConfig.FAILED_WRITES_POLICY)
    if policy is None:
        return ctx.options.get(ConcurrencyConfig.MODE) != "single_writer"
    return policy == "LAZY"


def _attempt_alive(ctx: ServiceContext, instant: str) -> bool:
    if not _multi_writer(ctx):
        return False
    o = ctx.options
    timeout = (
        o.get(ConcurrencyConfig.HEARTBEAT_MS)
        / 1000
        * max(1, o.get(ConcurrencyConfig.HEARTBEAT_MISSES))
    )
    return not heartbeat_expired(ctx.storage, instant, timeout)


def _run_one(
    ctx: ServiceContext,
    inst: Instant,
    executor: Callable[[CompactionJob], list[WriteStat]] | None,
) -> CompactionResult | None:
    c = inst.requested_time
    # the timeline transitions run under the table lock (multi-writer mode), the merging
    # outside it, as Hudi's table services do
    with ctx.locked():
        cur = ctx.timeline().get(c)
        if cur is None or cur.is_completed or cur.action != COMPACTION:
            log.info("compaction %s was completed or dropped meanwhile; skipped", c)
            return None
        if cur.is_inflight and _attempt_alive(ctx, c):
            log.info("compaction %s is running elsewhere (live heartbeat); skipped", c)
            return None
        if cur.is_inflight or pending_rollback_of(ctx.timeline(), c) is not None:
            # an attempt left inflight, or a rollback of one that was interrupted after C went
            # back to requested: undone before the plan runs again
            log.warning("compaction %s was left inflight by a failed attempt; retrying it", c)
            rollback_inflight_compaction(ctx, c)
        number = _attempts(ctx, c)
        job = prepare_compaction(ctx, c, number)
        ctx.writer().transition_to_inflight(Instant(c, COMPACTION, State.REQUESTED))
        attempt = CompactionAttempt.begin(ctx, c, number)
        job = dataclasses.replace(job, fence=attempt)
        interval = ctx.options.get(ConcurrencyConfig.HEARTBEAT_MS) / 1000
        heartbeat = Heartbeat(ctx.storage, c, interval)
    t0 = time.perf_counter()
    live = True  # whether the heartbeat file is this attempt's to delete at the end
    try:
        stats = (executor or _run_locally(ctx.progress))(job)
        done = finish_compaction(ctx, job, stats)
    except AttemptRolledBackError:
        live = _stop_rolled_back(ctx, job)
        raise
    except BaseException:
        try:
            with ctx.locked(reload=True):
                tl = ctx.timeline()
                if tl.is_completed(c):
                    # past the commit point nothing undoes C, whichever attempt completed it
                    _stop_completed(ctx, job, tl)
                elif attempt.problem(tl) is None:
                    log.error("compaction %s failed; rolling the attempt back", c)
                    rollback_inflight_compaction(ctx, c)
                else:  # another process rolled it back meanwhile: not ours to undo any more
                    live = _stop_rolled_back(ctx, job)
        except Exception:  # pragma: no cover - the next run retries the rollback
            log.exception("cleaning up after the failure of compaction %s failed", c)
        raise
    finally:
        heartbeat.stop(delete=live)
    seconds = time.perf_counter() - t0
    res = CompactionResult(
        instant=done.requested_time,
        operations=len(stats),
        rows=sum(s.num_writes for s in stats),
        bytes_written=sum(s.file_size_in_bytes for s in stats),
        log_files=sum(s.total_log_files_compacted for s in stats),
        seconds=seconds,
        stats=list(stats),
        key_changes={
            s.path: job.key_changes[s.path]
            for s in stats
            if job.key_changes is not None and s.path in job.key_changes
        },
    )
    log.info(
        "compaction %s: %d slices, %d rows in %.2fs (%.0f rows/s)",
        c,
        res.operations,
        res.rows,
        seconds,
        res.rows_per_second,
    )
    return res


def _stop_rolled_back(ctx: ServiceContext, job: CompactionJob) -> bool:
    """An attempt found it was rolled back: delete what it wrote that is still there -- its
    own files only (its write tokens), found by their markers and in the plan's partitions (a
    file whose marker the rollback deleted may have been finished after it): a later attempt
    of C may be writing beside them. Returns whether the heartbeat file may be deleted: only
    when no attempt of C can be running any more (C completed or unscheduled) -- else it is
    the live attempt's."""
    attempt = job.fence
    assert attempt is not None
    c = attempt.instant
    own = _own_files(ctx, job)
    _discard(ctx.storage, c, own)
    log.error(
        "compaction %s: this attempt was rolled back by another process; it stopped "
        "(%d file(s) of it deleted)",
        c,
        len(own),
    )
    inst = ctx.reload_timeline().get(c)
    return inst is None or inst.is_completed


def _stop_completed(ctx: ServiceContext, job: CompactionJob, tl: Timeline) -> None:
    """An attempt failed and C is completed on timeline ``tl`` (listed again): C stands and
    its base files stay. When this attempt completed it, the failure came after the commit
    point (the store reported an error for a completed file it had written, or a later step
    failed) and nothing is deleted; when another attempt did, this one's files -- which the
    completed commit does not name -- are deleted, as a rolled-back attempt's are."""
    attempt = job.fence
    assert attempt is not None
    c = attempt.instant
    inst = tl.get(c)
    assert inst is not None
    md = tl.read_commit_metadata(inst)
    named = {s.path for stats in md.partition_to_write_stats.values() for s in stats}
    debris = [f for f in _own_files(ctx, job) if f not in named]
    _discard(ctx.storage, c, debris)
    log.error(
        "compaction %s failed after it was completed; it stands, nothing of it is rolled back "
        "(%d file(s) of this attempt that its commit does not name deleted)",
        c,
        len(debris),
    )


def _own_files(ctx: ServiceContext, job: CompactionJob) -> list[str]:
    """The files this attempt wrote that are still there: its write tokens, found by their
    markers and in the plan's partitions (a file whose marker a rollback deleted may have been
    finished after it)."""
    attempt = job.fence
    assert attempt is not None
    storage = ctx.storage
    found = set(marked_files(storage, attempt.instant))
    for partition in sorted({op.partition_path or "" for op in job.operations}):
        found.update(f.path for f in storage.list_files(partition))
    return sorted(f for f in found if attempt.owns(f) and storage.exists(f))


def _run_locally(progress: Progress) -> Callable[[CompactionJob], list[WriteStat]]:
    """Run the operations on a small thread pool (Arrow and Parquet release the GIL)."""

    def run(job: CompactionJob) -> list[WriteStat]:
        n = len(job.operations)
        workers = max(1, min(n, os.cpu_count() or 1, 8))
        out: list[WriteStat | None] = [None] * n
        if workers == 1:
            for i in range(n):
                out[i] = execute_operation(job, i)
                progress(i + 1, n, f"compaction {job.instant}")
        else:
            with ThreadPoolExecutor(workers, thread_name_prefix="hudi-compaction") as pool:
                futures = {pool.submit(execute_operation, job, i): i for i in range(n)}
                try:
                    for done, fut in enumerate(as_completed(futures), start=1):
                        out[futures[fut]] = fut.result()
                        progress(done, n, f"compaction {job.instant}")
                except BaseException:
                    # a failed operation (or the attempt rolled back) ends the job: the
                    # operations not started yet are not run
                    pool.shutdown(wait=True, cancel_futures=True)
                    raise
        return [s for s in out if s is not None]

    return run


@under_table_lock
def unschedule_compaction(ctx: ServiceContext, instant: str) -> list[tuple[str, str]]:
    """Drop pending compaction ``instant``: roll back any attempt, delete its plan, and (table
    version 6) move log files written on top of it (named with base instant C) back into the
    previous file slice; on versions 8 and 9 they fall back into it by their completion times.

    Returns:
        ``(old, new)`` relative paths of the renamed log files.
    """
    ctx.require_writable("compaction")
    tl = ctx.timeline()
    inst = tl.get(instant)
    if inst is None or inst.action != COMPACTION or inst.is_completed:
        raise InstantNotFoundError(f"no pending compaction {instant} on the timeline")
    pending = _pending_writes(tl)
    if pending:
        raise TimelineError(
            f"cannot unschedule compaction {instant} while writes are pending: "
            f"{', '.join(i.requested_time for i in pending)}"
        )
    plan = tl.read_compaction_plan(instant)
    storage = ctx.storage
    view = FileSystemView(storage, ctx.config)
    if ctx.layout == 1 and FILES_PARTITION in declared_partitions(ctx.config):
        # the renames below are no instant of the data timeline, so nothing can mirror them
        # into the MDT (its records are only valid for data instants), and the MDT would
        # go on listing the old names. Refuse before anything changes instead.
        fids = {(op.partition_path or "", op.file_id or "") for op in plan.operations or []}
        on_top = [
            lf.path
            for partition in sorted({p for p, _ in fids})
            for g in view.file_groups(partition)
            if (partition, g.file_id) in fids
            for lf in g.log_files
            if lf.instant_time == instant
        ]
        if on_top:
            raise TimelineError(
                f"cannot unschedule compaction {instant}: {len(on_top)} log file(s) written on "
                f"top of it (e.g. {on_top[0]}) would have to be renamed, which the metadata "
                "table cannot record on table version 6; run the compaction instead, or "
                "disable the metadata table (hoodie.metadata.enable=false) first"
            )
    if inst.is_inflight:
        rollback_inflight_compaction(ctx, instant)
        view = FileSystemView(storage, ctx.config)
    renamed: list[tuple[str, str]] = []
    # layout 2 names log files after their writer and slices them by completion time: with
    # the plan gone, the logs on top of it fall back into the previous slice by themselves
    for op in (plan.operations or []) if ctx.layout == 1 else []:
        partition, fid, prev = op.partition_path or "", op.file_id or "", op.base_instant_time
        if not prev:
            continue
        for g in view.file_groups(partition):
            if g.file_id != fid:
                continue
            top = max((lf.name.version for lf in g.log_files if lf.instant_time == prev), default=0)
            moving = sorted(
                (lf for lf in g.log_files if lf.instant_time == instant), key=LogFile.sort_key
            )
            for k, lf in enumerate(moving, start=1):
                new_name = log_file_name(fid, prev, top + k, lf.name.write_token or "0-0-0")
                dst = file_path(partition, new_name)
                storage.rename(lf.path, dst)
                renamed.append((lf.path, dst))
    ctx.writer().delete_instant_files(Instant(instant, COMPACTION, State.REQUESTED))
    log.info("unscheduled compaction %s (%d log files moved back)", instant, len(renamed))
    return renamed


def compaction_due(ctx: ServiceContext, tl: Timeline | None = None) -> bool:
    """Whether the inline trigger (``hoodie.compact.inline.trigger.strategy``) is met.

    Counts completed delta commits after the latest compaction (completed or pending) -- or
    since the first delta commit when there was none -- and/or the seconds since then.
    """
    tl = tl if tl is not None else ctx.timeline()
    compactions = [i for i in tl if tl.origin_action(i.requested_time) == COMPACTION]
    last = compactions[-1].requested_time if compactions else None
    deltas = [
        i
        for i in tl.completed().filter_actions("deltacommit")
        if last is None or i.requested_time > last
    ]
    num = len(deltas)
    ref = last or (deltas[0].requested_time if deltas else None)
    elapsed = 0.0
    if ref is not None:
        try:
            start = instant_time_to_datetime(ref, ctx.config.timeline_timezone)
            elapsed = time.time() - start.timestamp()
        except ValueError:
            elapsed = 0.0
    num_ok = num >= ctx.get(ServiceConfig.COMPACT_MAX_DELTA_COMMITS)
    time_ok = num > 0 and elapsed >= ctx.get(ServiceConfig.COMPACT_MAX_DELTA_SECONDS)
    strategy = ctx.get(ServiceConfig.COMPACT_TRIGGER_STRATEGY)
    return {
        "NUM_COMMITS": num_ok,
        "TIME_ELAPSED": time_ok,
        "NUM_AND_TIME": num_ok and time_ok,
        "NUM_OR_TIME": num_ok or time_ok,
    }[strategy]


#: runs the pending compactions of a table off the write path (the streaming sink's
#: background compactor, :func:`hudi_ds.services.background.start_compactor`)
AsyncCompactor = Callable[[ServiceContext], object]


def run_inline_compaction(
    ctx: ServiceContext,
    async_compactor: AsyncCompactor | None = None,
    *,
    datasource: bool = False,
) -> list[CompactionResult]:
    """The post-commit compaction of a writer: retry pending compactions, then schedule a new
    one when the trigger is met, and run them as the options say.

    The embedded writers (``datasource=False``: :func:`hudi_ds.write`, ``HudiTable``):

    * ``hoodie.compact.inline=true``: schedule and execute in the commit (Hudi's inline
      compaction; it turns async compaction off, as Hudi's ``isAsyncCompactionEnabled`` does).
    * else ``hoodie.datasource.compaction.async.enable=true`` (the default, Hudi's key and
      default): schedule in the commit and execute the pending compactions right after it
      (no process outlives the call to host an async service).
    * else ``hoodie.compact.schedule.inline=true``: schedule only.

    The Spark data source (``datasource=True``) resolves the same keys as Hudi's does:

    * ``hoodie.compact.inline`` when given; when not, it is true on a MOR table exactly when
      ``hoodie.datasource.compaction.async.enable=false`` (Hudi's
      ``DataSourceUtils.createHoodieConfig``: ``inlineCompact = !asyncCompact && MOR``, then
      the user's own keys override it).
    * async compaction only where the writer has an async service to run it
      (``async_compactor``: the streaming sink's background compactor). Hudi's
      ``HoodieSparkSqlWriter.isAsyncCompactionEnabled`` requires an
      ``asyncCompactionTriggerFn``, which only ``HoodieStreamingSink`` passes; a batch
      ``df.write`` (like Spark SQL INSERT / MERGE INTO) calls ``HoodieSparkSqlWriter.write``
      without one, so at the defaults a batch write neither schedules nor executes a
      compaction (read in Hudi 0.14-1.1: ``hudi-spark-common`` ``HoodieSparkSqlWriter.scala``,
      ``DataSourceUtils.java``, ``DefaultSource.createRelation``).
    * ``hoodie.compact.schedule.inline=true`` (and no inline compaction): schedule only, and
      only while no compaction is pending (``BaseHoodieTableServiceClient``
      ``runTableServicesInline``).

    Returns:
        The compactions completed here (none when handed to ``async_compactor``).
    """
    opts = ctx.options
    if datasource:
        inline = (
            ctx.get(ServiceConfig.COMPACT_INLINE)
            if opts.is_set(ServiceConfig.COMPACT_INLINE)
            else not ctx.get(ServiceConfig.COMPACT_ASYNC)
        )
        run_async = (
            not inline and async_compactor is not None and ctx.get(ServiceConfig.COMPACT_ASYNC)
        )
    else:
        inline = ctx.get(ServiceConfig.COMPACT_INLINE)
        run_async = not inline and ctx.get(ServiceConfig.COMPACT_ASYNC)
    schedule_only = ctx.get(ServiceConfig.COMPACT_SCHEDULE_INLINE)
    if not ctx.config.is_mor or not (inline or run_async or schedule_only):
        return []
    execute_here = inline or (run_async and async_compactor is None)
    results: list[CompactionResult] = []
    if execute_here and ctx.timeline().pending_compactions():
        results += run_compaction(ctx)
    tl = ctx.timeline()
    if datasource and not (inline or run_async) and tl.pending_compactions():
        return results  # Hudi's schedule-only mode waits for the pending plan to run
    if compaction_due(ctx, tl):
        if _pending_writes(tl) and not ctx.multi_writer:
            log.info("compaction not scheduled: writes are pending")
        else:
            c = schedule_compaction(ctx)
            if c is not None and execute_here:
                results += run_compaction(ctx, c)
    if run_async and async_compactor is not None and ctx.timeline().pending_compactions():
        async_compactor(ctx)
    return results
