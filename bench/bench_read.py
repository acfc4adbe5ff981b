"""Snapshot reads of the bench tables against their yardsticks, with CPU time beside wall time.

The two read acceptance targets, measured apart from ``make bench`` (whose rows each come from one
timed read): the standard workload (:mod:`bench.workload`) written once, untimed, as
``bench.systems`` writes it -- the MOR table at hudi_ds's defaults (base files plus the last
batch's log blocks), the COW table and the compaction-off MOR table (every version in log
blocks) -- then, ``--repeat`` rounds, each system read in turn (the machine's drift hits all
alike):

* ``pyarrow``: ``pq.read_table`` of ``READ_COLUMNS`` of the reference final rows as one plain
  Parquet file (the faster of pyarrow's defaults and hudi_ds's Parquet options, as the bench);
* each table: ``hudi_ds.read(path, columns=READ_COLUMNS)``;
* ``pyarrow floor`` of each MOR table (:func:`parquet_floor`): plain pyarrow reading the same
  columns of the table's base files and Parquet log blocks -- the Parquet work a snapshot read
  cannot skip, before any merge: what bounds the read's ratio to ``pyarrow``; ``floor+keys``:
  that plus the record keys decoded and each hashed once, the least a merge by record key does
  (the bucket index's log blocks carry no record positions).

With ``--spark``, on ``local[2]`` (the bench's session): ``spark.read.parquet`` of the reference
rows, ``spark.read.format("hudi_py")`` of a table Spark wrote (defaults: every batch in log
blocks) with its full schema -- pyspark's Python data sources get no column pruning -- and with
``.schema("id string, ts bigint, d1 double")`` (the reader then reads and merges only what the
query needs), each running the bench's query (``select(READ_COLUMNS).agg(...)``).

Printed per system: the best wall time, rows/s, its ratio to the yardstick, and the CPU time
(user + sys of this process and, for Spark, its JVM and Python workers) of the best round and
its ratio: on a shared 2-core machine the CPU ratio moves far less than the wall one.

Then ``hudi_ds.spark.read_table`` (Spark's own Parquet reader for the slices that are plain
Parquet files) of the COW table, a read-optimized and a snapshot read of the MOR table and a
snapshot of the compaction-off one, each against ``spark.read.parquet`` of the same columns
of the same base files (COW, read-optimized) or of the reference rows (snapshots).

Usage: ``python -m bench.bench_read [--scale 1] [--repeat 5] [--spark] [--read-table]
[--keep DIR] [--phases]`` (``--keep``: write the tables under DIR, or reuse them when already there;
``--phases``: :func:`phases` of the MOR reads, each step's CPU time on one thread;
``--read-table``: only the read_table rows; ``--json FILE``: their results, which
``bench.report`` turns into acceptance rows).
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

import hudi_ds
from bench.systems import (
    READ_COLUMNS,
    SPARK_OPTS,
    _cached,
    _hudi_ds,
    _spark,
    hudi_source,
    parquet_options,
    with_is_deleted,
)
from bench.workload import Workload, insert_batch, reference, upsert_batches
from hudi_ds.layout.file_group import FileSlice
from hudi_ds.log.block import BlockType
from hudi_ds.log.reader import scan_log_bytes
from hudi_ds.schema.meta import RECORD_KEY_METADATA_FIELD
from hudi_ds.table import reader as slice_reader
from hudi_ds.table.table import ReadableTable

TABLES = {  # name -> (table type, compaction)
    "mor": ("MERGE_ON_READ", True),
    "cow": ("COPY_ON_WRITE", True),
    "mor_logs": ("MERGE_ON_READ", False),
}


def tree_cpu() -> float:
    """User + sys seconds of this process and its live descendants (Spark's JVM, its Python
    workers; Spark reuses its workers, so they are alive between queries)."""
    children: dict[int, list[tuple[int, float]]] = {}
    tick = os.sysconf("SC_CLK_TCK")
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        used = (int(fields[11]) + int(fields[12])) / tick
        children.setdefault(int(fields[1]), []).append((int(stat.parent.name), used))
    total = time.process_time()
    todo = [os.getpid()]
    while todo:
        for pid, used in children.get(todo.pop(), []):
            total += used
            todo.append(pid)
    return total


def build(root: Path, w: Workload) -> Path:
    """The reference final rows as plain Parquet (both settings) and the three tables."""
    ref = root / "ref.parquet"
    if not ref.exists():
        final = reference(w)
        pq.write_table(final, root / "final-hudi_ds.parquet", **parquet_options(final))
        pq.write_table(final, root / "final-default.parquet")
        pq.write_table(final, ref)
    for name, (table_type, compaction) in TABLES.items():
        d = root / name
        if not (d / "table").exists():
            d.mkdir(exist_ok=True)
            _hudi_ds(table_type, "parquet", compaction=compaction)(w, d, str(ref))
    return ref


def build_spark(spark: Any, root: Path, w: Workload) -> Path:
    """The bench's ``hudi_py`` table (defaults: MOR, batch writes compact nothing)."""
    path = root / "spark"
    if path.exists():
        return path
    opts = SPARK_OPTS
    base = _cached(spark, with_is_deleted(insert_batch(w)))
    insert = {**opts, "hoodie.datasource.write.operation": "insert"}
    base.write.format("hudi_py").mode("append").options(**insert).save(str(path))
    base.unpersist()
    for step in upsert_batches(w):
        ups = _cached(spark, hudi_source(step))
        ups.write.format("hudi_py").mode("append").options(**opts).save(str(path))
        ups.unpersist()
    return path


