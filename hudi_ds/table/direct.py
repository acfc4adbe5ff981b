"""Which file slices of a planned read an engine may read with its own Parquet reader.

A file slice without log files needs no merge: its rows are its Parquet base file's, brought to
the table schema, less the rows flagged deleted, and -- in an incremental query -- only those of
the query's commits. An engine with a Parquet reader of its own (Spark's vectorised
``ParquetFileFormat``, as Java's ``HoodieFileIndex`` hands base-file-only splits to it) reads
such a file faster than hudi_ds can hand it the rows, provided it does those three things
itself: :class:`DirectSplit` says which files, which column drops a row, and which commits an
incremental query keeps. Every other slice goes through :meth:`ReadableTable.read_plan_slices`.

A slice stays with hudi_ds when the engine would not return the same rows:

* it has log files, or its base file is not Parquet (Lance);
* the read skips missing or damaged files on request (the engine would fail instead);
* the table has the merge mode's delete marker column (``hoodie.payload.delete.field``: a
  case-insensitive string comparison the engine could answer differently), or a
  ``_hoodie_is_deleted`` column that is not a boolean;
* the table drops its partition columns from the data files
  (``hoodie.datasource.write.drop.partition.columns``);
* the base file was written with another schema than the table's in a way the engine's reader
  may not bring to the table schema: a column of another type (a promotion), or a new column
  that is not nullable. A file lacking only nullable columns added later is direct (Parquet
  readers return such columns as nulls, as :func:`~hudi_ds.schema.evolution.promote_table`
  does). The file's schema is its commit's writer schema (``extraMetadata["schema"]``); a
  base file whose commit is no longer on the active timeline, or recorded no schema, stays
  with hudi_ds.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.parquet as pq

from hudi_ds.errors import HudiError
from hudi_ds.layout.file_group import FileSlice
from hudi_ds.schema.avro import avro_to_arrow_schema
from hudi_ds.schema.meta import IS_DELETED_FIELD, META_FIELDS
from hudi_ds.table.reader import no_true_flag
from hudi_ds.table_config import TableConfig

if TYPE_CHECKING:
    from hudi_ds.table.table import ReadableTable, ReadPlan


@dataclass(frozen=True)
class DirectSplit:
    """A planned read split between an engine's Parquet reader and hudi_ds.

    Attributes:
        files: the base files the engine reads, as URIs (:meth:`Storage.uri`).
        merged: the slices hudi_ds reads (:meth:`ReadableTable.read_plan_slices`).
        deleted_flag: the boolean column whose true value drops a row (``_hoodie_is_deleted``
            when the table has it; null keeps the row), or None.
        commit_times: an incremental query's commits: the engine keeps only rows whose
            ``_hoodie_commit_time`` is one of them (None: every row).
    """

    files: tuple[str, ...]
    merged: tuple[FileSlice, ...]
    deleted_flag: str | None = None
    commit_times: frozenset[str] | None = None
    #: the ``files`` whose footer statistics show no row flagged deleted: the engine reads
    #: them without the flag column (local tables only: a footer read per file)
    unflagged: frozenset[str] = frozenset()
    #: why slices stayed with hudi_ds (reason -> slices), for the log
    kept_reasons: dict[str, int] = field(default_factory=dict, compare=False)


def split_direct(
    table: ReadableTable,
    plan: ReadPlan,
    engine_opens: Callable[[str], bool] = lambda uri: True,
) -> DirectSplit:
    """Split ``plan``'s slices between an engine's Parquet reader and hudi_ds (module docstring).

    ``engine_opens``: whether the engine can open a base file by this URI
    (:meth:`Storage.uri`); a file it cannot stays with hudi_ds.
    """
    reasons: dict[str, int] = {}
    why_table = _table_reason(table, plan)
    fits = _SchemaFits(table)
    files: list[str] = []
    merged: list[FileSlice] = []
    for s in plan.slices:
        why = why_table or _slice_reason(s) or fits.reason(s)
        uri = table.storage.uri(s.base_file.path) if s.base_file is not None else ""
        if why is None and not engine_opens(uri):
            why = "a file the engine cannot open"
        if why is None:
            files.append(uri)
        else:
            merged.append(s)
            reasons[why] = reasons.get(why, 0) + 1
    schema = plan.context.schema
    flag = IS_DELETED_FIELD if schema.get_field_index(IS_DELETED_FIELD) >= 0 else None
    unflagged: frozenset[str] = frozenset()
    if flag is not None and table.storage.is_local:
        unflagged = frozenset(f for f in files if _flag_free(f))
    return DirectSplit(
        tuple(files),
        tuple(merged),
        flag,
        plan.commit_times,
        unflagged=unflagged,
        kept_reasons=reasons,
    )


def _flag_free(path: str) -> bool:
    """Whether the footer of the local Parquet file ``path`` shows no row flagged deleted
    (False when it cannot tell, or cannot be read: the engine then filters the rows)."""
    try:
        return no_true_flag(pq.ParquetFile(path))
    except (OSError, ValueError):
        return False


def _table_reason(table: ReadableTable, plan: ReadPlan) -> str | None:
    """Why no slice of ``plan`` is direct (None: slices may be)."""
    ctx = plan.context
    if ctx.ignore_missing_files or ctx.ignore_corrupt_files:
        return "the read skips missing or damaged files"
    drop = table.config.get(TableConfig.DROP_PARTITION_COLUMNS) or "false"
    if drop.strip().lower() == "true":
        return "the data files lack the partition columns"
    schema = ctx.schema
    builtin = ctx.merge_spec.builtin
    marker = builtin.delete_field if builtin is not None and builtin.delete_marker else None
    if marker and schema.get_field_index(marker) >= 0:
        return f"rows are deleted by the marker column {marker!r}"
    idx = schema.get_field_index(IS_DELETED_FIELD)
    if idx >= 0 and not pa.types.is_boolean(schema.field(idx).type):
        return f"{IS_DELETED_FIELD} is not a boolean"
    return None


def _slice_reason(s: FileSlice) -> str | None:
    if s.log_files:
        return "log files"
    if s.base_file is None:
        return "no base file"
    if s.base_file.name.extension != ".parquet":
        return f"{s.base_file.name.extension} base file"
    return None


class _SchemaFits:
    """Whether each base file's writer schema reads as the table schema (per commit, cached)."""

    def __init__(self, table: ReadableTable) -> None:
        self._table = table
        self._target = {f.name: f for f in table.schema if f.name not in META_FIELDS}
        self._latest = table.state.latest_avro_schema()
        self._by_instant: dict[str, str | None] = {}

    def reason(self, s: FileSlice) -> str | None:
        t = s.base_instant_time
        if t not in self._by_instant:
            self._by_instant[t] = self._check(t)
        return self._by_instant[t]

    def _check(self, instant: str) -> str | None:
        timeline = self._table.timeline
        inst = timeline.get(instant)
        if inst is None or not inst.is_completed:
            return "base file of an instant off the active timeline"
        try:
            written = timeline.read_commit_metadata(inst).schema
        except HudiError:
            return "base file whose commit metadata is unreadable"
        if written is None:
            return "base file whose commit recorded no schema"
        if written == self._latest:
            return None
        try:
            fields = avro_to_arrow_schema(written)
        except HudiError:
            return "base file written with a schema hudi_ds cannot convert"
        have = {f.name: f for f in fields if f.name not in META_FIELDS}
        for name, f in self._target.items():
            old = have.get(name)
            if old is None:
                if not f.nullable:
                    return f"base file lacking the non-nullable column {name!r}"
            elif old.type != f.type:
                return f"base file with column {name!r} of an older type ({old.type})"
        return None


__all__ = ["DirectSplit", "split_direct"]
