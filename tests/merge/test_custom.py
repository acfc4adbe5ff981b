"""CUSTOM merge mode: a user RecordMerger given by its Python class path.

``CounterMerger`` (defined here, so ``tests.merge.test_custom.CounterMerger`` is importable)
sums a counter column and keeps the greatest ``last_seen``; it implements only the per-record
``merge``, so the engine runs its per-key fallback everywhere (pre-combine, COW merge, MOR read,
compaction). ``VectorCounterMerger`` implements the same merge vectorised.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import hudi_ds
from hudi_ds.errors import ConfigError
from hudi_ds.merge import (
    DELETE,
    DeleteKeys,
    MergeResult,
    RecordMerger,
    Versions,
    VersionsBuilder,
    merge_versions,
)
from hudi_ds.merge.merger import merge_per_record
from hudi_ds.storage import Storage
from hudi_ds.table_config import TableConfig
from tests.conftest import table_options

STRATEGY = "5f1c2f2e-6d0a-4a43-9b7f-0c9a3c3f7a10"
CLASSES_KEY = "hoodie.write.record.merge.custom.implementation.classes"
CLASS = f"{__name__}.CounterMerger"


class CounterMerger(RecordMerger):
    """Sums ``count``, keeps the greatest ``last_seen``; other columns from the newer version."""

    strategy_id = STRATEGY

    def merge(self, older, newer, schema, props):
        if self.is_delete(newer, props):
            return DELETE
        if self.is_delete(older, props):
            return newer
        out = dict(newer)
        out["count"] = (older.get("count") or 0) + (newer.get("count") or 0)
        seen = [v for v in (older.get("last_seen"), newer.get("last_seen")) if v is not None]
        out["last_seen"] = max(seen) if seen else None
        return out


class VectorCounterMerger(CounterMerger):
    """The same merge, vectorised with pyarrow's group_by (no deletes in its input)."""

    def merge_batches(
        self, versions: Versions, schema: pa.Schema, props: Mapping[str, str]
    ) -> MergeResult:
        t = versions.table.append_column("__seq", pa.array(versions.seq))
        t = t.append_column("__key", versions.keys)
        agg = t.group_by("__key").aggregate(
            [("count", "sum"), ("last_seen", "max"), ("__seq", "max")]
        )
        last = agg.column("__seq_max").combine_chunks()
        pos = pc.index_in(last, pa.array(versions.seq))
        rows = versions.table.take(pos)
        rows = rows.set_column(
            rows.schema.get_field_index("count"), "count", agg.column("count_sum").cast(pa.int64())
        )
        rows = rows.set_column(
            rows.schema.get_field_index("last_seen"), "last_seen", agg.column("last_seen_max")
        )
        rows = rows.cast(versions.table.schema)
        winners = np.asarray(pos, dtype=np.int64)
        order = np.argsort(winners)
        return MergeResult(rows.take(pa.array(order)), winners[order], np.empty(0, np.int64))


class NotAMerger:
    strategy_id = STRATEGY


SCHEMA = pa.schema(
    [("id", pa.string()), ("count", pa.int64()), ("last_seen", pa.int64()), ("who", pa.string())]
)


def opts(table_type: str, **extra: str) -> dict[str, str]:
    o = {
        **table_options("c", precombine=None, table_type=table_type),
        "hoodie.write.record.merge.mode": "CUSTOM",
        CLASSES_KEY: CLASS,
    }
    o.update(extra)
    return o


def batch(*rows: tuple) -> pa.Table:
    return pa.Table.from_pylist(
        [dict(zip(SCHEMA.names, r, strict=True)) for r in rows], schema=SCHEMA
    )


def state(path: str, classes: str = CLASS) -> dict[str, tuple]:
    t = hudi_ds.read(path, {CLASSES_KEY: classes})
    return {r["id"]: (r["count"], r["last_seen"], r["who"]) for r in t.to_pylist()}


