"""``split_direct``: which file slices an engine reads with its own Parquet reader, and
``plan_read(pinned=...)``: a second planning of one read sees the first one's instants."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

import hudi_ds
from hudi_ds.errors import InstantNotFoundError
from hudi_ds.table.direct import split_direct
from hudi_ds.table.table import ReadableTable
from tests.builders import options, trips


def _evolved(path: str) -> dict[str, str]:
    """Partition ``nyc`` written with ``w`` int32, ``la`` with ``w`` int64 and no ``fare``,
    ``sf`` with the latest schema (``fare`` added)."""
    opts = options("t", "COPY_ON_WRITE", partition="city", buckets=1)
    w32 = pa.array([7], pa.int32())
    hudi_ds.write(path, trips([0], 1, city="nyc", fare=None).append_column("w", w32), opts)
    w64 = pa.array([9], pa.int64())
    hudi_ds.write(path, trips([4], 2, city="la", fare=None).append_column("w", w64), opts)
    hudi_ds.write(path, trips([1], 3, city="sf").append_column("w", w64), opts)
    return opts


def test_split_by_schema_logs_and_engine(tmp_path: Path) -> None:
    path = str(tmp_path / "cow")
    _evolved(path)
    t = ReadableTable(path)
    split = split_direct(t, t.plan_read())
    assert sorted(Path(f).parent.name for f in split.files) == ["la", "sf"]
    assert [s.partition_path for s in split.merged] == ["nyc"]
    assert split.kept_reasons == {"base file with column 'w' of an older type (int32)": 1}
    assert split.deleted_flag is None and split.commit_times is None
    # a file the engine cannot open stays with hudi_ds
    none = split_direct(t, t.plan_read(), lambda uri: "/sf/" not in uri)
    assert sorted(Path(f).parent.name for f in none.files) == ["la"]
    # an incremental read: the engine keeps the rows of its commits only
    first = t.timeline.commits()[0].requested_time
    incr = {"hoodie.datasource.query.type": "incremental"}
    plan = t.plan_read({**incr, "hoodie.datasource.read.begin.instanttime": first})
    assert split_direct(t, plan).commit_times == plan.commit_times != frozenset()

    mor = str(tmp_path / "mor")
    opts = options("t", "MERGE_ON_READ", partition="city", buckets=1)
    hudi_ds.write(mor, trips(range(4), 1, deleted=False), opts)
    m = ReadableTable(mor)
    split = split_direct(m, m.plan_read())
    assert not split.files and split.kept_reasons == {"log files": 2}
    assert split.deleted_flag == "_hoodie_is_deleted"
    # a COW table's base files hold no deleted row: their footers say so
    cow = str(tmp_path / "cow_flag")
    opts = options("t", "COPY_ON_WRITE", partition="city", buckets=1)
    hudi_ds.write(cow, trips(range(4), 1, deleted=False), opts)
    hudi_ds.write(cow, trips([1], 2, deleted=True), opts)
    c = ReadableTable(cow)
    split = split_direct(c, c.plan_read())
    assert split.deleted_flag == "_hoodie_is_deleted"
    assert len(split.files) == 2 and split.unflagged == frozenset(split.files)


def test_pinned_plan_ignores_later_commits(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    opts = _evolved(path)
    first = ReadableTable(path).plan_read()
    hudi_ds.write(
        path, trips([0], 5, city="nyc").append_column("w", pa.array([1], pa.int64())), opts
    )
    t = ReadableTable(path)
    again = t.plan_read(pinned=first.visibility.instants)
    assert again.visibility.instants == first.visibility.instants
    before = {(s.partition_path, s.file_id, s.base_instant_time) for s in first.slices}
    assert {(s.partition_path, s.file_id, s.base_instant_time) for s in again.slices} == before
    assert t.plan_read().visibility.instants != first.visibility.instants
    with pytest.raises(InstantNotFoundError, match="19990101000000000"):
        t.plan_read(pinned=frozenset({"19990101000000000"}))
