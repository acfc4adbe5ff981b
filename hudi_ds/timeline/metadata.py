"""Contents of instant files: commit metadata, plans and the metadata of table services.

Formats, as Hudi writes them:

* commit / deltacommit / replacecommit metadata (completed and inflight): **JSON** (Jackson,
  pretty printed) in table version 6 / layout 1; an **Avro object container file** (``Obj\\x01``,
  codec null, one record of ``HoodieCommitMetadata`` or ``HoodieReplaceCommitMetadata``) in
  versions 8 and 9 / layout 2. :meth:`CommitMetadata.from_bytes` detects which.
* every other content -- compaction plan, requested replace metadata (clustering plan), rollback
  plan and metadata, cleaner plan and clean metadata, savepoint, indexing -- is an Avro object
  container file in all versions.
* many files are empty (``T.commit.requested``, ``T.compaction.inflight``...): ``from_bytes(b"")``
  returns the empty default object of the class ("no content"), never an error.

The Avro schemas are package data (``hudi_ds/timeline/avro/*.avsc``); those of the commit,
replace, compaction, rollback and indexing contents were extracted from real Hudi timeline files,
the others written from ``hudi-common/src/main/avro`` of apache/hudi.
"""

from __future__ import annotations

import dataclasses
import functools
import io
import json
import os
import types
import typing
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any, ClassVar, TypeVar

import fastavro

from hudi_ds.errors import CorruptFileError
from hudi_ds.layout.naming import file_name_of, file_path

__all__ = [
    "AVRO_MAGIC",
    "ActionInstant",
    "AvroRecord",
    "CleanFileInfo",
    "CleanMetadata",
    "CleanPartitionMetadata",
    "CleanerPlan",
    "ClusteringGroup",
    "ClusteringPlan",
    "ClusteringStrategy",
    "CommitMetadata",
    "CompactionOperation",
    "CompactionPlan",
    "CompactionStrategy",
    "IndexCommitMetadata",
    "IndexPartitionInfo",
    "IndexPlan",
    "InstantInfo",
    "RequestedReplaceMetadata",
    "RestoreMetadata",
    "RestorePlan",
    "RollbackMetadata",
    "RollbackPartitionMetadata",
    "RollbackPlan",
    "RollbackRequest",
    "RuntimeStats",
    "SavepointMetadata",
    "SavepointPartitionMetadata",
    "SliceInfo",
    "WriteStat",
    "avro_schema",
    "java_schema_text",
    "read_avro_records",
    "write_avro_record",
]

AVRO_MAGIC = b"Obj\x01"

# Java's HoodieWriteStat.NULL_COMMIT: prevCommit of a new file group is the *string* "null"
NULL_COMMIT = "null"


# -- Avro container files ------------------------------------------------------------------------


@cache
def _schema_json(name: str) -> dict[str, Any]:
    path = resources.files("hudi_ds.timeline").joinpath("avro", f"{name}.avsc")
    return typing.cast(dict[str, Any], json.loads(path.read_text(encoding="utf-8")))


@cache
def avro_schema(name: str) -> Any:
    """The parsed (fastavro) schema ``name``, e.g. ``"HoodieCommitMetadata"``."""
    return fastavro.parse_schema(_schema_json(name))


def read_avro_records(data: bytes) -> list[dict[str, Any]]:
    """Decode all records of an Avro object container file.

    Raises:
        CorruptFileError: if ``data`` is not a readable Avro container file.
    """
    if not data.startswith(AVRO_MAGIC):
        raise CorruptFileError(f"not an Avro container file (starts with {data[:4]!r})")
    try:
        return [typing.cast(dict[str, Any], r) for r in fastavro.reader(io.BytesIO(data))]
    except Exception as e:  # fastavro raises assorted errors on torn files
        raise CorruptFileError(f"unreadable Avro container file: {e}") from e


_AVRO_PRIMITIVES = frozenset(
    {"null", "boolean", "int", "long", "float", "double", "bytes", "string"}
)
# keys Java's Schema.toJson writes itself (everything else is a schema property)
_AVRO_RESERVED = frozenset(
    {"type", "name", "namespace", "doc", "fields", "items", "values", "symbols", "size"}
    | {"aliases", "default", "logicalType", "order"}
)


