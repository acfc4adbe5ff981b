"""Avro object container files of the timeline, and :class:`AvroRecord`, the dataclass base of
every instant file's content.

Every content but v6 commit metadata -- compaction plan, requested replace metadata (clustering
plan), rollback plan and metadata, cleaner plan and clean metadata, savepoint, indexing, and
commit metadata from version 8 -- is an Avro object container file (``Obj\\x01``, codec null,
one record). Many files are empty (``T.commit.requested``, ``T.compaction.inflight``...):
``from_bytes(b"")`` returns the empty default object of the class ("no content"), never an
error.

The Avro schemas are package data (``hudi_ds/timeline/avro/*.avsc``); those of the commit,
replace, compaction, rollback and indexing contents were extracted from real Hudi timeline files,
the others written from ``hudi-common/src/main/avro`` of apache/hudi.
"""

from __future__ import annotations

import dataclasses
import io
import json
import os
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any, ClassVar, TypeVar

import fastavro

from hudi_ds.errors import CorruptFileError

__all__ = [
    "AVRO_MAGIC",
    "AvroRecord",
    "avro_schema",
    "java_schema_text",
    "read_avro_records",
    "write_avro_record",
]


AVRO_MAGIC = b"Obj\x01"


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
