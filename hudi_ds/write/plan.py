"""The plan of one write: everything its tasks need, decided once on the driver.

A :class:`WritePlan` is built when the instant starts (:func:`build_plan`), from the opened
table's state -- the timeline listed once -- and pickled to every task; a client that did not
start the instant (a streaming commit in another process) rebuilds it from the instant's
inflight metadata (:func:`rebuild_plan`). Tasks find the file groups they write through
:class:`BucketFiles`, from one listing of each partition they write.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field

import pyarrow as pa

from hudi_ds.errors import CorruptFileError, HudiError, WriteError
from hudi_ds.index.bucket import NUM_BUCKETS_KEY, bucket_id_from_file_id
from hudi_ds.index.pending_resize import PendingResize, pending_resizes
from hudi_ds.layout.file_group import FileSlice
from hudi_ds.layout.naming import bucket_id_of, file_name_of, parse_log_file_name
from hudi_ds.schema.avro import avro_schema_json, avro_to_arrow_schema, table_avro_schema
from hudi_ds.schema.meta import META_FIELDS, with_meta_fields
from hudi_ds.storage import Storage
from hudi_ds.table.fs_view import FileSystemView
from hudi_ds.table_config import TableConfig, TableType
from hudi_ds.timeline.instant import CLUSTERING, DELTA_COMMIT, REPLACE_COMMIT
from hudi_ds.timeline.timeline import Timeline
from hudi_ds.timeline.view import TableState, Visibility
from hudi_ds.write.assigner import average_record_size
from hudi_ds.write.handles import HandleContext
from hudi_ds.write.markers import MarkerBatch
from hudi_ds.write.metadata_sync import written_stats_columns
from hudi_ds.write.operation import WriteOperation, operation_of_type
from hudi_ds.write.options import ResolvedOptions

log = logging.getLogger(__name__)

#: the digits of a bucket id at the start of a bucket-index file id
_BUCKET_DIGITS = 8
#: inflight extra metadata of a partial update write: its data columns (comma-separated)
PARTIAL_COLUMNS_KEY = "_hudi_ds_partial_update_columns"


@dataclass(frozen=True)
class WritePlan:
    """Everything tasks need to write instant ``instant`` (small and picklable).

    Attributes:
        instant, action: the instant being written.
        operation: what the write does (carried from start to commit).
        options: the write's options resolved against the table.
        table_config: the table's ``hoodie.properties`` (tasks do not re-read it).
        schema: full record schema, meta fields first; ``avro_schema`` the same as Avro JSON;
            ``data_avro_schema`` the writer schema without meta fields (commit metadata).
        visibility: the completed instants the write saw when it started.
        pending_compaction: ``(partition, file id)`` -> the pending compaction planned on it.
        partial_columns: the data columns of a partial update write (None: whole records).
        avg_record_size: bytes per record assumed when sizing files (non-bucket indexes:
            :func:`hudi_ds.write.assigner.average_record_size`, computed once here).
        pending_clustering: ``(partition, file id)`` of the file groups a pending clustering
            plan rewrites (non-bucket indexes: they take no inserts, as in Java).
        logged_inserts: names of the log files the visible delta commits wrote inserts to
            (MERGE_ON_READ under a lookup index: their keys are looked up in the logs too,
            :func:`hudi_ds.index.lookup.reads_logs`).
        stats_columns: the columns the table's column stats index, when it keeps them: the
            handles compute the ranges of the files they write
            (:func:`hudi_ds.write.metadata_sync.written_stats_columns`).
        pending_resizes: consistent hashing: partition -> its pending resize, whose file
            groups' records are written to its children too
            (:mod:`hudi_ds.index.pending_resize`).
    """

    instant: str
    action: str
    operation: WriteOperation
    options: ResolvedOptions
    table_config: TableConfig
    schema: pa.Schema
    avro_schema: str
    data_avro_schema: str
    visibility: Visibility
    pending_compaction: Mapping[tuple[str, str], str] = field(default_factory=dict)
    partial_columns: tuple[str, ...] | None = None
    avg_record_size: int = 1024
    pending_clustering: frozenset[tuple[str, str]] = frozenset()
    logged_inserts: frozenset[str] = frozenset()
    stats_columns: tuple[str, ...] | None = None
    pending_resizes: Mapping[str, PendingResize] = field(default_factory=dict)

    @property
    def table_type(self) -> TableType:
        """The table's type."""
        return self.options.table_type

    def base_instant_of(self, s: FileSlice) -> str:
        """The base instant a write to slice ``s`` uses: a pending compaction's when one is
        planned on its file group (Java's file-system view opens that slice), else the
        slice's own."""
        return self.pending_compaction.get((s.partition_path, s.file_id), s.base_instant_time)

    def handle_context(self, storage: Storage, token: str) -> HandleContext:
        """What the handles of one task attempt (write token ``token``) share."""
        return HandleContext(
            storage,
            self.instant,
            token,
            self.schema,
            self.avro_schema,
            self.options,
            self.partial_columns,
            stats_columns=self.stats_columns,
            markers=MarkerBatch(storage, self.instant),
        )


