"""Hudi log files: every fixture log block, encoder round trips, corruption recovery."""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import datetime as dt
import io
import json
import logging
import re
import struct
from decimal import Decimal
from pathlib import Path
from typing import Any

import fastavro
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hudi_ds.errors import CorruptBlockError, SchemaError, UnsupportedError
from hudi_ds.layout.hfile import write_hfile
from hudi_ds.log import (
    MAGIC,
    BlockType,
    HeaderKey,
    LogBlock,
    decode_data_block,
    decode_delete_block,
    decode_hfile_block,
    encode_avro_data_block,
    encode_block,
    encode_delete_block,
    encode_empty_delete_block,
    encode_hfile_data_block,
    encode_parquet_data_block,
    encode_rollback_command_block,
    parse_block,
    scan_log_bytes,
)
from hudi_ds.log.writer import encode_avro_records
from hudi_ds.schema.avro import (
    arrow_to_avro_schema,
    avro_to_arrow_schema,
    parse_avro_json,
    strip_logical_types,
)
from hudi_ds.schema.meta import META_FIELDS, with_meta_fields
from hudi_ds.schema.records import arrow_to_avro_records, avro_records_to_arrow
from tests.fixtures import (
    FIXTURES_DIR,
    GOLDEN_DIR,
    fixture_table,
    fixtures_present,
    require_fixtures,
    tables_with_logs,
)
from tests.golden import golden_rows, norm, norm_golden

INSTANT = "20250101010101010"


# --------------------------------------------------------------------------------------------
# Fixture helpers
# --------------------------------------------------------------------------------------------


def _log_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file() and ".log." in p.name)


def _is_mdt(root: Path, path: Path) -> bool:
    return "metadata" in path.relative_to(root).parts


def _readme_block_counts() -> dict[str, collections.Counter[str]]:
    """The fixture README's "log blocks" column, e.g. ``AVRO×3, DELETE×2``."""
    lines = (FIXTURES_DIR / "README.md").read_text().splitlines()
    header = next(line for line in lines if line.startswith("| name |"))
    col = [c.strip() for c in header.split("|")].index("log blocks")
    out: dict[str, collections.Counter[str]] = {}
    for line in lines:
        m = re.match(r"\| `([^`]+)` \|", line)
        if not m:
            continue
        cell = [c.strip() for c in line.split("|")][col]
        counts: collections.Counter[str] = collections.Counter()
        for kind, n in re.findall(r"([A-Z]+)×(\d+)", cell):
            counts[kind] += int(n)
        out[m.group(1)] = counts
    return out


_README_KIND = {
    BlockType.AVRO_DATA: "AVRO",
    BlockType.PARQUET_DATA: "PARQUET",
    BlockType.DELETE: "DELETE",
    BlockType.COMMAND: "COMMAND",
}

LOG_TABLES = tables_with_logs()


def test_fixture_set_has_logs() -> None:
    require_fixtures()
    assert len(LOG_TABLES) >= 20
    assert "mor_parquet_v6_nonpartitioned_rollback" in LOG_TABLES


def _check_block_decodes(block: LogBlock) -> int:
    """Decode ``block``; returns its row count, checked against an independent count."""
    if block.block_type == BlockType.AVRO_DATA:
        table = decode_data_block(block)
        version, count = struct.unpack_from(">ii", block.content, 0)
        assert version == 3
        assert table.num_rows == count
        assert table.schema == avro_to_arrow_schema(block.schema or "")
        assert table.column_names[:5] == META_FIELDS
        return int(table.num_rows)
    if block.block_type == BlockType.PARQUET_DATA:
        table = decode_data_block(block)
        assert block.content[:4] == b"PAR1"
        assert table.num_rows == pq.ParquetFile(pa.BufferReader(block.content)).metadata.num_rows
        # the parquet file's schema is exactly the Arrow form of the block's SCHEMA header
        assert table.schema.remove_metadata() == avro_to_arrow_schema(block.schema or "")
        return int(table.num_rows)
    if block.block_type == BlockType.DELETE:
        table = decode_delete_block(block)
        assert table.column_names == [
            "_hoodie_record_key",
            "_hoodie_partition_path",
            "_ordering_value",
        ]
        assert table.column("_hoodie_record_key").null_count == 0
        return int(table.num_rows)
    if block.block_type == BlockType.COMMAND:
        assert block.content == b""
        assert block.is_rollback_command
        return 0
    assert block.block_type == BlockType.HFILE_DATA  # metadata table only
    assert block.content.startswith(b"DATABLK*")
    with pytest.raises(UnsupportedError):
        decode_data_block(block)  # not a data table's block
    hfile = decode_hfile_block(block)
    assert hfile.keys and len(hfile.values) == len(hfile.keys)
    assert json.loads(hfile.file_info["schema"]) == json.loads(block.schema or "")
    assert set(block.header) == {HeaderKey.INSTANT_TIME, HeaderKey.SCHEMA} and not block.footer
    again = encode_hfile_data_block(block.instant_time or "", block.schema or "", block.content)
    assert parse_block(again) == dataclasses.replace(block, offset=0, path="")
    return len(hfile.keys)


@pytest.mark.parametrize("name", LOG_TABLES)
def test_fixture_log_files(name: str, tmp_path_factory: pytest.TempPathFactory) -> None:
    root = fixture_table(name, tmp_path_factory)
    data_kinds: collections.Counter[str] = collections.Counter()
    for path in _log_files(root):
        data = path.read_bytes()
        scan = scan_log_bytes(data, str(path))
        assert scan.corrupt_blocks == 0 and scan.skipped_bytes == 0, path
        assert sum(b.size for b in scan.blocks) == len(data)
        for block in scan.blocks:
            raw = data[block.offset : block.offset + block.size]
            # byte-exact framing: re-encoding the parsed block gives the file's bytes
            assert encode_block(block.block_type, block.header, block.content, block.footer) == raw
            assert block.instant_time is not None and len(block.instant_time) == 17
            _check_block_decodes(block)
            if not _is_mdt(root, path):
                data_kinds[_README_KIND[block.block_type]] += 1
    assert data_kinds == _readme_block_counts()[name]


