"""Table services on table versions 8 and 9 (timeline layout 2, Hudi 1.x).

New tables (``hoodie.write.table.version``) and Hudi-written v8/v9 fixtures without a metadata
table are compacted, cleaned, rolled back, savepointed/restored and archived; every outcome is
read back by hudi_ds and by hudi-rs and compared with the expected rows (all columns), and the
instant files are checked against what Hudi 1.x writes (names with completion times, Avro
contents, the LSM history).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import hudi_ds
from hudi_ds.faults import ENV as CRASH_ENV
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
from hudi_ds.timeline.lsm import LsmTimelineWriter
from hudi_ds.timeline.metadata import CommitMetadata
from hudi_ds.timeline.plans import CompactionPlan
from hudi_ds.write.rollback_executor import rollback_failed_writes
from tests.conftest import assert_rows, hudi_rs_table
from tests.fixtures import FIXTURES_DIR, fixture_table, require_fixtures
from tests.services.test_services import (
    COLS,
    OPTS,
    Model,
    fail_second_operation,
    hudi_rs,
    ours,
    trips,
)

VERSIONS = ["8", "9"]
COMPLETED = re.compile(r"^(\d{17})_(\d{17})\.(\w+)$")


def _opts(version: str, table_type: str = "MERGE_ON_READ") -> dict[str, str]:
    return {
        **OPTS,
        "hoodie.write.table.version": version,
        "hoodie.datasource.write.table.type": table_type,
    }


def _write(
    path: str, t: pa.Table, m: Model, version: str, table_type: str = "MERGE_ON_READ"
) -> str:
    instant = hudi_ds.write(path, t, _opts(version, table_type))
    m.apply(t)
    return instant


def _check(path: str, m: Model, options: dict[str, str] | None = None) -> None:
    """Both readers return exactly the model's rows (every column of COLS, no duplicates)."""
    want = m.rows()
    assert_rows(hudi_ds.read(path, options), want, COLS)
    assert_rows(hudi_rs_table(path, options), want, COLS)


def _timeline_files(path: str) -> list[str]:
    return sorted(p.name for p in (Path(path) / ".hoodie" / "timeline").iterdir() if p.is_file())


def _completed(path: str, ts: str) -> tuple[str, str]:
    """(completion time, action) of the completed file of instant ``ts``."""
    (hit,) = [m for n in _timeline_files(path) if (m := COMPLETED.match(n)) and m.group(1) == ts]
    assert hit.group(2) > ts
    return hit.group(2), hit.group(3)


# -- new tables ---------------------------------------------------------------------------------


