"""Storage listings racing deletions (the markers of an instant that completes meanwhile)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pyarrow.fs as pafs
import pytest

from hudi_ds.errors import UnsupportedError
from hudi_ds.storage import Storage
from hudi_ds.storage_types import ObjectVersion
from hudi_ds.write.markers import MarkerBatch, create_marker, delete_markers, marked_files
from tests.conftest import FullDisk


class _VanishingFolder(FullDisk):
    """Local files; the first recursive listing finds ``victim`` deleted under it mid-walk."""

    def __init__(self, victim: Path) -> None:
        super().__init__(lambda _p: False, False)
        self.victim = victim
        self.raced = 0

    def get_file_info_selector(self, selector: Any) -> Any:
        if selector.recursive and self.victim.exists():
            shutil.rmtree(self.victim)
            self.raced += 1
            raise FileNotFoundError(f"Cannot list directory '{self.victim}'")
        return self.fs.get_file_info(selector)


def test_marker_listing_racing_a_deleted_folder_lists_what_is_left(tmp_path: Path) -> None:
    local = Storage(str(tmp_path))
    create_marker(local, "001", "p1/a.parquet", "CREATE")
    create_marker(local, "001", "p2/b.parquet", "CREATE")
    handler = _VanishingFolder(tmp_path / ".hoodie" / ".temp" / "001" / "p2")
    raced = Storage(str(tmp_path), pafs.PyFileSystem(handler))
    assert marked_files(raced, "001") == ["p1/a.parquet"]
    assert handler.raced == 1


def test_listing_a_folder_deleted_while_listed_is_empty(tmp_path: Path) -> None:
    local = Storage(str(tmp_path))
    create_marker(local, "002", "p1/a.parquet", "APPEND")
    handler = _VanishingFolder(tmp_path / ".hoodie" / ".temp" / "002")
    raced = Storage(str(tmp_path), pafs.PyFileSystem(handler))
    assert marked_files(raced, "002") == []


def test_batched_markers_are_java_timeline_server_files_and_read_with_direct_ones(
    tmp_path: Path,
) -> None:
    """A task's :class:`MarkerBatch` writes ``MARKERS.type`` (``TIMELINE_SERVER_BASED``) and one
    ``MARKERS-<id>`` object of marker names, one per line, rewritten with each new file; an
    unpickled batch (another worker's) writes an object of its own. ``marked_files`` reads
    both forms; ``delete_markers`` removes them."""
    import pickle

    local = Storage(str(tmp_path))
    batch = MarkerBatch(local, "003")
    batch.mark([("p1/.f1_003.log.1_0-1-0", "APPEND"), ("p2/.f2_003.log.1_0-1-0", "APPEND")])
    batch.mark([("p1/.f1_003.log.1_0-1-0", "APPEND")])  # marked already: no write
    batch.mark([("p1/f3_0-1-0_003.parquet", "CREATE")])
    other = pickle.loads(pickle.dumps(batch))
    other.mark([("p3/f4_0-2-0_003.parquet", "MERGE")])
    folder = tmp_path / ".hoodie" / ".temp" / "003"
    assert (folder / "MARKERS.type").read_text() == "TIMELINE_SERVER_BASED"
    lists = sorted(p.read_text().splitlines() for p in folder.glob("MARKERS-*"))
    assert lists == [
        [
            "p1/.f1_003.log.1_0-1-0.marker.APPEND",
            "p2/.f2_003.log.1_0-1-0.marker.APPEND",
            "p1/f3_0-1-0_003.parquet.marker.CREATE",
        ],
        ["p3/f4_0-2-0_003.parquet.marker.MERGE"],
    ]
    create_marker(local, "003", "p4/f5_0-3-0_003.parquet", "CREATE")
    assert marked_files(local, "003") == [
        "p1/.f1_003.log.1_0-1-0",
        "p1/f3_0-1-0_003.parquet",
        "p2/.f2_003.log.1_0-1-0",
        "p3/f4_0-2-0_003.parquet",
        "p4/f5_0-3-0_003.parquet",
    ]
    with pytest.raises(ValueError, match="BOGUS"):
        batch.mark([("p1/x.parquet", "BOGUS")])
    delete_markers(local, "003")
    assert not folder.exists() and marked_files(local, "003") == []


def test_a_batch_starts_a_new_markers_object_when_its_last_is_full(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each put rewrites only the batch's last object (at most ``MAX_PER_OBJECT`` names), not
    every name the batch marked: a task marking many files in many steps stays linear."""
    from hudi_ds.write import markers

    monkeypatch.setattr(markers, "MAX_PER_OBJECT", 3)
    local = Storage(str(tmp_path))
    written: list[int] = []
    real = local.write_atomic
    monkeypatch.setattr(
        local,
        "write_atomic",
        lambda rel, data: (written.append(len(data.splitlines())), real(rel, data)),
    )
    batch = MarkerBatch(local, "004")
    files = [f"p{i % 2}/f{i}_0-1-0_004.parquet" for i in range(8)]
    for step in ([0, 1], [2], [3, 4], [5, 6, 7]):
        batch.mark([(files[i], "CREATE") for i in step])
    folder = tmp_path / ".hoodie" / ".temp" / "004"
    lists = sorted(p.read_text().splitlines() for p in folder.glob("MARKERS-*"))
    assert lists == [
        [f"{files[i]}.marker.CREATE" for i in ids] for ids in ([0, 1, 2], [3, 4], [5, 6, 7])
    ]
    assert written == [2, 3, 2, 3] and max(written) <= 3
    assert marked_files(local, "004") == sorted(files)


def test_storage_counts_its_requests_by_kind_and_sub_storages_share_them(tmp_path: Path) -> None:
    storage = Storage(str(tmp_path))
    storage.write_bytes("p/a.bin", b"abc")
    storage.write_bytes("p/q/b.bin", b"de")
    storage.calls.reset()
    assert storage.calls.snapshot() == {"list": 0, "read": 0, "head": 0, "exists": 0}
    files, dirs = storage.list_entries("p")  # one request for both
    assert [f.name for f in files] == ["a.bin"] and dirs == ["p/q"]
    assert storage.list_files("p/q")[0].size == 2
    assert storage.read_bytes("p/a.bin") == b"abc"
    assert storage.info("p/a.bin") is not None
    assert storage.existing(["p/a.bin", "p/zz", "p/q/b.bin"]) == ["p/a.bin", "p/q/b.bin"]
    assert storage.exists("p/q")
    sub = storage.sub("p")
    assert sub.read_bytes("q/b.bin") == b"de"
    assert sub.list_dirs("") == ["q"]
    assert storage.calls.snapshot() == {"list": 3, "read": 2, "head": 4, "exists": 1}
    assert sub.calls is storage.calls


def test_versioned_puts_on_a_file_system_create_if_absent_only(tmp_path: Path) -> None:
    """One pair of versioned-put methods for every storage: locally the create (no version)
    is atomic, an update against a version is refused (no conditional update here)."""
    s = Storage(str(tmp_path))
    assert not s.conditional_update
    assert s.put_if_version("lock", b"a", None) == ObjectVersion(None, None)
    assert s.put_if_version("lock", b"b", None) is None  # exists: the create fails
    assert s.read_with_version("lock") == (b"a", ObjectVersion(None, None))
    with pytest.raises(UnsupportedError, match="no conditional update"):
        s.put_if_version("lock", b"c", ObjectVersion("etag", None))
    with pytest.raises(FileNotFoundError):
        s.read_with_version("missing")
