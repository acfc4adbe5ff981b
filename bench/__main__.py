"""``make bench``: every system on the same workload, each in its own subprocess.

Prints a table of rows/s per phase, peak RSS, files and bytes on disk, and ratios against the
plain-pyarrow ceiling measured in the same run; writes JSON and Markdown to ``bench/results/``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import subprocess
import sys
from pathlib import Path

from bench.workload import Workload, reference

HERE = Path(__file__).resolve().parent


def run_system(name: str, scale: float) -> dict:
    proc = subprocess.run(
        [sys.executable, "-m", "bench.run", name, "--scale", str(scale)],
        capture_output=True,
        text=True,
        cwd=HERE.parent,
        env={**os.environ, "PYTHONPATH": str(HERE.parent)},
    )
    if proc.returncode != 0:
        return {"system": name, "error": proc.stderr.strip().splitlines()[-1:]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(prog="python -m bench")
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--systems", default="pyarrow,hudi_ds_mor_parquet,hudi_ds_mor_avro,hudi_ds_cow")
    args = ap.parse_args()
    w = Workload.scaled(args.scale)
    print(f"workload: {w.base_rows:,} rows, {w.batches} upsert batches of {w.batch_rows:,}")
    expected = reference(w)
    results = []
    for name in args.systems.split(","):
        print(f"running {name} ...", flush=True)
        r = run_system(name, args.scale)
        state = r.pop("state", None)
        if state is not None:
            r["correct"] = state == expected
        results.append(r)
    base = next((r for r in results if r["system"] == "pyarrow" and "error" not in r), None)
    lines = _table(results, base, w)
    print("\n".join(lines))
    out = HERE / "results"
    out.mkdir(exist_ok=True)
    meta = {
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "machine": f"{platform.machine()} {os.cpu_count()} cpus, {platform.python_version()}",
        "workload": w.__dict__,
        "results": results,
    }
    (out / "latest.json").write_text(json.dumps(meta, indent=1, default=str))
    (out / "latest.md").write_text(
        f"# Benchmark {meta['date']}\n\n{meta['machine']}\n\n" + "\n".join(lines) + "\n"
    )


def _table(results: list[dict], base: dict | None, w: Workload) -> list[str]:
    head = (
        "| system | insert rows/s | upsert rows/s (mean) | upsert vs pyarrow write | "
        "read rows/s | lookup s | peak RSS MB (writes / all) | files | MB on disk | correct |"
    )
    lines = [head, "|" + "---|" * 10]
    for r in results:
        if "error" in r:
            lines.append(f"| {r['system']} | error: {r['error']} |" + " |" * 8)
            continue
        ups = r["upsert_s"]
        mean = sum(ups) / len(ups)
        ratio = ""
        if base is not None:
            ratio = f"{mean / (sum(base['upsert_s']) / len(base['upsert_s'])):.2f}x"
        lines.append(
            f"| {r['system']} | {w.base_rows / r['insert_s']:,.0f} | {w.batch_rows / mean:,.0f} | "
            f"{ratio} | {r['read_rows'] / r['read_s']:,.0f} | {r['lookup_s']:.3f} | "
            f"{r.get('write_peak_rss_mb', 0):,.0f} / {r['peak_rss_mb']:,.0f} | {r['files']} | {r['bytes'] / 1e6:,.1f} | "
            f"{r.get('correct', 'n/a')} |"
        )
    return lines


if __name__ == "__main__":
    main()
