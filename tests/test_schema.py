"""Arrow <-> Avro schemas and data, schema evolution; checked against every fixture schema."""

from __future__ import annotations

import datetime as dt
import io
import json
import re
from decimal import Context, Decimal
from pathlib import Path
from typing import Any

import fastavro
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hudi_ds.errors import ConfigError, SchemaError, UnsupportedError
from hudi_ds.log import scan_log_bytes
from hudi_ds.schema.avro import (
    arrow_to_avro_schema,
    avro_record_name,
    avro_schema_json,
    avro_to_arrow_schema,
    decimal_fixed_size,
    physical_arrow_schema,
    strip_logical_types,
)
from hudi_ds.schema.evolution import can_promote, conform_table, missing_subfields, promote_table
from hudi_ds.schema.meta import (
    IS_DELETED_FIELD,
    META_FIELDS,
    OPERATION_METADATA_FIELD,
    with_meta_fields,
    without_meta_fields,
)
from hudi_ds.schema.records import (
    arrow_to_avro_records,
    avro_records_to_arrow,
    decimal_from_bytes,
    decimal_to_bytes,
)
from hudi_ds.schema.write import (
    WriteSchema,
    check_naive_timestamps,
    conform_partial,
    evolve_schema,
    write_schema,
)
from tests.fixtures import fixture_names, fixture_table, require_fixtures

# --------------------------------------------------------------------------------------------
# Fixture schemas
# --------------------------------------------------------------------------------------------


def read_java_properties(text: str) -> dict[str, str]:
    """Parse Java ``Properties.store`` text (``\\:``/``\\=`` escapes, continuations, ``\\u``)."""
    out: dict[str, str] = {}
    logical: list[str] = []
    for line in text.splitlines():
        stripped = line.lstrip()
        if not logical and (not stripped or stripped[0] in "#!"):
            continue
        trailing = len(stripped) - len(stripped.rstrip("\\"))
        if trailing % 2 == 1:
            logical.append(stripped[:-1])
            continue
        logical.append(stripped)
        entry, logical = "".join(logical), []
        m = re.match(r"((?:[^\\:=\s]|\\.)*)\s*[:=\s]\s*(.*)$", entry)
        key, value = (m.group(1), m.group(2)) if m else (entry, "")
        out[_unescape(key)] = _unescape(value)
    return out


def _unescape(s: str) -> str:
    special = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}

    def repl(m: re.Match[str]) -> str:
        c = m.group(1)
        if c.startswith("u"):
            return chr(int(c[1:], 16))
        return special.get(c, c)

    return re.sub(r"\\(u[0-9a-fA-F]{4}|.)", repl, s)


def test_read_java_properties() -> None:
    text = "#c\nk1=a\\:b\\=c\nk2 = x \\\n    y\nk\\:3:\\u00e9\n\n! comment\n"
    assert read_java_properties(text) == {"k1": "a:b=c", "k2": "x y", "k:3": "é"}


