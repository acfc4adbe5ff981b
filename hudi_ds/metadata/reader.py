"""``MetadataReader``: the data table's partitions and files, read from its metadata table.

The metadata table (MDT, ``<table>/.hoodie/metadata``) is a MERGE_ON_READ Hudi table whose
``files`` partition holds one record per data partition (file name -> size / deleted) and the
``__all_partitions__`` record (reference ``hudi-metadata-table.md`` sections 1 and 2). Reading
it replaces one storage listing per partition (plus the walk that finds the partitions) with a
listing of ``.hoodie/metadata/files``, its timeline and a few file reads.

How the ``files`` partition is read (Java ``HoodieBackedTableMetadata``; hudi-rs
``crates/core/src/metadata``):

* at the latest completed MDT instant: per file group, the latest base HFile whose instant is
  completed on the MDT timeline, and the log files of that slice -- v6 (layout 1): the log
  files named by the base instant; v8/v9 (layout 2): the log files whose deltacommit completed
  at or after the base instant (slicing by completion time, reference 1.6);
* of those logs only the HFILE_DATA blocks whose instant is completed on the MDT timeline *and*
  valid for the data table (Java ``HoodieTableMetadataUtil.getValidInstantTimestamps``, applied
  as an ``InstantRange`` by ``HoodieBackedTableMetadata``): the MDT deltacommit of data instant
  T completes before T does, so a T that then failed must not be listed (reference 1.7);
* records merged per key in order (base file, then blocks in log order) with Hudi's rule
  (:func:`hudi_ds.metadata.records.merge_files`); entries marked deleted are not listed.

:attr:`MetadataReader.in_step` says whether the MDT may be trusted for a listing: every
completed data instant that changes files (commit, deltacommit, replacecommit, clean, rollback,
restore; a compaction completes as a commit) after the MDT's bootstrap has a completed MDT
instant of the same time, and the MDT's logs hold no corrupt region. Callers list the storage
when it is not.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from hudi_ds.errors import CorruptFileError, InstantNotFoundError, TableNotFoundError
from hudi_ds.layout.file_group import BaseFile, FileSlice, LogFile
from hudi_ds.layout.hfile import read_hfile
from hudi_ds.layout.naming import parse_base_file_name, parse_log_file_name
from hudi_ds.log.block import BlockType, LogBlock
from hudi_ds.log.reader import decode_delete_block, scan_log_bytes
from hudi_ds.metadata.records import (
    ALL_PARTITIONS,
    FILE_CHANGING_ACTIONS,
    FILE_LIST,
    FILES_PARTITION,
    METADATA_PARTITIONS_KEY,
    METADATA_PATH,
    NON_PARTITIONED,
    PARTITION_LIST,
    FileEntry,
    Records,
    declared_partitions,
    decode_files_value,
    merge_files,
    partition_id,
)
from hudi_ds.schema.meta import RECORD_KEY_METADATA_FIELD
from hudi_ds.storage import Storage
from hudi_ds.storage_types import FileInfo
from hudi_ds.table_config import TableConfig
from hudi_ds.timeline.instant import (
    DELTA_COMMIT,
    RESTORE,
    ROLLBACK,
    Instant,
)
from hudi_ds.timeline.timeline import Timeline

log = logging.getLogger("hudi_ds.metadata")

#: Java ``HoodieTableMetadata.SOLO_COMMIT_TIMESTAMP``: the bootstrap instants of an MDT created
#: with the table start with it (``00000000000000010`` in 0.x, ``00000000000000000`` in 1.x)
SOLO_COMMIT_TIMESTAMP = "00000000000000"

# Java 0.x ``HoodieTableMetadataUtil.OperationSuffix`` and PARTITION_INITIALIZATION_TIME_SUFFIX:
# MDT-only deltacommits carry a 3-digit suffix after a 17-digit data instant time
_MILLIS_INSTANT_LENGTH = 17
_OPERATION_SUFFIXES = frozenset({"001", "002", "003", "004", "005", "006"})
_PARTITION_INIT_SUFFIX = 10


@dataclass(frozen=True)
class MetadataFileGroup:
    """A file group of the MDT ``files`` partition as read: the slice used and what was skipped."""

    file_id: str
    slice: FileSlice
    #: blocks merged, as ``(log file name, block instant)``
    blocks: list[tuple[str, str]] = field(default_factory=list)
    #: blocks skipped, as ``(log file name, block instant, why)``
    skipped: list[tuple[str, str, str]] = field(default_factory=list)


class MetadataReader:
    """The ``files`` partition of a data table's metadata table, merged as of its latest
    completed instant (open it with :meth:`open`).

    Attributes:
        storage: the metadata table's storage (``<table>/.hoodie/metadata``).
        config: the metadata table's ``hoodie.properties``.
        timeline: the metadata table's active timeline.
        latest_instant: the latest completed MDT instant (None when there is none).
        bootstrap_instant: the first completed MDT instant on its active timeline (the
            bootstrap deltacommit, or where the MDT's archived history ends).
        valid_instants: the instants whose MDT log blocks count (Java's rule, see the module
            docstring).
        missing_instants: completed file-changing data instants after the bootstrap that have
            no completed MDT instant (the MDT lags; a listing through it would miss files).
        problems: why the MDT cannot be trusted besides missing instants (corrupt log blocks).
        file_groups: the file groups of the ``files`` partition as read.
    """

    def __init__(
        self,
        storage: Storage,
        config: TableConfig,
        timeline: Timeline,
        data_timeline: Timeline,
        data_table_version: int,
    ) -> None:
        self.storage = storage
        self.config = config
        self.timeline = timeline
        self.data_table_version = data_table_version
        done = timeline.completed()
        last = done.last_completed()
        self.latest_instant: str | None = last.requested_time if last is not None else None
        first = done.first()
        self.bootstrap_instant: str | None = first.requested_time if first is not None else None
        self.valid_instants = valid_instants(data_timeline, timeline, data_table_version)
        self.missing_instants = lagging_instants(data_timeline, timeline)
        self.problems: list[str] = []
        self.file_groups: list[MetadataFileGroup] = []
        self._partitions: dict[str, FileEntry] = {}
        self._files: dict[str, dict[str, FileEntry]] = {}
        #: names what the listing was merged from (see :meth:`_load`); None: not known
        self.fingerprint: tuple[Any, ...] | None = None
        if self.latest_instant is None:
            self.problems.append("the metadata table has no completed instant")
        else:
            self._load()

    # -- opening ------------------------------------------------------------------------------
    @classmethod
    def open(
        cls, storage: Storage, config: TableConfig, data_timeline: Timeline
    ) -> MetadataReader | None:
        """Open the metadata table of the data table at ``storage``.

        Args:
            storage: the data table's storage.
            config: the data table's ``hoodie.properties``.
            data_timeline: the data table's active timeline (as the caller's read sees it).

        Returns:
            The reader, or None when the table declares no ``files`` partition in
            ``hoodie.table.metadata.partitions`` or ``.hoodie/metadata`` holds no table.

        Raises:
            CorruptFileError: a file of the MDT's ``files`` slice does not decode (a damaged
                HFile or record; the message names the file).
        """
        if FILES_PARTITION not in declared_partitions(config):
            return None
        mdt = storage.sub(METADATA_PATH)
        try:
            mdt_config = TableConfig.load(mdt)
        except TableNotFoundError:
            log.info(
                "%s declares the metadata table (%s=%s) but %s holds none",
                storage.base_uri,
                METADATA_PARTITIONS_KEY,
                config.get(METADATA_PARTITIONS_KEY),
                mdt.root,
            )
            return None
        timeline = Timeline.load(mdt, mdt_config.timeline_layout_version, mdt_config.timeline_path)
        return cls(mdt, mdt_config, timeline, data_timeline, config.table_version)

    # -- state --------------------------------------------------------------------------------
    @property
    def in_step(self) -> bool:
        """True when the MDT lists exactly what the data timeline committed: no completed
        file-changing data instant after its bootstrap is missing, and its logs read cleanly."""
        return not self.missing_instants and not self.problems

    def why_not_in_step(self) -> str:
        """A sentence saying why :attr:`in_step` is False (``""`` when it is True)."""
        parts = list(self.problems)
        if self.missing_instants:
            shown = ", ".join(self.missing_instants[:5])
            n = len(self.missing_instants)
            more = f" and {n - 5} more" if n > 5 else ""
            parts.append(
                f"data instant(s) {shown}{more} completed after the metadata table's bootstrap "
                f"({self.bootstrap_instant}) are not completed in it"
            )
        return "; ".join(parts)

    # -- listing --------------------------------------------------------------------------------
    def partitions(self) -> list[str]:
        """The data table's partitions (relative paths; ``.`` for a non-partitioned table),
        sorted: the live entries of the ``__all_partitions__`` record."""
        return sorted(p for p, (_, deleted) in self._partitions.items() if not deleted)

    def files(self, partition: str) -> list[FileInfo]:
        """The live files of ``partition`` (``.`` or ``""`` for a non-partitioned table), by
        name, with their sizes; paths relative to the data table's base path."""
        key = partition_id(partition.strip("/"))
        entries = self._files.get(key, {})
        prefix = "" if key == NON_PARTITIONED else key + "/"
        return [
            FileInfo(prefix + name, size, 0)
            for name, (size, deleted) in sorted(entries.items())
            if not deleted
        ]

    def file_count(self) -> int:
        """How many live files the ``files`` partition lists, over all partitions."""
        return sum(
            1 for entries in self._files.values() for _, deleted in entries.values() if not deleted
        )

    # -- reading the files partition ----------------------------------------------------------
    def _load(self) -> None:
        listed = self.storage.list_files(FILES_PARTITION)
        for s in files_slices(self.storage, self.timeline, FILES_PARTITION, listed):
            group = MetadataFileGroup(s.file_id, s)
            self.file_groups.append(group)
            self._merge_slice(group)
        # the files merged (path, listed size and mtime: MDT files are written once under
        # their name) and the blocks of them merged: equal fingerprints list the same files,
        # so what a caller derives from the listing may be kept per process by it
        fs_id = self.storage.shared_cache_id
        if fs_id is None:
            return
        info = {f.path: (self.storage.full_path(f.path), f.size, f.mtime_ms) for f in listed}
        parts = []
        for g in self.file_groups:
            files = [lf.path for lf in g.slice.log_files]
            if g.slice.base_file is not None:
                files.append(g.slice.base_file.path)
            parts.append((tuple(info[p] for p in files), tuple(g.blocks)))
        self.fingerprint = (fs_id, tuple(parts))

    def _done(self, instant_time: str) -> bool:
        return completed_or_archived(self.timeline, instant_time)

    def records(self) -> Records:
        """The merged ``files`` records as read, tombstones not yet merged away included:
        ``__all_partitions__`` and one record per partition (what an MDT compaction writes,
        once the tombstones are dropped)."""
        out: Records = {k: (FILE_LIST, dict(v)) for k, v in self._files.items()}
        out[ALL_PARTITIONS] = (PARTITION_LIST, dict(self._partitions))
        return out

    def _merge_slice(self, group: MetadataFileGroup) -> None:
        s = group.slice
        if s.base_file is not None:
            data = self.storage.read_bytes(s.base_file.path)
            hf = read_hfile(data, self.storage.full_path(s.base_file.path))
            schema = hf.file_info.get("schema", b"").decode("utf-8")
            self._apply(hf.keys, hf.values, schema, s.base_file.path)
        blocks: list[LogBlock] = []
        for lf in s.log_files:
            scan = scan_log_bytes(self.storage.read_bytes(lf.path), self.storage.full_path(lf.path))
            if scan.corrupt_blocks:
                self.problems.append(
                    f"{scan.corrupt_blocks} corrupt block(s) in metadata log {lf.path} "
                    f"(offsets {scan.corrupt_offsets})"
                )
            blocks.extend(scan.blocks)
        # rollback command blocks undo the earlier blocks of their target instant (Java
        # ``AbstractHoodieLogRecordScanner``)
        rolled_back = {b.target_instant_time for b in blocks if b.is_rollback_command}
        for b in blocks:
            name = b.path.rsplit("/", 1)[-1]
            t = b.instant_time or ""
            if b.block_type == BlockType.COMMAND:
                continue
            why = self._skip_reason(t, rolled_back)
            if why:
                group.skipped.append((name, t, why))
                continue
            if b.block_type == BlockType.HFILE_DATA:
                hf = read_hfile(b.content, f"{b.path} block at offset {b.offset}")
                schema = b.schema or hf.file_info.get("schema", b"").decode("utf-8")
                self._apply(hf.keys, hf.values, schema, b.path)
            elif b.block_type == BlockType.DELETE:
                keys = decode_delete_block(b).column(RECORD_KEY_METADATA_FIELD).to_pylist()
                self._delete_keys(k for k in keys if k is not None)
            else:
                raise CorruptFileError(
                    f"{b.path}: a {b.block_type.name} block at offset {b.offset} in the metadata "
                    "table's files partition (only HFILE_DATA and DELETE blocks belong there)"
                )
            group.blocks.append((name, t))

    def _skip_reason(self, instant_time: str, rolled_back: set[str | None]) -> str:
        if instant_time in rolled_back:
            return "rolled back by a command block"
        if not self._done(instant_time):
            return "not completed on the metadata timeline"
        if instant_time not in self.valid_instants:
            return "not a valid instant of the data timeline (pending or failed there)"
        return ""

    def _apply(self, keys: list[bytes], values: list[bytes], schema: str, where: str) -> None:
        if keys and not schema:
            raise CorruptFileError(f"{where}: metadata records without a writer schema")
        for k, v in zip(keys, values, strict=True):
            key = k.decode("utf-8")
            try:
                rtype, entries = decode_files_value(v, schema)
            except CorruptFileError as e:
                raise CorruptFileError(f"{where}: metadata record {key!r}: {e}") from e
            if key == ALL_PARTITIONS:
                if rtype != PARTITION_LIST:
                    raise CorruptFileError(
                        f"{where}: record {ALL_PARTITIONS!r} has type {rtype}, not {PARTITION_LIST}"
                    )
                self._partitions = merge_files(self._partitions, entries)
            elif rtype == FILE_LIST:
                self._files[key] = merge_files(self._files.get(key, {}), entries)
            else:
                raise CorruptFileError(
                    f"{where}: record {key!r} of the files partition has type {rtype} "
                    f"(expected {FILE_LIST})"
                )

    def _delete_keys(self, keys: Iterable[str]) -> None:
        for key in keys:
            if key == ALL_PARTITIONS:
                self._partitions = {}
            else:
                self._files.pop(key, None)


