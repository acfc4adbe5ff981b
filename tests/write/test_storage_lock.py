"""The storage-based lock (Hudi's ``StorageBasedLockProvider``) on a real local S3 server: a lease
in ``.hoodie/.locks/table_lock.json`` kept by conditional writes (``If-None-Match: *`` to create,
``If-Match: <etag>`` to renew, release or break an expired lease)."""

from __future__ import annotations

import itertools
import json
import os
import threading
import time
from pathlib import Path

import pyarrow as pa
import pytest

import hudi_ds
from hudi_ds.concurrency.lock import LockTimeoutError
from hudi_ds.concurrency.providers import make_lock
from hudi_ds.concurrency.storage_lock import (
    AUDIT_CONFIG_FILE,
    AUDIT_FOLDER,
    STORAGE_LOCK_FILE,
    StorageBasedLock,
)
from hudi_ds.errors import ConfigError
from hudi_ds.storage import ObjectStorage, Storage
from tests.conftest import (
    OCC_OPTIONS,
    assert_rows,
    finish_process,
    hudi_rs_table,
    spawn_python,
    table_options,
)
from tests.fault_proxy import FaultProxy
from tests.moto_server import MotoServer
from tests.write.lock_helpers import wait_until_written_ago

PROVIDER = "org.apache.hudi.client.transaction.lock.StorageBasedLockProvider"


def _storage(moto_s3: MotoServer, uri: str) -> ObjectStorage:
    s = Storage(uri, storage_options=moto_s3.storage_options())
    assert isinstance(s, ObjectStorage)
    return s


def _lease(storage: Storage) -> dict:
    return dict(json.loads(storage.read_bytes(STORAGE_LOCK_FILE)))


def test_conditional_update_lets_exactly_one_of_two_writers_win(
    moto_s3: MotoServer, s3_uri: str
) -> None:
    s = _storage(moto_s3, s3_uri)
    v0 = s.put_if_version("x", b"0", None)
    assert v0 is not None and v0.e_tag
    assert s.put_if_version("x", b"other", None) is None  # exists: If-None-Match fails
    data, v = s.read_with_version("x")
    assert (data, v) == (b"0", v0)
    won = [s.put_if_version("x", b"a", v), s.put_if_version("x", b"b", v)]
    assert won[0] is not None and won[1] is None
    assert s.read_with_version("x") == (b"a", won[0])
    with pytest.raises(FileNotFoundError):
        s.read_with_version("missing")


def test_lease_format_and_a_write_under_the_storage_lock(moto_s3: MotoServer, s3_uri: str) -> None:
    s = _storage(moto_s3, s3_uri)
    a = StorageBasedLock(s, validity_s=30, heartbeat_s=3, wait_ms=10, retries=3)
    b = StorageBasedLock(s, validity_s=30, heartbeat_s=3, wait_ms=10, retries=3)
    before = time.time() * 1000
    a.acquire()
    lease = _lease(s)
    # Hudi's StorageLockData: {"expired", "validUntil" (epoch ms), "owner"}
    assert lease["owner"] == a.owner and lease["expired"] is False
    assert before + 29_000 <= lease["validUntil"] <= time.time() * 1000 + 30_000
    assert not b.try_acquire()
    a.release()
    assert _lease(s) == {**lease, "expired": True}
    assert b.try_acquire()
    b.release()
    # a multi-writer write on S3 takes it (and leaves it released)
    opts = {
        **table_options("sl", table_type="MERGE_ON_READ"),
        **OCC_OPTIONS,
        "hoodie.write.lock.provider": PROVIDER,
    }
    rows = pa.table({"id": ["a", "b"], "ts": [1, 2], "v": ["x", "y"]})
    hudi_ds.write(s3_uri, rows, opts, storage_options=moto_s3.storage_options())
    lease = _lease(s)
    assert lease["expired"] is True and lease["owner"] not in (a.owner, b.owner)
    got = hudi_ds.read(s3_uri, storage_options=moto_s3.storage_options())
    assert_rows(got, [("a", 1, "x"), ("b", 2, "y")], ["id", "ts", "v"])


