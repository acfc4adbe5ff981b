"""Records of the metadata table's ``files`` partition (Java ``HoodieMetadataPayload``).

Two kinds of record, keyed by the HFile row key:

* ``__all_partitions__`` (:data:`ALL_PARTITIONS`, type :data:`PARTITION_LIST`): partition path ->
  ``(0, isDeleted)``;
* one record per partition (key = the partition path, ``.`` for a non-partitioned table,
  type :data:`FILE_LIST`): file *name* -> ``(size, isDeleted)``.

The value of each is the raw Avro binary (no container header) of ``HoodieMetadataRecord`` with
Hudi's five meta fields prepended, all written as null, and the ``key`` field blanked: Java's
``HoodieAvroHFileWriter.writeAvro`` clears it because the HFile row key already holds it.

Records merge per key in instant order (:func:`merge_files`, Hudi 1.x
``HoodieMetadataPayload.combineFileSystemMetadata``). An instant's metadata maps to the records
it implies with :func:`instant_changes` (Java
``HoodieTableMetadataUtil.convertMetadataToFilesPartitionRecords`` and the clean / rollback /
restore variants).
"""

from __future__ import annotations

import functools
import io
import json
import typing
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

import fastavro

from hudi_ds.errors import CorruptFileError
from hudi_ds.layout.naming import file_name_of
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
)
from hudi_ds.timeline.metadata import CommitMetadata
from hudi_ds.timeline.plans import CleanMetadata, RestoreMetadata, RollbackMetadata

__all__ = [
    "ALL_PARTITIONS",
    "FILES_PARTITION",
    "FILE_CHANGING_ACTIONS",
    "FILE_LIST",
    "METADATA_PARTITIONS_INFLIGHT_KEY",
    "METADATA_PARTITIONS_KEY",
    "METADATA_PATH",
    "NON_PARTITIONED",
    "PARTITION_LIST",
    "FileEntry",
    "FilesChanges",
    "clean_changes",
    "commit_changes",
    "declared_partitions",
    "decode_files_value",
    "encode_files_value",
    "instant_changes",
    "listing_changes",
    "merge_files",
    "merge_records",
    "partition_id",
    "partition_path_of_id",
    "record_schema",
    "restore_changes",
    "rollback_changes",
]

ALL_PARTITIONS = "__all_partitions__"
"""Key of the record listing all partitions."""
NON_PARTITIONED = "."
"""Key (partition identifier) of a non-partitioned table's only partition."""
PARTITION_LIST = 1
"""``type`` of the :data:`ALL_PARTITIONS` record (Java ``METADATA_TYPE_PARTITION_LIST``)."""
FILE_LIST = 2
"""``type`` of a partition's file-list record (Java ``METADATA_TYPE_FILE_LIST``)."""

METADATA_PATH = ".hoodie/metadata"
"""Where the metadata table lives, relative to the data table's base path."""
FILES_PARTITION = "files"
"""The MDT partition that lists the data table's partitions and files."""
METADATA_PARTITIONS_KEY = "hoodie.table.metadata.partitions"
"""The data table's property naming the MDT partitions it declares complete."""
METADATA_PARTITIONS_INFLIGHT_KEY = "hoodie.table.metadata.partitions.inflight"
"""The data table's property naming the MDT partitions being built."""
FILE_CHANGING_ACTIONS = frozenset({COMMIT, DELTA_COMMIT, REPLACE_COMMIT, CLEAN, ROLLBACK, RESTORE})
"""Completed data actions that change the table's files, so the MDT mirrors each of them (a
compaction or log compaction completes as ``commit`` / ``deltacommit``)."""


def declared_partitions(
    config: TableConfig | None, key: str = METADATA_PARTITIONS_KEY
) -> list[str]:
    """The MDT partitions ``config`` declares complete (``key``
    :data:`METADATA_PARTITIONS_KEY`) or in flight (:data:`METADATA_PARTITIONS_INFLIGHT_KEY`),
    in their order; [] without a table or the property."""
    raw = (config.get(key) if config is not None else None) or ""
    return [p.strip() for p in raw.split(",") if p.strip()]


