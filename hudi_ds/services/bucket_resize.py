"""Resizing a consistent-hashing bucket index: node splits planned and executed as a clustering.

Java's ``SparkConsistentBucketClusteringPlanStrategy`` (on
``BaseConsistentHashingBucketClusteringPlanStrategy``) and
``SparkConsistentBucketClusteringExecutionStrategy``:

* **plan**: per partition without a pending clustering, the latest slice of every node whose
  file group (base and log files) is larger than ``hoodie.parquet.max.file.size`` times
  ``hoodie.bucket.index.split.threshold`` is split in the middle of its hash range
  (``ConsistentBucketIdentifier.splitBucket``), while the partition has fewer nodes than
  ``hoodie.bucket.index.max.num.buckets``. Each split is one group of one slice with two output
  file groups, whose extra metadata carries the partition (``clustering.group.partition``),
  the two child nodes tagged REPLACE (``clustering.group.child.node``, JSON) and the ring's
  sequence number (``clustering.group.sequence.no``). Merging small nodes and re-sorting the
  others (Java's merge and sort groups) are not planned.
* **execute**: the slice's records (base file and logs merged) go to the child whose range
  holds their key's hash, each child's into a base file of its file group
  (``<prefix>-0``).
* **complete**: before the replacecommit, each partition's new ring is written as
  ``<instant>.hashing_meta`` (the ring with the children applied, ``seqNo`` + 1:
  ``HoodieSparkConsistentBucketIndex.updateLocation``); after it, its commit marker. A crash in
  between leaves a ring whose instant is a completed commit: the next load commits it.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from hudi_ds.config import ClusteringConfig, WriteConfig
from hudi_ds.errors import CommitConflictError
from hudi_ds.index.consistent_hashing import (
    HashingNode,
    commit_metadata,
    key_hashes,
    load_metadata,
    nodes_to_json,
    save_metadata,
)
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


def _slice_size(s: FileSlice) -> int:
    # Java FileSlice.getTotalFileSize: the base file and every log file
    base = s.base_file.size if s.base_file is not None else 0
    return base + sum(lf.size for lf in s.log_files)


def plan_bucket_resize(ctx: ServiceContext, tl: Timeline | None = None) -> ClusteringPlan | None:
    """The resize plan a clustering scheduled now would carry (nothing is written); None when
    no node is to be split."""
    tl = tl if tl is not None else ctx.timeline()
    table = ReadableTable(ctx.state)
    vis = table.visibility()
    clustering = tl.file_groups_in_pending_clustering()
    busy = _file_groups_in_pending_compaction(tl) | clustering
    in_clustering = {p for p, _ in clustering}
    view = FileSystemView(ctx.storage, ctx.config)
    split_size = int(
        ctx.get(WriteConfig.MAX_FILE_SIZE) * ctx.get(ClusteringConfig.BUCKET_SPLIT_THRESHOLD)
    )
    max_nodes = ctx.get(ClusteringConfig.BUCKET_MAX_NUM_BUCKETS)
    groups: list[ClusteringGroup] = []
    for p in view.partitions():
        if p in in_clustering:
            continue  # one resize of a partition at a time (its ring's sequence number)
        ring = load_metadata(ctx.storage, p, lambda i: i in vis.instants)
        if ring is None:
            continue
        slots = (max_nodes - len(ring.nodes)) if max_nodes is not None else len(ring.nodes)
        node_of = {n.file_id: i for i, n in enumerate(ring.nodes)}
        latest = {s.file_id: s for s in view.latest_file_slices(p, vis)}
        for fid, node in node_of.items():
            s = latest.get(fid)
            if slots <= 0:
                break
            if s is None or (p, fid) in busy or _slice_size(s) <= split_size:
                continue
            children = ring.split(node)
            if children is None:
                continue
            slots -= 1
            groups.append(
                ClusteringGroup(
                    slices=[_slice_info(ctx, s)],
                    metrics={"TOTAL_IO_MB": _slice_size(s) / (1 << 20)},
                    num_output_file_groups=2,
                    extra_metadata={
                        PARTITION_KEY: p,
                        CHILD_NODE_KEY: nodes_to_json(children),
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
    key's hash, wrapping to the first, as the ring after the resize places them."""
    kids = sorted((c for c in children if c.file_id_prefix), key=lambda c: c.value)
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
    """The commit markers of a completed resize's rings."""
    for p in partitions:
        commit_metadata(ctx.storage, p, instant)
