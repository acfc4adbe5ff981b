"""The active timeline (loader and queries), the archived timeline, and the writer's transitions.

* :class:`Timeline` -- an immutable, sorted view of instants. :meth:`Timeline.load` lists the
  instant files of a table (layout 1: ``.hoodie/``; layout 2: ``.hoodie/timeline/``) and
  collapses the states of each instant to its latest one. Filters return new views that share
  the file listing and the metadata cache.
* :class:`ArchivedTimeline` -- what was archived; :func:`load_lsm_history` reads the v8+ LSM
  ``.hoodie/timeline/history/*.parquet``. The v6 archive files are Hudi log files, so they are
  read one layer up, in :mod:`hudi_ds.log.archive`, whose ``load_archived`` loads the archived
  timeline of either layout.
* :class:`TimelineWriter` -- requested -> inflight -> completed transitions. The completed file
  is the commit point: it is written last, atomically (write to a temp name, then rename).

Visibility order ("which instants are done as of time T") is defined once, in
:meth:`Timeline.visibility_time`: the requested time in layout 1 (its file names carry no
completion time; Java 0.x orders by requested time too), the completion time in layout 2.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar, cast, overload

from hudi_ds.errors import (
    CorruptFileError,
    InstantNotFoundError,
    TimelineError,
)
from hudi_ds.storage import FileInfo, Storage
from hudi_ds.timeline.instant import (
    ACTIONS,
    CLEAN,
    CLUSTERING,
    COMMIT,
    COMPACTION,
    DELTA_COMMIT,
    INDEXING,
    LOG_COMPACTION,
    MAX_INSTANT_AHEAD_MS,
    REPLACE_COMMIT,
    RESTORE,
    ROLLBACK,
    SAVEPOINT,
    Instant,
    State,
    TimeZoneLike,
    completed_action,
    format_instant_time,
    new_instant_time,
)
from hudi_ds.timeline.lsm import parse_lsm_file_name, parse_manifest_name
from hudi_ds.timeline.metadata import (
    AvroRecord,
    CleanerPlan,
    CleanMetadata,
    CommitMetadata,
    CompactionPlan,
    IndexCommitMetadata,
    IndexPlan,
    RequestedReplaceMetadata,
    RestoreMetadata,
    RestorePlan,
    RollbackMetadata,
    RollbackPlan,
    SavepointMetadata,
)

__all__ = [
    "DATA_ACTIONS",
    "HOODIE_FOLDER",
    "ArchivedEntry",
    "ArchivedTimeline",
    "Timeline",
    "TimelineWriter",
    "load_lsm_history",
    "timeline_dir",
]

HOODIE_FOLDER = ".hoodie"
# completed instants of these actions make data visible
DATA_ACTIONS = (COMMIT, DELTA_COMMIT, REPLACE_COMMIT)

# actions that may share one requested time (pending action -> completed action)
_FAMILIES = {
    COMMIT: frozenset({COMMIT, COMPACTION}),
    COMPACTION: frozenset({COMMIT, COMPACTION}),
    DELTA_COMMIT: frozenset({DELTA_COMMIT, LOG_COMPACTION}),
    LOG_COMPACTION: frozenset({DELTA_COMMIT, LOG_COMPACTION}),
    REPLACE_COMMIT: frozenset({REPLACE_COMMIT, CLUSTERING}),
    CLUSTERING: frozenset({REPLACE_COMMIT, CLUSTERING}),
}


def _family(action: str) -> frozenset[str]:
    return _FAMILIES.get(action, frozenset({action}))


def _full_precision(instant_time: str) -> str:
    """``instant_time`` as a 17-digit time for ordering (a 14-digit one is its last ms)."""
    return instant_time + "999" if len(instant_time) == 14 else instant_time


def timeline_dir(layout_version: int, timeline_path: str | None = None) -> str:
    """The folder of the active timeline, relative to the base path.

    Args:
        layout_version: 1 (instant files directly in ``.hoodie``) or 2 (``.hoodie/timeline``).
        timeline_path: an explicit folder; relative to the base path when it starts with
            ``.hoodie`` (as ``TableConfig.timeline_path`` returns it), otherwise taken as the
            value of ``hoodie.timeline.path``, i.e. relative to ``.hoodie``.
    """
    if timeline_path:
        p = timeline_path.strip("/")
        if p == HOODIE_FOLDER or p.startswith(HOODIE_FOLDER + "/"):
            return p
        return f"{HOODIE_FOLDER}/{p}"
    if layout_version == 1:
        return HOODIE_FOLDER
    if layout_version == 2:
        return f"{HOODIE_FOLDER}/timeline"
    raise ValueError(f"unsupported timeline layout version {layout_version!r}")


@dataclass(frozen=True)
class _InstantFile:
    instant: Instant  # as parsed from the file name
    info: FileInfo


_Content = bytes | Mapping[str, Any] | None
A = TypeVar("A", bound=AvroRecord)


def _add_file(
    files: dict[str, dict[State, _InstantFile]],
    savepoints: dict[str, dict[State, _InstantFile]],
    info: FileInfo,
    layout_version: int,
) -> None:
    inst = Instant.parse(info.name, layout_version)
    if inst is None:
        return
    if inst.action == SAVEPOINT:
        savepoints.setdefault(inst.requested_time, {})[inst.state] = _InstantFile(inst, info)
        return
    states = files.setdefault(inst.requested_time, {})
    prev = states.get(inst.state)
    # two completed files of one instant (legacy + new name): keep the one with a time
    if prev is None or (prev.instant.completion_time is None and inst.completion_time):
        states[inst.state] = _InstantFile(inst, info)


def _instants_of(
    files: Mapping[str, Mapping[State, _InstantFile]], layout_version: int, timezone: TimeZoneLike
) -> list[Instant]:
    instants = []
    for ts, states in files.items():
        latest = states[max(states, key=lambda s: s.rank)]
        inst = latest.instant
        if inst.is_completed:
            if layout_version == 1:
                inst = Instant(ts, inst.action, inst.state, ts)
            elif inst.completion_time is None:
                done = format_instant_time(latest.info.mtime_ms, timezone)
                inst = Instant(ts, inst.action, inst.state, done)
        instants.append(inst)
    return instants


class Timeline(Sequence[Instant]):
    """An immutable, sorted view of a table's instants.

    Build it with :meth:`load`; every filter returns a new view. Completed instants of a loaded
    timeline always have a ``completion_time``: the one in the file name (layout 2), the file's
    mtime for legacy layout-2 files without one (as Java does), and the requested time in
    layout 1 (whose file names have none; the mtime is available via :meth:`mtime_ms`).

    Args:
        instants: the instants of the view (sorted here).
        layout_version: timeline layout, 1 or 2.
    """

    def __init__(
        self,
        instants: Iterable[Instant] = (),
        layout_version: int = 1,
        *,
        _storage: Storage | None = None,
        _path: str | None = None,
        _files: Mapping[str, Mapping[State, _InstantFile]] | None = None,
        _cache: dict[tuple[str, str, State], Any] | None = None,
        _timezone: TimeZoneLike = "UTC",
        _savepoints: Mapping[str, Mapping[State, _InstantFile]] | None = None,
        _folders: frozenset[str] | None = None,
    ) -> None:
        if layout_version not in (1, 2):
            raise ValueError(f"unsupported timeline layout version {layout_version!r}")
        self._timezone = _timezone
        # savepoints share the requested time of the commit they save (T.savepoint next to
        # T.commit), so they are kept apart from the instants
        self._savepoints: Mapping[str, Mapping[State, _InstantFile]] = _savepoints or {}
        # the sub folders the listing of the timeline folder showed (None: not listed)
        self._folders = _folders
        self._instants: tuple[Instant, ...] = tuple(sorted(instants))
        self._layout = layout_version
        self._storage = _storage
        self._path = _path
        self._files: Mapping[str, Mapping[State, _InstantFile]] = _files or {}
        self._cache: dict[tuple[str, str, State], Any] = {} if _cache is None else _cache
        self._by_time = {i.requested_time: i for i in self._instants}

    # -- loading ------------------------------------------------------------------------------
    @classmethod
    def load(
        cls,
        storage: Storage,
        layout_version: int,
        timeline_path: str | None = None,
        *,
        timezone: TimeZoneLike = "UTC",
    ) -> Timeline:
        """Load the active timeline of the table at ``storage``.

        Args:
            storage: the table's storage (paths relative to the base path).
            layout_version: ``hoodie.timeline.layout.version`` (1 for v6, 2 for v8/v9).
            timeline_path: see :func:`timeline_dir`.
            timezone: time zone used to format the mtime of legacy layout-2 completed files.
        """
        path = timeline_dir(layout_version, timeline_path)
        files: dict[str, dict[State, _InstantFile]] = {}
        savepoints: dict[str, dict[State, _InstantFile]] = {}
        listed, dirs = storage.list_entries(path)
        for info in listed:
            _add_file(files, savepoints, info, layout_version)
        return cls(
            _instants_of(files, layout_version, timezone),
            layout_version,
            _storage=storage,
            _path=path,
            _files=files,
            _timezone=timezone,
            _savepoints=savepoints,
            _folders=frozenset(d.rstrip("/").rpartition("/")[2] for d in dirs),
        )

    def with_file(self, info: FileInfo) -> Timeline:
        """This timeline plus one instant file just written, as a new :meth:`load` would show it.

        A writer that created ``info`` itself keeps its timeline current this way, without
        listing the timeline folder again.
        """
        files = {ts: dict(states) for ts, states in self._files.items()}
        savepoints = {ts: dict(states) for ts, states in self._savepoints.items()}
        _add_file(files, savepoints, info, self._layout)
        return Timeline(
            _instants_of(files, self._layout, self._timezone),
            self._layout,
            _storage=self._storage,
            _path=self._path,
            _files=files,
            _cache=self._cache,
            _timezone=self._timezone,
            _savepoints=savepoints,
            _folders=self._folders,
        )

    def listed_folder(self, rel: str) -> bool | None:
        """Whether the folder ``rel`` (relative to the base path) was there when the timeline
        was listed, if ``rel`` is directly in the timeline folder (``.hoodie/metadata`` in
        layout 1: the listing answers without another request); else None (not known)."""
        parent, _, name = rel.rstrip("/").rpartition("/")
        if self._folders is None or self._path is None or parent != self._path.strip("/"):
            return None
        return name in self._folders

    def same_listing(self, other: Timeline) -> bool:
        """Whether ``other`` comes from the same listing of the timeline folder as this one:
        one :meth:`load`, plus the instant files its writer wrote since (:meth:`with_file`).
        A listing of the partitions made after such a timeline was loaded can serve any
        timeline of the same listing (nothing another writer committed is visible in one and
        missing from the other)."""
        return self._cache is other._cache

    def reload(self) -> Timeline:
        """A fresh :meth:`load` of the same timeline folder."""
        storage = self._require_storage()
        return Timeline.load(storage, self._layout, self._path, timezone=self._timezone)

    def _derive(self, instants: Iterable[Instant]) -> Timeline:
        return Timeline(
            instants,
            self._layout,
            _storage=self._storage,
            _path=self._path,
            _files=self._files,
            _cache=self._cache,
            _timezone=self._timezone,
            _savepoints=self._savepoints,
            _folders=self._folders,
        )

    # -- basics -------------------------------------------------------------------------------
    @property
    def layout_version(self) -> int:
        """The timeline layout version (1 or 2)."""
        return self._layout

    @property
    def path(self) -> str | None:
        """The timeline folder relative to the base path (None if not loaded from storage)."""
        return self._path

    @property
    def instants(self) -> tuple[Instant, ...]:
        """The instants of this view, sorted by (requested time, state)."""
        return self._instants

    def __iter__(self) -> Iterator[Instant]:
        return iter(self._instants)

    def __len__(self) -> int:
        return len(self._instants)

    @overload
    def __getitem__(self, index: int) -> Instant: ...

    @overload
    def __getitem__(self, index: slice) -> Timeline: ...

    def __getitem__(self, index: int | slice) -> Instant | Timeline:
        if isinstance(index, slice):
            return self._derive(self._instants[index])
        return self._instants[index]

    def __reversed__(self) -> Iterator[Instant]:
        return reversed(self._instants)

    def __contains__(self, item: object) -> bool:
        if isinstance(item, Instant):
            return item in self._instants
        return isinstance(item, str) and item in self._by_time

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Timeline):
            return NotImplemented
        return self._layout == other._layout and self._instants == other._instants

    def __hash__(self) -> int:
        return hash((self._layout, self._instants))

    def __repr__(self) -> str:
        body = ", ".join(str(i) for i in self._instants)
        return f"Timeline(layout={self._layout}, [{body}])"

    def first(self) -> Instant | None:
        """The first instant (by requested time), or None."""
        return self._instants[0] if self._instants else None

    def last(self) -> Instant | None:
        """The last instant (by requested time), or None."""
        return self._instants[-1] if self._instants else None

    def get(self, requested_time: str) -> Instant | None:
        """The instant requested at ``requested_time`` in this view, or None."""
        return self._by_time.get(requested_time)

    # -- filters ------------------------------------------------------------------------------
    def filter(self, predicate: Callable[[Instant], bool]) -> Timeline:
        """The instants for which ``predicate`` is true."""
        return self._derive(i for i in self._instants if predicate(i))

    def completed(self) -> Timeline:
        """Completed instants."""
        return self.filter(lambda i: i.is_completed)

    def pending(self) -> Timeline:
        """Requested and inflight instants."""
        return self.filter(lambda i: not i.is_completed)

    def filter_actions(self, *actions: str) -> Timeline:
        """Instants whose action is one of ``actions`` (completed compactions are ``commit``)."""
        wanted = frozenset(actions)
        return self.filter(lambda i: i.action in wanted)

    def commits(self) -> Timeline:
        """Completed commit / deltacommit / replacecommit instants: those that make data visible."""
        return self.filter(lambda i: i.is_completed and i.action in DATA_ACTIONS)

    def pending_compactions(self) -> Timeline:
        """Requested and inflight compaction instants."""
        return self.filter(lambda i: not i.is_completed and i.action == COMPACTION)

    def pending_log_compactions(self) -> Timeline:
        """Requested and inflight log-compaction instants."""
        return self.filter(lambda i: not i.is_completed and i.action == LOG_COMPACTION)

    # -- the visibility rule ------------------------------------------------------------------
    def visibility_time(self, instant: Instant) -> str:
        """The time at which a completed instant counts as done, for "as of T" questions.

        Layout 1: the requested time (file names carry no completion time). Layout 2: the
        completion time. This is the only place that rule lives.
        """
        if self._layout == 1 or instant.completion_time is None:
            return instant.requested_time
        return instant.completion_time

    def completed_before_or_at(self, ts: str) -> Timeline:
        """Completed instants done at or before ``ts`` (see :meth:`visibility_time`)."""
        return self.filter(lambda i: i.is_completed and self.visibility_time(i) <= ts)

    def last_completed(self, *actions: str) -> Instant | None:
        """The completed instant that became visible last (optionally among ``actions``)."""
        done = [
            i for i in self._instants if i.is_completed and (not actions or i.action in actions)
        ]
        if not done:
            return None
        return max(done, key=lambda i: (self.visibility_time(i), i.requested_time))

    def latest_time(self) -> str | None:
        """The greatest instant time this view shows (None if it shows none): every requested
        time, pending instants' included, and every completion time, savepoints' too.

        New instants are requested after it and completion times are chosen after it
        (:meth:`TimelineWriter.new_completion_time`), so a writer whose clock lags another's
        never dates an instant into the timeline's past. A 14-digit (second precision) time
        counts as its last millisecond, as :func:`~hudi_ds.timeline.instant.new_instant_time`
        reads it.
        """
        times = [i.requested_time for i in self._instants]
        times += [i.completion_time for i in self._instants if i.completion_time]
        for states in self._savepoints.values():
            for f in states.values():
                times.append(f.instant.requested_time)
                if f.instant.completion_time:
                    times.append(f.instant.completion_time)
        return max(times, key=_full_precision, default=None)

    # -- point queries --------------------------------------------------------------------------
    def contains(self, requested_time: str) -> bool:
        """True if an instant (any state) was requested at ``requested_time``."""
        return requested_time in self._by_time

    def is_completed(self, requested_time: str) -> bool:
        """True if the instant requested at ``requested_time`` is completed."""
        i = self._by_time.get(requested_time)
        return i is not None and i.is_completed

    def completion_time(self, requested_time: str) -> str | None:
        """Completion time of a completed instant (requested time in layout 1), else None."""
        i = self._by_time.get(requested_time)
        if i is None or not i.is_completed:
            return None
        return i.completion_time or i.requested_time

    def first_active_time(self) -> str | None:
        """Requested time of the first instant of this view, any action (None if empty).

        Where the timeline *starts* for "is it committed?" questions is :meth:`start_time`.
        """
        return self._instants[0].requested_time if self._instants else None

    def first_non_savepoint_commit(self) -> Instant | None:
        """The instant this timeline starts at: files of older instants that are on no timeline
        belong to archived, hence committed, instants.

        That is the first commit, delta commit, replace commit or compaction (any state) that
        no savepoint carries. Clean and rollback instants do not count: they are archived by
        their own count, and an old one left active must not hide archived commits. Savepointed
        commits do not count either: archival beyond savepoints
        (``hoodie.archive.beyond.savepoint``) keeps a savepointed commit active and archives
        the commits around it, leaving holes. Java's ``BaseHoodieTimeline
        .findFirstNonSavepointCommit``: "there could be holes in the timeline due to archival
        and savepoint interplay. So, the first non-savepoint commit is considered as beginning
        of the active timeline" (used by ``isBeforeTimelineStarts`` /
        ``containsOrBeforeTimelineStarts``). Java's file-system view asks that of its write
        timeline (``getWriteTimeline``), which holds no savepoint instants, and so starts at the
        savepointed commit; the savepoints are known to every view here, so readers, the
        cleaner and the writer all skip them. When every such instant is savepointed (nothing
        after them was archived, e.g. after a restore), the first of them.
        """
        family = [i for i in self._instants if i.action in (*DATA_ACTIONS, COMPACTION)]
        if not family:
            return None
        return next((i for i in family if i.requested_time not in self._savepoints), family[0])

    def start_time(self) -> str | None:
        """Requested time of :meth:`first_non_savepoint_commit` (None if there is none)."""
        start = self.first_non_savepoint_commit()
        return start.requested_time if start is not None else None

    def is_before_start(self, requested_time: str) -> bool:
        """True if the instant is older than where this timeline starts (archived, committed);
        Java's ``isBeforeTimelineStarts``."""
        start = self.start_time()
        return start is not None and requested_time < start

    def contains_or_before_start(self, requested_time: str) -> bool:
        """True if the instant is in this view or older than its start (Java's
        ``containsOrBeforeTimelineStarts``)."""
        return self.contains(requested_time) or self.is_before_start(requested_time)

    def origin_action(self, requested_time: str) -> str | None:
        """The action the instant was requested as (``compaction`` for a completed compaction,
        ``clustering`` for a completed layout-2 clustering), from its pending files."""
        states = self._files.get(requested_time, {})
        for state in (State.REQUESTED, State.INFLIGHT, State.COMPLETED):
            if state in states:
                return states[state].instant.action
        i = self._by_time.get(requested_time)
        return None if i is None else i.action

    def file_paths(self, requested_time: str) -> dict[State, str]:
        """Paths (relative to the base path) of the instant's files, per state."""
        return {s: f.info.path for s, f in self._files.get(requested_time, {}).items()}

    def mtime_ms(self, requested_time: str) -> int | None:
        """Modification time of the instant's latest-state file (ms since the epoch)."""
        states = self._files.get(requested_time)
        if not states:
            return None
        return states[max(states, key=lambda s: s.rank)].info.mtime_ms

    # -- contents ------------------------------------------------------------------------------
    def _require_storage(self) -> Storage:
        if self._storage is None:
            raise TimelineError("this timeline was not loaded from storage")
        return self._storage

    def _content(self, requested_time: str, state: State, actions: Iterable[str]) -> _Content:
        """The raw content of the instant's ``state`` file, if its action is one of ``actions``."""
        wanted = frozenset(actions)
        f = self._files.get(requested_time, {}).get(state)
        if f is None or f.instant.action not in wanted:
            raise InstantNotFoundError(
                f"no {state.value.lower()} {'/'.join(sorted(wanted))} instant file for "
                f"{requested_time} in {self._path}"
            )
        storage = self._require_storage()
        try:
            return storage.read_bytes(f.info.path)
        except FileNotFoundError as e:
            raise InstantNotFoundError(f"instant file vanished: {f.info.path}") from e

    def _where(self, requested_time: str, state: State) -> str:
        f = self._files.get(requested_time, {}).get(state)
        return f.info.path if f is not None else f"{requested_time} ({state.value.lower()})"

    def _cached(self, kind: str, ts: str, state: State, make: Callable[[], Any]) -> Any:
        key = (kind, ts, state)
        if key not in self._cache:
            try:
                self._cache[key] = make()
            except CorruptFileError as e:
                raise CorruptFileError(f"{self._where(ts, state)}: {e}") from e
        return self._cache[key]

    def _read_record(self, cls: type[A], ts: str, state: State, actions: Iterable[str]) -> A:
        def make() -> A:
            data = self._content(ts, state, actions)
            if data is None:
                return cls()
            if isinstance(data, bytes | bytearray):
                return cls.from_bytes(bytes(data))
            return cls.from_avro(data)

        return cast(A, self._cached(cls.__name__, ts, state, make))

    @staticmethod
    def _ts(instant: Instant | str) -> str:
        return instant if isinstance(instant, str) else instant.requested_time

    def _state_of(self, instant: Instant | str) -> State:
        if isinstance(instant, Instant):
            return instant.state
        i = self._by_time.get(instant)
        if i is not None:
            return i.state
        states = self._files.get(instant)
        if not states:
            raise InstantNotFoundError(f"no instant {instant} in {self._path}")
        return max(states, key=lambda s: s.rank)

    def read_commit_metadata(self, instant: Instant | str) -> CommitMetadata:
        """Commit metadata of a commit/deltacommit/replacecommit (cached).

        A completed instant reads its completed file, an inflight one its inflight file (the
        planned write stats); a requested one has no commit metadata (empty object).

        Raises:
            InstantNotFoundError: no such instant file.
            CorruptFileError: the file cannot be parsed (the message names it).
        """
        ts = self._ts(instant)
        state = self._state_of(instant)
        if state is State.REQUESTED:
            return CommitMetadata()
        actions = _family(COMMIT) | _family(DELTA_COMMIT) | _family(REPLACE_COMMIT)

        def make() -> CommitMetadata:
            data = self._content(ts, state, actions)
            if data is None:
                return CommitMetadata()
            if isinstance(data, bytes | bytearray):
                return CommitMetadata.from_bytes(bytes(data))
            return CommitMetadata.from_avro_record(data)

        return cast(CommitMetadata, self._cached("commit", ts, state, make))

    def read_compaction_plan(self, instant: Instant | str) -> CompactionPlan:
        """The plan of a (log) compaction, from its ``.requested`` file (any state)."""
        ts = self._ts(instant)
        return self._read_record(CompactionPlan, ts, State.REQUESTED, (COMPACTION, LOG_COMPACTION))

    def read_requested_replace(self, instant: Instant | str) -> RequestedReplaceMetadata:
        """The requested metadata of a replacecommit / clustering (the clustering plan)."""
        ts = self._ts(instant)
        return self._read_record(
            RequestedReplaceMetadata, ts, State.REQUESTED, (REPLACE_COMMIT, CLUSTERING)
        )

    def read_rollback_plan(self, instant: Instant | str) -> RollbackPlan:
        """The plan of a rollback (``T.rollback.requested``)."""
        return self._read_record(RollbackPlan, self._ts(instant), State.REQUESTED, (ROLLBACK,))

    def read_rollback_metadata(self, instant: Instant | str) -> RollbackMetadata:
        """The metadata of a completed rollback."""
        return self._read_record(RollbackMetadata, self._ts(instant), State.COMPLETED, (ROLLBACK,))

    def read_cleaner_plan(self, instant: Instant | str) -> CleanerPlan:
        """The plan of a clean (``T.clean.requested``)."""
        return self._read_record(CleanerPlan, self._ts(instant), State.REQUESTED, (CLEAN,))

    def read_clean_metadata(self, instant: Instant | str) -> CleanMetadata:
        """The metadata of a completed clean."""
        return self._read_record(CleanMetadata, self._ts(instant), State.COMPLETED, (CLEAN,))

    def savepoints(self) -> list[Instant]:
        """Savepoint instants (latest state of each), by requested time.

        A savepoint carries the requested time of the commit it saves, so savepoints are not
        among :attr:`instants`; completed ones protect that commit's files from the cleaner
        and its instants from archival.
        """
        out = []
        for ts in sorted(self._savepoints):
            states = self._savepoints[ts]
            out.append(states[max(states, key=lambda s: s.rank)].instant)
        return out

    def read_savepoint_metadata(self, instant: Instant | str) -> SavepointMetadata:
        """The metadata of a completed savepoint."""
        ts = self._ts(instant)
        f = self._savepoints.get(ts, {}).get(State.COMPLETED)
        if f is None:
            return self._read_record(SavepointMetadata, ts, State.COMPLETED, (SAVEPOINT,))

        def make() -> SavepointMetadata:
            storage = self._require_storage()
            try:
                return SavepointMetadata.from_bytes(storage.read_bytes(f.info.path))
            except FileNotFoundError as e:
                raise InstantNotFoundError(f"instant file vanished: {f.info.path}") from e

        return cast(SavepointMetadata, self._cached("savepoint", ts, State.COMPLETED, make))

    def read_restore_plan(self, instant: Instant | str) -> RestorePlan:
        """The plan of a restore (``T.restore.requested``)."""
        return self._read_record(RestorePlan, self._ts(instant), State.REQUESTED, (RESTORE,))

    def read_restore_metadata(self, instant: Instant | str) -> RestoreMetadata:
        """The metadata of a completed restore."""
        return self._read_record(RestoreMetadata, self._ts(instant), State.COMPLETED, (RESTORE,))

    def read_index_plan(self, instant: Instant | str) -> IndexPlan:
        """The plan of an indexing action."""
        return self._read_record(IndexPlan, self._ts(instant), State.REQUESTED, (INDEXING,))

    def read_index_commit_metadata(self, instant: Instant | str) -> IndexCommitMetadata:
        """The metadata of a completed indexing action."""
        return self._read_record(
            IndexCommitMetadata, self._ts(instant), State.COMPLETED, (INDEXING,)
        )

    # -- derived facts --------------------------------------------------------------------------
    def replaced_file_ids(self, as_of: str | None = None) -> dict[str, set[str]]:
        """Partition -> file ids replaced by completed replacecommits (visible at ``as_of``)."""
        view = self.commits().filter_actions(REPLACE_COMMIT)
        if as_of is not None:
            view = view.completed_before_or_at(as_of)
        out: dict[str, set[str]] = {}
        for inst in view:
            for partition, ids in self.read_commit_metadata(inst).replaced_file_ids().items():
                out.setdefault(partition, set()).update(ids)
        return out

    def rolled_back_instants(self) -> set[str]:
        """Instant times rolled back by the completed rollbacks of this view."""
        out: set[str] = set()
        for inst in self.completed().filter_actions(ROLLBACK):
            meta = self.read_rollback_metadata(inst)
            targets = meta.rolled_back_instants
            if not targets:  # empty metadata: fall back to the plan
                try:
                    plan = self.read_rollback_plan(inst)
                except InstantNotFoundError:
                    plan = RollbackPlan()
                if plan.instant_to_rollback is not None:
                    targets = [plan.instant_to_rollback.commit_time]
            out.update(t for t in targets if t)
        return out

    def latest_schema(self) -> str | None:
        """``extraMetadata.schema`` of the latest completed data instant that has one."""
        done = sorted(
            self.commits(), key=lambda i: (self.visibility_time(i), i.requested_time), reverse=True
        )
        for inst in done:
            schema = self.read_commit_metadata(inst).schema
            if schema:
                return schema
        return None


