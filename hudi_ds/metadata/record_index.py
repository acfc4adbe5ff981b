"""The metadata table's record-level index: the ``record_index`` partition (Hudi 0.14+).

One record per data record key, in one of the partition's N file groups
``record-index-<i %04d>-0``, ``i = mapRecordKeyToFileGroupIndex(key, N)``
(:func:`file_group_indexes`: Java ``String.hashCode`` of the key, ``abs(abs(h) % N)``). The HFile
row key is the record key; the value a ``HoodieMetadataRecord`` of ``type`` 5 whose
``recordIndexMetadata`` (``HoodieRecordIndexInfo``) says where the record lives::

    partitionName   the data partition path
    fileIdEncoding  0: fileId = <uuid>-<fileIndex>, held as fileIdHighBits / fileIdLowBits (the
                       UUID's most / least significant bits) + fileIndex, fileId ""
                    1: any other fileId, as the string fileId (high/low bits and index -1)
    instantTime     epoch milliseconds of the instant that put the key in that file group,
                    parsed in the timeline's time zone (``hoodie.table.timeline.timezone``)
    position        null (Hudi writes none)

A key leaves the index through a DELETE block of the file group's log (Java
``HoodieMetadataPayload.createRecordIndexDelete``: an empty payload; the delete record's
partition path is ``record_index``). Records merge per key in log order, the later one winning.

What an instant changes (:func:`instant_updates`, Java 1.1
``BaseRecordIndexer.convertMetadataToRecordIndexRecords`` and
``BaseFileRecordParsingUtils.generateRLIMetadataHoodieRecordsForBaseFile``):

* a base file written by a commit: the keys it holds that the file group's previous base file
  did not are put at ``(partition, fileId, instant)``, the previous base file's keys it no
  longer holds are deleted -- updates in place change nothing;
* a log file: keys of the instant's data blocks not already indexed at that file group are put
  there, keys of its delete blocks indexed there are deleted;
* compaction and log compaction change nothing (a file group keeps its id);
* INSERT_OVERWRITE(_TABLE) / DELETE_PARTITION: the keys of the replaced file groups that the
  instant did not write again are deleted;
* a key both put and deleted by one instant (it moved) is put (Java ``reduceByKeys``).

Building the partition from a table (:func:`bootstrap_locations`, Java
``BaseRecordIndexer.readRecordKeysFromFileSliceSnapshot``): every key of every latest file
slice, at the slice's base instant.

Hudi 1.1's partitioned record index (``hoodie.metadata.record.level.index.enable``; the index
definition's ``indexOptions.isPartitioned = "true"``) keeps one record per (data partition,
record key) in the same partition with the same records, but each data partition has file
groups of its own, ``record-index-<escaped partition>-<i %04d>-0``
(:func:`partitioned_file_group_id`, Java ``HoodieTableMetadataUtil.getFileIDForFileGroup`` with
a data partition: ``PartitionPathEncodeUtils.escapeFileName``, which also escapes ``-`` and
``_``, so the partition is the third ``-``-separated part from the end,
``getDataTablePartitionNameFromFileGroupName``). A key maps to file group
``mapRecordKeyToFileGroupIndex(key, n)`` among its partition's ``n`` groups sorted by file id
(``HoodieBackedTableMetadata.lookupEncodedKeysInDataTablePartition``); a partition's count is
estimated when the index is built (per partition, ``PartitionedRecordIndexer``) and a partition
the index has not seen gets ``hoodie.metadata.record.level.index.min.filegroup.count`` groups in
the deltacommit that first writes it (``HoodieBackedTableMetadataWriter.
initializeNewFileGroupsForPartitionedRLIHelper``).
"""

from __future__ import annotations

import functools
import io
import json
import os
import typing
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import fastavro
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hudi_ds.errors import ConfigError, CorruptFileError
from hudi_ds.index.bucket import java_string_hash
from hudi_ds.layout.file_group import BaseFile, FileSlice
from hudi_ds.layout.hfile import read_hfile
from hudi_ds.layout.naming import parse_base_file_name, parse_log_file_name
from hudi_ds.log.block import BlockType
from hudi_ds.log.reader import decode_delete_block
from hudi_ds.metadata import record_index_cache
from hudi_ds.metadata.record_index_cache import Query, Stamp
from hudi_ds.schema.meta import RECORD_KEY_METADATA_FIELD
from hudi_ds.storage import Storage
from hudi_ds.table_config import TableConfig
from hudi_ds.timeline.instant import TimeZoneLike, instant_time_to_datetime
from hudi_ds.timeline.timeline import Timeline