def _tables(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    require_fixtures()
    return [fixture_table(n, tmp_path_factory) for n in fixture_names()]


def _create_schemas(roots: list[Path]) -> list[str]:
    out = []
    for root in roots:
        props = read_java_properties((root / ".hoodie" / "hoodie.properties").read_text())
        if "hoodie.table.create.schema" in props:
            out.append(props["hoodie.table.create.schema"])
    return out


def _header_schemas(roots: list[Path], metadata: bool) -> set[str]:
    out = set()
    for root in roots:
        for path in root.rglob("*"):
            if ".log." not in path.name or ("metadata" in path.parts) != metadata:
                continue
            for block in scan_log_bytes(path.read_bytes()).blocks:
                if block.schema is not None:
                    out.add(block.schema)
    return out


def _commit_schemas(roots: list[Path]) -> set[str]:
    out = set()
    for root in roots:
        hoodie = root / ".hoodie"
        for path in [*hoodie.glob("*commit"), *hoodie.glob("timeline/*commit")]:
            raw = path.read_bytes()
            if raw[:4] == b"Obj\x01":
                meta = next(iter(fastavro.reader(io.BytesIO(raw))))
                assert isinstance(meta, dict)
                extra = meta.get("extraMetadata") or {}
            elif raw.strip():
                extra = json.loads(raw).get("extraMetadata") or {}
            else:
                continue
            if extra.get("schema"):
                out.add(extra["schema"])
    return out


@pytest.fixture(scope="module")
def fixture_schemas(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[str]]:
    roots = _tables(tmp_path_factory)
    return {
        "create": _create_schemas(roots),
        "header": sorted(_header_schemas(roots, metadata=False)),
        "mdt_header": sorted(_header_schemas(roots, metadata=True)),
        "commit": sorted(_commit_schemas(roots)),
    }


def test_fixture_schema_counts(fixture_schemas: dict[str, list[str]]) -> None:
    assert len(fixture_schemas["create"]) >= 40
    assert len(fixture_schemas["header"]) >= 15
    assert len(fixture_schemas["commit"]) >= 20
    assert fixture_schemas["mdt_header"]


def test_log_header_schemas_round_trip_exactly(fixture_schemas: dict[str, list[str]]) -> None:
    """Spark's SCHEMA headers are reproduced character for character from their Arrow form."""
    for text in fixture_schemas["header"]:
        avro = json.loads(text)
        arrow = avro_to_arrow_schema(text)
        assert arrow.names[:5] == META_FIELDS
        back = arrow_to_avro_schema(arrow, avro["name"], avro["namespace"])
        assert avro_schema_json(back) == text
        assert avro_to_arrow_schema(back) == arrow


def _spark_shape(t: Any) -> Any:
    """What Spark/Hudi would write for an Avro type: ``["null", T]`` first, defaults null."""
    nullable = False
    if isinstance(t, list):
        nullable = "null" in t
        (t,) = [b for b in t if b != "null"]
    if isinstance(t, dict) and t.get("type") == "record":
        fields = []
        for f in t["fields"]:
            inner, _ = _spark_shape(f["type"])
            fj: dict[str, Any] = {"name": f["name"], "type": ["null", inner]}
            if f["name"] in META_FIELDS:
                fj["doc"] = ""
            fj["default"] = None
            fields.append(fj)
        t = {**{k: v for k, v in t.items() if k not in ("fields", "doc")}, "fields": fields}
    elif isinstance(t, dict) and t.get("type") in ("array", "map"):
        key = "items" if t["type"] == "array" else "values"
        inner, inner_nullable = _spark_shape(t[key])
        t = {"type": t["type"], key: ["null", inner] if inner_nullable else inner}
    return t, nullable


@pytest.mark.parametrize("kind", ["create", "commit"])
def test_fixture_schemas_round_trip(kind: str, fixture_schemas: dict[str, list[str]]) -> None:
    for text in fixture_schemas[kind]:
        avro = json.loads(text)
        arrow = avro_to_arrow_schema(text)
        back = arrow_to_avro_schema(arrow, avro["name"], avro["namespace"])
        assert back == _spark_shape(avro)[0]
        assert avro_to_arrow_schema(back) == _all_nullable(arrow)


def _all_nullable(schema: pa.Schema) -> pa.Schema:
    return pa.schema([f.with_nullable(True) for f in schema])


def test_fixture_schema_types(fixture_schemas: dict[str, list[str]]) -> None:
    by_name = {}
    for text in fixture_schemas["header"]:
        for f in avro_to_arrow_schema(text):
            by_name[f.name] = f.type
    assert by_name["decimalField"] == pa.decimal128(10, 5)
    assert by_name["amount"] == pa.decimal128(15, 2)
    assert by_name["timestampField"] == pa.timestamp("us", tz="UTC")
    assert by_name["dateField"] == pa.date32()
    assert by_name["binaryField"] == pa.binary()
    assert by_name["byteField"] == pa.int32()
    assert by_name["arrayField"] == pa.list_(
        pa.field(
            "element", pa.struct([("arr_struct_f1", pa.string()), ("arr_struct_f2", pa.int32())])
        )
    )
    assert pa.types.is_map(by_name["mapField"])
    assert (
        by_name["structField"].field("child_struct").type.field("child_field2").type == pa.bool_()
    )


def test_metadata_table_schema_is_unsupported(fixture_schemas: dict[str, list[str]]) -> None:
    """The MDT record schema uses multi-branch unions (column stats wrappers): named error."""
    with pytest.raises(UnsupportedError, match="union with several non-null branches"):
        for text in fixture_schemas["mdt_header"]:
            avro_to_arrow_schema(text)


# --------------------------------------------------------------------------------------------
# Avro -> Arrow
# --------------------------------------------------------------------------------------------


def _one_field(avro_type: Any) -> pa.Field:
    schema = avro_to_arrow_schema(
        {"type": "record", "name": "r", "fields": [{"name": "f", "type": avro_type}]}
    )
    return schema.field("f")


@pytest.mark.parametrize(
    ("avro_type", "arrow_type"),
    [
        ("boolean", pa.bool_()),
        ("int", pa.int32()),
        ("long", pa.int64()),
        ("float", pa.float32()),
        ("double", pa.float64()),
        ("bytes", pa.binary()),
        ("string", pa.string()),
        ({"type": "string", "logicalType": "uuid"}, pa.string()),
        ({"type": "enum", "name": "E", "symbols": ["A", "B"]}, pa.string()),
        ({"type": "fixed", "name": "F", "size": 3}, pa.binary()),
        (
            {
                "type": "fixed",
                "name": "F",
                "size": 9,
                "logicalType": "decimal",
                "precision": 20,
                "scale": 4,
            },
            pa.decimal128(20, 4),
        ),
        (
            {"type": "bytes", "logicalType": "decimal", "precision": 30, "scale": 15},
            pa.decimal128(30, 15),
        ),
        (
            {"type": "bytes", "logicalType": "decimal", "precision": 50, "scale": 2},
            pa.decimal256(50, 2),
        ),
        ({"type": "bytes", "logicalType": "decimal", "precision": 5}, pa.decimal128(5, 0)),
        ({"type": "int", "logicalType": "date"}, pa.date32()),
        ({"type": "int", "logicalType": "time-millis"}, pa.time32("ms")),
        ({"type": "long", "logicalType": "time-micros"}, pa.time64("us")),
        ({"type": "long", "logicalType": "timestamp-millis"}, pa.timestamp("ms", tz="UTC")),
        ({"type": "long", "logicalType": "timestamp-micros"}, pa.timestamp("us", tz="UTC")),
        ({"type": "long", "logicalType": "timestamp-nanos"}, pa.timestamp("ns", tz="UTC")),
        ({"type": "long", "logicalType": "local-timestamp-millis"}, pa.timestamp("ms")),
        ({"type": "long", "logicalType": "local-timestamp-micros"}, pa.timestamp("us")),
        ({"type": "long", "logicalType": "some-future-type"}, pa.int64()),
        ({"type": "int", "logicalType": "timestamp-micros"}, pa.int32()),  # invalid: underlying
        ({"type": "array", "items": "long"}, pa.list_(pa.field("element", pa.int64(), False))),
        ({"type": "map", "values": ["null", "int"]}, pa.map_(pa.string(), pa.int32())),
        ({"type": {"type": "int"}}, pa.int32()),
    ],
)
def test_avro_types(avro_type: Any, arrow_type: pa.DataType) -> None:
    f = _one_field(avro_type)
    assert f.type == arrow_type and not f.nullable
    assert _one_field(["null", avro_type]).nullable
    assert _one_field([avro_type, "null"]).type == arrow_type


def test_avro_named_references_and_namespaces() -> None:
    avro = {
        "type": "record",
        "name": "r",
        "namespace": "ns",
        "fields": [
            {
                "name": "a",
                "type": {
                    "type": "fixed",
                    "name": "money",
                    "size": 5,
                    "logicalType": "decimal",
                    "precision": 10,
                    "scale": 2,
                },
            },
            {"name": "b", "type": "money"},
            {"name": "c", "type": "ns.money"},
            {
                "name": "d",
                "type": {
                    "type": "record",
                    "name": "inner",
                    "namespace": "other",
                    "fields": [{"name": "x", "type": "int"}],
                },
            },
            {"name": "e", "type": ["null", "other.inner"]},
        ],
    }
    schema = avro_to_arrow_schema(avro)
    assert [f.type for f in schema][:3] == [pa.decimal128(10, 2)] * 3
    assert schema.field("e").type == pa.struct([pa.field("x", pa.int32(), False)])
    assert schema.field("e").nullable and not schema.field("d").nullable


@pytest.mark.parametrize(
    ("avro", "match"),
    [
        (
            {"type": "record", "name": "r", "fields": [{"name": "u", "type": ["int", "string"]}]},
            "'u'",
        ),
        (
            {
                "type": "record",
                "name": "r",
                "fields": [{"name": "u", "type": ["null", "int", "long"]}],
            },
            "'u'",
        ),
        (
            {
                "type": "record",
                "name": "r",
                "fields": [
                    {
                        "name": "s",
                        "type": {
                            "type": "record",
                            "name": "s",
                            "fields": [{"name": "v", "type": ["int", "string"]}],
                        },
                    }
                ],
            },
            "'s.v'",
        ),
        ({"type": "record", "name": "r", "fields": [{"name": "x", "type": "nope"}]}, "'x'.*'nope'"),
        (
            {
                "type": "record",
                "name": "node",
                "fields": [{"name": "next", "type": ["null", "node"]}],
            },
            "recursive",
        ),
        ({"type": "array", "items": "int"}, "record"),
    ],
)
def test_avro_unsupported(avro: Any, match: str) -> None:
    with pytest.raises(UnsupportedError, match=match):
        avro_to_arrow_schema(avro)


# --------------------------------------------------------------------------------------------
# Arrow -> Avro
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("precision", "size"),
    [
        (1, 1),
        (2, 1),
        (3, 2),
        (4, 2),
        (5, 3),
        (9, 4),
        (10, 5),
        (15, 7),
        (18, 8),
        (19, 9),
        (38, 16),
        (76, 32),
    ],
)
def test_decimal_fixed_size(precision: int, size: int) -> None:
    assert decimal_fixed_size(precision) == size


