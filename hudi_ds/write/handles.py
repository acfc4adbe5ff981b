"""Write handles: one per file group a task touches (Java ``HoodieAppendHandle`` & co).

* :class:`AppendHandle` (MOR): buffers Arrow slices of prepared rows and delete keys, and on
  :meth:`~AppendHandle.flush` pre-combines them and appends a data block (Parquet or Avro) and a
  delete block to its own new log file ``.<fileId>_<baseInstant>.log.<version>_<token>``
  (table version 6: the slice's base instant and the next version; 8 and 9: the writing
  deltacommit's own instant, version 1 -- readers place it by its completion time).
* :class:`MergeHandle` (COW): buffers the incoming rows and on close merges them with the
  file group's current base file into a new base file ``<fileId>_<token>_<instant>.parquet``
  (a :class:`MergeHandle` without a base file is Hudi's ``CreateHandle``). Under a memory
  budget, :meth:`~MergeHandle.flush` spills the buffer to local disk and a merge that does not
  fit the budget runs partition by partition of the record keys (see :class:`MergeHandle`).

Both close into a :class:`~hudi_ds.write.write_status.WriteStatus`. Rows reach a handle already
prepared (meta columns set except ``_hoodie_file_name``, which the handle fills). In a table
without meta fields (``hoodie.populate.meta.fields=false``, Hudi's virtual keys) the handles
merge by those prepared keys too, key the stored rows they read from the record key fields
(:func:`stored_rows`), and write the meta columns with null values
(:func:`hudi_ds.schema.meta.clear_meta_values`), as Java does.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import os
import shutil
import tempfile
import weakref
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from hudi_ds.errors import CorruptFileError, MissingFileError, StorageError
from hudi_ds.faults import crash_point
from hudi_ds.index.bucket import java_string_hash
from hudi_ds.keygen import with_virtual_keys
from hudi_ds.layout.file_group import BaseFile
from hudi_ds.layout.naming import base_file_name, file_name_of, log_file_name
from hudi_ds.layout.parquet import BaseFileWriter, write_base_file
from hudi_ds.log.writer import (
    encode_avro_data_block,
    encode_delete_block,
    encode_parquet_data_block,
)
from hudi_ds.merge.engine import (
    DataPart,
    DeleteKeys,
    combines_in_groups,
    merge_versions,
)
from hudi_ds.merge.modes import MergeSpec
from hudi_ds.schema.evolution import promote_table
from hudi_ds.schema.meta import (
    COMMIT_TIME_METADATA_FIELD,
    FILENAME_METADATA_FIELD,
    IS_DELETED_FIELD,
    META_FIELDS,
    PARTITION_PATH_METADATA_FIELD,
    RECORD_KEY_METADATA_FIELD,
    clear_meta_values,
)
from hudi_ds.storage import Storage
from hudi_ds.storage_types import OutputStream
from hudi_ds.table.reader import read_base_file
from hudi_ds.timeline.metadata import NULL_COMMIT, WriteStat
from hudi_ds.write.cow_merge import carried_bloom_filter, merge_touched
from hudi_ds.write.markers import create_marker
from hudi_ds.write.options import ResolvedOptions
from hudi_ds.write.write_status import KeyChanges, WriteStatus

DELETE_ORDERING = "_ordering_value"


@dataclass(frozen=True)
class HandleContext:
    """What every handle of one task attempt shares (small, picklable)."""

    storage: Storage
    instant: str
    token: str
    schema: pa.Schema  # full record schema, meta fields first
    avro_schema: str  # the same as Avro JSON (log block SCHEMA header)
    options: ResolvedOptions  # block format, codec, ordering field, merger, memory budget
    partial_columns: tuple[str, ...] | None = None  # partial update write: the data columns
    dictionary_columns: tuple[str, ...] | None = None  # chosen once per task from its data
    #: merge handles report the keys each new base file adds and drops (WriteStatus.keys),
    #: for a writer's state index
    track_keys: bool = False

    @property
    def merge_spec(self) -> MergeSpec:
        """The table's merge spec."""
        return self.options.merge

    def carried(self, table: pa.Table) -> pa.Table:
        """The columns incoming rows carry (all, unless this is a partial update write)."""
        if self.partial_columns is None:
            return table
        keep = set(META_FIELDS) | set(self.partial_columns)
        return table.select([c for c in table.column_names if c in keep])


