"""Speed of the vectorised bucket index against a pure-Python loop.

Run: ``.venv/bin/python bench/bench_bucket.py [--rows 1000000] [--baseline-rows 100000]``.
"""

from __future__ import annotations

import argparse
import time
import uuid
from collections.abc import Callable

import pyarrow as pa

from hudi_ds.index import bucket_ids, bucket_ids_from_record_keys

NUM_BUCKETS = 256


def python_bucket(key: str, num_buckets: int) -> int:
    """Baseline: ``(List.of(key).hashCode() & MAX) % n`` one character at a time."""
    h = 0
    for ch in key:
        cp = ord(ch)
        if cp < 0x10000:
            h = (31 * h + cp) & 0xFFFFFFFF
        else:
            cp -= 0x10000
            h = (31 * h + 0xD800 + (cp >> 10)) & 0xFFFFFFFF
            h = (31 * h + 0xDC00 + (cp & 0x3FF)) & 0xFFFFFFFF
    return (((31 + h) & 0xFFFFFFFF) & 0x7FFFFFFF) % num_buckets


def best_of(fn: Callable[[], object], repeat: int) -> float:
    """Fastest wall time of ``repeat`` runs, in seconds."""
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main(argv: list[str] | None = None) -> None:
    """Time bucket_ids on UUID keys vs the pure-Python baseline and print rows/s."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--baseline-rows", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)

    keys = [str(uuid.uuid4()) for _ in range(args.rows)]
    arr = pa.array(keys, pa.string())
    complex_keys = pa.array([f"id:{k},part:{i % 97}" for i, k in enumerate(keys)])

    t_vec = best_of(lambda: bucket_ids([arr], NUM_BUCKETS), args.repeat)
    t_keys = best_of(
        lambda: bucket_ids_from_record_keys(arr, ["uuid"], NUM_BUCKETS, False), args.repeat
    )
    t_complex = best_of(
        lambda: bucket_ids_from_record_keys(complex_keys, ["id"], NUM_BUCKETS, True), args.repeat
    )
    base_keys = keys[: args.baseline_rows]
    t_py = best_of(lambda: [python_bucket(k, NUM_BUCKETS) for k in base_keys], 1)

    check = bucket_ids([arr.slice(0, len(base_keys))], NUM_BUCKETS).tolist()
    assert check == [python_bucket(k, NUM_BUCKETS) for k in base_keys], "results differ"

    vec_rate = args.rows / t_vec
    py_rate = len(base_keys) / t_py
    print(f"bucket_ids, {args.rows:,} UUID keys:          {t_vec:8.3f} s  {vec_rate:14,.0f} rows/s")
    print(
        f"bucket_ids_from_record_keys (simple):      {t_keys:8.3f} s  "
        f"{args.rows / t_keys:14,.0f} rows/s"
    )
    print(
        f"bucket_ids_from_record_keys (id:..,part:..): {t_complex:6.3f} s  "
        f"{args.rows / t_complex:14,.0f} rows/s"
    )
    print(
        f"pure Python loop, {len(base_keys):,} keys:        {t_py:8.3f} s  {py_rate:14,.0f} rows/s"
    )
    print(f"speed-up (rows/s ratio): {vec_rate / py_rate:.1f}x")


if __name__ == "__main__":
    main()
