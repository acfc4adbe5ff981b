"""The options of one write, resolved against the table (Java's ``HoodieWriteConfig`` as built
from the user's options and ``hoodie.properties``).

An existing table's ``hoodie.properties`` wins: its type, keys, partitioning, ordering field,
merge mode and bucket count are the table's, and an option that contradicts one of them is an
error naming the key and both values. For a new table the options decide.
"""

from __future__ import annotations

import dataclasses
import logging
import re
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from hudi_ds.config import Options, WriteConfig
from hudi_ds.errors import ConfigError, HudiError, UnsupportedError
from hudi_ds.index.core import Index, latest_write_stats
from hudi_ds.keygen import (
    KeyGeneratorType,
    KeySpec,
    PartitionKind,
    TimestampSpec,
    custom_partition_fields,
)
from hudi_ds.layout.bloom_filter import BloomFilterSpec
from hudi_ds.layout.lance import (
    PYLANCE_REQUIREMENT,
    LanceBaseFile,
    lance_available,
    lance_file_module,
)
from hudi_ds.merge.modes import (
    MergeSpec,
    check_same_spec,
    custom_classes_option,
    default_ordering_field,
    table_spec,
    write_spec,
)
from hudi_ds.metadata.bloom_filters import BLOOM_FILTERS_PARTITION
from hudi_ds.metadata.records import FILES_PARTITION, declared_partitions
from hudi_ds.schema.meta import (
    COMMIT_TIME_METADATA_FIELD,
    PARTITION_PATH_METADATA_FIELD,
    RECORD_KEY_METADATA_FIELD,
)
from hudi_ds.table_config import BaseFileFormat, MergeMode, TableConfig, TableType
from hudi_ds.timeline.view import TableState
from hudi_ds.write.operation import (
    DELETE,
    DELETE_PREPPED,
    INSERT,
    WriteOperation,
    operation_named,
)
from hudi_ds.write.record_index_options import (
    record_index_options,
)

log = logging.getLogger("hudi_ds.write")

MB = 1 << 20

#: the key generator classes hudi_ds reproduces, for messages
_REPRODUCED = ", ".join(KeyGeneratorType.java_names())
#: Hudi 0.14's auto-generated record keys: ``<instant time>_<task partition>_<row>``
#: (``HoodieRecord.generateSequenceId``, ``AutoRecordKeyGenerationUtils``)
_AUTO_KEY = re.compile(r"^(?P<instant>\d{14,17})_\d+_\d+$")


@dataclass(frozen=True)
class FileSizing:
    """How a write sizes the file groups of a non-bucket index (Java ``HoodieStorageConfig`` /
    ``HoodieCompactionConfig``, as the ``UpsertPartitioner`` reads them).

    Attributes:
        small_file_limit, max_file_size: ``hoodie.parquet.small.file.limit`` /
            ``.max.file.size`` (bytes).
        record_size_estimate, record_size_threshold: the average record size assumed, and the
            fraction of the small-file limit a commit must write to measure it.
        insert_split_size, auto_split: records per new file group when not auto-split.
        small_file_candidates: MERGE_ON_READ: small file groups per partition taking inserts.
    """

    small_file_limit: int
    max_file_size: int
    record_size_estimate: int
    record_size_threshold: float
    insert_split_size: int
    auto_split: bool
    small_file_candidates: int

    @classmethod
    def of(cls, o: Options) -> FileSizing:
        """The sizing the write ``o`` options ask for."""
        return cls(
            small_file_limit=o.get(WriteConfig.SMALL_FILE_LIMIT),
            max_file_size=o.get(WriteConfig.MAX_FILE_SIZE),
            record_size_estimate=o.get(WriteConfig.RECORD_SIZE_ESTIMATE),
            record_size_threshold=o.get(WriteConfig.RECORD_SIZE_ESTIMATION_THRESHOLD),
            insert_split_size=o.get(WriteConfig.INSERT_SPLIT_SIZE),
            auto_split=o.get(WriteConfig.INSERT_AUTO_SPLIT),
            small_file_candidates=o.get(WriteConfig.SMALL_FILE_GROUP_CANDIDATES),
        )


@dataclass(frozen=True)
class MemoryBudget:
    """The memory a writer task may hold.

    Attributes:
        task_bytes, handle_bytes: memory of a task's handles, of one handle.
        spill_dir: ``hoodie.memory.spillable.map.path`` (None: the system temp folder).
    """

    task_bytes: int
    handle_bytes: int
    spill_dir: str | None

    @classmethod
    def of(cls, o: Options) -> MemoryBudget:
        """The budget the write ``o`` options give."""
        return cls(
            task_bytes=int(o.get(WriteConfig.TASK_MAX_SIZE_MB) * MB),
            handle_bytes=min(
                int(o.get(WriteConfig.BATCH_SIZE_MB) * MB), o.get(WriteConfig.LOG_BLOCK_MAX_SIZE)
            ),
            spill_dir=o.get(WriteConfig.SPILLABLE_MAP_PATH) or None,
        )


