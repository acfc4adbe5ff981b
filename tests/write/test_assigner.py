"""The bucket assigner of the non-bucket indexes: record size, small files, insert packing."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import hudi_ds
from hudi_ds.layout.file_group import BaseFile, FileSlice, LogFile
from hudi_ds.layout.naming import (
    base_file_name,
    log_file_name,
    parse_base_file_name,
    parse_log_file_name,
)
from hudi_ds.table_config import TableType
from hudi_ds.timeline.view import TableState
from hudi_ds.write.assigner import (
    INSERT_SLOTS,
    InsertAssigner,
    SmallFile,
    average_record_size,
    insert_slots,
    pack_slots,
    place,
    records_per_new_file,
    slot_file_id,
    slot_of,
    small_files,
)
from tests.conftest import table_options

MB = 1024 * 1024


def _slice(file_id: str, size: int | None, logs: int = 0, partition: str = "p") -> FileSlice:
    instant = "20240101000000000"
    base = None
    if size is not None:
        name = base_file_name(file_id, "0-1-2", instant)
        parsed = parse_base_file_name(name)
        assert parsed is not None
        base = BaseFile(f"{partition}/{name}", parsed, size)
    log_files = []
    for v in range(1, logs + 1):
        name = log_file_name(file_id, instant, v, "0-1-2")
        parsed_log = parse_log_file_name(name)
        assert parsed_log is not None
        log_files.append(LogFile(f"{partition}/{name}", parsed_log, 100))
    return FileSlice(partition, file_id, instant, base, log_files)


def test_records_per_new_file() -> None:
    # Java's default: 120 MiB / 1024 bytes = 122880 records per new file group
    assert records_per_new_file(125829120, 1024, True, 500000) == 122880
    assert records_per_new_file(125829120, 1024, False, 500000) == 500000
    assert records_per_new_file(1000, 300, True, 7) == 3
    assert records_per_new_file(100, 300, True, 7) == 1  # never zero


def test_small_files_cow_takes_every_small_base_file() -> None:
    slices = [
        _slice("c-0", 50 * MB),
        _slice("a-0", 200 * MB),  # not small
        _slice("b-0", 10 * MB),
        _slice("d-0", None, logs=1),  # log-only slice: no base file, not a small file
    ]
    got = small_files(slices, TableType.COPY_ON_WRITE, 100 * MB, 1)
    assert got == [
        SmallFile("p", "b-0", "20240101000000000", 10 * MB),
        SmallFile("p", "c-0", "20240101000000000", 50 * MB),
    ]
    assert small_files(slices, TableType.COPY_ON_WRITE, 0, 1) == []  # limit <= 0 disables it
    excluded = small_files(slices, TableType.COPY_ON_WRITE, 100 * MB, 1, lambda p, f: f == "b-0")
    assert [f.file_id for f in excluded] == ["c-0"]


def test_small_files_mor_only_slices_without_logs_smallest_first() -> None:
    slices = [
        _slice("a-0", 50 * MB),
        _slice("b-0", 10 * MB, logs=2),  # has log files: not a candidate
        _slice("c-0", 30 * MB),
        _slice("d-0", 40 * MB),
    ]
    got = small_files(slices, TableType.MERGE_ON_READ, 100 * MB, 1)
    assert [(f.file_id, f.size) for f in got] == [("c-0", 30 * MB)]
    got = small_files(slices, TableType.MERGE_ON_READ, 100 * MB, 2)
    assert [f.file_id for f in got] == ["c-0", "d-0"]


def test_insert_assigner_fills_small_files_then_new_groups_across_calls() -> None:
    ids = iter(f"new{i}-0" for i in range(100))
    a = InsertAssigner(100, 1000, 10, make_file_id=lambda: next(ids))
    a.open_partition(
        "p",
        [
            SmallFile("p", "s1-0", "1", 700),  # (1000 - 700) / 100 = 3 records
            SmallFile("p", "s2-0", "1", 950),  # 50 // 100 = 0: takes nothing
            SmallFile("p", "s3-0", "1", 500),  # 5 records
        ],
    )
    got = [(b.file_id, n) for b, n in a.assign("p", 2)]
    assert got == [("s1-0", 2)]
    got = [(b.file_id, n) for b, n in a.assign("p", 4)]
    assert got == [("s1-0", 1), ("s3-0", 3)]
    # s3 has 2 left, then new groups of 10 records each
    got = [(b.file_id, n) for b, n in a.assign("p", 25)]
    assert got == [("s3-0", 2), ("new0-0", 10), ("new1-0", 10), ("new2-0", 3)]
    # the open new group is filled before another opens
    got = [(b.file_id, n) for b, n in a.assign("p", 9)]
    assert got == [("new2-0", 7), ("new3-0", 2)]
    assert [b.small_file for b in a.buckets("p")] == [True, True, False, False, False, False]
    # another partition packs on its own; retire stops a bucket taking more
    a.open_partition("q", [SmallFile("q", "t-0", "1", 0)])
    a.retire("q", "t-0")
    assert [(b.file_id, n) for b, n in a.assign("q", 1)] == [("new4-0", 1)]


def test_place_gives_each_bucket_its_count_in_order() -> None:
    assert place([2, 0, 3]).tolist() == [0, 0, 2, 2, 2]
    assert place([]).tolist() == []
    counts = [5, 1, 7]
    got = place(counts)
    assert np.bincount(got, minlength=3).tolist() == counts


def _commit_stats(path: Path, instant: str) -> tuple[int, int]:
    md = json.loads((path / ".hoodie" / f"{instant}.commit").read_text())
    stats = [s for v in md["partitionToWriteStats"].values() for s in v]
    return sum(s["totalWriteBytes"] for s in stats), sum(s["numWrites"] for s in stats)


def test_average_record_size_from_the_newest_large_enough_commit(tmp_path: Path) -> None:
    path = tmp_path / "t"
    opts = {
        **table_options("t", partition="city", buckets=None, table_type="COPY_ON_WRITE"),
        "hoodie.index.type": "SIMPLE",
    }

    def rows(n: int, city: str) -> pa.Table:
        return pa.table(
            {
                "id": [f"{city}{i}" for i in range(n)],
                "ts": pa.array([1] * n, pa.int64()),
                "city": [city] * n,
                "note": ["x" * 200] * n,
            }
        )

    first = hudi_ds.write(str(path), rows(400, "a"), opts)
    second = hudi_ds.write(str(path), rows(1, "b"), opts)  # a new partition: one small file
    timeline = TableState.open(str(path)).timeline
    b1, r1 = _commit_stats(path, first)
    b2, r2 = _commit_stats(path, second)
    assert (r1, r2) == (400, 1) and b1 > b2
    # no commit wrote more than threshold * limit bytes: the estimate
    assert average_record_size(timeline, 777, 1.0, 100 * MB) == 777
    # the newest commit above the threshold decides ...
    assert average_record_size(timeline, 777, 1.0, b2 - 1) == math.ceil(b2 / r2)
    # ... walking past newer commits that wrote too little (strictly more is needed)
    assert average_record_size(timeline, 777, 1.0, b2) == math.ceil(b1 / r1)
    assert average_record_size(timeline, 777, 0.5, 2 * b2) == math.ceil(b1 / r1)
    assert average_record_size(timeline, 777, 0.5, 2 * b1) == 777


def test_average_record_size_ignores_deltacommits(tmp_path: Path) -> None:
    path = tmp_path / "t"
    opts = {
        **table_options("t", buckets=None, table_type="MERGE_ON_READ"),
        "hoodie.index.type": "SIMPLE",
    }
    rows = pa.table({"id": [f"k{i}" for i in range(20)], "ts": pa.array([1] * 20, pa.int64())})
    hudi_ds.write(str(path), rows, opts)
    timeline = TableState.open(str(path)).timeline
    # Java's commit timeline holds no deltacommit: the estimate, whatever the threshold
    assert average_record_size(timeline, 555, 1.0, 1) == 555


@pytest.mark.parametrize("auto_split", [True, False])
def test_new_groups_follow_insert_split_size(auto_split: bool) -> None:
    per = records_per_new_file(10_000, 100, auto_split, 30)
    a = InsertAssigner(100, 10_000, per)
    counts = [n for _, n in a.assign("p", 250)]
    assert counts == ([100, 100, 50] if auto_split else [30] * 8 + [10])
    ids = [b.file_id for b in a.buckets("p")]
    assert len(set(ids)) == len(ids) and all(i.endswith("-0") and len(i) == 38 for i in ids)


def test_insert_slots_are_java_string_hash_mod_slots() -> None:
    keys = ["k000", "a", "id:1,name:x", "ünïcode", "x" * 40]
    want = []
    for k in keys:
        h = 0
        for unit in np.frombuffer(k.encode("utf-16-be"), ">u2").tolist():
            h = (31 * h + unit) & 0xFFFFFFFF
        h = h - (1 << 32) if h >= 1 << 31 else h  # Java int
        want.append((h & 0x7FFFFFFF) % INSERT_SLOTS)
    assert insert_slots(pa.array(keys)).tolist() == want
    assert insert_slots(pa.array(keys), 7).max() < 7


def test_slot_file_ids_are_deterministic_and_distinct() -> None:
    a = slot_file_id("20250101000000000", "p=1", 3)
    assert a == slot_file_id("20250101000000000", "p=1", 3)
    assert a.endswith("-0") and len(a) == 38 and not a[:8].isdigit()
    others = {
        slot_file_id("20250101000000001", "p=1", 3),
        slot_file_id("20250101000000000", "p=2", 3),
        slot_file_id("20250101000000000", "p=1", 4),
    }
    assert a not in others and len(others) == 3
    table = slot_of("20250101000000000", "p=1")
    assert len(table) == INSERT_SLOTS and table[a] == 3


def test_pack_slots_groups_consecutive_slots_by_records() -> None:
    # 32 slots of 10 records, 100 records per new file: ceil(320 / 100) = 4 groups of 8 slots
    g = pack_slots([10] * 32, 100)
    assert g.tolist() == [s // 8 for s in range(32)]
    # fewer records than a file: one group; no records: one group
    assert set(pack_slots([1] * 32, 100).tolist()) == {0}
    assert set(pack_slots([0] * 32, 100).tolist()) == {0}
    # more files needed than slots: one group per slot (files above the maximum size)
    assert pack_slots([100] * 4, 10).tolist() == [0, 1, 2, 3]
    # uneven slots: groups are consecutive, non-decreasing, and each group's records stay
    # within one file plus one slot
    rng = np.random.default_rng(7)
    counts = rng.integers(0, 50, 32)
    g = pack_slots(counts.tolist(), 120)
    assert (np.diff(g) >= 0).all() and g[0] == 0
    groups = int(g.max()) + 1
    assert groups == math.ceil(counts.sum() / 120)
    per = np.bincount(g, weights=counts, minlength=groups)
    assert per.max() <= counts.sum() / groups + counts.max()
