"""The workload profile of a write (Java ``WorkloadProfile`` / ``WorkloadStat``).

What a write's tagged records will do, before any file is written: per partition the number of
inserts, and per existing file group that receives updates its previous commit (the instant
of the base file the index tagged) and the number of updates. The task writer fills it while
tagging (:meth:`hudi_ds.write.task_writer.TaskWriter.tag`).

A write that knows its whole profile before it writes any file (the embedded API) saves it in
its ``.inflight`` file, as Java's ``BaseCommitActionExecutor.saveWorkloadProfileMetadataToInflight``
does when the instant goes from requested to inflight (:meth:`WorkloadProfile.to_commit_metadata`):
a concurrent Apache Hudi writer's conflict resolution (``ConcurrentOperation``) reads the
``(partition, fileId)`` pairs of a pending instant from there.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from hudi_ds.index.bucket import java_string_hash
from hudi_ds.timeline.metadata import NULL_COMMIT, CommitMetadata, WriteStat


@dataclass
class FileUpdates:
    """Updates tagged to one existing file group.

    Attributes:
        prev_commit: the instant of the file slice the index tagged (Java
            ``HoodieRecordLocation.instantTime``).
        count: how many records update it.
    """

    prev_commit: str
    count: int = 0


@dataclass
class WorkloadProfile:
    """Inserts per partition and updates per ``(partition, file id)`` of one write.

    Attributes:
        inserts: partition path -> records inserted into it (new keys).
        updates: ``(partition, file id)`` -> :class:`FileUpdates`.
    """

    inserts: dict[str, int] = field(default_factory=dict)
    updates: dict[tuple[str, str], FileUpdates] = field(default_factory=dict)

    def add_inserts(self, partition: str, count: int) -> None:
        """Count ``count`` inserts into ``partition``."""
        self.inserts[partition] = self.inserts.get(partition, 0) + int(count)

    def add_updates(self, partition: str, file_id: str, prev_commit: str, count: int) -> None:
        """Count ``count`` updates of file group ``file_id`` (tagged at ``prev_commit``)."""
        u = self.updates.get((partition, file_id))
        if u is None:
            u = self.updates[(partition, file_id)] = FileUpdates(prev_commit)
        u.count += int(count)

    @property
    def partitions(self) -> list[str]:
        """Every partition the profile touches, sorted."""
        return sorted(set(self.inserts) | {p for p, _ in self.updates})

    def to_commit_metadata(
        self, operation_type: str, extra_metadata: Mapping[str, str] | None = None
    ) -> CommitMetadata:
        """The profile as the inflight commit metadata Java writes.

        Java ``BaseCommitActionExecutor.saveWorkloadProfileMetadataToInflight``: per partition
        of the profile, first a stat with ``fileId`` ``""``, ``prevCommit`` ``"null"`` and the
        partition's ``numInserts`` (present when it is 0), then one stat per updated file group
        with its ``fileId``, ``prevCommit`` (the instant the index tagged) and
        ``numUpdateWrites``; every other field keeps its default. New file groups and the small
        files that receive inserts are not listed (the fixtures of Hudi 0.14 to 1.1 show only
        these two kinds). Partitions and file ids come in the order a ``java.util.HashMap``
        iterates them (:func:`java_hash_map_order`), as Jackson serialises Java's maps, so
        the JSON matches Java's byte for byte.

        Args:
            operation_type: the ``WriteOperationType`` (``UPSERT``, ``INSERT``, ``DELETE``...).
            extra_metadata: ``extraMetadata`` (Java writes none; hudi_ds keeps the writer
                schema there, which a client that did not start the write reads back).
        """
        by_partition: dict[str, dict[str, FileUpdates]] = {}
        for (p, f), u in self.updates.items():
            by_partition.setdefault(p, {})[f] = u
        stats: dict[str, list[WriteStat]] = {}
        for p in java_hash_map_order(self.partitions):
            out = [
                WriteStat(file_id="", prev_commit=NULL_COMMIT, num_inserts=self.inserts.get(p, 0))
            ]
            files = by_partition.get(p, {})
            for f in java_hash_map_order(sorted(files)):
                u = files[f]
                out.append(
                    WriteStat(file_id=f, prev_commit=u.prev_commit, num_update_writes=u.count)
                )
            stats[p] = out
        return CommitMetadata(
            partition_to_write_stats=stats,
            extra_metadata=dict(extra_metadata or {}),
            operation_type=operation_type,
        )

    @classmethod
    def from_commit_metadata(cls, metadata: CommitMetadata) -> WorkloadProfile:
        """The profile an inflight commit metadata holds (another writer's pending instant):
        the inverse of :meth:`to_commit_metadata`. Stats of written files (a completed
        instant's, or an inflight without a profile) have no profile entries: the ``""``
        stats give the inserts, stats with a file id and ``numUpdateWrites`` the updates."""
        profile = cls()
        for p, stats in metadata.partition_to_write_stats.items():
            for s in stats:
                if s.path:
                    continue  # a written file, not a planned one
                if s.file_id == "":
                    profile.add_inserts(p, s.num_inserts)
                elif s.file_id:
                    profile.add_updates(
                        p, s.file_id, s.prev_commit or NULL_COMMIT, s.num_update_writes
                    )
        return profile


def java_hash_map_order(keys: Iterable[str]) -> list[str]:
    """``keys`` in the order a ``java.util.HashMap<String, ?>`` filled with them in this order
    iterates them.

    A HashMap puts key ``k`` in bin ``(h ^ (h >>> 16)) & (capacity - 1)`` with
    ``h = k.hashCode()``; the capacity starts at 16 and doubles whenever the size passes
    three quarters of it, so it ends at the smallest power of two >= 16 with
    ``size <= 0.75 * capacity``. Iteration walks the bins in order, each bin's keys in
    insertion order (a resize splits a bin keeping that order). A bin of 8 or more keys
    (treeified, or a resize forced by it) is not modelled: Java's String hashes make it rare,
    and only the order of JSON keys would differ, which no reader depends on.
    """
    ks = list(keys)
    if len(ks) < 2:
        return ks
    capacity = 16
    while len(ks) > 0.75 * capacity:
        capacity *= 2
    h = java_string_hash(pa.array(ks, pa.string())).view(np.uint32)
    spread = h ^ (h >> np.uint32(16))
    bins = spread & np.uint32(capacity - 1)
    order = np.argsort(bins, kind="stable")
    return [ks[i] for i in order.tolist()]