__all__ = [
    "FILE_ID_PREFIX",
    "RECORD_INDEX_PARTITION",
    "RECORD_INDEX_TYPE",
    "GroupUpdates",
    "Located",
    "RecordIndexUpdates",
    "RecordLocation",
    "bootstrap_locations",
    "decode_value",
    "distinct_locations",
    "encode_value",
    "PartitionedUpdates",
    "data_partition_of",
    "escape_file_name",
    "file_group_id",
    "file_group_indexes",
    "instant_millis",
    "layout_matches",
    "locate",
    "locate_in_slice",
    "partitioned_file_group_id",
    "read_locations",
    "read_partitioned_locations",
    "record_index_partitioned",
]

RECORD_INDEX_PARTITION = "record_index"
"""The MDT partition of the record-level index (``MetadataPartitionType.RECORD_INDEX``)."""
RECORD_INDEX_TYPE = 5
"""``type`` of its records (Java ``MetadataPartitionType.RECORD_INDEX.getRecordType()``)."""
FILE_ID_PREFIX = "record-index-"
"""File ids of its file groups: ``record-index-<i %04d>-0``."""


def file_group_id(index: int) -> str:
    """The file id of file group ``index`` (Java
    ``HoodieTableMetadataUtil.getFileIDForFileGroup``)."""
    return f"{FILE_ID_PREFIX}{index:04d}-0"


#: characters ``PartitionPathEncodeUtils.escapeFileName`` writes as ``%XX``: controls, Hive's
#: path escapes, and ``_`` / ``-`` (``-`` separates the parts of a file id)
_FILE_NAME_ESCAPES = frozenset([chr(c) for c in range(0x20)] + list("\"#%'*/:=?\\\x7f{[]^_-"))


def escape_file_name(name: str) -> str:
    """Java ``PartitionPathEncodeUtils.escapeFileName``: each character of
    :data:`_FILE_NAME_ESCAPES` as ``%`` and two upper-case hex digits."""
    return "".join(f"%{ord(c):02X}" if c in _FILE_NAME_ESCAPES else c for c in name)


def _unescape(name: str) -> str:
    """Java ``PartitionPathEncodeUtils.unescapePathName``: ``%XX`` back to its character."""
    out = []
    i = 0
    while i < len(name):
        c = name[i]
        if c == "%" and i + 2 < len(name):
            try:
                code = int(name[i + 1 : i + 3], 16)
            except ValueError:
                code = -1
            if code >= 0:
                out.append(chr(code))
                i += 3
                continue
        out.append(c)
        i += 1
    return "".join(out)


def partitioned_file_group_id(partition: str, index: int) -> str:
    """The file id of file group ``index`` of data ``partition`` in a partitioned record index
    (Java ``HoodieTableMetadataUtil.getFileIDForFileGroup`` with a data partition name)."""
    return f"{FILE_ID_PREFIX}{escape_file_name(partition)}-{index:04d}-0"


def data_partition_of(file_id: str) -> str | None:
    """The data partition a partitioned record index's file group indexes, None for a file id
    of the global index (Java ``verifyRLIFile``: a partitioned one has four ``-``;
    ``getDataTablePartitionNameFromFileGroupName``)."""
    if not file_id.startswith(FILE_ID_PREFIX) or file_id.count("-") != 4:
        return None
    return _unescape(file_id.split("-")[-3])