@dataclass(frozen=True)
class ResolvedOptions:
    """What a write does, decided once from the options and the table (small, picklable).

    Attributes:
        operation: the operation the options ask for (``hoodie.datasource.write.operation``).
        table_name, table_type: the table's (or, for a new table, the options').
        keys: how records are keyed and partitioned (the table's key generator; for a new
            table, the options').
        merge: the table's merger (merge mode, payload or merger classes) and its ordering
            fields, the one owner of the ordering field.
        block_format, codec: log data block format, Parquet compression codec.
        memory: the task's memory budget and spill folder.
        set_null_for_missing: ``hoodie.write.set.null.for.missing.columns``.
        bloom: the bloom filter of new base files (``hoodie.bloom.index.*``,
            ``hoodie.index.bloom.*``); None for a table without meta fields (as Java's).
        populate_meta_fields: the files carry meta column values (``hoodie.populate.meta.fields``;
            False: Hudi's virtual keys -- the meta columns are written null, except
            ``_hoodie_file_name`` in base files, and keys are built from the key fields).
        index: the record index (``hoodie.index.type``; an existing table's own index), its
            bucket layout and lookup settings.
        sizing: the file sizing of non-bucket indexes.
        bucket_base_files: MERGE_ON_READ bucket index: a new bucket's first write creates a
            base file rather than a log-only file group (see :func:`_bucket_base_files`).
        write_threads: threads writing one task's file groups (``write.tasks``; None: the
            machine's cores).
        base_file_format: the format of new base files (the table's
            ``hoodie.table.base.file.format``; for a new table, the option's).
    """

    operation: WriteOperation
    table_name: str
    table_type: TableType
    keys: KeySpec
    merge: MergeSpec
    block_format: str
    codec: str
    memory: MemoryBudget
    set_null_for_missing: bool
    bloom: BloomFilterSpec | None
    index: Index
    sizing: FileSizing
    populate_meta_fields: bool = True
    bucket_base_files: bool = False
    write_threads: int | None = None
    base_file_format: BaseFileFormat = BaseFileFormat.PARQUET


@dataclass(frozen=True)
class _TableShape:
    """The part of a write's options the table decides (the options, for a new table): the
    operation as the table's keys allow it, the table's name and type, its keys and merger.

    One value from either :func:`_existing_table_shape` or :func:`_new_table_shape`, so that
    :func:`resolve_options` reads as "the table's, or else the options'".
    """

    operation: WriteOperation
    table_name: str
    table_type: TableType
    keys: KeySpec
    merge: MergeSpec


def resolve_options(
    options: Options,
    config: TableConfig | None,
    base_uri: str = "",
    table: TableState | None = None,
) -> ResolvedOptions:
    """Resolve validated write ``options`` against the table's ``config`` (None: a new table).

    An existing table's recorded properties win; what it does not record (tables of older
    Hudi versions have no ``hoodie.table.recordkey.fields``, no precombine field, no
    TimestampBasedKeyGenerator type ...) is taken from the options, and a key that neither
    gives but the write needs is an error naming the key.

    Args:
        base_uri: the table's location (named in errors).
        table: the opened existing table: its latest commits tell the index of a table that
            does not record it (bucket-index fileIds) and whether its record keys are
            Hudi's auto-generated ones.

    Raises:
        ConfigError: an option contradicts the existing table, a needed key is missing, the
            table is not version 6, 8 or 9, or the bucket settings are invalid.
        UnsupportedError: a table hudi_ds cannot write (a key generator it does not
            reproduce, auto-generated record keys); nothing has been written.
    """
    o = options
    operation = operation_named(o.get(WriteConfig.OPERATION))
    # (several keys: refused before anything is written)
    record_index_options(o, config, table.storage if table is not None else None, base_uri)
    if config is not None:
        shape = _existing_table_shape(o, config, table, base_uri, operation)
    else:
        shape = _new_table_shape(o, operation)
    keys = shape.keys
    index = Index.resolve(
        o, config, keys.record_key_fields, bool(keys.partition_fields), table, base_uri
    )
    if (
        index.bucket is not None
        and index.bucket.consistent
        and shape.table_type is not TableType.MERGE_ON_READ
    ):
        # Java BaseHoodieWriteClient.validateAgainstTableProperties: its resizes rewrite file
        # groups through clustering while writers keep appending logs beside them
        raise ConfigError(
            "hoodie.index.bucket.engine=CONSISTENT_HASHING with hoodie.table.type="
            f"{shape.table_type.value}: consistent hashing bucket index does not work with COW "
            "table. Use simple bucket index or an MOR table."
        )
    index.warn_unused_options(o)
    meta_fields = (
        config.populate_meta_fields
        if config is not None
        else bool(o.get(WriteConfig.POPULATE_META_FIELDS))
    )
    bloom = BloomFilterSpec.for_base_files(
        o, meta_fields, index.type.value, BLOOM_FILTERS_PARTITION in declared_partitions(config)
    )
    return ResolvedOptions(
        operation=shape.operation,
        table_name=shape.table_name,
        table_type=shape.table_type,
        keys=keys,
        merge=shape.merge,
        block_format=o.get(WriteConfig.LOG_BLOCK_FORMAT),
        codec=o.get(WriteConfig.PARQUET_CODEC),
        memory=MemoryBudget.of(o),
        set_null_for_missing=o.get(WriteConfig.SET_NULL_FOR_MISSING),
        bloom=bloom,
        index=index,
        sizing=FileSizing.of(o),
        populate_meta_fields=meta_fields,
        bucket_base_files=_bucket_base_files(o, config, index, shape.table_type),
        write_threads=o.get(WriteConfig.WRITE_TASKS),
        base_file_format=(
            config.base_file_format if config is not None else _new_table_base_format(o)
        ),
    )


