"""Table services and concurrent writers.

A compaction scheduled while a write is starting must not strand the write: the write's log
files either are in the plan or move into the compaction's slice when it commits. Services take
the table lock for their timeline transitions under optimistic concurrency control.
"""

from __future__ import annotations

import time
from pathlib import Path

import hudi
import pyarrow as pa
import pytest

import hudi_ds
from hudi_ds.concurrency.file_system_lock import FileSystemLock
from hudi_ds.concurrency.lock import LockTimeoutError
from hudi_ds.services import ServiceContext, archival, clean, compaction, run_post_commit_services
from hudi_ds.storage import Storage
from hudi_ds.timeline import writer as timeline_writer
from hudi_ds.write.client import WriteClient
from tests.conftest import OCC_OPTIONS, table_options

OPTS = {
    **table_options("svc", table_type="MERGE_ON_READ", buckets=1),
    "hoodie.clean.automatic": "false",
    "hoodie.archive.automatic": "false",
}
MULTI = {**OPTS, **OCC_OPTIONS, "hoodie.write.lock.wait_time_ms": "10"}


def row(ts: int, v: str) -> pa.Table:
    return pa.table({"id": ["a", "b"], "ts": [ts, ts], "v": [v, v + "b"]})


def both_readers(path: str) -> tuple[list[dict], list[dict]]:
    ours = hudi_ds.read(path, columns=["id", "ts", "v"]).sort_by("id").to_pylist()
    batches = hudi.HudiTableBuilder.from_base_uri(path).build().read(hudi.HudiReadOptions())
    rs = pa.Table.from_batches(batches).select(["id", "ts", "v"]).sort_by("id").to_pylist()
    return ours, rs


def expected(ts: int, v: str) -> list[dict]:
    return [{"id": "a", "ts": ts, "v": v}, {"id": "b", "ts": ts, "v": v + "b"}]


