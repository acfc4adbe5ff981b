"""The ``column_stats`` and ``partition_stats`` partitions of the metadata table: the records
hudi_ds computes from a table's data files equal, key by key, the records Apache Hudi wrote
into the fixtures (Hudi 1.0 and 1.1: table versions 8 and 9, COW and MOR, Parquet and Lance
base files, Avro log files, deletes-only log files, insert_overwrite, empty base files)."""

from __future__ import annotations

import decimal
import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import hudi_ds
from hudi_ds.api import HudiTable
from hudi_ds.layout.hfile import read_hfile
from hudi_ds.layout.naming import file_name_of, parse_base_file_name, parse_log_file_name
from hudi_ds.metadata.column_stats import (
    COLUMN_STATS,
    COLUMN_STATS_PARTITION,
    META_COLUMNS_TO_INDEX,
    PARTITION_STATS,
    PARTITION_STATS_PARTITION,
    ColumnRange,
    ValueType,
    column_stats_key,
    columns_to_index,
    decode_stats_value,
    encode_stats_value,
    merge_stats,
    partition_stats_key,
    range_of_record,
    ranges_of_table,
)
from hudi_ds.metadata.records import METADATA_PATH, declared_partitions, record_schema
from hudi_ds.metadata.stats_build import file_ranges, indexed_columns, partition_ranges
from hudi_ds.metadata.stats_reader import StatsRecords, read_stats_partition
from hudi_ds.services import clean, compaction, rollback
from hudi_ds.services.base import ServiceContext
from hudi_ds.storage import Storage
from hudi_ds.table.fs_view import StorageListing
from hudi_ds.table.table import ReadableTable
from hudi_ds.table_config import TableConfig
from hudi_ds.timeline.instant import COMMIT, DELTA_COMMIT, REPLACE_COMMIT
from hudi_ds.timeline.timeline import Timeline
from tests.conftest import hudi_rs_table
from tests.fixtures import fixture_table
from tests.metadata.rli_support import fixtures_with
from tests.metadata.test_writer import _crash, assert_in_step, batch
from tests.metadata.test_writer import options as writer_options
from tests.write.fixture_model import data_row_set
from tests.write.test_fixture_writes import unzip

COL_STATS_FIXTURES = fixtures_with(f"{COLUMN_STATS_PARTITION}/")
PART_STATS_FIXTURES = fixtures_with(f"{PARTITION_STATS_PARTITION}/")


def _open(root: Path) -> tuple[Storage, TableConfig, Timeline, Storage, Timeline]:
    storage = Storage(str(root))
    config = TableConfig.load(storage)
    timeline = Timeline.load(storage, config.timeline_layout_version, config.timeline_path)
    mdt = storage.sub(METADATA_PATH)
    mcfg = TableConfig.load(mdt)
    return storage, config, timeline, mdt, Timeline.load(mdt, 2, mcfg.timeline_path)


def fixture_records(root: Path, partition: str) -> StatsRecords:
    """The live (not tombstoned) records of MDT partition ``partition`` as Java wrote them."""
    _, config, timeline, mdt, mtl = _open(root)
    got = read_stats_partition(mdt, mtl, timeline, config.table_version, partition)
    return {k: v for k, v in got.items() if not v["isDeleted"]}


def _schema(root: Path, partition: str, version: int) -> str:
    """The record schema the fixture's partition was written with (its base HFile's)."""
    mdt = Storage(str(root)).sub(METADATA_PATH)
    for f in mdt.list_files(partition):
        if f.name.endswith(".hfile"):
            return read_hfile(mdt.read_bytes(f.path)).file_info["schema"].decode()
    return record_schema(version)


def _normalised(record_type: int, rng: ColumnRange, schema: str, **kw: Any) -> dict[str, Any]:
    return decode_stats_value(encode_stats_value(record_type, rng, schema, **kw), schema)[1]


