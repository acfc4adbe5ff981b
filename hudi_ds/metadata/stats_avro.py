"""The Avro binary of one ``column_stats`` / ``partition_stats`` record, written directly.

A commit writes a stats record per (written file, indexed column) and per (partition,
column): some hundreds per commit, where a generic Avro writer (fastavro over the whole
``HoodieMetadataRecord``, a dozen unions deep) spends most of the stats work. The record's
shape is fixed, so :class:`StatsRecordWriter` lays out its bytes from a template the schema
gives once: every field but ``_hoodie_file_name``, ``type`` and ``ColumnStatsMetadata`` is
written as null (``key`` blank), as :func:`hudi_ds.metadata.column_stats.encode_stats_value`
always wrote them. The bytes are the Avro specification's binary encoding: ints and longs
zig-zag varints, floats and doubles little-endian IEEE, strings and bytes length-prefixed,
a union its branch index then the value, a record its fields in order.
"""

from __future__ import annotations

import decimal
import functools
import json
import struct
from collections.abc import Callable
from typing import Any

from hudi_ds.errors import CorruptFileError

__all__ = ["StatsRecordWriter", "stats_record_writer"]

_NULL = b"\x00"
_KNOWN_FIELDS = (
    "fileName",
    "columnName",
    "minValue",
    "maxValue",
    "valueCount",
    "nullCount",
    "totalSize",
    "totalUncompressedSize",
    "isDeleted",
    "isTightBound",
    "valueType",
)
_FLOAT = struct.Struct("<f").pack
_DOUBLE = struct.Struct("<d").pack


def _zigzag(n: int) -> bytes:
    z = (n << 1) ^ (n >> 63)
    out = bytearray()
    while z >= 0x80:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)
    return bytes(out)


# the one-byte varints (-64..63): most counts, lengths, branches and ordinals
_SMALL = tuple(_zigzag(n) for n in range(-64, 64))


def _varint(n: int) -> bytes:
    """A zig-zag varint (Avro ``int`` / ``long``)."""
    return _SMALL[n + 64] if -64 <= n < 64 else _zigzag(n)


def _bytes(b: bytes) -> bytes:
    return _varint(len(b)) + b


@functools.lru_cache(maxsize=1 << 14)
def _string(s: str) -> bytes:
    """A string's bytes (column names, partition paths and file names repeat)."""
    return _bytes(s.encode("utf-8"))


def _decimal_bytes(scale: int) -> Callable[[Any], bytes]:
    """A ``bytes`` decimal of ``scale``: the unscaled value, big-endian two's complement in
    the byte count fastavro writes (one more than the magnitude's bits need), so that the
    bytes stay those of earlier hudi_ds writes."""

    def enc(value: Any) -> bytes:
        sign, digits, exp = decimal.Decimal(value).as_tuple()
        if not isinstance(exp, int) or exp + scale < 0:
            raise ValueError(f"decimal {value} does not fit scale {scale}")
        magnitude = int("".join(map(str, digits)) or "0") * 10 ** (exp + scale)
        size = (magnitude.bit_length() + 8) // 8
        return _bytes((-magnitude if sign else magnitude).to_bytes(size, "big", signed=True))

    return enc


def _value_encoder(t: Any) -> Callable[[Any], bytes]:
    """The encoder of a wrapper's ``value`` field of Avro type ``t``."""
    logical = t.get("logicalType") if isinstance(t, dict) else None
    base = t.get("type") if isinstance(t, dict) else t
    if logical == "decimal" and base == "bytes":
        return _decimal_bytes(int(t.get("scale", 0)))
    simple: dict[str, Callable[[Any], bytes]] = {
        "boolean": lambda v: b"\x01" if v else b"\x00",
        "int": lambda v: _varint(int(v)),
        "long": lambda v: _varint(int(v)),
        "float": lambda v: _FLOAT(float(v)),
        "double": lambda v: _DOUBLE(float(v)),
        "string": lambda v: _string(str(v)),
        "bytes": lambda v: _bytes(bytes(v)),
    }
    if not isinstance(base, str) or base not in simple:
        raise CorruptFileError(f"metadata record schema: unsupported wrapper value type {t!r}")
    return simple[base]


def _null_first(t: Any, where: str) -> list:
    if not isinstance(t, list) or not t or t[0] != "null":
        raise CorruptFileError(f"metadata record schema: {where} is not a union with null first")
    return t


