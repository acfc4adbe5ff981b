"""The RECORD_INDEX lookup: where each incoming key lives, read from the metadata table's
record-level index (``record_index`` partition) instead of the table's files.

Java ``SparkMetadataTableRecordIndex.tagLocation``: the keys are hashed to the index's file
groups (:func:`hudi_ds.metadata.record_index.file_group_indexes`) and looked up there; only the
HFile data blocks the keys fall in are decoded and searched
(:func:`hudi_ds.layout.hfile_lookup.lookup_hfile`). The index is global (a key lives in one
partition) and indexes base files only (``canIndexLogFiles() == false``: inserts go to base
files).

The answer is the file-reading GLOBAL_SIMPLE lookup's whenever the index cannot be trusted:
the table declares no ``record_index`` (or only in flight), the metadata table misses a
completed data instant (a writer without it), or the index places a key in a file group that
is not among the latest slices. Hudi 1.1's partitioned record index (RECORD_LEVEL_INDEX) is
looked up the same way by (partition, key): each partition's keys in that partition's own file
groups (Java ``HoodieBackedTableMetadata.readRecordIndexLocations`` with a data partition,
``lookupRecordsInDataTablePartition``); it falls back to the SIMPLE lookup. hudi_ds keeps the
index true on every action it mirrors (:mod:`hudi_ds.metadata.record_index_writer`), so these
are other writers' doing.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hudi_ds.errors import SchemaError, TableNotFoundError
from hudi_ds.index.lookup import KeyLocations, LookupSpec
from hudi_ds.index.simple import check_input, simple_lookup
from hudi_ds.layout.file_group import FileSlice
from hudi_ds.metadata.reader import completed_or_archived, lagging_instants, valid_instants
from hudi_ds.metadata.record_index import (
    RECORD_INDEX_PARTITION,
    Located,
    RecordLocation,
    locate,
    read_partitioned_locations,
    record_index_partitioned,
)
from hudi_ds.metadata.records import (
    METADATA_PARTITIONS_INFLIGHT_KEY,
    METADATA_PATH,
    declared_partitions,
)
from hudi_ds.storage import Storage
from hudi_ds.table_config import TableConfig
from hudi_ds.timeline.timeline import Timeline

__all__ = [
    "partitioned_record_index_locations",
    "partitioned_record_index_lookup",
    "record_index_located",
    "record_index_locations",
    "record_index_lookup",
]

log = logging.getLogger("hudi_ds.write")


def _in_step(storage: Storage) -> tuple[Storage, Timeline, Callable[[str], bool]] | None:
    """The MDT, its timeline and the instants whose blocks count, when the table's record
    index is declared complete and the MDT misses no completed data instant; else None."""
    config = TableConfig.load(storage)
    declared = declared_partitions(config)
    if RECORD_INDEX_PARTITION not in declared or RECORD_INDEX_PARTITION in declared_partitions(
        config, METADATA_PARTITIONS_INFLIGHT_KEY
    ):
        return None
    mdt = storage.sub(METADATA_PATH)
    try:
        mdt_config = TableConfig.load(mdt)
    except TableNotFoundError:
        return None
    data_tl = Timeline.load(storage, config.timeline_layout_version, config.timeline_path)
    mdt_tl = Timeline.load(mdt, mdt_config.timeline_layout_version, mdt_config.timeline_path)
    if lagging_instants(data_tl, mdt_tl):
        return None
    valid = valid_instants(data_tl, mdt_tl, config.table_version)
    return mdt, mdt_tl, lambda t: completed_or_archived(mdt_tl, t) and t in valid


def record_index_locations(
    storage: Storage, keys: Sequence[str]
) -> dict[str, RecordLocation] | None:
    """Where the record index of the table at ``storage`` places ``keys`` (absent: not in the
    table); None when the table has no record index in step with its timeline."""
    found = record_index_located(storage, pa.array(list(keys), pa.string()))
    return None if found is None else found.as_dict()


def record_index_located(storage: Storage, keys: pa.Array) -> Located | None:
    """:func:`record_index_locations` as arrays (:class:`~hudi_ds.metadata.record_index.
    Located`): what a lookup of many keys uses."""
    found = _in_step(storage)
    if found is None:
        return None
    mdt, mdt_tl, keep = found
    return locate(mdt, mdt_tl, keep, keys)


def partitioned_record_index_locations(
    storage: Storage, keys: Mapping[str, Sequence[str]]
) -> dict[tuple[str, str], RecordLocation] | None:
    """Where the partitioned record index of the table at ``storage`` places each partition's
    ``keys``, by (partition, key); None when the table has no partitioned record index in step
    with its timeline."""
    if not record_index_partitioned(TableConfig.load(storage), storage):
        return None
    found = _in_step(storage)
    if found is None:
        return None
    mdt, mdt_tl, keep = found
    return read_partitioned_locations(mdt, mdt_tl, keep, keys)


def record_index_lookup(
    storage: Storage,
    slices: Sequence[FileSlice],
    keys: pa.Array,
    partitions: pa.Array | None,
    spec: LookupSpec,
) -> KeyLocations:
    """Locate ``keys`` through the record index (global: ``partitions`` unused), falling back
    to the GLOBAL_SIMPLE lookup over ``slices`` when the index cannot be trusted (module
    docstring). ``files_read`` counts no data file when the index answered."""
    del partitions
    keys, _ = check_input(keys, None)
    found = record_index_located(storage, pc.unique(keys))
    got = None if found is None else _answer(slices, keys, found)
    if got is not None:
        return got
    return _fall_back(storage, slices, keys, None, spec, found is not None, "")


def partitioned_record_index_lookup(
    storage: Storage,
    slices: Sequence[FileSlice],
    keys: pa.Array,
    partitions: pa.Array | None,
    spec: LookupSpec,
) -> KeyLocations:
    """Locate each (partition, key) through the partitioned record index, falling back to the
    SIMPLE lookup over ``slices`` when the index cannot be trusted (module docstring)."""
    keys, parts = check_input(keys, partitions)
    if parts is None:
        raise SchemaError("RECORD_LEVEL_INDEX looks keys up by partition: no partition paths")
    pairs = pa.table({"p": parts, "k": keys}).group_by(["p", "k"]).aggregate([])
    by_part = pairs.group_by("p").aggregate([("k", "list")])
    wanted = dict(
        zip(by_part.column("p").to_pylist(), by_part.column("k_list").to_pylist(), strict=True)
    )
    found = partitioned_record_index_locations(storage, wanted)
    got = None
    if found is not None:
        # one row per distinct (partition, key): the join key is their pair
        joined = pc.binary_join_element_wise(parts, keys, _SEP)
        names = pa.array([f"{p}{_SEP}{k}" for p, k in found], pa.string())
        got = _answer(slices, joined, Located.of(names, list(found.values())))
    if got is not None:
        return got
    return _fall_back(storage, slices, keys, parts, spec, found is not None, "partitioned ")


_SEP = "\x00"


def _answer(slices: Sequence[FileSlice], keys: pa.Array, found: Located) -> KeyLocations | None:
    """The locations of ``keys`` when the index placed every key it found in a live file
    group of ``slices``; None when it placed one elsewhere."""
    slot = {(s.partition_path, s.file_id): i for i, s in enumerate(slices)}
    table = np.array([slot.get((c.partition, c.file_id), -2) for c in found.locations], np.int64)
    at = table[found.codes] if len(found.codes) else np.zeros(0, np.int64)
    if (at == -2).any():
        return None
    return _locations(slices, keys, found.keys, at)


def _fall_back(
    storage: Storage,
    slices: Sequence[FileSlice],
    keys: pa.Array,
    parts: pa.Array | None,
    spec: LookupSpec,
    answered: bool,
    kind: str,
) -> KeyLocations:
    """The SIMPLE lookup (global when ``parts`` is None), saying why the index was not used."""
    if answered:
        log.warning(
            "%s: the %srecord index places keys in file groups that are not live; looking "
            "them up in the table's files",
            storage.base_uri,
            kind,
        )
    else:
        log.info(
            "%s: no %srecord index in step: looking keys up in the files", storage.base_uri, kind
        )
    return simple_lookup(storage, slices, keys, parts, spec)


def _locations(
    slices: Sequence[FileSlice], keys: pa.Array, names: pa.Array, at: np.ndarray
) -> KeyLocations:
    """The locations of ``keys``: the slice ``at[i]`` for the key ``names[i]`` the index
    found, none (-1) for the others."""
    idx = pc.index_in(keys, value_set=names)
    pos = idx.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)
    group = np.where(pos >= 0, np.append(at, -1)[pos], -1).astype(np.int64)
    return KeyLocations(
        group=group,
        group_file_ids=pa.array([s.file_id for s in slices], pa.string()),
        group_partitions=pa.array([s.partition_path for s in slices], pa.string()),
        group_instants=pa.array([s.base_instant_time for s in slices], pa.string()),
    )
