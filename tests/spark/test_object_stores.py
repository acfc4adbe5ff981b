"""``format("hudi_py")`` on object stores: the session's local S3 server (moto) and its local
Azure Blob server (Azurite). The storage options go as data source options, the executors write
to the store directly; the table is read back by Spark, by hudi_ds and by hudi-rs."""

from __future__ import annotations

from typing import Any

import pytest

import hudi_ds
from tests.builders import options
from tests.conftest import assert_rows, hudi_rs_table, object_store_table

pytestmark = pytest.mark.spark

COLS = ["id", "p", "ts", "v"]


@pytest.mark.parametrize("store", ["s3", "azure"])
def test_spark_batch_write_to_an_object_store(
    spark: Any, store: str, request: pytest.FixtureRequest
) -> None:
    uri, so = object_store_table(request, store)
    opts = options(f"{store}_spark", "MERGE_ON_READ", partition="p")
    rows = [(f"k{i}", f"p{i % 2}", 1, float(i)) for i in range(8)]
    df = spark.createDataFrame(rows, "id string, p string, ts long, v double").repartition(2)
    df.write.format("hudi_py").mode("append").options(**opts, **so).save(uri)
    update = [("k1", "p1", 2, 100.0), ("k9", "p1", 2, 9.0)]
    spark.createDataFrame(update, "id string, p string, ts long, v double").write.format(
        "hudi_py"
    ).mode("append").options(**opts, **{f"hudi_py.storage.{k}": v for k, v in so.items()}).save(uri)
    want = {r[0]: r for r in rows}
    want.update({r[0]: r for r in update})
    back = spark.read.format("hudi_py").options(**so).load(uri).select(*COLS).toArrow()
    assert_rows(back, list(want.values()), COLS)
    assert_rows(hudi_ds.read(uri, storage_options=so), list(want.values()), COLS)
    assert_rows(hudi_rs_table(uri, storage_options=so), list(want.values()), COLS)
