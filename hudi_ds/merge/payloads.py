"""The built-in record mergers: Hudi's payload behaviours, vectorised.

One class per Hudi payload (see :mod:`hudi_ds.merge.modes` for the mapping). They all share one
rule, parameterised by the merge mode, the partial update mode and the delete marker:

* **Ordering.** Commit time: a newer version wins. Event time: a version wins when its
  ordering value is at least the greatest seen so far for the key (ties: the later write).
  Null ordering values rank lowest, but for one int ordering field, where Hudi reads a null
  as its default ordering value, the Integer 0 (Hudi cannot compare that with a long, string
  or other value: ``compareTo`` throws).
* **Deletes.** ``_hoodie_is_deleted`` = true, delete-block entries, and the behaviour's marker
  (``Op`` = ``D`` for AWS DMS, ``_change_operation_type`` = ``d`` for Debezium) are deletes. A
  delete competes like any version; a delete with Hudi's default ordering value (null, or 0
  of an int field: a *natural*, commit-time-ordering delete) always applies, later deletes
  leave its tombstone as it is and a later data version replaces it.
* **Columns.** The winner's values make the record. Where the winner says nothing about a
  column -- the column is absent from its (partial) row, or under ``IGNORE_DEFAULTS`` it is
  null, or under ``IGNORE_MARKERS`` it holds the marker (``__debezium_unavailable_value``) --
  the value comes from the other version. Under the partial behaviours the meta columns
  (commit time...) come from the newest contributing version, so incremental queries see the
  change; otherwise from the winner.

:meth:`BuiltinMerger.merge` is that rule for two records; :meth:`BuiltinMerger.merge_batches`
computes the same left fold for all keys at once with numpy (:mod:`hudi_ds.merge.core`).

Associativity: the full-record behaviours are associative. Event time combined with "take the
other version's value" (PartialUpdate, PostgresDebezium, or partial rows under event time)
cannot be: with ``A(ts=3, name=x, price=null)``, ``B(ts=1, name=y, price=1)``,
``C(ts=2, name=null, price=2)``, ``(A.B).C`` keeps price 1 while ``A.(B.C)`` takes price 2 (Hudi's
payload has the same property). Those mergers declare ``associative = False`` and writers do not
pre-combine for them: every reader folds the versions one by one in write order, so MOR
snapshots, compaction and COW agree.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, ClassVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hudi_ds.config import WriteConfig
from hudi_ds.errors import ConfigError, SchemaError
from hudi_ds.merge.core import (
    default_ordering,
    key_codes,
    merge_with_base,
    multi_version,
    ordering_rank,
    reads_as_java_int,
    resolve,
    resolve_sorted,
)
from hudi_ds.merge.merger import (
    DELETE,
    MergeOutcome,
    MergeResult,
    Record,
    RecordMerger,
    Versions,
    complete,
    load_merger_class,
)
from hudi_ds.merge.modes import (
    BEHAVIOURS,
    BUILTIN_STRATEGY_IDS,
    DELETE_FIELD_PROP,
    DELETE_MARKER_PROP,
    EVENT_TIME_ORDERING,
    IGNORE_DEFAULTS,
    IGNORE_MARKERS,
    MERGE_MODE_PROP,
    ORDERING_FIELDS_PROP,
    ORDERING_TRANSFORM_PROP,
    PARTIAL_MARKER_PROP,
    PARTIAL_MODE_PROP,
    PARTIAL_NONE,
    Behaviour,
    MergeSpec,
)
from hudi_ds.schema.evolution import whole
from hudi_ds.schema.meta import IS_DELETED_FIELD, META_FIELDS

_META = frozenset(META_FIELDS)


@dataclass(frozen=True)
class PayloadConfig:
    """How a built-in merger merges, resolved from its behaviour and the merge properties
    (Hudi's payload properties: ``hoodie.payload.*``, the merge mode, the partial update mode).

    Attributes:
        event_time: EVENT_TIME_ORDERING with ordering fields (else commit time ordering).
        ordering: the ordering fields (``hoodie.table.ordering.fields`` or its aliases).
        partial: the partial update mode (``PARTIAL_NONE``: whole records).
        marker: the value marking a column as not updated (partial update, custom marker).
        delete_field: the column whose value ``delete_marker`` marks a record deleted.
        delete_marker: see ``delete_field``.
        transform: how the ordering value is read (``"mysql_seq"``: a binlog position).
    """

    event_time: bool
    ordering: tuple[str, ...]
    partial: str
    marker: str | None
    delete_field: str | None
    delete_marker: str | None
    transform: str | None


@lru_cache(maxsize=64)
def _config(b: Behaviour, items: tuple[tuple[str, str], ...]) -> PayloadConfig:
    props = dict(items)
    ordering = tuple(
        f.strip()
        for f in (
            props.get(ORDERING_FIELDS_PROP)
            or props.get("hoodie.datasource.write.precombine.field")
            or props.get("hoodie.payload.ordering.field")
            or ""
        ).split(",")
        if f.strip()
    )
    mode = props.get(MERGE_MODE_PROP, b.mode)
    if mode not in BUILTIN_STRATEGY_IDS:
        mode = b.mode
    transform = props.get(ORDERING_TRANSFORM_PROP)
    if transform is None and b.ordering_transform and ordering == (b.default_ordering,):
        transform = b.ordering_transform
    return PayloadConfig(
        event_time=mode == EVENT_TIME_ORDERING and bool(ordering),
        ordering=ordering,
        partial=props.get(PARTIAL_MODE_PROP, b.partial).upper(),
        marker=props.get(PARTIAL_MARKER_PROP, b.partial_marker),
        delete_field=props.get(DELETE_FIELD_PROP, b.delete_field),
        delete_marker=props.get(DELETE_MARKER_PROP, b.delete_marker),
        transform=transform,
    )


def _mysql_seq(value: Any) -> tuple[int, int]:
    file, _, pos = str(value).partition(".")
    try:
        return int(file), int(pos)
    except ValueError:
        raise SchemaError(
            f"_event_seq value {value!r} is not '<binlog file number>.<position>'"
        ) from None


class BuiltinMerger(RecordMerger):
    """A built-in merge behaviour (:data:`hudi_ds.merge.modes.BEHAVIOURS`)."""

    behaviour: ClassVar[str] = "default"

    def payload_config(self, props: Mapping[str, str]) -> PayloadConfig:
        """This behaviour's merge settings under the merge properties ``props`` (cached)."""
        return _config(BEHAVIOURS[self.behaviour], tuple(sorted(props.items())))

    # -- per record -----------------------------------------------------------------------
    def is_delete(self, record: Record, props: Mapping[str, str]) -> bool:
        if record.get(IS_DELETED_FIELD) is True:
            return True
        cfg = self.payload_config(props)
        if cfg.delete_field and cfg.delete_marker:
            v = record.get(cfg.delete_field)
            if isinstance(v, bytes):
                v = v.decode("utf-8", "replace")
            return v is not None and str(v).lower() == cfg.delete_marker.lower()
        return False

    def _key(self, cfg: PayloadConfig, record: Record, schema: pa.Schema) -> tuple[Any, ...]:
        out: list[Any] = []
        for f in cfg.ordering:
            v = record.get(f)
            if v is None and self._int_ordering(cfg, schema):
                out.append((1, 0))  # Hudi's default ordering value, the Integer 0
            elif v is None:
                out.append((0,))
            elif cfg.transform == "mysql_seq":
                out.append((1, *_mysql_seq(v)))
            else:
                out.append((1, v))
        return tuple(out)

    @staticmethod
    def _int_ordering(cfg: PayloadConfig, schema: pa.Schema) -> bool:
        """Whether the ordering value is one int field (a null one is Hudi's Integer 0)."""
        if len(cfg.ordering) != 1 or cfg.transform is not None:
            return False
        i = schema.get_field_index(cfg.ordering[0])
        return i >= 0 and reads_as_java_int(schema.field(i).type)

    def _natural(self, cfg: PayloadConfig, record: Record, schema: pa.Schema) -> bool:
        """Whether a delete ``record`` carries Hudi's default ordering value (a natural,
        commit-time-ordering delete; :func:`~hudi_ds.merge.core.default_ordering`)."""
        values = [record.get(f) for f in cfg.ordering]
        if all(v is None for v in values):
            return True
        return type(values[0]) is int and values[0] == 0 and self._int_ordering(cfg, schema)

    def _level(self, cfg: PayloadConfig, record: Record, name: str) -> int:
        if name not in record:
            return 0
        v = record[name]
        if cfg.partial == IGNORE_DEFAULTS and v is None:
            return 1
        if (
            cfg.partial == IGNORE_MARKERS
            and cfg.marker is not None
            and v is not None
            and (v == cfg.marker or v == cfg.marker.encode())
        ):
            return 1
        return 2

    def _fill(
        self, cfg: PayloadConfig, base: Record, other: Record, meta: Record, names: list[str]
    ) -> Record:
        if cfg.partial == PARTIAL_NONE and all(n in base for n in names):
            return base
        out: Record = {}
        for name in names:
            if name in _META:
                src = meta if name in meta else (base if name in base else other)
            else:
                src = (
                    base if self._level(cfg, base, name) >= self._level(cfg, other, name) else other
                )
            if name in src:
                out[name] = src[name]
        return out

    def merge(
        self, older: Record, newer: Record, schema: pa.Schema, props: Mapping[str, str]
    ) -> MergeOutcome:
        cfg = self.payload_config(props)
        newer_del = self.is_delete(newer, props)
        older_del = self.is_delete(older, props)
        names = schema.names
        if cfg.event_time:
            if older_del and self._natural(cfg, older, schema):
                # an existing commit-time-ordering delete (Hudi 1.1
                # BufferedRecordMergerFactory): a later delete leaves it as it is
                # (deltaMergeDeleteRecord), a later data version replaces it whatever its
                # ordering value (shouldKeepNewerRecord) and starts a new record
                return older if newer_del else complete(newer, names)
            if newer_del and self._natural(cfg, newer, schema):
                return DELETE  # the default ordering value: applies whatever came before
            newer_wins = self._key(cfg, newer, schema) >= self._key(cfg, older, schema)
        else:
            if newer_del:
                return DELETE
            newer_wins = True
        if newer_wins:
            if newer_del:
                return newer
            if older_del:
                return complete(newer, names)  # a new record: what it lacks is null
            return self._fill(cfg, newer, older, newer, names)
        if older_del or newer_del:
            return older
        meta = newer if cfg.partial != PARTIAL_NONE else older
        return self._fill(cfg, older, newer, meta, names)

    def partial_merge(
        self, older: Record, newer: Record, schema: pa.Schema, props: Mapping[str, str]
    ) -> MergeOutcome:
        return self.merge(older, newer, schema, props)

    # -- vectorised -------------------------------------------------------------------------
    def _deletes(self, cfg: PayloadConfig, versions: Versions) -> np.ndarray:
        t = versions.table
        out = np.asarray(versions.deletes, dtype=bool).copy()
        if IS_DELETED_FIELD in t.column_names:
            flag = t.column(IS_DELETED_FIELD)
            # a scan first: the flags are usually all false (no copy of them then)
            if flag.null_count < len(flag) and pc.any(flag).as_py():
                out |= np.asarray(whole(pc.fill_null(flag, False)), dtype=bool)
        f = cfg.delete_field
        if f and cfg.delete_marker and f in t.column_names:
            col = whole(t.column(f))
            if pa.types.is_dictionary(col.type):
                col = col.cast(col.type.value_type)
            if not pa.types.is_string(col.type):
                col = col.cast(pa.string())
            hit = pc.equal(pc.utf8_lower(col), cfg.delete_marker.lower()).fill_null(False)
            hit_np = np.asarray(hit, dtype=bool)
            if f in versions.absent:
                hit_np &= ~versions.absent[f]
            out |= hit_np
        return out

    def ordering_columns(self, cfg: PayloadConfig, t: pa.Table) -> list[pa.Array]:
        """The ordering values of the rows of ``t``, one column per sort key, compared
        lexicographically (a missing field reads as nulls, a null of a lone int field as 0 --
        Hudi's default --, a binlog position as two int64 columns).

        Raises:
            SchemaError: a binlog position that is not ``<file number>.<position>``.
        """
        cols: list[pa.Array] = []
        for f in cfg.ordering:
            if f not in t.column_names:
                cols.append(pa.nulls(t.num_rows))
                continue
            col = whole(t.column(f))
            if cfg.transform == "mysql_seq":
                s = col.cast(pa.string())
                parts = pc.split_pattern(s, ".", max_splits=1)
                try:
                    cols.append(pc.list_element(parts, 0).cast(pa.int64()))
                    cols.append(pc.list_element(parts, 1).cast(pa.int64()))
                except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
                    raise SchemaError(
                        f"_event_seq values must be '<binlog file number>.<position>' ({e})"
                    ) from None
            else:
                cols.append(col)
        if len(cols) == 1 and cfg.transform is None and reads_as_java_int(cols[0].type):
            # Hudi reads a null ordering field as its default, the Integer 0
            # (RecordContext.getOrderingValue): equal to an int field's 0. (A null of any
            # other type is not comparable with the field's values there -- compareTo throws
            # -- and ranks lowest here.)
            cols[0] = cols[0].fill_null(0)
        return cols

    def _levels(
        self, cfg: PayloadConfig, versions: Versions, name: str, all_null: bool, starts: np.ndarray
    ) -> np.ndarray | None:
        """Per version: 2 = value, 1 = "unchanged", 0 = column absent; None if all 2.

        ``starts`` are the versions that start a record: a column they lack is null there.
        """
        col = versions.table.column(name)
        absent = versions.absent.get(name)
        lev: np.ndarray | None = None
        if absent is not None and absent.any():
            absent = absent.copy()
            absent[starts] = False
        if absent is not None and absent.any():
            lev = np.where(absent, 0, 2).astype(np.int8)
        if cfg.partial == IGNORE_DEFAULTS and col.null_count:
            nulls = np.asarray(col.is_null().combine_chunks(), dtype=bool)
            if lev is None:
                lev = np.full(len(nulls), 2, dtype=np.int8)
            lev[nulls & (lev == 2)] = 1
        elif cfg.partial == IGNORE_MARKERS and cfg.marker is not None and not all_null:
            t = col.type
            if pa.types.is_dictionary(t):
                t = t.value_type
            if pa.types.is_string(t) or pa.types.is_large_string(t):
                marker: Any = cfg.marker
            elif pa.types.is_binary(t) or pa.types.is_large_binary(t):
                marker = cfg.marker.encode()
            else:
                return lev
            hit = np.asarray(
                pc.equal(col, pa.scalar(marker, t)).fill_null(False).combine_chunks(), dtype=bool
            )
            if hit.any():
                if lev is None:
                    lev = np.full(len(hit), 2, dtype=np.int8)
                lev[hit & (lev == 2)] = 1
        return lev

    def merge_batches(
        self, versions: Versions, schema: pa.Schema, props: Mapping[str, str]
    ) -> MergeResult:
        cfg = self.payload_config(props)
        t = versions.table
        n = t.num_rows
        if n == 0:
            return MergeResult(t, np.empty(0, np.int64), np.empty(0, np.int64))
        deletes = self._deletes(cfg, versions)
        codes = key_codes(versions.keys)
        multi = multi_version(codes)
        rank = natural = None
        if cfg.event_time:
            cols = self.ordering_columns(cfg, t)
            # only versions that share their key with another one are ever compared
            rank = ordering_rank(cols, n, only=multi)
            natural = deletes & default_ordering(cols, n)
        if cfg.partial == PARTIAL_NONE and not any(a.any() for a in versions.absent.values()):
            return _whole_records(t, versions, codes, multi, rank, deletes, natural)
        res = resolve(codes, versions.seq, rank, deletes, natural, multi)
        if rank is not None and versions.base is not None and cfg.partial == PARTIAL_NONE:
            # Hudi's final merge of the base record with the merged log records
            res = merge_with_base(res, rank, deletes, natural, versions.base)
        order = res.order
        live = np.flatnonzero(res.live)
        rec = res.record[live]
        win_idx = order[rec]
        # rows in version order (the base file's order first): an O(n) scatter, not a sort
        slot = np.full(n, -1, dtype=np.int64)
        slot[win_idx] = np.arange(len(win_idx), dtype=np.int64)
        kept = slot >= 0
        perm = slot[kept]
        win_idx = win_idx[perm]
        live = live[perm]
        # the winners in version order are the kept rows: a filter, cheaper than a take
        rows = t.filter(pa.array(kept))
        meta_src = None
        if cfg.partial != PARTIAL_NONE:
            meta_src = order[res.latest_eligible()[live]]
        starts = order[res.first[live]]
        for i, name in enumerate(t.column_names):
            if name in _META:
                src = meta_src
            else:
                col = t.column(name)
                lev = self._levels(cfg, versions, name, col.null_count == n, starts)
                src = None if lev is None else order[res.column_sources(lev[order])[live]]
            if src is not None and not np.array_equal(src, win_idx):
                rows = rows.set_column(
                    i, t.schema.field(i), t.column(name).take(pa.array(src, pa.int64()))
                )
        dead = np.flatnonzero(~res.live)
        deleted = np.sort(order[res.record[dead]])
        return MergeResult(rows, win_idx, deleted)


def _whole_records(
    t: pa.Table,
    versions: Versions,
    codes: np.ndarray,
    multi: np.ndarray | None,
    rank: np.ndarray | None,
    deletes: np.ndarray,
    natural: np.ndarray | None,
) -> MergeResult:
    """:meth:`BuiltinMerger.merge_batches` when every version is a whole record.

    Each live key's row is its record winner's, so only the keys with several versions are
    folded (:func:`~hudi_ds.merge.core.resolve_sorted`); a key's only version is its record,
    or the delete that removes it. The winners are kept in version order by one filter.
    """
    n = t.num_rows
    sub = np.arange(n, dtype=np.int64) if multi is None else np.flatnonzero(multi)

    def part(a: np.ndarray | None) -> np.ndarray | None:
        return None if a is None else (a if multi is None else a[sub])

    d_sub = deletes if multi is None else deletes[sub]
    r_sub, nat_sub = part(rank), part(natural)
    res = resolve_sorted(codes[sub], np.asarray(versions.seq)[sub], r_sub, d_sub, nat_sub)
    if r_sub is not None and versions.base is not None:
        # Hudi's final merge of the base record with the merged log records
        res = merge_with_base(res, r_sub, d_sub, nat_sub, versions.base[sub])
    live = res.live
    keep = np.zeros(n, dtype=bool) if multi is None else ~multi & ~deletes
    keep[sub[res.order[res.record[live]]]] = True
    dead = sub[res.order[res.record[~live]]]
    if multi is not None:
        dead = np.concatenate([np.flatnonzero(~multi & deletes), dead])
    return MergeResult(t.filter(pa.array(keep)), np.flatnonzero(keep), np.sort(dead))


def _strategy(b: str) -> str:
    return BUILTIN_STRATEGY_IDS[BEHAVIOURS[b].mode]


class OverwriteWithLatestMerger(BuiltinMerger):
    """``OverwriteWithLatestAvroPayload`` / ``COMMIT_TIME_ORDERING``: the latest write wins."""

    behaviour = "overwrite_with_latest"
    strategy_id = _strategy("overwrite_with_latest")


class DefaultMerger(BuiltinMerger):
    """``DefaultHoodieRecordPayload`` / ``EVENT_TIME_ORDERING``: the greatest ordering wins."""

    behaviour = "default"
    strategy_id = _strategy("default")


class EventTimeMerger(BuiltinMerger):
    """``EventTimeAvroPayload``: as :class:`DefaultMerger` (Hudi 1.1 maps both alike)."""

    behaviour = "event_time"
    strategy_id = _strategy("event_time")


class OverwriteNonDefaultsMerger(BuiltinMerger):
    """``OverwriteNonDefaultsWithLatestAvroPayload``: latest write; its nulls keep old values."""

    behaviour = "overwrite_non_defaults"
    strategy_id = _strategy("overwrite_non_defaults")


class PartialUpdateMerger(BuiltinMerger):
    """``PartialUpdateAvroPayload``: greatest ordering; nulls filled from the other version."""

    behaviour = "partial_update"
    strategy_id = _strategy("partial_update")
    associative = False


class AWSDmsMerger(BuiltinMerger):
    """``AWSDmsAvroPayload``: latest write; ``Op`` = ``D`` deletes."""

    behaviour = "aws_dms"
    strategy_id = _strategy("aws_dms")


class MySqlDebeziumMerger(BuiltinMerger):
    """``MySqlDebeziumAvroPayload``: greatest ``_event_seq`` (file, pos); op ``d`` deletes."""

    behaviour = "mysql_debezium"
    strategy_id = _strategy("mysql_debezium")


class PostgresDebeziumMerger(BuiltinMerger):
    """``PostgresDebeziumAvroPayload``: greatest ``_event_lsn``; op ``d`` deletes; TOAST fill."""

    behaviour = "postgres_debezium"
    strategy_id = _strategy("postgres_debezium")
    associative = False


BUILTIN_MERGERS: dict[str, type[BuiltinMerger]] = {
    cls.behaviour: cls
    for cls in (
        OverwriteWithLatestMerger,
        DefaultMerger,
        EventTimeMerger,
        OverwriteNonDefaultsMerger,
        PartialUpdateMerger,
        AWSDmsMerger,
        MySqlDebeziumMerger,
        PostgresDebeziumMerger,
    )
}


@lru_cache(maxsize=32)
def merger_for(spec: MergeSpec) -> RecordMerger:
    """The merger instance a spec selects (built-in, or the CUSTOM class; cached)."""
    if spec.behaviour is not None:
        return BUILTIN_MERGERS[spec.behaviour]()
    for path in spec.custom_classes:
        cls = load_merger_class(path)
        if cls.strategy_id == spec.strategy_id:
            return cls()
    raise ConfigError(
        f"no class in '{WriteConfig.MERGE_CUSTOM_CLASSES.key}'={list(spec.custom_classes)} "
        f"has strategy id {spec.strategy_id}"
    )
