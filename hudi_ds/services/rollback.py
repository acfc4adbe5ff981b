"""The table-service rollback: completed instants on request, savepoints, restore.

Failed (pending) writes are rolled back automatically before the next write
(:mod:`hudi_ds.write.rollback_executor`); this module undoes *completed* ones, as Hudi's
``rollback <instant>`` does. It plans the rollback and takes T out of readers' sight; the
execution (steps 4-5) is the executor's :func:`~hudi_ds.write.rollback_executor.execute_rollback`,
the same one a failed write's rollback runs (Hudi: ``BaseRollbackActionExecutor``):

1. ``R.rollback.requested`` -- Avro ``HoodieRollbackPlan`` naming T and, per file group, the
   files T wrote (``filesToBeDeleted``) and log files that also hold other instants' blocks
   (``logBlocksToBeDeleted``: they get a ROLLBACK command block instead);
2. ``R.rollback.inflight``;
3. T's completed file is deleted first: readers stop seeing T at once, and from here on T is
   a pending instant, so a crash is finished by the next writer (which resumes R with its plan);
4. T's files are deleted, command blocks written, T's remaining instant files deleted;
5. ``R.rollback`` -- Avro ``HoodieRollbackMetadata``.

Only the latest completed data instant can be rolled back (roll back later ones first, or
restore), never one that a savepoint keeps, and a COW commit or compaction only while the file
versions it replaced still exist.

Rollback, restore and savepoints run under the table lock with several writers, and their
completions are fenced as the writer's commit (confirmed before and after the completed file is
written; withdrawn with :class:`~hudi_ds.errors.LockLostError` if the lock was lost meanwhile:
the pending rollback or restore is then finished by the next run, with its own plan).

Savepoints (``T.savepoint``, Avro ``HoodieSavepointMetadata``: the latest file slices as of T)
keep T's files from the cleaner and T from archival; :func:`restore` rolls back every instant
after a savepoint, newest first (``R.restore.requested`` / ``.inflight`` / ``R.restore``, Avro
``HoodieRestorePlan`` / ``HoodieRestoreMetadata``).
"""

from __future__ import annotations

import getpass
import logging
import time
from dataclasses import dataclass, field

from hudi_ds.errors import InstantNotFoundError, TimelineError, UnsupportedError
from hudi_ds.faults import crash_point
from hudi_ds.layout.naming import (
    file_name_of,
    file_path,
    parse_base_file_name,
    parse_log_file_name,
    partition_of,
)
from hudi_ds.log.archive import load_archived
from hudi_ds.log.reader import scan_log_bytes
from hudi_ds.services.base import ServiceContext, under_table_lock
from hudi_ds.services.compaction import unschedule_compaction
from hudi_ds.services.compaction_execute import rollback_inflight_compaction
from hudi_ds.table.fs_view import FileSystemView
from hudi_ds.table.table import ReadableTable
from hudi_ds.timeline.instant import (
    COMPACTION,
    RESTORE,
    ROLLBACK,
    SAVEPOINT,
    Instant,
    State,
)
from hudi_ds.timeline.plans import (
    InstantInfo,
    RestoreMetadata,
    RestorePlan,
    RollbackMetadata,
    RollbackPlan,
    RollbackRequest,
    SavepointMetadata,
    SavepointPartitionMetadata,
)
from hudi_ds.timeline.timeline import DATA_ACTIONS, Timeline
from hudi_ds.write.rollback_executor import (
    execute_rollback,
    rollback_failed_writes,
    rollback_instant,
)

log = logging.getLogger("hudi_ds.services")

__all__ = [
    "RollbackResult",
    "create_savepoint",
    "delete_savepoint",
    "restore",
    "rollback",
]


@dataclass
class RollbackResult:
    """What a rollback did.

    Attributes:
        instant: the instant rolled back.
        action: its action (``compaction`` for a compaction commit).
        rollback_instant: the rollback instant R (None for an unscheduled compaction plan).
        deleted: files deleted (relative paths).
        command_logs: log files written with a ROLLBACK command block.
    """

    instant: str
    action: str
    rollback_instant: str | None
    deleted: list[str] = field(default_factory=list)
    command_logs: list[str] = field(default_factory=list)


