"""Costs as the timeline grows: a small upsert, read planning, an incremental query's planning
and a streaming micro-batch commit with 100, 1,000 and 10,000 instants of history.

``python -m bench.timeline_scale --scale S [--json OUT] [--chart PNG]``: for each history
length N (``100 * S``, ``1,000 * S``, ``10,000 * S``), a small MERGE_ON_READ table with the
BUCKET index (``PARTITIONS`` partitions x ``BUCKETS`` buckets, ``ROWS_PER_GROUP`` rows a file
group), table versions 6 and 9, the metadata table on and off, in two shapes:

* **archived**: the history archived by hudi_ds's archiver (version 6: Hudi log files
  ``.hoodie/archived/.commits_.archive.*``; version 9: the LSM timeline
  ``.hoodie/timeline/history``, layer files, manifests and ``_version_``), the active timeline
  at its default size (``hoodie.keep.min.commits`` / ``max.commits`` 20 / 30): a healthy table;
* **active**: the N instants left on the active timeline, as when something holds archival
  back (Java's ``HoodieTimelineArchiver`` stops at the earliest pending instant and at the
  earliest commit the last clean retained); here ``hoodie.keep.min.commits`` /
  ``max.commits`` above N hold it back.

The history is built fast (:func:`build_history`), not by N real commits: one ``bulk_insert``
writes the table, then N completed delta commits *before* it are synthesized -- requested,
inflight and completed instant files, one second apart, each an empty commit (no write
stats: Hudi's ``hoodie.allow.empty.commit``, as a micro-batch without rows) carrying the
writer schema -- and, for the archived shape, hudi_ds's own archiver
(:func:`hudi_ds.services.archival.archive`) moves them to the archived timeline in runs of
``ARCHIVE_RUN`` instants, so the archive has the files a table archiving as it goes would
have (one archive log file or LSM layer-0 file a run, the LSM layers compacted by its writer).
With the metadata table on, the history is built with it off and the first (warm-up) write
with ``hoodie.metadata.enable=true`` creates it from the file listing
(``HoodieBackedTableMetadataWriter.initializeFromFilesystem``): its bootstrap instant sorts
before every data instant, so its timeline is consistent with the data timeline. Every built
table is read back (hudi_ds, all rows, and hudi-rs for both versions) before it is measured,
and again after the measured writes (every key once; hudi-rs, through the metadata table when
it is on, reads the same rows as hudi_ds).

Measured for each table (after the warm-up write, which also compacts the delta commits the
history left uncompacted; ``hoodie.compact.inline.max.delta.commits`` is raised to
``COMPACT_EVERY`` so that no compaction falls in the measured commits):

* **upsert**: ``UPSERTS`` upserts of ``UPSERT_ROWS`` existing keys (``hudi_ds.write``, start to
  post-commit services); the median counts; each commit must record only updates;
* **plan**: ``HudiTable(path).plan_read()`` in a fresh process: the first plan and the best of
  three;
* **incremental**: planning an incremental query from the first instant of the history
  (``hoodie.datasource.read.begin.instanttime``), in the same fresh process. On the archived
  shape it reaches the archived timeline, which hudi_ds refuses with ``InstantNotFoundError``
  (time travel and incremental reads read the active timeline): the time is the time to that
  answer, which consults the archived timeline;
* **micro-batch**: a streaming micro-batch of ``UPSERT_ROWS`` rows through the Spark sink's own
  code without Spark (:class:`hudi_ds.spark.streaming.HudiStreamWriter`: a planner's
  ``streamWriter()``, the task's ``write``, the commit runner's ``streamWriter()`` and
  ``commit(messages, batchId)``: the batch-id check against the timeline, the eager rollback
  of failed attempts, publishing with the checkpoint, post-commit services); the median of
  ``UPSERTS`` micro-batches counts, the driver's part (commit runner) reported apart.

Goal: from 100 to 10,000 instants, the upsert, the planning and the micro-batch commit of the
archived shape grow at most 1.5x, in CPU time (each figure is also reported in wall time; on
the shared cores CPU time is the steadier one). The active shape is reported: listing a long active timeline
is O(N), but nothing else should read O(N) instant files per commit or plan.
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
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from bench.timing import report_scale_run

PARTITIONS = 10
BUCKETS = 8
#: rows a file group gets, on average (keys hash to buckets: enough that every bucket of every
#: partition gets a file group)
ROWS_PER_GROUP = 16
HISTORY = (100, 1_000, 10_000)
VERSIONS = (6, 9)
SHAPES = ("archived", "active")
#: instants a run of the archiver takes while the history is built
ARCHIVE_RUN = 100
UPSERT_ROWS = 1_000
UPSERTS = 3
#: delta commits between compactions: the warm-up write compacts, the measured ones do not
COMPACT_EVERY = 20
GOAL_GROWTH = 1.5
IDENTIFIER = "bench_stream"

PLAN_SCRIPT = """
import json, sys, time
from hudi_ds.api import HudiTable
from hudi_ds.errors import InstantNotFoundError
out, cpu = [], []
for _ in range(3):
    t, c = time.perf_counter(), time.process_time()
    plan = HudiTable(sys.argv[1]).plan_read()
    out.append(time.perf_counter() - t)
    cpu.append(time.process_time() - c)