# ------------------------------------------------------------------------------------------
# Slicing the files partition (the one rule the MDT's reader and writer share)
# ------------------------------------------------------------------------------------------


def completed_or_archived(timeline: Timeline, instant_time: str) -> bool:
    """Completed on the MDT timeline, or older than where it starts (archived)."""
    return timeline.is_completed(instant_time) or timeline.is_before_start(instant_time)


def latest_file_slice(
    timeline: Timeline,
    file_id: str,
    bases: list[BaseFile],
    logs: list[LogFile],
    partition: str = FILES_PARTITION,
) -> FileSlice | None:
    """The latest slice of MDT file group ``file_id`` as of ``timeline``'s completed instants.

    The base: the newest base HFile whose instant is completed (or archived). Its log files:
    on timeline layout 1 (v6) those named with the base instant; on layout 2 (v8/v9) those
    whose deltacommit completed at or after the base instant was *requested* -- Java's
    ``HoodieFileGroup`` puts a log into the slice of the newest base instant <= the log's
    completion time (``getBaseInstantTime(completionTimeQueryView, logFile)``), so a
    deltacommit that completes while an MDT compaction runs belongs to the compaction's slice.
    """
    usable = [b for b in bases if completed_or_archived(timeline, b.instant_time)]
    base = max(usable, key=lambda b: b.instant_time, default=None)
    base_time = base.instant_time if base is not None else ""
    s = FileSlice(partition, file_id, base_time, base)
    for lf in logs:
        if timeline.layout_version >= 2:
            done = timeline.completion_time(lf.instant_time)
            if done is None or done < base_time:
                continue
            s.log_files.append(LogFile(lf.path, lf.name, lf.size, completion_time=done))
        elif lf.instant_time == base_time:
            s.log_files.append(lf)
    s.log_files.sort(key=LogFile.sort_key)
    return None if s.is_empty else s


