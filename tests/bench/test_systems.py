"""bench/systems.py: the measurements the report's ceilings are built from."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

import hudi_ds
from bench.systems import _timed_simple_lookups

OPTS = {
    "hoodie.table.name": "t",
    "hoodie.datasource.write.recordkey.field": "id",
    "hoodie.datasource.write.precombine.field": "ts",
    "hoodie.datasource.write.partitionpath.field": "p",
    "hoodie.datasource.write.table.type": "MERGE_ON_READ",
    "hoodie.index.type": "SIMPLE",
}


def _rows(ids: range, ts: int) -> pa.Table:
    return pa.table(
        {
            "id": [f"k{i:04d}" for i in ids],
            "ts": [ts] * len(ids),
            "p": [f"p{i % 2}" for i in ids],
        }
    )


def test_timed_simple_lookups_counts_a_simple_writers_lookup(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    hudi_ds.write(
        path, _rows(range(100), 1), {**OPTS, "hoodie.datasource.write.operation": "insert"}
    )
    looked = [0.0]
    with _timed_simple_lookups(looked):
        hudi_ds.write(path, _rows(range(50, 150), 2), OPTS)
    assert looked[0] > 0
    after = looked[0]
    hudi_ds.write(path, _rows(range(0, 10), 3), OPTS)  # outside: not counted
    assert looked[0] == after
    assert hudi_ds.read(path).num_rows == 150
