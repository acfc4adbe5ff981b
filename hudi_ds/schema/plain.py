"""Input normalisation at the write path's edge: types Hudi cannot store (large and view
types, dictionaries, ...) made plain."""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa

from hudi_ds.errors import SchemaError


def plain_type(t: pa.DataType) -> pa.DataType:
    """``t`` with Arrow's alternative layouts replaced by the plain ones, recursively.

    ``string_view`` / ``large_string`` -> ``string``, ``binary_view`` / ``large_binary`` ->
    ``binary``, ``large_list`` / ``list_view`` / ``large_list_view`` -> ``list``: the layouts
    polars (views, large lists) and pandas (``large_string``) hand out. A Hudi table's
    schema comes from its Avro schema, which knows one string, one bytes and one array type,
    so the write path sees the plain Arrow form only. Dictionary value types are normalised
    too; other types are returned as they are.
    """
    if pa.types.is_string_view(t) or pa.types.is_large_string(t) or pa.types.is_string(t):
        return pa.string()
    if pa.types.is_binary_view(t) or pa.types.is_large_binary(t):
        return pa.binary()
    if (
        pa.types.is_list(t)
        or pa.types.is_large_list(t)
        or pa.types.is_list_view(t)
        or pa.types.is_large_list_view(t)
    ):
        vf = t.value_field
        return pa.list_(vf.with_type(plain_type(vf.type)))
    if pa.types.is_fixed_size_list(t):
        vf = t.value_field
        return pa.list_(vf.with_type(plain_type(vf.type)), t.list_size)
    if pa.types.is_struct(t):
        return pa.struct([f.with_type(plain_type(f.type)) for f in t])
    if pa.types.is_map(t):
        kf, itf = t.key_field, t.item_field
        return pa.map_(
            kf.with_type(plain_type(kf.type)),
            itf.with_type(plain_type(itf.type)),
            keys_sorted=t.keys_sorted,
        )
    if pa.types.is_dictionary(t):
        return pa.dictionary(t.index_type, plain_type(t.value_type), t.ordered)
    return t


def plain_schema(schema: pa.Schema) -> pa.Schema:
    """``schema`` with every field's type :func:`plain_type` (metadata kept)."""
    return pa.schema([f.with_type(plain_type(f.type)) for f in schema], metadata=schema.metadata)


def plain_batches(
    batches: Iterator[pa.RecordBatch], schema: pa.Schema, target: pa.Schema
) -> Iterator[pa.RecordBatch]:
    """``batches`` (of ``schema``) cast to ``target`` (:func:`plain_schema` of it), one by one.

    A batch whose large or view values exceed what 32-bit offsets address is split until
    each part fits, so the cast never fails for size and memory stays one batch.

    Raises:
        SchemaError: a column cannot be cast (names it).
    """
    if schema == target:
        yield from batches
        return
    for batch in batches:
        yield from _plain_batch(batch, target)


def _plain_batch(batch: pa.RecordBatch, target: pa.Schema) -> Iterator[pa.RecordBatch]:
    try:
        yield batch.cast(target)
    except (pa.ArrowCapacityError, pa.ArrowInvalid) as e:
        if batch.num_rows <= 1 or not _offset_overflow(e):
            raise _cast_error(batch.schema, target, e) from e
        half = batch.num_rows // 2
        yield from _plain_batch(batch.slice(0, half), target)
        yield from _plain_batch(batch.slice(half), target)
    except (pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
        raise _cast_error(batch.schema, target, e) from e


def _offset_overflow(e: Exception) -> bool:
    text = str(e).lower()
    return isinstance(e, pa.ArrowCapacityError) or "overflow" in text or "offset" in text


def _cast_error(src: pa.Schema, dst: pa.Schema, e: Exception) -> SchemaError:
    bad = [f.name for f in src if dst.field(f.name).type != f.type]
    return SchemaError(f"input columns {bad} cannot be normalised to {dst}: {e}")
