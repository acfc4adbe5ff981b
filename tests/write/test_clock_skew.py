"""Two writers whose clocks disagree, under optimistic concurrency control: an update that is
acknowledged after a compaction was scheduled survives the compaction.

Table (MOR, bucket index with 2 buckets, keys ``k0..k5``): A inserts every key (``ts=1``,
``v=a``), then updates every key (``ts=2``, ``v=a2``: every file group has a log file). Writer
B, a child process whose wall clock lags A's by 2 s or 10 minutes and which has its own temp
folder (another host: no shared instant-time claim file), upserts ``k0..k2`` (``ts=3``,
``v=b``) and stops after writing its log files, before its commit. A schedules a compaction
of every file group; B then commits (acknowledged). Final: ``k0..k2`` from B, ``k3..k5`` from
A's update -- read by hudi_ds and hudi-rs before and after the compaction completes.

On table version 9 (timeline layout 2) a log file joins the file slice its completion time
falls in: B's completion time must come after the compaction's requested time, whatever B's
clock says, or B's logs stay in the old slice, which the compaction's plan does not hold, and
B's rows are gone once it completes. Version 6 (layout 1) slices by the instant time in the
log file's name: B's commit moves its logs into the compaction's slice. See
docs/concurrency.md, "Time: instant and completion times".

Under every lock provider another host shares: the file-system lock on a local table, the
storage-based lock and the DynamoDB lock on a table on a local S3 server (moto). ``make test``
runs the file-system cases and one case of each other provider; ``make test-stress`` the whole
matrix (both skews, versions 6 and 9, with and without the metadata table).
"""

from __future__ import annotations

import json
import logging
import signal
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import hudi_ds
from hudi_ds.concurrency.clock import MTIME_RESOLUTION_S
from hudi_ds.concurrency.file_system_lock import FileSystemLock
from hudi_ds.concurrency.storage_lock import StorageBasedLock
from hudi_ds.services import ServiceContext, compaction
from hudi_ds.storage import Storage
from tests.conftest import (
    OCC_OPTIONS,
    assert_rows,
    finish_process,
    hudi_rs_table,
    spawn_python,
    table_options,
    wait_stopped,
)
from tests.faketime import skewed_env
from tests.write import test_fencing
from tests.write.test_lock_skew import _setup

COLUMNS = ["id", "ts", "v", "_hoodie_commit_time"]

#: the fencing tests' fixture: (table path, storage options, moto server) of a case's store
where = test_fencing.where

# writer B: one upsert, prints its instant
B_WRITER = r"""
import json, sys, threading, time
# libfaketime 0.9.10 with DONT_FAKE_MONOTONIC fails time.sleep (clock_nanosleep: EINVAL); the
# lock waits and lease renewals sleep
time.sleep = lambda s: threading.Event().wait(s)
import pyarrow as pa
import hudi_ds
path, opts, so = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3])
t = pa.table({"id": ["k0", "k1", "k2"], "ts": [3] * 3, "v": ["b"] * 3})
print(json.dumps({"instant": hudi_ds.write(path, t, opts, storage_options=so or None)}))
"""


def _options(version: int, mdt: bool, lock: dict[str, str] | None = None) -> dict[str, str]:
    return {
        **table_options("skew", table_type="MERGE_ON_READ"),
        **OCC_OPTIONS,
        "hoodie.write.lock.wait_time_ms": "20",
        **(lock or {}),
        "hoodie.write.table.version": str(version),
        "hoodie.metadata.enable": str(mdt).lower(),
        # no service in the writers: A schedules and runs the one compaction itself
        "hoodie.datasource.compaction.async.enable": "false",
        "hoodie.clean.automatic": "false",
        "hoodie.archive.automatic": "false",
    }


def _lock(provider: str, moto: Any) -> dict[str, str]:
    """The lock options of ``provider`` every process of a case shares (the file-system lock
    at its defaults: nobody stalls holding it here)."""
    if provider == "filesystem":
        return {}
    lock = test_fencing.lock_options(provider, moto)
    if provider == "storage":
        lock["hoodie.write.lock.wait_time_ms"] = "100"
    return lock


