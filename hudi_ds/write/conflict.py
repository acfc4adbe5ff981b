"""Conflict resolution at commit: what changed on the timeline since a write started.

Runs under the table lock, right before the completed instant is written, on the timeline the
commit has just listed again (as Java's ``TransactionUtils.resolveWriteConflictIfAny`` reloads
the active timeline in ``preCommit``):

* :func:`retarget_pending_logs` -- log files written against a file slice that a compaction has
  since superseded move into the compaction's slice (:func:`retarget_logs`);
* :func:`check_clusterings` -- no update into a file group of a pending clustering (per the
  update strategy); a single writer's file groups not replaced by a clustering that completed
  beside it;
* :func:`resolve_conflicts` (multi-writer) -- a COW file group (or a replaced one) written by a
  concurrent commit is a conflict; MOR log files of both writers are kept, ours renumbered after
  theirs (Hudi's non-blocking concurrency control on bucket tables).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence

from hudi_ds.config import ClusteringConfig, Options, UpdateStrategy
from hudi_ds.errors import CommitConflictError
from hudi_ds.index import Index
from hudi_ds.index.bucket import bucket_id_from_file_id
from hudi_ds.index.pending_resize import dual_written, is_resize, resize_file_ids
from hudi_ds.layout.file_group import FileSlice
from hudi_ds.layout.naming import file_name_of, log_file_name, parse_log_file_name
from hudi_ds.table.fs_view import FileSystemView
from hudi_ds.table_config import TableType
from hudi_ds.timeline.instant import DELTA_COMMIT
from hudi_ds.timeline.metadata import WriteStat
from hudi_ds.timeline.timeline import Timeline
from hudi_ds.timeline.view import TableState
from hudi_ds.write.markers import MarkerBatch
from hudi_ds.write.plan import WritePlan
from hudi_ds.write.write_status import WriteStatus


def reject_clustering_updates(
    timeline: Timeline,
    instant: str,
    statuses: Sequence[WriteStatus],
    options: Options,
    index: Index | None = None,
) -> None:
    """Java's default update strategy for file groups under a pending clustering
    (``SparkRejectUpdateStrategy.handleUpdate``): a write that touches one fails, naming it --
    the clustering rewrites the file group, and an update written beside it would be lost.
    Checked at the commit, under the table lock, on the timeline listed for it: a clustering
    scheduled while the write ran counts as well.

    A consistent-hashing table's pending clusterings are its resizes, beside which writers
    write each record twice, to the old node and to its child
    (``SparkConsistentBucketDuplicateUpdateStrategy``, :mod:`hudi_ds.index.pending_resize`),
    whatever the strategy: a write into a resized file group passes when it wrote the copies
    too, and fails when it did not (the resize was planned after the write planned its files:
    written to the old node alone, its records would be lost when the resize commits).

    Raises:
        CommitConflictError: a status's file group is in a pending clustering plan.
    """
    consistent = index is not None and index.bucket is not None and index.bucket.consistent
    strategy = options.get(ClusteringConfig.UPDATES_STRATEGY)
    if strategy != UpdateStrategy.REJECT.value and not consistent:
        return
    pending = [i for i in timeline.pending_clustering() if i.requested_time != instant]
    if not pending:
        return
    ours = {(s.partition_path, s.file_id) for s in statuses}
    for inst in pending:
        plan = timeline.read_requested_replace(inst).clustering_plan
        groups = (plan.input_groups or []) if plan is not None else []
        doubled: set[tuple[str, str]] = set()
        resize = consistent and plan is not None and is_resize(plan)
        if resize:
            inputs, children = resize_file_ids(groups, f"clustering {inst.requested_time}")
            doubled = dual_written(ours, inputs, children)
        for g in groups:
            for sl in g.slices or []:
                key = (sl.partition_path or "", sl.file_id or "")
                if key in ours and key not in doubled:
                    why = (
                        "a consistent-hashing resize planned after this write started, so its "
                        "records did not go to the resize's children too; write them again"
                        if resize
                        else "a consistent-hashing table's clustering that is not a resize; "
                        "run or roll it back first"
                        if consistent
                        else "not allowed by hoodie.clustering.updates.strategy="
                        "SparkRejectUpdateStrategy (the default); run the clustering first, "
                        "or set SparkAllowUpdateStrategy (the clustering then fails instead)"
                    )
                    raise CommitConflictError(
                        f"instant {instant} updates file group {key[1]} of partition "
                        f"'{key[0]}', which pending clustering {inst.requested_time} rewrites: "
                        + why
                    )


def reject_replaced_file_groups(
    timeline: Timeline, plan: WritePlan, statuses: Sequence[WriteStatus]
) -> None:
    """A single writer's check at commit: no clustering that completed since the write's plan
    listed the timeline replaced a file group the write wrote -- its records would hang off a
    replaced file group and be lost. A clustering beside the writer replaces only the file
    groups of its plan, which a write that saw the plan pending keeps out of (inserts never go
    there, updates are refused: :func:`reject_clustering_updates`); one scheduled by another
    process after this write's plan may not have been seen. (Several writers:
    :func:`resolve_conflicts` checks every commit since the plan.)

    Raises:
        CommitConflictError: naming the clustering and the file group.
    """
    ours = {(s.partition_path, s.file_id) for s in statuses}
    for other in timeline.commits():
        t = other.requested_time
        if t in plan.visibility.instants or t == plan.instant or not timeline.is_clustering(other):
            continue
        if any(r.instant == t for r in plan.pending_resizes.values()):
            continue  # a resize this write wrote beside: its children hold the copies
        md = timeline.read_commit_metadata(other)
        replaced = {(p, f) for p, fs in md.partition_to_replace_file_ids.items() for f in fs}
        clash = ours & replaced
        if clash:
            p, f = sorted(clash)[0]
            raise CommitConflictError(
                f"instant {plan.instant} conflicts with clustering {t}, which replaced file "
                f"group {f} of partition '{p}' while the write ran; retry the write"
            )


def check_clusterings(
    timeline: Timeline,
    plan: WritePlan,
    statuses: Sequence[WriteStatus],
    options: Options,
    multi_writer: bool,
) -> None:
    """The commit's checks against clusterings: no update into a file group of a pending one
    (per the update strategy), and -- a single writer -- none completed meanwhile replaced a
    file group the write wrote (several writers: :func:`resolve_conflicts`).

    Raises:
        CommitConflictError: naming the clustering and the file group.
    """
    reject_clustering_updates(timeline, plan.instant, statuses, options, plan.options.index)
    if not multi_writer:
        reject_replaced_file_groups(timeline, plan, statuses)


def resolve_conflicts(
    state: TableState, plan: WritePlan, statuses: list[WriteStatus]
) -> list[WriteStatus]:
    """Check the instants completed since this write started (under the table lock, on the
    timeline ``state`` holds, listed again for the commit).

    COW file groups (and file groups replaced meanwhile) admit one writer: an overlap is
    a conflict. MOR log files of a bucket table are appended by both writers (Hudi's
    non-blocking concurrency control): ours are renumbered after the other writer's so
    that log order is commit order, and a bucket that both writers created is merged into
    the file group committed first.
    """
    timeline = state.timeline
    ours = {(s.partition_path, s.file_id) for s in statuses}
    others = [
        i
        for i in timeline.commits()
        if i.requested_time not in plan.visibility.instants and i.requested_time != plan.instant
    ]
    if not others:
        return statuses
    exclusive = plan.table_type is TableType.COPY_ON_WRITE or not plan.operation.merges_existing
    theirs_new: dict[tuple[str, int], str] = {}
    consistent = plan.options.index.routes_by_hash and plan.options.index.layout.consistent
    for other in others:
        md = timeline.read_commit_metadata(other)
        theirs = {(p, s.file_id) for p, st in md.partition_to_write_stats.items() for s in st}
        replaced = {(p, f) for p, fs in md.partition_to_replace_file_ids.items() for f in fs}
        if consistent and replaced:
            # a resize that completed meanwhile: the file groups it replaced are no clash where
            # we also wrote their records to its children (written as logs on top of them)
            by_part: dict[str, set[str]] = {}
            for p, f in theirs:
                by_part.setdefault(p, set()).add(f or "")
            olds = {p: set(fs) for p, fs in md.partition_to_replace_file_ids.items()}
            doubled = dual_written(ours, olds, by_part)
            kept = {(p, f) for p, f in ours & theirs if any(q == p for q, _ in doubled)}
            replaced, theirs = replaced - doubled, theirs - kept
        clash = (ours & replaced) or (exclusive and ours & theirs)
        if plan.options.index.routes_by_hash and not plan.options.index.layout.consistent:
            # two writers creating a file group for one bucket (file ids differ); a
            # consistent-hashing node's file id is the same for every writer
            for p, f in theirs:
                if f and f[:8].isdigit():
                    theirs_new.setdefault((p, bucket_id_from_file_id(f)), f)
            for s in statuses:
                b = (s.partition_path, bucket_id_from_file_id(s.file_id))
                created_too = theirs_new.get(b, s.file_id) != s.file_id
                # a bucket both created: logs join the file group committed first
                # (_rehome_logs), a new base file (write/options.py _bucket_base_files) conflicts
                new_base = exclusive or s.kind != "append"
                if new_base and s.stat.prev_commit == "null" and created_too:
                    clash = clash or {(s.partition_path, s.file_id)}
        else:
            # a MERGE_ON_READ base file rewritten (small file) is exclusive, like COW
            rewritten = {
                (s.partition_path, s.file_id)
                for s in statuses
                if s.kind == "merge" and s.stat.prev_commit != "null"
            }
            # ... and so is theirs: our logs would hang off the base file they replaced
            if other.action == DELTA_COMMIT:
                theirs_rewritten = {
                    (p, st.file_id)
                    for p, sts in md.partition_to_write_stats.items()
                    for st in sts
                    if st.path
                    and not parse_log_file_name(file_name_of(st.path))
                    and st.prev_commit not in (None, "null")
                }
                clash = clash or (rewritten & theirs) or (ours & theirs_rewritten)
            else:
                clash = clash or (rewritten & theirs)
        if clash:
            p, f = sorted(clash)[0]
            raise CommitConflictError(
                f"instant {plan.instant} conflicts with {other.requested_time} "
                f"({other.action}) on file group {f} of partition '{p}'"
            )
    return _rehome_logs(state, plan, statuses)


def retarget_pending_logs(
    state: TableState, plan: WritePlan, statuses: list[WriteStatus]
) -> list[WriteStatus]:
    """Logs of file groups compacted since this write started join the compaction's slice
    (:func:`retarget_logs`); runs under the table lock, right before the commit, on the
    timeline ``state`` holds (listed again for the commit)."""
    appends = [k for k, s in enumerate(statuses) if s.kind == "append"]
    if not appends or state.layout >= 2:
        # table version 8+: a log file is named with its own instant and joins the slice its
        # completion time falls in (Java 1.x HoodieFileGroup.getBaseInstantTime), so a
        # compaction scheduled meanwhile takes it without a rename
        return statuses
    written: dict[tuple[str, str], str] = {}
    for k in appends:
        n = parse_log_file_name(file_name_of(statuses[k].path))
        if n is not None:
            key = (statuses[k].partition_path, n.file_id)
            written[key] = min(written.get(key, n.instant_time), n.instant_time)
    if not written:
        return statuses
    tl = state.timeline
    gone = any(not tl.contains(b) for b in set(written.values()))
    if not gone and not _compacted_since(tl, written):
        return statuses  # no slice newer than the ones written to, none taken back
    moved = retarget_logs(state, [statuses[k].stat for k in appends], plan.instant)
    out = list(statuses)
    for k, stat in zip(appends, moved, strict=True):
        if stat is not statuses[k].stat:
            out[k] = WriteStatus(stat, statuses[k].kind, statuses[k].task)
    return out


def _compacted_since(tl: Timeline, written: Mapping[tuple[str, str], str]) -> bool:
    """Whether a compaction on ``tl`` (pending or completed) planned after the base instant a
    log was written against covers the log's file group (``written``: ``(partition, file id)``
    -> that base instant). Answered from the compaction plans alone: listing the partitions
    the write touched is left to the rare write that raced a compaction of its file groups."""
    oldest = min(written.values())
    for i in tl:
        t = i.requested_time
        if t <= oldest or tl.origin_action(t) != "compaction":
            continue
        for op in tl.read_compaction_plan(t).operations or []:
            base = written.get((op.partition_path or "", op.file_id or ""))
            if base is not None and t > base:
                return True
    return False


def _rehome_logs(
    state: TableState, plan: WritePlan, statuses: list[WriteStatus]
) -> list[WriteStatus]:
    """Rename our log files after the concurrent writers' ones (see :func:`resolve_conflicts`)."""
    view = FileSystemView(state.storage, state.config)
    vis = state.visibility()
    mine = {s.path for s in statuses}
    top: dict[tuple[str, str, str], int] = {}
    live: dict[tuple[str, int], FileSlice] = {}
    # new file groups of one bucket: joined (a consistent-hashing node's file id is the same
    # for every writer: nothing to join)
    index = plan.options.index
    bucketed = index.routes_by_hash and not index.layout.consistent
    for p in {s.partition_path for s in statuses if s.kind == "append"}:
        for g in view.file_groups(p):
            for lf in g.log_files:
                if lf.path not in mine:
                    k = (p, g.file_id, lf.instant_time)
                    top[k] = max(top.get(k, 0), lf.name.version)
        for fs in view.latest_file_slices(p, vis):
            foreign = fs.base_file is not None or any(lf.path not in mine for lf in fs.log_files)
            if foreign and bucketed:  # a file group someone else committed (not our new ones)
                live.setdefault((p, bucket_id_from_file_id(fs.file_id)), fs)
    out = []
    # the write's marker folder holds batched markers: the new names join them (one folder
    # never mixes the two forms, which Java's rollback would read only one of)
    markers: MarkerBatch | None = None
    for s in statuses:
        name = parse_log_file_name(file_name_of(s.path)) if s.kind == "append" else None
        if name is None:
            out.append(s)
            continue
        fid, base = s.file_id, name.instant_time
        other = live.get((s.partition_path, bucket_id_from_file_id(fid))) if bucketed else None
        if other is not None and other.file_id != fid:
            # both writers created this bucket: join the file group committed first (table
            # version 8+: a log keeps its own instant, its slice follows from completion time)
            fid = other.file_id
            base = base if state.layout >= 2 else other.base_instant_time
        k = (s.partition_path, fid, base)
        if fid == s.file_id and name.version > top.get(k, 0):
            top[k] = name.version
            out.append(s)
            continue
        version = top.get(k, 0) + 1
        top[k] = version
        new_name = log_file_name(fid, base, version, name.write_token or "0-0-0")
        new_path = f"{s.partition_path}/{new_name}" if s.partition_path else new_name
        if markers is None:
            markers = MarkerBatch(state.storage, plan.instant)
        markers.mark([(new_path, "APPEND")])
        state.storage.rename(s.path, new_path)
        stat = dataclasses.replace(
            s.stat,
            file_id=fid,
            path=new_path,
            log_version=version,
            log_files=[new_name],
            prev_commit=base if fid != s.file_id else s.stat.prev_commit,
        )
        out.append(WriteStatus(stat, s.kind, s.task))
    return out


