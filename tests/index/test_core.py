"""The write's Index object: its type, its answers, its table properties and its resolution."""

from __future__ import annotations

import pickle

import pyarrow as pa
import pytest

from hudi_ds.config import Options
from hudi_ds.errors import ConfigError
from hudi_ds.index import BucketLayout, Index, IndexType, lookup_of, records_another_index
from hudi_ds.index.bloom import bloom_lookup
from hudi_ds.index.simple import simple_lookup
from hudi_ds.table_config import TableConfig


def test_index_type_parses_hudi_spellings() -> None:
    assert IndexType.parse(" global_bloom ") is IndexType.GLOBAL_BLOOM
    assert [t.value for t in IndexType] == [
        "BUCKET",
        "SIMPLE",
        "GLOBAL_SIMPLE",
        "BLOOM",
        "GLOBAL_BLOOM",
        "RECORD_INDEX",
        "RECORD_LEVEL_INDEX",
    ]
    with pytest.raises(ConfigError, match=r"hoodie.index.type='HBASE' \(somewhere\)"):
        IndexType.parse("HBASE", "somewhere")


@pytest.mark.parametrize(
    ("kind", "is_global", "routes_by_hash", "can_index_log_files"),
    [
        (IndexType.BUCKET, False, True, True),
        (IndexType.SIMPLE, False, False, False),
        (IndexType.GLOBAL_SIMPLE, True, False, False),
        (IndexType.BLOOM, False, False, False),
        (IndexType.GLOBAL_BLOOM, True, False, False),
    ],
)
def test_index_answers(
    kind: IndexType, is_global: bool, routes_by_hash: bool, can_index_log_files: bool
) -> None:
    bucket = BucketLayout(4, ("id",)) if kind is IndexType.BUCKET else None
    index = Index(kind, bucket)
    assert index.is_global is is_global
    assert index.routes_by_hash is routes_by_hash
    assert index.can_index_log_files is can_index_log_files
    assert index.is_implicit_with_storage
    assert pickle.loads(pickle.dumps(index)) == index
    keys, parts = pa.array(["k1", "k2"]), pa.array(["p1", "p2"])
    assert (index.lookup_partitions(parts) is None) is is_global
    assert index.identities(keys, parts).to_pylist() == (
        ["k1", "k2"] if is_global else ["p1\x00k1", "p2\x00k2"]
    )
    if routes_by_hash:
        with pytest.raises(ConfigError, match="no lookup"):
            index.lookup()
        assert index.layout.num_buckets == 4
    else:
        with pytest.raises(ConfigError, match="no bucket layout"):
            index.layout  # noqa: B018


def test_lookups_and_bucket_layout_belong_to_their_types() -> None:
    assert Index(IndexType.SIMPLE).lookup() is simple_lookup
    assert lookup_of(IndexType.BLOOM) is bloom_lookup
    with pytest.raises(ConfigError, match="BUCKET index alone"):
        Index(IndexType.BUCKET)
    with pytest.raises(ConfigError, match="BUCKET index alone"):
        Index(IndexType.SIMPLE, BucketLayout(4, ("id",)))


def test_table_properties_record_the_bucket_layout_only_for_the_bucket_index() -> None:
    assert Index(IndexType.BUCKET, BucketLayout(8, ("a", "b"))).table_properties() == {
        "hoodie.index.type": "BUCKET",
        "hoodie.bucket.index.num.buckets": "8",
        "hoodie.bucket.index.hash.field": "a,b",
    }
    assert Index(IndexType.GLOBAL_SIMPLE).table_properties() == {
        "hoodie.index.type": "GLOBAL_SIMPLE"
    }


def test_resolve_new_and_existing_tables() -> None:
    new = Index.resolve(Options.of({"hoodie.index.type": "bloom"}), None, ["id"], True)
    assert new == Index(IndexType.BLOOM, update_partition_path=True)
    bucket = Index.resolve(
        Options.of({"hoodie.bucket.index.num.buckets": "3"}), None, ["id"], False
    )
    assert bucket.bucket == BucketLayout(3, ("id",))
    recorded = TableConfig({"hoodie.table.name": "t", "hoodie.index.type": "GLOBAL_SIMPLE"})
    assert Index.resolve(Options.of({}), recorded, ["id"], False).type is IndexType.GLOBAL_SIMPLE
    with pytest.raises(ConfigError, match="'BLOOM' contradicts the existing table"):
        Index.resolve(Options.of({"hoodie.index.type": "BLOOM"}), recorded, ["id"], False)
    unknown = TableConfig({"hoodie.table.name": "t", "hoodie.index.type": "HBASE"})
    with pytest.raises(ConfigError, match="'HBASE' .recorded in hoodie.properties"):
        Index.resolve(Options.of({}), unknown, ["id"], False)


def test_records_another_index() -> None:
    def cfg(**props: str) -> TableConfig:
        return TableConfig({"hoodie.table.name": "t", **props})

    assert not records_another_index(cfg())
    assert not records_another_index(cfg(**{"hoodie.index.type": "bucket"}))
    assert records_another_index(cfg(**{"hoodie.index.type": "SIMPLE"}))
    assert records_another_index(cfg(**{"hoodie.index.type": "RECORD_INDEX"}))