def test_readme_counts_cover_every_log_table() -> None:
    require_fixtures()
    counts = _readme_block_counts()
    assert {n for n, c in counts.items() if c} <= set(LOG_TABLES)
    assert sum(sum(c.values()) for c in counts.values()) == 50


def test_fixture_rollback_command_block(tmp_path_factory: pytest.TempPathFactory) -> None:
    root = fixture_table("mor_parquet_v6_nonpartitioned_rollback", tmp_path_factory)
    logs = _log_files(root)
    by_version = {int(p.name.split(".log.")[1].split("_")[0]): p for p in logs}
    (rollback_file,) = (root / ".hoodie").glob("*.rollback")
    meta = next(iter(fastavro.reader(rollback_file.open("rb"))))
    assert isinstance(meta, dict)
    failed = meta["commitsRollback"][0]

    failed_block = scan_log_bytes(by_version[1].read_bytes()).blocks[0]
    assert failed_block.instant_time == failed  # log.1 holds the failed deltacommit's block

    data = by_version[2].read_bytes()
    (cmd,) = scan_log_bytes(data).blocks
    assert cmd.block_type == BlockType.COMMAND and cmd.is_rollback_command
    assert cmd.target_instant_time == failed
    assert cmd.instant_time == rollback_file.name.split(".")[0]
    assert cmd.header[HeaderKey.COMMAND_BLOCK_TYPE] == "0"
    # what 0.x wrote, byte for byte
    assert encode_rollback_command_block(cmd.instant_time, failed) == data


def test_fixture_delete_blocks(tmp_path_factory: pytest.TempPathFactory) -> None:
    for name in ("mor_avro_v6_trips_8i3d", "mor_avro_v8_trips_8i3d"):
        root = fixture_table(name, tmp_path_factory)
        (path,) = _log_files(root)
        (block,) = scan_log_bytes(path.read_bytes()).blocks
        table = decode_delete_block(block)
        assert table.num_rows == 3
        assert set(table.column("_hoodie_partition_path").to_pylist()) == {"city=san_francisco"}
        # Spark SQL deletes carry IntWrapper(0): no ordering value
        assert table.column("_ordering_value").null_count == 3
        assert block.content.count(b"\x04\x00") >= 3


def test_fixture_empty_delete_blocks(tmp_path_factory: pytest.TempPathFactory) -> None:
    """The empty DELETE block Java writes when it initialises a metadata table file group."""
    cases = [
        ("cow_v9_txns_simple_meta", "00000000000000000"),
        ("mor_avro_v8_trips_8i3u1d", "00000000000000000"),
        ("cow_0x_partitioned", "00000000000000010"),
    ]
    for name, instant in cases:
        root = fixture_table(name, tmp_path_factory)
        path = root / f".hoodie/metadata/files/.files-0000-0_{instant}.log.1_0-0-0"
        data = path.read_bytes()
        assert len(data) == 80
        assert encode_empty_delete_block(instant) == data
        (block,) = scan_log_bytes(data).blocks
        assert block.header == {HeaderKey.INSTANT_TIME: instant}
        assert decode_delete_block(block).num_rows == 0


def test_hfile_data_block_round_trip() -> None:
    schema = '{"type":"record","name":"R","fields":[{"name":"key","type":"string"}]}'
    keys = [b".", b"__all_partitions__"]
    values = [b"\x00", b"\x00"]
    hfile = write_hfile(keys, values, file_info={"schema": schema.encode()}, create_time_ms=5)
    block_bytes = encode_hfile_data_block("20260101000000000", schema, hfile)
    log = encode_empty_delete_block("20260101000000000") + block_bytes
    scan = scan_log_bytes(log, "x.log")
    assert scan.corrupt_blocks == 0
    block = scan.blocks[1]
    assert block.block_type == BlockType.HFILE_DATA and block.content == hfile
    assert block.instant_time == "20260101000000000" and block.schema == schema
    got = decode_hfile_block(block)
    assert got.keys == keys and got.values == values
    # a damaged HFile names the log file and the block
    damaged = bytearray(log)
    damaged[80 + len(block_bytes) - 4200] ^= 0xFF  # inside the HFile's file info block
    bad = scan_log_bytes(bytes(damaged), "x.log").blocks[1]
    with pytest.raises(CorruptBlockError, match=r"x\.log block at offset 80"):
        decode_hfile_block(bad)
    with pytest.raises(UnsupportedError):
        decode_hfile_block(scan.blocks[0])
    with pytest.raises(ValueError, match="complete HFile"):
        encode_hfile_data_block("20260101000000000", schema, b"DATABLK*")


def _golden_by_key(name: str) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for row in golden_rows(GOLDEN_DIR / f"{name}.snapshot.jsonl"):
        out.setdefault(row["_hoodie_record_key"], []).append(norm_golden(row))
    return out


_README = _readme_block_counts() if fixtures_present() else {}
GOLDEN_LOG_TABLES = [
    n
    for n in LOG_TABLES
    if _README[n]["AVRO"] + _README[n]["PARQUET"] > 0
    and "timebasedkeygen" not in n  # golden normalises ISO-like strings (ts_str) to timestamps
    and "overwritetable" not in n  # its log rows were replaced
]