def computed_column_stats(root: Path) -> StatsRecords:
    """One record per (data file on storage, indexed column), computed from the file."""
    storage, config, _, _, _ = _open(root)
    schema = _schema(root, COLUMN_STATS_PARTITION, config.table_version)
    columns = indexed_columns(config, storage, ReadableTable(str(root)).schema)
    listing = StorageListing(storage)
    out: StatsRecords = {}
    for p in listing.partitions():
        for f in listing.files(p):
            if not (parse_base_file_name(f.name) or parse_log_file_name(f.name)):
                continue
            for r in file_ranges(storage, p, f.name, columns):
                out[column_stats_key(r.column, p, f.name)] = _normalised(COLUMN_STATS, r, schema)
    return out


def computed_partition_stats(root: Path) -> StatsRecords:
    """One record per (partition, column), from the last commit that wrote the partition with
    any statistics: the partition's latest slices as that commit left them, the file groups it
    replaced still counted (the rule of :func:`hudi_ds.metadata.stats_build.partition_ranges`)."""
    storage, config, timeline, _, _ = _open(root)
    schema = _schema(root, PARTITION_STATS_PARTITION, config.table_version)
    columns = indexed_columns(config, storage, ReadableTable(str(root)).schema)
    table = ReadableTable(str(root), {"hoodie.metadata.enable": "false"})
    commits = list(timeline.completed().filter_actions(COMMIT, DELTA_COMMIT, REPLACE_COMMIT))
    out: StatsRecords = {}
    for i in reversed(range(len(commits))):
        inst = commits[i].requested_time
        md = timeline.read_commit_metadata(commits[i])
        for p in md.partition_to_write_stats:
            if any(partition_stats_key(c, p) in out for c in columns):
                continue  # a later commit decided it
            slices = table.file_slices(as_of=inst, partitions=[p])
            replaced = set(md.partition_to_replace_file_ids.get(p, []))
            if replaced and i > 0:
                before = table.file_slices(as_of=commits[i - 1].requested_time, partitions=[p])
                slices += [s for s in before if s.file_id in replaced]
            names = [
                file_name_of(f.path)
                for s in slices
                for f in ([s.base_file] if s.base_file else []) + list(s.log_files)
            ]
            ranges = [r for n in names for r in file_ranges(storage, p, n, columns)]
            for r in partition_ranges(p, ranges, columns):
                key = partition_stats_key(r.column, p)
                out[key] = _normalised(PARTITION_STATS, r, schema, tight_bound=True)
    return out


def _diff(expected: StatsRecords, got: StatsRecords) -> list[str]:
    out = [f"missing {got[k]}" for k in sorted(set(got) - set(expected))]
    out += [f"extra {expected[k]}" for k in sorted(set(expected) - set(got))]
    out += [
        f"differs: java {got[k]} hudi_ds {expected[k]}"
        for k in sorted(set(got) & set(expected))
        if got[k] != expected[k]
    ]
    return out


def assert_stats_in_step(root: Path) -> None:
    """The table's column_stats and partition_stats (those it declares) hold exactly the
    records recomputed from its data files."""
    declared = declared_partitions(TableConfig.load(Storage(str(root))))
    if COLUMN_STATS_PARTITION in declared:
        got = fixture_records(root, COLUMN_STATS_PARTITION)
        assert got and _diff(computed_column_stats(root), got) == []
    if PARTITION_STATS_PARTITION in declared:
        got = fixture_records(root, PARTITION_STATS_PARTITION)
        assert got and _diff(computed_partition_stats(root), got) == []


@pytest.mark.parametrize("name", COL_STATS_FIXTURES)
def test_column_stats_computed_from_the_files_equal_javas(name: str, tmp_path_factory) -> None:
    root = fixture_table(name, tmp_path_factory)
    got = fixture_records(root, COLUMN_STATS_PARTITION)
    assert _diff(computed_column_stats(root), got) == []


@pytest.mark.parametrize("name", PART_STATS_FIXTURES)
def test_partition_stats_computed_from_the_files_equal_javas(name: str, tmp_path_factory) -> None:
    root = fixture_table(name, tmp_path_factory)
    got = fixture_records(root, PARTITION_STATS_PARTITION)
    assert _diff(computed_partition_stats(root), got) == []