def _constant(value: str, n: int) -> pa.Array:
    return pa.repeat(pa.scalar(value, pa.string()), n)


def _set_file_name(table: pa.Table, name: str) -> pa.Table:
    idx = table.schema.get_field_index(FILENAME_METADATA_FIELD)
    return table.set_column(idx, table.schema.field(idx), _constant(name, table.num_rows))


def stored_rows(table: pa.Table, ctx: HandleContext, partition_path: str) -> pa.Table:
    """Rows read from a base file of ``partition_path``, keyed for merging: a table without
    meta fields stores no keys, so they are built from its record key fields."""
    o = ctx.options
    if o.populate_meta_fields or table.num_rows == 0:
        return table
    return with_virtual_keys(table, o.keys.record_key_fields, o.keys.complex_key, partition_path)


def precombine(
    data: pa.Table,
    deletes: pa.Table,
    spec: MergeSpec,
    partial_columns: tuple[str, ...] | None = None,
) -> tuple[pa.Table, pa.Table]:
    """Keep one version per record key among ``data`` rows and ``deletes`` (write order).

    Under a merger that is not associative (or a partial update write under event time) the
    versions are all kept: readers fold them one by one. A payload table of Java 0.x semantics
    (:attr:`~hudi_ds.merge.modes.MergeSpec.payload_precombine`) keeps the version with the
    greatest ordering value, ties to the later one, as ``OverwriteWithLatestAvroPayload.preCombine``
    does in ``HoodieWriteHelper.deduplicateRecords``; a partial update write (a Hudi 1.x
    feature) keeps the commit-time fold.
    """
    ordering_field = spec.ordering_field
    n_data, n_del = data.num_rows, deletes.num_rows
    if n_data + n_del == 0 or not combines_in_groups(spec, partial_columns is not None):
        return data, deletes
    b = spec.builtin
    marker_col = b.delete_field if b is not None and b.delete_field in data.column_names else None
    # the common case: no key twice among the rows and the delete keys, nothing to combine
    # (a hash count, no sort): every version is its own key, as merge_versions would find; a
    # row flagged ``_hoodie_is_deleted`` is then the delete of its key (a built-in merger's
    # only version of a key: BuiltinMerger.merge_batches keeps the live ones, in order)
    flagged = IS_DELETED_FIELD in data.column_names
    if (
        marker_col is None
        and (not flagged or (b is not None and partial_columns is None))
        and pc.count_distinct(
            pa.chunked_array(
                [
                    *data.column(RECORD_KEY_METADATA_FIELD).cast(pa.string()).chunks,
                    *deletes.column(RECORD_KEY_METADATA_FIELD).cast(pa.string()).chunks,
                ],
                pa.string(),
            )
        ).as_py()
        == n_data + n_del
    ):
        if not flagged:
            return data, deletes
        flag = pc.fill_null(data.column(IS_DELETED_FIELD), False)
        if not pc.any(flag).as_py():
            return data, deletes
        dead = np.asarray(flag.combine_chunks(), dtype=bool)
        return data.filter(pa.array(~dead)), _with_delete_entries(
            deletes, data, np.flatnonzero(dead), ordering_field
        )
    full = data
    if partial_columns is not None:
        keep = set(META_FIELDS) | set(partial_columns)
        data = data.select([c for c in data.column_names if c in keep])
    res = merge_versions(
        [DataPart(data, partial=partial_columns is not None), DeleteKeys.from_table(deletes)],
        spec,
        full.schema,
        spec.precombine_props() if partial_columns is None else None,
    )
    if len(res.winners) == n_data and len(res.deleted) == n_del:
        return full, deletes  # every version is its own key
    dead_data = res.deleted[res.deleted < n_data]
    dels = deletes.take(pa.array(res.deleted[res.deleted >= n_data] - n_data, pa.int64()))
    return res.rows, _with_delete_entries(dels, full, dead_data, ordering_field)


