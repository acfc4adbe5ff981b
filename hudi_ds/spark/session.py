"""A local SparkSession for examples, benchmarks and scripts, with ``hudi_py`` registered."""

from __future__ import annotations

import os
import sys
from typing import Any

from pyspark.sql import SparkSession

from hudi_ds.spark import register


def local_session(app: str, master: str = "local[2]", **conf: str) -> Any:
    """A ``SparkSession`` on this machine: UI off, loopback networking, UTC, ``hudi_py`` ready.

    Args:
        app: the application name.
        master: the Spark master (default ``local[2]``).
        conf: extra Spark settings (``spark.driver.memory="4g"`` ...).
    """
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = (
        SparkSession.builder.master(master)
        .appName(app)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.session.timeZone", "UTC")
    )
    for key, value in conf.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)
    return spark
