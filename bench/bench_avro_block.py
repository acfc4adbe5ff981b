"""Micro-benchmark: decoding one Avro data block vs the Parquet data block of the same rows.

The rows are the standard workload's (:func:`bench.workload.make_rows`) with Hudi's five meta
columns in front, as a MOR log block holds them. Each decoder runs ``--repeat`` times,
interleaved; the best CPU time (user + sys of this process) and wall time are printed with
rows/s and the Avro/Parquet ratio (the acceptance targets: >= 1,000,000 rows/s and <= 3x Parquet), for all
columns and for the columns a snapshot read of ``id, ts, d1`` asks a block for.
``--fastavro`` also times the record-by-record fastavro decoding the vectorised decoder replaced
(slow: one run). Every decoded table is checked equal to the others before timing is reported.

Usage: ``python -m bench.bench_avro_block [--rows 200000] [--repeat 5] [--fastavro]``
"""

from __future__ import annotations

import argparse
import resource
import struct
import time
from collections.abc import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from bench.workload import make_rows
from hudi_ds.log import (
    decode_data_block,
    encode_avro_data_block,
    encode_parquet_data_block,
    parse_block,
)
from hudi_ds.log.reader import _avro_plan, _decode_framed
from hudi_ds.schema.avro import table_avro_schema

INSTANT = "20250101010101010"
PROJECTED = [
    "_hoodie_commit_time",
    "_hoodie_record_key",
    "_hoodie_partition_path",
    "id",
    "ts",
    "d1",
]


def bench_rows(n: int) -> pa.Table:
    """``n`` workload rows with the meta columns a log block of one file group holds."""
    rows = make_rows(np.arange(n), np.full(n, 1_000), np.random.default_rng(7))
    seqno = pc.binary_join_element_wise(
        f"{INSTANT}_0_", pa.array(np.arange(n)).cast(pa.string()), ""
    )
    meta = {
        "_hoodie_commit_time": pa.array([INSTANT] * n),
        "_hoodie_commit_seqno": seqno,
        "_hoodie_record_key": rows.column("id"),
        "_hoodie_partition_path": rows.column("dt"),
        "_hoodie_file_name": pa.array(
            [f"d0304c53-1111-2222-3333-444455556666-0_0-1-2_{INSTANT}.parquet"] * n
        ),
    }
    return pa.table({**meta, **{c: rows.column(c) for c in rows.column_names}})


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _time(fn: Callable[[], pa.Table]) -> tuple[float, float, pa.Table]:
    wall, cpu = time.perf_counter(), _cpu()
    table = fn()
    return time.perf_counter() - wall, _cpu() - cpu, table


def main(argv: list[str] | None = None) -> None:
    """Run the benchmark and print its table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--fastavro", action="store_true", help="also time the fastavro path")
    args = parser.parse_args(argv)
    n = args.rows
    table = bench_rows(n)
    schema = table_avro_schema(table.schema, "bench")
    avro = parse_block(encode_avro_data_block(table, INSTANT, schema))
    parquet = parse_block(encode_parquet_data_block(table, INSTANT, schema))
    # what a snapshot read of id, ts, d1 asks a block for (with the merge's key columns)
    wanted = pa.schema([table.schema.field(c) for c in PROJECTED])
    runs: dict[str, Callable[[], pa.Table]] = {
        "avro (vectorised)": lambda: decode_data_block(avro),
        "parquet": lambda: decode_data_block(parquet),
        "avro, projected": lambda: decode_data_block(avro, wanted),
        "parquet, projected": lambda: decode_data_block(parquet, wanted),
    }
    if args.fastavro:
        plan = _avro_plan(avro.schema or "")
        count = struct.unpack_from(">i", avro.content, 4)[0]
        runs["avro (fastavro, before)"] = lambda: _decode_framed(plan, avro.content, count)
    best: dict[str, tuple[float, float]] = {}
    tables: dict[str, pa.Table] = {}
    for i in range(args.repeat):
        for name, fn in runs.items():
            if name.startswith("avro (fastavro") and i:
                continue
            wall, cpu, tables[name] = _time(fn)
            old = best.get(name, (float("inf"), float("inf")))
            best[name] = (min(old[0], wall), min(old[1], cpu))
    reference = tables["avro (vectorised)"]
    for name, got in tables.items():
        assert got.num_rows == n, name
        want = reference.select(got.column_names)
        assert got.cast(want.schema).equals(want), f"{name} decodes other rows"
    assert reference.equals(table.cast(reference.schema)), "the block does not hold the rows"
    print(f"{n} rows, Avro content {len(avro.content) / 1e6:.1f} MB, best of {args.repeat}")
    print(f"{'decoder':26} {'wall s':>8} {'cpu s':>8} {'rows/s (cpu)':>14} {'vs parquet':>11}")
    for name, (wall, cpu) in best.items():
        parquet_cpu = best["parquet, projected" if "projected" in name else "parquet"][1]
        ratio = cpu / parquet_cpu if parquet_cpu else float("nan")
        print(f"{name:26} {wall:8.3f} {cpu:8.3f} {n / cpu:14,.0f} {ratio:10.2f}x")


if __name__ == "__main__":
    main()
