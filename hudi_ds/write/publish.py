"""What a write publishes: the content of its instant files and the files its commit keeps.

The write client (:mod:`hudi_ds.write.client`) runs the protocol; this module says what goes
into each step's files:

* :func:`requested_content` and :func:`inflight_metadata`: the requested and inflight instant
  files of a write (before its workload profile is known);
* :func:`keep_committed_files`: before the commit takes the table lock, the staged rows of a
  COW write merged and the files of failed task attempts deleted;
* :func:`publish`: under the lock, the commit metadata built from the write statuses (Java
  ``CommitUtils.buildMetadata``), handed to the metadata table's writer with what the write
  already knows, and the completed instant file written -- the commit point.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from hudi_ds.faults import crash_point
from hudi_ds.storage import Storage
from hudi_ds.table.fs_view import FileSystemView
from hudi_ds.timeline.instant import REPLACE_COMMIT, Instant, State
from hudi_ds.timeline.metadata import CommitMetadata
from hudi_ds.timeline.plans import RequestedReplaceMetadata
from hudi_ds.timeline.view import TableState
from hudi_ds.write.cow import merge_staged
from hudi_ds.write.markers import marked_files
from hudi_ds.write.metadata_sync import offer_written
from hudi_ds.write.plan import PARTIAL_COLUMNS_KEY, BucketFiles, WritePlan
from hudi_ds.write.task_writer import write_partition_metadata
from hudi_ds.write.write_status import WriteStatus


def requested_content(action: str, layout: int) -> bytes:
    """The content of a write's requested instant file: empty, except a replacecommit on
    timeline layout 2, where Hudi 1.x writes an empty ``HoodieRequestedReplaceMetadata``
    (every field null; a clustering's carries its plan) that its readers deserialize."""
    if action == REPLACE_COMMIT and layout >= 2:
        return RequestedReplaceMetadata(version=None).to_bytes()
    return b""


def inflight_metadata(plan: WritePlan, extra_metadata: Mapping[str, str] | None) -> CommitMetadata:
    """The inflight metadata of a write without its workload profile: the writer schema (and
    hudi_ds's partial update columns) and ``extra_metadata``. A client that did not start the
    instant (a streaming commit in another process) rebuilds the plan from it
    (:func:`~hudi_ds.write.plan.rebuild_plan`)."""
    md = CommitMetadata(
        operation_type=plan.operation.operation_type,
        extra_metadata={"schema": plan.data_avro_schema},
    )
    if plan.partial_columns is not None:
        md.extra_metadata[PARTIAL_COLUMNS_KEY] = ",".join(plan.partial_columns)
    md.extra_metadata.update(extra_metadata or {})
    return md


def keep_committed_files(
    storage: Storage,
    plan: WritePlan,
    statuses: list[WriteStatus],
    markers: list[str] | None = None,
) -> list[WriteStatus]:
    """Before the lock: merge the staged rows of a COW write (one merge per file group) and
    delete the files of failed or superseded task attempts (marked, but named by no
    status). Returns the statuses of the files the commit publishes; the marker objects
    listed are added to ``markers``."""
    crash_point("after_files")
    # the tasks wrote the partition metadata of the files they closed
    # (TaskWriter.close); the commit writes it for the files its merges of staged rows write
    staged = {s.partition_path for s in statuses if s.kind == "stage"}
    if staged:
        statuses = merge_staged(storage, plan, statuses)
    keep = {s.path for s in statuses}
    for path in marked_files(storage, plan.instant, markers):
        if path not in keep:
            storage.delete(path)  # a failed or superseded task attempt's file
    for p in sorted(staged & {s.partition_path for s in statuses}):
        write_partition_metadata(storage, p, plan.instant)
    return statuses


def publish(
    state: TableState,
    plan: WritePlan,
    statuses: list[WriteStatus],
    partitions_to_delete: Sequence[str] | None,
    extra_metadata: Mapping[str, str] | None,
    listed: BucketFiles | None = None,
) -> Instant:
    """Write the completed instant file of ``plan``'s instant (under the table lock, after the
    commit's checks), its commit metadata built from ``statuses``; the metadata table's writer
    mirrors it first (:attr:`TableState.before_complete`), given what the write knows: the
    column ranges its handles computed and, from ``listed`` (the task's listing of the
    partitions), the slices they wrote into. Returns the completed instant."""
    md = CommitMetadata(operation_type=plan.operation.operation_type)
    for s in statuses:
        md.partition_to_write_stats.setdefault(s.partition_path, []).append(s.stat)
    md.extra_metadata["schema"] = plan.data_avro_schema
    md.extra_metadata.update(extra_metadata or {})
    if plan.action == REPLACE_COMMIT:
        md.is_replace = True
        md.partition_to_replace_file_ids = plan.operation.replaced_file_ids(
            FileSystemView(state.storage, state.config),
            plan.visibility,
            [(s.partition_path, s.file_id) for s in statuses],
            partitions_to_delete or [],
        )
    content = md.to_bytes(state.layout)
    offer_written(
        state,
        plan.instant,
        plan.stats_columns,
        statuses,
        (content, md),
        (lambda p: listed.by_file_id(p).values()) if listed is not None else None,
        plan.visibility,
    )
    # the timeline the commit's checks listed (client._check_locked), after the inflight file
    return state.timeline_writer().complete(
        Instant(plan.instant, plan.action, State.INFLIGHT), content, listed=state.timeline
    )