@pytest.mark.parametrize("name", GOLDEN_LOG_TABLES)
def test_fixture_log_rows_match_golden(name: str, tmp_path_factory: pytest.TempPathFactory) -> None:
    """Log records that survive into the snapshot carry the values hudi-rs returned."""
    root = fixture_table(name, tmp_path_factory)
    golden = _golden_by_key(name)
    checked = 0
    for path in _log_files(root):
        for block in scan_log_bytes(path.read_bytes()).blocks:
            if block.block_type not in (BlockType.AVRO_DATA, BlockType.PARQUET_DATA):
                continue
            for row in decode_data_block(block).to_pylist():
                got = norm_golden(norm(row))
                for cand in golden.get(row["_hoodie_record_key"], []):
                    if cand["_hoodie_commit_time"] == row["_hoodie_commit_time"]:
                        data_cols = [c for c in got if c not in META_FIELDS]
                        assert {c: got[c] for c in data_cols} == {c: cand[c] for c in data_cols}
                        checked += 1
    assert checked >= 1


@pytest.mark.parametrize("name", [n for n in LOG_TABLES if "mor_avro" in n])
def test_fixture_blocks_reencode_identically(
    name: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Our encoders give Spark's exact content bytes for the fixture's rows and keys."""
    root = fixture_table(name, tmp_path_factory)
    for path in _log_files(root):
        if _is_mdt(root, path):
            continue
        for block in scan_log_bytes(path.read_bytes()).blocks:
            assert block.schema is not None and block.instant_time is not None
            if block.block_type == BlockType.AVRO_DATA:
                table = decode_data_block(block)
                raw = encode_avro_data_block(table, block.instant_time, block.schema)
            else:
                deletes = decode_delete_block(block)
                raw = encode_delete_block(
                    deletes.column(0).combine_chunks(),
                    deletes.column(1).combine_chunks(),
                    None,
                    block.instant_time,
                    block.schema,
                )
            (ours,) = scan_log_bytes(raw).blocks
            assert ours.content == block.content
            assert ours.header == block.header  # same entries; Java's HashMap order varies
            if list(block.header) == [HeaderKey.INSTANT_TIME, HeaderKey.SCHEMA]:
                assert raw == path.read_bytes()[block.offset : block.offset + block.size]


# --------------------------------------------------------------------------------------------
# Round trips
# --------------------------------------------------------------------------------------------

RICH_SCHEMA = with_meta_fields(
    pa.schema(
        [
            ("id", pa.int32()),
            ("ts", pa.int64()),
            ("fare", pa.float64()),
            ("ratio", pa.float32()),
            ("flag", pa.bool_()),
            ("name", pa.string()),
            ("amount", pa.decimal128(15, 2)),
            ("big", pa.decimal128(38, 10)),
            ("day", pa.date32()),
            ("at", pa.timestamp("us", tz="UTC")),
            ("at_ms", pa.timestamp("ms", tz="UTC")),
            ("local", pa.timestamp("us")),
            ("blob", pa.binary()),
            ("tags", pa.list_(pa.field("element", pa.string()))),
            ("prices", pa.list_(pa.field("element", pa.decimal128(10, 3)))),
            ("attrs", pa.map_(pa.string(), pa.int64())),
            (
                "nested",
                pa.struct(
                    [
                        ("a", pa.int32()),
                        ("b", pa.struct([("c", pa.string()), ("d", pa.decimal128(5, 1))])),
                        (
                            "items",
                            pa.list_(
                                pa.field(
                                    "element", pa.struct([("k", pa.string()), ("v", pa.float64())])
                                )
                            ),
                        ),
                    ]
                ),
            ),
        ]
    )
)


def _rich_rows() -> list[dict[str, Any]]:
    utc = dt.timezone.utc
    full = {
        "_hoodie_commit_time": INSTANT,
        "_hoodie_commit_seqno": f"{INSTANT}_0_0",
        "_hoodie_record_key": "k0",
        "_hoodie_partition_path": "city=x",
        "_hoodie_file_name": "00000000-aaaa-bbbb-cccc-dddddddddddd-0",
        "id": -7,
        "ts": 2**40,
        "fare": 12.5,
        "ratio": 0.25,
        "flag": True,
        "name": "Zoë ✓",
        "amount": Decimal("-1234567890123.45"),
        "big": Decimal("-9999999999999999999999999999.9999999999"),
        "day": dt.date(1960, 2, 29),
        "at": dt.datetime(2024, 1, 2, 3, 4, 5, 678901, tzinfo=utc),
        "at_ms": dt.datetime(1969, 12, 31, 23, 59, 59, 999000, tzinfo=utc),
        "local": dt.datetime(2030, 5, 6, 7, 8, 9, 10),
        "blob": b"\x00\xff\x00",
        "tags": ["a", None, ""],
        "prices": [Decimal("0.001"), None, Decimal("-9999999.999")],
        "attrs": [("x", 1), ("y", None)],
        "nested": {
            "a": 1,
            "b": {"c": "deep", "d": Decimal("-0.5")},
            "items": [{"k": "p", "v": 1.5}, None, {"k": None, "v": None}],
        },
    }
    empty: dict[str, Any] = dict.fromkeys(RICH_SCHEMA.names)
    empty["_hoodie_record_key"] = "k1"
    partial = dict(full, _hoodie_record_key="k2", tags=[], attrs=[], prices=None)
    partial["nested"] = {"a": None, "b": None, "items": []}
    return [full, empty, partial]


def _rich_table() -> pa.Table:
    return pa.Table.from_pylist(_rich_rows(), schema=RICH_SCHEMA)


def _rich_avro() -> dict[str, Any]:
    return arrow_to_avro_schema(RICH_SCHEMA, "rich_record", "hoodie.rich")


def test_avro_data_block_round_trip() -> None:
    table = _rich_table()
    raw = encode_avro_data_block(table, INSTANT, _rich_avro())
    scan = scan_log_bytes(raw)
    (block,) = scan.blocks
    assert scan.corrupt_blocks == 0 and block.size == len(raw)
    assert block.block_type == BlockType.AVRO_DATA
    assert list(block.header) == [HeaderKey.INSTANT_TIME, HeaderKey.SCHEMA]
    assert block.instant_time == INSTANT
    assert json.loads(block.schema or "") == _rich_avro()
    assert block.footer == {}
    decoded = decode_data_block(block)
    assert decoded.schema == RICH_SCHEMA
    assert decoded.equals(table)


def _fastavro_records(block: LogBlock) -> list[Any]:
    """Decode an Avro block's records independently: plain fastavro, logical types on."""
    parsed = fastavro.parse_schema(json.loads(block.schema or ""))
    version, count = struct.unpack_from(">ii", block.content, 0)
    assert version == 3
    pos, out = 8, []
    for _ in range(count):
        (length,) = struct.unpack_from(">i", block.content, pos)
        datum = io.BytesIO(block.content[pos + 4 : pos + 4 + length])
        out.append(fastavro.schemaless_reader(datum, parsed, None))
        assert datum.tell() == length
        pos += 4 + length
    assert pos == len(block.content)
    return out


def test_avro_block_decodes_with_plain_fastavro() -> None:
    table = _rich_table()
    (block,) = scan_log_bytes(encode_avro_data_block(table, INSTANT, _rich_avro())).blocks
    records = _fastavro_records(block)
    assert records[0]["amount"] == Decimal("-1234567890123.45")
    assert records[0]["at"] == dt.datetime(2024, 1, 2, 3, 4, 5, 678901, tzinfo=dt.timezone.utc)
    assert avro_records_to_arrow(records, RICH_SCHEMA).equals(table)


def test_avro_block_with_table_schema_promotes() -> None:
    small = pa.schema([("k", pa.string()), ("v", pa.int32())])
    table = pa.table({"k": ["a", "b"], "v": pa.array([1, None], pa.int32())})
    avro = arrow_to_avro_schema(small, "t_record", "hoodie.t")
    (block,) = scan_log_bytes(encode_avro_data_block(table, INSTANT, avro)).blocks
    target = pa.schema([("k", pa.string()), ("v", pa.int64()), ("new", pa.float64())])
    got = decode_data_block(block, target)
    assert got.schema == target
    assert got.to_pylist() == [{"k": "a", "v": 1, "new": None}, {"k": "b", "v": None, "new": None}]


def test_avro_block_of_zero_records() -> None:
    empty = _rich_table().slice(0, 0)
    (block,) = scan_log_bytes(encode_avro_data_block(empty, INSTANT, _rich_avro())).blocks
    assert block.content == struct.pack(">ii", 3, 0)
    assert decode_data_block(block).equals(empty)


def test_avro_block_version_1_and_slow_path() -> None:
    """Version-1 content (Hudi 0.9/0.10: a record count too, as Java's
    ``HoodieAvroDataBlockVersion.hasRecordCount`` has it for every version) and records with
    trailing bytes decode exactly."""
    table = _rich_table()
    (block,) = scan_log_bytes(encode_avro_data_block(table, INSTANT, _rich_avro())).blocks
    v1 = LogBlock(BlockType.AVRO_DATA, block.header, {}, struct.pack(">i", 1) + block.content[4:])
    assert decode_data_block(v1).equals(table)
    # pad every datum with one extra byte: the one-call decode cannot line up, the exact one can
    pos, padded = 8, [block.content[:8]]
    while pos < len(block.content):
        (n,) = struct.unpack_from(">i", block.content, pos)
        padded += [struct.pack(">i", n + 1), block.content[pos + 4 : pos + 4 + n], b"\x00"]
        pos += 4 + n
    padded_block = LogBlock(BlockType.AVRO_DATA, block.header, {}, b"".join(padded))
    assert decode_data_block(padded_block).equals(table)


@pytest.mark.parametrize(
    "content",
    [
        b"",
        struct.pack(">i", 9),
        struct.pack(">ii", 3, 5),
        struct.pack(">iii", 3, 1, 100) + b"\x02",
        struct.pack(">iii", 3, 1, 1) + b"\x07",
    ],
)
def test_bad_avro_content_is_corrupt(content: bytes) -> None:
    header = {HeaderKey.INSTANT_TIME: INSTANT, HeaderKey.SCHEMA: json.dumps(_rich_avro())}
    with pytest.raises(CorruptBlockError):
        decode_data_block(LogBlock(BlockType.AVRO_DATA, header, {}, content))


def test_avro_block_without_schema_is_corrupt() -> None:
    block = LogBlock(BlockType.AVRO_DATA, {HeaderKey.INSTANT_TIME: INSTANT}, {}, b"\0" * 8)
    with pytest.raises(CorruptBlockError):
        decode_data_block(block)


def test_non_data_blocks_are_rejected() -> None:
    cmd = LogBlock(BlockType.COMMAND, {HeaderKey.INSTANT_TIME: INSTANT})
    with pytest.raises(UnsupportedError):
        decode_data_block(cmd)
    with pytest.raises(UnsupportedError):
        decode_delete_block(cmd)


def test_avro_block_rejects_table_not_fitting_schema() -> None:
    avro = arrow_to_avro_schema(pa.schema([("v", pa.int32())]), "t_record", "hoodie.t")
    with pytest.raises(SchemaError, match="'v'"):
        encode_avro_data_block(pa.table({"v": pa.array([2**40])}), INSTANT, avro)
    with pytest.raises(SchemaError, match="extra"):
        encode_avro_data_block(pa.table({"v": [1], "extra": [1]}), INSTANT, avro)


@pytest.mark.parametrize("compression", ["snappy", "gzip", "none"])
def test_parquet_data_block_round_trip(compression: str) -> None:
    table = _rich_table()
    raw = encode_parquet_data_block(table, INSTANT, _rich_avro(), compression=compression)
    (block,) = scan_log_bytes(raw).blocks
    assert block.block_type == BlockType.PARQUET_DATA
    assert list(block.header) == [HeaderKey.INSTANT_TIME, HeaderKey.SCHEMA]
    assert block.content[:4] == b"PAR1" and block.content[-4:] == b"PAR1"
    meta = pq.ParquetFile(pa.BufferReader(block.content)).schema_arrow.metadata
    assert json.loads(meta[b"parquet.avro.schema"]) == _rich_avro()
    decoded = decode_data_block(block)
    assert decoded.schema.remove_metadata() == RICH_SCHEMA
    assert decoded.replace_schema_metadata(None).equals(table)


def test_bad_parquet_content_is_corrupt() -> None:
    block = LogBlock(BlockType.PARQUET_DATA, {HeaderKey.INSTANT_TIME: INSTANT}, {}, b"PAR1xx")
    with pytest.raises(CorruptBlockError):
        decode_data_block(block)


KEYS = pa.array(["k1", "k2", "k3"])
PARTS = pa.array(["p=1", "", "p=2"])
utc = dt.timezone.utc


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        (None, [None, None, None]),
        (pa.array([None, None, None], pa.null()), [None, None, None]),
        (pa.array([5, None, 0], pa.int32()), [5, None, None]),  # IntWrapper(0) == no ordering
        (pa.array([5, None, 0], pa.int8()), [5, None, None]),
        (pa.array([2**40, -1, 0], pa.int64()), [2**40, -1, 0]),
        (pa.array([1.5, None, -2.0], pa.float32()), [1.5, None, -2.0]),
        (pa.array([1.25, 2.5, None], pa.float64()), [1.25, 2.5, None]),
        (pa.array([True, False, None]), [True, False, None]),
        (pa.array(["b", "a", None]), ["b", "a", None]),
        (pa.array([b"\x00", b"", None]), [b"\x00", b"", None]),
        (
            pa.array([dt.date(2024, 2, 29), dt.date(1900, 1, 1), None]),
            [dt.date(2024, 2, 29), dt.date(1900, 1, 1), None],
        ),
        (
            pa.array([Decimal("1.50"), Decimal("-0.001"), None], pa.decimal128(10, 3)),
            [Decimal("1.5"), Decimal("-0.001"), None],
        ),
        (
            pa.array([dt.datetime(2024, 1, 1, 0, 0, 0, 1), None, None], pa.timestamp("us", "UTC")),
            [dt.datetime(2024, 1, 1, 0, 0, 0, 1, tzinfo=utc), None, None],
        ),
        (
            pa.array([1_700_000_000_123, None, 0], pa.timestamp("ms")),
            [
                dt.datetime(2023, 11, 14, 22, 13, 20, 123000, tzinfo=utc),
                None,
                dt.datetime(1970, 1, 1, tzinfo=utc),
            ],
        ),
        (
            pa.array([dt.time(1, 2, 3, 4), None, dt.time(0)], pa.time64("us")),
            [dt.time(1, 2, 3, 4), None, dt.time(0)],
        ),
    ],
)
def test_delete_block_round_trip(values: pa.Array | None, expected: list[Any]) -> None:
    raw = encode_delete_block(KEYS, PARTS, values, INSTANT, _rich_avro())
    (block,) = scan_log_bytes(raw).blocks
    assert block.block_type == BlockType.DELETE
    assert list(block.header) == [HeaderKey.INSTANT_TIME, HeaderKey.SCHEMA]
    table = decode_delete_block(block)
    assert table.column("_hoodie_record_key").to_pylist() == KEYS.to_pylist()
    assert table.column("_hoodie_partition_path").to_pylist() == PARTS.to_pylist()
    got = table.column("_ordering_value").to_pylist()
    assert got == expected
    if all(v is None for v in expected):
        assert table.column("_ordering_value").type == pa.null()


