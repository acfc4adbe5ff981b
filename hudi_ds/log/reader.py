"""Reading Hudi log files: block scanning with corruption recovery, and block content decoding.

:func:`scan_log_bytes` splits a log file into intact blocks (skipping torn or garbage regions the
way Java's ``HoodieLogFileReader`` does); :func:`decode_data_block` and
:func:`decode_delete_block` turn block contents into Arrow tables; :func:`decode_hfile_block`
reads the HFile of a metadata table's ``HFILE_DATA`` block.
"""

from __future__ import annotations

import datetime
import io
import logging
import struct
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, cast

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from fastavro import parse_schema, schemaless_reader

from hudi_ds.errors import CorruptBlockError, CorruptFileError, UnsupportedError
from hudi_ds.layout.hfile import HFile, read_hfile
from hudi_ds.layout.parquet import no_true_flag
from hudi_ds.log.avro_decode import decode_avro_records, decode_avro_runs, vectorisable
from hudi_ds.log.block import (
    CONTENT_VERSION,
    DELETE_RECORD_LIST_SCHEMA,
    MAGIC,
    WRAPPER_NAMESPACE,
    BlockType,
    LogBlock,
    parse_block,
)
from hudi_ds.schema.avro import (
    AvroType,
    avro_to_arrow_schema,
    parse_avro_json,
    resolve_avro,
    strip_logical_types,
)
from hudi_ds.schema.evolution import promote_table
from hudi_ds.schema.meta import (
    IS_DELETED_FIELD,
    PARTITION_PATH_METADATA_FIELD,
    RECORD_KEY_METADATA_FIELD,
)
from hudi_ds.schema.records import raw_avro_records_to_arrow

logger = logging.getLogger("hudi_ds.log")

#: The ordering value column of a decoded delete block (:func:`decode_delete_block`): its other
#: columns are the record key and partition path meta columns.
ORDERING_VALUE = "_ordering_value"

_LEN_FIELD = "_hudi_ds_record_length"
#: Blocks of fewer records decode with one fastavro call: below this the vectorised decoder's
#: fixed cost (a few numpy calls per field) is more than fastavro's per-record cost.
_VECTORISED_FROM = 128
_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
_EPOCH_DATE = datetime.date(1970, 1, 1)


@dataclass
class LogScan:
    """Result of scanning one log file.

    Attributes:
        blocks: the intact blocks, in file order.
        corrupt_blocks: number of corrupt regions skipped (each counted once).
        skipped_bytes: total bytes in those regions.
        path: the file's path (for messages).
        corrupt_offsets: where each corrupt region starts.
    """

    blocks: list[LogBlock] = field(default_factory=list)
    corrupt_blocks: int = 0
    skipped_bytes: int = 0
    path: str = ""
    corrupt_offsets: list[int] = field(default_factory=list)


def scan_log_bytes(data: bytes, path: str = "", copy: bool = True) -> LogScan:
    """Split the bytes of a log file into its intact blocks.

    Blocks follow each other back to back (grammar: :func:`hudi_ds.log.block.parse_block`). When
    the bytes at the current position are not an intact block (bad magic, length past the end
    of the file, torn or garbage bytes, reverse pointer mismatch), the reader -- like Java's
    ``HoodieLogFileReader`` -- treats everything up to the next ``#HUDI#`` magic (or the end of
    the file) as one corrupt region, logs a warning and resumes there. Never raises for
    corrupt input; an empty file has no blocks. Whether a corrupt region may be skipped (a
    failed write's tail) or is committed data is the caller's decision
    (:func:`hudi_ds.table.reader.scan_slice_logs` checks the committed byte ranges).
    ``copy=False``: the blocks' contents are views of ``data``
    (:func:`hudi_ds.log.block.parse_block`).
    """
    scan = LogScan(path=path)
    view = memoryview(data)
    pos, n = 0, len(data)
    corrupt_start: int | None = None
    while pos < n:
        try:
            block = parse_block(view, pos, path, copy)
        except CorruptBlockError as e:
            if corrupt_start is None:
                corrupt_start = pos
                scan.corrupt_blocks += 1
                scan.corrupt_offsets.append(pos)
                logger.warning("corrupt log block in %s at offset %d: %s", path or "<log>", pos, e)
            nxt = data.find(MAGIC, pos + 1)
            nxt = n if nxt < 0 else nxt
            scan.skipped_bytes += nxt - pos
            pos = nxt
            continue
        corrupt_start = None
        scan.blocks.append(block)
        pos += block.size
    return scan


