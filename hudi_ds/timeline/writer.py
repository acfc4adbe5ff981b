"""The writer's transitions of the timeline.

:class:`TimelineWriter` -- requested -> inflight -> completed transitions. The completed file
is the commit point: it is written last, atomically (write to a temp name, then rename).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from hudi_ds.errors import InstantNotFoundError, TimelineError
from hudi_ds.storage import Storage
from hudi_ds.storage_types import FileInfo
from hudi_ds.timeline.instant import (
    ACTIONS,
    MAX_INSTANT_AHEAD_MS,
    Instant,
    State,
    TimeZoneLike,
    completed_action,
    new_instant_time,
)
from hudi_ds.timeline.timeline import Timeline, _family, _full_precision, timeline_dir


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

    The probes answer what this writer cannot know. An instant whose requested file it
    created itself had no file of its time then (:meth:`create_requested` probed them all),
    and the inflight file it wrote afterwards is its own: taking the instant from its writer
    is a rollback, which the write's commit checks find on the timeline it lists then (the
    table lock, or a single writer's record: :mod:`hudi_ds.write.writer_guard`). So the
    transitions of such an instant probe nothing (on an object store each probe is a
    request), and a caller holding a listing made after the instant's last transition hands
    it to :meth:`create_requested` and :meth:`complete` instead. On layout 2 the listing that
    chooses the completion time checks the instant anyway (one a process paused past its
    heartbeat finds completed or rolled back is refused, as a probe would have).

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
        # requested times whose requested file this writer created, and (time, action) of
        # the inflight files it then wrote
        self._created: set[str] = set()
        self._inflight: set[tuple[str, str]] = set()

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

    def create_requested(
        self, instant: Instant, content: bytes = b"", listed: Timeline | None = None
    ) -> bool:
        """Create the requested file of ``instant`` (atomic create-if-absent).

        Args:
            listed: a listing of the timeline folder made after its last change by any writer
                (the caller holds what serializes them), asked instead of a probe.

        Returns:
            False if any file of an instant with this requested time already exists (the
            caller must pick a new instant time), True if created.
        """
        req = Instant(instant.requested_time, instant.action, State.REQUESTED)
        ts = req.requested_time
        if listed.has_time(ts) if listed is not None else self._taken(ts):
            return False
        created = self.storage.create_if_absent(self.path_of(req), content)
        if created:
            self._created.add(ts)
            self._wrote(req, content)
        return created

    def transition_to_inflight(
        self, instant: Instant, content: bytes = b"", *, created: bool = False
    ) -> Instant:
        """Create the inflight file of a requested instant.

        ``created``: the caller's process created the requested file (with another writer
        object): nothing is probed, as for one this writer created.

        Raises:
            InstantNotFoundError: the requested file does not exist.
            TimelineError: the instant is already inflight or completed.
        """
        req = Instant(instant.requested_time, instant.action, State.REQUESTED)
        inflight = Instant(instant.requested_time, instant.action, State.INFLIGHT)
        if created:
            self._created.add(req.requested_time)
        if req.requested_time not in self._created:  # (else: see the class docstring)
            if not self.storage.is_file(self.path_of(req)):
                raise InstantNotFoundError(f"{self.path_of(req)} does not exist")
            if self._completed(instant):
                raise TimelineError(f"instant {instant.requested_time} is already completed")
        if not self.storage.create_if_absent(self.path_of(inflight), content):
            raise TimelineError(f"{self.path_of(inflight)} already exists")
        if req.requested_time in self._created:
            self._inflight.add((req.requested_time, req.action))
        self._wrote(inflight, content)
        return inflight

    def complete(
        self,
        instant: Instant,
        content: bytes,
        completion_time: str | None = None,
        listed: Timeline | None = None,
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

        Args:
            listed: a listing of the timeline folder made after the instant's inflight file
                was written (the commit's own, under its checks), asked instead of probes.

        Raises:
            InstantNotFoundError: the inflight file does not exist.
            TimelineError: the instant is already completed; a given ``completion_time`` is
                not after every instant time on the timeline; the latest of them is more than
                :data:`~hudi_ds.timeline.instant.MAX_INSTANT_AHEAD_MS` ahead of the clock.
        """
        ts = instant.requested_time
        inflight = Instant(ts, instant.action, State.INFLIGHT)
        own = listed is None and (ts, instant.action) in self._inflight
        if listed is not None:
            self._check_pending(inflight, listed)
            listed = None  # (layout 2: the completion time is chosen from a new listing)
        elif not own:  # (else: see the class docstring)
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
            if listed is None:
                listed = self._listing()
                if own:
                    # the listing the completion time needs answers the probes skipped: an
                    # instant another process completed or rolled back meanwhile (a writer
                    # paused past its heartbeat) is never completed a second time
                    self._check_pending(inflight, listed)
            latest = self._latest_time(ts, listed)
            c = completion_time or self._time_after(latest)
            if _full_precision(c) <= _full_precision(latest):
                raise TimelineError(
                    f"completion time {c} of instant {ts} is not after the latest instant time "
                    f"on the timeline, {latest}"
                )
            done = Instant(ts, action, State.COMPLETED, c)
        self.storage.write_atomic(self.path_of(done), content, crash_point_name="commit_write")
        self._forget(ts)  # (completed: any later transition of it probes, and fails)
        self._wrote(done, content)
        return done

    def _check_pending(self, inflight: Instant, listed: Timeline) -> None:
        ts = inflight.requested_time
        if listed.is_completed(ts):
            raise TimelineError(f"instant {ts} is already completed")
        if not listed.has_file(ts, inflight.action, State.INFLIGHT):
            raise InstantNotFoundError(f"{self.path_of(inflight)} does not exist")

    def _forget(self, requested_time: str) -> None:
        self._created.discard(requested_time)
        self._inflight = {k for k in self._inflight if k[0] != requested_time}

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
        self._inflight = {k for k in self._inflight if k[0] != ts}
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
        self._forget(ts)
        self._deleted()
        return deleted
