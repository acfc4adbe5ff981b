"""Hudi's ``DynamoDBBasedLockProvider`` against the DynamoDB of a real local moto server: the
AWS DynamoDB Lock Client's item (``key``, ``ownerName``, ``leaseDuration``,
``recordVersionNumber``), conditional puts, heartbeats, takeover of a dead holder's lock, and two
writer processes on one S3 table under it."""

from __future__ import annotations

import itertools
import json
import signal
import threading
import time
import uuid
import warnings
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pytest

import hudi_ds
from hudi_ds.concurrency.dynamodb_lock import DDB_KEY, DDB_LEASE, DDB_OWNER, DDB_RVN, DynamoDBLock
from hudi_ds.concurrency.lock import LockTimeoutError
from hudi_ds.concurrency.providers import table_lock
from hudi_ds.config import Options
from hudi_ds.errors import ConfigError, IgnoredOptionWarning
from hudi_ds.storage import Storage
from tests.conftest import (
    assert_rows,
    finish_process,
    hudi_rs_table,
    spawn_python,
    table_options,
    wait_stopped,
)
from tests.moto_server import ACCESS_KEY, REGION, SECRET_KEY, MotoServer

PROVIDER = "org.apache.hudi.aws.transaction.lock.DynamoDBBasedLockProvider"


def ddb_options(moto_s3: MotoServer, table: str, lease_ms: int = 2000) -> dict[str, str]:
    """The options of a multi-writer under the DynamoDB lock on the moto server."""
    return {
        "hoodie.write.concurrency.mode": "optimistic_concurrency_control",
        "hoodie.write.lock.provider": PROVIDER,
        "hoodie.write.lock.dynamodb.table": table,
        "hoodie.write.lock.dynamodb.region": REGION,
        "hoodie.write.lock.dynamodb.endpoint_url": moto_s3.endpoint,
        "hoodie.aws.access.key": ACCESS_KEY,
        "hoodie.aws.secret.key": SECRET_KEY,
        "hoodie.write.lock.wait_time_ms": str(lease_ms),
    }


def make(moto_s3: MotoServer, table: str, key: str = "t1", lease_ms: int = 2000) -> DynamoDBLock:
    return DynamoDBLock(
        table=table,
        partition_key=key,
        region=REGION,
        endpoint_url=moto_s3.endpoint,
        credentials={"aws_access_key_id": ACCESS_KEY, "aws_secret_access_key": SECRET_KEY},
        lease_ms=lease_ms,
        retries=20,
    )


@pytest.fixture
def ddb_table() -> str:
    return f"locks-{uuid.uuid4().hex[:8]}"


def test_item_acquire_and_release(moto_s3: MotoServer, ddb_table: str) -> None:
    a, b = make(moto_s3, ddb_table), make(moto_s3, ddb_table)
    # the table Hudi creates: hash key "key" (S), on demand
    desc = a.client.describe_table(TableName=ddb_table)["Table"]
    assert desc["KeySchema"] == [{"AttributeName": "key", "KeyType": "HASH"}]
    assert desc["BillingModeSummary"]["BillingMode"] == "PAY_PER_REQUEST"
    assert a.try_acquire() and a.holds
    item = a.read_item()
    assert item is not None
    assert set(item) == {DDB_KEY, DDB_OWNER, DDB_LEASE, DDB_RVN}
    assert (item[DDB_KEY], item[DDB_OWNER], item[DDB_LEASE]) == ("t1", a.owner, "2000")
    uuid.UUID(item[DDB_RVN])
    assert not b.try_acquire() and not b.holds  # held: b only starts watching it
    assert not b.try_acquire()
    a.release()
    assert a.read_item() is None and not a.holds  # released = deleted, as Hudi's options
    assert b.try_acquire()
    # another table's key is another lock
    c = make(moto_s3, ddb_table, key="t2")
    assert c.try_acquire()
    b.release()
    c.release()


@pytest.mark.slow
def test_heartbeat_keeps_the_lock_and_expiry_hands_it_over(
    moto_s3: MotoServer, ddb_table: str
) -> None:
    a, b = make(moto_s3, ddb_table, lease_ms=2000), make(moto_s3, ddb_table, lease_ms=2000)
    a.acquire()
    first = a.read_item()
    # a live holder renews (a new record version every third of the lease): b never gets it
    deadline = time.monotonic() + 3.0
    while time.monotonic() < deadline:
        assert not b.try_acquire()
        time.sleep(0.2)
    renewed = a.read_item()
    assert first and renewed and renewed[DDB_RVN] != first[DDB_RVN]
    assert renewed[DDB_OWNER] == a.owner
    # the holder dies (its heartbeat stops, nothing released): b takes it after one lease
    assert a._heart is not None
    a._heart.stop()
    t0 = time.monotonic()
    b.acquire()
    # not before one whole lease after the dead holder's last renewal (sent at a._renewed)
    assert time.monotonic() - a._renewed >= 2.0
    assert time.monotonic() - t0 < 15
    item = b.read_item()
    assert item is not None and item[DDB_OWNER] == b.owner
    # the old holder learns it lost the lock; its release deletes nothing
    assert not a.renew() and a.lost and not a.holds
    a.release()
    assert b.read_item() == item
    b.release()
    assert b.read_item() is None