def test_arrow_to_avro_spark_shape() -> None:
    schema = with_meta_fields(
        pa.schema(
            [
                ("i8", pa.int8()),
                ("u16", pa.uint16()),
                ("u32", pa.uint32()),
                ("h", pa.float16()),
                ("ls", pa.large_string()),
                ("dict", pa.dictionary(pa.int32(), pa.string())),
                ("fsb", pa.binary(4)),
                ("ns", pa.timestamp("ns", tz="Europe/Paris")),
                ("naive", pa.timestamp("s")),
                ("d64", pa.date64()),
                ("t32", pa.time32("s")),
                ("ll", pa.large_list(pa.int32())),
                ("strict", pa.list_(pa.field("element", pa.int32(), nullable=False))),
                (
                    "s",
                    pa.struct(
                        [("dec", pa.decimal128(4, 1)), ("inner", pa.struct([("x", pa.int64())]))]
                    ),
                ),
            ]
        )
    )
    avro = arrow_to_avro_schema(schema, "t_record", "hoodie.t")
    assert avro["name"] == "t_record" and avro["namespace"] == "hoodie.t"
    fields = {f["name"]: f for f in avro["fields"]}
    assert list(fields)[:5] == META_FIELDS
    assert fields["_hoodie_record_key"] == {
        "name": "_hoodie_record_key",
        "type": ["null", "string"],
        "doc": "",
        "default": None,
    }
    assert list(fields["i8"]) == ["name", "type", "default"]
    types = {n: f["type"][1] for n, f in fields.items()}
    assert types["i8"] == types["u16"] == "int"
    assert types["u32"] == "long" and types["h"] == "float"
    assert types["ls"] == types["dict"] == "string" and types["fsb"] == "bytes"
    assert types["ns"] == {"type": "long", "logicalType": "timestamp-micros"}
    assert types["naive"] == {"type": "long", "logicalType": "local-timestamp-micros"}
    assert types["d64"] == {"type": "int", "logicalType": "date"}
    assert types["t32"] == {"type": "int", "logicalType": "time-millis"}
    assert types["ll"] == {"type": "array", "items": ["null", "int"]}
    assert types["strict"] == {"type": "array", "items": "int"}
    assert types["s"]["name"] == "s" and types["s"]["namespace"] == "hoodie.t.t_record"
    dec, inner = types["s"]["fields"]
    assert dec["type"][1] == {
        "type": "fixed",
        "name": "fixed",
        "namespace": "hoodie.t.t_record.s.dec",
        "size": 2,
        "logicalType": "decimal",
        "precision": 4,
        "scale": 1,
    }
    assert inner["type"][1]["namespace"] == "hoodie.t.t_record.s"
    parsed = fastavro.parse_schema(avro)  # names are unique and valid
    assert isinstance(parsed, dict) and parsed["name"] == "hoodie.t.t_record"


