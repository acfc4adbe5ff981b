"""Arrow <-> Avro schemas.

* :func:`avro_to_arrow_schema` / :func:`arrow_to_avro_schema` -- schemas. The Avro side is shaped
  exactly like the schemas Spark + Hudi write (``AvroConversionUtils`` /
  Spark ``SchemaConverters``): every field ``{"name", "type": ["null", T], "default": null}``,
  meta fields with ``"doc": ""``, nested records named after their field in the namespace
  ``<parent namespace>.<parent record name>``, decimals as ``fixed`` named ``fixed`` in the
  namespace ``<record namespace>.<record name>.<field>`` with the minimal byte size.

Logical types are mapped as follows (Avro -> Arrow)::

    decimal (bytes|fixed)      decimal128(p, s)   (decimal256 when p > 38)
    date                       date32
    time-millis / time-micros  time32[ms] / time64[us]
    timestamp-millis|micros|nanos        timestamp[ms|us|ns, tz=UTC]
    local-timestamp-millis|micros|nanos  timestamp[ms|us|ns]  (naive)
    uuid                       string
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, cast

import pyarrow as pa

from hudi_ds.errors import SchemaError, UnsupportedError
from hudi_ds.schema.meta import LIST_ITEM_NAME, META_FIELDS, OPERATION_METADATA_FIELD

_PRIMITIVES = {"null", "boolean", "int", "long", "float", "double", "bytes", "string"}


_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


AvroSchema = str | dict[str, Any]


@dataclass
class AvroType:
    """One resolved Avro type, named references inlined.

    ``kind`` is the Avro type name (``record``, ``array``, ``long`` ...); ``logical`` the logical
    type when it is one hudi_ds understands; ``fields`` the slots of a record, ``items`` the
    element (array) or value (map) slot; ``symbols`` those of an enum.
    """

    kind: str
    logical: str | None = None
    size: int | None = None
    precision: int | None = None
    scale: int | None = None
    fields: list[AvroSlot] = field(default_factory=list)
    items: AvroSlot | None = None
    symbols: list[str] = field(default_factory=list)


@dataclass
class AvroSlot:
    """A place holding a value -- record field, array element, map value -- and its union.

    ``["null", T]`` (or ``[T, "null"]``, ``[T]``) is collapsed to ``type`` T with
    ``union=True`` and the branch indexes of null and of T, which the binary encoding writes.
    """

    name: str
    type: AvroType
    union: bool = False
    null_index: int | None = None
    value_index: int | None = None

    @property
    def nullable(self) -> bool:
        """True if the slot can hold null (a union with a null branch, or the null type)."""
        return self.null_index is not None or self.type.kind == "null"


_KNOWN_LOGICAL = {
    ("bytes", "decimal"),
    ("fixed", "decimal"),
    ("int", "date"),
    ("int", "time-millis"),
    ("long", "time-micros"),
    ("long", "timestamp-millis"),
    ("long", "timestamp-micros"),
    ("long", "timestamp-nanos"),
    ("long", "local-timestamp-millis"),
    ("long", "local-timestamp-micros"),
    ("long", "local-timestamp-nanos"),
    ("string", "uuid"),
}


def parse_avro_json(avro: AvroSchema) -> Any:
    """Return the Avro schema as parsed JSON (a JSON string is decoded, a dict returned as is)."""
    if isinstance(avro, str):
        try:
            return json.loads(avro)
        except json.JSONDecodeError as e:
            raise SchemaError(f"invalid Avro schema JSON: {e}") from e
    return avro


class _AvroResolver:
    """Resolves Avro JSON into :class:`AvroType` trees (named types, namespaces, unions)."""

    def __init__(self) -> None:
        self.named: dict[str, AvroType] = {}
        self.pending: set[str] = set()

    @staticmethod
    def _fullname(name: str, namespace: str) -> str:
        if "." in name or not namespace:
            return name
        return f"{namespace}.{name}"

    def _lookup(self, name: str, ns: str, path: str) -> AvroType:
        for candidate in (self._fullname(name, ns), name):
            if candidate in self.pending:
                raise UnsupportedError(f"field {path!r}: recursive Avro type {name!r}")
            if candidate in self.named:
                return self.named[candidate]
        raise UnsupportedError(f"field {path!r}: unknown Avro type {name!r}")

    def resolve(self, t: Any, ns: str, path: str) -> AvroType:
        """Resolve the (non-union) type ``t`` in namespace ``ns``."""
        if isinstance(t, str):
            if t in _PRIMITIVES:
                return AvroType(t)
            return self._lookup(t, ns, path)
        if isinstance(t, dict):
            return self._complex(t, ns, path)
        raise UnsupportedError(f"field {path!r}: invalid Avro type {t!r}")

    def slot(self, name: str, t: Any, ns: str, path: str) -> AvroSlot:
        """Resolve the type ``t`` of a field/element/value, collapsing a nullable union."""
        if isinstance(t, dict) and isinstance(t.get("type"), list):
            t = t["type"]
        if not isinstance(t, list):
            return AvroSlot(name, self.resolve(t, ns, path))
        is_null = [b == "null" or b == {"type": "null"} for b in t]
        values = [i for i, null in enumerate(is_null) if not null]
        if len(values) > 1:
            raise UnsupportedError(
                f"field {path!r}: Avro union with several non-null branches {t!r}"
            )
        null_index = is_null.index(True) if any(is_null) else None
        if not values:
            return AvroSlot(name, AvroType("null"), True, null_index, None)
        return AvroSlot(name, self.resolve(t[values[0]], ns, path), True, null_index, values[0])

    def _named(self, t: dict[str, Any], ns: str) -> tuple[str, str]:
        name = t.get("name")
        if not isinstance(name, str):
            raise UnsupportedError(f"named Avro type without a name: {t!r}")
        own_ns = t.get("namespace", ns) or ""
        full = self._fullname(name, own_ns)
        return full, full.rpartition(".")[0]

    def _complex(self, t: dict[str, Any], ns: str, path: str) -> AvroType:
        kind = t.get("type")
        if isinstance(kind, dict):
            return self.resolve(kind, ns, path)
        if isinstance(kind, list):
            raise UnsupportedError(f"field {path!r}: a union cannot be nested here: {t!r}")
        if kind in ("record", "error"):
            return self._record(t, ns, path)
        if kind == "enum":
            full, _ = self._named(t, ns)
            self.named[full] = AvroType("enum", symbols=list(t.get("symbols", [])))
            return self.named[full]
        if kind == "fixed":
            full, _ = self._named(t, ns)
            self.named[full] = self._logical(t, "fixed")
            return self.named[full]
        if kind == "array":
            items = self.slot(LIST_ITEM_NAME, t.get("items"), ns, f"{path}[]")
            return AvroType("array", items=items)
        if kind == "map":
            values = self.slot("value", t.get("values"), ns, f"{path}{{}}")
            return AvroType("map", items=values)
        if isinstance(kind, str) and kind in _PRIMITIVES:
            return self._logical(t, kind)
        if isinstance(kind, str):
            return self._lookup(kind, ns, path)
        raise UnsupportedError(f"field {path!r}: invalid Avro type {t!r}")

    @staticmethod
    def _logical(t: dict[str, Any], kind: str) -> AvroType:
        logical = t.get("logicalType")
        node = AvroType(kind, size=t.get("size") if kind == "fixed" else None)
        if (kind, logical) not in _KNOWN_LOGICAL:
            return node  # unknown logical types fall back to the underlying type (Avro spec)
        if logical == "decimal":
            precision, scale = t.get("precision"), t.get("scale", 0)
            if not isinstance(precision, int) or not isinstance(scale, int):
                return node
            if not 0 < precision <= 76 or not 0 <= scale <= precision:
                return node
            node.precision, node.scale = precision, scale
        node.logical = cast(str, logical)
        return node

    def _record(self, t: dict[str, Any], ns: str, path: str) -> AvroType:
        full, own_ns = self._named(t, ns)
        self.pending.add(full)
        fields = []
        for f in t.get("fields", []):
            name = f["name"]
            fpath = f"{path}.{name}" if path else name
            fields.append(self.slot(name, f["type"], own_ns, fpath))
        self.pending.discard(full)
        node = AvroType("record", fields=fields)
        self.named[full] = node
        return node


def resolve_avro(avro: AvroSchema) -> AvroType:
    """Parse an Avro schema (JSON string or dict) into a resolved :class:`AvroType` tree."""
    avro = parse_avro_json(avro)
    if isinstance(avro, list):
        raise UnsupportedError("top-level Avro schema must be a record, got a union")
    return _AvroResolver().resolve(avro, "", "")


_SIMPLE_ARROW: dict[tuple[str, str | None], pa.DataType] = {
    ("null", None): pa.null(),
    ("boolean", None): pa.bool_(),
    ("int", None): pa.int32(),
    ("long", None): pa.int64(),
    ("float", None): pa.float32(),
    ("double", None): pa.float64(),
    ("bytes", None): pa.binary(),
    ("fixed", None): pa.binary(),
    ("string", None): pa.string(),
    ("string", "uuid"): pa.string(),
    ("enum", None): pa.string(),
    ("int", "date"): pa.date32(),
    ("int", "time-millis"): pa.time32("ms"),
    ("long", "time-micros"): pa.time64("us"),
    ("long", "timestamp-millis"): pa.timestamp("ms", tz="UTC"),
    ("long", "timestamp-micros"): pa.timestamp("us", tz="UTC"),
    ("long", "timestamp-nanos"): pa.timestamp("ns", tz="UTC"),
    ("long", "local-timestamp-millis"): pa.timestamp("ms"),
    ("long", "local-timestamp-micros"): pa.timestamp("us"),
    ("long", "local-timestamp-nanos"): pa.timestamp("ns"),
}


def _decimal_type(precision: int, scale: int) -> pa.DataType:
    if precision <= 38:
        return pa.decimal128(precision, scale)
    return pa.decimal256(precision, scale)


def _arrow_type(node: AvroType) -> pa.DataType:
    """Arrow type of a resolved Avro type."""
    if node.kind == "record":
        return pa.struct([_arrow_field(f) for f in node.fields])
    if node.kind == "array":
        assert node.items is not None
        return pa.list_(_arrow_field(node.items))
    if node.kind == "map":
        assert node.items is not None
        return pa.map_(pa.string(), _arrow_field(node.items))
    if node.logical == "decimal":
        return _decimal_type(cast(int, node.precision), cast(int, node.scale))
    return _SIMPLE_ARROW[(node.kind, node.logical)]


def _arrow_field(slot: AvroSlot) -> pa.Field:
    return pa.field(slot.name, _arrow_type(slot.type), slot.nullable)


def avro_to_arrow_schema(avro: AvroSchema) -> pa.Schema:
    """Convert an Avro record schema to an Arrow schema.

    ``["null", T]`` unions become nullable fields of type T; other types as in the module
    docstring. Docs and defaults are dropped.

    Raises:
        UnsupportedError: the schema is not a record, or a field has an unknown type or a union
            with more than one non-null branch (the message names the field).
    """
    node = resolve_avro(avro)
    if node.kind != "record":
        raise UnsupportedError(f"top-level Avro schema must be a record, got {node.kind!r}")
    return pa.schema(cast(pa.StructType, _arrow_type(node)))


def arrow_type_of(node: AvroType) -> pa.DataType:
    """Arrow type of a resolved Avro type (a struct for a record)."""
    return _arrow_type(node)


def physical_arrow_schema(avro: AvroSchema) -> pa.Schema:
    """Arrow schema of records decoded by fastavro with :func:`strip_logical_types` applied.

    Timestamps/dates/times stay integers, decimals stay big-endian bytes; :func:`from_physical`
    turns such values into the :func:`avro_to_arrow_schema` types.
    """
    return _physical_of(avro_to_arrow_schema(avro))


def strip_logical_types(avro: Any) -> Any:
    """Return a copy of Avro JSON without ``logicalType`` keys (fastavro then skips conversions)."""
    if isinstance(avro, list):
        return [strip_logical_types(t) for t in avro]
    if isinstance(avro, dict):
        return {k: strip_logical_types(v) for k, v in avro.items() if k != "logicalType"}
    return avro


def decimal_fixed_size(precision: int) -> int:
    """Minimal number of bytes of a two's complement integer holding ``precision`` digits.

    Same as Spark's ``Decimal.minBytesForPrecision`` (5 for precision 10, 7 for 15, 16 for 38).
    """
    size = 1
    while 2 ** (8 * size - 1) < 10**precision:
        size += 1
    return size


def _check_name(name: str, path: str) -> None:
    if not _NAME_RE.match(name):
        raise SchemaError(
            f"column {path!r}: {name!r} is not a valid Avro name ([A-Za-z_][A-Za-z0-9_]*)"
        )


def _field_json(name: str, avro_type: Any, nullable: bool = True) -> dict[str, Any]:
    field_json: dict[str, Any] = {
        "name": name,
        "type": ["null", avro_type] if nullable else avro_type,
    }
    if name in META_FIELDS or name == OPERATION_METADATA_FIELD:
        field_json["doc"] = ""
    if nullable:
        field_json["default"] = None
    return field_json


def _record_json(
    struct: pa.StructType | pa.Schema, name: str, namespace: str, path: str
) -> dict[str, Any]:
    child_ns = f"{namespace}.{name}" if namespace else name
    fields = []
    for f in struct:
        fpath = f"{path}.{f.name}" if path else f.name
        _check_name(f.name, fpath)
        fields.append(_field_json(f.name, _avro_type(f.type, f.name, child_ns, fpath)))
    out: dict[str, Any] = {"type": "record", "name": name}
    if namespace:
        out["namespace"] = namespace
    out["fields"] = fields
    return out


def _avro_type(t: pa.DataType, name: str, ns: str, path: str) -> Any:
    """Avro type of Arrow type ``t`` for a field ``name`` whose record's children live in ``ns``."""
    if pa.types.is_dictionary(t):
        return _avro_type(t.value_type, name, ns, path)
    if pa.types.is_struct(t):
        return _record_json(t, name, ns, path)
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        items = _avro_type(t.value_type, name, ns, f"{path}[]")
        return {"type": "array", "items": ["null", items] if t.value_field.nullable else items}
    if pa.types.is_map(t):
        if not (pa.types.is_string(t.key_type) or pa.types.is_large_string(t.key_type)):
            raise SchemaError(f"column {path!r}: Avro maps need string keys, got {t.key_type}")
        values = _avro_type(t.item_type, name, ns, f"{path}{{}}")
        return {"type": "map", "values": ["null", values] if t.item_field.nullable else values}
    if pa.types.is_decimal(t):
        return {
            "type": "fixed",
            "name": "fixed",
            "namespace": f"{ns}.{name}" if ns else name,
            "size": decimal_fixed_size(t.precision),
            "logicalType": "decimal",
            "precision": t.precision,
            "scale": t.scale,
        }
    leaf = _avro_leaf(t)
    if leaf is None:
        raise SchemaError(f"column {path!r}: Arrow type {t} has no Avro equivalent")
    return leaf


