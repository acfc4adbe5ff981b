"""Which files of the metadata table's ``files-0000-0`` file group an MDT clean deletes
(:func:`older_slices_files`) and the plan of an MDT rollback (:func:`rollback_plan`), for
:class:`hudi_ds.metadata.writer.MetadataWriter`."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable

import pyarrow as pa

from hudi_ds.layout.bloom_filter import DYNAMIC_V0, BloomFilterSpec
from hudi_ds.layout.hfile import HFILE_BLOCK_SIZE, Cells, read_hfile, write_hfile
from hudi_ds.layout.naming import log_file_name, parse_base_file_name, parse_log_file_name
from hudi_ds.metadata.layout import FILES_FILE_ID, MDT_WRITE_TOKEN
from hudi_ds.metadata.reader import completed_or_archived
from hudi_ds.metadata.records import FILES_PARTITION
from hudi_ds.storage import Storage
from hudi_ds.timeline.instant import DELTA_COMMIT
from hudi_ds.timeline.metadata import WriteStat
from hudi_ds.timeline.plans import InstantInfo, RollbackPlan, RollbackRequest
from hudi_ds.timeline.timeline import Timeline

__all__ = ["base_file_schema", "next_log_name", "older_slices_files", "rollback_plan"]

#: the schema in a base HFile's file info, by (the storage's shared cache id, path, size):
#: the writer of each commit adopts it, and a base file never changes once written
_SCHEMAS: OrderedDict[tuple[str, str, int], str | None] = OrderedDict()
_SCHEMAS_LOCK = threading.Lock()
#: base files whose schema is kept
MAX_CACHED_SCHEMAS = 64


def base_file_schema(storage: Storage, path: str, size: int | None) -> str | None:
    """The ``schema`` of the file info of the MDT base HFile ``path`` (None: it has none),
    read once per process for a file of a known ``size`` (each write's MDT update asks; on an
    object store a read of the whole file is a round trip)."""
    cache = storage.shared_cache_id
    key = (cache, storage.full_path(path), size) if cache is not None and size else None
    if key is not None:
        with _SCHEMAS_LOCK:
            if key in _SCHEMAS:
                _SCHEMAS.move_to_end(key)
                return _SCHEMAS[key]
    hf = read_hfile(storage.read_bytes(path), storage.full_path(path))
    raw = hf.file_info.get("schema")
    schema = raw.decode("utf-8") if raw else None
    if key is not None:
        with _SCHEMAS_LOCK:
            _SCHEMAS[key] = schema
            while len(_SCHEMAS) > MAX_CACHED_SCHEMAS:
                _SCHEMAS.popitem(last=False)
    return schema


def older_slices_files(tl: Timeline, names: list[str], file_id: str = FILES_FILE_ID) -> list[str]:
    """The files of file group ``file_id`` (``files-0000-0``) among ``names`` that belong to
    file slices older than the two latest (none when there are at most two)."""
    layout = tl.layout_version
    deltas = {i.requested_time: i for i in tl.completed().filter_actions(DELTA_COMMIT)}
    # the base instants of the file slices: base files of completed instants, or of
    # instants archived since (the MDT's archival keeps only its latest compaction active)
    bases = sorted(
        {
            b.instant_time
            for n in names
            if (b := parse_base_file_name(n)) is not None
            and b.file_id == file_id
            and completed_or_archived(tl, b.instant_time)
        }
    )
    if len(bases) <= 2:
        return []
    # a log belongs to the slice of the newest base requested at or before its deltacommit
    # completed (the MDT reader's rule): older logs go with the older slices
    kept_from = bases[-2]
    old = set(bases[:-2])
    doomed = []
    for n in names:
        b = parse_base_file_name(n)
        lg = parse_log_file_name(n)
        if b is not None and b.file_id == file_id and b.instant_time in old:
            doomed.append(n)
        elif lg is not None and lg.file_id == file_id:
            if layout == 1 and lg.instant_time in old:
                doomed.append(n)
            elif layout == 2 and lg.instant_time != kept_from:
                d = deltas.get(lg.instant_time)
                if d is not None and (d.completion_time or d.requested_time) < kept_from:
                    doomed.append(n)
                elif d is None and tl.is_before_start(lg.instant_time):
                    doomed.append(n)  # its deltacommit is archived: an older slice's log
    return doomed


def rollback_plan(
    storage: Storage, targets: list[str], base_instant: str, logs: list[str]
) -> RollbackPlan:
    """The plan of an MDT rollback of ``targets``: delete ``logs`` (of the slice of
    ``base_instant``)."""
    return RollbackPlan(
        instant_to_rollback=InstantInfo(commit_time=targets[0], action=DELTA_COMMIT)
        if targets
        else None,
        rollback_requests=[
            RollbackRequest(
                partition_path=FILES_PARTITION,
                file_id=FILES_FILE_ID,
                latest_base_instant=base_instant,
                files_to_be_deleted=[storage.uri(f"{FILES_PARTITION}/{n}") for n in sorted(logs)],
                log_blocks_to_be_deleted={},
            )
        ]
        if logs
        else [],
        version=1,
    )


def next_log_name(
    layout_version: int,
    file_id: str,
    base_instant: str,
    instant: str,
    names: Iterable[str],
) -> str:
    """The log file an MDT deltacommit ``instant`` writes into file group ``file_id`` whose
    latest slice starts at ``base_instant``: timeline layout 1 (Hudi 0.x) appends the next
    version of the slice's log (``names``: the file names present, the versions of failed
    writes included, so a name is never reused); layout 2 writes a file of its own, version 1,
    named with its instant."""
    if layout_version != 1:
        return log_file_name(file_id, instant, 1, MDT_WRITE_TOKEN)
    versions = [
        p.version
        for n in names
        if (p := parse_log_file_name(n)) is not None
        and p.file_id == file_id
        and p.instant_time == base_instant
    ]
    return log_file_name(file_id, base_instant, max(versions, default=0) + 1, MDT_WRITE_TOKEN)


def mdt_write_stat(
    partition: str,
    file_id: str,
    name: str,
    size: int,
    records: int,
    prev: str,
    base_file: str | None = None,
    logs: list[str] | None = None,
    log_version: int | None = None,
) -> WriteStat:
    """The write stat of one file a metadata-table deltacommit or compaction writes in MDT
    partition ``partition``: a base HFile of ``records`` records, or (``logs`` given) a log
    file whose block holds them, on ``base_file`` (its version parsed from ``name`` unless
    given)."""
    is_log = logs is not None
    if is_log and log_version is None:
        parsed = parse_log_file_name(name)
        log_version = parsed.version if parsed is not None else 1
    return WriteStat(
        file_id=file_id,
        path=f"{partition}/{name}",
        prev_commit=prev,
        num_writes=records,
        num_update_writes=records if is_log else 0,
        num_inserts=0 if is_log else records,
        total_write_bytes=size,
        partition_path=partition,
        file_size_in_bytes=size,
        log_version=log_version if is_log else None,
        log_offset=0 if is_log else None,
        base_file=base_file if is_log else None,
        log_files=logs,
    )


#: the bloom filter of a metadata-table base HFile (Java's MDT defaults: dynamic, 10k entries
#: growing to 100k, fpp 1e-9)
MDT_BLOOM = BloomFilterSpec(DYNAMIC_V0, 10000, 0.000000001, 100000)


def mdt_base_hfile(
    keys: Cells, values: Cells, schema: str, block_size: int = HFILE_BLOCK_SIZE
) -> bytes:
    """A metadata-table base HFile of ``keys`` (sorted; bytes or an Arrow binary array) and
    their ``values``: the writer schema, a bloom filter of the keys and -- when there are
    keys -- the min/max record keys in its file info, as Java's MDT base files carry them."""
    info = {"schema": schema.encode("utf-8")}
    bloom = MDT_BLOOM.new_filter()
    if isinstance(keys, pa.Array | pa.ChunkedArray):
        strings = keys.cast(pa.string())
        first = keys[0].as_py() if len(keys) else b""
        last = keys[len(keys) - 1].as_py() if len(keys) else b""
    else:
        strings = pa.array([k.decode("utf-8") for k in keys], pa.string())
        first, last = (keys[0], keys[-1]) if keys else (b"", b"")
    bloom.add(strings)
    if len(keys):
        info.update(
            {
                "bloomFilterTypeCode": DYNAMIC_V0.encode(),
                "minRecordKey": bytes(first),
                "maxRecordKey": bytes(last),
            }
        )
    return write_hfile(
        keys,
        values,
        file_info=info,
        meta_blocks={"bloomFilter": bloom.serialize().encode("ascii")},
        block_size=block_size,
    )
