"""The main job: a Spark Structured Streaming pipeline of change events into a Hudi table.

A generated stream of change events (Spark's ``rate-micro-batch`` source, turned into events by
SQL) -- inserts, updates, late updates carrying an older event time, deletes -- is upserted by
the ``hudi_py`` streaming sink into a partitioned MERGE_ON_READ table with the bucket index
under ``demo_output/events`` (one micro-batch = one instant, exactly once; inline compaction
every 10 delta commits, cleaning, archival). Progress is printed per micro-batch; the summary
gives commits, rows, file groups and the latency per batch.

Then a second streaming query reads the table back through the ``hudi_py`` streaming source
(incremental, 5 commits per micro-batch, deletes emitted) and replays the change stream.

Checks: the snapshot -- read by hudi_ds, by Spark through ``hudi_py`` and by hudi-rs -- equals
the expected state computed in numpy from the same event formula, and replaying the change
stream reproduces it. Exit code 0 when everything matches.

Run: ``make demo`` (``.venv/bin/python examples/demo.py``). It ends by printing how to read the
table with hudi_ds, with Spark and with the ``hudi-py`` CLI (absolute paths, ready to paste).

On a cluster, through ``spark-submit`` (the master comes from ``--master``; ``--out`` must be on
storage every node sees)::

    .venv/bin/spark-submit --master spark://HOST:7077 \\
        --conf spark.pyspark.python=$PWD/.venv/bin/python examples/demo.py --out /shared/demo

``--batches``/``--rows-per-batch``/``--keys`` size the run; the checks are printed as one line
of JSON (the last line that starts with ``{``).

``make demo STORE=s3`` (``examples/demo.py --store s3``) runs the same pipeline against a local
S3 server it starts and stops (moto in server mode, from the dev extra): the table lives at
``s3://hudi-demo/events``, Spark's sink and source, hudi_ds and hudi-rs all reach it with the
same ``storage_options`` (``aws_endpoint_url``, ``aws_access_key_id``, ...), passed to Spark as
data source options. Spark's streaming checkpoints stay on local disk under ``demo_output``.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

ROOT = Path(__file__).resolve().parents[1]
LATE_EVERY, LATE_BY = 10, 300_000  # every 10th event is 300k events late: it loses
DELETE_EVERY = 29
MULT = 2_654_435_761  # prime: value -> key is a permutation of each keys-long window
REGIONS = ["us", "eu", "apac", "latam"]
STATUSES = ["new", "paid", "shipped"]
OPTIONS = {
    "hoodie.table.name": "events",
    "hoodie.datasource.write.recordkey.field": "event_id",
    "hoodie.datasource.write.partitionpath.field": "region",
    "hoodie.datasource.write.precombine.field": "event_ts",
    "hoodie.datasource.write.table.type": "MERGE_ON_READ",
    "hoodie.bucket.index.num.buckets": "4",
    "hoodie.datasource.write.streaming.checkpoint.identifier": "demo_events",
    "hoodie.compact.inline": "true",
    "hoodie.compact.inline.max.delta.commits": "10",
}
COLUMNS = ["event_id", "event_ts", "region", "amount", "status"]


@dataclass(frozen=True)
class Plan:
    """The size of a run and where it writes."""

    out: Path = ROOT / "demo_output"
    batches: int = 24
    rows_per_batch: int = 25_000
    keys: int = 200_000  # each key comes back every ``keys`` events (3 versions per key)
    #: the table's URI when it is not under ``out`` (``--store s3``), and its storage options
    uri: str = ""
    storage: dict[str, str] = field(default_factory=dict)

    @property
    def total(self) -> int:
        return self.batches * self.rows_per_batch

    @property
    def table(self) -> str:
        return self.uri or str(self.out / "events")


def events(spark: Any, plan: Plan) -> Any:
    """The change events: a pure function of the rate source's ``value`` (so the expected
    state can be computed independently), limited to ``TOTAL`` events."""
    from pyspark.sql import functions as F

    v = F.col("value")
    key = F.pmod(v * F.lit(MULT), F.lit(plan.keys))
    late = F.pmod(v, F.lit(LATE_EVERY)) == 3
    return (
        spark.readStream.format("rate-micro-batch")
        .option("rowsPerBatch", plan.rows_per_batch)
        .option("numPartitions", 2)
        .load()
        .where(v < plan.total)
        .select(
            F.format_string("e%07d", key).alias("event_id"),
            F.when(late, v - F.lit(LATE_BY)).otherwise(v).alias("event_ts"),
            F.element_at(
                F.array(*map(F.lit, REGIONS)), (F.pmod(key, F.lit(4)) + 1).cast("int")
            ).alias("region"),
            (F.pmod(v, F.lit(100_003)).cast("double") / 100).alias("amount"),
            F.element_at(
                F.array(*map(F.lit, STATUSES)), (F.pmod(v, F.lit(3)) + 1).cast("int")
            ).alias("status"),
            (F.pmod(v, F.lit(DELETE_EVERY)) == 7).alias("_hoodie_is_deleted"),
        )
    )


def expected_state(plan: Plan) -> pa.Table:
    """The surviving version of every key (greatest event time; deletes compete), sorted."""
    v = np.arange(plan.total, dtype=np.int64)
    key = (v * MULT) % plan.keys
    ts = np.where(v % LATE_EVERY == 3, v - LATE_BY, v)
    order = np.lexsort((ts, key))
    last = np.append(key[order][1:] != key[order][:-1], True)
    win = order[last]
    win = win[(v[win] % DELETE_EVERY) != 7]
    k = key[win]
    return pa.table(
        {
            "event_id": pa.array([f"e{x:07d}" for x in k]),
            "event_ts": pa.array(ts[win]),
            "region": pa.array(np.array(REGIONS)[k % 4]),
            "amount": pa.array((v[win] % 100_003) / 100),
            "status": pa.array(np.array(STATUSES)[v[win] % 3]),
        }
    ).sort_by("event_id")


def session() -> Any:
    """``local[2]``, or the master spark-submit was given (its Python driver runs with
    ``PYSPARK_GATEWAY_PORT`` set: the JVM is already up with the submitted settings)."""
    progress = {"spark.sql.streaming.numRecentProgressUpdates": "1000"}
    if "PYSPARK_GATEWAY_PORT" in os.environ:
        from pyspark.sql import SparkSession

        from hudi_ds.spark import register

        builder = SparkSession.builder.appName("hudi_ds-demo")
        for key, value in progress.items():
            builder = builder.config(key, value)
        spark = builder.getOrCreate()
        register(spark)
        return spark
    from hudi_ds.spark.session import local_session

    return local_session("hudi_ds-demo", **progress)


def run_sink(spark: Any, plan: Plan) -> list[dict[str, Any]]:
    """Stream the events into the table until every event is committed; returns progress.

    ``cluster_by_bucket`` shuffles each micro-batch so that every file group is written by one
    task: one log file per file group per commit (without it, each task that holds rows of a
    file group writes its own log file into it).
    """
    from hudi_ds.spark import cluster_by_bucket

    q = (
        cluster_by_bucket(events(spark, plan), OPTIONS)
        .writeStream.format("hudi_py")
        .options(**OPTIONS, **plan.storage)
        .option("checkpointLocation", str(plan.out / "checkpoint-sink"))
        .queryName("events_to_hudi")
        .trigger(processingTime="1 second")
        .start(plan.table)
    )
    seen: set[int] = set()
    t0 = time.perf_counter()
    try:
        while True:
            q.awaitTermination(0.25)
            for p in q.recentProgress:
                b = p["batchId"]
                if b in seen or b >= plan.batches:  # later batches only hold filtered-out values
                    continue
                seen.add(b)
                d = p["durationMs"]
                print(
                    f"  batch {b:3d}  {p['numInputRows']:7,} events  "
                    f"{d.get('triggerExecution', 0):6,} ms  "
                    f"({p['numInputRows'] / max(d.get('triggerExecution', 1), 1) * 1000:8,.0f}"
                    f" events/s)  t={time.perf_counter() - t0:5.1f}s",
                    flush=True,
                )
            if len(seen) >= plan.batches and not q.status["isTriggerActive"]:
                break
            if q.exception() is not None:
                raise RuntimeError(f"the streaming query failed: {q.exception()}")
    finally:
        # later micro-batches are empty (value >= plan.total) and write nothing; stopping between
        # two triggers interrupts nothing
        q.stop()
    return [p for p in q.recentProgress if p["batchId"] < plan.batches]


def replay_change_stream(spark: Any, plan: Plan) -> tuple[dict[str, tuple[int, str]], list[int]]:
    """Read the table as a stream of changes and apply them to an empty dict."""
    state: dict[str, tuple[int, str]] = {}
    sizes: list[int] = []

    def apply(df: Any, batch_id: int) -> None:
        t = df.select("event_id", "event_ts", "status", "_hoodie_is_deleted").toArrow()
        if not t.num_rows:
            return
        sizes.append(t.num_rows)
        for eid, ts, st, gone in zip(*(c.to_pylist() for c in t.columns), strict=True):
            if gone:
                state.pop(eid, None)
            else:
                state[eid] = (ts, st)

    q = (
        spark.readStream.format("hudi_py")
        .option("maxCommitsPerTrigger", 5)
        .option("hoodie.datasource.read.incr.emit.deletes", "true")
        .options(**plan.storage)
        .load(plan.table)
        .writeStream.foreachBatch(apply)
        .option("checkpointLocation", str(plan.out / "checkpoint-source"))
        .trigger(availableNow=True)
        .start()
    )
    q.awaitTermination()
    return state, sizes


def how_to_read(table: str, python: str = sys.executable) -> list[str]:
    """The lines that end the demo: how to read ``table`` (a local path) with hudi_ds, with
    Spark through ``hudi_py`` and with the ``hudi-py`` CLI, as commands to paste -- the
    interpreter and CLI of the environment the demo ran in, absolute paths."""
    py = shlex.quote(python)
    cli = shlex.quote(str(Path(python).with_name("hudi-py")))
    path = shlex.quote(table)
    lit = json.dumps(table)  # a Python string literal in double quotes: the shell's are single
    embedded = (
        f"import hudi_ds; t = hudi_ds.read({lit}, columns={json.dumps(COLUMNS)}); "
        'print(t.num_rows, "rows"); print(t.slice(0, 3).to_pylist())'
    )
    via_spark = (
        'from hudi_ds.spark.session import local_session; spark = local_session("read"); '
        f'spark.read.format("hudi_py").load({lit}).groupBy("region").count().show()'
    )
    return [
        f"read the table at {table}:",
        "  with hudi_ds (no JVM):",
        f"    {py} -c {shlex.quote(embedded)}",
        "  with Spark (the hudi_py data source; local_session() registers it):",
        f"    {py} -c {shlex.quote(via_spark)}",
        "  with the hudi-py CLI:",
        f"    {cli} timeline {path}",
        f"    {cli} files {path}",
        f"    {cli} stats {path}",
    ]


def main(plan: Plan) -> int:
    t_start = time.perf_counter()
    shutil.rmtree(plan.out, ignore_errors=True)
    print(
        f"hudi_ds demo: {plan.batches} micro-batches x {plan.rows_per_batch:,} change events "
        f"({plan.keys:,} keys; late and deleted events included) -> {plan.table}"
    )
    print("starting Spark ...", flush=True)
    spark = session()
    print(f"master: {spark.sparkContext.master}")
    print(f"streaming events into the hudi_py sink (t={time.perf_counter() - t_start:.0f}s)")
    progress = run_sink(spark, plan)

    import hudi_ds
    from hudi_ds.storage import Storage
    from hudi_ds.write.client import STREAMING_CHECKPOINT_KEY, WriteClient

    table = hudi_ds.HudiTable(plan.table, storage_options=plan.storage)
    tl = table.timeline
    committed = WriteClient(
        Storage(plan.table, storage_options=plan.storage), OPTIONS
    ).committed_streaming_batch("demo_events")
    # the batch id each commit recorded: exactly once means each id 0..batches-1 once (Spark's
    # numInputRows is no proof: after an executor loss it counts re-run tasks' rows again)
    batch_ids = []
    for inst in tl.commits():
        md = tl.read_commit_metadata(inst)
        raw = md.extra_metadata.get(STREAMING_CHECKPOINT_KEY) if md else None
        if raw and json.loads(raw).get("demo_events") is not None:
            batch_ids.append(int(json.loads(raw)["demo_events"]))
    lat = np.array([p["durationMs"]["triggerExecution"] for p in progress], dtype=float)
    rows_in = sum(p["numInputRows"] for p in progress)
    slices = table.file_slices()
    compactions = [i for i in tl.commits() if tl.origin_action(i.requested_time) == "compaction"]
    print("\nsummary")
    print(
        f"  events written : {rows_in:,} in {len(progress)} micro-batches "
        f"(last batch id recorded in the table: {committed})"
    )
    print(
        f"  timeline       : {len(tl.commits().filter_actions('deltacommit'))} deltacommits, "
        f"{len(compactions)} compactions, {len(tl.completed().filter_actions('clean'))} cleans,"
        f" {len(tl.pending())} pending"
    )
    print(
        f"  file groups    : {len(slices)} ({sum(s.base_file is not None for s in slices)} with a"
        f" base file, {sum(len(s.log_files) for s in slices)} log files in latest slices)"
    )
    print(
        f"  latency/batch  : p50 {np.percentile(lat, 50):,.0f} ms  p95 "
        f"{np.percentile(lat, 95):,.0f} ms  max {lat.max():,.0f} ms (first batch starts the "
        f"Python workers)  -> {rows_in / (lat[1:].sum() / 1000):,.0f} events/s after the first"
    )

    expected = expected_state(plan)
    snap = table.read(columns=COLUMNS).sort_by("event_id")
    via_spark = (
        spark.read.format("hudi_py")
        .options(**plan.storage)
        .load(plan.table)
        .select(*COLUMNS)
        .toArrow()
        .sort_by("event_id")
    )
    checks = {
        "snapshot (hudi_ds) == expected": snap.equals(expected.cast(snap.schema)),
        "snapshot (Spark, hudi_py) == expected": via_spark.cast(snap.schema).equals(
            expected.cast(snap.schema)
        ),
        "every batch committed once": committed == plan.batches - 1
        and sorted(batch_ids) == list(range(plan.batches)),
    }
    print(f"  snapshot       : {snap.num_rows:,} rows (expected {expected.num_rows:,})")
    try:
        import hudi

        builder = hudi.HudiTableBuilder.from_base_uri(plan.table)
        if plan.storage:
            builder = builder.with_storage_options(plan.storage)
        rs = builder.build().read(hudi.HudiReadOptions())
        rs_t = pa.Table.from_batches(rs).select(COLUMNS).sort_by("event_id")
        checks["snapshot (hudi-rs) == expected"] = rs_t.cast(snap.schema).equals(
            expected.cast(snap.schema)
        )
    except ImportError:
        print("  (hudi-rs not installed: skipped)")

    print("reading the table back as a change stream (hudi_py source, 5 commits per batch) ...")
    replayed, sizes = replay_change_stream(spark, plan)
    want = dict(
        zip(
            expected["event_id"].to_pylist(),
            zip(expected["event_ts"].to_pylist(), expected["status"].to_pylist(), strict=True),
            strict=True,
        )
    )
    print(f"  change batches : {len(sizes)} ({', '.join(f'{n:,}' for n in sizes)} rows)")
    checks["replayed change stream == expected"] = replayed == want
    spark.stop()

    print("\nchecks")
    for name, ok in checks.items():
        print(f"  [{'ok' if ok else 'FAIL'}] {name}")
    ok = all(checks.values())
    print(
        f"\n{'final state matches the expected state' if ok else 'MISMATCH'} "
        f"({time.perf_counter() - t_start:.0f}s)"
    )
    print(json.dumps({"checks": checks, "ok": ok}))
    if not plan.uri:  # a table on the local S3 server goes with the server
        print("\n" + "\n".join(how_to_read(plan.table)))
    return 0 if ok else 1


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Plan.out, help="output directory (replaced)")
    ap.add_argument("--batches", type=int, default=Plan.batches, help="micro-batches")
    ap.add_argument("--rows-per-batch", type=int, default=Plan.rows_per_batch)
    ap.add_argument("--keys", type=int, default=Plan.keys, help="distinct keys")
    ap.add_argument(
        "--store",
        choices=["local", "s3"],
        default="local",
        help="where the table lives: local disk, or a local S3 server (moto) started here",
    )
    a = ap.parse_args()
    plan = Plan(a.out, a.batches, a.rows_per_batch, a.keys)
    if a.store == "local":
        sys.exit(main(plan))
    sys.path.insert(0, str(ROOT))
    from tests.moto_server import MotoServer

    print("starting a local S3 server (moto) ...", flush=True)
    with MotoServer() as server:
        server.create_bucket("hudi-demo")
        print(f"  {server.endpoint} (bucket hudi-demo)")
        code = main(
            Plan(
                a.out,
                a.batches,
                a.rows_per_batch,
                a.keys,
                uri="s3://hudi-demo/events",
                storage=server.storage_options(),
            )
        )
    print("local S3 server stopped")
    sys.exit(code)
