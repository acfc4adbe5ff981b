"""HBase HFile (format version 3) as Hudi writes it for the metadata table's base files and
``HFILE_DATA`` log blocks.

An HFile maps sorted byte keys to byte values. Hudi stores one metadata-table record per key
(the key is the record key, the value the Avro record). This module reads the files of both
writer generations and writes the Hudi 1.x native layout byte for byte.

File grammar (all integers big-endian)::

    hfile      := dataBlock+ metaBlock* rootDataIndex metaIndex fileInfo trailer
                  (HBase writers may interleave leaf index blocks with the data blocks)
    block      := header payload checksums
    header     := magic(8) onDiskSizeWithoutHeader:int32 uncompressedSizeWithoutHeader:int32
                  prevBlockOffset:int64 checksumType:int8 bytesPerChecksum:int32
                  onDiskDataSizeWithHeader:int32                              -- 33 bytes
    payload    := onDiskDataSizeWithHeader - 33 bytes, compressed with the trailer's codec
                  (GZ: one gzip member; NONE: as is)
    checksums  := 4 bytes per bytesPerChecksum-chunk of header+payload
                  (Hudi 1.x: checksum type NULL, zero bytes; HBase: CRC32C, not verified here --
                  a damaged GZ payload fails gzip's own CRC32)
    magic      := "DATABLK*" | "METABLKc" | "IDXROOT2" | "IDXINTE2" | "IDXLEAF2" | "FILEINF2"
    cell       := keyLength:int32 valueLength:int32 key value memstoreTS?
    key        := rowLength:int16 row [familyLength:int8 family qualifier timestamp:int64 type:int8]
                  (Hudi 1.0's writer and HBase: the full suffix, no family/qualifier, timestamp
                  Long.MAX_VALUE, type 4 = Put; Hudi 1.1's native writer: the row alone,
                  keyLength = rowLength + 2)
    memstoreTS := Hadoop vlong, present when file info KEY_VALUE_VERSION = 1 or, without it,
                  MAX_MEMSTORE_TS_KEY is there (Hudi 1.1 writes the byte 0 and only the
                  latter); always 0 in Hudi
    rootIndex  := count x (blockOffset:int64 onDiskSizeWithHeader:int32 keyLength:vint key)
                  (count from the trailer; key = first key of the block: Hudi 1.x writes
                  ``rowLength:int16 row``, HBase the full cell key; meta index keys are the
                  block names)
    nonRootIndex := n:int32 (n+1) x secondaryOffset:int32
                  n x (blockOffset:int64 onDiskSizeWithHeader:int32 key)   -- IDXINTE2/IDXLEAF2
    fileInfo   := "PBUF" varint(len) InfoProto{repeated BytesBytesPair{bytes first=1;
                  bytes second=2} map_entry=1}
    trailer    := "TRABLK\\"$" varint(len) TrailerProto zeroPadding version:int32  -- 4096 bytes
    version    := minor << 24 | major   (major 3; Hudi 1.x minor 0, HBase minor 3)

Sources: hudi-io ``org.apache.hudi.io.hfile.HFileWriterImpl`` / ``HFileBlock.serialize`` /
``HFileDataBlock`` / ``HFileFileInfoBlock`` (the writer reproduced here), ``HFileReaderImpl``
and hudi-rs ``crates/core/src/hfile`` (readers), verified on the fixture tables' metadata tables
(``shared/reference/hudi-metadata-table.md`` sections 3 and 4).
"""

from __future__ import annotations

import functools
import struct
import time
import typing
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import IntEnum

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hudi_ds.errors import CorruptFileError, UnsupportedError

#: Data block target size (uncompressed) Hudi uses for metadata-table HFiles: base files take
#: ``hoodie.hfile.block.size`` (``HoodieStorageConfig.HFILE_BLOCK_SIZE``, default 1 MiB) and
#: HFiles inside log blocks ``HFileUtils.DEFAULT_BLOCK_SIZE_FOR_LOG_FILE`` (also 1 MiB).
HFILE_BLOCK_SIZE = 1024 * 1024

#: Bytes covered by one checksum (``HFileBlock`` ``DEFAULT_BYTES_PER_CHECKSUM``).
BYTES_PER_CHECKSUM = 16 * 1024
#: Size of a block header.
HEADER_SIZE = 33
#: Size of the fixed trailer at the end of the file.
TRAILER_SIZE = 4096
#: Magic at the start of the trailer.
TRAILER_MAGIC = b'TRABLK"$'
#: Comparator class named in the trailer by Hudi's writers.
COMPARATOR = "org.apache.hudi.io.storage.HoodieHBaseKVComparator"

