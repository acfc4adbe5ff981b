"""Write markers: a record under ``.hoodie/.temp/<instant>/`` of every data file a write creates.

Two forms, as in Java (``WriteMarkers``), both read by :func:`marked_files`:

* direct markers (``DirectWriteMarkers``), one empty object per data file::

      .hoodie/.temp/<instant>/<partition path>/<data file name>.marker.<CREATE|MERGE|APPEND>

* batched markers (the files Java's ``TimelineServerBasedWriteMarkers`` has its timeline server
  write): ``MARKERS.type`` holding ``TIMELINE_SERVER_BASED``, and files whose names start with
  ``MARKERS``, each holding marker names (``<partition path>/<data file name>.marker.<kind>``)
  one per line. Java's rollback (``MarkerBasedRollbackUtils.getAllMarkerPaths``) reads these
  when ``MARKERS.type`` says so, and then only these.

A marker is created *before* its data file, so the markers of an instant list a superset of the
files it wrote: the commit deletes the files of failed or superseded task attempts (markers not
matched by a reported WriteStatus) and a rollback deletes every marked file.

The handles of a write (:class:`MarkerBatch`, one per task attempt) and its commit's conflict
resolution (the log files it renames) use the batched form: a task that opens sixteen log
files declares them in one object, where direct markers cost one request each (on an object
store, a round trip each). Table services (compaction, clustering)
write direct markers under their own instants: no instant folder mixes the two forms, so Java
finds every marker.
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections import OrderedDict
from collections.abc import Iterable
from typing import Any

from hudi_ds.errors import StorageError
from hudi_ds.storage import Storage

TEMP_DIR = ".hoodie/.temp"
MARKER_TYPES = ("CREATE", "MERGE", "APPEND")
#: Java ``MarkerUtils.MARKERS_FILENAME_PREFIX`` / ``MARKER_TYPE_FILENAME``
MARKERS_PREFIX = "MARKERS"
MARKER_TYPE_FILE = "MARKERS.type"
#: the content of :data:`MARKER_TYPE_FILE` (Java ``MarkerType.TIMELINE_SERVER_BASED``)
BATCHED_TYPE = "TIMELINE_SERVER_BASED"

#: what this process's batches last wrote, by (shared cache id, object path): its size and
#: its marker names -- the commit of a write finds its own tasks' lists without a GET each
_WRITTEN: OrderedDict[tuple[str, str], tuple[int, list[str]]] = OrderedDict()
_WRITTEN_LOCK = threading.Lock()
#: batches remembered (a failed write's stay until another process rolls it back)
MAX_REMEMBERED = 256
#: marker names one object holds; a batch's later names go to a new object: a put rewrites its
#: object whole, so one object for a task that marks 100,000 files over many steps would be
#: rewritten with all of them at each step (quadratic)
MAX_PER_OBJECT = 10_000


def marker_dir(instant: str) -> str:
    return f"{TEMP_DIR}/{instant}"


def marker_name(data_path: str, kind: str) -> str:
    """The marker of ``data_path`` (relative to the base path), relative to the marker folder."""
    if kind not in MARKER_TYPES:
        raise ValueError(f"marker kind {kind!r} is not one of {MARKER_TYPES}")
    return f"{data_path}.marker.{kind}"


def create_marker(storage: Storage, instant: str, data_path: str, kind: str) -> None:
    """Mark ``data_path`` (relative to the base path) as being written by ``instant`` (a direct
    marker: table services' instants)."""
    storage.create_if_absent(f"{marker_dir(instant)}/{marker_name(data_path, kind)}")


class MarkerBatch:
    """The batched markers of one task attempt of a write: ``MARKERS-<id>`` objects listing
    every data file the attempt marked, the last rewritten (one put) whenever :meth:`mark` adds
    files, a new one started when it holds :data:`MAX_PER_OBJECT` names.

    It is new in every process it is unpickled in (another Spark worker's attempt gets its own
    object name), and thread-safe (handles flush on several threads).
    """

    def __init__(self, storage: Storage, instant: str) -> None:
        self.storage = storage
        self.instant = instant
        self._init()

    def _init(self) -> None:
        self._marked: dict[str, None] = {}
        self._current: list[str] = []  # the names of the object :attr:`_name` holds
        self._lock = threading.Lock()
        self._base = f"{marker_dir(self.instant)}/{MARKERS_PREFIX}-{uuid.uuid4().hex}"
        self._name = self._base
        self._objects = 1

    def __getstate__(self) -> dict[str, Any]:
        return {"storage": self.storage, "instant": self.instant}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.storage = state["storage"]
        self.instant = state["instant"]
        self._init()

    def mark(self, files: Iterable[tuple[str, str]]) -> None:
        """Mark each ``(data path, kind)`` of ``files`` not marked yet, in one put, before it
        returns (so before the caller writes those files)."""
        with self._lock:
            new = [marker_name(p, k) for p, k in files]
            new = [m for m in new if m not in self._marked]
            if not new:
                return
            if not self._marked:  # (each batch: another process's may find it deleted)
                self.storage.create_if_absent(
                    f"{marker_dir(self.instant)}/{MARKER_TYPE_FILE}", BATCHED_TYPE.encode()
                )
            new = list(dict.fromkeys(new))
            if self._current and len(self._current) + len(new) > MAX_PER_OBJECT:
                self._name = f"{self._base}-{self._objects}"
                self._objects += 1
                self._current = []
            lines = [*self._current, *new]
            data = "\n".join(lines).encode()
            # a put replaces the object whole (a reader sees the old list or the new one)
            self.storage.write_atomic(self._name, data)
            self._current = lines
            self._marked.update(dict.fromkeys(new))
            cache = self.storage.shared_cache_id
            if cache is not None:
                with _WRITTEN_LOCK:
                    _WRITTEN[(cache, self.storage.full_path(self._name))] = (len(data), lines)
                    _WRITTEN.move_to_end((cache, self.storage.full_path(self._name)))
                    while len(_WRITTEN) > MAX_REMEMBERED:
                        _WRITTEN.popitem(last=False)


def marked_files(storage: Storage, instant: str, listed: list[str] | None = None) -> list[str]:
    """Data file paths (relative to the base path) marked by ``instant``, in either form;
    the marker objects listed are added to ``listed`` (for :func:`marker_objects`)."""
    root = marker_dir(instant)
    out = set()
    files = storage.list_files(root, recursive=True)
    if listed is not None:
        listed.extend(f.path for f in files)
    for f in files:
        rel = f.path[len(root) + 1 :]
        names = [rel]
        if "/" not in rel and rel.startswith(MARKERS_PREFIX) and rel != MARKER_TYPE_FILE:
            names = _own_list(storage, f.path, f.size) or []
            if not names:
                try:
                    names = storage.read_text(f.path).splitlines()
                except FileNotFoundError:
                    continue  # deleted meanwhile (the markers of a write that just completed)
        for name in names:
            stem, sep, kind = name.strip().rpartition(".marker.")
            if sep and kind in MARKER_TYPES:
                out.add(stem)
    return sorted(out)


def _own_list(storage: Storage, path: str, size: int) -> list[str] | None:
    """The names in ``path`` if a batch of this process wrote it last with ``size`` bytes (the
    listed size: an object rewritten since is read)."""
    cache = storage.shared_cache_id
    if cache is None:
        return None
    with _WRITTEN_LOCK:
        got = _WRITTEN.get((cache, storage.full_path(path)))
    return got[1] if got is not None and got[0] == size else None


def delete_markers(storage: Storage, instant: str) -> None:
    storage.delete_dir(marker_dir(instant))
    forget_markers(storage, instant)


def delete_markers_quietly(storage: Storage, instant: str) -> None:
    """:func:`delete_markers` of an instant that is completed: a failure is logged, not
    raised. The commit point is behind: the instant stands and its markers are debris a
    later clean-up removes (Java deletes them the same way after a commit,
    ``WriteMarkers.quietDeleteMarkerDir``) -- raising would make the caller treat a
    completed instant as failed and undo it."""
    try:
        delete_markers(storage, instant)
    except StorageError as e:
        logging.getLogger(__name__).warning(
            "instant %s is completed; deleting its markers failed (left for later): %s",
            instant,
            e,
        )


def marker_objects(storage: Storage, instant: str, listed: list[str]) -> list[str]:
    """The marker objects of ``instant`` a completed write deletes without listing them
    again: those its commit listed (``listed``, :func:`marked_files`) and those this process
    wrote since (a commit's own batches, re-homing logs under the lock), with the type file.

    A write's tasks have all ended when its commit lists the markers (they reported their
    files), so nothing else marks files for the instant afterwards."""
    root = marker_dir(instant)
    cache, folder = storage.shared_cache_id, storage.full_path(root) + "/"
    out = dict.fromkeys(listed)
    out[f"{root}/{MARKER_TYPE_FILE}"] = None
    with _WRITTEN_LOCK:
        mine = [k[1][len(folder) :] for k in _WRITTEN if k[0] == cache and k[1].startswith(folder)]
    out.update(dict.fromkeys(f"{root}/{name}" for name in mine))
    return list(out)


def forget_markers(storage: Storage, instant: str) -> None:
    """Drop what this process remembers of ``instant``'s marker objects (deleted)."""
    cache, folder = storage.shared_cache_id, storage.full_path(marker_dir(instant)) + "/"
    with _WRITTEN_LOCK:
        for key in [k for k in _WRITTEN if k[0] == cache and k[1].startswith(folder)]:
            del _WRITTEN[key]