def test_delete_block_spark_bytes() -> None:
    """A natural-order delete is ``IntWrapper(0)``: union branch 2 then int 0 (``04 00``)."""
    raw = encode_delete_block(pa.array(["TXN-002"]), pa.array([""]), None, INSTANT, "{}")
    (block,) = scan_log_bytes(raw).blocks
    payload = bytes.fromhex("02020e54584e2d3030320200040000")
    assert block.content == struct.pack(">ii", 3, len(payload)) + payload
    assert block.schema == "{}"


def test_delete_block_long_wrapper_bytes() -> None:
    """Event-time deletes wrap a long ordering value: ``LongWrapper(101)`` = ``06 ca 01``."""
    raw = encode_delete_block(pa.array(["k"]), pa.array([""]), pa.array([101]), INSTANT, "{}")
    (block,) = scan_log_bytes(raw).blocks
    assert block.content.endswith(bytes.fromhex("020006ca0100"))


def _delete_block_with(records: list[dict[str, Any]], version: int = 3) -> LogBlock:
    from hudi_ds.log.block import DELETE_RECORD_LIST_SCHEMA

    buf = io.BytesIO()
    fastavro.schemaless_writer(
        buf, fastavro.parse_schema(DELETE_RECORD_LIST_SCHEMA), {"deleteRecordList": records}
    )
    content = struct.pack(">ii", version, len(buf.getvalue())) + buf.getvalue()
    return LogBlock(BlockType.DELETE, {HeaderKey.INSTANT_TIME: INSTANT}, {}, content)


