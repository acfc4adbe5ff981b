"""Vectorised kernels of the merge engine: ordering ranks, winners, column sources.

Everything here works on numpy arrays over *all* versions of *all* keys at once. The versions
are sorted once by (key, write order) (:func:`key_order`); per-key results come from
``ufunc.reduceat`` over the key runs. No Python loop touches rows.

The merge rule these kernels implement is a left fold over each key's versions in write order
(see :func:`resolve`): a version *wins* when its ordering rank is at least the greatest rank
seen so far for the key (commit time: every version wins), a winning delete discards the
record, and under event time a delete with Hudi's default ordering value (a *natural* delete:
null, or 0 of an int field, :func:`default_ordering`) also restarts the ranking. The deletes
that follow a natural delete before any data version leave its tombstone as it is (they are
not winners), so the natural delete reports the deletion and a pre-combined run of deletes
re-merges as the run does.

Grouping: with versions grouped as writers group them (a batch's rows, then its deletes) the
fold of the groups equals the fold of all versions, except in one case where Hudi's own
result depends on the grouping too: under a natural delete's tombstone, a batch holding a
data version and then a greater delete of the key. One by one, the data version replaces the
tombstone and the delete then outranks later, smaller data versions; pre-combined, the batch
is its delete, which the tombstone absorbs (Hudi 1.1 ``BaseWriteHelper.reduceRecords`` /
``BufferedRecordMergerFactory.deltaMergeDeleteRecord``; pinned in
``tests/merge/test_properties.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hudi_ds.schema.evolution import whole


def key_codes(keys: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """Dictionary codes of the record keys (int64; nulls -1)."""
    indices = pc.dictionary_encode(whole(keys)).indices
    if indices.null_count:
        indices = indices.fill_null(-1)
    return np.asarray(indices).astype(np.int64)


def _rank(values: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """Ascending rank starting at 1 (equal values rank equal); nulls rank 0 (lowest).

    Integers rank by their offset from the smallest value when ``range * n`` stays far
    below 2**63 (:func:`resolve_sorted` combines ranks with key segments as
    ``segment * (max rank + 1) + rank``): an O(n) subtraction instead of the sort of a
    dense rank. Other types, and integers of a wider range, get the dense rank.
    """
    values = whole(values)
    n = len(values)
    if pa.types.is_null(values.type) or values.null_count == n:
        return np.zeros(n, dtype=np.int64)
    if pa.types.is_dictionary(values.type):
        values = values.cast(values.type.value_type)
    offset = _offset_rank(values)
    if offset is not None:
        return offset
    rank = np.asarray(pc.rank(values, sort_keys="ascending", tiebreaker="dense"), dtype=np.int64)
    if values.null_count:
        nulls = np.asarray(values.is_null(), dtype=bool)
        return np.where(nulls, 0, rank)
    return rank


def _offset_rank(values: pa.Array | pa.ChunkedArray) -> np.ndarray | None:
    """:func:`_rank` of integers by offset from the smallest value (None: not integers, or
    too wide a range for that, or nothing but nulls)."""
    if not pa.types.is_integer(values.type) or values.null_count == len(values):
        return None
    lo_hi = pc.min_max(values)
    lo, hi, n = lo_hi["min"].as_py(), lo_hi["max"].as_py(), len(values)
    if not (lo > -(1 << 62) and hi < 1 << 62 and (hi - lo + 2) * (n + 1) < 1 << 62):
        return None
    values = whole(values)
    filled = values.fill_null(lo) if values.null_count else values
    rank = np.asarray(filled, dtype=np.int64) - (lo - 1)
    if values.null_count:
        rank[np.asarray(values.is_null(), dtype=bool)] = 0
    return rank


def ordering_rank(
    columns: Sequence[pa.Array | pa.ChunkedArray], n: int, only: np.ndarray | None = None
) -> np.ndarray:
    """Ascending rank of the ordering values (lexicographic over ``columns``); nulls lowest.

    Equal ordering values get equal ranks, a greater value a greater rank (not necessarily
    the next one: one integer field ranks by offset, :func:`_rank`); a version whose ordering
    values are all null ranks 0 (below any value).

    ``only``: the versions whose ranks are read (a bool mask; None: all). The others rank
    anything (0 when the ranks are sorted out of the values of ``only``).
    """
    if not columns:
        return np.zeros(n, dtype=np.int64)
    if len(columns) == 1:
        offset = _offset_rank(columns[0])
        if offset is not None:
            return offset
    if only is not None:
        out = np.zeros(n, dtype=np.int64)
        mask = pa.array(only)
        out[only] = ordering_rank([c.filter(mask) for c in columns], int(only.sum()))
        return out
    ranks = [_rank(c) for c in columns]
    if len(ranks) == 1:
        return ranks[0]
    order = np.lexsort(tuple(reversed(ranks)))
    sorted_ranks = np.stack([r[order] for r in ranks])
    change = np.ones(n, dtype=bool)
    change[1:] = np.any(sorted_ranks[:, 1:] != sorted_ranks[:, :-1], axis=0)
    dense = np.cumsum(change) - 1
    all_null = np.all(sorted_ranks == 0, axis=0)
    # keep "all null" at rank 0 and everything else above it
    base = dense if all_null.any() and all_null[0] else dense + 1
    out = np.empty(n, dtype=np.int64)
    out[order] = np.where(all_null, 0, base)
    return out


def reads_as_java_int(t: pa.DataType) -> bool:
    """Whether Hudi reads ordering values of Arrow type ``t`` as a Java ``Integer``: the types
    stored as Avro ``int`` (signed up to 32 bits, unsigned up to 16; delete blocks wrap them in
    ``IntWrapper``)."""
    return pa.types.is_integer(t) and (
        t.bit_width <= 16 or (pa.types.is_signed_integer(t) and t.bit_width == 32)
    )


def default_ordering(columns: Sequence[pa.Array | pa.ChunkedArray], n: int) -> np.ndarray:
    """Per version: whether its ordering value is Hudi's default, the commit-time ordering
    marker (a delete with it is a *natural* delete).

    Hudi 1.1: a null ordering field reads as ``OrderingValues.getDefault()``
    (``RecordContext.getOrderingValue``, ``OrderingValues.handleNullValue``), the ``Integer``
    ``HoodieRecord.DEFAULT_ORDERING_VALUE`` = 0, and ``OrderingValues.isDefault`` is
    ``Integer.valueOf(0).equals(value)``: an explicit 0 of an ``int`` field is the default too,
    a ``long`` 0 is not, nor any value of several ordering fields (an ``ArrayComparable``) but
    all nulls (hudi_ds writes those deletes with no ordering value). The log reader decodes
    ``IntWrapper(0)`` to null the same way (:func:`hudi_ds.log.reader.decode_delete_block`).
    """
    if not columns:
        return np.ones(n, dtype=bool)
    if any(c.null_count == 0 for c in columns):  # a value in every version (no bool copies)
        out = np.zeros(n, dtype=bool)
    else:
        out = np.all([np.asarray(c.is_null(), dtype=bool) for c in columns], axis=0)
    if len(columns) == 1 and reads_as_java_int(columns[0].type):
        zero = pc.fill_null(pc.equal(columns[0], 0), False)
        zero = whole(zero)
        out = out | np.asarray(zero, dtype=bool)
    return out


@dataclass
class Resolution:
    """The outcome of :func:`resolve` (positions are in the sorted order ``order``).

    Attributes:
        order: sorted position -> version index (sorted by key, then write order).
        key_starts: sorted position where each key's run starts.
        key_of: per sorted position, the key run it belongs to.
        winner: per sorted position, whether the version won when it was merged.
        eligible: per sorted position, whether the version contributes to the live record
            (non-delete versions after the key's last winning delete, from the first winner
            on).
        live: per key, whether it survives (False: deleted).
        first: per key, the sorted position of the version that started the live record (the
            first winner after the last winning delete; ``len(order)`` for deleted keys).
        record: per key, the sorted position of the record winner (live keys) or of the delete
            that decided it (deleted keys).
    """

    order: np.ndarray
    key_starts: np.ndarray
    key_of: np.ndarray
    winner: np.ndarray
    eligible: np.ndarray
    live: np.ndarray
    first: np.ndarray
    record: np.ndarray

    def latest_eligible(self) -> np.ndarray:
        """Per key: sorted position of the last contributing version."""
        pos = np.arange(len(self.order), dtype=np.int64)
        return np.maximum.reduceat(np.where(self.eligible, pos, -1), self.key_starts)

    def column_sources(self, level: np.ndarray) -> np.ndarray:
        """Per key: sorted position of the version whose value a column takes.

        Args:
            level: per sorted position, how much the version says about the column:
                2 = a value, 1 = "unchanged" (null under IGNORE_DEFAULTS, a marker under
                IGNORE_MARKERS), 0 = the version does not carry the column.

        The left fold keeps the value of the highest level seen; a winning version takes over
        on ties, a losing one only when it raises the level. So the source is the last winner
        at the key's highest level, or else the first version at that level.
        """
        n = len(self.order)
        pos = np.arange(n, dtype=np.int64)
        ks = self.key_starts
        masked = np.where(self.eligible, level, -1)
        top = np.maximum.reduceat(masked, ks)
        at = self.eligible & (level == top[self.key_of])
        last_w = np.maximum.reduceat(np.where(at & self.winner, pos, -1), ks)
        first = np.minimum.reduceat(np.where(at, pos, n), ks)
        return np.where(last_w >= 0, last_w, first)


def key_order(codes: np.ndarray, seq: np.ndarray) -> np.ndarray:
    """The permutation that sorts versions by (key code, write order): ``np.lexsort((seq,
    codes))``.

    When the versions are given in write order (``seq`` not decreasing, as every merge builds
    them) that is a stable sort of the codes alone, done as a radix sort of 16-bit digits
    (numpy's stable sort of ``uint16`` is a radix sort: O(n), about 9x faster than a
    comparison sort of 8k codes): one pass for fewer than 65,536 keys, two (low digit, then
    high digit) below 2**32.
    """
    seq = np.asarray(seq, dtype=np.int64)
    n = len(codes)
    if n < 2 or not bool(np.all(seq[1:] >= seq[:-1])):
        return np.lexsort((seq, codes))
    c = np.asarray(codes, dtype=np.int64) + 1  # null keys (-1) sort first, as in lexsort
    top = int(c.max())
    if int(c.min()) < 0 or top >= 1 << 32:
        return np.lexsort((seq, codes))
    if top < 1 << 16:
        return np.argsort(c.astype(np.uint16), kind="stable")
    order = np.argsort((c & 0xFFFF).astype(np.uint16), kind="stable")
    return order[np.argsort((c[order] >> 16).astype(np.uint16), kind="stable")]


def multi_version(codes: np.ndarray) -> np.ndarray | None:
    """Which versions share their key with another version (None: every version does).

    A key with a single version needs no fold: that version is the record (or the delete
    that removes it). Only the others go through the sort in :func:`resolve`, and their
    ordering values are the only ones that need ranking.
    """
    n = len(codes)
    if n == 0:
        return None
    counts = np.bincount(codes + 1)  # null keys (-1) form one key, as in the sort
    multi = counts[codes + 1] > 1
    return None if multi.all() else multi


def resolve(
    codes: np.ndarray,
    seq: np.ndarray,
    rank: np.ndarray | None,
    deletes: np.ndarray,
    natural: np.ndarray | None = None,
    multi: np.ndarray | None = None,
) -> Resolution:
    """Fold every key's versions in write order (vectorised).

    Keys with one version are resolved without sorting: they come first in the sorted order
    (one run each), followed by the other keys' runs sorted by key, then write order. Only the
    grouping into runs matters to the callers, not the order of the runs.

    Args:
        codes: key code per version.
        seq: write order per version.
        rank: ordering rank per version (event time), or None (commit time: latest wins).
            Only the ranks of versions sharing their key are read.
        deletes: whether each version is a delete.
        natural: natural deletes (Hudi's default ordering value): they always apply and
            restart the ranking; later deletes leave their tombstone as it is and a later data
            version always wins over it.
        multi: :func:`multi_version` of ``codes`` when the caller has it already (None:
            computed here).

    Returns:
        The :class:`Resolution`.
    """
    n = len(codes)
    if multi is None:
        multi = multi_version(codes)
    if multi is None:
        return resolve_sorted(codes, seq, rank, deletes, natural)
    single = np.flatnonzero(~multi)
    sub = np.flatnonzero(multi)
    ns = len(single)
    r = resolve_sorted(
        codes[sub],
        np.asarray(seq)[sub],
        None if rank is None else np.asarray(rank)[sub],
        np.asarray(deletes, dtype=bool)[sub],
        None if natural is None else np.asarray(natural, dtype=bool)[sub],
    )
    m = len(sub)
    d_s = np.asarray(deletes, dtype=bool)[single]
    pos_s = np.arange(ns, dtype=np.int64)
    return Resolution(
        order=np.concatenate([single, sub[r.order]]),
        key_starts=np.concatenate([pos_s, r.key_starts + ns]),
        key_of=np.concatenate([pos_s, r.key_of + ns]),
        winner=np.concatenate([np.ones(ns, dtype=bool), r.winner]),
        eligible=np.concatenate([~d_s, r.eligible]),
        live=np.concatenate([~d_s, r.live]),
        first=np.concatenate([np.where(d_s, n, pos_s), np.where(r.first < m, r.first + ns, n)]),
        record=np.concatenate([pos_s, np.where(r.record >= 0, r.record + ns, r.record)]),
    )


def resolve_sorted(
    codes: np.ndarray,
    seq: np.ndarray,
    rank: np.ndarray | None,
    deletes: np.ndarray,
    natural: np.ndarray | None = None,
) -> Resolution:
    """:func:`resolve` by sorting every version by (key, write order) (no shortcut for keys
    with one version)."""
    n = len(codes)
    if n == 0:
        e = np.empty(0, dtype=np.int64)
        b = np.empty(0, dtype=bool)
        return Resolution(e, e, e, b, b, b, e, e)
    order = key_order(codes, seq)
    c = codes[order]
    d = np.asarray(deletes, dtype=bool)[order]
    pos = np.arange(n, dtype=np.int64)
    key_first = np.ones(n, dtype=bool)
    key_first[1:] = c[1:] != c[:-1]
    key_starts = np.flatnonzero(key_first)
    key_of = np.cumsum(key_first) - 1
    if rank is None:
        winner = np.ones(n, dtype=bool)
    else:
        nat = d & (np.asarray(natural, dtype=bool)[order] if natural is not None else False)
        eff = np.asarray(rank, dtype=np.int64)[order] + 1
        tomb = np.zeros(n, dtype=bool)
        if nat.any():
            # A natural delete is Hudi's commit-time-ordering delete (its ordering value is the
            # default 0: BufferedRecord.isCommitTimeOrderingDelete). Folded as Hudi 1.1's
            # BufferedRecordMergerFactory does: data after it always wins
            # (shouldKeepNewerRecord), and every delete after it -- natural or not -- until
            # the next data version leaves the buffered tombstone as it is
            # (deltaMergeDeleteRecord returns Option.empty() for an existing
            # commit-time-ordering delete). Those deletes are not winners, so the run's first
            # natural delete reports the deletion: pre-combining the run yields that natural
            # delete, which re-merges as the run does.
            start = np.repeat(key_starts, np.diff(np.append(key_starts, n)))
            before = np.empty(n, dtype=np.int64)
            last_nat = np.maximum.accumulate(np.where(nat, pos, -1))
            last_data = np.maximum.accumulate(np.where(~d, pos, -1))
            before[0] = -1
            before[1:] = last_nat[:-1]
            in_run = (before >= start) & (before > np.concatenate([[-1], last_data[:-1]]))
            tomb = d & in_run
            nat = nat & ~in_run  # only a run's first natural delete restarts the ranking
            eff = np.where(nat | tomb, 0, eff)
        seg_first = key_first | nat
        seg = np.cumsum(seg_first) - 1
        width = int(eff.max()) + 1
        v = seg * width + eff
        running = np.maximum.accumulate(v)
        prev = np.empty(n, dtype=np.int64)
        prev[0] = 0
        prev[1:] = running[:-1]
        winner = (seg_first | (eff >= prev - seg * width)) & ~tomb
    win_del = winner & d
    last_del = np.maximum.reduceat(np.where(win_del, pos, -1), key_starts)
    after = pos > last_del[key_of]
    first = np.minimum.reduceat(np.where(winner & ~d & after, pos, n), key_starts)
    live = first < n
    eligible = ~d & (pos >= first[key_of])
    w = np.maximum.reduceat(np.where(eligible & winner, pos, -1), key_starts)
    record = np.where(live, w, last_del)
    return Resolution(order, key_starts, key_of, winner, eligible, live, first, record)


def merge_with_base(
    res: Resolution,
    rank: np.ndarray,
    deletes: np.ndarray,
    natural: np.ndarray | None,
    base: np.ndarray,
) -> Resolution:
    """Event time: the base file's version against the merged log versions (Hudi's final merge).

    Hudi merges a file slice in two steps: it folds the log records of each key (a delta
    merge), then merges the base file's record (older) with the fold's result (newer). A
    delete without an ordering value (a *natural* delete: the delete operation, Spark SQL
    ``DELETE``) discards what the fold holds -- but not the base record, which only meets the
    fold's result at the end. A version written after such a delete therefore wins the fold
    and is then compared with the base record by ordering value: if the base record's is
    greater, the base record is returned, as if the delete had not happened.

    * Hudi 0.15 (table version 6), ``DefaultHoodieRecordPayload``: the log fold takes a data
      record over a buffered delete whatever their ordering values
      (``OverwriteWithLatestAvroPayload.preCombine``: "use natural order for delete record"),
      then ``DefaultHoodieRecordPayload.combineAndGetUpdateValue`` keeps the stored record when
      ``needUpdatingPersistedRecord`` finds its ordering value greater.
    * Hudi 1.1 (``BufferedRecordMergerFactory.EventTimeBufferedRecordMerger``): ``deltaMerge``
      keeps a newer record over a commit-time-ordering delete (``shouldKeepNewerRecord``), a
      delete with an ordering value does not replace such a delete
      (``deltaMergeDeleteRecord``), and ``finalMerge`` returns the older (base) record when
      ``oldOrderingValue.compareTo(newOrderingValue) > 0`` unless the newer one is a
      commit-time-ordering delete.

    Keys with no natural delete after their base version are left as :func:`resolve` folded
    them: without a restart the one fold already equals the two steps.

    Args:
        res: :func:`resolve` of all versions (base versions first in write order).
        rank: ordering rank per version.
        deletes: whether each version is a delete.
        natural: natural deletes (None: none).
        base: whether each version comes from the base file.

    Returns:
        ``res`` with the keys whose base version wins the final merge made live again, the
        base version as their only contributing version.
    """
    n = len(res.order)
    if n == 0 or natural is None or not base.any():
        return res
    order, ks, key_of = res.order, res.key_starts, res.key_of
    d = np.asarray(deletes, dtype=bool)[order]
    nat = np.asarray(natural, dtype=bool)[order] & d
    if not nat.any():
        return res
    r = np.asarray(rank, dtype=np.int64)[order]
    pos = np.arange(n, dtype=np.int64)
    bpos = np.minimum.reduceat(np.where(np.asarray(base, dtype=bool)[order], pos, n), ks)
    last_nat = np.maximum.reduceat(np.where(nat, pos, -1), ks)
    cand = (bpos < n) & (last_nat > bpos)
    if not cand.any():
        return res
    rec = res.record
    # deleted keys: a natural tombstone stays (a later delete with an ordering value does not
    # replace it); a delete with an ordering value that follows a data version competes
    data_after_nat = np.maximum.reduceat(
        np.where(res.winner & ~d & (pos > last_nat[key_of]), pos, -1), ks
    )
    ordered_del = ~res.live & (rec != last_nat) & (data_after_nat >= 0) & (data_after_nat < rec)
    contest = cand & (res.live | ordered_del)
    safe_b = np.minimum(bpos, n - 1)
    revive = contest & (r[safe_b] > r[np.clip(rec, 0, n - 1)])
    if not revive.any():
        return res
    live = res.live | revive
    record = np.where(revive, bpos, rec)
    first = np.where(revive, bpos, res.first)
    on_revived = revive[key_of]
    eligible = np.where(on_revived, pos == bpos[key_of], res.eligible)
    return Resolution(order, ks, key_of, res.winner, eligible, live, first, record)