def test_the_fixtures_cover_both_versions_and_kinds_of_values() -> None:
    assert any("_v8_" in n for n in COL_STATS_FIXTURES)
    assert any("_v9_" in n and n.startswith("mor") for n in COL_STATS_FIXTURES)
    assert any("nonpart" in n for n in COL_STATS_FIXTURES)
    assert len(PART_STATS_FIXTURES) >= 5


def test_keys_hash_as_java() -> None:
    # from cow_v9_txns_simple_meta's column_stats / partition_stats
    file = "c7bbe63e-fa43-40ba-94a9-03158165edc6-0_1-27-53_20260307162434124.parquet"
    assert column_stats_key("currency", "region=us", file) == (
        "/m6lxu4Dh5w=431THTTwO5Q=W7RhzS2IFnrW7FlqIkFJUw=="
    )
    assert partition_stats_key("currency", "region=us") == "/m6lxu4Dh5w=431THTTwO5Q="
    # a long name takes XXHash64's 32-byte stripes
    assert column_stats_key("x" * 40, "", "f") != column_stats_key("x" * 41, "", "f")


def test_columns_to_index_follow_java() -> None:
    schema = pa.schema(
        [
            ("_hoodie_commit_time", pa.string()),
            ("_hoodie_record_key", pa.string()),
            ("id", pa.int64()),
            ("blob", pa.binary()),
            ("nested", pa.struct([("a", pa.int32())])),
            ("d", pa.decimal128(10, 2)),
            ("wide", pa.decimal128(38, 10)),
            ("s", pa.string()),
        ]
    )
    meta = ["_hoodie_commit_time", "_hoodie_partition_path", "_hoodie_record_key"]
    assert columns_to_index(schema, populate_meta_fields=True) == [*meta, "id", "d", "s"]
    assert columns_to_index(schema, populate_meta_fields=False, max_columns=2) == ["id", "d"]
    listed = columns_to_index(schema, populate_meta_fields=True, column_list=["s", "blob"])
    assert listed == [*meta, "s"]
    with pytest.raises(Exception, match="column.list.*nope"):
        columns_to_index(schema, populate_meta_fields=True, column_list=["nope"])


def test_log_ranges_and_the_merge_rule() -> None:
    t = pa.table({"a": [3, None, 1], "s": ["b", "a", None]})
    ra, rs = ranges_of_table(t, "f.log", ["a", "s"])
    assert (ra.min_value, ra.max_value, ra.null_count, ra.value_count) == (1, 3, 1, 3)
    assert (rs.min_value, rs.max_value, rs.value_type) == ("a", "b", ValueType.STRING)
    schema = record_schema(9)
    older = _normalised(COLUMN_STATS, ra, schema)
    newer = _normalised(
        COLUMN_STATS, ColumnRange("f.log", "a", 0, 2, 0, 2, 5, 6, ra.value_type), schema
    )
    merged = merge_stats(older, newer)
    assert merged["minValue"][1] == {"value": 0} and merged["maxValue"][1] == {"value": 3}
    assert merged["minValue"][0].endswith("LongWrapper")
    assert (merged["valueCount"], merged["nullCount"], merged["totalSize"]) == (5, 1, 5)
    tomb = _normalised(COLUMN_STATS, ra, schema, deleted=True)
    assert merge_stats(older, tomb) == tomb and merge_stats(tomb, newer) == newer
    tight = _normalised(PARTITION_STATS, ra, schema, tight_bound=True)
    assert merge_stats(older, tight) == tight


# -- kept in step by hudi_ds's writes ----------------------------------------------------------

_MDT_OPTS = {
    "hoodie.metadata.compact.max.delta.commits": "2",
    "hoodie.cleaner.commits.retained": "1",
    "hoodie.clean.automatic": "false",
}


def _in_step(root: Path) -> None:
    assert_in_step(root)
    assert_stats_in_step(root)
    expected = data_row_set(hudi_ds.read(str(root)))
    assert data_row_set(hudi_rs_table(str(root))) == expected
    assert data_row_set(hudi_rs_table(str(root), {"hoodie.metadata.enable": "true"})) == expected


