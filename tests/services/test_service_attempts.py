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

Every lock provider a process of another host can share: the file-system lock on a local table,
and on a table on a local S3 server (moto) the storage-based lock and the DynamoDB lock (on
moto's DynamoDB). ``make test`` runs every case of the file-system lock and one per object-store
provider; the whole matrix is under the ``stress`` marker (``make test-stress``).
"""

from __future__ import annotations

import json
import signal
import subprocess
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

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
from tests.write import test_fencing

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
    "hoodie.aws.",
)

#: (table version, metadata table on): v6 with and without it, v9 with it (read through it by
#: hudi-rs too)
VERSIONS = [("6", False), ("6", True), ("9", True)]
VERSION_IDS = ["6", "6-mdt", "9-mdt"]

#: (where the table is, lock provider): a local table under the file-system lock; a table on
#: the session's S3 server under the storage-based lock and under the DynamoDB lock
PROVIDERS = [("local", "filesystem"), ("s3", "storage"), ("s3", "dynamodb")]
PROVIDER_IDS = {"filesystem": "fs", "storage": "s3-storage", "dynamodb": "s3-dynamodb"}

#: the fencing tests' fixture: (table path, storage options, moto server) of a case's store
where = test_fencing.where


def _marks(store: str, run_by_default: bool) -> tuple[Any, ...]:
    """A case on S3 is ``slow`` (server round trips, leases of 2-10 s waited out); one left
    out of ``make test`` is a ``stress`` case."""
    marks = (pytest.mark.slow,) if store == "s3" else ()
    return marks if run_by_default else (*marks, pytest.mark.stress)


def matrix(cases: list[tuple[Any, ...]], ids: list[str], default: dict[str, set[str]]) -> list[Any]:
    """``(where, provider, *case)`` for every provider and case. ``make test`` runs the cases
    ``default[provider]`` (ids of ``ids``; for a provider not named, every case of the
    file-system lock and none of the others); the rest are ``stress`` cases (:func:`_marks`)."""
    out = []
    for store, provider in PROVIDERS:
        every = set(ids) if provider == "filesystem" else set()
        for case, cid in zip(cases, ids, strict=True):
            run_by_default = cid in default.get(provider, every)
            out.append(
                pytest.param(
                    store,
                    provider,
                    *case,
                    id=f"{PROVIDER_IDS[provider]}-{cid}",
                    marks=_marks(store, run_by_default),
                )
            )
    return out


@dataclass
class Store:
    """A case's table (a local path or an S3 URI with its storage options) and the lock options
    every process writing it or running its services shares."""

    path: str
    so: dict[str, str] = field(default_factory=dict)
    lock: dict[str, str] = field(default_factory=dict)
    #: the lock options under which a holder stopped for a second or two loses its lease
    short_lease: dict[str, str] = field(default_factory=dict)

    @property
    def sopt(self) -> dict[str, str] | None:
        return self.so or None

    def storage(self) -> Storage:
        return Storage(self.path, storage_options=self.sopt)

    def ctx(self, options: dict[str, str] | None = None) -> ServiceContext:
        return ServiceContext.open(self.storage(), options)

    def opts(self, version: str, mdt: bool = False) -> dict[str, str]:
        return {
            **OPTS,
            **self.lock,
            "hoodie.write.table.version": version,
            "hoodie.metadata.enable": str(mdt).lower(),
        }

    def write(self, t: Any, options: dict[str, str]) -> str:
        return hudi_ds.write(self.path, t, options, storage_options=self.sopt)

    def check_rows(self, m: Model, mdt: bool = False) -> None:
        """Both readers return the model's rows (with ``mdt`` listing through the metadata
        table; hudi-rs does on versions 8 and above)."""
        read = {"hoodie.metadata.enable": "true"} if mdt else None
        assert_rows(hudi_ds.read(self.path, read, storage_options=self.sopt), m.rows(), COLS)
        assert_rows(hudi_rs_table(self.path, read, storage_options=self.sopt), m.rows(), COLS)


def _store(where: tuple[str, dict, Any], provider: str) -> Store:
    """The :class:`Store` of a case: ``where`` is test_fencing's fixture (the table's path,
    storage options and moto server)."""
    path, so, moto = where
    if provider == "filesystem":
        # the 10-minute lease at the default; a 1.2 s one where a test stalls a holder
        short = {
            "hoodie.write.lock.filesystem.expire": "0.02",
            "hoodie.write.lock.num_retries": "1000",
        }
        return Store(path, so, {}, short)
    lock = test_fencing.lock_options(provider, moto)
    if provider == "storage":
        # its shortest lease is 10 s: waiting it out takes more than OPTS' 10 ms x 600 attempts
        lock["hoodie.write.lock.wait_time_ms"] = "100"
    return Store(path, so, lock, {})


CLI = r"""
import sys
from hudi_ds.cli import main
sys.exit(main(sys.argv[1:]))
"""


def _cli(
    st: Store, *args: str, options: dict[str, str], stall: str | None = None
) -> subprocess.Popen[str]:
    opts = [
        a for k, v in options.items() if k.startswith(SERVICE_PREFIXES) for a in ("-o", f"{k}={v}")
    ]
    opts += [a for k, v in st.so.items() for a in ("--storage-option", f"{k}={v}")]
    return spawn_python(
        CLI, *args, st.path, "--json", *opts, env={STALL_ENV: stall} if stall else None
    )


def _table(st: Store, version: str, mdt: bool = False) -> tuple[Model, str]:
    """Four file groups (2 partitions x 2 buckets) with log files; a compaction of all four
    scheduled. Returns the model and the compaction instant."""
    m = Model()
    for ids, ts in ((range(40), 1), (range(0, 40, 2), 2), (range(0, 40, 3), 3)):
        t = trips(ids, ts)
        st.write(t, st.opts(version, mdt))
        m.apply(t)
    c = compaction.schedule_compaction(st.ctx(st.opts(version, mdt)))
    assert c is not None
    plan = st.ctx().timeline().read_compaction_plan(c)
    assert len(plan.operations or []) == 4
    return m, c


def _wait_heartbeat_expired(st: Store, instant: str) -> None:
    """Until the stalled attempt's heartbeat is older than interval x misses (~1 s)."""
    storage = st.storage()
    deadline = time.monotonic() + 15
    while not heartbeat_expired(storage, instant, HEARTBEAT_MS / 1000 * MISSES):
        assert time.monotonic() < deadline, "the stalled attempt's heartbeat did not expire"
        time.sleep(0.05)


