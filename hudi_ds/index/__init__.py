"""Record indexes: Hudi's bucket index (``bucket``), and the lookups of the SIMPLE
(``simple``) and BLOOM (``bloom``) indexes and their GLOBAL variants, chosen by
:func:`lookup_of`."""

from collections.abc import Sequence

import pyarrow as pa

from hudi_ds.errors import ConfigError
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
from hudi_ds.index.lookup import KeyLocations, Lookup, LookupSpec
from hudi_ds.index.simple import KeyCache, simple_lookup
from hudi_ds.layout.file_group import FileSlice
from hudi_ds.storage import Storage


def _matching_key_alone(lookup: Lookup) -> Lookup:
    """The GLOBAL variant of ``lookup``: it matches on the key alone (``partitions`` unused)."""

    def global_lookup(
        storage: Storage,
        slices: Sequence[FileSlice],
        keys: pa.Array,
        partitions: pa.Array | None,
        spec: LookupSpec,
    ) -> KeyLocations:
        del partitions
        return lookup(storage, slices, keys, None, spec)

    global_lookup.__doc__ = f"GLOBAL: :func:`{lookup.__name__}` on the key alone."
    return global_lookup


_LOOKUPS: dict[str, Lookup] = {
    "SIMPLE": simple_lookup,
    "GLOBAL_SIMPLE": _matching_key_alone(simple_lookup),
    "BLOOM": bloom_lookup,
    "GLOBAL_BLOOM": _matching_key_alone(bloom_lookup),
}


def lookup_of(index_type: str, cache: KeyCache | None = None) -> Lookup:
    """The lookup of ``hoodie.index.type`` ``index_type``.

    SIMPLE and BLOOM match ``(key, partition)``; GLOBAL_SIMPLE and GLOBAL_BLOOM match the key
    alone whatever ``partitions`` the caller passes (give them every partition's slices).
    ``cache``: the SIMPLE lookups keep the keys they read there and read no file twice (one
    writer task's lookups, :class:`~hudi_ds.index.simple.KeyCache`); BLOOM reads footers
    and only the files they point to, and takes none.

    Raises:
        ConfigError: BUCKET (routed by hash, :mod:`hudi_ds.index.bucket`, not looked up) or an
            unknown index type.
    """
    kind = index_type.strip().upper()
    if kind == "BUCKET":
        raise ConfigError(
            "hoodie.index.type=BUCKET routes records by the hash of their key; it has no lookup"
        )
    if cache is not None and kind in ("SIMPLE", "GLOBAL_SIMPLE"):
        kept = cache

        def cached_lookup(
            storage: Storage,
            slices: Sequence[FileSlice],
            keys: pa.Array,
            partitions: pa.Array | None,
            spec: LookupSpec,
        ) -> KeyLocations:
            return simple_lookup(storage, slices, keys, partitions, spec, kept)

        return cached_lookup if kind == "SIMPLE" else _matching_key_alone(cached_lookup)
    try:
        return _LOOKUPS[kind]
    except KeyError:
        raise ConfigError(
            f"hoodie.index.type={index_type!r}: no lookup for it (lookups: {', '.join(_LOOKUPS)})"
        ) from None


__all__ = [
    "HASH_FIELD_KEY",
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
    "simple_lookup",
    "validate_hash_fields",
    "validate_num_buckets",
]