def _with_delete_entries(
    deletes: pa.Table, data: pa.Table, dead: np.ndarray, ordering_field: str | None
) -> pa.Table:
    """``deletes`` followed by the delete entries of the ``dead`` rows of ``data`` (rows that
    are deletes by their marker columns: written as delete entries with their ordering value)."""
    if not len(dead):
        return deletes
    rows = data.take(pa.array(dead, pa.int64()))
    otype = deletes.schema.field(DELETE_ORDERING).type
    if ordering_field and ordering_field in rows.column_names and not pa.types.is_null(otype):
        ov = rows.column(ordering_field).combine_chunks()
        ov = ov.cast(otype) if ov.type != otype else ov
    else:
        ov = pa.nulls(rows.num_rows, otype)
    extra = pa.Table.from_arrays(
        [
            rows.column(RECORD_KEY_METADATA_FIELD).combine_chunks().cast(pa.string()),
            rows.column(PARTITION_PATH_METADATA_FIELD).combine_chunks().cast(pa.string()),
            ov,
        ],
        schema=deletes.schema,
    )
    return pa.concat_tables([deletes, extra]) if deletes.num_rows else extra


@lru_cache(maxsize=64)
def partial_avro_schema(avro_json: str, columns: tuple[str, ...]) -> str:
    """The record schema ``avro_json`` restricted to ``columns`` (field order kept)."""
    doc = json.loads(avro_json)
    keep = set(columns)
    doc["fields"] = [f for f in doc["fields"] if f["name"] in keep]
    return json.dumps(doc, separators=(",", ":"))


class _Buffered:
    """The row buffer of a handle: prepared rows and delete keys, with their Arrow size."""

    _data: list[pa.Table]
    _deletes: list[pa.Table]
    buffered_bytes: int

    def write(self, data: pa.Table | None, deletes: pa.Table | None = None) -> None:
        """Buffer prepared rows (and delete keys) for this file group."""
        if data is not None and data.num_rows:
            self._data.append(data)
            self.buffered_bytes += data.nbytes
        if deletes is not None and deletes.num_rows:
            self._deletes.append(deletes)
            self.buffered_bytes += deletes.nbytes