incr, incr_cpu, refused = [], [], None
for _ in range(3):
    t, c = time.perf_counter(), time.process_time()
    try:
        HudiTable(sys.argv[1]).plan_read(
            options={"hoodie.datasource.query.type": "incremental",
                     "hoodie.datasource.read.begin.instanttime": sys.argv[2]})
        refused = False
    except InstantNotFoundError:
        refused = True
    incr.append(time.perf_counter() - t)
    incr_cpu.append(time.process_time() - c)
print(json.dumps({"plan_s": out, "plan_cpu_s": cpu, "slices": len(plan.slices), "incr_s": incr,
                  "incr_cpu_s": incr_cpu, "incr_refused": refused}))
"""


def options(version: int, mdt: bool, shape: str = "archived", n: int = 0) -> dict[str, str]:
    """The write options of a benchmark table."""
    opts = {
        "hoodie.table.name": "tlscale",
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.partitionpath.field": "dt",
        "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.datasource.write.table.type": "MERGE_ON_READ",
        "hoodie.index.type": "BUCKET",
        "hoodie.bucket.index.num.buckets": str(BUCKETS),
        "hoodie.write.table.version": str(version),
        "hoodie.metadata.enable": "true" if mdt else "false",
        "hoodie.compact.inline.max.delta.commits": str(COMPACT_EVERY),
    }
    if shape == "active":
        # archival held back: the whole history stays on the active timeline
        opts["hoodie.keep.min.commits"] = str(n + 100)
        opts["hoodie.keep.max.commits"] = str(n + 110)
    return opts


def rows(ids: np.ndarray, ts: int) -> pa.Table:
    """Rows of keys ``ids`` (partition ``id % PARTITIONS``) at ordering value ``ts``."""
    keys = np.char.add("k", np.char.zfill(ids.astype(str), 8))
    parts = np.char.add("p", np.char.zfill((ids % PARTITIONS).astype(str), 2))
    return pa.table(
        {
            "id": pa.array(keys.tolist(), pa.string()),
            "ts": pa.array(np.full(len(ids), ts, np.int64)),
            "dt": pa.array(parts.tolist(), pa.string()),
            "v": pa.array(ids.astype(np.float64) + ts),
        }
    )


def table_rows() -> int:
    """Rows of a built table."""
    return PARTITIONS * BUCKETS * ROWS_PER_GROUP


def _shift(instant: str, ms: int) -> str:
    """``instant`` moved by ``ms`` milliseconds (digits in, digits out: no time zone)."""
    t = datetime.strptime(instant[:14], "%Y%m%d%H%M%S") + timedelta(
        milliseconds=int(instant[14:]) + ms
    )
    return f"{t.strftime('%Y%m%d%H%M%S')}{t.microsecond // 1000:03d}"


def build_history(
    path: str, version: int, n: int, *, archived: bool, n_rows: int | None = None
) -> list[str]:
    """Write a table and give it ``n`` completed delta commits of history before its data
    commit (see the module docstring); archive them (all but the active timeline's default
    20 / 30 commits) when ``archived``.

    Returns:
        The requested times of the synthesized instants, oldest first.
    """
    import hudi_ds
    from hudi_ds.services import ServiceContext
    from hudi_ds.services.archival import archive
    from hudi_ds.timeline.instant import DELTA_COMMIT, Instant, State
    from hudi_ds.timeline.metadata import CommitMetadata
    from hudi_ds.timeline.timeline import timeline_dir
    from hudi_ds.timeline.view import TableState

    total = table_rows() if n_rows is None else n_rows
    opts = options(version, False)
    hudi_ds.write(
        path,
        rows(np.arange(total), 1),
        {**opts, "hoodie.datasource.write.operation": "bulk_insert"},
    )
    state = TableState.open(path)
    tl = state.load_timeline()
    data = tl.commits()[-1]
    schema = tl.read_commit_metadata(data).extra_metadata["schema"]
    layout = tl.layout_version
    folder = timeline_dir(layout, state.config.timeline_path)
    content = CommitMetadata(
        partition_to_write_stats={},
        extra_metadata={"schema": schema},
        operation_type="UPSERT",
    ).to_bytes(layout)
    storage = state.storage
    times = [_shift(data.requested_time, -1000 * (n + 1 - i)) for i in range(n)]
    run = ARCHIVE_RUN if archived else n
    for start in range(0, n, run):
        for t in times[start : start + run]:
            done = _shift(t, 500) if layout == 2 else None
            for inst, body in (
                (Instant(t, DELTA_COMMIT, State.REQUESTED), b""),
                (Instant(t, DELTA_COMMIT, State.INFLIGHT), content),
                (Instant(t, DELTA_COMMIT, State.COMPLETED, done), content),
            ):
                storage.write_bytes(f"{folder}/{inst.file_name(layout)}", body)
        if archived:
            archive(ServiceContext.open(path, opts))
    return times


def validate(path: str, n_rows: int | None = None) -> None:
    """The built table reads exactly: every key once with its values (hudi_ds, and hudi-rs
    for both table versions)."""
    import hudi

    import hudi_ds

    total = table_rows() if n_rows is None else n_rows
    want = sorted(
        zip(rows(np.arange(total), 1)["id"].to_pylist(), np.arange(total) + 1.0, strict=True)
    )
    got = hudi_ds.read(path, columns=["id", "v"])
    have = sorted(zip(got["id"].to_pylist(), got["v"].to_pylist(), strict=True))
    if have != want:
        raise AssertionError(f"{path}: hudi_ds reads {len(have)} rows, expected {len(want)}")
    rs = pa.Table.from_batches(
        hudi.HudiTableBuilder.from_base_uri(path).build().read(hudi.HudiReadOptions())
    )
    have_rs = sorted(zip(rs["id"].to_pylist(), rs["v"].to_pylist(), strict=True))
    if have_rs != want:
        raise AssertionError(f"{path}: hudi-rs reads {len(have_rs)} rows, expected {len(want)}")


def _upsert_counts(path: str) -> tuple[int, int]:
    """(updates, inserts) the table's latest delta commit recorded."""
    from hudi_ds.api import HudiTable

    tl = HudiTable(path).state.load_timeline()
    stats = tl.read_commit_metadata(tl.filter_actions("deltacommit")[-1]).write_stats()
    return sum(s.num_update_writes or 0 for s in stats), sum(s.num_inserts or 0 for s in stats)


