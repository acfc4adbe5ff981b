"""A filtered read on two columns before and after a clustering sorted by them (z-order, and
linear for comparison).

``python -m bench.clustering --scale S [--json OUT]``: one COPY_ON_WRITE version 9 table of
``256 * S`` files (at least 16) of ``ROWS_PER_FILE`` rows, unpartitioned, written by hudi_ds in
one insert with the metadata table's ``column_stats`` and ``partition_stats``. Its rows arrive
in random order of the two columns ``x`` and ``y`` (uniform over ``0 .. DOMAIN - 1``), so every
file spans both columns' whole range: column statistics can skip nothing. Three queries, each
matching about one file's worth of rows:

* ``box``: ``x`` and ``y`` both in a range of ``1 / sqrt(files)`` of the domain;
* ``x``: ``x`` in a range of ``1 / files`` of the domain;
* ``y``: the same on ``y``.

Then two copies of the table are clustered -- ``hoodie.clustering.plan.strategy.sort.columns=
x,y`` with ``hoodie.layout.optimize.strategy`` ``z-order`` and ``linear``, as many output files
as input files (``...target.file.max.bytes`` = the input bytes / files) -- and the queries run
again. Each read goes through ``HudiTable.read(filters=...)`` with data skipping on (the
default: the metadata table's column statistics prune the files), opens the table afresh and
is the fastest of ``READ_REPEATS`` (its CPU time too); files opened is its ``ReadStats`` (base
and log files read). Every read's rows are checked against the source rows filtered with
pyarrow (ids). The clustering's own time (schedule and run) is reported too.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

READ_REPEATS = 3
ROWS_PER_FILE = 4096
DOMAIN = 1 << 16
LAYOUTS = ("arrival", "z-order", "linear")

HUDI_OPTIONS = {
    "hoodie.table.name": "clustered",
    "hoodie.datasource.write.recordkey.field": "id",
    "hoodie.datasource.write.partitionpath.field": "",
    "hoodie.datasource.write.precombine.field": "seq",
    "hoodie.datasource.write.table.type": "COPY_ON_WRITE",
    "hoodie.datasource.write.operation": "insert",
    "hoodie.write.table.version": "9",
    "hoodie.index.type": "SIMPLE",
    # one new file group per ROWS_PER_FILE rows
    "hoodie.parquet.small.file.limit": "0",
    "hoodie.copyonwrite.insert.auto.split": "false",
    "hoodie.copyonwrite.insert.split.size": str(ROWS_PER_FILE),
    "hoodie.metadata.enable": "true",
    "hoodie.metadata.index.column.stats.enable": "true",
    "hoodie.metadata.index.partition.stats.enable": "true",
    "hoodie.clean.automatic": "false",
}

Filters = list[tuple[str, str, Any]]


def files_of(scale: float) -> int:
    return max(16, round(256 * scale))


def source(files: int) -> pa.Table:
    """The rows in arrival order: ``x`` and ``y`` uniform and independent of the order."""
    n = files * ROWS_PER_FILE
    rng = np.random.default_rng(11)
    seq = np.arange(n, dtype=np.int64)
    digits = pc.utf8_lpad(pa.array(seq).cast(pa.string()), 10, "0")
    return pa.table(
        {
            "id": pc.binary_join_element_wise("k", digits, ""),
            "seq": seq,
            "x": pa.array(rng.integers(0, DOMAIN, n)),
            "y": pa.array(rng.integers(0, DOMAIN, n)),
            "amount": pa.array(rng.integers(0, 10_000, n)),
            "score": pa.array(rng.random(n)),
            "tag": pc.take(
                pa.array([f"tag{i}" for i in range(50)]), pa.array(rng.integers(0, 50, n))
            ),
        }
    )


def queries(files: int) -> dict[str, Filters]:
    """Each matching about ``ROWS_PER_FILE`` rows, away from the domain's edges."""
    side = round(DOMAIN / math.sqrt(files))
    width = DOMAIN // files
    x0, y0 = DOMAIN // 3, DOMAIN // 5
    return {
        "box": [("x", ">=", x0), ("x", "<", x0 + side), ("y", ">=", y0), ("y", "<", y0 + side)],
        "x": [("x", ">=", x0), ("x", "<", x0 + width)],
        "y": [("y", ">=", y0), ("y", "<", y0 + width)],
    }


