"""The column ranges of data files a process has already seen, kept between its commits.

Every commit that writes into a partition recomputes the partition's ``partition_stats``
record from the ranges of all the files of its latest slices (Java
``HoodieTableMetadataUtil.convertMetadataToPartitionStatRecords``); the files it did not write
are the same from one commit to the next, and reading their ``column_stats`` records back
from the metadata table at every commit would cost more than the rest of the stats work.
So the ranges a writer computes (or reads once) for a file are remembered in this process,
by table, partition and file name, and the next commit takes them from here.

Only files that never change under their name are remembered: base files, and the log
files of table versions 8 and 9, which Java 1.x and hudi_ds name with the writing instant
(a version 6 log file can be appended to by a later instant, by Java's append handle: its
ranges are read from the metadata table each time). A file's ranges do not depend on who
computes them, so a stale entry cannot arise: a deleted file's name is never written again
(names carry the instant and a write token).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence

from hudi_ds.layout.naming import parse_base_file_name
from hudi_ds.metadata.column_stats import ColumnRange
from hudi_ds.storage import Storage

__all__ = [
    "FileRangeCache",
    "PartitionFoldCache",
    "file_range_cache",
    "partition_fold_cache",
    "table_key",
]

_MAX_FILES = 1 << 16  # a few hundred bytes a range: some tens of MB at most
_MAX_PARTITIONS = 1 << 12


def table_key(storage: Storage) -> str:
    """Which table a cached file is of: its URI, and for a table on a filesystem object the
    caller made (an in-memory one, say) that object too."""
    explicit = getattr(storage, "_explicit_fs", False)
    uri = storage.uri()
    return f"{uri}@{id(storage.fs):x}" if explicit else uri


class FileRangeCache:
    """Per (table, partition, file name): the file's ranges by column, least recently used
    files dropped past ``max_files``. Thread-safe (a Spark driver commits from several
    threads)."""

    def __init__(self, max_files: int = _MAX_FILES) -> None:
        self._max = max_files
        self._files: OrderedDict[tuple[str, str, str], dict[str, ColumnRange]] = OrderedDict()
        self._lock = threading.Lock()

    @staticmethod
    def immutable(file_name: str, table_version: int) -> bool:
        """Whether ``file_name`` keeps its content under its name (see the module docstring)."""
        return table_version >= 8 or parse_base_file_name(file_name) is not None

    def put(
        self,
        table: str,
        partition: str,
        file_name: str,
        ranges: Iterable[ColumnRange],
        table_version: int,
    ) -> None:
        """Remember the ranges of ``file_name`` (added to those already known)."""
        if not self.immutable(file_name, table_version):
            return
        key = (table, partition, file_name)
        with self._lock:
            known = self._files.pop(key, None) or {}
            known.update((r.column, r) for r in ranges)
            self._files[key] = known
            while len(self._files) > self._max:
                self._files.popitem(last=False)

    def get(
        self, table: str, partition: str, file_name: str, columns: Sequence[str]
    ) -> list[ColumnRange] | None:
        """The ranges of ``columns`` in ``file_name``, None unless every one is known."""
        key = (table, partition, file_name)
        with self._lock:
            known = self._files.get(key)
            if known is None:
                return None
            self._files.move_to_end(key)
        out = [known.get(c) for c in columns]
        return None if any(r is None for r in out) else [r for r in out if r is not None]

    def forget(self, table: str, partition: str, names: Iterable[str]) -> None:
        """Drop deleted files."""
        with self._lock:
            for n in names:
                self._files.pop((table, partition, n), None)


file_range_cache = FileRangeCache()
"""The process's cache."""


class PartitionFoldCache:
    """Per (table, partition, indexed columns): the ranges of the partition's files last
    folded into its partition stats, and which files, in their fold order. The next commit
    into the partition folds only the files after them when its own list starts with them
    (a MOR commit adds log files to the latest slices; a new base file, a compaction or a
    clean changes the list, and the fold starts over). Only lists of files that never change
    under their name (:meth:`FileRangeCache.immutable`) are kept."""

    def __init__(self, max_partitions: int = _MAX_PARTITIONS) -> None:
        self._max = max_partitions
        self._folds: OrderedDict[
            tuple[str, str, tuple[str, ...]], tuple[tuple[str, ...], dict[str, ColumnRange]]
        ] = OrderedDict()
        self._lock = threading.Lock()

    def get(
        self, table: str, partition: str, columns: tuple[str, ...], names: Sequence[str]
    ) -> tuple[dict[str, ColumnRange], int]:
        """The fold of the longest remembered prefix of ``names`` and its length (``({}, 0)``
        without one)."""
        key = (table, partition, columns)
        with self._lock:
            got = self._folds.get(key)
            if got is not None:
                self._folds.move_to_end(key)
        if got is None:
            return {}, 0
        done, merged = got
        if len(done) > len(names) or tuple(names[: len(done)]) != done:
            return {}, 0
        return merged, len(done)

    def put(
        self,
        table: str,
        partition: str,
        columns: tuple[str, ...],
        names: Sequence[str],
        merged: dict[str, ColumnRange],
        table_version: int,
    ) -> None:
        """Remember the fold of ``names`` (ignored when one of them may change)."""
        if not all(FileRangeCache.immutable(n, table_version) for n in names):
            return
        key = (table, partition, columns)
        with self._lock:
            self._folds[key] = (tuple(names), dict(merged))
            self._folds.move_to_end(key)
            while len(self._folds) > self._max:
                self._folds.popitem(last=False)


partition_fold_cache = PartitionFoldCache()
"""The process's cache of partition folds."""