# -- rollback of a completed instant ---------------------------------------------------------------


def _only_instant(blocks_instants: set[str], target: str) -> bool:
    return blocks_instants <= {target}


def _requests(ctx: ServiceContext, tl: Timeline, target: Instant) -> list[RollbackRequest]:
    """Per file group: the files ``target`` wrote, and shared log files needing a command block."""
    storage = ctx.storage
    ts = target.requested_time
    md = tl.read_commit_metadata(target)
    groups: dict[tuple[str, str], RollbackRequest] = {}
    paths: set[str] = set()
    for st in md.write_stats():
        part = st.partition_path or ""
        if st.path:
            paths.add(st.path)
        for name in st.log_files or []:
            paths.add(file_path(part, name))
    view = FileSystemView(storage, ctx.config)
    for p in view.partitions():  # base files carrying T in their name (e.g. a COW commit)
        for g in view.file_groups(p):
            paths.update(b.path for b in g.base_files if b.instant_time == ts)
    for path in sorted(paths):
        info = storage.info(path)
        if info is None:
            continue
        name = file_name_of(path)
        part = partition_of(path)
        base = parse_base_file_name(name)
        lg = parse_log_file_name(name)
        fid = base.file_id if base is not None else (lg.file_id if lg is not None else "")
        req = groups.setdefault(
            (part, fid),
            RollbackRequest(
                partition_path=part,
                file_id=fid,
                latest_base_instant=lg.instant_time if lg is not None else ts,
                files_to_be_deleted=[],
                log_blocks_to_be_deleted={},
            ),
        )
        if lg is not None:
            scan = scan_log_bytes(storage.read_bytes(path), path)
            instants = {b.instant_time for b in scan.blocks if b.instant_time}
            if not _only_instant(instants, ts):
                assert req.log_blocks_to_be_deleted is not None
                req.log_blocks_to_be_deleted[storage.uri(path)] = info.size
                continue
        req.files_to_be_deleted.append(storage.uri(path))
    return [groups[k] for k in sorted(groups)]


def _check_rollback(ctx: ServiceContext, tl: Timeline, inst: Instant) -> None:
    ts = inst.requested_time
    if any(sp.requested_time == ts for sp in tl.savepoints()):
        raise TimelineError(f"cannot roll back {ts}: it is savepointed; delete the savepoint first")
    later = [i for i in tl.commits() if i.requested_time > ts]
    if later:
        raise TimelineError(
            f"cannot roll back {ts}: later instants completed after it "
            f"({', '.join(i.requested_time for i in later)}); roll those back first or "
            "restore to a savepoint"
        )
    later_compactions = [c for c in tl.pending_compactions() if c.requested_time > ts]
    if later_compactions:
        raise TimelineError(
            f"cannot roll back {ts}: compaction {later_compactions[0].requested_time} is "
            "scheduled after it and may read its files; run or unschedule it first"
        )
    storage = ctx.storage
    if tl.origin_action(ts) == COMPACTION:
        plan = tl.read_compaction_plan(ts)
        for op in plan.operations or []:
            for rel in [op.base_file_rel_path, *op.log_file_rel_paths]:
                if rel and not storage.exists(rel):
                    raise TimelineError(
                        f"cannot roll back compaction {ts}: {rel}, which it compacted, was cleaned"
                    )
        return
    md = tl.read_commit_metadata(inst)
    for st in md.write_stats():
        if st.is_delta or not st.prev_commit or st.prev_commit == "null":
            continue
        fid, part = st.file_id or "", st.partition_path or ""
        view = FileSystemView(storage, ctx.config)
        prev = [
            b
            for g in view.file_groups(part)
            if g.file_id == fid
            for b in g.base_files
            if b.instant_time == st.prev_commit
        ]
        if not prev:
            raise TimelineError(
                f"cannot roll back {ts}: the previous version ({st.prev_commit}) of file group "
                f"{fid} in '{part}' was cleaned"
            )


