"""The vectorised Avro record decoder (hudi_ds.log.avro_decode) against fastavro, record by record.

Every Avro data block of every fixture table, hypothesis-generated records over every type the
decoder vectorises, and damaged blocks (which must raise, never decode to other rows).
"""

from __future__ import annotations

import io
import json
import math
import struct
from pathlib import Path
from typing import Any

import fastavro
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hudi_ds.errors import CorruptBlockError
from hudi_ds.log import (
    BlockType,
    HeaderKey,
    LogBlock,
    avro_decode,
    decode_data_block,
    decode_data_blocks,
    encode_block,
    parse_block,
    scan_log_bytes,
)
from hudi_ds.log.avro_decode import (
    decode_avro_records,
    decode_avro_runs,
    record_bounds,
    vectorisable,
)
from hudi_ds.schema.avro import (
    avro_to_arrow_schema,
    decimal_fixed_size,
    resolve_avro,
    strip_logical_types,
)
from hudi_ds.schema.records import raw_avro_records_to_arrow
from tests.fixtures import fixture_names, fixture_table, tables_with_logs

INSTANT = "20250101010101010"
PATH = "part/.f1_20250101010101010.log.1_0-1-1"


# --------------------------------------------------------------------------------------------
# Reference: fastavro, one record at a time
# --------------------------------------------------------------------------------------------


def _records(content: bytes) -> list[bytes]:
    """The datums of a version 3 Avro block content, split by their length prefixes."""
    version, count = struct.unpack_from(">ii", content, 0)
    assert version == 3
    out, pos = [], 8
    for _ in range(count):
        (n,) = struct.unpack_from(">i", content, pos)
        out.append(content[pos + 4 : pos + 4 + n])
        pos += 4 + n
    assert pos == len(content)
    return out


def _reference(block: LogBlock) -> pa.Table:
    schema_json = block.schema or ""
    parsed = fastavro.parse_schema(strip_logical_types(json.loads(schema_json)))
    rows = [
        fastavro.schemaless_reader(io.BytesIO(d), parsed, None) for d in _records(block.content)
    ]
    return raw_avro_records_to_arrow(rows, avro_to_arrow_schema(schema_json))


