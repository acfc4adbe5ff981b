"""The write client: the coordinator (driver side) of a write.

The protocol, shared by the embedded API and the Spark connector::

    client = WriteClient(path, options, post_commit=...)  # validates every option (driver),
                                                          # opens the table once (client.state)
    instant = client.start(schema=...)            # creates/opens the table, rolls back failed
                                                  # writes, writes T.<action>.requested/.inflight
    task = client.task_writer(instant, p, s, a)   # in each task: per-file-group handles
    task.write(batch) ...; statuses = task.close()

or, where one process tags the whole input before writing any file (the embedded API), as
Java's commit action executors do (``BaseSparkCommitActionExecutor.execute``: tag, build the
workload profile, save it in the inflight file, then write)::

    instant = client.start(schema=..., inflight=False)  # T.<action>.requested only
    task = client.task_writer(instant)
    client.write_profiled(instant, task, batches)       # tag all, T.<action>.inflight holding
    statuses = task.close()                             # the workload profile, then route
    client.commit(instant, all_statuses)          # driver: drop debris, publish T atomically,
                                                  # then run the post-commit services
    client.abort(instant)                         # driver: roll T back

The completed instant file is the commit point: it is written last, atomically (temp + rename).
Until then readers see nothing of T; after a crash the next writer rolls T back.

The roles: :mod:`~hudi_ds.write.options` resolves the options against the table,
:mod:`~hudi_ds.write.operation` says what each operation writes and commits,
:mod:`~hudi_ds.write.plan` holds what tasks need, :mod:`~hudi_ds.write.task_writer` routes rows
to handles, :mod:`~hudi_ds.write.conflict` checks the timeline at commit,
:mod:`~hudi_ds.write.publish` makes the instant files' content and the commit's files.

The table is opened once per client (:class:`~hudi_ds.timeline.view.TableState`); instants
are created through its timeline writer, which keeps it current without listing; the timeline
is listed again only where Hudi reloads it: under the table lock, and at commit.
"""

from __future__ import annotations

import functools
import json
import logging
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, NoReturn

import pyarrow as pa

from hudi_ds.concurrency.lock import TableLock, held
from hudi_ds.concurrency.providers import table_lock
from hudi_ds.concurrency.transaction import Transaction
from hudi_ds.config import ConcurrencyConfig, WriteConfig, validated
from hudi_ds.errors import (
    CommitConflictError,
    ConcurrentWriterError,
    HudiError,
    InstantNotFoundError,
    LockLostError,
    SchemaError,
    TableExistsError,
    TimelineError,
    WriteError,
)
from hudi_ds.faults import crash_point
from hudi_ds.index.lookup import Lookup
from hudi_ds.schema.meta import (
    PARTITION_PATH_METADATA_FIELD,
    RECORD_KEY_METADATA_FIELD,
    with_meta_fields,
)
from hudi_ds.schema.write import WriteSchema, write_schema
from hudi_ds.storage import ObjectStorage, Storage
from hudi_ds.table.fs_view import FileSystemView
from hudi_ds.table.table import ReadableTable
from hudi_ds.table.unsupported import Use, refuse_unsupported
from hudi_ds.table_config import TableConfig, TableType
from hudi_ds.table_create import (
    NewTable,
    check_path_is_free,
    create_table,
    folder_listing,
    remove_created,
)
from hudi_ds.timeline.instant import (
    MAX_INSTANT_AHEAD_MS,
    Instant,
    State,
    new_instant_time,
)
from hudi_ds.timeline.metadata import CommitMetadata
from hudi_ds.timeline.timeline import Timeline
from hudi_ds.timeline.view import TableState
from hudi_ds.timeline.writer import TimelineWriter
from hudi_ds.write.bucket_layout import check_bucket_layout
from hudi_ds.write.conflict import check_clusterings, resolve_conflicts, retarget_pending_logs
from hudi_ds.write.markers import delete_markers, forget_markers, marker_objects
from hudi_ds.write.metadata_sync import install_metadata_writer
from hudi_ds.write.operation import Rows, WriteOperation
from hudi_ds.write.options import (
    ResolvedOptions,
    check_partial_blocks,
    check_writable,
    resolve_options,
)
from hudi_ds.write.plan import BucketFiles, WritePlan, build_plan, rebuild_plan
from hudi_ds.write.publish import (
    inflight_metadata,
    keep_committed_files,
    publish,
    requested_content,
)
from hudi_ds.write.rollback_executor import (
    rollback_failed_writes,
    rollback_instant,
    rollback_of,
)
from hudi_ds.write.tagged_records import TaggedRecords
from hudi_ds.write.task_writer import TaskWriter
from hudi_ds.write.upgrade import pending_upgrade
from hudi_ds.write.workload import WorkloadProfile
from hudi_ds.write.write_status import WriteStatus
from hudi_ds.write.writer_guard import WriterGuard, rolled_back_by_other

