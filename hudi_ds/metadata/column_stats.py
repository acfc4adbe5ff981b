"""Records of the metadata table's ``column_stats`` and ``partition_stats`` partitions.

One ``column_stats`` record (``type`` :data:`COLUMN_STATS`) per (data file, indexed column):
``HoodieMetadataColumnStats`` -- the file name, the column, its min and max value wrapped in one
of the ``*Wrapper`` records, value count, null count, total (compressed) size and uncompressed
size. One ``partition_stats`` record (``type`` :data:`PARTITION_STATS`) per (data partition,
column): the same record aggregated over the partition's latest file slices, ``fileName``
holding the partition path and ``isTightBound`` set.

Keys (Java ``HoodieMetadataPayload.getColumnStatsIndexKey`` / ``getPartitionStatsIndexKey``):
base64 of ``ColumnIndexID`` (XXHash64 of the column name, 8 bytes big-endian) + base64 of
``PartitionIndexID`` (XXHash64 of the partition identifier, ``.`` when non-partitioned) [+ base64
of ``FileIndexID``: MD5 of the file name, 16 bytes]; Java ``HashID`` hashes with seed
``0xdabadaba`` sign-extended to 64 bits.

Where the numbers come from (Java ``HoodieTableMetadataUtil.readColumnRangeMetadataFrom``):
a Parquet base file's footer (per row group, merged: Java ``ParquetUtils.
readColumnStatsFromMetadata``); a log file's data records read without merging (sizes 0;
``collectColumnRangeMetadata``). A file is tombstoned (``isDeleted``) when a clean deletes it.

Values: on table version 9 each record carries ``valueType`` (Java ``ValueType``'s ordinal
and, for decimals, ``"precision,scale"``) and the value in its primitive wrapper (a decimal as
its unscaled two's-complement bytes in ``BytesWrapper``, a date as days in ``IntWrapper``, a
timestamp as a long); version 8 (Java ``ValueType.V1``) wraps the Java value itself
(``HoodieAvroUtils.wrapValueIntoAvro``: a decimal rescaled to 15 digits in ``DecimalWrapper``, a
date in ``DateWrapper``); version 6 has no ``isTightBound``.
"""

from __future__ import annotations

import base64
import decimal
import enum
import functools
import hashlib
import io
import json
import struct
import typing
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import fastavro
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from hudi_ds.errors import ConfigError, CorruptFileError
from hudi_ds.metadata.records import NON_PARTITIONED
from hudi_ds.metadata.stats_avro import stats_record_writer

__all__ = [
    "COLUMN_STATS",
    "COLUMN_STATS_PARTITION",
    "META_COLUMNS_TO_INDEX",
    "PARTITION_STATS",
    "PARTITION_STATS_PARTITION",
    "ColumnRange",
    "ValueType",
    "column_stats_key",
    "columns_to_index",
    "decode_stats_value",
    "encode_stats_value",
    "merge_ranges",
    "merge_stats",
    "partition_file_key",
    "partition_stats_key",
    "range_of_record",
    "ranges_of_parquet",
    "ranges_of_table",
    "ranges_of_written_rows",
    "reencode_stats",
    "stats_key_prefix",
]

COLUMN_STATS = 3
"""``type`` of a ``column_stats`` record (Java ``METADATA_TYPE_COLUMN_STATS``)."""
PARTITION_STATS = 6
"""``type`` of a ``partition_stats`` record (Java ``METADATA_TYPE_PARTITION_STATS``)."""
COLUMN_STATS_PARTITION = "column_stats"
PARTITION_STATS_PARTITION = "partition_stats"

META_COLUMNS_TO_INDEX = ("_hoodie_commit_time", "_hoodie_partition_path", "_hoodie_record_key")
"""Meta columns always indexed when the table populates them (Java
``HoodieTableMetadataUtil.META_COLS_TO_ALWAYS_INDEX``, a sorted map)."""
_META_COLUMNS = frozenset(
    {
        "_hoodie_commit_time",
        "_hoodie_commit_seqno",
        "_hoodie_record_key",
        "_hoodie_partition_path",
        "_hoodie_file_name",
        "_hoodie_operation",
    }
)

_NS = "org.apache.hudi.avro.model."
_HASH_SEED = 0xFFFFFFFFDABADABA  # Java HashID: the int 0xdabadaba widened to a long
_DECIMAL_MAX_PRECISION = 30
_DECIMAL_MAX_SCALE = 15


