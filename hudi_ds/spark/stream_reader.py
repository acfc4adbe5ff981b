"""The streaming source ``spark.readStream.format("hudi_py").load(path)``.

Offsets are completed instants, ``{"commitTime": "<instant time>"}`` as Hudi's own streaming
source writes them (``"00000000000000"`` before the first commit). A micro-batch from offset
``a`` to ``b`` is the incremental query ``(a, b]``: the latest state, as of ``b``, of every key
written by a commit in that range (a key updated twice in the range comes once). The first
micro-batch of a query started at ``earliest`` is the snapshot as of ``b``.

* Where a pending write precedes completed ones on the timeline (a slow or crashed writer),
  offsets stop before it until it completes or is rolled back -- otherwise its rows, once
  committed, would land before an offset already consumed (Hudi's ``BLOCK`` handling of hollow
  commits). Pending compactions do not block: they add no data.
* Admission control: ``maxCommitsPerTrigger`` (data commits per micro-batch; compaction
  commits do not count) and ``maxRowsPerTrigger`` (rows written by the commits, from their
  metadata; at least one commit is always admitted). ``trigger(availableNow=True)`` reads what
  was committed when the query started, in batches of that size.
* Start: ``hoodie.datasource.streaming.startOffset`` = ``earliest`` (default), ``latest`` or an
  instant time (changes *after* it); a restarted query resumes from its checkpoint instead.
  From ``earliest`` the first micro-batch reaches at least the earliest commit the cleaner
  retained (a snapshot as of an older instant is no longer readable). A query that falls
  behind the cleaner fails with a message naming the retained instant: retain more commits
  (``hoodie.cleaner.commits.retained``) than a stopped query may lag.
* Deletes: with ``hoodie.datasource.read.incr.emit.deletes=true`` a key that existed before the
  range and is gone at its end comes as its last row with ``_hoodie_is_deleted = true`` (the
  column is added to the schema when the table has none).

The offset methods run in one long-lived Python process per query on the driver; ``read`` runs
in executor tasks on a pickled copy of the reader (stateless there). The driver side holds one
:class:`~hudi_ds.timeline.view.TableState`, refreshed at the start of every micro-batch
(:meth:`HudiStreamReader.latestOffset`): the batch's offsets and its read plan come from the
same listing of the timeline.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxFiles,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import BooleanType, StructField, StructType

from hudi_ds.config import Options, ReadConfig
from hudi_ds.errors import TableNotFoundError
from hudi_ds.layout.file_group import FileSlice
from hudi_ds.schema.meta import IS_DELETED_FIELD, RECORD_KEY_METADATA_FIELD
from hudi_ds.spark import options as opt
from hudi_ds.spark.options import SparkStreamConfig
from hudi_ds.spark.reader import (
    HudiInputPartition,
    plan_groups,
    validate_read_options,
    without_slices,
)
from hudi_ds.spark.types import conform_batch, read_arrow_schema
from hudi_ds.table.table import ReadableTable, ReadPlan
from hudi_ds.timeline.instant import Instant, normalize_instant
from hudi_ds.timeline.timeline import DATA_ACTIONS, Timeline
from hudi_ds.timeline.view import TableState

log = logging.getLogger("hudi_ds.spark.stream_reader")

OFFSET_KEY = "commitTime"
#: the offset before the first commit (Hudi's ``HoodieTimeline.INIT_INSTANT_TS``).
INIT_OFFSET = "00000000000000"


@dataclass(frozen=True, eq=False)
class HudiStreamPartition(HudiInputPartition):
    """One read task of a micro-batch (see :class:`HudiInputPartition`).

    Attributes:
        before: the same file groups' slices as of the range start, to find deleted keys
            (only with ``hoodie.datasource.read.incr.emit.deletes``).
        before_plan: the plan those slices are read with.
        after: the file groups' slices as of the range end (keys still alive).
        after_plan: the plan those slices are read with (record keys only).
    """

    before: tuple[FileSlice, ...] = ()
    before_plan: ReadPlan | None = None
    after: tuple[FileSlice, ...] = ()
    after_plan: ReadPlan | None = None


class HudiStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):  # type: ignore[misc]
    """Reads the commits of a Hudi table as a stream of micro-batches.

    Args:
        path: the table base path.
        options: ``hoodie.*`` read options (lower-cased keys).
        connector: ``hudi_py.*`` options and ``maxCommitsPerTrigger`` / ``maxRowsPerTrigger``
            (:class:`~hudi_ds.spark.options.SparkStreamConfig`).
        schema: the schema Spark expects.
    """

    def __init__(
        self,
        path: str,
        options: Mapping[str, str],
        connector: Mapping[str, str],
        schema: StructType,
    ) -> None:
        self.path = path
        self.options = {k.lower(): v for k, v in options.items()}
        self.connector = dict(connector)
        self.schema = schema
        parsed = Options.of(self.options)
        self.emit_deletes: bool = parsed.get(ReadConfig.INCREMENTAL_EMIT_DELETES)
        self.start_offset: str = parsed.get(ReadConfig.STREAMING_START_OFFSET)
        self.max_commits: int | None = opt.get(self.connector, SparkStreamConfig.MAX_COMMITS)
        self.max_rows: int | None = opt.get(self.connector, SparkStreamConfig.MAX_ROWS)
        self._available_now: str | None = None
        self._rows: dict[str, int] = {}
        self._state: TableState | None = None

    def __getstate__(self) -> dict[str, Any]:
        """The executors' copy: without the driver's table state."""
        return {k: v for k, v in self.__dict__.items() if k != "_state"}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._state = None

    @classmethod
    def create(cls, options: Mapping[str, Any], schema: StructType) -> HudiStreamReader:
        """Validate the options (ConfigError names a bad key or value)."""
        path, hudi, connector = opt.split_options(options)
        validate_read_options(hudi)
        reader = cls(opt.require_path(path), hudi, connector, schema)
        start = reader.start_offset.strip().lower()
        if start not in ("earliest", "latest"):
            normalize_instant(start, ReadConfig.STREAMING_START_OFFSET.key)
        return reader

    # -- offsets (driver, one long-lived process) ------------------------------------------------
    def _fresh_timeline(self) -> Timeline | None:
        """The table as it is now (``hoodie.properties`` read again, the timeline listed again):
        the start of a micro-batch. None while no table exists (a source started before its
        first write -- with ``.schema(...)`` -- waits for it)."""
        try:
            if self._state is None:
                self._state = TableState.open(opt.open_path(self.path, self.connector))
            else:
                self._state.refresh()
        except TableNotFoundError:
            self._state = None
            return None
        return self._state.timeline

    def _timeline(self) -> Timeline | None:
        """The timeline of the current micro-batch (listed on first use)."""
        if self._state is None:
            return self._fresh_timeline()
        return self._state.timeline

    def _position(self, tl: Timeline, inst: Instant) -> str:
        """Where a completed instant sits on the stream (Hudi's visibility time)."""
        return tl.visibility_time(inst)

    def _admissible(self, tl: Timeline) -> list[Instant]:
        """Completed commits in stream order, up to the first pending write (layout 1)."""
        commits = sorted(tl.commits(), key=lambda i: (self._position(tl, i), i.requested_time))
        if tl.layout_version == 1:
            pending = [i.requested_time for i in tl.pending().filter_actions(*DATA_ACTIONS)]
            if pending:
                barrier = min(pending)
                commits = [i for i in commits if i.requested_time < barrier]
        return commits

    def initialOffset(self) -> dict[str, str]:
        """Where a query without a checkpoint starts."""
        start = self.start_offset.strip().lower()
        if start == "earliest":
            return {OFFSET_KEY: INIT_OFFSET}
        if start == "latest":
            tl = self._fresh_timeline()
            if tl is None:
                return {OFFSET_KEY: INIT_OFFSET}
            commits = self._admissible(tl)
            return {OFFSET_KEY: self._position(tl, commits[-1]) if commits else INIT_OFFSET}
        return {OFFSET_KEY: normalize_instant(start)}

    def getDefaultReadLimit(self) -> ReadLimit:
        """``maxCommitsPerTrigger`` (as a file limit: one commit is one unit) or
        ``maxRowsPerTrigger``; everything otherwise."""
        if self.max_commits is not None:
            return ReadMaxFiles(self.max_commits)
        if self.max_rows is not None:
            return ReadMaxRows(self.max_rows)
        return ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        """``availableNow``: stop at what is committed now."""
        tl = self._fresh_timeline()
        if tl is None:
            self._available_now = INIT_OFFSET
            return
        commits = self._admissible(tl)
        self._available_now = self._position(tl, commits[-1]) if commits else INIT_OFFSET

    def latestOffset(self, start: dict[str, str], limit: ReadLimit) -> dict[str, str]:
        """The end of the next micro-batch: admissible commits after ``start``, within limits."""
        begin = str(start.get(OFFSET_KEY, INIT_OFFSET)) if start else INIT_OFFSET
        tl = self._fresh_timeline()  # a micro-batch starts here: see the table as it is now
        if tl is None:
            return {OFFSET_KEY: begin}
        capped = not isinstance(limit, ReadAllAvailable)
        max_commits = self.max_commits if capped else None
        max_rows = self.max_rows if capped else None
        # a query starting from the beginning reads a snapshot first: as of an instant whose
        # file versions the cleaner kept (earlier ones may be gone)
        floor = retained_floor(tl) if begin == INIT_OFFSET else None
        reached = floor is None
        end = begin
        commits = rows = 0
        for inst in self._admissible(tl):
            pos = self._position(tl, inst)
            if pos <= begin:
                continue
            if self._available_now is not None and pos > self._available_now:
                break
            if not reached and floor is not None and inst.requested_time < floor:
                end = pos  # folded into the first (snapshot) batch
                continue
            if tl.origin_action(inst.requested_time) in ("compaction", "clustering"):
                # no new data: never the end of a batch (a later data commit's range holds it)
                if not reached:
                    end, reached = pos, True
                continue
            if max_commits is not None and commits >= max_commits:
                break
            if max_rows is not None:
                n = self._rows_of(tl, inst)
                if commits and rows + n > max_rows:
                    break
                rows += n
            commits += 1
            end, reached = pos, True
        return {OFFSET_KEY: end}

    def reportLatestOffset(self) -> dict[str, str] | None:
        """The latest admissible commit (progress reporting only)."""
        tl = self._timeline()
        if tl is None:
            return None
        commits = self._admissible(tl)
        return {OFFSET_KEY: self._position(tl, commits[-1])} if commits else None

    def _rows_of(self, tl: Timeline, inst: Instant) -> int:
        n = self._rows.get(inst.requested_time)
        if n is None:
            md = tl.read_commit_metadata(inst)
            n = 0
            if md is not None:
                for stats in md.partition_to_write_stats.values():
                    n += sum(int(s.num_writes) + int(s.num_deletes) for s in stats)
            self._rows[inst.requested_time] = n
        return n

    def partitions(self, start: dict[str, str], end: dict[str, str]) -> list[InputPartition]:
        """The read tasks of the range ``(start, end]`` (none when it is empty)."""
        begin = str(start.get(OFFSET_KEY, INIT_OFFSET)) if start else INIT_OFFSET
        stop = str(end[OFFSET_KEY])
        if stop <= begin:
            return []
        tl = self._timeline()
        if tl is None or not any(self._position(tl, i) >= stop for i in tl.commits()):
            tl = self._fresh_timeline()  # a range this process has not seen (a restart)
        if self._state is None or tl is None:
            raise TableNotFoundError(f"no Hudi table at {self.path}")
        table = ReadableTable(self._state)
        if begin != INIT_OFFSET and all(
            tl.origin_action(i.requested_time) in ("compaction", "clustering")
            for i in tl.commits()
            if begin < self._position(tl, i) <= stop
        ):
            return []  # only table services in the range: no new data
        names = list(self.schema.fieldNames())
        data_names = [n for n in names if n != IS_DELETED_FIELD or n in table.schema.names]
        columns = None if data_names == table.schema.names else data_names
        layout1 = table.config.timeline_layout_version == 1
        if begin == INIT_OFFSET and layout1:
            read_opts = {"hoodie.datasource.query.type": "snapshot", "as.of.instant": stop}
        else:
            read_opts = {
                "hoodie.datasource.query.type": "incremental",
                "hoodie.datasource.read.begin.instanttime": begin,
                "hoodie.datasource.read.end.instanttime": stop,
            }
        plan = table.plan_read(read_opts, columns)
        header = without_slices(plan)
        groups = plan_groups(plan.slices, self.connector)
        if not (self.emit_deletes and begin != INIT_OFFSET):
            return [HudiInputPartition(i, tuple(g), header) for i, g in enumerate(groups)]
        # deleted keys: alive before the range (as of ``begin``), gone at its end
        before = table.plan_read({"as.of.instant": begin}, columns)
        after = table.plan_read({"as.of.instant": stop}, [RECORD_KEY_METADATA_FIELD])
        old = {(s.partition_path, s.file_id): s for s in before.slices}
        new = {(s.partition_path, s.file_id): s for s in after.slices}
        before_header, after_header = without_slices(before), without_slices(after)
        out: list[InputPartition] = []
        for i, g in enumerate(groups):
            ks = [(s.partition_path, s.file_id) for s in g]
            out.append(
                HudiStreamPartition(
                    i,
                    tuple(g),
                    header,
                    before=tuple(old[k] for k in ks if k in old),
                    before_plan=before_header,
                    after=tuple(new[k] for k in ks if k in new),
                    after_plan=after_header,
                )
            )
        return out

    def commit(self, end: dict[str, str]) -> None:
        """Nothing to release: offsets live in Spark's checkpoint."""

    # -- executors -------------------------------------------------------------------------------
    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        """The rows of one read task, cast to exactly the declared schema."""
        if not isinstance(partition, HudiInputPartition):
            return iter(())
        return self._read(partition)

    def _read(self, partition: HudiInputPartition) -> Iterator[pa.RecordBatch]:
        target = read_arrow_schema(self.schema)
        table = ReadableTable(opt.open_path(self.path, self.connector))
        add_flag = IS_DELETED_FIELD in target.names
        for batch in table.read_plan_slices(partition.plan, partition.slices):
            if batch.num_rows:
                yield conform_batch(_with_flag(batch, False) if add_flag else batch, target)
        if isinstance(partition, HudiStreamPartition) and partition.before:
            gone = _deleted_rows(table, partition)
            if gone is not None and gone.num_rows:
                for batch in _with_flag_table(gone, True).to_batches():
                    yield conform_batch(batch, target)


def retained_floor(tl: Timeline) -> str | None:
    """The earliest commit whose file versions the last clean kept, when it deleted any (reads
    as of earlier instants are refused)."""
    for c in reversed(tl.completed().filter_actions("clean")):
        md = tl.read_clean_metadata(c)
        if md.earliest_commit_to_retain:
            return md.earliest_commit_to_retain if md.total_files_deleted else None
    return None


def stream_schema(schema: StructType, emit_deletes: bool) -> StructType:
    """The schema of a streaming read: the table's, plus ``_hoodie_is_deleted`` when deletes are
    emitted and the table has no such column."""
    if not emit_deletes or IS_DELETED_FIELD in schema.fieldNames():
        return schema
    return StructType([*schema.fields, StructField(IS_DELETED_FIELD, BooleanType(), True)])


def _deleted_rows(table: ReadableTable, part: HudiStreamPartition) -> pa.Table | None:
    """Rows alive before the range whose keys are gone at its end."""
    assert part.before_plan is not None and part.after_plan is not None
    before = [b for b in table.read_plan_slices(part.before_plan, part.before) if b.num_rows]
    if not before:
        return None
    old = pa.Table.from_batches(before)
    alive = [
        b.column(b.schema.get_field_index(RECORD_KEY_METADATA_FIELD))
        for b in table.read_plan_slices(part.after_plan, part.after)
        if b.num_rows
    ]
    if not alive:
        return old
    keys = pa.chunked_array(alive)
    mask = pc.invert(
        pc.is_in(old.column(RECORD_KEY_METADATA_FIELD), value_set=keys.combine_chunks())
    )
    return old.filter(mask)


def _with_flag(batch: pa.RecordBatch, value: bool) -> pa.RecordBatch:
    if IS_DELETED_FIELD in batch.schema.names:
        if not value:
            return batch
        idx = batch.schema.get_field_index(IS_DELETED_FIELD)
        return batch.set_column(idx, IS_DELETED_FIELD, pa.repeat(True, batch.num_rows))
    return batch.append_column(
        pa.field(IS_DELETED_FIELD, pa.bool_()), pa.repeat(pa.scalar(value), batch.num_rows)
    )


def _with_flag_table(table: pa.Table, value: bool) -> pa.Table:
    return pa.Table.from_batches([_with_flag(b, value) for b in table.to_batches()])
