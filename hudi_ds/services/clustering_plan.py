"""A clustering plan: which file slices, grouped how (Hudi's size-based plan strategy).

Java ``SparkSizeBasedClusteringPlanStrategy`` on ``PartitionAwareClusteringPlanStrategy``:

* partitions: every partition, narrowed by ``hoodie.clustering.plan.partition.filter.mode``
  (``ClusteringPlanPartitionFilter``: RECENT_DAYS keeps the latest
  ``...daybased.lookback.partitions`` by path order after skipping
  ``...daybased.skipfromlatest.partitions``), ``...partition.selected`` and
  ``...partition.regex.pattern``;
* slices (``getFileSlicesEligibleForClustering``): the latest slice of every live file group not
  under a pending compaction or clustering, whose base file is smaller than
  ``hoodie.clustering.plan.strategy.small.file.limit`` (a log-only slice counts as 0 bytes);
* groups (``buildClusteringGroupsForPartition``): the slices sorted by base file size, largest
  first (a log-only slice counts as ``hoodie.parquet.max.file.size``), cut into groups of at
  most ``...max.bytes.per.group`` bytes; each group writes ``ceil(size / target.file.max.bytes)``
  files; a group of one slice only with ``...single.group.clustering.enabled`` or sort
  columns (``HoodieWriteConfig.shouldClusteringSingleGroup``); at most ``...max.num.groups``
  groups per partition and per plan;
* the plan (``generateClusteringPlan``): the execution strategy's class with the sort columns
  as its parameters, plan version 1, ``preserveHoodieMetadata`` true; held in a
  ``HoodieRequestedReplaceMetadata`` with ``operationType=CLUSTER``.
"""

from __future__ import annotations

import math
import re

from hudi_ds.config import (
    ClusteringConfig,
    LayoutOptimizeStrategy,
    PartitionFilterMode,
    WriteConfig,
)
from hudi_ds.errors import ConfigError
from hudi_ds.layout.file_group import FileSlice
from hudi_ds.services.base import ServiceContext
from hudi_ds.services.compaction_plan import _file_groups_in_pending_compaction, _metrics
from hudi_ds.table.fs_view import FileSystemView
from hudi_ds.table.table import ReadableTable
from hudi_ds.timeline.plans import (
    ClusteringGroup,
    ClusteringPlan,
    ClusteringStrategy,
    RequestedReplaceMetadata,
    SliceInfo,
)
from hudi_ds.timeline.timeline import Timeline

#: ``ClusteringPlanStrategy.CLUSTERING_PLAN_VERSION_1``
PLAN_VERSION = 1


def select_partitions(ctx: ServiceContext, partitions: list[str]) -> list[str]:
    """The partitions a plan looks at (Java ``ClusteringPlanPartitionFilter.filter`` and the
    selected / regex options)."""
    mode = PartitionFilterMode(ctx.get(ClusteringConfig.PARTITION_FILTER_MODE))
    out = sorted(partitions)
    if mode is PartitionFilterMode.RECENT_DAYS:
        skip = ctx.get(ClusteringConfig.SKIP_LATEST_PARTITIONS)
        look = ctx.get(ClusteringConfig.LOOKBACK_PARTITIONS)
        newest_first = sorted(out, reverse=True)[skip : skip + look]
        out = sorted(newest_first)
    selected = ctx.get(ClusteringConfig.PARTITION_SELECTED)
    if mode is PartitionFilterMode.SELECTED_PARTITIONS and not selected:
        raise ConfigError(
            "option 'hoodie.clustering.plan.partition.filter.mode'=SELECTED_PARTITIONS needs "
            "'hoodie.clustering.plan.strategy.partition.selected'"
        )
    if selected:
        wanted = {s.strip().strip("/") for s in selected}
        out = [p for p in out if p.strip("/") in wanted]
    pattern = ctx.get(ClusteringConfig.PARTITION_REGEX)
    if pattern:
        try:
            rx = re.compile(pattern)
        except re.error as e:
            raise ConfigError(
                f"option 'hoodie.clustering.plan.strategy.partition.regex.pattern'={pattern!r} "
                f"is not a regular expression: {e}"
            ) from e
        out = [p for p in out if rx.fullmatch(p)]
    return out


def _slice_info(ctx: ServiceContext, s: FileSlice) -> SliceInfo:
    # Java's getFileSliceInfo records full paths of the base and log files
    uri = ctx.storage.uri
    return SliceInfo(
        data_file_path=uri(s.base_file.path) if s.base_file is not None else "",
        delta_file_paths=[uri(lf.path) for lf in s.sorted_log_files()],
        file_id=s.file_id,
        partition_path=s.partition_path,
        bootstrap_file_path="",
        version=1,
    )


