"""What every table service shares: the opened table, its options, instants and progress.

A service works on a :class:`ServiceContext`: the opened table (one
:class:`~hudi_ds.timeline.view.TableState`: storage, ``hoodie.properties``, timeline), the
validated options (:class:`~hudi_ds.config.ServiceConfig` keys plus the write/read keys a user
may pass along), and helpers to allocate a new instant time and to report progress.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

from hudi_ds.concurrency.lock import TableLock
from hudi_ds.concurrency.providers import table_lock
from hudi_ds.concurrency.transaction import Transaction
from hudi_ds.config import ConcurrencyConfig, Options, WriteConfig, validated
from hudi_ds.errors import TimelineError, UnsupportedError
from hudi_ds.faults import crash_point
from hudi_ds.layout.bloom_filter import BloomFilterSpec
from hudi_ds.metadata.bloom_filters import BLOOM_FILTERS_PARTITION
from hudi_ds.metadata.records import declared_partitions
from hudi_ds.storage import Storage
from hudi_ds.table.unsupported import Use, refuse_unsupported
from hudi_ds.table_config import TableConfig
from hudi_ds.timeline.instant import MAX_INSTANT_AHEAD_MS, Instant, State, new_instant_time
from hudi_ds.timeline.timeline import Timeline
from hudi_ds.timeline.view import TableState
from hudi_ds.timeline.writer import TimelineWriter
from hudi_ds.write.metadata_sync import install_metadata_writer
from hudi_ds.write.upgrade import UPGRADABLE_VERSIONS

#: (table version, timeline layout) pairs the services write.
WRITABLE_VERSIONS = frozenset({(6, 1), (8, 2), (9, 2)})

#: ``progress(done, total, what)`` -- called as long work advances (the CLI draws a bar).
Progress = Callable[[int, int, str], None]


def no_progress(done: int, total: int, what: str) -> None:
    """The default progress callback: nothing."""


@dataclass
class ServiceContext:
    """An opened table (one :class:`~hudi_ds.timeline.view.TableState`) plus the options of a
    service run.

    The services read the table through ``state``: ``hoodie.properties`` is read once, the
    timeline is kept current by the instants the services write (:meth:`writer`), and it is
    listed again (:meth:`reload_timeline`) only where Hudi's services reload their meta
    client: when a service run starts (its entry point, under the table lock in multi-writer
    mode), and where another process may have changed the table meanwhile. The checks whether
    a service is due (:func:`~hudi_ds.services.clean.clean_due`,
    :func:`~hudi_ds.services.compaction.compaction_due`, ...) read the state as it is, so a
    writer's post-commit services list nothing when nothing is due.

    Attributes:
        state: the opened table.
        options: validated options.
        progress: progress callback for long work.
        track_keys: compactions run here report the record keys their new base files add and
            drop (:attr:`~hudi_ds.services.compaction_execute.CompactionResult.key_changes`), for
            the writer's state index (:meth:`hudi_ds.index.state.StateIndex.compacted`).
        held_lock: the table lock while this context holds it (:meth:`locked`), else None.
    """

    state: TableState
    options: Options = field(default_factory=Options)
    progress: Progress = no_progress
    track_keys: bool = False
    held_lock: TableLock | None = field(default=None, repr=False, compare=False)
    # the transaction of held_lock (made on first use for a lock another context took)
    _txn: Transaction | None = field(default=None, repr=False, compare=False)

    @classmethod
    def open(
        cls,
        path: str | Storage,
        options: Mapping[str, Any] | Options | None = None,
        progress: Progress | None = None,
    ) -> ServiceContext:
        """Open the table at ``path`` and validate ``options``.

        Raises:
            TableNotFoundError: no Hudi table there.
            ConfigError: an unknown ``hoodie.*`` key or an invalid value.
        """
        ctx = cls.of(TableState.open(path), options, progress)
        # the metadata table mirrors what the services complete (Java: the table's
        # HoodieTableMetadataWriter inside every action's commit)
        install_metadata_writer(ctx.state, ctx.options)
        return ctx

    @classmethod
    def of(
        cls,
        state: TableState,
        options: Mapping[str, Any] | Options | None = None,
        progress: Progress | None = None,
    ) -> ServiceContext:
        """Run services on an already opened table (a writer's state, current after its
        commit) and validate ``options``.

        Raises:
            ConfigError: an unknown ``hoodie.*`` key or an invalid value.
        """
        return cls(state, validated(options), progress or no_progress)

    @property
    def storage(self) -> Storage:
        """The table's storage."""
        return self.state.storage

    @property
    def config(self) -> TableConfig:
        """The table's ``hoodie.properties``."""
        return self.state.config

    # -- timeline ---------------------------------------------------------------------------------
    @property
    def layout(self) -> int:
        """The timeline layout version."""
        return self.state.layout

    def timeline(self) -> Timeline:
        """The state's active timeline: as last listed, plus the instants written since through
        :meth:`writer` (listed on first use)."""
        return self.state.timeline

    def reload_timeline(self) -> Timeline:
        """List the active timeline again and keep it: after taking the table lock, and where
        another process may have changed the table since the state was listed."""
        return self.state.reload_timeline()

    def writer(self) -> TimelineWriter:
        """A writer of instant files that keeps the state's timeline current (no listing)."""
        return self.state.timeline_writer()

    @contextmanager
    def locked(self, reload: bool = False) -> Iterator[TableLock | None]:
        """Hold the table lock (multi-writer mode) for the block, with the timeline listed
        again once it is taken -- Hudi's services reload the active timeline inside their
        transaction (``BaseHoodieTableServiceClient`` under ``TransactionManager``). A single
        writer takes no lock and keeps its state (unless ``reload``).

        While the lock is held, every instant completed through this context's state is fenced
        as the writer's commit is (:class:`~hudi_ds.concurrency.transaction.Transaction`,
        docs/concurrency.md): just before its completed file is written the lock must still be
        held -- the state's ``before_complete`` hook checks it, so rollbacks executed by the
        write layer are fenced too --, and afterwards the completion stands only if it was
        written before the lease could run out or the lock is confirmed (:meth:`complete`);
        the metadata table's own compaction and clean check it through ``state.fence``.
        Re-entrant: a block inside another one of the same context uses the lock already held.

        Yields:
            The held lock (None for a single writer).
        """
        if self.held_lock is not None:
            yield self.held_lock
            return
        with Transaction.begin(self.state, self.lock(), fence_completions=True) as txn:
            if txn.lock is not None or reload:
                self.reload_timeline()
            if txn.lock is None:
                yield None
                return
            self.held_lock, self._txn = txn.lock, txn
            try:
                yield txn.lock
            finally:
                self.held_lock, self._txn = None, None

    def _transaction(self) -> Transaction:
        """The transaction of the lock this context holds (a no-op one without)."""
        txn = self._txn
        if txn is None or txn.lock is not self.held_lock or txn.state is not self.state:
            txn = self._txn = Transaction(self.state, self.held_lock)
        return txn

    def still_locked(self, force: bool = False) -> None:
        """Inside :meth:`locked`, during long work (deleting or writing many files): prove the
        lock is still held (:func:`lock_fence`: free while the lease cannot have run out, else
        one read of the lock) at most every
        :data:`~hudi_ds.concurrency.transaction.CONFIRM_EVERY_S` -- at once after the process
        was paused -- or now (``force``: before a change another holder of the lock could not
        repair), so a service that lost the lock stops before its next change
        (:meth:`Transaction.still_held`).

        Raises:
            LockLostError: the lock was lost (broken or taken over) since it was taken.
        """
        if self.held_lock is not None:
            self._transaction().still_held(force)

    def complete(self, instant: Instant, content: bytes) -> Instant:
        """Complete inflight ``instant`` (write its completed file), fenced as the writer's
        commit (:meth:`Transaction.complete`): with several writers it runs under the table lock
        (taken here unless held); just before the completed file is written the lock must
        still be held, and afterwards the completion stands if it was written before the lease
        could run out, else only if a read confirms the lock was kept; otherwise the
        completed file is deleted at once -- the instant is pending again, for the next run of
        the service to finish or roll back -- and :class:`~hudi_ds.errors.LockLostError` is
        raised.

        Returns:
            The completed instant.

        Raises:
            LockLostError: the lock was lost; the completion is withdrawn.
        """
        with self.locked():
            # a service that lost the lock learns it (Transaction.confirm) before the
            # completion's own checks (another holder may have finished this very instant)
            return self._transaction().complete(
                lambda: self.writer().complete(instant, content), "service_written"
            )

    def confirm_completed(self, done: Instant | str, written: float | None = None) -> None:
        """The fence after completing ``done`` (an instant, or the requested time of one
        completed elsewhere: the write layer's rollback executor) under the held lock, its
        completed file written at ``written`` (``time.monotonic()``; default now, which is
        later than the write). See :meth:`complete`.

        Raises:
            LockLostError: the lock was lost; ``done``'s completed file is deleted.
        """
        if self.held_lock is None:
            return

        def completed_file() -> str | None:
            if isinstance(done, Instant):
                return self.writer().path_of(done)
            return self.reload_timeline().file_paths(done).get(State.COMPLETED)

        self._transaction().stands(written, completed_file)

    def require_writable(self, what: str) -> None:
        """Services that write support table version 6 (timeline layout 1) and versions 8 and 9
        (timeline layout 2, Hudi 1.x), as the writer does.

        Raises:
            UnsupportedError: for other table versions or a layout the version does not use;
                a table using a feature hudi_ds does not write (CDC, bootstrap skeletons,
                schema on read: :func:`~hudi_ds.table.unsupported.refuse_unsupported`).
        """
        if (self.config.table_version, self.layout) not in WRITABLE_VERSIONS:
            upgrade = (
                "; a write upgrades it to 6 first (as Hudi 0.14/0.15's writers do)"
                if self.config.table_version in UPGRADABLE_VERSIONS
                else ""
            )
            raise UnsupportedError(
                f"{what} writes table versions 6 (timeline layout 1), 8 and 9 (timeline "
                f"layout 2); the table at {self.storage.base_uri} is version "
                f"{self.config.table_version} with timeline layout {self.layout}{upgrade}"
            )
        refuse_unsupported(self.state, Use.WRITE)  # CDC, bootstrap, schema on read

    def new_instant(
        self, action: str, content: bytes = b"", timeline: Timeline | None = None
    ) -> Instant:
        """Create ``T.<action>.requested`` for a new, unique instant time T after every instant.

        Under the table lock the new plan is fenced as a completion is (:meth:`complete`): it
        was made from the timeline listed under the lock -- a compaction plan without the logs
        of a write that committed after a lost lease was taken over would leave them in a slice
        the compaction supersedes --, so it stands only if it was written before the lease
        could run out or the lock is confirmed; otherwise its requested file is deleted at once
        and :class:`~hudi_ds.errors.LockLostError` is raised.

        Returns:
            The requested instant.

        Raises:
            LockLostError: the lock was lost; the plan is withdrawn.
        """
        tl = timeline if timeline is not None else self.timeline()
        last = tl.latest_time()  # every requested and completion time on it
        writer = self.writer()
        for _ in range(100):
            ts = new_instant_time(after=last, max_ahead_ms=MAX_INSTANT_AHEAD_MS)
            req = Instant(ts, action, State.REQUESTED)
            crash_point("service_plan")
            if writer.create_requested(req, content):
                written = time.monotonic()
                if self.held_lock is not None:
                    plan = functools.partial(writer.path_of, req)
                    self._transaction().stands(written, plan, what="plan")
                return req
            last = ts
        raise TimelineError(f"could not allocate a unique instant time for a {action}")

    def base_file_bloom(self, config: TableConfig) -> BloomFilterSpec | None:
        """The key footers of the base files this service writes into a table of ``config``
        (:meth:`BloomFilterSpec.for_base_files`; the index type the options name, else the one
        the table records)."""
        index_type = (
            self.options.get(WriteConfig.INDEX_TYPE)
            if self.options.is_set(WriteConfig.INDEX_TYPE)
            else config.get(TableConfig.INDEX_TYPE) or ""
        )
        return BloomFilterSpec.for_base_files(
            self.options,
            config.populate_meta_fields,
            index_type,
            BLOOM_FILTERS_PARTITION in declared_partitions(config),
        )

    def get(self, prop: Any) -> Any:
        """The value of a :class:`ServiceConfig` option."""
        return self.options.get(prop)

    @property
    def multi_writer(self) -> bool:
        """Several writers may run (``hoodie.write.concurrency.mode`` is not single_writer)."""
        return bool(self.options.get(ConcurrencyConfig.MODE) != "single_writer")

    def lock(self) -> TableLock | None:
        """The table lock the writers take (``hoodie.write.lock.provider``); None for a single
        writer. Table services take it for their timeline transitions, as Hudi's do (its
        ``TransactionManager`` around scheduling and completing a table service)."""
        return table_lock(self.storage, self.options)


_F = TypeVar("_F", bound=Callable[..., Any])


def under_table_lock(fn: _F) -> _F:
    """Run a service entry point ``fn(ctx, ...)`` holding the table lock (multi-writer mode), on
    a timeline listed afresh once the lock is taken (as Hudi's services reload the active
    timeline inside their transaction: another process may have changed the table). The
    completions inside are fenced (:meth:`ServiceContext.locked`)."""

    @functools.wraps(fn)
    def run(ctx: ServiceContext, *args: Any, **kwargs: Any) -> Any:
        with ctx.locked(reload=True):
            return fn(ctx, *args, **kwargs)

    return cast(_F, run)
