"""bench/bench_read.py: the per-phase timing of the MOR reads reads what ``hudi_ds.read`` does;
the floors decode every version."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq

import hudi_ds
from bench.bench_read import PHASES, READ_COLUMNS, build, parquet_floor, phases
from bench.workload import Workload


def test_phases_read_the_final_rows_of_both_mor_tables(tmp_path: Path) -> None:
    ref = build(tmp_path, Workload.scaled(0.001))
    want = pq.read_table(ref).num_rows
    for name in ("mor", "mor_logs"):
        table = tmp_path / name / "table"
        got = phases(table)()
        assert set(got) == {*PHASES, "rows"}
        assert all(v >= 0 for v in got.values())
        assert got["rows"] == want == hudi_ds.read(str(table), columns=READ_COLUMNS).num_rows
        # the floors decode every version of every key (more rows than the merged read), and
        # the key floor the same rows as the Parquet one
        versions = parquet_floor(table)()
        assert versions > want and parquet_floor(table, keys=True)() == versions