# -- archived timeline --------------------------------------------------------------------------


@dataclass(frozen=True)
class ArchivedEntry:
    """One archived instant.

    Attributes:
        instant: the archived (completed) instant.
        metadata: its completed content -- raw bytes (v8+ LSM history: the bytes of the original
            instant file) or a decoded Avro record (v6 archive: the ``HoodieArchivedMetaEntry``
            field matching the action).
        plan: the requested content (compaction / clustering / clean plans), same forms.
    """

    instant: Instant
    metadata: bytes | Mapping[str, Any] | None = None
    plan: bytes | Mapping[str, Any] | None = None


class ArchivedTimeline(Timeline):
    """The archived instants (completed only); ``read_*`` decode their archived contents."""

    def __init__(self, entries: Iterable[ArchivedEntry], layout_version: int) -> None:
        self._entries = {e.instant.requested_time: e for e in entries}
        super().__init__((e.instant for e in self._entries.values()), layout_version)

    @property
    def entries(self) -> dict[str, ArchivedEntry]:
        """Archived entries by requested time."""
        return dict(self._entries)

    def _derive(self, instants: Iterable[Instant]) -> Timeline:
        keep = {i.requested_time for i in instants}
        return ArchivedTimeline((e for ts, e in self._entries.items() if ts in keep), self._layout)

    def _content(self, requested_time: str, state: State, actions: Iterable[str]) -> _Content:
        e = self._entries.get(requested_time)
        wanted = {a for action in actions for a in (action, completed_action(action))}
        if e is None or e.instant.action not in wanted:
            raise InstantNotFoundError(f"no archived {'/'.join(sorted(wanted))} {requested_time}")
        if state is State.COMPLETED:
            return e.metadata
        if state is State.REQUESTED:
            return e.plan
        return None

    def _state_of(self, instant: Instant | str) -> State:
        return State.COMPLETED if isinstance(instant, str) else instant.state