class ValueType(enum.IntEnum):
    """Java ``org.apache.hudi.stats.ValueType``: the ordinal is written as ``typeOrdinal``."""

    V1 = 0
    NULL = 1
    BOOLEAN = 2
    INT = 3
    LONG = 4
    FLOAT = 5
    DOUBLE = 6
    STRING = 7
    BYTES = 8
    FIXED = 9
    DECIMAL = 10
    UUID = 11
    DATE = 12
    TIME_MILLIS = 13
    TIME_MICROS = 14
    TIMESTAMP_MILLIS = 15
    TIMESTAMP_MICROS = 16
    TIMESTAMP_NANOS = 17
    LOCAL_TIMESTAMP_MILLIS = 18
    LOCAL_TIMESTAMP_MICROS = 19
    LOCAL_TIMESTAMP_NANOS = 20


# the wrapper record each value type is written in (Java PrimitiveWrapperType)
_WRAPPER = {
    ValueType.BOOLEAN: "BooleanWrapper",
    ValueType.INT: "IntWrapper",
    ValueType.LONG: "LongWrapper",
    ValueType.FLOAT: "FloatWrapper",
    ValueType.DOUBLE: "DoubleWrapper",
    ValueType.STRING: "StringWrapper",
    ValueType.BYTES: "BytesWrapper",
    ValueType.FIXED: "BytesWrapper",
    ValueType.DECIMAL: "BytesWrapper",
    ValueType.UUID: "StringWrapper",
    ValueType.DATE: "IntWrapper",
    ValueType.TIME_MILLIS: "IntWrapper",
    ValueType.TIME_MICROS: "LongWrapper",
    ValueType.TIMESTAMP_MILLIS: "LongWrapper",
    ValueType.TIMESTAMP_MICROS: "LongWrapper",
    ValueType.TIMESTAMP_NANOS: "LongWrapper",
    ValueType.LOCAL_TIMESTAMP_MILLIS: "LongWrapper",
    ValueType.LOCAL_TIMESTAMP_MICROS: "LongWrapper",
    ValueType.LOCAL_TIMESTAMP_NANOS: "LongWrapper",
}

# version 8 (ValueType.V1): the Java value's own wrapper (HoodieAvroUtils.wrapValueIntoAvro)
_V1_WRAPPER = {
    **_WRAPPER,
    ValueType.DECIMAL: "DecimalWrapper",
    ValueType.DATE: "DateWrapper",
    ValueType.TIMESTAMP_MICROS: "TimestampMicrosWrapper",
    ValueType.TIME_MICROS: "TimeMicrosWrapper",
}


@dataclass(frozen=True)
class ColumnRange:
    """The statistics of one column in one file (or, for partition stats, one partition).

    Attributes:
        name: the file name (partition stats: the partition path).
        column: the column name.
        min_value: the smallest non-null value in its primitive form (an int, float, bool,
            str, bytes, or for a decimal its unscaled int), None when there is none.
        max_value: the largest, likewise.
        null_count: null values.
        value_count: values, nulls included.
        total_size: the column chunks' compressed bytes (0 for log files).
        total_uncompressed_size: their uncompressed bytes (0 for log files).
        value_type: how the value is typed (:class:`ValueType`).
        precision: a decimal's precision (0 otherwise).
        scale: a decimal's scale (0 otherwise).
    """

    name: str
    column: str
    min_value: Any
    max_value: Any
    null_count: int
    value_count: int
    total_size: int
    total_uncompressed_size: int
    value_type: ValueType
    precision: int = 0
    scale: int = 0


# -- keys -----------------------------------------------------------------------------------------


def _xxh64(data: bytes, seed: int) -> int:
    """XXHash64 (the reference algorithm) of ``data``; Java ``XXHash64`` of Hudi's ``HashID``."""
    m = (1 << 64) - 1
    p1, p2, p3, p4, p5 = (
        0x9E3779B185EBCA87,
        0xC2B2AE3D27D4EB4F,
        0x165667B19E3779F9,
        0x85EBCA77C2B2AE63,
        0x27D4EB2F165667C5,
    )

    def rotl(x: int, r: int) -> int:
        return ((x << r) | (x >> (64 - r))) & m

    def rnd(acc: int, v: int) -> int:
        return (rotl((acc + v * p2) & m, 31) * p1) & m

    n, i = len(data), 0
    if n >= 32:
        v = [(seed + p1 + p2) & m, (seed + p2) & m, seed & m, (seed - p1) & m]
        while i + 32 <= n:
            lanes = struct.unpack_from("<4Q", data, i)
            v = [rnd(a, b) for a, b in zip(v, lanes, strict=True)]
            i += 32
        h = (rotl(v[0], 1) + rotl(v[1], 7) + rotl(v[2], 12) + rotl(v[3], 18)) & m
        for lane in v:
            h = ((h ^ rnd(0, lane)) * p1 + p4) & m
    else:
        h = (seed + p5) & m
    h = (h + n) & m
    while i + 8 <= n:
        h ^= rnd(0, struct.unpack_from("<Q", data, i)[0])
        h = (rotl(h, 27) * p1 + p4) & m
        i += 8
    if i + 4 <= n:
        h ^= (struct.unpack_from("<I", data, i)[0] * p1) & m
        h = (rotl(h, 23) * p2 + p3) & m
        i += 4
    while i < n:
        h ^= (data[i] * p5) & m
        h = (rotl(h, 11) * p1) & m
        i += 1
    h ^= h >> 33
    h = (h * p2) & m
    h ^= h >> 29
    h = (h * p3) & m
    return h ^ (h >> 32)