# --------------------------------------------------------------------------------------------
# Data blocks
# --------------------------------------------------------------------------------------------


def _zigzag_varint(value: int) -> bytes:
    z = (value << 1) ^ (value >> 63)
    out = bytearray()
    while z > 0x7F:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)
    return bytes(out)


@dataclass(frozen=True)
class _AvroPlan:
    """How to decode the records of Avro blocks written with one ``SCHEMA`` header."""

    arrow: pa.Schema  # logical Arrow schema of the records
    node: AvroType  # the resolved record schema (vectorised decoding)
    vectorised: bool  # records decode with hudi_ds.log.avro_decode (no array/map inside)
    record: Any  # fastavro-parsed record schema, logical types stripped
    framed: Any  # fastavro-parsed array<record{len: fixed(4), ...fields}>, logical types stripped


@lru_cache(maxsize=128)
def _avro_plan(schema_json: str) -> _AvroPlan:
    avro = parse_avro_json(schema_json)
    arrow = avro_to_arrow_schema(avro)
    node = resolve_avro(avro)
    raw = strip_logical_types(avro)
    name = str(raw["name"])
    namespace = name.rpartition(".")[0] if "." in name else str(raw.get("namespace") or "")
    length = {"type": "fixed", "name": f"{_LEN_FIELD}_fixed", "size": 4}
    framed_record = {
        "type": "record",
        "name": f"{namespace}.{_LEN_FIELD}_record" if namespace else f"{_LEN_FIELD}_record",
        "fields": [{"name": _LEN_FIELD, "type": length}, *raw["fields"]],
    }
    return _AvroPlan(
        arrow=arrow,
        node=node,
        vectorised=vectorisable(node),
        record=parse_schema(raw),
        framed=parse_schema({"type": "array", "items": framed_record}),
    )


def _decode_framed(plan: _AvroPlan, content: bytes | memoryview, count: int) -> pa.Table | None:
    """Decode all records in one fastavro call, or None if the framing does not add up.

    Each record's int32 length prefix is 4 raw bytes, i.e. an Avro ``fixed(4)``: the records
    area is exactly the items of ``array<record{len: fixed(4), <fields>}>`` once the array's
    item count is put in front and its end marker after it.
    """
    buf = b"".join([_zigzag_varint(count), memoryview(content)[8:], b"\x00"])
    stream = io.BytesIO(buf)
    try:
        records = cast(list[dict[str, Any]], schemaless_reader(stream, plan.framed, None))
    except Exception:
        return None
    if stream.tell() != len(buf) or len(records) != count:
        return None
    schema = pa.schema([pa.field(_LEN_FIELD, pa.binary(4)), *plan.arrow])
    try:
        table = raw_avro_records_to_arrow(records, schema)
    except (pa.ArrowInvalid, pa.ArrowTypeError):  # the exact path says which record
        return None
    lens_buf = table.column(0).combine_chunks().buffers()[1]
    lengths = np.frombuffer(lens_buf, dtype=">i4")[:count] if count else np.zeros(0, ">i4")
    if int(lengths.astype(np.int64).sum()) != len(content) - 8 - 4 * count or (lengths < 0).any():
        return None
    return table.drop_columns([_LEN_FIELD])


