"""Data skipping: prune file slices with the metadata table's ``column_stats`` partition and
partitions with its ``partition_stats`` partition (Java ``hoodie.enable.data.skipping``).

A filter rules a file out when its statistics say no row can match: ``=`` / ``in`` outside
``[min, max]``, ``<`` / ``<=`` below min, ``>`` / ``>=`` above max, ``!=`` when min and max are
the value, ``is null`` with a null count of 0, any comparison (and ``is not null``) when every
value is null (null count = value count); Java's ``DataSkippingUtils`` rules. A file without
rows of the column (a deletes-only log file: value count 0) is ruled out by every filter: it
adds no row. (A column a file lacks has no live record -- Java's stub records are
tombstones -- so the file is not covered and is read.)

Java's ``HoodieFileIndex.lookupCandidateFilesInMetadataTable`` turns the query's filters into
predicates over each file's min / max / null count (``DataSkippingUtils``) and keeps a file
slice when any of its files -- base or log -- is a candidate, a file the index does not cover
being one. Here a slice is skipped only when one filter rules out every file of the slice:
a merged row takes each column's value from one version of the record, so a column's values
in a slice lie within the union of its files' ranges, whatever the merge (partial updates
included); a CUSTOM merger may compute values, so a slice with logs of such a table is
always read. The filters are ANDed: a file or partition any one of them rules out holds no
row of the answer.

Partition stats bound a partition's *latest* slices (recomputed when a commit writes the
partition, widened by merges): they prune partitions of a read of the latest snapshot only,
never a time travel or incremental read, whose older slices may hold other values; and only
of a table whose base files are Parquet (a Lance base file gets no statistics, and Java's
partition record then leaves its values out).
Column stats name a file, and a file's range only widens (a v6 log file appended by several
commits gets the union), so they prune every query type.

The same ranges bound the rows of each slice of a ``pyarrow.dataset`` (:func:`slice_bounds`),
for engines that push their own filters. Only the records of the columns asked for are read
(their keys share the column's hash prefix), once per metadata reader.

Min and max compare as the column's Arrow type; floating point columns are not used (Parquet
statistics leave out NaN, which an Arrow ``!=`` matches) and neither is a column whose
records disagree on the value type (the column changed type).
"""

from __future__ import annotations

import decimal
import logging
import threading
import weakref
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from hudi_ds.errors import CorruptFileError
from hudi_ds.layout.file_group import FileSlice
from hudi_ds.metadata.column_stats import (
    COLUMN_STATS_PARTITION,
    PARTITION_STATS_PARTITION,
    ColumnRange,
    ValueType,
    range_of_record,
    stats_key_prefix,
)
from hudi_ds.metadata.reader import MetadataReader
from hudi_ds.metadata.records import declared_partitions
from hudi_ds.metadata.stats_reader import stats_sources
from hudi_ds.schema.meta import META_FIELDS
from hudi_ds.table.filters import Filter
from hudi_ds.table_config import BaseFileFormat, TableConfig
from hudi_ds.timeline.timeline import Timeline

log = logging.getLogger("hudi_ds.read")

__all__ = ["DataSkipping", "slice_bounds"]

# an IN list longer than this is not evaluated against the ranges (one pass per value)
_MAX_IN_VALUES = 256

_INT32 = {ValueType.INT, ValueType.DATE, ValueType.TIME_MILLIS}
_INT64 = {ValueType.LONG, ValueType.TIME_MICROS}
_TIMESTAMP_UNIT = {
    ValueType.TIMESTAMP_MILLIS: "ms",
    ValueType.TIMESTAMP_MICROS: "us",
    ValueType.TIMESTAMP_NANOS: "ns",
    ValueType.LOCAL_TIMESTAMP_MILLIS: "ms",
    ValueType.LOCAL_TIMESTAMP_MICROS: "us",
    ValueType.LOCAL_TIMESTAMP_NANOS: "ns",
}


