"""Computing ``column_stats`` and ``partition_stats`` records from a table's data files.

* :func:`indexed_columns`: the columns the table's column stats cover -- the ``column_stats``
  index definition's ``sourceFields`` when the table has one (``.hoodie/.index_defs``, Hudi 1.x
  records the list it chose there), else Java's rule from the options
  (:func:`hudi_ds.metadata.column_stats.columns_to_index`);
* :func:`file_ranges`: one data file's ranges -- a Parquet base file from its footer, a log
  file from its data blocks' records (Java ``HoodieTableMetadataUtil.
  readColumnRangeMetadataFrom``);
* :func:`partition_ranges`: a partition's ranges over its latest file slices, merged (Java
  ``HoodieTableMetadataUtil.collectAndProcessColumnMetadata``: the ``partition_stats`` record).
"""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Iterable, Sequence

import pyarrow as pa
import pyarrow.parquet as pq

from hudi_ds.errors import ConfigError
from hudi_ds.layout.naming import parse_base_file_name, parse_log_file_name
from hudi_ds.log.block import BlockType
from hudi_ds.log.reader import decode_data_blocks, scan_log_bytes
from hudi_ds.metadata.column_stats import (
    COLUMN_STATS_PARTITION,
    ColumnRange,
    ValueType,
    columns_to_index,
    merge_ranges,
    ranges_of_parquet,
    ranges_of_table,
)
from hudi_ds.storage import Storage
from hudi_ds.table_config import TableConfig

__all__ = [
    "file_instant",
    "file_ranges",
    "fold_ranges",
    "index_definition_columns",
    "indexed_columns",
    "partition_ranges",
    "record_index_definition",
]

log = logging.getLogger("hudi_ds.metadata")


def index_definition_columns(config: TableConfig, storage: Storage) -> list[str] | None:
    """``sourceFields`` of the table's ``column_stats`` index definition, None without one.

    Raises:
        ConfigError: the index definitions file does not parse.
    """
    rel = config.get(TableConfig.INDEX_DEFS_PATH)
    if not rel or not storage.exists(rel):
        return None
    try:
        doc = json.loads(storage.read_text(rel))
        definition = (doc.get("indexDefinitions") or {}).get(COLUMN_STATS_PARTITION)
    except (ValueError, AttributeError) as e:
        raise ConfigError(
            f"{storage.uri(rel)} ({TableConfig.INDEX_DEFS_PATH.key}) cannot be read ({e}): "
            "the columns of the table's column stats cannot be told"
        ) from None
    if not definition:
        return None
    fields = definition.get("sourceFields") or []
    return [str(f) for f in fields]


_INDEX_DEFS = ".hoodie/.index_defs/index.json"


def record_index_definition(
    config: TableConfig, storage: Storage, columns: Sequence[str]
) -> dict[str, str]:
    """Record the ``column_stats`` index definition (its ``sourceFields``: ``columns``) in the
    table's index definitions file, as Java 1.x does when it initializes the partition
    (``HoodieTableMetaClient.buildIndexDefinition``; Hudi 1.1 adds ``"version": "V2"``); other
    definitions are kept. Returns the ``hoodie.properties`` entry naming the file when the
    table records none yet.

    Raises:
        ConfigError: an existing definitions file does not parse.
    """
    rel = config.get(TableConfig.INDEX_DEFS_PATH) or _INDEX_DEFS
    doc: dict = {"indexDefinitions": {}}
    if storage.exists(rel):
        try:
            doc = json.loads(storage.read_text(rel))
            doc.setdefault("indexDefinitions", {})
        except ValueError as e:
            raise ConfigError(
                f"{storage.uri(rel)} ({TableConfig.INDEX_DEFS_PATH.key}) cannot be read ({e})"
            ) from None
    definition: dict = {
        "indexName": COLUMN_STATS_PARTITION,
        "indexType": COLUMN_STATS_PARTITION,
        "indexFunction": COLUMN_STATS_PARTITION,
        "sourceFields": list(columns),
        "indexOptions": {},
    }
    if config.table_version >= 9:
        definition["version"] = "V2"
    doc["indexDefinitions"][COLUMN_STATS_PARTITION] = definition
    storage.write_atomic(rel, json.dumps(doc, indent=2).encode("utf-8"))
    if config.get(TableConfig.INDEX_DEFS_PATH):
        return {}
    return {TableConfig.INDEX_DEFS_PATH.key: rel}


