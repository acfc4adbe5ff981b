"""Tables of versions 3, 4 and 5 (Hudi 0.10-0.13) upgraded to version 6 on their first write.

Hudi 0.14/0.15 does this in every write client before the write's instant
(``BaseHoodieWriteClient.tryUpgrade`` -> ``UpgradeDowngrade.run(HoodieTableVersion.SIX)``), one
handler per step, each returning the ``hoodie.properties`` entries it adds:

* ``ThreeToFourUpgradeHandler``: ``hoodie.database.name`` when the write names a database,
  ``hoodie.table.checksum`` (``HoodieTableConfig.generateChecksum``), and
  ``hoodie.table.metadata.partitions=files`` when the metadata table is enabled and its
  ``files`` partition exists (its records' schema did not change between the versions);
* ``FourToFiveUpgradeHandler``: nothing added; it refuses a partitioned table holding a
  partition named ``default`` (``dt=default`` hive style), the default partition before Hudi
  0.12 renamed it ``__HIVE_DEFAULT_PARTITION__``, unless
  ``hoodie.skip.default.partition.validation`` is set;
* ``FiveToSixUpgradeHandler``: nothing added; it deletes the ``.hoodie/.aux`` copies of the
  pending requested compaction plans, which 0.14 stopped reading (``.aux`` is not read by
  hudi_ds either).

``UpgradeDowngrade.run`` upgrades the metadata table first, by the same handlers (its own
``hoodie.properties`` under ``.hoodie/metadata``), then writes the data table's entries and
``hoodie.table.version=6`` in one update of ``hoodie.properties`` (``HoodieTableConfig.update``,
the backup-file protocol: :func:`hudi_ds.table_config.update_table_config`). Every step is
idempotent, so a crash anywhere leaves a readable table that the next write finishes upgrading:
the metadata table may be at 6 while the data table is still at 3-5 (both read the same), and
the data table is at 6 only once its properties are written.

The timeline layout stays 1 (versions 3-6 share it); the log and base files are read as they
are. Hudi 1.x writes version 6 and later only, and refuses to upgrade a table below 6 to 8 or 9
(``UpgradeDowngrade.needsUpgrade``: "Please upgrade table from version ... to 6 before
upgrading to version 8"): hudi_ds does both in one write when ``hoodie.write.table.version``
asks for 8 or 9 -- this upgrade to 6 (Hudi 0.15's), then Hudi 1.x's from 6
(:mod:`hudi_ds.write.upgrade_1x`) -- and refuses ``hoodie.write.auto.upgrade=false`` (Hudi
1.x's switch), since it would have to write a version it does not write.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from hudi_ds.config import Options, WriteConfig
from hudi_ds.errors import ConfigError
from hudi_ds.metadata.records import METADATA_PARTITIONS_KEY, METADATA_PATH
from hudi_ds.storage import Storage
from hudi_ds.table_config import TableConfig, update_table_config
from hudi_ds.timeline.instant import COMPACTION
from hudi_ds.timeline.timeline import Timeline
from hudi_ds.timeline.view import TableState
from hudi_ds.write.upgrade_1x import TimelineUpgrade, plan_timeline_upgrade

log = logging.getLogger("hudi_ds.write")

#: the table versions hudi_ds upgrades on the first write (Hudi 0.10, 0.11, 0.12-0.13)
UPGRADABLE_VERSIONS = (3, 4, 5)
#: the version they are upgraded to (Hudi 0.14/0.15's)
UPGRADED_VERSION = 6
#: the partition Hudi before 0.12 wrote rows without a partition value to
#: (``PartitionPathEncodeUtils.DEPRECATED_DEFAULT_PARTITION_PATH``)
DEPRECATED_DEFAULT_PARTITION = "default"
AUX_FOLDER = ".hoodie/.aux"


@dataclass
class TableUpgrade:
    """What the first write does to a table of version 3-5 before its instant.

    Attributes:
        from_version: the table's version.
        updates: the ``hoodie.properties`` entries set (``hoodie.table.version`` included; the
            checksum is computed by the update).
        applied: :meth:`apply` ran (a copy pickled to a Spark task afterwards does nothing).
    """

    from_version: int
    updates: tuple[tuple[str, str], ...]
    applied: bool = False

    def upgraded(self, config: TableConfig) -> TableConfig:
        """``config`` as it will be after :meth:`apply` (nothing is written): what the write
        resolves its options against."""
        return TableConfig({**config.props, **dict(self.updates)})

    def apply(self, state: TableState) -> None:
        """Upgrade the opened table (once; idempotent on storage; a writer holds the table
        lock). ``state`` takes the config as written (unchanged when another writer upgraded
        the table first)."""
        if self.applied:
            return
        storage = state.storage
        current = TableConfig.load(storage)
        if current.table_version < UPGRADED_VERSION:
            # UpgradeDowngrade.run: the metadata table first, by the same handlers
            mdt = storage.sub(METADATA_PATH)
            if mdt.is_file(".hoodie/hoodie.properties"):
                mdt_config = TableConfig.load(mdt)
                if mdt_config.table_version < UPGRADED_VERSION:
                    _delete_aux_compaction_plans(mdt, mdt_config)
                    update_table_config(mdt, {TableConfig.VERSION.key: str(UPGRADED_VERSION)})
            _delete_aux_compaction_plans(storage, current)
            current = update_table_config(storage, dict(self.updates))
            log.info(
                "upgraded %s from table version %d to %d (as Hudi 0.15's UpgradeDowngrade)",
                storage.base_uri,
                self.from_version,
                UPGRADED_VERSION,
            )
        state.config = current
        self.applied = True


@dataclass
class Upgrade:
    """The upgrades a write runs before its instant: versions 3-5 to 6 (``to_six``), then 6 to
    8 or 9 when the write asks for it (``to_1x``)."""

    to_six: TableUpgrade | None
    to_1x: TimelineUpgrade | None

    def resolving(self, config: TableConfig) -> TableConfig:
        """``config`` (as the write sees it) after the upgrade: what it resolves against."""
        return self.to_1x.upgraded(config) if self.to_1x is not None else config

    def apply(self, state: TableState, is_failed: Callable[[str], bool] | None = None) -> None:
        """Run the upgrades (under the table lock); see :meth:`TableUpgrade.apply` and
        :meth:`TimelineUpgrade.apply` (``is_failed``: which pending writes failed)."""
        if self.to_six is not None:
            self.to_six.apply(state)
        if self.to_1x is not None:
            self.to_1x.apply(state, is_failed)


def pending_upgrade(state: TableState | None, options: Options) -> Upgrade | None:
    """The upgrade a write of the opened table needs (None: none); for a table of version 3-5
    ``state`` then shows the table at version 6 (its config in memory, the timeline layout is
    the same), and :meth:`Upgrade.resolving` gives the config to resolve the write against.

    Raises:
        ConfigError: as :func:`plan_upgrade` and
            :func:`~hudi_ds.write.upgrade_1x.plan_timeline_upgrade`; nothing is written.
    """
    if state is None:
        return None
    to_six = plan_upgrade(state.storage, state.config, options)
    if to_six is not None:
        state.config = to_six.upgraded(state.config)
    to_1x = plan_timeline_upgrade(state, state.config, options)
    if to_six is None and to_1x is None:
        return None
    return Upgrade(to_six, to_1x)


def plan_upgrade(storage: Storage, config: TableConfig, options: Options) -> TableUpgrade | None:
    """The upgrade the first write of the table must run (None: the table needs none).

    Nothing is written: the checks run before any write (:meth:`TableUpgrade.apply` does it).

    Raises:
        ConfigError: ``hoodie.write.auto.upgrade=false``; the table's timeline layout is
            not 1; a partition ``default`` of a
            version 3 or 4 table (``FourToFiveUpgradeHandler``).
    """
    version = config.table_version
    if version not in UPGRADABLE_VERSIONS:
        return None
    where = f"the table at {storage.base_uri} is version {version} (hoodie.table.version)"
    if not options.get(WriteConfig.AUTO_UPGRADE):
        raise ConfigError(
            f"{where}; hudi_ds writes versions 6, 8 and 9 and upgrades versions 3-5 to 6 on "
            f"the first write (as Hudi 0.14/0.15 does): '{WriteConfig.AUTO_UPGRADE.key}'=false "
            "forbids that, so nothing is written"
        )
    layout = config.timeline_layout_version
    if layout != 1:
        raise ConfigError(
            f"{where} with timeline layout {layout} (hoodie.timeline.layout.version); hudi_ds "
            "upgrades tables of timeline layout 1 only"
        )
    if version < 5 and not options.get(WriteConfig.SKIP_DEFAULT_PARTITION_VALIDATION):
        _check_default_partition(storage, config, where)
    updates = {TableConfig.VERSION.key: str(UPGRADED_VERSION)}
    if version == 3:
        updates.update(_three_to_four(storage, config, options))
    return TableUpgrade(version, tuple(sorted(updates.items())))


def _three_to_four(storage: Storage, config: TableConfig, options: Options) -> dict[str, str]:
    """``ThreeToFourUpgradeHandler``'s entries (the checksum is written by every update)."""
    updates: dict[str, str] = {}
    database = options.get(WriteConfig.DATABASE_NAME)
    if database:
        updates[TableConfig.DATABASE_NAME.key] = database
    # config.isMetadataTableEnabled() && metadataPartitionExists(FILES): unset means the table
    # keeps what it has (hudi_ds's default), false deletes the metadata table at the commit
    enabled = options.get(WriteConfig.METADATA_ENABLE) is not False
    if (
        enabled
        and not config.get(METADATA_PARTITIONS_KEY)
        and storage.is_dir(f"{METADATA_PATH}/files")
    ):
        updates[METADATA_PARTITIONS_KEY] = "files"
    return updates