def test_delete_block_array_wrapper_and_null_ordering() -> None:
    ns = "org.apache.hudi.avro.model"
    long_wrapper = (f"{ns}.LongWrapper", {"value": 9})
    records: list[dict[str, Any]] = [
        {"recordKey": "a", "partitionPath": "", "orderingVal": None},
        {
            "recordKey": "b",
            "partitionPath": None,
            "orderingVal": (f"{ns}.ArrayWrapper", {"wrappedValues": [long_wrapper, None]}),
        },
    ]
    table = decode_delete_block(_delete_block_with(records))
    assert table.column("_ordering_value").to_pylist() == [None, [9, None]]
    assert table.column("_hoodie_partition_path").to_pylist() == ["", None]


def test_delete_block_mixed_types_and_legacy_versions() -> None:
    ns = "org.apache.hudi.avro.model"
    mixed: list[dict[str, Any]] = [
        {"recordKey": "a", "partitionPath": "", "orderingVal": (f"{ns}.LongWrapper", {"value": 1})},
        {
            "recordKey": "b",
            "partitionPath": "",
            "orderingVal": (f"{ns}.StringWrapper", {"value": "x"}),
        },
    ]
    with pytest.raises(UnsupportedError, match="mixes"):
        decode_delete_block(_delete_block_with(mixed))
    for version in (1, 2):
        with pytest.raises(UnsupportedError, match="version"):
            decode_delete_block(_delete_block_with([], version))
    torn = _delete_block_with(mixed)
    torn = LogBlock(BlockType.DELETE, torn.header, {}, torn.content[:-3])
    with pytest.raises(CorruptBlockError):
        decode_delete_block(torn)


