"""A table service attempt that another process rolled back and re-ran must not resume.

Real processes, stalled deterministically (``HUDI_DS_STALL_AT``): compactor A (``hudi-py
compact run`` in a child) stops after writing its first file group's base file; its heartbeat
(0.5 s, 2 tolerable misses) expires; compactor B (``hudi-py compact run`` in another child)
rolls A's attempt back and executes the plan again; then A is continued -- after B completed,
or (B stalled in turn after its own first file group) before B completes. Either way exactly
one attempt completes, A exits with :class:`~hudi_ds.errors.AttemptRolledBackError`, no file
group holds two base files of the compaction instant, every file the completed instant names
exists, and hudi_ds and hudi-rs read the model's rows -- also after a later upsert. Table
versions 6 and 9, with and without the metadata table.

A clean stalled under the table lock (``clean`` point) loses the lock to a second ``hudi-py
clean`` that finishes the same plan; continued, it must not complete the clean a second time.
A clean or compaction whose lock is taken over just as it completes withdraws its completed
file (the fence after the write).
"""

from __future__ import annotations

import json
import signal
import subprocess
import time
from collections import Counter
from pathlib import Path

import pytest

import hudi_ds
from hudi_ds.concurrency.file_system_lock import LOCK_FILE, FileSystemLock
from hudi_ds.concurrency.heartbeat import heartbeat_expired
from hudi_ds.errors import LockLostError
from hudi_ds.faults import STALL_ENV
from hudi_ds.layout.naming import parse_base_file_name
from hudi_ds.services import ServiceContext, clean, compaction
from hudi_ds.storage import Storage
from hudi_ds.timeline.timeline import Timeline
from hudi_ds.timeline.writer import TimelineWriter
from tests.conftest import (
    OCC_OPTIONS,
    assert_rows,
    hudi_rs_table,
    spawn_python,
    table_options,
    wait_stopped,
)
from tests.services.test_services import COLS, Model, trips

HEARTBEAT_MS = 500
MISSES = 2
OPTS = {
    **table_options("attempts", partition="city", buckets=2),
    **OCC_OPTIONS,
    "hoodie.write.lock.wait_time_ms": "10",
    "hoodie.client.heartbeat.interval_in_ms": str(HEARTBEAT_MS),
    "hoodie.client.heartbeat.tolerable.misses": str(MISSES),
    "hoodie.datasource.compaction.async.enable": "false",
    "hoodie.clean.automatic": "false",
    "hoodie.archive.automatic": "false",
}
#: the service options the CLI children get (the table's write options are in hoodie.properties)
SERVICE_PREFIXES = (
    "hoodie.write.concurrency.",
    "hoodie.write.lock.",
    "hoodie.client.heartbeat.",
    "hoodie.cleaner.",
)

#: (table version, metadata table on): v6 with and without it, v9 with it (read through it by
#: hudi-rs too)
VERSIONS = [("6", False), ("6", True), ("9", True)]
VERSION_IDS = ["6", "6-mdt", "9-mdt"]

CLI = r"""
import sys
from hudi_ds.cli import main
sys.exit(main(sys.argv[1:]))
"""


def _cli(*args: str, options: dict[str, str], stall: str | None = None) -> subprocess.Popen[str]:
    opts = [
        a for k, v in options.items() if k.startswith(SERVICE_PREFIXES) for a in ("-o", f"{k}={v}")
    ]
    return spawn_python(CLI, *args, "--json", *opts, env={STALL_ENV: stall} if stall else None)


def _opts(version: str, mdt: bool = False) -> dict[str, str]:
    return {
        **OPTS,
        "hoodie.write.table.version": version,
        "hoodie.metadata.enable": str(mdt).lower(),
    }


