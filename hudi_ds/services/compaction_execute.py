"""Executing a compaction plan: the attempt and its identity, the job, each operation's merge into a
new base file, the completion, and the rollback of an attempt."""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import pyarrow as pa

from hudi_ds.config import WriteConfig
from hudi_ds.errors import (
    AttemptRolledBackError,
    CorruptFileError,
    HudiError,
    InstantNotFoundError,
    MissingFileError,
)
from hudi_ds.faults import crash_point
from hudi_ds.index.simple import open_base_file
from hudi_ds.layout.base_file import write_whole_base_file
from hudi_ds.layout.bloom_filter import BLOOM_FILTER_FOOTER, BloomFilter, BloomFilterSpec
from hudi_ds.layout.file_group import BaseFile, FileSlice, LogFile
from hudi_ds.layout.naming import (
    base_file_name,
    file_name_of,
    file_path,
    parse_base_file_name,
    parse_log_file_name,
)
from hudi_ds.schema.avro import avro_to_arrow_schema
from hudi_ds.schema.meta import FILENAME_METADATA_FIELD, clear_meta_values, with_meta_fields
from hudi_ds.services.base import ServiceContext
from hudi_ds.storage import Storage
from hudi_ds.table.committed import Committed, visible_commits
from hudi_ds.table.fs_view import FileSystemView
from hudi_ds.table.reader import ReadStats, SliceReadContext, read_file_slice
from hudi_ds.table.table import ReadableTable
from hudi_ds.table_config import BaseFileFormat
from hudi_ds.timeline.instant import COMPACTION, ROLLBACK, Instant, State
from hudi_ds.timeline.metadata import CommitMetadata, RuntimeStats, WriteStat
from hudi_ds.timeline.plans import (
    CompactionOperation,
)
from hudi_ds.timeline.timeline import Timeline
from hudi_ds.timeline.view import Visibility
from hudi_ds.write import cow_merge
from hudi_ds.write.cow_merge import carried_bloom_filter
from hudi_ds.write.markers import (
    create_marker,
    delete_markers,
    delete_markers_quietly,
    marked_files,
    marker_dir,
)
from hudi_ds.write.rollback_executor import (
    attempt_rollback_metadata,
    pending_rollback_of,
    resume_rollback,
    rollback_plan,
    rollback_target,
)

log = logging.getLogger("hudi_ds.services")


#: how often (seconds) an attempt checks that it is still the live one while it writes base
#: files (:meth:`CompactionAttempt.check_soon`)
ATTEMPT_CHECK_EVERY_S = 1.0


#: (instant, attempt number) -> when this process last found that attempt live (monotonic;
#: None once found rolled back)
_checked_at: dict[tuple[str, int], float | None] = {}