def _expr(filters: Filters) -> pc.Expression:
    ops: dict[str, Callable[[Any, Any], Any]] = {
        ">=": lambda f, v: f >= v,
        "<": lambda f, v: f < v,
    }
    out = None
    for col, op, value in filters:
        e = ops[op](pc.field(col), value)
        out = e if out is None else out & e
    assert out is not None
    return out


def _shown(filters: Filters) -> str:
    return " and ".join(f"{c} {op} {v}" for c, op, v in filters)


def _ids(t: pa.Table) -> list[str]:
    return sorted(t.column("id").to_pylist())


def best(fn: Callable[[], Any]) -> tuple[float, float, Any]:
    """The fastest of ``READ_REPEATS`` runs of ``fn``: its seconds, the least CPU seconds of a
    run, and the last result."""
    times, cpus, out = [], [], None
    for _ in range(READ_REPEATS):
        t0, c0 = time.perf_counter(), time.process_time()
        out = fn()
        times.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - c0)
    return min(times), min(cpus), out


def write_hudi(data: pa.Table, path: str) -> float:
    import hudi_ds

    t0 = time.perf_counter()
    hudi_ds.write(path, data.combine_chunks(), HUDI_OPTIONS)
    return time.perf_counter() - t0


def cluster(path: str, strategy: str, files: int) -> dict[str, Any]:
    """Schedule and run one clustering of the whole table sorted by ``x, y``."""
    from hudi_ds.services import ServiceContext, clustering

    size = sum(f.stat().st_size for f in Path(path).glob("*.parquet"))
    opts = {
        "hoodie.clustering.plan.strategy.sort.columns": "x,y",
        "hoodie.layout.optimize.strategy": strategy,
        "hoodie.clustering.plan.strategy.target.file.max.bytes": str(size // files + 1),
        # the whole table in one group: one sort over every row
        "hoodie.clustering.plan.strategy.max.bytes.per.group": str(size + 1),
        "hoodie.clustering.plan.strategy.small.file.limit": str(size + 1),
    }
    t0, c0 = time.perf_counter(), time.process_time()
    ctx = ServiceContext.open(path, opts)
    instant = clustering.schedule_clustering(ctx)
    (res,) = clustering.run_clustering(ServiceContext.open(path, opts), instant)
    return {
        "s": time.perf_counter() - t0,
        "cpu_s": time.process_time() - c0,
        "replaced": res.replaced,
        "created": res.created,
        "rows": res.rows,
    }


def read_hudi(path: str, flt: Filters) -> dict[str, Any]:
    from hudi_ds.api import HudiTable

    holder: dict[str, Any] = {}

    def run() -> pa.Table:
        t = HudiTable(path)
        out = t.read(filters=flt)
        holder["stats"] = t.last_read_stats
        return out

    s, cpu, out = best(run)
    st = holder["stats"]
    return {"s": s, "cpu_s": cpu, "files_opened": st.base_files + st.log_files, "ids": _ids(out)}


def run(scale: float) -> dict[str, Any]:
    files = files_of(scale)
    data = source(files)
    out: dict[str, Any] = {
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "scale": scale,
        "files": files,
        "rows": data.num_rows,
        "machine": f"{os.cpu_count()} cpus, load average {os.getloadavg()[0]:.1f}",
        "clustering": {},
        "queries": {},
    }
    qs = queries(files)
    want = {name: _ids(data.filter(_expr(flt))) for name, flt in qs.items()}
    for name, flt in qs.items():
        out["queries"][name] = {"filters": _shown(flt), "matching_rows": len(want[name])}
    with tempfile.TemporaryDirectory(prefix="bench-clustering-") as d:
        root = Path(d)
        tables = {layout: str(root / layout) for layout in LAYOUTS}
        out["write_s"] = write_hudi(data, tables["arrival"])
        del data
        for layout in LAYOUTS[1:]:
            shutil.copytree(tables["arrival"], tables[layout])
            out["clustering"][layout] = cluster(tables[layout], layout, files)
        for layout, path in tables.items():
            for name, flt in qs.items():
                r = read_hudi(path, flt)
                r["correct"] = r.pop("ids") == want[name]
                out["queries"][name][layout] = r
    out["machine_after"] = f"load average {os.getloadavg()[0]:.1f}"
    return out


def table(res: dict[str, Any]) -> list[str]:
    """Markdown lines: per query and layout, files opened, seconds and CPU seconds."""
    lines = [
        f"filtered read on two columns before and after a clustering sorted by (x, y): "
        f"{res['files']:,} files of {ROWS_PER_FILE:,} rows ({res['rows']:,} rows), COW v9, "
        f"metadata-table column stats on; fastest of {READ_REPEATS} reads, each on a fresh "
        f"table handle ({res['machine']}, {res.get('machine_after', '')} at the end)",
        "",
        "| query | layout | files opened | of | seconds | CPU seconds | rows correct |",
        "|---|---|---|---|---|---|---|",
    ]
    for q, r in res["queries"].items():
        for layout in LAYOUTS:
            m = r[layout]
            lines.append(
                f"| {q}: {r['filters']} ({r['matching_rows']:,} rows) | {layout} | "
                f"{m['files_opened']} | {res['files']} | {m['s']:.3f} | {m['cpu_s']:.3f} | "
                f"{m['correct']} |"
            )
    lines += [
        "",
        "| clustering | seconds | CPU seconds | file groups in | out |",
        "|---|---|---|---|---|",
    ]
    for layout, c in res["clustering"].items():
        lines.append(
            f"| {layout} | {c['s']:.2f} | {c['cpu_s']:.2f} | {c['replaced']} | {c['created']} |"
        )
    return lines


def acceptance_rows(res: dict[str, Any] | None) -> list[tuple[str, ...]]:
    """The clustering goal as rows of :func:`bench.report.acceptance`: the two-column filtered
    read after a z-order clustering opens fewer files and takes less CPU time than before it;
    linear's figures shown beside."""
    what = (
        "filtered read on two columns (x and y ranges), after a z-order clustering by (x, y) "
        "vs before (metadata-table column stats)"
    )
    goal = "fewer files opened and less CPU time"
    if not res or not res.get("queries"):
        return [(what, goal, "not measured (python -m bench.clustering)", "-")]
    qs = res["queries"]
    wrong = [f"{q} {lay}" for q, r in qs.items() for lay in LAYOUTS if not r[lay]["correct"]]
    if wrong:
        return [(what, goal, f"no ratio: wrong rows ({', '.join(wrong)})", "no")]
    box = qs["box"]
    before, z, lin = box["arrival"], box["z-order"], box["linear"]
    # CPU time decides: the wall time of a read of a few milliseconds is what the other
    # processes on the machine leave it
    met = z["files_opened"] < before["files_opened"] and z["cpu_s"] < before["cpu_s"]

    def one(q: str) -> str:
        r = qs[q]
        return (
            f"{q}: {r['arrival']['files_opened']} -> {r['z-order']['files_opened']} files "
            f"(linear {r['linear']['files_opened']})"
        )

    def ms(m: dict[str, Any]) -> str:
        return f"{m['cpu_s'] * 1000:.0f} ms CPU ({m['s'] * 1000:.0f} ms)"

    shown = (
        f"box: {before['files_opened']} -> {z['files_opened']} of {res['files']:,} files, "
        f"{ms(before)} -> {ms(z)}, {before['cpu_s'] / z['cpu_s']:.1f}x less CPU; linear "
        f"{lin['files_opened']} files, {ms(lin)}; {one('x')}; {one('y')}"
    )
    return [(what, goal, shown, "yes" if met else "no")]


def main() -> None:
    ap = argparse.ArgumentParser(prog="python -m bench.clustering")
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--json", help="write the results here")
    args = ap.parse_args()
    res = run(args.scale)
    if args.json:
        Path(args.json).write_text(json.dumps(res, indent=1, default=str))
    print("\n".join(table(res)))


if __name__ == "__main__":
    main()
