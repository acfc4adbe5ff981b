"""Locks for multi-writer optimistic concurrency control, and writer heartbeats.

Lock providers (``hoodie.write.lock.provider``; Hudi's Java class names are accepted):

* :class:`FileSystemLock` (``...FileSystemBasedLockProvider``, the default): the lock is the file
  ``.hoodie/lock``, created atomically if absent; it records its holder and an expiry, so a dead
  holder's lock is broken once it expires (``hoodie.write.lock.filesystem.expire``, minutes).
  Works on local and network file systems (anything with atomic create-if-absent and rename) and
  on object stores, where every write is conditional: created ``If-None-Match: *``, renewed by a
  heartbeat, taken over and released ``If-Match`` the ETag read -- of several writers breaking
  it exactly one gets it, and a retried request never lands on another holder's lock.
* :class:`StorageBasedLock` (``...StorageBasedLockProvider``): for object stores (S3, GCS,
  Azure), Hudi 1.x's lock on conditional writes: ``.hoodie/.locks/table_lock.json`` holds
  ``{"expired", "validUntil", "owner"}``; it is created with ``If-None-Match: *``, and renewed by
  its holder's heartbeat, released (``expired: true``) or taken over once expired with an update
  conditional on the ETag it was read at (``If-Match``), so a Java writer with the same provider
  and hudi_ds exclude each other.
* :class:`DynamoDBLock` (``org.apache.hudi.aws.transaction.lock.DynamoDBBasedLockProvider``):
  Hudi's lock for tables shared with Java writers on AWS, an item of a DynamoDB table kept with
  the protocol of the AWS DynamoDB Lock Client that Hudi's provider uses (conditional
  ``PutItem`` / ``UpdateItem`` / ``DeleteItem`` on a record version number, a lease renewed by
  heartbeats); needs boto3 (``pip install 'hudi_ds[aws]'``).
* :class:`InProcessLock` (``...InProcessLockProvider``): a lock per table path shared by the
  threads of one process.

No provider decides that a lease ran out by comparing two hosts' wall clocks alone: the DynamoDB
lock times a holder's silence on the contender's monotonic clock, the file-system and storage
locks also require that the lock was not written for a whole lease on the storage's own clock
(:class:`StorageClock`). Every release is conditional on the lock still being this provider's.

Heartbeats (``.hoodie/.heartbeat/<instant>``): a writer refreshes its instant's heartbeat while
it runs. Under optimistic concurrency a pending instant is only rolled back by another writer
once its heartbeat is older than ``interval x tolerable misses`` -- so live writers are never
rolled back by their peers (Hudi's LAZY failed-writes cleaning).
"""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from hudi_ds.config import ConcurrencyConfig, Options, WriteConfig, properties_of, warn_no_effect
from hudi_ds.errors import ConfigError, HudiError, LockLostError
from hudi_ds.storage import ObjectStorage, ObjectVersion, Storage
from hudi_ds.table_config import TableConfig

log = logging.getLogger("hudi_ds.write")

LOCK_FILE = ".hoodie/lock"
HEARTBEAT_DIR = ".hoodie/.heartbeat"
#: a holder counts its lease as ending this much before the lease it wrote: the rates of two
#: hosts' monotonic clocks differ a little, and the holder times its lease from when it sent
#: the write, the taker from when it saw it
LEASE_MARGIN_S = 0.5

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


#: a lease is only taken as expired this long after its end by this host's clock (clock drift
#: between hosts; Hudi's ``StorageBasedLockProvider.CLOCK_DRIFT_BUFFER_MS``)
CLOCK_DRIFT_S = 0.5
#: the coarsest modification time a storage stamps (S3's Last-Modified is whole seconds): a
#: lock's age on the storage's clock may be overestimated by this much
MTIME_RESOLUTION_S = 1.0
#: how long one measurement of the storage's clock (:class:`StorageClock`) is used
CLOCK_PROBE_TTL_S = 60.0


class StorageClock:
    """The storage's own clock, read from this host: the modification time the storage stamps on
    what is written to it (an object's Last-Modified, a file's mtime -- the server's clock on a
    network file system), carried forward by this host's monotonic clock.

    A lock holder's lease is written with the holder's wall clock; a contender whose wall clock
    runs ahead of the holder's by more than the lease would take it as expired while its holder
    still renews it. So no lock here takes over a lease on wall clocks alone: the lock object
    must also not have been written for a whole lease *on the storage's clock*
    (:meth:`written_ago`), which only assumes that clocks tick at the same rate.

    The storage's time is measured by writing a probe (``probe``, deleted again) and reading its
    modification time; the estimate errs early (by the probe's round trip and the storage's
    resolution), so ages err short, and a lease is never taken as older than it is by more than
    :data:`MTIME_RESOLUTION_S`. Each probe bounds the storage's time from below; the tightest
    bound is kept for :data:`CLOCK_PROBE_TTL_S`, and a slow probe (a loose bound, which would
    make a dead lease look younger by its latency) is repeated at the next call after a second.
    """

    def __init__(self, storage: Storage, probe: str) -> None:
        self.storage = storage
        self.probe = probe
        #: storage time minus this host's monotonic time (a lower bound), since when it is
        #: kept, and when to measure again (monotonic)
        self._offset: float | None = None
        self._since = 0.0
        self._next = 0.0

    def now(self) -> float | None:
        """The storage's current time (epoch seconds, an underestimate); None when no probe
        succeeded (then the caller cannot tell a lease's age, and must not take it over)."""
        if self._offset is None or time.monotonic() >= self._next:
            self._measure()
        if self._offset is None:
            return None
        return time.monotonic() + self._offset

    def _measure(self) -> None:
        try:
            try:
                sent = time.monotonic()
                self.storage.write_bytes(self.probe, b"")
                done = time.monotonic()
                info = self.storage.info(self.probe)
            finally:
                self.storage.delete(self.probe)
        except OSError as e:
            log.warning("could not read the clock of %s: %s", self.storage.full_path(), e)
            self._next = time.monotonic() + 1.0
            return
        if info is None or info.mtime_ms <= 0:
            log.error(
                "%s gives no modification times: a dead lock holder's lease cannot be taken over",
                self.storage.full_path(),
            )
            self._next = time.monotonic() + 1.0
            return
        # the storage stamped the probe before the write returned: its time then was at least
        # the stamp (every bound is a lower one, so the greatest is the tightest)
        bound = info.mtime_ms / 1000 - done
        now = time.monotonic()
        if self._offset is None or now - self._since > CLOCK_PROBE_TTL_S:
            self._offset, self._since = bound, now
        else:
            self._offset = max(self._offset, bound)
        self._next = now + (1.0 if done - sent > 1.0 else CLOCK_PROBE_TTL_S)

    def written_ago(self, rel: str) -> float | None:
        """Seconds since ``rel`` was last written, on the storage's clock (overestimated by at
        most :data:`MTIME_RESOLUTION_S`); None when it is gone or the storage's time is
        unknown."""
        try:
            info = self.storage.info(rel)
        except OSError as e:
            log.warning("could not read the age of %s: %s", self.storage.full_path(rel), e)
            return None
        now = self.now() if info is not None else None
        if info is None or now is None:
            return None
        return now - info.mtime_ms / 1000

    def skew_note(self, holder_wrote_at: float, written_ago: float) -> str:
        """How far this host's wall clock runs ahead of a lock holder's, which wrote at
        ``holder_wrote_at`` by its own clock what the storage stamped ``written_ago`` seconds
        ago (a sentence for errors)."""
        now = self.now()
        if now is None:
            return "the clocks of this host and the holder disagree"
        ours = time.time() - now
        theirs = holder_wrote_at - (now - written_ago)
        return (
            f"this host's clock runs about {ours - theirs:.0f} s ahead of the holder's (this "
            f"host {ours:+.1f} s, the holder about {theirs:+.1f} s off the storage's clock)"
        )


