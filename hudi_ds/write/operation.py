"""The write operations (``hoodie.datasource.write.operation``): what each one writes and commits.

Java spreads an operation over ``WriteOperationType`` and one commit action executor per kind
(``SparkUpsertCommitActionExecutor``, ``SparkInsertOverwriteCommitActionExecutor``,
``SparkDeletePartitionCommitActionExecutor``, ...); pyiceberg has one snapshot producer per kind
(``_FastAppendFiles``, ``_OverwriteFiles``, ``_DeleteFiles``). Here one object per operation
declares what differs, and the write path asks it instead of comparing names:

=========================  ===========  ================  ===========  ==================
operation                  rows are     existing groups   action       replaces
=========================  ===========  ================  ===========  ==================
upsert, insert, bulk_ins.  records      merged into       (delta)commit  --
delete                     deletes      merged into       (delta)commit  --
insert_overwrite           records      not read          replacecommit  touched partitions
insert_overwrite_table     records      not read          replacecommit  every partition
delete_partition           partitions   not read          replacecommit  named partitions
=========================  ===========  ================  ===========  ==================

With the bucket index an insert updates an existing key as an upsert does (Hudi's bucket index
tags every record with its bucket's file group), so the three record writes differ only in the
``WriteOperationType`` their commit records.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import ClassVar

from hudi_ds.config import Options
from hudi_ds.errors import ConfigError
from hudi_ds.table.fs_view import FileSystemView
from hudi_ds.timeline.instant import COMMIT, DELTA_COMMIT, REPLACE_COMMIT
from hudi_ds.timeline.view import Visibility

#: option of ``delete_partition``: the partition paths to drop (comma-separated)
PARTITIONS_TO_DELETE_KEY = "hoodie.datasource.write.partitions.to.delete"


class Rows(Enum):
    """What the input rows of an operation are."""

    RECORDS = "records"  # records to write
    DELETES = "deletes"  # keys (and partitions) of records to delete
    PARTITIONS = "partitions"  # only the partitions to drop are read from them


@dataclass(frozen=True)
class WriteOperation:
    """One kind of write (Java ``WriteOperationType`` and its commit action executor).

    Class attributes:
        name: the ``hoodie.datasource.write.operation`` value.
        operation_type: the ``WriteOperationType`` recorded in the commit metadata.
        rows: what the input rows are.
        merges_existing: rows go into the existing file groups of their buckets (merged with
            their records); False: new file groups are written and the old ones replaced.
        option_keys: write options the operation reads beside the validated ``hoodie.*`` keys.
    """

    name: ClassVar[str]
    operation_type: ClassVar[str]
    rows: ClassVar[Rows] = Rows.RECORDS
    merges_existing: ClassVar[bool] = True
    option_keys: ClassVar[tuple[str, ...]] = ()

    def action(self, table_type: str) -> str:
        """The action of the instant: ``deltacommit`` on a MERGE_ON_READ table, else ``commit``."""
        return DELTA_COMMIT if table_type == "MERGE_ON_READ" else COMMIT

    def required_columns(
        self, record_key_fields: Sequence[str], partition_fields: Sequence[str]
    ) -> tuple[str, ...] | None:
        """The columns input rows need when they are not whole records (None: records, whose
        schema is checked against the table's in full)."""
        return None

    def replaced_partitions(
        self, view: FileSystemView, written: Iterable[str], partitions_to_delete: Sequence[str]
    ) -> list[str]:
        """The partitions whose live file groups this operation replaces (none by default).

        Args:
            view: the table's file-system view.
            written: the partitions the write wrote files to.
            partitions_to_delete: the partitions a ``delete_partition`` names.
        """
        return []

    def replaced_file_ids(
        self,
        view: FileSystemView,
        visibility: Visibility,
        written: Iterable[tuple[str, str]],
        partitions_to_delete: Sequence[str],
    ) -> dict[str, list[str]]:
        """``partitionToReplaceFileIds`` of the commit: the live file groups of the replaced
        partitions, except the ones this write created.

        Args:
            visibility: what the write saw when it started.
            written: ``(partition, file id)`` of every file group the write wrote.
        """
        new_ids = set(written)
        written_partitions = sorted({p for p, _ in new_ids})
        parts = self.replaced_partitions(view, written_partitions, partitions_to_delete)
        out: dict[str, list[str]] = {}
        for p in parts:
            ids = [
                s.file_id
                for s in view.latest_file_slices(p, visibility)
                if (p, s.file_id) not in new_ids
            ]
            if ids:
                out[p] = sorted(ids)
        return out


@dataclass(frozen=True)
class Upsert(WriteOperation):
    """Insert new keys, update existing ones (the table's merge mode decides)."""

    name = "upsert"
    operation_type = "UPSERT"


@dataclass(frozen=True)
class Insert(WriteOperation):
    """Insert rows (with the bucket index an existing key is updated as in upsert)."""

    name = "insert"
    operation_type = "INSERT"


@dataclass(frozen=True)
class BulkInsert(WriteOperation):
    """Insert rows in bulk (written as an insert)."""

    name = "bulk_insert"
    operation_type = "BULK_INSERT"


@dataclass(frozen=True)
class Delete(WriteOperation):
    """Delete the keys of the input rows (Java ``HoodieDeleteHelper``)."""

    name = "delete"
    operation_type = "DELETE"
    rows = Rows.DELETES

    def required_columns(
        self, record_key_fields: Sequence[str], partition_fields: Sequence[str]
    ) -> tuple[str, ...] | None:
        return (*record_key_fields, *partition_fields)


@dataclass(frozen=True)
class _Replace(WriteOperation):
    """An operation that writes new file groups and replaces live ones (a replacecommit)."""

    merges_existing = False

    def action(self, table_type: str) -> str:
        return REPLACE_COMMIT


@dataclass(frozen=True)
class InsertOverwrite(_Replace):
    """Replace the partitions the input touches with its rows."""

    name = "insert_overwrite"
    operation_type = "INSERT_OVERWRITE"

    def replaced_partitions(
        self, view: FileSystemView, written: Iterable[str], partitions_to_delete: Sequence[str]
    ) -> list[str]:
        return sorted(set(written))


@dataclass(frozen=True)
class InsertOverwriteTable(_Replace):
    """Replace the whole table with the input."""

    name = "insert_overwrite_table"
    operation_type = "INSERT_OVERWRITE_TABLE"

    def replaced_partitions(
        self, view: FileSystemView, written: Iterable[str], partitions_to_delete: Sequence[str]
    ) -> list[str]:
        return view.partitions()


@dataclass(frozen=True)
class DeletePartition(_Replace):
    """Drop whole partitions: those named by ``hoodie.datasource.write.partitions.to.delete``,
    else the partitions of the input rows."""

    name = "delete_partition"
    operation_type = "DELETE_PARTITION"
    rows = Rows.PARTITIONS
    option_keys = (PARTITIONS_TO_DELETE_KEY,)

    def required_columns(
        self, record_key_fields: Sequence[str], partition_fields: Sequence[str]
    ) -> tuple[str, ...] | None:
        return tuple(partition_fields)

    def replaced_partitions(
        self, view: FileSystemView, written: Iterable[str], partitions_to_delete: Sequence[str]
    ) -> list[str]:
        return list(partitions_to_delete)


#: every operation, by its ``hoodie.datasource.write.operation`` name
OPERATIONS: Mapping[str, WriteOperation] = {
    op.name: op
    for op in (
        Upsert(),
        Insert(),
        BulkInsert(),
        Delete(),
        InsertOverwrite(),
        InsertOverwriteTable(),
        DeletePartition(),
    )
}
#: the options operations read beside the validated ``hoodie.*`` keys
OPERATION_OPTION_KEYS: tuple[str, ...] = tuple(
    sorted({k for op in OPERATIONS.values() for k in op.option_keys})
)


def operation_named(name: str) -> WriteOperation:
    """The operation called ``name`` (a parsed ``hoodie.datasource.write.operation`` value).

    Raises:
        ConfigError: no such operation.
    """
    op = OPERATIONS.get(name)
    if op is None:
        raise ConfigError(
            f"option 'hoodie.datasource.write.operation'={name!r} is not one of "
            f"{sorted(OPERATIONS)}"
        )
    return op


def operation_of_type(operation_type: str | None) -> WriteOperation | None:
    """The operation whose commits record ``operation_type`` (``WriteOperationType``), if any."""
    return next((op for op in OPERATIONS.values() if op.operation_type == operation_type), None)


def partitions_to_delete(options: Options, touched: Iterable[str]) -> list[str]:
    """The partitions a ``delete_partition`` drops: those its option names, else ``touched``
    (the partitions of the input rows)."""
    listed = [p for p in (options.get_str(PARTITIONS_TO_DELETE_KEY) or "").split(",") if p]
    return listed or sorted(touched)