def build_plan(
    instant: str,
    action: str,
    operation: WriteOperation,
    options: ResolvedOptions,
    state: TableState,
    schema: pa.Schema,
    partial_columns: tuple[str, ...] | None,
) -> WritePlan:
    """The plan of ``instant`` from the table's ``state`` (its timeline as last listed).

    Args:
        schema: the full record schema (meta fields first).
    """
    timeline = state.timeline
    vis = state.visibility()
    pending: dict[tuple[str, str], str] = {}
    for c in timeline.pending_compactions():
        compaction = timeline.read_compaction_plan(c)
        for op in compaction.operations or []:
            pending[(op.partition_path or "", op.file_id or "")] = c.requested_time
    data = pa.schema([f for f in schema if f.name not in META_FIELDS])
    sizing = options.sizing
    avg = sizing.record_size_estimate
    clustering: frozenset[tuple[str, str]] = frozenset()
    logged: frozenset[str] = frozenset()
    if not options.index.routes_by_hash:
        avg = average_record_size(
            timeline,
            sizing.record_size_estimate,
            sizing.record_size_threshold,
            sizing.small_file_limit,
        )
        clustering = _pending_clustering(timeline)
        if state.config.table_type is TableType.MERGE_ON_READ and operation.merges_existing:
            logged = _logged_inserts(timeline, vis)
    data_avro_schema = avro_schema_json(table_avro_schema(data, options.table_name))
    consistent = options.index.bucket is not None and options.index.bucket.consistent
    return WritePlan(
        instant=instant,
        action=action,
        operation=operation,
        schema=schema,
        avro_schema=avro_schema_json(table_avro_schema(schema, options.table_name)),
        data_avro_schema=data_avro_schema,
        options=options,
        table_config=state.config,
        visibility=vis,
        pending_compaction=pending,
        partial_columns=partial_columns,
        avg_record_size=avg,
        pending_clustering=clustering,
        logged_inserts=logged,
        stats_columns=written_stats_columns(state, data_avro_schema),
        pending_resizes=pending_resizes(timeline) if consistent else {},
    )


def _logged_inserts(timeline: Timeline, vis: Visibility) -> frozenset[str]:
    """Names of the log files that the delta commits ``vis`` sees wrote inserts to.

    An index that indexes log files puts new keys in logs, also of file groups that have a
    base file: Flink's writer packs inserts into the logs of small file groups
    (``BucketAssigner.addInsert``), the bucket indexes append every record of a bucket. Java's
    ``HoodieAppendHandle`` counts a record without a current location (untagged: an insert)
    in the write stat's ``numInserts`` (Flink's handle, a record tagged as an insert), so the
    stats name the log files whose keys a base file may not hold. SIMPLE and BLOOM writers
    put inserts in base files only: their log stats count none, and nothing more is read.
    """
    out: set[str] = set()
    for inst in timeline.commits():
        if inst.action != DELTA_COMMIT or inst.requested_time not in vis.instants:
            continue
        for st in timeline.read_commit_metadata(inst).write_stats():
            name = file_name_of(st.path or "")
            if st.num_inserts and parse_log_file_name(name) is not None:
                out.add(name)
    return frozenset(out)


