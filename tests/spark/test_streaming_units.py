"""The streaming sink and source without a JVM: the writer's task, commit and abort calls
driven directly (as Spark's processes would), and the source's offset arithmetic.

Spark's process model is mimicked: every ``streamWriter()`` builds a *fresh* writer (the
planner's for the tasks, another one for the commit), tasks read the batch id from the task
context (monkeypatched here).
"""

from __future__ import annotations

import json
import pickle
import threading
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxFiles, ReadMaxRows
from pyspark.sql.types import DoubleType, LongType, StringType, StructField, StructType

import hudi_ds
from hudi_ds.errors import ConfigError, WriteError
from hudi_ds.services import run_post_commit_services
from hudi_ds.spark import streaming
from hudi_ds.spark.datasource import HudiDataSource
from hudi_ds.spark.stream_reader import INIT_OFFSET, OFFSET_KEY, HudiStreamReader
from hudi_ds.spark.writer import TaskIdentity
from hudi_ds.storage import Storage
from hudi_ds.table.table import ReadableTable
from hudi_ds.timeline.instant import Instant, State
from hudi_ds.timeline.timeline import Timeline
from hudi_ds.timeline.writer import TimelineWriter
from hudi_ds.write.client import WriteClient
from tests.conftest import hudi_rs_table, table_options

SCHEMA = StructType(
    [
        StructField("id", StringType()),
        StructField("ts", LongType()),
        StructField("part", StringType()),
        StructField("v", DoubleType()),
    ]
)

OPTS = table_options("s", partition="part")


def rows(ids: range, ts: int) -> pa.RecordBatch:
    return pa.RecordBatch.from_pydict(
        {
            "id": [f"k{i:03d}" for i in ids],
            "ts": [ts] * len(ids),
            "part": [f"p{i % 2}" for i in ids],
            "v": [float(i + ts) for i in ids],
        }
    )


def stream_writer(path: Path, **extra: str) -> streaming.HudiStreamWriter:
    """What ``streamWriter()`` returns in a planner or commit process (a fresh instance)."""
    ds = HudiDataSource({**OPTS, **extra, "path": str(path)})
    w = ds.streamWriter(SCHEMA, False)
    assert isinstance(w, streaming.HudiStreamWriter)
    return w