@functools.lru_cache(maxsize=4096)
def _hash_id64(text: str) -> str:
    digest = struct.pack(">Q", _xxh64(text.encode("utf-8"), _HASH_SEED))
    return base64.b64encode(digest).decode("ascii")


def _partition_identifier(partition_path: str) -> str:
    return partition_path or NON_PARTITIONED


@functools.lru_cache(maxsize=1 << 14)
def _file_index_id(file_name: str) -> str:
    return base64.b64encode(hashlib.md5(file_name.encode("utf-8")).digest()).decode("ascii")


def column_stats_key(column: str, partition_path: str, file_name: str) -> str:
    """The ``column_stats`` record key of ``column`` in ``file_name`` of ``partition_path``
    (``""`` non-partitioned); Java ``HoodieMetadataPayload.getColumnStatsIndexKey``."""
    return (
        _hash_id64(column)
        + _hash_id64(_partition_identifier(partition_path))
        + _file_index_id(file_name)
    )


def partition_file_key(partition_path: str, file_name: str) -> str:
    """``PartitionIndexID`` + ``FileIndexID`` of ``file_name`` in ``partition_path`` (``""``
    non-partitioned), base64 each: the key of a ``bloom_filters`` record (Java
    ``HoodieMetadataPayload.getBloomFilterRecordKey``) and the tail of a column stats key."""
    return _hash_id64(_partition_identifier(partition_path)) + _file_index_id(file_name)


def stats_key_prefix(column: str) -> str:
    """The prefix every ``column_stats`` and ``partition_stats`` key of ``column`` starts with
    (its hash; :func:`column_stats_key`), so a reader can pick a column's records by key."""
    return _hash_id64(column)


def partition_stats_key(column: str, partition_path: str) -> str:
    """The ``partition_stats`` record key of ``column`` in ``partition_path``; Java
    ``HoodieTableMetadataUtil.getPartitionStatsIndexKey``."""
    return _hash_id64(column) + _hash_id64(_partition_identifier(partition_path))


# -- which columns --------------------------------------------------------------------------------


def _supported(t: pa.DataType) -> bool:
    """Java ``HoodieTableMetadataUtil.isColumnTypeSupported`` (Spark records): no nested
    types, no plain bytes; decimals that fit ``decimal(30,15)``."""
    if pa.types.is_decimal(t):
        dt = typing.cast(pa.Decimal128Type, t)
        return (
            dt.precision + (_DECIMAL_MAX_SCALE - dt.scale) <= _DECIMAL_MAX_PRECISION
            and dt.scale <= _DECIMAL_MAX_SCALE
        )
    if pa.types.is_nested(t) or pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return False
    return not pa.types.is_fixed_size_binary(t)


def columns_to_index(
    schema: pa.Schema,
    *,
    populate_meta_fields: bool,
    column_list: Sequence[str] = (),
    max_columns: int = 32,
) -> list[str]:
    """The columns the ``column_stats`` partition indexes (Java
    ``HoodieTableMetadataUtil.getColumnsToIndex``): the record key, partition path and commit
    time meta columns when the table populates them, then ``column_list``
    (``hoodie.metadata.index.column.stats.column.list``) or else the first ``max_columns``
    (``...max.columns.to.index``) top-level columns of a supported type.

    Raises:
        ConfigError: a listed column is not in ``schema``.
    """
    out = list(META_COLUMNS_TO_INDEX) if populate_meta_fields else []
    if column_list:
        missing = [c for c in column_list if c not in schema.names]
        if missing:
            raise ConfigError(
                f"hoodie.metadata.index.column.stats.column.list names columns the table does "
                f"not have: {missing} (columns: {schema.names})"
            )
        listed = [
            c
            for c in column_list
            if c not in META_COLUMNS_TO_INDEX and _supported(schema.field(c).type)
        ]
        return out + [c for c in dict.fromkeys(listed)]
    data = [f.name for f in schema if f.name not in _META_COLUMNS and _supported(f.type)]
    return out + data[:max_columns]