class AppendHandle(_Buffered):
    """Appends the rows of one MOR file group to a new log file of this task attempt.

    ``base_instant`` names the log file and is its write stat's ``prevCommit``: the slice's
    base instant on table version 6, the writing instant on 8 and 9 (as Java 1.x does).

    In a table without meta fields its data blocks carry the meta columns with null values, as
    Java's (``HoodieAppendHandle.populateMetadataFields``), unless :attr:`staging`.
    """

    #: the log file is a staged one, read back by the commit (:mod:`hudi_ds.write.cow`): its
    #: rows keep their meta values, the keys the commit merges by
    staging = False

    def __init__(
        self,
        ctx: HandleContext,
        partition_path: str,
        file_id: str,
        base_instant: str,
        log_version: int,
        base_file_name: str | None,
        is_new: bool,
    ) -> None:
        self.ctx = ctx
        self.partition_path = partition_path
        self.file_id = file_id
        self.base_instant = base_instant
        self.is_new = is_new
        self.base_file_name = base_file_name or ""
        name = log_file_name(file_id, base_instant, log_version, ctx.token)
        self.log_version = log_version
        self.path = f"{partition_path}/{name}" if partition_path else name
        self._data: list[pa.Table] = []
        self._deletes: list[pa.Table] = []
        self.buffered_bytes = 0
        self._out: OutputStream | None = None
        self._written = 0
        self.num_writes = 0
        self.num_deletes = 0
        self.blocks = 0

    def flush(self) -> None:
        """Pre-combine the buffer and append it as log blocks."""
        if not self._data and not self._deletes:
            return
        ctx = self.ctx
        data = pa.concat_tables(self._data) if self._data else ctx.schema.empty_table()
        dels = pa.concat_tables(self._deletes) if self._deletes else _empty_deletes(ctx)
        self._data, self._deletes, self.buffered_bytes = [], [], 0
        data, dels = precombine(data, dels, ctx.merge_spec, ctx.partial_columns)
        out = self._stream()
        if data.num_rows:
            if ctx.options.populate_meta_fields or self.staging:
                data = _set_file_name(data, self.file_id)
            else:
                data = clear_meta_values(data, file_name=False)
            data = ctx.carried(data)
            partial = ctx.partial_columns is not None
            avro_schema = (
                partial_avro_schema(ctx.avro_schema, tuple(data.column_names))
                if partial
                else ctx.avro_schema
            )
            if ctx.options.block_format == "avro":
                block = encode_avro_data_block(data, ctx.instant, avro_schema, partial=partial)
            else:
                dict_cols = (
                    [c for c in ctx.dictionary_columns if c in data.column_names]
                    if ctx.dictionary_columns is not None
                    else None
                )
                block = encode_parquet_data_block(
                    data,
                    ctx.instant,
                    avro_schema,
                    compression=ctx.options.codec,
                    dictionary_columns=dict_cols,
                    partial=partial,
                )
            out.write(block)
            crash_point("handle_flush")
            self._written += len(block)
            self.blocks += 1
            self.num_writes += data.num_rows
        if dels.num_rows:
            block = encode_delete_block(
                dels.column(RECORD_KEY_METADATA_FIELD).combine_chunks(),
                dels.column(PARTITION_PATH_METADATA_FIELD).combine_chunks(),
                dels.column(DELETE_ORDERING).combine_chunks(),
                ctx.instant,
                ctx.avro_schema,
            )
            out.write(block)
            crash_point("handle_flush")
            self._written += len(block)
            self.blocks += 1
            self.num_deletes += dels.num_rows

    def _stream(self) -> OutputStream:
        if self._out is None:
            create_marker(self.ctx.storage, self.ctx.instant, self.path, "APPEND")
            self._out = self.ctx.storage.open_output_stream(self.path)
        return self._out

    def close(self) -> WriteStatus | None:
        """Flush, close the log file and describe it (None if nothing was written)."""
        self.flush()
        if self._out is None:
            return None
        self._out.close()
        stat = WriteStat(
            file_id=self.file_id,
            path=self.path,
            prev_commit=NULL_COMMIT if self.is_new else self.base_instant,
            num_writes=self.num_writes,
            num_deletes=self.num_deletes,
            num_update_writes=0 if self.is_new else self.num_writes,
            num_inserts=self.num_writes if self.is_new else 0,
            total_write_bytes=self._written,
            partition_path=self.partition_path,
            total_log_records=self.num_writes + self.num_deletes,
            total_log_blocks=self.blocks,
            file_size_in_bytes=self._written,
            log_version=self.log_version,
            log_offset=0,
            base_file=self.base_file_name,
            log_files=[file_name_of(self.path)],
        )
        return WriteStatus(stat, "append", self.ctx.token)


def _strings(parts: list[pa.Array]) -> pa.Array:
    """``parts`` (string arrays) as one array."""
    return pa.concat_arrays(parts) if parts else pa.array([], pa.string())


def _empty_deletes(ctx: HandleContext) -> pa.Table:
    ordering = ctx.merge_spec.ordering_field
    otype = (
        ctx.schema.field(ordering).type
        if ordering and ctx.schema.get_field_index(ordering) >= 0
        else pa.null()
    )
    return delete_schema(otype).empty_table()


def delete_schema(ordering_type: pa.DataType) -> pa.Schema:
    """Schema of the delete-key tables handles receive."""
    return pa.schema(
        [
            pa.field(RECORD_KEY_METADATA_FIELD, pa.string()),
            pa.field(PARTITION_PATH_METADATA_FIELD, pa.string()),
            pa.field(DELETE_ORDERING, ordering_type),
        ]
    )


