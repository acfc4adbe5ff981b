"""Kill every multi-step timeline transition at each of its steps, then keep writing.

Archival, clean, rollback, restore, savepoint and compaction each run in a forked child with
``HUDI_DS_CRASH_AT=<point>:<n>`` (it dies with ``os._exit(137)``, like SIGKILL, at that step).
Then, in this process: readers see exactly the committed rows, the transition is finished (by
the next writer, or by running the operation again where an operator has to), and 10 more
commits with inline compaction, cleaning and archival keep the active timeline bounded while
every service keeps doing its work. Full rows are compared with a model, by hudi_ds and hudi-rs.

Regression tests: a kill during archival must not wedge archival for ever.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import hudi
import pyarrow as pa
import pytest

import hudi_ds
from hudi_ds.faults import EXIT_CODE
from hudi_ds.log.archive import load_archived
from hudi_ds.services import (
    ServiceContext,
    archival,
    clean,
    compaction,
    compaction_execute,
    rollback,
)
from hudi_ds.storage import Storage
from hudi_ds.timeline.instant import Instant, State
from tests import builders
from tests.builders import apply
from tests.conftest import run_forked, table_options

COLS = ["id", "ts", "p", "v"]
MAX_COMMITS = 6
OPTS = {
    **table_options("resume", partition="p", table_type="MERGE_ON_READ"),
    "hoodie.compact.inline": "true",
    "hoodie.compact.inline.max.delta.commits": "3",
    "hoodie.clean.automatic": "true",
    "hoodie.cleaner.commits.retained": "2",
    "hoodie.keep.min.commits": "4",
    "hoodie.keep.max.commits": str(MAX_COMMITS),
    "hoodie.archive.automatic": "true",
}
Rows = dict[str, tuple]


batch = partial(builders.batch, keys=40, n=16, partitions=2)


def write(path: str, model: Rows, k: int, **over: str) -> tuple[str, Rows]:
    t = batch(k)
    instant = hudi_ds.write(path, t, {**OPTS, **over})
    return instant, apply(model, t)


def ours(path: str) -> list[tuple]:
    t = hudi_ds.read(path, columns=COLS)
    return sorted(zip(*(t.column(c).to_pylist() for c in COLS), strict=True))


def theirs(path: str) -> list[tuple]:
    batches = hudi.HudiTableBuilder.from_base_uri(path).build().read(hudi.HudiReadOptions())
    t = pa.Table.from_batches(batches).select(COLS)
    return sorted(zip(*(t.column(c).to_pylist() for c in COLS), strict=True))


def rows(model: Rows) -> list[tuple]:
    return sorted(model.values())


def crash(spec: str, fn: Callable[[], Any]) -> int:
    """Run ``fn`` in a forked child that dies at ``spec``; its exit code (137: it died)."""
    return run_forked(fn, spec)


def instant_files(path: str) -> list[str]:
    return [
        p.name
        for p in (Path(path) / ".hoodie").iterdir()
        if p.is_file() and Instant.parse(p.name, 1) is not None
    ]


def ctx(path: str, **over: str) -> ServiceContext:
    return ServiceContext.open(path, {**OPTS, **over})


# -- the tables each transition starts from (built once, copied per case) -------------------------


def _base(path: str, n: int, **over: str) -> tuple[Rows, dict[str, Rows]]:
    model: Rows = {}
    snaps: dict[str, Rows] = {}
    for k in range(1, n + 1):
        inst, model = write(path, model, k, **over)
        snaps[inst] = model
    return model, snaps


@pytest.fixture(scope="module")
def bases(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[str, Rows, Any]]:
    root = tmp_path_factory.mktemp("bases")
    out: dict[str, tuple[str, Rows, Any]] = {}
    # archival: 14 commits, cleans and compactions, nothing archived yet
    p = str(root / "archive")
    model, _ = _base(p, 11, **{"hoodie.archive.automatic": "false"})
    out["archive"] = (p, model, None)
    # clean: compactions made older slices cleanable, no clean ran
    p = str(root / "clean")
    model, _ = _base(p, 7, **{"hoodie.clean.automatic": "false"})
    out["clean"] = (p, model, None)
    # compaction: two delta commits waiting for a compaction
    p = str(root / "compaction")
    model, _ = _base(
        p,
        5,
        **{"hoodie.compact.inline": "false", "hoodie.datasource.compaction.async.enable": "false"},
    )
    out["compaction"] = (p, model, None)
    # rollback / savepoint / restore: a savepoint at commit 3, then 5 commits (a compaction)
    p = str(root / "restore")
    no_archival = {"hoodie.archive.automatic": "false"}  # nothing after the savepoint archived
    model, snaps = _base(p, 3, **no_archival)
    sp = list(snaps)[-1]
    rollback.create_savepoint(ctx(p), sp)
    for k in range(4, 9):
        inst, model = write(p, model, k, **no_archival)
        snaps[inst] = model
    out["restore"] = (p, model, (sp, snaps))
    return out


def _copy(bases: dict[str, Any], name: str, tmp_path: Path) -> tuple[str, Rows, Any]:
    src, model, extra = bases[name]
    dst = str(tmp_path / name)
    shutil.copytree(src, dst)
    return dst, dict(model), extra


def _archive_phases(path: str) -> dict[str, int]:
    """Hit numbers of the ``archive`` point: 1 with the archive file under its temporary
    name, 2 once renamed, k + 2 after the k-th instant file is deleted (all requested, then all
    inflight, then completed)."""
    c = ctx(path)
    tl = c.timeline()
    chosen = archival.instants_to_archive(c, tl)
    states = [s for i in chosen for s in tl.file_paths(i.requested_time)]
    r = states.count(State.REQUESTED)
    f = states.count(State.INFLIGHT)
    assert any(i.action == "clean" for i in chosen), "the archival takes a clean"
    return {
        "archive_tmp_written": 1,
        "archive_written": 2,
        "one_requested_deleted": 3,
        "all_requested_deleted": r + 2,  # the state of the issue: T.clean + T.clean.inflight
        "some_inflight_deleted": r + 3,
        "all_pending_deleted": r + f + 2,
        "some_completed_deleted": r + f + 4,
    }


# -- after the crash: finish, 10 more commits, everything still works ------------------------------


def _ten_commits(path: str, model: Rows, start: int, **over: str) -> Rows:
    """10 commits with every service on; each service must do its work, the timeline must
    stay bounded, and both readers must return the model."""
    archived_before = {i.requested_time for i in load_archived(Storage(path), 1)}
    first = None
    cleaned: dict[str, int] = {}
    compacted: set[str] = set()
    sizes = []
    for k in range(start, start + 10):
        inst, model = write(path, model, k, **over)
        first = first or inst
        tl = hudi_ds.HudiTable(path).timeline
        for c in tl.completed().filter_actions("clean"):
            if c.requested_time > first:
                cleaned[c.requested_time] = tl.read_clean_metadata(c).total_files_deleted
        for c in tl.commits():
            if c.requested_time > first and tl.origin_action(c.requested_time) == "compaction":
                compacted.add(c.requested_time)
        sizes.append(len(instant_files(path)))
        assert ours(path) == rows(model)
    tl = hudi_ds.HudiTable(path).timeline
    assert [i for i in tl if not i.is_completed] == []
    assert [s for s in tl.savepoints() if not s.is_completed] == []
    # bounded (the issue saw 27 -> 177 files with keep.max.commits=6)
    assert len(tl.commits()) <= MAX_COMMITS
    # measured: at most 36 files right after the recovery, then 15..27 (3 files an instant)
    assert max(sizes) <= 3 * (2 * MAX_COMMITS + 2), sizes
    assert max(sizes[-5:]) <= 3 * (MAX_COMMITS + 4), sizes
    # every service still works
    archived = {i.requested_time for i in load_archived(Storage(path), 1)}
    assert any(t >= first for t in archived - archived_before), "archival moved new instants"
    assert compacted, "inline compaction completed after the crash"
    assert cleaned and max(cleaned.values()) > 0, "a clean deleted old slices after the crash"
    assert ours(path) == theirs(path) == rows(model)
    return model


# -- archival ---------------------------------------------------------------------------------------

ARCHIVE_PHASES = [
    "archive_tmp_written",
    "archive_written",
    "one_requested_deleted",
    "all_requested_deleted",
    "some_inflight_deleted",
    "all_pending_deleted",
    "some_completed_deleted",
]


@pytest.mark.slow
@pytest.mark.parametrize("phase", ARCHIVE_PHASES)
def test_archival_killed_at_each_step(phase: str, bases: dict, tmp_path: Path) -> None:
    path, model, _ = _copy(bases, "archive", tmp_path)
    n = _archive_phases(path)[phase]
    chosen = [i.requested_time for i in archival.instants_to_archive(ctx(path))]
    assert crash(f"archive:{n}", lambda: archival.archive(ctx(path))) == EXIT_CODE
    assert ours(path) == theirs(path) == rows(model)
    tmp = list((Path(path) / ".hoodie" / "archived").glob("*.tmp"))
    assert len(tmp) == (phase == "archive_tmp_written")
    for t in tmp:  # a torn archive file is never read; once stale, archival deletes it
        os.utime(t, (t.stat().st_atime - 3600, t.stat().st_mtime - 3600))
    # the next archival finishes the job: every chosen instant is archived once, none is left
    res = archival.archive(ctx(path))
    tl = ctx(path).timeline()
    assert not any(tl.file_paths(t) for t in chosen)
    entries = _archive_records(path)
    assert len(entries) == len(set(entries)), "no record archived twice"
    assert set(chosen) <= {i.requested_time for i in load_archived(Storage(path), 1)}
    assert res.archived
    assert not any(t.exists() for t in tmp)
    assert ours(path) == theirs(path) == rows(model)
    _ten_commits(path, model, 20)


def _archive_records(path: str) -> list[tuple]:
    from hudi_ds.log.archive import archive_file_entries, archive_files

    st = Storage(path)
    return [
        e for f in archive_files(st, ".hoodie/archived") for e in archive_file_entries(st, f.path)
    ]


def _half_archived(path: str) -> tuple[Rows, list[Instant]]:
    """A table in the state an archival killed after deleting every ``.requested`` file left:
    its archive file written, ``T.clean`` + ``T.clean.inflight`` (and ``T.commit`` +
    ``T.compaction.inflight``) without their requested files."""
    model: Rows = {}
    for k in range(1, 12):
        _, model = write(path, model, k, **{"hoodie.archive.automatic": "false"})
    c = ctx(path)
    tl = c.timeline()
    chosen = archival.instants_to_archive(c, tl)
    assert any(i.action == "clean" for i in chosen)
    records = [
        archival._record(c, tl, i, s, tl.origin_action(i.requested_time) or i.action)
        for i in chosen
        for s in (State.REQUESTED, State.INFLIGHT, State.COMPLETED)
        if s in tl.file_paths(i.requested_time)
    ]
    c.storage.write_atomic(archival._next_archive_file(c), archival._encode_entries(records))
    for i in chosen:
        req = tl.file_paths(i.requested_time).get(State.REQUESTED)
        if req:
            c.storage.delete(req)
    return model, chosen


def test_archival_resumes_a_half_deleted_clean(tmp_path: Path) -> None:
    """Finding 3 without a crash point: the state a kill left no longer wedges archival (it
    failed with ``no requested clean instant file`` / ``no requested compaction...``)."""
    path = str(tmp_path / "t")
    model, chosen = _half_archived(path)
    clean_t = next(i.requested_time for i in chosen if i.action == "clean")
    assert (Path(path) / ".hoodie" / f"{clean_t}.clean.inflight").exists()
    before = len(instant_files(path))
    res = archival.archive(ctx(path))
    assert sorted(res.archived) == sorted(i.requested_time for i in chosen)
    assert res.archive_file is None  # every record was archived before the kill
    tl = ctx(path).timeline()
    assert not any(tl.file_paths(i.requested_time) for i in chosen)
    assert len(instant_files(path)) < before
    entries = _archive_records(path)
    assert len(entries) == len(set(entries)), "no record archived twice"
    archived = load_archived(Storage(path), 1)
    assert {i.requested_time for i in chosen} <= {i.requested_time for i in archived}
    assert archived.read_clean_metadata(clean_t).start_clean_time == clean_t
    assert ours(path) == theirs(path) == rows(model)
    _ten_commits(path, model, 20)


def test_cli_archive_after_a_half_deleted_archival(tmp_path: Path) -> None:
    """``hudi-py archive`` exited 4 on that state; now it finishes the archival."""
    from hudi_ds.cli import main

    path = str(tmp_path / "t")
    model, chosen = _half_archived(path)
    # the other commands read the state (a completed instant without its requested file)
    for cmd in ("timeline", "stats", "files"):
        assert main([cmd, "--json", path]) == 0
    o = [f"{k}={OPTS[k]}" for k in ("hoodie.keep.min.commits", "hoodie.keep.max.commits")]
    o.append("hoodie.cleaner.commits.retained=2")
    assert main(["archive", *(x for kv in o for x in ("-o", kv)), path]) == 0
    tl = ctx(path).timeline()
    assert not any(tl.file_paths(i.requested_time) for i in chosen)
    assert ours(path) == theirs(path) == rows(model)


# -- clean --------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("spec", ["clean_plan:1", "clean_plan:2", "clean:1", "commit_write:1"])
def test_clean_killed_at_each_step(spec: str, bases: dict, tmp_path: Path) -> None:
    path, model, _ = _copy(bases, "clean", tmp_path)
    assert crash(spec, lambda: clean.clean(ctx(path))) == EXIT_CODE
    tl = ctx(path).timeline()
    assert [i.action for i in tl.pending()] == ["clean"]
    assert ours(path) == theirs(path) == rows(model)
    _ten_commits(path, model, 20)
    # the interrupted clean was finished (not left pending, not planned twice)
    pending = tl.pending()[0].requested_time
    assert ctx(path).timeline().is_completed(pending) or pending in {
        i.requested_time for i in load_archived(Storage(path), 1)
    }


# -- compaction ---------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("spec", ["compaction:1", "commit_write:1"])
def test_compaction_killed_at_each_step(spec: str, bases: dict, tmp_path: Path) -> None:
    path, model, _ = _copy(bases, "compaction", tmp_path)

    def run() -> None:
        c = ctx(path)
        compaction.run_compaction(c, compaction.schedule_compaction(c))

    assert crash(spec, run) == EXIT_CODE
    assert [i.action for i in ctx(path).timeline().pending()] == ["compaction"]
    assert ours(path) == theirs(path) == rows(model)
    _ten_commits(path, model, 20)


@pytest.mark.slow
@pytest.mark.parametrize("spec", ["rollback:1", "rollback:2"])
@pytest.mark.parametrize("resume", ["writer", "compactor"])
def test_compaction_attempt_rollback_killed(
    spec: str, resume: str, bases: dict, tmp_path: Path
) -> None:
    """A killed compaction attempt whose rollback is killed too: the compaction goes back to
    requested with its plan (the next writer used to delete the plan, and with it the rows of
    the log files written on top of it)."""
    path, model, _ = _copy(bases, "compaction", tmp_path)
    c = compaction.schedule_compaction(ctx(path))
    assert c is not None
    _, model = write(
        path,
        model,
        6,
        **{"hoodie.compact.inline": "false", "hoodie.datasource.compaction.async.enable": "false"},
    )  # logs named after c
    assert crash("compaction:1", lambda: compaction.run_compaction(ctx(path), c)) == EXIT_CODE
    assert crash(spec, lambda: compaction.run_compaction(ctx(path), c)) == EXIT_CODE
    tl = ctx(path).timeline()
    assert {i.action for i in tl.pending()} == {"compaction", "rollback"}
    assert ours(path) == rows(model)  # (hudi-rs 0.5 ignores logs named after a pending compaction)
    if resume == "compactor":
        [res] = compaction.run_compaction(ctx(path), c)
        assert res.instant == c
    else:
        _, model = write(
            path,
            model,
            7,
            **{
                "hoodie.compact.inline": "false",
                "hoodie.datasource.compaction.async.enable": "false",
            },
        )
        tl = ctx(path).timeline()
        assert [(i.requested_time, i.state) for i in tl.pending()] == [(c, State.REQUESTED)]
    assert ours(path) == rows(model)
    _ten_commits(path, model, 20)
    assert ctx(path).timeline().is_completed(c) or c in {
        i.requested_time for i in load_archived(Storage(path), 1)
    }


class _Killed(BaseException):
    """Stands in for SIGKILL inside this process (nothing catches a BaseException here)."""


def test_next_writer_keeps_a_compaction_whose_attempt_rollback_died(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The rollback of a killed compaction attempt dies after ``R.rollback.inflight``: the next
    writer finished R as a write's rollback and deleted the compaction plan -- losing the rows
    of the log files named after it. Now the compaction goes back to requested."""
    path = str(tmp_path / "t")
    model, _ = _base(
        path,
        5,
        **{"hoodie.compact.inline": "false", "hoodie.datasource.compaction.async.enable": "false"},
    )
    c = compaction.schedule_compaction(ctx(path))
    assert c is not None
    _, model = write(
        path,
        model,
        6,
        **{"hoodie.compact.inline": "false", "hoodie.datasource.compaction.async.enable": "false"},
    )  # logs named after c
    assert crash("compaction:1", lambda: compaction.run_compaction(ctx(path), c)) == EXIT_CODE

    def die(self: Storage, rel: str) -> bool:
        raise _Killed(rel)

    with monkeypatch.context() as m:
        m.setattr(Storage, "delete", die)
        with pytest.raises(_Killed):
            compaction_execute.rollback_inflight_compaction(ctx(path), c)
    assert {i.action for i in ctx(path).timeline().pending()} == {"compaction", "rollback"}
    _, model = write(
        path,
        model,
        7,
        **{"hoodie.compact.inline": "false", "hoodie.datasource.compaction.async.enable": "false"},
    )
    tl = ctx(path).timeline()
    assert [(i.requested_time, i.state) for i in tl.pending()] == [(c, State.REQUESTED)]
    assert ours(path) == rows(model)
    [res] = compaction.run_compaction(ctx(path), c)
    assert res.instant == c
    assert ours(path) == theirs(path) == rows(model)


