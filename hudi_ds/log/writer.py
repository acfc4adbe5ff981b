"""Encoding Hudi log blocks (pure encoding: bytes out, no file IO).

Each function returns one complete framed block (:func:`hudi_ds.log.block.encode_block`) that a
writer appends to a log file. Headers are exactly what Spark writes: data and delete blocks carry
``{INSTANT_TIME, SCHEMA}``, rollback command blocks
``{INSTANT_TIME, COMMAND_BLOCK_TYPE, TARGET_INSTANT_TIME}``.
"""

from __future__ import annotations

import io
import struct
from dataclasses import dataclass
from decimal import Decimal
from functools import lru_cache
from typing import Any, cast

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from fastavro import parse_schema, schemaless_writer

from hudi_ds.errors import SchemaError
from hudi_ds.layout.hfile import TRAILER_MAGIC, TRAILER_SIZE
from hudi_ds.layout.parquet import dictionary_columns_of, parquet_block_content
from hudi_ds.log.block import (
    CONTENT_VERSION,
    DELETE_RECORD_LIST_SCHEMA,
    ORDERING_WRAPPERS,
    ROLLBACK_COMMAND,
    WRAPPER_NAMESPACE,
    BlockType,
    HeaderKey,
    encode_block,
)
from hudi_ds.schema.avro import (
    AvroSchema,
    AvroSlot,
    AvroType,
    arrow_type_of,
    avro_schema_json,
    cached_arrow_schema,
    resolve_avro,
)
from hudi_ds.schema.evolution import conform_table
from hudi_ds.schema.records import to_physical

_DELETE_SCHEMA = parse_schema(DELETE_RECORD_LIST_SCHEMA)
#: What Spark SQL writes for "no ordering value": ``IntWrapper(0)``.
_NO_ORDERING = (f"{WRAPPER_NAMESPACE}.IntWrapper", {"value": 0})


def _data_header(
    instant_time: str, schema_json: str, partial: bool = False
) -> dict[HeaderKey, str]:
    header = {HeaderKey.INSTANT_TIME: instant_time, HeaderKey.SCHEMA: schema_json}
    if partial:
        # Hudi 1.x: the SCHEMA header holds only the columns the rows carry
        header[HeaderKey.IS_PARTIAL] = "true"
    return header


# --------------------------------------------------------------------------------------------
# Columnar Avro binary encoding
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Seg:
    """One byte string per row: row ``i`` is ``data[offs[i]:offs[i + 1]]`` (``offs[0] == 0``)."""

    data: np.ndarray
    offs: np.ndarray

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.offs)


def _seg(data: np.ndarray, lengths: np.ndarray) -> _Seg:
    offs = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offs[1:])
    return _Seg(np.ascontiguousarray(data, dtype=np.uint8).reshape(-1), offs)


def _fixed_seg(data: np.ndarray, n: int, width: int) -> _Seg:
    offs = np.arange(n + 1, dtype=np.int64) * width
    return _Seg(np.ascontiguousarray(data, dtype=np.uint8).reshape(-1), offs)


def _empty_seg(n: int) -> _Seg:
    return _Seg(np.zeros(0, np.uint8), np.zeros(n + 1, np.int64))


def _varints(values: np.ndarray) -> _Seg:
    """Avro ``int``/``long``: zigzag, then little-endian base-128 groups (1 to 10 bytes)."""
    v = np.asarray(values).astype(np.int64)
    z = ((v << 1) ^ (v >> 63)).view(np.uint64)
    nbytes = np.ones(len(z), dtype=np.int64)
    for group in range(1, 10):
        nbytes += (z >> np.uint64(7 * group)) != 0
    width = int(nbytes.max()) if len(z) else 1
    pos = np.arange(width)
    shifts = (np.uint64(7) * pos.astype(np.uint64))[None, :]
    groups = ((z[:, None] >> shifts) & np.uint64(0x7F)).astype(np.uint8)
    groups |= np.where(pos[None, :] < (nbytes - 1)[:, None], 0x80, 0).astype(np.uint8)
    return _seg(groups[pos[None, :] < nbytes[:, None]], nbytes)


