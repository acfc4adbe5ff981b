"""The file-system view: partitions, file groups and the file slices visible as of an instant.

Partitions and files come from a :class:`FileListing`: the storage (:class:`StorageListing`,
one listing per folder) by default, or the table's metadata table
(:class:`hudi_ds.metadata.reader.MetadataReader`, chosen by the read path in
:mod:`hudi_ds.table.table` when it is present and in step). Which files count is
decided by a :class:`Visibility`: the set of data instants (completed commit, deltacommit and
replacecommit, by requested time) that a query may see. Files of instants older than the first
active instant are treated as committed (they were archived), as Java does.
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol

from hudi_ds.layout.file_group import BaseFile, FileGroup, FileSlice, LogFile
from hudi_ds.layout.naming import (
    PARTITION_METADATA_FILE,
    file_name_of,
    file_path,
    parse_base_file_name,
    parse_log_file_name,
)
from hudi_ds.metadata.reader import MetadataReader
from hudi_ds.metadata.records import partition_path_of_id
from hudi_ds.storage import Storage
from hudi_ds.storage_types import FileInfo
from hudi_ds.table_config import TableConfig
from hudi_ds.timeline.view import Visibility


class FileListing(Protocol):
    """Where a view finds a table's partitions and their files.

    ``partitions`` gives relative partition paths (``""`` or ``.`` for a non-partitioned
    table); ``files`` the files directly in one partition, paths relative to the base path.
    """

    def partitions(self) -> list[str]:
        """Relative paths of the table's partitions (``""`` or ``.``: non-partitioned)."""
        ...

    def files(self, partition: str) -> list[FileInfo]:
        """The files directly in ``partition``, paths relative to the table's base path."""
        ...


#: concurrent listing requests of a walk of the partition folders
_LIST_THREADS = 8