def files_slices(
    storage: Storage,
    timeline: Timeline,
    partition: str = FILES_PARTITION,
    listed: Sequence[FileInfo] | None = None,
) -> list[FileSlice]:
    """The latest slice of every file group of MDT ``partition`` (default ``files``) of the MDT
    at ``storage`` (one listing, or ``listed``: the caller's), by file id."""
    bases: dict[str, list[BaseFile]] = {}
    logs: dict[str, list[LogFile]] = {}
    for f in storage.list_files(partition) if listed is None else listed:
        b = parse_base_file_name(f.name)
        if b is not None and b.extension == ".hfile":
            bases.setdefault(b.file_id, []).append(BaseFile(f.path, b, f.size))
            continue
        lg = parse_log_file_name(f.name)
        if lg is not None and lg.extension == "log" and not lg.cdc:
            logs.setdefault(lg.file_id, []).append(LogFile(f.path, lg, f.size))
    out = []
    for fid in sorted(set(bases) | set(logs)):
        s = latest_file_slice(timeline, fid, bases.get(fid, []), logs.get(fid, []), partition)
        if s is not None:
            out.append(s)
    return out


# ------------------------------------------------------------------------------------------
# The log blocks of an index partition's file slice
# ------------------------------------------------------------------------------------------


class SliceBlock(Protocol):
    """What :func:`counted_blocks` reads of a log block (a :class:`LogBlock`, or a decoded
    stand-in for one that a cache keeps)."""

    @property
    def block_type(self) -> BlockType: ...
    @property
    def instant_time(self) -> str | None: ...
    @property
    def target_instant_time(self) -> str | None: ...
    @property
    def is_rollback_command(self) -> bool: ...
    @property
    def path(self) -> str: ...
    @property
    def offset(self) -> int: ...


