"""The vectorised merge engine: which version of each record key survives.

One engine serves the four places records meet (pre-combine of a write batch, the COW merge with
the stored record, compaction, and MOR snapshot reads). Its input is every version of every key,
as Arrow columns, with the write order of each version (``seq``: base file first, then log
blocks in timeline order, then row order inside a block):

* ``COMMIT_TIME_ORDERING``: the version written last wins (greatest ``seq``);
* ``EVENT_TIME_ORDERING``: the version with the greatest ordering value wins, ties go to the
  version written last. A delete carrying an ordering value competes like any version. A delete
  *without* one ("natural order", Hudi's ``IntWrapper(0)``) always applies: it discards every
  earlier version of its key and ranks below any later one.

The result says, per key, which row won and whether the key is deleted. No Python loop over rows:
keys are dictionary-coded and the winners found with one ``numpy.lexsort``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hudi_ds.table_config import COMMIT_TIME_ORDERING, EVENT_TIME_ORDERING


@dataclass
class MergeInput:
    """All versions to merge, aligned row by row.

    Attributes:
        keys: record key of each version (string; per partition uniqueness is the caller's job,
            e.g. by merging one file group at a time or by prefixing the partition).
        seq: write order (int64, strictly increasing in write order).
        ordering: ordering (precombine) value of each version, or None (no ordering field).
        is_delete: whether the version is a delete (bool), or None (no deletes).
        natural_delete: deletes that carry no ordering value (always apply), or None.
    """

    keys: pa.Array
    seq: np.ndarray
    ordering: pa.Array | None = None
    is_delete: np.ndarray | None = None
    natural_delete: np.ndarray | None = None


def _codes(keys: pa.Array | pa.ChunkedArray) -> np.ndarray:
    if isinstance(keys, pa.ChunkedArray):
        keys = keys.combine_chunks()
    enc = pc.dictionary_encode(keys)
    return np.asarray(enc.indices.fill_null(-1), dtype=np.int64)


def _ordering_rank(ordering: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """Dense ascending rank of the ordering values; nulls rank lowest (0)."""
    if isinstance(ordering, pa.ChunkedArray):
        ordering = ordering.combine_chunks()
    if pa.types.is_null(ordering.type):
        return np.zeros(len(ordering), dtype=np.int64)
    if pa.types.is_dictionary(ordering.type):
        ordering = ordering.cast(ordering.type.value_type)
    ranks = pc.rank(ordering, sort_keys="ascending", tiebreaker="dense")
    rank = np.asarray(ranks, dtype=np.int64)
    nulls = np.asarray(ordering.is_null(), dtype=bool)
    if nulls.any():
        rank = np.where(nulls, 0, rank + 1)
    return rank


def resolve_latest(inp: MergeInput, mode: str) -> tuple[np.ndarray, np.ndarray]:
    """Pick the surviving version of every key.

    Args:
        inp: the versions.
        mode: ``COMMIT_TIME_ORDERING`` or ``EVENT_TIME_ORDERING`` (CUSTOM mergers are applied by
            the caller on top of the grouping this returns).

    Returns:
        ``(winners, deleted)``: indices (into the input rows) of the winning version of each key,
        in ascending index order, and a bool array saying whether that winner is a delete.
    """
    n = len(inp.keys)
    if n == 0:
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=bool)
    codes = _codes(inp.keys)
    seq = np.asarray(inp.seq, dtype=np.int64)
    is_delete = (
        np.zeros(n, dtype=bool) if inp.is_delete is None else np.asarray(inp.is_delete, bool)
    )
    use_event_time = mode == EVENT_TIME_ORDERING and inp.ordering is not None
    if mode not in (COMMIT_TIME_ORDERING, EVENT_TIME_ORDERING):
        raise ValueError(f"resolve_latest handles the built-in merge modes, not {mode!r}")

    if not use_event_time:
        order = np.lexsort((seq, codes))
    else:
        assert inp.ordering is not None
        rank = _ordering_rank(inp.ordering)
        if inp.natural_delete is not None and np.any(inp.natural_delete):
            natural = np.asarray(inp.natural_delete, dtype=bool)
            # the last natural delete of each key discards every earlier version of the key
            last_nat = np.full(int(codes.max()) + 1, np.iinfo(np.int64).min, dtype=np.int64)
            np.maximum.at(last_nat, codes[natural], seq[natural])
            cutoff = last_nat[codes]
            keep = seq >= cutoff
            rank = np.where(natural, -1, rank)
            idx = np.nonzero(keep)[0]
            order_local = np.lexsort((seq[idx], rank[idx], codes[idx]))
            order = idx[order_local]
        else:
            order = np.lexsort((seq, rank, codes))
    sorted_codes = codes[order]
    last = np.ones(len(order), dtype=bool)
    last[:-1] = sorted_codes[1:] != sorted_codes[:-1]
    winners = np.sort(order[last])
    return winners, is_delete[winners]
