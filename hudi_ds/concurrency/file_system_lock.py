"""Hudi's ``FileSystemBasedLockProvider``: the lock file ``.hoodie/lock``."""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
import time
import uuid

from hudi_ds.concurrency.clock import CLOCK_DRIFT_S, StorageClock
from hudi_ds.concurrency.heartbeat import Periodic
from hudi_ds.concurrency.lock import LEASE_MARGIN_S, LockTimeoutError
from hudi_ds.errors import LockLostError
from hudi_ds.storage import Storage
from hudi_ds.storage_types import ObjectVersion

log = logging.getLogger("hudi_ds.write")

LOCK_FILE = ".hoodie/lock"


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
        over, ago = self.clock.lease_outlived(LOCK_FILE, self.expire_s)
        if over or ago is None:
            return over
        if held is not None:
            # expired by this host's clock, yet written within its lease on the storage's
            self.last_seen = (
                f"owner {held[0]}, expired by this host's clock but written {ago:.1f} s ago on "
                f"the storage's clock (lease {self.expire_s:g} s): "
                f"{self.clock.skew_note(held[1] - self.expire_s, ago)}; not taken over"
            )
            where = f"the lock {self.storage.full_path(LOCK_FILE)}"
            self.clock.alarm_skew(raw, where, self.last_seen, ago, self.expire_s)
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
