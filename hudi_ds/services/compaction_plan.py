"""A compaction plan: which file slices (the strategy), their operations and metrics."""

from __future__ import annotations

import dataclasses

from hudi_ds.config import ServiceConfig, compaction_strategy_class
from hudi_ds.layout.file_group import FileSlice
from hudi_ds.services.base import ServiceContext
from hudi_ds.table.fs_view import FileSystemView
from hudi_ds.table.table import ReadableTable
from hudi_ds.timeline.instant import Instant
from hudi_ds.timeline.plans import CompactionOperation, CompactionPlan, CompactionStrategy
from hudi_ds.timeline.timeline import Timeline
from hudi_ds.write.markers import marked_files

MB = 1 << 20


#: Hudi's default ``hoodie.parquet.max.file.size`` (written size assumed for a log-only slice)
DEFAULT_BASE_FILE_SIZE = 120 * MB


# metric names of HoodieCompactionOperation.metrics (Java CompactionStrategy)
TOTAL_IO_READ_MB = "TOTAL_IO_READ_MB"


TOTAL_IO_WRITE_MB = "TOTAL_IO_WRITE_MB"


TOTAL_IO_MB = "TOTAL_IO_MB"


TOTAL_LOG_FILE_SIZE = "TOTAL_LOG_FILES_SIZE"


TOTAL_LOG_FILES = "TOTAL_LOG_FILES"


def _pending_writes(tl: Timeline, before: str | None = None) -> list[Instant]:
    return [i for i in tl.pending_writes() if before is None or i.requested_time < before]


def _file_groups_in_pending_compaction(tl: Timeline) -> set[tuple[str, str]]:
    out: set[tuple[str, str]] = set()
    for c in tl.pending_compactions():
        for op in tl.read_compaction_plan(c).operations or []:
            out.add((op.partition_path or "", op.file_id or ""))
    return out


def _metrics(fslice: FileSlice, layout: int = 1) -> dict[str, float]:
    log_size = sum(lf.size for lf in fslice.log_files)
    base_size = fslice.base_file.size if fslice.base_file is not None else 0
    read_mb = (base_size + log_size) / MB
    write_mb = (base_size if base_size > 0 else DEFAULT_BASE_FILE_SIZE) / MB
    if layout == 2:
        # Hudi 1.x CompactionStrategy.captureMetrics: FSUtils.getSizeInMB is a whole number of
        # MB (long division), and the map is a Java HashMap, written in its iteration order
        read_whole = (base_size + log_size) // MB
        write_whole = (base_size if base_size > 0 else DEFAULT_BASE_FILE_SIZE) // MB
        return {
            TOTAL_LOG_FILES: float(len(fslice.log_files)),
            TOTAL_IO_MB: float(read_whole + write_whole),
            TOTAL_IO_READ_MB: float(read_whole),
            TOTAL_LOG_FILE_SIZE: float(log_size),
            TOTAL_IO_WRITE_MB: float(write_whole),
        }
    return {
        TOTAL_IO_READ_MB: float(read_mb),
        TOTAL_IO_WRITE_MB: float(write_mb),
        TOTAL_IO_MB: float(read_mb + write_mb),
        TOTAL_LOG_FILE_SIZE: float(log_size),
        TOTAL_LOG_FILES: float(len(fslice.log_files)),
    }


def _operation(fslice: FileSlice, layout: int = 1) -> CompactionOperation:
    return CompactionOperation(
        base_instant_time=fslice.base_instant_time,
        delta_file_paths=[lf.name.name for lf in fslice.sorted_log_files()],
        data_file_path=fslice.base_file.name.name if fslice.base_file is not None else None,
        file_id=fslice.file_id,
        partition_path=fslice.partition_path,
        metrics=_metrics(fslice, layout),
        bootstrap_file_path=None,
    )


