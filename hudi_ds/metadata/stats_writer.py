"""Keeping the ``column_stats`` and ``partition_stats`` partitions of a metadata table in step.

:class:`StatsIndex` is the part of :class:`hudi_ds.metadata.writer.MetadataWriter` that owns
these two partitions. For each data instant the writer mirrors it computes the records the
instant implies (:meth:`StatsIndex.records`, Java ``HoodieTableMetadataUtil.
convertMetadataToRecords`` for commits, cleans, rollbacks and restores) and lays them out as one
log file per MDT file group that receives records (:meth:`StatsIndex.log_files`), which the
writer's deltacommit writes beside its ``files`` log; on an MDT compaction it writes each file
group's merged records as a new base HFile (:meth:`StatsIndex.compaction_files`).

Which partitions: those the table declares (``hoodie.table.metadata.partitions``), unless
``hoodie.metadata.index.column.stats.enable`` / ``...partition.stats.enable`` is false, which
removes them (Java drops a disabled index partition). Partition stats need column stats (Java
checks it) and a partitioned table.

Records (see :mod:`hudi_ds.metadata.column_stats` for their format):

* commit, deltacommit, replacecommit, compaction: ``column_stats`` of every file written
  (a log file: the records of the instant's blocks only, as Java's append handle counts them)
  and the ``partition_stats`` of every partition written, recomputed from the partition's
  latest file slices with the instant's files (:func:`hudi_ds.metadata.stats_build.
  partition_ranges`); a delete_partition tombstones the partition's records;
* clean: ``column_stats`` tombstones of the deleted files;
* rollback (the Hudi 0.x way, or on 1.x when the rolled-back deltacommit is compacted) and
  restore: tombstones of the deleted files.

File groups: ``col-stats-NNNN-0`` and ``partition-stats-NNNN-0``; a key goes to file group
``abs(abs(hash) % n)`` of Java's ``String.hashCode`` (``HoodieTableMetadataUtil.
mapRecordKeyToFileGroupIndex``), ``n`` the partition's file group count.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

import pyarrow as pa

from hudi_ds.errors import CorruptFileError
from hudi_ds.layout.hfile import write_hfile
from hudi_ds.layout.naming import (
    PARTITION_METADATA_FILE,
    base_file_name,
    file_name_of,
    parse_base_file_name,
    parse_log_file_name,
)
from hudi_ds.log.writer import encode_hfile_data_block
from hudi_ds.metadata.column_stats import (
    COLUMN_STATS,
    COLUMN_STATS_PARTITION,
    PARTITION_STATS,
    PARTITION_STATS_PARTITION,
    ColumnRange,
    ValueType,
    column_stats_key,
    encode_stats_value,
    partition_stats_key,
    range_of_record,
    reencode_stats,
)
from hudi_ds.metadata.layout import MDT_WRITE_TOKEN
from hudi_ds.metadata.mdt_files import (
    mdt_base_hfile,
    mdt_write_stat,
    next_log_name,
    older_slices_files,
)
from hudi_ds.metadata.reader import files_slices
from hudi_ds.metadata.record_index import file_group_indexes
from hudi_ds.metadata.stats_build import (
    file_instant,
    file_ranges,
    fold_ranges,
    index_definition_columns,
    indexed_columns,
    partition_ranges,
    record_index_definition,
)
from hudi_ds.metadata.stats_cache import file_range_cache, partition_fold_cache, table_key
from hudi_ds.metadata.stats_reader import StatsRecords, read_stats_partition
from hudi_ds.schema.avro import avro_to_arrow_schema
from hudi_ds.storage import Storage
from hudi_ds.storage_types import FileInfo
from hudi_ds.timeline.instant import (
    CLEAN,
    CLUSTERING,
    COMMIT,
    COMPACTION,
    DELTA_COMMIT,
    LOG_COMPACTION,
    REPLACE_COMMIT,
    RESTORE,
    ROLLBACK,
    Instant,
    State,
)
from hudi_ds.timeline.metadata import CommitMetadata, WriteStat
from hudi_ds.timeline.plans import CleanMetadata, RestoreMetadata, RollbackMetadata
from hudi_ds.timeline.timeline import Timeline
from hudi_ds.timeline.view import TableState
from hudi_ds.timeline.writer import TimelineWriter

__all__ = [
    "STATS_PARTITIONS",
    "MdtFile",
    "SliceFiles",
    "Slices",
    "StatsIndex",
    "StatsOptions",
    "Written",
    "file_group_index",
]

log = logging.getLogger("hudi_ds.metadata")

STATS_PARTITIONS = (COLUMN_STATS_PARTITION, PARTITION_STATS_PARTITION)
_PREFIX = {COLUMN_STATS_PARTITION: "col-stats", PARTITION_STATS_PARTITION: "partition-stats"}
_TYPE = {COLUMN_STATS_PARTITION: COLUMN_STATS, PARTITION_STATS_PARTITION: PARTITION_STATS}
# Java HoodieMetadataConfig bloom filter of MDT base files: DYNAMIC_V0, 10000 keys, fpp 1e-9
_COMMITS = frozenset({COMMIT, DELTA_COMMIT, REPLACE_COMMIT, COMPACTION, LOG_COMPACTION, CLUSTERING})

SliceFiles = Mapping[str, Mapping[str, Sequence[str]]]
"""Per data partition, file id -> the file names of its latest committed file slice (base
file first, then logs)."""

Slices = Callable[[TableState, Sequence[str]], SliceFiles]
"""``slices(state, partitions)``: the :data:`SliceFiles` of ``partitions`` (every partition
when empty), listed now."""

Records = dict[str, dict[str, bytes]]
"""MDT partition -> record key -> HFile value."""


@dataclass(frozen=True)
class Written:
    """What the writer of data instant ``instant_time`` knows at its commit point, handed to
    :meth:`StatsIndex.offer` so that the instant's records are made without reading or
    listing it again (Java's metadata writer takes the column stats from the write stats:
    ``HoodieTableMetadataUtil.translateWriteStatToColumnStats`` uses
    ``HoodieWriteStat.getColumnStats`` when present; the slices and the commit metadata are
    what the writer has at hand already, so the records are the same).

    Attributes:
        instant_time: the data instant.
        columns: the columns ``ranges`` cover.
        ranges: per ``(partition, file name)`` of a file the instant wrote, the column ranges
            its write handle computed from the rows in memory.
        slices: the latest committed slices, before the instant, of partitions it writes,
            from the listing its writer made -- still the committed ones (the writer checked
            that nothing completed since).
        content: the instant's completed file content, and ``metadata`` the commit metadata
            it was serialized from (not parsed again).
    """

    instant_time: str
    columns: tuple[str, ...]
    ranges: Mapping[tuple[str, str], Sequence[ColumnRange]]
    slices: SliceFiles = dataclasses.field(default_factory=dict)
    content: bytes | None = None
    metadata: CommitMetadata | None = None


_NOTHING = Written("", (), {})


@dataclass(frozen=True)
class MdtFile:
    """A file an MDT instant writes: its path in the MDT, bytes, and write stat."""

    path: str
    data: bytes
    stat: WriteStat


@dataclass(frozen=True)
class StatsOptions:
    """The writer's options for the two partitions (Java ``HoodieMetadataConfig``).

    Attributes:
        column_stats: ``hoodie.metadata.index.column.stats.enable`` (None: keep what the
            table has).
        partition_stats: ``hoodie.metadata.index.partition.stats.enable``.
        column_list: ``hoodie.metadata.index.column.stats.column.list``.
        max_columns: ``hoodie.metadata.index.column.stats.max.columns.to.index``.
        column_stats_file_groups: ``hoodie.metadata.index.column.stats.file.group.count``.
        partition_stats_file_groups: ``...partition.stats.file.group.count``.
    """

    column_stats: bool | None = None
    partition_stats: bool | None = None
    column_list: tuple[str, ...] = ()
    max_columns: int = 32
    column_stats_file_groups: int = 2
    partition_stats_file_groups: int = 1

    def wanted(self, partitioned: bool) -> list[str]:
        """The stats partitions these options ask for (partition stats need column stats
        and a partitioned table)."""
        out = [COLUMN_STATS_PARTITION] if self.column_stats else []
        if self.column_stats is not False and self.partition_stats and partitioned:
            out.append(PARTITION_STATS_PARTITION)
        return out

    def wanted_by_new_table(self, partitioned: bool, table_version: int) -> list[str]:
        """The stats partitions a new metadata table gets when the options leave them unset:
        on table versions 8 and 9 column stats, and partition stats for a partitioned table,
        as Hudi 1.x's Spark writer (``HoodieMetadataConfig.Builder.getDefaultColStatsEnable
        (SPARK)`` is true; ``isPartitionStatsIndexEnabled`` returns the column stats flag,
        ``hoodie.metadata.index.partition.stats.enable`` being deprecated for it); none on
        version 6 (Hudi 0.x: off). Either option set to false keeps its partition out."""
        if table_version < 8 or self.column_stats is False:
            return []
        out = [COLUMN_STATS_PARTITION]
        if partitioned and self.partition_stats is not False:
            out.append(PARTITION_STATS_PARTITION)
        return out


def file_group_index(key: str, groups: int) -> int:
    """Java ``HoodieTableMetadataUtil.mapRecordKeyToFileGroupIndex``: ``String.hashCode`` of
    the key (UTF-16 code units), ``abs(abs(h) % n)``."""
    h = 0
    data = key.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + int.from_bytes(data[i : i + 2], "big")) & 0xFFFFFFFF
    signed = h - (1 << 32) if h >= 1 << 31 else h
    # Java: Math.abs(Integer.MIN_VALUE) stays negative; % keeps the sign of the dividend
    a = signed if signed == -(1 << 31) else abs(signed)
    r = abs(a) % groups if a >= 0 else -(abs(a) % groups)
    return abs(r)


def _by_group(keys: Iterable[str], ids: Sequence[str]) -> list[tuple[str, str]]:
    """``(file group id, key)`` of each key: the MDT file group among ``ids`` it goes to."""
    keys = list(keys)
    if not keys:
        return []
    if len(ids) == 1:  # (partition_stats has one by default: no key to hash)
        return [(ids[0], k) for k in keys]
    indexes = file_group_indexes(pa.array(keys, pa.string()), len(ids)).tolist()
    return [(ids[i], k) for i, k in zip(indexes, keys, strict=True)]


class StatsIndex:
    """The ``column_stats`` / ``partition_stats`` side of the MDT writer.

    Args:
        state: the opened data table.
        storage: the metadata table's storage.
        options: :class:`StatsOptions`.
        slices: the data table's latest committed file slices (the write layer computes
            them: this layer may not import the file-system view).
    """

    def __init__(
        self, state: TableState, storage: Storage, options: StatsOptions, slices: Slices
    ) -> None:
        self.state = state
        self.storage = storage
        self.options = options
        self.slices = slices
        self._columns: dict[str | None, list[str]] = {}
        self._indexed_records: StatsRecords | None = None
        self._indexed_keys: set[str] | None = None  # the records _indexed may be asked for
        self._mdt: Timeline | None = None
        # what the writer of the instant being mirrored knows (offer)
        self._offered = _NOTHING
        # partition -> its files and its file groups, listed once per mirrored instant
        # (forget_file_groups)
        self._listed: dict[str, list[FileInfo]] = {}
        self._ids: dict[str, list[str]] = {}

    # -- which partitions -------------------------------------------------------------------
    def maintained(self, declared: Sequence[str]) -> list[str]:
        """The stats partitions of ``declared`` this writer keeps in step (the others of
        :data:`STATS_PARTITIONS` it removes: disabled by their option, or without file
        groups)."""
        out = []
        for name, flag in (
            (COLUMN_STATS_PARTITION, self.options.column_stats),
            (PARTITION_STATS_PARTITION, self.options.partition_stats),
        ):
            # a declared partition without file groups cannot be kept (nor read): removed
            if name in declared and flag is not False and self._file_ids(name):
                out.append(name)
        if COLUMN_STATS_PARTITION not in out and PARTITION_STATS_PARTITION in out:
            out.remove(PARTITION_STATS_PARTITION)  # Java: partition stats need column stats
        return out

    def forget_file_groups(self) -> None:
        """Let the next :meth:`_file_ids` and :meth:`log_files` list the partitions again:
        the metadata writer calls it before it mirrors an instant (a build, a drop or a crash
        recovery may have changed the file groups since) and after an MDT clean (which
        follows every MDT compaction: the slices changed); within one instant the files stay
        otherwise, so the instant's checks and log files list each partition once."""
        self._listed.clear()
        self._ids.clear()

    def _files(self, partition: str) -> list[FileInfo]:
        """The files of MDT partition ``partition`` (none when it has no folder)."""
        got = self._listed.get(partition)
        if got is None:
            got = self._listed[partition] = self.storage.list_files(partition)
        return got

    def _file_ids(self, partition: str) -> list[str]:
        """The file groups of MDT partition ``partition`` (none when it has no folder)."""
        got = self._ids.get(partition)
        if got is not None:
            return got
        ids = set()
        for f in self._files(partition):
            p = parse_base_file_name(f.name) or parse_log_file_name(f.name)
            if p is not None and p.file_id.startswith(_PREFIX[partition]):
                ids.add(p.file_id)
        self._ids[partition] = sorted(ids)
        return self._ids[partition]

    def delete_logs(self, instants: set[str]) -> list[str]:
        """Delete the stats log files of MDT deltacommits ``instants`` (layout 2: named with
        their instant), as an MDT rollback undoes them; the deleted paths."""
        out = []
        self.forget_file_groups()
        for partition in STATS_PARTITIONS:
            if not self.storage.is_dir(partition):
                continue
            for f in self.storage.list_files(partition):
                lf = parse_log_file_name(f.name)
                path = f"{partition}/{f.name}"
                if lf is not None and lf.instant_time in instants and self.storage.delete(path):
                    out.append(path)
        self.forget_file_groups()
        return out

    def older_files(self, mdt: Timeline) -> dict[str, list[str]]:
        """Per stats partition, the files of slices older than each file group's two latest
        (what an MDT clean deletes)."""
        out: dict[str, list[str]] = {}
        for partition in STATS_PARTITIONS:
            ids = self._file_ids(partition)
            names = [f.name for f in self.storage.list_files(partition)] if ids else []
            doomed = [n for fid in ids for n in older_slices_files(mdt, names, fid)]
            if doomed:
                out[partition] = sorted(doomed)
        return out

    # -- which columns ----------------------------------------------------------------------
    def columns(self, schema_json: str | None) -> list[str]:
        """The indexed columns: the index definition's, else Java's rule over the table's
        schema (``schema_json``: the commit's Avro writer schema)."""
        if not schema_json:
            return index_definition_columns(self.state.config, self.state.storage) or []
        if schema_json not in self._columns:
            self._columns[schema_json] = indexed_columns(
                self.state.config,
                self.state.storage,
                avro_to_arrow_schema(json.loads(schema_json)),
                column_list=self.options.column_list,
                max_columns=self.options.max_columns,
            )
        return self._columns[schema_json]

    # -- records of an instant --------------------------------------------------------------
    def offer(self, written: Written) -> None:
        """What the writer of ``written.instant_time`` knows of it (:class:`Written`): the
        records of that instant are made from it. Files without offered ranges, partitions
        without offered slices, and other instants (services, rollbacks) are read and
        listed."""
        self._offered = written

    def offered_metadata(self, instant_time: str, content: bytes) -> CommitMetadata | None:
        """The commit metadata the writer of ``instant_time`` offered, when ``content`` is what
        it was serialized to (None: parse the content)."""
        o = self._offered
        if o.instant_time == instant_time and o.content is not None and o.content == content:
            return o.metadata
        return None

    def _written_ranges(
        self, instant_time: str, partition: str, name: str, columns: Sequence[str]
    ) -> list[ColumnRange]:
        """A written file's ranges: offered by its handle, else read from the file."""
        o = self._offered
        got = o.ranges.get((partition, name)) if o.instant_time == instant_time else None
        if got is not None and o.columns == tuple(columns):
            return list(got)
        return file_ranges(self.state.storage, partition, name, columns, instant_time)

    def records(
        self,
        instant_time: str,
        action: str,
        content: bytes,
        partitions: Sequence[str],
        schema: str,
        mdt: Timeline,
    ) -> Records:
        """The stats records data instant ``instant_time`` implies, per MDT partition in
        ``partitions`` (the maintained ones), encoded with record schema ``schema``; ``mdt``:
        the MDT's timeline (the column stats already there)."""
        if not partitions:
            return {}
        self._mdt = mdt
        self._indexed_records = None
        self._indexed_keys = None
        if action in _COMMITS:
            md = self.offered_metadata(instant_time, content)
            if md is None:
                md = CommitMetadata.from_bytes(content)
            return self._commit_records(instant_time, md, partitions, schema)
        deleted: dict[str, set[str]] = {}
        if action == CLEAN:
            for key, cpm in CleanMetadata.from_bytes(content).partition_metadata.items():
                part = cpm.partition_path or key
                deleted.setdefault(part, set()).update(
                    file_name_of(n) for n in cpm.delete_path_patterns
                )
        elif action in (ROLLBACK, RESTORE):
            rollbacks = (
                [RollbackMetadata.from_bytes(content)]
                if action == ROLLBACK
                else [
                    rb
                    for rbs in RestoreMetadata.from_bytes(content).hoodie_restore_metadata.values()
                    for rb in rbs
                    if rb is not None
                ]
            )
            for rb in rollbacks:
                for key, pm in rb.partition_metadata.items():
                    part = pm.partition_path if pm.partition_path is not None else key
                    deleted.setdefault(part, set()).update(
                        file_name_of(p) for p in pm.success_delete_files
                    )
        return self._tombstones(deleted, partitions, schema)

    def _tombstones(
        self, deleted: Mapping[str, set[str]], partitions: Sequence[str], schema: str
    ) -> Records:
        columns = self._known_columns()
        if COLUMN_STATS_PARTITION not in partitions or not columns:
            return {}
        out: dict[str, bytes] = {}
        for part, names in deleted.items():
            file_range_cache.forget(table_key(self.state.storage), part, names)
            for name in sorted(names):
                if parse_base_file_name(name) is None and parse_log_file_name(name) is None:
                    continue
                for col in columns:
                    stub = ColumnRange(name, col, None, None, 0, 0, 0, 0, ValueType.NULL)
                    out[column_stats_key(col, part, name)] = encode_stats_value(
                        COLUMN_STATS, stub, schema, deleted=True
                    )
        return {COLUMN_STATS_PARTITION: out} if out else {}

    def _known_columns(self) -> list[str]:
        """The indexed columns when no commit schema is at hand (a clean or rollback): the
        index definition's, else those of the table's latest schema."""
        return self.columns(self.state.latest_avro_schema())

    def _commit_records(
        self, instant_time: str, md: CommitMetadata, partitions: Sequence[str], schema: str
    ) -> Records:
        columns = self.columns(md.extra_metadata.get("schema"))
        if not columns:
            return {}
        col_out: dict[str, bytes] = {}
        written: dict[str, list[tuple[str, str]]] = {}  # partition -> (file id, file name)
        file_ranges_of: dict[tuple[str, str], list[ColumnRange]] = {}
        for part, stats in md.partition_to_write_stats.items():
            for st in stats:
                if not st.path:
                    continue
                name = file_name_of(st.path)
                ranges = self._written_ranges(instant_time, part, name, columns)
                file_ranges_of[(part, name)] = ranges
                self._remember(part, name, ranges)
                written.setdefault(part, []).append((st.file_id or "", name))
                for r in ranges:
                    col_out[column_stats_key(r.column, part, name)] = encode_stats_value(
                        COLUMN_STATS, r, schema
                    )
        offered, self._offered = self._offered, _NOTHING
        out: Records = {COLUMN_STATS_PARTITION: col_out} if col_out else {}
        if PARTITION_STATS_PARTITION in partitions and self.state.config.partition_fields:
            listed = offered.slices if offered.instant_time == instant_time else {}
            part_out = self._partition_records(md, written, file_ranges_of, columns, schema, listed)
            if part_out:
                out[PARTITION_STATS_PARTITION] = part_out
        return out

    def _partition_records(
        self,
        md: CommitMetadata,
        written: Mapping[str, list[tuple[str, str]]],
        known: Mapping[tuple[str, str], list[ColumnRange]],
        columns: Sequence[str],
        schema: str,
        listed: SliceFiles,
    ) -> dict[str, bytes]:
        out: dict[str, bytes] = {}
        if md.is_replace and (md.operation_type or "").upper() == "DELETE_PARTITION":
            for part in md.partition_to_replace_file_ids:
                for col in columns:
                    stub = ColumnRange(part, col, None, None, 0, 0, 0, 0, ValueType.NULL)
                    out[partition_stats_key(col, part)] = encode_stats_value(
                        PARTITION_STATS, stub, schema, deleted=True, tight_bound=True
                    )
            return out
        if not written:
            return out
        unlisted = [p for p in written if p not in listed]
        committed = {**listed, **(self.slices(self.state, unlisted) if unlisted else {})}
        slices: dict[str, list[str]] = {}  # partition -> the file names of its latest slices
        for part, files in written.items():
            groups = {fid: list(names) for fid, names in committed.get(part, {}).items()}
            for fid, name in files:
                if parse_base_file_name(name) is not None:
                    groups[fid or name] = [name]  # a new base file starts the group's slice
                else:
                    groups.setdefault(fid or name, []).append(name)
            slices[part] = list(dict.fromkeys(n for names in groups.values() for n in names))
        # the fold of each partition goes on from the one an earlier commit of this process
        # left (its files are the first ones of the list); the ranges of the other files the
        # commit did not write: remembered, else read from the MDT (only those records)
        table = table_key(self.state.storage)
        version = self.state.config.table_version
        cols = tuple(columns)
        plan: dict[str, tuple[dict[str, ColumnRange], list[str], list[str]]] = {}
        for part, names in slices.items():
            ordered = sorted(names, key=file_instant)
            start, folded = partition_fold_cache.get(table, part, cols, ordered)
            plan[part] = (start, ordered[:folded], ordered[folded:])
        have: dict[tuple[str, str], list[ColumnRange]] = {}
        for part, (_, _, rest) in plan.items():
            for n in rest:
                got = known.get((part, n)) or file_range_cache.get(table, part, n, columns)
                if got:
                    have[(part, n)] = list(got)
        self._indexed_keys = {
            column_stats_key(c, part, n)
            for part, (_, _, rest) in plan.items()
            for n in rest
            if (part, n) not in have
            for c in columns
        }
        for part, (start, done, rest) in plan.items():
            ranges: list[ColumnRange] = []
            for n in rest:
                got = have.get((part, n))
                if got is None:
                    got = self._indexed(part, n, columns) or file_ranges(
                        self.state.storage, part, n, columns
                    )
                    self._remember(part, n, got)
                ranges.extend(got)
            merged = fold_ranges(part, start, ranges)
            partition_fold_cache.put(table, part, cols, done + rest, merged, version)
            for c in columns:
                if c in merged:
                    out[partition_stats_key(c, part)] = encode_stats_value(
                        PARTITION_STATS, merged[c], schema, tight_bound=True
                    )
        return out

    def _remember(self, partition: str, name: str, ranges: Sequence[ColumnRange]) -> None:
        file_range_cache.put(
            table_key(self.state.storage),
            partition,
            name,
            ranges,
            self.state.config.table_version,
        )

    def _indexed(self, partition: str, name: str, columns: Sequence[str]) -> list[ColumnRange]:
        """The ranges of a file from the column stats already in the metadata table (Java
        reads them by key prefix), [] when it has none for every column."""
        if self._indexed_records is None:
            if self._mdt is None:
                return []
            self._indexed_records = read_stats_partition(
                self.storage,
                self._mdt,
                self.state.timeline,
                self.state.config.table_version,
                COLUMN_STATS_PARTITION,
                wanted=None if self._indexed_keys is None else self._indexed_keys.__contains__,
            )
        out = []
        for col in columns:
            rec = self._indexed_records.get(column_stats_key(col, partition, name))
            if rec is None or rec.get("isDeleted"):
                return []
            out.append(range_of_record(rec))
        return out

    # -- laying records out -----------------------------------------------------------------
    def log_files(
        self, instant_time: str, records: Records, mdt: Timeline, schema: str
    ) -> list[MdtFile]:
        """One log file per MDT file group that receives records: one HFILE_DATA block of the
        group's records, named as the ``files`` log of the instant (layout 2: a new log file
        named with the instant; layout 1: the next version in the group's latest slice)."""
        out: list[MdtFile] = []
        for partition, recs in sorted(records.items()):
            ids = self._file_ids(partition)
            if not ids or not recs:
                continue
            listed = self._files(partition)
            slices = {s.file_id: s for s in files_slices(self.storage, mdt, partition, listed)}
            by_group: dict[str, dict[str, bytes]] = {}
            for fid, key in _by_group(recs, ids):
                by_group.setdefault(fid, {})[key] = recs[key]
            for fid, group in sorted(by_group.items()):
                sl = slices.get(fid)
                if sl is None:
                    raise CorruptFileError(f"metadata table: {partition}/{fid} has no file slice")
                keys = sorted(group, key=lambda k: k.encode("utf-8"))
                hfile = write_hfile(
                    [k.encode("utf-8") for k in keys],
                    [group[k] for k in keys],
                    file_info={"schema": schema.encode("utf-8")},
                )
                block = encode_hfile_data_block(instant_time, schema, hfile)
                names = [file_name_of(lf.path) for lf in sl.log_files]
                name = next_log_name(
                    mdt.layout_version, fid, sl.base_instant_time, instant_time, names
                )
                logs = [*names, name]
                base = file_name_of(sl.base_file.path) if sl.base_file is not None else None
                stat = mdt_write_stat(
                    partition,
                    fid,
                    name,
                    len(block),
                    len(keys),
                    sl.base_instant_time,
                    base,
                    logs,
                )
                out.append(MdtFile(f"{partition}/{name}", block, stat))
        return out

    def build(
        self,
        partitions: Sequence[str],
        instant_time: str,
        writer: TimelineWriter,
        schema: str,
        committed: Iterable[tuple[str, str, int]],
    ) -> dict[str, str]:
        """Create stats ``partitions`` as MDT deltacommit ``instant_time`` (Java
        ``HoodieBackedTableMetadataWriter.initializeFromFilesystem`` for an index partition):
        one base HFile per file group holding its records -- column stats of every committed
        file (``committed``: ``(partition, name, size)``), partition stats of the latest file
        slices -- and the column_stats index definition (its columns). The caller then
        declares them in ``hoodie.properties``, with the returned entries.

        Raises:
            CorruptFileError: the instant exists.
        """
        groups = {
            COLUMN_STATS_PARTITION: self.options.column_stats_file_groups,
            PARTITION_STATS_PARTITION: self.options.partition_stats_file_groups,
        }
        columns = self.columns(self.state.latest_avro_schema())
        records = self._initial_records(partitions, columns, committed, schema)
        req = Instant(instant_time, DELTA_COMMIT, State.REQUESTED)
        if not writer.create_requested(req):
            raise CorruptFileError(f"metadata table: instant {instant_time} exists")
        files: list[MdtFile] = []
        for partition in partitions:
            ids = [f"{_PREFIX[partition]}-{i:04d}-0" for i in range(groups[partition])]
            by_group: dict[str, dict[str, bytes]] = {fid: {} for fid in ids}
            for fid, key in _by_group(records[partition], ids):
                by_group[fid][key] = records[partition][key]
            for fid in ids:
                name = base_file_name(fid, MDT_WRITE_TOKEN, instant_time, ".hfile")
                data = _base_hfile_of_values(by_group[fid], schema)
                stat = mdt_write_stat(
                    partition, fid, name, len(data), len(by_group[fid]), instant_time
                )
                files.append(MdtFile(f"{partition}/{name}", data, stat))
        md = CommitMetadata(operation_type="UPSERT_PREPPED")
        for f in files:
            md.partition_to_write_stats.setdefault(f.stat.partition_path or "", []).append(f.stat)
        layout = writer.layout_version
        writer.transition_to_inflight(req, md.to_bytes(layout))
        for partition in partitions:
            self.storage.makedirs(partition)
            self.storage.write_bytes(
                f"{partition}/{PARTITION_METADATA_FILE}",
                f"#partition metadata\ncommitTime={instant_time}\npartitionDepth=1\n".encode(),
            )
        for f in files:
            self.storage.write_bytes(f.path, f.data)
        writer.complete(req, md.to_bytes(layout))
        self.forget_file_groups()
        updates = (
            record_index_definition(self.state.config, self.state.storage, columns)
            if columns and COLUMN_STATS_PARTITION in partitions
            else {}
        )
        log.info(
            "%s: built metadata table partitions %s (%d records)",
            self.state.storage.base_uri,
            ", ".join(partitions),
            sum(len(records[p]) for p in partitions),
        )
        return updates

    def _initial_records(
        self,
        partitions: Sequence[str],
        columns: Sequence[str],
        committed: Iterable[tuple[str, str, int]],
        schema: str,
    ) -> Records:
        """The records a built partition starts with: column stats of every committed file,
        partition stats of every partition's latest slices."""
        ranges = {
            (part, name): file_ranges(self.state.storage, part, name, columns)
            for part, name, _ in committed
        }
        records: Records = {COLUMN_STATS_PARTITION: {}, PARTITION_STATS_PARTITION: {}}
        for (part, name), rs in ranges.items():
            for r in rs:
                records[COLUMN_STATS_PARTITION][column_stats_key(r.column, part, name)] = (
                    encode_stats_value(COLUMN_STATS, r, schema)
                )
        slices = self.slices(self.state, ()) if PARTITION_STATS_PARTITION in partitions else {}
        for part, by_id in slices.items():
            names = [n for ns in by_id.values() for n in ns]
            latest = [
                r
                for n in names
                for r in ranges.get((part, n)) or file_ranges(self.state.storage, part, n, columns)
            ]
            for r in partition_ranges(part, latest, columns):
                records[PARTITION_STATS_PARTITION][partition_stats_key(r.column, part)] = (
                    encode_stats_value(PARTITION_STATS, r, schema, tight_bound=True)
                )
        return records

    def compaction_files(self, when: str, mdt: Timeline, schema: str) -> list[MdtFile]:
        """The new base HFile of every stats file group, holding its merged records without
        tombstones (Java compacts every MDT file group at once)."""
        out: list[MdtFile] = []
        for partition in STATS_PARTITIONS:
            ids = self._file_ids(partition)
            if not ids:
                continue
            merged = read_stats_partition(
                self.storage, mdt, self.state.timeline, self.state.config.table_version, partition
            )
            slices = {s.file_id: s for s in files_slices(self.storage, mdt, partition)}
            groups: dict[str, dict[str, dict]] = {fid: {} for fid in ids}
            live = [k for k, stats in merged.items() if not stats.get("isDeleted")]
            for fid, key in _by_group(live, ids):
                groups[fid][key] = merged[key]
            for fid in ids:
                name = base_file_name(fid, MDT_WRITE_TOKEN, when, ".hfile")
                data = _base_hfile(groups[fid], _TYPE[partition], schema, name)
                sl = slices.get(fid)
                prev = sl.base_instant_time if sl is not None else when
                stat = mdt_write_stat(partition, fid, name, len(data), len(groups[fid]), prev)
                out.append(MdtFile(f"{partition}/{name}", data, stat))
        return out


def _base_hfile(records: Mapping[str, dict], record_type: int, schema: str, name: str) -> bytes:
    """A stats base HFile: records re-encoded (each naming the file in ``_hoodie_file_name``),
    a bloom filter of the keys and the min/max record keys, as Java's MDT base files."""
    values = {k: reencode_stats(record_type, v, schema, file_name=name) for k, v in records.items()}
    return _base_hfile_of_values(values, schema)


def _base_hfile_of_values(records: Mapping[str, bytes], schema: str) -> bytes:
    keys = sorted(records, key=lambda k: k.encode("utf-8"))
    return mdt_base_hfile([k.encode("utf-8") for k in keys], [records[k] for k in keys], schema)
