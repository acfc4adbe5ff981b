"""The write operations (``hoodie.datasource.write.operation``): what each one writes and commits.

Java spreads an operation over ``WriteOperationType`` and one commit action executor per kind
(``SparkUpsertCommitActionExecutor``, ``SparkInsertOverwriteCommitActionExecutor``,
``SparkDeletePartitionCommitActionExecutor``, ...); pyiceberg has one snapshot producer per kind
(``_FastAppendFiles``, ``_OverwriteFiles``, ``_DeleteFiles``). Here one object per operation
declares what differs, and the write path asks it instead of comparing names:

* ``upsert``, ``insert``, ``bulk_insert``: records, merged into their buckets' file groups;
  a ``commit`` (COPY_ON_WRITE) or ``deltacommit`` (MERGE_ON_READ);
* ``delete``: keys to delete, merged likewise;
* ``insert_overwrite``: records in new file groups; a ``replacecommit`` replacing the live file
  groups of the partitions written;
* ``insert_overwrite_table``: the same, replacing every partition;
* ``delete_partition``: nothing written; a ``replacecommit`` replacing the partitions named by
  ``hoodie.datasource.write.partitions.to.delete`` (else those of the input rows).

With the bucket index an insert updates an existing key as an upsert does (Hudi's bucket index
tags every record with its bucket's file group), so the three record writes differ only in the
``WriteOperationType`` their commit records.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum

from hudi_ds.config import Options, WriteConfig
from hudi_ds.errors import ConfigError
from hudi_ds.table.fs_view import FileSystemView
from hudi_ds.table_config import TableType
from hudi_ds.timeline.instant import COMMIT, DELTA_COMMIT, REPLACE_COMMIT
from hudi_ds.timeline.view import Visibility


class Rows(Enum):
    """What the input rows of an operation are."""

    RECORDS = "records"  # records to write
    DELETES = "deletes"  # keys (and partitions) of records to delete
    PARTITIONS = "partitions"  # only the partitions to drop are read from them


class Replaces(Enum):
    """Which partitions' live file groups an operation replaces."""

    NOTHING = "nothing"  # rows go into the existing file groups of their buckets
    WRITTEN = "written"  # the partitions the write wrote to
    TABLE = "table"  # every partition
    NAMED = "named"  # the partitions named to delete


@dataclass(frozen=True)
class WriteOperation:
    """One kind of write (Java ``WriteOperationType`` and its commit action executor).

    Attributes:
        name: the ``hoodie.datasource.write.operation`` value.
        operation_type: the ``WriteOperationType`` recorded in the commit metadata.
        rows: what the input rows are.
        replaces: which live file groups the write replaces (a replacecommit) instead of
            writing into them.
        saves_workload_profile: its inflight file holds the workload profile when one
            process tags the whole input first (Java's ``BaseSparkCommitActionExecutor``
            family does for upsert, insert, delete and insert overwrite; a bulk insert and
            a partition delete leave their inflight without one).
        prepped: the input rows are records as read from the table: their keys and partition
            paths are their ``_hoodie_record_key`` and ``_hoodie_partition_path`` values, no
            key generator runs (Java's ``*_PREPPED`` operations).
    """

    name: str
    operation_type: str
    rows: Rows = Rows.RECORDS
    replaces: Replaces = Replaces.NOTHING
    saves_workload_profile: bool = True
    prepped: bool = False

    @property
    def merges_existing(self) -> bool:
        """Rows go into the existing file groups of their buckets (merged with their records);
        False: new file groups are written and the live ones replaced."""
        return self.replaces is Replaces.NOTHING

    def action(self, table_type: TableType) -> str:
        """The action of the instant: ``replacecommit`` for a replacing operation, else
        ``deltacommit`` on a MERGE_ON_READ table and ``commit`` on a COPY_ON_WRITE one."""
        if not self.merges_existing:
            return REPLACE_COMMIT
        return DELTA_COMMIT if table_type is TableType.MERGE_ON_READ else COMMIT

    def required_columns(
        self, record_key_fields: Sequence[str], partition_fields: Sequence[str]
    ) -> tuple[str, ...] | None:
        """The columns input rows need when they are not whole records (None: records, whose
        schema is checked against the table's in full)."""
        if self.prepped:
            return ()  # the meta columns: checked on the input (they are not data columns)
        if self.rows is Rows.DELETES:
            return (*record_key_fields, *partition_fields)
        if self.rows is Rows.PARTITIONS:
            return tuple(partition_fields)
        return None

    def replaced_partitions(
        self, view: FileSystemView, written: Iterable[str], partitions_to_delete: Sequence[str]
    ) -> list[str]:
        """The partitions whose live file groups this operation replaces.

        Args:
            view: the table's file-system view.
            written: the partitions the write wrote files to.
            partitions_to_delete: the partitions a ``delete_partition`` names.
        """
        if self.replaces is Replaces.WRITTEN:
            return sorted(set(written))
        if self.replaces is Replaces.TABLE:
            return view.partitions()
        if self.replaces is Replaces.NAMED:
            return list(partitions_to_delete)
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