def _check_updates(path: str, k: int, what: str) -> None:
    updates, inserts = _upsert_counts(path)
    if (updates, inserts) != (k, 0):
        raise AssertionError(
            f"{path}: {what} recorded {updates} updates and {inserts} inserts, expected {k} "
            "updates of existing keys"
        )


class _Stream:
    """Micro-batches through the Spark sink's writer, without Spark: what a planner worker,
    a task and the commit runner run (``streamWriter()``, ``write``, ``streamWriter()`` +
    ``commit``), the task's batch id given as Spark's task context would."""

    def __init__(self, path: str, opts: dict[str, str]) -> None:
        from pyspark.sql.types import DoubleType, LongType, StringType, StructField, StructType

        from hudi_ds.spark import streaming
        from hudi_ds.spark.datasource import HudiDataSource

        self.streaming = streaming
        self.schema = StructType(
            [
                StructField("id", StringType()),
                StructField("ts", LongType()),
                StructField("dt", StringType()),
                StructField("v", DoubleType()),
            ]
        )
        self.source = HudiDataSource(
            {
                **opts,
                "hoodie.datasource.write.streaming.checkpoint.identifier": IDENTIFIER,
                "path": path,
            }
        )

    def writer(self) -> Any:
        return self.source.streamWriter(self.schema, False)

    def batch(self, batch_id: int, data: pa.Table) -> tuple[float, float, float]:
        """One micro-batch: seconds of the whole, of the commit runner's part, and its CPU
        seconds."""
        orig = self.streaming.task_batch_id
        self.streaming.task_batch_id = lambda: batch_id
        try:
            t = time.perf_counter()
            msg = self.writer().write(iter(data.to_batches()))
            c, cpu = time.perf_counter(), time.process_time()
            self.writer().commit([msg], batch_id)
            end, cpu_end = time.perf_counter(), time.process_time()
        finally:
            self.streaming.task_batch_id = orig
        return end - t, end - c, cpu_end - cpu