# -- computing ranges -----------------------------------------------------------------------------


def _parquet_value_type(col: pq.ColumnSchema) -> tuple[ValueType, int, int]:
    """Java ``ValueType.fromParquetPrimitiveType``: the annotation decides, else the physical
    type."""
    logical = col.logical_type
    name = logical.type if logical is not None else "NONE"
    if name == "DECIMAL":
        params = json.loads(logical.to_json())
        return ValueType.DECIMAL, int(params["precision"]), int(params["scale"])
    if name == "STRING" or name == "ENUM" or name == "JSON":
        return ValueType.STRING, 0, 0
    if name == "DATE":
        return ValueType.DATE, 0, 0
    if name == "UUID":
        return ValueType.UUID, 0, 0
    if name in ("TIMESTAMP", "TIME"):
        params = json.loads(logical.to_json())
        unit = str(params.get("timeUnit", "")).lower()
        utc = bool(params.get("isAdjustedToUTC", True))
        if name == "TIME":
            return (
                (ValueType.TIME_MILLIS if unit == "milliseconds" else ValueType.TIME_MICROS),
                0,
                0,
            )
        kinds = {
            "milliseconds": (ValueType.TIMESTAMP_MILLIS, ValueType.LOCAL_TIMESTAMP_MILLIS),
            "microseconds": (ValueType.TIMESTAMP_MICROS, ValueType.LOCAL_TIMESTAMP_MICROS),
            "nanoseconds": (ValueType.TIMESTAMP_NANOS, ValueType.LOCAL_TIMESTAMP_NANOS),
        }
        pair = kinds.get(unit, kinds["microseconds"])
        return pair[0] if utc else pair[1], 0, 0
    physical = {
        "INT32": ValueType.INT,
        "INT64": ValueType.LONG,
        "BOOLEAN": ValueType.BOOLEAN,
        "FLOAT": ValueType.FLOAT,
        "DOUBLE": ValueType.DOUBLE,
        "BYTE_ARRAY": ValueType.BYTES,
        "FIXED_LEN_BYTE_ARRAY": ValueType.FIXED,
    }
    return physical.get(col.physical_type, ValueType.BYTES), 0, 0


def _parquet_primitive(raw: Any, vt: ValueType) -> Any:
    """A Parquet statistic (``min_raw``/``max_raw``) in its primitive form."""
    if raw is None:
        return None
    if vt == ValueType.DECIMAL:
        if isinstance(raw, bytes):
            return int.from_bytes(raw, "big", signed=True)
        return int(raw)
    if vt in (ValueType.STRING, ValueType.UUID):
        return raw.decode("utf-8") if isinstance(raw, bytes) else str(raw)
    return raw


def ranges_of_parquet(
    metadata: pq.FileMetaData, file_name: str, columns: Iterable[str]
) -> list[ColumnRange]:
    """The ranges of ``columns`` in a Parquet file from its footer, row groups merged (Java
    ``ParquetUtils.readColumnStatsFromMetadata``); a column the file lacks, or a file without
    row groups, gets none."""
    wanted = set(columns)
    schema = metadata.schema
    index = {
        schema.column(i).path: i for i in range(len(schema)) if schema.column(i).path in wanted
    }
    out: list[ColumnRange] = []
    for col, i in index.items():
        vt, precision, scale = _parquet_value_type(schema.column(i))
        merged: ColumnRange | None = None
        for g in range(metadata.num_row_groups):
            chunk = metadata.row_group(g).column(i)
            st = chunk.statistics
            has = st is not None and st.has_min_max
            rng = ColumnRange(
                file_name,
                col,
                _parquet_primitive(st.min_raw, vt) if has and st is not None else None,
                _parquet_primitive(st.max_raw, vt) if has and st is not None else None,
                int(st.null_count or 0) if st is not None and st.has_null_count else 0,
                int(chunk.num_values),
                int(chunk.total_compressed_size),
                int(chunk.total_uncompressed_size),
                vt,
                precision,
                scale,
            )
            merged = rng if merged is None else merge_ranges(merged, rng)
        if merged is not None:  # a file without row groups has no ranges (Java iterates them)
            out.append(merged)
    return out


