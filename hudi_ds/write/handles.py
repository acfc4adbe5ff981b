"""Write handles: one per file group a task touches (Java ``HoodieAppendHandle`` & co).

* :class:`AppendHandle` (MOR): buffers Arrow slices of prepared rows and delete keys, and on
  :meth:`~AppendHandle.flush` pre-combines them and appends a data block (Parquet or Avro) and a
  delete block to its own new log file ``.<fileId>_<baseInstant>.log.<version>_<token>``.
* :class:`MergeHandle` (COW): buffers the incoming rows and on close merges them with the
  file group's current base file into a new base file ``<fileId>_<token>_<instant>.parquet``
  (a :class:`MergeHandle` without a base file is Hudi's ``CreateHandle``).

Both close into a :class:`~hudi_ds.write.write_status.WriteStatus`. Rows reach a handle already
prepared (meta columns set except ``_hoodie_file_name``, which the handle fills).
"""

from __future__ import annotations

import io
import json
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from hudi_ds.faults import crash_point
from hudi_ds.layout.file_group import BaseFile
from hudi_ds.layout.naming import base_file_name, log_file_name
from hudi_ds.log.writer import (
    encode_avro_data_block,
    encode_delete_block,
    encode_parquet_data_block,
    parquet_write_options,
)
from hudi_ds.merge.engine import (
    DataPart,
    DeleteKeys,
    combines_in_groups,
    merge_versions,
    resolve_spec,
)
from hudi_ds.merge.modes import MergeSpec
from hudi_ds.schema import META_FIELDS
from hudi_ds.storage import Storage
from hudi_ds.table.reader import read_base_file
from hudi_ds.timeline.metadata import NULL_COMMIT, WriteStat
from hudi_ds.write.markers import create_marker
from hudi_ds.write.write_status import WriteStatus

RECORD_KEY = "_hoodie_record_key"
FILE_NAME = "_hoodie_file_name"
DELETE_KEY = "_hoodie_record_key"
DELETE_PARTITION = "_hoodie_partition_path"
DELETE_ORDERING = "_ordering_value"


@dataclass(frozen=True)
class HandleContext:
    """What every handle of one task attempt shares (small, picklable)."""

    storage: Storage
    instant: str
    token: str
    schema: pa.Schema  # full record schema, meta fields first
    avro_schema: str  # the same as Avro JSON (log block SCHEMA header)
    block_format: str  # "parquet" | "avro"
    codec: str
    ordering_field: str | None
    merge_mode: str
    dictionary_columns: tuple[str, ...] | None = None  # chosen once per task from its data
    merge: MergeSpec | None = None  # the table's merger (default: built-in of merge_mode)
    partial_columns: tuple[str, ...] | None = None  # partial update write: the data columns

    @property
    def merge_spec(self) -> MergeSpec:
        """The merge spec (``merge``, or the built-in one of ``merge_mode``)."""
        return resolve_spec(self.merge, self.merge_mode, self.ordering_field)

    def carried(self, table: pa.Table) -> pa.Table:
        """The columns incoming rows carry (all, unless this is a partial update write)."""
        if self.partial_columns is None:
            return table
        keep = set(META_FIELDS) | set(self.partial_columns)
        return table.select([c for c in table.column_names if c in keep])


def _constant(value: str, n: int) -> pa.Array:
    return pa.repeat(pa.scalar(value, pa.string()), n)


def _set_file_name(table: pa.Table, name: str) -> pa.Table:
    idx = table.schema.get_field_index(FILE_NAME)
    return table.set_column(idx, table.schema.field(idx), _constant(name, table.num_rows))


def precombine(
    data: pa.Table,
    deletes: pa.Table,
    ordering_field: str | None,
    mode: str,
    spec: MergeSpec | None = None,
    partial_columns: tuple[str, ...] | None = None,
) -> tuple[pa.Table, pa.Table]:
    """Keep one version per record key among ``data`` rows and ``deletes`` (write order).

    Under a merger that is not associative (or a partial update write under event time) the
    versions are all kept: readers fold them one by one.
    """
    spec = resolve_spec(spec, mode, ordering_field)
    n_data, n_del = data.num_rows, deletes.num_rows
    if n_data + n_del == 0 or not combines_in_groups(spec, partial_columns is not None):
        return data, deletes
    b = spec.builtin
    marker_col = b.delete_field if b is not None and b.delete_field in data.column_names else None
    # the common case: no duplicate keys, nothing to combine (a hash count, no sort)
    if (
        n_del == 0
        and "_hoodie_is_deleted" not in data.column_names
        and marker_col is None
        and pc.count_distinct(data.column(RECORD_KEY)).as_py() == n_data
    ):
        return data, deletes
    full = data
    if partial_columns is not None:
        keep = set(META_FIELDS) | set(partial_columns)
        data = data.select([c for c in data.column_names if c in keep])
    res = merge_versions(
        [DataPart(data, partial=partial_columns is not None), DeleteKeys.from_table(deletes)],
        spec,
        full.schema,
    )
    if len(res.winners) == n_data and len(res.deleted) == n_del:
        return full, deletes  # every version is its own key
    dead_data = res.deleted[res.deleted < n_data]
    dels = deletes.take(pa.array(res.deleted[res.deleted >= n_data] - n_data, pa.int64()))
    if len(dead_data):
        # data rows that are deletes (marker columns): write them as delete entries
        rows = full.take(pa.array(dead_data, pa.int64()))
        otype = deletes.schema.field(DELETE_ORDERING).type
        if ordering_field and ordering_field in rows.column_names and not pa.types.is_null(otype):
            ov = rows.column(ordering_field).combine_chunks()
            ov = ov.cast(otype) if ov.type != otype else ov
        else:
            ov = pa.nulls(rows.num_rows, otype)
        extra = pa.Table.from_arrays(
            [
                rows.column(RECORD_KEY).combine_chunks().cast(pa.string()),
                rows.column(DELETE_PARTITION).combine_chunks().cast(pa.string()),
                ov,
            ],
            schema=deletes.schema,
        )
        dels = pa.concat_tables([dels, extra]) if dels.num_rows else extra
    return res.rows, dels


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
    """Appends the rows of one MOR file group to a new log file of this task attempt."""

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
        self._out: pa.NativeFile | None = None
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
        data, dels = precombine(
            data, dels, ctx.ordering_field, ctx.merge_mode, ctx.merge, ctx.partial_columns
        )
        out = self._stream()
        if data.num_rows:
            data = ctx.carried(_set_file_name(data, self.file_id))
            partial = ctx.partial_columns is not None
            avro_schema = (
                partial_avro_schema(ctx.avro_schema, tuple(data.column_names))
                if partial
                else ctx.avro_schema
            )
            if ctx.block_format == "avro":
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
                    compression=ctx.codec,
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
                dels.column(DELETE_KEY).combine_chunks(),
                dels.column(DELETE_PARTITION).combine_chunks(),
                dels.column(DELETE_ORDERING).combine_chunks(),
                ctx.instant,
                ctx.avro_schema,
            )
            out.write(block)
            crash_point("handle_flush")
            self._written += len(block)
            self.blocks += 1
            self.num_deletes += dels.num_rows

    def _stream(self) -> pa.NativeFile:
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
            log_files=[self.path.rsplit("/", 1)[-1]],
        )
        return WriteStatus(stat, "append", self.ctx.token)