def test_delete_block_rejects_bad_input() -> None:
    with pytest.raises(SchemaError):
        encode_delete_block(pa.array(["a", None]), pa.array(["", ""]), None, INSTANT, "{}")
    with pytest.raises(SchemaError):
        encode_delete_block(pa.array(["a"]), pa.array(["", ""]), None, INSTANT, "{}")
    with pytest.raises(SchemaError):
        encode_delete_block(pa.array(["a"]), pa.array([""]), pa.array([[1]]), INSTANT, "{}")
    with pytest.raises(SchemaError):
        decimals = pa.array([Decimal("1.1234567890123456")], pa.decimal128(20, 16))
        encode_delete_block(pa.array(["a"]), pa.array([""]), decimals, INSTANT, "{}")


def test_rollback_command_block_round_trip() -> None:
    raw = encode_rollback_command_block("20250102000000000", INSTANT)
    (block,) = scan_log_bytes(raw).blocks
    assert block.block_type == BlockType.COMMAND and block.is_rollback_command
    assert block.instant_time == "20250102000000000"
    assert block.target_instant_time == INSTANT
    assert block.schema is None
    assert block.content == b"" and block.size == len(raw) == 105


def test_block_framing_grammar() -> None:
    header = {HeaderKey.INSTANT_TIME: "1", HeaderKey.SCHEMA: "é"}
    raw = encode_block(BlockType.DELETE, header, b"xyz", {HeaderKey.BLOCK_IDENTIFIER: "7"})
    (block_length,) = struct.unpack_from(">q", raw, 6)
    assert raw[:6] == MAGIC and len(raw) == block_length + 14
    assert struct.unpack_from(">ii", raw, 14) == (1, BlockType.DELETE)
    assert struct.unpack_from(">q", raw, len(raw) - 8) == (block_length + 6,)
    expected_header = struct.pack(">iii", 2, 0, 1) + b"1" + struct.pack(">ii", 2, 2) + "é".encode()
    assert raw[22 : 22 + len(expected_header)] == expected_header
    block = parse_block(raw)
    assert block.header == header and block.footer == {HeaderKey.BLOCK_IDENTIFIER: "7"}
    assert block.content == b"xyz" and block.offset == 0 and block.size == len(raw)


# --------------------------------------------------------------------------------------------
# Corruption
# --------------------------------------------------------------------------------------------


def _three_blocks() -> tuple[bytes, list[bytes]]:
    table = _rich_table()
    blocks = [
        encode_avro_data_block(table, "20250101000000001", _rich_avro()),
        encode_delete_block(KEYS, PARTS, pa.array([1, 2, 3]), "20250101000000002", "{}"),
        encode_rollback_command_block("20250101000000003", "20250101000000001"),
    ]
    return b"".join(blocks), blocks


def _same_blocks(got: list[LogBlock], expected: list[bytes]) -> bool:
    parsed = [parse_block(b) for b in expected]
    key = [(b.block_type, b.header, b.content) for b in got]
    return key == [(b.block_type, b.header, b.content) for b in parsed]


def test_truncated_in_second_block(caplog: pytest.LogCaptureFixture) -> None:
    data, blocks = _three_blocks()
    cut = len(blocks[0]) + len(blocks[1]) // 2
    with caplog.at_level(logging.WARNING, logger="hudi_ds.log"):
        scan = scan_log_bytes(data[:cut], "f.log.1")
    assert _same_blocks(scan.blocks, blocks[:1])
    assert scan.corrupt_blocks == 1
    assert scan.skipped_bytes == cut - len(blocks[0])
    assert scan.path == "f.log.1"
    assert any("f.log.1" in r.getMessage() for r in caplog.records)


def test_garbage_appended() -> None:
    data, blocks = _three_blocks()
    garbage = b"\x00garbage\xff" * 3
    scan = scan_log_bytes(data + garbage)
    assert _same_blocks(scan.blocks, blocks)
    assert scan.corrupt_blocks == 1 and scan.skipped_bytes == len(garbage)


def test_garbage_between_blocks_resyncs() -> None:
    data, blocks = _three_blocks()
    garbage = b"junk#HUDI#\x00\x00\x00\x00\x00\x00\x00\x05more#HUD"
    at = len(blocks[0])
    scan = scan_log_bytes(data[:at] + garbage + data[at:])
    assert _same_blocks(scan.blocks, blocks)
    assert scan.corrupt_blocks == 1  # one region, even though it holds a false magic
    assert scan.skipped_bytes == len(garbage)
    assert [b.offset for b in scan.blocks] == [
        0,
        at + len(garbage),
        at + len(garbage) + len(blocks[1]),
    ]