#: insert new keys, update existing ones (the table's merge mode decides)
UPSERT = WriteOperation("upsert", "UPSERT")
#: insert rows (with the bucket index an existing key is updated as in upsert)
INSERT = WriteOperation("insert", "INSERT")
#: delete rows as read from the table, by their ``_hoodie_record_key`` and
#: ``_hoodie_partition_path`` (Spark SQL ``DELETE FROM``: Hudi's DeleteHoodieTableCommand sets
#: ``_hoodie.spark.sql.writes.prepped`` (SPARK_SQL_WRITES_PREPPED_KEY, when
#: ``hoodie.spark.sql.optimized.writes.enable``, default true) and keeps the meta columns;
#: HoodieSparkSqlWriter then calls
#: ``SparkRDDWriteClient.deletePrepped``, recorded as ``WriteOperationType.DELETE_PREPPED``);
#: the only delete of a table with Hudi's auto-generated record keys
DELETE_PREPPED = WriteOperation("delete_prepped", "DELETE_PREPPED", Rows.DELETES, prepped=True)
#: insert rows in bulk (written as an insert)
BULK_INSERT = WriteOperation("bulk_insert", "BULK_INSERT", saves_workload_profile=False)
#: delete the keys of the input rows (Java ``HoodieDeleteHelper``)
DELETE = WriteOperation("delete", "DELETE", Rows.DELETES)
#: replace the partitions the input touches with its rows
INSERT_OVERWRITE = WriteOperation(
    "insert_overwrite", "INSERT_OVERWRITE", Rows.RECORDS, Replaces.WRITTEN
)
#: replace the whole table with the input
INSERT_OVERWRITE_TABLE = WriteOperation(
    "insert_overwrite_table", "INSERT_OVERWRITE_TABLE", Rows.RECORDS, Replaces.TABLE
)
#: drop whole partitions: those ``hoodie.datasource.write.partitions.to.delete`` names, else the
#: partitions of the input rows
DELETE_PARTITION = WriteOperation(
    "delete_partition", "DELETE_PARTITION", Rows.PARTITIONS, Replaces.NAMED, False
)
#: rewrite partitions into their new bucket counts (Hudi 1.1's partition-level bucket index:
#: ``WriteOperationType.BUCKET_RESCALE``, a replacecommit of the partitions written); run by
#: :mod:`hudi_ds.services.partition_bucket_rescale`, not a ``hoodie.datasource.write.operation``
BUCKET_RESCALE = WriteOperation(
    "bucket_rescale", "BUCKET_RESCALE", Rows.RECORDS, Replaces.WRITTEN, False
)

#: every operation, by its ``hoodie.datasource.write.operation`` name
OPERATIONS: Mapping[str, WriteOperation] = {
    op.name: op
    for op in (
        UPSERT,
        INSERT,
        BULK_INSERT,
        DELETE,
        DELETE_PREPPED,
        INSERT_OVERWRITE,
        INSERT_OVERWRITE_TABLE,
        DELETE_PARTITION,
        BUCKET_RESCALE,
    )
}


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
    return options.get(WriteConfig.PARTITIONS_TO_DELETE) or sorted(touched)
