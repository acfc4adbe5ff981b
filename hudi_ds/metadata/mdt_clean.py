"""The metadata table's clean: after each MDT compaction, the file slices of every MDT file
group older than the two latest are deleted as an MDT ``clean`` instant (Java
``HoodieBackedTableMetadataWriter.cleanIfNecessary``)."""

from __future__ import annotations

import logging
from collections.abc import Callable

from hudi_ds.faults import crash_point
from hudi_ds.storage import Storage
from hudi_ds.timeline.instant import (
    CLEAN,
    MAX_INSTANT_AHEAD_MS,
    Instant,
    State,
    new_instant_time,
)
from hudi_ds.timeline.plans import (
    CleanerPlan,
    CleanFileInfo,
    CleanMetadata,
    CleanPartitionMetadata,
)
from hudi_ds.timeline.timeline import Timeline
from hudi_ds.timeline.writer import TimelineWriter

__all__ = ["clean"]

log = logging.getLogger("hudi_ds.metadata")

_CLEAN_POLICY = "KEEP_LATEST_FILE_VERSIONS"


def clean(
    storage: Storage,
    tl: Timeline,
    doomed: dict[str, list[str]],
    after: str,
    writer: TimelineWriter,
    fence: Callable[[], None],
    complete: Callable[[TimelineWriter, Instant, bytes], None],
) -> list[str]:
    """Delete ``doomed`` (MDT partition -> names of the files of slices older than the two
    latest; the slice a reader that started before compaction ``after`` may still read is
    kept) as an MDT clean instant (``KEEP_LATEST_FILE_VERSIONS``, 2 versions). Java 0.x names
    it ``<instant>002`` (``createCleanTimestamp``), 1.x gives it a new time.

    Args:
        storage: the MDT's storage.
        tl: the MDT timeline.
        doomed: the files to delete, by MDT partition.
        after: the MDT compaction this clean follows.
        writer: the MDT timeline writer.
        fence: raises when the table lock of the running service was lost.
        complete: completes the clean instant, fenced.

    Returns:
        The deleted file names.
    """
    doomed = {p: names for p, names in doomed.items() if names}
    if not doomed:
        return []
    if tl.layout_version == 1:
        when = after[:17] + "002"  # Java 0.x HoodieTableMetadataUtil.createCleanTimestamp
    else:
        when = new_instant_time(after=tl.latest_time(), max_ahead_ms=MAX_INSTANT_AHEAD_MS)
    infos = {
        p: [CleanFileInfo(storage.uri(f"{p}/{n}"), False) for n in sorted(names)]
        for p, names in doomed.items()
    }
    plan = CleanerPlan(
        earliest_instant_to_retain=None,
        last_completed_commit_timestamp=after,
        policy=_CLEAN_POLICY,
        files_to_be_deleted_per_partition={},
        version=2,
        file_paths_to_be_deleted_per_partition=infos,
        partitions_to_be_deleted=[],
    )
    req = Instant(when, CLEAN, State.REQUESTED)
    if not writer.create_requested(req, plan.to_bytes()):
        return []
    writer.transition_to_inflight(req, plan.to_bytes())
    fence()
    pms = {}
    for p, names in doomed.items():
        pm = pms[p] = CleanPartitionMetadata(partition_path=p, policy=_CLEAN_POLICY)
        for n in sorted(names):
            pm.delete_path_patterns.append(n)
            if storage.delete(f"{p}/{n}"):
                pm.success_delete_files.append(n)
    crash_point("metadata")
    deleted = sum(len(pm.success_delete_files) for pm in pms.values())
    md = CleanMetadata(
        start_clean_time=when,
        total_files_deleted=deleted,
        earliest_commit_to_retain="",
        last_completed_commit_timestamp=after,
        partition_metadata=pms,
        version=2,
        bootstrap_partition_metadata={},
    )
    complete(writer, Instant(when, CLEAN, State.INFLIGHT), md.to_bytes())
    log.info("metadata table: cleaned %d old files", deleted)
    return sorted(n for names in doomed.values() for n in names)
