"""Spark SQL over ``hudi_py`` as a plain SparkSession sees it: temporary views, catalog tables
(refused with their cause and the view that works), pinned snapshots of views and DataFrames,
and time travel options.

Every case starts from the same table, written by the embedded API: commit 1 inserts a=1,
b=1 (MERGE_ON_READ, record key ``id``, ordering field ``ts``). Catalog tables cannot be read or
written through pyspark 4.3 (``PythonDataSourceV2.getTable`` drops the table's properties, so
the source gets no path): a refused statement leaves the table's files unchanged.
"""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import hudi_ds
from hudi_ds.timeline.instant import instant_time_to_datetime
from tests.conftest import assert_rows, hudi_rs_table

pytestmark = pytest.mark.spark

OPTS = {
    "hoodie.table.name": "sq",
    "hoodie.datasource.write.recordkey.field": "id",
    "hoodie.datasource.write.precombine.field": "ts",
    "hoodie.datasource.write.table.type": "MERGE_ON_READ",
}
COLUMNS = ["id", "ts", "v"]
FIRST = [("a", 1, 1), ("b", 1, 1)]
NO_PATH = "CREATE TEMPORARY VIEW t USING hudi_py OPTIONS (path"


def _rows(rows: list[tuple[str, int, int]]) -> pa.Table:
    ids, ts, v = zip(*rows, strict=True)
    return pa.table({"id": list(ids), "ts": list(ts), "v": list(v)})


def _files(path: str) -> dict[str, int]:
    out = {}
    for d, _, names in os.walk(path):
        for n in names:
            p = os.path.join(d, n)
            out[os.path.relpath(p, path)] = os.path.getsize(p)
    return out


def _sql_rows(spark: Any, sql: str) -> pa.Table:
    return spark.sql(sql).select(*COLUMNS).toArrow()


def _catalog_tables(spark: Any, path: str, name: str) -> None:
    """CREATE TABLE ... LOCATION / OPTIONS (path) / saveAsTable: Spark's own table properties
    (owner, location, provider...) are not refused as options; reads and writes through the
    table are refused with the cause and the temporary view route; nothing is written."""
    spark.sql(f"CREATE TABLE {name}_loc USING hudi_py LOCATION '{path}' COMMENT 'c'")
    spark.sql(
        f"CREATE TABLE {name}_cols (id string, ts bigint, v bigint) USING hudi_py "
        f"OPTIONS (path '{path}', 'hoodie.datasource.query.type'='snapshot') "
        "TBLPROPERTIES ('primaryKey'='id')"
    )
    before = _files(path)
    for stmt in (
        f"SELECT * FROM {name}_loc",
        f"INSERT INTO {name}_cols BY NAME SELECT 'z' AS id, 9L AS ts, 9L AS v",
    ):
        with pytest.raises(Exception) as e:
            spark.sql(stmt).collect()
        msg = str(e.value)
        assert NO_PATH in msg and "PythonDataSourceV2.getTable" in msg, msg[-1500:]
        assert "unknown option" not in msg, msg[-1500:]
    assert _files(path) == before
    # saveAsTable with a path: the write itself has the path (and works), the table does not
    df = spark.createDataFrame([("c", 1, 1)], "id string, ts long, v long")
    df.write.format("hudi_py").mode("append").options(**OPTS).option("path", path).saveAsTable(
        f"{name}_saved"
    )
    assert_rows(hudi_ds.read(path), [*FIRST, ("c", 1, 1)], COLUMNS)
    with pytest.raises(Exception, match=NO_PATH.replace("(", r"\(")):
        spark.table(f"{name}_saved").collect()
    for table in ("loc", "cols", "saved"):
        spark.sql(f"DROP TABLE {name}_{table}")  # external: the data stays
    assert_rows(hudi_rs_table(path), [*FIRST, ("c", 1, 1)], COLUMNS)


def _temp_view(spark: Any, path: str, name: str) -> None:
    """A temporary view reads and writes; it shows the snapshot of its first read until it is
    re-created (pyspark keeps the planned read: PythonDataSourceV2.getOrCreateReadInfo)."""
    spark.sql(f"CREATE TEMPORARY VIEW {name} USING hudi_py OPTIONS (path '{path}')")
    assert_rows(_sql_rows(spark, f"SELECT * FROM {name}"), FIRST, COLUMNS)
    spark.sql(f"INSERT INTO {name} BY NAME SELECT 'a' AS id, 2L AS ts, 2L AS v")
    second = [("a", 2, 2), ("b", 1, 1)]
    assert_rows(hudi_rs_table(path), second, COLUMNS)
    assert_rows(_sql_rows(spark, f"SELECT * FROM {name}"), FIRST, COLUMNS)  # pinned
    spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW {name} USING hudi_py OPTIONS (path '{path}')")
    assert_rows(_sql_rows(spark, f"SELECT * FROM {name}"), second, COLUMNS)
    spark.sql(f"INSERT OVERWRITE {name} BY NAME SELECT 'c' AS id, 3L AS ts, 3L AS v")
    assert_rows(hudi_rs_table(path), [("c", 3, 3)], COLUMNS)
    spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW {name} USING hudi_py OPTIONS (path '{path}')")
    assert_rows(_sql_rows(spark, f"SELECT * FROM {name}"), [("c", 3, 3)], COLUMNS)
    spark.catalog.dropTempView(name)


def _dataframe(spark: Any, path: str, name: str) -> None:
    """A DataFrame keeps the snapshot of its first action; a new load shows the next write."""
    df = spark.read.format("hudi_py").load(path).select(*COLUMNS)
    assert_rows(df.toArrow(), FIRST, COLUMNS)
    hudi_ds.write(path, _rows([("b", 2, 2)]), OPTS)
    assert_rows(df.toArrow(), FIRST, COLUMNS)  # pinned
    fresh = spark.read.format("hudi_py").load(path).select(*COLUMNS)
    assert_rows(fresh.toArrow(), [("a", 1, 1), ("b", 2, 2)], COLUMNS)


def _time_travel(spark: Any, path: str, name: str) -> None:
    """as.of.instant takes a datetime, epoch millis and ISO-8601; Delta's keys point to it."""
    first = hudi_ds.HudiTable(path).timeline.commits()[0].requested_time
    hudi_ds.write(path, _rows([("a", 2, 2)]), OPTS)
    at = instant_time_to_datetime(first, "UTC")
    reader = spark.read.format("hudi_py")
    for value in (at, int(at.timestamp() * 1000), at.isoformat(), first):
        got = reader.option("as.of.instant", value).load(path).select(*COLUMNS).toArrow()
        assert_rows(got, FIRST, COLUMNS)
    before = at - timedelta(days=1)
    with pytest.raises(Exception, match="before the first commit"):
        reader.option("as.of.instant", before).load(path).collect()
    for key, value in (("versionAsOf", 0), ("timestampAsOf", "2024-01-01")):
        with pytest.raises(Exception, match="did you mean 'as.of.instant'"):
            spark.read.format("hudi_py").option(key, value).load(path).collect()


CASES = {
    "temporary view": _temp_view,
    "dataframe": _dataframe,
    "time travel": _time_travel,
    "catalog tables": _catalog_tables,
}


@pytest.mark.parametrize(
    "case",
    [pytest.param(c, marks=[pytest.mark.slow] if c == "catalog tables" else []) for c in CASES],
)
def test_spark_sql(spark: Any, tmp_path: Path, case: str) -> None:
    path = str(tmp_path / "t")
    hudi_ds.write(path, _rows(FIRST), OPTS)
    CASES[case](spark, path, "sq_" + case.replace(" ", "_"))
