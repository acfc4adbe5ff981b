"""Commit metadata: the content of commit, deltacommit and replacecommit instant files.

As Hudi writes it: **JSON** (Jackson, pretty printed) in table version 6 / layout 1; an **Avro
object container file** (``Obj\\x01``, codec null, one record of ``HoodieCommitMetadata`` or
``HoodieReplaceCommitMetadata``) in versions 8 and 9 / layout 2.
:meth:`CommitMetadata.from_bytes` detects which. An empty file (``T.commit.requested``...) gives
the empty default object ("no content"), never an error.

The plans and metadata of the table services are in :mod:`hudi_ds.timeline.plans`, the Avro
container files and the record base class in :mod:`hudi_ds.timeline.avro_record`.
"""

from __future__ import annotations

import dataclasses
import functools
import json
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from hudi_ds.errors import CorruptFileError
from hudi_ds.layout.naming import file_name_of
from hudi_ds.timeline.avro_record import (
    AVRO_MAGIC,
    AvroRecord,
    read_avro_records,
    write_avro_record,
)

__all__ = [
    "CommitMetadata",
    "RuntimeStats",
    "WriteStat",
]


# Java's HoodieWriteStat.NULL_COMMIT: prevCommit of a new file group is the *string* "null"
NULL_COMMIT = "null"


@dataclass
class RuntimeStats(AvroRecord):
    """``HoodieRuntimeStats``: milliseconds spent scanning, creating and upserting."""

    AVRO_SCHEMA: ClassVar[str] = ""

    total_scan_time: int = 0
    total_create_time: int = 0
    total_upsert_time: int = 0

    def to_json(self) -> dict[str, Any]:
        """The v6 JSON object (Jackson field order: scan, upsert, create)."""
        return {
            "totalScanTime": self.total_scan_time,
            "totalUpsertTime": self.total_upsert_time,
            "totalCreateTime": self.total_create_time,
        }

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> RuntimeStats:
        """Parse the v6 JSON object."""
        return cls(
            total_scan_time=int(obj.get("totalScanTime") or 0),
            total_create_time=int(obj.get("totalCreateTime") or 0),
            total_upsert_time=int(obj.get("totalUpsertTime") or 0),
        )


# Jackson's field order of HoodieWriteStat (v6 JSON), then the HoodieDeltaWriteStat additions
_JSON_BASE_FIELDS = (
    "fileId",
    "path",
    "cdcStats",
    "prevCommit",
    "numWrites",
    "numDeletes",
    "numUpdateWrites",
    "numInserts",
    "totalWriteBytes",
    "totalWriteErrors",
    "tempPath",
    "partitionPath",
    "totalLogRecords",
    "totalLogFilesCompacted",
    "totalLogSizeCompacted",
    "totalUpdatedRecordsCompacted",
    "totalLogBlocks",
    "totalCorruptLogBlock",
    "totalRollbackBlocks",
    "fileSizeInBytes",
    "minEventTime",
    "maxEventTime",
    "runtimeStats",
)


_JSON_DELTA_FIELDS = ("logVersion", "logOffset", "baseFile", "logFiles", "recordsStats")


# fields of the v8 Avro HoodieWriteStat that the v6 JSON does not have
_AVRO_ONLY_FIELDS = ("totalLogFiles", "prevBaseFile", "totalLogReadTimeMs", "numUpdates")


@functools.lru_cache(maxsize=1024)
def _snake(name: str) -> str:
    return "".join("_" + c.lower() if c.isupper() else c for c in name)


_JSON_FIELDS: dict[type, tuple[tuple[str, str, Any], ...]] = {}
#: ``(JSON name, attribute)`` of a base file's write stat, and of a log file's, in JSON order
_JSON_BASE_ATTRS = tuple((n, _snake(n)) for n in _JSON_BASE_FIELDS)
_JSON_DELTA_ATTRS = _JSON_BASE_ATTRS + tuple((n, _snake(n)) for n in _JSON_DELTA_FIELDS)


def _json_fields(cls: type) -> tuple[tuple[str, str, Any], ...]:
    """``(JSON name, attribute, default)`` of every write stat field a JSON object may carry
    (computed once per class: a commit's metadata holds a stat per file it wrote)."""
    out = _JSON_FIELDS.get(cls)
    if out is None:
        defaults = {f.name: f.default for f in dataclasses.fields(cls)}
        names = _JSON_BASE_FIELDS + _JSON_DELTA_FIELDS + _AVRO_ONLY_FIELDS
        out = tuple((n, _snake(n), defaults.get(_snake(n), dataclasses.MISSING)) for n in names)
        _JSON_FIELDS[cls] = out
    return out


