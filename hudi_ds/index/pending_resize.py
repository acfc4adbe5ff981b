"""Writing beside a pending consistent-hashing resize: Java's dual write.

A resize of a partition's ring is a clustering (:mod:`hudi_ds.services.bucket_resize`) whose
groups each rewrite one or more nodes' file groups into child nodes (their extra metadata:
:data:`PARTITION_KEY`, :data:`CHILD_NODE_KEY`, :data:`SEQUENCE_NUMBER_KEY`, written by Java's
``BaseConsistentHashingBucketClusteringPlanStrategy``). Writers keep writing while it is
pending, as Java's ``SparkConsistentBucketDuplicateUpdateStrategy.handleUpdate`` has them do:

1. **Tagging**: every record is tagged by the partition's *committed* ring
   (``HoodieSparkConsistentBucketIndex``, ``ConsistentBucketIndexUtils.loadMetadata``). A
   record -- update, insert or delete alike, since the bucket index tags all of them -- whose
   file group is an input of the pending resize is written twice: to that file group as
   usual, and to the file group of the child node its hash falls in, found on the ring the
   resize will commit (the committed ring with the plan's children applied:
   ``ConsistentBucketIdentifier`` built on the metadata with ``getChildrenNodes``). The
   copy's location is ``(<child prefix>-0, <resize instant>)``: a log file of the child's file
   group in the slice the resize's base file opens, named with the resize's instant
   (``.<prefix>-0_<resize instant>.log.<v>_<token>``).
2. **Reading**: the resize's instant is pending, so a slice based on it is not committed
   (``HoodieFileGroup.isFileSliceCommitted``) and the copies are invisible; readers see the old
   file groups, which hold every record. hudi_ds names the copy after the resize on table
   version 8+ too, although a version 8 log file otherwise carries the instant that writes it:
   readers place such a file by the completion time of the instant its name carries, and the
   resize's has none until it completes -- named after the writer, the copy would be visible
   at once beside the original.
3. **The resize completes**: its replacecommit replaces the old file groups and gives each
   child a base file at the resize's instant (``SparkConsistentBucketClusteringExecutionStrategy``
   bulk-inserts the old slice as of its plan into ``<prefix>-0``); the copies are that slice's
   log files, merged on top of it. A write that committed before the resize carries its
   records in the copies (the resize's base file holds the old slice as of the plan); a write
   that commits after it wrote the copies too, and the old file group it also wrote is
   replaced. Either way each key is once in the reader's view.
4. **The resize is rolled back**: its instant is gone, the copies stay invisible (on table
   version 8+ the rollback deletes them, named after it); the old file groups hold every
   record. A failed attempt rolled back to be run again deletes only the files its markers
   name -- never the copies, which are the writers'.

Reconciling the commits (under the table lock): a write into an input of a resize must have
written the copies (:func:`dual_written`: it also wrote a child of that resize in the
partition -- the children's file ids are random, known only from the plan). A resize
scheduled after a write planned its files (the write cannot know its children) makes the
write's commit fail, as Java's ``SparkRejectUpdateStrategy`` would, and a write that wrote the
old file group alone makes the resize fail at its commit
(``SimpleConcurrentFileWritesConflictResolutionStrategy``). Java avoids both by not
scheduling a resize while a write is pending
(``BaseConsistentHashingBucketClusteringPlanStrategy.checkPrecondition``), as hudi_ds does.
A single writer, which refuses to commit over any other commit made while it wrote, lets the
resizes its plan wrote beside complete meanwhile (:mod:`hudi_ds.write.writer_guard`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hudi_ds.errors import CorruptFileError
from hudi_ds.index.consistent_hashing import (
    BucketLayoutLike,
    HashingMetadata,
    HashingNode,
    NodeTag,
    key_hashes,
    nodes_from_json,
)
from hudi_ds.schema.meta import PARTITION_PATH_METADATA_FIELD, RECORD_KEY_METADATA_FIELD
from hudi_ds.timeline.plans import ClusteringGroup, ClusteringPlan
from hudi_ds.timeline.timeline import Timeline

#: Java's execution strategy of consistent-hashing resizes
RESIZE_EXECUTION_STRATEGY = (
    "org.apache.hudi.client.clustering.run.strategy."
    "SparkConsistentBucketClusteringExecutionStrategy"
)
#: the extra metadata keys of a resize group (``BaseConsistentHashingBucketClusteringPlanStrategy``)
PARTITION_KEY = "clustering.group.partition"
CHILD_NODE_KEY = "clustering.group.child.node"
SEQUENCE_NUMBER_KEY = "clustering.group.sequence.no"


def is_resize(plan: ClusteringPlan) -> bool:
    """The plan is a consistent-hashing resize (by its execution strategy)."""
    name = (plan.strategy.strategy_class_name if plan.strategy else None) or ""
    return name.rsplit(".", 1)[-1] == RESIZE_EXECUTION_STRATEGY.rsplit(".", 1)[-1]


def children_of(group: ClusteringGroup, where: str) -> tuple[str, list[HashingNode]]:
    """The partition and child nodes of a resize group.

    Raises:
        CorruptFileError: the group lacks them.
    """
    extra = group.extra_metadata or {}
    if CHILD_NODE_KEY not in extra or PARTITION_KEY not in extra:
        raise CorruptFileError(f"{where}: a resize group without {CHILD_NODE_KEY}")
    return extra[PARTITION_KEY], nodes_from_json(extra[CHILD_NODE_KEY], where)


@dataclass(frozen=True)
class PendingResize:
    """One partition's part of a pending resize.

    Attributes:
        instant: the resize's (clustering) instant.
        partition: the partition.
        inputs: the file ids of the file groups it rewrites.
        children: its child nodes (all groups of the partition).
    """

    instant: str
    partition: str
    inputs: frozenset[str]
    children: tuple[HashingNode, ...]

    def ring_after(self, ring: HashingMetadata) -> HashingMetadata:
        """The partition's ring once the resize commits: ``ring`` (the committed one) with the
        children applied (Java ``ConsistentBucketIdentifier`` on the metadata whose
        ``childrenNodes`` hold them).

        Raises:
            CorruptFileError: the children do not fit ``ring`` (naming the resize).
        """
        return ring.with_children(self.children, self.instant, f"clustering {self.instant}")


def pending_resizes(timeline: Timeline) -> dict[str, PendingResize]:
    """Partition -> the pending resize rewriting some of its file groups.

    Raises:
        CorruptFileError: a resize group without its partition or children, or two pending
            resizes of one partition (each resize is planned against the partition's
            committed ring: Java's ``checkState`` "a partition with two clustering instants").
    """
    out: dict[str, PendingResize] = {}
    for inst in timeline.pending_clustering():
        plan = timeline.read_requested_replace(inst).clustering_plan
        if plan is None or not is_resize(plan):
            continue
        ts = inst.requested_time
        where = f"clustering {ts}"
        inputs: dict[str, set[str]] = {}
        kids: dict[str, list[HashingNode]] = {}
        for g in plan.input_groups or []:
            p, nodes = children_of(g, where)
            kids.setdefault(p, []).extend(nodes)
            inputs.setdefault(p, set()).update(sl.file_id or "" for sl in g.slices or [])
        for p, nodes in kids.items():
            if p in out:
                raise CorruptFileError(
                    f"{where}: partition '{p}' is also resized by pending clustering "
                    f"{out[p].instant}"
                )
            out[p] = PendingResize(ts, p, frozenset(inputs.get(p, ())), tuple(nodes))
    return out


def resize_file_ids(
    groups: Iterable[ClusteringGroup], where: str
) -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """Partition -> the input file ids, and partition -> the file ids of the children it
    writes (REPLACE nodes), of a resize's groups.

    Raises:
        CorruptFileError: a group without its partition or children (naming ``where``).
    """
    inputs: dict[str, set[str]] = {}
    children: dict[str, set[str]] = {}
    for g in groups:
        p, kids = children_of(g, where)
        inputs.setdefault(p, set()).update(sl.file_id or "" for sl in g.slices or [])
        # REPLACE children are the file groups the resize writes (a merge's DELETE ones name
        # nodes it removes)
        written = (k.file_id for k in kids if k.tag is NodeTag.REPLACE)
        children.setdefault(p, set()).update(written)
    return inputs, children


def dual_written(
    written: Iterable[tuple[str, str]],
    inputs: Mapping[str, Iterable[str]],
    children: Mapping[str, Iterable[str]],
) -> set[tuple[str, str]]:
    """The ``(partition, file id)`` of ``written`` that are inputs of a resize *and* were
    written twice: the same write also wrote one of that resize's children in the partition
    (whose ids are random, known only from the plan: only a writer that knew the resize can
    have written one).

    Args:
        written: the file groups a write wrote.
        inputs: partition -> the resize's input file ids.
        children: partition -> the file ids of the resize's children.
    """
    pairs = set(written)
    kids = {p: set(fids) for p, fids in children.items()}
    return {
        (p, f)
        for p, fids in inputs.items()
        if any((p, c) in pairs for c in kids.get(p, ()))
        for f in fids
        if (p, f) in pairs
    }


class ChildRouter:
    """Where the copies of the records written beside pending resizes go (one writer task).

    Args:
        resizes: partition -> its pending resize.
        committed: partition -> its committed ring.
        layout: the bucket layout (its ``hash_fields``).

    Attributes:
        instants: ``(partition, file id)`` of the children copied to -> the resize's instant
            (the base instant their log files are named with).
    """

    def __init__(
        self,
        resizes: Mapping[str, PendingResize],
        committed: Callable[[str], HashingMetadata],
        layout: BucketLayoutLike,
    ) -> None:
        self._resizes = resizes
        self._committed = committed
        self._hash_fields = list(layout.hash_fields)
        self._after: dict[str, HashingMetadata] = {}
        self.instants: dict[tuple[str, str], str] = {}

    def add(
        self,
        rows: pa.Table,
        tg: np.ndarray,
        targets: Sequence[tuple[str, str]],
        target_of: Callable[[str, str, str, int], int],
    ) -> tuple[pa.Table, np.ndarray]:
        """``rows`` (tagged ``tg``: positions in ``targets``, ``(partition, file id)``) and a
        copy of each row tagged to a file group of a pending resize, tagged to the child node
        its key's hash falls in on the ring the resize will commit
        (:meth:`PendingResize.ring_after`). ``target_of(partition, file id, resize instant,
        rows)`` numbers a child's file group (and counts its rows).

        Raises:
            CorruptFileError: a resize's children do not fit the partition's ring.
        """
        res = self._resizes
        under = np.array([p in res and f in res[p].inputs for p, f in targets], bool)
        sel = np.flatnonzero(under[tg]) if rows.num_rows and len(under) else np.empty(0, np.int64)
        if not len(sel):
            return rows, tg
        copies = rows.take(pa.array(sel))
        hashes = key_hashes(copies.column(RECORD_KEY_METADATA_FIELD), self._hash_fields)
        out = np.empty(len(sel), np.int64)
        parts = copies.column(PARTITION_PATH_METADATA_FIELD).combine_chunks().cast(pa.string())
        enc = pc.dictionary_encode(parts)
        pidx = np.asarray(enc.indices, dtype=np.int64)
        for i, p in enumerate(enc.dictionary.to_pylist()):
            ring = self._after.get(p)
            if ring is None:
                ring = self._after[p] = res[p].ring_after(self._committed(p))
            at = np.flatnonzero(pidx == i)
            uniq, inverse = np.unique(ring.node_indexes(hashes[at]), return_inverse=True)
            inverse = inverse.reshape(-1)
            counts = np.bincount(inverse, minlength=len(uniq))
            ids = np.empty(len(uniq), np.int64)
            for k, n in enumerate(uniq.tolist()):
                fid = ring.nodes[n].file_id
                self.instants[(p, fid)] = res[p].instant
                ids[k] = target_of(p, fid, res[p].instant, int(counts[k]))
            out[at] = ids[inverse]
        return pa.concat_tables([rows, copies]), np.concatenate([tg, out])