_Block = TypeVar("_Block", bound=SliceBlock)


def slice_log_blocks(storage: Storage, fslice: FileSlice) -> list[LogBlock]:
    """Every block of the log files of MDT file slice ``fslice``, in log order.

    Raises:
        CorruptFileError: a log file holds a corrupt region (an index partition is read
            whole or not at all: a lost block would drop or revive keys).
    """
    blocks: list[LogBlock] = []
    for lf in fslice.log_files:
        blocks.extend(read_log_blocks(storage, lf.path))
    return blocks


def read_log_blocks(storage: Storage, path: str) -> list[LogBlock]:
    """The blocks of one MDT log file (:func:`slice_log_blocks`)."""
    full = storage.full_path(path)
    scan = scan_log_bytes(storage.read_bytes(path), full)
    if scan.corrupt_blocks:
        raise CorruptFileError(f"{scan.corrupt_blocks} corrupt block(s) in metadata log {full}")
    return scan.blocks


def counted_blocks(
    blocks: Sequence[_Block], keep: Callable[[str], bool], partition: str
) -> list[_Block]:
    """The blocks of an index partition's slice that a reader merges, in order (Java
    ``AbstractHoodieLogRecordScanner``): not command blocks, not blocks of an instant a
    rollback command block of the slice undoes, and only blocks of the instants ``keep``
    accepts (completed and valid, :func:`valid_instants`).

    Raises:
        CorruptFileError: a block other than HFILE_DATA or DELETE (``partition`` is named).
    """
    rolled_back = {b.target_instant_time for b in blocks if b.is_rollback_command}
    out = []
    for b in blocks:
        t = b.instant_time or ""
        if b.block_type == BlockType.COMMAND or t in rolled_back or not keep(t):
            continue
        if b.block_type not in (BlockType.HFILE_DATA, BlockType.DELETE):
            raise CorruptFileError(
                f"{b.path}: a {b.block_type.name} block at offset {b.offset} in the metadata "
                f"table's {partition} partition (only HFILE_DATA and DELETE blocks belong there)"
            )
        out.append(b)
    return out


