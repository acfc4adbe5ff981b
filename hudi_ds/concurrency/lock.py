"""The table lock: what every lock provider offers, and the fence around a completing write.

Lock providers (``hoodie.write.lock.provider``; Hudi's Java class names are accepted), each in
its own module, built from the options by :mod:`hudi_ds.concurrency.providers`:

* :class:`~hudi_ds.concurrency.file_system_lock.FileSystemLock`
  (``...FileSystemBasedLockProvider``, the default): the lock is the file ``.hoodie/lock``,
  created atomically if absent; it records its holder and an expiry, so a dead holder's lock is
  broken once it expires (``hoodie.write.lock.filesystem.expire``, minutes). Works on local and
  network file systems (anything with atomic create-if-absent and rename) and on object stores,
  where every write is conditional: created ``If-None-Match: *``, renewed by a heartbeat, taken
  over and released ``If-Match`` the ETag read -- of several writers breaking it exactly one
  gets it, and a retried request never lands on another holder's lock.
* :class:`~hudi_ds.concurrency.storage_lock.StorageBasedLock` (``...StorageBasedLockProvider``):
  for object stores (S3, GCS, Azure), Hudi 1.x's lock on conditional writes:
  ``.hoodie/.locks/table_lock.json`` holds ``{"expired", "validUntil", "owner"}``; it is created
  with ``If-None-Match: *``, and renewed by its holder's heartbeat, released (``expired: true``)
  or taken over once expired with an update conditional on the ETag it was read at
  (``If-Match``), so a Java writer with the same provider and hudi_ds exclude each other.
* :class:`~hudi_ds.concurrency.dynamodb_lock.DynamoDBLock`
  (``org.apache.hudi.aws.transaction.lock.DynamoDBBasedLockProvider``): Hudi's lock for tables
  shared with Java writers on AWS, an item of a DynamoDB table kept with the protocol of the AWS
  DynamoDB Lock Client that Hudi's provider uses (conditional ``PutItem`` / ``UpdateItem`` /
  ``DeleteItem`` on a record version number, a lease renewed by heartbeats); needs boto3
  (``pip install "boto3>=1.28"``).
* :class:`~hudi_ds.concurrency.in_process_lock.InProcessLock` (``...InProcessLockProvider``): a
  lock per table path shared by the threads of one process.

No provider decides that a lease ran out by comparing two hosts' wall clocks alone: the DynamoDB
lock times a holder's silence on the contender's monotonic clock, the file-system and storage
locks also require that the lock was not written for a whole lease on the storage's own clock
(:class:`~hudi_ds.concurrency.clock.StorageClock`). Every release is conditional on the lock
still being this provider's.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Protocol

from hudi_ds.errors import HudiError

#: a holder counts its lease as ending this much before the lease it wrote: the rates of two
#: hosts' monotonic clocks differ a little, and the holder times its lease from when it sent
#: the write, the taker from when it saw it
LEASE_MARGIN_S = 0.5

#: the spellings of ``hoodie.write.lock.provider`` each provider answers to (Hudi's class name
#: first, as error messages name it)
FS_LOCK_NAMES = (
    "org.apache.hudi.client.transaction.lock.FileSystemBasedLockProvider",
    "FileSystemBasedLockProvider",
    "filesystem",
)
STORAGE_LOCK_NAMES = (
    "org.apache.hudi.client.transaction.lock.StorageBasedLockProvider",
    "StorageBasedLockProvider",
    "storage",
)
IN_PROCESS_NAMES = (
    "org.apache.hudi.client.transaction.lock.InProcessLockProvider",
    "InProcessLockProvider",
    "in_process",
)
DYNAMODB_LOCK_NAMES = (
    "org.apache.hudi.aws.transaction.lock.DynamoDBBasedLockProvider",
    "DynamoDBBasedLockProvider",
    "dynamodb",
)


class LockTimeoutError(HudiError):
    """The table lock could not be acquired in time."""


class TableLock(Protocol):
    """What writers and table services ask of every lock provider (Hudi's ``LockProvider``)."""

    def acquire(self) -> None:
        """Take the lock, waiting for it.

        Raises:
            LockTimeoutError: it could not be taken in time.
        """

    def confirm(self) -> None:
        """Prove the lock is still held by a read of it.

        Raises:
            LockLostError: another process took it over.
        """

    def held_until(self) -> float:
        """The ``time.monotonic()`` reading before which no other process could hold the lock."""

    def release(self) -> None:
        """Release the lock if this provider holds it (conditional: never another holder's)."""


def lock_fence(lock: TableLock) -> Callable[[float | None], None]:
    """``fence(at)``: raise :class:`~hudi_ds.errors.LockLostError` unless ``lock`` was held at
    ``at`` (``time.monotonic()``; None: now) -- without a read when ``at`` is before the lease
    this process last wrote could run out (``held_until``: a taker must wait it out, so it
    sees what was written before), else by a read of the lock (``confirm``)."""

    def fence(at: float | None) -> None:
        if (time.monotonic() if at is None else at) < lock.held_until():
            return
        lock.confirm()

    return fence


@contextmanager
def held(lock: TableLock | None) -> Iterator[TableLock | None]:
    """Hold ``lock`` for the block (no-op for None: a single writer); yields it, for
    :meth:`TableLock.confirm` around a completing write."""
    if lock is None:
        yield None
        return
    lock.acquire()
    try:
        yield lock
    finally:
        lock.release()
