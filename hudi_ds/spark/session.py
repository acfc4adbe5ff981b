"""A local SparkSession for examples, benchmarks, notebooks and scripts, with ``hudi_py``
registered (docs/spark.md, "Start from a plain SparkSession").

::

    from hudi_ds.spark.session import local_session
    spark = local_session("my-app", **{"spark.driver.memory": "4g"})
    spark.read.format("hudi_py").load(path).show()
"""

from __future__ import annotations

import os
import sys
from typing import Any

from pyspark.sql import SparkSession

from hudi_ds.spark import register


def local_session(app: str, master: str = "local[2]", **conf: str) -> Any:
    """A ``SparkSession`` on this machine: UI off, loopback networking, UTC, ``hudi_py`` ready.

    Spark's Python workers run ``PYSPARK_PYTHON``; unless it is set already it is set to this
    interpreter (the one that imports hudi_ds), so the workers import the same hudi_ds as the
    driver. The session also binds driver and UI to 127.0.0.1, turns the UI and the console
    progress bar off, uses two shuffle partitions and the UTC session time zone, sets the log
    level to ERROR, and calls :func:`hudi_ds.spark.register` (which checks the workers once).
    ``getOrCreate`` semantics: an active session is returned (with ``conf`` applied to it where
    Spark allows).

    Args:
        app: the application name.
        master: the Spark master (default ``local[2]``).
        conf: extra Spark settings (``spark.driver.memory="4g"`` ...).

    Returns:
        The ``SparkSession``.

    Raises:
        SparkSetupError: the Python workers cannot import hudi_ds (``PYSPARK_PYTHON`` was set
            to another interpreter before the call).
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