@under_table_lock
def rollback(ctx: ServiceContext, instant: str) -> RollbackResult:
    """Roll back ``instant`` (see the module docstring).

    A pending write is rolled back as a failed one; a pending compaction is unscheduled.

    Raises:
        InstantNotFoundError: no such instant on the active timeline (the message says when it
            was archived).
        TimelineError: it cannot be rolled back (later commits, savepoint, cleaned versions).
        UnsupportedError: it is not a data instant (clean, rollback...).
    """
    ctx.require_writable("rollback")
    ctx.reload_timeline()  # a service run starts from a fresh listing
    finished = _resume_rollbacks(ctx)
    tl = ctx.timeline()
    inst = tl.get(instant)
    if inst is None and instant in finished:  # a rollback of it was killed; now finished
        return _result_of(tl, instant)
    if inst is None:
        first = tl.start_time()
        if first is not None and instant < first:
            raise InstantNotFoundError(
                f"instant {instant} is not on the active timeline (it starts at {first}); "
                "archived instants cannot be rolled back"
            )
        raise InstantNotFoundError(f"no instant {instant} on the timeline")
    if not inst.is_completed:
        if inst.action == COMPACTION:
            unschedule_compaction(ctx, instant)
            return RollbackResult(instant, COMPACTION, None)
        if inst.action in DATA_ACTIONS:
            before = {i.requested_time for i in tl.filter_actions(ROLLBACK)}
            rollback_instant(ctx.state, instant)
            after = ctx.reload_timeline().filter_actions(ROLLBACK)  # written by the rollback
            new = [i.requested_time for i in after if i.requested_time not in before]
            if new:
                ctx.confirm_completed(new[-1])
            return RollbackResult(instant, inst.action, new[-1] if new else None)
        raise UnsupportedError(f"cannot roll back a pending {inst.action} ({instant})")
    if inst.action not in DATA_ACTIONS:
        raise UnsupportedError(
            f"only commits, delta commits and replace commits can be rolled back, not a "
            f"{inst.action} ({instant})"
        )
    pending = [i.requested_time for i in tl.pending_writes()]
    if pending:
        raise TimelineError(
            f"cannot roll back {instant} while writes are pending ({', '.join(pending)}); if "
            "their writers are gone, roll those back first (hudi-py rollback <path> <instant>)"
        )
    inst = tl.get(instant) or inst
    _check_rollback(ctx, tl, inst)
    return _rollback_completed(ctx, tl, inst)


def _resume_rollbacks(ctx: ServiceContext) -> list[str]:
    """Finish rollbacks a killed process left pending, with their own plans (the plan names
    log files that need a command block, which a fresh rollback would no longer find), before
    anything else is rolled back -- as the next writer does (pending writes are left alone).

    Returns:
        The instants whose rollback was finished (or withdrawn, if it had not started).
    """
    if not ctx.timeline().pending().filter_actions(ROLLBACK):
        return []
    try:
        return rollback_failed_writes(ctx.state, is_failed=lambda _ts: False)
    finally:
        ctx.reload_timeline()  # the rollbacks wrote and deleted instant files themselves


def _result_of(tl: Timeline, instant: str) -> RollbackResult:
    """The result of the completed rollback of ``instant``."""
    for r in reversed(tl.completed().filter_actions(ROLLBACK)):
        md = tl.read_rollback_metadata(r)
        if instant in md.rolled_back_instants:
            infos = [i for i in md.instants_rollback or [] if i.commit_time == instant]
            return RollbackResult(
                instant,
                infos[0].action if infos else "",
                r.requested_time,
                [f for pm in md.partition_metadata.values() for f in pm.success_delete_files],
                [f for pm in md.partition_metadata.values() for f in (pm.rollback_log_files or {})],
            )
    raise InstantNotFoundError(f"no instant {instant} on the timeline")