@dataclass
class WriteStat(AvroRecord):
    """One file written by an instant (``HoodieWriteStat`` / ``HoodieDeltaWriteStat``).

    Every field of the v6 JSON and of the v8/v9 Avro record. A *delta* stat (a log file write)
    is one with ``log_files`` or ``log_version`` set; only those carry ``logVersion``,
    ``logOffset``, ``baseFile``, ``logFiles`` and ``recordsStats`` in the JSON.

    Attributes:
        file_id: the file group id (``""`` in inflight stats of inserts).
        path: the written file, relative to the base path (``None`` in inflight stats).
        prev_commit: base instant of the previous slice, the string ``"null"`` for a new
            file group (as Java writes it).
        records_stats: JSON-only ``recordsStats`` of delta stats, verbatim
            (``{"val": null}`` when ``None``).
    """

    AVRO_SCHEMA: ClassVar[str] = ""
    AVRO_SKIP: ClassVar[frozenset[str]] = frozenset({"records_stats"})

    file_id: str | None = None
    path: str | None = None
    prev_commit: str | None = NULL_COMMIT
    num_writes: int = 0
    num_deletes: int = 0
    num_update_writes: int = 0
    total_write_bytes: int = 0
    total_write_errors: int = 0
    partition_path: str | None = None
    total_log_records: int = 0
    total_log_files: int | None = None
    total_updated_records_compacted: int = 0
    num_inserts: int = 0
    total_log_blocks: int = 0
    total_corrupt_log_block: int = 0
    total_rollback_blocks: int = 0
    file_size_in_bytes: int = 0
    log_version: int | None = None
    log_offset: int | None = None
    base_file: str | None = None
    log_files: list[str] | None = None
    cdc_stats: dict[str, int] | None = None
    prev_base_file: str | None = None
    min_event_time: int | None = None
    max_event_time: int | None = None
    runtime_stats: RuntimeStats | None = None
    total_log_files_compacted: int = 0
    total_log_read_time_ms: int = 0
    total_log_size_compacted: int = 0
    temp_path: str | None = None
    num_updates: int = 0
    records_stats: Any = None

    @property
    def is_delta(self) -> bool:
        """True for a log-file write (Java ``HoodieDeltaWriteStat``)."""
        return self.log_files is not None or self.log_version is not None

    @property
    def file_name(self) -> str | None:
        """The last segment of :attr:`path`."""
        return None if self.path is None else file_name_of(self.path)

    def to_json(self) -> dict[str, Any]:
        """The v6 Jackson JSON object (field order and ``"null"`` strings as Java writes)."""
        # (a commit of many files serializes a stat per file: the attributes are read from the
        # instance's dict by precomputed names, the three fields with their own form after)
        attrs = self.__dict__
        delta = self.is_delta
        out = {n: attrs[a] for n, a in (_JSON_DELTA_ATTRS if delta else _JSON_BASE_ATTRS)}
        rs = self.runtime_stats
        if rs is not None:
            out["runtimeStats"] = rs.to_json()
        if delta:
            if self.log_files is not None:
                out["logFiles"] = list(self.log_files)
            if self.records_stats is None:
                out["recordsStats"] = {"val": None}
        return out

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> WriteStat:
        """Parse one v6 JSON write stat (unknown keys are ignored, as Java does)."""
        kwargs: dict[str, Any] = {}
        for name, attr, default in _json_fields(cls):
            if name not in obj:
                continue
            value = obj[name]
            if name == "runtimeStats":
                kwargs[attr] = None if value is None else RuntimeStats.from_json(value)
            elif name == "recordsStats":
                kwargs[attr] = None if value == {"val": None} else value  # Java's empty Option
            elif value is None and default not in (None, NULL_COMMIT):
                continue  # Java primitive: keep the default
            else:
                kwargs[attr] = value
        if ("logFiles" in obj or "logVersion" in obj) and kwargs.get("log_files") is None:
            kwargs["log_files"] = []
        return cls(**kwargs)


_COMMIT_SCHEMA = "HoodieCommitMetadata"


_REPLACE_SCHEMA = "HoodieReplaceCommitMetadata"