class StorageListing:
    """Partitions and files found by listing the storage (Java ``FileSystemBackedTableMetadata``):
    a partition is a folder holding ``.hoodie_partition_metadata`` or data files; hidden
    folders (``.hoodie``...) are not walked. One listing request per folder: the files the
    walk of :meth:`partitions` saw are what the first :meth:`files` of each partition returns
    (a later call lists again)."""

    def __init__(self, storage: Storage) -> None:
        self.storage = storage
        self._seen: dict[str, list[FileInfo]] = {}
        # folders a walk that stopped early listed: the next walk takes them (once) instead of
        # listing them again (a sample of the partitions, then every partition)
        self._walked: dict[str, tuple[list[FileInfo], list[str]]] = {}
        #: partitions whose listing showed their ``.hoodie_partition_metadata``
        self.marked: set[str] = set()

    def partitions(self, limit: int | None = None) -> list[str]:
        """Relative paths of the partition folders the walk finds, sorted; with ``limit``, the
        walk stops once it found that many (the first ones in listing order: a sample that
        costs a few listings, not one per partition of the table)."""
        found: list[str] = []
        self._seen = {}
        if limit is None:
            self._walk_all(found)
            self._walked = {}
        else:
            self._walk("", found, limit)
        return sorted(found)

    def files(self, partition: str) -> list[FileInfo]:
        """The files in ``partition``: those the last :meth:`partitions` walk saw (once),
        else a new listing of its folder."""
        seen = self._seen.pop(partition, None)
        files = seen if seen is not None else self.storage.list_files(partition)
        marker = file_path(partition, PARTITION_METADATA_FILE)
        if any(f.path == marker for f in files):
            self.marked.add(partition)
        return files

    def _walk(self, rel: str, found: list[str], limit: int) -> None:
        if len(found) >= limit:
            return
        walked = self._walked.pop(rel, None)
        files, dirs = walked if walked is not None else self.storage.list_entries(rel)
        self._walked[rel] = (files, dirs)
        # (a sample of the first partitions is the same every time)
        for d in self._take(rel, files, dirs, found):
            self._walk(d, found, limit)

    def _walk_all(self, found: list[str]) -> None:
        """The whole walk, a level of folders at a time: the folders of a level are listed
        concurrently (a storage's listing requests wait on the file system or the network,
        outside the interpreter lock; an object store answers each after a round trip)."""
        level = [""]
        while level:
            todo = [rel for rel in level if rel not in self._walked]
            listed = dict(zip(todo, self._list_many(todo), strict=True))
            below: list[str] = []
            for rel in level:
                walked = self._walked.pop(rel, None)
                files, dirs = walked if walked is not None else listed[rel]
                below += self._take(rel, files, dirs, found)
            level = below

    def _list_many(self, folders: list[str]) -> list[tuple[list[FileInfo], list[str]]]:
        if len(folders) <= 1:
            return [self.storage.list_entries(rel) for rel in folders]
        threads = min(len(folders), _LIST_THREADS)
        # a task lists a run of folders (a task per folder costs this thread more to hand
        # out and collect than a local listing takes)
        step = -(-len(folders) // (threads * 4))
        runs = [folders[i : i + step] for i in range(0, len(folders), step)]
        with ThreadPoolExecutor(threads) as pool:
            listed = pool.map(lambda run: [self.storage.list_entries(r) for r in run], runs)
            return [entries for run in listed for entries in run]

    def _take(
        self, rel: str, files: list[FileInfo], dirs: list[str], found: list[str]
    ) -> list[str]:
        """Record the listing of folder ``rel`` (a partition when it holds data files: added
        to ``found``); its sub folders to walk, sorted."""
        self._seen[rel] = files
        marker = file_path(rel, PARTITION_METADATA_FILE)
        if any(f.path == marker for f in files):
            self.marked.add(rel)
            found.append(rel)
        elif any(
            name.startswith(PARTITION_METADATA_FILE)
            or parse_base_file_name(name)
            or parse_log_file_name(name)
            for name in (f.name for f in files)
        ):
            found.append(rel)
        out = []
        for d in sorted(dirs):
            leaf = file_name_of(d)
            if leaf.startswith(".") or (rel == "" and leaf in ("__MACOSX",)):
                continue
            out.append(d)
        return out


#: a partition's file groups and the size of every file listed in it, by path
_Partition = tuple[list[FileGroup], dict[str, int]]


class _SharedGroups:
    """File groups kept per process, so that a new table handle on an unchanged table groups
    nothing again: by the fingerprint of the metadata table listing they were grouped from
    (:attr:`MetadataReader.fingerprint`) and partition, or by a partition's folder for a
    storage listing, served while its files and sizes are the same (:meth:`get_if_listed`:
    the listing is fresh, only the parsing of its names is saved). Least recently used
    dropped past ``max_files`` files in all. Thread-safe. The groups are shared: nobody
    changes them."""

    def __init__(self, max_files: int = 1 << 20) -> None:
        self._max = max_files
        self._entries: OrderedDict[tuple[Any, str], _Partition] = OrderedDict()
        self._files = 0
        self._lock = threading.Lock()

    @staticmethod
    def _size(part: _Partition) -> int:
        return len(part[1])

    def get_or_load(self, key: tuple[Any, str], load: Callable[[], _Partition]) -> _Partition:
        with self._lock:
            if key in self._entries:
                self._entries.move_to_end(key)
                return self._entries[key]
        return self._put(key, load())  # loaded outside the lock: either of two is right

    def get_if_listed(
        self, key: tuple[Any, str], sizes: dict[str, int], load: Callable[[], _Partition]
    ) -> _Partition:
        """The groups kept for ``key`` if they were grouped from the same files with the
        same sizes (path -> size, ``sizes``; the groups hold nothing else), else ``load()``'s,
        kept in their place."""
        with self._lock:
            part = self._entries.get(key)
            if part is not None and part[1] == sizes:
                self._entries.move_to_end(key)
                return part
        return self._put(key, load(), replace=True)

    def _put(self, key: tuple[Any, str], part: _Partition, replace: bool = False) -> _Partition:
        n = self._size(part)
        if n > self._max:
            return part
        with self._lock:
            if replace and key in self._entries:
                self._files -= self._size(self._entries.pop(key))
            if key not in self._entries:
                self._entries[key] = part
                self._files += n
                while self._files > self._max:
                    _, gone = self._entries.popitem(last=False)
                    self._files -= self._size(gone)
        return part


_SHARED_GROUPS = _SharedGroups()

_BY_LISTING: weakref.WeakKeyDictionary[MetadataReader, FileSystemView] = weakref.WeakKeyDictionary()


class FileSystemView:
    """File groups of a table, built from a listing of its partitions.

    Args:
        storage: the table's storage.
        config: its ``hoodie.properties``.
        listing: where partitions and files come from (default: :class:`StorageListing`).
    """

    def __init__(
        self, storage: Storage, config: TableConfig, listing: FileListing | None = None
    ) -> None:
        self.storage = storage
        self.config = config
        self.listing: FileListing = listing if listing is not None else StorageListing(storage)
        self._groups: dict[str, _Partition] = {}
        self._partitions: list[str] | None = None
        self._by_id: dict[str, dict[str, FileGroup]] = {}
        # listings made for file_groups_with_prefix, which _partition groups later
        self._listed: dict[str, list[FileInfo]] = {}

    @classmethod
    def of(
        cls, storage: Storage, config: TableConfig, listing: MetadataReader | None
    ) -> FileSystemView:
        """A view listed by the metadata table's reader ``listing``, or (None) by the storage.

        A storage listing is made afresh for each view; a metadata reader serves one state
        of the table, so the view already built on it (same config) is returned: its file
        groups are grouped once for all the reads of the handle that keeps the reader."""
        if listing is None:
            return cls(storage, config)
        view = _BY_LISTING.get(listing)
        if view is None or view.config is not config or view.storage is not storage:
            view = _BY_LISTING[listing] = cls(storage, config, listing)
        return view

    # -- listing -------------------------------------------------------------------------------
    def partitions(self) -> list[str]:
        """Relative paths of every partition holding data files (``""`` = non-partitioned)."""
        if self._partitions is None:
            self._partitions = sorted(partition_path_of_id(p) for p in self.listing.partitions())
        return self._partitions

    def file_groups(self, partition: str) -> list[FileGroup]:
        """Every file group of ``partition`` with all its files (committed or not)."""
        return self._partition(partition)[0]

    def file_group(self, partition: str, file_id: str) -> FileGroup | None:
        """File group ``file_id`` of ``partition`` (None: no file of it is listed)."""
        by_id = self._by_id.get(partition)
        if by_id is None:
            by_id = self._by_id[partition] = {g.file_id: g for g in self.file_groups(partition)}
        return by_id.get(file_id)

    def file_groups_with_prefix(self, partition: str, prefix: str) -> list[FileGroup]:
        """The file groups of ``partition`` whose file id starts with ``prefix``: only their
        files are parsed and grouped (a write touching a bucket or two of each partition
        groups those, not the partition's hundreds of file groups). From the view's groups of
        the partition when it has them, else from one listing, which a later
        :meth:`file_groups` of the partition groups without listing again."""
        part = self._groups.get(partition)
        if part is not None:
            return [g for g in part[0] if g.file_id.startswith(prefix)]
        files = self._listed.get(partition)
        if files is None:
            files = self._listed[partition] = self.listing.files(partition)
        n = len(prefix)
        mine = [f for f in files if f.name.lstrip(".")[:n] == prefix]
        return self._group(partition, mine)[0]

    def file_id_prefixes(self, partition: str, n: int) -> set[str]:
        """The distinct first ``n`` characters of the names of ``partition``'s listed files
        (without a log file's leading dot: the start of their file ids), from the same listing
        as :meth:`file_groups_with_prefix`."""
        part = self._groups.get(partition)
        if part is not None:
            return {g.file_id[:n] for g in part[0]}
        files = self._listed.get(partition)
        if files is None:
            files = self._listed[partition] = self.listing.files(partition)
        return {f.name.lstrip(".")[:n] for f in files}

    def listed_sizes(self, partition: str | None = None) -> dict[str, int]:
        """Path -> size of every file listed in ``partition`` (None: in every partition;
        the caller must not change it)."""
        if partition is not None:
            return self._partition(partition)[1]
        out: dict[str, int] = {}
        for p in self.partitions():
            out.update(self._partition(p)[1])
        return out

    def _partition(self, partition: str) -> _Partition:
        part = self._groups.get(partition)
        if part is None:
            fp = getattr(self.listing, "fingerprint", None)
            fs_id = self.storage.shared_cache_id
            if fp is not None:
                part = _SHARED_GROUPS.get_or_load(
                    (fp, partition), lambda: self._load_groups(partition)
                )
            elif fs_id is not None and isinstance(self.listing, StorageListing):
                files = self._listed.pop(partition, None)
                if files is None:
                    files = self.listing.files(partition)
                part = _SHARED_GROUPS.get_if_listed(
                    (fs_id, self.storage.full_path(partition)),
                    {f.path: f.size for f in files},
                    lambda: self._group(partition, files),
                )
            else:
                part = self._load_groups(partition)
            self._groups[partition] = part
        return part

    def _load_groups(self, partition: str) -> _Partition:
        files = self._listed.pop(partition, None)
        return self._group(partition, files if files is not None else self.listing.files(partition))

    @staticmethod
    def _group(partition: str, files: list[FileInfo]) -> _Partition:
        """Group the files listed in ``partition``."""
        base: dict[str, list[BaseFile]] = {}
        logs: dict[str, list[LogFile]] = {}
        sizes: dict[str, int] = {}
        # without the parsers' caches: a listing's names are parsed once, and its groups are
        # what is kept (a fresh process listing 100,000 files would only churn the caches)
        parse_log, parse_base = parse_log_file_name.__wrapped__, parse_base_file_name.__wrapped__
        for f in files:
            path, size = f.path, f.size
            sizes[path] = size
            name = path[path.rfind("/") + 1 :]  # (FileInfo.name, without a call per file)
            # a log file's name starts with a dot, a base file's never does
            if name[:1] == ".":
                lg = parse_log(name)
                if lg is not None and lg.extension == "log" and not lg.cdc:
                    logs.setdefault(lg.file_id, []).append(LogFile(path, lg, size))
                continue
            b = parse_base(name)
            if b is not None:
                base.setdefault(b.file_id, []).append(BaseFile(path, b, size))
        groups = []
        for fid in sorted(base.keys() | logs.keys()):
            groups.append(FileGroup(partition, fid, base.get(fid, []), logs.get(fid, [])))
        return groups, sizes

    def has_partition_metadata(self, partition: str) -> bool:
        """True when a storage listing of ``partition`` this view made showed its
        ``.hoodie_partition_metadata`` (False: not seen, or listed through the metadata table,
        which does not list it) -- a writer then need not probe for it."""
        marked = getattr(self.listing, "marked", None)
        return marked is not None and partition in marked

    # -- slices --------------------------------------------------------------------------------
    def latest_file_slices(
        self,
        partition: str,
        vis: Visibility,
        *,
        include_logs: bool = True,
        groups: Iterable[FileGroup] | None = None,
    ) -> list[FileSlice]:
        """The latest visible, merged file slice of every live file group of ``partition``
        (of ``groups`` of it, when given).

        With a compaction pending at C, logs written after it was scheduled sit in slice C,
        which has no base file yet; they are merged into the slice before it, as Java does.
        """
        replaced = vis.replaced.get(partition, frozenset())
        layout2 = self.config.timeline_layout_version >= 2
        pending = sorted(vis.pending_compactions)
        out = []
        for g in self.file_groups(partition) if groups is None else groups:
            if g.file_id in replaced:
                continue
            s = self._latest_slice(g, vis, include_logs, layout2, pending)
            if s is not None and not s.is_empty:
                out.append(s)
        return out

    def _latest_slice(
        self, g: FileGroup, vis: Visibility, include_logs: bool, layout2: bool, pending: list[str]
    ) -> FileSlice | None:
        """``pending``: the pending compactions' times, sorted."""
        base_files, log_files = g.base_files, g.log_files
        if not layout2 and not pending:
            return self._latest_slice_v6(g, vis, include_logs)
        slices: dict[str, FileSlice] = {}
        for b in base_files:
            if vis.sees(b.instant_time):
                s = slices.setdefault(
                    b.instant_time, FileSlice(g.partition_path, g.file_id, b.instant_time)
                )
                s.base_file = b
        # a pending compaction opens a new (base-less) slice
        if include_logs and log_files:
            if layout2:
                self._assign_logs_v8(g, log_files, slices, vis, pending)
            else:
                for lf in log_files:
                    key = lf.instant_time
                    if not vis.sees(key) and key not in vis.pending_compactions:
                        # the slice's base instant never completed (a write in flight or
                        # failed): none of its blocks can be visible
                        continue
                    slices.setdefault(key, FileSlice(g.partition_path, g.file_id, key))
                    slices[key].log_files.append(lf)
        if not slices:
            return None
        keys = sorted(slices)
        latest = slices[keys[-1]]
        # (several compactions may be pending as far as this read is concerned)
        while latest.base_file is None and len(keys) > 1 and keys[-1] in vis.pending_compactions:
            keys.pop()
            prev = slices[keys[-1]]
            latest = FileSlice(
                g.partition_path,
                g.file_id,
                prev.base_instant_time,
                prev.base_file,
                prev.log_files + latest.log_files,
            )
        if len(latest.log_files) > 1:
            latest.log_files = sorted(latest.log_files, key=LogFile.sort_key)
        return latest

    @staticmethod
    def _latest_slice_v6(g: FileGroup, vis: Visibility, include_logs: bool) -> FileSlice | None:
        """:meth:`_latest_slice` without a pending compaction, timeline layout 1: the slice
        is the greatest visible instant among the base files' and the log files' (a log file
        names its slice's base instant); found in one pass, without building older slices."""
        sees = vis.sees
        latest: str | None = None
        base: BaseFile | None = None
        for b in g.base_files:
            t = b.name.instant_time
            if sees(t) and (latest is None or t >= latest):
                latest, base = t, b  # of two base files of one instant, the last listed
        logs: list[LogFile] = []
        if include_logs:
            for lf in g.log_files:
                t = lf.name.instant_time
                if (latest is not None and t < latest) or not sees(t):
                    continue
                if latest is None or t > latest:
                    latest, base, logs = t, None, [lf]
                else:
                    logs.append(lf)
        if latest is None:
            return None
        if len(logs) > 1:
            logs.sort(key=LogFile.sort_key)
        return FileSlice(g.partition_path, g.file_id, latest, base, logs)

    @staticmethod
    def _assign_logs_v8(
        g: FileGroup,
        log_files: Iterable[LogFile],
        slices: dict[str, FileSlice],
        vis: Visibility,
        pending: list[str],
    ) -> None:
        visible = []
        for lf in log_files:
            if not vis.sees(lf.instant_time):
                continue
            done = vis.completion_of(lf.instant_time)
            visible.append(LogFile(lf.path, lf.name, lf.size, completion_time=done))
        visible.sort(key=LogFile.sort_key)
        for lf in visible:
            keys = sorted(set(slices) | {p for p in pending if p <= lf.completion_time})
            cands = [k for k in keys if k <= lf.completion_time]
            key = cands[-1] if cands else lf.instant_time
            slices.setdefault(key, FileSlice(g.partition_path, g.file_id, key))
            slices[key].log_files.append(lf)