def _compaction_targets(
    view: FileSystemView, timeline: Timeline, partitions: Iterable[str]
) -> tuple[dict[tuple[str, str], str], set[str]]:
    """The current base instant of each file group of ``partitions`` that has one, and the
    log files named by any compaction plan on the timeline.

    A file group's current base instant is its latest committed base file's instant or, if
    later, the latest pending compaction planned on it: new log files belong there (Hudi's
    ``getLatestFileSlices`` opens the slice of a pending compaction at its requested time).
    """
    targets: dict[tuple[str, str], str] = {}
    parts = set(partitions)
    first = timeline.first_active_time() or ""

    def committed(t: str) -> bool:  # completed, or archived (older than the active timeline)
        return timeline.is_completed(t) or (not timeline.contains(t) and t < first)

    for p in parts:
        for g in view.file_groups(p):
            done = [b.instant_time for b in g.base_files if committed(b.instant_time)]
            if done:
                targets[(p, g.file_id)] = max(done)
    planned: set[str] = set()
    for c in timeline.filter(lambda i: timeline.origin_action(i.requested_time) == "compaction"):
        plan = timeline.read_compaction_plan(c.requested_time)
        for op in plan.operations or []:
            planned.update(op.log_file_rel_paths)
            k = (op.partition_path or "", op.file_id or "")
            if not c.is_completed and k[0] in parts and c.requested_time > targets.get(k, ""):
                targets[k] = c.requested_time
    return targets, planned