Timed = dict[str, list[tuple[float, float, int]]]  # name -> [(wall s, cpu s, rows)]


def timed(out: Timed, name: str, read: Callable[[], int]) -> None:
    c0, t0 = tree_cpu(), time.perf_counter()
    rows = read()
    out.setdefault(name, []).append((time.perf_counter() - t0, tree_cpu() - c0, rows))


def report(out: Timed, yardstick: str) -> None:
    best = {k: min(v) for k, v in out.items()}
    wall0, cpu0, _ = best[yardstick]
    load = os.getloadavg()[0]
    print(
        f"load average {load:.1f}; best of {len(out[yardstick])} rounds (wall, cpu of that round)"
    )
    for name, (wall, cpu, rows) in best.items():
        print(
            f"  {name:26s} {rows / wall / 1e6:7.2f}M rows/s  {wall:6.3f} s  {wall / wall0:5.2f}x"
            f"   cpu {cpu:6.3f} s  {cpu / cpu0:5.2f}x   rows {rows:,}"
        )


def parquet_floor(table: Path, keys: bool = False) -> Callable[[], int]:
    """The Parquet work a snapshot read of ``table`` cannot skip, done by plain pyarrow:
    ``READ_COLUMNS`` of every base file and Parquet log block of the latest file slices (one
    slice per thread at a time, as ``hudi_ds.read`` reads them). Planned once, untimed; returns
    the rows decoded, every version of a key counted (no merge, no delete blocks).

    ``keys``: plus the least a merge by record key does (the log blocks carry no record
    positions: Hudi's writers give them from table version 8 on, and only for records whose
    index lookup read the base file's keys -- not the bucket index, which routes by key hash):
    the record keys decoded too, and each hashed once -- a slice's log
    keys grouped (``dictionary_encode``) when it has several blocks, the base keys probed in
    the log keys (``index_in``). Deletes, ordering values and the output's assembly are left
    out, so this is below any merge's cost."""
    t = ReadableTable(str(table))
    plan = t.plan_read(columns=READ_COLUMNS)
    cols = [*READ_COLUMNS, RECORD_KEY_METADATA_FIELD] if keys else READ_COLUMNS

    def one(s: FileSlice) -> int:
        n = 0
        base_keys = None
        log_keys: list[pa.ChunkedArray] = []
        if s.base_file is not None:
            with t.storage.open_input_file(s.base_file.path) as f:
                rows = pq.ParquetFile(f).read(columns=cols, use_threads=False)
                n += rows.num_rows
                base_keys = rows.column(RECORD_KEY_METADATA_FIELD) if keys else None
        for lf in s.log_files:
            for b in scan_log_bytes(t.storage.read_bytes(lf.path), lf.path, copy=False).blocks:
                if b.block_type == BlockType.PARQUET_DATA:
                    pf = pq.ParquetFile(pa.BufferReader(b.content), pre_buffer=False)
                    rows = pf.read(columns=cols, use_threads=False)
                    n += rows.num_rows
                    if keys:
                        log_keys.append(rows.column(RECORD_KEY_METADATA_FIELD))
        if log_keys:
            logged = pa.chunked_array([c for k in log_keys for c in k.chunks]).combine_chunks()
            if len(log_keys) > 1:
                pc.dictionary_encode(logged)
            if base_keys is not None:
                pc.index_in(base_keys, value_set=logged)
        return n

    def read() -> int:
        with ThreadPoolExecutor(t.read_threads) as pool:
            return sum(pool.map(one, plan.slices))

    return read


