"""Snapshot read of a MERGE_ON_READ table whose rows all live in log blocks: Avro vs Parquet.

The two Avro acceptance figures (``make bench`` systems ``hudi_ds_mor_avro_logs`` and
``hudi_ds_mor_parquet_logs``): the standard workload (:mod:`bench.workload`) written with
compaction off, once with Avro log blocks and once with Parquet ones, then read as the bench
reads (``hudi_ds.read(path, columns=READ_COLUMNS)``), ``--repeat`` times each, the two
alternating (the machine's drift hits both alike). Prints the median and best wall time, the
CPU time (user + sys of this process, all read threads) and rows/s of each, the Avro/Parquet
ratio of the medians and of each pair, and checks that both read the same rows, row for row.
The goals: >= 1,000,000 rows/s and <= 3x the Parquet read.

Usage: ``python -m bench.bench_avro_read [--scale 0.25] [--repeat 5] [--threads N]
[--keep DIR]`` (``--keep``: write the tables under DIR, or reuse them when already there).
"""

from __future__ import annotations

import argparse
import resource
import statistics
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

import hudi_ds
from bench.systems import READ_COLUMNS, hudi_source, with_is_deleted
from bench.workload import Workload, insert_batch, upsert_batches
from hudi_ds.table.table import ReadableTable

BLOCKS = ("avro", "parquet")


def build(path: Path, block: str, w: Workload) -> None:
    """The bench's compaction-off MOR table with ``block`` log blocks (as ``bench.systems``)."""
    opts = {
        "hoodie.table.name": "bench",
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.partitionpath.field": "dt",
        "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.datasource.write.table.type": "MERGE_ON_READ",
        "hoodie.logfile.data.block.format": block,
        "hoodie.index.type": "BUCKET",
        "hoodie.bucket.index.num.buckets": "4",
        "write.task.max.size": "256",
        "hoodie.datasource.compaction.async.enable": "false",
    }
    base = with_is_deleted(insert_batch(w))
    reader = pa.RecordBatchReader.from_batches(base.schema, base.to_batches(100_000))
    hudi_ds.write(str(path), reader, {**opts, "hoodie.datasource.write.operation": "insert"})
    for step in upsert_batches(w):
        hudi_ds.write(str(path), hudi_source(step), opts)


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main(argv: list[str] | None = None) -> None:
    """Build (or reuse) the two tables, time their reads and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=0.25)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--threads", type=int, default=0, help="read threads (0: the default)")
    parser.add_argument("--keep", type=Path, default=None)
    args = parser.parse_args(argv)
    tmp = None
    root = args.keep
    if root is None:
        tmp = tempfile.TemporaryDirectory(prefix="bench-avro-read-")
        root = Path(tmp.name)
    w = Workload.scaled(args.scale)
    for block in BLOCKS:
        if not (root / block / ".hoodie").exists():
            t0 = time.perf_counter()
            build(root / block, block, w)
            print(f"wrote the {block} table in {time.perf_counter() - t0:.1f} s")
    walls: dict[str, list[float]] = {b: [] for b in BLOCKS}
    cpus: dict[str, list[float]] = {b: [] for b in BLOCKS}
    tables: dict[str, pa.Table] = {}
    for _ in range(args.repeat):
        for block in BLOCKS:
            table = ReadableTable(str(root / block))
            if args.threads:
                table.read_threads = args.threads
            wall, cpu = time.perf_counter(), _cpu()
            tables[block] = table.read(None, READ_COLUMNS)
            walls[block].append(time.perf_counter() - wall)
            cpus[block].append(_cpu() - cpu)
    rows = tables["avro"].num_rows
    avro, parquet = (t.sort_by("id") for t in (tables["avro"], tables["parquet"]))
    assert pc.count_distinct(avro["id"]).as_py() == rows, "duplicated keys"
    assert avro.equals(parquet.cast(avro.schema)), "the two tables read other rows"
    print(f"{rows:,} rows read, the same row for row; {args.repeat} reads each")
    print(f"{'blocks':8} {'median s':>9} {'best s':>7} {'cpu s':>6} {'rows/s (median)':>16}")
    for block in BLOCKS:
        med = statistics.median(walls[block])
        cpu = statistics.median(cpus[block])
        print(f"{block:8} {med:9.3f} {min(walls[block]):7.3f} {cpu:6.2f} {rows / med:16,.0f}")
    pairs = [a / p for a, p in zip(walls["avro"], walls["parquet"], strict=True)]
    ratio = statistics.median(walls["avro"]) / statistics.median(walls["parquet"])
    print(
        f"avro / parquet: {ratio:.2f}x (medians), pairs {min(pairs):.2f}x .. {max(pairs):.2f}x; "
        f"cpu {statistics.median(cpus['avro']) / statistics.median(cpus['parquet']):.2f}x"
    )
    if tmp is not None:
        tmp.cleanup()


if __name__ == "__main__":
    main()
