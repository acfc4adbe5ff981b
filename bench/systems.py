"""One runner per system. Each runs the whole workload and returns its measurements.

A runner gets the workload and an empty directory and returns a dict with ``insert_s``,
``upsert_s`` (one per batch), ``read_s``, ``read_rows``, ``read_sum``, ``lookup_s`` and
``state`` (id -> ts of the final table, for the correctness check).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from bench.workload import Workload, insert_batch, upsert_batches

Result = dict[str, Any]
LOOKUP = 100


def _rss_mb() -> float:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _lookup_keys(w: Workload) -> list[str]:
    return [f"id-{i}" for i in range(0, w.base_rows, max(1, w.base_rows // LOOKUP))][:LOOKUP]


def run_pyarrow(w: Workload, root: Path) -> Result:
    """The physical ceiling: plain Parquet files, no keys, no merging (state is not upserted)."""
    out: Result = {"upsert_s": []}
    t0 = time.perf_counter()
    pq.write_table(insert_batch(w), root / "base.parquet")
    out["insert_s"] = time.perf_counter() - t0
    for i, step in enumerate(upsert_batches(w)):
        t0 = time.perf_counter()
        pq.write_table(step.upserts, root / f"batch-{i}.parquet")
        out["upsert_s"].append(time.perf_counter() - t0)
    out["write_peak_rss_mb"] = _rss_mb()
    t0 = time.perf_counter()
    t = pq.read_table(root)
    out["read_rows"], out["read_sum"] = t.num_rows, pc.sum(t["d1"]).as_py()
    out["read_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    ds.dataset(root).to_table(filter=pc.field("id").isin(_lookup_keys(w)))
    out["lookup_s"] = time.perf_counter() - t0
    out["state"] = None  # not an upserting system
    return out


def _hudi_ds(
    table_type: str, block: str, index: str = "BUCKET", state: bool = False
) -> Callable[[Workload, Path], Result]:
    """hudi_ds' embedded writes with ``index`` (``hoodie.index.type``); ``state``: the upserts
    go through one long-lived ``HudiTable(state_index=True)`` (the state index)."""

    def run(w: Workload, root: Path) -> Result:
        import hudi_ds

        path = str(root / "table")
        opts = {
            "hoodie.table.name": "bench",
            "hoodie.datasource.write.recordkey.field": "id",
            "hoodie.datasource.write.partitionpath.field": "dt",
            "hoodie.datasource.write.precombine.field": "ts",
            "hoodie.datasource.write.table.type": table_type,
            "hoodie.logfile.data.block.format": block,
            "hoodie.index.type": index,
            "write.task.max.size": "256",
        }
        if index == "BUCKET":
            opts["hoodie.bucket.index.num.buckets"] = "4"
        out: Result = {"upsert_s": []}
        base = insert_batch(w)
        t0 = time.perf_counter()
        hudi_ds.write(
            path,
            pa.RecordBatchReader.from_batches(base.schema, base.to_batches(100_000)),
            {**opts, "hoodie.datasource.write.operation": "insert"},
        )
        out["insert_s"] = time.perf_counter() - t0
        del base
        table = hudi_ds.HudiTable(path, state_index=True) if state else None
        delete = {**opts, "hoodie.datasource.write.operation": "delete"}
        for step in upsert_batches(w):
            t0 = time.perf_counter()
            if table is not None:
                table.upsert(step.upserts, opts)
                table.delete(step.deletes, delete)
            else:
                hudi_ds.write(path, step.upserts, opts)
                hudi_ds.write(path, step.deletes, delete)
            out["upsert_s"].append(time.perf_counter() - t0)
        if table is not None and table.state_index is not None:
            out["state_mb"] = table.state_index.nbytes / 1e6
        out["write_peak_rss_mb"] = _rss_mb()
        t0 = time.perf_counter()
        t = hudi_ds.read(path, columns=["id", "ts", "d1"])
        out["read_rows"], out["read_sum"] = t.num_rows, pc.sum(t["d1"]).as_py()
        out["read_s"] = time.perf_counter() - t0
        out["state_table"] = t.select(["id", "ts"])
        t0 = time.perf_counter()
        hudi_ds.read(path, filters=[("id", "in", _lookup_keys(w))])
        out["lookup_s"] = time.perf_counter() - t0
        return out

    return run


def _hudi_rs_read(w: Workload, root: Path) -> Result:
    """hudi-rs (the ``hudi`` package) reading the MOR table hudi_ds wrote."""
    import hudi

    import hudi_ds

    path = str(root / "table")
    writer = _hudi_ds("MERGE_ON_READ", "parquet")
    out = writer(w, root)
    _ = hudi_ds
    t0 = time.perf_counter()
    batches = hudi.HudiTableBuilder.from_base_uri(path).build().read(hudi.HudiReadOptions())
    t = pa.Table.from_batches(batches)
    out["read_rows"], out["read_sum"] = t.num_rows, pc.sum(t["d1"]).as_py()
    out["read_s"] = time.perf_counter() - t0
    out["state_table"] = t.select(["id", "ts"])
    return out


SYSTEMS: dict[str, Callable[[Workload, Path], Result]] = {
    "pyarrow": run_pyarrow,
    "hudi_ds_mor_parquet": _hudi_ds("MERGE_ON_READ", "parquet"),
    "hudi_ds_mor_avro": _hudi_ds("MERGE_ON_READ", "avro"),
    "hudi_ds_cow": _hudi_ds("COPY_ON_WRITE", "parquet"),
    # the non-bucket indexes (issue 14): keys located by reading the files (SIMPLE), pruned by
    # footer bloom filters and key ranges first (BLOOM), or held by the writer (state index)
    "hudi_ds_mor_simple": _hudi_ds("MERGE_ON_READ", "parquet", "SIMPLE"),
    "hudi_ds_mor_bloom": _hudi_ds("MERGE_ON_READ", "parquet", "BLOOM"),
    "hudi_ds_mor_state": _hudi_ds("MERGE_ON_READ", "parquet", "SIMPLE", state=True),
    "hudi_ds_cow_simple": _hudi_ds("COPY_ON_WRITE", "parquet", "SIMPLE"),
    "hudi_ds_cow_bloom": _hudi_ds("COPY_ON_WRITE", "parquet", "BLOOM"),
    "hudi_ds_cow_state": _hudi_ds("COPY_ON_WRITE", "parquet", "SIMPLE", state=True),
}


def run_delta(w: Workload, root: Path) -> Result:
    """delta-rs: ``write_deltalake`` then ``merge`` with the event-time condition."""
    from deltalake import DeltaTable, write_deltalake

    path = str(root / "delta")
    out: Result = {"upsert_s": []}
    base = insert_batch(w)
    t0 = time.perf_counter()
    write_deltalake(path, base, partition_by=["dt"])
    out["insert_s"] = time.perf_counter() - t0
    del base
    for step in upsert_batches(w):
        t0 = time.perf_counter()
        (
            DeltaTable(path)
            .merge(
                source=step.upserts,
                predicate="t.id = s.id AND t.dt = s.dt",
                source_alias="s",
                target_alias="t",
            )
            .when_matched_update_all(predicate="s.ts >= t.ts")
            .when_not_matched_insert_all()
            .execute()
        )
        (
            DeltaTable(path)
            .merge(
                source=step.deletes,
                predicate="t.id = s.id AND t.dt = s.dt",
                source_alias="s",
                target_alias="t",
            )
            .when_matched_delete()
            .execute()
        )
        out["upsert_s"].append(time.perf_counter() - t0)
    out["write_peak_rss_mb"] = _rss_mb()
    t0 = time.perf_counter()
    t = DeltaTable(path).to_pyarrow_table(columns=["id", "ts", "d1"])
    out["read_rows"], out["read_sum"] = t.num_rows, pc.sum(t["d1"]).as_py()
    out["read_s"] = time.perf_counter() - t0
    out["state_table"] = t.select(["id", "ts"])
    t0 = time.perf_counter()
    DeltaTable(path).to_pyarrow_dataset().to_table(filter=pc.field("id").isin(_lookup_keys(w)))
    out["lookup_s"] = time.perf_counter() - t0
    return out


def run_iceberg(w: Workload, root: Path) -> Result:
    """pyiceberg: ``append`` then ``upsert`` on ``id``.

    Semantics differ: pyiceberg's upsert has no ordering condition, so late rows (older ``ts``)
    overwrite newer ones -- the final state is expected NOT to match the event-time reference.
    """
    from pyiceberg.catalog.sql import SqlCatalog
    from pyiceberg.expressions import In

    catalog = SqlCatalog(
        "bench", uri=f"sqlite:///{root}/catalog.db", warehouse=f"file://{root}/warehouse"
    )
    catalog.create_namespace("b")
    out: Result = {"upsert_s": []}
    base = insert_batch(w)
    table = catalog.create_table("b.t", schema=base.schema)
    t0 = time.perf_counter()
    table.append(base)
    out["insert_s"] = time.perf_counter() - t0
    del base
    for step in upsert_batches(w):
        t0 = time.perf_counter()
        table = catalog.load_table("b.t")
        table.upsert(step.upserts, join_cols=["id"])
        table = catalog.load_table("b.t")
        table.delete(delete_filter=In("id", step.deletes["id"].to_pylist()))
        out["upsert_s"].append(time.perf_counter() - t0)
    out["write_peak_rss_mb"] = _rss_mb()
    t0 = time.perf_counter()
    t = catalog.load_table("b.t").scan(selected_fields=("id", "ts", "d1")).to_arrow()
    out["read_rows"], out["read_sum"] = t.num_rows, pc.sum(t["d1"]).as_py()
    out["read_s"] = time.perf_counter() - t0
    out["state_table"] = t.select(["id", "ts"])
    t0 = time.perf_counter()
    catalog.load_table("b.t").scan(row_filter=In("id", _lookup_keys(w))).to_arrow()
    out["lookup_s"] = time.perf_counter() - t0
    return out


SYSTEMS["delta_rs"] = run_delta
SYSTEMS["pyiceberg"] = run_iceberg
SYSTEMS["hudi_rs_read"] = _hudi_rs_read


def _spark():  # type: ignore[no-untyped-def]
    from hudi_ds.spark.session import local_session

    return local_session(
        "hudi_ds-bench",
        **{
            "spark.sql.python.filterPushdown.enabled": "true",
            "spark.driver.memory": "4g",
        },
    )


def _cached(spark, table: pa.Table, parts: int = 2):  # type: ignore[no-untyped-def]
    df = spark.createDataFrame(table).repartition(parts).cache()
    df.count()
    return df


def _spark_runner(fmt: str) -> Callable[[Workload, Path], Result]:
    """Spark on ``local[2]``: ``hudi_py`` upserts, or Spark's own parquet appends (ceiling)."""

    def run(w: Workload, root: Path) -> Result:
        from pyspark.sql import functions as F

        spark = _spark()
        path = str(root / "t")
        opts = {
            "hoodie.table.name": "bench",
            "hoodie.datasource.write.recordkey.field": "id",
            "hoodie.datasource.write.partitionpath.field": "dt",
            "hoodie.datasource.write.precombine.field": "ts",
            "hoodie.bucket.index.num.buckets": "4",
        }
        out: Result = {"upsert_s": []}
        base = _cached(spark, insert_batch(w))
        t0 = time.perf_counter()
        if fmt == "parquet":
            base.write.mode("append").parquet(path)
        else:
            base.write.format("hudi_py").mode("append").options(
                **{**opts, "hoodie.datasource.write.operation": "insert"}
            ).save(path)
        out["insert_s"] = time.perf_counter() - t0
        base.unpersist()
        for step in upsert_batches(w):
            ups = _cached(spark, step.upserts)
            dels = _cached(spark, step.deletes)
            t0 = time.perf_counter()
            if fmt == "parquet":
                ups.write.mode("append").parquet(path)
            else:
                ups.write.format("hudi_py").mode("append").options(**opts).save(path)
                dels.write.format("hudi_py").mode("append").options(
                    **{**opts, "hoodie.datasource.write.operation": "delete"}
                ).save(path)
            out["upsert_s"].append(time.perf_counter() - t0)
            ups.unpersist()
            dels.unpersist()
        out["write_peak_rss_mb"] = _rss_mb()
        reader = (
            spark.read.parquet(path)
            if fmt == "parquet"
            else spark.read.format("hudi_py").load(path)
        )
        t0 = time.perf_counter()
        row = reader.agg(F.count("*").alias("n"), F.sum("d1").alias("s")).collect()[0]
        out["read_s"] = time.perf_counter() - t0
        out["read_rows"], out["read_sum"] = row["n"], row["s"]
        t0 = time.perf_counter()
        reader.filter(F.col("id").isin(_lookup_keys(w))).collect()
        out["lookup_s"] = time.perf_counter() - t0
        if fmt != "parquet":
            out["state_table"] = reader.select("id", "ts").toArrow()
        else:
            out["state"] = None
        spark.stop()
        return out

    return run


SYSTEMS["spark_parquet"] = _spark_runner("parquet")
SYSTEMS["hudi_ds_spark"] = _spark_runner("hudi_py")
