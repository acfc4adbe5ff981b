"""Compaction on Spark: each operation of the plan runs as a Spark task."""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import hudi_ds
from hudi_ds.services import ServiceContext, compaction
from tests.builders import TRIP_COLUMNS, read_rows
from tests.conftest import table_options

pytestmark = pytest.mark.spark

OPTS = table_options("trips", partition="city", buckets=4)


def _batch(k: int) -> pa.Table:
    ids = list(range(k * 10, k * 10 + 60))
    return pa.table(
        {
            "id": [f"t{i}" for i in ids],
            "ts": pa.array([k] * len(ids), pa.int64()),
            "city": [["sf", "nyc", "la"][i % 3] for i in ids],
            "fare": [float(i * k) for i in ids],
        }
    )


_rows = partial(read_rows, columns=TRIP_COLUMNS)
_hudi_rs_rows = partial(read_rows, columns=TRIP_COLUMNS, reader="hudi-rs")


def test_compaction_runs_as_spark_tasks(spark: Any, tmp_path: Path) -> None:
    from hudi_ds.spark.compaction import compact

    path = str(tmp_path / "t")
    for k in range(4):
        hudi_ds.write(path, _batch(k), OPTS)
    before = _rows(path)
    (res,) = compact(spark, path, schedule=True, parallelism=4)
    assert res.operations == 12 and res.rows == len(before)
    # the write tokens are the Spark tasks' (partition-stage-attempt): 4 tasks
    tokens = {s.path.rsplit("/", 1)[-1].split("_")[1] for s in res.stats if s.path}
    assert len(tokens) == 4
    assert _rows(path) == _hudi_rs_rows(path) == before
    ro = hudi_ds.read(path, {"hoodie.datasource.query.type": "read_optimized"})
    assert ro.num_rows == len(before)
    assert compact(spark, path) == []  # nothing pending
    # a pending compaction scheduled elsewhere runs on Spark too
    hudi_ds.write(path, _batch(9), OPTS)
    c = compaction.schedule_compaction(ServiceContext.open(path))
    assert c is not None
    (res2,) = compact(spark, path, c)
    assert res2.instant == c and _rows(path) == _hudi_rs_rows(path)