def _decode_each(
    plan: _AvroPlan, content: bytes | memoryview, count: int | None, start: int
) -> pa.Table:
    """Decode records one by one, honouring each length prefix (slow path, exact)."""
    records: list[Any] = []
    pos, end = start, len(content)

    def more() -> bool:
        return pos < end if count is None else len(records) < count

    while more():
        if pos + 4 > end:
            raise CorruptBlockError(f"record {len(records)} length runs past the content")
        (length,) = struct.unpack_from(">i", content, pos)
        if length < 0 or pos + 4 + length > end:
            raise CorruptBlockError(f"record {len(records)} of {length} bytes runs past content")
        try:
            datum = io.BytesIO(content[pos + 4 : pos + 4 + length])
            records.append(schemaless_reader(datum, plan.record, None))
        except Exception as e:
            raise CorruptBlockError(f"record {len(records)} does not decode: {e!r}") from e
        pos += 4 + length
    try:
        return raw_avro_records_to_arrow(records, plan.arrow)
    except (pa.ArrowInvalid, pa.ArrowTypeError) as e:  # e.g. an int out of range
        raise CorruptBlockError(f"records do not fit the block's schema: {e}") from e


def _decode_avro_content(block: LogBlock, columns: list[str] | None = None) -> pa.Table:
    """Decode an Avro data block's content.

    Grammar::

        content := version count record*
        version := int32   1, 2 or 3
        count   := int32   number of records (every version has it: Java's
                           ``HoodieAvroDataBlockVersion.hasRecordCount`` is true for all, and
                           Hudi 0.9/0.10 wrote version 1 with a count)
        record  := int32 n, then n bytes: one Avro binary datum (no schema, no framing)
                   written with the block's SCHEMA header (meta fields first)
    """
    if block.schema is None:
        raise CorruptBlockError("Avro data block without a SCHEMA header")
    content = block.content
    if len(content) < 4:
        raise CorruptBlockError("Avro data block content is shorter than its version")
    (version,) = struct.unpack_from(">i", content, 0)
    if version not in (1, 2, 3):
        raise CorruptBlockError(f"unknown Avro data block version {version}")
    plan = _avro_plan(block.schema)
    if len(content) < 8:
        raise CorruptBlockError("Avro data block content is shorter than its header")
    (count,) = struct.unpack_from(">i", content, 4)
    if count < 0 or 4 * count > len(content) - 8:
        raise CorruptBlockError(f"Avro data block claims {count} records")
    if count == 0:
        return plan.arrow.empty_table()
    if plan.vectorised and count >= _VECTORISED_FROM:
        table = decode_avro_records(content, 8, count, plan.node, plan.arrow, columns)
        return table if table is not None else _decode_each(plan, content, count, 8)
    table = _decode_framed(plan, content, count)
    return table if table is not None else _decode_each(plan, content, count, 8)


def _decode_parquet_content(
    block: LogBlock, columns: list[str] | None = None, unread_false_flags: bool = False
) -> pa.Table:
    """Decode a Parquet data block: the content is one complete Parquet file (``PAR1...PAR1``).

    ``unread_false_flags``: ``_hoodie_is_deleted`` is left out of ``columns`` when the
    footer's statistics show no true flag (the caller's ``promote_table`` adds it as nulls).
    """
    try:
        # pages written with a CRC (parquet-mr's default, and ours) are verified. The block is
        # already in memory and small: no pre-buffering (a copy of the column chunks), and
        # decoded on the calling thread -- readers decode the blocks of several file slices
        # in parallel, and handing a block's few columns to Arrow's pool costs more than it
        # saves (about 20% of the CPU of a 3k-30k-row block)
        pf = pq.ParquetFile(
            pa.BufferReader(block.content), page_checksum_verification=True, pre_buffer=False
        )
        flags = unread_false_flags and columns is not None and IS_DELETED_FIELD in columns
        if flags and no_true_flag(pf):
            columns = [c for c in cast(list[str], columns) if c != IS_DELETED_FIELD]
        # columns the block lacks (an older schema) are left out of the read: the caller's
        # promote_table adds them (no Arrow schema built from the footer to find them)
        return pf.read(columns=columns, use_threads=False)
    except (OSError, ValueError) as e:  # ArrowInvalid; UnicodeDecodeError of a bad footer
        raise CorruptBlockError(f"Parquet data block does not read: {e}") from e