def _base_files(st: Store) -> list[tuple[str, str, str]]:
    """(partition, file id, instant) of every base file of the table."""
    out = []
    for f in st.storage().list_files("", recursive=True):
        if not f.path.endswith(".parquet") or f.path.startswith(".hoodie"):
            continue
        parsed = parse_base_file_name(f.name)
        assert parsed is not None, f.path
        out.append((f.path.rsplit("/", 2)[-2], parsed.file_id, parsed.instant_time))
    return out


def _check_table(st: Store, m: Model, c: str, version: str, mdt: bool = False) -> None:
    """C completed once, each file group holds one base file of C, every file C's metadata
    names exists, and both readers return the model's rows (also after a later upsert; with
    ``mdt`` both list the files through the metadata table)."""
    storage = st.storage()
    state = st.ctx().state
    tl = Timeline.load(storage, state.layout, state.config.timeline_path)
    assert tl.is_completed(c)
    assert not [i for i in tl if not i.is_completed], "an instant left pending"
    md = tl.read_commit_metadata(tl.get(c))
    named = [s.path for s in md.write_stats()]
    assert len(named) == 4
    for rel in named:
        assert storage.is_file(rel), f"{rel} named by {c} is missing"
    per_group = Counter(_base_files(st))
    twice = [k for k, n in per_group.items() if n > 1]
    assert not twice, f"file groups with two base files of one instant: {twice}"
    of_c = sorted(k for k in per_group if k[2] == c)
    assert len(of_c) == 4, of_c
    st.check_rows(m, mdt)
    t = trips(range(0, 40, 5), 4)
    st.write(t, st.opts(version, mdt))
    m.apply(t)
    st.check_rows(m, mdt)


def _finished(proc: subprocess.Popen[str]) -> dict:
    """The CLI child's JSON output; it must exit 0."""
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err[-3000:]
    return dict(json.loads(out))


