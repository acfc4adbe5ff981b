"""Cost of writing beside a pending consistent-hashing resize (every record of a node under
resize written twice: :mod:`hudi_ds.index.pending_resize`).

One MERGE_ON_READ partition of ``--rows`` keys on a 4-node ring; an upsert of ``--update``
keys (half updates, half inserts) is timed (CPU time, best of ``--repeat``, each on a fresh copy
of the table) with no resize pending, with a resize of one node pending, and with all 4 nodes
under resize (every record copied).

Run: ``.venv/bin/python bench/bench_resize_dual_write.py [--rows 200000] [--update 100000]``.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

import pyarrow as pa

import hudi_ds
from hudi_ds.services import ServiceContext, clustering

OPTS = {
    "hoodie.table.name": "b",
    "hoodie.datasource.write.recordkey.field": "id",
    "hoodie.datasource.write.partitionpath.field": "city",
    "hoodie.datasource.write.precombine.field": "ts",
    "hoodie.datasource.write.table.type": "MERGE_ON_READ",
    "hoodie.index.type": "BUCKET",
    "hoodie.index.bucket.engine": "CONSISTENT_HASHING",
    "hoodie.bucket.index.num.buckets": "4",
}


def rows(ids: range, ts: int) -> pa.Table:
    return pa.table(
        {
            "id": [f"key-{i:09d}" for i in ids],
            "ts": pa.array([ts] * len(ids), pa.int64()),
            "city": ["sf"] * len(ids),
            "fare": [float(i) for i in ids],
        }
    )


def timed_upsert(base: Path, work: Path, nodes: int, update: pa.Table) -> float:
    """CPU seconds of the upsert on a copy of ``base`` with ``nodes`` nodes under resize."""
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(base, work)
    if nodes:
        resize = {
            **OPTS,
            "hoodie.parquet.max.file.size": "1000",
            "hoodie.bucket.index.max.num.buckets": str(4 + nodes),
        }
        assert clustering.schedule_clustering(ServiceContext.open(str(work), resize))
    t0 = time.process_time()
    hudi_ds.write(str(work), update, OPTS)
    return time.process_time() - t0


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--update", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        base, work = Path(tmp, "base"), Path(tmp, "work")
        hudi_ds.write(str(base), rows(range(args.rows), 1), OPTS)
        half = args.update // 2
        update = rows(range(args.rows - half, args.rows + half), 2)
        best = {}
        for nodes in (0, 1, 4):
            best[nodes] = min(timed_upsert(base, work, nodes, update) for _ in range(args.repeat))
        for nodes, t in best.items():
            print(
                f"{nodes} of 4 nodes under resize: {t:.3f} s CPU "
                f"({t / best[0]:.2f}x; {args.update / t:,.0f} rows/s)"
            )


if __name__ == "__main__":
    main()
