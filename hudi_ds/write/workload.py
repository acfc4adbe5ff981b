"""The workload profile of a write (Java ``WorkloadProfile`` / ``WorkloadStat``).

What a write's tagged records will do, before any file is written: per partition the number of
inserts, and per existing file group that receives updates its previous commit (the instant
of the base file the index tagged) and the number of updates. The task writer fills it while
tagging (:meth:`hudi_ds.write.task_writer.TaskWriter.tag`).
"""

from __future__ import annotations

from dataclasses import dataclass, field


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

    def merge(self, other: WorkloadProfile) -> None:
        """Add the counts of ``other`` (another task's profile) to this one."""
        for p, n in other.inserts.items():
            self.add_inserts(p, n)
        for (p, f), u in other.updates.items():
            self.add_updates(p, f, u.prev_commit, u.count)

    @property
    def partitions(self) -> list[str]:
        """Every partition the profile touches, sorted."""
        return sorted(set(self.inserts) | {p for p, _ in self.updates})