def decode_data_block(
    block: LogBlock, schema: pa.Schema | None = None, unread_false_flags: bool = False
) -> pa.Table:
    """Decode the records of an Avro (or CDC) / Parquet data block to an Arrow table.

    Avro records come out in the types of the block's ``SCHEMA`` header
    (:func:`hudi_ds.schema.avro.avro_to_arrow_schema`), Parquet ones as pyarrow reads the file.
    Avro records are decoded vectorised (:mod:`hudi_ds.log.avro_decode`); schemas with arrays or
    maps, and blocks that do not decode cleanly that way, are decoded with fastavro (a damaged
    block then raises, naming its first bad record).

    Args:
        block: an ``AVRO_DATA``, ``CDC_DATA`` or ``PARQUET_DATA`` block.
        schema: if given, the rows are brought to it with
            :func:`hudi_ds.schema.evolution.promote_table` (Parquet blocks then decode only its
            columns).
        unread_false_flags: the caller reads ``_hoodie_is_deleted`` only to find deletes (a
            projected snapshot read): a Parquet block whose footer statistics show no true
            flag leaves it undecoded, null in the result (which deletes nothing, as false
            does). Only when ``schema``'s field is nullable.

    Raises:
        CorruptBlockError: the content does not decode.
        UnsupportedError: the block is not a data block hudi_ds reads (command, delete, and
            HFile blocks, which only metadata tables hold: :func:`decode_hfile_block`).
        SchemaError: the rows cannot be promoted to ``schema``.
    """
    try:
        if block.block_type in (BlockType.AVRO_DATA, BlockType.CDC_DATA):
            # only the columns the caller asked for become columns (all are walked over)
            table = _decode_avro_content(block, None if schema is None else schema.names)
        elif block.block_type == BlockType.PARQUET_DATA:
            # only the columns the caller asked for (Parquet is columnar)
            unread = (
                unread_false_flags
                and schema is not None
                and schema.get_field_index(IS_DELETED_FIELD) >= 0
                and schema.field(IS_DELETED_FIELD).nullable
            )
            table = _decode_parquet_content(block, None if schema is None else schema.names, unread)
        else:
            raise UnsupportedError(
                f"{block.block_type.name} blocks are not data blocks hudi_ds reads"
            )
    except CorruptBlockError as e:
        raise CorruptBlockError(f"{_where(block)}: {e}") from e
    return table if schema is None else promote_table(table, schema)


#: Avro data blocks of fewer bytes than this decode together (:func:`decode_data_blocks`),
#: at most :data:`JOINT_DECODE_BYTES` at a time; larger blocks decode alone (their walk's fixed
#: cost is small beside their records, and copying them into a joined buffer costs more: fresh
#: pages, faulted in again for every slice when several threads read).
JOINT_BLOCK_BYTES = 1 << 20
JOINT_DECODE_BYTES = 4 << 20


def _joint_count(block: LogBlock) -> int | None:
    """The record count of an Avro data block that may be decoded jointly with others of its
    schema (versions 2 and 3, a plausible count, vectorisable records), else None."""
    content = block.content
    if block.block_type != BlockType.AVRO_DATA or block.schema is None:
        return None
    if not 8 <= len(content) < JOINT_BLOCK_BYTES:
        return None
    version, count = struct.unpack_from(">ii", content, 0)
    if version not in (2, 3) or count <= 0 or 4 * count > len(content) - 8:
        return None
    return int(count) if _avro_plan(block.schema).vectorised else None


