"""The write's record index as one object (Java ``HoodieIndex`` and ``HoodieIndex.IndexType``).

:class:`IndexType` is ``hoodie.index.type`` with Hudi's spellings; :class:`Index` is the index a
write uses: its type, the questions the write path asks it (is it global, can it index log
files, does it route by hash or look keys up), its lookup, its bucket layout, and how it is
resolved from the write options and an existing table (:meth:`Index.resolve`). Nothing outside
``hudi_ds.index`` compares index names.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hudi_ds.config import ClusteringConfig, ConfigProperty, Options, WriteConfig, warn_no_effect
from hudi_ds.errors import ConfigError
from hudi_ds.index.bloom import bloom_lookup
from hudi_ds.index.bucket import (
    NUM_BUCKETS_KEY,
    bucket_ids_from_record_keys,
    validate_hash_fields,
    validate_num_buckets,
)
from hudi_ds.index.consistent_hashing import has_consistent_hashing_metadata
from hudi_ds.index.lookup import KeyLocations, Lookup, LookupSpec
from hudi_ds.index.partition_bucket import (
    INITIAL_INSTANT,
    HashingConfig,
    RuleType,
    config_path,
    is_partition_level,
    latest_config,
)
from hudi_ds.index.record_level import partitioned_record_index_lookup, record_index_lookup
from hudi_ds.index.simple import KeyCache, simple_lookup
from hudi_ds.layout.file_group import FileSlice
from hudi_ds.layout.naming import bucket_id_of
from hudi_ds.metadata.record_index import record_index_partitioned
from hudi_ds.metadata.records import METADATA_PARTITIONS_INFLIGHT_KEY, declared_partitions
from hudi_ds.storage import Storage
from hudi_ds.table_config import TableConfig
from hudi_ds.timeline.view import TableState

log = logging.getLogger("hudi_ds.write")

#: bucket ids above this are taken for a random UUID prefix, not a bucket (see Index.resolve)
_MAX_DETECTED_BUCKET = 1 << 16
#: the metadata-table partition of Java's record-level index
#: (``HoodieTableMetadataUtil.PARTITION_NAME_RECORD_INDEX``)
RECORD_INDEX_PARTITION = "record_index"


class IndexType(enum.StrEnum):
    """``hoodie.index.type``: the indexes hudi_ds writes with (Java ``HoodieIndex.IndexType``);
    the value is the spelling ``hoodie.properties`` records."""

    BUCKET = "BUCKET"
    SIMPLE = "SIMPLE"
    GLOBAL_SIMPLE = "GLOBAL_SIMPLE"
    BLOOM = "BLOOM"
    GLOBAL_BLOOM = "GLOBAL_BLOOM"
    #: the metadata table's record-level index (Java 1.1 also spells it
    #: GLOBAL_RECORD_LEVEL_INDEX), looked up by :mod:`hudi_ds.index.record_level`
    RECORD_INDEX = "RECORD_INDEX"
    #: Hudi 1.1's partitioned record-level index (keys unique per partition), looked up by
    #: (partition, key) by :mod:`hudi_ds.index.record_level`
    RECORD_LEVEL_INDEX = "RECORD_LEVEL_INDEX"

    @classmethod
    def parse(cls, value: str, where: str = "") -> IndexType:
        """The index type ``value`` names (case-insensitive).

        Args:
            where: where the value comes from, named in the error (e.g. "recorded in
                hoodie.properties").

        Raises:
            ConfigError: not one of the index types, naming ``hoodie.index.type`` and the value.
        """
        name = str(value).strip().upper()
        try:
            return cls(_ALIASES.get(name, name))
        except ValueError:
            raise ConfigError(
                f"hoodie.index.type={value!r}{f' ({where})' if where else ''}: hudi_ds writes "
                f"with the {', '.join(cls)} indexes"
            ) from None

    @property
    def is_global(self) -> bool:
        """Keys are unique across partitions (``GLOBAL_SIMPLE``, ``GLOBAL_BLOOM``,
        ``RECORD_INDEX``)."""
        return self in (IndexType.GLOBAL_SIMPLE, IndexType.GLOBAL_BLOOM, IndexType.RECORD_INDEX)


#: other spellings Java accepts for an index type
_ALIASES = {
    "GLOBAL_RECORD_LEVEL_INDEX": IndexType.RECORD_INDEX.value,
    "PARTITIONED_RECORD_INDEX": IndexType.RECORD_LEVEL_INDEX.value,
}


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


_LOOKUPS: dict[IndexType, Lookup] = {
    IndexType.SIMPLE: simple_lookup,
    IndexType.GLOBAL_SIMPLE: _matching_key_alone(simple_lookup),
    IndexType.BLOOM: bloom_lookup,
    IndexType.GLOBAL_BLOOM: _matching_key_alone(bloom_lookup),
    IndexType.RECORD_INDEX: record_index_lookup,
    IndexType.RECORD_LEVEL_INDEX: partitioned_record_index_lookup,
}


def lookup_of(index_type: IndexType | str, cache: KeyCache | None = None) -> Lookup:
    """The lookup of ``hoodie.index.type`` ``index_type``.

    SIMPLE, BLOOM and RECORD_LEVEL_INDEX match ``(key, partition)``; GLOBAL_SIMPLE,
    GLOBAL_BLOOM and RECORD_INDEX match the key alone whatever ``partitions`` the caller passes
    (give them every partition's slices).
    ``cache``: the SIMPLE lookups keep the keys they read there and read no file twice (one
    writer task's lookups, :class:`~hudi_ds.index.simple.KeyCache`); BLOOM reads footers
    and only the files they point to, and takes none.

    Raises:
        ConfigError: BUCKET (routed by hash, :mod:`hudi_ds.index.bucket`, not looked up) or an
            unknown index type.
    """
    try:
        kind = IndexType.parse(index_type)
    except ConfigError:
        raise ConfigError(
            f"hoodie.index.type={index_type!r}: no lookup for it (lookups: {', '.join(_LOOKUPS)})"
        ) from None
    if kind is IndexType.BUCKET:
        raise ConfigError(
            "hoodie.index.type=BUCKET routes records by the hash of their key; it has no lookup"
        )
    if cache is not None and kind in (IndexType.SIMPLE, IndexType.GLOBAL_SIMPLE):
        kept = cache

        def cached_lookup(
            storage: Storage,
            slices: Sequence[FileSlice],
            keys: pa.Array,
            partitions: pa.Array | None,
            spec: LookupSpec,
        ) -> KeyLocations:
            return simple_lookup(storage, slices, keys, partitions, spec, kept)

        return cached_lookup if kind is IndexType.SIMPLE else _matching_key_alone(cached_lookup)
    return _LOOKUPS[kind]


class BucketEngine(enum.StrEnum):
    """``hoodie.index.bucket.engine`` (Java ``HoodieIndex.BucketIndexEngineType``)."""

    #: ``num_buckets`` fixed buckets per partition, file ids ``%08d`` of the bucket
    SIMPLE = "SIMPLE"
    #: a hash ring per partition (:mod:`hudi_ds.index.consistent_hashing`), MERGE_ON_READ only
    CONSISTENT_HASHING = "CONSISTENT_HASHING"


@dataclass(frozen=True)
class BucketLayout:
    """The bucket index's layout, fixed when the table is created: ``num_buckets`` file groups
    per partition (``hoodie.bucket.index.num.buckets``; a consistent-hashing partition's
    initial ring), keys hashed on ``hash_fields`` (``hoodie.bucket.index.hash.field``) by
    ``engine``. With ``rules`` (Hudi 1.1's partition-level bucket index,
    :mod:`hudi_ds.index.partition_bucket`) each partition has the count its rules give,
    ``num_buckets`` being their default; a rescale changes them."""

    num_buckets: int
    hash_fields: tuple[str, ...]
    engine: BucketEngine = BucketEngine.SIMPLE
    rules: HashingConfig | None = None

    def buckets_in(self, partitions: Sequence[str]) -> np.ndarray:
        """The bucket count of each of ``partitions`` (int64)."""
        if self.rules is None:
            return np.full(len(partitions), self.num_buckets, np.int64)
        return self.rules.counts(partitions)

    def row_counts(self, partitions: pa.Array | pa.ChunkedArray) -> np.ndarray | int:
        """The bucket count of each row's partition (``partitions``: their paths), or the one
        count of a table without rules."""
        if self.rules is None:
            return self.num_buckets
        enc = pc.dictionary_encode(partitions)
        chunks = enc.chunks if isinstance(enc, pa.ChunkedArray) else [enc]
        parts = [
            self.rules.counts(c.dictionary.to_pylist())[
                np.asarray(c.indices.to_numpy(zero_copy_only=False), np.int64)
            ]
            for c in chunks
        ]
        return np.concatenate(parts) if parts else np.zeros(0, np.int64)

    @property
    def consistent(self) -> bool:
        """Keys go to the nodes of a partition's hash ring, whose file ids are not bucket ids."""
        return self.engine is BucketEngine.CONSISTENT_HASHING

    def bucket_ids(
        self, keys: pa.Array, complex_key: bool, counts: np.ndarray | int | None = None
    ) -> np.ndarray:
        """The bucket of every record key (Java ``BucketIdentifier.getBucketId``); ``counts``:
        the bucket count of each key's partition (:meth:`row_counts`), needed with rules.

        Raises:
            ConfigError: the consistent-hashing engine (keys go to the nodes of a ring), or
                rules without ``counts``.
        """
        if self.consistent:
            raise ConfigError(
                "hoodie.index.bucket.engine=CONSISTENT_HASHING: keys go to the nodes of a "
                "partition's hash ring, not to numbered buckets"
            )
        if counts is None and self.rules is not None:
            raise ConfigError(
                "partition-level bucket index: the bucket count depends on the partition"
            )
        n = self.num_buckets if counts is None else counts
        return bucket_ids_from_record_keys(keys, list(self.hash_fields), n, complex_key)


#: the non-bucket indexes (they look keys up and size file groups)
_LOOKING_UP = tuple(t for t in IndexType if t is not IndexType.BUCKET)
#: options that only some indexes use: option -> the index types that use it
_INDEX_ONLY_OPTIONS: dict[ConfigProperty[Any], tuple[IndexType, ...]] = {
    WriteConfig.SIMPLE_UPDATE_PARTITION_PATH: (IndexType.GLOBAL_SIMPLE,),
    WriteConfig.BLOOM_UPDATE_PARTITION_PATH: (IndexType.GLOBAL_BLOOM,),
    WriteConfig.RECORD_INDEX_UPDATE_PARTITION_PATH: (IndexType.RECORD_INDEX,),
    WriteConfig.BLOOM_PRUNE_BY_RANGES: (IndexType.BLOOM, IndexType.GLOBAL_BLOOM),
    WriteConfig.BLOOM_USE_METADATA: (IndexType.BLOOM, IndexType.GLOBAL_BLOOM),
    WriteConfig.SMALL_FILE_LIMIT: _LOOKING_UP,
    WriteConfig.MAX_FILE_SIZE: _LOOKING_UP,
    WriteConfig.RECORD_SIZE_ESTIMATE: _LOOKING_UP,
    WriteConfig.RECORD_SIZE_ESTIMATION_THRESHOLD: _LOOKING_UP,
    WriteConfig.INSERT_SPLIT_SIZE: _LOOKING_UP,
    WriteConfig.INSERT_AUTO_SPLIT: _LOOKING_UP,
    WriteConfig.SMALL_FILE_GROUP_CANDIDATES: _LOOKING_UP,
    WriteConfig.BUCKET_PARTITION_EXPRESSIONS: (IndexType.BUCKET,),
    WriteConfig.BUCKET_PARTITION_RULE_TYPE: (IndexType.BUCKET,),
}

#: options only the resizes of a consistent-hashing bucket index use
_RING_ONLY_OPTIONS = (
    ClusteringConfig.BUCKET_SPLIT_THRESHOLD,
    ClusteringConfig.BUCKET_MERGE_THRESHOLD,
    ClusteringConfig.BUCKET_MAX_NUM_BUCKETS,
    ClusteringConfig.BUCKET_MIN_NUM_BUCKETS,
)


@dataclass(frozen=True)
class Index:
    """The record index of a write (Java ``HoodieIndex``): small, frozen, picklable.

    Attributes:
        type: ``hoodie.index.type`` (an existing table's own index).
        bucket: the bucket layout; set exactly for the BUCKET index.
        update_partition_path: global indexes: a key arriving with another partition moves
            (``hoodie.{simple,bloom}.index.update.partition.path``, and the table partitioned).
        prune_by_ranges: BLOOM: prune candidate files by their min/max record key
            (``hoodie.bloom.index.prune.by.ranges``).
        use_metadata: BLOOM: bloom filters (and key ranges) from the metadata table
            (``hoodie.bloom.index.use.metadata``).
    """

    type: IndexType
    bucket: BucketLayout | None = None
    update_partition_path: bool = False
    prune_by_ranges: bool = True
    use_metadata: bool = False

    def __post_init__(self) -> None:
        if (self.bucket is not None) != (self.type is IndexType.BUCKET):
            raise ConfigError(
                f"hoodie.index.type={self.type.value}: a bucket layout belongs to the BUCKET "
                "index alone"
            )

    @property
    def is_global(self) -> bool:
        """Keys are unique across partitions: lookups search every partition and match the
        key alone (Java ``isGlobal``)."""
        return self.type.is_global

    @property
    def routes_by_hash(self) -> bool:
        """Records go to the file group of their key's bucket, without a lookup (the bucket
        index); otherwise keys are looked up (:meth:`lookup`) and inserts are assigned file
        groups by size."""
        return self.bucket is not None

    @property
    def can_index_log_files(self) -> bool:
        """Keys only in log files are found, so inserts may go to logs (Java
        ``canIndexLogFiles``: the bucket index; SIMPLE and BLOOM read base files only)."""
        return self.routes_by_hash

    @property
    def is_implicit_with_storage(self) -> bool:
        """The index is the table's files themselves (Java ``isImplicitWithStorage``): true of
        every index hudi_ds writes with, none keeps state of its own outside them."""
        return True

    @property
    def layout(self) -> BucketLayout:
        """The bucket layout.

        Raises:
            ConfigError: not the bucket index.
        """
        if self.bucket is None:
            raise ConfigError(f"hoodie.index.type={self.type.value} has no bucket layout")
        return self.bucket

    def lookup(self, cache: KeyCache | None = None) -> Lookup:
        """The index's key lookup (:func:`lookup_of`).

        Raises:
            ConfigError: the bucket index, which routes by hash.
        """
        return lookup_of(self.type, cache)

    def lookup_partitions(self, partitions: pa.Array) -> pa.Array | None:
        """What a lookup matches keys within: the incoming ``partitions``, or None (the key
        alone) for a global index."""
        return None if self.is_global else partitions

    def identities(self, keys: pa.Array, partitions: pa.Array) -> pa.Array:
        """What identifies each record to this index: its key alone (global) or its partition
        and key (aligned string arrays in, one string per record out)."""
        if self.is_global:
            return keys
        return pc.binary_join_element_wise(partitions, keys, "\x00")

    def table_properties(self) -> dict[str, str]:
        """The ``hoodie.properties`` entries a new table records for its index: the type and,
        for the bucket index, its layout (so that every later writer and key lookups on read
        use the same one; Java ignores these keys)."""
        c = TableConfig
        props = dict([c.INDEX_TYPE.entry(self.type.value)])
        if self.bucket is not None:
            props.update(
                [
                    c.BUCKET_INDEX_NUM_BUCKETS.entry(self.bucket.num_buckets),
                    c.BUCKET_INDEX_HASH_FIELD.entry(self.bucket.hash_fields),
                ]
            )
            if self.bucket.consistent:
                props.update([c.BUCKET_INDEX_ENGINE.entry(self.bucket.engine.value)])
        return props

    def table_files(self) -> dict[str, bytes]:
        """The files a new table gets for its index (paths relative to the table): the
        partition-level bucket rules as the initial hashing config (Java saves it with the
        table: ``PartitionBucketIndexUtils.initHashingConfig``, instant
        ``00000000000000000``)."""
        rules = self.bucket.rules if self.bucket is not None else None
        if rules is None:
            return {}
        return {config_path(INITIAL_INSTANT): rules.at(INITIAL_INSTANT).to_json()}

    def warn_unused_options(self, o: Options) -> list[str]:
        """Warn about each set option this index does not use (nothing is silent: e.g.
        ``hoodie.parquet.max.file.size`` under the BUCKET index, whose file groups are fixed).

        Returns:
            The keys warned about.
        """
        # a consistent-hashing ring splits the nodes larger than max.file.size * threshold
        ring = self.bucket is not None and self.bucket.consistent
        unused = [
            (p, users)
            for p, users in _INDEX_ONLY_OPTIONS.items()
            if o.is_set(p)
            and self.type not in users
            and not (ring and p is WriteConfig.MAX_FILE_SIZE)
        ]
        for p, users in unused:
            log.warning(
                "option '%s' has no effect: the write uses hoodie.index.type=%s (it applies to %s)",
                p.key,
                self.type.value,
                ", ".join(users),
            )
        no_ring = [p.key for p in _RING_ONLY_OPTIONS if o.is_set(p) and not ring]
        for key in no_ring:
            log.warning(
                "option '%s' has no effect: it resizes the consistent-hashing bucket index "
                "(hoodie.index.type=BUCKET, hoodie.index.bucket.engine=CONSISTENT_HASHING)",
                key,
            )
        return [p.key for p, _ in unused] + no_ring

    @classmethod
    def resolve(
        cls,
        o: Options,
        config: TableConfig | None,
        record_key_fields: Sequence[str],
        partitioned: bool,
        table: TableState | None = None,
        base_uri: str = "",
    ) -> Index:
        """The index of a write: a new table's option; an existing table's own.

        An existing table's index is its recorded ``hoodie.index.type`` (tables hudi_ds
        creates), else the bucket index when it records a bucket count or the fileIds of its
        latest commit are all bucket fileIds (Java's Spark bucket index records neither:
        ``%08d`` bucket id prefixes, taken for bucket ids below 65536 -- a random UUID prefix
        is all digits and that small with a chance of about 1.5e-5), else Hudi's Spark
        default, SIMPLE. The bucket count is the table's (fixed when it was created) or the
        option's, and checked whatever the index.

        Args:
            record_key_fields: the write's record key fields (the default hash fields).
            partitioned: the table has partition fields (a key moves only between partitions).
            table: the opened existing table (its latest commits' fileIds).
            base_uri: the table's location (named in errors).

        Raises:
            ConfigError: the option asks for the bucket index on a table that has another
                one, or the other way round (the two place keys incompatibly), or a global
                index on a table hudi_ds created with a non-global one (or the other way
                round: one keeps keys unique per partition, the other across partitions); a
                bucket count contradicting the table's, or missing for a bucket table that does
                not record it; invalid bucket settings.
        """
        stored, table_rules = _stored_buckets(config, table)
        asked_buckets = o.get(WriteConfig.NUM_BUCKETS)
        if (
            stored is not None
            and o.is_set(WriteConfig.NUM_BUCKETS)
            and int(stored) != asked_buckets
        ):
            raise ConfigError(
                f"option '{NUM_BUCKETS_KEY}'={asked_buckets} contradicts the table's {stored} "
                "buckets (fixed when the table was created)"
            )
        num_buckets = validate_num_buckets(int(stored) if stored is not None else asked_buckets)
        keys = list(record_key_fields)
        hash_fields = (
            tuple(validate_hash_fields(o.get(WriteConfig.HASH_FIELD), keys)) if keys else ()
        )
        kind = _index_type(o, config, table)
        if (
            kind is IndexType.BUCKET
            and config is not None
            and stored is None
            and not o.is_set(WriteConfig.NUM_BUCKETS)
        ):
            raise ConfigError(
                f"option '{NUM_BUCKETS_KEY}' is required: the table at {base_uri} uses the "
                "bucket index (its fileIds are bucket ids) and does not record its bucket count"
            )
        if kind in (IndexType.RECORD_INDEX, IndexType.RECORD_LEVEL_INDEX):
            _check_record_index(o, config, base_uri, kind, table)
        update_prop = {
            IndexType.GLOBAL_BLOOM: WriteConfig.BLOOM_UPDATE_PARTITION_PATH,
            IndexType.RECORD_INDEX: WriteConfig.RECORD_INDEX_UPDATE_PARTITION_PATH,
        }.get(kind, WriteConfig.SIMPLE_UPDATE_PARTITION_PATH)
        bucket = None
        if kind is IndexType.BUCKET:
            engine = _bucket_engine(o, config, table, base_uri)
            rules = _partition_rules(o, config, table_rules, num_buckets, engine, base_uri)
            bucket = BucketLayout(num_buckets, hash_fields, engine, rules)
        return cls(
            type=kind,
            bucket=bucket,
            # Java HoodieIndexUtils: shouldUpdatePartitionPath = option && table is partitioned
            update_partition_path=bool(o.get(update_prop)) and partitioned,
            prune_by_ranges=o.get(WriteConfig.BLOOM_PRUNE_BY_RANGES),
            use_metadata=o.get(WriteConfig.BLOOM_USE_METADATA),
        )


def _stored_buckets(
    config: TableConfig | None, table: TableState | None
) -> tuple[str | None, HashingConfig | None]:
    """An existing table's recorded bucket count and its partition-level rules (their
    default is the count: a rescale may change it, the hashing config tells)."""
    if config is None:
        return None, None
    rules = None
    if table is not None and not records_another_index(config):  # (no listing for those)
        rules = latest_config(table.storage, table.timeline)
    if rules is not None:
        return str(rules.default_bucket_number), rules
    return config.props.get(NUM_BUCKETS_KEY), None


def _partition_rules(
    o: Options,
    config: TableConfig | None,
    table_rules: HashingConfig | None,
    num_buckets: int,
    engine: BucketEngine,
    base_uri: str,
) -> HashingConfig | None:
    """The partition-level bucket rules of a BUCKET write: a new table's options; an existing
    table's latest committed hashing config (``table_rules``), which the options may repeat.

    Raises:
        ConfigError: rules with the consistent-hashing engine (Java's partition-level index
            is the SIMPLE engine's); options that contradict the table's rules, or rules for
            an existing table without them (both change by a rescale only); invalid rules.
    """
    asked = o.get(WriteConfig.BUCKET_PARTITION_EXPRESSIONS)
    expr_key = WriteConfig.BUCKET_PARTITION_EXPRESSIONS.key
    if asked is not None and not asked.strip():
        raise ConfigError(f"option '{expr_key}' is empty: give 'regex,buckets' rules or unset it")
    rule = RuleType.parse(o.get(WriteConfig.BUCKET_PARTITION_RULE_TYPE))
    if (asked is not None or table_rules is not None) and engine is not BucketEngine.SIMPLE:
        raise ConfigError(
            f"option '{expr_key}' (partition-level bucket index) works with "
            f"hoodie.index.bucket.engine=SIMPLE, not {engine.value}"
        )
    rescale = "change them with a rescale: hudi-py bucket-rescale (hudi_ds.rescale_buckets)"
    if asked is None and table_rules is None and o.is_set(WriteConfig.BUCKET_PARTITION_RULE_TYPE):
        warn_no_effect(
            WriteConfig.BUCKET_PARTITION_RULE_TYPE.key, rule.value, f"no '{expr_key}' to read"
        )
    if config is None:
        return HashingConfig(asked, num_buckets, rule) if asked is not None else None
    if table_rules is None:
        if asked is not None:
            raise ConfigError(
                f"option '{expr_key}'={asked!r}: the table at {base_uri} has no partition-level "
                f"bucket rules (it has {num_buckets} buckets in every partition); {rescale}"
            )
        return None
    if (asked is not None and asked != table_rules.expressions) or (
        o.is_set(WriteConfig.BUCKET_PARTITION_RULE_TYPE) and rule is not table_rules.rule
    ):
        raise ConfigError(
            f"option '{expr_key}'={asked!r} (rule {rule.value}) contradicts the rules of the "
            f"table at {base_uri}: {table_rules.expressions!r} (rule {table_rules.rule.value}, "
            f"hashing config {table_rules.instant}); {rescale}"
        )
    return table_rules


def _bucket_engine(
    o: Options, config: TableConfig | None, table: TableState | None, base_uri: str
) -> BucketEngine:
    """The bucket engine of a BUCKET write: a new table's option; an existing table's own (its
    recorded ``hoodie.index.bucket.engine``, else CONSISTENT_HASHING when it keeps hashing
    metadata, as Java's writers of that engine do, else SIMPLE).

    Raises:
        ConfigError: the option contradicts the existing table's engine (the two place keys
            in different file groups).
    """
    asked = BucketEngine(o.get(WriteConfig.BUCKET_ENGINE))
    if config is None:
        return asked
    recorded = config.get(TableConfig.BUCKET_INDEX_ENGINE)
    if recorded:
        try:
            current = BucketEngine(str(recorded).strip().upper())
        except ValueError:
            raise ConfigError(
                f"hoodie.index.bucket.engine={recorded!r} (recorded in hoodie.properties): "
                f"not one of {', '.join(BucketEngine)}"
            ) from None
        why = "recorded in hoodie.properties"
    elif (
        table is not None
        and not config.get(TableConfig.INDEX_TYPE)  # hudi_ds records a ring's engine
        and has_consistent_hashing_metadata(table.storage)
    ):
        current, why = BucketEngine.CONSISTENT_HASHING, "it keeps consistent hashing metadata"
    else:
        current, why = BucketEngine.SIMPLE, "its file ids are bucket ids"
    if o.is_set(WriteConfig.BUCKET_ENGINE) and asked is not current:
        raise ConfigError(
            f"option 'hoodie.index.bucket.engine'={asked.value!r} contradicts the table at "
            f"{base_uri}, whose bucket engine is {current.value!r} ({why})"
        )
    return current


def _check_record_index(
    o: Options,
    config: TableConfig | None,
    base_uri: str,
    kind: IndexType = IndexType.RECORD_INDEX,
    table: TableState | None = None,
) -> None:
    """RECORD_INDEX needs the global record index, RECORD_LEVEL_INDEX the partitioned one: the
    table's (``record_index`` declared, its definition's ``isPartitioned`` telling the kind),
    or the one a new metadata table gets with ``hoodie.metadata.record.index.enable=true``
    (``hoodie.metadata.record.level.index.enable=true``). A table without a completed commit
    counts as new: it has no key to look up, and its first commit creates the metadata table
    with the index (a streaming sink's first micro-batch opens the table it created again to
    commit).

    Raises:
        ConfigError: neither, naming the options to set.
    """
    partitioned = kind is IndexType.RECORD_LEVEL_INDEX
    enable = (
        WriteConfig.METADATA_RECORD_LEVEL_INDEX_ENABLE
        if partitioned
        else WriteConfig.METADATA_RECORD_INDEX_ENABLE
    )
    has = config is not None and RECORD_INDEX_PARTITION in declared_partitions(config)
    if has and config is not None and table is not None:
        has = record_index_partitioned(config, table.storage) == partitioned
    if has and o.get(enable) is not False:
        return
    committed = table is None or table.timeline.last_completed() is not None
    new = config is None or not (committed or declared_partitions(config))
    if new and o.get(enable) and o.get(WriteConfig.METADATA_ENABLE) is not False:
        return
    what = "partitioned record index" if partitioned else "record index"
    where = f"the table at {base_uri} has no {what}" if config is not None else "a new table"
    fallback = "SIMPLE" if partitioned else "GLOBAL_SIMPLE"
    raise ConfigError(
        f"hoodie.index.type={kind.value} looks keys up in the metadata table's {what}: "
        f"{where}; create the table with hoodie.metadata.enable=true and {enable.key}=true, "
        f"or use {fallback}"
    )


def _index_type(o: Options, config: TableConfig | None, table: TableState | None) -> IndexType:
    """The index type of :meth:`Index.resolve`."""
    asked_value: str = o.get(WriteConfig.INDEX_TYPE)
    asked = IndexType.parse(asked_value)
    if config is None:
        return asked
    recorded = config.get(TableConfig.INDEX_TYPE)
    storage = table.storage if table is not None else None
    from_record_index = None if recorded else record_index_stand_in(config, storage)
    if recorded:
        why = f"recorded in hoodie.properties ({TableConfig.INDEX_TYPE.key})"
        current = IndexType.parse(recorded, why)
    elif config.get(TableConfig.BUCKET_INDEX_NUM_BUCKETS) is not None:
        current = IndexType.BUCKET
        why = f"it records {TableConfig.BUCKET_INDEX_NUM_BUCKETS.key}"
    elif table is not None and _has_bucket_file_ids(table):
        current, why = IndexType.BUCKET, "its fileIds are bucket-index fileIds"
    elif table is not None and has_consistent_hashing_metadata(table.storage):
        current, why = IndexType.BUCKET, "it keeps consistent hashing metadata"
    elif table is not None and is_partition_level(table.storage, table.timeline):
        current, why = IndexType.BUCKET, "it keeps partition-level bucket rules"
    elif from_record_index is not None:
        current, why = from_record_index
        if not o.is_set(WriteConfig.INDEX_TYPE):
            log.warning(
                "%s records no hoodie.index.type; %s: writing with hoodie.index.type=%s",
                table.storage.base_uri if table is not None else "the table",
                why,
                current.value,
            )
    else:
        current, why = IndexType.SIMPLE, "not recorded: Hudi's Spark default"
    if not o.is_set(WriteConfig.INDEX_TYPE):
        return current
    bucket = IndexType.BUCKET
    if (asked is bucket) != (current is bucket) or (
        (recorded or from_record_index) and asked.is_global != current.is_global
    ):
        raise ConfigError(
            f"option 'hoodie.index.type'={asked_value!r} contradicts the existing table, whose "
            f"index is {current.value!r} ({why})"
        )
    return asked


def records_another_index(config: TableConfig) -> bool:
    """The table records a ``hoodie.index.type`` other than BUCKET (any other value, one
    hudi_ds writes with or not), or the consistent-hashing bucket engine: its fileIds say
    nothing of bucket numbers (tables hudi_ds created with another index or engine)."""
    engine = config.get(TableConfig.BUCKET_INDEX_ENGINE)
    if engine and str(engine).strip().upper() == BucketEngine.CONSISTENT_HASHING:
        return True
    recorded = config.get(TableConfig.INDEX_TYPE)
    if not recorded:
        return False
    return recorded.upper() != IndexType.BUCKET


def latest_write_stats(table: TableState, limit: int = 5) -> list[Any]:
    """Write stats of the latest completed commits that wrote files (at most ``limit``)."""
    tl = table.timeline
    for instant in reversed(list(tl.commits())[-limit:]):
        stats = [s for s in tl.read_commit_metadata(instant).write_stats() if s.file_id]
        if stats:
            return stats
    return []


def _has_bucket_file_ids(table: TableState) -> bool:
    ids = [s.file_id for s in latest_write_stats(table)]
    buckets = [bucket_id_of(f) for f in ids]
    return bool(ids) and all(b is not None and b < _MAX_DETECTED_BUCKET for b in buckets)


def record_index_stand_in(
    config: TableConfig, storage: Storage | None
) -> tuple[IndexType, str] | None:
    """The index that keeps an existing table's keys as its writers' record-level index did,
    when its metadata table has one (``record_index`` completed or in flight in
    ``hoodie.table.metadata.partitions``), else None; with why (for the log and errors).

    Java's writers use the record-level index (``hoodie.index.type=RECORD_INDEX`` with
    ``hoodie.metadata.record.index.enable=true``) without recording it in
    ``hoodie.properties``. That index is global (``HoodieRecordIndex`` /
    ``SparkMetadataTableRecordIndex.isGlobal``: a key is unique across partitions, and an update
    arriving with another partition finds its record where it is), unless Hudi 1.1 built it
    partitioned (``isPartitioned=true`` in the record index's definition, ``.hoodie/.index_defs``,
    read by ``UpgradeDowngradeUtils.setPropertiesBasedOnMetadataPartitions``; index type
    ``PARTITIONED_RECORD_INDEX``: unique per partition). hudi_ds keeps either in step
    (:mod:`hudi_ds.metadata.record_index_writer`) and looks keys up in it when asked to
    (RECORD_INDEX, RECORD_LEVEL_INDEX); a table that names no index is written with the file
    lookup that keeps the same uniqueness: GLOBAL_SIMPLE (keys looked up across every
    partition) or SIMPLE. Writing with the SIMPLE default instead would add a second copy of a
    key that arrives with another partition.

    Raises:
        ConfigError: the index definitions file cannot be read: whether the index is
            partitioned, and so which keys are one record, cannot be told.
    """
    declared = declared_partitions(config) + declared_partitions(
        config, METADATA_PARTITIONS_INFLIGHT_KEY
    )
    if RECORD_INDEX_PARTITION not in declared:
        return None
    partitioned = record_index_partitioned(config, storage)
    if partitioned:
        return IndexType.SIMPLE, (
            "its metadata table has a partitioned record-level index (record_index, "
            "isPartitioned=true: keys unique per partition; hoodie.index.type="
            "RECORD_LEVEL_INDEX looks keys up in it)"
        )
    return IndexType.GLOBAL_SIMPLE, (
        "its metadata table has Java's record-level index (record_index: keys unique across "
        "partitions), which hudi_ds keeps in step but does not look keys up in"
    )


def record_index_entry(
    before: TableConfig, after: Mapping[str, str], storage: Storage
) -> dict[str, str]:
    """The ``hoodie.index.type`` entry to record when an update of ``hoodie.properties`` from
    ``before`` to ``after`` drops the metadata table's record index (hudi_ds does not maintain
    it) from a table that records no index: the stand-in chosen while the partition was there
    (:func:`record_index_stand_in`) stays the table's index once its evidence is gone, so a
    later write does not fall back to the non-global default. Empty otherwise."""
    if before.get(TableConfig.INDEX_TYPE) or TableConfig.INDEX_TYPE.key in after:
        return {}
    cfg_after = TableConfig(dict(after))
    still = declared_partitions(cfg_after) + declared_partitions(
        cfg_after, METADATA_PARTITIONS_INFLIGHT_KEY
    )
    if RECORD_INDEX_PARTITION in still:
        return {}
    chosen = record_index_stand_in(before, storage)
    return {} if chosen is None else dict([TableConfig.INDEX_TYPE.entry(chosen[0].value)])


def table_index_type(table: TableState) -> IndexType:
    """The index an existing table uses (as :meth:`Index.resolve` finds it without options):
    recorded, implied by a bucket count or bucket file ids, else Hudi's Spark default."""
    return _index_type(Options(), table.config, table)


def table_bucket_layout(table: TableState) -> BucketLayout | None:
    """An existing table's bucket layout as its writers resolve it without options (None for
    another index): the recorded bucket count (else Java's default) and hash fields (else
    the record key fields), and its engine.

    Raises:
        ConfigError: the recorded settings are invalid.
    """
    if table_index_type(table) is not IndexType.BUCKET:
        return None
    config = table.config
    stored, rules = _stored_buckets(config, table)
    num_buckets = validate_num_buckets(
        int(stored) if stored is not None else Options().get(WriteConfig.NUM_BUCKETS)
    )
    keys = config.record_key_fields
    fields = TableConfig.BUCKET_INDEX_HASH_FIELD.items(config.props)
    hash_fields = tuple(validate_hash_fields(fields, keys)) if keys else ()
    engine = _bucket_engine(Options(), config, table, table.storage.base_uri)
    return BucketLayout(num_buckets, hash_fields, engine, rules)