def _existing_table_shape(
    o: Options,
    config: TableConfig,
    table: TableState | None,
    base_uri: str,
    operation: WriteOperation,
) -> _TableShape:
    """What an existing table decides of a write: its recorded properties, the options only
    where it records none.

    The checks run in this order so that a table hudi_ds cannot write (version, key
    generator) is refused before an option is checked against it.

    Raises:
        ConfigError, UnsupportedError: as :func:`resolve_options`.
    """
    _check_version(config, base_uri)
    _key_generator(config, base_uri)
    _check_against_table(o, config)
    table_name, table_type = config.table_name, config.table_type
    keys = _record_key_fields(o, config, table, base_uri, operation)
    if not keys and operation is DELETE:  # auto-generated keys: a delete of rows as read
        operation = DELETE_PREPPED
    parts = _partition_fields(o, config, base_uri)
    hive_style = _recorded_or_option(
        o, config, TableConfig.HIVE_STYLE_PARTITIONING, WriteConfig.HIVE_STYLE
    )
    url_encode = _recorded_or_option(
        o, config, TableConfig.URL_ENCODE_PARTITIONING, WriteConfig.URL_ENCODE
    )
    merge_spec = _existing_table_merge(o, config)
    keygen = _effective_key_generator(o, config)
    complex_key = keygen is KeyGeneratorType.COMPLEX or (
        keygen in (KeyGeneratorType.NON_PARTITION, KeyGeneratorType.CUSTOM) and len(keys) > 1
    )
    timestamp_fields: tuple[str, ...] = ()
    if keygen is KeyGeneratorType.TIMESTAMP:
        timestamp_fields = parts[:1]
    elif keygen is KeyGeneratorType.CUSTOM:
        timestamp_fields = _custom_timestamp_fields(o, config, parts, base_uri)
    timestamp = TimestampSpec.of(o, config.props) if timestamp_fields else None
    return _TableShape(
        operation=operation,
        table_name=table_name,
        table_type=table_type,
        keys=KeySpec(
            keys,
            parts,
            hive_style,
            url_encode,
            complex_key,
            timestamp,
            timestamp_fields,
            keygen if keygen in (KeyGeneratorType.TIMESTAMP, KeyGeneratorType.CUSTOM) else None,
        ),
        merge=merge_spec,
    )


def _custom_timestamp_fields(
    o: Options, config: TableConfig, parts: tuple[str, ...], base_uri: str
) -> tuple[str, ...]:
    """The ``:TIMESTAMP`` partition fields of a table with the CUSTOM key generator: as the
    table records them (Hudi 1.x, table version 8 on, keeps the types in
    ``hoodie.table.partition.fields``), else as the write option gives them (Hudi 0.x
    records the names alone; Java's writer takes ``hoodie.datasource.write.partitionpath.
    field`` with the types, ``HoodieSparkSqlWriter`` / ``ProvidesHoodieConfig``).

    Raises:
        ConfigError: neither gives the types, or a type is not SIMPLE / TIMESTAMP.
    """
    if not parts:
        return ()
    recorded = TableConfig.PARTITION_FIELDS.items(config.props)
    if all(":" in e for e in recorded) and recorded:
        entries, what = recorded, f"{TableConfig.PARTITION_FIELDS.key} of the table at {base_uri}"
    elif o.is_set(WriteConfig.PARTITION_FIELDS):
        entries, what = (
            o.get(WriteConfig.PARTITION_FIELDS),
            f"option '{WriteConfig.PARTITION_FIELDS.key}'",
        )
    else:
        raise ConfigError(
            f"option '{WriteConfig.PARTITION_FIELDS.key}' is required: the table at {base_uri} "
            f"uses the CUSTOM key generator and records its partition fields {list(parts)} "
            "without their types; give them as 'field:SIMPLE' / 'field:TIMESTAMP'"
        )
    kinds = custom_partition_fields(entries, what)
    asked: list[str] = o.get(WriteConfig.PARTITION_FIELDS)
    if (
        entries is recorded
        and o.is_set(WriteConfig.PARTITION_FIELDS)
        and any(":" in a for a in asked)
    ):
        # Java HoodieWriterUtils.validateTableConfig compares the fields with their types
        option_kinds = custom_partition_fields(
            asked, f"option '{WriteConfig.PARTITION_FIELDS.key}'"
        )
        if option_kinds != kinds:
            raise ConfigError(
                f"option '{WriteConfig.PARTITION_FIELDS.key}'={','.join(asked)!r} contradicts "
                f"the existing table ({','.join(recorded)!r} in hoodie.properties)"
            )
    return tuple(f for f, kind in kinds if kind is PartitionKind.TIMESTAMP)


