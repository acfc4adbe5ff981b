"""Snapshot reads of the bench tables against their yardsticks, with CPU time beside wall time.

The two read acceptance targets, measured apart from ``make bench`` (whose rows each come from one
timed read): the standard workload (:mod:`bench.workload`) written once, untimed, as
``bench.systems`` writes it -- the MOR table at hudi_ds's defaults (base files plus the last
batch's log blocks), the COW table and the compaction-off MOR table (every version in log
blocks) -- then, ``--repeat`` rounds, each system read in turn (the machine's drift hits all
alike):

* ``pyarrow``: ``pq.read_table`` of ``READ_COLUMNS`` of the reference final rows as one plain
  Parquet file (the faster of pyarrow's defaults and hudi_ds's Parquet options, as the bench);
* each table: ``hudi_ds.read(path, columns=READ_COLUMNS)``.

With ``--spark``, on ``local[2]`` (the bench's session): ``spark.read.parquet`` of the reference
rows, ``spark.read.format("hudi_py")`` of a table Spark wrote (defaults: every batch in log
blocks) with its full schema -- pyspark's Python data sources get no column pruning -- and with
``.schema("id string, ts bigint, d1 double")`` (the reader then reads and merges only what the
query needs), each running the bench's query (``select(READ_COLUMNS).agg(...)``).

Printed per system: the best wall time, rows/s, its ratio to the yardstick, and the CPU time
(user + sys of this process and, for Spark, its JVM and Python workers) of the best round and
its ratio: on a shared 2-core machine the CPU ratio moves far less than the wall one.

Usage: ``python -m bench.bench_read [--scale 1] [--repeat 5] [--spark] [--keep DIR]``
(``--keep``: write the tables under DIR, or reuse them when already there).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow.compute as pc
import pyarrow.parquet as pq

import hudi_ds
from bench.systems import (
    READ_COLUMNS,
    SPARK_OPTS,
    _cached,
    _hudi_ds,
    _spark,
    hudi_source,
    parquet_options,
    with_is_deleted,
)
from bench.workload import Workload, insert_batch, reference, upsert_batches

TABLES = {  # name -> (table type, compaction)
    "mor": ("MERGE_ON_READ", True),
    "cow": ("COPY_ON_WRITE", True),
    "mor_logs": ("MERGE_ON_READ", False),
}


def tree_cpu() -> float:
    """User + sys seconds of this process and its live descendants (Spark's JVM, its Python
    workers; Spark reuses its workers, so they are alive between queries)."""
    children: dict[int, list[tuple[int, float]]] = {}
    tick = os.sysconf("SC_CLK_TCK")
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        used = (int(fields[11]) + int(fields[12])) / tick
        children.setdefault(int(fields[1]), []).append((int(stat.parent.name), used))
    total = time.process_time()
    todo = [os.getpid()]
    while todo:
        for pid, used in children.get(todo.pop(), []):
            total += used
            todo.append(pid)
    return total


def build(root: Path, w: Workload) -> Path:
    """The reference final rows as plain Parquet (both settings) and the three tables."""
    ref = root / "ref.parquet"
    if not ref.exists():
        final = reference(w)
        pq.write_table(final, root / "final-hudi_ds.parquet", **parquet_options(final))
        pq.write_table(final, root / "final-default.parquet")
        pq.write_table(final, ref)
    for name, (table_type, compaction) in TABLES.items():
        d = root / name
        if not (d / "table").exists():
            d.mkdir(exist_ok=True)
            _hudi_ds(table_type, "parquet", compaction=compaction)(w, d, str(ref))
    return ref


def build_spark(spark: Any, root: Path, w: Workload) -> Path:
    """The bench's ``hudi_py`` table (defaults: MOR, batch writes compact nothing)."""
    path = root / "spark"
    if path.exists():
        return path
    opts = SPARK_OPTS
    base = _cached(spark, with_is_deleted(insert_batch(w)))
    insert = {**opts, "hoodie.datasource.write.operation": "insert"}
    base.write.format("hudi_py").mode("append").options(**insert).save(str(path))
    base.unpersist()
    for step in upsert_batches(w):
        ups = _cached(spark, hudi_source(step))
        ups.write.format("hudi_py").mode("append").options(**opts).save(str(path))
        ups.unpersist()
    return path


