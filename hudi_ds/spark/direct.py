"""Spark reads at Spark's speed: plain Parquet file slices through Spark's own Parquet reader.

::

    from hudi_ds.spark import read_table
    df = read_table(spark, path)                                    # latest snapshot
    df = read_table(spark, path, {"hoodie.datasource.query.type": "read_optimized"})
    df = read_table(spark, path, columns=["id", "fare"], filters=[("city", "=", "sf")])
    HudiTable.forPath(spark, path).toDF()                           # the same read

``spark.read.format("hudi_py")`` hands every row to Spark from a Python worker as Arrow, even
the rows of file slices that are plain Parquet files. :func:`read_table` plans the read on the
driver with the same planner (query type, incremental range, time travel, partition and bucket
pruning, data skipping by the filters), then splits the slices
(:func:`hudi_ds.engine.split_direct`):

* slices that are only a Parquet base file -- every slice of a COW table, a read-optimized
  query, compacted MOR slices -- are read by ``spark.read.schema(table schema).parquet(...)``
  (column pruning, filter pushdown, vectorised decoding), with the rows flagged
  ``_hoodie_is_deleted`` dropped and, for an incremental query, only the rows of its commits;
* the other slices (with log files, Lance base files, files written with an older schema
  Spark's reader might not promote) are read by the ``hudi_py`` source, restricted to their
  file groups by an internal option (``hudi_py.internal.read.slices``, refused from users
  here) that also pins the instants this plan saw,

and the result is the ``unionByName`` of the two: the rows, schema, column order and meta
columns of ``spark.read.format("hudi_py").load(path)``.

The DataFrame shows the table as planned when :func:`read_table` ran (its Parquet files are
fixed then, and the ``hudi_py`` part, planned again when a query runs, sees the same
instants): call it again to see later commits.

Object stores: Spark's Parquet reader opens ``s3://`` / ``gs://`` / ``abfs://`` paths only
with the session's Hadoop file system configured for them (S3A, GCS connector, ABFS), which
hudi_ds cannot know; a table outside the local file system is therefore read entirely by the
Python tasks (as ``hudi_py`` reads it), unless ``hudi_py.read.direct.object.store=true`` says
the session can open the table's URIs.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from hudi_ds.config import Options, ReadConfig
from hudi_ds.engine import (
    COMMIT_TIME_METADATA_FIELD,
    DirectSplit,
    FileSlice,
    ReadableTable,
    ReadPlan,
    normalize_filters,
    prune_buckets,
    pruning_filters,
    split_direct,
)
from hudi_ds.errors import ConfigError
from hudi_ds.spark import options as opt
from hudi_ds.spark.options import SOURCE_NAME, SliceRestriction, SparkConfig
from hudi_ds.spark.reader import READ_KEYS, validate_read_options
from hudi_ds.spark.types import arrow_to_spark_schema

log = logging.getLogger("hudi_ds.spark.direct")

HudiFilter = tuple[str, str, Any]

#: characters Spark's file source reads as a glob pattern (``SparkHadoopUtil.isGlobPath``) or
#: that Hadoop's ``Path`` refuses in a file name: such base files are read through hudi_py
_UNSAFE_PATH_CHARS = frozenset("{}[]*?\\:")


def read_table(
    spark: SparkSession,
    path: str,
    options: Mapping[str, str] | None = None,
    columns: Sequence[str] | None = None,
    filters: Sequence[HudiFilter] | None = None,
) -> DataFrame:
    """The table at ``path`` as a DataFrame, its plain Parquet slices read by Spark itself.

    Args:
        spark: the session (its Python workers must import hudi_ds, as for ``hudi_py``).
        path: the table's base path.
        options: the read options of ``spark.read.format("hudi_py")`` (``hoodie.*`` read keys
            -- query type, incremental range, ``as.of.instant`` --, ``hudi_py.read.*`` and
            object store options).
        columns: the columns to return (default all, meta columns first): the merged slices
            are then read and merged for these columns only.
        filters: ``(column, op, value)`` tuples, ANDed, as ``hudi_ds.read`` takes them; they
            prune partitions, buckets and (with the metadata table's statistics) file slices,
            and Spark applies them to the rows with SQL semantics (a null never matches, as
            ``.filter(...)`` on a ``hudi_py`` read).

    Returns:
        A DataFrame with the rows and schema of ``spark.read.format("hudi_py")`` (with
        ``columns``: those columns; with ``filters``: the rows that pass them).

    Raises:
        ConfigError: an unknown option, a bad value, an unknown column or a bad filter.
        TableNotFoundError: no Hudi table at ``path``.
    """
    given_options = {str(k): str(v) for k, v in (options or {}).items()}
    if SparkConfig.READ_SLICES.key in {k.lower() for k in given_options}:
        raise ConfigError(
            f"{SparkConfig.READ_SLICES.key} is internal to hudi_ds.spark.read_table: remove it"
        )
    _, hudi, connector = opt.split_options({**given_options, "path": path})
    validate_read_options(hudi)
    if Options.of(hudi).get(ReadConfig.INCREMENTAL_EMIT_DELETES):
        raise ConfigError(
            "hoodie.datasource.read.incr.emit.deletes=true is supported by streaming reads "
            "(spark.readStream) only"
        )
    location = opt.open_path(opt.require_path(path), connector)
    table = ReadableTable(location)
    wanted = None if columns is None else _column_names(columns)
    given = normalize_filters(list(filters or []), table.schema)
    read_cols = _with_filter_columns(table.schema, wanted, given)
    pruning = pruning_filters(given, table.schema)
    read_opts = {k: v for k, v in hudi.items() if k in READ_KEYS}
    plan = table.plan_read(read_opts, read_cols, pruning)
    plan.slices = prune_buckets(table, plan.slices, pruning, hudi)
    object_store = opt.get(connector, SparkConfig.DIRECT_OBJECT_STORE)
    split = split_direct(table, plan, lambda uri: _spark_opens(uri, table, bool(object_store)))
    log.info(
        "read of %s: %d base files read by Spark, %d file slices merged by hudi_ds (%s)",
        table.path,
        len(split.files),
        len(split.merged),
        ", ".join(f"{n} {why}" for why, n in sorted(split.kept_reasons.items())) or "none",
    )
    schema = arrow_to_spark_schema(plan.output_schema)
    parts: list[DataFrame] = []
    if split.files:
        parts.append(_parquet_part(spark, table, split.files, split, schema))
    if split.merged:
        parts.append(_merged_part(spark, path, given_options, plan, split.merged, schema))
    df = parts[0] if parts else spark.createDataFrame([], schema)
    for other in parts[1:]:
        df = df.unionByName(other)
    condition = _spark_condition(given)
    if condition is not None:
        df = df.filter(condition)
    if wanted is not None and read_cols != wanted:
        df = df.select(*wanted)
    return df


def _column_names(columns: Sequence[str]) -> list[str]:
    if isinstance(columns, str) or not all(isinstance(c, str) for c in columns):
        raise ConfigError(f"columns must be a list of column names, not {columns!r}")
    return list(columns)


def _with_filter_columns(
    schema: pa.Schema, wanted: list[str] | None, filters: list[HudiFilter]
) -> list[str] | None:
    """The columns the read returns before the filters: ``wanted`` plus the filters' own
    (None: every column)."""
    if wanted is None:
        return None
    for c in wanted:
        if schema.get_field_index(c) < 0:
            raise ConfigError(f"unknown column '{c}'; columns are {schema.names}")
    extra = [c for c, _, _ in filters if c not in wanted]
    return [*wanted, *dict.fromkeys(extra)]


def _spark_opens(uri: str, table: ReadableTable, object_store: bool) -> bool:
    """Whether Spark's file source can open ``uri`` as this session is set up."""
    if not table.storage.is_local and not object_store:
        return False
    rest = uri.split("://", 1)[1] if "://" in uri else uri
    return not (_UNSAFE_PATH_CHARS & set(rest))


def _hadoop_path(uri: str) -> str:
    """``uri`` as Spark's file source takes it: a local path as ``file://`` (a bare path
    would resolve against the cluster's default file system)."""
    return uri if "://" in uri else "file://" + uri


def _parquet_part(
    spark: SparkSession,
    table: ReadableTable,
    files: Sequence[str],
    split: DirectSplit,
    schema: StructType,
) -> DataFrame:
    """The base files read by Spark's Parquet reader, as the merged slices would return them:
    the table schema (files lacking a later column give nulls), without the rows flagged
    deleted (not filtered in files whose footers show none), only an incremental query's
    commits, then the read's columns."""
    full = arrow_to_spark_schema(table.schema)
    # files whose footers show no deleted row need no flag column read nor filter
    clean = [f for f in files if f in split.unflagged]
    flagged = [f for f in files if f not in split.unflagged]
    parts: list[DataFrame] = []
    for group, filter_flag in ((clean, False), (flagged, True)):
        if not group:
            continue
        df = spark.read.schema(full).parquet(*(_hadoop_path(f) for f in group))
        keep: Column | None = None
        if filter_flag and split.deleted_flag is not None:
            keep = ~F.coalesce(F.col(split.deleted_flag), F.lit(False))
        if split.commit_times is not None:
            chosen = F.col(COMMIT_TIME_METADATA_FIELD).isin(sorted(split.commit_times))
            keep = chosen if keep is None else keep & chosen
        if keep is not None:
            df = df.filter(keep)
        parts.append(df.select(*schema.fieldNames()))
    out = parts[0]  # files is not empty
    for other in parts[1:]:
        out = out.unionByName(other)
    return out


def _merged_part(
    spark: SparkSession,
    path: str,
    options: Mapping[str, str],
    plan: ReadPlan,
    merged: Sequence[FileSlice],
    schema: StructType,
) -> DataFrame:
    """The slices hudi_ds merges, read by the ``hudi_py`` source restricted to their file
    groups and to the instants ``plan`` saw (:class:`~hudi_ds.spark.options.SliceRestriction`):
    it plans again when the query runs, and must return this plan's rows."""
    restriction = SliceRestriction(
        plan.visibility.instants, frozenset((s.partition_path, s.file_id) for s in merged)
    )
    return (
        spark.read.format(SOURCE_NAME)
        .schema(schema)
        .options(**options)
        .option(SparkConfig.READ_SLICES.key, restriction.encode())
        .load(path)
    )


def _spark_condition(filters: Sequence[HudiFilter]) -> Column | None:
    """The AND of ``filters`` as a Spark condition (SQL semantics)."""
    out: Column | None = None
    for col, op, value in filters:
        c = F.col(f"`{col}`")
        if op == "=":
            e = c == F.lit(value)
        elif op == "!=":
            e = c != F.lit(value)
        elif op == "<":
            e = c < F.lit(value)
        elif op == "<=":
            e = c <= F.lit(value)
        elif op == ">":
            e = c > F.lit(value)
        elif op == ">=":
            e = c >= F.lit(value)
        elif op == "in":
            e = c.isin(list(value))
        elif op == "not in":
            e = ~c.isin(list(value))
        elif op == "is null":
            e = c.isNull()
        elif op == "is not null":
            e = c.isNotNull()
        else:  # normalize_filters admits only the operators above
            raise ConfigError(f"unsupported filter operator {op!r}")
        out = e if out is None else out & e
    return out


__all__ = ["read_table"]
