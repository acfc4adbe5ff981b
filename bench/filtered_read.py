"""A selective filtered read: hudi_ds with and without data skipping, delta-rs and pyiceberg.

``python -m bench.filtered_read --scale S [--json OUT]``: one table of ``1024 * S`` files
(at least 64) of ``ROWS_PER_FILE`` rows each, partitioned by ``region`` (4 values), its rows
in arrival order: ``seq`` counts up and ``ts`` grows with it, so each file holds a narrow
range of both -- the layout a time-ordered ingest gives. Two queries on those non-partition,
non-key columns: an equality (``seq = X``, one file) and a range (``ts`` over about two files'
worth of rows). Each system reads every column of the matching rows:

* ``hudi_ds``: a COPY_ON_WRITE version 9 table written by hudi_ds (one insert, one file group
  per ``ROWS_PER_FILE`` rows), the metadata table with ``column_stats`` and
  ``partition_stats``; read through ``HudiTable.read(filters=...)`` with
  ``hoodie.enable.data.skipping`` on (the default) and off, and (``hudi_ds_dataset``)
  through ``to_pyarrow_dataset().to_table(filter=...)``, an engine's filter on the dataset;
* ``delta-rs``: the same rows as plain Parquet files (one per hudi_ds file group) made a Delta
  table by ``convert_to_deltalake`` (which records every file's statistics), read through
  ``DeltaTable.to_pyarrow_table(filters=...)`` (pyarrow prunes with the log's statistics) and
  through ``QueryBuilder`` (DataFusion); the faster counts;
* ``pyiceberg``: the same files registered with ``add_files`` in a SQLite catalog
  (identity-partitioned by ``region``; the manifests hold each file's bounds), read through
  ``scan(row_filter=...).to_arrow()``.

Every timed read opens the table afresh (timeline / log / metadata) and is the fastest of
``READ_REPEATS`` (hudi_ds keeps per process what never changes under its name -- completed
instant files, the metadata table's statistics -- so its fresh handles after the first
decode neither again); files opened is what each system's own planning leaves: hudi_ds's
``ReadStats`` (base and log files read), delta-rs's pyarrow fragments left by the filter,
pyiceberg's planned scan tasks. Every system's rows are checked against the source rows
filtered with pyarrow (ids, sorted).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

READ_REPEATS = 3
SYSTEMS = ("hudi_ds", "hudi_ds_no_skipping", "hudi_ds_dataset", "delta_rs", "pyiceberg")
ROWS_PER_FILE = 4096
REGIONS = 4
T0_US = 1_700_000_000_000_000
#: microseconds between two consecutive rows' ``ts``
TICK_US = 250_000
TS = pa.timestamp("us", tz="UTC")

HUDI_OPTIONS = {
    "hoodie.table.name": "filtered",
    "hoodie.datasource.write.recordkey.field": "id",
    "hoodie.datasource.write.partitionpath.field": "region",
    "hoodie.datasource.write.precombine.field": "seq",
    "hoodie.datasource.write.table.type": "COPY_ON_WRITE",
    "hoodie.datasource.write.operation": "insert",
    "hoodie.write.table.version": "9",
    "hoodie.index.type": "SIMPLE",
    # one new file group per ROWS_PER_FILE rows, in arrival order
    "hoodie.parquet.small.file.limit": "0",
    "hoodie.copyonwrite.insert.auto.split": "false",
    "hoodie.copyonwrite.insert.split.size": str(ROWS_PER_FILE),
    "hoodie.metadata.enable": "true",
    "hoodie.metadata.index.column.stats.enable": "true",
    "hoodie.metadata.index.partition.stats.enable": "true",
    "hoodie.clean.automatic": "false",
}


def files_of(scale: float) -> int:
    return max(64, round(1024 * scale))


def source(files: int) -> pa.Table:
    """The rows, in arrival order: file ``f`` of the layout holds rows
    ``f * ROWS_PER_FILE ..`` of region ``f % REGIONS``."""
    n = files * ROWS_PER_FILE
    seq = np.arange(n, dtype=np.int64)
    rng = np.random.default_rng(7)
    digits = pc.utf8_lpad(pa.array(seq).cast(pa.string()), 10, "0")
    region = (seq // ROWS_PER_FILE) % REGIONS
    return pa.table(
        {
            "id": pc.binary_join_element_wise("k", digits, ""),
            "region": pc.take(pa.array([f"r{r}" for r in range(REGIONS)]), pa.array(region)),
            "seq": seq,
            "ts": pa.array(T0_US + seq * TICK_US, pa.int64()).cast(TS),
            "amount": pa.array(rng.integers(0, 10_000, n)),
            "score": pa.array(rng.random(n)),
            "tag": pc.take(
                pa.array([f"tag{i}" for i in range(50)]), pa.array(rng.integers(0, 50, n))
            ),
        }
    )


def queries(files: int) -> dict[str, list[tuple[str, str, Any]]]:
    """The two selective queries: an equality hitting one file, a range over about two files'
    rows (straddling file boundaries: three files)."""
    n = files * ROWS_PER_FILE
    mid = n // 2 + ROWS_PER_FILE // 3
    lo = T0_US + mid * TICK_US
    hi = lo + 2 * ROWS_PER_FILE * TICK_US
    return {
        "equality": [("seq", "=", mid)],
        "range": [
            ("ts", ">=", pa.scalar(lo, TS)),
            ("ts", "<", pa.scalar(hi, TS)),
        ],
    }


def _expr(filters: list[tuple[str, str, Any]]) -> pc.Expression:
    ops: dict[str, Callable[[Any, Any], Any]] = {
        "=": lambda f, v: f == v,
        ">=": lambda f, v: f >= v,
        "<": lambda f, v: f < v,
    }
    out = None
    for col, op, value in filters:
        e = ops[op](pc.field(col), value)
        out = e if out is None else out & e
    assert out is not None
    return out


def _ids(t: pa.Table) -> list[str]:
    return sorted(t.column("id").to_pylist())


def best(fn: Callable[[], Any]) -> tuple[float, Any]:
    """The fastest of ``READ_REPEATS`` runs of ``fn``: its seconds and its last result."""
    times, out = [], None
    for _ in range(READ_REPEATS):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return min(times), out


# -- the tables --------------------------------------------------------------------------------
def write_hudi(data: pa.Table, path: str) -> float:
    import hudi_ds

    t0 = time.perf_counter()
    # one chunk: the writer tags each input chunk in turn
    hudi_ds.write(path, data.combine_chunks(), HUDI_OPTIONS)
    return time.perf_counter() - t0


def write_parquet_files(data: pa.Table, root: Path, files: int, hive: bool) -> list[str]:
    """One plain Parquet file per layout file; ``hive``: under ``region=rN/`` without the
    partition column (Delta's layout), else with it (Iceberg's ``add_files`` reads it)."""
    paths = []
    for f in range(files):
        chunk = data.slice(f * ROWS_PER_FILE, ROWS_PER_FILE)
        region = f"r{f % REGIONS}"
        d = root / (f"region={region}" if hive else region)
        d.mkdir(parents=True, exist_ok=True)
        path = d / f"part-{f:05d}.parquet"
        pq.write_table(chunk.drop_columns(["region"]) if hive else chunk, path)
        paths.append(str(path))
    return paths


def make_delta(data: pa.Table, root: Path, files: int) -> float:
    import deltalake

    t0 = time.perf_counter()
    write_parquet_files(data, root, files, hive=True)
    part = deltalake.Schema.from_arrow(pa.schema([("region", pa.string())]))
    deltalake.convert_to_deltalake(str(root), partition_by=part, partition_strategy="hive")
    return time.perf_counter() - t0


def make_iceberg(data: pa.Table, root: Path, files: int) -> tuple[float, Any]:
    from pyiceberg.catalog.sql import SqlCatalog
    from pyiceberg.partitioning import PartitionField, PartitionSpec
    from pyiceberg.transforms import IdentityTransform

    t0 = time.perf_counter()
    root.mkdir(parents=True)
    catalog = SqlCatalog(
        "bench", uri=f"sqlite:///{root}/catalog.db", warehouse=f"file://{root}/warehouse"
    )
    catalog.create_namespace("b")
    table = catalog.create_table("b.t", schema=data.schema)
    region_id = table.schema().find_field("region").field_id
    spec = PartitionSpec(
        PartitionField(
            source_id=region_id, field_id=1000, transform=IdentityTransform(), name="region"
        )
    )
    catalog.drop_table("b.t")
    table = catalog.create_table("b.t", schema=table.schema(), partition_spec=spec)
    paths = write_parquet_files(data, root / "files", files, hive=False)
    table.add_files(paths)
    return time.perf_counter() - t0, catalog


# -- the reads ---------------------------------------------------------------------------------
def read_hudi(path: str, flt: list, skipping: bool) -> dict[str, Any]:
    from hudi_ds.api import HudiTable

    opts = {"hoodie.enable.data.skipping": str(skipping).lower()}
    holder: dict[str, Any] = {}

    def run() -> pa.Table:
        t = HudiTable(path)
        out = t.read(opts, filters=flt)
        holder["stats"] = t.last_read_stats
        return out

    s, out = best(run)
    st = holder["stats"]
    plan_s, _ = best(lambda: HudiTable(path).plan_read(opts, None, flt))
    warm = HudiTable(path)
    warm_s, warm_out = best(lambda: warm.read(opts, filters=flt))
    if _ids(warm_out) != _ids(out):
        raise AssertionError("hudi_ds: a warm handle reads other rows")
    return {
        "s": s,
        "warm_s": warm_s,
        "plan_s": plan_s,
        "files_opened": st.base_files + st.log_files,
        "ids": _ids(out),
    }


def read_hudi_dataset(path: str, flt: list) -> dict[str, Any]:
    """The engines' path: ``to_pyarrow_dataset()`` built without filters, Arrow's scanner
    given the filter (as DuckDB and polars push theirs); the fragments' column-stats bounds
    prune."""
    from hudi_ds.api import HudiTable

    holder: dict[str, Any] = {}

    def run() -> pa.Table:
        t = HudiTable(path)
        out = t.to_pyarrow_dataset().to_table(filter=_expr(flt))
        holder["stats"] = t.last_scan_stats
        return out

    s, out = best(run)
    return {"s": s, "files_opened": holder["stats"].slices_read, "ids": _ids(out)}


def read_delta(path: str, flt: list) -> dict[str, Any]:
    from deltalake import DeltaTable, QueryBuilder

    expr = _expr(flt)
    s_pa, out = best(lambda: DeltaTable(path).to_pyarrow_table(filters=expr))
    opened = len(list(DeltaTable(path).to_pyarrow_dataset().get_fragments(filter=expr)))
    where = " and ".join(_sql(c, op, v) for c, op, v in flt)

    def query() -> pa.Table:
        qb = QueryBuilder().register("t", DeltaTable(path))
        return pa.table(qb.execute(f"select * from t where {where}").read_all())

    s_df, out_df = best(query)
    if _ids(out_df) != _ids(out):
        raise AssertionError("delta-rs: QueryBuilder and to_pyarrow_table disagree")
    qb = QueryBuilder().register("t", DeltaTable(path))
    warm_df, _ = best(lambda: pa.table(qb.execute(f"select * from t where {where}").read_all()))
    dt = DeltaTable(path)
    warm_pa, _ = best(lambda: dt.to_pyarrow_table(filters=expr))
    return {
        "s": min(s_pa, s_df),
        "warm_s": min(warm_pa, warm_df),
        "warm_s_pyarrow": warm_pa,
        "warm_s_datafusion": warm_df,
        "s_pyarrow": s_pa,
        "s_datafusion": s_df,
        "files_opened": opened,
        "ids": _ids(out),
    }


def _sql(col: str, op: str, value: Any) -> str:
    if isinstance(value, pa.TimestampScalar):
        ts = value.as_py().strftime("%Y-%m-%dT%H:%M:%S.%f")
        return f"{col} {op} TIMESTAMP '{ts}Z'"
    return f"{col} {op} {value}"


def read_iceberg(catalog: Any, flt: list) -> dict[str, Any]:
    from pyiceberg.expressions import And, EqualTo, GreaterThanOrEqual, LessThan

    ops = {"=": EqualTo, ">=": GreaterThanOrEqual, "<": LessThan}

    def term(col: str, op: str, value: Any) -> Any:
        if isinstance(value, pa.TimestampScalar):
            value = value.as_py().isoformat()
        return ops[op](col, value)

    terms = [term(*f) for f in flt]
    row_filter = terms[0] if len(terms) == 1 else And(*terms)
    s, out = best(lambda: catalog.load_table("b.t").scan(row_filter=row_filter).to_arrow())
    opened = len(list(catalog.load_table("b.t").scan(row_filter=row_filter).plan_files()))
    table = catalog.load_table("b.t")
    warm_s, _ = best(lambda: table.scan(row_filter=row_filter).to_arrow())
    return {"s": s, "warm_s": warm_s, "files_opened": opened, "ids": _ids(out)}


def run(scale: float) -> dict[str, Any]:
    files = files_of(scale)
    data = source(files)
    out: dict[str, Any] = {
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "scale": scale,
        "files": files,
        "rows": data.num_rows,
        "machine": f"{os.cpu_count()} cpus, load average {os.getloadavg()[0]:.1f}",
        "queries": {},
    }
    with tempfile.TemporaryDirectory(prefix="bench-filtered-") as d:
        root = Path(d)
        hudi = str(root / "hudi")
        out["write_s"] = {
            "hudi_ds": write_hudi(data, hudi),
            "delta_rs": make_delta(data, root / "delta", files),
        }
        out["write_s"]["pyiceberg"], catalog = make_iceberg(data, root / "iceberg", files)
        for name, flt in queries(files).items():
            want = _ids(data.filter(_expr(flt)))
            res = {
                "filters": " and ".join(_sql(*f) for f in flt),
                "matching_rows": len(want),
                "hudi_ds": read_hudi(hudi, flt, skipping=True),
                "hudi_ds_no_skipping": read_hudi(hudi, flt, skipping=False),
                "hudi_ds_dataset": read_hudi_dataset(hudi, flt),
                "delta_rs": read_delta(str(root / "delta"), flt),
                "pyiceberg": read_iceberg(catalog, flt),
            }
            for system in SYSTEMS:
                r = res[system]
                r["correct"] = r.pop("ids") == want
            out["queries"][name] = res
        shutil.rmtree(root / "iceberg", ignore_errors=True)
    return out


def table(res: dict[str, Any]) -> list[str]:
    """Markdown lines: per query and system, seconds (fresh and warm handle), files opened,
    rows correct."""
    lines = [
        f"filtered read: {res['files']:,} files of {ROWS_PER_FILE:,} rows ({res['rows']:,} rows, "
        f"4 partitions); fastest of {READ_REPEATS} reads; a fresh handle opens the table "
        "(timeline / log / catalog) for each read, a warm one is opened once "
        f"({res['machine']})",
        "",
        "| query | system | seconds, fresh handle | seconds, warm handle | files opened | of "
        "| rows correct |",
        "|---|---|---|---|---|---|---|",
    ]
    for q, r in res["queries"].items():
        for system in SYSTEMS:
            m = r[system]
            fresh, warm = f"{m['s']:.3f}", f"{m['warm_s']:.3f}" if "warm_s" in m else "-"
            if "plan_s" in m:
                fresh += f" (planning {m['plan_s']:.3f})"
            if system == "delta_rs":
                fresh += f" (pyarrow {m['s_pyarrow']:.3f}, DataFusion {m['s_datafusion']:.3f})"
                warm += (
                    f" (pyarrow {m['warm_s_pyarrow']:.3f}, DataFusion {m['warm_s_datafusion']:.3f})"
                )
            lines.append(
                f"| {q}: {r['filters']} | {system} | {fresh} | {warm} | {m['files_opened']} | "
                f"{res['files']} | {m['correct']} |"
            )
    return lines


def acceptance_rows(res: dict[str, Any] | None) -> list[tuple[str, ...]]:
    """The filtered-read goals as rows of :func:`bench.report.acceptance`: (target, goal,
    measured, met[, what bounds it])."""
    names = (
        "filtered read (selective, non-partition column): files opened by hudi_ds with data "
        "skipping",
        "filtered read: hudi_ds with data skipping vs without",
        "filtered read: hudi_ds with data skipping vs delta-rs (its file statistics)",
    )
    goals = ("<= 5% of files", ">= 10x faster", "<= 1x time")
    if not res or not res.get("queries"):
        return [
            (n, g, "not measured (python -m bench.filtered_read)", "-")
            for n, g in zip(names, goals, strict=True)
        ]
    qs = res["queries"]
    wrong = [
        f"{q}: {s}"
        for q, r in qs.items()
        for s in r
        if isinstance(r[s], dict) and not r[s]["correct"]
    ]
    if wrong:
        return [
            (n, g, f"no ratio: wrong rows ({', '.join(wrong)})", "no")
            for n, g in zip(names, goals, strict=True)
        ]
    share = {q: r["hudi_ds"]["files_opened"] / res["files"] for q, r in qs.items()}
    speed = {q: r["hudi_ds_no_skipping"]["s"] / r["hudi_ds"]["s"] for q, r in qs.items()}
    delta = {q: r["hudi_ds"]["s"] / r["delta_rs"]["s"] for q, r in qs.items()}
    warm = {q: r["hudi_ds"]["warm_s"] / r["delta_rs"]["warm_s"] for q, r in qs.items()}

    def shown(v: dict[str, float], fmt: str) -> str:
        return ", ".join(f"{q} {fmt.format(x)}" for q, x in v.items())

    def delta_bound() -> str:
        parts = []
        for q, r in qs.items():
            h, d = r["hudi_ds"], r["delta_rs"]
            parts.append(
                f"{q}: hudi_ds plans in {h['plan_s'] * 1000:.0f} of its {h['s'] * 1000:.0f} ms "
                f"(timeline, metadata-table listing, slices and committed-file check of "
                f"{res['files']:,} file groups, in Python; the process keeps the decoded commit "
                f"metadata and column stats); delta-rs's whole DataFusion read "
                f"takes {d['s_datafusion'] * 1000:.0f} ms, its pyarrow path "
                f"(to_pyarrow_table(filters=)) {d['s_pyarrow'] * 1000:.0f} ms = "
                f"{d['s_pyarrow'] / h['s']:.1f}x hudi_ds's time"
            )
        return "; ".join(parts)

    met_delta = max(delta.values()) <= 1
    return [
        (
            names[0],
            goals[0],
            shown(share, "{:.2%}") + f" of {res['files']:,}",
            _yes(max(share.values()) <= 0.05),
        ),
        (names[1], goals[1], shown(speed, "{:.1f}x"), _yes(min(speed.values()) >= 10)),
        (
            names[2],
            goals[2],
            shown(delta, "{:.2f}x")
            + " (fresh handles; warm handles: "
            + shown(warm, "{:.2f}x")
            + "; delta-rs at its faster path)",
            _yes(met_delta),
            "-" if met_delta else delta_bound(),
        ),
    ]


def _yes(ok: bool) -> str:
    return "yes" if ok else "no"


def main() -> None:
    ap = argparse.ArgumentParser(prog="python -m bench.filtered_read")
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--json", help="write the results here")
    args = ap.parse_args()
    res = run(args.scale)
    if args.json:
        Path(args.json).write_text(json.dumps(res, indent=1, default=str))
    print("\n".join(table(res)))


if __name__ == "__main__":
    main()
