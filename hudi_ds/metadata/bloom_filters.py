"""The metadata table's ``bloom_filters`` partition: the bloom filter of every data base file.

One record per base file (Java ``HoodieMetadataPayload.createBloomFilterMetadataRecord``):
``type`` 4, key ``PartitionIndexID`` + ``FileIndexID`` (base64 of the XXHash64 of the partition
identifier -- ``.`` when non-partitioned -- and of the MD5 of the file name:
:func:`hudi_ds.metadata.column_stats.partition_file_key`), value ``HoodieMetadataBloomFilter``:
the filter's type code (``DYNAMIC_V0`` / ``SIMPLE``, what ``BloomFilterFactory.fromString``
parses it with), the instant that wrote the record, the filter serialised as the base file's
footer holds it (the UTF-8 bytes of ``BloomFilter.serializeToString``) and ``isDeleted``. A
newer record of a key replaces the older (``MetadataPartitionType.BLOOM_FILTERS.
combineMetadataPayloads``: "bloom filters are always additive").

What a data instant changes (Java ``HoodieTableMetadataUtil``):

* commit, deltacommit, replacecommit, compaction, clustering: a record per base file written,
  read from its footer (``convertMetadataToBloomFilterRecords``: log files change no base
  file's filter and get none; a base file without a filter gets none, logged);
* clean: a tombstone per deleted base file -- type ``""``, no bytes, ``isDeleted``
  (``convertMetadataToBloomFilterRecords(HoodieCleanMetadata, ..)``);
* a rollback or restore mirrored as a deltacommit (version 6, or a compacted 1.x
  deltacommit): tombstones of the base files it deleted, as the column stats get; a 1.x MDT
  rollback deletes the log files of the undone deltacommits instead.

File groups ``bloom-filters-NNNN-0`` (``hoodie.metadata.index.bloom.filter.file.group.count``,
4 by default); a key goes to a file group by Java's ``mapRecordKeyToFileGroupIndex``. The
partition is written by :class:`BloomFiltersIndex` for
:class:`hudi_ds.metadata.writer.MetadataWriter` and read by :func:`read_bloom_filters` (the
BLOOM index with ``hoodie.bloom.index.use.metadata``).
"""

from __future__ import annotations

import functools
import io
import json
import logging
import typing
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import fastavro
import pyarrow.parquet as pq

from hudi_ds.errors import CorruptFileError, TableNotFoundError
from hudi_ds.layout.base_file import open_lance_base_file
from hudi_ds.layout.bloom_filter import (
    BLOOM_FILTER_FOOTER,
    BLOOM_FILTER_TYPE_CODE_FOOTER,
    SIMPLE,
    BloomFilter,
)
from hudi_ds.layout.hfile import read_hfile, write_hfile
from hudi_ds.layout.hfile_lookup import lookup_hfile
from hudi_ds.layout.naming import (
    PARTITION_METADATA_FILE,
    base_file_name,
    file_name_of,
    parse_base_file_name,
    parse_log_file_name,
)
from hudi_ds.log.block import BlockType
from hudi_ds.log.reader import decode_delete_block, scan_log_bytes
from hudi_ds.log.writer import encode_hfile_data_block
from hudi_ds.metadata.column_stats import (
    COLUMN_STATS_PARTITION,
    column_stats_key,
    partition_file_key,
    range_of_record,
)
from hudi_ds.metadata.layout import MDT_WRITE_TOKEN
from hudi_ds.metadata.mdt_files import (
    mdt_base_hfile,
    mdt_write_stat,
    next_log_name,
    older_slices_files,
)
from hudi_ds.metadata.reader import (
    completed_or_archived,
    files_slices,
    lagging_instants,
    valid_instants,
)
from hudi_ds.metadata.records import (
    METADATA_PARTITIONS_INFLIGHT_KEY,
    METADATA_PATH,
    declared_partitions,
)
from hudi_ds.metadata.stats_reader import read_stats_partition
from hudi_ds.metadata.stats_writer import MdtFile, _by_group
from hudi_ds.schema.meta import RECORD_KEY_METADATA_FIELD
from hudi_ds.storage import Storage
from hudi_ds.table_config import TableConfig
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
from hudi_ds.timeline.metadata import CommitMetadata
from hudi_ds.timeline.plans import CleanMetadata, RestoreMetadata, RollbackMetadata
from hudi_ds.timeline.timeline import Timeline
from hudi_ds.timeline.view import TableState
from hudi_ds.timeline.writer import TimelineWriter