def test_exactly_one_of_several_contenders_wins(moto_s3: MotoServer, ddb_table: str) -> None:
    locks = [make(moto_s3, ddb_table) for _ in range(4)]
    barrier = threading.Barrier(len(locks))
    won: list[bool] = [False] * len(locks)

    def contend(i: int) -> None:
        barrier.wait()
        won[i] = locks[i].try_acquire()

    threads = [threading.Thread(target=contend, args=(i,)) for i in range(len(locks))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(won) == 1, won
    holder = locks[won.index(True)]
    assert holder.read_item()[DDB_OWNER] == holder.owner  # type: ignore[index]
    holder.release()


def test_a_released_item_kept_by_another_client_is_acquired(
    moto_s3: MotoServer, ddb_table: str
) -> None:
    """The lock client with ``deleteLockOnRelease=false`` keeps the item with ``isReleased``."""
    a = make(moto_s3, ddb_table)
    a.client.put_item(
        TableName=ddb_table,
        Item={
            "key": {"S": "t1"},
            "ownerName": {"S": "java-writer"},
            "leaseDuration": {"S": "600000"},
            "recordVersionNumber": {"S": str(uuid.uuid4())},
            "isReleased": {"S": "1"},
        },
    )
    assert a.try_acquire()
    item = a.read_item()
    assert item is not None and item[DDB_OWNER] == a.owner and "isReleased" not in item
    a.release()


def test_lost_answers_to_the_lock_writes(moto_s3: MotoServer, ddb_table: str) -> None:
    """A conditional write whose answer was lost lands; the client's retry then fails its
    condition. The put, the heartbeat's update and the release's delete each recognise their
    own landed write (owner and record version) instead of taking the lock as someone else's."""
    a = make(moto_s3, ddb_table)
    client = a.client

    doubled: list[str] = []

    def retried(call: str) -> Callable[..., object]:
        real = getattr(client, call)

        def twice(**kwargs: object) -> object:
            real(**kwargs)  # lands; its answer is lost
            doubled.append(call)
            return real(**kwargs)  # the retry: ConditionalCheckFailedException

        return twice

    for call in ("put_item", "update_item", "delete_item"):
        object.__setattr__(client, call, retried(call))
    try:
        assert a.try_acquire() and a.holds
        assert a._heart is not None
        a._heart.stop()  # no background heartbeat: renew() is called below
        before = a.read_item()
        assert a.renew() and not a.lost
        after = a.read_item()
        assert before and after and after[DDB_RVN] != before[DDB_RVN]
        assert after[DDB_OWNER] == a.owner
        a.release()
        assert a.read_item() is None and not a.holds
        assert doubled == ["put_item", "update_item", "delete_item"]
    finally:
        for call in ("put_item", "update_item", "delete_item"):
            client.__dict__.pop(call, None)


def test_acquire_times_out_naming_the_holder(moto_s3: MotoServer, ddb_table: str) -> None:
    """A live holder (heartbeating) keeps the lock: the contender gives up after one lease of
    the holder plus ``num_retries`` polls, naming the holder."""
    a = make(moto_s3, ddb_table, lease_ms=1000)
    b = make(moto_s3, ddb_table, lease_ms=1000)
    b.retries = 5
    a.acquire()
    t0 = time.monotonic()
    with pytest.raises(LockTimeoutError, match=f"held by owner {a.owner}, lease 1 s"):
        b.acquire()
    assert 1.0 < time.monotonic() - t0 < 10
    assert a.holds and not a.lost
    a.release()


def test_provisioned_table_and_options(moto_s3: MotoServer, ddb_table: str, s3_uri: str) -> None:
    so = moto_s3.storage_options()
    storage = Storage(s3_uri, storage_options=so)
    opts = {
        **ddb_options(moto_s3, ddb_table, lease_ms=3000),
        "hoodie.write.lock.dynamodb.billing_mode": "PROVISIONED",
        "hoodie.write.lock.dynamodb.read_capacity": "7",
        "hoodie.write.lock.dynamodb.write_capacity": "3",
        "hoodie.table.name": "my_table",
    }
    # credentials from the table's S3 storage options when no hoodie.aws.* key is given
    del opts["hoodie.aws.access.key"], opts["hoodie.aws.secret.key"]
    lock = table_lock(storage, Options.of(opts))
    assert isinstance(lock, DynamoDBLock)
    assert (lock.partition_key, lock.lease_ms, lock.heartbeat_s) == ("my_table", 3000, 1.0)
    desc = lock.client.describe_table(TableName=ddb_table)["Table"]
    assert desc["BillingModeSummary"]["BillingMode"] == "PROVISIONED"
    tp = desc["ProvisionedThroughput"]
    assert (tp["ReadCapacityUnits"], tp["WriteCapacityUnits"]) == (7, 3)
    explicit = table_lock(
        storage, Options.of({**opts, "hoodie.write.lock.dynamodb.partition_key": "pk"})
    )
    assert isinstance(explicit, DynamoDBLock) and explicit.partition_key == "pk"
    # Hudi's default lease: 60 s (wait_time_ms not given)
    del opts["hoodie.write.lock.wait_time_ms"]
    dflt = table_lock(storage, Options.of(opts))
    assert isinstance(dflt, DynamoDBLock) and (dflt.lease_ms, dflt.heartbeat_s) == (60000, 20.0)


def test_bad_dynamodb_options_are_refused(
    moto_s3: MotoServer, ddb_table: str, s3_uri: str, tmp_path: Path
) -> None:
    so = moto_s3.storage_options()
    rows = pa.table({"id": ["a"], "ts": [1]})
    base = {**table_options("dq"), **ddb_options(moto_s3, ddb_table)}
    bad = [
        ({"hoodie.write.lock.dynamodb.tabel": "x"}, "unknown option 'hoodie.write.lock.dynamodb"),
        ({"hoodie.write.lock.dynamodb.billing_mode": "FREE"}, "billing_mode"),
        ({"hoodie.write.lock.dynamodb.read_capacity": "0"}, "read_capacity"),
        ({"hoodie.write.lock.dynamodb.table_creation_timeout": "soon"}, "table_creation_timeout"),
        ({"hoodie.write.lock.wait_time_ms": "100"}, "lease duration"),
        ({"hoodie.aws.secret.key": None}, "go together"),
    ]
    for extra, match in bad:
        opts = {k: v for k, v in {**base, **extra}.items() if v is not None}
        with pytest.raises(ConfigError, match=match):
            hudi_ds.write(s3_uri, rows, opts, storage_options=so)
    assert not Storage(s3_uri, storage_options=so).exists(".hoodie/hoodie.properties")
    # dynamodb keys with another provider: accepted, with a warning saying why they do nothing
    local = {
        **table_options("dq"),
        "hoodie.write.concurrency.mode": "optimistic_concurrency_control",
        "hoodie.write.lock.dynamodb.table": "x",
    }
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        hudi_ds.write(str(tmp_path / "t"), rows, local)
    assert any(
        issubclass(w.category, IgnoredOptionWarning) and "dynamodb.table" in str(w.message)
        for w in caught
    )


# A writer process: for ``seconds`` it upserts batches into an S3 table under the DynamoDB lock,
# logging each batch whose write returned (a batch refused by a commit conflict is not logged:
# its rows must not be visible), and each holding of the lock (acquired .. released,
# timed inside the holding) to ``<log>.hold``.
DDB_WRITER = r"""
import json, os, random, sys, time
import pyarrow as pa
import hudi_ds
from hudi_ds.errors import CommitConflictError, LockLostError
from hudi_ds.concurrency import dynamodb_lock as L
path, opts, so, seconds, seed, log = (sys.argv[1], json.loads(sys.argv[2]),
    json.loads(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5]), sys.argv[6])
hold = open(log + ".hold", "w")
acquire, release = L.DynamoDBLock.acquire, L.DynamoDBLock.release
def logged_acquire(self):
    acquire(self)
    self._t0 = time.time()
def logged_release(self):
    held = self.holds
    t1 = time.time()
    release(self)
    if held:
        hold.write(json.dumps([self._t0, t1, self.owner]) + "\n")
        hold.flush()
L.DynamoDBLock.acquire, L.DynamoDBLock.release = logged_acquire, logged_release
rng = random.Random(seed)
end = time.time() + seconds
n = conflicts = lost = 0
with open(log, "w") as out:
    while time.time() < end and not os.path.exists(log + ".stop"):
        keys = rng.sample(range(100), 10)
        ts = time.time_ns()
        t = pa.table({"id": [f"k{k}" for k in keys], "ts": [ts] * len(keys),
                      "p": [f"p{k % 2}" for k in keys], "who": [seed] * len(keys)})
        try:
            hudi_ds.write(path, t, opts, storage_options=so)
        except CommitConflictError:  # under OCC: the later of two writers of a file group
            conflicts += 1
            continue
        except LockLostError:  # stalled past its lease: withdrawn, not committed
            lost += 1
            continue
        out.write(json.dumps({"keys": keys, "ts": ts}) + "\n")
        out.flush()
        n += 1
print(json.dumps({"batches": n, "conflicts": conflicts, "lost": lost}))
"""


@pytest.mark.slow
def test_two_writers_on_s3_under_the_dynamodb_lock(
    moto_s3: MotoServer, s3_uri: str, ddb_table: str, tmp_path: Path
) -> None:
    """Two processes upsert one MOR S3 table under the DynamoDB lock (a 2 s lease); writer 1
    stops (SIGSTOP) inside its third commit, holding the lock after its conflict check, until
    writer 2 has taken the lock over and committed twice (each second delta commit is followed
    by a compaction). Writer 1's stalled commit raises
    LockLostError (it is not completed); the holdings of the lock that committed never overlap,
    no acknowledged batch is lost, hudi_ds and hudi-rs read the model."""
    so = {k: str(v) for k, v in moto_s3.storage_options().items()}
    opts = {
        **table_options("ddb2", partition="p", table_type="MERGE_ON_READ"),
        **ddb_options(moto_s3, ddb_table, lease_ms=2_000),
        "hoodie.clean.automatic": "false",
        # compactions after writer 2's commits supersede the slices writer 1's logs hang off
        "hoodie.compact.inline": "true",
        "hoodie.compact.inline.max.delta.commits": "2",
    }
    seed_rows = pa.table({"id": ["seed"], "ts": [0], "p": ["p0"], "who": [0]})
    hudi_ds.write(s3_uri, seed_rows, opts, storage_options=so)
    seconds = 120.0  # an upper bound: the writers stop once the test has seen its case
    procs = []
    for seed in (1, 2):
        log = tmp_path / f"w{seed}.jsonl"
        log.touch()
        args = (s3_uri, json.dumps(opts), json.dumps(so), str(seconds), str(seed), str(log))
        env = {"HUDI_DS_STALL_AT": "commit_locked:3"} if seed == 1 else None
        procs.append((spawn_python(DDB_WRITER, *args, env=env), log))
    stalled, other_log = procs[0][0], procs[1][1]
    try:
        wait_stopped(stalled, 120)
        before = len(other_log.read_text().splitlines())
        deadline = time.monotonic() + 120
        while len(other_log.read_text().splitlines()) < before + 2:
            assert time.monotonic() < deadline, "writer 2 never committed while writer 1 stalled"
            time.sleep(0.05)
    finally:
        stalled.send_signal(signal.SIGCONT)
    time.sleep(1.0)  # both write on a little after the stall
    for _, log in procs:
        Path(f"{log}.stop").touch()
    state: dict[str, tuple] = {"seed": ("seed", 0, "p0", 0)}
    batches, holdings, results = [], [], []
    for who, (proc, log) in enumerate(procs, start=1):
        results.append(finish_process(proc, seconds + 180))
        batches.append([json.loads(x) for x in log.read_text().splitlines()])
        holdings += [json.loads(x) for x in Path(f"{log}.hold").read_text().splitlines()]
        for b in batches[-1]:
            for k in b["keys"]:
                if f"k{k}" not in state or b["ts"] >= state[f"k{k}"][1]:
                    state[f"k{k}"] = (f"k{k}", b["ts"], f"p{k % 2}", who)
    assert results[0]["lost"] >= 1, results
    assert all(len(b) >= 2 for b in batches), [len(b) for b in batches]
    expected = list(state.values())
    columns = ["id", "ts", "p", "who"]
    assert_rows(hudi_ds.read(s3_uri, storage_options=so), expected, columns)
    assert_rows(hudi_rs_table(s3_uri, storage_options=so), expected, columns)
    table = hudi_ds.HudiTable(s3_uri, storage_options=so)
    assert [i for i in table.timeline.instants if not i.is_completed] == []
    # each commit held the lock; no two holdings of the lock that was kept overlap (a lost
    # holding is not logged: its provider no longer holds the lock when it releases)
    assert len(holdings) >= sum(len(b) for b in batches), len(holdings)
    holdings.sort()
    for (_, end, o1), (start, _, o2) in itertools.pairwise(holdings):
        assert end <= start, f"holdings of {o1} and {o2} overlap: {end} > {start}"
