"""Keeping the metadata table's record-level index (``record_index``) in step with the data
table: what each data instant changes in it, the log files that write the change, and the
partition's creation with the metadata table.

The :class:`~hudi_ds.metadata.writer.MetadataWriter` asks :class:`RecordIndexWriter` at three
points -- which partitions it keeps (:meth:`RecordIndexWriter.maintained`), what the MDT
deltacommit of a data instant writes besides the ``files`` block
(:meth:`RecordIndexWriter.plan`), and what the MDT bootstrap writes
(:meth:`RecordIndexWriter.bootstrap`). The record semantics are in
:mod:`hudi_ds.metadata.record_index`.

Hudi 1.1's partitioned record index (records per (data partition, key), file groups per data
partition: :mod:`hudi_ds.metadata.record_index`) is kept the same way: its changes are grouped
by data partition, a data partition the index has no file group for gets
``hoodie.metadata.record.level.index.min.filegroup.count`` new ones in the deltacommit that
first writes it, and building it writes the index definition with ``isPartitioned=true``.

An action whose effect on the index cannot be written as Java writes it -- a rollback or
restore that the MDT mirrors with tombstones instead of undoing its deltacommits (table
version 6, or an instant already compacted into the MDT's base file), an instant whose earlier
base file is gone (cleaned before a catch-up), a table without meta fields writing logs --
makes the writer remove the partition, as it removes partitions it does not maintain: a stale
record index would send Java writers' updates to the wrong file group.
"""

from __future__ import annotations

import functools
import json
import logging
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hudi_ds.errors import (
    ConfigError,
    CorruptBlockError,
    CorruptFileError,
    HudiError,
    MissingFileError,
)
from hudi_ds.index.core import record_index_partitioned
from hudi_ds.index.lookup import LookupSpec
from hudi_ds.index.simple import base_file_keys, keys_of_table
from hudi_ds.layout.file_group import BaseFile, FileSlice
from hudi_ds.layout.hfile import write_hfile
from hudi_ds.layout.naming import (
    PARTITION_METADATA_FILE,
    base_file_name,
    file_name_of,
    log_file_name,
    parse_base_file_name,
    parse_log_file_name,
)
from hudi_ds.log.block import BlockType
from hudi_ds.log.reader import decode_data_block, decode_delete_block, scan_log_bytes
from hudi_ds.log.writer import (
    encode_delete_block,
    encode_empty_delete_block,
    encode_hfile_data_block,
)
from hudi_ds.metadata.layout import MDT_WRITE_TOKEN
from hudi_ds.metadata.mdt_files import (
    mdt_base_hfile,
    mdt_write_stat,
    next_log_name,
    older_slices_files,
)
from hudi_ds.metadata.reader import completed_or_archived, files_slices, valid_instants
from hudi_ds.metadata.record_index import (
    FILE_ID_PREFIX,
    RECORD_INDEX_PARTITION,
    GroupUpdates,
    Located,
    PartitionedUpdates,
    RecordIndexUpdates,
    RecordLocation,
    SliceKeys,
    base_file_of,
    bootstrap_locations,
    bootstrap_partitioned,
    file_group_count,
    file_group_id,
    instant_millis,
    layout_matches,
    locate,
    partition_file_group_counts,
    partitioned_file_group_id,
    read_partitioned_locations,
    read_slice,
)
from hudi_ds.metadata.records import METADATA_PARTITIONS_INFLIGHT_KEY, declared_partitions
from hudi_ds.schema.meta import RECORD_KEY_METADATA_FIELD
from hudi_ds.storage import Storage
from hudi_ds.table_config import TableConfig
from hudi_ds.timeline.instant import (
    CLEAN,
    COMMIT,
    DELTA_COMMIT,
    REPLACE_COMMIT,
)
from hudi_ds.timeline.metadata import CommitMetadata, WriteStat
from hudi_ds.timeline.timeline import Timeline
from hudi_ds.timeline.view import TableState

#: per ``(partition, file name)`` of a file a write wrote, two key arrays it told
_Told = Mapping[tuple[str, str], tuple[pa.Array, pa.Array]]

__all__ = [
    "MIN_FILE_GROUPS",
    "PARTITIONED_SIZING",
    "IndexFile",
    "RecordIndexWriter",
    "RecordIndexSizing",
    "RecordKeys",
    "file_group_count_for",
    "index_stats",
]

log = logging.getLogger("hudi_ds.metadata")

#: Java 1.x's default place of the index definitions file
INDEX_DEFS = ".hoodie/.index_defs/index.json"

