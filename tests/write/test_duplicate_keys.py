"""Upserts and deletes into tables Java left with a key in several file groups, and into MERGE_ON_READ
file groups that hold their keys in log files alone.

Keys held twice. Java's ``insert`` writes every record as an insert (no index lookup; with
``hoodie.parquet.small.file.limit=0`` no small file takes them, ``UpsertPartitioner.assignInserts``
opens new file groups), and ``bulk_insert`` always opens new file groups
(``SparkBulkInsertHelper``): a key inserted twice lives in two file groups. Java's SIMPLE and
BLOOM indexes then tag an incoming record once per location holding its key
(``HoodieSimpleIndex.tagLocationInternal``, ``HoodieBloomIndex.tagLocationBacktoRecords``: a left
outer join with the files' ``(key, location)`` pairs; the global variants through
``HoodieIndexUtils.tagGlobalLocationBackToRecords``), so every copy is merged with the update on
its own and every copy is deleted. Tables here: ``insert`` of ``k000..k009`` (``ts`` 1) then
``insert`` of ``k000..k003`` (``ts`` 2, other values): keys 0-3 twice, each copy its own file
group. Then one upsert (``k000`` newer than both copies, ``k001`` as old as the first copy --
a tie goes to the later write -- but older than the second, ``k002`` older than both, new keys,
one in a new partition) and a delete of ``k000`` and ``k003``. The model keeps every copy.

Log-only file groups. An index that indexes log files (Flink's state index, the bucket index,
the record-level index) writes a MERGE_ON_READ insert to a log file: Flink's ``BucketAssigner``
opens a file group with a fresh UUID (``createFileIdOfThisTask``) and its first file is a log
file whose base instant is the delta commit (``FlinkAppendHandle``); the table records no index
type. Java's SIMPLE and BLOOM indexes read base files only (``canIndexLogFiles()`` is false), so
an upsert through them would write those keys again; hudi_ds reads the keys of base-less slices
and updates them where they live.
"""

from __future__ import annotations

import json
import uuid
from functools import partial
from pathlib import Path

import pyarrow as pa
import pytest

import hudi_ds
from hudi_ds.storage import Storage
from hudi_ds.table.fs_view import FileSystemView
from hudi_ds.timeline.view import TableState
from tests import builders
from tests.conftest import hudi_rs_table

COLUMNS = ["id", "ts", "p", "v", "_hoodie_partition_path"]
TYPES = ["COPY_ON_WRITE", "MERGE_ON_READ"]

rows = partial(builders.rows, value=lambda i, ts: float(i * 10 + ts))

#: a model: the rows a read must return, a key once per copy (tuples of COLUMNS)
Model = list[tuple]


def _opts(table_type: str, index: str, **extra: str) -> dict[str, str]:
    return (
        builders.options(
            "t", table_type, partition="p", index=index, **{"hoodie.parquet.small.file.limit": "0"}
        )
        | extra
    )


def _model_rows(t: pa.Table) -> Model:
    """The rows of ``t`` as the model holds them (in their own partition)."""
    return [(r["id"], r["ts"], r["p"], r["v"], r["p"]) for r in t.to_pylist()]


def _insert(path: str, t: pa.Table, opts: dict[str, str], model: Model) -> None:
    hudi_ds.write(path, t, {**opts, "hoodie.datasource.write.operation": "insert"})
    model.extend(_model_rows(t))


def _upsert(model: Model, t: pa.Table, global_: bool, move: bool = False) -> Model:
    """``model`` after an upsert of ``t`` under event-time ordering (``ts``), each copy of a
    key merged with the incoming row on its own (a tie goes to the incoming row). A global
    index keeps a copy's partition path. With ``move`` (``update.partition.path``) a key ends
    in one partition: the one its primary copy (the latest written, listed last) ends in --
    the incoming row's when that row wins over the primary copy --, and the copies elsewhere
    are deleted."""
    out = list(model)
    for r in t.to_pylist():
        new = (r["id"], r["ts"], r["p"], r["v"], r["p"])
        held = [i for i, m in enumerate(out) if m[0] == r["id"] and (global_ or m[4] == r["p"])]
        if not held:
            out.append(new)
            continue
        if move:
            primary = out[held[-1]]
            if primary[4] != r["p"] and primary[1] <= r["ts"]:  # moves: one row, elsewhere
                out = [m for i, m in enumerate(out) if i not in held] + [new]
                continue
            gone = {i for i in held if out[i][4] != primary[4]}
            held = [i for i in held if i not in gone]
            out = [m for i, m in enumerate(out) if i not in gone]
            held = [i - sum(g < i for g in gone) for i in held]
        for i in held:
            if out[i][1] <= r["ts"]:
                out[i] = (*new[:4], out[i][4])
    return out


