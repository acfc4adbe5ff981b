"""``cluster_by_bucket``'s option handling, without a SparkSession."""

from __future__ import annotations

import pytest

from hudi_ds.errors import ConfigError
from hudi_ds.spark.cluster import BucketSpec
from tests.conftest import table_options


def test_bucket_spec_accepts_every_write_option() -> None:
    """Options a write takes (compaction, cleaning, concurrency, the operation) are not refused
    by the clustering helper that runs before the write (the streaming demo passes its sink's
    options, with inline compaction, to ``cluster_by_bucket``)."""
    opts = {
        **table_options("t", partition="region", buckets=4),
        "hoodie.datasource.write.table.type": "MERGE_ON_READ",
        "hoodie.compact.inline": "true",
        "hoodie.compact.inline.max.delta.commits": "10",
        "hoodie.clean.automatic": "false",
        "hoodie.write.concurrency.mode": "single_writer",
        "hoodie.datasource.write.operation": "upsert",
    }
    spec = BucketSpec.resolve(opts)
    assert spec == BucketSpec(("id",), ("region",), False, 4, ("id",))


def test_bucket_spec_refuses_unknown_and_bad_options() -> None:
    with pytest.raises(ConfigError, match="hoodie.compact.inlin'"):
        BucketSpec.resolve({**table_options("t"), "hoodie.compact.inlin": "true"})
    with pytest.raises(ConfigError, match="hoodie.bucket.index.num.buckets"):
        BucketSpec.resolve({**table_options("t"), "hoodie.bucket.index.num.buckets": "zero"})


def test_bucket_spec_resolves_the_index_as_the_writer() -> None:
    with pytest.raises(ConfigError, match="bucket index; 'hoodie.index.type'='GLOBAL_BLOOM'"):
        BucketSpec.resolve({**table_options("t"), "hoodie.index.type": "global_bloom"})
