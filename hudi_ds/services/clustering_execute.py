"""Executing a clustering plan: each group's slices read (MOR: base and logs merged), sorted by
the plan's sort columns and written into new file groups; the completion as a replacecommit.

Java ``SparkExecuteClusteringCommitActionExecutor`` with ``SparkSortAndSizeExecutionStrategy``
(``MultipleSparkJobExecutionStrategy.performClustering``): every group becomes its
``numOutputFileGroups`` new file groups, written as a bulk insert would (new file ids, records
keep their ``_hoodie_commit_time`` / ``_hoodie_commit_seqno`` -- ``preserveHoodieMetadata``);
the replacecommit's ``partitionToReplaceFileIds`` names the input file groups
(``ClusteringUtils`` / ``getPartitionToReplacedFileIds``), operation type ``CLUSTER``.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from dataclasses import dataclass

import pyarrow as pa

from hudi_ds.config import ClusteringConfig, WriteConfig
from hudi_ds.config.clustering import EXECUTION_STRATEGY_CLASS
from hudi_ds.errors import (
    AttemptRolledBackError,
    CommitConflictError,
    InstantNotFoundError,
    UnsupportedError,
)
from hudi_ds.faults import crash_point
from hudi_ds.index.core import table_bucket_layout
from hudi_ds.index.pending_resize import (
    RESIZE_EXECUTION_STRATEGY,
    children_of,
    dual_written,
    is_resize,
    resize_file_ids,
)
from hudi_ds.layout.base_file import write_whole_base_file
from hudi_ds.layout.bloom_filter import BloomFilterSpec
from hudi_ds.layout.file_group import FileSlice
from hudi_ds.layout.naming import (
    base_file_name,
    file_name_of,
    file_path,
    parse_base_file_name,
    parse_log_file_name,
)
from hudi_ds.schema.meta import FILENAME_METADATA_FIELD, clear_meta_values
from hudi_ds.services.base import ServiceContext
from hudi_ds.services.bucket_resize import commit_resized_rings, save_resized_rings, split_rows
from hudi_ds.services.compaction_execute import _data_schema_json, _schema_before, _slice_of
from hudi_ds.services.layout_sort import sort_rows
from hudi_ds.storage import Storage
from hudi_ds.table.reader import ReadStats, SliceReadContext, read_file_slice
from hudi_ds.table.table import ReadableTable
from hudi_ds.table_config import BaseFileFormat
from hudi_ds.timeline.instant import ROLLBACK, Instant, State
from hudi_ds.timeline.metadata import CommitMetadata, RuntimeStats, WriteStat
from hudi_ds.timeline.plans import ClusteringGroup, CompactionOperation, SliceInfo
from hudi_ds.timeline.view import Visibility
from hudi_ds.write.assigner import new_file_id
from hudi_ds.write.markers import create_marker, delete_markers_quietly, marked_files
from hudi_ds.write.rollback_executor import rollback_target

#: ``operationType`` of a clustering's requested and completed metadata
CLUSTER = "CLUSTER"


@dataclass(frozen=True)
class ClusteringJob:
    """What executing the groups of clustering ``instant`` needs (small, picklable).

    Attributes:
        storage: the table's storage.
        instant: the clustering instant.
        action: its pending action (``replacecommit`` on layout 1, ``clustering`` on 2).
        groups: the plan's groups, in plan order.
        visibility: the instants whose files and log blocks count (completed before it).
        context: merge context (schema as of the instant, keys, ordering, merge mode).
        sort_columns: the plan's sort columns (its strategy parameters).
        layout_strategy: ``hoodie.layout.optimize.strategy``.
        codec: Parquet codec of the new base files.
        bloom: the bloom filter of the new base files (None: no meta fields).
        base_format: the table's base file format.
        attempt: attempt number (in the write tokens: attempts never share a file name).
        known_rollbacks: the rollback instants on the timeline when this attempt began: a
            rollback of the clustering that is not among them undid this attempt.
    """

    storage: Storage
    instant: str
    action: str
    groups: tuple[ClusteringGroup, ...]
    visibility: Visibility
    context: SliceReadContext
    sort_columns: tuple[str, ...]
    layout_strategy: str
    codec: str
    bloom: BloomFilterSpec | None
    base_format: BaseFileFormat = BaseFileFormat.PARQUET
    attempt: int = 0
    known_rollbacks: frozenset[str] = frozenset()
    #: a consistent-hashing resize: the hash fields its rows are split by (else None)
    resize_hash_fields: tuple[str, ...] | None = None


def prepare_clustering(ctx: ServiceContext, instant: str, attempt: int = 0) -> ClusteringJob:
    """Read the plan of pending clustering ``instant`` and build its job.

    Raises:
        InstantNotFoundError: no pending clustering ``instant``.
    """
    tl = ctx.timeline()
    inst = tl.get(instant)
    if inst is None or inst.is_completed or not tl.is_clustering(inst):
        raise InstantNotFoundError(f"no pending clustering {instant} on the timeline")
    plan = tl.read_requested_replace(instant).clustering_plan
    assert plan is not None  # is_clustering checked it
    strategy_class = (plan.strategy.strategy_class_name if plan.strategy else None) or ""
    layout = table_bucket_layout(ctx.state)
    resize = is_resize(plan)
    if resize and (layout is None or not layout.consistent):
        raise UnsupportedError(
            f"clustering {instant} is a consistent-hashing resize; the table's index is not "
            "the consistent-hashing bucket index"
        )
    if layout is not None and layout.consistent and not resize:
        raise UnsupportedError(
            f"clustering {instant} asks for execution strategy {strategy_class or '(none)'}; "
            "a consistent-hashing bucket table is clustered by resizes only "
            f"({RESIZE_EXECUTION_STRATEGY})"
        )
    short = strategy_class.rsplit(".", 1)[-1]
    if not resize and short != EXECUTION_STRATEGY_CLASS.rsplit(".", 1)[-1]:
        # e.g. Java's SparkSingleFileSortExecutionStrategy (keeps file ids): other outputs
        # than new file groups
        raise UnsupportedError(
            f"clustering {instant} asks for execution strategy {strategy_class or '(none)'}; "
            f"hudi_ds executes {EXECUTION_STRATEGY_CLASS} only"
        )
    params = (plan.strategy.strategy_params if plan.strategy else None) or {}
    sort = [c.strip() for c in params.get(ClusteringConfig.SORT_COLUMNS.key, "").split(",")]
    table = ReadableTable(ctx.state, ctx.options.raw)
    if table.config.base_file_format is not BaseFileFormat.PARQUET:
        raise UnsupportedError(
            f"clustering writes Parquet base files; the table's base file format is "
            f"{table.config.base_file_format.value}"
        )
    read_ctx = dataclasses.replace(
        table.read_context(), schema=_schema_before(tl, instant, table), log_ranges={}
    )
    return ClusteringJob(
        storage=ctx.storage,
        instant=instant,
        action=inst.action,
        groups=tuple(plan.input_groups or ()),
        visibility=table.visibility(as_of=instant),
        context=read_ctx,
        sort_columns=tuple(c for c in sort if c),
        layout_strategy=params.get(
            ClusteringConfig.LAYOUT_STRATEGY.key, ctx.get(ClusteringConfig.LAYOUT_STRATEGY)
        ),
        codec=ctx.options.get(WriteConfig.PARQUET_CODEC),
        bloom=ctx.base_file_bloom(table.config),
        base_format=table.config.base_file_format,
        attempt=attempt,
        known_rollbacks=frozenset(r.requested_time for r in tl.filter_actions(ROLLBACK)),
        resize_hash_fields=layout.hash_fields if resize and layout is not None else None,
    )


def _operation(sl: SliceInfo) -> CompactionOperation:
    """A plan slice as the compaction's slice reader takes it (file names in its partition)."""
    base = file_name_of(sl.data_file_path) if sl.data_file_path else None
    logs = [file_name_of(p) for p in sl.delta_file_paths or []]
    instant = None
    if base:
        parsed = parse_base_file_name(base)
        instant = parsed.instant_time if parsed is not None else None
    elif logs:
        parsed_log = parse_log_file_name(logs[0])
        instant = parsed_log.instant_time if parsed_log is not None else None
    return CompactionOperation(
        base_instant_time=instant,
        delta_file_paths=logs,
        data_file_path=base,
        file_id=sl.file_id,
        partition_path=sl.partition_path,
    )


