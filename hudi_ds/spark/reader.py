"""Batch reads of ``spark.read.format("hudi_py")``: planning on the driver, slices on executors.

Driver (a planner worker): :meth:`HudiBatchReader.partitions` plans the read with
:meth:`ReadableTable.plan_read` (query type, incremental range, time travel, partition pruning),
prunes bucket-index file groups when the filters fix the record key, and packs the chosen file
slices into :class:`HudiInputPartition` s of about ``hudi_py.read.split.bytes`` each.

Executors: :meth:`HudiBatchReader.read` merges each slice (base file + log blocks) with
:meth:`ReadableTable.read_plan_slices` and yields Arrow record batches cast to exactly the schema
Spark was promised.

pyspark pickles the read function (with the reader) *before* it calls ``partitions()``: the
planned read therefore travels inside every partition (:attr:`HudiInputPartition.plan`, without
the slice list), not on the reader.

Snapshots: pyspark 4.3 plans a Python data source's read once per relation and keeps it
(``PythonBatch.infoInPython`` asks ``PythonDataSourceV2.getOrCreateReadInfo``, which caches the
partitions and the read function on the provider instance a DataFrame or a temporary view
holds), so ``partitions()`` -- where the snapshot is chosen -- runs again for no later action of
that DataFrame or view: it keeps showing the table as of its first action. Only ``read()`` runs
per action, one task per partition, and the tasks of one action have no common moment to agree
on a newer snapshot without the driver. So the snapshot stays pinned, and the first task of
every action of a latest-snapshot read checks the timeline and logs a warning naming the pinned
and the latest instant when the table has moved on (docs/spark.md, "Fresh reads").

Filters (only with ``spark.sql.python.filterPushdown.enabled=true``, see
:class:`HudiPushdownReader`): every filter is returned to Spark, which evaluates it again, so
pruning may be inexact but never loses a row.
"""

from __future__ import annotations

import heapq
import logging
import math
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSourceReader,
    EqualNullSafe,
    EqualTo,
    Filter,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    InputPartition,
    IsNotNull,
    IsNull,
    LessThan,
    LessThanOrEqual,
    Not,
)
from pyspark.sql.types import StructType

from hudi_ds.config import ReadConfig, properties_of
from hudi_ds.engine import (
    FileSlice,
    ReadableTable,
    ReadPlan,
    prune_buckets,
    pruning_filters,
    validate_options,
)
from hudi_ds.errors import HudiError
from hudi_ds.spark import options as opt
from hudi_ds.spark.options import SparkConfig
from hudi_ds.spark.types import conform_batch, read_arrow_schema

HudiFilter = tuple[str, str, Any]

log = logging.getLogger("hudi_ds.spark.reader")

#: the keys :meth:`ReadableTable.plan_read` understands (lower-cased, aliases included).
READ_KEYS = frozenset(k.lower() for p in properties_of(ReadConfig) for k in p.all_keys())
#: read tasks per core when a read holds enough data (balances slices of uneven merge cost)
TASKS_PER_CORE = 2


@dataclass(frozen=True, eq=False)
class HudiInputPartition(InputPartition):  # type: ignore[misc]
    """One Spark read task: some file slices of one planned read.

    Attributes:
        index: the partition's position in the plan.
        slices: the file slices this task merges and returns.
        plan: the planned read (visibility, merge context, filters, projection) without its
            slice list.
        pinned: on the first partition of a latest-snapshot read, the instant it shows (the
            task checks whether the table has moved on, see :func:`stale_snapshot_note`).
    """

    index: int
    slices: tuple[FileSlice, ...]
    plan: ReadPlan
    pinned: str | None = None

    @property
    def total_bytes(self) -> int:
        return sum(s.total_size for s in self.slices)