# file info keys written by write_hfile itself
LAST_KEY = "hfile.LASTKEY"
AVG_KEY_LEN = "hfile.AVG_KEY_LEN"
AVG_VALUE_LEN = "hfile.AVG_VALUE_LEN"
CREATE_TIME_TS = "hfile.CREATE_TIME_TS"
KEY_VALUE_VERSION = "KEY_VALUE_VERSION"
MAX_MEMSTORE_TS_KEY = "MAX_MEMSTORE_TS_KEY"
#: File info keys :func:`write_hfile` computes (callers may not pass them).
STANDARD_FILE_INFO = (
    LAST_KEY,
    AVG_KEY_LEN,
    AVG_VALUE_LEN,
    CREATE_TIME_TS,
    KEY_VALUE_VERSION,
    MAX_MEMSTORE_TS_KEY,
)
# file info keys and the meta block Hudi's metadata writers add (HoodieAvroHFileReaderImplBase)
#: Writer schema (Avro JSON) of the values.
SCHEMA_KEY = "schema"
#: Bloom filter type code of base files (``DYNAMIC_V0``).
BLOOM_FILTER_TYPE_CODE_KEY = "bloomFilterTypeCode"
#: First record key of a base file.
MIN_RECORD_KEY = "minRecordKey"
#: Last record key of a base file.
MAX_RECORD_KEY = "maxRecordKey"
#: Name of the meta block holding a base file's serialised bloom filter.
BLOOM_FILTER_META_BLOCK = "bloomFilter"


class Codec(IntEnum):
    """Compression codec ids of the trailer (HBase ``Compression.Algorithm`` ordinals)."""

    LZO = 0
    GZ = 1
    NONE = 2
    SNAPPY = 3
    LZ4 = 4
    BZIP2 = 5
    ZSTD = 6


_DATA = b"DATABLK*"
_META = b"METABLKc"
_ROOT_INDEX = b"IDXROOT2"
_INTERMEDIATE_INDEX = b"IDXINTE2"
_LEAF_INDEX = b"IDXLEAF2"
_FILE_INFO = b"FILEINF2"
_PBUF = b"PBUF"
_MAX_VERSION = 3  # HFile major version

#: Family length 0, timestamp ``Long.MAX_VALUE`` (HConstants.LATEST_TIMESTAMP), type Put.
_KEY_SUFFIX = b"\x00" + struct.pack(">q", 2**63 - 1) + b"\x04"
_CELL_EXTRA = 2 + len(_KEY_SUFFIX)  # rowLength + suffix: keyLength = rowLength + 12
_HEADER = struct.Struct(">8siiqBii")
_GZIP_HEADER = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x00"  # java.util.zip.GZIPOutputStream

# TrailerProto field numbers (HBase HFileProtos)
_T_FILE_INFO_OFFSET = 1
_T_LOAD_ON_OPEN_OFFSET = 2
_T_UNCOMPRESSED_DATA_INDEX_SIZE = 3
_T_DATA_INDEX_COUNT = 5
_T_META_INDEX_COUNT = 6
_T_ENTRY_COUNT = 7
_T_NUM_DATA_INDEX_LEVELS = 8
_T_FIRST_DATA_BLOCK_OFFSET = 9
_T_LAST_DATA_BLOCK_OFFSET = 10
_T_COMPARATOR = 11
_T_CODEC = 12


@dataclass(frozen=True)
class HFile:
    """The content of an HFile.

    Attributes:
        keys: the row keys of the cells, in file order (ascending).
        values: the cell values, same length as ``keys``.
        file_info: the file info map (``schema``, ``hfile.LASTKEY``...), values raw bytes.
        meta_blocks: meta blocks by name (``bloomFilter`` in base files), payloads uncompressed.
    """

    keys: list[bytes]
    values: list[bytes]
    file_info: dict[str, bytes]
    meta_blocks: dict[str, bytes]


class _Damaged(Exception):
    """Raised inside the reader; :func:`read_hfile` turns it into a CorruptFileError."""


# --------------------------------------------------------------------------------------------
# Varints
# --------------------------------------------------------------------------------------------


