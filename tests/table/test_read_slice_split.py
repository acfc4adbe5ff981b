"""A slice's base rows whose key has no log version skip the merge (reader._merge_slice):
the rows must equal merging every version, for both built-in merge modes."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from hudi_ds.merge.engine import DeleteKeys, merge_versions, resolve_spec
from hudi_ds.schema.meta import IS_DELETED_FIELD
from hudi_ds.table.reader import SliceReadContext, _merge_slice

SCHEMA = pa.schema(
    [("id", pa.string()), ("ts", pa.int64()), ("v", pa.float64()), (IS_DELETED_FIELD, pa.bool_())]
)


def _rows(rng: np.random.Generator, ids: np.ndarray, ts: np.ndarray, dead: float) -> pa.Table:
    return pa.table(
        {
            "id": pa.array([f"k{i}" for i in ids]),
            "ts": pa.array(ts, pa.int64()),
            "v": pa.array(rng.random(len(ids))),
            IS_DELETED_FIELD: pa.array(rng.random(len(ids)) < dead),
        },
        schema=SCHEMA,
    )


@pytest.mark.parametrize("mode", ["EVENT_TIME_ORDERING", "COMMIT_TIME_ORDERING"])
def test_split_merge_equals_full_merge(mode: str) -> None:
    rng = np.random.default_rng(7)
    base = _rows(rng, np.arange(2_000), np.full(2_000, 100), 0.02)  # a few deleted base rows
    parts: list = []
    for b in range(3):
        ids = rng.choice(2_500, 400, replace=False)  # updates, new keys, late (ts 50) rows
        ts = np.where(rng.random(400) < 0.3, 50, 200 + b)
        parts.append(_rows(rng, ids, ts, 0.05))
        dels = rng.choice(2_500, 30, replace=False)
        parts.append(
            DeleteKeys(
                pa.array([f"k{i}" for i in dels]),
                pa.array(np.where(rng.random(30) < 0.5, 10, 300), pa.int64()),
            )
        )
    ctx = SliceReadContext(
        schema=SCHEMA,
        record_key_fields=("id",),
        complex_key=False,
        ordering_field="ts",
        merge_mode=mode,
        populate_meta_fields=False,
        key_field_is_key=True,
    )
    spec = resolve_spec(None, mode, "ts")
    got = _merge_slice(base, list(parts), spec, SCHEMA, ctx, has_base=True)
    want = merge_versions(
        [base, *parts], spec, SCHEMA, key_fn=lambda t: t.column("id"), has_base=True
    ).rows
    assert got.num_rows == want.num_rows
    assert got.num_rows > 1_500  # most base rows pass through untouched
    assert pc.count_distinct(got["id"]).as_py() == got.num_rows
    assert got.sort_by("id").equals(want.sort_by("id"))


def test_flagged_keys_gone_as_a_set_difference() -> None:
    """The untouched base keys a compaction drops (rows flagged deleted, ``key_changes``):
    exactly the distinct keys of the untouched rows that no kept row holds -- with duplicate
    keys (one copy flagged, one kept), untouched and touched rows, chunked keys."""

    from hudi_ds.table.reader import _flagged_keys_gone

    rng = np.random.default_rng(7)
    for n in (0, 1, 50, 2_000):
        keys = [f"k{int(i)}" for i in rng.integers(0, max(1, n // 3), n)]
        base_keys = pa.chunked_array([keys[: n // 2], keys[n // 2 :]], pa.string())
        touched = pa.array(rng.random(n) < 0.3)
        deleted = rng.random(n) < 0.2
        keep = pc.and_(pc.invert(touched), pa.array(~deleted))
        got = _flagged_keys_gone(base_keys, touched, deleted, keep)
        t, k = touched.to_pylist(), keep.to_pylist()
        untouched = {keys[i] for i in range(n) if not t[i]}
        kept = {keys[i] for i in range(n) if k[i]}
        want = untouched - kept
        assert sorted(got.to_pylist()) == sorted(want)
        assert len(got) == len(set(got.to_pylist()))
        if n == 2_000:
            assert want and kept & {keys[i] for i in range(n) if deleted[i] and not t[i]}