def _check(path: str, model: Model) -> None:
    want = sorted(model, key=repr)
    for reader in ("hudi_ds", "hudi-rs"):
        t = hudi_ds.read(path) if reader == "hudi_ds" else hudi_rs_table(path)
        got = builders.sorted_rows(t, COLUMNS, unique=False)
        assert sorted(got, key=repr) == want, reader


def _groups_holding(path: str, key: str) -> int:
    """How many file groups of the latest snapshot hold ``key``."""
    t = hudi_ds.read(path, columns=["id", "_hoodie_file_name"])
    names = {
        f.split("_")[0]
        for k, f in zip(
            t.column("id").to_pylist(), t.column("_hoodie_file_name").to_pylist(), strict=True
        )
        if k == key
    }
    return len(names)


@pytest.mark.parametrize("table_type", TYPES)
@pytest.mark.parametrize("index", ["SIMPLE", "BLOOM", "STATE"])
def test_keys_held_twice_are_updated_and_deleted_in_every_copy(
    tmp_path: Path, table_type: str, index: str
) -> None:
    """``STATE``: the SIMPLE index answered by a long-lived writer's state index."""
    path = str(tmp_path / "t")
    opts = _opts(table_type, "SIMPLE" if index == "STATE" else index)
    state = index == "STATE"
    model: Model = []
    _insert(path, rows(range(10), 1), opts, model)
    _insert(path, rows(range(4), 2, value=lambda i, ts: -float(i)), opts, model)
    assert _groups_holding(path, "k000") == 2
    _check(path, model)

    up = pa.concat_tables(
        [
            rows([0], 5),  # newer than both copies
            rows([1], 1),  # ties the first copy (the later write wins), older than the second
            rows([2], 0),  # older than both copies: must lose to each
            rows([20, 21], 3),  # new keys
            rows([22], 3, part_of=lambda i: "p9"),  # a new partition
        ]
    )
    table = hudi_ds.HudiTable(path, state_index=state)
    table.upsert(up, opts)
    model = _upsert(model, up, global_=False)
    _check(path, model)

    table.delete(rows([0, 3], 9), opts)
    model = [m for m in model if m[0] not in ("k000", "k003")]
    _check(path, model)


@pytest.mark.parametrize("table_type", TYPES)
@pytest.mark.parametrize("move", [False, True])
def test_global_index_reaches_every_partition_holding_a_key(
    tmp_path: Path, table_type: str, move: bool
) -> None:
    """GLOBAL_SIMPLE: ``k000``/``k001`` inserted in ``p0`` and again in ``p1``. Without
    ``update.partition.path`` an update of each lands in both partitions (each copy keeps its
    partition, Java ``createNewTaggedHoodieRecord``); with it, an update naming a third
    partition deletes both copies and inserts the merged record once there (Java's
    ``mergeForPartitionUpdatesIfNeeded`` would insert it once per copy)."""
    path = str(tmp_path / "t")
    opts = _opts(
        table_type,
        "GLOBAL_SIMPLE",
        **{"hoodie.simple.index.update.partition.path": str(move).lower()},
    )
    model: Model = []
    _insert(path, rows(range(6), 1, part_of=lambda i: "p0"), opts, model)
    _insert(path, rows([0, 1], 2, part_of=lambda i: "p1"), opts, model)
    _check(path, model)

    up = pa.concat_tables(
        [rows([0], 5, part_of=lambda i: "p2" if move else "p0"), rows([1], 1), rows([7], 3)]
    )
    hudi_ds.write(path, up, opts)
    model = _upsert(model, up, global_=True, move=move)
    _check(path, model)

    hudi_ds.write(path, rows([0, 1], 9), {**opts, "hoodie.datasource.write.operation": "delete"})
    model = [m for m in model if m[0] not in ("k000", "k001")]
    _check(path, model)


# -- file groups whose keys live in log files ---------------------------------------------------