def _existing_table_merge(o: Options, config: TableConfig) -> MergeSpec:
    """An existing table's merger and ordering field: the recorded ones, the writer's where
    the table records none.

    Raises:
        ConfigError: a merge option contradicts the table's (``check_same_spec``).
    """
    if config.ordering_fields:
        ordering: str | None = config.ordering_fields[0]
    else:  # not recorded (a table written without one): the writer's, if any
        ordering = o.get(WriteConfig.PRECOMBINE_FIELD) or None
    if _merge_unrecorded(config) and any(
        o.is_set(p)
        for p in (
            WriteConfig.MERGE_MODE,
            WriteConfig.PAYLOAD_CLASS,
            WriteConfig.MERGE_STRATEGY_ID,
        )
    ):
        # a COPY_ON_WRITE table of Hudi 0.x that records no payload class: Java merges
        # with the writer's (hoodie.datasource.write.payload.class, default
        # OverwriteWithLatestAvroPayload); no reader merges a COW table's rows
        return write_spec(o, ordering)
    merge_spec = table_spec(config, custom_classes_option(o))
    if ordering and not merge_spec.ordering_fields:
        merge_spec = dataclasses.replace(merge_spec, ordering_fields=(ordering,))
    check_same_spec(o, merge_spec)
    return merge_spec


def _effective_key_generator(o: Options, config: TableConfig) -> KeyGeneratorType:
    """The key generator an existing table's keys are made with: the recorded one, or the
    one the writer names when the table records none.

    Raises:
        UnsupportedError: the table records none and the writer names one hudi_ds does not
            reproduce.
    """
    keygen = _key_generator(config)
    asked_keygen = _asked_key_generator(o)
    if asked_keygen is not None and not (
        config.KEY_GENERATOR_CLASS.of(config.props) or config.KEY_GENERATOR_TYPE.of(config.props)
    ):
        asked_kind = asked_keygen[2]  # the table does not record its key generator
        if asked_kind is None:
            raise UnsupportedError(
                f"option '{asked_keygen[0]}'={asked_keygen[1]!r}: hudi_ds reproduces the "
                f"record keys and partition paths of {_REPRODUCED} only"
            )
        keygen = asked_kind
    return keygen


def _new_table_shape(o: Options, operation: WriteOperation) -> _TableShape:
    """What the options decide of a write that creates the table.

    Raises:
        ConfigError: a key generator that does not fit the key and partition fields.
    """
    table_name = o.get(WriteConfig.TABLE_NAME) or ""
    table_type = TableType.parse(o.get(WriteConfig.TABLE_TYPE))
    key_option: list[str] | None = o.get(WriteConfig.RECORD_KEY_FIELDS)
    part_option: list[str] | None = o.get(WriteConfig.PARTITION_FIELDS)
    keys = tuple(key_option or [])
    parts = tuple(f.split(":")[0].strip() for f in part_option or [])
    ordering = o.get(WriteConfig.PRECOMBINE_FIELD) or default_ordering_field(o) or None
    merge_spec = write_spec(o, ordering)
    if o.get(WriteConfig.WRITE_TABLE_VERSION) >= 8 and merge_spec.by_payload:
        # Hudi 1.x tables merge by their merge mode (a payload class only picks it)
        merge_spec = dataclasses.replace(merge_spec, by_payload=False)
    complex_key = _new_table_complex_key(o, keys, parts)
    asked = _asked_key_generator(o)
    generator = asked[2] if asked is not None else None
    timestamp_fields: tuple[str, ...] = ()
    if generator is KeyGeneratorType.TIMESTAMP:
        timestamp_fields = parts
    elif generator is KeyGeneratorType.CUSTOM:
        kinds = custom_partition_fields(
            part_option or [], f"option '{WriteConfig.PARTITION_FIELDS.key}'"
        )
        timestamp_fields = tuple(f for f, kind in kinds if kind is PartitionKind.TIMESTAMP)
    else:
        generator = None
    return _TableShape(
        operation=operation,
        table_name=table_name,
        table_type=table_type,
        keys=KeySpec(
            keys,
            parts,
            o.get(WriteConfig.HIVE_STYLE),
            o.get(WriteConfig.URL_ENCODE),
            complex_key,
            TimestampSpec.of(o, {}) if timestamp_fields else None,
            timestamp_fields,
            generator,
        ),
        merge=merge_spec,
    )


def _bucket_base_files(
    o: Options, config: TableConfig | None, index: Index, table_type: TableType
) -> bool:
    """Whether new buckets of a MERGE_ON_READ bucket-index write start with a base file.

    Java's Spark and Flink writers put a bucket index's inserts into log files
    (``BaseSparkDeltaCommitActionExecutor.handleInsert``: ``index.canIndexLogFiles()``), so a
    new bucket is a log-only file group until a compaction. hudi-rs (0.5) lists a table of
    version 8+ through its metadata table whenever the table declares one (whatever
    ``hoodie.metadata.enable`` says) and builds file groups from base files only
    (``file_group/builder.rs`` ``file_groups_from_files_partition_records``: "only supports
    file groups with base files"), so it would read none of such a bucket's rows. There a new
    bucket starts with a base file, as Java writes new file groups of the indexes that cannot
    index logs (``super.handleInsert``: a ``HoodieCreateHandle``); later writes append logs.
    Version 6 tables and tables without a metadata table keep Java's log-only file groups.
    """
    if not index.can_index_log_files or table_type is not TableType.MERGE_ON_READ:
        return False
    version = config.table_version if config is not None else o.get(WriteConfig.WRITE_TABLE_VERSION)
    if version < 8:
        return False
    enable = o.get(WriteConfig.METADATA_ENABLE)
    if enable is not None:
        return bool(enable)  # true creates the metadata table, false deletes it
    return FILES_PARTITION in declared_partitions(config)


