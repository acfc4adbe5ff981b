"""The vectorised merge engine against a plain per-record model of Hudi's merge rules."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from hudi_ds.merge.core import ordering_rank
from hudi_ds.merge.engine import MergeInput, resolve_latest
from hudi_ds.table_config import COMMIT_TIME_ORDERING, EVENT_TIME_ORDERING

# one version: (key, ordering or None, kind) with kind "data" | "delete" | "natural"
version = st.tuples(
    st.sampled_from(["a", "b", "c", "d"]),
    st.one_of(st.none(), st.integers(0, 5)),
    st.sampled_from(["data", "data", "delete", "natural"]),
)


def model(versions, mode):
    """Fold the versions in write order, exactly as the merge rules say.

    Event time: a natural delete (no ordering value) always applies. Its tombstone stays as it
    is under any later delete -- natural or not -- and loses to any later data version (Hudi 1.1
    ``BufferedRecordMergerFactory``: ``deltaMergeDeleteRecord`` keeps an existing
    commit-time-ordering delete, ``shouldKeepNewerRecord`` lets data replace it), so that
    natural delete reports the deletion. Commit time: the latest version wins.
    """
    state: dict[str, tuple[int, int | None, bool]] = {}
    natural: set[str] = set()  # keys whose state is a natural delete's tombstone (event time)
    for i, (k, o, kind) in enumerate(versions):
        cur = state.get(k)
        new = (i, o, kind != "data")
        if mode == EVENT_TIME_ORDERING and k in natural:
            if kind == "data":  # replaces the tombstone whatever its ordering value
                state[k] = new
                natural.discard(k)
            continue  # a delete leaves the tombstone (and the delete reporting it) as it is
        if kind == "natural":
            state[k] = new
            if mode == EVENT_TIME_ORDERING:
                natural.add(k)
            continue
        if cur is None or mode == COMMIT_TIME_ORDERING:
            state[k] = new
            continue
        co = -1 if cur[1] is None else cur[1]
        no = -1 if o is None else o
        if no >= co:
            state[k] = new
    return {k: (v[0], v[2]) for k, v in state.items()}


def run(versions, mode):
    n = len(versions)
    inp = MergeInput(
        keys=pa.array([v[0] for v in versions], pa.string()),
        seq=np.arange(n, dtype=np.int64),
        ordering=pa.array([v[1] for v in versions], pa.int64()),
        is_delete=np.array([v[2] != "data" for v in versions], bool),
        natural_delete=np.array([v[2] == "natural" for v in versions], bool),
    )
    winners, deleted = resolve_latest(inp, mode)
    return {versions[w][0]: (int(w), bool(d)) for w, d in zip(winners, deleted, strict=True)}


@settings(max_examples=300)
@given(st.lists(version, max_size=30), st.sampled_from([EVENT_TIME_ORDERING, COMMIT_TIME_ORDERING]))
def test_engine_matches_fold_model(versions, mode) -> None:
    assert run(versions, mode) == model(versions, mode)


def test_event_time_late_update_loses() -> None:
    v = [("k", 10, "data"), ("k", 5, "data")]
    assert run(v, EVENT_TIME_ORDERING) == {"k": (0, False)}
    assert run(v, COMMIT_TIME_ORDERING) == {"k": (1, False)}


def test_string_ordering_and_ties() -> None:
    inp = MergeInput(
        keys=pa.array(["k", "k", "k"]),
        seq=np.arange(3, dtype=np.int64),
        ordering=pa.array(["b", "c", "c"]),
    )
    winners, deleted = resolve_latest(inp, EVENT_TIME_ORDERING)
    assert winners.tolist() == [2] and not deleted.any()


def test_integer_ordering_ranks_keep_order_at_any_range() -> None:
    """One integer ordering field ranks by offset from its smallest value unless the range
    is too wide for the merge's ``segment * width + rank`` (then by the dense rank): either
    way equal values rank equal, greater ones greater, nulls lowest."""
    cases = [
        pa.array([5, 3, None, 5, 9, -4], pa.int64()),  # offset
        pa.array([2**63 - 1, -(2**63), 0, None, 7], pa.int64()),  # too wide: dense
        pa.array([2**64 - 1, 3, 2**63], pa.uint64()),  # beyond int64: dense
        pa.array([None, None], pa.int32()),
    ]
    for values in cases:
        rank = ordering_rank([values], len(values))
        py = values.to_pylist()
        for i, a in enumerate(py):
            assert (rank[i] == 0) == (a is None)
            for j, b in enumerate(py):
                if a is not None and b is not None:
                    assert (rank[i] < rank[j]) == (a < b) and (rank[i] == rank[j]) == (a == b)
    # the winner under extreme ordering values (where offsets would overflow)
    inp = MergeInput(
        keys=pa.array(["k", "k", "k", "j", "j"]),
        seq=np.arange(5, dtype=np.int64),
        ordering=pa.array([-(2**63), 2**63 - 1, 0, 2**62, -(2**62)], pa.int64()),
    )
    winners, deleted = resolve_latest(inp, EVENT_TIME_ORDERING)
    assert winners.tolist() == [1, 3] and not deleted.any()