def _table(path: str, version: str, mdt: bool = False) -> tuple[Model, str]:
    """Four file groups (2 partitions x 2 buckets) with log files; a compaction of all four
    scheduled. Returns the model and the compaction instant."""
    m = Model()
    for ids, ts in ((range(40), 1), (range(0, 40, 2), 2), (range(0, 40, 3), 3)):
        t = trips(ids, ts)
        hudi_ds.write(path, t, _opts(version, mdt))
        m.apply(t)
    c = compaction.schedule_compaction(ServiceContext.open(path, _opts(version, mdt)))
    assert c is not None
    plan = ServiceContext.open(path).timeline().read_compaction_plan(c)
    assert len(plan.operations or []) == 4
    return m, c


def _wait_heartbeat_expired(path: str, instant: str) -> None:
    """Until the stalled attempt's heartbeat is older than interval x misses (~1 s)."""
    storage = Storage(path)
    deadline = time.monotonic() + 15
    while not heartbeat_expired(storage, instant, HEARTBEAT_MS / 1000 * MISSES):
        assert time.monotonic() < deadline, "the stalled attempt's heartbeat did not expire"
        time.sleep(0.05)


def _base_files(path: str) -> list[tuple[str, str, str]]:
    """(partition, file id, instant) of every base file of the table."""
    out = []
    for p in Path(path).rglob("*.parquet"):
        if ".hoodie" in p.parts:
            continue
        parsed = parse_base_file_name(p.name)
        assert parsed is not None, p
        out.append((p.parent.name, parsed.file_id, parsed.instant_time))
    return out


def _check_table(path: str, m: Model, c: str, version: str, mdt: bool = False) -> None:
    """C completed once, each file group holds one base file of C, every file C's metadata
    names exists, and both readers return the model's rows (also after a later upsert; with
    ``mdt`` both list the files through the metadata table)."""
    storage = Storage(path)
    state = ServiceContext.open(path).state
    tl = Timeline.load(storage, state.layout, state.config.timeline_path)
    assert tl.is_completed(c)
    md = tl.read_commit_metadata(tl.get(c))
    named = [s.path for s in md.write_stats()]
    assert len(named) == 4
    for rel in named:
        assert (Path(path) / rel).is_file(), f"{rel} named by {c} is missing"
    per_group = Counter(_base_files(path))
    twice = [k for k, n in per_group.items() if n > 1]
    assert not twice, f"file groups with two base files of one instant: {twice}"
    of_c = sorted(k for k in per_group if k[2] == c)
    assert len(of_c) == 4, of_c
    read = {"hoodie.metadata.enable": "true"} if mdt else None
    assert_rows(hudi_ds.read(path, read), m.rows(), COLS)
    assert_rows(hudi_rs_table(path, read), m.rows(), COLS)
    t = trips(range(0, 40, 5), 4)
    hudi_ds.write(path, t, _opts(version, mdt))
    m.apply(t)
    assert_rows(hudi_ds.read(path, read), m.rows(), COLS)
    assert_rows(hudi_rs_table(path, read), m.rows(), COLS)


def _finished(proc: subprocess.Popen[str]) -> dict:
    """The CLI child's JSON output; it must exit 0."""
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err[-3000:]
    return dict(json.loads(out))


def _rolled_back(a: subprocess.Popen[str]) -> None:
    """A exits with a clear hudi_ds error saying its attempt was rolled back."""
    out, err = a.communicate(timeout=60)
    assert a.returncode != 0, out
    assert "AttemptRolledBackError" in err, err[-3000:]
    assert json.loads(out)["exit_code"] == a.returncode


@pytest.mark.parametrize(("version", "mdt"), VERSIONS, ids=VERSION_IDS)
def test_compaction_attempt_rolled_back_and_completed_elsewhere_does_not_resume(
    tmp_path: Path, version: str, mdt: bool
) -> None:
    """B rolls A back and completes C; A, continued, stops without writing another file."""
    path = str(tmp_path / "t")
    m, c = _table(path, version, mdt)
    a = _cli("compact", "run", path, options=_opts(version, mdt), stall="compaction")
    wait_stopped(a)
    _wait_heartbeat_expired(path, c)
    b = _cli("compact", "run", path, options=_opts(version, mdt))
    done = _finished(b)
    assert [r["instant"] for r in done["compactions"]] == [c]
    a.send_signal(signal.SIGCONT)
    _rolled_back(a)
    _check_table(path, m, c, version, mdt)


