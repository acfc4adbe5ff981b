"""Hudi's SIMPLE and GLOBAL_SIMPLE indexes: join the incoming keys with the keys of the files.

Java (``HoodieSimpleIndex.tagLocationInternal`` / ``HoodieGlobalSimpleIndex``) reads the record
keys of the latest base file of every file group of the touched partitions (every partition for
the global index) with ``HoodieKeyLocationFetchHandle`` and joins them with the incoming records
on ``HoodieKey`` (key and partition path; the key alone when global). Here every candidate
file's keys are looked up among the incoming keys of its partition with an Arrow hash probe
per partition (``pc.index_in``; keys not wanted dropped), and the match is integer work on
``(incoming row, slot)`` (:class:`Candidates`), so its size is bounded by the incoming keys,
not the table. The key columns are read by a thread pool (:data:`READ_THREADS`,
:func:`ordered_map`: pyarrow decodes without the GIL) and the partitions already read are
probed on another while the reads go on; files are gathered in slot order, and the answer
does not depend on the threads.

What is read of a file slice:

* the base file: only its ``_hoodie_record_key`` column; a table without meta fields
  (``hoodie.populate.meta.fields=false``) only its record key fields, from which the keys are
  built with :func:`hudi_ds.keygen.record_keys` (``BaseKeyGenerator`` in Java);
* the keys of the slice's log data blocks when :func:`~hudi_ds.index.lookup.reads_logs` says
  so (a slice without a base file, or ``spec.read_logs``), so that a key written only to a log
  is found where it lives and not inserted again elsewhere. Delete blocks add no location, and
  blocks a rollback command block invalidates are dropped. (Java's SIMPLE index reads base
  files only, because its MOR inserts always go to base files; a file group that an index
  indexing logs wrote as logs alone would have its keys inserted again by Java.)

A key found in several file groups (``insert`` / ``bulk_insert`` wrote it twice, or, for the
global index, a key that moved partition without ``update.partition.path``) is located in all
of them, as Java's join tags the record once per match: the primary location is the file group
whose slice has the greatest base instant time, among equal instants the smallest file id; the
others are :attr:`KeyLocations.more_groups`.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from contextlib import contextmanager
from typing import TypeVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hudi_ds.errors import (
    CorruptBlockError,
    CorruptFileError,
    HudiError,
    MissingFileError,
    SchemaError,
    UnsupportedError,
)
from hudi_ds.index.lookup import KeyLocations, LookupSpec, reads_logs
from hudi_ds.keygen import record_keys
from hudi_ds.layout.base_file import OpenedBaseFile, ParquetBaseFile, open_lance_base_file
from hudi_ds.layout.file_group import BaseFile, FileSlice
from hudi_ds.log.block import BlockType, LogBlock
from hudi_ds.log.reader import decode_data_block, scan_log_bytes
from hudi_ds.schema.evolution import whole
from hudi_ds.schema.meta import RECORD_KEY_METADATA_FIELD
from hudi_ds.storage import Storage

_T = TypeVar("_T")
_R = TypeVar("_R")


def check_input(
    keys: pa.Array | pa.ChunkedArray, partitions: pa.Array | pa.ChunkedArray | None
) -> tuple[pa.Array, pa.Array | None]:
    """The incoming keys (and partitions) as plain string arrays.

    Raises:
        SchemaError: keys or partitions that are not strings, contain nulls, or differ in length.
    """
    out_keys = _strings(keys, "record key")
    if partitions is None:
        return out_keys, None
    out_parts = _strings(partitions, "partition path")
    if len(out_parts) != len(out_keys):
        raise SchemaError(
            f"index lookup: {len(out_keys)} record keys but {len(out_parts)} partition paths"
        )
    return out_keys, out_parts


def _strings(values: pa.Array | pa.ChunkedArray, what: str) -> pa.Array:
    values = whole(values)
    t = values.type
    if pa.types.is_dictionary(t):
        values = values.cast(t.value_type)
        t = values.type
    if pa.types.is_null(t) and len(values) == 0:
        return pa.array([], pa.string())
    if not (pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t)):
        raise SchemaError(f"index lookup: the {what}s must be strings, got {t}")
    if values.null_count:
        raise SchemaError(f"index lookup: {values.null_count} null {what}(s)")
    return values.cast(pa.string())


def keys_of_table(
    table: pa.Table, spec: LookupSpec, where: str, chunked: bool = False
) -> pa.Array | pa.ChunkedArray:
    """The record keys of rows read from a base file or a log block (string array).

    ``_hoodie_record_key`` when the rows carry it (not all null), else the keys built from the
    record key fields (tables without meta fields). ``chunked``: a string column read as
    several chunks (row groups) may be returned as they are (no copy into one array).

    Raises:
        CorruptFileError: neither the key column nor the key fields are there, or a key is
            null (``where`` names the file).
        SchemaError: a key field has a type keys are not built from (names the file).
    """
    if RECORD_KEY_METADATA_FIELD in table.column_names:
        col = table.column(RECORD_KEY_METADATA_FIELD)
        if col.null_count < table.num_rows or table.num_rows == 0:
            if chunked and col.type == pa.string() and col.null_count == 0:
                return col
            keys = _strings_or_corrupt(col, where)
            if keys.null_count:
                raise CorruptFileError(
                    f"{where}: {keys.null_count} row(s) without {RECORD_KEY_METADATA_FIELD}"
                )
            return keys
    missing = [f for f in spec.record_key_fields if f not in table.column_names]
    if missing or not spec.record_key_fields:
        raise CorruptFileError(
            f"{where}: no {RECORD_KEY_METADATA_FIELD} and no record key field(s) "
            f"{list(spec.record_key_fields)} (missing: {missing}) to build the keys from"
        )
    try:
        return record_keys(table, list(spec.record_key_fields), spec.complex_key)
    except SchemaError as e:  # e.g. a key field of a type keys cannot be built from
        raise SchemaError(f"{where}: {e}") from e


def _strings_or_corrupt(col: pa.ChunkedArray, where: str) -> pa.Array:
    try:
        return _strings(col, "record key")
    except SchemaError as e:
        raise CorruptFileError(f"{where}: {e}") from e


def key_columns(spec: LookupSpec) -> list[str]:
    """The columns a base file's keys are read from."""
    if spec.meta_fields:
        return [RECORD_KEY_METADATA_FIELD]
    return list(spec.record_key_fields)


