"""Spark writes under a non-bucket index: a new key in two Spark partitions of one write.

Spark's Python data source cannot shuffle the input by key, so each Spark task tags its own
rows; the tasks route new keys to insert slots by a hash of the key (see
``hudi_ds.write.assigner.INSERT_SLOTS``), and the table holds every key once, its winning
version, read back by Spark, ``hudi_ds.read`` and hudi-rs.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any

import hudi
import pyarrow as pa
import pytest

import hudi_ds
from tests.builders import trips
from tests.conftest import assert_rows, table_options

pytestmark = pytest.mark.spark

COLS = ["id", "ts", "city", "fare"]


_rows = partial(trips, key="k{:03d}")


def _model(model: dict[str, tuple], t: pa.Table) -> None:
    for r in t.to_pylist():
        old = model.get(r["id"])
        if old is None or r["ts"] >= old[1]:
            model[r["id"]] = tuple(r[c] for c in COLS)


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_duplicate_new_key_in_two_spark_partitions_is_written_once(
    spark: Any, tmp_path: Path, table_type: str
) -> None:
    path = str(tmp_path / "t")
    opts = {
        **table_options("t", partition="city", buckets=None, table_type=table_type),
        "hoodie.index.type": "SIMPLE",
    }
    model: dict[str, tuple] = {}
    first = _rows(list(range(6)), 5)
    hudi_ds.write(path, first, opts)
    _model(model, first)
    # Spark partition 0 and 1 both hold the new keys 100..105 (partition 0 wins for even
    # keys, 1 for odd ones), an existing key, and keys of their own
    p0 = pa.concat_tables(
        [_rows([100, 102, 104], 9), _rows([101, 103, 105], 2), _rows([1], 6), _rows([200], 5)]
    )
    p1 = pa.concat_tables(
        [_rows([100, 102, 104], 3), _rows([101, 103, 105], 8), _rows([1], 7), _rows([201], 5)]
    )
    # two Spark partitions holding exactly p0 and p1 (parallelize slices a list evenly)
    assert p0.num_rows == p1.num_rows
    rdd = spark.sparkContext.parallelize(
        [tuple(r[c] for c in COLS) for r in (*p0.to_pylist(), *p1.to_pylist())], 2
    )
    df = spark.createDataFrame(rdd, "id string, ts long, city string, fare double")
    placed = df.rdd.glom().map(lambda rows: sorted(r["id"] for r in rows)).collect()
    assert placed == [sorted(p0.column("id").to_pylist()), sorted(p1.column("id").to_pylist())]
    df.write.format("hudi_py").mode("append").options(**opts).save(path)
    _model(model, pa.concat_tables([p0, p1]))
    want = list(model.values())
    assert_rows(hudi_ds.read(path, columns=COLS), want, COLS)
    batches = hudi.HudiTableBuilder.from_base_uri(path).build().read(hudi.HudiReadOptions())
    assert_rows(pa.Table.from_batches(batches).select(COLS), want, COLS)
    assert_rows(spark.read.format("hudi_py").load(path).select(*COLS).toArrow(), want, COLS)


def test_batch_write_with_partition_bucket_rules(spark: Any, tmp_path: Path) -> None:
    """A Spark batch write creating a table with partition-level bucket rules: each partition
    gets its rule's file groups; ``cluster_by_bucket`` puts each (partition, bucket) of the
    per-partition counts in one task, so each file group gets one file (upserts of such a
    table: tests/index/test_partition_bucket.py)."""
    from hudi_ds.spark import cluster_by_bucket

    path = str(tmp_path / "t")
    opts = {
        **table_options("t", partition="city", buckets=2, table_type="MERGE_ON_READ"),
        "hoodie.bucket.index.partition.expressions": "^sf$,5;^nyc$,3",
    }
    model: dict[str, tuple] = {}
    rows = _rows(list(range(60)), 1)
    df = spark.createDataFrame(
        [tuple(r[c] for c in COLS) for r in rows.to_pylist()],
        "id string, ts long, city string, fare double",
    ).repartition(3)
    clustered = cluster_by_bucket(df, opts, 4, path)
    clustered.write.format("hudi_py").mode("append").options(**opts).save(path)
    _model(model, rows)
    t = hudi_ds.HudiTable(path)
    counts = {"sf": 5, "nyc": 3}
    for s in t.file_slices():
        assert int(s.file_id[:8]) < counts.get(s.partition_path, 2), s
        assert len(s.log_files) + (s.base_file is not None) == 1  # one task per file group
    by_part: dict[str, set[str]] = {}
    for s in t.file_slices():
        by_part.setdefault(s.partition_path, set()).add(s.file_id[:8])
    assert {p: len(v) for p, v in by_part.items() if p in counts} == counts
    want = list(model.values())
    assert_rows(hudi_ds.read(path, columns=COLS), want, COLS)
    batches = hudi.HudiTableBuilder.from_base_uri(path).build().read(hudi.HudiReadOptions())
    assert_rows(pa.Table.from_batches(batches).select(COLS), want, COLS)