def _typed(values: list[Any], rng: ColumnRange, field: pa.Field) -> pa.Array:
    """``values`` (primitives of ``rng``'s value type) as an array of ``field``'s type.

    Raises:
        pa.ArrowException, TypeError, ValueError: they do not convert.
    """
    vt, t = rng.value_type, field.type
    if vt == ValueType.DECIMAL:
        scaled = [None if v is None else decimal.Decimal(v).scaleb(-rng.scale) for v in values]
        return pa.array(scaled, pa.decimal128(38, rng.scale)).cast(t)
    if vt in _TIMESTAMP_UNIT and pa.types.is_timestamp(t):
        tz = getattr(t, "tz", None)
        raw = pa.array(values, pa.int64()).cast(pa.timestamp(_TIMESTAMP_UNIT[vt], tz))
        return raw.cast(t)
    if vt in _INT32:
        return pa.array(values, pa.int32()).cast(t)
    if vt in _INT64:
        return pa.array(values, pa.int64()).cast(t)
    if vt == ValueType.BOOLEAN and pa.types.is_boolean(t):
        return pa.array(values, pa.bool_())
    if vt in (ValueType.STRING, ValueType.UUID) and (
        pa.types.is_string(t) or pa.types.is_large_string(t)
    ):
        return pa.array(values, pa.string()).cast(t)
    raise TypeError(f"no pruning with {vt.name} statistics of a {t} column")


class _ColumnRanges:
    """One column's ranges over many files (or partitions), as Arrow arrays."""

    def __init__(
        self,
        names: list[str],
        mins: pa.Array,
        maxs: pa.Array,
        some: pa.Array,
        nulls: pa.Array,
    ) -> None:
        self.names = pa.array(names, pa.string())
        self.mins = mins
        self.maxs = maxs
        #: the file holds a non-null value of the column (a null never matches a comparison)
        self.some = some
        #: the file holds a null of the column
        self.nulls = nulls

    @classmethod
    def of(cls, ranges: Sequence[ColumnRange], field: pa.Field) -> _ColumnRanges | None:
        """None when the column cannot prune (float, unknown or mixed value types)."""
        if not ranges or pa.types.is_floating(field.type):
            return None
        types = {r.value_type for r in ranges if r.value_type != ValueType.NULL}
        if len(types) > 1 or len({r.scale for r in ranges}) > 1:
            return None
        sample = next((r for r in ranges if r.value_type != ValueType.NULL), ranges[0])
        try:
            mins = _typed([r.min_value for r in ranges], sample, field)
            maxs = _typed([r.max_value for r in ranges], sample, field)
        except (pa.ArrowException, TypeError, ValueError, decimal.InvalidOperation) as e:
            log.debug("data skipping: column %s is not used (%s)", field.name, e)
            return None
        return cls(
            [r.name for r in ranges],
            mins,
            maxs,
            pa.array([r.value_count > r.null_count for r in ranges], pa.bool_()),
            pa.array([r.null_count > 0 for r in ranges], pa.bool_()),
        )

    def ruled_out(self, op: str, value: Any) -> set[str]:
        """The names whose ranges hold no value satisfying ``column op value``."""
        if op == "is null":
            # a file whose writer left statistics out (no min / max) has no null count either
            keep = pc.or_(self.nulls, pc.and_(self.some, pc.is_null(self.mins)))
        else:
            may = self._may_match(op, value)
            keep = self.some if may is None else pc.and_(self.some, pc.fill_null(may, True))
        return set(pc.filter(self.names, pc.invert(keep)).to_pylist())

    def _may_match(self, op: str, value: Any) -> pa.Array | None:
        lo, hi = self.mins, self.maxs
        if op == "in":
            values = list(value)
            if len(values) > _MAX_IN_VALUES:
                return None
            out = pa.array([False] * len(self.names), pa.bool_())
            for v in values:
                if v is None:
                    continue
                out = pc.or_(out, self._may_match("=", v))
            return out
        if op in ("not in", "is not null"):
            return None
        s = value if isinstance(value, pa.Scalar) else pa.scalar(value)
        if op == "=":
            return pc.and_(pc.less_equal(lo, s), pc.greater_equal(hi, s))
        if op == "!=":
            return pc.invert(pc.and_(pc.equal(lo, s), pc.equal(hi, s)))
        if op == "<":
            return pc.less(lo, s)
        if op == "<=":
            return pc.less_equal(lo, s)
        if op == ">":
            return pc.greater(hi, s)
        if op == ">=":
            return pc.greater_equal(hi, s)
        return None