def record_index_partitioned(config: TableConfig, storage: Storage | None) -> bool:
    """``isPartitioned`` of the record index's definition (absent before Hudi 1.1: global)."""
    rel = config.get(TableConfig.INDEX_DEFS_PATH)
    if not rel or storage is None or not storage.exists(rel):
        return False
    try:
        doc = json.loads(storage.read_text(rel))
        definition = doc.get("indexDefinitions", {}).get(RECORD_INDEX_PARTITION) or {}
        options = definition.get("indexOptions") or {}
    except (ValueError, AttributeError) as e:
        raise ConfigError(
            f"{storage.uri(rel)} ({TableConfig.INDEX_DEFS_PATH.key}) cannot be read "
            f"({e}): whether the table's record-level index is partitioned cannot be told; "
            "set hoodie.index.type (GLOBAL_SIMPLE for a global record index, SIMPLE for a "
            "partitioned one)"
        ) from None
    return str(options.get("isPartitioned", "false")).strip().lower() == "true"


def file_group_indexes(keys: pa.Array | pa.ChunkedArray, count: int) -> np.ndarray:
    """The file group index of each key: Java ``HoodieTableMetadataUtil.
    mapRecordKeyToFileGroupIndex`` -- ``String.hashCode`` (UTF-16 units) as int32, then
    ``Math.abs(Math.abs(h) % count)`` -- vectorised.

    Raises:
        ValueError: ``count`` is not positive.
    """
    if count <= 0:
        raise ValueError(f"a record index needs at least one file group, not {count}")
    h = java_string_hash(keys).astype(np.int64)
    # Math.abs(Integer.MIN_VALUE) stays negative in Java; its remainder's abs is the same as
    # the int64 remainder of 2**31
    return np.asarray(np.abs(h) % count, dtype=np.int64)


def instant_millis(instant_time: str, timezone: TimeZoneLike) -> int:
    """``instantTime`` of a record: epoch milliseconds of ``instant_time`` read in the
    timeline's zone (Java ``HoodieMetadataPayload.parseRecordIndexInstantTime``)."""
    return int(instant_time_to_datetime(instant_time[:17], timezone).timestamp() * 1000)


@dataclass(frozen=True)
class RecordLocation:
    """Where a record lives: data partition, file id, instant (epoch ms) it was put there."""

    partition: str
    file_id: str
    instant_ms: int


@dataclass(frozen=True)
class Located:
    """Where the record index places some keys, as arrays (a lookup of many keys builds no
    object per key): ``keys[i]`` is at ``locations[codes[i]]``.

    Attributes:
        keys: the keys found (string array, distinct).
        codes: per key, the index of its location in ``locations`` (int64).
        locations: the locations (one object per location read: a file group and instant's
            keys share it).
    """

    keys: pa.Array
    codes: np.ndarray
    locations: list[RecordLocation]

    @classmethod
    def of(cls, keys: pa.Array, locs: Sequence[RecordLocation] | np.ndarray) -> Located:
        """``keys`` at the locations ``locs`` (an object array aligned with them)."""
        codes, distinct = distinct_locations(locs)
        return cls(keys, codes, distinct)

    @classmethod
    def concat(cls, parts: Sequence[Located]) -> Located:
        """The keys of several lookups of distinct keys (the file groups of one lookup)."""
        if not parts:
            return cls(pa.array([], pa.string()), np.zeros(0, np.int64), [])
        shift = np.cumsum([0, *(len(p.locations) for p in parts[:-1])])
        return cls(
            pa.concat_arrays([p.keys for p in parts]),
            np.concatenate([p.codes + k for p, k in zip(parts, shift.tolist(), strict=True)]),
            [loc for p in parts for loc in p.locations],
        )

    def subset(self, wanted: pa.Array) -> Located:
        """The keys of ``wanted`` among these (the locations shared)."""
        keep = pc.is_in(self.keys, value_set=wanted)
        mask = keep.to_numpy(zero_copy_only=False)
        return Located(self.keys.filter(keep), self.codes[mask], self.locations)

    def __len__(self) -> int:
        return len(self.keys)

    def as_dict(self) -> dict[str, RecordLocation]:
        """Key -> location (for callers that look few keys up)."""
        locs = self.locations
        return {k: locs[c] for k, c in zip(self.keys.to_pylist(), self.codes.tolist(), strict=True)}


@functools.lru_cache(maxsize=16)
def _parsed(schema_json: str) -> Any:
    return fastavro.parse_schema(json.loads(schema_json))


@functools.lru_cache(maxsize=16)
def _null_fields(schema_json: str) -> tuple[str, ...]:
    names = [f["name"] for f in json.loads(schema_json)["fields"]]
    return tuple(n for n in names if n not in ("key", "type", "recordIndexMetadata"))