def _check_after(path: str, total: int, mdt: bool) -> None:
    """After the writes: every key once, and hudi-rs reads the same rows as hudi_ds (through
    the metadata table when it is on, which hudi-rs uses on table versions 8 and 9)."""
    import hudi

    import hudi_ds

    got = hudi_ds.read(path, columns=["id", "ts", "v"])
    keys = got["id"].to_pylist()
    if len(keys) != total or len(set(keys)) != total:
        raise AssertionError(f"{path}: {len(keys)} rows ({len(set(keys))} keys), expected {total}")
    builder = hudi.HudiTableBuilder.from_base_uri(path)
    if mdt:
        builder = builder.with_hudi_options({"hoodie.metadata.enable": "true"})
    rs = pa.Table.from_batches(builder.build().read(hudi.HudiReadOptions()))
    cols = ("id", "ts", "v")
    mine = sorted(zip(*(got[c].to_pylist() for c in cols), strict=True))
    theirs = sorted(zip(*(rs[c].to_pylist() for c in cols), strict=True))
    if mine != theirs:
        raise AssertionError(f"{path}: hudi-rs reads other rows than hudi_ds")


def run_table(root: Path, version: int, mdt: bool, shape: str, n: int) -> dict[str, Any]:
    """Build one table, check it, measure it (see the module docstring)."""
    import hudi_ds

    path = str(root / f"t{version}_{shape}_{n}_{int(mdt)}")
    t = time.perf_counter()
    times = build_history(path, version, n, archived=shape == "archived")
    build_s = time.perf_counter() - t
    validate(path)
    opts = options(version, mdt, shape, n)
    total = table_rows()
    rng = np.random.default_rng(n + version)
    k = min(UPSERT_ROWS, total)

    def batch(ts: int) -> pa.Table:
        return rows(np.sort(rng.choice(total, k, replace=False)), ts)

    t = time.perf_counter()
    hudi_ds.write(path, batch(2), opts)  # warm-up: creates the metadata table, compacts
    warm_s = time.perf_counter() - t
    _check_updates(path, k, "the warm-up upsert")
    upsert_s, upsert_cpu = [], []
    for i in range(UPSERTS):
        data = batch(3 + i)
        t, c = time.perf_counter(), time.process_time()
        hudi_ds.write(path, data, opts)
        upsert_s.append(time.perf_counter() - t)
        upsert_cpu.append(time.process_time() - c)
        _check_updates(path, k, f"upsert {i}")
    stream = _Stream(path, opts)
    batch_s, commit_s, commit_cpu = [], [], []
    for i in range(UPSERTS):
        whole, commit, cpu = stream.batch(i, batch(10 + i))
        batch_s.append(whole)
        commit_s.append(commit)
        commit_cpu.append(cpu)
        _check_updates(path, k, f"micro-batch {i}")
    out = subprocess.run(
        [sys.executable, "-c", PLAN_SCRIPT, path, times[0]],
        check=True,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])},
    )
    plan = json.loads(out.stdout)
    _check_after(path, total, mdt)
    shutil.rmtree(path, ignore_errors=True)
    return {
        "version": version,
        "metadata_table": mdt,
        "shape": shape,
        "instants": n,
        "file_groups": plan["slices"],
        "build_s": build_s,
        "warmup_s": warm_s,
        "upsert_s": upsert_s,
        "upsert_cpu_s": upsert_cpu,
        "upsert_median_s": statistics.median(upsert_s),
        "upsert_cpu_median_s": statistics.median(upsert_cpu),
        "batch_s": batch_s,
        "batch_median_s": statistics.median(batch_s),
        "commit_s": commit_s,
        "commit_median_s": statistics.median(commit_s),
        "commit_cpu_median_s": statistics.median(commit_cpu),
        "plan_first_s": plan["plan_s"][0],
        "plan_first_cpu_s": plan["plan_cpu_s"][0],
        "plan_best_s": min(plan["plan_s"]),
        "incr_first_s": plan["incr_s"][0],
        "incr_first_cpu_s": plan["incr_cpu_s"][0],
        "incr_best_s": min(plan["incr_s"]),
        "incr_refused": plan["incr_refused"],
    }


