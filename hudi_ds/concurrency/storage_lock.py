"""Hudi's ``StorageBasedLockProvider``: a lease in ``.hoodie/.locks/table_lock.json`` on an
object store, kept by conditional writes."""

from __future__ import annotations

import json
import logging
import threading
import time
import uuid

from hudi_ds.concurrency.clock import CLOCK_DRIFT_S, StorageClock
from hudi_ds.concurrency.heartbeat import Periodic
from hudi_ds.concurrency.lock import (
    FS_LOCK_NAMES,
    LEASE_MARGIN_S,
    STORAGE_LOCK_NAMES,
    LockTimeoutError,
)
from hudi_ds.errors import ConfigError, LockLostError
from hudi_ds.storage import ObjectStorage, Storage
from hudi_ds.storage_types import ObjectVersion

log = logging.getLogger("hudi_ds.write")

#: Hudi's ``StorageLockClient.getLockFolderPath`` (``HoodieTableMetaClient.LOCKS_FOLDER_NAME``)
LOCKS_FOLDER = ".hoodie/.locks"
#: ``StorageBasedLockProvider.DEFAULT_TABLE_LOCK_FILE_NAME``
STORAGE_LOCK_FILE = f"{LOCKS_FOLDER}/table_lock.json"
#: the lock audit (``StorageLockProviderAuditService``): on while this file says
#: ``{"STORAGE_LOCK_AUDIT_SERVICE_ENABLED": true}``; one ``<start>_<owner>.jsonl`` per holding
AUDIT_CONFIG_FILE = f"{LOCKS_FOLDER}/audit_enabled.json"
AUDIT_FOLDER = f"{LOCKS_FOLDER}/audit"