def _info(loc: RecordLocation) -> dict[str, Any]:
    try:
        fid, _, index = loc.file_id.rpartition("-")
        if len(loc.file_id) == 36:  # a bare UUID: Java's RECORD_INDEX_MISSING_FILEINDEX_FALLBACK
            fid, index = loc.file_id, "-1"
        u = uuid.UUID(fid)
        if str(u) != fid.lower():
            raise ValueError(fid)
        file_index = int(index)
    except ValueError:
        return {
            "partitionName": loc.partition,
            "fileIdHighBits": -1,
            "fileIdLowBits": -1,
            "fileIndex": -1,
            "fileId": loc.file_id,
            "instantTime": loc.instant_ms,
            "fileIdEncoding": 1,
            "position": None,
        }
    high, low = u.int >> 64, u.int & ((1 << 64) - 1)
    return {
        "partitionName": loc.partition,
        "fileIdHighBits": high - (1 << 64) if high >= 1 << 63 else high,
        "fileIdLowBits": low - (1 << 64) if low >= 1 << 63 else low,
        "fileIndex": file_index,
        "fileId": "",
        "instantTime": loc.instant_ms,
        "fileIdEncoding": 0,
        "position": None,
    }


@functools.lru_cache(maxsize=1 << 16)
def encode_value(loc: RecordLocation, schema_json: str, file_name: str | None = None) -> bytes:
    """The HFile value of one record-index record: raw Avro binary of ``HoodieMetadataRecord``
    (meta fields null, ``key`` blank as in every MDT HFile), ``fileIdEncoding`` 0 for
    ``<uuid>-<n>`` file ids, else 1 (Java ``HoodieMetadataPayload.createRecordIndexUpdate``).
    ``file_name``: ``_hoodie_file_name``, the base HFile's name in base-file records (as in the
    ``files`` partition), None in log blocks. The key is not in the value, so every key of a
    file group written by one instant has the same value: values are cached by location."""
    record: dict[str, Any] = dict.fromkeys(_null_fields(schema_json))
    record["key"] = ""
    record["_hoodie_file_name"] = file_name
    record["type"] = RECORD_INDEX_TYPE
    record["recordIndexMetadata"] = _info(loc)
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, _parsed(schema_json), record)
    return buf.getvalue()


def _file_id(info: Mapping[str, Any]) -> str:
    if int(info.get("fileIdEncoding") or 0) == 1:
        return str(info.get("fileId") or "")
    high = int(info["fileIdHighBits"]) & ((1 << 64) - 1)
    low = int(info["fileIdLowBits"]) & ((1 << 64) - 1)
    u = str(uuid.UUID(int=(high << 64) | low))
    index = int(info["fileIndex"])
    return u if index == -1 else f"{u}-{index}"


@functools.lru_cache(maxsize=1 << 16)
def decode_value(value: bytes, schema_json: str) -> RecordLocation:
    """Decode one record-index value (Java
    ``HoodieTableMetadataUtil.getLocationFromRecordIndexInfo``). Cached by value: the keys of
    one file group and instant share it.

    Raises:
        CorruptFileError: not a ``HoodieMetadataRecord`` of type 5 under ``schema_json``.
    """
    try:
        record = typing.cast(
            dict[str, Any],
            fastavro.schemaless_reader(io.BytesIO(value), _parsed(schema_json), None),
        )
        info = record["recordIndexMetadata"]
        if int(record["type"]) != RECORD_INDEX_TYPE or info is None:
            raise ValueError(f"type {record['type']} is not a record-index record")
        return RecordLocation(
            str(info.get("partitionName") or ""), _file_id(info), int(info["instantTime"])
        )
    except Exception as e:  # fastavro raises assorted errors on torn bytes
        raise CorruptFileError(f"unreadable record-index value ({len(value)} bytes): {e}") from e


# ------------------------------------------------------------------------------------------
# Reading the partition
# ------------------------------------------------------------------------------------------


def file_group_count(storage: Storage) -> int:
    """How many file groups the global ``record_index`` partition of the MDT at ``storage``
    has (its files' distinct ``record-index-<i>-0`` file ids; 0 without the folder)."""
    return len({f for f in _file_ids(storage) if data_partition_of(f) is None})


