"""Costs as tables grow: a small upsert, read planning and the driver's commit at 1k, 10k and
100k file groups.

``python -m bench.table_scale --scale S [--json OUT] [--chart PNG]``: for each size, a
MERGE_ON_READ table with the BUCKET index (``BUCKETS`` buckets a partition, table version 6,
Hudi's other defaults) over ``10 * S``, ``100 * S`` and ``1000 * S`` partitions -- 1k, 10k and
100k file groups at S=1 -- written once with the metadata table (``hoodie.metadata.enable``)
and once without:

* **build**: one ``bulk_insert`` of ``ROWS_PER_GROUP`` rows a file group (each bucket of each
  partition gets a file group): the benchmark writes the table in one commit, not thousands.
  Its commit carries one WriteStatus per file group: the time of ``WriteClient.commit`` for
  it is **the driver's commit of N WriteStatus messages** (the same call a Spark driver makes
  with the statuses of its tasks' commit messages).
* **upsert**: ``UPSERTS`` upserts of ``UPSERT_ROWS`` random existing keys (``hudi_ds.write``,
  the whole write: start, tag, write, commit; no compaction falls in them: it runs every 5
  delta commits). The median counts. Each upsert's commit metadata must show every row as an
  update (none an insert: a key tagged to a new file group would duplicate it).
* **stream**: ``STREAM_BATCHES`` micro-batches of the Spark streaming sink
  (``df.writeStream.format("hudi_py")``), each ``UPSERT_ROWS`` random existing keys, driven
  without Spark as its processes call the sink (:mod:`hudi_ds.spark.streaming`): a planner's
  ``streamWriter()`` for the task, the task's ``write`` (its batch id set as Spark's task
  context would), then the commit runner's fresh ``streamWriter()`` and ``commit(messages,
  batch id)``. The time of the last two, the driver's commit of a micro-batch (median; the
  first batch's too: it scans the timeline back for a checkpoint of the stream), is **the
  streaming micro-batch commit** (the sink's compaction is off: ``STREAM_OPTIONS``).
  Each batch must record its rows as updates, as the upserts.
* **plan**: planning a snapshot read (``HudiTable(path).plan_read()``) in a fresh process:
  the first plan (the process decodes the timeline and groups the files: the goal's figure)
  and the best of three (a process's later plans reuse what it decoded).

Goals: from 1k to 100k file groups a 1,000-row upsert's time grows at most 3x with the metadata
table on; planning stays under 1 s at 100k file groups; the driver commit of 100k WriteStatus
messages takes under 10 s. The streaming micro-batch commit's growth is reported beside the
upsert's (no goal).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from bench.timing import report_scale_run

BUCKETS = 100
PARTITIONS = (10, 100, 1000)
#: rows a file group gets from the build (the costs measured grow with file groups, not rows)
ROWS_PER_GROUP = 4
UPSERT_ROWS = 1_000
UPSERTS = 3
STREAM_BATCHES = 3
#: the stream's sink options over the table's: no compaction (it would fall in the 5th delta
#: commit, and a background compactor of 100,000 file groups would run beside the timings)
STREAM_OPTIONS = {
    "hoodie.datasource.compaction.async.enable": "false",
    "hoodie.compact.inline": "false",
}
GOAL_UPSERT_GROWTH = 3.0
GOAL_PLAN_S = 1.0
GOAL_COMMIT_S = 10.0

PLAN_SCRIPT = """
import json, sys, time
from hudi_ds.api import HudiTable
out = []
for _ in range(3):
    t = time.perf_counter()
    plan = HudiTable(sys.argv[1]).plan_read()
    out.append(time.perf_counter() - t)