class FileSystemLock:
    """``.hoodie/lock``: atomic create-if-absent, with expiry of a dead holder.

    The body is ``{"owner", "expires"}`` (the holder's wall clock); a released lock on an object
    store is ``{"owner", "expires": 0, "released": true}``.

    * On a file system the lock is created with an atomic create-if-absent; a dead holder's
      lock is moved aside (atomic rename) by the one writer that breaks it; release moves our
      own lock aside and checks it was ours (a lock taken meanwhile is handed back) -- never a
      blind delete. There is no renewal: a holding lasts ``expire_s``.
    * On an object store every write is conditional: created ``If-None-Match: *``, taken over
      (released or dead) and renewed ``If-Match`` the ETag read, released by a conditional put
      of the released body ``If-Match`` the holder's ETag -- never a delete, which a client
      retrying a delete whose answer was lost could land on the next holder's lock. A heartbeat
      renews ``expires`` every ``expire_s / 10``.

    A lock is dead when its ``expires`` passed on this host's clock *and* it was not written for
    ``expire_s`` on the storage's clock (:class:`StorageClock`); a lock that looks expired to
    this host but was renewed recently means the clocks disagree: it is not taken, and the error
    (logged, and in the :class:`LockTimeoutError`) names the skew.
    """

    def __init__(
        self, storage: Storage, expire_s: float = 600.0, wait_ms: int = 100, retries: int = 600
    ) -> None:
        self.storage = storage
        self.expire_s = expire_s
        self.wait_s = wait_ms / 1000
        self.retries = retries
        self.heartbeat_s = expire_s / 10
        self.owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self.clock = StorageClock(storage, f"{LOCK_FILE}.{uuid.uuid4().hex}.clock")
        self._mutex = threading.RLock()
        #: the lock body this provider last wrote while holding the lock (None while not held)
        self._body: bytes | None = None
        #: the version (ETag) of that body on an object store
        self._version: ObjectVersion | None = None
        #: a body whose put failed after the client's retries: it may have landed all the same
        self._unknown: bytes | None = None
        self._heart: Periodic | None = None
        #: monotonic: when the lease this provider last wrote runs out (kept when the lock is
        #: found lost -- it still bounds what was written before it --, reset by release)
        self._deadline = 0.0
        #: the lock found by the last attempt to acquire (for error messages)
        self.last_seen = "no lock"
        self._skew_logged: bytes | None = None
        #: True once a renewal found the lock taken over while held
        self.lost = False

    def held_until(self) -> float:
        """The ``time.monotonic()`` reading before which no other process could hold the lock
        since this provider took it: when the lease this provider last wrote runs out, timed
        from when the write was sent, less :data:`LEASE_MARGIN_S`. It stays true of the past
        when the lock is found lost later; 0.0 (or less) once released.

        A write that finished before this reading was made under the lock, whatever stall came
        after it: a taker must wait out the lease first -- on the storage's clock, from when it
        stamped that write, which is after it was sent (:class:`StorageClock`) -- so it sees
        that write. Past it, only :meth:`confirm` (a read of the lock) can tell whether the lock
        was kept.
        """
        with self._mutex:
            return self._deadline - LEASE_MARGIN_S

    def _new_body(self) -> bytes:
        # the lease starts when it is put, not when an attempt began: a stall before the put
        # must not hand the next writer a lease that is already expired
        return json.dumps({"owner": self.owner, "expires": time.time() + self.expire_s}).encode()

    @property
    def holds(self) -> bool:
        """This provider holds the lock (acquired, not released or lost)."""
        with self._mutex:
            return self._body is not None

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
            f"could not acquire {self.storage.full_path(LOCK_FILE)} after {self.retries} "
            f"retries (last seen: {self.last_seen})"
        )

    def try_acquire(self) -> bool:
        """One attempt (non-blocking). Returns True if this provider now holds the lock."""
        with self._mutex:
            if self.storage.conditional_update:
                return self._try_on_object_store()
            body = self._new_body()
            sent = time.monotonic()
            if self.storage.create_if_absent(LOCK_FILE, body):
                self._hold(body, None, sent)
                return True
            self._break_if_dead()
            return False

    def _try_on_object_store(self) -> bool:
        """Read the lock with its ETag; take it if absent (``If-None-Match: *``), released or
        dead (``If-Match`` the ETag read): of several writers exactly one put succeeds. A rename
        there is a copy and a delete, which could delete a lock taken meanwhile."""
        try:
            raw, version = self.storage.read_with_version(LOCK_FILE)
        except FileNotFoundError:
            raw, version = None, None
        if raw is not None and not self._free(raw):
            return False
        body = self._new_body()
        sent = time.monotonic()
        got = self.storage.put_if_version(LOCK_FILE, body, version)
        if got is None:
            return False  # another writer won
        held = _parse_lock(raw) if raw is not None else None
        if raw is not None and not (held is not None and held[2]):
            log.warning("took over the expired lock %s", self.storage.full_path(LOCK_FILE))
        self._hold(body, got, sent)
        return True

    def _free(self, raw: bytes) -> bool:
        """Whether the lock holding ``raw`` may be taken: released, or its holder is dead.

        A body that does not parse as ``{"owner", "expires"}`` is being created right now (on
        storage where a file appears before its content) or was left torn by a crash: it is
        taken as dead only by its age on the storage's clock -- never at once, or two writers
        would hold the lock together.
        """
        held = _parse_lock(raw)
        if held is not None and held[2]:
            return True
        if held is not None:
            self.last_seen = f"owner {held[0]}, expires {held[1]:.3f}"
            if time.time() <= held[1] + CLOCK_DRIFT_S:
                return False
        else:
            self.last_seen = f"an unreadable lock body {raw[:80]!r}"
        ago = self.clock.written_ago(LOCK_FILE)
        if ago is None:
            return False
        if ago > self.expire_s + MTIME_RESOLUTION_S + CLOCK_DRIFT_S:
            return True
        if held is not None:
            # expired by this host's clock, yet written within its lease on the storage's
            self.last_seen = (
                f"owner {held[0]}, expired by this host's clock but written {ago:.1f} s ago on "
                f"the storage's clock (lease {self.expire_s:g} s): "
                f"{self.clock.skew_note(held[1] - self.expire_s, ago)}; not taken over"
            )
            # within the margin past the lease (the storage's coarse stamps err either way by
            # up to a second) a lock of a holder on the same clock is merely waited out:
            # skew is named only when the storage says the lease is clearly live
            if self._skew_logged != raw and ago < self.expire_s - MTIME_RESOLUTION_S:
                self._skew_logged = raw
                log.error(
                    "clock skew: the lock %s is live, %s; synchronise the hosts' clocks (NTP)",
                    self.storage.full_path(LOCK_FILE),
                    self.last_seen,
                )
        return False

    def _break_if_dead(self) -> None:
        """On a file system: move a dead holder's lock aside (atomic rename): of several
        writers breaking it, one wins; a lock taken between our read and the move is handed
        back."""
        try:
            raw = self.storage.read_bytes(LOCK_FILE)
        except FileNotFoundError:
            return
        if not self._free(raw):
            return
        self._move_aside(raw, "expired")

    def _move_aside(self, expected: bytes, why: str) -> bool:
        """Rename the lock to a unique name, delete it if it still holds ``expected``, else
        put it back (created again if absent). True if ``expected`` was removed."""
        tomb = f"{LOCK_FILE}.{uuid.uuid4().hex}.{why}"
        try:
            self.storage.rename(LOCK_FILE, tomb)
        except (FileNotFoundError, OSError):
            return False
        try:
            moved = self.storage.read_bytes(tomb)
            if moved == expected:
                return True
            # another writer took the lock between our read and the move: hand it back
            if not self.storage.create_if_absent(LOCK_FILE, moved):
                log.warning("a live lock was broken while moving %s aside", why)
            return False
        finally:
            self.storage.delete(tomb)

    def _hold(self, body: bytes, version: ObjectVersion | None, sent: float) -> None:
        if self._heart is not None:
            self._heart.stop()  # a holding this provider never released
        self._body, self._version, self._unknown = body, version, None
        self._deadline = sent + self.expire_s
        self.lost = False
        self._heart = None
        if version is not None:
            self._heart = Periodic(
                self.renew, self.heartbeat_s, f"fs-lock-{self.owner[-8:]}", "file-system lock"
            )

    def _put_held(self, body: bytes) -> ObjectVersion | None:
        """Put ``body`` ``If-Match`` the held version; the new version, or None when the lock
        is no longer this provider's. A put whose outcome was unknown (it failed after the
        client's retries) and that had landed is recognised by its exact body: no other writer
        writes this provider's owner id."""
        assert self._version is not None
        try:
            got = self.storage.put_if_version(LOCK_FILE, body, self._version)
        except OSError:
            self._unknown = body
            raise
        if got is not None or self._unknown is None:
            return got
        try:
            raw, version = self.storage.read_with_version(LOCK_FILE)
        except FileNotFoundError:
            return None
        if raw != self._unknown:
            return None
        self._unknown = None
        return self.storage.put_if_version(LOCK_FILE, body, version)

    def renew(self) -> bool:
        """On an object store: extend the held lock by ``expire_s`` (one heartbeat, ``If-Match``
        its ETag). False when there is nothing to renew or the lock was taken over (then it is
        dropped, :attr:`lost`)."""
        with self._mutex:
            if self._body is None or self._version is None:
                return False
            body = self._new_body()
            sent = time.monotonic()
            got = self._put_held(body)
            if got is None:
                log.error(
                    "the lock %s was taken over while %s held it",
                    self.storage.full_path(LOCK_FILE),
                    self.owner,
                )
                self._body = self._version = None
                self.lost = True
                return False
            self._body, self._version = body, got
            self._deadline = sent + self.expire_s
            return True

    def confirm(self) -> None:
        """Prove that this provider held the lock without a break since it took it: the lock
        file still holds the very body it last wrote (a writer that breaks or takes over a dead
        lock replaces or removes that body, and never writes this provider's owner id).

        Raises:
            LockLostError: the lock file is gone or holds another body.
        """
        with self._mutex:
            body = self._body
            try:
                current, version = self.storage.read_with_version(LOCK_FILE)
            except FileNotFoundError:
                current = None
            if body is not None and current is not None and current == self._unknown:
                # a renewal that failed after the client's retries had landed
                self._body, self._version, self._unknown = current, version, None
                body = current
            if body is None or current != body:
                held = _parse_lock(current) if current is not None else None
                # not ours: release must not touch it, and the heartbeat stops
                self._body = self._version = None
                self.lost = True
                raise LockLostError(
                    f"the lock {self.storage.full_path(LOCK_FILE)} of {self.owner} was broken "
                    f"or taken over (its lease of {self.expire_s:g} s ran out; now "
                    f"{'held by ' + held[0] if held and not held[2] else 'not held'})"
                )

    def release(self) -> None:
        """Give the lock up if this provider still holds it -- conditionally, so a lock taken
        over meanwhile (this provider's lease ran out) is left to its new holder.

        On an object store: a put of the released body ``If-Match`` the held ETag (a retry of
        it after a lost answer finds its own landed put, or fails its condition on the next
        holder's lock). On a file system: the lock is moved aside and deleted only if it still
        holds this provider's body, else handed back.
        """
        heart, self._heart = self._heart, None
        if heart is not None:
            heart.stop()
        with self._mutex:
            body, version = self._body, self._version
            self._deadline = 0.0
            if body is None:
                return
            try:
                if version is not None:
                    released = json.dumps(
                        {"owner": self.owner, "expires": 0, "released": True}
                    ).encode()
                    if self._put_held(released) is None:
                        log.warning(
                            "the lock %s was no longer %s's when it released it (taken over "
                            "after its lease ran out, or released by a retried request and "
                            "taken since)",
                            self.storage.full_path(LOCK_FILE),
                            self.owner,
                        )
                    return
                try:
                    current = self.storage.read_bytes(LOCK_FILE)
                except FileNotFoundError:
                    current = None
                if current != body or not self._move_aside(body, "released"):
                    log.warning(
                        "the lock %s was no longer %s's when it released it (taken over after "
                        "its lease ran out)",
                        self.storage.full_path(LOCK_FILE),
                        self.owner,
                    )
            finally:
                self._body = self._version = None


