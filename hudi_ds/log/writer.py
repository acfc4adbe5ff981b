"""Encoding Hudi log blocks (pure encoding: bytes out, no file IO).

Each function returns one complete framed block (:func:`hudi_ds.log.block.encode_block`) that a
writer appends to a log file. Headers are exactly what Spark writes: data and delete blocks carry
``{INSTANT_TIME, SCHEMA}``, rollback command blocks
``{INSTANT_TIME, COMMAND_BLOCK_TYPE, TARGET_INSTANT_TIME}``.
"""

from __future__ import annotations

import io
import struct
from decimal import Decimal
from functools import lru_cache
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from fastavro import parse_schema, schemaless_writer

from hudi_ds.errors import SchemaError
from hudi_ds.log.block import (
    CONTENT_VERSION,
    DELETE_RECORD_LIST_SCHEMA,
    ROLLBACK_COMMAND,
    WRAPPER_NAMESPACE,
    BlockType,
    HeaderKey,
    encode_block,
)
from hudi_ds.schema import (
    AvroSchema,
    arrow_to_avro_records,
    avro_schema_json,
    cached_arrow_schema,
    conform_table,
    parse_avro_json,
    strip_logical_types,
)

_DELETE_SCHEMA = parse_schema(DELETE_RECORD_LIST_SCHEMA)
#: What Spark SQL writes for "no ordering value": ``IntWrapper(0)``.
_NO_ORDERING = (f"{WRAPPER_NAMESPACE}.IntWrapper", {"value": 0})


def _data_header(instant_time: str, schema_json: str) -> dict[HeaderKey, str]:
    return {HeaderKey.INSTANT_TIME: instant_time, HeaderKey.SCHEMA: schema_json}


@lru_cache(maxsize=64)
def _writer_schema(schema_json: str) -> Any:
    """fastavro-parsed writer schema without logical types (values are already raw)."""
    return parse_schema(strip_logical_types(parse_avro_json(schema_json)))


def _frame_records(records: list[dict[str, Any]], parsed: Any) -> bytes:
    """``int32 version, int32 count`` then each record as ``int32 length`` + Avro datum.

    All datums go through one shared buffer; each gets a 4-byte placeholder that is filled in
    afterwards with one vectorised numpy assignment.
    """
    n = len(records)
    out = io.BytesIO()
    out.write(struct.pack(">ii", CONTENT_VERSION, n))
    starts = np.empty(n, dtype=np.int64)
    ends = np.empty(n, dtype=np.int64)
    placeholder = b"\x00\x00\x00\x00"
    for i, record in enumerate(records):
        starts[i] = out.tell()
        out.write(placeholder)
        schemaless_writer(out, parsed, record)
        ends[i] = out.tell()
    buf = bytearray(out.getbuffer())
    if n:
        lengths = (ends - starts - 4).astype(">i4").view(np.uint8).reshape(n, 4)
        view = np.frombuffer(buf, dtype=np.uint8)
        view[starts[:, None] + np.arange(4)] = lengths
    return bytes(buf)


def encode_avro_data_block(table: pa.Table, instant_time: str, avro_schema: AvroSchema) -> bytes:
    """Encode ``table`` as an ``AVRO_DATA`` block (content version 3).

    Content grammar: ``int32 3, int32 count, count x (int32 n, n bytes of Avro binary datum)``,
    each datum written schemaless with ``avro_schema`` (which the block carries as its ``SCHEMA``
    header, meta fields included).

    Args:
        table: the records; cast to the schema's types with :func:`hudi_ds.schema.conform_table`.
        instant_time: the writing instant (``INSTANT_TIME`` header).
        avro_schema: the full record schema; a JSON string is written to the header verbatim.

    Raises:
        SchemaError: the table does not fit the schema.
    """
    schema_json = avro_schema_json(avro_schema)
    records = arrow_to_avro_records(table, schema_json)
    try:
        content = _frame_records(records, _writer_schema(schema_json))
    except (ValueError, TypeError, OverflowError) as e:
        raise SchemaError(f"records do not encode with the Avro schema: {e}") from e
    return encode_block(BlockType.AVRO_DATA, _data_header(instant_time, schema_json), content)


def encode_parquet_data_block(
    table: pa.Table,
    instant_time: str,
    avro_schema: AvroSchema,
    compression: str = "snappy",
) -> bytes:
    """Encode ``table`` as a ``PARQUET_DATA`` block: the content is one complete Parquet file.

    The file holds the rows in the Arrow types of ``avro_schema`` and, like Hudi's Avro parquet
    writer, the schema in the ``parquet.avro.schema`` footer key.

    Args:
        table: the records (cast with :func:`hudi_ds.schema.conform_table`).
        instant_time: the writing instant.
        avro_schema: the full record schema (also the ``SCHEMA`` header).
        compression: Parquet codec (``snappy``, ``gzip``, ``zstd``, ``none``...).
    """
    schema_json = avro_schema_json(avro_schema)
    table = conform_table(table, cached_arrow_schema(schema_json))
    table = table.replace_schema_metadata(
        {"parquet.avro.schema": schema_json, "writer.model.name": "avro"}
    )
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, compression=compression)
    content = sink.getvalue().to_pybytes()
    return encode_block(BlockType.PARQUET_DATA, _data_header(instant_time, schema_json), content)


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
    ordering = _wrapped_ordering(ordering_values, n)
    records = [
        {"recordKey": k, "partitionPath": p, "orderingVal": o}
        for k, p, o in zip(
            _strings(keys, "record keys"), _strings(partitions, "partition paths"), ordering
        )
    ]
    payload = io.BytesIO()
    try:
        schemaless_writer(payload, _DELETE_SCHEMA, {"deleteRecordList": records})
    except (ValueError, TypeError, OverflowError) as e:
        raise SchemaError(f"delete records do not encode: {e}") from e
    body = payload.getvalue()
    content = struct.pack(">ii", CONTENT_VERSION, len(body)) + body
    header = _data_header(instant_time, avro_schema_json(avro_schema))
    return encode_block(BlockType.DELETE, header, content)


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
