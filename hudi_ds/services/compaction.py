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
  requested). A process killed mid-way leaves ``C.compaction.inflight``; the next
  :func:`run_compaction` (or the next write with inline compaction) rolls that attempt back --
  recorded as a rollback instant, as Hudi does -- and executes the plan again; with several
  writers only once the attempt's heartbeat expired.
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
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field

import pyarrow as pa

from hudi_ds.concurrency.heartbeat import Heartbeat, heartbeat_expired
from hudi_ds.config import (
    ConcurrencyConfig,
    ServiceConfig,
    WriteConfig,
    compaction_strategy_class,
)
from hudi_ds.errors import (
    AttemptRolledBackError,
    CorruptFileError,
    InstantNotFoundError,
    MissingFileError,
    TimelineError,
    UnsupportedError,
)
from hudi_ds.faults import crash_point
from hudi_ds.layout.bloom import BloomFilterSpec
from hudi_ds.layout.file_group import BaseFile, FileSlice, LogFile
from hudi_ds.layout.naming import (
    base_file_name,
    file_name_of,
    file_path,
    log_file_name,
    parse_base_file_name,
    parse_log_file_name,
    partition_of,
)
from hudi_ds.layout.parquet import write_base_file
from hudi_ds.metadata.records import FILES_PARTITION, declared_partitions
from hudi_ds.schema.avro import avro_to_arrow_schema
from hudi_ds.schema.meta import FILENAME_METADATA_FIELD, clear_meta_values, with_meta_fields
from hudi_ds.services.base import Progress, ServiceContext, under_table_lock
from hudi_ds.storage import Storage
from hudi_ds.table.committed import committed_files, visible_commits
from hudi_ds.table.fs_view import FileSystemView
from hudi_ds.table.reader import ReadStats, SliceReadContext, read_file_slice
from hudi_ds.table.table import ReadableTable
from hudi_ds.timeline.instant import (
    COMPACTION,
    ROLLBACK,
    Instant,
    State,
    instant_time_to_datetime,
)
from hudi_ds.timeline.metadata import CommitMetadata, RuntimeStats, WriteStat
from hudi_ds.timeline.plans import (
    CompactionOperation,
    CompactionPlan,
    CompactionStrategy,
    InstantInfo,
    RollbackMetadata,
    RollbackPartitionMetadata,
)
from hudi_ds.timeline.timeline import DATA_ACTIONS, Timeline
from hudi_ds.timeline.view import Visibility
from hudi_ds.write.conflict import retarget_logs
from hudi_ds.write.markers import create_marker, delete_markers, marked_files, marker_dir
from hudi_ds.write.rollback_executor import (
    pending_rollback_of,
    resume_rollback,
    rollback_plan,
    rollback_target,
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

MB = 1 << 20
#: Hudi's default ``hoodie.parquet.max.file.size`` (written size assumed for a log-only slice)
DEFAULT_BASE_FILE_SIZE = 120 * MB

# metric names of HoodieCompactionOperation.metrics (Java CompactionStrategy)
TOTAL_IO_READ_MB = "TOTAL_IO_READ_MB"
TOTAL_IO_WRITE_MB = "TOTAL_IO_WRITE_MB"
TOTAL_IO_MB = "TOTAL_IO_MB"
TOTAL_LOG_FILE_SIZE = "TOTAL_LOG_FILES_SIZE"
TOTAL_LOG_FILES = "TOTAL_LOG_FILES"


# -- scheduling ---------------------------------------------------------------------------------


def _pending_writes(tl: Timeline, before: str | None = None) -> list[Instant]:
    return [
        i
        for i in tl.pending().filter_actions(*DATA_ACTIONS)
        if before is None or i.requested_time < before
    ]


def _file_groups_in_pending_compaction(tl: Timeline) -> set[tuple[str, str]]:
    out: set[tuple[str, str]] = set()
    for c in tl.pending_compactions():
        for op in tl.read_compaction_plan(c).operations or []:
            out.add((op.partition_path or "", op.file_id or ""))
    return out


def _metrics(fslice: FileSlice, layout: int = 1) -> dict[str, float]:
    log_size = sum(lf.size for lf in fslice.log_files)
    base_size = fslice.base_file.size if fslice.base_file is not None else 0
    read_mb = (base_size + log_size) / MB
    write_mb = (base_size if base_size > 0 else DEFAULT_BASE_FILE_SIZE) / MB
    if layout == 2:
        # Hudi 1.x CompactionStrategy.captureMetrics: FSUtils.getSizeInMB is a whole number of
        # MB (long division), and the map is a Java HashMap, written in its iteration order
        read_whole = (base_size + log_size) // MB
        write_whole = (base_size if base_size > 0 else DEFAULT_BASE_FILE_SIZE) // MB
        return {
            TOTAL_LOG_FILES: float(len(fslice.log_files)),
            TOTAL_IO_MB: float(read_whole + write_whole),
            TOTAL_IO_READ_MB: float(read_whole),
            TOTAL_LOG_FILE_SIZE: float(log_size),
            TOTAL_IO_WRITE_MB: float(write_whole),
        }
    return {
        TOTAL_IO_READ_MB: float(read_mb),
        TOTAL_IO_WRITE_MB: float(write_mb),
        TOTAL_IO_MB: float(read_mb + write_mb),
        TOTAL_LOG_FILE_SIZE: float(log_size),
        TOTAL_LOG_FILES: float(len(fslice.log_files)),
    }


def _operation(fslice: FileSlice, layout: int = 1) -> CompactionOperation:
    return CompactionOperation(
        base_instant_time=fslice.base_instant_time,
        delta_file_paths=[lf.name.name for lf in fslice.sorted_log_files()],
        data_file_path=fslice.base_file.name.name if fslice.base_file is not None else None,
        file_id=fslice.file_id,
        partition_path=fslice.partition_path,
        metrics=_metrics(fslice, layout),
        bootstrap_file_path=None,
    )


def _apply_strategy(
    ops: list[CompactionOperation], ctx: ServiceContext
) -> list[CompactionOperation]:
    """Order and cut the candidate operations as the configured Hudi strategy does."""
    strategy = ctx.get(ServiceConfig.COMPACTION_STRATEGY)
    m = lambda op, k: (op.metrics or {}).get(k, 0.0)  # noqa: E731
    if strategy == "LogFileSizeBasedCompactionStrategy":
        threshold = ctx.get(ServiceConfig.COMPACTION_LOG_SIZE_THRESHOLD)
        ops = [op for op in ops if m(op, TOTAL_LOG_FILE_SIZE) >= threshold]
        ops.sort(key=lambda op: -m(op, TOTAL_LOG_FILE_SIZE))
    elif strategy == "LogFileNumBasedCompactionStrategy":
        threshold = ctx.get(ServiceConfig.COMPACTION_LOG_NUM_THRESHOLD)
        ops = [op for op in ops if m(op, TOTAL_LOG_FILES) >= threshold]
        ops.sort(key=lambda op: -m(op, TOTAL_LOG_FILES))
    if strategy == "UnBoundedCompactionStrategy":
        return ops
    budget = float(ctx.get(ServiceConfig.COMPACTION_TARGET_IO_MB))
    out = []
    for op in ops:  # BoundedIOCompactionStrategy: the operation that crosses the budget is kept
        out.append(op)
        budget -= m(op, TOTAL_IO_MB)
        if budget <= 0:
            break
    return out


def plan_compaction(ctx: ServiceContext, tl: Timeline | None = None) -> CompactionPlan:
    """The plan a compaction scheduled now would carry (nothing is written).

    Takes the latest visible slice of every live file group that has log files and is not
    under a pending compaction, then applies the strategy (module docstring).
    """
    tl = tl if tl is not None else ctx.timeline()
    table = ReadableTable(ctx.state)
    vis = table.visibility()
    busy = _file_groups_in_pending_compaction(tl)
    view = FileSystemView(ctx.storage, ctx.config)
    # a committed file gone or short would be compacted away for good: refuse
    table.verify_committed_files(view, vis)
    slices = [(p, s) for p in view.partitions() for s in view.latest_file_slices(p, vis)]
    # logs of writes still pending are not the plan's: such a write moves them into the new
    # slice when it commits (hudi_ds.write.conflict.retarget_logs). A write's requested file and
    # markers are made before its log files, and both are read after the listing, so every
    # listed log of a pending write is found.
    pending_logs = {
        f
        for i in _pending_writes(ctx.reload_timeline())
        for f in marked_files(ctx.storage, i.requested_time)
    }
    ops = []
    for p, s in slices:
        if (p, s.file_id) in busy:
            continue
        s = dataclasses.replace(
            s, log_files=[lf for lf in s.log_files if lf.path not in pending_logs]
        )
        if s.log_files:
            ops.append(_operation(s, ctx.layout))
    strategy = ctx.get(ServiceConfig.COMPACTION_STRATEGY)
    if ctx.layout == 2:
        # as Hudi 1.x writes its plans (every v8/v9 fixture): no strategy record, an empty
        # extra-metadata map, preserveHoodieMetadata false (1.x compaction keeps the meta
        # fields regardless), no missing partitions
        return CompactionPlan(
            operations=_apply_strategy(ops, ctx),
            extra_metadata={},
            version=2,
            strategy=None,
            preserve_hoodie_metadata=False,
            missing_schedule_partitions=[],
        )
    return CompactionPlan(
        operations=_apply_strategy(ops, ctx),
        extra_metadata=None,
        version=2,
        strategy=CompactionStrategy(
            compactor_class_name=compaction_strategy_class(strategy),
            strategy_params={
                "hoodie.compaction.target.io": str(ctx.get(ServiceConfig.COMPACTION_TARGET_IO_MB))
            },
            version=1,
        ),
        preserve_hoodie_metadata=True,
        missing_schedule_partitions=None,
    )


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


# -- execution ----------------------------------------------------------------------------------


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
    committed = committed_files(tl, visible_commits(tl, vis), layout2)
    known = {f.path: f for files in committed.values() for f in files if f.is_log}
    ranges = {
        rel: tuple(known[rel].ranges)
        for op in plan.operations or ()
        for rel in op.log_file_rel_paths
        if rel in known and known[rel].ranges
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
        bloom=BloomFilterSpec.of(ctx.options) if table.config.populate_meta_fields else None,
        attempt=attempt,
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
    changes: list[tuple[pa.Array, pa.Array]] | None = [] if job.key_changes is not None else None
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
    name = base_file_name(fslice.file_id, token, job.instant)
    rel = file_path(fslice.partition_path, name)
    if idx >= 0:
        rows = rows.add_column(
            idx, schema.field(idx), pa.repeat(pa.scalar(name, pa.string()), rows.num_rows)
        )
    if not job.context.populate_meta_fields:
        rows = clear_meta_values(rows, file_name=True)  # as HoodieMergeHandle.writeToFile
    fence = job.fence
    if fence is not None:
        fence.check_soon(storage)  # rolled back meanwhile: write nothing more
    create_marker(storage, job.instant, rel, "CREATE")
    t1 = time.perf_counter()
    size = write_base_file(storage, rel, rows, job.codec, job.bloom)
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
    log_size = sum(lf.size for lf in fslice.log_files)
    return WriteStat(
        file_id=fslice.file_id,
        path=rel,
        prev_commit=op.base_instant_time,
        num_writes=rows.num_rows,
        num_update_writes=rows.num_rows,
        total_write_bytes=size,
        partition_path=fslice.partition_path,
        total_log_records=0,
        total_log_files=len(fslice.log_files),
        total_updated_records_compacted=rows.num_rows,
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
    delete_markers(storage, job.instant)  # after the fence: a withdrawn attempt is rolled back
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
        parts: dict[str, RollbackPartitionMetadata] = {}
        for f in deleted:
            p = partition_of(f)
            parts.setdefault(p, RollbackPartitionMetadata(partition_path=p))
            parts[p].success_delete_files.append(storage.uri(f))
        md = RollbackMetadata(
            start_rollback_time=rb_req.requested_time,
            time_taken_in_millis=int((time.perf_counter() - t0) * 1000),
            total_files_deleted=len(deleted),
            commits_rollback=[instant],
            partition_metadata=parts,
            version=1,
            instants_rollback=[InstantInfo(commit_time=instant, action=COMPACTION)],
        )
        ctx.complete(Instant(rb_req.requested_time, "rollback", State.INFLIGHT), md.to_bytes())
    log.info("rolled back the failed attempt of compaction %s (%d files)", instant, len(deleted))
    return deleted


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
        log.error("compaction %s failed; rolling the attempt back", c)
        try:
            with ctx.locked(reload=True):
                if attempt.problem(ctx.timeline()) is None:
                    rollback_inflight_compaction(ctx, c)
                else:  # another process rolled it back meanwhile: not ours to undo any more
                    live = _stop_rolled_back(ctx, job)
        except Exception:  # pragma: no cover - the next run retries the rollback
            log.exception("rolling back compaction %s failed", c)
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
    storage = ctx.storage
    found = set(marked_files(storage, c))
    for partition in sorted({op.partition_path or "" for op in job.operations}):
        found.update(f.path for f in storage.list_files(partition))
    own = sorted(f for f in found if attempt.owns(f) and storage.exists(f))
    _discard(storage, c, own)
    log.error(
        "compaction %s: this attempt was rolled back by another process; it stopped "
        "(%d file(s) of it deleted)",
        c,
        len(own),
    )
    inst = ctx.reload_timeline().get(c)
    return inst is None or inst.is_completed


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


# -- unscheduling -------------------------------------------------------------------------------


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


# -- inline compaction ---------------------------------------------------------------------------


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


def compaction_plans(tl: Timeline) -> dict[str, CompactionPlan]:
    """Plans of the pending compactions."""
    return {c.requested_time: tl.read_compaction_plan(c) for c in tl.pending_compactions()}