def _ranges_by_column(records: Mapping[str, Mapping[str, Any]]) -> dict[str, list[ColumnRange]]:
    out: dict[str, list[ColumnRange]] = {}
    for stats in records.values():
        if stats.get("isDeleted"):
            continue
        r = range_of_record(stats)
        out.setdefault(r.column, []).append(r)
    return out


def _ruled_out(
    columns: Mapping[str, _ColumnRanges | None], filters: Sequence[Filter]
) -> list[set[str]]:
    """Per filter on a covered column, the names (files or partitions) it rules out."""
    out = []
    for col, op, value in filters:
        rng = columns.get(col)
        if rng is None:
            continue
        try:
            gone = rng.ruled_out(op, value)
        except (pa.ArrowException, TypeError, ValueError) as e:
            log.debug("data skipping: filter %r is not used (%s)", (col, op, value), e)
            continue
        if gone:
            out.append(gone)
    return out


# A metadata reader serves one state of the metadata table (a table handle keeps it while its
# timeline stands): the ranges it holds are decoded once per partition and column, and a
# handle's later reads, datasets and Spark plans evaluate filters against them.
_RANGES: weakref.WeakKeyDictionary[
    MetadataReader, dict[tuple[str, str, str], _ColumnRanges | None]
] = weakref.WeakKeyDictionary()


class _SharedRanges:
    """Ranges by the fingerprint of the statistics they come from
    (:attr:`~hudi_ds.metadata.stats_reader.StatsSources.fingerprint`), partition and column,
    kept per process: a new table handle on an unchanged table (a fresh read) finds them
    without decoding the statistics again. Least recently used dropped past ``max_files``
    files' ranges in all (a file's range: its name, min and max, some 100 bytes). Thread-safe.
    """

    def __init__(self, max_files: int = 1 << 19) -> None:
        self._max = max_files
        self._entries: OrderedDict[tuple[Any, ...], _ColumnRanges | None] = OrderedDict()
        self._files = 0
        self._lock = threading.Lock()

    def get(self, key: tuple[Any, ...]) -> tuple[bool, _ColumnRanges | None]:
        with self._lock:
            if key not in self._entries:
                return False, None
            self._entries.move_to_end(key)
            return True, self._entries[key]

    def put(self, key: tuple[Any, ...], ranges: _ColumnRanges | None) -> None:
        n = 0 if ranges is None else len(ranges.names)
        if n > self._max:
            return
        with self._lock:
            old = self._entries.pop(key, None)
            self._files -= 0 if old is None else len(old.names)
            self._entries[key] = ranges
            self._files += n
            while self._files > self._max:
                _, gone = self._entries.popitem(last=False)
                self._files -= 0 if gone is None else len(gone.names)


_SHARED_RANGES = _SharedRanges()


def _column_ranges(
    config: TableConfig,
    data_timeline: Timeline,
    reader: MetadataReader,
    partition: str,
    fields: Sequence[pa.Field],
) -> dict[str, _ColumnRanges | None]:
    """The ranges of ``fields`` in stats partition ``partition``, by column name (None: the
    column cannot prune); only the records of those columns are read, and only when this
    process has not derived them from the same statistics already.

    Raises:
        CorruptFileError: the statistics do not decode.
    """
    cache = _RANGES.setdefault(reader, {})
    missing = [f for f in fields if (partition, f.name, str(f.type)) not in cache]
    if missing:
        sources = stats_sources(
            reader.storage, reader.timeline, data_timeline, config.table_version, partition
        )
        fp = sources.fingerprint
        undecoded = []
        for f in missing:
            found, ranges = (
                _SHARED_RANGES.get((fp, partition, f.name, str(f.type)))
                if fp is not None
                else (False, None)
            )
            if found:
                cache[(partition, f.name, str(f.type))] = ranges
            else:
                undecoded.append(f)
        if undecoded:
            records = sources.read(None, [stats_key_prefix(f.name) for f in undecoded])
            by_column = _ranges_by_column(records)
            for f in undecoded:
                got = by_column.get(f.name, [])
                ranges = _ColumnRanges.of(got, f) if got else None
                cache[(partition, f.name, str(f.type))] = ranges
                if fp is not None:
                    _SHARED_RANGES.put((fp, partition, f.name, str(f.type)), ranges)
    return {f.name: cache[(partition, f.name, str(f.type))] for f in fields}


def _name(path: str) -> str:
    return path.rsplit("/", 1)[-1]


