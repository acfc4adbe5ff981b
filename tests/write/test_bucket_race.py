"""Two writers create the same bucket's file group at once while a compaction is scheduled:
the logs of the writer that commits second join the other writer's file group (Hudi's
non-blocking concurrency control on bucket tables) -- in the slice the compaction opened, not
the one it supersedes, or its acknowledged rows are gone once the compaction completes."""

from __future__ import annotations

import json
import signal
from functools import partial
from pathlib import Path

import pyarrow as pa
import pytest

import hudi_ds
from hudi_ds.services import ServiceContext
from hudi_ds.services.compaction import run_compaction, schedule_compaction
from tests.builders import who_rows
from tests.conftest import (
    assert_rows,
    finish_process,
    hudi_rs_table,
    spawn_python,
    table_options,
    wait_stopped,
)

ONE_WRITE = r"""
import json, sys
import pyarrow as pa
import hudi_ds
path, opts, rows = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3])
print(json.dumps({"instant": hudi_ds.write(path, pa.Table.from_pylist(rows), opts)}))
"""

COLUMNS = ["id", "ts", "p", "who"]


rows = partial(who_rows, part="p1")


@pytest.mark.parametrize("version", [6, 9])
def test_logs_joining_a_concurrently_created_bucket_follow_a_pending_compaction(
    tmp_path: Path, version: int
) -> None:
    path = str(tmp_path / "t")
    opts = {
        **table_options("bucket", partition="p", table_type="MERGE_ON_READ", buckets=1),
        "hoodie.write.concurrency.mode": "optimistic_concurrency_control",
        "hoodie.write.table.version": str(version),
        "hoodie.compact.inline.max.delta.commits": "1",
        "hoodie.datasource.compaction.async.enable": "false",
        "hoodie.clean.automatic": "false",
    }
    seed = [{"id": "seed", "ts": 0, "p": "p0", "who": 0}]
    hudi_ds.write(path, pa.Table.from_pylist(seed), opts)
    # writer 1 creates p1's bucket and stops before its commit
    a_rows = rows(range(0, 5), 1, 1)
    a = spawn_python(
        ONE_WRITE,
        path,
        json.dumps(opts),
        json.dumps(a_rows),
        env={"HUDI_DS_STALL_AT": "after_files"},
    )
    try:
        wait_stopped(a, 120)
        # writer 2 creates the same bucket and commits first; a compaction is scheduled on it
        hudi_ds.write(path, pa.Table.from_pylist(rows(range(5, 10), 2, 2)), opts)
        services = {k: v for k, v in opts.items() if not k.startswith("hoodie.datasource")}
        assert schedule_compaction(ServiceContext.open(path, services)) is not None
    finally:
        a.send_signal(signal.SIGCONT)
    finish_process(a, 120)
    expected = [(r["id"], r["ts"], r["p"], r["who"]) for r in seed + a_rows]
    expected += [(r["id"], r["ts"], r["p"], r["who"]) for r in rows(range(5, 10), 2, 2)]
    assert_rows(hudi_ds.read(path), expected, COLUMNS)
    run_compaction(ServiceContext.open(path, services))
    assert_rows(hudi_ds.read(path), expected, COLUMNS)
    assert_rows(hudi_rs_table(path), expected, COLUMNS)