def _pending_clustering(timeline: Timeline) -> frozenset[tuple[str, str]]:
    """The file groups the pending clusterings of ``timeline`` rewrite (Java's small-file
    listing leaves out ``getFileGroupsInPendingClustering``)."""
    out: set[tuple[str, str]] = set()
    for inst in timeline.filter(
        lambda i: not i.is_completed and i.action in (REPLACE_COMMIT, CLUSTERING)
    ):
        try:
            plan = timeline.read_requested_replace(inst).clustering_plan
        except HudiError as e:
            # its file groups may then take inserts: said, not silent
            log.warning("cannot read the plan of pending %s: %s", inst.requested_time, e)
            continue
        for group in (plan.input_groups or []) if plan is not None else []:
            for sl in group.slices or []:
                out.add((sl.partition_path or "", sl.file_id or ""))
    return frozenset(out)


def rebuild_plan(instant: str, options: ResolvedOptions, state: TableState) -> WritePlan:
    """The plan of the pending write ``instant``, from its inflight metadata (the writer schema,
    the operation and the partial update columns recorded when it started).

    Raises:
        WriteError: ``instant`` is not a pending write, or has no writer schema.
    """
    timeline = state.timeline
    inst = timeline.get(instant)
    if inst is None or inst.is_completed:
        raise WriteError(f"instant {instant} is not a pending write of this table")
    md = timeline.read_commit_metadata(inst)
    schema_json = md.extra_metadata.get("schema") if md is not None else None
    if not schema_json:
        raise WriteError(f"instant {instant} has no writer schema in its inflight metadata")
    operation = operation_of_type(md.operation_type) or options.operation
    full = with_meta_fields(avro_to_arrow_schema(schema_json))
    partial = md.extra_metadata.get(PARTIAL_COLUMNS_KEY)
    columns = tuple(c for c in partial.split(",") if c) if partial else None
    return build_plan(instant, inst.action, operation, options, state, full, columns)