__all__ = [
    "BLOOM_FILTERS_PARTITION",
    "BloomFiltersIndex",
    "BloomOptions",
    "FileBloomFilter",
    "IndexedFile",
    "bloom_filter_key",
    "decode_bloom_value",
    "encode_bloom_value",
    "footer_bloom_filter",
    "indexed_files",
    "read_bloom_filters",
]

log = logging.getLogger("hudi_ds.metadata")

BLOOM_FILTERS_PARTITION = "bloom_filters"
BLOOM_FILTER = 4
"""``type`` of a ``bloom_filters`` record (Java ``MetadataPartitionType.BLOOM_FILTERS``)."""
_PREFIX = "bloom-filters"
_NS = "org.apache.hudi.avro.model."
_COMMITS = frozenset({COMMIT, DELTA_COMMIT, REPLACE_COMMIT, COMPACTION, LOG_COMPACTION, CLUSTERING})


@dataclass(frozen=True)
class BloomOptions:
    """The writer's options for the partition (Java ``HoodieMetadataConfig``).

    Attributes:
        enable: ``hoodie.metadata.index.bloom.filter.enable`` (True builds it, False removes
            it, None keeps what the table has).
        file_groups: ``hoodie.metadata.index.bloom.filter.file.group.count``.
    """

    enable: bool | None = None
    file_groups: int = 4


@dataclass(frozen=True)
class FileBloomFilter:
    """One ``HoodieMetadataBloomFilter``.

    Attributes:
        type_code: the filter's type (``DYNAMIC_V0``, ``SIMPLE``; ``""`` in a tombstone).
        timestamp: the instant that wrote the record.
        serialized: the serialised filter (base64 text as bytes; empty in a tombstone).
        deleted: ``isDeleted``.
    """

    type_code: str
    timestamp: str
    serialized: bytes
    deleted: bool = False

    def bloom_filter(self) -> BloomFilter:
        """The filter, parsed.

        Raises:
            CorruptFileError: it does not parse (or the record is a tombstone).
        """
        if self.deleted:
            raise CorruptFileError("a deleted bloom filter record holds no filter")
        return BloomFilter.parse(self.serialized, self.type_code or None)


def bloom_filter_key(partition_path: str, file_name: str) -> str:
    """The record key of base file ``file_name`` of ``partition_path`` (``""``
    non-partitioned); Java ``HoodieMetadataPayload.getBloomFilterRecordKey``."""
    return partition_file_key(partition_path, file_name)


@functools.lru_cache(maxsize=16)
def _parsed(schema_json: str) -> Any:
    return fastavro.parse_schema(json.loads(schema_json))


@functools.lru_cache(maxsize=16)
def _names(schema_json: str) -> tuple[str, ...]:
    return tuple(f["name"] for f in json.loads(schema_json)["fields"])


def encode_bloom_value(
    rec: FileBloomFilter, schema_json: str, file_name: str | None = None
) -> bytes:
    """The HFile value of one record: raw Avro binary of ``HoodieMetadataRecord`` with ``key``
    blank and the meta fields null (``_hoodie_file_name``: ``file_name``, base files name
    themselves), as the ``files`` records."""
    record: dict[str, Any] = dict.fromkeys(_names(schema_json))
    record["key"] = ""
    record["type"] = BLOOM_FILTER
    record["_hoodie_file_name"] = file_name
    record["BloomFilterMetadata"] = (
        _NS + "HoodieMetadataBloomFilter",
        {
            "type": rec.type_code,
            "timestamp": rec.timestamp,
            "bloomFilter": rec.serialized,
            "isDeleted": rec.deleted,
        },
    )
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, _parsed(schema_json), record)
    return buf.getvalue()


