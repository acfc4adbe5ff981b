"""Reading the ``column_stats`` / ``partition_stats`` partitions of a metadata table: every file
group's latest slice (:func:`hudi_ds.metadata.reader.files_slices`), its base HFile and then
the HFILE_DATA blocks of its logs that count (completed on the MDT timeline, valid for the data
timeline, not rolled back by a command block -- the rule of the ``files`` partition,
:class:`hudi_ds.metadata.reader.MetadataReader`), merged per key with Java's rule
(:func:`hudi_ds.metadata.column_stats.merge_stats`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from hudi_ds.errors import CorruptFileError
from hudi_ds.layout.hfile import HFile, read_hfile
from hudi_ds.layout.hfile_lookup import scan_hfile_prefixes
from hudi_ds.log.block import BlockType, LogBlock
from hudi_ds.log.reader import decode_delete_block, scan_log_bytes
from hudi_ds.metadata.column_stats import decode_stats_value, merge_stats
from hudi_ds.metadata.reader import completed_or_archived, files_slices, valid_instants
from hudi_ds.schema.meta import RECORD_KEY_METADATA_FIELD
from hudi_ds.storage import Storage
from hudi_ds.timeline.timeline import Timeline

__all__ = ["StatsRecords", "StatsSources", "read_stats_partition", "stats_sources"]

StatsRecords = dict[str, dict[str, Any]]
"""Record key -> decoded ``HoodieMetadataColumnStats`` (tombstones included)."""


def _apply(
    out: StatsRecords,
    keys: list[bytes],
    values: list[bytes],
    schema: str,
    where: str,
    wanted: Callable[[str], bool] | None,
) -> None:
    if keys and not schema:
        raise CorruptFileError(f"{where}: metadata records without a writer schema")
    for k, v in zip(keys, values, strict=True):
        key = k.decode("utf-8")
        if wanted is not None and not wanted(key):
            continue
        try:
            _, stats = decode_stats_value(v, schema)
        except CorruptFileError as e:
            raise CorruptFileError(f"{where}: metadata record {key!r}: {e}") from e
        prev = out.get(key)
        out[key] = stats if prev is None else merge_stats(prev, stats)


class StatsSources:
    """The files and log blocks a stats partition's merged records come from, in merge order.

    :attr:`fingerprint` names them by path, listed size, modification time and block offset:
    two equal fingerprints merge the same bytes into the same records (files of the metadata
    table are written once under their name; a version 6 log file that grows gets another
    size), so a caller may keep what it derives from the records by fingerprint. None when the
    files are on a filesystem object the caller made (an in-memory one), whose paths name
    nothing outside it.
    """

    def __init__(
        self,
        storage: Storage,
        items: list[tuple[str, str, Any]],
        fingerprint: tuple[Any, ...] | None,
    ) -> None:
        self._storage = storage
        # (kind, path, payload): "base" (payload None), "hfile" (the block), "delete" (block)
        self._items = items
        self.fingerprint = fingerprint

    def read(
        self,
        wanted: Callable[[str], bool] | None = None,
        prefixes: Sequence[str] | None = None,
    ) -> StatsRecords:
        """The merged records (tombstones kept: a caller drops the ``isDeleted`` ones); see
        :func:`read_stats_partition` for ``wanted`` and ``prefixes``.

        Raises:
            CorruptFileError: a file or record does not decode.
        """
        storage = self._storage
        out: StatsRecords = {}
        raw_prefixes = None if prefixes is None else [p.encode("utf-8") for p in prefixes]

        def hfile(data: bytes | memoryview, where: str) -> HFile:
            if raw_prefixes is None:
                return read_hfile(data, where)
            return scan_hfile_prefixes(data, raw_prefixes, where)[0]

        for kind, path, b in self._items:
            if kind == "base":
                hf = hfile(storage.read_bytes(path), storage.full_path(path))
                schema = hf.file_info.get("schema", b"").decode("utf-8")
                _apply(out, hf.keys, hf.values, schema, path, wanted)
            elif kind == "hfile":
                hf = hfile(b.content, f"{b.path} block at offset {b.offset}")
                schema = b.schema or hf.file_info.get("schema", b"").decode("utf-8")
                _apply(out, hf.keys, hf.values, schema, b.path, wanted)
            else:
                keys = decode_delete_block(b).column(RECORD_KEY_METADATA_FIELD).to_pylist()
                for key in keys:
                    out.pop(key, None)
        return out


def stats_sources(
    storage: Storage,
    timeline: Timeline,
    data_timeline: Timeline,
    data_table_version: int,
    partition: str,
) -> StatsSources:
    """The sources of MDT partition ``partition``'s records (one listing, the log files read
    for their blocks; the base files are read by :meth:`StatsSources.read`).

    Args:
        storage: the metadata table's storage.
        timeline: its active timeline.
        data_timeline: the data table's active timeline.
        data_table_version: the data table's version.
        partition: ``column_stats`` or ``partition_stats``.
    """
    valid = valid_instants(data_timeline, timeline, data_table_version)
    listed = storage.list_files(partition)
    info = {f.path: f for f in listed}
    items: list[tuple[str, str, Any]] = []
    ids: list[tuple[str, str, int, int, int]] = []

    def named(kind: str, path: str, offset: int) -> None:
        f = info[path]
        ids.append((kind, storage.full_path(path), f.size, f.mtime_ms, offset))

    for s in files_slices(storage, timeline, partition, listed):
        if s.base_file is not None:
            items.append(("base", s.base_file.path, None))
            named("base", s.base_file.path, 0)
        blocks: list[tuple[str, LogBlock]] = []
        for lf in s.log_files:
            scan = scan_log_bytes(storage.read_bytes(lf.path), storage.full_path(lf.path))
            blocks.extend((lf.path, b) for b in scan.blocks)
        rolled_back = {b.target_instant_time for _, b in blocks if b.is_rollback_command}
        for path, b in blocks:
            t = b.instant_time or ""
            if b.block_type == BlockType.COMMAND or t in rolled_back:
                continue
            if not completed_or_archived(timeline, t) or t not in valid:
                continue
            if b.block_type in (BlockType.HFILE_DATA, BlockType.DELETE):
                kind = "hfile" if b.block_type == BlockType.HFILE_DATA else "delete"
                items.append((kind, path, b))
                named(kind, path, b.offset)
    fs_id = storage.shared_cache_id
    return StatsSources(storage, items, None if fs_id is None else (fs_id, *ids))


def read_stats_partition(
    storage: Storage,
    timeline: Timeline,
    data_timeline: Timeline,
    data_table_version: int,
    partition: str,
    wanted: Callable[[str], bool] | None = None,
    prefixes: Sequence[str] | None = None,
) -> StatsRecords:
    """The merged records of MDT partition ``partition`` (tombstones kept: a caller drops the
    ``isDeleted`` ones).

    Args:
        storage: the metadata table's storage.
        timeline: its active timeline.
        data_timeline: the data table's active timeline.
        data_table_version: the data table's version.
        partition: ``column_stats`` or ``partition_stats``.
        wanted: which record keys to decode (default all; the others are not decoded): a
            predicate, e.g. ``keys.__contains__`` for a set of keys.
        prefixes: read only the records whose keys start with one of these (a column's
            records: :func:`~hudi_ds.metadata.column_stats.stats_key_prefix`), decompressing
            only the HFile data blocks that can hold them.

    Raises:
        CorruptFileError: a file or record does not decode.
    """
    sources = stats_sources(storage, timeline, data_timeline, data_table_version, partition)
    return sources.read(wanted, prefixes)