def decode_data_blocks(
    blocks: list[LogBlock], schema: pa.Schema | None = None, unread_false_flags: bool = False
) -> list[pa.Table]:
    """:func:`decode_data_block` of each block, in order.

    Small Avro data blocks (:data:`JOINT_BLOCK_BYTES`) of one ``SCHEMA`` header decode
    together, :data:`JOINT_DECODE_BYTES` at a time
    (:func:`hudi_ds.log.avro_decode.decode_avro_runs`: the fixed cost of the vectorised walk
    is paid once, not per block -- most of the cost of blocks of a few thousand records, as
    every upsert appends). When such a run does not decode cleanly its blocks decode one by
    one, which raises for the bad one as :func:`decode_data_block` does.
    ``unread_false_flags``: as :func:`decode_data_block`'s.
    """
    out: list[pa.Table | None] = [None] * len(blocks)
    runs: dict[str, list[list[tuple[int, int]]]] = {}
    run_bytes: dict[str, int] = {}
    for i, b in enumerate(blocks):
        count = _joint_count(b)
        if count is None:
            continue
        key = cast(str, b.schema)
        size = len(b.content) - 8
        if key not in runs or run_bytes[key] + size > JOINT_DECODE_BYTES:
            runs.setdefault(key, []).append([])
            run_bytes[key] = 0
        runs[key][-1].append((i, count))
        run_bytes[key] += size
    columns = None if schema is None else schema.names
    for key, groups in runs.items():
        plan = _avro_plan(key)
        for group in groups:
            if len(group) < 2:
                continue
            views = [memoryview(blocks[i].content)[8:] for i, _ in group]
            tables = decode_avro_runs(views, [c for _, c in group], plan.node, plan.arrow, columns)
            if tables is None:
                continue
            for (i, _), t in zip(group, tables, strict=True):
                out[i] = t if schema is None else promote_table(t, schema)
    return [
        t if t is not None else decode_data_block(b, schema, unread_false_flags)
        for t, b in zip(out, blocks, strict=True)
    ]


def decode_hfile_block(block: LogBlock) -> HFile:
    """Read the HFile an ``HFILE_DATA`` block holds (metadata table log files).

    The content is one complete HFile (:func:`hudi_ds.layout.hfile.read_hfile`); its cells map
    record keys to Avro records of the block's ``SCHEMA`` header (also the HFile's ``schema``
    file info entry). Data tables never hold such blocks: :func:`decode_data_block` refuses them.

    Raises:
        UnsupportedError: not an ``HFILE_DATA`` block, or an HFile codec hudi_ds does not read.
        CorruptBlockError: the HFile is damaged (the message names the log file and offset).
    """
    if block.block_type != BlockType.HFILE_DATA:
        raise UnsupportedError(f"{block.block_type.name} block is not an HFILE_DATA block")
    where = _where(block)
    try:
        return read_hfile(block.content, where)
    except CorruptFileError as e:
        raise CorruptBlockError(str(e)) from e


# --------------------------------------------------------------------------------------------
# Delete blocks
# --------------------------------------------------------------------------------------------

_DELETE_SCHEMA = parse_schema(DELETE_RECORD_LIST_SCHEMA)
_PREFIX = f"{WRAPPER_NAMESPACE}."


def _unwrap(name: str, value: Any) -> Any:
    """Python value of one ``orderingVal`` wrapper record (``IntWrapper(0)`` means none)."""
    short = name.removeprefix(_PREFIX)
    if short == "ArrayWrapper":
        items = value.get("wrappedValues") or []
        return [None if v is None else _unwrap(*v) for v in items]
    inner = value["value"]
    if short == "IntWrapper" and inner == 0:
        return None  # Spark SQL deletes: "no ordering value", natural order
    if short == "DateWrapper":
        return _EPOCH_DATE + datetime.timedelta(days=inner)
    if short == "TimestampMicrosWrapper":
        return _EPOCH + datetime.timedelta(microseconds=inner)
    return inner


