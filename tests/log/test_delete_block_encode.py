"""Delete blocks: the vectorised Avro encoding of the delete records equals fastavro's bytes."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from hudi_ds.log.block import BlockType, parse_block
from hudi_ds.log.reader import decode_delete_block
from hudi_ds.log.writer import (
    _delete_records_fastavro,
    _delete_records_vectorised,
    encode_delete_block,
)

SCHEMA = '{"type":"record","name":"r","fields":[{"name":"id","type":"string"}]}'


def _keys(n: int, rng: np.random.Generator) -> pa.Array:
    # lengths around the one-byte varint limit (63 bytes), multi-byte UTF-8, an empty key
    lens = rng.integers(0, 140, n)
    return pa.array(["é" * (k // 3) + "k" * (k - k // 3) + str(i) for i, k in enumerate(lens)])


ORDERINGS = [
    None,
    pa.nulls(0, pa.int64()),  # sized below
    pa.array([0], pa.int64()),
    pa.array([0], pa.int32()),
    pa.array([0], pa.int8()),
    pa.array([0], pa.uint32()),
    pa.array([0], pa.uint64()),
]


@pytest.mark.parametrize("n", [32, 77, 1000])
@pytest.mark.parametrize("which", range(len(ORDERINGS)))
def test_vectorised_delete_records_equal_fastavro(n: int, which: int) -> None:
    rng = np.random.default_rng(n * 31 + which)
    keys = _keys(n + 5, rng).slice(3, n)  # a sliced array: offsets not at 0
    parts = pa.array(rng.choice(["", "2024/01/01", "dt=ü", "p" * 70], n)).dictionary_encode()
    proto = ORDERINGS[which]
    ordering: pa.Array | None
    if proto is None:
        ordering = None
    elif which == 1:
        ordering = pa.nulls(n, pa.int64())
    else:
        t = proto.type
        lo, hi = (0, 2**31) if pa.types.is_unsigned_integer(t) else (-(2**31), 2**31)
        if t.bit_width == 8:
            lo, hi = -128, 128
        elif t.bit_width == 64 and not pa.types.is_unsigned_integer(t):
            lo, hi = -(2**62), 2**62
        vals = rng.integers(lo, hi, n)
        vals[0] = hi - 1
        ordering = pa.array(vals).cast(t)
    got = _delete_records_vectorised(keys, parts, ordering)
    assert got is not None
    assert got == _delete_records_fastavro(keys, parts, ordering, n)
    block = encode_delete_block(keys, parts, ordering, "20240101000000000", SCHEMA)
    back = decode_delete_block(parse_block(memoryview(block), 0, ""))
    assert parse_block(memoryview(block), 0, "").block_type == BlockType.DELETE
    assert back.column(0).to_pylist() == keys.to_pylist()
    assert back.column(1).to_pylist() == parts.dictionary_decode().to_pylist()


@pytest.mark.parametrize(
    "parts, ordering",
    [
        (pa.array(["a", None]), None),  # a null partition path
        (pa.array(["a", "b"]), pa.array([1.5, 2.0])),  # DoubleWrapper
        (pa.array(["a", "b"]), pa.array([1, None], pa.int64())),  # a null among values
        (pa.array(["a", "b"]), pa.array(["x", "y"])),  # StringWrapper
    ],
)
def test_other_delete_records_go_through_fastavro(parts: pa.Array, ordering: pa.Array) -> None:
    n = 40  # enough records for the vectorised encoding, were the shape one it takes
    keys = pa.array([f"k{i}" for i in range(n)])
    parts = pa.concat_arrays([parts] * (n // 2))
    ordering = pa.concat_arrays([ordering] * (n // 2)) if ordering is not None else None
    assert _delete_records_vectorised(keys, parts, ordering) is None
    block = encode_delete_block(keys, parts, ordering, "20240101000000000", SCHEMA)
    back = decode_delete_block(parse_block(memoryview(block), 0, ""))
    assert back.column(0).to_pylist() == keys.to_pylist()


def test_few_delete_records_go_through_fastavro() -> None:
    keys, parts = pa.array(["k1", "k2"]), pa.array(["a", "b"])
    assert _delete_records_vectorised(keys, parts, None) is None
    back = decode_delete_block(
        parse_block(memoryview(encode_delete_block(keys, parts, None, "1", SCHEMA)), 0, "")
    )
    assert back.column(0).to_pylist() == ["k1", "k2"]