@dataclass(frozen=True)
class CompactionAttempt:
    """One attempt at executing compaction C, told apart from every other attempt of C.

    A failed or stalled attempt is rolled back and the plan executed again *with the same
    instant time* (Hudi's ``BaseHoodieTableServiceClient`` rolls an inflight compaction back
    before executing it again), so "C is inflight" does not say whose attempt runs. An attempt
    is identified by the rollback instants on the timeline when it began (under the table
    lock, right after C went inflight): a rollback of C is planned under the lock with a new
    instant time, so an attempt was rolled back exactly when a rollback targeting C that it
    did not know of is on the timeline, pending or completed. C completed (by another
    attempt), unscheduled, or back to requested tell the same. Hudi keeps no such identity
    (RFC-79 guards executions of one plan with the compaction's heartbeat, taken under the
    lock; an attempt paused past its heartbeat that goes on is not checked again).

    Attributes:
        instant: the compaction instant C.
        number: how many attempts of C were rolled back before this one (part of its write
            tokens: the files of two attempts never share a name).
        known_rollbacks: the rollback instants on the timeline when this attempt began.
        layout: the timeline layout version.
        timeline_path: the table's timeline path (``hoodie.timeline.path``).
    """

    instant: str
    number: int
    known_rollbacks: frozenset[str]
    layout: int
    timeline_path: str | None = None

    @classmethod
    def begin(cls, ctx: ServiceContext, instant: str, number: int) -> CompactionAttempt:
        """The attempt that just moved ``instant`` to inflight (under the table lock)."""
        tl = ctx.reload_timeline()
        return cls(
            instant,
            number,
            frozenset(r.requested_time for r in tl.filter_actions(ROLLBACK)),
            ctx.layout,
            ctx.config.timeline_path,
        )

    def problem(self, tl: Timeline) -> str | None:
        """Why this attempt is no longer the live one on timeline ``tl`` (None: it is)."""
        c = self.instant
        inst = tl.get(c)
        if inst is not None and inst.is_completed:
            return f"compaction {c} was completed by another attempt meanwhile"
        for r in tl.filter_actions(ROLLBACK):
            t = r.requested_time
            if t > c and t not in self.known_rollbacks and rollback_target(tl, r) == c:
                return f"rollback {t} of another process rolled this attempt of compaction {c} back"
        if inst is None or inst.action != COMPACTION:
            return f"compaction {c} was unscheduled meanwhile"
        if not inst.is_inflight:
            return f"compaction {c} was rolled back to requested meanwhile"
        return None

    def check(self, storage: Storage, tl: Timeline | None = None) -> None:
        """Raise unless this attempt is still the live one (``tl``: the timeline just listed
        under the table lock; default: listed here).

        Raises:
            AttemptRolledBackError: another process rolled this attempt back (or completed or
                unscheduled C); the message says which.
        """
        tl = tl if tl is not None else Timeline.load(storage, self.layout, self.timeline_path)
        problem = self.problem(tl)
        if problem is not None:
            raise AttemptRolledBackError(
                f"{problem} (this attempt's heartbeat had expired: the process was paused, or "
                "could not beat every hoodie.client.heartbeat.interval_in_ms). This attempt "
                "stopped and completed nothing; the files it wrote are removed. Nothing to do: "
                f"compaction {self.instant} is completed by the attempt that rolled this one "
                "back (or by the next `hudi-py compact run`)"
            )

    def check_soon(self, storage: Storage) -> None:
        """:meth:`check`, at most every :data:`ATTEMPT_CHECK_EVERY_S` in this process -- and at
        once after the process was paused --: each check lists the timeline, and a plan may
        have thousands of operations. The check before completing is never skipped.

        Raises:
            AttemptRolledBackError: see :meth:`check`.
        """
        key = (self.instant, self.number)
        now = time.monotonic()
        last = _checked_at.get(key, float("-inf"))
        if last is not None and now - last < ATTEMPT_CHECK_EVERY_S:
            return
        try:
            self.check(storage)  # once found rolled back (None), always checked: it raises
        except AttemptRolledBackError:
            _checked_at[key] = None
            raise
        _checked_at[key] = time.monotonic()

    def owns(self, rel: str) -> bool:
        """Whether file ``rel`` was written by this attempt (its write token's middle field is
        the attempt: ``<task>-<number + 1>-<task attempt>``)."""
        parsed = parse_base_file_name(file_name_of(rel))
        if parsed is None or parsed.instant_time != self.instant:
            return False
        parts = parsed.write_token.split("-")
        return len(parts) == 3 and parts[1] == str(self.number + 1)


def attempt_token(job: CompactionJob, task: int, task_attempt: int) -> str:
    """The write token of a base file of ``job``: ``<task>-<attempt + 1>-<task attempt>`` (the
    attempt in the middle, so :meth:`CompactionAttempt.owns` tells its files)."""
    return f"{int(task)}-{job.attempt + 1}-{int(task_attempt)}"


def _discard(storage: Storage, instant: str, paths: Sequence[str]) -> None:
    """Delete files this attempt wrote and their markers (never the marker folder: a live
    attempt of the same instant keeps its markers there)."""
    for rel in paths:
        storage.delete(rel)
        for kind in ("CREATE", "MERGE", "APPEND"):
            storage.delete(f"{marker_dir(instant)}/{rel}.marker.{kind}")


