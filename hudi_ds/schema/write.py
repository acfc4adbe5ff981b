"""Schema on write: :func:`write_schema` checks a write's input schema against the table's and
decides the schema it writes (evolution, partial updates); :func:`conform_partial` -- rows of a
partial update as full rows."""

from __future__ import annotations

import logging
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass
from typing import cast

import pyarrow as pa

from hudi_ds.errors import ConfigError, SchemaError
from hudi_ds.keygen import KeyField
from hudi_ds.schema.avro import avro_to_arrow_schema, table_avro_schema
from hudi_ds.schema.evolution import can_promote, conform_table, missing_subfields, promote_table
from hudi_ds.schema.meta import (
    META_FIELDS,
    check_unique_names,
    with_meta_fields,
    without_meta_fields,
)

log = logging.getLogger("hudi_ds.write")


def _is_key_type(t: pa.DataType) -> bool:
    """A type record keys and partition paths are computed from: the primitive and logical
    types Java prints (``HoodieAvroUtils.getNestedFieldValAsString``, :mod:`hudi_ds.keygen`)."""
    return (
        pa.types.is_string(t)
        or pa.types.is_large_string(t)
        or pa.types.is_integer(t)
        or pa.types.is_boolean(t)
        or pa.types.is_date(t)
        or pa.types.is_decimal(t)
        or pa.types.is_floating(t)
        or pa.types.is_timestamp(t)
        or pa.types.is_time(t)
        or pa.types.is_dictionary(t)
    )


def _has_no_order(t: pa.DataType) -> bool:
    return (
        pa.types.is_nested(t)
        or pa.types.is_null(t)
        or pa.types.is_binary(t)
        or pa.types.is_large_binary(t)
    )


@dataclass(frozen=True)
class WriteSchema:
    """What :func:`write_schema` decided for one write.

    Attributes:
        schema: the table schema the write writes (meta fields first).
        partial_columns: the data columns a partial update carries (the others keep their
            stored values); None for a full-row write.
    """

    schema: pa.Schema
    partial_columns: tuple[str, ...] | None = None


def write_schema(
    incoming: pa.Schema,
    table: pa.Schema | None,
    *,
    table_name: str,
    record_key_fields: Sequence[str],
    partition_fields: Sequence[str] = (),
    ordering_field: str | None = None,
    operation: str = "upsert",
    required_columns: Sequence[str] | None = None,
    partial_updates: bool = False,
    set_null_for_missing: bool = False,
    nulls_mean_unchanged: bool = False,
) -> WriteSchema:
    """Check a write's input schema against the table's and decide the schema to write.

    Meta columns in the input (e.g. rows read from a Hudi table) are not data: Hudi drops the
    five and ``_hoodie_operation`` alike (``HoodieAvroUtils.isMetadataField``). The table schema
    evolves as Hudi's schema-on-write evolution does (``HoodieSchemaUtils.deduceWriterSchema``):
    new columns are added (nullable), types change only by :func:`can_promote` ``on_write`` --
    an input type that promotes to the table's is cast to it
    (``AvroSchemaEvolutionUtils.reconcileSchemaRequirements``), a table type that promotes to
    the input's is widened --, and table columns the input lacks need a partial update, null
    filling or a merger where nulls mean "unchanged".

    Args:
        incoming: the input's Arrow schema.
        table: the table's schema (meta fields included), None or empty for a new table.
        table_name: names the Avro records (:func:`table_avro_schema`).
        record_key_fields: the record key columns.
        partition_fields: the partition path columns.
        ordering_field: the ordering (precombine) column, if any.
        operation: the write operation's name (for messages).
        required_columns: the columns rows need when they are not whole records (a delete's
            keys, a delete_partition's partition columns); such a write keeps the table
            schema. None: rows are records, checked against the table's schema in full.
        partial_updates: ``hoodie.write.partial.updates``.
        set_null_for_missing: ``hoodie.write.set.null.for.missing.columns``.
        nulls_mean_unchanged: the table's merger keeps stored values where a row has nulls.

    Raises:
        ConfigError: no record key fields.
        SchemaError: a key, partition or ordering column is missing or has an unusable type, or
            the input drops table columns or changes a type unsafely (names the column).
    """
    check_unique_names(incoming)
    data = without_meta_fields(incoming)
    existing = table if table is not None else pa.schema([])
    existing_data = pa.schema([f for f in existing if f.name not in META_FIELDS])
    if required_columns is not None and len(existing_data):
        for c in required_columns:
            if data.get_field_index(c) < 0:
                raise SchemaError(f"{operation}: input lacks column '{c}'")
        return WriteSchema(existing)
    if not record_key_fields and not len(existing_data):  # existing: auto-generated keys
        raise ConfigError(
            "option 'hoodie.datasource.write.recordkey.field' is required to create a table"
        )
    _check_key_columns(data, record_key_fields, partition_fields, ordering_field)
    check_naive_timestamps(data, existing_data)
    check_decimal_precision(data, existing_data)
    merged, partial = evolve_schema(
        existing_data,
        data,
        table_name=table_name,
        partial_updates=partial_updates,
        set_null_for_missing=set_null_for_missing,
        nulls_mean_unchanged=nulls_mean_unchanged,
    )
    canonical = avro_to_arrow_schema(table_avro_schema(merged, table_name))
    return WriteSchema(with_meta_fields(canonical), partial)