#: ``hoodie.metadata.record.index.min.filegroup.count`` default (``HoodieMetadataConfig``)
MIN_FILE_GROUPS = 10
#: ``hoodie.metadata.record.index.max.filegroup.count`` default
_MAX_FILE_GROUPS = 10000
#: ``hoodie.metadata.record.index.max.filegroup.size`` default (1 GiB) and growth factor 2.0
_MAX_FILE_GROUP_BYTES = 1024 * 1024 * 1024
_GROWTH_FACTOR = 2.0
#: ``HoodieTableMetadataUtil.RECORD_INDEX_AVERAGE_RECORD_SIZE``
_AVERAGE_RECORD_BYTES = 48


@dataclass(frozen=True)
class RecordIndexSizing:
    """How many file groups a new record index gets
    (``hoodie.metadata.global.record.level.index.min/max.filegroup.count``, alias
    ``hoodie.metadata.record.index.min/max.filegroup.count``;
    ``hoodie.metadata.record.index.max.filegroup.size`` and ``...growth.factor``).

    Raises:
        ConfigError: the minimum exceeds the maximum.
    """

    min_file_groups: int = MIN_FILE_GROUPS
    max_file_groups: int = _MAX_FILE_GROUPS
    max_file_group_bytes: int = _MAX_FILE_GROUP_BYTES
    growth_factor: float = _GROWTH_FACTOR

    #: the option prefix named in errors (the global or the partitioned index's)
    prefix: str = "hoodie.metadata.global.record.level.index"

    def __post_init__(self) -> None:
        if self.min_file_groups > self.max_file_groups:
            raise ConfigError(
                f"{self.prefix}.min.filegroup.count ({self.min_file_groups}) exceeds "
                f"{self.prefix}.max.filegroup.count ({self.max_file_groups})"
            )

    def file_groups(self, records: int) -> int:
        """Java ``HoodieTableMetadataUtil.estimateFileGroupCount``: the minimum when it equals
        the maximum; else ``ceil((float) records * growth)`` records over the records a file
        group of the maximum size holds (``maxFileGroupSizeBytes / 48``, integer division),
        truncated, within the min / max counts."""
        lo, hi = self.min_file_groups, self.max_file_groups
        if lo == hi:
            return lo
        # Java multiplies in float (32-bit), then takes the ceiling as a long
        expected = math.ceil(float(np.float32(records) * np.float32(self.growth_factor)))
        per_group = self.max_file_group_bytes // _AVERAGE_RECORD_BYTES
        estimated = expected // per_group
        if estimated >= hi:
            return hi
        if estimated <= lo:
            return lo
        return max(1, estimated)


#: Data block size of the record index's HFiles (base files and log blocks). Java writes
#: 1 MiB blocks (``hoodie.hfile.block.size``); a lookup inflates every block one of its keys
#: falls in, and a 1 MiB block holds ~11k keys, so a batch of a few thousand keys inflated a
#: table's whole index. Smaller blocks cost a longer block index and a little compression;
#: readers (Java's, hudi-rs) read any block size.
RECORD_INDEX_BLOCK_SIZE = 64 * 1024

#: file groups per data partition of a partitioned record index
#: (``hoodie.metadata.record.level.index.min/max.filegroup.count`` defaults 1 / 10)
PARTITIONED_SIZING = RecordIndexSizing(1, 10, prefix="hoodie.metadata.record.level.index")

_NO_CHANGE_OPERATIONS = frozenset({"COMPACT", "LOG_COMPACT"})
_OVERWRITES = frozenset({"INSERT_OVERWRITE", "INSERT_OVERWRITE_TABLE", "DELETE_PARTITION"})

RecordKeys = Callable[[TableState], Iterable[SliceKeys]]
"""``record_keys(state)``: the keys of every committed latest file slice (the write layer reads
them through its file-system view and slice reader; this layer may not import them)."""


def file_group_count_for(records: int, minimum: int = MIN_FILE_GROUPS) -> int:
    """File groups of a new record index of ``records`` keys under Java's default sizing
    (:meth:`RecordIndexSizing.file_groups`) with the given minimum."""
    return RecordIndexSizing(min_file_groups=minimum).file_groups(records)


@dataclass(frozen=True)
class IndexFile:
    """A file an MDT instant writes into the record index: its path in the MDT, bytes, stat."""

    path: str
    data: bytes
    stat: WriteStat


_Updates = RecordIndexUpdates | PartitionedUpdates


class _Unexpressible(HudiError):
    """The change cannot be written as Java writes it (the partition is removed)."""