#: (version, skew of B's clock in seconds, metadata table): every combination
SKEWS = [(v, skew, mdt) for v in (9, 6) for skew in (-2.0, -600.0) for mdt in (False, True)]
#: the cases ``make test`` runs; the others are ``stress`` cases
DEFAULT_SKEWS = {
    "filesystem": {
        (9, -2.0, False),
        (9, -600.0, False),
        (9, -2.0, True),
        (6, -2.0, False),
        (6, -600.0, False),
    },
    "storage": {(9, -600.0, True)},
    "dynamodb": {(6, -2.0, False)},
}
PROVIDER_STORES = {"filesystem": "local", "storage": "s3", "dynamodb": "s3"}


def _marks(provider: str, run_by_default: bool) -> tuple[Any, ...]:
    """A case on S3 is ``slow``; one left out of ``make test`` is a ``stress`` case."""
    marks = () if provider == "filesystem" else (pytest.mark.slow,)
    return marks if run_by_default else (*marks, pytest.mark.stress)


def _skew_id(provider: str, version: int, skew: float, mdt: bool) -> str:
    where = {"filesystem": "", "storage": "s3-storage-", "dynamodb": "s3-dynamodb-"}[provider]
    return f"{where}v{version}-{'2s' if skew == -2.0 else '10min'}{'-mdt' if mdt else ''}"


SKEW_MATRIX = [
    pytest.param(
        PROVIDER_STORES[provider],
        provider,
        version,
        skew,
        mdt,
        id=_skew_id(provider, version, skew, mdt),
        marks=_marks(provider, (version, skew, mdt) in DEFAULT_SKEWS[provider]),
    )
    for provider in ("filesystem", "storage", "dynamodb")
    for version, skew, mdt in SKEWS
]


@pytest.mark.parametrize(
    ("where", "provider", "version", "skew", "mdt"), SKEW_MATRIX, indirect=["where"]
)
def test_lagging_writer_commit_survives_compaction(
    tmp_path: Path,
    where: tuple[str, dict, Any],
    provider: str,
    version: int,
    skew: float,
    mdt: bool,
) -> None:
    path, so, moto = where
    sopt = so or None
    opts = _options(version, mdt, _lock(provider, moto))
    keys = [f"k{i}" for i in range(6)]
    t1 = pa.table({"id": keys, "ts": [1] * 6, "v": ["a"] * 6})
    hudi_ds.write(path, t1, opts, storage_options=sopt)
    t2 = pa.table({"id": keys, "ts": [2] * 6, "v": ["a2"] * 6})
    a2 = hudi_ds.write(path, t2, opts, storage_options=sopt)
    host_b = tmp_path / "host-b-tmp"
    host_b.mkdir()
    env = {**skewed_env(skew), "TMPDIR": str(host_b), "HUDI_DS_STALL_AT": "after_files"}
    b = spawn_python(B_WRITER, path, json.dumps(opts), json.dumps(so), env=env)
    storage = Storage(path, storage_options=sopt)
    try:
        wait_stopped(b)
        c = compaction.schedule_compaction(ServiceContext.open(storage, opts))
        assert c is not None
    finally:
        b.send_signal(signal.SIGCONT)
    tb = finish_process(b, 120)["instant"]
    assert tb is not None and tb < c  # B started before the compaction was scheduled

    want = [(k, 3, "b", tb) for k in keys[:3]] + [(k, 2, "a2", a2) for k in keys[3:]]

    # hudi-rs lists the files through the metadata table when asked to (versions 8+)
    rs_options = {"hoodie.metadata.enable": "true"} if mdt else None
    assert_rows(hudi_ds.read(path, storage_options=sopt), want, COLUMNS)
    if version == 9:
        assert_rows(hudi_rs_table(path, rs_options, sopt), want, COLUMNS)
    # (version 6: hudi-rs 0.5.0 does not read the log files of a pending compaction's slice,
    # a known gap of that reader -- compared once the compaction completed, below)
    [res] = compaction.run_compaction(ServiceContext.open(storage, opts))
    assert res.instant == c and res.operations == 2
    assert_rows(hudi_ds.read(path, storage_options=sopt), want, COLUMNS)
    assert_rows(hudi_rs_table(path, rs_options, sopt), want, COLUMNS)
    tl = hudi_ds.HudiTable(path, storage_options=sopt).timeline
    assert not [i for i in tl if not i.is_completed]
    if version == 9:
        # B completed after the compaction was requested, and its completion time says so
        assert tl.completion_time(tb) > c


