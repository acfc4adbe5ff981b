"""The cells of many HFile data blocks (:mod:`hudi_ds.layout.hfile`) decoded at once with numpy:
row keys as a NUL-padded bytes array with their lengths, values as codes into their distinct
values -- what the record-level index's lookups search (:mod:`hudi_ds.metadata.record_index_cache`).

A data block is a run of cells ``keyLength:int32 valueLength:int32 rowLength:int16 row ...
value memstoreTS?``; where a cell starts is known only once the cell before it is read, so a
block cannot be cut into cells by one vector operation. Blocks are independent though: each
starts with a cell (HBase ``HFileReaderImpl`` seeks to a block and reads from its start). The
cells of all blocks are walked together, one cell of every block per step (a few numpy calls
on an array of one position per block), so a file of a thousand 64 KiB blocks costs as many
steps as a block has cells, not one Python step per cell. With few blocks a plain loop that
reads the two lengths of each cell is faster and is used instead. Rows are then cut out eight
bytes at a time, and values -- the record index's are one of a few locations -- are told apart
by Arrow's hash kernel over views of the block bytes (no copy of each value).

Only the cells Hudi and HBase write are read here: a memstore timestamp of one byte (Hudi
writes 0). Anything else -- a longer timestamp, lengths that do not fit the block -- makes
:func:`decode_cells` return None and the caller reads cell by cell, which names the damage.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["DecodedCells", "decode_cells"]

#: below this many blocks a Python loop over each block's cells beats the lock-step walk
_LOCKSTEP_BLOCKS = 24
#: zero bytes after the joined blocks: the 8-byte reads near the end stay inside the buffer
_PAD = 16
_LENGTHS = struct.Struct(">ii")
_VIEW = np.dtype([("len", "<i4"), ("prefix", "V4"), ("buf", "<i4"), ("off", "<i4")])


@dataclass(frozen=True)
class DecodedCells:
    """The cells of some data blocks, in block order.

    Attributes:
        rows: the row keys, NUL-padded (numpy ``S<w>``).
        lengths: each row's length in bytes (int32).
        codes: each cell's value as an index into ``values`` (int32).
        values: the distinct values.
        block_starts: the index of each block's first cell, then the number of cells.
        nul_ended: some row ends in a NUL byte (a padded array cannot tell it apart).
    """

    rows: np.ndarray
    lengths: np.ndarray
    codes: np.ndarray
    values: list[bytes]
    block_starts: np.ndarray
    nul_ended: bool


def _strided(buf: np.ndarray, dtype: str) -> np.ndarray:
    """Every ``dtype`` value starting at each byte of ``buf`` (an unaligned view, no copy)."""
    width = np.dtype(dtype).itemsize
    return np.ndarray(shape=(len(buf) - width + 1,), dtype=dtype, buffer=buf, strides=(1,))


def _walk_each(raws: Sequence[bytes], bases: np.ndarray, extra: int) -> np.ndarray | None:
    """Cell starts (offsets into the joined blocks), block by block in Python."""
    unpack = _LENGTHS.unpack_from
    out: list[int] = []
    cell = out.append
    for raw, base in zip(raws, bases.tolist(), strict=True):
        pos, end = 0, len(raw)
        while pos < end:
            if pos + 10 > end:
                return None
            klen, vlen = unpack(raw, pos)
            if klen < 2 or vlen < 0:
                return None
            cell(base + pos)
            pos += extra + klen + vlen
        if pos != end:
            return None
    return np.array(out, np.int64)


def _walk_together(
    v32: np.ndarray, starts: np.ndarray, ends: np.ndarray, extra: int
) -> np.ndarray | None:
    """Cell starts of every block, one cell of each block per step (the module docstring)."""
    live = starts < ends
    pos, block, end = starts[live], np.flatnonzero(live), ends[live]
    found: list[np.ndarray] = []
    blocks: list[np.ndarray] = []
    while len(pos):
        found.append(pos)
        blocks.append(block)
        klen = v32[pos].astype(np.int64)
        vlen = v32[pos + 4].astype(np.int64)
        nxt = pos + extra + klen + vlen
        if ((klen < 2) | (vlen < 0) | (nxt > end) | (pos + 10 > end)).any():
            return None
        more = nxt < end
        if more.all():
            pos = nxt
        else:
            pos, block, end = nxt[more], block[more], end[more]
    if not found:
        return np.zeros(0, np.int64)
    # step s of block j is cell s of that block: its place is block j's first cell plus s
    at = np.concatenate(found)
    of = np.concatenate(blocks)
    step = np.repeat(np.arange(len(found)), [len(f) for f in found])
    counts = np.bincount(of, minlength=len(starts))
    first = np.concatenate([[0], np.cumsum(counts)[:-1]])
    out = np.empty(len(at), np.int64)
    out[first[of] + step] = at
    return out


def _padded(buf: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """The byte runs ``buf[starts[i]:starts[i] + lengths[i]]`` as a NUL-padded bytes array,
    copied eight bytes at a time (``buf`` has :data:`_PAD` spare bytes at its end)."""
    w = max(1, int(lengths.max(initial=0)))
    words = (w + 7) // 8
    v64 = _strided(buf, "<u8")
    out = np.zeros((len(starts), words), "<u8")
    ones = np.uint64(0xFFFFFFFFFFFFFFFF)
    for c in range(words):
        left = np.clip(lengths - 8 * c, 0, 8).astype(np.uint64)
        mask = np.where(left >= 8, ones, (np.uint64(1) << (left * np.uint64(8))) - np.uint64(1))
        out[:, c] = v64[np.minimum(starts + 8 * c, len(v64) - 1)] & mask
    flat = out.view(np.uint8).reshape(len(starts), 8 * words)[:, :w]
    return np.ascontiguousarray(flat).view(f"S{w}").ravel()


def _value_codes(
    data: bytes, v4: np.ndarray, starts: np.ndarray, lengths: np.ndarray
) -> tuple[np.ndarray, list[bytes]]:
    """Each value's index into the distinct values: an Arrow ``binary_view`` array over the
    joined blocks (a view per value, the bytes not copied) hash-encoded by Arrow."""
    n = len(starts)
    views = np.zeros(n, _VIEW)
    views["len"] = lengths
    short = lengths <= 12
    if short.any():
        # values of at most 12 bytes are held inside their view
        inline = views.view(np.uint8).reshape(n, 16)
        rows = _padded(np.frombuffer(data, np.uint8), starts[short], lengths[short])
        width = rows.dtype.itemsize
        inline[short, 4 : 4 + width] = rows.view(np.uint8).reshape(-1, width)
    long = ~short
    views["prefix"][long] = v4[starts[long]]
    views["off"][long] = starts[long]
    arr = pa.Array.from_buffers(
        pa.binary_view(), n, [None, pa.py_buffer(views), pa.py_buffer(data)]
    )
    encoded = pc.dictionary_encode(arr)
    codes = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int32)
    return codes, [bytes(v) for v in encoded.dictionary.to_pylist()]


def decode_cells(raws: Sequence[bytes], mvcc: bool) -> DecodedCells | None:
    """The cells of the data blocks ``raws`` (uncompressed payloads, in file order); None when
    a block holds cells not of the shape read here (the module docstring).

    Args:
        raws: the blocks.
        mvcc: cells end in a memstore timestamp (the file info says so).
    """
    sizes = np.fromiter(map(len, raws), np.int64, len(raws))
    ends = np.cumsum(sizes)
    starts = ends - sizes
    data = b"".join([*raws, bytes(_PAD)])
    if len(data) >= 1 << 31:
        return None  # views address their bytes by int32 offsets
    buf = np.frombuffer(data, np.uint8)
    extra = 9 if mvcc else 8
    if len(raws) < _LOCKSTEP_BLOCKS:
        at = _walk_each(raws, starts, extra)
    else:
        at = _walk_together(_strided(buf, ">i4"), starts, ends, extra)
    if at is None:
        return None
    # the lengths as a copy of each cell's first 8 bytes (one gather, not two)
    heads = _strided(buf, "V8")[at].view(">i4").reshape(-1, 2).astype(np.int64)
    klen, vlen = heads[:, 0], heads[:, 1]
    rlen = _strided(buf, ">i2")[at + 8].astype(np.int64)
    if ((rlen < 0) | (klen < rlen + 2)).any():
        return None
    if mvcc and (buf[at + 8 + klen + vlen] >= 0x80).any():
        return None  # a memstore timestamp longer than one byte
    rows_at = at + 10
    nul_ended = bool(((rlen > 0) & (buf[np.maximum(rows_at + rlen - 1, 0)] == 0)).any())
    codes, values = _value_codes(data, _strided(buf, "V4"), at + 8 + klen, vlen)
    first = np.searchsorted(at, starts)
    return DecodedCells(
        _padded(buf, rows_at, rlen),
        rlen.astype(np.int32),
        codes,
        values,
        np.append(first, len(at)),
        nul_ended,
    )
