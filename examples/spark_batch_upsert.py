"""A batch upsert job through the ``hudi_py`` Spark data source.

Writes 200,000 trips (``--rows``) into a partitioned MERGE_ON_READ table (bucket index), then
upserts a second batch of updates (some late, carrying an older ``ts``, which must lose) and new
trips, reads the table back through Spark and checks every row against the expected state
(:func:`expected`). The last line printed is a JSON summary, including where the executors
imported ``hudi_ds`` from (to check how the package was shipped).

Local run (the package must be importable by Spark's Python workers)::

    PYSPARK_PYTHON=$PWD/.venv/bin/python .venv/bin/spark-submit --master 'local[*]' \\
        --conf spark.ui.enabled=false examples/spark_batch_upsert.py /tmp/hudi_trips

On a cluster the executors need ``hudi_ds`` too, either

* installed in the Python environment every node runs (e.g. a packed venv:
  ``--archives venv.tar.gz#env --conf spark.pyspark.python=./env/bin/python``), in which case
  the ``pyspark_hudi_py`` module even registers the format by itself, or
* shipped as a zip: ``(cd /path/to/repo && zip -r /tmp/hudi_ds.zip hudi_ds)`` then
  ``spark-submit --py-files /tmp/hudi_ds.zip ...``; the job then calls
  ``hudi_ds.spark.register(spark)`` (automatic registration does not see ``--py-files``).
  pyarrow, numpy and fastavro must be installed on the nodes.

The table path must be on storage that every node sees (HDFS, S3 ``s3://...``, GCS, NFS).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any

import numpy as np
import pyarrow as pa
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from hudi_ds.spark import cluster_by_bucket, register

OPTIONS = {
    "hoodie.table.name": "trips",
    "hoodie.datasource.write.recordkey.field": "trip_id",
    "hoodie.datasource.write.partitionpath.field": "city",
    "hoodie.datasource.write.precombine.field": "ts",
    "hoodie.datasource.write.table.type": "MERGE_ON_READ",
    "hoodie.bucket.index.num.buckets": "8",
}
CITIES = ["san_francisco", "sao_paulo", "chennai", "amsterdam"]
COLUMNS = ["trip_id", "ts", "city", "fare", "rider"]


def trips(spark: SparkSession, start: int, n: int, ts: int) -> Any:
    """Trips ``start .. start+n`` with event time ``ts``: every value a function of the id."""
    city = F.element_at(F.array(*[F.lit(c) for c in CITIES]), (F.col("id") % 4 + 1).cast("int"))
    return spark.range(start, start + n, numPartitions=4).select(
        F.format_string("trip-%08d", "id").alias("trip_id"),
        F.lit(ts).cast("long").alias("ts"),
        city.alias("city"),
        ((F.col("id") * 7919 % 10_000) / 100 + ts).alias("fare"),
        F.concat(F.lit("rider-"), (F.col("id") % 997).cast("string")).alias("rider"),
    )


def batches(rows: int) -> tuple[int, int, int, int]:
    """Sizes of the upsert: (updates of existing trips, late updates, new trips, first new id)."""
    return rows // 4, rows // 20, rows // 10, rows


def expected(rows: int) -> pa.Table:
    """The table after :func:`main`, computed in numpy (sorted by ``trip_id``)."""
    updates, _late, new, first_new = batches(rows)
    ids = np.concatenate([np.arange(rows), np.arange(first_new, first_new + new)])
    ts = np.where(ids < updates, 2, 1)
    ts[rows:] = 2
    return pa.table(
        {
            "trip_id": pa.array([f"trip-{i:08d}" for i in ids]),
            "ts": pa.array(ts, pa.int64()),
            "city": pa.array(np.array(CITIES)[ids % 4]),
            "fare": pa.array((ids * 7919 % 10_000) / 100 + ts),
            "rider": pa.array([f"rider-{i % 997}" for i in ids]),
        }
    ).sort_by("trip_id")


def executor_imports(spark: SparkSession) -> list[str]:
    """Where the executors' Python workers import ``hudi_ds`` from (distinct paths)."""

    def where(_: Any) -> Any:
        import hudi_ds

        yield os.path.abspath(os.path.dirname(hudi_ds.__file__))

    n = max(2, spark.sparkContext.defaultParallelism)
    return sorted(set(spark.sparkContext.parallelize(range(n), n).mapPartitions(where).collect()))


def main(path: str, rows: int = 200_000) -> dict[str, Any]:
    spark = SparkSession.builder.appName("hudi_py batch upsert").getOrCreate()
    register(spark)
    updates, late, new, first_new = batches(rows)

    t0 = time.perf_counter()
    first = trips(spark, 0, rows, ts=1)
    # optional: one task per (city, bucket) -> one new file per file group per commit
    cluster_by_bucket(first, OPTIONS).write.format("hudi_py").mode("append").options(
        **OPTIONS
    ).save(path)
    t_insert = time.perf_counter() - t0
    print(f"insert: {rows:,} rows in {t_insert:.1f}s")

    t0 = time.perf_counter()
    changes = (
        trips(spark, 0, updates, ts=2)
        .unionByName(trips(spark, updates, late, ts=0))  # older than the table's: ignored
        .unionByName(trips(spark, first_new, new, ts=2))
    )
    # unclustered input is fine too: several tasks then write log files into one file group
    changes.write.format("hudi_py").mode("append").options(**OPTIONS).save(path)
    t_upsert = time.perf_counter() - t0
    print(f"upsert: {updates + late + new:,} rows in {t_upsert:.1f}s")

    t0 = time.perf_counter()
    df = spark.read.format("hudi_py").load(path)
    got = df.select(*COLUMNS).toArrow().sort_by("trip_id")
    t_read = time.perf_counter() - t0
    want = expected(rows)
    ok = got.cast(want.schema).equals(want)
    print(f"rows: {got.num_rows:,} (expected {want.num_rows:,}); rows equal: {ok}")
    df.groupBy("city").agg(F.count("*").alias("trips"), F.avg("fare").alias("avg_fare")).show()
    summary = {
        "rows": got.num_rows,
        "equal": ok,
        "insert_s": round(t_insert, 2),
        "upsert_s": round(t_upsert, 2),
        "read_s": round(t_read, 2),
        "master": spark.sparkContext.master,
        "hudi_ds_on_executors": executor_imports(spark),
    }
    spark.stop()
    return summary


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("path", nargs="?", default="/tmp/hudi_trips")
    ap.add_argument("--rows", type=int, default=200_000, help="trips of the first write")
    a = ap.parse_args()
    result = main(a.path, a.rows)
    print(json.dumps(result))
    sys.exit(0 if result["equal"] else 1)