def test_new_instants_are_requested_after_every_completion_time(tmp_path: Path) -> None:
    """Version 9: the last commit completed on a host whose clock ran 5 minutes ahead (its
    completion time is 5 minutes after this clock). The next write, and a compaction scheduled
    after it, are requested after that completion time -- a compaction requested before it
    would also take that commit's logs as its own slice's -- and complete after it too."""
    from hudi_ds.timeline import format_instant_time, timeline_dir

    path = tmp_path / "t"
    opts = _options(9, False)
    keys = [f"k{i}" for i in range(6)]
    hudi_ds.write(str(path), pa.table({"id": keys, "ts": [1] * 6, "v": ["a"] * 6}), opts)
    t1 = hudi_ds.write(str(path), pa.table({"id": keys, "ts": [2] * 6, "v": ["a2"] * 6}), opts)
    folder = path / timeline_dir(2)
    [done] = [p for p in folder.iterdir() if p.name.startswith(f"{t1}_")]
    ahead = format_instant_time(int(time.time() * 1000) + 5 * 60_000)
    done.rename(folder / f"{t1}_{ahead}.deltacommit")

    t2 = hudi_ds.write(str(path), pa.table({"id": ["k0"], "ts": [3], "v": ["b"]}), opts)
    assert t2 is not None and t2 > ahead
    c = compaction.schedule_compaction(ServiceContext.open(str(path), opts))
    assert c is not None and c > hudi_ds.HudiTable(str(path)).timeline.completion_time(t2)
    compaction.run_compaction(ServiceContext.open(str(path), opts))
    want = [("k0", 3, "b", t2)] + [(k, 2, "a2", t1) for k in keys[1:]]
    assert_rows(hudi_ds.read(str(path)), want, COLUMNS)
    assert_rows(hudi_rs_table(str(path)), want, COLUMNS)


# a table service on a host whose clock is off: ``hudi-py`` with the wall clock faked
SKEWED_CLI = r"""
import sys, threading, time
# libfaketime 0.9.10 with DONT_FAKE_MONOTONIC fails time.sleep (clock_nanosleep: EINVAL)
time.sleep = lambda s: threading.Event().wait(s)
from hudi_ds.cli import main
sys.exit(main(sys.argv[1:]))
"""

#: the least time a writer must wait for the lock after the service stopped holding it: the
#: lease (tests/write/test_fencing.py's, the same for every process) less the time the
#: holder's last lease write may precede its stop (the storage-based lock renews every second)
#: and 0.5 s. A lease taken by the holder's wall clock alone would be taken at once from a
#: holder 10 minutes behind.
LEASE_WAIT = {"filesystem": 1.0, "storage": 8.5, "dynamodb": 1.5}

SERVICE_SKEWS = [(v, skew) for v in (9, 6) for skew in (-2.0, -600.0)]
DEFAULT_SERVICE_SKEWS = {
    "filesystem": {(9, -600.0), (6, -2.0)},
    "storage": set(),
    "dynamodb": {(9, -600.0)},
}
SERVICE_SKEW_MATRIX = [
    pytest.param(
        PROVIDER_STORES[provider],
        provider,
        version,
        skew,
        id=_skew_id(provider, version, skew, False),
        # three processes, one of them waiting a lease out: slow on every lock
        marks=(
            pytest.mark.slow,
            *_marks(provider, (version, skew) in DEFAULT_SERVICE_SKEWS[provider]),
        ),
    )
    for provider in ("filesystem", "storage", "dynamodb")
    for version, skew in SERVICE_SKEWS
]