def _uvarint(value: int) -> bytes:
    """Protobuf base-128 varint; negative values as their 64-bit two's complement."""
    value &= (1 << 64) - 1
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _read_uvarint(buf: bytes | memoryview, pos: int, end: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= end or shift > 63:
            raise _Damaged("varint runs past its buffer")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        shift += 7
        if b < 0x80:
            return result, pos


def _hadoop_vlong(value: int) -> bytes:
    """Hadoop ``WritableUtils.writeVLong``: -112..127 in one byte, else a length byte and the
    big-endian magnitude (one's complement for negatives)."""
    if -112 <= value <= 127:
        return struct.pack(">b", value)
    length = -112
    if value < 0:
        value = ~value
        length = -120
    n = (value.bit_length() + 7) // 8
    return struct.pack(">b", length - n) + value.to_bytes(n, "big")


def _read_hadoop_vlong(buf: bytes | memoryview, pos: int, end: int) -> tuple[int, int]:
    if pos >= end:
        raise _Damaged("vlong runs past its buffer")
    first = struct.unpack_from(">b", buf, pos)[0]
    pos += 1
    if first >= -112:
        return first, pos
    negative = first < -120
    n = (-120 - first) if negative else (-112 - first)  # WritableUtils.decodeVIntSize - 1
    if pos + n > end:
        raise _Damaged("vlong runs past its buffer")
    value = int.from_bytes(bytes(buf[pos : pos + n]), "big")
    return (~value if negative else value), pos + n


# --------------------------------------------------------------------------------------------
# Protobuf messages (TrailerProto, InfoProto)
# --------------------------------------------------------------------------------------------


def _proto_fields(buf: bytes, what: str) -> list[tuple[int, int | bytes]]:
    """Decode a protobuf message into ``(field, value)`` pairs (varint and length-delimited
    fields; fixed32/64 skipped)."""
    out: list[tuple[int, int | bytes]] = []
    pos, end = 0, len(buf)
    while pos < end:
        tag, pos = _read_uvarint(buf, pos, end)
        field, wire = tag >> 3, tag & 7
        if wire == 0:
            value, pos = _read_uvarint(buf, pos, end)
            out.append((field, value))
        elif wire == 2:
            n, pos = _read_uvarint(buf, pos, end)
            if pos + n > end:
                raise _Damaged(f"{what}: field {field} runs past the message")
            out.append((field, bytes(buf[pos : pos + n])))
            pos += n
        elif wire == 1:
            pos += 8
        elif wire == 5:
            pos += 4
        else:
            raise _Damaged(f"{what}: unknown wire type {wire}")
    if pos != end:
        raise _Damaged(f"{what}: message runs past its length")
    return out


def _proto_varint_field(field: int, value: int) -> bytes:
    return _uvarint(field << 3) + _uvarint(value)


def _proto_bytes_field(field: int, value: bytes) -> bytes:
    return _uvarint(field << 3 | 2) + _uvarint(len(value)) + value


def _signed64(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


# --------------------------------------------------------------------------------------------
# Java HashMap iteration order (the writer's file info and meta block maps)
# --------------------------------------------------------------------------------------------


def _java_string_hash(s: str) -> int:
    h = 0
    units = s.encode("utf-16-be")
    for i in range(0, len(units), 2):
        h = (31 * h + (units[i] << 8 | units[i + 1])) & 0xFFFFFFFF
    return h


@functools.lru_cache(maxsize=64)
def _java_hashmap_order(names: tuple[str, ...]) -> tuple[str, ...]:
    """``names`` (distinct, in insertion order) in the iteration order of a ``java.util.HashMap``
    they were put into: by bucket ``(h ^ h >>> 16) & (capacity - 1)``, insertion order within a
    bucket (resizing keeps it); capacity 16 doubled while size > 0.75 x capacity. (Bins are
    treeified only from 8 colliding keys in a table of 64+, which these small maps never reach.)
    """
    capacity = 16
    while len(names) > capacity * 3 // 4:
        capacity *= 2

    def bucket(name: str) -> int:
        h = _java_string_hash(name)
        return (h ^ (h >> 16)) & (capacity - 1)

    # stable: insertion order within a bucket; cached, the file info names of a kind of file
    # being the same each time
    return tuple(sorted(names, key=bucket))


# --------------------------------------------------------------------------------------------
# Writing
# --------------------------------------------------------------------------------------------


def _gzip(raw: bytes) -> bytes:
    """One gzip member as ``java.util.zip.GZIPOutputStream`` writes it (deflate level 6, no
    mtime, XFL 0, OS 0) -- byte-identical to Hudi's GZ HFile blocks."""
    deflate = zlib.compressobj(6, zlib.DEFLATED, -15)
    body = deflate.compress(raw) + deflate.flush()
    return _GZIP_HEADER + body + struct.pack("<II", zlib.crc32(raw), len(raw) & 0xFFFFFFFF)


def _num_checksum_bytes(n: int) -> int:
    return 4 * ((n + BYTES_PER_CHECKSUM - 1) // BYTES_PER_CHECKSUM)


def _block(magic: bytes, raw: bytes, codec: Codec, prev_offset: int = -1) -> bytes:
    """One block as hudi-io ``HFileBlock.serialize`` writes it: NULL checksum type, 4 zero
    bytes per 16 KiB chunk of header + payload."""
    payload = _gzip(raw) if codec == Codec.GZ else raw
    with_header = HEADER_SIZE + len(payload)
    checksums = _num_checksum_bytes(with_header)
    header = _HEADER.pack(
        magic,
        len(payload) + checksums,
        len(raw),
        prev_offset,
        0,  # ChecksumType.NULL
        BYTES_PER_CHECKSUM,
        with_header,
    )
    return b"".join([header, payload, bytes(checksums)])


def _index_entry(offset: int, size: int, key: bytes) -> bytes:
    return struct.pack(">qi", offset, size) + _hadoop_vlong(len(key)) + key


def _short_key(row: bytes) -> bytes:
    return struct.pack(">h", len(row)) + row


Cells: typing.TypeAlias = Sequence[bytes] | pa.Array
"""Keys or values of an HFile's cells: bytes objects, or an Arrow binary array."""


def _binary(xs: Cells, what: str) -> pa.LargeBinaryArray:
    """``xs`` as one Arrow ``large_binary`` array (the cells' bytes, read by offset).

    Raises:
        ValueError: an element is not bytes (named by its index).
    """
    if isinstance(xs, pa.ChunkedArray):
        xs = xs.combine_chunks()
    if isinstance(xs, pa.Array):
        if xs.null_count:
            raise ValueError(f"HFile {what} #{xs.is_null().index(True).as_py()} is None")
        return typing.cast(pa.LargeBinaryArray, xs.cast(pa.large_binary()))
    # (Arrow would take a str as its UTF-8 bytes)
    for i, x in enumerate(typing.cast(Sequence[object], xs)):
        if not isinstance(x, bytes | bytearray | memoryview):
            raise ValueError(f"HFile {what} #{i} is {type(x).__name__}, not bytes")
    return typing.cast(pa.LargeBinaryArray, pa.array(xs, pa.large_binary(), from_pandas=False))


def _lengths(xs: pa.LargeBinaryArray) -> np.ndarray:
    offsets = np.frombuffer(xs.buffers()[1], np.int64, len(xs) + 1, xs.offset * 8)
    return np.diff(offsets)


def _check_cells(keys: pa.LargeBinaryArray, values: pa.LargeBinaryArray) -> None:
    if len(keys) != len(values):
        raise ValueError(f"{len(keys)} keys but {len(values)} values")
    if values.null_count:
        raise ValueError(f"HFile value #{values.is_null().index(True).as_py()} is None")
    if keys.null_count:
        raise ValueError(f"HFile key #{keys.is_null().index(True).as_py()} is None")
    long = np.flatnonzero(_lengths(keys) > 0x7FFF)
    if len(long):
        i = int(long[0])
        raise ValueError(f"HFile key #{i} is {len(keys[i].as_py())} bytes long (at most 32767)")
    n = len(keys)
    if n < 2:
        return
    ascending = pc.less(keys.slice(0, n - 1), keys.slice(1))
    if pc.all(ascending).as_py():
        return
    i = ascending.index(False).as_py() + 1
    key, prev = keys[i].as_py(), keys[i - 1].as_py()
    kind = "duplicate" if prev == key else "out of order"
    raise ValueError(
        f"HFile keys must be strictly ascending: key #{i} {key[:80]!r} is {kind}"
        f" after {prev[:80]!r}"
    )


def _split_blocks(sizes: np.ndarray, block_size: int) -> list[int]:
    """Start index of each data block: a new block starts when the current one is not empty and
    the cell would take it past ``block_size`` bytes, counting each cell as
    ``keyLength + valueLength + 9`` with the full cell key (Java ``HFileWriterImpl.append``;
    keys are distinct, so no key ever straddles two blocks). ``sizes``: each cell's bytes."""
    ends = np.cumsum(sizes)
    starts = [0]
    n = len(sizes)
    while True:
        s = starts[-1]
        before = int(ends[s - 1]) if s else 0
        # the cells of this block: all that fit whole, at least one
        e = max(s + 1, int(np.searchsorted(ends, before + block_size, side="right")))
        if e >= n:
            return starts
        starts.append(e)


def _cells_payload(keys: pa.LargeBinaryArray, values: pa.LargeBinaryArray) -> pa.LargeBinaryArray:
    """Every cell's bytes, one element each, consecutive in one buffer: ``keyLength valueLength
    rowLength row suffix value memstoreTS`` (the full KeyValue key, memstoreTS 0 for
    KEY_VALUE_VERSION 1), built by Arrow kernels rather than cell by cell."""
    n = len(keys)
    header = np.zeros(n, dtype=[("k", ">i4"), ("v", ">i4"), ("r", ">i2")])
    rows = _lengths(keys)
    header["k"] = rows + _CELL_EXTRA
    header["v"] = _lengths(values)
    header["r"] = rows
    heads = pa.FixedSizeBinaryArray.from_buffers(
        pa.binary(10), n, [None, pa.py_buffer(header.tobytes())]
    ).cast(pa.large_binary())
    suffix = pa.scalar(_KEY_SUFFIX, pa.large_binary())
    zero = pa.scalar(b"\x00", pa.large_binary())
    joined = pc.binary_join_element_wise(
        heads, keys, suffix, values, zero, pa.scalar(b"", pa.large_binary())
    )
    return typing.cast(pa.LargeBinaryArray, joined)


def _file_info_payload(entries: Mapping[str, bytes]) -> bytes:
    order = _java_hashmap_order(tuple(entries))
    pairs = b"".join(
        _proto_bytes_field(
            1,
            _proto_bytes_field(1, name.encode("utf-8")) + _proto_bytes_field(2, entries[name]),
        )
        for name in order
    )
    return _PBUF + _uvarint(len(pairs)) + pairs


def _checked_file_info(
    keys: pa.LargeBinaryArray,
    values: pa.LargeBinaryArray,
    file_info: Mapping[str, bytes] | None,
    block_size: int,
    codec: Codec,
) -> dict[str, bytes]:
    """The caller's file info entries, once the arguments of :func:`write_hfile` are checked
    (before any byte is written, so that a bad call fails whole).

    Raises:
        ValueError: as :func:`write_hfile`.
    """
    _check_cells(keys, values)
    if block_size <= 0:
        raise ValueError(f"HFile block size must be positive, got {block_size}")
    if codec not in (Codec.GZ, Codec.NONE):
        raise ValueError(f"HFile codec {codec!r} is not written; use GZ or NONE")
    extra = dict(file_info or {})
    reserved = sorted(set(extra) & set(STANDARD_FILE_INFO))
    if reserved:
        raise ValueError(f"file info keys {reserved} are written by write_hfile itself")
    return extra


@dataclass(frozen=True)
class _DataBlocks:
    """The data blocks of an HFile (written from offset 0) and what the trailer says of them.

    Attributes:
        blocks: the serialised blocks, in file order.
        index: the root data index entries, one per block.
        first_offset, last_offset: offsets of the first and last block (-1: no block).
        uncompressed_size: the blocks' payload bytes before compression.
    """

    blocks: list[bytes]
    index: list[bytes]
    first_offset: int
    last_offset: int
    uncompressed_size: int


def _data_blocks(
    keys: pa.LargeBinaryArray, values: pa.LargeBinaryArray, block_size: int, codec: Codec
) -> _DataBlocks:
    """The cells cut into data blocks of about ``block_size`` bytes (:func:`_split_blocks`),
    each indexed by its first key."""
    blocks: list[bytes] = []
    offset = 0
    index: list[bytes] = []
    first_block = last_block = -1
    uncompressed_data = 0
    if not len(keys):
        return _DataBlocks(blocks, index, first_block, last_block, uncompressed_data)
    cells = _cells_payload(keys, values)
    bounds = np.frombuffer(cells.buffers()[1], np.int64, len(cells) + 1, cells.offset * 8)
    data = cells.buffers()[2]
    starts = _split_blocks(np.diff(bounds), block_size)
    for b, start in enumerate(starts):
        end = starts[b + 1] if b + 1 < len(starts) else len(keys)
        raw = data[int(bounds[start]) : int(bounds[end])].to_pybytes()
        # HBase semantics: the offset of the previous data block (-1 for the first)
        block = _block(_DATA, raw, codec, last_block)
        if first_block < 0:
            first_block = offset
        last_block = offset
        index.append(_index_entry(offset, len(block), _short_key(keys[start].as_py())))
        uncompressed_data += len(raw)
        blocks.append(block)
        offset += len(block)
    return _DataBlocks(blocks, index, first_block, last_block, uncompressed_data)


def _standard_file_info(
    keys: pa.LargeBinaryArray,
    values: pa.LargeBinaryArray,
    extra: Mapping[str, bytes],
    create_time_ms: int | None,
) -> dict[str, bytes]:
    """The file info entries: the caller's ``extra`` among the standard ones, inserted in the
    order Java's writer puts them (the order decides nothing on disk -- the entries are
    written in ``HashMap`` order -- but is kept as Java's)."""
    n = len(keys)
    info: dict[str, bytes] = {MAX_MEMSTORE_TS_KEY: struct.pack(">q", 0)}
    info.update({k: bytes(v) for k, v in extra.items()})
    info[LAST_KEY] = _short_key(keys[n - 1].as_py()) if n else b""
    info[AVG_KEY_LEN] = struct.pack(">i", int(_lengths(keys).sum()) // n if n else 0)
    millis = int(time.time() * 1000) if create_time_ms is None else create_time_ms
    info[CREATE_TIME_TS] = struct.pack(">q", millis)
    info[AVG_VALUE_LEN] = struct.pack(">i", int(_lengths(values).sum()) // n if n else 0)
    info[KEY_VALUE_VERSION] = struct.pack(">i", 1)
    return info


def _trailer_block(
    data: _DataBlocks,
    *,
    file_info_offset: int,
    load_on_open: int,
    meta_count: int,
    entries: int,
    codec: Codec,
) -> bytes:
    """The fixed-size trailer (version 3.0, one data index level): where the load-on-open
    section and file info start, and what the data blocks hold."""
    proto = b"".join(
        [
            _proto_varint_field(_T_FILE_INFO_OFFSET, file_info_offset),
            _proto_varint_field(_T_LOAD_ON_OPEN_OFFSET, load_on_open),
            _proto_varint_field(_T_UNCOMPRESSED_DATA_INDEX_SIZE, data.uncompressed_size),
            _proto_varint_field(_T_DATA_INDEX_COUNT, len(data.index)),
            _proto_varint_field(_T_META_INDEX_COUNT, meta_count),
            _proto_varint_field(_T_ENTRY_COUNT, entries),
            _proto_varint_field(_T_NUM_DATA_INDEX_LEVELS, 1),
            _proto_varint_field(_T_FIRST_DATA_BLOCK_OFFSET, data.first_offset),
            _proto_varint_field(_T_LAST_DATA_BLOCK_OFFSET, max(data.last_offset, 0)),
            _proto_bytes_field(_T_COMPARATOR, COMPARATOR.encode("ascii")),
            _proto_varint_field(_T_CODEC, int(codec)),
        ]
    )
    head = TRAILER_MAGIC + _uvarint(len(proto)) + proto
    return head + bytes(TRAILER_SIZE - 4 - len(head)) + struct.pack(">i", _MAX_VERSION)


def write_hfile(
    keys: Cells,
    values: Cells,
    *,
    file_info: Mapping[str, bytes] | None = None,
    meta_blocks: Mapping[str, bytes] | None = None,
    block_size: int = HFILE_BLOCK_SIZE,
    create_time_ms: int | None = None,
    codec: Codec = Codec.GZ,
) -> bytes:
    """Write an HFile in Hudi 1.x's native layout (hudi-io ``HFileWriterImpl``), byte for byte.

    Layout: the data blocks (cells with full KeyValue keys and a zero memstoreTS byte), one meta
    block per entry of ``meta_blocks``, the root data index (first key of each block as
    ``int16 rowLength + row``), the meta index (always written, possibly empty), the file info
    and the 4096-byte trailer (version 3.0, one index level). Every block has checksum type
    NULL with 4 zero bytes per 16 KiB chunk and, with ``codec`` GZ, a gzip-compressed payload.
    File info and meta blocks come out in Java ``HashMap`` order, as Java writes them. Every
    Hudi 1.x HFile of the fixtures (base files and log blocks of all metadata-table partitions)
    is rewritten byte for byte from its cells, file info and meta blocks. One difference
    shows only in files of several data blocks: each data block's ``prevBlockOffset`` is the
    previous data block's offset (HBase's meaning), where hudi-io's ``HFileWriterImpl.
    flushCurrentDataBlock`` passes the new block's own start; readers (Java's native one,
    hudi-rs) ignore the field. (Newer hudi-io versions put full cell keys into the root index;
    :func:`read_hfile` reads both forms.)

    The writer adds the standard file info entries itself: ``MAX_MEMSTORE_TS_KEY`` (int64 0),
    ``hfile.LASTKEY`` (``int16 len + row`` of the last key), ``hfile.AVG_KEY_LEN`` and
    ``hfile.AVG_VALUE_LEN`` (int32, truncated means of row and value lengths),
    ``hfile.CREATE_TIME_TS`` (int64 millis) and ``KEY_VALUE_VERSION`` (int32 1). Callers add
    ``schema`` and, for base files, ``bloomFilterTypeCode`` / ``minRecordKey`` / ``maxRecordKey``
    (and the ``bloomFilter`` meta block).

    Args:
        keys: the row keys (bytes, or an Arrow binary array), strictly ascending in unsigned
            byte order, each at most 32767 bytes.
        values: the values, one per key (bytes, or an Arrow binary array).
        file_info: extra file info entries (in the order Java would have put them).
        meta_blocks: meta blocks by name (in the order Java would have put them).
        block_size: data block target size: a block is closed before a cell that would take it
            past this many bytes (``hoodie.hfile.block.size``).
        create_time_ms: ``hfile.CREATE_TIME_TS`` (default: now).
        codec: block compression, :attr:`Codec.GZ` (Hudi's default) or :attr:`Codec.NONE`.

    Raises:
        ValueError: keys not strictly ascending, not bytes or too long; lengths differ; a
            standard file info key in ``file_info``; a bad block size or codec.
    """
    ks, vs = _binary(keys, "key"), _binary(values, "value")
    extra = _checked_file_info(ks, vs, file_info, block_size, codec)
    return _assemble(ks, vs, extra, meta_blocks, block_size, create_time_ms, codec)


def _assemble(
    keys: pa.LargeBinaryArray,
    values: pa.LargeBinaryArray,
    extra: dict[str, bytes],
    meta_blocks: Mapping[str, bytes] | None,
    block_size: int,
    create_time_ms: int | None,
    codec: Codec,
) -> bytes:
    """The bytes of the HFile :func:`write_hfile` writes, its arguments checked."""
    data = _data_blocks(keys, values, block_size, codec)
    out = list(data.blocks)
    offset = sum(len(b) for b in out)

    meta = dict(meta_blocks or {})
    meta_index: list[bytes] = []
    for name in _java_hashmap_order(tuple(meta)):
        block = _block(_META, bytes(meta[name]), codec)
        meta_index.append(_index_entry(offset, len(block), name.encode("utf-8")))
        out.append(block)
        offset += len(block)

    load_on_open = offset
    for entries in (data.index, meta_index):
        block = _block(_ROOT_INDEX, b"".join(entries), codec)
        out.append(block)
        offset += len(block)

    info = _standard_file_info(keys, values, extra, create_time_ms)
    out.append(_block(_FILE_INFO, _file_info_payload(info), codec))
    out.append(
        _trailer_block(
            data,
            file_info_offset=offset,
            load_on_open=load_on_open,
            meta_count=len(meta_index),
            entries=len(keys),
            codec=codec,
        )
    )
    return b"".join(out)


# --------------------------------------------------------------------------------------------
# Reading
# --------------------------------------------------------------------------------------------


class _Reader:
    """Bounds-checked access to the blocks of one HFile."""

    def __init__(self, data: bytes, codec: Codec) -> None:
        self.data = data
        self.codec = codec
        self.blocks_end = len(data) - TRAILER_SIZE

    def block(self, offset: int, magics: tuple[bytes, ...]) -> tuple[bytes, int]:
        """The uncompressed payload of the block at ``offset`` and its on-disk size."""
        data = self.data
        if offset < 0 or offset + HEADER_SIZE > self.blocks_end:
            raise _Damaged(f"block offset {offset} is outside the file")
        magic, on_disk, uncompressed, _prev, _ctype, per_checksum, data_with_header = (
            _HEADER.unpack_from(data, offset)
        )
        if magic not in magics:
            want = " or ".join(m.decode() for m in magics)
            raise _Damaged(f"block at {offset} is {magic!r}, expected {want}")
        size = HEADER_SIZE + on_disk
        if on_disk < 0 or offset + size > self.blocks_end:
            raise _Damaged(f"{magic.decode()} block at {offset} runs past the blocks")
        if not HEADER_SIZE <= data_with_header <= size or uncompressed < 0:
            raise _Damaged(f"{magic.decode()} block at {offset} has impossible sizes")
        if per_checksum <= 0 and data_with_header != size:
            raise _Damaged(f"{magic.decode()} block at {offset}: bad bytes per checksum")
        payload = data[offset + HEADER_SIZE : offset + data_with_header]
        raw = _gunzip(payload, magic, offset) if self.codec == Codec.GZ else payload
        if len(raw) != uncompressed:
            raise _Damaged(
                f"{magic.decode()} block at {offset} holds {len(raw)} bytes, header says"
                f" {uncompressed}"
            )
        return raw, size


def _gunzip(payload: bytes, magic: bytes, offset: int) -> bytes:
    out: list[bytes] = []
    rest = payload
    try:
        while rest:
            d = zlib.decompressobj(31)
            out.append(d.decompress(rest))
            if not d.eof:
                raise _Damaged(f"{magic.decode()} block at {offset}: gzip stream is truncated")
            rest = d.unused_data
    except zlib.error as e:
        raise _Damaged(f"{magic.decode()} block at {offset}: {e}") from e
    return b"".join(out)


def _root_index(raw: bytes, count: int, what: str) -> list[tuple[int, int, bytes]]:
    """``count`` root index entries ``(offset, onDiskSize, key)`` (trailing mid-key data of a
    multi-level root index is ignored)."""
    out = []
    pos, end = 0, len(raw)
    for _ in range(count):
        if pos + 12 > end:
            raise _Damaged(f"{what} index has fewer than {count} entries")
        offset, size = struct.unpack_from(">qi", raw, pos)
        n, pos = _read_hadoop_vlong(raw, pos + 12, end)
        if n < 0 or pos + n > end:
            raise _Damaged(f"{what} index key runs past the block")
        out.append((offset, size, raw[pos : pos + n]))
        pos += n
    return out


def _non_root_index(raw: bytes) -> list[tuple[int, int, bytes]]:
    """Entries of an intermediate/leaf index block (HBase ``BlockIndexChunk.writeNonRoot``)."""
    if len(raw) < 4:
        raise _Damaged("index block is shorter than its entry count")
    (n,) = struct.unpack_from(">i", raw, 0)
    base = 4 + 4 * (n + 1)
    if n < 0 or base > len(raw):
        raise _Damaged(f"index block claims {n} entries")
    offsets = struct.unpack_from(f">{n + 1}i", raw, 4)
    out = []
    for i in range(n):
        start, end = base + offsets[i], base + offsets[i + 1]
        if not base <= start <= start + 12 <= end <= len(raw):
            raise _Damaged("index block entry runs past the block")
        offset, size = struct.unpack_from(">qi", raw, start)
        out.append((offset, size, raw[start + 12 : end]))
    return out


def _row_of_index_key(key: bytes) -> bytes:
    if len(key) < 2:
        raise _Damaged("index key is shorter than its row length")
    (n,) = struct.unpack_from(">h", key, 0)
    if n < 0 or 2 + n > len(key):
        raise _Damaged("index key row runs past the key")
    return key[2 : 2 + n]


def _cells(
    raw: bytes, mvcc: bool, keys: list[bytes], values: list[bytes], offset: int
) -> bytes | None:
    """Append the cells of one data block; returns the block's first row (None if empty)."""
    pos, end = 0, len(raw)
    first: bytes | None = None
    while pos < end:
        if pos + 10 > end:
            raise _Damaged(f"data block at {offset}: cell header runs past the block")
        klen, vlen, rlen = struct.unpack_from(">iih", raw, pos)
        kstart = pos + 8
        vstart = kstart + klen
        # the row is all a reader needs: hudi-io's KeyValue reads the row length and row and
        # skips keyLength bytes whatever follows the row (Hudi 1.1 writes nothing after it)
        if klen < rlen + 2 or rlen < 0 or vlen < 0 or vstart + vlen > end:
            raise _Damaged(f"data block at {offset}: cell at {pos} runs past the block")
        row = raw[kstart + 2 : kstart + 2 + rlen]
        if first is None:
            first = row
        keys.append(row)
        values.append(raw[vstart : vstart + vlen])
        pos = vstart + vlen
        if mvcc:
            _ts, pos = _read_hadoop_vlong(raw, pos, end)
    return first


def _trailer(data: bytes) -> dict[int, int | bytes]:
    if len(data) < TRAILER_SIZE:
        raise _Damaged(f"{len(data)} bytes is shorter than the {TRAILER_SIZE}-byte trailer")
    t = len(data) - TRAILER_SIZE
    if data[t : t + 8] != TRAILER_MAGIC:
        raise _Damaged("no trailer magic 4096 bytes before the end")
    (version,) = struct.unpack_from(">i", data, len(data) - 4)
    major = version & 0x00FFFFFF
    if major != _MAX_VERSION:
        if major in (1, 2):
            raise UnsupportedError(f"HFile version {major} is not read (only version 3)")
        raise _Damaged(f"trailer version {major}.{version >> 24} is not an HFile version")
    n, pos = _read_uvarint(data, t + 8, len(data) - 4)
    if pos + n > len(data) - 4:
        raise _Damaged("trailer message runs past the trailer")
    return dict(_proto_fields(data[pos : pos + n], "trailer"))


def _int_field(fields: Mapping[int, int | bytes], field: int, default: int | None = None) -> int:
    value = fields.get(field, default)
    if not isinstance(value, int):
        raise _Damaged(f"trailer field {field} is missing or not a number")
    return value


@dataclass
class _Opened:
    """An HFile's trailer, file info and data index, read without its data blocks."""

    reader: _Reader
    fields: dict[int, int | bytes]
    file_info: dict[str, bytes]
    mvcc: bool
    entries: list[tuple[int, int, bytes]]
    index_offset: int
    root_size: int


def _open(data: bytes) -> _Opened:
    fields = _trailer(data)
    codec_id = _int_field(fields, _T_CODEC, int(Codec.LZO))
    try:
        codec = Codec(codec_id)
    except ValueError as e:
        raise _Damaged(f"unknown compression codec id {codec_id}") from e
    if codec not in (Codec.GZ, Codec.NONE):
        raise UnsupportedError(f"HFile compression {codec.name} is not read (only GZ and NONE)")
    reader = _Reader(data, codec)

    # file info
    raw, _ = reader.block(_int_field(fields, _T_FILE_INFO_OFFSET), (_FILE_INFO,))
    if raw[:4] != _PBUF:
        raise _Damaged("file info block does not start with PBUF")
    n, pos = _read_uvarint(raw, 4, len(raw))
    if pos + n > len(raw):
        raise _Damaged("file info message runs past its block")
    file_info: dict[str, bytes] = {}
    for field, pair in _proto_fields(raw[pos : pos + n], "file info"):
        if field != 1 or not isinstance(pair, bytes):
            continue
        parts = {f: v for f, v in _proto_fields(pair, "file info entry") if isinstance(v, bytes)}
        file_info[parts.get(1, b"").decode("utf-8")] = parts.get(2, b"")
    kv_version = file_info.get(KEY_VALUE_VERSION)
    # HBase writes KEY_VALUE_VERSION and MAX_MEMSTORE_TS_KEY together when cells carry a
    # memstore timestamp; Hudi 1.1's native writer puts only the latter and a 0 byte after
    # every cell (hudi-io HFileDataBlock: ZERO_TS_VERSION_BYTE_LENGTH, read unconditionally)
    mvcc = (
        struct.unpack(">i", kv_version)[0] == 1
        if kv_version is not None
        else MAX_MEMSTORE_TS_KEY in file_info
    )

    # data index (descending through intermediate and leaf levels), then meta index
    index_offset = _int_field(fields, _T_LOAD_ON_OPEN_OFFSET)
    raw, root_size = reader.block(index_offset, (_ROOT_INDEX,))
    entries = _root_index(raw, _int_field(fields, _T_DATA_INDEX_COUNT), "data")
    levels = _int_field(fields, _T_NUM_DATA_INDEX_LEVELS, 1)
    for level in range(levels - 1, 0, -1):
        magic = _LEAF_INDEX if level == 1 else _INTERMEDIATE_INDEX
        lower: list[tuple[int, int, bytes]] = []
        for offset, _size, _key in entries:
            lower.extend(_non_root_index(reader.block(offset, (magic,))[0]))
        entries = lower
    return _Opened(reader, fields, file_info, mvcc, entries, index_offset, root_size)


def _read(data: bytes) -> HFile:
    o = _open(data)
    reader, fields, entries, mvcc = o.reader, o.fields, o.entries, o.mvcc
    meta_raw, _ = reader.block(o.index_offset + o.root_size, (_ROOT_INDEX,))
    meta_entries = _root_index(meta_raw, _int_field(fields, _T_META_INDEX_COUNT), "meta")
    meta_blocks = {
        name.decode("utf-8"): reader.block(offset, (_META,))[0]
        for offset, _size, name in meta_entries
    }

    keys: list[bytes] = []
    values: list[bytes] = []
    for offset, _size, key in entries:
        raw, _ = reader.block(offset, (_DATA,))
        first = _cells(raw, mvcc, keys, values, offset)
        if first != _row_of_index_key(key):
            raise _Damaged(f"data block at {offset} does not start with its index key")
    expected = _int_field(fields, _T_ENTRY_COUNT)
    if len(keys) != expected:
        raise _Damaged(f"{len(keys)} cells, the trailer says {expected}")
    return HFile(keys, values, o.file_info, meta_blocks)


def read_hfile(data: bytes | memoryview, path: str = "") -> HFile:
    """Read every cell, the file info and the meta blocks of an HFile.

    Reads both writer generations: Hudi 1.x's native writer (NULL checksums, ``int16 + row``
    index keys, trailer version 3.0) and the HBase writer of Hudi 0.x and 1.0 (CRC32C
    checksums, full cell keys in the index and ``hfile.LASTKEY``, trailer 3.3, possibly a
    multi-level data index). Codecs GZ and NONE. Keys come back as the cells' row bytes.

    Args:
        data: the whole file.
        path: the file's path, named in errors.

    Raises:
        CorruptFileError: the bytes are not an intact HFile (truncated, damaged block, bad
            index or trailer); the message names ``path``.
        UnsupportedError: HFile version 1/2 or a codec other than GZ/NONE.
    """
    data = bytes(data)
    try:
        return _read(data)
    except UnsupportedError as e:
        raise UnsupportedError(f"HFile {path or '<hfile>'}: {e}") from e
    except (_Damaged, struct.error, ValueError, IndexError) as e:
        raise CorruptFileError(f"HFile {path or '<hfile>'} is damaged: {e}") from e
