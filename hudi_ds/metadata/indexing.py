"""Building a metadata table index partition as Java's async indexer does: the ``indexing``
action of the data timeline (Java ``HoodieIndexer``, ``ScheduleIndexActionExecutor``,
``RunIndexActionExecutor``).

On the data timeline (layout 2, table versions 8 and 9)::

    T.indexing.requested      HoodieIndexPlan: per partition its path and indexUptoInstant
                              (the latest completed write the build starts from)
    T.indexing.inflight       empty, as Java writes it
    T_<c>.indexing            HoodieIndexCommitMetadata: the partitions and the instant they
                              are caught up to

While it runs, ``hoodie.table.metadata.partitions.inflight`` names the partitions; readers and
the metadata table's writer treat them as absent (no data skipping, no record-index lookups,
no updates). The partition's records are written by MDT deltacommit ``T``, named after the
indexing instant (Java ``HoodieTableMetadataUtil.isIndexingCommit``: an MDT deltacommit whose
time is a data ``indexing`` instant), and count for readers once ``T`` completes. On completion
the partitions move to ``hoodie.table.metadata.partitions`` and then ``T`` completes, in that
order (``RunIndexActionExecutor.updateTableConfigAndTimeline``).

This module holds what both the build (:mod:`hudi_ds.services.indexer`) and the metadata
table's writer need: the records of the plan and of the commit, building the partitions as
MDT deltacommit ``T``, and settling a pending indexing instant a killed build left -- finished
when its partitions were already declared complete, otherwise rolled back (its MDT deltacommit
undone, its partitions' folders and ``.inflight`` entries removed, its instant files deleted).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Mapping, Sequence
from typing import Protocol

from hudi_ds.errors import CorruptFileError, HudiError
from hudi_ds.faults import crash_point
from hudi_ds.metadata.bloom_filters import BLOOM_FILTERS_PARTITION
from hudi_ds.metadata.column_stats import COLUMN_STATS_PARTITION, PARTITION_STATS_PARTITION
from hudi_ds.metadata.index_partitions import IndexPartitions
from hudi_ds.metadata.record_index import RECORD_INDEX_PARTITION
from hudi_ds.metadata.record_index_writer import RecordIndexWriter, index_stats
from hudi_ds.metadata.records import (
    METADATA_PARTITIONS_INFLIGHT_KEY,
    METADATA_PARTITIONS_KEY,
    declared_partitions,
)
from hudi_ds.metadata.recovery import undo_completed, undo_pending
from hudi_ds.metadata.stats_writer import StatsIndex
from hudi_ds.storage import Storage
from hudi_ds.timeline.instant import (
    COMMIT,
    DELTA_COMMIT,
    INDEXING,
    REPLACE_COMMIT,
    Instant,
    State,
)
from hudi_ds.timeline.metadata import CommitMetadata
from hudi_ds.timeline.plans import IndexCommitMetadata, IndexPartitionInfo, IndexPlan
from hudi_ds.timeline.timeline import Timeline
from hudi_ds.timeline.view import TableState
from hudi_ds.timeline.writer import TimelineWriter

__all__ = [
    "INDEXABLE",
    "MetadataWriter",
    "abort_indexing",
    "build_partitions",
    "commit_metadata",
    "declare_built",
    "finish_indexing",
    "index_groups",
    "index_plan",
    "indexed_upto",
    "mark_inflight",
    "plan_partitions",
    "settle_pending_indexing",
]

log = logging.getLogger("hudi_ds.metadata")


class MetadataWriter(Protocol):
    """What this module uses of :class:`hudi_ds.metadata.writer.MetadataWriter` (which calls
    it: a protocol keeps the import one-way)."""

    state: TableState
    storage: Storage
    schema: str
    version: int
    stats: StatsIndex
    rli: RecordIndexWriter
    indexes: IndexPartitions

    @property
    def declared(self) -> list[str]: ...

    def listing(self, state: TableState) -> Iterable[tuple[str, str, int]]: ...

    def present(self) -> bool: ...

    def timeline(self) -> Timeline: ...

    def _writer(self) -> TimelineWriter: ...

    def _adopt_schema(self, timeline: Timeline | None = None) -> None: ...

    def _update_config(
        self, updates: Mapping[str, str] | None = None, deletes: Iterable[str] = ()
    ) -> None: ...


#: the partitions an ``indexing`` action of hudi_ds builds
INDEXABLE = (
    COLUMN_STATS_PARTITION,
    PARTITION_STATS_PARTITION,
    RECORD_INDEX_PARTITION,
    BLOOM_FILTERS_PARTITION,
)

_WRITES = (COMMIT, DELTA_COMMIT, REPLACE_COMMIT)
_NO_INSTANT = "00000000000000000"
_INDEX_DEFS = ".hoodie/.index_defs/index.json"  # Java 1.x's default place


def index_groups(names: Sequence[str]) -> list[list[str]]:
    """The indexing actions that build ``names``: the stats partitions in one (partition
    stats are merged from column stats), the record index and the bloom filters in one each
    (each action writes one MDT deltacommit)."""
    stats = [p for p in (COLUMN_STATS_PARTITION, PARTITION_STATS_PARTITION) if p in names]
    if PARTITION_STATS_PARTITION in stats and COLUMN_STATS_PARTITION not in stats:
        stats.insert(0, COLUMN_STATS_PARTITION)
    groups = [stats] if stats else []
    groups += [[p] for p in (RECORD_INDEX_PARTITION, BLOOM_FILTERS_PARTITION) if p in names]
    return groups


def indexed_upto(data: Timeline) -> str:
    """The latest completed write of ``data`` (Java's ``indexUptoInstant``: the build holds
    its files), or the zero instant on a table without one."""
    last = data.completed().filter_actions(*_WRITES).last_completed()
    return last.requested_time if last is not None else _NO_INSTANT


def index_plan(partitions: Sequence[str], upto: str) -> IndexPlan:
    """``HoodieIndexPlan`` of an indexing action building ``partitions`` from ``upto``."""
    infos = [IndexPartitionInfo(1, p, upto, {}) for p in partitions]
    return IndexPlan(version=1, index_partition_infos=infos)


def commit_metadata(partitions: Sequence[str], upto: str) -> IndexCommitMetadata:
    """``HoodieIndexCommitMetadata`` of a completed indexing action (Java leaves
    ``operationType`` null)."""
    infos = [IndexPartitionInfo(1, p, upto, {}) for p in partitions]
    return IndexCommitMetadata(version=1, operation_type=None, index_partition_infos=infos)


def plan_partitions(data: Timeline, inst: Instant) -> tuple[list[str], str]:
    """The partitions and ``indexUptoInstant`` of pending indexing ``inst``'s plan ([] when
    it cannot be read: a requested file written half)."""
    try:
        plan = data.read_index_plan(inst)
    except (HudiError, OSError):
        return [], _NO_INSTANT
    infos = plan.index_partition_infos or []
    parts = [i.metadata_partition_path for i in infos if i.metadata_partition_path]
    upto = max((i.index_upto_instant or _NO_INSTANT for i in infos), default=_NO_INSTANT)
    return parts, upto


def mark_inflight(mdt: MetadataWriter, partitions: Sequence[str]) -> None:
    """Name ``partitions`` in ``hoodie.table.metadata.partitions.inflight`` (Java
    ``HoodieTableMetadataUtil.setMetadataInflightPartitions``)."""
    cfg = mdt.state.config
    inflight = declared_partitions(cfg, METADATA_PARTITIONS_INFLIGHT_KEY)
    wanted = sorted({*inflight, *partitions})
    if wanted != sorted(inflight):
        mdt._update_config({METADATA_PARTITIONS_INFLIGHT_KEY: ",".join(wanted)})


def declare_built(mdt: MetadataWriter, partitions: Sequence[str], defs: dict[str, str]) -> None:
    """Move ``partitions`` from ``.inflight`` to ``hoodie.table.metadata.partitions`` in one
    update of ``hoodie.properties`` (with ``defs``, the index definitions entry), as Java's
    ``updateMetadataPartitionsTableConfig``."""
    cfg = mdt.state.config
    inflight = [p for p in declared_partitions(cfg, METADATA_PARTITIONS_INFLIGHT_KEY)]
    declared = sorted({*declared_partitions(cfg), *partitions})
    rest = [p for p in inflight if p not in partitions]
    mdt._update_config(
        {
            METADATA_PARTITIONS_KEY: ",".join(declared),
            METADATA_PARTITIONS_INFLIGHT_KEY: ",".join(rest),
            **defs,
        }
    )


def _undo_mdt_instant(mdt: MetadataWriter, when: str, partitions: Sequence[str]) -> None:
    """Undo MDT deltacommit ``when`` (an earlier attempt of the same build) and remove the
    folders of ``partitions`` that are not declared complete."""
    tl = mdt.timeline()
    existing = tl.get(when)
    if existing is not None and existing.is_completed:
        undo_completed(mdt.storage, mdt._writer(), existing, tl)
    elif existing is not None:
        undo_pending(mdt.storage, mdt._writer(), tl.filter(lambda i: i == existing), partitions)
    declared = mdt.declared
    for p in partitions:
        if p not in declared and mdt.storage.is_dir(p):
            mdt.storage.delete_dir(p)


def build_partitions(mdt: MetadataWriter, when: str, partitions: Sequence[str]) -> dict[str, str]:
    """Build ``partitions`` (one :func:`index_groups` group) from the table's committed files
    as MDT deltacommit ``when`` (the indexing instant), after undoing what an earlier attempt
    left. Returns the ``hoodie.properties`` entries the partitions need (index definitions).

    The stats partitions and the bloom filters are built as their ``build`` builds them; the
    record index as the MDT bootstrap builds it (per file group a base HFile and a log file
    holding one empty DELETE block, Java ``initializeFileGroups``).
    """
    _undo_mdt_instant(mdt, when, partitions)
    tl = mdt.timeline()
    mdt._adopt_schema(tl)
    if RECORD_INDEX_PARTITION in partitions:
        _build_record_index(mdt, when)
        needed = mdt.version >= 9 or mdt.rli.definition_needed()
        return mdt.rli.write_definition() if needed else {}
    if BLOOM_FILTERS_PARTITION in partitions:
        mdt.indexes.bloom.build(when, mdt._writer(), mdt.schema, mdt.listing(mdt.state))
        return {}
    return mdt.stats.build(
        list(partitions), when, mdt._writer(), mdt.schema, mdt.listing(mdt.state)
    )


def _build_record_index(mdt: MetadataWriter, when: str) -> None:
    files = mdt.rli.bootstrap(when, mdt.schema, mdt.version)
    schema = json.loads(mdt.schema)
    schema["fields"] = [f for f in schema["fields"] if not f["name"].startswith("_hoodie_")]
    md = CommitMetadata(
        partition_to_write_stats=index_stats(files),
        extra_metadata={"schema": json.dumps(schema, separators=(",", ":"))},
        operation_type="UPSERT_PREPPED",
    )
    writer = mdt._writer()
    layout = writer.layout_version
    req = Instant(when, DELTA_COMMIT, State.REQUESTED)
    if not writer.create_requested(req):
        raise CorruptFileError(f"metadata table: instant {when} exists")
    writer.transition_to_inflight(req, md.to_bytes(layout))
    mdt.storage.makedirs(RECORD_INDEX_PARTITION)
    for f in files:
        mdt.storage.write_bytes(f.path, f.data)
    crash_point("metadata")  # files written, T pending: undone by the next build or write
    writer.complete(req, md.to_bytes(layout))


def _data_writer(mdt: MetadataWriter) -> TimelineWriter:
    """A writer of the data table's instant files without the MDT hook (settling an indexing
    instant mirrors nothing)."""
    state = mdt.state
    return TimelineWriter(state.storage, state.layout, state.config.timeline_path)


def abort_indexing(mdt: MetadataWriter, inst: Instant, partitions: Sequence[str]) -> None:
    """Roll back pending indexing ``inst`` building ``partitions`` (Java
    ``RunIndexActionExecutor.abort``): the partitions leave ``.inflight`` first -- no reader
    waits on them --, then their folders and the MDT deltacommit go, then the instant's files.
    A crash part-way leaves the instant pending: rolled back again next time."""
    cfg = mdt.state.config
    inflight = declared_partitions(cfg, METADATA_PARTITIONS_INFLIGHT_KEY)
    if any(p in inflight for p in partitions):
        rest = [p for p in inflight if p not in partitions]
        mdt._update_config({METADATA_PARTITIONS_INFLIGHT_KEY: ",".join(rest)})
    if mdt.present():
        _undo_mdt_instant(mdt, inst.requested_time, partitions)
    _data_writer(mdt).delete_instant_files(inst)
    mdt.state.reload_timeline()
    log.warning(
        "%s: rolled back the indexing %s of %s (a build that did not finish)",
        mdt.state.storage.base_uri,
        inst.requested_time,
        ", ".join(partitions) or "no readable plan",
    )


def finish_indexing(
    mdt: MetadataWriter, inst: Instant, partitions: Sequence[str], upto: str
) -> None:
    """Complete pending indexing ``inst`` whose ``partitions`` are declared complete (a build
    killed between ``hoodie.properties`` and its completed instant)."""
    writer = _data_writer(mdt)
    if inst.state is State.REQUESTED:
        inst = writer.transition_to_inflight(inst)
    writer.complete(inst, commit_metadata(partitions, upto).to_bytes())
    mdt.state.reload_timeline()


def settle_pending_indexing(mdt: MetadataWriter) -> list[str]:
    """Finish or roll back the indexing instants of the data timeline a killed build left
    pending: finished when every partition of its plan is declared complete, else rolled back.
    Called by the MDT writer of a write (under the table lock with several writers, where a
    pending indexing instant is a dead one: a build holds the lock from its schedule to its
    completion). A plan naming a partition hudi_ds
    does not build (a secondary index) is left to the engine that made it. Returns the
    settled instants."""
    out = []
    data = mdt.state.timeline
    for inst in list(data.pending().filter_actions(INDEXING)):
        partitions, upto = plan_partitions(data, inst)
        if not set(partitions) <= set(INDEXABLE):
            continue  # another engine's build of an index hudi_ds does not build: its own
        declared = mdt.declared
        if partitions and all(p in declared for p in partitions):
            finish_indexing(mdt, inst, partitions, upto)
        else:
            abort_indexing(mdt, inst, partitions)
        out.append(inst.requested_time)
    return out