class DataSkipping:
    """What the metadata table's statistics rule out for a read's filters.

    Build it with :meth:`plan`; :meth:`partition` and :meth:`keep_slice` answer, and the
    counters say how much was skipped.
    """

    def __init__(
        self, files_out: list[set[str]], partitions_out: list[set[str]], custom_merge: bool
    ) -> None:
        self._files_out = files_out
        self._partitions_out = partitions_out
        self._custom_merge = custom_merge
        self.skipped_slices = 0
        self.skipped_partitions = 0
        self._decided: dict[str, bool] = {}
        self._skipped_groups: set[tuple[str, str]] = set()

    @classmethod
    def plan(
        cls,
        config: TableConfig,
        schema: pa.Schema,
        data_timeline: Timeline,
        reader: MetadataReader | None,
        filters: Sequence[Filter],
        *,
        latest: bool,
        custom_merge: bool,
    ) -> DataSkipping | None:
        """The data skipping of a read, or None when it skips nothing.

        Args:
            config: the data table's ``hoodie.properties``.
            schema: the table schema.
            data_timeline: the data timeline the metadata table was checked against.
            reader: the metadata table's reader when it is in step with the data timeline
                (:meth:`ReadableTable.metadata_reader`), else None: nothing is skipped.
            filters: the read's normalized filters.
            latest: the read sees the latest snapshot (partition stats may prune).
            custom_merge: the table merges with a CUSTOM merger.
        """
        filters = [f for f in filters if not pa.types.is_floating(schema.field(f[0]).type)]
        if reader is None or not filters:
            return None
        declared = set(declared_partitions(config))
        fields = [schema.field(c) for c in dict.fromkeys(c for c, _, _ in filters)]

        def read(partition: str) -> list[set[str]]:
            if partition not in declared:
                return []
            columns = _column_ranges(config, data_timeline, reader, partition, fields)
            return _ruled_out(columns, filters)

        # a base file of another format gets no statistics (Java writes none for Lance or
        # ORC), so a partition's record does not bound the rows of such files
        parquet = config.base_file_format is BaseFileFormat.PARQUET
        try:
            files_out = read(COLUMN_STATS_PARTITION)
            parts_out = read(PARTITION_STATS_PARTITION) if latest and parquet else []
        except CorruptFileError as e:
            # the statistics only narrow a read: without them every file is read
            log.warning("data skipping is off for this read: %s", e)
            return None
        if not files_out and not parts_out:
            return None
        return cls(files_out, parts_out, custom_merge)

    def partition(self, p: str) -> bool:
        """Whether partition ``p`` may hold rows of the answer (decided once)."""
        if p not in self._decided:
            gone = any(p in out for out in self._partitions_out)
            self._decided[p] = not gone
            self.skipped_partitions += gone
        return self._decided[p]

    def keep_slice(self, s: FileSlice) -> bool:
        """Whether slice ``s`` may hold rows of the answer: some filter must rule out every
        file of it (base and logs) for it to be skipped."""
        if not self._files_out or (self._custom_merge and s.log_files):
            return True
        names = [_name(lf.path) for lf in s.log_files]
        if s.base_file is not None:
            names.append(_name(s.base_file.path))
        if not names:
            return True
        if any(all(n in out for n in names) for out in self._files_out):
            self.skipped_slices += 1
            self._skipped_groups.add((s.partition_path, s.file_id))
            return False
        return True

    def ruled_out(self, p: str, file_id: str) -> bool:
        """Whether the statistics ruled out file group ``file_id`` of partition ``p`` (its
        partition, or its slice, as decided by :meth:`partition` / :meth:`keep_slice`)."""
        return self._decided.get(p) is False or (p, file_id) in self._skipped_groups


def _bound(field: str, lo: Any, hi: Any, some: bool, nulls: bool) -> pc.Expression | None:
    """What every value of ``field`` in a slice satisfies: within ``[lo, hi]`` (or NULL)."""
    f = pc.field(field)
    if not some:
        return f.is_null() if nulls else None
    e = (f >= lo) & (f <= hi)
    return e | f.is_null() if nulls else e