@pytest.mark.parametrize(
    ("arrow_type", "name"),
    [
        (pa.uint64(), "c"),
        (pa.null(), "c"),
        (pa.duration("s"), "c"),
        (pa.month_day_nano_interval(), "c"),
        (pa.map_(pa.int32(), pa.string()), "c"),
        (pa.struct([("bad", pa.list_(pa.uint64()))]), r"c\.bad\[\]"),
        (pa.dense_union([pa.field("a", pa.int32())]), "c"),
    ],
)
def test_arrow_without_avro_equivalent(arrow_type: pa.DataType, name: str) -> None:
    with pytest.raises(SchemaError, match=name):
        arrow_to_avro_schema(pa.schema([("c", arrow_type)]), "r", "ns")


@pytest.mark.parametrize("bad", ["my col", "1st", "é", "a-b", ""])
def test_invalid_avro_names(bad: str) -> None:
    with pytest.raises(SchemaError, match="not a valid Avro name"):
        arrow_to_avro_schema(pa.schema([(bad, pa.int32())]), "r", "ns")


def test_meta_field_helpers() -> None:
    base = pa.schema([("a", pa.int32()), ("_hoodie_record_key", pa.string())], metadata={"k": "v"})
    full = with_meta_fields(base)
    assert full.names == [*META_FIELDS, "a"]
    assert full.metadata == {b"k": b"v"}
    assert with_meta_fields(full) == full
    assert without_meta_fields(full).names == ["a"]
    with_op = pa.schema(
        [
            *full,
            pa.field(OPERATION_METADATA_FIELD, pa.string()),
            pa.field(IS_DELETED_FIELD, pa.bool_()),
        ]
    )
    assert without_meta_fields(with_op).names == ["a", IS_DELETED_FIELD]


# --------------------------------------------------------------------------------------------
# Record data
# --------------------------------------------------------------------------------------------

DATA_SCHEMA = pa.schema(
    [
        ("s", pa.string()),
        ("i", pa.int32()),
        ("l", pa.int64()),
        ("dec", pa.decimal128(12, 4)),
        ("wide", pa.decimal256(50, 10)),
        ("day", pa.date32()),
        ("ts", pa.timestamp("us", tz="UTC")),
        ("ts_ms", pa.timestamp("ms", tz="UTC")),
        ("local", pa.timestamp("us")),
        ("t_ms", pa.time32("ms")),
        ("t_us", pa.time64("us")),
        ("bin", pa.binary()),
        ("lst", pa.list_(pa.field("element", pa.decimal128(5, 2)))),
        ("m", pa.map_(pa.string(), pa.struct([("x", pa.decimal128(7, 3)), ("y", pa.date32())]))),
        ("st", pa.struct([("a", pa.string()), ("b", pa.list_(pa.field("element", pa.int64())))])),
    ]
)


def _data_rows() -> list[dict[str, Any]]:
    utc = dt.timezone.utc
    return [
        {
            "s": "x",
            "i": 2**31 - 1,
            "l": -(2**63),
            "dec": Decimal("-12345678.9012"),
            "wide": Decimal("1" * 40 + ".0123456789"),
            "day": dt.date(1, 1, 1),
            "ts": dt.datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=utc),
            "ts_ms": dt.datetime(1900, 1, 1, 0, 0, 0, 1000, tzinfo=utc),
            "local": dt.datetime(2000, 2, 29, 12, 0),
            "t_ms": dt.time(23, 59, 59, 999000),
            "t_us": dt.time(0, 0, 0, 1),
            "bin": b"",
            "lst": [Decimal("-0.01"), None],
            "m": [("k", {"x": Decimal("1.5"), "y": dt.date(2024, 1, 1)}), ("n", None)],
            "st": {"a": None, "b": [1, None]},
        },
        dict.fromkeys(DATA_SCHEMA.names),
        {"s": "", "lst": [], "m": [], "st": {"a": "z", "b": []}, "dec": Decimal(0)},
    ]


def _encode_decode(records: list[dict[str, Any]], avro: dict[str, Any], logical: bool) -> list[Any]:
    schema = avro if logical else strip_logical_types(avro)
    parsed = fastavro.parse_schema(schema)
    buf = io.BytesIO()
    for r in records:
        fastavro.schemaless_writer(buf, parsed, r)
    buf.seek(0)
    return [fastavro.schemaless_reader(buf, parsed, None) for _ in records]


