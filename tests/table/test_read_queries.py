"""Incremental, time-travel, filtered and damaged-file reads of real Hudi tables.

Expected rows come from the golden files and the tables' own commit metadata (the timeline),
never from our reader's output:

* ``mor_avro_v6_trips_8i1u`` / ``mor_avro_v8_trips_8i1u``: commit 1 inserts 8 trips into base
  files, commit 2 updates one trip in a log block. As of commit 1 the table holds the
  read-optimized golden rows that commit 1 wrote (the ``mor_parquet_v6_*`` tables' commit 2 also
  adds a base file, which time travel to commit 1 must not see).
* ``*_8i3d``: commit 2 is a delete block removing 3 keys (5 snapshot rows, 8 read-optimized).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import hudi_ds
from hudi_ds.errors import (
    ConfigError,
    CorruptFileError,
    InstantNotFoundError,
    UnsupportedError,
)
from tests.fixtures import GOLDEN_DIR, fixture_names, fixture_table, require_base_file_reader
from tests.golden import golden_rows, golden_set, norm_golden, row_set

TWO_COMMIT_LOG_TABLES = [
    "mor_avro_v6_trips_8i1u",
    "mor_avro_v6_trips_8i3d",
    "mor_avro_v8_trips_8i1u",
    "mor_avro_v8_trips_8i3d",
    "mor_parquet_v6_nonpartitioned",
    "mor_parquet_v6_simplekeygen_nonhivestyle",
]


def _golden_subset(name: str, commit_times: set[str]) -> list[str]:
    rows = [
        r
        for r in golden_rows(GOLDEN_DIR / f"{name}.snapshot.jsonl")
        if r.get("_hoodie_commit_time") in commit_times
    ]
    return sorted(json.dumps(norm_golden(r), sort_keys=True) for r in rows)


@pytest.mark.parametrize("name", TWO_COMMIT_LOG_TABLES)
def test_time_travel_to_first_commit_equals_base_files(name: str, tmp_path_factory) -> None:
    root = fixture_table(name, tmp_path_factory)
    table = hudi_ds.HudiTable(str(root))
    first = table.timeline.commits()[0].requested_time
    got = table.read({"as.of.instant": first})
    # as of commit 1: its base-file rows, i.e. the read-optimized rows that commit 1 wrote
    expected = [
        json.dumps(norm_golden(r), sort_keys=True)
        for r in golden_rows(GOLDEN_DIR / f"{name}.read_optimized.jsonl")
        if r["_hoodie_commit_time"] == first
    ]
    assert row_set(got) == sorted(expected)


@pytest.mark.parametrize("name", TWO_COMMIT_LOG_TABLES)
def test_time_travel_to_latest_equals_snapshot(name: str, tmp_path_factory) -> None:
    root = fixture_table(name, tmp_path_factory)
    table = hudi_ds.HudiTable(str(root))
    last = table.timeline.commits()[-1].requested_time
    got = table.read({"as.of.instant": last})
    assert row_set(got) == golden_set(GOLDEN_DIR / f"{name}.snapshot.jsonl")


def _multi_commit_tables() -> list[str]:
    return [n for n in fixture_names() if "empty" not in n and "no_metafields" not in n]


@pytest.mark.parametrize("name", _multi_commit_tables())
def test_incremental_from_each_commit(name: str, tmp_path_factory) -> None:
    """(c_k, latest] returns the snapshot rows last written by the commits after c_k."""
    require_base_file_reader(name)
    root = fixture_table(name, tmp_path_factory)
    table = hudi_ds.HudiTable(str(root))
    commits = table.timeline.commits()
    layout2 = table.config.timeline_layout_version >= 2
    for k, c in enumerate(commits[:-1]):
        begin = (c.completion_time or c.requested_time) if layout2 else c.requested_time
        later = {i.requested_time for i in commits[k + 1 :]}
        got = table.read(
            {
                "hoodie.datasource.query.type": "incremental",
                "hoodie.datasource.read.begin.instanttime": begin,
            }
        )
        assert row_set(got) == _golden_subset(name, later), f"begin={begin}"


def test_incremental_bounded_range(tmp_path_factory) -> None:
    name = "mor_avro_v6_trips_8i1u"
    root = fixture_table(name, tmp_path_factory)
    table = hudi_ds.HudiTable(str(root))
    c1, c2 = (i.requested_time for i in table.timeline.commits())
    only_first = table.read(
        {
            "hoodie.datasource.query.type": "incremental",
            "hoodie.datasource.read.begin.instanttime": "000",
            "hoodie.datasource.read.end.instanttime": c1,
        }
    )
    # as of c1 every row was written by c1: the base files, i.e. the read-optimized rows
    assert row_set(only_first) == golden_set(GOLDEN_DIR / f"{name}.read_optimized.jsonl")
    only_second = table.read(
        {
            "hoodie.datasource.query.type": "incremental",
            "hoodie.datasource.read.begin.instanttime": c1,
            "hoodie.datasource.read.end.instanttime": c2,
        }
    )
    assert row_set(only_second) == _golden_subset(name, {c2})
    assert only_second.num_rows == 1


@pytest.mark.parametrize("name", [n for n in fixture_names() if "no_metafields" in n])
def test_incremental_refused_without_meta_fields(name: str, tmp_path_factory) -> None:
    """As Java's IncrementalRelation: rows of a table without meta fields carry no
    ``_hoodie_commit_time`` to select the changed ones by."""
    root = str(fixture_table(name, tmp_path_factory))
    incremental = {
        "hoodie.datasource.query.type": "incremental",
        "hoodie.datasource.read.begin.instanttime": "000",
    }
    with pytest.raises(UnsupportedError, match="populate.meta.fields=false"):
        hudi_ds.read(root, incremental)


def test_bad_read_options_are_refused(tmp_path_factory) -> None:
    root = str(fixture_table("mor_avro_v6_trips_8i1u", tmp_path_factory))
    with pytest.raises(ConfigError, match="hoodie.datasource.query.type"):
        hudi_ds.read(root, {"hoodie.datasource.query.type": "latest"})
    with pytest.raises(ConfigError, match="begin.instanttime"):
        hudi_ds.read(root, {"hoodie.datasource.query.type": "incremental"})
    with pytest.raises(ConfigError, match="hoodie.datasource.query.typ"):
        hudi_ds.read(root, {"hoodie.datasource.query.typ": "snapshot"})
    with pytest.raises(InstantNotFoundError):
        hudi_ds.read(root, {"as.of.instant": "20000101000000000"})
    with pytest.raises(ConfigError, match="nope"):
        hudi_ds.read(root, columns=["nope"])
    with pytest.raises(ConfigError, match="nope"):
        hudi_ds.read(root, filters=[("nope", "=", 1)])


def test_not_a_table(tmp_path: Path) -> None:
    with pytest.raises(hudi_ds.TableNotFoundError, match="hoodie.properties"):
        hudi_ds.read(str(tmp_path))


@pytest.mark.parametrize(
    "filters",
    [
        [("city", "=", "san_francisco")],
        [("city", "in", ["chennai", "sao_paulo"])],
        [("city", "!=", "chennai"), ("fare", ">", 20.0)],
        [("ts", "<=", 1695159649087)],
    ],
)
def test_filters_match_golden_rows(filters, tmp_path_factory) -> None:
    name = "mor_avro_v8_trips_8i3u1d"
    root = str(fixture_table(name, tmp_path_factory))
    ops = {
        "=": lambda a, b: a == b,
        "!=": lambda a, b: a != b,
        ">": lambda a, b: a > b,
        "<=": lambda a, b: a <= b,
        "in": lambda a, b: a in b,
    }
    expected = [
        r
        for r in golden_rows(GOLDEN_DIR / f"{name}.snapshot.jsonl")
        if all(ops[op](r[c], v) for c, op, v in filters)
    ]
    got = hudi_ds.read(root, columns=["uuid", "city", "fare"], filters=filters)
    assert sorted(got.column("uuid").to_pylist()) == sorted(r["uuid"] for r in expected)
    assert got.column_names == ["uuid", "city", "fare"]


def _copy(name: str, tmp_path_factory, dest: Path) -> Path:
    src = fixture_table(name, tmp_path_factory)
    shutil.copytree(src, dest)
    return dest


def _log_file(root: Path) -> Path:
    logs = sorted(p for p in root.rglob(".*.log.*") if ".hoodie" not in p.parts)
    assert len(logs) == 1
    return logs[0]


def test_truncated_log_file_reads_intact_blocks(tmp_path_factory, tmp_path) -> None:
    name = "mor_avro_v6_trips_8i1u"
    root = _copy(name, tmp_path_factory, tmp_path / "t")
    log = _log_file(root)
    data = log.read_bytes()
    log.write_bytes(data[: len(data) // 2])  # the only block is now torn
    table = hudi_ds.HudiTable(str(root))
    # the commit recorded the log file's size: a committed block is lost, which is an error...
    with pytest.raises(CorruptFileError, match=log.name):
        table.read()
    # ...unless the user opts into skipping damaged files
    got = table.read({"spark.sql.files.ignoreCorruptFiles": "true"})
    assert table.last_read_stats.damaged_files == [str(log.relative_to(root))]
    # the update in the torn block is lost; every base row is intact
    assert row_set(got) == golden_set(GOLDEN_DIR / f"{name}.read_optimized.jsonl")
    assert table.last_read_stats.corrupt_blocks == 1
    assert table.last_read_stats.corrupt_files == [str(log.relative_to(root))]


def test_garbage_after_log_block_is_skipped(tmp_path_factory, tmp_path, caplog) -> None:
    name = "mor_avro_v6_trips_8i1u"
    root = _copy(name, tmp_path_factory, tmp_path / "t")
    log = _log_file(root)
    log.write_bytes(log.read_bytes() + b"#HUDI#\x00\x00\x00garbage-garbage-garbage")
    table = hudi_ds.HudiTable(str(root))
    with caplog.at_level("WARNING"):
        got = table.read()
    assert row_set(got) == golden_set(GOLDEN_DIR / f"{name}.snapshot.jsonl")
    assert table.last_read_stats.corrupt_blocks == 1
    assert "corrupt" in caplog.text
