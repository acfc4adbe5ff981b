"""The streaming sink keeps writing beside a pending consistent-hashing resize
(:mod:`hudi_ds.index.pending_resize`): a MERGE_ON_READ table of 3 partitions, 2 ring nodes
each, 300 keys; a resize splitting one node per partition is scheduled, then two
micro-batches (two tasks each: updates, inserts) go through the sink; the resize completes
afterwards. hudi_ds and hudi-rs read the model before and after it completes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import hudi_ds
from hudi_ds.services import ServiceContext, clustering
from tests.conftest import assert_rows, hudi_rs_table, table_options
from tests.spark.test_streaming import events, model, sink, source_dir

pytestmark = pytest.mark.spark

ENGINE = {"hoodie.index.type": "BUCKET", "hoodie.index.bucket.engine": "CONSISTENT_HASHING"}
OPTS = {**table_options("s", partition="part", table_type="MERGE_ON_READ"), **ENGINE}


def test_sink_writes_beside_a_pending_resize(spark: Any, tmp_path: Path) -> None:
    path, ck = str(tmp_path / "t"), str(tmp_path / "ck")
    first = events(range(0, 300), 1)
    hudi_ds.write(path, first, OPTS)
    resize = {
        **OPTS,
        "hoodie.parquet.max.file.size": "1500",
        "hoodie.bucket.index.max.num.buckets": "3",
    }
    instant = clustering.schedule_clustering(ServiceContext.open(path, resize))
    assert instant is not None
    tables = [events(range(0, 200), 10), events(range(150, 400), 20)]
    sink(spark, source_dir(tmp_path / "src", tables), path, ck, **ENGINE)
    copies = [p for p in Path(path).glob("p*/.*") if f"_{instant}.log." in p.name]
    assert copies  # the sink's tasks wrote the resized nodes' records to their children too
    expected = model([first, *tables])
    rows = [(k, ts, v) for k, (ts, v) in expected.items()]
    assert_rows(hudi_ds.read(path, columns=["id", "ts", "v"]), rows, ["id", "ts", "v"])
    assert_rows(hudi_rs_table(path), rows, ["id", "ts", "v"])
    clustering.run_clustering(ServiceContext.open(path, resize), instant)
    assert not clustering.pending_clusterings(hudi_ds.HudiTable(path).timeline)
    assert_rows(hudi_ds.read(path, columns=["id", "ts", "v"]), rows, ["id", "ts", "v"])
    assert_rows(hudi_rs_table(path), rows, ["id", "ts", "v"])
