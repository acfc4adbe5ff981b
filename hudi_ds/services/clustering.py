"""Clustering: schedule a plan, execute it into new file groups, complete it as a replacecommit.

Protocol (Hudi's)::

    schedule:  T.replacecommit.requested (table version 6) / T.clustering.requested (8, 9):
               Avro HoodieRequestedReplaceMetadata, operationType CLUSTER, the clustering plan
    execute:   T.replacecommit.inflight / T.clustering.inflight (empty), then per group its
               new base files <newFileId>_<token>_T.parquet
    complete:  T.replacecommit (v6: JSON; v8/v9: T_<completion>.replacecommit, Avro)
               HoodieReplaceCommitMetadata, partitionToReplaceFileIds = the input file groups

* **Which slices**: :mod:`hudi_ds.services.clustering_plan` (Hudi's size-based strategy).
* **Rows**: each group's slices are read as a snapshot read returns them (MOR: base file and
  log blocks merged), sorted by the plan's sort columns (``hoodie.layout.optimize.strategy``:
  linear, z-order, hilbert) and cut into the group's ``numOutputFileGroups`` new file groups;
  records keep their commit time and sequence number.
* **Writers beside it**: a write touching a file group of a pending clustering fails at its
  commit under ``hoodie.clustering.updates.strategy=SparkRejectUpdateStrategy`` (Java's
  default); with ``SparkAllowUpdateStrategy`` it commits and the clustering conflicts when it
  completes and is rolled back. New inserts never go to file groups under a pending
  clustering (the small-file listing leaves them out, as Java's does).
* **Failures**: a clustering that raises is rolled back at once (its files deleted, back to
  requested) unless the timeline, listed again, shows it completed: after the commit point
  nothing undoes it (the commit markers of a resize's rings come after it, and the next load
  of a ring writes one that is missing). One killed mid-way is left inflight and rolled back
  by the next :func:`run_clustering` (recorded as a rollback instant), then executed again.
  Writers never roll a pending clustering back (Java's
  ``ignoreCompactionAndClusteringInstants``).
* **Tables**: COW and MOR, versions 6, 8 and 9. A consistent-hashing bucket table's
  clusterings are its resizes (:mod:`hudi_ds.services.bucket_resize`). The simple bucket
  engine is refused, as Java refuses clustering for it ("Clustering is not supported for
  simple bucket index", Flink's ``ClusteringUtil.validateClusteringScheduling``; Spark's
  bucket index pins every key to its bucket's file group, which a new file group would break).
* **Replaced file groups** are deleted by the cleaner once the replacecommit is older than its
  earliest retained commit (:mod:`hudi_ds.services.clean`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from hudi_ds.concurrency.heartbeat import Heartbeat
from hudi_ds.config import ClusteringConfig, ConcurrencyConfig, UpdateStrategy
from hudi_ds.errors import (
    AttemptRolledBackError,
    CommitConflictError,
    InstantNotFoundError,
    TimelineError,
    UnsupportedError,
)
from hudi_ds.faults import crash_point
from hudi_ds.index.core import table_bucket_layout
from hudi_ds.services.base import ServiceContext, under_table_lock
from hudi_ds.services.bucket_resize import plan_bucket_resize
from hudi_ds.services.clustering_execute import (
    ClusteringJob,
    execute_group,
    finish_clustering,
    prepare_clustering,
)
from hudi_ds.services.clustering_plan import plan_clustering, requested_metadata
from hudi_ds.services.compaction import _attempt_alive, _attempts
from hudi_ds.services.compaction_plan import _pending_writes
from hudi_ds.timeline.instant import CLUSTERING, REPLACE_COMMIT, Instant, State
from hudi_ds.timeline.metadata import WriteStat
from hudi_ds.timeline.timeline import Timeline
from hudi_ds.write.markers import delete_markers, marked_files
from hudi_ds.write.rollback_executor import (
    attempt_rollback_metadata,
    pending_rollback_of,
    resume_rollback,
    rollback_plan,
)

log = logging.getLogger("hudi_ds.services")

__all__ = [
    "ClusteringResult",
    "clustering_due",
    "pending_clusterings",
    "rollback_inflight_clustering",
    "run_clustering",
    "run_inline_clustering",
    "schedule_clustering",
]


@dataclass
class ClusteringResult:
    """What a completed clustering did.

    Attributes:
        instant: the clustering instant (completed as a replacecommit).
        groups: clustering groups executed.
        replaced: file groups replaced.
        created: file groups written.
        rows: rows written.
        bytes_written: size of the new base files.
        seconds: wall time of the execution.
        stats: the write stats of the new base files.
    """

    instant: str
    groups: int = 0
    replaced: int = 0
    created: int = 0
    rows: int = 0
    bytes_written: int = 0
    seconds: float = 0.0
    stats: list[WriteStat] = field(default_factory=list)


def _action(ctx: ServiceContext) -> str:
    """The pending action of a clustering: ``clustering`` on timeline layout 2 (Hudi 1.x's
    ``HoodieTimeline.CLUSTERING_ACTION``), ``replacecommit`` on layout 1."""
    return CLUSTERING if ctx.layout == 2 else REPLACE_COMMIT


def _refuse_bucket_index(ctx: ServiceContext) -> bool:
    """Refuse the simple bucket engine; whether the table's bucket index is consistent hashing
    (its clusterings are resizes: :mod:`hudi_ds.services.bucket_resize`)."""
    layout = table_bucket_layout(ctx.state)
    if layout is None:
        return False
    if layout.consistent:
        return True
    raise UnsupportedError(
        f"clustering is not supported for the bucket index (table {ctx.config.table_name}): "
        "each record key belongs to its bucket's file group, which clustering would "
        'replace by new ones; Apache Hudi refuses it too ("Clustering is not supported '
        'for simple bucket index")'
    )


def pending_clusterings(tl: Timeline) -> list[Instant]:
    """The pending clusterings of ``tl``, oldest first."""
    return list(tl.pending_clustering())


@under_table_lock
def schedule_clustering(ctx: ServiceContext) -> str | None:
    """Schedule a clustering: write its requested instant with the strategy's plan.

    Runs under the table lock (several writers). A single writer refuses while a write is
    pending, as compaction scheduling does.

    Returns:
        The clustering instant, or None when no group qualifies.

    Raises:
        UnsupportedError: a bucket-index table.
        TimelineError: single-writer mode and a write is in flight.
    """
    ctx.require_writable("clustering")
    resize = _refuse_bucket_index(ctx)
    tl = ctx.timeline()
    pending = _pending_writes(tl)
    # a resize is not planned beside pending writes, which would not write to its children
    # (Java's BaseConsistentHashingBucketClusteringPlanStrategy.checkPrecondition)
    if pending and (resize or not ctx.multi_writer):
        raise TimelineError(
            "cannot schedule a clustering while writes are pending: "
            f"{', '.join(i.requested_time for i in pending)}"
        )
    plan = plan_bucket_resize(ctx, tl) if resize else plan_clustering(ctx, tl)
    if plan is None:
        return None
    req = ctx.new_instant(_action(ctx), requested_metadata(plan).to_bytes(), tl)
    slices = sum(len(g.slices or []) for g in plan.input_groups or [])
    log.info(
        "scheduled clustering %s: %d group(s), %d file slice(s)",
        req.requested_time,
        len(plan.input_groups or []),
        slices,
    )
    return req.requested_time


def run_clustering(ctx: ServiceContext, instant: str | None = None) -> list[ClusteringResult]:
    """Execute pending clusterings (``instant``, or all of them, oldest first); one left inflight
    by a failed or killed attempt is rolled back first, then run again.

    Raises:
        InstantNotFoundError: ``instant`` is not a pending clustering.
    """
    ctx.require_writable("clustering")
    _refuse_bucket_index(ctx)
    tl = ctx.reload_timeline()
    todo = pending_clusterings(tl)
    if instant is not None:
        todo = [i for i in todo if i.requested_time == instant]
        if not todo:
            raise InstantNotFoundError(f"no pending clustering {instant} on the timeline")
    results = []
    for inst in todo:
        res = _run_one(ctx, inst.requested_time)
        if res is not None:
            results.append(res)
        elif instant is not None:
            raise TimelineError(f"clustering {instant} is running in another process")
    return results


def _run_one(ctx: ServiceContext, c: str) -> ClusteringResult | None:
    with ctx.locked():
        tl = ctx.timeline()
        cur = tl.get(c)
        if cur is None or cur.is_completed or not tl.is_clustering(cur):
            return None
        if cur.is_inflight and _attempt_alive(ctx, c):
            log.info("clustering %s is running elsewhere (live heartbeat); skipped", c)
            return None
        if cur.is_inflight or pending_rollback_of(tl, c) is not None:
            log.warning("clustering %s was left inflight by a failed attempt; retrying it", c)
            rollback_inflight_clustering(ctx, c)
        job = prepare_clustering(ctx, c, _attempts(ctx, c))
        ctx.writer().transition_to_inflight(Instant(c, job.action, State.REQUESTED))
        interval = ctx.options.get(ConcurrencyConfig.HEARTBEAT_MS) / 1000
        heartbeat = Heartbeat(ctx.storage, c, interval)
    t0 = time.perf_counter()
    stats: list[WriteStat] = []
    live = True  # whether the heartbeat file is this attempt's to delete at the end
    try:
        stats = _execute(ctx, job)
        finish_clustering(ctx, job, stats)
    except AttemptRolledBackError:
        # undone by another process, which may run the plan again now: only this attempt's
        # own files go (its write tokens differ), the timeline and heartbeat are not ours
        live = False
        for st in stats:
            if st.path:
                ctx.storage.delete(st.path)
        raise
    except BaseException as e:
        try:
            with ctx.locked(reload=True):
                tl = ctx.timeline()
                if tl.is_completed(c):
                    # past the commit point nothing undoes the clustering
                    _stop_completed(ctx, c, stats, tl)
                else:
                    log.error("clustering %s failed; rolling the attempt back", c)
                    rollback_inflight_clustering(ctx, c)
                    if isinstance(e, CommitConflictError):
                        # the plan names slices a concurrent write has superseded: executed
                        # again it would drop that write's records, so it goes (the next
                        # schedule plans the file groups as they are now)
                        req = Instant(c, job.action, State.REQUESTED)
                        ctx.writer().delete_instant_files(req)
        except Exception:  # pragma: no cover - the next run retries the rollback
            log.exception("cleaning up after the failure of clustering %s failed", c)
        raise
    finally:
        heartbeat.stop(delete=live)
    res = ClusteringResult(
        instant=c,
        groups=len(job.groups),
        replaced=sum(len(g.slices or []) for g in job.groups),
        created=len(stats),
        rows=sum(s.num_writes for s in stats),
        bytes_written=sum(s.file_size_in_bytes for s in stats),
        seconds=time.perf_counter() - t0,
        stats=list(stats),
    )
    log.info(
        "clustering %s: %d file groups into %d, %d rows in %.2fs",
        c,
        res.replaced,
        res.created,
        res.rows,
        res.seconds,
    )
    return res


def _stop_completed(ctx: ServiceContext, c: str, stats: list[WriteStat], tl: Timeline) -> None:
    """An attempt failed and clustering ``c`` is completed on timeline ``tl`` (listed again):
    it stands and its new file groups stay. When this attempt completed it, the failure came
    after the commit point and nothing is deleted; files of this attempt that the completed
    replacecommit does not name (another attempt completed it) are deleted."""
    inst = tl.get(c)
    assert inst is not None
    md = tl.read_commit_metadata(inst)
    named = {s.path for sts in md.partition_to_write_stats.values() for s in sts}
    debris = [s.path for s in stats if s.path and s.path not in named]
    for path in debris:
        ctx.storage.delete(path)
    log.error(
        "clustering %s failed after it was completed; it stands, nothing of it is rolled back "
        "(%d file(s) of this attempt that its commit does not name deleted)",
        c,
        len(debris),
    )


def _execute(ctx: ServiceContext, job: ClusteringJob) -> list[WriteStat]:
    stats: list[WriteStat] = []
    n = len(job.groups)
    for i in range(n):
        stats += execute_group(job, i)
        ctx.progress(i + 1, n, f"clustering {job.instant}")
    return stats


def rollback_inflight_clustering(ctx: ServiceContext, instant: str) -> list[str]:
    """Undo a failed attempt of clustering ``instant``: delete its files, back to requested,
    recorded as a rollback instant (``instantsRollback = {T, <action>}``), as Hudi's
    ``rollbackInflightClustering`` does -- the plan stays and is executed again.

    Returns:
        The deleted files (relative paths).
    """
    storage = ctx.storage
    tl = ctx.timeline()
    inst = tl.get(instant)
    if inst is None or inst.is_completed or not tl.is_clustering(inst):
        raise InstantNotFoundError(f"no pending clustering {instant} on the timeline")
    pending_rb = pending_rollback_of(tl, instant)
    if pending_rb is not None:
        resume_rollback(storage, ctx.config, tl, pending_rb, ctx.state.before_complete)
        ctx.reload_timeline()
        inst = ctx.timeline().get(instant)
        if inst is None or not inst.is_inflight:
            return []
    files = sorted(set(marked_files(storage, instant)))
    writer = ctx.writer()
    rplan = rollback_plan(instant, inst.action, files, full_path=storage.uri, layout=ctx.layout)
    rb_req = ctx.new_instant("rollback", rplan.to_bytes(), tl)
    writer.transition_to_inflight(rb_req)
    t0 = time.perf_counter()
    for f in files:
        storage.delete(f)
    crash_point("rollback")
    delete_markers(storage, instant)
    if inst.is_inflight:
        writer.revert_to_requested(inst)
    millis = int((time.perf_counter() - t0) * 1000)
    md = attempt_rollback_metadata(
        storage, rb_req.requested_time, instant, inst.action, files, millis
    )
    ctx.complete(Instant(rb_req.requested_time, "rollback", State.INFLIGHT), md.to_bytes())
    log.info("rolled back the failed attempt of clustering %s (%d files)", instant, len(files))
    return files


def clustering_due(ctx: ServiceContext, tl: Timeline | None = None) -> bool:
    """Whether ``hoodie.clustering.inline.max.commits`` commits completed since the last
    clustering (completed or pending; since the first commit when there was none), as Java's
    ``ClusteringPlanActionExecutor.getCommitsSinceLastClustering`` counts them."""
    tl = tl if tl is not None else ctx.timeline()
    clusterings = [i.requested_time for i in tl if tl.is_clustering(i)]
    last = clusterings[-1] if clusterings else None
    n = sum(
        1
        for i in tl.commits()
        if (last is None or i.requested_time > last) and not tl.is_clustering(i)
    )
    return n >= ctx.get(ClusteringConfig.INLINE_MAX_COMMITS)


def run_inline_clustering(
    ctx: ServiceContext, async_runner: Callable[[ServiceContext], object] | None = None
) -> list[ClusteringResult]:
    """The post-commit clustering of a writer, once due (:func:`clustering_due`):

    * ``hoodie.clustering.inline``: schedule and execute in the commit
      (``BaseHoodieTableServiceClient.inlineClustering``);
    * else ``hoodie.clustering.async.enabled``: schedule, then hand the pending clusterings to
      ``async_runner`` (the streaming sink's background process,
      :func:`hudi_ds.services.background.start_compactor`) -- without one (the embedded API)
      execute them right after the commit;
    * else ``hoodie.clustering.schedule.inline``: schedule only.

    A simple-bucket-index table is skipped (with a warning).

    Returns:
        The clusterings completed here.
    """
    inline = ctx.get(ClusteringConfig.INLINE)
    run_async = not inline and ctx.get(ClusteringConfig.ASYNC)
    schedule_only = ctx.get(ClusteringConfig.SCHEDULE_INLINE)
    if not (inline or run_async or schedule_only) or not clustering_due(ctx):
        return []
    try:
        resize = _refuse_bucket_index(ctx)
    except UnsupportedError as e:
        log.warning("inline clustering skipped: %s", e)
        return []
    if _pending_writes(ctx.timeline()) and (resize or not ctx.multi_writer):
        log.info("clustering not scheduled: writes are pending")
        return []
    schedule_clustering(ctx)
    if not pending_clusterings(ctx.timeline()) or not (inline or run_async):
        return []
    if run_async and async_runner is not None:
        allow = ctx.get(ClusteringConfig.UPDATES_STRATEGY) == UpdateStrategy.ALLOW.value
        if allow and not ctx.multi_writer:
            # no lock orders the background completion and a write's commit: a write into a
            # planned file group checked before the clustering completed could commit after it
            log.warning(
                "%s=SparkAllowUpdateStrategy beside a background clustering needs "
                "hoodie.write.concurrency.mode=optimistic_concurrency_control to be exact: "
                "without a lock, an update committed as the clustering completes may be lost",
                ClusteringConfig.UPDATES_STRATEGY.key,
            )
        async_runner(ctx)
        return []
    return run_clustering(ctx)
