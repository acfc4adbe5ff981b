"""A planned read: what the driver side of a read decides and every read task carries."""

from __future__ import annotations

import dataclasses
import functools
import gc
import threading
from collections.abc import Callable, Sequence
from typing import Any, ParamSpec, TypeVar

import pyarrow as pa

from hudi_ds.layout.file_group import FileSlice
from hudi_ds.table.reader import SliceReadContext
from hudi_ds.timeline.view import Visibility

P = ParamSpec("P")
R = TypeVar("R")


@dataclasses.dataclass(eq=False)
class ReadPlan:
    """A planned read: visibility, merge context, slices, projection and filters (picklable)."""

    visibility: Visibility
    context: SliceReadContext
    slices: list[FileSlice]
    columns: list[str] | None
    filters: list[tuple[str, str, Any]]
    commit_times: frozenset[str] | None
    output_schema: pa.Schema
    #: committed files the plan found missing / damaged and skips (user opted in)
    missing_files: list[str] = dataclasses.field(default_factory=list)
    damaged_files: list[str] = dataclasses.field(default_factory=list)
    #: 1 when planning re-planned after a clean removed files (a read racing the cleaner)
    replans: int = 0
    #: file slices / partitions data skipping ruled out (:mod:`hudi_ds.table.skipping`)
    data_skipped_slices: int = 0
    data_skipped_partitions: int = 0

    def without_slices(self) -> ReadPlan:
        """This plan without its file slices: the header every read task of the plan carries
        (its own slices travel beside it), so a task's payload does not grow with the table."""
        return ReadPlan(
            self.visibility,
            self.context,
            [],
            self.columns,
            self.filters,
            self.commit_times,
            self.output_schema,
        )

    def for_slices(self, slices: Sequence[FileSlice]) -> ReadPlan:
        """The header (:meth:`without_slices`) carrying the committed log ranges of ``slices``
        only: what the read task of ``slices`` needs (small task payloads)."""
        ranges = self.context.log_ranges or {}
        out = self.without_slices()
        if not ranges:
            return out
        mine = {lf.path: ranges[lf.path] for s in slices for lf in s.log_files if lf.path in ranges}
        out.context = dataclasses.replace(self.context, log_ranges=mine)
        return out


class _GcPause:
    """Pauses Python's automatic garbage collection while any thread plans a read.

    Planning a large table allocates a few objects per file (listing entries, file groups,
    slices) that all live until the plan is returned, and that are not cyclic garbage. Each
    time enough of them piled up, CPython collects the oldest generation and walks every
    object of the process (the cached listings and commits included), finding nothing: at
    100,000 file groups that was a third of the planning time. Collection resumes when the
    last planning thread is done (unless the caller had turned it off), and then runs at the
    next allocation past its thresholds, once instead of every few thousand files.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._active = 0
        self._resume = False

    def __enter__(self) -> None:
        with self._lock:
            if self._active == 0:
                self._resume = gc.isenabled()
                gc.disable()
            self._active += 1

    def __exit__(self, *exc: object) -> None:
        with self._lock:
            self._active -= 1
            if self._active == 0 and self._resume:
                gc.enable()


_GC_PAUSE = _GcPause()


def gc_paused(fn: Callable[P, R]) -> Callable[P, R]:
    """``fn`` run with automatic garbage collection paused (:class:`_GcPause`)."""

    @functools.wraps(fn)
    def paused(*args: P.args, **kwargs: P.kwargs) -> R:
        with _GC_PAUSE:
            return fn(*args, **kwargs)

    return paused
