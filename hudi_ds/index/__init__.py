"""Record indexes: Hudi's SIMPLE bucket index (``bucket``)."""

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

__all__ = [
    "HASH_FIELD_KEY",
    "MAX_NUM_BUCKETS",
    "NUM_BUCKETS_KEY",
    "bucket_id_from_file_id",
    "bucket_ids",
    "bucket_ids_from_record_keys",
    "java_string_hash",
    "list_hash",
    "new_bucket_file_id",
    "validate_hash_fields",
    "validate_num_buckets",
]
