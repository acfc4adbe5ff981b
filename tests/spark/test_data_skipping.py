"""Data skipping through the Spark source: a filter Spark pushes on a non-partition column
plans fewer file slices (the metadata table's column_stats) and returns the same rows as the
unfiltered read filtered with pyarrow (the table: tests/table/test_data_skipping.py)."""

from __future__ import annotations

import pickle
from typing import Any

import pytest
from pyspark.sql.datasource import EqualTo, IsNotNull, IsNull

from hudi_ds.spark.datasource import HudiDataSourceWithPushdown
from hudi_ds.spark.reader import HudiInputPartition, HudiPushdownReader
from hudi_ds.table.table import ReadableTable
from tests.table.test_data_skipping import expected, new_table, rows

pytestmark = pytest.mark.spark


def planned_slices(root: str, filters: list[Any]) -> int:
    ds = HudiDataSourceWithPushdown({"path": root})
    reader = ds.reader(ds.schema())
    assert isinstance(reader, HudiPushdownReader)
    list(reader.pushFilters(filters))
    reader = pickle.loads(pickle.dumps(reader))
    parts = reader.partitions()
    return sum(len(p.slices) for p in parts if isinstance(p, HudiInputPartition))


@pytest.mark.parametrize("table_type", ["MERGE_ON_READ"])
def test_spark_filter_skips_files_and_returns_the_filtered_rows(
    spark: Any, table_type: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    root = str(new_table(table_type, tmp_path_factory))
    full = ReadableTable(root).read()
    df = spark.read.format("hudi_py").load(root)
    got = df.filter(df.v == 455).toArrow()
    assert rows(got) == expected(full, [("v", "=", 455)])
    assert planned_slices(root, []) == 10
    assert planned_slices(root, [EqualTo(("v",), 204)]) == 2
    # key 3's slice: its base file's range excludes 455, its log file holds it
    assert planned_slices(root, [EqualTo(("v",), 455)]) == 1
    # m is NULL in the file groups of the first three batches only
    assert planned_slices(root, [IsNotNull(("m",))]) == 4
    assert planned_slices(root, [IsNull(("m",))]) == 6