def read_keys(
    f: OpenedBaseFile, spec: LookupSpec, where: str, chunked: bool = False
) -> pa.Array | pa.ChunkedArray:
    """The record keys of an opened base file (Parquet or Lance), reading only the key
    column(s) (``chunked``: as :func:`keys_of_table`)."""
    names = f.names
    cols = [c for c in key_columns(spec) if c in names]
    table = f.read(cols)
    if spec.meta_fields and (
        not cols or table.column(0).null_count == table.num_rows > 0
    ):  # meta column absent or never populated: build keys from the fields
        fields = [c for c in spec.record_key_fields if c in names]
        table = f.read(fields)
    return keys_of_table(table, spec, where, chunked)


def base_file_keys(
    storage: Storage, base: BaseFile, spec: LookupSpec, chunked: bool = False
) -> pa.Array | pa.ChunkedArray:
    """The record keys of a base file, reading only its key column(s) (``chunked``: as
    :func:`keys_of_table`).

    Raises:
        MissingFileError: the file is gone.
        CorruptFileError: the file cannot be read (the message names it).
        UnsupportedError: neither a Parquet nor a Lance base file, or a Lance one without
            the optional pylance.
    """
    with open_base_file(storage, base) as f:
        where = f"base file {storage.full_path(base.path)}"
        try:
            return read_keys(f, spec, where, chunked)
        except HudiError:
            raise  # already names the file
        except (OSError, ValueError) as e:
            raise CorruptFileError(f"cannot read the keys of {where}: {e}") from e


