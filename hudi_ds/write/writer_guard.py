"""A write client's writes as the table's other writers see them, and its guards against them.

Each write is announced to other writers: with several writers (optimistic concurrency) by the
instant's heartbeat (``.hoodie/.heartbeat/<instant>``: a write whose heartbeat expired is failed,
and the next writer rolls it back), with a single writer also by its writer record, claimed
before its instant exists (:mod:`hudi_ds.concurrency.liveness`). A single writer checks at its
start that no other writer is alive (:meth:`WriterGuard.alone_at_start`), then rolls back the
failed writes; at its commit that no other writer took it for failed or committed meanwhile
(:meth:`WriterGuard.concurrent_cause`); after its completed file is written that no other writer
rolls it back (:meth:`WriterGuard.fence_claim`). See docs/concurrency.md.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

from hudi_ds.concurrency.heartbeat import HEARTBEAT_DIR, Heartbeat, beat_once, heartbeat_expired
from hudi_ds.concurrency.liveness import (
    Liveness,
    WriterHeartbeat,
    claim,
    liveness,
    record_path,
    recorded_writers,
    release,
    revoke,
)
from hudi_ds.config import ConcurrencyConfig, Options
from hudi_ds.errors import ConcurrentWriterError, HudiError, WriteError
from hudi_ds.storage import Storage
from hudi_ds.timeline.instant import COMPACTION, LOG_COMPACTION, Instant
from hudi_ds.timeline.timeline import DATA_ACTIONS, Timeline
from hudi_ds.timeline.view import TableState
from hudi_ds.write.plan import WritePlan
from hudi_ds.write.rollback_executor import (
    pending_rollback_of,
    pending_rollback_targets,
    rollback_failed_writes,
    rollback_of,
)

log = logging.getLogger("hudi_ds.write")

#: what a single writer's refusal tells the user to do
SEVERAL_WRITERS = (
    "hoodie.write.concurrency.mode=single_writer (the default) allows one writer at a time: "
    "several writers need hoodie.write.concurrency.mode=optimistic_concurrency_control (with "
    "a lock, hoodie.write.lock.provider); otherwise retry once the other write is done "
    "(docs/concurrency.md)"
)


class WriterGuard:
    """The writes of one write client (on ``storage``, with its validated ``options``) as other
    writers see them: their heartbeats, a single writer's claims, and the checks against other
    writers at start and commit.

    Attributes:
        multi_writer: several writers may run (optimistic concurrency control).
    """

    def __init__(self, storage: Storage, options: Options, multi_writer: bool) -> None:
        self.storage = storage
        self.options = options
        self.multi_writer = multi_writer
        self._heartbeats: dict[str, Heartbeat | WriterHeartbeat] = {}
        # the instants this client (a single writer) claimed with a writer record
        # (hudi_ds.concurrency.liveness): they end when their post-commit services do
        self._claims: set[str] = set()

    def claimed(self, instant: str) -> bool:
        """Whether ``instant`` is a single writer's write claimed here and not ended yet."""
        return instant in self._claims

    def claims(self) -> set[str]:
        """The instants claimed here and not ended yet."""
        return set(self._claims)

    def beat(self, instant: str, joined: bool) -> None:
        """Announce the started write of ``instant``: with several writers its heartbeat thread;
        a task ``joined`` to another's instant beats once."""
        if self.multi_writer and not joined:
            interval = self.options.get(ConcurrencyConfig.HEARTBEAT_MS) / 1000
            self._heartbeats[instant] = Heartbeat(self.storage, instant, interval)
        elif joined:
            # a task joining a streaming micro-batch's instant: one beat per task keeps the
            # instant alive for other writers' lazy rollback while the batch runs (and makes
            # a single writer starting meanwhile refuse instead of rolling it back)
            beat_once(self.storage, instant)

    def failed_writes_policy(self) -> str:
        policy = self.options.get(ConcurrencyConfig.FAILED_WRITES_POLICY)
        return policy or ("LAZY" if self.multi_writer else "EAGER")

    def heartbeat_timeout(self) -> float:
        """Seconds after its last beat that a writer counts as failed (Hudi's
        ``hoodie.client.heartbeat.interval_in_ms`` x ``tolerable.misses``)."""
        o = self.options
        return (
            o.get(ConcurrencyConfig.HEARTBEAT_MS)
            / 1000
            * max(1, o.get(ConcurrencyConfig.HEARTBEAT_MISSES))
        )

    def is_dead(self, instant: str) -> bool:
        return heartbeat_expired(self.storage, instant, self.heartbeat_timeout())

    def liveness(self, instant: str) -> Liveness:
        return liveness(self.storage, instant, self.heartbeat_timeout())

    def is_failed(self, instant: str) -> bool:
        """Whether the writer of pending ``instant`` is gone (:meth:`liveness`): what an
        upgrade rolls back before it moves the timeline."""
        return not self.liveness(instant).alive

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_heartbeats"] = {}  # threads stay with the process that started them
        return state

    def claim(self, instant: str) -> bool:
        """A single writer's claim of ``instant`` before its requested file exists: its writer
        record and its heartbeat (:mod:`hudi_ds.concurrency.liveness`). False if another writer
        claimed the same time."""
        if not claim(self.storage, instant):
            return False
        self._claims.add(instant)
        interval = self.options.get(ConcurrencyConfig.HEARTBEAT_MS) / 1000
        self._heartbeats[instant] = WriterHeartbeat(self.storage, instant, interval)
        return True

    def stop(self, instant: str, also: Sequence[str] = ()) -> None:
        """End the write of ``instant``: its heartbeat (and a single writer's record); the
        objects ``also`` (a completed write's markers) are deleted in the same request."""
        hb = self._heartbeats.pop(instant, None)
        if isinstance(hb, Heartbeat):
            hb.stop(delete=False)  # (deleted below, with the rest)
        elif hb is not None:
            hb.stop()
        if instant in self._claims:
            self._claims.discard(instant)
            release(self.storage, instant, also)
        else:
            self.storage.discard_all([f"{HEARTBEAT_DIR}/{instant}", *also])

    def alone_at_start(self, state: TableState, req: Instant, roll_back: bool) -> None:
        """A single writer's check once its instant ``req`` is claimed and requested: no other
        writer may be alive; then the failed writes are rolled back (``roll_back``).

        The writers are the single writers' records (a write from its claim to the end of its
        post-commit table services, listed now) and the pending writes on the timeline with
        their heartbeats (writers of other modes, streaming micro-batches). Each writer
        claims before it looks: of two writers starting at the same moment, at least one
        sees the other and refuses, so no two single writers are past this check at once --
        nor roll back the same failed write at once. Records of dead writers whose write is
        over are deleted.

        Raises:
            ConcurrentWriterError: another writer is alive (named, with why); ``req`` is
                withdrawn.
        """
        instant = req.requested_time
        tl = state.timeline
        pending = pending_writes(tl)
        pending.discard(instant)
        recorded = [t for t in recorded_writers(self.storage) if t != instant]
        judged = {t: self.liveness(t) for t in sorted(pending | set(recorded))}
        live = {t: v for t, v in judged.items() if v.alive}
        if live:
            state.timeline_writer().delete_instant_files(req)
            self.stop(instant)
            raise ConcurrentWriterError(
                f"another writer is writing the table at {self.storage.base_uri}: "
                + "; ".join(f"instant {t} ({v.why})" for t, v in live.items())
                + f". {SEVERAL_WRITERS}. A writer that crashed counts as failed once its "
                f"heartbeat is older than {self.heartbeat_timeout():g} s "
                "(hoodie.client.heartbeat.interval_in_ms x "
                "hoodie.client.heartbeat.tolerable.misses; at once on the machine it ran on), "
                "and the next write rolls it back"
            )
        for t in recorded:
            if t not in pending:  # a writer that died after its write, or before its instant
                release(self.storage, t)
        if roll_back:
            self.roll_back_dead(state, pending)

    def roll_back_dead(self, state: TableState, dead: set[str]) -> None:
        """Roll back the failed writes ``dead`` (:meth:`alone_at_start`), Hudi's eager
        rollback of a single writer. Each one's writer record is taken first: a writer that
        was only stalled past its heartbeat and goes on finds it gone and does not commit
        (:meth:`~hudi_ds.write.client.WriteClient.commit`)."""
        if not dead and not state.timeline.pending().filter_actions("rollback"):
            return
        # listed again: the listing the start began with may show a write as pending that its
        # writer completed or rolled back since (and ended: its record is gone)
        writes = pending_writes(state.reload_timeline())
        dead = dead & writes
        for t in sorted(dead):
            revoke(self.storage, t)
        # the pending rollbacks of other instants (a compaction attempt's) are finished as
        # Hudi's eager rollback finishes them
        rollback_failed_writes(
            state, is_failed=dead.__contains__, resume_if=lambda t: t in dead or t not in writes
        )

    def rollback_failed_before(self, state: TableState, instant: str) -> None:
        """A streaming micro-batch's commit: roll back the pending writes older than
        ``instant`` (earlier attempts that crashed: Hudi's eager rollback of a single writer),
        unless a single writer's write is alive.

        Raises:
            ConcurrentWriterError: a single writer (a batch or embedded write) is alive.
        """
        live = {}
        for t in recorded_writers(self.storage):
            v = self.liveness(t)
            if v.alive:
                live[t] = v
            elif t < instant:
                revoke(self.storage, t)  # as _roll_back_dead does
        if live:
            raise ConcurrentWriterError(
                f"instant {instant} of the streaming sink is not committed: another writer is "
                "writing the table: "
                + "; ".join(f"instant {t} ({v.why})" for t, v in live.items())
                + f". {SEVERAL_WRITERS}"
            )
        rollback_failed_writes(state, before=instant)

    def concurrent_cause(
        self, state: TableState, instant: str, plan: WritePlan | None
    ) -> ConcurrentWriterError | None:
        """A single writer's check at commit, on the timeline just listed: this write may
        complete only if no other writer took it for failed (its writer record is gone, or a
        rollback targets it), no other write committed since its plan listed the timeline (a
        writer that ended between that listing and this one's start check), and no older
        write is alive (one without a writer record, which the start check cannot see
        coming: a streaming micro-batch's)."""
        tl = state.timeline
        taken = instant in self._claims and not self.storage.is_file(record_path(instant))
        if taken or tl.get(instant) is None or rollback_of(tl, instant) is not None:
            return ConcurrentWriterError(
                f"instant {instant} was rolled back by another writer, which took it for a "
                f"failed write (its heartbeat had expired): it is not committed. "
                f"{SEVERAL_WRITERS}"
            )
        seen = plan.visibility.instants if plan is not None else None
        for i in tl.commits():
            t = i.requested_time
            if seen is None or t == instant or t in seen:
                continue
            if tl.origin_action(t) in (COMPACTION, LOG_COMPACTION):
                continue  # a compaction's new slices take this write's logs (conflict.py)
            if plan is not None and any(r.instant == t for r in plan.pending_resizes.values()):
                continue  # a resize this write wrote beside: its children hold the copies
            if tl.is_clustering(i):
                # a table service beside the writer (the streaming sink's background process):
                # a conflict only if it replaced a file group this write wrote, which the
                # commit checks with the write's files (conflict.reject_replaced_file_groups)
                continue
            return ConcurrentWriterError(
                f"instant {instant} is not committed: another writer committed instant {t} "
                f"({i.action}) while it was written. {SEVERAL_WRITERS}"
            )
        for i in tl.pending_writes():
            t = i.requested_time
            if t >= instant or pending_rollback_of(tl, t) is not None:
                continue  # younger: refused at its own commit; or being rolled back
            v = self.liveness(t)
            if v.alive and not v.recorded:  # a single writer's: refused at its start
                return ConcurrentWriterError(
                    f"instant {instant} is not committed: another writer's instant {t} ({v.why}),"
                    f" started before it, is in progress. {SEVERAL_WRITERS}"
                )
        return None

    def concurrent_failure(
        self, state: Callable[[], TableState], instant: str, plan: WritePlan | None
    ) -> ConcurrentWriterError | None:
        """Why a single writer's write of ``instant`` failed, if another writer is the cause
        (it rolled the write back, committed meanwhile, or an older write is alive):
        the error to raise instead of the one the write met (a file that vanished under it).
        Lists the timeline of ``state()`` again; None when no other writer is to blame."""
        try:
            opened = state()
            opened.reload_timeline()
            return self.concurrent_cause(opened, instant, plan)
        except (OSError, HudiError) as e:
            log.warning("could not tell why the write of %s failed: %s", instant, e)
            return None

    def fence_claim(self, state: TableState, done: Instant) -> None:
        """A single writer's fence after writing the completed file of ``done``.

        A writer that rolls the instant back as failed takes its writer record, writes its
        rollback R, then looks whether the instant completed meanwhile (then it withdraws R:
        :func:`~hudi_ds.write.rollback_executor.execute_rollback`). Here, after the completed
        file is written, the record is looked at (one probe) and, if it is gone, the timeline
        for R: one of the two sees the other. If R targets ``done``, its completed file is
        deleted again and the write raises. (A record released without R -- a writer that took
        this one for dead after its commit -- leaves the commit standing.)

        Raises:
            ConcurrentWriterError: another writer rolls the instant back.
        """
        if self.storage.is_file(record_path(done.requested_time)):
            return
        if rollback_of(state.reload_timeline(), done.requested_time) is None:
            return
        self.storage.delete(state.timeline_writer().path_of(done))
        state.reload_timeline()
        raise ConcurrentWriterError(
            f"instant {done.requested_time} was withdrawn: another writer rolls it back, taking "
            f"it for a failed write (its heartbeat had expired); it is not committed. "
            f"{SEVERAL_WRITERS}"
        )

    def taken_over(self, state: TableState, instant: str) -> bool:
        """Whether another writer is rolling back ``instant`` (it took the write for failed:
        the writer record is gone and its rollback is pending); that rollback is left alone."""
        if instant not in self._claims or self.storage.is_file(record_path(instant)):
            return False
        return pending_rollback_of(state.reload_timeline(), instant) is not None


def pending_writes(timeline: Timeline) -> set[str]:
    """The pending writes on ``timeline``: its pending commit/deltacommit/replacecommit
    instants and the writes that pending rollbacks target (gone already, or still there)."""
    out = {i.requested_time for i in timeline.pending_writes()}
    for t in pending_rollback_targets(timeline):
        i = timeline.get(t)
        if i is None or i.action in DATA_ACTIONS:
            out.add(t)
    return out


def rolled_back_by_other(timeline: Timeline, instant: str) -> WriteError | None:
    """The error of a write whose ``instant`` another writer rolled back as failed (gone from
    ``timeline``, or a rollback targets it), else None."""
    if timeline.get(instant) is not None and rollback_of(timeline, instant) is None:
        return None
    return WriteError(
        f"instant {instant} was rolled back by another writer: its heartbeat looked expired "
        "(this process stalled longer than hoodie.client.heartbeat.interval_in_ms x "
        "hoodie.client.heartbeat.tolerable.misses); the write is not committed, retry it"
    )
