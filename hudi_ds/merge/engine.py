"""The merge engine: one entry point for every place versions of a record meet.

The four places -- pre-combine of a write batch, the COW merge with the stored record,
compaction, and MOR snapshot reads -- all hand the engine the versions of a file group *in write
order* (base file, then log blocks in timeline order, then rows inside a block, then the
incoming batch) and get one merged row per live key back::

    result = merge_versions([base_table, log_block_1, DeleteKeys(keys, ordering), ...],
                            spec, schema)
    result.rows      # merged live rows
    result.deleted   # which versions deleted keys

Parts may be plain tables (full rows), :class:`DataPart` (partial rows: columns missing from the
table keep the older version's values, as in Hudi's ``IS_PARTIAL`` log blocks) or
:class:`DeleteKeys` (delete-block entries). The :class:`~hudi_ds.merge.modes.MergeSpec` (or a
:class:`~hudi_ds.merge.merger.RecordMerger`) decides how versions combine; built-in mergers run
vectorised, user mergers that only implement the per-record method run a per-key loop.

:func:`resolve_latest` is the winner-only kernel of the built-in modes (kept for callers that
only need to know which version of each key survives).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypeAlias

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hudi_ds.log.reader import ORDERING_VALUE
from hudi_ds.merge.core import key_codes, ordering_rank, resolve
from hudi_ds.merge.merger import MergeResult, RecordMerger, Versions
from hudi_ds.merge.modes import MergeSpec, spec_for_mode
from hudi_ds.merge.payloads import merger_for
from hudi_ds.schema.evolution import whole
from hudi_ds.schema.meta import (
    IS_DELETED_FIELD,
    PARTITION_PATH_METADATA_FIELD,
    RECORD_KEY_METADATA_FIELD,
)
from hudi_ds.schema.write import conform_partial
from hudi_ds.table_config import COMMIT_TIME_ORDERING, EVENT_TIME_ORDERING, TableConfig

# --------------------------------------------------------------------------------------------
# Winner-only kernel (built-in modes)
# --------------------------------------------------------------------------------------------


@dataclass
class MergeInput:
    """All versions to merge, aligned row by row.

    Attributes:
        keys: record key of each version (string; per partition uniqueness is the caller's job,
            e.g. by merging one file group at a time or by prefixing the partition).
        seq: write order (int64, strictly increasing in write order).
        ordering: ordering (precombine) value of each version, or None (no ordering field).
        is_delete: whether the version is a delete (bool), or None (no deletes).
        natural_delete: deletes that carry Hudi's default ordering value (always apply; see
            :func:`~hudi_ds.merge.core.default_ordering`), or None.
    """

    keys: pa.Array
    seq: np.ndarray
    ordering: pa.Array | None = None
    is_delete: np.ndarray | None = None
    natural_delete: np.ndarray | None = None


def resolve_latest(inp: MergeInput, mode: str) -> tuple[np.ndarray, np.ndarray]:
    """Pick the surviving version of every key (full-record merging, built-in modes).

    Commit time: the version written last wins. Event time: the greatest ordering value wins,
    ties to the latest write; a delete with an ordering value competes like any version, one
    without (``natural_delete``) discards every earlier version, later deletes leave it as the
    key's winner and any later data version wins over it.

    Args:
        inp: the versions.
        mode: ``COMMIT_TIME_ORDERING`` or ``EVENT_TIME_ORDERING``.

    Returns:
        ``(winners, deleted)``: indices (into the input rows) of the winning version of each key,
        in ascending index order, and a bool array saying whether that winner is a delete.
    """
    if mode not in (COMMIT_TIME_ORDERING, EVENT_TIME_ORDERING):
        raise ValueError(f"resolve_latest handles the built-in merge modes, not {mode!r}")
    n = len(inp.keys)
    if n == 0:
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=bool)
    deletes = np.zeros(n, dtype=bool) if inp.is_delete is None else np.asarray(inp.is_delete, bool)
    rank = None
    if mode == EVENT_TIME_ORDERING and inp.ordering is not None:
        rank = ordering_rank([inp.ordering], n)
    res = resolve(key_codes(inp.keys), np.asarray(inp.seq), rank, deletes, inp.natural_delete)
    winners = res.order[res.record]
    perm = np.argsort(winners, kind="stable")
    return winners[perm], ~res.live[perm]


# --------------------------------------------------------------------------------------------
# Versions in, merged rows out
# --------------------------------------------------------------------------------------------


@dataclass
class DataPart:
    """Data rows of one write unit (a log block, a batch) that may be partial.

    Attributes:
        table: the rows.
        partial: the rows carry only ``table``'s columns; the others keep older values
            (Hudi's ``IS_PARTIAL`` blocks). When False, missing columns are null (an older
            schema).
        keys: record keys (default: the ``_hoodie_record_key`` column).
    """

    table: pa.Table
    partial: bool = False
    keys: pa.Array | None = None


@dataclass
class DeleteKeys:
    """Delete entries (a delete block, the delete operation).

    Attributes:
        keys: record keys.
        ordering: the ordering value of each delete (null: none, the delete always applies).
        partitions: partition paths (kept in the merged result's deletes).
    """

    keys: pa.Array
    ordering: pa.Array | None = None
    partitions: pa.Array | None = None

    @classmethod
    def from_table(cls, t: pa.Table) -> DeleteKeys:
        """From a table with ``_hoodie_record_key``, ``_hoodie_partition_path``,
        ``_ordering_value`` columns (a decoded delete block)."""
        names = t.column_names
        return cls(
            whole(t.column(RECORD_KEY_METADATA_FIELD)),
            whole(t.column(ORDERING_VALUE)) if ORDERING_VALUE in names else None,
            whole(t.column(PARTITION_PATH_METADATA_FIELD))
            if PARTITION_PATH_METADATA_FIELD in names
            else None,
        )


Part: TypeAlias = "pa.Table | DataPart | DeleteKeys"


def _as_string(a: pa.Array | pa.ChunkedArray) -> pa.Array:
    a = whole(a)
    if pa.types.is_dictionary(a.type):
        a = a.cast(a.type.value_type)
    return a if pa.types.is_string(a.type) else a.cast(pa.string())


def any_deleted(flags: pa.Array | pa.ChunkedArray) -> bool:
    """Whether a ``_hoodie_is_deleted`` column flags any row deleted (a scan; no copy of the
    flags, which are usually all false or null)."""
    return flags.null_count < len(flags) and bool(pc.any(flags).as_py())


def cast_or_null(values: pa.Array, target: pa.DataType) -> pa.Array:
    """``values`` as type ``target`` (the merge schema's): cast, or all null when they do not
    convert (a value another version of the field's type cannot hold)."""
    if values.type == target:
        return values
    try:
        return values.cast(target)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return pa.nulls(len(values), target)


@dataclass
class VersionsBuilder:
    """Collects versions in write order into one :class:`~hudi_ds.merge.merger.Versions`.

    Args:
        schema: the schema of the merge (output rows); parts are brought to it.
        ordering_fields: where delete entries' ordering values go.
        key_fn: computes record keys of data tables without ``_hoodie_record_key``.
    """

    schema: pa.Schema
    ordering_fields: Sequence[str] = ()
    key_fn: Callable[[pa.Table], pa.Array] | None = None
    _tables: list[pa.Table] = field(default_factory=list)
    _keys: list[pa.Array] = field(default_factory=list)
    _deletes: list[np.ndarray] = field(default_factory=list)
    _absent: list[tuple[int, int, list[str]]] = field(default_factory=list)
    _n: int = 0
    _base_rows: int = 0

    def add_base(self, table: pa.Table) -> None:
        """Add the base file's rows (the stored records); must come before any other part."""
        if self._n:
            raise ValueError("the base file's rows come first")
        self._add_data(table, False, None)
        self._base_rows = self._n

    def add(self, part: Part) -> None:
        """Add the next write unit (rows in write order)."""
        if isinstance(part, DeleteKeys):
            self._add_deletes(part)
        elif isinstance(part, DataPart):
            self._add_data(part.table, part.partial, part.keys)
        else:
            self._add_data(part, False, None)

    def _add_data(self, t: pa.Table, partial: bool, keys: pa.Array | None) -> None:
        n = t.num_rows
        if n == 0:
            return
        missing = [f.name for f in self.schema if t.schema.get_field_index(f.name) < 0]
        if keys is None:
            if (
                RECORD_KEY_METADATA_FIELD in t.column_names
                and t.column(RECORD_KEY_METADATA_FIELD).null_count < n
            ):
                keys = whole(t.column(RECORD_KEY_METADATA_FIELD))
            elif self.key_fn is not None:
                keys = self.key_fn(t)
            else:
                raise ValueError("versions need _hoodie_record_key or a key function")
        if t.schema != self.schema:
            t = conform_partial(t, self.schema)
        self._tables.append(t)
        self._keys.append(_as_string(keys))
        if IS_DELETED_FIELD in t.column_names and any_deleted(t.column(IS_DELETED_FIELD)):
            flag = whole(t.column(IS_DELETED_FIELD)).fill_null(False)
            self._deletes.append(np.asarray(flag, dtype=bool))
        else:
            self._deletes.append(np.zeros(n, dtype=bool))
        if partial and missing:
            self._absent.append((self._n, self._n + n, missing))
        self._n += n

    def _add_deletes(self, d: DeleteKeys) -> None:
        n = len(d.keys)
        if n == 0:
            return
        cols = []
        for f in self.schema:
            if f.name == RECORD_KEY_METADATA_FIELD:
                cols.append(_as_string(d.keys).cast(f.type))
            elif f.name == PARTITION_PATH_METADATA_FIELD and d.partitions is not None:
                cols.append(cast_or_null(_as_string(d.partitions), f.type))
            elif (
                d.ordering is not None
                and self.ordering_fields
                and f.name == self.ordering_fields[0]
            ):
                cols.append(cast_or_null(whole(d.ordering), f.type))
            elif f.name == IS_DELETED_FIELD and pa.types.is_boolean(f.type):
                cols.append(pa.array(np.ones(n, dtype=bool)))
            else:
                cols.append(pa.nulls(n, f.type))
        self._tables.append(pa.Table.from_arrays(cols, schema=self.schema))
        self._keys.append(_as_string(d.keys))
        self._deletes.append(np.ones(n, dtype=bool))
        self._n += n

    def build(self) -> Versions:
        """The collected versions (``seq`` = the order they were added in)."""
        n = self._n
        table = pa.concat_tables(self._tables) if self._tables else self.schema.empty_table()
        if len(self._keys) == 1:
            keys = self._keys[0]  # concat_arrays copies even one array
        else:
            keys = pa.concat_arrays(self._keys) if self._keys else pa.array([], pa.string())
        absent: dict[str, np.ndarray] = {}
        for start, end, cols in self._absent:
            for c in cols:
                m = absent.get(c)
                if m is None:
                    m = absent[c] = np.zeros(n, dtype=bool)
                m[start:end] = True
        deletes = np.concatenate(self._deletes) if self._deletes else np.zeros(0, dtype=bool)
        base = None
        if self._base_rows:
            base = np.zeros(n, dtype=bool)
            base[: self._base_rows] = True
        return Versions(table, keys, np.arange(n, dtype=np.int64), deletes, absent, base)


def merger_of(spec: MergeSpec | RecordMerger) -> RecordMerger:
    """The merger of a spec (instances are cached per spec)."""
    return spec if isinstance(spec, RecordMerger) else merger_for(spec)


def merge_versions(
    parts: Sequence[Part],
    spec: MergeSpec | RecordMerger,
    schema: pa.Schema,
    props: Mapping[str, str] | None = None,
    key_fn: Callable[[pa.Table], pa.Array] | None = None,
    has_base: bool = False,
) -> MergeResult:
    """Merge the versions of one or more file groups, given in write order.

    This is the one merge entry point: pre-combine, the COW merge, compaction and MOR reads
    all call it.

    Args:
        parts: the write units, oldest first: tables of full rows (base file, log data blocks,
            incoming batches), :class:`DataPart` for partial rows, :class:`DeleteKeys`.
        spec: the table's :class:`~hudi_ds.merge.modes.MergeSpec` (or a merger instance;
            then ``props`` should carry ``hoodie.table.ordering.fields``).
        schema: the output schema (every part is brought to it; columns a part lacks are null,
            or absent for partial parts).
        props: merge properties (default: the spec's).
        key_fn: record keys of tables without ``_hoodie_record_key`` (no meta fields).
        has_base: ``parts[0]`` holds base file rows (the stored records of the file slices):
            under event-time ordering they meet the merged later versions last, as in Hudi
            (a natural delete followed by an older re-insert does not hide a base record with
            a greater ordering value; :func:`hudi_ds.merge.core.merge_with_base`).

    Returns:
        A :class:`~hudi_ds.merge.merger.MergeResult` whose ``winners`` / ``deleted`` index the
        versions in the order they were given (all rows of part 0, then part 1, ...).
    """
    if props is None:
        props = spec.props() if isinstance(spec, MergeSpec) else {}
    ordering = _ordering_fields(spec, props)
    builder = VersionsBuilder(schema, ordering, key_fn)
    for i, p in enumerate(parts):
        if i == 0 and has_base and isinstance(p, pa.Table):
            builder.add_base(p)
        else:
            builder.add(p)
    return merger_of(spec).merge_batches(builder.build(), schema, props)


def _ordering_fields(spec: MergeSpec | RecordMerger, props: Mapping[str, str]) -> tuple[str, ...]:
    if isinstance(spec, MergeSpec):
        return spec.ordering_fields
    raw = props.get(TableConfig.ORDERING_FIELDS.key, "")
    return tuple(f.strip() for f in raw.split(",") if f.strip())


def resolve_spec(spec: MergeSpec | None, mode: str, ordering_field: str | None) -> MergeSpec:
    """``spec``, or the built-in spec of ``mode`` (for callers that only know the mode)."""
    if spec is not None:
        return spec
    return spec_for_mode(mode, (ordering_field,) if ordering_field else ())


def combines_in_groups(spec: MergeSpec, partial_write: bool = False) -> bool:
    """Whether versions may be pre-combined in groups (a write batch) before being stored.

    False for non-associative mergers, and for partial writes under event-time ordering:
    then every version is kept and readers fold them one by one in write order.
    """
    merger = merger_for(spec)
    if not merger.associative:
        return False
    return not (partial_write and spec.mode == EVENT_TIME_ORDERING)


def drop_deleted_rows(table: pa.Table, spec: MergeSpec | None = None) -> pa.Table:
    """``table`` without its delete rows (``_hoodie_is_deleted``, the behaviour's marker).

    For a single version per key (a base file read without log blocks).
    """
    mask = deleted_mask(table, spec)
    if mask is None:
        return table
    return table.filter(pa.array(~mask))


def deleted_mask(table: pa.Table, spec: MergeSpec | None = None) -> np.ndarray | None:
    """Which rows of ``table`` are deletes (``_hoodie_is_deleted``, the behaviour's marker);
    None when none is (no copy of the flags then)."""
    n = table.num_rows
    mask: np.ndarray | None = None
    if IS_DELETED_FIELD in table.column_names:
        col = table.column(IS_DELETED_FIELD)
        if col.null_count < n and pc.any(col).as_py():  # no copy of the flags without one
            flag = np.asarray(whole(col).fill_null(False), dtype=bool)
            if flag.any():
                mask = flag
    b = spec.builtin if spec is not None else None
    if (
        b is not None
        and b.delete_field
        and b.delete_marker
        and b.delete_field in table.column_names
    ):
        col = _as_string(table.column(b.delete_field))
        hit = np.asarray(
            pc.equal(pc.utf8_lower(col), b.delete_marker.lower()).fill_null(False), dtype=bool
        )
        if hit.any():
            mask = hit if mask is None else mask | hit
    return mask
