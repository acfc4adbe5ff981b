"""The cost of keeping column and partition stats on one upsert batch, measured alone.

``python -m bench.column_stats_cost [--cpu]``: a 20k-row upsert (every key an update) into a
10-partition MOR version 9 table with the metadata table on, with and without its
``column_stats`` / ``partition_stats`` partitions, under the bucket index (2 buckets a
partition) and under SIMPLE. Each figure is the median over 5 tables of the median of the
last 5 of 7 upserts (compaction off: the log files pile up, as between two compactions);
``--cpu`` times the process's CPU instead of the wall clock (a busy machine). The full
workload's figure is ``hudi_ds_mor_mdt_stats`` against ``hudi_ds_mor_mdt`` in ``make bench``.

Measured 2026-12-02 with ``--cpu``, six runs each of the code before and after the commit took
the written partitions' slices from its task's listing, its commit metadata unparsed and the
stats partitions listed once (alternating, load average 4-30 on 2 cpus: single runs vary by
+-10 points): BUCKET +20% (+15 ms) before, +11.5% (+9 ms) after (medians); SIMPLE +13.5% before,
+11% after. The cost left is per file and column -- the records' encoding, one gzip HFile per
MDT file group, the partition fold -- so it is a smaller share of larger batches: on ``make
bench``'s workload (32 file groups a batch) the CPU ratio of the batches between compactions
went from 1.23x to 1.04x at ``SCALE=0.1`` and is 1.05x at scale 1 (interleaved batch by batch).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time

import numpy as np
import pyarrow as pa

import hudi_ds

ROWS = 20_000


def rows(seed: int) -> pa.Table:
    """Upsert ``seed``: the same ``ROWS`` keys over 10 partitions, new values."""
    rng = np.random.default_rng(seed)
    ids = np.arange(ROWS)
    return pa.table(
        {
            "id": pa.array([f"k{i:08d}" for i in ids]),
            "p": pa.array([f"p{i % 10}" for i in ids]),
            "ts": pa.array(np.full(ROWS, seed, np.int64)),
            "v": pa.array(rng.random(ROWS)),
            "q": pa.array(rng.integers(0, 1000, ROWS)),
            "s": pa.array([f"name{x}" for x in rng.integers(0, 500, ROWS)]),
        }
    )


def options(stats: bool, index: str) -> dict[str, str]:
    out = {
        "hoodie.table.name": "stats_cost",
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.partitionpath.field": "p",
        "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.datasource.write.table.type": "MERGE_ON_READ",
        "hoodie.write.table.version": "9",
        "hoodie.metadata.enable": "true",
        "hoodie.metadata.compact.max.delta.commits": "1000",
        "hoodie.clean.automatic": "false",
        "hoodie.datasource.compaction.async.enable": "false",
        "hoodie.index.type": index,
        "hoodie.metadata.index.column.stats.enable": str(stats).lower(),
        "hoodie.metadata.index.partition.stats.enable": str(stats).lower(),
    }
    if index == "BUCKET":
        out["hoodie.bucket.index.num.buckets"] = "2"
    return out


def batch_time(stats: bool, index: str, cpu: bool) -> float:
    """The median time of the last 5 of 7 upserts into a new table."""
    clock = time.process_time if cpu else time.perf_counter
    d = tempfile.mkdtemp(prefix="bench-stats-cost-")
    try:
        path = f"{d}/t"
        opts = options(stats, index)
        hudi_ds.write(path, rows(0), opts)
        times = []
        for k in range(1, 8):
            t = rows(k)
            t0 = clock()
            hudi_ds.write(path, t, opts)
            times.append(clock() - t0)
        return statistics.median(times[2:])
    finally:
        shutil.rmtree(d)


def main() -> None:
    ap = argparse.ArgumentParser(prog="python -m bench.column_stats_cost")
    ap.add_argument("--cpu", action="store_true", help="process CPU time, not wall clock")
    args = ap.parse_args()
    for index in ("BUCKET", "SIMPLE"):
        off: list[float] = []
        on: list[float] = []
        for _ in range(5):  # interleaved: a busy machine slows both alike
            off.append(batch_time(False, index, args.cpu))
            on.append(batch_time(True, index, args.cpu))
        a, b = statistics.median(off), statistics.median(on)
        print(
            f"{index}: upsert {a:.3f}s without stats, {b:.3f}s with them: "
            f"+{b - a:.3f}s ({100 * (b - a) / a:.0f}%)"
        )


if __name__ == "__main__":
    main()
