"""MOR compaction by default, as Hudi's streaming writers do it
(``hoodie.datasource.compaction.async.enable``, default true; every
``hoodie.compact.inline.max.delta.commits`` = 5 delta commits), and the background compactor
the Spark streaming sink hands it to (:mod:`hudi_ds.services.background`)."""

from __future__ import annotations

import subprocess
import threading
from functools import partial
from pathlib import Path

import pyarrow as pa
import pytest

import hudi_ds
from hudi_ds.services import ServiceContext, background, compaction
from hudi_ds.services.background import (
    _exclusive,
    compactor_lock_path,
    compactor_running,
    start_compactor,
)
from hudi_ds.timeline.view import TableState
from tests.builders import options
from tests.conftest import assert_rows, hudi_rs_table

COLS = ["id", "ts", "p", "v"]
RO = {"hoodie.datasource.query.type": "read_optimized"}


def _batch(n: int, keys: int = 12) -> pa.Table:
    ids = [f"k{i}" for i in range(keys) if (i + n) % 3]  # each write touches 2/3 of the keys
    return pa.table(
        {
            "id": ids,
            "ts": pa.array([n] * len(ids), pa.int64()),
            "p": ["a" if int(i[1:]) % 2 else "b" for i in ids],
            "v": [f"{i}@{n}" for i in ids],
        }
    )


def _expected(writes: int, keys: int = 12) -> list[tuple]:
    rows: dict[str, tuple] = {}
    for n in range(writes):
        for r in _batch(n, keys).to_pylist():
            rows[r["id"]] = (r["id"], r["ts"], r["p"], r["v"])
    return list(rows.values())


_opts = partial(options, "t", "MERGE_ON_READ", partition="p", buckets=2)


def _compactions(path: Path) -> tuple[list[str], list[str]]:
    """(completed, pending) compaction instants of the table."""
    tl = TableState.open(str(path)).reload_timeline()
    pending = [i.requested_time for i in tl.pending_compactions()]
    done = [
        i.requested_time
        for i in tl.completed()
        if tl.origin_action(i.requested_time) == "compaction"
    ]
    return done, pending


def _check(path: Path, writes: int, hudi_rs: bool = True) -> None:
    want = _expected(writes)
    assert_rows(hudi_ds.read(str(path)), want, COLS)
    if hudi_rs:
        assert_rows(hudi_rs_table(str(path)), want, COLS)


def test_mor_writes_compact_every_five_delta_commits(tmp_path: Path) -> None:
    path = tmp_path / "t"
    for n in range(4):
        hudi_ds.write(str(path), _batch(n), _opts())
    assert _compactions(path) == ([], [])
    hudi_ds.write(str(path), _batch(4), _opts())  # the fifth delta commit
    done, pending = _compactions(path)
    assert len(done) == 1 and pending == []
    # read_optimized now returns every key as of the compaction
    assert_rows(hudi_ds.read(str(path), RO), _expected(5), COLS)
    _check(path, 5)
    for n in range(5, 10):
        hudi_ds.write(str(path), _batch(n), _opts())
    done, pending = _compactions(path)
    assert len(done) == 2 and pending == []
    assert_rows(hudi_ds.read(str(path), RO), _expected(10), COLS)
    _check(path, 10)


def test_compaction_is_off_with_async_disabled(tmp_path: Path) -> None:
    path = tmp_path / "t"
    off = _opts(**{"hoodie.datasource.compaction.async.enable": "false"})
    for n in range(6):
        hudi_ds.write(str(path), _batch(n), off)
    assert _compactions(path) == ([], [])
    _check(path, 6)
    # schedule-only still schedules (Hudi's hoodie.compact.schedule.inline)
    hudi_ds.write(str(path), _batch(6), {**off, "hoodie.compact.schedule.inline": "true"})
    done, pending = _compactions(path)
    assert done == [] and len(pending) == 1
    _check(path, 7)


def test_the_trigger_is_hudis_delta_commit_count(tmp_path: Path) -> None:
    path = tmp_path / "t"
    opts = _opts(**{"hoodie.compact.inline.max.delta.commits": "2"})
    for n in range(4):
        hudi_ds.write(str(path), _batch(n), opts)
    done, pending = _compactions(path)
    assert len(done) == 2 and pending == []
    _check(path, 4)


