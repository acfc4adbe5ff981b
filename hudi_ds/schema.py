"""Arrow <-> Avro: schemas, record data and schema evolution.

Hudi keeps every schema in Avro (commit metadata, ``hoodie.table.create.schema``, the ``SCHEMA``
header of log blocks); hudi_ds works on Arrow. This module converts both ways:

* :func:`avro_to_arrow_schema` / :func:`arrow_to_avro_schema` -- schemas. The Avro side is shaped
  exactly like the schemas Spark + Hudi write (``AvroConversionUtils`` /
  Spark ``SchemaConverters``): every field ``{"name", "type": ["null", T], "default": null}``,
  meta fields with ``"doc": ""``, nested records named after their field in the namespace
  ``<parent namespace>.<parent record name>``, decimals as ``fixed`` named ``fixed`` in the
  namespace ``<record namespace>.<record name>.<field>`` with the minimal byte size.
* :func:`avro_records_to_arrow` / :func:`arrow_to_avro_records` -- record data, in the shapes
  fastavro reads and writes.
* :func:`promote_table` -- brings rows written with an older schema to the table schema (reorder,
  add missing nullable columns, safe widening casts); :func:`conform_table` -- the writer's
  stricter counterpart (exact columns, value-checked casts); :func:`conform_partial` -- rows of
  a partial update as full rows.
* :func:`can_promote` -- the one type-promotion rule; :func:`write_schema` -- a write's input
  schema checked against the table's and the schema it writes (schema evolution on write).

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
import logging
import re
import uuid
from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from functools import lru_cache
from typing import Any, cast

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hudi_ds.errors import ConfigError, SchemaError, UnsupportedError

log = logging.getLogger("hudi_ds.write")

# Hudi's meta columns (Java ``HoodieRecord.HoodieMetadataField``), the first five columns of every
# base file and data block, in this order (``HoodieRecord.HOODIE_META_COLUMNS``).
COMMIT_TIME_METADATA_FIELD = "_hoodie_commit_time"
COMMIT_SEQNO_METADATA_FIELD = "_hoodie_commit_seqno"
RECORD_KEY_METADATA_FIELD = "_hoodie_record_key"
PARTITION_PATH_METADATA_FIELD = "_hoodie_partition_path"
FILENAME_METADATA_FIELD = "_hoodie_file_name"
META_FIELDS = [
    COMMIT_TIME_METADATA_FIELD,
    COMMIT_SEQNO_METADATA_FIELD,
    RECORD_KEY_METADATA_FIELD,
    PARTITION_PATH_METADATA_FIELD,
    FILENAME_METADATA_FIELD,
]
#: The optional sixth meta column (``HoodieMetadataField.OPERATION_METADATA_FIELD``): the
#: operation that wrote the row, present when the writer was configured to add it.
OPERATION_METADATA_FIELD = "_hoodie_operation"
#: A data column that marks a row as a delete when true (``HoodieRecord.HOODIE_IS_DELETED_FIELD``).
IS_DELETED_FIELD = "_hoodie_is_deleted"

#: Name of the Arrow list item field. Spark's parquet files (and so pyarrow reading them) use
#: ``element``; using the same name keeps avro-block and base-file tables identical.
LIST_ITEM_NAME = "element"

_PRIMITIVES = {"null", "boolean", "int", "long", "float", "double", "bytes", "string"}
_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

AvroSchema = str | dict[str, Any]


# --------------------------------------------------------------------------------------------
# Avro schema model
# --------------------------------------------------------------------------------------------


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


# --------------------------------------------------------------------------------------------
# Avro -> Arrow
# --------------------------------------------------------------------------------------------

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


# --------------------------------------------------------------------------------------------
# Arrow -> Avro
# --------------------------------------------------------------------------------------------


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


def with_meta_fields(schema: pa.Schema) -> pa.Schema:
    """Return ``schema`` with the five Hudi meta columns first (string, nullable).

    Meta columns already present keep their field definition and move to the front.
    """
    present = {f.name: f for f in schema if f.name in META_FIELDS}
    meta = [present.get(n, pa.field(n, pa.string())) for n in META_FIELDS]
    rest = [f for f in schema if f.name not in META_FIELDS]
    return pa.schema(meta + rest, metadata=schema.metadata)


def check_unique_names(schema: pa.Schema | pa.StructType, path: str = "") -> None:
    """Refuse duplicate column (and struct field) names, compared case-insensitively.

    Spark resolves column names case-insensitively by default and refuses such a schema
    (``SchemaUtils.checkColumnNameDuplication``, which Hudi's Spark writer relies on); Avro
    record fields must be unique too.

    Raises:
        SchemaError: names the duplicated column (with its path inside structs).
    """
    seen: dict[str, str] = {}
    for f in schema:
        full = f"{path}{f.name}"
        other = seen.get(f.name.lower())
        if other is not None:
            same = "" if other == f.name else f" (and {path}{other!r})"
            raise SchemaError(f"duplicate column name {full!r}{same}")
        seen[f.name.lower()] = f.name
        t = f.type
        while pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_map(t):
            t = t.item_type if pa.types.is_map(t) else t.value_type
        if pa.types.is_struct(t):
            check_unique_names(t, f"{full}.")


def clear_meta_values(table: pa.Table, file_name: bool) -> pa.Table:
    """``table``'s rows as a table without meta fields (``hoodie.populate.meta.fields=false``,
    Hudi's virtual keys) stores them: the five meta columns stay, their values null -- except
    ``_hoodie_file_name`` when ``file_name`` (base files).

    Java keeps the meta columns in the written schema (``HoodieWriteHandle``
    ``writeSchemaWithMetaFields``) but fills none of their values: ``HoodieCreateHandle`` and
    ``HoodieMergeHandle.writeToFile`` set only the file name (``MetadataValues.setFileName``),
    ``HoodieAppendHandle.populateMetadataFields`` nothing, and the Parquet writers add the key
    values only when meta fields are populated (``writeAvroWithMetadata``).
    """
    clear = [f for f in META_FIELDS if not (file_name and f == FILENAME_METADATA_FIELD)]
    for name in clear:
        idx = table.schema.get_field_index(name)
        if idx >= 0:
            f = table.schema.field(idx)
            table = table.set_column(idx, f, pa.nulls(table.num_rows, f.type))
    return table


def without_meta_fields(schema: pa.Schema) -> pa.Schema:
    """Return ``schema`` without the Hudi meta columns (the five and ``_hoodie_operation``)."""
    drop = {*META_FIELDS, OPERATION_METADATA_FIELD}
    return pa.schema([f for f in schema if f.name not in drop], metadata=schema.metadata)


# --------------------------------------------------------------------------------------------
# Vectorised decimal <-> two's complement big-endian bytes
# --------------------------------------------------------------------------------------------


def _validity(arr: pa.Array) -> pa.Buffer | None:
    if arr.null_count == 0:
        return None
    valid = pc.invert(arr.is_null())
    return cast(pa.Buffer, valid.buffers()[1])


def _binary_layout(arr: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """``(starts, ends)`` byte offsets of each value of a (fixed size / large) binary array."""
    n = len(arr)
    if pa.types.is_fixed_size_binary(arr.type):
        width = arr.type.byte_width
        starts = (np.arange(n, dtype=np.int64) + arr.offset) * width
        return starts, starts + width
    dtype = np.int64 if pa.types.is_large_binary(arr.type) else np.int32
    buf = arr.buffers()[1]
    offsets = np.frombuffer(buf, dtype=dtype)[arr.offset : arr.offset + n + 1].astype(np.int64)
    return offsets[:-1], offsets[1:]


def decimal_from_bytes(arr: pa.Array, target: pa.DataType) -> pa.Array:
    """Decode Avro decimals (big-endian two's complement ``bytes``/``fixed``) to ``target``.

    Vectorised with numpy; ``target`` is a decimal128/decimal256 type.
    """
    if pa.types.is_binary_view(arr.type):
        arr = arr.cast(pa.binary())
    width = target.byte_width
    n = len(arr)
    starts, ends = _binary_layout(arr)
    lengths = ends - starts
    if n and int(lengths.max()) > width:
        raise SchemaError(f"decimal value of {int(lengths.max())} bytes does not fit {target}")
    data_buf = arr.buffers()[-1]
    data = (
        np.frombuffer(data_buf, dtype=np.uint8) if data_buf is not None else np.zeros(0, np.uint8)
    )
    if data.size == 0:
        data = np.zeros(1, np.uint8)
    j = np.arange(width, dtype=np.int64)[None, :]
    src = np.clip(ends[:, None] - 1 - j, 0, data.size - 1)
    first = data[np.clip(starts, 0, data.size - 1)]
    sign = np.where((lengths > 0) & (first >= 0x80), 0xFF, 0x00).astype(np.uint8)
    little = np.where(j < lengths[:, None], data[src], sign[:, None]).astype(np.uint8)
    return pa.Array.from_buffers(target, n, [_validity(arr), pa.py_buffer(little.tobytes())])


def decimal_to_bytes(arr: pa.Array, size: int) -> pa.Array:
    """Encode a decimal array as ``size``-byte big-endian two's complement (``fixed_size_binary``).

    Raises:
        SchemaError: a value does not fit in ``size`` bytes.
    """
    width = arr.type.byte_width
    n = len(arr)
    raw = np.frombuffer(arr.buffers()[1], dtype=np.uint8)[arr.offset * width :]
    big = raw[: n * width].reshape(n, width)[:, ::-1]
    if size >= width:
        sign = np.where(big[:, :1] >= 0x80, 0xFF, 0x00).astype(np.uint8)
        out = np.hstack([np.repeat(sign, size - width, axis=1), big])
    else:
        out = big[:, width - size :]
        sign = np.where(out[:, :1] >= 0x80, 0xFF, 0x00).astype(np.uint8)
        fits = (big[:, : width - size] == sign).all(axis=1) | ~_valid_mask(arr)
        if not fits.all():
            raise SchemaError(f"decimal value does not fit {size} bytes ({arr.type})")
    buf = pa.py_buffer(np.ascontiguousarray(out).tobytes())
    return pa.Array.from_buffers(pa.binary(size), n, [_validity(arr), buf])


def _valid_mask(arr: pa.Array) -> np.ndarray:
    if arr.null_count == 0:
        return np.ones(len(arr), dtype=bool)
    return np.asarray(arr.is_valid().to_numpy(zero_copy_only=False), dtype=bool)


# --------------------------------------------------------------------------------------------
# Record data
# --------------------------------------------------------------------------------------------


def _map_chunks(
    col: pa.ChunkedArray, fn: Callable[[pa.Array, Any], pa.Array], arg: Any
) -> pa.ChunkedArray:
    """Apply ``fn(chunk, arg)`` to every chunk of ``col``."""
    chunks = [fn(c, arg) for c in col.chunks]
    if not chunks:
        return pa.chunked_array([], type=fn(pa.array([], type=col.type), arg).type)
    return pa.chunked_array(chunks)


def _offsets(arr: pa.Array) -> pa.Array:
    """Offsets of a list/map array as a fresh array (``from_arrays`` rejects sliced offsets
    together with a null mask)."""
    offsets = arr.offsets
    return pa.array(np.asarray(offsets), type=offsets.type) if arr.offset else offsets


def _has_decimal(t: pa.DataType) -> bool:
    if pa.types.is_decimal(t):
        return True
    if pa.types.is_struct(t):
        return any(_has_decimal(f.type) for f in t)
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return _has_decimal(t.value_type)
    if pa.types.is_map(t):
        return _has_decimal(t.item_type)
    return False


def from_physical(arr: pa.Array, target: pa.DataType) -> pa.Array:
    """Convert an array of raw Avro values (ints, decimal bytes) to the logical ``target`` type."""
    if arr.type == target:
        return arr
    if pa.types.is_decimal(target):
        return decimal_from_bytes(arr, target)
    if not _has_decimal(target):
        return arr.cast(target)
    mask = arr.is_null() if arr.null_count else None
    if pa.types.is_struct(target):
        sarr = cast(pa.StructArray, arr)
        children = [from_physical(sarr.field(i), f.type) for i, f in enumerate(target)]
        return pa.StructArray.from_arrays(children, fields=list(target), mask=mask)
    if pa.types.is_map(target):
        marr = cast(pa.MapArray, arr)
        items = from_physical(marr.items, target.item_type)
        return pa.MapArray.from_arrays(_offsets(marr), marr.keys, items, type=target, mask=mask)
    larr = cast(pa.ListArray, arr)
    values = from_physical(larr.values, target.value_type)
    return pa.ListArray.from_arrays(_offsets(larr), values, type=target, mask=mask)


def raw_avro_records_to_arrow(records: list[dict[str, Any]], schema: pa.Schema) -> pa.Table:
    """Build a table from records fastavro decoded with :func:`strip_logical_types`.

    ``schema`` is the logical Arrow schema (:func:`avro_to_arrow_schema`); the records hold the
    raw values (ints for timestamps/dates/times, big-endian bytes for decimals).
    """
    physical = _physical_of(schema)
    table = pa.Table.from_pylist(records, schema=physical)
    if physical == schema:
        return table
    columns = [_map_chunks(table.column(i), from_physical, f.type) for i, f in enumerate(schema)]
    return pa.Table.from_arrays(columns, schema=schema)


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


def _to_python_value(v: Any) -> Any:
    """Make fastavro's logical values acceptable to pyarrow (uuid.UUID -> str, recursively)."""
    if isinstance(v, dict):
        return {k: _to_python_value(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_to_python_value(x) for x in v]
    if v is None or isinstance(v, (str, bytes, int, float, Decimal)):
        return v
    return str(v) if isinstance(v, uuid.UUID) else v


def avro_records_to_arrow(records: list[dict[str, Any]], schema: pa.Schema) -> pa.Table:
    """Build a table of exactly ``schema``'s types from records as fastavro decodes them.

    Accepts fastavro's logical values (``Decimal``, tz-aware ``datetime``, ``date``, ``time``,
    ``UUID``) as well as raw ones (ints for temporal types, two's complement bytes for decimals).
    """
    errors = (pa.ArrowTypeError, pa.ArrowInvalid, TypeError)
    try:
        return pa.Table.from_pylist(records, schema=schema)
    except errors:
        pass
    try:
        return raw_avro_records_to_arrow(records, schema)
    except errors:
        pass
    return pa.Table.from_pylist([_to_python_value(r) for r in records], schema=schema)


def to_physical(arr: pa.Array, node: AvroType) -> pa.Array:
    """Convert ``arr`` (already of the Avro schema's Arrow type) to raw Avro-encodable values."""
    t = arr.type
    if pa.types.is_dictionary(t):
        arr = arr.dictionary_decode()
        t = arr.type
    if pa.types.is_decimal(t):
        size = node.size if node.kind == "fixed" and node.size else decimal_fixed_size(t.precision)
        return decimal_to_bytes(arr, size)
    if pa.types.is_timestamp(t) or pa.types.is_time64(t) or pa.types.is_date64(t):
        return arr.cast(pa.int64())
    if pa.types.is_date32(t) or pa.types.is_time32(t):
        return arr.cast(pa.int32())
    if pa.types.is_struct(t) and node.kind == "record":
        sarr = cast(pa.StructArray, arr)
        children = [to_physical(sarr.field(i), f.type) for i, f in enumerate(node.fields)]
        mask = arr.is_null() if arr.null_count else None
        names = [f.name for f in t]
        return pa.StructArray.from_arrays(children, names=names, mask=mask)
    if pa.types.is_map(t) and node.items is not None:
        marr = cast(pa.MapArray, arr)
        items = to_physical(marr.items, node.items.type)
        mask = arr.is_null() if arr.null_count else None
        return pa.MapArray.from_arrays(_offsets(marr), marr.keys, items, mask=mask)
    if pa.types.is_list(t) and node.items is not None:
        larr = cast(pa.ListArray, arr)
        values = to_physical(larr.values, node.items.type)
        mask = arr.is_null() if arr.null_count else None
        return pa.ListArray.from_arrays(_offsets(larr), values, mask=mask)
    return arr


def arrow_to_avro_records(
    table: pa.Table, avro_schema: AvroSchema | None = None
) -> list[dict[str, Any]]:
    """Return the per-record dicts fastavro encodes for ``table``.

    Values are the raw Avro values (which fastavro also accepts for logical types): ints for
    timestamps (in the Avro schema's unit), dates and times; big-endian two's complement bytes
    for decimals (the ``fixed`` size of ``avro_schema``, else the minimal size for the
    precision); dicts for maps. Encoding with :func:`strip_logical_types` of the schema skips
    fastavro's per-value logical conversions.

    Args:
        table: the rows; with ``avro_schema`` they are first cast to its types (see
            :func:`conform_table`).
        avro_schema: the writer schema; default: :func:`arrow_to_avro_schema` of the table.

    Raises:
        SchemaError: the table does not fit the Avro schema.
    """
    if avro_schema is None:
        avro_schema = arrow_to_avro_schema(table.schema, "record", "")
    node = resolve_avro(avro_schema)
    table = conform_table(table, pa.schema(cast(pa.StructType, _arrow_type(node))))
    columns = [_map_chunks(table.column(i), to_physical, f.type) for i, f in enumerate(node.fields)]
    physical = pa.Table.from_arrays(columns, names=table.column_names)
    return physical.to_pylist(maps_as_pydicts="strict")


# --------------------------------------------------------------------------------------------
# Schema evolution
# --------------------------------------------------------------------------------------------


def _is_string(t: pa.DataType) -> bool:
    return pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t)


def _is_binary(t: pa.DataType) -> bool:
    return (
        pa.types.is_binary(t)
        or pa.types.is_large_binary(t)
        or pa.types.is_binary_view(t)
        or pa.types.is_fixed_size_binary(t)
    )


def _int_bits(t: pa.DataType) -> int:
    return int(t.bit_width) if pa.types.is_integer(t) else 0


def _widens(src: pa.DataType, dst: pa.DataType, on_write: bool) -> bool:
    """True if every ``src`` value converts to ``dst`` (a leaf of :func:`can_promote`)."""
    if pa.types.is_integer(src) and pa.types.is_integer(dst):
        if pa.types.is_signed_integer(src) == pa.types.is_signed_integer(dst):
            return _int_bits(dst) >= _int_bits(src)
        return pa.types.is_unsigned_integer(src) and _int_bits(dst) > _int_bits(src)
    if pa.types.is_integer(src) and pa.types.is_floating(dst):
        return True  # int -> float/double and long -> float/double alike
    if pa.types.is_floating(src) and pa.types.is_floating(dst):
        return dst.bit_width >= src.bit_width
    if pa.types.is_decimal(src) and pa.types.is_decimal(dst):
        # neither the integer digits nor the scale shrink (DecimalType.isWiderThan, or the same
        # scale with a greater precision)
        return dst.scale >= src.scale and dst.precision - dst.scale >= src.precision - src.scale
    if _is_string(dst):
        if _is_string(src) or _is_binary(src):
            return True
        # a value rendered as text: read-side only (see can_promote)
        return not on_write and (
            pa.types.is_integer(src)
            or pa.types.is_floating(src)
            or pa.types.is_decimal(src)
            or pa.types.is_date(src)
        )
    if _is_binary(dst):
        return _is_binary(src) or _is_string(src)
    if on_write:
        return False  # timestamp precision changes are gated in Hudi (see can_promote)
    if pa.types.is_timestamp(src) and pa.types.is_timestamp(dst):
        order = ["s", "ms", "us", "ns"]
        same_zone = (src.tz is None) == (dst.tz is None)
        return same_zone and order.index(dst.unit) >= order.index(src.unit)
    if pa.types.is_int64(src) and pa.types.is_timestamp(dst) and dst.tz is None:
        # Hudi 0.x (parquet-avro < 1.13) writes local-timestamp-millis|micros columns as
        # parquet INT64 without a timestamp annotation: the raw values in the schema's unit
        return True
    return bool(pa.types.is_date32(src) and pa.types.is_timestamp(dst))


def _check_promotion(src: pa.DataType, dst: pa.DataType, path: str, on_write: bool) -> None:
    if pa.types.is_dictionary(src):
        src = src.value_type
    if src == dst or pa.types.is_null(src):
        return
    if pa.types.is_struct(src) and pa.types.is_struct(dst):
        names = {f.name: f for f in src}
        for f in dst:
            if f.name in names:
                _check_promotion(names[f.name].type, f.type, f"{path}.{f.name}", on_write)
            elif not f.nullable:
                raise SchemaError(f"column {path}.{f.name!s} is missing and not nullable")
        return
    src_list = pa.types.is_list(src) or pa.types.is_large_list(src)
    if src_list and (pa.types.is_list(dst) or pa.types.is_large_list(dst)):
        _check_promotion(src.value_type, dst.value_type, f"{path}[]", on_write)
        return
    if pa.types.is_map(src) and pa.types.is_map(dst):
        _check_promotion(src.key_type, dst.key_type, f"{path}{{key}}", on_write)
        _check_promotion(src.item_type, dst.item_type, f"{path}{{}}", on_write)
        return
    if not _widens(src, dst, on_write):
        raise SchemaError(f"column {path!r}: cannot promote {src} to {dst}")


def can_promote(src: pa.DataType, dst: pa.DataType, *, on_write: bool = False) -> bool:
    """True if values of ``src`` convert to ``dst``: hudi_ds's one type-promotion rule.

    Leaves (structs field by field -- a ``dst`` field missing from ``src`` must be nullable --,
    list items, map keys and values recursively):

    * int -> long -> float -> double, long -> float included: Avro's schema resolution as
      Hudi's ``AvroSchemaCompatibility.calculateCompatibility`` applies it (reader FLOAT
      accepts writer INT or LONG), and ``SchemaChangeUtils.isTypeUpdateAllow`` (LONG =>
      FLOAT/DOUBLE); narrower Arrow integers (int8, uint16...) into wider ones;
    * string <-> bytes (``AvroSchemaCompatibility``: reader STRING accepts BYTES and reader
      BYTES accepts STRING);
    * decimal(p, s) -> decimal(p', s') with neither the integer digits nor the scale shrinking
      (``SchemaChangeUtils.isTypeUpdateAllow``: ``DecimalType.isWiderThan``, or the same scale
      with a greater precision);
    * read side only -- the conversions a reader meets in tables evolved by Hudi:
      numbers, decimals and dates -> string (``isTypeUpdateAllow``: INT/LONG/FLOAT/DOUBLE/
      DECIMAL/DATE => STRING; Hudi 1.x ``AvroSchemaCompatibility``: reader STRING accepts a
      numeric writer, ``HoodieAvroUtils.isTypeNumeric``); timestamps to a finer unit in the
      same time zone kind and dates to timestamps (what files written by other engines hold,
      e.g. parquet millis under a micros schema); long -> timestamp without time zone (Hudi
      0.x writes Avro ``local-timestamp-*`` columns as parquet INT64 without annotation).

    ``on_write`` applies the rule to a write evolving the table schema: the read-side-only
    conversions are refused there. A write never changes a typed column into a string
    column: hudi_ds's own restriction, which the tests pin, where Hudi accepts int/long/
    float/double -> string on write since HUDI-6872 (apache/hudi#9743:
    ``AvroSchemaCompatibility``, reader STRING with ``HoodieAvroUtils.isTypeNumeric``).
    Timestamp precision changes are refused as Hudi 1.x refuses them without a per-field
    override (``SchemaChangeUtils.isGatedTimestampChange``,
    ``hoodie.write.timestamp.logical.type.overrides``).
    """
    try:
        _check_promotion(src, dst, "", on_write)
    except SchemaError:
        return False
    return True


def _int_to_float_only(src: pa.DataType, dst: pa.DataType) -> bool:
    """True if ``src`` and ``dst`` differ only by integer -> floating point leaves.

    Such a cast is Avro's int/long -> float/double promotion, which rounds to the nearest
    representable value when the integer has more significant bits than the mantissa.
    """
    if src == dst:
        return True
    if pa.types.is_integer(src) and pa.types.is_floating(dst):
        return True
    if pa.types.is_struct(src) and pa.types.is_struct(dst):
        names = {f.name: f.type for f in src}
        return all(f.name not in names or _int_to_float_only(names[f.name], f.type) for f in dst)
    src_list = pa.types.is_list(src) or pa.types.is_large_list(src)
    if src_list and (pa.types.is_list(dst) or pa.types.is_large_list(dst)):
        return _int_to_float_only(src.value_type, dst.value_type)
    if pa.types.is_map(src) and pa.types.is_map(dst):
        return src.key_type == dst.key_type and _int_to_float_only(src.item_type, dst.item_type)
    return False


def _cast_column(
    col: pa.ChunkedArray, target: pa.DataType, path: str, safe: bool = True
) -> pa.ChunkedArray:
    if col.type == target:
        return col
    try:
        if pa.types.is_null(col.type):
            return pa.chunked_array([pa.nulls(len(col), type=target)])
        try:
            return col.cast(target, safe=safe)
        except pa.ArrowInvalid:
            if not _int_to_float_only(col.type, target):
                raise
            # Avro's int -> float / long -> double promotion rounds integers beyond the
            # mantissa to the nearest value, as Java does: Avro's ResolvingDecoder reads a long
            # under a double reader schema as ``(double) readLong()``, and Hudi's
            # HoodieAvroUtils.rewritePrimaryTypeWithDiffSchemaType uses
            # ``((Long) oldValue).doubleValue()``. pyarrow's unchecked cast rounds the same way
            # (round to nearest, ties to even). Refusing would leave a table whose type was
            # widened unreadable.
            return col.cast(target, safe=False)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
        raise SchemaError(f"column {path!r}: cannot cast {col.type} to {target}: {e}") from e


def promote_table(table: pa.Table, target: pa.Schema) -> pa.Table:
    """Bring ``table`` (rows written with an older schema) to the ``target`` schema.

    Columns are matched by name and reordered to ``target``; columns missing from ``table`` are
    added as nulls; columns not in ``target`` are dropped; types are widened the way Avro/Hudi
    schema evolution allows (int8 -> int16 -> int32 -> int64, integers -> float/double,
    float -> double, decimal(p, s) -> wider decimal, numbers/decimals/dates/binary -> string,
    string -> binary, timestamp units to finer ones), recursively inside structs, lists and maps
    (missing struct fields become null).

    Raises:
        SchemaError: a column's type cannot be promoted safely, or a non-nullable target column
            is missing (the message names the column).
    """
    if table.schema == target:
        return table
    return _fit_columns(
        table, target, lambda col, f: _check_promotion(col.type, f.type, f.name, False)
    )


def conform_table(table: pa.Table, target: pa.Schema) -> pa.Table:
    """Cast ``table`` to ``target`` for writing: same columns (any order), value-checked casts.

    Unlike :func:`promote_table` narrowing casts are allowed when every value survives (pyarrow
    ``safe`` casts: no overflow, no truncated timestamps); missing nullable columns become null.

    Raises:
        SchemaError: an extra column, a missing non-nullable column, nulls in a non-nullable
            column or a value that does not survive the cast (the message names the column).
    """
    extra = [n for n in table.column_names if target.get_field_index(n) < 0]
    if extra:
        raise SchemaError(f"columns {extra} are not in the schema {target.names}")
    if table.schema == target:
        return table

    def check(col: pa.ChunkedArray, f: pa.Field) -> None:
        if not f.nullable and col.null_count:
            raise SchemaError(f"column {f.name!r} holds nulls but is not nullable")

    return _fit_columns(table, target, check)


def _fit_columns(
    table: pa.Table, target: pa.Schema, check: Callable[[pa.ChunkedArray, pa.Field], None]
) -> pa.Table:
    """``table``'s columns in ``target``'s order and types (``check`` first); missing ones null."""
    columns = []
    for f in target:
        idx = table.schema.get_field_index(f.name)
        if idx < 0:
            if not f.nullable:
                raise SchemaError(f"column {f.name!r} is missing and not nullable")
            columns.append(pa.chunked_array([pa.nulls(table.num_rows, type=f.type)]))
            continue
        col = table.column(idx)
        check(col, f)
        columns.append(_cast_column(col, f.type, f.name))
    return pa.Table.from_arrays(columns, schema=target)


def missing_subfields(table: pa.DataType, incoming: pa.DataType, path: str) -> list[str]:
    """Paths (``a.b``, ``a[].b``, ``a{}.b``) of ``table``'s struct fields not in ``incoming``.

    Args:
        table: the table's type of a column.
        incoming: the input's type of the same column.
        path: the column's name (the prefix of the returned paths).
    """
    t = pa.types
    if t.is_struct(table) and t.is_struct(incoming):
        names = {f.name: f.type for f in incoming}
        out = []
        for f in table:
            sub = f"{path}.{f.name}"
            if f.name not in names:
                out.append(sub)
            else:
                out.extend(missing_subfields(f.type, names[f.name], sub))
        return out
    lists = (t.is_list(table) or t.is_large_list(table)) and (
        t.is_list(incoming) or t.is_large_list(incoming)
    )
    if lists:
        return missing_subfields(table.value_type, incoming.value_type, f"{path}[]")
    if t.is_map(table) and t.is_map(incoming):
        return missing_subfields(table.item_type, incoming.item_type, f"{path}{{}}")
    return []


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


def _is_key_type(t: pa.DataType) -> bool:
    """A type record keys and partition paths are computed from."""
    return (
        pa.types.is_string(t)
        or pa.types.is_large_string(t)
        or pa.types.is_integer(t)
        or pa.types.is_boolean(t)
        or pa.types.is_date(t)
        or pa.types.is_dictionary(t)
    )


def _has_no_order(t: pa.DataType) -> bool:
    return (
        pa.types.is_nested(t)
        or pa.types.is_null(t)
        or pa.types.is_binary(t)
        or pa.types.is_large_binary(t)
    )


@dataclass(frozen=True)
class WriteSchema:
    """What :func:`write_schema` decided for one write.

    Attributes:
        schema: the table schema the write writes (meta fields first).
        partial_columns: the data columns a partial update carries (the others keep their
            stored values); None for a full-row write.
    """

    schema: pa.Schema
    partial_columns: tuple[str, ...] | None = None


def write_schema(
    incoming: pa.Schema,
    table: pa.Schema | None,
    *,
    table_name: str,
    record_key_fields: Sequence[str],
    partition_fields: Sequence[str] = (),
    ordering_field: str | None = None,
    operation: str = "upsert",
    required_columns: Sequence[str] | None = None,
    partial_updates: bool = False,
    set_null_for_missing: bool = False,
    nulls_mean_unchanged: bool = False,
) -> WriteSchema:
    """Check a write's input schema against the table's and decide the schema to write.

    Meta columns in the input (e.g. rows read from a Hudi table) are not data: Hudi drops the
    five and ``_hoodie_operation`` alike (``HoodieAvroUtils.isMetadataField``). The table schema
    evolves as Hudi's schema-on-write evolution does (``HoodieSchemaUtils.deduceWriterSchema``):
    new columns are added (nullable), types change only by :func:`can_promote` ``on_write`` --
    an input type that promotes to the table's is cast to it
    (``AvroSchemaEvolutionUtils.reconcileSchemaRequirements``), a table type that promotes to
    the input's is widened --, and table columns the input lacks need a partial update, null
    filling or a merger where nulls mean "unchanged".

    Args:
        incoming: the input's Arrow schema.
        table: the table's schema (meta fields included), None or empty for a new table.
        table_name: names the Avro records (:func:`table_avro_schema`).
        record_key_fields: the record key columns.
        partition_fields: the partition path columns.
        ordering_field: the ordering (precombine) column, if any.
        operation: the write operation's name (for messages).
        required_columns: the columns rows need when they are not whole records (a delete's
            keys, a delete_partition's partition columns); such a write keeps the table
            schema. None: rows are records, checked against the table's schema in full.
        partial_updates: ``hoodie.write.partial.updates``.
        set_null_for_missing: ``hoodie.write.set.null.for.missing.columns``.
        nulls_mean_unchanged: the table's merger keeps stored values where a row has nulls.

    Raises:
        ConfigError: no record key fields.
        SchemaError: a key, partition or ordering column is missing or has an unusable type, or
            the input drops table columns or changes a type unsafely (names the column).
    """
    check_unique_names(incoming)
    data = without_meta_fields(incoming)
    existing = table if table is not None else pa.schema([])
    existing_data = pa.schema([f for f in existing if f.name not in META_FIELDS])
    if required_columns is not None and len(existing_data):
        for c in required_columns:
            if data.get_field_index(c) < 0:
                raise SchemaError(f"{operation}: input lacks column '{c}'")
        return WriteSchema(existing)
    if not record_key_fields and not len(existing_data):  # existing: auto-generated keys
        raise ConfigError(
            "option 'hoodie.datasource.write.recordkey.field' is required to create a table"
        )
    for c in [*record_key_fields, *partition_fields]:
        if data.get_field_index(c) < 0:
            raise SchemaError(f"key column '{c}' is missing from the input {data.names}")
        t = data.field(c).type
        if not _is_key_type(t):
            raise SchemaError(f"key column '{c}' has unsupported type {t}")
    if ordering_field and data.get_field_index(ordering_field) >= 0:
        t = data.field(ordering_field).type
        if _has_no_order(t):
            raise SchemaError(
                f"ordering column '{ordering_field}' has type {t}, which has no order "
                "(hoodie.datasource.write.precombine.field)"
            )
    if ordering_field and data.get_field_index(ordering_field) < 0:
        raise SchemaError(
            f"ordering column '{ordering_field}' "
            "(hoodie.datasource.write.precombine.field) is missing from the input"
        )
    check_naive_timestamps(data, existing_data)
    merged, partial = evolve_schema(
        existing_data,
        data,
        table_name=table_name,
        partial_updates=partial_updates,
        set_null_for_missing=set_null_for_missing,
        nulls_mean_unchanged=nulls_mean_unchanged,
    )
    canonical = avro_to_arrow_schema(table_avro_schema(merged, table_name))
    return WriteSchema(with_meta_fields(canonical), partial)


def check_naive_timestamps(incoming: pa.Schema, existing: pa.Schema) -> list[str]:
    """Refuse timestamp columns without a time zone that the table does not already hold.

    No schema for such a column is read as the same naive values by both Apache Hudi and
    hudi-rs. Apache Hudi (Spark 3.4+) maps only Avro ``local-timestamp-millis|micros`` to
    ``TimestampNTZType`` (``SchemaConverters.toSqlType``; its writer turns ``TimestampNTZType``
    into ``local-timestamp-micros`` and parquet ``TIMESTAMP(MICROS, isAdjustedToUTC=false)``);
    ``timestamp-micros`` reads as ``TimestampType`` (an instant) and a plain ``long`` as
    ``LongType``. hudi-rs (0.5, and its main branch) panics on ``local-timestamp-*`` anywhere
    in the table schema it resolves from the commit metadata (``avro_to_arrow`` ``todo!()``),
    failing every read of the table. So a naive column that a write would add -- a new table,
    a new column or struct field, or a column the table holds as a timezone-aware timestamp --
    is refused. A table that already declares the column naive (Apache Hudi wrote it with
    ``TimestampNTZType``, or hudi_ds before this rule) keeps Apache Hudi's representation:
    hudi-rs cannot read that table anyway, and a warning says so.

    Args:
        incoming: the write's data columns.
        existing: the table's data columns (empty for a new table).

    Returns:
        The paths of naive timestamp columns the table already declares (written as
        ``local-timestamp-*``).

    Raises:
        SchemaError: naive timestamp columns that the table does not declare naive (names each
            column and how to convert it).
    """
    refused: list[str] = []
    kept: list[str] = []
    for f in incoming:
        idx = existing.get_field_index(f.name)
        old = existing.field(idx).type if idx >= 0 else None
        _naive_leaves(f.type, old, f.name, refused, kept)
    if refused:
        raise SchemaError(
            f"timestamp column(s) without a time zone {refused}: no Hudi schema for them is "
            "read alike by Apache Hudi (which needs Avro local-timestamp-micros for Spark's "
            "TimestampNTZType) and hudi-rs (which fails on every read of a table whose schema "
            "holds local-timestamp-*). Convert them to timezone-aware timestamps before "
            "writing, e.g. in pyarrow col.cast(pa.timestamp('us', tz='UTC')) (the wall-clock "
            "times as UTC instants) or pc.assume_timezone(col, 'Europe/Paris'), in pandas "
            "s.dt.tz_localize('UTC'), in Spark cast the column to TIMESTAMP (TimestampType, "
            "read in spark.sql.session.timeZone)"
        )
    if kept:
        log.warning(
            "timestamp column(s) without a time zone %s are written as the table declares "
            "them (Avro local-timestamp, Spark TimestampNTZType); hudi-rs cannot read this table",
            kept,
        )
    return kept


def _naive_leaves(
    t: pa.DataType, old: pa.DataType | None, path: str, refused: list[str], kept: list[str]
) -> None:
    """Collect the naive timestamp leaves of ``t`` (see :func:`check_naive_timestamps`)."""
    if pa.types.is_dictionary(t):
        t = t.value_type
    if old is not None and pa.types.is_dictionary(old):
        old = old.value_type
    if pa.types.is_timestamp(t):
        if t.tz is None:
            declared = old is not None and pa.types.is_timestamp(old) and old.tz is None
            (kept if declared else refused).append(path)
        return
    if pa.types.is_struct(t):
        olds = {f.name: f.type for f in old} if old is not None and pa.types.is_struct(old) else {}
        for f in t:
            _naive_leaves(f.type, olds.get(f.name), f"{path}.{f.name}", refused, kept)
        return
    if _is_list_type(t):
        old_item = old.value_type if old is not None and _is_list_type(old) else None
        _naive_leaves(t.value_type, old_item, f"{path}[]", refused, kept)
        return
    if pa.types.is_map(t):
        is_map = old is not None and pa.types.is_map(old)
        old_map = cast(pa.MapType, old) if is_map else None
        _naive_leaves(
            t.key_type, old_map.key_type if old_map else None, f"{path}{{key}}", refused, kept
        )
        _naive_leaves(
            t.item_type, old_map.item_type if old_map else None, f"{path}{{}}", refused, kept
        )


def _is_list_type(t: pa.DataType) -> bool:
    return (
        pa.types.is_list(t)
        or pa.types.is_large_list(t)
        or pa.types.is_fixed_size_list(t)
        or pa.types.is_list_view(t)
        or pa.types.is_large_list_view(t)
    )


def evolve_schema(
    existing: pa.Schema,
    incoming: pa.Schema,
    *,
    table_name: str = "t",
    partial_updates: bool = False,
    set_null_for_missing: bool = False,
    nulls_mean_unchanged: bool = False,
) -> tuple[pa.Schema, tuple[str, ...] | None]:
    """The table's data schema after a write of ``incoming`` (see :func:`write_schema`).

    Args:
        existing: the table's data columns (no meta fields); empty for a new table.
        incoming: the input's data columns.
        table_name: names the Avro records ``incoming`` is canonicalised through.
        partial_updates, set_null_for_missing, nulls_mean_unchanged: as in
            :func:`write_schema`.

    Returns:
        The evolved data schema and the partial update's columns (None: full rows).

    Raises:
        SchemaError: the input lacks table columns (top-level or nested) without a way to
            keep them, or a column's type changes unsafely (names the column).
    """
    if not len(existing):
        return incoming, None
    missing = [f.name for f in existing if incoming.get_field_index(f.name) < 0]
    nested = [
        p
        for f in incoming
        if existing.get_field_index(f.name) >= 0
        for p in missing_subfields(existing.field(f.name).type, f.type, f.name)
    ]
    if nested and not set_null_for_missing:
        # a dropped struct field is a dropped column (Hudi's schema compatibility check,
        # AvroSchemaCompatibility via HoodieSchemaUtils.deduceWriterSchema, treats nested
        # fields like top-level ones); partial updates and null-means-unchanged mergers
        # work on top-level columns, so they cannot keep a nested field's stored value
        raise SchemaError(
            f"input lacks nested table field(s) {nested}; add them or set "
            "hoodie.write.set.null.for.missing.columns=true"
        )
    partial: tuple[str, ...] | None = None
    if missing and partial_updates:
        # a partial update: the missing columns keep their stored values
        partial = tuple(f.name for f in incoming if f.name not in META_FIELDS)
    elif missing and not set_null_for_missing and not nulls_mean_unchanged:
        raise SchemaError(
            f"input lacks table column(s) {missing}; add them, set "
            "hoodie.write.set.null.for.missing.columns=true, or write a partial update "
            "(hoodie.write.partial.updates=true)"
        )
    fields = list(existing)
    canonical = avro_to_arrow_schema(table_avro_schema(incoming, table_name or "t"))
    for f in canonical:
        idx = existing.get_field_index(f.name)
        if idx < 0:
            fields.append(f.with_nullable(True))
            continue
        old = existing.field(f.name).type
        if old == f.type or can_promote(f.type, old, on_write=True):
            continue  # the input is cast to the table's type
        if can_promote(old, f.type, on_write=True):
            fields[idx] = existing.field(f.name).with_type(f.type)  # e.g. int -> long
            continue
        raise SchemaError(
            f"column '{f.name}' has type {f.type}; the table has {old} and neither "
            "promotes safely to the other"
        )
    return pa.schema(fields), partial


def conform_partial(
    table: pa.Table,
    schema: pa.Schema,
    columns: Collection[str] | None = None,
    *,
    narrowing: bool = False,
) -> pa.Table:
    """Rows carrying some of ``schema``'s columns (a partial update) as rows of ``schema``.

    The carried columns are cast to ``schema``'s types, the other columns of ``schema`` are
    null (a partial update's "not written"), columns of ``table`` not carried are dropped.

    Args:
        table: the rows.
        schema: the full schema.
        columns: the carried columns (default: those of ``table`` that ``schema`` has).
        narrowing: cast as a writer casts its input (:func:`conform_table`: value-checked
            casts that may narrow); default: promotions only (:func:`promote_table`: stored
            rows read under a newer schema).

    Raises:
        SchemaError: a carried column does not convert (names the column).
    """
    carried = set(table.column_names if columns is None else columns)
    sub = pa.schema([f for f in schema if f.name in carried])
    present = [c for c in table.column_names if c in sub.names]
    if narrowing:
        table = conform_table(table.select(present), sub)
    else:
        table = promote_table(table.select(present), sub)
    n = table.num_rows
    cols = [table.column(f.name) if f.name in sub.names else pa.nulls(n, f.type) for f in schema]
    return pa.Table.from_arrays(cols, schema=schema)


# --------------------------------------------------------------------------------------------
# Small helpers for callers
# --------------------------------------------------------------------------------------------


@lru_cache(maxsize=256)
def cached_arrow_schema(avro_json: str) -> pa.Schema:
    """:func:`avro_to_arrow_schema` of a schema JSON string, memoised (log headers repeat)."""
    return avro_to_arrow_schema(avro_json)


# Input normalisation (the write path's edge)
# --------------------------------------------------------------------------------------------


def plain_type(t: pa.DataType) -> pa.DataType:
    """``t`` with Arrow's alternative layouts replaced by the plain ones, recursively.

    ``string_view`` / ``large_string`` -> ``string``, ``binary_view`` / ``large_binary`` ->
    ``binary``, ``large_list`` / ``list_view`` / ``large_list_view`` -> ``list``: the layouts
    polars (views, large lists) and pandas (``large_string``) hand out. A Hudi table's
    schema comes from its Avro schema, which knows one string, one bytes and one array type,
    so the write path sees the plain Arrow form only. Dictionary value types are normalised
    too; other types are returned as they are.
    """
    if pa.types.is_string_view(t) or pa.types.is_large_string(t) or pa.types.is_string(t):
        return pa.string()
    if pa.types.is_binary_view(t) or pa.types.is_large_binary(t):
        return pa.binary()
    if (
        pa.types.is_list(t)
        or pa.types.is_large_list(t)
        or pa.types.is_list_view(t)
        or pa.types.is_large_list_view(t)
    ):
        vf = t.value_field
        return pa.list_(vf.with_type(plain_type(vf.type)))
    if pa.types.is_fixed_size_list(t):
        vf = t.value_field
        return pa.list_(vf.with_type(plain_type(vf.type)), t.list_size)
    if pa.types.is_struct(t):
        return pa.struct([f.with_type(plain_type(f.type)) for f in t])
    if pa.types.is_map(t):
        kf, itf = t.key_field, t.item_field
        return pa.map_(
            kf.with_type(plain_type(kf.type)),
            itf.with_type(plain_type(itf.type)),
            keys_sorted=t.keys_sorted,
        )
    if pa.types.is_dictionary(t):
        return pa.dictionary(t.index_type, plain_type(t.value_type), t.ordered)
    return t


def plain_schema(schema: pa.Schema) -> pa.Schema:
    """``schema`` with every field's type :func:`plain_type` (metadata kept)."""
    return pa.schema([f.with_type(plain_type(f.type)) for f in schema], metadata=schema.metadata)


def plain_batches(
    batches: Iterator[pa.RecordBatch], schema: pa.Schema, target: pa.Schema
) -> Iterator[pa.RecordBatch]:
    """``batches`` (of ``schema``) cast to ``target`` (:func:`plain_schema` of it), one by one.

    A batch whose large or view values exceed what 32-bit offsets address is split until
    each part fits, so the cast never fails for size and memory stays one batch.

    Raises:
        SchemaError: a column cannot be cast (names it).
    """
    if schema == target:
        yield from batches
        return
    for batch in batches:
        yield from _plain_batch(batch, target)


def _plain_batch(batch: pa.RecordBatch, target: pa.Schema) -> Iterator[pa.RecordBatch]:
    try:
        yield batch.cast(target)
    except (pa.ArrowCapacityError, pa.ArrowInvalid) as e:
        if batch.num_rows <= 1 or not _offset_overflow(e):
            raise _cast_error(batch.schema, target, e) from e
        half = batch.num_rows // 2
        yield from _plain_batch(batch.slice(0, half), target)
        yield from _plain_batch(batch.slice(half), target)
    except (pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
        raise _cast_error(batch.schema, target, e) from e


def _offset_overflow(e: Exception) -> bool:
    text = str(e).lower()
    return isinstance(e, pa.ArrowCapacityError) or "overflow" in text or "offset" in text


def _cast_error(src: pa.Schema, dst: pa.Schema, e: Exception) -> SchemaError:
    bad = [f.name for f in src if dst.field(f.name).type != f.type]
    return SchemaError(f"input columns {bad} cannot be normalised to {dst}: {e}")