def _ordering_values(values: list[Any]) -> pa.Array:
    try:
        return pa.array(values)
    except (pa.ArrowInvalid, pa.ArrowTypeError) as e:
        kinds = sorted({type(v).__name__ for v in values if v is not None})
        raise UnsupportedError(f"delete block mixes ordering value types {kinds}") from e


def decode_delete_block(block: LogBlock) -> pa.Table:
    """Decode a delete block to a table of the deleted keys.

    Columns: ``_hoodie_record_key`` (string), ``_hoodie_partition_path`` (string),
    ``_ordering_value``.

    Grammar (version 3, Hudi 0.14+)::

        content := version length payload
        version := int32   3
        length  := int32   payload bytes
        payload := Avro binary of HoodieDeleteRecordList {deleteRecordList: array<
                     HoodieDeleteRecord {recordKey: [null, string], partitionPath: [null, string],
                                         orderingVal: [null, BooleanWrapper, IntWrapper,
                                           LongWrapper, FloatWrapper, DoubleWrapper, BytesWrapper,
                                           StringWrapper, DateWrapper, DecimalWrapper,
                                           TimeMicrosWrapper, TimestampMicrosWrapper,
                                           ArrayWrapper]}>}

    Each wrapper is ``{value: T}`` in namespace ``org.apache.hudi.avro.model``. A null and an
    ``IntWrapper(0)`` (what Spark SQL writes) ordering value both decode to null ("natural
    order": the delete always applies); dates/timestamps decode to ``date``/UTC ``datetime``,
    ``ArrayWrapper`` (several ordering fields) to a list. ``_ordering_value`` has the type
    pyarrow infers (``null`` when every value is null).

    Raises:
        UnsupportedError: a legacy (version 1/2, Kryo-serialized) delete block, or mixed
            ordering value types.
        CorruptBlockError: the content does not decode.
    """
    if block.block_type != BlockType.DELETE:
        raise UnsupportedError(f"{block.block_type.name} block is not a delete block")
    try:
        return _decode_delete_content(block)
    except CorruptBlockError as e:
        raise CorruptBlockError(f"{_where(block)}: {e}") from e


def _where(block: LogBlock) -> str:
    """``<file> block at offset <n>`` for messages."""
    return f"{block.path or '<log>'} block at offset {block.offset}"


def _decode_delete_content(block: LogBlock) -> pa.Table:
    content = block.content
    if len(content) < 8:
        raise CorruptBlockError("delete block content is shorter than its header")
    version, length = struct.unpack_from(">ii", content, 0)
    if version != CONTENT_VERSION:
        raise UnsupportedError(
            f"delete block version {version} (Kryo/Java serialized, Hudi < 0.14) is not supported;"
            " only version 3 is"
        )
    if length < 0 or 8 + length > len(content):
        raise CorruptBlockError(f"delete block payload of {length} bytes runs past its content")
    try:
        payload = schemaless_reader(
            io.BytesIO(content[8 : 8 + length]), _DELETE_SCHEMA, None, return_record_name=True
        )
    except Exception as e:
        raise CorruptBlockError(f"delete block payload does not decode: {e!r}") from e
    records = cast(dict[str, Any], payload)["deleteRecordList"]
    keys = pa.array([r["recordKey"] for r in records], pa.string())
    partitions = pa.array([r["partitionPath"] for r in records], pa.string())
    ordering = [None if r["orderingVal"] is None else _unwrap(*r["orderingVal"]) for r in records]
    return pa.table(
        {
            RECORD_KEY_METADATA_FIELD: keys,
            PARTITION_PATH_METADATA_FIELD: partitions,
            ORDERING_VALUE: _ordering_values(ordering),
        }
    )
