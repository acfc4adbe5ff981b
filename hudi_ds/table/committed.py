"""What the timeline says is committed, checked against what the file listing holds.

Every completed commit records, per written file, its path and ``fileSizeInBytes``
(``partitionToWriteStats``; for a log file, the file's size once the append was closed, Java
``HoodieAppendHandle.close``, and ``logOffset``, where the append started). A read knows from
this which files of the slices it reads must exist and how many of their bytes are committed:

* a committed file of a file group's latest slice that the listing lacks is *missing*;
* a committed base file whose size differs from the committed size, or a committed log file
  shorter than its largest committed size, is *truncated* (damaged);
* inside a log file, the committed byte ranges ``[logOffset, fileSizeInBytes)`` tell a corrupt
  block (an error) from the torn tail of a failed write (skipped, as Java's
  ``HoodieLogFileReader`` skips corrupt blocks).

Older slices are not checked: the cleaner legitimately removes them (it always keeps the latest
slice of a live file group, Java ``CleanPlanner``), and a replaced file group
(insert_overwrite, clustering) is skipped. Files of archived commits are not known and not
checked. The check uses the sizes of the listing the view already holds (no IO per file),
and compares every committed file with it in bulk first (:func:`find_problems`): only the
partitions where something differs get the per-file-group rules above, so a table of 100,000
file groups costs a few dictionary look-ups per file.

A read listed through the metadata table does not run the check: in step with the timeline,
the metadata table lists exactly the files the commits wrote with their committed sizes (it
is written from the same write stats), so the check could find nothing, and Java's reader
trusts it (``HoodieBackedTableMetadata``); its commits are decoded only for the log ranges of
a log file holding a corrupt block (:meth:`Committed.deferred`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Container, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from hudi_ds.errors import InstantNotFoundError
from hudi_ds.layout.file_group import FileGroup
from hudi_ds.layout.naming import (
    file_name_of,
    parse_base_file_name,
    parse_log_file_name,
    partition_of,
)
from hudi_ds.table.fs_view import FileSystemView
from hudi_ds.timeline.instant import Instant
from hudi_ds.timeline.timeline import Timeline
from hudi_ds.timeline.view import Visibility
from hudi_ds.timeline.written import WrittenFiles

#: committed byte ranges of one log file: ``(start, end, instant)`` per committing instant
Ranges = tuple[tuple[int, int, str], ...]


@dataclass
class CommittedFile:
    """One file as the timeline committed it.

    Attributes:
        path: relative to the base path.
        file_id: its file group.
        is_log: a log file (else a base file).
        slice_time: the base instant of the slice it belongs to (log files: the instant in the
            name, layout 1) or, for layout-2 log files, the completion time of its commit.
        size: the largest committed ``fileSizeInBytes`` (0: unknown, not checked).
        instant: the instant that committed ``size``.
        ranges: committed ``[start, end)`` byte ranges of a log file.
    """

    path: str
    file_id: str
    is_log: bool
    slice_time: str
    size: int = 0
    instant: str = ""
    ranges: list[tuple[int, int, str]] = field(default_factory=list)


@dataclass
class Problem:
    """A committed file that is missing or shorter than committed."""

    path: str
    instant: str
    kind: str  # "missing" | "truncated"
    size: int = 0
    committed_size: int = 0
    is_log: bool = False

    def describe(self, where: str) -> str:
        if self.kind == "missing":
            return f"committed file {where} (written by instant {self.instant}) is missing"
        return (
            f"committed file {where} (written by instant {self.instant}) has {self.size} bytes, "
            f"the commit recorded {self.committed_size}"
        )


class Committed:
    """What the visible commits wrote: per commit (in timeline order) its requested time, its
    completion time and its :class:`~hudi_ds.timeline.written.WrittenFiles`.

    Built from the timeline's per-process cache of written files, so an unchanged table's
    second read decodes nothing; only the file groups a check finds suspect are turned into
    :class:`CommittedFile` objects (:func:`find_problems`). :meth:`deferred` decodes the
    commits when :attr:`written` is first used.
    """

    def __init__(self, written: Sequence[tuple[str, str, WrittenFiles]], layout2: bool) -> None:
        self._written = list(written)
        self._pending: Callable[[], list[tuple[str, str, WrittenFiles]]] | None = None
        self._lock = threading.Lock()  # a plan's reader threads share it
        self.layout2 = layout2

    @classmethod
    def load(cls, timeline: Timeline, commits: Sequence[Instant], layout2: bool) -> Committed:
        """The files ``commits`` wrote (those whose instant file is still there)."""
        return cls(_read_written(timeline, commits), layout2)

    @classmethod
    def deferred(cls, timeline: Timeline, commits: Sequence[Instant], layout2: bool) -> Committed:
        """:meth:`load`, with the commits decoded when :attr:`written` is first used (a read
        whose log files turn out whole never uses it)."""
        out = cls((), layout2)
        commits = list(commits)
        out._pending = lambda: _read_written(timeline, commits)
        return out

    @classmethod
    def prefetch(cls, timeline: Timeline, commits: Sequence[Instant], layout2: bool) -> Committed:
        """:meth:`load` started on another thread, for a caller that lists the storage
        meanwhile: the scan of a large commit's JSON runs mostly outside the interpreter lock
        (:mod:`hudi_ds.timeline.written`), on another core. :attr:`written` waits for it, and
        raises what the decode raised."""
        out = cls((), layout2)
        commits = list(commits)
        done: Future[list[tuple[str, str, WrittenFiles]]] = Future()

        def run() -> None:
            try:
                done.set_result(_read_written(timeline, commits))
            except BaseException as e:  # handed to the thread that uses it
                done.set_exception(e)

        threading.Thread(target=run, name="hudi-commit-decode", daemon=True).start()
        out._pending = done.result
        return out

    @property
    def written(self) -> list[tuple[str, str, WrittenFiles]]:
        """``(requested time, completion time, written files)`` of each commit."""
        if self._pending is not None:
            with self._lock:
                if self._pending is not None:
                    self._written, self._pending = self._pending(), None
        return self._written

    def files(
        self,
        keep: Callable[[str, str], bool] | None = None,
        partitions: Container[str] | None = None,
    ) -> dict[tuple[str, str], list[CommittedFile]]:
        """Committed files per ``(partition, file id)``; with ``keep``, only those of the
        file groups ``keep(partition, file id)`` accepts, with ``partitions`` only those of
        these partitions."""
        by_path: dict[str, CommittedFile] = {}
        partition_of_path: dict[str, str] = {}
        skipped: set[str] = set()
        for requested, done, wf in self.written:
            for path, size, start in zip(wf.paths, wf.sizes, wf.offsets, strict=True):
                cf = by_path.get(path)
                if cf is None:
                    if path in skipped:
                        continue
                    partition = partition_of(path)
                    if partitions is not None and partition not in partitions:
                        skipped.add(path)
                        continue
                    cf = self._committed_file(path, partition, done, keep)
                    if cf is None:
                        skipped.add(path)
                        continue
                    by_path[path] = cf
                    partition_of_path[path] = partition
                if size > cf.size:
                    cf.size, cf.instant = size, requested
                elif not cf.instant:
                    cf.instant = requested
                if cf.is_log and size > 0:
                    cf.ranges.append((start if start < size else 0, size, requested))
        out: dict[tuple[str, str], list[CommittedFile]] = {}
        for cf in by_path.values():
            out.setdefault((partition_of_path[cf.path], cf.file_id), []).append(cf)
        return out

    def _committed_file(
        self, path: str, partition: str, done: str, keep: Callable[[str, str], bool] | None
    ) -> CommittedFile | None:
        """A new entry for ``path`` (first written at completion time ``done``), or None for
        a file that is not a data file of a kept file group (a CDC log, an archive...)."""
        name = file_name_of(path)
        b = parse_base_file_name(name)
        if b is not None:
            if keep is not None and not keep(partition, b.file_id):
                return None
            return CommittedFile(path, b.file_id, False, b.instant_time)
        lg = parse_log_file_name(name)
        if lg is None or lg.extension != "log" or lg.cdc:
            return None
        if keep is not None and not keep(partition, lg.file_id):
            return None
        return CommittedFile(path, lg.file_id, True, done if self.layout2 else lg.instant_time)

    def largest_sizes(self) -> dict[str, int]:
        """Path -> the largest committed ``fileSizeInBytes`` of every file written."""
        if not self.written:
            return {}
        # start from the commit that wrote the most files (a bulk insert): one C-level copy
        first = max(range(len(self.written)), key=lambda i: len(self.written[i][2]))
        out = self.written[first][2].largest_sizes()
        for i, (_, _, wf) in enumerate(self.written):
            if i == first:
                continue
            for path, size in wf.largest_sizes().items():
                if size > out.get(path, -1):
                    out[path] = size
        return out

    def log_ranges(self) -> LogRanges:
        """The committed byte ranges of every log file written (looked up lazily)."""
        return LogRanges(self)


def _read_written(
    timeline: Timeline, commits: Sequence[Instant]
) -> list[tuple[str, str, WrittenFiles]]:
    written = []
    for inst in commits:
        try:
            wf = timeline.read_written_files(inst)
        except InstantNotFoundError:
            # its file went after the timeline was listed: a concurrent archival moved the
            # instant to the archived timeline (Hudi's archiver deletes completed files
            # last), and archived commits' files are not checked
            continue
        written.append((inst.requested_time, inst.completion_time or inst.requested_time, wf))
    return written


class LogRanges(Mapping[str, Ranges]):
    """Log file path -> its committed byte ranges ``(start, end, instant)``, in commit order
    (``[logOffset, fileSizeInBytes)`` of each stat with a size), computed when looked up: a
    read looks up the log files of the slices it reads, not the table's every file.

    Pickles as a plain dict (a read task receives :meth:`ReadPlan.for_slices`'s few
    entries; a whole plan pickles them all)."""

    def __init__(self, committed: Committed) -> None:
        self._committed = committed
        self._paths: list[str] | None = None

    @property
    def _written(self) -> list[tuple[str, str, WrittenFiles]]:
        return self._committed.written

    def __getitem__(self, path: str) -> Ranges:
        out = []
        for requested, _, wf in self._written:
            for i in wf.rows_of(path):
                size = wf.sizes[i]
                if size > 0:
                    start = wf.offsets[i]
                    out.append((start if start < size else 0, size, requested))
        if not out:
            raise KeyError(path)
        return tuple(out)

    def __contains__(self, path: object) -> bool:
        return isinstance(path, str) and any(
            wf.sizes[i] > 0 for _, _, wf in self._written for i in wf.rows_of(path)
        )

    def _all(self) -> list[str]:
        if self._paths is None:
            seen: dict[str, None] = {}
            for _, _, wf in self._written:
                seen.update((p, None) for p, size in zip(wf.paths, wf.sizes, strict=True) if size)
            self._paths = list(seen)
        return self._paths

    def __iter__(self) -> Iterator[str]:
        return iter(self._all())

    def __len__(self) -> int:
        return len(self._all())

    def __bool__(self) -> bool:
        return any(any(wf.sizes) for _, _, wf in self._written)

    def __reduce__(self) -> tuple[Any, ...]:
        return dict, (dict(self.items()),)


def find_problems(
    committed: Committed,
    view: FileSystemView,
    include_logs: bool,
    replaced: Mapping[str, Container[str]],
    keep: Callable[[str, str], bool] | None = None,
    keep_partition: Callable[[str], bool] | None = None,
) -> list[Problem]:
    """The committed files of the file groups' latest slices that are missing or short, as
    the listing ``view`` holds them (no IO per file); with ``keep`` / ``keep_partition``,
    only those of the file groups / partitions they accept.

    Every file written is first compared with the listing in bulk (a file whose size equals
    its largest committed size is whole; one the listing lacks or whose size differs is
    suspect); the partitions of suspect files then get the exact check (:func:`check_group`
    per file group: only the latest slice counts, a log file may have grown, a log file may
    have been renamed by an unscheduled compaction). A table whose files are all there costs
    dictionary look-ups, a damaged one gets the same answer as checking every file group.
    """
    sizes = committed.largest_sizes()
    suspect: set[str] = set()
    if keep_partition is None:
        listed = view.listed_sizes()
        suspect = {
            partition_of(path)
            for path, size in sizes.items()
            if listed.get(path, -1) != size and (size or path not in listed)
        }
    else:
        by_partition: dict[str, list[tuple[str, int]]] = {}
        for path, size in sizes.items():
            by_partition.setdefault(partition_of(path), []).append((path, size))
        for p, written in by_partition.items():
            if not keep_partition(p):
                continue
            listed = view.listed_sizes(p)
            if any(listed.get(f, -1) != sz and (sz or f not in listed) for f, sz in written):
                suspect.add(p)
    if not suspect:
        return []
    problems: list[Problem] = []
    for (p, fid), files in committed.files(keep, partitions=suspect).items():
        if fid not in replaced.get(p, ()):
            problems.extend(check_group(view.file_group(p, fid), files, include_logs))
    return problems


def current_files(files: Iterable[CommittedFile], include_logs: bool) -> list[CommittedFile]:
    """The committed files of a file group's latest slice (the ones that must exist).

    That is the latest committed base file and every committed log file of its slice or a
    later one (logs of a pending compaction's slice included).
    """
    files = list(files)
    bases = [f.slice_time for f in files if not f.is_log]
    latest = max(bases) if bases else ""
    return [f for f in files if f.slice_time >= latest and (include_logs or not f.is_log)]


def check_group(
    group: FileGroup | None, files: Iterable[CommittedFile], include_logs: bool
) -> list[Problem]:
    """Compare a file group's listed files (with sizes) with its committed current files."""
    files = list(files)
    listed: dict[str, int] = {}
    # log files under a name no commit wrote, by write token: unscheduling a compaction
    # renames the log files written on top of it into the previous slice (Java
    # CompactionAdminClient.unscheduleCompactionPlan); the commit metadata keeps the old names
    moved: dict[str, list[int]] = {}
    if group is not None:
        listed = {f.path: f.size for f in group.base_files}
        listed.update((f.path, f.size) for f in group.log_files)
        known = {f.path for f in files}
        for lf in group.log_files:
            if lf.path not in known:
                moved.setdefault(lf.name.write_token or "", []).append(lf.size)
    problems = []
    for cf in current_files(files, include_logs):
        size = listed.get(cf.path)
        if size is None and cf.is_log:
            token = parse_log_file_name(file_name_of(cf.path))
            sizes = moved.get(token.write_token or "", []) if token is not None else []
            if any(sz >= cf.size for sz in sizes):
                continue
        if size is None:
            problems.append(Problem(cf.path, cf.instant, "missing", is_log=cf.is_log))
        elif cf.size and (size < cf.size if cf.is_log else size != cf.size):
            problems.append(Problem(cf.path, cf.instant, "truncated", size, cf.size, cf.is_log))
    return problems


def visible_commits(timeline: Timeline, vis: Visibility) -> list[Instant]:
    """The completed data instants ``vis`` sees (the ones whose write stats are checked)."""
    return [i for i in timeline.commits() if i.requested_time in vis.instants]


def cleaned_by(timeline: Timeline, path: str) -> str | None:
    """The completed clean instant that deleted ``path`` (relative), or None."""
    partition, name = partition_of(path), file_name_of(path)
    for c in reversed(timeline.completed().filter_actions("clean")):
        md = timeline.read_clean_metadata(c)
        pm = md.partition_metadata.get(partition)
        if pm is None:
            continue
        for f in pm.success_delete_files:
            if f == name or f.endswith("/" + name):
                return c.requested_time
    return None
