"""The record-level index against GLOBAL_SIMPLE: one global upsert into a 1M- and a 16M-row table.

``python -m bench.record_index --scale S``: for each table size (1M and 16M rows, times the
scale) a MERGE_ON_READ table (version 9, partitioned by ``dt``) with the metadata table and its
``record_index`` is written once by ``bulk_insert`` in batches of 1M rows. Each index then runs
the same upsert batch -- 100k random existing keys (newer ``ts``, new values) plus 20% new keys,
times the scale -- into its own copy of that table, in a fresh process (``upsert``
sub-command): ``hoodie.index.type=RECORD_INDEX`` looks the keys up in the record index, and
``GLOBAL_SIMPLE`` joins them with the record keys of every latest base file (both keep the
record index in step: the table has one), and ``GLOBAL_SIMPLE_WITHOUT_RLI`` does so with the
record index turned off (what a table without one pays). Only the upsert is timed; after it the process
checks the table (row count, no key twice, the batch's rows as written) and, for the record
index, times a cold lookup of the batch's keys alone (the index's own cost, without the
write). A small batch (``SMALL_UPDATES`` keys, not scaled) runs too, with RECORD_INDEX and
with GLOBAL_SIMPLE on the table without a record index. Prints a table and one JSON line
(the last).
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


def batch(rows: int, updates: int) -> pa.Table:
    """The upsert batch: ``updates`` random existing keys and 20% new ones, ``ts`` 2000."""
    rng = np.random.default_rng(12)
    new = updates // 5
    ids = np.concatenate([rng.choice(rows, updates, replace=False), np.arange(rows, rows + new)])
    out = make_rows(ids, np.full(len(ids), 2_000), rng)
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


def _check(path: str, rows: int, b: pa.Table, updates: int) -> dict:
    """The table after the upsert: every key once, the batch's rows as written."""
    import hudi_ds

    got = hudi_ds.read(path, columns=["id", "ts", "d1"])
    distinct = pc.count_distinct(got["id"]).as_py()
    mine = got.filter(pc.equal(got["ts"], 2_000)).sort_by("id")
    want = b.select(["id", "d1"]).sort_by("id")
    same = mine["id"].equals(want["id"]) and mine["d1"].equals(want["d1"])
    expected = rows + (b.num_rows - updates)
    ok = got.num_rows == expected and distinct == got.num_rows and same
    return {"correct": bool(ok), "rows": got.num_rows, "expected_rows": expected}


def upsert(path: str, index: str, rows: int, updates: int) -> dict:
    """Time one upsert of :func:`batch` with ``index`` into the table at ``path``."""
    import hudi_ds

    b = batch(rows, updates)
    opts = {**OPTS, "hoodie.index.type": index}
    if index == "GLOBAL_SIMPLE_WITHOUT_RLI":
        opts["hoodie.index.type"] = "GLOBAL_SIMPLE"
        opts["hoodie.metadata.record.index.enable"] = "false"
    _, secs, cpu = timed(lambda: hudi_ds.write(path, b, opts))
    out = {"index": index, "rows": rows, "batch_rows": b.num_rows, "upsert_s": secs, "cpu_s": cpu}
    if index == "RECORD_INDEX":
        from hudi_ds.index.record_level import record_index_locations
        from hudi_ds.metadata import record_index
        from hudi_ds.storage import Storage

        record_index._LOOKUPS.entries.clear()
        record_index._LOOKUPS.held = 0
        keys = b["id"].to_pylist()
        t0 = time.perf_counter()
        found = record_index_locations(Storage(path), keys)
        out["lookup_s"] = time.perf_counter() - t0
        out["lookup_found"] = len(found or {})
        folder = Path(path) / ".hoodie" / "metadata" / "record_index"
        out["index_mb"] = sum(f.stat().st_size for f in folder.iterdir()) / 1e6
    out["check"] = _check(path, rows, b, updates)
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
        "batch s | batch CPU s | record-index lookup alone s | index MB | table correct |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in res.get("runs", []):
        if "error" in r:
            lines.append(
                f"| {r.get('index', 'build')} | {r.get('updates', '-')} | {r['rows']:,} | "
                f"error: {r['error']} | | | | |"
            )
            continue
        lookup = f"{r['lookup_s']:.2f}" if "lookup_s" in r else "-"
        mb = f"{r['index_mb']:.1f}" if "index_mb" in r else "-"
        ok = "yes" if r["check"]["correct"] else f"NO ({r['check']})"
        lines.append(
            f"| {r['index']} | {r.get('updates', res.get('updates', 0)):,} | {r['rows']:,} | "
            f"{r['upsert_s']:.2f} | {r['cpu_s']:.2f} | {lookup} | {mb} | {ok} |"
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
