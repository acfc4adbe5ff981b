"""The record-level index against GLOBAL_SIMPLE: global upserts into a 1M- and a 16M-row table.

``python -m bench.record_index --scale S``: for each table size (1M and 16M rows, times the
scale) a MERGE_ON_READ table (version 9, partitioned by ``dt``) with the metadata table and its
``record_index`` is written once by ``bulk_insert`` in batches of 1M rows. Each index then runs
``BATCHES`` upsert batches one after the other in one fresh process (``upsert`` sub-command),
on its own copy of that table -- each batch 100k random existing keys (newer ``ts``, new
values) plus 20% new keys, times the scale: the first batch is *cold* (nothing of the index
read yet in the process: only the blocks its keys fall in are inflated and searched), the
second decodes the index files the first only searched, the later ones are *warm* (what a
streaming or upsert-heavy writer doing many batches in one process sees: the record index
files it decoded are kept, :mod:`hudi_ds.metadata.record_index_cache`). ``hoodie.index.type=RECORD_INDEX`` looks the
keys up in the record index, ``GLOBAL_SIMPLE`` joins them with the record keys of every
latest base file (both keep the record index in step: the table has one), and
``GLOBAL_SIMPLE_WITHOUT_RLI`` does so with the record index turned off (what a table without
one pays). Only the upserts are timed; after them the process checks the table (row count,
no key twice, every batch's rows as written, the later batch winning) and, for the record
index, times a lookup of the last batch's keys alone (the index's own cost, without the
write), warm and cold (the process's decoded files dropped first). A small batch
(``SMALL_UPDATES`` keys, not scaled) runs too, with RECORD_INDEX and with GLOBAL_SIMPLE on the
table without a record index. Prints a table and one JSON line (the last); ``upsert_s`` /
``cpu_s`` are the warm batches' best (the acceptance rows), ``cold_s`` / ``cold_cpu_s`` the
first's, ``second_s`` / ``second_cpu_s`` the second's.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from bench.timing import on_copy, run_json, timed
from bench.workload import make_rows

HERE = Path(__file__).resolve().parent
SIZES = (1_000_000, 16_000_000)
UPDATES = 100_000
#: a small batch too (not scaled): the record index reads only the HFile blocks its keys fall
#: in, a join reads every key of the table -- where the index pays off
SMALL_UPDATES = 1_000
#: each upsert's index; GLOBAL_SIMPLE_WITHOUT_RLI: GLOBAL_SIMPLE with the record index turned
#: off (``hoodie.metadata.record.index.enable=false``: the write drops it first, then keeps no
#: index in step) -- what a table without a record index pays
SYSTEMS = ("RECORD_INDEX", "GLOBAL_SIMPLE", "GLOBAL_SIMPLE_WITHOUT_RLI")
BUILD_BATCH = 1_000_000
#: upsert batches per process: the first cold, the second decoding the index files the first
#: only searched, the others warm
BATCHES = 3

OPTS = {
    "hoodie.table.name": "rli",
    "hoodie.datasource.write.recordkey.field": "id",
    "hoodie.datasource.write.partitionpath.field": "dt",
    "hoodie.datasource.write.precombine.field": "ts",
    "hoodie.datasource.write.table.type": "MERGE_ON_READ",
    "hoodie.write.table.version": "9",
    "hoodie.metadata.enable": "true",
    "hoodie.metadata.record.index.enable": "true",
    "hoodie.index.type": "GLOBAL_SIMPLE",
    # services stated explicitly: the timed batch is the upsert alone
    "hoodie.datasource.compaction.async.enable": "false",
    "hoodie.clean.automatic": "false",
    "hoodie.archive.automatic": "false",
}


def _base(rows: int) -> Iterator[pa.RecordBatch]:
    rng = np.random.default_rng(11)
    for start in range(0, rows, BUILD_BATCH):
        ids = np.arange(start, min(rows, start + BUILD_BATCH))
        yield from make_rows(ids, np.full(len(ids), 1_000), rng).to_batches()


def batch(rows: int, updates: int, n: int = 0) -> pa.Table:
    """Upsert batch ``n``: ``updates`` random existing keys and 20% new ones (new to the table
    and to the batches before), ``ts`` 2000 + ``n``."""
    rng = np.random.default_rng(12 + n)
    new = updates // 5
    first = rows + n * new
    ids = np.concatenate([rng.choice(rows, updates, replace=False), np.arange(first, first + new)])
    out = make_rows(ids, np.full(len(ids), 2_000 + n), rng)
    return out.take(pa.array(rng.permutation(out.num_rows)))


def build(path: str, rows: int) -> float:
    import hudi_ds

    first = make_rows(np.arange(1), np.full(1, 1_000), np.random.default_rng(0))
    t0 = time.perf_counter()
    hudi_ds.write(
        path,
        pa.RecordBatchReader.from_batches(first.schema, _base(rows)),
        {**OPTS, "hoodie.datasource.write.operation": "bulk_insert"},
    )
    return time.perf_counter() - t0


def _check(path: str, rows: int, batches: list[pa.Table], updates: int) -> dict:
    """The table after the upserts: every key once, each key of a batch as the last batch
    that wrote it has it."""
    import hudi_ds

    got = hudi_ds.read(path, columns=["id", "ts", "d1"])
    distinct = pc.count_distinct(got["id"]).as_py()
    mine = got.filter(pc.greater_equal(got["ts"], 2_000)).select(["id", "ts", "d1"]).sort_by("id")
    written = pa.concat_tables(b.select(["id", "ts", "d1"]) for b in batches)
    last = written.group_by("id").aggregate([("ts", "max")]).rename_columns(["id", "ts"])
    want = last.join(written, ["id", "ts"]).select(["id", "ts", "d1"]).sort_by("id")
    same = mine.equals(want)
    expected = rows + sum(b.num_rows - updates for b in batches)
    ok = got.num_rows == expected and distinct == got.num_rows and same
    return {"correct": bool(ok), "rows": got.num_rows, "expected_rows": expected}


def upsert(path: str, index: str, rows: int, updates: int) -> dict:
    """Time :data:`BATCHES` upserts of :func:`batch` with ``index`` into the table at ``path``
    in this process (the first cold, the others warm)."""
    import hudi_ds

    opts = {**OPTS, "hoodie.index.type": index}
    if index == "GLOBAL_SIMPLE_WITHOUT_RLI":
        opts["hoodie.index.type"] = "GLOBAL_SIMPLE"
        opts["hoodie.metadata.record.index.enable"] = "false"
    written = []
    times = []
    for n in range(BATCHES):
        b = batch(rows, updates, n)
        _, secs, cpu = timed(lambda b=b: hudi_ds.write(path, b, opts))
        times.append((secs, cpu))
        written.append(b)
    out = {
        "index": index,
        "rows": rows,
        "batch_rows": written[-1].num_rows,
        "batches": BATCHES,
        "cold_s": times[0][0],
        "cold_cpu_s": times[0][1],
        "second_s": times[1][0],
        "second_cpu_s": times[1][1],
        "upsert_s": min(t for t, _ in times[2:]),
        "cpu_s": min(c for _, c in times[2:]),
    }
    if index == "RECORD_INDEX":
        from hudi_ds.index.record_level import record_index_locations
        from hudi_ds.metadata.record_index_cache import cache
        from hudi_ds.storage import Storage

        keys = written[-1]["id"].to_pylist()
        for case in ("lookup_s", "cold_lookup_s"):
            if case == "cold_lookup_s":
                cache().clear()
            t0 = time.perf_counter()
            found = record_index_locations(Storage(path), keys)
            out[case] = time.perf_counter() - t0
        out["lookup_found"] = len(found or {})
        out["cache_mb"] = cache().held / 1e6
        folder = Path(path) / ".hoodie" / "metadata" / "record_index"
        out["index_mb"] = sum(f.stat().st_size for f in folder.iterdir()) / 1e6
    out["check"] = _check(path, rows, written, updates)
    return out


def _run(args: list[str]) -> dict:
    return run_json("bench.record_index", args, error_chars=200)


def run(scale: float) -> dict:
    """Every size and index, each upsert in a fresh process on its own copy of the table."""
    updates = max(10, int(UPDATES * scale))
    out: dict = {"updates": updates, "runs": []}
    with tempfile.TemporaryDirectory(prefix="bench-record-index-") as tmp:
        for size in (int(n * scale) for n in SIZES):
            base = str(Path(tmp) / f"base-{size}")
            built = _run(["build", base, str(size)])
            if "error" in built:
                out["runs"].append({"rows": size, **built})
                continue
            small = [(i, SMALL_UPDATES) for i in ("RECORD_INDEX", "GLOBAL_SIMPLE_WITHOUT_RLI")]
            for index, n in [(i, updates) for i in SYSTEMS] + small:
                res = on_copy(
                    base,
                    str(Path(tmp) / f"{index}-{size}"),
                    lambda copy, i=index, n=n, z=size: _run(["upsert", copy, i, str(z), str(n)]),
                )
                out["runs"].append(
                    {"rows": size, "index": index, "updates": n, "build_s": built["s"], **res}
                )
            shutil.rmtree(base)
    return out


def table(res: dict) -> list[str]:
    """Markdown lines of a :func:`run` result."""
    lines = [
        "| global upsert (existing keys + 20% new) | existing keys | table rows | "
        "warm batch s | warm batch CPU s | cold (1st) batch s | cold batch CPU s | "
        "2nd batch s | 2nd batch CPU s | record-index lookup alone s (warm / cold) | index MB | "
        "table correct |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in res.get("runs", []):
        if "error" in r:
            lines.append(
                f"| {r.get('index', 'build')} | {r.get('updates', '-')} | {r['rows']:,} | "
                f"error: {r['error']} | | | | | | | | |"
            )
            continue
        lookup = f"{r['lookup_s']:.2f} / {r['cold_lookup_s']:.2f}" if "lookup_s" in r else "-"
        mb = f"{r['index_mb']:.1f}" if "index_mb" in r else "-"
        ok = "yes" if r["check"]["correct"] else f"NO ({r['check']})"
        lines.append(
            f"| {r['index']} | {r.get('updates', res.get('updates', 0)):,} | {r['rows']:,} | "
            f"{r['upsert_s']:.2f} | {r['cpu_s']:.2f} | {r['cold_s']:.2f} | "
            f"{r['cold_cpu_s']:.2f} | {r['second_s']:.2f} | {r['second_cpu_s']:.2f} | "
            f"{lookup} | {mb} | {ok} |"
        )
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(prog="python -m bench.record_index")
    sub = ap.add_subparsers(dest="cmd")
    b = sub.add_parser("build")
    b.add_argument("path")
    b.add_argument("rows", type=int)
    u = sub.add_parser("upsert")
    u.add_argument("path")
    u.add_argument("index", choices=SYSTEMS)
    u.add_argument("rows", type=int)
    u.add_argument("updates", type=int)
    ap.add_argument("--scale", type=float, default=1.0)
    args = ap.parse_args()
    if args.cmd == "build":
        res: dict = {"s": build(args.path, args.rows)}
    elif args.cmd == "upsert":
        res = upsert(args.path, args.index, args.rows, args.updates)
    else:
        res = run(args.scale)
        print("\n".join(table(res)))
    json.dump(res, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