Timed = dict[str, list[tuple[float, float, int]]]  # name -> [(wall s, cpu s, rows)]


def timed(out: Timed, name: str, read: Callable[[], int]) -> None:
    c0, t0 = tree_cpu(), time.perf_counter()
    rows = read()
    out.setdefault(name, []).append((time.perf_counter() - t0, tree_cpu() - c0, rows))


def report(out: Timed, yardstick: str) -> None:
    best = {k: min(v) for k, v in out.items()}
    wall0, cpu0, _ = best[yardstick]
    load = os.getloadavg()[0]
    print(
        f"load average {load:.1f}; best of {len(out[yardstick])} rounds (wall, cpu of that round)"
    )
    for name, (wall, cpu, rows) in best.items():
        print(
            f"  {name:26s} {rows / wall / 1e6:7.2f}M rows/s  {wall:6.3f} s  {wall / wall0:5.2f}x"
            f"   cpu {cpu:6.3f} s  {cpu / cpu0:5.2f}x   rows {rows:,}"
        )


def run_embedded(root: Path, repeat: int) -> None:
    out: Timed = {}

    def hudi_read(name: str) -> Callable[[], int]:
        def read() -> int:
            t = hudi_ds.read(str(root / name / "table"), columns=READ_COLUMNS)
            pc.sum(t["d1"]).as_py()
            return t.num_rows

        return read

    for _ in range(repeat):
        for setting in ("default", "hudi_ds"):

            def one(setting: str = setting) -> int:
                t = pq.read_table(root / f"final-{setting}.parquet", columns=READ_COLUMNS)
                pc.sum(t["d1"]).as_py()
                return t.num_rows

            timed(out, f"pyarrow ({setting})", one)
        for name in TABLES:
            timed(out, f"hudi_ds {name}", hudi_read(name))
    # the yardstick: the faster pyarrow setting
    faster = min(("pyarrow (default)", "pyarrow (hudi_ds)"), key=lambda k: min(out[k])[0])
    print("embedded: hudi_ds.read(columns=READ_COLUMNS) vs pq.read_table of the same rows")
    report(out, faster)


def run_spark(root: Path, ref: Path, w: Workload, repeat: int) -> None:
    from pyspark.sql import functions as F

    spark = _spark()
    path = str(build_spark(spark, root, w))

    def query(df: Any) -> Callable[[], int]:
        def run() -> int:
            agg = df.select(*READ_COLUMNS).agg(F.count("id").alias("n"), F.sum("d1").alias("s"))
            return int(agg.collect()[0]["n"])

        return run

    def hudi(schema: str | None = None) -> Any:
        reader = spark.read.format("hudi_py")
        return (reader.schema(schema) if schema else reader).load(path)

    query(hudi())()  # starts the Python workers
    out: Timed = {}
    for _ in range(repeat):
        timed(out, "spark.read.parquet", query(spark.read.parquet(str(ref))))
        timed(out, "hudi_py (full schema)", query(hudi()))
        timed(out, "hudi_py .schema(id,ts,d1)", query(hudi("id string, ts bigint, d1 double")))
    print("Spark local[2]: select(id, ts, d1).agg(count, sum)")
    report(out, "spark.read.parquet")
    spark.stop()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--spark", action="store_true", help="also the Spark reads")
    ap.add_argument("--keep", help="write the tables under this directory (reused when there)")
    args = ap.parse_args()
    w = Workload.scaled(args.scale)
    with tempfile.TemporaryDirectory(prefix="bench_read-") as tmp:
        root = Path(args.keep or tmp)
        root.mkdir(parents=True, exist_ok=True)
        ref = build(root, w)
        run_embedded(root, args.repeat)
        if args.spark:
            run_spark(root, ref, w, args.repeat)


if __name__ == "__main__":
    main()
