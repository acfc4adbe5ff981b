"""File groups and file slices (Hudi ``HoodieFileGroup`` / ``FileSlice``).

A file group is every base and log file of one ``(partition, fileId)``; a file slice is one base
instant's base file (optional) with the log files that belong to it. Which slice a log file
belongs to differs by table version:

* v6 (layout 1): the log file name carries the slice's base instant directly;
* v8+ (layout 2): the log file name carries its own deltacommit's requested time R, and it
  belongs to the slice with the greatest base instant <= completion_time(R).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hudi_ds.layout.naming import BaseFileName, LogFileName


@dataclass(frozen=True)
class BaseFile:
    """A base file: its path relative to the table base path, parsed name and size."""

    path: str
    name: BaseFileName
    size: int = 0

    @property
    def file_id(self) -> str:
        return self.name.file_id

    @property
    def instant_time(self) -> str:
        return self.name.instant_time


@dataclass(frozen=True)
class LogFile:
    """A log file: path relative to the base path, parsed name, size and ordering key."""

    path: str
    name: LogFileName
    size: int = 0
    completion_time: str = ""

    @property
    def file_id(self) -> str:
        return self.name.file_id

    @property
    def instant_time(self) -> str:
        return self.name.instant_time

    def sort_key(self) -> tuple[str, str, int, str]:
        """Order of application: completion time (v8+), name instant, version, write token."""
        return (
            self.completion_time,
            self.name.instant_time,
            self.name.version,
            self.name.write_token or "",
        )


@dataclass
class FileSlice:
    """One base instant of a file group: optional base file plus ordered log files."""

    partition_path: str
    file_id: str
    base_instant_time: str
    base_file: BaseFile | None = None
    log_files: list[LogFile] = field(default_factory=list)

    @property
    def is_empty(self) -> bool:
        return self.base_file is None and not self.log_files

    def sorted_log_files(self) -> list[LogFile]:
        return sorted(self.log_files, key=LogFile.sort_key)

    @property
    def total_size(self) -> int:
        return (self.base_file.size if self.base_file else 0) + sum(f.size for f in self.log_files)


@dataclass
class FileGroup:
    """Every file of one ``(partition, fileId)``, committed or not; slices come from the view."""

    partition_path: str
    file_id: str
    base_files: list[BaseFile] = field(default_factory=list)
    log_files: list[LogFile] = field(default_factory=list)
