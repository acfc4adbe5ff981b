"""Cleaning: delete file slices no query needs any more, and debris of failed writes.

Protocol (Hudi's)::

    C.clean.requested   Avro HoodieCleanerPlan (policy, earliestInstantToRetain, files)
    C.clean.inflight    the same plan
    C.clean             Avro HoodieCleanMetadata (files deleted per partition)

Policies (``hoodie.cleaner.policy``), as Hudi's ``CleanPlanner`` applies them per file group
(slices newest first):

* ``KEEP_LATEST_COMMITS`` (default): with more than ``hoodie.cleaner.commits.retained`` completed
  commits, the earliest commit to retain E is the N-th latest (never later than the earliest
  pending commit or compaction). A slice is deleted when its base instant is older than E,
  unless it is the latest slice or the slice that was latest *at* E -- so every time-travel and
  incremental read inside the window [E, now] still finds its files.
* ``KEEP_LATEST_FILE_VERSIONS``: keep the ``hoodie.cleaner.fileversions.retained`` newest slices.
* ``KEEP_LATEST_BY_HOURS``: like KEEP_LATEST_COMMITS with E = the first commit of the last
  ``hoodie.cleaner.hours.retained`` hours.

Never deleted: files of savepointed slices, the slice a pending compaction reads (and anything
newer), files of pending instants. File groups replaced by a replacecommit older than E (all
replaced groups for KEEP_LATEST_FILE_VERSIONS) are deleted whole.

Debris of failed writes (found by listing, then checked against a fresh timeline): data files
of instants that are on no timeline (rolled back, or never started) and are newer than the
start of the active timeline (its first non-savepointed commit-family instant: older instants
were archived, ``Timeline.first_non_savepoint_commit``), base files of a completed compaction
that its commit does not name (left by an attempt that was rolled back and re-run with the
same instant time), log files none of whose blocks belongs to a known instant and that no
pending write marked, marker folders of instants that are not
pending, and stale temporary files of the timeline folder.

Several processes: a clean runs under the table lock, and a pending clean (its process
killed, or paused until its lease ran out and the lock was taken over) is finished by the
next clean with its own plan -- deleting is idempotent, and no query needs a planned file
again (file names are never reused) -- so a clean has no attempts to tell apart, only one
completion: a clean that lost the lock stops before its next delete and never writes the
completed file (:meth:`~hudi_ds.services.base.ServiceContext.complete`, fenced).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone

from hudi_ds.config import ServiceConfig
from hudi_ds.faults import crash_point
from hudi_ds.layout.file_group import BaseFile, FileGroup, LogFile
from hudi_ds.layout.naming import file_name_of, file_path, partition_of, relative_path
from hudi_ds.log.reader import scan_log_bytes
from hudi_ds.services.base import ServiceContext, under_table_lock
from hudi_ds.table.fs_view import FileSystemView
from hudi_ds.timeline.instant import (
    CLEAN,
    COMPACTION,
    Instant,
    State,
    format_instant_time,
)
from hudi_ds.timeline.plans import (
    ActionInstant,
    CleanerPlan,
    CleanFileInfo,
    CleanMetadata,
    CleanPartitionMetadata,
)
from hudi_ds.timeline.timeline import Timeline
from hudi_ds.write.markers import TEMP_DIR, marked_files

log = logging.getLogger("hudi_ds.services")

__all__ = [
    "CleanResult",
    "clean",
    "clean_due",
    "debris_possible",
    "may_have_work",
    "earliest_commit_to_retain",
    "plan_clean",
    "savepointed_files",
]

SAVEPOINTED_TIMESTAMPS = "savepointed_timestamps"
DEBRIS_KEY = "hudi_ds.debris.files"
#: temp files of the timeline folder older than this are leftovers of a crashed atomic write
STALE_TMP_SECONDS = 600


@dataclass
class CleanResult:
    """What a clean did.

    Attributes:
        instant: the clean instant (None when there was nothing to clean).
        deleted: files deleted (relative paths).
        failed: files that could not be deleted.
        debris: the deleted files that were debris of failed writes.
        earliest_commit_to_retain: E of the plan ("" for KEEP_LATEST_FILE_VERSIONS).
    """

    instant: str | None
    deleted: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    debris: list[str] = field(default_factory=list)
    earliest_commit_to_retain: str = ""
    policy: str = ""


# -- retention --------------------------------------------------------------------------------


def _commits_and_compactions(tl: Timeline) -> Timeline:
    """Hudi's ``getCommitsAndCompactionTimeline``: commit, deltacommit, replacecommit and
    compaction instants, in any state."""
    return tl.filter_actions("commit", "deltacommit", "replacecommit", COMPACTION)


def earliest_commit_to_retain(ctx: ServiceContext, tl: Timeline) -> Instant | None:
    """E: the oldest completed commit whose files a clean must keep (CleanerUtils' rule)."""
    policy = ctx.get(ServiceConfig.CLEANER_POLICY)
    timeline = _commits_and_compactions(tl)
    completed = [i for i in timeline if i.is_completed]
    if policy == "KEEP_LATEST_COMMITS":
        retained = ctx.get(ServiceConfig.CLEANER_COMMITS_RETAINED)
        if len(completed) <= retained:
            return None
        nth = completed[len(completed) - retained]
        pending = [i for i in timeline if not i.is_completed]
        if pending and nth.requested_time > pending[0].requested_time:
            before = [i for i in completed if i.requested_time < pending[0].requested_time]
            return before[-1] if before else None
        return nth
    if policy == "KEEP_LATEST_BY_HOURS":
        hours = ctx.get(ServiceConfig.CLEANER_HOURS_RETAINED)
        now = datetime.now(timezone.utc)
        cutoff_ms = int((now - timedelta(hours=hours)).timestamp() * 1000)
        cutoff = format_instant_time(cutoff_ms, ctx.config.timeline_timezone)
        for i in completed:
            if i.requested_time >= cutoff:
                return i
        return None
    return None


def savepointed_files(tl: Timeline) -> tuple[set[str], list[str]]:
    """File names kept by completed savepoints, and the savepointed instant times."""
    names: set[str] = set()
    times = []
    for sp in tl.savepoints():
        if not sp.is_completed:
            continue
        times.append(sp.requested_time)
        md = tl.read_savepoint_metadata(sp.requested_time)
        for pm in md.partition_metadata.values():
            names.update(file_name_of(f) for f in pm.savepoint_data_file)
    return names, times


def _pending_compaction_times(tl: Timeline) -> dict[tuple[str, str], list[str]]:
    """Requested times of the pending compactions of each ``(partition, fileId)``."""
    out: dict[tuple[str, str], list[str]] = {}
    for c in tl.pending_compactions():
        for op in tl.read_compaction_plan(c).operations or []:
            key = (op.partition_path or "", op.file_id or "")
            out.setdefault(key, []).append(c.requested_time)
    return out


def _pending_compaction_bases(tl: Timeline) -> dict[tuple[str, str], str]:
    out: dict[tuple[str, str], str] = {}
    for c in tl.pending_compactions():
        for op in tl.read_compaction_plan(c).operations or []:
            key = (op.partition_path or "", op.file_id or "")
            base = op.base_instant_time or ""
            out[key] = min(out.get(key, base), base)
    return out


@dataclass
class _Slice:
    key: str
    base: BaseFile | None = None
    logs: list[LogFile] = field(default_factory=list)

    def paths(self) -> list[str]:
        return ([self.base.path] if self.base is not None else []) + [lf.path for lf in self.logs]

    def names(self) -> list[str]:
        return [file_name_of(p) for p in self.paths()]


def _committed(tl: Timeline, instant: str, first: str | None) -> bool:
    if first is not None and instant < first:
        return True  # archived, hence committed
    return tl.is_completed(instant) and tl.get(instant) is not None


def _slices(
    g: FileGroup, tl: Timeline, first: str | None, pending: Iterable[str] = ()
) -> list[_Slice]:
    """All slices of a file group (committed base files and their logs), newest first.

    Layout 1 names a log file after its slice's base instant. Layout 2 names it after the
    delta commit that wrote it, and the slice is found by completion time (Hudi 1.x
    ``HoodieFileGroup.addLogFile`` / ``getBaseInstantTime``): the newest slice -- a committed
    base file or a compaction scheduled for the group (``pending``) -- that started at or
    before the log's completion; a log of a write not completed goes to the newest slice;
    without any slice, the first log starts one at its own instant.
    """
    out: dict[str, _Slice] = {}
    for b in g.base_files:
        if _committed(tl, b.instant_time, first):
            out.setdefault(b.instant_time, _Slice(b.instant_time)).base = b
    if tl.layout_version == 1:
        for lf in g.log_files:
            out.setdefault(lf.instant_time, _Slice(lf.instant_time)).logs.append(lf)
        return [out[k] for k in sorted(out, reverse=True)]
    for t in pending:
        out.setdefault(t, _Slice(t))

    def done(lf: LogFile) -> str | None:
        t = lf.instant_time
        if first is not None and t < first and tl.get(t) is None:
            return t  # archived: committed, completed at the latest when the next started
        return tl.completion_time(t) if tl.is_completed(t) else None

    logs = sorted(((done(lf), lf) for lf in g.log_files), key=lambda d: (d[0] is None, d[0] or ""))
    for completion, lf in logs:
        keys = sorted(out)
        if completion is None:
            key = keys[-1] if keys else lf.instant_time
        else:
            floor = [k for k in keys if k <= completion]
            key = floor[-1] if floor else lf.instant_time
        out.setdefault(key, _Slice(key)).logs.append(lf)
    return [out[k] for k in sorted(out, reverse=True)]


def _files_to_clean(
    ctx: ServiceContext,
    g: FileGroup,
    tl: Timeline,
    first: str | None,
    earliest: Instant | None,
    saved: set[str],
    pending_bases: dict[tuple[str, str], str],
    pending_times: Mapping[tuple[str, str], list[str]],
) -> list[str]:
    policy = ctx.get(ServiceConfig.CLEANER_POLICY)
    slices = _slices(g, tl, first, pending_times.get((g.partition_path, g.file_id), ()))
    if not slices:
        return []
    pending_base = pending_bases.get((g.partition_path, g.file_id))

    def needed_for_compaction(s: _Slice) -> bool:
        return pending_base is not None and s.key >= pending_base

    def savepointed(s: _Slice) -> bool:
        return any(n in saved for n in s.names())

    out: list[str] = []
    if policy == "KEEP_LATEST_FILE_VERSIONS":
        keep = ctx.get(ServiceConfig.CLEANER_FILE_VERSIONS_RETAINED)
        candidates = [s for s in slices if not needed_for_compaction(s)]
        if pending_base is not None:
            keep -= 1
        for s in candidates[max(keep, 0) :]:
            if not savepointed(s):
                out.extend(s.paths())
        return out
    if earliest is None:
        return []
    e = earliest.requested_time
    last_version = slices[0].key
    before = next((s.key for s in slices if s.key < e), None)
    for s in slices:
        if savepointed(s) or s.key == last_version or s.key == before:
            continue
        if not needed_for_compaction(s) and s.key < e:
            out.extend(s.paths())
    return out


def _replaced_groups(tl: Timeline, earliest: Instant | None, policy: str) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for inst in tl.commits().filter_actions("replacecommit"):
        if policy != "KEEP_LATEST_FILE_VERSIONS" and (
            earliest is None or inst.requested_time >= earliest.requested_time
        ):
            continue
        for p, ids in tl.read_commit_metadata(inst).replaced_file_ids().items():
            out.setdefault(p, set()).update(ids)
    return out


# -- debris -----------------------------------------------------------------------------------


def _pending_marked(ctx: ServiceContext, tl: Timeline) -> set[str]:
    out: set[str] = set()
    for i in tl.pending():
        out.update(marked_files(ctx.storage, i.requested_time))
    return out


def _log_is_debris(ctx: ServiceContext, lf: LogFile, tl: Timeline, first: str | None) -> bool:
    try:
        data = ctx.storage.read_bytes(lf.path)
    except FileNotFoundError:
        return False
    scan = scan_log_bytes(data, lf.path)
    for b in scan.blocks:
        t = b.instant_time
        if not t:
            return False  # cannot tell: keep it
        if tl.contains(t) or (first is not None and t < first):
            return False
    return True


def _debris(
    ctx: ServiceContext,
    groups: dict[str, list[FileGroup]],
    tl_before: Timeline,
    referenced: set[str],
) -> list[str]:
    """Data files of failed writes (see the module docstring)."""
    marked = _pending_marked(ctx, tl_before)
    tl = ctx.reload_timeline()  # listed after the files and the markers: see the module docstring
    first = tl.start_time()
    out = []
    for gs in groups.values():
        for g in gs:
            for b in g.base_files:
                t = b.instant_time
                if b.path in marked or (first is not None and t < first):
                    continue
                if tl.contains(t) and not (
                    # completed when ``referenced`` was read from its commit
                    tl_before.is_completed(t)
                    and tl_before.origin_action(t) == COMPACTION
                    and b.path not in referenced
                ):
                    continue
                # on no timeline, or a base file of a completed compaction that its commit
                # does not name: left by an attempt that was rolled back (it re-ran with the
                # same instant time) and died before it could delete what it wrote late
                out.append(b.path)
            for lf in g.log_files:
                if lf.path in marked or lf.path in referenced:
                    continue
                if first is not None and lf.instant_time < first:
                    continue
                if _log_is_debris(ctx, lf, tl, first):
                    out.append(lf.path)
    return out


def _referenced_files(tl: Timeline) -> set[str]:
    out: set[str] = set()
    for inst in tl.commits():
        for s in tl.read_commit_metadata(inst).write_stats():
            if s.path:
                out.add(s.path)
            part = s.partition_path or ""
            for name in s.log_files or []:
                out.add(file_path(part, name))
    return out


def _stale_temp(ctx: ServiceContext) -> list[str]:
    """Marker folders of instants on no timeline (rolled back or never started) untouched for
    a while, and stale ``*.tmp`` files of the timeline folder.

    The folders are listed before the timeline is loaded (a writer creates its requested
    instant before its markers), and a folder must be older than ``STALE_TMP_SECONDS``: a
    rollback deleting its instant's markers right now keeps them.
    """
    now_ms = time.time() * 1000
    limit = STALE_TMP_SECONDS * 1000
    candidates = []
    for d in ctx.storage.list_dirs(TEMP_DIR):
        name = file_name_of(d)
        if not name.isdigit():
            continue
        files = ctx.storage.list_files(d, recursive=True)
        if all(now_ms - f.mtime_ms > limit for f in files):
            candidates.append((name, d))
    tl = ctx.reload_timeline()
    out = [d for name, d in candidates if not tl.contains(name)]
    for f in ctx.storage.list_files(tl.path or ".hoodie"):
        if f.name.endswith(".tmp") and now_ms - f.mtime_ms > limit:
            out.append(f.path)
    return out


# -- planning and execution -------------------------------------------------------------------


def plan_clean(ctx: ServiceContext, debris: bool = True) -> tuple[CleanerPlan, list[str]]:
    """What a clean now would delete (nothing is written).

    Args:
        ctx: the opened table and options.
        debris: also look for debris of failed writes (reads every commit's metadata).

    Returns:
        The cleaner plan (files per partition, as full URIs) and the debris among them
        (relative paths).
    """
    storage = ctx.storage
    view = FileSystemView(storage, ctx.config)
    groups = {p: list(view.file_groups(p)) for p in view.partitions()}  # list first ...
    tl = ctx.reload_timeline()  # ... then the timeline
    policy = ctx.get(ServiceConfig.CLEANER_POLICY)
    first = tl.start_time()
    earliest = earliest_commit_to_retain(ctx, tl)
    saved, saved_times = savepointed_files(tl)
    pending_bases = _pending_compaction_bases(tl)
    pending_times = _pending_compaction_times(tl)
    replaced = _replaced_groups(tl, earliest, policy)
    by_partition: dict[str, list[str]] = {}
    for p, gs in groups.items():
        files: list[str] = []
        for g in gs:
            if g.file_id in replaced.get(p, set()):
                for s in _slices(g, tl, first, pending_times.get((p, g.file_id), ())):
                    if not any(n in saved for n in s.names()):
                        files.extend(s.paths())
                continue
            files.extend(
                _files_to_clean(ctx, g, tl, first, earliest, saved, pending_bases, pending_times)
            )
        if files:
            by_partition[p] = files
    found = _debris(ctx, groups, tl, _referenced_files(tl)) if debris else []
    for f in found:
        lst = by_partition.setdefault(partition_of(f), [])
        if f not in lst:
            lst.append(f)
    last = tl.commits().last()
    plan = CleanerPlan(
        earliest_instant_to_retain=(
            ActionInstant(earliest.requested_time, earliest.action, State.COMPLETED.value)
            if earliest is not None
            else None
        ),
        last_completed_commit_timestamp=last.requested_time if last is not None else "",
        policy=policy,
        files_to_be_deleted_per_partition={},
        version=2,
        file_paths_to_be_deleted_per_partition={
            p: [CleanFileInfo(storage.uri(f), False) for f in sorted(fs)]
            for p, fs in sorted(by_partition.items())
        },
        partitions_to_be_deleted=[],
        extra_metadata={SAVEPOINTED_TIMESTAMPS: ",".join(saved_times)} if saved_times else None,
    )
    return plan, sorted(found)


def debris_possible(tl: Timeline) -> bool:
    """Whether a write failed (a rollback ran) since the last clean: automatic cleaning only
    looks for debris then."""
    cleans = tl.completed().filter_actions(CLEAN)
    last = cleans.last()
    return any(
        last is None or r.requested_time > last.requested_time
        for r in tl.filter_actions("rollback", "restore")
    )


def may_have_work(ctx: ServiceContext, tl: Timeline) -> bool:
    """A cheap, timeline-only check before an automatic clean lists the table.

    False only when nothing can be cleanable: no pending clean, no write failed since the last
    clean, and no instant that starts new file slices (a compaction, COW commit or
    replacecommit) that the retention could now let go of -- e.g. a MOR table that has only
    delta commits since its last clean.
    """
    if tl.pending().filter_actions(CLEAN) or debris_possible(tl):
        return True
    makers = [i for i in tl.commits() if i.action in ("commit", "replacecommit")]
    if not makers:
        return False
    policy = ctx.get(ServiceConfig.CLEANER_POLICY)
    if policy == "KEEP_LATEST_FILE_VERSIONS":
        return True
    e = earliest_commit_to_retain(ctx, tl)
    if e is None:
        return False
    last = tl.completed().filter_actions(CLEAN).last()
    prev = ""
    if last is not None:
        md = tl.read_clean_metadata(last)
        if md.partition_metadata and all(
            pm.policy == policy for pm in md.partition_metadata.values()
        ):
            prev = md.earliest_commit_to_retain or ""
    return any(prev <= i.requested_time < e.requested_time for i in makers)


def clean_due(ctx: ServiceContext, tl: Timeline | None = None) -> bool:
    """Automatic cleaning runs when ``hoodie.clean.max.commits`` commits completed since the
    last clean (or a clean is pending)."""
    tl = tl if tl is not None else ctx.timeline()
    cleans = tl.filter_actions(CLEAN)
    if any(not c.is_completed for c in cleans):
        return True
    last = cleans.last()
    commits = [c for c in tl.commits() if last is None or c.requested_time > last.requested_time]
    return len(commits) >= ctx.get(ServiceConfig.CLEAN_MAX_COMMITS)


@under_table_lock
def clean(ctx: ServiceContext, *, dry_run: bool = False, debris: bool = True) -> CleanResult:
    """Finish any pending clean, then plan and execute a new one if there is anything to delete.

    Args:
        ctx: the opened table and options (policy and retention).
        dry_run: only plan; nothing is written or deleted.
        debris: also delete debris of failed writes.

    Returns:
        The result of the new clean (``instant`` None when nothing was to be cleaned).
    """
    ctx.require_writable("cleaning")
    tl = ctx.timeline()
    for pending in tl.pending().filter_actions(CLEAN):
        if not dry_run:
            _execute(ctx, pending, tl.read_cleaner_plan(pending), [])
    plan, found = plan_clean(ctx, debris)
    policy = plan.policy
    e = plan.earliest_instant_to_retain.timestamp if plan.earliest_instant_to_retain else ""
    files = [
        relative_path(ctx.storage, fi.file_path or "", p)
        for p, infos in (plan.file_paths_to_be_deleted_per_partition or {}).items()
        for fi in infos
    ]
    stale = _stale_temp(ctx)
    if dry_run or not files:
        if not dry_run:
            for d in stale:
                _delete_any(ctx, d)
        return CleanResult(None, files if dry_run else [], [], found, e, policy)
    if found:
        plan.extra_metadata = {**(plan.extra_metadata or {}), DEBRIS_KEY: str(len(found))}
    req = ctx.new_instant(CLEAN, plan.to_bytes())
    crash_point("clean_plan")
    res = _execute(ctx, req, plan, found)
    for d in stale:
        ctx.still_locked()
        _delete_any(ctx, d)
    return res


def _delete_any(ctx: ServiceContext, rel: str) -> None:
    try:
        if ctx.storage.is_dir(rel):
            ctx.storage.delete_dir(rel)
        else:
            ctx.storage.delete(rel)
    except OSError as e:  # pragma: no cover - best effort
        log.warning("could not delete %s: %s", rel, e)


def _execute(
    ctx: ServiceContext, inst: Instant, plan: CleanerPlan, debris: Iterable[str]
) -> CleanResult:
    storage = ctx.storage
    writer = ctx.writer()
    t0 = time.perf_counter()
    if inst.is_requested:
        writer.transition_to_inflight(inst, plan.to_bytes())
        crash_point("clean_plan")
    parts: dict[str, CleanPartitionMetadata] = {}
    deleted: list[str] = []
    failed: list[str] = []
    items = [
        (p, relative_path(storage, fi.file_path or "", p))
        for p, infos in (plan.file_paths_to_be_deleted_per_partition or {}).items()
        for fi in infos
    ]
    for k, (p, rel) in enumerate(items, start=1):
        # a clean that lost the table lock (paused past its lease) stops before its next
        # delete: whoever took the lock over finishes this plan (deleting the same files)
        ctx.still_locked()
        pm = parts.setdefault(p, CleanPartitionMetadata(partition_path=p, policy=plan.policy))
        pm.delete_path_patterns.append(file_name_of(rel))
        try:
            storage.delete(rel)
            pm.success_delete_files.append(file_name_of(rel))
            deleted.append(rel)
            crash_point("clean")
        except OSError as err:
            log.warning("clean %s: could not delete %s: %s", inst.requested_time, rel, err)
            pm.failed_delete_files.append(file_name_of(rel))
            failed.append(rel)
        ctx.progress(k, len(items), f"clean {inst.requested_time}")
    e = plan.earliest_instant_to_retain.timestamp if plan.earliest_instant_to_retain else ""
    md = CleanMetadata(
        start_clean_time=inst.requested_time,
        time_taken_in_millis=int((time.perf_counter() - t0) * 1000),
        total_files_deleted=len(deleted),
        earliest_commit_to_retain=e,
        last_completed_commit_timestamp=plan.last_completed_commit_timestamp,
        partition_metadata=parts,
        version=2,
        bootstrap_partition_metadata={},
        extra_metadata=plan.extra_metadata,
    )
    # fenced: a clean that lost the lock never completes (another process finishes the plan)
    ctx.complete(Instant(inst.requested_time, CLEAN, State.INFLIGHT), md.to_bytes())
    log.info(
        "clean %s (%s): deleted %d file(s), %d debris",
        inst.requested_time,
        plan.policy,
        len(deleted),
        len(list(debris)),
    )
    return CleanResult(inst.requested_time, deleted, failed, sorted(debris), e, plan.policy)