def partition_file_group_counts(storage: Storage) -> dict[str, int]:
    """How many file groups each data partition has in the partitioned ``record_index``."""
    out: dict[str, int] = {}
    for f in _file_ids(storage):
        p = data_partition_of(f)
        if p is not None:
            out[p] = out.get(p, 0) + 1
    return out


def layout_matches(storage: Storage, partitioned: bool) -> bool:
    """Whether every file group of the ``record_index`` partition is named as the index's kind
    names them (per data partition for the partitioned index, ``record-index-<i>-0``
    otherwise): a definition that does not match the files cannot be kept in step."""
    return all((data_partition_of(f) is not None) == partitioned for f in _file_ids(storage))


def _file_ids(storage: Storage) -> set[str]:
    ids = set()
    for f in storage.list_files(RECORD_INDEX_PARTITION):
        p = parse_base_file_name(f.name) or parse_log_file_name(f.name)
        if p is not None and p.file_id.startswith(FILE_ID_PREFIX):
            ids.add(p.file_id)
    return ids


def _put_all(
    out: dict[str, RecordLocation | None],
    data: bytes | memoryview,
    where: str,
    schema: str | None = None,
) -> None:
    """Decode every record of one HFile into ``out``."""
    hf = read_hfile(data, where)
    schema = schema or hf.file_info.get("schema", b"").decode("utf-8")
    for k, v in zip(hf.keys, hf.values, strict=True):
        out[k.decode("utf-8")] = decode_value(v, schema)


def read_slice(
    storage: Storage,
    fslice: FileSlice,
    keep: Callable[[str], bool],
    keys: pa.Array | Iterable[str] | None = None,
    stamps: Mapping[str, Stamp] | None = None,
) -> dict[str, RecordLocation]:
    """The merged records of one ``record_index`` file slice (``keys``: only those).

    Args:
        storage: the MDT's storage.
        fslice: the slice (its base HFile and log files, in order).
        keep: whether the blocks of an MDT instant count (completed and valid for the data
            timeline, :func:`hudi_ds.metadata.reader.valid_instants`).
        keys: the keys wanted (None: all), looked up through the process's decoded files
            (:mod:`hudi_ds.metadata.record_index_cache`).
        stamps: the listed size and modification time of the slice's files, by path (what
            the decoded files are known by).
    """
    from hudi_ds.metadata.reader import counted_blocks, slice_log_blocks

    if keys is not None:
        return locate_in_slice(storage, fslice, keep, keys, stamps).as_dict()
    out: dict[str, RecordLocation | None] = {}
    if fslice.base_file is not None:
        path = fslice.base_file.path
        _put_all(out, storage.read_bytes(path), storage.full_path(path))
    for b in counted_blocks(slice_log_blocks(storage, fslice), keep, RECORD_INDEX_PARTITION):
        if b.block_type == BlockType.HFILE_DATA:
            _put_all(out, b.content, f"{b.path} block at offset {b.offset}", b.schema)
        else:
            for key in decode_delete_block(b).column(RECORD_KEY_METADATA_FIELD).to_pylist():
                if key is not None:
                    out[key] = None
    return {k: v for k, v in out.items() if v is not None}


def locate_in_slice(
    storage: Storage,
    fslice: FileSlice,
    keep: Callable[[str], bool],
    keys: pa.Array | Iterable[str],
    stamps: Mapping[str, Stamp] | None = None,
) -> Located:
    """The merged records of ``keys`` in one ``record_index`` file slice, looked up through
    the process's decoded files (:mod:`hudi_ds.metadata.record_index_cache`); arguments as
    :func:`read_slice`."""
    q = Query(keys if isinstance(keys, pa.Array) else list(keys))
    if not len(q):
        return Located.concat([])
    got = record_index_cache.cache().lookup_slice(
        storage, fslice, keep, q, stamps or {}, decode_value
    )
    # truth of an object array: None is false, a location true (no Python call per key)
    hit = got.astype(bool)
    return Located.of(q.strings.filter(pa.array(hit)), got[hit])