#: the phases of a projected snapshot read of a file slice (:func:`phases`)
PHASES = ("log scan", "base file", "log blocks", "merge", "project")


def phases(table: Path) -> Callable[[], dict[str, float]]:
    """The CPU time of each step of ``hudi_ds.read(columns=READ_COLUMNS)``'s slices, on one
    thread (base files too): the log files read and split into blocks, the base files read,
    the log blocks decoded, the versions merged (the probe of the base keys, the filter of
    the untouched rows, the merge engine) and the result projected -- the steps of
    :func:`hudi_ds.table.reader.read_file_slice` for slices with log blocks, planned once,
    untimed. Returns per phase the seconds and, under ``rows``, the rows read."""
    t = ReadableTable(str(table))
    plan = t.plan_read(columns=READ_COLUMNS)
    ctx, vis, r = plan.context, plan.visibility, slice_reader

    def read() -> dict[str, float]:
        out = dict.fromkeys(PHASES, 0.0)
        rows = 0
        for s in plan.slices:
            st = r.ReadStats()
            c0 = time.thread_time()
            blocks = r.scan_slice_logs(t.storage, s, vis, st, ctx)
            c1 = time.thread_time()
            if not blocks:
                raise ValueError(f"{table}: a slice without log blocks (not what this times)")
            schema = r._merge_projection(ctx, READ_COLUMNS, blocks)
            base = r._base_or_none(t.storage, s.base_file, schema, ctx, st, False, True)
            c2 = time.thread_time()
            parts = r._decode_parts(blocks, schema, ctx, st, True)
            c3 = time.thread_time()
            merged = r._merge_slice(
                base, parts, ctx.merge_spec, schema, ctx, base is not None, READ_COLUMNS
            )
            c4 = time.thread_time()
            rows += merged.select(READ_COLUMNS).num_rows
            c5 = time.thread_time()
            for k, a, b in zip(PHASES, (c0, c1, c2, c3, c4), (c1, c2, c3, c4, c5), strict=True):
                out[k] += b - a
        out["rows"] = rows
        return out

    return read


def run_phases(root: Path, repeat: int) -> None:
    """:func:`phases` of each MOR table, best of ``repeat`` per phase, beside the CPU time of
    pyarrow's read of the final rows (its yardstick)."""
    ref = root / "final-default.parquet"
    for name in ("mor", "mor_logs"):
        read = phases(root / name / "table")
        best: dict[str, float] = {}
        yard = float("inf")
        for _ in range(repeat):
            for k, v in read().items():
                best[k] = min(best.get(k, v), v)
            c0 = time.process_time()
            pq.read_table(ref, columns=READ_COLUMNS)
            yard = min(yard, time.process_time() - c0)
        total = sum(best[k] for k in PHASES)
        print(
            f"{name}: one thread, best of {repeat} per phase (load {os.getloadavg()[0]:.1f}; "
            f"pyarrow's read of the final rows: cpu {yard * 1e3:.1f} ms)"
        )
        for k in PHASES:
            print(f"  {k:12s} {best[k] * 1e3:7.1f} ms  {best[k] / yard:5.2f}x")
        print(
            f"  {'total':12s} {total * 1e3:7.1f} ms  {total / yard:5.2f}x   rows {best['rows']:,.0f}"
        )


