"""Resizing a consistent-hashing bucket index: node splits and merges planned and executed as a
clustering.

Java's ``SparkConsistentBucketClusteringPlanStrategy`` (on
``BaseConsistentHashingBucketClusteringPlanStrategy``) and
``SparkConsistentBucketClusteringExecutionStrategy``:

* **plan**: per partition without a pending clustering, over the latest slices of its nodes
  not under a pending compaction or clustering (Java ``buildClusteringGroupsForPartition``):

  - *split*: every node whose file group (base and log files) is larger than
    ``hoodie.parquet.max.file.size`` times ``hoodie.bucket.index.split.threshold`` is split in
    the middle of its hash range (``ConsistentBucketIdentifier.splitBucket``), while the
    partition has fewer nodes than ``hoodie.bucket.index.max.num.buckets``: a group of one
    slice, two output file groups, two children tagged REPLACE;
  - *merge*: of the slices left, runs of neighbouring nodes on the ring, each file group
    no larger than ``max.file.size`` times ``hoodie.bucket.index.merge.threshold`` (and the run
    so far too), merge into one node while the partition keeps at least
    ``hoodie.bucket.index.min.num.buckets`` nodes (``buildMergeClusteringGroup``,
    ``ConsistentBucketIdentifier.mergeBucket``): a group of the run's slices, one output file
    group, children tagged DELETE for all nodes but the last, whose value is REPLACEd.

  A group's extra metadata carries the partition (``clustering.group.partition``), the child
  nodes (``clustering.group.child.node``, JSON) and the ring's sequence number
  (``clustering.group.sequence.no``). Re-sorting the other nodes (Java's sort groups, which
  rewrite every other file group of the partition) is not planned.
* **execute**: the group's records (base files and logs merged) go to the REPLACE child whose
  range holds their key's hash (a merge's only one takes them all), each child's into a base
  file of its file group (``<prefix>-0``).
* **complete**: before the replacecommit, each partition's new ring is written as
  ``<instant>.hashing_meta`` (the ring with the children applied, ``seqNo`` + 1:
  ``HoodieSparkConsistentBucketIndex.updateLocation``); after it, its commit marker. A crash in
  between, or a marker that could not be written (logged: the resize stands), leaves a ring
  whose instant is a completed commit: the next load commits it.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from hudi_ds.config import ClusteringConfig, WriteConfig
from hudi_ds.errors import CommitConflictError
from hudi_ds.index.consistent_hashing import (
    HashingMetadata,
    HashingNode,
    NodeTag,
    commit_metadata,
    key_hashes,
    load_metadata,
    nodes_to_json,
    save_metadata,
)
from hudi_ds.index.core import table_bucket_layout
from hudi_ds.index.pending_resize import (
    CHILD_NODE_KEY,
    PARTITION_KEY,
    RESIZE_EXECUTION_STRATEGY,
    SEQUENCE_NUMBER_KEY,
    children_of,
)
from hudi_ds.layout.file_group import FileSlice
from hudi_ds.schema.meta import RECORD_KEY_METADATA_FIELD
from hudi_ds.services.base import ServiceContext
from hudi_ds.services.clustering_plan import _slice_info
from hudi_ds.services.compaction_plan import _file_groups_in_pending_compaction
from hudi_ds.table.fs_view import FileSystemView
from hudi_ds.table.table import ReadableTable
from hudi_ds.timeline.plans import ClusteringGroup, ClusteringPlan, ClusteringStrategy
from hudi_ds.timeline.timeline import Timeline

log = logging.getLogger(__name__)


def _slice_size(s: FileSlice) -> int:
    # Java FileSlice.getTotalFileSize: the base file and every log file
    base = s.base_file.size if s.base_file is not None else 0
    return base + sum(lf.size for lf in s.log_files)


def _min_nodes(ctx: ServiceContext) -> int:
    """``hoodie.bucket.index.min.num.buckets``: unset, the table's
    ``hoodie.bucket.index.num.buckets`` (a partition's initial node count); above it, that count
    with a warning (Java ``HoodieIndexConfig.validateBucketIndexConfig``)."""
    layout = table_bucket_layout(ctx.state)
    num_buckets = layout.num_buckets if layout is not None else 1
    min_nodes = ctx.get(ClusteringConfig.BUCKET_MIN_NUM_BUCKETS)
    if min_nodes is None:
        return num_buckets
    if min_nodes > num_buckets:
        log.warning(
            "%s=%d is larger than the table's %d buckets (a partition's initial nodes); %d is used",
            ClusteringConfig.BUCKET_MIN_NUM_BUCKETS.key,
            min_nodes,
            num_buckets,
            num_buckets,
        )
        return num_buckets
    return int(min_nodes)


def plan_splits(
    ring: HashingMetadata, sizes: Sequence[tuple[int, int]], split_size: int, slots: int
) -> tuple[list[tuple[int, list[HashingNode]]], list[tuple[int, int]]]:
    """The splits of a ring (Java ``buildSplitClusteringGroups``).

    Args:
        ring: the partition's ring.
        sizes: ``(node position, file group size)`` of the candidate slices, in ring order.
        split_size: nodes whose file group is larger are split.
        slots: how many nodes may be added.

    Returns:
        ``(node position, its two children)`` of each split, and the candidates not split.
    """
    splits: list[tuple[int, list[HashingNode]]] = []
    rest: list[tuple[int, int]] = []
    for pos, size in sizes:
        children = ring.split(pos) if size > split_size and len(splits) < slots else None
        if children is None:
            rest.append((pos, size))
        else:
            splits.append((pos, list(children)))
    return splits, rest


def plan_merges(
    ring: HashingMetadata, sizes: Sequence[tuple[int, int]], merge_size: int, slots: int
) -> list[tuple[list[int], list[HashingNode]]]:
    """The merges of a ring (Java ``buildMergeClusteringGroup``): from each small candidate not
    yet merged, the run grows backwards, then forwards, over neighbouring small candidates
    while the run so far is no larger than ``merge_size`` and ``slots`` (nodes that may be
    removed) last.

    Args:
        ring: the partition's ring.
        sizes: ``(node position, file group size)`` of the candidate slices, in ring order.
        merge_size: nodes whose file group is larger are not merged.
        slots: how many nodes may be removed.

    Returns:
        The node positions of each run, in ring order (possibly wrapping), and its children.
    """
    n, width = len(sizes), len(ring.nodes)
    if n <= 1:
        return []
    pos = [p for p, _ in sizes]
    size = [s for _, s in sizes]
    added = [False] * n
    remaining = max(0, slots)
    out: list[tuple[list[int], list[HashingNode]]] = []
    for i in range(n):
        if added[i] or size[i] > merge_size:
            continue
        ends, total = [i, i], size[i]
        for k, step in ((0, -1), (1, 1)):
            while True:
                nxt = (ends[k] + step) % n
                if (
                    remaining == 0
                    or added[nxt]
                    or pos[nxt] != (pos[ends[k]] + step) % width  # not the ring neighbour
                    or total > merge_size
                    or size[nxt] > merge_size
                    or nxt == ends[1 - k]
                ):
                    break
                total += size[nxt]
                ends[k] = nxt
                remaining -= 1
                if ends[k] == i:
                    break
        if ends == [i, i]:
            continue
        run, j = [], ends[0]
        while True:
            added[j] = True
            run.append(pos[j])
            if j == ends[1]:
                break
            j = (j + 1) % n
        out.append((run, ring.merge(run)))
    return out


def plan_bucket_resize(ctx: ServiceContext, tl: Timeline | None = None) -> ClusteringPlan | None:
    """The resize plan a clustering scheduled now would carry (nothing is written); None when
    no node is to be split or merged."""
    tl = tl if tl is not None else ctx.timeline()
    table = ReadableTable(ctx.state)
    vis = table.visibility()
    clustering = tl.file_groups_in_pending_clustering()
    busy = _file_groups_in_pending_compaction(tl) | clustering
    in_clustering = {p for p, _ in clustering}
    view = FileSystemView(ctx.storage, ctx.config)
    max_file_size = ctx.get(WriteConfig.MAX_FILE_SIZE)
    split_size = int(max_file_size * ctx.get(ClusteringConfig.BUCKET_SPLIT_THRESHOLD))
    merge_size = int(max_file_size * ctx.get(ClusteringConfig.BUCKET_MERGE_THRESHOLD))
    max_nodes = ctx.get(ClusteringConfig.BUCKET_MAX_NUM_BUCKETS)
    min_nodes = _min_nodes(ctx)
    groups: list[ClusteringGroup] = []
    for p in view.partitions():
        if p in in_clustering:
            continue  # one resize of a partition at a time (its ring's sequence number)
        ring = load_metadata(ctx.storage, p, lambda i: i in vis.instants)
        if ring is None:
            continue
        latest = {s.file_id: s for s in view.latest_file_slices(p, vis)}
        slices = {
            i: latest[n.file_id]
            for i, n in enumerate(ring.nodes)
            if n.file_id in latest and (p, n.file_id) not in busy
        }
        sizes = [(i, _slice_size(s)) for i, s in slices.items()]
        width = len(ring.nodes)
        split_slots = (max_nodes - width) if max_nodes is not None else width
        splits, rest = plan_splits(ring, sizes, split_size, split_slots)
        merge_slots = width - min_nodes + len(splits)
        runs = [([i], kids) for i, kids in splits]
        runs += plan_merges(ring, rest, merge_size, merge_slots)
        for nodes, kids in runs:
            members = [slices[i] for i in nodes]
            total = sum(_slice_size(s) for s in members)
            groups.append(
                ClusteringGroup(
                    slices=[_slice_info(ctx, s) for s in members],
                    metrics={"TOTAL_IO_MB": total / (1 << 20)},
                    num_output_file_groups=sum(k.tag is NodeTag.REPLACE for k in kids),
                    extra_metadata={
                        PARTITION_KEY: p,
                        CHILD_NODE_KEY: nodes_to_json(kids),
                        SEQUENCE_NUMBER_KEY: str(ring.seq_no),
                    },
                    version=1,
                )
            )
    if not groups:
        return None
    return ClusteringPlan(
        input_groups=groups,
        strategy=ClusteringStrategy(
            strategy_class_name=RESIZE_EXECUTION_STRATEGY, strategy_params={}, version=1
        ),
        extra_metadata={},
        version=1,
        preserve_hoodie_metadata=True,
        missing_schedule_partitions=None,
    )


def split_rows(
    rows: pa.Table, children: Sequence[HashingNode], hash_fields: Sequence[str]
) -> list[tuple[HashingNode, pa.Table]]:
    """The rows of each REPLACE child: the first child (by value) whose value is at least the
    key's hash, wrapping to the first, as the ring after the resize places them (a merge's one
    REPLACE child takes every row; its DELETE children hold no file group)."""
    kids = sorted((c for c in children if c.tag is NodeTag.REPLACE), key=lambda c: c.value)
    values = np.array([c.value for c in kids], np.int64)
    hashes = key_hashes(rows.column(RECORD_KEY_METADATA_FIELD), hash_fields)
    masked = (hashes & np.uint32(0x7FFFFFFF)).astype(np.int64)
    idx = np.searchsorted(values, masked, side="left")
    idx[idx == len(kids)] = 0
    return [(c, rows.filter(pa.array(idx == i))) for i, c in enumerate(kids)]


def save_resized_rings(
    ctx: ServiceContext, instant: str, groups: Sequence[ClusteringGroup]
) -> list[str]:
    """Write each resized partition's new ring as ``<instant>.hashing_meta`` (before the
    replacecommit completes).

    Returns:
        The partitions whose ring was written.

    Raises:
        CommitConflictError: a partition's ring changed since the plan (its sequence number).
    """
    vis_instants = {i.requested_time for i in ctx.timeline().commits()}
    children: dict[str, list[HashingNode]] = {}
    seq: dict[str, int] = {}
    for g in groups:
        p, kids = children_of(g, f"clustering {instant}")
        children.setdefault(p, []).extend(kids)
        seq[p] = int((g.extra_metadata or {}).get(SEQUENCE_NUMBER_KEY, "0"))
    for p, kids in children.items():
        ring = load_metadata(ctx.storage, p, lambda i: i in vis_instants)
        if ring is None or ring.seq_no != seq[p]:
            raise CommitConflictError(
                f"clustering {instant}: the consistent hashing ring of partition '{p}' changed "
                f"since the resize was planned (sequence {seq[p]}); it is rolled back"
            )
        save_metadata(ctx.storage, ring.with_children(kids, instant, f"clustering {instant}"))
    return list(children)


def commit_resized_rings(ctx: ServiceContext, instant: str, partitions: Sequence[str]) -> None:
    """The commit markers of a completed resize's rings, written after its replacecommit.

    A marker that cannot be written is logged, not raised: the replacecommit is the commit
    point, and a ring whose instant is a completed commit is committed by the next load
    (:func:`~hudi_ds.index.consistent_hashing.load_metadata`, Java's
    ``ConsistentBucketIndexUtils.loadMetadata`` for a clustering whose post-commit marker
    creation failed). Raising would make the caller treat the completed resize as failed.
    """
    for p in partitions:
        try:
            commit_metadata(ctx.storage, p, instant)
        except OSError as e:  # StorageError too
            log.warning(
                "resize %s is completed; the commit marker of partition '%s' could not be "
                "written (the next load of the ring writes it): %s",
                instant,
                p,
                e,
            )