class HudiBatchReader(DataSourceReader):  # type: ignore[misc]
    """The batch reader (no filter pushdown; see :class:`HudiPushdownReader`).

    Args:
        path: the table base path.
        options: ``hoodie.*`` read options (query type, incremental range, ``as.of.instant``,
            and optionally ``hoodie.bucket.index.*`` for bucket pruning).
        connector: ``hudi_py.*`` options (already validated).
        schema: the schema Spark expects (the table's, or the user's ``.schema(...)``).
    """

    def __init__(
        self,
        path: str,
        options: Mapping[str, str],
        connector: Mapping[str, str],
        schema: StructType,
    ) -> None:
        self.path = path
        self.options = dict(options)
        self.connector = dict(connector)
        self.schema = schema
        self.filters: list[HudiFilter] = []
        self._table: ReadableTable | None = None
        #: set by hudi_ds.spark.read_table: only these file groups, as its plan saw the table
        self.restriction = opt.SliceRestriction.parse(
            self.connector.get(SparkConfig.READ_SLICES.key)
        )

    def __getstate__(self) -> dict[str, Any]:
        """The executors' copy: without the planning's table (pyspark pickles the reader for
        the read tasks after ``pushFilters``)."""
        return {k: v for k, v in self.__dict__.items() if k != "_table"}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._table = None

    # -- driver --------------------------------------------------------------------------------
    def planning_table(self) -> ReadableTable:
        """The table as this planning sees it, opened once: pyspark creates a reader per
        planning and calls ``pushFilters`` and ``partitions`` on it in one worker process."""
        if self._table is None:
            self._table = ReadableTable(opt.open_path(self.path, self.connector))
        return self._table

    def read_options(self) -> dict[str, str]:
        """The options handed to :meth:`ReadableTable.plan_read`: the read options only."""
        return {k: v for k, v in self.options.items() if k in READ_KEYS}

    def plan(self) -> tuple[ReadableTable, ReadPlan]:
        """Plan the read (validates the options; lists the table's file slices)."""
        table = self.planning_table()
        names = list(self.schema.fieldNames())
        columns = None if names == table.schema.names else names
        r = self.restriction
        pinned = None if r is None else r.instants
        plan = table.plan_read(self.read_options(), columns, self.filters, pinned=pinned)
        return table, plan

    def partitions(self) -> list[InputPartition]:
        """File slices packed into read tasks (a list, as pyspark requires)."""
        table, plan = self.plan()
        slices = prune_buckets(table, plan.slices, self.filters, self.options)
        r = self.restriction
        if r is not None:
            slices = [s for s in slices if (s.partition_path, s.file_id) in r.groups]
        groups = plan_groups(slices, self.connector)
        # a read_table read shows the snapshot of its call, as documented there
        pinned = pinned_instant(plan) if r is None else None
        return [
            HudiInputPartition(i, tuple(g), plan.for_slices(g), pinned if i == 0 else None)
            for i, g in enumerate(groups)
        ]

    # -- executors -----------------------------------------------------------------------------
    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        """Merge the partition's slices and yield batches of exactly the declared schema."""
        if not isinstance(partition, HudiInputPartition) or not partition.slices:
            return iter(())
        return self._read(partition)

    def _read(self, partition: HudiInputPartition) -> Iterator[pa.RecordBatch]:
        target = read_arrow_schema(self.schema)
        table = ReadableTable(opt.open_path(self.path, self.connector))
        if partition.pinned is not None:
            try:
                note = stale_snapshot_note(table, partition.pinned)
            except HudiError:  # advisory: the read's own listing reports a real failure
                log.debug("cannot check the pinned snapshot of %s", self.path, exc_info=True)
                note = None
            if note:
                log.warning("%s", note)
        for batch in table.read_plan_slices(partition.plan, partition.slices):
            if batch.num_rows:
                yield conform_batch(batch, target)


def pinned_instant(plan: ReadPlan) -> str | None:
    """The instant a latest-snapshot read shows (None for time travel, incremental reads and
    an empty timeline)."""
    vis = plan.visibility
    if vis.as_of is not None or plan.commit_times is not None or not vis.instants:
        return None
    return max(vis.instants)


def stale_snapshot_note(table: ReadableTable, pinned: str) -> str | None:
    """What to tell a user whose DataFrame or view shows the table as of ``pinned`` when the
    table has completed data commits since (None when it has not)."""
    commits = table.timeline.commits()
    latest = commits[-1].requested_time if commits else None
    if latest is None or latest <= pinned:
        return None
    return (
        f"hudi_py: this read of {table.path} shows the table as of instant {pinned}, when the "
        f"DataFrame or temporary view was first read; the table has newer commits (latest "
        f"{latest}). pyspark keeps a Python data source's planned read for the life of the "
        "DataFrame or view: load it again (spark.read.format('hudi_py').load(path)) or "
        "re-create the view (CREATE OR REPLACE TEMPORARY VIEW ... USING hudi_py OPTIONS "
        "(path ...)) to see them"
    )


class HudiPushdownReader(HudiBatchReader):
    """:class:`HudiBatchReader` with ``pushFilters``: partition and bucket pruning.

    pyspark refuses a reader that overrides ``pushFilters`` unless
    ``spark.sql.python.filterPushdown.enabled=true``, hence a separate class (chosen by
    :meth:`HudiDataSource.reader`).
    """

    def pushFilters(self, filters: list[Filter]) -> Iterable[Filter]:
        """Keep the filters usable for pruning; return *all* of them for Spark to evaluate."""
        schema = self.planning_table().schema
        self.filters = spark_filters_to_hudi(filters, schema)
        return list(filters)