def run_embedded(root: Path, repeat: int) -> None:
    out: Timed = {}
    floors = {name: parquet_floor(root / name / "table") for name in TABLES if name != "cow"}
    key_floors = {
        name: parquet_floor(root / name / "table", keys=True) for name in TABLES if name != "cow"
    }

    def hudi_read(name: str) -> Callable[[], int]:
        def read() -> int:
            t = hudi_ds.read(str(root / name / "table"), columns=READ_COLUMNS)
            pc.sum(t["d1"]).as_py()
            return t.num_rows

        return read

    for _ in range(repeat):
        for setting in ("default", "hudi_ds"):

            def one(setting: str = setting) -> int:
                t = pq.read_table(root / f"final-{setting}.parquet", columns=READ_COLUMNS)
                pc.sum(t["d1"]).as_py()
                return t.num_rows

            timed(out, f"pyarrow ({setting})", one)
        for name in TABLES:
            timed(out, f"hudi_ds {name}", hudi_read(name))
        for name, floor in floors.items():
            timed(out, f"pyarrow floor {name}", floor)
        for name, floor in key_floors.items():
            timed(out, f"floor+keys {name}", floor)
    # the yardstick: the faster pyarrow setting
    faster = min(("pyarrow (default)", "pyarrow (hudi_ds)"), key=lambda k: min(out[k])[0])
    print("embedded: hudi_ds.read(columns=READ_COLUMNS) vs pq.read_table of the same rows")
    print("  (pyarrow floor: the same columns of the table's base files and Parquet log blocks;")
    print("  floor+keys: and their record keys, each hashed once, the least a merge by key does)")
    report(out, faster)


def run_spark(root: Path, ref: Path, w: Workload, repeat: int) -> None:
    from pyspark.sql import functions as F

    spark = _spark()
    path = str(build_spark(spark, root, w))

    def query(df: Any) -> Callable[[], int]:
        def run() -> int:
            agg = df.select(*READ_COLUMNS).agg(F.count("id").alias("n"), F.sum("d1").alias("s"))
            return int(agg.collect()[0]["n"])

        return run

    def hudi(schema: str | None = None) -> Any:
        reader = spark.read.format("hudi_py")
        return (reader.schema(schema) if schema else reader).load(path)

    query(hudi())()  # starts the Python workers
    out: Timed = {}
    for _ in range(repeat):
        timed(out, "spark.read.parquet", query(spark.read.parquet(str(ref))))
        timed(out, "hudi_py (full schema)", query(hudi()))
        timed(out, "hudi_py .schema(id,ts,d1)", query(hudi("id string, ts bigint, d1 double")))
    print("Spark local[2]: select(id, ts, d1).agg(count, sum)")
    report(out, "spark.read.parquet")
    run_read_table(spark, root, ref, repeat)
    spark.stop()


#: the read_table rows: (name, table, read options, reads base files only); each is timed
#: against ``spark.read.parquet`` of the same columns of the same base files (a read of base
#: files only) or of the reference final rows (a snapshot merging log files)
READ_TABLE_ROWS = (
    ("cow", "cow", {}, True),
    ("mor read_optimized", "mor", {"hoodie.datasource.query.type": "read_optimized"}, True),
    ("mor snapshot", "mor", {}, False),
    ("mor_logs snapshot", "mor_logs", {}, False),
)