print(json.dumps({"plan_s": out, "slices": len(plan.slices)}))
"""


def _options(partitions: int, mdt: bool) -> dict[str, str]:
    return {
        "hoodie.table.name": "scale",
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.partitionpath.field": "dt",
        "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.datasource.write.table.type": "MERGE_ON_READ",
        "hoodie.index.type": "BUCKET",
        "hoodie.bucket.index.num.buckets": str(BUCKETS),
        "hoodie.metadata.enable": "true" if mdt else "false",
    }


def _rows(ids: np.ndarray, ts: int, partitions: int) -> pa.Table:
    keys = np.char.add("k", np.char.zfill(ids.astype(str), 10))
    parts = np.char.add("p", np.char.zfill((ids % partitions).astype(str), 4))
    return pa.table(
        {
            "id": pa.array(keys.tolist(), pa.string()),
            "ts": pa.array(np.full(len(ids), ts, np.int64)),
            "dt": pa.array(parts.tolist(), pa.string()),
            "v": pa.array(ids.astype(np.float64)),
        }
    )


class _CommitTimer:
    """Times every ``WriteClient.commit`` call of this process (the driver's commit)."""

    def __init__(self) -> None:
        from hudi_ds.write.client import WriteClient

        self.times: list[tuple[int, float]] = []
        self._cls = WriteClient
        self._orig = WriteClient.commit
        timer = self

        def timed(client: Any, instant: str, statuses: Any, *a: Any, **kw: Any) -> Any:
            t = time.perf_counter()
            try:
                return timer._orig(client, instant, statuses, *a, **kw)
            finally:
                timer.times.append((len(statuses), time.perf_counter() - t))

        WriteClient.commit = timed  # type: ignore[method-assign]

    def close(self) -> None:
        self._cls.commit = self._orig  # type: ignore[method-assign]


def _upsert_counts(path: str) -> tuple[int, int]:
    """(updates, inserts) the table's latest delta commit recorded."""
    from hudi_ds.api import HudiTable

    tl = HudiTable(path).state.load_timeline()
    last = tl.commits()[-1]
    stats = tl.read_commit_metadata(last).write_stats()
    return sum(s.num_update_writes or 0 for s in stats), sum(s.num_inserts or 0 for s in stats)


def run_size(root: Path, partitions: int, mdt: bool) -> dict[str, Any]:
    import hudi_ds

    path = str(root / f"t_{partitions}_{int(mdt)}")
    opts = _options(partitions, mdt)
    n = partitions * BUCKETS * ROWS_PER_GROUP
    timer = _CommitTimer()
    try:
        t = time.perf_counter()
        hudi_ds.write(
            path,
            _rows(np.arange(n), 1, partitions),
            {**opts, "hoodie.datasource.write.operation": "bulk_insert"},
        )
        build_s = time.perf_counter() - t
        statuses, commit_s = timer.times[-1]
        rng = np.random.default_rng(partitions)
        k = min(UPSERT_ROWS, n // 2)
        upsert_s, upsert_cpu, upsert_commit = [], [], []
        for i in range(UPSERTS):
            batch = _rows(rng.choice(n, k, replace=False), 2 + i, partitions)
            t, c = time.perf_counter(), time.process_time()
            hudi_ds.write(path, batch, opts)
            upsert_s.append(time.perf_counter() - t)
            upsert_cpu.append(time.process_time() - c)
            upsert_commit.append(timer.times[-1][1])
            updates, inserts = _upsert_counts(path)
            if (updates, inserts) != (k, 0):
                raise AssertionError(
                    f"{path}: upsert {i} recorded {updates} updates and {inserts} inserts, "
                    f"expected {k} updates of existing keys"
                )
        stream = _stream(path, opts, n, partitions, rng, 2 + UPSERTS)
    finally:
        timer.close()
    out = subprocess.run(
        [sys.executable, "-c", PLAN_SCRIPT, path],
        check=True,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])},
    )
    plan = json.loads(out.stdout)
    groups = plan["slices"]
    shutil.rmtree(path, ignore_errors=True)
    return {
        "partitions": partitions,
        "metadata_table": mdt,
        "file_groups": groups,
        "rows": n,
        "build_s": build_s,
        "commit_statuses": statuses,
        "commit_s": commit_s,
        "upsert_s": upsert_s,
        "upsert_cpu_s": upsert_cpu,
        "upsert_commit_s": upsert_commit,
        "upsert_median_s": statistics.median(upsert_s),
        "plan_first_s": plan["plan_s"][0],
        "plan_best_s": min(plan["plan_s"]),
        **stream,
    }