FileEntry = tuple[int, bool]
"""``(size, isDeleted)`` of one file (or partition, size 0) in a ``files`` record."""


@functools.cache
def record_schema(table_version: int) -> str:
    """The written ``HoodieMetadataRecord`` schema JSON (meta fields first) of a table version.

    Version 6 (Hudi 0.14/0.15) has no ``SecondaryIndexMetadata``; versions 8 and 9 share the
    1.x field list, version 8 (Hudi 1.0) without the column stats' ``ArrayWrapper`` (readers
    such as hudi-rs refuse to reconcile a base file and log blocks of both). The JSON is
    compact, as Java's ``Schema.toString()`` writes it into the HFile file info (``schema``)
    and the log block header (``SCHEMA``).
    """
    name = "v6" if table_version < 8 else "v8" if table_version == 8 else "v9"
    path = resources.files("hudi_ds.metadata").joinpath("avro", f"HoodieMetadataRecord.{name}.avsc")
    return path.read_text(encoding="utf-8")


@functools.lru_cache(maxsize=16)
def _parsed(schema_json: str) -> Any:
    return fastavro.parse_schema(json.loads(schema_json))


@functools.lru_cache(maxsize=16)
def _null_fields(schema_json: str) -> tuple[str, ...]:
    """Fields written as null: all but ``key``, ``type`` and ``filesystemMetadata``."""
    names = [f["name"] for f in json.loads(schema_json)["fields"]]
    return tuple(n for n in names if n not in ("key", "type", "filesystemMetadata"))


def encode_files_value(
    record_type: int,
    files: Mapping[str, FileEntry],
    schema_json: str,
    *,
    file_name: str | None = None,
) -> bytes:
    """The HFile value of one ``files`` record: raw Avro binary, ``key`` blank, meta fields null.

    Args:
        record_type: :data:`PARTITION_LIST` or :data:`FILE_LIST`.
        files: name (file name or partition path) -> ``(size, isDeleted)``.
        schema_json: the written schema (:func:`record_schema`).
        file_name: ``_hoodie_file_name``: Java sets it to the base HFile's name in base-file
            records (all fixtures but the bootstrap base file of Hudi 1.1); None in log blocks.

    Raises:
        ValueError: a live (not deleted) file entry of a FILE_LIST record has no positive size
            (Java ``HoodieMetadataPayload.validatePayload`` rejects it).
    """
    if record_type == FILE_LIST:
        bad = [n for n, (size, deleted) in files.items() if not deleted and size <= 0]
        if bad:
            raise ValueError(f"metadata file entries need a positive size: {sorted(bad)[:5]}")
    record: dict[str, Any] = dict.fromkeys(_null_fields(schema_json))
    record["key"] = ""
    record["_hoodie_file_name"] = file_name
    record["type"] = record_type
    record["filesystemMetadata"] = {
        name: {"size": int(size), "isDeleted": bool(deleted)}
        for name, (size, deleted) in files.items()
    }
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, _parsed(schema_json), record)
    return buf.getvalue()


def decode_files_value(value: bytes, schema_json: str) -> tuple[int, dict[str, FileEntry]]:
    """Decode one ``files`` record value: ``(type, name -> (size, isDeleted))``.

    Raises:
        CorruptFileError: if ``value`` is not a ``HoodieMetadataRecord`` of ``schema_json``.
    """
    try:
        record = typing.cast(
            dict[str, Any],
            fastavro.schemaless_reader(io.BytesIO(value), _parsed(schema_json), None),
        )
    except Exception as e:  # fastavro raises assorted errors on torn bytes
        raise CorruptFileError(f"unreadable metadata record value ({len(value)} bytes): {e}") from e
    fs = record.get("filesystemMetadata") or {}
    files = {name: (int(info["size"]), bool(info["isDeleted"])) for name, info in fs.items()}
    return int(record["type"]), files