def indexed_columns(
    config: TableConfig,
    storage: Storage,
    schema: pa.Schema,
    *,
    column_list: Sequence[str] = (),
    max_columns: int = 32,
) -> list[str]:
    """The columns the table's column stats cover (see the module docstring).

    Args:
        config: the data table's ``hoodie.properties``.
        storage: the data table's storage.
        schema: the table's schema (data columns; meta columns may be included).
        column_list: ``hoodie.metadata.index.column.stats.column.list``.
        max_columns: ``hoodie.metadata.index.column.stats.max.columns.to.index``.
    """
    defined = index_definition_columns(config, storage)
    if defined:
        return defined
    return columns_to_index(
        schema,
        populate_meta_fields=config.populate_meta_fields,
        column_list=column_list,
        max_columns=max_columns,
    )


def file_ranges(
    storage: Storage,
    partition: str,
    file_name: str,
    columns: Sequence[str],
    instant_time: str | None = None,
) -> list[ColumnRange]:
    """The ranges of ``columns`` in data file ``file_name`` of ``partition`` (``""``
    non-partitioned): from a Parquet footer, or a log file's data records (sizes 0; a log
    without data records, only deletes, gets empty ranges) -- with ``instant_time`` only the
    records of that instant's blocks (a log file appended to by several instants: Java's
    append handle counts each append's records). Other files (HFile, ORC base files) get
    none, as Java logs and skips them."""
    rel = f"{partition}/{file_name}" if partition else file_name
    base = parse_base_file_name(file_name)
    if base is not None:
        if base.extension != ".parquet":
            log.warning("column stats: %s is not a Parquet file; it gets no stats", rel)
            return []
        with storage.open_input_file(rel) as f:
            md = pq.ParquetFile(f).metadata
        return ranges_of_parquet(md, file_name, columns)
    if parse_log_file_name(file_name) is None:
        return []
    scan = scan_log_bytes(storage.read_bytes(rel), storage.full_path(rel))
    kinds = (BlockType.AVRO_DATA, BlockType.PARQUET_DATA)
    data = [
        b
        for b in scan.blocks
        if b.block_type in kinds and (instant_time is None or b.instant_time == instant_time)
    ]
    tables = [t for t in decode_data_blocks(data) if t.num_rows]
    if not tables:
        return [ColumnRange(file_name, c, None, None, 0, 0, 0, 0, ValueType.NULL) for c in columns]
    table = pa.concat_tables(tables, promote_options="permissive")
    return ranges_of_table(table, file_name, columns)


def partition_ranges(
    partition: str, ranges: Iterable[ColumnRange], columns: Sequence[str]
) -> list[ColumnRange]:
    """The ``partition_stats`` ranges of ``partition`` from file ``ranges`` merged per column
    (named after the partition path).

    Which files: Java (``HoodieTableMetadataUtil.convertMetadataToPartitionStatRecords``)
    recomputes the record of every partition a commit writes from the partition's latest
    file slices *including the commit's own* (``getPartitionLatestFileSlicesIncludingInflight``):
    a new base file replaces its group's slice, a new log file joins it, and file groups the
    commit replaces (insert_overwrite, clustering) still count, the commit not being complete.
    A partition whose files give no statistics (an empty base file) gets no new record (the
    previous one stays); a clean does not touch the records; a delete_partition tombstones them.
    """
    merged = fold_ranges(partition, {}, sorted(ranges, key=_file_instant))
    return [merged[c] for c in columns if c in merged]


def fold_ranges(
    partition: str, merged: dict[str, ColumnRange], ranges: Iterable[ColumnRange]
) -> dict[str, ColumnRange]:
    """``merged`` (per column, the ranges of files already folded) with ``ranges`` folded in
    in their order, named after ``partition``: :func:`partition_ranges` without the sort, so
    a writer can go on from the fold of a partition's earlier files."""
    out = dict(merged)
    for r in ranges:
        prev = out.get(r.column)
        out[r.column] = (
            merge_ranges(prev, r, partition) if prev is not None else _renamed(r, partition)
        )
    return out


@functools.lru_cache(maxsize=1 << 14)
def file_instant(file_name: str) -> str:
    """The instant of a data file (files fold oldest first; the order is stable for ties)."""
    base = parse_base_file_name(file_name)
    if base is not None:
        return base.instant_time
    lg = parse_log_file_name(file_name)
    return lg.instant_time if lg is not None else ""


def _file_instant(r: ColumnRange) -> str:
    return file_instant(r.name)


def _renamed(r: ColumnRange, name: str) -> ColumnRange:
    return ColumnRange(
        name,
        r.column,
        r.min_value,
        r.max_value,
        r.null_count,
        r.value_count,
        r.total_size,
        r.total_uncompressed_size,
        r.value_type,
        r.precision,
        r.scale,
    )
