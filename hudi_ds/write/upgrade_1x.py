"""Tables of version 6 (or 8) upgraded to 8 or 9 by a write that asks for it.

A write with ``hoodie.write.table.version=8`` or ``9`` (``hoodie.write.auto.upgrade``, true by
default) upgrades an older table before its instant, as Hudi 1.x's write client does
(``BaseHoodieWriteClient.tryUpgrade`` -> ``UpgradeDowngrade.run``): one handler per step, the
``hoodie.properties`` entries of every step written in one update at the end.

* ``SixToSevenUpgradeHandler``: nothing (version 7 is the 0.16 bridge release's).
* ``SevenToEightUpgradeHandler``: the timeline moves to layout 2 -- every instant file of
  ``.hoodie`` is written to ``.hoodie/timeline`` under its layout-2 name (completed ones as
  ``T_C.<action>``; the pending files of a clustering as ``T.clustering.*``), commit and
  delta commit metadata (and completed replace commit metadata) rewritten from JSON to Avro
  (``upgradeActiveTimelineInstant`` / ``rewriteTimelineV1InstantFileToV2Format``); the
  archived timeline becomes the LSM history in ``.hoodie/timeline/history``
  (``upgradeToLSMTimeline``, read by ``LegacyArchivedMetaEntryReader``); and the entries
  ``hoodie.timeline.path=timeline``, ``hoodie.table.initial.version=6``, the merge mode /
  payload class / strategy id (``upgradeMergeMode``), ``hoodie.table.keygenerator.type``
  (``upgradeKeyGeneratorType``), the bootstrap index type (``upgradeBootstrapIndexType``),
  a CUSTOM key generator's typed partition fields (``upgradePartitionFields``), and
  ``hoodie.timeline.layout.version=2`` with the version (``HoodieTableConfig.setTableVersion``).
* ``EightToNineUpgradeHandler``: payload classes deprecated by RFC-97 become
  ``hoodie.table.legacy.payload.class`` with their merge mode, partial update mode and merge
  properties; ``hoodie.table.precombine.field`` becomes ``hoodie.table.ordering.fields``.

Where hudi_ds differs from Java, and why:

* Completion times. Java names a completed layout-1 instant with its file's modification time.
  A table copied or restored has the copy's times there, later than every instant: a version-6
  log file, named after its slice's base instant, would then fall into the latest slice of its
  file group under layout 2's rule (the slice with the greatest base instant at or before the
  completion time of the instant in the log's name). hudi_ds takes the requested time, the
  order version 6 committed in (its own layout-1 timeline reads it so): every version-6 log
  file stays in its slice for every layout-2 reader, so the MOR log files need no compaction
  first (Java compacts them: ``UpgradeDowngradeUtils.rollbackFailedWritesAndCompact``).
* A pending compaction is refused: the log files written on top of it are named after it in
  version 6, and layout 2 would read them as files of an instant never completed.
* The metadata table is rebuilt at the new version from the committed files (as
  ``HoodieBackedTableMetadataWriter.initializeFromFilesystem``) instead of being upgraded in
  place (Java deletes it too when it lags: ``checkAndHandleMetadataTable``): the update of
  ``hoodie.properties`` removes ``hoodie.table.metadata.partitions``, then the metadata table
  is built again and declared. A crash in between leaves the old folder undeclared (readers
  list the storage), and the next commit rebuilds it (``MetadataWriter.update``).
* Only the pending files of a replace commit that is a clustering become ``T.clustering.*``
  (Java renames every pending replace commit file, insert_overwrite's too).

Crash safety. Failed writes are rolled back first (version-6 rules), then the layout-2 files
are written while the table still says version 6 (readers keep reading ``.hoodie``; a rerun
clears ``.hoodie/timeline`` and writes it again from what ``.hoodie`` holds then); the update
of ``hoodie.properties`` (backup-file protocol) is the commit point; only then are the layout-1
instant files deleted and the metadata table rebuilt. A crash after the commit point leaves
layout-1 instant files in ``.hoodie`` that no layout-2 reader lists (Java, which deletes each
old file after writing its new one, leaves no table readable by version-6 rules in between) and
the old metadata table undeclared, rebuilt by the next commit. Each step has an ``upgrade``
crash point (:mod:`hudi_ds.faults`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from hudi_ds.config import Options, WriteConfig
from hudi_ds.errors import ConcurrentWriterError, ConfigError
from hudi_ds.faults import crash_point
from hudi_ds.log.archive import archived_records_v1
from hudi_ds.merge.modes import (
    AWS_DMS_PAYLOAD,
    EVENT_TIME_PAYLOAD,
    MERGE_PROPERTY_PREFIX,
    MYSQL_DEBEZIUM_PAYLOAD,
    OVERWRITE_NON_DEFAULTS_PAYLOAD,
    PARTIAL_UPDATE_PAYLOAD,
    POSTGRES_DEBEZIUM_PAYLOAD,
)
from hudi_ds.metadata.records import (
    METADATA_PARTITIONS_INFLIGHT_KEY,
    METADATA_PARTITIONS_KEY,
    METADATA_PATH,
)
from hudi_ds.storage import Storage
from hudi_ds.table_config import (
    COMMIT_TIME_STRATEGY_ID,
    CUSTOM_STRATEGY_ID,
    DEFAULT_PAYLOAD,
    EVENT_TIME_STRATEGY_ID,
    OVERWRITE_LATEST_PAYLOAD,
    PAYLOAD_BASED_STRATEGY_ID,
    TableConfig,
    TableType,
    update_table_config,
)
from hudi_ds.timeline.avro_record import AvroRecord
from hudi_ds.timeline.instant import (
    CLEAN,
    CLUSTERING,
    COMMIT,
    COMPACTION,
    DELTA_COMMIT,
    INDEXING,
    LOG_COMPACTION,
    REPLACE_COMMIT,
    ROLLBACK,
    SAVEPOINT,
    Instant,
    State,
    completed_action,
)
from hudi_ds.timeline.lsm import LsmEntry, LsmTimelineWriter, entry_of
from hudi_ds.timeline.metadata import CommitMetadata
from hudi_ds.timeline.plans import (
    CleanerPlan,
    CleanMetadata,
    CompactionPlan,
    IndexCommitMetadata,
    RequestedReplaceMetadata,
    RollbackMetadata,
    SavepointMetadata,
)
from hudi_ds.timeline.timeline import HOODIE_FOLDER
from hudi_ds.timeline.view import TableState
from hudi_ds.write.metadata_sync import install_metadata_writer
from hudi_ds.write.rollback_executor import rollback_failed_writes

log = logging.getLogger("hudi_ds.write")

#: the versions a write may ask an existing table of version 6 or 8 to be upgraded to
TARGET_VERSIONS = (8, 9)
CRASH_POINT = "upgrade"
LAYOUT2_TIMELINE = f"{HOODIE_FOLDER}/timeline"

#: ``HoodieRecordMerger``'s built-in strategy ids
_BUILTIN_STRATEGIES = (
    EVENT_TIME_STRATEGY_ID,
    COMMIT_TIME_STRATEGY_ID,
    PAYLOAD_BASED_STRATEGY_ID,
    CUSTOM_STRATEGY_ID,
)
#: ``UpgradeDowngradeUtils.PAYLOAD_CLASSES_TO_HANDLE``: recorded as the legacy payload in v9
_DEPRECATED_PAYLOADS = (
    AWS_DMS_PAYLOAD,
    DEFAULT_PAYLOAD,
    EVENT_TIME_PAYLOAD,
    MYSQL_DEBEZIUM_PAYLOAD,
    OVERWRITE_NON_DEFAULTS_PAYLOAD,
    OVERWRITE_LATEST_PAYLOAD,
    PARTIAL_UPDATE_PAYLOAD,
    POSTGRES_DEBEZIUM_PAYLOAD,
)
_EVENT_TIME_PAYLOADS_V9 = (
    EVENT_TIME_PAYLOAD,
    MYSQL_DEBEZIUM_PAYLOAD,
    PARTIAL_UPDATE_PAYLOAD,
    POSTGRES_DEBEZIUM_PAYLOAD,
)
_COMMIT_TIME_PAYLOADS_V9 = (AWS_DMS_PAYLOAD, OVERWRITE_NON_DEFAULTS_PAYLOAD)

#: ``KeyGeneratorType`` names of the key generator classes Java knows
_KEYGEN_TYPES = {
    "org.apache.hudi.keygen.SimpleKeyGenerator": "SIMPLE",
    "org.apache.hudi.keygen.SimpleAvroKeyGenerator": "SIMPLE_AVRO",
    "org.apache.hudi.keygen.ComplexKeyGenerator": "COMPLEX",
    "org.apache.hudi.keygen.ComplexAvroKeyGenerator": "COMPLEX_AVRO",
    "org.apache.hudi.keygen.TimestampBasedKeyGenerator": "TIMESTAMP",
    "org.apache.hudi.keygen.TimestampBasedAvroKeyGenerator": "TIMESTAMP_AVRO",
    "org.apache.hudi.keygen.CustomKeyGenerator": "CUSTOM",
    "org.apache.hudi.keygen.CustomAvroKeyGenerator": "CUSTOM_AVRO",
    "org.apache.hudi.keygen.NonpartitionedKeyGenerator": "NON_PARTITION",
    "org.apache.hudi.keygen.NonpartitionedAvroKeyGenerator": "NON_PARTITION_AVRO",
    "org.apache.hudi.keygen.GlobalDeleteKeyGenerator": "GLOBAL_DELETE",
    "org.apache.hudi.keygen.GlobalAvroDeleteKeyGenerator": "GLOBAL_DELETE_AVRO",
    "org.apache.hudi.keygen.AutoRecordGenWrapperKeyGenerator": "AUTO_RECORD",
    "org.apache.hudi.keygen.AutoRecordGenWrapperAvroKeyGenerator": "AUTO_RECORD_AVRO",
    "org.apache.spark.sql.hudi.command.SqlKeyGenerator": "SPARK_SQL",
    "org.apache.spark.sql.hudi.command.UuidKeyGenerator": "SPARK_SQL_UUID",
    "org.apache.spark.sql.hudi.command.MergeIntoKeyGenerator": "SPARK_SQL_MERGE_INTO",
}
_BOOTSTRAP_CLASS = "hoodie.bootstrap.index.class"
_BOOTSTRAP_TYPE = "hoodie.bootstrap.index.type"
_BOOTSTRAP_TYPES = {
    "org.apache.hudi.common.bootstrap.index.hfile.HFileBootstrapIndex": "HFILE",
    "org.apache.hudi.common.bootstrap.index.HFileBootstrapIndex": "HFILE",
    "org.apache.hudi.common.bootstrap.index.NoOpBootstrapIndex": "NO_OP",
}
_BOOTSTRAP_CLASSES = {
    "HFILE": "org.apache.hudi.common.bootstrap.index.hfile.HFileBootstrapIndex",
    "NO_OP": "org.apache.hudi.common.bootstrap.index.NoOpBootstrapIndex",
}


@dataclass
class TimelineUpgrade:
    """What a write asking for version 8 or 9 does to a table of version 6 (or 8).

    Attributes:
        from_version: the table's version when the write was planned (6 or 8).
        to_version: 8 or 9.
        options: the write's options (key generator fields, metadata table switch).
        applied: :meth:`apply` ran (a copy pickled to a Spark task afterwards does nothing).
    """

    from_version: int
    to_version: int
    options: Options
    applied: bool = False

    def upgraded(self, config: TableConfig) -> TableConfig:
        """``config`` as :meth:`apply` leaves it (nothing is written): what the write resolves
        its options against."""
        updates, deletes = upgrade_changes(config, self.to_version, self.options)
        props = {k: v for k, v in config.props.items() if k not in deletes}
        props.update(updates)
        return TableConfig(props)

    def apply(self, state: TableState, is_failed: Callable[[str], bool] | None = None) -> None:
        """Upgrade the opened table (a writer holds the table lock); ``state`` is then the
        upgraded table (config, timeline and metadata writer).

        Args:
            state: the opened table.
            is_failed: whether the writer of a pending instant failed (its instant is rolled
                back first); default every pending write.

        Raises:
            ConcurrentWriterError: a live writer's instant is pending (nothing is changed
                but the failed writes rolled back).
            ConfigError: a compaction is pending.
        """
        if self.applied:
            return
        storage = state.storage
        current = TableConfig.load(storage)
        version = current.table_version
        had_mdt = bool(current.get(METADATA_PARTITIONS_KEY)) or storage.is_dir(METADATA_PATH)
        if version < self.to_version:
            if version == 6:
                state.config = current
                names = _quiet_layout1_timeline(state, is_failed, self.to_version)
                crash_point(CRASH_POINT)
                _write_layout2_timeline(storage, names)
                crash_point(CRASH_POINT)
                _write_lsm_history(storage, current)
                crash_point(CRASH_POINT)
            updates, deletes = upgrade_changes(current, self.to_version, self.options)
            update_table_config(storage, updates, deletes)
            crash_point(CRASH_POINT)
            if version == 6:
                for name in names:
                    storage.delete(f"{HOODIE_FOLDER}/{name}")
            log.info(
                "upgraded %s from table version %d to %d (as Hudi 1.x's UpgradeDowngrade)",
                storage.base_uri,
                version,
                self.to_version,
            )
        state.refresh()
        mdt = install_metadata_writer(state, self.options)
        if (
            version < self.to_version
            and had_mdt
            and self.options.get(WriteConfig.METADATA_ENABLE) is not False
        ):
            # rebuilt at the new version now; after a crash from here on, the next commit
            # finds the old folder undeclared and rebuilds it (MetadataWriter.update)
            mdt.create()
        self.applied = True


def plan_timeline_upgrade(
    state: TableState, config: TableConfig, options: Options
) -> TimelineUpgrade | None:
    """The upgrade to 8 or 9 the write must run first (None: none is asked or needed).

    ``config`` is the table's config as the write sees it (a table of version 3-5 is upgraded
    to 6 first, :mod:`hudi_ds.write.upgrade`). Nothing is written.

    Raises:
        ConfigError: the table's timeline layout is not 1 (version 6), or a compaction is
            pending on a version-6 table.
    """
    if not options.is_set(WriteConfig.WRITE_TABLE_VERSION):
        return None
    asked = int(options.get(WriteConfig.WRITE_TABLE_VERSION))
    version = config.table_version
    if asked <= version or asked not in TARGET_VERSIONS or version not in (6, 8):
        return None  # the same version, or a downgrade (refused by the options' check)
    if not options.get(WriteConfig.AUTO_UPGRADE):
        return None  # Java UpgradeDowngrade.needsUpgrade: written at the table's version
    where = f"the table at {state.storage.base_uri} is version {version}"
    if version == 6:
        layout = config.timeline_layout_version
        if layout != 1:
            raise ConfigError(
                f"{where} with timeline layout {layout} (hoodie.timeline.layout.version); "
                f"its upgrade to {asked} (asked by '{WriteConfig.WRITE_TABLE_VERSION.key}') "
                "moves a layout-1 timeline only (SevenToEightUpgradeHandler.upgradeToLSMTimeline)"
            )
        _check_no_pending_compaction(state, where, asked)
    return TimelineUpgrade(version, asked, options)


def _check_no_pending_compaction(state: TableState, where: str, asked: int) -> None:
    pending = state.timeline.pending().filter_actions(COMPACTION, LOG_COMPACTION)
    if len(pending):
        times = ", ".join(i.requested_time for i in pending)
        raise ConfigError(
            f"{where} with pending compaction {times}: its upgrade to {asked} (asked by "
            f"'{WriteConfig.WRITE_TABLE_VERSION.key}') would hide the log files written on top "
            "of it (version 6 names them after the compaction, version 8 after their own "
            f"delta commit); run it first (hudi-py compact run {state.storage.base_uri}), "
            "then write again. Nothing was written"
        )


# -- hoodie.properties ------------------------------------------------------------------------
def upgrade_changes(
    config: TableConfig, to_version: int, options: Options
) -> tuple[dict[str, str], list[str]]:
    """The ``hoodie.properties`` entries set and removed by the upgrade of ``config`` to
    ``to_version``: each handler from the table's version on, each one seeing the entries
    the previous one left (as upgrading with Hudi 1.0, then with 1.1)."""
    props = dict(config.props)
    deletes: set[str] = set()
    if config.table_version < 8:
        props.update(_six_to_eight(config, options))
    if to_version >= 9 and config.table_version < 9:
        nine, gone = _eight_to_nine(TableConfig(props))
        props.update(nine)
        for k in gone:
            props.pop(k, None)
        deletes.update(gone)
    props[TableConfig.VERSION.key] = str(to_version)
    props[TableConfig.TIMELINE_LAYOUT_VERSION.key] = "2"
    # the metadata table is rebuilt at the new version (module doc): undeclared until then
    deletes.add(METADATA_PARTITIONS_KEY)
    if config.get(METADATA_PARTITIONS_INFLIGHT_KEY):
        deletes.add(METADATA_PARTITIONS_INFLIGHT_KEY)
    updates = {k: v for k, v in props.items() if config.props.get(k) != v and k not in deletes}
    updates.pop(TableConfig.CHECKSUM.key, None)
    return updates, sorted(k for k in deletes if k in config.props)


def _six_to_eight(config: TableConfig, options: Options) -> dict[str, str]:
    """``SevenToEightUpgradeHandler``'s entries."""
    c = TableConfig
    props = config.props
    out = {c.TIMELINE_PATH.key: "timeline", c.INITIAL_VERSION.key: str(config.table_version)}
    keygen = c.KEY_GENERATOR_CLASS.of(props)
    if keygen:
        # upgradeKeyGeneratorType: KeyGeneratorType.fromClassName (unknown: USER_PROVIDED)
        out[c.KEY_GENERATOR_CLASS.key] = keygen
        out[c.KEY_GENERATOR_TYPE.key] = _KEYGEN_TYPES.get(keygen, "USER_PROVIDED")
        if _KEYGEN_TYPES.get(keygen, "").startswith("CUSTOM") and options.is_set(
            WriteConfig.PARTITION_FIELDS
        ):
            # upgradePartitionFields: the writer's typed fields ("country:SIMPLE,...")
            fields: list[str] = options.get(WriteConfig.PARTITION_FIELDS)
            out[c.PARTITION_FIELDS.key] = ",".join(fields)
    out.update(_merge_mode_v8(config))
    # upgradeBootstrapIndexType
    cls = props.get(_BOOTSTRAP_CLASS) or _BOOTSTRAP_CLASSES.get(props.get(_BOOTSTRAP_TYPE, ""))
    if cls:
        out[_BOOTSTRAP_CLASS] = cls
        out[_BOOTSTRAP_TYPE] = _BOOTSTRAP_TYPES.get(cls, "HFILE")
    return out