def decode_bloom_value(value: bytes, schema_json: str) -> FileBloomFilter:
    """Decode one record value.

    Raises:
        CorruptFileError: ``value`` is not a bloom filter record of ``schema_json``.
    """
    try:
        record = typing.cast(
            dict[str, Any],
            fastavro.schemaless_reader(io.BytesIO(value), _parsed(schema_json), None),
        )
    except Exception as e:  # fastavro raises assorted errors on torn bytes
        raise CorruptFileError(f"unreadable metadata record value ({len(value)} bytes): {e}") from e
    bf = record.get("BloomFilterMetadata")
    if bf is None:
        raise CorruptFileError(f"metadata record of type {record.get('type')} has no bloom filter")
    return FileBloomFilter(
        str(bf["type"]), str(bf["timestamp"]), bytes(bf["bloomFilter"]), bool(bf["isDeleted"])
    )


def footer_bloom_filter(
    storage: Storage, partition: str, file_name: str
) -> tuple[str, bytes] | None:
    """``(type code, serialised filter)`` of the bloom filter in the footer of data base file
    ``file_name`` of ``partition`` (Parquet footer or Lance schema metadata); None when it has
    none (a table without meta fields) or is not a Parquet or Lance base file. A footer without
    a type code holds a ``SIMPLE`` filter (Java ``HoodieBaseParquetFileReader``)."""
    base = parse_base_file_name(file_name)
    if base is None or base.extension not in (".parquet", ".lance"):
        return None
    rel = f"{partition}/{file_name}" if partition else file_name
    if base.extension == ".lance":
        meta = open_lance_base_file(storage, rel).footer()
    else:
        with storage.open_input_file(rel) as f:
            meta = dict(pq.ParquetFile(f).metadata.metadata or {})
    raw = meta.get(BLOOM_FILTER_FOOTER.encode())
    if raw is None:
        return None
    code = meta.get(BLOOM_FILTER_TYPE_CODE_FOOTER.encode())
    return (code.decode("utf-8") if code else SIMPLE), bytes(raw)


# -- reading ----------------------------------------------------------------------------------


def _cells(
    data: bytes | memoryview, where: str, keys: set[str] | None
) -> tuple[list[tuple[bytes, bytes]], dict[str, bytes]]:
    """The cells of an HFile and its file info: with ``keys``, only the data blocks those keys
    fall in are decoded (:func:`hudi_ds.layout.hfile.lookup_hfile`; a record is a whole
    filter, hundreds of KB, so a lookup of a few files reads a few blocks)."""
    if keys is not None:
        found, info, _ = lookup_hfile(data, [k.encode("utf-8") for k in keys], where)
        return list(found.items()), info
    hf = read_hfile(data, where)
    return list(zip(hf.keys, hf.values, strict=True)), hf.file_info


