"""A DML statement's rows written as one instant, and what it reports."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from hudi_ds.config import WriteConfig
from hudi_ds.errors import ConfigError, SchemaError
from hudi_ds.schema.meta import DML_DELETE_FIELD
from hudi_ds.storage import Storage
from hudi_ds.write.client import WriteClient
from hudi_ds.write.operation import WriteOperation
from hudi_ds.write.options import check_partial_blocks


@dataclass(frozen=True)
class DmlMetrics:
    """What a MERGE, UPDATE or DELETE did (delta-rs's metric names where they exist).

    Attributes:
        num_source_rows: rows of the merge source (0 for UPDATE / DELETE).
        num_target_rows_read: target rows the statement's read returned: the rows of the
            file groups the source keys or pushed predicate filters can reach, after those
            filters (a measure of the pruning).
        num_target_rows_inserted, num_target_rows_updated, num_target_rows_deleted: rows
            each action wrote. An update is written as the full merged row through the
            table's merge mode: under EVENT_TIME_ORDERING one whose ordering value is lower
            than the stored one is counted here but loses to the stored row, as in Hudi.
        num_target_files_written: file groups the commit wrote (base or log files).
        instant: the completed instant; None when the statement changed no row (no commit).
    """

    num_source_rows: int
    num_target_rows_read: int
    num_target_rows_inserted: int
    num_target_rows_updated: int
    num_target_rows_deleted: int
    num_target_files_written: int
    instant: str | None


def check_keys_present(rows: pa.Table, columns: list[str], what: str) -> None:
    """Refuse, before anything is written, rows whose key or partition columns are null.

    Raises:
        SchemaError: names the column and the statement part.
    """
    for c in columns:
        if c in rows.column_names and rows.column(c).null_count:
            raise SchemaError(
                f"{what}: key/partition column '{c}' would be null in "
                f"{rows.column(c).null_count} row(s); assign it a value"
            )


class DmlWrite:
    """The write of a DML statement's rows as one instant, opened before the rows are built.

    Opened first so the statement knows which columns its rows must carry: ``partial``, the
    columns of a MERGE's partial update (the others keep their stored values), is kept in
    :attr:`columns` where Hudi 1.x would write it as such -- IS_PARTIAL log blocks
    (:func:`~hudi_ds.write.options.check_partial_blocks`) --; elsewhere :attr:`columns` is
    None and the rows carry every data column. Opening reads ``hoodie.properties`` and
    resolves the options only: nothing is written until :meth:`write`.

    The table's options (merge mode, ordering field, index) apply as to any write;
    ``post_commit``: the table services to run after the commit (the API layer hands
    :func:`hudi_ds.services.run_post_commit_services`, as to its other writes).
    """

    def __init__(
        self,
        storage: Storage,
        options: Mapping[str, Any],
        operation: WriteOperation,
        post_commit: Callable[..., Any] | None = None,
        partial: list[str] | None = None,
    ) -> None:
        opts = {**options, WriteConfig.OPERATION.key: operation.name}
        if partial is not None:
            # rows carrying every column are a whole-row write under this option too
            # (write_schema finds no column missing), so one client serves both outcomes
            opts[WriteConfig.PARTIAL_UPDATES.key] = "true"
        self.client = WriteClient(storage, opts, post_commit=post_commit)
        self.columns = partial if partial is not None and self._takes_partial() else None

    def _takes_partial(self) -> bool:
        cfg = self.client.table_config
        if cfg is None:
            return False
        try:
            check_partial_blocks(self.client.resolved, cfg.table_version)
        except ConfigError:
            return False
        return True

    def write(self, rows: pa.Table) -> tuple[str, int]:
        """Write ``rows`` (the data columns -- :attr:`columns` of them for a partial update
        --, plus :data:`DML_DELETE_FIELD` for deletes in an upsert); the instant and the
        file groups written."""
        client = self.client
        if self.columns is not None:
            rows = rows.select([*self.columns, DML_DELETE_FIELD])
        schema = pa.schema([f for f in rows.schema if f.name != DML_DELETE_FIELD])
        profiled = client.operation.saves_workload_profile
        instant = client.start(schema, inflight=not profiled)
        try:
            task = client.task_writer(instant)
            if profiled:
                client.write_profiled(instant, task, rows.to_batches())
            else:
                for batch in rows.to_batches():
                    task.write(batch)
            statuses = task.close()
            client.commit(instant, statuses)
        except BaseException as e:
            client.abort_failed(instant, e)
        groups = {(s.stat.partition_path, s.stat.file_id) for s in statuses}
        return instant, len(groups)


def write_rows(
    storage: Storage,
    options: Mapping[str, Any],
    rows: pa.Table,
    operation: WriteOperation,
    post_commit: Callable[..., Any] | None = None,
) -> tuple[str, int]:
    """Write ``rows`` (the table's data columns, plus :data:`DML_DELETE_FIELD` for deletes in
    an upsert) with ``operation`` as one instant (:class:`DmlWrite`); the instant and the
    file groups written."""
    return DmlWrite(storage, options, operation, post_commit).write(rows)
