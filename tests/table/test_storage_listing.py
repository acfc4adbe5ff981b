"""The walk of a table's partition folders (``StorageListing``): the folders of a level are
listed concurrently, and the walk finds what a folder-by-folder walk finds, listing each
folder once.

Tree: ``a=1/b=1`` (a base file), ``a=1/b=2`` (only ``.hoodie_partition_metadata``),
``a=2`` (a log file) with ``a=2/b=3`` (a base file), ``notes`` (no Hudi file: not a
partition), hidden ``.hoodie`` and ``__MACOSX`` folders holding data-file names (not
walked), and 40 more partitions ``z=NN`` so that a level has many folders.
"""

from __future__ import annotations

from pathlib import Path

from hudi_ds.layout.naming import PARTITION_METADATA_FILE, base_file_name, log_file_name
from hudi_ds.storage import Storage
from hudi_ds.table.fs_view import StorageListing

BASE = base_file_name("f1-0", "0-1-2", "001")
LOG = log_file_name("f2-0", "001", 1, "0-1-2")


def _tree(root: Path) -> set[str]:
    """Write the tree; the partitions a walk must find."""
    files = {
        "a=1/b=1": [BASE, PARTITION_METADATA_FILE],
        "a=1/b=2": [PARTITION_METADATA_FILE],
        "a=2": [LOG],
        "a=2/b=3": [BASE],
        "notes": ["readme.txt"],
        ".hoodie/x": [BASE],
        "__MACOSX/y": [BASE],
        **{f"z={i:02d}": [BASE, PARTITION_METADATA_FILE] for i in range(40)},
    }
    for folder, names in files.items():
        (root / folder).mkdir(parents=True, exist_ok=True)
        for n in names:
            (root / folder / n).write_bytes(b"x")
    return {"a=1/b=1", "a=1/b=2", "a=2", "a=2/b=3"} | {f"z={i:02d}" for i in range(40)}


def test_the_walk_finds_every_partition_listing_each_folder_once(tmp_path: Path) -> None:
    want = _tree(tmp_path)
    storage = Storage(str(tmp_path))
    listing = StorageListing(storage)
    assert listing.partitions() == sorted(want)
    # the root, a=1, notes and every partition folder; hidden folders are not listed
    assert storage.calls["list"] == 1 + 1 + 1 + len(want)
    assert listing.marked == {"a=1/b=1", "a=1/b=2"} | {f"z={i:02d}" for i in range(40)}
    assert [f.name for f in listing.files("a=2")] == [LOG]
    assert storage.calls["list"] == 3 + len(want)  # (the walk's listing served it)


def test_a_sample_then_the_whole_walk(tmp_path: Path) -> None:
    """A sample stops early in listing order, the same every time; the whole walk after it
    lists only the folders the sample did not."""
    want = _tree(tmp_path)
    storage = Storage(str(tmp_path))
    listing = StorageListing(storage)
    sample = listing.partitions(limit=2)
    assert sample == ["a=1/b=1", "a=1/b=2"] == StorageListing(storage).partitions(limit=2)
    storage.calls.reset()
    assert listing.partitions() == sorted(want)
    assert storage.calls["list"] == 3 + len(want) - 4  # root, a=1, b=1, b=2 were listed
