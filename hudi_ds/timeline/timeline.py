"""The active timeline: loader and queries.

* :class:`Timeline` -- an immutable, sorted view of instants. :meth:`Timeline.load` lists the
  instant files of a table (layout 1: ``.hoodie/``; layout 2: ``.hoodie/timeline/``) and
  collapses the states of each instant to its latest one. Filters return new views that share
  the file listing and the metadata cache.

The archived timeline is in :mod:`hudi_ds.timeline.archived`, the writer's transitions in
:mod:`hudi_ds.timeline.writer`.

Visibility order ("which instants are done as of time T") is defined once, in
:meth:`Timeline.visibility_time`: the requested time in layout 1 (its file names carry no
completion time; Java 0.x orders by requested time too), the completion time in layout 2.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar, cast, overload

from hudi_ds.errors import (
    CorruptFileError,
    HudiError,
    InstantNotFoundError,
    TimelineError,
)
from hudi_ds.storage import Storage
from hudi_ds.storage_types import FileInfo
from hudi_ds.timeline.avro_record import AvroRecord
from hudi_ds.timeline.instant import (
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
    Instant,
    State,
    TimeZoneLike,
    format_instant_time,
)
from hudi_ds.timeline.instant_cache import CompletedInstantCache, completed_instants, written_files
from hudi_ds.timeline.metadata import CommitMetadata, extra_metadata_of
from hudi_ds.timeline.plans import (
    CleanerPlan,
    CleanMetadata,
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
from hudi_ds.timeline.written import WrittenFiles

__all__ = [
    "DATA_ACTIONS",
    "HOODIE_FOLDER",
    "Timeline",
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


#: the actions whose completed (or inflight) file is a commit metadata with write stats
_WRITE_ACTIONS = _family(COMMIT) | _family(DELTA_COMMIT) | _family(REPLACE_COMMIT)

#: a commit file up to this size read for its extraMetadata or its written files is decoded
#: for the other too (a commit of a few hundred file groups; a bulk insert's 100 MB is not)
_SEED_MAX_BYTES = 1 << 20


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
        _sorted: bool = False,
    ) -> None:
        if layout_version not in (1, 2):
            raise ValueError(f"unsupported timeline layout version {layout_version!r}")
        self._timezone = _timezone
        # savepoints share the requested time of the commit they save (T.savepoint next to
        # T.commit), so they are kept apart from the instants
        self._savepoints: Mapping[str, Mapping[State, _InstantFile]] = _savepoints or {}
        # the sub folders the listing of the timeline folder showed (None: not listed)
        self._folders = _folders
        # sorted by the instants' key tuples, compared in C: a long active timeline (thousands
        # of instants) is sorted in a few milliseconds instead of calling Instant.__lt__ n log n
        # times on every view; a view derived from a sorted one keeps its order as it is
        self._instants: tuple[Instant, ...] = (
            tuple(instants) if _sorted else tuple(sorted(instants, key=Instant.sort_key))
        )
        self._layout = layout_version
        self._storage = _storage
        self._path = _path
        self._files: Mapping[str, Mapping[State, _InstantFile]] = _files or {}
        self._cache: dict[tuple[str, str, State], Any] = {} if _cache is None else _cache
        # built on the first look-up: most views (a filter on the way to another) are never
        # asked, and a long timeline has thousands of instants
        self._by_time_map: dict[str, Instant] | None = None

    @property
    def _by_time(self) -> dict[str, Instant]:
        if self._by_time_map is None:
            self._by_time_map = {i.requested_time: i for i in self._instants}
        return self._by_time_map

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

    def _derive(self, instants: Iterable[Instant], presorted: bool = False) -> Timeline:
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
            _sorted=presorted,
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
            # a view is sorted: a reversing slice is sorted again
            return self._derive(self._instants[index], presorted=(index.step or 1) > 0)
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
        return self._derive((i for i in self._instants if predicate(i)), presorted=True)

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

    def is_clustering(self, instant: Instant) -> bool:
        """Whether ``instant`` is a clustering: a ``clustering`` action (layout 2), or a
        replacecommit whose requested metadata says ``operationType=CLUSTER`` (Java
        ``ClusteringUtils.isClusteringInstant``; an insert overwrite's is empty)."""
        if instant.action == CLUSTERING or self.origin_action(instant.requested_time) == CLUSTERING:
            return True
        if instant.action != REPLACE_COMMIT:
            return False
        try:
            md = self.read_requested_replace(instant.requested_time)
        except HudiError:
            return False
        return (md.operation_type or "").upper() == "CLUSTER" and md.clustering_plan is not None

    def pending_clustering(self) -> Timeline:
        """Requested and inflight clusterings."""
        return self.filter(lambda i: not i.is_completed and self.is_clustering(i))

    def file_groups_in_pending_clustering(self) -> set[tuple[str, str]]:
        """``(partition, file id)`` of the file groups the pending clusterings rewrite (Java
        ``ClusteringUtils.getAllFileGroupsInPendingClusteringPlans``)."""
        out: set[tuple[str, str]] = set()
        for inst in self.pending_clustering():
            plan = self.read_requested_replace(inst).clustering_plan
            for g in (plan.input_groups or []) if plan is not None else []:
                for sl in g.slices or []:
                    out.add((sl.partition_path or "", sl.file_id or ""))
        return out

    def pending_writes(self) -> Timeline:
        """Requested and inflight writes: data actions that are not a clustering (a table
        service, rolled back or resumed by the clustering service, never by a writer: Java's
        ``getPendingRollbackInfos(..., ignoreCompactionAndClusteringInstants)``)."""
        return self.filter(
            lambda i: not i.is_completed and i.action in DATA_ACTIONS and not self.is_clustering(i)
        )

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
        (:meth:`~hudi_ds.timeline.writer.TimelineWriter.new_completion_time`), so a writer
        whose clock lags another's never dates an instant into the timeline's past. A 14-digit
        (second precision) time counts as its last millisecond, as
        :func:`~hudi_ds.timeline.instant.new_instant_time` reads it.
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

    def has_time(self, requested_time: str) -> bool:
        """Whether the listing holds any instant file of ``requested_time``."""
        return requested_time in self._files or requested_time in self._savepoints

    def has_file(self, requested_time: str, action: str, state: State) -> bool:
        """Whether the listing holds the ``state`` file of ``action`` requested at
        ``requested_time``."""
        f = self._files.get(requested_time, {}).get(state)
        return f is not None and f.instant.action == action

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

    def _cached(
        self,
        kind: str,
        ts: str,
        state: State,
        make: Callable[[], Any],
        shared: CompletedInstantCache = completed_instants,
    ) -> Any:
        """``make()``'s result for the instant file, once per listing; a completed file's
        once per process too, in ``shared`` (:mod:`~hudi_ds.timeline.instant_cache`: it
        never changes)."""
        key = (kind, ts, state)
        if key not in self._cache:
            f = self._files.get(ts, {}).get(state)
            try:
                if state is State.COMPLETED and f is not None and self._storage is not None:
                    self._cache[key] = shared.get_or_decode(self._storage, f.info, kind, make)
                else:
                    self._cache[key] = make()
            except CorruptFileError as e:
                raise CorruptFileError(f"{self._where(ts, state)}: {e}") from e
        return self._cache[key]

    def _seed(
        self,
        ts: str,
        state: State,
        raw: bytes,
        kind: str,
        decode: Callable[[bytes], Any],
        shared: CompletedInstantCache,
    ) -> None:
        """Keep what ``kind`` decodes of a small commit file read for another kind: a read
        takes a commit's extraMetadata (its schema) and its written files, and the file is
        fetched once for both (a round trip on an object store). Large files are left to be
        read again when asked: decoding what nobody may ask for would cost more."""
        key = (kind, ts, state)
        if len(raw) > _SEED_MAX_BYTES or key in self._cache:
            return
        try:
            value = decode(raw)
        except CorruptFileError:
            return  # the read of that kind, if any, raises it with the file's name
        self._cache[key] = value
        f = self._files.get(ts, {}).get(state)
        if state is State.COMPLETED and f is not None and self._storage is not None:
            shared.put(self._storage, f.info, kind, value)

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

        def make() -> CommitMetadata:
            data = self._content(ts, state, _WRITE_ACTIONS)
            if data is None:
                return CommitMetadata()
            if isinstance(data, bytes | bytearray):
                return CommitMetadata.from_bytes(bytes(data))
            return CommitMetadata.from_avro_record(data)

        return cast(CommitMetadata, self._cached("commit", ts, state, make))

    def read_extra_metadata(self, instant: Instant | str) -> dict[str, str]:
        """The ``extraMetadata`` of a commit/deltacommit/replacecommit (the writer schema, a
        streaming checkpoint...), without decoding its write stats when it is JSON
        (:func:`~hudi_ds.timeline.metadata.extra_metadata_of`); cached like
        :meth:`read_commit_metadata`. The caller must not change it.

        Raises:
            InstantNotFoundError: no such instant file.
            CorruptFileError: the file cannot be parsed (the message names it).
        """
        ts = self._ts(instant)
        state = self._state_of(instant)
        if state is State.REQUESTED:
            return {}

        def make() -> dict[str, str]:
            if ("commit", ts, state) in self._cache:  # decoded already
                return self._cache[("commit", ts, state)].extra_metadata
            data = self._content(ts, state, _WRITE_ACTIONS)
            if data is None:
                return {}
            if isinstance(data, bytes | bytearray):
                raw = bytes(data)
                self._seed(ts, state, raw, "written", WrittenFiles.from_bytes, written_files)
                return extra_metadata_of(raw)
            return CommitMetadata.from_avro_record(data).extra_metadata

        return cast(dict[str, str], self._cached("extra", ts, state, make))

    def read_written_files(self, instant: Instant | str) -> WrittenFiles:
        """The files a commit/deltacommit/replacecommit wrote, with their committed sizes and
        log offsets (:class:`WrittenFiles`; cached like :meth:`read_commit_metadata`, which it
        does not decode when it reads a JSON file).

        Raises:
            InstantNotFoundError: no such instant file.
            CorruptFileError: the file cannot be parsed (the message names it).
        """
        ts = self._ts(instant)
        state = self._state_of(instant)
        if state is State.REQUESTED:
            return WrittenFiles(())

        def make() -> WrittenFiles:
            if ("commit", ts, state) in self._cache:  # decoded already: no second decode
                return WrittenFiles.from_metadata(self._cache[("commit", ts, state)])
            f = self._files.get(ts, {}).get(state)
            if state is State.COMPLETED and f is not None and self._storage is not None:
                # decoded by another view of this process (a write's): not read again
                md = completed_instants.peek(self._storage, f.info, "commit")
                if md is not None:
                    return WrittenFiles.from_metadata(md)
            data = self._content(ts, state, _WRITE_ACTIONS)
            if data is None:
                return WrittenFiles(())
            if isinstance(data, bytes | bytearray):
                raw = bytes(data)
                self._seed(ts, state, raw, "extra", extra_metadata_of, completed_instants)
                return WrittenFiles.from_bytes(raw)
            return WrittenFiles.from_metadata(CommitMetadata.from_avro_record(data))

        return cast(WrittenFiles, self._cached("written", ts, state, make, written_files))

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