def read_bloom_filters(
    storage: Storage,
    timeline: Timeline,
    data_timeline: Timeline,
    data_table_version: int,
    wanted: set[str] | None = None,
) -> dict[str, FileBloomFilter]:
    """The merged records of the ``bloom_filters`` partition (tombstones kept): every file
    group's latest slice, its base HFile then the HFILE_DATA blocks of its logs that count
    (the rule of the ``files`` partition, :class:`hudi_ds.metadata.reader.MetadataReader`),
    newer replacing older.

    Args:
        storage: the metadata table's storage.
        timeline: its active timeline.
        data_timeline: the data table's active timeline.
        data_table_version: the data table's version.
        wanted: the record keys to read (default all): then only the file groups they hash
            to are read, and of their HFiles only the blocks they fall in.

    Raises:
        CorruptFileError: a file or record does not decode.
    """
    valid = valid_instants(data_timeline, timeline, data_table_version)
    out: dict[str, FileBloomFilter] = {}

    def apply(data: bytes | memoryview, where: str, schema: str | None = None) -> None:
        cells, info = _cells(data, where, wanted)
        schema = schema or info.get("schema", b"").decode("utf-8")
        if cells and not schema:
            raise CorruptFileError(f"{where}: metadata records without a writer schema")
        for k, v in cells:
            key = k.decode("utf-8")
            if wanted is None or key in wanted:
                try:
                    out[key] = decode_bloom_value(v, schema)
                except CorruptFileError as e:
                    raise CorruptFileError(f"{where}: metadata record {key!r}: {e}") from e

    slices = files_slices(storage, timeline, BLOOM_FILTERS_PARTITION)
    if wanted is not None:
        ids = [s.file_id for s in slices]
        needed = {fid for fid, _ in _by_group(wanted, ids)} if ids else set()
        slices = [s for s in slices if s.file_id in needed]
    for s in slices:
        if s.base_file is not None:
            path = s.base_file.path
            apply(storage.read_bytes(path), storage.full_path(path))
        blocks = []
        for lf in s.log_files:
            blocks.extend(
                scan_log_bytes(storage.read_bytes(lf.path), storage.full_path(lf.path)).blocks
            )
        rolled_back = {b.target_instant_time for b in blocks if b.is_rollback_command}
        for b in blocks:
            t = b.instant_time or ""
            if b.block_type == BlockType.COMMAND or t in rolled_back:
                continue
            if not completed_or_archived(timeline, t) or t not in valid:
                continue
            if b.block_type == BlockType.HFILE_DATA:
                apply(b.content, f"{b.path} block at offset {b.offset}", b.schema)
            elif b.block_type == BlockType.DELETE:
                for key in decode_delete_block(b).column(RECORD_KEY_METADATA_FIELD).to_pylist():
                    out.pop(key, None)
    return out


# -- writing ----------------------------------------------------------------------------------


