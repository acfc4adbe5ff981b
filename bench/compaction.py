"""Compaction throughput: hudi_ds compaction vs a plain pyarrow rewrite of the same rows.

``python -m bench.compaction --scale S`` builds the MOR table of the standard workload (insert,
then the upsert and delete batches, all as log files), compacts it, and in the same process
rewrites the compacted rows with plain pyarrow -- per file group, read its new base file and
write it again; a variant also sorts by record key, and the floor of Hudi's protocol also puts
the bloom filter of every key in the footer, as every base file carries one at Hudi's defaults --
with the Parquet options hudi_ds writes base files with (snappy, its dictionary columns) on a
thread pool of the size the compaction uses (``min(file groups, cpus, 8)``): the physical ceiling
of the rewrite. All are timed in wall and in CPU seconds of the process (all its threads): on a
machine shared with other work the CPU ratio is the steadier one. Prints one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from bench.check import compare
from bench.systems import parquet_options
from bench.workload import Workload, insert_batch, reference, upsert_batches
from hudi_ds.layout.bloom_filter import BloomFilterSpec

OPTS = {
    "hoodie.table.name": "bench",
    "hoodie.datasource.write.recordkey.field": "id",
    "hoodie.datasource.write.partitionpath.field": "dt",
    "hoodie.datasource.write.precombine.field": "ts",
    "hoodie.bucket.index.num.buckets": "4",
    "hoodie.clean.automatic": "false",
    "hoodie.archive.automatic": "false",
    # compaction stated explicitly: off (MOR tables compact every 5 delta commits by default);
    # the table is built with logs only, then compacted once, timed
    "hoodie.datasource.compaction.async.enable": "false",
}


def run(w: Workload, root: Path) -> dict:
    import hudi_ds
    from hudi_ds.services import ServiceContext, compaction

    path = str(root / "table")
    base = insert_batch(w)
    hudi_ds.write(
        path,
        pa.RecordBatchReader.from_batches(base.schema, base.to_batches(100_000)),
        {**OPTS, "hoodie.datasource.write.operation": "insert"},
    )
    del base
    for step in upsert_batches(w):
        hudi_ds.write(path, step.upserts, OPTS)
        hudi_ds.write(path, step.deletes, {**OPTS, "hoodie.datasource.write.operation": "delete"})
    t0 = time.perf_counter()
    before = hudi_ds.read(path, columns=["id", "ts"])
    read_s = time.perf_counter() - t0
    ctx = ServiceContext.open(path)
    t0 = time.perf_counter()
    c = compaction.schedule_compaction(ctx)
    schedule_s = time.perf_counter() - t0
    assert c is not None
    cpu0 = time.process_time()
    (res,) = compaction.run_compaction(ctx, c)
    compaction_cpu_s = time.process_time() - cpu0
    after = hudi_ds.read(path, columns=["id", "ts"])
    same = before.sort_by("id").equals(after.sort_by("id"))
    check = compare(hudi_ds.read(path), reference(w))
    # the ceiling: the same rows (the new base files) read and rewritten by plain pyarrow, with
    # hudi_ds's Parquet options, on as many threads as the compaction used
    files = [root / "table" / s.path for s in res.stats if s.path]
    workers = max(1, min(len(files), os.cpu_count() or 1, 8))
    out = root / "pyarrow"
    out.mkdir()

    def rewrite(i: int, sort: bool, bloom: bool) -> int:
        t = pq.read_table(files[i])
        if sort:
            t = t.take(pc.sort_indices(t.column("_hoodie_record_key")))
        if bloom:
            # Hudi's default filter (hoodie.parquet.bloom.filter.enabled, dynamic, 60,000
            # entries, fpp 1e-9: 30 hashes a key), built by hudi_ds's vectorised hashing
            f = BloomFilterSpec().new_filter()
            f.add(t.column("_hoodie_record_key"))
            t = t.replace_schema_metadata({**(t.schema.metadata or {}), **f.footer()})
        name = f"{'s' if sort else ''}{'b' if bloom else ''}{i}.parquet"
        pq.write_table(t, out / name, **parquet_options(t))
        return t.num_rows

    def timed(sort: bool, bloom: bool = False) -> tuple[float, float, int]:
        t0, cpu0 = time.perf_counter(), time.process_time()
        with ThreadPoolExecutor(workers) as pool:
            n = sum(pool.map(lambda i: rewrite(i, sort, bloom), range(len(files))))
        return time.perf_counter() - t0, time.process_time() - cpu0, n

    pyarrow_s, pyarrow_cpu_s, rows = timed(False)
    pyarrow_sort_s, _, _ = timed(True)
    floor_s, floor_cpu_s, _ = timed(True, bloom=True)
    return {
        "rows": res.rows,
        "slices": res.operations,
        "log_files": res.log_files,
        "bytes_written": res.bytes_written,
        "schedule_s": schedule_s,
        "compaction_s": res.seconds,
        "compaction_rows_per_s": res.rows / res.seconds,
        "compaction_cpu_s": compaction_cpu_s,
        "snapshot_read_rows_per_s": before.num_rows / read_s,
        "pyarrow_write_s": pyarrow_s,
        "pyarrow_rows_per_s": rows / pyarrow_s,
        "pyarrow_cpu_s": pyarrow_cpu_s,
        "pyarrow_sort_write_rows_per_s": rows / pyarrow_sort_s,
        "floor_rows_per_s": rows / floor_s,
        "floor_cpu_s": floor_cpu_s,
        "snapshot_unchanged": same,
        "pyarrow_threads": workers,
        "check": check,
        "correct": check["correct"],
    }


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--scale", type=float, default=1.0)
    args = ap.parse_args()
    w = Workload.scaled(args.scale)
    with tempfile.TemporaryDirectory(prefix="bench-compaction-") as d:
        res = run(w, Path(d))
    res["system"] = "hudi_ds_compaction"
    json.dump(res, sys.stdout)
    sys.stdout.write("\n")


def table(r: dict) -> list[str]:
    """Markdown lines for the results file."""
    if "error" in r:
        return [f"compaction: error: {r['error']}"]
    ratio = r["pyarrow_rows_per_s"] / r["compaction_rows_per_s"]
    floor, vs_floor = "-", "-"
    if r.get("floor_rows_per_s"):
        floor = f"{r['floor_rows_per_s']:,.0f}"
        vs_floor = f"{r['floor_rows_per_s'] / r['compaction_rows_per_s']:.2f}x"
        if r.get("floor_cpu_s"):
            vs_floor += f" ({r['compaction_cpu_s'] / r['floor_cpu_s']:.2f}x its CPU time)"
    cpu = ""
    if r.get("pyarrow_cpu_s"):
        cpu = f" ({r['compaction_cpu_s'] / r['pyarrow_cpu_s']:.2f}x its CPU time)"
    return [
        "| compaction | rows | slices | log files | rows/s | pyarrow read+rewrite rows/s | "
        "pyarrow read+sort+rewrite rows/s | floor rows/s (+ bloom filter) | vs pyarrow (time) | "
        "vs floor (time) | snapshot unchanged | correct |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
        f"| hudi_ds | {r['rows']:,} | {r['slices']} | {r['log_files']} | "
        f"{r['compaction_rows_per_s']:,.0f} | {r['pyarrow_rows_per_s']:,.0f} | "
        f"{r['pyarrow_sort_write_rows_per_s']:,.0f} | {floor} | {ratio:.2f}x{cpu} | "
        f"{vs_floor} | {r['snapshot_unchanged']} | {r['correct']} |",
        "",
        f"the pyarrow rewrite: hudi_ds's Parquet options, {r.get('pyarrow_threads')} threads "
        "(as many as the compaction's pool), from the warm new base files. The floor: the same "
        "rewrite sorted by record key with the bloom filter of every key in the footer (Hudi's "
        "defaults: every base file carries one), the least a compaction's new base file takes.",
    ]


if __name__ == "__main__":
    main()