def delete_keys(
    schema: pa.Schema,
    keys: pa.Array,
    parts: pa.Array,
    ordering: pa.ChunkedArray | pa.Array | None = None,
) -> pa.Table:
    """A delete-key table of :func:`delete_schema` ``schema``: ``keys`` in ``parts`` with their
    ordering values (None: null, a natural-order delete)."""
    otype = schema.field(DELETE_ORDERING).type
    if ordering is None:
        ov = pa.nulls(len(keys), otype)
    else:
        ov = ordering.combine_chunks() if isinstance(ordering, pa.ChunkedArray) else ordering
        ov = ov.cast(otype) if ov.type != otype else ov
    return pa.Table.from_arrays(
        [keys.cast(pa.string()), parts.cast(pa.string()), ov], schema=schema
    )


#: Spill files hold uncompressed Arrow IPC streams (LZ4 doubled the merge time; they are
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


def _base_file_size(storage: Storage, base: BaseFile) -> tuple[int, int]:
    """Estimated in-memory (Arrow) size of a base file's rows and their number, from its
    Parquet footer (``(0, 0)`` for other formats)."""
    if base.name.extension != ".parquet":
        return 0, 0
    try:
        with storage.open_input_file(base.path, base.size or None) as f:  # (no HEAD: listed)
            md = pq.ParquetFile(f).metadata
            size = sum(md.row_group(i).total_byte_size for i in range(md.num_row_groups))
    except StorageError:  # the store failed (after retries): the file is not damaged
        raise
    except (OSError, pa.ArrowInvalid) as e:
        raise CorruptFileError(f"cannot read base file {storage.full_path(base.path)}: {e}") from e
    # encoded pages (dictionaries, run lengths) are smaller than the decoded Arrow columns:
    # measured 1.6x for hudi_ds base files as a merge reads them (2.3x with the constant
    # _hoodie_file_name, which it does not read: _merged_columns)
    return 2 * size, md.num_rows


def _merged_columns(schema: pa.Schema) -> list[str]:
    """The columns a merge reads from a base file: all but ``_hoodie_file_name``, which the
    new base file sets anew on every row (:meth:`MergeHandle._file_rows`); it reads as nulls
    (decoding it costs as much as any string column)."""
    return [c for c in schema.names if c != FILENAME_METADATA_FIELD]


def _read_for_merge(
    storage: Storage, base: BaseFile, schema: pa.Schema, use_threads: bool = True
) -> pa.Table:
    """All rows of a base file in ``schema``, ``_hoodie_file_name`` null
    (:func:`_merged_columns`), its footer as the schema metadata."""
    if base.name.extension != ".parquet":
        return read_base_file(storage, base, schema, use_threads=use_threads)
    parts = list(_iter_base_file(storage, base, schema, None, use_threads))
    meta = parts[0].schema.metadata
    table = _joined(parts)
    return table.replace_schema_metadata(meta)


def _dictionary_strings(pf: pq.ParquetFile, columns: list[str]) -> list[str]:
    """The string columns of ``columns`` the file stores dictionary-encoded (a dictionary page
    in every row group): they decode far faster as Arrow dictionaries, then to strings by a
    take of their few values, than straight to strings."""
    md = pf.metadata
    arrow = pf.schema_arrow
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
) -> Iterator[pa.Table]:
    """The rows of a base file in ``schema``, ``batch_rows`` at a time (Parquet; None: a row
    group at a time), else all at once; ``_hoodie_file_name`` null (:func:`_merged_columns`),
    the file's footer as the schema metadata of the first table."""
    if base.name.extension != ".parquet":
        yield read_base_file(storage, base, schema)
        return
    try:
        with storage.open_input_file(base.path) as f:
            pf = pq.ParquetFile(f)
            names = set(pf.schema_arrow.names)
            present = [c for c in _merged_columns(schema) if c in names]
            dict_cols = _dictionary_strings(pf, present)
            if dict_cols:
                pf = pq.ParquetFile(f, read_dictionary=dict_cols)
            meta = pf.schema_arrow.metadata
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
            first = True
            for table in batches:
                if first:
                    table = table.replace_schema_metadata(meta)
                    first = False
                yield table
            if first:  # no rows
                yield schema.empty_table().replace_schema_metadata(meta)
    except FileNotFoundError as e:
        raise MissingFileError(
            f"base file {storage.full_path(base.path)} of a committed file slice is missing",
            base.path,
        ) from e
    except StorageError:  # the store failed (after retries): the file is not damaged
        raise
    except (OSError, ValueError) as e:  # ArrowInvalid; UnicodeDecodeError of a bad footer
        raise CorruptFileError(f"cannot read base file {storage.full_path(base.path)}: {e}") from e


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