def _avro_leaf(t: pa.DataType) -> Any:
    if pa.types.is_boolean(t):
        return "boolean"
    if pa.types.is_int8(t) or pa.types.is_int16(t) or pa.types.is_int32(t):
        return "int"
    if pa.types.is_uint8(t) or pa.types.is_uint16(t):
        return "int"
    if pa.types.is_int64(t) or pa.types.is_uint32(t):
        return "long"
    if pa.types.is_float16(t) or pa.types.is_float32(t):
        return "float"
    if pa.types.is_float64(t):
        return "double"
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return "string"
    if (
        pa.types.is_binary(t)
        or pa.types.is_large_binary(t)
        or pa.types.is_binary_view(t)
        or pa.types.is_fixed_size_binary(t)
    ):
        return "bytes"
    if pa.types.is_date(t):
        return {"type": "int", "logicalType": "date"}
    if pa.types.is_time32(t):
        return {"type": "int", "logicalType": "time-millis"}
    if pa.types.is_time64(t):
        return {"type": "long", "logicalType": "time-micros"}
    if pa.types.is_timestamp(t):
        unit = "millis" if t.unit == "ms" else "micros"
        prefix = "timestamp" if t.tz is not None else "local-timestamp"
        return {"type": "long", "logicalType": f"{prefix}-{unit}"}
    return None


