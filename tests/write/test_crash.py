"""A writer killed with SIGKILL mid-write leaves the table exactly as it was."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa

import hudi_ds
from tests.conftest import assert_rows, hudi_rs_table, table_options

WRITER = r"""
import sys, pyarrow as pa, hudi_ds
from hudi_ds import api
from hudi_ds.write.task_writer import coalesced
# the task writer takes the input batch by batch (it joins them otherwise): a longer write
api.coalesced = lambda batches, max_bytes: coalesced(batches, max_rows=500)
path = sys.argv[1]
opts = {
    "hoodie.table.name": "crash", "hoodie.datasource.write.recordkey.field": "id",
    "hoodie.datasource.write.partitionpath.field": "p",
    "hoodie.datasource.write.precombine.field": "ts",
    "hoodie.bucket.index.num.buckets": "8", "write.batch.size": "0.01",
}
def batches():
    # the whole input is tagged before any data file is written (the workload profile goes
    # into the inflight file first, as in Hudi), so the input is finite: 400 batches, whose
    # writing (a log block per 10 KB) takes long enough to be killed in the middle
    for b in range(400):
        ids = [f"k{(b * 500 + i) % 200000}" for i in range(500)]
        yield pa.record_batch({"id": ids, "ts": [b] * 500, "p": [f"p{i % 3}" for i in range(500)]})
        print("batch", b, flush=True)
hudi_ds.write(path, pa.RecordBatchReader.from_batches(next(batches()).schema, batches()), opts)
"""


def _check(path: str, expected: list[tuple]) -> None:
    """hudi_ds and hudi-rs both read exactly ``expected``: every column, no duplicate key."""
    assert_rows(hudi_ds.read(path), expected, ["id", "ts", "p"])
    assert_rows(hudi_rs_table(path), expected, ["id", "ts", "p"])


def _markers(temp: Path) -> list[Path]:
    """The marker files below ``temp``: direct markers and batched ``MARKERS-*`` lists."""
    return [*temp.rglob("*.marker.*"), *temp.rglob("MARKERS-*")]


def test_sigkill_mid_write_then_recover(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    opts = table_options("crash", partition="p", buckets=8)
    first = pa.table({"id": ["a", "b", "c"], "ts": [1, 1, 1], "p": ["p0", "p1", "p2"]})
    hudi_ds.write(path, first, opts)
    before = [("a", 1, "p0"), ("b", 1, "p1"), ("c", 1, "p2")]
    _check(path, before)
    proc = subprocess.Popen(
        [sys.executable, "-c", WRITER, path], stdout=subprocess.PIPE, text=True, env=os.environ
    )
    assert proc.stdout is not None
    temp = Path(path) / ".hoodie" / ".temp"
    seen = 0
    while seen < 40:  # tagging
        line = proc.stdout.readline()
        assert line, "the writer stopped before tagging 40 batches"
        seen += line.startswith("batch")
    deadline = time.time() + 120
    while time.time() < deadline and not _markers(temp):
        time.sleep(0.01)  # writing starts once everything is tagged
    time.sleep(0.2)
    assert proc.poll() is None, "the write finished before it could be killed"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    table = hudi_ds.HudiTable(path)
    pending = [i for i in table.timeline.instants if not i.is_completed]
    assert pending, "the killed write left a pending instant"
    debris = [
        p for p in Path(path).rglob(f"*{pending[0].requested_time}*") if ".hoodie" not in p.parts
    ]
    assert debris, "the killed write had written data files"
    # readers see exactly the table as it was
    _check(path, before)
    # the next write rolls the failed one back and succeeds
    hudi_ds.write(path, pa.table({"id": ["d"], "ts": [2], "p": ["p0"]}), opts)
    _check(path, [*before, ("d", 2, "p0")])
    assert not [p for p in debris if p.exists()]
    assert not _markers(temp)
    table = hudi_ds.HudiTable(path)
    rollbacks = [i for i in table.timeline.instants if i.action == "rollback"]
    assert rollbacks and all(i.is_completed for i in rollbacks)
    md = table.timeline.read_rollback_metadata(rollbacks[0])
    assert md.commits_rollback == [pending[0].requested_time]
