"""Executing a rollback, and rolling back failed writes (Hudi's eager rollback).

:func:`execute_rollback` is the one procedure that undoes an instant T, as Hudi's
``BaseRollbackActionExecutor`` executes a rollback plan for both the write client's
``rollbackFailedWrites`` (here :func:`rollback_failed_writes`, :func:`rollback_instant`) and the
table-service rollback of a completed instant (:mod:`hudi_ds.services.rollback`, which also
restores to savepoints):

1. ``R.rollback.requested`` (an Avro ``HoodieRollbackPlan`` naming T and its files) -- written
   here for a failed write, by the caller for a completed instant (it plans the files from T's
   commit metadata), read back when a killed rollback is resumed;
2. every file T wrote is deleted -- the files its markers name, any base file carrying T in its
   name (our log files are never shared between instants, so they are deleted whole), and what
   the plan names; log files that also hold other instants' blocks get a ROLLBACK command block;
3. T's instant files and markers are deleted;
4. ``R.rollback`` (an Avro ``HoodieRollbackMetadata``) is completed.

Every step is idempotent: a crash anywhere leaves T (or R) pending, and the next writer repeats
the rollback. Readers never saw a failed T, since it never completed.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence

from hudi_ds.errors import ConcurrentWriterError
from hudi_ds.faults import crash_point
from hudi_ds.index.partition_bucket import delete_config
from hudi_ds.layout.naming import (
    file_name_of,
    file_path,
    log_file_name,
    parse_log_file_name,
    partition_of,
    relative_path,
)
from hudi_ds.log.reader import scan_log_bytes
from hudi_ds.log.writer import encode_rollback_command_block
from hudi_ds.storage import Storage
from hudi_ds.table.fs_view import FileSystemView
from hudi_ds.table_config import TableConfig
from hudi_ds.timeline.instant import (
    COMPACTION,
    MAX_INSTANT_AHEAD_MS,
    Instant,
    State,
    new_instant_time,
)
from hudi_ds.timeline.plans import (
    InstantInfo,
    RollbackMetadata,
    RollbackPartitionMetadata,
    RollbackPlan,
    RollbackRequest,
)
from hudi_ds.timeline.timeline import Timeline
from hudi_ds.timeline.view import TableState
from hudi_ds.timeline.writer import TimelineWriter
from hudi_ds.write.markers import delete_markers, marked_files

log = logging.getLogger("hudi_ds.write")

#: :attr:`TableState.before_complete` of the rolled-back table (the metadata table's writer)
BeforeComplete = Callable[[Instant, bytes], None] | None


def rollback_failed_writes(
    state: TableState,
    before: str | None = None,
    is_failed: Callable[[str], bool] | None = None,
    resume_if: Callable[[str], bool] | None = None,
) -> list[str]:
    """Roll back every pending write instant (and finish interrupted rollbacks).

    Works on the timeline ``state`` holds; when something was rolled back, the timeline is
    listed again and kept in ``state`` (Java reloads the active timeline after
    ``rollbackFailedWrites`` too).

    Args:
        state: the opened table.
        before: only instants requested before this time (a streaming commit keeps its own
            instant and anything newer).
        is_failed: only instants for which this returns True (multi-writer: the ones whose
            writer's heartbeat expired; a single writer: the ones whose writer is dead);
            default every pending write.
        resume_if: only the pending rollbacks whose target this returns True for (a single
            writer: not the rollback a live writer is running of its own write); default all.

    Returns:
        The instant times rolled back.
    """
    storage, config = state.storage, state.config
    timeline = state.timeline
    done = []
    resumed = False
    for r in timeline.pending().filter_actions("rollback"):
        target = _rollback_target(timeline, r)
        if before is not None and target is not None and target >= before:
            continue
        if resume_if is not None and target is not None and not resume_if(target):
            continue
        resumed = True
        if resume_rollback(storage, config, timeline, r, state.before_complete) and target:
            done.append(target)
    if resumed:
        timeline = state.reload_timeline()
    rolled = False
    for inst in timeline.pending_writes():
        if before is not None and inst.requested_time >= before:
            continue
        if is_failed is not None and not is_failed(inst.requested_time):
            continue  # a live writer's instant
        rolled = True
        if execute_rollback(
            storage, config, timeline, inst.requested_time, None, state.before_complete
        ):
            done.append(inst.requested_time)
    if rolled:
        state.reload_timeline()
    return done


def resume_rollback(
    storage: Storage,
    config: TableConfig,
    timeline: Timeline,
    r: Instant,
    before_complete: BeforeComplete = None,
) -> bool:
    """Finish the pending rollback ``r`` a killed process left, with its own plan.

    * its target is a pending write: the rollback is repeated (idempotent steps);
    * its target is a pending compaction or clustering (a failed attempt's rollback, or a
      rollback of a completed compaction killed past its rollback point): the attempt's files
      are deleted and it goes back to requested -- its plan stays, since log files written on top
      of it are named after it (Hudi leaves these rollbacks to the compactor too:
      ``getPendingRollbackInfos(..., ignoreCompactionAndClusteringInstants)``);
    * its target is completed (killed before the rollback point): ``r`` is withdrawn;
    * its target is gone (killed just before completing): ``r`` is completed.

    Returns:
        False if ``r`` was withdrawn (nothing was undone), True otherwise.
    """
    layout = config.timeline_layout_version
    target = _rollback_target(timeline, r)
    inst = timeline.get(target) if target is not None else None
    if inst is not None and not inst.is_completed:
        if inst.action == COMPACTION or timeline.is_clustering(inst):
            # a table service's attempt: undone, its plan kept for the service to run again
            _revert_compaction_attempt(
                storage, config, timeline, inst, r.requested_time, before_complete
            )
        else:
            execute_rollback(
                storage, config, timeline, inst.requested_time, r.requested_time, before_complete
            )
    elif inst is not None:
        TimelineWriter(storage, layout, config.timeline_path).delete_instant_files(r)
        return False
    else:
        _finish_rollback(
            storage, layout, config, r.requested_time, target, {}, before_complete=before_complete
        )
    return True


def rollback_of(timeline: Timeline, instant: str) -> Instant | None:
    """A rollback (pending or completed) whose plan targets ``instant``, if any: only rollbacks
    requested after ``instant`` are read."""
    for r in timeline.filter_actions("rollback"):
        if r.requested_time > instant and _rollback_target(timeline, r) == instant:
            return r
    return None


def pending_rollback_targets(timeline: Timeline) -> set[str]:
    """The instants the pending rollbacks on ``timeline`` target (a killed rollback, or one
    under way in another process)."""
    targets = (_rollback_target(timeline, r) for r in timeline.pending().filter_actions("rollback"))
    return {t for t in targets if t is not None}


def rollback_target(timeline: Timeline, r: Instant) -> str | None:
    """The instant the plan of rollback ``r`` targets (None if its plan cannot be read)."""
    return _rollback_target(timeline, r)


def pending_rollback_of(timeline: Timeline, instant: str) -> Instant | None:
    """The pending rollback whose plan targets ``instant``, if a killed process left one."""
    return rollback_of(timeline.pending(), instant)


def _delete(storage: Storage, f: str) -> bool:
    """Delete planned file ``f``; True when it is gone afterwards. A file already gone counts as
    deleted: a rollback resumed after a crash finds the first attempt's deletes done, and its
    metadata (hence the MDT's tombstones) must still name them (Java
    ``BaseRollbackHelper.deleteFiles``: a FileNotFoundException counts as deleted, "if first
    rollback attempt failed and retried again, chances that some files are already deleted")."""
    return storage.delete(f) or not storage.exists(f)


def _delete_markers(storage: Storage, instant: str, attempts: int = 3) -> None:
    """Delete ``instant``'s marker folder. A writer taken for failed may still be adding
    markers (it was stopped past its heartbeat's expiry, then went on): the folder is
    deleted again; a writer that keeps adding is refused with a clear error.

    Raises:
        ConcurrentWriterError: the folder could not be deleted ``attempts`` times.
    """
    for n in range(attempts):
        try:
            delete_markers(storage, instant)
            return
        except OSError as e:
            if n == attempts - 1:
                raise ConcurrentWriterError(
                    f"could not roll back instant {instant}: its writer, taken for failed, is "
                    f"still writing files ({e}); it will not commit them -- retry. Several "
                    "writers need hoodie.write.concurrency.mode=optimistic_concurrency_control"
                ) from e


def _revert_compaction_attempt(
    storage: Storage,
    config: TableConfig,
    timeline: Timeline,
    inst: Instant,
    rollback_time: str,
    before_complete: BeforeComplete = None,
) -> None:
    ts = inst.requested_time
    logs = not timeline.is_clustering(inst)
    files = set(_files_of(storage, config, ts, logs)) | set(
        plan_requests(storage, timeline, rollback_time)[0]
    )
    deleted: dict[str, list[str]] = {}
    for f in sorted(files):
        if _delete(storage, f):
            deleted.setdefault(partition_of(f), []).append(f)
    delete_markers(storage, ts)
    writer = TimelineWriter(storage, config.timeline_layout_version, config.timeline_path)
    if inst.is_inflight:
        writer.revert_to_requested(inst)
    _finish_rollback(
        storage,
        config.timeline_layout_version,
        config,
        rollback_time,
        ts,
        deleted,
        inst.action,
        before_complete=before_complete,
    )
    log.info("rolled back the failed attempt of %s %s (resumed)", inst.action, ts)


def rollback_instant(state: TableState, instant: str) -> bool:
    """Roll back the pending write ``instant``; a completed instant is left alone.

    The timeline is listed afresh first (a rollback runs under the table lock, after other
    writers' changes) and again after a rollback, both kept in ``state``.

    Returns:
        True if something was rolled back.
    """
    storage, config = state.storage, state.config
    timeline = state.reload_timeline()
    inst = timeline.get(instant)
    if inst is not None and inst.is_completed:
        log.warning("not rolling back %s: it is already completed", instant)
        return False
    if inst is None and not marked_files(storage, instant):
        return False
    if inst is not None and not _files_of(storage, config, instant):
        # it wrote nothing (e.g. its input was refused): just withdraw the instant
        delete_config(storage, instant)  # (a rescale's rules go first, see execute_rollback)
        state.timeline_writer().delete_instant_files(inst)
        delete_markers(storage, instant)
        return True
    execute_rollback(storage, config, timeline, instant, None, state.before_complete)
    state.reload_timeline()
    return True


def _rollback_target(timeline: Timeline, r: Instant) -> str | None:
    try:
        plan = timeline.read_rollback_plan(r)
    except Exception:  # an empty or torn plan: nothing we can trust
        return None
    info = plan.instant_to_rollback
    return info.commit_time if info is not None else None


def _files_of(storage: Storage, config: TableConfig, instant: str, logs: bool = True) -> list[str]:
    """``logs``: also the layout 2 log files named after ``instant`` (not for an attempt of a
    clustering, which writes base files only: logs named after a pending resize are the
    copies its concurrent writers made, :mod:`hudi_ds.index.pending_resize`)."""
    files = set(marked_files(storage, instant))
    view = FileSystemView(storage, config)
    for p in view.partitions():
        for g in view.file_groups(p):
            for b in g.base_files:
                if b.instant_time == instant:
                    files.add(b.path)
            for lf in g.log_files:
                if logs and config.timeline_layout_version >= 2 and lf.instant_time == instant:
                    files.add(lf.path)
    return sorted(files)


def rollback_plan(
    instant: str,
    action: str,
    files: Iterable[str],
    full_path: Callable[[str], str] = str,
    layout: int = 1,
) -> RollbackPlan:
    """The ``HoodieRollbackPlan`` (version 1) that deletes ``files`` (paths relative to the table,
    recorded as ``full_path`` makes them) of ``instant``, one request per partition. On timeline
    layout 2 a request is written as Hudi 1.x writes one for a failed write (marker based:
    ``fileId`` and ``latestBaseInstant`` empty strings, an empty ``logBlocksToBeDeleted``)."""
    by_partition: dict[str, list[str]] = {}
    for f in sorted(files):
        by_partition.setdefault(partition_of(f), []).append(full_path(f))
    java = layout == 2
    return RollbackPlan(
        instant_to_rollback=InstantInfo(commit_time=instant, action=action),
        rollback_requests=[
            RollbackRequest(
                partition_path=p,
                file_id="" if java else None,
                latest_base_instant="" if java else None,
                files_to_be_deleted=fs,
                log_blocks_to_be_deleted={} if java else None,
            )
            for p, fs in sorted(by_partition.items())
        ],
        version=1,
    )


def execute_rollback(
    storage: Storage,
    config: TableConfig,
    timeline: Timeline,
    instant: str,
    rollback_time: str | None,
    before_complete: BeforeComplete = None,
) -> bool:
    """Undo ``instant``: delete the files it wrote, its instant files and markers; complete R.

    The one rollback procedure (Hudi: ``BaseRollbackActionExecutor.execute``), for a failed
    write and for a completed instant alike. The files to delete are found again (markers, base
    files carrying ``instant`` in their name, and on layout 2 log files carrying it); a plan
    adds what it names, and the log files its ``logBlocksToBeDeleted`` names get a ROLLBACK
    command block (:func:`append_rollback_blocks`).

    Args:
        storage: the table's storage.
        config: its ``hoodie.properties``.
        timeline: the active timeline, as recent as the caller's last transition.
        instant: the instant T to roll back; pending by now (a completed T's completed file is
            deleted by the caller first -- its rollback point) or already gone.
        rollback_time: the rollback instant R whose plan to execute (a table-service rollback,
            or a killed rollback being resumed); None plans a new R here for a failed write
            (``R.rollback.requested`` naming T's files, then inflight).
        before_complete: the table state's hook, called before R completes (the metadata
            table mirrors R: :attr:`TableState.before_complete`).

    Returns:
        True; False when a new R found ``instant`` completed after all (its writer was not
        dead, only slow: it committed before R was written) -- R is withdrawn, nothing is
        deleted.
    """
    layout = config.timeline_layout_version
    writer = TimelineWriter(storage, layout, config.timeline_path)
    target = timeline.get(instant)
    action = target.action if target is not None else "deltacommit"
    files = _files_of(storage, config, instant)
    command_logs: dict[str, int] = {}
    if rollback_time is not None:  # resuming: the plan also names what was found back then
        planned, command_logs = plan_requests(storage, timeline, rollback_time)
        files = sorted(set(files) | set(planned))
    if rollback_time is None:
        last = timeline.latest_time()
        for _ in range(100):
            rollback_time = new_instant_time(after=last, max_ahead_ms=MAX_INSTANT_AHEAD_MS)
            full_path = storage.uri if layout == 2 else str
            plan = rollback_plan(instant, action, files, full_path, layout)
            req = Instant(rollback_time, "rollback", State.REQUESTED)
            if writer.create_requested(req, plan.to_bytes()):
                writer.transition_to_inflight(req)
                break
            last = rollback_time
        assert rollback_time is not None
        if target is not None and writer.is_completed(target):
            # R is written first, then the target is looked at again; a writer that completes
            # its instant looks for a rollback afterwards (the single writer's commit, through
            # its writer record): one of the two sees the other, and no completed instant
            # loses its files
            writer.delete_instant_files(Instant(rollback_time, "rollback", State.INFLIGHT))
            log.warning("not rolling back %s: its writer completed it meanwhile", instant)
            return False
    assert rollback_time is not None
    deleted: dict[str, list[str]] = {}
    for n, f in enumerate(files):
        if n == len(files) // 2:
            crash_point("rollback")
        if _delete(storage, f):
            deleted.setdefault(partition_of(f), []).append(f)
    appended = append_rollback_blocks(storage, rollback_time, instant, command_logs)
    # a bucket rescale's rules before its instant (Java rollbackHashingConfig): a config
    # without a pending instant would pass for committed
    delete_config(storage, instant)
    writer.delete_instant_files(target if target is not None else instant)
    _delete_markers(storage, instant)
    _finish_rollback(
        storage, layout, config, rollback_time, instant, deleted, action, appended, before_complete
    )
    log.info("rolled back %s (%d files)", instant, sum(len(v) for v in deleted.values()))
    return True


def attempt_rollback_metadata(
    storage: Storage,
    rollback_time: str,
    instant: str,
    action: str,
    deleted: Sequence[str],
    millis: int,
) -> RollbackMetadata:
    """The metadata of the rollback of a service's failed attempt (a compaction's or a
    clustering's, then planned again): ``deleted``, the attempt's files, by partition."""
    parts: dict[str, RollbackPartitionMetadata] = {}
    for f in deleted:
        p = partition_of(f)
        parts.setdefault(p, RollbackPartitionMetadata(partition_path=p))
        parts[p].success_delete_files.append(storage.uri(f))
    return RollbackMetadata(
        start_rollback_time=rollback_time,
        time_taken_in_millis=millis,
        total_files_deleted=len(deleted),
        commits_rollback=[instant],
        partition_metadata=parts,
        version=1,
        instants_rollback=[InstantInfo(commit_time=instant, action=action)],
    )


def _finish_rollback(
    storage: Storage,
    layout: int,
    config: TableConfig,
    rollback_time: str,
    target: str | None,
    deleted: dict[str, list[str]],
    action: str = "deltacommit",
    appended: dict[str, int] | None = None,
    before_complete: BeforeComplete = None,
) -> None:
    writer = TimelineWriter(storage, layout, config.timeline_path, before_complete=before_complete)
    logs_by_partition: dict[str, dict[str, int]] = {}
    for path, size in (appended or {}).items():
        logs_by_partition.setdefault(partition_of(path), {})[path] = size
    md = RollbackMetadata(
        start_rollback_time=rollback_time,
        time_taken_in_millis=0,
        total_files_deleted=sum(len(v) for v in deleted.values()),
        commits_rollback=[target] if target else [],
        partition_metadata={
            p: RollbackPartitionMetadata(
                partition_path=p,
                success_delete_files=deleted.get(p, []),
                rollback_log_files=logs_by_partition.get(p, {} if layout == 2 else None),
                log_files_from_failed_commit={} if layout == 2 else None,
            )
            for p in sorted(set(deleted) | set(logs_by_partition))
        },
        version=1,
        instants_rollback=[InstantInfo(commit_time=target, action=action)] if target else [],
    )
    inst = Instant(rollback_time, "rollback", State.INFLIGHT)
    timeline = Timeline.load(storage, layout, config.timeline_path)
    current = timeline.get(rollback_time)
    if current is not None and current.state == State.REQUESTED:
        writer.transition_to_inflight(current)
    writer.complete(inst, md.to_bytes())


def plan_requests(
    storage: Storage, timeline: Timeline, rollback_time: str
) -> tuple[list[str], dict[str, int]]:
    """What the plan of rollback ``rollback_time`` asks for: files to delete, and log files whose
    blocks of the target must be invalidated by a rollback command block (relative paths)."""
    try:
        plan = timeline.read_rollback_plan(rollback_time)
    except Exception:  # no plan, or an empty or torn one: nothing to add
        return [], {}
    files: list[str] = []
    logs: dict[str, int] = {}
    for req in plan.rollback_requests or []:
        for f in req.files_to_be_deleted or []:
            files.append(relative_path(storage, f, req.partition_path))
        for f, size in (req.log_blocks_to_be_deleted or {}).items():
            logs[relative_path(storage, f, req.partition_path)] = size
    return files, logs


def append_rollback_blocks(
    storage: Storage, rollback_time: str, target: str, log_files: dict[str, int]
) -> dict[str, int]:
    """Invalidate ``target``'s blocks in log files that also hold other instants' blocks.

    Such a file cannot be deleted; as Hudi 0.x does, a ROLLBACK command block
    (``TARGET_INSTANT_TIME=target``) is written -- into a new log file of the same file slice
    (the next version), since hudi_ds never appends to an existing file. Readers drop every
    earlier block of ``target`` in the slice. A file whose command block already exists (a
    resumed rollback) is skipped.

    Returns:
        The written command-block files (relative paths) and their sizes.
    """
    out: dict[str, int] = {}
    for path in sorted(log_files):
        parsed = parse_log_file_name(file_name_of(path))
        if parsed is None:
            continue
        partition = partition_of(path)
        siblings = [
            (f, parse_log_file_name(f.name))
            for f in storage.list_files(partition)
            if f.name.startswith(f".{parsed.file_id}_{parsed.instant_time}.log.")
        ]
        done = False
        top = 0
        for f, sib in siblings:
            if sib is None:
                continue
            top = max(top, sib.version)
            if sib.version > parsed.version and f.size < 4096:
                for b in scan_log_bytes(storage.read_bytes(f.path), f.path).blocks:
                    if b.is_rollback_command and b.target_instant_time == target:
                        done = True
        if done:
            continue
        block = encode_rollback_command_block(rollback_time, target)
        new_name = log_file_name(parsed.file_id, parsed.instant_time, top + 1, "0-0-0")
        rel = file_path(partition, new_name)
        storage.write_bytes(rel, block)
        out[rel] = len(block)
    return out