@pytest.mark.parametrize("name", ["mor_avro_v9_txns_simple_meta", "mor_avro_v8_trips_8i3u1d"])
def test_fixture_stats_stay_true_through_writes_and_services(name: str, tmp_path: Path) -> None:
    """Java's column_stats and partition_stats stay declared and equal to the records
    recomputed from the files through upserts (the MDT compacted every second deltacommit:
    the stats file groups get new base files, older slices cleaned), a compaction, a clean,
    a delete and its rollback; hudi-rs reads the table with the MDT on and off."""
    root = unzip(name, tmp_path)
    table = HudiTable(str(root))
    rows = table.read()
    data = rows.select([c for c in rows.column_names if not c.startswith("_hoodie_")])
    for i in range(3):
        table.upsert(data.slice(i, 2), _MDT_OPTS)
    declared = declared_partitions(TableConfig.load(Storage(str(root))))
    assert {COLUMN_STATS_PARTITION, PARTITION_STATS_PARTITION} <= set(declared)
    _in_step(root)
    ctx = ServiceContext.open(str(root), _MDT_OPTS)
    assert compaction.schedule_compaction(ctx) is not None
    compaction.run_compaction(ctx)
    table.upsert(data.slice(5, 2), _MDT_OPTS)
    clean.clean(ServiceContext.open(str(root), _MDT_OPTS))
    _in_step(root)
    last = table.delete(data.slice(7, 1), _MDT_OPTS)
    assert last is not None
    rollback.rollback(ServiceContext.open(str(root), _MDT_OPTS), last)
    _in_step(root)
    mdt = root / ".hoodie" / "metadata" / COLUMN_STATS_PARTITION
    bases = [p.name for p in mdt.iterdir() if p.name.endswith(".hfile")]
    assert len(bases) <= 4  # two slices per file group: the older ones cleaned


_BUILD = {
    "hoodie.metadata.index.column.stats.enable": "true",
    "hoodie.metadata.index.partition.stats.enable": "true",
    "hoodie.metadata.compact.max.delta.commits": "3",
}


@pytest.mark.parametrize(
    ("table_type", "version"),
    [("COPY_ON_WRITE", 9), ("MERGE_ON_READ", 9), ("MERGE_ON_READ", 8)],
)
def test_new_table_with_stats_stays_in_step(table_type: str, version: int, tmp_path: Path) -> None:
    """A new table asking for column and partition stats gets them (built from the files of
    its first commit's predecessors, then kept in step), through writes, MDT compactions and
    a compaction."""
    root = tmp_path / "t"
    opts = writer_options(table_type, version, bucket=True, **_BUILD)  # updates go to logs
    for k in range(1, 5):  # the fifth would compact inline
        hudi_ds.write(str(root), batch(k), opts)
    declared = declared_partitions(TableConfig.load(Storage(str(root))))
    assert declared == ["column_stats", "files", "partition_stats"]
    _in_step(root)
    if table_type == "MERGE_ON_READ":
        ctx = ServiceContext.open(str(root), opts)
        assert compaction.schedule_compaction(ctx) is not None
        compaction.run_compaction(ctx)
        _in_step(root)


def test_stats_built_for_an_existing_table_and_removed_when_disabled(tmp_path: Path) -> None:
    root = tmp_path / "t"
    opts = writer_options("COPY_ON_WRITE", 9)
    # created without them; the next write, the option unset, keeps what the table has
    hudi_ds.write(
        str(root), batch(1), {**opts, "hoodie.metadata.index.column.stats.enable": "false"}
    )
    hudi_ds.write(str(root), batch(2), opts)
    assert declared_partitions(TableConfig.load(Storage(str(root)))) == ["files"]
    hudi_ds.write(str(root), batch(3), {**opts, **_BUILD})
    config = TableConfig.load(Storage(str(root)))
    assert declared_partitions(config) == ["column_stats", "files", "partition_stats"]
    # the columns are recorded in the index definition, as Java 1.1 records them
    defs = json.loads((root / config.get(TableConfig.INDEX_DEFS_PATH)).read_text())
    definition = defs["indexDefinitions"]["column_stats"]
    assert definition["version"] == "V2" and definition["indexType"] == "column_stats"
    assert definition["sourceFields"][:3] == list(META_COLUMNS_TO_INDEX)
    assert len(definition["sourceFields"]) > 3
    _in_step(root)
    off = {**opts, "hoodie.metadata.index.column.stats.enable": "false"}
    hudi_ds.write(str(root), batch(4), off)  # partition stats need column stats: both go
    assert declared_partitions(TableConfig.load(Storage(str(root)))) == ["files"]
    assert sorted(p.name for p in (root / ".hoodie" / "metadata").iterdir()) == [
        ".hoodie",
        "files",
    ]
    assert_in_step(root)


