"""Schema evolution: :func:`can_promote`, the one type-promotion rule; :func:`promote_table`
brings rows written with an older schema to the table schema (reorder, add missing nullable
columns, safe widening casts); :func:`conform_table` is the writer's stricter counterpart
(exact columns, value-checked casts)."""

from __future__ import annotations

from collections.abc import Callable

import pyarrow as pa

from hudi_ds.errors import SchemaError


def whole(a: pa.Array | pa.ChunkedArray) -> pa.Array:
    """The values of ``a`` as one array: a chunked array's only chunk as it is (``combine_chunks``
    copies even a single chunk), several chunks combined."""
    if not isinstance(a, pa.ChunkedArray):
        return a
    if a.num_chunks == 1:
        return a.chunk(0)
    return a.combine_chunks()


def _is_string(t: pa.DataType) -> bool:
    return pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t)


def _is_binary(t: pa.DataType) -> bool:
    return (
        pa.types.is_binary(t)
        or pa.types.is_large_binary(t)
        or pa.types.is_binary_view(t)
        or pa.types.is_fixed_size_binary(t)
    )


def _int_bits(t: pa.DataType) -> int:
    return int(t.bit_width) if pa.types.is_integer(t) else 0


def _widens(src: pa.DataType, dst: pa.DataType, on_write: bool) -> bool:
    """True if every ``src`` value converts to ``dst`` (a leaf of :func:`can_promote`)."""
    if pa.types.is_integer(src) and pa.types.is_integer(dst):
        if pa.types.is_signed_integer(src) == pa.types.is_signed_integer(dst):
            return _int_bits(dst) >= _int_bits(src)
        return pa.types.is_unsigned_integer(src) and _int_bits(dst) > _int_bits(src)
    if pa.types.is_integer(src) and pa.types.is_floating(dst):
        return True  # int -> float/double and long -> float/double alike
    if pa.types.is_floating(src) and pa.types.is_floating(dst):
        return dst.bit_width >= src.bit_width
    if pa.types.is_decimal(src) and pa.types.is_decimal(dst):
        # neither the integer digits nor the scale shrink (DecimalType.isWiderThan, or the same
        # scale with a greater precision)
        return dst.scale >= src.scale and dst.precision - dst.scale >= src.precision - src.scale
    if _is_string(dst):
        if _is_string(src) or _is_binary(src):
            return True
        # a value rendered as text: read-side only (see can_promote)
        return not on_write and (
            pa.types.is_integer(src)
            or pa.types.is_floating(src)
            or pa.types.is_decimal(src)
            or pa.types.is_date(src)
        )
    if _is_binary(dst):
        return _is_binary(src) or _is_string(src)
    if on_write:
        return False  # timestamp precision changes are gated in Hudi (see can_promote)
    if pa.types.is_timestamp(src) and pa.types.is_timestamp(dst):
        order = ["s", "ms", "us", "ns"]
        same_zone = (src.tz is None) == (dst.tz is None)
        return same_zone and order.index(dst.unit) >= order.index(src.unit)
    if pa.types.is_int64(src) and pa.types.is_timestamp(dst) and dst.tz is None:
        # Hudi 0.x (parquet-avro < 1.13) writes local-timestamp-millis|micros columns as
        # parquet INT64 without a timestamp annotation: the raw values in the schema's unit
        return True
    return bool(pa.types.is_date32(src) and pa.types.is_timestamp(dst))


def _check_promotion(src: pa.DataType, dst: pa.DataType, path: str, on_write: bool) -> None:
    if pa.types.is_dictionary(src):
        src = src.value_type
    if src == dst or pa.types.is_null(src):
        return
    if pa.types.is_struct(src) and pa.types.is_struct(dst):
        names = {f.name: f for f in src}
        for f in dst:
            if f.name in names:
                _check_promotion(names[f.name].type, f.type, f"{path}.{f.name}", on_write)
            elif not f.nullable:
                raise SchemaError(f"column {path}.{f.name!s} is missing and not nullable")
        return
    src_list = pa.types.is_list(src) or pa.types.is_large_list(src)
    if src_list and (pa.types.is_list(dst) or pa.types.is_large_list(dst)):
        _check_promotion(src.value_type, dst.value_type, f"{path}[]", on_write)
        return
    if pa.types.is_map(src) and pa.types.is_map(dst):
        _check_promotion(src.key_type, dst.key_type, f"{path}{{key}}", on_write)
        _check_promotion(src.item_type, dst.item_type, f"{path}{{}}", on_write)
        return
    if not _widens(src, dst, on_write):
        raise SchemaError(f"column {path!r}: cannot promote {src} to {dst}")


