"""Cross-check ``hoodie.bucket.index.num.buckets`` against the file groups on storage.

``hoodie.table.checksum`` covers only the table name (Java ``HoodieTableConfig.generateChecksum``
hashes ``"<database>.<table>"``), so a damaged or hand-edited bucket count in
``hoodie.properties`` goes unnoticed by the checksum -- and a writer trusting it routes keys
to the wrong buckets: an existing key lands in a new file group and the table holds it twice.

Before a write, the bucket layout the files encode is compared with the configured count:

1. every bucket file group's id (the 8-digit prefix of its fileId, ``00000003-...``) must be
   below the count;
2. a few record keys of a sample of file groups (the ``_hoodie_record_key`` min/max of a base
   file's Parquet footer, or the keys of the first block of a small log file) must hash to the
   bucket of the file group holding them. A table without meta fields stores no keys: they are
   built from the record key fields of a base file's first rows (one row group's key columns
   read) or of the log block's rows.

Before a write, the partitions checked are a sample: the first :data:`MAX_CHECKED_PARTITIONS`
the walk of the table's folders finds (a count set wrong for the table contradicts every
partition), so a write's cost does not grow with the number of partitions. Every partition a
write routes rows to has its bucket ids checked when its rows are tagged
(:meth:`hudi_ds.write.plan.BucketFiles.slices`), before its files are written.

The cost is a few listings and at most :data:`MAX_SAMPLED_GROUPS` footer (or small log) reads.
Data files are immutable, so the keys sampled from one are kept for the process
(:data:`_SAMPLED`): the next write of the table samples the same groups and, while their
sampled files are unchanged, reads nothing (on an object store each read is a round trip).
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict

import pyarrow as pa
import pyarrow.parquet as pq

from hudi_ds.errors import CorruptFileError, HudiError
from hudi_ds.index.bucket import NUM_BUCKETS_KEY, bucket_ids_from_record_keys
from hudi_ds.index.partition_bucket import CONFIGS_DIR, latest_config
from hudi_ds.keygen import record_keys
from hudi_ds.layout.file_group import FileGroup
from hudi_ds.layout.lance import LanceBaseFile
from hudi_ds.layout.naming import bucket_id_of
from hudi_ds.layout.parquet import MAX_RECORD_KEY_FOOTER, MIN_RECORD_KEY_FOOTER
from hudi_ds.log.block import BlockType, LogBlock
from hudi_ds.log.reader import decode_data_block, decode_delete_block, scan_log_bytes
from hudi_ds.metadata.records import partition_path_of_id
from hudi_ds.schema.meta import RECORD_KEY_METADATA_FIELD
from hudi_ds.storage import Storage
from hudi_ds.table.fs_view import FileSystemView, StorageListing
from hudi_ds.table_config import PROPS_FILE, TableConfig
from hudi_ds.timeline.view import TableState

log = logging.getLogger("hudi_ds.write")

#: partitions checked before a write (a sample: found by a walk that stops there)
MAX_CHECKED_PARTITIONS = 8
#: file groups whose keys are sampled (a key of a group matches a wrong count by chance with
#: a probability of about 1/num_buckets, so a few groups with 2-4 keys each are enough)
MAX_SAMPLED_GROUPS = 4
#: log files larger than this are not read for a sample (base files only need their footer)
MAX_SAMPLED_LOG_BYTES = 4 << 20
#: keys taken from one log block
KEYS_PER_LOG = 4
#: files whose sampled keys are kept (:func:`_sample_keys`)
MAX_CACHED_SAMPLES = 1024

#: the keys sampled from a data file, by (the storage's shared cache id, the file's path, its
#: size, the table's key settings): data files never change once written
_SAMPLED: OrderedDict[tuple[object, ...], list[str]] = OrderedDict()
_SAMPLED_LOCK = threading.Lock()


def check_bucket_layout(
    state: TableState,
    num_buckets: int,
    hash_fields: list[str],
) -> FileSystemView:
    """Raise when the file groups on storage contradict ``num_buckets``, or, on a table with
    partition-level bucket rules, the count its latest committed rules give each partition
    (its live file groups: a rescale's replaced ones had the count before it).

    The partitions checked are the first :data:`MAX_CHECKED_PARTITIONS` the walk finds.

    Returns:
        The file-system view it listed (for further checks on the same listing).

    Raises:
        CorruptFileError: a file group's bucket id is not below ``num_buckets``, or a sampled
            record key hashes to another bucket than the one holding it (the message names
            ``hoodie.properties``, the key and the value).
    """
    storage, config = state.storage, state.config
    listing = StorageListing(storage)
    view = FileSystemView(storage, config, listing)
    partitions = [partition_path_of_id(p) for p in listing.partitions(MAX_CHECKED_PARTITIONS)]
    rules = latest_config(storage, state.timeline)
    where = storage.full_path(PROPS_FILE if rules is None else CONFIGS_DIR)
    vis = state.visibility() if rules is not None else None
    groups: list[tuple[FileGroup, int]] = []
    for p in partitions:
        n = num_buckets if rules is None else rules.num_buckets(p)
        # with rules, the live file groups only: a rescale's replaced ones (and a failed
        # one's new ones) have another count
        live = {s.file_id for s in view.latest_file_slices(p, vis)} if vis else None
        for g in view.file_groups(p):
            bucket = bucket_id_of(g.file_id)
            if bucket is None or (live is not None and g.file_id not in live):
                continue  # not a bucket file group (written with another index), or not live
            if bucket >= n:
                raise CorruptFileError(
                    f"{where}: {NUM_BUCKETS_KEY}={n} contradicts file group "
                    f"{g.file_id} in partition {p!r} (bucket {bucket}); the table's files were "
                    "written with more buckets"
                )
            groups.append((g, bucket))
    if not config.record_key_fields:
        return view
    # base files first: their footer statistics are the cheapest sample
    groups.sort(key=lambda gb: (not gb[0].base_files, gb[1]))
    sampled = 0
    for g, bucket in groups:
        if sampled >= MAX_SAMPLED_GROUPS:
            break
        keys = _sample_keys(storage, g, config)
        if not keys:
            continue
        sampled += 1
        n = num_buckets if rules is None else rules.num_buckets(g.partition_path)
        ids = bucket_ids_from_record_keys(
            pa.array(keys, pa.string()), hash_fields, n, config.complex_record_key
        )
        for key, got in zip(keys, ids.tolist(), strict=True):
            if got != bucket:
                raise CorruptFileError(
                    f"{where}: {NUM_BUCKETS_KEY}={n} contradicts the files: record key "
                    f"{key!r} is stored in file group {g.file_id} of partition "
                    f"{g.partition_path!r} (bucket {bucket}) but hashes to bucket {got} with "
                    f"{n} buckets; the table was written with another bucket count "
                    "(writing now would duplicate keys)"
                )
    return view


def _sample_keys(storage: Storage, g: FileGroup, config: TableConfig) -> list[str]:
    """A few record keys stored in file group ``g`` (empty when none can be had cheaply): of
    its newest base file, else of its smallest log file -- or of any of its small log files
    sampled before (every one is as good a sample, and a new log file would be read again)."""
    lance = False
    if g.base_files:
        base = max(g.base_files, key=lambda b: b.instant_time)
        path, size, lance = base.path, base.size, base.name.extension == ".lance"
        known = [(path, size)]
    else:
        small = [lf for lf in g.log_files if 0 < lf.size <= MAX_SAMPLED_LOG_BYTES]
        if not small:
            return []
        lf = min(small, key=lambda f: f.size)
        path, size = lf.path, lf.size
        known = [(f.path, f.size) for f in small]
    cache = storage.shared_cache_id
    settings = _settings(config)
    if cache is not None:
        with _SAMPLED_LOCK:
            for p, n in known:
                hit = _SAMPLED.get((cache, storage.full_path(p), n, settings))
                if hit is not None:
                    _SAMPLED.move_to_end((cache, storage.full_path(p), n, settings))
                    return hit
    try:
        if not g.base_files:
            keys = _log_keys(storage, path, config)
        elif lance:
            keys = _lance_footer_keys(storage, path)
        elif not config.populate_meta_fields:
            keys = _field_keys(storage, path, config)
        else:
            keys = _footer_keys(storage, path, size or None)
    except (OSError, ValueError, pa.ArrowException, HudiError) as e:
        # a stray file of a failed write: readers report those, the check just skips it
        log.debug("no key sample from file group %s: %s", g.file_id, e)
        return []
    if cache is not None and keys:
        with _SAMPLED_LOCK:
            _SAMPLED[(cache, storage.full_path(path), size, settings)] = keys
            while len(_SAMPLED) > MAX_CACHED_SAMPLES:
                _SAMPLED.popitem(last=False)
    return keys


def _settings(config: TableConfig) -> tuple[object, ...]:
    """What the keys sampled from a file depend on besides the file: stored keys (meta
    fields), or keys built from the key fields."""
    if config.populate_meta_fields:
        return ("meta",)
    return ("fields", tuple(config.record_key_fields), config.complex_record_key)


def remember_written(storage: Storage, path: str, size: int, footer: pq.FileMetaData) -> None:
    """Keep the key sample of a base file this process just wrote (with meta fields), from
    its footer as written: the next write's check needs no read of it."""
    cache = storage.shared_cache_id
    keys = _keys_of_footer(footer)
    if cache is None or not keys:
        return
    with _SAMPLED_LOCK:
        _SAMPLED[(cache, storage.full_path(path), size, ("meta",))] = keys
        while len(_SAMPLED) > MAX_CACHED_SAMPLES:
            _SAMPLED.popitem(last=False)


def _footer_keys(storage: Storage, path: str, size: int | None = None) -> list[str]:
    with storage.open_input_file(path, size) as f:
        md = pq.ParquetFile(f).metadata
    return _keys_of_footer(md)


def _keys_of_footer(md: pq.FileMetaData) -> list[str]:
    """The min/max ``_hoodie_record_key`` of the first two row groups of a Parquet footer."""
    names = [md.schema.column(i).name for i in range(md.num_columns)]
    if RECORD_KEY_METADATA_FIELD not in names or md.num_row_groups == 0:
        return []
    idx = names.index(RECORD_KEY_METADATA_FIELD)
    out: list[str] = []
    for rg in range(min(md.num_row_groups, 2)):
        st = md.row_group(rg).column(idx).statistics
        if st is not None and st.has_min_max:
            out.extend(
                v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v)
                for v in (st.min, st.max)
            )
    return out


