"""Read filters: ``(column, op, value)`` tuples, partition pruning and row filtering."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from hudi_ds.errors import ConfigError, HudiError

Filter = tuple[str, str, Any]
OPS = ("=", "==", "!=", "<", "<=", ">", ">=", "in", "not in", "is null", "is not null")
#: operators that take no value (the tuple's value is ignored)
NULL_OPS = ("is null", "is not null")


def normalize_filters(filters: Sequence[Filter], schema: pa.Schema) -> list[Filter]:
    """Check every filter names a known column, a supported operator and a value comparable
    with the column's type.

    Raises:
        ConfigError: ``filters`` is not a list of ``(column, op, value)`` tuples, or one names
            an unknown column or operator, or its value cannot be compared with the column
            (names the filter, the column's type and the value).
    """
    if not isinstance(filters, (list, tuple)):
        raise ConfigError(
            f"filters must be a list of (column, op, value) tuples, not "
            f"{type(filters).__name__}: {filters!r}"
        )
    if len(filters) == 3 and isinstance(filters[0], str) and isinstance(filters[1], str):
        raise ConfigError(
            f"filters must be a list of (column, op, value) tuples: pass [{tuple(filters)!r}] "
            f"instead of {filters!r}"
        )
    out: list[Filter] = []
    for f in filters:
        if not isinstance(f, (tuple, list)) or len(f) != 3:
            raise ConfigError(f"invalid filter {f!r}: expected (column, op, value)")
        col, op, value = f
        op = str(op).strip().lower()
        if op not in OPS:
            raise ConfigError(f"invalid filter operator {op!r} in {f!r}; use one of {OPS}")
        if schema.get_field_index(col) < 0:
            raise ConfigError(f"filter on unknown column '{col}'; columns are {schema.names}")
        if op in ("in", "not in") and not isinstance(value, (list, tuple, set, frozenset)):
            raise ConfigError(f"filter {f!r}: '{op}' needs a list of values")
        op = "=" if op == "==" else op
        if op in NULL_OPS:
            out.append((col, op, None))
            continue
        _check_comparable(f, schema.field(col), op, value)
        out.append((col, op, value))
    return out


def _check_comparable(f: Any, field: pa.Field, op: str, value: Any) -> None:
    """Raise ConfigError unless ``field op value`` can be computed: the comparison is run on an
    empty column of the field's type, so pyarrow's kernel dispatch and value conversion fail
    here, naming the filter, rather than in the middle of a read."""
    try:
        _compare(pa.array([], type=field.type), op, value)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError, TypeError) as e:
        what = str(e).splitlines()[0]
        raise ConfigError(
            f"filter {tuple(f)!r}: value {value!r} ({type(value).__name__}) cannot be compared "
            f"with column '{field.name}' of type {field.type} ({what})"
        ) from None


_FUNCS = {
    "=": pc.equal,
    "!=": pc.not_equal,
    "<": pc.less,
    "<=": pc.less_equal,
    ">": pc.greater,
    ">=": pc.greater_equal,
}


def _compare(field: Any, op: str, value: Any) -> Any:
    """``field op value`` for an Arrow array or a compute expression."""
    if op in _FUNCS:
        return _FUNCS[op](field, pa.scalar(value) if not isinstance(value, pa.Scalar) else value)
    if op == "is null":
        return pc.is_null(field)
    if op == "is not null":
        return pc.is_valid(field)
    if op == "in":
        return pc.is_in(field, value_set=pa.array(list(value)))
    if op == "not in":
        return pc.invert(pc.is_in(field, value_set=pa.array(list(value))))
    raise ConfigError(f"unsupported filter operator {op!r}")


def filter_expression(filters: Sequence[Filter]) -> pc.Expression | None:
    """The AND of all filters as a pyarrow compute expression (None when there are none)."""
    expr = None
    for col, op, value in filters:
        e = _compare(pc.field(col), op, value)
        expr = e if expr is None else expr & e
    return expr


def pruning_filters(filters: Sequence[Filter], schema: pa.Schema) -> list[Filter]:
    """The filters a read can prune with, in order: those on top-level columns of ``schema``
    that Arrow can evaluate against the column's type.

    Meant for an engine's filters that the engine applies again: a filter left out costs
    pruning, never rows. Floating point columns are left out (SQL orders NaN above every
    number, Arrow does not).
    """
    out: list[Filter] = []
    for t in filters:
        col = t[0]
        idx = schema.get_field_index(col)
        if idx < 0 or pa.types.is_floating(schema.field(idx).type):
            continue
        try:
            expr = filter_expression([t])
            if expr is not None:
                pa.schema([schema.field(idx)]).empty_table().filter(expr)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError, HudiError):
            continue
        except (TypeError, ValueError):
            continue
        out.append(t)
    return out


def prune_partition(
    values: list[str],
    fields: list[str],
    filters: Sequence[Filter],
    schema: pa.Schema,
    prunable: Collection[str],
) -> bool:
    """False only when a filter on a partition column surely excludes this partition.

    Only the ``prunable`` fields (``TableConfig.value_partition_fields``: the key generator
    writes the column value itself as the partition value) are looked at; a filter on
    another (a formatted time ...) is applied to the rows after reading.
    """
    if not prunable or not filters:
        return True
    for col, op, value in filters:
        if col not in fields or col not in prunable:
            continue
        raw = values[fields.index(col)]
        if raw == "__HIVE_DEFAULT_PARTITION__":
            continue
        try:
            typed = pa.array([raw]).cast(schema.field(col).type)
            keep = _compare(typed, op, value)
            result = keep.to_pylist()[0] if hasattr(keep, "to_pylist") else bool(keep)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError, TypeError):
            continue
        if result is False:
            return False
    return True
