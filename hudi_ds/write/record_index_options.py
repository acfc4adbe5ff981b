"""The options of the metadata table's record index: which kind (Java 1.1's global
``hoodie.metadata.record.index.enable`` or partitioned ``hoodie.metadata.record.level.index.
enable``), and the file group counts of a new one -- checked together, before anything is
written."""

from __future__ import annotations

from hudi_ds.config import Options, WriteConfig
from hudi_ds.errors import ConfigError
from hudi_ds.index.core import RECORD_INDEX_PARTITION, record_index_partitioned
from hudi_ds.metadata import record_index_cache
from hudi_ds.metadata.record_index_writer import RecordIndexSizing
from hudi_ds.metadata.records import declared_partitions
from hudi_ds.storage import Storage
from hudi_ds.table_config import TableConfig

__all__ = [
    "partitioned_record_index_sizing",
    "record_index_choice",
    "record_index_options",
    "record_index_sizing",
]


def partitioned_record_index_sizing(options: Options) -> RecordIndexSizing:
    """The file group count options per data partition of a partitioned record index.

    Raises:
        ConfigError: the minimum count exceeds the maximum.
    """
    return RecordIndexSizing(
        min_file_groups=options.get(WriteConfig.METADATA_RECORD_LEVEL_INDEX_MIN_FILE_GROUPS),
        max_file_groups=options.get(WriteConfig.METADATA_RECORD_LEVEL_INDEX_MAX_FILE_GROUPS),
        max_file_group_bytes=options.get(WriteConfig.METADATA_RECORD_INDEX_MAX_FILE_GROUP_SIZE),
        growth_factor=options.get(WriteConfig.METADATA_RECORD_INDEX_GROWTH_FACTOR),
        prefix="hoodie.metadata.record.level.index",
    )


def record_index_choice(
    options: Options, config: TableConfig | None, storage: Storage | None, base_uri: str = ""
) -> tuple[bool | None, bool]:
    """``(enable, partitioned)`` of the metadata table's record index: the two enable options
    (``hoodie.metadata.record.index.enable``, global; ``hoodie.metadata.record.level.index.
    enable``, partitioned) as one switch -- true when either is, false when the one of the
    table's index's kind is --, and whether a new index is the partitioned one.

    Raises:
        ConfigError: both asked for; the partitioned one asked on a table of version 6; the
            one asked contradicts the table's record index (a table has one kind: switching
            needs the index removed first, with the other option false).
    """
    glob = options.get(WriteConfig.METADATA_RECORD_INDEX_ENABLE)
    part = options.get(WriteConfig.METADATA_RECORD_LEVEL_INDEX_ENABLE)
    g_key = WriteConfig.METADATA_RECORD_INDEX_ENABLE.key
    p_key = WriteConfig.METADATA_RECORD_LEVEL_INDEX_ENABLE.key
    if glob and part:
        raise ConfigError(
            f"options '{g_key}' and '{p_key}' are both true: a table has one record index, "
            "global (keys unique across partitions) or partitioned (unique per partition)"
        )
    version = (
        config.table_version if config is not None else options.get(WriteConfig.WRITE_TABLE_VERSION)
    )
    if part and version < 8:
        raise ConfigError(
            f"option '{p_key}'=true: the partitioned record index is Hudi 1.1's (its kind is "
            f"recorded in .hoodie/.index_defs), for table versions 8 and 9, not {version}"
        )
    has = config is not None and RECORD_INDEX_PARTITION in declared_partitions(config)
    if has and (glob or part):
        assert config is not None
        has_partitioned = record_index_partitioned(config, storage)
        if bool(part) != has_partitioned:
            kind = "a partitioned" if has_partitioned else "a global"
            raise ConfigError(
                f"option '{p_key if part else g_key}'=true: the table at {base_uri} has "
                f"{kind} record index; remove it first "
                f"('{p_key if has_partitioned else g_key}'=false)"
            )
    if glob or part:
        return True, bool(part)
    # false removes the table's index when it names the table's kind
    if has and config is not None:
        mine = part if record_index_partitioned(config, storage) else glob
        return (False if mine is False else None), False
    return None, False


def record_index_sizing(options: Options) -> RecordIndexSizing:
    """The file group count options of a new record index.

    Raises:
        ConfigError: the minimum count exceeds the maximum.
    """
    return RecordIndexSizing(
        min_file_groups=options.get(WriteConfig.METADATA_RECORD_INDEX_MIN_FILE_GROUPS),
        max_file_groups=options.get(WriteConfig.METADATA_RECORD_INDEX_MAX_FILE_GROUPS),
        max_file_group_bytes=options.get(WriteConfig.METADATA_RECORD_INDEX_MAX_FILE_GROUP_SIZE),
        growth_factor=options.get(WriteConfig.METADATA_RECORD_INDEX_GROWTH_FACTOR),
    )


def record_index_options(
    options: Options, config: TableConfig | None, storage: Storage | None, base_uri: str = ""
) -> None:
    """Check the record index options of a write together (:func:`record_index_sizing`,
    :func:`partitioned_record_index_sizing`, :func:`record_index_choice`) and apply
    ``hoodie.metadata.record.index.cache.max.bytes`` to the process's decoded record index
    files when the write sets it.

    Raises:
        ConfigError: as those functions.
    """
    record_index_sizing(options)
    partitioned_record_index_sizing(options)
    record_index_choice(options, config, storage, base_uri)
    if options.is_set(WriteConfig.METADATA_RECORD_INDEX_CACHE_MAX_BYTES):
        budget = options.get(WriteConfig.METADATA_RECORD_INDEX_CACHE_MAX_BYTES)
        record_index_cache.cache().set_budget(budget)