#: the table versions hudi_ds writes: 6 (Hudi 0.14/0.15, timeline layout 1), 8 (Hudi 1.0) and
#: 9 (Hudi 1.1+), both timeline layout 2
WRITABLE_TABLE_VERSIONS = (6, 8, 9)


def _check_version(cfg: TableConfig, base_uri: str) -> None:
    """Refuse a table version, timeline layout or base file format hudi_ds does not write.

    Raises:
        ConfigError: the table version is not 6, 8 or 9, or its timeline layout does not
            belong to it (layout 1 for version 6, 2 for 8 and 9).
        UnsupportedError: the table's base files are Lance (``hoodie.table.base.file.format=
            LANCE``, Hudi 1.2) or another non-Parquet format, or its ``hoodie.table.format`` is
            not ``native``: hudi_ds writes Hudi's native format with Parquet base files only.
    """
    version = cfg.table_version
    if version not in WRITABLE_TABLE_VERSIONS:
        raise ConfigError(
            f"hudi_ds writes table versions {', '.join(map(str, WRITABLE_TABLE_VERSIONS))}; "
            f"the table at {base_uri} is version {version} (hoodie.table.version)"
        )
    layout = cfg.timeline_layout_version
    if layout != (1 if version == 6 else 2):
        raise ConfigError(
            f"the table at {base_uri} is version {version} with timeline layout {layout} "
            "(hoodie.timeline.layout.version); Hudi writes version 6 with layout 1 and "
            "versions 8 and 9 with layout 2, hudi_ds writes only those"
        )
    table_format = (cfg.TABLE_FORMAT.of(cfg.props) or "native").strip().lower()
    if table_format != "native":
        # Hudi 1.1's pluggable table formats (HoodieTableFormat): another format's writer
        # keeps its own metadata beside Hudi's timeline
        raise UnsupportedError(
            f"the table at {base_uri} has hoodie.table.format={table_format}; hudi_ds writes "
            "Hudi's native format only"
        )
    fmt = cfg.base_file_format
    if fmt is BaseFileFormat.LANCE and not lance_available():
        raise UnsupportedError(
            f"the table at {base_uri} has LANCE base files (hoodie.table.base.file.format="
            "LANCE); writing them needs the 'pylance' package, which is not installed: "
            f"pip install {PYLANCE_REQUIREMENT}"
        )
    if fmt not in (BaseFileFormat.PARQUET, BaseFileFormat.LANCE):
        raise UnsupportedError(
            f"the table at {base_uri} has {fmt} base files (hoodie.table.base.file.format); "
            "hudi_ds writes Parquet and Lance base files only"
        )


def _new_table_base_format(o: Options) -> BaseFileFormat:
    """The base file format of a new table (``hoodie.table.base.file.format``).

    Raises:
        ConfigError: LANCE for a table version other than 9: Lance base files came with
            Hudi 1.2, whose tables are version 9; the readers of versions 6 and 8 (Hudi
            0.14-1.0) have no Lance reader.
        UnsupportedError: LANCE without the optional pylance.
    """
    fmt = BaseFileFormat.parse(
        o.get(WriteConfig.BASE_FILE_FORMAT), WriteConfig.BASE_FILE_FORMAT.key
    )
    if fmt is not BaseFileFormat.LANCE:
        return fmt
    version = o.get(WriteConfig.WRITE_TABLE_VERSION)
    if version != 9:
        raise ConfigError(
            f"option '{WriteConfig.BASE_FILE_FORMAT.key}'=LANCE needs table version 9 "
            f"('{WriteConfig.WRITE_TABLE_VERSION.key}'=9, not {version}): Lance base files "
            "came with Hudi 1.2, and the readers of older table versions cannot read them"
        )
    lance_file_module("a new table's LANCE base files (hoodie.table.base.file.format)")
    return fmt