def _parse_lock(raw: bytes) -> tuple[str, float, bool] | None:
    """``(owner, expires, released)`` of a lock file body, or None if it is empty or
    incomplete."""
    try:
        body = json.loads(raw)
        return str(body["owner"]), float(body["expires"]), body.get("released") is True
    except (ValueError, TypeError, KeyError, AttributeError):
        return None


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
        self._skew_logged: bytes | None = None
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
        ago = self.clock.written_ago(STORAGE_LOCK_FILE)
        if ago is None:
            return False
        if ago > self.validity_s + MTIME_RESOLUTION_S + CLOCK_DRIFT_S:
            return True
        self.last_seen = (
            f"owner {held[2]}, valid until {held[1]} ms: expired by this host's clock but "
            f"renewed {ago:.1f} s ago on the storage's clock (validity {self.validity_s:g} s): "
            f"{self.clock.skew_note(held[1] / 1000 - self.validity_s, ago)}; not taken over"
        )
        # within the margin past the validity (the storage's coarse stamps err either way by up
        # to a second) a lease of a holder on the same clock is merely waited out: skew is
        # named only when the storage says the lease is clearly live
        if self._skew_logged != raw and ago < self.validity_s - MTIME_RESOLUTION_S:
            self._skew_logged = raw
            log.error(
                "clock skew: the storage lock %s is live, %s; synchronise the hosts' clocks (NTP)",
                self.storage.full_path(STORAGE_LOCK_FILE),
                self.last_seen,
            )
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
DDB_KEY = "key"  # the partition key attribute (Hudi's ``DYNAMODB_ATTRIBUTE_NAME``)
DDB_OWNER = "ownerName"
DDB_LEASE = "leaseDuration"  # milliseconds, a string
DDB_RVN = "recordVersionNumber"  # a fresh UUID on every write of the item
DDB_RELEASED = "isReleased"  # "1" on an item released but kept (not written by Hudi's provider)
#: Hudi's default lease (``hoodie.write.lock.wait_time_ms``, 60 s) and the lock client's poll
DDB_DEFAULT_LEASE_MS = 60_000
DDB_MIN_LEASE_MS = 1_000
DDB_POLL_S = 1.0