def _split(rows: pa.Table, n: int) -> list[pa.Table]:
    """``rows`` cut into ``n`` consecutive parts of (nearly) equal row counts."""
    n = max(1, min(n, rows.num_rows))
    bounds = [rows.num_rows * k // n for k in range(n + 1)]
    return [rows.slice(bounds[k], bounds[k + 1] - bounds[k]) for k in range(n)]


def execute_group(job: ClusteringJob, index: int) -> list[WriteStat]:
    """Cluster group ``index`` of the plan into new file groups (one task).

    With sort columns the group's rows are sorted together and cut into its
    ``numOutputFileGroups`` files of equal row counts. Without, rows keep their slices' order
    and a file is written as soon as it holds its share of the group's input bytes (cut at a
    slice boundary), so about one output file is held in memory, not the whole group.

    Returns:
        The write stats of the new base files.
    """
    group = job.groups[index]
    storage = job.storage
    t0 = time.perf_counter()
    schema = job.context.schema
    idx = schema.get_field_index(FILENAME_METADATA_FIELD)
    columns = None if idx < 0 else [n for n in schema.names if n != FILENAME_METADATA_FIELD]
    slices = [_slice_of(storage, _operation(sl)) for sl in group.slices or []]
    partition = slices[0].partition_path if slices else ""
    n = max(1, group.num_output_file_groups or 1)

    def read(fs: FileSlice) -> pa.Table:
        return read_file_slice(storage, fs, job.visibility, job.context, ReadStats(), columns)

    out: list[WriteStat] = []
    if job.resize_hash_fields is not None:
        # a resize: each record to the child node holding its key's hash, into its file group
        rows = pa.concat_tables([read(fs) for fs in slices]) if slices else pa.table({})
        t_scan = time.perf_counter() - t0
        _, kids = children_of(group, f"clustering {job.instant}")
        for child, chunk in split_rows(rows, kids, job.resize_hash_fields):
            if chunk.num_rows:
                out.append(
                    _write_file(job, index, len(out), partition, chunk, t_scan, child.file_id)
                )
        return out
    if job.sort_columns:
        rows = pa.concat_tables([read(fs) for fs in slices]) if slices else pa.table({})
        rows = sort_rows(rows, job.sort_columns, job.layout_strategy)
        t_scan = time.perf_counter() - t0
        for chunk in _split(rows, n):
            out.append(_write_file(job, index, len(out), partition, chunk, t_scan))
        return out
    sizes = [_slice_size(fs) for fs in slices]
    share = sum(sizes) / n
    held: list[pa.Table] = []
    held_bytes = 0
    for k, fs in enumerate(slices):
        held.append(read(fs))
        held_bytes += sizes[k]
        last = k == len(slices) - 1
        if last or (held_bytes >= share and len(out) < n - 1):
            chunk = pa.concat_tables(held)
            t_scan = time.perf_counter() - t0
            out.append(_write_file(job, index, len(out), partition, chunk, t_scan))
            held, held_bytes, t0 = [], 0, time.perf_counter()
    return out


def _slice_size(fs: FileSlice) -> int:
    base = fs.base_file.size if fs.base_file is not None else 0
    return base + sum(lf.size for lf in fs.log_files)


def _write_file(
    job: ClusteringJob,
    index: int,
    k: int,
    partition: str,
    chunk: pa.Table,
    t_scan: float,
    file_id: str | None = None,
) -> WriteStat:
    """Write ``chunk`` as the ``k``-th new file group of group ``index`` (``file_id``, else a
    new one); its write stat."""
    t1 = time.perf_counter()
    schema = job.context.schema
    idx = schema.get_field_index(FILENAME_METADATA_FIELD)
    fid = file_id or new_file_id()
    token = f"{index}-{job.attempt + 1}-{k}"
    name = base_file_name(fid, token, job.instant, job.base_format.extension)
    rel = file_path(partition, name)
    if idx >= 0:
        chunk = chunk.add_column(
            idx, schema.field(idx), pa.repeat(pa.scalar(name, pa.string()), chunk.num_rows)
        )
    if not job.context.populate_meta_fields:
        chunk = clear_meta_values(chunk, file_name=True)
    create_marker(job.storage, job.instant, rel, "CREATE")
    size = write_whole_base_file(job.base_format, job.storage, rel, chunk, job.codec, job.bloom)
    crash_point("clustering")
    return WriteStat(
        file_id=fid,
        path=rel,
        prev_commit="null",
        num_writes=chunk.num_rows,
        num_inserts=chunk.num_rows,
        total_write_bytes=size,
        partition_path=partition,
        file_size_in_bytes=size,
        runtime_stats=RuntimeStats(
            total_scan_time=int(t_scan * 1000),
            total_create_time=int((time.perf_counter() - t1) * 1000),
            total_upsert_time=0,
        ),
    )


def replaced_file_ids(job: ClusteringJob) -> dict[str, list[str]]:
    """Partition -> the file groups the clustering replaces (every slice of its plan)."""
    out: dict[str, list[str]] = {}
    for g in job.groups:
        for sl in g.slices or []:
            out.setdefault(sl.partition_path or "", []).append(sl.file_id or "")
    return out


def check_concurrent_writes(ctx: ServiceContext, job: ClusteringJob) -> None:
    """Under the table lock before completing: a write that completed after the clustering was
    planned and touched one of its file groups (``SparkAllowUpdateStrategy``, or a write
    started before the plan) makes the clustering conflict -- completing it would drop that
    write's records (Java's ``SimpleConcurrentFileWritesConflictResolutionStrategy`` fails the
    clustering then). A write beside a resize that wrote its records to the resize's children
    too (:mod:`hudi_ds.index.pending_resize`) is no conflict: the children keep them.

    Raises:
        CommitConflictError: naming the write and the file group.
    """
    tl = ctx.timeline()
    inputs = replaced_file_ids(job)
    ours = {(p, f) for p, fids in inputs.items() for f in fids}
    children: dict[str, set[str]] = {}
    if job.resize_hash_fields is not None:
        children = resize_file_ids(job.groups, f"clustering {job.instant}")[1]
    for other in tl.commits():
        t = other.requested_time
        if t == job.instant or t in job.visibility.instants:
            continue
        md = tl.read_commit_metadata(other)
        stats_of = md.partition_to_write_stats.items()
        written = {(p, st.file_id or "") for p, sts in stats_of for st in sts}
        # a write beside a resize that also wrote its records to the children: kept by them
        doubled = dual_written(written, inputs, children)
        for p, stats in md.partition_to_write_stats.items():
            for st in stats:
                if (p, st.file_id or "") in ours and (p, st.file_id or "") not in doubled:
                    raise CommitConflictError(
                        f"clustering {job.instant} conflicts with {t} ({other.action}), which "
                        f"wrote file group {st.file_id} of partition '{p}' after the "
                        "clustering was planned; the clustering is rolled back"
                    )


def _check_still_live(ctx: ServiceContext, job: ClusteringJob, stats: Sequence[WriteStat]) -> None:
    """This attempt may complete: the clustering is still inflight, no rollback of it began
    since the attempt did (another process took a paused attempt for failed), and every file
    it is about to publish exists.

    Raises:
        AttemptRolledBackError: the attempt was undone meanwhile; nothing is completed.
    """
    tl = ctx.reload_timeline()
    c = job.instant
    inst = tl.get(c)
    undone = [
        r.requested_time
        for r in tl.filter_actions(ROLLBACK)
        if r.requested_time not in job.known_rollbacks and rollback_target(tl, r) == c
    ]
    missing = [s.path for s in stats if s.path and not ctx.storage.exists(s.path)]
    if inst is None or not inst.is_inflight or undone or missing:
        why = (
            f"rollback {undone[0]} undid it"
            if undone
            else f"{missing[0]} is gone"
            if missing
            else "it is no longer inflight"
        )
        raise AttemptRolledBackError(
            f"this attempt of clustering {c} stopped without completing: {why} (another "
            "process took it for failed while it was paused); the next run executes the plan"
        )


def finish_clustering(
    ctx: ServiceContext, job: ClusteringJob, stats: Sequence[WriteStat]
) -> Instant:
    """Complete clustering ``job.instant`` as a replacecommit (under the table lock with
    several writers): files of failed attempts dropped, concurrent writes checked.

    Raises:
        CommitConflictError: a concurrent write touched one of its file groups.
    """
    storage = ctx.storage
    with ctx.locked():
        _check_still_live(ctx, job, stats)
        check_concurrent_writes(ctx, job)
        keep = {s.path for s in stats}
        for path in marked_files(storage, job.instant):
            if path not in keep:
                storage.delete(path)
        md = CommitMetadata(
            operation_type=CLUSTER,
            partition_to_replace_file_ids=replaced_file_ids(job),
            is_replace=True,
        )
        for s in stats:
            md.partition_to_write_stats.setdefault(s.partition_path or "", []).append(s)
        md.extra_metadata["schema"] = _data_schema_json(ctx, job)  # type: ignore[arg-type]
        resized = (
            save_resized_rings(ctx, job.instant, job.groups)
            if job.resize_hash_fields is not None
            else []
        )
        done = ctx.complete(
            Instant(job.instant, job.action, State.INFLIGHT), md.to_bytes(ctx.layout)
        )
    commit_resized_rings(ctx, job.instant, resized)
    delete_markers_quietly(storage, job.instant)  # the commit point is behind
    return done
