"""The cheap paths of keeping column stats give what the plain ones give.

* the stats records written directly (:mod:`hudi_ds.metadata.stats_avro`) are the bytes a
  generic Avro writer (fastavro) gives the same ``HoodieMetadataRecord``, on every table
  version's schema and for every value type, tombstones and tight bounds included;
* a Parquet log block's ranges taken from the footer its writer produced equal the ranges
  computed from its rows;
* a commit into a MOR table takes the ranges of the files earlier commits of the process
  wrote from memory, not from the metadata table, and its records still equal the ones
  recomputed from the files;
* a commit takes the slices of the partitions it writes from its task's listing -- the
  data partitions are not listed again --, and only while nothing completed since that
  listing;
* a new table of version 8 or 9 with a metadata table gets column stats (and partition stats
  when partitioned) unless turned off, as Hudi 1.x's Spark writer; version 6 does not.
"""

from __future__ import annotations

import decimal
import io
import json
from pathlib import Path
from typing import Any

import fastavro
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import hudi_ds
from hudi_ds.config import validated
from hudi_ds.errors import CorruptFileError
from hudi_ds.metadata import stats_writer
from hudi_ds.metadata.column_stats import (
    COLUMN_STATS,
    PARTITION_STATS,
    ColumnRange,
    ValueType,
    decode_stats_value,
    encode_stats_value,
    ranges_of_table,
    ranges_of_written_rows,
)
from hudi_ds.metadata.records import declared_partitions, record_schema
from hudi_ds.metadata.stats_avro import StatsRecordWriter
from hudi_ds.storage import Storage
from hudi_ds.table_config import TableConfig
from hudi_ds.timeline.metadata import CommitMetadata
from hudi_ds.timeline.view import TableState
from hudi_ds.write import metadata_sync
from hudi_ds.write.write_status import WriteStatus
from tests.builders import apply
from tests.metadata.test_column_stats import assert_stats_in_step
from tests.metadata.test_writer import COLS, assert_in_step, batch, check_rows
from tests.metadata.test_writer import options as writer_options

_NS = "org.apache.hudi.avro.model."
_V9 = {
    ValueType.BOOLEAN: "BooleanWrapper",
    ValueType.INT: "IntWrapper",
    ValueType.LONG: "LongWrapper",
    ValueType.FLOAT: "FloatWrapper",
    ValueType.DOUBLE: "DoubleWrapper",
    ValueType.STRING: "StringWrapper",
    ValueType.DECIMAL: "BytesWrapper",
    ValueType.DATE: "IntWrapper",
    ValueType.TIME_MICROS: "LongWrapper",
    ValueType.TIMESTAMP_MICROS: "LongWrapper",
    ValueType.LOCAL_TIMESTAMP_MILLIS: "LongWrapper",
}
_V1 = {
    **_V9,
    ValueType.DECIMAL: "DecimalWrapper",
    ValueType.DATE: "DateWrapper",
    ValueType.TIME_MICROS: "TimeMicrosWrapper",
    ValueType.TIMESTAMP_MICROS: "TimestampMicrosWrapper",
}


