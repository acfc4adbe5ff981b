"""The timing loop the process-per-run benchmarks share (``bench.merge``, ``bench.record_index``).

A run is one sub-command of a benchmark module in a fresh Python process (:func:`run_json`: no
cache, allocator or import state carried from an earlier run), usually on a fresh copy of a
table built once (:func:`on_copy`); inside it, the timed call is measured in wall-clock and
CPU seconds (:func:`timed`). CPU seconds count every thread of the process, user and system:
on a machine other work shares they move far less than the wall clock, so a report gives both.
"""

from __future__ import annotations

import gc
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")

#: the repository root: sub-commands run from it, ``bench`` importable
ROOT = Path(__file__).resolve().parent.parent


def cpu_seconds() -> float:
    """CPU seconds of this process so far (user + system, every thread)."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def timed(fn: Callable[[], T]) -> tuple[T, float, float]:
    """``fn()``'s result, its wall-clock seconds and the process's CPU seconds meanwhile.

    A full garbage collection runs before the clock: a fresh process's imports (pyarrow,
    numpy, sqlglot, the engine) leave enough objects pending that the first large call
    otherwise pays Python's generation-2 collection of all of them (measured: 50 ms of a
    0.5 s MERGE, with the GIL held), a cost of the imports, not of the call timed; every
    system timed here gets the same collection."""
    gc.collect()
    t0, c0 = time.perf_counter(), cpu_seconds()
    out = fn()
    return out, time.perf_counter() - t0, cpu_seconds() - c0


def run_json(module: str, args: list[str], error_chars: int = 300) -> dict[str, Any]:
    """Run ``python -m <module> <args>`` in a fresh process; the JSON object its last output
    line holds, or ``{"error": <its last error line>}`` when it failed."""
    proc = subprocess.run(
        [sys.executable, "-m", module, *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    if proc.returncode != 0:
        tail = proc.stderr.strip().splitlines()[-1:] or ["failed"]
        return {"error": tail[0][:error_chars]}
    return dict(json.loads(proc.stdout.strip().splitlines()[-1]))


def on_copy(base: str, copy: str, run: Callable[[str], T]) -> T:
    """``run(copy)`` on a fresh copy of the table at ``base`` (removed after): every timed
    write meets the same table."""
    shutil.copytree(base, copy)
    try:
        return run(copy)
    finally:
        shutil.rmtree(copy, ignore_errors=True)


def report_scale_run(
    results: list[dict[str, Any]],
    scale: float,
    summary: Callable[[dict[str, Any]], Any],
    table: Callable[[dict[str, Any]], str],
    acceptance_rows: Callable[[dict[str, Any]], list[tuple[str, ...]]],
    json_path: Path | None,
    chart: tuple[Callable[[dict[str, Any], Path], object], Path] | None,
) -> int:
    """The end of a growth benchmark (``bench.table_scale``, ``bench.timeline_scale``): the
    run's results with its date, commit and load average, summarised, printed as a table and
    acceptance rows, kept as JSON and drawn as a chart when asked."""
    from bench.__main__ import _commit

    res: dict[str, Any] = {
        "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "commit": _commit(),
        "scale": scale,
        "loadavg": os.getloadavg(),
        "results": results,
    }
    res["summary"] = summary(res)
    print(table(res))
    for row in acceptance_rows(res):
        print(f"{row[0]}: {row[2]} (goal {row[1]}: {row[3]})")
    print(f"load average at the end: {res['loadavg']}")
    if json_path:
        json_path.write_text(json.dumps(res, indent=1))
    if chart:
        draw, path = chart
        draw(res, path)
    return 0
