"""Spark writes into tables hudi_ds creates under every index type and both table types.

Each case, all through ``df.write.format("hudi_py")`` with every DataFrame spread over two Spark
partitions: a first write; an upsert (updates of existing keys -- some with an older ``ts``,
which lose under the event-time ordering a table with a precombine field merges by --, new keys,
a new partition value); an ``operation=delete`` of some keys (one the table does not hold). The
table, read back by ``hudi_ds.read`` and by hudi-rs, equals an independent model (key -> row).
A global index (GLOBAL_SIMPLE, GLOBAL_BLOOM) also moves a key upserted with another partition
value and a newer ``ts`` to the new partition (``hoodie.*.index.update.partition.path``
defaults to true), leaving nothing in the old one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import hudi_ds
from tests import builders
from tests.conftest import assert_rows, hudi_rs_table

pytestmark = pytest.mark.spark

COLS = ["id", "ts", "city", "fare"]
SCHEMA = "id string, ts long, city string, fare double"
INDEXES = ["BUCKET", "SIMPLE", "GLOBAL_SIMPLE", "BLOOM", "GLOBAL_BLOOM"]
TABLE_TYPES = ["COPY_ON_WRITE", "MERGE_ON_READ"]

Row = tuple[str, int, str, float]


def _options(index: str, table_type: str) -> dict[str, str]:
    buckets = 2 if index == "BUCKET" else None
    return builders.options("idx", table_type, partition="city", index=index, buckets=buckets)


def _save(spark: Any, rows: list[Row], path: str, options: dict[str, str]) -> None:
    """Write ``rows`` through Spark, split into exactly two Spark partitions."""
    df = spark.createDataFrame(spark.sparkContext.parallelize(rows, 2), SCHEMA)
    assert df.rdd.getNumPartitions() == 2
    df.write.format("hudi_py").mode("append").options(**options).save(path)


def _upsert(model: dict[str, Row], rows: list[Row]) -> None:
    """The model of an upsert: per key the row with the greatest ``ts`` (a tie goes to the
    incoming row, as Hudi's ``DefaultHoodieRecordPayload`` does for an equal ordering value)."""
    for row in rows:
        old = model.get(row[0])
        if old is None or row[1] >= old[1]:
            model[row[0]] = row


def _check(path: str, model: dict[str, Row]) -> None:
    want = list(model.values())
    assert_rows(hudi_ds.read(path, columns=COLS), want, COLS)
    assert_rows(hudi_rs_table(path).select(COLS), want, COLS)


def _recorded_index(path: str) -> str | None:
    """The ``hoodie.index.type`` the table's ``hoodie.properties`` records."""
    text = (Path(path) / ".hoodie" / "hoodie.properties").read_text()
    props = dict(line.split("=", 1) for line in text.splitlines() if "=" in line)
    return props.get("hoodie.index.type")


def _row(i: int, ts: int, city: str) -> Row:
    return (f"k{i:03d}", ts, city, float(i * 1000 + ts))


def _city(i: int) -> str:
    return "sf" if i % 2 else "nyc"


#: the (index, table type) pairs ``make test`` runs; the other three are ``stress`` cases
#: (``make test-stress``). Through Spark the index decides one thing, bucket or not (a non-bucket
#: upsert stages its new keys into insert slots, hudi_ds/spark/writer.py), so BUCKET and SIMPLE
#: run on both table types and every other index on one; the lookups themselves run in the
#: task writer embedded writes use, which tests/write/test_index_writes.py runs under every index
#: and table type with non-exclusive tasks as Spark's, and the global indexes write through
#: Spark on both table types below (test_spark_global_index_moves_key_to_new_partition).
DEFAULT_PAIRS = {
    ("BUCKET", "COPY_ON_WRITE"),
    ("BUCKET", "MERGE_ON_READ"),
    ("SIMPLE", "COPY_ON_WRITE"),
    ("SIMPLE", "MERGE_ON_READ"),
    ("GLOBAL_SIMPLE", "MERGE_ON_READ"),
    ("BLOOM", "COPY_ON_WRITE"),
    ("GLOBAL_BLOOM", "MERGE_ON_READ"),
}


@pytest.mark.parametrize(
    ("index", "table_type"),
    [
        pytest.param(
            index,
            table_type,
            id=f"{index}-{table_type}",
            marks=() if (index, table_type) in DEFAULT_PAIRS else pytest.mark.stress,
        )
        for index in INDEXES
        for table_type in TABLE_TYPES
    ],
)
def test_spark_upsert_and_delete_under_index(
    spark: Any, tmp_path: Path, index: str, table_type: str
) -> None:
    path = str(tmp_path / "t")
    options = _options(index, table_type)
    model: dict[str, Row] = {}

    first = [_row(i, 10, _city(i)) for i in range(20)]
    _save(spark, first, path, options)
    _upsert(model, first)
    assert _recorded_index(path) == index
    _check(path, model)

    upsert = (
        [_row(i, 20, _city(i)) for i in range(0, 8)]  # newer: win
        + [_row(i, 5, _city(i)) for i in range(8, 14)]  # older: lose
        # equal ts, another fare: the incoming row wins (Java DefaultHoodieRecordPayload
        # #needUpdatingPersistedRecord: persisted <= incoming)
        + [(f"k{i:03d}", 10, _city(i), -1.0 * i) for i in (14, 15)]
        + [_row(i, 12, _city(i)) for i in range(20, 26)]  # new keys, old partitions
        + [_row(i, 12, "la") for i in range(30, 36)]  # new keys, a new partition
    )
    _save(spark, upsert, path, options)
    _upsert(model, upsert)
    # the older updates really lost (the model is not just the last write)
    assert model["k008"] == _row(8, 10, "nyc") and model["k014"] == ("k014", 10, "nyc", -14.0)
    _check(path, model)

    gone = ["k001", "k004", "k009", "k021", "k032"]
    # a delete row carries the key's partition (a non-global index looks the key up there)
    deletes = [(k, 30, model[k][2], 0.0) for k in gone] + [("k999", 30, "nyc", 0.0)]
    _save(spark, deletes, path, {**options, "hoodie.datasource.write.operation": "delete"})
    for k in gone:
        del model[k]
    assert len(model) == 27
    _check(path, model)


@pytest.mark.parametrize("table_type", TABLE_TYPES)
@pytest.mark.parametrize("index", ["GLOBAL_SIMPLE", "GLOBAL_BLOOM"])
def test_spark_global_index_moves_key_to_new_partition(
    spark: Any, tmp_path: Path, index: str, table_type: str
) -> None:
    path = str(tmp_path / "t")
    options = _options(index, table_type)
    model: dict[str, Row] = {}
    first = [_row(i, 10, _city(i)) for i in range(12)]
    _save(spark, first, path, options)
    _upsert(model, first)

    # k002 (nyc) and k003 (sf) move to "la" and "nyc" with a newer ts; k004 stays put
    moved = [_row(2, 20, "la"), _row(3, 20, "nyc"), _row(4, 20, "nyc"), _row(40, 20, "la")]
    _save(spark, moved, path, options)
    for row in moved:  # a global index keys by record key alone: the row replaces the old one
        model[row[0]] = row
    _check(path, model)
    # the moved keys' records sit in their new partitions only (no copy left behind)
    for table in (hudi_ds.read(path), hudi_rs_table(path)):
        where = dict(
            zip(
                table.column("_hoodie_record_key").to_pylist(),
                table.column("_hoodie_partition_path").to_pylist(),
                strict=True,
            )
        )
        assert table.num_rows == len(model)
        assert (where["k002"], where["k003"], where["k004"]) == ("la", "nyc", "nyc")