@dataclass
class CommitMetadata:
    """Metadata of a commit, deltacommit, replacecommit or completed compaction/clustering.

    Attributes:
        partition_to_write_stats: partition path -> write stats.
        compacted: True for the commit of a compaction.
        extra_metadata: e.g. ``schema`` (writer schema JSON without meta fields).
        operation_type: ``UPSERT``, ``INSERT``, ``BULK_INSERT``, ``COMPACT``, ``CLUSTER``,
            ``INSERT_OVERWRITE``...
        partition_to_replace_file_ids: replaced file groups (replace metadata only).
        is_replace: replace metadata (``HoodieReplaceCommitMetadata``); set automatically when
            ``partition_to_replace_file_ids`` is non-empty.
        version: the Avro ``version`` field (Hudi 1.x writes null).
    """

    partition_to_write_stats: dict[str, list[WriteStat]] = field(default_factory=dict)
    compacted: bool = False
    extra_metadata: dict[str, str] = field(default_factory=dict)
    operation_type: str | None = "UNKNOWN"
    partition_to_replace_file_ids: dict[str, list[str]] = field(default_factory=dict)
    is_replace: bool = False
    version: int | None = None

    def __post_init__(self) -> None:
        if self.partition_to_replace_file_ids:
            self.is_replace = True

    # -- queries ------------------------------------------------------------------------------
    @property
    def schema(self) -> str | None:
        """The writer schema (``extraMetadata["schema"]``), or None if absent/empty."""
        return self.extra_metadata.get("schema") or None

    def write_stats(self) -> Iterator[WriteStat]:
        """All write stats, partition by partition."""
        for stats in self.partition_to_write_stats.values():
            yield from stats

    def file_ids_by_partition(self) -> dict[str, set[str]]:
        """Partition path -> ids of the file groups written (empty ids skipped)."""
        out: dict[str, set[str]] = {}
        for partition, stats in self.partition_to_write_stats.items():
            ids = {s.file_id for s in stats if s.file_id}
            if ids:
                out[partition] = ids
        return out

    def write_paths(self) -> list[str]:
        """Paths (relative to the base path) of all files written."""
        return [s.path for s in self.write_stats() if s.path]

    def replaced_file_ids(self) -> dict[str, set[str]]:
        """Partition path -> ids of the file groups this instant replaced."""
        return {p: set(ids) for p, ids in self.partition_to_replace_file_ids.items() if ids}

    # -- parsing ------------------------------------------------------------------------------
    @classmethod
    def from_bytes(cls, data: bytes) -> CommitMetadata:
        """Parse JSON (v6) or Avro (v8/v9) commit or replace metadata; empty -> empty object.

        Raises:
            CorruptFileError: if the content is neither.
        """
        if data.startswith(AVRO_MAGIC):
            records = read_avro_records(data)
            return cls.from_avro_record(records[0]) if records else cls()
        text = data.strip()
        if not text:
            return cls()
        if text.startswith(b"{"):
            try:
                obj = json.loads(text.decode("utf-8"))
            except (UnicodeDecodeError, ValueError) as e:
                raise CorruptFileError(f"unreadable commit metadata JSON: {e}") from e
            return cls.from_json(obj)
        raise CorruptFileError(f"unknown commit metadata format (starts with {data[:4]!r})")

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> CommitMetadata:
        """Build from the v6 JSON object."""
        stats = {
            p: [WriteStat.from_json(s) for s in (lst or [])]
            for p, lst in (obj.get("partitionToWriteStats") or {}).items()
        }
        replace = obj.get("partitionToReplaceFileIds")
        return cls(
            partition_to_write_stats=stats,
            compacted=bool(obj.get("compacted") or False),
            extra_metadata=dict(obj.get("extraMetadata") or {}),
            operation_type=obj.get("operationType"),
            partition_to_replace_file_ids={p: list(v or []) for p, v in (replace or {}).items()},
            is_replace="partitionToReplaceFileIds" in obj,
        )

    @classmethod
    def from_avro_record(cls, record: Mapping[str, Any]) -> CommitMetadata:
        """Build from a decoded ``HoodieCommitMetadata`` / ``HoodieReplaceCommitMetadata``."""
        stats = {
            p: [WriteStat.from_avro(s) for s in (lst or [])]
            for p, lst in (record.get("partitionToWriteStats") or {}).items()
        }
        replace = record.get("partitionToReplaceFileIds")
        return cls(
            partition_to_write_stats=stats,
            compacted=bool(record.get("compacted") or False),
            extra_metadata=dict(record.get("extraMetadata") or {}),
            operation_type=record.get("operationType"),
            partition_to_replace_file_ids={p: list(v or []) for p, v in (replace or {}).items()},
            is_replace="partitionToReplaceFileIds" in record,
            version=record.get("version"),
        )

    # -- writing ------------------------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        """The v6 JSON object (Jackson field order)."""
        out: dict[str, Any] = {
            "partitionToWriteStats": {
                p: [s.to_json() for s in stats]
                for p, stats in self.partition_to_write_stats.items()
            },
            "compacted": self.compacted,
            "extraMetadata": dict(self.extra_metadata),
            "operationType": self.operation_type,
        }
        if self.is_replace:
            out["partitionToReplaceFileIds"] = {
                p: list(ids) for p, ids in self.partition_to_replace_file_ids.items()
            }
        return out

    def to_json_bytes(self) -> bytes:
        """The v6 (layout 1) file content: Jackson's pretty-printed JSON, byte for byte."""
        return jackson_pretty(self.to_json()).encode("utf-8")

    def to_avro_record(self) -> dict[str, Any]:
        """The Avro record (``HoodieReplaceCommitMetadata`` shape when :attr:`is_replace`)."""
        rec: dict[str, Any] = {
            "partitionToWriteStats": {
                p: [s.to_avro() for s in stats]
                for p, stats in self.partition_to_write_stats.items()
            },
            "compacted": self.compacted,
            "extraMetadata": dict(self.extra_metadata),
            "version": self.version,
            "operationType": self.operation_type,
        }
        if self.is_replace:
            rec["partitionToReplaceFileIds"] = {
                p: list(ids) for p, ids in self.partition_to_replace_file_ids.items()
            }
        return rec

    def to_avro_bytes(self) -> bytes:
        """The v8/v9 (layout 2) file content: an Avro container file with one record."""
        schema = _REPLACE_SCHEMA if self.is_replace else _COMMIT_SCHEMA
        return write_avro_record(schema, self.to_avro_record())

    def to_bytes(self, layout: int) -> bytes:
        """JSON for timeline layout 1, Avro for layout 2."""
        return self.to_json_bytes() if layout == 1 else self.to_avro_bytes()


