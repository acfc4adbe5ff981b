"""Storage requests of a write: the partition listing the driver's checks made serves its task
when both see the same timeline, and never after the timeline was listed again."""

from __future__ import annotations

from collections import Counter
from functools import partial
from pathlib import Path
from typing import Any

import pytest

import hudi_ds
from hudi_ds.storage import Storage
from tests.builders import options, rows
from tests.conftest import OCC_OPTIONS, assert_rows, hudi_rs_table

COLUMNS = ["id", "part", "ts", "v"]


class ListingStorage(Storage):
    """A local Storage that records the folders it lists."""

    def __init__(self, base_uri: str) -> None:
        super().__init__(base_uri)
        self.listed: Counter[str] = Counter()

    def _list(self, rel: str, recursive: bool) -> Any:
        self.listed[rel] += 1
        return super()._list(rel, recursive)


_rows = partial(rows, part="part")


def _opts(table_type: str, extra: dict[str, str] | None = None) -> dict[str, str]:
    return options("t", table_type, partition="part", index="BUCKET", **(extra or {}))


def _upsert_listings(tmp_path: Path, table_type: str, extra: dict[str, str] | None) -> Counter:
    path = str(tmp_path / "t")
    opts = _opts(table_type, extra)
    hudi_ds.write(path, _rows(range(8), 1), {**opts, "hoodie.datasource.write.operation": "insert"})
    storage = ListingStorage(path)
    hudi_ds.write(storage, _rows(range(4, 12), 2), opts)
    # the rows are right: keys 0-3 from the insert, 4-11 from the upsert, none twice
    want = [
        (f"k{i:03d}", f"p{i % 2}", 1 if i < 4 else 2, float(i * 10 + (1 if i < 4 else 2)))
        for i in range(12)
    ]
    assert_rows(hudi_ds.read(path), want, COLUMNS)
    assert_rows(hudi_rs_table(path), want, COLUMNS)
    return storage.listed


def test_a_single_writer_lists_each_partition_once_per_upsert(tmp_path: Path) -> None:
    for table_type in ("MERGE_ON_READ", "COPY_ON_WRITE"):
        listed = _upsert_listings(tmp_path / table_type, table_type, None)
        assert listed["p0"] == 1 and listed["p1"] == 1, listed


def test_a_writer_that_lists_the_timeline_again_lists_the_partitions_again(
    tmp_path: Path,
) -> None:
    """Under optimistic concurrency control the timeline is listed again under the lock
    before the plan is made: a listing made before that reload could miss a file group
    another writer committed in between, so the task lists afresh."""
    extra = {**OCC_OPTIONS, "hoodie.write.lock.wait_time_ms": "20"}
    listed = _upsert_listings(tmp_path, "MERGE_ON_READ", extra)
    assert listed["p0"] == 2 and listed["p1"] == 2, listed


def test_an_upsert_groups_only_the_file_groups_of_its_buckets(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the simple bucket index, a write parses and groups the files of the buckets it
    writes, not every file group of the partitions it touches (a partition of a large table
    holds hundreds): its listing is made once, its bucket ids read from the names."""
    from hudi_ds.table.fs_view import FileSystemView
    from hudi_ds.write import bucket_layout

    monkeypatch.setattr(bucket_layout, "MAX_CHECKED_PARTITIONS", 1)  # the sample: p0 only
    path = str(tmp_path / "t")
    opts = options("t", "MERGE_ON_READ", partition="part", index="BUCKET", buckets=16)
    ten = partial(rows, part="part", part_of=lambda i: f"p{i % 10}")
    hudi_ds.write(path, ten(range(400), 1), opts)  # 16 file groups in each of 10 partitions
    grouped: Counter[str] = Counter()
    group = FileSystemView._group

    def spy(partition: str, files: list) -> Any:
        grouped[partition] += len(files)
        return group(partition, files)

    monkeypatch.setattr(FileSystemView, "_group", staticmethod(spy))
    storage = ListingStorage(path)
    hudi_ds.write(storage, ten([9], 2), opts)  # one key of partition p9
    assert storage.listed["p9"] == 1
    assert 1 <= grouped["p9"] <= 2, grouped  # its bucket's base or log file(s), not 16 groups
    want = [
        (f"k{i:03d}", f"p{i % 10}", 2 if i == 9 else 1, float(i * 10 + (2 if i == 9 else 1)))
        for i in range(400)
    ]
    assert_rows(hudi_ds.read(path), want, COLUMNS)
    assert_rows(hudi_rs_table(path), want, COLUMNS)