def check_partial_blocks(resolved: ResolvedOptions, table_version: int) -> None:
    """Refuse a partial update whose ``IS_PARTIAL`` log blocks a Hudi 1.x table's readers
    would not expect.

    Java 1.x writes partial log blocks (only the updated columns, header ``IS_PARTIAL``) for a
    MERGE_ON_READ table of version 8 or later only when its merge mode is not ``CUSTOM``, no
    partial update mode is set (``hoodie.table.partial.update.mode``: the IGNORE_DEFAULTS /
    IGNORE_MARKERS behaviours, whose rows carry every column) and the index is not global
    (``MergeIntoHoodieTableCommand.isPartialUpdateActionForMOR``). COPY_ON_WRITE tables merge
    partial rows into full base-file rows, and version-6 tables keep hudi_ds's own rule
    (``hoodie.write.partial.updates``).

    Raises:
        ConfigError: a partial update of such a table, naming the reason.
    """
    if resolved.table_type is not TableType.MERGE_ON_READ or table_version < 8:
        return
    spec = resolved.merge
    b = spec.builtin
    why = None
    if spec.mode is MergeMode.CUSTOM:
        why = "its merge mode is CUSTOM"
    elif b is not None and b.partial != "NONE":
        why = f"it merges with partial update mode {b.partial} ({b.payload_class})"
    elif resolved.index.is_global:
        why = f"it uses the global index {resolved.index.type.value}"
    if why is not None:
        raise ConfigError(
            f"option '{WriteConfig.PARTIAL_UPDATES.key}'=true: the version-{table_version} "
            f"MERGE_ON_READ table takes no partial-update log blocks because {why} (Hudi 1.x "
            "writes IS_PARTIAL blocks only under EVENT_TIME_ORDERING or COMMIT_TIME_ORDERING "
            "without a partial update mode and with a non-global index); write whole rows"
        )


def check_writable(cfg: TableConfig, base_uri: str = "") -> None:
    """Refuse, before anything is written, an existing table hudi_ds cannot write faithfully.

    :func:`resolve_options` refuses what it cannot resolve (the table version, an unknown key
    generator, auto-generated keys); this adds the tables whose options resolve but whose files
    hudi_ds would write differently from Java.

    Args:
        base_uri: the table's location (named in errors).

    Raises:
        ConfigError: the table version is not 6, 8 or 9.
        UnsupportedError: Lance base files; a key generator hudi_ds does not reproduce. (A
            metadata table is kept in step: :mod:`hudi_ds.metadata.writer`; tables without meta
            fields are written with Hudi's virtual keys.)
    """
    _check_version(cfg, base_uri)
    _key_generator(cfg, base_uri)


def _key_generator(cfg: TableConfig, base_uri: str = "") -> KeyGeneratorType:
    """The table's key generator as hudi_ds reproduces it (SIMPLE, COMPLEX, NON_PARTITION,
    TIMESTAMP, CUSTOM).

    Raises:
        UnsupportedError: another key generator (global delete, a user's class):
            hudi_ds could not produce the record keys and partition paths Java does.
    """
    recorded = cfg.recorded_key_generator_name
    if recorded is not None and cfg.recorded_key_generator is None:
        prop, value = recorded
        raise UnsupportedError(
            f"the table at {base_uri} uses key generator {value} ({prop}); hudi_ds reproduces "
            f"the record keys and partition paths of {_REPRODUCED} only, so it does not write "
            "this table"
        )
    # not recorded: keys and partitions as the fields say
    return cfg.key_generator


def _merge_unrecorded(cfg: TableConfig) -> bool:
    """A version-6 COPY_ON_WRITE table that records no merge choice (payload class, merge
    mode, strategy): the writer's decides, as in Java 0.x."""
    c = TableConfig
    recorded = (
        c.PAYLOAD_CLASS,
        c.TABLE_PAYLOAD_CLASS,
        c.RECORD_MERGE_MODE,
        c.RECORD_MERGE_STRATEGY_ID,
        c.RECORD_MERGER_STRATEGY,
    )
    return (
        cfg.table_version == 6 and not cfg.is_mor and not any(p.key in cfg.props for p in recorded)
    )


def _asked_key_generator(o: Options) -> tuple[str, str, KeyGeneratorType | None] | None:
    """``(option key, value, kind)`` of a key generator the writer names, if any (kind: as
    :func:`_key_generator`, or None for a key generator hudi_ds does not reproduce)."""
    cls: str | None = o.get(WriteConfig.KEYGEN_CLASS)
    if cls:
        return WriteConfig.KEYGEN_CLASS.key, cls, KeyGeneratorType.of_class(cls)
    kind: str | None = o.get(WriteConfig.KEYGEN_TYPE)
    if kind:
        return WriteConfig.KEYGEN_TYPE.key, kind, KeyGeneratorType.named(kind)
    return None


def _new_table_complex_key(o: Options, keys: tuple[str, ...], parts: tuple[str, ...]) -> bool:
    """Whether a new table's record keys are complex (``f1:v1,...``), checking the key
    generator the writer names against the ones hudi_ds creates tables with.

    Raises:
        ConfigError: a key generator hudi_ds does not create tables with, or one that does not
            fit the key and partition fields.
    """
    asked = _asked_key_generator(o)
    if asked is None:
        return len(keys) > 1
    key, value, kind = asked
    if kind is KeyGeneratorType.COMPLEX and parts:
        return True  # ComplexKeyGenerator: f:v even for one field
    fits = {
        KeyGeneratorType.SIMPLE: len(keys) <= 1,
        KeyGeneratorType.NON_PARTITION: not parts,
        KeyGeneratorType.COMPLEX: len(keys) > 1,
        # TimestampBasedAvroKeyGenerator extends SimpleAvroKeyGenerator: one key field, the
        # one partition field it formats
        KeyGeneratorType.TIMESTAMP: len(keys) <= 1 and len(parts) == 1,
        # CustomAvroKeyGenerator: Simple keys for one field, Complex for more; any partitions
        KeyGeneratorType.CUSTOM: True,
    }
    if kind is None or not fits.get(kind, False):
        raise ConfigError(
            f"option '{key}'={value!r} is not supported for a new table with record key "
            f"fields {list(keys)} and partition fields {list(parts)}: hudi_ds creates tables "
            "with SimpleKeyGenerator (one key field, partitioned), ComplexKeyGenerator "
            "(partitioned), NonpartitionedKeyGenerator (no partition fields), "
            "TimestampBasedKeyGenerator (one key field, one partition field) or "
            "CustomKeyGenerator (partition fields as 'field:SIMPLE' / 'field:TIMESTAMP')"
        )
    return len(keys) > 1