def _empty_deletes(ctx: HandleContext) -> pa.Table:
    otype = (
        ctx.schema.field(ctx.ordering_field).type
        if ctx.ordering_field and ctx.schema.get_field_index(ctx.ordering_field) >= 0
        else pa.null()
    )
    return delete_schema(otype).empty_table()


def delete_schema(ordering_type: pa.DataType) -> pa.Schema:
    """Schema of the delete-key tables handles receive."""
    return pa.schema(
        [
            pa.field(DELETE_KEY, pa.string()),
            pa.field(DELETE_PARTITION, pa.string()),
            pa.field(DELETE_ORDERING, ordering_type),
        ]
    )


class MergeHandle(_Buffered):
    """Writes a new base file version of one COW file group (CreateHandle when it is new)."""

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

    def flush(self) -> None:
        """COW rows cannot be flushed early: a file group gets one new base file per commit."""

    def close(self) -> WriteStatus | None:
        ctx = self.ctx
        if not self._data and not self._deletes:
            return None
        incoming = pa.concat_tables(self._data) if self._data else ctx.schema.empty_table()
        dels = pa.concat_tables(self._deletes) if self._deletes else _empty_deletes(ctx)
        old = (
            read_base_file(ctx.storage, self.base_file, ctx.schema)
            if self.base_file is not None
            else ctx.schema.empty_table()
        )
        merged, n_updates, n_inserts, n_deleted = merge_into_base(old, incoming, dels, ctx)
        merged = _set_file_name(merged, self.name)
        create_marker(ctx.storage, ctx.instant, self.path, "MERGE" if self.base_file else "CREATE")
        size = write_base_file(ctx.storage, self.path, merged, ctx.codec)
        crash_point("handle_flush")
        stat = WriteStat(
            file_id=self.file_id,
            path=self.path,
            prev_commit=self.base_file.instant_time if self.base_file else NULL_COMMIT,
            num_writes=merged.num_rows,
            num_deletes=n_deleted,
            num_update_writes=n_updates,
            num_inserts=n_inserts,
            total_write_bytes=size,
            partition_path=self.partition_path,
            file_size_in_bytes=size,
        )
        return WriteStatus(stat, "merge" if self.base_file else "create", ctx.token)


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
        pc.is_in(rows.column(RECORD_KEY), old.column(RECORD_KEY).combine_chunks()), dtype=bool
    )
    touched = np.asarray(
        pc.equal(rows.column("_hoodie_commit_time"), ctx.instant).fill_null(False), dtype=bool
    )
    n_updates = int((existed & touched).sum())
    n_inserts = int((~existed).sum())
    n_deleted = n_old - int(existed.sum())
    return rows, n_updates, n_inserts, max(n_deleted, 0)


def write_base_file(storage: Storage, path: str, table: pa.Table, codec: str) -> int:
    """Write a Parquet base file (with Hudi's min/max record key footer) and return its size."""
    keys = table.column(RECORD_KEY)
    meta = dict(table.schema.metadata or {})
    if table.num_rows:
        mm = pc.min_max(keys)
        meta[b"hoodie_min_record_key"] = str(mm["min"].as_py()).encode()
        meta[b"hoodie_max_record_key"] = str(mm["max"].as_py()).encode()
    table = table.replace_schema_metadata(meta)
    buf = io.BytesIO()
    pq.write_table(
        table,
        buf,
        compression=None if codec in ("none", "uncompressed") else codec,
        use_compliant_nested_type=True,
        **parquet_write_options(table),  # type: ignore[arg-type]
    )
    data = buf.getvalue()
    storage.write_bytes(path, data)
    return len(data)
