"""Reading parts of an HFile (:mod:`hudi_ds.layout.hfile`) without reading all of it: keys
looked up inflate only the data blocks they fall in, and each is searched for its rows rather
than walked cell by cell -- the record-level index's lookups (Java ``HFileReaderImpl.seekTo``
over the block index, then a seek inside the block); key prefixes decode only the blocks
their rows can be in (the column stats of the queried columns).
"""

from __future__ import annotations

import bisect
import struct
from collections.abc import Sequence

from hudi_ds.errors import CorruptFileError, UnsupportedError
from hudi_ds.layout.hfile import (
    _CELL_EXTRA,
    _DATA,
    HFile,
    _cells,
    _Damaged,
    _open,
    _read_hadoop_vlong,
    _row_of_index_key,
)

__all__ = ["lookup_hfile", "scan_hfile_prefixes"]


def _cell_at(raw: bytes, cell: int, rlen: int, mvcc: bool) -> tuple[int, int] | None:
    """``(value start, cell end)`` when a cell of a ``rlen``-byte row can start at ``cell``: its
    key length is the row's plus the 2-byte row length (Hudi 1.1) or plus the full HBase key
    suffix (12), its value and memstore timestamp end inside the block, and the block either
    ends there or goes on with a cell header of sane lengths. None otherwise."""
    end = len(raw)
    if cell < 0 or cell + 10 > end:
        return None
    klen, vlen = struct.unpack_from(">ii", raw, cell)
    if klen not in (rlen + 2, rlen + _CELL_EXTRA) or vlen < 0:
        return None
    vstart = cell + 8 + klen
    pos = vstart + vlen
    if pos > end:
        return None
    if mvcc:
        if pos >= end:
            return None
        if raw[pos] < 0x80:  # a one-byte vlong (Hudi writes 0)
            pos += 1
        else:
            try:
                _ts, pos = _read_hadoop_vlong(raw, pos, end)
            except _Damaged:
                return None
    if pos == end:
        return vstart, pos
    if pos + 10 > end:
        return None
    nk, nv, nr = struct.unpack_from(">iih", raw, pos)
    if nr < 0 or nk < nr + 2 or nv < 0 or pos + 8 + nk + nv > end:
        return None
    return vstart, pos


def _walk_cells(
    raw: bytes, mvcc: bool, wanted: set[bytes], found: dict[bytes, bytes], offset: int
) -> None:
    """Put the cells of ``wanted`` rows of one data block into ``found``, walking every cell
    (the exact reading :func:`_find_cells` falls back to)."""
    pos, end = 0, len(raw)
    unpack = struct.unpack_from
    while pos < end:
        if pos + 10 > end:
            raise _Damaged(f"data block at {offset}: cell header runs past the block")
        klen, vlen, rlen = unpack(">iih", raw, pos)
        vstart = pos + 8 + klen
        if klen < rlen + 2 or rlen < 0 or vlen < 0 or vstart + vlen > end:
            raise _Damaged(f"data block at {offset}: cell at {pos} runs past the block")
        row = raw[pos + 10 : pos + 10 + rlen]
        if row in wanted:
            found[row] = raw[vstart : vstart + vlen]
        pos = vstart + vlen
        if mvcc:
            if pos < end and raw[pos] < 0x80:  # a one-byte vlong (Hudi writes 0)
                pos += 1
            else:
                _ts, pos = _read_hadoop_vlong(raw, pos, end)


#: How many times its size :func:`_find_cells` may search a block before walking its cells
#: instead: walking every cell costs about as much as four scans of the whole block.
_SEARCH_BUDGET = 4


def _search_cell(
    raw: bytes, row: bytes, start: int, stop: int, mvcc: bool
) -> tuple[int, int, int] | None:
    """``(cell start, value start, cell end)`` of the cell of ``row`` whose row lies in
    ``raw[start:stop]`` (:func:`_find_cells`), or None."""
    pattern = struct.pack(">h", len(row)) + row
    at = raw.find(pattern, start, stop)
    while at >= 0:
        cell = _cell_at(raw, at - 8, len(row), mvcc)
        if cell is not None:
            return at - 8, cell[0], cell[1]
        at = raw.find(pattern, at + 1, stop)
    return None


def _find_cells(
    raw: bytes, mvcc: bool, wanted: Sequence[bytes], found: dict[bytes, bytes], offset: int
) -> None:
    """Put the cells of the ``wanted`` rows (sorted, distinct) of one data block into
    ``found``, searching the block's bytes instead of walking its cells.

    A cell of row ``r`` holds ``rowLength:int16 r`` 8 bytes after its start, so a row is looked
    for with ``bytes.find`` (C speed: walking every cell in Python made a lookup cost as much
    as reading the whole index). Rows are sorted, as the cells are: a first pass looks for
    each row from the end of the last cell found, within a few times the block's mean gap
    between wanted rows (doubled after each miss); a row not met there is then looked for
    only between the cells of the nearest rows found below and above it -- where it must be
    if it is in the block at all -- so a row absent from the block costs a short scan, not
    the rest of the block.
    A match counts only where a whole cell fits around it (:func:`_cell_at`): a row's bytes
    met inside another cell are passed over unless they come with a complete, consistent cell
    header -- NUL bytes (the high bytes of the lengths) right before the row, which the
    metadata table's values (paths and ids besides numbers) do not hold. Once the searches
    have scanned ``_SEARCH_BUDGET`` times the block, the rows left are found by walking the
    cells (:func:`_walk_cells`)."""
    end = len(raw)
    n = len(wanted)
    budget = _SEARCH_BUDGET * end
    gap = 4 * end // max(1, n) + 256
    window = gap
    # (cell start, cell end) of each row found; None: not met in the first pass
    where: list[tuple[int, int] | None] = [None] * n
    pos = 0
    for i, row in enumerate(wanted):
        if budget < 0:
            break
        stop = min(end, pos + window)
        hit = _search_cell(raw, row, pos, stop, mvcc)
        if hit is None:
            budget -= stop - pos
            window *= 2  # the rows after a miss lie further on: a wider window
            continue
        budget -= hit[0] - pos
        where[i] = (hit[0], hit[2])
        found[row] = raw[hit[1] : hit[1] + _value_length(raw, hit[0])]
        pos = hit[2]
        window = gap
    # the start of the next cell found above each row
    above = [end] * n
    for i in range(n - 2, -1, -1):
        w = where[i + 1]
        above[i] = w[0] if w is not None else above[i + 1]
    below = 0
    for i, row in enumerate(wanted):
        got = where[i]
        if got is not None:
            below = got[1]
            continue
        if budget < 0:
            rest = {wanted[j] for j in range(i, n) if where[j] is None}
            _walk_cells(raw, mvcc, rest, found, offset)
            return
        hit = _search_cell(raw, row, below, above[i], mvcc)
        budget -= above[i] - below
        if hit is not None:
            found[row] = raw[hit[1] : hit[1] + _value_length(raw, hit[0])]
            below = hit[2]


