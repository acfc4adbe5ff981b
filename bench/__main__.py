"""``make bench``: every system on the same workload, each in its own subprocess.

Prints, per system, insert rows/s, upsert rows/s (per batch and mean), read rows/s, lookup time,
peak RSS, files and bytes on disk, with ratios against delta-rs and against the plain-pyarrow
ceiling measured in the same run, then the scaling figure (one upsert batch at growing table
sizes). A system whose final table differs from the in-memory reference is marked, not ranked.
Results go to ``bench/results/latest.{json,md}`` with the machine, versions and date.
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
from pathlib import Path

from bench.workload import Workload, reference

HERE = Path(__file__).resolve().parent
DEFAULT_SYSTEMS = (
    "pyarrow,hudi_ds_mor_parquet,hudi_ds_mor_avro,hudi_ds_cow,hudi_ds_mor_simple,"
    "hudi_ds_mor_bloom,hudi_ds_mor_state,hudi_ds_cow_simple,hudi_ds_cow_bloom,hudi_ds_cow_state,"
    "hudi_rs_read,delta_rs,pyiceberg,spark_parquet,hudi_ds_spark"
)
PACKAGES = ("pyarrow", "pyspark", "deltalake", "pyiceberg", "hudi", "fastavro", "numpy")


def _run(args: list[str]) -> dict:
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


def main() -> None:
    ap = argparse.ArgumentParser(prog="python -m bench")
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--systems", default=DEFAULT_SYSTEMS)
    ap.add_argument("--no-scaling", action="store_true")
    ap.add_argument("--no-compaction", action="store_true")
    args = ap.parse_args()
    w = Workload.scaled(args.scale)
    print(f"workload: {w.base_rows:,} rows, then {w.batches} upsert batches of {w.batch_rows:,}")
    expected = reference(w)
    results = []
    for name in args.systems.split(","):
        print(f"running {name} ...", flush=True)
        r = _run(["bench.run", name, "--scale", str(args.scale)])
        state = r.pop("state", None)
        if state is not None:
            r["correct"] = state == expected
            if state != expected:  # how many keys differ (missing, extra, other ts)
                r["wrong_keys"] = sum(state.get(k) != v for k, v in expected.items()) + sum(
                    k not in expected for k in state
                )
        results.append(r)
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
        print("\n".join(lines[-(len(sizes) + 4) :]))
    compaction: dict = {}
    if not args.no_compaction:
        from bench.compaction import table as compaction_table

        print("compaction: hudi_ds vs a plain pyarrow rewrite of the same rows ...", flush=True)
        compaction = _run(["bench.compaction", "--scale", str(args.scale)])
        lines += ["", *compaction_table(compaction)]
        print("\n".join(compaction_table(compaction)))
    out = HERE / "results"
    out.mkdir(exist_ok=True)
    meta = {
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "machine": f"{platform.machine()}, {os.cpu_count()} cpus, Python "
        f"{platform.python_version()}",
        "versions": _versions(),
        "workload": w.__dict__,
        "results": results,
        "scaling": scaling,
        "compaction": compaction,
    }
    (out / "latest.json").write_text(json.dumps(meta, indent=1, default=str))
    vers = ", ".join(f"{k} {v}" for k, v in meta["versions"].items())
    (out / "latest.md").write_text(
        f"# Benchmark {meta['date']}\n\n{meta['machine']}; {vers}\n\nworkload: "
        f"{w.base_rows:,} rows + {w.batches} x {w.batch_rows:,} upserts\n\n"
        + "\n".join(lines)
        + "\n"
    )


def _mean(xs: list[float]) -> float:
    return sum(xs) / len(xs)


def _table(results: list[dict], w: Workload) -> list[str]:
    ok = {r["system"]: r for r in results if "error" not in r}
    base = ok.get("pyarrow")
    delta = ok.get("delta_rs")
    head = (
        "| system | insert rows/s | upsert rows/s per batch | upsert mean rows/s | "
        "vs delta-rs | vs pyarrow write | read rows/s | read vs pyarrow | lookup s | "
        "peak RSS MB (writes/all) | files | MB on disk | correct |"
    )
    lines = [head, "|" + "---|" * 13]
    for r in results:
        if "error" in r:
            lines.append(f"| {r['system']} | error: {r['error']} |" + " |" * 11)
            continue
        ups = r["upsert_s"]
        mean = _mean(ups)
        vs_delta = f"{_mean(delta['upsert_s']) / mean:.1f}x faster" if delta else "-"
        vs_pa = f"{mean / _mean(base['upsert_s']):.2f}x time" if base else "-"
        read_ratio = f"{r['read_s'] / base['read_s']:.2f}x time" if base else "-"
        per_batch = " ".join(f"{w.batch_rows / s / 1000:.0f}k" for s in ups)
        correct = r.get("correct", "n/a")
        mismatch = f"MISMATCH ({r.get('wrong_keys')} keys)"
        lines.append(
            f"| {r['system']} | {w.base_rows / r['insert_s']:,.0f} | {per_batch} | "
            f"{w.batch_rows / mean:,.0f} | {vs_delta} | {vs_pa} | "
            f"{r['read_rows'] / r['read_s']:,.0f} | {read_ratio} | {r['lookup_s']:.3f} | "
            f"{r.get('write_peak_rss_mb', 0):,.0f} / {r['peak_rss_mb']:,.0f} | {r['files']} | "
            f"{r['bytes'] / 1e6:,.1f} | {correct if correct is not False else mismatch} |"
        )
    return lines + _index_goals(ok)


def _index_goals(ok: dict[str, dict]) -> list[str]:
    """Issue 14's goals, as measured in this run (mean upsert batch time ratios; a system
    whose final table differs from the reference is named next to its ratio)."""

    def speedup(fast: str, slow: str) -> str:
        a, b = ok.get(fast), ok.get(slow)
        if a is None or b is None:
            return "n/a"
        wrong = [n for n, r in ((fast, a), (slow, b)) if r.get("correct") is False]
        note = f" (MISMATCH: {', '.join(wrong)})" if wrong else ""
        return f"{_mean(b['upsert_s']) / _mean(a['upsert_s']):.2f}x{note}"

    return [
        "",
        "index goals: SIMPLE MOR upserts vs delta-rs merge "
        f"{speedup('hudi_ds_mor_simple', 'delta_rs')} (goal >= 5x); state index vs SIMPLE: "
        f"MOR {speedup('hudi_ds_mor_state', 'hudi_ds_mor_simple')}, "
        f"COW {speedup('hudi_ds_cow_state', 'hudi_ds_cow_simple')} (goal >= 2x); "
        f"BLOOM vs SIMPLE: MOR {speedup('hudi_ds_mor_bloom', 'hudi_ds_mor_simple')}, "
        f"COW {speedup('hudi_ds_cow_bloom', 'hudi_ds_cow_simple')}",
    ]


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