def _listed_slices(
    storage: Storage, timeline: Timeline
) -> tuple[list[FileSlice], dict[str, Stamp]]:
    """The partition's latest file slices, and each listed file's (size, modification time)."""
    from hudi_ds.metadata.reader import files_slices

    listed = storage.list_files(RECORD_INDEX_PARTITION)
    slices = files_slices(storage, timeline, RECORD_INDEX_PARTITION, listed)
    return slices, {f.path: (f.size, f.mtime_ms) for f in listed}


def read_locations(
    storage: Storage,
    timeline: Timeline,
    keep: Callable[[str], bool],
    keys: Sequence[str] | None = None,
) -> dict[str, RecordLocation]:
    """The record index of the MDT at ``storage`` (``keys``: only those, reading only the file
    groups they map to: :func:`locate`), as of its completed instants whose blocks ``keep``
    accepts.

    Raises:
        CorruptFileError: a file of the partition does not decode.
    """
    if keys is not None:
        return locate(storage, timeline, keep, pa.array(list(keys), pa.string())).as_dict()
    slices, _ = _listed_slices(storage, timeline)
    out: dict[str, RecordLocation] = {}
    for s in slices:
        out.update(read_slice(storage, s, keep))
    return out


def locate(
    storage: Storage, timeline: Timeline, keep: Callable[[str], bool], keys: pa.Array
) -> Located:
    """Where the global record index of the MDT at ``storage`` places ``keys`` (those it
    holds), reading only the file groups they map to (Java ``HoodieBackedTableMetadata.
    readRecordIndexLocations``: keys hashed to file groups, each group's slice looked up).

    Raises:
        CorruptFileError: a file of the partition does not decode.
    """
    slices, stamps = _listed_slices(storage, timeline)
    slices = [s for s in slices if data_partition_of(s.file_id) is None]
    count = len({s.file_id for s in slices})
    if not count or not len(keys):
        return Located.concat([])
    # the index as of this lookup: its files, and the MDT instants whose blocks count
    state = (
        storage.base_uri,
        tuple(sorted(stamps.items())),
        tuple(i.requested_time for i in timeline if keep(i.requested_time)),
    )
    memo = record_index_cache.cache()
    recalled = memo.recalled(state, keys)
    if recalled is not None:
        return typing.cast(Located, recalled[1]).subset(keys)
    by_id = {s.file_id: s for s in slices}
    found = Located.concat(
        _read_groups(storage, keep, keys, count, lambda i: by_id.get(file_group_id(i)), stamps)
    )
    memo.remember(state, keys, found)
    return found


def _read_groups(
    storage: Storage,
    keep: Callable[[str], bool],
    keys: pa.Array,
    count: int,
    slice_of: Callable[[int], FileSlice | None],
    stamps: Mapping[str, Stamp],
) -> list[Located]:
    """The records of ``keys`` in the ``count`` file groups they hash to (``slice_of``: the
    slice of a file group index), one result per file group read."""
    arr = keys.cast(pa.string()).drop_null()
    idx = file_group_indexes(arr, count)
    order = np.argsort(idx, kind="stable")
    groups, starts = np.unique(idx[order], return_index=True)
    bounds = [*starts.tolist(), len(order)]
    work = []
    for n, i in enumerate(groups.tolist()):
        found = slice_of(int(i))
        if found is not None:
            work.append((found, arr.take(pa.array(order[bounds[n] : bounds[n + 1]]))))
    if not work:
        return []
    # file groups are read in threads: reading files, inflating blocks and numpy's searches
    # release the GIL
    with ThreadPoolExecutor(max_workers=min(len(work), os.cpu_count() or 1) or 1) as pool:
        return list(pool.map(lambda w: locate_in_slice(storage, w[0], keep, w[1], stamps), work))