@pytest.mark.parametrize("logical", [True, False])
def test_record_data_round_trip(logical: bool) -> None:
    table = pa.Table.from_pylist(_data_rows(), schema=DATA_SCHEMA)
    avro = arrow_to_avro_schema(DATA_SCHEMA, "r", "ns")
    records = arrow_to_avro_records(table, avro)
    assert isinstance(records[0]["ts"], int) and isinstance(records[0]["dec"], bytes)
    assert isinstance(records[0]["m"], dict)
    decoded = _encode_decode(records, avro, logical)
    if logical:
        assert decoded[0]["dec"] == Decimal("-12345678.9012")
    arrow = avro_records_to_arrow(decoded, avro_to_arrow_schema(avro))
    assert arrow.equals(promote_table(table, avro_to_arrow_schema(avro)))
    assert arrow.schema == avro_to_arrow_schema(avro)


def test_records_with_bytes_decimals_and_uuids() -> None:
    avro = {
        "type": "record",
        "name": "r",
        "fields": [
            {
                "name": "d",
                "type": [
                    "null",
                    {"type": "bytes", "logicalType": "decimal", "precision": 9, "scale": 2},
                ],
            },
            {"name": "u", "type": {"type": "string", "logicalType": "uuid"}},
        ],
    }
    table = pa.table(
        {
            "d": pa.array([Decimal("-1.25"), None], pa.decimal128(9, 2)),
            "u": ["7d8a3f9e-0a5b-4f4e-9b9e-3e0e6a3e2c11"] * 2,
        }
    )
    records = arrow_to_avro_records(table, avro)
    decoded = _encode_decode(records, avro, logical=True)
    got = avro_records_to_arrow(decoded, avro_to_arrow_schema(avro))
    assert got.to_pylist() == table.to_pylist()
    assert physical_arrow_schema(avro).field("d").type == pa.binary()


def test_arrow_to_avro_records_default_schema() -> None:
    table = pa.table(
        {"a": pa.array([1, None], pa.int16()), "b": pa.array(["x", "y"]).dictionary_encode()}
    )
    assert arrow_to_avro_records(table) == [{"a": 1, "b": "x"}, {"a": None, "b": "y"}]


def test_arrow_to_avro_records_errors() -> None:
    avro = arrow_to_avro_schema(pa.schema([("d", pa.decimal128(3, 1))]), "r", "")
    with pytest.raises(SchemaError, match="'d'"):
        arrow_to_avro_records(
            pa.table({"d": pa.array([Decimal("12345.6")], pa.decimal128(10, 1))}), avro
        )
    ts_avro = arrow_to_avro_schema(pa.schema([("t", pa.timestamp("ns", tz="UTC"))]), "r", "")
    lossy = pa.table({"t": pa.array([1], pa.timestamp("ns", tz="UTC"))})
    with pytest.raises(SchemaError, match="'t'"):
        arrow_to_avro_records(lossy, ts_avro)
    exact = pa.table({"t": pa.array([1000], pa.timestamp("ns", tz="UTC"))})
    assert arrow_to_avro_records(exact, ts_avro) == [{"t": 1}]


