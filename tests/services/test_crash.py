"""A compaction killed with SIGKILL mid-way: readers stay exact, the next run recovers it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from functools import partial
from pathlib import Path

import pyarrow as pa

import hudi_ds
from hudi_ds.services import ServiceContext, compaction
from tests.builders import read_rows
from tests.conftest import table_options

OPTS = table_options("crash", partition="p", buckets=4)

COMPACTOR = r"""
import sys, time
from hudi_ds.services import ServiceContext, compaction
def progress(done, total, what):
    print("op", done, total, flush=True)
    time.sleep(30)  # parked here until killed
ctx = ServiceContext.open(sys.argv[1], progress=progress)
compaction.run_compaction(ctx)
"""


def _batch(k: int) -> pa.Table:
    ids = [f"k{(k * 37 + i) % 120}" for i in range(60)]
    return pa.table(
        {
            "id": ids,
            "ts": [k] * len(ids),
            "p": [f"p{int(i[1:]) % 3}" for i in ids],
            "v": [k] * len(ids),
        }
    )


COLS = ["id", "ts", "p", "v"]
_rows = partial(read_rows, columns=COLS)
_hudi_rs_rows = partial(read_rows, columns=COLS, reader="hudi-rs")


def _kill_mid_compaction(path: str) -> str:
    ctx = ServiceContext.open(path)
    c = compaction.schedule_compaction(ctx)
    assert c is not None
    proc = subprocess.Popen(
        [sys.executable, "-c", COMPACTOR, path], stdout=subprocess.PIPE, text=True, env=os.environ
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()  # the first operation's base file is written
    assert line.startswith("op 1"), line
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    tl = ctx.reload_timeline()  # the killed process wrote C.inflight
    assert tl.get(c) is not None and tl.get(c).is_inflight
    written = list(Path(path).rglob(f"*_{c}.parquet"))
    assert written, "the killed compaction had written a base file"
    return c


def test_sigkill_mid_compaction_recovers_on_next_write(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    opts = {
        **OPTS,
        "hoodie.compact.inline": "true",
        "hoodie.compact.inline.max.delta.commits": "50",
    }
    for k in range(6):
        hudi_ds.write(path, _batch(k), opts)
    before = _rows(path)
    c = _kill_mid_compaction(path)
    # readers see exactly the table as it was (the uncommitted base file is ignored)
    assert _rows(path) == _hudi_rs_rows(path) == before
    # the next write rolls the attempt back and runs the compaction again (inline compaction)
    hudi_ds.write(path, _batch(6), opts)
    table = hudi_ds.HudiTable(path)
    tl = table.timeline
    assert tl.get(c) is not None and tl.get(c).is_completed
    expected = dict(((r[0], r[2]), r) for r in before)
    for r in _batch(6).to_pylist():
        expected[(r["id"], r["p"])] = (r["id"], r["ts"], r["p"], r["v"])
    assert _rows(path) == _hudi_rs_rows(path) == sorted(expected.values())
    # exactly one base file per compacted file group: the killed attempt's files are gone
    bases = list(Path(path).rglob(f"*_{c}.parquet"))
    plan_ops = tl.read_compaction_plan(c).operations or []
    assert len(bases) == len(plan_ops)
    rbs = [i for i in tl.completed().filter_actions("rollback")]
    assert any(c in tl.read_rollback_metadata(r).rolled_back_instants for r in rbs)


def test_sigkill_mid_compaction_recovers_on_compact_run(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    for k in range(4):
        hudi_ds.write(path, _batch(k), OPTS)
    before = _rows(path)
    c = _kill_mid_compaction(path)
    assert _rows(path) == _hudi_rs_rows(path) == before
    from hudi_ds.cli import main

    assert main(["compact", "run", path]) == 0
    ro = hudi_ds.read(
        path, {"hoodie.datasource.query.type": "read_optimized"}, columns=["id", "ts", "p", "v"]
    )
    assert len(ro) == len(before)
    assert _rows(path) == _hudi_rs_rows(path) == before
    assert hudi_ds.HudiTable(path).timeline.get(c).is_completed