@pytest.mark.parametrize("table_type", ["MERGE_ON_READ", "COPY_ON_WRITE"])
def test_custom_merger_through_embedded_api(tmp_path: Path, table_type: str) -> None:
    p = str(tmp_path / "t")
    o = opts(table_type)
    hudi_ds.write(p, batch(("a", 1, 10, "x"), ("b", 5, 3, "y")), o)
    # duplicates in one batch: pre-combined by the custom merger
    hudi_ds.write(p, batch(("a", 2, 5, "z"), ("a", 3, 7, "w"), ("c", 1, 1, "c")), o)
    hudi_ds.write(p, batch(("b", 1, 9, "q")), o)
    assert state(p) == {"a": (6, 10, "w"), "b": (6, 9, "q"), "c": (1, 1, "c")}
    # the delete operation goes through the merger too
    hudi_ds.write(p, batch(("c", 0, 0, "")), {**o, "hoodie.datasource.write.operation": "delete"})
    hudi_ds.write(p, batch(("b", 4, 1, "r")), o)
    assert state(p) == {"a": (6, 10, "w"), "b": (10, 9, "r")}
    cfg = TableConfig.load(Storage(p))
    assert cfg.merge_mode == "CUSTOM"
    assert cfg.props["hoodie.compaction.record.merger.strategy"] == STRATEGY


def test_custom_with_strategy_id_and_several_classes(tmp_path: Path) -> None:
    p = str(tmp_path / "t")
    classes = f"{__name__}.VectorCounterMerger,{CLASS}"
    o = opts(
        "MERGE_ON_READ",
        **{CLASSES_KEY: classes, "hoodie.write.record.merge.strategy.id": STRATEGY},
    )
    # both classes have the same strategy id: the first listed implementation is used
    hudi_ds.write(p, batch(("a", 1, 1, "x")), o)
    hudi_ds.write(p, batch(("a", 2, 3, "y")), o)
    assert state(p, classes) == {"a": (3, 3, "y")}
    assert state(p, CLASS) == {"a": (3, 3, "y")}


def test_custom_table_needs_its_merger_to_read_and_write(tmp_path: Path) -> None:
    p = str(tmp_path / "t")
    hudi_ds.write(p, batch(("a", 1, 1, "x")), opts("MERGE_ON_READ"))
    with pytest.raises(ConfigError, match=CLASSES_KEY):
        hudi_ds.read(p)
    o = opts("MERGE_ON_READ")
    del o[CLASSES_KEY]
    with pytest.raises(ConfigError, match=CLASSES_KEY):
        hudi_ds.write(p, batch(("a", 1, 1, "x")), o)
    # a merger with another strategy id does not match the table
    other = f"{__name__}.OtherMerger"
    with pytest.raises(ConfigError, match=STRATEGY):
        hudi_ds.read(p, {CLASSES_KEY: other})
    # the mode is fixed at creation
    with pytest.raises(ConfigError, match="cannot change"):
        hudi_ds.write(
            p,
            batch(("a", 1, 1, "x")),
            opts("MERGE_ON_READ", **{"hoodie.write.record.merge.mode": "COMMIT_TIME_ORDERING"}),
        )


class OtherMerger(CounterMerger):
    strategy_id = "00000000-1111-2222-3333-444444444444"


@pytest.mark.parametrize(
    ("value", "match"),
    [
        ("nope.module.Merger", "cannot import module"),
        (f"{__name__}.Missing", "has no class"),
        (f"{__name__}.NotAMerger", "not a subclass"),
        ("NoDots", "importable Python class path"),
    ],
)
def test_bad_custom_classes(tmp_path: Path, value: str, match: str) -> None:
    with pytest.raises(ConfigError, match=match) as e:
        hudi_ds.write(
            str(tmp_path / "t"),
            batch(("a", 1, 1, "x")),
            opts("MERGE_ON_READ", **{CLASSES_KEY: value}),
        )
    assert CLASSES_KEY in str(e.value) and value in str(e.value)