def _rollback_completed(ctx: ServiceContext, tl: Timeline, inst: Instant) -> RollbackResult:
    ts = inst.requested_time
    action = COMPACTION if tl.origin_action(ts) == COMPACTION else inst.action
    requests = _requests(ctx, tl, inst)
    plan = RollbackPlan(
        instant_to_rollback=InstantInfo(commit_time=ts, action=action),
        rollback_requests=requests,
        version=1,
    )
    req = ctx.new_instant(ROLLBACK, plan.to_bytes(), tl)
    writer = ctx.writer()
    writer.transition_to_inflight(req)
    crash_point("rollback")  # R pending, T untouched: the next writer withdraws R
    # the rollback point: T disappears for readers; it is now a pending instant
    completed = Instant(ts, inst.action, State.COMPLETED)
    ctx.storage.delete(writer.path_of(completed))
    crash_point("rollback")  # T pending, R inflight: resumed with R's plan
    # delete T's files, write command blocks, delete T's instant files, complete R (the
    # timeline listed again: T's completed file is gone, and execute_rollback writes R itself)
    execute_rollback(
        ctx.storage,
        ctx.config,
        ctx.reload_timeline(),
        ts,
        req.requested_time,
        ctx.state.before_complete,
    )
    # fenced as every completion under the lock: R withdrawn (back to inflight, resumed by
    # the next writer) if the lock was lost while it completed
    ctx.confirm_completed(req.requested_time)
    md = ctx.reload_timeline().read_rollback_metadata(req.requested_time)
    deleted = [f for pm in md.partition_metadata.values() for f in pm.success_delete_files]
    logs = [f for pm in md.partition_metadata.values() for f in (pm.rollback_log_files or {})]
    log.info("rolled back %s %s as %s", action, ts, req.requested_time)
    return RollbackResult(ts, action, req.requested_time, deleted, logs)


# -- savepoints ---------------------------------------------------------------------------------


def _last_retained(tl: Timeline) -> str | None:
    """The earliest commit the last clean kept (savepoints before it may miss files)."""
    cleans = [c for c in tl.filter_actions("clean") if c.is_completed]
    for c in reversed(cleans):
        e = tl.read_clean_metadata(c).earliest_commit_to_retain
        if e:
            return e
    return None


@under_table_lock
def create_savepoint(
    ctx: ServiceContext, instant: str | None = None, user: str | None = None, comment: str = ""
) -> str:
    """Savepoint ``instant`` (default: the latest completed commit).

    Returns:
        The savepointed instant time.

    Raises:
        InstantNotFoundError: not a completed commit on the active timeline.
        TimelineError: already savepointed, or older than what the cleaner retained.
    """
    ctx.require_writable("savepoint")
    tl = ctx.reload_timeline()  # a service run starts from a fresh listing
    if instant is None:
        last = tl.commits().last()
        if last is None:
            raise InstantNotFoundError("the table has no completed commit to savepoint")
        instant = last.requested_time
    inst = tl.get(instant)
    if inst is None or not inst.is_completed or inst.action not in DATA_ACTIONS:
        raise InstantNotFoundError(f"no completed commit {instant} on the active timeline")
    if any(sp.requested_time == instant and sp.is_completed for sp in tl.savepoints()):
        raise TimelineError(f"{instant} is already savepointed")
    # a savepoint left inflight by a killed process is completed by this call (its inflight
    # file is empty, as Hudi's; the metadata is computed again)
    kept = _last_retained(tl)
    if kept is not None and instant < kept:
        raise TimelineError(
            f"cannot savepoint {instant}: the cleaner only retained files from {kept} on"
        )
    table = ReadableTable(ctx.state)
    parts: dict[str, SavepointPartitionMetadata] = {}
    for s in table.file_slices(as_of=instant):
        pm = parts.setdefault(
            s.partition_path, SavepointPartitionMetadata(partition_path=s.partition_path)
        )
        if s.base_file is not None:
            pm.savepoint_data_file.append(s.base_file.name.name)
        pm.savepoint_data_file.extend(lf.name.name for lf in s.log_files)
    md = SavepointMetadata(
        savepointed_by=user or _user(),
        savepointed_at=int(time.time()),
        comments=comment,
        partition_metadata=parts,
        version=1,
    )
    writer = ctx.writer()
    inflight = Instant(instant, SAVEPOINT, State.INFLIGHT)
    ctx.storage.create_if_absent(writer.path_of(inflight))
    crash_point("savepoint")
    # layout 2 names the completed file T_C.savepoint, C its completion time (Hudi 1.x),
    # chosen after every instant time on the timeline as any completion time is
    done = writer.new_completion_time(instant) if ctx.layout == 2 else None
    completed = Instant(instant, SAVEPOINT, State.COMPLETED, done)
    ctx.still_locked(force=True)  # fenced as the completions of the other services
    ctx.storage.write_atomic(writer.path_of(completed), md.to_bytes())
    ctx.confirm_completed(completed)
    ctx.reload_timeline()  # the savepoint's files were written without a timeline writer
    log.info("savepointed %s", instant)
    return instant