#: the extraMetadata member of commit JSON as Jackson pretty-prints it (a member of the root
#: object: a line indented two spaces, which a JSON string cannot hold: it has no raw newline)
_EXTRA_KEY = b'\n  "extraMetadata" : '


def extra_metadata_of(data: bytes) -> dict[str, str]:
    """``extraMetadata`` of a commit metadata file (:attr:`CommitMetadata.extra_metadata`).

    In Jackson's pretty-printed JSON only that member's object is parsed, found from the end
    of the text (a bulk insert's 100 MB of write stats come before it; the last member of a
    repeated key counts, as when parsing all); any other content is decoded whole.

    Raises:
        CorruptFileError: as :meth:`CommitMetadata.from_bytes`.
    """
    text = data.strip()
    if text.startswith(b'{\n  "') and text.endswith(b"\n}"):
        at = text.rfind(_EXTRA_KEY)
        start = at + len(_EXTRA_KEY)
        if at < 0:
            end = -1
        elif text.startswith(b"{ }", start):
            end = start + 3
        elif text.startswith(b"{\n", start):
            close = text.find(b"\n  }", start)
            end = close + 4 if close >= 0 else -1
        else:
            end = -1
        if end >= 0 and text[end : end + 5] in (b',\n  "', b"\n}"):
            try:
                obj = json.loads(text[start:end].decode("utf-8"))
            except (UnicodeDecodeError, ValueError):
                obj = None
            if isinstance(obj, dict):
                return dict(obj)
    return CommitMetadata.from_bytes(data).extra_metadata


#: a JSON string literal as ``json.dumps(s, ensure_ascii=False)`` writes it
_json_string: Callable[[str], str] = json.encoder.encode_basestring  # type: ignore[attr-defined]


def jackson_pretty(value: Any, indent: int = 0) -> str:
    """Serialize like Jackson's ``DefaultPrettyPrinter`` (as Hudi 0.x writes commit JSON).

    Objects break lines with two-space indents and ``"key" : value``; arrays stay on one line
    (``[ a, b ]``); empty containers are ``{ }`` and ``[ ]``; no trailing newline.
    """
    # scalars first (most values are): the encodings json.dumps(..., ensure_ascii=False) uses,
    # without its per-call encoder set-up (a commit of many files has thousands of values)
    t = type(value)
    if t is str:
        return _json_string(value)
    if t is int:
        return int.__repr__(value)
    if value is None or t is bool:
        return "null" if value is None else ("true" if value else "false")
    if isinstance(value, Mapping):
        if not value:
            return "{ }"
        pad = "  " * (indent + 1)
        items = [
            f"{pad}{_json_string(str(k))} : {jackson_pretty(v, indent + 1)}"
            for k, v in value.items()
        ]
        return "{\n" + ",\n".join(items) + "\n" + "  " * indent + "}"
    if isinstance(value, list | tuple):
        if not value:
            return "[ ]"
        return "[ " + ", ".join(jackson_pretty(v, indent) for v in value) + " ]"
    return json.dumps(value, ensure_ascii=False)