def _group_metrics(slices: list[FileSlice], layout: int) -> dict[str, float]:
    out: dict[str, float] = {}
    for s in slices:
        for k, v in _metrics(s, layout).items():
            out[k] = out.get(k, 0.0) + v
    return out


def _groups_of_partition(
    ctx: ServiceContext, slices: list[FileSlice], sorting: bool
) -> list[ClusteringGroup]:
    max_file = ctx.get(WriteConfig.MAX_FILE_SIZE)
    per_group = ctx.get(ClusteringConfig.MAX_BYTES_PER_GROUP)
    target = ctx.get(ClusteringConfig.TARGET_FILE_MAX_BYTES)
    single = sorting or ctx.get(ClusteringConfig.SINGLE_GROUP)

    def size(s: FileSlice) -> int:
        return s.base_file.size if s.base_file is not None else max_file

    cut: list[tuple[list[FileSlice], int]] = []
    cur: list[FileSlice] = []
    total = 0
    for s in sorted(slices, key=lambda s: -size(s)):
        if cur and total + size(s) > per_group:
            cut.append((cur, total))
            cur, total = [], 0
        cur.append(s)
        total += size(s)
    if cur:
        cut.append((cur, total))
    return [
        ClusteringGroup(
            slices=[_slice_info(ctx, s) for s in group],
            metrics=_group_metrics(group, ctx.layout),
            num_output_file_groups=max(1, math.ceil(total / target)),
            extra_metadata=None,
            version=1,
        )
        for group, total in cut
        if len(group) > 1 or single
    ]


def plan_clustering(ctx: ServiceContext, tl: Timeline | None = None) -> ClusteringPlan | None:
    """The plan a clustering scheduled now would carry (nothing is written); None when no
    partition has a group to cluster."""
    tl = tl if tl is not None else ctx.timeline()
    table = ReadableTable(ctx.state)
    vis = table.visibility()
    busy = _file_groups_in_pending_compaction(tl) | tl.file_groups_in_pending_clustering()
    view = FileSystemView(ctx.storage, ctx.config)
    table.verify_committed_files(view, vis)
    small = ctx.get(ClusteringConfig.SMALL_FILE_LIMIT)
    max_groups = ctx.get(ClusteringConfig.MAX_NUM_GROUPS)
    sort_columns = ctx.get(ClusteringConfig.SORT_COLUMNS) or []
    groups: list[ClusteringGroup] = []
    for p in select_partitions(ctx, view.partitions()):
        eligible = [
            s
            for s in view.latest_file_slices(p, vis)
            if (p, s.file_id) not in busy
            and (s.base_file.size if s.base_file is not None else 0) < small
        ]
        groups += _groups_of_partition(ctx, eligible, bool(sort_columns))[:max_groups]
        if len(groups) >= max_groups:
            break
    groups = groups[:max_groups]
    if not groups:
        return None
    params = {}
    if sort_columns:
        missing = [c for c in sort_columns if c not in table.schema.names]
        if missing:
            raise ConfigError(
                f"option '{ClusteringConfig.SORT_COLUMNS.key}' names {missing[0]!r}, which is "
                f"not a column of the table ({', '.join(table.schema.names)})"
            )
        params[ClusteringConfig.SORT_COLUMNS.key] = ",".join(sort_columns)
        layout = ctx.get(ClusteringConfig.LAYOUT_STRATEGY)
        if layout != LayoutOptimizeStrategy.LINEAR.value:
            # Java's executor reads the layout from its write config; recorded here too (an
            # extra parameter Java ignores) so that a run without the option keeps the order
            # the plan was scheduled with
            params[ClusteringConfig.LAYOUT_STRATEGY.key] = layout
    return ClusteringPlan(
        input_groups=groups,
        strategy=ClusteringStrategy(
            strategy_class_name=ctx.get(ClusteringConfig.EXECUTION_STRATEGY),
            strategy_params=params,
            version=1,
        ),
        extra_metadata={},
        version=PLAN_VERSION,
        preserve_hoodie_metadata=True,
        missing_schedule_partitions=None,
    )


def requested_metadata(plan: ClusteringPlan) -> RequestedReplaceMetadata:
    """The content of ``T.replacecommit.requested`` / ``T.clustering.requested`` (Java
    ``ClusteringPlanActionExecutor.scheduleClustering``)."""
    return RequestedReplaceMetadata(
        operation_type="CLUSTER", clustering_plan=plan, extra_metadata={}, version=1
    )
