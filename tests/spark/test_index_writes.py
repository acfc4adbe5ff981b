"""Spark writes under a non-bucket index: a new key in two Spark partitions of one write.

Spark's Python data source cannot shuffle the input by key, so each Spark task tags its own
rows; the tasks route new keys to insert slots by a hash of the key (see
``hudi_ds.write.assigner.INSERT_SLOTS``), and the table holds every key once, its winning
version, read back by Spark, ``hudi_ds.read`` and hudi-rs.
"""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path
from typing import Any

import hudi
import pyarrow as pa
import pytest

import hudi_ds
from hudi_ds.index.consistent_hashing import key_hashes
from tests.builders import trips
from tests.conftest import assert_rows, hudi_rs_table, table_options

pytestmark = pytest.mark.spark

COLS = ["id", "ts", "city", "fare"]


_rows = partial(trips, key="k{:03d}")


def _model(model: dict[str, tuple], t: pa.Table) -> None:
    for r in t.to_pylist():
        old = model.get(r["id"])
        if old is None or r["ts"] >= old[1]:
            model[r["id"]] = tuple(r[c] for c in COLS)


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_duplicate_new_key_in_two_spark_partitions_is_written_once(
    spark: Any, tmp_path: Path, table_type: str
) -> None:
    path = str(tmp_path / "t")
    opts = {
        **table_options("t", partition="city", buckets=None, table_type=table_type),
        "hoodie.index.type": "SIMPLE",
    }
    model: dict[str, tuple] = {}
    first = _rows(list(range(6)), 5)
    hudi_ds.write(path, first, opts)
    _model(model, first)
    # Spark partition 0 and 1 both hold the new keys 100..105 (partition 0 wins for even
    # keys, 1 for odd ones), an existing key, and keys of their own
    p0 = pa.concat_tables(
        [_rows([100, 102, 104], 9), _rows([101, 103, 105], 2), _rows([1], 6), _rows([200], 5)]
    )
    p1 = pa.concat_tables(
        [_rows([100, 102, 104], 3), _rows([101, 103, 105], 8), _rows([1], 7), _rows([201], 5)]
    )
    # two Spark partitions holding exactly p0 and p1 (parallelize slices a list evenly)
    assert p0.num_rows == p1.num_rows
    rdd = spark.sparkContext.parallelize(
        [tuple(r[c] for c in COLS) for r in (*p0.to_pylist(), *p1.to_pylist())], 2
    )
    df = spark.createDataFrame(rdd, "id string, ts long, city string, fare double")
    placed = df.rdd.glom().map(lambda rows: sorted(r["id"] for r in rows)).collect()
    assert placed == [sorted(p0.column("id").to_pylist()), sorted(p1.column("id").to_pylist())]
    df.write.format("hudi_py").mode("append").options(**opts).save(path)
    _model(model, pa.concat_tables([p0, p1]))
    want = list(model.values())
    assert_rows(hudi_ds.read(path, columns=COLS), want, COLS)
    batches = hudi.HudiTableBuilder.from_base_uri(path).build().read(hudi.HudiReadOptions())
    assert_rows(pa.Table.from_batches(batches).select(COLS), want, COLS)
    assert_rows(spark.read.format("hudi_py").load(path).select(*COLS).toArrow(), want, COLS)


def test_batch_write_with_partition_bucket_rules(spark: Any, tmp_path: Path) -> None:
    """A Spark batch write creating a table with partition-level bucket rules: each partition
    gets its rule's file groups; ``cluster_by_bucket`` puts each (partition, bucket) of the
    per-partition counts in one task, so each file group gets one file (upserts of such a
    table: tests/index/test_partition_bucket.py)."""
    from hudi_ds.spark import cluster_by_bucket

    path = str(tmp_path / "t")
    opts = {
        **table_options("t", partition="city", buckets=2, table_type="MERGE_ON_READ"),
        "hoodie.bucket.index.partition.expressions": "^sf$,5;^nyc$,3",
    }
    model: dict[str, tuple] = {}
    rows = _rows(list(range(60)), 1)
    df = spark.createDataFrame(
        [tuple(r[c] for c in COLS) for r in rows.to_pylist()],
        "id string, ts long, city string, fare double",
    ).repartition(3)
    clustered = cluster_by_bucket(df, opts, 4, path)
    clustered.write.format("hudi_py").mode("append").options(**opts).save(path)
    _model(model, rows)
    t = hudi_ds.HudiTable(path)
    counts = {"sf": 5, "nyc": 3}
    for s in t.file_slices():
        assert int(s.file_id[:8]) < counts.get(s.partition_path, 2), s
        assert len(s.log_files) + (s.base_file is not None) == 1  # one task per file group
    by_part: dict[str, set[str]] = {}
    for s in t.file_slices():
        by_part.setdefault(s.partition_path, set()).add(s.file_id[:8])
    assert {p: len(v) for p, v in by_part.items() if p in counts} == counts
    want = list(model.values())
    assert_rows(hudi_ds.read(path, columns=COLS), want, COLS)
    batches = hudi.HudiTableBuilder.from_base_uri(path).build().read(hudi.HudiReadOptions())
    assert_rows(pa.Table.from_batches(batches).select(COLS), want, COLS)


