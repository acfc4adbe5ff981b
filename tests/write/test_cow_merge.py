"""The COW merge that touches only the rows a write names (hudi_ds/write/cow_merge.py).

* :func:`merge_touched` gives the rows (and counts) of merging every stored row, for the
  built-in behaviours, with stored rows a merge deletes on their own (``_hoodie_is_deleted``,
  a delete marker), late updates, re-inserts and deletes of absent keys; stored rows keep their
  order (updates in place), inserts follow.
* Written tables: after every COW write each base file's bloom filter footer equals a filter
  built from its keys in row order (carried filters included: dynamic rows filling up,
  saturation, SIMPLE), every row reads back (by us and by hudi-rs) as the model says.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import hudi_ds
from hudi_ds.layout.bloom_filter import (
    BLOOM_FILTER_FOOTER,
    BLOOM_FILTER_TYPE_CODE_FOOTER,
    BloomFilter,
    BloomFilterSpec,
)
from hudi_ds.layout.parquet import MAX_RECORD_KEY_FOOTER, MIN_RECORD_KEY_FOOTER
from hudi_ds.merge.modes import BEHAVIOURS, MergeSpec, builtin_spec
from hudi_ds.schema.meta import (
    COMMIT_TIME_METADATA_FIELD,
    IS_DELETED_FIELD,
    META_FIELDS,
    PARTITION_PATH_METADATA_FIELD,
    RECORD_KEY_METADATA_FIELD,
)
from hudi_ds.table_config import COMMIT_TIME_ORDERING, EVENT_TIME_ORDERING
from hudi_ds.write import cow_merge
from hudi_ds.write.cow_merge import carried_bloom_filter, merge_touched
from hudi_ds.write.handles import HandleContext, delete_keys, delete_schema
from hudi_ds.write.merge_handle import merge_into_base
from tests.conftest import assert_rows, hudi_rs_table, table_options


@pytest.fixture(autouse=True)
def carry_small_files(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """The carried filter on the small files of these tests (in use only from
    ``MIN_CARRIED_KEYS`` keys, where it is cheaper than a rebuild)."""
    if "rebuilt_below" not in request.node.name:
        monkeypatch.setattr(cow_merge, "MIN_CARRIED_KEYS", 0)


def test_small_files_filter_rebuilt_below_the_threshold() -> None:
    """Below ``MIN_CARRIED_KEYS`` keys the filter is rebuilt (None), not parsed and carried."""
    spec = BloomFilterSpec()
    old = spec.new_filter()
    keys = pa.array([f"k{i}" for i in range(10)])
    old.add(keys)
    footer = {BLOOM_FILTER_FOOTER.encode(): old.serialize()}
    assert carried_bloom_filter(footer, spec, 10, pa.array(["new"])) is None


INSTANT = "20240102030405006"


def _stored(ids: list[int], ts: list[int], extra: dict[str, list]) -> pa.Table:
    n = len(ids)
    keys = [f"k{i:04d}" for i in ids]
    cols: dict[str, pa.Array] = {
        COMMIT_TIME_METADATA_FIELD: pa.array(["20240101000000000"] * n),
        "_hoodie_commit_seqno": pa.array([f"s{i}" for i in ids]),
        RECORD_KEY_METADATA_FIELD: pa.array(keys),
        PARTITION_PATH_METADATA_FIELD: pa.array(["p"] * n),
        "_hoodie_file_name": pa.array(["f.parquet"] * n),
        "id": pa.array(keys),
        "ts": pa.array(ts, pa.int64()),
        "v": pa.array([float(i) for i in ids]),
    }
    for name, values in extra.items():
        cols[name] = pa.array(values)
    return pa.table(cols)


def _ctx(spec: MergeSpec, schema: pa.Schema) -> HandleContext:
    options = SimpleNamespace(merge=spec, populate_meta_fields=True)
    return HandleContext(None, INSTANT, "0-0-0", schema, "", options)  # type: ignore[arg-type]


def _case(extra_name: str | None, extra_old: list, extra_new: list) -> tuple:
    n = 60
    old_ids = list(range(n))
    extra = {extra_name: extra_old} if extra_name else {}
    old = _stored(old_ids, [100] * n, extra)
    # updates (newer and late), inserts, a key twice in the batch
    new_ids = [3, 7, 7, 11, 20, 41, 59, 100, 101, 102]
    new_ts = [200, 50, 300, 200, 100, 250, 90, 200, 200, 200]
    extra_n = {extra_name: extra_new} if extra_name else {}
    inc = _stored(new_ids, new_ts, extra_n)
    inc = inc.set_column(
        0, COMMIT_TIME_METADATA_FIELD, pa.array([INSTANT] * inc.num_rows, pa.string())
    )
    # deletes: stored keys, an absent key, and a key the batch also updates
    dkeys = ["k0005", "k0030", "k0999", "k0041"]
    dschema = delete_schema(pa.int64())
    dels = delete_keys(
        dschema,
        pa.array(dkeys),
        pa.array(["p"] * len(dkeys)),
        pa.array([None, 500, None, 10], pa.int64()),
    )
    return old, inc, dels


def _sorted(t: pa.Table) -> list[tuple]:
    cols = [t.column(c).to_pylist() for c in t.column_names]
    return sorted(zip(*cols, strict=True), key=repr)


@pytest.mark.parametrize(
    ("behaviour", "extra"),
    [
        ("default", None),
        ("overwrite_with_latest", None),
        ("default", IS_DELETED_FIELD),
        ("aws_dms", "Op"),
        ("partial_update", None),
    ],
)
def test_merge_touched_equals_full_merge(behaviour: str, extra: str | None) -> None:
    n = 60
    if extra == IS_DELETED_FIELD:
        # stored rows 10 and 50 are deletes on their own: a merge of every row drops them
        extra_old: list = [i in (10, 50) for i in range(n)]
        extra_new: list = [False] * 9 + [True]
    elif extra == "Op":
        extra_old = ["D" if i in (12, 13) else "U" for i in range(n)]
        extra_new = ["U"] * 10
    else:
        extra_old = extra_new = []
    old, inc, dels = _case(extra, extra_old, extra_new)
    spec = builtin_spec(BEHAVIOURS[behaviour], ("ts",))
    ctx = _ctx(spec, old.schema)

    def merge(o: pa.Table, i: pa.Table, d: pa.Table) -> tuple[pa.Table, int, int, int]:
        return merge_into_base(o, i, d, ctx)

    want, wu, wi, wd = merge(old, inc, dels)
    got = merge_touched(old, inc, dels, spec, merge)
    assert _sorted(got.rows) == _sorted(want)
    assert (got.updates, got.inserts, got.deletes) == (wu, wi, wd)
    # stored rows in their order, then the inserts
    old_keys = old.column(RECORD_KEY_METADATA_FIELD).to_pylist()
    keys = got.rows.column(RECORD_KEY_METADATA_FIELD).to_pylist()
    stored = [k for k in keys if k in set(old_keys)]
    assert stored == [k for k in old_keys if k in set(stored)]
    assert keys[: len(stored)] == stored
    assert got.appended is None  # keys were deleted: no filter to carry


def test_merge_touched_appended_without_deletes() -> None:
    old, inc, _ = _case(None, [], [])
    spec = builtin_spec(BEHAVIOURS["default"], ("ts",))
    ctx = _ctx(spec, old.schema)
    dels = delete_schema(pa.int64()).empty_table()
    got = merge_touched(old, inc, dels, spec, lambda o, i, d: merge_into_base(o, i, d, ctx))
    keys = got.rows.column(RECORD_KEY_METADATA_FIELD).to_pylist()
    n = old.num_rows
    assert keys[:n] == old.column(RECORD_KEY_METADATA_FIELD).to_pylist()
    assert got.appended is not None
    assert got.appended.to_pylist() == keys[n:] == ["k0100", "k0101", "k0102"]
    want, *_ = merge_into_base(old, inc, dels, ctx)
    assert _sorted(got.rows) == _sorted(want)


def _fresh(spec: BloomFilterSpec, keys: pa.Array) -> BloomFilter:
    bf = spec.new_filter()
    bf.add(keys)
    return bf


def _footer(bf: BloomFilter) -> dict[bytes, bytes]:
    """``bf``'s footer entries as a base file's key-value metadata."""
    return {k.encode(): v.encode() for k, v in bf.footer().items()}


@pytest.mark.parametrize("n_old", [1, 30, 40, 41, 79, 80, 119, 120, 121, 200])
@pytest.mark.parametrize("filter_type", ["DYNAMIC_V0", "SIMPLE"])
def test_carried_bloom_filter_equals_fresh(n_old: int, filter_type: str) -> None:
    spec = BloomFilterSpec(filter_type=filter_type, num_entries=40, fpp=0.01, max_entries=120)
    old_keys = pa.array([f"key-{i}" for i in range(n_old)])
    footer = _footer(_fresh(spec, old_keys))
    for n_new in (0, 1, 25, 90):
        new_keys = pa.array([f"new-{i}" for i in range(n_new)], pa.string())
        carried = carried_bloom_filter(footer, spec, n_old, new_keys)
        full = _fresh(spec, pa.concat_arrays([old_keys, new_keys]))
        if carried is None:
            # only a saturated dynamic filter (more keys than rows * nr) is rebuilt
            assert filter_type == "DYNAMIC_V0" and n_old > 120
            continue
        assert carried.serialize() == full.serialize(), (n_old, n_new)
    # a filter of another shape, or a key count that does not match, is not carried
    other = BloomFilterSpec(filter_type=filter_type, num_entries=50, fpp=0.01, max_entries=120)
    assert carried_bloom_filter(footer, other, n_old, pa.array(["x"])) is None
    if filter_type == "DYNAMIC_V0":
        assert carried_bloom_filter(footer, spec, n_old + 1, pa.array(["x"])) is None
    assert carried_bloom_filter(footer, spec, n_old, None) is None
    assert carried_bloom_filter(None, spec, n_old, pa.array(["x"])) is None


def test_carried_bloom_filter_with_removed_keys_is_a_bounded_superset() -> None:
    spec = BloomFilterSpec(filter_type="DYNAMIC_V0", num_entries=100, fpp=0.01, max_entries=300)
    old_keys = pa.array([f"key-{i}" for i in range(60)])
    footer = _footer(_fresh(spec, old_keys))
    added = pa.array([f"new-{i}" for i in range(8)])
    # 3 keys removed: 65 keys left; the old filter + 8 added holds 68 -- one row, as fresh
    carried = carried_bloom_filter(footer, spec, 60, added, removed=3)
    assert carried is not None and len(carried.rows) == 1 and carried.current == 68
    assert carried.might_contain(pa.concat_arrays([old_keys, added])).all()
    assert len(_fresh(spec, pa.concat_arrays([old_keys.slice(3), added])).rows) == 1
    # carried again: it counts the removed keys (68 held for a file of 65 rows)
    footer2 = _footer(carried)
    again = carried_bloom_filter(footer2, spec, 65, pa.array(["more-0"]), removed=1)
    assert again is not None and again.current == 69
    # more than one removed key in 8 of the file's: rebuilt
    assert carried_bloom_filter(footer2, spec, 65, pa.array(["x"]), removed=6) is None
    # a row fuller than it is sized for (68 + 33 held > 100; a fresh one: 97 keys, one row)
    many = pa.array([f"many-{i}" for i in range(33)])
    assert carried_bloom_filter(footer2, spec, 65, many, removed=1) is None
    # every row gone (an empty filter, as Java's), or fewer keys held than rows: rebuilt
    assert carried_bloom_filter(footer, spec, 60, added.slice(0, 0), removed=60) is None
    assert carried_bloom_filter(footer, spec, 61, added, removed=1) is None
    # a SIMPLE filter counts no keys: carried only when nothing is removed
    simple = BloomFilterSpec(filter_type="SIMPLE", num_entries=100, fpp=0.01, max_entries=300)
    sfooter = _footer(_fresh(simple, old_keys))
    assert carried_bloom_filter(sfooter, simple, 60, added, removed=1) is None
    assert carried_bloom_filter(sfooter, simple, 60, added) is not None


def test_carried_bloom_filter_fills_its_last_row_with_removed_keys() -> None:
    """A filter in the last row the spec grows to (rows of 60, at most 100 keys: the second
    row is the last, and takes up to 120) is carried with removed keys as fresh filters of the
    new file's keys have that many rows too (Hudi's default 60,000 / 100,000 files of 60,000
    to 120,000 rows)."""
    spec = BloomFilterSpec(filter_type="DYNAMIC_V0", num_entries=60, fpp=0.01, max_entries=100)
    old_keys = pa.array([f"key-{i}" for i in range(70)])
    footer = _footer(_fresh(spec, old_keys))
    added = pa.array([f"new-{i}" for i in range(5)])
    carried = carried_bloom_filter(footer, spec, 70, added, removed=2)
    assert carried is not None and len(carried.rows) == 2 and carried.current == 15
    assert carried.might_contain(pa.concat_arrays([old_keys, added])).all()
    # the keys past the last row's size: rebuilt
    more = pa.array([f"more-{i}" for i in range(51)])
    assert carried_bloom_filter(footer, spec, 70, more, removed=2) is None


def test_streamed_bloom_filter_carries_or_rebuilds_in_written_order() -> None:
    """A merge written group by group: the old filter takes each group's inserted keys and the
    decision waits for the last group (exact, a bounded superset, or rebuilt from the written
    keys in order when the carry does not hold or the kept keys pass their budget)."""
    spec = BloomFilterSpec(filter_type="DYNAMIC_V0", num_entries=60, fpp=0.01, max_entries=100)
    old_keys = pa.array([f"key-{i:03d}" for i in range(70)])
    footer = _footer(_fresh(spec, old_keys))
    new = pa.array([f"new-{i}" for i in range(5)])
    none = new.slice(0, 0)

    def streamed(groups: list[tuple[pa.Array, pa.Array | None, int]], budget: int = 1 << 30):
        sbf = cow_merge.StreamedBloomFilter(footer, spec, 70, budget)
        before = sbf.filter
        for keys, inserted, removed in groups:
            sbf.written(keys, inserted, removed)
        out = sbf.finish()
        assert out is before  # the writer's filter, changed in place
        return out

    # nothing removed, inserts after the stored rows: the filter of all keys in order
    exact = streamed(
        [(old_keys.slice(0, 40), none, 0), (old_keys.slice(40), none, 0), (new, new, 0)]
    )
    assert exact.serialize() == _fresh(spec, pa.concat_arrays([old_keys, new])).serialize()
    # two stored keys removed: the carried superset (the old filter plus the inserts)
    kept = pa.concat_arrays([old_keys.slice(0, 30), old_keys.slice(32)])
    sup = streamed([(kept.slice(0, 30), none, 2), (kept.slice(30), none, 0), (new, new, 0)])
    carried = carried_bloom_filter(footer, spec, 70, new, removed=2)
    assert carried is not None and sup.serialize() == carried.serialize()
    written = pa.concat_arrays([kept, new])
    rebuilt = _fresh(spec, written).serialize()
    assert sup.serialize() != rebuilt
    # too many removed to carry, a group that does not tell its inserts, or more written keys
    # than the merge keeps: rebuilt from the written keys, in order
    few = old_keys.slice(0, 50)
    assert (
        streamed([(few, none, 20), (new, new, 0)]).serialize()
        == _fresh(spec, pa.concat_arrays([few, new])).serialize()
    )
    assert streamed([(kept, none, 2), (new, None, 0)]).serialize() == rebuilt
    small = streamed([(kept.slice(0, 30), none, 2), (kept.slice(30), none, 0), (new, new, 0)], 300)
    assert small.serialize() == rebuilt


def _rows(ids: np.ndarray, ts: np.ndarray, rng: np.random.Generator) -> pa.Table:
    return pa.table(
        {
            "id": pa.array([f"id-{i:05d}" for i in ids]),
            "ts": pa.array(ts, pa.int64()),
            "dt": pa.array([f"2024-01-0{i % 2 + 1}" for i in ids]),
            "v": pa.array(rng.normal(size=len(ids))),
            "s": pa.array([None if i % 5 == 0 else f"s{i}" for i in ids]),
        }
    )


COLS = ["id", "ts", "dt", "v", "s"]
#: a task budget (MB) whose merges keep too few written keys to carry a filter to the end
TOO_SMALL_TO_CARRY = "0.03"


def _check_files(path: str, spec: BloomFilterSpec, exact: bool = True) -> list[BloomFilter]:
    """Every latest base file's key footers are those of a filter built from its keys
    (``exact``), or, once keys were deleted, of a filter holding every key of the file in no
    more rows than that one (a carried superset: :func:`carried_bloom_filter`)."""
    table = hudi_ds.HudiTable(path)
    n_files = 0
    filters = []
    for fs in table.file_slices():
        if True:
            assert fs.base_file is not None
            f = table.storage.full_path(fs.base_file.path)
            pf = pq.ParquetFile(f)
            keys = pf.read(columns=[RECORD_KEY_METADATA_FIELD]).column(0).combine_chunks()
            meta = pf.metadata.metadata
            got = BloomFilter.parse(
                meta[BLOOM_FILTER_FOOTER.encode()],
                meta.get(BLOOM_FILTER_TYPE_CODE_FOOTER.encode(), b"").decode() or None,
            )
            fresh = _fresh(spec, keys)
            if exact or not got.dynamic:  # a SIMPLE filter is only carried exactly
                assert got.serialize() == fresh.serialize(), f
            else:
                assert got.might_contain(keys).all(), f
                assert len(got.rows) == len(fresh.rows), f
                assert (len(got.rows) - 1) * got.nr + got.current >= len(keys), f
            assert meta[MIN_RECORD_KEY_FOOTER.encode()].decode() == min(keys.to_pylist())
            assert meta[MAX_RECORD_KEY_FOOTER.encode()].decode() == max(keys.to_pylist())
            n_files += 1
            filters.append(got)
    assert n_files == 4
    return filters


@pytest.mark.parametrize(
    ("filter_type", "merge", "budget"),
    [
        *(
            (f, m, None)
            for f in ("DYNAMIC_V0", "SIMPLE")
            for m in (EVENT_TIME_ORDERING, COMMIT_TIME_ORDERING)
        ),
        # a task budget the base files do not fit: the merges stream them (the filter decided
        # after the last group; past the budget of kept keys, rebuilt)
        ("DYNAMIC_V0", EVENT_TIME_ORDERING, "0.6"),
        ("DYNAMIC_V0", COMMIT_TIME_ORDERING, "0.03"),
        ("SIMPLE", EVENT_TIME_ORDERING, "0.15"),
    ],
)
def test_cow_writes_rows_and_bloom_footers(
    filter_type: str, merge: str, budget: str | None, tmp_path: Path
) -> None:
    path = str(tmp_path / "t")
    # 2 partitions x 2 buckets; rows of 60 keys growing to 180: carried dynamic filters fill
    # rows, open new ones and saturate
    opts = {
        **table_options("cow", partition="dt", table_type="COPY_ON_WRITE", buckets=2),
        **({} if budget is None else {"write.task.max.size": budget}),
        "hoodie.write.record.merge.mode": merge,
        "hoodie.bloom.index.filter.type": filter_type,
        "hoodie.index.bloom.num_entries": "60",
        "hoodie.index.bloom.fpp": "0.001",
        "hoodie.bloom.index.filter.dynamic.max.entries": "180",
    }
    spec = BloomFilterSpec(filter_type, 60, 0.001, 180)
    rng = np.random.default_rng(3)
    model: dict[str, tuple] = {}

    def upsert(t: pa.Table, op: str = "upsert") -> None:
        hudi_ds.write(path, t, {**opts, "hoodie.datasource.write.operation": op})
        for r in zip(*(t.column(c).to_pylist() for c in COLS), strict=True):
            cur = model.get(r[0])
            if cur is None or merge == COMMIT_TIME_ORDERING or r[1] >= cur[1]:
                model[r[0]] = r

    deleted = False

    def check() -> None:
        # a streamed merge writes the rows of a base file batch by batch (and, split by key,
        # in another order): its filter holds every key of the file, not in the file's order
        _check_files(path, spec, exact=not deleted and budget is None)
        want = list(model.values())
        assert_rows(hudi_ds.read(path, columns=COLS), want, COLS)
        assert_rows(hudi_rs_table(path), want, COLS)

    upsert(_rows(np.arange(200), np.full(200, 10), rng), "insert")
    check()
    next_id = 200
    for step in range(6):
        n_new = 120 if step < 4 else 20
        upd = rng.choice(next_id, 150, replace=False)
        ts = np.where(rng.random(150) < 0.3, 5, 20 + step)  # some late updates
        ids = np.concatenate([upd, np.arange(next_id, next_id + n_new)])
        next_id += n_new
        tss = np.concatenate([ts, np.full(n_new, 20 + step)])
        upsert(_rows(ids, tss, rng))
        check()
        if step in (2, 4):
            gone = rng.choice(next_id, 40, replace=False)
            keys = _rows(gone, np.zeros(40, np.int64), rng).select(["id", "dt"])
            hudi_ds.write(path, keys, {**opts, "hoodie.datasource.write.operation": "delete"})
            gone_keys = pa.array([k for k in keys.column("id").to_pylist() if k in model])
            for k in keys.column("id").to_pylist():
                model.pop(k, None)
            deleted = True
            check()
            if filter_type == "DYNAMIC_V0" and budget != TOO_SMALL_TO_CARRY:
                # files of the deleted keys kept their filters (the keys still test positive;
                # fresh filters at fpp 0.001 would hold none), the others were rebuilt
                held = [bf.might_contain(gone_keys) for bf in _check_files(path, spec, False)]
                assert np.logical_or.reduce(held).sum() >= len(gone_keys) // 4
    assert META_FIELDS[0] == COMMIT_TIME_METADATA_FIELD


def test_in_parallel_keeps_order_and_raises_the_earliest_error() -> None:
    from hudi_ds.write import cow

    calls = [lambda i=i: i * i for i in range(23)]
    assert cow._in_parallel(calls) == [i * i for i in range(23)]

    def boom(i: int) -> int:
        raise ValueError(f"call {i}")

    failing = [*calls[:5], lambda: boom(5), *calls[6:9], lambda: boom(9)]
    with pytest.raises(ValueError, match="call 5"):
        cow._in_parallel(failing)


# -- the size a merge expects of a base file before it reads it (merge_handle._arrow_bytes) ---


def _footer_estimate(tmp_path: Path, table: pa.Table) -> tuple[int, int]:
    """The merge's estimate of ``table`` written as a Parquet file the way base files are,
    and the Arrow size of its rows as a merge reads them (all but ``_hoodie_file_name``)."""
    import importlib

    from hudi_ds.layout.parquet import dictionary_columns_of

    merge_handle = importlib.import_module("hudi_ds.write.merge_handle")
    path = tmp_path / "base.parquet"
    pq.write_table(table, path, compression="snappy", use_dictionary=dictionary_columns_of(table))
    return merge_handle._arrow_bytes(pq.ParquetFile(path).metadata), table.nbytes


def test_size_estimate_of_repeated_strings(tmp_path: Path) -> None:
    """Dictionary pages hold each distinct value once: a column of a few long strings decodes
    to far more than its page bytes, and the estimate says so (not a fixed factor of them)."""
    n = 20_000
    names = pa.array([f"{i:03d}" + "x" * 200 for i in range(8)])
    table = pa.table(
        {
            "c": names.take(pa.array(np.arange(n) % 8)),
            "ts": pa.array(np.full(n, 7), pa.int64()),
        }
    )
    est, actual = _footer_estimate(tmp_path, table)
    assert 0.8 * actual <= est <= 1.25 * actual


def test_size_estimate_of_a_base_file(tmp_path: Path) -> None:
    """A base file's constant meta columns, distinct keys and numbers: the estimate is about
    their Arrow size, not twice their page bytes (a merge that would fit its memory share
    must not be streamed in pieces for an over-estimate)."""
    n = 30_000
    rng = np.random.default_rng(3)
    keys = pa.array([f"id-{i}" for i in range(n)])
    table = pa.table(
        {
            COMMIT_TIME_METADATA_FIELD: pa.array(["20240101000000000"] * n),
            RECORD_KEY_METADATA_FIELD: keys,
            PARTITION_PATH_METADATA_FIELD: pa.array(["2024-01-01"] * n),
            "id": keys,
            "d1": rng.random(n),
            "d2": rng.random(n),
            "i1": pa.array(rng.integers(0, 1 << 30, n), pa.int32()),
        }
    )
    est, actual = _footer_estimate(tmp_path, table)
    assert 0.8 * actual <= est <= 1.25 * actual
