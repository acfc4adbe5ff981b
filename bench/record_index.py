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
write), warm and cold (the process's decoded files dropped first), and the *floor* of the last
batch (:func:`floor`): plain pyarrow/numpy doing only the work Hudi's protocol requires of that
batch on that table -- the files its commit wrote, each with as many rows, and the lookup of its
keys in an index held sorted in memory -- what bounds the goals (at least 3x GLOBAL_SIMPLE at
16M rows, at most 1.3x growth of the batch from 1M to 16M rows). A small batch
(``SMALL_UPDATES`` keys, not scaled) runs too, with RECORD_INDEX and with GLOBAL_SIMPLE on the
table without a record index. Prints a table, each goal beside what the floor allows
(:func:`goals`), and one JSON line (the last); ``upsert_s`` /
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
import pyarrow.parquet as pq

from bench.timing import cpu_seconds, on_copy, run_json, timed
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
#: only searched, the other three warm (the best taken: the machine is shared)
BATCHES = 5
#: rounds of the floor (its best taken)
FLOOR_ROUNDS = 3

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
    if index == "RECORD_INDEX":
        # the keys before the last batch: its own new ones are not in the index yet
        out["floor"] = floor(path, written[-1], rows + (BATCHES - 1) * (updates // 5))
    return out


def _last_commit_files(path: str) -> tuple[list[tuple[str, int, str | None]], int]:
    """The files the table's last commit wrote: (path, rows, the previous base file it
    rewrote or None), and the keys it inserted."""
    from hudi_ds.layout.naming import parse_base_file_name
    from hudi_ds.storage import Storage
    from hudi_ds.table_config import TableConfig
    from hudi_ds.timeline.timeline import Timeline

    storage = Storage(path)
    config = TableConfig.load(storage)
    tl = Timeline.load(storage, config.timeline_layout_version, config.timeline_path).completed()
    last = tl.last()
    assert last is not None
    files: list[tuple[str, int, str | None]] = []
    inserts = 0
    for st in tl.read_commit_metadata(last).write_stats():
        assert st.path is not None and st.partition_path is not None
        inserts += st.num_inserts
        prev = None
        if not st.is_delta and st.prev_commit not in (None, "", "null"):
            for f in storage.list_files(st.partition_path):
                b = parse_base_file_name(f.name)
                if b is not None and b.file_id == st.file_id and b.instant_time == st.prev_commit:
                    prev = str(Path(path) / f.path)
            assert prev is not None, f"no base file {st.file_id} at {st.prev_commit}"
        files.append((str(Path(path) / st.path), st.num_writes, prev))
    return files, inserts


def floor(path: str, last: pa.Table, keys: int) -> dict:
    """The floor of the last batch written into the table at ``path`` (``keys`` keys in it
    before the batch), in CPU seconds (best of :data:`FLOOR_ROUNDS`): plain pyarrow and numpy
    doing only what Hudi's protocol requires of that batch on that table -- no Hudi code timed.

    * the lookup: the batch's keys searched (``numpy.searchsorted``) in every key of the table
      held sorted in memory with each one's file group (a warm record index without its file
      format), the batch's rows then ordered by file group (routed);
    * the writes: every file the batch's commit wrote, with as many rows of the table's schema
      (meta columns included) as it holds, Snappy Parquet as the table's: a log file per file
      group the updates touch (its Parquet data block's content), and for a small base file the
      inserts were packed into, the read of the previous base file and the write of the new
      one; the record index's new entries (the inserted keys, sorted, with their locations)
      written once as Parquet.

    Left out (Hudi's too, but small or not Parquet): log block headers, the ``files``
    partition's records, column stats, the commit's JSON and the timeline files."""
    files, inserts = _last_commit_files(path)
    logs = sum(1 for p, _, prev in files if ".log." in p)
    rewrites = sum(1 for _, _, prev in files if prev is not None)
    # untimed: the rows written (the schema of a base file), the index's keys sorted
    written = [p for p, _, _ in files if ".log." not in p]
    sample = pq.read_table(written[0] if written else next(Path(path).glob("*/*.parquet")))
    most = max(n for _, n, _ in files)
    while sample.num_rows < most:
        sample = pa.concat_tables([sample, sample])
    ids = np.char.add(b"id-", np.arange(keys).astype("S20"))
    order = np.argsort(ids, kind="stable")
    index_keys = ids[order]
    index_groups = (order % max(1, len(files))).astype(np.int32)
    del ids, order
    batch_keys = last["id"]
    best = float("inf")
    with tempfile.TemporaryDirectory(prefix="bench-record-index-floor-") as out:
        for r in range(FLOOR_ROUNDS):
            c0 = cpu_seconds()
            wanted = batch_keys.to_numpy(zero_copy_only=False).astype(index_keys.dtype)
            at = np.minimum(np.searchsorted(index_keys, wanted), len(index_keys) - 1)
            found = index_keys[at] == wanted
            group = np.where(found, index_groups[at], -1)
            routed = last.take(pa.array(np.argsort(group, kind="stable")))
            for n, (_, rows, prev) in enumerate(files):
                rewritten = pq.read_table(prev) if prev is not None else None
                new = sample.slice(0, rows)
                if rewritten is not None:
                    new = pa.concat_tables([rewritten, new]).slice(0, rows)
                pq.write_table(new, f"{out}/{r}-{n}.parquet", compression="snappy")
            added = pc.sort_indices(routed["id"].slice(0, inserts))
            entries = pa.table(
                {
                    "key": routed["id"].slice(0, inserts).take(added),
                    "partition": routed["dt"].slice(0, inserts).take(added),
                    "file_group": pa.array(group[:inserts]).take(added),
                }
            )
            pq.write_table(entries, f"{out}/{r}-index.parquet", compression="snappy")
            best = min(best, cpu_seconds() - c0)
            assert int(found.sum()) == last.num_rows - inserts
    return {
        "cpu_s": best,
        "files": len(files),
        "log_files": logs,
        "base_rewrites": rewrites,
        "rows_written": sum(n for _, n, _ in files),
        "inserts": inserts,
    }


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
        if "floor" in r:
            f = r["floor"]
            lines.append(
                f"| floor: pyarrow/numpy writing the last batch's {f['files']} files "
                f"({f['log_files']} log, {f['base_rewrites']} base rewrites, "
                f"{f['rows_written']:,} rows) + sorted-key lookup | "
                f"{r.get('updates', 0):,} | {r['rows']:,} | - | {f['cpu_s']:.2f} | "
                "| | | | | | |"
            )
    return lines + goals(res)


def _of(res: dict, rows: int, index: str = "RECORD_INDEX") -> dict | None:
    """The run of ``index`` on the ``rows``-row table with the benchmark's batch size."""
    for r in res.get("runs", []):
        same = r.get("index") == index and r["rows"] == rows
        if same and "error" not in r and r.get("updates") == res.get("updates"):
            return dict(r)
    return None


def goals(res: dict) -> list[str]:
    """The two goals in warm-batch CPU seconds, each beside what its floor allows: the
    speed-up over GLOBAL_SIMPLE at the larger table (goal 3x; the most any writer doing the
    floor's work could reach is GLOBAL_SIMPLE / floor) and the record-index batch's growth from
    the smaller table to the larger (goal at most 1.3x; the floor's own growth)."""
    sizes = sorted({r["rows"] for r in res.get("runs", [])})
    if len(sizes) < 2:
        return []
    small, large = sizes[0], sizes[-1]
    runs = [_of(res, small), _of(res, large)]
    gs = _of(res, large, "GLOBAL_SIMPLE")
    out = ["", "| goal (warm batch CPU s) | goal | measured | floor allows |", "|---|---|---|---|"]
    if runs[1] is not None and gs is not None and "floor" in runs[1]:
        r, g, f = runs[1]["cpu_s"], gs["cpu_s"], runs[1]["floor"]["cpu_s"]
        out.append(
            f"| RECORD_INDEX speed-up over GLOBAL_SIMPLE at {large:,} rows | >= 3x | "
            f"{g / r:.2f}x ({g:.2f} / {r:.2f}) | {g / f:.2f}x (GLOBAL_SIMPLE / floor {f:.2f}) |"
        )
    if all(x is not None and "floor" in x for x in runs):
        a, b = (x["cpu_s"] for x in runs if x is not None)
        c, d = (x["floor"]["cpu_s"] for x in runs if x is not None)
        out.append(
            f"| RECORD_INDEX batch growth {small:,} -> {large:,} rows | <= 1.3x | "
            f"{b / a:.2f}x ({a:.2f} -> {b:.2f}) | floor grows {d / c:.2f}x ({c:.2f} -> {d:.2f}) |"
        )
    return out


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