def missing_field_message(field: str, role: KeyField, names: Sequence[str]) -> str:
    """Why ``field`` (a record key or partition path field) is not among the input's
    ``names``: a nested field (``s.a``) is named as one, not reported missing."""
    head = field.split(".", 1)[0]
    if "." in field and head in names:
        return (
            f"{role} '{field}' ({role.option}) is a nested field of struct column '{head}': "
            "hudi_ds does not support nested key or partition fields; add a top-level column "
            f"holding it (e.g. in pyarrow pc.struct_field(col, '{field.split('.', 1)[1]}')) "
            "and name that column"
        )
    return f"{role} '{field}' ({role.option}) is missing from the input {list(names)}"


def _check_key_columns(
    data: pa.Schema,
    record_key_fields: Sequence[str],
    partition_fields: Sequence[str],
    ordering_field: str | None,
) -> None:
    """The key and partition columns are in ``data`` with a key type, the ordering column with
    an ordered type."""
    for c, role in [
        *((c, KeyField.RECORD_KEY) for c in record_key_fields),
        *((c, KeyField.PARTITION_PATH) for c in partition_fields),
    ]:
        if data.get_field_index(c) < 0:
            raise SchemaError(missing_field_message(c, role, data.names))
        t = data.field(c).type
        if not _is_key_type(t):
            raise SchemaError(
                f"{role} '{c}' ({role.option}) has type {t}, which Hudi does not make "
                f"{'record keys' if role is KeyField.RECORD_KEY else 'partition paths'} of: "
                "use a column of strings, integers, booleans, dates, decimals, floats, "
                "timestamps or times (e.g. cast it to string)"
            )
    if ordering_field and data.get_field_index(ordering_field) >= 0:
        t = data.field(ordering_field).type
        if _has_no_order(t):
            raise SchemaError(
                f"ordering column '{ordering_field}' has type {t}, which has no order "
                "(hoodie.datasource.write.precombine.field)"
            )
    if ordering_field and data.get_field_index(ordering_field) < 0:
        raise SchemaError(
            f"ordering column '{ordering_field}' "
            "(hoodie.datasource.write.precombine.field) is missing from the input"
        )