def _raw_bytes(arr: pa.Array) -> _Seg:
    """The bytes of each value of a string/binary/fixed-size-binary array."""
    n = len(arr)
    if pa.types.is_string_view(arr.type) or pa.types.is_binary_view(arr.type):
        arr = arr.cast(pa.binary())
    buf = arr.buffers()[-1]
    data = np.frombuffer(buf, dtype=np.uint8) if buf is not None else np.zeros(0, np.uint8)
    if pa.types.is_fixed_size_binary(arr.type):
        w = arr.type.byte_width
        return _fixed_seg(data[arr.offset * w : (arr.offset + n) * w], n, w)
    large = pa.types.is_large_string(arr.type) or pa.types.is_large_binary(arr.type)
    offsets = np.frombuffer(arr.buffers()[1], dtype=np.int64 if large else np.int32)
    offsets = offsets[arr.offset : arr.offset + n + 1].astype(np.int64)
    return _Seg(data[offsets[0] : offsets[-1]], offsets - offsets[0])


def _scatter(out: np.ndarray, seg: _Seg, dst_start: np.ndarray) -> None:
    """Copy row ``i`` of ``seg`` to ``out[dst_start[i]:]`` for every row at once."""
    if seg.data.size == 0:
        return
    lengths = seg.lengths
    if lengths.min() == lengths.max() == 1:
        out[dst_start] = seg.data
        return
    if lengths.min() == lengths.max():
        idx = (dst_start[:, None] + np.arange(lengths[0])).reshape(-1)
    else:
        idx = np.repeat(dst_start - seg.offs[:-1], lengths) + np.arange(seg.data.size)
    out[idx] = seg.data


def _concat(segs: list[_Seg], n: int) -> _Seg:
    """Row-wise concatenation: row ``i`` of the result is row ``i`` of every seg in turn."""
    if not segs:
        return _empty_seg(n)
    if len(segs) == 1:
        return segs[0]
    lengths = np.stack([s.lengths for s in segs], axis=1)
    out = _seg(np.empty(int(lengths.sum()), dtype=np.uint8), lengths.sum(axis=1))
    starts = out.offs[:-1, None] + np.cumsum(lengths, axis=1) - lengths
    for j, s in enumerate(segs):
        _scatter(out.data, s, starts[:, j])
    return out


def _expand(seg: _Seg, valid: np.ndarray) -> _Seg:
    """Spread the rows of ``seg`` over the ``valid`` positions; the other rows are empty."""
    lengths = np.zeros(len(valid), dtype=np.int64)
    lengths[valid] = seg.lengths
    return _seg(seg.data, lengths)


def _child_range(arr: pa.Array) -> tuple[np.ndarray, int, int]:
    """Offsets of a list/map array (rebased to 0) and the range of its child it uses."""
    offsets = np.asarray(arr.offsets, dtype=np.int64)
    return offsets - offsets[0], int(offsets[0]), int(offsets[-1] - offsets[0])


def _encode_blocks(offsets: np.ndarray, entries: list[_Seg]) -> list[_Seg]:
    """Avro array/map of each row: the count (if > 0), the entries, then a ``0`` end marker.

    ``offsets`` (``n + 1``, from 0) say which consecutive ``entries`` rows form each row.
    """
    n = len(offsets) - 1
    counts = np.diff(offsets)
    nonempty = counts > 0
    count_seg = _expand(_varints(counts[nonempty]), nonempty)
    joined = _concat(entries, int(offsets[-1]))
    grouped = _Seg(joined.data, joined.offs[offsets])
    return [count_seg, grouped, _fixed_seg(np.zeros(n, np.uint8), n, 1)]


def _numbers(arr: pa.Array) -> np.ndarray:
    return np.asarray(arr.to_numpy(zero_copy_only=False))