def test_bad_reverse_pointer_and_bad_length() -> None:
    data, blocks = _three_blocks()
    end2 = len(blocks[0]) + len(blocks[1])
    broken = bytearray(data)
    broken[end2 - 1] ^= 0xFF  # reverse pointer of block 2
    scan = scan_log_bytes(bytes(broken))
    assert _same_blocks(scan.blocks, [blocks[0], blocks[2]])
    assert scan.corrupt_blocks == 1 and scan.skipped_bytes == len(blocks[1])
    broken = bytearray(data)
    broken[6:14] = struct.pack(">q", 2**62)  # block 1 length far past EOF
    scan = scan_log_bytes(bytes(broken))
    assert _same_blocks(scan.blocks, blocks[1:])
    assert scan.corrupt_blocks == 1


@pytest.mark.parametrize(
    "mutate",
    [
        lambda raw: raw[:14] + struct.pack(">i", 0) + raw[18:],  # log format version 0
        lambda raw: raw[:18] + struct.pack(">i", 9) + raw[22:],  # unknown block type
        lambda raw: raw[:26] + struct.pack(">i", 42) + raw[30:],  # unknown header key
        lambda raw: raw[:22] + struct.pack(">i", -1) + raw[26:],  # negative header count
    ],
)
def test_malformed_fields_are_corrupt(mutate: Any) -> None:
    raw = encode_rollback_command_block("20250101000000003", "20250101000000001")
    with pytest.raises(CorruptBlockError):
        parse_block(mutate(raw))
    scan = scan_log_bytes(mutate(raw) + raw)
    assert scan.corrupt_blocks == 1 and len(scan.blocks) == 1


def test_empty_and_tiny_files() -> None:
    assert scan_log_bytes(b"").blocks == []
    assert scan_log_bytes(b"").corrupt_blocks == 0
    for junk in (b"#", MAGIC, MAGIC + b"\x00" * 7, b"\x00" * 100):
        scan = scan_log_bytes(junk)
        assert scan.blocks == [] and scan.corrupt_blocks == 1 and scan.skipped_bytes == len(junk)


_DATA, _BLOCKS = _three_blocks()
_ENDS = [sum(len(b) for b in _BLOCKS[: i + 1]) for i in range(len(_BLOCKS))]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cut=st.integers(min_value=0, max_value=len(_DATA)))
def test_truncation_property(cut: int) -> None:
    scan = scan_log_bytes(_DATA[:cut])
    whole = [b for b, end in zip(_BLOCKS, _ENDS, strict=True) if end <= cut]
    assert _same_blocks(scan.blocks, whole)
    last_end = _ENDS[len(whole) - 1] if whole else 0
    assert scan.corrupt_blocks == (0 if cut == last_end else 1)
    assert scan.skipped_bytes == cut - last_end


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    at=st.integers(min_value=0, max_value=len(_DATA)),
    garbage=st.binary(min_size=1, max_size=64),
)
def test_garbage_insertion_property(at: int, garbage: bytes) -> None:
    data = _DATA[:at] + garbage + _DATA[at:]
    scan = scan_log_bytes(data)
    before = [b for b, end in zip(_BLOCKS, _ENDS, strict=True) if end <= at]
    after = [b for b, end in zip(_BLOCKS, _ENDS, strict=True) if end - len(b) >= at]
    # blocks untouched by the insertion survive, in order; nothing else appears
    assert _same_blocks(scan.blocks[: len(before)], before)
    assert _same_blocks(scan.blocks[len(scan.blocks) - len(after) :], after)
    originals = [(b.block_type, b.header, b.content) for b in map(parse_block, _BLOCKS)]
    assert all((b.block_type, b.header, b.content) in originals for b in scan.blocks)
    assert scan.corrupt_blocks == 1
    for block in scan.blocks:
        assert data[block.offset : block.offset + block.size] == encode_block(
            block.block_type, block.header, block.content, block.footer
        )


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    at=st.integers(min_value=0, max_value=len(_DATA) - 1),
    junk=st.binary(min_size=1, max_size=40),
)
def test_overwrite_never_raises(at: int, junk: bytes) -> None:
    data = _DATA[:at] + junk + _DATA[at + len(junk) :]
    scan = scan_log_bytes(data)
    assert scan.skipped_bytes + sum(b.size for b in scan.blocks) == len(data)
    offsets = [b.offset for b in scan.blocks]
    assert offsets == sorted(offsets)
    for block in scan.blocks:
        assert data[block.offset : block.offset + block.size] == encode_block(
            block.block_type, block.header, block.content, block.footer
        )
        if block.block_type == BlockType.DELETE:
            with contextlib.suppress(CorruptBlockError, UnsupportedError):
                decode_delete_block(block)


# --------------------------------------------------------------------------------------------
# The vectorised Avro encoder against fastavro
# --------------------------------------------------------------------------------------------


def _fastavro_datums(table: pa.Table, avro: Any) -> tuple[bytes, list[int]]:
    """Reference encoding: fastavro, one record at a time."""
    parsed = fastavro.parse_schema(strip_logical_types(parse_avro_json(avro)))
    out, offsets = io.BytesIO(), [0]
    for record in arrow_to_avro_records(table, avro):
        fastavro.schemaless_writer(out, parsed, record)
        offsets.append(out.tell())
    return out.getvalue(), offsets


def _assert_same_as_fastavro(table: pa.Table, avro: Any) -> None:
    data, offsets = encode_avro_records(table, avro)
    expected, expected_offsets = _fastavro_datums(table, avro)
    assert offsets.tolist() == expected_offsets
    assert data == expected


_UTC = dt.timezone.utc
_MIN_TS = dt.datetime(1, 1, 1)
_MAX_TS = dt.datetime(9999, 12, 31, 23, 59, 59)