def _payload_class(config: TableConfig) -> str:
    """``HoodieTableConfig.getPayloadClass`` of Hudi 1.1: the recorded class, else the one the
    commit-time merge mode stands for, else ``DefaultHoodieRecordPayload``."""
    recorded = config.payload_class
    if recorded:
        return recorded.replace("com.uber.hoodie", "org.apache.hudi")
    mode = (TableConfig.RECORD_MERGE_MODE.of(config.props) or "").upper()
    return OVERWRITE_LATEST_PAYLOAD if mode == "COMMIT_TIME_ORDERING" else DEFAULT_PAYLOAD


def _merge_mode_v8(config: TableConfig) -> dict[str, str]:
    """``SevenToEightUpgradeHandler.upgradeMergeMode``: a custom payload merges through it; a
    MOR table with an ordering field by event time (its 0.x log merge pre-combined by it);
    otherwise ``DefaultHoodieRecordPayload`` means event time, any other commit time."""
    payload = _payload_class(config)
    if payload not in (DEFAULT_PAYLOAD, EVENT_TIME_PAYLOAD, OVERWRITE_LATEST_PAYLOAD):
        return _merge_entries(payload, "CUSTOM", PAYLOAD_BASED_STRATEGY_ID)
    precombine = TableConfig.PRECOMBINE_FIELD.of(config.props)
    if config.table_type is TableType.MERGE_ON_READ and precombine:
        return _merge_entries(DEFAULT_PAYLOAD, "EVENT_TIME_ORDERING", EVENT_TIME_STRATEGY_ID)
    if payload == DEFAULT_PAYLOAD:
        return _merge_entries(DEFAULT_PAYLOAD, "EVENT_TIME_ORDERING", EVENT_TIME_STRATEGY_ID)
    return _merge_entries(OVERWRITE_LATEST_PAYLOAD, "COMMIT_TIME_ORDERING", COMMIT_TIME_STRATEGY_ID)


