"""``UPDATE t SET ... WHERE ...`` and ``DELETE FROM t WHERE ...`` on a Hudi table.

Hudi's Spark SQL runs both as writes of the rows the condition selects
(``UpdateHoodieTableCommand``: the selected rows with the assignments applied, upserted;
``DeleteHoodieTableCommand``: their keys, deleted), and so does this module: the rows are read
with the predicate's simple conjuncts (``column op literal``) as read filters -- partitions,
the buckets of a BUCKET table and, with the metadata table's column stats, file slices are
pruned --, the whole predicate is evaluated on them, and one instant writes the result: an
upsert of the full updated rows, or a delete of their keys. The table's merge mode applies
to the upsert as to any other (an update of the ordering field to a lower value loses under
EVENT_TIME_ORDERING, as in Hudi).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from hudi_ds.dml.clauses import check_update_set
from hudi_ds.dml.commit import DmlMetrics, write_rows
from hudi_ds.dml.expr import Expr, Scope, as_mask, compile_expr, evaluate, pushdown_filters
from hudi_ds.errors import ConfigError
from hudi_ds.schema.meta import (
    PARTITION_PATH_METADATA_FIELD,
    RECORD_KEY_METADATA_FIELD,
    without_meta_fields,
)
from hudi_ds.table.table import ReadableTable
from hudi_ds.write.operation import DELETE, UPSERT

#: the alias a one-table statement's columns may be qualified with (``t.fare``)
TABLE_ALIAS = "t"


def _selected(
    table: ReadableTable,
    predicate: Expr | None,
    extra: Mapping[str, Any],
    what: str,
    keys_as_read: bool = False,
) -> tuple[pa.Table, dict[str, pa.Array], int]:
    """The data rows ``predicate`` selects (with ``keys_as_read``, their
    ``_hoodie_record_key`` and ``_hoodie_partition_path`` too), the ``extra`` expressions
    evaluated on them, and the number of rows read."""
    schema = without_meta_fields(table.schema)
    meta = [RECORD_KEY_METADATA_FIELD, PARTITION_PATH_METADATA_FIELD] if keys_as_read else []
    scope = Scope({TABLE_ALIAS: schema.names}, bare=TABLE_ALIAS)
    pred = None if predicate is None else compile_expr(predicate, scope, f"{what} predicate")
    exprs = {col: compile_expr(v, scope, f"{what} of column '{col}'") for col, v in extra.items()}
    filters = pushdown_filters(predicate, schema.names) if isinstance(predicate, str) else []
    if isinstance(pred, pc.Expression) and not isinstance(predicate, str):
        # an Arrow expression: the dataset scan prunes the partitions it rules out
        from hudi_ds.table.dataset import ScanStats, slice_dataset

        plan = table.plan_read()
        read = slice_dataset(table, plan, ScanStats()).to_table(filter=pred)
    else:
        read = table.read(columns=[*meta, *schema.names], filters=filters)
    rows = read.select([*meta, *schema.names])
    if pred is not None:
        mask = as_mask(
            evaluate(rows, {"p": pred}, f"{what} predicate").column("p"), f"{what} predicate"
        )
        rows = rows.filter(mask)
    values = evaluate(rows, exprs, what) if exprs else pa.table({})
    return rows, {c: values.column(c) for c in exprs}, read.num_rows


def update_where(
    table: ReadableTable,
    set: Mapping[str, Expr],
    predicate: Expr | None = None,
    options: Mapping[str, Any] | None = None,
    post_commit: Callable[..., Any] | None = None,
) -> DmlMetrics:
    """``UPDATE table SET set WHERE predicate`` as one upsert instant (None: every row).

    Raises:
        ConfigError: an empty ``set``, an unknown column, an assignment to a record key or
            partition column, an expression that does not fit the columns -- all before
            anything is written. UnsupportedError: an untranslated SQL construct.
    """
    need_keys(table, "update")
    schema = without_meta_fields(table.schema)
    cfg = table.config
    check_update_set(set, schema.names, [*cfg.record_key_fields, *cfg.partition_fields])
    rows, values, read = _selected(table, predicate, set, "update")
    instant, files = None, 0
    if rows.num_rows:
        for col, v in values.items():
            f = schema.field(col)
            try:
                cast = v if v.type == f.type else v.cast(f.type)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
                raise ConfigError(
                    f"update: the value of column '{col}' ({v.type}) does not fit its type "
                    f"{f.type}: {str(e).splitlines()[0]}"
                ) from None
            rows = rows.set_column(schema.get_field_index(col), f, cast)
        opts = {**table.options.raw, **dict(options or {})}
        instant, files = write_rows(table.storage, opts, rows, UPSERT, post_commit)
        table.refresh()
    return DmlMetrics(0, read, 0, rows.num_rows, 0, files, instant)


def delete_where(
    table: ReadableTable,
    predicate: Expr,
    options: Mapping[str, Any] | None = None,
    post_commit: Callable[..., Any] | None = None,
) -> DmlMetrics:
    """``DELETE FROM table WHERE predicate`` as one delete instant.

    Raises:
        ConfigError: a bad predicate (before anything is written).
    """
    if predicate is None:
        raise ConfigError("delete: a predicate is required (delete_partition drops partitions)")
    # a table without record key fields (Hudi's auto-generated keys) deletes the rows by the
    # keys they were read with, as Hudi's DeleteHoodieTableCommand does with prepped writes
    keyless = not table.config.record_key_fields
    rows, _, read = _selected(table, predicate, {}, "delete", keys_as_read=keyless)
    instant, files = None, 0
    if rows.num_rows:
        opts = {**table.options.raw, **dict(options or {})}
        # (the write client takes the meta columns' keys: a DELETE_PREPPED commit)
        instant, files = write_rows(table.storage, opts, rows, DELETE, post_commit)
        table.refresh()
    return DmlMetrics(0, read, 0, 0, rows.num_rows, files, instant)


def need_keys(table: ReadableTable, what: str) -> None:
    """Refuse a statement that matches rows by record key on a table without key fields.

    Raises:
        ConfigError: names the table's missing ``hoodie.table.recordkey.fields``.
    """
    if not table.config.record_key_fields:
        raise ConfigError(
            f"{what}: the table at {table.path} has no record key fields (Hudi's "
            "auto-generated keys): hudi_ds writes its updates as upserts by key, which Hudi "
            "refuses on such tables too; DELETE by predicate works (prepped deletes)"
        )


__all__ = ["TABLE_ALIAS", "delete_where", "need_keys", "update_where"]
