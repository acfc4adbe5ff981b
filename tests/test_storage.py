"""Storage listings racing deletions (the markers of an instant that completes meanwhile)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pyarrow.fs as pafs

from hudi_ds.storage import Storage
from hudi_ds.write.markers import create_marker, marked_files
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
