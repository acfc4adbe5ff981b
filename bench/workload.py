"""The deterministic benchmark workload (numpy/pyarrow only).

A table of ``id`` (string key), ``ts`` (int64 ordering field), ``dt`` (partition, 8 values),
five doubles, two strings and one int: ``base_rows`` rows inserted, then ``batches`` upsert
batches of ``batch_rows`` rows -- 60% updates of existing keys (a fifth of them late, with an
older ``ts`` that must not win), 40% new keys -- plus deletes of 1% of ``batch_rows`` keys.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

DTS = [f"2024-01-{d:02d}" for d in range(1, 9)]


@dataclass(frozen=True)
class Workload:
    base_rows: int = 2_000_000
    batches: int = 5
    batch_rows: int = 200_000
    seed: int = 42

    @classmethod
    def scaled(cls, scale: float) -> Workload:
        return cls(int(2_000_000 * scale), 5, int(200_000 * scale))


def make_rows(ids: np.ndarray, ts: np.ndarray, rng: np.random.Generator) -> pa.Table:
    n = len(ids)
    key = pc.binary_join_element_wise("id-", pa.array(ids).cast(pa.string()), "")
    return pa.table(
        {
            "id": key,
            "ts": pa.array(ts, pa.int64()),
            "dt": pa.DictionaryArray.from_arrays(
                pa.array((ids % 8).astype(np.int32)), pa.array(DTS)
            ).cast(pa.string()),
            "d1": rng.random(n),
            "d2": rng.random(n),
            "d3": rng.random(n),
            "d4": rng.random(n),
            "d5": rng.random(n),
            "s1": pc.binary_join_element_wise(
                "name-", pa.array(rng.integers(0, 100_000, n)).cast(pa.string()), ""
            ),
            "s2": pa.DictionaryArray.from_arrays(
                pa.array(rng.integers(0, 4, n).astype(np.int32)),
                pa.array(["red", "green", "blue", "black"]),
            ).cast(pa.string()),
            "i1": pa.array(rng.integers(0, 1_000_000, n), pa.int32()),
        }
    )


def insert_batch(w: Workload) -> pa.Table:
    rng = np.random.default_rng(w.seed)
    return make_rows(np.arange(w.base_rows), np.full(w.base_rows, 1_000), rng)


@dataclass
class Step:
    upserts: pa.Table
    deletes: pa.Table  # id and dt of deleted keys


def upsert_batches(w: Workload) -> Iterator[Step]:
    """The upsert batches (and the keys each deletes), deterministic for ``w``."""
    rng = np.random.default_rng(w.seed + 1)
    next_id = w.base_rows
    for b in range(w.batches):
        n_upd = int(w.batch_rows * 0.6)
        n_new = w.batch_rows - n_upd
        n_late = n_upd // 5
        upd_ids = rng.choice(next_id, n_upd, replace=False)
        ts = np.full(n_upd, 2_000 + b)
        ts[:n_late] = 500  # late: older than anything written
        new_ids = np.arange(next_id, next_id + n_new)
        next_id += n_new
        rows = make_rows(
            np.concatenate([upd_ids, new_ids]), np.concatenate([ts, np.full(n_new, 2_000 + b)]), rng
        )
        rows = rows.take(pa.array(rng.permutation(rows.num_rows)))
        del_ids = rng.choice(next_id, w.batch_rows // 100, replace=False)
        dels = make_rows(del_ids, np.zeros(len(del_ids)), rng).select(["id", "dt"])
        yield Step(rows, dels)


def reference(w: Workload) -> dict[str, int]:
    """The expected final state: id -> ts (event-time merge), computed with plain dicts."""
    state: dict[str, int] = {}
    base = insert_batch(w)
    for k, t in zip(base["id"].to_pylist(), base["ts"].to_pylist(), strict=True):
        state[k] = t
    for step in upsert_batches(w):
        for k, t in zip(
            step.upserts["id"].to_pylist(), step.upserts["ts"].to_pylist(), strict=True
        ):
            cur = state.get(k)
            if cur is None or t >= cur:
                state[k] = t
        for k in step.deletes["id"].to_pylist():
            state.pop(k, None)
    return state
