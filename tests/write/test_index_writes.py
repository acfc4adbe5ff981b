"""Writes under the non-bucket indexes (SIMPLE, BLOOM, GLOBAL_*): tagging, file sizing, moves.

Every table is created by the test, written through the embedded writer (the task protocol
where the test looks at a task's workload), and read back by hudi_ds and by hudi-rs, both
compared row for row (every column) with an independent model.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import hudi_ds
from hudi_ds.storage import Storage
from hudi_ds.table.fs_view import FileSystemView
from hudi_ds.table_config import TableConfig
from hudi_ds.timeline.view import TableState
from hudi_ds.write.assigner import records_per_new_file
from hudi_ds.write.client import WriteClient
from tests import builders
from tests.conftest import assert_rows, hudi_rs_table, table_options

COLUMNS = ["id", "ts", "city", "fare", "_hoodie_partition_path"]
INDEXES = ["SIMPLE", "GLOBAL_SIMPLE", "BLOOM", "GLOBAL_BLOOM"]
TYPES = ["COPY_ON_WRITE", "MERGE_ON_READ"]

Model = dict[str, tuple]


def _opts(index: str, table_type: str, **extra: str) -> dict[str, str]:
    return builders.options("t", table_type, partition="city", index=index, **extra)


trips = partial(builders.trips, key="k{:03d}", deleted=False)


def upsert_model(model: Model, rows: pa.Table, global_index: bool, move: bool = True) -> None:
    """Event-time ordering (the ``ts`` column): a version with a smaller ``ts`` loses."""
    for r in rows.to_pylist():
        old = model.get(r["id"])
        if old is not None and old[1] > r["ts"]:
            continue  # the stored record wins (and stays where it is)
        if r["_hoodie_is_deleted"]:
            model.pop(r["id"], None)
            continue
        part = r["city"]
        if old is not None and global_index and not move:
            part = old[4]  # re-keyed to the partition holding the key
        model[r["id"]] = (r["id"], r["ts"], r["city"], r["fare"], part)


def check(path: str, model: Model) -> None:
    want = list(model.values())
    assert_rows(hudi_ds.read(path), want, COLUMNS)
    assert_rows(hudi_rs_table(path), want, COLUMNS)


def _file_ids(path: str) -> set[tuple[str, str]]:
    state = TableState.open(path)
    view = FileSystemView(Storage(path), state.config)
    vis = state.visibility()
    return {(p, s.file_id) for p in view.partitions() for s in view.latest_file_slices(p, vis)}


@pytest.mark.parametrize("table_type", TYPES)
@pytest.mark.parametrize("index", INDEXES)
def test_upsert_then_delete_equals_the_model(tmp_path: Path, index: str, table_type: str) -> None:
    path = str(tmp_path / "t")
    opts = _opts(index, table_type)
    glob = index.startswith("GLOBAL_")
    model: Model = {}
    first = trips(range(30), 5)
    hudi_ds.write(path, first, opts)
    upsert_model(model, first, glob)
    check(path, model)
    cfg = TableConfig.load(Storage(path)).props
    assert cfg["hoodie.index.type"] == index
    assert "hoodie.bucket.index.num.buckets" not in cfg
    before = _file_ids(path)
    assert all(not f[:8].isdigit() or "-" in f[8:9] for _, f in before)

    # updates that win (ts 7) and lose (ts 1), a deleted row, new keys, a new partition; through
    # the task protocol so that the task's workload profile can be checked
    batch = pa.concat_tables(
        [
            trips(range(0, 10), 7),
            trips(range(10, 15), 1),
            trips([15], 9, deleted=True),
            trips(range(30, 40), 5),
            trips(range(40, 45), 5, city="la"),
        ]
    )
    client = WriteClient(path, opts)
    instant = client.start(batch.schema)
    task = client.task_writer(instant)
    for b in batch.to_batches(max_chunksize=7):  # several batches of one task
        task.write(b)
    profile = task.workload
    client.commit(instant, task.close())
    upsert_model(model, batch, glob)
    check(path, model)
    assert profile.inserts == {"nyc": 5, "sf": 5, "la": 5}
    ups = {k: (u.prev_commit, u.count) for k, u in profile.updates.items()}
    assert sum(n for _, n in ups.values()) == 16  # 15 updates and the deleted row's key
    assert set(ups) <= before and all(c for c, _ in ups.values())
    assert {p for p, _ in ups} == {"nyc", "sf"}

    # delete: existing keys (one in the new partition), a new key of the last write, a key
    # the table never held (dropped: no file group is created for it)
    ids_before = _file_ids(path)
    # k021 lives in sf: named in nyc, a non-global index does not find it (dropped)
    dels = pa.concat_tables(
        [trips([0, 20, 31, 999], 0), trips([41], 0, "la"), trips([21], 0, "nyc")]
    )
    hudi_ds.write(path, dels, {**opts, "hoodie.datasource.write.operation": "delete"})
    for i in (0, 20, 31, 41, *((21,) if glob else ())):
        model.pop(f"k{i:03d}")
    check(path, model)
    assert {p for p, _ in _file_ids(path)} == {p for p, _ in ids_before}
    assert _file_ids(path) <= ids_before


def _base_sizes(path: str) -> dict[str, tuple[str, int, int]]:
    """file id -> (base instant, size, rows) of the latest base files."""
    state = TableState.open(path)
    storage = Storage(path)
    view = FileSystemView(storage, state.config)
    vis = state.visibility()
    out = {}
    for p in view.partitions():
        for s in view.latest_file_slices(p, vis):
            assert s.base_file is not None and not s.log_files
            with storage.open_input_file(s.base_file.path) as f:
                rows = pq.ParquetFile(f).metadata.num_rows
            out[s.file_id] = (s.base_file.instant_time, s.base_file.size, rows)
    return out


SIZING = {
    "hoodie.parquet.max.file.size": str(60 * 1024),
    "hoodie.parquet.small.file.limit": str(45 * 1024),
    "hoodie.copyonwrite.record.size.estimate": "150",
    "hoodie.index.bloom.num_entries": "2000",
}


def sized_rows(start: int, n: int) -> pa.Table:
    rng = np.random.default_rng(start)
    return pa.table(
        {
            "id": [f"r{i:06d}" for i in range(start, start + n)],
            "ts": pa.array([1] * n, pa.int64()),
            # incompressible payload: file size grows with the records
            "payload": [rng.bytes(64).hex() for _ in range(n)],
        }
    )


def test_file_sizing_20_insert_commits_fill_small_files_first(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    opts = {
        **table_options("t", buckets=None, table_type="COPY_ON_WRITE"),
        "hoodie.index.type": "SIMPLE",
        **SIZING,
    }
    limit, small = 60 * 1024, 45 * 1024
    batch_rows = 100
    sizes: list[dict[str, tuple[str, int, int]]] = []
    for k in range(20):
        instant = hudi_ds.write(path, sized_rows(k * batch_rows, batch_rows), opts)
        now = _base_sizes(path)
        prev = sizes[-1] if sizes else {}
        opened = set(now) - set(prev)
        if opened and prev:
            # a new file group opens only once every small file took inserts in this commit
            for fid, (_, size, _) in prev.items():
                if size < small:
                    assert now[fid][0] == instant, f"commit {k}: small file {fid} skipped"
        # at most one small file after each commit: the others were filled
        assert sum(1 for _, s, _ in now.values() if s < small) <= 1, f"commit {k}: {now}"
        sizes.append(now)
    final = sizes[-1]
    assert sum(r for _, _, r in final.values()) == 20 * batch_rows
    # one batch's worth: the bytes of the largest single commit's rows (the first file)
    batch_bytes = max(s for _, s, r in sizes[0].values())
    assert all(s <= limit + batch_bytes for _, s, _ in final.values()), final
    assert len(final) >= sum(s for _, s, _ in final.values()) // (limit + batch_bytes)
    assert len(final) > 2  # the rows were split over several files
    # hudi-rs reads the same rows
    assert_rows(hudi_rs_table(path), [(f"r{i:06d}", 1) for i in range(2000)], ["id", "ts"])


def test_file_sizing_one_task_20_batches(tmp_path: Path) -> None:
    """Capacities are consumed across the batches of one task: every new file group but the
    last takes exactly the records a new file group takes."""
    path = str(tmp_path / "t")
    opts = {
        **table_options("t", buckets=None, table_type="COPY_ON_WRITE"),
        "hoodie.index.type": "SIMPLE",
        **SIZING,
    }
    hudi_ds.write(path, sized_rows(0, 10), opts)  # one small file
    small_before = _base_sizes(path)
    (fid0, (_, size0, rows0)), *_ = small_before.items()
    client = WriteClient(path, opts)
    batch = sized_rows(10, 2000)
    instant = client.start(batch.schema)
    task = client.task_writer(instant)
    for b in batch.to_batches(max_chunksize=100):
        task.write(b)
    avg = task.plan.avg_record_size
    client.commit(instant, task.close())
    per_new = records_per_new_file(60 * 1024, avg, True, 500000)
    cap0 = (60 * 1024 - size0) // avg
    after = _base_sizes(path)
    assert after[fid0][0] == instant and after[fid0][2] == rows0 + cap0
    new = sorted((r for fid, (_, _, r) in after.items() if fid != fid0), reverse=True)
    assert sum(new) == 2000 - cap0
    assert new[:-1] == [per_new] * (len(new) - 1) and 0 < new[-1] <= per_new
    assert_rows(hudi_rs_table(path), [(f"r{i:06d}", 1) for i in range(2010)], ["id", "ts"])


def test_mor_small_file_takes_inserts_as_a_new_base_file(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    opts = _opts("SIMPLE", "MERGE_ON_READ")
    model: Model = {}
    for rows in (trips(range(10), 5), trips([1, 2, 50, 51], 6)):
        hudi_ds.write(path, rows, opts)
        upsert_model(model, rows, False)
    check(path, model)
    state = TableState.open(path)
    view = FileSystemView(Storage(path), state.config)
    for p in ("nyc", "sf"):
        (s,) = view.latest_file_slices(p, state.visibility())
        # the small file group (no logs) took the inserts and the update: a new base file
        assert s.base_file is not None and not s.log_files
        assert s.base_instant_time == state.timeline.commits().last().requested_time
    # now it has a log file: updates append to it, inserts open a new file group
    hudi_ds.write(path, trips([3], 9), opts)
    upsert_model(model, trips([3], 9), False)
    hudi_ds.write(path, trips([61], 9), opts)
    upsert_model(model, trips([61], 9), False)
    check(path, model)
    sf = [f for p, f in _file_ids(path) if p == "sf"]
    assert len(sf) == 2


@pytest.mark.parametrize("table_type", TYPES)
def test_non_exclusive_tasks_insert_only_into_new_file_groups(
    tmp_path: Path, table_type: str
) -> None:
    path = str(tmp_path / "t")
    opts = _opts("SIMPLE", table_type)
    model: Model = {}
    rows = trips(range(10), 5)
    hudi_ds.write(path, rows, opts)
    upsert_model(model, rows, False)
    before = _base_sizes_any(path)
    client = WriteClient(path, opts)
    a, b = trips([0, 1, 100, 101], 7), trips([2, 3, 102, 103], 7)
    instant = client.start(a.schema)
    statuses = []
    for i, part in enumerate((a, b)):
        task = client.task_writer(instant, i, exclusive=False)
        task.write(part)
        statuses += task.close()
    client.commit(instant, statuses)
    for part in (a, b):
        upsert_model(model, part, False)
    check(path, model)
    after = _base_sizes_any(path)
    # the existing file groups were updated; the new keys of both tasks went to insert slots,
    # packed at commit into one new file group per partition (two keys each)
    assert set(before) <= set(after) and len(after) == len(before) + 2


def _base_sizes_any(path: str) -> dict[str, str]:
    return {f: p for p, f in _file_ids(path)}


@pytest.mark.parametrize("table_type", TYPES)
@pytest.mark.parametrize("index", ["GLOBAL_SIMPLE", "GLOBAL_BLOOM"])
def test_global_index_moves_a_key_to_its_new_partition(
    tmp_path: Path, index: str, table_type: str
) -> None:
    path = str(tmp_path / "t")
    opts = _opts(index, table_type)
    model: Model = {}
    steps = [
        trips(range(6), 5),
        trips([0], 6),  # k000 updated in place (a log on MOR: the move reads it merged)
        # k000 moves nyc -> la (newer); k002 arrives in la with an older ts: the stored
        # record wins and stays in nyc; k001 stays in sf
        pa.concat_tables([trips([0], 9, "la"), trips([2], 1, "la"), trips([1], 9)]),
        trips([0], 10, "sf"),  # and moves again, la -> sf
        trips([4], 3, "la"),  # older than the stored ts=5: stays in nyc with its values
        trips([3], 11, "nyc", deleted=True),  # a delete arriving in another partition
    ]
    for rows in steps:
        hudi_ds.write(path, rows.combine_chunks(), opts)
        upsert_model(model, rows, True)
        check(path, model)
    assert model["k000"][4] == "sf" and model["k002"][4] == "nyc" and "k003" not in model
    # the key exists only in its new partition, for both readers
    for t in (hudi_ds.read(path), hudi_rs_table(path)):
        keys = t.column("id").to_pylist()
        assert keys.count("k000") == 1


@pytest.mark.parametrize("table_type", TYPES)
def test_global_index_without_update_partition_path_updates_in_place(
    tmp_path: Path, table_type: str
) -> None:
    path = str(tmp_path / "t")
    opts = _opts(
        "GLOBAL_SIMPLE", table_type, **{"hoodie.simple.index.update.partition.path": "false"}
    )
    model: Model = {}
    for rows in (trips(range(4), 5), trips([0, 1], 9, "la")):
        hudi_ds.write(path, rows, opts)
        upsert_model(model, rows, True, move=False)
        check(path, model)
    assert model["k000"][2:] == ("la", 9.0, "nyc")  # the row keeps its own city value
    assert not any(p == "la" for p, _ in _file_ids(path))


def test_insert_operation_is_not_tagged(tmp_path: Path) -> None:
    """``insert`` writes every record as an insert (Java does not tag inserts): an existing
    key arriving through ``insert`` is written again, into a small file or a new file group."""
    path = str(tmp_path / "t")
    opts = _opts("SIMPLE", "COPY_ON_WRITE", **{"hoodie.parquet.small.file.limit": "0"})
    hudi_ds.write(path, trips(range(2), 5), opts)
    hudi_ds.write(path, trips([0], 7), {**opts, "hoodie.datasource.write.operation": "insert"})
    keys = sorted(hudi_rs_table(path).column("id").to_pylist())
    assert keys == ["k000", "k000", "k001"]


@pytest.mark.parametrize("table_type", TYPES)
def test_global_move_and_later_versions_in_one_task(tmp_path: Path, table_type: str) -> None:
    """Versions of a key in several batches of one task end in one partition, and the newest
    version wins (Java de-duplicates a global write's input by key before tagging)."""
    path = str(tmp_path / "t")
    opts = _opts("GLOBAL_SIMPLE", table_type)
    model: Model = {}
    first = trips(range(8), 5)
    hudi_ds.write(path, first, opts)
    upsert_model(model, first, True)
    batches = [
        trips([0], 7, "la"),  # k000 moves nyc -> la ...
        trips([0], 8, "nyc"),  # ... and its newer version joins it in la
        trips([2], 9, "la"),  # k002 moves nyc -> la, then an older version (ts 6) loses
        trips([2], 6),
        trips([4], 9),  # k004 updated in place in nyc, then a newer version named la joins it
        trips([4], 10, "la"),
        trips([6], 7, "la"),  # k006 moves nyc -> la, then is deleted (named in sf)
        trips([6], 8, "sf", deleted=True),
        # one batch, two versions of k001 in two partitions: the newest (la) decides
        pa.concat_tables([trips([1], 12, "la"), trips([1], 11, "nyc")]),
    ]
    client = WriteClient(path, opts)
    instant = client.start(first.schema)
    task = client.task_writer(instant)
    for b in batches:
        task.write(b.combine_chunks())
    (nyc,) = [f for p, f in _file_ids(path) if p == "nyc"]
    (sf,) = [f for p, f in _file_ids(path) if p == "sf"]
    assert task.workload.inserts == {"la": 4}
    # nyc: the deletes of k000, k002, k006 at the old location and k004's update; sf: k001
    updates = {k: u.count for k, u in task.workload.updates.items()}
    assert updates == {("nyc", nyc): 4, ("sf", sf): 1}
    client.commit(instant, task.close())
    model["k000"] = ("k000", 8, "nyc", 8.0, "la")
    model["k002"] = ("k002", 9, "la", 209.0, "la")
    model["k004"] = ("k004", 10, "la", 410.0, "nyc")
    del model["k006"]
    model["k001"] = ("k001", 12, "la", 112.0, "la")
    check(path, model)


def test_mor_small_file_rewrite_conflicts_with_concurrent_log_appends(tmp_path: Path) -> None:
    """Under optimistic concurrency, a writer appending logs to a file group whose base file
    another writer rewrote meanwhile (a MERGE_ON_READ small file taking inserts) must not
    commit: its log would hang off the replaced base file."""
    from hudi_ds.errors import CommitConflictError
    from tests.conftest import OCC_OPTIONS

    path = str(tmp_path / "t")
    opts = {
        **_opts("SIMPLE", "MERGE_ON_READ"),
        **OCC_OPTIONS,
        "hoodie.write.lock.wait_time_ms": "20",
        "hoodie.clean.automatic": "false",
    }
    model: Model = {}
    first = trips(range(4), 5)
    hudi_ds.write(path, first, opts)
    upsert_model(model, first, False)
    slow = WriteClient(path, opts)
    update = trips([0], 8)
    instant = slow.start(update.schema)  # plans against the small base file of nyc
    rewrite = trips([0, 10], 7)  # an update and an insert: nyc's small file is rewritten
    hudi_ds.write(path, rewrite, opts)
    upsert_model(model, rewrite, False)
    task = slow.task_writer(instant)
    task.write(update)
    statuses = task.close()
    assert [s.kind for s in statuses] == ["append"]
    with pytest.raises(CommitConflictError, match="conflicts with"):
        slow.commit(instant, statuses)
    slow.abort(instant)
    check(path, model)


def test_mor_concurrent_log_appends_both_commit(tmp_path: Path) -> None:
    """Two writers updating one MERGE_ON_READ file group through its log both commit (the
    later one's log is renumbered after the earlier one's), as with the bucket index."""
    from tests.conftest import OCC_OPTIONS

    path = str(tmp_path / "t")
    opts = {
        **_opts("SIMPLE", "MERGE_ON_READ"),
        **OCC_OPTIONS,
        "hoodie.write.lock.wait_time_ms": "20",
        "hoodie.clean.automatic": "false",
    }
    model: Model = {}
    for rows in (trips(range(4), 5), trips([0], 6)):  # nyc's file group has a log now
        hudi_ds.write(path, rows, opts)
        upsert_model(model, rows, False)
    slow = WriteClient(path, opts)
    mine = trips([2], 8)
    instant = slow.start(mine.schema)
    theirs = trips([0], 9)
    hudi_ds.write(path, theirs, opts)
    task = slow.task_writer(instant)
    task.write(mine)
    slow.commit(instant, task.close())
    for rows in (theirs, mine):
        upsert_model(model, rows, False)
    check(path, model)


def test_file_groups_in_pending_clustering_take_no_inserts(tmp_path: Path) -> None:
    from hudi_ds.timeline.instant import Instant, State, new_instant_time
    from hudi_ds.timeline.plans import (
        ClusteringGroup,
        ClusteringPlan,
        RequestedReplaceMetadata,
        SliceInfo,
    )

    path = str(tmp_path / "t")
    opts = _opts("SIMPLE", "COPY_ON_WRITE")
    model: Model = {}
    first = trips(range(4), 5)
    hudi_ds.write(path, first, opts)
    upsert_model(model, first, False)
    (sf,) = [f for p, f in _file_ids(path) if p == "sf"]
    # a pending clustering of sf's only (small) file group
    state = TableState.open(path)
    plan = ClusteringPlan(
        input_groups=[ClusteringGroup(slices=[SliceInfo(file_id=sf, partition_path="sf")])]
    )
    content = RequestedReplaceMetadata(operation_type="CLUSTER", clustering_plan=plan)
    when = new_instant_time(after=state.timeline.last().requested_time)
    assert state.timeline_writer().create_requested(
        Instant(when, "replacecommit", State.REQUESTED), content.to_bytes()
    )
    rows = trips([5, 7, 0], 9)  # two inserts into sf, an update in nyc
    client = WriteClient(path, {**opts, "hoodie.write.lock.wait_time_ms": "20"})
    instant = client.start(rows.schema, rollback_failed=False)
    assert client.plan(instant).pending_clustering == {("sf", sf)}
    task = client.task_writer(instant)
    task.write(rows)
    client.commit(instant, task.close())
    upsert_model(model, rows, False)
    check(path, model)
    sf_groups = [f for p, f in _file_ids(path) if p == "sf"]
    assert len(sf_groups) == 2 and sf in sf_groups  # a new file group took the inserts


def _write_tasks(client: WriteClient, parts: list[pa.Table]) -> str:
    """One instant written by non-exclusive tasks (as Spark's), one task per table."""
    instant = client.start(parts[0].schema)
    statuses = []
    for i, part in enumerate(parts):
        task = client.task_writer(instant, i, exclusive=False)
        for b in part.to_batches(max_chunksize=3):
            task.write(b)
        statuses += task.close()
    client.commit(instant, statuses)
    return instant


@pytest.mark.parametrize("table_type", TYPES)
@pytest.mark.parametrize("index", ["SIMPLE", "GLOBAL_SIMPLE", "BLOOM", "GLOBAL_BLOOM"])
def test_non_exclusive_tasks_agree_where_a_new_key_goes(
    tmp_path: Path, index: str, table_type: str
) -> None:
    """The same new keys reach two tasks of one write (Spark input partitions): each key is
    written once, its winning version (the larger ``ts``, whichever task had it)."""
    path = str(tmp_path / "t")
    opts = _opts(index, table_type)
    glob = index.startswith("GLOBAL_")
    model: Model = {}
    first = trips(range(10), 5)
    hudi_ds.write(path, first, opts)
    upsert_model(model, first, glob)
    before = _file_ids(path)
    # keys 100..119 in both tasks: task 0 wins for even keys, task 1 for odd ones; plus keys
    # only one task has, an update of an existing key in both tasks, and a new key that one
    # task inserts and the other deletes (the later ts wins: the delete)
    both = list(range(100, 120))
    a = pa.concat_tables(
        [
            trips([i for i in both if i % 2 == 0], 9),
            trips([i for i in both if i % 2], 3),
            trips(range(200, 210), 5),
            trips([1], 6),
            trips([300], 4),
        ]
    )
    b = pa.concat_tables(
        [
            trips([i for i in both if i % 2 == 0], 2),
            trips([i for i in both if i % 2], 8),
            trips(range(210, 220), 5),
            trips([1], 7),
            trips([300], 6, deleted=True),
            trips([400], 6, city="la", deleted=True),  # a key no task inserts: nothing
        ]
    )
    client = WriteClient(path, opts)
    _write_tasks(client, [a, b])
    upsert_model(model, pa.concat_tables([a, b]).sort_by("ts"), glob)
    check(path, model)
    got = hudi_ds.read(path).column("id").to_pylist()
    assert len(got) == len(set(got))  # no key twice
    # the new keys of both tasks went to one new file group per partition (packed slots)
    new = _file_ids(path) - before
    assert sorted(p for p, _ in new) == ["nyc", "sf"]
    assert not (Path(path) / "la").exists()  # the delete-only slot wrote no file group
    if table_type == "MERGE_ON_READ":
        # the new file groups start with base files (Java's SIMPLE / BLOOM see their keys)
        state = TableState.open(path)
        view = FileSystemView(Storage(path), state.config)
        for p, fid in new:
            (s,) = [s for s in view.latest_file_slices(p, state.visibility()) if s.file_id == fid]
            assert s.base_file is not None and not s.log_files
    # a later upsert finds the keys (one more version each, no new file group)
    later = trips([100, 101, 205, 215], 10)
    hudi_ds.write(path, later, opts)
    upsert_model(model, later, glob)
    check(path, model)
    assert _file_ids(path) == _file_ids(path) & (before | new)


@pytest.mark.parametrize("table_type", TYPES)
def test_non_exclusive_global_index_new_key_in_two_partitions(
    tmp_path: Path, table_type: str
) -> None:
    """GLOBAL_SIMPLE: one new key reaches two tasks under different partition values; it is
    written once, in the partition of its winning version."""
    path = str(tmp_path / "t")
    opts = _opts("GLOBAL_SIMPLE", table_type)
    model: Model = {}
    first = trips(range(4), 5)
    hudi_ds.write(path, first, opts)
    upsert_model(model, first, True)
    a = pa.concat_tables([trips([50, 51], 9, city="la"), trips([60], 5, city="la")])
    b = pa.concat_tables([trips([50, 51], 3, city="sea"), trips([61], 5, city="sea")])
    # key 52: the later version (task 0's, ts 8) names nyc, the other sf
    a = pa.concat_tables([a, trips([52], 8, city="nyc")])
    b = pa.concat_tables([b, trips([52], 4, city="sf")])
    client = WriteClient(path, opts)
    _write_tasks(client, [a, b])
    upsert_model(model, pa.concat_tables([a, b]).sort_by("ts"), True)
    check(path, model)
    got = hudi_ds.read(path).column("id").to_pylist()
    assert len(got) == len(set(got))
    assert model["k050"][4] == "la" and model["k052"][4] == "nyc"


def test_non_exclusive_new_file_groups_are_sized(tmp_path: Path) -> None:
    """Inserts of non-exclusive tasks are packed into ceil(records / records per new file)
    new file groups at commit, each about the records a new file group takes."""
    path = str(tmp_path / "t")
    opts = {
        **table_options("t", buckets=None, table_type="COPY_ON_WRITE"),
        "hoodie.index.type": "SIMPLE",
        **SIZING,
    }
    hudi_ds.write(path, sized_rows(0, 10), opts)
    before = _base_sizes(path)
    client = WriteClient(path, opts)
    # four tasks, 600 new keys each, 100 keys repeated in every task
    parts = [
        pa.concat_tables([sized_rows(10 + 600 * t, 600), sized_rows(9000, 100)]) for t in range(4)
    ]
    instant = client.start(parts[0].schema)
    statuses = []
    for t, part in enumerate(parts):
        task = client.task_writer(instant, t, exclusive=False)
        task.write(part)
        avg = task.plan.avg_record_size
        statuses += task.close()
    client.commit(instant, statuses)
    per_new = records_per_new_file(60 * 1024, avg, True, 500000)
    after = _base_sizes(path)
    new = {f: r for f, (_, _, r) in after.items() if f not in before}
    assert sum(new.values()) == 2500
    staged = 4 * 700  # the staged records (the repeated keys counted in every task)
    assert len(new) == -(-staged // per_new)
    # the slots' records split evenly by the key hash: no file far above its share
    assert max(new.values()) <= 1.6 * per_new, (new, per_new)
    ids = [f"r{i:06d}" for i in (*range(0, 2410), *range(9000, 9100))]
    assert_rows(hudi_rs_table(path), [(i, 1) for i in ids], ["id", "ts"])


@pytest.mark.parametrize("table_type", TYPES)
def test_non_exclusive_commit_time_ordering_later_task_wins(
    tmp_path: Path, table_type: str
) -> None:
    """Without an ordering field (COMMIT_TIME_ORDERING) the versions of a new key that two
    tasks got merge in task order: the later task's version is written, once."""
    path = str(tmp_path / "t")
    opts = {
        **table_options(
            "t", partition="city", precombine=None, buckets=None, table_type=table_type
        ),
        "hoodie.index.type": "SIMPLE",
    }
    hudi_ds.write(path, trips(range(4), 5), opts)
    a = pa.concat_tables([trips(range(100, 110), 9), trips([200], 1)])
    b = pa.concat_tables([trips(range(100, 110), 3), trips([201], 1)])
    _write_tasks(WriteClient(path, opts), [a, b])
    model: Model = {}
    for t in (trips(range(4), 5), a, b):  # arrival order: task 0, then task 1
        for r in t.to_pylist():
            model[r["id"]] = (r["id"], r["ts"], r["city"], r["fare"], r["city"])
    check(path, model)
    assert model["k100"][1] == 3
