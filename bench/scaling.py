"""Scaling figure: the time of one upsert batch as the table grows (1M, 4M, 16M rows).

Run one (system, size) per process: ``python -m bench.scaling <system> <rows> [--batch N]``.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

from bench.workload import make_rows


def _tables(rows: int, batch: int) -> tuple[pa.Table, pa.Table]:
    rng = np.random.default_rng(5)
    base = make_rows(np.arange(rows), np.full(rows, 1_000), rng)
    n_upd = int(batch * 0.6)
    ids = np.concatenate(
        [rng.choice(rows, n_upd, replace=False), np.arange(rows, rows + batch - n_upd)]
    )
    ts = np.full(batch, 2_000)
    ts[: n_upd // 5] = 500
    return base, make_rows(ids, ts, rng)


def hudi_ds_upsert(root: Path, base: pa.Table, batch: pa.Table) -> float:
    import hudi_ds

    path = str(root / "t")
    opts = {
        "hoodie.table.name": "scale",
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.partitionpath.field": "dt",
        "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.bucket.index.num.buckets": "4",
    }
    hudi_ds.write(
        path,
        pa.RecordBatchReader.from_batches(base.schema, base.to_batches(500_000)),
        {**opts, "hoodie.datasource.write.operation": "bulk_insert"},
    )
    t0 = time.perf_counter()
    hudi_ds.write(path, batch, opts)
    return time.perf_counter() - t0


def delta_upsert(root: Path, base: pa.Table, batch: pa.Table) -> float:
    """delta-rs ``merge`` as in the main bench (:func:`bench.systems.delta_merge`: one merge,
    the partition column in the predicate), ``streamed_exec=False``."""
    from deltalake import write_deltalake

    from bench.systems import DELETE_FLAG, delta_merge

    path = str(root / "d")
    write_deltalake(path, base, partition_by=["dt"])
    t0 = time.perf_counter()
    source = batch.append_column(DELETE_FLAG, pa.repeat(pa.scalar(False), batch.num_rows))
    delta_merge(path, source, streamed=False)
    return time.perf_counter() - t0


SYSTEMS = {"hudi_ds_mor_parquet": hudi_ds_upsert, "delta_rs": delta_upsert}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("system", choices=sorted(SYSTEMS))
    ap.add_argument("rows", type=int)
    ap.add_argument("--batch", type=int, default=200_000)
    args = ap.parse_args()
    base, batch = _tables(args.rows, args.batch)
    with tempfile.TemporaryDirectory(prefix="bench-scale-") as d:
        secs = SYSTEMS[args.system](Path(d), base, batch)
    json.dump({"system": args.system, "rows": args.rows, "upsert_s": secs}, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
