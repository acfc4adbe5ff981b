"""Hudi data file names: the one place their grammar is parsed and produced.

Grammar (Java ``FSUtils``)::

    fileId      = <uuid>-<n>                  e.g. d206069c-22c8-4532-b9ea-3cf4282342c4-0
    bucket fileId = <bucket %08d><uuid minus its first 8 chars>-0
                                              e.g. 00000003-afb1-424d-b18a-a8b6423a6780-0
    writeToken  = <taskPartitionId>-<stageId>-<taskAttemptId>     three decimal ints, e.g. 0-13-23
    base file   = <fileId>_<writeToken>_<instantTime>.<ext>     ext: parquet|orc|hfile|lance
    log file    = .<fileId>_<instantTime>.log.<version>[_<writeToken>[.cdc]]
                  (leading dot = hidden; versions start at 1;
                   v6: instantTime = base instant of the file slice;
                   v8+: instantTime = requested time of the deltacommit that wrote it)

A fileId never contains ``_`` (names are split on it).

Paths of data files are relative to the table's base path: ``<partitionPath>/<fileName>``, or
``<fileName>`` alone in a non-partitioned table (:func:`file_path`, :func:`partition_of`,
:func:`file_name_of`); :func:`relative_path` brings the full paths of Hudi's plans back to that.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from urllib.parse import quote

from hudi_ds.storage import Storage

BASE_FILE_EXTENSIONS = (".parquet", ".orc", ".hfile", ".lance")
PARTITION_METADATA_FILE = ".hoodie_partition_metadata"

_LOG_RE = re.compile(
    r"^\.(?P<file_id>.+)_(?P<instant>[^_]*)\.(?P<ext>log|archive)\.(?P<version>\d+)"
    r"(?:_(?P<token>\d+-\d+-\d+)(?P<cdc>\.cdc)?)?$"
)
# the same grammar for the names Hudi writes (a fileId without "_"), without the backtracking
# of the general pattern's ".+" (a listing of 100,000 log files parses each name once)
_LOG_RE_PLAIN = re.compile(
    r"\.([^_\n]+)_([^_]*)\.(log|archive)\.(\d+)(?:_(\d+-\d+-\d+)(\.cdc)?)?\Z"
)
_BASE_RE = re.compile(r"^(?P<file_id>[^_]+)_(?P<token>[^_]+)_(?P<instant>[^_.]+)(?P<ext>\.\w+)$")
_TOKEN_RE = re.compile(r"^\d+-\d+-\d+$")
_BUCKET_ID_DIGITS = 8


@dataclass(frozen=True, order=True)
class BaseFileName:
    """A parsed base file name."""

    file_id: str
    write_token: str
    instant_time: str
    extension: str = ".parquet"

    @property
    def name(self) -> str:
        return f"{self.file_id}_{self.write_token}_{self.instant_time}{self.extension}"


@dataclass(frozen=True)
class LogFileName:
    """A parsed log file name."""

    file_id: str
    instant_time: str
    version: int
    write_token: str | None = None
    extension: str = "log"
    cdc: bool = False

    @property
    def name(self) -> str:
        tail = f"_{self.write_token}" if self.write_token else ""
        cdc = ".cdc" if self.cdc else ""
        return f".{self.file_id}_{self.instant_time}.{self.extension}.{self.version}{tail}{cdc}"


@lru_cache(maxsize=1 << 16)  # file names repeat across listings and reads; results immutable
def parse_base_file_name(name: str) -> BaseFileName | None:
    """Parse ``<fileId>_<writeToken>_<instantTime>.<ext>``; None if ``name`` is not one."""
    if name.startswith("."):
        return None
    m = _BASE_RE.match(name)
    if not m:
        return None
    file_id, token, instant, ext = m.groups()
    if ext not in BASE_FILE_EXTENSIONS:
        return None
    return BaseFileName(file_id, token, instant, ext)


@lru_cache(maxsize=1 << 16)  # as parse_base_file_name
def parse_log_file_name(name: str) -> LogFileName | None:
    """Parse ``.<fileId>_<instant>.log.<version>[_<writeToken>]``; None if not a log file."""
    m = _LOG_RE_PLAIN.match(name) or _LOG_RE.match(name)
    if not m:
        return None
    file_id, instant, ext, version, token, cdc = m.groups()
    return LogFileName(file_id, instant, int(version), token, ext, bool(cdc))


def base_file_name(file_id: str, write_token: str, instant_time: str, ext: str = ".parquet") -> str:
    """Format a base file name (Java ``FSUtils.makeBaseFileName``)."""
    _check_file_id(file_id)
    _check_token(write_token)
    return BaseFileName(file_id, write_token, instant_time, ext).name


def log_file_name(file_id: str, instant_time: str, version: int, write_token: str) -> str:
    """Format a log file name (Java ``FSUtils.makeLogFileName``)."""
    _check_file_id(file_id)
    _check_token(write_token)
    if version < 1:
        raise ValueError(f"log version must be >= 1, got {version}")
    return LogFileName(file_id, instant_time, version, write_token).name


def write_token(task_partition_id: int, stage_id: int, task_attempt_id: int) -> str:
    """``<taskPartitionId>-<stageId>-<taskAttemptId>`` (Java ``FSUtils.makeWriteToken``)."""
    return f"{int(task_partition_id)}-{int(stage_id)}-{int(task_attempt_id)}"


def bucket_file_id(bucket: int, uuid: str) -> str:
    """The fileId of a bucket-index file group: ``%08d`` of ``bucket``, ``uuid`` without its first
    8 chars, ``-0`` (Java ``BucketIdentifier.newBucketFileIdPrefix`` + ``FSUtils.createNewFileId``).
    """
    return f"{bucket:0{_BUCKET_ID_DIGITS}d}{uuid[_BUCKET_ID_DIGITS:]}-0"


def bucket_id_of(file_id: str) -> int | None:
    """The bucket id of a bucket-index fileId: its first 8 chars as a decimal int (Java
    ``BucketIdentifier.bucketIdFromFileId``); None if the fileId does not start with 8 digits."""
    head = file_id[:_BUCKET_ID_DIGITS]
    if len(head) != _BUCKET_ID_DIGITS or not (head.isascii() and head.isdigit()):
        return None
    return int(head)


def _check_file_id(file_id: str) -> None:
    if not file_id or "_" in file_id or "/" in file_id:
        raise ValueError(f"invalid fileId {file_id!r}: must be non-empty without '_' or '/'")


def _check_token(token: str) -> None:
    if not _TOKEN_RE.match(token):
        raise ValueError(f"invalid write token {token!r}: expected <int>-<int>-<int>")


# --------------------------------------------------------------------------- partition paths
def partition_path_of(
    fields: list[str], values: list[str], hive_style: bool, url_encode: bool = False
) -> str:
    """Format a relative partition path from string values (``f1=v1/f2=v2`` when hive style)."""
    parts = []
    for f, v in zip(fields, values, strict=True):
        v = quote(v, safe="") if url_encode else v
        parts.append(f"{f}={v}" if hive_style else v)
    return "/".join(parts)


def partition_values_of(partition_path: str, fields: list[str], hive_style: bool) -> list[str]:
    """Split a partition path into raw string values, one per partition field (best effort).

    Non-hive paths with more segments than fields (timestamp key generators writing
    ``yyyy/MM/dd``) are returned as one value per field by joining the extra segments
    into the last field.
    """
    if not fields:
        return []
    segs = partition_path.split("/") if partition_path else []
    vals = [s.split("=", 1)[1] if hive_style and "=" in s else s for s in segs]
    if len(vals) > len(fields):
        vals = [*vals[: len(fields) - 1], "/".join(vals[len(fields) - 1 :])]
    return vals + [""] * (len(fields) - len(vals))


# --------------------------------------------------------------------------- data file paths
def file_path(partition_path: str, name: str) -> str:
    """The path of file ``name`` of partition ``partition_path``, relative to the base path
    (``name`` alone in the root partition ``""`` of a non-partitioned table)."""
    return f"{partition_path}/{name}" if partition_path else name


def partition_of(path: str) -> str:
    """The partition path of a data file path relative to the base path (``""``: the root)."""
    return path.rpartition("/")[0]


def file_name_of(path: str) -> str:
    """The last segment of ``path`` (a file's name)."""
    return path.rpartition("/")[2]


def relative_path(storage: Storage, path: str, partition: str | None = None) -> str:
    """A data file path from a plan (full URI, absolute path or relative) relative to the table.

    Hudi writes full paths into cleaner and rollback plans; ours carry full URIs too. When a
    path is outside the table (the table was moved), ``partition`` + the file name is used.
    """
    for prefix in (storage.uri(), storage.full_path(), storage.base_uri):
        p = prefix.rstrip("/") + "/"
        if path.startswith(p):
            return path[len(p) :]
    for scheme in ("file://", "file:"):
        if path.startswith(scheme):
            return relative_path(storage, path[len(scheme) :], partition)
    if "://" in path or path.startswith("/"):
        return file_path(partition or "", file_name_of(path))
    return path.lstrip("/")
