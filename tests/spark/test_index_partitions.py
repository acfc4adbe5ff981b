"""The metadata table's index partitions -- bloom_filters, the global record index, Hudi 1.1's
partitioned record index and secondary indexes -- kept in step by writes through
``df.write.format("hudi_py")`` (rows spread over two Spark tasks), then by a compaction (MOR)
and a clean: each partition equals its recomputation from the table's files (the recomputation
helpers of tests/metadata, which has the embedded paths, the crash points and the other
services), the rows are the model's and hudi-rs reads the table.

Which partitions exist where: bloom_filters and the global record index on table versions 6
and 9; the partitioned record index and secondary indexes on version 9 only (Hudi 1.x; a
secondary index is defined by Apache Hudi's ``CREATE INDEX``, so those cases start from Hudi
1.1 fixtures that have one)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import hudi_ds
from hudi_ds.metadata.bloom_filters import BLOOM_FILTERS_PARTITION
from hudi_ds.metadata.record_index import RECORD_INDEX_PARTITION
from hudi_ds.metadata.records import declared_partitions
from hudi_ds.services import ServiceContext, clean, compaction
from hudi_ds.storage import Storage
from hudi_ds.table_config import TableConfig
from tests.builders import apply
from tests.conftest import assert_rows, hudi_rs_table, table_options
from tests.metadata.si_support import assert_secondary_indexes_true, secondary_partitions
from tests.metadata.test_bloom_filters import BLOOM, assert_bloom_in_step
from tests.metadata.test_partitioned_record_index import (
    _apply as apply_pairs,
)
from tests.metadata.test_partitioned_record_index import (
    _rows as pair_rows,
)
from tests.metadata.test_partitioned_record_index import (
    assert_index_in_step,
)
from tests.metadata.test_partitioned_record_index import (
    check_rows as check_pair_rows,
)
from tests.metadata.test_record_index import assert_index_true
from tests.metadata.test_writer import assert_in_step, batch, check_rows
from tests.write.fixture_model import data_row_set
from tests.write.test_fixture_writes import unzip

pytestmark = pytest.mark.spark

_SERVICES = {
    "hoodie.clean.automatic": "false",
    "hoodie.cleaner.commits.retained": "1",
    "hoodie.metadata.compact.max.delta.commits": "2",  # the MDT compacted on the second write
}


def _save(spark: Any, rows: pa.Table, root: Path, options: dict[str, str]) -> None:
    df = spark.createDataFrame(rows).repartition(2)
    df.write.format("hudi_py").mode("append").options(**options).save(str(root))


def _services(root: Path, options: dict[str, str], mor: bool) -> None:
    """A compaction of every file group with logs (MOR), then a clean of the older slices."""
    if mor:
        ctx = ServiceContext.open(str(root), options)
        assert compaction.schedule_compaction(ctx) is not None
        compaction.run_compaction(ServiceContext.open(str(root), options))
    assert clean.clean(ServiceContext.open(str(root), options)) is not None


@dataclass(frozen=True)
class _Case:
    """A new table: ``partitions`` its MDT declares, its write options and its in-step check."""

    table_type: str
    version: int
    options: dict[str, str]
    partitions: tuple[str, ...]
    check: Callable[[Path, dict], None]
    pairs: bool = False  # the model keyed by (partition, key): the partitioned record index
    extra: dict[str, str] = field(default_factory=dict)


def _global_index(root: Path, model: dict) -> None:
    assert_bloom_in_step(root)
    stored = assert_index_true(root)
    assert sorted(stored) == sorted(model)
    check_rows(root, model)


def _partitioned_index(root: Path, model: dict) -> None:
    assert_index_in_step(root, model)  # files partition in step too
    if BLOOM_FILTERS_PARTITION in declared_partitions(TableConfig.load(Storage(str(root)))):
        assert_bloom_in_step(root)
    check_pair_rows(root, model)


def _global(table_type: str, version: int) -> _Case:
    opts = {
        **table_options("idx", partition="p", table_type=table_type, buckets=None),
        "hoodie.metadata.enable": "true",
        "hoodie.metadata.record.index.enable": "true",
        # hudi_ds's global index stands for Java's RECORD_INDEX: keys unique across partitions
        "hoodie.index.type": "GLOBAL_SIMPLE",
        "hoodie.write.table.version": str(version),
        **BLOOM,
        **_SERVICES,
    }
    parts = (BLOOM_FILTERS_PARTITION, RECORD_INDEX_PARTITION)
    return _Case(table_type, version, opts, parts, _global_index)


def _partitioned(table_type: str, bloom: bool) -> _Case:
    opts = {
        **table_options("prli", partition="p", table_type=table_type, buckets=None),
        "hoodie.write.table.version": "9",
        "hoodie.metadata.enable": "true",
        "hoodie.metadata.record.level.index.enable": "true",
        "hoodie.index.type": "RECORD_LEVEL_INDEX",
        **(BLOOM if bloom else {}),
        **_SERVICES,
    }
    parts = (RECORD_INDEX_PARTITION, *((BLOOM_FILTERS_PARTITION,) if bloom else ()))
    return _Case(table_type, 9, opts, parts, _partitioned_index, pairs=True)


CASES = {
    "global-bloom-cow-v6": _global("COPY_ON_WRITE", 6),
    "global-bloom-mor-v9": _global("MERGE_ON_READ", 9),
    "partitioned-bloom-cow-v9": _partitioned("COPY_ON_WRITE", bloom=True),
    "partitioned-mor-v9": _partitioned("MERGE_ON_READ", bloom=False),
}


@pytest.mark.parametrize("name", list(CASES))
def test_new_table_index_partitions_in_step(spark: Any, name: str, tmp_path: Path) -> None:
    """Two Spark upserts (updates in place, new keys; the MDT compacted on the second), a
    compaction (MOR) and a clean: the index partitions stay declared and equal to their
    recomputation after the writes and after the services."""
    case = CASES[name]
    root = tmp_path / "t"
    model: dict = {}
    for k in (1, 2):
        if case.pairs:  # every key in two partitions, and a third partition on the second
            keys = [f"k{i}" for i in range(4 * k)]
            t = pair_rows(keys * 2, ["p0"] * len(keys) + [f"p{k}"] * len(keys), k)
            model = apply_pairs(model, t)
        else:
            t = batch(k)
            model = apply(model, t)
        _save(spark, t, root, case.options)
    declared = declared_partitions(TableConfig.load(Storage(str(root))))
    assert set(case.partitions) <= set(declared), declared
    case.check(root, model)
    _services(root, case.options, case.table_type == "MERGE_ON_READ")
    case.check(root, model)
    assert_in_step(root)


@pytest.mark.parametrize("fixture", ["cow_v9_txns_simple_meta", "mor_avro_v9_txns_simple_meta"])
def test_fixture_secondary_indexes_in_step(spark: Any, fixture: str, tmp_path: Path) -> None:
    """Java's secondary indexes through a Spark upsert (indexed values changed, one set null,
    a new key), a compaction (MOR) and a clean: every index equals its recomputation."""
    root = unzip(fixture, tmp_path)
    indexes = secondary_partitions(root)
    assert indexes
    rows = hudi_ds.read(str(root))
    data = rows.drop_columns([c for c in rows.column_names if c.startswith("_hoodie_")])
    cfg = TableConfig.load(Storage(str(root)))
    key = cfg.record_key_fields[0]
    changed = data.slice(0, 3)
    i = changed.schema.get_field_index("merchant_name")
    changed = changed.set_column(
        i, "merchant_name", pa.array(["Spark $1", None, "Spark \\2"], pa.string())
    )
    keys = changed.column(key).to_pylist()
    changed = changed.set_column(
        changed.schema.get_field_index(key), key, pa.array([keys[0], keys[1], "NEW-SPARK-1"])
    )
    opts = {"hoodie.table.name": cfg.get("hoodie.table.name") or "", **_SERVICES}
    _save(spark, changed, root, opts)
    assert_secondary_indexes_true(root)
    kept = data.filter(pc.invert(pc.is_in(data[key], pa.array(keys[:2]))))
    expected = data_row_set(pa.concat_tables([kept, changed]))
    cols = data.column_names
    assert data_row_set(hudi_ds.read(str(root), columns=cols)) == expected
    _services(root, opts, fixture.startswith("mor"))
    assert secondary_partitions(root) == indexes
    assert_secondary_indexes_true(root)
    assert_in_step(root)
    assert data_row_set(hudi_ds.read(str(root), columns=cols)) == expected
    for md in ("true", "false"):
        got = hudi_rs_table(str(root), {"hoodie.metadata.enable": md}).select(cols)
        assert data_row_set(got) == expected


def test_streaming_sink_keeps_the_partitioned_index_and_bloom_filters(
    spark: Any, tmp_path: Path
) -> None:
    """Two micro-batches of a Structured Streaming query (updates of the first's keys, new
    keys) into a MOR table with the partitioned record index and bloom filters: both equal
    their recomputation, and the rows are the model's."""
    from tests.spark.test_streaming import SCHEMA, events, source_dir

    tables = [events(range(0, 40), 10), events(range(20, 60), 20)]
    src = source_dir(tmp_path / "src", tables)
    root = tmp_path / "t"
    opts = {
        **table_options("s", partition="part", table_type="MERGE_ON_READ", buckets=None),
        "hoodie.write.table.version": "9",
        "hoodie.metadata.enable": "true",
        "hoodie.metadata.record.level.index.enable": "true",
        "hoodie.index.type": "RECORD_LEVEL_INDEX",
        **BLOOM,
    }
    q = (
        spark.readStream.schema(SCHEMA)
        .option("maxFilesPerTrigger", 1)
        .parquet(src)
        .repartition(2)
        .writeStream.format("hudi_py")
        .options(**opts)
        .option("checkpointLocation", str(tmp_path / "ck"))
        .trigger(availableNow=True)
        .start(str(root))
    )
    q.awaitTermination()
    model: dict = {}
    for t in tables:
        for r in t.to_pylist():
            old = model.get((r["part"], r["id"]))
            if old is None or r["ts"] >= old[1]:
                model[(r["part"], r["id"])] = (r["id"], r["ts"], r["part"], r["v"])
    assert_index_in_step(root, model)
    assert_bloom_in_step(root)
    cols = ["id", "ts", "part", "v"]
    assert_rows(hudi_ds.read(str(root), columns=cols), list(model.values()), cols, ["part", "id"])
    got = hudi_rs_table(str(root), {"hoodie.metadata.enable": "true"})
    assert_rows(got, list(model.values()), cols, ["part", "id"])
