"""MERGE / UPDATE / DELETE through Spark (``hudi_ds.spark.HudiTable`` and ``hudi_ds.spark.sql``)
against the independent model of ``tests/dml/test_merge.py``.

Each table starts with that module's 180 rows (``k000``..``k179``, partitioned by city,
ordering field ``ts``), written by hudi_ds with the configuration under test; the source is its
60 existing + 40 new keys. Each case runs its statements through Spark (the join, the clauses
and the write are Spark's) and the table after them must equal the model, full rows, read by
hudi_ds and by hudi-rs, each statement one instant. The SQL case has no BY SOURCE clause, so its target read is
narrowed to the source's keys. A source with a key twice and other bad statements are
refused, naming the key or column, with the table byte for byte unchanged.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from hudi_ds.errors import ConfigError
from tests.dml.test_merge import (
    FULL_MODEL,
    base_rows,
    check,
    make_table,
    model_merge,
    options,
    snapshot,
    source_rows,
)

pytestmark = pytest.mark.spark

SCHEMA = "id string, city string, ts long, fare double, note string"

MERGE_SQL = """
MERGE INTO hudi_py.`{path}` AS t
USING {source} AS s
ON t.id = s.id
WHEN MATCHED AND s.fare < 1010 THEN DELETE
WHEN MATCHED AND s.ts > t.ts AND t.city = 'sf'
  THEN UPDATE SET fare = s.fare * 2, ts = s.ts, t.note = t.note || '+'
WHEN MATCHED AND s.ts >= t.ts THEN UPDATE SET *
WHEN NOT MATCHED AND s.city <> 'nyc'
  THEN INSERT (id, city, ts, fare) VALUES (s.id, s.city, s.ts, s.fare)
WHEN NOT MATCHED THEN INSERT *
"""


def _builder_merge(spark: Any, path: str) -> None:
    """FULL_MODEL's statement with the builder: Spark Columns and SQL strings mixed."""
    from pyspark.sql import functions as F

    from hudi_ds.spark import HudiTable

    source = spark.createDataFrame(source_rows(), SCHEMA)
    m = (
        HudiTable.forPath(spark, path)
        .alias("t")
        .merge(source, F.col("t.id") == F.col("s.id"))
        .whenMatchedDelete(F.col("s.fare") < 1010)
        .whenMatchedUpdate(
            "s.ts > t.ts AND t.city = 'sf'",
            {"fare": F.col("s.fare") * 2, "ts": "s.ts", "note": "t.note || '+'"},
        )
        .when_matched_update_all("s.ts >= t.ts")
        .whenNotMatchedInsert(
            "s.city <> 'nyc'", {"id": "s.id", "city": "s.city", "ts": "s.ts", "fare": "s.fare"}
        )
        .whenNotMatchedInsertAll()
        .whenNotMatchedBySourceDelete("t.fare > 170")
    )
    metrics = m.execute()
    assert metrics.instant is not None and metrics.num_source_rows == 100
    assert metrics.num_target_rows_read == 180  # the whole table: a BY SOURCE clause


def _sql_merge(spark: Any, path: str) -> None:
    from hudi_ds.spark import sql

    spark.createDataFrame(source_rows(), SCHEMA).createOrReplaceTempView("dml_src")
    metrics = sql(spark, MERGE_SQL.format(path=path, source="dml_src"))
    assert metrics.instant is not None and metrics.num_target_rows_inserted > 0
    # no BY SOURCE clause: the read is narrowed to the source's keys (pushed down, pruning
    # buckets) and the join pairs the 60 existing ones
    assert metrics.num_target_rows_read == 60


def _update_delete(spark: Any, path: str) -> None:
    from hudi_ds.spark import HudiTable, sql

    t = HudiTable.forPath(spark, path)
    up = t.update("city = 'sf' AND fare > 100", {"fare": "fare * 2", "note": "'up'"})
    assert up.num_target_rows_updated == 26 and up.instant is not None
    gone = sql(spark, f"DELETE FROM hudi_py.`{path}` WHERE fare < 20 OR id = 'k101'")
    assert gone.num_target_rows_deleted == 21 and gone.instant not in (None, up.instant)


def _update_delete_model() -> dict[str, dict[str, Any]]:
    out = {}
    for r in base_rows():
        if r["fare"] < 20 or r["id"] == "k101":
            continue
        if r["city"] == "sf" and r["fare"] > 100:
            r = {**r, "fare": r["fare"] * 2, "note": "up"}
        out[r["id"]] = r
    return out


CASES = [
    pytest.param("MERGE_ON_READ", "SIMPLE", 6, _builder_merge, id="builder-mor-simple-v6"),
    pytest.param("COPY_ON_WRITE", "BUCKET", 9, _sql_merge, id="sql-cow-bucket-v9"),
    pytest.param("MERGE_ON_READ", "SIMPLE", 8, _update_delete, id="update-delete-mor-v8"),
]


@pytest.mark.parametrize("table_type, index, version, run", CASES)
def test_dml_through_spark(
    spark: Any, tmp_path: Path, table_type: str, index: str, version: int, run: Any
) -> None:
    root = tmp_path / "t"
    make_table(root, options(table_type, index, version))
    run(spark, str(root))
    target = {r["id"]: r for r in base_rows()}
    if run is _update_delete:
        model = _update_delete_model()
    elif run is _sql_merge:  # the statement without its BY SOURCE clause
        model = model_merge(target, source_rows(), FULL_MODEL[:-1])
    else:
        model = model_merge(target, source_rows(), FULL_MODEL)
    check(root, model)


def test_refused_statements_leave_the_table_unchanged(spark: Any, tmp_path: Path) -> None:
    from hudi_ds.spark import HudiTable, sql

    root = tmp_path / "t"
    make_table(root, options("MERGE_ON_READ", "SIMPLE", 6))
    before = snapshot(root)
    rows = source_rows()[:5]
    source = spark.createDataFrame([*rows, {**rows[2], "fare": 1.0}], SCHEMA)
    table = HudiTable.forPath(spark, str(root))
    m = table.merge(source, "t.id = s.id").whenMatchedUpdateAll()
    with pytest.raises(ConfigError, match=rf"target row \(key {{'id': '{rows[2]['id']}'}}\) "):
        m.execute()  # a source with a key twice
    bad = [
        lambda: table.merge(source, "t.fare = s.fare").whenMatchedDelete().execute(),
        lambda: (
            table.merge(source, "t.id = s.id").whenMatchedUpdate(set={"city": "'la'"}).execute()
        ),
        lambda: (
            table.merge(source, "t.id = s.id").whenMatchedUpdate(set={"fare": "s.nop"}).execute()
        ),
        lambda: table.update("nope > 1", {"fare": "0"}),
        lambda: sql(spark, "DELETE FROM trips_view WHERE fare < 1"),
    ]
    messages = [
        "neither a record key field",
        "assigns the record key",
        r"unknown column 's\.nop'",
        "unknown column 'nope'",
        "a table path",
    ]
    for call, message in zip(bad, messages, strict=True):
        with pytest.raises(ConfigError, match=message):
            call()
    assert snapshot(root) == before
