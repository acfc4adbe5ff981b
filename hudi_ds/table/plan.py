"""A planned read: what the driver side of a read decides and every read task carries."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from hudi_ds.layout.file_group import FileSlice
from hudi_ds.table.reader import SliceReadContext
from hudi_ds.timeline.view import Visibility


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