class RecordIndexWriter:
    """The record-index side of a :class:`~hudi_ds.metadata.writer.MetadataWriter`.

    Args:
        state: the data table.
        storage: the MDT's storage.
        record_keys: the committed slices' keys (for the bootstrap); None: the write layer
            gives none, so the partition is never created.
        enable: ``hoodie.metadata.record.index.enable`` or
            ``hoodie.metadata.record.level.index.enable`` (None: keep what the table has).
        partitioned: a new index is Hudi 1.1's partitioned one
            (``hoodie.metadata.record.level.index.enable=true``); an existing index keeps its
            kind (its definition's ``isPartitioned``).
    """

    def __init__(
        self,
        state: TableState,
        storage: Storage,
        record_keys: RecordKeys | None = None,
        enable: bool | None = None,
        partitioned: bool = False,
    ) -> None:
        self.state = state
        self.storage = storage
        self.record_keys = record_keys
        self.enable = enable
        self.new_partitioned = partitioned
        #: the file group count of a new index (the write layer sets the table's options)
        self.sizing = RecordIndexSizing()
        #: per data partition, of a new partitioned index and of a partition new to it
        self.partitioned_sizing = PARTITIONED_SIZING
        self._offered: tuple[str, _Told, _Told] = ("", {}, {})

    def offer(self, instant: str, changes: _Told, logged: _Told | None = None) -> None:
        """What the writer of data instant ``instant`` knows of the files it wrote, per
        ``(partition, file name)``: of a base file, the record keys it adds to its file group
        and the ones of the previous base file it drops (``changes``, its merge handle's); of
        a log file, the keys of its data blocks and of its delete blocks (``logged``). The
        index's changes of those files are made from them, no file read (Java's metadata
        writer takes them from the write's statuses: ``HoodieBackedTableMetadataWriter.
        getRecordIndexUpdates`` of each ``WriteStatus``'s written records); other files are
        read."""
        self._offered = (instant, changes, logged or {})

    def keeps_index(self) -> bool:
        """Whether this writer keeps a record index (asked, or the table declares one)."""
        if self.enable is not None:
            return self.enable
        return RECORD_INDEX_PARTITION in declared_partitions(self.state.config)

    @property
    def partitioned(self) -> bool:
        """Whether the index is the partitioned one: the table's definition when the table
        declares a record index, else what a new one is to be."""
        cfg = self.state.config
        if RECORD_INDEX_PARTITION in declared_partitions(cfg):
            return record_index_partitioned(cfg, self.state.storage)
        return self.new_partitioned

    # -- which partitions --------------------------------------------------------------------
    def maintained(self) -> bool:
        """Whether the table's ``record_index`` is one hudi_ds keeps in step: declared
        complete (not being built by another writer), its definition readable (global or
        partitioned), and its folder present."""
        cfg = self.state.config
        if RECORD_INDEX_PARTITION not in declared_partitions(cfg):
            return False
        if RECORD_INDEX_PARTITION in declared_partitions(cfg, METADATA_PARTITIONS_INFLIGHT_KEY):
            return False
        if self.enable is False:
            return False
        try:
            partitioned = self.partitioned
        except HudiError:  # an unreadable definition: not kept
            return False
        if not self.storage.is_dir(RECORD_INDEX_PARTITION):
            return False
        if not layout_matches(self.storage, partitioned):
            log.warning(
                "%s: the record_index definition says %s, its file groups do not: not kept",
                self.state.storage.base_uri,
                "partitioned" if partitioned else "global",
            )
            return False
        return True

    def wanted_at_creation(self) -> bool:
        """Whether a new MDT gets the partition: asked for, with a way to read the keys, on a
        table whose files carry their record keys (meta fields)."""
        if not self.enable or self.record_keys is None:
            return False
        if not self.state.config.populate_meta_fields:
            log.warning(
                "%s: no record_index: the table has no meta fields (hoodie.populate.meta.fields)",
                self.state.storage.base_uri,
            )
            return False
        return True

    # -- creation ----------------------------------------------------------------------------
    def bootstrap(self, instant: str, schema: str, version: int) -> list[IndexFile]:
        """The files that create the partition in MDT bootstrap deltacommit ``instant``: per
        file group a base HFile of its records and a log file holding one empty DELETE block
        (as the ``files`` partition's; Java ``initializeFileGroups``)."""
        assert self.record_keys is not None
        tz = self.state.config.timeline_timezone or "LOCAL"
        if self.partitioned:
            return self._bootstrap_partitioned(instant, schema, version, tz)
        locations = bootstrap_locations(self.record_keys(self.state), tz)
        count = self.sizing.file_groups(len(locations))
        updates = RecordIndexUpdates()
        updates.puts = locations
        groups = updates.by_file_group(count)
        out = [_partition_metadata(instant)]
        out += self._base_groups(instant, schema, version, groups, count, file_group_id)
        log.info("metadata table: record_index of %d keys in %d file groups", len(locations), count)
        return out

    def _bootstrap_partitioned(
        self, instant: str, schema: str, version: int, tz: str
    ) -> list[IndexFile]:
        """:meth:`bootstrap` of a partitioned index: per data partition, file groups sized by
        its keys (Java ``PartitionedRecordIndexer.buildInitialization``)."""
        assert self.record_keys is not None
        by_partition = bootstrap_partitioned(self.record_keys(self.state), tz)
        out = [_partition_metadata(instant)]
        for partition, locations in sorted(by_partition.items()):
            count = self.partitioned_sizing.file_groups(len(locations))
            updates = RecordIndexUpdates()
            updates.puts = locations
            groups = updates.by_file_group(count)
            ids = functools.partial(partitioned_file_group_id, partition)
            out += self._base_groups(instant, schema, version, groups, count, ids)
        log.info(
            "metadata table: partitioned record_index of %d partitions",
            len(by_partition),
        )
        return out

    def _base_groups(
        self,
        instant: str,
        schema: str,
        version: int,
        groups: dict[int, GroupUpdates],
        count: int,
        ids: Callable[[int], str],
    ) -> list[IndexFile]:
        """Per file group, a base HFile of its records and a log file of one empty DELETE
        block (Java ``initializeFileGroups``)."""
        out = []
        for i in range(count):
            fid = ids(i)
            name = base_file_name(fid, MDT_WRITE_TOKEN, instant, ".hfile")
            own = None if version >= 9 else name
            g = groups.get(i)
            keys = g.keys if g is not None else pa.array([], pa.string())
            values = g.values(schema, own) if g is not None else pa.array([], pa.binary())
            data = mdt_base_hfile(
                keys.cast(pa.binary()), values, schema, block_size=RECORD_INDEX_BLOCK_SIZE
            )
            out.append(IndexFile(*_file(name, data, fid, instant, len(keys), None)))
            log_name = log_file_name(fid, instant, 1, MDT_WRITE_TOKEN)
            block = encode_empty_delete_block(instant)
            out.append(IndexFile(*_file(log_name, block, fid, instant, 0, name, [log_name])))
        return out

    def write_definition(self) -> dict[str, str]:
        """Record the index's definition in the index definitions file, as Hudi 1.1 does when
        it builds the partition (``HoodieTableMetadataUtil.createRecordIndexDefinition``:
        ``indexOptions.isPartitioned`` "true" for the partitioned index, "false" for the global
        one; version V1); other definitions are kept. Returns the ``hoodie.properties`` entry
        naming the file when the table records none yet.

        Raises:
            ConfigError: an existing definitions file does not parse.
        """
        cfg, storage = self.state.config, self.state.storage
        rel = cfg.get(TableConfig.INDEX_DEFS_PATH) or INDEX_DEFS
        doc: dict = {"indexDefinitions": {}}
        if storage.exists(rel):
            try:
                doc = json.loads(storage.read_text(rel))
                doc.setdefault("indexDefinitions", {})
            except (ValueError, AttributeError) as e:
                raise ConfigError(
                    f"{storage.uri(rel)} ({TableConfig.INDEX_DEFS_PATH.key}) cannot be read ({e})"
                ) from None
        doc["indexDefinitions"][RECORD_INDEX_PARTITION] = {
            "indexName": RECORD_INDEX_PARTITION,
            "indexType": RECORD_INDEX_PARTITION,
            "indexFunction": "",
            "sourceFields": [],
            "indexOptions": {"isPartitioned": "true" if self.partitioned else "false"},
            "version": "V1",
        }
        storage.write_atomic(rel, json.dumps(doc, indent=2).encode("utf-8"))
        if cfg.get(TableConfig.INDEX_DEFS_PATH):
            return {}
        return {TableConfig.INDEX_DEFS_PATH.key: rel}

    def definition_needed(self) -> bool:
        """Whether a new index must record its definition beside the MDT bootstrap: it is
        partitioned (readers tell the kinds apart by it), or the table's definition says
        partitioned and the new one is global."""
        if self.partitioned:
            return True
        try:
            return record_index_partitioned(self.state.config, self.state.storage)
        except HudiError:
            return True

    # -- MDT compaction and clean ------------------------------------------------------------
    def compaction_files(self, when: str, mdt: Timeline, schema: str) -> list[IndexFile]:
        """The new base HFile of every file group of the partition, written by MDT compaction
        ``when``: the slice's merged records, deleted keys dropped, each record naming the
        file (Java compacts every MDT file group at once, ``HoodieBackedTableMetadataWriter.
        compactIfNecessary``; its base files carry ``_hoodie_file_name``). One file group at a
        time, so that only one group's records are held."""
        data = self.state.timeline
        valid = valid_instants(data, mdt, self.state.config.table_version)

        def keep(t: str) -> bool:
            return completed_or_archived(mdt, t) and t in valid

        out = []
        for sl in files_slices(self.storage, mdt, RECORD_INDEX_PARTITION):
            if not sl.file_id.startswith(FILE_ID_PREFIX):
                continue
            merged = RecordIndexUpdates(puts=read_slice(self.storage, sl, keep))
            name = base_file_name(sl.file_id, MDT_WRITE_TOKEN, when, ".hfile")
            groups = list(merged.by_file_group(1).values())  # (sorted; one group: this one)
            keys = groups[0].keys if groups else pa.array([], pa.string())
            values = groups[0].values(schema, name) if groups else pa.array([], pa.binary())
            hfile = mdt_base_hfile(
                keys.cast(pa.binary()), values, schema, block_size=RECORD_INDEX_BLOCK_SIZE
            )
            del merged, groups
            stat = mdt_write_stat(
                RECORD_INDEX_PARTITION,
                sl.file_id,
                name,
                len(hfile),
                len(keys),
                sl.base_instant_time or when,
            )
            out.append(IndexFile(stat.path or "", hfile, stat))
        return out

    def older_files(self, mdt: Timeline) -> dict[str, list[str]]:
        """The partition's files of slices older than each file group's two latest (what an
        MDT clean deletes)."""
        if not self.storage.is_dir(RECORD_INDEX_PARTITION):
            return {}
        names = [f.name for f in self.storage.list_files(RECORD_INDEX_PARTITION)]
        ids = sorted(
            {
                p.file_id
                for n in names
                if (p := parse_base_file_name(n) or parse_log_file_name(n)) is not None
                and p.file_id.startswith(FILE_ID_PREFIX)
            }
        )
        doomed = sorted(n for fid in ids for n in older_slices_files(mdt, names, fid))
        return {RECORD_INDEX_PARTITION: doomed} if doomed else {}

    # -- updates -----------------------------------------------------------------------------
    def plan(
        self, instant: str, action: str, content: bytes, mdt: Timeline, schema: str
    ) -> list[IndexFile] | None:
        """The record-index log files of MDT deltacommit ``instant`` mirroring data ``action``
        (``content``: its metadata); None when the change cannot be written (the caller
        removes the partition)."""
        try:
            updates = self._updates(instant, action, content, mdt)
        except HudiError as e:  # unexpressible, a file gone or unreadable, a Lance base file
            log.warning("metadata table: record_index cannot follow %s %s: %s", action, instant, e)
            return None
        if not updates:
            return []
        return self._log_files(instant, updates, mdt, schema)

    def _updates(self, instant: str, action: str, content: bytes, mdt: Timeline) -> _Updates:
        out: _Updates = PartitionedUpdates() if self.partitioned else RecordIndexUpdates()
        if action == CLEAN:
            return out
        if action not in (COMMIT, DELTA_COMMIT, REPLACE_COMMIT):
            raise _Unexpressible(f"a {action} is mirrored with tombstones")
        meta = CommitMetadata.from_bytes(content)
        op = (meta.operation_type or "").upper()
        if op in _NO_CHANGE_OPERATIONS or meta.compacted:
            return out
        tz = self.state.config.timeline_timezone or "LOCAL"
        loc_ms = instant_millis(instant, tz)
        logged: dict[tuple[str, str], tuple[list[pa.Array], list[pa.Array]]] = {}
        mine = self._offered[0] == instant
        offered, offered_logs = (self._offered[1], self._offered[2]) if mine else ({}, {})
        for partition, stats in meta.partition_to_write_stats.items():
            for stat in stats:
                if not stat.path or not stat.file_id:
                    continue
                name = file_name_of(stat.path)
                told = offered.get((partition, name))
                if told is not None and parse_base_file_name(name) is not None:
                    loc = RecordLocation(partition, stat.file_id, loc_ms)
                    out.put(_present(told[0]).to_pylist(), loc)
                    out.delete(_present(told[1]).to_pylist(), partition)
                elif parse_base_file_name(name) is not None:
                    self._base_changes(
                        out, partition, stat, RecordLocation(partition, stat.file_id, loc_ms)
                    )
                elif parse_log_file_name(name) is not None:
                    put, gone = logged.setdefault((partition, stat.file_id), ([], []))
                    told = offered_logs.get((partition, name))
                    if told is not None:
                        put.append(_present(told[0]))
                        gone.append(_present(told[1]))
                    else:
                        self._log_keys(stat.path, instant.__eq__, put, gone)
        if logged:
            self._log_changes(out, logged, loc_ms, mdt)
        if meta.is_replace and op in _OVERWRITES:
            for partition, ids in meta.replaced_file_ids().items():
                for fid in ids:
                    out.delete(self._group_keys(partition, fid), partition)
        return out

    def _spec(self) -> LookupSpec:
        cfg = self.state.config
        return LookupSpec(
            record_key_fields=tuple(cfg.record_key_fields),
            complex_key=cfg.complex_record_key,
            meta_fields=cfg.populate_meta_fields,
        )

    def _key_array(self, base: BaseFile) -> pa.Array:
        """The record keys of a base file (nulls and empty keys dropped)."""
        keys = base_file_keys(self.state.storage, base, self._spec())
        if isinstance(keys, pa.ChunkedArray):
            keys = keys.combine_chunks()
        return keys.filter(pc.fill_null(pc.not_equal(keys, ""), False))

    def _keys(self, base: BaseFile) -> set[str]:
        return set(self._key_array(base).to_pylist())

    def _base_changes(
        self, out: _Updates, partition: str, stat: WriteStat, loc: RecordLocation
    ) -> None:
        """Java ``BaseFileRecordParsingUtils.getRecordKeyStatuses``: keys new to the file
        group's base file are put, keys its previous base file held and it does not are gone."""
        parsed = parse_base_file_name(file_name_of(stat.path or ""))
        assert parsed is not None and stat.path is not None
        keys = self._key_array(BaseFile(stat.path, parsed))
        prev = stat.prev_commit
        if not prev or prev == "null":  # a new file group: every key is new to it
            out.put(keys.to_pylist(), loc)
            return
        before = base_file_of(self.state.storage, partition, parsed.file_id, prev)
        if before is None:
            raise _Unexpressible(f"the base file of {parsed.file_id} at {prev} is gone")
        old = self._key_array(before)
        out.put(keys.filter(pc.invert(pc.is_in(keys, value_set=old))).to_pylist(), loc)
        out.delete(old.filter(pc.invert(pc.is_in(old, value_set=keys))).to_pylist(), partition)

    def _log_keys(
        self,
        path: str,
        instants: Callable[[str], bool],
        put: list[pa.Array],
        gone: list[pa.Array],
    ) -> None:
        """Keys of the data blocks (``put``) and delete blocks (``gone``) in log file ``path``
        written by the instants ``instants`` accepts (nulls and empty keys dropped)."""
        spec = self._spec()
        try:
            data = self.state.storage.read_bytes(path)
        except FileNotFoundError as e:
            raise MissingFileError(f"log file {path} is gone", path) from e
        for b in scan_log_bytes(data, path).blocks:
            if not b.instant_time or not instants(b.instant_time):
                continue
            if b.block_type in (BlockType.AVRO_DATA, BlockType.PARQUET_DATA):
                try:
                    # only the key column when the rows carry it (the rest is not read)
                    table = decode_data_block(b, _KEY_COLUMN if spec.meta_fields else None)
                except CorruptBlockError as e:
                    raise CorruptFileError(f"{path}: {e}") from e
                put.append(_present(keys_of_table(table, spec, path)))
            elif b.block_type == BlockType.DELETE:
                gone.append(_present(decode_delete_block(b).column(RECORD_KEY_METADATA_FIELD)))

    def _log_changes(
        self,
        out: _Updates,
        logged: dict[tuple[str, str], tuple[list[pa.Array], list[pa.Array]]],
        loc_ms: int,
        mdt: Timeline,
    ) -> None:
        """Log writes: a key written to a file group the index does not place it in is put
        there (an insert, or a key revived after a delete); a deleted key the index places
        in that file group is gone (Java ``getRevivedAndDeletedKeysFromMergedLogs``)."""
        groups = list(logged)
        puts = [pc.unique(_joined(logged[g][0])) for g in groups]
        deads = []
        for g, put in zip(groups, puts, strict=True):
            dead = pc.unique(_joined(logged[g][1]))
            if len(dead):
                dead = dead.filter(pc.invert(pc.is_in(dead, value_set=put)))
            deads.append(dead)
        found = self._placed(groups, puts, deads, mdt)
        # where the index places each key, as a code per (partition, file id): the keys of a
        # file group and instant share one location object
        codes: dict[tuple[str, str], int] = {}
        table = np.array(
            [codes.setdefault((c.partition, c.file_id), len(codes)) for c in found.locations],
            np.int64,
        )
        placed = table[found.codes] if len(found.codes) else np.zeros(0, np.int64)
        want = np.array([codes.get(g, -1) for g in groups], np.int64)
        parts = [p for p, _ in groups]
        here = _placed_at(puts, parts, want, found.keys, placed, self.partitioned)
        there = _placed_at(deads, parts, want, found.keys, placed, self.partitioned)
        for n, (partition, fid) in enumerate(groups):
            moved = puts[n].filter(pc.invert(pa.array(here[n]))).to_pylist()
            out.put(moved, RecordLocation(partition, fid, loc_ms))
            out.delete(deads[n].filter(pa.array(there[n])).to_pylist(), partition)

    def _placed(
        self,
        groups: list[tuple[str, str]],
        puts: list[pa.Array],
        deads: list[pa.Array],
        mdt: Timeline,
    ) -> Located:
        """Where the index places the keys of ``puts`` and ``deads`` now: by key (global), or
        by ``partition NUL key`` (partitioned)."""
        if not self.partitioned:
            keys = pc.unique(_joined([*puts, *deads]))
            return locate(self.storage, mdt, self._keep(mdt), keys)
        wanted: dict[str, set[str]] = {}
        for (partition, _), put, dead in zip(groups, puts, deads, strict=True):
            wanted.setdefault(partition, set()).update(put.to_pylist(), dead.to_pylist())
        found = self.lookup_pairs({p: sorted(ks) for p, ks in wanted.items()}, mdt)
        names = pa.array([f"{p}{_SEP}{k}" for p, k in found], pa.string())
        return Located.of(names, list(found.values()))

    def _group_keys(self, partition: str, file_id: str) -> set[str]:
        """Keys of the latest committed base file of a replaced file group and of the data
        blocks of its logs."""
        vis = self.state.timeline
        bases = []
        logs = []
        for f in self.state.storage.list_files(partition):
            b = parse_base_file_name(f.name)
            if b is not None and b.file_id == file_id and vis.is_completed(b.instant_time):
                bases.append(BaseFile(f.path, b, f.size))
            lg = parse_log_file_name(f.name)
            if lg is not None and lg.file_id == file_id:
                logs.append(f.path)
        keys: set[str] = set()
        if bases:
            keys |= self._keys(max(bases, key=lambda b: b.instant_time))
        for path in logs:
            put: list[pa.Array] = []
            self._log_keys(path, vis.is_completed, put, [])
            keys.update(_joined(put).to_pylist())
        return keys

    def _keep(self, mdt: Timeline) -> Callable[[str], bool]:
        valid = valid_instants(self.state.timeline, mdt, self.state.config.table_version)
        return lambda t: completed_or_archived(mdt, t) and t in valid

    def lookup_pairs(
        self, keys: dict[str, list[str]], mdt: Timeline
    ) -> dict[tuple[str, str], RecordLocation]:
        """Where the partitioned index places the keys of each data partition now."""
        return read_partitioned_locations(self.storage, mdt, self._keep(mdt), keys)

    def _log_files(
        self, instant: str, updates: _Updates, mdt: Timeline, schema: str
    ) -> list[IndexFile]:
        slices = {s.file_id: s for s in files_slices(self.storage, mdt, RECORD_INDEX_PARTITION)}
        names = [f.name for f in self.storage.list_files(RECORD_INDEX_PARTITION)]
        if isinstance(updates, PartitionedUpdates):
            return self._partitioned_log_files(instant, updates, mdt, schema, slices, names)
        count = file_group_count(self.storage)
        if not count:
            raise CorruptFileError(f"{self.storage.base_uri}: record_index has no file group")
        return [
            self._group_log(instant, file_group_id(i), g, slices, names, mdt, schema)
            for i, g in sorted(updates.by_file_group(count).items())
        ]

    def _partitioned_log_files(
        self,
        instant: str,
        updates: PartitionedUpdates,
        mdt: Timeline,
        schema: str,
        slices: dict[str, FileSlice],
        names: list[str],
    ) -> list[IndexFile]:
        """The log files of a partitioned index: per data partition, its changes in its own
        file groups; a partition without any gets the minimum count of new file groups, each
        a log file opened by an empty DELETE block at ``instant`` (Java
        ``initializeNewFileGroupsForPartitionedRLIHelper`` then the upsert)."""
        counts = partition_file_group_counts(self.storage)
        out = []
        for partition, part in sorted(updates.parts.items()):
            if not part:
                continue
            count = counts.get(partition, 0)
            new = count == 0
            if new:
                count = self.partitioned_sizing.min_file_groups
            groups = part.by_file_group(count)
            for i in range(count) if new else sorted(groups):
                fid = partitioned_file_group_id(partition, i)
                out.append(
                    self._group_log(instant, fid, groups.get(i), slices, names, mdt, schema, new)
                )
        return out

    def _group_log(
        self,
        instant: str,
        fid: str,
        g: GroupUpdates | None,
        slices: dict[str, FileSlice],
        names: list[str],
        mdt: Timeline,
        schema: str,
        new: bool = False,
    ) -> IndexFile:
        """The log file of file group ``fid`` holding ``g``'s changes (``new``: the group is
        created by ``instant``, its log opened by an empty DELETE block)."""
        sl = (
            FileSlice(RECORD_INDEX_PARTITION, fid, instant)
            if new
            else slices.get(fid) or FileSlice(RECORD_INDEX_PARTITION, fid, "")
        )
        data = encode_empty_delete_block(instant) if new else b""
        keys = g.keys if g is not None else _NO_KEYS
        gone = g.gone if g is not None else _NO_KEYS
        if g is not None and len(keys):
            hfile = write_hfile(
                keys.cast(pa.binary()),
                g.values(schema),
                file_info={"schema": schema.encode("utf-8")},
                block_size=RECORD_INDEX_BLOCK_SIZE,
            )
            data += encode_hfile_data_block(instant, schema, hfile)
        if len(gone):
            n = len(gone)
            data += encode_delete_block(
                gone,
                pa.array([RECORD_INDEX_PARTITION] * n, pa.string()),
                None,
                instant,
                schema,
            )
        if new:
            name = log_file_name(fid, instant, 1, MDT_WRITE_TOKEN)
        else:
            name = next_log_name(mdt.layout_version, fid, sl.base_instant_time, instant, names)
        logs = [file_name_of(lf.path) for lf in sl.log_files] + [name]
        base = file_name_of(sl.base_file.path) if sl.base_file is not None else None
        n = len(keys) + len(gone)
        return IndexFile(*_file(name, data, fid, sl.base_instant_time, n, base, logs))


