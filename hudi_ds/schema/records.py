"""Record data between Avro and Arrow: :func:`avro_records_to_arrow` /
:func:`arrow_to_avro_records`, in the shapes fastavro reads and writes, and the physical
encodings Avro gives logical types (decimals as bytes, ...)."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from decimal import Decimal
from typing import Any, cast

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hudi_ds.errors import SchemaError
from hudi_ds.schema.avro import (
    AvroSchema,
    AvroType,
    _arrow_type,
    _physical_of,
    arrow_to_avro_schema,
    decimal_fixed_size,
    resolve_avro,
)
from hudi_ds.schema.evolution import conform_table


def _validity(arr: pa.Array) -> pa.Buffer | None:
    if arr.null_count == 0:
        return None
    valid = pc.invert(arr.is_null())
    return cast(pa.Buffer, valid.buffers()[1])


def _binary_layout(arr: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """``(starts, ends)`` byte offsets of each value of a (fixed size / large) binary array."""
    n = len(arr)
    if pa.types.is_fixed_size_binary(arr.type):
        width = arr.type.byte_width
        starts = (np.arange(n, dtype=np.int64) + arr.offset) * width
        return starts, starts + width
    dtype = np.int64 if pa.types.is_large_binary(arr.type) else np.int32
    buf = arr.buffers()[1]
    offsets = np.frombuffer(buf, dtype=dtype)[arr.offset : arr.offset + n + 1].astype(np.int64)
    return offsets[:-1], offsets[1:]


def decimal_from_bytes(arr: pa.Array, target: pa.DataType) -> pa.Array:
    """Decode Avro decimals (big-endian two's complement ``bytes``/``fixed``) to ``target``.

    Vectorised with numpy; ``target`` is a decimal128/decimal256 type.
    """
    if pa.types.is_binary_view(arr.type):
        arr = arr.cast(pa.binary())
    width = target.byte_width
    n = len(arr)
    starts, ends = _binary_layout(arr)
    lengths = ends - starts
    if n and int(lengths.max()) > width:
        raise SchemaError(f"decimal value of {int(lengths.max())} bytes does not fit {target}")
    data_buf = arr.buffers()[-1]
    data = (
        np.frombuffer(data_buf, dtype=np.uint8) if data_buf is not None else np.zeros(0, np.uint8)
    )
    if data.size == 0:
        data = np.zeros(1, np.uint8)
    j = np.arange(width, dtype=np.int64)[None, :]
    src = np.clip(ends[:, None] - 1 - j, 0, data.size - 1)
    first = data[np.clip(starts, 0, data.size - 1)]
    sign = np.where((lengths > 0) & (first >= 0x80), 0xFF, 0x00).astype(np.uint8)
    little = np.where(j < lengths[:, None], data[src], sign[:, None]).astype(np.uint8)
    return pa.Array.from_buffers(target, n, [_validity(arr), pa.py_buffer(little.tobytes())])


def decimal_to_bytes(arr: pa.Array, size: int) -> pa.Array:
    """Encode a decimal array as ``size``-byte big-endian two's complement (``fixed_size_binary``).

    Raises:
        SchemaError: a value does not fit in ``size`` bytes.
    """
    width = arr.type.byte_width
    n = len(arr)
    raw = np.frombuffer(arr.buffers()[1], dtype=np.uint8)[arr.offset * width :]
    big = raw[: n * width].reshape(n, width)[:, ::-1]
    if size >= width:
        sign = np.where(big[:, :1] >= 0x80, 0xFF, 0x00).astype(np.uint8)
        out = np.hstack([np.repeat(sign, size - width, axis=1), big])
    else:
        out = big[:, width - size :]
        sign = np.where(out[:, :1] >= 0x80, 0xFF, 0x00).astype(np.uint8)
        fits = (big[:, : width - size] == sign).all(axis=1) | ~_valid_mask(arr)
        if not fits.all():
            raise SchemaError(f"decimal value does not fit {size} bytes ({arr.type})")
    buf = pa.py_buffer(np.ascontiguousarray(out).tobytes())
    return pa.Array.from_buffers(pa.binary(size), n, [_validity(arr), buf])


def _valid_mask(arr: pa.Array) -> np.ndarray:
    if arr.null_count == 0:
        return np.ones(len(arr), dtype=bool)
    return np.asarray(arr.is_valid().to_numpy(zero_copy_only=False), dtype=bool)


def _map_chunks(
    col: pa.ChunkedArray, fn: Callable[[pa.Array, Any], pa.Array], arg: Any
) -> pa.ChunkedArray:
    """Apply ``fn(chunk, arg)`` to every chunk of ``col``."""
    chunks = [fn(c, arg) for c in col.chunks]
    if not chunks:
        return pa.chunked_array([], type=fn(pa.array([], type=col.type), arg).type)
    return pa.chunked_array(chunks)


def _offsets(arr: pa.Array) -> pa.Array:
    """Offsets of a list/map array as a fresh array (``from_arrays`` rejects sliced offsets
    together with a null mask)."""
    offsets = arr.offsets
    return pa.array(np.asarray(offsets), type=offsets.type) if arr.offset else offsets


def _has_decimal(t: pa.DataType) -> bool:
    if pa.types.is_decimal(t):
        return True
    if pa.types.is_struct(t):
        return any(_has_decimal(f.type) for f in t)
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return _has_decimal(t.value_type)
    if pa.types.is_map(t):
        return _has_decimal(t.item_type)
    return False


def from_physical(arr: pa.Array, target: pa.DataType) -> pa.Array:
    """Convert an array of raw Avro values (ints, decimal bytes) to the logical ``target`` type."""
    if arr.type == target:
        return arr
    if pa.types.is_decimal(target):
        return decimal_from_bytes(arr, target)
    if not _has_decimal(target):
        return arr.cast(target)
    mask = arr.is_null() if arr.null_count else None
    if pa.types.is_struct(target):
        sarr = cast(pa.StructArray, arr)
        children = [from_physical(sarr.field(i), f.type) for i, f in enumerate(target)]
        return pa.StructArray.from_arrays(children, fields=list(target), mask=mask)
    if pa.types.is_map(target):
        marr = cast(pa.MapArray, arr)
        items = from_physical(marr.items, target.item_type)
        return pa.MapArray.from_arrays(_offsets(marr), marr.keys, items, type=target, mask=mask)
    larr = cast(pa.ListArray, arr)
    values = from_physical(larr.values, target.value_type)
    return pa.ListArray.from_arrays(_offsets(larr), values, type=target, mask=mask)


def raw_avro_records_to_arrow(records: list[dict[str, Any]], schema: pa.Schema) -> pa.Table:
    """Build a table from records fastavro decoded with :func:`strip_logical_types`.

    ``schema`` is the logical Arrow schema (:func:`avro_to_arrow_schema`); the records hold the
    raw values (ints for timestamps/dates/times, big-endian bytes for decimals).
    """
    physical = _physical_of(schema)
    table = pa.Table.from_pylist(records, schema=physical)
    if physical == schema:
        return table
    columns = [_map_chunks(table.column(i), from_physical, f.type) for i, f in enumerate(schema)]
    return pa.Table.from_arrays(columns, schema=schema)


def _to_python_value(v: Any) -> Any:
    """Make fastavro's logical values acceptable to pyarrow (uuid.UUID -> str, recursively)."""
    if isinstance(v, dict):
        return {k: _to_python_value(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_to_python_value(x) for x in v]
    if v is None or isinstance(v, (str, bytes, int, float, Decimal)):
        return v
    return str(v) if isinstance(v, uuid.UUID) else v


def avro_records_to_arrow(records: list[dict[str, Any]], schema: pa.Schema) -> pa.Table:
    """Build a table of exactly ``schema``'s types from records as fastavro decodes them.

    Accepts fastavro's logical values (``Decimal``, tz-aware ``datetime``, ``date``, ``time``,
    ``UUID``) as well as raw ones (ints for temporal types, two's complement bytes for decimals).
    """
    errors = (pa.ArrowTypeError, pa.ArrowInvalid, TypeError)
    try:
        return pa.Table.from_pylist(records, schema=schema)
    except errors:
        pass
    try:
        return raw_avro_records_to_arrow(records, schema)
    except errors:
        pass
    return pa.Table.from_pylist([_to_python_value(r) for r in records], schema=schema)


def to_physical(arr: pa.Array, node: AvroType) -> pa.Array:
    """Convert ``arr`` (already of the Avro schema's Arrow type) to raw Avro-encodable values."""
    t = arr.type
    if pa.types.is_dictionary(t):
        arr = arr.dictionary_decode()
        t = arr.type
    if pa.types.is_decimal(t):
        size = node.size if node.kind == "fixed" and node.size else decimal_fixed_size(t.precision)
        return decimal_to_bytes(arr, size)
    if pa.types.is_timestamp(t) or pa.types.is_time64(t) or pa.types.is_date64(t):
        return arr.cast(pa.int64())
    if pa.types.is_date32(t) or pa.types.is_time32(t):
        return arr.cast(pa.int32())
    if pa.types.is_struct(t) and node.kind == "record":
        sarr = cast(pa.StructArray, arr)
        children = [to_physical(sarr.field(i), f.type) for i, f in enumerate(node.fields)]
        mask = arr.is_null() if arr.null_count else None
        names = [f.name for f in t]
        return pa.StructArray.from_arrays(children, names=names, mask=mask)
    if pa.types.is_map(t) and node.items is not None:
        marr = cast(pa.MapArray, arr)
        items = to_physical(marr.items, node.items.type)
        mask = arr.is_null() if arr.null_count else None
        return pa.MapArray.from_arrays(_offsets(marr), marr.keys, items, mask=mask)
    if pa.types.is_list(t) and node.items is not None:
        larr = cast(pa.ListArray, arr)
        values = to_physical(larr.values, node.items.type)
        mask = arr.is_null() if arr.null_count else None
        return pa.ListArray.from_arrays(_offsets(larr), values, mask=mask)
    return arr


def arrow_to_avro_records(
    table: pa.Table, avro_schema: AvroSchema | None = None
) -> list[dict[str, Any]]:
    """Return the per-record dicts fastavro encodes for ``table``.

    Values are the raw Avro values (which fastavro also accepts for logical types): ints for
    timestamps (in the Avro schema's unit), dates and times; big-endian two's complement bytes
    for decimals (the ``fixed`` size of ``avro_schema``, else the minimal size for the
    precision); dicts for maps. Encoding with :func:`strip_logical_types` of the schema skips
    fastavro's per-value logical conversions.

    Args:
        table: the rows; with ``avro_schema`` they are first cast to its types (see
            :func:`conform_table`).
        avro_schema: the writer schema; default: :func:`arrow_to_avro_schema` of the table.

    Raises:
        SchemaError: the table does not fit the Avro schema.
    """
    if avro_schema is None:
        avro_schema = arrow_to_avro_schema(table.schema, "record", "")
    node = resolve_avro(avro_schema)
    table = conform_table(table, pa.schema(cast(pa.StructType, _arrow_type(node))))
    columns = [_map_chunks(table.column(i), to_physical, f.type) for i, f in enumerate(node.fields)]
    physical = pa.Table.from_arrays(columns, names=table.column_names)
    return physical.to_pylist(maps_as_pydicts="strict")