def _compact_json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _java_schema_json(schema: Any, namespace: str | None, known: set[str]) -> str:
    """``schema`` (parsed .avsc JSON) as Avro Java's ``Schema.toString()`` prints it: compact,
    ``type, name, namespace (when not the enclosing one), doc, fields|symbols|size|items|values``,
    then the schema's properties; a field as ``name, type, doc, default``, then its
    properties; a named type printed once, then referenced by name."""
    if isinstance(schema, str):
        if schema in _AVRO_PRIMITIVES:
            return _compact_json(schema)
        space, _, name = schema.rpartition(".")
        return _compact_json(name if (space or namespace) == namespace else schema)
    if isinstance(schema, list):
        return "[" + ",".join(_java_schema_json(s, namespace, known) for s in schema) + "]"
    kind = schema["type"]
    props = "".join(
        f",{_compact_json(k)}:{_compact_json(v)}"
        for k, v in schema.items()
        if k not in _AVRO_RESERVED
    )
    if kind in ("record", "error", "enum", "fixed"):
        space, _, name = str(schema["name"]).rpartition(".")
        space = space or schema.get("namespace", namespace) or ""
        full = f"{space}.{name}" if space else name
        if full in known:
            return _compact_json(name if space == (namespace or "") else full)
        known.add(full)
        out = f'{{"type":{_compact_json(kind)},"name":{_compact_json(name)}'
        if space != (namespace or ""):
            out += f',"namespace":{_compact_json(space)}'
        if "doc" in schema:
            out += f',"doc":{_compact_json(schema["doc"])}'
        if kind == "enum":
            out += f',"symbols":{_compact_json(schema["symbols"])}'
        elif kind == "fixed":
            out += f',"size":{_compact_json(schema["size"])}'
        else:
            fields = []
            for f in schema["fields"]:
                fo = f'{{"name":{_compact_json(f["name"])},"type":'
                fo += _java_schema_json(f["type"], space, known)
                if "doc" in f:
                    fo += f',"doc":{_compact_json(f["doc"])}'
                if "default" in f:
                    fo += f',"default":{_compact_json(f["default"])}'
                fo += "".join(
                    f",{_compact_json(k)}:{_compact_json(v)}"
                    for k, v in f.items()
                    if k not in _AVRO_RESERVED
                )
                fields.append(fo + "}")
            out += ',"fields":[' + ",".join(fields) + "]"
        return out + props + "}"
    # Hudi's .avsc files put a "default" on some array/map types: a plain property to Java
    extra = f',"default":{_compact_json(schema["default"])}' if "default" in schema else ""
    if kind == "array":
        inner = ',"items":' + _java_schema_json(schema["items"], namespace, known)
    elif kind == "map":
        inner = ',"values":' + _java_schema_json(schema["values"], namespace, known)
    else:
        inner = ""
    logical = (
        f',"logicalType":{_compact_json(schema["logicalType"])}' if "logicalType" in schema else ""
    )
    return f'{{"type":{_compact_json(kind)}{inner}{props}{extra}{logical}}}'


@cache
def java_schema_text(name: str) -> str:
    """The schema ``name`` as Hudi (Avro Java ``Schema.toString()``) writes it into the header
    of its timeline files -- byte for byte the ``avro.schema`` of the fixtures' files."""
    return _java_schema_json(_schema_json(name), None, set())


def _avro_long(n: int) -> bytes:
    z = (n << 1) ^ (n >> 63)
    out = bytearray()
    while z & ~0x7F:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)
    return bytes(out)


def _avro_bytes(b: bytes) -> bytes:
    return _avro_long(len(b)) + b


def write_avro_record(schema_name: str, record: Mapping[str, Any]) -> bytes:
    """Encode one record as an Avro object container file, as Hudi writes its timeline files
    (``TimelineMetadataUtils.serializeAvroMetadata``: Avro Java's ``DataFileWriter``, codec
    null): the header holds only ``avro.schema`` (Java's schema text, :func:`java_schema_text`),
    then one block with the record; only the random 16-byte sync marker differs from Java's."""
    body = io.BytesIO()
    fastavro.schemaless_writer(body, avro_schema(schema_name), dict(record))
    data = body.getvalue()
    sync = os.urandom(16)
    header = (
        AVRO_MAGIC
        + _avro_long(1)
        + _avro_bytes(b"avro.schema")
        + _avro_bytes(java_schema_text(schema_name).encode("utf-8"))
        + _avro_long(0)
        + sync
    )
    return header + _avro_long(1) + _avro_bytes(data) + sync