def retarget_logs(
    state: TableState, stats: Sequence[WriteStat], marker_instant: str | None = None
) -> list[WriteStat]:
    """Move log files written against a file slice that a compaction has since replaced into
    the compaction's slice; returns the stats with the new paths.

    A write that started before compaction C was scheduled names its logs after the slice it
    saw; C's plan holds only the logs that existed when it was scheduled (never the logs of a
    pending write), so once C completes those logs would belong to a superseded slice and drop
    out of every read. Renamed to base instant C after C's own logs, they are read on top of
    C's base file -- as Hudi's writers, which write into the pending compaction's slice, do.
    A log whose slice was taken back (a compaction unscheduled) moves to the current slice the
    same way. Logs that a compaction plan names are left where the plan expects them.

    Args:
        state: the table, its timeline as the caller last listed it.
        marker_instant: the pending write owning the files (a marker is made for each new
            name, so that a rollback finds it); None for files of a completed write.
    """
    if state.layout >= 2:
        # timeline layout 2 (v8/v9) names a log file after the delta commit that wrote it and
        # slices by completion time (Hudi 1.x): a log completing after C is in C's slice as is
        return list(stats)
    deltas = [
        (i, s, parse_log_file_name(file_name_of(s.path or "")))
        for i, s in enumerate(stats)
        if s.path
    ]
    deltas = [(i, s, n) for i, s, n in deltas if n is not None]
    if not deltas:
        return list(stats)
    storage = state.storage
    timeline = state.timeline
    view = FileSystemView(storage, state.config)
    targets, planned = _compaction_targets(
        view, timeline, {s.partition_path or "" for _, s, _ in deltas}
    )
    out = list(stats)
    top: dict[tuple[str, str, str], int] | None = None
    markers: MarkerBatch | None = None  # (the write's batched markers: see _rehome_logs)
    for i, s, name in deltas:
        assert name is not None
        p, fid = s.partition_path or "", name.file_id
        target = targets.get((p, fid))
        if target is None or target == name.instant_time or (s.path or "") in planned:
            continue
        if top is None:  # the log versions per slice, from the same listing
            top = {}
            for part in {q for q, _ in targets}:
                for g in view.file_groups(part):
                    for lf in g.log_files:
                        k = (part, g.file_id, lf.instant_time)
                        top[k] = max(top.get(k, 0), lf.name.version)
        k = (p, fid, target)
        version = top[k] = top.get(k, 0) + 1
        new_name = log_file_name(fid, target, version, name.write_token or "0-0-0")
        new_path = f"{p}/{new_name}" if p else new_name
        if marker_instant is not None:
            if markers is None:
                markers = MarkerBatch(storage, marker_instant)
            markers.mark([(new_path, "APPEND")])
        storage.rename(s.path or "", new_path)
        out[i] = dataclasses.replace(
            s, path=new_path, log_version=version, log_files=[new_name], prev_commit=target
        )
    return out