def _stream(
    path: str,
    opts: dict[str, str],
    n: int,
    partitions: int,
    rng: np.random.Generator,
    ts: int,
) -> dict[str, Any]:
    """``STREAM_BATCHES`` micro-batches of the streaming sink without Spark (each a planner's
    writer and task, then the commit runner's writer and commit); the commit runner's part
    timed."""
    from hudi_ds.spark import streaming
    from hudi_ds.spark.datasource import HudiDataSource
    from hudi_ds.spark.types import arrow_to_spark_schema

    sink = HudiDataSource({**opts, **STREAM_OPTIONS, "path": path})
    k = min(UPSERT_ROWS, n // 2)
    schema = arrow_to_spark_schema(_rows(np.arange(1), ts, partitions).schema)
    task_batch_id = streaming.task_batch_id
    commit_s, commit_cpu, batch_s = [], [], []
    try:
        for batch_id in range(STREAM_BATCHES):
            rows = _rows(rng.choice(n, k, replace=False), ts + batch_id, partitions)
            t0 = time.perf_counter()
            # the batch id a task reads from Spark's task context
            streaming.task_batch_id = lambda b=batch_id: b
            msg = sink.streamWriter(schema, False).write(iter(rows.to_batches()))
            t, c = time.perf_counter(), time.process_time()
            sink.streamWriter(schema, False).commit([msg], batch_id)
            commit_s.append(time.perf_counter() - t)
            commit_cpu.append(time.process_time() - c)
            batch_s.append(time.perf_counter() - t0)
            updates, inserts = _upsert_counts(path)
            if (updates, inserts) != (k, 0):
                raise AssertionError(
                    f"{path}: micro-batch {batch_id} recorded {updates} updates and {inserts} "
                    f"inserts, expected {k} updates of existing keys"
                )
    finally:
        streaming.task_batch_id = task_batch_id
    return {
        "stream_commit_s": commit_s,
        "stream_commit_cpu_s": commit_cpu,
        "stream_batch_s": batch_s,
        "stream_commit_median_s": statistics.median(commit_s),
        "stream_batch_median_s": statistics.median(batch_s),
    }


def summary(res: dict[str, Any]) -> dict[str, Any]:
    """The goals' figures from a run's ``results``."""
    out: dict[str, Any] = {}
    for mdt in (True, False):
        rows = sorted(
            (r for r in res["results"] if r["metadata_table"] is mdt),
            key=lambda r: r["file_groups"],
        )
        if len(rows) < 2:
            continue
        key = "mdt" if mdt else "no_mdt"
        small, big = rows[0], rows[-1]
        out[key] = {
            "from_groups": small["file_groups"],
            "to_groups": big["file_groups"],
            "upsert_growth": big["upsert_median_s"] / small["upsert_median_s"],
            "stream_commit_s": big["stream_commit_median_s"],
            "stream_first_commit_s": big["stream_commit_s"][0],
            "stream_commit_growth": big["stream_commit_median_s"] / small["stream_commit_median_s"],
            "plan_best_s": big["plan_best_s"],
            "plan_first_s": big["plan_first_s"],
            "commit_statuses": big["commit_statuses"],
            "commit_s": big["commit_s"],
        }
    return out


def table(res: dict[str, Any]) -> str:
    lines = [
        "| file groups | partitions | metadata table | build | driver commit (WriteStatus) "
        "| 1,000-row upsert (median, CPU) | stream micro-batch commit (median, CPU) "
        "| plan: first / best of 3 |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in res["results"]:
        cpu = statistics.median(r["upsert_cpu_s"])
        stream_cpu = statistics.median(r["stream_commit_cpu_s"])
        lines.append(
            f"| {r['file_groups']:,} | {r['partitions']:,} | {'on' if r['metadata_table'] else 'off'} "
            f"| {r['build_s']:.1f} s | {r['commit_s']:.2f} s ({r['commit_statuses']:,}) "
            f"| {r['upsert_median_s']:.2f} s ({cpu:.2f} s) "
            f"| {r['stream_commit_median_s']:.2f} s ({stream_cpu:.2f} s) "
            f"| {r['plan_first_s']:.2f} s / {r['plan_best_s']:.2f} s |"
        )
    return "\n".join(lines)


def chart(res: dict[str, Any], out: Path) -> Path:
    """Four panels against the file group count (log-log): the upsert, the streaming
    micro-batch commit, the read plan and the driver's commit, metadata table on and off."""
    from bench.charts import _plt

    plt = _plt()
    fig, axes = plt.subplots(1, 4, figsize=(17, 4))
    panels = (
        ("upsert_median_s", "1,000-row upsert (s)"),
        ("stream_commit_median_s", "streaming micro-batch commit, 1,000 rows (s)"),
        ("plan_first_s", "snapshot read planning, fresh process (s)"),
        ("commit_s", "driver commit, one WriteStatus a file group (s)"),
    )
    for ax, (field, title) in zip(axes, panels, strict=True):
        for mdt in (True, False):
            rows = sorted(
                (r for r in res["results"] if r["metadata_table"] is mdt),
                key=lambda r: r["file_groups"],
            )
            ax.plot(
                [r["file_groups"] for r in rows],
                [r[field] for r in rows],
                marker="o",
                label="metadata table on" if mdt else "off",
            )
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("file groups")
        ax.set_title(title, fontsize=10)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(
        f"hudi_ds as tables grow ({res['date'][:10]}, commit {res['commit']}, scale {res['scale']})",
        fontsize=10,
    )
    fig.tight_layout()
    fig.savefig(out, dpi=90)
    plt.close(fig)
    return out


def acceptance_rows(res: dict[str, Any] | None) -> list[tuple[str, ...]]:
    """The scale goals as rows of :func:`bench.report.acceptance`."""
    up = "1,000-row upsert time, 1k -> 100k file groups, metadata table on"
    plan = "snapshot read planning at 100k file groups (metadata table on / off)"
    commit = "driver commit of 100k WriteStatus messages (metadata table on / off)"
    stream = "streaming micro-batch commit (1,000 rows), 1k -> 100k file groups, metadata table on"
    s = (res or {}).get("summary") or {}
    if "mdt" not in s or "no_mdt" not in s:
        why = "not measured (python -m bench.table_scale)"
        return [
            (up, f"<= {GOAL_UPSERT_GROWTH}x", why, "-", "-"),
            (stream, "- (reported)", why, "-", "-"),
            (plan, f"< {GOAL_PLAN_S} s", why, "-", "-"),
            (commit, f"< {GOAL_COMMIT_S} s", why, "-", "-"),
        ]
    on, off = s["mdt"], s["no_mdt"]
    if "stream_commit_growth" in on and "stream_commit_growth" in off:
        stream_row = (
            f"{stream} ({on['from_groups']:,} -> {on['to_groups']:,})",
            "- (reported)",
            f"{on['stream_commit_growth']:.2f}x, {on['stream_commit_s']:.2f} s at "
            f"{on['to_groups']:,}{_first(on)} (off: {off['stream_commit_growth']:.2f}x, "
            f"{off['stream_commit_s']:.2f} s{_first(off)})",
            "-",
            "-",
        )
    else:
        stream_row = (stream, "- (reported)", "not measured in this run", "-", "-")
    g = on["upsert_growth"]
    worst_plan = max(on["plan_first_s"], off["plan_first_s"])
    worst_commit = max(on["commit_s"], off["commit_s"])
    return [
        (
            f"{up} ({on['from_groups']:,} -> {on['to_groups']:,})",
            f"<= {GOAL_UPSERT_GROWTH}x",
            f"{g:.2f}x (off: {off['upsert_growth']:.2f}x)",
            "yes" if g <= GOAL_UPSERT_GROWTH else "no",
            "-",
        ),
        stream_row,
        (
            plan,
            f"< {GOAL_PLAN_S} s",
            f"{on['plan_first_s']:.2f} s / {off['plan_first_s']:.2f} s (the first plan of a "
            f"fresh process; the process's later plans: {on['plan_best_s']:.2f} s / "
            f"{off['plan_best_s']:.2f} s)",
            "yes" if worst_plan < GOAL_PLAN_S else "no",
            "-",
        ),
        (
            f"{commit} ({on['commit_statuses']:,})",
            f"< {GOAL_COMMIT_S} s",
            f"{on['commit_s']:.2f} s / {off['commit_s']:.2f} s",
            "yes" if worst_commit < GOAL_COMMIT_S else "no",
            "-",
        ),
    ]


def _first(row: dict[str, Any]) -> str:
    """The stream's first micro-batch commit, where the run recorded it."""
    first = row.get("stream_first_commit_s")
    return "" if first is None else f", the first micro-batch {first:.2f} s"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.table_scale", description=__doc__)
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--json", type=Path, help="write the results here")
    ap.add_argument("--chart", type=Path, help="draw the curves into this PNG")
    ap.add_argument("--dir", type=Path, help="write the tables under this directory")
    args = ap.parse_args(argv)

    sizes = sorted({max(1, round(p * args.scale)) for p in PARTITIONS})
    root = Path(tempfile.mkdtemp(prefix="hudi_scale_", dir=args.dir))
    results = []
    try:
        for partitions in sizes:
            for mdt in (True, False):
                r = run_size(root, partitions, mdt)
                results.append(r)
                print(
                    f"{r['file_groups']:,} file groups, metadata table {mdt}: "
                    f"upsert {r['upsert_median_s']:.2f} s, "
                    f"stream commit {r['stream_commit_median_s']:.2f} s, "
                    f"plan {r['plan_first_s']:.2f} s first / {r['plan_best_s']:.2f} s best, "
                    f"commit of {r['commit_statuses']:,} statuses {r['commit_s']:.2f} s",
                    flush=True,
                )
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return report_scale_run(
        results,
        args.scale,
        summary,
        table,
        acceptance_rows,
        args.json,
        (chart, args.chart) if args.chart else None,
    )


if __name__ == "__main__":
    sys.exit(main())
