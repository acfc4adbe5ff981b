"""The COW merge of one file group, touching only the rows the write changes.

A copy-on-write write rewrites each touched file group's base file: the stored rows, merged
with the incoming versions and delete keys (Java ``HoodieMergeHandle``). Most stored rows are
not in the write: their merge is the row itself, so :func:`merge_touched` runs the table's
merge (:func:`hudi_ds.write.merge_handle.merge_into_base`) over the stored rows whose keys the
write names only, and passes the others through untouched. As Java's merge handle writes
them, the new base file holds the stored rows in their order (an updated row in its old
place, a deleted one gone), then the inserted rows in write order.

When no stored row goes away (an upsert without deletes) the new file's record keys are the
old file's, in order, followed by the inserted keys: its bloom filter is the old file's filter
with the inserted keys added (:func:`carried_bloom_filter`), equal to a filter built from
every key, without hashing the stored keys again. When some go away, the old filter with the
inserted keys added still holds every key of the new file (and the removed ones: false
positives a lookup resolves against the file's keys); it is carried while no row of it holds
more keys than it is sized for.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hudi_ds.layout.bloom_filter import (
    BLOOM_FILTER_FOOTER,
    BLOOM_FILTER_TYPE_CODE_FOOTER,
    BloomFilter,
    BloomFilterSpec,
)
from hudi_ds.merge.modes import MergeSpec
from hudi_ds.schema.meta import IS_DELETED_FIELD, RECORD_KEY_METADATA_FIELD

#: ``merge(stored rows, incoming rows, delete keys)`` -> ``(rows, updates, inserts, deletes)``
#: (:func:`hudi_ds.write.merge_handle.merge_into_base` of one handle).
MergeFn = Callable[[pa.Table, pa.Table, pa.Table], tuple[pa.Table, int, int, int]]


@dataclass(frozen=True)
class CowMerge:
    """The merged rows of one file group and what the write did to it.

    Attributes:
        rows: the new base file's rows (stored rows in their order, then the inserted rows).
        updates, inserts, deletes: existing keys the write changed, keys it inserted, existing
            keys it deleted.
        appended: the record keys after the stored rows when every stored row is kept in its
            place (the new file's keys are the old file's, then these); None otherwise.
        inserted, removed: the record keys the new file adds to the stored keys and the stored
            keys it drops, when the touched-rows merge tells them (None otherwise).
    """

    rows: pa.Table
    updates: int
    inserts: int
    deletes: int
    appended: pa.Array | None
    inserted: pa.Array | None = None
    removed: pa.Array | None = None


def _key_array(table: pa.Table) -> pa.Array:
    col = table.column(RECORD_KEY_METADATA_FIELD)
    arr = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    return arr if arr.type == pa.string() else arr.cast(pa.string())


def _marked_deleted(old: pa.Table, spec: MergeSpec) -> np.ndarray | None:
    """Stored rows a merge deletes on their own (``_hoodie_is_deleted``, the behaviour's
    delete marker), or None when there are none: they merge like touched rows."""
    out: np.ndarray | None = None
    if IS_DELETED_FIELD in old.column_names:
        flag = old.column(IS_DELETED_FIELD)
        if flag.null_count < len(flag):
            out = np.asarray(pc.fill_null(flag, False).combine_chunks(), dtype=bool)
    b = spec.builtin
    if b is not None and b.delete_field and b.delete_marker and b.delete_field in old.column_names:
        col = old.column(b.delete_field).combine_chunks()
        if pa.types.is_dictionary(col.type):
            col = col.cast(col.type.value_type)
        if not pa.types.is_string(col.type):
            col = col.cast(pa.string())
        hit = np.asarray(
            pc.equal(pc.utf8_lower(col), b.delete_marker.lower()).fill_null(False), dtype=bool
        )
        out = hit if out is None else out | hit
    return out if out is not None and out.any() else None


def merge_touched(
    old: pa.Table, incoming: pa.Table, dels: pa.Table, spec: MergeSpec, merge: MergeFn
) -> CowMerge:
    """Merge incoming rows and delete keys into a file group's stored rows ``old``.

    Only the stored rows whose keys the write names (and rows marked deleted) go through
    ``merge`` with the incoming versions; a built-in merger leaves every other stored row as
    it is, so those are copied as they are. A custom merger (which may rewrite a lone stored
    record) merges every row. The rows of the result are those of ``merge(old, incoming,
    dels)``; their order: the stored rows' order (updates in place), then the inserts.
    """
    n_old = old.num_rows
    if n_old == 0 or spec.builtin is None:
        rows, u, i, d = merge(old, incoming, dels)
        if n_old == 0:
            keys = _key_array(rows)
            return CowMerge(rows, u, i, d, keys, keys, keys.slice(0, 0))
        return CowMerge(rows, u, i, d, None)
    old_keys = _key_array(old)
    probe = pa.chunked_array(
        [_key_array(incoming), _key_array(dels)], type=pa.string()
    ).combine_chunks()
    hit = np.asarray(pc.is_in(old_keys, value_set=probe), dtype=bool)
    marked = _marked_deleted(old, spec)
    if marked is not None:
        hit |= marked
    touched = np.flatnonzero(hit)
    sub = old.take(pa.array(touched, pa.int64()))
    rows_s, u, i, d = merge(sub, incoming, dels)
    if not old.schema.equals(rows_s.schema, check_metadata=False):
        rows, u, i, d = merge(old, incoming, dels)  # types changed: no pass-through
        return CowMerge(rows, u, i, d, None)
    # each merged row: the position of its stored row, or -1 for an insert
    at = pc.index_in(_key_array(rows_s), value_set=_key_array(sub))
    sub_pos = np.asarray(at.fill_null(-1), dtype=np.int64)
    is_upd = sub_pos >= 0
    upd_rows = np.flatnonzero(is_upd)
    ins_rows = np.flatnonzero(~is_upd)
    upd_pos = touched[sub_pos[upd_rows]]
    keep = ~hit
    keep[upd_pos] = True
    n_kept = int(keep.sum())
    if n_kept != n_old - int(hit.sum()) + len(upd_rows):
        # a stored key merged into several rows (not one row per key): merge every row
        rows, u, i, d = merge(old, incoming, dels)
        return CowMerge(rows, u, i, d, None)
    meta = rows_s.schema.metadata
    ins_idx = pa.array(ins_rows, pa.int64())
    if len(upd_rows) == 0:
        # nothing replaced in place (deletes, or only updates that lost): drop and append
        kept = old if n_kept == n_old else old.filter(pa.array(keep))
        rows = pa.concat_tables([kept.replace_schema_metadata(meta), rows_s.take(ins_idx)])
    else:
        src = np.arange(n_old, dtype=np.int64)
        src[upd_pos] = n_old + upd_rows
        src = np.concatenate([src[keep], n_old + ins_rows])
        both = pa.concat_tables([old.replace_schema_metadata(meta), rows_s])
        rows = both.take(pa.array(src, pa.int64()))
    inserted = _key_array(rows_s).take(ins_idx)  # (the inserted rows are in ``rows``)
    # the touched stored rows that left: no merged row replaced them
    replaced = np.zeros(len(touched), dtype=bool)
    replaced[sub_pos[upd_rows]] = True
    removed = _key_array(sub).filter(pa.array(~replaced))
    appended = inserted if n_kept == n_old else None
    return CowMerge(rows, u, i, d, appended, inserted, removed)


#: A carried filter holds at most one removed key per this many keys of its file.
_MAX_STALE_SHARE = 8
#: below this many keys a file's filter is rebuilt: parsing the old one (a base64 footer of
#: ``hoodie.index.bloom.num_entries`` bits) costs more than hashing a few thousand keys
MIN_CARRIED_KEYS = 8192


def carried_bloom_filter(
    footer: Mapping[bytes, bytes] | None,
    spec: BloomFilterSpec,
    n_old: int,
    appended: pa.Array | None,
    removed: int = 0,
) -> BloomFilter | None:
    """The new base file's bloom filter from the old file's, when that is exact or a bounded
    superset; None: build it anew from the new file's keys.

    ``footer``: the old base file's key-value metadata; ``n_old`` its rows; ``appended``: the
    keys the new file adds to the old file's; ``removed``: how many of the old file's keys it
    drops.

    Exact (``removed`` 0, the old keys kept in order, ``appended`` after them): when the old
    filter has this ``spec``'s shape and (dynamic) holds ``n_old`` keys in rows not yet
    saturated, adding ``appended`` puts every key where a filter built from all keys in order
    puts it.

    A superset (keys removed; dynamic filters only): the old filter plus ``appended`` holds
    every key of the new file and the removed ones. Java's ``HoodieMergeHandle`` builds the
    filter from the written keys instead, but a reader only asks a bloom filter which keys
    *may* be in the file and then checks them against the file's own keys
    (``HoodieKeyLookupHandle``; :mod:`hudi_ds.index.bloom`): a removed key is one more false
    positive, resolved there. The filter keeps counting the removed keys
    (``currentNbRecord``), so the rows it opens are those of the keys it holds, and it is
    carried only while it has no more rows than a fresh filter of the new file's keys would
    (no row holds more keys than it is sized for, ``hoodie.index.bloom.num_entries``: the
    false-positive rate stays within ``hoodie.index.bloom.fpp``) and at most one key in
    :data:`_MAX_STALE_SHARE` of the file's is a removed one. Past that it is rebuilt, which
    drops the removed keys (a file of no rows gets an empty filter, as Java's).

    Rebuilding hashes every kept key ``num_hashes`` times (measured: a sixth of the CPU of a
    COW MERGE that deletes a few keys of every file group); carrying hashes the added keys.
    """
    if appended is None:
        return None
    old = _old_filter(footer, spec, n_old)
    if old is None or not _carry_holds(old, spec, n_old, len(appended), removed):
        return None
    bf = old[0]
    bf.add(appended)
    return bf


def _old_filter(
    footer: Mapping[bytes, bytes] | None, spec: BloomFilterSpec, n_old: int
) -> tuple[BloomFilter, int] | None:
    """The old base file's filter and how many keys it holds (dynamic; SIMPLE: ``n_old``),
    when it has ``spec``'s shape and can take more keys (:func:`carried_bloom_filter`); its
    ``max_nr`` set to the spec's."""
    if footer is None or n_old < max(1, MIN_CARRIED_KEYS):
        return None
    raw = footer.get(BLOOM_FILTER_FOOTER.encode())
    if raw is None:
        return None
    code = footer.get(BLOOM_FILTER_TYPE_CODE_FOOTER.encode())
    try:
        bf = BloomFilter.parse(raw, code.decode() if code is not None else None)
    except (ValueError, UnicodeDecodeError):
        return None
    fresh = spec.new_filter()
    if (bf.dynamic, bf.vector_size, bf.num_hashes) != (
        fresh.dynamic,
        fresh.vector_size,
        fresh.num_hashes,
    ):
        return None
    if not bf.dynamic:
        return bf, n_old
    if bf.nr != fresh.nr or bf.current > bf.nr:  # other rows, or saturated
        return None
    if len(bf.rows) > 1 and (len(bf.rows) - 1) * bf.nr >= fresh.max_nr:
        return None  # more rows than this spec grows to
    bf.max_nr = fresh.max_nr
    return bf, (len(bf.rows) - 1) * bf.nr + bf.current


def _carry_holds(
    old: tuple[BloomFilter, int], spec: BloomFilterSpec, n_old: int, n_added: int, removed: int
) -> bool:
    """Whether the old filter (holding ``old[1]`` keys), with ``n_added`` keys added, is the
    new file's filter: exact or a bounded superset (:func:`carried_bloom_filter`)."""
    bf, held = old
    if not bf.dynamic:
        return removed == 0  # a SIMPLE filter counts no keys: removed ones cannot be bounded
    if removed == 0 and held == n_old:
        return True
    n_new = n_old - removed + n_added
    rows = max(1, -(-n_new // bf.nr))  # the rows of a fresh filter of the new keys
    stale = held - n_old + removed  # keys it holds that the new file does not
    # not known to hold every key, too many gone, or rows overfilled
    return not (
        held < n_old
        or stale * _MAX_STALE_SHARE > n_new
        or (rows > 1 and (rows - 1) * bf.nr >= spec.max_entries)  # past the spec's rows
        or held + n_added > rows * bf.nr
    )


class StreamedBloomFilter:
    """The bloom filter of a new base file written group by group (a streamed or
    key-partitioned merge, Java ``HoodieMergeHandle`` over a base file that does not fit):
    the old file's filter carried as :func:`carried_bloom_filter` carries it, decided once the
    last group is written.

    While the old filter may still be carried, each group adds its inserted keys to it and
    the record keys of every written row are kept (up to ``key_budget`` bytes); at
    :meth:`finish` the carry either holds (exact, or a bounded superset) or the filter is
    rebuilt from the kept keys, in their written order. Past the budget the filter is rebuilt
    from the keys kept so far and then takes every written key, as a fresh filter does.

    Args:
        footer, n_old: the old base file's key-value metadata and row count.
        spec: the filter spec of new base files.
        key_budget: bytes of record keys kept at most while the decision waits.
    """

    def __init__(
        self,
        footer: Mapping[bytes, bytes] | None,
        spec: BloomFilterSpec,
        n_old: int,
        key_budget: int,
    ) -> None:
        self._spec, self._n_old, self._budget = spec, n_old, key_budget
        self._old = _old_filter(footer, spec, n_old)
        #: the filter the file's footer gets (the writer's: it hashes nothing itself)
        self.filter = self._old[0] if self._old is not None else spec.new_filter()
        self._carrying = self._old is not None
        self._kept: list[pa.Array] = []
        self._kept_bytes = 0
        self._added = self._removed = 0

    def written(self, keys: pa.Array, inserted: pa.Array | None, removed: int) -> None:
        """A group's rows are written: ``keys`` their record keys, in order; ``inserted`` the
        keys they add to the old file's (None: not told), ``removed`` how many of its keys
        they drop."""
        if not self._carrying:
            self.filter.add(keys)
            return
        if inserted is None:  # the group does not tell what it added: no carry
            self._rebuild(keys)
            return
        self._kept.append(keys)
        self._kept_bytes += keys.nbytes
        if self._kept_bytes > self._budget:
            self._rebuild()
            return
        self.filter.add(inserted)
        self._added += len(inserted)
        self._removed += removed

    def finish(self) -> BloomFilter:
        """The new file's filter, every written key in it."""
        if self._carrying:
            assert self._old is not None
            if not _carry_holds(self._old, self._spec, self._n_old, self._added, self._removed):
                self._rebuild()
        self._kept = []
        return self.filter

    def _rebuild(self, more: pa.Array | None = None) -> None:
        """Stop carrying: the filter from the kept keys (and ``more``) only."""
        self._carrying = False
        self.filter.reset(self._spec.new_filter())
        for keys in (*self._kept, *(() if more is None else (more,))):
            self.filter.add(keys)
        self._kept, self._kept_bytes = [], 0