def _encode_value(arr: pa.Array, t: AvroType, path: str) -> list[_Seg]:
    """Avro binary of each value of ``arr`` (physical values, no nulls) of Avro type ``t``.

    Returned as parts: row ``i`` is row ``i`` of every part in turn (concatenated only once,
    by the caller that needs contiguous bytes).
    """
    n, kind = len(arr), t.kind
    if kind == "null":
        return []
    if kind == "boolean":
        return [_fixed_seg(_numbers(arr).astype(np.uint8), n, 1)]
    if kind in ("int", "long"):
        return [_varints(_numbers(arr))]
    if kind in ("float", "double"):
        values = _numbers(arr).astype("<f4" if kind == "float" else "<f8")
        return [_fixed_seg(values.view(np.uint8), n, values.itemsize)]
    if kind in ("bytes", "string"):
        raw = _raw_bytes(arr)
        return [_varints(raw.lengths), raw]
    if kind == "fixed":
        raw = _raw_bytes(arr)
        if n and (raw.lengths != t.size).any():
            raise SchemaError(f"column {path!r}: values must be {t.size} bytes (Avro fixed)")
        return [raw]
    if kind == "enum":
        index = pc.index_in(arr, value_set=pa.array(t.symbols, pa.string()))
        if index.null_count:
            raise SchemaError(f"column {path!r}: a value is not one of the symbols {t.symbols}")
        return [_varints(_numbers(index))]
    if kind == "record":
        sarr = cast(pa.StructArray, arr)
        return [
            part
            for i, f in enumerate(t.fields)
            for part in _encode_slot(sarr.field(i), f, f"{path}.{f.name}")
        ]
    assert t.items is not None
    offsets, start, size = _child_range(arr)
    if kind == "array":
        items = cast(pa.ListArray, arr).values.slice(start, size)
        return _encode_blocks(offsets, _encode_slot(items, t.items, f"{path}[]"))
    marr = cast(pa.MapArray, arr)
    keys = _encode_value(marr.keys.slice(start, size), AvroType("string"), f"{path}{{key}}")
    items_parts = _encode_slot(marr.items.slice(start, size), t.items, f"{path}{{}}")
    return _encode_blocks(offsets, keys + items_parts)


def _encode_slot(arr: pa.Array, slot: AvroSlot, path: str) -> list[_Seg]:
    """Avro binary of a field/element/value: the union branch index (for a union), the value."""
    n = len(arr)
    if arr.null_count and not slot.nullable:
        raise SchemaError(f"column {path!r} holds nulls but its Avro type is not nullable")
    if not slot.union:
        return _encode_value(arr, slot.type, path)
    valid = np.ones(n, dtype=bool) if arr.null_count == 0 else _valid(arr)
    # zigzag of a union branch index below 64 is one byte: 2 * index
    null_byte, value_byte = 2 * (slot.null_index or 0), 2 * (slot.value_index or 0)
    branch = _fixed_seg(np.where(valid, value_byte, null_byte).astype(np.uint8), n, 1)
    if slot.value_index is None or not valid.any():
        return [branch]
    if valid.all():
        return [branch, *_encode_value(arr, slot.type, path)]
    parts = _encode_value(arr.filter(pa.array(valid)), slot.type, path)
    return [branch, *(_expand(part, valid) for part in parts)]


def _valid(arr: pa.Array) -> np.ndarray:
    return np.asarray(arr.is_valid().to_numpy(zero_copy_only=False), dtype=bool)


@lru_cache(maxsize=64)
def _writer_plan(schema_json: str) -> tuple[AvroType, pa.Schema]:
    node = resolve_avro(schema_json)
    if node.kind != "record":
        raise SchemaError(f"the Avro schema must be a record, got {node.kind!r}")
    return node, pa.schema(cast(pa.StructType, arrow_type_of(node)))


def _record_parts(table: pa.Table, avro_schema: AvroSchema) -> list[_Seg]:
    node, arrow = _writer_plan(avro_schema_json(avro_schema))
    table = conform_table(table, arrow)
    parts = []
    for i, f in enumerate(node.fields):
        column = to_physical(table.column(i).combine_chunks(), f.type)
        parts.extend(_encode_slot(column, f, f.name))
    return parts