def _finish(proc: subprocess.Popen[bytes] | None) -> int:
    """The exit status of a compactor that was started."""
    assert proc is not None, "no compactor was started"
    return proc.wait(timeout=600)


def _scheduled(path: Path, writes: int) -> ServiceContext:
    """A table with ``writes`` delta commits and one compaction scheduled, not executed."""
    only_schedule = _opts(
        **{
            "hoodie.datasource.compaction.async.enable": "false",
            "hoodie.compact.schedule.inline": "true",
        }
    )
    for n in range(writes):
        hudi_ds.write(str(path), _batch(n), only_schedule)
    assert len(_compactions(path)[1]) == 1
    return ServiceContext.open(str(path), _opts())


def test_the_background_compactor_runs_pending_compactions(tmp_path: Path) -> None:
    path = tmp_path / "t"
    ctx = _scheduled(path, 5)
    assert ctx.timeline().pending_compactions()  # listed now: stale once the compactor ran
    held = _exclusive(compactor_lock_path(ctx.storage.base_uri))
    with held as lock:  # another compactor runs: none is started
        assert lock is not None
        assert compactor_running(ctx.storage.base_uri)
        assert start_compactor(ctx) is None
    proc = start_compactor(ctx)
    # the lock was handed over before the call returned: a commit right after it (while the
    # new process still imports) starts no second compactor
    assert compactor_running(ctx.storage.base_uri)
    assert start_compactor(ctx) is None
    assert _finish(proc) == 0
    assert not compactor_lock_path(ctx.storage.base_uri).exists()  # no lock file left behind
    done, pending = _compactions(path)
    assert len(done) == 1 and pending == []
    # ctx still sees the compaction pending: under the lock the timeline is listed again
    assert ctx.timeline().pending_compactions()
    assert start_compactor(ctx) is None
    assert not compactor_lock_path(ctx.storage.base_uri).exists()
    assert_rows(hudi_ds.read(str(path), RO), _expected(5), COLS)
    _check(path, 5)


