"""The ``hudi_py`` Spark data source (the only package of hudi_ds that imports pyspark).

::

    from hudi_ds.spark import register, cluster_by_bucket, HudiTable, sql
    register(spark)        # checks once that Spark's Python workers can import hudi_ds
    cluster_by_bucket(df, opts).write.format("hudi_py").mode("append").options(**opts).save(path)
    spark.read.format("hudi_py").load(path)
    read_table(spark, path)  # plain Parquet file slices read by Spark's own reader
    HudiTable.forPath(spark, path).merge(src, "t.id = s.id").whenMatchedUpdateAll().execute()
    sql(spark, "DELETE FROM hudi_py.`/path` WHERE fare < 5")

Installing hudi_ds also installs the top-level module ``pyspark_hudi_py``, which pyspark finds
and registers by itself (without filter pushdown) in sessions whose Python workers can import it.
"""

from __future__ import annotations

from typing import Any

try:
    import pyspark  # noqa: F401
except ImportError as e:
    raise ImportError(
        "hudi_ds.spark needs pyspark >= 4.0, which is not installed: "
        'pip install "pyspark[sql]>=4.0" (the embedded API, hudi_ds.read / hudi_ds.write, '
        "works without it)",
        name="pyspark",
    ) from e

from hudi_ds.spark import preflight
from hudi_ds.spark.cluster import cluster_by_bucket
from hudi_ds.spark.datasource import (
    NAME,
    HudiDataSource,
    HudiDataSourceWithPushdown,
)
from hudi_ds.spark.direct import read_table
from hudi_ds.spark.dml import HudiTable, MergeBuilder
from hudi_ds.spark.dml_sql import sql
from hudi_ds.spark.worker_errors import hudi_error_of, hudi_errors

PUSHDOWN_CONF = "spark.sql.python.filterPushdown.enabled"


def register(
    spark: Any, filter_pushdown: bool | None = None, *, check_workers: bool = True
) -> type[HudiDataSource]:
    """Register the ``hudi_py`` format in a SparkSession, after checking that Spark's Python
    workers can run hudi_ds.

    The check (:func:`hudi_ds.spark.preflight.check_workers`) runs one tiny job -- one Python
    task that imports hudi_ds -- the first time a SparkContext (on Spark Connect: a session)
    is registered, and remembers a pass, so later calls cost nothing. Spark Connect sessions
    (``SparkSession.builder.remote(...)``) are registered the same way; the server's workers
    are probed.

    Args:
        spark: the ``SparkSession`` (registration is per session), classic or Spark Connect.
        filter_pushdown: prune partitions and buckets with Spark's filters. Off by default
            (``None``/``False``): pyspark 4.3 reuses the pushed filters of one query for later
            queries of the same DataFrame, which drops rows. ``True`` turns it on (and sets
            ``spark.sql.python.filterPushdown.enabled``); then build a fresh DataFrame
            (``spark.read.format("hudi_py").load(path)``) for every query.
        check_workers: run the workers check (default). ``False`` skips it, for sessions
            whose workers are known to be set up.

    Returns:
        The registered class.

    Raises:
        SparkSetupError: the workers cannot import hudi_ds, or import another version (the
            message says what to set: ``PYSPARK_PYTHON`` / ``spark.pyspark.python``,
            ``--archives``, ``spark.submit.pyFiles``). Nothing is registered.
        UnsupportedError: the session has no Python Data Source API (pyspark < 4.0).
    """
    preflight.require_data_source_api(spark)
    if check_workers:
        preflight.check_workers(spark)
    enabled = str(spark.conf.get(PUSHDOWN_CONF, "false")).strip().lower() == "true"
    if filter_pushdown is None:
        # off unless asked for: in pyspark 4.3 a DataFrame that ran one filtered query keeps
        # that query's pushed filters for its later queries (wrong results), see docs/spark.md
        filter_pushdown = False
    elif filter_pushdown and not enabled:
        spark.conf.set(PUSHDOWN_CONF, "true")
    cls = HudiDataSourceWithPushdown if filter_pushdown else HudiDataSource
    spark.dataSource.register(cls)
    return cls


__all__ = [
    "NAME",
    "HudiDataSource",
    "HudiDataSourceWithPushdown",
    "HudiTable",
    "MergeBuilder",
    "cluster_by_bucket",
    "hudi_error_of",
    "hudi_errors",
    "read_table",
    "register",
    "sql",
]