def merge_files(
    older: Mapping[str, FileEntry], newer: Mapping[str, FileEntry]
) -> dict[str, FileEntry]:
    """Merge two file maps of the same key, ``newer`` written after ``older`` (Hudi 1.x rule).

    * an entry only in ``newer`` is put as is (a tombstone stays a tombstone);
    * an entry in both whose newer one is deleted is removed;
    * an entry in both whose newer one is live keeps ``max(old, new)`` size (a tombstone
      followed by an add gives the add).

    Java ``HoodieMetadataPayload.combineFileSystemMetadata``; hudi-rs ``metadata/merger.rs``.
    """
    out = dict(older)
    for name, (size, deleted) in newer.items():
        old = out.get(name)
        if old is None:
            out[name] = (size, deleted)
        elif deleted:
            del out[name]
        elif old[1]:
            out[name] = (size, False)
        else:
            out[name] = (max(old[0], size), False)
    return out


def _compose(first: Mapping[str, FileEntry], then: Mapping[str, FileEntry]) -> dict[str, FileEntry]:
    out = dict(first)
    for name, (size, deleted) in then.items():
        old = out.get(name)
        if deleted or old is None or old[1]:
            out[name] = (size, deleted)
        else:
            out[name] = (max(old[0], size), False)
    return out


Records = dict[str, tuple[int, dict[str, FileEntry]]]
"""Record key -> ``(type, file map)``."""


def merge_records(older: Mapping[str, tuple[int, dict[str, FileEntry]]], newer: Records) -> Records:
    """Merge record sets key by key with :func:`merge_files` (``newer`` after ``older``)."""
    out: Records = dict(older)
    for key, (rtype, files) in newer.items():
        prev = out.get(key)
        out[key] = (rtype, files) if prev is None else (rtype, merge_files(prev[1], files))
    return out


def partition_id(partition_path: str) -> str:
    """The ``files`` record key of a data partition: the path, ``.`` when non-partitioned.

    Java ``HoodieTableMetadataUtil.getPartitionIdentifierForFilesPartition``.
    """
    return partition_path or NON_PARTITIONED


def partition_path_of_id(key: str) -> str:
    """Inverse of :func:`partition_id` (``.`` -> ``""``)."""
    return "" if key == NON_PARTITIONED else key


@dataclass
class FilesChanges:
    """The ``files`` partition changes of one data instant.

    Attributes:
        files: partition identifier -> file name -> ``(size, isDeleted)``.
        partitions: partition identifier -> ``(0, isDeleted)`` for the ``__all_partitions__``
            record (empty: no partition-list record is written).
    """

    files: dict[str, dict[str, FileEntry]] = field(default_factory=dict)
    partitions: dict[str, FileEntry] = field(default_factory=dict)

    def add(self, partition: str, name: str, size: int) -> None:
        """A file written (or appended to, ``size`` its final size); repeats keep the max."""
        bucket = self.files.setdefault(partition_id(partition), {})
        old = bucket.get(name)
        bucket[name] = (size if old is None or old[1] else max(old[0], size), False)

    def delete(self, partition: str, name: str) -> None:
        """A file deleted: a tombstone."""
        self.files.setdefault(partition_id(partition), {})[name] = (0, True)

    def extend(self, other: FilesChanges) -> None:
        """Compose ``other`` after this one (restore: one rollback after another).

        Unlike :func:`merge_files` a later delete stays a tombstone: the composed changes are
        merged onto a state that may still hold the file.
        """
        for key, files in other.files.items():
            self.files[key] = _compose(self.files.get(key, {}), files)
        self.partitions = _compose(self.partitions, other.partitions)

    def records(self) -> Records:
        """Record key -> ``(type, files)``: the partition list (if any) and one per partition."""
        out: Records = {key: (FILE_LIST, dict(files)) for key, files in self.files.items()}
        if self.partitions:
            out[ALL_PARTITIONS] = (PARTITION_LIST, dict(self.partitions))
        return out

    def __bool__(self) -> bool:
        return bool(self.files or self.partitions)