def _merge_entries(payload: str, mode: str, strategy: str) -> dict[str, str]:
    c = TableConfig
    return {
        c.PAYLOAD_CLASS.key: payload,
        c.RECORD_MERGE_MODE.key: mode,
        c.RECORD_MERGE_STRATEGY_ID.key: strategy,
        # the version-6 key is its alternative: UpgradeDowngrade.run sets both
        c.RECORD_MERGER_STRATEGY.key: strategy,
    }


def _eight_to_nine(config: TableConfig) -> tuple[dict[str, str], list[str]]:
    """``EightToNineUpgradeHandler``'s entries set and removed."""
    c = TableConfig
    out: dict[str, str] = {}
    gone: list[str] = []
    payload = _payload_class(config)
    strategy = config.merge_strategy_id
    if strategy in _BUILTIN_STRATEGIES and payload:
        # reconcileMergeModeConfig
        if payload in _COMMIT_TIME_PAYLOADS_V9:
            out[c.RECORD_MERGE_MODE.key] = "COMMIT_TIME_ORDERING"
            out[c.RECORD_MERGE_STRATEGY_ID.key] = COMMIT_TIME_STRATEGY_ID
        elif payload in _EVENT_TIME_PAYLOADS_V9:
            out[c.RECORD_MERGE_MODE.key] = "EVENT_TIME_ORDERING"
            out[c.RECORD_MERGE_STRATEGY_ID.key] = EVENT_TIME_STRATEGY_ID
        if c.RECORD_MERGE_STRATEGY_ID.key in out:  # and its alternative key (as above)
            out[c.RECORD_MERGER_STRATEGY.key] = out[c.RECORD_MERGE_STRATEGY_ID.key]
        # reconcilePartialUpdateModeConfig
        if payload in (OVERWRITE_NON_DEFAULTS_PAYLOAD, PARTIAL_UPDATE_PAYLOAD):
            out[c.PARTIAL_UPDATE_MODE.key] = "IGNORE_DEFAULTS"
        elif payload == POSTGRES_DEBEZIUM_PAYLOAD:
            out[c.PARTIAL_UPDATE_MODE.key] = "IGNORE_MARKERS"
        # reconcileMergePropertiesConfig
        if payload == AWS_DMS_PAYLOAD:
            out[MERGE_PROPERTY_PREFIX + "hoodie.payload.delete.field"] = "Op"
            out[MERGE_PROPERTY_PREFIX + "hoodie.payload.delete.marker"] = "D"
        elif payload == POSTGRES_DEBEZIUM_PAYLOAD:
            key = MERGE_PROPERTY_PREFIX + "hoodie.write.partial.update.custom.marker"
            out[key] = "__debezium_unavailable_value"
        # reconcilePayloadClassConfig
        if payload in _DEPRECATED_PAYLOADS:
            out[c.LEGACY_PAYLOAD_CLASS.key] = payload
            gone.append(c.PAYLOAD_CLASS.key)
    # reconcileOrderingFieldsConfig
    ordering = (
        "_event_bin_file,_event_pos"
        if payload == MYSQL_DEBEZIUM_PAYLOAD
        else (c.ORDERING_FIELDS.of(config.props) or c.PRECOMBINE_FIELD.of(config.props))
    )
    if ordering:
        out[c.ORDERING_FIELDS.key] = ordering
        gone.append(c.PRECOMBINE_FIELD.key)
    return out, gone