class StatsRecordWriter:
    """Writes ``HoodieMetadataRecord`` values holding a ``HoodieMetadataColumnStats``.

    Args:
        schema_json: the written record schema (one of
            :func:`hudi_ds.metadata.records.record_schema`).

    Raises:
        CorruptFileError: the schema is not of the shape the metadata table's records have.
    """

    def __init__(self, schema_json: str) -> None:
        obj = json.loads(schema_json)
        names = [f["name"] for f in obj["fields"]]
        for required in ("key", "type", "_hoodie_file_name", "ColumnStatsMetadata"):
            if required not in names:
                raise CorruptFileError(f"metadata record schema: no field {required!r}")
        i_file, i_type, i_stats = (
            names.index("_hoodie_file_name"),
            names.index("type"),
            names.index("ColumnStatsMetadata"),
        )
        if not i_file < i_type < i_stats or names.index("key") != i_type - 1:
            raise CorruptFileError("metadata record schema: fields out of the expected order")
        for f in obj["fields"]:
            if f["name"] not in ("key", "type"):
                _null_first(f["type"], f["name"])
        # every field but the three written ones is null; key is the blank string
        self._head = _NULL * i_file  # the meta fields before _hoodie_file_name
        self._key = _NULL  # "" (length 0)
        self._between = _NULL * (i_stats - i_type - 1)
        self._tail = _NULL * (len(names) - i_stats - 1)
        union = obj["fields"][i_stats]["type"]
        rec = next((t for t in union if isinstance(t, dict)), None)
        if rec is None:
            raise CorruptFileError("the metadata record schema has no ColumnStatsMetadata")
        self._stats_branch = _varint(union.index(rec))
        self.fields = tuple(g["name"] for g in rec["fields"])
        self._wrappers: dict[str, tuple[bytes, Callable[[Any], bytes]]] = {}
        for g in rec["fields"]:
            if g["name"] != "minValue":
                continue
            branches = _null_first(g["type"], "minValue")
            for idx, w in enumerate(branches):
                if isinstance(w, dict) and w.get("fields") and w["name"] != "ArrayWrapper":
                    full = (
                        w["name"] if "." in w["name"] else f"{w.get('namespace', '')}.{w['name']}"
                    )
                    enc = _value_encoder(w["fields"][0]["type"])
                    self._wrappers[w["name"]] = self._wrappers[full] = (_varint(idx), enc)
        # the field lists of Hudi 0.x, 1.0 and 1.1 (each adds to the end)
        n = len(self.fields)
        if n < 9 or self.fields != _KNOWN_FIELDS[:n]:
            raise CorruptFileError(
                f"metadata record schema: unknown column stats fields {list(self.fields)}"
            )
        self._prefixes: dict[int, bytes] = {}

    def encode(
        self,
        record_type: int,
        file_name: str | None,
        name: str,
        column: str,
        min_value: tuple[str, Any] | None,
        max_value: tuple[str, Any] | None,
        counts: tuple[int, int, int, int],
        deleted: bool,
        tight_bound: bool,
        value_type: tuple[int, str | None] | None,
    ) -> bytes:
        """The record's bytes.

        Args:
            record_type: the record's ``type``.
            file_name: ``_hoodie_file_name`` (None: null).
            name: ``fileName``; column: ``columnName``.
            min_value: ``minValue`` as ``(wrapper name, value)``, None for null;
                max_value likewise.
            counts: ``valueCount``, ``nullCount``, ``totalSize``, ``totalUncompressedSize``.
            deleted: ``isDeleted``; tight_bound: ``isTightBound`` (when the schema has it).
            value_type: ``valueType`` as ``(typeOrdinal, additionalInfo)`` (when the schema
                has it), None for null.
        """
        prefix = self._prefixes.get(record_type) if file_name is None else None
        if prefix is None:
            prefix = b"".join(
                [
                    self._head,
                    _NULL if file_name is None else b"\x02" + _string(file_name),
                    self._key,
                    _varint(record_type),
                    self._between,
                    self._stats_branch,
                ]
            )
            if file_name is None:
                self._prefixes[record_type] = prefix
        parts = [
            prefix,
            b"\x02" + _string(name),
            b"\x02" + _string(column),
            self._wrapped(min_value),
            self._wrapped(max_value),
            b"\x02" + _varint(counts[0]),
            b"\x02" + _varint(counts[1]),
            b"\x02" + _varint(counts[2]),
            b"\x02" + _varint(counts[3]),
            b"\x01" if deleted else b"\x00",
        ]
        n = len(self.fields)
        if n > 9:
            parts.append(b"\x01" if tight_bound else b"\x00")
        if n > 10:
            if value_type is None:
                parts.append(_NULL)
            else:
                ordinal, info = value_type
                parts.append(
                    b"\x02"
                    + _varint(ordinal)
                    + (_NULL if info is None else b"\x02" + _string(info))
                )
        parts.append(self._tail)
        return b"".join(parts)

    def _wrapped(self, wrapper: tuple[str, Any] | None) -> bytes:
        if wrapper is None:
            return _NULL
        name, value = wrapper
        got = self._wrappers.get(name) or self._wrappers.get(name.rsplit(".", 1)[-1])
        if got is None:
            raise CorruptFileError(f"metadata record schema: no {name} value wrapper")
        branch, enc = got
        return branch + enc(value)


@functools.lru_cache(maxsize=16)
def stats_record_writer(schema_json: str) -> StatsRecordWriter:
    """The writer of ``schema_json``, built once."""
    return StatsRecordWriter(schema_json)