def encode_avro_records(table: pa.Table, avro_schema: AvroSchema) -> tuple[bytes, np.ndarray]:
    """Avro binary datums of the rows of ``table``, vectorised (no per-row Python code).

    The table is first cast to the schema's types (:func:`hudi_ds.schema.evolution.conform_table`).
    Returns the concatenated datums and the ``n + 1`` row offsets into them; each datum is
    byte for byte what ``fastavro.schemaless_writer`` and Java's ``BinaryEncoder`` write.

    Raises:
        SchemaError: the table does not fit the schema.
    """
    rows = _concat(_record_parts(table, avro_schema), table.num_rows)
    return rows.data.tobytes(), rows.offs


def encode_avro_data_block(
    table: pa.Table, instant_time: str, avro_schema: AvroSchema, partial: bool = False
) -> bytes:
    """Encode ``table`` as an ``AVRO_DATA`` block (content version 3).

    Content grammar: ``int32 3, int32 count, count x (int32 n, n bytes of Avro binary datum)``,
    each datum written schemaless with ``avro_schema`` (which the block carries as its ``SCHEMA``
    header, meta fields included).

    Args:
        table: the records; cast to the schema's types with
            :func:`hudi_ds.schema.evolution.conform_table`.
        instant_time: the writing instant (``INSTANT_TIME`` header).
        avro_schema: the full record schema; a JSON string is written to the header verbatim.
        partial: the rows are partial updates and ``avro_schema`` holds only their columns
            (adds the ``IS_PARTIAL`` header, as Hudi 1.x does).

    Raises:
        SchemaError: the table does not fit the schema.
    """
    schema_json = avro_schema_json(avro_schema)
    parts = _record_parts(table, schema_json)
    n = table.num_rows
    sizes = np.sum([p.lengths for p in parts], axis=0) if parts else np.zeros(n, np.int64)
    length_prefix = _fixed_seg(np.asarray(sizes, dtype=">i4").view(np.uint8), n, 4)
    framed = _concat([length_prefix, *parts], n)
    content = struct.pack(">ii", CONTENT_VERSION, n) + framed.data.tobytes()
    header = _data_header(instant_time, schema_json, partial)
    return encode_block(BlockType.AVRO_DATA, header, content)


def encode_parquet_data_block(
    table: pa.Table,
    instant_time: str,
    avro_schema: AvroSchema,
    compression: str = "snappy",
    dictionary_columns: list[str] | None = None,
    partial: bool = False,
    metadata_collector: list[pq.FileMetaData] | None = None,
) -> bytes:
    """Encode ``table`` as a ``PARQUET_DATA`` block: the content is one complete Parquet file.

    The file holds the rows in the Arrow types of ``avro_schema`` and, like Hudi's Avro parquet
    writer, the schema in the ``parquet.avro.schema`` footer key.

    Args:
        table: the records (cast with :func:`hudi_ds.schema.evolution.conform_table`).
        instant_time: the writing instant.
        avro_schema: the full record schema (also the ``SCHEMA`` header).
        compression: Parquet codec (``snappy``, ``gzip``, ``zstd``, ``none``...).
        dictionary_columns: columns to dictionary-encode (default: chosen from the data by
            :func:`hudi_ds.layout.parquet.dictionary_columns_of`; writers pass a choice made
            once per task).
        partial: the rows are partial updates (``IS_PARTIAL`` header; see
            :func:`encode_avro_data_block`).
        metadata_collector: receives the Parquet file's footer as written.
    """
    schema_json = avro_schema_json(avro_schema)
    table = conform_table(table, cached_arrow_schema(schema_json))
    table = table.replace_schema_metadata(
        {"parquet.avro.schema": schema_json, "writer.model.name": "avro"}
    )
    if dictionary_columns is None:
        dictionary_columns = dictionary_columns_of(table)
    # page CRCs (as parquet-mr writes by default): log blocks have no checksum of their own,
    # so a flipped byte in a data page is caught when the block is read
    content = parquet_block_content(table, compression, dictionary_columns, metadata_collector)
    header = _data_header(instant_time, schema_json, partial)
    return encode_block(BlockType.PARQUET_DATA, header, content)


