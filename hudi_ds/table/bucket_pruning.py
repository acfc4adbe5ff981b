"""Bucket pruning of a planned read: the file groups of a bucket-index table that can hold the
record keys a read's filters ask for.

An engine's filters (``(column, op, value)`` tuples, :mod:`hudi_ds.table.filters`) fix the
record key when every key field has ``=`` / ``in`` filters; the candidate keys are then built as
the writer builds them and hashed as Java Hudi does, so only their buckets' file groups are read.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hudi_ds.errors import ConfigError, HudiError
from hudi_ds.index import records_another_index
from hudi_ds.index.bucket import (
    HASH_FIELD_KEY,
    NUM_BUCKETS_KEY,
    bucket_ids_from_record_keys,
    validate_hash_fields,
    validate_num_buckets,
)
from hudi_ds.index.partition_bucket import is_partition_level
from hudi_ds.keygen import record_keys
from hudi_ds.layout.file_group import FileSlice
from hudi_ds.layout.naming import bucket_id_of
from hudi_ds.table.filters import Filter
from hudi_ds.table.table import ReadableTable

#: at most this many candidate record keys are hashed for bucket pruning.
MAX_BUCKET_KEYS = 4096


def bucket_config(table: ReadableTable, options: Mapping[str, str]) -> tuple[int, list[str]] | None:
    """``(num_buckets, hash_fields)`` of a bucket-index table, or None when unknown (or
    partition-level rules give partitions different counts).

    From the read options ``hoodie.bucket.index.num.buckets`` / ``hoodie.bucket.index.hash.field``
    or, failing that, the same keys in ``hoodie.properties``; None for a table that records
    another index (``hoodie.index.type``).

    Raises:
        ConfigError: an invalid value.
    """
    if records_another_index(table.config):
        return None  # a table hudi_ds created with another index: fileIds are not buckets
    if is_partition_level(table.storage, table.timeline):
        # partition-level bucket rules: a partition's count depends on the rules in force
        # when its file groups were written (a rescale changes it); such reads are not pruned
        return None
    raw = options.get(NUM_BUCKETS_KEY) or table.config.get(NUM_BUCKETS_KEY)
    if raw is None:
        return None
    try:
        n = int(str(raw).strip())
    except ValueError:
        raise ConfigError(f"{NUM_BUCKETS_KEY}={raw!r}: must be an integer") from None
    validate_num_buckets(n)
    rk = table.config.record_key_fields
    if not rk:
        return None
    hash_raw = options.get(HASH_FIELD_KEY) or table.config.get(HASH_FIELD_KEY)
    return n, validate_hash_fields(hash_raw, rk)


def candidate_buckets(
    table: ReadableTable, filters: Sequence[Filter], num_buckets: int, hash_fields: list[str]
) -> set[int] | None:
    """The buckets that can hold rows matching ``filters``, or None when not determined.

    Determined when every record key field is fixed by ``=`` / ``in`` filters: the candidate
    record keys are then built exactly as the writer builds them and hashed as Java Hudi does.
    """
    cfg = table.config
    fields = cfg.record_key_fields
    values: dict[str, set[Any]] = {}
    for col, op, value in filters:
        if col not in fields or op not in ("=", "in"):
            continue
        vs = set(value) if op == "in" else {value}
        values[col] = values[col] & vs if col in values else vs
    if any(f not in values for f in fields):
        return None
    combos = math.prod(len(values[f]) for f in fields)
    if combos == 0:
        return set()
    if combos > MAX_BUCKET_KEYS:
        return None
    schema = table.schema
    rows = list(itertools.product(*(sorted(values[f], key=repr) for f in fields)))
    try:
        cols = {
            f: pa.array([r[i] for r in rows], schema.field(f).type) for i, f in enumerate(fields)
        }
        keys = record_keys(pa.table(cols), fields, cfg.complex_record_key)
        ids = bucket_ids_from_record_keys(keys, hash_fields, num_buckets, cfg.complex_record_key)
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, HudiError, KeyError):
        return None
    except (TypeError, ValueError, OverflowError):
        return None
    return {int(b) for b in ids}


def prune_buckets(
    table: ReadableTable,
    slices: Sequence[FileSlice],
    filters: Sequence[Filter],
    options: Mapping[str, str],
) -> list[FileSlice]:
    """Drop bucket file groups that cannot hold the record keys the filters ask for.

    File groups whose id is not a bucket id (8 digits first) are always kept.
    """
    if not filters:
        return list(slices)
    conf = bucket_config(table, options)
    if conf is None:
        return list(slices)
    buckets = candidate_buckets(table, filters, *conf)
    if buckets is None:
        return list(slices)
    out = []
    for s in slices:
        bucket = bucket_id_of(s.file_id)
        if bucket is None or bucket in buckets:
            out.append(s)
    return out


#: where a record key may be held: (partition path or None for any, bucket or None for any)
Location = tuple[str | None, int | None]


def keys_by_location(
    table: ReadableTable, keys: pa.Array, partitions: pa.Array | None = None
) -> dict[Location, pa.Array] | None:
    """Record keys (``_hoodie_record_key`` strings) split by where they can be held: their
    partition path (``partitions``, one per key, as the writer builds them) and the bucket
    that holds them on a bucket-index table.

    Vectorised, the keys staying an Arrow array: a MERGE's source keys, so that each file
    group it reads looks up its own few keys (not every key of its bucket number in every
    partition). A part not known is None in the location: the partition without
    ``partitions``, the bucket when the table's file group ids are not buckets of its keys
    (another index, no recorded bucket layout). None when neither is known.

    Raises:
        SchemaError: a null key.
    """
    conf = bucket_config(table, {})
    if conf is None and partitions is None:
        return None
    n = len(keys)
    codes = np.zeros(n, np.int64)
    names: list[str | None] = [None]
    if partitions is not None:
        if isinstance(partitions, pa.ChunkedArray):
            partitions = partitions.combine_chunks()
        enc = pc.dictionary_encode(partitions)
        names = enc.dictionary.to_pylist()
        codes = np.asarray(enc.indices.fill_null(0), dtype=np.int64)
    if conf is not None:
        ids = bucket_ids_from_record_keys(
            keys, conf[1], conf[0], table.config.complex_record_key
        ).astype(np.int64)
        width = int(ids.max()) + 1 if n else 1
    else:
        ids, width = np.zeros(n, np.int64), 1
    group = codes * width + ids
    order = np.argsort(group, kind="stable")
    ordered_groups = group[order]
    bounds = np.flatnonzero(np.diff(ordered_groups)) + 1
    starts = np.concatenate([[0], bounds]).astype(np.int64)
    ends = np.concatenate([bounds, [n]]).astype(np.int64)
    ordered = keys.take(pa.array(order))
    out: dict[Location, pa.Array] = {}
    for a, b in zip(starts, ends, strict=True):
        if b > a:
            g = int(ordered_groups[a])
            where = (names[g // width], g % width if conf is not None else None)
            out[where] = ordered.slice(a, b - a)
    return out