@pytest.fixture
def batch_id(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """The task context's batch id (settable)."""
    box = {"id": 0}
    monkeypatch.setattr(streaming, "task_batch_id", lambda: box["id"])
    return box


def run_batch(path: Path, bid: int, batches: list[pa.RecordBatch], box: dict[str, int]) -> Any:
    """One micro-batch: a planner's writer for the task, a fresh writer for the commit."""
    box["id"] = bid
    msg = stream_writer(path).write(iter(batches))
    stream_writer(path).commit([msg], bid)
    return msg


def snapshot(path: Path) -> dict[str, tuple[int, float]]:
    t = hudi_ds.read(str(path), columns=["id", "ts", "v"])
    return {r["id"]: (r["ts"], r["v"]) for r in t.to_pylist()}


def streaming_checkpoints(path: Path) -> list[dict[str, str]]:
    tl = Timeline.load(Storage(str(path)), 1)
    out = []
    for i in tl.commits():
        raw = tl.read_commit_metadata(i).extra_metadata.get("_hudi_streaming_sink_checkpoint")
        out.append(json.loads(raw) if raw else {})
    return out


def test_batches_commit_once_and_replays_change_nothing(
    tmp_path: Path, batch_id: dict[str, int]
) -> None:
    path = tmp_path / "t"
    run_batch(path, 0, [rows(range(10), 1)], batch_id)
    run_batch(path, 1, [rows(range(5, 15), 2)], batch_id)
    before = snapshot(path)
    assert len(before) == 15 and before["k007"] == (2, 9.0)
    # Hudi's own format: {"<identifier>": "<batch id>"} (a string), compact JSON
    tl = Timeline.load(Storage(str(path)), 1)
    raw = tl.read_commit_metadata(tl.commits()[-1]).extra_metadata[
        "_hudi_streaming_sink_checkpoint"
    ]
    assert raw == '{"default_single_writer":"1"}'
    files = sorted(p.name for p in path.rglob("*") if p.is_file())
    # batch 1 re-delivered after a crash (with other rows: skipped all the same)
    msg = run_batch(path, 1, [rows(range(100, 110), 9)], batch_id)
    assert msg.skipped and not msg.statuses
    assert snapshot(path) == before
    assert sorted(p.name for p in path.rglob("*") if p.is_file()) == files
    assert WriteClient(str(path), OPTS).committed_streaming_batch("default_single_writer") == 1


def test_tasks_of_one_batch_join_one_instant(
    tmp_path: Path, batch_id: dict[str, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "t"
    run_batch(path, 0, [rows(range(4), 1)], batch_id)
    batch_id["id"] = 1
    planned = stream_writer(path)  # pickled to every task of the micro-batch
    local = threading.local()
    monkeypatch.setattr(TaskIdentity, "current", classmethod(lambda cls: local.task))
    msgs: list[Any] = [None] * 4
    barrier = threading.Barrier(4)

    def task(p: int) -> None:
        local.task = TaskIdentity(p, 3, 100 + p, 0)
        barrier.wait()
        msgs[p] = planned.write(iter([rows(range(p * 10, p * 10 + 10), 5)]))

    threads = [threading.Thread(target=task, args=(p,)) for p in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert {m.instant for m in msgs} == {planned.instant}
    stream_writer(path).commit(msgs, 1)
    assert len(snapshot(path)) == 40
    tl = Timeline.load(Storage(str(path)), 1)
    assert [i.requested_time for i in tl.commits()][-1] == planned.instant
    assert not tl.pending()


@pytest.mark.parametrize("table_type", ["MERGE_ON_READ", "COPY_ON_WRITE"])
def test_crashed_attempt_is_rolled_back_by_the_retry(
    tmp_path: Path, batch_id: dict[str, int], monkeypatch: pytest.MonkeyPatch, table_type: str
) -> None:
    monkeypatch.setitem(OPTS, "hoodie.datasource.write.table.type", table_type)
    path = tmp_path / "t"
    run_batch(path, 0, [rows(range(10), 1)], batch_id)
    batch_id["id"] = 1
    stream_writer(path).write(iter([rows(range(10), 2)]))  # crash: no commit
    pending = Timeline.load(Storage(str(path)), 1).pending()
    assert len(pending) == 1
    # restart: batch 1 again, new planner writer, new instant
    run_batch(path, 1, [rows(range(10), 2)], batch_id)
    tl = Timeline.load(Storage(str(path)), 1)
    assert not tl.pending().filter_actions("deltacommit", "commit")
    assert pending[0].requested_time not in {i.requested_time for i in tl.commits()}
    assert [c.get("default_single_writer") for c in streaming_checkpoints(path)] == ["0", "1"]
    assert snapshot(path)["k003"] == (2, 5.0)
    assert len(ReadableTable(str(path)).read()) == 10


def test_abort_rolls_back_but_never_undoes_a_commit(
    tmp_path: Path, batch_id: dict[str, int]
) -> None:
    path = tmp_path / "t"
    run_batch(path, 0, [rows(range(10), 1)], batch_id)
    batch_id["id"] = 1
    msg = stream_writer(path).write(iter([rows(range(10), 2)]))
    # every task failed: Spark hands None messages; the marker finds the instant
    stream_writer(path).abort([None], 1)
    tl = Timeline.load(Storage(str(path)), 1)
    assert not tl.contains(msg.instant)
    assert snapshot(path)["k001"] == (1, 2.0)
    # commit raised after the commit point: abort with the real messages is a no-op
    msg = run_batch(path, 1, [rows(range(10), 2)], batch_id)
    stream_writer(path).abort([msg], 1)
    assert Timeline.load(Storage(str(path)), 1).is_completed(msg.instant)
    assert snapshot(path)["k001"] == (2, 3.0)


def test_late_tasks_cannot_write_a_batch_aborted_before_any_task_joined(
    tmp_path: Path, batch_id: dict[str, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Batch 1's job fails before any task joined its instant: every message is None and
    nothing is on the timeline, so the abort has nothing to roll back. Tasks of the batch
    still running (Spark cancels them asynchronously) must not create the instant afterwards
    -- a dangling .inflight and files under it -- whether the abort was recorded before the
    task looked (first task) or only between its look and its instant files (second task).
    The restarted batch 1 then writes its rows."""
    path = tmp_path / "t"
    run_batch(path, 0, [rows(range(10), 1)], batch_id)
    before = snapshot(path)
    batch_id["id"] = 1
    planned = pickle.dumps(stream_writer(path))  # the planner's writer, as shipped to tasks
    instant = pickle.loads(planned).instant
    create_requested = TimelineWriter.create_requested
    aborted = []

    def abort_first(self: TimelineWriter, inst: Instant, content: bytes = b"") -> bool:
        if inst.requested_time == instant:
            if not aborted:  # the task looked already
                stream_writer(path).abort([None], 1)
            aborted.append(inst.requested_time)
        return create_requested(self, inst, content)

    monkeypatch.setattr(TimelineWriter, "create_requested", abort_first)
    for _ in range(2):  # the abort lands between look and create; then before the look
        with pytest.raises(WriteError, match="aborted"):
            pickle.loads(planned).write(iter([rows(range(5, 15), 2)]))
        tl = Timeline.load(Storage(str(path)), 1)
        assert not tl.pending().filter_actions("deltacommit"), tl.instants
        assert not [p for p in path.rglob("*") if instant in p.name]
    assert aborted == [instant]  # the first task created the instant's files, the second not
    assert snapshot(path) == before
    rs = hudi_rs_table(str(path)).select(["id", "ts", "v"]).to_pylist()  # (the record: .aux)
    assert len(rs) == len(before) and {r["id"]: (r["ts"], r["v"]) for r in rs} == before
    monkeypatch.setattr(TimelineWriter, "create_requested", create_requested)
    run_batch(path, 1, [rows(range(5, 15), 2)], batch_id)  # the restart
    assert snapshot(path) == {**before, **{f"k{i:03d}": (2, float(i + 2)) for i in range(5, 15)}}
    assert WriteClient(str(path), OPTS).committed_streaming_batch("default_single_writer") == 1


def test_commit_refuses_failed_or_mixed_messages(tmp_path: Path, batch_id: dict[str, int]) -> None:
    path = tmp_path / "t"
    run_batch(path, 0, [rows(range(4), 1)], batch_id)
    batch_id["id"] = 1
    msg = stream_writer(path).write(iter([rows(range(4), 2)]))
    with pytest.raises(WriteError, match="no commit message"):
        stream_writer(path).commit([msg, None], 1)
    with pytest.raises(WriteError, match="wrote batch 1"):
        stream_writer(path).commit([msg], 2)


def test_empty_batch_commits_nothing(tmp_path: Path, batch_id: dict[str, int]) -> None:
    path = tmp_path / "t"
    run_batch(path, 0, [rows(range(4), 1)], batch_id)
    msg = run_batch(path, 1, [rows(range(0), 1)], batch_id)
    assert not msg.statuses
    assert len(Timeline.load(Storage(str(path)), 1)) == 1


def test_identifiers_keep_separate_checkpoints(tmp_path: Path, batch_id: dict[str, int]) -> None:
    path = tmp_path / "t"
    a = {"hoodie.datasource.write.streaming.checkpoint.identifier": "a"}
    b = {"hoodie.datasource.write.streaming.checkpoint.identifier": "b"}
    for bid in range(3):
        batch_id["id"] = bid
        msg = stream_writer(path, **a).write(iter([rows(range(bid, bid + 1), 1)]))
        stream_writer(path, **a).commit([msg], bid)
    for bid in range(2):
        batch_id["id"] = bid
        msg = stream_writer(path, **b).write(iter([rows(range(50 + bid, 51 + bid), 1)]))
        assert not msg.skipped
        stream_writer(path, **b).commit([msg], bid)
    client = WriteClient(str(path), OPTS, post_commit=run_post_commit_services)
    assert client.committed_streaming_batch("a") == 2
    assert client.committed_streaming_batch("b") == 1
    assert len(snapshot(path)) == 5


def test_commit_lists_the_timeline_three_times(
    tmp_path: Path, batch_id: dict[str, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A long active timeline costs a listing each time: the commit runner lists it for the
    latest batch id, to find the batch's instant and under the lock before publishing -- not
    once more to rebuild the plan of an instant its listing already shows inflight."""
    path = tmp_path / "t"
    run_batch(path, 0, [rows(range(4), 1)], batch_id)
    batch_id["id"] = 1
    msg = stream_writer(path).write(iter([rows(range(2, 6), 2)]))
    committer = stream_writer(path)
    listed: list[str] = []
    orig = Storage._list

    def counting(self: Storage, rel: str, recursive: bool) -> Any:
        listed.append(rel)
        return orig(self, rel, recursive)

    monkeypatch.setattr(Storage, "_list", counting)
    committer.commit([msg], 1)
    assert listed.count(".hoodie") == 3
    assert len(snapshot(path)) == 6 and snapshot(path)["k003"] == (2, 5.0)


# ------------------------------------------------------------------------------ the source
def reader(path: Path, **options: str) -> HudiStreamReader:
    r = HudiDataSource({"path": str(path), **options}).streamReader(
        StructType([StructField("id", StringType())])
    )
    assert isinstance(r, HudiStreamReader)
    return r


def write(path: Path, ids: range, ts: int) -> str:
    """The write's delta commit (a compaction the fifth one runs completes after it)."""
    return hudi_ds.write(str(path), pa.Table.from_batches([rows(ids, ts)]), OPTS)


def test_source_offsets_and_admission_control(tmp_path: Path) -> None:
    path = tmp_path / "t"
    c = [write(path, range(i * 10, i * 10 + 10 * (i + 1)), i) for i in range(4)]
    r = reader(path, maxCommitsPerTrigger="2")
    start = r.initialOffset()
    assert start == {OFFSET_KEY: INIT_OFFSET}
    assert isinstance(r.getDefaultReadLimit(), ReadMaxFiles)
    assert r.latestOffset(start, r.getDefaultReadLimit()) == {OFFSET_KEY: c[1]}
    assert r.latestOffset({OFFSET_KEY: c[1]}, r.getDefaultReadLimit()) == {OFFSET_KEY: c[3]}
    assert r.latestOffset({OFFSET_KEY: c[3]}, r.getDefaultReadLimit()) == {OFFSET_KEY: c[3]}
    assert r.latestOffset(start, ReadAllAvailable()) == {OFFSET_KEY: c[3]}
    # rows: commit i wrote 10 * (i + 1) rows; at least one commit is always admitted
    rr = reader(path, maxRowsPerTrigger="35")
    assert isinstance(rr.getDefaultReadLimit(), ReadMaxRows)
    assert rr.latestOffset(start, rr.getDefaultReadLimit()) == {OFFSET_KEY: c[1]}
    assert rr.latestOffset({OFFSET_KEY: c[1]}, rr.getDefaultReadLimit()) == {OFFSET_KEY: c[2]}
    latest = reader(path, **{"hoodie.datasource.streaming.startOffset": "latest"})
    assert latest.initialOffset() == {OFFSET_KEY: c[3]}
    with pytest.raises(ConfigError):
        reader(path, maxCommitsPerTrigger="0")
    # availableNow: later commits wait for the next query
    r.prepareForTriggerAvailableNow()
    c4 = write(path, range(3), 9)
    assert r.latestOffset({OFFSET_KEY: c[3]}, r.getDefaultReadLimit()) == {OFFSET_KEY: c[3]}
    assert reader(path).latestOffset({OFFSET_KEY: c[3]}, ReadAllAvailable()) == {OFFSET_KEY: c4}


def test_source_stops_before_a_pending_write(tmp_path: Path) -> None:
    path = tmp_path / "t"
    c1 = write(path, range(5), 1)
    # a slow writer's instant requested before the next commit completes
    storage = Storage(str(path))
    slow = Instant(str(int(c1) + 1), "deltacommit", State.REQUESTED)
    TimelineWriter(storage, 1).create_requested(slow)
    c2 = _commit_without_rollback(path, range(5, 9))
    assert c2 > slow.requested_time
    r = reader(path)
    assert r.latestOffset({OFFSET_KEY: INIT_OFFSET}, ReadAllAvailable()) == {OFFSET_KEY: c1}
    TimelineWriter(storage, 1).delete_instant_files(slow)
    assert r.latestOffset({OFFSET_KEY: c1}, ReadAllAvailable()) == {OFFSET_KEY: c2}


def _commit_without_rollback(path: Path, ids: range) -> str:
    client = WriteClient(str(path), OPTS, post_commit=run_post_commit_services)
    batch = rows(ids, 2)
    t = client.start(batch.schema, rollback_failed=False)
    w = client.task_writer(t)
    w.write(batch)
    client.commit(t, w.close())
    return t


def test_source_with_compaction_and_cleaning(tmp_path: Path) -> None:
    path = tmp_path / "t"
    services = {
        "hoodie.compact.inline": "true",
        "hoodie.compact.inline.max.delta.commits": "2",
        "hoodie.cleaner.commits.retained": "1",
    }
    for i in range(5):
        hudi_ds.write(str(path), pa.Table.from_batches([rows(range(20), i + 1)]), OPTS | services)
    tl = ReadableTable(str(path)).timeline
    compactions = {
        i.requested_time for i in tl.commits() if tl.origin_action(i.requested_time) == "compaction"
    }
    assert compactions and tl.completed().filter_actions("clean")
    r = reader(path, maxCommitsPerTrigger="1")
    ends = []
    start = {OFFSET_KEY: INIT_OFFSET}
    while True:
        end = r.latestOffset(start, r.getDefaultReadLimit())
        if end == start:
            break
        assert end[OFFSET_KEY] not in compactions  # a batch never ends at a compaction
        parts = r.partitions(start, end)  # readable: the first batch starts at a kept instant
        assert parts
        ends.append(end[OFFSET_KEY])
        start = end
    data = [i.requested_time for i in tl.commits() if i.requested_time not in compactions]
    assert ends[-1] == data[-1] and len(ends) < len(data)  # older history folded into a snapshot


def test_source_waits_for_the_table(tmp_path: Path) -> None:
    path = tmp_path / "later"
    r = reader(path)  # started with .schema(...) before the first write
    start = r.initialOffset()
    assert r.latestOffset(start, ReadAllAvailable()) == start
    assert r.reportLatestOffset() is None
    c = write(path, range(3), 1)
    assert r.latestOffset(start, ReadAllAvailable()) == {OFFSET_KEY: c}


def test_write_tasks_coalesce_spark_batches_in_order() -> None:
    from hudi_ds.spark.writer import coalesce_batches

    target = pa.schema([("id", pa.string()), ("ts", pa.int64())])
    batches = []
    for i in range(25):
        n = 0 if i % 7 == 3 else 10 + i
        ids = pa.array([f"k{i}-{j}" for j in range(n)], pa.large_string())
        batches.append(pa.record_batch([ids, pa.array(range(n), pa.int32())], ["id", "ts"]))
    chunks = list(coalesce_batches(iter(batches), target, max_rows=100, max_bytes=1 << 30))
    assert all(c.schema == target and c.num_rows for c in chunks)
    assert all(c.column(0).num_chunks == 1 for c in chunks)  # one contiguous table each
    assert all(c.num_rows >= 100 for c in chunks[:-1]) and len(chunks) > 2
    got = pa.concat_tables(chunks)
    want = pa.Table.from_batches([b for b in batches if b.num_rows]).cast(target)
    assert got.equals(want)  # every row once, in order
    by_bytes = list(coalesce_batches(iter(batches), target, max_rows=1 << 30, max_bytes=1))
    assert len(by_bytes) == sum(1 for b in batches if b.num_rows)
    assert list(coalesce_batches(iter([]), target)) == []
