"""Streaming figure: the ``hudi_py`` sink on ``local[2]``.

1. Sustained rows/s: upsert micro-batches of change events (inserts, updates, late updates,
   deletes; the demo's event formula) from Spark's ``rate-micro-batch`` source into a MOR
   bucket-index table. The first micro-batch (Python worker start) is not counted.
2. Driver-side commit time per micro-batch as the table grows: small micro-batches into a
   fresh table; the sink's commit (the commit runner's ``streamWriter()`` plus ``commit()``:
   batch-id check, rollback of failed attempts, publishing, inline cleaning/archival) is timed
   inside the commit runner (a sink subclass, :func:`timed_source`) and reported around the 10th and the
   100th commit. It should stay flat: nothing in it grows with the table (archival bounds the
   active timeline).

Run: ``.venv/bin/python -m bench.bench_streaming [--scale 1]`` (about 2 minutes at scale 1).
Prints a small table, then one JSON line (the last line of stdout).
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

OPTIONS = {
    "hoodie.table.name": "stream_bench",
    "hoodie.datasource.write.recordkey.field": "event_id",
    "hoodie.datasource.write.partitionpath.field": "region",
    "hoodie.datasource.write.precombine.field": "event_ts",
    "hoodie.datasource.write.table.type": "MERGE_ON_READ",
    "hoodie.bucket.index.num.buckets": "4",
}
MULT = 2_654_435_761
#: the file the commit runner appends one JSON line per driver-side commit to
METRICS_ENV = "HUDI_PY_STREAM_METRICS"


def timed_source() -> type:
    """``hudi_py`` whose stream writer appends ``{batch, instant, commit_s, writer_s, rows}`` to
    the file named by ``METRICS_ENV`` after each published micro-batch.

    The classes are local, so Spark pickles them by value into the commit runner (which
    inherits the environment of the session).
    """
    from hudi_ds.spark.datasource import HudiDataSource
    from hudi_ds.spark.streaming import HudiStreamWriter

    class TimedStreamWriter(HudiStreamWriter):
        def commit(self, messages: Any, batchId: int) -> None:
            self.commit_started = time.perf_counter()
            super().commit(messages, batchId)

        def publish(self, instant: str, messages: Any, batch_id: int) -> None:
            super().publish(instant, messages, batch_id)
            path = os.environ.get(METRICS_ENV)
            if not path:
                return
            line = {
                "batch": batch_id,
                "instant": instant,
                # commit(): checks, rollback, publish, table services
                "commit_s": round(time.perf_counter() - self.commit_started, 4),
                "writer_s": round(self.setup_seconds, 4),  # the commit runner's streamWriter()
                "rows": sum(
                    s.stat.num_writes + s.stat.num_deletes for m in messages for s in m.statuses
                ),
            }
            with open(path, "a") as f:
                f.write(json.dumps(line) + "\n")

    class TimedDataSource(HudiDataSource):
        def streamWriter(self, schema: Any, overwrite: bool) -> TimedStreamWriter:
            return TimedStreamWriter.create(self.options, schema, overwrite)

    return TimedDataSource


def session() -> Any:
    from hudi_ds.spark.session import local_session

    spark = local_session(
        "hudi_ds-bench-streaming", **{"spark.sql.streaming.numRecentProgressUpdates": "1000"}
    )
    spark.dataSource.register(timed_source())  # replaces the plain hudi_py
    return spark


def events(spark: Any, rows_per_batch: int, total: int, keys: int) -> Any:
    """Change events from ``rate-micro-batch`` (values >= total are filtered out)."""
    from pyspark.sql import functions as F

    v = F.col("value")
    key = F.pmod(v * F.lit(MULT), F.lit(keys))
    return (
        spark.readStream.format("rate-micro-batch")
        .option("rowsPerBatch", rows_per_batch)
        .option("numPartitions", 2)
        .load()
        .where(v < total)
        .select(
            F.format_string("e%08d", key).alias("event_id"),
            F.when(F.pmod(v, 10) == 3, v - F.lit(keys)).otherwise(v).alias("event_ts"),
            F.element_at(
                F.array(*map(F.lit, ["us", "eu", "apac", "latam"])),
                (F.pmod(key, 4) + 1).cast("int"),
            ).alias("region"),
            (F.pmod(v, 100_003).cast("double") / 100).alias("amount"),
            F.format_string("s%d", F.pmod(v, 50)).alias("status"),
            (F.pmod(v, 29) == 7).alias("_hoodie_is_deleted"),
        )
    )


def run(spark: Any, root: Path, name: str, batches: int, rows: int, keys: int) -> list[dict]:
    """Stream ``batches`` micro-batches of ``rows`` events; returns their progress reports."""
    q = (
        events(spark, rows, batches * rows, keys)
        .writeStream.format("hudi_py")
        .options(**OPTIONS)
        .option("checkpointLocation", str(root / f"ck-{name}"))
        .start(str(root / name))
    )
    try:
        while True:
            q.awaitTermination(0.5)
            if q.exception() is not None:
                raise RuntimeError(str(q.exception()))
            done = {p["batchId"] for p in q.recentProgress}
            if all(b in done for b in range(batches)):
                break
    finally:
        q.stop()
    return sorted(
        (p for p in q.recentProgress if p["batchId"] < batches), key=lambda p: p["batchId"]
    )


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--scale", type=float, default=1.0, help="scales the rows per micro-batch")
    ap.add_argument("--batches", type=int, default=12, help="throughput micro-batches")
    ap.add_argument("--commits", type=int, default=105, help="micro-batches of the commit test")
    args = ap.parse_args(argv)
    big = max(1_000, int(100_000 * args.scale))
    small = max(100, int(2_000 * args.scale))
    with tempfile.TemporaryDirectory(prefix="bench-streaming-") as d:
        root = Path(d)
        metrics = root / "commits.jsonl"
        os.environ[METRICS_ENV] = str(metrics)
        t0 = time.perf_counter()
        spark = session()
        startup = time.perf_counter() - t0

        prog = run(spark, root, "throughput", args.batches, big, keys=big * 4)
        steady = prog[1:]
        secs = sum(p["durationMs"]["triggerExecution"] for p in steady) / 1000
        rows_per_s = big * len(steady) / secs
        per_batch_ms = [p["durationMs"]["triggerExecution"] for p in steady]
        metrics.unlink(missing_ok=True)

        run(spark, root, "commits", args.commits, small, keys=small * 20)
        lines = [json.loads(x) for x in metrics.read_text().splitlines()]
        by_batch = {m["batch"]: m for m in lines}
        spark.stop()

    def around(n: int) -> dict[str, float]:
        sel = [by_batch[b] for b in range(max(0, n - 3), n + 2) if b in by_batch]
        commit = float(np.median([m["commit_s"] for m in sel])) * 1000
        total = float(np.median([m["commit_s"] + m["writer_s"] for m in sel])) * 1000
        return {"commit_ms": round(commit, 1), "with_writer_ms": round(total, 1)}

    at10, at100 = around(10), around(100)
    res = {
        "system": "hudi_ds_streaming",
        "scale": args.scale,
        "spark_startup_s": round(startup, 1),
        "throughput_batches": args.batches,
        "rows_per_batch": big,
        "rows_per_s": round(rows_per_s),
        "batch_ms_p50": float(np.percentile(per_batch_ms, 50)),
        "batch_ms_max": float(max(per_batch_ms)),
        "commit_rows_per_batch": small,
        "commits": len(lines),
        "commit_ms_at_10": at10["commit_ms"],
        "commit_ms_at_100": at100["commit_ms"],
        "commit_with_writer_ms_at_10": at10["with_writer_ms"],
        "commit_with_writer_ms_at_100": at100["with_writer_ms"],
    }
    print("| hudi_py streaming sink, local[2] | value |")
    print("|---|---|")
    print(
        f"| sustained upserts ({args.batches - 1} x {big:,} events) | "
        f"{rows_per_s:,.0f} rows/s (batch p50 {res['batch_ms_p50']:,.0f} ms) |"
    )
    print(
        f"| driver commit per micro-batch at 10 commits | {at10['commit_ms']:.1f} ms "
        f"({at10['with_writer_ms']:.1f} ms with streamWriter()) |"
    )
    print(
        f"| driver commit per micro-batch at 100 commits | {at100['commit_ms']:.1f} ms "
        f"({at100['with_writer_ms']:.1f} ms with streamWriter()) |"
    )
    print(json.dumps(res))


if __name__ == "__main__":
    main()
