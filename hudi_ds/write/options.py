"""The options of one write, resolved against the table (Java's ``HoodieWriteConfig`` as built
from the user's options and ``hoodie.properties``).

An existing table's ``hoodie.properties`` wins: its type, keys, partitioning, ordering field,
merge mode and bucket count are the table's, and an option that contradicts one of them is an
error naming the key and both values. For a new table the options decide.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hudi_ds.config import Options, WriteConfig
from hudi_ds.errors import ConfigError
from hudi_ds.index.bucket import NUM_BUCKETS_KEY, validate_hash_fields, validate_num_buckets
from hudi_ds.layout.bloom import BloomFilterSpec
from hudi_ds.merge.modes import (
    MergeSpec,
    check_same_spec,
    custom_classes_option,
    default_ordering_field,
    table_spec,
    write_spec,
)
from hudi_ds.table_config import TableConfig
from hudi_ds.write.operation import WriteOperation, operation_named

MB = 1 << 20


@dataclass(frozen=True)
class ResolvedOptions:
    """What a write does, decided once from the options and the table (small, picklable).

    Attributes:
        operation: the operation the options ask for (``hoodie.datasource.write.operation``).
        table_name, table_type, record_key_fields, partition_fields, hive_style, url_encode,
            ordering_field, complex_key: the table's (or, for a new table, the options').
        merge_spec: the table's merger (merge mode, payload or merger classes).
        num_buckets, hash_fields: the bucket index layout.
        block_format, codec: log data block format, Parquet compression codec.
        task_budget_bytes, handle_budget_bytes: memory of a task's handles, of one handle.
        set_null_for_missing: ``hoodie.write.set.null.for.missing.columns``.
        spill_dir: ``hoodie.memory.spillable.map.path`` (None: the system temp folder).
        bloom: the bloom filter of new base files (``hoodie.bloom.index.*``,
            ``hoodie.index.bloom.*``); None for a table without meta fields (as Java's).
        index_type: ``BUCKET``, ``SIMPLE``, ``GLOBAL_SIMPLE``, ``BLOOM`` or ``GLOBAL_BLOOM``
            (``hoodie.index.type``; an existing table's own index).
        update_partition_path: global indexes: a key arriving with another partition moves
            (``hoodie.{simple,bloom}.index.update.partition.path``, and the table partitioned).
        prune_by_ranges: BLOOM: prune candidate files by their min/max record key.
        small_file_limit, max_file_size: file sizing of non-bucket indexes
            (``hoodie.parquet.small.file.limit`` / ``.max.file.size``, bytes).
        record_size_estimate, record_size_threshold: the average record size assumed, and the
            fraction of the small-file limit a commit must write to measure it.
        insert_split_size, auto_split: records per new file group when not auto-split.
        small_file_candidates: MERGE_ON_READ: small file groups per partition taking inserts.
    """

    operation: WriteOperation
    table_name: str
    table_type: str
    record_key_fields: tuple[str, ...]
    partition_fields: tuple[str, ...]
    hive_style: bool
    url_encode: bool
    ordering_field: str | None
    merge_spec: MergeSpec
    complex_key: bool
    num_buckets: int
    hash_fields: tuple[str, ...]
    block_format: str
    codec: str
    task_budget_bytes: int
    handle_budget_bytes: int
    set_null_for_missing: bool
    spill_dir: str | None
    bloom: BloomFilterSpec | None
    index_type: str = "BUCKET"
    update_partition_path: bool = True
    prune_by_ranges: bool = True
    small_file_limit: int = 104857600
    max_file_size: int = 125829120
    record_size_estimate: int = 1024
    record_size_threshold: float = 1.0
    insert_split_size: int = 500000
    auto_split: bool = True
    small_file_candidates: int = 1

    @property
    def is_global_index(self) -> bool:
        """Whether keys are unique across partitions (``GLOBAL_SIMPLE``, ``GLOBAL_BLOOM``)."""
        return self.index_type.startswith("GLOBAL_")

    @property
    def merge_mode(self) -> str:
        """The merge mode of :attr:`merge_spec`."""
        return self.merge_spec.mode


def resolve_options(
    options: Options, config: TableConfig | None, base_uri: str = ""
) -> ResolvedOptions:
    """Resolve validated write ``options`` against the table's ``config`` (None: a new table).

    Args:
        base_uri: the table's location (named in errors).

    Raises:
        ConfigError: an option contradicts the existing table, the table is not version 6, or
            the bucket settings are invalid.
    """
    o = options
    if config is not None:
        _check_against_table(o, config)
        if config.table_version != 6:
            raise ConfigError(
                f"hudi_ds writes table version 6; the table at {base_uri} is "
                f"version {config.table_version} (hoodie.table.version)"
            )
        table_name = config.table_name
        table_type = config.table_type
        keys = tuple(config.record_key_fields)
        parts = tuple(config.partition_fields)
        hive_style = config.hive_style_partitioning
        url_encode = config.url_encode_partitions
        ordering = config.ordering_fields[0] if config.ordering_fields else None
        merge_spec = table_spec(config, custom_classes_option(o))
        check_same_spec(o, merge_spec)
        complex_key = config.complex_record_key
    else:
        table_name = o.get(WriteConfig.TABLE_NAME) or ""
        table_type = o.get(WriteConfig.TABLE_TYPE)
        key_option: list[str] | None = o.get(WriteConfig.RECORD_KEY_FIELDS)
        part_option: list[str] | None = o.get(WriteConfig.PARTITION_FIELDS)
        keys = tuple(key_option or [])
        parts = tuple(part_option or [])
        hive_style = o.get(WriteConfig.HIVE_STYLE)
        url_encode = o.get(WriteConfig.URL_ENCODE)
        ordering = o.get(WriteConfig.PRECOMBINE_FIELD) or default_ordering_field(o) or None
        merge_spec = write_spec(o, ordering)
        complex_key = len(keys) > 1
    stored = config.props.get(NUM_BUCKETS_KEY) if config is not None else None
    asked = o.get(WriteConfig.NUM_BUCKETS)
    if stored is not None and o.is_set(WriteConfig.NUM_BUCKETS) and int(stored) != asked:
        raise ConfigError(
            f"option '{NUM_BUCKETS_KEY}'={asked} contradicts the table's {stored} buckets "
            "(fixed when the table was created)"
        )
    num_buckets = validate_num_buckets(int(stored) if stored is not None else asked)
    hash_fields = (
        tuple(validate_hash_fields(o.get(WriteConfig.HASH_FIELD), list(keys))) if keys else ()
    )
    index_type = _index_type(o, config)
    update_prop = (
        WriteConfig.BLOOM_UPDATE_PARTITION_PATH
        if index_type == "GLOBAL_BLOOM"
        else WriteConfig.SIMPLE_UPDATE_PARTITION_PATH
    )
    return ResolvedOptions(
        operation=operation_named(o.get(WriteConfig.OPERATION)),
        table_name=table_name,
        table_type=table_type,
        record_key_fields=keys,
        partition_fields=parts,
        hive_style=hive_style,
        url_encode=url_encode,
        ordering_field=ordering,
        merge_spec=merge_spec,
        complex_key=complex_key,
        num_buckets=num_buckets,
        hash_fields=hash_fields,
        block_format=o.get(WriteConfig.LOG_BLOCK_FORMAT),
        codec=o.get(WriteConfig.PARQUET_CODEC),
        task_budget_bytes=int(o.get(WriteConfig.TASK_MAX_SIZE_MB) * MB),
        handle_budget_bytes=min(
            int(o.get(WriteConfig.BATCH_SIZE_MB) * MB), o.get(WriteConfig.LOG_BLOCK_MAX_SIZE)
        ),
        set_null_for_missing=o.get(WriteConfig.SET_NULL_FOR_MISSING),
        spill_dir=o.get(WriteConfig.SPILLABLE_MAP_PATH) or None,
        bloom=BloomFilterSpec.of(o) if config is None or config.populate_meta_fields else None,
        index_type=index_type,
        # Java HoodieIndexUtils: shouldUpdatePartitionPath = option && table is partitioned
        update_partition_path=bool(o.get(update_prop)) and bool(parts),
        prune_by_ranges=o.get(WriteConfig.BLOOM_PRUNE_BY_RANGES),
        small_file_limit=o.get(WriteConfig.SMALL_FILE_LIMIT),
        max_file_size=o.get(WriteConfig.MAX_FILE_SIZE),
        record_size_estimate=o.get(WriteConfig.RECORD_SIZE_ESTIMATE),
        record_size_threshold=o.get(WriteConfig.RECORD_SIZE_ESTIMATION_THRESHOLD),
        insert_split_size=o.get(WriteConfig.INSERT_SPLIT_SIZE),
        auto_split=o.get(WriteConfig.INSERT_AUTO_SPLIT),
        small_file_candidates=o.get(WriteConfig.SMALL_FILE_GROUP_CANDIDATES),
    )


def _index_type(o: Options, config: TableConfig | None) -> str:
    """The write's index: a new table's option; an existing table's recorded
    ``hoodie.index.type``, else Hudi's Spark default, SIMPLE.

    Raises:
        ConfigError: the option asks for the bucket index on a table that has another one, or
            the other way round (the two place keys incompatibly).
    """
    asked = o.get(WriteConfig.INDEX_TYPE)
    if config is None:
        return asked
    recorded = config.get(TableConfig.INDEX_TYPE)
    table_index = recorded.upper() if recorded else None
    current = table_index or "SIMPLE"
    if o.is_set(WriteConfig.INDEX_TYPE) and (asked == "BUCKET") != (current == "BUCKET"):
        raise ConfigError(
            f"option 'hoodie.index.type'={asked!r} contradicts the existing table, whose index "
            f"is {current!r}"
        )
    return asked if o.is_set(WriteConfig.INDEX_TYPE) else current


def _check_against_table(o: Options, cfg: TableConfig) -> None:
    def same(prop: Any, value: Any) -> None:
        if o.is_set(prop) and o.get(prop) != value:
            raise ConfigError(
                f"option '{prop.key}'={o.get(prop)!r} contradicts the existing table "
                f"({value!r} in hoodie.properties)"
            )

    same(WriteConfig.TABLE_TYPE, cfg.table_type)
    same(WriteConfig.RECORD_KEY_FIELDS, cfg.record_key_fields)
    same(WriteConfig.PARTITION_FIELDS, cfg.partition_fields)
    same(WriteConfig.HIVE_STYLE, cfg.hive_style_partitioning)
    same(
        WriteConfig.PRECOMBINE_FIELD,
        cfg.ordering_fields[0] if cfg.ordering_fields else None,
    )
    name = o.get(WriteConfig.TABLE_NAME)
    if name and name != cfg.table_name:
        raise ConfigError(
            f"option 'hoodie.table.name'={name!r} contradicts the existing table {cfg.table_name!r}"
        )