class DynamoDBLock:
    """Hudi's ``DynamoDBBasedLockProvider`` (``hudi-aws``, ``DynamoDBBasedLockProviderBase``):
    one item per table (partition key ``key`` = ``hoodie.write.lock.dynamodb.partition_key``,
    the table name by default) in the DynamoDB table ``hoodie.write.lock.dynamodb.table``,
    kept with the AWS DynamoDB Lock Client's protocol, so Java writers with that provider and
    hudi_ds writers exclude each other:

    * the item is ``{key, ownerName, leaseDuration (ms, a string), recordVersionNumber (a fresh
      UUID per write)}``; reads are consistent (``ConsistentRead``);
    * acquire: absent -> ``PutItem`` if ``attribute_not_exists(key)``; released (``isReleased``)
      -> ``PutItem`` if it still is; held -> wait: a holder that does not change the record
      version number for its ``leaseDuration`` (counted from when this writer first saw it) is
      dead, and its item is replaced by ``PutItem`` if ``recordVersionNumber`` is still the one
      seen. Of several contenders exactly one conditional write succeeds;
    * heartbeat (a thread, every third of the lease, as Hudi sets it): ``UpdateItem`` of
      ``leaseDuration`` and a new ``recordVersionNumber`` if owner and version are ours; a
      failed condition means the lock was taken over -- the heartbeat stops (:attr:`lost`);
    * release: ``DeleteItem`` if owner and version are ours (Hudi's lock options delete the
      lock on release); a provider that lost the lock deletes nothing.

    The lease is ``hoodie.write.lock.wait_time_ms`` as in Hudi (60 s unless given); the table
    is created when absent (``billing_mode``, ``read_capacity``, ``write_capacity``) and waited
    for up to ``table_creation_timeout`` ms.

    Raises:
        ConfigError: boto3 is not installed, the lease is under 1 s, or no partition key can
            be derived (no ``hoodie.table.name``).
    """

    def __init__(
        self,
        *,
        table: str,
        partition_key: str,
        region: str,
        endpoint_url: str | None = None,
        credentials: dict[str, str] | None = None,
        lease_ms: int = DDB_DEFAULT_LEASE_MS,
        retries: int = 600,
        billing_mode: str = "PAY_PER_REQUEST",
        read_capacity: int = 20,
        write_capacity: int = 10,
        creation_timeout_ms: int = 120_000,
    ) -> None:
        if lease_ms < DDB_MIN_LEASE_MS:
            raise ConfigError(
                f"option {ConcurrencyConfig.LOCK_WAIT_MS.key!r}={lease_ms} is the DynamoDB "
                f"lock's lease duration (as in Hudi's DynamoDBBasedLockProvider) and must be at "
                f"least {DDB_MIN_LEASE_MS} ms"
            )
        try:
            import boto3
            from botocore.config import Config
        except ImportError as e:
            raise ConfigError(
                f"{DYNAMODB_LOCK_NAMES[0]} needs boto3: pip install 'hudi_ds[aws]' ({e})"
            ) from None
        if endpoint_url is not None and "://" not in endpoint_url:
            endpoint_url = "https://" + endpoint_url  # as Hudi's getDynamoDBClient
        self.table = table
        self.partition_key = partition_key
        self.lease_ms = lease_ms
        self.heartbeat_s = lease_ms / 3000  # Hudi: withHeartbeatPeriod(leaseDuration / 3)
        self.poll_s = min(DDB_POLL_S, lease_ms / 10_000)
        self.retries = retries
        #: the lock client's default owner name: host name and a random UUID
        self.owner = f"{socket.gethostname()}{uuid.uuid4()}"
        self.client = boto3.client(
            "dynamodb",
            region_name=region,
            endpoint_url=endpoint_url,
            config=Config(
                retries={"mode": "standard", "max_attempts": 4},
                connect_timeout=10,
                read_timeout=30,
            ),
            **(credentials or {}),
        )
        self._mutex = threading.RLock()
        self._rvn: str | None = None  # the record version number of the item we hold
        self._renewed = 0.0  # monotonic time of the last successful write of our item
        self._heart: Periodic | None = None
        #: the item seen held by another owner: (record version number, monotonic first seen,
        #: its lease in seconds)
        self._watch: tuple[str, float, float] | None = None
        self.last_seen = "no lock item"
        #: True once a heartbeat found the lock taken by another owner while held
        self.lost = False
        self._ensure_table(billing_mode, read_capacity, write_capacity, creation_timeout_ms)

    # -- the lock table ------------------------------------------------------------------------
    def _ensure_table(self, billing: str, rcu: int, wcu: int, timeout_ms: int) -> None:
        """Create the lock table if it does not exist (Hudi's ``createLockTableInDynamoDB``) and
        wait until it is active."""
        status = self._table_status()
        if status is None:
            request: dict[str, object] = {
                "TableName": self.table,
                "KeySchema": [{"AttributeName": DDB_KEY, "KeyType": "HASH"}],
                "AttributeDefinitions": [{"AttributeName": DDB_KEY, "AttributeType": "S"}],
                "BillingMode": billing,
            }
            if billing == "PROVISIONED":
                request["ProvisionedThroughput"] = {
                    "ReadCapacityUnits": rcu,
                    "WriteCapacityUnits": wcu,
                }
            try:
                self.client.create_table(**request)
                log.info("created the DynamoDB lock table %s", self.table)
            except self.client.exceptions.ResourceInUseException:
                pass  # another writer created it meanwhile
            except Exception as e:
                raise HudiError(
                    f"could not create the DynamoDB lock table {self.table}: {e}"
                ) from e
        deadline = time.monotonic() + timeout_ms / 1000
        while status not in ("ACTIVE", "UPDATING"):
            if time.monotonic() > deadline:
                raise HudiError(
                    f"the DynamoDB lock table {self.table} is not active after {timeout_ms} ms "
                    f"(status {status}; {ConcurrencyConfig.DYNAMODB_TABLE_CREATION_TIMEOUT_MS.key})"
                )
            time.sleep(0.2)
            status = self._table_status()

    def _table_status(self) -> str | None:
        try:
            return str(self.client.describe_table(TableName=self.table)["Table"]["TableStatus"])
        except self.client.exceptions.ResourceNotFoundException:
            return None
        except Exception as e:
            raise HudiError(f"could not describe the DynamoDB lock table {self.table}: {e}") from e

    # -- DynamoDB calls ------------------------------------------------------------------------
    def _key(self) -> dict[str, dict[str, str]]:
        return {DDB_KEY: {"S": self.partition_key}}

    def read_item(self) -> dict[str, str] | None:
        """The lock item (attribute -> string value), or None when there is none."""
        item = self.client.get_item(TableName=self.table, Key=self._key(), ConsistentRead=True)
        raw = item.get("Item")
        if not raw:
            return None
        return {k: str(next(iter(v.values()))) for k, v in raw.items()}

    def _is_conditional_failure(self, e: Exception) -> bool:
        return isinstance(e, self.client.exceptions.ConditionalCheckFailedException)

    def _put_if(self, condition: str, names: dict[str, str], values: dict[str, str]) -> str | None:
        """``PutItem`` of our item under ``condition``; its record version number, or None when
        the condition failed."""
        rvn = str(uuid.uuid4())
        item = {
            DDB_KEY: {"S": self.partition_key},
            DDB_OWNER: {"S": self.owner},
            DDB_LEASE: {"S": str(self.lease_ms)},
            DDB_RVN: {"S": rvn},
        }
        kwargs: dict[str, object] = {
            "TableName": self.table,
            "Item": item,
            "ConditionExpression": condition,
            "ExpressionAttributeNames": names,
        }
        if values:
            kwargs["ExpressionAttributeValues"] = {k: {"S": v} for k, v in values.items()}
        try:
            self.client.put_item(**kwargs)
        except Exception as e:
            if self._is_conditional_failure(e):
                # a put retried by the client after a lost answer finds its own first attempt
                current = self.read_item()
                if current and current.get(DDB_OWNER) == self.owner and current.get(DDB_RVN) == rvn:
                    return rvn
                return None
            raise
        return rvn

    # -- acquire / heartbeat / release ---------------------------------------------------------
    @property
    def holds(self) -> bool:
        """This provider holds the lock (acquired, not released or lost)."""
        with self._mutex:
            return self._rvn is not None

    def held_until(self) -> float:
        """See :meth:`FileSystemLock.held_until`: a taker waits a whole lease after it first
        sees the record version number of our last write, which it cannot see before we sent
        that write."""
        with self._mutex:
            return self._renewed + self.lease_ms / 1000 - LEASE_MARGIN_S

    def try_acquire(self) -> bool:
        """One attempt: one consistent read and at most one conditional put. True if this
        provider holds the lock now. A held item is only taken over once this provider has seen
        its record version number unchanged for the item's lease duration."""
        with self._mutex:
            if self._rvn is not None:
                return True
            item = self.read_item()
            now = time.monotonic()
            if item is None:
                rvn = self._put_if("attribute_not_exists(#pk)", {"#pk": DDB_KEY}, {})
            elif DDB_RELEASED in item:
                rvn = self._put_if(
                    "attribute_exists(#pk) AND #ir = :ir",
                    {"#pk": DDB_KEY, "#ir": DDB_RELEASED},
                    {":ir": "1"},
                )
            else:
                seen = item.get(DDB_RVN, "")
                try:
                    lease_s = int(item.get(DDB_LEASE, "")) / 1000
                except ValueError:
                    lease_s = self.lease_ms / 1000
                self.last_seen = f"owner {item.get(DDB_OWNER)}, lease {lease_s:g} s"
                if self._watch is None or self._watch[0] != seen:
                    self._watch = (seen, now, lease_s)  # held, or renewed since last seen
                    return False
                if now - self._watch[1] <= self._watch[2]:
                    return False
                log.warning(
                    "taking over the DynamoDB lock %s/%s of %s (no heartbeat for %.1f s)",
                    self.table,
                    self.partition_key,
                    item.get(DDB_OWNER),
                    now - self._watch[1],
                )
                rvn = self._put_if(
                    "attribute_exists(#pk) AND #rvn = :rvn",
                    {"#pk": DDB_KEY, "#rvn": DDB_RVN},
                    {":rvn": seen},
                )
            if rvn is None:
                return False  # another writer won
            self._rvn = rvn
            self._renewed = now
            self._watch = None
            self.lost = False
            # any error is retried at the next beat (boto3 raises more than OSError)
            self._heart = Periodic(
                self.renew,
                self.heartbeat_s,
                f"dynamodb-lock-{self.owner[-8:]}",
                "DynamoDB lock",
                errors=(Exception,),
            )
            return True

    def acquire(self) -> None:
        """Take the lock, polling; waits at most one lease of the holder seen plus
        ``hoodie.write.lock.num_retries`` polls (as the lock client waits its lease duration
        plus the additional time Hudi gives it). A failing DynamoDB call is retried until then.

        Raises:
            LockTimeoutError: not acquired in that time (says who holds it, or the last error).
        """
        start = time.monotonic()
        last_error: Exception | None = None
        while True:
            try:
                if self.try_acquire():
                    return
                last_error = None
            except (HudiError, ConfigError):
                raise
            except Exception as e:  # botocore: network, throttling -- retried like the client
                last_error = e
                log.warning("DynamoDB lock attempt failed: %s", e)
            lease_s = self._watch[2] if self._watch is not None else 0.0
            if time.monotonic() - start > lease_s + self.retries * self.poll_s:
                why = f"last error: {last_error}" if last_error else f"held by {self.last_seen}"
                raise LockTimeoutError(
                    f"could not acquire the DynamoDB lock {self.table}/{self.partition_key} "
                    f"in {time.monotonic() - start:.1f} s ({why})"
                )
            time.sleep(self.poll_s)

    def renew(self) -> bool:
        """One heartbeat: a new record version number and the lease, if the item is still ours
        (owner and version). False when there is nothing to renew or the lock was lost."""
        with self._mutex:
            if self._rvn is None:
                return False
            now = time.monotonic()
            if now - self._renewed > self.lease_ms / 1000:
                # our lease ran out without a successful heartbeat: others may hold it now
                # (the lock client's LockItem.isExpired stops heartbeating then too)
                log.error("DynamoDB lock %s/%s: lease expired", self.table, self.partition_key)
                self._rvn = None
                self.lost = True
                return False
            new = str(uuid.uuid4())
            try:
                self.client.update_item(
                    TableName=self.table,
                    Key=self._key(),
                    UpdateExpression="SET #ld = :ld, #rvn = :newRvn",
                    ConditionExpression="attribute_exists(#pk) AND #rvn = :rvn AND #on = :on",
                    ExpressionAttributeNames={
                        "#pk": DDB_KEY,
                        "#ld": DDB_LEASE,
                        "#rvn": DDB_RVN,
                        "#on": DDB_OWNER,
                    },
                    ExpressionAttributeValues={
                        ":ld": {"S": str(self.lease_ms)},
                        ":newRvn": {"S": new},
                        ":rvn": {"S": self._rvn},
                        ":on": {"S": self.owner},
                    },
                )
            except Exception as e:
                if not self._is_conditional_failure(e):
                    raise
                current = self.read_item()
                if current and current.get(DDB_RVN) == new and current.get(DDB_OWNER) == self.owner:
                    self._rvn, self._renewed = new, now  # our retried update had landed
                    return True
                log.error(
                    "DynamoDB lock %s/%s was taken by another owner while %s held it",
                    self.table,
                    self.partition_key,
                    self.owner,
                )
                self._rvn = None
                self.lost = True
                return False
            self._rvn, self._renewed = new, now
            return True

    def confirm(self) -> None:
        """Prove that this provider held the lock without a break since it took it: a
        consistent read finds the item still at the owner and record version number this
        provider last wrote (a takeover writes a new version; heartbeats are conditional on
        ours). A lease this provider's heartbeat saw run out counts as lost, even if nobody
        took it over yet.

        Raises:
            LockLostError: the lease ran out or the item is another owner's or version.
        """
        with self._mutex:
            rvn = self._rvn
            item = self.read_item() if rvn is not None else None
            if item is None or item.get(DDB_OWNER) != self.owner or item.get(DDB_RVN) != rvn:
                self._rvn, self.lost = None, True  # not ours: release must not touch it
                raise LockLostError(
                    f"the DynamoDB lock {self.table}/{self.partition_key} of {self.owner} was "
                    f"lost (lease {self.lease_ms} ms; now "
                    f"{'held by ' + str(item.get(DDB_OWNER)) if item else 'not held'})"
                )

    def release(self) -> None:
        """Stop the heartbeat and delete the item if it is still ours (owner and version).

        A lock found taken by another owner is logged ("already stolen", as Hudi) and left.

        Raises:
            HudiError: the delete failed for another reason than the condition.
        """
        heart, self._heart = self._heart, None
        if heart is not None:
            heart.stop()
        with self._mutex:
            rvn, self._rvn = self._rvn, None
            self._renewed = 0.0
            if rvn is None:
                return
            try:
                self.client.delete_item(
                    TableName=self.table,
                    Key=self._key(),
                    ConditionExpression="attribute_exists(#pk) AND #rvn = :rvn AND #on = :on",
                    ExpressionAttributeNames={"#pk": DDB_KEY, "#rvn": DDB_RVN, "#on": DDB_OWNER},
                    ExpressionAttributeValues={":rvn": {"S": rvn}, ":on": {"S": self.owner}},
                )
            except Exception as e:
                if self._is_conditional_failure(e):
                    if self.read_item() is None:
                        return  # our delete retried after a lost answer had landed
                    log.error(
                        "DynamoDB lock %s/%s had already been taken by another owner",
                        self.table,
                        self.partition_key,
                    )
                    return
                raise HudiError(
                    f"could not release the DynamoDB lock {self.table}/{self.partition_key}: {e}"
                ) from e


