"""``df.write.format("hudi_py")`` into the real Apache Hudi tables of table versions 6, 8 and 9.

The scenario and the independent model of tests/write/fixture_model.py (upsert with updates of
existing keys -- one carrying an older ordering value --, new keys and a new partition; a second
upsert; a delete), run through Spark with the rows spread over two tasks, read back by hudi_ds
and by hudi-rs. Refused fixtures fail ``save()`` and stay byte-for-byte unchanged.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import hudi_ds
from hudi_ds.api import HudiTable
from tests.conftest import hudi_rs_table
from tests.write.fixture_model import (
    REFUSED,
    WRITABLE,
    WRITABLE_1X,
    check_merge_mode,
    check_payload,
    data_row_set,
    read_props,
    scenario,
    tree_hashes,
)
from tests.write.test_fixture_writes import unzip

pytestmark = pytest.mark.spark


def _save(spark: Any, rows: Any, root: Path, options: dict[str, str]) -> None:
    df = spark.createDataFrame(rows).repartition(2)
    df.write.format("hudi_py").mode("append").options(**options).save(str(root))


@pytest.mark.parametrize("name", sorted(WRITABLE))
def test_spark_upsert_and_delete_into_v6_fixture(spark: Any, name: str, tmp_path: Path) -> None:
    fx = WRITABLE[name]
    root = unzip(name, tmp_path)
    check_payload(read_props(root))
    sc = scenario(name, fx, HudiTable(str(root)).read())
    options = dict(fx.options)
    _save(spark, sc.upsert, root, options)
    _save(spark, sc.upsert2, root, options)
    _save(spark, sc.delete, root, {**options, "hoodie.datasource.write.operation": "delete"})
    assert data_row_set(hudi_ds.read(str(root))) == sc.expected
    assert data_row_set(hudi_rs_table(str(root))) == sc.expected


#: one Hudi 1.0 and one Hudi 1.1 table of each table type (no metadata table)
SPARK_1X = (
    "cow_v8_complexkeygen_hivestyle",
    "mor_avro_v8_trips_8i1u",
    "cow_v9_txns_simple_nometa",
    "mor_avro_v9_txns_complex_nometa",
)


@pytest.mark.parametrize("name", SPARK_1X)
def test_spark_upsert_and_delete_into_1x_fixture(spark: Any, name: str, tmp_path: Path) -> None:
    """Table versions 8 and 9 through Spark: the event-time model (the late update loses),
    read back by hudi_ds and hudi-rs; the table stays at its version."""
    fx = WRITABLE_1X[name]
    root = unzip(name, tmp_path)
    before = read_props(root)
    check_merge_mode(before, fx)
    sc = scenario(name, fx, HudiTable(str(root)).read())
    options = dict(fx.options)
    _save(spark, sc.upsert, root, options)
    _save(spark, sc.upsert2, root, options)
    _save(spark, sc.delete, root, {**options, "hoodie.datasource.write.operation": "delete"})
    assert data_row_set(hudi_ds.read(str(root))) == sc.expected
    assert data_row_set(hudi_rs_table(str(root))) == sc.expected
    assert read_props(root)["hoodie.table.version"] == before["hoodie.table.version"]


def test_spark_refuses_lance_table_unchanged(spark: Any, tmp_path: Path) -> None:
    root = unzip("mor_avro_v9_trips_lance", tmp_path)
    before = tree_hashes(root)
    data = pa.table({"uuid": ["x"], "ts": [1], "city": ["c"]})
    with pytest.raises(Exception, match="LANCE base files.*pylance"):
        _save(spark, data, root, {})
    assert tree_hashes(root) == before


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_spark_refused_v6_fixture_stays_unchanged(spark: Any, name: str, tmp_path: Path) -> None:
    match, options = REFUSED[name]
    root = unzip(name, tmp_path)
    before = tree_hashes(root)
    rows = hudi_ds.read(str(root))
    data = rows.drop_columns([c for c in rows.column_names if c.startswith("_hoodie_")])
    with pytest.raises(Exception, match=match):
        _save(spark, data.slice(0, 2), root, options)
    assert tree_hashes(root) == before


def test_cluster_by_bucket_refuses_non_bucket_table(spark: Any, tmp_path: Path) -> None:
    from hudi_ds.errors import ConfigError
    from hudi_ds.spark import cluster_by_bucket

    root = unzip("cow_v6_simplekeygen_nonhivestyle", tmp_path)
    df = spark.createDataFrame(hudi_ds.read(str(root)).select(["id", "byteField"]))
    with pytest.raises(ConfigError, match="bucket-index tables.*uses the SIMPLE index"):
        cluster_by_bucket(df, {}, path=str(root))


def test_spark_bucket_pruning_only_for_bucket_tables(tmp_path: Path) -> None:
    """A read option naming a bucket count prunes nothing on a table hudi_ds created with
    another index (its fileIds are no buckets)."""
    import pyarrow as pa

    from hudi_ds.spark.reader import bucket_config
    from hudi_ds.table.table import ReadableTable

    rows = pa.table({"id": list(range(10)), "ts": [1] * 10})
    base = {"hoodie.table.name": "t", "hoodie.datasource.write.recordkey.field": "id"}
    hudi_ds.write(str(tmp_path / "s"), rows, {**base, "hoodie.index.type": "SIMPLE"})
    hudi_ds.write(str(tmp_path / "b"), rows, {**base, "hoodie.bucket.index.num.buckets": "4"})
    asked = {"hoodie.bucket.index.num.buckets": "4"}
    assert bucket_config(ReadableTable(str(tmp_path / "s")), asked) is None
    assert bucket_config(ReadableTable(str(tmp_path / "b")), asked) == (4, ["id"])
