"""Lock providers under lost answers: a fault proxy in front of the local S3 server (and its
DynamoDB) lets a lock's write through to the server, loses the answer, throttles the client's
first retries (503) and parks the next one until other writers have acted. Whatever the retry
then does, the lock never has two holders: every acquire, renewal and release is conditional
on the version this provider holds (no provider deletes or overwrites a lock it lost).

Before release became a conditional put, the file-system lock on S3 released with a read and an
unconditional delete: the retried delete landed after the next writer had taken the lock and
deleted it, and a third writer took the lock while the second held it.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable

import pytest

from hudi_ds.concurrency.dynamodb_lock import DynamoDBLock
from hudi_ds.concurrency.file_system_lock import FileSystemLock
from hudi_ds.concurrency.storage_lock import StorageBasedLock
from hudi_ds.errors import LockLostError, StorageError
from hudi_ds.storage import Storage
from tests.fault_proxy import FaultProxy
from tests.moto_server import ACCESS_KEY, REGION, SECRET_KEY, MotoServer

Lock = FileSystemLock | StorageBasedLock | DynamoDBLock
#: the DynamoDB operation of each lock call (the proxy tells them by ``X-Amz-Target``)
DDB_OPS = {"acquire": "PutItem", "renew": "UpdateItem", "release": "DeleteItem"}


def maker(kind: str, moto_s3: MotoServer, s3_uri: str, lease_s: float) -> Callable[[str], Lock]:
    """A factory of ``kind`` locks on one table whose requests go to an endpoint (the server's or
    the proxy's); leases of ``lease_s`` renewed every tenth (a third for DynamoDB)."""
    table = f"locks-{uuid.uuid4().hex[:8]}"

    def make(endpoint: str) -> Lock:
        if kind == "dynamodb":
            return DynamoDBLock(
                table=table,
                partition_key="t",
                region=REGION,
                endpoint_url=endpoint,
                credentials={"aws_access_key_id": ACCESS_KEY, "aws_secret_access_key": SECRET_KEY},
                lease_ms=int(lease_s * 1000),
                retries=100_000,
            )
        so = {**moto_s3.storage_options(), "aws_endpoint_url": endpoint}
        storage = Storage(s3_uri, storage_options=so)
        if kind == "storage":
            return StorageBasedLock(storage, lease_s, lease_s / 10, wait_ms=5, retries=100_000)
        return FileSystemLock(storage, lease_s, wait_ms=5, retries=100_000)

    return make


def holds(lock: Lock) -> bool:
    """Whether ``lock`` holds the lock without a break (its ``confirm``)."""
    try:
        lock.confirm()
    except LockLostError:
        return False
    return True


def lose_then_hold(proxy: FaultProxy, kind: str, op: str) -> None:
    """The next write of ``op``: applied with its answer lost, its retries answered 503 twice,
    the next retry parked until :meth:`FaultProxy.let_go`."""
    for fault in ("lost", "transient", "transient", "held"):
        if kind == "dynamodb":
            proxy.force(fault, target=DDB_OPS[op])
        else:
            proxy.force(fault, methods=("PUT", "POST", "DELETE"))


@pytest.mark.parametrize("kind", ["filesystem", "storage", "dynamodb"])
@pytest.mark.parametrize("op", ["acquire", "renew", "release"])
def test_a_lost_answer_and_a_late_retry_never_make_two_holders(
    moto_s3: MotoServer, s3_uri: str, kind: str, op: str
) -> None:
    """Writer A's ``op`` lands, its answer is lost, its retry lands only after writer B tried
    (and, after A's release, took) the lock: then exactly one of A and B holds it, and C cannot
    take it."""
    make = maker(kind, moto_s3, s3_uri, lease_s=60.0)  # no background renewal in the test
    with FaultProxy(moto_s3.endpoint) as proxy:
        a, b, c = make(proxy.endpoint), make(moto_s3.endpoint), make(moto_s3.endpoint)
        if op != "acquire":
            a.acquire()
        lose_then_hold(proxy, kind, op)
        result: list[object] = []
        call = {"acquire": a.acquire, "renew": a.renew, "release": a.release}[op]
        t = threading.Thread(target=lambda: result.append(call()))
        t.start()
        proxy.wait_held()
        if op == "release":
            b.acquire()  # A's release landed: B takes the lock while A's retry is parked
        else:
            assert not b.try_acquire()  # A's write landed: A holds the lock
        proxy.let_go()
        t.join(60)
        assert result, f"A's {op} did not return"
        assert proxy.counts["lost"] == 1 and proxy.counts["held"] == 1, proxy.counts
        winner = b if op == "release" else a
        if op == "renew":
            assert result == [True]  # A's renewal found its own landed write
        assert [holds(x) for x in (a, b)] == [winner is a, winner is b]
        assert not c.try_acquire()
        assert holds(winner)
        winner.release()
        assert c.try_acquire()
        c.release()


@pytest.mark.parametrize("kind", ["filesystem", "storage"])
def test_a_renewal_that_failed_but_landed_is_still_ours(
    moto_s3: MotoServer, s3_uri: str, kind: str
) -> None:
    """A renewal applied by the store whose answer was lost, with no retry left: the call
    fails, yet the lock holds its body. The holder recognises it (its exact body) -- it still
    holds the lock, renews and releases it -- instead of taking itself for taken over."""
    with FaultProxy(moto_s3.endpoint) as proxy:
        so = {**moto_s3.storage_options(), "aws_endpoint_url": proxy.endpoint, "max_retries": "0"}
        storage = Storage(s3_uri, storage_options=so)
        a = make_lock_for(kind, storage)
        assert a.try_acquire()
        proxy.force("lost", methods=("PUT",))
        with pytest.raises(StorageError):
            a.renew()
        a.confirm()
        assert a.renew() and not a.lost
        a.confirm()
        a.release()
        b = make_lock_for(kind, Storage(s3_uri, storage_options=moto_s3.storage_options()))
        assert b.try_acquire()  # released: free at once
        b.release()


def make_lock_for(kind: str, storage: Storage) -> Lock:
    return StorageBasedLock(storage, 60, 6) if kind == "storage" else FileSystemLock(storage, 60)


# A critical section: the holder counts itself in, checks it is alone and still holds the lock
# (``confirm``), and counts itself out.
@pytest.mark.parametrize(
    ("kind", "lease_s", "lost", "transient"),
    [
        ("filesystem", 6.0, 0.2, 0.1),
        # the storage-based and DynamoDB locks were conditional throughout already
        pytest.param("storage", 6.0, 0.2, 0.1, marks=pytest.mark.slow),
        # boto3 tries a call 4 times: lower rates, so that no call fails for good
        pytest.param("dynamodb", 6.0, 0.08, 0.04, marks=pytest.mark.slow),
    ],
)
def test_three_writers_under_random_lost_answers_never_hold_the_lock_together(
    moto_s3: MotoServer, s3_uri: str, kind: str, lease_s: float, lost: float, transient: float
) -> None:
    """Three threads take the lock 5 times each through a proxy that loses the answer of a
    seeded fraction of the requests it lets through (and throttles some): acquires, renewals
    (one long holding per thread outlasts a heartbeat) and releases all meet lost answers; no
    two holdings overlap and each holder still holds the lock when it leaves."""
    make = maker(kind, moto_s3, s3_uri, lease_s)
    with FaultProxy(moto_s3.endpoint, seed=5) as proxy:
        locks = [make(proxy.endpoint) for _ in range(3)]
        guard = threading.Lock()
        inside: list[str] = []
        overlaps: list[list[str]] = []
        broken: list[str] = []
        errors: list[BaseException] = []

        def writer(i: int) -> None:
            lock = locks[i]
            try:
                for n in range(5):
                    lock.acquire()
                    with guard:
                        inside.append(f"w{i}")
                        if len(inside) > 1:
                            overlaps.append(list(inside))
                    # the third holding outlasts a heartbeat: a renewal meets the faults too
                    time.sleep(lock.heartbeat_s + 0.2 if n == 2 else 0.05)
                    if not holds(lock):
                        broken.append(f"w{i}#{n}")
                    with guard:
                        inside.remove(f"w{i}")
                    lock.release()
            except BaseException as e:  # reported below
                errors.append(e)

        proxy.set_rates(transient=transient, lost=lost)
        threads = [threading.Thread(target=writer, args=(i,)) for i in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        proxy.set_rates()
        assert not errors, errors
        assert not overlaps, f"two holders: {overlaps}"
        assert not broken, f"holders that lost the lock inside: {broken}"
        assert proxy.counts["lost"] >= 5, proxy.counts