def _user() -> str:
    try:
        return getpass.getuser()
    except Exception:  # pragma: no cover - no user database
        return "hudi_ds"


@under_table_lock
def delete_savepoint(ctx: ServiceContext, instant: str) -> None:
    """Delete the savepoint of ``instant`` (its files become cleanable again).

    Raises:
        InstantNotFoundError: no savepoint at ``instant``.
    """
    ctx.require_writable("savepoint")
    tl = ctx.reload_timeline()  # a service run starts from a fresh listing
    if not any(sp.requested_time == instant for sp in tl.savepoints()):
        raise InstantNotFoundError(f"no savepoint at {instant}")
    writer = ctx.writer()
    ctx.still_locked(force=True)
    for sp in tl.savepoints():  # the completed one first (layout 2: named with its completion)
        if sp.requested_time == instant and sp.is_completed:
            ctx.storage.delete(writer.path_of(sp))
    for state in (State.COMPLETED, State.INFLIGHT):
        ctx.storage.delete(writer.path_of(Instant(instant, SAVEPOINT, state)))
    ctx.reload_timeline()


# -- restore --------------------------------------------------------------------------------------


@under_table_lock
def restore(ctx: ServiceContext, savepoint: str) -> RestoreMetadata:
    """Restore the table to savepoint ``savepoint``: roll back every later instant, newest first.

    A restore interrupted by a crash is finished by running it again.

    Returns:
        The restore metadata (one rollback per instant undone).

    Raises:
        InstantNotFoundError: no completed savepoint at ``savepoint``.
        TimelineError: commits after the savepoint were archived (archival beyond savepoints).
    """
    ctx.require_writable("restore")
    tl = ctx.reload_timeline()  # a service run starts from a fresh listing
    _check_restorable(ctx, tl, savepoint)
    # a rollback killed inside an earlier attempt is finished first, with its own plan
    _resume_rollbacks(ctx)
    req, todo = _restore_instant(ctx, ctx.timeline(), savepoint)
    if req.is_requested:
        ctx.writer().transition_to_inflight(req)
    crash_point("restore")
    t0 = time.perf_counter()
    per_instant: dict[str, list[RollbackMetadata | None]] = {}
    infos: list[InstantInfo] = []
    items = sorted(todo.items(), reverse=True)  # newest first
    for k, (ts, action) in enumerate(items, start=1):
        ctx.still_locked()  # a restore that lost the lock stops; the next run resumes it
        infos.append(InstantInfo(commit_time=ts, action=action))
        per_instant[ts] = [_undo_instant(ctx, ts, action)]
        ctx.progress(k, len(items), f"restore to {savepoint}")
        crash_point("restore")
    md = RestoreMetadata(
        start_restore_time=req.requested_time,
        time_taken_in_millis=int((time.perf_counter() - t0) * 1000),
        instants_to_rollback=[i.commit_time for i in infos],
        hoodie_restore_metadata=per_instant,
        version=1,
        restore_instant_info=infos,
        extra_metadata=None,
    )
    ctx.complete(Instant(req.requested_time, RESTORE, State.INFLIGHT), md.to_bytes())
    log.info("restored to savepoint %s (%d instants rolled back)", savepoint, len(items))
    return md


