"""The decoded content of completed instant files, kept per process.

A fresh :class:`~hudi_ds.timeline.timeline.Timeline` (every new table handle lists one) would
otherwise decode again the commit metadata a read needs, and a commit's metadata holds one
write stat per file it wrote: thousands of records decoded in Python, the largest part of
planning a selective read of a large table.

Keeping them is safe because a completed instant file never changes under its name: Hudi
publishes it once, atomically, as the commit point (Java
``HoodieActiveTimeline.transitionStateToComplete`` creates it, or renames the inflight file
onto it), and afterwards only deletes it (archival, rollback or restore of a completed
instant). The entries are keyed by the file's path *and* its listed size and modification
time, so a file deleted and written again at the same path (a table dropped and created again
in the same place) is never served from an older entry. Requested and inflight files are not
kept: a writer may still rewrite them.

Callers share the decoded objects, so they must not change them (the timeline's own cache
already shares them between the views of one listing).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from hudi_ds.storage import Storage
from hudi_ds.storage_types import FileInfo

__all__ = ["CompletedInstantCache", "completed_instants", "written_files"]

# bounds on what is kept: the decoded objects are several times the size of their files
# (a write stat of some 100 Avro bytes becomes an object of a few hundred)
_MAX_ENTRIES = 4096
_MAX_FILE_BYTES = 16 << 20

_Key = tuple[str, str, int, int, str]


class CompletedInstantCache:
    """Decoded completed instant files by (file system, path, size, mtime, what was decoded),
    least recently used dropped past ``max_entries`` entries or ``max_bytes`` bytes of files.
    Thread-safe."""

    def __init__(self, max_entries: int = _MAX_ENTRIES, max_bytes: int = _MAX_FILE_BYTES) -> None:
        self._max_entries = max_entries
        self._max_bytes = max_bytes
        self._entries: OrderedDict[_Key, Any] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def get_or_decode(
        self, storage: Storage, info: FileInfo, kind: str, decode: Callable[[], Any]
    ) -> Any:
        """The decoded content of the completed instant file ``info`` (``decode()`` reads and
        decodes it the first time)."""
        fs_id = storage.shared_cache_id
        if fs_id is None:  # a file system object of the caller's: not kept
            return decode()
        key = (fs_id, storage.full_path(info.path), info.size, info.mtime_ms, kind)
        with self._lock:
            if key in self._entries:
                self._entries.move_to_end(key)
                return self._entries[key]
        value = decode()  # outside the lock: two threads may both decode, either is right
        self._keep(key, info.size, value)
        return value

    def put(self, storage: Storage, info: FileInfo, kind: str, value: Any) -> None:
        """Keep ``value`` as the decoded content of ``info`` (decoded from bytes read for
        another kind: the file is not read again for this one)."""
        fs_id = storage.shared_cache_id
        if fs_id is not None:
            key = (fs_id, storage.full_path(info.path), info.size, info.mtime_ms, kind)
            self._keep(key, info.size, value)

    def _keep(self, key: _Key, size: int, value: Any) -> None:
        if size > self._max_bytes:
            return
        with self._lock:
            if key not in self._entries:
                self._entries[key] = value
                self._bytes += size
                while len(self._entries) > self._max_entries or self._bytes > self._max_bytes:
                    old, _ = self._entries.popitem(last=False)
                    self._bytes -= old[2]

    def peek(self, storage: Storage, info: FileInfo, kind: str) -> Any | None:
        """The decoded content of ``info`` if this cache holds it (None: not kept)."""
        fs_id = storage.shared_cache_id
        if fs_id is None:
            return None
        key = (fs_id, storage.full_path(info.path), info.size, info.mtime_ms, kind)
        with self._lock:
            return self._entries.get(key)


#: the process's cache of completed instant files
completed_instants = CompletedInstantCache()

#: the files each completed commit wrote (:class:`~hudi_ds.timeline.written.WrittenFiles`):
#: a few hundred bytes per file against some 1 KB of JSON per write stat, so files up to
#: 256 MB in all are kept (a 100 MB bulk insert commit too: every read plan needs it)
written_files = CompletedInstantCache(max_bytes=256 << 20)