def _failed_with(proc: subprocess.Popen[str], error: str) -> None:
    """The CLI child exits with a clear hudi_ds error of type ``error``."""
    out, err = proc.communicate(timeout=120)
    assert proc.returncode != 0, out
    assert error in err, err[-3000:]
    assert json.loads(out)["exit_code"] == proc.returncode


def _rolled_back(a: subprocess.Popen[str]) -> None:
    """A exits with a clear hudi_ds error saying its attempt was rolled back."""
    _failed_with(a, "AttemptRolledBackError")


ATTEMPTS = matrix(
    [(v, mdt) for v, mdt in VERSIONS],
    VERSION_IDS,
    {"storage": {"9-mdt"}, "dynamodb": {"6"}},
)


@pytest.mark.parametrize(("where", "provider", "version", "mdt"), ATTEMPTS, indirect=["where"])
def test_compaction_attempt_rolled_back_and_completed_elsewhere_does_not_resume(
    where: tuple[str, dict, Any], provider: str, version: str, mdt: bool
) -> None:
    """B rolls A back and completes C; A, continued, stops without writing another file."""
    st = _store(where, provider)
    m, c = _table(st, version, mdt)
    a = _cli(st, "compact", "run", options=st.opts(version, mdt), stall="compaction")
    wait_stopped(a)
    _wait_heartbeat_expired(st, c)
    b = _cli(st, "compact", "run", options=st.opts(version, mdt))
    done = _finished(b)
    assert [r["instant"] for r in done["compactions"]] == [c]
    a.send_signal(signal.SIGCONT)
    _rolled_back(a)
    _check_table(st, m, c, version, mdt)


@pytest.mark.parametrize(
    ("where", "provider", "version", "mdt"),
    matrix([(v, mdt) for v, mdt in VERSIONS], VERSION_IDS, {}),
    indirect=["where"],
)
def test_compaction_attempt_rolled_back_does_not_complete_over_the_live_attempt(
    where: tuple[str, dict, Any], provider: str, version: str, mdt: bool
) -> None:
    """B rolls A back and stalls after its first file group; A, continued, must neither
    delete B's files nor complete C; B then completes."""
    st = _store(where, provider)
    m, c = _table(st, version, mdt)
    a = _cli(st, "compact", "run", options=st.opts(version, mdt), stall="compaction")
    wait_stopped(a)
    _wait_heartbeat_expired(st, c)
    b = _cli(st, "compact", "run", options=st.opts(version, mdt), stall="compaction")
    wait_stopped(b)
    a.send_signal(signal.SIGCONT)
    _rolled_back(a)
    b.send_signal(signal.SIGCONT)
    done = _finished(b)
    assert [r["instant"] for r in done["compactions"]] == [c]
    _check_table(st, m, c, version, mdt)


#: a clean deletes the oldest file slice of each file group of :func:`_clean_table`
CLEAN = {"hoodie.cleaner.commits.retained": "1"}
COW = {"hoodie.datasource.write.table.type": "COPY_ON_WRITE"}


def _clean_table(st: Store, version: str, mdt: bool = False) -> Model:
    """A COW table whose four file groups hold three base files each: a clean (one commit
    retained) deletes the oldest of each."""
    m = Model()
    opts = {**st.opts(version, mdt), **COW}
    for ts in (1, 2, 3):
        t = trips(range(40), ts)
        st.write(t, opts)
        m.apply(t)
    return m


def _the_clean(st: Store, version: str, deleted_files: int = 4, base_files: int = 8) -> None:
    """One clean on the timeline, completed once; it deleted ``deleted_files`` base files (the
    oldest slice of each of the four file groups, by default), which are gone, and
    ``base_files`` base files are left; no instant is pending."""
    tl = st.ctx().state.reload_timeline()
    cleans = list(tl.filter_actions("clean"))
    assert len(cleans) == 1 and cleans[0].is_completed, cleans
    folder = ".hoodie/timeline" if version == "9" else ".hoodie"
    files = [
        f.name
        for f in st.storage().list_files(folder)
        if f.name.split("_")[0].split(".")[0] == cleans[0].requested_time
    ]
    assert len([f for f in files if f.endswith(".clean")]) == 1, files
    md = tl.read_clean_metadata(cleans[0])
    deleted = [f for pm in md.partition_metadata.values() for f in pm.success_delete_files]
    assert len(deleted) == deleted_files, deleted
    left = {
        f.name for f in st.storage().list_files("", recursive=True) if f.name.endswith(".parquet")
    }
    assert not left & set(deleted) and len(left) == base_files, sorted(left)
    assert not [i for i in tl if not i.is_completed], "an instant left pending"


