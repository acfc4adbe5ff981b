"""A table's completed commits as a streaming source reads them (offsets, admission, ranges).

A source's offsets are completed instants, ordered by where they sit on the stream -- Hudi's
visibility time (:meth:`~hudi_ds.timeline.timeline.Timeline.visibility_time`). A micro-batch
from offset ``a`` to ``b`` is the incremental read ``(a, b]`` (the first one of a query that
starts at the beginning: the snapshot as of ``b``). An engine's source holds one
:class:`CommitStream` on its driver and refreshes it at the start of every micro-batch, so the
batch's offsets and its read plan come from the same listing of the timeline.
"""

from __future__ import annotations

from dataclasses import dataclass

from hudi_ds.errors import TableNotFoundError
from hudi_ds.storage import Storage
from hudi_ds.table.table import ReadableTable
from hudi_ds.timeline.instant import Instant
from hudi_ds.timeline.timeline import DATA_ACTIONS, Timeline
from hudi_ds.timeline.view import TableState

#: actions of completed commits that add no data (a range holding only these is empty)
SERVICE_ACTIONS = ("compaction", "clustering")


@dataclass(frozen=True)
class StreamCommit:
    """One completed commit on the stream.

    Attributes:
        position: where it sits on the stream (its offset).
        requested_time: its instant time.
        adds_data: False for a compaction or clustering commit (no new rows).
        instant: the completed instant.
    """

    position: str
    requested_time: str
    adds_data: bool
    instant: Instant


class CommitStream:
    """The completed commits of the table at ``location``, as a streaming source sees them.

    Args:
        location: the table's base path or :class:`~hudi_ds.storage.Storage`.
    """

    def __init__(self, location: str | Storage) -> None:
        self.location = location
        self.state: TableState | None = None
        self._rows: dict[str, int] = {}

    @property
    def opened(self) -> bool:
        """Whether the table was found (by the last :meth:`refresh`)."""
        return self.state is not None

    def refresh(self) -> bool:
        """See the table as it is now (``hoodie.properties`` read again, the timeline listed
        again): the start of a micro-batch.

        Returns:
            False while no table exists (a source started before the table's first write).
        """
        try:
            if self.state is None:
                self.state = TableState.open(self.location)
            else:
                self.state.refresh()
        except TableNotFoundError:
            self.state = None
            return False
        self.state.timeline  # noqa: B018 - listed now, as the micro-batch starts
        return True

    def _timeline(self) -> Timeline:
        if self.state is None:
            raise TableNotFoundError(f"no Hudi table at {self.location}")
        return self.state.timeline

    def _commit(self, tl: Timeline, inst: Instant) -> StreamCommit:
        origin = tl.origin_action(inst.requested_time)
        return StreamCommit(
            tl.visibility_time(inst), inst.requested_time, origin not in SERVICE_ACTIONS, inst
        )

    def commits(self) -> list[StreamCommit]:
        """The admissible commits in stream order: on layout 1, those before the first pending
        write (its rows, once committed, would land before an offset already consumed:
        Hudi's ``BLOCK`` handling of hollow commits); pending compactions do not block."""
        tl = self._timeline()
        commits = sorted(
            (self._commit(tl, i) for i in tl.commits()),
            key=lambda c: (c.position, c.requested_time),
        )
        if tl.layout_version == 1:
            pending = [i.requested_time for i in tl.pending().filter_actions(*DATA_ACTIONS)]
            if pending:
                barrier = min(pending)
                commits = [c for c in commits if c.requested_time < barrier]
        return commits

    def reaches(self, position: str) -> bool:
        """Whether a completed commit (admissible or not) sits at or after ``position``."""
        tl = self._timeline()
        return any(tl.visibility_time(i) >= position for i in tl.commits())

    def only_services_in(self, begin: str, end: str) -> bool:
        """Whether every completed commit in the range ``(begin, end]`` adds no data."""
        tl = self._timeline()
        return all(
            not self._commit(tl, i).adds_data
            for i in tl.commits()
            if begin < tl.visibility_time(i) <= end
        )

    def rows_written(self, commit: StreamCommit) -> int:
        """Rows the commit wrote (inserts, updates and deletes), from its metadata."""
        n = self._rows.get(commit.requested_time)
        if n is None:
            md = self._timeline().read_commit_metadata(commit.instant)
            n = 0
            if md is not None:
                for stats in md.partition_to_write_stats.values():
                    n += sum(int(s.num_writes) + int(s.num_deletes) for s in stats)
            self._rows[commit.requested_time] = n
        return n

    def retained_floor(self) -> str | None:
        """The earliest commit whose file versions the last clean kept, when it deleted any
        (reads as of earlier instants are refused)."""
        tl = self._timeline()
        for c in reversed(tl.completed().filter_actions("clean")):
            md = tl.read_clean_metadata(c)
            if md.earliest_commit_to_retain:
                return md.earliest_commit_to_retain if md.total_files_deleted else None
        return None

    def table(self) -> ReadableTable:
        """The table as this micro-batch sees it (the same listing), to plan its reads."""
        if self.state is None:
            raise TableNotFoundError(f"no Hudi table at {self.location}")
        return ReadableTable(self.state)

    def range_options(self, begin: str, end: str, from_start: bool) -> dict[str, str]:
        """The read options of the micro-batch ``(begin, end]``: the snapshot as of ``end``
        for the first batch of a query that starts at the beginning (layout 1), else the
        incremental query of the range."""
        if self.state is None:
            raise TableNotFoundError(f"no Hudi table at {self.location}")
        if from_start and self.state.config.timeline_layout_version == 1:
            return {"hoodie.datasource.query.type": "snapshot", "as.of.instant": end}
        return {
            "hoodie.datasource.query.type": "incremental",
            "hoodie.datasource.read.begin.instanttime": begin,
            "hoodie.datasource.read.end.instanttime": end,
        }
