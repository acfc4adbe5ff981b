"""The state index answers exactly as SIMPLE does, across the writes a long-lived writer sees.

After every step of each sequence (its own upserts, inserts and deletes, another writer's
commits, a rollback, a compaction, an insert_overwrite) the writer's :class:`StateIndex` and
:func:`simple_lookup` locate the same probe keys (every key ever written plus unknown ones) in
the same latest slices, and the table written through the state equals a model (every row,
read back by hudi-rs and by hudi_ds).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pyarrow as pa
import pytest

import hudi_ds
from hudi_ds.api import HudiTable
from hudi_ds.errors import ConfigError
from hudi_ds.index.lookup import KeyLocations, LookupSpec
from hudi_ds.index.simple import simple_lookup
from hudi_ds.index.state import StateIndex, StateIndexError
from hudi_ds.services.base import ServiceContext
from hudi_ds.services.compaction import run_compaction, schedule_compaction
from hudi_ds.services.rollback import rollback
from hudi_ds.table.table import ReadableTable
from tests.builders import options
from tests.conftest import assert_rows, hudi_rs_table, table_rows
from tests.index.test_simple import other_locations

COLUMNS = ["id", "ts", "dt", "v"]
NPART = 3


def _opts(table_type: str, index: str, many_groups: bool = False) -> dict[str, str]:
    """``many_groups``: base files are never small (every write of inserts opens new file
    groups); otherwise every base file is small (inserts go into existing file groups)."""
    sizing = {
        # a base file is ~430 KB: its bloom filter footer
        "hoodie.parquet.max.file.size": str(40 << 10 if many_groups else 2 << 20),
        "hoodie.parquet.small.file.limit": str(20 << 10 if many_groups else 1 << 20),
    }
    return options(
        "state",
        table_type,
        partition="dt",
        index=index,
        **sizing,
        **{"hoodie.copyonwrite.record.size.estimate": "64"},
    )


class Model:
    """The expected table: key -> (ts, dt, v), event-time merge (greater or equal ts wins)."""

    def __init__(self) -> None:
        self.rows: dict[str, tuple[int, str, float]] = {}

    def rows_of(self, ids: Iterable[int], ts: int, shift: int = 0) -> pa.Table:
        ids = np.asarray(list(ids), dtype=np.int64)
        return pa.table(
            {
                "id": [f"key-{i:05d}" for i in ids],
                "ts": pa.array(np.full(len(ids), ts), pa.int64()),
                "dt": [f"p{(i + shift) % NPART}" for i in ids],
                "v": ids.astype(float) * 10 + ts,
            }
        )

    def upsert(self, t: pa.Table, global_moves: bool = False) -> None:
        for k, ts, dt, v in zip(*(t.column(c).to_pylist() for c in COLUMNS), strict=True):
            cur = self.rows.get(k)
            if cur is None or ts >= cur[0]:
                self.rows[k] = (ts, dt if cur is None or global_moves else cur[1], v)

    def overwrite(self, t: pa.Table) -> None:
        parts = set(t.column("dt").to_pylist())
        self.rows = {k: r for k, r in self.rows.items() if r[1] not in parts}
        self.upsert(t)

    def delete(self, ids: Iterable[str]) -> None:
        for k in ids:
            self.rows.pop(k, None)

    def expected(self) -> list[tuple]:
        return [(k, ts, dt, v) for k, (ts, dt, v) in self.rows.items()]


def _check_same_as_simple(t: HudiTable, probe: pa.Table) -> KeyLocations:
    """The writer's state and SIMPLE locate ``probe``'s keys identically in the latest slices."""
    state = t.state_index
    assert state is not None and state.spec is not None
    fresh = ReadableTable(t.path)
    slices = fresh.file_slices()
    keys = probe.column("id").combine_chunks()
    parts = None if state.is_global else probe.column("dt").combine_chunks()
    resets = state.resets
    got = state.lookup(t.storage, slices, keys, parts, state.spec)
    want = simple_lookup(t.storage, slices, keys, parts, state.spec)
    assert state.resets == resets  # kept current, not dropped
    for field in ("file_id", "partition", "instant"):
        assert getattr(got, field).to_pylist() == getattr(want, field).to_pylist(), field
    assert other_locations(got) == other_locations(want)
    return got


def _check_table(t: HudiTable, model: Model) -> None:
    assert_rows(hudi_rs_table(t.path), model.expected(), COLUMNS)
    assert_rows(ReadableTable(t.path).read(columns=COLUMNS), model.expected(), COLUMNS)


def _probe(model: Model, upto: int) -> pa.Table:
    """Every key id below ``upto`` in its model partition (p0 for unknown ones) plus misses."""
    ids = np.arange(upto + 50)
    t = model.rows_of(ids, 0)
    known = {k: r[1] for k, r in model.rows.items()}
    dts = [known.get(k, d) for k, d in zip(t["id"].to_pylist(), t["dt"].to_pylist(), strict=True)]
    return t.set_column(2, "dt", pa.array(dts))


@pytest.mark.parametrize("many_groups", [False, True])
@pytest.mark.parametrize("table_type", ["MERGE_ON_READ", "COPY_ON_WRITE"])
@pytest.mark.parametrize("index", ["SIMPLE", "BLOOM"])
def test_own_writes_match_simple(tmp_path, table_type: str, index: str, many_groups: bool) -> None:
    path = str(tmp_path / "t")
    opts = _opts(table_type, index, many_groups)
    model = Model()
    base = model.rows_of(range(600), 1)
    hudi_ds.write(path, base, {**opts, "hoodie.datasource.write.operation": "insert"})
    model.upsert(base)
    t = HudiTable(path, state_index=True)
    state = t.state_index
    assert state is not None

    step1 = model.rows_of([*range(0, 600, 3), *range(600, 700)], 5)
    t.upsert(step1, opts)
    model.upsert(step1)
    bootstrap = state.groups_read
    assert bootstrap > 0
    _check_same_as_simple(t, _probe(model, 700))

    updates = model.rows_of(range(1, 700, 7), 9)  # only keys the table holds
    before = state.groups_read
    t.upsert(updates, opts)
    model.upsert(updates)
    # MOR: updates go to logs, which SIMPLE does not index; COW: the rewritten base files hold
    # the same keys (no inserts, no deletes in their write stats): nothing is read again
    assert state.groups_read == before
    _check_same_as_simple(t, _probe(model, 700))

    late = model.rows_of(range(2, 60, 5), 3)  # older ts: loses
    new = model.rows_of(range(700, 760), 3)
    t.upsert(pa.concat_tables([late, new]), opts)
    model.upsert(pa.concat_tables([late, new]))
    _check_same_as_simple(t, _probe(model, 760))

    t.insert(model.rows_of(range(760, 800), 4), opts)
    model.upsert(model.rows_of(range(760, 800), 4))
    _check_same_as_simple(t, _probe(model, 800))

    gone = model.rows_of(range(0, 800, 11), 0).select(["id", "dt"])
    before = state.groups_read
    t.delete(gone, opts)
    model.delete(gone["id"].to_pylist())
    # MOR: delete blocks locate nothing new; COW: each rewritten file lost exactly the keys
    # the delete found in it (its numDeletes): dropped from the state without a read
    _check_same_as_simple(t, _probe(model, 800))
    assert state.groups_read == before

    back = model.rows_of(range(0, 100, 11), 20)  # deleted keys written again
    t.upsert(back, opts)
    model.upsert(back)
    _check_same_as_simple(t, _probe(model, 800))
    assert state.resets == 0
    _check_table(t, model)


def test_other_writers_rollback_compaction_overwrite(tmp_path) -> None:
    path = str(tmp_path / "t")
    # the compaction below is scheduled by the test: the writers' default one is off
    opts = {
        **_opts("MERGE_ON_READ", "SIMPLE"),
        "hoodie.datasource.compaction.async.enable": "false",
    }
    model = Model()
    base = model.rows_of(range(500), 1)
    hudi_ds.write(path, base, {**opts, "hoodie.datasource.write.operation": "insert"})
    model.upsert(base)
    t = HudiTable(path, state_index=True)
    state = t.state_index
    assert state is not None
    own = model.rows_of([*range(0, 500, 4), *range(500, 540)], 2)
    t.upsert(own, opts)
    model.upsert(own)
    _check_same_as_simple(t, _probe(model, 540))

    # another writer inserts new keys (new file groups, small files rewritten)
    other = model.rows_of([*range(1, 500, 9), *range(540, 640)], 3)
    hudi_ds.write(path, other, opts)
    model.upsert(other)
    read = state.groups_read
    _check_same_as_simple(t, _probe(model, 640))
    assert state.groups_read > read  # the other writer's new base files were read

    # a completed commit of this writer rolled back
    mine = model.rows_of(range(640, 700), 4)
    undone = t.upsert(mine, opts)
    _check_same_as_simple(t, _probe(model, 700))
    rollback(ServiceContext.open(path), undone)
    _check_same_as_simple(t, _probe(model, 700))  # keys 640..699 are gone again

    # compaction: same file ids, new base instants and base files without the deleted keys
    upd = model.rows_of(range(0, 640, 5), 6)
    t.upsert(upd, opts)
    model.upsert(upd)
    gone = model.rows_of(range(2, 640, 6), 0).select(["id", "dt"])
    hudi_ds.write(path, gone, {**opts, "hoodie.datasource.write.operation": "delete"})
    model.delete(gone["id"].to_pylist())
    _check_same_as_simple(t, _probe(model, 700))
    ctx = ServiceContext.open(path)
    assert schedule_compaction(ctx) is not None
    run_compaction(ctx)
    loc = _check_same_as_simple(t, _probe(model, 700))
    compacted = {i for i in loc.instant.to_pylist() if i is not None}
    assert len(compacted) >= 1

    # another writer's insert_overwrite (replacecommit) of one partition
    over = model.rows_of([i for i in range(900, 990) if i % NPART == 1], 7)
    hudi_ds.write(path, over, {**opts, "hoodie.datasource.write.operation": "insert_overwrite"})
    model.overwrite(over)
    _check_same_as_simple(t, _probe(model, 990))

    after = model.rows_of([*range(0, 990, 13), *range(990, 1010)], 8)
    t.upsert(after, opts)
    model.upsert(after)
    _check_same_as_simple(t, _probe(model, 1010))
    assert state.resets == 0
    _check_table(t, model)


def test_global_index_partition_moves(tmp_path) -> None:
    path = str(tmp_path / "t")
    opts = _opts("MERGE_ON_READ", "GLOBAL_SIMPLE")
    model = Model()
    base = model.rows_of(range(300), 1)
    hudi_ds.write(path, base, {**opts, "hoodie.datasource.write.operation": "insert"})
    model.upsert(base)
    t = HudiTable(path, state_index=True)
    first = model.rows_of(range(300, 330), 2)
    t.upsert(first, opts)
    model.upsert(first)
    assert t.state_index is not None and t.state_index.is_global
    moved = model.rows_of(range(0, 300, 10), 5, shift=1)  # every 10th key changes partition
    t.upsert(moved, opts)
    model.upsert(moved, global_moves=True)
    _check_same_as_simple(t, _probe(model, 330))
    again = model.rows_of(range(0, 300, 20), 6, shift=2)
    t.upsert(again, opts)
    model.upsert(again, global_moves=True)
    _check_same_as_simple(t, _probe(model, 330))
    _check_table(t, model)


def test_key_in_two_file_groups_located_like_simple(tmp_path) -> None:
    """``insert`` does not look keys up: the same key lands in two file groups."""
    path = str(tmp_path / "t")
    opts = {**_opts("COPY_ON_WRITE", "SIMPLE"), "hoodie.parquet.small.file.limit": "0"}
    model = Model()
    hudi_ds.write(
        path, model.rows_of(range(50), 1), {**opts, "hoodie.datasource.write.operation": "insert"}
    )
    t = HudiTable(path, state_index=True)
    t.insert(model.rows_of(range(0, 50, 2), 2), opts)
    t.upsert(model.rows_of(range(50, 60), 3), opts)  # the state is bootstrapped here
    t.insert(model.rows_of(range(1, 50, 4), 4), opts)
    probe = model.rows_of(range(60), 0)
    loc = _check_same_as_simple(t, probe)
    assert len(set(loc.file_id.to_pylist())) > NPART  # keys really are in several groups
    assert len(loc.more_rows)  # and located in each


def test_refusals(tmp_path) -> None:
    path = str(tmp_path / "b")
    model = Model()
    opts = {**_opts("MERGE_ON_READ", "BUCKET"), "hoodie.bucket.index.num.buckets": "2"}
    hudi_ds.write(path, model.rows_of(range(10), 1), opts)
    t = HudiTable(path, state_index=True)
    before = len(t.timeline)
    with pytest.raises(ConfigError, match="BUCKET"):
        t.upsert(model.rows_of(range(5), 2), opts)
    assert len(ReadableTable(path).timeline) == before

    state = StateIndex()
    slices = ReadableTable(path).file_slices()
    spec = LookupSpec(("id",), False, read_logs=False)
    with pytest.raises(StateIndexError, match="NUL"):
        state.lookup(t.storage, slices, pa.array(["a\x00b"]), pa.array(["p0"]), spec)


def test_mode_change_drops_the_state(tmp_path) -> None:
    path = str(tmp_path / "t")
    model = Model()
    opts = _opts("COPY_ON_WRITE", "SIMPLE")
    hudi_ds.write(path, model.rows_of(range(40), 1), opts)
    storage = ReadableTable(path).storage
    slices = ReadableTable(path).file_slices()
    probe = model.rows_of(range(45), 0)
    spec = LookupSpec(("id",), False, read_logs=False)
    state = StateIndex()
    keys, parts = probe["id"].combine_chunks(), probe["dt"].combine_chunks()
    local = state.lookup(storage, slices, keys, parts, spec)
    glob = state.lookup(storage, slices, probe["id"].combine_chunks(), None, spec)
    assert state.resets == 1
    want = simple_lookup(storage, slices, probe["id"].combine_chunks(), None, spec)
    assert glob.file_id.to_pylist() == want.file_id.to_pylist()
    assert local.file_id.to_pylist() == want.file_id.to_pylist()  # keys are unique here
    assert sum(x is None for x in glob.file_id.to_pylist()) == 5


def _last_stats(path: str) -> list:
    tl = ReadableTable(path).timeline
    last = tl.completed().instants[-1]
    md = tl.read_commit_metadata(last)
    return [st for sts in md.partition_to_write_stats.values() for st in sts]


def test_learns_own_log_files_when_logs_are_indexed(tmp_path) -> None:
    """With ``read_logs`` (logs indexed), :meth:`StateIndex.committed` takes the writer's new
    log files in: without reading them when every key was found, reading only them otherwise.
    A bucket-index MOR table puts new keys into the logs of existing file groups."""
    path = str(tmp_path / "t")
    model = Model()
    opts = {**_opts("MERGE_ON_READ", "BUCKET"), "hoodie.bucket.index.num.buckets": "2"}
    hudi_ds.write(path, model.rows_of(range(100), 1), opts)
    spec = LookupSpec(("id",), False, read_logs=True)
    state = StateIndex()

    def compare(probe: pa.Table) -> None:
        slices = ReadableTable(path).file_slices()
        keys, parts = probe["id"].combine_chunks(), probe["dt"].combine_chunks()
        got = state.lookup(ReadableTable(path).storage, slices, keys, parts, spec)
        want = simple_lookup(ReadableTable(path).storage, slices, keys, parts, spec)
        for field in ("file_id", "partition", "instant"):
            assert getattr(got, field).to_pylist() == getattr(want, field).to_pylist(), field

    storage = ReadableTable(path).storage
    compare(model.rows_of(range(100), 0))  # bootstrap (keys in logs: MOR bucket inserts)
    read, files = state.groups_read, state.files_read
    state.begin()
    hudi_ds.write(path, model.rows_of(range(0, 100, 3), 2), opts)  # updates only
    state.committed(storage, _last_stats(path))
    compare(model.rows_of(range(100), 0))
    assert (state.groups_read, state.files_read) == (read, files)  # nothing read

    # new keys: the write's lookup (here the probe) did not find them; they go to logs
    state.begin()
    state.lookup(
        storage,
        ReadableTable(path).file_slices(),
        model.rows_of(range(100, 140), 0)["id"].combine_chunks(),
        model.rows_of(range(100, 140), 0)["dt"].combine_chunks(),
        spec,
    )
    hudi_ds.write(path, model.rows_of(range(100, 140), 3), opts)
    stats = _last_stats(path)
    state.committed(storage, stats)
    assert state.files_read == files + len(stats)  # only the new log files were read
    assert state.groups_read == read
    compare(model.rows_of(range(150), 0))
    assert state.groups_read == read  # and they were enough


def test_unicode_keys_and_growing_widths() -> None:
    """Keys of any UTF-8 length, found after the state's key width grew (no files: a reader
    that serves each slice's keys from memory)."""
    from hudi_ds.layout.file_group import BaseFile
    from hudi_ds.layout.naming import parse_base_file_name

    held = {"f1": ["a", "é", "naïve-ключ-1", "z"], "f2": ["b" * 40, "日本語キー", "a"]}

    def reader(storage, fslice, spec):  # type: ignore[no-untyped-def]
        return pa.array(held[fslice.file_id.split("-")[0]]), 1

    def one(fid: str, instant: str) -> object:
        from hudi_ds.layout.file_group import FileSlice

        name = f"{fid}-0_0-1-1_{instant}.parquet"
        parsed = parse_base_file_name(name)
        assert parsed is not None
        return FileSlice("p", f"{fid}-0", instant, BaseFile(f"p/{name}", parsed, 10), [])

    state = StateIndex(read_keys=reader)
    spec = LookupSpec(("id",), False, read_logs=False)
    probe = pa.array(["a", "é", "naïve-ключ-1", "b" * 40, "日本語キー", "zz", "b" * 41, "z"])
    parts = pa.array(["p"] * len(probe))
    loc = state.lookup(None, [one("f1", "001")], probe, parts, spec)  # type: ignore[arg-type, list-item]
    assert loc.file_id.to_pylist() == ["f1-0", "f1-0", "f1-0", None, None, None, None, "f1-0"]
    both = [one("f1", "001"), one("f2", "002")]
    loc = state.lookup(None, both, probe, parts, spec)  # type: ignore[arg-type]
    # "a" is in both groups: the slice with the greater base instant wins, as in SIMPLE
    assert loc.file_id.to_pylist() == ["f2-0", "f1-0", "f1-0", "f2-0", "f2-0", None, None, "f1-0"]
    assert loc.instant.to_pylist()[:2] == ["002", "001"]
    assert loc.files_read == 1 and state.groups_read == 2
    assert len(state) == 7
    # f2 changed (a new base file) and lost "a": its old entries are removed (in place: few
    # of the entries; then compacted once they are many), its new ones found
    held["f2"] = ["b" * 40, "日本語キー"]
    for instant in ("003", "004", "005"):
        loc = state.lookup(None, [one("f1", "001"), one("f2", instant)], probe, parts, spec)  # type: ignore[arg-type]
        assert loc.file_id.to_pylist() == [
            *["f1-0", "f1-0", "f1-0", "f2-0", "f2-0", None, None, "f1-0"]
        ]
        assert loc.instant.to_pylist()[:4] == ["001", "001", "001", instant]
        assert len(state) == 6