def can_promote(src: pa.DataType, dst: pa.DataType, *, on_write: bool = False) -> bool:
    """True if values of ``src`` convert to ``dst``: hudi_ds's one type-promotion rule.

    Leaves (structs field by field -- a ``dst`` field missing from ``src`` must be nullable --,
    list items, map keys and values recursively):

    * int -> long -> float -> double, long -> float included: Avro's schema resolution as
      Hudi's ``AvroSchemaCompatibility.calculateCompatibility`` applies it (reader FLOAT
      accepts writer INT or LONG), and ``SchemaChangeUtils.isTypeUpdateAllow`` (LONG =>
      FLOAT/DOUBLE); narrower Arrow integers (int8, uint16...) into wider ones;
    * string <-> bytes (``AvroSchemaCompatibility``: reader STRING accepts BYTES and reader
      BYTES accepts STRING);
    * decimal(p, s) -> decimal(p', s') with neither the integer digits nor the scale shrinking
      (``SchemaChangeUtils.isTypeUpdateAllow``: ``DecimalType.isWiderThan``, or the same scale
      with a greater precision);
    * read side only -- the conversions a reader meets in tables evolved by Hudi:
      numbers, decimals and dates -> string (``isTypeUpdateAllow``: INT/LONG/FLOAT/DOUBLE/
      DECIMAL/DATE => STRING; Hudi 1.x ``AvroSchemaCompatibility``: reader STRING accepts a
      numeric writer, ``HoodieAvroUtils.isTypeNumeric``); timestamps to a finer unit in the
      same time zone kind and dates to timestamps (what files written by other engines hold,
      e.g. parquet millis under a micros schema); long -> timestamp without time zone (Hudi
      0.x writes Avro ``local-timestamp-*`` columns as parquet INT64 without annotation).

    ``on_write`` applies the rule to a write evolving the table schema: the read-side-only
    conversions are refused there. A write never changes a typed column into a string
    column: hudi_ds's own restriction, which the tests pin, where Hudi accepts int/long/
    float/double -> string on write since HUDI-6872 (apache/hudi#9743:
    ``AvroSchemaCompatibility``, reader STRING with ``HoodieAvroUtils.isTypeNumeric``).
    Timestamp precision changes are refused as Hudi 1.x refuses them without a per-field
    override (``SchemaChangeUtils.isGatedTimestampChange``,
    ``hoodie.write.timestamp.logical.type.overrides``).
    """
    try:
        _check_promotion(src, dst, "", on_write)
    except SchemaError:
        return False
    return True


def _int_to_float_only(src: pa.DataType, dst: pa.DataType) -> bool:
    """True if ``src`` and ``dst`` differ only by integer -> floating point leaves.

    Such a cast is Avro's int/long -> float/double promotion, which rounds to the nearest
    representable value when the integer has more significant bits than the mantissa.
    """
    if src == dst:
        return True
    if pa.types.is_integer(src) and pa.types.is_floating(dst):
        return True
    if pa.types.is_struct(src) and pa.types.is_struct(dst):
        names = {f.name: f.type for f in src}
        return all(f.name not in names or _int_to_float_only(names[f.name], f.type) for f in dst)
    src_list = pa.types.is_list(src) or pa.types.is_large_list(src)
    if src_list and (pa.types.is_list(dst) or pa.types.is_large_list(dst)):
        return _int_to_float_only(src.value_type, dst.value_type)
    if pa.types.is_map(src) and pa.types.is_map(dst):
        return src.key_type == dst.key_type and _int_to_float_only(src.item_type, dst.item_type)
    return False


