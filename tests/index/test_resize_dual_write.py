"""Writers beside a pending consistent-hashing resize (Java's dual write,
``SparkConsistentBucketDuplicateUpdateStrategy``; :mod:`hudi_ds.index.pending_resize`).

The table: MERGE_ON_READ, partition ``sf`` only, 4 initial nodes, 120 keys ``k0000``-``k0119``
(ts 1). A resize is scheduled with ``max.file.size`` 2000 and at most 5 nodes: one node splits
in two. Beside it a write upserts keys 0-79 with ts 2 (updates, many in the resized node) and
keys 120-159 (inserts), and deletes every 7th key below 120 -- 136 rows. Then the resize
(a) completes, (b) is rolled back, or (c) is killed mid-execute and run again; each time the
table is compared row by row (every key once, latest values) with a model, read by hudi_ds and
by hudi-rs, before and after a write that follows.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

import hudi_ds
from hudi_ds.errors import CommitConflictError, TimelineError
from hudi_ds.faults import EXIT_CODE
from hudi_ds.index.consistent_hashing import load_metadata
from hudi_ds.services import ServiceContext, bucket_resize, clustering, rollback
from hudi_ds.storage import Storage
from hudi_ds.timeline.view import TableState
from hudi_ds.write.client import WriteClient
from tests import builders
from tests.conftest import OCC_OPTIONS, assert_rows, hudi_rs_table, run_forked

COLUMNS = ["id", "ts", "city", "fare"]
ENGINE = {"hoodie.index.bucket.engine": "CONSISTENT_HASHING"}
KEY = "k{:04d}"
Model = dict[str, tuple]


def _opts(version: str, **extra: str) -> dict[str, str]:
    return builders.options(
        "t",
        "MERGE_ON_READ",
        partition="city",
        index="BUCKET",
        buckets=4,
        **ENGINE,
        **{"hoodie.write.table.version": version},
        **extra,
    )


def _resize_opts(version: str, **extra: str) -> dict[str, str]:
    return _opts(
        version,
        **{"hoodie.parquet.max.file.size": "2000", "hoodie.bucket.index.max.num.buckets": "5"},
        **extra,
    )


def _apply(model: Model, rows: pa.Table, delete: bool = False) -> None:
    for r in rows.to_pylist():
        if delete:
            model.pop(r["id"], None)
        else:
            model[r["id"]] = (r["id"], r["ts"], r["city"], r["fare"])


def _check(path: str, model: Model) -> None:
    assert_rows(hudi_ds.read(path), list(model.values()), COLUMNS)
    assert_rows(hudi_rs_table(path), list(model.values()), COLUMNS)


def _write(path: str, opts: dict[str, str], model: Model, rows: pa.Table, op: str) -> None:
    hudi_ds.write(path, rows, {**opts, "hoodie.datasource.write.operation": op})
    _apply(model, rows, delete=op == "delete")


def _table_with_pending_resize(path: str, version: str, **extra: str) -> tuple[str, Model]:
    model: Model = {}
    _write(
        path,
        _opts(version, **extra),
        model,
        builders.trips(range(120), key=KEY, city="sf"),
        "upsert",
    )
    ctx = ServiceContext.open(path, _resize_opts(version, **extra))
    instant = clustering.schedule_clustering(ctx)
    assert instant is not None
    return instant, model


def _write_beside(path: str, version: str, model: Model, ts: int = 2, **extra: str) -> None:
    """Upserts (updates and inserts) and deletes beside the pending resize."""
    opts = _opts(version, **extra)
    ups = builders.trips(
        [*range(0, 80), *range(120 + 40 * (ts - 2), 160 + 40 * (ts - 2))], ts=ts, key=KEY, city="sf"
    )
    _write(path, opts, model, ups, "upsert")
    dels = builders.trips(range(ts - 2, 120, 7), ts=ts, key=KEY, city="sf")
    _write(path, opts, model, dels, "delete")


def _children_copies(path: str, instant: str) -> list[str]:
    """The log files named after the resize (the writers' copies into its children)."""
    return [f.name for f in Storage(path).list_files("sf") if f"_{instant}.log." in f.name]


def _ring_nodes(path: str) -> int:
    state = TableState.open(path)
    ring = load_metadata(Storage(path), "sf", lambda i: i in state.visibility().instants)
    assert ring is not None
    return len(ring.nodes)


@pytest.mark.parametrize("version", ["6", "9"])
def test_writes_beside_a_resize_that_completes(tmp_path: Path, version: str) -> None:
    path = str(tmp_path / "t")
    instant, model = _table_with_pending_resize(path, version)
    _write_beside(path, version, model)
    assert _children_copies(path, instant)  # the updates of the split node went to both
    _check(path, model)  # the copies are invisible while the resize is pending
    clustering.run_clustering(ServiceContext.open(path, _resize_opts(version)))
    assert _ring_nodes(path) == 5
    _check(path, model)
    _write_beside(path, version, model, ts=3)  # by the new ring
    _check(path, model)


def test_writes_beside_a_resize_that_is_rolled_back(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    instant, model = _table_with_pending_resize(path, "6")
    _write_beside(path, "6", model)
    rollback.rollback(ServiceContext.open(path, _opts("6")), instant)
    assert not clustering.pending_clusterings(TableState.open(path).timeline)
    assert _ring_nodes(path) == 4
    _check(path, model)
    _write_beside(path, "6", model, ts=3)
    _check(path, model)
    # a later resize splits the node again, with other children
    ctx = ServiceContext.open(path, _resize_opts("6"))
    clustering.run_clustering(ctx, clustering.schedule_clustering(ctx))
    assert _ring_nodes(path) == 5
    _check(path, model)


@pytest.mark.parametrize("version", ["6", "9"])
def test_writes_beside_a_resize_killed_mid_execute(tmp_path: Path, version: str) -> None:
    """The resize dies after one child's base file; writes go on beside it (still pending);
    its next run dies while rolling that attempt back, and the one after finishes the rollback
    (the attempt's own files only, never the writers' copies -- on version 9 named after the
    resize like them) and completes it."""
    path = str(tmp_path / "t")
    instant, model = _table_with_pending_resize(path, version)
    _write_beside(path, version, model)
    copies = _children_copies(path, instant)

    def run() -> None:
        clustering.run_clustering(ServiceContext.open(path, _resize_opts(version)), instant)

    assert run_forked(run, "clustering:1") == EXIT_CODE
    _check(path, model)
    _write_beside(path, version, model, ts=3)
    assert set(copies) < set(_children_copies(path, instant))
    _check(path, model)
    copies = _children_copies(path, instant)
    assert run_forked(run, "rollback:1") == EXIT_CODE
    _check(path, model)
    clustering.run_clustering(ServiceContext.open(path, _resize_opts(version)))
    assert _ring_nodes(path) == 5
    assert set(copies) <= set(_children_copies(path, instant))
    _check(path, model)


def test_two_writers_beside_a_resize_under_occ(tmp_path: Path) -> None:
    """Under optimistic concurrency control: writer A starts beside the pending resize and
    writes its files; writer B writes beside it and commits; the resize completes (B's copies
    keep B's records); A commits last, its copies renumbered after B's, on top of the resize's
    children -- A's records (the greatest ts) win, every key once."""
    path = str(tmp_path / "t")
    occ = {**OCC_OPTIONS, "hoodie.write.lock.wait_time_ms": "10"}
    instant, model = _table_with_pending_resize(path, "6", **occ)
    a_rows = builders.trips(range(0, 120, 2), ts=5, key=KEY, city="sf")
    a = WriteClient(path, {**_opts("6", **occ), "hoodie.datasource.write.operation": "upsert"})
    t = a.start(a_rows.schema)
    task = a.task_writer(t)
    task.write(a_rows)
    statuses = task.close()
    _write_beside(path, "6", model, **occ)  # writer B, ts 2
    clustering.run_clustering(ServiceContext.open(path, _resize_opts("6", **occ)))
    assert _ring_nodes(path) == 5
    _check(path, model)
    before = _children_copies(path, instant)
    a.commit(t, statuses)
    _apply(model, a_rows)
    _check(path, model)
    after = _children_copies(path, instant)
    a_copies = {s.path.rsplit("/", 1)[-1] for s in statuses} & set(before)
    # A's copies were written before B's and are renumbered after them at A's commit
    assert a_copies and not a_copies & set(after) and len(after) == len(before)


def test_a_resize_planned_after_a_write_started_fails_that_write(tmp_path: Path) -> None:
    """Multi-writer: a resize scheduled while a write is pending is refused (Java's
    checkPrecondition); one that appears after the write planned its files (its plan could
    not know the children) fails the write at its commit, nothing of it visible."""
    path = str(tmp_path / "t")
    occ = {**OCC_OPTIONS, "hoodie.write.lock.wait_time_ms": "10"}
    model: Model = {}
    _write(path, _opts("6", **occ), model, builders.trips(range(120), key=KEY, city="sf"), "upsert")
    rows = builders.trips(range(0, 120, 3), ts=4, key=KEY, city="sf")
    w = WriteClient(path, {**_opts("6", **occ), "hoodie.datasource.write.operation": "upsert"})
    t = w.start(rows.schema)
    task = w.task_writer(t)
    task.write(rows)
    statuses = task.close()
    # the pending write keeps the resize from being planned
    with pytest.raises(TimelineError, match="writes are pending"):
        clustering.schedule_clustering(ServiceContext.open(path, _resize_opts("6", **occ)))
    # planned anyway (as by a scheduler that did not see the write): the write fails
    ctx = ServiceContext.open(path, _resize_opts("6", **occ))
    plan = bucket_resize.plan_bucket_resize(ctx)
    assert plan is not None
    ctx.new_instant("replacecommit", clustering.requested_metadata(plan).to_bytes(), ctx.timeline())
    with pytest.raises(CommitConflictError, match="planned after this write started"):
        w.commit(t, statuses)
    _check(path, model)


def test_a_single_writer_commits_after_the_resize_it_wrote_beside(tmp_path: Path) -> None:
    """A single writer's write starts beside a pending resize, which another process completes
    while the write is in flight: the write commits (its copies are on the resize's children,
    the old file group it also wrote is replaced) and every key is there once; a write that
    did not know the resize would have been refused (another commit while it was written)."""
    path = str(tmp_path / "t")
    instant, model = _table_with_pending_resize(path, "9")
    rows = builders.trips([*range(0, 120, 3), *range(120, 140)], ts=4, key=KEY, city="sf")
    w = WriteClient(path, {**_opts("9"), "hoodie.datasource.write.operation": "upsert"})
    t = w.start(rows.schema)
    task = w.task_writer(t)
    task.write(rows)
    statuses = task.close()
    assert _children_copies(path, instant)
    assert (
        run_forked(lambda: clustering.run_clustering(ServiceContext.open(path, _resize_opts("9"))))
        == 0
    )
    assert _ring_nodes(path) == 5
    _check(path, model)
    w.commit(t, statuses)
    _apply(model, rows)
    _check(path, model)
