"""The streaming sink and consistent-hashing resizes.

* Beside a pending resize (:mod:`hudi_ds.index.pending_resize`): a MERGE_ON_READ table of 3
  partitions, 2 ring nodes each, 300 keys; a resize splitting one node per partition is
  scheduled, then two micro-batches (two tasks each: updates, inserts) go through the sink;
  the resize completes afterwards. hudi_ds and hudi-rs read the model before and after it
  completes.
* A growing table: micro-batches and a second (embedded) writer under optimistic concurrency
  control, both splitting nodes by inline clustering as the split threshold says; one of the
  second writer's writes stalls (``HUDI_DS_STALL_AT``) while micro-batches commit.
"""

from __future__ import annotations

import json
import signal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import hudi_ds
from hudi_ds.services import ServiceContext, clustering
from tests.conftest import (
    OCC_OPTIONS,
    assert_rows,
    finish_process,
    hudi_rs_table,
    spawn_python,
    table_options,
    wait_stopped,
)
from tests.spark.test_index_writes import committed_rings
from tests.spark.test_streaming import events, model, sink, source_dir
from tests.write.test_bucket_race import ONE_WRITE

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


#: a near-empty base or log file costs ~5.3 KB here (Parquet footers), so a file group splits
#: (at 2 x 6000 bytes, ``hoodie.bucket.index.split.threshold``) after two appends, and a split's
#: children (one small base file each) stay under it; a 50-key bloom filter keeps the resize's
#: base files that small
GROW = {
    **ENGINE,
    **OCC_OPTIONS,
    "hoodie.parquet.max.file.size": "6000",
    "hoodie.index.bloom.num_entries": "50",
    "hoodie.bucket.index.max.num.buckets": "32",
    "hoodie.clustering.inline": "true",
    "hoodie.clustering.inline.max.commits": "1",
    "hoodie.compact.inline.max.delta.commits": "50",
}
SPLIT_SIZE = 2 * 6000


def other_keys(ids: range, ts: int) -> pa.Table:
    """The second writer's rows: keys and partitions the stream does not write."""
    return pa.table(
        {
            "id": [f"w{i:04d}" for i in ids],
            "ts": pa.array([ts] * len(ids), pa.int64()),
            "part": [f"q{i % 2}" for i in ids],
            "v": [float(i + ts) for i in ids],
        }
    )


def test_growing_table_under_a_stream_and_a_second_writer(spark: Any, tmp_path: Path) -> None:
    """Micro-batches into 3 partitions, a second writer into 2 others, both under OCC, each
    commit's inline clustering splitting the nodes past the split threshold: the second
    writer's middle write stalls with its files written (``after_files``) while two
    micro-batches commit, then commits. At the end every file group is a node of its
    partition's ring (each without gaps), under the split threshold, and every key is there
    once with its latest values."""
    path, ck, src = str(tmp_path / "t"), str(tmp_path / "ck"), tmp_path / "src"
    opts = {**OPTS, **GROW}
    stream = [events(range(i * 50, i * 50 + 80), 10 + i) for i in range(5)]
    others = [other_keys(range(j * 30, j * 30 + 50), 10 + j) for j in range(3)]
    sink(spark, source_dir(src, stream[:2]), path, ck, **GROW)
    hudi_ds.write(path, others[0], opts)
    second = spawn_python(
        ONE_WRITE,
        path,
        json.dumps(opts),
        json.dumps(others[1].to_pylist()),
        env={"HUDI_DS_STALL_AT": "after_files"},
    )
    try:
        wait_stopped(second, 120)
        sink(spark, source_dir(src, stream[2:4]), path, ck, **GROW)
    finally:
        second.send_signal(signal.SIGCONT)
    finish_process(second, 120)
    hudi_ds.write(path, others[2], opts)
    # the last micro-batch commits alone: its inline clustering splits what the others grew
    sink(spark, source_dir(src, stream[4:]), path, ck, **GROW)

    rings = committed_rings(path)  # each without gaps or overlaps
    assert set(rings) == {"p0", "p1", "p2", "q0", "q1"}
    assert all(len(nodes) > 2 for nodes in rings.values()), rings  # every partition split
    table = hudi_ds.HudiTable(path)
    assert not clustering.pending_clusterings(table.timeline)
    for s in table.file_slices():
        size = (s.base_file.size if s.base_file else 0) + sum(f.size for f in s.log_files)
        assert size <= SPLIT_SIZE, (s.partition_path, s.file_id, size)
        assert s.file_id in {f for _, f in rings[s.partition_path]}, s
    expected = model([*stream, *others])
    rows = [(k, ts, v) for k, (ts, v) in expected.items()]
    assert_rows(hudi_ds.read(path, columns=["id", "ts", "v"]), rows, ["id", "ts", "v"])
    assert_rows(hudi_rs_table(path), rows, ["id", "ts", "v"])
