"""Clustering a DataFrame by Hudi bucket before a write (a speed-up, never needed for
correctness).

pyspark's Python data source API cannot ask Spark for a distribution, so rows of one bucket may
arrive in several write tasks. The writer is correct for any input partitioning; but when every
``(partition path, bucket)`` lands in exactly one task, each file group gets one new file per
commit instead of one per task. :func:`cluster_by_bucket` does that shuffle explicitly.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql.types import IntegerType, StructField, StructType

from hudi_ds.config import parse_list
from hudi_ds.errors import ConfigError, SchemaError
from hudi_ds.index.bucket import (
    HASH_FIELD_KEY,
    NUM_BUCKETS_KEY,
    bucket_ids_from_record_keys,
    validate_hash_fields,
    validate_num_buckets,
)
from hudi_ds.keygen import record_keys
from hudi_ds.spark.types import conform_batch, spark_to_arrow_schema

RECORD_KEY_KEY = "hoodie.datasource.write.recordkey.field"
PARTITION_KEY = "hoodie.datasource.write.partitionpath.field"
KEYGEN_TYPE_KEY = "hoodie.datasource.write.keygenerator.type"
KEYGEN_CLASS_KEY = "hoodie.datasource.write.keygenerator.class"
BUCKET_COLUMN = "_hudi_py_bucket"


def cluster_by_bucket(
    df: DataFrame, options: Mapping[str, Any], num_partitions: int | None = None
) -> DataFrame:
    """Repartition ``df`` so that every (partition path, Hudi bucket) is in one Spark partition.

    Adds the Hudi bucket id of every row (Java Hudi's hash of the record key, computed in Arrow
    by ``mapInArrow``), hash-partitions by the partition-path columns and that id, and drops it.

    Args:
        df: the rows to write.
        options: the write options (``hoodie.datasource.write.recordkey.field``,
            ``hoodie.datasource.write.partitionpath.field``,
            ``hoodie.bucket.index.num.buckets``, optional ``hoodie.bucket.index.hash.field``).
        num_partitions: number of write tasks (default ``spark.sql.shuffle.partitions``).

    Returns:
        The repartitioned DataFrame (same schema and rows).

    Raises:
        ConfigError: a missing or invalid option.
        SchemaError: a key or partition column is missing.
    """
    opts = {str(k).lower(): str(v) for k, v in options.items() if v is not None}
    key_fields = parse_list(opts.get(RECORD_KEY_KEY, ""))
    if not key_fields:
        raise ConfigError(f"cluster_by_bucket needs '{RECORD_KEY_KEY}'")
    raw_n = opts.get(NUM_BUCKETS_KEY)
    if raw_n is None:
        raise ConfigError(f"cluster_by_bucket needs '{NUM_BUCKETS_KEY}'")
    try:
        num_buckets = validate_num_buckets(int(raw_n))
    except ValueError:
        raise ConfigError(f"{NUM_BUCKETS_KEY}={raw_n!r}: must be an integer") from None
    hash_fields = validate_hash_fields(opts.get(HASH_FIELD_KEY), key_fields)
    part_fields = [f.split(":")[0] for f in parse_list(opts.get(PARTITION_KEY, ""))]
    complex_key = is_complex_key(opts, key_fields)
    for c in (*key_fields, *part_fields):
        if c not in df.columns:
            raise SchemaError(f"column '{c}' is missing; columns are {df.columns}")

    in_schema = spark_to_arrow_schema(StructType([df.schema[c] for c in key_fields]))

    def add_bucket(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            keys_batch = conform_batch(batch.select(key_fields), in_schema)
            keys = record_keys(pa.Table.from_batches([keys_batch]), key_fields, complex_key)
            ids = bucket_ids_from_record_keys(keys, hash_fields, num_buckets, complex_key)
            yield batch.append_column(BUCKET_COLUMN, pa.array(ids, pa.int32()))

    out_schema = StructType([*df.schema.fields, StructField(BUCKET_COLUMN, IntegerType(), False)])
    n = num_partitions or int(df.sparkSession.conf.get("spark.sql.shuffle.partitions") or 200)
    return (
        df.mapInArrow(add_bucket, out_schema)
        .repartition(n, *part_fields, BUCKET_COLUMN)
        .drop(BUCKET_COLUMN)
    )


def is_complex_key(options: Mapping[str, str], key_fields: list[str]) -> bool:
    """Whether record keys are ``field:value`` pairs (COMPLEX key generator)."""
    kind = (options.get(KEYGEN_TYPE_KEY) or "").upper()
    cls = (options.get(KEYGEN_CLASS_KEY) or "").rsplit(".", 1)[-1]
    if kind:
        return kind == "COMPLEX"
    if cls:
        return cls == "ComplexKeyGenerator"
    return len(key_fields) > 1