@dataclass(frozen=True)
class CompactionJob:
    """What executing the operations of compaction ``instant`` needs (small, picklable).

    Attributes:
        storage: the table's storage.
        instant: the compaction instant C.
        operations: the plan's operations, in plan order.
        visibility: the instants whose log blocks count (completed before C).
        context: merge context (schema as of C, keys, ordering field, merge mode).
        codec: Parquet codec of the new base files.
        base_format: the format of the new base files (the table's).
        bloom: the bloom filter of the new base files (None: a table without meta fields).
        attempt: attempt number (part of the write tokens, so retries never clash).
        fence: the attempt's identity, checked before and after each base file is written
            (None: no check -- a job built outside :func:`run_compaction`).
        key_changes: when not None (:attr:`ServiceContext.track_keys
            <hudi_ds.services.base.ServiceContext.track_keys>`), each operation run in this
            process puts here, by its new base file's path, the record keys that file adds to
            its file group and drops from it (inserted, removed); a job run elsewhere (Spark
            tasks) reports none.
    """

    storage: Storage
    instant: str
    operations: tuple[CompactionOperation, ...]
    visibility: Visibility
    context: SliceReadContext
    codec: str
    bloom: BloomFilterSpec | None
    attempt: int = 0
    base_format: BaseFileFormat = BaseFileFormat.PARQUET
    key_changes: dict[str, tuple[pa.Array, pa.Array]] | None = field(
        default=None, compare=False, hash=False
    )
    fence: CompactionAttempt | None = None


@dataclass
class CompactionResult:
    """What a completed compaction did.

    Attributes:
        instant: the compaction instant (completed as ``C.commit``).
        operations: file slices compacted.
        rows: rows written into the new base files.
        bytes_written: size of the new base files.
        log_files: log files compacted.
        seconds: wall time of the execution (without scheduling).
        stats: the write stats of the new base files.
        key_changes: by new base file path, (inserted, removed) record keys against the
            slice's base file (:attr:`CompactionJob.key_changes`; empty unless asked for).
    """

    instant: str
    operations: int = 0
    rows: int = 0
    bytes_written: int = 0
    log_files: int = 0
    seconds: float = 0.0
    stats: list[WriteStat] = field(default_factory=list)
    key_changes: dict[str, tuple[pa.Array, pa.Array]] = field(default_factory=dict)

    @property
    def rows_per_second(self) -> float:
        return self.rows / self.seconds if self.seconds > 0 else 0.0


def _schema_before(tl: Timeline, instant: str, table: ReadableTable) -> pa.Schema:
    for inst in reversed(tl.commits()):
        if inst.requested_time >= instant:
            continue
        schema = tl.read_commit_metadata(inst).schema
        if schema:
            # the meta columns even without meta fields: Java's compaction writes them
            # (HoodieWriteHandle.writeSchemaWithMetaFields), with null values then
            return with_meta_fields(avro_to_arrow_schema(schema))
    return with_meta_fields(table.schema) if len(table.schema) else table.schema


def prepare_compaction(ctx: ServiceContext, instant: str, attempt: int = 0) -> CompactionJob:
    """Read the plan of pending compaction ``instant`` and build its job (driver side).

    Raises:
        InstantNotFoundError: no pending compaction ``instant``.
    """
    tl = ctx.timeline()
    inst = tl.get(instant)
    if inst is None or inst.is_completed or inst.action != COMPACTION:
        raise InstantNotFoundError(f"no pending compaction {instant} on the timeline")
    plan = tl.read_compaction_plan(instant)
    table = ReadableTable(ctx.state, ctx.options.raw)  # options may name CUSTOM merger classes
    vis = table.visibility(as_of=instant)
    base_ctx = table.read_context()
    # committed byte ranges of the plan's log files: a corrupt block inside them is an error
    layout2 = table.config.timeline_layout_version >= 2
    committed = Committed.load(tl, visible_commits(tl, vis), layout2).log_ranges()
    ranges = {
        rel: committed[rel]
        for op in plan.operations or ()
        for rel in op.log_file_rel_paths
        if rel in committed
    }
    read_ctx = dataclasses.replace(
        base_ctx, schema=_schema_before(tl, instant, table), log_ranges=ranges
    )
    return CompactionJob(
        storage=ctx.storage,
        instant=instant,
        operations=tuple(plan.operations or ()),
        visibility=vis,
        context=read_ctx,
        codec=ctx.options.get(WriteConfig.PARQUET_CODEC),
        bloom=ctx.base_file_bloom(table.config),
        attempt=attempt,
        base_format=table.config.base_file_format,
        # the keys a state index holds are the files' _hoodie_record_key values: tracked only
        # where the compaction writes them
        key_changes={} if ctx.track_keys and read_ctx.populate_meta_fields else None,
    )


