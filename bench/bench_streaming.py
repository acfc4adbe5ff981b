"""Streaming figure: the ``hudi_py`` sink on ``local[2]``.

1. The main job against Spark's own sink: a file stream of ``--files`` Parquet files of
   ``100,000 x scale`` change events each (keys repeating about four times, a tenth of the
   events late with an older ``event_ts``, the last event of some keys a delete), read with
   ``maxFilesPerTrigger=1`` and ``availableNow``, once into the ``hudi_py`` upsert sink (a MOR
   bucket-index table) and once into Spark's parquet file sink; the wall time of each query,
   best of ``--rounds`` rounds, the sinks alternating. Both sinks are warmed up first (a
   one-file stream each: JVM code paths, Python workers). Every ``hudi_py`` table is then read
   back (``hudi_ds.read``) and checked against the latest-per-key model of the events (row
   count, duplicated keys, every column; :func:`bench.check.compare`).
2. Driver-side commit time per micro-batch as the table grows: small micro-batches into a
   fresh table; the sink's commit (the commit runner's ``streamWriter()`` plus ``commit()``:
   batch-id check, rollback of failed attempts, publishing, inline cleaning/archival) is timed
   inside the commit runner (a sink subclass, :func:`timed_source`) and reported around the 10th and the
   100th commit. It should stay flat: nothing in it grows with the table (archival bounds the
   active timeline).

Run: ``.venv/bin/python -m bench.bench_streaming [--scale 1] [--json FILE]`` (about 2 minutes at
scale 1). Prints a small table, then one JSON line (the last line of stdout; also to ``--json``).
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
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from bench.check import compare, verdict

OPTIONS = {
    "hoodie.table.name": "stream_bench",
    "hoodie.datasource.write.recordkey.field": "event_id",
    "hoodie.datasource.write.partitionpath.field": "region",
    "hoodie.datasource.write.precombine.field": "event_ts",
    "hoodie.datasource.write.table.type": "MERGE_ON_READ",
    "hoodie.bucket.index.num.buckets": "4",
    # compaction stated explicitly: off (MOR tables compact every 5 delta commits by default);
    # this benchmark measures the sink's micro-batches (no background
    # compactor competing for the 2 cores); bench/compaction.py measures compaction
    "hoodie.datasource.compaction.async.enable": "false",
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
        def streamWriter(self, schema: Any, overwrite: bool) -> HudiStreamWriter:
            # create() is HudiStreamWriter's classmethod: it builds a TimedStreamWriter here
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


def event_files(src: Path, files: int, rows: int) -> pa.Table:
    """Write ``files`` Parquet files of ``rows`` change events into ``src``; returns the
    latest-per-key model of them (the row of each key's greatest ``event_ts``, keys whose
    latest event is a delete left out), sorted by ``event_id``.

    Keys repeat about four times; every tenth event is late (a negative ``event_ts``, older
    than any other); the last event of keys with ``key % 29 == 7`` is a delete, never late, so
    it is also the key's greatest ``event_ts`` and the model does not depend on when a delete
    meets the rows it removes.
    """
    n = files * rows
    v = np.arange(n, dtype=np.int64)
    keys = (v * MULT) % max(1, n // 4)
    ts = np.where(v % 10 == 3, v - n, v)
    # the last occurrence of each key (positions in stream order)
    rev_first = np.unique(keys[::-1], return_index=True)[1]
    last = np.zeros(n, bool)
    last[n - 1 - rev_first] = True
    deleted = last & (keys % 29 == 7)
    ts = np.where(deleted, v, ts)
    table = pa.table(
        {
            "event_id": pc.binary_join_element_wise("e", pa.array(keys).cast(pa.string()), ""),
            "event_ts": pa.array(ts),
            "region": pa.array(np.array(["us", "eu", "apac", "latam"])[keys % 4]),
            "amount": pa.array((v % 100_003) / 100),
            "status": pc.binary_join_element_wise("s", pa.array(v % 50).cast(pa.string()), ""),
            "_hoodie_is_deleted": pa.array(deleted),
        }
    )
    src.mkdir(parents=True)
    for f in range(files):
        pq.write_table(table.slice(f * rows, rows), src / f"part-{f:03d}.parquet")
    latest = table.group_by("event_id").aggregate([("event_ts", "max")])
    model = table.join(
        latest.rename_columns(["event_id", "event_ts"]),
        keys=["event_id", "event_ts"],
        join_type="inner",
    )
    model = model.filter(pc.invert(model["_hoodie_is_deleted"])).drop_columns(
        ["_hoodie_is_deleted"]
    )
    return model.select(["event_id", "event_ts", "region", "amount", "status"]).sort_by("event_id")


def file_stream(spark: Any, src: Path, sink: str, out: Path, checkpoint: Path) -> float:
    """Seconds for one ``availableNow`` query: the files of ``src`` (one per micro-batch)
    into ``sink`` (``hudi_py`` or ``parquet``) at ``out``."""
    schema = spark.read.parquet(str(src)).schema
    w = (
        spark.readStream.schema(schema)
        .option("maxFilesPerTrigger", 1)
        .parquet(str(src))
        .writeStream.format(sink)
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
    )
    if sink == "hudi_py":
        w = w.options(**OPTIONS)
    t0 = time.perf_counter()
    q = w.start(str(out))
    q.awaitTermination()
    secs = time.perf_counter() - t0
    if q.exception() is not None:
        raise RuntimeError(str(q.exception()))
    return secs


def sink_vs_parquet(spark: Any, root: Path, files: int, rows: int, rounds: int) -> dict[str, Any]:
    """Part 1: the ``hudi_py`` sink against Spark's parquet sink on the same file stream."""
    import hudi_ds

    model = event_files(root / "events", files, rows)
    event_files(root / "warm-events", 1, min(rows, 10_000))
    for sink in ("parquet", "hudi_py"):
        file_stream(spark, root / "warm-events", sink, root / f"warm-{sink}", root / f"wck-{sink}")
    times: dict[str, list[float]] = {"parquet": [], "hudi_py": []}
    checks = []
    for r in range(rounds):
        for sink in ("parquet", "hudi_py") if r % 2 == 0 else ("hudi_py", "parquet"):
            out = root / f"{sink}-{r}"
            times[sink].append(
                file_stream(spark, root / "events", sink, out, root / f"ck-{sink}-{r}")
            )
            if sink == "hudi_py":
                checks.append(compare(hudi_ds.read(str(out)), model, key="event_id"))
    hudi_s, parquet_s = min(times["hudi_py"]), min(times["parquet"])
    bad = [c for c in checks if not c["correct"]]
    return {
        "stream_files": files,
        "stream_rows_per_file": rows,
        "stream_hudi_s": hudi_s,
        "stream_parquet_s": parquet_s,
        "stream_hudi_runs_s": times["hudi_py"],
        "stream_parquet_runs_s": times["parquet"],
        "stream_ratio": hudi_s / parquet_s,
        "stream_hudi_rows_per_s": files * rows / hudi_s,
        "check": bad[0] if bad else checks[-1],
    }


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--scale", type=float, default=1.0, help="scales the rows per micro-batch")
    ap.add_argument("--files", type=int, default=8, help="files (micro-batches) of the stream")
    ap.add_argument("--rounds", type=int, default=2, help="rounds of the sink comparison")
    ap.add_argument("--json", help="also write the JSON result to this file")
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

        versus = sink_vs_parquet(spark, root, args.files, big, args.rounds)
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
        **versus,
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
        f"| file stream of {args.files} x {big:,} events into hudi_py (upserts, best of "
        f"{args.rounds}) | {versus['stream_hudi_s']:.1f} s, "
        f"{versus['stream_hudi_rows_per_s']:,.0f} rows/s |"
    )
    print(
        f"| the same stream into Spark's parquet sink | {versus['stream_parquet_s']:.1f} s "
        f"(hudi_py / parquet: {versus['stream_ratio']:.2f}x, target <= 1.5x) |"
    )
    print(f"| hudi_py table vs the latest-per-key model | {verdict(versus['check'])} |")
    print(
        f"| driver commit per micro-batch at 10 commits | {at10['commit_ms']:.1f} ms "
        f"({at10['with_writer_ms']:.1f} ms with streamWriter()) |"
    )
    print(
        f"| driver commit per micro-batch at 100 commits | {at100['commit_ms']:.1f} ms "
        f"({at100['with_writer_ms']:.1f} ms with streamWriter()) |"
    )
    if args.json:
        Path(args.json).write_text(json.dumps(res) + "\n")
    print(json.dumps(res))


if __name__ == "__main__":
    main()