def read_partitioned_locations(
    storage: Storage,
    timeline: Timeline,
    keep: Callable[[str], bool],
    keys: Mapping[str, Sequence[str]] | None = None,
) -> dict[tuple[str, str], RecordLocation]:
    """The partitioned record index of the MDT at ``storage``, by (data partition, record
    key): ``keys`` maps a data partition to the keys wanted there (None: every record), read
    from the file groups of that partition the keys hash to.

    Raises:
        CorruptFileError: a file of the partition does not decode.
    """
    slices, stamps = _listed_slices(storage, timeline)
    by_partition: dict[str, list[FileSlice]] = {}
    for s in slices:
        p = data_partition_of(s.file_id)
        if p is not None:
            by_partition.setdefault(p, []).append(s)
    out: dict[tuple[str, str], RecordLocation] = {}
    if keys is None:
        for p, group in by_partition.items():
            for s in group:
                out.update(((p, k), v) for k, v in read_slice(storage, s, keep).items())
        return out
    for p, wanted in keys.items():
        group = sorted(by_partition.get(p, []), key=lambda s: s.file_id)
        if not group or not wanted:
            continue
        arr = pa.array(list(wanted), pa.string())
        for part in _read_groups(storage, keep, arr, len(group), group.__getitem__, stamps):
            out.update(((p, k), v) for k, v in part.as_dict().items())
    return out


def distinct_locations(
    locs: Sequence[RecordLocation] | np.ndarray,
) -> tuple[np.ndarray, list[RecordLocation]]:
    """``(code of each of locs, the distinct locations)``, told apart by object: a lookup's
    keys of one file group and instant share one location object (decoded once per value),
    so this costs a pass over ids, not a hash of every location."""
    ids = np.fromiter(map(id, locs), np.int64, len(locs))
    _, first, inverse = np.unique(ids, return_index=True, return_inverse=True)
    return np.asarray(inverse, np.int64).ravel(), [locs[i] for i in first.tolist()]


# ------------------------------------------------------------------------------------------
# Building and updating
# ------------------------------------------------------------------------------------------


SliceKeys = tuple[str, str, str, pa.Array]
"""``(partition path, file id, base instant, record keys)`` of one live file slice."""


def bootstrap_locations(
    slices: Iterable[SliceKeys], timezone: TimeZoneLike
) -> dict[str, RecordLocation]:
    """The record index of a table whose latest file slices hold ``slices``' keys: each key at
    its slice, dated by the slice's base instant (Java
    ``BaseRecordIndexer.readRecordKeysFromFileSliceSnapshot``). A key held by several slices
    (written twice by ``insert``) is where its newest slice put it, as the index that followed
    those writes says."""
    out: dict[str, RecordLocation] = {}
    for partition, file_id, base_instant, keys in sorted(slices, key=lambda s: s[2]):
        ms = instant_millis(base_instant, timezone)
        loc = RecordLocation(partition, file_id, ms)
        for k in keys.to_pylist():
            if k is not None:
                out[k] = loc
    return out


def bootstrap_partitioned(
    slices: Iterable[SliceKeys], timezone: TimeZoneLike
) -> dict[str, dict[str, RecordLocation]]:
    """:func:`bootstrap_locations` of a partitioned record index: per data partition, each key
    at its slice (the newest one where several slices of the partition hold it)."""
    out: dict[str, dict[str, RecordLocation]] = {}
    for partition, file_id, base_instant, keys in sorted(slices, key=lambda s: s[2]):
        loc = RecordLocation(partition, file_id, instant_millis(base_instant, timezone))
        here = out.setdefault(partition, {})
        for k in keys.to_pylist():
            if k is not None:
                here[k] = loc
    return out


