"""Embedded writer: table creation, operations, task protocol, memory budget, bad input."""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import partial
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import hudi_ds
from hudi_ds.errors import ConfigError, SchemaError
from hudi_ds.services import run_post_commit_services
from hudi_ds.storage import Storage
from hudi_ds.table_config import TableConfig, table_checksum
from hudi_ds.timeline.plans import RequestedReplaceMetadata
from hudi_ds.write.client import WriteClient
from tests import builders
from tests.conftest import assert_rows, hudi_rs_table, table_options, table_rows

OPTS = table_options("trips", partition="city")


trips = partial(builders.trips, fare=lambda i, ts: float(i))


COLUMNS = ["id", "ts", "city", "fare"]


def _checked_ids(t: pa.Table) -> list[str]:
    """The ids of ``t`` after checking no id repeats and every row's fare is its own."""
    rows = table_rows(t, COLUMNS)
    assert_rows(t, rows, COLUMNS)  # no duplicate key
    assert all(fare == float(i[1:]) for i, _, _, fare in rows), "a row carries another's values"
    return sorted(r[0] for r in rows)


def ids_of(path: str) -> list[str]:
    """The ids hudi_ds reads (checked: no duplicate, values of the right key)."""
    return _checked_ids(hudi_ds.read(path))


def hudi_rs_ids(path: str) -> list[str]:
    """The ids hudi-rs reads, after checking its rows equal hudi_ds's in every column."""
    rs = hudi_rs_table(path)
    assert table_rows(rs, COLUMNS) == table_rows(hudi_ds.read(path), COLUMNS)
    return _checked_ids(rs)


