"""Delete semantics on every index, as Apache Hudi's.

* ``operation=delete`` deletes its keys whatever ordering value the rows carry: Java's
  ``HoodieDeleteHelper`` writes ``EmptyHoodieRecordPayload`` records (ordering value the
  default 0, "natural order"), which win over any stored version -- in the COW merge, in MOR
  snapshot reads and in compaction. Keys the table does not hold are dropped (nothing written
  for them, no new file group or partition).
* ``_hoodie_is_deleted`` rows in an upsert are records with their real ordering value: under
  EVENT_TIME_ORDERING an older one loses to the stored version, under COMMIT_TIME_ORDERING it
  wins.

Every case is checked row for row (all columns) against an independent model, read back by
hudi_ds and by hudi-rs, and for MERGE_ON_READ again after a compaction.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

import hudi_ds
from hudi_ds.services import ServiceContext, compaction, run_post_commit_services
from hudi_ds.write.client import WriteClient
from tests.builders import options
from tests.conftest import assert_rows, hudi_rs_table

INDEXES = ["BUCKET", "SIMPLE", "GLOBAL_SIMPLE", "BLOOM", "GLOBAL_BLOOM"]
TABLE_TYPES = ["COPY_ON_WRITE", "MERGE_ON_READ"]
COLUMNS = ["id", "ts", "p", "v"]


def _options(index: str, table_type: str, mode: str) -> dict[str, str]:
    return options(
        "dels",
        table_type,
        partition="p",
        index=index,
        buckets=2 if index == "BUCKET" else None,
        **{
            "hoodie.record.merge.mode": mode,
            "hoodie.compact.inline": "false",
            "hoodie.datasource.compaction.async.enable": "false",
            "hoodie.clean.automatic": "false",
        },
    )


def _rows(ids: list[int], ts: int, tag: str) -> pa.Table:
    return pa.table(
        {
            "id": [f"k{i}" for i in ids],
            "ts": pa.array([ts] * len(ids), pa.int64()),
            "p": [f"p{i % 3}" for i in ids],
            "v": [f"{tag}-{i}" for i in ids],
        }
    )


def _check(path: str, model: dict[str, tuple]) -> None:
    expected = list(model.values())
    assert_rows(hudi_ds.read(path), expected, COLUMNS)
    assert_rows(hudi_rs_table(path), expected, COLUMNS)


def _compact(path: str, options: dict[str, str]) -> None:
    ctx = ServiceContext.open(path, options)
    c = compaction.schedule_compaction(ctx)
    assert c is not None
    compaction.run_compaction(ctx, c)


def _apply(model: dict[str, tuple], rows: pa.Table) -> dict[str, tuple]:
    out = dict(model)
    for r in rows.to_pylist():
        out[r["id"]] = (r["id"], r["ts"], r["p"], r["v"])
    return out


@pytest.mark.parametrize("mode", ["EVENT_TIME_ORDERING", "COMMIT_TIME_ORDERING"])
@pytest.mark.parametrize("table_type", TABLE_TYPES)
@pytest.mark.parametrize("index", INDEXES)
def test_delete_operation_ignores_ordering_and_is_deleted_follows_merge_mode(
    index: str, table_type: str, mode: str, tmp_path: Path
) -> None:
    path = str(tmp_path / "t")
    o = _options(index, table_type, mode)
    first = _rows(list(range(12)), 10, "a")
    hudi_ds.write(path, first, o)
    model = _apply({}, first)
    # newer versions of k0..k3 (MOR: in log files over the base files)
    newer = _rows([0, 1, 2, 3], 30, "b")
    hudi_ds.write(path, newer, o)
    model = _apply(model, newer)
    _check(path, model)

    # operation=delete: older (k0, k1 at ts 30 -> 5; k4 at ts 10 -> 1), newer (k5) and equal
    # (k6) ordering values all delete; k90/k91 are not in the table (dropped, nothing written);
    # k11 lives in p2 and is named in p0: a global index deletes it where it lives, the
    # others look for the key (k11, p0), which the table does not hold
    dels = pa.table(
        {
            "id": ["k0", "k1", "k4", "k5", "k6", "k90", "k91", "k11"],
            "ts": pa.array([5, 5, 1, 99, 10, 1, 1, 1], pa.int64()),
            "p": ["p0", "p1", "p1", "p2", "p0", "p0", "p2", "p0"],
            "v": ["x"] * 8,
        }
    )
    hudi_ds.write(path, dels, {**o, "hoodie.datasource.write.operation": "delete"})
    for k in ["k0", "k1", "k4", "k5", "k6"] + (["k11"] if index.startswith("GLOBAL") else []):
        del model[k]
    _check(path, model)
    partitions = sorted(
        p.name for p in Path(path).iterdir() if p.is_dir() and not p.name.startswith(".")
    )
    assert partitions == ["p0", "p1", "p2"]  # no partition or file group for unknown keys

    # _hoodie_is_deleted in an upsert: k2 (stored ts 30) and k7 (ts 10) older -> ts 3,
    # k8 newer -> ts 50; k9 an ordinary update at an older ts, k20 a new key
    upsert = pa.table(
        {
            "id": ["k2", "k7", "k8", "k9", "k20"],
            "ts": pa.array([3, 3, 50, 3, 7], pa.int64()),
            "p": ["p2", "p1", "p2", "p0", "p2"],
            "v": ["d2", "d7", "d8", "u9", "n20"],
            "_hoodie_is_deleted": [True, True, True, False, False],
        }
    )
    hudi_ds.write(path, upsert, o)
    del model["k8"]  # newer: deleted under both modes
    if mode == "COMMIT_TIME_ORDERING":
        del model["k2"], model["k7"]  # the latest write wins, deletes included
        model["k9"] = ("k9", 3, "p0", "u9")
    model["k20"] = ("k20", 7, "p2", "n20")
    _check(path, model)

    # delete again with an old ordering value a key updated in the same file group since
    hudi_ds.write(path, _rows([3], 0, "z"), {**o, "hoodie.datasource.write.operation": "delete"})
    del model["k3"]
    _check(path, model)
    if table_type == "MERGE_ON_READ":
        _compact(path, o)
        _check(path, model)
        # and after the compaction, the same rules on the new base files
        hudi_ds.write(
            path, _rows([10], 1, "z"), {**o, "hoodie.datasource.write.operation": "delete"}
        )
        del model["k10"]
        _check(path, model)
        _compact(path, o)
        _check(path, model)


@pytest.mark.parametrize("table_type", TABLE_TYPES)
@pytest.mark.parametrize("index", INDEXES)
def test_delete_of_only_unknown_keys_writes_nothing(
    index: str, table_type: str, tmp_path: Path
) -> None:
    path = str(tmp_path / "t")
    o = _options(index, table_type, "EVENT_TIME_ORDERING")
    hudi_ds.write(path, _rows([0, 1], 10, "a"), o)
    before = sorted(
        str(f.relative_to(path)) for f in Path(path).rglob("*") if ".hoodie" not in f.parts
    )
    unknown = _rows([50, 51, 52], 10, "x")
    if index == "BUCKET":
        # the bucket index tags a key with its bucket's file group whether the key is there or
        # not (Java too): unknown keys are those whose bucket has no file group
        unknown = unknown.set_column(2, "p", pa.array(["p9"] * 3))
    hudi_ds.write(path, unknown, {**o, "hoodie.datasource.write.operation": "delete"})
    after = sorted(
        str(f.relative_to(path)) for f in Path(path).rglob("*") if ".hoodie" not in f.parts
    )
    assert after == before  # Java drops untagged deletes: an empty commit
    _check(path, _apply({}, _rows([0, 1], 10, "a")))


@pytest.mark.parametrize("table_type", TABLE_TYPES)
@pytest.mark.parametrize("index", INDEXES)
def test_delete_operation_through_several_tasks(
    index: str, table_type: str, tmp_path: Path
) -> None:
    """The Spark shape: several non-exclusive tasks of one instant (COW file groups staged and
    merged once at commit), each deleting some keys with old ordering values."""
    path = str(tmp_path / "t")
    o = _options(index, table_type, "EVENT_TIME_ORDERING")
    first = _rows(list(range(10)), 10, "a")
    hudi_ds.write(path, first, o)
    model = _apply({}, first)
    client = WriteClient(
        path,
        {**o, "hoodie.datasource.write.operation": "delete"},
        post_commit=run_post_commit_services,
    )
    parts = [_rows([0, 3, 6], 1, "x"), _rows([1, 4, 77], 2, "x")]
    instant = client.start(parts[0].schema)
    statuses = []
    for n, rows in enumerate(parts):
        task = client.task_writer(instant, n, 1, 0, exclusive=False)
        task.write(rows)
        statuses += task.close()
    client.commit(instant, statuses)
    for k in ["k0", "k3", "k6", "k1", "k4"]:
        del model[k]
    _check(path, model)
    if table_type == "MERGE_ON_READ":
        _compact(path, o)
        _check(path, model)


@pytest.mark.parametrize("otype", ["int32", "int64"])
@pytest.mark.parametrize("table_type", TABLE_TYPES)
def test_default_ordering_value_deletes(table_type: str, otype: str, tmp_path: Path) -> None:
    """Deletes whose ordering value is Hudi's default (``OrderingValues.isDefault``: null, or 0
    of an int field, not of a long one), written in an upsert as ``_hoodie_is_deleted`` rows.

    * k1 (stored ts 5), deleted at ts 0: an int 0 is a commit-time-ordering delete and always
      applies; a long 0 is an ordering value below 5 and loses -- alike in the COW merge, in
      MOR reads and after compaction.
    * k2 (stored ts null), deleted at ts null and at ts 0 in one batch, then upserted at ts
      null: the batch is pre-combined to its natural delete (a later delete leaves its
      tombstone as it is: Hudi 1.1 ``deltaMergeDeleteRecord``), which the later row replaces,
      as the three versions folded one by one do (a batch that reported its ts-0 delete would
      keep the key deleted in the MOR log).
    """
    path = str(tmp_path / "t")
    o = _options("BUCKET", table_type, "EVENT_TIME_ORDERING")
    t = pa.int32() if otype == "int32" else pa.int64()

    def rows(ids: list[str], ts: list[int | None], v: str, deleted: bool = False) -> pa.Table:
        return pa.table(
            {
                "id": ids,
                "ts": pa.array(ts, t),
                "p": ["p0"] * len(ids),
                "v": [v] * len(ids),
                "_hoodie_is_deleted": [deleted] * len(ids),
            }
        )

    hudi_ds.write(path, rows(["k1", "k2", "k3"], [5, None, 5], "a"), o)
    hudi_ds.write(path, rows(["k1", "k2", "k2"], [0, None, 0], "d", deleted=True), o)
    hudi_ds.write(path, rows(["k2"], [None], "b"), o)
    model = {"k2": ("k2", None, "p0", "b"), "k3": ("k3", 5, "p0", "a")}
    if otype == "int64":
        model["k1"] = ("k1", 5, "p0", "a")
    _check(path, model)
    if table_type == "MERGE_ON_READ":
        _compact(path, o)
        _check(path, model)
