"""Speed of the merge engine: vectorised built-in mergers against the per-record path.

The workload is what a COW merge or a compaction hands the engine: a base file of ``--base``
rows and a batch of ``--updates`` versions (90% updates of existing keys, some with an older
ordering value, 10% new keys; a third of the values null, which the partial behaviours keep).
The vectorised path runs on 1,000,000 + 200,000 versions; the per-record path (what a user
merger that only implements ``merge`` gets: a Python fold per key) on a 50,000-version slice of
the same shape. Rates are input versions per second.

Run: ``.venv/bin/python bench/bench_merge.py [--base 1000000] [--updates 200000]
[--per-record 50000]``.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from functools import partial

import numpy as np
import pyarrow as pa

from hudi_ds.merge import VersionsBuilder, merge_versions, merger_for
from hudi_ds.merge.merger import DELETE, RecordMerger, merge_per_record
from hudi_ds.merge.modes import BEHAVIOURS, builtin_spec


class SumMerger(RecordMerger):
    """A user merger with only the per-record method: sums ``qty``, keeps the newer rest."""

    strategy_id = "9d0c1e4e-2a55-4a53-8c1b-3b0b9a1d2c3e"

    def merge(self, older, newer, schema, props):
        if self.is_delete(newer, props):
            return DELETE
        out = dict(newer)
        out["qty"] = (older.get("qty") or 0) + (newer.get("qty") or 0)
        return out


def workload(base: int, updates: int, seed: int = 0) -> tuple[pa.Table, pa.Table]:
    rng = np.random.default_rng(seed)

    def table(ids: np.ndarray, ts: np.ndarray, commit: str, nulls: bool) -> pa.Table:
        n = len(ids)
        price = rng.normal(100, 10, n)
        name = np.array(["alpha", "beta", "gamma", "delta"], dtype=object)[ids % 4]
        mask = rng.random(n) < 0.33 if nulls else np.zeros(n, bool)
        return pa.table(
            {
                "_hoodie_commit_time": pa.repeat(pa.scalar(commit), n),
                "_hoodie_record_key": pa.array([f"key-{i:08d}" for i in ids]),
                "ts": pa.array(ts, pa.int64()),
                "name": pa.array(name, pa.string(), mask=mask),
                "price": pa.array(price, mask=rng.random(n) < 0.33 if nulls else None),
                "qty": pa.array(rng.integers(0, 100, n), pa.int32()),
            }
        )

    ids = np.arange(base)
    old = table(ids, rng.integers(0, 1000, base), "c1", False)
    n_new = updates // 10
    upd_ids = np.concatenate(
        [rng.choice(base, updates - n_new, replace=False), base + np.arange(n_new)]
    )
    rng.shuffle(upd_ids)
    new = table(upd_ids, rng.integers(0, 1500, updates), "c2", True)
    return old, new


def best_of(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--base", type=int, default=1_000_000)
    ap.add_argument("--updates", type=int, default=200_000)
    ap.add_argument("--per-record", type=int, default=50_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)

    old, new = workload(args.base, args.updates)
    schema = old.schema
    n = old.num_rows + new.num_rows
    small_base = args.per_record * args.base // (args.base + args.updates)
    s_old, s_new = workload(small_base, args.per_record - small_base, seed=1)
    n_small = s_old.num_rows + s_new.num_rows
    print(
        f"merge: {old.num_rows:,} base rows + {new.num_rows:,} updates "
        f"(per-record path: {s_old.num_rows:,} + {s_new.num_rows:,})"
    )
    print(f"{'merger':<28}{'vectorised rows/s':>20}{'per-record rows/s':>20}{'speed-up':>10}")
    for name in ("default", "overwrite_with_latest", "partial_update", "postgres_debezium"):
        spec = builtin_spec(BEHAVIOURS[name], ("ts",))
        merged = merge_versions([old, new], spec, schema)
        assert merged.rows.num_rows == args.base + args.updates // 10
        t_vec = best_of(partial(merge_versions, [old, new], spec, schema), args.repeat)

        def slow(spec=spec):
            b = VersionsBuilder(schema, spec.ordering_fields)
            b.add(s_old)
            b.add(s_new)
            return merge_per_record(merger_for(spec), b.build(), schema, spec.props())

        def rows(t: pa.Table) -> list:
            return sorted(t.to_pylist(), key=lambda r: r["_hoodie_record_key"])

        fast_small = merge_versions([s_old, s_new], spec, schema).rows
        assert rows(slow().rows) == rows(fast_small), name
        t_rec = best_of(slow, args.repeat)
        vec, rec = n / t_vec, n_small / t_rec
        print(f"{name:<28}{vec:>20,.0f}{rec:>20,.0f}{vec / rec:>9.0f}x")
    custom = SumMerger()
    t_custom = best_of(lambda: merge_versions([s_old, s_new], custom, schema, {}), args.repeat)
    print(f"{'custom (per-record only)':<28}{'-':>20}{n_small / t_custom:>20,.0f}")


if __name__ == "__main__":
    main()
