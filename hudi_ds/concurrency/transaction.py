"""The transaction around a commit: the table lock held while a writer or a table service checks
the timeline and completes an instant, and the fence of that completion.

Writers (:meth:`hudi_ds.write.client.WriteClient.commit`) and table services
(:meth:`hudi_ds.services.base.ServiceContext.locked`) run the same protocol (docs/concurrency.md,
"Fencing"), as Hudi's ``TransactionManager`` wraps both:

1. the lock is taken (:meth:`Transaction.begin`); while it is held, the state's ``fence`` checks
   it, so the metadata table's compaction and clean inside the commit are fenced too;
2. **before** the completed file is written the lock must still be held (:meth:`confirm`);
3. **after** it is written, the completion stands if it was written before the lease this
   process holds could run out, else only if a read of the lock shows it was kept; otherwise
   the completed file is withdrawn at once and :class:`~hudi_ds.errors.LockLostError` raised
   (:meth:`stands`).

A lease lost between the two checks is caught by the second: a commit is acknowledged only if
it provably was written while this process held the lock. With a single writer (no lock) every
step is a no-op.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from hudi_ds.concurrency.lock import TableLock, held, lock_fence
from hudi_ds.errors import LockLostError
from hudi_ds.faults import crash_point
from hudi_ds.timeline.instant import Instant
from hudi_ds.timeline.view import TableState

log = logging.getLogger("hudi_ds.concurrency")

#: work under the table lock checks it at least this often (seconds) while it deletes or writes
#: many files (:meth:`Transaction.still_held`), so that one that lost the lock stops soon
CONFIRM_EVERY_S = 0.5


class Transaction:
    """The table lock ``lock`` held on ``state`` around a commit (None: a single writer, no lock).

    Attributes:
        state: the opened table the commit completes its instant in.
        lock: the held table lock, or None.
    """

    def __init__(self, state: TableState, lock: TableLock | None) -> None:
        self.state = state
        self.lock = lock
        # 0: a transaction handed a lock taken elsewhere confirms it at its first check
        self._confirmed_at = 0.0

    @classmethod
    @contextmanager
    def begin(
        cls, state: TableState, lock: TableLock | None, *, fence_completions: bool = False
    ) -> Iterator[Transaction]:
        """Take ``lock`` (no-op for None) for the block and install its fence on ``state``
        (``state.fence``: the metadata table's compaction and clean inside check it).

        Args:
            fence_completions: also check the lock just before every instant completed through
                ``state`` (its ``before_complete`` hook, then the metadata table's mirroring):
                a table service's completions -- rollbacks the write layer executes for it
                included -- so nothing is completed, not even in the metadata table, once the
                lock is lost. A writer's commit confirms the lock itself (:meth:`confirm`).

        Yields:
            The transaction.
        """
        with held(lock):
            if lock is None:
                yield cls(state, None)
                return
            hook, fence = state.before_complete, state.fence
            state.fence = lock_fence(lock)
            if fence_completions:
                state.before_complete = _confirming(state.fence, hook)
            txn = cls(state, lock)
            txn._confirmed_at = time.monotonic()
            try:
                yield txn
            finally:
                state.before_complete, state.fence = hook, fence

    def confirm(self) -> None:
        """The fence before a completing write: the lock is still held (free while the lease
        cannot have run out, else one read of the lock).

        Raises:
            LockLostError: the lock was lost (broken or taken over) since it was taken.
        """
        if self.lock is None:
            return
        lock_fence(self.lock)(None)
        self._confirmed_at = time.monotonic()

    def still_held(self, force: bool = False) -> None:
        """During long work under the lock (deleting or writing many files): :meth:`confirm` at
        most every :data:`CONFIRM_EVERY_S` -- at once after the process was paused -- or now
        (``force``: before a change another holder of the lock could not repair).

        Raises:
            LockLostError: the lock was lost since it was taken.
        """
        if self.lock is None:
            return
        if force or time.monotonic() - self._confirmed_at >= CONFIRM_EVERY_S:
            self.confirm()

    def stands(
        self, written: float | None, path: Callable[[], str | None], what: str = "completed instant"
    ) -> None:
        """The fence after a write under the lock, which returned at ``written``
        (``time.monotonic()``; None: now, later than the write): it stands if that was before
        the lease this process holds could run out (any taker came later and sees it), or else
        if the lock was held without a break until now (one read of the lock). Otherwise a
        process that took the lock over may have checked its conflicts or planned a compaction
        on a timeline without it: the written file (``path()``, None: nothing to delete) is
        deleted at once, the timeline listed again, and the write raises.

        Raises:
            LockLostError: the lock was lost; the file is withdrawn.
        """
        if self.lock is None:
            return
        try:
            lock_fence(self.lock)(written)
        except LockLostError:
            withdrawn = path()
            if withdrawn is not None:
                self.state.storage.delete(withdrawn)
                log.error("withdrew the %s %s: the table lock was lost", what, withdrawn)
            self.state.reload_timeline()
            raise

    def complete(self, publish: Callable[[], Instant], crash_at: str) -> Instant:
        """Complete an instant by ``publish()`` (which writes its completed file) fenced before
        and after: :meth:`confirm`, the write, then :meth:`stands` (``crash_at``: the crash
        point just after the write, for tests).

        Returns:
            The completed instant.

        Raises:
            LockLostError: the lock was lost; nothing was published, or the completed file is
                withdrawn (the instant is inflight again).
        """
        self.confirm()
        done = publish()
        written = time.monotonic()
        crash_point(crash_at)
        self.stands(written, lambda: self.state.timeline_writer().path_of(done))
        return done


def _confirming(
    fence: Callable[[float | None], None], hook: Callable[[Instant, bytes], None] | None
) -> Callable[[Instant, bytes], None]:
    """The ``before_complete`` hook of a state under the table lock: check the lock
    (``fence``), then mirror the instant into the metadata table (``hook``) -- nothing is
    completed, not even in the metadata table, by a process that lost the lock."""

    def before_complete(instant: Instant, content: bytes) -> None:
        fence(None)
        if hook is not None:
            hook(instant, content)

    return before_complete