def test_write_committed_while_the_compaction_instant_is_taken_is_not_lost(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The forced interleaving of the issue: the scheduler has planned and taken time C; a
    writer starts (T > C), writes its log against the old slice and commits before
    ``C.compaction.requested`` exists; the compaction then runs to completion."""
    path = str(tmp_path / "t")
    hudi_ds.write(path, row(1, "one"), OPTS)
    hudi_ds.write(path, row(2, "two"), OPTS)
    real = timeline_writer.TimelineWriter.create_requested
    fired: list[str] = []

    def create_requested(self, req, content=b""):  # type: ignore[no-untyped-def]
        if req.action == "compaction" and not fired:
            fired.append(req.requested_time)
            time.sleep(0.002)
            hudi_ds.write(path, row(3, "three"), OPTS)  # the write slips in between
        return real(self, req, content)

    monkeypatch.setattr(timeline_writer.TimelineWriter, "create_requested", create_requested)
    ctx = ServiceContext.open(path, OPTS)
    c = compaction.schedule_compaction(ctx)
    monkeypatch.undo()
    assert c is not None and fired == [c]
    (res,) = compaction.run_compaction(ctx, c)
    assert res.instant == c
    ours, rs = both_readers(path)
    assert ours == expected(3, "three")
    assert rs == expected(3, "three")


def test_write_pending_while_a_compaction_is_scheduled_and_run_moves_into_its_slice(
    tmp_path: Path,
) -> None:
    """Multi-writer: a write in flight does not block scheduling; its log files are not in the
    plan and join the compaction's slice at its commit, after the compaction completed."""
    path = str(tmp_path / "t")
    hudi_ds.write(path, row(1, "one"), MULTI)
    hudi_ds.write(path, row(2, "two"), MULTI)
    client = WriteClient(path, MULTI, post_commit=run_post_commit_services)
    t = client.start(row(3, "x").schema)
    task = client.task_writer(t)
    task.write(row(3, "three"))
    statuses = task.close()
    ctx = ServiceContext.open(path, MULTI)
    c = compaction.schedule_compaction(ctx)
    assert c is not None and c > t
    plan = ctx.timeline().read_compaction_plan(c)
    ours_logs = {s.path for s in statuses}
    assert not ours_logs & {p for op in plan.operations or [] for p in op.log_file_rel_paths}
    (res,) = compaction.run_compaction(ctx, c)
    assert res.instant == c
    assert both_readers(path)[0] == expected(2, "two")
    done = client.commit(t, statuses)
    md = hudi_ds.HudiTable(path).timeline.read_commit_metadata(done)
    (stat,) = [s for sts in md.partition_to_write_stats.values() for s in sts]
    assert f"_{c}.log." in (stat.path or "") and stat.prev_commit == c
    assert (Path(path) / (stat.path or "")).exists()
    ours, rs_before = both_readers(path)
    assert ours == expected(3, "three")
    # hudi-rs reads the compacted slice with the moved log on top of it
    assert rs_before == expected(3, "three")


def test_write_started_after_scheduling_and_committed_after_completion(tmp_path: Path) -> None:
    """A write that saw pending compaction C writes into C's slice; if C completes before the
    write commits, nothing moves and the write stays on top of C's base file."""
    path = str(tmp_path / "t")
    hudi_ds.write(path, row(1, "one"), MULTI)
    hudi_ds.write(path, row(2, "two"), MULTI)
    ctx = ServiceContext.open(path, MULTI)
    c = compaction.schedule_compaction(ctx)
    assert c is not None
    client = WriteClient(path, MULTI, post_commit=run_post_commit_services)
    t = client.start(row(3, "x").schema)
    task = client.task_writer(t)
    task.write(row(3, "three"))
    statuses = task.close()
    compaction.run_compaction(ctx, c)
    client.commit(t, statuses)
    ours, rs = both_readers(path)
    assert ours == rs == expected(3, "three")


def _held_by_someone_else(path: str) -> FileSystemLock:
    other = FileSystemLock(Storage(path), expire_s=600)
    other.acquire()
    return other


@pytest.mark.parametrize("service", ["schedule", "run", "clean", "archive"])
def test_services_take_the_table_lock(tmp_path: Path, service: str) -> None:
    path = str(tmp_path / "t")
    for k in range(3):
        hudi_ds.write(path, row(k + 1, str(k)), MULTI)
    opts = {**MULTI, "hoodie.write.lock.num_retries": "3"}
    ctx = ServiceContext.open(path, opts)
    if service == "run":
        assert compaction.schedule_compaction(ctx) is not None
    other = _held_by_someone_else(path)
    before = sorted(p.name for p in (Path(path) / ".hoodie").iterdir())
    calls = {
        "schedule": lambda: compaction.schedule_compaction(ctx),
        "run": lambda: compaction.run_compaction(ctx),
        "clean": lambda: clean.clean(ctx),
        "archive": lambda: archival.archive(ctx),
    }
    with pytest.raises(LockTimeoutError):
        calls[service]()
    assert sorted(p.name for p in (Path(path) / ".hoodie").iterdir()) == before
    other.release()
    calls[service]()  # the lock is free again
    ours, rs = both_readers(path)
    assert ours == rs == expected(3, "2")


def test_inline_compaction_of_one_writer_while_another_writes(tmp_path: Path) -> None:
    """Multi-writer: a writer's inline compaction is scheduled even though another writer's
    instant is pending; that writer's logs join the compaction's slice when it commits."""
    path = str(tmp_path / "t")
    hudi_ds.write(path, row(1, "one"), MULTI)
    slow = WriteClient(path, MULTI, post_commit=run_post_commit_services)
    t = slow.start(row(3, "x").schema)
    task = slow.task_writer(t)
    task.write(row(3, "three"))
    statuses = task.close()
    inline = {**MULTI, "hoodie.compact.inline": "true"}
    inline["hoodie.compact.inline.max.delta.commits"] = "1"
    hudi_ds.write(path, row(2, "two"), inline)
    tl = hudi_ds.HudiTable(path).timeline
    compacted = [i for i in tl.commits() if tl.origin_action(i.requested_time) == "compaction"]
    assert len(compacted) == 1 and compacted[0].requested_time > t
    slow.commit(t, statuses)
    # event-time ordering: ts 3 wins although it committed last on top of the compacted slice
    ours, rs = both_readers(path)
    assert ours == rs == expected(3, "three")