@dataclass
class RecordIndexUpdates:
    """The record-index changes of one data instant: keys put at a location, keys removed."""

    puts: dict[str, RecordLocation] = field(default_factory=dict)
    deletes: set[str] = field(default_factory=set)

    def put(self, keys: Iterable[str], loc: RecordLocation) -> None:
        added = dict.fromkeys(keys, loc)
        self.puts.update(added)
        if self.deletes:
            self.deletes.difference_update(added)

    def delete(self, keys: Iterable[str], partition: str | None = None) -> None:
        """Remove ``keys`` (of data ``partition``: unused, the index being global) unless this
        instant put them elsewhere (a move: Java ``reduceByKeys`` keeps the put)."""
        del partition
        self.deletes.update(k for k in keys if k not in self.puts)

    def __bool__(self) -> bool:
        return bool(self.puts or self.deletes)

    def by_file_group(self, count: int) -> dict[int, GroupUpdates]:
        """The changes of each file group (index -> :class:`GroupUpdates`), put and deleted
        keys sorted by their UTF-8 bytes -- sorted and split by Arrow kernels, not key by key."""
        out: dict[int, GroupUpdates] = {}
        # by identity: the keys of one put share its location object (equal ones from
        # several puts are encoded once each, the encoding being cached)
        codes_of: dict[int, int] = {}
        locations: list[RecordLocation] = []
        codes = np.empty(len(self.puts), np.int32)
        for n, loc in enumerate(self.puts.values()):
            code = codes_of.get(id(loc))
            if code is None:
                code = codes_of[id(loc)] = len(locations)
                locations.append(loc)
            codes[n] = code
        puts = _by_group(pa.array(list(self.puts), pa.string()), count)
        gone = _by_group(pa.array(list(self.deletes), pa.string()), count)
        for i in sorted(set(puts) | set(gone)):
            keys, order = puts.get(i, (_NO_KEYS, np.zeros(0, np.int64)))
            out[i] = GroupUpdates(keys, locations, codes[order], gone.get(i, (_NO_KEYS, None))[0])
        return out


#: built without pa.array, whose first call imports pandas (a Spark worker that never
#: converts anything would pay ~0.15 s of CPU for it at import)
_NO_KEYS = pa.nulls(0, pa.string())


@dataclass
class PartitionedUpdates:
    """The changes of one data instant to a partitioned record index: a
    :class:`RecordIndexUpdates` per data partition, a record being a (partition, key) pair --
    a key put in one partition and deleted from another is both (Java ``reduceByKeys`` with
    ``isPartitionedRLI`` keys by both)."""

    parts: dict[str, RecordIndexUpdates] = field(default_factory=dict)

    def put(self, keys: Iterable[str], loc: RecordLocation) -> None:
        self.parts.setdefault(loc.partition, RecordIndexUpdates()).put(keys, loc)

    def delete(self, keys: Iterable[str], partition: str | None = None) -> None:
        assert partition is not None
        self.parts.setdefault(partition, RecordIndexUpdates()).delete(keys)

    def __bool__(self) -> bool:
        return any(self.parts.values())


def _by_group(keys: pa.Array, count: int) -> dict[int, tuple[pa.Array, np.ndarray]]:
    """``keys`` per file group: (the group's keys sorted by UTF-8 bytes -- Arrow compares
    strings bytewise --, their positions in ``keys``)."""
    if not len(keys):
        return {}
    groups = pa.array(file_group_indexes(keys, count))
    order = pc.sort_indices(
        pa.table({"g": groups, "k": keys}), sort_keys=[("g", "ascending"), ("k", "ascending")]
    ).to_numpy()
    sorted_groups = groups.to_numpy()[order]
    ids, starts = np.unique(sorted_groups, return_index=True)
    bounds = [*starts.tolist(), len(order)]
    out = {}
    for n, i in enumerate(ids.tolist()):
        pos = order[bounds[n] : bounds[n + 1]]
        out[int(i)] = (keys.take(pa.array(pos)), pos)
    return out


@dataclass(frozen=True)
class GroupUpdates:
    """The record-index changes of one instant in one file group.

    Attributes:
        keys: the keys put, sorted by their UTF-8 bytes (the HFile's order).
        locations: the distinct locations of the instant.
        codes: per put key, its location's index in ``locations``.
        gone: the keys deleted, sorted.
    """

    keys: pa.Array
    locations: list[RecordLocation]
    codes: np.ndarray
    gone: pa.Array

    def values(self, schema_json: str, file_name: str | None = None) -> pa.Array:
        """The HFile values of ``keys`` (:func:`encode_value`: one encoding per location)."""
        encoded = pa.array(
            [encode_value(loc, schema_json, file_name) for loc in self.locations], pa.binary()
        )
        return encoded.take(pa.array(self.codes, pa.int32()))


def base_file_of(storage: Storage, partition: str, file_id: str, instant: str) -> BaseFile | None:
    """The base file of ``file_id`` written by ``instant`` in data ``partition`` (one listing)."""
    for f in storage.list_files(partition):
        b = parse_base_file_name(f.name)
        if b is not None and b.file_id == file_id and b.instant_time == instant:
            return BaseFile(f.path, b, f.size)
    return None
