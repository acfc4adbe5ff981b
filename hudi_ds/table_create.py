"""Creating a table: the ``hoodie.properties`` of a new table and the folders beside it.

What ``HoodieTableMetaClient.newTableBuilder()...initTable`` does for a Spark write to an
empty path: the table's identity (name, type, version, timeline layout), its keys and
partitioning, its merge behaviour and first schema are written once, through the declared
:class:`~hudi_ds.table_config.TableProperty` entries, into ``.hoodie/hoodie.properties``.

Table version 6 (Hudi 0.14/0.15; the default, ``hoodie.write.table.version``) has timeline
layout 1 (instant files in ``.hoodie``, archived timeline in ``.hoodie/archived``) and records
its key generator class and payload class. Versions 8 (Hudi 1.0) and 9 (Hudi 1.1) have
timeline layout 2 (``.hoodie/timeline`` with the LSM history in ``timeline/history``), record
``hoodie.table.initial.version``, the key generator type, the merge mode and strategy id; 8
keeps the payload class and ``hoodie.table.precombine.field``, 9 records
``hoodie.table.ordering.fields`` and ``hoodie.table.format=native`` instead (as the fixtures
of Hudi 1.0 / 1.1 show).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import pyarrow as pa

from hudi_ds.errors import ConfigError, TableExistsError
from hudi_ds.keygen import KeyGeneratorType
from hudi_ds.schema.avro import avro_schema_json, table_avro_schema
from hudi_ds.schema.meta import META_FIELDS
from hudi_ds.storage import Storage
from hudi_ds.table_config import PROPS_FILE, BaseFileFormat, TableConfig, TableType

#: The folders of a new table's ``.hoodie`` (``HoodieTableMetaClient.initTable``), both
#: timeline layouts; :func:`table_folders` adds the timeline's own.
TABLE_FOLDERS = (
    ".hoodie/.temp",
    ".hoodie/.schema",
    ".hoodie/.aux/.bootstrap/.partitions",
    ".hoodie/.aux/.bootstrap/.fileids",
)


def table_folders(table_version: int) -> tuple[str, ...]:
    """The folders of a new table of ``table_version``: version 6 archives into
    ``.hoodie/archived``; 8 and 9 keep the active timeline in ``.hoodie/timeline`` and the
    archived one in ``.hoodie/timeline/history``."""
    if table_version >= 8:
        return (".hoodie/timeline", ".hoodie/timeline/history", *TABLE_FOLDERS)
    return (".hoodie/archived", *TABLE_FOLDERS)


@dataclass(frozen=True)
class NewTable:
    """What a new table records, resolved from the write options.

    Attributes:
        table_name: ``hoodie.table.name`` (required).
        table_type: ``COPY_ON_WRITE`` or ``MERGE_ON_READ``.
        record_key_fields: the record key columns.
        partition_fields: the partition path columns.
        hive_style: ``field=value`` partition folders.
        url_encode: partition values URL-encoded.
        complex_key: record keys are ``f1:v1,f2:v2`` (the complex key generator).
        index_properties: the index entries (``hoodie.index.type`` and a bucket index's
            layout: ``Index.table_properties``).
        ordering_field: the ordering (precombine) field, if any.
        database_name: ``hoodie.database.name``, if any.
        merge_properties: the merge entries (``MergeSpec.table_properties``).
        populate_meta_fields: ``hoodie.populate.meta.fields`` (False: virtual keys).
        table_version: ``hoodie.table.version``: 6, 8 or 9.
        key_generator_type: the key generator the writer named when the fields alone do not
            tell it (TIMESTAMP, CUSTOM); None: SIMPLE / COMPLEX / NON_PARTITION by the fields.
        partition_field_entries: the partition fields as a CUSTOM key generator's table of
            version 8 or 9 records them (``field:TYPE``); empty: the names.
        keygen_properties: the ``hoodie.keygen.timebased.*`` entries (Java records the
            TimestampBasedKeyGenerator's options, ``PERSISTED_CONFIG_LIST``).
        base_file_format: ``hoodie.table.base.file.format`` (PARQUET, or LANCE on version 9).
        index_files: files the index keeps beside the timeline (table-relative path ->
            bytes: ``Index.table_files``), written before ``hoodie.properties``.
    """

    table_name: str
    table_type: TableType
    record_key_fields: tuple[str, ...]
    partition_fields: tuple[str, ...]
    hive_style: bool
    url_encode: bool
    complex_key: bool
    index_properties: Mapping[str, str]
    ordering_field: str | None = None
    database_name: str | None = None
    merge_properties: Mapping[str, str] = field(default_factory=dict)
    populate_meta_fields: bool = True
    table_version: int = 6
    key_generator_type: KeyGeneratorType | None = None
    partition_field_entries: tuple[str, ...] = ()
    keygen_properties: Mapping[str, str] = field(default_factory=dict)
    base_file_format: BaseFileFormat = BaseFileFormat.PARQUET
    index_files: Mapping[str, bytes] = field(default_factory=dict)

    @property
    def key_generator(self) -> KeyGeneratorType:
        """The key generator Java writers use for these keys."""
        if self.key_generator_type is not None:
            return self.key_generator_type
        if not self.partition_fields:
            return KeyGeneratorType.NON_PARTITION
        return KeyGeneratorType.COMPLEX if self.complex_key else KeyGeneratorType.SIMPLE

    @property
    def keygen_class(self) -> str:
        """The key generator's Java class (``org.apache.hudi.keygen.*``)."""
        return "org.apache.hudi.keygen." + self.key_generator.java_class


def table_properties(table: NewTable, schema: pa.Schema) -> dict[str, str]:
    """The ``hoodie.properties`` entries of a new table whose rows have ``schema``.

    Args:
        table: what the table records.
        schema: the first write's table schema (meta fields are left out of
            ``hoodie.table.create.schema``).

    Raises:
        ConfigError: no table name.
    """
    if not table.table_name:
        raise ConfigError("option 'hoodie.table.name' is required to create a table")
    data = pa.schema([f for f in schema if f.name not in META_FIELDS])
    version = table.table_version
    if version not in (6, 8, 9):
        raise ConfigError(f"hoodie.write.table.version={version}: hudi_ds creates 6, 8 or 9")
    c = TableConfig
    props = dict(
        [
            c.NAME.entry(table.table_name),
            c.TYPE.entry(table.table_type),
            c.VERSION.entry(version),
            c.RECORDKEY_FIELDS.entry(table.record_key_fields),
            # Hudi 1.x keeps a CUSTOM key generator's field types (version 8 on); 0.x the names
            c.PARTITION_FIELDS.entry(
                table.partition_field_entries
                if version >= 8 and table.partition_field_entries
                else table.partition_fields
            ),
            c.HIVE_STYLE_PARTITIONING.entry(table.hive_style),
            c.URL_ENCODE_PARTITIONING.entry(table.url_encode),
            c.DROP_PARTITION_COLUMNS.entry(False),
            c.BASE_FILE_FORMAT.entry(table.base_file_format.value),
            c.ARCHIVELOG_FOLDER.entry("archived"),
            c.POPULATE_META_FIELDS.entry(table.populate_meta_fields),
            c.TIMELINE_TIMEZONE.entry("UTC"),
        ]
    )
    if version == 6:
        props.update(
            [c.TIMELINE_LAYOUT_VERSION.entry(1), c.KEY_GENERATOR_CLASS.entry(table.keygen_class)]
        )
    else:  # Hudi 1.x: HoodieTableMetaClient.TableBuilder.build
        props.update(
            [
                c.INITIAL_VERSION.entry(version),
                c.TIMELINE_LAYOUT_VERSION.entry(2),
                c.TIMELINE_PATH.entry("timeline"),
                c.TIMELINE_HISTORY_PATH.entry("history"),
                c.KEY_GENERATOR_TYPE.entry(table.key_generator.value),
            ]
        )
    if version >= 9:
        props.update([c.TABLE_FORMAT.entry("native")])
    props.update(table.merge_properties)
    props.update(
        [
            c.CREATE_SCHEMA.entry(avro_schema_json(table_avro_schema(data, table.table_name))),
        ]
    )
    props.update(table.index_properties)
    props.update(table.keygen_properties)
    if table.database_name:
        props.update([c.DATABASE_NAME.entry(table.database_name)])
    if table.ordering_field:
        # Hudi 1.1 renamed the precombine field to the table's ordering fields
        key = c.ORDERING_FIELDS if version >= 9 else c.PRECOMBINE_FIELD
        props.update([key.entry(table.ordering_field)])
    return props


def check_path_is_free(storage: Storage) -> None:
    """Refuse to create a table over other data: the folder must be empty or missing.

    Raises:
        TableExistsError: the path is a file, or a folder holding files or folders other
            than ``.hoodie`` (the message names up to five of them).
    """
    if storage.info("") is not None:
        raise TableExistsError(f"{storage.base_uri} is a file, not a folder for a Hudi table")
    stray = [f.name for f in storage.list_files("")] + [
        d.rsplit("/", 1)[-1] for d in storage.list_dirs("") if not d.endswith(".hoodie")
    ]
    if stray:
        raise TableExistsError(
            f"{storage.base_uri} holds {sorted(stray)[:5]} but no Hudi table "
            "(.hoodie/hoodie.properties); refusing to create a table over other data"
        )


def create_table(storage: Storage, table: NewTable, schema: pa.Schema) -> TableConfig:
    """Create the table at ``storage``: its ``.hoodie`` folders and ``hoodie.properties``.

    Returns:
        The new table's config, as written to ``hoodie.properties``.

    Raises:
        ConfigError: no table name.
        TableExistsError: another writer created a table there meanwhile.
    """
    props = table_properties(table, schema)
    for d in table_folders(table.table_version):
        storage.makedirs(d)
    if storage.exists(PROPS_FILE):
        raise TableExistsError(f"a table was created at {storage.base_uri} meanwhile")
    for path, data in table.index_files.items():
        # before hoodie.properties: a table that exists has its index's files
        storage.makedirs(path.rsplit("/", 1)[0])
        storage.write_atomic(path, data)
    config = TableConfig(props)
    config.save(storage)  # with its checksum
    return config


def folder_listing(storage: Storage) -> set[str]:
    """Every file and folder under the base path (relative), before creating a table there:
    what :func:`remove_created` leaves."""
    if not storage.exists(""):
        return set()
    return (
        {f.path for f in storage.list_files("", recursive=True)}
        | set(storage.list_dirs("", recursive=True))
        | {""}
    )


def remove_created(storage: Storage, before: set[str]) -> None:
    """Remove what was created under the base path since :func:`folder_listing` returned
    ``before`` (the table a failed first write created: its caller checks that nothing was
    committed); everything listed in ``before`` stays."""
    for f in storage.list_files("", recursive=True):
        if f.path not in before:
            storage.delete(f.path)
    for d in sorted(storage.list_dirs("", recursive=True), key=lambda d: -d.count("/")):
        if d not in before:
            storage.delete_dir(d)
    if "" not in before:
        storage.delete_dir("")
