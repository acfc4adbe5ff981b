"""One SparkSession for the whole Spark suite (startup costs 7-14 s; the first Python data
source query another 5-12 s)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from typing import Any

import pytest

pyspark = pytest.importorskip("pyspark")


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A ``local[2,2]`` session (2 cores; a failed task is retried once) with ``hudi_py``, its
    JVM tuned for tiny jobs (``standalone.JVM_OPTS``)."""
    from pyspark.sql import SparkSession

    from hudi_ds.spark import register
    from tests.spark.standalone import JVM_OPTS

    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    warehouse = tmp_path_factory.mktemp("warehouse")
    session = (
        SparkSession.builder.master("local[2,2]")
        .appName("hudi_ds-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.default.parallelism", "2")
        .config("spark.sql.adaptive.enabled", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.python.filterPushdown.enabled", "true")
        .config("spark.sql.warehouse.dir", str(warehouse))
        .config("spark.driver.memory", "1g")
        # C1 only, serial GC, as the cluster's JVMs (tests/spark/standalone.py): the session's
        # queries are tiny, C2 compilations only burn CPU (tests/spark/test_read.py: 114 -> 77
        # s CPU, JVM included; tests/spark/test_matrix.py: 145 -> 117 s)
        .config("spark.driver.extraJavaOptions", JVM_OPTS)
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("FATAL")
    register(session)
    yield session
    session.stop()