@settings(max_examples=300, deadline=None)
@given(
    precision=st.integers(min_value=1, max_value=76),
    data=st.data(),
)
def test_decimal_bytes_property(precision: int, data: st.DataObject) -> None:
    scale = data.draw(st.integers(min_value=0, max_value=precision))
    bound = 10**precision - 1
    ints = data.draw(st.lists(st.one_of(st.none(), st.integers(-bound, bound)), max_size=8))
    typ = pa.decimal128(precision, scale) if precision <= 38 else pa.decimal256(precision, scale)
    ctx = Context(prec=100)
    values = [None if i is None else Decimal(i).scaleb(-scale, context=ctx) for i in ints]
    arr = pa.array(values, typ)
    size = decimal_fixed_size(precision)
    encoded = decimal_to_bytes(arr, size)
    expected = [None if i is None else i.to_bytes(size, "big", signed=True) for i in ints]
    assert encoded.to_pylist() == expected
    assert decimal_from_bytes(encoded, typ).equals(arr)
    minimal = pa.array(
        [
            None if i is None else i.to_bytes((i.bit_length() + 8) // 8, "big", signed=True)
            for i in ints
        ],
        pa.binary(),
    )
    assert decimal_from_bytes(minimal, typ).equals(arr)
    if len(arr) > 1:
        assert decimal_from_bytes(encoded.slice(1), typ).equals(arr.slice(1))


# --------------------------------------------------------------------------------------------
# Schema evolution
# --------------------------------------------------------------------------------------------


def test_promote_table_reorders_adds_and_widens() -> None:
    old = pa.table(
        {
            "b": pa.array([1, None], pa.int32()),
            "a": ["x", "y"],
            "f": pa.array([1.5, 2.5], pa.float32()),
            "i2f": pa.array([3, 4], pa.int64()),
            "dec": pa.array([Decimal("1.5"), None], pa.decimal128(5, 1)),
            "n": pa.array([7, 8], pa.int16()),
            "s": pa.array([{"x": 1}, None], pa.struct([("x", pa.int32())])),
            "lst": pa.array([[1], []], pa.list_(pa.int32())),
            "m": pa.array([[("k", 1)], None], pa.map_(pa.string(), pa.int32())),
            "gone": [0, 0],
            "ts": pa.array([1, 2], pa.timestamp("ms", tz="UTC")),
            "bin": pa.array([b"q", None]),
        }
    )
    target = pa.schema(
        [
            ("a", pa.string()),
            ("b", pa.int64()),
            ("new", pa.float64()),
            ("f", pa.float64()),
            ("i2f", pa.float64()),
            ("dec", pa.decimal128(10, 3)),
            ("n", pa.string()),
            ("s", pa.struct([("x", pa.int64()), ("y", pa.string())])),
            ("lst", pa.list_(pa.field("element", pa.int64()))),
            ("m", pa.map_(pa.string(), pa.float64())),
            ("ts", pa.timestamp("us", tz="UTC")),
            ("bin", pa.string()),
        ]
    )
    got = promote_table(old, target)
    assert got.schema == target
    assert got.to_pylist()[0] == {
        "a": "x",
        "b": 1,
        "new": None,
        "f": 1.5,
        "i2f": 3.0,
        "dec": Decimal("1.500"),
        "n": "7",
        "s": {"x": 1, "y": None},
        "lst": [1],
        "m": [("k", 1.0)],
        "ts": dt.datetime(1970, 1, 1, 0, 0, 0, 1000, tzinfo=dt.timezone.utc),
        "bin": "q",
    }
    assert promote_table(got, target) is got


@pytest.mark.parametrize(
    ("src", "dst", "name"),
    [
        (pa.array([1], pa.int64()), pa.int32(), "c"),
        (pa.array(["1"]), pa.int64(), "c"),
        (pa.array([1.5]), pa.float32(), "c"),
        (pa.array([1.5]), pa.int64(), "c"),
        (pa.array([Decimal("1.25")], pa.decimal128(5, 2)), pa.decimal128(5, 1), "c"),
        (pa.array([Decimal("1.25")], pa.decimal128(5, 2)), pa.decimal128(5, 3), "c"),
        (pa.array([1], pa.timestamp("us")), pa.timestamp("ms"), "c"),
        (pa.array([1], pa.timestamp("us")), pa.timestamp("us", tz="UTC"), "c"),
        (
            pa.array([{"x": 1}], pa.struct([("x", pa.int64())])),
            pa.struct([("x", pa.int32())]),
            r"c\.x",
        ),
        (pa.array([[1]], pa.list_(pa.int64())), pa.list_(pa.int32()), r"c\[\]"),
        (pa.array([True]), pa.int32(), "c"),
    ],
)
def test_promote_table_rejects_narrowing(src: pa.Array, dst: pa.DataType, name: str) -> None:
    with pytest.raises(SchemaError, match=name):
        promote_table(pa.table({"c": src}), pa.schema([("c", dst)]))


def test_promote_table_missing_required_column() -> None:
    with pytest.raises(SchemaError, match="'req'"):
        promote_table(
            pa.table({"a": [1]}), pa.schema([pa.field("req", pa.int64(), nullable=False)])
        )
    target = pa.schema([("s", pa.struct([pa.field("z", pa.int32(), nullable=False)]))])
    with pytest.raises(SchemaError, match="s.z"):
        promote_table(pa.table({"s": pa.array([{"x": 1}])}), target)


def test_promote_table_null_and_dictionary_columns() -> None:
    table = pa.table({"n": pa.nulls(2), "d": pa.array(["a", "b"]).dictionary_encode()})
    target = pa.schema([("n", pa.decimal128(5, 2)), ("d", pa.string())])
    got = promote_table(table, target)
    assert got.schema == target and got.column("d").to_pylist() == ["a", "b"]


def test_conform_table() -> None:
    target = pa.schema(
        [("a", pa.int32()), ("b", pa.string()), pa.field("c", pa.int64(), nullable=False)]
    )
    got = conform_table(pa.table({"c": [1], "a": pa.array([5], pa.int64())}), target)
    assert got.schema == target and got.to_pylist() == [{"a": 5, "b": None, "c": 1}]
    with pytest.raises(SchemaError, match="'a'"):
        conform_table(pa.table({"c": [1], "a": [2**40]}), target)
    with pytest.raises(SchemaError, match="'c'"):
        conform_table(pa.table({"a": [1]}), target)
    with pytest.raises(SchemaError, match="'c'"):
        conform_table(pa.table({"c": pa.array([None], pa.int64())}), target)
    with pytest.raises(SchemaError, match="zz"):
        conform_table(pa.table({"c": [1], "zz": [1]}), target)


# --------------------------------------------------------------------------------------------
# The promotion rule and schema evolution on write
# --------------------------------------------------------------------------------------------

S = pa.string()
DEC = pa.decimal128


@pytest.mark.parametrize(
    ("src", "dst", "read", "write"),
    [
        (pa.int32(), pa.int64(), True, True),
        (pa.int32(), pa.float32(), True, True),
        (pa.int64(), pa.float32(), True, True),  # Avro: long is promotable to float
        (pa.int64(), pa.float64(), True, True),
        (pa.float32(), pa.float64(), True, True),
        (pa.int64(), pa.int32(), False, False),
        (pa.float64(), pa.float32(), False, False),
        (pa.float64(), pa.int64(), False, False),
        (S, pa.binary(), True, True),
        (pa.binary(), S, True, True),
        (DEC(5, 2), DEC(10, 2), True, True),
        (DEC(5, 1), DEC(10, 3), True, True),
        (DEC(5, 2), DEC(5, 3), False, False),
        (DEC(5, 2), DEC(5, 1), False, False),
        (pa.int64(), S, True, False),  # read side only
        (pa.float64(), S, True, False),
        (DEC(5, 2), S, True, False),
        (pa.date32(), S, True, False),
        (S, pa.int64(), False, False),
        (pa.timestamp("ms", tz="UTC"), pa.timestamp("us", tz="UTC"), True, False),
        (pa.timestamp("us"), pa.timestamp("ms"), False, False),
        (pa.timestamp("us"), pa.timestamp("us", tz="UTC"), False, False),
        (pa.date32(), pa.timestamp("us"), True, False),
        (pa.int64(), pa.timestamp("us"), True, False),  # Hudi 0.x local-timestamp-micros
        (pa.int64(), pa.timestamp("ms", tz="UTC"), False, False),
        (pa.int32(), pa.timestamp("ms"), False, False),
        (pa.bool_(), pa.int32(), False, False),
        (
            pa.struct([("x", pa.int32())]),
            pa.struct([("x", pa.int64()), ("y", S)]),
            True,
            True,
        ),
        (pa.list_(pa.int64()), pa.list_(pa.float32()), True, True),
        (pa.map_(S, pa.int32()), pa.map_(S, S), True, False),
    ],
)
def test_can_promote(src: pa.DataType, dst: pa.DataType, read: bool, write: bool) -> None:
    assert can_promote(src, dst) is read
    assert can_promote(src, dst, on_write=True) is write


def test_missing_subfields() -> None:
    table = pa.struct([("a", pa.int32()), ("s", pa.struct([("x", S), ("y", S)]))])
    incoming = pa.struct([("a", pa.int32()), ("s", pa.struct([("x", S)]))])
    assert missing_subfields(table, incoming, "c") == ["c.s.y"]
    assert missing_subfields(pa.list_(table), pa.list_(incoming), "l") == ["l[].s.y"]
    assert missing_subfields(pa.map_(S, table), pa.map_(S, incoming), "m") == ["m{}.s.y"]
    assert missing_subfields(pa.int32(), pa.int64(), "c") == []


def test_avro_record_name() -> None:
    assert avro_record_name("my-table.v2") == "my_table_v2"
    assert avro_record_name("t_1") == "t_1"


def ws(incoming: pa.Schema, table: pa.Schema | None, **facts: Any) -> WriteSchema:
    """write_schema of a table keyed by ``id`` and partitioned by ``p``."""
    return write_schema(
        incoming, table, table_name="t", record_key_fields=["id"], partition_fields=["p"], **facts
    )


def _schema(**cols: pa.DataType) -> pa.Schema:
    return pa.schema(list(cols.items()))


def test_write_schema_new_table() -> None:
    incoming = _schema(id=S, p=S, ts=pa.int64(), v=pa.int16(), _hoodie_commit_time=S)
    got = ws(incoming, None, ordering_field="ts")
    assert got.partial_columns is None
    assert got.schema.names == [*META_FIELDS, "id", "p", "ts", "v"]
    assert got.schema.field("v").type == pa.int32()  # canonical Avro "int"
    assert ws(incoming, pa.schema([])).schema == got.schema


def test_write_schema_evolves_and_is_pure() -> None:
    table = with_meta_fields(_schema(id=S, p=S, q=pa.int32(), f=pa.float64()))
    incoming = _schema(id=S, p=S, q=pa.int64(), f=pa.float32(), new=pa.bool_())
    got = ws(incoming, table)
    data = got.schema.remove(0).remove(0).remove(0).remove(0).remove(0)
    assert data == _schema(id=S, p=S, q=pa.int64(), f=pa.float64(), new=pa.bool_())
    assert table == with_meta_fields(_schema(id=S, p=S, q=pa.int32(), f=pa.float64()))
    with pytest.raises(SchemaError, match="'q'.*neither promotes"):
        ws(_schema(id=S, p=S, q=S, f=pa.float64()), table)


def test_write_schema_partial_and_missing_columns() -> None:
    table = with_meta_fields(_schema(id=S, p=S, a=S, b=S))
    incoming = _schema(id=S, p=S, a=S)
    with pytest.raises(SchemaError, match=r"lacks table column\(s\) \['b'\]"):
        ws(incoming, table)
    partial = ws(incoming, table, partial_updates=True)
    assert partial.partial_columns == ("id", "p", "a")
    assert partial.schema == table
    for flags in ({"set_null_for_missing": True}, {"nulls_mean_unchanged": True}):
        got = ws(incoming, table, **flags)
        assert got.partial_columns is None and got.schema == table


def test_write_schema_deletes_keep_the_table_schema() -> None:
    table = with_meta_fields(_schema(id=S, p=S, a=S))
    assert (
        ws(_schema(id=S, p=S), table, operation="delete", required_columns=("id", "p")).schema
        == table
    )
    got = ws(_schema(p=S), table, operation="delete_partition", required_columns=("p",))
    assert got.schema == table and got.partial_columns is None
    with pytest.raises(SchemaError, match="delete: input lacks column 'id'"):
        ws(_schema(p=S), table, operation="delete", required_columns=("id", "p"))


def test_write_schema_refusals() -> None:
    ok = _schema(id=S, p=S, ts=pa.int64())
    with pytest.raises(ConfigError, match="recordkey"):
        write_schema(ok, None, table_name="t", record_key_fields=[])
    with pytest.raises(SchemaError) as e:
        ws(_schema(id=S), None)
    assert str(e.value) == (
        "partition path field 'p' (hoodie.datasource.write.partitionpath.field) is missing "
        "from the input ['id']"
    )
    with pytest.raises(SchemaError, match=r"record key field 'id' \(hoodie.datasource.write"):
        ws(_schema(id=pa.binary(), p=S), None)
    with pytest.raises(SchemaError, match="partition path field 'p' .* has type binary"):
        ws(_schema(id=S, p=pa.binary()), None)
    with pytest.raises(SchemaError, match="ordering column 'ts' has type binary"):
        ws(_schema(id=S, p=S, ts=pa.binary()), None, ordering_field="ts")
    with pytest.raises(SchemaError, match="ordering column 'zz'"):
        ws(ok, None, ordering_field="zz")
    with pytest.raises(SchemaError, match="duplicate|twice|unique"):
        ws(pa.schema([("id", S), ("id", S), ("p", S)]), None)


def test_evolve_schema_nested() -> None:
    table = _schema(s=pa.struct([("x", S), ("y", S)]))
    incoming = _schema(s=pa.struct([("x", S)]))
    with pytest.raises(SchemaError, match=r"nested table field\(s\) \['s.y'\]"):
        evolve_schema(table, incoming)
    merged, partial = evolve_schema(table, incoming, set_null_for_missing=True)
    assert merged == table and partial is None
    assert evolve_schema(pa.schema([]), incoming) == (incoming, None)


def test_conform_partial() -> None:
    schema = _schema(id=S, a=pa.int64(), b=S)
    rows = pa.table({"a": pa.array([1], pa.int32()), "id": ["k"], "zz": [0]})
    got = conform_partial(rows.drop_columns(["zz"]), schema)
    assert got.schema == schema and got.to_pylist() == [{"id": "k", "a": 1, "b": None}]
    # carried columns named: others dropped; narrowing casts only when asked (a writer's input)
    wide = pa.table({"id": ["k"], "a": pa.array([5], pa.int64()), "b": ["x"]})
    narrow = _schema(id=S, a=pa.int32(), b=S)
    got = conform_partial(wide, narrow, ["id", "a"], narrowing=True)
    assert got.to_pylist() == [{"id": "k", "a": 5, "b": None}]
    with pytest.raises(SchemaError, match="'a'"):
        conform_partial(wide, narrow, ["id", "a"])


# ------------------------------------------------------------------ naive timestamps on write
def test_check_naive_timestamps_paths() -> None:
    """Every naive timestamp leaf is named by its path; the ones the table declares naive are
    kept (Apache Hudi's TimestampNTZType columns), all others refused."""
    naive, utc = pa.timestamp("us"), pa.timestamp("us", tz="UTC")
    incoming = pa.schema(
        [
            ("id", pa.string()),
            ("aware", utc),
            ("kept", pa.timestamp("ms")),
            ("was_aware", naive),
            ("new", naive),
            ("s", pa.struct([("kept", naive), ("new", naive), ("n", pa.int64())])),
            ("l", pa.list_(pa.struct([("t", naive)]))),
            ("ll", pa.large_list(naive)),
            ("m", pa.map_(naive, pa.list_(naive))),
            ("d", pa.dictionary(pa.int32(), naive)),
        ]
    )
    existing = pa.schema(
        [
            ("id", pa.string()),
            ("aware", utc),
            ("kept", naive),  # another unit: the input is cast to the table's
            ("was_aware", utc),
            ("s", pa.struct([("kept", naive)])),
            ("ll", pa.large_list(naive)),
        ]
    )
    with pytest.raises(SchemaError) as info:
        check_naive_timestamps(incoming, existing)
    refused = ["was_aware", "new", "s.new", "l[].t", "m{key}", "m{}[]", "d"]
    assert f"without a time zone {refused}" in str(info.value)
    assert "pa.timestamp('us', tz='UTC')" in str(info.value)
    kept_only = pa.schema([incoming.field(n) for n in ("id", "aware", "kept", "ll")])
    kept_only = kept_only.append(pa.field("s", pa.struct([("kept", naive)])))
    assert check_naive_timestamps(kept_only, existing) == ["kept", "ll[]", "s.kept"]
    assert check_naive_timestamps(pa.schema([("aware", utc)]), pa.schema([])) == []


def test_write_schema_refuses_naive_timestamps() -> None:
    incoming = pa.schema([("id", pa.string()), ("at", pa.timestamp("ns"))])
    with pytest.raises(SchemaError, match=r"without a time zone \['at'\]"):
        write_schema(incoming, None, table_name="t", record_key_fields=["id"])
    table = with_meta_fields(pa.schema([("id", pa.string()), ("at", pa.timestamp("us"))]))
    decided = write_schema(incoming, table, table_name="t", record_key_fields=["id"])
    assert decided.schema.field("at").type == pa.timestamp("us")  # Apache Hudi's NTZ column


def test_promote_unannotated_local_timestamps() -> None:
    """Hudi 0.x writes Avro local-timestamp-micros columns as parquet INT64 without a
    timestamp annotation (apache/incubator-xtable#672): read under the table schema, the
    raw values are the naive timestamps."""
    schema = avro_to_arrow_schema(
        {
            "type": "record",
            "name": "r",
            "fields": [
                {
                    "name": "at",
                    "type": ["null", {"type": "long", "logicalType": "local-timestamp-micros"}],
                },
                {
                    "name": "ms",
                    "type": ["null", {"type": "long", "logicalType": "local-timestamp-millis"}],
                },
            ],
        }
    )
    at = dt.datetime(1969, 12, 31, 23, 59, 59, 999999)
    micros = (at - dt.datetime(1970, 1, 1)) // dt.timedelta(microseconds=1)
    raw = pa.table(
        {"at": pa.array([micros, None], pa.int64()), "ms": pa.array([1_000, 2], pa.int64())}
    )
    got = promote_table(raw, schema)
    assert got.schema == schema
    assert got.to_pylist() == [
        {"at": at, "ms": dt.datetime(1970, 1, 1, 0, 0, 1)},
        {"at": None, "ms": dt.datetime(1970, 1, 1, 0, 0, 0, 2000)},
    ]
