"""A spark-submit job for tests/spark/test_cluster.py: an upsert whose task stops mid-write.

``cluster_kill_job.py TABLE SIGNAL_DIR ROWS``: inserts ROWS rows (``id`` ``k<n>``, ``ts`` 1) in
one commit, then upserts every row again with ``ts`` 2 plus ROWS new rows, from two Spark
partitions (ROWS must exceed ``CHUNK_ROWS`` + 20,000). The first attempt of partition 0 sends
more than one task-writer chunk (``hudi_ds.spark.writer.CHUNK_ROWS``), waits until its writer
has written a log file (named with the task's write token
``<partition>-<stage>-<task attempt id>``), writes ``SIGNAL_DIR/writing`` with its process id,
and then waits to be killed: the test SIGKILLs the worker and the executor running it. Spark
runs the partition again on the other worker; that attempt does not wait.

Prints a JSON line ``{"commits": [...], "hudi_ds_on_executors": [...]}`` at the end: the
completed instants, and where the executors' Python workers imported ``hudi_ds`` from (the job
is submitted without --py-files or --archives: from the installed environment).
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
from pyspark import TaskContext
from pyspark.sql import SparkSession

from hudi_ds.spark import register
from hudi_ds.spark.writer import CHUNK_ROWS

OPTIONS = {
    "hoodie.table.name": "kill",
    "hoodie.datasource.write.recordkey.field": "id",
    "hoodie.datasource.write.partitionpath.field": "part",
    "hoodie.datasource.write.precombine.field": "ts",
    "hoodie.datasource.write.table.type": "MERGE_ON_READ",
    "hoodie.bucket.index.num.buckets": "2",
    # a 1 MB task budget: the task writer flushes log blocks while the task still runs
    "write.task.max.size": "1",
}
SCHEMA = "id string, ts long, part string, v long"


def rows(lo: int, hi: int, ts: int) -> pa.RecordBatch:
    """Rows ``lo .. hi``: ``id`` k<n>, ``ts``, ``part`` p<n % 2>, ``v`` = n * 10 + ts."""
    n = pa.array(range(lo, hi), pa.int64())
    return pa.RecordBatch.from_pydict(
        {
            "id": pa.array([f"k{i:07d}" for i in range(lo, hi)]),
            "ts": pa.array([ts] * (hi - lo), pa.int64()),
            "part": pa.array([f"p{i % 2}" for i in range(lo, hi)]),
            "v": pa.compute.add(pa.compute.multiply(n, 10), ts),
        }
    )


def main(table: str, signal_dir: str, total: int) -> None:
    spark = SparkSession.builder.appName("hudi_py worker kill").getOrCreate()
    register(spark)
    root = Path(table)

    def insert(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for _ in batches:
            pass
        part = TaskContext.get().partitionId()
        yield rows(part * total // 2, (part + 1) * total // 2, 1)

    def upsert(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        """Partition 0 updates ids 0..total, partition 1 inserts total..2*total."""
        for _ in batches:
            pass
        ctx = TaskContext.get()
        part = ctx.partitionId()
        lo, hi = part * total, (part + 1) * total
        if part != 0 or ctx.attemptNumber() > 0:
            yield rows(lo, hi, 2)
            return
        # more than one chunk: the task writer writes the first one while this waits (Spark
        # hands the writer full batches of maxRecordsPerBatch = 10,000 rows: 2 batches more)
        cut = lo + CHUNK_ROWS + 20_000
        yield rows(lo, cut, 2)
        token = f"_{part}-{ctx.stageId()}-{ctx.taskAttemptId()}"
        end = time.monotonic() + 300
        while time.monotonic() < end:
            mine = [p for p in root.glob("p*/*") if p.name.endswith(token) and p.stat().st_size > 0]
            if mine:
                break
            time.sleep(0.1)
        (Path(signal_dir) / "writing.tmp").write_text(str(os.getpid()))
        os.replace(Path(signal_dir) / "writing.tmp", Path(signal_dir) / "writing")
        time.sleep(600)  # killed here
        yield rows(cut, hi, 2)

    for gen in (insert, upsert):
        df = spark.range(2, numPartitions=2).mapInArrow(gen, SCHEMA)
        df.write.format("hudi_py").mode("append").options(**OPTIONS).save(table)
    import hudi_ds

    commits = [i.requested_time for i in hudi_ds.HudiTable(table).timeline.commits()]

    def where(_: Iterator[int]) -> Iterator[str]:
        import hudi_ds

        yield os.path.abspath(os.path.dirname(hudi_ds.__file__))

    sc = spark.sparkContext
    paths = sorted(set(sc.parallelize(range(2), 2).mapPartitions(where).collect()))
    spark.stop()
    print(json.dumps({"commits": commits, "hudi_ds_on_executors": paths}))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]))