# the value types whose Parquet statistics are the min and max Arrow computes over the rows
# (decimals are left out); floats too, but for a zero: Parquet's writer makes a zero minimum
# -0.0 and a zero maximum +0.0 whatever the rows hold, so a zero bound is computed again
_FLOATS = frozenset({ValueType.FLOAT, ValueType.DOUBLE})
_FOOTER_TYPES = frozenset(
    {
        *_FLOATS,
        ValueType.BOOLEAN,
        ValueType.INT,
        ValueType.LONG,
        ValueType.STRING,
        ValueType.DATE,
        ValueType.TIME_MILLIS,
        ValueType.TIME_MICROS,
        ValueType.TIMESTAMP_MILLIS,
        ValueType.TIMESTAMP_MICROS,
        ValueType.LOCAL_TIMESTAMP_MILLIS,
        ValueType.LOCAL_TIMESTAMP_MICROS,
    }
)


def ranges_of_written_rows(
    metadata: pq.FileMetaData, file_name: str, columns: Iterable[str]
) -> dict[str, ColumnRange]:
    """The ranges :func:`ranges_of_table` gives the rows of a Parquet data block, of the
    ``columns`` whose statistics the block's writer computed (``metadata``: its footer,
    taken as it was written): the writer already compared every value, and one pass over
    the footer costs less than one ``min_max`` per column. Columns of other types, or
    whose statistics the writer dropped (a value over its size limit), are not returned:
    the caller computes them from the rows."""
    wanted = set(columns)
    schema = metadata.schema
    groups = [metadata.row_group(g) for g in range(metadata.num_row_groups)]
    out: dict[str, ColumnRange] = {}
    if not groups:
        return out
    for i in range(len(schema)):
        col = schema.column(i)
        path = col.path
        if path not in wanted or col.max_definition_level > 1:
            continue
        logical = col.logical_type.type
        if logical in ("TIMESTAMP", "TIME"):  # their unit decides
            vt: ValueType | None = _parquet_value_type(col)[0]
            vt = vt if vt in _FOOTER_TYPES else None
        else:
            vt = _footer_value_type(col.physical_type, logical)
        if vt is None:
            continue
        lo = hi = None
        nulls = values = 0
        for rg in groups:
            chunk = rg.column(i)
            st = chunk.statistics
            if st is None or not st.has_null_count:
                break
            n, nn = chunk.num_values, st.null_count
            if n > nn:
                if not st.has_min_max:
                    break
                a, b = st.min_raw, st.max_raw
                if vt == ValueType.STRING:
                    a, b = a.decode("utf-8"), b.decode("utf-8")
                lo, hi = _min(lo, a), _max(hi, b)
            nulls += nn
            values += n
        else:
            if vt in _FLOATS and 0.0 in (lo, hi):
                continue
            out[path] = ColumnRange(file_name, path, lo, hi, nulls, values, 0, 0, vt)
    return out


@functools.lru_cache(maxsize=64)
def _footer_value_type(physical: str, logical: str) -> ValueType | None:
    """The value type of a Parquet column whose footer statistics can stand for the rows'
    (:data:`_FOOTER_TYPES`), by physical and logical type name (not a time or timestamp:
    their unit decides); None for the others."""
    if logical == "DECIMAL":
        return None
    if logical == "STRING":
        return ValueType.STRING
    if logical == "DATE":
        return ValueType.DATE
    if logical != "NONE":  # an annotated integer may be unsigned: computed from the rows
        return None
    vt = {
        "INT32": ValueType.INT,
        "INT64": ValueType.LONG,
        "BOOLEAN": ValueType.BOOLEAN,
        "FLOAT": ValueType.FLOAT,
        "DOUBLE": ValueType.DOUBLE,
    }.get(physical)
    return vt if vt in _FOOTER_TYPES else None


@functools.lru_cache(maxsize=256)
def _arrow_value_type(t: pa.DataType) -> tuple[ValueType, int, int]:
    if pa.types.is_decimal(t):
        dt = typing.cast(pa.Decimal128Type, t)
        return ValueType.DECIMAL, dt.precision, dt.scale
    if pa.types.is_timestamp(t):
        ts = typing.cast(pa.TimestampType, t)
        utc = ts.tz is not None
        by_unit = {
            "ms": (ValueType.TIMESTAMP_MILLIS, ValueType.LOCAL_TIMESTAMP_MILLIS),
            "us": (ValueType.TIMESTAMP_MICROS, ValueType.LOCAL_TIMESTAMP_MICROS),
            "ns": (ValueType.TIMESTAMP_NANOS, ValueType.LOCAL_TIMESTAMP_NANOS),
        }
        pair = by_unit.get(ts.unit, by_unit["us"])
        return pair[0] if utc else pair[1], 0, 0
    simple = [
        (pa.types.is_boolean, ValueType.BOOLEAN),
        (pa.types.is_date32, ValueType.DATE),
        (pa.types.is_time32, ValueType.TIME_MILLIS),
        (pa.types.is_time64, ValueType.TIME_MICROS),
        (pa.types.is_int64, ValueType.LONG),
        (pa.types.is_integer, ValueType.INT),
        (pa.types.is_float32, ValueType.FLOAT),
        (pa.types.is_floating, ValueType.DOUBLE),
        (pa.types.is_string, ValueType.STRING),
        (pa.types.is_large_string, ValueType.STRING),
    ]
    for test, vt in simple:
        if test(t):
            return vt, 0, 0
    return ValueType.BYTES, 0, 0