def _check_restorable(ctx: ServiceContext, tl: Timeline, savepoint: str) -> None:
    """Refuse a restore to anything but a completed savepoint, or past archived commits.

    An archived commit cannot be rolled back: its files would stay, and count as committed
    again once a later commit starts the timeline after them. Java's restoreToSavepoint
    refuses whenever hoodie.archive.beyond.savepoint is set (HUDI-4501); here, when a commit
    after the savepoint actually was archived.

    Raises:
        InstantNotFoundError, TimelineError: as :func:`restore`.
    """
    if not any(sp.requested_time == savepoint and sp.is_completed for sp in tl.savepoints()):
        raise InstantNotFoundError(
            f"no savepoint at {savepoint}; savepoints: "
            f"{', '.join(sp.requested_time for sp in tl.savepoints()) or 'none'}"
        )
    tl_start = tl.start_time()
    if tl_start is None or savepoint >= tl_start:
        return
    archived = load_archived(
        ctx.storage,
        ctx.layout,
        ctx.config.timeline_path,
        archive_folder=ctx.config.archive_folder,
    )
    later = sorted(i.requested_time for i in archived.commits() if i.requested_time > savepoint)
    if later:
        raise TimelineError(
            f"cannot restore to savepoint {savepoint}: {len(later)} commit(s) after it were "
            f"archived (archival beyond savepoints, up to {later[-1]}) and cannot be rolled "
            "back"
        )


def _restore_instant(
    ctx: ServiceContext, tl: Timeline, savepoint: str
) -> tuple[Instant, dict[str, str]]:
    """The restore instant to savepoint ``savepoint`` -- an earlier attempt's pending one, or
    a new one with its plan -- and the instants it undoes (time -> action).

    These are what is after the savepoint now, plus (resuming) what the plan named and an
    earlier attempt already rolled back: the metadata lists every instant the restore undid.
    """
    pending = [
        r
        for r in tl.pending().filter_actions(RESTORE)
        if tl.read_restore_plan(r).savepoint_to_restore_timestamp == savepoint
    ]
    todo = {i.requested_time: _action(tl, i) for i in _instants_after(tl, savepoint)}
    if pending:
        req = pending[0]
        for info in tl.read_restore_plan(req).instants_to_rollback or []:
            if info.commit_time and info.commit_time not in todo:
                todo[info.commit_time] = info.action or ""
        return req, todo
    plan = RestorePlan(
        instants_to_rollback=[
            InstantInfo(commit_time=ts, action=a) for ts, a in sorted(todo.items(), reverse=True)
        ],
        version=2,
        savepoint_to_restore_timestamp=savepoint,
    )
    return ctx.new_instant(RESTORE, plan.to_bytes(), tl), todo


def _undo_instant(ctx: ServiceContext, ts: str, action: str) -> RollbackMetadata | None:
    """Undo instant ``ts`` (``action``) for a restore: roll it back, or, when an earlier
    interrupted attempt already did, find that rollback.

    Returns:
        The rollback's metadata (None: a compaction, whose plan is simply removed).
    """
    current = ctx.timeline()
    now = current.get(ts)
    if now is None:  # rolled back by an earlier, interrupted attempt
        return None if action == COMPACTION else _last_rollback_of(current, ts)
    if action == COMPACTION and not now.is_completed:
        if now.is_inflight:
            rollback_inflight_compaction(ctx, ts)
        ctx.writer().delete_instant_files(Instant(ts, COMPACTION, State.REQUESTED))
        return None
    if not now.is_completed:
        rollback_instant(ctx.state, ts)
        last = _last_rollback_instant(ctx.reload_timeline(), ts)
        if last is not None:
            ctx.confirm_completed(last)
        return _last_rollback_of(ctx.timeline(), ts)
    res = _rollback_completed(ctx, current, now)
    if not res.rollback_instant:
        return None
    return ctx.timeline().read_rollback_metadata(res.rollback_instant)


def _action(tl: Timeline, inst: Instant) -> str:
    return COMPACTION if tl.origin_action(inst.requested_time) == COMPACTION else inst.action


def _instants_after(tl: Timeline, savepoint: str) -> list[Instant]:
    out = [i for i in tl.filter_actions(*DATA_ACTIONS, COMPACTION) if i.requested_time > savepoint]
    return sorted(out, key=lambda i: i.requested_time, reverse=True)


def _last_rollback_instant(tl: Timeline, target: str) -> str | None:
    for r in reversed(tl.completed().filter_actions(ROLLBACK)):
        if target in tl.read_rollback_metadata(r).rolled_back_instants:
            return r.requested_time
    return None


def _last_rollback_of(tl: Timeline, target: str) -> RollbackMetadata | None:
    for r in reversed(tl.completed().filter_actions(ROLLBACK)):
        md = tl.read_rollback_metadata(r)
        if target in md.rolled_back_instants:
            return md
    return None
