"""HTTP requests per upsert commit and per snapshot read on S3: hudi_ds against delta-rs.

A local S3 server (moto in server mode) is started; a counting proxy in front of it counts every
request by kind (list, get, head, put, copy, delete, post). Each system creates a table of
``--rows`` rows in ``--partitions`` partitions, then makes ``--commits`` upserts of a tenth of
the keys (half updates, half inserts); the requests of the last upsert commit and of a snapshot
read after it are reported. Both systems' reads must return the same number of rows.

hudi_ds: a MERGE_ON_READ table (``--table-type``) with the bucket index
(``hoodie.bucket.index.num.buckets`` 4), once without a metadata table (hudi_ds's default: it
maintains one the table has, and creates one with ``hoodie.metadata.enable=true``) and once
with it (``hudi_ds+mdt``: the write also updates the metadata table, the read lists the files
through it instead of listing each partition). delta-rs: ``write_deltalake`` then
``DeltaTable.merge`` (``when_matched_update_all`` / ``when_not_matched_insert_all``),
partitioned the same way. Counts, not times: on a real object store each request is a round
trip.

Run: ``.venv/bin/python -m bench.bench_s3_calls`` (``make bench`` keeps the output in
``bench/results/s3_calls.txt``); ``--log`` also prints each counted request (method, path,
``Range`` header) of the upsert and the read, to see what is repeated.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

ROOT = Path(__file__).resolve().parents[1]
KINDS = ("list", "get", "head", "put", "copy", "delete", "post")
HUDI_TABLE_TYPES = ("MERGE_ON_READ", "COPY_ON_WRITE")


def rows(ids: np.ndarray, ts: int, partitions: int) -> pa.Table:
    return pa.table(
        {
            "id": pa.array([f"k{i:08d}" for i in ids]),
            "ts": pa.array(np.full(len(ids), ts, dtype=np.int64)),
            "part": pa.array([f"p{i % partitions:02d}" for i in ids]),
            "value": pa.array(ids.astype(np.float64) + ts),
        }
    )


def batches(n: int, partitions: int, commits: int) -> list[pa.Table]:
    """The initial table, then ``commits`` upserts (half updates, half new keys)."""
    out = [rows(np.arange(n), 0, partitions)]
    step = max(n // 10, 2)
    for c in range(1, commits + 1):
        upd = np.arange((c - 1) * step // 2, (c - 1) * step // 2 + step // 2) % n
        new = np.arange(n + (c - 1) * (step // 2), n + c * (step // 2))
        out.append(rows(np.concatenate([upd, new]), c, partitions))
    return out


def run_hudi(
    uri: str,
    so: dict[str, str],
    data: list[pa.Table],
    proxy: Any,
    table_type: str = "MERGE_ON_READ",
    metadata: bool = False,
) -> dict[str, Any]:
    import hudi_ds

    opts = {
        "hoodie.table.name": "calls",
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.partitionpath.field": "part",
        "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.datasource.write.table.type": table_type,
        "hoodie.index.type": "BUCKET",
        "hoodie.bucket.index.num.buckets": "4",
    }
    if metadata:
        opts["hoodie.metadata.enable"] = "true"
    hudi_ds.write(
        uri, data[0], {**opts, "hoodie.datasource.write.operation": "insert"}, storage_options=so
    )
    for t in data[1:-1]:
        hudi_ds.write(uri, t, opts, storage_options=so)
    _take(proxy)
    hudi_ds.write(uri, data[-1], opts, storage_options=so)
    upsert = _take(proxy)
    n = hudi_ds.read(uri, storage_options=so).num_rows
    return {
        "upsert": upsert[0],
        "read": (read := _take(proxy))[0],
        "rows": n,
        "log": {"upsert": upsert[1], "read": read[1]},
    }


def _take(proxy: Any) -> tuple[dict[str, int], list[tuple[str, str, str, str]]]:
    """The requests since the last call: counts by kind, and the log of each."""
    return proxy.take(), proxy.take_log()


def run_delta(uri: str, so: dict[str, str], data: list[pa.Table], proxy: Any) -> dict[str, Any]:
    from deltalake import DeltaTable, write_deltalake

    dso = {**so, "aws_conditional_put": "etag"}
    write_deltalake(uri, data[0], partition_by=["part"], storage_options=dso)

    def upsert(t: pa.Table) -> None:
        (
            DeltaTable(uri, storage_options=dso)
            .merge(t, "s.id = t.id AND s.part = t.part", source_alias="s", target_alias="t")
            .when_matched_update_all()
            .when_not_matched_insert_all()
            .execute()
        )

    for t in data[1:-1]:
        upsert(t)
    _take(proxy)
    upsert(data[-1])
    up = _take(proxy)
    n = DeltaTable(uri, storage_options=dso).to_pyarrow_table().num_rows
    return {
        "upsert": up[0],
        "read": (read := _take(proxy))[0],
        "rows": n,
        "log": {"upsert": up[1], "read": read[1]},
    }


def table(results: dict[str, dict[str, Any]]) -> str:
    head = (
        "| system      | operation      | " + " | ".join(f"{k:>6}" for k in KINDS) + " |  total |"
    )
    lines = [head, "|" + "|".join("-" * len(c) for c in head.split("|")[1:-1]) + "|"]
    for name, r in results.items():
        for op, label in (("upsert", "upsert commit"), ("read", "snapshot read")):
            c = r[op]
            vals = " | ".join(f"{c.get(k, 0):>6}" for k in KINDS)
            lines.append(f"| {name:<11} | {label:<14} | {vals} | {sum(c.values()):>6} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rows", type=int, default=20_000)
    p.add_argument("--partitions", type=int, default=4)
    p.add_argument("--commits", type=int, default=3)
    p.add_argument("--table-type", default="MERGE_ON_READ", choices=HUDI_TABLE_TYPES)
    p.add_argument("--json", default=None, help="also write the counts to this file")
    p.add_argument(
        "--log", action="store_true", help="also print each request of the upsert and the read"
    )
    args = p.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    from tests.fault_proxy import FaultProxy
    from tests.moto_server import MotoServer

    data = batches(args.rows, args.partitions, args.commits)
    results: dict[str, dict[str, Any]] = {}
    with MotoServer() as server:
        server.create_bucket("bench")
        proxy = FaultProxy(server.endpoint)
        try:
            so = {**server.storage_options(), "aws_endpoint_url": proxy.endpoint}
            tt = args.table_type
            results["hudi_ds"] = run_hudi("s3://bench/hudi", so, data, proxy, tt)
            results["hudi_ds+mdt"] = run_hudi("s3://bench/hudi_mdt", so, data, proxy, tt, True)
            results["delta-rs"] = run_delta("s3://bench/delta", so, data, proxy)
        finally:
            proxy.close()
    print(
        f"HTTP requests on S3 (moto, counted by a proxy): hudi_ds {args.table_type} table, "
        f"table of {args.rows:,} rows in "
        f"{args.partitions} partitions, the last of {args.commits} upserts of "
        f"{data[-1].num_rows:,} rows, then a snapshot read"
    )
    if args.log:
        for name, r in results.items():
            for op in ("upsert", "read"):
                print(f"-- {name} {op}: {len(r['log'][op])} requests")
                for kind, method, path, rng in r["log"][op]:
                    print(f"  {kind:<6} {method:<6} {path} {rng}".rstrip())
    print(table(results))
    counts = {name: r["rows"] for name, r in results.items()}
    same = len(set(counts.values())) == 1
    print(
        "rows read: "
        + ", ".join(f"{name} {n:,}" for name, n in counts.items())
        + f" ({'same' if same else 'DIFFERENT'})"
    )
    for op in ("upsert", "read"):
        d = sum(results["delta-rs"][op].values())
        for name in ("hudi_ds", "hudi_ds+mdt"):
            h = sum(results[name][op].values())
            print(f"{op}: {name} {h} requests, delta-rs {d} ({h / max(d, 1):.2f}x)")
    if args.json:
        counted = {n: {k: v for k, v in r.items() if k != "log"} for n, r in results.items()}
        Path(args.json).write_text(json.dumps(counted, indent=1))
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