# -- the timeline -----------------------------------------------------------------------------
def _quiet_layout1_timeline(
    state: TableState, is_failed: Callable[[str], bool] | None, to_version: int
) -> list[str]:
    """Roll back the failed writes (``rollbackFailedWrites``, version-6 rules) and return the
    names of the instant files of ``.hoodie`` (Java ``scanHoodieInstantsFromFileSystem``).

    Raises:
        ConcurrentWriterError: a live writer's instant is still pending.
        ConfigError: a compaction was scheduled since the write was planned.
    """
    rollback_failed_writes(state, is_failed=is_failed)
    tl = state.reload_timeline()
    where = f"the table at {state.storage.base_uri} is version 6"
    _check_no_pending_compaction(state, where, to_version)
    live = [i for i in tl.pending() if i.action != CLEAN]
    if live:
        raise ConcurrentWriterError(
            f"{where}; its upgrade needs every write done, and "
            + ", ".join(f"{i.action} {i.requested_time}" for i in live)
            + " is still in flight (a live writer): write again once it is done"
        )
    names = []
    for f in state.storage.list_files(HOODIE_FOLDER):
        if Instant.parse(f.name, 1) is not None:
            names.append(f.name)
    return sorted(names)


def _write_layout2_timeline(storage: Storage, names: list[str]) -> None:
    """Write every layout-1 instant file ``names`` of ``.hoodie`` to ``.hoodie/timeline``
    under its layout-2 name (``upgradeActiveTimelineInstant``); ``.hoodie/timeline`` is
    cleared first (a rerun after a crash starts from what ``.hoodie`` holds now)."""
    if storage.is_dir(LAYOUT2_TIMELINE):
        storage.delete_dir(LAYOUT2_TIMELINE)
    storage.makedirs(f"{LAYOUT2_TIMELINE}/history")
    parsed = {n: Instant.parse(n, 1) for n in names}
    contents = {n: storage.read_bytes(f"{HOODIE_FOLDER}/{n}") for n in names}
    clusterings = set()
    for n, inst in parsed.items():
        if inst is not None and inst.is_completed and inst.action == REPLACE_COMMIT:
            md = CommitMetadata.from_bytes(contents[n])
            if (md.operation_type or "").upper() == "CLUSTER":
                clusterings.add(inst.requested_time)
    for n, inst in parsed.items():
        assert inst is not None
        name, data = _layout2_file(inst, contents[n], inst.requested_time in clusterings)
        storage.write_atomic(f"{LAYOUT2_TIMELINE}/{name}", data)


