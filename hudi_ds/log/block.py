"""Hudi log blocks: types, header keys and the on-disk framing of one block.

A Hudi log file (``.<fileId>_<instant>.log.<version>_<writeToken>``) is a plain sequence of
blocks; see :func:`encode_block` / :func:`parse_block` for the byte grammar.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from enum import IntEnum

from hudi_ds.errors import CorruptBlockError

MAGIC = b"#HUDI#"
#: Log format version written in every block (Java ``HoodieLogFormatVersion.DEFAULT_VERSION``).
LOG_FORMAT_VERSION = 1
#: ``COMMAND_BLOCK_TYPE`` header value of a rollback command (``HoodieCommandBlockTypeEnum``).
ROLLBACK_COMMAND = "0"

_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")
_PREFIX = len(MAGIC) + _I64.size  # magic + blockLength
#: Smallest possible blockLength: version, type, two empty maps, content length, reverse pointer.
MIN_BLOCK_LENGTH = 4 + 4 + 4 + 8 + 4 + 8


class BlockType(IntEnum):
    """Block type ordinal (Java ``HoodieLogBlock.HoodieLogBlockType``)."""

    COMMAND = 0
    DELETE = 1
    CORRUPT = 2
    AVRO_DATA = 3
    HFILE_DATA = 4
    PARQUET_DATA = 5
    CDC_DATA = 6


class HeaderKey(IntEnum):
    """Header/footer key ordinal (Java ``HoodieLogBlock.HeaderMetadataType``)."""

    INSTANT_TIME = 0
    TARGET_INSTANT_TIME = 1
    SCHEMA = 2
    COMMAND_BLOCK_TYPE = 3
    COMPACTED_BLOCK_TIMES = 4
    RECORD_POSITIONS = 5
    BLOCK_IDENTIFIER = 6
    IS_PARTIAL = 7
    BASE_FILE_INSTANT_TIME_OF_RECORD_POSITIONS = 8


@dataclass(frozen=True)
class LogBlock:
    """One intact block of a log file.

    Attributes:
        block_type: the block type.
        header: header map (``INSTANT_TIME``, ``SCHEMA``...), in file order.
        footer: footer map (empty in practice).
        content: the raw content bytes (see :mod:`hudi_ds.log.reader` for their decoding); a
            read-only ``memoryview`` of the log file for blocks parsed with ``copy=False``.
        offset: position of the block's magic in the file.
        size: total bytes of the block, magic to reverse pointer (``blockLength + 14``).
        path: the log file it was read from (for messages; ``""`` if unknown).
    """

    block_type: BlockType
    header: dict[HeaderKey, str] = field(default_factory=dict)
    footer: dict[HeaderKey, str] = field(default_factory=dict)
    content: bytes | memoryview = b""
    offset: int = 0
    size: int = 0
    path: str = ""

    @property
    def instant_time(self) -> str | None:
        """The ``INSTANT_TIME`` header: the instant that wrote the block."""
        return self.header.get(HeaderKey.INSTANT_TIME)

    @property
    def target_instant_time(self) -> str | None:
        """The ``TARGET_INSTANT_TIME`` header (the rolled-back instant of a command block)."""
        return self.header.get(HeaderKey.TARGET_INSTANT_TIME)

    @property
    def schema(self) -> str | None:
        """The ``SCHEMA`` header: the writer's Avro schema JSON, or None."""
        return self.header.get(HeaderKey.SCHEMA)

    @property
    def is_rollback_command(self) -> bool:
        """True for a command block with ``COMMAND_BLOCK_TYPE`` = rollback."""
        return (
            self.block_type == BlockType.COMMAND
            and self.header.get(HeaderKey.COMMAND_BLOCK_TYPE) == ROLLBACK_COMMAND
        )


def _encode_map(entries: dict[HeaderKey, str]) -> bytes:
    parts = [_I32.pack(len(entries))]
    for key, value in entries.items():
        raw = value.encode("utf-8")
        parts.append(struct.pack(">ii", int(key), len(raw)))
        parts.append(raw)
    return b"".join(parts)