@pytest.mark.parametrize(("version", "mdt"), VERSIONS, ids=VERSION_IDS)
def test_compaction_attempt_rolled_back_does_not_complete_over_the_live_attempt(
    tmp_path: Path, version: str, mdt: bool
) -> None:
    """B rolls A back and stalls after its first file group; A, continued, must neither
    delete B's files nor complete C; B then completes."""
    path = str(tmp_path / "t")
    m, c = _table(path, version, mdt)
    a = _cli("compact", "run", path, options=_opts(version, mdt), stall="compaction")
    wait_stopped(a)
    _wait_heartbeat_expired(path, c)
    b = _cli("compact", "run", path, options=_opts(version, mdt), stall="compaction")
    wait_stopped(b)
    a.send_signal(signal.SIGCONT)
    _rolled_back(a)
    b.send_signal(signal.SIGCONT)
    done = _finished(b)
    assert [r["instant"] for r in done["compactions"]] == [c]
    _check_table(path, m, c, version, mdt)


#: a file-system lock whose holder's lease runs out after 1.2 s (so a stalled clean loses it)
LEASE = {
    "hoodie.write.lock.filesystem.expire": "0.02",
    "hoodie.write.lock.num_retries": "1000",
    "hoodie.cleaner.commits.retained": "1",
}


def _clean_table(path: str, version: str, mdt: bool = False) -> Model:
    """A COW table whose four file groups hold three base files each: a clean (one commit
    retained) deletes the oldest of each."""
    m = Model()
    opts = {**_opts(version, mdt), "hoodie.datasource.write.table.type": "COPY_ON_WRITE"}
    for ts in (1, 2, 3):
        t = trips(range(40), ts)
        hudi_ds.write(path, t, opts)
        m.apply(t)
    return m


@pytest.mark.parametrize("version", ["6", "9"])
def test_clean_that_lost_the_lock_does_not_complete(tmp_path: Path, version: str) -> None:
    """Clean A stalls under the lock after its first delete; its lease runs out and clean B
    takes the lock over, finishing A's plan, and stalls after its first delete in turn; A,
    continued, stops with LockLostError before deleting or completing anything; B completes
    the clean, once."""
    path = str(tmp_path / "t")
    m = _clean_table(path, version)
    opts = {**_opts(version), **LEASE}
    a = _cli("clean", path, options=opts, stall="clean")
    wait_stopped(a)
    b = _cli("clean", path, options=opts, stall="clean")
    wait_stopped(b)  # it broke A's expired lock and re-executes A's plan
    a.send_signal(signal.SIGCONT)
    out, err = a.communicate(timeout=60)
    assert a.returncode != 0, out
    assert "LockLostError" in err, err[-3000:]
    b.send_signal(signal.SIGCONT)
    _finished(b)
    state = ServiceContext.open(path).state
    tl = state.reload_timeline()
    cleans = list(tl.filter_actions("clean"))
    assert len(cleans) == 1 and cleans[0].is_completed, cleans
    files = [
        p.name
        for p in (Path(path) / (".hoodie/timeline" if version == "9" else ".hoodie")).iterdir()
        if p.name.split("_")[0].split(".")[0] == cleans[0].requested_time
    ]
    assert len([f for f in files if f.endswith(".clean")]) == 1, files
    md = tl.read_clean_metadata(cleans[0])
    deleted = [f for pm in md.partition_metadata.values() for f in pm.success_delete_files]
    assert len(deleted) == 4  # the oldest slice of each file group
    left = {p.name for p in Path(path).rglob("*.parquet")}
    assert not left & set(deleted) and len(left) == 8
    assert_rows(hudi_ds.read(path), m.rows(), COLS)
    assert_rows(hudi_rs_table(path), m.rows(), COLS)


