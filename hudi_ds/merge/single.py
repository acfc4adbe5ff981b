"""A file slice's base rows merged with log versions that name each key once.

The usual shape of a MOR file slice read after a compaction: a base file and the log blocks of
the delta commits since, which name each key at most once between them (a writer pre-combines
its batch). Then every key has at most two versions -- its base row and one log version --
and the merge is a comparison of two ordering values per key, no fold of a run of versions:
:func:`merge_single_log_versions` finds each base row's log version with one hash probe
(``index_in``, which the read needs anyway to find the base rows the logs touch) and decides
base against log without gathering the versions into one table, sorting them by key or
ranking more than the touched pairs.

The decision is Hudi's final merge of a base record with its one (delta-merged) log record
(Hudi 1.1 ``BufferedRecordMergerFactory``: ``CommitTimeBufferedRecordMerger.finalMerge``
returns the newer record; ``EventTimeBufferedRecordMerger.finalMerge`` returns a
commit-time-ordering delete, else the older record when
``oldOrderingValue.compareTo(newOrderingValue) > 0``, else the newer one), which for two
versions is what :func:`hudi_ds.merge.engine.merge_versions` folds them to: the later version
wins unless (event time) the base row's ordering value is greater and the log version is not a
delete with Hudi's default ordering value (a *natural* delete, which always applies).

Only the whole-record built-in behaviours (commit time, ``DefaultHoodieRecordPayload``,
``EventTimeAvroPayload``) with at most one ordering field take this path, and only when no
version is flagged ``_hoodie_is_deleted`` (that flag makes a data row a delete of its own
ordering value) and neither the log versions nor the touched base rows repeat a key: anything
else returns None and the caller merges through the engine.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hudi_ds.merge.core import default_ordering, ordering_rank, reads_as_java_int
from hudi_ds.merge.engine import DeleteKeys, Part, any_deleted, cast_or_null, deleted_mask
from hudi_ds.merge.modes import PARTIAL_NONE, MergeSpec
from hudi_ds.merge.payloads import (
    BuiltinMerger,
    DefaultMerger,
    EventTimeMerger,
    OverwriteWithLatestMerger,
    PayloadConfig,
    merger_for,
)
from hudi_ds.schema.evolution import whole
from hudi_ds.schema.meta import IS_DELETED_FIELD

#: the behaviours whose merged record is always one version's whole row
_WHOLE_ROW = (OverwriteWithLatestMerger, DefaultMerger, EventTimeMerger)


def merge_single_log_versions(
    base: pa.Table,
    base_keys: pa.Array | pa.ChunkedArray,
    parts: Sequence[Part],
    part_keys: Sequence[pa.Array],
    spec: MergeSpec,
) -> tuple[np.ndarray, list[pa.Table]] | None:
    """The live rows of a slice whose log versions name each key once (module docstring).

    Args:
        base: the base file's rows (in the merge's schema).
        base_keys: their record keys (strings).
        parts: the log versions in write order: data tables and :class:`DeleteKeys`.
        part_keys: the record keys of each part (strings, aligned with ``parts``).
        spec: the table's merge spec.

    Returns:
        ``(keep, rows)``: which base rows stay (untouched live rows and touched rows whose
        version wins), and the winning rows of each data part, in write order -- or None when
        the slice does not have this shape or its merger another behaviour.
    """
    merger = merger_for(spec)
    if not isinstance(merger, _WHOLE_ROW):
        return None
    cfg = merger.payload_config(spec.props())
    if (
        cfg.partial != PARTIAL_NONE
        or cfg.transform is not None
        or (cfg.delete_field and cfg.delete_marker)
        or len(cfg.ordering) > 1
        or cfg.ordering != spec.ordering_fields
    ):
        return None
    field = cfg.ordering[0] if cfg.event_time else None
    if field is not None and base.schema.get_field_index(field) < 0:
        return None
    for p in parts:
        if isinstance(p, DeleteKeys):
            continue
        if (
            not isinstance(p, pa.Table)
            or (field is not None and p.schema.get_field_index(field) < 0)
            or (IS_DELETED_FIELD in p.column_names and any_deleted(p.column(IS_DELETED_FIELD)))
        ):
            return None  # partial rows, or data rows that delete
    logged = pa.concat_arrays([whole(k) for k in part_keys]) if len(part_keys) > 1 else part_keys[0]
    n_log = len(logged)
    if logged.null_count or len(pc.unique(logged)) != n_log:
        return None  # a key with several log versions: a fold
    pos = whole(pc.index_in(base_keys, value_set=logged))  # each base row's log version
    touched = np.asarray(pos.is_valid(), dtype=bool)
    at = np.asarray(pos.drop_null(), dtype=np.int64)  # the touched rows' versions, base order
    seen = np.zeros(n_log, dtype=bool)
    seen[at] = True
    if int(np.count_nonzero(seen)) != len(at):
        return None  # a key twice in the base file: a fold
    flagged = deleted_mask(base, spec)
    if flagged is not None and flagged[touched].any():
        return None  # a touched base row that is a delete
    is_delete = np.concatenate(
        [np.full(len(k), isinstance(p, DeleteKeys)) for p, k in zip(parts, part_keys, strict=True)]
    )
    base_wins = np.zeros(len(at), dtype=bool)
    if field is not None and len(at):
        base_wins = _base_wins(base, touched, at, parts, field, is_delete, merger, cfg)
    log_wins = ~is_delete
    log_wins[at] &= ~base_wins
    keep = ~touched if flagged is None else ~touched & ~flagged
    keep[touched] = base_wins
    rows: list[pa.Table] = []
    start = 0
    for p, k in zip(parts, part_keys, strict=True):
        end = start + len(k)
        if isinstance(p, pa.Table):
            won = log_wins[start:end]
            rows.append(p if won.all() else p.filter(pa.array(won)))
        start = end
    return keep, rows


def _base_wins(
    base: pa.Table,
    touched: np.ndarray,
    at: np.ndarray,
    parts: Sequence[Part],
    field: str,
    is_delete: np.ndarray,
    merger: BuiltinMerger,
    cfg: PayloadConfig,
) -> np.ndarray:
    """Event time: per touched base row (base order), whether its ordering value is greater
    than that of its log version (``at``) and that version is no natural delete."""
    ftype = base.schema.field(field).type
    base_col = whole(base.column(field))
    log_ord = _log_ordering(parts, field, ftype)
    if pa.types.is_integer(ftype) and not base_col.null_count and not log_ord.null_count:
        # integers without nulls rank as their values (merge.core._offset_rank), and only a
        # delete's 0 of an int field is Hudi's default ordering value
        lv = np.asarray(log_ord)
        win = np.asarray(base_col)[touched] > lv[at]
        if reads_as_java_int(ftype):
            win &= ~(is_delete[at] & (lv[at] == 0))
        return win
    base_ord = base_col.filter(pa.array(touched))
    # the values the engine compares (a null int field reads as Hudi's default 0)
    both = pa.table({field: pa.concat_arrays([base_ord, log_ord])})
    cols = merger.ordering_columns(cfg, both)
    rank = ordering_rank(cols, both.num_rows)
    n_base = len(base_ord)
    natural = default_ordering([c.slice(n_base) for c in cols], len(log_ord)) & is_delete
    return (rank[:n_base] > rank[n_base:][at]) & ~natural[at]


def _log_ordering(parts: Sequence[Part], field: str, ftype: pa.DataType) -> pa.Array:
    """The ordering value of every log version, in write order, as the engine stores them (a
    delete's cast to the field's type, null when it does not cast or has none)."""
    out = []
    for p in parts:
        if isinstance(p, DeleteKeys):
            ov = p.ordering
            out.append(
                pa.nulls(len(p.keys), ftype) if ov is None else cast_or_null(whole(ov), ftype)
            )
        elif isinstance(p, pa.Table):
            out.append(cast_or_null(whole(p.column(field)), ftype))
    return pa.concat_arrays(out) if len(out) > 1 else out[0]