@pytest.mark.parametrize("spec", ["after_files", "metadata:1", "metadata:2", "commit_write"])
def test_killed_write_leaves_stats_in_step(spec: str, tmp_path: Path) -> None:
    """A write killed before, inside and after its MDT deltacommit (the stats logs beside
    the files log): the next write rolls it back (Hudi 1.x: an MDT rollback deleting the
    killed deltacommit's logs in every partition) and the stats equal the files again."""
    root = tmp_path / "t"
    opts = writer_options("MERGE_ON_READ", 9, **_BUILD)
    for k in (1, 2):
        hudi_ds.write(str(root), batch(k), opts)
    assert _crash(spec, lambda: hudi_ds.write(str(root), batch(3), opts)) == 137
    hudi_ds.write(str(root), batch(4), opts)
    _in_step(root)


def test_cli_builds_the_stats_partitions(tmp_path: Path) -> None:
    """``hudi-py metadata PATH --build column_stats --build partition_stats`` builds them for
    a version 9 table from its files; the next writes keep them in step. Other partitions and
    versions below 8 are refused, the table unchanged."""
    from tests.test_cli import run, run_json

    root = tmp_path / "t"
    opts = writer_options("MERGE_ON_READ", 9, bucket=True)
    without = {**opts, "hoodie.metadata.index.column.stats.enable": "false"}
    for k in (1, 2):
        hudi_ds.write(str(root), batch(k), without)
    code, _, err = run("metadata", str(root), "--build", "secondary_index_x")
    assert code != 0 and "column_stats, partition_stats, record_index, bloom_filters" in err
    out = run_json("metadata", str(root), "--build", "column_stats", "--build", "partition_stats")
    assert out["built"] == ["column_stats", "partition_stats"]
    _in_step(root)
    hudi_ds.write(str(root), batch(3), opts)
    _in_step(root)
    v6 = tmp_path / "v6"
    hudi_ds.write(str(v6), batch(1), writer_options("COPY_ON_WRITE", 6))
    code, _, err = run("metadata", str(v6), "--build", "column_stats")
    assert code != 0 and "versions 8 and 9" in err
    assert declared_partitions(TableConfig.load(Storage(str(v6)))) == ["files"]


@pytest.mark.parametrize("version", [6, 8, 9])
def test_records_read_back_as_the_ranges_they_were_written_from(version: int) -> None:
    """Partition stats merge the column stats already in the metadata table: a record decodes
    to the range it was encoded from, and encodes again to the same bytes (decimals, dates,
    timestamps, strings; Hudi 1.0's ValueType.V1 wrappers and 1.1's value types)."""
    schema = record_schema(version)
    ranges = [
        ColumnRange("f", "d", -1234, 99999, 1, 5, 10, 20, ValueType.DECIMAL, 10, 2),
        ColumnRange("f", "day", 19000, 19500, 0, 5, 1, 2, ValueType.DATE),
        ColumnRange("f", "t", 10**15, 2 * 10**15, 0, 5, 1, 2, ValueType.TIMESTAMP_MICROS),
        ColumnRange("f", "s", "a", "z", 2, 5, 1, 2, ValueType.STRING),
        ColumnRange("f", "n", None, None, 5, 5, 1, 2, ValueType.LONG),
    ]
    for r in ranges:
        value = encode_stats_value(COLUMN_STATS, r, schema)
        back = range_of_record(decode_stats_value(value, schema)[1])
        assert encode_stats_value(COLUMN_STATS, back, schema) == value, r
        if version == 9:
            assert back == r