class BucketFiles:
    """The file groups a plan's task writes to: per partition, the latest visible slices (by
    file id, and by bucket for the bucket index) and the log versions taken, from one listing
    of the partition.

    With the simple bucket index (one bucket count for the table), only the file groups of
    the buckets the task writes are grouped (:meth:`bucket_slice`): a write of a few rows into
    each of many partitions would otherwise parse every file name of every partition it
    touches."""

    def __init__(
        self, storage: Storage, plan: WritePlan, view: FileSystemView | None = None
    ) -> None:
        self.plan = plan
        # ``view``: the driver's listing, made after the timeline the plan sees was loaded
        # (WriteClient hands it over only then), instead of listing the partitions again
        self._view = view if view is not None else FileSystemView(storage, plan.table_config)
        self._slices: dict[str, dict[str, FileSlice]] = {}
        self._buckets: dict[str, dict[int, FileSlice]] = {}
        self._log_versions: dict[tuple[str, str], dict[tuple[str, str], int]] = {}
        self._partitions: list[str] | None = None
        bucket = plan.options.index.bucket
        #: the table's one bucket count (None: not the simple bucket index without rules)
        self._num_buckets = (
            bucket.num_buckets
            if bucket is not None and not bucket.consistent and bucket.rules is None
            else None
        )
        self._bucket_slices: dict[tuple[str, int], FileSlice | None] = {}
        self._counted: set[str] = set()

    def by_file_id(self, partition: str) -> dict[str, FileSlice]:
        """File id -> the latest visible file slice of each live file group of ``partition``."""
        m = self._slices.get(partition)
        if m is None:
            m = {
                s.file_id: s for s in self._view.latest_file_slices(partition, self.plan.visibility)
            }
            self._slices[partition] = m
        return m

    def partitions(self) -> list[str]:
        """Every partition of the table (listed once)."""
        if self._partitions is None:
            self._partitions = self._view.partitions()
        return self._partitions

    def slices(self, partition: str) -> dict[int, FileSlice]:
        """Bucket id -> the latest visible file slice of its file group in ``partition``.

        The write's check of the bucket count before it started looked at a sample of the
        partitions (:func:`hudi_ds.write.bucket_layout.check_bucket_layout`); each partition
        the write routes rows to is checked here, before any of its files is written.

        Raises:
            WriteError: two file groups of the partition hold the same bucket.
            CorruptFileError: a file group's bucket is not below the partition's bucket count
                (the table's files were written with more buckets).
        """
        m = self._buckets.get(partition)
        if m is None:
            m = {}
            for s in self.by_file_id(partition).values():
                b = bucket_id_from_file_id(s.file_id)
                if b in m:
                    raise _two_groups(partition, b, m[b], s)
                m[b] = s
            if m:
                n = int(self.plan.options.index.layout.buckets_in([partition])[0])
                top = max(m)
                if top >= n:
                    raise CorruptFileError(
                        f"{NUM_BUCKETS_KEY}={n} contradicts file group {m[top].file_id} in "
                        f"partition {partition!r} (bucket {top}); the table's files were "
                        "written with more buckets"
                    )
            self._buckets[partition] = m
        return m

    def bucket_slice(self, partition: str, bucket: int) -> FileSlice | None:
        """The latest visible file slice of ``bucket``'s file group in ``partition`` (None: the
        bucket has none), the partition's bucket ids checked first (:meth:`slices`).

        Raises:
            WriteError: two file groups of the partition hold the bucket.
            CorruptFileError: as :meth:`slices`.
        """
        n = self._num_buckets
        if n is None:
            return self.slices(partition).get(bucket)
        if partition not in self._counted:
            high = sorted(
                int(p)
                for p in self._view.file_id_prefixes(partition, _BUCKET_DIGITS)
                if len(p) == _BUCKET_DIGITS and p.isascii() and p.isdigit() and int(p) >= n
            )
            for b in high:  # (files of a bucket past the count: refused if one is live)
                s = self._bucket_group_slice(partition, b)
                if s is not None:
                    raise CorruptFileError(
                        f"{NUM_BUCKETS_KEY}={n} contradicts file group {s.file_id} in "
                        f"partition {partition!r} (bucket {b}); the table's files were "
                        "written with more buckets"
                    )
            self._counted.add(partition)
        return self._bucket_group_slice(partition, bucket)

    def _bucket_group_slice(self, partition: str, bucket: int) -> FileSlice | None:
        key = (partition, bucket)
        if key not in self._bucket_slices:
            groups = self._view.file_groups_with_prefix(partition, f"{bucket:0{_BUCKET_DIGITS}d}")
            live = self._view.latest_file_slices(partition, self.plan.visibility, groups=groups)
            if len(live) > 1:
                raise _two_groups(partition, bucket, live[0], live[1])
            self._bucket_slices[key] = live[0] if live else None
        return self._bucket_slices[key]

    def slice_of(self, partition: str, file_id: str) -> FileSlice | None:
        """The latest visible file slice of file group ``file_id`` of ``partition``."""
        if self._num_buckets is not None and (bucket := bucket_id_of(file_id)) is not None:
            s = self.bucket_slice(partition, bucket)
            return s if s is not None and s.file_id == file_id else None
        return self.by_file_id(partition).get(file_id)

    def partition_metadata_listed(self, partition: str) -> bool:
        """Whether this task's listing of ``partition`` showed its partition metadata file."""
        return self._view.has_partition_metadata(partition)

    def next_log_version(self, partition: str, file_id: str, base_instant: str) -> int:
        """The version of a new log file of ``file_id``'s slice at ``base_instant``."""
        # with the simple bucket index, from the file groups of the file id's bucket only
        bucket = bucket_id_of(file_id) if self._num_buckets is not None else None
        prefix = "" if bucket is None else f"{bucket:0{_BUCKET_DIGITS}d}"
        versions = self._log_versions.get((partition, prefix))
        if versions is None:
            versions = {}
            groups = (
                self._view.file_groups_with_prefix(partition, prefix)
                if prefix
                else self._view.file_groups(partition)
            )
            for g in groups:
                for lf in g.log_files:
                    k = (g.file_id, lf.instant_time)
                    versions[k] = max(versions.get(k, 0), lf.name.version)
            self._log_versions[(partition, prefix)] = versions
        return versions.get((file_id, base_instant), 0) + 1


def _two_groups(partition: str, bucket: int, a: FileSlice, b: FileSlice) -> WriteError:
    return WriteError(
        f"partition '{partition}' has two file groups for bucket {bucket}: "
        f"{a.file_id} and {b.file_id}"
    )
