"""The record merger API (RFC-46 ``HoodieRecordMerger``), in Arrow.

A :class:`RecordMerger` decides what becomes of the versions of one record key: which version
survives, how partial versions combine, and whether the key ends up deleted. It has

* a strategy id (a UUID; Hudi's own ids for the built-ins) that the table records, so that every
  writer and reader of the table applies the same merger;
* :meth:`RecordMerger.merge` -- the per-record method: ``merge(older, newer, schema, props)``
  returns the merged record or :data:`DELETE`. Records are plain ``dict`` s of column values; a
  delete arrives as a record with ``_hoodie_is_deleted`` true (with the key and, when it has one,
  the ordering value);
* :meth:`RecordMerger.partial_merge` -- the same for versions that carry only some columns
  (absent columns are missing from the dict); by default the absent columns are taken from the
  other version and :meth:`~RecordMerger.merge` decides;
* :meth:`RecordMerger.merge_batches` -- the vectorised entry point: every version of every key
  as one Arrow table (:class:`Versions`) in, one merged row per live key out
  (:class:`MergeResult`). The default implementation groups the versions by key and folds each
  group with the per-record method (a Python loop, only over keys that have more than one
  version); the built-in mergers (:mod:`hudi_ds.merge.payloads`) override it with numpy/pyarrow
  kernels.

A user merger therefore only has to implement :meth:`~RecordMerger.merge` and set
:attr:`~RecordMerger.strategy_id`. Like Hudi's, the merge must be associative --
``merge(merge(a, b), c) == merge(a, merge(b, c))`` -- because writers combine versions in groups
(a write batch, a log block, a compaction) and readers combine the groups. A merger that cannot
promise this sets :attr:`~RecordMerger.associative` to False: writers then keep every version
instead of pre-combining a batch, so that all readers fold the versions one by one in write order.
"""

from __future__ import annotations

import importlib
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Final

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hudi_ds.errors import ConfigError
from hudi_ds.schema.meta import IS_DELETED_FIELD

Record = dict[str, Any]


class _Delete:
    """The type of :data:`DELETE` (a singleton)."""

    _instance: ClassVar[_Delete | None] = None

    def __new__(cls) -> _Delete:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "DELETE"

    def __reduce__(self) -> str:
        return "DELETE"


#: What :meth:`RecordMerger.merge` returns to delete the key (Hudi's ``Option.empty()``).
DELETE: Final = _Delete()

MergeOutcome = Record | _Delete


@dataclass
class Versions:
    """Every version of every key to merge, in one Arrow table (rows in any order).

    Attributes:
        table: the versions, in the full schema of the merge; a column a version does not
            carry (a partial row, a delete entry) is null there and named in ``absent``.
        keys: the record key of each version (string array, no nulls).
        seq: the write order of each version (int64, strictly increasing in write order: base
            file, then log blocks in timeline order, then rows inside a block).
        deletes: versions that are delete entries (delete blocks, the delete operation, rows
            flagged ``_hoodie_is_deleted``); a merger may detect more (e.g. an ``Op`` column).
        absent: per column, a bool mask of the versions that do not carry it (partial rows).
            Columns not listed are carried by every version.
        base: versions read from a base file (the stored records of a file slice), or None
            (no base file: a write batch). Hudi merges these with the result of the log
            versions last (see :func:`hudi_ds.merge.core.merge_with_base`).
    """

    table: pa.Table
    keys: pa.Array
    seq: np.ndarray
    deletes: np.ndarray
    absent: dict[str, np.ndarray] = field(default_factory=dict)
    base: np.ndarray | None = None

    def __len__(self) -> int:
        return self.table.num_rows

    def record(self, i: int) -> Record:
        """Version ``i`` as a record dict (absent columns left out; deletes flagged)."""
        row = {
            name: self.table.column(name)[i].as_py()
            for name in self.table.column_names
            if not (name in self.absent and self.absent[name][i])
        }
        if self.deletes[i]:
            row[IS_DELETED_FIELD] = True
        return row


