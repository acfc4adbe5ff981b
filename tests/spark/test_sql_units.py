"""The ``hudi_py`` source's side of Spark SQL, without a JVM: the options Spark hands over for a
catalog table (captured from pyspark 4.3's ``CREATE TABLE t USING hudi_py OPTIONS (...)
LOCATION '...' COMMENT '...' TBLPROPERTIES (...)``), the error of a read without a path, and
the pinned snapshot a read's first task checks."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

import hudi_ds
from hudi_ds.errors import ConfigError
from hudi_ds.spark.datasource import HudiDataSource
from hudi_ds.spark.options import split_options
from hudi_ds.spark.reader import HudiBatchReader, HudiInputPartition, stale_snapshot_note
from hudi_ds.table.table import ReadableTable

OPTS = {
    "hoodie.table.name": "u",
    "hoodie.datasource.write.recordkey.field": "id",
    "hoodie.datasource.write.precombine.field": "ts",
}


def _write(path: str, ids: list[str]) -> str:
    instant = hudi_ds.write(path, pa.table({"id": ids, "ts": [1] * len(ids)}), OPTS)
    assert instant
    return instant


def _catalog_options(path: str) -> dict[str, str]:
    """What Spark passed to ``schema()`` for the CREATE TABLE above (keys lower-cased)."""
    return {
        "location": f"file:{path}",
        "option.hoodie.datasource.query.type": "read_optimized",
        "a.b": "c",
        "owner": "root",
        "path": f"file:{path}",
        "provider": "hudi_py",
        "hoodie.datasource.query.type": "read_optimized",
        "comment": "hi",
        "external": "true",
    }


def test_spark_catalog_options_are_not_the_users(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    _write(path, ["a"])
    opts = _catalog_options(path)
    got_path, hudi, conn = split_options(opts)
    assert (got_path, hudi, conn) == (
        f"file://{path}",
        {"hoodie.datasource.query.type": "read_optimized"},
        {},
    )
    # LOCATION without OPTIONS (path): the location is the path
    assert split_options({"location": f"file:{path}", "owner": "root", "provider": "hudi_py"})[
        0
    ] == (f"file://{path}")
    # CREATE TABLE infers the schema from those options
    schema = HudiDataSource(opts).schema()
    assert [f.name for f in schema.fields][-2:] == ["id", "ts"]
    # outside a catalog table an unknown key is still the user's mistake
    with pytest.raises(ConfigError, match="unknown option 'a.b'"):
        split_options({"path": path, "a.b": "c"})


def test_read_without_a_path_names_the_catalog_cause_and_the_view() -> None:
    """What a SELECT on a catalog table gets from pyspark: no options at all."""
    source = HudiDataSource({})
    with pytest.raises(ConfigError) as e:
        source.reader(None)
    msg = str(e.value)
    assert "PythonDataSourceV2.getTable" in msg, msg
    assert "CREATE TEMPORARY VIEW t USING hudi_py OPTIONS (path" in msg, msg


def test_first_task_of_a_latest_read_checks_its_pinned_snapshot(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    first = _write(path, ["a"])
    _write(path, ["b"])  # another file group: two read tasks
    second = hudi_ds.HudiTable(path).timeline.commits()[-1].requested_time
    reader = HudiBatchReader(path, {}, {"hudi_py.read.parallelism": "4"}, None)
    reader.schema = HudiDataSource({"path": path}).schema()
    parts = reader.partitions()
    assert all(isinstance(p, HudiInputPartition) for p in parts)
    assert [p.pinned for p in parts] == [second] + [None] * (len(parts) - 1)
    table = ReadableTable(path)
    assert stale_snapshot_note(table, second) is None
    third = _write(path, ["c"])
    note = stale_snapshot_note(ReadableTable(path), second)
    assert note is not None
    assert f"as of instant {second}" in note and f"latest {third}" in note, note
    assert "CREATE OR REPLACE TEMPORARY VIEW" in note and ".load(path)" in note, note
    # time travel pins on purpose: nothing to check
    tt = HudiBatchReader(path, {"as.of.instant": first}, {}, reader.schema)
    assert {p.pinned for p in tt.partitions()} == {None}