def check_naive_timestamps(incoming: pa.Schema, existing: pa.Schema) -> list[str]:
    """Refuse timestamp columns without a time zone that the table does not already hold.

    No schema for such a column is read as the same naive values by both Apache Hudi and
    hudi-rs. Apache Hudi (Spark 3.4+) maps only Avro ``local-timestamp-millis|micros`` to
    ``TimestampNTZType`` (``SchemaConverters.toSqlType``; its writer turns ``TimestampNTZType``
    into ``local-timestamp-micros`` and parquet ``TIMESTAMP(MICROS, isAdjustedToUTC=false)``);
    ``timestamp-micros`` reads as ``TimestampType`` (an instant) and a plain ``long`` as
    ``LongType``. hudi-rs (0.5, and its main branch) panics on ``local-timestamp-*`` anywhere
    in the table schema it resolves from the commit metadata (``avro_to_arrow`` ``todo!()``),
    failing every read of the table. So a naive column that a write would add -- a new table,
    a new column or struct field, or a column the table holds as a timezone-aware timestamp --
    is refused. A table that already declares the column naive (Apache Hudi wrote it with
    ``TimestampNTZType``, or hudi_ds before this rule) keeps Apache Hudi's representation:
    hudi-rs cannot read that table anyway, and a warning says so.

    Args:
        incoming: the write's data columns.
        existing: the table's data columns (empty for a new table).

    Returns:
        The paths of naive timestamp columns the table already declares (written as
        ``local-timestamp-*``).

    Raises:
        SchemaError: naive timestamp columns that the table does not declare naive (names each
            column and how to convert it).
    """
    refused: list[str] = []
    kept: list[str] = []
    for f in incoming:
        idx = existing.get_field_index(f.name)
        old = existing.field(idx).type if idx >= 0 else None
        _naive_leaves(f.type, old, f.name, refused, kept)
    if refused:
        raise SchemaError(
            f"timestamp column(s) without a time zone {refused}: no Hudi schema for them is "
            "read alike by Apache Hudi (which needs Avro local-timestamp-micros for Spark's "
            "TimestampNTZType) and hudi-rs (which fails on every read of a table whose schema "
            "holds local-timestamp-*). Convert them to timezone-aware timestamps before "
            "writing, e.g. in pyarrow col.cast(pa.timestamp('us', tz='UTC')) (the wall-clock "
            "times as UTC instants) or pc.assume_timezone(col, 'Europe/Paris'), in pandas "
            "s.dt.tz_localize('UTC'), in Spark cast the column to TIMESTAMP (TimestampType, "
            "read in spark.sql.session.timeZone)"
        )
    if kept:
        log.warning(
            "timestamp column(s) without a time zone %s are written as the table declares "
            "them (Avro local-timestamp, Spark TimestampNTZType); hudi-rs cannot read this table",
            kept,
        )
    return kept


#: the largest decimal precision Spark (``DecimalType.MAX_PRECISION``) and hudi-rs (Arrow
#: ``Decimal128``) read
MAX_DECIMAL_PRECISION = 38


def check_decimal_precision(incoming: pa.Schema, existing: pa.Schema) -> None:
    """Refuse decimal columns of a precision above 38 that the table does not already hold.

    Spark's ``DecimalType`` stops at precision 38 (Apache Hudi's Spark reader fails on the
    table's Avro schema: ``SchemaConverters.toSqlType`` builds a ``DecimalType`` of the
    declared precision, which throws above 38), and hudi-rs maps Avro decimals to Arrow
    ``Decimal128``, whose precision stops at 38 too: a table whose schema holds a wider decimal
    is read by neither. As naive timestamps (:func:`check_naive_timestamps`), such a column is
    refused where the write would add it -- a new table, a new column or struct field --; a
    table that already declares it keeps it.

    Raises:
        SchemaError: names each such column, its type and how to narrow it.
    """
    wide: list[str] = []
    for f in incoming:
        idx = existing.get_field_index(f.name)
        old = existing.field(idx).type if idx >= 0 else None
        for path, t, was in _leaves(f.type, old, f.name):
            if pa.types.is_decimal(t) and t.precision > MAX_DECIMAL_PRECISION:
                declared = was is not None and pa.types.is_decimal(was) and was == t
                if not declared:
                    wide.append(f"{path} ({t})")
    if wide:
        raise SchemaError(
            f"decimal column(s) of precision above {MAX_DECIMAL_PRECISION}: {wide}; neither "
            f"Apache Hudi on Spark (DecimalType stops at precision {MAX_DECIMAL_PRECISION}) nor "
            "hudi-rs (Arrow Decimal128) reads a table holding one. Cast them to a decimal of "
            f"precision {MAX_DECIMAL_PRECISION} or less (e.g. pa.decimal128(38, scale)), or to "
            "a string, before writing"
        )