def load_lsm_history(storage: Storage, folder: str) -> list[ArchivedEntry]:
    """The archived instants of timeline layout 2 (v8+): the LSM history in ``folder``.

    The manifest named by ``_version_`` lists the live ``<min>_<max>_<level>.parquet`` files
    (columns ``instantTime, completionTime, action, metadata, plan``); without a manifest, all
    parquet files are read (Hudi: ``ArchivedTimelineLoaderV2``). Layout 1's archive is Hudi log
    files, read by :mod:`hudi_ds.log.archive`, which also picks the loader by layout.

    Raises:
        CorruptFileError: a history file or the manifest cannot be read.
    """
    import pyarrow.parquet as pq

    names = _lsm_live_files(storage, folder)
    by_time: dict[str, ArchivedEntry] = {}
    for name in names:
        path = f"{folder}/{name}"
        try:
            with storage.open_input_file(path) as fh:
                table = pq.read_table(fh)
        except FileNotFoundError:
            continue
        except Exception as e:
            raise CorruptFileError(f"{path}: unreadable LSM timeline file: {e}") from e
        cols = set(table.column_names)
        rows = table.to_pylist()
        for row in rows:
            ts = row.get("instantTime")
            action = row.get("action")
            if not ts or not action:
                continue
            done = row.get("completionTime") if "completionTime" in cols else None
            inst = Instant(ts, completed_action(action), State.COMPLETED, done or ts)
            by_time[ts] = ArchivedEntry(inst, row.get("metadata"), row.get("plan"))
    return list(by_time.values())


