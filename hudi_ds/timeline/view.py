"""``TableState``: one opened table -- its ``hoodie.properties``, active timeline and visibility.

An operation (a write, a read, a table service) opens the table once and passes this object
down, as Java passes a ``HoodieTableMetaClient`` and hudi-rs a ``TimelineView``: the properties
are read once, the timeline is listed once, and both are refreshed only where Hudi re-reads them
(:meth:`TableState.reload_timeline` before a writer's conflict check and commit, as Java's
``TransactionUtils.resolveWriteConflictIfAny`` reloads the active timeline; :meth:`refresh`
after another writer changed the table).

:class:`Visibility` -- which instants' files a query may see -- is computed here from the
timeline, and used by the file-system view of :mod:`hudi_ds.table.fs_view`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import pyarrow as pa

from hudi_ds.schema.avro import avro_to_arrow_schema
from hudi_ds.schema.meta import with_meta_fields
from hudi_ds.storage import Storage
from hudi_ds.storage_types import FileInfo
from hudi_ds.table_config import TableConfig
from hudi_ds.timeline.instant import RESTORE, Instant, normalize_instant
from hudi_ds.timeline.timeline import Timeline
from hudi_ds.timeline.writer import TimelineWriter


@dataclass(frozen=True)
class Visibility:
    """Which instants' files and log blocks a query sees.

    Attributes:
        instants: requested times of the visible completed data instants.
        completion: completion time of each visible instant (layout 2; requested time in layout 1).
        first_active: where the active timeline starts (``Timeline.start_time``, its first
            non-savepointed commit-family instant); older files count as archived (committed)
            instants.
        as_of: the time a time-travel read is as of; archived instants after it are not seen
            (archival beyond savepoints leaves archived commits newer than a savepointed one).
        replaced: file ids replaced (insert_overwrite / clustering) by visible replacecommits,
            per partition.
        pending_compactions: requested times of compactions scheduled but not completed.
    """

    instants: frozenset[str]
    completion: dict[str, str] = field(default_factory=dict)
    first_active: str | None = None
    replaced: dict[str, frozenset[str]] = field(default_factory=dict)
    pending_compactions: frozenset[str] = frozenset()
    as_of: str | None = None

    def sees(self, instant_time: str) -> bool:
        if instant_time in self.instants:
            return True
        if self.first_active is None or instant_time >= self.first_active:
            return False
        return self.as_of is None or instant_time <= self.as_of

    def completion_of(self, instant_time: str) -> str:
        return self.completion.get(instant_time, instant_time)


class TableState:
    """An opened table: storage, ``hoodie.properties`` and the active timeline (loaded lazily).

    Args:
        storage: the table's storage.
        config: its ``hoodie.properties`` (read by :meth:`open`).
        timeline: an already loaded active timeline (default: listed on first use).
    """

    def __init__(
        self, storage: Storage, config: TableConfig, timeline: Timeline | None = None
    ) -> None:
        self.storage = storage
        self.config = config
        self._timeline = timeline
        self._schema: pa.Schema | None = None
        # Installed by the write layer when the table keeps a metadata table: every
        # timeline writer of this state calls it before completing an instant.
        self.before_complete: Callable[[Instant, bytes], None] | None = None
        # Set while a table service holds the table lock: fence(at) raises LockLostError
        # unless the lock was held at monotonic time ``at`` (None: now) -- the metadata
        # table's compaction and clean check it before they write and after they complete.
        self.fence: Callable[[float | None], None] | None = None
        # The metadata table as this state's commit left it (its config, the timeline its
        # writer listed plus the instant files it wrote), for the commit's table services,
        # taken once (:meth:`take_metadata`); None: they open it.
        self.metadata: TableState | None = None

    def take_metadata(self) -> TableState | None:
        """:attr:`metadata`, once: a service that changes the metadata table after it makes
        the next one open it again."""
        out, self.metadata = self.metadata, None
        return out

    @classmethod
    def open(cls, path: str | Storage) -> TableState:
        """Read ``hoodie.properties`` of the table at ``path`` (the timeline is listed lazily).

        Raises:
            TableNotFoundError: no Hudi table there.
        """
        storage = path if isinstance(path, Storage) else Storage(str(path))
        return cls(storage, TableConfig.load(storage))

    # -- timeline -------------------------------------------------------------------------------
    @property
    def layout(self) -> int:
        """The timeline layout version (1 for table version 6, 2 for 8 and 9)."""
        return self.config.timeline_layout_version

    @property
    def timeline(self) -> Timeline:
        """The active timeline as last listed (listed on first use)."""
        if self._timeline is None:
            self._timeline = self.load_timeline()
        return self._timeline

    def load_timeline(self) -> Timeline:
        """List the active timeline afresh, without changing this state."""
        return Timeline.load(self.storage, self.layout, self.config.timeline_path)

    def reload_timeline(self) -> Timeline:
        """List the active timeline again and keep it (a writer's conflict check, commit)."""
        self._timeline = self.load_timeline()
        self._schema = None
        return self._timeline

    def refresh(self) -> None:
        """Re-read ``hoodie.properties`` and forget the timeline (another writer changed both)."""
        self.config = TableConfig.load(self.storage)
        self._timeline = None
        self._schema = None

    def timeline_writer(self) -> TimelineWriter:
        """A writer of instant files on this table's timeline that keeps this state current.

        Each instant file it creates is added to the cached timeline (no listing); deleting
        instant files (rollback) makes the next use list the timeline again.
        """
        return TimelineWriter(
            self.storage,
            self.layout,
            self.config.timeline_path,
            on_write=self._wrote,
            on_delete=self._forget_timeline,
            before_complete=self.before_complete,
        )

    def _wrote(self, info: FileInfo) -> None:
        if self._timeline is not None:
            self._timeline = self._timeline.with_file(info)
            self._schema = None

    def _forget_timeline(self) -> None:
        self._timeline = None
        self._schema = None

    # -- schema ---------------------------------------------------------------------------------
    def latest_avro_schema(self) -> str | None:
        """The writer schema of the latest commit that recorded one, else the create schema."""
        tl = self.timeline
        for inst in reversed(tl.commits()):
            s = tl.read_extra_metadata(inst).get("schema")
            if s:
                return s
        return self.config.create_schema

    @property
    def schema(self) -> pa.Schema:
        """The table schema (Arrow), with Hudi's meta fields first when the table keeps them."""
        if self._schema is None:
            avro = self.latest_avro_schema()
            schema = pa.schema([]) if avro is None else avro_to_arrow_schema(avro)
            if avro is not None and self.config.populate_meta_fields:
                schema = with_meta_fields(schema)
            self._schema = schema
        return self._schema

    # -- visibility -----------------------------------------------------------------------------
    def visibility(self, as_of: str | None = None) -> Visibility:
        """The instants a read as of ``as_of`` (default: the latest) may see."""
        tl = self.timeline
        commits = list(tl.commits())
        if as_of is not None:
            as_of = normalize_instant(as_of)
            commits = [i for i in commits if i.requested_time <= as_of]
        restoring = [
            tl.read_restore_plan(r).savepoint_to_restore_timestamp
            for r in tl.pending().filter_actions(RESTORE)
        ]
        if restoring:
            # A restore in progress (killed, or running) undoes every instant after its
            # savepoint, newest first. The states in between may lack files the cleaner removed
            # (a savepoint keeps only its own), so a read sees the restore's outcome: the table
            # as of the savepoint.
            sp = min((t for t in restoring if t), default=None)
            if sp is not None:
                commits = [i for i in commits if i.requested_time <= sp]
                as_of = sp if as_of is None else min(as_of, sp)
        return self.visibility_of(commits, as_of)

    def visibility_of(self, commits: Sequence[Instant], as_of: str | None = None) -> Visibility:
        """The visibility of exactly ``commits`` (completed data instants of this timeline),
        for a read as of ``as_of`` (default: the latest)."""
        tl = self.timeline
        visible = frozenset(i.requested_time for i in commits)
        replaced: dict[str, set[str]] = {}
        for i in commits:
            if i.action == "replacecommit":
                md = tl.read_commit_metadata(i)
                for p, fids in (md.partition_to_replace_file_ids if md else {}).items():
                    replaced.setdefault(p, set()).update(fids)
        # files older than the first non-savepointed commit-family instant belong to archived
        # commits (Java's containsOrBeforeTimelineStarts, see Timeline.first_non_savepoint_commit)
        first = tl.start_time()
        # a compaction that completed after the read's instant is pending as far as the read
        # is concerned (logs written on top of it merge into the slice before it)
        pending = {i.requested_time for i in tl.pending_compactions()}
        pending.update(
            t
            for t in (i.requested_time for i in tl.commits())
            if t not in visible and tl.origin_action(t) == "compaction"
        )
        return Visibility(
            instants=visible,
            completion={i.requested_time: i.completion_time or i.requested_time for i in commits},
            first_active=first,
            as_of=as_of,
            replaced={p: frozenset(v) for p, v in replaced.items()},
            pending_compactions=frozenset(pending),
        )