# -- dataclass <-> Avro record ----------------------------------------------------------------


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(p[:1].upper() + p[1:] for p in rest)


Conv = Callable[[Any], Any]


def _identity(v: Any) -> Any:
    return v


def _strip_optional(tp: Any) -> tuple[Any, bool]:
    origin = typing.get_origin(tp)
    if origin is typing.Union or origin is types.UnionType:
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        optional = len(args) != len(typing.get_args(tp))
        if len(args) == 1:
            return args[0], optional
        return tp, optional
    return tp, False


def _converter(tp: Any, decode: bool) -> Conv:
    tp, _ = _strip_optional(tp)
    origin = typing.get_origin(tp)
    if isinstance(tp, type) and issubclass(tp, AvroRecord):
        rec_cls = tp
        if decode:
            return lambda v: None if v is None else rec_cls.from_avro(v)
        return lambda v: None if v is None else v.to_avro()
    if origin is list:
        (item,) = typing.get_args(tp)
        conv = _converter(item, decode)
        if conv is _identity:
            return lambda v: None if v is None else list(v)
        return lambda v: None if v is None else [conv(x) for x in v]
    if origin is dict:
        _, value = typing.get_args(tp)
        conv = _converter(value, decode)
        if conv is _identity:
            return lambda v: None if v is None else dict(v)
        return lambda v: None if v is None else {k: conv(x) for k, x in v.items()}
    return _identity


@dataclass(frozen=True)
class _FieldSpec:
    attr: str
    avro: str
    optional: bool
    decode: Conv
    encode: Conv
    default: Callable[[], Any]


R = TypeVar("R", bound="AvroRecord")


class AvroRecord:
    """Mixin of the dataclasses below: conversion to and from Avro records and container files.

    Python fields are the snake_case of the Avro fields (``file_id`` <-> ``fileId``) unless
    ``AVRO_NAMES`` says otherwise; fields in ``AVRO_SKIP`` exist only in Python (JSON-only
    fields). A null Avro value of a non-optional Python field becomes the field's default.
    """

    AVRO_SCHEMA: ClassVar[str] = ""
    AVRO_NAMES: ClassVar[dict[str, str]] = {}
    AVRO_SKIP: ClassVar[frozenset[str]] = frozenset()

    @classmethod
    def _specs(cls) -> tuple[_FieldSpec, ...]:
        specs = cls.__dict__.get("_avro_specs")
        if specs is None:
            hints = typing.get_type_hints(cls)
            out = []
            for f in dataclasses.fields(cls):  # type: ignore[arg-type]
                if f.name in cls.AVRO_SKIP:
                    continue
                tp = hints[f.name]
                _, optional = _strip_optional(tp)
                out.append(
                    _FieldSpec(
                        f.name,
                        cls.AVRO_NAMES.get(f.name, _camel(f.name)),
                        optional,
                        _converter(tp, True),
                        _converter(tp, False),
                        _default_of(f),
                    )
                )
            specs = tuple(out)
            cls._avro_specs = specs  # type: ignore[attr-defined]
        return typing.cast(tuple[_FieldSpec, ...], specs)

    @classmethod
    def from_avro(cls: type[R], record: Mapping[str, Any]) -> R:
        """Build from a decoded Avro record (a dict with the Avro field names)."""
        kwargs: dict[str, Any] = {}
        for s in cls._specs():
            value = record.get(s.avro)
            if value is None and not s.optional:
                continue  # keep the dataclass default
            kwargs[s.attr] = s.decode(value)
        return cls(**kwargs)

    def to_avro(self) -> dict[str, Any]:
        """The Avro record (a dict with the Avro field names)."""
        return {s.avro: s.encode(getattr(self, s.attr)) for s in self._specs()}

    @classmethod
    def from_bytes(cls: type[R], data: bytes) -> R:
        """Parse an instant file's content; empty content gives the empty default object.

        Raises:
            CorruptFileError: if the content is not an Avro container file of this record.
        """
        if not data.strip():
            return cls()
        records = read_avro_records(data)
        if not records:
            return cls()
        return cls.from_avro(records[0])

    def to_bytes(self) -> bytes:
        """The content of the instant file: an Avro container file holding this record."""
        return write_avro_record(self.AVRO_SCHEMA, self.to_avro())