def _slice_of(storage: Storage, op: CompactionOperation) -> FileSlice:
    partition = op.partition_path or ""
    fid = op.file_id or ""

    def info(rel: str) -> int:
        fi = storage.info(rel)
        if fi is None:
            raise MissingFileError(
                f"compaction needs {storage.full_path(rel)}, which does not exist", rel
            )
        return fi.size

    base = None
    if op.data_file_path:
        rel = op.base_file_rel_path or ""
        parsed = parse_base_file_name(file_name_of(rel))
        if parsed is None:
            raise CorruptFileError(f"compaction plan names a bad base file {rel!r}")
        base = BaseFile(rel, parsed, info(rel))
    logs = []
    for rel in op.log_file_rel_paths:
        parsed_log = parse_log_file_name(file_name_of(rel))
        if parsed_log is None:
            raise CorruptFileError(f"compaction plan names a bad log file {rel!r}")
        logs.append(LogFile(rel, parsed_log, info(rel)))
    fs = FileSlice(partition, fid, op.base_instant_time or "", base, logs)
    fs.log_files = fs.sorted_log_files()
    return fs


def execute_operation(job: CompactionJob, index: int, token: str | None = None) -> WriteStat:
    """Compact one file slice of the plan into a new base file (runs on executors).

    Args:
        job: the prepared job.
        index: position of the operation in ``job.operations`` (part of the write token).
        token: the write token of the new base file (default
            ``attempt_token(job, index, index)``; the Spark runner passes one with the task
            attempt's ids, so retried tasks never clash -- its middle field must be the
            compaction attempt, :func:`attempt_token`).

    Raises:
        AttemptRolledBackError: the attempt was rolled back by another process (checked
            before and after the base file is written; a file written after the rollback
            is deleted here).

    Returns:
        The write stat of the new base file.
    """
    op = job.operations[index]
    storage = job.storage
    t0 = time.perf_counter()
    fslice = _slice_of(storage, op)
    stats = ReadStats()
    # the old base file's footer filter, to carry into the new file (None: built anew)
    footer = _carriable_footer(storage, fslice.base_file) if job.bloom is not None else None
    changes: list[tuple[pa.Array, pa.Array]] | None = (
        [] if job.key_changes is not None or footer is not None else None
    )
    # every column but _hoodie_file_name, which the new file sets anew: neither decoded from
    # the slice nor carried through the merge
    schema = job.context.schema
    idx = schema.get_field_index(FILENAME_METADATA_FIELD)
    columns = None if idx < 0 else [n for n in schema.names if n != FILENAME_METADATA_FIELD]
    rows = read_file_slice(
        storage, fslice, job.visibility, job.context, stats, columns, key_changes=changes
    )
    t_scan = time.perf_counter() - t0
    token = token or attempt_token(job, index, index)
    name = base_file_name(fslice.file_id, token, job.instant, job.base_format.extension)
    rel = file_path(fslice.partition_path, name)
    if idx >= 0:
        rows = rows.add_column(
            idx, schema.field(idx), pa.repeat(pa.scalar(name, pa.string()), rows.num_rows)
        )
    if not job.context.populate_meta_fields:
        rows = clear_meta_values(rows, file_name=True)  # as HoodieMergeHandle.writeToFile
    fence = job.fence
    _mark(job, rel)
    t1 = time.perf_counter()
    carried = _carried(job.bloom, footer, changes)
    size = write_whole_base_file(job.base_format, storage, rel, rows, job.codec, job.bloom, carried)
    crash_point("compaction")
    if fence is not None:
        # A rollback that began after the check above may have listed the markers before
        # this one existed, or deleted the file before it was whole: the file is this
        # attempt's to delete then -- here, or (a check skipped) when a later check or the
        # completion finds the rollback (_stop_rolled_back). A rollback that a check does
        # not see yet lists the markers after it became visible, so it finds this marker.
        try:
            fence.check_soon(storage)
        except AttemptRolledBackError:
            _discard(storage, job.instant, [rel])
            raise
    t_write = time.perf_counter() - t1
    if changes and job.key_changes is not None:
        job.key_changes[rel] = changes[0]
    return _compacted_stat(op, fslice, rel, rows.num_rows, size, stats, t_scan, t_write)


