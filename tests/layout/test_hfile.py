"""HFile reading and writing: every metadata-table HFile of the fixtures (base files and HFiles
inside log blocks, both writer generations), byte-exact rewrites of the Hudi 1.x ones,
multi-block and multi-level files, refused input and damaged files."""

from __future__ import annotations

import io
import json
import random
import shutil
import struct
import zipfile
import zlib
from pathlib import Path

import fastavro
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hudi_ds.errors import CorruptFileError, UnsupportedError
from hudi_ds.layout.bloom_filter import BloomFilter
from hudi_ds.layout.hfile import (
    AVG_KEY_LEN,
    AVG_VALUE_LEN,
    BLOOM_FILTER_META_BLOCK,
    BLOOM_FILTER_TYPE_CODE_KEY,
    CREATE_TIME_TS,
    HFILE_BLOCK_SIZE,
    KEY_VALUE_VERSION,
    LAST_KEY,
    MAX_MEMSTORE_TS_KEY,
    MAX_RECORD_KEY,
    MIN_RECORD_KEY,
    SCHEMA_KEY,
    STANDARD_FILE_INFO,
    Codec,
    HFile,
    read_hfile,
    write_hfile,
)
from hudi_ds.log import (
    BlockType,
    decode_hfile_block,
    encode_block,
    encode_hfile_data_block,
    scan_log_bytes,
)
from tests.conftest import assert_rows, hudi_rs_table, table_rows
from tests.fixtures import FIXTURES_DIR, fixture_names, fixture_table, require_fixtures

_MDT = ".hoodie/metadata/"


def _mdt_tables() -> list[str]:
    names = []
    for name in fixture_names():
        with zipfile.ZipFile(FIXTURES_DIR / f"{name}.zip") as zf:
            if any(_MDT in n and n.endswith(".hfile") for n in zf.namelist()):
                names.append(name)
    return names


MDT_TABLES = _mdt_tables()


def _mdt_hfiles(root: Path) -> list[tuple[str, bytes, str | None]]:
    """``(where, hfile bytes, log block SCHEMA header or None)`` of every base file and every
    HFILE_DATA log block under the table's metadata table."""
    out: list[tuple[str, bytes, str | None]] = []
    for path in sorted((root / ".hoodie" / "metadata").rglob("*")):
        if not path.is_file() or "/.hoodie/metadata/.hoodie/" in str(path):
            continue
        if path.name.endswith(".hfile"):
            out.append((str(path), path.read_bytes(), None))
        elif ".log." in path.name:
            for block in scan_log_bytes(path.read_bytes(), str(path)).blocks:
                if block.block_type == BlockType.HFILE_DATA:
                    out.append((f"{path}@{block.offset}", block.content, block.schema))
    return out


def _trailer_fields(data: bytes) -> dict[int, int | bytes]:
    """The trailer's protobuf fields, decoded independently of the module under test."""
    t = data[-4096:]
    assert t[:8] == b'TRABLK"$'

    def varint(pos: int) -> tuple[int, int]:
        value = shift = 0
        while True:
            b = t[pos]
            value |= (b & 0x7F) << shift
            pos, shift = pos + 1, shift + 7
            if b < 0x80:
                return value, pos

    n, pos = varint(8)
    end = pos + n
    fields: dict[int, int | bytes] = {}
    while pos < end:
        tag, pos = varint(pos)
        if tag & 7 == 2:
            length, pos = varint(pos)
            fields[tag >> 3] = t[pos : pos + length]
            pos += length
        else:
            fields[tag >> 3], pos = varint(pos)
    return fields


def _generation(data: bytes) -> int:
    """Trailer minor version: 0 for Hudi 1.x's native writer, 3 for the HBase writer."""
    return data[-4]


def _row(key: bytes) -> bytes:
    (n,) = struct.unpack_from(">h", key, 0)
    return key[2 : 2 + n]