def _default_of(f: dataclasses.Field[Any]) -> Callable[[], Any]:
    if f.default is not dataclasses.MISSING:
        value = f.default
        return lambda: value
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory
    return lambda: None


# -- commit metadata -----------------------------------------------------------------------------


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
        out: dict[str, Any] = {}
        names = _JSON_BASE_FIELDS + (_JSON_DELTA_FIELDS if self.is_delta else ())
        for name in names:
            if name == "runtimeStats":
                rs = self.runtime_stats
                out[name] = None if rs is None else rs.to_json()
            elif name == "recordsStats":
                out[name] = {"val": None} if self.records_stats is None else self.records_stats
            elif name == "logFiles":
                out[name] = None if self.log_files is None else list(self.log_files)
            else:
                out[name] = getattr(self, _snake(name))
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


# -- rollback ------------------------------------------------------------------------------------


@dataclass
class InstantInfo(AvroRecord):
    """``HoodieInstantInfo``: an instant time and its action."""

    commit_time: str = ""
    action: str = ""


@dataclass
class RollbackRequest(AvroRecord):
    """``HoodieRollbackRequest``: what to undo in one file group (or partition)."""

    partition_path: str = ""
    file_id: str | None = None
    latest_base_instant: str | None = None
    files_to_be_deleted: list[str] = field(default_factory=list)
    log_blocks_to_be_deleted: dict[str, int] | None = None


@dataclass
class RollbackPlan(AvroRecord):
    """``HoodieRollbackPlan`` (content of ``T.rollback.requested``)."""

    AVRO_SCHEMA: ClassVar[str] = "HoodieRollbackPlan"
    AVRO_NAMES: ClassVar[dict[str, str]] = {"rollback_requests": "RollbackRequests"}

    instant_to_rollback: InstantInfo | None = None
    rollback_requests: list[RollbackRequest] | None = None
    version: int | None = 1


@dataclass
class RollbackPartitionMetadata(AvroRecord):
    """Per-partition result of a rollback.

    Attributes:
        success_delete_files: files deleted.
        rollback_log_files: log files that received a ROLLBACK command block -> size.
        log_files_from_failed_commit: log files the failed instant had written -> size.
    """

    partition_path: str = ""
    success_delete_files: list[str] = field(default_factory=list)
    failed_delete_files: list[str] = field(default_factory=list)
    rollback_log_files: dict[str, int] | None = None
    log_files_from_failed_commit: dict[str, int] | None = None


@dataclass
class RollbackMetadata(AvroRecord):
    """``HoodieRollbackMetadata`` (content of a completed rollback)."""

    AVRO_SCHEMA: ClassVar[str] = "HoodieRollbackMetadata"

    start_rollback_time: str = ""
    time_taken_in_millis: int = 0
    total_files_deleted: int = 0
    commits_rollback: list[str] = field(default_factory=list)
    partition_metadata: dict[str, RollbackPartitionMetadata] = field(default_factory=dict)
    version: int | None = 1
    instants_rollback: list[InstantInfo] = field(default_factory=list)

    @property
    def rolled_back_instants(self) -> list[str]:
        """Instant times rolled back (``commitsRollback`` and ``instantsRollback``), unique."""
        out = list(dict.fromkeys(self.commits_rollback))
        for i in self.instants_rollback:
            if i.commit_time and i.commit_time not in out:
                out.append(i.commit_time)
        return out


@dataclass
class RestorePlan(AvroRecord):
    """``HoodieRestorePlan`` (content of ``T.restore.requested``): what a restore rolls back."""

    AVRO_SCHEMA: ClassVar[str] = "HoodieRestorePlan"

    instants_to_rollback: list[InstantInfo] = field(default_factory=list)
    version: int | None = 2
    savepoint_to_restore_timestamp: str | None = None