@pytest.mark.parametrize("table_type", ["MERGE_ON_READ", "COPY_ON_WRITE"])
def test_shared_fingerprints_stay_exact(
    tmp_path, table_type: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Entries are ordered by a 64-bit fingerprint and matches confirmed on the keys: with the
    fingerprint cut to 2 bits (nearly every key shares one with many others, keys of several
    groups interleave) the state still answers exactly as SIMPLE does."""
    import hudi_ds.index.state as state_module

    real = state_module._fingerprints
    monkeypatch.setattr(state_module, "_fingerprints", lambda fixed: real(fixed) & np.uint64(3))
    test_own_writes_match_simple(tmp_path, table_type, "SIMPLE", True)


@pytest.mark.parametrize(
    ("table_type", "budget"),
    [("MERGE_ON_READ", None), ("COPY_ON_WRITE", None), ("COPY_ON_WRITE", "0.05")],
)
def test_learns_inserts_into_small_files(tmp_path, table_type: str, budget: str | None) -> None:
    """A base file that took all the inserts of its partition (its write stat's numInserts
    equals the keys the write's lookups did not find there) is learnt without reading it: a
    small file's new version (COPY_ON_WRITE here) or a new file group (MERGE_ON_READ here: the
    small files have logs); inserts mixed with deletes are learnt from the key changes the
    merge handles report (WriteStatus.keys), also without reading. ``budget``
    (``write.task.max.size``, MB): the base files do not fit the merge's share, so they
    stream through the merge in batches, whose key changes add up."""
    path = str(tmp_path / "t")
    opts = _opts(table_type, "SIMPLE")
    if budget is not None:
        opts["write.task.max.size"] = budget
    model = Model()
    base = model.rows_of(range(300), 1)
    hudi_ds.write(path, base, {**opts, "hoodie.datasource.write.operation": "insert"})
    model.upsert(base)
    t = HudiTable(path, state_index=True)
    state = t.state_index
    assert state is not None
    first = model.rows_of(range(0, 300, 4), 2)
    t.upsert(first, opts)  # bootstrap
    model.upsert(first)
    read = state.groups_read
    # updates and new keys: one base file per partition takes the partition's inserts
    step = model.rows_of([*range(1, 300, 9), *range(300, 360), 300, 301], 3)
    t.upsert(step, opts)
    model.upsert(step)
    _check_same_as_simple(t, _probe(model, 400))
    assert state.groups_read == read  # nothing read: the new base files were learnt
    # an upsert with new keys, _hoodie_is_deleted rows of unknown keys and of stored keys: more
    # keys were not found than inserted, and keys leave: the handles' key changes tell which
    more = model.rows_of(range(360, 390), 4).append_column(
        "_hoodie_is_deleted", pa.array([False] * 30)
    )
    ghosts = model.rows_of(range(900, 903), 4).append_column(
        "_hoodie_is_deleted", pa.array([True] * 3)
    )
    gone = model.rows_of(range(2, 300, 25), 4).append_column(
        "_hoodie_is_deleted", pa.array([True] * len(range(2, 300, 25)))
    )
    t.upsert(pa.concat_tables([more, ghosts, gone]), opts)
    model.upsert(more.drop_columns(["_hoodie_is_deleted"]))
    model.delete(f"key-{i:05d}" for i in range(2, 300, 25))
    _check_same_as_simple(t, _probe(model, 400))
    assert state.groups_read == read
    _check_table(t, model)


@pytest.mark.parametrize("index", ["SIMPLE", "GLOBAL_SIMPLE"])
def test_learns_own_compaction(tmp_path, index: str) -> None:
    """A compaction the writer runs after its own commit (MERGE_ON_READ, compaction every 3
    delta commits: right after the second upsert) is learnt from the key changes it reports,
    deletes that won the merge dropped, without reading a file: neither the lookup checking
    it against SIMPLE nor the next upsert reads keys; and every table write through the state
    equals the same writes by a SIMPLE writer (every row) and the model."""
    opts = {**_opts("MERGE_ON_READ", index), "hoodie.compact.inline.max.delta.commits": "3"}
    paths = {"state": str(tmp_path / "state"), "simple": str(tmp_path / "simple")}
    model = Model()
    base = model.rows_of(range(300), 1)
    for p in paths.values():
        hudi_ds.write(p, base, {**opts, "hoodie.datasource.write.operation": "insert"})
    model.upsert(base)
    t = HudiTable(paths["state"], state_index=True)
    state = t.state_index
    assert state is not None

    def flagged(rows: pa.Table, deleted: bool) -> pa.Table:
        return rows.append_column("_hoodie_is_deleted", pa.array([deleted] * rows.num_rows))

    def both(data: pa.Table) -> None:
        t.upsert(data, opts)
        hudi_ds.write(paths["simple"], data, opts)

    both(flagged(model.rows_of(range(0, 300, 4), 2), False))  # bootstrap, then the logs
    model.upsert(model.rows_of(range(0, 300, 4), 2))
    read = state.groups_read
    wins = range(1, 300, 10)  # deletes at a newer ts: gone in the compaction
    loses = range(5, 300, 30)  # deletes older than the stored version: the key stays
    both(
        pa.concat_tables(
            [
                flagged(model.rows_of(range(2, 300, 7), 3), False),
                flagged(model.rows_of(wins, 3), True),
                flagged(model.rows_of(loses, 0), True),
            ]
        )
    )
    model.upsert(model.rows_of(range(2, 300, 7), 3))
    model.delete(f"key-{i:05d}" for i in wins)
    compactions = ReadableTable(paths["state"]).timeline.commits().filter_actions("commit")
    assert len(compactions) == 1  # the compaction ran in that write
    assert state.groups_read == read
    loc = _check_same_as_simple(t, _probe(model, 400))
    assert {i for i in loc.instant.to_pylist() if i} == {compactions.last().requested_time}
    assert state.groups_read == read  # the compacted base files were learnt, not read
    # a deleted key written again, updates, new keys into the compacted (small) base files
    step = flagged(model.rows_of([1, 11, *range(3, 300, 13), *range(300, 340)], 4), False)
    both(step)
    model.upsert(step.drop_columns(["_hoodie_is_deleted"]))
    _check_same_as_simple(t, _probe(model, 400))
    # (a global state reads the small files that took the inserts: StateIndex.committed learns
    # merge handles' key changes for non-global lookups only)
    assert state.groups_read == read or index == "GLOBAL_SIMPLE"
    _check_table(t, model)
    cols = [*COLUMNS, "_hoodie_record_key", "_hoodie_partition_path"]
    simple_rows = ReadableTable(paths["simple"]).read(columns=cols)
    assert_rows(
        ReadableTable(paths["state"]).read(columns=cols), table_rows(simple_rows, cols), cols
    )


def test_entries_in_two_runs_stay_exact(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    """New entries go to a small sorted run merged into the main one only once it is large
    (:data:`hudi_ds.index.state.SMALL_RUN_FRACTION`): with the merge never due, every entry
    learnt after the bootstrap stays in the small run -- keys held by groups in both runs,
    removals from both, shared fingerprints -- and the state still answers as SIMPLE does."""
    import hudi_ds.index.state as state_module

    monkeypatch.setattr(state_module, "SMALL_RUN_FRACTION", 0)  # 0 * n >= main: never merged
    small: list[int] = []
    replace = StateIndex._replace

    def spy(self: StateIndex, *args: object) -> None:
        replace(self, *args)  # type: ignore[arg-type]
        small.append(len(self._dkeys))

    monkeypatch.setattr(StateIndex, "_replace", spy)
    test_own_writes_match_simple(tmp_path / "a", "COPY_ON_WRITE", "SIMPLE", True)
    test_key_in_two_file_groups_located_like_simple(tmp_path / "b")
    real = state_module._fingerprints
    monkeypatch.setattr(state_module, "_fingerprints", lambda fixed: real(fixed) & np.uint64(3))
    test_own_writes_match_simple(tmp_path / "c", "MERGE_ON_READ", "SIMPLE", False)
    assert max(small) >= 100  # the small run really held entries