def _lose_the_lock_after(path: str, action: str, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Another process takes the table lock over just after this one writes the completed
    file of an instant of ``action`` (in-process: the lock file is replaced, and the lease is
    taken as run out, so the fence must read the lock). Returns the instants it hit."""
    real = TimelineWriter.complete
    hit: list[str] = []

    def complete(self, inst, content, completion_time=None):  # type: ignore[no-untyped-def]
        done = real(self, inst, content, completion_time)
        if (
            inst.action == action
            and not hit
            and self.path.startswith(".hoodie")
            and ("metadata" not in self.path)
        ):
            hit.append(inst.requested_time)
            (Path(path) / LOCK_FILE).write_text('{"owner": "other", "expires": 1e12}')
        return done

    monkeypatch.setattr(FileSystemLock, "held_until", lambda self: 0.0)
    monkeypatch.setattr(TimelineWriter, "complete", complete)
    return hit


@pytest.mark.parametrize("mdt", [False, True], ids=["files", "mdt"])
@pytest.mark.parametrize("version", ["6", "9"])
def test_service_completion_written_after_the_lock_was_lost_is_withdrawn(
    tmp_path: Path, version: str, mdt: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fence after the completed file: a clean and a compaction whose lock was taken over
    while they completed withdraw the completed file and raise LockLostError; the next runs
    (the lock free again) finish the clean and roll back and re-run the compaction. With the
    metadata table, its mirror of the withdrawn compaction is replaced by the re-run's."""
    path = str(tmp_path / "t")
    m = _clean_table(path, version, mdt)
    opts = {**_opts(version, mdt), **LEASE, "hoodie.write.lock.num_retries": "3"}
    hit = _lose_the_lock_after(path, "clean", monkeypatch)
    with pytest.raises(LockLostError):
        clean.clean(ServiceContext.open(path, opts))
    monkeypatch.undo()
    (Path(path) / LOCK_FILE).unlink()  # the other holder released it
    (c,) = hit
    inst = ServiceContext.open(path).timeline().get(c)
    assert inst is not None and inst.is_inflight  # withdrawn: pending again
    assert clean.clean(ServiceContext.open(path, opts)).instant is None  # finished it first
    cleans = list(ServiceContext.open(path).timeline().filter_actions("clean"))
    assert [(i.requested_time, i.is_completed) for i in cleans] == [(c, True)]
    read = {"hoodie.metadata.enable": "true"} if mdt else None
    assert_rows(hudi_ds.read(path, read), m.rows(), COLS)
    assert_rows(hudi_rs_table(path, read), m.rows(), COLS)

    path = str(tmp_path / "mor")
    m, c = _table(path, version, mdt)
    hit = _lose_the_lock_after(path, "compaction", monkeypatch)
    with pytest.raises(LockLostError):
        compaction.run_compaction(ServiceContext.open(path, opts), c)
    monkeypatch.undo()
    (Path(path) / LOCK_FILE).unlink()
    assert hit == [c]
    assert not ServiceContext.open(path).timeline().is_completed(c)
    _wait_heartbeat_expired(path, c)
    (res,) = compaction.run_compaction(ServiceContext.open(path, opts), c)
    assert res.instant == c
    _check_table(path, m, c, version, mdt)


def test_base_file_a_rolled_back_attempt_left_is_cleaned(tmp_path: Path) -> None:
    """What no protocol can exclude: an attempt paused between writing a base file and
    checking afterwards, whose rollback ran meanwhile, killed instead of continued, leaves a
    base file of C that C's commit does not name. The next clean deletes it as debris."""
    path = str(tmp_path / "t")
    m, c = _table(path, "6")
    (done,) = compaction.run_compaction(ServiceContext.open(path, _opts("6")), c)
    named = Path(path) / done.stats[0].path
    stray = named.with_name(named.name.replace("-1-", "-7-", 1))  # attempt 6's token
    assert stray != named
    stray.write_bytes(named.read_bytes())
    res = clean.clean(ServiceContext.open(path, _opts("6")))
    assert res.debris == [str(stray.relative_to(path))]
    assert not stray.exists() and named.exists()
    _check_table(path, m, c, "6")