@pytest.mark.parametrize(
    ("where", "provider", "version"),
    matrix([("6",), ("9",)], ["6", "9"], {"dynamodb": {"9"}}),
    indirect=["where"],
)
def test_clean_that_lost_the_lock_does_not_complete(
    where: tuple[str, dict, Any], provider: str, version: str
) -> None:
    """Clean A stalls under the lock after its first delete; its lease runs out and clean B
    takes the lock over, finishing A's plan, and stalls after its first delete in turn; A,
    continued, stops with LockLostError before deleting or completing anything; B completes
    the clean, once. (The DynamoDB lock's holder drops the lock itself once a lease passed
    without a renewal -- a taker may have counted that lease out -- so B, stopped longer than
    its 2 s lease while A finished, may stop with LockLostError too: then nothing of it
    completed, and a third clean finishes the plan.)"""
    st = _store(where, provider)
    m = _clean_table(st, version)
    opts = {**st.opts(version), **st.short_lease, **CLEAN}
    a = _cli(st, "clean", options=opts, stall="clean")
    wait_stopped(a)
    b = _cli(st, "clean", options=opts, stall="clean")
    wait_stopped(b, 120)  # it broke A's expired lock and re-executes A's plan
    a.send_signal(signal.SIGCONT)
    _failed_with(a, "LockLostError")
    b.send_signal(signal.SIGCONT)
    if provider == "dynamodb":
        out, err = b.communicate(timeout=120)
        if b.returncode != 0:
            assert "LockLostError" in err, err[-3000:]
            assert json.loads(out)["exit_code"] == b.returncode
            _finished(_cli(st, "clean", options=opts))
    else:
        _finished(b)
    _the_clean(st, version)
    st.check_rows(m)


#: (service, the point it stops at holding the table lock): a clean that made its plan, a clean
#: and a compaction that wrote their completed files (a compaction's plan made under a lease
#: that ran out: tests/write/test_fencing.py)
SERVICE_STALLS = [
    ("clean", "service_plan"),
    ("clean", "service_written"),
    ("compact", "service_written"),
]
TABLES = [("6", False), ("6", True), ("9", False), ("9", True)]
STALLED_PAST_LEASE = matrix(
    [(svc, point, v, mdt) for svc, point in SERVICE_STALLS for v, mdt in TABLES],
    [
        f"{svc}-{point.removeprefix('service_')}-{v}{'-mdt' if mdt else ''}"
        for svc, point in SERVICE_STALLS
        for v, mdt in TABLES
    ],
    {
        "filesystem": {
            "clean-plan-6",
            "clean-written-9-mdt",
            "compact-written-6-mdt",
            "compact-written-9",
        },
        "dynamodb": {"compact-written-9-mdt"},
    },
)