def _series(res: dict[str, Any], version: int, mdt: bool, shape: str) -> list[dict[str, Any]]:
    return sorted(
        (
            r
            for r in res["results"]
            if r["version"] == version and r["metadata_table"] is mdt and r["shape"] == shape
        ),
        key=lambda r: r["instants"],
    )


#: the figures the goal covers: (result field, what it is) -- CPU seconds, which the other
#: engineers' processes on the shared cores disturb less than wall time
GOAL_FIELDS = (
    ("upsert_cpu_median_s", "upsert"),
    ("plan_first_cpu_s", "plan"),
    ("commit_cpu_median_s", "micro-batch commit"),
)


def summary(res: dict[str, Any]) -> dict[str, Any]:
    """Growth from the shortest to the longest history of every measured figure, per table
    version, metadata table and shape, and the worst growth of the goal's figures on the
    archived shape."""
    out: dict[str, Any] = {"growth": {}}
    worst: tuple[float, str] | None = None
    for version in VERSIONS:
        for mdt in (True, False):
            for shape in SHAPES:
                rows_ = _series(res, version, mdt, shape)
                if len(rows_) < 2:
                    continue
                small, big = rows_[0], rows_[-1]
                key = f"v{version}_{'mdt' if mdt else 'no_mdt'}_{shape}"
                g = {
                    f: big[f] / small[f]
                    for f in (
                        "upsert_median_s",
                        "upsert_cpu_median_s",
                        "plan_first_s",
                        "plan_first_cpu_s",
                        "plan_best_s",
                        "incr_first_s",
                        "incr_first_cpu_s",
                        "batch_median_s",
                        "commit_median_s",
                        "commit_cpu_median_s",
                    )
                    if small.get(f, 0) > 0
                }
                out["growth"][key] = {
                    "from": small["instants"],
                    "to": big["instants"],
                    **g,
                }
                if shape == "archived":
                    for f, what in GOAL_FIELDS:
                        if f in g and (worst is None or g[f] > worst[0]):
                            worst = (g[f], f"{what}, {key}")
    if worst is not None:
        out["worst_archived"] = {"growth": worst[0], "where": worst[1]}
    return out


def table(res: dict[str, Any]) -> str:
    lines = [
        "| version | shape | metadata table | instants | 1,000-row upsert (median, CPU) "
        "| plan: first (CPU) / best of 3 | incremental from the first instant (CPU) "
        "| micro-batch (commit runner, its CPU) |",
        "|---|---|---|---|---|---|---|---|",
    ]

    def ms(x: float) -> str:
        return f"{x * 1000:.0f}"

    for r in res["results"]:
        incr = "refused (archived)" if r["incr_refused"] else "planned"
        lines.append(
            f"| {r['version']} | {r['shape']} | {'on' if r['metadata_table'] else 'off'} "
            f"| {r['instants']:,} | {ms(r['upsert_median_s'])} ms "
            f"({ms(r['upsert_cpu_median_s'])} ms) | {ms(r['plan_first_s'])} "
            f"({ms(r['plan_first_cpu_s'])}) / {ms(r['plan_best_s'])} ms "
            f"| {ms(r['incr_first_s'])} ms ({ms(r['incr_first_cpu_s'])} ms), {incr} "
            f"| {ms(r['batch_median_s'])} ms ({ms(r['commit_median_s'])} ms, "
            f"{ms(r['commit_cpu_median_s'])} ms) |"
        )
    return "\n".join(lines)