# ------------------------------------------------------------------------------- filters
_BINARY = {
    EqualTo: "=",
    GreaterThan: ">",
    GreaterThanOrEqual: ">=",
    LessThan: "<",
    LessThanOrEqual: "<=",
}


def spark_filters_to_hudi(filters: Sequence[Filter], schema: pa.Schema) -> list[HudiFilter]:
    """Translate the Spark filters hudi_ds can use into ``(column, op, value)`` tuples.

    Only filters on top-level columns of ``schema`` are kept, and only those whose rows are a
    superset of Spark's own answer (Spark re-applies every filter). Floating point columns are
    skipped (SQL orders NaN above every number, Arrow does not), and so is any filter Arrow cannot
    evaluate against the column's type (:func:`hudi_ds.engine.pruning_filters`).
    """
    translated = (_translate(f) for f in filters)
    return pruning_filters([t for t in translated if t is not None], schema)


def _translate(f: Filter) -> HudiFilter | None:
    attribute = getattr(f, "attribute", None)
    if isinstance(f, Not):
        inner = _translate(f.child)
        if inner is None:
            return None
        col, op, value = inner
        if op == "=":
            return (col, "!=", value)
        if op == "in":
            return (col, "not in", value)
        if op in ("is null", "is not null"):
            return (col, "is not null" if op == "is null" else "is null", None)
        return None
    if attribute is None or len(attribute) != 1:
        return None
    col = attribute[0]
    if type(f) in _BINARY:
        value = f.value  # type: ignore[attr-defined]
        return None if value is None else (col, _BINARY[type(f)], value)
    if isinstance(f, EqualNullSafe):
        return None if f.value is None else (col, "=", f.value)
    if isinstance(f, IsNull):
        return (col, "is null", None)
    if isinstance(f, IsNotNull):
        return (col, "is not null", None)
    if isinstance(f, In):
        values = [v for v in f.value if v is not None]
        return (col, "in", values) if values else None
    return None


# ------------------------------------------------------------------------------- packing
def read_parallelism(connector: Mapping[str, str]) -> int:
    """The cores a read is spread over: ``hudi_py.read.parallelism`` or the CPU count of the
    planning process (pyspark's planner runs on the driver, where Spark's conf is not visible)."""
    configured = opt.get(connector, SparkConfig.PARALLELISM)
    if configured is not None and configured > 0:
        return int(configured)
    return os.cpu_count() or 1


def plan_groups(slices: Sequence[FileSlice], connector: Mapping[str, str]) -> list[list[FileSlice]]:
    """:func:`pack_slices` with the connector's split size, open cost and parallelism (at
    least two tasks per core when the slices hold enough data)."""
    return pack_slices(
        slices,
        opt.get(connector, SparkConfig.SPLIT_BYTES),
        opt.get(connector, SparkConfig.OPEN_COST_BYTES),
        min_groups=TASKS_PER_CORE * read_parallelism(connector),
    )


def pack_slices(
    slices: Sequence[FileSlice], max_bytes: int, open_cost: int, min_groups: int = 1
) -> list[list[FileSlice]]:
    """Pack slices into balanced groups of about ``max_bytes`` (Spark's file-split packing).

    Each slice counts its size plus ``open_cost``. The number of groups is what ``max_bytes``
    needs, raised to ``min_groups`` (the read's cores times two) as long as every group still
    gets ``open_cost`` bytes of data (a tiny table stays one task). Slices go largest first to
    the lightest group, so the groups -- the Spark tasks -- end at about the same time.
    """
    if not slices:
        return []
    order = sorted(slices, key=lambda s: (-s.total_size, s.partition_path, s.file_id))
    costs = [s.total_size + open_cost for s in order]
    data = sum(s.total_size for s in order)
    needed = math.ceil(sum(costs) / max(1, max_bytes))
    spread = min(min_groups, len(order), data // max(1, open_cost))
    n = max(1, needed, spread)
    heap = [(0, i) for i in range(n)]
    groups: list[list[FileSlice]] = [[] for _ in range(n)]
    for s, cost in zip(order, costs, strict=True):
        load, i = heapq.heappop(heap)
        groups[i].append(s)
        heapq.heappush(heap, (load + cost, i))
    return [g for g in groups if g]


def validate_read_options(options: Mapping[str, str]) -> None:
    """Check the ``hoodie.*`` options of a read (ConfigError naming a bad key or value).

    Write options are accepted (and ignored, except the bucket keys) so that one option dict
    can serve both ``df.write`` and ``spark.read``.
    """
    validate_options(options)


__all__ = [
    "HudiBatchReader",
    "HudiInputPartition",
    "HudiPushdownReader",
    "pack_slices",
    "pinned_instant",
    "plan_groups",
    "spark_filters_to_hudi",
    "stale_snapshot_note",
]