@contextmanager
def open_base_file(storage: Storage, base: BaseFile) -> Iterator[OpenedBaseFile]:
    """``with open_base_file(storage, base) as f``: the base file opened (its footer read),
    closed on exit; one open of the file.

    Raises:
        MissingFileError, CorruptFileError, UnsupportedError: as :func:`base_file_keys`.
    """
    path = storage.full_path(base.path)
    ext = base.name.extension
    if ext not in (".parquet", ".lance"):
        raise UnsupportedError(f"index lookup reads Parquet and Lance base files, not {path}")
    missing = f"base file {path} of a committed file slice is missing"
    if ext == ".lance":
        try:
            lance_file = open_lance_base_file(storage, base.path)
        except FileNotFoundError as e:
            raise MissingFileError(missing, base.path) from e
        except (OSError, ValueError) as e:
            raise CorruptFileError(f"cannot read base file {path}: {e}") from e
        yield lance_file
        return
    try:
        f = storage.open_input_file(base.path, base.size or None)  # listed: no HEAD
    except FileNotFoundError as e:
        raise MissingFileError(missing, base.path) from e
    except OSError as e:
        raise CorruptFileError(f"cannot open base file {path}: {e}") from e
    with f:
        try:
            opened = ParquetBaseFile(f)
        except (OSError, ValueError) as e:  # ArrowInvalid; a bad footer
            raise CorruptFileError(f"cannot read base file {path}: {e}") from e
        yield opened


def log_keys(storage: Storage, fslice: FileSlice, spec: LookupSpec) -> tuple[pa.Array, int]:
    """The record keys of the data blocks of a slice's log files, and the log files read.

    Torn blocks (a failed write's tail) are skipped with a warning by the log scanner; blocks
    that a rollback command block targets are dropped; delete blocks add nothing.

    Blocks are not checked against the timeline (the lookup takes no visibility): a block of a
    failed or in-flight delta commit that no rollback has targeted yet still locates its keys
    in that file group. That costs nothing wrong -- the key is then written as an update of the
    group it was tried in, and the rollback later drops only the failed block -- while the
    reverse (missing a committed key) would insert it a second time. The file system view
    already leaves out the log files of a slice whose base instant never completed (v6) and
    the log files of invisible instants (v8+).

    Raises:
        MissingFileError: a log file is gone.
        CorruptFileError: an intact data block does not decode (names the file and offset).
    """
    blocks: list[LogBlock] = []
    read = 0
    for lf in fslice.sorted_log_files():
        try:
            data = storage.read_bytes(lf.path)
        except FileNotFoundError as e:
            raise MissingFileError(
                f"log file {storage.full_path(lf.path)} of a committed file slice is missing",
                lf.path,
            ) from e
        read += 1
        blocks.extend(scan_log_bytes(data, lf.path).blocks)
    rolled_back = {
        b.target_instant_time
        for b in blocks
        if b.block_type == BlockType.COMMAND and b.is_rollback_command and b.target_instant_time
    }
    parts: list[pa.Array] = []
    for i, b in enumerate(blocks):
        if b.block_type not in (BlockType.AVRO_DATA, BlockType.PARQUET_DATA):
            continue
        if b.instant_time in rolled_back and _rolled_back_later(blocks, i):
            continue
        where = f"log file {storage.full_path(b.path)} block at offset {b.offset}"
        try:
            table = decode_data_block(b)
        except CorruptBlockError as e:
            raise CorruptFileError(f"cannot read the keys of {where}: {e}") from e
        parts.append(keys_of_table(table, spec, where))
    if not parts:
        return pa.array([], pa.string()), read
    return pa.concat_arrays(parts), read


def _rolled_back_later(blocks: list[LogBlock], i: int) -> bool:
    """Whether a rollback command block after ``blocks[i]`` targets its instant (a rollback
    invalidates the blocks written before it, ``HoodieMergedLogRecordScanner``)."""
    target = blocks[i].instant_time
    return any(
        b.block_type == BlockType.COMMAND
        and b.is_rollback_command
        and b.target_instant_time == target
        for b in blocks[i + 1 :]
    )


