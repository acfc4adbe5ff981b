"""Record indexes: the write's :class:`Index` (``core``: its type, what it answers, how it is
resolved), Hudi's bucket index (``bucket``), and the lookups of the SIMPLE (``simple``) and
BLOOM (``bloom``) indexes and their GLOBAL variants, chosen by :func:`lookup_of`."""

from hudi_ds.index.bloom import bloom_lookup
from hudi_ds.index.bucket import (
    HASH_FIELD_KEY,
    MAX_NUM_BUCKETS,
    NUM_BUCKETS_KEY,
    bucket_id_from_file_id,
    bucket_ids,
    bucket_ids_from_record_keys,
    java_string_hash,
    list_hash,
    new_bucket_file_id,
    validate_hash_fields,
    validate_num_buckets,
)
from hudi_ds.index.core import (
    BucketEngine,
    BucketLayout,
    Index,
    IndexType,
    lookup_of,
    records_another_index,
)
from hudi_ds.index.lookup import KeyLocations, Lookup, LookupSpec
from hudi_ds.index.simple import KeyCache, simple_lookup

__all__ = [
    "HASH_FIELD_KEY",
    "BucketEngine",
    "BucketLayout",
    "Index",
    "IndexType",
    "MAX_NUM_BUCKETS",
    "NUM_BUCKETS_KEY",
    "KeyCache",
    "KeyLocations",
    "Lookup",
    "LookupSpec",
    "bloom_lookup",
    "bucket_id_from_file_id",
    "bucket_ids",
    "bucket_ids_from_record_keys",
    "java_string_hash",
    "list_hash",
    "lookup_of",
    "new_bucket_file_id",
    "records_another_index",
    "simple_lookup",
    "validate_hash_fields",
    "validate_num_buckets",
]
