"""The record-index HFiles a process has decoded, kept for its next lookups.

A batch of keys spread over a large record index touches every HFile data block of it: each
lookup would inflate (gzip) and search the whole index again. A long-lived writer (the
streaming sink, a Spark driver, an embedded process doing many batches) instead keeps what it
decoded -- per HFile (a base HFile of a ``record_index`` file slice, or an HFILE_DATA block of
one of its log files), the sorted row keys as a NUL-padded numpy bytes array with their
lengths and each row's value as a code into the file's distinct values -- and looks the next
batch's keys up with ``numpy.searchsorted``. As Java's metadata reader keeps its file slice
readers open between lookups (``HoodieBackedTableMetadata`` with ``reuse``), a new batch
reads only the log files written since: the slice's older files are already decoded.

Entries are keyed by file path, size and modification time: Hudi never rewrites a file under
its name (names carry the writing instant and a write token; a version 6 log file that Java's
append handle grows changes size), so an entry cannot be stale -- another writer's commit adds
new files, which are read and decoded when a lookup's file slice names them. The whole cache
holds at most ``hoodie.metadata.record.index.cache.max.bytes`` (least recently used files
first out; 0 keeps nothing, each lookup then reads the blocks its keys fall in).

The first lookup of a file in a process searches only the blocks its keys fall in, as a
process writing once would (:func:`hudi_ds.layout.hfile_lookup.lookup_hfile`), and keeps the
answers for the same keys asked again (the write's index upkeep repeats its tagger's
lookup). A later lookup of other keys decodes the blocks it touches (a small batch decodes a
few), their cells found by reading two lengths each and cut out with numpy; a file most of
whose blocks a lookup wants is decoded whole into one array (a lookup is then one search).
Row keys ending in a NUL byte cannot be told apart in a padded array: an HFile holding one is
always searched block by block.
"""

from __future__ import annotations

import struct
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hudi_ds.errors import CorruptFileError, UnsupportedError
from hudi_ds.layout.file_group import FileSlice
from hudi_ds.layout.hfile import (
    _DATA,
    _T_ENTRY_COUNT,
    _cells,
    _Damaged,
    _open,
    _Opened,
    _row_of_index_key,
)
from hudi_ds.layout.hfile_cells import DecodedCells, decode_cells
from hudi_ds.layout.hfile_lookup import lookup_hfile
from hudi_ds.log.block import BlockType, LogBlock
from hudi_ds.log.reader import decode_delete_block
from hudi_ds.schema.meta import RECORD_KEY_METADATA_FIELD
from hudi_ds.storage import Storage

__all__ = ["DEFAULT_BUDGET", "Query", "RecordIndexCache", "cache"]

DEFAULT_BUDGET = 1 << 30
"""Bytes the process's cache holds until a write sets
``hoodie.metadata.record.index.cache.max.bytes`` (its default): a 16M-key index of 11-byte
keys decodes to about 400 MB."""

#: A first lookup decodes an HFile of at most this many cells per key looked up: decoding
#: costs about 0.5 us a cell, searching a block for a key about ten times that.
_DECODE_PER_KEY = 8

#: Data blocks decoded together: a few MB of cells, which numpy's passes keep in the CPU's
#: caches (a whole file's cells at once cost a fifth more)
_DECODE_BLOCKS = 512

Stamp = tuple[int, int]
"""``(size, modification time in ms)`` of a listed file."""


class _NotSearchable(Exception):
    """An HFile whose rows cannot be held in a padded array (a row ends in a NUL byte)."""


def _damaged(where: str, e: Exception) -> CorruptFileError:
    return CorruptFileError(f"HFile {where} is damaged: {e}")


