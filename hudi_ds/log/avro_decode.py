"""Vectorised decoding of Hudi's Avro data block records with numpy (no per-record Python).

An Avro data block holds ``count`` records, each an ``int32`` length then that many bytes of
one schemaless Avro binary datum (:func:`hudi_ds.log.reader.decode_data_block` has the grammar).
:func:`decode_avro_records` decodes them field by field across many records at once:

1. :func:`record_bounds` finds where every record starts and ends (the length chain: through
   the positions that look like a record's length prefix, found in one pass over the bytes,
   or followed by numpy lockstep walkers);
2. the records are taken in chunks of about :data:`CHUNK_BYTES` (so that the bytes the fields
   of a chunk read stay in the CPU cache from one field to the next); positions (an array, one
   entry per record, plus an offset common to all) walk the schema field by field: zig-zag
   varints (``int``, ``long``, enum indexes, string/bytes lengths) are decoded a byte column
   at a time, union branch indexes read as one byte (with a short string length: two byte
   reads), floats and doubles gathered from views of the block's bytes at every offset,
   booleans read as bytes, nested records walked with the same positions; nullable unions
   (``["null", T]`` or ``[T, "null"]``) decode ``T`` only for the rows whose branch is ``T``.
   A value of one size in every row only moves the common offset. Values of the fields asked
   for go to per-field sinks (numbers, or where each string/bytes/fixed value lies in the
   block); the other fields are walked over and checked, not stored;
3. string/bytes/fixed values are copied out chunk by chunk, by one Arrow ``take`` over offsets
   pointing into the block's own bytes (values of one length: one numpy gather), then joined;
   strings are UTF-8 checked by Arrow (as strict as fastavro's decoding);
4. the raw columns become the :func:`hudi_ds.schema.avro.avro_to_arrow_schema` types with
   :func:`hudi_ds.schema.records.from_physical` -- the conversion the fastavro path applies, so both
   give the same table.

Arrays and maps are not vectorised: a schema holding one anywhere is decoded with fastavro
(:func:`vectorisable` says which). The decoder never guesses: string/bytes lengths are checked
not to be negative, union branches and enum indexes to be valid, ``int`` values to fit, and
every record must end exactly where its length says (positions only grow, so a value read past
its record's end shows there).
When a check fails, :func:`decode_avro_records` returns ``None`` and the caller decodes the
block the exact (slow) way, which names the first bad record: a damaged block is raised, never
read as wrong rows. Non-canonical encodings a writer may produce but Java's and fastavro's
encoders never do (a branch index of several bytes) take that exact path too.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import cast

import numpy as np
import pyarrow as pa

from hudi_ds.schema.avro import AvroSlot, AvroType
from hudi_ds.schema.records import from_physical

_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1
_MAX_OFFSET = 2**31 - 1  # int32 offsets of the Arrow binary arrays built over the block


class _Bad(Exception):
    """The bytes do not decode vectorised: the caller falls back to the exact path."""


def vectorisable(node: AvroType) -> bool:
    """Whether :func:`decode_avro_records` decodes records of ``node`` (no array/map inside)."""
    if node.kind in ("array", "map"):
        return False
    return all(vectorisable(f.type) for f in node.fields)


#: Records between two walker seeds in :func:`record_bounds` (about the steps each walks), at
#: most: small blocks seed every ``count // 32`` records (at least 4). Each lockstep step costs
#: a dozen numpy calls whatever the number of walkers, and seeding is cheap (a window of about
#: one record per seed): 24 walks ~1.8x faster than 96 on blocks of 3k-30k records.
_SEED_EVERY = 24


def _lengths_view(content: bytes | memoryview) -> np.ndarray:
    """The big-endian ``int32`` starting at every byte offset of ``content`` (a view)."""
    count = max(len(content) - 3, 0)
    return np.ndarray((count,), dtype=">i4", buffer=content, strides=(1,))


def record_bounds(
    content: bytes | memoryview, start: int, count: int, node: AvroType | None = None
) -> tuple[np.ndarray, np.ndarray] | None:
    """Start and end offsets of the ``count`` length-prefixed records from ``start`` on.

    Record ``i`` is ``content[starts[i]:ends[i]]`` (its ``int32`` length prefix sits just before
    ``starts[i]``). Returns ``None`` unless the chain of lengths is intact, holds ``count``
    records and ends exactly at the end of ``content`` (the caller then decodes record by
    record, which names the bad one). ``node``: the records' schema, if known (it sharpens the
    guess below: the smallest size of a record, the bytes a record may start with).

    Where a record starts depends on every length before it. Record starts are guessed first
    (:func:`_prefix_candidates`: every position whose four bytes read as a length below
    ``2**16`` that fits, found in one pass over the content), and the chain is followed
    through the guesses (:func:`_chain_of_candidates`). When a length leads to no guess (a
    record of ``2**16`` bytes or more, a damaged block) or there are too many guesses, the
    chain is walked (:func:`_walk_chain`) from plausible lengths in windows.
    """
    total = len(content)
    if count <= 0 or start + 4 > total:
        return None
    guessed = _prefix_candidates(content, start, count, node)
    if guessed is not None:
        chain = _chain_of_candidates(guessed[0], guessed[1], start, count, total)
        if chain is not None:
            return chain
    return _walk_chain(content, start, count, _window_seeds(content, start, count))


#: At most this many guessed record starts per record (:func:`_prefix_candidates`); content
#: with more (long runs of zero bytes) is seeded by windows instead.
_MAX_GUESSES_PER_RECORD = 8
#: Bytes of content :func:`_prefix_candidates` looks at a time.
_GUESS_PIECE = 1 << 18


def _record_shape(node: AvroType | None) -> tuple[int, tuple[int, ...] | None]:
    """The smallest encoded size of a record of ``node`` and the bytes it may start with
    (``None``: any). A union's branch index is one byte (zig-zag ``2 * index``) in every
    encoder; a longer (non-canonical) one is still found, by the walk."""
    if node is None:
        return 0, None

    def size(s: AvroSlot) -> int:
        t = s.type
        inner = {"null": 0, "float": 4, "double": 8}.get(t.kind, 1)
        if t.kind == "fixed":
            inner = int(t.size or 0)
        elif t.kind == "record":
            inner = sum(size(f) for f in t.fields)
        if not s.union:
            return inner
        return 1 + (0 if s.null_index is not None else inner)

    smallest = sum(size(f) for f in node.fields)
    first = node.fields[0] if node.fields else None
    if smallest == 0 or first is None or not first.union:
        return smallest, None
    branches = {i for i in (first.null_index, first.value_index) if i is not None}
    return smallest, tuple(sorted(2 * i for i in branches))


def _prefix_candidates(
    content: bytes | memoryview, start: int, count: int, node: AvroType | None
) -> tuple[np.ndarray, np.ndarray] | None:
    """Every position from ``start`` on that may hold a record's length prefix, with the
    position its length leads to: the length is below ``2**16`` (its first two bytes are zero),
    at least the smallest record of ``node``, fits in the content and leads to the end of the
    content or to another such length; the record starts with a byte ``node``'s records may
    start with. ``None``: too many such positions (over :data:`_MAX_GUESSES_PER_RECORD` a
    record: long runs of zero bytes)."""
    total = len(content)
    smallest, first_bytes = _record_shape(node)
    last = total - 4 - smallest  # the last position a record's prefix may be at
    if last < start or total > _MAX_OFFSET:
        return None
    data = np.frombuffer(content, dtype=np.uint8)
    pieces, found = [], 0
    # a piece of the content at a time: small temporaries stay in the CPU cache (whole-content
    # ones cost page faults on every call, several times the work itself)
    for lo in range(start, last + 1, _GUESS_PIECE):
        hi = min(lo + _GUESS_PIECE, last + 1)
        zero = data[lo : hi + 1] == 0  # a length below 2**16: its bytes p and p + 1 are zero
        at = np.flatnonzero(zero[:-1] & zero[1:])
        at += lo
        found += len(at)
        if found > _MAX_GUESSES_PER_RECORD * count + 64:
            return None
        if first_bytes is not None:  # smallest > 0: a record's first byte lies in the content
            first = data[at + 4]
            allowed = first == first_bytes[0]
            for b in first_bytes[1:]:
                allowed |= first == b
            at = at[allowed]
        pieces.append(at)
    prefixes = np.concatenate(pieces) if pieces else np.zeros(0, dtype=np.int64)
    lengths = _lengths_view(content)[prefixes]  # the first two bytes are zero: 0 .. 2**16 - 1
    nxt = prefixes + 4 + lengths
    # the record fits, and the next record's length (if any) is below 2**16 too
    after = np.minimum(nxt, total - 2)
    fits = (lengths >= smallest) & (nxt <= total)
    fits &= (nxt == total) | ((data[after] == 0) & (data[after + 1] == 0))
    if not fits.all():
        prefixes, nxt = prefixes[fits], nxt[fits]
    if len(prefixes) == 0:
        return None
    return prefixes, nxt


def _reachable_from_first(succ: np.ndarray) -> np.ndarray:
    """Which nodes of the successor graph ``succ`` (node -> next node) node 0 reaches, by
    pointer doubling: log2(n) vectorised steps instead of walking the chain."""
    reach = np.zeros(len(succ), dtype=np.bool_)
    reach[0] = True
    jump = succ
    for _ in range(len(succ).bit_length()):
        reach[jump[reach]] = True
        jump = jump[jump]
    return reach


def _chain_of_candidates(
    prefixes: np.ndarray, nxt: np.ndarray, start: int, count: int, total: int
) -> tuple[np.ndarray, np.ndarray] | None:
    """The chain of lengths from ``start`` through the guessed prefixes (sorted, every
    record's among them), as :func:`record_bounds` returns it; ``None`` when it is not there.

    ``nxt[i]`` is where the length at ``prefixes[i]`` leads. The guesses split into runs of
    consecutive links (each guess's length leads to the next guess): a guess inside a record
    (rare once :func:`_prefix_candidates` has filtered) ends a run. The chain starts at
    ``start``, follows its run to the run's end and jumps to where that length leads: into
    another run, which it follows to its end again. The runs it passes through are found with
    pointer doubling over the runs (usually a handful: one when every guess is a record's),
    with where it enters each. Every position on the chain is reached through the length
    read at the one before, so it is exactly the sequential chain; ``None`` when a length
    leads to no guess (not the end of the content) or the chain does not hold ``count``
    records.
    """
    m = len(prefixes)
    if m == 0 or prefixes[0] != start:
        return None
    run_end = np.flatnonzero(nxt[:-1] != prefixes[1:])
    if run_end.size == 0:  # one run: the guesses are the chain
        if m != count or nxt[-1] != total:
            return None
        return prefixes + 4, nxt
    run_end = np.append(run_end, m - 1)
    runs = len(run_end)
    target = nxt[run_end]  # where each run's last length leads
    entry = np.searchsorted(prefixes, target)
    found = prefixes[np.minimum(entry, m - 1)] == target
    done, dead = runs, runs + 1
    succ = np.full(runs + 2, dead, dtype=np.int64)
    succ[done] = done
    succ[:runs][found] = np.searchsorted(run_end, entry[found])
    succ[:runs][target == total] = done
    reach = _reachable_from_first(succ)
    if reach[dead] or not reach[done]:
        return None
    on = np.flatnonzero(reach[:runs])  # the runs on the chain, in order
    first = np.empty(len(on), dtype=np.int64)
    first[0] = 0
    first[1:] = entry[on[:-1]]  # each entered where the run before it leads
    sizes = run_end[on] - first + 1
    if int(sizes.sum()) != count:
        return None
    index = np.repeat(first - (np.cumsum(sizes) - sizes), sizes) + np.arange(count)
    return prefixes[index] + 4, nxt[index]


def _window_seeds(content: bytes | memoryview, start: int, count: int) -> np.ndarray:
    """Walker seeds for :func:`_walk_chain`: ``start``, and the plausible lengths (one whose
    record and the next fit the content) in a window about one record long every few records
    (:data:`_SEED_EVERY`; fewer in small blocks), read as one strided view of the content."""
    total = len(content)
    lengths = _lengths_view(content)
    span = total - start
    # walkers seeded every `every` records walk about `every` steps: few for small blocks
    every = min(_SEED_EVERY, max(4, count // 32))
    seeds_wanted = count // every
    stride = span // max(seeds_wanted, 1)
    window = min(stride, span // count + 8)
    rows = min(seeds_wanted, max(0, (total - 4 - start - window) // stride + 1))
    first_bytes = np.ndarray(
        (rows, window), dtype=np.uint8, buffer=content, offset=start, strides=(stride, 1)
    )
    row, col = np.nonzero(first_bytes <= total >> 24)  # a length's first byte: content-sized
    grid = start + stride * row.astype(np.int64) + col
    nxt = grid + 4 + lengths[grid]
    fits = (nxt >= grid + 4) & (nxt <= total)
    grid, nxt = grid[fits], nxt[fits]
    inner = nxt <= total - 4
    then = nxt[inner] + 4 + lengths[nxt[inner]]
    fits = nxt == total
    fits[inner] = (then >= nxt[inner] + 4) & (then <= total)
    return np.unique(np.concatenate([np.array([start], dtype=np.int64), grid[fits]]))


def _walk_chain(
    content: bytes | memoryview, start: int, count: int, seeds: np.ndarray
) -> tuple[np.ndarray, np.ndarray] | None:
    """:func:`record_bounds` by walking the chain of lengths from ``seeds`` (sorted, unique,
    ``start`` among them) in numpy lockstep.

    Each step moves every walker to the end of its record; a walker stops where another has
    been (it has joined that walker's path), dies on an impossible length, or finishes at the
    end of the content. Walkers seeded inside a record either die or join the chain, so after
    about as many steps as there are records between two seeds every record of the chain has
    been visited, each by one walker; the chain is then the first walker's path, followed
    through the walkers it joined (found with pointer doubling). Every position on it was
    reached through the length read at the one before, so it is exactly the sequential chain.
    """
    total = len(content)
    terminal, all_pos, all_wid = _lockstep_walk(_lengths_view(content), total, seeds)
    prefixes = _chain_prefixes(terminal, all_pos, all_wid, total, count)
    if prefixes is None:
        return None
    starts = prefixes + 4
    ends = np.empty(count, dtype=np.int64)
    ends[:-1] = prefixes[1:]
    ends[-1] = total
    return starts, ends


def _lockstep_walk(
    lengths: np.ndarray, total: int, seeds: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Walk every seed's chain of lengths in numpy lockstep (:func:`_walk_chain`), one numpy
    step for all walkers at a time.

    Returns:
        Each walker's terminal (``total``: it finished at the end of the content, -1: it died,
        else the position where it joined another walker's path), and every position the
        walkers reached with the walker that reached it, walker by walker in step order.
    """
    walkers = len(seeds)
    done, dead = total, -1
    terminal = np.full(walkers, dead, dtype=np.int64)
    # where walkers have been: one byte per 4 bytes of content, holding which of the 4 (a
    # second position in the same 4 bytes overwrites the first, which is then walked again:
    # more work, the same chain)
    visited = np.zeros(total // 4 + 1, dtype=np.uint8)
    visited[seeds >> 2] = (seeds & 3) + 1
    pos, wid = seeds, np.arange(walkers, dtype=np.int64)
    trail_pos, trail_wid = [pos], [wid]
    limit = total - 4
    while pos.size:
        if pos.max() > limit:  # no room for a length: dead
            keep = pos <= limit
            pos, wid = pos[keep], wid[keep]
        nxt = pos + 4 + lengths[pos]
        stop = (nxt < pos + 4) | (nxt >= total)
        if stop.any():  # an impossible length (dead), or the end of the content (done)
            terminal[wid[nxt == total]] = done
            pos, wid = nxt[~stop], wid[~stop]
        else:
            pos = nxt
        if pos.size > 1 and not (pos[1:] > pos[:-1]).all():
            # walkers meeting at one position: the first goes on
            order = np.argsort(pos, kind="stable")
            same = np.zeros(pos.size, dtype=np.bool_)
            same[order[1:]] = pos[order[1:]] == pos[order[:-1]]
            if same.any():
                terminal[wid[same]] = pos[same]
                pos, wid = pos[~same], wid[~same]
        seen = visited[pos >> 2] == (pos & 3) + 1
        if seen.any():
            terminal[wid[seen]] = pos[seen]
            pos, wid = pos[~seen], wid[~seen]
        visited[pos >> 2] = (pos & 3) + 1
        trail_pos.append(pos)
        trail_wid.append(wid)
    return terminal, np.concatenate(trail_pos), np.concatenate(trail_wid)


def _chain_prefixes(
    terminal: np.ndarray, all_pos: np.ndarray, all_wid: np.ndarray, total: int, count: int
) -> np.ndarray | None:
    """The positions of the ``count`` length prefixes of the chain from the first walker, out
    of a :func:`_lockstep_walk` (its ``terminal``, and the positions reached ``all_pos`` by
    walkers ``all_wid``); None when that chain does not end at the content's end (``total``)
    after exactly ``count`` records."""
    walkers = len(terminal)
    done, dead = total, -1
    # -- every walker's path, in order: walker by walker (steps are appended in order)
    order = np.argsort(all_wid, kind="stable")  # stable sorts are fast on sorted runs
    path, path_wid = all_pos[order], all_wid[order]
    path_end = np.searchsorted(path_wid, np.arange(walkers), side="right")
    by_pos = np.argsort(path, kind="stable")
    # where each walker's terminal lies on the paths (it stopped where another had been)
    joins = (terminal != done) & (terminal != dead)
    entry = np.full(walkers, -1, dtype=np.int64)
    at = np.searchsorted(path[by_pos], terminal[joins])
    found = by_pos[np.minimum(at, path.size - 1)]
    if not np.array_equal(path[found], terminal[joins]):
        return None
    succ = np.full(walkers + 2, walkers + 1, dtype=np.int64)  # walkers + 1: dead
    succ[walkers] = walkers  # walkers: done
    succ[:walkers][terminal == done] = walkers
    succ[:walkers][joins] = path_wid[found]
    entry_of_next = np.full(walkers, -1, dtype=np.int64)
    entry_of_next[joins] = found
    # -- the walkers on the chain: those reachable from walker 0 (pointer doubling)
    reach = _reachable_from_first(succ)
    if reach[walkers + 1] or not reach[walkers]:
        return None
    chain_walkers = np.flatnonzero(reach[:walkers])
    entry[0] = 0
    nexts = succ[chain_walkers]
    inner_links = nexts < walkers
    entry[nexts[inner_links]] = entry_of_next[chain_walkers[inner_links]]
    order = np.argsort(path[entry[chain_walkers]])
    chain_walkers = chain_walkers[order]
    first, last = entry[chain_walkers], path_end[chain_walkers]
    sizes = last - first
    if int(sizes.sum()) != count:
        return None
    shift = np.repeat(first - (np.cumsum(sizes) - sizes), sizes)
    return path[shift + np.arange(count, dtype=np.int64)]


class _Decoder:
    """Decodes Avro values at many positions of one byte buffer at once."""

    def __init__(self, content: bytes | memoryview, ends: np.ndarray) -> None:
        self.content = content
        self.ends = ends
        self.data = np.frombuffer(content, dtype=np.uint8)
        self.buffer = pa.py_buffer(content)
        self._views: dict[str, np.ndarray] = {}

    # -- primitives ---------------------------------------------------------------------------

    def at(self, off: int, dtype: str = "u1") -> np.ndarray:
        """The block's bytes as numbers of ``dtype`` starting at every byte offset, from byte
        ``off`` on (a view: ``at(off)[pos]`` reads at ``pos + off`` without adding them)."""
        view = self._views.get(dtype)
        if view is None:
            width = np.dtype(dtype).itemsize
            count = max(len(self.content) - width + 1, 0)
            view = np.ndarray((count,), dtype=dtype, buffer=self.content, strides=(1,))
            self._views[dtype] = view
        return view[off:] if off else view

    def varint(
        self, pos: np.ndarray, off: int, want: bool = True
    ) -> tuple[np.ndarray, np.ndarray, int]:
        """Zig-zag varints (Avro ``int``/``long``) at ``pos + off``: ``(values int64, next
        positions, their offset)`` (``want=False``: only the next positions; no values, an
        empty array).

        Decoded one byte column at a time: while every row's varint goes on (values of one
        size, the common case) the byte columns are read at a growing offset, with no
        positions to update; then over every row while most rows' varints go on (the rows
        whose varint has ended read a byte they ignore), then over the rows that go on.
        """
        n = len(pos)
        if n == 0:
            return np.zeros(0, np.int64), pos, off
        b = self.at(off)[pos]
        more = b >= 0x80
        if not more.any():  # one byte each
            if not want:
                return np.zeros(0, np.int64), pos, off + 1
            small = b.astype(np.int64)
            return (small >> 1) ^ -(small & 1), pos, off + 1
        z = (b & 0x7F).astype(np.uint64) if want else None
        k = 1
        while k < 10 and more.all():
            b = self.at(off + k)[pos]
            if z is not None:
                z |= (b & 0x7F).astype(np.uint64) << np.uint64(7 * k)
            more = b >= 0x80
            k += 1
        nxt, off = pos, off + k
        if more.any():  # varints of several sizes: positions of their own
            nxt = pos + off
            off = 0
            data = self.data
            last = len(data) - 1
            for byte in range(k, 10):
                live = np.count_nonzero(more)
                if live == 0:
                    break
                if 4 * live < n:  # few go on: those rows only
                    self._varint_rows(z, nxt, np.flatnonzero(more), byte)
                    break
                # positions grow with the rows: the last is the largest (a read past the
                # content only happens on a damaged block, which then takes the exact path)
                b = data[nxt if nxt[-1] <= last else np.minimum(nxt, last)]
                b *= more  # rows whose varint has ended: no byte
                if z is not None:
                    z |= (b & 0x7F).astype(np.uint64) << np.uint64(7 * byte)
                nxt += more
                more = b >= 0x80
            else:
                if more.any():
                    raise _Bad("a varint is longer than 10 bytes")
        if z is None:
            return np.zeros(0, np.int64), nxt, off
        values = (z >> np.uint64(1)).view(np.int64) ^ -(z & np.uint64(1)).view(np.int64)
        return values, nxt, off

    def _varint_rows(self, z: np.ndarray | None, nxt: np.ndarray, idx: np.ndarray, k: int) -> None:
        """Go on with the varints of rows ``idx`` from their byte ``k`` (at ``nxt[idx]``),
        updating their values ``z`` and next positions ``nxt`` in place."""
        at = nxt[idx]
        while idx.size:
            if k >= 10:
                raise _Bad("a varint is longer than 10 bytes")
            b = self.data[at]
            if z is not None:
                z[idx] |= (b & 0x7F).astype(np.uint64) << np.uint64(7 * k)
            at += 1
            nxt[idx] = at
            go = b >= 0x80
            idx, at = idx[go], at[go]
            k += 1

    def binary(self, sink: _Sink, rows: slice) -> pa.Array:
        """The ``binary`` array of a bytes-like sink for ``rows``: ``content[start:start +
        length]`` per row.

        The values and the gaps between them form one binary array over the block's own bytes
        (positions only grow from one record to the next); one Arrow ``take`` of its even
        entries copies the values out, null rows taking a null index.
        """
        starts = cast(np.ndarray, sink.starts)[rows]
        lengths = cast(np.ndarray, sink.lengths)[rows]
        stops = starts + lengths
        n = len(starts)
        if n == 0:
            return pa.array([], pa.binary())
        width = int(lengths[0])
        if 0 < width <= 1024 and (lengths == width).all():
            valid = None if sink.valid is None else sink.valid[rows]
            if valid is None or valid.all():
                # values of one length (meta columns, dates, fixed): a numpy gather of
                # `width`-byte items read at every byte offset of the block
                items = np.ndarray(
                    (len(self.content) - width + 1,),
                    dtype=np.dtype((np.void, width)),
                    buffer=self.content,
                    strides=(1,),
                )
                offsets = np.arange(0, (n + 1) * width, width, dtype=np.int64)
                if offsets[-1] <= _MAX_OFFSET:
                    data = pa.py_buffer(items[starts])
                    return pa.Array.from_buffers(
                        pa.binary(), n, [None, pa.py_buffer(offsets.astype(np.int32)), data]
                    )
        if int(stops[-1]) > _MAX_OFFSET:
            raise _Bad("block too large for int32 offsets")
        offsets = np.empty(2 * n + 1, dtype=np.int32)
        offsets[0 : 2 * n : 2] = starts
        offsets[1 : 2 * n : 2] = stops
        offsets[2 * n] = stops[-1]
        spread = pa.Array.from_buffers(
            pa.binary(), 2 * n, [None, pa.py_buffer(offsets), self.buffer]
        )
        even = np.arange(0, 2 * n, 2, dtype=np.int32)
        index = pa.array(even, mask=None if sink.valid is None else ~sink.valid[rows])
        return spread.take(index)

    def collect(self, sink: _Sink, s: AvroSlot, rows: slice) -> None:
        """Copy the string/bytes/fixed values of ``rows`` out of the block (right after their
        chunk is decoded, while its bytes are still in the CPU cache)."""
        kind = s.type.kind
        if kind in ("string", "bytes", "fixed"):
            sink.pieces.append(self.binary(sink, rows))
        elif kind == "record":
            for child, f in zip(sink.children, s.type.fields, strict=True):
                self.collect(child, f, rows)

    # -- schema walk, one chunk of records at a time -------------------------------------------
    #
    # Positions are carried as an array and an offset common to all rows: ``pos + off``. A value
    # of one size in every row (a double, a union's branch byte, a varint of one length) only
    # moves the offset, and reads go through :meth:`at` views shifted by it: no position array
    # is computed until a value's size differs between rows.

    def value(
        self, sink: _Sink, t: AvroType, pos: np.ndarray, off: int, rows: _Rows
    ) -> tuple[np.ndarray, int]:
        """Decode the values of type ``t`` at ``pos + off`` (records ``rows``) into ``sink``
        (only walked over and checked when the sink does not keep them); returns the
        positions after them (array and offset)."""
        kind, keep = t.kind, sink.keep
        if kind == "null":
            return pos, off
        if kind == "boolean":
            if keep:
                cast(np.ndarray, sink.values)[rows] = self.at(off)[pos]
            return pos, off + 1
        if kind in ("int", "long", "enum"):
            # int and enum values are checked; an int of up to 4 varint bytes always fits
            want = keep or kind == "enum"
            values, nxt, nxt_off = self.varint(pos, off, want)
            if kind == "int" and not want and len(pos):
                longest = nxt_off if nxt is pos else int((nxt - pos).max()) + nxt_off
                if longest - off > 4:
                    want = True
                    values, nxt, nxt_off = self.varint(pos, off)
            if want and len(values) and kind != "long":
                low, high = (_INT32_MIN, _INT32_MAX) if kind == "int" else (0, len(t.symbols) - 1)
                if values.min() < low or values.max() > high:
                    raise _Bad(f"an {kind} value is out of range")
            if keep:
                cast(np.ndarray, sink.values)[rows] = values
            return nxt, nxt_off
        if kind in ("float", "double"):
            if keep:
                dtype = "<f4" if kind == "float" else "<f8"
                cast(np.ndarray, sink.values)[rows] = self.at(off, dtype)[pos]
            return pos, off + (4 if kind == "float" else 8)
        if kind == "fixed":
            size = int(t.size or 0)
            if keep:
                cast(np.ndarray, sink.starts)[rows] = pos + off
                cast(np.ndarray, sink.lengths)[rows] = size
            return pos, off + size
        if kind in ("string", "bytes"):
            lengths, pos, off = self.varint(pos, off)
            if len(lengths) and lengths.min() < 0:
                raise _Bad("a string or bytes value has a negative length")
            return self.strings(sink, pos, off, lengths, rows)
        if kind == "record":
            for child, f in zip(sink.children, t.fields, strict=True):
                pos, off = self.slot(child, f, pos, off, rows)
            return pos, off
        raise _Bad(f"{kind} values are not decoded vectorised")

    def strings(
        self, sink: _Sink, pos: np.ndarray, off: int, lengths: np.ndarray, rows: _Rows
    ) -> tuple[np.ndarray, int]:
        """Note string/bytes values of ``lengths`` (not negative) bytes at ``pos + off``;
        returns the positions after them.

        A value running past its record is found by the end-of-record check of
        :func:`_decode_bounded`: positions only grow, so a record whose positions end where
        its length says holds every value read in it; values are only copied out after that
        check.
        """
        if sink.keep:
            cast(np.ndarray, sink.starts)[rows] = pos + off
            cast(np.ndarray, sink.lengths)[rows] = lengths
        return pos + lengths, off

    def slot(
        self, sink: _Sink, s: AvroSlot, pos: np.ndarray, off: int, rows: _Rows
    ) -> tuple[np.ndarray, int]:
        """Decode a field/element: its union branch index first when it is a union."""
        if not s.union:
            return self.value(sink, s.type, pos, off, rows)
        if (
            s.type.kind in ("string", "bytes")
            and s.value_index is not None
            and len(pos)
            and pos[-1] + off < len(self.content) - 1
        ):
            # the common case: the value's branch, then a length below 64 (one byte)
            branch = self.at(off)[pos]
            size = self.at(off + 1)[pos]
            if (branch == 2 * s.value_index).all() and not (size & 0x81).any():
                size >>= 1
                return self.strings(sink, pos, off + 2, size, rows)
        # a branch index below 64 is one byte: its zig-zag, 2 * index (what every writer
        # writes; anything else, if valid at all, is left to the exact path)
        branch = self.at(off)[pos]
        off += 1
        is_value = branch == (-1 if s.value_index is None else 2 * s.value_index)
        if s.value_index is not None and s.type.kind != "null" and is_value.all():
            return self.value(sink, s.type, pos, off, rows)
        is_null = branch == (-1 if s.null_index is None else 2 * s.null_index)
        if not (is_value | is_null).all():
            raise _Bad("a union branch index is not one of the union's")
        if sink.keep:
            cast(np.ndarray, sink.valid)[_subset(rows, ~is_value)] = False
        if s.value_index is None or s.type.kind == "null" or not is_value.any():
            return pos, off
        pos = pos + off  # the rows with a value move on from here on their own
        some = np.flatnonzero(is_value)
        moved, moved_off = self.value(sink, s.type, pos[some], 0, _subset(rows, some))
        pos[some] = moved + moved_off
        return pos, 0

    # -- Arrow arrays of the sinks ------------------------------------------------------------

    def array(self, sink: _Sink, s: AvroSlot, n: int) -> pa.Array:
        """The raw Avro values (what fastavro gives without logical types) of ``sink``."""
        t, kind = s.type, s.type.kind
        mask = None if sink.valid is None or sink.valid.all() else ~sink.valid
        if kind == "null":
            return pa.nulls(n)
        if kind in ("string", "bytes", "fixed"):
            raw = pa.concat_arrays(sink.pieces) if sink.pieces else pa.array([], pa.binary())
            if kind != "string":
                return raw
            try:
                return raw.cast(pa.string())
            except pa.ArrowInvalid as e:  # invalid UTF-8
                raise _Bad(str(e)) from e
        if kind == "enum":
            index = pa.array(cast(np.ndarray, sink.values), pa.int32(), mask=mask)
            return pa.array(t.symbols, pa.string()).take(index)
        if kind == "record":
            children = [self.array(c, f, n) for c, f in zip(sink.children, t.fields, strict=True)]
            fields = [
                pa.field(f.name, c.type, f.nullable)
                for f, c in zip(t.fields, children, strict=True)
            ]
            if not fields:
                validity = None if mask is None else pa.array(~mask).buffers()[1]
                return pa.Array.from_buffers(pa.struct([]), n, [validity], children=[])
            return pa.StructArray.from_arrays(
                children, fields=fields, mask=None if mask is None else pa.array(mask)
            )
        values = cast(np.ndarray, sink.values)
        return pa.array(values, _PHYSICAL[kind], mask=mask)


_PHYSICAL = {
    "boolean": pa.bool_(),
    "int": pa.int32(),
    "long": pa.int64(),
    "float": pa.float32(),
    "double": pa.float64(),
}
_DTYPES = {"boolean": np.bool_, "int": np.int32, "long": np.int64, "enum": np.int32}
_Rows = slice | np.ndarray


def _subset(rows: _Rows, which: np.ndarray) -> np.ndarray:
    """The record numbers of ``rows`` picked by ``which`` (a mask or positions into rows)."""
    if isinstance(rows, slice):
        picked = np.flatnonzero(which) if which.dtype == np.bool_ else which
        return cast(np.ndarray, picked + rows.start)
    return cast(np.ndarray, rows[which])


@dataclass
class _Sink:
    """Where the decoded values of one field/element go, for all records of the block.

    Attributes:
        keep: the values are kept (else only walked over and checked: no arrays below).
        valid: the union's non-null rows (``None``: not a union).
        values: numbers, booleans (as bytes), enum indexes.
        starts, lengths: where each string/bytes/fixed value sits in the block.
        children: a record's fields.
        pieces: the string/bytes/fixed values, chunk by chunk.
    """

    keep: bool = True
    valid: np.ndarray | None = None
    values: np.ndarray | None = None
    starts: np.ndarray | None = None
    lengths: np.ndarray | None = None
    children: list[_Sink] = field(default_factory=list)
    pieces: list[pa.Array] = field(default_factory=list)


_SKIP = _Sink(keep=False)


def _sink(s: AvroSlot, n: int, record_starts: np.ndarray, keep: bool = True) -> _Sink:
    kind = s.type.kind
    if not keep:  # nothing stored: one sink for all such fields (records: one per child)
        if kind != "record":
            return _SKIP
        return _Sink(
            keep=False, children=[_sink(f, n, record_starts, False) for f in s.type.fields]
        )
    sink = _Sink(valid=np.ones(n, dtype=np.bool_) if s.union else None)
    if kind in ("string", "bytes", "fixed"):
        # rows without a value (null, or under a null record) take an empty value at their
        # record's start, which keeps the value positions growing
        sink.starts = record_starts.copy()
        sink.lengths = np.zeros(n, dtype=np.int64)
    elif kind == "record":
        sink.children = [_sink(f, n, record_starts) for f in s.type.fields]
    elif kind in ("float", "double"):
        sink.values = np.zeros(n, dtype="<f4" if kind == "float" else "<f8")
    elif kind in _DTYPES:
        sink.values = np.zeros(n, dtype=_DTYPES[kind])
    return sink


#: Records are decoded in chunks of about this many bytes, so that the bytes every field of a
#: chunk reads stay in the CPU cache from one field to the next.
CHUNK_BYTES = 1 << 21


def decode_avro_records(
    content: bytes | memoryview,
    start: int,
    count: int,
    node: AvroType,
    schema: pa.Schema,
    columns: Collection[str] | None = None,
) -> pa.Table | None:
    """Decode the ``count`` length-prefixed Avro records of ``content`` from ``start`` on.

    Args:
        content: the block content.
        start: offset of the first record's length prefix.
        count: number of records.
        node: the records' resolved Avro schema (:func:`hudi_ds.schema.avro.resolve_avro`, a
            record that is :func:`vectorisable`).
        schema: its Arrow form (:func:`hudi_ds.schema.avro.avro_to_arrow_schema`).
        columns: if given, only these top-level fields are turned into columns (the others are
            still walked over and checked for structure, but their values are not copied out,
            nor their strings checked for UTF-8 -- as a Parquet block's unread columns).

    Returns:
        The records as a table of ``schema`` (its ``columns`` fields, in schema order), exactly
        what fastavro and :func:`hudi_ds.schema.records.raw_avro_records_to_arrow` give;
        ``None`` when the bytes do not decode cleanly (a length chain that does not add up, a
        value that runs past its record, a record that does not end where its length says, an
        invalid UTF-8 string or union branch, an ``int`` out of range): the caller then decodes
        the block record by record.
    """
    bounds = record_bounds(content, start, count, node)
    if bounds is None:
        return None
    return _decode_bounded(content, bounds[0], bounds[1], node, schema, columns)


def decode_avro_runs(
    contents: Sequence[bytes | memoryview],
    counts: Sequence[int],
    node: AvroType,
    schema: pa.Schema,
    columns: Collection[str] | None = None,
) -> list[pa.Table] | None:
    """Decode the records of several blocks of one schema at once: one walk over them all.

    ``contents[i]`` holds ``counts[i]`` length-prefixed records from its first byte to its last
    (a block's content without its version and count). The records areas are joined into one
    buffer and decoded as one run of ``sum(counts)`` records (:func:`decode_avro_records`): the
    fixed cost of a walk (a few numpy calls per field and per step of :func:`record_bounds`)
    is paid once instead of once per block, which is most of the cost of blocks of a few
    thousand records. Each block's chain must end exactly at its own end (the joined chain
    passes through every block boundary after exactly that block's records), so the result is
    the blocks' own decodings, one table per block (zero-copy slices of one table).

    Returns:
        The tables, or ``None`` when the joined records do not decode cleanly (the caller then
        decodes block by block, which names the bad block).
    """
    total = sum(counts)
    if not contents or total <= 0 or any(c <= 0 for c in counts):
        return None
    joined = b"".join(contents)
    bounds = record_bounds(joined, 0, total, node)
    if bounds is None:
        return None
    starts, ends = bounds
    first = np.cumsum([0, *counts[:-1]])
    sizes = np.cumsum([0, *(len(c) for c in contents[:-1])])
    if not np.array_equal(starts[first], sizes + 4):
        return None  # a block's records run into the next block
    table = _decode_bounded(joined, starts, ends, node, schema, columns)
    if table is None:
        return None
    return [table.slice(int(f), int(n)) for f, n in zip(first, counts, strict=True)]


def _decode_bounded(
    content: bytes | memoryview,
    starts: np.ndarray,
    ends: np.ndarray,
    node: AvroType,
    schema: pa.Schema,
    columns: Collection[str] | None,
) -> pa.Table | None:
    """:func:`decode_avro_records` once the records' bounds are known."""
    count = len(starts)
    decoder = _Decoder(content, ends)
    keep = [columns is None or f.name in columns for f in node.fields]
    sinks = [_sink(f, count, starts, wanted) for f, wanted in zip(node.fields, keep, strict=True)]
    step = max(64, CHUNK_BYTES * count // max(len(content), 1))
    try:
        for first in range(0, count, step):
            rows = slice(first, min(first + step, count))
            pos, off = starts[rows], 0
            for sink, f in zip(sinks, node.fields, strict=True):
                pos, off = decoder.slot(sink, f, pos, off, rows)
            if not np.array_equal(pos + off, ends[rows]):
                return None  # a record does not end where its length says
            for sink, f, wanted in zip(sinks, node.fields, keep, strict=True):
                if wanted:
                    decoder.collect(sink, f, rows)
        raw = [
            decoder.array(k, f, count)
            for k, f, wanted in zip(sinks, node.fields, keep, strict=True)
            if wanted
        ]
    except (_Bad, IndexError):  # IndexError: a read past the end of the block
        return None
    fields = [f for f, wanted in zip(schema, keep, strict=True) if wanted]
    logical = [from_physical(c, f.type) for c, f in zip(raw, fields, strict=True)]
    return pa.Table.from_arrays(logical, schema=pa.schema(fields))


__all__ = [
    "CHUNK_BYTES",
    "decode_avro_records",
    "decode_avro_runs",
    "record_bounds",
    "vectorisable",
]