def _check_hfile(where: str, data: bytes, log_schema: str | None) -> HFile:
    h = read_hfile(data, where)
    fields = _trailer_fields(data)
    gen = _generation(data)
    assert gen in (0, 3), where
    n = len(h.keys)
    assert n == len(h.values) == fields[7], where
    assert all(a < b for a, b in zip(h.keys, h.keys[1:], strict=False)), where
    info = h.file_info
    assert struct.unpack(">i", info[KEY_VALUE_VERSION]) == (1,)
    assert info[MAX_MEMSTORE_TS_KEY] == bytes(8)
    # the values are Avro records of the file's schema; each decodes to exactly its bytes
    schema_json = info[SCHEMA_KEY].decode()
    if log_schema is not None:
        assert json.loads(log_schema) == json.loads(schema_json), where
    parsed = fastavro.parse_schema(json.loads(schema_json))
    for key, value in zip(h.keys, h.values, strict=True):
        stream = io.BytesIO(value)
        record = fastavro.schemaless_reader(stream, parsed, None)
        assert stream.tell() == len(value), (where, key)
        assert isinstance(record, dict)
        assert record["key"] == ""  # blanked: the key is the HFile row
        if "/metadata/files/" in where:
            assert record["type"] in (1, 2)
            assert (record["type"] == 1) == (key == b"__all_partitions__")
    if n:
        assert "/metadata/files/" not in where or b"__all_partitions__" in h.keys
        # averages: 1.x over the rows, HBase over the full cell keys (row + 12)
        extra = 0 if gen == 0 else 12
        assert struct.unpack(">i", info[AVG_KEY_LEN])[0] == sum(map(len, h.keys)) // n + extra
        assert struct.unpack(">i", info[AVG_VALUE_LEN])[0] == sum(map(len, h.values)) // n
    if LAST_KEY in info:
        last = info[LAST_KEY]
        assert (_row(last) if last else b"") == (h.keys[-1] if n else b""), where
        if gen == 0 and n:
            assert last == struct.pack(">h", len(h.keys[-1])) + h.keys[-1]
    if BLOOM_FILTER_TYPE_CODE_KEY in info:  # base files: bloom filter over the keys
        assert info[MIN_RECORD_KEY] == (h.keys[0] if n else b"")
        assert info[MAX_RECORD_KEY] == (h.keys[-1] if n else b"")
        bloom = BloomFilter.parse(
            h.meta_blocks[BLOOM_FILTER_META_BLOCK], info[BLOOM_FILTER_TYPE_CODE_KEY].decode()
        )
        assert bloom.might_contain([k.decode() for k in h.keys]).all()
        assert list(h.meta_blocks) == [BLOOM_FILTER_META_BLOCK]
    else:
        assert h.meta_blocks == {}
    if gen == 0:
        # Hudi 1.x native writer: rewriting the cells gives the same bytes
        extra_info = {k: v for k, v in info.items() if k not in STANDARD_FILE_INFO}
        created = struct.unpack(">q", info[CREATE_TIME_TS])[0]
        again = write_hfile(
            h.keys,
            h.values,
            file_info=extra_info,
            meta_blocks=h.meta_blocks,
            create_time_ms=created,
        )
        assert again == data, where
    return h


def test_fixture_set_has_both_generations() -> None:
    require_fixtures()
    assert "cow_0x_partitioned" in MDT_TABLES  # HBase writer (Hudi 0.14)
    assert "mor_avro_v8_trips_8i3u1d" in MDT_TABLES  # HBase writer (Hudi 1.0)
    assert "cow_v9_txns_simple_meta" in MDT_TABLES  # Hudi 1.x native writer
    assert len(MDT_TABLES) >= 15


@pytest.mark.parametrize("name", MDT_TABLES)
def test_fixture_mdt_hfiles(name: str, tmp_path_factory: pytest.TempPathFactory) -> None:
    root = fixture_table(name, tmp_path_factory)
    files = _mdt_hfiles(root)
    assert any(log is None for _, _, log in files)
    for where, data, log_schema in files:
        _check_hfile(where, data, log_schema)