@pytest.mark.parametrize(
    ("where", "provider", "service", "point", "version", "mdt"),
    STALLED_PAST_LEASE,
    indirect=["where"],
)
def test_service_stalled_past_its_lease_is_fenced(
    where: tuple[str, dict, Any], provider: str, service: str, point: str, version: str, mdt: bool
) -> None:
    """``hudi-py clean`` or ``compact run`` (A) stops holding the table lock at ``point``: its
    plan made, or its completed file written. Its lease runs out and a writer takes the lock
    over and commits an upsert of every file group. A is continued:

    * a plan made under the lease is never written past it: A raises LockLostError;
    * a completed file A wrote before its lease ran out stands: the writer waited the lease
      out and saw it (a compaction's slice then holds the writer's log files); had it been
      written later, A withdraws it and raises LockLostError. Which of the two depends on how
      long the completion took under the lock; both are right;

    the next run of the service completes what is left pending, once, and hudi_ds and hudi-rs
    read every acknowledged row. (The in-process test below withdraws a completion every
    time.)"""
    st = _store(where, provider)
    c = ""
    if service == "clean":
        m = _clean_table(st, version, mdt)
        opts = {**st.opts(version, mdt), **COW, **st.short_lease, **CLEAN}
        args: tuple[str, ...] = ("clean",)
    else:
        m, c = _table(st, version, mdt)
        opts = {**st.opts(version, mdt), **st.short_lease}
        args = ("compact", "run")
    a = _cli(st, *args, options=opts, stall=point)
    try:
        wait_stopped(a, 120)
        t = trips(range(40), 5)
        st.write(t, opts)  # waits A's lease out, takes the lock over and commits
        m.apply(t)
    finally:
        a.send_signal(signal.SIGCONT)
    out, err = a.communicate(timeout=120)
    stood = a.returncode == 0
    if not stood:
        assert "LockLostError" in err, err[-3000:]
        assert json.loads(out)["exit_code"] == a.returncode
    assert not (stood and point == "service_plan"), out
    if service == "clean":
        if point == "service_plan":
            # A's plan never reached the timeline: the clean planned after the writer's
            # commit keeps the slices of ts=3 and 5 of each file group
            again = _finished(_cli(st, "clean", options=opts))
            assert again["clean"] is not None, again
            _the_clean(st, version, 8, 8)
        else:
            if not stood:  # withdrawn, inflight again: the next clean finishes its plan
                _finished(_cli(st, "clean", options=opts))
            # A's plan: the slice of ts=1 of each file group; ts=2, 3 and the writer's left
            _the_clean(st, version, 4, 12)
        st.check_rows(m, mdt)
    else:
        if not stood:
            assert not st.ctx().timeline().is_completed(c)  # withdrawn
            _wait_heartbeat_expired(st, c)
            done = _finished(_cli(st, "compact", "run", options=opts))
            assert [r["instant"] for r in done["compactions"]] == [c]
        _check_table(st, m, c, version, mdt)


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
    st = _store((str(tmp_path / "t"), {}, None), "filesystem")
    m = _clean_table(st, version, mdt)
    opts = {
        **st.opts(version, mdt),
        **st.short_lease,
        **CLEAN,
        "hoodie.write.lock.num_retries": "3",
    }
    hit = _lose_the_lock_after(st.path, "clean", monkeypatch)
    with pytest.raises(LockLostError):
        clean.clean(st.ctx(opts))
    monkeypatch.undo()
    (Path(st.path) / LOCK_FILE).unlink()  # the other holder released it
    (c,) = hit
    inst = st.ctx().timeline().get(c)
    assert inst is not None and inst.is_inflight  # withdrawn: pending again
    assert clean.clean(st.ctx(opts)).instant is None  # finished it first
    cleans = list(st.ctx().timeline().filter_actions("clean"))
    assert [(i.requested_time, i.is_completed) for i in cleans] == [(c, True)]
    st.check_rows(m, mdt)

    st = _store((str(tmp_path / "mor"), {}, None), "filesystem")
    m, c = _table(st, version, mdt)
    hit = _lose_the_lock_after(st.path, "compaction", monkeypatch)
    with pytest.raises(LockLostError):
        compaction.run_compaction(st.ctx(opts), c)
    monkeypatch.undo()
    (Path(st.path) / LOCK_FILE).unlink()
    assert hit == [c]
    assert not st.ctx().timeline().is_completed(c)
    _wait_heartbeat_expired(st, c)
    (res,) = compaction.run_compaction(st.ctx(opts), c)
    assert res.instant == c
    _check_table(st, m, c, version, mdt)


def test_base_file_a_rolled_back_attempt_left_is_cleaned(tmp_path: Path) -> None:
    """What no protocol can exclude: an attempt paused between writing a base file and
    checking afterwards, whose rollback ran meanwhile, killed instead of continued, leaves a
    base file of C that C's commit does not name. The next clean deletes it as debris."""
    st = _store((str(tmp_path / "t"), {}, None), "filesystem")
    m, c = _table(st, "6")
    (done,) = compaction.run_compaction(st.ctx(st.opts("6")), c)
    named = Path(st.path) / done.stats[0].path
    stray = named.with_name(named.name.replace("-1-", "-7-", 1))  # attempt 6's token
    assert stray != named
    stray.write_bytes(named.read_bytes())
    res = clean.clean(st.ctx(st.opts("6")))
    assert res.debris == [str(stray.relative_to(st.path))]
    assert not stray.exists() and named.exists()
    _check_table(st, m, c, "6")