def _recorded_or_option(o: Options, cfg: TableConfig, recorded: Any, option: Any) -> bool:
    if recorded.key in cfg.props:
        return bool(recorded.flag(cfg.props))
    return bool(o.get(option))


def _record_key_fields(
    o: Options,
    cfg: TableConfig,
    table: TableState | None,
    base_uri: str,
    operation: WriteOperation,
) -> tuple[str, ...]:
    """The table's record key fields, or the writer's when the table does not record them;
    ``()`` for a delete (a prepped delete) or an insert (new keys generated) of a table whose
    record keys Hudi generated.

    Raises:
        UnsupportedError: any other write of a table with auto-generated record keys.
        ConfigError: the table records no key fields and the options give none.
    """
    if cfg.record_key_fields:
        return tuple(cfg.record_key_fields)
    asked: list[str] | None = o.get(WriteConfig.RECORD_KEY_FIELDS)
    example = _auto_generated_key(table) if table is not None else None
    if example is not None:
        if not asked and operation in (DELETE, DELETE_PREPPED):
            # Java deletes such rows only as Spark SQL DELETE FROM does: records read from the
            # table, keyed by their _hoodie_record_key / _hoodie_partition_path
            # (DeleteHoodieTableCommand -> _hoodie.spark.sql.writes.prepped ->
            # DataSourceUtils.doDeleteOperation -> SparkRDDWriteClient.deletePrepped,
            # WriteOperationType.DELETE_PREPPED)
            return ()
        if not asked and operation is INSERT:
            # Hudi 0.14 inserts into such a table with new generated keys
            # (AutoRecordGenWrapperKeyGenerator.getRecordKey:
            # HoodieRecord.generateSequenceId(instantTime, partitionId, rowId++))
            return ()
        # Java (HoodieWriterUtils.validateTableConfig) refuses a record key option on such a
        # table: "if incoming record key is non empty, table config should also be non empty"
        raise UnsupportedError(
            f"the table at {base_uri} has no record key fields: its record keys were generated "
            f"by Hudi (e.g. {example!r}, <instant>_<task>_<row>), so no column of the data "
            f"addresses its rows and {operation.name!r} cannot find them; the writes such a "
            "table takes are a delete "
            f"('{WriteConfig.OPERATION.key}'=delete) of rows as read from the table, "
            f"carrying their {RECORD_KEY_METADATA_FIELD} and {PARTITION_PATH_METADATA_FIELD}, "
            "or an insert (new keys generated)"
            + (
                f" ('{WriteConfig.RECORD_KEY_FIELDS.key}'={','.join(asked)} would not match them)"
                if asked
                else ""
            )
        )
    if not asked:
        raise ConfigError(
            f"option '{WriteConfig.RECORD_KEY_FIELDS.key}' is required: the table at "
            f"{base_uri} does not record its record key fields ({TableConfig.RECORDKEY_FIELDS.key})"
        )
    return tuple(asked)


def _partition_fields(o: Options, cfg: TableConfig, base_uri: str) -> tuple[str, ...]:
    """The table's partition fields, or the writer's when a partitioned table does not record
    them."""
    if (
        TableConfig.PARTITION_FIELDS.key in cfg.props
        or _key_generator(cfg) is KeyGeneratorType.NON_PARTITION
    ):
        return tuple(cfg.partition_fields)
    asked: list[str] = o.get(WriteConfig.PARTITION_FIELDS)
    if not o.is_set(WriteConfig.PARTITION_FIELDS) and (
        cfg.KEY_GENERATOR_CLASS.of(cfg.props) or cfg.KEY_GENERATOR_TYPE.of(cfg.props)
    ):
        raise ConfigError(
            f"option '{WriteConfig.PARTITION_FIELDS.key}' is required: the table at {base_uri} "
            f"does not record its partition fields ({TableConfig.PARTITION_FIELDS.key}) and its "
            "key generator is a partitioning one (give an empty value for none)"
        )
    return tuple(f.split(":")[0] for f in asked)


#: rows of a Lance base file sampled for auto-generated keys (Parquet: its first row group)
_SAMPLED_ROWS = 1000


def _sampled_key_rows(table: TableState, path: str) -> pa.Table:
    """The commit time and record key columns of the first rows of base file ``path``."""
    cols = [COMMIT_TIME_METADATA_FIELD, RECORD_KEY_METADATA_FIELD]
    if path.endswith(".lance"):
        return LanceBaseFile(table.storage, path).read(cols).slice(0, _SAMPLED_ROWS)
    with table.storage.open_input_file(path) as f:
        pf = pq.ParquetFile(f)
        if pf.metadata.num_row_groups == 0:
            return pa.table({c: pa.array([], pa.string()) for c in cols})
        return pf.read_row_group(0, columns=cols)


