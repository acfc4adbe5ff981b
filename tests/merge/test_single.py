"""hudi_ds.merge.single: a slice's base rows against log versions naming each key once give the
rows the merge engine gives (the same slices merged both ways, full rows compared)."""

from __future__ import annotations

import zlib
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import hudi_ds.table.reader as reader
from hudi_ds.merge.engine import DeleteKeys, Part
from hudi_ds.merge.modes import BEHAVIOURS, MergeSpec, builtin_spec
from hudi_ds.merge.single import merge_single_log_versions
from hudi_ds.schema.meta import IS_DELETED_FIELD
from hudi_ds.table.reader import SliceReadContext


def _spec(behaviour: str, ordering: tuple[str, ...] = ("ts",)) -> MergeSpec:
    return builtin_spec(BEHAVIOURS[behaviour], ordering)


def _ctx(schema: pa.Schema, spec: MergeSpec) -> SliceReadContext:
    return SliceReadContext(
        schema=schema,
        record_key_fields=("id",),
        complex_key=False,
        ordering_field=spec.ordering_field,
        merge_mode=spec.mode.value,
        merge=spec,
        key_field_is_key=True,
    )


def _slice(
    rng: np.random.Generator, ts_type: pa.DataType, flags: bool, nulls: bool
) -> tuple[pa.Table, list[Part], pa.Schema]:
    """A base file and log parts (1-3 data blocks, maybe a delete block) naming each key once
    between them: touched and new keys, ties, zero ordering values and, with ``nulls``, null
    ones (a delete without an ordering value whatever ``nulls``)."""
    schema = pa.schema(
        [("id", pa.string()), ("ts", ts_type), ("v", pa.float64()), (IS_DELETED_FIELD, pa.bool_())]
    )
    n = int(rng.integers(1, 60))

    def ts(k: int) -> pa.Array:
        vals = rng.integers(0, 4, k)  # few values: ties
        mask = rng.random(k) < (0.15 if nulls else 0.0)
        return pa.array(vals, pa.int64(), mask=mask).cast(ts_type)

    def rows(keys: list[str], flagged: np.ndarray | None = None) -> pa.Table:
        k = len(keys)
        f = pa.array(flagged) if flagged is not None else pa.nulls(k, pa.bool_())
        return pa.Table.from_arrays(
            [pa.array(keys, pa.string()), ts(k), pa.array(rng.random(k)), f], schema=schema
        )

    base_keys = [f"k{i}" for i in range(n)]
    base = rows(base_keys, (rng.random(n) < 0.1) if flags else None)
    pool = base_keys + [f"n{i}" for i in range(int(rng.integers(0, 20)))]
    logged = list(rng.permutation(pool)[: int(rng.integers(1, len(pool) + 1))])
    cuts = sorted(rng.integers(0, len(logged) + 1, int(rng.integers(1, 4))))
    parts: list[Part] = []
    for chunk in np.split(np.array(logged, dtype=object), cuts):
        if not len(chunk):
            continue
        if rng.random() < 0.3:
            o = ts(len(chunk)) if rng.random() < (0.7 if nulls else 1.0) else None
            parts.append(DeleteKeys(pa.array(list(chunk), pa.string()), o))
        else:
            parts.append(rows(list(chunk)))
    return base, parts, schema


def _both(
    base: pa.Table, parts: list[Part], schema: pa.Schema, spec: MergeSpec, monkeypatch: Any
) -> tuple[pa.Table, pa.Table]:
    ctx = _ctx(schema, spec)
    fast = reader._merge_slice(base, list(parts), spec, schema, ctx, True, ["id", "ts", "v"])
    with monkeypatch.context() as m:
        m.setattr(reader, "merge_single_log_versions", lambda *a, **k: None)
        slow = reader._merge_slice(base, list(parts), spec, schema, ctx, True, ["id", "ts", "v"])
    # read_file_slice projects what the merge returns
    return fast.select(["id", "ts", "v"]), slow.select(["id", "ts", "v"])


@pytest.mark.parametrize("behaviour", ["overwrite_with_latest", "default", "event_time"])
@pytest.mark.parametrize("ts_type", [pa.int64(), pa.int32(), pa.float64()])
def test_single_log_versions_merge_as_the_engine(
    behaviour: str, ts_type: pa.DataType, monkeypatch: Any
) -> None:
    rng = np.random.default_rng(zlib.crc32(f"{behaviour} {ts_type}".encode()))
    taken = 0
    for i in range(150):
        base, parts, schema = _slice(rng, ts_type, flags=i % 3 == 0, nulls=i % 2 == 0)
        spec = _spec(behaviour)
        keys = [reader._part_keys(p, _ctx(schema, spec)) for p in parts]
        if merge_single_log_versions(base, base["id"], parts, keys, spec) is not None:
            taken += 1
        fast, slow = _both(base, parts, schema, spec, monkeypatch)
        assert fast.schema == slow.schema
        ordered = [("id", "ascending")]
        assert fast.sort_by(ordered).equals(slow.sort_by(ordered)), (i, fast, slow)
        assert len(set(fast["id"].to_pylist())) == fast.num_rows  # no key twice
    assert taken > 75  # most slices take the path (a touched flagged base row does not)


def test_repeated_keys_flags_and_other_behaviours_go_through_the_engine() -> None:
    schema = pa.schema([("id", pa.string()), ("ts", pa.int64()), (IS_DELETED_FIELD, pa.bool_())])
    base = pa.Table.from_arrays(
        [pa.array(["a", "b"]), pa.array([1, 1]), pa.array([False, False])], schema=schema
    )

    def log(ids: list[str], flag: bool = False) -> pa.Table:
        n = len(ids)
        return pa.Table.from_arrays(
            [pa.array(ids), pa.array([2] * n), pa.array([flag] * n)], schema=schema
        )

    def run(parts: list[Part], spec: MergeSpec, b: pa.Table = base) -> object:
        keys = [p.keys if isinstance(p, DeleteKeys) else p["id"].combine_chunks() for p in parts]
        return merge_single_log_versions(b, b["id"], parts, keys, spec)

    spec = _spec("default")
    assert run([log(["a", "c"])], spec) is not None
    assert run([log(["a"]), log(["a"])], spec) is None  # a key twice in the logs
    assert run([log(["a"]), DeleteKeys(pa.array(["a"]))], spec) is None
    assert run([log(["c"], flag=True)], spec) is None  # data rows that delete
    assert run([log(["a"])], spec, pa.concat_tables([base, base])) is None  # a base key twice
    for other in ("partial_update", "overwrite_non_defaults", "postgres_debezium"):
        assert run([log(["a"])], _spec(other)) is None
    assert run([log(["a"])], _spec("default", ("ts", "id"))) is None  # two ordering fields
    keep, rows = run([log(["a", "c"]), DeleteKeys(pa.array(["b"]), pa.array([0]))], spec)  # type: ignore[misc]
    # "a" (2 over 1) and "c" from the log; "b" stays: a long 0 is no natural delete, and it
    # ranks below the base row's 1
    assert keep.tolist() == [False, True]
    assert [r["id"].to_pylist() for r in rows] == [["a", "c"]]
