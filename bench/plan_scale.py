"""Read planning of a large bucket-index MERGE_ON_READ table.

``python -m bench.plan_scale PARTITIONS BUCKETS [--mdt] [--path DIR]``: a table version 6
MERGE_ON_READ table with the bucket index, ``PARTITIONS x BUCKETS`` file groups of 4 rows each
(one bulk insert), then three upserts of 1,000 random keys (a log file in up to 3,000 file
groups); with ``--mdt`` the metadata table is on (the listing comes from its ``files``
partition). Then ``HudiTable(path).plan_read()`` with a new handle each time: the first plan
of the process (it decodes the commit metadata) and the best CPU time (``process_time``) of
three more, and the slices planned (one per file group, checked). ``1000 100`` is the 100,000
file group case of ``docs/benchmarks.md``.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

import hudi_ds

ROWS_PER_GROUP = 4
UPSERTS = 3
UPSERT_ROWS = 1000


def _rows(ids: np.ndarray, ts: int, partitions: int) -> pa.Table:
    return pa.table(
        {
            "id": pa.array([f"k{i:09d}" for i in ids]),
            "ts": pa.array(np.full(len(ids), ts)),
            "dt": pa.array([f"p{i % partitions:04d}" for i in ids]),
            "v": pa.array(ids.astype("float64")),
        }
    )


def build(path: str, partitions: int, buckets: int, mdt: bool) -> None:
    """Write the table at ``path`` (replacing what is there)."""
    shutil.rmtree(path, ignore_errors=True)
    n = partitions * buckets * ROWS_PER_GROUP
    opts = {
        "hoodie.table.name": "plan_scale",
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.partitionpath.field": "dt",
        "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.index.type": "BUCKET",
        "hoodie.bucket.index.num.buckets": str(buckets),
        "hoodie.datasource.write.table.type": "MERGE_ON_READ",
        "hoodie.metadata.enable": str(mdt).lower(),
    }
    ids = np.arange(n)
    hudi_ds.write(
        path,
        _rows(ids, 1, partitions),
        {**opts, "hoodie.datasource.write.operation": "bulk_insert"},
    )
    rng = np.random.default_rng(1)
    for i in range(UPSERTS):
        keys = rng.choice(n, min(UPSERT_ROWS, n), replace=False)
        hudi_ds.write(path, _rows(keys, 2 + i, partitions), opts)


def plan_times(path: str, groups: int) -> tuple[float, float]:
    """CPU seconds of the process's first plan and the best of three more."""
    times = []
    for _ in range(4):
        start = time.process_time()
        plan = hudi_ds.HudiTable(path).plan_read()
        times.append(time.process_time() - start)
        if len(plan.slices) != groups:
            raise AssertionError(f"{len(plan.slices)} slices planned, expected {groups}")
    return times[0], min(times[1:])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("partitions", type=int)
    ap.add_argument("buckets", type=int)
    ap.add_argument("--mdt", action="store_true", help="with the metadata table")
    ap.add_argument("--path", help="where to build the table (default: a temporary folder)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = args.path or str(Path(tmp) / "t")
        start = time.perf_counter()
        build(path, args.partitions, args.buckets, args.mdt)
        built = time.perf_counter() - start
        first, best = plan_times(path, args.partitions * args.buckets)
    print(
        f"{args.partitions * args.buckets} file groups, metadata table "
        f"{'on' if args.mdt else 'off'}: built in {built:.1f} s; plan_read CPU "
        f"first {first:.3f} s, best of 3 {best:.3f} s"
    )


if __name__ == "__main__":
    main()
