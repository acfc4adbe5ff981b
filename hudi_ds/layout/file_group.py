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
from typing import Generic, TypeVar

from hudi_ds.layout.naming import BaseFileName, LogFileName

_Name = TypeVar("_Name", BaseFileName, LogFileName)


@dataclass(frozen=True)
class DataFile(Generic[_Name]):
    """A file of a file group: its path relative to the table base path, parsed name and size."""

    path: str
    name: _Name
    size: int = 0

    @property
    def file_id(self) -> str:
        """The fileId of the file group."""
        return self.name.file_id

    @property
    def instant_time(self) -> str:
        """The instant time in the file's name (see :mod:`hudi_ds.layout.naming`)."""
        return self.name.instant_time


@dataclass(frozen=True)
class BaseFile(DataFile[BaseFileName]):
    """A base file."""


@dataclass(frozen=True)
class LogFile(DataFile[LogFileName]):
    """A log file, with the completion time of the instant that wrote it (v8+ ordering key)."""

    completion_time: str = ""

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