# temporal values are kept as the integers Arrow stores them as (days, or time units)
_AS_INT32 = frozenset({ValueType.DATE, ValueType.TIME_MILLIS})
_AS_INT64 = frozenset(
    {ValueType.TIME_MICROS}
    | {v for v in ValueType if ValueType.TIMESTAMP_MILLIS <= v <= ValueType.LOCAL_TIMESTAMP_NANOS}
)


def _arrow_min_max(arr: pa.ChunkedArray, vt: ValueType) -> tuple[Any, Any]:
    """The smallest and largest non-null value of ``arr`` in their primitive form, one
    ``min_max`` over the array (temporal columns as their integers)."""
    if vt in _AS_INT32:
        arr = arr.cast(pa.int32())
    elif vt in _AS_INT64:
        arr = arr.cast(pa.int64())
    mm = pc.min_max(arr).as_py()
    lo, hi = mm["min"], mm["max"]
    if vt == ValueType.DECIMAL:
        return _unscaled(lo), _unscaled(hi)
    return lo, hi


def _unscaled(d: decimal.Decimal | None) -> int | None:
    if d is None:
        return None
    return int(d.scaleb(-typing.cast(int, d.as_tuple().exponent)))


def ranges_of_table(table: pa.Table, file_name: str, columns: Iterable[str]) -> list[ColumnRange]:
    """The ranges of ``columns`` over the rows of ``table`` (a log file's records, not merged:
    Java ``HoodieTableMetadataUtil.collectColumnRangeMetadata``; sizes are 0). A column the
    rows lack counts every row as null."""
    out = []
    n = table.num_rows
    names = set(table.column_names)
    for col in columns:
        if col not in names:
            out.append(ColumnRange(file_name, col, None, None, n, n, 0, 0, ValueType.NULL))
            continue
        arr = table.column(col)
        vt, precision, scale = _arrow_value_type(arr.type)
        nulls = arr.null_count
        lo = hi = None
        if n - nulls > 0 and vt not in (ValueType.BYTES, ValueType.NULL):
            lo, hi = _arrow_min_max(arr, vt)
        out.append(ColumnRange(file_name, col, lo, hi, nulls, n, 0, 0, vt, precision, scale))
    return out


def _min(a: Any, b: Any) -> Any:
    return b if a is None else a if b is None else min(a, b)


def _max(a: Any, b: Any) -> Any:
    return b if a is None else a if b is None else max(a, b)


def merge_ranges(a: ColumnRange, b: ColumnRange, name: str | None = None) -> ColumnRange:
    """Two ranges of one column combined (Java ``HoodieColumnRangeMetadata.merge``): min of
    the minimums, max of the maximums, counts and sizes added; named ``name`` when given.
    ``b`` is the later file's range."""
    # a range without values (a log of deletes only) does not decide the type
    typed = a if b.value_type == ValueType.NULL else b
    if ValueType.NULL not in (a.value_type, b.value_type) and a.value_type != b.value_type:
        # the column's type changed between the files: the later file's range stands, as in
        # the records Java writes (its values do not compare with the earlier ones)
        return replace(b, name=b.name if name is None else name)
    # built directly: dataclasses.replace costs several times more, and partition stats
    # merge a range per file and column
    return ColumnRange(
        b.name if name is None else name,
        typed.column,
        _min(a.min_value, b.min_value),
        _max(a.max_value, b.max_value),
        a.null_count + b.null_count,
        a.value_count + b.value_count,
        a.total_size + b.total_size,
        a.total_uncompressed_size + b.total_uncompressed_size,
        typed.value_type,
        typed.precision,
        typed.scale,
    )


# -- encoding -------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=16)
def _parsed(schema_json: str) -> Any:
    return fastavro.parse_schema(json.loads(schema_json))