def test_created_table_is_v6_with_merge_semantics(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    instant = hudi_ds.write(path, trips(range(4)), OPTS)
    cfg = TableConfig.load(Storage(path))
    p = cfg.props
    assert p["hoodie.table.version"] == "6" and p["hoodie.timeline.layout.version"] == "1"
    assert p["hoodie.table.type"] == "MERGE_ON_READ"
    assert p["hoodie.compaction.payload.class"].endswith("DefaultHoodieRecordPayload")
    assert p["hoodie.compaction.record.merger.strategy"].startswith("eeb8d96f")
    assert p["hoodie.table.precombine.field"] == "ts"
    assert p["hoodie.table.checksum"] == str(table_checksum("trips"))
    assert cfg.merge_mode == "EVENT_TIME_ORDERING"
    md = json.loads((tmp_path / "t" / ".hoodie" / f"{instant}.deltacommit").read_text())
    assert md["operationType"] == "UPSERT"
    assert "_hoodie" not in md["extraMetadata"]["schema"]
    stats = [s for v in md["partitionToWriteStats"].values() for s in v]
    assert sum(s["numWrites"] for s in stats) == 4
    assert all(s["prevCommit"] == "null" and s["logFiles"] for s in stats)
    assert (tmp_path / "t" / "sf" / ".hoodie_partition_metadata").exists()
    # commit-time table: OverwriteWithLatestAvroPayload
    path2 = str(tmp_path / "t2")
    hudi_ds.write(
        path2, trips(range(2)), {**OPTS, "hoodie.write.record.merge.mode": "COMMIT_TIME_ORDERING"}
    )
    assert (
        TableConfig.load(Storage(path2))
        .props["hoodie.compaction.payload.class"]
        .endswith("OverwriteWithLatestAvroPayload")
    )


def test_two_tasks_of_one_instant_share_a_new_bucket(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    client = WriteClient(path, OPTS, post_commit=run_post_commit_services)
    instant = client.start(trips([0]).schema)
    t1 = client.task_writer(instant, 0, 1, 0, exclusive=False)
    t2 = client.task_writer(instant, 1, 1, 1, exclusive=False)
    t1.write(trips([0, 2, 4]))  # all nyc
    t2.write(trips([6, 8, 10]))
    statuses = t1.close() + t2.close()
    client.commit(instant, statuses)
    table = hudi_ds.HudiTable(path)
    slices = table.file_slices()
    groups = {(s.partition_path, s.file_id) for s in slices}
    buckets = {(p, int(f[:8])) for p, f in groups}
    assert len(groups) == len(buckets)  # one file group per (partition, bucket)
    assert sum(len(s.log_files) for s in slices) == len(statuses)
    assert ids_of(path) == hudi_rs_ids(path) == sorted(f"t{i}" for i in (0, 2, 4, 6, 8, 10))


def test_cow_with_several_tasks_stages_and_merges_once(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    opts = {**OPTS, "hoodie.datasource.write.table.type": "COPY_ON_WRITE"}
    hudi_ds.write(path, trips(range(10)), opts)
    client = WriteClient(path, opts, post_commit=run_post_commit_services)
    instant = client.start(trips([0]).schema)
    tasks = [client.task_writer(instant, i, 2, i, exclusive=False) for i in range(3)]
    tasks[0].write(trips([1, 2], ts=5))
    tasks[1].write(trips([2, 3], ts=6))
    tasks[2].write(trips([20, 21], ts=6))
    client.commit(instant, [s for t in tasks for s in t.close()])
    table = hudi_ds.HudiTable(path)
    for s in table.file_slices():
        assert s.base_file is not None and not s.log_files
    assert not list((tmp_path / "t" / ".hoodie" / ".temp").rglob("*.log.*"))
    got = hudi_ds.read(path).sort_by("id")
    assert dict(zip(got["id"].to_pylist(), got["ts"].to_pylist(), strict=True))["t2"] == 6
    assert (
        ids_of(path) == hudi_rs_ids(path) == sorted([f"t{i}" for i in range(10)] + ["t20", "t21"])
    )


def test_failed_attempt_files_never_become_visible(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    client = WriteClient(path, OPTS, post_commit=run_post_commit_services)
    instant = client.start(trips([0]).schema)
    failed = client.task_writer(instant, 0, 3, 0, exclusive=False)
    failed.write(trips([100, 101]))
    failed.close()  # its statuses are lost: the attempt "failed"
    retry = client.task_writer(instant, 0, 3, 1, exclusive=False)
    retry.write(trips([1]))
    client.commit(instant, retry.close())
    assert ids_of(path) == hudi_rs_ids(path) == ["t1"]
    logs = [p.name for p in (tmp_path / "t").rglob(".*.log.*")]
    assert all(name.endswith("_0-3-1") for name in logs), logs


def test_memory_budget_flushes_blocks(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    opts = {**OPTS, "write.batch.size": "0.05", "write.task.max.size": "0.1"}
    client = WriteClient(path, opts, post_commit=run_post_commit_services)
    data = trips(range(20000))
    instant = client.start(data.schema)
    task = client.task_writer(instant)
    peak = 0
    for b in data.to_batches(max_chunksize=1000):
        task.write(b)
        peak = max(peak, task.buffered_bytes)
    assert task.flushes > 2
    assert peak <= 0.1 * (1 << 20) + data.slice(0, 1000).nbytes
    client.commit(instant, task.close())
    assert len(ids_of(path)) == 20000 and len(hudi_rs_ids(path)) == 20000


@pytest.mark.parametrize("version", [6, 8, 9])
def test_overwrite_operations(tmp_path: Path, version: int) -> None:
    path = str(tmp_path / "t")
    table = hudi_ds.HudiTable
    opts = {**OPTS, "hoodie.write.table.version": str(version)}
    hudi_ds.write(path, trips(range(6)), opts)
    t = table(path, opts)
    t.insert_overwrite(trips([100, 102], city="nyc"))
    assert ids_of(path) == hudi_rs_ids(path) == ["t1", "t100", "t102", "t3", "t5"]
    t.delete_partition(["sf"])
    assert ids_of(path) == hudi_rs_ids(path) == ["t100", "t102"]
    t.insert_overwrite_table(trips([7, 8]))
    assert ids_of(path) == hudi_rs_ids(path) == ["t7", "t8"]
    t.delete(trips([7]).select(["id", "city"]))
    assert ids_of(path) == hudi_rs_ids(path) == ["t8"]
    actions = [i.action for i in t.timeline.commits()]
    assert actions.count("replacecommit") == 3
    if version >= 8:  # Hudi 1.x: the requested file holds an empty HoodieRequestedReplaceMetadata
        requested = sorted(
            (tmp_path / "t" / ".hoodie" / "timeline").glob("*.replacecommit.requested")
        )
        assert len(requested) == 3
        for f in requested:
            md = RequestedReplaceMetadata.from_bytes(f.read_bytes())
            assert (md.operation_type, md.clustering_plan) == (None, None)


def test_is_deleted_column_and_bulk_insert(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    hudi_ds.write(
        path, trips(range(4)), {**OPTS, "hoodie.datasource.write.operation": "bulk_insert"}
    )
    d = trips([1, 2], ts=5).append_column("_hoodie_is_deleted", pa.array([True, False]))
    hudi_ds.write(path, d, OPTS)
    assert ids_of(path) == hudi_rs_ids(path) == ["t0", "t2", "t3"]


def test_event_time_ignores_late_rows_and_precombines(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    batch = pa.concat_tables([trips([1], ts=5), trips([1], ts=9), trips([1], ts=7)])
    hudi_ds.write(path, batch, OPTS)
    assert hudi_ds.read(path)["ts"].to_pylist() == [9]
    hudi_ds.write(path, trips([1], ts=3), OPTS)
    assert hudi_ds.read(path)["ts"].to_pylist() == [9]


@pytest.mark.parametrize(
    "data, options, error, match",
    [
        (pa.table({"id": ["a", None], "ts": [1, 2], "city": ["x", "y"]}), {}, SchemaError, "'id'"),
        (pa.table({"ts": [1], "city": ["x"]}), {}, SchemaError, "'id'"),
        (pa.table({"id": ["a"], "city": ["x"]}), {}, SchemaError, "'ts'"),
        (pa.table({"id": ["a"], "ts": [1], "city": ["../etc"]}), {}, SchemaError, "../etc"),
        (pa.table({"id": ["a"], "ts": [1], "city": ["a/../b"]}), {}, SchemaError, "a/../b"),
        (pa.table({"id": ["a,b:c"], "ts": [1], "city": ["x"]}), {}, SchemaError, "a,b:c"),
        (
            pa.table({"id": ["a"], "ts": [1], "city": ["x"]}),
            {"hoodie.datasource.write.operation": "merge"},
            ConfigError,
            "operation",
        ),
        (
            pa.table({"id": ["a"], "ts": [1], "city": ["x"]}),
            {"hoodie.bucket.index.num.buckets": "0"},
            ConfigError,
            "num.buckets",
        ),
        (
            pa.table({"id": ["a"], "ts": [1], "city": ["x"]}),
            {"hoodie.datasource.write.recordkey.feld": "id"},
            ConfigError,
            "recordkey.field",
        ),
        (pa.table({"id": [[1]], "ts": [1], "city": ["x"]}), {}, SchemaError, "'id'"),
    ],
)
def test_bad_input_is_refused_before_writing(data, options, error, match, tmp_path: Path) -> None:
    path = tmp_path / "t"
    if "fare" not in data.column_names:
        data = data.append_column("fare", pa.array([1.0] * data.num_rows))
    hudi_ds.write(str(path), trips([1]), OPTS)
    before = sorted(p.relative_to(path) for p in path.rglob("*") if ".hoodie" not in p.parts)
    commits = len(hudi_ds.HudiTable(str(path)).timeline.commits())
    with pytest.raises(error, match=match):
        hudi_ds.write(str(path), data, {**OPTS, **options})
    after = sorted(p.relative_to(path) for p in path.rglob("*") if ".hoodie" not in p.parts)
    assert before == after
    assert len(hudi_ds.HudiTable(str(path)).timeline.commits()) == commits
    assert ids_of(str(path)) == ["t1"]


def test_options_contradicting_the_table(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    hudi_ds.write(path, trips([1]), OPTS)
    with pytest.raises(ConfigError, match="recordkey"):
        hudi_ds.write(path, trips([1]), {**OPTS, "hoodie.datasource.write.recordkey.field": "city"})
    with pytest.raises(ConfigError, match="merge.mode"):
        hudi_ds.write(
            path, trips([1]), {**OPTS, "hoodie.write.record.merge.mode": "COMMIT_TIME_ORDERING"}
        )


def test_pandas_and_reader_inputs(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    hudi_ds.write(path, trips(range(3)).to_pandas(), OPTS)
    hudi_ds.write(
        path, pa.RecordBatchReader.from_batches(trips([9]).schema, trips([9]).to_batches()), OPTS
    )
    assert ids_of(path) == ["t0", "t1", "t2", "t9"]
    with pytest.raises(SchemaError):
        hudi_ds.write(path, 42, OPTS)


def test_schema_evolution_adds_columns(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    hudi_ds.write(path, trips([1]), OPTS)
    hudi_ds.write(path, trips([2]).append_column("extra", pa.array(["x"])), OPTS)
    got = hudi_ds.read(path).sort_by("id")
    assert got["extra"].to_pylist() == [None, "x"]
    with pytest.raises(SchemaError, match="fare"):
        hudi_ds.write(path, trips([3]).drop_columns(["fare"]), OPTS)
    _ = np


def test_key_lookup_reads_only_the_buckets_of_the_keys(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    hudi_ds.write(path, trips(range(200)), {**OPTS, "hoodie.bucket.index.num.buckets": "8"})
    table = hudi_ds.HudiTable(path)
    assert table.config.props["hoodie.bucket.index.num.buckets"] == "8"
    all_slices = len(table.plan_read().slices)
    plan = table.plan_read(filters=[("id", "in", ["t5", "t17"])])
    assert 0 < len(plan.slices) <= 4 < all_slices
    got = table.read(filters=[("id", "in", ["t5", "t17"])])
    assert sorted(got["id"].to_pylist()) == ["t17", "t5"]
    for i in range(200):  # every key is found through its bucket
        assert table.read(filters=[("id", "=", f"t{i}")]).num_rows == 1
    with pytest.raises(ConfigError, match="num.buckets"):
        hudi_ds.write(path, trips([1]), {**OPTS, "hoodie.bucket.index.num.buckets": "4"})


def test_nonpartitioned_table_with_two_key_fields(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    opts = {
        "hoodie.table.name": "np",
        "hoodie.datasource.write.recordkey.field": "a,b",
        "hoodie.datasource.write.precombine.field": "ts",
    }
    t = pa.table({"a": ["x", "x", "y"], "b": [1, 2, 1], "ts": [1, 1, 1]})
    hudi_ds.write(path, t, opts)
    hudi_ds.write(path, pa.table({"a": ["x"], "b": [2], "ts": [5]}), opts)
    got = hudi_ds.read(path).sort_by([("a", "ascending"), ("b", "ascending")])
    assert got["_hoodie_record_key"].to_pylist() == ["a:x,b:1", "a:x,b:2", "a:y,b:1"]
    assert got["ts"].to_pylist() == [1, 5, 1]
    assert_rows(
        hudi_rs_table(path),
        [("x", 1, 1), ("x", 2, 5), ("y", 1, 1)],
        ["a", "b", "ts"],
        key=["a", "b"],
    )
    assert_rows(got, [("x", 1, 1), ("x", 2, 5), ("y", 1, 1)], ["a", "b", "ts"], key=["a", "b"])


def test_commit_from_a_client_that_did_not_start_the_instant(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    starter = WriteClient(path, OPTS, post_commit=run_post_commit_services)
    instant = starter.start(trips([0]).schema)
    task = starter.task_writer(instant, 0, 0, 0, exclusive=False)
    task.write(trips([1, 2]))
    statuses = task.close()
    WriteClient(path, OPTS, post_commit=run_post_commit_services).commit(
        instant, statuses
    )  # e.g. a streaming commit elsewhere
    assert ids_of(path) == hudi_rs_ids(path) == ["t1", "t2"]


def test_schema_evolution_promotes_types(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    first = trips([1]).append_column("qty", pa.array([7], pa.int32()))
    first = first.append_column("score", pa.array([1.5], pa.float32()))
    hudi_ds.write(path, first, OPTS)
    second = trips([2]).append_column("qty", pa.array([2**40], pa.int64()))  # int -> long
    second = second.append_column("score", pa.array([2.25], pa.float64()))  # float -> double
    hudi_ds.write(path, second, OPTS)
    got = hudi_ds.read(path).sort_by("id")
    assert got.schema.field("qty").type == pa.int64()
    assert got.schema.field("score").type == pa.float64()
    assert got["qty"].to_pylist() == [7, 2**40]
    assert got["score"].to_pylist() == [1.5, 2.25]
    cols = ["id", "ts", "city", "fare", "qty", "score"]
    expected = [("t1", 1, "sf", 1.0, 7, 1.5), ("t2", 1, "nyc", 2.0, 2**40, 2.25)]
    assert_rows(got, expected, cols)
    assert_rows(hudi_rs_table(path), expected, cols)
    # narrowing back is fine (cast to the table's type); a lossy change is refused
    hudi_ds.write(
        path,
        trips([3])
        .append_column("qty", pa.array([3], pa.int32()))
        .append_column("score", pa.array([0.5], pa.float32())),
        OPTS,
    )
    with pytest.raises(SchemaError, match="qty"):
        hudi_ds.write(
            path,
            trips([4])
            .append_column("qty", pa.array(["x"]))
            .append_column("score", pa.array([0.5])),
            OPTS,
        )


def test_v8_log_under_pending_compaction_keeps_its_instant(tmp_path: Path) -> None:
    """Version 8+: writes to a file group whose compaction C is pending -- one that started
    before C was scheduled, one after -- name their log files with their own instants, version
    1 (no move into C's slice at commit as on version 6): completion times after C put them in
    C's slice, which readers merge with the slice being compacted."""
    from hudi_ds.table.fs_view import FileSystemView
    from hudi_ds.timeline.instant import Instant, State, new_instant_time
    from hudi_ds.timeline.plans import CompactionOperation, CompactionPlan
    from hudi_ds.timeline.view import TableState

    path = tmp_path / "t"
    o = {
        **table_options("pc", table_type="MERGE_ON_READ", buckets=None),
        "hoodie.index.type": "SIMPLE",
        "hoodie.write.table.version": "8",
    }
    rows = pa.table({"id": [1, 2, 3], "ts": [1, 1, 1], "v": ["a", "a", "a"]})
    hudi_ds.write(str(path), rows, o)
    hudi_ds.write(str(path), pa.table({"id": [1], "ts": [2], "v": ["b"]}), o)

    def check(expected: list[tuple[int, str]]) -> list[str]:
        for t in (hudi_ds.read(str(path)), hudi_rs_table(str(path))):
            assert sorted(zip(t["id"].to_pylist(), t["v"].to_pylist(), strict=True)) == expected
        return sorted(p.name for p in path.glob(".*.log.*"))

    client = WriteClient(str(path), o)
    running = client.start(rows.schema)  # a write that started before C was scheduled
    state = TableState.open(str(path))
    ops = [
        CompactionOperation(
            base_instant_time=s.base_instant_time,
            delta_file_paths=[lf.name.name for lf in s.log_files],
            data_file_path=s.base_file.name.name if s.base_file else None,
            file_id=s.file_id,
            partition_path="",
        )
        for s in FileSystemView(state.storage, state.config).latest_file_slices(
            "", state.visibility()
        )
    ]
    assert len(ops) == 1 and ops[0].data_file_path and len(ops[0].delta_file_paths or []) == 1
    c = new_instant_time(after=running)
    state.timeline_writer().create_requested(
        Instant(c, "compaction", State.REQUESTED), CompactionPlan(operations=ops).to_bytes()
    )
    task = client.task_writer(running)
    task.write(pa.table({"id": [3], "ts": [4], "v": ["d"]}))
    client.commit(running, task.close())
    logs = check([(1, "b"), (2, "a"), (3, "d")])
    assert len(logs) == 2 and f"_{running}.log.1_" in logs[-1], logs
    after = hudi_ds.HudiTable(str(path), o).upsert(pa.table({"id": [2], "ts": [3], "v": ["c"]}))
    assert after > c
    logs = check([(1, "b"), (2, "c"), (3, "d")])
    assert len(logs) == 3 and f"_{after}.log.1_" in logs[-1], logs


def _write_stats(path: str) -> list[list[tuple[str, str, int, int]]]:
    """Per completed commit, in timeline order: (partition, bucket, numWrites, numDeletes) of
    its write stats, in the order the commit file lists them (the bucket: the fileId's prefix;
    the rest of a new fileId differs between tables)."""
    out = []
    for f in sorted((Path(path) / ".hoodie").glob("*.*commit")):
        md = json.loads(f.read_text())
        out.append(
            [
                (p, s["fileId"][:8], s["numWrites"], s["numDeletes"])
                for p, stats in md["partitionToWriteStats"].items()
                for s in stats
            ]
        )
    return out


@pytest.mark.parametrize("table_type", ["MERGE_ON_READ", "COPY_ON_WRITE"])
def test_write_tasks_threads_write_the_same_table(tmp_path: Path, table_type: str) -> None:
    # write.tasks: the threads closing and flushing a task's handles (small blocks: several
    # flushes per handle); one thread and four write the same rows and the same write stats,
    # in the same order
    base = {
        **OPTS,
        "hoodie.bucket.index.num.buckets": "4",
        "hoodie.datasource.write.table.type": table_type,
        "write.batch.size": "0.02",
        "write.task.max.size": "0.1",
    }
    tables = {}
    for threads in ("1", "4"):
        path = str(tmp_path / f"t{threads}")
        opts = {**base, "write.tasks": threads}
        hudi_ds.write(path, trips(range(3000)), opts)
        hudi_ds.write(path, trips(range(2000, 5000), ts=2), opts)
        hudi_ds.write(
            path,
            trips(range(0, 4000, 7)).select(["id", "city"]),
            {**opts, "hoodie.datasource.write.operation": "delete"},
        )
        tables[threads] = path
    expected = sorted(f"t{i}" for i in range(5000) if not (i < 4000 and i % 7 == 0))
    for path in tables.values():
        assert ids_of(path) == hudi_rs_ids(path) == expected
    one, four = (table_rows(hudi_ds.read(p), COLUMNS) for p in tables.values())
    assert one == four
    stats = [_write_stats(p) for p in tables.values()]
    assert stats[0] == stats[1] and len(stats[0]) == 3


def test_write_tasks_must_be_a_positive_count(tmp_path: Path) -> None:
    for bad in ("0", "-2", "two"):
        with pytest.raises(ConfigError, match="write.tasks"):
            hudi_ds.write(str(tmp_path / "t"), trips(range(3)), {**OPTS, "write.tasks": bad})


def test_key_with_comma_and_colon_is_refused(tmp_path: Path) -> None:
    # the bucket index would parse "a,b:c" as a complex key; "a,b" and "a:b" alone are keys
    path = str(tmp_path / "t")
    data = trips(range(3))
    ok = data.set_column(0, "id", pa.array(["x,1", "y:2", "z"]))
    hudi_ds.write(path, ok, OPTS)
    assert sorted(hudi_ds.read(path).column("id").to_pylist()) == ["x,1", "y:2", "z"]
    bad = data.set_column(0, "id", pa.array(["u", "v,w", "a,b:c"]))
    with pytest.raises(SchemaError, match=r"'a,b:c' .*contains both"):
        hudi_ds.write(path, bad, OPTS)


def test_a_failure_after_the_commit_point_does_not_fail_the_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Once the completed instant is published the commit stands: a storage failure while
    deleting its markers, or while ending the write (its writer record and heartbeat; on an
    object store the markers too, in the same request), is logged, and the write returns its
    instant (a write that raised would be taken as not done, and its rows are visible)."""
    import sys

    from hudi_ds.errors import StorageError

    client_module = sys.modules[WriteClient.__module__]  # hudi_ds.write is also the function

    def failing(storage: Storage, instant: str) -> None:
        raise StorageError(f"delete {storage.uri('.hoodie/.temp/' + instant)} failed: 503")

    def failing_all(storage: Storage, rels: Sequence[str]) -> None:
        raise StorageError(f"delete {storage.uri(rels[0])} failed: 503")

    path = str(tmp_path / "t")
    opts = table_options("t", table_type="COPY_ON_WRITE")
    rows = pa.table({"id": ["a", "b"], "ts": [1, 1], "v": ["x", "y"]})
    monkeypatch.setattr(client_module, "delete_markers", failing)
    monkeypatch.setattr(Storage, "discard_all", failing_all)
    with caplog.at_level("WARNING", logger="hudi_ds.write"):
        instant = hudi_ds.write(path, rows, opts)
    assert instant is not None
    assert "stands; deleting its markers failed" in caplog.text
    assert "stands; ending its write failed" in caplog.text
    monkeypatch.undo()
    assert [i.requested_time for i in hudi_ds.HudiTable(path).timeline.commits()] == [instant]
    expected = [("a", 1, "x"), ("b", 1, "y")]
    assert_rows(hudi_ds.read(path), expected, ["id", "ts", "v"])
    assert_rows(hudi_rs_table(path), expected, ["id", "ts", "v"])