@dataclass
class RestoreMetadata(AvroRecord):
    """``HoodieRestoreMetadata`` (content of a completed restore)."""

    AVRO_SCHEMA: ClassVar[str] = "HoodieRestoreMetadata"

    start_restore_time: str = ""
    time_taken_in_millis: int = 0
    instants_to_rollback: list[str] = field(default_factory=list)
    hoodie_restore_metadata: dict[str, list[RollbackMetadata | None]] = field(default_factory=dict)
    version: int | None = 1
    restore_instant_info: list[InstantInfo] = field(default_factory=list)
    extra_metadata: dict[str, str] | None = None


# -- compaction ----------------------------------------------------------------------------------


@dataclass
class CompactionOperation(AvroRecord):
    """``HoodieCompactionOperation``: one file slice to compact.

    In plan version 2 (Hudi >= 0.x default) ``data_file_path`` and ``delta_file_paths`` are file
    *names* inside ``partition_path``; version 1 plans hold full paths.
    """

    base_instant_time: str | None = None
    delta_file_paths: list[str] | None = None
    data_file_path: str | None = None
    file_id: str | None = None
    partition_path: str | None = None
    metrics: dict[str, float] | None = None
    bootstrap_file_path: str | None = None

    def _rel(self, name: str) -> str:
        return file_path(self.partition_path or "", file_name_of(name))

    @property
    def base_file_rel_path(self) -> str | None:
        """The base file, relative to the table base path (None for a log-only slice)."""
        return self._rel(self.data_file_path) if self.data_file_path else None

    @property
    def log_file_rel_paths(self) -> list[str]:
        """The log files, relative to the table base path."""
        return [self._rel(p) for p in self.delta_file_paths or []]


@dataclass
class CompactionStrategy(AvroRecord):
    """``HoodieCompactionStrategy``."""

    compactor_class_name: str | None = None
    strategy_params: dict[str, str] | None = None
    version: int | None = 1


@dataclass
class CompactionPlan(AvroRecord):
    """``HoodieCompactionPlan`` (content of ``T.compaction.requested`` / ``.logcompaction``)."""

    AVRO_SCHEMA: ClassVar[str] = "HoodieCompactionPlan"

    operations: list[CompactionOperation] | None = None
    extra_metadata: dict[str, str] | None = None
    version: int | None = 2
    strategy: CompactionStrategy | None = None
    preserve_hoodie_metadata: bool | None = False
    missing_schedule_partitions: list[str] | None = None


# -- replace / clustering ----------------------------------------------------------------------


@dataclass
class SliceInfo(AvroRecord):
    """``HoodieSliceInfo``: one file slice of a clustering group."""

    data_file_path: str | None = None
    delta_file_paths: list[str] | None = None
    file_id: str | None = None
    partition_path: str | None = None
    bootstrap_file_path: str | None = None
    version: int | None = 1


@dataclass
class ClusteringGroup(AvroRecord):
    """``HoodieClusteringGroup``."""

    slices: list[SliceInfo] | None = None
    metrics: dict[str, float] | None = None
    num_output_file_groups: int | None = 1
    extra_metadata: dict[str, str] | None = None
    version: int | None = 1


@dataclass
class ClusteringStrategy(AvroRecord):
    """``HoodieClusteringStrategy``."""

    strategy_class_name: str | None = None
    strategy_params: dict[str, str] | None = None
    version: int | None = 1


@dataclass
class ClusteringPlan(AvroRecord):
    """``HoodieClusteringPlan``."""

    input_groups: list[ClusteringGroup] | None = None
    strategy: ClusteringStrategy | None = None
    extra_metadata: dict[str, str] | None = None
    version: int | None = 1
    preserve_hoodie_metadata: bool | None = None
    missing_schedule_partitions: list[str] | None = None