class Query:
    """The keys of one lookup: distinct and sorted by their UTF-8 bytes (Arrow's string
    order), as Arrow strings and as a NUL-padded bytes array with their lengths -- built by
    Arrow and numpy kernels, not key by key."""

    def __init__(self, keys: pa.Array | pa.ChunkedArray | Sequence[str]) -> None:
        arr = keys if isinstance(keys, pa.Array | pa.ChunkedArray) else pa.array(keys, pa.string())
        if isinstance(arr, pa.ChunkedArray):
            arr = arr.combine_chunks()
        arr = pc.unique(arr.cast(pa.string()).drop_null())
        self.strings: pa.Array = arr.take(pc.sort_indices(arr))
        binary = self.strings.cast(pa.large_binary())
        offsets = np.frombuffer(binary.buffers()[1], np.int64)[
            binary.offset : binary.offset + len(binary) + 1
        ]
        data = binary.buffers()[2]
        b = np.frombuffer(data, np.uint8) if data is not None else np.zeros(1, np.uint8)
        self.lengths = np.diff(offsets)
        b = b if len(b) else np.zeros(1, np.uint8)
        self.keys = _gather(b, offsets[:-1], self.lengths)
        last = b[np.maximum(offsets[1:] - 1, 0)]
        #: whether a key ends in a NUL byte (a padded array cannot hold it apart)
        self.nul_ended = bool(((self.lengths > 0) & (last == 0)).any())
        self._raw: list[bytes] | None = None

    @property
    def raw(self) -> list[bytes]:
        """The keys as Python bytes (the block-by-block search's input)."""
        if self._raw is None:
            self._raw = self.strings.cast(pa.binary()).to_pylist()
        return self._raw

    def __len__(self) -> int:
        return len(self.strings)


@dataclass
class _Cells:
    """Rows of an HFile (sorted) with their lengths and value codes."""

    keys: np.ndarray
    lengths: np.ndarray
    codes: np.ndarray

    @property
    def nbytes(self) -> int:
        return int(self.keys.nbytes + self.lengths.nbytes + self.codes.nbytes)

    def find(self, keys: np.ndarray, lengths: np.ndarray) -> np.ndarray:
        """The position of each of ``keys`` (padded, ``lengths`` bytes) here, -1 if absent."""
        n = len(self.keys)
        if not n or not len(keys):
            return np.full(len(keys), -1, np.int64)
        # a query wider than the rows is cut to their width: it then matches no row of its
        # length, and the rows' order decides its place the same (no row ends in NUL)
        q = keys.astype(self.keys.dtype)
        pos = np.minimum(np.searchsorted(self.keys, q), n - 1)
        hit = (self.keys[pos] == q) & (self.lengths[pos] == lengths)
        return np.where(hit, pos, -1)

    def codes_of(self, keys: np.ndarray, lengths: np.ndarray) -> np.ndarray:
        """The value code of each of ``keys`` here, -1 if absent."""
        pos = self.find(keys, lengths)
        if not len(self.codes):
            return pos
        return np.where(pos >= 0, self.codes[np.maximum(pos, 0)], -1)