def _cast_column(
    col: pa.ChunkedArray, target: pa.DataType, path: str, safe: bool = True
) -> pa.ChunkedArray:
    if col.type == target:
        return col
    try:
        if pa.types.is_null(col.type):
            return pa.chunked_array([pa.nulls(len(col), type=target)])
        try:
            return col.cast(target, safe=safe)
        except pa.ArrowInvalid:
            if not _int_to_float_only(col.type, target):
                raise
            # Avro's int -> float / long -> double promotion rounds integers beyond the
            # mantissa to the nearest value, as Java does: Avro's ResolvingDecoder reads a long
            # under a double reader schema as ``(double) readLong()``, and Hudi's
            # HoodieAvroUtils.rewritePrimaryTypeWithDiffSchemaType uses
            # ``((Long) oldValue).doubleValue()``. pyarrow's unchecked cast rounds the same way
            # (round to nearest, ties to even). Refusing would leave a table whose type was
            # widened unreadable.
            return col.cast(target, safe=False)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
        raise SchemaError(f"column {path!r}: cannot cast {col.type} to {target}: {e}") from e


def promote_table(table: pa.Table, target: pa.Schema) -> pa.Table:
    """Bring ``table`` (rows written with an older schema) to the ``target`` schema.

    Columns are matched by name and reordered to ``target``; columns missing from ``table`` are
    added as nulls; columns not in ``target`` are dropped; types are widened the way Avro/Hudi
    schema evolution allows (int8 -> int16 -> int32 -> int64, integers -> float/double,
    float -> double, decimal(p, s) -> wider decimal, numbers/decimals/dates/binary -> string,
    string -> binary, timestamp units to finer ones), recursively inside structs, lists and maps
    (missing struct fields become null).

    Raises:
        SchemaError: a column's type cannot be promoted safely, or a non-nullable target column
            is missing (the message names the column).
    """
    if table.schema == target:
        return table
    return _fit_columns(
        table, target, lambda col, f: _check_promotion(col.type, f.type, f.name, False)
    )


def conform_table(table: pa.Table, target: pa.Schema) -> pa.Table:
    """Cast ``table`` to ``target`` for writing: same columns (any order), value-checked casts.

    Unlike :func:`promote_table` narrowing casts are allowed when every value survives (pyarrow
    ``safe`` casts: no overflow, no truncated timestamps); missing nullable columns become null.

    Raises:
        SchemaError: an extra column, a missing non-nullable column, nulls in a non-nullable
            column or a value that does not survive the cast (the message names the column).
    """
    extra = [n for n in table.column_names if target.get_field_index(n) < 0]
    if extra:
        raise SchemaError(f"columns {extra} are not in the schema {target.names}")
    if table.schema == target:
        return table

    def check(col: pa.ChunkedArray, f: pa.Field) -> None:
        if not f.nullable and col.null_count:
            raise SchemaError(f"column {f.name!r} holds nulls but is not nullable")

    return _fit_columns(table, target, check)


def _fit_columns(
    table: pa.Table, target: pa.Schema, check: Callable[[pa.ChunkedArray, pa.Field], None]
) -> pa.Table:
    """``table``'s columns in ``target``'s order and types (``check`` first); missing ones null."""
    columns = []
    for f in target:
        idx = table.schema.get_field_index(f.name)
        if idx < 0:
            if not f.nullable:
                raise SchemaError(f"column {f.name!r} is missing and not nullable")
            columns.append(pa.chunked_array([pa.nulls(table.num_rows, type=f.type)]))
            continue
        col = table.column(idx)
        check(col, f)
        columns.append(_cast_column(col, f.type, f.name))
    return pa.Table.from_arrays(columns, schema=target)


def missing_subfields(table: pa.DataType, incoming: pa.DataType, path: str) -> list[str]:
    """Paths (``a.b``, ``a[].b``, ``a{}.b``) of ``table``'s struct fields not in ``incoming``.

    Args:
        table: the table's type of a column.
        incoming: the input's type of the same column.
        path: the column's name (the prefix of the returned paths).
    """
    t = pa.types
    if t.is_struct(table) and t.is_struct(incoming):
        names = {f.name: f.type for f in incoming}
        out = []
        for f in table:
            sub = f"{path}.{f.name}"
            if f.name not in names:
                out.append(sub)
            else:
                out.extend(missing_subfields(f.type, names[f.name], sub))
        return out
    lists = (t.is_list(table) or t.is_large_list(table)) and (
        t.is_list(incoming) or t.is_large_list(incoming)
    )
    if lists:
        return missing_subfields(table.value_type, incoming.value_type, f"{path}[]")
    if t.is_map(table) and t.is_map(incoming):
        return missing_subfields(table.item_type, incoming.item_type, f"{path}{{}}")
    return []
