"""Merge modes, payload classes and a custom merger through Spark: batch writes, the streaming
sink, and ``spark.read``.

Inputs are repartitioned into several Spark partitions, so COW writes go through the staging
path (tasks stage rows, the commit merges each file group once) and MOR writes put several log
files of one instant into a file group: the merge engine runs on the committing driver and in
the readers' tasks.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import hudi_ds
from tests.conftest import table_options

pytestmark = pytest.mark.spark

TYPES = ["MERGE_ON_READ", "COPY_ON_WRITE"]
CLASSES_KEY = "hoodie.write.record.merge.custom.implementation.classes"
CUSTOM = "tests.merge.test_custom.CounterMerger"
SCHEMA = pa.schema(
    [("id", pa.string()), ("ts", pa.int64()), ("name", pa.string()), ("price", pa.string())]
)


def opts(table_type: str, **extra: str) -> dict[str, str]:
    return {
        **table_options("m", table_type=table_type),
        **extra,
    }


def save(
    spark: Any, rows: list[dict[str, Any]], path: str, o: dict[str, str], schema=SCHEMA
) -> None:
    df = spark.createDataFrame(pa.Table.from_pylist(rows, schema=schema)).repartition(3)
    df.write.format("hudi_py").mode("append").options(**o).save(path)


def spark_rows(spark: Any, path: str, **read_opts: str) -> dict[str, dict[str, Any]]:
    t = spark.read.format("hudi_py").options(**read_opts).load(path).toArrow()
    return {
        r["id"]: {k: v for k, v in r.items() if not k.startswith("_hoodie")} for r in t.to_pylist()
    }


def row(id_: str, ts: int, name: str | None, price: str | None) -> dict[str, Any]:
    return {"id": id_, "ts": ts, "name": name, "price": price}


CASES = {
    "COMMIT_TIME_ORDERING": (
        {"hoodie.write.record.merge.mode": "COMMIT_TIME_ORDERING"},
        row("1", 1, None, "price_1"),
    ),
    "DefaultHoodieRecordPayload": (
        {
            "hoodie.datasource.write.payload.class": "org.apache.hudi.common.model.DefaultHoodieRecordPayload"
        },
        row("1", 2, "name_1", None),
    ),
    "PartialUpdateAvroPayload": (
        {
            "hoodie.datasource.write.payload.class": "org.apache.hudi.common.model.PartialUpdateAvroPayload"
        },
        row("1", 2, "name_1", "price_1"),
    ),
}


@pytest.mark.parametrize("table_type", TYPES)
@pytest.mark.parametrize("case", sorted(CASES))
def test_seed_examples_through_spark(
    spark: Any, tmp_path: Path, table_type: str, case: str
) -> None:
    extra, expected = CASES[case]
    p = str(tmp_path / "t")
    o = opts(table_type, **extra)
    save(spark, [row("1", 2, "name_1", None), row("2", 1, "x", "y")], p, o)
    save(spark, [row("1", 1, None, "price_1")], p, o)
    assert spark_rows(spark, p)["1"] == expected
    assert hudi_ds.read(p).to_pylist()[0]["id"] in ("1", "2")


@pytest.mark.parametrize("table_type", TYPES)
def test_order_status_story_through_spark(spark: Any, tmp_path: Path, table_type: str) -> None:
    p = str(tmp_path / "t")
    o = opts(table_type)
    schema = pa.schema([("id", pa.string()), ("ts", pa.int64()), ("status", pa.string())])
    for ts, status in ((10, "created"), (30, "paid"), (20, "created")):
        save(spark, [{"id": "o1", "ts": ts, "status": status}], p, o, schema)
    assert spark_rows(spark, p)["o1"]["status"] == "paid"


CSCHEMA = pa.schema(
    [("id", pa.string()), ("count", pa.int64()), ("last_seen", pa.int64()), ("who", pa.string())]
)


def copts(table_type: str) -> dict[str, str]:
    return {
        **table_options("c", precombine=None, table_type=table_type),
        "hoodie.write.record.merge.mode": "CUSTOM",
        CLASSES_KEY: CUSTOM,
    }


def crow(id_: str, count: int, seen: int, who: str) -> dict[str, Any]:
    return {"id": id_, "count": count, "last_seen": seen, "who": who}


@pytest.mark.parametrize("table_type", TYPES)
def test_custom_merger_through_spark_batch_writes(
    spark: Any, tmp_path: Path, table_type: str
) -> None:
    p = str(tmp_path / "t")
    o = copts(table_type)
    save(spark, [crow(f"k{i}", 1, i, "a") for i in range(20)], p, o, CSCHEMA)
    save(spark, [crow(f"k{i % 10}", 2, 100 - i, "b") for i in range(20)], p, o, CSCHEMA)
    got = spark_rows(spark, p, **{CLASSES_KEY: CUSTOM})
    assert {k: (v["count"], v["last_seen"]) for k, v in got.items()} == {
        **{f"k{i}": (5, 100 - i) for i in range(10)},
        **{f"k{i}": (1, i) for i in range(10, 20)},
    }
    ours = hudi_ds.read(p, {CLASSES_KEY: CUSTOM})
    assert sorted(ours.column("count").to_pylist()) == sorted(v["count"] for v in got.values())


def test_custom_merger_through_the_streaming_sink(spark: Any, tmp_path: Path) -> None:
    src, table, checkpoint = (str(tmp_path / n) for n in ("src", "t", "ck"))
    Path(src).mkdir()
    for b in range(3):
        rows = [crow(f"k{i}", 1, 10 * b + i, f"b{b}") for i in range(5)]
        pq.write_table(pa.Table.from_pylist(rows, schema=CSCHEMA), f"{src}/part-{b}.parquet")
        # the file source orders files by modification time: make the order explicit
        os.utime(f"{src}/part-{b}.parquet", (1_700_000_000 + b, 1_700_000_000 + b))
    events = (
        spark.readStream.schema(spark.createDataFrame(CSCHEMA.empty_table()).schema)
        .option("maxFilesPerTrigger", 1)
        .parquet(src)
    )
    q = (
        events.writeStream.format("hudi_py")
        .options(**copts("MERGE_ON_READ"))
        .option("checkpointLocation", checkpoint)
        .trigger(availableNow=True)
        .start(table)
    )
    q.awaitTermination()
    got = hudi_ds.read(table, {CLASSES_KEY: CUSTOM}).to_pylist()
    assert {r["id"]: (r["count"], r["last_seen"], r["who"]) for r in got} == {
        f"k{i}": (3, 20 + i, "b2") for i in range(5)
    }