def _leaves(
    t: pa.DataType, old: pa.DataType | None, path: str
) -> Iterator[tuple[str, pa.DataType, pa.DataType | None]]:
    """``(path, type, the table's type there or None)`` of every leaf of ``t`` (struct fields,
    list items, map keys and values, dictionary values)."""
    if pa.types.is_dictionary(t):
        t = t.value_type
    if old is not None and pa.types.is_dictionary(old):
        old = old.value_type
    if pa.types.is_struct(t):
        olds = {f.name: f.type for f in old} if old is not None and pa.types.is_struct(old) else {}
        for f in t:
            yield from _leaves(f.type, olds.get(f.name), f"{path}.{f.name}")
    elif _is_list_type(t):
        old_item = old.value_type if old is not None and _is_list_type(old) else None
        yield from _leaves(t.value_type, old_item, f"{path}[]")
    elif pa.types.is_map(t):
        old_map = cast(pa.MapType, old) if old is not None and pa.types.is_map(old) else None
        yield from _leaves(t.key_type, old_map.key_type if old_map else None, f"{path}{{key}}")
        yield from _leaves(t.item_type, old_map.item_type if old_map else None, f"{path}{{}}")
    else:
        yield path, t, old


def _naive_leaves(
    t: pa.DataType, old: pa.DataType | None, path: str, refused: list[str], kept: list[str]
) -> None:
    """Collect the naive timestamp leaves of ``t`` (see :func:`check_naive_timestamps`)."""
    if pa.types.is_dictionary(t):
        t = t.value_type
    if old is not None and pa.types.is_dictionary(old):
        old = old.value_type
    if pa.types.is_timestamp(t):
        if t.tz is None:
            declared = old is not None and pa.types.is_timestamp(old) and old.tz is None
            (kept if declared else refused).append(path)
        return
    if pa.types.is_struct(t):
        olds = {f.name: f.type for f in old} if old is not None and pa.types.is_struct(old) else {}
        for f in t:
            _naive_leaves(f.type, olds.get(f.name), f"{path}.{f.name}", refused, kept)
        return
    if _is_list_type(t):
        old_item = old.value_type if old is not None and _is_list_type(old) else None
        _naive_leaves(t.value_type, old_item, f"{path}[]", refused, kept)
        return
    if pa.types.is_map(t):
        is_map = old is not None and pa.types.is_map(old)
        old_map = cast(pa.MapType, old) if is_map else None
        _naive_leaves(
            t.key_type, old_map.key_type if old_map else None, f"{path}{{key}}", refused, kept
        )
        _naive_leaves(
            t.item_type, old_map.item_type if old_map else None, f"{path}{{}}", refused, kept
        )


def _is_list_type(t: pa.DataType) -> bool:
    return (
        pa.types.is_list(t)
        or pa.types.is_large_list(t)
        or pa.types.is_fixed_size_list(t)
        or pa.types.is_list_view(t)
        or pa.types.is_large_list_view(t)
    )


