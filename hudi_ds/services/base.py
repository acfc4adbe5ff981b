"""What every table service shares: the opened table, its options, instants and progress.

A service works on a :class:`ServiceContext`: the table's storage and ``hoodie.properties``,
the validated options (:class:`~hudi_ds.config.ServiceConfig` keys plus the write/read keys a
user may pass along), a fresh timeline on demand, and helpers to allocate a new instant time and
to report progress.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

from hudi_ds.config import (
    ConcurrencyConfig,
    Options,
    ReadConfig,
    ServiceConfig,
    WriteConfig,
    validate_service_options,
)
from hudi_ds.errors import TimelineError, UnsupportedError
from hudi_ds.storage import Storage
from hudi_ds.table_config import TableConfig
from hudi_ds.timeline.instant import MAX_INSTANT_AHEAD_MS, Instant, State, new_instant_time
from hudi_ds.timeline.timeline import Timeline, TimelineWriter
from hudi_ds.write.lock import FileSystemLock, InProcessLock, held, table_lock

#: ``progress(done, total, what)`` -- called as long work advances (the CLI draws a bar).
Progress = Callable[[int, int, str], None]


def no_progress(done: int, total: int, what: str) -> None:
    """The default progress callback: nothing."""


@dataclass
class ServiceContext:
    """An opened table plus the options of a service run.

    Attributes:
        storage: the table's storage.
        config: its ``hoodie.properties``.
        options: validated options.
        progress: progress callback for long work.
    """

    storage: Storage
    config: TableConfig
    options: Options = field(default_factory=Options)
    progress: Progress = no_progress

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
        storage = path if isinstance(path, Storage) else Storage(str(path))
        opts = options if isinstance(options, Options) else Options.of(options)
        opts.validate(ServiceConfig, WriteConfig, ReadConfig, ConcurrencyConfig)
        validate_service_options(opts)
        return cls(storage, TableConfig.load(storage), opts, progress or no_progress)

    # -- timeline ---------------------------------------------------------------------------------
    @property
    def layout(self) -> int:
        return self.config.timeline_layout_version

    def timeline(self) -> Timeline:
        """A fresh load of the active timeline."""
        return Timeline.load(self.storage, self.layout, self.config.timeline_path)

    def writer(self) -> TimelineWriter:
        return TimelineWriter(self.storage, self.layout, self.config.timeline_path)

    def require_writable(self, what: str) -> None:
        """Services that write support table version 6 (timeline layout 1), as the writer does.

        Raises:
            UnsupportedError: for other table versions.
        """
        if self.config.table_version != 6 or self.layout != 1:
            raise UnsupportedError(
                f"{what} writes table version 6 (timeline layout 1); the table at "
                f"{self.storage.base_uri} is version {self.config.table_version}"
            )

    def new_instant(
        self, action: str, content: bytes = b"", timeline: Timeline | None = None
    ) -> Instant:
        """Create ``T.<action>.requested`` for a new, unique instant time T after every instant.

        Returns:
            The requested instant.
        """
        tl = timeline if timeline is not None else self.timeline()
        last = tl.instants[-1].requested_time if len(tl) else None
        writer = self.writer()
        for _ in range(100):
            ts = new_instant_time(after=last, max_ahead_ms=MAX_INSTANT_AHEAD_MS)
            req = Instant(ts, action, State.REQUESTED)
            if writer.create_requested(req, content):
                return req
            last = ts
        raise TimelineError(f"could not allocate a unique instant time for a {action}")

    def get(self, prop: Any) -> Any:
        """The value of a :class:`ServiceConfig` option."""
        return self.options.get(prop)

    @property
    def multi_writer(self) -> bool:
        """Several writers may run (``hoodie.write.concurrency.mode`` is not single_writer)."""
        return bool(self.options.get(ConcurrencyConfig.MODE) != "single_writer")

    def lock(self) -> FileSystemLock | InProcessLock | None:
        """The table lock the writers take (``hoodie.write.lock.provider``); None for a single
        writer. Table services take it for their timeline transitions, as Hudi's do (its
        ``TransactionManager`` around scheduling and completing a table service)."""
        return table_lock(self.storage, self.options)


_F = TypeVar("_F", bound=Callable[..., Any])


def under_table_lock(fn: _F) -> _F:
    """Run a service entry point ``fn(ctx, ...)`` holding the table lock (multi-writer mode)."""

    @functools.wraps(fn)
    def run(ctx: ServiceContext, *args: Any, **kwargs: Any) -> Any:
        with held(ctx.lock()):
            return fn(ctx, *args, **kwargs)

    return cast(_F, run)