class StorageBasedLock:
    """Hudi's ``StorageBasedLockProvider``: a lease in ``.hoodie/.locks/table_lock.json`` on an
    object store, kept by conditional writes (``hudi-client-common``
    ``org/apache/hudi/client/transaction/lock/StorageBasedLockProvider.java``, its lock body
    ``models/StorageLockData.java``, its keys ``config/StorageBasedLockConfig.java``).

    * acquire: read the lock with its ETag; if it is absent, or ``expired``, or its holder is
      dead, write ``{"expired": false, "validUntil": now + validity, "owner": <this
      provider>}`` -- with ``If-None-Match: *`` when absent, else ``If-Match: <the ETag
      read>``. Of several contenders (or breakers of a dead holder's lease) exactly one write
      succeeds; the lease is never deleted and re-created. A holder is dead when its
      ``validUntil`` (+0.5 s drift) passed on this host's clock -- Hudi's rule -- *and* the
      lock object was not written for a whole validity on the storage's clock (its
      Last-Modified, :class:`StorageClock`): a lease that looks expired to this host but was
      renewed recently means the two hosts' clocks disagree by more than the lease; it is not
      taken over, and the error names the skew.
    * a heartbeat thread renews the lease every ``heartbeat_s`` (``If-Match`` the holder's
      ETag); when a renewal finds the lock taken by another owner it stops (the lease was lost).
    * release: stop the heartbeat, then write ``"expired": true`` ``If-Match`` the holder's ETag;
      a provider that does not hold the lock writes nothing.

    A conditional put retried by the client after a lost response, whose first attempt landed,
    is recognised as ours (:meth:`~hudi_ds.storage.ObjectStorage.put_if_version`), and so is a
    put that failed after the client's retries but had landed (by its exact body, which holds
    this provider's owner id and lease end).

    Raises:
        ConfigError: ``storage`` is not an object store (use the file-system lock there), or
            the validity / heartbeat periods break Hudi's rules (named).
    """

    def __init__(
        self,
        storage: Storage,
        validity_s: float = 300.0,
        heartbeat_s: float = 30.0,
        wait_ms: int = 100,
        retries: int = 600,
    ) -> None:
        if not isinstance(storage, ObjectStorage):
            raise ConfigError(
                f"{STORAGE_LOCK_NAMES[0]} needs an object store (s3://, gs://, abfs://) with "
                f"conditional writes; {storage.full_path()} is a file system path: use "
                f"hoodie.write.lock.provider={FS_LOCK_NAMES[0]}"
            )
        if heartbeat_s <= 0 or validity_s <= 0:
            raise ConfigError(
                f"storage lock validity {validity_s}s and heartbeat {heartbeat_s}s must be > 0"
            )
        self.storage: ObjectStorage = storage
        self.validity_s = validity_s
        self.heartbeat_s = heartbeat_s
        self.wait_s = wait_ms / 1000
        self.retries = retries
        #: this provider's owner id (Hudi uses a random UUID per provider)
        self.owner = str(uuid.uuid4())
        self._mutex = threading.RLock()
        self._held: tuple[bytes, ObjectVersion] | None = None
        #: a body whose put failed after the client's retries: it may have landed all the same
        self._unknown: bytes | None = None
        self._heart: Periodic | None = None
        self.clock = StorageClock(storage, f"{LOCKS_FOLDER}/clock_{self.owner}.probe")
        self._audit: list[str] = []
        self._audit_path: str | None = None
        self._audit_txn_ms = 0
        #: the lease found by the last attempt to acquire (for error messages)
        self.last_seen = "no lease"
        #: True once a renewal found the lease taken by another owner while held
        self.lost = False
        #: monotonic: when the lease last written runs out (see FileSystemLock._deadline)
        self._deadline = 0.0

    def held_until(self) -> float:
        """See :meth:`FileSystemLock.held_until`."""
        with self._mutex:
            return self._deadline - LEASE_MARGIN_S

    # -- the lock body -----------------------------------------------------------------------
    def _body(self, expired: bool, valid_until_ms: int) -> bytes:
        return json.dumps(
            {"expired": expired, "validUntil": valid_until_ms, "owner": self.owner}
        ).encode()

    @staticmethod
    def parse(raw: bytes) -> tuple[bool, int, str] | None:
        """``(expired, validUntil ms, owner)`` of a lock body; None if it is not one."""
        try:
            body = json.loads(raw)
            return bool(body["expired"]), int(body["validUntil"]), str(body["owner"])
        except (ValueError, TypeError, KeyError):
            return None

    def _read(self) -> tuple[bytes, ObjectVersion] | None:
        try:
            return self.storage.read_with_version(STORAGE_LOCK_FILE)
        except FileNotFoundError:
            return None

    def _put(self, body: bytes, version: ObjectVersion | None) -> ObjectVersion | None:
        """Conditional put of ``body`` (a put retried after a lost response is still ours: see
        :meth:`ObjectStorage.put_if_version`)."""
        return self.storage.put_if_version(STORAGE_LOCK_FILE, body, version)

    @property
    def holds(self) -> bool:
        """This provider holds a lease it has not released or lost."""
        with self._mutex:
            return self._held is not None

    # -- acquire / renew / release -------------------------------------------------------------
    def try_acquire(self) -> bool:
        """One attempt (non-blocking). Returns True if this provider now holds the lock."""
        with self._mutex:
            if self._held is not None:
                return True  # re-entrant, as Hudi's
            current = self._read()
            if current is not None:
                held = self.parse(current[0])
                if held is None:
                    # not a lock body (a conditional put never leaves a torn one): neither taken
                    # nor broken, as Hudi's provider (an unreadable lock is an unknown state)
                    self.last_seen = f"an unreadable lock body {current[0][:80]!r}"
                    log.warning("%s holds %s", STORAGE_LOCK_FILE, self.last_seen)
                    return False
                self.last_seen = f"owner {held[2]}, valid until {held[1]} ms"
                if not held[0] and not self._dead(current[0], held):
                    return False
                if not held[0]:
                    log.warning("breaking the expired storage lock of %s", held[2])
            body = self._body(False, int((time.time() + self.validity_s) * 1000))
            sent = time.monotonic()
            version = self._put(body, None if current is None else current[1])
            if version is None:
                return False  # another writer won the race
            self._held = (body, version)
            self._deadline = sent + self.validity_s
            self.lost = False
            self._audit_start()
            self._heart = Periodic(
                self.renew, self.heartbeat_s, f"storage-lock-{self.owner[:8]}", "storage lock"
            )
            return True

    def _dead(self, raw: bytes, held: tuple[bool, int, str]) -> bool:
        """Whether the live-looking lease ``raw`` (``held`` parsed) is its dead holder's.

        Hudi's rule alone (``StorageBasedLockProvider.isLockStillValid``: ``validUntil`` +
        drift passed on this host's clock) compares two hosts' wall clocks: a host whose clock
        runs ahead of the holder's by more than the validity would take over a lease that is
        renewed every heartbeat. So the lease must also not have been written for a whole
        validity on the storage's own clock (its Last-Modified against :class:`StorageClock`);
        all writers of a table share the validity, a table-level lock setting.
        """
        if time.time() <= held[1] / 1000 + CLOCK_DRIFT_S:
            return False
        over, ago = self.clock.lease_outlived(STORAGE_LOCK_FILE, self.validity_s)
        if over or ago is None:
            return over
        self.last_seen = (
            f"owner {held[2]}, valid until {held[1]} ms: expired by this host's clock but "
            f"renewed {ago:.1f} s ago on the storage's clock (validity {self.validity_s:g} s): "
            f"{self.clock.skew_note(held[1] / 1000 - self.validity_s, ago)}; not taken over"
        )
        where = f"the storage lock {self.storage.full_path(STORAGE_LOCK_FILE)}"
        self.clock.alarm_skew(raw, where, self.last_seen, ago, self.validity_s)
        return False

    def acquire(self) -> None:
        """Take the lock, retrying every ``hoodie.write.lock.wait_time_ms``.

        Raises:
            LockTimeoutError: not acquired after ``hoodie.write.lock.num_retries`` attempts
                (names the holder seen last, or the clock skew found).
        """
        for _ in range(self.retries + 1):
            if self.try_acquire():
                return
            time.sleep(self.wait_s)
        raise LockTimeoutError(
            f"could not acquire {self.storage.full_path(STORAGE_LOCK_FILE)} after "
            f"{self.retries} retries (last seen: {self.last_seen})"
        )

    def renew(self) -> bool:
        """Extend the held lease by ``validity_s`` (one heartbeat). Returns False when there is
        nothing to renew or the lease was taken by another owner (then it is dropped)."""
        with self._mutex:
            if self._held is None:
                return False
            now = time.time()
            body = self._body(False, int((now + self.validity_s) * 1000))
            sent = time.monotonic()
            version = self._put_held(body)
            if version is None:
                current = self._read()
                if current is not None and current[1] == self._held[1]:
                    return True  # unchanged: a transient refusal, the next beat retries
                log.error(
                    "storage lock %s was taken by another owner while %s held it",
                    self.storage.full_path(STORAGE_LOCK_FILE),
                    self.owner,
                )
                self._held = None
                self.lost = True
                return False
            self._held = (body, version)
            self._deadline = sent + self.validity_s
            self._audit_record("RENEW", now)
            return True

    def _put_held(self, body: bytes) -> ObjectVersion | None:
        """Put ``body`` ``If-Match`` the held version; the new version, or None when the lease
        is no longer this provider's. A put whose outcome was unknown (it failed after the
        client's retries) and that had landed is recognised by its exact body: no other writer
        writes this provider's owner id."""
        assert self._held is not None
        try:
            version = self._put(body, self._held[1])
        except OSError:
            self._unknown = body
            raise
        if version is not None or self._unknown is None:
            return version
        current = self._read()
        if current is None or current[0] != self._unknown:
            return None
        self._unknown = None
        self._held = current
        return self._put(body, current[1])

    def confirm(self) -> None:
        """Prove that this provider held the lease without a break since it took it: the lock
        object is still at the version this provider last wrote (a takeover writes a new
        version; this provider's own renewals are conditional on its version).

        Raises:
            LockLostError: the lease was lost, or the object is at another version.
        """
        with self._mutex:
            held = self._held
            current = self._read() if held is not None else None
            if held is not None and current is not None and current[0] == self._unknown:
                # a renewal that failed after the client's retries had landed
                self._held = held = current
                self._unknown = None
            if held is None or current is None or current[1] != held[1]:
                who = self.parse(current[0]) if current is not None else None
                self._held, self.lost = None, True  # not ours: release must not touch it
                raise LockLostError(
                    f"the storage lock {self.storage.full_path(STORAGE_LOCK_FILE)} of "
                    f"{self.owner} was taken over (lease validity {self.validity_s:g} s; now "
                    f"{'held by ' + who[2] if who and not who[0] else 'not held'})"
                )

    def release(self) -> None:
        """Stop the heartbeat and mark the held lease ``expired`` (``If-Match`` its ETag).

        A provider that does not hold the lock writes nothing. A lease found taken by another
        owner (the heartbeat could not renew it in time) is logged, as Hudi does, and left to
        its new holder; :attr:`lost` tells.
        """
        heart, self._heart = self._heart, None
        if heart is not None:
            heart.stop()
        with self._mutex:
            self._deadline = 0.0
            if self._held is None:
                return
            body = self._held[0]
            held = self.parse(body)
            valid_until = held[1] if held is not None else int(time.time() * 1000)
            end = time.time()
            self._audit_record("END", end, held=False)
            try:
                if self._put_held(self._body(True, valid_until)) is None:
                    log.warning(
                        "storage lock %s was no longer %s's when it released it (taken over "
                        "after its lease ran out, or released by a retried request and taken "
                        "since)",
                        self.storage.full_path(STORAGE_LOCK_FILE),
                        self.owner,
                    )
            finally:
                self._held = None

    # -- audit (Hudi's StorageLockProviderAuditService) -----------------------------------------
    def _audit_enabled(self) -> bool:
        try:
            raw = self.storage.read_bytes(AUDIT_CONFIG_FILE)
        except FileNotFoundError:
            return False
        try:
            return json.loads(raw).get("STORAGE_LOCK_AUDIT_SERVICE_ENABLED") is True
        except (ValueError, AttributeError):
            return False

    def _audit_start(self) -> None:
        """Open this holding's audit file (when the audit is on) with its START record, timed
        after the lease was written: START..END lies inside the holding, so the intervals of
        all holders in the audit never overlap if the lock is exclusive."""
        self._audit = []
        self._audit_path = None
        if not self._audit_enabled():
            return
        start = time.time()
        self._audit_path = f"{AUDIT_FOLDER}/{int(start * 1000)}_{self.owner}.jsonl"
        self._audit_txn_ms = int(start * 1000)
        self._audit_record("START", start)

    def _audit_record(self, state: str, at: float, held: bool = True) -> None:
        if self._audit_path is None or self._held is None:
            return
        parsed = self.parse(self._held[0])
        record = {
            "ownerId": self.owner,
            "transactionStartTime": self._audit_txn_ms,
            "timestamp": int(at * 1000),
            "state": state,
            "lockExpiration": parsed[1] if parsed is not None else None,
            "lockHeld": held,
        }
        self._audit.append(json.dumps(record))
        try:  # an audit failure never fails the lock (as Hudi's)
            self.storage.write_bytes(self._audit_path, ("\n".join(self._audit) + "\n").encode())
        except OSError as e:
            log.warning("could not write the lock audit %s: %s", self._audit_path, e)


# -- Hudi's DynamoDBBasedLockProvider ------------------------------------------------------------
#: the lock item's attributes, as the AWS DynamoDB Lock Client (awslabs/amazon-dynamodb-lock-client,
#: ``AmazonDynamoDBLockClient``) that Hudi's provider drives stores them
