"""The main job: a stream of change events upserted into a partitioned MOR Hudi table.

Runs with the embedded writer (no JVM): generates batches of change events (inserts, updates,
late updates carrying an older event time, deletes), upserts each batch into a bucket-index MOR
table under ``demo_output/``, prints progress and a summary, and checks the final snapshot --
read by hudi_ds and by hudi-rs -- against the expected state kept in plain Python.
"""

from __future__ import annotations

import shutil
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

import hudi_ds

OUT = Path(__file__).resolve().parents[1] / "demo_output" / "events"
BATCHES = 20
BATCH_ROWS = 50_000
OPTIONS = {
    "hoodie.table.name": "events",
    "hoodie.datasource.write.recordkey.field": "event_id",
    "hoodie.datasource.write.partitionpath.field": "region",
    "hoodie.datasource.write.precombine.field": "event_ts",
    "hoodie.datasource.write.table.type": "MERGE_ON_READ",
    "hoodie.bucket.index.num.buckets": "8",
}
REGIONS = np.array(["us", "eu", "apac", "latam"])


def batch(b: int, rng: np.random.Generator, known: int) -> tuple[pa.Table, pa.Table]:
    n_upd = BATCH_ROWS // 2 if known else 0
    ids = np.concatenate(
        [
            rng.integers(0, known, n_upd) if known else np.array([], np.int64),
            np.arange(known, known + BATCH_ROWS - n_upd),
        ]
    )
    ts = np.full(len(ids), 1_000 * (b + 1), dtype=np.int64)
    ts[: n_upd // 5] -= 5_000  # late events: older than what the table holds
    rows = pa.table(
        {
            "event_id": pa.array([f"e{i:08d}" for i in ids]),
            "event_ts": ts,
            "region": REGIONS[ids % 4],
            "amount": rng.normal(100, 20, len(ids)).round(2),
            "status": rng.choice(["new", "paid", "shipped"], len(ids)),
        }
    )
    gone = rng.integers(0, known + 1, BATCH_ROWS // 100) if known else np.array([], np.int64)
    deletes = pa.table({"event_id": [f"e{i:08d}" for i in gone], "region": REGIONS[gone % 4]})
    return rows, deletes


def main() -> int:
    shutil.rmtree(OUT, ignore_errors=True)
    rng = np.random.default_rng(1)
    expected: dict[str, tuple[int, float]] = {}
    known = 0
    latencies = []
    print(f"writing {BATCHES} batches of {BATCH_ROWS:,} change events into {OUT}")
    for b in range(BATCHES):
        rows, deletes = batch(b, rng, known)
        t0 = time.perf_counter()
        hudi_ds.write(str(OUT), rows, OPTIONS)
        if deletes.num_rows:
            hudi_ds.write(
                str(OUT), deletes, {**OPTIONS, "hoodie.datasource.write.operation": "delete"}
            )
        latencies.append(time.perf_counter() - t0)
        for k, t, a in zip(
            rows["event_id"].to_pylist(),
            rows["event_ts"].to_pylist(),
            rows["amount"].to_pylist(),
            strict=True,
        ):
            cur = expected.get(k)
            if cur is None or t >= cur[0]:
                expected[k] = (t, a)
        for k in deletes["event_id"].to_pylist():
            expected.pop(k, None)
        known += BATCH_ROWS - (BATCH_ROWS // 2 if known else 0)
        bar = "#" * (b + 1) + "." * (BATCHES - b - 1)
        print(
            f"\r[{bar}] batch {b + 1}/{BATCHES}  {latencies[-1] * 1000:6.0f} ms", end="", flush=True
        )
    print()
    table = hudi_ds.HudiTable(str(OUT))
    snap = table.read(columns=["event_id", "event_ts", "amount"])
    got = dict(
        zip(
            snap["event_id"].to_pylist(),
            zip(snap["event_ts"].to_pylist(), snap["amount"].to_pylist(), strict=True),
            strict=True,
        )
    )
    slices = table.file_slices()
    print(
        f"commits: {len(table.timeline.commits())}   rows: {snap.num_rows:,}   "
        f"file groups: {len(slices)}   log files: {sum(len(s.log_files) for s in slices)}"
    )
    lat = np.array(latencies) * 1000
    print(
        f"latency per batch (ms): p50 {np.percentile(lat, 50):.0f}  p95 "
        f"{np.percentile(lat, 95):.0f}  max {lat.max():.0f}  -> "
        f"{BATCH_ROWS / np.median(lat) * 1000:,.0f} events/s"
    )
    ok = got == expected and len(got) == snap.num_rows
    try:
        import hudi

        rs = hudi.HudiTableBuilder.from_base_uri(str(OUT)).build().read(hudi.HudiReadOptions())
        ok = ok and sum(x.num_rows for x in rs) == len(expected)
        print(f"hudi-rs reads {sum(x.num_rows for x in rs):,} rows")
    except ImportError:
        pass
    print("final snapshot matches the expected state" if ok else "MISMATCH with the expected state")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
