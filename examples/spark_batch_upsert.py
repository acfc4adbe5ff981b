"""A batch upsert job through the ``hudi_py`` Spark data source.

Writes 200,000 trips into a partitioned MERGE_ON_READ table (bucket index), then upserts a second
batch of updates (some late, carrying an older ``ts``, which must lose) and new trips, and reads
the table back through Spark.

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

import sys
import time

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


def trips(spark: SparkSession, start: int, n: int, ts: int) -> object:
    city = F.element_at(F.array(*[F.lit(c) for c in CITIES]), (F.col("id") % 4 + 1).cast("int"))
    return spark.range(start, start + n, numPartitions=4).select(
        F.format_string("trip-%08d", "id").alias("trip_id"),
        F.lit(ts).cast("long").alias("ts"),
        city.alias("city"),
        (F.rand(seed=start) * 100).alias("fare"),
        F.concat(F.lit("rider-"), (F.col("id") % 997).cast("string")).alias("rider"),
    )


def main(path: str) -> None:
    spark = SparkSession.builder.appName("hudi_py batch upsert").getOrCreate()
    register(spark)

    t0 = time.perf_counter()
    first = trips(spark, 0, 200_000, ts=1)
    # optional: one task per (city, bucket) -> one new file per file group per commit
    cluster_by_bucket(first, OPTIONS).write.format("hudi_py").mode("append").options(
        **OPTIONS
    ).save(path)
    print(f"insert: 200,000 rows in {time.perf_counter() - t0:.1f}s")

    t0 = time.perf_counter()
    updates = trips(spark, 0, 50_000, ts=2)
    late = trips(spark, 50_000, 10_000, ts=0)  # older than what the table holds: ignored
    new = trips(spark, 200_000, 20_000, ts=2)
    # unclustered input is fine too: several tasks then write log files into one file group
    updates.unionByName(late).unionByName(new).write.format("hudi_py").mode("append").options(
        **OPTIONS
    ).save(path)
    print(f"upsert: 80,000 rows in {time.perf_counter() - t0:.1f}s")

    df = spark.read.format("hudi_py").load(path)
    total = df.count()
    by_ts = {r["ts"]: r["count"] for r in df.groupBy("ts").count().collect()}
    print(f"rows: {total:,}  by ts: {dict(sorted(by_ts.items()))}")
    assert total == 220_000, total
    assert by_ts == {1: 150_000, 2: 70_000}, by_ts
    df.groupBy("city").agg(F.count("*").alias("trips"), F.avg("fare").alias("avg_fare")).show()
    spark.stop()


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "/tmp/hudi_trips")