def _reference(
    record_type: int, rng: ColumnRange, schema_json: str, deleted: bool, tight: bool
) -> bytes:
    """The record through fastavro: every field named, the union branches by name."""
    obj = json.loads(schema_json)
    rec = next(
        t
        for f in obj["fields"]
        if f["name"] == "ColumnStatsMetadata"
        for t in f["type"]
        if isinstance(t, dict)
    )
    fields = [g["name"] for g in rec["fields"]]
    typed = "valueType" in fields

    def wrap(v: Any) -> Any:
        if v is None or deleted:
            return None
        vt = rng.value_type
        if typed:
            if vt == ValueType.DECIMAL:
                n = int(v)
                v = n.to_bytes(max(1, (n + (n < 0)).bit_length() // 8 + 1), "big", signed=True)
            return (_NS + _V9[vt], {"value": v})
        if vt == ValueType.DECIMAL:
            q = decimal.Decimal(1).scaleb(-15)
            return (
                _NS + "DecimalWrapper",
                {"value": decimal.Decimal(v).scaleb(-rng.scale).quantize(q)},
            )
        return (_NS + _V1[vt], {"value": v})

    stats: dict[str, Any] = {
        "fileName": rng.name,
        "columnName": rng.column,
        "minValue": wrap(rng.min_value),
        "maxValue": wrap(rng.max_value),
        "valueCount": 0 if deleted else rng.value_count,
        "nullCount": 0 if deleted else rng.null_count,
        "totalSize": 0 if deleted else rng.total_size,
        "totalUncompressedSize": 0 if deleted else rng.total_uncompressed_size,
        "isDeleted": deleted,
    }
    if "isTightBound" in fields:
        stats["isTightBound"] = tight
    if typed:
        vt = ValueType.NULL if deleted else rng.value_type
        info = f"{rng.precision},{rng.scale}" if rng.value_type == ValueType.DECIMAL else None
        stats["valueType"] = (
            _NS + "HoodieValueTypeInfo",
            {"typeOrdinal": int(vt), "additionalInfo": info},
        )
    record: dict[str, Any] = dict.fromkeys(f["name"] for f in obj["fields"])
    record.update(key="", type=record_type, _hoodie_file_name=None)
    record["ColumnStatsMetadata"] = (_NS + "HoodieMetadataColumnStats", stats)
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, fastavro.parse_schema(obj), record)
    return buf.getvalue()


def _r(vt: ValueType, lo: Any, hi: Any, precision: int = 0, scale: int = 0) -> ColumnRange:
    return ColumnRange(
        "f1_0-0-0_20250101000000000.parquet", "c", lo, hi, 3, 1000, 4096, 8192, vt, precision, scale
    )


_RANGES = [
    _r(ValueType.BOOLEAN, False, True),
    _r(ValueType.INT, -(2**31), 2**31 - 1),
    _r(ValueType.LONG, -(2**63), 2**63 - 1),
    _r(ValueType.LONG, 0, 63),
    _r(ValueType.LONG, -64, 64),
    _r(ValueType.FLOAT, -1.5, 3.25),
    _r(ValueType.DOUBLE, float("-inf"), 1e300),
    _r(ValueType.STRING, "", "ünïcødé \U0001f600" * 20),
    _r(ValueType.DECIMAL, -128, 123456789012345, 15, 4),
    _r(ValueType.DECIMAL, -(10**19), 255, 25, 10),
    _r(ValueType.DATE, -719162, 2932896),
    _r(ValueType.TIME_MICROS, 0, 86_399_999_999),
    _r(ValueType.TIMESTAMP_MICROS, -1, 1_700_000_000_000_000),
    _r(ValueType.LOCAL_TIMESTAMP_MILLIS, 5, 6),
    _r(ValueType.STRING, None, None),
    ColumnRange("p=1/x", "c", None, None, 7, 7, 0, 0, ValueType.NULL),
]


@pytest.mark.parametrize("version", [6, 8, 9])
def test_stats_records_are_fastavro_bytes(version: int) -> None:
    schema = record_schema(version)
    checked = 0
    for rng in _RANGES:
        for record_type in (COLUMN_STATS, PARTITION_STATS):
            for deleted, tight in ((False, False), (False, True), (True, False)):
                got = encode_stats_value(
                    record_type, rng, schema, deleted=deleted, tight_bound=tight
                )
                want = _reference(record_type, rng, schema, deleted, tight and version >= 8)
                assert got == want, (version, rng, record_type, deleted, tight)
                t, stats = decode_stats_value(got, schema)
                assert (t, stats["columnName"], stats["isDeleted"]) == (record_type, "c", deleted)
                checked += 1
    assert checked == len(_RANGES) * 6


def test_stats_record_names_its_file() -> None:
    schema = record_schema(9)
    rng = _RANGES[3]
    got = encode_stats_value(COLUMN_STATS, rng, schema, file_name="col-stats-0000-0_0-0-0_1.hfile")
    record = fastavro.schemaless_reader(
        io.BytesIO(got), fastavro.parse_schema(json.loads(schema)), None
    )
    assert record["_hoodie_file_name"] == "col-stats-0000-0_0-0-0_1.hfile"
    assert record["key"] == "" and record["ColumnStatsMetadata"]["maxValue"] == {"value": 63}


def test_stats_record_writer_refuses_other_schemas() -> None:
    with pytest.raises(CorruptFileError, match="ColumnStatsMetadata"):
        StatsRecordWriter(
            json.dumps(
                {
                    "type": "record",
                    "name": "R",
                    "fields": [
                        {"name": "_hoodie_file_name", "type": ["null", "string"]},
                        {"name": "key", "type": "string"},
                        {"name": "type", "type": "int"},
                    ],
                }
            )
        )


def test_block_footer_ranges_equal_the_rows_ranges() -> None:
    n = 300
    rng = np.random.default_rng(7)
    t = pa.table(
        {
            "i": pa.array(rng.integers(-5, 5, n), pa.int32()),
            "l": pa.array([None if k % 7 == 0 else int(k) * 10**12 for k in range(n)], pa.int64()),
            "s": pa.array([f"v{k % 13}\u00e9" if k % 5 else None for k in range(n)]),
            "long": pa.array(["x" * 5000 if k == 3 else "a" for k in range(n)]),  # stats dropped
            "b": pa.array([k % 3 == 0 for k in range(n)]),
            "none": pa.array([None] * n, pa.string()),
            "d": pa.array(rng.integers(0, 20000, n).astype(np.int32)).cast(pa.date32()),
            "ts": pa.array(rng.integers(0, 10**15, n)).cast(pa.timestamp("us", "UTC")),
            "lts": pa.array(rng.integers(0, 10**12, n)).cast(pa.timestamp("ms")),
            "tm": pa.array(rng.integers(0, 86_400_000, n).astype(np.int32)).cast(pa.time32("ms")),
            "f": pa.array([0.0, -1.5, float("nan")] * (n // 3)),  # a zero bound
            "g": pa.array([2.5, -1.5, float("nan")] * (n // 3), pa.float32()),
            "nan": pa.array([float("nan")] * n),  # no statistics
            "dec": pa.array([decimal.Decimal(k) / 100 for k in range(n)], pa.decimal128(10, 2)),
        }
    )
    collected: list[pq.FileMetaData] = []
    pq.write_table(t, pa.BufferOutputStream(), metadata_collector=collected, row_group_size=128)
    columns = [*t.column_names, "absent"]
    got = ranges_of_written_rows(collected[0], "f.log", columns)
    # a zero float bound, decimals, a column whose statistics were dropped or that has
    # none, a column not written: computed from the rows
    assert sorted(got) == ["b", "d", "g", "i", "l", "lts", "none", "s", "tm", "ts"]
    want = {r.column: r for r in ranges_of_table(t, "f.log", columns)}
    for c, r in got.items():
        assert r == want[c], c


def _declared(root: Path) -> list[str]:
    return declared_partitions(TableConfig.load(Storage(str(root))))


@pytest.mark.parametrize(
    ("version", "partitioned", "over", "expected"),
    [
        (9, True, {}, ["column_stats", "files", "partition_stats"]),
        (8, False, {}, ["column_stats", "files"]),
        (
            9,
            True,
            {"hoodie.metadata.index.partition.stats.enable": "false"},
            ["column_stats", "files"],
        ),
        (9, True, {"hoodie.metadata.index.column.stats.enable": "false"}, ["files"]),
        (6, True, {}, ["files"]),
    ],
)
def test_new_tables_get_column_stats_by_default(
    version: int, partitioned: bool, over: dict[str, str], expected: list[str], tmp_path: Path
) -> None:
    root = tmp_path / "t"
    opts = writer_options("MERGE_ON_READ", version, bucket=True, **over)
    if not partitioned:
        opts.pop("hoodie.datasource.write.partitionpath.field")
        opts["hoodie.datasource.write.keygenerator.class"] = (
            "org.apache.hudi.keygen.NonpartitionedKeyGenerator"
        )
    for k in (1, 2):
        hudi_ds.write(str(root), batch(k), opts)
        assert _declared(root) == expected
    assert_in_step(root)
    if "column_stats" in expected:
        assert_stats_in_step(root)


def test_commits_take_earlier_ranges_from_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The partition stats of the commits after the first fold only the new log files: the
    column_stats partition is not read back, and the records equal the recomputed ones."""
    root = tmp_path / "t"
    opts = writer_options(  # updates go to log files
        "MERGE_ON_READ",
        9,
        bucket=True,
        **{
            "hoodie.metadata.index.column.stats.enable": "true",
            "hoodie.metadata.index.partition.stats.enable": "true",
        },
    )
    hudi_ds.write(str(root), batch(1), opts)
    reads: list[str] = []
    plain = stats_writer.read_stats_partition

    def counted(*args: Any, **kwargs: Any) -> Any:
        reads.append(args[4])
        return plain(*args, **kwargs)

    monkeypatch.setattr(stats_writer, "read_stats_partition", counted)
    for k in (2, 3, 4):
        hudi_ds.write(str(root), batch(k), opts)
    assert reads == []
    assert _declared(root) == ["column_stats", "files", "partition_stats"]
    assert_stats_in_step(root)


def _stats_options(bucket: bool) -> dict[str, str]:
    return writer_options(
        "MERGE_ON_READ",
        9,
        bucket=bucket,
        **{
            "hoodie.metadata.index.column.stats.enable": "true",
            "hoodie.metadata.index.partition.stats.enable": "true",
        },
    )


@pytest.mark.parametrize("bucket", [True, False])
def test_commits_take_the_slices_their_task_listed(
    bucket: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The partition stats of a commit start from the slices its task listed (the bucket
    index's listing at start, SIMPLE's own): no data partition is listed at commit, and the
    records equal the ones recomputed from the files."""
    root = tmp_path / "t"
    opts = _stats_options(bucket)
    model = apply({}, batch(1), COLS)
    hudi_ds.write(str(root), batch(1), opts)
    listed: list[list[str]] = []
    plain = metadata_sync.committed_slices

    def counted(state: TableState, partitions: Any) -> Any:
        listed.append(list(partitions))
        return plain(state, partitions)

    monkeypatch.setattr(metadata_sync, "committed_slices", counted)
    for k in (2, 3):
        hudi_ds.write(str(root), batch(k), opts)
        model = apply(model, batch(k), COLS)
    assert listed == []
    assert_in_step(root)
    assert_stats_in_step(root)
    check_rows(root, model)


def test_listed_slices_serve_only_the_visibility_they_were_listed_at(tmp_path: Path) -> None:
    """The task's listing stands for the committed slices only while the table's visibility
    is the one it was listed at: after another commit, the partitions are listed again."""
    root = tmp_path / "t"
    opts = _stats_options(True)
    hudi_ds.write(str(root), batch(1), opts)
    before = TableState.open(Storage(str(root))).visibility()
    hudi_ds.write(str(root), batch(2), opts)
    state = TableState.open(Storage(str(root)))
    metadata_sync.install_metadata_writer(state, validated(opts))
    now = state.visibility()
    assert now != before
    asked: list[str] = []

    def listed(partition: str) -> list[Any]:
        asked.append(partition)
        return []

    statuses = [WriteStatus(st, "append", "0-0-0") for st in _write_stats(state)]
    partitions = sorted({s.partition_path for s in statuses})
    commit = (b"", CommitMetadata())
    for as_of, want in ((before, []), (now, partitions)):
        asked.clear()
        metadata_sync.offer_written(state, "1", ("id",), statuses, commit, listed, as_of)
        assert sorted(asked) == want


def _write_stats(state: TableState) -> list[Any]:
    """The write stats of the latest commit of ``state``."""
    md = state.timeline.read_commit_metadata(state.timeline.commits()[-1])
    assert md is not None
    return [st for stats in md.partition_to_write_stats.values() for st in stats]