#: the storage-option keys (deltalake / object_store names) of the table's S3 credentials
_S3_CREDENTIAL_KEYS = {
    "aws_access_key_id": ("aws_access_key_id", "access_key_id"),
    "aws_secret_access_key": ("aws_secret_access_key", "secret_access_key"),
    "aws_session_token": ("aws_session_token", "session_token", "token"),
}


def dynamodb_lock(storage: Storage, options: Options) -> DynamoDBLock:
    """The DynamoDB-based lock from the ``hoodie.write.lock.dynamodb.*`` options.

    Credentials: ``hoodie.aws.access.key`` / ``secret.key`` / ``session.token`` when given
    (Hudi's keys), else the table's S3 storage options' keys, else boto3's credential chain.

    Raises:
        ConfigError: no partition key (neither the option nor a table name), credentials given
            in part, or what :class:`DynamoDBLock` refuses.
    """
    c = ConcurrencyConfig
    pk: str | None = options.get(c.DYNAMODB_PARTITION_KEY) or options.get(WriteConfig.TABLE_NAME)
    if not pk:
        try:
            pk = TableConfig.load(storage).table_name
        except (HudiError, OSError):
            pk = None
    if not pk:
        raise ConfigError(
            f"{DYNAMODB_LOCK_NAMES[0]} needs option {c.DYNAMODB_PARTITION_KEY.key!r} (or "
            f"{WriteConfig.TABLE_NAME.key!r}, its default) for {storage.full_path()}"
        )
    creds: dict[str, str] = {}
    if options.is_set(c.AWS_ACCESS_KEY) or options.is_set(c.AWS_SECRET_KEY):
        access, secret = options.get(c.AWS_ACCESS_KEY), options.get(c.AWS_SECRET_KEY)
        if not access or not secret:
            raise ConfigError(
                f"options {c.AWS_ACCESS_KEY.key!r} and {c.AWS_SECRET_KEY.key!r} go together"
            )
        creds = {"aws_access_key_id": access, "aws_secret_access_key": secret}
        if options.get(c.AWS_SESSION_TOKEN):
            creds["aws_session_token"] = str(options.get(c.AWS_SESSION_TOKEN))
    elif isinstance(storage, ObjectStorage) and storage.base_uri.startswith(("s3://", "s3a://")):
        so = storage.storage_options
        for arg, keys in _S3_CREDENTIAL_KEYS.items():
            found = next((so[k] for k in keys if k in so), None)
            if found:
                creds[arg] = found
        if "aws_access_key_id" not in creds or "aws_secret_access_key" not in creds:
            creds = {}
    lease = options.get(c.LOCK_WAIT_MS) if options.is_set(c.LOCK_WAIT_MS) else DDB_DEFAULT_LEASE_MS
    return DynamoDBLock(
        table=options.get(c.DYNAMODB_TABLE) or "hudi_locks",
        partition_key=str(pk),
        region=options.get(c.DYNAMODB_REGION) or os.environ.get("AWS_REGION") or "us-east-1",
        endpoint_url=options.get(c.DYNAMODB_ENDPOINT_URL),
        credentials=creds,
        lease_ms=int(lease),
        retries=options.get(c.LOCK_RETRIES),
        billing_mode=options.get(c.DYNAMODB_BILLING_MODE),
        read_capacity=options.get(c.DYNAMODB_READ_CAPACITY),
        write_capacity=options.get(c.DYNAMODB_WRITE_CAPACITY),
        creation_timeout_ms=options.get(c.DYNAMODB_TABLE_CREATION_TIMEOUT_MS),
    )


