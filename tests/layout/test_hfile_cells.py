"""Decoding many HFile data blocks at once (hudi_ds.layout.hfile_cells) against the cell-by-cell
reader: both writer generations of the fixtures' metadata tables, both walks (few blocks, many
blocks), short and long values, and the cells it leaves to the exact reader."""

from __future__ import annotations

import random
import struct
from pathlib import Path

import pytest

from hudi_ds.layout.hfile import _DATA, _cells, _open, write_hfile
from hudi_ds.layout.hfile_cells import _LOCKSTEP_BLOCKS, DecodedCells, decode_cells
from tests.fixtures import fixture_table, require_fixtures
from tests.layout.test_hfile import _mdt_hfiles


def _blocks(data: bytes) -> tuple[list[bytes], bool]:
    o = _open(data)
    return [o.reader.block(off, (_DATA,))[0] for off, _s, _k in o.entries], o.mvcc


def _expected(raws: list[bytes], mvcc: bool) -> tuple[list[bytes], list[bytes], list[int]]:
    keys: list[bytes] = []
    values: list[bytes] = []
    firsts = []
    for raw in raws:
        firsts.append(len(keys))
        _cells(raw, mvcc, keys, values, 0)
    return keys, values, firsts


def _check(d: DecodedCells | None, raws: list[bytes], mvcc: bool) -> None:
    keys, values, firsts = _expected(raws, mvcc)
    assert d is not None
    assert [bytes(k) for k in d.rows.tolist()] == [k.rstrip(b"\x00") for k in keys]
    assert d.lengths.tolist() == [len(k) for k in keys]
    assert [d.values[c] for c in d.codes.tolist()] == values
    assert len(set(d.values)) == len(d.values)
    assert d.block_starts.tolist() == [*firsts, len(keys)]


def _cell(row: bytes, value: bytes, full_key: bool, mvcc: bool) -> bytes:
    key = struct.pack(">h", len(row)) + row
    if full_key:  # HBase's cell key: family length, timestamp, type after the row
        key += b"\x00" + struct.pack(">q", 2**63 - 1) + b"\x04"
    return struct.pack(">ii", len(key), len(value)) + key + value + (b"\x00" if mvcc else b"")


@pytest.mark.parametrize("blocks", [3, _LOCKSTEP_BLOCKS + 5])
@pytest.mark.parametrize(("full_key", "mvcc"), [(False, True), (True, True), (True, False)])
def test_decode_equals_cell_by_cell(blocks: int, full_key: bool, mvcc: bool) -> None:
    rnd = random.Random(blocks)
    rows = sorted({rnd.randbytes(rnd.randrange(1, 30)).replace(b"\x00", b"a") for _ in range(900)})
    # a few distinct values, short (held inside Arrow's views) and long, as the record index's
    distinct = [b"", b"\x00", b"abc", rnd.randbytes(12), rnd.randbytes(13), rnd.randbytes(90)]
    cells = [_cell(r, rnd.choice(distinct), full_key, mvcc) for r in rows]
    # blocks of unequal cell counts: the walk of the longer ones goes on alone
    cuts = sorted(rnd.sample(range(1, len(cells)), blocks - 1))
    raws = [b"".join(cells[a:b]) for a, b in zip([0, *cuts], [*cuts, len(cells)], strict=True)]
    d = decode_cells(raws, mvcc)
    _check(d, raws, mvcc)
    assert d is not None and not d.nul_ended


def test_written_file_of_many_blocks() -> None:
    rnd = random.Random(7)
    keys = sorted({f"{rnd.randrange(10**9):09d}".encode() for _ in range(5000)})
    values = [rnd.choice([b"loc-a" * 9, b"loc-b" * 9, b"x"]) for _ in keys]
    raws, mvcc = _blocks(write_hfile(keys, values, block_size=2048))
    assert len(raws) > _LOCKSTEP_BLOCKS
    _check(decode_cells(raws, mvcc), raws, mvcc)
    _check(decode_cells(raws[5:8], mvcc), raws[5:8], mvcc)


def test_row_ending_in_nul_is_flagged() -> None:
    raws = [_cell(b"a\x00", b"v", False, True) + _cell(b"b", b"v", False, True)]
    d = decode_cells(raws, True)
    assert d is not None and d.nul_ended


@pytest.mark.parametrize("blocks", [1, _LOCKSTEP_BLOCKS])
def test_cells_of_another_shape_are_left_to_the_exact_reader(blocks: int) -> None:
    good = _cell(b"row", b"value", False, True)
    cases = {
        "truncated": good[:-3],
        "value past the block": good[:4] + struct.pack(">i", 999) + good[8:],
        "key shorter than its row": struct.pack(">i", 1) + good[4:],
        "long memstore timestamp": good[:-1] + b"\x88" + b"\x00" * 8,
    }
    for why, bad in cases.items():
        raws = [good * 3] * (blocks - 1) + [good + bad]
        assert decode_cells(raws, True) is None, why


def test_empty() -> None:
    d = decode_cells([], True)
    assert d is not None and len(d.rows) == 0 and d.block_starts.tolist() == [0]


def test_fixture_mdt_hfiles(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Every HFile of Hudi 1.x and HBase-generation metadata tables (every partition, the
    record index's among them) decodes as the cell-by-cell reader reads it."""
    require_fixtures()
    seen = 0
    for name in ("cow_0x_partitioned", "cow_v9_txns_simple_meta", "mor_avro_v9_txns_simple_meta"):
        root: Path = fixture_table(name, tmp_path_factory)
        for _where, data, _schema in _mdt_hfiles(root):
            raws, mvcc = _blocks(data)
            _check(decode_cells(raws, mvcc), raws, mvcc)
            seen += 1
    assert seen >= 4