@pytest.mark.parametrize(
    ("where", "provider", "version", "skew"), SERVICE_SKEW_MATRIX, indirect=["where"]
)
def test_lagging_service_holding_the_lock_is_not_taken_over_early(
    tmp_path: Path, where: tuple[str, dict, Any], provider: str, version: int, skew: float
) -> None:
    """A compaction scheduler on a host whose clock lags (2 s, 10 minutes) stops holding the
    table lock, its plan made (``service_plan``). A writer on the real clock waits its lease
    out -- it does not take the lock while the lease is live, however old the holder's clock
    makes it look -- takes it over and commits. The scheduler, continued, withdraws its plan
    (LockLostError); scheduled and run again on the lagging host, the compaction keeps the
    writer's acknowledged rows, read by hudi_ds and hudi-rs."""
    path, so, moto = where
    sopt = so or None
    opts = _options(version, False, test_fencing.lock_options(provider, moto))
    if provider == "storage":
        opts["hoodie.write.lock.wait_time_ms"] = "100"
    keys = [f"k{i}" for i in range(6)]
    hudi_ds.write(
        path, pa.table({"id": keys, "ts": [1] * 6, "v": ["a"] * 6}), opts, storage_options=sopt
    )
    t2 = pa.table({"id": keys, "ts": [2] * 6, "v": ["a2"] * 6})
    a2 = hudi_ds.write(path, t2, opts, storage_options=sopt)
    service = {k: v for k, v in opts.items() if not k.startswith("hoodie.datasource")}
    flags = [a for k, v in service.items() for a in ("-o", f"{k}={v}")]
    flags += [a for k, v in so.items() for a in ("--storage-option", f"{k}={v}")]
    host = tmp_path / "service-host-tmp"
    host.mkdir()
    env = {**skewed_env(skew), "TMPDIR": str(host)}

    a = spawn_python(
        SKEWED_CLI,
        "compact",
        "schedule",
        path,
        *flags,
        env={**env, "HUDI_DS_STALL_AT": "service_plan"},
    )
    try:
        wait_stopped(a, 120)
        stopped = time.monotonic()
        t3 = pa.table({"id": keys[:3], "ts": [3] * 3, "v": ["w"] * 3})
        w = hudi_ds.write(path, t3, opts, storage_options=sopt)
        waited = time.monotonic() - stopped
    finally:
        a.send_signal(signal.SIGCONT)
    _, err = a.communicate(timeout=120)
    assert a.returncode == 1 and "LockLostError" in err, err[-3000:]
    assert waited >= LEASE_WAIT[provider], f"the writer took a live lease after {waited:.1f} s"

    # scheduled and run again on the lagging host, in one process
    s = spawn_python(SKEWED_CLI, "compact", "run", "--schedule", path, "--json", *flags, env=env)
    out, err = s.communicate(timeout=120)
    assert s.returncode == 0, err[-3000:]
    (c,) = [r["instant"] for r in json.loads(out)["compactions"]]
    # requested after the writer's instant (and, v9, its completion), however far back the
    # scheduler's clock is, so the plan holds the writer's log files
    assert c > w
    want = [(k, 3, "w", w) for k in keys[:3]] + [(k, 2, "a2", a2) for k in keys[3:]]
    assert_rows(hudi_ds.read(path, storage_options=sopt), want, COLUMNS)
    assert_rows(hudi_rs_table(path, None, sopt), want, COLUMNS)
    tl = hudi_ds.HudiTable(path, storage_options=sopt).timeline
    assert not [i for i in tl if not i.is_completed]
    if version == 9:
        assert c > tl.completion_time(w)