def _layout2_file(inst: Instant, data: bytes, clustering: bool) -> tuple[str, bytes]:
    """The layout-2 name and content of one layout-1 instant file."""
    ts = inst.requested_time
    if inst.is_completed:
        new = Instant(ts, inst.action, State.COMPLETED, ts)  # completion: see the module doc
    elif clustering and inst.action == REPLACE_COMMIT:
        new = Instant(ts, CLUSTERING, inst.state)
    else:
        new = inst
    converts = inst.action in (COMMIT, DELTA_COMMIT) or (
        inst.action == REPLACE_COMMIT and inst.is_completed
    )
    if converts and data.strip():
        md = CommitMetadata.from_bytes(data)
        if inst.action == REPLACE_COMMIT:
            md.is_replace = True
        data = md.to_bytes(2)
    return new.file_name(2), data


#: the completed metadata's record of each archived action (``getMetadataKey``)
_ARCHIVED_RECORDS: dict[str, tuple[str, type[AvroRecord] | None]] = {
    CLEAN: ("hoodieCleanMetadata", CleanMetadata),
    ROLLBACK: ("hoodieRollbackMetadata", RollbackMetadata),
    SAVEPOINT: ("hoodieSavePointMetadata", SavepointMetadata),
    INDEXING: ("hoodieIndexCommitMetadata", IndexCommitMetadata),
    COMMIT: ("hoodieCommitMetadata", None),
    DELTA_COMMIT: ("hoodieCommitMetadata", None),
    REPLACE_COMMIT: ("hoodieReplaceCommitMetadata", None),
}
#: the plan records of a requested archived instant
_ARCHIVED_PLANS: tuple[tuple[str, type[AvroRecord]], ...] = (
    ("hoodieCompactionPlan", CompactionPlan),
    ("hoodieCleanerPlan", CleanerPlan),
    ("hoodieRequestedReplaceMetadata", RequestedReplaceMetadata),
)