def arrow_to_avro_schema(schema: pa.Schema, record_name: str, namespace: str) -> dict[str, Any]:
    """Convert an Arrow schema to the Avro record schema Spark/Hudi would write for it.

    ``record_name``/``namespace`` are Hudi's ``<table>_record`` / ``hoodie.<table>``. Every field
    becomes ``{"name", "type": ["null", T], "default": null}`` (meta fields add ``"doc": ""``);
    list items and map values are ``["null", T]`` when the Arrow item field is nullable.
    int8/int16/uint8/uint16 -> int, uint32 -> long, large/view strings -> string, any binary ->
    bytes, timestamps in s/ns -> micros (values are cast safely when written).

    Raises:
        SchemaError: a column name is not a valid Avro name or a type has no Avro equivalent
            (uint64, null, duration, intervals, unions, non-string map keys...).
    """
    return _record_json(schema, record_name, namespace, "")


def avro_schema_json(avro: AvroSchema) -> str:
    """Compact JSON text of an Avro schema, as Java's ``Schema.toString()`` prints it.

    A string is returned unchanged (so a schema read from a file round-trips byte for byte).
    """
    if isinstance(avro, str):
        return avro
    return json.dumps(avro, separators=(",", ":"), ensure_ascii=False)


def _physical_type(t: pa.DataType) -> pa.DataType:
    if pa.types.is_decimal(t):
        return pa.binary()
    if pa.types.is_timestamp(t) or pa.types.is_time64(t) or pa.types.is_date64(t):
        return pa.int64()
    if pa.types.is_date32(t) or pa.types.is_time32(t):
        return pa.int32()
    if pa.types.is_struct(t):
        return pa.struct([f.with_type(_physical_type(f.type)) for f in t])
    if pa.types.is_list(t):
        return pa.list_(t.value_field.with_type(_physical_type(t.value_type)))
    if pa.types.is_map(t):
        return pa.map_(t.key_field, t.item_field.with_type(_physical_type(t.item_type)))
    return t


def _physical_of(schema: pa.Schema) -> pa.Schema:
    return pa.schema([f.with_type(_physical_type(f.type)) for f in schema])


def avro_record_name(table_name: str) -> str:
    """The Avro-safe form of a table name (``<name>_record`` / ``hoodie.<name>`` name schemas).

    Every character but letters, digits and ``_`` becomes ``_``.
    """
    return "".join(ch if ch.isalnum() or ch == "_" else "_" for ch in table_name)


def table_avro_schema(schema: pa.Schema, table_name: str) -> dict[str, Any]:
    """The Avro schema of a table's rows: :func:`arrow_to_avro_schema` named as Hudi names it
    (record ``<table>_record`` in namespace ``hoodie.<table>``, the name made Avro-safe)."""
    name = avro_record_name(table_name)
    return arrow_to_avro_schema(schema, f"{name}_record", f"hoodie.{name}")


@lru_cache(maxsize=256)
def cached_arrow_schema(avro_json: str) -> pa.Schema:
    """:func:`avro_to_arrow_schema` of a schema JSON string, memoised (log headers repeat)."""
    return avro_to_arrow_schema(avro_json)