log = logging.getLogger("hudi_ds.write")

STREAMING_CHECKPOINT_KEY = "_hudi_streaming_sink_checkpoint"

#: ``post_commit(client, completed_instant)``: what a writer runs after each of its commits
#: (:func:`hudi_ds.services.run_post_commit_services`: inline compaction, cleaning, archival).
PostCommit = Callable[["WriteClient", Instant], object]


class WriteClient:
    """Writes to the Hudi table at ``path`` (creating it on the first write).

    Args:
        path: table base path or URI.
        options: Hudi write options (``hoodie.*`` keys; see :class:`hudi_ds.config.WriteConfig`).
        post_commit: called after every commit with the client and the completed instant (the
            table services); None runs nothing.

    Attributes:
        state: the opened table (None until the table exists); current after each commit.
        resolved: the options resolved against the table.

    Raises:
        ConfigError: an unknown ``hoodie.*`` key, an invalid value, or options that contradict
            the existing table (the message names the key and the value).
    """

    def __init__(
        self,
        path: str | Storage,
        options: Mapping[str, Any] | None = None,
        *,
        post_commit: PostCommit | None = None,
    ) -> None:
        self.storage = path if isinstance(path, Storage) else Storage(str(path))
        self.options = validated(options)
        self.post_commit = post_commit
        self._plans: dict[str, WritePlan] = {}
        # the listing _check_files made and the timeline it was made after; then, per started
        # instant, that listing when the instant's plan sees the same timeline (task_writer)
        self._checked_view: tuple[Timeline, FileSystemView] | None = None
        self._listed_views: dict[str, FileSystemView] = {}
        # per instant, the partitions its exclusive task listed: the commit hands their slices
        # to the metadata table's writer (publish)
        self._task_files: dict[str, BucketFiles] = {}
        # instant -> its inflight metadata without the workload profile, while it is requested
        self._requested: dict[str, CommitMetadata] = {}
        # instant -> what the folder held before :meth:`start` created the table for it
        self._created_with: dict[str, set[str]] = {}
        self.multi_writer = self.options.get(ConcurrencyConfig.MODE) != "single_writer"
        # this client's writes as other writers see them: heartbeats, a single writer's claims
        self._guard = WriterGuard(self.storage, self.options, self.multi_writer)
        if self.multi_writer:
            self._lock()  # validate the provider now
        self._open()

    # -- the table ----------------------------------------------------------------------------
    def _open(self) -> None:
        """Open the table (``hoodie.properties`` read once) and resolve the options against it."""
        self.state: TableState | None
        try:
            self.state = TableState.open(self.storage)
        except FileNotFoundError:
            self.state = None
        if self.state is None:
            check_path_is_free(self.storage)
        # an older table resolves as upgraded; the first start writes the upgrade (upgrade.py)
        self._upgrade = pending_upgrade(self.state, self.options)
        cfg = self.table_config
        self.resolved: ResolvedOptions = resolve_options(
            self.options,
            self._upgrade.resolving(cfg) if self._upgrade and cfg else cfg,
            self.storage.base_uri,
            self.state,
        )
        if self.state is not None:
            check_writable(self.state.config, self.storage.base_uri)
            refuse_unsupported(self.state, Use.WRITE)  # CDC, bootstrap, schema on read
            install_metadata_writer(self.state, self.options)

    @property
    def table_config(self) -> TableConfig | None:
        """The table's ``hoodie.properties`` (None until the table exists)."""
        return self.state.config if self.state is not None else None

    @property
    def operation(self) -> WriteOperation:
        """The operation of the writes this client starts (chosen once, from the options)."""
        return self.resolved.operation

    def table_state(self) -> TableState:
        """The opened table, opened now if another client created it after this one started."""
        if self.state is None:
            self.state = TableState.open(self.storage)
            install_metadata_writer(self.state, self.options)
        return self.state

    # -- schema -------------------------------------------------------------------------------
    def validate_schema(self, schema: pa.Schema) -> WriteSchema:
        """Check an input schema and decide the write's schema: the table schema to write (meta
        fields first) and the partial-update columns (:func:`hudi_ds.schema.write.write_schema`).

        Raises:
            SchemaError: a key, partition or ordering column is missing or has an unusable
                type, or the input drops table columns (names the column).
            UnsupportedError: a record-writing operation on a table whose numeric timestamp
                partition field is recorded as a string (:meth:`TimestampSpec.check_table_field`).
        """
        r = self.resolved
        table_schema = self._table_schema()
        # a delete keys its rows in the input's own schema (Java: HoodieSparkSqlWriter)
        records = self.operation.rows is Rows.RECORDS
        if r.keys.timestamp is not None and table_schema is not None and records:
            for f in r.keys.timestamp_fields:
                if f in table_schema.names:
                    r.keys.timestamp.check_table_field(f, table_schema.field(f).type)
        if self.operation.prepped:
            missing = [
                c
                for c in (RECORD_KEY_METADATA_FIELD, PARTITION_PATH_METADATA_FIELD)
                if c not in schema.names
            ]
            if missing:
                raise SchemaError(
                    f"{self.operation.name}: the input lacks {missing}: pass the rows as read "
                    "from the table (hudi_ds.read keeps the meta columns); a table whose record "
                    "keys Hudi generated is deleted from by its rows' "
                    f"{RECORD_KEY_METADATA_FIELD} and {PARTITION_PATH_METADATA_FIELD}"
                )
        decided = write_schema(
            schema,
            table_schema,
            table_name=r.table_name,
            record_key_fields=r.keys.record_key_fields,
            partition_fields=r.keys.partition_fields,
            ordering_field=r.merge.ordering_field,
            operation=self.operation.name,
            required_columns=self.operation.required_columns(
                r.keys.record_key_fields, r.keys.partition_fields
            ),
            partial_updates=self.options.get(WriteConfig.PARTIAL_UPDATES),
            set_null_for_missing=self.options.get(WriteConfig.SET_NULL_FOR_MISSING),
            nulls_mean_unchanged=r.merge.nulls_mean_unchanged,
        )
        if decided.partial_columns is not None:
            cfg = self.table_config
            version = (
                cfg.table_version
                if cfg is not None
                else self.options.get(WriteConfig.WRITE_TABLE_VERSION)
            )
            check_partial_blocks(r, version)
        return decided

    def _table_schema(self) -> pa.Schema | None:
        """The table's schema with the meta fields (a table without meta fields reads without
        them; its files and so its writes still carry the columns)."""
        if self.state is None:
            return None
        schema = self.state.schema
        return with_meta_fields(schema) if len(schema) else schema

    # -- table creation -------------------------------------------------------------------------
    def _create_table(self, schema: pa.Schema) -> None:
        r = self.resolved
        version = self.options.get(WriteConfig.WRITE_TABLE_VERSION)
        new = NewTable(
            table_name=r.table_name,
            table_type=r.table_type,
            record_key_fields=tuple(r.keys.record_key_fields),
            partition_fields=tuple(r.keys.partition_fields),
            hive_style=r.keys.hive_style,
            url_encode=r.keys.url_encode,
            complex_key=r.keys.complex_key,
            ordering_field=r.merge.ordering_field,
            database_name=self.options.get(WriteConfig.DATABASE_NAME) or None,
            merge_properties=r.merge.table_properties(version),
            index_properties=r.index.table_properties(),
            index_files=r.index.table_files(),
            populate_meta_fields=r.populate_meta_fields,
            table_version=version,
            key_generator_type=r.keys.generator,
            partition_field_entries=r.keys.partition_field_entries(),
            keygen_properties=r.keys.timestamp.table_properties() if r.keys.timestamp else {},
            base_file_format=r.base_file_format,
        )
        self.state = TableState(self.storage, create_table(self.storage, new, schema))
        install_metadata_writer(self.state, self.options)

    def create_table_if_absent(self, schema: pa.Schema) -> bool:
        """Create the table for input ``schema`` unless it exists (no instant is started).

        A streaming micro-batch's tasks start their instant concurrently
        (``start(instant=...)``); the driver creates the table first so that they never race
        to create it.

        Returns:
            True if this call created the table.
        """
        if self.table_config is not None:
            if self._upgrade is not None:  # (the streaming driver's, before its tasks)
                self.validate_schema(schema)
                with held(self._lock()):
                    self._upgrade.apply(self.table_state(), self._guard.is_failed)
            return False
        full = self.validate_schema(schema).schema
        try:
            self._create_table(full)
        except TableExistsError:
            self._open()
            return False
        return True

    # -- instant lifecycle --------------------------------------------------------------------
    def start(
        self,
        schema: pa.Schema | None = None,
        *,
        instant: str | None = None,
        rollback_failed: bool = True,
        extra_metadata: Mapping[str, str] | None = None,
        inflight: bool = True,
        withdrawn: Callable[[], bool] | None = None,
    ) -> str:
        """Begin a write: create or open the table, roll back failed writes, start an instant.

        Args:
            schema: the input's Arrow schema (required unless the table exists and the
                operation is a delete).
            instant: join this instant time instead of allocating a new one: its requested
                and inflight files are created unless they exist. Several tasks of one
                streaming micro-batch do this concurrently, each computing the same plan;
                the time must be later than every instant on the timeline.
            rollback_failed: roll back pending writes first (Hudi's eager policy); False for
                tasks joining an instant (the streaming sink's commit rolls back instead).
            extra_metadata: extra entries of the inflight commit metadata.
            inflight: write the inflight file now, holding the writer schema (``extraMetadata``)
                and no workload profile: the tasks of a Spark write tag their own rows, so
                the driver cannot know the profile before files are written. False leaves the
                instant requested until :meth:`save_workload_profile` (or
                :meth:`write_profiled`) writes the inflight file with the profile.
            withdrawn: with ``instant``: True once whoever allocated the instant gave it up
                without a rollback that names it (the streaming driver aborted a micro-batch
                whose instant no task had created yet). Asked, like the check for a
                rollback of ``instant``, before creating its instant files and again after.

        Returns:
            The instant time.

        Raises:
            WriteError: ``instant`` is already completed, was rolled back or withdrawn.
            ValueError: ``instant`` is given with ``inflight=False`` (tasks joining an instant
                cannot know the whole write's profile).
        """
        if instant is not None and not inflight:
            raise ValueError("a task joining an instant cannot defer its inflight file")
        if schema is None:
            if self.state is None or not len(self.state.schema):
                raise SchemaError("the first write of a table needs the input schema")
            decided = WriteSchema(self._table_schema())
        else:
            decided = self.validate_schema(schema)
        full = decided.schema
        before: set[str] | None = None
        if self.state is not None and instant is None:
            # tasks joining an instant rely on the driver's check
            self._check_files(self.state)
        if self.state is None:
            before = folder_listing(self.storage)
            self._create_table(full)
        claimed = self._guard.claims()
        try:
            with held(self._lock()):
                if self._upgrade is not None:
                    self._upgrade.apply(self.table_state(), self._guard.is_failed)
                started = self._start_locked(
                    decided, instant, rollback_failed, extra_metadata, inflight, withdrawn
                )
        except BaseException:
            for t in self._guard.claims() - claimed:
                # an instant left pending without its writer: the next write rolls it back
                _quietly(f"ending the failed start of {t}", self._guard.stop, t)
            if before is not None:
                self._undo_create(before, None)
            raise
        if before is not None:
            self._created_with[started] = before
        return started

    def _check_files(self, state: TableState) -> None:
        """Check the files a write builds on: with the bucket index, the bucket count against
        the file groups (``hoodie.properties``' checksum does not cover it) and, on a COW table,
        the committed files of the latest slices."""
        r = self.resolved
        # the timeline is read before the listing: a commit landing in between is then
        # listed but not yet visible, never visible but unlisted ("missing")
        vis = state.visibility() if r.table_type is TableType.COPY_ON_WRITE else None
        timeline = state.timeline  # (loaded before the listing, if it was not yet)
        bucket = r.index.bucket
        if bucket is not None and not bucket.consistent:
            view = check_bucket_layout(state, bucket.num_buckets, list(bucket.hash_fields))
        elif bucket is not None or vis is not None:  # (a ring has no bucket count to check)
            view = FileSystemView(self.storage, state.config)
        if bucket is not None or vis is not None:
            # listed after this timeline was loaded: the instant's task may use the listing
            # if its plan sees the same timeline (see _start_locked)
            self._checked_view = (timeline, view)
        if vis is not None:
            # a COW write rewrites the latest base file of each group it touches: with a
            # committed file missing or short, it would merge into an older version and
            # make the loss permanent
            ReadableTable(state).verify_committed_files(view, vis, recheck_cleaned=True)

    def _start_locked(
        self,
        decided: WriteSchema,
        instant: str | None,
        rollback_failed: bool,
        extra_metadata: Mapping[str, str] | None,
        inflight: bool,
        withdrawn: Callable[[], bool] | None = None,
    ) -> str:
        state = self.table_state()
        if self.multi_writer:
            # under the table lock: what other writers and services did meanwhile is seen (a
            # compaction scheduled before T gets T's logs named after it), as Java's
            # TransactionManager.beginTransaction is followed by a reload of the active timeline
            state.reload_timeline()
        joined = instant is not None
        alone = not self.multi_writer and not joined  # a single writer's own instant
        policy = self._guard.failed_writes_policy()
        if rollback_failed and policy != "NEVER" and not alone:
            lazy = policy == "LAZY"
            rollback_failed_writes(state, is_failed=self._guard.is_dead if lazy else None)
        crash_point("start_opened")
        operation = self.operation
        action = operation.action(self.resolved.table_type)
        writer = state.timeline_writer()
        timeline = state.timeline
        created = False
        if instant is not None:
            req, created = self._join_requested(instant, action, timeline, writer, withdrawn)
        else:
            req = self._new_requested(state, action, writer)
            instant = req.requested_time
        if alone:
            crash_point("start_claimed")
            # Hudi's single writer rolls back every pending write now (EAGER policy); one of
            # another live writer is not failed: refuse instead (see WriterGuard.alone_at_start)
            self._guard.alone_at_start(state, req, rollback_failed and policy != "NEVER")
        plan = build_plan(
            instant,
            action,
            operation,
            self.resolved,
            state,
            decided.schema,
            decided.partial_columns,
        )
        checked, self._checked_view = self._checked_view, None
        if checked is not None and not joined and checked[0].same_listing(state.timeline):
            # the partitions listed by _check_files after the timeline the plan sees was
            # loaded: the task takes that listing instead of listing them again. Not after a
            # reload (multi-writer, a rollback): a commit landing between the listing and the
            # reload would be visible but unlisted (a bucket's file group missed)
            self._listed_views[instant] = checked[1]
        md = inflight_metadata(plan, extra_metadata)
        if not inflight:
            # requested until the whole input is tagged (save_workload_profile)
            self._requested[instant] = md
            return self._started(instant, plan, joined)
        current = timeline.get(instant) if joined else None
        try:
            if current is None or current.is_requested:
                writer.transition_to_inflight(req, md.to_bytes(state.layout))
        except InstantNotFoundError:
            raise  # rolled back meanwhile
        except TimelineError:
            if not joined:
                raise
            # another task of the instant made it inflight first (same content)
            if state.reload_timeline().is_completed(instant):
                raise WriteError(f"instant {instant} is already completed") from None
        refused = _refusal(state.reload_timeline(), instant, withdrawn) if created else None
        if refused is not None:
            # the instant was rolled back or withdrawn (a streaming micro-batch aborted by the
            # driver) while this task, which had not seen it, created its files again: take
            # them back. The abort records itself before looking for the instant, this task
            # created the files before looking again: one of the two sees the other
            writer.delete_instant_files(req)
            raise WriteError(refused)
        return self._started(instant, plan, joined)

    def _new_requested(self, state: TableState, action: str, writer: TimelineWriter) -> Instant:
        """A new instant of ``action``, requested under a time after every time on the
        timeline (a single writer's claimed first)."""
        last = state.timeline.latest_time()  # every requested and completion time on it
        for _ in range(100):
            instant = new_instant_time(after=last, max_ahead_ms=MAX_INSTANT_AHEAD_MS)
            req = Instant(instant, action, State.REQUESTED)
            # a single writer claims the time and beats before its instant exists, as Hudi's
            # startCommit starts the heartbeat before the requested file: a writer starting
            # meanwhile never finds the instant without them
            if not self.multi_writer and not self._guard.claim(instant):
                last = instant  # another writer chose this time
                continue
            if writer.create_requested(req, requested_content(action, state.layout)):
                return req
            if not self.multi_writer:
                self._guard.stop(instant)
            last = instant
        raise WriteError("could not allocate a unique instant time")  # pragma: no cover

    def _started(self, instant: str, plan: WritePlan, joined: bool) -> str:
        self._plans[instant] = plan
        self._guard.beat(instant, joined)
        crash_point("after_requested")
        return instant

    def save_workload_profile(self, instant: str, profile: WorkloadProfile) -> None:
        """Transition ``instant`` (started with ``inflight=False``) from requested to inflight,
        the inflight file holding ``profile`` (Java
        ``BaseCommitActionExecutor.saveWorkloadProfileMetadataToInflight``) besides the
        writer schema: a concurrent Apache Hudi writer's conflict resolution reads the file
        groups a pending write updates from it. Call it after tagging every record and before
        writing any file.

        Raises:
            WriteError: ``instant`` was not started by this client with ``inflight=False``,
                or its inflight file was saved already.
        """
        md = self._requested.pop(instant, None)
        if md is None:
            raise WriteError(
                f"instant {instant} is not a requested write of this client (start it with "
                "inflight=False; its workload profile is saved once)"
            )
        plan = self.plan(instant)
        profiled = profile.to_commit_metadata(plan.operation.operation_type, md.extra_metadata)
        req = Instant(instant, plan.action, State.REQUESTED)
        state = self.table_state()
        # (its requested file is this client's: start created it)
        state.timeline_writer().transition_to_inflight(
            req, profiled.to_bytes(state.layout), created=True
        )
        crash_point("after_inflight")

    def write_profiled(
        self, instant: str, task: TaskWriter, batches: Iterable[pa.RecordBatch | pa.Table]
    ) -> None:
        """Write ``batches`` with ``task`` in Java's order: prepare and tag every record (the
        index is asked once per key), save the workload profile the tagging built
        (:meth:`save_workload_profile`), then route the tagged rows to their handles.

        The tagged rows wait in memory up to a third of the task's budget
        (``write.task.max.size``) and are spilled to local disk beyond it
        (:class:`~hudi_ds.write.tagged_records.TaggedRecords`, as Java persists the tagged
        records), so any input size goes through bounded memory.
        """
        o = task.options
        with TaggedRecords(o.memory.task_bytes // 3, o.memory.spill_dir) as tagged:
            for batch in batches:
                tagged.add(task.tag(task.prepare(batch)))
            self.save_workload_profile(instant, task.workload)
            for t in tagged.drain():
                task.route(t)

    def _join_requested(
        self,
        instant: str,
        action: str,
        timeline: Timeline,
        writer: TimelineWriter,
        withdrawn: Callable[[], bool] | None = None,
    ) -> tuple[Instant, bool]:
        """The requested instant ``instant``, created unless another task did it first, and
        whether this call created it.

        Raises:
            WriteError: the instant is completed, of another action, or was rolled back or
                withdrawn (the driver aborted the micro-batch: a task starting late must not
                bring it back).
        """
        current = timeline.get(instant)
        if current is not None and current.is_completed:
            raise WriteError(f"instant {instant} is already completed")
        if current is not None and current.action != action:
            raise WriteError(f"instant {instant} is a {current.action}, not a {action}")
        req = Instant(instant, action, State.REQUESTED)
        if current is not None:
            return req, False
        refused = _refusal(timeline, instant, withdrawn)
        if refused is not None:
            raise WriteError(refused)
        # False: a concurrent task created it
        return req, writer.create_requested(req, requested_content(action, writer.layout_version))

    # -- concurrency --------------------------------------------------------------------------
    def _lock(self) -> TableLock | None:
        """The table lock of a multi-writer client (None for a single writer)."""
        return table_lock(self.storage, self.options)

    def rollback_failed_before(self, instant: str) -> None:
        """A streaming micro-batch's commit: roll back the pending writes older than
        ``instant`` (earlier attempts that crashed: Hudi's eager rollback of a single writer),
        unless a single writer's write is alive (:meth:`WriterGuard.rollback_failed_before`).

        Raises:
            ConcurrentWriterError: a single writer (a batch or embedded write) is alive.
        """
        self._guard.rollback_failed_before(self.table_state(), instant)

    # -- tasks --------------------------------------------------------------------------------
    def plan(self, instant: str) -> WritePlan:
        """The plan of a started instant (rebuilt from its inflight metadata if need be)."""
        plan = self._plans.get(instant)
        if plan is None:
            state = self.table_state()
            inst = state.timeline.get(instant)
            if inst is None or not inst.is_inflight:
                # another client started it (a streaming micro-batch's tasks): its instant
                # files are newer than this client's listing. A listing that shows it inflight
                # already has them (the inflight file is written once; a streaming commit has
                # just listed the timeline to find the instant): listing a long timeline again
                # would only repeat it, and the commit lists it again under the lock anyway
                state.reload_timeline()
            plan = rebuild_plan(instant, self.resolved, state)
            self._plans[instant] = plan
        return plan

    def task_writer(
        self,
        instant: str,
        task_partition_id: int = 0,
        stage_id: int | None = None,
        task_attempt_id: int = 0,
        exclusive: bool = True,
        lookup: Lookup | None = None,
        track_keys: bool = False,
    ) -> TaskWriter:
        """A writer for one task attempt of ``instant`` (runs on executors, from the plan the
        driver made: nothing of the table is read again).

        Args:
            exclusive: True when this task is the only writer of the instant (the embedded
                API). COW tables then merge in the task; otherwise tasks stage their rows and
                :meth:`commit` merges each file group once.
            lookup: the index lookup to tag rows with, instead of the table's index (a
                long-lived writer's state index); unused by the bucket index.
            track_keys: the merge handles report the keys each new base file adds and drops
                (:attr:`WriteStatus.keys <hudi_ds.write.write_status.WriteStatus.keys>`: what
                a state index learns its writer's commits from).
        """
        if stage_id is None:
            # unique per instant, so concurrent writers never produce the same file name
            stage_id = int(instant[-9:])
        token = f"{int(task_partition_id)}-{int(stage_id)}-{int(task_attempt_id)}"
        task = TaskWriter(
            self.storage,
            self.plan(instant),
            token,
            task_partition_id,
            exclusive,
            lookup,
            track_keys,
            # the driver's listing serves the first task writer of the instant (the embedded
            # API has one); further ones list for themselves
            self._listed_views.pop(instant, None),
        )
        if exclusive:  # (the only task of the instant: this client commits or aborts it)
            self._task_files[instant] = task.files
        return task

    # -- commit -------------------------------------------------------------------------------
    def commit(
        self,
        instant: str,
        statuses: Iterable[WriteStatus],
        extra_metadata: Mapping[str, str] | None = None,
        partitions_to_delete: Sequence[str] | None = None,
    ) -> Instant:
        """Publish ``instant``: drop files of failed attempts, then write the completed file;
        then run the post-commit services.

        Args:
            partitions_to_delete: the partitions a ``delete_partition`` drops.

        Returns:
            The completed instant.
        """
        if instant in self._requested:
            raise WriteError(
                f"instant {instant} is still requested: save its workload profile "
                "(save_workload_profile) before writing files and committing"
            )
        self._listed_views.pop(instant, None)  # (no task took it: Spark tasks list themselves)
        plan = self.plan(instant)
        state = self.table_state()
        markers: list[str] = []
        statuses = keep_committed_files(self.storage, plan, list(statuses), markers)
        listed = self._task_files.pop(instant, None)
        done: Instant | None = None
        try:
            with Transaction.begin(state, self._lock()) as txn:
                statuses = self._check_locked(state, plan, statuses)
                crash_point("commit_locked")
                txn.confirm()  # a lease lost while checking: nothing to withdraw
                done = publish(state, plan, statuses, partitions_to_delete, extra_metadata, listed)
                written = time.monotonic()
                crash_point("commit_written")
                if txn.lock is not None:
                    txn.stands(written, functools.partial(state.timeline_writer().path_of, done))
                elif self._guard.claimed(instant):
                    self._guard.fence_claim(state, done)
        except CommitConflictError:
            self.abort(instant)
            raise
        except ConcurrentWriterError:
            _quietly(f"rolling back {instant}", self.abort, instant)
            raise
        except LockLostError as e:
            self._abort_after_lost_lock(instant, e)
            raise
        except (OSError, HudiError) as e:
            if done is None:
                # a file or instant file that vanished under this write: another writer's
                # doing, if it rolled the write back (or, a single writer, committed meanwhile)
                failure = self.failure(instant, e)
                if failure is not e:
                    raise failure from e
                raise
            # only the lock's release runs after the commit point: the commit stands (a lease
            # that could not be released expires)
            log.warning("commit %s stands; releasing the table lock failed: %s", instant, e)
        self._after_commit(instant, done, markers)
        return done

    def _check_locked(
        self, state: TableState, plan: WritePlan, statuses: list[WriteStatus]
    ) -> list[WriteStatus]:
        """The commit's checks under the table lock, on the timeline listed again (as Java's
        preCommit, ``TransactionUtils.resolveWriteConflictIfAny``, reloads it): no other writer
        rolled this write back (or, a single writer, is to blame otherwise), its logs moved
        into compactions scheduled meanwhile, multi-writer conflicts resolved. Returns the
        statuses to publish.

        Raises:
            WriteError: another writer rolled the write back as failed (several writers).
            ConcurrentWriterError: another single writer is the cause (a single writer).
            CommitConflictError: a conflict with another writer's commit.
        """
        instant = plan.instant
        state.reload_timeline()
        crash_point("commit_check")
        if self.multi_writer:
            # another writer may have rolled this write back as failed (its heartbeat looked
            # expired to a LAZY cleaner): completing it would publish files that are gone --
            # refuse, as Hudi aborts a commit whose heartbeat expired (HeartbeatUtils.abort
            # IfHeartbeatExpired); before anything touches those files (moving logs)
            withdrawn = rolled_back_by_other(state.timeline, instant)
            if withdrawn is not None:
                raise withdrawn
        else:
            # no lock: another single writer was refused at its start, unless it took this
            # write for failed or ended before this one's start (WriterGuard.concurrent_cause)
            refused = self._guard.concurrent_cause(state, instant, plan)
            if refused is not None:
                raise refused
        check_clusterings(state.timeline, plan, statuses, self.options, self.multi_writer)
        if plan.table_type is TableType.MERGE_ON_READ:
            statuses = retarget_pending_logs(state, plan, statuses)
        if self.multi_writer:
            statuses = resolve_conflicts(state, plan, statuses)
            if plan.table_type is TableType.MERGE_ON_READ:
                # logs that joined a file group another writer created at once (same bucket)
                # are in its slice: a compaction scheduled on it since takes them into its own
                # slice too, or they would hang off a superseded one
                statuses = retarget_pending_logs(state, plan, statuses)
        return statuses

    def _after_commit(self, instant: str, done: Instant, listed: list[str]) -> None:
        """After the commit point: the write's heartbeat stopped, its markers deleted (the
        objects its commit listed, ``listed``, with those it wrote since), the post-commit
        services run. A storage failure here is logged: the commit stands."""
        # Hudi deletes the markers quietly too (WriteMarkers.quietDeleteMarkerDir): left-over
        # markers of a completed instant are never read as its files. Only now: a commit
        # withdrawn by its fence is rolled back by its markers. On an object store they go in
        # the request that ends the write (its heartbeat, a single writer's record): one
        # request, not three; a file system deletes their folder too
        markers: list[str] = []
        if isinstance(self.storage, ObjectStorage):
            markers = marker_objects(self.storage, instant, listed)
        else:
            _after_commit_point(
                instant, "deleting its markers", delete_markers, self.storage, instant
            )
        # a single writer stays registered until its post-commit services end: a writer
        # starting meanwhile would run its own against them
        single = self._guard.claimed(instant)
        if not single:
            _after_commit_point(
                instant, "stopping its heartbeat", self._guard.stop, instant, markers
            )
            forget_markers(self.storage, instant)
        crash_point("after_commit")
        try:
            if self.post_commit is not None:
                self.post_commit(self, done)
        finally:
            if single:
                _after_commit_point(instant, "ending its write", self._guard.stop, instant, markers)
                forget_markers(self.storage, instant)

    def _abort_after_lost_lock(self, instant: str, lost: LockLostError) -> None:
        """Roll back ``instant`` after its commit lost the table lock (waits for the lock like
        any rollback); if that fails too, the instant stays pending -- with its heartbeat
        stopped, another writer rolls it back as failed."""
        try:
            self.abort(instant)
        except (OSError, HudiError) as e:
            log.error(
                "instant %s is left pending for other writers to roll back (%s): %s",
                instant,
                lost,
                e,
            )

    def failure(self, instant: str, error: BaseException) -> BaseException:
        """The error a failed write of ``instant`` raises: a :class:`WriteError` when another
        writer rolled it back meanwhile (whatever its deleted files caused here), else ``error``."""
        if isinstance(error, (CommitConflictError, LockLostError, WriteError)) or not isinstance(
            error, (OSError, TimelineError)
        ):
            return error
        if not self.multi_writer:
            # a single writer's: ConcurrentWriterError, also when another writer committed
            # meanwhile (a file of the plan cleaned, archived or rewritten under this write)
            plan = self._plans.get(instant)
            return self._guard.concurrent_failure(self.table_state, instant, plan) or error
        try:
            timeline = self.table_state().reload_timeline()
        except (OSError, HudiError):
            return error
        return rolled_back_by_other(timeline, instant) or error

    def abort_failed(self, instant: str, error: BaseException) -> NoReturn:
        """Roll back ``instant`` after ``error`` and raise :meth:`failure`'s error for it."""
        failure = self.failure(instant, error)
        self.abort(instant)
        if failure is not error:
            raise failure from error
        raise error

    def abort(self, instant: str) -> None:
        """Roll ``instant`` back: remove every file it wrote and its instant files.

        If :meth:`start` created the table for ``instant`` (the first write of a table), the
        table is removed again: a refused first write leaves the path as it was.
        """
        self._requested.pop(instant, None)
        self._task_files.pop(instant, None)
        state = self.table_state()
        if self.multi_writer:
            self._guard.stop(instant)
            with held(self._lock()):  # other writers finish pending rollbacks under the lock
                rollback_instant(state, instant)
        else:
            # the write stays alive until its rollback is done: a writer starting meanwhile
            # would roll it back at the same time
            try:
                if not self._guard.taken_over(state, instant):
                    rollback_instant(state, instant)
            finally:
                self._guard.stop(instant)
        before = self._created_with.pop(instant, None)
        if before is not None:
            self._undo_create(before, instant)

    def _undo_create(self, before: set[str], instant: str | None) -> None:
        """Remove the table this client created for a first write that failed: a single
        writer only, while the timeline holds nothing but it (and rollbacks); what was in the
        folder before (``before``, :func:`~hudi_ds.table_create.folder_listing`) stays."""
        if self.multi_writer:
            return  # other writers may already use the new table
        timeline = self.table_state().reload_timeline()
        if any(i.requested_time != instant and i.action != "rollback" for i in timeline.instants):
            return
        remove_created(self.storage, before)
        self.state = None
        self._plans.pop(instant or "", None)
        self._listed_views.pop(instant or "", None)

    def committed_streaming_batch(self, identifier: str) -> int | None:
        """The latest batch id committed under ``identifier`` by a streaming sink, if any
        (from a fresh listing of the timeline, kept in :attr:`state`: a batch may have been
        committed by another process since this client opened the table)."""
        if self.state is None:
            return None
        timeline = self.state.reload_timeline()
        for inst in reversed(timeline.commits()):
            # (not the write stats: a bulk insert's are 100 MB at 100,000 files)
            raw = timeline.read_extra_metadata(inst).get(STREAMING_CHECKPOINT_KEY)
            if not raw:
                continue
            try:
                value = json.loads(raw).get(identifier)
            except (ValueError, AttributeError):
                continue
            if value is not None:
                return int(value)
        return None


def _refusal(timeline: Timeline, instant: str, withdrawn: Callable[[], bool] | None) -> str | None:
    """Why a task must not create the files of ``instant`` (None: it may)."""
    if rollback_of(timeline, instant) is not None:
        return f"instant {instant} was rolled back: a task cannot join it"
    if withdrawn is not None and withdrawn():
        return f"instant {instant} was withdrawn (its micro-batch aborted): a task cannot join it"
    return None


def _quietly(what: str, fn: Callable[..., object], *args: Any) -> None:
    """Clean up after a write that failed: a storage failure is logged, not raised (the
    write's own error is what the caller sees)."""
    try:
        fn(*args)
    except (OSError, HudiError) as e:
        log.warning("%s failed: %s", what, e)


def _after_commit_point(instant: str, what: str, fn: Callable[..., object], *args: Any) -> None:
    """Run a clean-up step of a write whose completed instant is already published: a storage
    failure is logged, not raised -- the commit stands, and a write that raises is one the
    caller may take as not done (and write again)."""
    try:
        fn(*args)
    except (OSError, HudiError) as e:
        log.warning("commit %s stands; %s failed: %s", instant, what, e)