def _values(t: pa.DataType) -> st.SearchStrategy[Any]:
    """Python values of Arrow type ``t`` (nullable where Arrow allows nulls)."""
    if pa.types.is_struct(t):
        return st.fixed_dictionaries({f.name: _nullable(f) for f in t})
    if pa.types.is_list(t):
        return st.lists(_nullable(t.value_field), max_size=3)
    if pa.types.is_map(t):
        return st.lists(
            st.tuples(st.text(max_size=4), _nullable(t.item_field)),
            max_size=3,
            unique_by=lambda kv: kv[0],
        )
    if pa.types.is_decimal(t):
        bound = Decimal(10) ** (t.precision - t.scale) - 1
        return st.decimals(-bound, bound, places=t.scale, allow_nan=False, allow_infinity=False)
    if pa.types.is_timestamp(t):
        stamps = st.datetimes(_MIN_TS, _MAX_TS)
        if t.unit == "ms":
            stamps = stamps.map(lambda d: d.replace(microsecond=d.microsecond // 1000 * 1000))
        return stamps.map(lambda d: d.replace(tzinfo=_UTC)) if t.tz else stamps
    simple: dict[pa.DataType, st.SearchStrategy[Any]] = {
        pa.int32(): st.integers(-(2**31), 2**31 - 1),
        pa.int64(): st.integers(-(2**63), 2**63 - 1),
        pa.float32(): st.floats(width=32, allow_nan=False),
        pa.float64(): st.floats(allow_nan=False),
        pa.bool_(): st.booleans(),
        pa.string(): st.text(max_size=8),
        pa.binary(): st.binary(max_size=8),
        pa.date32(): st.dates(),
    }
    return simple[t]


def _nullable(f: pa.Field) -> st.SearchStrategy[Any]:
    return st.one_of(st.none(), _values(f.type)) if f.nullable else _values(f.type)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    rows=st.lists(st.fixed_dictionaries({f.name: _nullable(f) for f in RICH_SCHEMA}), max_size=6),
    cut=st.integers(min_value=0, max_value=3),
)
def test_vectorised_encoder_matches_fastavro(rows: list[dict[str, Any]], cut: int) -> None:
    table = pa.Table.from_pylist(rows, schema=RICH_SCHEMA)
    avro = _rich_avro()
    _assert_same_as_fastavro(table, avro)
    # sliced and chunked input (offsets inside every buffer)
    sliced = table.slice(min(cut, table.num_rows))
    chunked = pa.concat_tables([sliced.slice(0, 1), sliced.slice(1)])
    _assert_same_as_fastavro(chunked, avro)
    (block,) = scan_log_bytes(encode_avro_data_block(chunked, INSTANT, avro)).blocks
    assert decode_data_block(block).equals(sliced.combine_chunks())


UNION_SHAPES = {
    "type": "record",
    "name": "shapes",
    "namespace": "x",
    "fields": [
        {"name": "plain", "type": "long"},
        {"name": "null_last", "type": ["string", "null"]},
        {"name": "single", "type": ["int"]},
        {"name": "only_null", "type": ["null"]},
        {"name": "bare_null", "type": "null"},
        {"name": "e", "type": ["null", {"type": "enum", "name": "E", "symbols": ["A", "B", "C"]}]},
        {"name": "f", "type": {"type": "fixed", "name": "F", "size": 3}},
        {
            "name": "dec",
            "type": [
                "null",
                {"type": "bytes", "logicalType": "decimal", "precision": 9, "scale": 2},
            ],
        },
        {"name": "tm", "type": {"type": "int", "logicalType": "time-millis"}},
        {"name": "tu", "type": ["null", {"type": "long", "logicalType": "time-micros"}]},
        {"name": "ns", "type": ["null", {"type": "long", "logicalType": "timestamp-nanos"}]},
        {
            "name": "arr",
            "type": {"type": "array", "items": {"type": "array", "items": ["null", "double"]}},
        },
        {
            "name": "m",
            "type": ["null", {"type": "map", "values": {"type": "map", "values": "boolean"}}],
        },
    ],
}


def test_vectorised_encoder_union_shapes() -> None:
    table = pa.Table.from_pylist(
        [
            {
                "plain": -1,
                "null_last": "s",
                "single": 7,
                "e": "C",
                "f": b"abc",
                "dec": Decimal("-1.25"),
                "tm": dt.time(1, 2, 3, 4000),
                "tu": dt.time(23, 59, 59, 999999),
                "ns": 1,
                "arr": [[1.5, None], [], [-0.0]],
                "m": [("a", [("x", True)]), ("b", [])],
            },
            {"plain": 2**62, "single": 0, "f": b"\x00" * 3, "tm": dt.time(0), "arr": [], "m": None},
        ],
        schema=avro_to_arrow_schema(UNION_SHAPES),
    )
    _assert_same_as_fastavro(table, UNION_SHAPES)
    (block,) = scan_log_bytes(encode_avro_data_block(table, INSTANT, UNION_SHAPES)).blocks
    assert decode_data_block(block).equals(table)


def test_vectorised_encoder_errors() -> None:
    base = {
        "plain": [1],
        "single": [1],
        "f": [b"abc"],
        "tm": pa.array([0], pa.time32("ms")),
        "arr": pa.array([[]], pa.list_(pa.list_(pa.float64()))),
    }
    with pytest.raises(SchemaError, match="'e'"):
        encode_avro_records(pa.table({**base, "e": ["Z"]}), UNION_SHAPES)
    with pytest.raises(SchemaError, match="'f'"):
        encode_avro_records(pa.table({**base, "f": [b"ab"]}), UNION_SHAPES)
    with pytest.raises(SchemaError, match="plain"):
        encode_avro_records(pa.table({**base, "plain": pa.array([None], pa.int64())}), UNION_SHAPES)
