"""The metadata table's column_stats and partition_stats written through the Spark data
source: built for a new version 9 table that asks for them or leaves the options unset (Hudi
1.x's default), kept equal to the records
recomputed from its files by the driver's commit (tests/metadata/test_column_stats.py has
the embedded paths and the services)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from hudi_ds.metadata.records import declared_partitions
from hudi_ds.storage import Storage
from hudi_ds.table_config import TableConfig
from tests.metadata.test_column_stats import _BUILD, _in_step
from tests.metadata.test_writer import batch
from tests.metadata.test_writer import options as writer_options

pytestmark = pytest.mark.spark


@pytest.mark.parametrize(
    ("table_type", "asked"), [("COPY_ON_WRITE", _BUILD), ("MERGE_ON_READ", {})]
)
def test_spark_writes_keep_the_stats_partitions(
    spark: Any, table_type: str, asked: dict[str, str], tmp_path: Path
) -> None:
    root = tmp_path / "t"
    opts = writer_options(table_type, 9, bucket=True, **asked)
    for k in (1, 2, 3):
        df = spark.createDataFrame(batch(k)).repartition(2)
        df.write.format("hudi_py").mode("append").options(**opts).save(str(root))
    declared = declared_partitions(TableConfig.load(Storage(str(root))))
    assert declared == ["column_stats", "files", "partition_stats"]
    _in_step(root)
