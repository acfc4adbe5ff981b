"""WriteStatus: what one handle wrote, sent from a writer task to the committing driver."""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

from hudi_ds.metadata.column_stats import ColumnRange
from hudi_ds.timeline.metadata import WriteStat


@dataclass(frozen=True)
class KeyChanges:
    """The record keys a new base file adds to its file group and drops from it (Java's
    ``WriteStatus`` carries its written records the same way, for the index's
    ``updateLocation``). In-process only; never in the commit metadata.

    Attributes:
        inserted: keys the file holds that the previous base file did not.
        removed: keys of the previous base file the file no longer holds.
    """

    inserted: pa.Array
    removed: pa.Array


@dataclass(frozen=True)
class LoggedKeys:
    """The record keys of the data blocks (``written``) and delete blocks (``deleted``) a log
    file's handle wrote, when the writer asked for them: the record index's upkeep takes them
    instead of reading the log file back. In-process only; never in the commit metadata."""

    written: pa.Array
    deleted: pa.Array


@dataclass(frozen=True)
class WriteStatus:
    """The outcome of one handle (Java ``WriteStatus``): the file it wrote and its counts.

    Attributes:
        stat: the write stat that goes into the commit metadata.
        kind: ``append`` (MOR log file), ``create`` (new base file), ``merge`` (new version of a
            base file) or ``stage`` (rows a non-exclusive task staged for the commit's merge,
            :func:`hudi_ds.write.cow.merge_staged`: COW file groups, and the insert slots of an
            upsert under a non-bucket index -- new file groups, COW or MOR).
        task: the write token of the task attempt that wrote it.
        keys: the key changes of a ``merge`` / ``create`` when the writer asked for them
            (:attr:`hudi_ds.write.handles.HandleContext.track_keys`) and the merge told them.
        logged: the keys an ``append`` wrote, when the writer asked for them (a table with
            meta fields).
        column_ranges: the written file's column stats, computed by the handle from the rows
            it wrote (a log file) or the footer it wrote (a Parquet base file) when the table
            keeps column stats (:attr:`hudi_ds.write.handles.HandleContext.stats_columns`);
            None: not computed, the metadata writer reads the file. In-process only, as
            Java's ``HoodieWriteStat.recordsStats`` (``@JsonIgnore``).
    """

    stat: WriteStat
    kind: str
    task: str
    keys: KeyChanges | None = None
    logged: LoggedKeys | None = None
    column_ranges: tuple[ColumnRange, ...] | None = None

    @property
    def path(self) -> str:
        return self.stat.path or ""

    @property
    def partition_path(self) -> str:
        return self.stat.partition_path or ""

    @property
    def file_id(self) -> str:
        return self.stat.file_id or ""