def _value_length(raw: bytes, cell: int) -> int:
    return int(struct.unpack_from(">i", raw, cell + 4)[0])


def lookup_hfile(
    data: bytes | memoryview, keys: Sequence[bytes], path: str = ""
) -> tuple[dict[bytes, bytes], dict[str, bytes], int]:
    """The cells of ``keys`` in an HFile, decoding only the data blocks they fall in.

    The data index (root, and intermediate / leaf levels) gives each block's first row; a key
    can only be in the last block whose first row is at or below it (HBase
    ``HFileReaderImpl.seekTo``), so only those blocks are decompressed and parsed.

    Returns:
        ``(key -> value for the keys found, file info, data blocks decoded)``.

    Raises:
        CorruptFileError / UnsupportedError: as :func:`read_hfile`.
    """
    data = bytes(data)
    try:
        o = _open(data)
        firsts = [_row_of_index_key(key) for _o, _s, key in o.entries]
        wanted: dict[int, list[bytes]] = {}
        for k in sorted(set(keys)):
            i = bisect.bisect_right(firsts, k) - 1
            if i >= 0:
                wanted.setdefault(i, []).append(k)
        found: dict[bytes, bytes] = {}
        for i, ks in wanted.items():
            offset = o.entries[i][0]
            raw, _ = o.reader.block(offset, (_DATA,))
            _find_cells(raw, o.mvcc, ks, found, offset)
        return found, o.file_info, len(wanted)
    except UnsupportedError as e:
        raise UnsupportedError(f"HFile {path or '<hfile>'}: {e}") from e
    except (_Damaged, struct.error, ValueError, IndexError) as e:
        raise CorruptFileError(f"HFile {path or '<hfile>'} is damaged: {e}") from e


def _prefix_end(prefix: bytes) -> bytes | None:
    """The least row greater than every row starting with ``prefix`` (None: no such row, the
    prefix is all 0xff bytes)."""
    p = prefix.rstrip(b"\xff")
    return p[:-1] + bytes([p[-1] + 1]) if p else None


def scan_hfile_prefixes(
    data: bytes | memoryview, prefixes: Sequence[bytes], path: str = ""
) -> tuple[HFile, int]:
    """The cells whose rows start with one of ``prefixes``, decoding only the data blocks
    that can hold such rows.

    Block ``i`` holds the rows from its index key (its first row) up to the next block's first
    row, so it is decoded only when that span meets ``[prefix, prefix_end)`` for some prefix
    (HBase ``HFileScanner.seekTo`` then a scan while the prefix matches, as Hudi's
    ``HoodieAvroHFileReader.getRecordsByKeyPrefixIterator`` does for the column stats of
    the queried columns).

    Returns:
        ``(the HFile of those cells, in key order, with the file info and no meta blocks;
        data blocks decoded)``.

    Raises:
        CorruptFileError / UnsupportedError: as :func:`read_hfile`.
    """
    data = bytes(data)
    try:
        o = _open(data)
        firsts = [_row_of_index_key(key) for _o, _s, key in o.entries]
        chosen: set[int] = set()
        for p in set(prefixes):
            end = _prefix_end(p)
            # the block holding ``p`` (or the first one past it) up to the last one starting
            # before ``end``
            lo = max(0, bisect.bisect_right(firsts, p) - 1)
            hi = len(firsts) if end is None else bisect.bisect_left(firsts, end)
            chosen.update(range(lo, hi))
        keys: list[bytes] = []
        values: list[bytes] = []
        want = tuple(prefixes)
        for i in sorted(chosen):
            offset = o.entries[i][0]
            raw, _ = o.reader.block(offset, (_DATA,))
            ks: list[bytes] = []
            vs: list[bytes] = []
            first = _cells(raw, o.mvcc, ks, vs, offset)
            if first != firsts[i]:
                raise _Damaged(f"data block at {offset} does not start with its index key")
            for k, v in zip(ks, vs, strict=True):
                if k.startswith(want):
                    keys.append(k)
                    values.append(v)
        return HFile(keys, values, o.file_info, {}), len(chosen)
    except UnsupportedError as e:
        raise UnsupportedError(f"HFile {path or '<hfile>'}: {e}") from e
    except (_Damaged, struct.error, ValueError, IndexError) as e:
        raise CorruptFileError(f"HFile {path or '<hfile>'} is damaged: {e}") from e