class BloomFiltersIndex:
    """The ``bloom_filters`` side of the MDT writer.

    Args:
        state: the opened data table.
        storage: the metadata table's storage.
        options: :class:`BloomOptions`.
    """

    def __init__(self, state: TableState, storage: Storage, options: BloomOptions) -> None:
        self.state = state
        self.storage = storage
        self.options = options

    def maintained(self, declared: Sequence[str]) -> bool:
        """Whether the partition is kept in step: declared, not disabled, with file groups
        (one without cannot be kept nor read: removed)."""
        return (
            BLOOM_FILTERS_PARTITION in declared
            and self.options.enable is not False
            and bool(self.file_ids())
        )

    def wanted(self, declared: Sequence[str]) -> bool:
        """Whether the options ask to build the partition (enabled, not declared)."""
        return self.options.enable is True and BLOOM_FILTERS_PARTITION not in declared

    def file_ids(self) -> list[str]:
        """The partition's file groups (none without a folder)."""
        if not self.storage.is_dir(BLOOM_FILTERS_PARTITION):
            return []
        ids = set()
        for f in self.storage.list_files(BLOOM_FILTERS_PARTITION):
            p = parse_base_file_name(f.name) or parse_log_file_name(f.name)
            if p is not None and p.file_id.startswith(_PREFIX):
                ids.add(p.file_id)
        return sorted(ids)

    # -- records of an instant ----------------------------------------------------------------
    def _record_of(self, partition: str, name: str, instant_time: str) -> FileBloomFilter | None:
        found = footer_bloom_filter(self.state.storage, partition, name)
        if found is None:
            log.info("bloom_filters: %s/%s has no bloom filter: no record", partition, name)
            return None
        return FileBloomFilter(found[0], instant_time, found[1])

    def records(
        self, instant_time: str, action: str, content: bytes, schema: str
    ) -> dict[str, bytes]:
        """The records data instant ``instant_time`` implies (key -> HFile value), encoded with
        record schema ``schema`` (module docstring)."""
        out: dict[str, bytes] = {}
        if action in _COMMITS:
            md = CommitMetadata.from_bytes(content)
            for part, stats in md.partition_to_write_stats.items():
                for st in stats:
                    name = file_name_of(st.path) if st.path else ""
                    if not name or parse_base_file_name(name) is None:
                        continue
                    rec = self._record_of(part, name, instant_time)
                    if rec is not None:
                        out[bloom_filter_key(part, name)] = encode_bloom_value(rec, schema)
            return out
        for part, name in _deleted_files(action, content):
            if parse_base_file_name(name) is not None:
                tomb = FileBloomFilter("", instant_time, b"", deleted=True)
                out[bloom_filter_key(part, name)] = encode_bloom_value(tomb, schema)
        return out

    # -- laying records out -------------------------------------------------------------------
    def log_files(
        self, instant_time: str, records: Mapping[str, bytes], mdt: Timeline, schema: str
    ) -> list[MdtFile]:
        """One log file per file group receiving records: one HFILE_DATA block, named as the
        ``files`` log of the instant (layout 2: a new log file named with the instant; layout
        1: the next version in the group's latest slice)."""
        if not records:  # (nothing to lay out: the partition is not listed)
            return []
        ids = self.file_ids()
        if not ids:
            return []
        slices = {s.file_id: s for s in files_slices(self.storage, mdt, BLOOM_FILTERS_PARTITION)}
        by_group: dict[str, dict[str, bytes]] = {}
        for fid, key in _by_group(records, ids):
            by_group.setdefault(fid, {})[key] = records[key]
        out = []
        for fid, group in sorted(by_group.items()):
            sl = slices.get(fid)
            if sl is None:
                raise CorruptFileError(
                    f"metadata table: {BLOOM_FILTERS_PARTITION}/{fid} has no file slice"
                )
            keys = sorted(group, key=lambda k: k.encode("utf-8"))
            hfile = write_hfile(
                [k.encode("utf-8") for k in keys],
                [group[k] for k in keys],
                file_info={"schema": schema.encode("utf-8")},
            )
            block = encode_hfile_data_block(instant_time, schema, hfile)
            base_ts = sl.base_instant_time
            names = [file_name_of(lf.path) for lf in sl.log_files]
            name = next_log_name(mdt.layout_version, fid, base_ts, instant_time, names)
            logs = [*names, name]
            base = file_name_of(sl.base_file.path) if sl.base_file is not None else None
            stat = mdt_write_stat(
                BLOOM_FILTERS_PARTITION,
                fid,
                name,
                len(block),
                len(keys),
                base_ts,
                base,
                logs,
            )
            out.append(MdtFile(f"{BLOOM_FILTERS_PARTITION}/{name}", block, stat))
        return out

    @staticmethod
    def _base_files(
        ids: Sequence[str],
        instant_time: str,
        records: Mapping[str, FileBloomFilter],
        schema: str,
        prev: Mapping[str, str],
    ) -> list[MdtFile]:
        """One base HFile per file group of ``ids`` holding its live ``records`` (each value
        naming the file, as Java's MDT base files do); ``prev``: a group's previous base
        instant."""
        live = [k for k, r in records.items() if not r.deleted]
        groups: dict[str, list[str]] = {fid: [] for fid in ids}
        for fid, key in _by_group(live, ids):
            groups[fid].append(key)
        out = []
        for fid in ids:
            name = base_file_name(fid, MDT_WRITE_TOKEN, instant_time, ".hfile")
            keys = sorted(groups[fid], key=lambda k: k.encode("utf-8"))
            values = [encode_bloom_value(records[k], schema, file_name=name) for k in keys]
            data = mdt_base_hfile([k.encode("utf-8") for k in keys], values, schema)
            stat = mdt_write_stat(
                BLOOM_FILTERS_PARTITION,
                fid,
                name,
                len(data),
                len(keys),
                prev.get(fid, instant_time),
            )
            out.append(MdtFile(f"{BLOOM_FILTERS_PARTITION}/{name}", data, stat))
        return out

    def initial_files(
        self, instant_time: str, schema: str, committed: Iterable[tuple[str, str, int]]
    ) -> list[MdtFile]:
        """The base files of a new partition (MDT deltacommit ``instant_time``): the filter
        of every committed base file (``committed``: ``(partition, name, size)``), in
        ``hoodie.metadata.index.bloom.filter.file.group.count`` file groups. The caller
        writes them (and the partition's metadata file, :meth:`prepare`)."""
        records: dict[str, FileBloomFilter] = {}
        for part, name, _ in committed:
            if parse_base_file_name(name) is None:
                continue
            rec = self._record_of(part, name, instant_time)
            if rec is not None:
                records[bloom_filter_key(part, name)] = rec
        ids = [f"{_PREFIX}-{i:04d}-0" for i in range(self.options.file_groups)]
        return self._base_files(ids, instant_time, records, schema, {})

    def prepare(self, instant_time: str) -> None:
        """Create the partition's folder and its partition metadata file."""
        self.storage.makedirs(BLOOM_FILTERS_PARTITION)
        self.storage.write_bytes(
            f"{BLOOM_FILTERS_PARTITION}/{PARTITION_METADATA_FILE}",
            f"#partition metadata\ncommitTime={instant_time}\npartitionDepth=1\n".encode(),
        )

    def build(
        self,
        instant_time: str,
        writer: TimelineWriter,
        schema: str,
        committed: Iterable[tuple[str, str, int]],
    ) -> None:
        """Create the partition as MDT deltacommit ``instant_time`` (Java
        ``HoodieBackedTableMetadataWriter.initializeFromFilesystem`` for an index partition);
        the caller then declares it in ``hoodie.properties``.

        Raises:
            CorruptFileError: the instant exists.
        """
        files = self.initial_files(instant_time, schema, committed)
        req = Instant(instant_time, DELTA_COMMIT, State.REQUESTED)
        if not writer.create_requested(req):
            raise CorruptFileError(f"metadata table: instant {instant_time} exists")
        md = CommitMetadata(operation_type="UPSERT_PREPPED")
        md.partition_to_write_stats[BLOOM_FILTERS_PARTITION] = [f.stat for f in files]
        layout = writer.layout_version
        writer.transition_to_inflight(req, md.to_bytes(layout))
        self.prepare(instant_time)
        for f in files:
            self.storage.write_bytes(f.path, f.data)
        writer.complete(req, md.to_bytes(layout))
        log.info(
            "%s: built metadata table partition %s (%d files)",
            self.state.storage.base_uri,
            BLOOM_FILTERS_PARTITION,
            sum(f.stat.num_writes or 0 for f in files),
        )

    def compaction_files(self, when: str, mdt: Timeline, schema: str) -> list[MdtFile]:
        """The new base HFile of every file group, holding the merged live records (Java
        compacts every MDT file group at once)."""
        if not self.file_ids():
            return []
        merged = read_bloom_filters(
            self.storage, mdt, self.state.timeline, self.state.config.table_version
        )
        prev = {
            s.file_id: s.base_instant_time
            for s in files_slices(self.storage, mdt, BLOOM_FILTERS_PARTITION)
        }
        return self._base_files(self.file_ids(), when, merged, schema, prev)

    def older_files(self, mdt: Timeline) -> dict[str, list[str]]:
        """The files of slices older than each file group's two latest (an MDT clean)."""
        ids = self.file_ids()
        if not ids:
            return {}
        names = [f.name for f in self.storage.list_files(BLOOM_FILTERS_PARTITION)]
        doomed = sorted(n for fid in ids for n in older_slices_files(mdt, names, fid))
        return {BLOOM_FILTERS_PARTITION: doomed} if doomed else {}

    def delete_logs(self, instants: set[str]) -> list[str]:
        """Delete the log files of MDT deltacommits ``instants`` (layout 2: named with their
        instant), as an MDT rollback undoes them; the deleted paths."""
        out = []
        if self.storage.is_dir(BLOOM_FILTERS_PARTITION):
            for f in self.storage.list_files(BLOOM_FILTERS_PARTITION):
                lf = parse_log_file_name(f.name)
                path = f"{BLOOM_FILTERS_PARTITION}/{f.name}"
                if lf is not None and lf.instant_time in instants and self.storage.delete(path):
                    out.append(path)
        return out


