"""The merge handle (COW, Java ``HoodieMergeHandle``): a new base file version of one file group.

:class:`MergeHandle` buffers the incoming rows and on close merges them with the file group's
current base file into a new base file ``<fileId>_<token>_<instant>.parquet`` (``.lance``
for a table of Lance base files; a
:class:`MergeHandle` without a base file is Hudi's ``CreateHandle``). Under a memory budget,
:meth:`~MergeHandle.flush` spills the buffer to local disk, in files partitioned by a hash of
the record key, and a merge that does not fit the budget streams the base file or runs
partition by partition of the record keys (see :class:`MergeHandle`).
:func:`merge_into_base` is the one-pass merge of incoming rows into a base file's rows.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import os
import shutil
import tempfile
import weakref
from collections.abc import Iterable, Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from hudi_ds.errors import CorruptFileError, MissingFileError, StorageError
from hudi_ds.faults import crash_point
from hudi_ds.index.bucket import java_string_hash
from hudi_ds.layout.base_file import new_base_file_writer, write_whole_base_file
from hudi_ds.layout.file_group import BaseFile
from hudi_ds.layout.lance import LanceBaseFile
from hudi_ds.layout.naming import base_file_name
from hudi_ds.layout.parquet import file_metadata
from hudi_ds.merge.engine import (
    DataPart,
    DeleteKeys,
    merge_versions,
)
from hudi_ds.metadata.column_stats import ranges_of_parquet
from hudi_ds.schema.evolution import promote_table
from hudi_ds.schema.meta import (
    COMMIT_TIME_METADATA_FIELD,
    FILENAME_METADATA_FIELD,
    RECORD_KEY_METADATA_FIELD,
    clear_meta_values,
)
from hudi_ds.storage import Storage
from hudi_ds.table.reader import read_base_file
from hudi_ds.timeline.metadata import NULL_COMMIT, WriteStat
from hudi_ds.write.bucket_layout import remember_written
from hudi_ds.write.cow_merge import StreamedBloomFilter, carried_bloom_filter, merge_touched
from hudi_ds.write.handles import (
    BufferedHandle,
    HandleContext,
    empty_deletes,
    precombine,
    set_file_name,
    stored_rows,
)
from hudi_ds.write.write_status import KeyChanges, WriteStatus


def _strings(parts: list[pa.Array]) -> pa.Array:
    """``parts`` (string arrays) as one array."""
    return pa.concat_arrays(parts) if parts else pa.array([], pa.string())


#: short-lived local files).
_IPC_OPTIONS = pa.ipc.IpcWriteOptions()
#: Knuth's multiplicative hash constant (2**32 / golden ratio). The keys of one file group share
#: their bucket (their hash modulo the bucket count), so the top bits of ``hash * constant``, not
#: the low bits of the hash, spread them over the merge's key partitions.
_SPREAD = np.uint64(0x9E3779B1)
_MAX_KEY_PARTITIONS = 256
#: Rows spill straight into ``2**_SPILL_BITS`` key partitions; the merge regroups them (unions of
#: partitions, or each split further) into as many partitions as its budget needs.
_SPILL_BITS = 4
_BASE_READ_ROWS = 64 * 1024  # most rows of one base-file batch a streamed merge reads


class _Run:
    """Rows spilled to one local Arrow IPC stream file: appended, then read back batch by batch."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.rows = 0
        self._schema: pa.Schema | None = None
        self._sink: pa.NativeFile | None = None
        self._writer: pa.ipc.RecordBatchStreamWriter | None = None

    def append(self, table: pa.Table) -> None:
        if table.num_rows == 0:
            return
        if self._writer is None:
            self._schema = table.schema
            self._sink = pa.OSFile(self.path, "wb")
            self._writer = pa.ipc.new_stream(self._sink, table.schema, options=_IPC_OPTIONS)
        elif not table.schema.equals(self._schema):
            table = table.cast(self._schema)
        self._writer.write_table(table)
        self.rows += table.num_rows

    def finish(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None
        if self._sink is not None:
            self._sink.close()
            self._sink = None

    def tables(self) -> Iterator[pa.Table]:
        """The spilled rows, one record batch at a time."""
        self.finish()
        if self.rows == 0:
            return
        with pa.OSFile(self.path, "rb") as f:
            for batch in pa.ipc.open_stream(f):
                yield pa.Table.from_batches([batch])

    def read(self) -> pa.Table | None:
        """All spilled rows (None if none)."""
        parts = list(self.tables())
        return pa.concat_tables(parts) if parts else None

    def discard(self) -> None:
        """Delete the file (its rows were read)."""
        self.finish()
        if self.rows:
            with contextlib.suppress(FileNotFoundError):
                os.remove(self.path)
        self.rows = 0


class _KeyPartitions:
    """Rows split by a hash of their record key into ``2**bits`` spill files.

    Partition ``p`` holds the keys whose spread hash has ``p`` as its top ``bits`` bits, so the
    partitions of fewer bits are unions of consecutive partitions and those of more bits split
    each partition: every version of a key stays in one partition, in write order.
    """

    def __init__(self, folder: str, name: str, bits: int) -> None:
        self.folder = folder
        self.name = name
        self.bits = bits
        self.runs = [_Run(os.path.join(folder, f"{name}-{p}.arrows")) for p in range(1 << bits)]

    def add(self, table: pa.Table) -> None:
        if table.num_rows == 0:
            return
        h = (
            java_string_hash(table.column(RECORD_KEY_METADATA_FIELD))
            .view(np.uint32)
            .astype(np.uint64)
        )
        part = (((h * _SPREAD) & np.uint64(0xFFFFFFFF)) >> np.uint64(32 - self.bits)).astype(
            np.int64
        )
        order = np.argsort(part, kind="stable")
        table = table.take(pa.array(order))
        counts = np.bincount(part, minlength=len(self.runs))
        offset = 0
        for p, n in enumerate(counts.tolist()):
            if n:
                self.runs[p].append(table.slice(offset, n))
                offset += n

    def regrouped(self, bits: int) -> Iterator[pa.Table | None]:
        """The rows of each of the ``2**bits`` key partitions in turn (None: no rows), read
        back one partition at a time; each file is deleted once read."""
        if bits <= self.bits:
            d = self.bits - bits
            for p in range(1 << bits):
                parts: list[pa.Table] = []
                for q in range(p << d, (p + 1) << d):
                    parts.extend(self.runs[q].tables())
                    self.runs[q].discard()
                yield pa.concat_tables(parts) if parts else None
            return
        for q, run in enumerate(self.runs):
            fine = _KeyPartitions(self.folder, f"{self.name}-{q}", bits)
            for t in run.tables():
                fine.add(t)
            run.discard()
            lo = q << (bits - self.bits)
            for p in range(lo, lo + (1 << (bits - self.bits))):
                yield fine.runs[p].read()
                fine.runs[p].discard()


def _prefetched(storage: Storage, base: BaseFile) -> bytes | None:
    """The whole content of a small Parquet base file on an object store, in one GET
    (:meth:`Storage.small_file_bytes`): a merge reads its footer (the size estimate), then all
    its rows, which would be a GET each (None: read through :meth:`Storage.open_input_file`).

    Raises:
        MissingFileError: the file is gone.
    """
    if base.name.extension != ".parquet":
        return None
    try:
        return storage.small_file_bytes(base.path, base.size or None)
    except FileNotFoundError as e:
        raise MissingFileError(
            f"base file {storage.full_path(base.path)} of a committed file slice is missing",
            base.path,
        ) from e


def _open_base(storage: Storage, base: BaseFile, data: bytes | None) -> pa.NativeFile:
    """The Parquet base file ``base``: from ``data`` (its prefetched bytes) or the storage
    (its listed size spares an object store a HEAD)."""
    if data is not None:
        return pa.BufferReader(data)
    return storage.open_input_file(base.path, base.size or None)


@dataclasses.dataclass(frozen=True)
class _BaseFileInfo:
    """What a merge learns of its base file before reading its rows.

    Attributes:
        arrow_bytes: estimated in-memory (Arrow) size of its rows.
        rows: their number.
        footer: its key-value footer (its bloom filter); None for a format without one.
        parquet: its parsed Parquet footer (None: not Parquet). The reads of the merge reuse
            it: parsing it again copies the bloom filter (a footer value of up to megabytes)
            out of the file each time.
    """

    arrow_bytes: int = 0
    rows: int = 0
    footer: dict[bytes, bytes] | None = None
    parquet: pq.FileMetaData | None = None


def _base_file_size(storage: Storage, base: BaseFile, data: bytes | None = None) -> _BaseFileInfo:
    """The size, rows and footers of a base file (:class:`_BaseFileInfo`), from its Parquet
    footer or Lance metadata (nothing for other formats); ``data``: its :func:`_prefetched`
    bytes."""
    if base.name.extension == ".lance":
        try:
            lance_file = LanceBaseFile(storage, base.path)
        except (OSError, ValueError) as e:
            raise CorruptFileError(
                f"cannot read base file {storage.full_path(base.path)}: {e}"
            ) from e
        # Lance pages are mostly plain values: about their Arrow size
        return _BaseFileInfo(lance_file.data_bytes, lance_file.num_rows, lance_file.footer())
    if base.name.extension != ".parquet":
        return _BaseFileInfo()
    try:
        with _open_base(storage, base, data) as f:
            md = pq.ParquetFile(f).metadata
    except StorageError:  # the store failed (after retries): the file is not damaged
        raise
    except (OSError, pa.ArrowInvalid) as e:
        raise CorruptFileError(f"cannot read base file {storage.full_path(base.path)}: {e}") from e
    return _BaseFileInfo(_arrow_bytes(md), md.num_rows, dict(md.metadata or {}), md)


#: Bytes of one value of a fixed-width Parquet type decoded to Arrow (INT96: a timestamp).
_VALUE_BYTES = {"BOOLEAN": 1, "INT32": 4, "INT64": 8, "INT96": 8, "FLOAT": 4, "DOUBLE": 8}


def _arrow_bytes(md: pq.FileMetaData) -> int:
    """Estimated in-memory (Arrow) size of a Parquet file's rows as a merge reads them (all
    columns but ``_hoodie_file_name``, :func:`_merged_columns`), from its footer.

    A plain-encoded column chunk holds about its Arrow values (a string's 4-byte length
    where Arrow has its offset), but none for its nulls, which Arrow gives a slot each; a
    dictionary-encoded one holds each distinct value once, so it decodes to its values times
    their width (a string's: the mean of its min and max value's, from the chunk's
    statistics). A file of constant meta columns and repeated strings decodes to many times
    its page bytes; one of distinct keys and numbers to about them.
    """
    total = 0
    for g in range(md.num_row_groups):
        rg = md.row_group(g)
        for i in range(rg.num_columns):
            col = rg.column(i)
            if col.path_in_schema != FILENAME_METADATA_FIELD:
                total += _chunk_arrow_bytes(col, md.schema.column(i).length)
    return total


def _chunk_arrow_bytes(col: pq.ColumnChunkMetaData, fixed_length: int | None) -> int:
    """:func:`_arrow_bytes` of one column chunk; ``fixed_length``: the bytes of a
    ``FIXED_LEN_BYTE_ARRAY`` value."""
    stored = col.total_uncompressed_size
    kind = col.physical_type
    # Arrow keeps a slot for every value, null ones too: a string's offset, a fixed width
    if kind == "BYTE_ARRAY":
        slots = 4 * col.num_values
    elif kind == "FIXED_LEN_BYTE_ARRAY":
        slots = (fixed_length or 8) * col.num_values
    else:
        slots = _VALUE_BYTES.get(kind, 8) * col.num_values
    if not col.has_dictionary_page or kind != "BYTE_ARRAY":
        return max(stored, slots)
    st = col.statistics
    ends = (st.min, st.max) if st is not None and st.has_min_max else ()
    if not ends or not all(isinstance(v, (str, bytes)) for v in ends):
        # no value lengths known: the factor measured on hudi_ds's files
        return max(2 * stored, slots)
    mean = sum(len(v.encode() if isinstance(v, str) else v) for v in ends) / 2
    return max(stored, slots + int(col.num_values * mean))


def _merged_columns(schema: pa.Schema) -> list[str]:
    """The columns a merge reads from a base file: all but ``_hoodie_file_name``, which the
    new base file sets anew on every row (:meth:`MergeHandle._file_rows`); it reads as nulls
    (decoding it costs as much as any string column)."""
    return [c for c in schema.names if c != FILENAME_METADATA_FIELD]


def _read_for_merge(
    storage: Storage,
    base: BaseFile,
    schema: pa.Schema,
    use_threads: bool = True,
    data: bytes | None = None,
    metadata: pq.FileMetaData | None = None,
) -> pa.Table:
    """All rows of a base file in ``schema``, ``_hoodie_file_name`` null
    (:func:`_merged_columns`), its footer as the schema metadata; ``data``: its
    :func:`_prefetched` bytes, ``metadata`` its parsed Parquet footer (None: parsed here)."""
    if base.name.extension not in (".parquet", ".lance"):
        return read_base_file(storage, base, schema, use_threads=use_threads)
    parts = list(_iter_base_file(storage, base, schema, None, use_threads, data, metadata))
    meta = parts[0].schema.metadata
    table = _joined(parts)
    return table.replace_schema_metadata(meta)


def _dictionary_strings(pf: pq.ParquetFile, arrow: pa.Schema, columns: list[str]) -> list[str]:
    """The string columns of ``columns`` the file stores dictionary-encoded (a dictionary page
    in every row group): they decode far faster as Arrow dictionaries, then to strings by a
    take of their few values, than straight to strings. ``arrow``: the file's Arrow schema."""
    md = pf.metadata
    leaf = {md.schema.column(i).path: i for i in range(md.num_columns)}
    out = []
    for c in columns:
        i = leaf.get(c)
        t = arrow.field(c).type
        if i is None or not (pa.types.is_string(t) or pa.types.is_large_string(t)):
            continue
        if md.num_row_groups and all(
            md.row_group(g).column(i).has_dictionary_page for g in range(md.num_row_groups)
        ):
            out.append(c)
    return out


def _decoded(batch: pa.RecordBatch) -> pa.Table:
    """``batch`` with its dictionary columns decoded to their value type."""
    table = pa.Table.from_batches([batch])
    for i, f in enumerate(table.schema):
        if pa.types.is_dictionary(f.type):
            col = table.column(i).cast(f.type.value_type)
            table = table.set_column(i, pa.field(f.name, col.type, f.nullable, f.metadata), col)
    return table


def _iter_base_file(
    storage: Storage,
    base: BaseFile,
    schema: pa.Schema,
    batch_rows: int | None,
    use_threads: bool = False,
    data: bytes | None = None,
    metadata: pq.FileMetaData | None = None,
) -> Iterator[pa.Table]:
    """The rows of a base file in ``schema``, ``batch_rows`` at a time (Parquet; None: a row
    group at a time), else all at once; ``_hoodie_file_name`` null (:func:`_merged_columns`),
    the file's footer as the schema metadata of the first table; ``data``: its
    :func:`_prefetched` bytes, ``metadata`` its parsed Parquet footer (None: parsed here)."""
    if base.name.extension == ".lance":
        yield from _iter_lance_file(storage, base, schema, batch_rows)
        return
    if base.name.extension != ".parquet":
        yield read_base_file(storage, base, schema)
        return
    try:
        with _open_base(storage, base, data) as f:
            pf = pq.ParquetFile(f, metadata=metadata)
            # built anew on every access (it decodes the stored Arrow schema): taken once
            arrow = pf.schema_arrow
            present = [c for c in _merged_columns(schema) if c in set(arrow.names)]
            dict_cols = _dictionary_strings(pf, arrow, present)
            if dict_cols:  # the footer as parsed: only the Arrow schema read differs
                pf = pq.ParquetFile(f, metadata=pf.metadata, read_dictionary=dict_cols)
            meta = file_metadata(pf, arrow)
            rows = batch_rows or max(
                (pf.metadata.row_group(g).num_rows for g in range(pf.metadata.num_row_groups)),
                default=1,
            )
            batches: Iterator[pa.Table] = (
                promote_table(_decoded(b), schema)
                for b in pf.iter_batches(
                    batch_size=max(rows, 1), columns=present, use_threads=use_threads
                )
            )
            if batch_rows is not None:
                batches = _rebatched(batches, batch_rows)
            yield from _with_footer(batches, meta, schema)
    except FileNotFoundError as e:
        raise MissingFileError(
            f"base file {storage.full_path(base.path)} of a committed file slice is missing",
            base.path,
        ) from e
    except StorageError:  # the store failed (after retries): the file is not damaged
        raise
    except (OSError, ValueError) as e:  # ArrowInvalid; UnicodeDecodeError of a bad footer
        raise CorruptFileError(f"cannot read base file {storage.full_path(base.path)}: {e}") from e


def _with_footer(
    tables: Iterable[pa.Table], meta: dict[bytes, bytes] | None, schema: pa.Schema
) -> Iterator[pa.Table]:
    """``tables``, the first carrying the base file's footer metadata ``meta`` (its bloom
    filter and key range, which the merge keeps); an empty file yields one empty table."""
    first = True
    for table in tables:
        if first:
            table = table.replace_schema_metadata(meta)
            first = False
        yield table
    if first:  # no rows
        yield schema.empty_table().replace_schema_metadata(meta)


def _iter_lance_file(
    storage: Storage, base: BaseFile, schema: pa.Schema, batch_rows: int | None
) -> Iterator[pa.Table]:
    """:func:`_iter_base_file` of a Lance base file (None: :data:`_BASE_READ_ROWS` at a time)."""
    where = storage.full_path(base.path)
    try:
        f = LanceBaseFile(storage, base.path)
        meta = f.schema.metadata
        present = [c for c in _merged_columns(schema) if c in f.names]
        tables = (
            promote_table(pa.Table.from_batches([b]), schema)
            for b in f.batches(present, batch_rows or _BASE_READ_ROWS)
        )
        yield from _with_footer(tables, meta, schema)
    except FileNotFoundError as e:
        raise MissingFileError(
            f"base file {where} of a committed file slice is missing", base.path
        ) from e
    except StorageError:
        raise
    except (OSError, ValueError) as e:
        raise CorruptFileError(f"cannot read base file {where}: {e}") from e


def _string_keys(keys: pa.ChunkedArray | pa.Array) -> pa.Array:
    """Record keys as one string array (the type a lookup of stored keys in them needs)."""
    arr = keys.combine_chunks() if isinstance(keys, pa.ChunkedArray) else keys
    return arr if arr.type == pa.string() else arr.cast(pa.string())


def _joined(tables: list[pa.Table]) -> pa.Table:
    """The tables as one (the only one as it is: no copy)."""
    return pa.concat_tables(tables) if len(tables) > 1 else tables[0]


def _rebatched(tables: Iterable[pa.Table], rows: int) -> Iterator[pa.Table]:
    """``tables`` regrouped into tables of ``rows`` rows (the last one fewer), in order.

    Parquet's batch reader ends a batch at every row group boundary where a column read as
    dictionary changes its dictionary (:func:`_dictionary_strings`): a file of several row
    groups yields slivers of a few rows there, and a streamed merge that wrote each batch as a
    row group would split its next version's row groups further at every write.
    """
    pending: list[pa.Table] = []
    held = 0
    for t in tables:
        pending.append(t)
        held += t.num_rows
        while held >= rows:
            whole = _joined(pending)
            yield whole.slice(0, rows)
            rest = whole.slice(rows)
            pending, held = ([rest] if rest.num_rows else []), rest.num_rows
    if held:
        yield _joined(pending)


class MergeHandle(BufferedHandle):
    """Writes a new base file version of one COW file group (CreateHandle when it is new).

    Memory is bounded the way Hudi's ``HoodieMergeHandle`` bounds it with an
    ``ExternalSpillableMap`` (incoming records beyond ``hoodie.memory.merge.max.size`` go to
    local disk under ``hoodie.memory.spillable.map.path``): :meth:`flush` appends the buffered
    rows to local Arrow IPC spill files, split by a hash of the record key. :meth:`close` then
    merges in one of three ways, by what fits the handle's share of the budget
    (:attr:`merge_budget`):

    * everything fits: one in-memory pass over the base file and the incoming rows;
    * the incoming rows fit, the base file does not: the base file streams batch by batch, each
      batch merging with the incoming versions of its keys, then the new keys are inserted;
    * otherwise the base file streams into the same key partitions as the spilled rows, and the
      partitions (regrouped so that each fits the share) merge one at a time.

    Every key merges once, with all its versions in write order, so the rows are those of one
    in-memory pass; the streamed results are written as consecutive row groups of the new base
    file through one Parquet writer (the row order follows the batches or partitions).
    """

    def __init__(
        self,
        ctx: HandleContext,
        partition_path: str,
        file_id: str,
        base_file: BaseFile | None,
    ) -> None:
        self.ctx = ctx
        self.partition_path = partition_path
        self.file_id = file_id
        self.base_file = base_file
        name = base_file_name(
            file_id, ctx.token, ctx.instant, ctx.options.base_file_format.extension
        )
        self.name = name
        self.path = f"{partition_path}/{name}" if partition_path else name
        self._data: list[pa.Table] = []
        self._deletes: list[pa.Table] = []
        self.buffered_bytes = 0
        self.spilled_bytes = 0
        self._spill_dir: str | None = None
        self._spilled_data: _KeyPartitions | None = None
        self._spilled_deletes: _KeyPartitions | None = None
        self._remove_spill: weakref.finalize | None = None
        self._base_batch_rows = _BASE_READ_ROWS
        #: decode the base file on Arrow's thread pool (False when handles close in parallel)
        self.read_threads = True
        #: the base file's bytes while close() merges it (_prefetched; None: read from storage)
        self._base_bytes: bytes | None = None
        #: the base file's size, rows and footers while close() merges it (_base_file_size)
        self._base = _BaseFileInfo()
        #: merges that run at once with this one (write/cow.py closes them on several threads):
        #: they share the merges' part of the task budget
        self.merges_in_flight = 1

    @property
    def merge_budget(self) -> int | None:
        """Bytes of versions one merge pass may hold: an eighth of the task budget, shared by
        the :attr:`merges_in_flight`.

        A merge pass holds about four copies of its versions (the concatenated versions, the
        merged rows, the file-name column, the Parquet encoding), and the task's other handles
        keep buffering up to a third of the budget meanwhile.
        """
        budget = self.ctx.options.memory.task_bytes
        return None if budget is None else max(budget // (8 * self.merges_in_flight), 1)

    def marker(self) -> tuple[str, str]:
        """The marker of the base file this handle writes: its path and marker kind."""
        return self.path, "MERGE" if self.base_file else "CREATE"

    def flush(self) -> None:
        """Spill the buffered rows and delete keys to local disk (write order is kept)."""
        if not self._data and not self._deletes:
            return
        data, deletes = self._spill_files()
        # one split per flush (like AppendHandle.flush, it copies the buffer about twice)
        if self._data:
            data.add(pa.concat_tables(self._data))
        if self._deletes:
            deletes.add(pa.concat_tables(self._deletes))
        self.spilled_bytes += self.buffered_bytes
        self._data, self._deletes, self.buffered_bytes = [], [], 0

    def close(self) -> WriteStatus | None:
        """Merge the rows into the new base file and describe it (None if no rows came)."""
        try:
            if not self._data and not self._deletes and self._spill_dir is None:
                return None
            if self.base_file is not None:
                self._base_bytes = _prefetched(self.ctx.storage, self.base_file)
            budget = self.merge_budget
            if self._spill_dir is None and budget is None:
                return self._close_in_memory()
            if self.base_file is not None:
                self._base = _base_file_size(self.ctx.storage, self.base_file, self._base_bytes)
            old_bytes, old_rows = self._base.arrow_bytes, self._base.rows
            # a streamed batch of the base file takes about four copies: a quarter of the share
            row_bytes = max(old_bytes // max(old_rows, 1), 1)
            rows = (budget or 0) // (4 * row_bytes)
            self._base_batch_rows = min(_BASE_READ_ROWS, max(1024, rows))
            total = self.spilled_bytes + self.buffered_bytes + old_bytes
            if self._spill_dir is None and (budget is None or total <= budget):
                return self._close_in_memory()
            if self._spill_dir is None and self.buffered_bytes <= (budget or 0):
                return self._close_streaming()
            return self._close_partitioned(total, budget or total)
        finally:
            self._base_bytes, self._base = None, _BaseFileInfo()
            self._discard_spill()

    def _spill_files(self) -> tuple[_KeyPartitions, _KeyPartitions]:
        """The spill files of rows and of delete keys (created on first use)."""
        if self._spilled_data is None or self._spilled_deletes is None:
            self._spill_dir = tempfile.mkdtemp(
                prefix=f"hudi-merge-{self.file_id}-", dir=self.ctx.options.memory.spill_dir or None
            )
            # removed at close, or when an abandoned handle (a failed task) is collected
            self._remove_spill = weakref.finalize(self, shutil.rmtree, self._spill_dir, True)
            self._spilled_data = _KeyPartitions(self._spill_dir, "data", _SPILL_BITS)
            self._spilled_deletes = _KeyPartitions(self._spill_dir, "deletes", _SPILL_BITS)
        return self._spilled_data, self._spilled_deletes

    def _discard_spill(self) -> None:
        for parts in (self._spilled_data, self._spilled_deletes):
            for run in parts.runs if parts is not None else ():
                run.finish()
        if self._remove_spill is not None:
            self._remove_spill()
        self._remove_spill = None
        self._spill_dir = self._spilled_data = self._spilled_deletes = None

    def _close_in_memory(self) -> WriteStatus:
        ctx = self.ctx
        incoming = pa.concat_tables(self._data) if self._data else ctx.schema.empty_table()
        dels = pa.concat_tables(self._deletes) if self._deletes else empty_deletes(ctx)
        self._data, self._deletes, self.buffered_bytes = [], [], 0
        old = (
            stored_rows(
                _read_for_merge(
                    ctx.storage,
                    self.base_file,
                    ctx.schema,
                    self.read_threads,
                    self._base_bytes,
                    self._base.parquet,
                ),
                ctx,
                self.partition_path,
            )
            if self.base_file is not None
            else ctx.schema.empty_table()
        )
        # only the stored rows the write names are merged (write/cow_merge.py)
        res = merge_touched(
            old, incoming, dels, ctx.merge_spec, lambda o, i, d: merge_into_base(o, i, d, ctx)
        )
        merged = self._file_rows(res.rows)
        bloom = ctx.options.bloom
        carried = None
        if bloom is not None:
            # the keys the new file adds and how many it drops (exact when none: appended)
            added, gone = res.appended, 0
            if added is None and res.inserted is not None and res.removed is not None:
                added, gone = res.inserted, len(res.removed)
            carried = carried_bloom_filter(old.schema.metadata, bloom, old.num_rows, added, gone)
        ctx.mark([self.marker()])
        footer: list[pq.FileMetaData] = []
        size = write_whole_base_file(
            ctx.options.base_file_format,
            ctx.storage,
            self.path,
            merged,
            ctx.options.codec,
            bloom,
            bloom_filter=carried,
            footer=footer,
        )
        crash_point("handle_flush")
        st = self._status(
            merged.num_rows,
            res.updates,
            res.inserts,
            res.deletes,
            size,
            footer[0] if footer else None,
        )
        if ctx.track_keys and res.inserted is not None and res.removed is not None:
            st = dataclasses.replace(st, keys=KeyChanges(res.inserted, res.removed))
        return st

    def _close_streaming(self) -> WriteStatus:
        """The incoming rows fit the share, the base file does not: stream the base file.

        As Hudi's ``HoodieMergeHandle`` iterates the old base file against the incoming records
        it holds: each batch of the base file merges with the incoming versions of its keys
        (a key has one row in a base file, so each key merges once, with all its versions);
        the incoming keys the base file lacks merge last, as inserts.
        """
        ctx = self.ctx
        incoming = pa.concat_tables(self._data) if self._data else ctx.schema.empty_table()
        dels = pa.concat_tables(self._deletes) if self._deletes else empty_deletes(ctx)
        self._data, self._deletes, self.buffered_bytes = [], [], 0
        n_in = incoming.num_rows
        # the distinct keys the write names, hashed once per batch of the base file (a few
        # thousand), each batch's keys looked up in them -- not every batch's keys hashed
        probe = pa.concat_arrays(
            [
                _string_keys(incoming.column(RECORD_KEY_METADATA_FIELD)),
                _string_keys(dels.column(RECORD_KEY_METADATA_FIELD)),
            ]
        )
        named = pc.unique(probe)
        code = np.asarray(pc.index_in(probe, value_set=named), dtype=np.int64)
        left_in = np.ones(n_in, dtype=bool)
        left_del = np.ones(dels.num_rows, dtype=bool)
        base = self.base_file
        assert base is not None

        def groups() -> Iterator[tuple[pa.Table | None, pa.Table | None, pa.Table | None]]:
            for batch in _iter_base_file(
                ctx.storage,
                base,
                ctx.schema,
                self._base_batch_rows,
                self.read_threads,
                self._base_bytes,
                self._base.parquet,
            ):
                old = stored_rows(batch, ctx, self.partition_path)
                keys = _string_keys(old.column(RECORD_KEY_METADATA_FIELD))
                at = pc.index_in(keys, value_set=named).drop_null()
                stored = np.zeros(len(named), dtype=bool)
                stored[np.asarray(at, dtype=np.int64)] = True
                hit = stored[code]
                hit_in, hit_del = hit[:n_in], hit[n_in:]
                left_in[hit_in] = False
                left_del[hit_del] = False
                yield old, incoming.filter(hit_in), dels.filter(hit_del)
            yield None, incoming.filter(left_in), dels.filter(left_del)

        return self._write_merged(groups())

    def _close_partitioned(self, total: int, budget: int) -> WriteStatus:
        """Neither fits: split everything by record key, then merge one partition at a time."""
        ctx = self.ctx
        self.flush()  # every incoming row on disk: the merge holds one partition at a time
        data, deletes = self._spill_files()
        assert self._spill_dir is not None
        n_parts = min(_MAX_KEY_PARTITIONS, max(2, math.ceil(total / budget)))
        bits = (n_parts - 1).bit_length()
        old_parts = _KeyPartitions(self._spill_dir, "base", bits)
        if self.base_file is not None:
            for t in _iter_base_file(
                ctx.storage,
                self.base_file,
                ctx.schema,
                self._base_batch_rows,
                self.read_threads,
                self._base_bytes,
                self._base.parquet,
            ):
                old_parts.add(stored_rows(t, ctx, self.partition_path))
        return self._write_merged(
            zip(
                old_parts.regrouped(bits),
                data.regrouped(bits),
                deletes.regrouped(bits),
                strict=True,
            )
        )

    def _write_merged(
        self, groups: Iterable[tuple[pa.Table | None, pa.Table | None, pa.Table | None]]
    ) -> WriteStatus:
        """Merge each ``(base rows, incoming rows, delete keys)`` group (groups share no key)
        and write the results as consecutive row groups of the new base file."""
        ctx = self.ctx
        ctx.mark([self.marker()])
        bloom = ctx.options.bloom
        carry = self._streamed_bloom_filter()
        writer = new_base_file_writer(
            ctx.options.base_file_format,
            ctx.storage,
            self.path,
            ctx.options.codec,
            bloom,
            bloom_filter=carry.filter if carry is not None else None,
        )
        n_rows = n_updates = n_inserts = n_deleted = 0
        # the key changes of the groups (they share no key): their union is the file's
        inserted: list[pa.Array] | None = [] if ctx.track_keys else None
        removed: list[pa.Array] = []
        # merged rows are written in row groups of at least a base-file batch: a group's
        # merge (the inserts, a small key partition) does not become a row group of its own,
        # which later reads and merges of the file would pay for batch after batch
        pending: list[pa.Table] = []
        held = 0
        try:
            for old, incoming, dels in groups:
                if not any(t is not None and t.num_rows for t in (old, incoming, dels)):
                    continue
                res = merge_touched(
                    old if old is not None else ctx.schema.empty_table(),
                    incoming if incoming is not None else ctx.schema.empty_table(),
                    dels if dels is not None else empty_deletes(ctx),
                    ctx.merge_spec,
                    lambda o, i, d: merge_into_base(o, i, d, ctx),
                )
                if inserted is not None:
                    if res.inserted is None or res.removed is None:
                        inserted = None  # a group that does not tell: the file is read again
                    else:
                        inserted.append(res.inserted)
                        removed.append(res.removed)
                merged, u, i, d = res.rows, res.updates, res.inserts, res.deletes
                if carry is not None:
                    carry.written(
                        _string_keys(merged.column(RECORD_KEY_METADATA_FIELD)),
                        res.inserted if res.removed is not None else None,
                        len(res.removed) if res.removed is not None else 0,
                    )
                del old, incoming, dels, res
                if merged.num_rows:
                    pending.append(self._file_rows(merged))
                    held += merged.num_rows
                n_rows += merged.num_rows
                n_updates, n_inserts, n_deleted = n_updates + u, n_inserts + i, n_deleted + d
                del merged
                if held >= self._base_batch_rows:
                    writer.write(_joined(pending), keys_added=carry is not None)
                    pending, held = [], 0
            if pending:
                writer.write(_joined(pending), keys_added=carry is not None)
                pending = []
            if carry is not None:
                carry.finish()
            size = writer.close(ctx.schema)
        except BaseException:
            writer.abort()
            raise
        crash_point("handle_flush")
        st = self._status(n_rows, n_updates, n_inserts, n_deleted, size, writer.metadata)
        if inserted is not None:
            st = dataclasses.replace(st, keys=KeyChanges(_strings(inserted), _strings(removed)))
        return st

    def _streamed_bloom_filter(self) -> StreamedBloomFilter | None:
        """The new file's bloom filter of a merge written group by group: the old file's
        carried when it can be (:func:`~hudi_ds.write.cow_merge.carried_bloom_filter`), the
        written keys kept meanwhile within a quarter of the merge's share (None: no filter,
        or no old file to carry one from)."""
        bloom = self.ctx.options.bloom
        if bloom is None or self.base_file is None:
            return None
        budget = self.merge_budget
        return StreamedBloomFilter(
            self._base.footer,
            bloom,
            self._base.rows,
            budget // 4 if budget is not None else 1 << 62,
        )

    def _file_rows(self, merged: pa.Table) -> pa.Table:
        """Merged rows as the new base file stores them: its file name set; without meta
        fields the other meta values null (Java ``HoodieMergeHandle.writeToFile``)."""
        rows = set_file_name(merged, self.name)
        if self.ctx.options.populate_meta_fields:
            return rows
        return clear_meta_values(rows, file_name=True)

    def _status(
        self,
        n_rows: int,
        n_updates: int,
        n_inserts: int,
        n_deleted: int,
        size: int,
        footer: pq.FileMetaData | None,
    ) -> WriteStatus:
        """The status of the written file; with the table's column stats, its ranges from
        ``footer`` (the Parquet footer as written: nothing is read back), whose keys also serve
        the next write's bucket-count check (:func:`remember_written`)."""
        if footer is not None:
            remember_written(self.ctx.storage, self.path, size, footer)
        stat = WriteStat(
            file_id=self.file_id,
            path=self.path,
            prev_commit=self.base_file.instant_time if self.base_file else NULL_COMMIT,
            num_writes=n_rows,
            num_deletes=n_deleted,
            num_update_writes=n_updates,
            num_inserts=n_inserts,
            total_write_bytes=size,
            partition_path=self.partition_path,
            file_size_in_bytes=size,
        )
        columns = self.ctx.stats_columns
        ranges = (
            tuple(ranges_of_parquet(footer, self.name, columns))
            if columns is not None and footer is not None
            else None
        )
        kind = "merge" if self.base_file else "create"
        return WriteStatus(stat, kind, self.ctx.token, column_ranges=ranges)


def merge_into_base(
    old: pa.Table, incoming: pa.Table, dels: pa.Table, ctx: HandleContext
) -> tuple[pa.Table, int, int, int]:
    """Merge incoming rows and deletes (write order) into a base file's rows, in one pass.

    Returns ``(rows, updates, inserts, deletes)``: the surviving rows (rows the incoming
    versions did not change keep their meta columns), how many existing keys the write
    changed, how many keys it inserted, and how many existing keys it deleted.
    """
    n_old = old.num_rows
    partial = ctx.partial_columns is not None
    if ctx.merge_spec.payload_precombine and not partial:
        # Java 0.x de-duplicates the batch with the payload's preCombine before it meets the
        # stored records (HoodieWriteHelper.deduplicateRecords): greatest ordering value first
        incoming, dels = precombine(incoming, dels, ctx.merge_spec)
    res = merge_versions(
        [old, DataPart(ctx.carried(incoming), partial=partial), DeleteKeys.from_table(dels)],
        ctx.merge_spec,
        ctx.schema,
        has_base=True,
    )
    rows = res.rows
    if n_old == 0:
        return rows, 0, rows.num_rows, 0
    existed = np.asarray(
        pc.is_in(
            rows.column(RECORD_KEY_METADATA_FIELD),
            old.column(RECORD_KEY_METADATA_FIELD).combine_chunks(),
        ),
        dtype=bool,
    )
    touched = np.asarray(
        pc.equal(rows.column(COMMIT_TIME_METADATA_FIELD), ctx.instant).fill_null(False), dtype=bool
    )
    n_updates = int((existed & touched).sum())
    n_inserts = int((~existed).sum())
    n_deleted = n_old - int(existed.sum())
    return rows, n_updates, n_inserts, max(n_deleted, 0)