@dataclass
class MergeResult:
    """What a merge produced.

    Attributes:
        rows: one merged row per live key, in the schema of the versions' table.
        winners: per output row, the index (into the versions) of the version that decided it
            (the record winner; for partial merges some columns may come from other versions).
        deleted: indices of the versions (deletes) that decided each deleted key.
    """

    rows: pa.Table
    winners: np.ndarray
    deleted: np.ndarray


class RecordMerger(ABC):
    """Base class of record mergers (RFC-46 ``HoodieRecordMerger``).

    Subclasses set :attr:`strategy_id` and implement :meth:`merge`; they may override
    :meth:`partial_merge`, :meth:`is_delete` and, for speed, :meth:`merge_batches`. Instances
    are created with no arguments and must be picklable (Spark ships them to executors).
    """

    #: The merge strategy (a UUID) this merger implements; recorded in ``hoodie.properties``.
    strategy_id: ClassVar[str] = ""
    #: Whether ``merge`` is associative (see the module docstring).
    associative: ClassVar[bool] = True

    @abstractmethod
    def merge(
        self, older: Record, newer: Record, schema: pa.Schema, props: Mapping[str, str]
    ) -> MergeOutcome:
        """Merge two versions of one key, ``older`` written before ``newer``.

        Args:
            older: the older version (or the result of earlier merges); may be a delete
                record (``_hoodie_is_deleted`` true) that kept its ordering value.
            newer: the newer version; may be a delete record.
            schema: the full Arrow schema of the records (meta columns first).
            props: merge properties (``hoodie.table.ordering.fields`` and the like).

        Returns:
            The merged record, or :data:`DELETE` to delete the key (a later version starts
            afresh). Returning a delete record keeps it as a tombstone that later versions are
            merged with.
        """

    def partial_merge(
        self, older: Record, newer: Record, schema: pa.Schema, props: Mapping[str, str]
    ) -> MergeOutcome:
        """Merge versions of which at least one lacks some columns of ``schema``.

        The default completes each version with the other's values for the columns it lacks
        (deletes are left alone) and calls :meth:`merge`.
        """
        if not self.is_delete(older, props) and not self.is_delete(newer, props):
            older, newer = {**newer, **older}, {**older, **newer}
        return self.merge(older, newer, schema, props)

    def is_delete(self, record: Record, props: Mapping[str, str]) -> bool:
        """Whether ``record`` is a delete (``_hoodie_is_deleted`` true by default)."""
        return record.get(IS_DELETED_FIELD) is True

    def merge_batches(
        self, versions: Versions, schema: pa.Schema, props: Mapping[str, str]
    ) -> MergeResult:
        """Merge every key's versions (the vectorised entry point).

        The default folds each key's versions in write order with :meth:`merge` /
        :meth:`partial_merge` (see :func:`merge_per_record`).
        """
        return merge_per_record(self, versions, schema, props)


# --------------------------------------------------------------------------------------------
# The per-record fallback
# --------------------------------------------------------------------------------------------