def _norm(v: Any) -> Any:
    """Python value with NaN made comparable (NaN != NaN)."""
    if isinstance(v, float) and math.isnan(v):
        return "NaN"
    if isinstance(v, dict):
        return {k: _norm(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_norm(x) for x in v]
    return v


def _assert_same(got: pa.Table, want: pa.Table) -> None:
    assert got.schema == want.schema
    assert got.num_rows == want.num_rows
    assert _norm(got.to_pylist()) == _norm(want.to_pylist())
    for g, w in zip(got.columns, want.columns, strict=True):
        assert g.null_count == w.null_count


def _vectorised(block: LogBlock) -> pa.Table | None:
    node = resolve_avro(block.schema or "")
    assert vectorisable(node)
    count = struct.unpack_from(">i", block.content, 4)[0]
    return decode_avro_records(
        block.content, 8, count, node, avro_to_arrow_schema(block.schema or "")
    )


def _block(schema: dict[str, Any], datums: list[bytes]) -> LogBlock:
    content = struct.pack(">ii", 3, len(datums)) + b"".join(
        struct.pack(">i", len(d)) + d for d in datums
    )
    header = {HeaderKey.INSTANT_TIME: INSTANT, HeaderKey.SCHEMA: json.dumps(schema)}
    return parse_block(encode_block(BlockType.AVRO_DATA, header, content), 0, PATH)


def _datums(schema: dict[str, Any], rows: list[dict[str, Any]]) -> list[bytes]:
    parsed = fastavro.parse_schema(strip_logical_types(schema))
    out = []
    for r in rows:
        buf = io.BytesIO()
        fastavro.schemaless_writer(buf, parsed, r)
        out.append(buf.getvalue())
    return out


# --------------------------------------------------------------------------------------------
# Every Avro data block of the fixture tables
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", tables_with_logs())
def test_fixture_avro_blocks_decode_as_fastavro(
    name: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    root = fixture_table(name, tmp_path_factory)
    logs = sorted(p for p in root.rglob("*") if p.is_file() and ".log." in p.name)
    for path in logs:
        if "metadata" in path.relative_to(root).parts:
            continue
        for block in scan_log_bytes(path.read_bytes(), str(path)).blocks:
            if block.block_type != BlockType.AVRO_DATA:
                continue
            want = _reference(block)
            vectorised = _vectorised(block)
            assert vectorised is not None, path  # no fallback for Hudi's own blocks
            _assert_same(vectorised, want)
            _assert_same(decode_data_block(block), want)


def test_fixtures_hold_avro_blocks(tmp_path_factory: pytest.TempPathFactory) -> None:
    """The fixture test above is not vacuous: the v8 trips table has Avro blocks with rows."""
    if "mor_avro_v8_trips_8i3u1d" not in fixture_names():
        pytest.skip("fixture tables absent")
    root = fixture_table("mor_avro_v8_trips_8i3u1d", tmp_path_factory)
    rows = 0
    for path in root.rglob("*.log.*"):
        if "metadata" in path.relative_to(root).parts or not path.is_file():
            continue
        for block in scan_log_bytes(Path(path).read_bytes(), str(path)).blocks:
            if block.block_type == BlockType.AVRO_DATA:
                rows += decode_data_block(block).num_rows
    assert rows > 0


# --------------------------------------------------------------------------------------------
# Hypothesis: every vectorised type, nullable both ways, nested
# --------------------------------------------------------------------------------------------

_NS = "hoodie.t"


def _nullable(t: Any, null_first: bool = True) -> list[Any]:
    return ["null", t] if null_first else [t, "null"]


_INNER = {
    "type": "record",
    "name": "inner",
    "namespace": f"{_NS}.t_record",
    "fields": [
        {"name": "a", "type": _nullable("long")},
        {"name": "b", "type": "string"},
        {"name": "c", "type": _nullable("double", False)},
    ],
}

SCHEMA: dict[str, Any] = {
    "type": "record",
    "name": "t_record",
    "namespace": _NS,
    "fields": [
        {"name": "_hoodie_commit_time", "type": _nullable("string")},
        {"name": "s", "type": _nullable("string")},
        {"name": "s_plain", "type": "string"},
        {"name": "s_last", "type": _nullable("string", False)},
        {"name": "i", "type": _nullable("int")},
        {"name": "i_plain", "type": "int"},
        {"name": "l", "type": _nullable("long")},
        {"name": "l_plain", "type": "long"},
        {"name": "f", "type": _nullable("float")},
        {"name": "d", "type": _nullable("double")},
        {"name": "d_plain", "type": "double"},
        {"name": "flag", "type": _nullable("boolean")},
        {"name": "raw", "type": _nullable("bytes")},
        {"name": "fx", "type": _nullable({"type": "fixed", "name": "fx3", "size": 3})},
        {
            "name": "color",
            "type": _nullable({"type": "enum", "name": "color", "symbols": ["RED", "GREEN", "B"]}),
        },
        {
            "name": "dec_fixed",
            "type": _nullable(
                {
                    "type": "fixed",
                    "name": "fixed",
                    "namespace": f"{_NS}.t_record.dec_fixed",
                    "size": decimal_fixed_size(10),
                    "logicalType": "decimal",
                    "precision": 10,
                    "scale": 2,
                }
            ),
        },
        {
            "name": "dec_bytes",
            "type": _nullable(
                {"type": "bytes", "logicalType": "decimal", "precision": 20, "scale": 4}
            ),
        },
        {"name": "ts_ms", "type": _nullable({"type": "long", "logicalType": "timestamp-millis"})},
        {"name": "ts_us", "type": _nullable({"type": "long", "logicalType": "timestamp-micros"})},
        {
            "name": "lts_us",
            "type": _nullable({"type": "long", "logicalType": "local-timestamp-micros"}),
        },
        {"name": "day", "type": _nullable({"type": "int", "logicalType": "date"})},
        {"name": "t_ms", "type": _nullable({"type": "int", "logicalType": "time-millis"})},
        {"name": "t_us", "type": _nullable({"type": "long", "logicalType": "time-micros"})},
        {"name": "id", "type": _nullable({"type": "string", "logicalType": "uuid"})},
        {"name": "nothing", "type": "null"},
        {"name": "inner", "type": _nullable(_INNER)},
        {"name": "inner_plain", "type": {**_INNER, "name": "inner2"}},
    ],
}

_I32 = st.integers(min_value=-(2**31), max_value=2**31 - 1)
_I64 = st.integers(min_value=-(2**63), max_value=2**63 - 1)
_TEXT = st.text(max_size=40)  # empty, unicode (astral planes too)
_DOUBLE = st.floats(allow_nan=True, allow_infinity=True)
_FLOAT = st.floats(width=32, allow_nan=True, allow_infinity=True)


# temporal values within Python's datetime range (the comparison goes through Python values);
# extreme longs are covered by the plain long columns
_SECONDS = st.integers(min_value=-62_135_596_800, max_value=253_402_300_799)
_MICROS = st.builds(lambda s, us: s * 1_000_000 + us, _SECONDS, st.integers(0, 999_999))
_MILLIS = st.builds(lambda s, ms: s * 1_000 + ms, _SECONDS, st.integers(0, 999))
_DAYS = st.integers(min_value=-719_162, max_value=2_932_896)


def _maybe(s: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(st.none(), s)


def _decimal_bytes(size: int) -> st.SearchStrategy[bytes]:
    return st.binary(min_size=size, max_size=size)


_INNER_ROW = st.fixed_dictionaries({"a": _maybe(_I64), "b": _TEXT, "c": _maybe(_DOUBLE)})

_ROW = st.fixed_dictionaries(
    {
        "_hoodie_commit_time": _maybe(st.just(INSTANT)),
        "s": _maybe(_TEXT),
        "s_plain": _TEXT,
        "s_last": _maybe(_TEXT),
        "i": _maybe(_I32),
        "i_plain": _I32,
        "l": _maybe(_I64),
        "l_plain": _I64,
        "f": _maybe(_FLOAT),
        "d": _maybe(_DOUBLE),
        "d_plain": _DOUBLE,
        "flag": _maybe(st.booleans()),
        "raw": _maybe(st.binary(max_size=30)),
        "fx": _maybe(st.binary(min_size=3, max_size=3)),
        "color": _maybe(st.sampled_from(["RED", "GREEN", "B"])),
        "dec_fixed": _maybe(_decimal_bytes(decimal_fixed_size(10))),
        "dec_bytes": _maybe(st.binary(min_size=0, max_size=16)),
        "ts_ms": _maybe(_MILLIS),
        "ts_us": _maybe(_MICROS),
        "lts_us": _maybe(_MICROS),
        "day": _maybe(_DAYS),
        "t_ms": _maybe(st.integers(min_value=0, max_value=86_399_999)),
        "t_us": _maybe(st.integers(min_value=0, max_value=86_399_999_999)),
        "id": _maybe(_TEXT),
        "nothing": st.none(),
        "inner": _maybe(_INNER_ROW),
        "inner_plain": _INNER_ROW,
    }
)


_ROW_KEYS = [f["name"] for f in SCHEMA["fields"]]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.lists(_ROW, min_size=1, max_size=40))
def test_generated_records_decode_as_fastavro(rows: list[dict[str, Any]]) -> None:
    block = _block(SCHEMA, _datums(SCHEMA, rows))
    want = _reference(block)
    got = _vectorised(block)
    assert got is not None
    _assert_same(got, want)
    _assert_same(decode_data_block(block), want)
    # a projection (as the table reader asks for) decodes only its columns, the same values
    sub = pa.schema([want.schema.field(c) for c in ("l", "s", "inner", "d", "dec_fixed")])
    _assert_same(decode_data_block(block, sub), want.select(sub.names))
    node, arrow = resolve_avro(SCHEMA), avro_to_arrow_schema(SCHEMA)
    projected = decode_avro_records(block.content, 8, len(rows), node, arrow, sub.names)
    assert projected is not None
    _assert_same(projected, want.select([c for c in want.column_names if c in sub.names]))


def test_large_block_decodes_vectorised_through_the_reader() -> None:
    """Blocks of 128 records and more take the vectorised path in decode_data_block."""
    rows = [
        {**{k: None for k in _ROW_KEYS}, "s_plain": f"k{i}", "i_plain": i, "l_plain": -i}
        | {"d_plain": i / 3, "inner_plain": {"a": i, "b": "x" * (i % 70), "c": None}}
        | {"s": "é" * (i % 5) if i % 3 else None, "l": i * 2**40 if i % 2 else None}
        for i in range(3000)
    ]
    block = _block(SCHEMA, _datums(SCHEMA, rows))
    want = _reference(block)
    assert _vectorised(block) is not None
    _assert_same(decode_data_block(block), want)
    sub = pa.schema([want.schema.field(c) for c in ("l", "s_plain", "inner_plain")])
    _assert_same(decode_data_block(block, sub), want.select(sub.names))


_LONG_ONLY = {
    "type": "record",
    "name": "r",
    "fields": [{"name": "v", "type": "long"}, {"name": "w", "type": _nullable("long", False)}],
}


@pytest.mark.parametrize(
    "value", [0, 1, -1, 63, -64, 64, 2**31, -(2**31) - 1, 2**62, 2**63 - 1, -(2**63)]
)
def test_extreme_longs(value: int) -> None:
    rows = [{"v": value, "w": value}, {"v": -value if value != -(2**63) else 0, "w": None}]
    block = _block(_LONG_ONLY, _datums(_LONG_ONLY, rows))
    got = _vectorised(block)
    assert got is not None
    assert got.to_pylist() == _reference(block).to_pylist()
    assert got.column("v")[0].as_py() == value


def test_record_bounds() -> None:
    content = struct.pack(">ii", 3, 3) + b"".join(
        struct.pack(">i", n) + b"x" * n for n in (2, 0, 5)
    )
    bounds = record_bounds(content, 8, 3)
    assert bounds is not None
    assert bounds[0].tolist() == [12, 18, 22] and bounds[1].tolist() == [14, 18, 27]
    assert record_bounds(content + b"\x00", 8, 3) is None  # does not end at the content's end
    assert record_bounds(content[:-1], 8, 3) is None  # the last record overruns
    assert record_bounds(content, 8, 4) is None  # a fourth length is missing


def _bounds_one_by_one(
    content: bytes, start: int, count: int
) -> tuple[list[int], list[int]] | None:
    starts, ends, pos = [], [], start
    for _ in range(count):
        if pos + 4 > len(content):
            return None
        (n,) = struct.unpack_from(">i", content, pos)
        if n < 0 or pos + 4 + n > len(content):
            return None
        starts.append(pos + 4)
        ends.append(pos + 4 + n)
        pos += 4 + n
    return (starts, ends) if pos == len(content) else None


# record bytes full of zeros and small values: many plausible lengths inside the records
_PAYLOAD = st.binary(max_size=300) | st.lists(
    st.sampled_from([0, 1, 2, 4, 8, 0x7F, 0x80]), max_size=300
).map(bytes)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    payloads=st.lists(_PAYLOAD, min_size=1, max_size=400),
    cut=st.integers(min_value=-3, max_value=3),
    extra=st.integers(min_value=-2, max_value=2),
    every=st.sampled_from([1, 2, 3, 7, 48]),
    piece=st.sampled_from([1, 7, 1 << 18]),
)
def test_record_bounds_follow_the_length_chain(
    payloads: list[bytes], cut: int, extra: int, every: int, piece: int
) -> None:
    """The guessed prefixes and the lockstep walkers both find exactly the sequential chain,
    or refuse when it breaks."""
    saved = avro_decode._SEED_EVERY, avro_decode._GUESS_PIECE
    avro_decode._SEED_EVERY = every  # seeds as dense as every record: many walkers meet
    avro_decode._GUESS_PIECE = piece  # guesses found a few bytes at a time
    try:
        _check_bounds(payloads, cut, extra)
    finally:
        avro_decode._SEED_EVERY, avro_decode._GUESS_PIECE = saved


def _check_bounds(payloads: list[bytes], cut: int, extra: int) -> None:
    content = _framed_raw(payloads)
    if cut > 0:
        content = content[:-cut]  # the last record overruns
    elif cut < 0:
        content = content + b"\x00" * -cut  # bytes after the last record
    count = len(payloads) + extra
    want = _bounds_one_by_one(content, 8, count)
    got = record_bounds(content, 8, count)
    walked = None
    if count > 0 and len(content) >= 12:  # record_bounds' own checks
        seeds = avro_decode._window_seeds(content, 8, count)
        walked = avro_decode._walk_chain(content, 8, count, seeds)
    guessed = avro_decode._prefix_candidates(content, 8, count, None) if count > 0 else None
    chained = None
    if guessed is not None:
        chained = avro_decode._chain_of_candidates(*guessed, 8, count, len(content))
    if want is None:
        assert got is None and walked is None and chained is None
        return
    assert got is not None and walked is not None
    assert got[0].tolist() == want[0] and got[1].tolist() == want[1]
    assert walked[0].tolist() == want[0] and walked[1].tolist() == want[1]
    if chained is not None:  # else a length of 2**16 or more: walked
        assert chained[0].tolist() == want[0] and chained[1].tolist() == want[1]


def test_record_bounds_of_a_schema_past_fake_and_long_records() -> None:
    """Through the schema's guesses (records start with a union branch byte): bytes values
    holding what reads as a record's length and start, and a record of over 2**16 bytes (no
    guess: the chain is walked), give the sequential chain."""
    schema = {
        "type": "record",
        "name": "r",
        "fields": [
            {"name": "k", "type": ["null", "string"]},
            {"name": "b", "type": ["null", "bytes"]},
        ],
    }
    fake = b"\x00\x00\x00\x10\x02"  # a length of 16, then the value branch of k
    rows = [{"k": f"k{i}", "b": fake[: i % 6] + b"\x00" * (i % 3)} for i in range(300)]
    node = resolve_avro(schema)
    for long in (False, True):
        if long:
            rows[150] = {"k": "long", "b": fake + b"x" * 70_000}
        content = _framed_raw(_datums(schema, rows))
        want = _bounds_one_by_one(content, 8, len(rows))
        assert want is not None
        guessed = avro_decode._prefix_candidates(content, 8, len(rows), node)
        assert guessed is not None and len(guessed[0]) > len(rows)  # fake prefixes among them
        chained = avro_decode._chain_of_candidates(*guessed, 8, len(rows), len(content))
        assert (chained is None) == long
        got = record_bounds(content, 8, len(rows), node)
        assert got is not None
        assert got[0].tolist() == want[0] and got[1].tolist() == want[1]


def _framed_raw(payloads: list[bytes]) -> bytes:
    head = struct.pack(">ii", 3, len(payloads))
    return head + b"".join(struct.pack(">i", len(d)) + d for d in payloads)


def test_arrays_and_maps_fall_back_to_fastavro() -> None:
    schema = {
        "type": "record",
        "name": "r",
        "fields": [
            {"name": "k", "type": _nullable("string")},
            {"name": "xs", "type": _nullable({"type": "array", "items": _nullable("long")})},
            {"name": "m", "type": _nullable({"type": "map", "values": "double"})},
        ],
    }
    rows = [
        {"k": "a", "xs": [1, None, 3], "m": {"x": 1.5}},
        {"k": None, "xs": None, "m": None},
        {"k": "", "xs": [], "m": {}},
    ]
    assert not vectorisable(resolve_avro(schema))
    block = _block(schema, _datums(schema, rows))
    _assert_same(decode_data_block(block), _reference(block))


# --------------------------------------------------------------------------------------------
# Damaged blocks raise (naming the file), never decode to other rows
# --------------------------------------------------------------------------------------------

_SMALL = {
    "type": "record",
    "name": "r",
    "fields": [
        {"name": "k", "type": _nullable("string")},
        {"name": "n", "type": _nullable("long")},
        {"name": "d", "type": "double"},
    ],
}
_GOOD = _datums(_SMALL, [{"k": "key-1", "n": 5, "d": 1.0}, {"k": "héllo", "n": None, "d": 2.5}])


def _raw_block(schema: dict[str, Any], content: bytes) -> LogBlock:
    header = {HeaderKey.INSTANT_TIME: INSTANT, HeaderKey.SCHEMA: json.dumps(schema)}
    return parse_block(encode_block(BlockType.AVRO_DATA, header, content), 0, PATH)


def _framed(
    datums: list[bytes], lengths: list[int] | None = None, count: int | None = None
) -> bytes:
    lengths = [len(d) for d in datums] if lengths is None else lengths
    head = struct.pack(">ii", 3, len(datums) if count is None else count)
    return head + b"".join(struct.pack(">i", n) + d for n, d in zip(lengths, datums, strict=True))


_INT = {"type": "record", "name": "r", "fields": [{"name": "i", "type": "int"}]}


def test_int_out_of_range_raises() -> None:
    datum = b"\x80\x80\x80\x80\x80\x40"  # zig-zag varint of 2**40: no Avro int
    block = _raw_block(_INT, _framed([datum]))
    node = resolve_avro(_INT)
    assert decode_avro_records(block.content, 8, 1, node, avro_to_arrow_schema(_INT)) is None
    with pytest.raises(CorruptBlockError, match=PATH.replace(".", r"\.")):
        decode_data_block(block)


_KEYED_INT = {
    "type": "record",
    "name": "r",
    "fields": [{"name": "k", "type": "string"}, {"name": "i", "type": "int"}],
}


def test_int_not_asked_for_is_still_checked_to_fit() -> None:
    """An int column left out of the columns asked for is walked over by its varint sizes,
    yet an int of 5 varint bytes is still checked to fit (and a longer one refused)."""
    node, arrow = resolve_avro(_KEYED_INT), avro_to_arrow_schema(_KEYED_INT)
    rows = [{"k": f"k{i}", "i": [-(2**31), 2**31 - 1, 7, -300][i % 4]} for i in range(200)]
    datums = _datums(_KEYED_INT, rows)
    got = decode_avro_records(_framed(datums), 8, len(rows), node, arrow, ["k"])
    assert got is not None and got.column("k").to_pylist() == [r["k"] for r in rows]
    for varint in (b"\x80\x80\x80\x80\x10", b"\x80\x80\x80\x80\x80\x40"):  # 2**31, 2**39
        bad = [*datums[:150], b"\x04k0" + varint, *datums[151:]]
        for columns in (["k"], None):
            assert decode_avro_records(_framed(bad), 8, len(bad), node, arrow, columns) is None


#: good records after the damaged ones: blocks of 128 records and more take the vectorised
#: path in decode_data_block, smaller ones one fastavro call
_PAD = _datums(_SMALL, [{"k": f"pad-{i}", "n": i, "d": 0.5} for i in range(200)])


def _damaged(pad: list[bytes]) -> dict[str, bytes]:
    first, second = _GOOD
    # the string length varint of record 0 has its continuation bit set up to the record's end
    truncated = b"\x02" + b"\xff" * 3
    bad_utf8 = b"\x02\x04\xed\xa0" + first[len(b"\x02\x0akey-1") :]
    good = [len(d) for d in pad]
    cases = {
        "length overruns the content": _framed(
            [*pad, *_GOOD], [*good, len(first), len(second) + 9]
        ),
        "negative length": _framed([*_GOOD, *pad], [-1, len(second), *good]),
        "count larger than the records": _framed([*_GOOD, *pad], count=len(pad) + 3),
        "truncated varint": _framed([truncated, second, *pad]),
        "record shorter than its fields": _framed([first[:-3], second, *pad]),
        "union branch out of range": _framed([b"\x04" + first[1:], second, *pad]),
        "invalid utf-8": _framed([bad_utf8, second, *pad]),
        "varint longer than 10 bytes": _framed(
            [b"\x02\x02k\x02" + b"\xff" * 11 + b"\x01", second, *pad]
        ),
    }
    if pad:
        # lengths that do not match the records, though they add up (the one fastavro call
        # for small blocks reads records by the schema and does not see it)
        cases["length past the next record"] = _framed(
            [*_GOOD, *pad], [len(first) + 3, len(second) - 3, *good]
        )
    return cases


@pytest.mark.parametrize(
    ("case", "pad"), [(c, pad) for pad in (0, len(_PAD)) for c in sorted(_damaged(_PAD[:pad]))]
)
def test_damaged_block_raises_naming_the_file(case: str, pad: int) -> None:
    block = _raw_block(_SMALL, _damaged(_PAD[:pad])[case])
    count = struct.unpack_from(">i", block.content, 4)[0]
    node = resolve_avro(_SMALL)
    assert decode_avro_records(block.content, 8, count, node, avro_to_arrow_schema(_SMALL)) is None
    with pytest.raises(CorruptBlockError, match=PATH.replace(".", r"\.")):
        decode_data_block(block)


def test_good_block_of_the_damage_cases_decodes() -> None:
    """The damaged blocks above differ from this one only in the damage."""
    block = _raw_block(_SMALL, _framed(_GOOD))
    assert decode_data_block(block).to_pylist() == [
        {"k": "key-1", "n": 5, "d": 1.0},
        {"k": "héllo", "n": None, "d": 2.5},
    ]


# --------------------------------------------------------------------------------------------
# Blocks of one schema decoded together (decode_data_blocks / decode_avro_runs)
# --------------------------------------------------------------------------------------------


def _pad_rows(lo: int, hi: int) -> list[bytes]:
    return _datums(
        _SMALL, [{"k": f"k-{i}", "n": i if i % 3 else None, "d": i / 7} for i in range(lo, hi)]
    )


def _wide_rows(n: int) -> list[dict[str, Any]]:
    return [
        {**{k: None for k in _ROW_KEYS}, "s_plain": f"k{i}", "i_plain": i, "l_plain": -i}
        | {"d_plain": i / 3, "inner_plain": {"a": i, "b": "x" * (i % 70), "c": None}}
        for i in range(n)
    ]


def test_blocks_of_one_schema_decode_together_as_one_by_one() -> None:
    """Several blocks (small and large, of two schemas, a Parquet-free mix) decode jointly to
    exactly the tables each block decodes to alone, projected or not."""
    blocks = [
        _raw_block(_SMALL, _framed(_pad_rows(0, 300))),
        _raw_block(_SMALL, _framed(_pad_rows(300, 305))),  # small: fastavro when alone
        _block(SCHEMA, _datums(SCHEMA, _wide_rows(3))),
        _raw_block(_SMALL, _framed(_pad_rows(305, 700))),
        _raw_block(_SMALL, _framed([])),  # no records
    ]
    got = decode_data_blocks(blocks)
    assert len(got) == len(blocks)
    for g, b in zip(got, blocks, strict=True):
        _assert_same(g, decode_data_block(b))
    sub = pa.schema([pa.field("d", pa.float64()), pa.field("k", pa.string())])
    small = [b for b in blocks if b.schema == json.dumps(_SMALL)]
    for g, b in zip(decode_data_blocks(small, sub), small, strict=True):
        _assert_same(g, decode_data_block(b, sub))
    node, arrow = resolve_avro(_SMALL), avro_to_arrow_schema(_SMALL)
    runs = decode_avro_runs(
        [memoryview(b.content)[8:] for b in small[:3]], [300, 5, 395], node, arrow
    )
    assert runs is not None and [t.num_rows for t in runs] == [300, 5, 395]


def test_joint_decode_keeps_each_blocks_own_chain() -> None:
    """Counts shifted between two blocks (the joined chain still adds up): the joint decode
    refuses, and every block reads as it does alone; a damaged block in a run raises as it
    does alone."""
    a, b = _pad_rows(0, 200), _pad_rows(200, 400)
    shifted = [
        _raw_block(_SMALL, _framed(a, count=len(a) + 1)),
        _raw_block(_SMALL, _framed(b, count=len(b) - 1)),
    ]
    node, arrow = resolve_avro(_SMALL), avro_to_arrow_schema(_SMALL)
    views = [memoryview(x.content)[8:] for x in shifted]
    assert decode_avro_runs(views, [len(a) + 1, len(b) - 1], node, arrow) is None
    for blk in shifted:
        try:
            alone = decode_data_block(blk)
        except CorruptBlockError:
            with pytest.raises(CorruptBlockError):
                decode_data_blocks(shifted)
            break
        else:
            got = decode_data_blocks([blk, _raw_block(_SMALL, _framed(a))])[0]
            _assert_same(got, alone)
    damaged = _raw_block(_SMALL, _damaged(_PAD)["length past the next record"])
    with pytest.raises(CorruptBlockError, match=PATH.replace(".", r"\.")):
        decode_data_blocks([_raw_block(_SMALL, _framed(a)), damaged])