class Candidates:
    """The keys found in the candidate slices, gathered slice by slice, then matched at once.

    The incoming keys are grouped by partition (all of them form one group for a global
    lookup). File keys are buffered per partition and looked up with one hash probe
    (``pc.index_in``) among the incoming keys *of that partition* once the partition's last
    slice was added (:meth:`expect` tells how many are coming), once per :data:`FLUSH_KEYS`
    buffered keys, or at the end -- not once per file: the probe's value set is then a
    partition's share of the incoming keys, small enough to stay in the CPU caches (about 1.5x
    faster than probing every file key against every incoming key), and its hash table is
    built once per partition. A probe answers the position of the first incoming row of the
    partition with that key; unwanted file keys are dropped, the wanted ones kept as
    ``(incoming row, slot)`` pairs, and the match of :meth:`locate` is integer work (numpy),
    with no string join. The incoming keys are not numbered as a whole (a hash table of every
    incoming key would cost more than all the probes of a partition's share).

    With a ``pool``, the probes run on its threads (Arrow's hash kernels release the GIL)
    while the caller reads the next files; their results are gathered in the order they were
    started, and :meth:`locate`'s answer does not depend on that order.

    Args:
        slices: the candidate slices (their order is the ``slot`` of each).
        keys: the incoming keys (strings, no nulls: :func:`check_input`).
        partitions: their partition paths (None: a global lookup, matching keys alone).
        pool: threads to probe on (None: in the calling thread).
    """

    #: buffered file keys of a partition that trigger their probe (bounds the buffer's memory)
    FLUSH_KEYS = 4_000_000

    def __init__(
        self,
        slices: Sequence[FileSlice],
        keys: pa.Array,
        partitions: pa.Array | None,
        pool: Executor | None = None,
    ) -> None:
        self.slices = slices
        self.keys = keys
        self._pool = pool
        n = len(keys)
        # the partition number of each slot (-1: no key wants it); a global lookup has one
        # "partition"
        self._part_of_slot = np.zeros(len(slices), np.int64)
        row_part = np.zeros(n, np.int64)
        n_parts = 1
        if partitions is not None:
            penc = pc.dictionary_encode(partitions)
            names = {p: i for i, p in enumerate(penc.dictionary.to_pylist())}
            n_parts = max(1, len(names))
            row_part = np.asarray(penc.indices, dtype=np.int64)
            self._part_of_slot = np.array(
                [names.get(s.partition_path, -1) for s in slices], np.int64
            )
        # the incoming rows of each partition, ascending: rows[bounds[p]:bounds[p + 1]]
        if n_parts == 1:
            self._rows = np.arange(n, dtype=np.int64)
        else:
            # numpy's stable sort is a radix sort for 16-bit keys (the same order, faster)
            small = n_parts <= np.iinfo(np.int16).max
            self._rows = np.argsort(
                row_part.astype(np.int16) if small else row_part, kind="stable"
            ).astype(np.int64)
        self._bounds = np.concatenate(
            [[0], np.cumsum(np.bincount(row_part, minlength=n_parts))]
        ).astype(np.int64)
        self._wanted_in: dict[int, pa.Array] = {}
        # per partition probed: the first position of each of its incoming keys among them
        self._firsts: dict[int, Future[np.ndarray] | np.ndarray] = {}
        self._found: deque[Future[tuple[np.ndarray, np.ndarray]] | tuple[np.ndarray, np.ndarray]]
        self._found = deque()
        self._done: list[tuple[np.ndarray, np.ndarray]] = []
        self._pending: dict[int, tuple[list[pa.Array], list[tuple[int, int]]]] = {}
        self._pending_n: dict[int, int] = {}
        self._expected: dict[int, int] = {}

    def wants(self, slot: int) -> bool:
        """Whether some incoming key may be in slice ``slot`` (its partition is wanted)."""
        return bool(self._part_of_slot[slot] >= 0) and len(self.keys) > 0

    def expect(self, slots: Sequence[int]) -> None:
        """The slots that will be :meth:`add`-ed (each once): a partition is probed as soon
        as its last slot was added."""
        for slot in slots:
            part = int(self._part_of_slot[slot])
            if part >= 0:
                self._expected[part] = self._expected.get(part, 0) + 1

    def add(self, slot: int, keys: pa.Array | pa.ChunkedArray) -> None:
        """Record that slice ``slot`` holds ``keys`` (only the wanted ones are kept)."""
        part = int(self._part_of_slot[slot])
        if part < 0:
            return
        if len(keys):
            ks, runs = self._pending.setdefault(part, ([], []))
            ks.extend(keys.chunks if isinstance(keys, pa.ChunkedArray) else [keys])
            runs.append((slot, len(keys)))
            self._pending_n[part] = self._pending_n.get(part, 0) + len(keys)
        left = self._expected.get(part)
        if left is not None:
            self._expected[part] = left - 1
        if (left is not None and left <= 1) or self._pending_n.get(part, 0) >= self.FLUSH_KEYS:
            self._flush(part)

    def _part_rows(self, part: int) -> np.ndarray:
        """The incoming rows of partition number ``part`` (ascending)."""
        return self._rows[self._bounds[part] : self._bounds[part + 1]]

    def _wanted(self, part: int) -> pa.Array:
        """The keys of the incoming rows of partition number ``part``, in row order."""
        got = self._wanted_in.get(part)
        if got is None:
            rows = self._part_rows(part)
            got = self.keys if len(rows) == len(self.keys) else self.keys.take(pa.array(rows))
            self._wanted_in[part] = got
            self._firsts[part] = (
                _first_positions(got)
                if self._pool is None
                else self._pool.submit(_first_positions, got)
            )
        return got

    def _flush(self, part: int) -> None:
        pending = self._pending.pop(part, None)
        self._pending_n.pop(part, None)
        if not pending or not pending[0]:
            return
        chunks, runs = pending
        wanted = self._wanted(part)  # made by this thread (the probes only read it)
        rows = self._part_rows(part)
        if self._pool is None:
            self._found.append(_probe(chunks, runs, wanted, rows))
            return
        # bounded: at most a few probes (and the file keys they hold) wait at once
        while len(self._found) >= 4:
            self._settle()
        self._found.append(self._pool.submit(_probe, chunks, runs, wanted, rows))

    def _settle(self) -> None:
        first = self._found.popleft()
        self._done.append(first.result() if isinstance(first, Future) else first)

    def locate(self, files_read: int, keys_read: int) -> KeyLocations:
        """Match the incoming keys (and partitions, unless global) with the gathered keys;
        see the module docstring for the choice among several matches."""
        for part in list(self._pending):
            self._flush(part)
        while self._found:
            self._settle()
        n = len(self.keys)
        slices = self.slices
        file_ids = pa.array([s.file_id for s in slices], pa.string())
        parts = pa.array([s.partition_path for s in slices], pa.string())
        instants = pa.array([s.base_instant_time for s in slices], pa.string())
        pos = np.full(n, -1, np.int64)
        found = [f for f in self._done if len(f[0])]
        if found and n:
            rows = np.concatenate([f[0] for f in found])
            slots = np.concatenate([f[1] for f in found])
            # rank of each slice: greatest base instant first, then smallest file id
            order = (
                pa.table({"i": instants, "f": file_ids, "s": np.arange(len(slices))})
                .sort_by([("i", "descending"), ("f", "ascending")])
                .column("s")
                .to_numpy()
            )
            rank = np.empty(len(slices), np.int64)
            rank[order] = np.arange(len(slices))
            # per first row of a key: the best rank among the slots holding it (no sort)
            best_rank = np.full(n, len(slices), np.int64)
            np.minimum.at(best_rank, rows, rank[slots])
            slot_of_rank = np.append(order, -1)  # rank len(slices): not found
            best = slot_of_rank[best_rank]
            # each row answers as the first row of its key in its partition
            rep = np.arange(n, dtype=np.int64)
            for part, at in self._firsts.items():
                prow = self._part_rows(part)
                rep[prow] = prow[at.result() if isinstance(at, Future) else at]
            pos = best[rep]
            more_rows, more_groups = _other_locations(rows, slots, best, rep)
        else:
            more_rows = more_groups = np.empty(0, np.int64)
        return KeyLocations(
            group=pos,
            group_file_ids=file_ids,
            group_partitions=parts,
            group_instants=instants,
            files_read=files_read,
            keys_read=keys_read,
            more_rows=more_rows,
            more_groups=more_groups,
        )