def evolve_schema(
    existing: pa.Schema,
    incoming: pa.Schema,
    *,
    table_name: str = "t",
    partial_updates: bool = False,
    set_null_for_missing: bool = False,
    nulls_mean_unchanged: bool = False,
) -> tuple[pa.Schema, tuple[str, ...] | None]:
    """The table's data schema after a write of ``incoming`` (see :func:`write_schema`).

    Args:
        existing: the table's data columns (no meta fields); empty for a new table.
        incoming: the input's data columns.
        table_name: names the Avro records ``incoming`` is canonicalised through.
        partial_updates, set_null_for_missing, nulls_mean_unchanged: as in
            :func:`write_schema`.

    Returns:
        The evolved data schema and the partial update's columns (None: full rows).

    Raises:
        SchemaError: the input lacks table columns (top-level or nested) without a way to
            keep them, or a column's type changes unsafely (names the column).
    """
    if not len(existing):
        return incoming, None
    missing = [f.name for f in existing if incoming.get_field_index(f.name) < 0]
    nested = [
        p
        for f in incoming
        if existing.get_field_index(f.name) >= 0
        for p in missing_subfields(existing.field(f.name).type, f.type, f.name)
    ]
    if nested and not set_null_for_missing:
        # a dropped struct field is a dropped column (Hudi's schema compatibility check,
        # AvroSchemaCompatibility via HoodieSchemaUtils.deduceWriterSchema, treats nested
        # fields like top-level ones); partial updates and null-means-unchanged mergers
        # work on top-level columns, so they cannot keep a nested field's stored value
        raise SchemaError(
            f"input lacks nested table field(s) {nested}; add them or set "
            "hoodie.write.set.null.for.missing.columns=true"
        )
    partial: tuple[str, ...] | None = None
    if missing and partial_updates:
        # a partial update: the missing columns keep their stored values
        partial = tuple(f.name for f in incoming if f.name not in META_FIELDS)
    elif missing and not set_null_for_missing and not nulls_mean_unchanged:
        raise SchemaError(
            f"input lacks table column(s) {missing}; add them, set "
            "hoodie.write.set.null.for.missing.columns=true, or write a partial update "
            "(hoodie.write.partial.updates=true)"
        )
    fields = list(existing)
    canonical = avro_to_arrow_schema(table_avro_schema(incoming, table_name or "t"))
    for f in canonical:
        idx = existing.get_field_index(f.name)
        if idx < 0:
            fields.append(f.with_nullable(True))
            continue
        old = existing.field(f.name).type
        if old == f.type or can_promote(f.type, old, on_write=True):
            continue  # the input is cast to the table's type
        if can_promote(old, f.type, on_write=True):
            fields[idx] = existing.field(f.name).with_type(f.type)  # e.g. int -> long
            continue
        raise SchemaError(
            f"column '{f.name}' has type {f.type}; the table has {old} and neither "
            "promotes safely to the other"
        )
    return pa.schema(fields), partial


def conform_partial(
    table: pa.Table,
    schema: pa.Schema,
    columns: Collection[str] | None = None,
    *,
    narrowing: bool = False,
) -> pa.Table:
    """Rows carrying some of ``schema``'s columns (a partial update) as rows of ``schema``.

    The carried columns are cast to ``schema``'s types, the other columns of ``schema`` are
    null (a partial update's "not written"), columns of ``table`` not carried are dropped.

    Args:
        table: the rows.
        schema: the full schema.
        columns: the carried columns (default: those of ``table`` that ``schema`` has).
        narrowing: cast as a writer casts its input (:func:`conform_table`: value-checked
            casts that may narrow); default: promotions only (:func:`promote_table`: stored
            rows read under a newer schema).

    Raises:
        SchemaError: a carried column does not convert (names the column).
    """
    carried = set(table.column_names if columns is None else columns)
    sub = pa.schema([f for f in schema if f.name in carried])
    present = [c for c in table.column_names if c in sub.names]
    if narrowing:
        table = conform_table(table.select(present), sub)
    else:
        table = promote_table(table.select(present), sub)
    n = table.num_rows
    cols = [table.column(f.name) if f.name in sub.names else pa.nulls(n, f.type) for f in schema]
    return pa.Table.from_arrays(cols, schema=schema)