def _write_lsm_history(storage: Storage, config: TableConfig) -> None:
    """The archived instants of ``.hoodie/<hoodie.archivelog.folder>`` as one file of the LSM
    history (``upgradeToLSMTimeline``); the legacy archive stays, as Java leaves it."""
    folder = f"{HOODIE_FOLDER}/{TableConfig.ARCHIVELOG_FOLDER.of(config.props) or 'archived'}"
    by_time: dict[str, dict[str, Mapping[str, Any]]] = {}
    for rec in archived_records_v1(storage, folder):
        ts, action = rec.get("commitTime"), rec.get("actionType")
        state = str(rec.get("actionState") or "COMPLETED").upper()
        if ts and action:
            by_time.setdefault(str(ts), {})[state] = rec
    entries = [e for e in (_lsm_entry(ts, recs) for ts, recs in by_time.items()) if e]
    if entries:
        LsmTimelineWriter(storage, f"{LAYOUT2_TIMELINE}/history").write(entries)


def _lsm_entry(ts: str, records: Mapping[str, Mapping[str, Any]]) -> LsmEntry | None:
    """The LSM row of one archived instant from its records by state (None: not completed).
    Its completion time is the one Java recorded (``stateTransitionTime``), else its
    requested time."""
    done = records.get(State.COMPLETED.value)
    if done is None:
        return None
    action = str(done["actionType"])
    origin = next(
        (str(r["actionType"]) for s, r in records.items() if s != State.COMPLETED.value),
        action,
    )
    contents: dict[str, bytes] = {}
    field, cls = _ARCHIVED_RECORDS.get(completed_action(action), ("", None))
    meta = done.get(field) if field else None
    if meta is not None:
        if cls is None:
            md = CommitMetadata.from_avro_record(meta)
            md.is_replace = completed_action(action) == REPLACE_COMMIT
            contents["completed"] = md.to_bytes(2)
        else:
            contents["completed"] = cls.from_avro(meta).to_bytes()
    for rec in records.values():
        for key, plan_cls in _ARCHIVED_PLANS:
            if rec.get(key) is not None:
                contents["requested"] = plan_cls.from_avro(rec[key]).to_bytes()
    completion = str(done.get("stateTransitionTime") or ts)
    if completion < ts:
        completion = ts
    return entry_of(ts, completion, origin, contents)
