"""Clustering a DataFrame by Hudi bucket before a write (a speed-up, never needed for
correctness).

On a consistent-hashing table a bucket is a node of its partition's ring: rows are grouped by
the node's file group under the table's committed rings, loaded once on the driver (a
partition without a ring by the ring its writer will create), as the writer routes them.

pyspark's Python data source API cannot ask Spark for a distribution, so rows of one bucket may
arrive in several write tasks. The writer is correct for any input partitioning; but when every
``(partition path, bucket)`` lands in exactly one task, each file group gets one new file per
commit instead of one per task. :func:`cluster_by_bucket` does that shuffle explicitly.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql.types import IntegerType, StringType, StructField, StructType

from hudi_ds.config import Options, WriteConfig
from hudi_ds.engine import (
    Index,
    WriteClient,
    bucket_ids_of_rows,
    file_ids_of_rows,
    ring_router,
    validate_options,
)
from hudi_ds.errors import ConfigError, SchemaError
from hudi_ds.spark import options as opt
from hudi_ds.spark.types import conform_batch, spark_to_arrow_schema

BUCKET_COLUMN = "_hudi_py_bucket"
#: a consistent-hashing table's routing column: the file group id of the row's ring node
FILE_GROUP_COLUMN = "_hudi_py_file_group"


@dataclass(frozen=True)
class BucketSpec:
    """How the writer assigns rows to buckets: key and partition fields, key format, buckets."""

    key_fields: tuple[str, ...]
    partition_fields: tuple[str, ...]
    complex_key: bool
    num_buckets: int
    hash_fields: tuple[str, ...]
    #: partition-level bucket rules (a ``HashingConfig``) and the writer's ``KeySpec`` that
    #: builds the partition paths they apply to; None without rules
    rules: Any = None
    key_spec: Any = None
    #: consistent hashing: the table's committed rings (a ``RingRouter``); None for SIMPLE
    router: Any = None

    @classmethod
    def resolve(cls, options: Mapping[str, Any], path: str | None = None) -> BucketSpec:
        """Resolve like the writer: the existing table's settings at ``path`` win over options.

        Raises:
            ConfigError: an invalid option, no record key fields, or a table (or options)
                with another index than the bucket index.
        """
        _, hudi, connector = opt.split_options(options)
        path = path or options.get("path")
        if path:
            location = opt.open_path(str(path), connector)
            r = WriteClient(location, hudi).resolved
            if r.index.bucket is None:
                raise ConfigError(
                    f"cluster_by_bucket is for bucket-index tables; the table at {path} uses "
                    f"the {r.index.type.value} index (write the DataFrame as it is: its tasks "
                    "look keys up in the table)"
                )
            b = r.index.bucket
            spec = cls(
                r.keys.record_key_fields,
                r.keys.partition_fields,
                r.keys.complex_key,
                b.num_buckets,
                b.hash_fields,
                b.rules,
                r.keys if b.rules is not None or b.consistent else None,
                ring_router(location, b) if b.consistent else None,
            )
        else:
            validate_options(hudi)
            o = Options.of(hudi)
            keys = list(_opt(o, WriteConfig.RECORD_KEY_FIELDS) or [])
            parts = tuple(_opt(o, WriteConfig.PARTITION_FIELDS) or [])
            index = Index.resolve(o, None, keys, bool(parts))  # a new table: as the writer's
            if index.bucket is None:
                raise ConfigError(
                    f"cluster_by_bucket is for the bucket index; 'hoodie.index.type'="
                    f"{index.type.value!r}"
                )
            b = index.bucket
            if b.consistent:
                raise ConfigError(
                    "cluster_by_bucket with hoodie.index.bucket.engine=CONSISTENT_HASHING needs "
                    "the table's path (the 'path' option or argument): rows go to the nodes of "
                    "its partitions' rings"
                )
            if b.rules is not None:
                raise ConfigError(
                    "cluster_by_bucket with hoodie.bucket.index.partition.expressions needs "
                    "the table's path (the 'path' option or argument): partition paths are "
                    "built as its writer builds them"
                )
            spec = cls(tuple(keys), parts, len(keys) > 1, b.num_buckets, b.hash_fields)
        if not spec.key_fields:
            raise ConfigError(
                "cluster_by_bucket needs 'hoodie.datasource.write.recordkey.field' "
                "(or an existing table)"
            )
        return spec


def _opt(o: Options, prop: Any) -> Any:
    return o.get(prop)


def cluster_by_bucket(
    df: DataFrame,
    options: Mapping[str, Any],
    num_partitions: int | None = None,
    path: str | None = None,
) -> DataFrame:
    """Repartition ``df`` so that every (partition path, Hudi bucket) is in one Spark partition.

    Adds the Hudi bucket id of every row (Java Hudi's hash of the record key, computed in Arrow
    by ``mapInArrow``, exactly as the writer computes it), hash-partitions by the partition-path
    columns and that id, and drops it. Spark's hash partitioning may put several buckets in one
    task (and leave some tasks empty), but never splits a bucket. On a consistent-hashing
    table the id is the file group of the row's node in its partition's committed ring
    (Java ``ConsistentBucketIdentifier.getBucket``), the rings read once here and shipped to
    the tasks; a resize committed after this call leaves the grouping stale, never wrong.

    Args:
        df: the rows to write.
        options: the write options (``hoodie.datasource.write.recordkey.field``,
            ``hoodie.datasource.write.partitionpath.field``,
            ``hoodie.bucket.index.num.buckets``, ``hoodie.bucket.index.hash.field``).
        num_partitions: number of write tasks (default ``spark.sql.shuffle.partitions``).
        path: the table (default ``options["path"]``); an existing table's settings win.

    Returns:
        The repartitioned DataFrame (same schema and rows).

    Raises:
        ConfigError: a missing or invalid option.
        SchemaError: a key or partition column is missing.
    """
    spec = BucketSpec.resolve(options, path)
    key_fields = list(spec.key_fields)
    part_fields = list(spec.partition_fields)
    for c in (*key_fields, *part_fields):
        if c not in df.columns:
            raise SchemaError(f"column '{c}' is missing; columns are {df.columns}")
    consistent = spec.router is not None
    # a row's bucket count (partition-level rules) or ring (consistent hashing) is its
    # partition's
    per_partition = spec.rules is not None or consistent
    cols = list(dict.fromkeys(key_fields + (part_fields if per_partition else [])))
    in_schema = spark_to_arrow_schema(StructType([df.schema[c] for c in cols]))

    def add_bucket(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            keys = pa.Table.from_batches([conform_batch(batch.select(cols), in_schema)])
            if consistent:
                ids = file_ids_of_rows(
                    keys, key_fields, spec.complex_key, spec.key_spec, spec.router
                )
                yield batch.append_column(FILE_GROUP_COLUMN, ids)
                continue
            buckets = bucket_ids_of_rows(
                keys,
                key_fields,
                spec.complex_key,
                spec.hash_fields,
                spec.num_buckets,
                spec.rules,
                spec.key_spec,
            )
            yield batch.append_column(BUCKET_COLUMN, pa.array(buckets, pa.int32()))

    if consistent:
        route = StructField(FILE_GROUP_COLUMN, StringType(), False)
    else:
        route = StructField(BUCKET_COLUMN, IntegerType(), False)
    out_schema = StructType([*df.schema.fields, route])
    n = num_partitions or int(df.sparkSession.conf.get("spark.sql.shuffle.partitions") or 200)
    with warnings.catch_warnings():
        # mapInArrow goes through pandas_udf's version check although no pandas is involved
        warnings.filterwarnings("ignore", "PySpark does not yet fully support pandas")
        with_bucket = df.mapInArrow(add_bucket, out_schema)
    return with_bucket.repartition(n, *part_fields, route.name).drop(route.name)
