"""``make bench``: every system on the same workload, each in its own subprocess.

Prints, per system, insert rows/s, upsert rows/s (per batch and mean), read rows/s, lookup time,
peak memory of the write phase and of the read phase (VmHWM of the system's own process, reset
at the start of each phase), files and bytes on disk, with ratios against delta-rs at its best
setting and against the best plain-pyarrow write and read measured in the same run. Every
system's final table is compared with the reference (row count, duplicated keys, every column);
a system whose table differs gets no ratio. Then the scaling figure (one upsert batch at growing
table sizes), the memory of a streamed write at three input sizes (1M, 4M, 16M rows), the compaction figure, the
acceptance ratios (:mod:`bench.report`) and the charts (:mod:`bench.charts`). Results go to
``bench/results/latest.{json,md}`` with the machine, versions, date and commit.
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib.metadata as md
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyarrow.parquet as pq

from bench.check import verdict
from bench.report import best_delta, correct
from bench.systems import READ_REPEATS
from bench.workload import Workload, reference

HERE = Path(__file__).resolve().parent
DEFAULT_SYSTEMS = (
    "pyarrow,hudi_ds_mor_parquet,hudi_ds_mor_avro,hudi_ds_mor_parquet_logs,hudi_ds_mor_avro_logs,"
    "hudi_ds_cow,hudi_ds_mor_mdt,hudi_ds_mor_mdt_stats,hudi_ds_mor_simple,"
    "hudi_ds_mor_bloom,hudi_ds_mor_state,hudi_ds_cow_simple,hudi_ds_cow_bloom,hudi_ds_cow_state,"
    "hudi_rs_read,delta_rs,delta_rs_streamed,pyiceberg,spark_parquet,hudi_ds_spark"
)
PACKAGES = ("pyarrow", "pyspark", "deltalake", "pyiceberg", "hudi", "fastavro", "numpy")
#: what each system is, for the table (the hudi_ds table type named for every ratio)
KIND = {
    "pyarrow": "plain Parquet files (ceiling)",
    "hudi_ds_mor_parquet": "hudi_ds MOR, bucket index, parquet log blocks, compaction every 5",
    "hudi_ds_mor_avro": "hudi_ds MOR, bucket index, Avro log blocks, compaction every 5",
    "hudi_ds_mor_parquet_logs": "hudi_ds MOR, bucket index, parquet log blocks, compaction off",
    "hudi_ds_mor_avro_logs": "hudi_ds MOR, bucket index, Avro log blocks, compaction off",
    "hudi_ds_cow": "hudi_ds COW, bucket index",
    "hudi_ds_mor_mdt": "hudi_ds MOR, bucket index, metadata table (files)",
    "hudi_ds_mor_mdt_stats": "hudi_ds MOR, bucket index, metadata table with column/partition stats",
    "hudi_ds_mor_simple": "hudi_ds MOR, SIMPLE index",
    "hudi_ds_mor_bloom": "hudi_ds MOR, BLOOM index",
    "hudi_ds_mor_state": "hudi_ds MOR, state index",
    "hudi_ds_cow_simple": "hudi_ds COW, SIMPLE index",
    "hudi_ds_cow_bloom": "hudi_ds COW, BLOOM index",
    "hudi_ds_cow_state": "hudi_ds COW, state index",
    "hudi_rs_read": "hudi-rs reading the hudi_ds MOR table (read only)",
    "delta_rs": "delta-rs merge (copy-on-write), streamed_exec=False",
    "delta_rs_streamed": "delta-rs merge (copy-on-write), streamed_exec=True",
    "pyiceberg": "pyiceberg upsert (copy-on-write), partitioned by dt",
    "spark_parquet": "Spark df.write.parquet / spark.read.parquet (ceiling)",
    "hudi_ds_spark": "Spark hudi_py, MOR bucket index, defaults (batch writes: no compaction)",
}


def _run(args: list[str]) -> dict:
    """``python -m ARGS`` in a fresh process; its last stdout line as JSON."""
    proc = subprocess.run(
        [sys.executable, "-m", *args],
        capture_output=True,
        text=True,
        cwd=HERE.parent,
        env={**os.environ, "PYTHONPATH": str(HERE.parent)},
    )
    if proc.returncode != 0:
        tail = proc.stderr.strip().splitlines()[-1:] or ["failed"]
        return {"system": args[1], "error": tail[0][:200]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _versions() -> dict[str, str]:
    out = {}
    for p in PACKAGES:
        try:
            out[p] = md.version(p)
        except md.PackageNotFoundError:
            out[p] = "-"
    return out


def _commit() -> str:
    proc = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=HERE.parent
    )
    return proc.stdout.strip() or "-"


def main() -> None:
    ap = argparse.ArgumentParser(prog="python -m bench")
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--systems", default=DEFAULT_SYSTEMS)
    ap.add_argument("--no-scaling", action="store_true")
    ap.add_argument("--no-memory", action="store_true")
    ap.add_argument("--no-compaction", action="store_true")
    ap.add_argument("--no-record-index", action="store_true")
    ap.add_argument("--rerender", action="store_true", help="only redraw latest.md and the charts")
    args = ap.parse_args()
    if args.rerender:
        results_dir = HERE / "results"
        write_results(json.loads((results_dir / "latest.json").read_text()), results_dir)
        return
    started = time.perf_counter()
    w = Workload.scaled(args.scale)
    print(f"workload: {w.base_rows:,} rows, then {w.batches} upsert batches of {w.batch_rows:,}")
    tmp = tempfile.TemporaryDirectory(prefix="bench-reference-")
    ref_path = str(Path(tmp.name) / "reference.parquet")
    pq.write_table(reference(w), ref_path)
    results = []
    for name in args.systems.split(","):
        print(f"running {name} ...", flush=True)
        results.append(
            _run(["bench.run", name, "--scale", str(args.scale), "--reference", ref_path])
        )
    tmp.cleanup()
    lines = _table(results, w)
    print("\n".join(lines))
    scaling: list[dict] = []
    if not args.no_scaling:
        sizes = [int(n * args.scale) for n in (1_000_000, 4_000_000, 16_000_000)]
        batch = int(200_000 * args.scale)
        for system in ("hudi_ds_mor_parquet", "delta_rs"):
            for n in sizes:
                print(f"scaling: {system} at {n:,} rows ...", flush=True)
                scaling.append(_run(["bench.scaling", system, str(n), "--batch", str(batch)]))
        lines += ["", *_scaling_table(scaling, sizes)]
        print("\n".join(_scaling_table(scaling, sizes)))
    memory: list[dict] = []
    if not args.no_memory:
        # 1M rows (about 110 MB of Arrow data) fit under the writer task's buffer budget
        # (write.task.max.size, 256 MB: about 2.3M rows of this schema) and are buffered whole;
        # 4M and 16M rows are past it, where the peak must no longer grow (the ratio checked)
        for n in (int(m * args.scale) for m in (1_000_000, 4_000_000, 16_000_000)):
            print(f"memory: a streamed hudi_ds write of {n:,} rows ...", flush=True)
            memory.append(_run(["bench.memory", str(n)]))
        lines += ["", *_memory_table(memory)]
        print("\n".join(_memory_table(memory)))
    compaction: dict = {}
    if not args.no_compaction:
        from bench.compaction import table as compaction_table

        print("compaction: hudi_ds vs a plain pyarrow rewrite of the same rows ...", flush=True)
        compaction = _run(["bench.compaction", "--scale", str(args.scale)])
        lines += ["", *compaction_table(compaction)]
        print("\n".join(compaction_table(compaction)))
    record_index: dict = {}
    if not args.no_record_index:
        from bench.record_index import table as record_index_table

        print("record index: RECORD_INDEX vs GLOBAL_SIMPLE, one global upsert ...", flush=True)
        record_index = _run(["bench.record_index", "--scale", str(args.scale)])
        lines += ["", *record_index_table(record_index)]
        print("\n".join(record_index_table(record_index)))
    out = HERE / "results"
    out.mkdir(exist_ok=True)
    meta = {
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "commit": _commit(),
        "machine": f"{platform.machine()}, {os.cpu_count()} cpus, Python "
        f"{platform.python_version()}",
        "versions": _versions(),
        "scale": args.scale,
        "workload": w.__dict__,
        "results": results,
        "scaling": scaling,
        "memory": memory,
        "compaction": compaction,
        "record_index": record_index,
        "seconds": round(time.perf_counter() - started, 1),
    }
    (out / "latest.json").write_text(json.dumps(meta, indent=1, default=str))
    from bench import report

    print("\n".join(report.acceptance(meta, None)))
    pngs = write_results(meta, out)
    print(f"python -m bench took {meta['seconds']:,.0f} s; charts: {', '.join(map(str, pngs))}")


def write_results(meta: dict, out: Path) -> list[Path]:
    """Write ``latest.md`` and the charts of ``meta`` (a ``latest.json``) into ``out``;
    ``python -m bench --rerender`` redraws them from ``bench/results/latest.json``."""
    from bench import charts, report
    from bench.compaction import table as compaction_table

    w = Workload(**meta["workload"])
    lines = _table(meta["results"], w)
    sizes = sorted({r["rows"] for r in meta.get("scaling", []) if "rows" in r})
    if sizes:
        lines += ["", *_scaling_table(meta["scaling"], sizes)]
    if meta.get("memory"):
        lines += ["", *_memory_table(meta["memory"])]
    if meta.get("compaction"):
        lines += ["", *compaction_table(meta["compaction"])]
    if meta.get("record_index"):
        from bench.record_index import table as record_index_table

        lines += ["", *record_index_table(meta["record_index"])]
    lines += ["", *report.acceptance(meta, None)]
    table = report.write_rows_table(report.write_shares(meta, None))
    if table:
        lines += ["", "write rows vs their ceilings", "", *table]
    pngs = charts.write_all(meta, out)
    vers = ", ".join(f"{k} {v}" for k, v in meta["versions"].items())
    (out / "latest.md").write_text(
        f"# Benchmark {meta['date']} at commit {meta.get('commit', '-')} "
        f"(scale {meta.get('scale', '-')})\n\n"
        f"{meta['machine']}; {vers}\n\nworkload: "
        f"{w.base_rows:,} rows + {w.batches} x {w.batch_rows:,} upserts "
        f"(+ {w.batch_rows // 100:,} deletes each); {meta.get('seconds', 0):,.0f} s\n\n"
        + "\n".join(lines)
        + "\n\n"
        + "".join(f"![{p.stem}]({p.name})\n" for p in pngs)
    )
    return pngs


def _mean(xs: list[float]) -> float:
    return sum(xs) / len(xs)


def _table(results: list[dict], w: Workload) -> list[str]:
    ok = {r["system"]: r for r in results if "error" not in r}
    base = ok.get("pyarrow")
    delta = best_delta(ok)
    head = (
        "| system | what | insert rows/s | upsert rows/s per batch | upsert mean rows/s | "
        "vs delta-rs best (throughput) | vs pyarrow best write (time) | read rows/s | "
        "read vs pyarrow same columns (time) | lookup s | peak MB write / read | files | "
        "MB on disk | final table correct |"
    )
    lines = [head, "|" + "---|" * 14]
    for r in results:
        name = r["system"]
        if "error" in r:
            lines.append(f"| {name} | {KIND.get(name, '')} | error: {r['error']} |" + " |" * 11)
            continue
        fair = correct(r) is not False  # no ratio for an incorrect result
        reads = f"{r['read_rows'] / r['read_s']:,.0f}"
        read_ratio = f"{r['read_s'] / base['read_s']:.2f}x" if base and fair else "-"
        if r.get("read_only"):
            ins = per_batch = mean_cell = vs_delta = vs_pa = "-"
            wmem = "-"
        else:
            ups = r["upsert_s"]
            mean = _mean(ups)
            ins = f"{w.base_rows / r['insert_s']:,.0f}"
            per_batch = " ".join(f"{w.batch_rows / s / 1000:.0f}k" for s in ups)
            mean_cell = f"{w.batch_rows / mean:,.0f}"
            vs_delta = f"{_mean(delta['upsert_s']) / mean:.2f}x" if delta and fair else "-"
            vs_pa = f"{mean / _mean(base['upsert_s']):.2f}x" if base and fair else "-"
            wmem = f"{r.get('write_hwm_mb', 0):,.0f}"
        what = KIND.get(name, "")
        if r.get("batches_done", w.batches) < w.batches:
            what += f" ({r['batches_done']} of {w.batches} batches: time budget)"
        lines.append(
            f"| {name} | {what} | {ins} | {per_batch} | {mean_cell} | {vs_delta} | "
            f"{vs_pa} | {reads} | {read_ratio} | {r['lookup_s']:.3f} | "
            f"{wmem} / {r.get('read_hwm_mb', 0):,.0f} | {r['files']} | "
            f"{r['bytes'] / 1e6:,.1f} | {verdict(r.get('check'))} |"
        )
    notes = [
        f"reads: every system's timed snapshot read is the fastest of {READ_REPEATS} runs of the "
        "same query (Spark: a new DataFrame each run); its rows and d1 sum are checked."
    ]
    if base:
        notes.append(
            f"pyarrow ceilings: the write ceiling is the faster of hudi_ds's Parquet options and "
            f"pyarrow's defaults ({base.get('write_options')} won); the read ceiling reads "
            f"{', '.join(['id', 'ts', 'd1'])} of the reference final rows from plain Parquet "
            f"({base.get('read_options')} won)."
        )
    if delta:
        notes.append(
            f"delta-rs best: one merge per batch (upserts and deletes, the partition column in "
            f"the predicate), streamed_exec={delta.get('streamed_exec')} was the faster setting."
        )
    notes.append(
        "hudi_ds MOR rows run at hudi_ds's defaults unless named 'compaction off': a compaction "
        "every 5 delta commits (hoodie.compact.inline.max.delta.commits), executed right after "
        "the 5th commit by the embedded writer -- its time is in that upsert batch's time (the "
        "4th upsert), and the read sees base files plus the last batch's log blocks. The "
        "'compaction off' rows (hoodie.datasource.compaction.async.enable=false) keep every "
        "version in log blocks: their read merges all of them."
    )
    notes.append(
        "peak MB: VmHWM of the system's own process (for Spark also its JVM) reset at the start "
        "of the write phase and of the read phase; it includes the workload's input batches."
    )
    return [*lines, "", *notes, *_index_goals(ok)]


def _index_goals(ok: dict[str, dict]) -> list[str]:
    """The index goals, as measured in this run (mean upsert batch time ratios; none where a
    system's final table differs from the reference: the system is named instead)."""

    delta = best_delta(ok)
    ok = {**ok, "delta_best": delta} if delta else ok

    def speedup(fast: str, slow: str) -> str:
        a, b = ok.get(fast), ok.get(slow)
        if a is None or b is None:
            return "n/a"
        wrong = [n for n, r in ((fast, a), (slow, b)) if correct(r) is False]
        if wrong:  # no ratio for an incorrect result
            return f"no ratio (final table incorrect: {', '.join(wrong)})"
        return f"{_mean(b['upsert_s']) / _mean(a['upsert_s']):.2f}x"

    return [
        "",
        "index goals: SIMPLE MOR upserts vs delta-rs merge "
        f"{speedup('hudi_ds_mor_simple', 'delta_best')} (goal >= 5x); state index vs SIMPLE: "
        f"MOR {speedup('hudi_ds_mor_state', 'hudi_ds_mor_simple')}, "
        f"COW {speedup('hudi_ds_cow_state', 'hudi_ds_cow_simple')} (goal >= 2x); "
        f"BLOOM vs SIMPLE: MOR {speedup('hudi_ds_mor_bloom', 'hudi_ds_mor_simple')}, "
        f"COW {speedup('hudi_ds_cow_bloom', 'hudi_ds_cow_simple')}",
    ]


def _memory_table(memory: list[dict]) -> list[str]:
    lines = [
        "| streamed hudi_ds write (insert, MOR) | rows | RSS before MB | peak MB | seconds |",
        "|---|---|---|---|---|",
    ]
    for m in memory:
        if "error" in m:
            lines.append(f"| error | {m['error']} | | | |")
            continue
        lines.append(
            f"| fresh process | {m['rows']:,} | {m['rss_before_mb']:,.0f} | "
            f"{m['peak_mb']:,.0f} | {m['write_s']:.1f} |"
        )
    return lines


def _scaling_table(scaling: list[dict], sizes: list[int]) -> list[str]:
    lines = [
        "| one upsert batch (s) at table size | " + " | ".join(f"{n:,}" for n in sizes) + " |"
        " largest / smallest |",
        "|" + "---|" * (len(sizes) + 2),
    ]
    for system in ("hudi_ds_mor_parquet", "delta_rs"):
        rows = {r.get("rows"): r for r in scaling if r.get("system") == system}
        cells = [
            f"{rows[n]['upsert_s']:.2f}" if n in rows and "upsert_s" in rows[n] else "error"
            for n in sizes
        ]
        ratio = "-"
        if all(n in rows and "upsert_s" in rows[n] for n in (sizes[0], sizes[-1])):
            ratio = f"{rows[sizes[-1]]['upsert_s'] / rows[sizes[0]]['upsert_s']:.2f}"
        lines.append(f"| {system} | " + " | ".join(cells) + f" | {ratio} |")
    return lines


if __name__ == "__main__":
    main()