def _apply_strategy(
    ops: list[CompactionOperation], ctx: ServiceContext
) -> list[CompactionOperation]:
    """Order and cut the candidate operations as the configured Hudi strategy does."""
    strategy = ctx.get(ServiceConfig.COMPACTION_STRATEGY)
    m = lambda op, k: (op.metrics or {}).get(k, 0.0)  # noqa: E731
    if strategy == "LogFileSizeBasedCompactionStrategy":
        threshold = ctx.get(ServiceConfig.COMPACTION_LOG_SIZE_THRESHOLD)
        ops = [op for op in ops if m(op, TOTAL_LOG_FILE_SIZE) >= threshold]
        ops.sort(key=lambda op: -m(op, TOTAL_LOG_FILE_SIZE))
    elif strategy == "LogFileNumBasedCompactionStrategy":
        threshold = ctx.get(ServiceConfig.COMPACTION_LOG_NUM_THRESHOLD)
        ops = [op for op in ops if m(op, TOTAL_LOG_FILES) >= threshold]
        ops.sort(key=lambda op: -m(op, TOTAL_LOG_FILES))
    if strategy == "UnBoundedCompactionStrategy":
        return ops
    budget = float(ctx.get(ServiceConfig.COMPACTION_TARGET_IO_MB))
    out = []
    for op in ops:  # BoundedIOCompactionStrategy: the operation that crosses the budget is kept
        out.append(op)
        budget -= m(op, TOTAL_IO_MB)
        if budget <= 0:
            break
    return out


def plan_compaction(ctx: ServiceContext, tl: Timeline | None = None) -> CompactionPlan:
    """The plan a compaction scheduled now would carry (nothing is written).

    Takes the latest visible slice of every live file group that has log files and is not
    under a pending compaction, then applies the strategy (module docstring).
    """
    tl = tl if tl is not None else ctx.timeline()
    table = ReadableTable(ctx.state)
    vis = table.visibility()
    # Java's compaction planner leaves out file groups in pending compaction and clustering
    # (HoodieCompactor.generateCompactionPlan: fgIdsInPendingCompactionAndClustering)
    busy = _file_groups_in_pending_compaction(tl) | tl.file_groups_in_pending_clustering()
    view = FileSystemView(ctx.storage, ctx.config)
    # a committed file gone or short would be compacted away for good: refuse
    table.verify_committed_files(view, vis)
    slices = [(p, s) for p in view.partitions() for s in view.latest_file_slices(p, vis)]
    # logs of writes still pending are not the plan's: such a write moves them into the new
    # slice when it commits (hudi_ds.write.conflict.retarget_logs). A write's requested file and
    # markers are made before its log files, and both are read after the listing, so every
    # listed log of a pending write is found.
    pending_logs = {
        f
        for i in _pending_writes(ctx.reload_timeline())
        for f in marked_files(ctx.storage, i.requested_time)
    }
    ops = []
    for p, s in slices:
        if (p, s.file_id) in busy:
            continue
        s = dataclasses.replace(
            s, log_files=[lf for lf in s.log_files if lf.path not in pending_logs]
        )
        if s.log_files:
            ops.append(_operation(s, ctx.layout))
    strategy = ctx.get(ServiceConfig.COMPACTION_STRATEGY)
    if ctx.layout == 2:
        # as Hudi 1.x writes its plans (every v8/v9 fixture): no strategy record, an empty
        # extra-metadata map, preserveHoodieMetadata false (1.x compaction keeps the meta
        # fields regardless), no missing partitions
        return CompactionPlan(
            operations=_apply_strategy(ops, ctx),
            extra_metadata={},
            version=2,
            strategy=None,
            preserve_hoodie_metadata=False,
            missing_schedule_partitions=[],
        )
    return CompactionPlan(
        operations=_apply_strategy(ops, ctx),
        extra_metadata=None,
        version=2,
        strategy=CompactionStrategy(
            compactor_class_name=compaction_strategy_class(strategy),
            strategy_params={
                "hoodie.compaction.target.io": str(ctx.get(ServiceConfig.COMPACTION_TARGET_IO_MB))
            },
            version=1,
        ),
        preserve_hoodie_metadata=True,
        missing_schedule_partitions=None,
    )


def compaction_plans(tl: Timeline) -> dict[str, CompactionPlan]:
    """Plans of the pending compactions."""
    return {c.requested_time: tl.read_compaction_plan(c) for c in tl.pending_compactions()}