# --------------------------------------------------------------------------------------------
# Delete blocks
# --------------------------------------------------------------------------------------------


def _wrapper_name(t: pa.DataType) -> str | None:
    """Union branch (wrapper record) for ordering values of Arrow type ``t``."""
    checks = [
        (pa.types.is_boolean, "BooleanWrapper"),
        (lambda x: pa.types.is_integer(x) and x.bit_width <= 16, "IntWrapper"),
        (lambda x: pa.types.is_signed_integer(x) and x.bit_width == 32, "IntWrapper"),
        (pa.types.is_integer, "LongWrapper"),
        (lambda x: pa.types.is_floating(x) and x.bit_width <= 32, "FloatWrapper"),
        (pa.types.is_floating, "DoubleWrapper"),
        (lambda x: pa.types.is_string(x) or pa.types.is_large_string(x), "StringWrapper"),
        (lambda x: pa.types.is_binary(x) or pa.types.is_large_binary(x), "BytesWrapper"),
        (pa.types.is_date, "DateWrapper"),
        (pa.types.is_decimal, "DecimalWrapper"),
        (lambda x: pa.types.is_time(x), "TimeMicrosWrapper"),
        (pa.types.is_timestamp, "TimestampMicrosWrapper"),
    ]
    for check, name in checks:
        if check(t):
            return name
    return None