# ------------------------------------------------------------------------------------------
# Which instants count
# ------------------------------------------------------------------------------------------


def _rolled_back_by(data_timeline: Timeline, inst: Instant) -> list[str]:
    if inst.action == ROLLBACK:
        md = data_timeline.read_rollback_metadata(inst)
        targets = md.rolled_back_instants
        if not targets:  # an empty completed file: the plan names the instant
            try:
                plan = data_timeline.read_rollback_plan(inst)
            except InstantNotFoundError:
                return []
            if plan.instant_to_rollback is not None:
                targets = [plan.instant_to_rollback.commit_time]
        return [t for t in targets if t]
    restore = data_timeline.read_restore_metadata(inst)
    return [
        t
        for rms in restore.hoodie_restore_metadata.values()
        for rm in rms
        if rm is not None
        for t in rm.rolled_back_instants
    ]


def _valid_0x_suffix(instant_time: str) -> bool:
    """Java 0.x ``HoodieTableMetadataUtil.isValidInstant``: an MDT-only deltacommit (a data
    instant time plus an operation or partition-initialisation suffix)."""
    if len(instant_time) != _MILLIS_INSTANT_LENGTH + 3:
        return False
    suffix = instant_time[-3:]
    if suffix in _OPERATION_SUFFIXES:
        return True
    return suffix.isdigit() and int(suffix) >= _PARTITION_INIT_SUFFIX