# -- rollback, savepoint, restore -----------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("spec", ["rollback:1", "rollback:2", "rollback:3"])
def test_rollback_of_a_completed_commit_killed_at_each_step(
    spec: str, bases: dict, tmp_path: Path
) -> None:
    path, _, (sp, snaps) = _copy(bases, "restore", tmp_path)
    times = list(snaps)
    last, prev = times[-1], times[-2]
    code = crash(spec, lambda: rollback.rollback(ctx(path), last))
    assert code == EXIT_CODE
    assert ours(path) in (rows(snaps[last]), rows(snaps[prev]))
    # running it again finishes it, with the interrupted rollback's own plan
    res = rollback.rollback(ctx(path), last)
    assert res.instant == last
    tl = ctx(path).timeline()
    assert tl.get(last) is None
    assert [i for i in tl if not i.is_completed] == []
    assert ours(path) == theirs(path) == rows(snaps[prev])
    rollback.delete_savepoint(ctx(path), sp)  # archival stops at savepoints
    _ten_commits(path, snaps[prev], 20)


@pytest.mark.slow
def test_savepoint_killed_before_completion(bases: dict, tmp_path: Path) -> None:
    path, model, (sp, snaps) = _copy(bases, "restore", tmp_path)
    target = list(snaps)[-2]
    assert crash("savepoint:1", lambda: rollback.create_savepoint(ctx(path), target)) == EXIT_CODE
    tl = ctx(path).timeline()
    assert [s.is_completed for s in tl.savepoints() if s.requested_time == target] == [False]
    assert ours(path) == theirs(path) == rows(model)
    # running it again completes it (it was refused as "already savepointed")
    assert rollback.create_savepoint(ctx(path), target) == target
    assert ctx(path).timeline().read_savepoint_metadata(target).partition_metadata
    rollback.restore(ctx(path), target)  # the completed savepoint works
    assert ours(path) == theirs(path) == rows(snaps[target])
    for s in (sp, target):  # archival stops at savepoints
        rollback.delete_savepoint(ctx(path), s)
    _ten_commits(path, snaps[target], 20)


@pytest.mark.slow
@pytest.mark.parametrize(
    "spec", ["restore:1", "rollback:1", "rollback:2", "rollback:3", "restore:2", "restore:4"]
)
def test_restore_killed_at_each_step(spec: str, bases: dict, tmp_path: Path) -> None:
    path, _, (sp, snaps) = _copy(bases, "restore", tmp_path)
    after = [t for t in snaps if t > sp]
    assert crash(spec, lambda: rollback.restore(ctx(path), sp)) == EXIT_CODE
    # newest first: the table is as of some commit between the savepoint and the last one
    assert ours(path) in [rows(snaps[t]) for t in snaps if t >= sp]
    md = rollback.restore(ctx(path), sp)  # running it again finishes it
    assert set(after) <= set(md.instants_to_rollback)
    tl = ctx(path).timeline()
    assert [i for i in tl if not i.is_completed] == []
    assert not any(tl.get(t) for t in after)
    assert ours(path) == theirs(path) == rows(snaps[sp])
    rollback.delete_savepoint(ctx(path), sp)  # archival stops at savepoints
    _ten_commits(path, snaps[sp], 20)