def _ordering_python(values: pa.Array, wrapper: str) -> list[Any]:
    """Python values for the wrapper's ``value`` field (ints for dates/times/timestamps)."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if pa.types.is_dictionary(values.type):
        values = values.dictionary_decode()
    t = values.type
    try:
        if wrapper == "LongWrapper":
            values = values.cast(pa.int64())
        elif wrapper == "FloatWrapper":
            values = values.cast(pa.float32())
        elif wrapper == "DateWrapper":
            values = values.cast(pa.date32()).cast(pa.int32())
        elif wrapper == "TimeMicrosWrapper":
            values = values.cast(pa.time64("us")).cast(pa.int64())
        elif wrapper == "TimestampMicrosWrapper":
            values = values.cast(pa.timestamp("us", tz=t.tz)).cast(pa.int64())
        elif wrapper == "DecimalWrapper":
            if t.scale > 15 or t.precision - t.scale > 15:
                raise SchemaError(f"ordering values of type {t} do not fit decimal(30,15)")
            return [None if v is None else Decimal(v) for v in values.to_pylist()]
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
        raise SchemaError(f"ordering values of type {t} cannot be wrapped: {e}") from e
    return values.to_pylist()


def _wrapped_ordering(ordering_values: pa.Array | None, n: int) -> list[Any]:
    if ordering_values is None or pa.types.is_null(ordering_values.type):
        return [_NO_ORDERING] * n
    if len(ordering_values) != n:
        raise SchemaError(f"{len(ordering_values)} ordering values for {n} keys")
    t = ordering_values.type
    wrapper = _wrapper_name(t.value_type if pa.types.is_dictionary(t) else t)
    if wrapper is None:
        raise SchemaError(f"ordering values of type {t} have no Hudi wrapper type")
    name = f"{WRAPPER_NAMESPACE}.{wrapper}"
    return [
        _NO_ORDERING if v is None else (name, {"value": v})
        for v in _ordering_python(ordering_values, wrapper)
    ]


def _strings(arr: pa.Array, what: str) -> list[str | None]:
    try:
        return list(arr.cast(pa.string()).to_pylist())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
        raise SchemaError(f"{what} must be strings: {e}") from e


def encode_delete_block(
    keys: pa.Array,
    partitions: pa.Array,
    ordering_values: pa.Array | None,
    instant_time: str,
    avro_schema: AvroSchema,
) -> bytes:
    """Encode a version-3 ``DELETE`` block.

    Content grammar: ``int32 3, int32 n, n bytes`` = Avro binary of ``HoodieDeleteRecordList``
    (see :func:`hudi_ds.log.reader.decode_delete_block`). Ordering values are wrapped by Arrow
    type: bool -> BooleanWrapper, int8..int32 -> IntWrapper, int64/uint32/uint64 -> LongWrapper,
    float16/32 -> FloatWrapper, float64 -> DoubleWrapper, string -> StringWrapper, binary ->
    BytesWrapper, date -> DateWrapper (epoch days), decimal -> DecimalWrapper (decimal(30,15)),
    time -> TimeMicrosWrapper, timestamp -> TimestampMicrosWrapper (epoch micros); a null value
    (or no ``ordering_values`` at all) -> ``IntWrapper(0)``, as Spark SQL deletes write.

    Args:
        keys: record keys (no nulls).
        partitions: partition paths (``""`` for non-partitioned tables), same length.
        ordering_values: ordering field values of the deleted records, or None.
        instant_time: the writing instant.
        avro_schema: the table's record schema (``SCHEMA`` header; readers ignore it).

    Raises:
        SchemaError: null keys, mismatched lengths or an ordering type Hudi cannot wrap.
    """
    n = len(keys)
    if len(partitions) != n:
        raise SchemaError(f"{len(partitions)} partition paths for {n} keys")
    if keys.null_count:
        raise SchemaError("record keys of a delete block must not be null")
    body = _delete_records_vectorised(keys, partitions, ordering_values)
    if body is None:
        body = _delete_records_fastavro(keys, partitions, ordering_values, n)
    content = struct.pack(">ii", CONTENT_VERSION, len(body)) + body
    header = _data_header(instant_time, avro_schema_json(avro_schema))
    return encode_block(BlockType.DELETE, header, content)


def _zigzag_varints(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Avro's zig-zag varint encoding of int64 ``values``, all at once: the bytes of every
    value back to back, and each value's byte count."""
    v = values.astype(np.int64)
    z = ((v << 1) ^ (v >> 63)).view(np.uint64)
    nbytes = np.ones(len(z), dtype=np.int64)
    if not len(z) or int(z.max()) < 0x80:  # the common case: one byte each
        return z.astype(np.uint8), nbytes
    rest = z >> np.uint64(7)
    while rest.any():
        nbytes += rest > 0
        rest >>= np.uint64(7)
    ends = np.cumsum(nbytes)
    starts = ends - nbytes
    out = np.empty(int(ends[-1]) if len(ends) else 0, dtype=np.uint8)
    idx = np.arange(len(out)) - np.repeat(starts, nbytes)  # byte position within its value
    group = (np.repeat(z, nbytes) >> (7 * idx).astype(np.uint64)) & np.uint64(0x7F)
    more = idx < np.repeat(nbytes, nbytes) - 1
    out[:] = (group | (more.astype(np.uint64) << np.uint64(7))).astype(np.uint8)
    return out, nbytes


