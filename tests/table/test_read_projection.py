"""Projected reads (``columns=[...]``) return exactly those columns of the full read's rows.

A projected read reads less: the record key field instead of ``_hoodie_record_key`` under the
simple key generator, only the delete flags for slices without logs. These tables mix what the
merge must still see: late updates (a lower ordering value that must lose), updates that win,
new keys, and deletes, in MOR log blocks of both formats and in COW base files.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import hudi_ds
from tests.golden import row_set


def _rows(ids: np.ndarray, ts: np.ndarray, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    return pa.table(
        {
            "id": pa.array([f"k{i}" for i in ids]),  # builds the fixture, not a hot path
            "ts": pa.array(ts, pa.int64()),
            "dt": pa.array([f"p{i % 3}" for i in ids]),
            "v": pa.array(rng.random(len(ids))),
            "n": pa.array(rng.integers(0, 1000, len(ids)), pa.int32()),
        }
    )


def _model(batches: list[pa.Table], deleted: list[str]) -> dict[str, tuple[int, float]]:
    state: dict[str, tuple[int, float]] = {}
    for b in batches:
        for k, t, v in zip(
            b["id"].to_pylist(), b["ts"].to_pylist(), b["v"].to_pylist(), strict=True
        ):
            if k not in state or t >= state[k][0]:
                state[k] = (t, v)
    for k in deleted:
        state.pop(k, None)
    return state


@pytest.mark.parametrize(
    "table_type,block",
    [("MERGE_ON_READ", "parquet"), ("MERGE_ON_READ", "avro"), ("COPY_ON_WRITE", "parquet")],
)
def test_projected_reads_equal_full_read(tmp_path: Path, table_type: str, block: str) -> None:
    path = str(tmp_path / "t")
    opts = {
        "hoodie.table.name": "t",
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.partitionpath.field": "dt",
        "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.datasource.write.table.type": table_type,
        "hoodie.logfile.data.block.format": block,
        "hoodie.index.type": "BUCKET",
        "hoodie.bucket.index.num.buckets": "2",
    }
    base = _rows(np.arange(600), np.full(600, 10), 1)
    hudi_ds.write(path, base, {**opts, "hoodie.datasource.write.operation": "insert"})
    # updates of 200 keys: half late (ts 5 loses to 10), half winning (ts 20); 100 new keys
    upd = _rows(np.arange(0, 600, 3), np.where(np.arange(200) % 2 == 0, 5, 20), 2)
    new = _rows(np.arange(600, 700), np.full(100, 20), 3)
    batch = pa.concat_tables([upd, new])
    hudi_ds.write(path, batch, opts)
    dels = _rows(np.arange(1, 700, 7), np.zeros(100, dtype=np.int64), 4).select(["id", "dt"])
    hudi_ds.write(path, dels, {**opts, "hoodie.datasource.write.operation": "delete"})

    full = hudi_ds.read(path)
    model = _model([base, batch], dels["id"].to_pylist())
    got_model = {
        k: (t, v)
        for k, t, v in zip(
            full["id"].to_pylist(), full["ts"].to_pylist(), full["v"].to_pylist(), strict=True
        )
    }
    assert full.num_rows == len(got_model) == len(model)
    assert got_model == model
    for cols in (["id", "ts", "v"], ["v"], ["n", "dt"], ["_hoodie_record_key", "v"], ["ts"]):
        got = hudi_ds.read(path, columns=cols)
        assert got.column_names == cols
        assert got.num_rows == full.num_rows, cols
        assert row_set(got) == row_set(full.select(cols)), cols