def chart(res: dict[str, Any], out: Path) -> Path:
    """Four panels against the history length (log-log): the upsert, the read plan, the
    incremental plan and the micro-batch commit; one curve per version, metadata table and
    shape."""
    from bench.charts import _plt

    plt = _plt()
    fig, axes = plt.subplots(1, 4, figsize=(16, 4))
    panels = (
        ("upsert_cpu_median_s", "1,000-row upsert (CPU s)"),
        ("plan_first_cpu_s", "snapshot read planning, fresh process (CPU s)"),
        ("incr_first_cpu_s", "incremental planning from the first instant (CPU s)"),
        ("commit_cpu_median_s", "micro-batch: the commit runner (CPU s)"),
    )
    for ax, (field, title) in zip(axes, panels, strict=True):
        for version in VERSIONS:
            for mdt in (True, False):
                for shape in SHAPES:
                    rows_ = _series(res, version, mdt, shape)
                    if not rows_:
                        continue
                    ax.plot(
                        [r["instants"] for r in rows_],
                        [r[field] for r in rows_],
                        marker="o",
                        linestyle="-" if shape == "archived" else "--",
                        label=f"v{version} {shape}, MDT {'on' if mdt else 'off'}",
                    )
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("instants of history")
        ax.set_title(title, fontsize=10)
        ax.grid(True, which="both", alpha=0.3)
    axes[0].legend(fontsize=7)
    fig.suptitle(
        f"hudi_ds as the timeline grows ({res['date'][:10]}, commit {res['commit']}, "
        f"scale {res['scale']})",
        fontsize=10,
    )
    fig.tight_layout()
    fig.savefig(out, dpi=90)
    plt.close(fig)
    return out


def acceptance_rows(res: dict[str, Any] | None) -> list[tuple[str, ...]]:
    """The timeline goal as rows of :func:`bench.report.acceptance`."""
    what = (
        "upsert, read planning and micro-batch commit time, 100 -> 10,000 instants of "
        "history (archived; table versions 6 and 9, metadata table on and off)"
    )
    s = (res or {}).get("summary") or {}
    worst = s.get("worst_archived")
    if worst is None:
        return [
            (what, f"<= {GOAL_GROWTH}x", "not measured (python -m bench.timeline_scale)", "-", "-")
        ]
    active = [
        g["commit_cpu_median_s"]
        for k, g in s["growth"].items()
        if k.endswith("_active") and "commit_cpu_median_s" in g
    ]
    g = worst["growth"]
    note = f"worst {g:.2f}x ({worst['where']}; CPU time)"
    if active:
        note += f"; long active timeline (reported): micro-batch commit up to {max(active):.1f}x"
    return [(what, f"<= {GOAL_GROWTH}x", note, "yes" if g <= GOAL_GROWTH else "no", "-")]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.timeline_scale", description=__doc__)
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--json", type=Path, help="write the results here")
    ap.add_argument("--chart", type=Path, help="draw the curves into this PNG")
    ap.add_argument("--dir", type=Path, help="write the tables under this directory")
    args = ap.parse_args(argv)

    sizes = sorted({max(10, round(n * args.scale)) for n in HISTORY})
    root = Path(tempfile.mkdtemp(prefix="hudi_tlscale_", dir=args.dir))
    results = []
    try:
        for version in VERSIONS:
            for shape in SHAPES:
                for mdt in (True, False):
                    for n in sizes:
                        r = run_table(root, version, mdt, shape, n)
                        results.append(r)
                        print(
                            f"v{version} {shape}, {n:,} instants, metadata table {mdt}: "
                            f"upsert {r['upsert_median_s'] * 1000:.0f} ms, plan "
                            f"{r['plan_first_s'] * 1000:.0f} ms, incremental "
                            f"{r['incr_first_s'] * 1000:.0f} ms, micro-batch "
                            f"{r['batch_median_s'] * 1000:.0f} ms (commit "
                            f"{r['commit_median_s'] * 1000:.0f} ms)",
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