def _deleted_files(action: str, content: bytes) -> list[tuple[str, str]]:
    """``(partition, file name)`` of the data files a clean, rollback or restore deleted."""
    out: list[tuple[str, str]] = []
    if action == CLEAN:
        for key, cpm in CleanMetadata.from_bytes(content).partition_metadata.items():
            part = cpm.partition_path or key
            out.extend((part, file_name_of(n)) for n in cpm.delete_path_patterns)
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
                out.extend((part, file_name_of(p)) for p in pm.success_delete_files)
    return out


# -- the BLOOM index's lookups ----------------------------------------------------------------


@dataclass(frozen=True)
class IndexedFile:
    """What the metadata table says of one base file for a BLOOM lookup.

    Attributes:
        bloom: its bloom filter record (None: the partition has none for it).
        min_key, max_key: its record key range from ``column_stats`` (None: not known).
    """

    bloom: FileBloomFilter | None
    min_key: str | None = None
    max_key: str | None = None


def indexed_files(
    storage: Storage, files: Sequence[tuple[str, str]], with_ranges: bool
) -> tuple[dict[tuple[str, str], IndexedFile] | None, str]:
    """The bloom filters (and with ``with_ranges`` the ``_hoodie_record_key`` ranges of
    ``column_stats``, Java ``HoodieBloomIndex.loadColumnRangesFromMetaIndex``) of base files
    ``files`` (``(partition, name)``) of the table at ``storage``, read from its metadata table
    -- only the records of those files are decoded.

    Returns:
        The answer per file, or None and why when the metadata table cannot answer: no
        completed ``bloom_filters`` partition, or a completed data instant it misses.
    """
    config = TableConfig.load(storage)
    declared = declared_partitions(config)
    inflight = declared_partitions(config, METADATA_PARTITIONS_INFLIGHT_KEY)
    if BLOOM_FILTERS_PARTITION not in declared or BLOOM_FILTERS_PARTITION in inflight:
        return None, "the table has no bloom_filters partition in its metadata table"
    mdt = storage.sub(METADATA_PATH)
    try:
        mdt_config = TableConfig.load(mdt)
    except (TableNotFoundError, CorruptFileError):
        return None, "the table's metadata table cannot be read"
    data_tl = Timeline.load(storage, config.timeline_layout_version, config.timeline_path)
    mdt_tl = Timeline.load(mdt, mdt_config.timeline_layout_version, mdt_config.timeline_path)
    lag = lagging_instants(data_tl, mdt_tl)
    if lag:
        return None, f"the metadata table misses completed instants {lag[:3]}"
    keys = {bloom_filter_key(p, n): (p, n) for p, n in files}
    blooms = read_bloom_filters(mdt, mdt_tl, data_tl, config.table_version, set(keys))
    ranges: dict[str, dict[str, Any]] = {}
    range_keys: dict[str, str] = {}
    if with_ranges and config.populate_meta_fields and COLUMN_STATS_PARTITION in declared:
        range_keys = {
            k: column_stats_key(RECORD_KEY_METADATA_FIELD, p, n) for k, (p, n) in keys.items()
        }
        wanted = set(range_keys.values())
        ranges = read_stats_partition(
            mdt, mdt_tl, data_tl, config.table_version, COLUMN_STATS_PARTITION, wanted.__contains__
        )
    out: dict[tuple[str, str], IndexedFile] = {}
    for k, where in keys.items():
        rec = blooms.get(k)
        stats = ranges.get(range_keys.get(k, ""))
        lo = hi = None
        if stats is not None and not stats.get("isDeleted"):
            r = range_of_record(stats)
            if isinstance(r.min_value, str) and isinstance(r.max_value, str):
                lo, hi = r.min_value, r.max_value
        out[where] = IndexedFile(None if rec is None or rec.deleted else rec, lo, hi)
    return out, ""