def commit_changes(meta: CommitMetadata) -> FilesChanges:
    """Files of a commit / deltacommit / replacecommit / compaction or clustering commit.

    Each write stat's file -> its ``fileSizeInBytes`` (a log file appended to several times in
    one instant keeps the largest size, the final one); the partition list names every partition
    written. Replaced file groups stay listed until a clean deletes them; a DELETE_PARTITION
    replacecommit tombstones its partitions in the partition list. Java
    ``HoodieTableMetadataUtil.convertMetadataToFilesPartitionRecords(HoodieCommitMetadata, ..)``.
    """
    out = FilesChanges()
    for partition, stats in meta.partition_to_write_stats.items():
        out.partitions[partition_id(partition)] = (0, False)
        for stat in stats:
            if not stat.path:
                continue  # an empty write (Java logs and skips it)
            out.add(partition, file_name_of(stat.path), int(stat.file_size_in_bytes))
            for cdc_path, size in (stat.cdc_stats or {}).items():
                out.add(partition, file_name_of(cdc_path), int(size))
    if meta.is_replace and (meta.operation_type or "").upper() == "DELETE_PARTITION":
        for partition, ids in meta.partition_to_replace_file_ids.items():
            if ids:
                out.partitions[partition_id(partition)] = (0, True)
    return out


def clean_changes(meta: CleanMetadata) -> FilesChanges:
    """Tombstones for the files a clean deleted (its ``deletePathPatterns``, file names, as Java
    ``convertMetadataToFilesPartitionRecords(HoodieCleanMetadata, ..)`` takes them); a partition
    the clean deleted is tombstoned in the partition list."""
    out = FilesChanges()
    for key, pm in meta.partition_metadata.items():
        partition = pm.partition_path or key
        for name in pm.delete_path_patterns:
            out.delete(partition, file_name_of(name))
        if pm.is_partition_deleted:
            out.partitions[partition_id(partition)] = (0, True)
    return out


def rollback_changes(meta: RollbackMetadata) -> FilesChanges:
    """A rollback's files: deleted files -> tombstones; log files that received a rollback
    command block -> their new sizes (Java ``HoodieTableMetadataUtil.processRollbackMetadata``:
    the larger size wins when a file appears twice)."""
    out = FilesChanges()
    for key, pm in meta.partition_metadata.items():
        partition = pm.partition_path if pm.partition_path is not None else key
        for path in pm.success_delete_files:
            out.delete(partition, file_name_of(path))
        for path, size in (pm.rollback_log_files or {}).items():
            out.add(partition, file_name_of(path), int(size))
    return out


def restore_changes(meta: RestoreMetadata) -> FilesChanges:
    """A restore's files: its rollbacks applied in the order it ran them."""
    out = FilesChanges()
    for rollbacks in meta.hoodie_restore_metadata.values():
        for rb in rollbacks:
            if rb is not None:
                out.extend(rollback_changes(rb))
    return out


_COMMIT_ACTIONS = frozenset(
    {COMMIT, DELTA_COMMIT, REPLACE_COMMIT, COMPACTION, LOG_COMPACTION, CLUSTERING}
)


def instant_changes(
    instant: Instant, content: bytes, metadata: CommitMetadata | None = None
) -> FilesChanges | None:
    """The ``files`` changes of a completed data instant with content ``content``
    (``metadata``: a commit's metadata that ``content`` was serialized from, not parsed again).

    None for actions that change no files (savepoint, indexing, schema commits).

    Raises:
        CorruptFileError: if the content cannot be parsed as the action's metadata.
    """
    action = instant.action
    if action in _COMMIT_ACTIONS:
        return commit_changes(metadata or CommitMetadata.from_bytes(content))
    if action == CLEAN:
        return clean_changes(CleanMetadata.from_bytes(content))
    if action == ROLLBACK:
        return rollback_changes(RollbackMetadata.from_bytes(content))
    if action == RESTORE:
        return restore_changes(RestoreMetadata.from_bytes(content))
    return None


def listing_changes(listing: Iterable[tuple[str, str, int]]) -> FilesChanges:
    """Changes that create a ``files`` partition from ``(partition, file name, size)`` triples
    (Java ``HoodieBackedTableMetadataWriter.initializeFilesPartition``): every partition in the
    partition list, every file live."""
    out = FilesChanges()
    for partition, name, size in listing:
        out.partitions[partition_id(partition)] = (0, False)
        out.add(partition, name, size)
    return out