def _typed_rows(k: int, n: int = 60) -> pa.Table:
    """The ``k``-th upsert of rows of many column types (NaN and nulls among them): keys
    ``t<i>`` of 90, moving on by 13 a batch, two partitions."""
    ids = sorted({(k * 13 + i) % 90 for i in range(n)})
    # NaN in the first rows: a log file's first data block may hold no other value of ``f``
    f = [float("nan") if j < 8 else (None if i % 7 == 0 else i / 3 - k) for j, i in enumerate(ids)]
    return pa.table(
        {
            "id": [f"t{i:03d}" for i in ids],
            "ts": pa.array([k] * len(ids), pa.int64()),
            "p": [f"p{i % 2}" for i in ids],
            "f": pa.array(f, pa.float64()),
            "i": pa.array([i - 40 * k for i in ids], pa.int32()),
            "d": pa.array([decimal.Decimal(i * k) / 100 for i in ids], pa.decimal128(10, 2)),
            "day": pa.array([i + k for i in ids], pa.date32()),
            "at": pa.array([i * 1_000_000 + k for i in ids], pa.timestamp("us", tz="UTC")),
            "s": [None if i % 5 == 0 else f"s{(i * k) % 17}" for i in ids],
            "b": [i % 3 == k % 3 for i in ids],
        }
    )


@pytest.mark.parametrize(
    ("table_type", "block"),
    [("MERGE_ON_READ", "parquet"), ("MERGE_ON_READ", "avro"), ("COPY_ON_WRITE", "parquet")],
)
def test_written_files_stats_travel_with_the_write(
    table_type: str, block: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The column stats of the files a write commits are computed by its handles (a log
    file's from the rows of its data blocks, several blocks a file; a base file's from the
    footer it wrote) and reach the metadata writer in the write statuses: it reads none of
    the written files back, and the records equal those recomputed from the files."""
    from hudi_ds.metadata import stats_writer

    reads: list[tuple[str, str]] = []
    real = stats_writer.file_ranges

    def counting(storage: Storage, partition: str, name: str, *args: Any) -> list[ColumnRange]:
        reads.append((partition, name))
        return real(storage, partition, name, *args)

    monkeypatch.setattr(stats_writer, "file_ranges", counting)
    # the task writer takes the input 8 rows at a time (it joins small chunks otherwise)
    from hudi_ds import api
    from hudi_ds.write.task_writer import coalesced

    monkeypatch.setattr(api, "coalesced", lambda batches, max_bytes: coalesced(batches, max_rows=8))
    root = tmp_path / "t"
    over = {**_BUILD, "hoodie.metadata.compact.max.delta.commits": "100"}
    over["write.batch.size"] = "0.0001"  # ~100 bytes a handle: a data block per batch
    over["hoodie.logfile.data.block.format"] = block
    # no compaction: a service's files are read (nothing travels)
    over["hoodie.datasource.compaction.async.enable"] = "false"
    opts = writer_options(table_type, 9, bucket=True, **over)
    for k in range(1, 5):
        rows = _typed_rows(k)
        # batches of 8 rows: a handle flushes a block after each
        hudi_ds.write(str(root), pa.Table.from_batches(rows.to_batches(max_chunksize=8)), opts)
    hudi_ds.write(
        str(root),
        _typed_rows(2).slice(0, 9),
        {**opts, "hoodie.datasource.write.operation": "delete"},
    )
    assert reads == []
    timeline = Timeline.load(Storage(str(root)), 2, ".hoodie/timeline")
    stats = [
        s
        for inst in timeline.completed().instants
        for ss in timeline.read_commit_metadata(inst).partition_to_write_stats.values()
        for s in ss
    ]
    if table_type == "MERGE_ON_READ":
        assert max(s.total_log_blocks for s in stats) > 2  # files of several data blocks
    assert_stats_in_step(root)