@functools.lru_cache(maxsize=16)
def _fields(schema_json: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The record's field names and those of its ``HoodieMetadataColumnStats``."""
    obj = json.loads(schema_json)
    names = tuple(f["name"] for f in obj["fields"])
    stats: tuple[str, ...] = ()
    for f in obj["fields"]:
        if f["name"] == "ColumnStatsMetadata":
            rec = next(t for t in f["type"] if isinstance(t, dict))
            stats = tuple(g["name"] for g in rec["fields"])
    if not stats:
        raise CorruptFileError("the metadata record schema has no ColumnStatsMetadata")
    return names, stats


def _unscaled_bytes(unscaled: int) -> bytes:
    """Java ``BigInteger.toByteArray``: the shortest big-endian two's complement."""
    length = max(1, (unscaled + (unscaled < 0)).bit_length() // 8 + 1)
    return unscaled.to_bytes(length, "big", signed=True)


def _wrap(value: Any, rng: ColumnRange, with_type: bool) -> tuple[str, Any] | None:
    """``(wrapper name, value)`` of a min or max value."""
    if value is None:
        return None
    vt = rng.value_type
    if with_type:
        if vt == ValueType.DECIMAL:
            value = _unscaled_bytes(int(value))
        return (_WRAPPER.get(vt, "BytesWrapper"), value)
    if vt == ValueType.DECIMAL:
        # ValueType.V1 wraps the BigDecimal in DecimalWrapper: decimal(30,15)
        d = decimal.Decimal(int(value)).scaleb(-rng.scale).quantize(decimal.Decimal(1).scaleb(-15))
        return ("DecimalWrapper", d)
    return (_V1_WRAPPER.get(vt, "BytesWrapper"), value)


def encode_stats_value(
    record_type: int,
    rng: ColumnRange,
    schema_json: str,
    *,
    deleted: bool = False,
    tight_bound: bool = False,
    file_name: str | None = None,
) -> bytes:
    """The HFile value of one ``column_stats`` / ``partition_stats`` record: raw Avro binary
    of ``HoodieMetadataRecord``, ``key`` blank and the meta fields null (as ``files`` records,
    :func:`hudi_ds.metadata.records.encode_files_value`).

    Args:
        record_type: :data:`COLUMN_STATS` or :data:`PARTITION_STATS`.
        rng: the statistics (a tombstone only uses its name and column).
        schema_json: the written record schema.
        deleted: a tombstone (Java ``HoodieColumnRangeMetadata.stub``: no values, counts 0).
        tight_bound: ``isTightBound`` (partition stats).
        file_name: ``_hoodie_file_name`` (base files name themselves).
    """
    writer = stats_record_writer(schema_json)
    with_type = "valueType" in writer.fields
    if deleted:
        lo = hi = None
        counts = (0, 0, 0, 0)
    else:
        lo = _wrap(rng.min_value, rng, with_type)
        hi = _wrap(rng.max_value, rng, with_type)
        counts = (rng.value_count, rng.null_count, rng.total_size, rng.total_uncompressed_size)
    vt_info = None
    if with_type:
        info = f"{rng.precision},{rng.scale}" if rng.value_type == ValueType.DECIMAL else None
        vt_info = (int(ValueType.NULL if deleted else rng.value_type), info)
    return writer.encode(
        record_type, file_name, rng.name, rng.column, lo, hi, counts, deleted, tight_bound, vt_info
    )


def reencode_stats(
    record_type: int, stats: Mapping[str, Any], schema_json: str, *, file_name: str | None = None
) -> bytes:
    """The HFile value of a decoded stats record (:func:`decode_stats_value`), written again
    with ``schema_json`` (an MDT compaction's base file)."""
    names, stats_fields = _fields(schema_json)
    record: dict[str, Any] = dict.fromkeys(names)
    record["key"] = ""
    record["type"] = record_type
    record["_hoodie_file_name"] = file_name
    record["ColumnStatsMetadata"] = {f: stats.get(f) for f in stats_fields}
    if "isTightBound" in stats_fields and record["ColumnStatsMetadata"]["isTightBound"] is None:
        record["ColumnStatsMetadata"]["isTightBound"] = False
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, _parsed(schema_json), record)
    return buf.getvalue()


def decode_stats_value(value: bytes, schema_json: str) -> tuple[int, dict[str, Any]]:
    """Decode one stats record value: ``(type, HoodieMetadataColumnStats as a dict)``.

    Raises:
        CorruptFileError: ``value`` is not a stats record of ``schema_json``.
    """
    record_type, stats = _decoded_stats(value, schema_json)
    return record_type, dict(stats)


# A writer reads the column stats of a partition's older files at every commit that touches
# it (its partition stats are recomputed from them), and they stay the same bytes until the
# metadata table compacts: decoded once per process. A few thousand records, some MB.
@functools.lru_cache(maxsize=1 << 14)
def _decoded_stats(value: bytes, schema_json: str) -> tuple[int, dict[str, Any]]:
    try:
        # wrapped values keep their wrapper's name, (name, {"value": v}): records re-encode
        # as they were written
        record = typing.cast(
            dict[str, Any],
            fastavro.schemaless_reader(
                io.BytesIO(value),
                _parsed(schema_json),
                None,
                return_record_name=True,
                return_record_name_override=True,
            ),
        )
    except Exception as e:  # fastavro raises assorted errors on torn bytes
        raise CorruptFileError(f"unreadable metadata record value ({len(value)} bytes): {e}") from e
    stats = record.get("ColumnStatsMetadata")
    if stats is None:
        raise CorruptFileError(f"metadata record of type {record.get('type')} has no column stats")
    return int(record["type"]), stats


# the value type of a ValueType.V1 record (no valueType field), from its wrapper's name
_V1_TYPES = {
    "BooleanWrapper": ValueType.BOOLEAN,
    "IntWrapper": ValueType.INT,
    "LongWrapper": ValueType.LONG,
    "FloatWrapper": ValueType.FLOAT,
    "DoubleWrapper": ValueType.DOUBLE,
    "StringWrapper": ValueType.STRING,
    "BytesWrapper": ValueType.BYTES,
    "DateWrapper": ValueType.DATE,
    "LocalDateWrapper": ValueType.DATE,
    "DecimalWrapper": ValueType.DECIMAL,
    "TimeMicrosWrapper": ValueType.TIME_MICROS,
    "TimestampMicrosWrapper": ValueType.TIMESTAMP_MICROS,
}


def range_of_record(stats: Mapping[str, Any]) -> ColumnRange:
    """The :class:`ColumnRange` a decoded stats record (:func:`decode_stats_value`) holds, so
    that it merges with ranges computed from files (partition stats from the column stats
    already in the metadata table, as Java reads them)."""
    vt_info = stats.get("valueType")
    wrappers = [w for w in (stats.get("minValue"), stats.get("maxValue")) if w is not None]
    precision = scale = 0
    if vt_info is not None:
        vt = ValueType(int(vt_info["typeOrdinal"]))
        if vt == ValueType.DECIMAL and vt_info.get("additionalInfo"):
            precision, scale = (int(x) for x in str(vt_info["additionalInfo"]).split(","))
    elif wrappers:
        vt = _V1_TYPES.get(wrappers[0][0].rsplit(".", 1)[-1], ValueType.BYTES)
        if vt == ValueType.DECIMAL:
            precision, scale = _DECIMAL_MAX_PRECISION, _DECIMAL_MAX_SCALE
    else:
        vt = ValueType.NULL

    def primitive(w: Any) -> Any:
        v = _unwrapped(w)
        if v is None or vt != ValueType.DECIMAL:
            return v
        if isinstance(v, bytes):
            return int.from_bytes(v, "big", signed=True)
        return int(decimal.Decimal(v).scaleb(scale))

    return ColumnRange(
        str(stats.get("fileName") or ""),
        str(stats.get("columnName") or ""),
        primitive(stats.get("minValue")),
        primitive(stats.get("maxValue")),
        int(stats.get("nullCount") or 0),
        int(stats.get("valueCount") or 0),
        int(stats.get("totalSize") or 0),
        int(stats.get("totalUncompressedSize") or 0),
        vt,
        precision,
        scale,
    )


def _unwrapped(wrapper: Any) -> Any:
    """The value of a decoded wrapper, ``(name, {"value": v})``."""
    return None if wrapper is None else wrapper[1].get("value")


def _pick(a: Any, b: Any, smaller: bool) -> Any:
    if a is None or b is None:
        return b if a is None else a
    va, vb = _unwrapped(a), _unwrapped(b)
    if type(va) is not type(vb):
        return b  # values of another type (the column changed type): the newer stands
    return (a if va <= vb else b) if smaller else (a if va >= vb else b)


def merge_stats(older: Mapping[str, Any], newer: Mapping[str, Any]) -> dict[str, Any]:
    """Merge two decoded stats records of one key, ``newer`` written after ``older`` (Java
    ``HoodieTableMetadataUtil.mergeColumnStatsRecords``): a tombstone on either side, or a
    tight-bound newer record, wins; otherwise min/max combined and counts and sizes added."""
    if newer.get("isDeleted") or older.get("isDeleted") or newer.get("isTightBound"):
        return dict(newer)
    out = dict(newer)
    out["minValue"] = _pick(older.get("minValue"), newer.get("minValue"), True)
    out["maxValue"] = _pick(older.get("maxValue"), newer.get("maxValue"), False)
    for k in ("valueCount", "nullCount", "totalSize", "totalUncompressedSize"):
        out[k] = int(older.get(k) or 0) + int(newer.get(k) or 0)
    return out
