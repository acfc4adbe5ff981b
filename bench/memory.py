"""Peak memory of a streamed write, per process: does it grow with the input?

``python -m bench.memory ROWS``: in a fresh process, inserts ``ROWS`` rows of the standard
workload's schema into a new MOR table through ``hudi_ds.write`` from a ``RecordBatchReader``
whose batches (100,000 rows each) are generated as they are pulled, so the input is never whole
in memory. Prints one JSON line: the process's RSS before the write (imports done) and its peak
(VmHWM, reset through ``/proc/self/clear_refs`` just before the write). ``__main__`` runs two
input sizes; a write whose memory is bounded shows the same peak for both.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pyarrow as pa

from bench.systems import clear_peak, peak_mb
from bench.workload import make_rows

OPTS = {
    "hoodie.table.name": "bench",
    "hoodie.datasource.write.recordkey.field": "id",
    "hoodie.datasource.write.partitionpath.field": "dt",
    "hoodie.datasource.write.precombine.field": "ts",
    "hoodie.datasource.write.table.type": "MERGE_ON_READ",
    "hoodie.bucket.index.num.buckets": "4",
    "hoodie.datasource.write.operation": "insert",
    # compaction stated explicitly: off (MOR tables compact every 5 delta commits by default);
    # this benchmark measures writes, bench/compaction.py measures compaction
    "hoodie.datasource.compaction.async.enable": "false",
}
BATCH = 100_000


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def _batches(rows: int) -> Iterator[pa.RecordBatch]:
    rng = np.random.default_rng(7)
    for start in range(0, rows, BATCH):
        ids = np.arange(start, min(rows, start + BATCH))
        yield from make_rows(ids, np.full(len(ids), 1_000), rng).to_batches()


def main() -> None:
    ap = argparse.ArgumentParser(prog="python -m bench.memory")
    ap.add_argument("rows", type=int)
    args = ap.parse_args()
    import hudi_ds

    schema = make_rows(np.arange(1), np.full(1, 1), np.random.default_rng(0)).schema
    with tempfile.TemporaryDirectory(prefix="bench-memory-") as d:
        before = _rss_mb()
        clear_peak()
        t0 = time.perf_counter()
        hudi_ds.write(
            str(Path(d) / "t"), pa.RecordBatchReader.from_batches(schema, _batches(args.rows)), OPTS
        )
        secs = time.perf_counter() - t0
        peak = peak_mb()
    res = {"rows": args.rows, "rss_before_mb": before, "peak_mb": peak, "write_s": secs}
    json.dump(res, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