def _as_flink_written(path: Path, inserts_of: str | None) -> None:
    """Give a MERGE_ON_READ table hudi_ds wrote with the bucket index the shape Flink's writer
    leaves: file ids that are UUIDs (``FSUtils.createNewFileIdPfx``), no index recorded in
    ``hoodie.properties``, and the records of delta commit ``inserts_of`` counted as inserts
    in its log write stats, as Flink's append handle counts records its ``BucketAssigner``
    tagged as inserts (hudi_ds counts appends to an existing bucket as updates)."""
    props = path / ".hoodie" / "hoodie.properties"
    props.write_text(
        "".join(
            line
            for line in props.read_text().splitlines(keepends=True)
            if not line.startswith(("hoodie.index.type", "hoodie.bucket.index."))
        )
    )
    if inserts_of is not None:
        f = path / ".hoodie" / f"{inserts_of}.deltacommit"
        md = json.loads(f.read_text())
        for stats in md["partitionToWriteStats"].values():
            for st in stats:
                st["numInserts"], st["numUpdateWrites"] = st["numWrites"], 0
        f.write_text(json.dumps(md, indent=2))
    state = TableState.open(str(path))
    view = FileSystemView(Storage(str(path)), state.config)
    renames = {
        s.file_id: str(uuid.uuid4())
        for p in view.partitions()
        for s in view.latest_file_slices(p, state.visibility())
    }
    for f in path.rglob("*"):
        if f.is_file() and f.parent.name != ".hoodie":
            for old, new in renames.items():
                if old in f.name:
                    f.rename(f.with_name(f.name.replace(old, new)))
    for f in (path / ".hoodie").iterdir():
        if f.is_file() and f.name != "hoodie.properties":
            text = f.read_bytes()
            for old, new in renames.items():
                text = text.replace(old.encode(), new.encode())
            f.write_bytes(text)


def _flink_table(path: Path, layout: str) -> Model:
    """A MERGE_ON_READ table whose keys ``k000..k007`` (``log-only``: all of them;
    ``logged-inserts``: ``k008..k011``, inserted after a compaction made base files) live in
    log files alone, written as Flink writes them; returns its model."""
    # one bucket per partition: the later inserts go to the compacted file groups' logs
    opts = builders.options("t", "MERGE_ON_READ", partition="p", buckets=1)
    first = rows(range(8), 2)
    if layout == "log-only":
        hudi_ds.write(str(path), first, opts)
        _as_flink_written(path, None)
        return _model_rows(first)
    compact = {"hoodie.compact.inline": "true", "hoodie.compact.inline.max.delta.commits": "1"}
    hudi_ds.write(str(path), first, {**opts, **compact})
    more = rows(range(8, 12), 2)
    instant = hudi_ds.write(str(path), more, {**opts, "hoodie.compact.inline": "false"})
    assert instant is not None
    _as_flink_written(path, instant)
    return _model_rows(first) + _model_rows(more)


@pytest.mark.parametrize("layout", ["log-only", "logged-inserts"])
@pytest.mark.parametrize("index", ["SIMPLE", "BLOOM", "STATE"])
def test_keys_only_in_log_files_are_never_written_twice(
    tmp_path: Path, index: str, layout: str
) -> None:
    """Every file group holds keys only in its logs: a base-less slice, or (after a
    compaction) logs whose write stats count inserts. ``STATE``: SIMPLE through a long-lived
    writer's state index."""
    path = tmp_path / "t"
    model = _flink_table(path, layout)
    state = TableState.open(str(path))
    view = FileSystemView(Storage(str(path)), state.config)
    slices = [s for p in view.partitions() for s in view.latest_file_slices(p, state.visibility())]
    assert slices and all(s.log_files for s in slices)
    assert all((s.base_file is None) == (layout == "log-only") for s in slices)
    _check(str(path), model)

    opts = builders.options(
        "t", "MERGE_ON_READ", partition="p", index="SIMPLE" if index == "STATE" else index
    )
    up = pa.concat_tables(
        [
            rows([0, 1, 8, 9], 5),  # newer
            rows([3, 10], 1),  # older: the logged version stays
            rows([20], 3),  # new
            rows([21], 3, part_of=lambda i: "p9"),  # new partition
        ]
    )
    table = hudi_ds.HudiTable(str(path), state_index=index == "STATE")
    table.upsert(up, opts)
    model = _upsert(model, up, global_=False)
    _check(str(path), model)
    table.delete(rows([4, 5, 11], 9), opts)
    model = [m for m in model if m[0] not in ("k004", "k005", "k011")]
    _check(str(path), model)
