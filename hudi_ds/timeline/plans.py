"""Plans and metadata of the table services, as Hudi writes them (Avro object container files):
rollback and restore, compaction, replace (clustering), clean, savepoint and indexing."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from hudi_ds.layout.naming import file_name_of, file_path
from hudi_ds.timeline.avro_record import AvroRecord

__all__ = [
    "ActionInstant",
    "CleanFileInfo",
    "CleanMetadata",
    "CleanPartitionMetadata",
    "CleanerPlan",
    "ClusteringGroup",
    "ClusteringPlan",
    "ClusteringStrategy",
    "CompactionOperation",
    "CompactionPlan",
    "CompactionStrategy",
    "IndexCommitMetadata",
    "IndexPartitionInfo",
    "IndexPlan",
    "InstantInfo",
    "RequestedReplaceMetadata",
    "RestoreMetadata",
    "RestorePlan",
    "RollbackMetadata",
    "RollbackPartitionMetadata",
    "RollbackPlan",
    "RollbackRequest",
    "SavepointMetadata",
    "SavepointPartitionMetadata",
    "SliceInfo",
]


@dataclass
class InstantInfo(AvroRecord):
    """``HoodieInstantInfo``: an instant time and its action."""

    commit_time: str = ""
    action: str = ""


@dataclass
class RollbackRequest(AvroRecord):
    """``HoodieRollbackRequest``: what to undo in one file group (or partition)."""

    partition_path: str = ""
    file_id: str | None = None
    latest_base_instant: str | None = None
    files_to_be_deleted: list[str] = field(default_factory=list)
    log_blocks_to_be_deleted: dict[str, int] | None = None


@dataclass
class RollbackPlan(AvroRecord):
    """``HoodieRollbackPlan`` (content of ``T.rollback.requested``)."""

    AVRO_SCHEMA: ClassVar[str] = "HoodieRollbackPlan"
    AVRO_NAMES: ClassVar[dict[str, str]] = {"rollback_requests": "RollbackRequests"}

    instant_to_rollback: InstantInfo | None = None
    rollback_requests: list[RollbackRequest] | None = None
    version: int | None = 1


@dataclass
class RollbackPartitionMetadata(AvroRecord):
    """Per-partition result of a rollback.

    Attributes:
        success_delete_files: files deleted.
        rollback_log_files: log files that received a ROLLBACK command block -> size.
        log_files_from_failed_commit: log files the failed instant had written -> size.
    """

    partition_path: str = ""
    success_delete_files: list[str] = field(default_factory=list)
    failed_delete_files: list[str] = field(default_factory=list)
    rollback_log_files: dict[str, int] | None = None
    log_files_from_failed_commit: dict[str, int] | None = None


@dataclass
class RollbackMetadata(AvroRecord):
    """``HoodieRollbackMetadata`` (content of a completed rollback)."""

    AVRO_SCHEMA: ClassVar[str] = "HoodieRollbackMetadata"

    start_rollback_time: str = ""
    time_taken_in_millis: int = 0
    total_files_deleted: int = 0
    commits_rollback: list[str] = field(default_factory=list)
    partition_metadata: dict[str, RollbackPartitionMetadata] = field(default_factory=dict)
    version: int | None = 1
    instants_rollback: list[InstantInfo] = field(default_factory=list)

    @property
    def rolled_back_instants(self) -> list[str]:
        """Instant times rolled back (``commitsRollback`` and ``instantsRollback``), unique."""
        out = list(dict.fromkeys(self.commits_rollback))
        for i in self.instants_rollback:
            if i.commit_time and i.commit_time not in out:
                out.append(i.commit_time)
        return out


@dataclass
class RestorePlan(AvroRecord):
    """``HoodieRestorePlan`` (content of ``T.restore.requested``): what a restore rolls back."""

    AVRO_SCHEMA: ClassVar[str] = "HoodieRestorePlan"

    instants_to_rollback: list[InstantInfo] = field(default_factory=list)
    version: int | None = 2
    savepoint_to_restore_timestamp: str | None = None


@dataclass
class RestoreMetadata(AvroRecord):
    """``HoodieRestoreMetadata`` (content of a completed restore)."""

    AVRO_SCHEMA: ClassVar[str] = "HoodieRestoreMetadata"

    start_restore_time: str = ""
    time_taken_in_millis: int = 0
    instants_to_rollback: list[str] = field(default_factory=list)
    hoodie_restore_metadata: dict[str, list[RollbackMetadata | None]] = field(default_factory=dict)
    version: int | None = 1
    restore_instant_info: list[InstantInfo] = field(default_factory=list)
    extra_metadata: dict[str, str] | None = None


@dataclass
class CompactionOperation(AvroRecord):
    """``HoodieCompactionOperation``: one file slice to compact.

    In plan version 2 (Hudi >= 0.x default) ``data_file_path`` and ``delta_file_paths`` are file
    *names* inside ``partition_path``; version 1 plans hold full paths.
    """

    base_instant_time: str | None = None
    delta_file_paths: list[str] | None = None
    data_file_path: str | None = None
    file_id: str | None = None
    partition_path: str | None = None
    metrics: dict[str, float] | None = None
    bootstrap_file_path: str | None = None

    def _rel(self, name: str) -> str:
        return file_path(self.partition_path or "", file_name_of(name))

    @property
    def base_file_rel_path(self) -> str | None:
        """The base file, relative to the table base path (None for a log-only slice)."""
        return self._rel(self.data_file_path) if self.data_file_path else None

    @property
    def log_file_rel_paths(self) -> list[str]:
        """The log files, relative to the table base path."""
        return [self._rel(p) for p in self.delta_file_paths or []]


@dataclass
class CompactionStrategy(AvroRecord):
    """``HoodieCompactionStrategy``."""

    compactor_class_name: str | None = None
    strategy_params: dict[str, str] | None = None
    version: int | None = 1


@dataclass
class CompactionPlan(AvroRecord):
    """``HoodieCompactionPlan`` (content of ``T.compaction.requested`` / ``.logcompaction``)."""

    AVRO_SCHEMA: ClassVar[str] = "HoodieCompactionPlan"

    operations: list[CompactionOperation] | None = None
    extra_metadata: dict[str, str] | None = None
    version: int | None = 2
    strategy: CompactionStrategy | None = None
    preserve_hoodie_metadata: bool | None = False
    missing_schedule_partitions: list[str] | None = None


@dataclass
class SliceInfo(AvroRecord):
    """``HoodieSliceInfo``: one file slice of a clustering group."""

    data_file_path: str | None = None
    delta_file_paths: list[str] | None = None
    file_id: str | None = None
    partition_path: str | None = None
    bootstrap_file_path: str | None = None
    version: int | None = 1


@dataclass
class ClusteringGroup(AvroRecord):
    """``HoodieClusteringGroup``."""

    slices: list[SliceInfo] | None = None
    metrics: dict[str, float] | None = None
    num_output_file_groups: int | None = 1
    extra_metadata: dict[str, str] | None = None
    version: int | None = 1


@dataclass
class ClusteringStrategy(AvroRecord):
    """``HoodieClusteringStrategy``."""

    strategy_class_name: str | None = None
    strategy_params: dict[str, str] | None = None
    version: int | None = 1


@dataclass
class ClusteringPlan(AvroRecord):
    """``HoodieClusteringPlan``."""

    input_groups: list[ClusteringGroup] | None = None
    strategy: ClusteringStrategy | None = None
    extra_metadata: dict[str, str] | None = None
    version: int | None = 1
    preserve_hoodie_metadata: bool | None = None
    missing_schedule_partitions: list[str] | None = None


@dataclass
class RequestedReplaceMetadata(AvroRecord):
    """``HoodieRequestedReplaceMetadata`` (``T.replacecommit.requested``/``.clustering``).

    For insert-overwrite all fields are null; clustering carries the plan.
    """

    AVRO_SCHEMA: ClassVar[str] = "HoodieRequestedReplaceMetadata"

    operation_type: str | None = None
    clustering_plan: ClusteringPlan | None = None
    extra_metadata: dict[str, str] | None = None
    version: int | None = 1


@dataclass
class ActionInstant(AvroRecord):
    """``HoodieActionInstant``."""

    timestamp: str = ""
    action: str = ""
    state: str = ""


@dataclass
class CleanFileInfo(AvroRecord):
    """``HoodieCleanFileInfo``."""

    file_path: str | None = None
    is_bootstrap_base_file: bool | None = None


@dataclass
class CleanerPlan(AvroRecord):
    """``HoodieCleanerPlan`` (content of ``T.clean.requested`` and ``T.clean.inflight``)."""

    AVRO_SCHEMA: ClassVar[str] = "HoodieCleanerPlan"

    earliest_instant_to_retain: ActionInstant | None = None
    last_completed_commit_timestamp: str = ""
    policy: str = ""
    files_to_be_deleted_per_partition: dict[str, list[str]] | None = None
    version: int | None = 2
    file_paths_to_be_deleted_per_partition: dict[str, list[CleanFileInfo]] | None = None
    partitions_to_be_deleted: list[str] | None = None
    extra_metadata: dict[str, str] | None = None


@dataclass
class CleanPartitionMetadata(AvroRecord):
    """``HoodieCleanPartitionMetadata``."""

    partition_path: str = ""
    policy: str = ""
    delete_path_patterns: list[str] = field(default_factory=list)
    success_delete_files: list[str] = field(default_factory=list)
    failed_delete_files: list[str] = field(default_factory=list)
    is_partition_deleted: bool | None = None


@dataclass
class CleanMetadata(AvroRecord):
    """``HoodieCleanMetadata`` (content of a completed clean)."""

    AVRO_SCHEMA: ClassVar[str] = "HoodieCleanMetadata"

    start_clean_time: str = ""
    time_taken_in_millis: int = 0
    total_files_deleted: int = 0
    earliest_commit_to_retain: str = ""
    last_completed_commit_timestamp: str = ""
    partition_metadata: dict[str, CleanPartitionMetadata] = field(default_factory=dict)
    version: int | None = 2
    bootstrap_partition_metadata: dict[str, CleanPartitionMetadata] | None = None
    extra_metadata: dict[str, str] | None = None


@dataclass
class SavepointPartitionMetadata(AvroRecord):
    """``HoodieSavepointPartitionMetadata``."""

    partition_path: str = ""
    savepoint_data_file: list[str] = field(default_factory=list)


@dataclass
class SavepointMetadata(AvroRecord):
    """``HoodieSavepointMetadata`` (content of a completed savepoint)."""

    AVRO_SCHEMA: ClassVar[str] = "HoodieSavepointMetadata"

    savepointed_by: str = ""
    savepointed_at: int = 0
    comments: str = ""
    partition_metadata: dict[str, SavepointPartitionMetadata] = field(default_factory=dict)
    version: int | None = 1


@dataclass
class IndexPartitionInfo(AvroRecord):
    """``HoodieIndexPartitionInfo``."""

    version: int | None = 1
    metadata_partition_path: str | None = None
    index_upto_instant: str | None = None
    extra_metadata: dict[str, str] | None = None


@dataclass
class IndexPlan(AvroRecord):
    """``HoodieIndexPlan`` (content of ``T.indexing.requested``)."""

    AVRO_SCHEMA: ClassVar[str] = "HoodieIndexPlan"

    version: int | None = 1
    index_partition_infos: list[IndexPartitionInfo] | None = None


@dataclass
class IndexCommitMetadata(AvroRecord):
    """``HoodieIndexCommitMetadata`` (content of a completed indexing)."""

    AVRO_SCHEMA: ClassVar[str] = "HoodieIndexCommitMetadata"

    version: int | None = 1
    operation_type: str | None = None
    index_partition_infos: list[IndexPartitionInfo] | None = None