def _mark(job: CompactionJob, rel: str) -> None:
    """The CREATE marker of base file ``rel``, made while the attempt is the live one."""
    fence = job.fence
    if fence is not None:
        fence.check_soon(job.storage)  # rolled back meanwhile: write nothing more
    try:
        create_marker(job.storage, job.instant, rel, "CREATE")
    except FileNotFoundError:
        # a rollback of this attempt deleted the marker folder while the marker was made
        if fence is not None:
            fence.check(job.storage)
        raise


def _carried(
    bloom: BloomFilterSpec | None,
    footer: tuple[dict[bytes, bytes], int] | None,
    changes: list[tuple[pa.Array, pa.Array]] | None,
) -> BloomFilter | None:
    """The new base file's filter carried from the old one's ``footer`` (its metadata and row
    count) given the slice's key ``changes``; None: built anew."""
    if bloom is None or footer is None or not changes:
        return None
    inserted, removed = changes[0]
    return carried_bloom_filter(footer[0], bloom, footer[1], inserted, len(removed))


def _carriable_footer(
    storage: Storage, base: BaseFile | None
) -> tuple[dict[bytes, bytes], int] | None:
    """The key-value footer and row count of a slice's base file, whose bloom filter the new
    base file may carry (:func:`~hudi_ds.write.cow_merge.carried_bloom_filter`: the keys the
    compaction adds hashed instead of every key, as the COW merge handle does); None: no base
    file, too few rows to be worth it, no filter, or a file that does not open (the read of
    the slice reports that).

    The compaction writes the base rows it keeps first, in the file's order, then the merged
    and inserted ones (:func:`~hudi_ds.table.reader.read_file_slice`): with nothing removed
    the carried filter is a fresh one's, but for the updated keys, which stay in the rows
    they were added to rather than move to the end -- every row still holds as many keys as
    a fresh filter's. With keys removed it is the bounded superset that function describes.
    """
    if base is None:
        return None
    try:
        with open_base_file(storage, base) as f:
            if f.num_rows < max(1, cow_merge.MIN_CARRIED_KEYS):
                return None
            meta = f.footer()
    except (HudiError, OSError, ValueError):
        return None
    return (meta, f.num_rows) if BLOOM_FILTER_FOOTER.encode() in meta else None


def _compacted_stat(
    op: CompactionOperation,
    fslice: FileSlice,
    rel: str,
    num_rows: int,
    size: int,
    stats: ReadStats,
    t_scan: float,
    t_write: float,
) -> WriteStat:
    """The write stat of the base file ``rel`` (``num_rows`` rows, ``size`` bytes) that
    compacted ``fslice``."""
    log_size = sum(lf.size for lf in fslice.log_files)
    return WriteStat(
        file_id=fslice.file_id,
        path=rel,
        prev_commit=op.base_instant_time,
        num_writes=num_rows,
        num_update_writes=num_rows,
        total_write_bytes=size,
        partition_path=fslice.partition_path,
        total_log_records=0,
        total_log_files=len(fslice.log_files),
        total_updated_records_compacted=num_rows,
        total_log_blocks=stats.log_blocks,
        total_corrupt_log_block=stats.corrupt_blocks,
        total_rollback_blocks=stats.rolled_back_blocks,
        file_size_in_bytes=size,
        prev_base_file=fslice.base_file.name.name if fslice.base_file is not None else None,
        runtime_stats=RuntimeStats(
            total_scan_time=int(t_scan * 1000),
            total_create_time=int(t_write * 1000),
            total_upsert_time=0,
        ),
        total_log_files_compacted=len(fslice.log_files),
        total_log_size_compacted=log_size,
    )


