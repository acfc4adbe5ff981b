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
through it instead of listing each partition); both again with one bucket per partition
(``1-bucket``: one file group per partition, as delta-rs keeps one file per partition here).
Beside each hudi_ds row, ``floor`` is what the table's layout and Hudi's protocol require
(:func:`floor`): a MERGE_ON_READ snapshot reads each live log file, one GET each, until a
compaction merges them. delta-rs: ``write_deltalake`` then
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
    buckets: int = 4,
) -> dict[str, Any]:
    import hudi_ds

    opts = {
        "hoodie.table.name": "calls",
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.partitionpath.field": "part",
        "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.datasource.write.table.type": table_type,
        "hoodie.index.type": "BUCKET",
        "hoodie.bucket.index.num.buckets": str(buckets),
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
    read = _take(proxy)
    out = {
        "upsert": upsert[0],
        "read": read[0],
        "rows": n,
        "log": {"upsert": upsert[1], "read": read[1]},
        "floor": floor(uri, so, metadata),
    }
    _take(proxy)  # (the floor's own reads)
    return out


def floor(uri: str, so: dict[str, str], metadata: bool) -> dict[str, dict[str, int]]:
    """The requests the table's layout and Hudi's protocol require of the last upsert and of
    a snapshot read, itemized (what no implementation of the format can save):

    * both: ``hoodie.properties`` (GET), the timeline (LIST), the latest commit for the table
      schema (GET);
    * read: the partitions (LIST the base path, then each partition) and each live file of
      the latest slices (one GET each: a base file, a log file); through the metadata table
      instead of the partition listings: its ``hoodie.properties``, its timeline, its
      ``files`` partition (LIST), each live file of that partition's slice (GET);
    * upsert: each partition written (LIST: the bucket index's file groups and the next log
      version), the instant's requested, inflight and completed files (PUT), the markers a
      crash is recovered from (the type file and one list of the written files: PUT; their
      deletion: one request), each file written (PUT); with the metadata table its
      ``hoodie.properties`` (GET), timeline and ``files`` partition (LIST), its deltacommit's
      three instant files and its log (PUT).

    Not counted: what hudi_ds adds for safety beyond the format (the single writer's record
    and heartbeat, the timeline listed again at the commit for the conflict checks, the
    instant-time probe) -- those are in the measured rows only."""
    from hudi_ds.layout.naming import parse_base_file_name, parse_log_file_name
    from hudi_ds.storage import Storage
    from hudi_ds.table.table import ReadableTable

    t = ReadableTable(uri, {"hoodie.metadata.enable": "false"}, storage_options=so)
    slices = t.plan_read().slices
    live = sum((s.base_file is not None) + len(s.log_files) for s in slices)
    parts = len({s.partition_path for s in slices})
    last = t.timeline.commits()[-1]
    stats = t.timeline.read_commit_metadata(last).partition_to_write_stats
    written = sum(len(v) for v in stats.values())
    common = {"get": 2, "list": 1}
    read = {"get": common["get"] + live, "list": common["list"] + 1 + parts}
    # a copy-on-write upsert reads each base file it rewrites (one GET)
    merged = sum(
        st.prev_commit not in (None, "null") and not st.path.split("/")[-1].startswith(".")
        for v in stats.values()
        for st in v
    )
    upsert = {"get": 2 + merged, "list": 1 + len(stats), "put": 3 + 2 + written, "post": 1}
    if metadata:
        mdt = Storage(uri, storage_options=so).sub(".hoodie/metadata")
        names = [f.name for f in mdt.list_files("files")]
        bases = [b.instant_time for n in names if (b := parse_base_file_name(n)) is not None]
        base = max(bases, default="")
        logs = [lg for n in names if (lg := parse_log_file_name(n)) and lg.instant_time == base]
        read = {"get": read["get"] + 1 + (base != "") + len(logs), "list": common["list"] + 2}
        upsert = {**upsert, "get": upsert["get"] + 1, "list": upsert["list"] + 2}
        upsert["put"] += 4
    return {"upsert": upsert, "read": read}


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
    """The counts by kind; ``floor``: what the layout requires (:func:`floor`), by total."""
    width = max(11, *(len(n) for n in results))
    head = (
        f"| {'system':<{width}} | operation      | "
        + " | ".join(f"{k:>6}" for k in KINDS)
        + " |  total |  floor |"
    )
    lines = [head, "|" + "|".join("-" * len(c) for c in head.split("|")[1:-1]) + "|"]
    for name, r in results.items():
        for op, label in (("upsert", "upsert commit"), ("read", "snapshot read")):
            c = r[op]
            vals = " | ".join(f"{c.get(k, 0):>6}" for k in KINDS)
            low = f"{sum(r['floor'][op].values()):>6}" if "floor" in r else f"{'':>6}"
            lines.append(
                f"| {name:<{width}} | {label:<14} | {vals} | {sum(c.values()):>6} | {low} |"
            )
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
            # one file group per partition, as delta-rs keeps one file per partition here:
            # what Hudi's bucket sizing gives a partition of this size
            uri1 = "s3://bench/hudi_1"
            results["hudi_ds 1-bucket"] = run_hudi(uri1, so, data, proxy, tt, buckets=1)
            uri1m = "s3://bench/hudi_1_mdt"
            results["hudi_ds+mdt 1-bucket"] = run_hudi(uri1m, so, data, proxy, tt, True, 1)
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
        for name, r in results.items():
            if name == "delta-rs":
                continue
            h = sum(r[op].values())
            low = sum(r["floor"][op].values())
            print(
                f"{op}: {name} {h} requests (floor {low}), delta-rs {d} ({h / max(d, 1):.2f}x; "
                f"floor {low / max(d, 1):.2f}x)"
            )
    print(
        "floor: the requests the layout and Hudi's protocol require (bench_s3_calls.floor: "
        "table config, timeline, schema commit; a read's partition listings and one GET per "
        "live file; an upsert's listing per partition written, instant files, markers, one "
        "PUT per file written; the metadata table's own)"
    )
    if args.json:
        counted = {n: {k: v for k, v in r.items() if k != "log"} for n, r in results.items()}
        Path(args.json).write_text(json.dumps(counted, indent=1))
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