def _gather(b: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """The byte runs ``b[starts[i]:starts[i] + lengths[i]]`` as a NUL-padded bytes array."""
    w = max(1, int(lengths.max(initial=0)))
    cols = np.arange(w)
    idx = np.minimum(starts[:, None] + cols, len(b) - 1)
    m = np.where(cols < lengths[:, None], b[idx], 0).astype(np.uint8)
    return np.ascontiguousarray(m).view(f"S{w}").ravel()


class _HFileEntry:
    """One HFile of the partition, decoded block by block as lookups touch its blocks."""

    def __init__(self, data: bytes, where: str, schema: str, keep: bool) -> None:
        self.where = where
        self.lock = threading.Lock()
        try:
            o = _open(data)
            firsts = [_row_of_index_key(key) for _o, _s, key in o.entries]
        except UnsupportedError as e:
            raise UnsupportedError(f"HFile {where}: {e}") from e
        except (_Damaged, struct.error, ValueError, IndexError) as e:
            raise _damaged(where, e) from e
        self.opened: _Opened | None = o
        self.data: bytes | None = data
        self.schema = schema or o.file_info.get("schema", b"").decode("utf-8")
        #: whether decoded blocks are kept (the cache holds files) and can be (no NUL row ends)
        self.searchable = keep and not any(f.endswith(b"\x00") for f in firsts)
        self.firsts = np.array(firsts or [b""], dtype=f"S{max([1, *map(len, firsts)])}")
        self.first_rows = firsts
        self.blocks: list[_Cells | None] = [None] * len(firsts)
        self.merged: _Cells | None = _Cells(*_empty()) if not firsts else None
        self.values: list[bytes] = []
        self.codes: dict[bytes, int] = {}
        self._locations: np.ndarray = np.empty(0, object)
        self._decoded = 0  # bytes of the blocks decoded
        #: the keys and answers of the file's first lookup (searched in the blocks, not
        #: decoded), while no lookup has asked other keys
        self._first: tuple[pa.Array, np.ndarray] | None = None
        self._looked = False

    @property
    def nbytes(self) -> int:
        held = len(self.data) if self.data is not None else 0
        if self._first is not None:
            held += self._first[0].nbytes + self._first[1].nbytes
        if self.merged is not None:
            return held + self.merged.nbytes
        return held + self._decoded

    def locations(self, decode: Callable[[bytes, str], object]) -> np.ndarray:
        """The decoded value of each code (decoded once per distinct value)."""
        if len(self._locations) != len(self.values):
            old = self._locations.tolist()
            new = [decode(v, self.schema) for v in self.values[len(old) :]]
            arr = np.empty(len(old) + len(new), object)
            arr[:] = old + new
            self._locations = arr
        return self._locations

    def find(self, q: Query) -> np.ndarray:
        """The value code of each key of ``q`` (-1: not in this HFile)."""
        with self.lock:
            if not self.searchable:
                return self._find_by_blocks(q)
            if self.merged is None and not self._looked:
                self._looked = True
                if not self._decode_first(q):
                    # the first lookup searches the blocks its keys fall in (a process may
                    # write once: decoding a large file would cost it more), and its answers
                    # serve the same keys asked again (a write's index upkeep asks its
                    # tagger's keys); a lookup of other keys decodes the blocks, kept for the
                    # lookups after it
                    out = self._find_by_blocks(q)
                    self._first = (q.strings, out)
                    return out
            if self._first is not None:
                keys, answers = self._first
                at = pc.index_in(q.strings, value_set=keys)
                if not at.null_count:
                    return answers[at.to_numpy()]
                self._first = None
            if self.merged is None:
                try:
                    return self._find_in_blocks(q)
                except _NotSearchable:
                    self.searchable = False
                    self.blocks = [None] * len(self.blocks)
                    self._decoded = 0
                    return self._find_by_blocks(q)
            return self.merged.codes_of(q.keys, q.lengths)

    def _decode_first(self, q: Query) -> bool:
        """Whether a first lookup decodes the file rather than search its blocks key by key:
        a file of few cells for its keys (the small HFile a batch's index upkeep adds to a log)
        decodes for less than the keys' searches cost."""
        assert self.opened is not None
        entries = self.opened.fields.get(_T_ENTRY_COUNT)
        return isinstance(entries, int) and entries <= _DECODE_PER_KEY * len(q)

    def _find_by_blocks(self, q: Query) -> np.ndarray:
        assert self.data is not None
        found, _, _ = lookup_hfile(self.data, q.raw, self.where)
        out = np.full(len(q), -1, np.int64)
        for i, k in enumerate(q.raw):
            v = found.get(k)
            if v is not None:
                out[i] = self._code(v)
        return out

    def _code(self, value: bytes) -> int:
        code = self.codes.get(value)
        if code is None:
            code = self.codes[value] = len(self.values)
            self.values.append(value)
        return code

    def _find_in_blocks(self, q: Query) -> np.ndarray:
        blk = np.searchsorted(self.firsts, q.keys.astype(self.firsts.dtype), side="right") - 1
        out = np.full(len(q), -1, np.int64)
        touched, starts = np.unique(blk, return_index=True)
        if 2 * len(touched) >= len(self.blocks):
            # most blocks are wanted: the rest now too, and the next lookup is one search
            self._keep([i for i, c in enumerate(self.blocks) if c is None])
            if self.merged is None:
                self._merge()
            assert self.merged is not None
            return self.merged.codes_of(q.keys, q.lengths)
        self._keep([i for i in touched.tolist() if i >= 0 and self.blocks[i] is None])
        bounds = [*starts.tolist(), len(q)]
        for n, i in enumerate(touched.tolist()):
            cells = self.blocks[i] if i >= 0 else None
            if cells is not None:
                lo, hi = bounds[n], bounds[n + 1]
                out[lo:hi] = cells.codes_of(q.keys[lo:hi], q.lengths[lo:hi])
        if self.merged is None and all(c is not None for c in self.blocks):
            self._merge()
        return out

    def _keep(self, ids: list[int]) -> None:
        """Decode blocks ``ids`` (:data:`_DECODE_BLOCKS` at a time:
        :func:`hudi_ds.layout.hfile_cells.decode_cells`) and keep them; every block of the
        file at once becomes the merged cells."""
        parts = [ids[i : i + _DECODE_BLOCKS] for i in range(0, len(ids), _DECODE_BLOCKS)]
        decoded = [self._decode(part) for part in parts]
        if len(ids) == len(self.blocks) and ids and all(d is not None for d in decoded):
            done = [d for d in decoded if d is not None]
            self.merged = _concat(done) if len(done) > 1 else done[0]
            self._drop_blocks()
            return
        o = self.opened
        assert o is not None
        for part, d in zip(parts, decoded, strict=True):
            if d is None:  # cells of another shape (or damaged): read cell by cell
                for i in part:
                    raw, _ = o.reader.block(o.entries[i][0], (_DATA,))
                    self._hold(i, self._cells(raw, o.mvcc, i))
                continue
            starts = d.block_starts.tolist()
            for n, i in enumerate(part):
                lo, hi = starts[n], starts[n + 1]
                self._hold(i, _Cells(d.keys[lo:hi], d.lengths[lo:hi], d.codes[lo:hi]))

    def _decode(self, ids: list[int]) -> _Decoded | None:
        """The cells of blocks ``ids`` with their codes in this file's values, checked; None
        when they are not of the shape :func:`decode_cells` reads."""
        o = self.opened
        assert o is not None
        try:
            raws = [o.reader.block(o.entries[i][0], (_DATA,))[0] for i in ids]
        except (_Damaged, struct.error, ValueError, IndexError) as e:
            raise _damaged(self.where, e) from e
        d = decode_cells(raws, o.mvcc)
        if d is None:
            return None
        if d.nul_ended:
            raise _NotSearchable()
        self._check_firsts(ids, d)
        remap = np.fromiter(map(self._code, d.values), np.int32, len(d.values))
        codes = remap[d.codes] if len(d.codes) else d.codes
        return _Decoded(d.rows, d.lengths, codes, d.block_starts)

    def _hold(self, i: int, cells: _Cells) -> None:
        self.blocks[i] = cells
        self._decoded += cells.nbytes

    def _check_firsts(self, ids: list[int], d: DecodedCells) -> None:
        """Each decoded block starts with the row its index entry names."""
        firsts = d.block_starts[:-1]
        bad = firsts == d.block_starts[1:]  # an empty block
        if len(d.rows):
            at = np.minimum(firsts, len(d.rows) - 1)
            want = np.array([len(self.first_rows[i]) for i in ids], np.int32)
            bad |= (d.rows[at] != self.firsts[ids]) | (d.lengths[at] != want)
        if bad.any():
            assert self.opened is not None
            offset = self.opened.entries[ids[int(np.flatnonzero(bad)[0])]][0]
            why = f"data block at {offset} does not start with its index key"
            raise _damaged(self.where, _Damaged(why))

    def _cells(self, raw: bytes, mvcc: bool, i: int) -> _Cells:
        """Block ``i``'s cells read cell by cell (:func:`hudi_ds.layout.hfile._cells`, which
        names what is damaged in a damaged block)."""
        assert self.opened is not None
        offset = self.opened.entries[i][0]
        rows: list[bytes] = []
        vals: list[bytes] = []
        try:
            first = _cells(raw, mvcc, rows, vals, offset)
        except (_Damaged, struct.error, ValueError, IndexError) as e:
            raise _damaged(self.where, e) from e
        if first != self.first_rows[i]:
            why = f"data block at {offset} does not start with its index key"
            raise _damaged(self.where, _Damaged(why))
        if any(r.endswith(b"\x00") for r in rows):
            raise _NotSearchable()
        lengths = np.fromiter(map(len, rows), np.int64, len(rows))
        keys = np.array(rows, dtype=f"S{max(1, int(lengths.max(initial=0)))}")
        codes = np.fromiter(map(self._code, vals), np.int32, len(vals))
        return _Cells(keys, lengths.astype(np.int32), codes)

    def _drop_blocks(self) -> None:
        self.blocks = []
        self.data = None
        self.opened = None

    def _merge(self) -> None:
        self.merged = _concat([c for c in self.blocks if c is not None])
        self._drop_blocks()


@dataclass
class _Decoded(_Cells):
    """The cells of some blocks (:meth:`_HFileEntry._decode`) and where each block starts."""

    block_starts: np.ndarray


def _concat(parts: Sequence[_Cells]) -> _Cells:
    """The cells of ``parts``, one after the other (rows padded to the widest)."""
    w = max(c.keys.dtype.itemsize for c in parts)
    return _Cells(
        np.concatenate([c.keys.astype(f"S{w}", copy=False) for c in parts]),
        np.concatenate([c.lengths for c in parts]),
        np.concatenate([c.codes for c in parts]),
    )


def _empty() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return np.empty(0, "S1"), np.empty(0, np.int32), np.empty(0, np.int32)


@dataclass
class _Deletes:
    """The keys of a DELETE block, sorted, as a padded array."""

    cells: _Cells

    @classmethod
    def of(cls, block: LogBlock) -> _Deletes:
        col = decode_delete_block(block).column(RECORD_KEY_METADATA_FIELD)
        q = Query(col)
        if q.nul_ended:
            # such a key cannot be padded: searched as Python bytes instead
            return cls(_Cells(np.array(q.raw, dtype=object), q.lengths, np.zeros(len(q), np.int32)))
        return cls(_Cells(q.keys, q.lengths, np.zeros(len(q), np.int32)))

    def find(self, q: Query) -> np.ndarray:
        """Whether each key of ``q`` is deleted here."""
        if self.cells.keys.dtype == object:
            gone = set(self.cells.keys.tolist())
            return np.fromiter((k in gone for k in q.raw), bool, len(q))
        return self.cells.find(q.keys, q.lengths) >= 0


@dataclass
class _Block:
    """A log block as a lookup needs it (:class:`hudi_ds.metadata.reader.SliceBlock`)."""

    block_type: BlockType
    instant_time: str | None
    target_instant_time: str | None
    is_rollback_command: bool
    path: str
    offset: int
    hfile: _HFileEntry | None = None
    deletes: _Deletes | None = None

    @property
    def nbytes(self) -> int:
        if self.hfile is not None:
            return self.hfile.nbytes
        return self.deletes.cells.nbytes if self.deletes is not None else 0


@dataclass
class _LogEntry:
    blocks: list[_Block] = field(default_factory=list)

    @property
    def nbytes(self) -> int:
        return sum(b.nbytes for b in self.blocks)


def _log_entry(storage: Storage, path: str, keep: bool) -> _LogEntry:
    from hudi_ds.metadata.reader import read_log_blocks

    out = _LogEntry()
    for b in read_log_blocks(storage, path):
        block = _Block(
            b.block_type,
            b.instant_time,
            b.target_instant_time,
            b.is_rollback_command,
            b.path,
            b.offset,
        )
        if b.block_type == BlockType.HFILE_DATA:
            where = f"{b.path} block at offset {b.offset}"
            block.hfile = _HFileEntry(bytes(b.content), where, b.schema or "", keep)
        elif b.block_type == BlockType.DELETE:
            block.deletes = _Deletes.of(b)
        out.blocks.append(block)
    return out


class RecordIndexCache:
    """The decoded files of ``record_index`` slices, least recently used first out past
    ``budget`` bytes. Thread-safe (a Spark driver looks up from several threads; file groups
    are looked up in parallel)."""

    def __init__(self, budget: int = DEFAULT_BUDGET) -> None:
        self.budget = budget
        self._entries: OrderedDict[tuple[str, int, int], _HFileEntry | _LogEntry] = OrderedDict()
        self._lock = threading.Lock()
        self._last: tuple[object, pa.Array, object] | None = None

    def set_budget(self, budget: int) -> None:
        """Hold at most ``budget`` bytes from now on (0: nothing)."""
        with self._lock:
            self.budget = budget
            self._shrink()

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._last = None

    def remember(self, state: object, keys: pa.Array, answer: object) -> None:
        """Keep the ``answer`` of the last lookup of the distinct ``keys`` in the index as it
        was in ``state`` (its files and completed instants): a write looks the keys of its
        batch up to tag them, then its index upkeep looks most of them up again before
        anything of the index changed (the keys its log blocks update in place, which Java
        takes from the write's statuses: ``HoodieBackedTableMetadataWriter.
        getRecordIndexUpdates``); that second lookup is answered from the first. Nothing is
        kept with a budget of 0."""
        with self._lock:
            self._last = (state, keys, answer) if self.budget > 0 else None

    def recalled(self, state: object, keys: pa.Array) -> tuple[pa.Array, object] | None:
        """``(the keys remembered, their answer)`` when the last lookup remembered was made in
        ``state`` and asked every one of ``keys``; else None."""
        with self._lock:
            last = self._last
        if last is None or last[0] != state:
            return None
        if len(keys) and not pc.all(pc.is_in(keys, value_set=last[1])).as_py():
            return None
        return last[1], last[2]

    @property
    def held(self) -> int:
        """Bytes held now."""
        with self._lock:
            return sum(e.nbytes for e in self._entries.values())

    def __len__(self) -> int:
        return len(self._entries)

    def _shrink(self) -> None:
        total = sum(e.nbytes for e in self._entries.values())
        while self._entries and total > self.budget:
            _, old = self._entries.popitem(last=False)
            total -= old.nbytes

    def _get(self, key: tuple[str, int, int]) -> _HFileEntry | _LogEntry | None:
        with self._lock:
            got = self._entries.get(key)
            if got is not None:
                self._entries.move_to_end(key)
            return got

    def _put(self, key: tuple[str, int, int], entry: _HFileEntry | _LogEntry) -> None:
        with self._lock:
            if self.budget > 0:
                self._entries[key] = entry
                self._entries.move_to_end(key)

    def _settle(self) -> None:
        """Evict past the budget once a lookup has decoded what it touched."""
        with self._lock:
            self._shrink()

    def _key(
        self, storage: Storage, path: str, size: int, stamps: Mapping[str, Stamp]
    ) -> tuple[str, int, int]:
        size, mtime = stamps.get(path, (size, -1))
        return storage.full_path(path), size, mtime

    def base(
        self, storage: Storage, path: str, size: int, stamps: Mapping[str, Stamp]
    ) -> _HFileEntry:
        key = self._key(storage, path, size, stamps)
        got = self._get(key)
        if isinstance(got, _HFileEntry):
            return got
        entry = _HFileEntry(storage.read_bytes(path), storage.full_path(path), "", self.budget > 0)
        if key[2] >= 0:  # a file of unknown modification time is read again next time
            self._put(key, entry)
        return entry

    def log(self, storage: Storage, path: str, size: int, stamps: Mapping[str, Stamp]) -> _LogEntry:
        key = self._key(storage, path, size, stamps)
        got = self._get(key)
        if isinstance(got, _LogEntry):
            return got
        entry = _log_entry(storage, path, self.budget > 0)
        if key[2] >= 0:
            self._put(key, entry)
        return entry

    def lookup_slice(
        self,
        storage: Storage,
        fslice: FileSlice,
        keep: Callable[[str], bool],
        q: Query,
        stamps: Mapping[str, Stamp],
        decode: Callable[[bytes, str], object],
    ) -> np.ndarray:
        """The merged value of each key of ``q`` in file slice ``fslice`` (None: absent or
        deleted): the base HFile, then the log blocks that count, in order
        (:func:`hudi_ds.metadata.reader.counted_blocks`)."""
        from hudi_ds.metadata.reader import counted_blocks

        out = np.full(len(q), None, object)
        if fslice.base_file is not None:
            bf = fslice.base_file
            self._apply(self.base(storage, bf.path, bf.size, stamps), q, out, decode)
        blocks = [
            b for lf in fslice.log_files for b in self.log(storage, lf.path, lf.size, stamps).blocks
        ]
        for b in counted_blocks(blocks, keep, fslice.partition_path):
            if b.hfile is not None:
                self._apply(b.hfile, q, out, decode)
            elif b.deletes is not None:
                out[b.deletes.find(q)] = None
        self._settle()
        return out

    @staticmethod
    def _apply(
        entry: _HFileEntry, q: Query, out: np.ndarray, decode: Callable[[bytes, str], object]
    ) -> None:
        codes = entry.find(q)
        hit = codes >= 0
        if hit.any():
            out[hit] = entry.locations(decode)[codes[hit]]


_CACHE = RecordIndexCache()


def cache() -> RecordIndexCache:
    """The process's cache."""
    return _CACHE
