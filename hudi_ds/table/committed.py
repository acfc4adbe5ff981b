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
checked. The check uses the sizes of the listing the view already holds (no IO per file).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from hudi_ds.errors import InstantNotFoundError
from hudi_ds.layout.file_group import FileGroup, FileSlice
from hudi_ds.layout.naming import (
    file_name_of,
    parse_base_file_name,
    parse_log_file_name,
    partition_of,
)
from hudi_ds.timeline.instant import Instant
from hudi_ds.timeline.timeline import Timeline
from hudi_ds.timeline.view import Visibility

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


def committed_files(
    timeline: Timeline,
    commits: Sequence[Instant],
    layout2: bool,
    keep: Callable[[str, str], bool] | None = None,
) -> dict[tuple[str, str], list[CommittedFile]]:
    """Committed files of ``commits``, per ``(partition, file id)``, from their write stats;
    with ``keep``, only those of the file groups ``keep(partition, file id)`` accepts (a
    selective read checks the few file groups it reads)."""
    by_path: dict[str, CommittedFile] = {}
    partitions: dict[str, str] = {}
    for inst in commits:
        try:
            md = timeline.read_commit_metadata(inst)
        except InstantNotFoundError:
            # its file went after the timeline was listed: a concurrent archival moved the
            # instant to the archived timeline (Hudi's archiver deletes completed files last),
            # and archived commits' files are not checked
            continue
        done = inst.completion_time or inst.requested_time
        for stats in md.partition_to_write_stats.values():
            for st in stats:
                path = st.path
                if not path:
                    continue
                cf = by_path.get(path)
                if cf is None:
                    name = file_name_of(path)
                    b = parse_base_file_name(name)
                    lg = None if b is not None else parse_log_file_name(name)
                    if lg is not None and (lg.extension != "log" or lg.cdc):
                        continue
                    fid = b.file_id if b is not None else lg.file_id if lg is not None else None
                    partition = partition_of(path)
                    if fid is None or (keep is not None and not keep(partition, fid)):
                        continue
                    if b is not None:
                        cf = CommittedFile(path, fid, False, b.instant_time)
                    elif lg is not None:
                        cf = CommittedFile(path, fid, True, done if layout2 else lg.instant_time)
                    else:
                        continue
                    by_path[path] = cf
                    partitions[path] = partition
                size = int(st.file_size_in_bytes or 0)
                if size > cf.size:
                    cf.size, cf.instant = size, inst.requested_time
                elif not cf.instant:
                    cf.instant = inst.requested_time
                if cf.is_log and size > 0:
                    start = int(st.log_offset or 0)
                    cf.ranges.append((start if start < size else 0, size, inst.requested_time))
    out: dict[tuple[str, str], list[CommittedFile]] = {}
    for cf in by_path.values():
        out.setdefault((partitions[cf.path], cf.file_id), []).append(cf)
    return out


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


def log_ranges(
    slices: Iterable[FileSlice], committed: Mapping[tuple[str, str], list[CommittedFile]]
) -> dict[str, Ranges]:
    """Committed byte ranges of the log files of ``slices`` (only the ones the timeline knows)."""
    out: dict[str, Ranges] = {}
    for s in slices:
        if not s.log_files:
            continue
        known = {f.path: f for f in committed.get((s.partition_path, s.file_id), ())}
        for lf in s.log_files:
            cf = known.get(lf.path)
            if cf is not None and cf.ranges:
                out[lf.path] = tuple(cf.ranges)
    return out


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