def valid_instants(
    data_timeline: Timeline, mdt_timeline: Timeline, data_table_version: int
) -> frozenset[str]:
    """The instants whose MDT log blocks a reader merges.

    Java ``HoodieTableMetadataUtil.getValidInstantTimestamps``: the completed data instants;
    completed MDT deltacommits that are not pending on the data timeline (1.x; 0.x: only MDT-only
    deltacommits, recognised by their suffix); the instants rolled back by completed data
    rollbacks and restores newer than the earliest of those; the MDT's own completed rollbacks
    and restores; and its bootstrap deltacommits (times starting with ``SOLO_COMMIT_TIMESTAMP``).
    """
    valid = {i.requested_time for i in data_timeline.completed()}
    pending = {i.requested_time for i in data_timeline.pending()}
    for i in mdt_timeline.completed().filter_actions(DELTA_COMMIT):
        t = i.requested_time
        # 1.x: any MDT deltacommit whose data instant is not pending; 0.x: MDT-only ones, and
        # (unlike 0.x, which relies on archival waiting for an MDT compaction) the mirrors of
        # data instants archived since: archival only takes completed instants
        if data_table_version >= 8:
            ok = t not in pending
        else:
            ok = _valid_0x_suffix(t) or data_timeline.is_before_start(t)
        if ok or t.startswith(SOLO_COMMIT_TIMESTAMP):
            valid.add(t)
    earliest = min(valid) if valid else SOLO_COMMIT_TIMESTAMP
    for i in data_timeline.completed().filter_actions(ROLLBACK, RESTORE):
        if i.requested_time > earliest:
            valid.update(_rolled_back_by(data_timeline, i))
    mdt_undo = mdt_timeline.completed().filter_actions(ROLLBACK, RESTORE)
    valid.update(i.requested_time for i in mdt_undo)
    return frozenset(valid)


def bootstrap_covers(mdt_timeline: Timeline) -> Callable[[Instant], bool]:
    """Whether the bootstrap of the MDT with timeline ``mdt_timeline`` (the first completed
    instant on its active timeline) covers completed data instant ``i``; the one rule the
    reader (:func:`lagging_instants`) and the writer's catch-up share.

    * a bootstrap named after a data instant (Java names it ``<latest completed data
      instant><3-digit suffix>`` when it creates the MDT of a table that has commits), or the
      first instant left after MDT archival: the data instants up to that time;
    * a synthetic bootstrap (``00000000000000010`` / ``00000000000000000``, Java's
      ``SOLO_COMMIT_TIMESTAMP`` + suffix): on timeline layout 2 the data instants that
      completed before it did (completion times); on layout 1 (no completion times) those
      requested before the first data instant the MDT mirrors -- every later one is mirrored
      by the writer's hook, so a bootstrap with nothing mirrored yet covers the table.

    An MDT without a completed instant covers nothing.
    """
    done = mdt_timeline.completed()
    first = done.first()
    if first is None:
        return lambda _i: False
    start = first.requested_time
    if not start.startswith(SOLO_COMMIT_TIMESTAMP):
        return lambda i: i.requested_time <= start
    if mdt_timeline.layout_version >= 2 and first.completion_time:
        boot_done = first.completion_time
        return lambda i: (i.completion_time or i.requested_time) < boot_done
    real = [
        i.requested_time for i in done if not i.requested_time.startswith(SOLO_COMMIT_TIMESTAMP)
    ]
    floor = min(real) if real else None
    return lambda i: floor is None or i.requested_time < floor


def lagging_instants(data_timeline: Timeline, mdt_timeline: Timeline) -> list[str]:
    """Completed file-changing data instants the MDT does not cover, oldest first: those its
    bootstrap does not cover (:func:`bootstrap_covers`) that have no completed MDT instant of
    the same time (any action: the MDT mirrors data instant T as deltacommit T, or as
    rollback T of its own deltacommit for a rolled-back instant)."""
    covered = bootstrap_covers(mdt_timeline)
    mirrored = {i.requested_time for i in mdt_timeline.completed()}
    return [
        i.requested_time
        for i in data_timeline.completed()
        if i.action in FILE_CHANGING_ACTIONS and i.requested_time not in mirrored and not covered(i)
    ]