class MergeHandle(_Buffered):
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
        name = base_file_name(file_id, ctx.token, ctx.instant)
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
            budget = self.merge_budget
            if self._spill_dir is None and budget is None:
                return self._close_in_memory()
            old_bytes, old_rows = (
                _base_file_size(self.ctx.storage, self.base_file) if self.base_file else (0, 0)
            )
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
        dels = pa.concat_tables(self._deletes) if self._deletes else _empty_deletes(ctx)
        self._data, self._deletes, self.buffered_bytes = [], [], 0
        old = (
            stored_rows(
                _read_for_merge(ctx.storage, self.base_file, ctx.schema, self.read_threads),
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
        carried = (
            carried_bloom_filter(old.schema.metadata, bloom, old.num_rows, res.appended)
            if bloom is not None
            else None
        )
        create_marker(ctx.storage, ctx.instant, self.path, "MERGE" if self.base_file else "CREATE")
        size = write_base_file(
            ctx.storage, self.path, merged, ctx.options.codec, bloom, bloom_filter=carried
        )
        crash_point("handle_flush")
        st = self._status(merged.num_rows, res.updates, res.inserts, res.deletes, size)
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
        dels = pa.concat_tables(self._deletes) if self._deletes else _empty_deletes(ctx)
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
                ctx.storage, base, ctx.schema, self._base_batch_rows, self.read_threads
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
                ctx.storage, self.base_file, ctx.schema, self._base_batch_rows, self.read_threads
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
        create_marker(ctx.storage, ctx.instant, self.path, "MERGE" if self.base_file else "CREATE")
        writer = BaseFileWriter(ctx.storage, self.path, ctx.options.codec, ctx.options.bloom)
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
                    dels if dels is not None else _empty_deletes(ctx),
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
                del old, incoming, dels, res
                if merged.num_rows:
                    pending.append(self._file_rows(merged))
                    held += merged.num_rows
                n_rows += merged.num_rows
                n_updates, n_inserts, n_deleted = n_updates + u, n_inserts + i, n_deleted + d
                del merged
                if held >= self._base_batch_rows:
                    writer.write(_joined(pending))
                    pending, held = [], 0
            if pending:
                writer.write(_joined(pending))
                pending = []
            size = writer.close(ctx.schema)
        except BaseException:
            writer.abort()
            raise
        crash_point("handle_flush")
        st = self._status(n_rows, n_updates, n_inserts, n_deleted, size)
        if inserted is not None:
            st = dataclasses.replace(st, keys=KeyChanges(_strings(inserted), _strings(removed)))
        return st

    def _file_rows(self, merged: pa.Table) -> pa.Table:
        """Merged rows as the new base file stores them: its file name set; without meta
        fields the other meta values null (Java ``HoodieMergeHandle.writeToFile``)."""
        rows = _set_file_name(merged, self.name)
        if self.ctx.options.populate_meta_fields:
            return rows
        return clear_meta_values(rows, file_name=True)

    def _status(
        self, n_rows: int, n_updates: int, n_inserts: int, n_deleted: int, size: int
    ) -> WriteStatus:
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
        return WriteStatus(stat, "merge" if self.base_file else "create", self.ctx.token)


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