@dataclass
class RequestedReplaceMetadata(AvroRecord):
    """``HoodieRequestedReplaceMetadata`` (``T.replacecommit.requested``/``.clustering``).

    For insert-overwrite all fields are null; clustering carries the plan.
    """

    AVRO_SCHEMA: ClassVar[str] = "HoodieRequestedReplaceMetadata"

    operation_type: str | None = None
    clustering_plan: ClusteringPlan | None = None
    extra_metadata: dict[str, str] | None = None
    version: int | None = 1


# -- clean ---------------------------------------------------------------------------------------


@dataclass
class ActionInstant(AvroRecord):
    """``HoodieActionInstant``."""

    timestamp: str = ""
    action: str = ""
    state: str = ""


@dataclass
class CleanFileInfo(AvroRecord):
    """``HoodieCleanFileInfo``."""

    file_path: str | None = None
    is_bootstrap_base_file: bool | None = None


@dataclass
class CleanerPlan(AvroRecord):
    """``HoodieCleanerPlan`` (content of ``T.clean.requested`` and ``T.clean.inflight``)."""

    AVRO_SCHEMA: ClassVar[str] = "HoodieCleanerPlan"

    earliest_instant_to_retain: ActionInstant | None = None
    last_completed_commit_timestamp: str = ""
    policy: str = ""
    files_to_be_deleted_per_partition: dict[str, list[str]] | None = None
    version: int | None = 2
    file_paths_to_be_deleted_per_partition: dict[str, list[CleanFileInfo]] | None = None
    partitions_to_be_deleted: list[str] | None = None
    extra_metadata: dict[str, str] | None = None


@dataclass
class CleanPartitionMetadata(AvroRecord):
    """``HoodieCleanPartitionMetadata``."""

    partition_path: str = ""
    policy: str = ""
    delete_path_patterns: list[str] = field(default_factory=list)
    success_delete_files: list[str] = field(default_factory=list)
    failed_delete_files: list[str] = field(default_factory=list)
    is_partition_deleted: bool | None = None


@dataclass
class CleanMetadata(AvroRecord):
    """``HoodieCleanMetadata`` (content of a completed clean)."""

    AVRO_SCHEMA: ClassVar[str] = "HoodieCleanMetadata"

    start_clean_time: str = ""
    time_taken_in_millis: int = 0
    total_files_deleted: int = 0
    earliest_commit_to_retain: str = ""
    last_completed_commit_timestamp: str = ""
    partition_metadata: dict[str, CleanPartitionMetadata] = field(default_factory=dict)
    version: int | None = 2
    bootstrap_partition_metadata: dict[str, CleanPartitionMetadata] | None = None
    extra_metadata: dict[str, str] | None = None


# -- savepoint / indexing --------------------------------------------------------------------------


@dataclass
class SavepointPartitionMetadata(AvroRecord):
    """``HoodieSavepointPartitionMetadata``."""

    partition_path: str = ""
    savepoint_data_file: list[str] = field(default_factory=list)


@dataclass
class SavepointMetadata(AvroRecord):
    """``HoodieSavepointMetadata`` (content of a completed savepoint)."""

    AVRO_SCHEMA: ClassVar[str] = "HoodieSavepointMetadata"

    savepointed_by: str = ""
    savepointed_at: int = 0
    comments: str = ""
    partition_metadata: dict[str, SavepointPartitionMetadata] = field(default_factory=dict)
    version: int | None = 1


@dataclass
class IndexPartitionInfo(AvroRecord):
    """``HoodieIndexPartitionInfo``."""

    version: int | None = 1
    metadata_partition_path: str | None = None
    index_upto_instant: str | None = None
    extra_metadata: dict[str, str] | None = None


@dataclass
class IndexPlan(AvroRecord):
    """``HoodieIndexPlan`` (content of ``T.indexing.requested``)."""

    AVRO_SCHEMA: ClassVar[str] = "HoodieIndexPlan"

    version: int | None = 1
    index_partition_infos: list[IndexPartitionInfo] | None = None


@dataclass
class IndexCommitMetadata(AvroRecord):
    """``HoodieIndexCommitMetadata`` (content of a completed indexing)."""

    AVRO_SCHEMA: ClassVar[str] = "HoodieIndexCommitMetadata"

    version: int | None = 1
    operation_type: str | None = None
    index_partition_infos: list[IndexPartitionInfo] | None = None
