"""``MetadataWriter``: keeps a table's metadata table (MDT) ``files`` partition in step.

The MDT is a MERGE_ON_READ Hudi table at ``<table>/.hoodie/metadata`` with one file group
(``files-0000-0``) in partition ``files``: a base HFile plus log files holding one HFILE_DATA
block per deltacommit (record layout: :mod:`hudi_ds.metadata.records`). Java:
``HoodieBackedTableMetadataWriter``. The index partitions a table has and hudi_ds maintains
(``column_stats``, ``partition_stats``, ``record_index``, ``bloom_filters``, secondary indexes:
:mod:`hudi_ds.metadata.index_partitions`) are written in the same MDT instants.

* :meth:`MetadataWriter.update` is installed as :attr:`TableState.before_complete`: every data
  instant that changes files (commit, deltacommit, replacecommit, compaction, clean, rollback,
  restore) is mirrored as an MDT instant *with the same instant time*, written and completed
  before the data instant's completed file is written (Java ``HoodieTableMetadataWriter.update``
  inside ``commit``): a deltacommit of the instant's file changes; on table versions 8/9 a data
  rollback becomes an MDT rollback undoing the rolled-back instants' deltacommits (Hudi 1.x),
  on version 6 a deltacommit tombstoning the files the rollback deleted (Hudi 0.x
  ``HoodieTableMetadataUtil.convertMetadataToRollbackRecords``). Readers ignore the mirror of
  a data instant that is still pending (Java's valid instants), so a write killed after its
  MDT deltacommit is invisible until its rollback undoes it.
* On the first update the MDT is created from the committed files when asked
  (``hoodie.metadata.enable=true``) or to_build when incomplete, MDT instants a crash left
  pending are undone, completed data instants the MDT misses (an action that ran without the
  hook) are applied in order, and MDT partitions hudi_ds does not maintain are removed.
* Every ``hoodie.metadata.compact.max.delta.commits`` deltacommits the MDT is compacted (a new
  base HFile holding the merged listing, tombstones dropped) -- not while a data instant it
  mirrors is pending -- and then cleaned (the two latest file slices stay).
* :meth:`MetadataWriter.delete` removes the MDT (``hoodie.metadata.enable=false``).

Instant times (Java ``HoodieTableMetadataUtil``): the bootstrap deltacommit is
``00000000000000010`` on table version 6 and ``00000000000000000`` on 8/9; an MDT compaction
(clean) is ``<latest deltacommit>001`` (``002``) on version 6 and a new instant time on 8/9.
Log files: version 6 appends a new log version to the slice of the latest base file
(``.files-0000-0_<base instant>.log.<n>_<token>``); 8/9 write one log file per deltacommit
named with its instant (``.files-0000-0_<T>.log.1_<token>``).

The MDT's own timeline is archived with the data table's
(:func:`hudi_ds.services.archival.archive_metadata_table`).
"""

from __future__ import annotations

import functools
import json
import logging
import time
from collections.abc import Callable, Iterable, Mapping, Sequence

from hudi_ds.errors import CorruptFileError, LockLostError, MissingFileError
from hudi_ds.faults import crash_point
from hudi_ds.index.core import record_index_entry
from hudi_ds.layout.hfile import write_hfile
from hudi_ds.layout.naming import (
    PARTITION_METADATA_FILE,
    base_file_name,
    file_name_of,
    log_file_name,
    parse_log_file_name,
)
from hudi_ds.log.writer import encode_empty_delete_block, encode_hfile_data_block
from hudi_ds.metadata import mdt_clean
from hudi_ds.metadata.bloom_filters import BLOOM_FILTERS_PARTITION, BloomOptions
from hudi_ds.metadata.index_partitions import IndexPartitions, PartitionFile
from hudi_ds.metadata.indexing import settle_pending_indexing
from hudi_ds.metadata.layout import (
    FILES_FILE_ID,
    MDT_WRITE_TOKEN,
    MetadataSlice,
    bootstrap_instant,
    metadata_table_properties,
)
from hudi_ds.metadata.mdt_files import (
    base_file_schema,
    mdt_base_hfile,
    mdt_write_stat,
    next_log_name,
    older_slices_files,
    rollback_plan,
)
from hudi_ds.metadata.reader import (
    MetadataReader,
    files_slices,
    lagging_instants,
)
from hudi_ds.metadata.record_index import RECORD_INDEX_PARTITION
from hudi_ds.metadata.record_index_writer import IndexFile, RecordKeys, index_stats
from hudi_ds.metadata.records import (
    ALL_PARTITIONS,
    FILE_CHANGING_ACTIONS,
    FILES_PARTITION,
    METADATA_PARTITIONS_INFLIGHT_KEY,
    METADATA_PARTITIONS_KEY,
    METADATA_PATH,
    PARTITION_LIST,
    FileEntry,
    FilesChanges,
    Records,
    declared_partitions,
    encode_files_value,
    instant_changes,
    listing_changes,
    partition_path_of_id,
    record_schema,
)
from hudi_ds.metadata.recovery import undo_completed, undo_pending
from hudi_ds.metadata.secondary_index_writer import SliceValues
from hudi_ds.metadata.stats_writer import Slices, StatsOptions
from hudi_ds.storage import Storage
from hudi_ds.storage_types import FileInfo
from hudi_ds.table_config import PROPS_FILE, TableConfig, update_table_config
from hudi_ds.timeline.instant import (
    COMPACTION,
    DELTA_COMMIT,
    MAX_INSTANT_AHEAD_MS,
    ROLLBACK,
    Instant,
    State,
    new_instant_time,
)
from hudi_ds.timeline.metadata import CommitMetadata
from hudi_ds.timeline.plans import (
    CompactionOperation,
    CompactionPlan,
    InstantInfo,
    RollbackMetadata,
    RollbackPartitionMetadata,
)
from hudi_ds.timeline.timeline import Timeline
from hudi_ds.timeline.view import TableState
from hudi_ds.timeline.writer import TimelineWriter

