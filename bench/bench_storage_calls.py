"""Storage requests of a snapshot read, listed through the metadata table and without it.

hudi_ds writes tables of partitions x buckets file groups (``--layouts``, 1,000 file groups
in 10 and in 100 partitions by default: bucket index, enough rows that every bucket of every
partition holds some) with the metadata
table enabled (``hoodie.metadata.enable=true``), then upserts a tenth of the keys. A snapshot
read of it is made twice -- ``hoodie.metadata.enable=true`` (list through the MDT) and
``false`` (list the storage) -- and the requests its storage made are counted by kind
(:class:`hudi_ds.storage_types.StorageCalls`: list, read, head, exists), for planning alone (what
listing costs) and for the whole read. Both reads must return the same rows. Counts, not
times: on an object store each request is a round trip.

Run: ``.venv/bin/python -m bench.bench_storage_calls [--layouts 10x100,100x10]``
(``make bench`` runs it and keeps the output in ``bench/results/storage_calls.txt``).
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

import numpy as np
import pyarrow as pa

import hudi_ds
from hudi_ds.metadata.reader import MetadataReader
from hudi_ds.storage_types import StorageCalls
from hudi_ds.table.table import ReadableTable

KINDS = StorageCalls.KINDS


def rows(n: int, partitions: int, ts: int, start: int = 0) -> pa.Table:
    ids = np.arange(start, start + n)
    return pa.table(
        {
            "id": pa.array([f"k{i:09d}" for i in ids]),
            "ts": pa.array(np.full(n, ts, dtype=np.int64)),
            "part": pa.array([f"p{i % partitions:03d}" for i in ids]),
            "value": pa.array(ids.astype(np.float64)),
        }
    )


def build(path: str, partitions: int, buckets: int, rows_per_group: int) -> int:
    """Write the table; returns its number of file groups."""
    opts = {
        "hoodie.table.name": "bench_calls",
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.partitionpath.field": "part",
        "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.datasource.write.table.type": "MERGE_ON_READ",
        "hoodie.bucket.index.num.buckets": str(buckets),
        "hoodie.metadata.enable": "true",
        "hoodie.clean.automatic": "false",
        "hoodie.datasource.compaction.async.enable": "false",  # the layout counted: logs
    }
    n = partitions * buckets * rows_per_group
    op = "hoodie.datasource.write.operation"
    hudi_ds.write(path, rows(n, partitions, 1), {**opts, op: "insert"})
    hudi_ds.write(path, rows(n // 10, partitions, 2), {**opts, op: "upsert"})
    return len(ReadableTable(path).file_slices())


def measure(path: str, enable: str) -> dict[str, object]:
    """Counts of one snapshot read with ``hoodie.metadata.enable=enable``."""
    table = ReadableTable(path, {"hoodie.metadata.enable": enable})
    calls = table.storage.calls
    calls.reset()  # from here on: hoodie.properties was read, nothing else
    plan = table.plan_read()
    planned = calls.snapshot()
    batches = list(table.read_plan_slices(plan, plan.slices))
    read = calls.snapshot()
    got = pa.Table.from_batches(batches, schema=plan.output_schema) if batches else None
    used_mdt = table.metadata_reader() is not None  # (after counting)
    return {
        "enable": enable,
        "used_mdt": used_mdt,
        "plan": planned,
        "read": read,
        "rows": 0 if got is None else got.num_rows,
        "checksum": 0 if got is None else int(np.sum(got.column("value").to_numpy())),
        "slices": len(plan.slices),
    }


def run(partitions: int, buckets: int, rows_per_group: int, path: str | None) -> dict[str, object]:
    """Build one table and measure both reads; prints the report and returns the counts."""
    with tempfile.TemporaryDirectory(prefix="bench-calls-") as tmp:
        where = path or str(Path(tmp) / "t")
        groups = build(where, partitions, buckets, rows_per_group)
        t = ReadableTable(where)
        reader = MetadataReader.open(t.storage, t.config, t.timeline)
        if reader is None or not reader.in_step:
            why = "absent" if reader is None else reader.why_not_in_step()
            raise SystemExit(f"the metadata table hudi_ds wrote is not usable: {why}")
        with_mdt = measure(where, "true")
        without = measure(where, "false")
    if not with_mdt["used_mdt"] or without["used_mdt"]:
        raise SystemExit("the read with hoodie.metadata.enable=true did not list through it")
    if (with_mdt["rows"], with_mdt["checksum"]) != (without["rows"], without["checksum"]):
        raise SystemExit(f"the two reads differ: {with_mdt} vs {without}")
    print(
        f"\nsnapshot read of a MERGE_ON_READ table of {groups} file groups in {partitions} "
        f"partitions, written by hudi_ds with the metadata table (in step, "
        f"{reader.file_count()} files listed); {with_mdt['rows']:,} rows"
    )
    header = f"| {'listing':<27} | {'phase':<14} | " + " | ".join(f"{k:>6}" for k in KINDS)
    print(header + " |  total |")
    print("|" + "|".join("-" * len(c) for c in (header + " |  total |")[1:-1].split("|")) + "|")
    for r, name in ((with_mdt, "metadata table"), (without, "storage (no metadata table)")):
        for phase in ("plan", "read"):
            c = r[phase]
            assert isinstance(c, dict)
            label = "plan (listing)" if phase == "plan" else "whole read"
            cells = " | ".join(f"{c[k]:>6}" for k in KINDS)
            print(f"| {name:<27} | {label:<14} | {cells} | {sum(c.values()):>6} |")
    p_mdt, p_fs = with_mdt["plan"], without["plan"]
    assert isinstance(p_mdt, dict) and isinstance(p_fs, dict)
    print(
        f"planning: {p_fs['list']} list requests without the metadata table, "
        f"{p_mdt['list']} with it; {sum(p_fs.values())} vs {sum(p_mdt.values())} requests in all"
    )
    return {
        "partitions": partitions,
        "file_groups": groups,
        "with_mdt": with_mdt,
        "without_mdt": without,
    }


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument(
        "--layouts",
        default="10x100,100x10",
        help="tables to build, as PARTITIONSxBUCKETS (file groups = their product)",
    )
    ap.add_argument("--rows-per-group", type=int, default=40)
    ap.add_argument("--path", default=None, help="keep the (single) table here")
    args = ap.parse_args(argv)
    layouts = [tuple(int(x) for x in spec.split("x")) for spec in args.layouts.split(",")]
    if args.path and len(layouts) > 1:
        raise SystemExit("--path keeps one table: give one layout")
    print("storage requests of a snapshot read (list / read / head / exists), counted by Storage")
    results = [run(p, b, args.rows_per_group, args.path) for p, b in layouts]
    print(json.dumps(results))


if __name__ == "__main__":
    main()