@pytest.mark.parametrize("kind", ["filesystem-local", "filesystem", "storage"])
def test_a_dead_holders_lease_is_taken_without_naming_a_skew(
    request: pytest.FixtureRequest, tmp_path: Path, kind: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A holder on the same clock stops renewing its 2 s lease (it died); a contender polling
    every 20 ms takes it over once it ran out on both clocks. Between the lease's end plus the
    drift margin on the wall clock and its end plus the mtime margin on the storage's, the
    contender waits -- and that is no clock skew: no "clock skew" error is logged (it was, on
    every takeover, naming a skew of "about 0 s")."""
    lease = 2.0
    moto = request.getfixturevalue("moto_s3") if kind != "filesystem-local" else None
    uri = request.getfixturevalue("s3_uri") if kind != "filesystem-local" else ""
    holder, where = _setup(kind, lease, moto, uri, tmp_path)  # type: ignore[arg-type]
    storage = Storage(where["uri"], storage_options=where["so"])
    if kind == "storage":
        contender: Any = StorageBasedLock(storage, lease, lease / 10, wait_ms=20, retries=0)
    else:
        contender = FileSystemLock(storage, lease, wait_ms=20, retries=0)
    with caplog.at_level(logging.ERROR, logger="hudi_ds.write"):
        assert holder.try_acquire()
        heart = getattr(holder, "_heart", None)
        if heart is not None:
            heart.stop()  # no renewal from now on: the holder is dead
        start = time.monotonic()
        took = False
        while not took and time.monotonic() < start + 30:
            took = contender.try_acquire()
            if not took:
                time.sleep(0.02)
    assert took, contender.last_seen
    assert time.monotonic() - start >= lease - MTIME_RESOLUTION_S
    skew = [r.getMessage() for r in caplog.records if "clock skew" in r.getMessage()]
    assert not skew, skew
    contender.release()


#: two writers: the cases ``make test`` runs (the file-system lock's); the others are stress
DEFAULT_WRITER_SKEWS = {"filesystem": {(9, -600.0), (6, -2.0)}, "storage": set(), "dynamodb": set()}
WRITER_SKEW_MATRIX = [
    pytest.param(
        PROVIDER_STORES[provider],
        provider,
        version,
        skew,
        id=_skew_id(provider, version, skew, False),
        marks=_marks(provider, (version, skew) in DEFAULT_WRITER_SKEWS[provider]),
    )
    for provider in ("filesystem", "storage", "dynamodb")
    for version, skew in SERVICE_SKEWS
]


@pytest.mark.parametrize(
    ("where", "provider", "version", "skew"), WRITER_SKEW_MATRIX, indirect=["where"]
)
def test_lagging_writer_commits_after_a_writer_on_the_real_clock(
    tmp_path: Path, where: tuple[str, dict, Any], provider: str, version: int, skew: float
) -> None:
    """Two writers: B (clock 2 s or 10 minutes behind) upserts ``k0..k2`` and stops before
    its commit; A, on the real clock, upserts ``k1`` and ``k3..k5`` and commits; B commits.
    Both are acknowledged (MOR bucket index: no conflict), B's instant is dated before A's by
    its clock, yet it completed after A: on version 9 its completion time comes after A's, so
    a reader as of A's completion does not see B; every acknowledged row (``k1`` from B, the
    greater ordering value) is read by hudi_ds and hudi-rs, before and after a compaction."""
    path, so, moto = where
    sopt = so or None
    opts = _options(version, False, _lock(provider, moto))
    keys = [f"k{i}" for i in range(6)]
    t1 = pa.table({"id": keys, "ts": [1] * 6, "v": ["a"] * 6})
    a1 = hudi_ds.write(path, t1, opts, storage_options=sopt)
    host_b = tmp_path / "host-b-tmp"
    host_b.mkdir()
    env = {**skewed_env(skew), "TMPDIR": str(host_b), "HUDI_DS_STALL_AT": "after_files"}
    b = spawn_python(B_WRITER, path, json.dumps(opts), json.dumps(so), env=env)
    try:
        wait_stopped(b)
        ta = pa.table({"id": ["k1", *keys[3:]], "ts": [2] * 4, "v": ["a2"] * 4})
        a2 = hudi_ds.write(path, ta, opts, storage_options=sopt)
    finally:
        b.send_signal(signal.SIGCONT)
    tb = finish_process(b, 120)["instant"]
    assert tb is not None and tb < a2  # B's instant was requested first

    want = [(k, 3, "b", tb) for k in keys[:3]] + [(k, 2, "a2", a2) for k in keys[3:]]
    assert_rows(hudi_ds.read(path, storage_options=sopt), want, COLUMNS)
    assert_rows(hudi_rs_table(path, None, sopt), want, COLUMNS)
    tl = hudi_ds.HudiTable(path, storage_options=sopt).timeline
    assert not [i for i in tl if not i.is_completed]
    if version == 9:
        assert tl.completion_time(tb) > tl.completion_time(a2) > tl.completion_time(a1)
    storage = Storage(path, storage_options=sopt)
    c = compaction.schedule_compaction(ServiceContext.open(storage, opts))
    assert c is not None and c > tb
    [res] = compaction.run_compaction(ServiceContext.open(storage, opts))
    assert res.instant == c and res.operations == 2
    assert_rows(hudi_ds.read(path, storage_options=sopt), want, COLUMNS)
    assert_rows(hudi_rs_table(path, None, sopt), want, COLUMNS)