def _files_partition_map(h: HFile, key: bytes) -> dict[str, tuple[int, bool]]:
    schema = fastavro.parse_schema(json.loads(h.file_info[SCHEMA_KEY]))
    record = fastavro.schemaless_reader(io.BytesIO(h.values[h.keys.index(key)]), schema, None)
    assert isinstance(record, dict)
    return {k: (v["size"], v["isDeleted"]) for k, v in record["filesystemMetadata"].items()}


def test_fixture_v9_base_file_exact(tmp_path_factory: pytest.TempPathFactory) -> None:
    """The reference file (hudi-metadata-table.md 3): one cell, a bloom filter, 6771 bytes."""
    root = fixture_table("cow_v9_txns_simple_meta", tmp_path_factory)
    path = root / ".hoodie/metadata/files/files-0000-0_0-5-4_00000000000000000.hfile"
    data = path.read_bytes()
    h = _check_hfile(str(path), data, None)
    assert len(data) == 6771
    assert h.keys == [b"__all_partitions__"]
    assert [len(v) for v in h.values] == [13]
    assert _files_partition_map(h, b"__all_partitions__") == {}
    base_keys = [SCHEMA_KEY, BLOOM_FILTER_TYPE_CODE_KEY, MIN_RECORD_KEY, MAX_RECORD_KEY]
    assert sorted(h.file_info) == sorted([*STANDARD_FILE_INFO, *base_keys])
    assert len(h.meta_blocks[BLOOM_FILTER_META_BLOCK]) == 71940
    # the trailer as the reference spells it
    assert _trailer_fields(data) == {
        1: 555,
        2: 396,
        3: 52,
        5: 1,
        6: 1,
        7: 1,
        8: 1,
        9: 0,
        10: 0,
        11: b"org.apache.hudi.io.storage.HoodieHBaseKVComparator",
        12: 1,
    }
    # the file info keys as Java's HashMap put them: "schema" first, create time last
    fi = data[555:2675]
    assert fi[:8] == b"FILEINF2"
    raw = zlib.decompress(fi[33 : 33 + 2083], 31)
    assert raw.startswith(b"PBUF\x84\x48\x0a\xd9\x45\x0a\x06schema")
    assert raw.index(b"MAX_MEMSTORE_TS_KEY") < raw.index(b"hfile.CREATE_TIME_TS")


def test_fixture_log_block_hfile(tmp_path_factory: pytest.TempPathFactory) -> None:
    """An HFile inside an HFILE_DATA block (reference 4.2): no meta block, no bloom keys."""
    root = fixture_table("mor_avro_v9_txns_simple_meta", tmp_path_factory)
    files = [f for f in _mdt_hfiles(root) if f[2] is not None and "/metadata/files/" in f[0]]
    assert files
    for where, data, log_schema in files:
        h = _check_hfile(where, data, log_schema)
        assert h.meta_blocks == {}
        assert BLOOM_FILTER_TYPE_CODE_KEY not in h.file_info
        assert h.keys[0] in (b".", b"__all_partitions__")
        partitions = _files_partition_map(h, b"__all_partitions__")
        assert all(size == 0 for size, _ in partitions.values())
        # a partition record for each partition listed (plus nothing else)
        assert sorted(k.decode() for k in h.keys if k != b"__all_partitions__") == sorted(
            partitions
        )