#: built without pa.array, whose first call imports pandas (a Spark worker that never
#: converts anything would pay ~0.15 s of CPU for it at import)
_NO_KEYS = pa.nulls(0, pa.string())
_SEP = "\x00"
_KEY_COLUMN = pa.schema([(RECORD_KEY_METADATA_FIELD, pa.string())])


def _present(keys: pa.Array | pa.ChunkedArray) -> pa.Array:
    """``keys`` without nulls and empty keys, as one string array."""
    if isinstance(keys, pa.ChunkedArray):
        keys = keys.combine_chunks()
    keys = keys.cast(pa.string())
    return keys.filter(pc.fill_null(pc.not_equal(keys, ""), False))


def _joined(arrays: list[pa.Array]) -> pa.Array:
    """One string array of ``arrays``' keys."""
    return pa.concat_arrays(arrays) if arrays else _NO_KEYS


def _placed_at(
    keys: list[pa.Array],
    partitions: list[str],
    codes: np.ndarray,
    index: pa.Array,
    placed: np.ndarray,
    by_pair: bool,
) -> list[np.ndarray]:
    """Per file group ``n``: whether the index places each of ``keys[n]`` (of data
    ``partitions[n]``) in that file group, location code ``codes[n]`` (``index``: the keys
    looked up -- ``partition NUL key`` for a partitioned index --, ``placed``: the code of
    each). One hash of ``index`` for all the groups."""
    if by_pair:
        keys = [
            pc.binary_join_element_wise(p, k, _SEP) for p, k in zip(partitions, keys, strict=True)
        ]
    sizes = [len(k) for k in keys]
    if not sum(sizes) or not len(placed):
        return [np.zeros(n, bool) for n in sizes]
    pos = pc.index_in(pa.concat_arrays(keys), value_set=index).fill_null(-1)
    at = np.asarray(pos.to_numpy(zero_copy_only=False), np.int64)
    ok = (at >= 0) & (placed[np.maximum(at, 0)] == np.repeat(codes, sizes))
    return np.split(ok, np.cumsum(sizes)[:-1])


def _partition_metadata(instant: str) -> IndexFile:
    """The partition's ``.hoodie_partition_metadata`` file."""
    return IndexFile(
        f"{RECORD_INDEX_PARTITION}/{PARTITION_METADATA_FILE}",
        (
            f"#partition metadata\n#Created by hudi_ds\ncommitTime={instant}\npartitionDepth=1\n"
        ).encode(),
        WriteStat(),
    )


def _file(
    name: str,
    data: bytes,
    file_id: str,
    prev: str,
    records: int,
    base_file: str | None,
    logs: list[str] | None = None,
) -> tuple[str, bytes, WriteStat]:
    """``(path, bytes, WriteStat)`` of one record-index file of an MDT instant."""
    stat = mdt_write_stat(
        RECORD_INDEX_PARTITION, file_id, name, len(data), records, prev, base_file, logs
    )
    return f"{RECORD_INDEX_PARTITION}/{name}", data, stat


def index_stats(files: list[IndexFile]) -> dict[str, list[WriteStat]]:
    """Write stats of an MDT instant's record-index files, by MDT partition."""
    stats = [f.stat for f in files if f.stat.path]
    return {RECORD_INDEX_PARTITION: stats} if stats else {}