def encode_block(
    block_type: BlockType,
    header: dict[HeaderKey, str],
    content: bytes,
    footer: dict[HeaderKey, str] | None = None,
) -> bytes:
    """Frame one log block exactly like Java's ``HoodieLogFormatWriter.appendBlocks``.

    Grammar (all integers big-endian, as Java's ``DataOutputStream`` writes them)::

        block      := MAGIC blockLength version type header contentLength content footer revPtr
        MAGIC      := "#HUDI#"                    6 bytes
        blockLength:= int64   bytes after this field up to and including revPtr
        version    := int32   log format version, always 1
        type       := int32   BlockType ordinal
        header     := map     metadata of the block
        map        := int32 count, then count x (int32 HeaderKey ordinal, int32 n, n UTF-8 bytes)
        contentLength := int64
        content    := contentLength bytes
        footer     := map     (count 0 in practice: 4 zero bytes)
        revPtr     := int64   blockLength + 6 (the block's size without revPtr itself)

    A block occupies ``blockLength + 14`` bytes. Map entries are written in ``header``'s order
    (Java uses a HashMap; readers must not depend on the order).
    """
    body = b"".join(
        [
            struct.pack(">ii", LOG_FORMAT_VERSION, int(block_type)),
            _encode_map(header),
            _I64.pack(len(content)),
            content,
            _encode_map(footer or {}),
        ]
    )
    block_length = len(body) + _I64.size
    return b"".join([MAGIC, _I64.pack(block_length), body, _I64.pack(block_length + 6)])


class _Cursor:
    """Bounds-checked big-endian reads inside ``[pos, end)`` of a buffer."""

    def __init__(self, data: bytes | memoryview, pos: int, end: int) -> None:
        self.data, self.pos, self.end = data, pos, end

    def take(self, n: int, what: str) -> int:
        if n < 0 or self.pos + n > self.end:
            raise CorruptBlockError(f"{what} runs past the end of the block")
        start = self.pos
        self.pos += n
        return start

    def i32(self, what: str) -> int:
        return int(_I32.unpack_from(self.data, self.take(4, what))[0])

    def i64(self, what: str) -> int:
        return int(_I64.unpack_from(self.data, self.take(8, what))[0])

    def map(self, what: str) -> dict[HeaderKey, str]:
        count = self.i32(f"{what} count")
        if count < 0 or count * 8 > self.end - self.pos:
            raise CorruptBlockError(f"{what} count {count} is impossible")
        out: dict[HeaderKey, str] = {}
        for _ in range(count):
            key = self.i32(f"{what} key")
            length = self.i32(f"{what} value length")
            start = self.take(length, f"{what} value")
            try:
                out[HeaderKey(key)] = bytes(self.data[start : start + length]).decode("utf-8")
            except ValueError as e:
                raise CorruptBlockError(f"{what} entry {key}: {e}") from e
        return out


def parse_block(
    data: bytes | memoryview, offset: int = 0, path: str = "", copy: bool = True
) -> LogBlock:
    """Parse the block starting at ``offset`` of ``data`` (a whole log file).

    Grammar (all integers big-endian)::

        block      := MAGIC blockLength version type header contentLength content footer revPtr
        MAGIC      := "#HUDI#"                    6 bytes
        blockLength:= int64   bytes after this field up to and including revPtr
        version    := int32   log format version, must be 1
        type       := int32   BlockType ordinal (0..6)
        header     := map
        map        := int32 count, then count x
                      (int32 HeaderKey ordinal 0..8, int32 n, n UTF-8 bytes)
        contentLength := int64
        content    := contentLength bytes
        footer     := map
        revPtr     := int64   must equal blockLength + 6

    Every length must stay inside the block and the fields must end exactly at ``revPtr``.
    ``path`` (the file's name, for messages) is kept on the block. ``copy=False`` with a
    ``memoryview`` of the file: the block's content is a view of it, not a copy (readers that
    decode the blocks right away; the view keeps the whole file's bytes alive).

    Raises:
        CorruptBlockError: the bytes at ``offset`` are not one intact block (bad magic, length
            past the end of the data, unknown type/key/version, reverse pointer mismatch...).
    """
    n = len(data)
    if bytes(data[offset : offset + len(MAGIC)]) != MAGIC:
        raise CorruptBlockError(f"no block magic at offset {offset}")
    if offset + _PREFIX > n:
        raise CorruptBlockError(f"block at {offset} is truncated before its length")
    block_length = int(_I64.unpack_from(data, offset + len(MAGIC))[0])
    end = offset + _PREFIX + block_length
    if block_length < MIN_BLOCK_LENGTH or end > n:
        raise CorruptBlockError(
            f"block at {offset}: length {block_length} does not fit the {n}-byte file"
        )
    cur = _Cursor(data, offset + _PREFIX, end)
    version = cur.i32("log format version")
    if version != LOG_FORMAT_VERSION:
        raise CorruptBlockError(f"block at {offset}: unsupported log format version {version}")
    type_ordinal = cur.i32("block type")
    try:
        block_type = BlockType(type_ordinal)
    except ValueError as e:
        raise CorruptBlockError(f"block at {offset}: unknown block type {type_ordinal}") from e
    header = cur.map("header")
    content_length = cur.i64("content length")
    start = cur.take(content_length, "content")
    content = (
        bytes(data[start : start + content_length])
        if copy
        else data[start : start + content_length]
    )
    footer = cur.map("footer")
    if cur.pos != end - _I64.size:
        raise CorruptBlockError(f"block at {offset}: fields do not end at the reverse pointer")
    rev = cur.i64("reverse pointer")
    if rev != block_length + 6:
        raise CorruptBlockError(f"block at {offset}: reverse pointer {rev} != {block_length + 6}")
    return LogBlock(block_type, header, footer, content, offset, end - offset, path)