def test_a_killed_background_compactor_leaves_the_table_exact(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "t"
    ctx = _scheduled(path, 5)
    monkeypatch.setenv("HUDI_DS_CRASH_AT", "compaction")  # dies after writing some base files
    assert _finish(start_compactor(ctx)) == 137
    monkeypatch.delenv("HUDI_DS_CRASH_AT")
    tl = TableState.open(str(path)).reload_timeline()
    (c,) = tl.pending_compactions()
    assert c.is_inflight
    _check(path, 5)  # the half-written compaction is invisible
    hudi_ds.write(
        str(path), _batch(5), _opts(**{"hoodie.datasource.compaction.async.enable": "false"})
    )
    # hudi-rs 0.5.0 ignores logs written on top of a pending compaction (test_race.py): ours only
    _check(path, 6, hudi_rs=False)
    # the next compactor rolls the failed attempt back and runs the plan again -- in a process,
    # also where a thread was offered: the attempt may have died with the process of a thread
    retry = start_compactor(ServiceContext.open(str(path), _opts()), in_this_process=True)
    assert isinstance(retry, subprocess.Popen)
    assert _finish(retry) == 0
    done, pending = _compactions(path)
    assert done == [c.requested_time] and pending == []
    _check(path, 6)


def test_a_fresh_plan_runs_in_a_thread_of_the_committing_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``in_this_process`` (the streaming sink's warm commit runner): a plan no attempt has
    touched runs in a thread, which holds the table's compactor lock from the call on -- no
    second compactor, thread or process, starts while it runs -- and lets go of it when done;
    a failing compaction is logged and leaves the plan to the next commit."""
    path = tmp_path / "t"
    ctx = _scheduled(path, 5)
    uri = ctx.storage.base_uri
    entered, go = threading.Event(), threading.Event()
    run_pending = background.run_pending

    def held_back(*args: object) -> int:  # the thread waits here until the test lets it go
        entered.set()
        assert go.wait(60)
        return run_pending(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(background, "run_pending", held_back)
    thread = start_compactor(ctx, in_this_process=True)
    assert isinstance(thread, threading.Thread)
    assert entered.wait(60)
    assert compactor_running(uri)
    assert start_compactor(ctx, in_this_process=True) is None
    assert start_compactor(ctx) is None
    go.set()
    thread.join(600)
    assert not thread.is_alive() and not compactor_running(uri)
    assert not compactor_lock_path(uri).exists()
    done, pending = _compactions(path)
    assert len(done) == 1 and pending == []
    assert start_compactor(ctx, in_this_process=True) is None  # nothing pending any more
    assert_rows(hudi_ds.read(str(path), RO), _expected(5), COLS)
    _check(path, 5)

    def broken(_ctx: ServiceContext) -> list[object]:
        raise OSError("disk gone")

    schedule_one = {
        "hoodie.datasource.compaction.async.enable": "false",
        "hoodie.compact.schedule.inline": "true",
        "hoodie.compact.inline.max.delta.commits": "1",
    }
    hudi_ds.write(str(path), _batch(5), _opts(**schedule_one))
    assert len(_compactions(path)[1]) == 1
    monkeypatch.setattr(background, "run_compaction", broken)
    thread = start_compactor(ServiceContext.open(str(path), _opts()), in_this_process=True)
    assert isinstance(thread, threading.Thread)
    thread.join(600)
    assert not compactor_running(uri) and not compactor_lock_path(uri).exists()
    assert len(_compactions(path)[1]) == 1  # still pending, for the next commit
    _check(path, 6)


def test_inline_compaction_needs_no_compactor(tmp_path: Path) -> None:
    """hoodie.compact.inline=true executes in the commit even where a compactor is offered
    (Hudi: inline compaction turns async compaction off)."""
    path = tmp_path / "t"
    ctx = _scheduled(path, 5)
    calls: list[object] = []
    inline = ServiceContext.of(ctx.state, _opts(**{"hoodie.compact.inline": "true"}))
    results = compaction.run_inline_compaction(inline, calls.append)
    assert len(results) == 1 and calls == []
    offered = ServiceContext.open(str(path), _opts())
    hudi_ds.write(
        str(path), _batch(5), _opts(**{"hoodie.datasource.compaction.async.enable": "false"})
    )
    assert compaction.run_inline_compaction(offered, calls.append) == []
    assert calls == []  # nothing pending, nothing due: the compactor is not started
    _check(path, 6)


def test_the_spark_data_source_resolves_compaction_as_hudis(tmp_path: Path) -> None:
    """Spark writes (``datasource=True``) resolve the keys as Hudi's data source does: a batch
    write (no async compactor) neither schedules nor executes at the defaults;
    ``hoodie.compact.schedule.inline`` schedules only, and not while a compaction is pending;
    the streaming sink's compactor gets the pending plan; async off means inline compaction
    unless ``hoodie.compact.inline`` says otherwise."""
    path = tmp_path / "t"
    off = {"hoodie.datasource.compaction.async.enable": "false", "hoodie.compact.inline": "false"}
    for n in range(6):
        hudi_ds.write(str(path), _batch(n), _opts(**off))

    def run(compactor: compaction.AsyncCompactor | None = None, **o: str) -> list[object]:
        ctx = ServiceContext.open(str(path), _opts(**o))
        return list(compaction.run_inline_compaction(ctx, compactor, datasource=True))

    assert run() == []  # a batch write at the defaults: 6 delta commits, no compaction
    assert run(**off) == []
    assert _compactions(path) == ([], [])
    assert run(**{"hoodie.compact.schedule.inline": "true"}) == []
    done, pending = _compactions(path)
    assert done == [] and len(pending) == 1
    hudi_ds.write(str(path), _batch(6), _opts(**off))
    one = {"hoodie.compact.inline.max.delta.commits": "1"}
    assert run(**{"hoodie.compact.schedule.inline": "true", **one}) == []  # due, but one pends
    assert _compactions(path) == (done, pending)
    calls: list[object] = []
    assert run(calls.append) == [] and len(calls) == 1  # the sink's compactor takes the plan
    assert _compactions(path) == (done, pending)
    # async off, inline not given: Hudi's DataSourceUtils turns inline compaction on
    assert len(run(**{"hoodie.datasource.compaction.async.enable": "false"})) == 1
    assert _compactions(path) == (pending, [])  # the pending plan ran in the commit
    assert_rows(hudi_ds.read(str(path), RO), _expected(6), COLS)  # as of the plan: 6 writes
    _check(path, 7)
