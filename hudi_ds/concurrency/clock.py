"""The storage's own clock, against which a lease's age is measured (docs/concurrency.md,
"Clocks")."""

from __future__ import annotations

import logging
import time

from hudi_ds.storage import Storage

log = logging.getLogger("hudi_ds.write")

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
        #: the lease body whose clock skew was last logged (each is logged once)
        self._alarmed: bytes | None = None

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

    def lease_outlived(self, rel: str, lease_s: float) -> tuple[bool, float | None]:
        """Whether the lease in ``rel``, which this host's clock already calls expired, ran out
        on the storage's clock too (not written for ``lease_s`` past the stamps' resolution and
        drift), and how long ago it was written (None: unknown -- it is then kept)."""
        ago = self.written_ago(rel)
        return ago is not None and ago > lease_s + MTIME_RESOLUTION_S + CLOCK_DRIFT_S, ago

    def alarm_skew(self, raw: bytes, what: str, seen: str, ago: float, lease_s: float) -> None:
        """Log, once per lease body ``raw``, a clock skew: the lease ``what`` is live on the
        storage's clock though this host's clock calls it expired.

        Within the margin past the lease (the storage's coarse stamps err either way by up to
        a second) a lease of a holder on the same clock is merely waited out, so skew is named
        only when the storage says the lease is clearly live."""
        if self._alarmed != raw and ago < lease_s - MTIME_RESOLUTION_S:
            self._alarmed = raw
            log.error("clock skew: %s is live, %s; synchronise the hosts' clocks (NTP)", what, seen)

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