# --------------------------------------------------------------------------------------------
# Content formats shared by the reader and the writer
# --------------------------------------------------------------------------------------------

#: Version of the content of Avro data blocks and delete blocks written since Hudi 0.x.
CONTENT_VERSION = 3

WRAPPER_NAMESPACE = "org.apache.hudi.avro.model"

#: ``orderingVal`` union branches of a delete record, after ``null``, in union order
#: (Java ``HoodieAvroWrapperUtils.wrapValueIntoAvro``; ``ArrayWrapper`` since Hudi 1.1).
ORDERING_WRAPPERS: list[tuple[str, object]] = [
    ("BooleanWrapper", "boolean"),
    ("IntWrapper", "int"),
    ("LongWrapper", "long"),
    ("FloatWrapper", "float"),
    ("DoubleWrapper", "double"),
    ("BytesWrapper", "bytes"),
    ("StringWrapper", "string"),
    ("DateWrapper", "int"),  # epoch days; Hudi leaves the logical type out on purpose
    ("DecimalWrapper", {"type": "bytes", "logicalType": "decimal", "precision": 30, "scale": 15}),
    ("TimeMicrosWrapper", {"type": "long", "logicalType": "time-micros"}),
    ("TimestampMicrosWrapper", "long"),  # epoch micros, no logical type either
]


def _delete_record_list_schema() -> dict[str, object]:
    scalar = [
        {
            "type": "record",
            "name": name,
            "namespace": WRAPPER_NAMESPACE,
            "fields": [{"name": "value", "type": value_type}],
        }
        for name, value_type in ORDERING_WRAPPERS
    ]
    names = [f"{WRAPPER_NAMESPACE}.{name}" for name, _ in ORDERING_WRAPPERS]
    array_wrapper = {
        "type": "record",
        "name": "ArrayWrapper",
        "namespace": WRAPPER_NAMESPACE,
        "fields": [
            {
                "name": "wrappedValues",
                "type": ["null", {"type": "array", "items": ["null", *names]}],
                "default": None,
            }
        ],
    }
    record = {
        "type": "record",
        "name": "HoodieDeleteRecord",
        "namespace": WRAPPER_NAMESPACE,
        "fields": [
            {"name": "recordKey", "type": ["null", "string"], "default": None},
            {"name": "partitionPath", "type": ["null", "string"], "default": None},
            {"name": "orderingVal", "type": ["null", *scalar, array_wrapper], "default": None},
        ],
    }
    return {
        "type": "record",
        "name": "HoodieDeleteRecordList",
        "namespace": WRAPPER_NAMESPACE,
        "fields": [{"name": "deleteRecordList", "type": {"type": "array", "items": record}}],
    }


#: Avro schema of a version-3 delete block payload (``HoodieDeleteRecordList.avsc``).
DELETE_RECORD_LIST_SCHEMA = _delete_record_list_schema()