@pytest.mark.parametrize("version", VERSIONS)
def test_compaction_clean_and_archival_of_a_new_table(tmp_path: Path, version: str) -> None:
    path = str(tmp_path / "t")
    m = Model()
    for k in range(4):
        _write(path, trips(range(k * 5, k * 5 + 20), k + 1), m, version)
    hudi_ds.write(
        path, trips([0, 1], 99), {**_opts(version), "hoodie.datasource.write.operation": "delete"}
    )
    m.delete(["t0", "t1"])
    _check(path, m)
    ctx = ServiceContext.open(path)
    assert (ctx.config.table_version, ctx.layout) == (int(version), 2)
    c = compaction.schedule_compaction(ctx)
    assert c is not None and f"{c}.compaction.requested" in _timeline_files(path)
    plan = ctx.timeline().read_compaction_plan(c)
    # as Hudi 1.x writes plans: no strategy, empty extra metadata, whole-MB IO metrics
    assert plan.strategy is None and plan.extra_metadata == {} and plan.version == 2
    for op in plan.operations or []:
        # v8 log files are named with the delta commit that wrote them, one per commit
        names = [re.match(r"^\.[^_]+_(\d{17})\.log\.1_", n) for n in op.delta_file_paths or []]
        assert all(names) and len({n.group(1) for n in names if n}) == len(names)
        assert list(op.metrics or {}) == [
            "TOTAL_LOG_FILES",
            "TOTAL_IO_MB",
            "TOTAL_IO_READ_MB",
            "TOTAL_LOG_FILES_SIZE",
            "TOTAL_IO_WRITE_MB",
        ]
    _check(path, m)  # pending: unchanged for both readers
    (res,) = compaction.run_compaction(ctx, c)
    assert res.rows == len(m.rows())
    done, action = _completed(path, c)
    assert action == "commit"
    md = CommitMetadata.from_bytes(
        (Path(path) / ".hoodie/timeline" / f"{c}_{done}.commit").read_bytes()
    )
    assert md.compacted and md.operation_type == "COMPACT"
    assert all((s.path or "").endswith(f"_{c}.parquet") for s in md.write_stats())
    _check(path, m)
    _check(path, m, {"hoodie.datasource.query.type": "read_optimized"})
    # writes after the compaction, then clean and archive (LSM history, layers compacted)
    for k in range(4, 12):
        _write(path, trips(range(k * 5, k * 5 + 20), k + 1), m, version)
    opts = {
        "hoodie.keep.min.commits": "3",
        "hoodie.keep.max.commits": "4",
        "hoodie.cleaner.commits.retained": "2",
        "hoodie.timeline.compaction.batch.size": "2",
    }
    before = {
        i.requested_time: i.completion_time for i in ServiceContext.open(path).timeline().commits()
    }
    cleaned = clean.clean(ServiceContext.open(path, opts))
    assert cleaned.deleted and not any(Path(path, f).exists() for f in cleaned.deleted)
    _check(path, m)
    archived = archival.archive(ServiceContext.open(path, opts))
    assert len(archived.archived) >= 2
    history = Path(path) / ".hoodie/timeline/history"
    version_no = int((history / "_version_").read_text())
    manifest = json.loads((history / f"manifest_{version_no}").read_text())
    for e in manifest["files"]:
        assert (history / e["fileName"]).stat().st_size == e["fileLen"]
    ctx = ServiceContext.open(path)
    arch = load_archived(ctx.storage, 2, ctx.config.timeline_path)
    got = {i.requested_time: (i.completion_time, i.action) for i in arch}
    for ts in archived.archived:
        if ts in before:  # commits keep their completion times in the history
            assert got[ts][0] == before[ts]
    assert not any(ts in archived.archived for ts in (n[:17] for n in _timeline_files(path)))
    _check(path, m)
    # a second round of writes and archival: the history's layer 0 reaches the batch size
    # and is compacted into layer 1
    for k in range(12, 18):
        _write(path, trips(range(k * 5, k * 5 + 20), k + 1), m, version)
    ctx = ServiceContext.open(path)
    compaction.run_compaction(ctx, compaction.schedule_compaction(ctx))
    _write(path, trips([3, 4], 30), m, version)
    clean.clean(ServiceContext.open(path, opts))
    archival.archive(ServiceContext.open(path, opts))
    live = json.loads((history / f"manifest_{(history / '_version_').read_text()}").read_text())
    assert any(e["fileName"].endswith("_1.parquet") for e in live["files"]), live
    _check(path, m)


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("table_type", ["MERGE_ON_READ", "COPY_ON_WRITE"])
def test_rollback_of_a_failed_write(tmp_path: Path, version: str, table_type: str) -> None:
    """A writer killed after its data files: the next write rolls it back (Hudi 1.x form), its
    files are gone (v8 MOR: its own log files, deleted whole), readers never see it."""
    path = str(tmp_path / "t")
    m = Model()
    _write(path, trips(range(0, 10), 1), m, version, table_type)
    _write(path, trips(range(5, 15), 2), m, version, table_type)
    code = (
        "import sys, json, hudi_ds; sys.path.insert(0, sys.argv[3]);"
        "from tests.services.test_services import trips;"
        "hudi_ds.write(sys.argv[1], trips(range(0, 20), 3), json.loads(sys.argv[2]))"
    )
    repo = str(Path(__file__).resolve().parents[2])
    env = {**os.environ, CRASH_ENV: "after_files", "PYTHONPATH": repo}
    proc = subprocess.run(
        [sys.executable, "-c", code, path, json.dumps(_opts(version, table_type)), repo],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == EXIT_CODE, proc.stderr[-2000:]
    tl = ServiceContext.open(path).timeline()
    (failed,) = [i for i in tl.pending() if i.action in ("commit", "deltacommit")]
    ts = failed.requested_time
    left = [
        p
        for p in Path(path).rglob("*")
        if p.is_file() and ts in p.name and ".hoodie" not in p.parts
    ]
    assert left  # the killed write's data files
    _check(path, m)
    assert rollback_failed_writes(ServiceContext.open(path).state) == [ts]
    assert all(not p.exists() for p in left)
    ctx = ServiceContext.open(path)
    tl = ctx.timeline()
    (r,) = list(tl.filter_actions("rollback"))
    assert r.is_completed and COMPLETED.match(Path(tl.file_paths(r.requested_time)[r.state]).name)
    plan = tl.read_rollback_plan(r)
    assert plan.instant_to_rollback is not None and plan.instant_to_rollback.commit_time == ts
    for req in plan.rollback_requests or []:
        assert (req.file_id, req.latest_base_instant, req.log_blocks_to_be_deleted) == ("", "", {})
        assert all(f.startswith(ctx.storage.uri("")) for f in req.files_to_be_deleted)
    assert ts in tl.read_rollback_metadata(r).rolled_back_instants
    assert tl.get(ts) is None
    _check(path, m)
    _write(path, trips(range(12, 18), 4), m, version, table_type)
    _check(path, m)


@pytest.mark.parametrize("version", VERSIONS)
def test_rollback_of_the_last_completed_delta_commit(tmp_path: Path, version: str) -> None:
    path = str(tmp_path / "t")
    m = Model()
    _write(path, trips(range(0, 10), 1), m, version)
    before = m.rows()
    last = hudi_ds.write(path, trips(range(5, 15), 2), _opts(version))
    res = rollback.rollback(ServiceContext.open(path), last)
    assert res.deleted and not res.command_logs  # its own log files, deleted whole
    assert all(last in f for f in res.deleted)
    assert ours(path) == hudi_rs(path) == before


@pytest.mark.parametrize("version", VERSIONS)
def test_savepoint_and_restore(tmp_path: Path, version: str) -> None:
    path = str(tmp_path / "t")
    m = Model()
    _write(path, trips(range(0, 10), 1), m, version)
    ctx = ServiceContext.open(path)
    compaction.run_compaction(ctx, compaction.schedule_compaction(ctx))
    sp_time = _write(path, trips(range(5, 15), 2), m, version)
    at_savepoint = Model()
    at_savepoint.state = dict(m.state)
    assert rollback.create_savepoint(ServiceContext.open(path), sp_time) == sp_time
    (sp_file,) = [n for n in _timeline_files(path) if n.endswith(".savepoint")]
    assert COMPLETED.match(sp_file) and sp_file.startswith(f"{sp_time}_")  # T_C.savepoint
    for k in range(3, 6):
        _write(path, trips(range(k * 4, k * 4 + 10), k), m, version)
    ctx = ServiceContext.open(path)
    c = compaction.schedule_compaction(ctx)
    assert c is not None
    compaction.run_compaction(ctx, c)
    _write(path, trips(range(30, 35), 9), m, version)
    res = clean.clean(ServiceContext.open(path, {"hoodie.cleaner.commits.retained": "1"}))
    # the first write's log-only slice goes; the savepoint's slice (C1's base file and the
    # savepointed write's log) stays
    assert res.deleted and all(Path(path, f).name.startswith(".") for f in res.deleted)
    _check(path, m)
    rollback.restore(ServiceContext.open(path), sp_time)
    _check(path, at_savepoint)
    rollback.delete_savepoint(ServiceContext.open(path), sp_time)
    assert not [n for n in _timeline_files(path) if ".savepoint" in n]
    _write(path, trips(range(40, 44), 10), at_savepoint, version)
    _check(path, at_savepoint)


# -- tables written by Apache Hudi 1.x ------------------------------------------------------------


def _copy(name: str, tmp_path_factory: Any) -> str:
    src = fixture_table(name, tmp_path_factory)
    root = tmp_path_factory.mktemp("v8") / name
    shutil.copytree(src, root)
    return str(root)


def _rows(t: pa.Table) -> list[tuple]:
    """Every column but ``_hoodie_file_name`` (which names the files a service rewrote)."""
    cols = sorted(c for c in t.column_names if c != "_hoodie_file_name")
    return sorted((tuple(r[c] for c in cols) for r in t.to_pylist()), key=repr)


def _both(path: str) -> list[tuple]:
    rows = _rows(hudi_ds.read(path))
    assert _rows(hudi_rs_table(path)) == rows
    return rows


def _compaction_in(name: str) -> tuple[str, bytes]:
    """The (only) compaction of a fixture's data timeline: its time and its plan's bytes."""
    with zipfile.ZipFile(FIXTURES_DIR / f"{name}.zip") as zf:
        (n,) = [
            n
            for n in zf.namelist()
            if n.endswith(".compaction.requested") and "/metadata/" not in n and "MACOSX" not in n
        ]
        return Path(n).name[:17], zf.read(n)


@pytest.mark.parametrize(
    "name",
    [
        "mor_avro_v9_txns_simple_nometa",
        "mor_avro_v9_txns_complex_nometa",
        "mor_avro_v9_txns_nonpart_nometa",
    ],
)
def test_compaction_plan_is_hudis(name: str, tmp_path_factory: Any) -> None:
    """The table as it was before Hudi scheduled its compaction: our plan names the same file
    slices, byte for byte as Hudi encodes each operation, and running it keeps every row."""
    require_fixtures()
    ts, hudi_plan_bytes = _compaction_in(name)
    path = _copy(name, tmp_path_factory)
    tl_dir = Path(path) / ".hoodie" / "timeline"
    for f in tl_dir.iterdir():
        if f.is_file() and f.name[:17] >= ts:
            f.unlink()
    for f in Path(path).rglob("*"):
        if f.is_file() and ".hoodie" not in f.parts:
            hit = re.search(r"_(\d{17})\.parquet$", f.name) or re.match(
                r"^\.[^_]+_(\d{17})\.log", f.name
            )
            if hit and hit.group(1) >= ts:
                f.unlink()
    before = _both(path)
    ctx = ServiceContext.open(path)
    c = compaction.schedule_compaction(ctx)
    assert c is not None
    ours_plan = ctx.timeline().read_compaction_plan(c)
    hudi_plan = CompactionPlan.from_bytes(hudi_plan_bytes)
    by_id = {op.file_id: op for op in ours_plan.operations or []}
    assert sorted(by_id) == sorted(op.file_id for op in hudi_plan.operations or [])
    # in Hudi's operation order, our plan encodes to Hudi's bytes (but the sync marker)
    ours_plan.operations = [by_id[op.file_id] for op in hudi_plan.operations or []]
    mine = ours_plan.to_bytes()
    assert (
        mine[: mine.index(mine[-16:])]
        == hudi_plan_bytes[: hudi_plan_bytes.index(hudi_plan_bytes[-16:])]
    )
    assert (
        mine[mine.index(mine[-16:]) + 16 : -16]
        == hudi_plan_bytes[hudi_plan_bytes.index(hudi_plan_bytes[-16:]) + 16 : -16]
    )
    compaction.run_compaction(ctx, c)
    assert _both(path) == before
    ro = _rows(hudi_ds.read(path, {"hoodie.datasource.query.type": "read_optimized"}))
    assert ro == before


@pytest.mark.parametrize(
    "name",
    [
        "mor_avro_v8_trips_8i1u",
        "mor_avro_v8_trips_8i3d",
        "cow_v8_simplekeygen_nonhivestyle",
        "cow_v9_txns_simple_nometa",
        "mor_avro_v9_txns_simple_nometa",
    ],
)
def test_services_on_a_hudi_written_table(name: str, tmp_path_factory: Any) -> None:
    """Roll back Hudi's last commit as a failed write, then compact (MOR), savepoint, clean and
    restore: each step leaves exactly the rows of the table as of Hudi's commit before it."""
    path = _copy(name, tmp_path_factory)
    ctx = ServiceContext.open(path)
    commits = list(ctx.timeline().commits())
    assert len(commits) >= 2
    prev, last = commits[-2], commits[-1]
    expected = _rows(hudi_ds.read(path, {"as.of.instant": prev.requested_time}))
    assert expected and expected != _both(path)
    # Hudi's last write, as if it had failed before its commit point
    (Path(path) / ctx.timeline().file_paths(last.requested_time)[last.state]).unlink()
    assert rollback_failed_writes(ServiceContext.open(path).state) == [last.requested_time]
    assert _both(path) == expected
    ctx = ServiceContext.open(path)
    if ctx.config.is_mor:
        c = compaction.schedule_compaction(ctx)
        if c is not None:
            compaction.run_compaction(ctx, c)
            assert _both(path) == expected
    sp = rollback.create_savepoint(ServiceContext.open(path))
    clean.clean(ServiceContext.open(path, {"hoodie.cleaner.commits.retained": "1"}))
    assert _both(path) == expected
    rollback.restore(ServiceContext.open(path), sp)
    assert _both(path) == expected


def test_archival_of_a_hudi_written_v9_table(tmp_path_factory: Any) -> None:
    name = "mor_avro_v9_txns_simple_nometa"
    path = _copy(name, tmp_path_factory)
    before = _both(path)
    tl = ServiceContext.open(path).timeline()
    completion = {i.requested_time: (i.completion_time, i.action) for i in tl.completed()}
    opts = {
        "hoodie.keep.min.commits": "2",
        "hoodie.keep.max.commits": "3",
        "hoodie.cleaner.commits.retained": "1",
    }
    clean.clean(ServiceContext.open(path, opts))
    res = archival.archive(ServiceContext.open(path, opts))
    assert len(res.archived) >= 8
    ctx = ServiceContext.open(path)
    arch = load_archived(ctx.storage, 2, ctx.config.timeline_path)
    got = {i.requested_time: (i.completion_time, i.action) for i in arch}
    assert got == {ts: completion[ts] for ts in res.archived}
    # the archived compaction keeps its plan, a commit its metadata, as raw instant bytes
    (c,) = [ts for ts in res.archived if completion[ts][1] == "commit"]
    assert arch.read_compaction_plan(c).operations
    assert arch.read_commit_metadata(c).compacted
    assert _both(path) == before
    assert not Path(path, ".hoodie/timeline", f"{c}.compaction.requested").exists()


def test_archival_keeps_delta_commits_whose_logs_are_read(tmp_path: Path) -> None:
    """On layout 2 a delta commit stays active while a snapshot reads its log files (hudi-rs
    drops the logs of delta commits it cannot find on the active timeline), and a commit that
    completed after a later instant was requested stays with everything after it."""
    path = str(tmp_path / "t")
    m = Model()
    no_services = {"hoodie.clean.automatic": "false", "hoodie.archive.automatic": "false"}
    times = []
    for k in range(6):
        t = trips(range(k * 3, k * 3 + 6), k + 1)
        times.append(hudi_ds.write(path, t, {**_opts("8"), **no_services}))
        m.apply(t)
    opts = {
        "hoodie.keep.min.commits": "2",
        "hoodie.keep.max.commits": "3",
        "hoodie.cleaner.commits.retained": "1",
    }
    # every delta commit's logs are in the latest slices (never compacted): nothing goes
    assert archival.instants_to_archive(ServiceContext.open(path, opts)) == []
    ctx = ServiceContext.open(path)
    compaction.run_compaction(ctx, compaction.schedule_compaction(ctx))
    later = []
    for k in range(2):
        t = trips([1, 2], 20 + k)
        later.append(hudi_ds.write(path, t, {**_opts("8"), **no_services}))
        m.apply(t)
    ctx = ServiceContext.open(path, opts)
    assert [i.requested_time for i in archival.instants_to_archive(ctx)] == [
        *times,
        ctx.timeline().commits()[6].requested_time,  # the compaction
    ]
    # compacted: the delta commits' logs are no longer read, they may go -- but say the
    # second completed (as its file name now says) after a write that stays was requested
    tl_dir = Path(path) / ".hoodie" / "timeline"
    (second,) = [
        p for p in tl_dir.iterdir() if COMPLETED.match(p.name) and p.name.startswith(times[1])
    ]
    late = str(int(later[0]) + 1)
    second.rename(tl_dir / f"{times[1]}_{late}.deltacommit")
    ctx = ServiceContext.open(path, opts)
    assert [i.requested_time for i in archival.instants_to_archive(ctx)] == [times[0]]
    assert archival.archive(ctx).archived == [times[0]]
    _check(path, m)


@pytest.mark.parametrize("version", VERSIONS)
def test_every_service_completion_goes_through_the_state_hook(tmp_path: Path, version: str) -> None:
    """The metadata table's writer sits on ``TableState.before_complete``: every instant a
    service completes -- compaction, clean, rollback (of a failed write and of a completed
    one), restore -- reaches it before its completed file exists (layout 2: before its completion
    time is chosen)."""
    path = str(tmp_path / "t")
    m = Model()
    for k in range(3):
        _write(path, trips(range(k * 4, k * 4 + 8), k + 1), m, version)
    seen: list[tuple[str, str]] = []

    def hook(done: Any, content: bytes) -> None:
        assert done.is_completed and done.completion_time is None
        assert not any(n.startswith(f"{done.requested_time}_") for n in _timeline_files(path))
        assert content
        seen.append((done.action, done.requested_time))

    def ctx_of(opts: dict[str, str] | None = None) -> ServiceContext:
        c = ServiceContext.open(path, opts)
        c.state.before_complete = hook
        return c

    ctx = ctx_of()
    c = compaction.schedule_compaction(ctx)
    compaction.run_compaction(ctx, c)
    sp = ctx_of().timeline().commits().last()
    assert sp is not None
    rollback.create_savepoint(ctx_of(), sp.requested_time)
    last = _write(path, trips([1], 50), m, version)
    clean.clean(ctx_of({"hoodie.cleaner.commits.retained": "1"}))
    rollback.rollback(ctx_of(), last)
    hudi_ds.write(path, trips([2], 60), _opts(version))  # then made a failed write:
    failed = ctx_of().timeline().commits().last()
    assert failed is not None
    done, _ = _completed(path, failed.requested_time)
    (Path(path) / ".hoodie/timeline" / f"{failed.requested_time}_{done}.deltacommit").unlink()
    state = ctx_of().state
    assert rollback_failed_writes(state) == [failed.requested_time]
    hudi_ds.write(path, trips([3], 70), _opts(version))  # undone by the restore
    rollback.restore(ctx_of(), sp.requested_time)
    actions = [a for a, _ in seen]
    assert actions[0] == "commit" and seen[0][1] == c  # the compaction
    assert actions.count("rollback") >= 3 and "restore" in actions
    assert "clean" in actions


@pytest.mark.parametrize("version", VERSIONS)
def test_writes_during_a_pending_compaction(tmp_path: Path, version: str) -> None:
    """Layout 2: a write during a pending compaction C names its logs after itself (nothing is
    renamed); completed after C was requested, they belong to C's slice -- read on top of C's
    base files once C completes, and on top of the old slice while C is pending."""
    path = str(tmp_path / "t")
    m = Model()
    for k in range(3):
        _write(path, trips(range(k * 4, k * 4 + 10), k + 1), m, version)
    ctx = ServiceContext.open(path)
    c = compaction.schedule_compaction(ctx)
    assert c is not None
    during = _write(path, trips(range(0, 6), 10), m, version)
    logs = [p.name for p in Path(path).rglob(f".*_{during}.log.*")]
    assert logs and not list(Path(path).rglob(f".*_{c}.log.*"))
    _check(path, m)
    # an attempt that wrote a base file and died, then a write while it "runs"
    job = compaction_execute.prepare_compaction(ctx, c)
    ctx.writer().transition_to_inflight(Instant(c, "compaction", State.REQUESTED))
    compaction_execute.execute_operation(job, 0)
    _write(path, trips(range(3, 9), 11), m, version)
    _check(path, m)
    (res,) = compaction.run_compaction(ctx)  # the dead attempt is rolled back first
    assert res.instant == c
    plan = ctx.timeline().read_compaction_plan(c)
    planned = {n for op in plan.operations or [] for n in op.delta_file_paths or []}
    assert not planned & set(logs)  # written after C was planned: not compacted, still read
    _check(path, m)
    _write(path, trips(range(20, 22), 12), m, version)
    _check(path, m)


@pytest.mark.parametrize("version", VERSIONS)
def test_unschedule_leaves_logs_where_they_are(tmp_path: Path, version: str) -> None:
    path = str(tmp_path / "t")
    m = Model()
    _write(path, trips(range(8), 1), m, version)
    _write(path, trips(range(8), 2), m, version)
    ctx = ServiceContext.open(path)
    c = compaction.schedule_compaction(ctx)
    assert c is not None
    _write(path, trips(range(4), 3), m, version)
    files = sorted(
        p.name for p in Path(path).rglob("*") if p.is_file() and ".hoodie" not in p.parts
    )
    res = rollback.rollback(ServiceContext.open(path), c)  # unschedules the pending compaction
    assert res.rollback_instant is None
    assert not ServiceContext.open(path).timeline().contains(c)
    after = sorted(
        p.name for p in Path(path).rglob("*") if p.is_file() and ".hoodie" not in p.parts
    )
    assert after == files  # no log file renamed: slices follow completion times
    _check(path, m)


@pytest.mark.parametrize("version", VERSIONS)
def test_failed_compaction_is_rolled_back_and_retried(
    tmp_path: Path, version: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = str(tmp_path / "t")
    m = Model()
    for k in range(3):
        _write(path, trips(range(10), k + 1), m, version)
    ctx = ServiceContext.open(path)
    c = compaction.schedule_compaction(ctx)
    assert c is not None
    real = fail_second_operation(monkeypatch)
    with pytest.raises(OSError, match="disk full"):
        compaction.run_compaction(ctx, c)
    tl = ctx.timeline()
    assert tl.get(c).is_requested
    (r,) = list(tl.completed().filter_actions("rollback"))
    assert COMPLETED.match(Path(tl.file_paths(r.requested_time)[r.state]).name)
    assert not list(Path(path).rglob(f"*_{c}.parquet"))
    _check(path, m)
    monkeypatch.setattr(compaction, "execute_operation", real)
    (res,) = compaction.run_compaction(ctx)
    assert res.instant == c
    _check(path, m)


@pytest.mark.parametrize(
    "hit", [1, 2, pytest.param(3, marks=pytest.mark.slow), pytest.param(6, marks=pytest.mark.slow)]
)
def test_archival_killed_at_each_step_resumes(tmp_path: Path, hit: int) -> None:
    """Killed with its LSM file under a temporary name (1), after the file and manifest were
    committed (2), or after deleting some instant files (3, 6): the next archival finishes,
    every instant is in the history once, and both readers return every row."""
    from tests.services.test_transitions_crash import crash

    path = str(tmp_path / "t")
    m = Model()
    no_services = {"hoodie.clean.automatic": "false", "hoodie.archive.automatic": "false"}
    for k in range(7):
        t = trips(range(k * 2, k * 2 + 6), k + 1)
        hudi_ds.write(path, t, {**_opts("9", "COPY_ON_WRITE"), **no_services})
        m.apply(t)
    opts = {
        "hoodie.keep.min.commits": "2",
        "hoodie.keep.max.commits": "3",
        "hoodie.cleaner.commits.retained": "1",
    }
    chosen = [
        i.requested_time for i in archival.instants_to_archive(ServiceContext.open(path, opts))
    ]
    assert len(chosen) == 5
    assert (
        crash(f"archive:{hit}", lambda: archival.archive(ServiceContext.open(path, opts)))
        == EXIT_CODE
    )
    _check(path, m)
    history = Path(path) / ".hoodie/timeline/history"
    for t in history.glob(".*.tmp"):  # a torn file is never read; once stale, it is deleted
        os.utime(t, (t.stat().st_atime - 3600, t.stat().st_mtime - 3600))
    archival.archive(ServiceContext.open(path, opts))
    assert not list(history.glob(".*.tmp"))
    w = LsmTimelineWriter(Storage(path), ".hoodie/timeline/history")
    rows = [
        ts
        for name, _ in w.manifest()
        for ts in pq.read_table(history / name).column("instantTime").to_pylist()
    ]
    assert sorted(rows) == sorted(set(rows)) and set(chosen) <= set(rows)
    assert not any(n[:17] in chosen for n in _timeline_files(path))
    _check(path, m)