def _auto_generated_key(table: TableState) -> str | None:
    """A record key of the table when its keys are Hudi's auto-generated ones, else None.

    Reads the commit time and record key columns of one base file of the latest commit: every
    key is ``<its commit time>_<task>_<row>`` in a table written with auto-generated keys.
    """
    for stat in latest_write_stats(table):
        if not stat.path or not stat.path.endswith((".parquet", ".lance")):
            continue
        try:
            rows = _sampled_key_rows(table, stat.path)
        except (OSError, ValueError, KeyError, HudiError) as e:
            log.debug("cannot sample record keys of %s: %s", stat.path, e)
            continue
        if rows.num_rows == 0:
            continue
        keys = rows.column(RECORD_KEY_METADATA_FIELD).cast("string")
        # the key's instant is the commit that inserted the row: never after the row's
        # latest commit (an update, e.g. Spark SQL UPDATE, keeps the key)
        born = pc.struct_field(pc.extract_regex(keys, _AUTO_KEY.pattern), [0])
        committed = rows.column(COMMIT_TIME_METADATA_FIELD).cast("string")
        auto = pc.less_equal(
            born, pc.utf8_slice_codeunits(committed, 0, pc.max(pc.utf8_length(born)).as_py() or 0)
        )
        if pc.all(pc.fill_null(auto, False)).as_py():
            return str(keys[0].as_py())
        return None
    return None


def _check_against_table(o: Options, cfg: TableConfig) -> None:
    """Refuse options contradicting what the table records (what it does not record is the
    writer's to give, as Java's ``HoodieWriterUtils.validateTableConfig`` has it)."""

    def same(prop: Any, value: Any, recorded: bool = True) -> None:
        if recorded and o.is_set(prop) and o.get(prop) != value:
            raise ConfigError(
                f"option '{prop.key}'={o.get(prop)!r} contradicts the existing table "
                f"({value!r} in hoodie.properties)"
            )

    props = cfg.props
    same(WriteConfig.TABLE_TYPE, cfg.table_type.value)
    # the option chooses the version of new tables; hudi_ds upgrades only versions 3-5 (to 6,
    # write/upgrade.py) and never downgrades. With auto-upgrade off, a greater version asked of
    # a table of version 6+ is set to the table's, as Java's UpgradeDowngrade.needsUpgrade does
    keeps = (
        not o.get(WriteConfig.AUTO_UPGRADE)
        and o.get(WriteConfig.WRITE_TABLE_VERSION) > cfg.table_version
    )
    same(WriteConfig.WRITE_TABLE_VERSION, cfg.table_version, not keeps)
    # Java HoodieTableMetaClient.validateTableProperties: virtual keys cannot be re-enabled;
    # nor are they turned on for a table whose files hold the meta values (mixed layouts)
    same(WriteConfig.POPULATE_META_FIELDS, cfg.populate_meta_fields)
    same(WriteConfig.BASE_FILE_FORMAT, cfg.base_file_format)
    same(WriteConfig.RECORD_KEY_FIELDS, cfg.record_key_fields, bool(cfg.record_key_fields))
    partition_option: list[str] = o.get(WriteConfig.PARTITION_FIELDS)
    recorded = (
        TableConfig.PARTITION_FIELDS.key in props
        or _key_generator(cfg) is KeyGeneratorType.NON_PARTITION
    )
    if recorded and (
        o.is_set(WriteConfig.PARTITION_FIELDS)
        and [f.split(":")[0] for f in partition_option] != cfg.partition_fields
    ):
        raise ConfigError(
            f"option '{WriteConfig.PARTITION_FIELDS.key}'={partition_option!r} contradicts "
            f"the existing table ({cfg.partition_fields!r} in hoodie.properties)"
        )
    same(
        WriteConfig.HIVE_STYLE,
        cfg.hive_style_partitioning,
        TableConfig.HIVE_STYLE_PARTITIONING.key in props,
    )
    same(
        WriteConfig.PRECOMBINE_FIELD,
        cfg.ordering_fields[0] if cfg.ordering_fields else None,
        bool(cfg.ordering_fields),
    )
    asked = _asked_key_generator(o)
    recorded_keygen = bool(cfg.KEY_GENERATOR_CLASS.of(props))
    if asked is not None and recorded_keygen and asked[2] != _key_generator(cfg):
        # Java HoodieWriterUtils.validateTableConfig: "KeyGenerator: <current> <existing>"
        raise ConfigError(
            f"option '{asked[0]}'={asked[1]!r} contradicts the existing table "
            f"({cfg.KEY_GENERATOR_CLASS.of(cfg.props) or 'no key generator'!s} in "
            "hoodie.properties)"
        )
    name = o.get(WriteConfig.TABLE_NAME)
    if name and name != cfg.table_name:
        raise ConfigError(
            f"option 'hoodie.table.name'={name!r} contradicts the existing table {cfg.table_name!r}"
        )