def slice_bounds(
    config: TableConfig,
    schema: pa.Schema,
    data_timeline: Timeline,
    reader: MetadataReader,
    slices: Sequence[FileSlice],
    *,
    custom_merge: bool,
) -> dict[tuple[str, str], pc.Expression]:
    """Per file slice ``(partition, file id)``, what every row it returns satisfies by the
    ``column_stats`` of its files: ``lo <= column <= hi`` (``or column is null`` where a
    file holds nulls), for each column of ``schema`` (Hudi's meta columns left out) that
    every file of the slice has a usable record of. The rules of :meth:`DataSkipping.plan`:
    a merged row takes each column's value from one version of the record, so the union of
    the files' ranges bounds it; no bounds for slices with logs of a CUSTOM-merged table.

    A dataset hands these to Arrow as its fragments' guarantees, so an engine's own filter
    (DuckDB's, polars') skips the slices the statistics rule out unopened, as Java's
    ``HoodieFileIndex`` prunes a Spark query's file slices with the pushed data filters.

    Raises:
        CorruptFileError: the statistics do not decode.
    """
    if COLUMN_STATS_PARTITION not in declared_partitions(config) or not slices:
        return {}
    # the table's own columns (a stats record decodes in Python: tens of microseconds, for
    # every file and column, paid when the dataset is built, filtered or not)
    fields = [
        f
        for f in schema
        if f.name not in META_FIELDS
        and not (pa.types.is_floating(f.type) or pa.types.is_nested(f.type))
        and not pa.types.is_binary(f.type)
    ]
    ranges = _column_ranges(config, data_timeline, reader, COLUMN_STATS_PARTITION, fields)
    owner, files = _files_of_slices(slices, custom_merge)
    per_slice: dict[int, list[pc.Expression]] = {}
    for field in fields:
        rng = ranges[field.name]
        if rng is not None:
            for i, e in _column_bounds(field.name, rng, owner, files):
                per_slice.setdefault(i, []).append(e)
    out: dict[tuple[str, str], pc.Expression] = {}
    for i, exprs in per_slice.items():
        s = slices[i]
        e = exprs[0]
        for x in exprs[1:]:
            e = e & x
        out[(s.partition_path, s.file_id)] = e
    return out


def _files_of_slices(
    slices: Sequence[FileSlice], custom_merge: bool
) -> tuple[list[int], list[str]]:
    """``(slice index, file name)`` of every file of ``slices`` (no slice with logs of a
    CUSTOM-merged table: its merger may compute values)."""
    owner: list[int] = []
    files: list[str] = []
    for i, s in enumerate(slices):
        if custom_merge and s.log_files:
            continue
        names = [_name(lf.path) for lf in s.log_files]
        if s.base_file is not None:
            names.append(_name(s.base_file.path))
        owner += [i] * len(names)
        files += names
    return owner, files


def _column_bounds(
    column: str, rng: _ColumnRanges, owner: list[int], files: list[str]
) -> list[tuple[int, pc.Expression]]:
    """Per slice index, the bounds of ``column`` over the slice's files (``owner[k]`` owns
    ``files[k]``): the union of their ranges; none for a slice with a file the statistics do
    not cover or that has values but no min / max."""
    at = pc.index_in(pa.array(files, pa.string()), value_set=rng.names)
    some = pc.take(rng.some, at)
    mins = pc.take(rng.mins, at)
    unknown = pc.or_kleene(pc.is_null(at), pc.and_(some, pc.is_null(mins)))
    grouped = (
        pa.table(
            {
                "slice": pa.array(owner, pa.int64()),
                "unknown": pc.fill_null(unknown, True),
                "min": mins,
                "max": pc.take(rng.maxs, at),
                "some": pc.fill_null(some, False),
                "nulls": pc.fill_null(pc.take(rng.nulls, at), False),
            }
        )
        .group_by("slice")
        .aggregate(
            [("unknown", "any"), ("min", "min"), ("max", "max"), ("some", "any"), ("nulls", "any")]
        )
    )
    lo, hi = grouped.column("min_min"), grouped.column("max_max")
    names = ("slice", "unknown_any", "some_any", "nulls_any")
    flags = zip(*(grouped.column(n).to_pylist() for n in names), strict=True)
    out = []
    for j, (i, unknown_any, some_any, nulls_any) in enumerate(flags):
        e = None if unknown_any else _bound(column, lo[j], hi[j], some_any, nulls_any)
        if e is not None:
            out.append((i, e))
    return out