def _race(contenders: list[StorageBasedLock]) -> list[bool]:
    """Each contender's ``try_acquire`` at the same moment (threads behind a barrier)."""
    barrier = threading.Barrier(len(contenders))
    won = [False] * len(contenders)

    def contend(i: int) -> None:
        barrier.wait()
        won[i] = contenders[i].try_acquire()

    threads = [threading.Thread(target=contend, args=(i,)) for i in range(len(contenders))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return won


def test_expired_lease_is_broken_by_exactly_one_of_two_contenders(
    moto_s3: MotoServer, s3_uri: str
) -> None:
    s = _storage(moto_s3, s3_uri)
    for round_ in range(2):
        dead = {"expired": False, "validUntil": int(time.time() * 1000) - 5000, "owner": "dead"}
        s.write_bytes(STORAGE_LOCK_FILE, json.dumps(dead).encode())
        contenders = [StorageBasedLock(s, validity_s=1, heartbeat_s=0.1) for _ in range(2)]
        # expired by its validUntil, but written just now on the store's clock: not yet dead
        assert _race(contenders) == [False, False]
        wait_until_written_ago(s, STORAGE_LOCK_FILE, 2.6)
        won = _race(contenders)
        assert sum(won) == 1, (round_, won)
        winner = contenders[won.index(True)]
        assert _lease(s)["owner"] == winner.owner
        winner.release()


def test_lost_answers_to_conditional_puts_and_unreadable_leases(
    moto_s3: MotoServer, s3_uri: str
) -> None:
    """The client retries a conditional put whose answer was lost (it had landed): the lease is
    still taken, renewed and released by its writer. A lock body that is not a lease is neither
    taken nor broken (the timeout names it)."""
    with FaultProxy(moto_s3.endpoint, 0) as proxy:
        so = {**moto_s3.storage_options(), "aws_endpoint_url": proxy.endpoint}
        s = Storage(s3_uri, storage_options=so)
        a = StorageBasedLock(s, validity_s=30, heartbeat_s=3)
        proxy.force("lost", header="if-none-match")
        assert a.try_acquire()
        proxy.force("lost", header="if-match")
        assert a.renew()
        proxy.force("lost", header="if-match")
        a.release()
        assert proxy.counts["lost"] == 3
    direct = _storage(moto_s3, s3_uri)
    assert _lease(direct)["owner"] == a.owner and _lease(direct)["expired"] is True
    direct.write_bytes(STORAGE_LOCK_FILE, b"garbage")
    b = StorageBasedLock(direct, validity_s=30, heartbeat_s=3, wait_ms=1, retries=2)
    with pytest.raises(LockTimeoutError, match="unreadable lock body b'garbage'"):
        b.acquire()
    assert direct.read_bytes(STORAGE_LOCK_FILE) == b"garbage"


def test_heartbeat_keeps_a_live_holders_lease(moto_s3: MotoServer, s3_uri: str) -> None:
    s = _storage(moto_s3, s3_uri)
    a = StorageBasedLock(s, validity_s=2.0, heartbeat_s=0.2)
    b = StorageBasedLock(s, validity_s=2.0, heartbeat_s=0.2)
    assert a.try_acquire()
    first = _lease(s)["validUntil"]
    # past the first lease's validity + drift, so only the heartbeat keeps the lease alive; and
    # waiting for a renewal seen, not for a fixed time a loaded machine's heartbeat may miss
    deadline = time.monotonic() + 60
    while time.time() < first / 1000 + 1.0 or _lease(s)["validUntil"] <= first + 1000:
        assert time.monotonic() < deadline, "no renewal of the lease in 60 s"
        time.sleep(0.05)
    assert not b.try_acquire()
    lease = _lease(s)
    assert lease["owner"] == a.owner and lease["validUntil"] > first + 1000
    a.release()
    assert b.try_acquire()
    b.release()


def test_release_by_a_non_holder_is_refused(moto_s3: MotoServer, s3_uri: str) -> None:
    s = _storage(moto_s3, s3_uri)
    a = StorageBasedLock(s, validity_s=30, heartbeat_s=3)
    outsider = StorageBasedLock(s, validity_s=30, heartbeat_s=3)
    assert a.try_acquire()
    raw = s.read_bytes(STORAGE_LOCK_FILE)
    outsider.release()  # never held it: writes nothing
    assert s.read_bytes(STORAGE_LOCK_FILE) == raw
    a.release()
    # a holder whose lease expired (no heartbeat in time) and was taken over cannot release
    # the new holder's lease: its If-Match on the old ETag fails
    stale = StorageBasedLock(s, validity_s=1, heartbeat_s=60)
    assert stale.try_acquire()
    wait_until_written_ago(s, STORAGE_LOCK_FILE, 2.6)
    taker = StorageBasedLock(s, validity_s=1, heartbeat_s=60)
    assert taker.try_acquire()
    stale.release()
    lease = _lease(s)
    assert lease["owner"] == taker.owner and lease["expired"] is False
    taker.release()


def test_storage_lock_refuses_local_paths_and_bad_periods(
    tmp_path: Path, moto_s3: MotoServer, s3_uri: str
) -> None:
    with pytest.raises(ConfigError, match="FileSystemBasedLockProvider"):
        make_lock(PROVIDER, Storage(str(tmp_path)), 10, 100, 3)
    s = _storage(moto_s3, s3_uri)
    with pytest.raises(ConfigError, match="'hoodie.write.lock.storage.validity.timeout.secs'=5"):
        make_lock(PROVIDER, s, 10, 100, 3, validity_s=5, heartbeat_s=1)
    with pytest.raises(ConfigError, match="10 x 'hoodie.write.lock.storage.heartbeat.poll.secs'"):
        make_lock(PROVIDER, s, 10, 100, 3, validity_s=60, heartbeat_s=30)
    with pytest.raises(ConfigError, match="needs an object store"):
        hudi_ds.write(
            str(tmp_path / "t"),
            pa.table({"id": ["a"], "ts": [1]}),
            {**table_options("t"), **OCC_OPTIONS, "hoodie.write.lock.provider": PROVIDER},
        )


# A writer process: for ``seconds`` it upserts batches of random keys into an S3 table under the
# storage lock (MOR, bucket index: non-blocking), logs each batch whose write returned. Prints
# ``{"batches"}``.
S3_WRITER = r"""
import json, random, sys, time
import hudi_ds
from tests.builders import random_upsert
path, opts, so, seconds, seed, log = (sys.argv[1], json.loads(sys.argv[2]),
    json.loads(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5]), sys.argv[6])
rng = random.Random(seed)
end = time.time() + seconds
n = 0
with open(log, "w") as out:
    while time.time() < end:
        keys, ts, t = random_upsert(rng, seed)
        hudi_ds.write(path, t, opts, storage_options=so)
        out.write(json.dumps({"keys": keys, "ts": ts}) + "\n")
        out.flush()
        n += 1
print(json.dumps({"batches": n}))
"""


@pytest.mark.slow
def test_two_writers_on_s3_under_the_storage_lock(
    moto_s3: MotoServer, s3_uri: str, tmp_path: Path
) -> None:
    """Two processes write one S3 table for 20 s under the storage lock (the acceptance's 30 s
    with ``HUDI_DS_S3_LOCK_SECONDS=30``: 20 s by default for the suite's time); Hudi's lock audit
    (``.hoodie/.locks/audit/*.jsonl``, turned on by ``audit_enabled.json``) records each
    holding's START..END, and no two holdings overlap; no acknowledged batch is lost."""
    so = {k: str(v) for k, v in moto_s3.storage_options().items()}
    s = _storage(moto_s3, s3_uri)
    opts = {
        **table_options("sl2", partition="p", table_type="MERGE_ON_READ"),
        **OCC_OPTIONS,
        "hoodie.write.lock.provider": PROVIDER,
        "hoodie.write.lock.wait_time_ms": "20",
        "hoodie.write.lock.storage.validity.timeout.secs": "10",
        "hoodie.write.lock.storage.heartbeat.poll.secs": "1",
        "hoodie.clean.automatic": "false",
    }
    seed_rows = pa.table({"id": ["seed"], "ts": [0], "p": ["p0"], "who": [0]})
    hudi_ds.write(s3_uri, seed_rows, opts, storage_options=so)
    s.write_bytes(AUDIT_CONFIG_FILE, b'{"STORAGE_LOCK_AUDIT_SERVICE_ENABLED": true}')
    seconds = float(os.environ.get("HUDI_DS_S3_LOCK_SECONDS", "20"))
    procs = []
    for seed in (1, 2):
        log = tmp_path / f"w{seed}.jsonl"
        args = (s3_uri, json.dumps(opts), json.dumps(so), str(seconds), str(seed), str(log))
        procs.append((spawn_python(S3_WRITER, *args), log))
    state: dict[str, tuple] = {"seed": ("seed", 0, "p0", 0)}
    batches = []
    for who, (proc, log) in enumerate(procs, start=1):
        finish_process(proc, seconds + 180)
        batches.append([json.loads(x) for x in log.read_text().splitlines()])
        for b in batches[-1]:
            for k in b["keys"]:
                if f"k{k}" not in state or b["ts"] >= state[f"k{k}"][1]:
                    state[f"k{k}"] = (f"k{k}", b["ts"], f"p{k % 2}", who)
    assert all(len(b) >= 3 for b in batches), [len(b) for b in batches]
    expected = list(state.values())
    columns = ["id", "ts", "p", "who"]
    assert_rows(hudi_ds.read(s3_uri, storage_options=so), expected, columns)
    assert_rows(hudi_rs_table(s3_uri, storage_options=so), expected, columns)
    assert [
        i
        for i in hudi_ds.HudiTable(s3_uri, storage_options=so).timeline.instants
        if not i.is_completed
    ] == []
    # the lock's history: every holding START..END, none overlapping another
    holdings = []
    for f in s.list_files(AUDIT_FOLDER):
        recs = [json.loads(x) for x in s.read_text(f.path).splitlines()]
        states = [r["state"] for r in recs]
        assert states[0] == "START" and states[-1] == "END", (f.path, states)
        assert len({r["ownerId"] for r in recs}) == 1
        holdings.append((recs[0]["timestamp"], recs[-1]["timestamp"], recs[0]["ownerId"]))
    holdings.sort()
    assert len(holdings) >= sum(len(b) for b in batches), len(holdings)  # each commit holds it
    for (_, end, o1), (start, _, o2) in itertools.pairwise(holdings):
        assert end <= start, f"holdings of {o1} and {o2} overlap: {end} > {start}"