def _string_parts(arr: pa.Array) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """The UTF-8 bytes, offsets and lengths of a string array without nulls (None otherwise)."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    if not (pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type)) or arr.null_count:
        return None
    if pa.types.is_string(arr.type):
        arr = arr.cast(pa.large_string())  # 64-bit offsets
    bufs = arr.buffers()
    offsets = np.frombuffer(bufs[1], dtype=np.int64)[arr.offset : arr.offset + len(arr) + 1]
    data = np.frombuffer(bufs[2], dtype=np.uint8) if bufs[2] is not None else np.zeros(0, np.uint8)
    return data, offsets, np.diff(offsets)


#: fewer delete records than this encode faster through fastavro (numpy's per-call costs)
_VECTORISED_MIN_RECORDS = 32


def _delete_records_vectorised(
    keys: pa.Array, partitions: pa.Array, ordering_values: pa.Array | None
) -> bytes | None:
    """The Avro binary of ``HoodieDeleteRecordList`` built with numpy over all records (byte
    for byte what fastavro writes: one array block of n items, then the 0 terminator), for
    string keys and partition paths without nulls and ordering values that are absent, all
    null (``IntWrapper(0)``), or integers (``IntWrapper`` / ``LongWrapper``) without nulls,
    from :data:`_VECTORISED_MIN_RECORDS` records on. None for other inputs
    (:func:`_delete_records_fastavro` encodes them)."""
    n = len(keys)
    if n < _VECTORISED_MIN_RECORDS:
        return None
    k = _string_parts(keys)
    p = _string_parts(partitions)
    if k is None or p is None:
        return None
    ordering = _vectorised_ordering(ordering_values, n)
    if ordering is None:
        return None
    branch, ovals = ordering
    # per record: [2][len key][key][2][len part][part][union branch][ordering value]
    kdata, koff, klen = k
    pdata, poff, plen = p
    klv, kln = _zigzag_varints(klen)
    plv, pln = _zigzag_varints(plen)
    bv, bn = _zigzag_varints(np.full(n, branch, dtype=np.int64))
    ovv, ovn = _zigzag_varints(ovals)
    rec_len = 1 + kln + klen + 1 + pln + plen + bn + ovn
    rec_end = np.cumsum(rec_len)
    rec_start = rec_end - rec_len
    head, _ = _zigzag_varints(np.array([n], dtype=np.int64))
    out = np.empty(len(head) + int(rec_end[-1]) + 1, dtype=np.uint8)
    out[: len(head)] = head
    out[-1] = 0  # end of the array
    body = out[len(head) : len(out) - 1]
    ones = np.ones(n, dtype=np.int64)
    pos = rec_start
    body[pos] = 2  # recordKey: union branch 1 (string)
    pos = pos + 1
    _put_bytes(body, pos, klv, kln, np.cumsum(kln) - kln)
    pos = pos + kln
    _put_bytes(body, pos, kdata, klen, koff[:-1])
    pos = pos + klen
    body[pos] = 2  # partitionPath: union branch 1 (string)
    pos = pos + ones
    _put_bytes(body, pos, plv, pln, np.cumsum(pln) - pln)
    pos = pos + pln
    _put_bytes(body, pos, pdata, plen, poff[:-1])
    pos = pos + plen
    _put_bytes(body, pos, bv, bn, np.cumsum(bn) - bn)
    pos = pos + bn
    _put_bytes(body, pos, ovv, ovn, np.cumsum(ovn) - ovn)
    return out.tobytes()


def _vectorised_ordering(ordering_values: pa.Array | None, n: int) -> tuple[int, np.ndarray] | None:
    """The ordering wrapper's union branch and the ``n`` values as int64, for the ordering
    values :func:`_delete_records_vectorised` encodes (absent or all null: ``IntWrapper(0)``;
    integers without nulls); None for the others."""
    wrappers = [name for name, _ in ORDERING_WRAPPERS]
    if (
        ordering_values is None
        or pa.types.is_null(ordering_values.type)
        or (len(ordering_values) == n and ordering_values.null_count == n)
    ):
        return 1 + wrappers.index("IntWrapper"), np.zeros(n, dtype=np.int64)  # null: branch 0
    ov = ordering_values
    if isinstance(ov, pa.ChunkedArray):
        ov = ov.combine_chunks()
    t = ov.type
    if len(ov) != n or ov.null_count or not pa.types.is_integer(t):
        return None
    wrapper = _wrapper_name(t)
    if wrapper not in ("IntWrapper", "LongWrapper"):
        return None
    if pa.types.is_unsigned_integer(t) and t.bit_width == 64 and pc.max(ov).as_py() >= 1 << 63:
        return None  # fastavro refuses it: keep its error
    return 1 + wrappers.index(wrapper), np.asarray(ov.cast(pa.int64()), dtype=np.int64)


def _put_bytes(
    body: np.ndarray, pos: np.ndarray, src: np.ndarray, lens: np.ndarray, src_start: np.ndarray
) -> None:
    """Copy the bytes ``src[src_start[i] : src_start[i] + lens[i]]`` of every record ``i`` to
    ``body[pos[i]:]``, all records in one scatter (a direct one for one byte per record)."""
    total = int(lens.sum())
    if total == 0:
        return
    if total == len(pos) and len(src) == len(pos):  # one byte per record, in record order
        body[pos] = src
        return
    within = np.arange(total) - np.repeat(np.cumsum(lens) - lens, lens)
    body[np.repeat(pos, lens) + within] = src[np.repeat(src_start, lens) + within]


def _delete_records_fastavro(
    keys: pa.Array, partitions: pa.Array, ordering_values: pa.Array | None, n: int
) -> bytes:
    """The Avro binary of ``HoodieDeleteRecordList``, record by record through fastavro (the
    inputs :func:`_delete_records_vectorised` does not take)."""
    ordering = _wrapped_ordering(ordering_values, n)
    records = [
        {"recordKey": k, "partitionPath": p, "orderingVal": o}
        for k, p, o in zip(
            _strings(keys, "record keys"),
            _strings(partitions, "partition paths"),
            ordering,
            strict=True,
        )
    ]
    payload = io.BytesIO()
    try:
        schemaless_writer(payload, _DELETE_SCHEMA, {"deleteRecordList": records})
    except (ValueError, TypeError, OverflowError) as e:
        raise SchemaError(f"delete records do not encode: {e}") from e
    return payload.getvalue()


def encode_rollback_command_block(instant_time: str, target_instant_time: str) -> bytes:
    """Encode a rollback ``COMMAND`` block that invalidates ``target_instant_time``'s blocks.

    Empty content; header ``INSTANT_TIME`` (the rollback instant), ``COMMAND_BLOCK_TYPE="0"``
    (rollback), ``TARGET_INSTANT_TIME`` (the failed instant) -- byte-identical to Hudi 0.x.
    """
    header = {
        HeaderKey.INSTANT_TIME: instant_time,
        HeaderKey.COMMAND_BLOCK_TYPE: ROLLBACK_COMMAND,
        HeaderKey.TARGET_INSTANT_TIME: target_instant_time,
    }
    return encode_block(BlockType.COMMAND, header, b"")


# --------------------------------------------------------------------------------------------
# Metadata table blocks
# --------------------------------------------------------------------------------------------


def encode_hfile_data_block(instant_time: str, schema_json: str, hfile: bytes) -> bytes:
    """Encode an ``HFILE_DATA`` block, as the metadata table's log files hold them.

    The content is one complete HFile (:func:`hudi_ds.layout.hfile.write_hfile`), with no
    version prefix (Java ``HoodieHFileDataBlock``); header ``INSTANT_TIME`` (the metadata
    table's deltacommit) and ``SCHEMA`` (the writer schema, the same JSON as the HFile's
    ``schema`` file info entry); no footer.

    Raises:
        ValueError: ``hfile`` does not end with an HFile trailer.
    """
    if len(hfile) < TRAILER_SIZE or hfile[-TRAILER_SIZE:][: len(TRAILER_MAGIC)] != TRAILER_MAGIC:
        raise ValueError("HFILE_DATA block content must be a complete HFile (no trailer found)")
    header = {HeaderKey.INSTANT_TIME: instant_time, HeaderKey.SCHEMA: schema_json}
    return encode_block(BlockType.HFILE_DATA, header, bytes(hfile))


def encode_empty_delete_block(instant_time: str) -> bytes:
    """Encode the empty ``DELETE`` block Java writes into the first log file of each metadata
    table file group when it initialises a partition (80 bytes for a 17-digit instant).

    Header: ``INSTANT_TIME`` only. Content: version 3, then the Avro binary of a
    ``HoodieDeleteRecordList`` with no records (one byte ``00``) with its int32 length.
    """
    payload = io.BytesIO()
    schemaless_writer(payload, _DELETE_SCHEMA, {"deleteRecordList": []})
    body = payload.getvalue()
    content = struct.pack(">ii", CONTENT_VERSION, len(body)) + body
    return encode_block(BlockType.DELETE, {HeaderKey.INSTANT_TIME: instant_time}, content)
