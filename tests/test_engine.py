"""hudi_ds.engine, the public core API of engine adapters, driven as an engine drives it (driver
plans and commits, tasks write and read) without a JVM.

Table: partitioned by ``part`` (p0, p1), bucket index with 2 buckets, keyed by ``id``. Micro-batch
0 of writer ``w`` inserts k000-k009 in two tasks; micro-batch 1 updates k000-k004 (``ts`` 2) in
one task and is recorded as aborted once, then committed. Final: 10 rows, k000-k004 at ts 2.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest

from hudi_ds import engine
from hudi_ds.errors import ConfigError
from tests.conftest import table_options

OPTS = {
    **table_options("e", partition="part"),
    "hoodie.datasource.write.table.type": "MERGE_ON_READ",
}
SCHEMA = pa.schema([("id", pa.string()), ("ts", pa.int64()), ("part", pa.string())])


def rows(ids: range, ts: int) -> pa.Table:
    keys = [f"k{i:03d}" for i in ids]
    return pa.table(
        {"id": keys, "ts": [ts] * len(keys), "part": [f"p{i % 2}" for i in ids]}, SCHEMA
    )


def micro_batch(path: Path, batch_id: int, tasks: list[pa.Table]) -> str:
    """One micro-batch as a sink runs it: allocate, tasks join and write, the driver commits."""
    client = engine.WriteClient(str(path), OPTS, post_commit=engine.post_commit_services())
    client.create_table_if_absent(SCHEMA)
    sink = engine.StreamSink(client, "w")
    instant = sink.allocate_instant()
    statuses: list[engine.WriteStatus] = []
    for n, data in enumerate(tasks):
        client.start(
            SCHEMA,
            instant=instant,
            rollback_failed=False,
            extra_metadata=sink.batch_marker(batch_id, "q"),
        )
        writer = client.task_writer(instant, n, 0, n, exclusive=False)
        writer.write(data)
        statuses.extend(writer.close())
    assert sink.on_timeline(instant)
    client.commit(instant, statuses, sink.checkpoint(batch_id))
    return instant


def read_all(location: engine.TableLocation, options: dict[str, str] | None = None) -> pa.Table:
    """A read as an adapter plans it: one task per slice, each carrying its plan header."""
    table = engine.ReadableTable(location)
    plan = table.plan_read(options or {}, ["id", "ts"])
    batches = []
    for s in plan.slices:
        task_plan = plan.for_slices([s])
        assert task_plan.slices == []
        batches.extend(engine.ReadableTable(location).read_plan_slices(task_plan, [s]))
    return pa.Table.from_batches(batches, plan.output_schema).sort_by("id")


def test_options_and_locations() -> None:
    assert engine.is_option_key("hoodie.datasource.write.recordkey.field")
    assert engine.is_option_key("hoodie.datasource.write.partitions.to.delete")
    assert not engine.is_option_key("hoodie.datasource.write.recordkey.fields")
    assert engine.is_storage_option("aws_region") and engine.is_storage_option("max_retries")
    assert not engine.is_storage_option("hoodie.table.name")
    assert engine.table_location("/t", {}) == "/t"
    with pytest.warns(UserWarning, match="ignored"):  # a local path takes no store options
        assert not isinstance(engine.table_location("/t", {"allow_http": "true"}), str)
    engine.validate_options({"hoodie.datasource.write.operation": "upsert"})
    with pytest.raises(ConfigError, match="hoodie.datasource.write.recordkey.fields"):
        engine.validate_options({"hoodie.datasource.write.recordkey.fields": "id"})
    assert engine.partitions_to_delete({}, ["p1", "p0"]) == ["p0", "p1"]
    named = {"hoodie.datasource.write.partitions.to.delete": "p1,"}
    assert engine.partitions_to_delete(named, ["p0"]) == ["p1"]


def test_a_sink_and_a_source_through_the_engine_api(tmp_path: Path) -> None:
    path = tmp_path / "t"
    stream = engine.CommitStream(str(path))
    assert not stream.refresh() and not stream.opened  # a source started before the table

    first = micro_batch(path, 0, [rows(range(0, 5), 1), rows(range(5, 10), 1)])
    client = engine.WriteClient(str(path), OPTS)
    sink = engine.StreamSink(client, "w")
    assert sink.committed_batch() == 0
    assert engine.StreamSink(client, "other").committed_batch() is None

    # an abort is recorded before the batch's instant is looked for; a new record each time
    assert sink.latest_abort() is None
    sink.record_abort(1)
    recorded = sink.latest_abort()
    assert recorded is not None and json.loads(recorded)["batchId"] == "1"
    sink.record_abort(1)
    assert sink.latest_abort() != recorded
    second = micro_batch(path, 1, [rows(range(0, 5), 2)])
    assert sink.committed_batch() == 1 and sink.pending_instants_of(1) == set()
    sink.roll_back({first, second})  # completed instants stay
    assert sink.committed_batch() == 1

    assert stream.refresh() and stream.opened
    commits = stream.commits()
    assert [c.requested_time for c in commits] == [first, second]
    assert all(c.adds_data for c in commits)
    assert [stream.rows_written(c) for c in commits] == [10, 5]
    assert stream.reaches(second) and not stream.reaches(second + "1")
    assert not stream.only_services_in(first, second)
    assert stream.retained_floor() is None
    assert stream.range_options("00000000000000", first, from_start=True) == {
        "hoodie.datasource.query.type": "snapshot",
        "as.of.instant": first,
    }
    incremental = stream.range_options(first, second, from_start=False)
    changed = read_all(str(path), incremental)
    assert changed.column("id").to_pylist() == [f"k{i:03d}" for i in range(5)]

    table = read_all(engine.table_location(str(path), {}))
    assert table.num_rows == 10
    assert table.column("ts").to_pylist() == [2] * 5 + [1] * 5


def test_bucket_pruning_and_filters(tmp_path: Path) -> None:
    path = tmp_path / "t"
    micro_batch(path, 0, [rows(range(10), 1)])
    table = engine.ReadableTable(str(path))
    plan = table.plan_read({}, None)
    kept = engine.prune_buckets(table, plan.slices, [("id", "=", "k003")], {})
    bucket = int(engine.bucket_ids_of_rows(rows(range(3, 4), 1), ["id"], False, ["id"], 2)[0])
    assert {s.file_id[:8] for s in kept} == {f"{bucket:08d}"}
    assert len(kept) < len(plan.slices)
    assert engine.prune_buckets(table, plan.slices, [("ts", "=", 1)], {}) == plan.slices
    usable = engine.pruning_filters(
        [("id", "=", "k003"), ("nope", "=", 1), ("ts", "=", "not a number")], table.schema
    )
    assert usable == [("id", "=", "k003")]


def test_compaction_through_the_engine_api(tmp_path: Path) -> None:
    path = tmp_path / "t"
    micro_batch(path, 0, [rows(range(10), 1)])
    micro_batch(path, 1, [rows(range(5), 2)])
    ran: list[int] = []

    def executor(job: engine.CompactionJob) -> list[engine.WriteStat]:
        ran.append(len(job.operations))
        return [engine.compaction_task(job, i, (i, 0)) for i in range(len(job.operations))]

    results = engine.compact(str(path), schedule=True, executor=executor)
    assert len(results) == 1 and ran and ran[0] > 0
    stream = engine.CommitStream(str(path))
    assert stream.refresh()
    compaction = stream.commits()[-1]
    assert not compaction.adds_data
    assert stream.only_services_in(stream.commits()[-2].position, compaction.position)
    assert read_all(str(path)).column("ts").to_pylist() == [2] * 5 + [1] * 5


def test_importing_the_engine_imports_neither_pandas_nor_pyarrow_dataset() -> None:
    """Every Spark Python worker of a write imports hudi_ds (the data source lookup, the
    planner of each micro-batch, the sink's commit runner, the tasks), on a fresh session all
    at once: pyarrow.dataset and pandas (which pyarrow.dataset imports) cost ~0.2-0.3 s of CPU
    each, and a worker that converts no data -- a planner -- never needs them."""
    code = (
        "import sys, hudi_ds, hudi_ds.engine, hudi_ds.services.background;"
        "print(sorted(m for m in ('pandas', 'pyarrow.dataset') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=300
    )
    assert out.stdout.strip() == "[]"
