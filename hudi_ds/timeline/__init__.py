"""Hudi's timeline: instants, instant files and their contents, active and archived timelines.

See :mod:`hudi_ds.timeline.instant` for the instant-file grammar of layouts 1 and 2.
"""

from hudi_ds.timeline.archived import ArchivedEntry, ArchivedTimeline, load_lsm_history
from hudi_ds.timeline.instant import (
    ACTIONS,
    CLEAN,
    CLUSTERING,
    COMMIT,
    COMPACTION,
    DELTA_COMMIT,
    INDEXING,
    LOG_COMPACTION,
    REPLACE_COMMIT,
    RESTORE,
    ROLLBACK,
    SAVEPOINT,
    SCHEMA_COMMIT,
    Instant,
    State,
    completed_action,
    format_instant_time,
    instant_time_to_datetime,
    new_instant_time,
)
from hudi_ds.timeline.metadata import CommitMetadata, WriteStat
from hudi_ds.timeline.plans import (
    CleanerPlan,
    CleanMetadata,
    CompactionOperation,
    CompactionPlan,
    RequestedReplaceMetadata,
    RollbackMetadata,
    RollbackPlan,
    SavepointMetadata,
)
from hudi_ds.timeline.timeline import DATA_ACTIONS, Timeline, timeline_dir
from hudi_ds.timeline.writer import TimelineWriter

__all__ = [
    "ACTIONS",
    "CLEAN",
    "CLUSTERING",
    "COMMIT",
    "COMPACTION",
    "DATA_ACTIONS",
    "DELTA_COMMIT",
    "INDEXING",
    "LOG_COMPACTION",
    "REPLACE_COMMIT",
    "RESTORE",
    "ROLLBACK",
    "SAVEPOINT",
    "SCHEMA_COMMIT",
    "ArchivedEntry",
    "ArchivedTimeline",
    "CleanMetadata",
    "CleanerPlan",
    "CommitMetadata",
    "CompactionOperation",
    "CompactionPlan",
    "Instant",
    "RequestedReplaceMetadata",
    "RollbackMetadata",
    "RollbackPlan",
    "SavepointMetadata",
    "State",
    "Timeline",
    "TimelineWriter",
    "WriteStat",
    "completed_action",
    "format_instant_time",
    "instant_time_to_datetime",
    "load_lsm_history",
    "new_instant_time",
    "timeline_dir",
]
