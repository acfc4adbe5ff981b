"""Table services on tables we write: compaction, cleaning, archival, rollback, savepoint/restore.

Every check compares our reader and hudi-rs (the ``hudi`` package) with the expected rows.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import time
from functools import partial
from pathlib import Path
from typing import Any

import hudi
import pyarrow as pa
import pytest

import hudi_ds
from hudi_ds.errors import (
    ConfigError,
    InstantNotFoundError,
    StorageError,
    TimelineError,
    UnsupportedError,
)
from hudi_ds.log.archive import load_archived
from hudi_ds.services import (
    ServiceContext,
    archival,
    clean,
    compaction,
    compaction_execute,
    compaction_plan,
    rollback,
    run_post_commit_services,
)
from hudi_ds.storage import Storage
from hudi_ds.timeline.instant import Instant, State
from hudi_ds.write.client import WriteClient
from tests.builders import sorted_rows, trips
from tests.conftest import (
    assert_rows,
    hudi_rs_table,
    lose_response_of_completed_file,
    table_options,
)
from tests.fixtures import GOLDEN_DIR, fixture_table
from tests.golden import golden_set, row_set

#: these tests schedule and run compactions themselves: the writers' default compaction (every
#: 5 delta commits, tests/services/test_compaction_defaults.py) is off
OPTS = {
    **table_options("trips", partition="city"),
    "hoodie.datasource.compaction.async.enable": "false",
}
COLS = ["id", "ts", "city", "fare"]


rows = partial(sorted_rows, columns=COLS)


def ours(path: str, options: dict[str, str] | None = None) -> list[tuple]:
    return rows(hudi_ds.read(path, options))


def hudi_rs(path: str, options: dict[str, str] | None = None) -> list[tuple]:
    opts = hudi.HudiReadOptions()
    for k, v in (options or {}).items():
        opts = opts.with_hudi_option(k, v)
    batches = hudi.HudiTableBuilder.from_base_uri(path).build().read(opts)
    return rows(pa.Table.from_batches(batches)) if batches else []


def fail_second_operation(monkeypatch: pytest.MonkeyPatch) -> Any:
    """The second operation a compaction executes raises ``OSError("disk full")``; returns the
    real ``execute_operation``, to put back."""
    calls = {"n": 0}
    real = compaction.execute_operation

    def flaky(job: Any, index: int, token: Any = None) -> Any:
        calls["n"] += 1
        if calls["n"] == 2:
            raise OSError("disk full")
        return real(job, index, token)

    monkeypatch.setattr(compaction, "execute_operation", flaky)
    return real


def data_files(path: str) -> list[Path]:
    return [
        p
        for p in Path(path).rglob("*")
        if p.is_file() and ".hoodie" not in p.parts and "partition_metadata" not in p.name
    ]


class Model:
    """The expected table: key -> row, updated like an event-time table."""

    def __init__(self) -> None:
        self.state: dict[str, tuple] = {}

    def apply(self, t: pa.Table) -> None:
        for r in zip(*(t.column(c).to_pylist() for c in COLS), strict=True):
            old = self.state.get(r[0])
            if old is None or r[1] >= old[1]:
                self.state[r[0]] = r

    def delete(self, ids: list[str]) -> None:
        for i in ids:
            self.state.pop(i, None)

    def rows(self) -> list[tuple]:
        return sorted(self.state.values())


def write(path: str, t: pa.Table, model: Model, opts: dict[str, str] | None = None) -> str:
    instant = hudi_ds.write(path, t, {**OPTS, **(opts or {})})
    model.apply(t)
    return instant


# -- compaction -------------------------------------------------------------------------------


def test_compaction_keeps_the_snapshot_and_fills_read_optimized(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    m = Model()
    for k in range(4):
        write(path, trips(range(k * 5, k * 5 + 20), k + 1), m)
    hudi_ds.write(path, trips([0, 1], 99), {**OPTS, "hoodie.datasource.write.operation": "delete"})
    m.delete(["t0", "t1"])
    assert ours(path) == hudi_rs(path) == m.rows()
    ro = {"hoodie.datasource.query.type": "read_optimized"}
    assert ours(path, ro) == []  # log-only file groups: nothing read-optimized yet
    ctx = ServiceContext.open(path)
    c = compaction.schedule_compaction(ctx)
    assert c is not None
    plan = ctx.timeline().read_compaction_plan(c)
    assert plan.version == 2 and len(plan.operations or []) == 4
    op = (plan.operations or [])[0]
    assert op.data_file_path is None and op.delta_file_paths
    assert set(op.metrics or {}) >= {"TOTAL_LOG_FILES", "TOTAL_LOG_FILES_SIZE", "TOTAL_IO_MB"}
    assert hudi_rs(path) == ours(path) == m.rows()  # pending: both readers unchanged
    (res,) = compaction.run_compaction(ctx)
    assert res.instant == c and res.rows == len(m.rows()) and res.operations == 4
    assert ours(path) == hudi_rs(path) == m.rows()
    assert ours(path, ro) == hudi_rs(path, ro) == m.rows()
    # the completed instant: C.commit, compacted, COMPACT, and the plan files stay
    hoodie = Path(path) / ".hoodie"
    md = json.loads((hoodie / f"{c}.commit").read_text())
    assert md["compacted"] is True and md["operationType"] == "COMPACT"
    assert (hoodie / f"{c}.compaction.requested").exists()
    assert (hoodie / f"{c}.compaction.inflight").stat().st_size == 0
    stats = [s for v in md["partitionToWriteStats"].values() for s in v]
    assert all(s["path"].endswith(f"_{c}.parquet") for s in stats)
    # meta columns: commit time and seqno of the record kept, file name = the new base file
    t = hudi_ds.read(path)
    base_names = {s["path"].rsplit("/", 1)[-1] for s in stats}
    assert set(t.column("_hoodie_file_name").to_pylist()) <= base_names
    assert c not in set(t.column("_hoodie_commit_time").to_pylist())
    # nothing left to compact: slices have no log files
    assert compaction.schedule_compaction(ctx) is None


def test_compaction_strategies_and_io_bound(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    m = Model()
    write(path, trips(range(40), 1), m)
    write(path, trips(range(0, 40, 2), 2), m)  # nyc (even ids) gets a second log file
    ctx = ServiceContext.open(
        path, {"hoodie.compaction.strategy": "LogFileNumBasedCompactionStrategy"}
    )
    plan = compaction_plan.plan_compaction(ctx)
    counts = [(op.metrics or {})["TOTAL_LOG_FILES"] for op in plan.operations or []]
    assert counts == sorted(counts, reverse=True) and counts[0] == 2
    ctx = ServiceContext.open(
        path,
        {
            "hoodie.compaction.strategy": "LogFileNumBasedCompactionStrategy",
            "hoodie.compaction.logfile.num.threshold": "2",
        },
    )
    plan = compaction_plan.plan_compaction(ctx)
    assert {op.partition_path for op in plan.operations or []} == {"nyc"}
    # bounded IO: a 1 MB budget takes one slice (the one that crosses the budget)
    ctx = ServiceContext.open(path, {"hoodie.compaction.target.io": "1"})
    assert len(compaction_plan.plan_compaction(ctx).operations or []) == 1
    ctx = ServiceContext.open(
        path,
        {
            "hoodie.compaction.strategy": "org.apache.hudi.table.action.compact.strategy.UnBoundedCompactionStrategy",
            "hoodie.compaction.target.io": "1",
        },
    )
    assert len(compaction_plan.plan_compaction(ctx).operations or []) == 4
    with pytest.raises(ConfigError, match="hoodie.compaction.strategy"):
        ServiceContext.open(path, {"hoodie.compaction.strategy": "Nope"})


def test_writes_during_a_pending_compaction(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    m = Model()
    for k in range(3):
        last = write(path, trips(range(k * 4, k * 4 + 10), k + 1), m)
    at_last = m.rows()
    ctx = ServiceContext.open(path)
    c = compaction.schedule_compaction(ctx)
    assert c is not None
    # writers name new log files of the planned file groups with base instant C
    write(path, trips(range(0, 6), 10), m)
    new_logs = [p for p in data_files(path) if f"_{c}.log." in p.name]
    assert new_logs, "log files written during the pending compaction carry its instant"
    assert ours(path) == m.rows()
    # an attempt that wrote a base file and died: invisible to both readers
    job = compaction_execute.prepare_compaction(ctx, c)
    ctx.writer().transition_to_inflight(Instant(c, "compaction", State.REQUESTED))
    compaction_execute.execute_operation(job, 0)
    write(path, trips(range(3, 9), 11), m)  # a write while the compaction "runs"
    assert ours(path) == m.rows()
    (res,) = compaction.run_compaction(ctx)  # retried: the dead attempt is rolled back first
    assert res.instant == c
    assert ours(path) == hudi_rs(path) == m.rows()
    tl = ctx.timeline()
    rb = [i for i in tl.completed().filter_actions("rollback")]
    assert [tl.read_rollback_metadata(r).rolled_back_instants for r in rb] == [[c]]
    # time travel to before the compaction still merges the logs written on top of it
    before_c = [i.requested_time for i in tl.commits() if i.requested_time < c][-1]
    assert before_c == last
    assert ours(path, {"as.of.instant": before_c}) == at_last
    write(path, trips(range(20, 22), 12), m)
    assert ours(path) == hudi_rs(path) == m.rows()


def test_schedule_refuses_pending_writes_and_non_mor(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    m = Model()
    write(path, trips(range(6), 1), m)
    client = WriteClient(path, OPTS, post_commit=run_post_commit_services)
    client.start(trips([0], 2).schema)  # a write in flight
    ctx = ServiceContext.open(path)
    with pytest.raises(TimelineError, match="pending"):
        compaction.schedule_compaction(ctx)
    cow = str(tmp_path / "cow")
    hudi_ds.write(
        cow, trips(range(3), 1), {**OPTS, "hoodie.datasource.write.table.type": "COPY_ON_WRITE"}
    )
    with pytest.raises(UnsupportedError, match="MERGE_ON_READ"):
        compaction.schedule_compaction(ServiceContext.open(cow))


def _three_writes_and_a_plan(tmp_path: Path) -> tuple[str, Model, ServiceContext, str]:
    """A MOR table of three writes of ten keys and its compaction plan (scheduled, not run)."""
    path = str(tmp_path / "t")
    m = Model()
    for k in range(3):
        write(path, trips(range(10), k + 1), m)
    ctx = ServiceContext.open(path)
    c = compaction.schedule_compaction(ctx)
    assert c is not None
    return path, m, ctx, c


def test_failed_compaction_is_rolled_back_and_retried(tmp_path: Path, monkeypatch) -> None:
    path, m, ctx, c = _three_writes_and_a_plan(tmp_path)
    real = fail_second_operation(monkeypatch)
    with pytest.raises(OSError, match="disk full"):
        compaction.run_compaction(ctx, c)
    tl = ctx.timeline()
    assert tl.get(c).is_requested  # rolled back to requested, plan kept
    assert not [p for p in data_files(path) if p.name.endswith(f"_{c}.parquet")]
    assert ours(path) == hudi_rs(path) == m.rows()
    monkeypatch.setattr(compaction, "execute_operation", real)
    (res,) = compaction.run_compaction(ctx)
    assert res.instant == c and ours(path) == hudi_rs(path) == m.rows()
    with pytest.raises(InstantNotFoundError, match="already completed"):
        compaction.run_compaction(ctx, c)


def test_compaction_whose_marker_deletion_fails_after_its_commit_stands(
    tmp_path: Path, monkeypatch
) -> None:
    """Deleting the markers fails (a store error) after the compaction's completed file is
    written: the compaction stands -- it is not treated as failed and rolled back, which
    deleted the base files of a completed instant -- and every row reads back."""
    path, m, ctx, c = _three_writes_and_a_plan(tmp_path)
    real = Storage.delete_dir

    def failing(self: Storage, rel: str) -> Any:
        if ".temp" in rel:
            raise StorageError(f"delete {rel} failed: injected")
        return real(self, rel)

    monkeypatch.setattr(Storage, "delete_dir", failing)
    (res,) = compaction.run_compaction(ctx, c)
    monkeypatch.setattr(Storage, "delete_dir", real)
    assert res.instant == c
    tl = ServiceContext.open(path).timeline()
    assert tl.get(c).is_completed
    assert [p for p in data_files(path) if p.name.endswith(f"_{c}.parquet")]
    assert ours(path) == hudi_rs(path) == m.rows()


@pytest.mark.parametrize("version", ["6", "8"])
def test_compaction_failing_after_its_completed_file_is_written_stands(
    version: str, tmp_path: Path, monkeypatch
) -> None:
    """The store reports an error for the compaction's completed file after writing it: the
    error is raised, but the timeline, listed again, shows the compaction completed, so its
    attempt is not rolled back nor its files deleted as a superseded attempt's -- its base
    files stay, every row reads back and a later run finds nothing to do."""
    path = str(tmp_path / "t")
    opts = {"hoodie.write.table.version": version}
    m = Model()
    for k in range(3):
        write(path, trips(range(10), k + 1), m, opts)
    ctx = ServiceContext.open(path, {**OPTS, **opts})
    c = compaction.schedule_compaction(ctx)
    assert c is not None
    real = lose_response_of_completed_file(monkeypatch, c)
    with pytest.raises(StorageError, match="injected"):
        compaction.run_compaction(ctx, c)
    monkeypatch.setattr(Storage, "write_atomic", real)
    tl = ServiceContext.open(path).timeline()
    inst = tl.get(c)
    assert inst is not None and inst.is_completed
    named = {
        s.path
        for sts in tl.read_commit_metadata(inst).partition_to_write_stats.values()
        for s in sts
    }
    assert named and all((Path(path) / p).is_file() for p in named)
    assert not list(tl.filter_actions("rollback"))
    assert ours(path) == hudi_rs(path) == m.rows()
    assert compaction.run_compaction(ServiceContext.open(path, {**OPTS, **opts})) == []


def test_unschedule_moves_logs_back(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    m = Model()
    write(path, trips(range(8), 1), m)
    write(path, trips(range(8), 2), m)
    ctx = ServiceContext.open(path)
    c = compaction.schedule_compaction(ctx)
    assert c is not None
    write(path, trips(range(4), 3), m)
    moved = rollback.rollback(ctx, c)  # rolling back a pending compaction unschedules it
    assert moved.rollback_instant is None
    assert not ctx.timeline().contains(c)
    assert not [p for p in data_files(path) if f"_{c}." in p.name]
    assert ours(path) == hudi_rs(path) == m.rows()


@pytest.mark.parametrize("version", ["6", "8", "9"])
def test_inline_compaction_cleaning_20_commits(tmp_path: Path, version: str) -> None:
    """20 upserts, inline compaction every 5, cleaning: live files stay bounded, rows exact."""
    path = str(tmp_path / "t")
    opts = {
        "hoodie.write.table.version": version,
        "hoodie.compact.inline": "true",
        "hoodie.compact.inline.max.delta.commits": "5",
        "hoodie.cleaner.commits.retained": "3",
        "hoodie.keep.min.commits": "6",
        "hoodie.keep.max.commits": "9",
    }
    rnd = random.Random(7)
    m = Model()
    counts = []
    instants = []
    snapshots = {}
    for k in range(20):
        ids = sorted({rnd.randrange(300) for _ in range(80)})
        instants.append(write(path, trips(ids, k + 1), m, opts))
        snapshots[instants[-1]] = m.rows()
        counts.append(len(data_files(path)))
        assert ours(path) == m.rows()
    assert hudi_rs(path) == m.rows()
    tl = hudi_ds.HudiTable(path).timeline
    compactions = [i for i in tl.commits() if tl.origin_action(i.requested_time) == "compaction"]
    cleans = [i for i in tl.completed().filter_actions("clean")]
    assert compactions and cleans is not None
    # 4 file groups: at most ~3 slices of (base + up to 5 logs) each survive the cleaner
    assert max(counts[8:]) <= 4 * (2 + 5 + 1 + 5) and max(counts[8:]) <= max(counts[:8]) + 8
    assert len(data_files(path)) < 20 * 4  # without cleaning: 80 log files + base files
    # time travel inside the retained window still works
    for inst in instants[-3:]:
        assert ours(path, {"as.of.instant": inst}) == snapshots[inst]
    # archival trimmed the timeline; the archive reads back
    assert len(tl.commits()) <= 9
    archived = load_archived(Storage(path), 1 if version == "6" else 2)
    assert {i.requested_time for i in archived.commits()} >= set(instants[:5])
    with pytest.raises(InstantNotFoundError, match="archived"):
        hudi_ds.read(path, {"as.of.instant": instants[0]})
    # hudi-rs and our reader while a compaction is pending, then half executed
    write(
        path,
        trips(range(0, 300, 7), 50),
        m,
        {
            **opts,
            "hoodie.compact.inline": "false",
            "hoodie.datasource.compaction.async.enable": "false",
        },
    )
    ctx = ServiceContext.open(path, opts)
    c = compaction.schedule_compaction(ctx)
    assert c is not None
    assert ours(path) == hudi_rs(path) == m.rows()
    job = compaction_execute.prepare_compaction(ctx, c)
    ctx.writer().transition_to_inflight(Instant(c, "compaction", State.REQUESTED))
    compaction_execute.execute_operation(job, 0)
    assert ours(path) == hudi_rs(path) == m.rows()
    write(path, trips(range(5), 99), m, opts)  # the next write retries it (inline)
    assert ctx.reload_timeline().is_completed(c)
    assert ours(path) == hudi_rs(path) == m.rows()


# -- cleaning ---------------------------------------------------------------------------------


def _compact(path: str) -> str:
    ctx = ServiceContext.open(path)
    c = compaction.schedule_compaction(ctx)
    assert c is not None
    compaction.run_compaction(ctx, c)
    return c


@pytest.mark.parametrize("version", ["6", "8", "9"])
def test_clean_keep_latest_commits_keeps_the_window(tmp_path: Path, version: str) -> None:
    v = {"hoodie.write.table.version": version}
    path = str(tmp_path / "t")
    m = Model()
    no_auto = {"hoodie.clean.automatic": "false"}
    snaps: dict[str, list[tuple]] = {}
    for round_ in range(3):
        for k in range(2):
            i = write(path, trips(range(10), round_ * 10 + k + 1), m, {**no_auto, **v})
            snaps[i] = m.rows()
        c = _compact(path)
        snaps[c] = m.rows()
    before = {p.name for p in data_files(path)}
    ctx = ServiceContext.open(path, {"hoodie.cleaner.commits.retained": "2"})
    e = clean.earliest_commit_to_retain(ctx, ctx.timeline())
    assert e is not None
    res = clean.clean(ctx)
    assert res.instant is not None and res.deleted
    assert res.earliest_commit_to_retain == e.requested_time
    after = {p.name for p in data_files(path)}
    assert after < before
    assert ours(path) == hudi_rs(path) == m.rows()
    # every instant inside the window still reads exactly as it did
    for inst, expected in snaps.items():
        if inst >= e.requested_time:
            assert ours(path, {"as.of.instant": inst}) == expected
        else:
            with pytest.raises(InstantNotFoundError, match="cleaner retained"):
                ours(path, {"as.of.instant": inst})
    # incremental read inside the window
    first_kept = min(i for i in snaps if i >= e.requested_time)
    inc = hudi_ds.read(
        path,
        {
            "hoodie.datasource.query.type": "incremental",
            "hoodie.datasource.read.begin.instanttime": "000",
            "hoodie.datasource.read.end.instanttime": max(snaps),
        },
    )
    assert inc.num_rows == len(m.rows())
    _ = first_kept
    # the clean instant: Avro plan and metadata, in Hudi's shape
    tl = ctx.timeline()
    plan = tl.read_cleaner_plan(res.instant)
    md = tl.read_clean_metadata(res.instant)
    assert plan.policy == "KEEP_LATEST_COMMITS" and plan.version == 2
    assert md.total_files_deleted == len(res.deleted)
    assert md.earliest_commit_to_retain == e.requested_time
    # nothing more to clean
    assert clean.clean(ctx).instant is None


@pytest.mark.parametrize("version", ["6", "8", "9"])
def test_clean_keep_latest_file_versions(tmp_path: Path, version: str) -> None:
    v = {"hoodie.write.table.version": version}
    path = str(tmp_path / "t")
    m = Model()
    for k in range(4):
        write(path, trips(range(6), k + 1), m, {"hoodie.clean.automatic": "false", **v})
        _compact(path)
    ctx = ServiceContext.open(
        path,
        {
            "hoodie.cleaner.policy": "KEEP_LATEST_FILE_VERSIONS",
            "hoodie.cleaner.fileversions.retained": "1",
        },
    )
    res = clean.clean(ctx)
    assert res.instant is not None
    # one slice per file group left: a base file each, no old logs
    files = data_files(path)
    assert len([p for p in files if p.suffix == ".parquet"]) == 2
    assert not [p for p in files if ".log." in p.name]
    assert ours(path) == hudi_rs(path) == m.rows()


@pytest.mark.parametrize("version", ["6", "8", "9"])
def test_cow_automatic_cleaning(tmp_path: Path, version: str) -> None:
    v = {"hoodie.write.table.version": version}
    path = str(tmp_path / "t")
    m = Model()
    opts = {
        "hoodie.datasource.write.table.type": "COPY_ON_WRITE",
        "hoodie.cleaner.commits.retained": "2",
    }
    for k in range(6):
        write(path, trips(range(6), k + 1), m, {**opts, **v})
    # 2 file groups x (latest + the versions the last 2 commits need)
    assert len(data_files(path)) <= 2 * 3
    assert ours(path) == hudi_rs(path) == m.rows()


def test_clean_removes_debris_of_failed_writes(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    m = Model()
    write(path, trips(range(6), 1), m)
    write(path, trips(range(6), 2), m)
    # debris: a log file of a rolled-back instant whose rollback lost track of it, a base file
    # of an instant on no timeline, a stale marker folder
    part = Path(path) / "nyc"
    log = sorted(part.glob(".*.log.*"))[0]
    ghost = "20200101000000000"
    from hudi_ds.log.writer import encode_rollback_command_block

    stray_log = part / log.name.replace(".log.1_", ".log.9_").replace(".log.2_", ".log.9_")
    data = log.read_bytes()
    stray_log.write_bytes(data.replace(log.name.split("_")[1].split(".")[0].encode(), b"x" * 0))
    later = "29990101000000000"
    # a log whose blocks name an instant that never completed (and is not pending)
    from hudi_ds.log.block import BlockType, HeaderKey, encode_block

    stray_log.write_bytes(
        encode_block(
            BlockType.COMMAND,
            {
                HeaderKey.INSTANT_TIME: later,
                HeaderKey.TARGET_INSTANT_TIME: later,
                HeaderKey.COMMAND_BLOCK_TYPE: "0",
            },
            b"",
        )
    )
    _ = encode_rollback_command_block
    stray_base = part / f"00000000-aaaa-bbbb-cccc-dddddddddddd-0_0-0-0_{later}.parquet"
    shutil.copy(sorted(Path(path).rglob("*.log.*"))[0], stray_base)  # never read: just bytes
    marker_dir = Path(path) / ".hoodie" / ".temp" / later
    marker_dir.mkdir(parents=True)
    (marker_dir / "x.marker.CREATE").write_text("")
    old_time = time.time() - 3600  # untouched for an hour: a fresh one may be in use
    os.utime(marker_dir / "x.marker.CREATE", (old_time, old_time))
    old_base = part / f"00000000-aaaa-bbbb-cccc-dddddddddddd-0_0-0-0_{ghost}.parquet"
    shutil.copy(stray_base, old_base)  # older than the first instant: taken as archived, kept
    ctx = ServiceContext.open(path)
    res = clean.clean(ctx)
    assert not stray_log.exists() and not stray_base.exists() and not marker_dir.exists()
    assert sorted(Path(p).name for p in res.debris) == sorted([stray_log.name, stray_base.name])
    assert old_base.exists()
    old_base.unlink()
    assert ours(path) == hudi_rs(path) == m.rows()


@pytest.mark.parametrize("version", ["6", "8", "9"])
def test_clean_keeps_savepointed_and_pending_compaction_files(tmp_path: Path, version: str) -> None:
    v = {"hoodie.write.table.version": version}
    path = str(tmp_path / "t")
    m = Model()
    no_auto = {"hoodie.clean.automatic": "false"}
    write(path, trips(range(6), 1), m, {**no_auto, **v})
    sp = write(path, trips(range(6), 2), m, {**no_auto, **v})
    sp_rows = m.rows()
    ctx = ServiceContext.open(path, {"hoodie.cleaner.commits.retained": "1"})
    rollback.create_savepoint(ctx, sp)
    for k in range(3):
        _compact(path)
        write(path, trips(range(6), 3 + k), m, {**no_auto, **v})
    c = compaction.schedule_compaction(ctx)  # pending: its slices must survive
    assert c is not None
    clean.clean(ctx)
    plan = ctx.timeline().read_compaction_plan(c)
    for op in plan.operations or []:
        for rel in [op.base_file_rel_path, *op.log_file_rel_paths]:
            assert rel is None or (Path(path) / rel).exists()
    saved = ctx.timeline().read_savepoint_metadata(sp)
    for pm in saved.partition_metadata.values():
        for name in pm.savepoint_data_file:
            assert (Path(path) / pm.partition_path / name).exists()
    compaction.run_compaction(ctx, c)
    assert ours(path) == hudi_rs(path) == m.rows()
    rollback.restore(ctx, sp)
    assert ours(path) == hudi_rs(path) == sp_rows


# -- rollback, savepoint, restore ------------------------------------------------------------------


@pytest.mark.parametrize("version", ["6", "8", "9"])
def test_rollback_of_the_last_completed_delta_commit(tmp_path: Path, version: str) -> None:
    v = {"hoodie.write.table.version": version}
    path = str(tmp_path / "t")
    m = Model()
    write(path, trips(range(10), 1), m, v)
    first = write(path, trips(range(5, 15), 2), m, v)
    before = m.rows()
    last = hudi_ds.write(path, trips(range(0, 20, 3), 3), {**OPTS, **v})
    assert ours(path) != before
    ctx = ServiceContext.open(path)
    with pytest.raises(TimelineError, match="later instants"):
        rollback.rollback(ctx, first)
    res = rollback.rollback(ctx, last)
    assert res.rollback_instant is not None and res.deleted
    assert ours(path) == hudi_rs(path) == before
    tl = ctx.timeline()
    assert not tl.contains(last)
    plan = tl.read_rollback_plan(res.rollback_instant)
    assert plan.instant_to_rollback is not None and plan.instant_to_rollback.commit_time == last
    md = tl.read_rollback_metadata(res.rollback_instant)
    assert md.commits_rollback == [last] and md.total_files_deleted == len(res.deleted)
    with pytest.raises(InstantNotFoundError):
        rollback.rollback(ctx, last)
    # the table keeps working
    write(path, trips([99], 4), m, v)
    assert ours(path) == hudi_rs(path) == m.rows()


@pytest.mark.parametrize("version", ["6", "8", "9"])
def test_rollback_of_a_compaction_and_of_a_cow_commit(tmp_path: Path, version: str) -> None:
    v = {"hoodie.write.table.version": version}
    path = str(tmp_path / "t")
    m = Model()
    write(path, trips(range(8), 1), m, v)
    write(path, trips(range(4), 2), m, v)
    c = _compact(path)
    res = rollback.rollback(ServiceContext.open(path), c)
    assert res.action == "compaction"
    assert not [p for p in data_files(path) if p.suffix == ".parquet"]
    assert ours(path) == hudi_rs(path) == m.rows()
    cow = str(tmp_path / "cow")
    opts = {"hoodie.datasource.write.table.type": "COPY_ON_WRITE"}
    m2 = Model()
    write(cow, trips(range(8), 1), m2, {**opts, **v})
    before = m2.rows()
    last = hudi_ds.write(cow, trips(range(4), 2), {**OPTS, **opts, **v})
    rollback.rollback(ServiceContext.open(cow), last)
    assert ours(cow) == hudi_rs(cow) == before


def test_rollback_writes_command_blocks_into_shared_log_files(tmp_path_factory) -> None:
    """A v6 log file written by Java Hudi holds blocks of several delta commits: the rollback
    of the last one cannot delete it and appends a ROLLBACK command block instead."""
    src = fixture_table("mor_avro_v6_trips_8i1u", tmp_path_factory)
    root = tmp_path_factory.mktemp("rb") / "t"
    shutil.copytree(src, root)
    ctx = ServiceContext.open(str(root))
    tl = ctx.timeline()
    last = tl.commits().last()
    assert last is not None
    shared = [
        s.path for s in tl.read_commit_metadata(last).write_stats() if s.path and ".log." in s.path
    ]
    res = rollback.rollback(ctx, last.requested_time)
    got = hudi_ds.read(str(root))
    before_last = golden_set(GOLDEN_DIR / "mor_avro_v6_trips_8i1u.read_optimized.jsonl")
    if res.command_logs:
        assert all((root / p).exists() for p in shared)
    assert row_set(got) == before_last
    assert (
        row_set(
            pa.Table.from_batches(
                hudi.HudiTableBuilder.from_base_uri(str(root)).build().read(hudi.HudiReadOptions())
            )
        )
        == before_last
    )


def test_savepoint_and_restore(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    m = Model()
    write(path, trips(range(10), 1), m)
    sp = write(path, trips(range(5, 12), 2), m)
    saved = m.rows()
    ctx = ServiceContext.open(path)
    assert rollback.create_savepoint(ctx, comment="before the big change") == sp
    with pytest.raises(TimelineError, match="already savepointed"):
        rollback.create_savepoint(ctx, sp)
    assert (Path(path) / ".hoodie" / f"{sp}.savepoint").exists()
    # the timeline still sees the delta commit of the savepointed instant
    tl = ctx.timeline()
    assert tl.get(sp) is not None and tl.get(sp).action == "deltacommit"
    assert [s.requested_time for s in tl.savepoints()] == [sp]
    md = tl.read_savepoint_metadata(sp)
    assert md.comments == "before the big change" and md.partition_metadata
    write(path, trips(range(20), 3), m)
    _compact(path)
    write(path, trips(range(3), 4), m)
    with pytest.raises(TimelineError, match="savepointed"):
        rollback.rollback(ctx, sp)
    restored = rollback.restore(ctx, sp)
    assert len(restored.instants_to_rollback) == 3
    assert ours(path) == hudi_rs(path) == saved
    tl = ctx.timeline()
    r = tl.filter_actions("restore").last()
    assert r is not None and r.is_completed
    assert tl.read_restore_plan(r).savepoint_to_restore_timestamp == sp
    rollback.delete_savepoint(ctx, sp)
    assert ctx.timeline().savepoints() == []
    with pytest.raises(InstantNotFoundError):
        rollback.restore(ctx, sp)


# -- archival -------------------------------------------------------------------------------------


def test_archival_moves_instants_in_hudi_format(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    m = Model()
    opts = {
        "hoodie.archive.automatic": "false",
        "hoodie.clean.automatic": "false",
    }
    instants = [write(path, trips(range(k, k + 6), k + 1), m, opts) for k in range(12)]
    c = _compact(path)
    ctx = ServiceContext.open(
        path,
        {
            "hoodie.keep.min.commits": "4",
            "hoodie.keep.max.commits": "6",
            "hoodie.cleaner.commits.retained": "2",
        },
    )
    assert archival.archive(ctx, dry_run=True).archive_file is None
    res = archival.archive(ctx)
    assert res.archive_file is not None and res.archive_file.endswith(".commits_.archive.1_1-0-1")
    tl = ctx.timeline()
    assert len(tl.commits()) == 4 and tl.first_active_time() == res_first(tl)
    archived = load_archived(Storage(path), 1)
    assert [i.requested_time for i in archived] == instants[:9]
    md = archived.read_commit_metadata(instants[0])
    assert md.operation_type == "UPSERT" and md.write_paths()
    # data of archived instants stays readable, by both readers
    assert ours(path) == hudi_rs(path) == m.rows()
    assert c in {i.requested_time for i in tl.commits()}
    with pytest.raises(InstantNotFoundError, match="archived timeline"):
        hudi_ds.read(path, {"as.of.instant": instants[2]})
    with pytest.raises(InstantNotFoundError, match="archived"):
        hudi_ds.read(
            path,
            {
                "hoodie.datasource.query.type": "incremental",
                "hoodie.datasource.read.begin.instanttime": instants[1],
            },
        )
    # incremental from the first active instant on works
    inc = hudi_ds.read(
        path,
        {
            "hoodie.datasource.query.type": "incremental",
            "hoodie.datasource.read.begin.instanttime": instants[9],
        },
    )
    assert inc.num_rows > 0
    assert archival.archive(ctx).archived == []  # down to min; nothing more until max


def res_first(tl: Any) -> str:
    return tl.instants[0].requested_time


def test_archival_stops_at_savepoints_and_pending_instants(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    m = Model()
    opts = {"hoodie.archive.automatic": "false", "hoodie.clean.automatic": "false"}
    instants = [write(path, trips(range(4), k + 1), m, opts) for k in range(10)]
    ctx = ServiceContext.open(
        path,
        {
            "hoodie.keep.min.commits": "3",
            "hoodie.keep.max.commits": "4",
            "hoodie.cleaner.commits.retained": "1",
        },
    )
    rollback.create_savepoint(ctx, instants[3])
    chosen = [i.requested_time for i in archival.instants_to_archive(ctx)]
    assert chosen == instants[:3]
    rollback.delete_savepoint(ctx, instants[3])
    c = compaction.schedule_compaction(ctx)
    assert c is not None
    assert [i.requested_time for i in archival.instants_to_archive(ctx)] == instants[:7]
    compaction.run_compaction(ctx, c)


@pytest.mark.parametrize("table_type", ["MERGE_ON_READ", "COPY_ON_WRITE"])
def test_archival_beyond_savepoint_loses_no_data(tmp_path: Path, table_type: str) -> None:
    """``hoodie.archive.beyond.savepoint`` archives commits after a savepointed commit, which
    stays active: the timeline gets holes. Java's file-system view and hudi-rs take files of
    commits in a hole for uncommitted, so archival stops at one whose files a snapshot still
    reads (here the compaction, or the last COW commit of "nyc"); the files of the commits in
    a hole that a later savepoint keeps stay committed (Java's ``findFirstNonSavepointCommit``):
    the cleaner must not delete them as debris of failed writes."""
    path = str(tmp_path / "t")
    m = Model()
    opts = {
        "hoodie.archive.automatic": "false",
        "hoodie.clean.automatic": "false",
        "hoodie.datasource.write.table.type": table_type,
    }
    s1 = write(path, trips(range(8), 1), m, opts)
    c2 = write(path, trips(range(1, 8, 2), 2), m, opts)  # "sf" only
    s2 = write(path, trips(range(0, 8, 2), 3), m, opts)  # "nyc" only
    ctx = ServiceContext.open(
        path,
        {
            "hoodie.keep.min.commits": "2",
            "hoodie.keep.max.commits": "3",
            "hoodie.cleaner.commits.retained": "1",
            "hoodie.archive.beyond.savepoint": "true",
        },
    )
    rollback.create_savepoint(ctx, s1)
    rollback.create_savepoint(ctx, s2)
    for k in range(4, 7):
        write(path, trips(range(8), k), m, opts)
    if table_type == "MERGE_ON_READ":
        _compact(path)
    # later writes touch only "sf": the latest "nyc" slices stay the compaction's / commit 6's
    for k in range(7, 9):
        write(path, trips(range(1, 8, 2), k), m, opts)
    clean.clean(ctx)
    expected = m.rows()
    assert ours(path) == hudi_rs(path) == expected
    res = archival.archive(ctx)
    tl = ctx.timeline()
    # both savepointed commits stay; c2, between them, is archived: a hole
    assert tl.get(s1) is not None and tl.get(s2) is not None
    assert c2 in res.archived and tl.get(c2) is None
    # nothing a snapshot reads was archived after a savepoint
    start = tl.first_non_savepoint_commit()
    assert start is not None and start.requested_time > max(res.archived)
    # an incremental read from s1 would miss c2: refused, as across any archived commit
    with pytest.raises(InstantNotFoundError, match="archived"):
        hudi_ds.read(
            path,
            {
                "hoodie.datasource.query.type": "incremental",
                "hoodie.datasource.read.begin.instanttime": s1,
            },
        )
    # every row, every value, by both readers
    assert_rows(hudi_ds.read(path), expected, COLS)
    assert_rows(hudi_rs_table(path), expected, COLS)
    # the cleaner keeps what savepoint s2 keeps, c2's files included: they are not debris
    saved = tl.read_savepoint_metadata(s2)
    kept = [
        Path(path) / pm.partition_path / name
        for pm in saved.partition_metadata.values()
        for name in pm.savepoint_data_file
    ]
    assert kept and all(f.exists() for f in kept)
    res_clean = clean.clean(ctx)
    assert not res_clean.debris
    assert all(f.exists() for f in kept)
    assert_rows(hudi_ds.read(path), expected, COLS)
    assert_rows(hudi_rs_table(path), expected, COLS)
    # c2 cannot be rolled back: no restore across it (Java refuses any restore with
    # hoodie.archive.beyond.savepoint)
    with pytest.raises(TimelineError, match="archived"):
        rollback.restore(ctx, s1)
    # and the table keeps working
    write(path, trips([0, 2], 9), m, opts)
    assert ours(path) == hudi_rs(path) == m.rows()


def test_services_options_are_validated(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    with pytest.raises(ConfigError, match="hoodie.keep.min.commits"):
        hudi_ds.write(path, trips(range(2), 1), {**OPTS, "hoodie.keep.min.commits": "5"})
    with pytest.raises(ConfigError, match="hoodie.cleaner.policy"):
        hudi_ds.write(path, trips(range(2), 1), {**OPTS, "hoodie.cleaner.policy": "KEEP_ALL"})
    with pytest.raises(ConfigError, match="did you mean"):
        hudi_ds.write(path, trips(range(2), 1), {**OPTS, "hoodie.compact.inlin": "true"})


# -- a table written by Apache Hudi -----------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    ["mor_avro_v6_trips_8i1u", "mor_avro_v6_trips_8i3d", "mor_parquet_v6_nonpartitioned_rollback"],
)
def test_compaction_of_a_hudi_written_table(name: str, tmp_path_factory) -> None:
    src = fixture_table(name, tmp_path_factory)
    root = tmp_path_factory.mktemp("cp") / name
    shutil.copytree(src, root)
    ctx = ServiceContext.open(str(root))
    c = compaction.schedule_compaction(ctx)
    assert c is not None
    compaction.run_compaction(ctx, c)
    expected = golden_set(GOLDEN_DIR / f"{name}.snapshot.jsonl")

    def without_file_name(rows_: list[str]) -> list[str]:
        out = []
        for r in rows_:
            d = json.loads(r)
            d.pop("_hoodie_file_name", None)
            out.append(json.dumps(d, sort_keys=True))
        return sorted(out)

    got = hudi_ds.read(str(root))
    rs = pa.Table.from_batches(
        hudi.HudiTableBuilder.from_base_uri(str(root)).build().read(hudi.HudiReadOptions())
    )
    ro = hudi_ds.read(str(root), {"hoodie.datasource.query.type": "read_optimized"})
    # the same records; only _hoodie_file_name names the new base files
    assert without_file_name(row_set(got)) == without_file_name(expected)
    assert without_file_name(row_set(rs)) == without_file_name(expected)
    assert without_file_name(row_set(ro)) == without_file_name(expected)


def test_rollback_of_an_instant_sharing_a_log_file(tmp_path: Path) -> None:
    """Java Hudi appends delta commits to one v6 log file: such a file cannot be deleted, so
    the rollback writes a ROLLBACK command block (in a new log file of the slice)."""
    path = str(tmp_path / "t")
    m = Model()
    one_group = {"hoodie.bucket.index.num.buckets": "1"}
    write(path, trips([0, 2, 4], 1), m, one_group)
    before = m.rows()
    last = hudi_ds.write(path, trips([2, 6], 2), {**OPTS, **one_group})
    hoodie = Path(path) / ".hoodie"
    md = json.loads((hoodie / f"{last}.deltacommit").read_text())
    (stat,) = md["partitionToWriteStats"]["nyc"]
    mine = Path(path) / stat["path"]
    first = next(p for p in (Path(path) / "nyc").glob(".*.log.1_*"))
    # make it look like Java's append: T's blocks at the end of the earlier log file
    first.write_bytes(first.read_bytes() + mine.read_bytes())
    mine.unlink()
    stat["path"] = f"nyc/{first.name}"
    stat["logFiles"] = [first.name]
    (hoodie / f"{last}.deltacommit").write_text(json.dumps(md))
    assert ours(path) != before
    res = rollback.rollback(ServiceContext.open(path), last)
    assert first.exists() and not res.deleted
    assert len(res.command_logs) == 1
    assert ours(path) == hudi_rs(path) == before
    tl = ServiceContext.open(path).timeline()
    assert res.rollback_instant is not None
    plan = tl.read_rollback_plan(res.rollback_instant)
    assert any(r.log_blocks_to_be_deleted for r in plan.rollback_requests or [])
    rmd = tl.read_rollback_metadata(res.rollback_instant)
    assert any(pm.rollback_log_files for pm in rmd.partition_metadata.values())
    # the command-block file is no debris: a clean keeps it
    clean.clean(ServiceContext.open(path))
    assert all((Path(path) / p).exists() for p in res.command_logs)
    assert ours(path) == hudi_rs(path) == before
