"""Installing the metadata table's writer on a writer's table state.

:func:`install_metadata_writer` sets :attr:`TableState.before_complete` to
:meth:`MetadataWriter.update`, so that every instant the write client, its table services and
its rollbacks complete through that state is mirrored in the metadata table first.
:func:`committed_listing` gives the MDT its bootstrap listing from the file-system view (the
metadata layer sits below the table layer).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Iterable, Iterator, Sequence

import pyarrow as pa

from hudi_ds.config import ConcurrencyConfig, Options, WriteConfig
from hudi_ds.errors import UnsupportedError
from hudi_ds.layout.file_group import FileSlice
from hudi_ds.layout.naming import file_name_of
from hudi_ds.metadata.bloom_filters import BloomOptions
from hudi_ds.metadata.column_stats import COLUMN_STATS_PARTITION
from hudi_ds.metadata.record_index import SliceKeys
from hudi_ds.metadata.records import FILES_PARTITION
from hudi_ds.metadata.stats_writer import StatsOptions, Written
from hudi_ds.metadata.writer import MetadataWriter
from hudi_ds.schema.meta import RECORD_KEY_METADATA_FIELD
from hudi_ds.table.fs_view import FileSystemView
from hudi_ds.table.reader import ReadStats, read_file_slice
from hudi_ds.table.table import ReadableTable
from hudi_ds.timeline.metadata import CommitMetadata
from hudi_ds.timeline.view import TableState, Visibility
from hudi_ds.write.record_index_options import (
    partitioned_record_index_sizing,
    record_index_choice,
    record_index_sizing,
)
from hudi_ds.write.write_status import WriteStatus

log = logging.getLogger("hudi_ds.write")


def committed_listing(state: TableState) -> list[tuple[str, str, int]]:
    """``(partition, file name, size)`` of every committed data file: base and log files of
    completed instants (and of instants archived before the active timeline), and on version 6
    the log files of slices under a pending compaction (their blocks are committed writes).
    What Java's ``HoodieBackedTableMetadataWriter.listAllPartitionsFromFilesystem`` lists for
    the bootstrap, minus files of instants still in flight."""
    vis = state.visibility()
    view = FileSystemView(state.storage, state.config)
    layout1 = state.layout == 1
    out: list[tuple[str, str, int]] = []
    for partition in view.partitions():
        for g in view.file_groups(partition):
            for b in g.base_files:
                if vis.sees(b.instant_time):
                    out.append((partition, file_name_of(b.path), b.size))
            for lf in g.log_files:
                t = lf.instant_time
                if vis.sees(t) or (layout1 and t in vis.pending_compactions):
                    out.append((partition, file_name_of(lf.path), lf.size))
    return out


def slice_files(slices: Iterable[FileSlice]) -> dict[str, list[str]]:
    """File id -> the file names of its slice among ``slices`` (base file, then logs)."""
    out: dict[str, list[str]] = {}
    for s in slices:
        names = [file_name_of(s.base_file.path)] if s.base_file is not None else []
        names += [file_name_of(lf.path) for lf in s.sorted_log_files()]
        out[s.file_id] = names
    return out


def committed_slices(
    state: TableState, partitions: Sequence[str]
) -> dict[str, dict[str, list[str]]]:
    """Per partition (every partition when ``partitions`` is empty), file id -> the file
    names of its latest committed slice (base file, then logs): the slices the partition
    stats of a commit start from."""
    vis = state.visibility()
    view = FileSystemView(state.storage, state.config)
    return {
        partition: slice_files(view.latest_file_slices(partition, vis))
        for partition in partitions or view.partitions()
    }


def stats_options(options: Options) -> StatsOptions:
    """The options of the column_stats / partition_stats partitions."""
    return StatsOptions(
        column_stats=options.get(WriteConfig.METADATA_COLUMN_STATS_ENABLE),
        partition_stats=options.get(WriteConfig.METADATA_PARTITION_STATS_ENABLE),
        column_list=tuple(columns)
        if (columns := options.get(WriteConfig.METADATA_COLUMN_STATS_COLUMNS))
        else (),
        max_columns=options.get(WriteConfig.METADATA_COLUMN_STATS_MAX_COLUMNS),
        column_stats_file_groups=options.get(WriteConfig.METADATA_COLUMN_STATS_FILE_GROUPS),
        partition_stats_file_groups=options.get(WriteConfig.METADATA_PARTITION_STATS_FILE_GROUPS),
    )


def bloom_options(options: Options, state: TableState) -> BloomOptions:
    """The options of the bloom_filters partition. A column list naming other columns than
    the record key is ignored with a warning: Java's writer, too, fills the partition from
    the base files' footers, which hold the record keys' filter only
    (``HoodieTableMetadataUtil.convertMetadataToBloomFilterRecords``)."""
    columns = options.get(WriteConfig.METADATA_BLOOM_FILTER_COLUMNS) or []
    keys = {RECORD_KEY_METADATA_FIELD, *state.config.record_key_fields}
    other = [c for c in columns if c not in keys]
    if other:
        log.warning(
            "%s: hoodie.metadata.index.bloom.filter.column.list=%s: the bloom_filters "
            "partition holds the record keys' filter of each base file only; %s ignored",
            state.storage.base_uri,
            ",".join(columns),
            ", ".join(other),
        )
    return BloomOptions(
        enable=options.get(WriteConfig.METADATA_BLOOM_FILTER_ENABLE),
        file_groups=options.get(WriteConfig.METADATA_BLOOM_FILTER_FILE_GROUPS),
    )


def committed_record_keys(state: TableState) -> Iterator[SliceKeys]:
    """``(partition, file id, base instant, record keys)`` of every latest committed file slice,
    read as a snapshot read merges it (deletes applied): what a new record index holds (Java
    ``readRecordKeysFromFileSliceSnapshot``). The storage is listed (the metadata table is
    being created).

    Raises:
        UnsupportedError: the table's files carry no ``_hoodie_record_key``
            (``hoodie.populate.meta.fields=false``).
    """
    if not state.config.populate_meta_fields:
        raise UnsupportedError(
            "hoodie.metadata.record.index.enable=true needs a table with meta fields "
            "(hoodie.populate.meta.fields=true)"
        )
    table = ReadableTable(state, {"hoodie.metadata.enable": "false"})
    plan = table.plan_read(columns=[RECORD_KEY_METADATA_FIELD])
    for s in plan.slices:
        parts = [b.column(RECORD_KEY_METADATA_FIELD) for b in table.read_plan_slices(plan, [s])]
        keys = pa.concat_arrays(parts) if parts else pa.array([], pa.string())
        yield s.partition_path, s.file_id, s.base_instant_time, keys


#: a completion time after every base instant: an instant being committed completes now
_COMPLETING = "9" * 17


def file_group_rows(
    state: TableState,
    groups: Sequence[tuple[str, str]] | None,
    columns: Sequence[str],
    instant: str,
    include: bool,
) -> dict[tuple[str, str], pa.Table]:
    """The merged live rows (``_hoodie_record_key`` and ``columns``) of the latest slice of
    each ``(partition, file id)`` of ``groups`` that has one (None: of every file group), as a
    snapshot read merges it, as
    of the completed instants other than ``instant`` (those before it when it is completed
    already: a catch-up) -- plus ``instant`` when ``include``: a file group before and after an
    instant,
    for the secondary indexes (:data:`hudi_ds.metadata.secondary_index_writer.SliceValues`).
    """
    tl = state.timeline
    commits = [i for i in tl.commits() if i.requested_time != instant]
    if tl.is_completed(instant):
        # an instant the metadata table catches up on: the table as it was when it ran
        commits = [i for i in commits if i.requested_time < instant]
    vis = state.visibility_of(commits)
    if include:
        vis = dataclasses.replace(
            vis,
            instants=vis.instants | {instant},
            completion={**vis.completion, instant: _COMPLETING},
        )
    ctx = ReadableTable(state, {"hoodie.metadata.enable": "false"}).read_context()
    view = FileSystemView(state.storage, state.config)
    by_partition: dict[str, set[str]] = {}
    for partition, file_id in groups or ():
        by_partition.setdefault(partition, set()).add(file_id)
    wanted: dict[str, set[str] | None] = (
        dict.fromkeys(view.partitions()) if groups is None else dict(by_partition)
    )
    cols = [RECORD_KEY_METADATA_FIELD, *(c for c in columns if c != RECORD_KEY_METADATA_FIELD)]
    cols = [c for c in cols if ctx.schema.get_field_index(c) >= 0]
    out: dict[tuple[str, str], pa.Table] = {}
    for partition, ids in wanted.items():
        for s in view.latest_file_slices(partition, vis):
            if ids is None or s.file_id in ids:
                rows = read_file_slice(state.storage, s, vis, ctx, ReadStats(), cols)
                out[(partition, s.file_id)] = rows
    return out


def _installed(state: TableState) -> MetadataWriter | None:
    """The MDT writer :func:`install_metadata_writer` installed on ``state`` (None: none)."""
    writer = getattr(state.before_complete, "__self__", None)
    return writer if isinstance(writer, MetadataWriter) else None


def written_stats_columns(state: TableState, data_avro_schema: str) -> tuple[str, ...] | None:
    """The columns the column stats of a write (writer schema ``data_avro_schema``) index,
    when the table's metadata table keeps or is asked to build them: the write's handles then
    compute the ranges of each file they write from the rows in memory, as Java's handles fill
    ``HoodieWriteStat.recordsStats`` (``HoodieAppendHandle.processAppendResult``); None
    otherwise. The writer's choice of columns is cached, so the commit asks the same.

    Raises:
        ConfigError: the column list names a column the table does not have.
    """
    writer = _installed(state)
    if writer is None or writer.enable is False:
        return None
    flag = writer.stats.options.column_stats
    kept = COLUMN_STATS_PARTITION in writer.declared and flag is not False
    # a metadata table this commit creates gets column stats by default (table version >= 8)
    new = (
        writer.enable is True
        and FILES_PARTITION not in writer.declared
        and COLUMN_STATS_PARTITION
        in writer.stats.options.wanted_by_new_table(False, state.config.table_version)
    )
    if not (kept or flag or new):
        return None
    return tuple(writer.stats.columns(data_avro_schema))


def offer_written(
    state: TableState,
    instant: str,
    columns: Sequence[str] | None,
    statuses: Sequence[WriteStatus],
    commit: tuple[bytes, CommitMetadata],
    listed: Callable[[str], Iterable[FileSlice]] | None = None,
    listed_as_of: Visibility | None = None,
) -> None:
    """Hand what the write of ``instant`` knows at its commit point to the MDT writer
    installed on ``state`` (:class:`~hudi_ds.metadata.stats_writer.Written`): the column
    ranges (of ``columns``) its handles computed for the files they wrote, which it then
    reads none of again, and ``commit``: the completed file's content and the metadata it
    was serialized from (the ``files`` partition's records are made from it too, without
    parsing the content again: a commit of many files holds a write stat for each).

    ``listed(partition)``: the latest slices of a partition in the listing the write's task
    made, as of ``listed_as_of``. While that is still the table's visibility (nothing
    completed since the listing; a commit landing meanwhile could be missing from it), the
    slices of the partitions ``instant`` writes are handed over too, and the MDT writer lists
    none of them again."""
    writer = _installed(state)
    if writer is None:
        return
    ranges = {
        (s.partition_path, file_name_of(s.path)): s.column_ranges
        for s in statuses
        if s.column_ranges is not None and s.path
    }
    slices: dict[str, dict[str, list[str]]] = {}
    if (
        columns is not None
        and listed is not None
        and listed_as_of is not None
        and state.visibility() == listed_as_of
    ):
        written = dict.fromkeys(s.partition_path for s in statuses)
        slices = {p: slice_files(listed(p)) for p in written}
    content, md = commit
    writer.stats.offer(Written(instant, tuple(columns or ()), ranges, slices, content, md))
    writer.rli.offer(
        instant,
        {
            (s.partition_path, file_name_of(s.path)): (s.keys.inserted, s.keys.removed)
            for s in statuses
            if s.keys is not None and s.path
        },
        {
            (s.partition_path, file_name_of(s.path)): (s.logged.written, s.logged.deleted)
            for s in statuses
            if s.logged is not None and s.path
        },
    )


def tracks_record_keys(state: TableState) -> bool:
    """Whether a write of ``state`` has its merge handles tell the keys each new base file
    adds and drops (:attr:`WriteStatus.keys <hudi_ds.write.write_status.WriteStatus.keys>`)
    and its append handles the keys they wrote (``WriteStatus.logged``): when its metadata
    table keeps a record index, whose upkeep then reads none of those files
    (:func:`offer_written`)."""
    writer = _installed(state)
    return writer is not None and writer.enable is not False and writer.rli.keeps_index()


def install_metadata_writer(state: TableState, options: Options) -> MetadataWriter:
    """Install the MDT writer as the ``before_complete`` hook of the opened table ``state``.

    Nothing changes at open time: ``hoodie.metadata.enable`` (false deletes the MDT, true
    creates it; partitions hudi_ds does not maintain are dropped) is applied by the hook, at the
    commit point of the first instant the state completes -- after the writer's version checks,
    under the table lock with several writers. Read-only users of a state never touch the MDT."""
    record_index, partitioned = record_index_choice(options, state.config, state.storage)
    writer = MetadataWriter(
        state,
        committed_listing,
        enable=options.get(WriteConfig.METADATA_ENABLE),
        max_delta_commits=options.get(WriteConfig.METADATA_COMPACT_MAX_DELTA_COMMITS),
        reload_config=options.get(ConcurrencyConfig.MODE) != "single_writer",
        stats=stats_options(options),
        slices=committed_slices,
        record_keys=committed_record_keys,
        record_index=record_index,
        bloom=bloom_options(options, state),
        secondary_values=file_group_rows,
        secondary_index=options.get(WriteConfig.METADATA_SECONDARY_INDEX_ENABLE),
    )
    writer.rli.sizing = record_index_sizing(options)
    writer.rli.new_partitioned = partitioned
    writer.rli.partitioned_sizing = partitioned_record_index_sizing(options)
    state.before_complete = writer.update
    return writer
