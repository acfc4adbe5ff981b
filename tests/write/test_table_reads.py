"""One embedded write opens the table once: ``hoodie.properties`` is read once and the active
timeline listed at most twice -- when the write starts (its plan) and at commit (the conflict
check) -- post-commit table services included.

Counted at the storage level: every read of ``.hoodie/hoodie.properties`` and every listing that
enumerates the timeline folder ``.hoodie`` (directly, or recursively from a folder above it),
whoever makes it. Probing exact instant file names (the timeline writer's transitions) is not a
listing.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pyarrow as pa
import pytest

import hudi_ds
from hudi_ds.storage import Storage
from hudi_ds.storage_types import FileInfo
from tests.conftest import table_options

PROPS = ".hoodie/hoodie.properties"
TIMELINE = ".hoodie"

OPTS = table_options("t", partition="p", buckets=None)
NO_SERVICES = {"hoodie.clean.automatic": "false", "hoodie.archive.automatic": "false"}


def rows(ids: list[str], ts: int) -> pa.Table:
    return pa.table(
        {
            "id": ids,
            "ts": [ts] * len(ids),
            "p": ["x" if ord(i) % 2 else "y" for i in ids],  # a key keeps its partition
            "v": list(range(len(ids))),
        }
    )


def lists_timeline(rel: str, recursive: bool) -> bool:
    """Whether a listing of ``rel`` enumerates the files of the timeline folder."""
    folder = rel.strip("/")
    if folder == TIMELINE:
        return True
    return recursive and (folder == "" or TIMELINE.startswith(folder + "/"))


def count_table_reads(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """Count, on every Storage from now on, reads of hoodie.properties and timeline listings."""
    counts: Counter[str] = Counter()
    read_bytes, open_input_file = Storage.read_bytes, Storage.open_input_file
    list_files, list_dirs = Storage.list_files, Storage.list_dirs

    def counted_read_bytes(self: Storage, rel: str) -> bytes:
        counts["properties"] += rel.strip("/") == PROPS
        return read_bytes(self, rel)

    def counted_open_input_file(self: Storage, rel: str, size: int | None = None) -> Any:
        counts["properties"] += rel.strip("/") == PROPS
        return open_input_file(self, rel, size)

    def counted_list_files(self: Storage, rel: str = "", recursive: bool = False) -> list[FileInfo]:
        counts["timeline listings"] += lists_timeline(rel, recursive)
        return list_files(self, rel, recursive)

    def counted_list_dirs(self: Storage, rel: str = "", recursive: bool = False) -> list[str]:
        counts["timeline listings"] += lists_timeline(rel, recursive)
        return list_dirs(self, rel, recursive)

    monkeypatch.setattr(Storage, "read_bytes", counted_read_bytes)
    monkeypatch.setattr(Storage, "open_input_file", counted_open_input_file)
    monkeypatch.setattr(Storage, "list_files", counted_list_files)
    monkeypatch.setattr(Storage, "list_dirs", counted_list_dirs)
    return counts


@pytest.mark.parametrize("services", [True, False], ids=["services", "no-services"])
@pytest.mark.parametrize("operation", ["upsert", "insert", "delete"])
@pytest.mark.parametrize("table_type", ["MERGE_ON_READ", "COPY_ON_WRITE"])
def test_one_write_reads_the_properties_once_and_lists_the_timeline_twice(
    tmp_path: Any,
    monkeypatch: pytest.MonkeyPatch,
    table_type: str,
    operation: str,
    services: bool,
) -> None:
    path = str(tmp_path / "t")
    opts = {**OPTS, "hoodie.datasource.write.table.type": table_type}
    hudi_ds.write(path, rows(["a", "b", "c", "d"], 1), opts)
    hudi_ds.write(path, rows(["c", "d", "e"], 2), opts)
    write_opts = {**opts, "hoodie.datasource.write.operation": operation}
    if not services:
        write_opts.update(NO_SERVICES)

    counts = count_table_reads(monkeypatch)
    hudi_ds.write(path, rows(["a", "e", "f"], 3), write_opts)
    monkeypatch.undo()

    assert counts["properties"] == 1, dict(counts)
    assert counts["timeline listings"] <= 2, dict(counts)
    # the write did its job: full rows, no duplicates
    latest: dict[str, tuple[int, int]] = {}
    for ids, ts in ((["a", "b", "c", "d"], 1), (["c", "d", "e"], 2)):
        latest.update({k: (ts, v) for v, k in enumerate(ids)})
    if operation == "delete":
        for k in ("a", "e", "f"):
            latest.pop(k, None)
    else:
        latest.update({k: (3, v) for v, k in enumerate(["a", "e", "f"])})
    expected = sorted((k, ts, "x" if ord(k) % 2 else "y", v) for k, (ts, v) in latest.items())
    got = hudi_ds.read(path, columns=["id", "ts", "p", "v"]).to_pylist()
    assert sorted((r["id"], r["ts"], r["p"], r["v"]) for r in got) == expected