def key_groups(keys: pa.Array, seq: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sort versions by (key, write order).

    Returns:
        ``(order, starts)``: the permutation (sorted position -> version index) and the sorted
        position where each key's run starts.
    """
    if isinstance(keys, pa.ChunkedArray):
        keys = keys.combine_chunks()
    codes = np.asarray(pc.dictionary_encode(keys).indices.fill_null(-1), dtype=np.int64)
    order = np.lexsort((np.asarray(seq, dtype=np.int64), codes))
    c = codes[order]
    first = np.ones(len(c), dtype=bool)
    first[1:] = c[1:] != c[:-1]
    return order, np.flatnonzero(first)


def fold(
    merger: RecordMerger,
    records: list[Record],
    schema: pa.Schema,
    props: Mapping[str, str],
    partial: bool = True,
) -> tuple[MergeOutcome, int]:
    """Fold the versions of one key, oldest first, with the merger's per-record methods: the
    outcome, and the position in ``records`` of the delete that reset the record when the
    outcome is :data:`DELETE` (-1 otherwise)."""
    names = schema.names
    state: MergeOutcome = _start(merger, records[0], names, props)
    reset = -1
    for j, rec in enumerate(records[1:], 1):
        if isinstance(state, _Delete):
            # a later delete does not replace the reset with a tombstone that data would have
            # to outrank (Hudi 1.1 BufferedRecordMergerFactory.deltaMergeDeleteRecord keeps an
            # existing commit-time-ordering delete); the next data version starts afresh
            if not merger.is_delete(rec, props):
                state = _start(merger, rec, names, props)
            elif merger.merge(records[reset], rec, schema, props) is DELETE:
                reset = j  # it resets the reset itself (commit time: the latest delete)
            continue
        if (
            partial
            and (len(state) < len(names) or len(rec) < len(names))
            and _lacks(state, rec, names)
        ):
            state = merger.partial_merge(state, rec, schema, props)
        else:
            state = merger.merge(state, rec, schema, props)
        if isinstance(state, _Delete):
            reset = j
    return state, reset


def complete(record: Record, names: list[str]) -> Record:
    """``record`` with the columns of ``names`` it lacks set to null (a new record)."""
    if all(n in record for n in names):
        return record
    out = {n: record.get(n) for n in names}
    out.update({k: v for k, v in record.items() if k not in out})
    return out


def _start(
    merger: RecordMerger, record: Record, names: list[str], props: Mapping[str, str]
) -> Record:
    """The first version of a record: columns it lacks are null (nothing older to keep)."""
    return record if merger.is_delete(record, props) else complete(record, names)


def _lacks(a: Record, b: Record, names: list[str]) -> bool:
    return any(n not in a or n not in b for n in names)


def merge_per_record(
    merger: RecordMerger, versions: Versions, schema: pa.Schema, props: Mapping[str, str]
) -> MergeResult:
    """Merge with the per-record methods: a Python fold over each key with several versions.

    Keys with a single version pass through without a call (unless it is a delete).
    """
    n = len(versions)
    table = versions.table
    if n == 0:
        return MergeResult(table.slice(0, 0), np.empty(0, np.int64), np.empty(0, np.int64))
    order, starts = key_groups(versions.keys, versions.seq)
    ends = np.append(starts[1:], n)
    sizes = ends - starts
    single = order[starts[sizes == 1]]
    out_idx: list[int] = []
    out_rows: list[Record] = []
    deleted: list[int] = []
    # single versions: kept unless they are deletes
    if len(single):
        sd = _row_deletes(merger, versions, single, props)
        deleted.extend(single[sd].tolist())
        keep_single = single[~sd]
    else:
        keep_single = single
    multi = np.flatnonzero(sizes > 1)
    if len(multi):
        idx = np.concatenate([order[starts[g] : ends[g]] for g in multi])
        sub = _records(versions, idx)
        pos = 0
        for g in multi:
            k = int(sizes[g])
            group = sub[pos : pos + k]
            members = idx[pos : pos + k]
            pos += k
            result, reset = fold(merger, group, schema, props)
            if isinstance(result, _Delete):
                deleted.append(int(members[reset]))
            elif merger.is_delete(result, props):
                deleted.append(_deciding_delete(merger, result, group, members, props))
            else:
                out_idx.append(_decider(result, group, members))
                out_rows.append(result)
    parts = [table.take(pa.array(keep_single, pa.int64()))]
    if out_rows:
        cleaned = [{k: r.get(k) for k in table.column_names} for r in out_rows]
        parts.append(pa.Table.from_pylist(cleaned, schema=table.schema))
    winners = np.concatenate([keep_single, np.asarray(out_idx, dtype=np.int64)])
    rows = pa.concat_tables(parts) if len(parts) > 1 else parts[0]
    sort = np.argsort(winners, kind="stable")
    rows = rows.take(pa.array(sort))
    return MergeResult(rows, winners[sort], np.sort(np.asarray(deleted, dtype=np.int64)))


def _deciding_delete(
    merger: RecordMerger,
    result: MergeOutcome,
    group: list[Record],
    members: np.ndarray,
    props: Mapping[str, str],
) -> int:
    """The delete version that deleted a key (the tombstone itself, else the latest delete)."""
    pairs = list(zip(reversed(group), reversed(members.tolist()), strict=True))
    for rec, i in pairs:
        if rec is result:
            return int(i)
    for rec, i in pairs:
        if merger.is_delete(rec, props):
            return int(i)
    return int(members[-1])


def _decider(result: Record, group: list[Record], members: np.ndarray) -> int:
    """The version a merged record came from (the latest one equal to it, else the latest)."""
    for rec, i in zip(reversed(group), reversed(members.tolist()), strict=True):
        if rec is result or rec == result:
            return int(i)
    return int(members[-1])


def _row_deletes(
    merger: RecordMerger, versions: Versions, idx: np.ndarray, props: Mapping[str, str]
) -> np.ndarray:
    out = np.asarray(versions.deletes, dtype=bool)[idx].copy()
    if type(merger).is_delete is RecordMerger.is_delete:
        if IS_DELETED_FIELD in versions.table.column_names:
            flag = versions.table.column(IS_DELETED_FIELD).take(pa.array(idx)).fill_null(False)
            out |= np.asarray(flag.combine_chunks() if hasattr(flag, "combine_chunks") else flag)
        return out
    todo = np.flatnonzero(~out)
    if len(todo):
        recs = _records(versions, idx[todo])
        out[todo] = [merger.is_delete(r, props) for r in recs]
    return out


def _records(versions: Versions, idx: np.ndarray) -> list[Record]:
    """The versions at ``idx`` as record dicts (one ``to_pylist`` for all of them)."""
    rows = versions.table.take(pa.array(idx, pa.int64())).to_pylist()
    if versions.absent:
        masks = {c: m[idx] for c, m in versions.absent.items() if m[idx].any()}
        for c, m in masks.items():
            for j in np.flatnonzero(m).tolist():
                rows[j].pop(c, None)
    dels = np.asarray(versions.deletes, dtype=bool)[idx]
    for j in np.flatnonzero(dels).tolist():
        rows[j] = {k: v for k, v in rows[j].items() if v is not None}
        rows[j][IS_DELETED_FIELD] = True
    return rows


# --------------------------------------------------------------------------------------------
# Loading user mergers
# --------------------------------------------------------------------------------------------


def load_merger_class(path: str, key: str = "") -> type[RecordMerger]:
    """Import a merger class from ``"package.module.Class"`` (or ``"package.module:Class"``).

    Raises:
        ConfigError: the class cannot be imported or is not a :class:`RecordMerger` (the message
            names ``key`` and the value).
    """
    where = f"option '{key}'={path!r}" if key else repr(path)
    mod_name, sep, cls_name = path.partition(":")
    if not sep:
        mod_name, _, cls_name = path.rpartition(".")
    if not mod_name or not cls_name:
        raise ConfigError(f"{where}: expected an importable Python class path 'module.Class'")
    try:
        module = importlib.import_module(mod_name)
    except ImportError as e:
        raise ConfigError(f"{where}: cannot import module {mod_name!r} ({e})") from None
    cls = getattr(module, cls_name, None)
    if cls is None:
        raise ConfigError(f"{where}: module {mod_name!r} has no class {cls_name!r}")
    if not (isinstance(cls, type) and issubclass(cls, RecordMerger)):
        raise ConfigError(f"{where}: {path} is not a subclass of hudi_ds.merge.RecordMerger")
    if not cls.strategy_id:
        raise ConfigError(f"{where}: {path} does not set a strategy_id")
    return cls