#: the options only the DynamoDB-based lock reads
DYNAMODB_OPTION_KEYS = tuple(
    p.key
    for p in properties_of(ConcurrencyConfig)
    if p.key.startswith(("hoodie.write.lock.dynamodb.", "hoodie.aws."))
)


_in_process: dict[str, threading.Lock] = {}
_registry_lock = threading.Lock()


class InProcessLock:
    """A lock per table shared by the threads of this process."""

    def __init__(self, storage: Storage) -> None:
        with _registry_lock:
            self._lock = _in_process.setdefault(storage.full_path(), threading.Lock())
        self._holds = False

    def acquire(self) -> None:
        self._lock.acquire()
        self._holds = True

    def confirm(self) -> None:
        """Nothing to prove: the lock is a mutex of this process, it has no lease to lose."""

    def held_until(self) -> float:
        """A mutex of this process never runs out."""
        return float("inf")

    def release(self) -> None:
        """Release the mutex if this provider took it (a provider that does not hold it --
        released already, or never acquired -- must not free another holder's)."""
        if self._holds:
            self._holds = False
            self._lock.release()


TableLock = FileSystemLock | StorageBasedLock | DynamoDBLock | InProcessLock


def table_lock(storage: Storage, options: Options) -> TableLock | None:
    """The table lock that writers and table services take, from the ``hoodie.write.lock.*``
    options; None for a single writer (``hoodie.write.concurrency.mode=single_writer``)."""
    if options.get(ConcurrencyConfig.MODE) == "single_writer":
        return None
    provider = options.get(ConcurrencyConfig.LOCK_PROVIDER)
    if provider in DYNAMODB_LOCK_NAMES:
        return dynamodb_lock(storage, options)
    for key in DYNAMODB_OPTION_KEYS:
        if options.get_str(key) is not None:
            warn_no_effect(
                key,
                options.get_str(key),
                f"only the DynamoDB-based lock reads it (hoodie.write.lock.provider is {provider})",
            )
    return make_lock(
        options.get(ConcurrencyConfig.LOCK_PROVIDER),
        storage,
        options.get(ConcurrencyConfig.LOCK_EXPIRE_MIN),
        options.get(ConcurrencyConfig.LOCK_WAIT_MS),
        options.get(ConcurrencyConfig.LOCK_RETRIES),
        options.get(ConcurrencyConfig.STORAGE_LOCK_VALIDITY_S),
        options.get(ConcurrencyConfig.STORAGE_LOCK_HEARTBEAT_S),
    )


