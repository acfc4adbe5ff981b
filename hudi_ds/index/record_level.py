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
is not among the latest slices. hudi_ds keeps the index true on every action it mirrors
(:mod:`hudi_ds.metadata.record_index_writer`), so these are other writers' doing.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hudi_ds.errors import TableNotFoundError
from hudi_ds.index.lookup import KeyLocations, LookupSpec
from hudi_ds.index.simple import check_input, simple_lookup
from hudi_ds.layout.file_group import FileSlice
from hudi_ds.metadata.reader import completed_or_archived, lagging_instants, valid_instants
from hudi_ds.metadata.record_index import RECORD_INDEX_PARTITION, RecordLocation, read_locations
from hudi_ds.metadata.records import (
    METADATA_PARTITIONS_INFLIGHT_KEY,
    METADATA_PATH,
    declared_partitions,
)
from hudi_ds.storage import Storage
from hudi_ds.table_config import TableConfig
from hudi_ds.timeline.timeline import Timeline

__all__ = ["record_index_locations", "record_index_lookup"]

log = logging.getLogger("hudi_ds.write")


def record_index_locations(
    storage: Storage, keys: Sequence[str]
) -> dict[str, RecordLocation] | None:
    """Where the record index of the table at ``storage`` places ``keys`` (absent: not in the
    table); None when the table has no record index in step with its timeline."""
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
    return read_locations(
        mdt, mdt_tl, lambda t: completed_or_archived(mdt_tl, t) and t in valid, keys
    )


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
    distinct = pc.unique(keys)
    found = record_index_locations(storage, [k for k in distinct.to_pylist() if k is not None])
    if found is not None:
        slot = {(s.partition_path, s.file_id): i for i, s in enumerate(slices)}
        names = list(found)
        at = np.array([slot.get((found[k].partition, found[k].file_id), -2) for k in names])
        if not (at == -2).any():
            idx = pc.index_in(keys, value_set=pa.array(names, pa.string()))
            pos = idx.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)
            group = np.where(pos >= 0, np.append(at, -1)[pos], -1).astype(np.int64)
            return KeyLocations(
                group=group,
                group_file_ids=pa.array([s.file_id for s in slices], pa.string()),
                group_partitions=pa.array([s.partition_path for s in slices], pa.string()),
                group_instants=pa.array([s.base_instant_time for s in slices], pa.string()),
            )
        log.warning(
            "%s: the record index places keys in file groups that are not live; looking them "
            "up in the table's files",
            storage.base_uri,
        )
    else:
        log.info("%s: no record index in step: looking keys up in the files", storage.base_uri)
    return simple_lookup(storage, slices, keys, None, spec)
