"""Write markers: a file under ``.hoodie/.temp/<instant>/`` for every data file a write creates.

Grammar (Java ``WriteMarkers``, direct markers)::

    .hoodie/.temp/<instant>/<partition path>/<data file name>.marker.<CREATE|MERGE|APPEND>

A marker is created *before* its data file, so the markers of an instant list a superset of the
files it wrote: the commit deletes the files of failed or superseded task attempts (markers not
matched by a reported WriteStatus) and a rollback deletes every marked file.
"""

from __future__ import annotations

from hudi_ds.storage import Storage

TEMP_DIR = ".hoodie/.temp"
MARKER_TYPES = ("CREATE", "MERGE", "APPEND")


def marker_dir(instant: str) -> str:
    return f"{TEMP_DIR}/{instant}"


def create_marker(storage: Storage, instant: str, data_path: str, kind: str) -> None:
    """Mark ``data_path`` (relative to the base path) as being written by ``instant``."""
    storage.create_if_absent(f"{marker_dir(instant)}/{data_path}.marker.{kind}")


def marked_files(storage: Storage, instant: str) -> list[str]:
    """Data file paths (relative to the base path) marked by ``instant``."""
    root = marker_dir(instant)
    out = []
    for f in storage.list_files(root, recursive=True):
        rel = f.path[len(root) + 1 :]
        stem, sep, kind = rel.rpartition(".marker.")
        if sep and kind in MARKER_TYPES:
            out.append(stem)
    return sorted(out)


def delete_markers(storage: Storage, instant: str) -> None:
    storage.delete_dir(marker_dir(instant))