def _other_locations(
    rows: np.ndarray, slots: np.ndarray, best: np.ndarray, rep: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The locations of keys besides their best one (:attr:`KeyLocations.more_groups`).

    Args:
        rows, slots: per key found, the first incoming row of the key and a slot holding it
            (a slot may repeat: a key held twice by one file).
        best: per first row, the slot picked as the key's primary location.
        rep: per incoming row, the first row of its key.

    Returns:
        ``(more_rows, more_groups)``: every incoming row whose key another slot holds too,
        once per such slot (ascending rows).
    """
    if not len(rows) or int(np.bincount(rows).max()) < 2:
        return np.empty(0, np.int64), np.empty(0, np.int64)  # every key found once (no sort)
    n_slots = int(slots.max()) + 1
    pairs = np.unique(rows * n_slots + slots)  # one (first row, slot) per match
    prow, pslot = pairs // n_slots, pairs % n_slots
    other = pslot != best[prow]
    if not other.any():
        return np.empty(0, np.int64), np.empty(0, np.int64)
    prow, pslot = prow[other], pslot[other]  # sorted by first row
    # every incoming row takes the other slots of its first row
    counts = np.zeros(len(rep), np.int64)
    np.add.at(counts, prow, 1)
    per_row = counts[rep]
    out_rows = np.repeat(np.arange(len(rep), dtype=np.int64), per_row)
    starts = np.searchsorted(prow, rep)
    offsets = np.arange(len(out_rows), dtype=np.int64) - np.repeat(
        np.cumsum(per_row) - per_row, per_row
    )
    return out_rows, pslot[np.repeat(starts, per_row) + offsets]


def _first_positions(keys: pa.Array) -> np.ndarray:
    """The position of the first occurrence of each of ``keys`` among them."""
    return np.asarray(pc.index_in(keys, value_set=keys), dtype=np.int64)


def _probe(
    chunks: list[pa.Array], runs: list[tuple[int, int]], wanted: pa.Array, rows: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The file keys ``chunks`` (of the slots ``runs``: ``(slot, number of keys)`` in order)
    found among ``wanted`` (the keys of incoming ``rows``): for each key found, the incoming
    row of its first position in ``wanted`` and the slot holding it."""
    keys = pa.chunked_array(chunks, pa.string())
    at = np.asarray(pc.fill_null(pc.index_in(keys, value_set=wanted), -1), dtype=np.int64)
    hit = np.flatnonzero(at >= 0)
    if not len(hit):
        return np.empty(0, np.int64), np.empty(0, np.int64)
    slot_ids = np.array([s for s, _ in runs], np.int64)
    ends = np.cumsum([k for _, k in runs])
    return rows[at[hit]], slot_ids[np.searchsorted(ends, hit, side="right")]


#: threads reading the key columns of a lookup's files (pyarrow releases the GIL while it
#: reads and decodes), and as many probing them (:func:`_probe_pool`) meanwhile
READ_THREADS = max(1, min(8, os.cpu_count() or 1))


def ordered_map(fn: Callable[[_T], _R], items: Sequence[_T], threads: int) -> Iterator[_R]:
    """``map(fn, items)`` with up to ``threads`` calls running at once in a thread pool,
    yielded in order; at most ``2 * threads`` results are held ahead of the consumer (bounded
    memory). An exception of a call is raised when its result is reached (the calls still
    running are waited for). One thread or one item: a plain ``map``."""
    if threads <= 1 or len(items) <= 1:
        yield from map(fn, items)
        return
    ahead = 2 * threads
    with ThreadPoolExecutor(min(threads, len(items)), thread_name_prefix="hudi-keys") as pool:
        futures: deque[Future[_R]] = deque()
        it = iter(items)
        for item in it:
            futures.append(pool.submit(fn, item))
            if len(futures) >= ahead:
                break
        try:
            while futures:
                result = futures.popleft().result()
                for item in it:
                    futures.append(pool.submit(fn, item))
                    break
                yield result
        finally:
            for f in futures:
                f.cancel()


class KeyCache:
    """The record keys of base files read by the lookups of one writer task, by file.

    A task tags its input batch by batch (a table arrives as several record batches, a
    stream as many), and each batch's lookup searches the same latest slices: without a
    cache every batch reads every candidate file's keys again (a batch of 2,000 deletes
    after one of 200,000 upserts pays a second full read). A base file never changes once
    written (its name carries its write token and instant), so the keys read from one path
    are those of every later read of that path, whoever asks; the cache only bounds its
    memory: files are kept while their keys total at most ``budget_bytes`` (the rest are
    read again when asked for).

    Args:
        budget_bytes: the most key bytes (Arrow buffers) held.
    """

    #: default bound of the key bytes held by one task's cache
    BUDGET_BYTES = 256 << 20

    def __init__(self, budget_bytes: int = BUDGET_BYTES) -> None:
        self.budget_bytes = int(budget_bytes)
        self._keys: dict[tuple[str, object], pa.Array | pa.ChunkedArray] = {}
        self._bytes = 0

    def get(self, base: BaseFile, spec: LookupSpec) -> pa.Array | pa.ChunkedArray | None:
        """The keys of ``base`` read earlier under ``spec`` (None: not held)."""
        return self._keys.get((base.path, _spec_key(spec)))

    def clear(self) -> None:
        """Drop every key held (the task's lookups are over)."""
        self._keys.clear()
        self._bytes = 0

    def put(self, base: BaseFile, spec: LookupSpec, keys: pa.Array | pa.ChunkedArray) -> None:
        """Hold the keys of ``base`` read under ``spec`` if the budget allows."""
        k = (base.path, _spec_key(spec))
        if k in self._keys:
            return
        n = int(keys.nbytes)
        if self._bytes + n > self.budget_bytes:
            return
        self._keys[k] = keys
        self._bytes += n


def _spec_key(spec: LookupSpec) -> object:
    """What of a spec decides which keys a base file yields (meta column or key fields)."""
    return (spec.meta_fields, spec.record_key_fields, spec.complex_key)


def simple_lookup(
    storage: Storage,
    slices: Sequence[FileSlice],
    keys: pa.Array,
    partitions: pa.Array | None,
    spec: LookupSpec,
    cache: KeyCache | None = None,
) -> KeyLocations:
    """Locate ``keys`` in ``slices`` by reading every candidate file's keys (SIMPLE index).

    Args:
        storage: the table's storage.
        slices: the latest file slices of the candidate partitions (see
            :mod:`hudi_ds.index.lookup`); slices of other partitions than a key's are never
            matched to it unless global.
        keys: incoming record keys (strings, no nulls).
        partitions: their partition paths, or None for GLOBAL_SIMPLE (match on the key alone).
        spec: how keys are stored (:class:`LookupSpec`).
        cache: base files' keys kept between the lookups of one task (:class:`KeyCache`);
            a file whose keys it holds is not read again.

    Returns:
        :class:`KeyLocations` aligned with ``keys``. ``files_read`` counts every base and log
        file read (not the base files whose keys came from ``cache``); ``keys_read`` equals
        it (SIMPLE reads the keys of every file it opens).

    Raises:
        SchemaError: bad ``keys``/``partitions``.
        MissingFileError, CorruptFileError: a candidate file is gone or unreadable (never
            ignored: its keys would be inserted again as new records).
    """
    keys, partitions = check_input(keys, partitions)
    with _probe_pool() as pool:
        cands = Candidates(slices, keys, partitions, pool)
        jobs = [
            slot
            for slot, s in enumerate(slices)
            if cands.wants(slot) and (s.base_file is not None or reads_logs(spec, s))
        ]
        cands.expect(jobs)

        def read(slot: int) -> tuple[list[pa.Array | pa.ChunkedArray], int]:
            s = slices[slot]
            out: list[pa.Array | pa.ChunkedArray] = []
            n = 0
            if s.base_file is not None:
                held = cache.get(s.base_file, spec) if cache is not None else None
                if held is None:
                    held = base_file_keys(storage, s.base_file, spec, chunked=True)
                    n += 1
                out.append(held)
            if reads_logs(spec, s):
                lk, n_logs = log_keys(storage, s, spec)
                out.append(lk)
                n += n_logs
            return out, n

        opened = 0
        for slot, (found, n) in zip(jobs, ordered_map(read, jobs, READ_THREADS), strict=True):
            opened += n
            base = slices[slot].base_file
            if cache is not None and base is not None:
                cache.put(base, spec, found[0])
            if len(found) == 1:
                cands.add(slot, found[0])
            else:
                chunks = [c for f in found for c in _chunks(f)]
                cands.add(slot, pa.chunked_array(chunks, pa.string()))
        return cands.locate(opened, opened)


@contextmanager
def _probe_pool() -> Iterator[Executor | None]:
    """Threads for a lookup's hash probes (:class:`Candidates`), :data:`READ_THREADS` of
    them; None with one thread (the probes run in the caller)."""
    if READ_THREADS <= 1:
        yield None
        return
    with ThreadPoolExecutor(READ_THREADS, thread_name_prefix="hudi-probe") as pool:
        yield pool


def _chunks(a: pa.Array | pa.ChunkedArray) -> list[pa.Array]:
    return list(a.chunks) if isinstance(a, pa.ChunkedArray) else [a]