__all__ = [
    "FILES_PARTITION",
    "METADATA_PARTITIONS_INFLIGHT_KEY",
    "METADATA_PARTITIONS_KEY",
    "METADATA_PATH",
    "MetadataWriter",
]


log = logging.getLogger("hudi_ds.metadata")


_SYNTHETIC_MAX = "00000000000000100"  # bootstrap instants of the MDT sort below this


# Java HoodieMetadataConfig bloom filter of MDT base files: DYNAMIC_V0, 10000 keys, fpp 1e-9


_CLEAN_POLICY = "KEEP_LATEST_FILE_VERSIONS"


Listing = Callable[[TableState], Iterable[tuple[str, str, int]]]


"""``listing(state)``: ``(partition path, file name, size)`` of every committed data file."""


def _schema_without_meta(schema_json: str) -> str:
    """The ``schema`` of MDT commit metadata: the record schema without the meta fields."""
    obj = json.loads(schema_json)
    obj["fields"] = [f for f in obj["fields"] if not f["name"].startswith("_hoodie_")]
    return json.dumps(obj, separators=(",", ":"))


#: the write stat of a ``files`` partition file
_files_stat = functools.partial(mdt_write_stat, FILES_PARTITION, FILES_FILE_ID)


class MetadataWriter:
    """Creates, updates, compacts and deletes the ``files`` partition of a table's MDT.

    Args:
        state: the opened data table (its config is replaced when ``hoodie.properties``
            changes).
        listing: the committed data files (the write layer lists them through its file-system
            view; this layer may not import it).
        enable: ``hoodie.metadata.enable``: True creates the MDT when absent, False deletes it,
            None keeps what the table has.
        max_delta_commits: ``hoodie.metadata.compact.max.delta.commits``.
        reload_config: re-read ``hoodie.properties`` at each :meth:`update` (several writers:
            another one may have enabled or disabled the MDT since this state opened the table;
            a single writer's state is current).
        stats: the options of the column_stats / partition_stats partitions.
        slices: the latest committed data file slices (partition stats), from the write layer.
        record_keys: the committed slices' record keys (for a new MDT's record index).
        record_index: ``hoodie.metadata.record.index.enable`` (True: a new MDT gets one).
        bloom: the options of the bloom_filters partition.
        secondary_values: reads data file groups' merged rows (the secondary indexes).
        secondary_index: ``hoodie.metadata.index.secondary.enable`` (False removes them).
    """

    def __init__(
        self,
        state: TableState,
        listing: Listing,
        *,
        enable: bool | None = None,
        max_delta_commits: int = 10,
        reload_config: bool = False,
        stats: StatsOptions | None = None,
        slices: Slices | None = None,
        record_keys: RecordKeys | None = None,
        record_index: bool | None = None,
        bloom: BloomOptions | None = None,
        secondary_values: SliceValues | None = None,
        secondary_index: bool | None = None,
    ) -> None:
        self.state = state
        self.listing = listing
        self.enable = enable
        self.max_delta_commits = max_delta_commits
        self.reload_config = reload_config
        self.storage: Storage = state.storage.sub(METADATA_PATH)
        self.version = state.config.table_version
        self.schema = record_schema(self.version)
        self._schema_adopted = False
        self._layout: tuple[int, str] | None = None
        # the MDT's hoodie.properties as present() read it, with the _layout it gave
        self._mdt_config: tuple[tuple[int, str], TableConfig] | None = None
        # the index partitions besides files (column_stats, partition_stats, record_index)
        self.indexes = IndexPartitions(
            state,
            self.storage,
            stats=stats,
            slices=slices,
            record_keys=record_keys,
            record_index=record_index,
            bloom=bloom,
            secondary_values=secondary_values,
            secondary_index=secondary_index,
        )
        self.stats = self.indexes.stats
        self.rli = self.indexes.rli

    # -- what the table has ---------------------------------------------------------------------
    @property
    def declared(self) -> list[str]:
        """MDT partitions ``hoodie.table.metadata.partitions`` names (completed ones)."""
        return declared_partitions(self.state.config)

    def _config(self) -> TableConfig | None:
        try:
            return TableConfig.load(self.storage)
        except (FileNotFoundError, CorruptFileError):
            return None

    def present(self) -> bool:
        """Whether the table has a usable MDT: ``files`` declared and the MDT's config there."""
        if FILES_PARTITION not in self.declared:
            return False
        if self._layout is not None:  # parsed before: its existence is enough
            return self.storage.is_file(PROPS_FILE)
        cfg = self._config()
        if cfg is None:
            return False
        # its layout, kept (it never changes): _mdt_layout need not read the file again
        self._layout = (cfg.timeline_layout_version, cfg.timeline_path)
        self._mdt_config = (self._layout, cfg)
        return True

    def _mdt_layout(self) -> tuple[int, str]:
        """The MDT's timeline layout and path (read once: they never change)."""
        if self._layout is None:
            cfg = self._config()
            if cfg is None:  # pragma: no cover - callers check present() first
                raise CorruptFileError(f"{self.storage.base_uri}: no metadata table config")
            self._layout = (cfg.timeline_layout_version, cfg.timeline_path)
        return self._layout

    def timeline(self) -> Timeline:
        """The MDT's active timeline."""
        layout, path = self._mdt_layout()
        return Timeline.load(self.storage, layout, path)

    def _writer(self, on_write: Callable[[FileInfo], None] | None = None) -> TimelineWriter:
        layout, path = self._mdt_layout()
        return TimelineWriter(self.storage, layout, path, on_write=on_write)

    def _update_config(
        self, updates: Mapping[str, str] | None = None, deletes: Iterable[str] = ()
    ) -> None:
        updates = dict(updates or {})
        deletes = list(deletes)
        before = self.state.config
        after = {k: v for k, v in {**before.props, **updates}.items() if k not in deletes}
        # dropping the record index keeps the index it stood for (index.core)
        updates.update(record_index_entry(before, after, self.state.storage))
        self.state.config = update_table_config(self.state.storage, updates, deletes)

    # -- entry points ---------------------------------------------------------------------------
    def update(self, done: Instant, content: bytes) -> None:
        """The :attr:`TableState.before_complete` hook: mirror data instant ``done``.

        ``hoodie.metadata.enable=false`` deletes the MDT here (a write's commit point), not
        when the table is opened. Creates the MDT first when ``hoodie.metadata.enable=true``
        and the table has none, or when it has an incomplete one (from the committed files,
        ``done`` excluded); otherwise
        removes MDT partitions hudi_ds does not maintain and undoes MDT instants a crash left
        pending. Then applies completed data instants the MDT misses, compacts the MDT when
        due, and writes and completes the deltacommit of ``done``.
        """
        if self.reload_config:
            # hoodie.properties as it is now: another writer may have enabled or disabled the
            # MDT since this state opened the table (the hook runs under the table lock)
            self.state.config = TableConfig.load(self.state.storage)
        if self.enable is False:
            # applied here, at a write's commit point (under the table lock with several
            # writers, after its version checks), never when a table is only opened
            self.delete()
            return
        self.state.metadata = None  # (set again by a deltacommit written here)
        if done.action not in FILE_CHANGING_ACTIONS:
            return
        self.stats.forget_file_groups()  # another writer may have changed them since
        try:
            self._apply(done, content)
        except (CorruptFileError, MissingFileError, OSError) as e:
            # An MDT that cannot be read or written (a lost base HFile, a damaged block): Java
            # fails the data commit (HoodieBackedTableMetadataWriter.update* ->
            # HoodieMetadataException out of BaseHoodieWriteClient.writeTableMetadata; only a
            # failed *initialization* is logged and skipped, and
            # hoodie.metadata.ignore.spurious.deletes only tolerates deletes of files the MDT
            # does not list), which blocks every later write. hudi_ds instead drops the MDT so
            # no reader sees a stale listing, and the data commit goes on (readers list storage).
            log.warning(
                "%s: the metadata table cannot be updated (%s: %s); deleting it -- readers "
                "list the storage until a write with hoodie.metadata.enable=true or "
                "`hudi-py metadata --rebuild %s` rebuilds it",
                self.state.storage.base_uri,
                type(e).__name__,
                e,
                self.state.storage.base_uri,
            )
            self.delete()

    def _apply(self, done: Instant, content: bytes) -> None:
        """:meth:`update` with the MDT in use (errors reading or writing it propagate)."""
        created = False
        to_build: list[str] = []
        if not self.present():
            # declared but missing, or a folder hoodie.properties does not declare (an MDT of
            # Hudi < 0.11, an interrupted creation or upgrade): rebuilt from the committed files
            folder = self._folder_present()
            if self.enable is not True and FILES_PARTITION not in self.declared and not folder:
                return
            self.create()
            created = True
            if not folder:  # a new metadata table: the stats partitions Hudi 1.x starts with
                to_build = self.stats.options.wanted_by_new_table(
                    bool(self.state.config.partition_fields), self.state.config.table_version
                )
        elif (self.rli.wanted_at_creation() and RECORD_INDEX_PARTITION not in self.declared) or (
            self.version < 8 and self.indexes.bloom.wanted(self.declared)
        ):
            # hoodie.metadata.record.index.enable=true on a metadata table without one (or
            # bloom filters on version 6, which hudi_ds builds at creation only): the metadata
            # table is built again with it (Java builds it with its async indexer)
            log.info("%s: building the metadata table's indexes", self.state.storage.base_uri)
            to_build = self.stats.maintained(self.declared)  # built again below
            if self.rli.enable is None and self.rli.maintained():
                self.rli.enable = True  # a record index it has is built again with it
                self.rli.new_partitioned = self.rli.partitioned  # of the same kind
            self.create()
            created = True
        tl = self.timeline()
        if settle_pending_indexing(self):  # a killed build's indexing instant (indexing.py)
            tl = self.timeline()
        # the files partition listed once for the schema and the deltacommit, unless a step
        # between them writes there (a recovery, a catch-up, an index build: listed again)
        listed: list[FileInfo] | None = None
        if not created:
            self.drop_unmaintained()
            listed = self.storage.list_files(FILES_PARTITION)
            self._adopt_schema(tl, listed)
        if self.recover(tl):
            tl, listed = self.timeline(), None
        if self._catch_up(done.requested_time, tl):
            tl, listed = self.timeline(), None
        built = self.build_bloom(self.build_stats(tl, to_build))
        if built is not tl:
            tl, listed = built, None
        self._mirror(done.requested_time, content, done.action, tl, listed)

    def build_bloom(self, tl: Timeline) -> Timeline:
        """Build ``bloom_filters`` when the options ask for it and the table lacks it, as an
        MDT-only deltacommit on versions 8 and 9 (a version-6 MDT is created again with it);
        the MDT's timeline afterwards."""
        if not self.indexes.bloom.wanted(self.declared) or tl.layout_version < 2:
            return tl
        when = new_instant_time(after=tl.latest_time(), max_ahead_ms=MAX_INSTANT_AHEAD_MS)
        self.indexes.bloom.build(when, self._writer(), self.schema, self.listing(self.state))
        crash_point("metadata")
        declared = ",".join(sorted({*self.declared, BLOOM_FILTERS_PARTITION}))
        self._update_config({METADATA_PARTITIONS_KEY: declared})
        return self.timeline()

    def build_stats(self, tl: Timeline, keep: Sequence[str] = ()) -> Timeline:
        """Build the stats partitions the options ask for, or ``keep`` names (those a to_build
        MDT had), and the table lacks (versions 8 and 9) as an MDT-only deltacommit (a crash
        leaves it pending: undone by :meth:`recover`, built again next time); the MDT's
        timeline afterwards."""
        self._adopt_schema(tl)
        partitioned = bool(self.state.config.partition_fields)
        asked = dict.fromkeys([*self.stats.options.wanted(partitioned), *keep])
        wanted = [p for p in asked if p not in self.declared]
        if not wanted:
            return tl
        if tl.layout_version < 2:
            log.warning("metadata table: hudi_ds builds %s on table versions 8 and 9", wanted)
            return tl
        when = new_instant_time(after=tl.latest_time(), max_ahead_ms=MAX_INSTANT_AHEAD_MS)
        defs = self.stats.build(wanted, when, self._writer(), self.schema, self.listing(self.state))
        crash_point("metadata")
        declared = ",".join(sorted({*self.declared, *wanted}))
        self._update_config({METADATA_PARTITIONS_KEY: declared, **defs})
        return self.timeline()

    def _folder_present(self) -> bool:
        """Whether ``.hoodie/metadata`` exists: the data timeline's listing tells (layout 1:
        the folder is in ``.hoodie``, listed by the commit just before), else one listing."""
        listed = self.state.timeline.listed_folder(METADATA_PATH)
        return listed if listed is not None else self.state.storage.is_dir(METADATA_PATH)

    def _adopt_schema(
        self, timeline: Timeline | None = None, listed: Sequence[FileInfo] | None = None
    ) -> None:
        """Write with the schema of the MDT's latest base file (Java versions differ in the
        other partitions' record types; a reader reconciles base and log schemas), once.
        ``timeline``: the MDT's timeline as just listed (else listed here); ``listed``: the
        files partition as just listed (else listed here)."""
        if self._schema_adopted:
            return
        if listed is None:
            listed = self.storage.list_files(FILES_PARTITION)
        sl = self.latest_slice(timeline, listed)
        path = f"{FILES_PARTITION}/{sl.base_file}"
        size = next((f.size for f in listed if f.path == path), None)
        schema = base_file_schema(self.storage, path, size)
        if schema:
            self.schema = schema
        self._schema_adopted = True

    # -- creation -------------------------------------------------------------------------------
    def create(self) -> None:
        """Create the MDT from the committed files (reference 6.2; Java
        ``HoodieBackedTableMetadataWriter.initializeFromFilesystem``): config, bootstrap
        deltacommit with a base HFile of the whole listing and a log file holding one empty
        DELETE block, then ``files`` in ``hoodie.table.metadata.partitions``."""
        data_storage = self.state.storage
        bloom = self.indexes.bloom
        with_bloom = bloom.options.enable is True or bloom.maintained(self.declared)
        if data_storage.exists(METADATA_PATH):
            data_storage.delete_dir(METADATA_PATH)
        self._layout = None
        self.stats.forget_file_groups()  # (a stats partition listed before is gone)
        self.schema = record_schema(self.version)
        self._schema_adopted = True
        cfg = TableConfig(metadata_table_properties(self.state.config))
        layout = cfg.timeline_layout_version
        folders = [".hoodie", ".hoodie/.aux", ".hoodie/.schema", ".hoodie/.temp", FILES_PARTITION]
        folders += (
            [".hoodie/archived"]
            if layout == 1
            else [".hoodie/timeline", ".hoodie/timeline/history", ".hoodie/.heartbeat"]
        )
        for d in folders:
            self.storage.makedirs(d)
        cfg.save(self.storage)
        boot = bootstrap_instant(self.version)
        listed = list(self.listing(self.state))
        changes = listing_changes(listed)
        writer = self._writer()
        req = Instant(boot, DELTA_COMMIT, State.REQUESTED)
        writer.create_requested(req)
        writer.transition_to_inflight(req)
        when = "#Created by hudi_ds"
        self.storage.write_bytes(
            f"{FILES_PARTITION}/{PARTITION_METADATA_FILE}",
            f"#partition metadata\n{when}\ncommitTime={boot}\npartitionDepth=1\n".encode(),
        )
        records = changes.records()
        records.setdefault(ALL_PARTITIONS, (PARTITION_LIST, {}))
        base_name = base_file_name(FILES_FILE_ID, MDT_WRITE_TOKEN, boot, ".hfile")
        base = self._hfile(records, base_name)
        self.storage.write_bytes(f"{FILES_PARTITION}/{base_name}", base)
        log_name = log_file_name(FILES_FILE_ID, boot, 1, MDT_WRITE_TOKEN)
        block = encode_empty_delete_block(boot)
        self.storage.write_bytes(f"{FILES_PARTITION}/{log_name}", block)
        index = (
            self.rli.bootstrap(boot, self.schema, self.version)
            if self.rli.wanted_at_creation()
            else []
        )
        blooms = bloom.initial_files(boot, self.schema, listed) if with_bloom else []
        md = CommitMetadata(
            partition_to_write_stats={
                FILES_PARTITION: [
                    _files_stat(base_name, len(base), len(records), boot),
                    _files_stat(log_name, len(block), 0, boot, base_name, [log_name], 1),
                ],
                **index_stats(index),
                **({BLOOM_FILTERS_PARTITION: [f.stat for f in blooms]} if blooms else {}),
            },
            extra_metadata={"schema": _schema_without_meta(self.schema)},
            operation_type="UPSERT_PREPPED",
        )
        if blooms:
            bloom.prepare(boot)
        written: list[PartitionFile] = [*index, *blooms]
        for f in written:
            self.storage.write_bytes(f.path, f.data)
        writer.complete(req, md.to_bytes(layout))
        crash_point("metadata")
        declared = [FILES_PARTITION] + ([RECORD_INDEX_PARTITION] if index else [])
        declared += [BLOOM_FILTERS_PARTITION] if blooms else []
        # the partitioned record index is told from the global one by its definition only
        defs = self.rli.write_definition() if index and self.rli.definition_needed() else {}
        self._update_config({METADATA_PARTITIONS_KEY: ",".join(declared), **defs})
        log.info(
            "%s: created the metadata table (files partition, %d partitions)",
            self.state.storage.base_uri,
            len(changes.partitions),
        )

    def delete(self) -> None:
        """Remove the MDT as Java does when a writer disables it (reference 6.3): clear
        ``hoodie.table.metadata.partitions`` (and ``.inflight``), then delete
        ``.hoodie/metadata`` (a crash in between leaves an undeclared folder, removed by the
        next write)."""
        had = self.declared or self.state.config.get(METADATA_PARTITIONS_INFLIGHT_KEY)
        if had:
            self._update_config(deletes=[METADATA_PARTITIONS_KEY, METADATA_PARTITIONS_INFLIGHT_KEY])
        if self.state.storage.is_dir(METADATA_PATH):  # (fresh: it may have been created since)
            self.state.storage.delete_dir(METADATA_PATH)
            log.info("%s: deleted the metadata table", self.state.storage.base_uri)
        self._layout = None
        self.stats.forget_file_groups()

    def drop_unmaintained(self) -> None:
        """Remove the MDT partitions hudi_ds does not keep in step (secondary and expression
        indexes; a stats, bloom filter partition or record index its option disables, or that
        lacks file groups) the way Java drops a partition: their folder is deleted and their
        names leave ``hoodie.table.metadata.partitions`` -- a stale index would mislead readers
        that use it (:meth:`IndexPartitions.unmaintained`)."""
        inflight = declared_partitions(self.state.config, METADATA_PARTITIONS_INFLIGHT_KEY)
        self.stats.forget_file_groups()
        kept = self.indexes.kept(self.declared)
        names = self.indexes.unmaintained(self.declared, inflight)
        if not names:
            return
        log.warning(
            "%s: removing metadata table partitions hudi_ds does not maintain: %s "
            "(it keeps %s in step)",
            self.state.storage.base_uri,
            ", ".join(names),
            ", ".join(sorted(kept)),
        )
        for name, why in self.indexes.reasons(names, self.declared).items():
            log.warning("%s: removing index %s: %s", self.state.storage.base_uri, name, why)
        keep = [p for p in self.declared if p in kept]
        updates = {METADATA_PARTITIONS_KEY: ",".join(keep)}
        if inflight:
            updates[METADATA_PARTITIONS_INFLIGHT_KEY] = ""
        self._update_config(updates)
        for name in names:
            if self.storage.exists(name) or self.storage.is_dir(name):
                self.storage.delete_dir(name)

    # -- crash recovery and catch-up ------------------------------------------------------------
    def recover(self, timeline: Timeline | None = None) -> bool:
        """Undo MDT instants a crash left pending, in ``files`` and the index partitions
        (:func:`~hudi_ds.metadata.recovery.undo_pending`); whether something was undone."""
        tl = timeline or self.timeline()
        undone = undo_pending(self.storage, self._writer(), tl, self.indexes.written())
        if undone:
            self.stats.forget_file_groups()  # the undone instants' files went
        return undone

    def _catch_up(self, exclude: str, mdt: Timeline) -> bool:
        """Apply completed data instants the MDT misses (a table service or rollback that ran
        without the hook, a write completed by a writer without it), oldest first; whether
        there were any. Exactly what the reader counts as missing
        (:func:`~hudi_ds.metadata.reader.lagging_instants`, one rule of what the bootstrap
        covers), so that the MDT is in step afterwards."""
        applied = False
        data = self.state.timeline
        for ts in lagging_instants(data, mdt):
            inst = data.get(ts)
            if ts == exclude or inst is None or inst.action not in FILE_CHANGING_ACTIONS:
                continue
            path = data.file_paths(ts).get(State.COMPLETED)
            if path is None:
                continue
            try:
                content = self.state.storage.read_bytes(path)
            except FileNotFoundError:
                continue
            log.info("metadata table: applying %s %s it missed", inst.action, ts)
            self._mirror(ts, content, inst.action, self.timeline())
            applied = True
        return applied

    # -- deltacommits ---------------------------------------------------------------------------
    def _mirror(
        self,
        instant_time: str,
        content: bytes,
        action: str,
        mdt: Timeline,
        listed: list[FileInfo] | None = None,
    ) -> None:
        """Mirror data instant ``instant_time`` as an MDT deltacommit; ``listed``: the files
        partition as listed since its last change (else listed here)."""
        existing = mdt.get(instant_time)
        if existing is not None and existing.is_completed:
            # mirrored by an earlier completion of this instant whose data completion did not
            # happen or was withdrawn (its fence found the table lock lost). A compaction then
            # runs again with the same instant time and other files, so the old mirror is
            # undone and the instant mirrored anew -- Java's HoodieBackedTableMetadataWriter
            # ("a re-attempted commit that got committed to metadata table, but failed in
            # datatable": it deletes the completed instant and proceeds)
            undo_completed(self.storage, self._writer(), existing, mdt)
            mdt, listed = self.timeline(), None
            self.stats.forget_file_groups()  # its files went
        if (
            action == ROLLBACK
            and mdt.layout_version >= 2
            and self._rollback(instant_time, content, mdt)
        ):
            return
        offered = self.stats.offered_metadata(instant_time, content)  # (not parsed again)
        changes = instant_changes(Instant(instant_time, action, State.COMPLETED), content, offered)
        # the stats partitions as listed since the last change of the MDT's files (update,
        # drop_unmaintained, recover, the builds, MDT compactions and cleans, and the end of
        # each mirrored instant forget them): one listing per instant
        maintained = self.stats.maintained(self.declared)
        stats = self.stats.records(instant_time, action, content, maintained, self.schema, mdt)
        stats.update(
            self.indexes.bloom_records(instant_time, action, content, self.declared, self.schema)
        )
        # one listing of the files partition serves the compaction's check and the
        # deltacommit's log name (listed again after a compaction, which writes there)
        if listed is None:
            listed = self.storage.list_files(FILES_PARTITION)
        if self._compact_if_due(mdt, listed):
            mdt = self.timeline()
            listed = None
        index = self._index_files(instant_time, action, content, mdt)
        extra = self.indexes.log_files(instant_time, stats, index, mdt, self.schema)
        try:
            self._deltacommit(instant_time, changes or FilesChanges(), mdt, extra, listed)
        finally:
            self.stats.forget_file_groups()  # its log files joined the slices

    def _rollback(self, instant_time: str, content: bytes, tl: Timeline) -> bool:
        """Hudi 1.x mirrors data rollback R as MDT rollback R: the MDT deltacommits of the
        rolled-back instants are undone (their log files deleted), an empty rollback when the
        MDT never had them (the v9 rollback fixture). Java
        ``HoodieBackedTableMetadataWriter.update(HoodieRollbackMetadata, ..)``.

        Returns:
            False when that cannot express the rollback -- a rolled-back deltacommit is already
            compacted into the MDT base file, or the rollback appended command blocks (sizes
            changed) -- and a deltacommit with tombstones must (Hudi 0.x's way).
        """
        md = RollbackMetadata.from_bytes(content)
        if any(pm.rollback_log_files for pm in md.partition_metadata.values()):
            return False
        targets = md.rolled_back_instants
        sl = self.latest_slice(tl)
        undo: list[Instant] = []
        for t in targets:
            inst = tl.get(t)
            if inst is None:
                continue
            # compacted: completed before the latest base was requested (the slice rule)
            if inst.action != DELTA_COMMIT or (inst.completion_time or t) < sl.base_instant:
                return False  # compacted (or not a deltacommit): tombstones it is
            undo.append(inst)
        undone = {i.requested_time for i in undo}
        logs = [
            n
            for n in self._file_names()
            if (p := parse_log_file_name(n)) is not None
            and p.file_id == FILES_FILE_ID
            and p.instant_time in undone
        ]
        plan = rollback_plan(self.storage, targets, sl.base_instant, logs)
        writer = self._writer()
        req = Instant(instant_time, ROLLBACK, State.REQUESTED)
        if not writer.create_requested(req, plan.to_bytes()):
            raise CorruptFileError(f"metadata table: instant {instant_time} exists")
        writer.transition_to_inflight(req)
        crash_point("metadata")
        # the index partitions' logs of those deltacommits go with them
        self.indexes.delete_logs(undone)
        deleted = [n for n in sorted(logs) if self.storage.delete(f"{FILES_PARTITION}/{n}")]
        for inst in undo:
            writer.delete_instant_files(inst)
        crash_point("metadata")
        out = RollbackMetadata(
            start_rollback_time=instant_time,
            total_files_deleted=len(deleted),
            commits_rollback=[i.requested_time for i in undo],
            partition_metadata={
                FILES_PARTITION: RollbackPartitionMetadata(
                    partition_path=FILES_PARTITION,
                    success_delete_files=[
                        self.storage.uri(f"{FILES_PARTITION}/{n}") for n in deleted
                    ],
                )
            }
            if deleted
            else {},
            version=1,
            instants_rollback=[InstantInfo(i.requested_time, DELTA_COMMIT) for i in undo],
        )
        writer.complete(Instant(instant_time, ROLLBACK, State.INFLIGHT), out.to_bytes())
        crash_point("metadata")
        return True

    def _deltacommit(
        self,
        instant_time: str,
        changes: FilesChanges,
        mdt: Timeline,
        extra: Sequence[PartitionFile] = (),
        listed: Sequence[FileInfo] | None = None,
    ) -> None:
        """``listed``: the ``files`` partition as listed since its last change (else listed)."""
        layout, _ = self._mdt_layout()
        records = changes.records()
        # every block carries the partition list (Java: createPartitionListRecord per commit)
        records.setdefault(ALL_PARTITIONS, (PARTITION_LIST, {}))
        hfile = self._hfile(records)
        block = encode_hfile_data_block(instant_time, self.schema, hfile)
        if listed is None:
            listed = self.storage.list_files(FILES_PARTITION)
        sl = self.latest_slice(mdt, listed)
        name = next_log_name(
            layout, FILES_FILE_ID, sl.base_instant, instant_time, self._file_names(listed)
        )
        logs = [*sl.log_files, name]
        n = len(records)
        stat = _files_stat(
            name, len(block), n, sl.base_instant, sl.base_file, logs, 1 if layout == 2 else None
        )
        md = CommitMetadata(
            partition_to_write_stats={FILES_PARTITION: [stat]},
            extra_metadata={"schema": _schema_without_meta(self.schema)},
            operation_type="UPSERT_PREPPED",
        )
        for f in extra:  # the index partitions' logs (index_partitions)
            md.partition_to_write_stats.setdefault(f.stat.partition_path or "", []).append(f.stat)
        after = [mdt]  # the MDT's timeline with the files written below
        writer = self._writer(on_write=lambda info: after.append(after.pop().with_file(info)))
        req = Instant(instant_time, DELTA_COMMIT, State.REQUESTED)
        if not writer.create_requested(req, listed=mdt):
            raise CorruptFileError(
                f"metadata table: instant {instant_time} exists and is not pending"
            )
        # the inflight file names the log file, so that a crash before completion is undone
        writer.transition_to_inflight(req, md.to_bytes(layout))
        crash_point("metadata")
        self.storage.write_bytes(f"{FILES_PARTITION}/{name}", block)
        for f in extra:
            self.storage.write_bytes(f.path, f.data)
        crash_point("metadata")
        writer.complete(req, md.to_bytes(layout))
        crash_point("metadata")
        if self._mdt_config is not None and self._mdt_config[0] is self._layout:
            # for the commit's services (a config read before the MDT was created again: no)
            self.state.metadata = TableState(self.storage, self._mdt_config[1], after[0])

    # -- index partitions -----------------------------------------------------------------------
    def _index_files(
        self, instant_time: str, action: str, content: bytes, mdt: Timeline
    ) -> list[IndexFile]:
        """The record index's and secondary indexes' files of the deltacommit mirroring
        ``action``; a change one cannot express removes its partition
        (metadata.record_index_writer, metadata.secondary_index_writer)."""
        files: list[IndexFile] = []
        if self.rli.maintained():
            rli = self.rli.plan(instant_time, action, content, mdt, self.schema)
            if rli is None:
                self._drop(RECORD_INDEX_PARTITION)
            else:
                files += rli
        si = self.indexes.si
        wanted = si.maintained(self.declared)
        for name, got in si.plan(instant_time, action, content, mdt, self.schema, wanted).items():
            if got is None:
                self._drop(name)
            else:
                files += got
        return files

    def _drop(self, partition: str) -> None:
        """Remove one MDT partition: out of ``hoodie.table.metadata.partitions``, then its
        folder (Java's partition deletion order)."""
        keep = [p for p in self.declared if p != partition]
        self._update_config({METADATA_PARTITIONS_KEY: ",".join(keep)})
        self.storage.delete_dir(partition)
        log.warning(
            "%s: removed metadata table partition %s", self.state.storage.base_uri, partition
        )

    # -- HFiles ---------------------------------------------------------------------------------
    def _sorted(self, records: Records, file_name: str | None) -> tuple[list[bytes], list[bytes]]:
        keys = sorted(records, key=lambda k: k.encode("utf-8"))
        values = [
            encode_files_value(records[k][0], records[k][1], self.schema, file_name=file_name)
            for k in keys
        ]
        return [k.encode("utf-8") for k in keys], values

    def _hfile(self, records: Records, base_name: str | None = None) -> bytes:
        """A log block's HFile, or with ``base_name`` a base file (bloom filter, min/max keys;
        each record names the file in ``_hoodie_file_name``, as Java's base files do -- but
        the bootstrap base file of Hudi 1.1, table version 9)."""
        boot = base_name is not None and bootstrap_instant(self.version) in base_name
        own = None if boot and self.version >= 9 else base_name
        keys, values = self._sorted(records, own)
        if base_name is None:
            return write_hfile(keys, values, file_info={"schema": self.schema.encode("utf-8")})
        return mdt_base_hfile(keys, values, self.schema)

    # -- reading the MDT ------------------------------------------------------------------------
    def _file_names(self, listed: Sequence[FileInfo] | None = None) -> list[str]:
        """The names in the ``files`` partition (``listed``: a listing of it, else one)."""
        return [
            f.name for f in (self.storage.list_files(FILES_PARTITION) if listed is None else listed)
        ]

    def latest_slice(
        self, timeline: Timeline | None = None, listed: Sequence[FileInfo] | None = None
    ) -> MetadataSlice:
        """The latest slice of ``files-0000-0`` as of the MDT's completed instants, sliced
        as the MDT's reader slices it (:func:`hudi_ds.metadata.reader.latest_file_slice`:
        version 6 by the base instant in log names; 8/9 by completion time, a log belonging to
        the newest base instant requested at or before its deltacommit completed).
        """
        tl = timeline or self.timeline()
        slices = files_slices(self.storage, tl, listed=listed)
        found = [s for s in slices if s.file_id == FILES_FILE_ID]
        base = found[0].base_file if found else None
        if base is None:
            raise CorruptFileError(f"{self.storage.base_uri}: metadata table has no base file")
        s = found[0]
        base_ts = s.base_instant_time
        base_name = file_name_of(base.path)
        logs = [file_name_of(lf.path) for lf in s.log_files]
        # the bootstrap's own log (its empty DELETE block) is not a deltacommit to compact
        if tl.layout_version == 1:
            own = sum(1 for lf in s.log_files if lf.name.version == 1 and base_ts < _SYNTHETIC_MAX)
        else:
            own = sum(1 for lf in s.log_files if lf.instant_time == base_ts)
        return MetadataSlice(base_ts, base_name, logs, len(logs) - own)

    def read_records(self, timeline: Timeline | None = None) -> Records:
        """The merged ``files`` records of the latest slice (tombstones not yet merged away
        included), read as the MDT's reader reads them (:meth:`MetadataReader.records`:
        completed MDT instants valid for the data timeline, rollback command blocks)."""
        tl = timeline or self.timeline()
        cfg = self._config()
        if cfg is None:  # pragma: no cover - callers check present() first
            raise CorruptFileError(f"{self.storage.base_uri}: no metadata table config")
        reader = MetadataReader(self.storage, cfg, tl, self.state.timeline, self.version)
        return reader.records()

    def files(self) -> dict[str, dict[str, int]]:
        """Live files per data partition path (``""`` non-partitioned): name -> size."""
        recs = self.read_records()
        out: dict[str, dict[str, int]] = {}
        live = [k for k, (_, d) in recs.get(ALL_PARTITIONS, (0, {}))[1].items() if not d]
        for key in live:
            entries: dict[str, FileEntry] = recs.get(key, (0, {}))[1]
            out[partition_path_of_id(key)] = {n: s for n, (s, d) in entries.items() if not d}
        return out

    # -- compaction -----------------------------------------------------------------------------
    def _compact_if_due(self, tl: Timeline, listed: Sequence[FileInfo] | None = None) -> bool:
        """Compact when due; whether it did. ``listed``: the ``files`` partition's listing."""
        if self.latest_slice(tl, listed).delta_commits < self.max_delta_commits:
            return False
        # Java (validateTimelineBeforeSchedulingCompaction) does not compact while a data
        # instant the MDT already mirrors is pending: its rollback must be able to undo it
        pending = {i.requested_time for i in self.state.timeline.pending()}
        waiting = [
            i.requested_time
            for i in tl.completed().filter_actions(DELTA_COMMIT)
            if i.requested_time in pending
        ]
        if waiting:
            log.info("metadata table: compaction waits for pending data instants %s", waiting)
            return False
        self.compact(tl)
        return True

    def compact(self, timeline: Timeline | None = None) -> str:
        """Write a new base HFile holding the merged ``files`` listing (tombstones dropped) as
        MDT compaction C; Java ``HoodieBackedTableMetadataWriter.compactIfNecessary``.

        Returns:
            The compaction instant.
        """
        tl = timeline or self.timeline()
        layout = tl.layout_version
        sl = self.latest_slice(tl)
        records = self.read_records(tl)
        merged: Records = {}
        for key, (rtype, entries) in records.items():
            live = {n: e for n, e in entries.items() if not e[1]}
            if live or key == ALL_PARTITIONS:
                merged[key] = (rtype, live)
        last_delta = max(i.requested_time for i in tl.completed().filter_actions(DELTA_COMMIT))
        if layout == 1:
            when = last_delta + "001"  # Java 0.x HoodieTableMetadataUtil.createCompactionTimestamp
        else:
            # after every requested and completion time of the MDT timeline: a lagging clock
            # must not date C before a deltacommit whose log the plan holds
            when = new_instant_time(after=tl.latest_time(), max_ahead_ms=MAX_INSTANT_AHEAD_MS)
        op = CompactionOperation(
            base_instant_time=sl.base_instant,
            delta_file_paths=list(sl.log_files),
            data_file_path=sl.base_file,
            file_id=FILES_FILE_ID,
            partition_path=FILES_PARTITION,
            metrics={},
        )
        plan = CompactionPlan(operations=[op], version=2)
        writer = self._writer()
        req = Instant(when, COMPACTION, State.REQUESTED)
        writer.create_requested(req, plan.to_bytes())
        writer.transition_to_inflight(req)
        crash_point("metadata")
        # a writer that lost the table lock (paused past its lease) writes nothing more: the
        # holder now may have undone this compaction (recover) and written the same file name
        self._fence()
        name = base_file_name(FILES_FILE_ID, MDT_WRITE_TOKEN, when, ".hfile")
        data = self._hfile(merged, name)
        self.storage.write_bytes(f"{FILES_PARTITION}/{name}", data)
        stat = _files_stat(name, len(data), len(merged), sl.base_instant)
        md = CommitMetadata(
            partition_to_write_stats={FILES_PARTITION: [stat]},
            compacted=True,
            extra_metadata={"schema": _schema_without_meta(self.schema)},
            operation_type="COMPACT",
        )
        # every file group is compacted at once, as Java does: the stats, bloom filter and
        # secondary index partitions too
        for f in self.indexes.compaction_files(when, tl, self.schema, self.declared):
            self.storage.write_bytes(f.path, f.data)
            md.partition_to_write_stats.setdefault(f.stat.partition_path or "", []).append(f.stat)
        self._complete_fenced(writer, req, md.to_bytes(layout))
        log.info("metadata table: compacted into %s (%d records)", name, len(merged))
        self.clean(after=when)
        return when

    def _fence(self, written: float | None = None) -> None:
        """Raise :class:`~hudi_ds.errors.LockLostError` if the table lock of the service
        running this update was lost (``TableState.fence``; nothing without one) -- by now, or
        by ``written`` (``time.monotonic()``) when given."""
        if self.state.fence is not None:
            self.state.fence(written)

    def _complete_fenced(self, writer: TimelineWriter, inst: Instant, content: bytes) -> None:
        """Complete MDT compaction or clean ``inst``, fenced as the data table's completions:
        the lock checked before the completed file is written and for the time it was
        written, the file deleted again if the lock was lost (the instant is pending: the
        next update undoes it)."""
        self._fence()
        done = writer.complete(inst, content)
        written = time.monotonic()
        try:
            self._fence(written)
        except LockLostError:
            self.storage.delete(writer.path_of(done))
            log.error(
                "metadata table: withdrew %s %s: the table lock was lost",
                done.action,
                done.requested_time,
            )
            raise

    def clean(self, after: str) -> list[str]:
        """Delete the file slices of every MDT file group (``files-0000-0`` and the index
        partitions') older than the two latest, after MDT compaction ``after``
        (:func:`hudi_ds.metadata.mdt_clean.clean`); the deleted file names."""
        tl = self.timeline()
        doomed = {FILES_PARTITION: older_slices_files(tl, self._file_names())}
        doomed.update(self.indexes.older_files(tl, self.declared))
        try:
            return mdt_clean.clean(
                self.storage, tl, doomed, after, self._writer(), self._fence, self._complete_fenced
            )
        finally:
            self.stats.forget_file_groups()  # the compaction and the clean changed the slices