def make_lock(
    provider: str,
    storage: Storage,
    expire_min: float,
    wait_ms: int,
    retries: int,
    validity_s: int = 300,
    heartbeat_s: int = 30,
) -> TableLock:
    """The lock provider named by ``hoodie.write.lock.provider``.

    Raises:
        ConfigError: an unknown provider, or the storage-based lock's periods break Hudi's rules
            (validity >= 10 s and >= 10 x the heartbeat poll), or it is asked of a local path.
    """
    if provider in FS_LOCK_NAMES:
        return FileSystemLock(
            storage, expire_min * 60 if expire_min > 0 else 600.0, wait_ms, retries
        )
    if provider in STORAGE_LOCK_NAMES:
        # Hudi's StorageBasedLockConfig.checkRequiredProps
        v_key = ConcurrencyConfig.STORAGE_LOCK_VALIDITY_S.key
        h_key = ConcurrencyConfig.STORAGE_LOCK_HEARTBEAT_S.key
        if validity_s < 10:
            raise ConfigError(f"option {v_key!r}={validity_s} must be at least 10 seconds")
        if validity_s < 10 * heartbeat_s:
            raise ConfigError(
                f"option {v_key!r}={validity_s} must be at least 10 x {h_key!r}={heartbeat_s}"
            )
        return StorageBasedLock(storage, float(validity_s), float(heartbeat_s), wait_ms, retries)
    if provider in IN_PROCESS_NAMES:
        return InProcessLock(storage)
    if provider in DYNAMODB_LOCK_NAMES:
        return dynamodb_lock(storage, Options.of({}))
    raise ConfigError(
        f"unsupported lock provider {provider!r} (hoodie.write.lock.provider); use "
        f"{FS_LOCK_NAMES[0]}, {STORAGE_LOCK_NAMES[0]}, {DYNAMODB_LOCK_NAMES[0]} or "
        f"{IN_PROCESS_NAMES[0]}"
    )


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
    :meth:`~FileSystemLock.confirm` around a completing write."""
    if lock is None:
        yield None
        return
    lock.acquire()
    try:
        yield lock
    finally:
        lock.release()


class Periodic:
    """Calls ``fn`` every ``period_s`` on a daemon thread until it returns False or
    :meth:`stop` is called: the heartbeats of the locks and of writers' instants.

    An exception of ``errors`` (a storage hiccup) is logged and the next period retries.
    """

    def __init__(
        self,
        fn: Callable[[], object],
        period_s: float,
        name: str,
        what: str,
        errors: tuple[type[BaseException], ...] = (OSError,),
    ) -> None:
        self.period_s = period_s
        self._fn, self._what, self._errors = fn, what, errors
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.period_s):
            try:
                if self._fn() is False:
                    return
            except self._errors as e:
                log.warning("%s heartbeat failed: %s", self._what, e)

    def stop(self) -> None:
        """Stop the beats and wait for a beat under way (not when called from a beat)."""
        self._stop.set()
        if self._thread is not threading.current_thread():
            self._thread.join(timeout=max(5.0, self.period_s))


class Heartbeat:
    """Refreshes ``.hoodie/.heartbeat/<instant>`` every ``interval_s`` on a daemon thread."""

    def __init__(self, storage: Storage, instant: str, interval_s: float) -> None:
        self.storage = storage
        self.path = f"{HEARTBEAT_DIR}/{instant}"
        self.interval_s = interval_s
        self.beat()
        self._beats = Periodic(self.beat, interval_s, f"heartbeat-{instant}", "instant")

    def beat(self) -> None:
        # atomic: a peer reading the heartbeat never sees a half-written (empty) file
        self.storage.write_atomic(self.path, str(int(time.time() * 1000)).encode())

    def stop(self, delete: bool = True) -> None:
        self._beats.stop()
        if delete:
            self.storage.delete(self.path)


def beat_once(storage: Storage, instant: str) -> None:
    """Refresh ``instant``'s heartbeat once (writers without a long-lived process)."""
    storage.write_atomic(f"{HEARTBEAT_DIR}/{instant}", str(int(time.time() * 1000)).encode())


def heartbeat_expired(storage: Storage, instant: str, timeout_s: float) -> bool:
    """True if ``instant`` has no heartbeat or its last beat is older than ``timeout_s``."""
    info = storage.info(f"{HEARTBEAT_DIR}/{instant}")
    if info is None:
        return True
    try:
        last_ms = int(storage.read_bytes(f"{HEARTBEAT_DIR}/{instant}").decode())
    except (FileNotFoundError, ValueError):
        last_ms = 0
    last_ms = max(last_ms, info.mtime_ms)
    return (time.time() * 1000 - last_ms) / 1000 > timeout_s