def _check_default_partition(storage: Storage, config: TableConfig, where: str) -> None:
    """``FourToFiveUpgradeHandler.hasDefaultPartitionPath``: only the first level is probed."""
    fields = config.partition_fields
    if not fields:
        return
    rel = (
        f"{fields[0]}={DEPRECATED_DEFAULT_PARTITION}"
        if config.hive_style_partitioning
        else DEPRECATED_DEFAULT_PARTITION
    )
    if storage.is_dir(rel):
        raise ConfigError(
            f"{where} and holds the partition '{rel}': Hudi 0.12 (table version 5) renamed the "
            "default partition to __HIVE_DEFAULT_PARTITION__, and its upgrade refuses such a "
            "table (FourToFiveUpgradeHandler): rewrite the partition's rows to the new "
            "partition path and delete them from the old one with Hudi 0.11, or set "
            f"'{WriteConfig.SKIP_DEFAULT_PARTITION_VALIDATION.key}'=true to keep it as it is"
        )


def _delete_aux_compaction_plans(storage: Storage, config: TableConfig) -> None:
    """``FiveToSixUpgradeHandler.deleteCompactionRequestedFileFromAuxiliaryFolder``: the
    ``.aux`` copies of the pending requested compactions' plans go."""
    if config.table_version >= UPGRADED_VERSION:
        return
    timeline = Timeline.load(storage, config.timeline_layout_version, config.timeline_path)
    pending = timeline.pending_compactions().filter(lambda i: i.is_requested)
    names = [f"{AUX_FOLDER}/{i.requested_time}.{COMPACTION}.requested" for i in pending]
    for rel in storage.existing(names) if names else []:
        storage.delete(rel)