def run_read_table(spark: Any, root: Path, ref: Path, repeat: int) -> dict[str, Any]:
    """``hudi_ds.spark.read_table`` (Spark's own Parquet reader for base-file-only slices)
    of the embedded bench tables against ``spark.read.parquet`` of the same files and columns,
    each pair timed in turn every round. Returns per row the best wall and CPU times of both,
    their ratios, the rows read, and for a snapshot whether its row count is the reference's."""
    from pyspark.sql import functions as F

    from hudi_ds.spark import read_table

    def query(load: Callable[[], Any]) -> Callable[[], int]:
        def run() -> int:
            df = load().select(*READ_COLUMNS)
            agg = df.agg(F.count("id").alias("n"), F.sum("d1").alias("s"))
            return int(agg.collect()[0]["n"])

        return run

    results: dict[str, Any] = {}
    ref_rows = pq.ParquetFile(ref).metadata.num_rows
    for name, table, opts, base_only in READ_TABLE_ROWS:
        path = str(root / table / "table")

        def load(path: str = path, opts: dict[str, str] = opts) -> Any:
            return read_table(spark, path, opts, columns=READ_COLUMNS)

        yard = load().inputFiles() if base_only else [str(ref)]
        query(load)()  # warm: planning caches, the Python workers
        out: Timed = {}
        for _ in range(repeat):
            timed(out, "spark.read.parquet", query(lambda yard=yard: spark.read.parquet(*yard)))
            timed(out, f"read_table {name}", query(load))
        what = "the same base files" if base_only else "the reference final rows"
        print(f"Spark local[2]: read_table {name} vs spark.read.parquet of {what}")
        report(out, "spark.read.parquet")
        (wall, cpu, rows), (pwall, pcpu, prows) = (
            min(out[f"read_table {name}"]),
            min(out["spark.read.parquet"]),
        )
        results[name] = {
            "read_table_s": wall,
            "parquet_s": pwall,
            "ratio": wall / pwall,
            "cpu_ratio": cpu / pcpu,
            "rows": rows,
            "parquet_rows": prows,
            "base_only": base_only,
            # a snapshot and a COW read return the final rows; a read-optimized one may not
            "correct": rows == ref_rows if table == "cow" or not base_only else None,
            "load": os.getloadavg()[0],
        }
    return results


#: the acceptance goals of the read_table rows: base files only at most 1.2x,
#: a MOR snapshot at most 3x
READ_TABLE_GOALS = {
    "cow": 1.2,
    "mor read_optimized": 1.2,
    "mor snapshot": 3.0,
    "mor_logs snapshot": 3.0,
}


def acceptance_rows(res: dict[str, Any] | None) -> list[tuple[str, ...]]:
    """The read_table goals as rows of :func:`bench.report.acceptance`: (target, goal,
    measured, met)."""
    rows = []
    for name, goal in READ_TABLE_GOALS.items():
        target = f"Spark: read_table {name} vs spark.read.parquet of the same columns"
        r = (res or {}).get(name)
        if r is None:
            rows.append(
                (target, f"<= {goal}x time", "not measured (bench.bench_read --read-table)", "-")
            )
        elif r["correct"] is False:
            rows.append((target, f"<= {goal}x time", f"no ratio: {r['rows']:,} rows read", "no"))
        else:
            measured = f"{r['ratio']:.2f}x (cpu {r['cpu_ratio']:.2f}x, load {r['load']:.1f})"
            rows.append(
                (target, f"<= {goal}x time", measured, "yes" if r["ratio"] <= goal else "no")
            )
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--spark", action="store_true", help="also the Spark reads")
    ap.add_argument("--read-table", action="store_true", help="only the Spark read_table rows")
    ap.add_argument(
        "--phases", action="store_true", help="also the CPU time of each step of the MOR reads"
    )
    ap.add_argument("--json", help="write the read_table rows' results to this file")
    ap.add_argument("--keep", help="write the tables under this directory (reused when there)")
    args = ap.parse_args()
    w = Workload.scaled(args.scale)
    with tempfile.TemporaryDirectory(prefix="bench_read-") as tmp:
        root = Path(args.keep or tmp)
        root.mkdir(parents=True, exist_ok=True)
        ref = build(root, w)
        if args.read_table:
            spark = _spark()
            results = run_read_table(spark, root, ref, args.repeat)
            spark.stop()
            if args.json:
                Path(args.json).write_text(json.dumps(results, indent=1) + "\n")
            return
        run_embedded(root, args.repeat)
        if args.phases:
            run_phases(root, args.repeat)
        if args.spark:
            run_spark(root, ref, w, args.repeat)


if __name__ == "__main__":
    main()