def _lsm_live_files(storage: Storage, folder: str) -> list[str]:
    listed = storage.list_files(folder)
    version: int | None = None
    names = {f.name for f in listed}
    if "_version_" in names:
        try:
            version = int(storage.read_text(f"{folder}/_version_").strip())
        except (ValueError, FileNotFoundError):
            version = None
    if version is None:
        versions = [v for n in names if (v := parse_manifest_name(n)) is not None]
        version = max(versions) if versions else None
    if version is not None and f"manifest_{version}" in names:
        try:
            manifest = json.loads(storage.read_text(f"{folder}/manifest_{version}"))
            return [e["fileName"] for e in manifest.get("files", [])]
        except (ValueError, KeyError, TypeError) as e:
            raise CorruptFileError(f"{folder}/manifest_{version}: {e}") from e
    return sorted(n for n in names if parse_lsm_file_name(n) is not None)


# -- writer ------------------------------------------------------------------------------------


class TimelineWriter:
    """Instant transitions of a writer: requested -> inflight -> completed.

    Every transition creates a new file; nothing is renamed. The completed file is the commit
    point: :meth:`complete` writes it last and atomically (temp file + rename via
    :meth:`Storage.write_atomic`), so readers see either no completed instant or the whole
    metadata.

    Transitions do not list the timeline folder: as Java's ``HoodieActiveTimeline``
    (``createNewInstant`` creates its file if absent, ``transitionPendingState`` /
    ``transitionStateToComplete`` check that the file of the state before exists, then create
    the next one), they probe exact file names. In layout 1 every name of an instant time is
    known, so "time already taken" and "already completed" are probes too; in layout 2 a
    completed file carries its completion time in its name, so these two checks list the
    folder, and :meth:`complete` lists it to choose the completion time after every instant
    time on it (:meth:`new_completion_time`).

    Args:
        storage: the table's storage.
        layout_version: 1 or 2.
        timeline_path: see :func:`timeline_dir`.
        timezone: time zone of generated completion times (layout 2).
        on_write: called with each instant file this writer created (a :class:`TableState`
            keeps its timeline current with it).
        on_delete: called after this writer deleted instant files.
        before_complete: called with the completed instant and its content just before
            :meth:`complete` chooses the completion time and writes the completed file (on
            layout 2 the instant's ``completion_time`` is None: it is not known yet; layout 1
            passes the requested time, as it reports it) -- the metadata
            table's writer mirrors the instant there, so that it is complete in the metadata
            table before it is complete in the data table (Java's
            ``HoodieTableMetadataWriter.update`` inside ``commit``). An exception aborts the
            completion (the instant stays inflight).
    """

    def __init__(
        self,
        storage: Storage,
        layout_version: int,
        timeline_path: str | None = None,
        *,
        timezone: TimeZoneLike = "UTC",
        on_write: Callable[[FileInfo], None] | None = None,
        on_delete: Callable[[], None] | None = None,
        before_complete: Callable[[Instant, bytes], None] | None = None,
    ) -> None:
        if layout_version not in (1, 2):
            raise ValueError(f"unsupported timeline layout version {layout_version!r}")
        self.storage = storage
        self.layout_version = layout_version
        self.path = timeline_dir(layout_version, timeline_path)
        self.timezone = timezone
        self._on_write = on_write
        self._on_delete = on_delete
        self._before_complete = before_complete

    def _wrote(self, instant: Instant, content: bytes) -> None:
        if self._on_write is not None:
            now = int(time.time() * 1000)
            self._on_write(FileInfo(self.path_of(instant), len(content), now))

    def _deleted(self) -> None:
        if self._on_delete is not None:
            self._on_delete()

    def path_of(self, instant: Instant) -> str:
        """The path (relative to the base path) of ``instant``'s file."""
        return f"{self.path}/{instant.file_name(self.layout_version)}"

    def _files_of(self, requested_time: str) -> list[tuple[Instant, str]]:
        out = []
        for info in self.storage.list_files(self.path):
            inst = Instant.parse(info.name, self.layout_version)
            if inst is not None and inst.requested_time == requested_time:
                out.append((inst, info.path))
        return out

    def _names_of(self, requested_time: str) -> list[str]:
        """Every path an instant file of ``requested_time`` can have (layout 1: all are known)."""
        names = set()
        for action in ACTIONS:
            for state in State:
                try:
                    names.add(Instant(requested_time, action, state).file_name(self.layout_version))
                except ValueError:  # a state the action does not have (requested savepoint)
                    continue
        return sorted(f"{self.path}/{n}" for n in names)

    def _taken(self, requested_time: str) -> bool:
        """Whether any instant file of ``requested_time`` exists, whatever its action."""
        if self.layout_version == 1:
            return bool(self.storage.existing(self._names_of(requested_time)))
        return bool(self._files_of(requested_time))

    def is_completed(self, instant: Instant) -> bool:
        """Whether ``instant``'s time is completed now (its files probed, no listing on layout
        1): a rollback's last look at its target."""
        return self._completed(instant)

    def _completed(self, instant: Instant, listed: Timeline | None = None) -> bool:
        """Whether ``instant``'s time is completed (its own completed file, in layout 1;
        layout 2 asks ``listed``, a listing of the timeline folder, when given)."""
        ts = instant.requested_time
        if self.layout_version == 1:
            return self.storage.is_file(self.path_of(Instant(ts, instant.action, State.COMPLETED)))
        if listed is not None:
            return listed.is_completed(ts)
        return any(i.is_completed for i, _ in self._files_of(ts))

    def create_requested(self, instant: Instant, content: bytes = b"") -> bool:
        """Create the requested file of ``instant`` (atomic create-if-absent).

        Returns:
            False if any file of an instant with this requested time already exists (the
            caller must pick a new instant time), True if created.
        """
        req = Instant(instant.requested_time, instant.action, State.REQUESTED)
        if self._taken(req.requested_time):
            return False
        created = self.storage.create_if_absent(self.path_of(req), content)
        if created:
            self._wrote(req, content)
        return created

    def transition_to_inflight(self, instant: Instant, content: bytes = b"") -> Instant:
        """Create the inflight file of a requested instant.

        Raises:
            InstantNotFoundError: the requested file does not exist.
            TimelineError: the instant is already inflight or completed.
        """
        req = Instant(instant.requested_time, instant.action, State.REQUESTED)
        inflight = Instant(instant.requested_time, instant.action, State.INFLIGHT)
        if not self.storage.is_file(self.path_of(req)):
            raise InstantNotFoundError(f"{self.path_of(req)} does not exist")
        if self._completed(instant):
            raise TimelineError(f"instant {instant.requested_time} is already completed")
        if not self.storage.create_if_absent(self.path_of(inflight), content):
            raise TimelineError(f"{self.path_of(inflight)} already exists")
        self._wrote(inflight, content)
        return inflight

    def complete(
        self, instant: Instant, content: bytes, completion_time: str | None = None
    ) -> Instant:
        """Write the completed file of an inflight instant -- the commit point.

        Layout 2 names the file ``T_C.<action>`` with ``C`` from :meth:`new_completion_time`
        (after every instant time on the timeline, listed right before the commit point)
        unless ``completion_time`` is given; layout 1 writes ``T.<action>`` and the returned
        instant has ``completion_time == requested_time`` (as :meth:`Timeline.load` reports
        it).

        Returns:
            The completed instant, as a reload of the timeline will show it (a compaction
            completes as ``commit``, a clustering as ``replacecommit``).

        Raises:
            InstantNotFoundError: the inflight file does not exist.
            TimelineError: the instant is already completed; a given ``completion_time`` is
                not after every instant time on the timeline; the latest of them is more than
                :data:`~hudi_ds.timeline.instant.MAX_INSTANT_AHEAD_MS` ahead of the clock.
        """
        ts = instant.requested_time
        inflight = Instant(ts, instant.action, State.INFLIGHT)
        if not self.storage.is_file(self.path_of(inflight)):
            raise InstantNotFoundError(f"{self.path_of(inflight)} does not exist")
        listed = self._listing() if self.layout_version == 2 else None
        if self._completed(instant, listed):
            raise TimelineError(f"instant {ts} is already completed")
        action = completed_action(instant.action)
        if self._before_complete is not None:
            # the hook runs first (it may take seconds: MDT catch-up, compaction); its instant
            # has no completion time on layout 2 -- chosen afterwards, just before the commit
            # point, so no reader ordering by completion time sees it appear in its past
            pre = ts if self.layout_version == 1 else None
            self._before_complete(Instant(ts, action, State.COMPLETED, pre), content)
            listed = None  # what other writers did meanwhile: listed again
        if self.layout_version == 1:
            done = Instant(ts, action, State.COMPLETED, ts)
        else:
            latest = self._latest_time(ts, listed)
            c = completion_time or self._time_after(latest)
            if _full_precision(c) <= _full_precision(latest):
                raise TimelineError(
                    f"completion time {c} of instant {ts} is not after the latest instant time "
                    f"on the timeline, {latest}"
                )
            done = Instant(ts, action, State.COMPLETED, c)
        self.storage.write_atomic(self.path_of(done), content, crash_point_name="commit_write")
        self._wrote(done, content)
        return done

    def new_completion_time(self, requested_time: str, timeline: Timeline | None = None) -> str:
        """A completion time for the instant ``requested_time`` (layout 2): the clock, but
        strictly after every requested and completion time on the timeline, whatever the
        local clock says.

        On layout 2 a log file joins the file slice its completion time falls in (Java 1.x
        ``HoodieFileGroup.getBaseInstantTime``): a writer whose clock lags the one that
        scheduled a compaction would otherwise date its commit before the compaction's
        requested time although it completed after it, and its logs would join the old slice,
        which the compaction's plan does not hold -- lost once it completes. Java 1.x takes
        the time from the clock under a time-generation lock and sleeps out
        ``hoodie.time.generator.max_expected_clock_skew_ms`` (``SkewAdjustingTimeGenerator``,
        used by ``ActiveTimelineV2.createCompleteFileInMetaPath``); hudi_ds bounds it by the
        timeline instead, which holds for any skew, not only the configured one. Callers hold
        the table lock (multi-writer), so no other instant time is chosen meanwhile.

        Args:
            requested_time: the instant's requested time.
            timeline: a listing of the timeline folder made under the same lock, after the
                last change this process made (default: list it now).

        Raises:
            TimelineError: the latest instant time on the timeline is more than
                :data:`~hudi_ds.timeline.instant.MAX_INSTANT_AHEAD_MS` ahead of the clock (a
                stray instant: named, never copied forward).
        """
        return self._time_after(self._latest_time(requested_time, timeline))

    def _time_after(self, latest: str) -> str:
        return new_instant_time(
            after=latest, timezone=self.timezone, max_ahead_ms=MAX_INSTANT_AHEAD_MS
        )

    def _listing(self) -> Timeline:
        return Timeline.load(self.storage, self.layout_version, self.path, timezone=self.timezone)

    def _latest_time(self, requested_time: str, timeline: Timeline | None) -> str:
        tl = timeline if timeline is not None else self._listing()
        latest = tl.latest_time()
        if latest is None or _full_precision(latest) < _full_precision(requested_time):
            return requested_time
        return latest

    def revert_to_requested(self, instant: Instant) -> Instant:
        """Delete the inflight file of a pending instant (back to requested).

        Raises:
            TimelineError: the instant is completed.
        """
        ts = instant.requested_time
        files = self._files_of(ts)
        if any(i.is_completed for i, _ in files):
            raise TimelineError(f"instant {ts} is completed; roll it back instead")
        for i, path in files:
            if i.is_inflight:
                self.storage.delete(path)
        self._deleted()
        return Instant(ts, instant.action, State.REQUESTED)

    def delete_instant_files(self, instant: Instant | str) -> list[str]:
        """Delete every file of an instant (all states), completed first, requested last.

        Used by rollback. With an :class:`Instant`, only files of the same action family are
        touched (compaction/commit, logcompaction/deltacommit, clustering/replacecommit).

        Returns:
            The deleted paths.
        """
        ts = instant if isinstance(instant, str) else instant.requested_time
        family = None if isinstance(instant, str) else _family(instant.action)
        files = [(i, p) for i, p in self._files_of(ts) if family is None or i.action in family]
        files.sort(key=lambda ip: -ip[0].state.rank)
        deleted = []
        for _, path in files:
            if self.storage.delete(path):
                deleted.append(path)
        self._deleted()
        return deleted
