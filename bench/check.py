"""Correctness of a system's final table: compared with the reference row for row.

:func:`compare` checks the row count, keys that appear more than once, and every column's value
of every row (a full outer join on ``id``; nulls equal nulls), all with pyarrow compute. A row
counts as mismatched when its key is missing, extra, or any of its columns differs.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq


def _conform(got: pa.Table, schema: pa.Schema) -> pa.Table:
    """``got`` reduced to the reference's columns, cast to its types (a reader may return
    large strings or dictionaries); a missing column becomes nulls (and so mismatches)."""
    cols = []
    for f in schema:
        if f.name in got.column_names:
            c = got.column(f.name)
            if pa.types.is_dictionary(c.type):
                c = c.cast(c.type.value_type)
            cols.append(c.cast(f.type))
        else:
            cols.append(pa.nulls(got.num_rows, f.type))
    return pa.Table.from_arrays(cols, schema=schema)


def compare(got: pa.Table, ref: pa.Table, key: str = "id") -> dict[str, Any]:
    """How ``got`` differs from ``ref`` (one row per key).

    Returns ``rows``, ``expected_rows``, ``duplicate_keys`` (keys seen more than once),
    ``duplicate_rows`` (rows beyond the first of such keys), ``missing`` / ``extra`` (keys only in
    the reference / only in ``got``), ``differing`` (rows of a shared key with any column
    different), ``mismatched_rows`` (their sum) and ``correct``.
    """
    got = _conform(got, ref.schema)
    counts = got.group_by(key).aggregate([(key, "count")])
    dup = pc.greater(counts[f"{key}_count"], 1)
    dup_keys = pc.sum(dup.cast(pa.int64())).as_py() or 0
    dup_rows = (pc.sum(counts[f"{key}_count"].filter(dup)).as_py() or 0) - dup_keys
    left = ref.append_column("_in_ref", pa.repeat(pa.scalar(True), ref.num_rows))
    right = got.append_column("_in_got", pa.repeat(pa.scalar(True), got.num_rows))
    j = left.join(right, keys=key, join_type="full outer", left_suffix="@r", right_suffix="@g")
    in_ref = pc.fill_null(j["_in_ref"], False)
    in_got = pc.fill_null(j["_in_got"], False)
    both = pc.and_(in_ref, in_got)
    same = pa.repeat(pa.scalar(True), j.num_rows)
    for f in ref.schema:
        if f.name == key:
            continue
        a, b = j[f"{f.name}@r"], j[f"{f.name}@g"]
        eq = pc.fill_null(pc.equal(a, b), False)
        both_null = pc.and_(pc.is_null(a), pc.is_null(b))
        same = pc.and_(same, pc.or_(eq, both_null))

    def count(mask: Any) -> int:
        return int(pc.sum(mask.cast(pa.int64())).as_py() or 0)

    missing = count(pc.invert(in_got))
    extra = count(pc.invert(in_ref))
    differing = count(pc.and_(both, pc.invert(same)))
    mismatched = missing + extra + differing
    return {
        "rows": got.num_rows,
        "expected_rows": ref.num_rows,
        "duplicate_keys": dup_keys,
        "duplicate_rows": dup_rows,
        "missing": missing,
        "extra": extra,
        "differing": differing,
        "mismatched_rows": mismatched,
        "correct": got.num_rows == ref.num_rows and dup_keys == 0 and mismatched == 0,
    }


def compare_file(got: pa.Table, reference_path: str) -> dict[str, Any]:
    """:func:`compare` against the reference table stored as Parquet at ``reference_path``."""
    return compare(got, pq.read_table(reference_path))


def verdict(c: dict[str, Any] | None) -> str:
    """A short cell for the results table."""
    if not c:
        return "n/a"
    if c.get("correct"):
        return f"yes ({c['rows']:,} rows)"
    parts = [f"{c['rows']:,} rows (expected {c['expected_rows']:,})"]
    if c["duplicate_keys"]:
        parts.append(f"{c['duplicate_keys']:,} duplicated keys")
    for k in ("missing", "extra", "differing"):
        if c[k]:
            parts.append(f"{c[k]:,} {k}")
    return "NO: " + ", ".join(parts)