def finish_compaction(
    ctx: ServiceContext, job: CompactionJob, stats: Sequence[WriteStat]
) -> Instant:
    """Complete compaction ``job.instant``: drop files of failed task attempts, write
    ``C.commit``. Runs under the table lock (taken here unless held, with several writers).

    The attempt (``job.fence``) must still be the live one on the timeline listed under the
    lock -- not rolled back by another process, C neither completed nor unscheduled -- and the
    completion is fenced as the writer's commit (:meth:`ServiceContext.complete`). Of the
    files the instant's markers name, only this attempt's are deleted when its stats do not
    name them (a failed or superseded task attempt): markers of another attempt of C (one that
    was rolled back and has not stopped yet) are left to it and to rollbacks.

    Returns:
        The completed instant (``commit``).

    Raises:
        AttemptRolledBackError: this attempt was rolled back; nothing was completed.
        LockLostError: the table lock was lost; the completion was withdrawn.
    """
    storage = ctx.storage
    with ctx.locked() as lock:
        fence = job.fence
        if fence is not None:
            # the timeline was listed when the lock was taken (single writer: listed here)
            fence.check(storage, ctx.timeline() if lock is not None else None)
        keep = {s.path for s in stats}
        for path in marked_files(storage, job.instant):
            if path not in keep and (fence is None or fence.owns(path)):
                storage.delete(path)
        md = CommitMetadata(operation_type="COMPACT", compacted=True)
        for s in stats:
            md.partition_to_write_stats.setdefault(s.partition_path or "", []).append(s)
        md.extra_metadata["schema"] = _data_schema_json(ctx, job)
        done = ctx.complete(
            Instant(job.instant, COMPACTION, State.INFLIGHT), md.to_bytes(ctx.layout)
        )
    # after the fence (a withdrawn attempt is rolled back) and the commit point
    delete_markers_quietly(storage, job.instant)
    return done


def _data_schema_json(ctx: ServiceContext, job: CompactionJob) -> str:
    tl = ctx.timeline()
    for inst in reversed(tl.commits()):
        if inst.requested_time < job.instant:
            schema = tl.read_commit_metadata(inst).schema
            if schema:
                return schema
    return ctx.config.create_schema or ""


def rollback_inflight_compaction(
    ctx: ServiceContext, instant: str, record: bool = True
) -> list[str]:
    """Undo a failed attempt of compaction ``instant``: delete its files, back to requested.

    With ``record`` a rollback instant names the attempt (``R.rollback`` with
    ``instantToRollback = {C, compaction}``), as Hudi records it.

    Returns:
        The deleted files (relative paths).
    """
    storage = ctx.storage
    tl = ctx.timeline()
    inst = tl.get(instant)
    if inst is None or inst.is_completed or inst.action != COMPACTION:
        raise InstantNotFoundError(f"no pending compaction {instant} on the timeline")
    pending_rb = pending_rollback_of(tl, instant)
    if pending_rb is not None:  # an earlier rollback of an attempt was killed: finish that one
        resume_rollback(storage, ctx.config, tl, pending_rb, ctx.state.before_complete)
        # the rollback wrote its instant files itself: list the timeline again
        md = ctx.reload_timeline().read_rollback_metadata(pending_rb)
        return sorted(f for pm in md.partition_metadata.values() for f in pm.success_delete_files)
    files = set(marked_files(storage, instant))
    plan = tl.read_compaction_plan(instant)
    view = FileSystemView(storage, ctx.config)
    for op in plan.operations or []:
        for g in view.file_groups(op.partition_path or ""):
            if g.file_id == op.file_id:
                files.update(b.path for b in g.base_files if b.instant_time == instant)
    writer = ctx.writer()
    rb_req: Instant | None = None
    if record and (files or inst.is_inflight):
        rplan = rollback_plan(instant, COMPACTION, files, full_path=storage.uri)
        rb_req = ctx.new_instant("rollback", rplan.to_bytes(), tl)
        writer.transition_to_inflight(rb_req)
        crash_point("rollback")
        # listed again now that the rollback is on the timeline: an attempt that was paused
        # and goes on checks the timeline after each base file it writes (CompactionAttempt);
        # a file marked before it could see this rollback is found here, any later one it
        # deletes itself
        files.update(marked_files(storage, instant))
    t0 = time.perf_counter()
    deleted = sorted(files)
    for f in deleted:
        storage.delete(f)  # already gone after an earlier, interrupted rollback: fine
    crash_point("rollback")
    delete_markers(storage, instant)
    if inst.is_inflight:
        writer.revert_to_requested(inst)
    if rb_req is not None:
        millis = int((time.perf_counter() - t0) * 1000)
        md = attempt_rollback_metadata(
            storage, rb_req.requested_time, instant, COMPACTION, deleted, millis
        )
        ctx.complete(Instant(rb_req.requested_time, "rollback", State.INFLIGHT), md.to_bytes())
    log.info("rolled back the failed attempt of compaction %s (%d files)", instant, len(deleted))
    return deleted
