"""The write client: the coordinator (driver) and the task writers of one write.

The protocol, shared by the embedded API and the Spark connector::

    client = WriteClient(path, options)           # validates every option (driver)
    instant = client.start(schema=...)            # creates/opens the table, rolls back failed
                                                  # writes, writes T.<action>.requested/.inflight
    task = client.task_writer(instant, p, s, a)   # in each task: per-file-group handles
    task.write(batch) ...; statuses = task.close()
    client.commit(instant, all_statuses)          # driver: drop debris, publish T atomically
    client.abort(instant)                         # driver: roll T back

The completed instant file is the commit point: it is written last, atomically (temp + rename).
Until then readers see nothing of T; after a crash the next writer rolls T back.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hudi_ds.config import (
    ConcurrencyConfig,
    Options,
    ReadConfig,
    ServiceConfig,
    WriteConfig,
    validate_service_options,
)
from hudi_ds.errors import (
    CommitConflictError,
    ConfigError,
    InstantNotFoundError,
    SchemaError,
    TableExistsError,
    TimelineError,
    WriteError,
)
from hudi_ds.faults import crash_point
from hudi_ds.index.bucket import (
    NUM_BUCKETS_KEY,
    bucket_id_from_file_id,
    bucket_ids_from_record_keys,
    new_bucket_file_id,
    validate_hash_fields,
    validate_num_buckets,
)
from hudi_ds.keygen import partition_paths, record_keys
from hudi_ds.layout.file_group import FileSlice
from hudi_ds.layout.naming import PARTITION_METADATA_FILE, log_file_name, parse_log_file_name
from hudi_ds.layout.parquet import dictionary_columns_of
from hudi_ds.merge.modes import (
    MergeSpec,
    check_same_spec,
    custom_classes_option,
    default_ordering_field,
    table_spec,
    write_spec,
)
from hudi_ds.schema import (
    IS_DELETED_FIELD,
    META_FIELDS,
    OPERATION_METADATA_FIELD,
    RECORD_KEY_METADATA_FIELD,
    arrow_to_avro_schema,
    avro_record_name,
    avro_schema_json,
    avro_to_arrow_schema,
    conform_partial,
    conform_table,
    with_meta_fields,
    write_schema,
)
from hudi_ds.storage import Storage
from hudi_ds.table.fs_view import FileSystemView
from hudi_ds.table.table import ReadableTable
from hudi_ds.table_config import TableConfig
from hudi_ds.table_create import NewTable, check_path_is_free, create_table
from hudi_ds.timeline.instant import MAX_INSTANT_AHEAD_MS, Instant, State, new_instant_time
from hudi_ds.timeline.metadata import CommitMetadata, WriteStat
from hudi_ds.timeline.timeline import Timeline, TimelineWriter
from hudi_ds.timeline.view import Visibility
from hudi_ds.write.bucket_layout import check_bucket_layout
from hudi_ds.write.handles import (
    DELETE_ORDERING,
    AppendHandle,
    HandleContext,
    MergeHandle,
    delete_schema,
)
from hudi_ds.write.lock import (
    HEARTBEAT_DIR,
    FileSystemLock,
    Heartbeat,
    InProcessLock,
    beat_once,
    heartbeat_expired,
    held,
    table_lock,
)
from hudi_ds.write.markers import create_marker, delete_markers, marked_files
from hudi_ds.write.rollback_executor import rollback_failed_writes, rollback_instant
from hudi_ds.write.write_status import WriteStatus

OVERWRITE_OPS = ("insert_overwrite", "insert_overwrite_table", "delete_partition")
STREAMING_CHECKPOINT_KEY = "_hudi_streaming_sink_checkpoint"
PARTIAL_COLUMNS_KEY = "_hudi_ds_partial_update_columns"
MB = 1 << 20
#: Called as ``hook(client, completed_instant)`` after every commit (table services register
#: here: :mod:`hudi_ds.services` runs inline compaction, cleaning and archival).
POST_COMMIT_HOOKS: list[Callable[[WriteClient, Instant], None]] = []


@dataclass(frozen=True)
class WritePlan:
    """Everything tasks need to write instant ``instant`` (small and picklable)."""

    instant: str
    action: str
    operation: str
    table_type: str
    schema: pa.Schema  # full record schema, meta fields first
    avro_schema: str  # full record schema as Avro JSON
    data_avro_schema: str  # writer schema without meta fields (commit metadata)
    record_key_fields: tuple[str, ...]
    complex_key: bool
    partition_fields: tuple[str, ...]
    hive_style: bool
    url_encode: bool
    ordering_field: str | None
    merge_mode: str
    num_buckets: int
    hash_fields: tuple[str, ...]
    block_format: str
    codec: str
    task_budget_bytes: int
    handle_budget_bytes: int
    visibility: Visibility
    pending_compaction: Mapping[tuple[str, str], str] = field(default_factory=dict)
    set_null_for_missing: bool = False
    merge: MergeSpec | None = None  # the table's merger
    partial_columns: tuple[str, ...] | None = None  # partial update write: the data columns
    spill_dir: str | None = None  # hoodie.memory.spillable.map.path (None: system temp)

    def handle_context(self, storage: Storage, token: str) -> HandleContext:
        """What the handles of one task attempt (write token ``token``) share."""
        return HandleContext(
            storage=storage,
            instant=self.instant,
            token=token,
            schema=self.schema,
            avro_schema=self.avro_schema,
            block_format=self.block_format,
            codec=self.codec,
            ordering_field=self.ordering_field,
            merge_mode=self.merge_mode,
            merge=self.merge,
            partial_columns=self.partial_columns,
            memory_budget=self.task_budget_bytes,
            spill_dir=self.spill_dir,
        )


class WriteClient:
    """Writes to the Hudi table at ``path`` (creating it on the first write).

    Args:
        path: table base path or URI.
        options: Hudi write options (``hoodie.*`` keys; see :class:`hudi_ds.config.WriteConfig`).

    Raises:
        ConfigError: an unknown ``hoodie.*`` key, an invalid value, or options that contradict
            the existing table (the message names the key and the value).
    """

    def __init__(self, path: str | Storage, options: Mapping[str, Any] | None = None) -> None:
        self.storage = path if isinstance(path, Storage) else Storage(str(path))
        self.options = Options.of(options)
        self.options.validate(
            WriteConfig, ReadConfig, ServiceConfig, ConcurrencyConfig, ignored=_EXTRA_KEYS
        )
        validate_service_options(self.options)
        self._plans: dict[str, WritePlan] = {}
        self._heartbeats: dict[str, Heartbeat] = {}
        # instant -> what the folder held before :meth:`start` created the table for it
        self._created_with: dict[str, set[str]] = {}
        self.multi_writer = self.options.get(ConcurrencyConfig.MODE) != "single_writer"
        if self.multi_writer:
            self._lock()  # validate the provider now
        self._resolve()

    # -- option resolution ------------------------------------------------------------------
    def _resolve(self) -> None:
        o = self.options
        self.partial_columns: tuple[str, ...] | None = None
        self.operation: str = o.get(WriteConfig.OPERATION)
        try:
            self.table_config: TableConfig | None = TableConfig.load(self.storage)
        except FileNotFoundError:
            self.table_config = None
        cfg = self.table_config
        if cfg is not None:
            self._check_against_table(cfg)
            self.table_name = cfg.table_name
            self.table_type = cfg.table_type
            self.record_key_fields = cfg.record_key_fields
            self.partition_fields = cfg.partition_fields
            self.hive_style = cfg.hive_style_partitioning
            self.url_encode = cfg.url_encode_partitions
            self.ordering_field = cfg.ordering_fields[0] if cfg.ordering_fields else None
            self.merge_spec = table_spec(cfg, custom_classes_option(o))
            check_same_spec(o, self.merge_spec)
            self.merge_mode = self.merge_spec.mode
            self.complex_key = cfg.complex_record_key
            if cfg.table_version != 6:
                raise ConfigError(
                    f"hudi_ds writes table version 6; the table at {self.storage.base_uri} is "
                    f"version {cfg.table_version} (hoodie.table.version)"
                )
        else:
            self._check_path_is_free()
            self.table_name = o.get(WriteConfig.TABLE_NAME) or ""
            self.table_type = o.get(WriteConfig.TABLE_TYPE)
            keys: list[str] | None = o.get(WriteConfig.RECORD_KEY_FIELDS)
            parts: list[str] | None = o.get(WriteConfig.PARTITION_FIELDS)
            self.record_key_fields = list(keys or [])
            self.partition_fields = list(parts or [])
            self.hive_style = o.get(WriteConfig.HIVE_STYLE)
            self.url_encode = o.get(WriteConfig.URL_ENCODE)
            self.ordering_field = (
                o.get(WriteConfig.PRECOMBINE_FIELD) or default_ordering_field(o) or None
            )
            self.merge_spec = write_spec(o, self.ordering_field)
            self.merge_mode = self.merge_spec.mode
            self.complex_key = len(self.record_key_fields) > 1
        stored = cfg.props.get(NUM_BUCKETS_KEY) if cfg is not None else None
        asked = o.get(WriteConfig.NUM_BUCKETS)
        if stored is not None and o.is_set(WriteConfig.NUM_BUCKETS) and int(stored) != asked:
            raise ConfigError(
                f"option '{NUM_BUCKETS_KEY}'={asked} contradicts the table's {stored} buckets "
                "(fixed when the table was created)"
            )
        self.num_buckets = validate_num_buckets(
            int(stored) if stored is not None else o.get(WriteConfig.NUM_BUCKETS)
        )
        if self.record_key_fields:
            self.hash_fields = validate_hash_fields(
                o.get(WriteConfig.HASH_FIELD), self.record_key_fields
            )
        else:
            self.hash_fields = []

    def _check_against_table(self, cfg: TableConfig) -> None:
        o = self.options

        def same(prop: Any, value: Any, norm: Any = lambda x: x) -> None:
            if o.is_set(prop) and norm(o.get(prop)) != norm(value):
                raise ConfigError(
                    f"option '{prop.key}'={o.get(prop)!r} contradicts the existing table "
                    f"({value!r} in hoodie.properties)"
                )

        same(WriteConfig.TABLE_TYPE, cfg.table_type)
        same(WriteConfig.RECORD_KEY_FIELDS, cfg.record_key_fields)
        same(WriteConfig.PARTITION_FIELDS, cfg.partition_fields)
        same(WriteConfig.HIVE_STYLE, cfg.hive_style_partitioning)
        same(
            WriteConfig.PRECOMBINE_FIELD,
            cfg.ordering_fields[0] if cfg.ordering_fields else None,
        )
        name = o.get(WriteConfig.TABLE_NAME)
        if name and name != cfg.table_name:
            raise ConfigError(
                f"option 'hoodie.table.name'={name!r} contradicts the existing table "
                f"{cfg.table_name!r}"
            )

    # -- schema -------------------------------------------------------------------------------
    def _table(self) -> ReadableTable | None:
        if self.table_config is None:
            return None
        return ReadableTable(self.storage)

    def validate_schema(self, schema: pa.Schema) -> pa.Schema:
        """Check an input schema and return the table schema to write (meta fields first).

        Records the write's partial-update columns (:func:`hudi_ds.schema.write_schema`).

        Raises:
            SchemaError: a key, partition or ordering column is missing or has an unusable
                type, or the input drops table columns (names the column).
        """
        table = self._table()
        decided = write_schema(
            schema,
            table.schema if table is not None else None,
            table_name=self.table_name,
            record_key_fields=self.record_key_fields,
            partition_fields=self.partition_fields,
            ordering_field=self.ordering_field,
            deletes=self.operation if self.operation in ("delete", "delete_partition") else None,
            partial_updates=self.options.get(WriteConfig.PARTIAL_UPDATES),
            set_null_for_missing=self.options.get(WriteConfig.SET_NULL_FOR_MISSING),
            nulls_mean_unchanged=self.merge_spec.nulls_mean_unchanged,
        )
        self.partial_columns = decided.partial_columns
        return decided.schema

    def _avro_name(self) -> str:
        return avro_record_name(self.table_name)

    # -- table creation -------------------------------------------------------------------------
    def _check_path_is_free(self) -> None:
        """A new table goes into an empty (or missing) folder, never over other data."""
        check_path_is_free(self.storage)

    def _create_table(self, schema: pa.Schema) -> None:
        new = NewTable(
            table_name=self.table_name,
            table_type=self.table_type,
            record_key_fields=tuple(self.record_key_fields),
            partition_fields=tuple(self.partition_fields),
            hive_style=self.hive_style,
            url_encode=self.url_encode,
            complex_key=self.complex_key,
            num_buckets=self.num_buckets,
            hash_fields=tuple(self.hash_fields),
            ordering_field=self.ordering_field,
            database_name=self.options.get(WriteConfig.DATABASE_NAME) or None,
            merge_properties=self.merge_spec.table_properties(),
        )
        self.table_config = create_table(self.storage, new, schema)

    # -- instant lifecycle -------------------------------------------------------------------
    def create_table_if_absent(self, schema: pa.Schema) -> bool:
        """Create the table for input ``schema`` unless it exists (no instant is started).

        A streaming micro-batch's tasks start their instant concurrently
        (``start(instant=...)``); the driver creates the table first so that they never race
        to create it.

        Returns:
            True if this call created the table.
        """
        if self.table_config is not None:
            return False
        full = self.validate_schema(schema)
        try:
            self._create_table(full)
        except TableExistsError:
            self._resolve()
            return False
        return True

    def start(
        self,
        schema: pa.Schema | None = None,
        operation: str | None = None,
        *,
        instant: str | None = None,
        rollback_failed: bool = True,
        extra_metadata: Mapping[str, str] | None = None,
    ) -> str:
        """Begin a write: create or open the table, roll back failed writes, start an instant.

        Args:
            schema: the input's Arrow schema (required unless the table exists and the
                operation is a delete).
            operation: overrides ``hoodie.datasource.write.operation``.
            instant: join this instant time instead of allocating a new one: its requested
                and inflight files are created unless they exist. Several tasks of one
                streaming micro-batch do this concurrently, each computing the same plan;
                the time must be later than every instant on the timeline.
            rollback_failed: roll back pending writes first (Hudi's eager policy); False for
                tasks joining an instant (the streaming sink's commit rolls back instead).
            extra_metadata: extra entries of the inflight commit metadata.

        Returns:
            The instant time.

        Raises:
            WriteError: ``instant`` is already completed.
        """
        if operation is not None:
            self.operation = WriteConfig.OPERATION.parse(operation)
        if schema is None:
            table = self._table()
            if table is None or not len(table.schema):
                raise SchemaError("the first write of a table needs the input schema")
            full = table.schema
        else:
            full = self.validate_schema(schema)
        before: set[str] | None = None
        if self.table_config is not None and instant is None:
            # hoodie.properties' checksum does not cover the bucket count: check it against the
            # file groups before writing (tasks joining an instant rely on the driver's check)
            cow = self.table_type == "COPY_ON_WRITE"
            # the timeline is loaded before the listing: a commit landing in between is then
            # listed but not yet visible, never visible but unlisted ("missing")
            cow_table = ReadableTable(self.storage) if cow else None
            vis = cow_table.visibility() if cow_table is not None else None
            view = check_bucket_layout(
                self.storage, self.table_config, self.num_buckets, list(self.hash_fields)
            )
            if cow_table is not None and vis is not None:
                # a COW write rewrites the latest base file of each group it touches: with a
                # committed file missing or short, it would merge into an older version and
                # make the loss permanent
                cow_table.verify_committed_files(view, vis, recheck_cleaned=True)
        if self.table_config is None:
            before = self._listing()
            self._create_table(full)
        cfg = self.table_config
        assert cfg is not None
        try:
            with held(self._lock()):
                started = self._start_locked(full, instant, rollback_failed, extra_metadata)
        except BaseException:
            if before is not None:
                self._undo_create(before, None)
            raise
        if before is not None:
            self._created_with[started] = before
        return started

    def _start_locked(
        self,
        full: pa.Schema,
        instant: str | None,
        rollback_failed: bool,
        extra_metadata: Mapping[str, str] | None,
    ) -> str:
        cfg = self.table_config
        assert cfg is not None
        if rollback_failed and self._failed_writes_policy() != "NEVER":
            lazy = self._failed_writes_policy() == "LAZY"
            rollback_failed_writes(self.storage, cfg, is_failed=self._is_dead if lazy else None)
        timeline = Timeline.load(self.storage, 1)
        action = self._action()
        writer = TimelineWriter(self.storage, 1)
        joined = instant is not None
        if instant is not None:
            req = self._join_requested(instant, action, timeline, writer)
        else:
            last = timeline.instants[-1].requested_time if len(timeline) else None
            for _ in range(100):
                instant = new_instant_time(after=last, max_ahead_ms=MAX_INSTANT_AHEAD_MS)
                req = Instant(instant, action, State.REQUESTED)
                if writer.create_requested(req):
                    break
                last = instant
            else:  # pragma: no cover - 100 clashes in a row
                raise WriteError("could not allocate a unique instant time")
        # reloaded after T exists: a compaction scheduled meanwhile is seen (its file groups
        # get log files named with its instant)
        plan = self._make_plan(instant, action, full, timeline.reload())
        # the inflight metadata carries the writer schema, as in Hudi: a client that did not
        # start the instant (a streaming commit in another process) rebuilds the plan from it
        inflight = CommitMetadata(
            operation_type=_OPERATION_TYPES[self.operation],
            extra_metadata={"schema": plan.data_avro_schema},
        )
        if plan.partial_columns is not None:
            inflight.extra_metadata[PARTIAL_COLUMNS_KEY] = ",".join(plan.partial_columns)
        inflight.extra_metadata.update(extra_metadata or {})
        current = timeline.get(instant) if joined else None
        try:
            if current is None or current.is_requested:
                writer.transition_to_inflight(req, inflight.to_json_bytes())
        except InstantNotFoundError:
            raise  # rolled back meanwhile
        except TimelineError:
            if not joined:
                raise
            # another task of the instant made it inflight first (same content)
            if Timeline.load(self.storage, 1).is_completed(instant):
                raise WriteError(f"instant {instant} is already completed") from None
        self._plans[instant] = plan
        if self.multi_writer and not joined:
            interval = self.options.get(ConcurrencyConfig.HEARTBEAT_MS) / 1000
            self._heartbeats[instant] = Heartbeat(self.storage, instant, interval)
        elif self.multi_writer:
            # a task joining a streaming micro-batch's instant: one beat per task keeps the
            # instant alive for other writers' lazy rollback while the batch runs
            beat_once(self.storage, instant)
        crash_point("after_requested")
        return instant

    # -- concurrency --------------------------------------------------------------------------
    def _lock(self) -> FileSystemLock | InProcessLock | None:
        """The table lock of a multi-writer client (None for a single writer)."""
        return table_lock(self.storage, self.options)

    def _failed_writes_policy(self) -> str:
        policy = self.options.get(ConcurrencyConfig.FAILED_WRITES_POLICY)
        return policy or ("LAZY" if self.multi_writer else "EAGER")

    def _is_dead(self, instant: str) -> bool:
        o = self.options
        timeout = (
            o.get(ConcurrencyConfig.HEARTBEAT_MS)
            / 1000
            * max(1, o.get(ConcurrencyConfig.HEARTBEAT_MISSES))
        )
        return heartbeat_expired(self.storage, instant, timeout)

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_heartbeats"] = {}  # threads stay with the process that started them
        return state

    def _stop_heartbeat(self, instant: str) -> None:
        hb = self._heartbeats.pop(instant, None)
        if hb is not None:
            hb.stop()
        elif self.multi_writer:
            self.storage.delete(f"{HEARTBEAT_DIR}/{instant}")

    def _resolve_conflicts(self, plan: WritePlan, statuses: list[WriteStatus]) -> list[WriteStatus]:
        """Check the instants completed since this write started (under the table lock).

        COW file groups (and file groups replaced meanwhile) admit one writer: an overlap is
        a conflict. MOR log files of a bucket table are appended by both writers (Hudi's
        non-blocking concurrency control): ours are renumbered after the other writer's so
        that log order is commit order, and a bucket that both writers created is merged into
        the file group committed first.
        """
        timeline = Timeline.load(self.storage, 1)
        ours = {(s.partition_path, s.file_id) for s in statuses}
        others = [
            i
            for i in timeline.commits()
            if i.requested_time not in plan.visibility.instants and i.requested_time != plan.instant
        ]
        if not others:
            return statuses
        exclusive = plan.table_type == "COPY_ON_WRITE" or plan.action == "replacecommit"
        theirs_new: dict[tuple[str, int], str] = {}
        for other in others:
            md = timeline.read_commit_metadata(other)
            theirs = {(p, s.file_id) for p, st in md.partition_to_write_stats.items() for s in st}
            replaced = {(p, f) for p, fs in md.partition_to_replace_file_ids.items() for f in fs}
            clash = (ours & replaced) or (exclusive and ours & theirs)
            for p, f in theirs:
                if f and f[:8].isdigit():
                    theirs_new.setdefault((p, bucket_id_from_file_id(f)), f)
            for s in statuses:
                b = (s.partition_path, bucket_id_from_file_id(s.file_id))
                created_too = theirs_new.get(b, s.file_id) != s.file_id
                if exclusive and s.stat.prev_commit == "null" and created_too:
                    clash = clash or {(s.partition_path, s.file_id)}
            if clash:
                p, f = sorted(clash)[0]
                raise CommitConflictError(
                    f"instant {plan.instant} conflicts with {other.requested_time} "
                    f"({other.action}) on file group {f} of partition '{p}'"
                )
        return self._rehome_logs(plan, statuses)

    def _retarget_logs(self, plan: WritePlan, statuses: list[WriteStatus]) -> list[WriteStatus]:
        """Logs of file groups compacted since this write started join the compaction's slice
        (:func:`retarget_logs`); runs under the table lock, right before the commit."""
        appends = [k for k, s in enumerate(statuses) if s.kind == "append"]
        if not appends:
            return statuses
        names = [parse_log_file_name(statuses[k].path.rsplit("/", 1)[-1]) for k in appends]
        bases = {n.instant_time for n in names if n is not None}
        if not bases:
            return statuses
        tl = Timeline.load(self.storage, 1)
        oldest = min(bases)
        news = any(
            i.requested_time > oldest and tl.origin_action(i.requested_time) == "compaction"
            for i in tl
        )
        gone = any(not tl.contains(b) for b in bases)
        if not news and not gone:
            return statuses  # no slice newer than the ones written to, none taken back
        moved = retarget_logs(
            self.storage, [statuses[k].stat for k in appends], plan.instant, timeline=tl
        )
        out = list(statuses)
        for k, stat in zip(appends, moved, strict=True):
            if stat is not statuses[k].stat:
                out[k] = WriteStatus(stat, statuses[k].kind, statuses[k].task)
        return out

    def _rehome_logs(self, plan: WritePlan, statuses: list[WriteStatus]) -> list[WriteStatus]:
        """Rename our log files after the concurrent writers' ones (see _resolve_conflicts)."""
        view = FileSystemView(self.storage, TableConfig.load(self.storage))
        vis = ReadableTable(self.storage).visibility()
        mine = {s.path for s in statuses}
        top: dict[tuple[str, str, str], int] = {}
        live: dict[tuple[str, int], FileSlice] = {}
        for p in {s.partition_path for s in statuses if s.kind == "append"}:
            for g in view.file_groups(p):
                for lf in g.log_files:
                    if lf.path not in mine:
                        k = (p, g.file_id, lf.instant_time)
                        top[k] = max(top.get(k, 0), lf.name.version)
            for fs in view.latest_file_slices(p, vis):
                foreign = fs.base_file is not None or any(
                    lf.path not in mine for lf in fs.log_files
                )
                if foreign:  # a file group someone else committed (not just our new files)
                    live.setdefault((p, bucket_id_from_file_id(fs.file_id)), fs)
        out = []
        for s in statuses:
            name = parse_log_file_name(s.path.rsplit("/", 1)[-1]) if s.kind == "append" else None
            if name is None:
                out.append(s)
                continue
            fid, base = s.file_id, name.instant_time
            other = live.get((s.partition_path, bucket_id_from_file_id(fid)))
            if other is not None and other.file_id != fid:
                # both writers created this bucket: join the file group committed first
                fid, base = other.file_id, other.base_instant_time
            k = (s.partition_path, fid, base)
            if fid == s.file_id and name.version > top.get(k, 0):
                top[k] = name.version
                out.append(s)
                continue
            version = top.get(k, 0) + 1
            top[k] = version
            new_name = log_file_name(fid, base, version, name.write_token or "0-0-0")
            new_path = f"{s.partition_path}/{new_name}" if s.partition_path else new_name
            create_marker(self.storage, plan.instant, new_path, "APPEND")
            self.storage.rename(s.path, new_path)
            stat = dataclasses.replace(
                s.stat,
                file_id=fid,
                path=new_path,
                log_version=version,
                log_files=[new_name],
                prev_commit=base if fid != s.file_id else s.stat.prev_commit,
            )
            out.append(WriteStatus(stat, s.kind, s.task))
        return out

    def _join_requested(
        self, instant: str, action: str, timeline: Timeline, writer: TimelineWriter
    ) -> Instant:
        """The requested instant ``instant``, created unless another task did it first."""
        current = timeline.get(instant)
        if current is not None and current.is_completed:
            raise WriteError(f"instant {instant} is already completed")
        if current is not None and current.action != action:
            raise WriteError(f"instant {instant} is a {current.action}, not a {action}")
        req = Instant(instant, action, State.REQUESTED)
        if current is None:
            writer.create_requested(req)  # False: a concurrent task created it
        return req

    def _action(self) -> str:
        if self.operation in OVERWRITE_OPS:
            return "replacecommit"
        return "deltacommit" if self.table_type == "MERGE_ON_READ" else "commit"

    def _make_plan(
        self, instant: str, action: str, schema: pa.Schema, timeline: Timeline
    ) -> WritePlan:
        o = self.options
        name = self._avro_name()
        data = pa.schema([f for f in schema if f.name not in META_FIELDS])
        table = ReadableTable(self.storage)
        vis = table.visibility()
        pending: dict[tuple[str, str], str] = {}
        for c in timeline.pending_compactions():
            plan = timeline.read_compaction_plan(c)
            for op in plan.operations or []:
                pending[(op.partition_path or "", op.file_id or "")] = c.requested_time
        return WritePlan(
            instant=instant,
            action=action,
            operation=self.operation,
            table_type=self.table_type,
            schema=schema,
            avro_schema=avro_schema_json(
                arrow_to_avro_schema(schema, f"{name}_record", f"hoodie.{name}")
            ),
            data_avro_schema=avro_schema_json(
                arrow_to_avro_schema(data, f"{name}_record", f"hoodie.{name}")
            ),
            record_key_fields=tuple(self.record_key_fields),
            complex_key=self.complex_key,
            partition_fields=tuple(self.partition_fields),
            hive_style=self.hive_style,
            url_encode=self.url_encode,
            ordering_field=self.ordering_field,
            merge_mode=self.merge_mode,
            num_buckets=self.num_buckets,
            hash_fields=tuple(self.hash_fields),
            block_format=o.get(WriteConfig.LOG_BLOCK_FORMAT),
            codec=o.get(WriteConfig.PARQUET_CODEC),
            task_budget_bytes=int(o.get(WriteConfig.TASK_MAX_SIZE_MB) * MB),
            handle_budget_bytes=min(
                int(o.get(WriteConfig.BATCH_SIZE_MB) * MB), o.get(WriteConfig.LOG_BLOCK_MAX_SIZE)
            ),
            visibility=vis,
            pending_compaction=pending,
            set_null_for_missing=o.get(WriteConfig.SET_NULL_FOR_MISSING),
            merge=self.merge_spec,
            partial_columns=self.partial_columns,
            spill_dir=o.get(WriteConfig.SPILLABLE_MAP_PATH) or None,
        )

    def plan(self, instant: str) -> WritePlan:
        """The plan of a started instant (rebuilt from its inflight metadata if need be)."""
        plan = self._plans.get(instant)
        if plan is None:
            plan = self._plans[instant] = self._rebuild_plan(instant)
        return plan

    def _rebuild_plan(self, instant: str) -> WritePlan:
        timeline = Timeline.load(self.storage, 1)
        inst = timeline.get(instant)
        if inst is None or inst.is_completed:
            raise WriteError(f"instant {instant} is not a pending write of this table")
        md = timeline.read_commit_metadata(inst)
        schema_json = md.extra_metadata.get("schema") if md is not None else None
        if not schema_json:
            raise WriteError(f"instant {instant} has no writer schema in its inflight metadata")
        ops = {v: k for k, v in _OPERATION_TYPES.items()}
        self.operation = ops.get(md.operation_type or "", self.operation)
        full = with_meta_fields(avro_to_arrow_schema(schema_json))
        partial = md.extra_metadata.get(PARTIAL_COLUMNS_KEY) if md is not None else None
        self.partial_columns = tuple(c for c in partial.split(",") if c) if partial else None
        return self._make_plan(instant, inst.action, full, timeline)

    def task_writer(
        self,
        instant: str,
        task_partition_id: int = 0,
        stage_id: int | None = None,
        task_attempt_id: int = 0,
        exclusive: bool = True,
    ) -> TaskWriter:
        """A writer for one task attempt of ``instant`` (runs on executors).

        Args:
            exclusive: True when this task is the only writer of the instant (the embedded
                API). COW tables then merge in the task; otherwise tasks stage their rows and
                :meth:`commit` merges each file group once.
        """
        if stage_id is None:
            # unique per instant, so concurrent writers never produce the same file name
            stage_id = int(instant[-9:])
        token = f"{int(task_partition_id)}-{int(stage_id)}-{int(task_attempt_id)}"
        return TaskWriter(self.storage, self.plan(instant), token, task_partition_id, exclusive)

    def commit(
        self,
        instant: str,
        statuses: Iterable[WriteStatus],
        extra_metadata: Mapping[str, str] | None = None,
        partitions_to_delete: Sequence[str] | None = None,
    ) -> Instant:
        """Publish ``instant``: drop files of failed attempts, then write the completed file.

        Returns:
            The completed instant.
        """
        plan = self.plan(instant)
        statuses = list(statuses)
        crash_point("after_files")
        if plan.table_type == "COPY_ON_WRITE" and any(s.kind == "stage" for s in statuses):
            from hudi_ds.write.cow import merge_staged

            statuses = merge_staged(self.storage, plan, statuses)
        keep = {s.path for s in statuses}
        for path in marked_files(self.storage, instant):
            if path not in keep:
                self.storage.delete(path)  # a failed or superseded task attempt's file
        for p in sorted({s.partition_path for s in statuses}):
            _write_partition_metadata(self.storage, p, instant)
        try:
            with held(self._lock()):
                if plan.table_type == "MERGE_ON_READ":
                    statuses = self._retarget_logs(plan, statuses)
                if self.multi_writer:
                    statuses = self._resolve_conflicts(plan, statuses)
                done = self._publish(plan, statuses, extra_metadata, partitions_to_delete)
        except CommitConflictError:
            self.abort(instant)
            raise
        self._stop_heartbeat(instant)
        crash_point("after_commit")
        for hook in POST_COMMIT_HOOKS:
            hook(self, done)
        return done

    def _publish(
        self,
        plan: WritePlan,
        statuses: list[WriteStatus],
        extra_metadata: Mapping[str, str] | None,
        partitions_to_delete: Sequence[str] | None,
    ) -> Instant:
        instant = plan.instant
        md = CommitMetadata(operation_type=_OPERATION_TYPES[plan.operation])
        for s in statuses:
            md.partition_to_write_stats.setdefault(s.partition_path, []).append(s.stat)
        md.extra_metadata["schema"] = plan.data_avro_schema
        md.extra_metadata.update(extra_metadata or {})
        if plan.action == "replacecommit":
            md.is_replace = True
            md.partition_to_replace_file_ids = self._replaced(plan, statuses, partitions_to_delete)
        done = TimelineWriter(self.storage, 1).complete(
            Instant(instant, plan.action, State.INFLIGHT), md.to_json_bytes()
        )
        delete_markers(self.storage, instant)
        return done

    def _replaced(
        self,
        plan: WritePlan,
        statuses: list[WriteStatus],
        partitions_to_delete: Sequence[str] | None,
    ) -> dict[str, list[str]]:
        view = FileSystemView(self.storage, self.table_config or TableConfig.load(self.storage))
        if plan.operation == "insert_overwrite_table":
            parts = view.partitions()
        elif plan.operation == "delete_partition":
            parts = list(partitions_to_delete or [])
        else:
            parts = sorted({s.partition_path for s in statuses})
        new_ids = {(s.partition_path, s.file_id) for s in statuses}
        out: dict[str, list[str]] = {}
        for p in parts:
            ids = [
                s.file_id
                for s in view.latest_file_slices(p, plan.visibility)
                if (p, s.file_id) not in new_ids
            ]
            if ids:
                out[p] = sorted(ids)
        return out

    def abort(self, instant: str) -> None:
        """Roll ``instant`` back: remove every file it wrote and its instant files.

        If :meth:`start` created the table for ``instant`` (the first write of a table), the
        table is removed again: a refused first write leaves the path as it was.
        """
        self._stop_heartbeat(instant)
        cfg = self.table_config or TableConfig.load(self.storage)
        with held(self._lock()):  # other writers finish pending rollbacks under the lock
            rollback_instant(self.storage, cfg, instant)
        before = self._created_with.pop(instant, None)
        if before is not None:
            self._undo_create(before, instant)

    def _listing(self) -> set[str]:
        """Every file and folder under the base path (relative), before creating a table."""
        st = self.storage
        if not st.exists(""):
            return set()
        return (
            {f.path for f in st.list_files("", recursive=True)}
            | set(st.list_dirs("", recursive=True))
            | {""}
        )

    def _undo_create(self, before: set[str], instant: str | None) -> None:
        """Remove the table this client created for a first write that failed.

        Only a single writer does this, and only while the timeline holds nothing but the
        failed write (and rollbacks): nothing committed can be lost. Everything that was in
        the folder before (``before``, from :meth:`_listing`) stays.
        """
        if self.multi_writer:
            return  # other writers may already use the new table
        st = self.storage
        timeline = Timeline.load(st, 1)
        if any(i.requested_time != instant and i.action != "rollback" for i in timeline.instants):
            return
        for f in st.list_files("", recursive=True):
            if f.path not in before:
                st.delete(f.path)
        for d in sorted(st.list_dirs("", recursive=True), key=lambda d: -d.count("/")):
            if d not in before:
                st.delete_dir(d)
        if "" not in before:
            st.delete_dir("")
        self.table_config = None
        self._plans.pop(instant or "", None)

    def committed_streaming_batch(self, identifier: str) -> int | None:
        """The latest batch id committed under ``identifier`` by a streaming sink, if any."""
        import json

        if self.table_config is None:
            return None
        timeline = Timeline.load(self.storage, 1)
        for inst in reversed(timeline.commits()):
            md = timeline.read_commit_metadata(inst)
            raw = md.extra_metadata.get(STREAMING_CHECKPOINT_KEY) if md else None
            if not raw:
                continue
            try:
                value = json.loads(raw).get(identifier)
            except (ValueError, AttributeError):
                continue
            if value is not None:
                return int(value)
        return None


_EXTRA_KEYS = ("hoodie.datasource.write.partitions.to.delete",)

_OPERATION_TYPES = {
    "upsert": "UPSERT",
    "insert": "INSERT",
    "bulk_insert": "BULK_INSERT",
    "delete": "DELETE",
    "insert_overwrite": "INSERT_OVERWRITE",
    "insert_overwrite_table": "INSERT_OVERWRITE_TABLE",
    "delete_partition": "DELETE_PARTITION",
}


def _write_partition_metadata(storage: Storage, partition: str, instant: str) -> None:
    rel = f"{partition}/{PARTITION_METADATA_FILE}" if partition else PARTITION_METADATA_FILE
    if storage.exists(rel):
        return
    depth = len(partition.split("/")) if partition else 0
    when = time.strftime("%a %b %d %H:%M:%S UTC %Y", time.gmtime())
    text = f"#partition metadata\n#{when}\ncommitTime={instant}\npartitionDepth={depth}\n"
    storage.create_if_absent(rel, text.encode())


# ------------------------------------------------------------------------------------------------
class TaskWriter:
    """Routes one task's rows to per-file-group handles under a memory budget."""

    def __init__(
        self,
        storage: Storage,
        plan: WritePlan,
        token: str,
        task_partition_id: int,
        exclusive: bool,
    ) -> None:
        self.storage = storage
        self.plan = plan
        self.token = token
        self.task_partition_id = int(task_partition_id)
        self.exclusive = exclusive
        self.ctx = plan.handle_context(storage, token)
        self.handles: dict[tuple[str, int], AppendHandle | MergeHandle] = {}
        self._buckets: dict[str, dict[int, FileSlice]] = {}
        self._log_versions: dict[str, dict[tuple[str, str], int]] = {}
        self._view: FileSystemView | None = None
        self._record_index = 0
        self._seen_partitions: set[str] = set()
        self.rows_in = 0
        self.flushes = 0
        data_schema = pa.schema([f for f in plan.schema if f.name not in META_FIELDS])
        self._data_schema = data_schema
        otype = (
            data_schema.field(plan.ordering_field).type
            if plan.ordering_field and data_schema.get_field_index(plan.ordering_field) >= 0
            else pa.null()
        )
        self._delete_schema = delete_schema(otype)

    # -- input --------------------------------------------------------------------------------
    def write(self, batch: pa.RecordBatch | pa.Table) -> None:
        """Route the rows of ``batch`` to their file groups' handles."""
        table = pa.Table.from_batches([batch]) if isinstance(batch, pa.RecordBatch) else batch
        if table.num_rows == 0:
            return
        self.rows_in += table.num_rows
        op = self.plan.operation
        if op == "delete_partition":
            parts = partition_paths(
                table, list(self.plan.partition_fields), self.plan.hive_style, self.plan.url_encode
            )
            self._seen_partitions.update(pc.unique(parts).to_pylist())
            return
        drop = [c for c in table.column_names if c in META_FIELDS or c == OPERATION_METADATA_FIELD]
        if drop:
            table = table.drop_columns(drop)
        if op == "delete":
            data, deletes, data_parts, del_parts = self._prepare_deletes(table)
        else:
            data, deletes, data_parts, del_parts = self._prepare_upserts(table)
        if self.ctx.dictionary_columns is None and data.num_rows:
            self.ctx = dataclasses.replace(
                self.ctx, dictionary_columns=tuple(dictionary_columns_of(data.slice(0, 4096)))
            )
        self._route(data, deletes, data_parts, del_parts)
        self._enforce_budget()

    def _check_keys(self, table: pa.Table) -> None:
        for c in self.plan.record_key_fields:
            if c not in table.column_names:
                raise SchemaError(f"key column '{c}' is missing from the input")
            col = table.column(c)
            if col.null_count:
                raise SchemaError(f"key column '{c}' holds {col.null_count} null value(s)")
            if not self.plan.complex_key and (
                pa.types.is_string(col.type) or pa.types.is_large_string(col.type)
            ):
                empty = pc.sum(pc.equal(col, "")).as_py() or 0
                if empty:
                    raise SchemaError(f"key column '{c}' holds {empty} empty value(s)")
        for c in self.plan.partition_fields:
            if c not in table.column_names:
                raise SchemaError(f"partition column '{c}' is missing from the input")

    def _check_ordering(self, table: pa.Table, keys: pa.Array) -> None:
        """Refuse NaN ordering values.

        Java's ``Double.compareTo`` (how Hudi's payloads and mergers compare ordering values,
        e.g. DefaultHoodieRecordPayload) sorts NaN above every number, so a NaN would silently
        win every later merge of its key; a NaN is bad input, refused naming a key.
        """
        field = self.plan.ordering_field
        if not field or field not in table.column_names:
            return
        col = table.column(field)
        if not pa.types.is_floating(col.type):
            return
        nan = pc.fill_null(pc.is_nan(col), False)
        if pc.any(nan).as_py():
            key = keys.filter(nan.combine_chunks())[0].as_py()
            count = pc.sum(nan).as_py()
            raise SchemaError(
                f"ordering column '{field}' holds {count} NaN value(s) (e.g. record key "
                f"{key!r}); NaN has no order (hoodie.datasource.write.precombine.field)"
            )

    def _keys_and_partitions(self, table: pa.Table) -> tuple[pa.Array, pa.Array]:
        p = self.plan
        keys = record_keys(table, list(p.record_key_fields), p.complex_key)
        if not p.complex_key:
            bad = pc.and_(pc.match_substring(keys, ","), pc.match_substring(keys, ":"))
            if pc.any(bad).as_py():
                raise SchemaError(
                    f"record key {keys.filter(bad)[0].as_py()!r} in column "
                    f"'{p.record_key_fields[0]}' contains both ',' and ':', which Hudi's bucket "
                    "index would parse as a complex key"
                )
        parts = partition_paths(table, list(p.partition_fields), p.hive_style, p.url_encode)
        return keys, parts

    def _prepare_upserts(self, table: pa.Table) -> tuple[pa.Table, pa.Table, pa.Array, pa.Array]:
        p = self.plan
        self._check_keys(table)
        if p.partial_columns is not None:
            table = conform_partial(table, self._data_schema, p.partial_columns, narrowing=True)
        else:
            table = conform_table(table, self._data_schema)
        keys, parts = self._keys_and_partitions(table)
        self._check_ordering(table, keys)
        n = table.num_rows
        deleted = None
        if IS_DELETED_FIELD in table.column_names:
            flag = table.column(IS_DELETED_FIELD).combine_chunks().fill_null(False)
            if pc.any(flag).as_py():
                deleted = np.asarray(flag, dtype=bool)
        start = self._record_index
        self._record_index += n
        seqno = pc.binary_join_element_wise(
            f"{p.instant}_{self.task_partition_id}_",
            pa.array(np.arange(start, start + n, dtype=np.int64)).cast(pa.string()),
            "",
        )
        meta = [
            pa.repeat(pa.scalar(p.instant, pa.string()), n),
            seqno,
            keys,
            parts,
            pa.repeat(pa.scalar("", pa.string()), n),
        ]
        full = pa.Table.from_arrays(
            meta + [table.column(i) for i in range(table.num_columns)], schema=p.schema
        )
        if deleted is None:
            return full, self._delete_schema.empty_table(), parts, pa.array([], pa.string())
        idx_del = pa.array(np.flatnonzero(deleted))
        idx_keep = pa.array(np.flatnonzero(~deleted))
        dels = self._delete_table(
            keys.take(idx_del),
            parts.take(idx_del),
            table.column(p.ordering_field).take(idx_del) if p.ordering_field else None,
        )
        return full.take(idx_keep), dels, parts.take(idx_keep), parts.take(idx_del)

    def _prepare_deletes(self, table: pa.Table) -> tuple[pa.Table, pa.Table, pa.Array, pa.Array]:
        p = self.plan
        self._check_keys(table)
        keys, parts = self._keys_and_partitions(table)
        # The delete operation deletes keys, whatever ordering values the rows carry, as in
        # Hudi 0.15 and 1.x: HoodieSparkSqlWriter (case DELETE) keeps only the HoodieKey of
        # each row (HoodieCreateRecordUtils.getHoodieKeyAndMaybeLocationFromAvroRecord), and
        # HoodieDeleteHelper.execute writes EmptyHoodieRecordPayload records whose ordering
        # value is the default 0, "natural order": the log reader applies such a delete over
        # any record (processNextDeletedRecord / deltaMergeDeleteRecord:
        # `!deleteOrderingVal.equals(0) && ...`). A delete that must lose to newer versions is
        # an upsert with `_hoodie_is_deleted` = true.
        dels = self._delete_table(keys, parts, None)
        return p.schema.empty_table(), dels, pa.array([], pa.string()), parts

    def _delete_table(
        self, keys: pa.Array, parts: pa.Array, ordering: pa.ChunkedArray | pa.Array | None
    ) -> pa.Table:
        otype = self._delete_schema.field(DELETE_ORDERING).type
        if ordering is None:
            ov = pa.nulls(len(keys), otype)
        else:
            ov = ordering.combine_chunks() if isinstance(ordering, pa.ChunkedArray) else ordering
            ov = ov.cast(otype) if ov.type != otype else ov
        return pa.Table.from_arrays(
            [keys.cast(pa.string()), parts.cast(pa.string()), ov], schema=self._delete_schema
        )

    # -- routing ------------------------------------------------------------------------------
    def _route(
        self, data: pa.Table, deletes: pa.Table, data_parts: pa.Array, del_parts: pa.Array
    ) -> None:
        for rows, parts, is_delete in ((data, data_parts, False), (deletes, del_parts, True)):
            if rows.num_rows == 0:
                continue
            keys = rows.column(RECORD_KEY_METADATA_FIELD)
            buckets = bucket_ids_from_record_keys(
                keys, list(self.plan.hash_fields), self.plan.num_buckets, self.plan.complex_key
            )
            enc = pc.dictionary_encode(
                parts.combine_chunks() if isinstance(parts, pa.ChunkedArray) else parts
            )
            pidx = np.asarray(enc.indices, dtype=np.int64)
            names = enc.dictionary.to_pylist()
            self._seen_partitions.update(names)
            group = pidx * self.plan.num_buckets + buckets.astype(np.int64)
            order = np.argsort(group, kind="stable")
            sorted_groups = group[order]
            # one take for the whole batch, then zero-copy slices per file group
            rows = rows.take(pa.array(order))
            starts = np.concatenate([[0], np.flatnonzero(np.diff(sorted_groups)) + 1])
            ends = np.append(starts[1:], len(order))
            for a, b in zip(starts.tolist(), ends.tolist(), strict=True):
                g = int(sorted_groups[a])
                handle = self._handle(names[g // self.plan.num_buckets], g % self.plan.num_buckets)
                sl = rows.slice(a, b - a)
                if is_delete:
                    handle.write(None, sl)
                else:
                    handle.write(sl, None)

    def _handle(self, partition: str, bucket: int) -> AppendHandle | MergeHandle:
        key = (partition, bucket)
        h = self.handles.get(key)
        if h is not None:
            return h
        p = self.plan
        existing = None if p.operation in OVERWRITE_OPS else self._bucket_map(partition).get(bucket)
        if existing is not None:
            file_id = existing.file_id
        else:
            file_id = new_bucket_file_id(partition, bucket, p.instant)
        if p.table_type == "COPY_ON_WRITE" and self.exclusive:
            h = MergeHandle(self.ctx, partition, file_id, existing.base_file if existing else None)
        elif p.table_type == "COPY_ON_WRITE":
            from hudi_ds.write.cow import stage_handle

            h = stage_handle(self.ctx, partition, file_id, existing)
        else:
            if existing is not None:
                base_instant = p.pending_compaction.get(
                    (partition, file_id), existing.base_instant_time
                )
                base_name = (
                    existing.base_file.name.name
                    if existing.base_file is not None
                    and existing.base_file.instant_time == base_instant
                    else None
                )
            else:
                base_instant, base_name = p.instant, None
            version = self._next_log_version(partition, file_id, base_instant)
            h = AppendHandle(
                self.ctx, partition, file_id, base_instant, version, base_name, existing is None
            )
        self.handles[key] = h
        return h

    def _fs_view(self) -> FileSystemView:
        if self._view is None:
            self._view = FileSystemView(self.storage, TableConfig.load(self.storage))
        return self._view

    def _bucket_map(self, partition: str) -> dict[int, FileSlice]:
        m = self._buckets.get(partition)
        if m is None:
            m = {}
            for s in self._fs_view().latest_file_slices(partition, self.plan.visibility):
                b = bucket_id_from_file_id(s.file_id)
                if b in m:
                    raise WriteError(
                        f"partition '{partition}' has two file groups for bucket {b}: "
                        f"{m[b].file_id} and {s.file_id}"
                    )
                m[b] = s
            self._buckets[partition] = m
        return m

    def _next_log_version(self, partition: str, file_id: str, base_instant: str) -> int:
        versions = self._log_versions.get(partition)
        if versions is None:
            versions = {}
            for g in self._fs_view().file_groups(partition):
                for lf in g.log_files:
                    k = (g.file_id, lf.instant_time)
                    versions[k] = max(versions.get(k, 0), lf.name.version)
            self._log_versions[partition] = versions
        return versions.get((file_id, base_instant), 0) + 1

    def _enforce_budget(self) -> None:
        """Flush handles so that buffers *and* the copies a flush makes fit the task budget.

        A flush of B buffered bytes briefly needs about 2B more (the concatenated rows, the
        encoded block), and Arrow's allocator keeps some freed memory, so buffers are kept
        under a third of the budget and one handle under a sixth of it. Append handles flush
        log blocks; merge handles (COW) spill their rows to local disk and merge them with the
        base file at close, within their share of the budget (see ``MergeHandle``).
        """
        budget = self.plan.task_budget_bytes
        per_handle = min(self.plan.handle_budget_bytes, budget // 6)
        for h in self.handles.values():
            if h.buffered_bytes >= per_handle:
                h.flush()
                self.flushes += 1
        total = sum(h.buffered_bytes for h in self.handles.values())
        if total <= budget // 3:
            return
        for h in sorted(self.handles.values(), key=lambda x: -x.buffered_bytes):
            if total <= budget // 6:
                break
            total -= h.buffered_bytes
            h.flush()
            self.flushes += 1

    def touched_partitions(self) -> list[str]:
        """Partition paths of the rows this task has seen."""
        return sorted(self._seen_partitions)

    @property
    def buffered_bytes(self) -> int:
        return sum(h.buffered_bytes for h in self.handles.values())

    def close(self) -> list[WriteStatus]:
        """Flush and close every handle; the WriteStatuses go to the driver's commit."""
        out = []
        for h in self.handles.values():
            st = h.close()
            if st is not None:
                if st.partition_path or self.plan.partition_fields:
                    _write_partition_metadata(self.storage, st.partition_path, self.plan.instant)
                else:
                    _write_partition_metadata(self.storage, "", self.plan.instant)
                out.append(st)
        self.handles.clear()
        return out


# ------------------------------------------------------------------------------------------------
def _compaction_targets(
    view: FileSystemView, timeline: Timeline, partitions: Iterable[str]
) -> tuple[dict[tuple[str, str], str], set[str]]:
    """The current base instant of each file group of ``partitions`` that has one, and the
    log files named by any compaction plan on the timeline.

    A file group's current base instant is its latest committed base file's instant or, if
    later, the latest pending compaction planned on it: new log files belong there (Hudi's
    ``getLatestFileSlices`` opens the slice of a pending compaction at its requested time).
    """
    targets: dict[tuple[str, str], str] = {}
    parts = set(partitions)
    first = timeline.start_time() or ""

    def committed(t: str) -> bool:  # completed, or archived (older than the active timeline)
        return timeline.is_completed(t) or (not timeline.contains(t) and t < first)

    for p in parts:
        for g in view.file_groups(p):
            done = [b.instant_time for b in g.base_files if committed(b.instant_time)]
            if done:
                targets[(p, g.file_id)] = max(done)
    planned: set[str] = set()
    for c in timeline.filter(lambda i: timeline.origin_action(i.requested_time) == "compaction"):
        plan = timeline.read_compaction_plan(c.requested_time)
        for op in plan.operations or []:
            planned.update(op.log_file_rel_paths)
            k = (op.partition_path or "", op.file_id or "")
            if not c.is_completed and k[0] in parts and c.requested_time > targets.get(k, ""):
                targets[k] = c.requested_time
    return targets, planned


def retarget_logs(
    storage: Storage,
    stats: Sequence[WriteStat],
    marker_instant: str | None = None,
    timeline: Timeline | None = None,
) -> list[WriteStat]:
    """Move log files written against a file slice that a compaction has since replaced into
    the compaction's slice; returns the stats with the new paths.

    A write that started before compaction C was scheduled names its logs after the slice it
    saw; C's plan holds only the logs that existed when it was scheduled (never the logs of a
    pending write), so once C completes those logs would belong to a superseded slice and drop
    out of every read. Renamed to base instant C after C's own logs, they are read on top of
    C's base file -- as Hudi's writers, which write into the pending compaction's slice, do.
    A log whose slice was taken back (a compaction unscheduled) moves to the current slice the
    same way. Logs that a compaction plan names are left where the plan expects them.

    Args:
        marker_instant: the pending write owning the files (a marker is made for each new
            name, so that a rollback finds it); None for files of a completed write.
        timeline: the timeline, if the caller just loaded it.
    """
    deltas = [
        (i, s, parse_log_file_name((s.path or "").rsplit("/", 1)[-1]))
        for i, s in enumerate(stats)
        if s.path
    ]
    deltas = [(i, s, n) for i, s, n in deltas if n is not None]
    if not deltas:
        return list(stats)
    timeline = timeline if timeline is not None else Timeline.load(storage, 1)
    view = FileSystemView(storage, TableConfig.load(storage))
    targets, planned = _compaction_targets(
        view, timeline, {s.partition_path or "" for _, s, _ in deltas}
    )
    out = list(stats)
    top: dict[tuple[str, str, str], int] | None = None
    for i, s, name in deltas:
        assert name is not None
        p, fid = s.partition_path or "", name.file_id
        target = targets.get((p, fid))
        if target is None or target == name.instant_time or (s.path or "") in planned:
            continue
        if top is None:  # the log versions per slice, from the same listing
            top = {}
            for part in {q for q, _ in targets}:
                for g in view.file_groups(part):
                    for lf in g.log_files:
                        k = (part, g.file_id, lf.instant_time)
                        top[k] = max(top.get(k, 0), lf.name.version)
        k = (p, fid, target)
        version = top[k] = top.get(k, 0) + 1
        new_name = log_file_name(fid, target, version, name.write_token or "0-0-0")
        new_path = f"{p}/{new_name}" if p else new_name
        if marker_instant is not None:
            create_marker(storage, marker_instant, new_path, "APPEND")
        storage.rename(s.path or "", new_path)
        out[i] = dataclasses.replace(
            s, path=new_path, log_version=version, log_files=[new_name], prev_commit=target
        )
    return out