def test_fixture_hbase_generation(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Hudi 0.x/1.0 (HBase writer): CRC32C checksums, full cell keys in the index and LASTKEY."""
    root = fixture_table("cow_0x_partitioned", tmp_path_factory)
    path = root / ".hoodie/metadata/files/files-0000-0_0-6-5_00000000000000010.hfile"
    data = path.read_bytes()
    assert _generation(data) == 3
    assert data[24] == 2  # checksum type CRC32C in the first block's header
    h = _check_hfile(str(path), data, None)
    assert h.keys == [b"__all_partitions__"]
    assert h.file_info[LAST_KEY] == (
        b"\x00\x12__all_partitions__\x00" + struct.pack(">q", 2**63 - 1) + b"\x04"
    )
    assert _files_partition_map(h, b"__all_partitions__") == {}  # created on an empty table
    logs = [f for f in _mdt_hfiles(root) if f[2] is not None]
    assert len(logs) == 2
    listed = 0
    for where, content, schema in logs:
        assert _generation(content) == 3
        h = _check_hfile(where, content, schema)
        partitions = _files_partition_map(h, b"__all_partitions__")
        assert sorted(partitions) == sorted(k.decode() for k in h.keys[1:])
        # every file the log blocks list is in the data table, with that size
        for partition in partitions:
            for name, (size, deleted) in _files_partition_map(h, partition.encode()).items():
                found = list(root.rglob(name))
                assert not deleted and len(found) == 1, name
                assert found[0].parent.name == partition
                assert found[0].stat().st_size == size
                listed += 1
    assert listed == 6


def test_fixture_short_cell_generation(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Hudi 1.1's native writer (the Trino fixture ``hudi_custom_keygen_pt_v8_mor``): cell keys
    hold ``rowLength + row`` alone (keyLength = rowLength + 2, no family/timestamp/type
    suffix), the file info has ``MAX_MEMSTORE_TS_KEY`` but no ``KEY_VALUE_VERSION``, and every
    cell is still followed by the memstore byte 0. hudi-io's reader takes them
    (``HFileDataBlock.readKeyValue`` reads the row by its length and steps over
    ``keyLength + valueLength + 1`` bytes); so does hudi_ds, and the table's reads use the
    metadata table instead of falling back to a listing."""
    from tests.fixtures import unzip_more

    root = unzip_more("trino__hudi_custom_keygen_pt_v8_mor", tmp_path)
    base = root / ".hoodie/metadata/files/files-0000-0_0-5-4_00000000000000000.hfile"
    data = base.read_bytes()
    # the layout as Java 1.1 wrote it: first cell's keyLength 20 = 2 + len("__all_partitions__")
    block = zlib.decompress(data[33 : 33 + struct.unpack_from(">i", data, 8)[0]], 31)
    assert struct.unpack_from(">iih", block, 0) == (20, 13, 18)
    assert len(block) == 8 + 20 + 13 + 1  # one cell and its memstore byte
    h = read_hfile(data, str(base))
    assert KEY_VALUE_VERSION not in h.file_info
    assert h.keys == [b"__all_partitions__"]
    assert _files_partition_map(h, b"__all_partitions__") == {}
    hfiles = _mdt_hfiles(root)
    assert len(hfiles) >= 8
    partitions: set[str] = set()
    for where, content, _schema in hfiles:
        h = read_hfile(content, where)
        assert all(a < b for a, b in zip(h.keys, h.keys[1:], strict=False)), where
        if "/metadata/files/" in where and b"__all_partitions__" in h.keys:
            partitions |= set(_files_partition_map(h, b"__all_partitions__"))
    assert len(partitions) == 5  # the five partition folders of the table
    import logging

    import hudi_ds

    with caplog.at_level(logging.WARNING):
        assert hudi_ds.read(str(root)).num_rows == 7
    assert not [r for r in caplog.records if "metadata table" in r.getMessage()]


# --------------------------------------------------------------------------------------------
# Writing
# --------------------------------------------------------------------------------------------


def _cells(n: int, seed: int = 0) -> tuple[list[bytes], list[bytes]]:
    rnd = random.Random(seed)
    keys = sorted({f"region={rnd.randrange(10**9):09d}/{i}".encode() for i in range(n)})
    values = [rnd.randbytes(rnd.randrange(0, 300)) for _ in keys]
    return keys, values


def _blocks(data: bytes) -> list[tuple[bytes, int, int, int]]:
    """``(magic, offset, onDiskSizeWithHeader, uncompressedSize)`` of the blocks of a file
    written by write_hfile (blocks back to back up to the trailer)."""
    out = []
    pos = 0
    while pos < len(data) - 4096:
        magic = data[pos : pos + 8]
        on_disk, uncompressed = struct.unpack_from(">ii", data, pos + 8)
        out.append((magic, pos, 33 + on_disk, uncompressed))
        pos += 33 + on_disk
    assert pos == len(data) - 4096
    return out


@pytest.mark.parametrize("codec", [Codec.GZ, Codec.NONE])
def test_multi_block_round_trip(codec: Codec) -> None:
    keys, values = _cells(2000)
    info = {SCHEMA_KEY: b'{"type":"string"}', "extra": b"\x00\x01"}
    meta = {"bloomFilter": b"bits" * 1000, "other": b""}
    data = write_hfile(
        keys, values, file_info=info, meta_blocks=meta, block_size=4096, codec=codec,
        create_time_ms=1234,
    )  # fmt: skip
    h = read_hfile(data)
    assert h.keys == keys and h.values == values
    assert h.meta_blocks == meta
    assert {k: h.file_info[k] for k in info} == info
    assert struct.unpack(">q", h.file_info[CREATE_TIME_TS]) == (1234,)
    blocks = _blocks(data)
    data_blocks = [b for b in blocks if b[0] == b"DATABLK*"]
    fields = _trailer_fields(data)
    assert fields[5] == len(data_blocks) > 10
    assert fields[9] == data_blocks[0][1] == 0 and fields[10] == data_blocks[-1][1]
    assert fields[12] == int(codec)
    # Java's split rule: a block closes before the cell that would take it past 4096 bytes
    sizes = [len(k) + len(v) + 21 for k, v in zip(keys, values, strict=True)]
    expected, used = [], 0
    for s in sizes:
        if used and used + s > 4096:
            expected.append(used)
            used = 0
        used += s
    expected.append(used)
    assert [b[3] for b in data_blocks] == expected
    assert fields[3] == sum(sizes)
    # prevBlockOffset: the previous data block (HBase's meaning), -1 for every other block
    prev = [struct.unpack_from(">q", data, b[1] + 16)[0] for b in blocks]
    assert prev == [-1] + [b[1] for b in data_blocks[:-1]] + [-1] * 5
    magics = [b[0] for b in blocks[len(data_blocks) :]]
    assert magics == [b"METABLKc", b"METABLKc", b"IDXROOT2", b"IDXROOT2", b"FILEINF2"]


def test_big_cell_gets_its_own_block() -> None:
    keys = [b"a", b"b", b"c"]
    values = [b"x" * 10, b"y" * 5000, b"z" * 10]
    data = write_hfile(keys, values, block_size=1000)
    h = read_hfile(data)
    assert h.values == values
    assert [b[3] for b in _blocks(data) if b[0] == b"DATABLK*"] == [32, 5022, 32]


def test_long_keys_and_names() -> None:
    """Index key lengths of 128+ bytes take a multi-byte Hadoop vint."""
    keys = [bytes([65 + i]) * (100 + 40 * i) for i in range(20)]  # 100..860 bytes
    values = [bytes([i]) * i for i in range(20)]
    meta = {"n" * 300: b"long name"}
    for codec in (Codec.GZ, Codec.NONE):
        data = write_hfile(keys, values, meta_blocks=meta, block_size=100, codec=codec)
        h = read_hfile(data)
        assert h.keys == keys and h.values == values and h.meta_blocks == meta
        assert _trailer_fields(data)[5] == 20
        assert h.file_info[LAST_KEY] == struct.pack(">h", len(keys[-1])) + keys[-1]


def test_default_block_size_is_javas() -> None:
    # HoodieStorageConfig.HFILE_BLOCK_SIZE and HFileUtils.DEFAULT_BLOCK_SIZE_FOR_LOG_FILE
    assert HFILE_BLOCK_SIZE == 1024 * 1024
    keys, values = _cells(3000)
    assert sum(len(k) + len(v) + 21 for k, v in zip(keys, values, strict=True)) < 2**20
    assert _trailer_fields(write_hfile(keys, values))[5] == 1


def test_empty_hfile() -> None:
    data = write_hfile([], [], file_info={SCHEMA_KEY: b"{}"}, create_time_ms=0)
    h = read_hfile(data)
    assert h.keys == [] and h.values == [] and h.meta_blocks == {}
    assert h.file_info[LAST_KEY] == b""
    fields = _trailer_fields(data)
    assert fields[5] == 0 and fields[7] == 0 and fields[9] == 2**64 - 1  # -1, as Java writes


def test_multi_level_index_read() -> None:
    """A two-level data index (root -> leaf index blocks -> data blocks), as HBase writes for
    big files: the leaf blocks are built here by hand around write_hfile's data blocks."""
    keys, values = _cells(500, seed=3)
    single = write_hfile(keys, values, block_size=2048, codec=Codec.NONE, create_time_ms=7)
    blocks = _blocks(single)
    data_blocks = [b for b in blocks if b[0] == b"DATABLK*"]
    fi = next(b for b in blocks if b[0] == b"FILEINF2")
    body = single[: data_blocks[-1][1] + data_blocks[-1][2]]

    def block(magic: bytes, payload: bytes) -> bytes:
        header = struct.pack(
            ">8siiqBii", magic, len(payload), len(payload), -1, 0, 16384, 33 + len(payload)
        )
        return header + payload

    def first_key(b: tuple[bytes, int, int, int]) -> bytes:
        klen, _, _rlen = struct.unpack_from(">iih", single, b[1] + 33)
        return single[b[1] + 41 : b[1] + 41 + klen]  # the full cell key, as HBase indexes it

    leaves, root_entries = [], []
    offset = len(body)
    for chunk in (data_blocks[: len(data_blocks) // 2], data_blocks[len(data_blocks) // 2 :]):
        entries = [struct.pack(">qi", b[1], b[2]) + first_key(b) for b in chunk]
        secondary = [0]
        for e in entries:
            secondary.append(secondary[-1] + len(e))
        payload = struct.pack(f">i{len(secondary)}i", len(entries), *secondary) + b"".join(entries)
        leaf = block(b"IDXLEAF2", payload)
        key = first_key(chunk[0])
        root_entries.append(struct.pack(">qi", offset, len(leaf)) + bytes([len(key)]) + key)
        leaves.append(leaf)
        offset += len(leaf)
    root = block(b"IDXROOT2", b"".join(root_entries))
    meta_index = block(b"IDXROOT2", b"")
    file_info = single[fi[1] : fi[1] + fi[2]]
    load_on_open = offset
    fi_offset = offset + len(root) + len(meta_index)

    def field(n: int, v: int) -> bytes:
        out = bytearray([n << 3])
        while v > 0x7F:
            out.append(v & 0x7F | 0x80)
            v >>= 7
        return bytes(out + bytes([v]))

    proto = b"".join(
        [field(1, fi_offset), field(2, load_on_open), field(5, 2), field(6, 0),
         field(7, len(keys)), field(8, 2), field(12, int(Codec.NONE))]
    )  # fmt: skip
    trailer = b'TRABLK"$' + bytes([len(proto)]) + proto
    trailer += bytes(4092 - len(trailer)) + b"\x03\x00\x00\x03"
    data = body + b"".join(leaves) + root + meta_index + file_info + trailer
    h = read_hfile(data, "two-level.hfile")
    assert h.keys == keys and h.values == values
    # a leaf entry pointing at the wrong data block is caught
    b0, b1 = data_blocks[0], data_blocks[1]
    wrong = leaves[0].replace(struct.pack(">qi", b1[1], b1[2]), struct.pack(">qi", b0[1], b0[2]))
    bad = data.replace(leaves[0], wrong)
    with pytest.raises(CorruptFileError, match="two-level.hfile"):
        read_hfile(bad, "two-level.hfile")


def test_unsorted_and_duplicate_keys_refused() -> None:
    with pytest.raises(ValueError, match="out of order"):
        write_hfile([b"b", b"a"], [b"", b""])
    with pytest.raises(ValueError, match="duplicate"):
        write_hfile([b"a", b"b", b"b"], [b"", b"", b""])
    # unsigned byte order (HoodieHBaseKVComparator), not UTF-16 order: U+FFFF (ef bf bf)
    # sorts before U+1F600 (f0 9f 98 80) although Java's String order puts it after
    high, astral = "\uffff".encode(), "\U0001f600".encode()
    write_hfile([b"z", high, astral], [b"", b"", b""])
    with pytest.raises(ValueError, match="out of order"):
        write_hfile([astral, high], [b"", b""])
    with pytest.raises(ValueError, match="2 keys but 1 values"):
        write_hfile([b"a", b"b"], [b""])
    with pytest.raises(ValueError, match="32767"):
        write_hfile([b"k" * 40000], [b""])
    with pytest.raises(ValueError, match="hfile.LASTKEY"):
        write_hfile([b"a"], [b""], file_info={LAST_KEY: b""})
    with pytest.raises(ValueError, match="not bytes"):
        write_hfile(["a"], [b""])  # type: ignore[list-item]


def _small_file() -> bytes:
    keys, values = _cells(20, seed=5)
    return write_hfile(
        keys, values, file_info={SCHEMA_KEY: b"{}"}, meta_blocks={"m": b"meta"},
        create_time_ms=1,
    )  # fmt: skip


@pytest.mark.parametrize(
    "cut",
    [lambda d: d[:-1], lambda d: d[:100], lambda d: d[1:], lambda d: b"", lambda d: d[:4095]],
)
def test_truncated_file_names_path(cut) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(CorruptFileError, match="MDT/files/x.hfile"):
        read_hfile(cut(_small_file()), "MDT/files/x.hfile")


def test_every_flipped_byte_is_caught_or_harmless() -> None:
    """A flipped byte anywhere either raises (corrupt or unsupported) or falls where readers
    do not look (padding, unused header fields): the content is then unchanged."""
    data = _small_file()
    good = read_hfile(data)
    for pos in range(len(data)):
        bad = bytearray(data)
        bad[pos] ^= 0x41
        try:
            h = read_hfile(bytes(bad), "f.hfile")
        except CorruptFileError as e:
            assert "f.hfile" in str(e)
            continue
        except UnsupportedError:
            continue
        assert h == good, pos


def test_unsupported_codec_and_version() -> None:
    data = bytearray(_small_file())
    t = len(data) - 4096
    i = data.index(b"\x60\x01", t)  # field 12 (codec) = GZ
    data[i + 1] = int(Codec.SNAPPY)
    with pytest.raises(UnsupportedError, match="SNAPPY"):
        read_hfile(bytes(data), "s.hfile")
    v2 = _small_file()[:-4] + b"\x00\x00\x00\x02"
    with pytest.raises(UnsupportedError, match="version 2"):
        read_hfile(v2, "v2.hfile")


# --------------------------------------------------------------------------------------------
# hudi-rs reads what write_hfile writes (through a table's metadata table)
# --------------------------------------------------------------------------------------------


def _rewrite_files_partition(root: Path, drop: bytes | None, **options: object) -> int:
    """Rewrite every HFile of the metadata table's ``files`` partition (base files and log
    blocks) with write_hfile, without the cell ``drop``; returns the number rewritten."""

    def again(h: HFile) -> bytes:
        keep = [i for i, k in enumerate(h.keys) if k != drop]
        info = {k: v for k, v in h.file_info.items() if k not in STANDARD_FILE_INFO}
        return write_hfile(
            [h.keys[i] for i in keep],
            [h.values[i] for i in keep],
            file_info=info,
            meta_blocks=h.meta_blocks,
            **options,  # type: ignore[arg-type]
        )

    count = 0
    for path in (root / ".hoodie/metadata/files").iterdir():
        if path.name.endswith(".hfile"):
            path.write_bytes(again(read_hfile(path.read_bytes(), str(path))))
            count += 1
        elif ".log." in path.name:
            blocks = []
            for b in scan_log_bytes(path.read_bytes(), str(path)).blocks:
                if b.block_type == BlockType.HFILE_DATA:
                    content = again(decode_hfile_block(b))
                    blocks.append(
                        encode_hfile_data_block(b.instant_time or "", b.schema or "", content)
                    )
                    count += 1
                else:
                    blocks.append(encode_block(b.block_type, b.header, b.content, b.footer))
            path.write_bytes(b"".join(blocks))
    return count


@pytest.mark.parametrize(
    ("name", "codec"),
    [("cow_v9_txns_simple_meta", Codec.GZ), ("mor_avro_v9_txns_simple_meta", Codec.NONE)],
)
def test_hudi_rs_lists_files_through_written_hfiles(
    name: str, codec: Codec, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """hudi-rs (v9 tables: files listed through the metadata table) reads the table the same
    when every ``files`` HFile is rewritten with one cell per block; and a partition record
    left out of the rewrite disappears from its read, so it really read our files."""
    source = fixture_table(name, tmp_path_factory)
    mdt = {"hoodie.metadata.enable": "true"}
    original = hudi_rs_table(str(source), mdt)
    columns = original.column_names
    expected = table_rows(original, columns)
    regions = {r[columns.index("region")] for r in expected}
    assert regions == {"apac", "eu", "us"}
    for drop in (None, b"region=us"):
        root = tmp_path / f"{drop!r}"
        shutil.copytree(source, root)
        rewritten = _rewrite_files_partition(root, drop, block_size=64, codec=codec)
        assert rewritten >= 10
        want = [r for r in expected if drop is None or r[columns.index("region")] != "us"]
        assert_rows(hudi_rs_table(str(root), mdt), want, columns, key=["_hoodie_record_key"])


@settings(max_examples=60, deadline=None)
@given(
    cells=st.dictionaries(st.binary(max_size=300), st.binary(max_size=400), max_size=40),
    block_size=st.integers(1, 3000),
    codec=st.sampled_from([Codec.GZ, Codec.NONE]),
    info=st.dictionaries(st.text(min_size=1, max_size=30), st.binary(max_size=50), max_size=20),
)
def test_round_trip_property(
    cells: dict[bytes, bytes], block_size: int, codec: Codec, info: dict[str, bytes]
) -> None:
    keys = sorted(cells)
    values = [cells[k] for k in keys]
    info = {k: v for k, v in info.items() if k not in STANDARD_FILE_INFO}
    data = write_hfile(keys, values, file_info=info, block_size=block_size, codec=codec)
    h = read_hfile(data)
    assert h.keys == keys and h.values == values
    assert {k: h.file_info[k] for k in info} == info
    assert set(h.file_info) == set(info) | set(STANDARD_FILE_INFO)


def test_prefix_scan_decodes_only_the_blocks_of_its_prefixes() -> None:
    """Keys ``<column><n>`` of five columns (one all 0xff bytes) in blocks of about 50
    cells: a scan for some columns' prefixes returns exactly their cells, in order, decoding
    only the blocks their rows can be in."""
    from hudi_ds.layout.hfile_lookup import scan_hfile_prefixes

    cols = (b"aa", b"ab", b"b\xff", b"c", b"\xff\xff")
    keys = sorted(c + b"%04d" % n for c in cols for n in range(200))
    values = [k[::-1] for k in keys]
    data = write_hfile(keys, values, block_size=1024)
    _, blocks = scan_hfile_prefixes(data, [b""])
    assert blocks > 15
    for prefixes in ([b"ab"], [b"c", b"aa"], [b"b\xff"], [b"\xff"], [b"a"], [b"zz"], [b""]):
        hf, decoded = scan_hfile_prefixes(data, prefixes)
        want = [k for k in keys if k.startswith(tuple(prefixes))]
        assert hf.keys == want, prefixes
        assert hf.values == [k[::-1] for k in want]
        # a prefix's blocks, and at most one more at each end of its span
        share = len(want) / len(keys)
        assert decoded <= share * blocks + 2 * len(prefixes), (prefixes, decoded)
