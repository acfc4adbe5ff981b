"""The metadata table's index partitions besides ``files`` that hudi_ds keeps in step --
``column_stats`` and ``partition_stats`` (:mod:`hudi_ds.metadata.stats_writer`),
``record_index`` (:mod:`hudi_ds.metadata.record_index_writer`), ``bloom_filters``
(:mod:`hudi_ds.metadata.bloom_filters`) and the secondary indexes
(:mod:`hudi_ds.metadata.secondary_index_writer`) -- as one set, for
:class:`hudi_ds.metadata.writer.MetadataWriter`: which declared partitions are kept and which
are removed as unmaintained (expression indexes, secondary indexes hudi_ds does not evaluate,
a disabled or unexpressible index), the files an MDT deltacommit writes into them, and what an
MDT rollback, crash recovery and clean delete from them.

The ``files`` partition itself stays the writer's: every MDT instant writes it, the index
partitions only add files beside it.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from hudi_ds.layout.naming import file_name_of, parse_log_file_name
from hudi_ds.metadata.bloom_filters import BLOOM_FILTERS_PARTITION, BloomFiltersIndex, BloomOptions
from hudi_ds.metadata.record_index import RECORD_INDEX_PARTITION
from hudi_ds.metadata.record_index_writer import IndexFile, RecordIndexWriter, RecordKeys
from hudi_ds.metadata.records import FILES_PARTITION, declared_partitions
from hudi_ds.metadata.secondary_index import EXPRESSION_PREFIX, PARTITION_PREFIX
from hudi_ds.metadata.secondary_index_writer import SecondaryIndexWriter, SliceValues
from hudi_ds.metadata.stats_writer import (
    STATS_PARTITIONS,
    MdtFile,
    Slices,
    StatsIndex,
    StatsOptions,
)
from hudi_ds.storage import Storage
from hudi_ds.timeline.timeline import Timeline
from hudi_ds.timeline.view import TableState

__all__ = ["IndexPartitions", "PartitionFile"]

log = logging.getLogger("hudi_ds.metadata")

PartitionFile = MdtFile | IndexFile
"""A file an MDT instant writes into an index partition: its path, bytes and write stat."""


def _no_slices(state: TableState, partitions: Sequence[str]) -> dict[str, dict[str, list[str]]]:
    """No committed slices known (a caller that does not maintain partition stats)."""
    return {}


class IndexPartitions:
    """The index partitions of one metadata table.

    Args:
        state: the opened data table.
        storage: the metadata table's storage.
        stats: the options of the column_stats / partition_stats partitions.
        slices: the latest committed data file slices (partition stats), from the write layer.
        record_keys: the committed slices' record keys (for a new MDT's record index).
        record_index: ``hoodie.metadata.record.index.enable`` (True: a new MDT gets one).
        bloom: the options of the bloom_filters partition.
        secondary_values: reads data file groups' merged rows (the secondary indexes).
        secondary_index: ``hoodie.metadata.index.secondary.enable`` (False removes them).
    """

    def __init__(
        self,
        state: TableState,
        storage: Storage,
        *,
        stats: StatsOptions | None = None,
        slices: Slices | None = None,
        record_keys: RecordKeys | None = None,
        record_index: bool | None = None,
        bloom: BloomOptions | None = None,
        secondary_values: SliceValues | None = None,
        secondary_index: bool | None = None,
    ) -> None:
        self.state = state
        self.storage = storage
        self.stats = StatsIndex(state, storage, stats or StatsOptions(), slices or _no_slices)
        self.rli = RecordIndexWriter(state, storage, record_keys, record_index)
        self.bloom = BloomFiltersIndex(state, storage, bloom or BloomOptions())
        self.si = SecondaryIndexWriter(state, storage, secondary_values, secondary_index)

    def bloom_records(
        self, instant_time: str, action: str, content: bytes, declared: Sequence[str], schema: str
    ) -> dict[str, dict[str, bytes]]:
        """The ``bloom_filters`` records data instant ``instant_time`` implies, by MDT
        partition (none when the partition is not kept)."""
        if not self.bloom.maintained(declared):
            return {}
        recs = self.bloom.records(instant_time, action, content, schema)
        return {BLOOM_FILTERS_PARTITION: recs} if recs else {}

    def kept(self, declared: Sequence[str]) -> set[str]:
        """The MDT partitions of ``declared`` kept in step (``files`` always)."""
        rli = {RECORD_INDEX_PARTITION} if self.rli.maintained() else set()
        si = self.si.maintained(declared)
        bloom = {BLOOM_FILTERS_PARTITION} if self.bloom.maintained(declared) else set()
        return {FILES_PARTITION, *self.stats.maintained(declared), *rli, *bloom, *si}

    def reasons(self, names: Sequence[str], declared: Sequence[str]) -> dict[str, str]:
        """Why the secondary and expression indexes among ``names`` (partitions to remove)
        are not kept."""
        si = self.si.why_not(declared)
        out = {}
        for n in names:
            if n.startswith(EXPRESSION_PREFIX):
                out[n] = "an expression index: hudi_ds evaluates no index expression"
            elif n.startswith(PARTITION_PREFIX):
                out[n] = si.get(n) or "the table does not declare it complete"
        return out

    def unmaintained(self, declared: Sequence[str], inflight: Sequence[str]) -> list[str]:
        """The MDT partitions to remove: declared (completed or inflight) or present as a
        folder, and not kept -- a stale index would mislead the readers that use it."""
        kept = self.kept(declared)
        folders = {
            name
            for d in self.storage.list_dirs("")
            if (name := file_name_of(d)) not in (*kept, ".hoodie")
        }
        return sorted({p for p in (*declared, *inflight) if p not in kept} | folders)

    def written(self) -> list[str]:
        """Every MDT partition an instant of this writer may have written files into (what
        crash recovery looks through)."""
        declared = declared_partitions(self.state.config)
        si = [p for p in declared if p.startswith(PARTITION_PREFIX)]
        return [
            FILES_PARTITION,
            RECORD_INDEX_PARTITION,
            *STATS_PARTITIONS,
            BLOOM_FILTERS_PARTITION,
            *si,
        ]

    def _si_folders(self) -> list[str]:
        return sorted(
            name
            for d in self.storage.list_dirs("")
            if (name := file_name_of(d)).startswith(PARTITION_PREFIX)
        )

    def log_files(
        self,
        instant_time: str,
        stats: dict[str, dict[str, bytes]],
        index: list[IndexFile],
        mdt: Timeline,
        schema: str,
    ) -> list[PartitionFile]:
        """The index partitions' files of MDT deltacommit ``instant_time``: the stats and
        bloom filter logs of ``stats`` (records of :meth:`StatsIndex.records` and
        :meth:`BloomFiltersIndex.records`, by MDT partition) and the record index's ``index``."""
        own = {p: r for p, r in stats.items() if p in STATS_PARTITIONS}
        blooms = stats.get(BLOOM_FILTERS_PARTITION, {})
        return [
            *self.stats.log_files(instant_time, own, mdt, schema),
            *self.bloom.log_files(instant_time, blooms, mdt, schema),
            *index,
        ]

    def compaction_files(
        self, when: str, mdt: Timeline, schema: str, declared: Sequence[str]
    ) -> list[PartitionFile]:
        """The new base files of the stats, record index, bloom filter and secondary index
        file groups at MDT compaction ``when``."""
        si = self.si.maintained(declared)
        rli = self.rli.compaction_files(when, mdt, schema) if self.rli.maintained() else []
        return [
            *self.stats.compaction_files(when, mdt, schema),
            *rli,
            *self.bloom.compaction_files(when, mdt, schema),
            *self.si.compaction_files(when, mdt, schema, si),
        ]

    def older_files(self, mdt: Timeline, declared: Sequence[str]) -> dict[str, list[str]]:
        """Per index partition, the files of slices an MDT clean deletes."""
        si = self.si.maintained(declared)
        return {
            **self.stats.older_files(mdt),
            **self.rli.older_files(mdt),
            **self.bloom.older_files(mdt),
            **self.si.older_files(mdt, si),
        }

    def delete_logs(self, instants: set[str]) -> list[str]:
        """Delete the index partitions' log files of MDT deltacommits ``instants`` (layout 2:
        named with their instant), as an MDT rollback undoes those deltacommits; the deleted
        paths."""
        out = self.stats.delete_logs(instants) + self.bloom.delete_logs(instants)
        for partition in (RECORD_INDEX_PARTITION, *self._si_folders()):
            if not self.storage.is_dir(partition):
                continue
            for f in self.storage.list_files(partition):
                p = parse_log_file_name(f.name)
                path = f"{partition}/{f.name}"
                if p is not None and p.instant_time in instants and self.storage.delete(path):
                    out.append(path)
        return out
