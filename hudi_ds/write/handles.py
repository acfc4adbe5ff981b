"""What the write handles of a task share (Java ``HoodieWriteHandle`` & co): one handle per file
group a task touches.

* :class:`HandleContext`: what every handle of one task attempt shares (storage, instant,
  token, schema, resolved options);
* :class:`BufferedHandle`: a handle's buffer of prepared rows and delete keys;
* :func:`precombine`: the versions of one batch combined before they are written;
* :func:`delete_keys` / :func:`delete_schema`: the delete-key tables handles receive.

The handles themselves: :class:`~hudi_ds.write.append_handle.AppendHandle` (MOR log files) and
:class:`~hudi_ds.write.merge_handle.MergeHandle` (COW base files, spilling past its budget).
Both close into a :class:`~hudi_ds.write.write_status.WriteStatus`. Rows reach a handle already
prepared (meta columns set except ``_hoodie_file_name``, which the handle fills). In a table
without meta fields (``hoodie.populate.meta.fields=false``, Hudi's virtual keys) the handles
merge by those prepared keys too, key the stored rows they read from the record key fields
(:func:`stored_rows`), and write the meta columns with null values
(:func:`hudi_ds.schema.meta.clear_meta_values`), as Java does.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hudi_ds.keygen import with_virtual_keys
from hudi_ds.merge.engine import (
    DataPart,
    DeleteKeys,
    combines_in_groups,
    merge_versions,
)
from hudi_ds.merge.modes import MergeSpec
from hudi_ds.schema.meta import (
    FILENAME_METADATA_FIELD,
    IS_DELETED_FIELD,
    META_FIELDS,
    PARTITION_PATH_METADATA_FIELD,
    RECORD_KEY_METADATA_FIELD,
)
from hudi_ds.storage import Storage
from hudi_ds.write.markers import MarkerBatch, create_marker
from hudi_ds.write.options import ResolvedOptions

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
    #: the columns the table's column stats index: handles compute each written file's
    #: ranges where the rows are in memory (None: the table keeps no column stats)
    stats_columns: tuple[str, ...] | None = None
    #: the task attempt's batched markers (None: a direct marker per file)
    markers: MarkerBatch | None = None

    def mark(self, files: Sequence[tuple[str, str]]) -> None:
        """Mark the ``(data path, kind)`` of ``files`` before they are written."""
        if self.markers is not None:
            self.markers.mark(files)
            return
        for path, kind in files:
            create_marker(self.storage, self.instant, path, kind)

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


def set_file_name(table: pa.Table, name: str) -> pa.Table:
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
        and _distinct_keys(data, deletes) == n_data + n_del
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


def _distinct_keys(data: pa.Table, deletes: pa.Table) -> int:
    """The number of distinct record keys among ``data`` and ``deletes`` (keys are never null).

    ``pc.unique`` builds the same hash table as ``pc.count_distinct`` but takes about half its
    time (measured on file groups of 3,000 string keys; this runs once per handle flush).
    """
    keys = pa.chunked_array(
        [
            *data.column(RECORD_KEY_METADATA_FIELD).cast(pa.string()).chunks,
            *deletes.column(RECORD_KEY_METADATA_FIELD).cast(pa.string()).chunks,
        ],
        pa.string(),
    )
    return len(pc.unique(keys))


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


class BufferedHandle:
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


def empty_deletes(ctx: HandleContext) -> pa.Table:
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