def test_custom_needs_a_class_for_its_strategy(tmp_path: Path) -> None:
    o = opts(
        "MERGE_ON_READ",
        **{"hoodie.write.record.merge.strategy.id": "00000000-0000-0000-0000-00000000abcd"},
    )
    with pytest.raises(ConfigError, match="no class .* has this strategy id"):
        hudi_ds.write(str(tmp_path / "t"), batch(("a", 1, 1, "x")), o)


def test_custom_classes_alone_imply_custom(tmp_path: Path) -> None:
    p = str(tmp_path / "t")
    o = opts("COPY_ON_WRITE")
    del o["hoodie.write.record.merge.mode"]
    hudi_ds.write(p, batch(("a", 1, 1, "x")), o)
    hudi_ds.write(p, batch(("a", 1, 2, "x")), o)
    assert state(p) == {"a": (2, 2, "x")}


def test_payload_with_custom_is_refused(tmp_path: Path) -> None:
    o = opts(
        "MERGE_ON_READ", **{"hoodie.datasource.write.payload.class": "PartialUpdateAvroPayload"}
    )
    with pytest.raises(ConfigError, match="cannot be combined"):
        hudi_ds.write(str(tmp_path / "t"), batch(("a", 1, 1, "x")), o)


def _versions(rng: np.random.Generator, n: int) -> list[pa.Table]:
    keys = rng.integers(0, 40, n)
    return [
        batch(
            *[
                (f"k{k}", int(c), int(s), f"w{i}")
                for i, (k, c, s) in enumerate(
                    zip(
                        keys[a:b],
                        rng.integers(0, 9, b - a),
                        rng.integers(0, 99, b - a),
                        strict=True,
                    )
                )
            ]
        )
        for a, b in ((0, n // 3), (n // 3, 2 * n // 3), (2 * n // 3, n))
    ]


def test_vectorised_custom_merger_equals_per_record() -> None:
    rng = np.random.default_rng(7)
    parts = [t.append_column("_hoodie_record_key", t.column("id")) for t in _versions(rng, 600)]
    schema = parts[0].schema
    props = {"hoodie.record.merge.mode": "CUSTOM"}
    fast = merge_versions(parts, VectorCounterMerger(), schema, props)
    slow = merge_versions(parts, CounterMerger(), schema, props)
    assert fast.rows.to_pylist() == slow.rows.to_pylist()
    b = VersionsBuilder(schema)
    for p in parts:
        b.add(p)
    assert (
        merge_per_record(CounterMerger(), b.build(), schema, props).rows.to_pylist()
        == slow.rows.to_pylist()
    )


def test_compaction_facing_merge_with_custom_merger() -> None:
    """What compaction hands the engine: base rows, log blocks, delete entries, in order."""
    schema = SCHEMA.insert(0, pa.field("_hoodie_record_key", pa.string()))

    def t(*rows):
        return pa.Table.from_pylist(
            [dict(zip(schema.names, r, strict=True)) for r in rows], schema=schema
        )

    base = t(("a", "a", 1, 1, "base"), ("b", "b", 1, 1, "base"), ("c", "c", 1, 1, "base"))
    log1 = t(("a", "a", 2, 5, "l1"), ("b", "b", 3, 0, "l1"))
    dels = DeleteKeys(pa.array(["b"]))
    log2 = t(("b", "b", 7, 2, "l2"), ("d", "d", 1, 1, "l2"))
    r = merge_versions([base, log1, dels, log2], CounterMerger(), schema, {})
    got = {x["id"]: (x["count"], x["last_seen"], x["who"]) for x in r.rows.to_pylist()}
    assert got == {"a": (3, 5, "l1"), "b": (7, 2, "l2"), "c": (1, 1, "base"), "d": (1, 1, "l2")}
    # the same with the key deleted last
    r = merge_versions([base, log1, log2, dels], CounterMerger(), schema, {})
    assert sorted(r.rows.column("id").to_pylist()) == ["a", "c", "d"]
    assert len(r.deleted) == 1