def _lance_footer_keys(storage: Storage, path: str) -> list[str]:
    """The min/max record key of a Lance base file's key footers (none without them)."""
    footer = LanceBaseFile(storage, path).footer()
    keys = (footer.get(k.encode()) for k in (MIN_RECORD_KEY_FOOTER, MAX_RECORD_KEY_FOOTER))
    return [k.decode("utf-8", "replace") for k in keys if k is not None]


def _field_keys(storage: Storage, path: str, config: TableConfig) -> list[str]:
    """Keys of a base file without meta fields: built from its first rows' key fields."""
    with storage.open_input_file(path) as f:
        pf = pq.ParquetFile(f)
        fields = config.record_key_fields
        if pf.metadata.num_row_groups == 0 or not set(fields) <= set(pf.schema_arrow.names):
            return []
        rows = pf.read_row_group(0, columns=fields).slice(0, KEYS_PER_LOG)
    return record_keys(rows, fields, config.complex_record_key).to_pylist()


def _parquet_block_keys(block: LogBlock, config: TableConfig) -> pa.Array | list[str] | None:
    """Keys of a Parquet data block: the min/max ``_hoodie_record_key`` of its first row group's
    statistics (its footer only, as for a base file), else the key column(s) alone (None: the
    block stores no keys to sample)."""
    pf = pq.ParquetFile(pa.BufferReader(block.content))
    md = pf.metadata
    names = pf.schema_arrow.names
    if md.num_row_groups == 0:
        return []
    if config.populate_meta_fields:
        if RECORD_KEY_METADATA_FIELD not in names:
            return None
        st = md.row_group(0).column(names.index(RECORD_KEY_METADATA_FIELD)).statistics
        if st is not None and st.has_min_max and st.null_count == 0:
            return [
                v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v)
                for v in (st.min, st.max)
            ]
        return pf.read_row_group(0, columns=[RECORD_KEY_METADATA_FIELD]).column(0)
    fields = config.record_key_fields  # null keys: built from the key fields
    if not set(fields) <= set(names):
        return None
    rows = pf.read_row_group(0, columns=list(fields)).slice(0, KEYS_PER_LOG)
    return record_keys(rows, fields, config.complex_record_key)


def _log_keys(storage: Storage, path: str, config: TableConfig) -> list[str]:
    for block in scan_log_bytes(storage.read_bytes(path), path).blocks:
        if block.block_type == BlockType.DELETE:
            keys = decode_delete_block(block).column(RECORD_KEY_METADATA_FIELD)
        elif block.block_type == BlockType.PARQUET_DATA:
            keys = _parquet_block_keys(block, config)
            if keys is None:
                return []
        elif block.block_type == BlockType.AVRO_DATA:
            table = decode_data_block(block)
            if not config.populate_meta_fields:  # null keys: built from the key fields
                fields = config.record_key_fields
                if not set(fields) <= set(table.column_names):
                    return []
                keys = record_keys(table, fields, config.complex_record_key)
            elif RECORD_KEY_METADATA_FIELD not in table.column_names:
                return []
            else:
                keys = table.column(RECORD_KEY_METADATA_FIELD)
        else:
            continue
        values = [
            k for k in (keys if isinstance(keys, list) else keys.to_pylist()) if k is not None
        ]
        if values:
            return values[:KEYS_PER_LOG] + values[-KEYS_PER_LOG:]
    return []