def committed_rings(path: str) -> dict[str, list[tuple[int, str]]]:
    """Each partition's latest committed ring as ``(value, file id)`` nodes, read from the
    ``.hashing_meta`` JSON itself; checks it covers the hash space without gaps or overlaps."""
    root = Path(path, ".hoodie/.bucket_index/consistent_hashing_metadata")
    rings = {}
    for folder in {f.parent for f in root.rglob("*.hashing_meta")}:
        latest = max(f.name.split(".")[0] for f in folder.glob("*.commit"))
        doc = json.loads((folder / f"{latest}.hashing_meta").read_text())
        nodes = [(n["value"], n["fileIdPrefix"] + "-0") for n in doc["nodes"]]
        values = [v for v, _ in nodes]
        assert values == sorted(set(values)) and values[0] >= 0 and values[-1] == 0x7FFFFFFF
        assert len({f for _, f in nodes}) == len(nodes)
        assert {n["tag"] for n in doc["nodes"]} == {"NORMAL"}
        rings[doc["partitionPath"]] = nodes
    return rings


def node_of(rings: dict[str, list[tuple[int, str]]], key: str, part: str) -> str:
    h = int(key_hashes(pa.array([key]), [])[0]) & 0x7FFFFFFF
    nodes = rings[part]
    return next((f for v, f in nodes if h <= v), nodes[0][1])


def test_cluster_by_bucket_routes_by_the_consistent_ring(spark: Any, tmp_path: Path) -> None:
    """A consistent-hashing table whose rings were resized: ``cluster_by_bucket`` puts each
    node of the committed rings in one Spark task, and the write through it leaves one new
    file per file group (the writer routes as the grouping did) and the table equal to the
    model."""
    from pyspark.sql.functions import spark_partition_id

    from hudi_ds.services import ServiceContext, clustering
    from hudi_ds.spark import cluster_by_bucket

    path = str(tmp_path / "t")
    opts = {
        **table_options("t", partition="city", table_type="MERGE_ON_READ"),
        "hoodie.index.bucket.engine": "CONSISTENT_HASHING",
    }
    first = _rows(list(range(120)), 1)
    hudi_ds.write(path, first, opts)
    resize = {**opts, "hoodie.parquet.max.file.size": "2000"}
    ctx = ServiceContext.open(path, resize)
    assert clustering.schedule_clustering(ctx) is not None
    clustering.run_clustering(ServiceContext.open(path, resize))
    rings = committed_rings(path)
    assert max(len(n) for n in rings.values()) > 2  # some nodes were split

    second = _rows(list(range(60, 200)), 2)
    df = spark.createDataFrame(
        [tuple(r[c] for c in COLS) for r in second.to_pylist()],
        "id string, ts long, city string, fare double",
    ).repartition(3)  # round robin: nodes spread over every task
    clustered = cluster_by_bucket(df, opts, 4, path)
    placed = clustered.select("id", "city", spark_partition_id().alias("task")).toArrow()
    tasks: dict[str, set[int]] = {}
    for r in placed.to_pylist():
        tasks.setdefault(node_of(rings, r["id"], r["city"]), set()).add(r["task"])
    assert sorted(placed["id"].to_pylist()) == sorted(second["id"].to_pylist())
    assert all(len(t) == 1 for t in tasks.values()), tasks
    assert len({t for ts in tasks.values() for t in ts}) > 1
    assert len(tasks) > 6  # resized nodes among them

    clustered.write.format("hudi_py").mode("append").options(**opts).save(path)
    timeline = hudi_ds.HudiTable(path).timeline
    stats = timeline.read_commit_metadata(timeline.commits()[-1]).partition_to_write_stats
    per_group: dict[str, int] = {}
    for p_stats in stats.values():
        for st in p_stats:
            per_group[st.file_id] = per_group.get(st.file_id, 0) + 1
    assert per_group and set(per_group.values()) == {1}, per_group
    assert set(per_group) <= {f for nodes in rings.values() for _, f in nodes}
    model: dict[str, tuple] = {}
    _model(model, first)
    _model(model, second)
    want = list(model.values())
    assert_rows(hudi_ds.read(path, columns=COLS), want, COLS)
    assert_rows(hudi_rs_table(path).select(COLS), want, COLS)
