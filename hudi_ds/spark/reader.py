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

Filters (only with ``spark.sql.python.filterPushdown.enabled=true``, see
:class:`HudiPushdownReader`): every filter is returned to Spark, which evaluates it again, so
pruning may be inexact but never loses a row.
"""

from __future__ import annotations

import dataclasses
import heapq
import itertools
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
    LessThan,
    LessThanOrEqual,
    Not,
)
from pyspark.sql.types import StructType

from hudi_ds.config import Options, ReadConfig, all_scopes, properties_of
from hudi_ds.errors import ConfigError, HudiError
from hudi_ds.index import records_another_index
from hudi_ds.index.bucket import (
    HASH_FIELD_KEY,
    NUM_BUCKETS_KEY,
    bucket_ids_from_record_keys,
    validate_hash_fields,
    validate_num_buckets,
)
from hudi_ds.keygen import record_keys
from hudi_ds.layout.file_group import FileSlice
from hudi_ds.layout.naming import bucket_id_of
from hudi_ds.spark import options as opt
from hudi_ds.spark.options import SparkConfig
from hudi_ds.spark.types import conform_batch, read_arrow_schema
from hudi_ds.table.filters import filter_expression
from hudi_ds.table.table import ReadableTable, ReadPlan
from hudi_ds.write.operation import OPERATION_OPTION_KEYS

HudiFilter = tuple[str, str, Any]

#: the keys :meth:`ReadableTable.plan_read` understands (lower-cased, aliases included).
READ_KEYS = frozenset(k.lower() for p in properties_of(ReadConfig) for k in p.all_keys())
#: at most this many candidate record keys are hashed for bucket pruning.
MAX_BUCKET_KEYS = 4096
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
    """

    index: int
    slices: tuple[FileSlice, ...]
    plan: ReadPlan

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
        plan = table.plan_read(self.read_options(), columns, self.filters)
        return table, plan

    def partitions(self) -> list[InputPartition]:
        """File slices packed into read tasks (a list, as pyspark requires)."""
        table, plan = self.plan()
        slices = prune_buckets(table, plan.slices, self.filters, self.options)
        header = without_slices(plan)
        groups = plan_groups(slices, self.connector)
        return [
            HudiInputPartition(i, tuple(g), _with_ranges_of(header, g))
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
        for batch in table.read_plan_slices(partition.plan, partition.slices):
            if batch.num_rows:
                yield conform_batch(batch, target)


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
    evaluate against the column's type.
    """
    out: list[HudiFilter] = []
    for f in filters:
        t = _translate(f)
        if t is None:
            continue
        col = t[0]
        idx = schema.get_field_index(col)
        if idx < 0 or pa.types.is_floating(schema.field(idx).type):
            continue
        try:
            expr = filter_expression([t])
            if expr is not None:
                pa.schema([schema.field(idx)]).empty_table().filter(expr)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError, HudiError):
            continue
        except (TypeError, ValueError):
            continue
        out.append(t)
    return out


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
        return None
    if attribute is None or len(attribute) != 1:
        return None
    col = attribute[0]
    if type(f) in _BINARY:
        value = f.value  # type: ignore[attr-defined]
        return None if value is None else (col, _BINARY[type(f)], value)
    if isinstance(f, EqualNullSafe):
        return None if f.value is None else (col, "=", f.value)
    if isinstance(f, In):
        values = [v for v in f.value if v is not None]
        return (col, "in", values) if values else None
    return None


# ------------------------------------------------------------------------------- buckets
def bucket_config(table: ReadableTable, options: Mapping[str, str]) -> tuple[int, list[str]] | None:
    """``(num_buckets, hash_fields)`` of a bucket-index table, or None when unknown.

    From the read options ``hoodie.bucket.index.num.buckets`` / ``hoodie.bucket.index.hash.field``
    or, failing that, the same keys in ``hoodie.properties``; None for a table that records
    another index (``hoodie.index.type``).

    Raises:
        ConfigError: an invalid value.
    """
    if records_another_index(table.config):
        return None  # a table hudi_ds created with another index: fileIds are not buckets
    raw = options.get(NUM_BUCKETS_KEY) or table.config.get(NUM_BUCKETS_KEY)
    if raw is None:
        return None
    try:
        n = int(str(raw).strip())
    except ValueError:
        raise ConfigError(f"{NUM_BUCKETS_KEY}={raw!r}: must be an integer") from None
    validate_num_buckets(n)
    rk = table.config.record_key_fields
    if not rk:
        return None
    hash_raw = options.get(HASH_FIELD_KEY) or table.config.get(HASH_FIELD_KEY)
    return n, validate_hash_fields(hash_raw, rk)


def candidate_buckets(
    table: ReadableTable, filters: Sequence[HudiFilter], num_buckets: int, hash_fields: list[str]
) -> set[int] | None:
    """The buckets that can hold rows matching ``filters``, or None when not determined.

    Determined when every record key field is fixed by ``=`` / ``in`` filters: the candidate
    record keys are then built exactly as the writer builds them and hashed as Java Hudi does.
    """
    cfg = table.config
    fields = cfg.record_key_fields
    values: dict[str, set[Any]] = {}
    for col, op, value in filters:
        if col not in fields or op not in ("=", "in"):
            continue
        vs = set(value) if op == "in" else {value}
        values[col] = values[col] & vs if col in values else vs
    if any(f not in values for f in fields):
        return None
    combos = math.prod(len(values[f]) for f in fields)
    if combos == 0:
        return set()
    if combos > MAX_BUCKET_KEYS:
        return None
    schema = table.schema
    rows = list(itertools.product(*(sorted(values[f], key=repr) for f in fields)))
    try:
        cols = {
            f: pa.array([r[i] for r in rows], schema.field(f).type) for i, f in enumerate(fields)
        }
        keys = record_keys(pa.table(cols), fields, cfg.complex_record_key)
        ids = bucket_ids_from_record_keys(keys, hash_fields, num_buckets, cfg.complex_record_key)
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, HudiError, KeyError):
        return None
    except (TypeError, ValueError, OverflowError):
        return None
    return {int(b) for b in ids}


def prune_buckets(
    table: ReadableTable,
    slices: Sequence[FileSlice],
    filters: Sequence[HudiFilter],
    options: Mapping[str, str],
) -> list[FileSlice]:
    """Drop bucket file groups that cannot hold the record keys the filters ask for.

    File groups whose id is not a bucket id (8 digits first) are always kept.
    """
    if not filters:
        return list(slices)
    conf = bucket_config(table, options)
    if conf is None:
        return list(slices)
    buckets = candidate_buckets(table, filters, *conf)
    if buckets is None:
        return list(slices)
    out = []
    for s in slices:
        bucket = bucket_id_of(s.file_id)
        if bucket is None or bucket in buckets:
            out.append(s)
    return out


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


def _with_ranges_of(header: ReadPlan, slices: list[FileSlice]) -> ReadPlan:
    """``header`` carrying the committed log ranges of ``slices`` only (small task payloads)."""
    ranges = header.context.log_ranges or {}
    if not ranges:
        return header
    mine = {lf.path: ranges[lf.path] for s in slices for lf in s.log_files if lf.path in ranges}
    out = without_slices(header)
    out.context = dataclasses.replace(header.context, log_ranges=mine)
    return out


def without_slices(plan: ReadPlan) -> ReadPlan:
    """``plan`` without its file slices: the header every read task of the plan carries (its
    own slices travel beside it), so a task's payload does not grow with the table."""
    return ReadPlan(
        plan.visibility,
        plan.context,
        [],
        plan.columns,
        plan.filters,
        plan.commit_times,
        plan.output_schema,
    )


def validate_read_options(options: Mapping[str, str]) -> None:
    """Check the ``hoodie.*`` options of a read (ConfigError naming a bad key or value).

    Write options are accepted (and ignored, except the bucket keys) so that one option dict
    can serve both ``df.write`` and ``spark.read``.
    """
    Options.of(options).validate(*all_scopes(), ignored=OPERATION_OPTION_KEYS)


__all__ = [
    "HudiBatchReader",
    "HudiInputPartition",
    "HudiPushdownReader",
    "pack_slices",
    "plan_groups",
    "prune_buckets",
    "spark_filters_to_hudi",
    "without_slices",
]
