"""Building metadata table index partitions an existing table lacks -- ``column_stats``,
``partition_stats``, ``record_index``, ``bloom_filters`` -- with the ``indexing`` action, as
Java's async indexer (``HoodieIndexer``: schedule, then run) does; the action's records and its
MDT side are in :mod:`hudi_ds.metadata.indexing`.

One build, under the table lock from its schedule to its completion (Java takes the lock to
schedule and to complete; holding it throughout keeps every other writer's commit out of the
build, so nothing completes that the build would have to catch up -- a writer waits for the
lock, or gives up with its lock wait error and nothing written to the timeline):

1. a killed earlier build is settled (finished, or run again from its plan);
2. the metadata table is brought in step with the data timeline (completed instants it
   misses are applied, as every MDT update does first);
3. schedule: ``T.indexing.requested`` with the plan (partitions, ``indexUptoInstant`` = the
   latest completed write) -- crash point ``indexing:1``;
4. run: ``T.indexing.inflight`` (``:2``), the partitions named in
   ``hoodie.table.metadata.partitions.inflight`` (``:3``), built from the committed files as
   MDT deltacommit ``T`` (``:4``);
5. catch up: writes completed since the build started (possible only without a lock: a single
   writer's build, or another engine's writer) make it build again from the files as they are
   now, until none did (Java applies each such instant's changes, ``RunIndexActionExecutor``'s
   catch-up task; a rebuild gives the same records);
6. the partitions move to ``hoodie.table.metadata.partitions`` (``:5``), then ``T``
   completes with ``HoodieIndexCommitMetadata`` (``RunIndexActionExecutor
   .updateTableConfigAndTimeline``).

A build killed at any step is finished or rolled back by the next build or the next write
(:func:`hudi_ds.metadata.indexing.settle_pending_indexing`); readers never use a partition
before step 6.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field

from hudi_ds.config import WriteConfig
from hudi_ds.errors import CommitConflictError, ConfigError
from hudi_ds.faults import crash_point
from hudi_ds.index.core import record_index_partitioned
from hudi_ds.metadata.bloom_filters import BLOOM_FILTERS_PARTITION, BloomOptions
from hudi_ds.metadata.column_stats import PARTITION_STATS_PARTITION
from hudi_ds.metadata.indexing import (
    INDEXABLE,
    abort_indexing,
    build_partitions,
    commit_metadata,
    declare_built,
    index_groups,
    index_plan,
    indexed_upto,
    mark_inflight,
    plan_partitions,
)
from hudi_ds.metadata.record_index import RECORD_INDEX_PARTITION
from hudi_ds.metadata.records import (
    FILE_CHANGING_ACTIONS,
    METADATA_PARTITIONS_INFLIGHT_KEY,
    declared_partitions,
)
from hudi_ds.metadata.stats_writer import STATS_PARTITIONS, StatsOptions
from hudi_ds.metadata.writer import MetadataWriter
from hudi_ds.services.base import ServiceContext
from hudi_ds.table_config import TableConfig
from hudi_ds.timeline.instant import INDEXING, Instant, State
from hudi_ds.write.metadata_sync import (
    committed_listing,
    committed_record_keys,
    committed_slices,
)
from hudi_ds.write.record_index_options import partitioned_record_index_sizing

__all__ = ["INDEXABLE", "IndexBuild", "build_indexes"]

log = logging.getLogger("hudi_ds.services")

#: builds of one indexing action before giving up on writers that keep committing
_MAX_ATTEMPTS = 5


@dataclass
class IndexBuild:
    """What :func:`build_indexes` did.

    Attributes:
        built: the partitions declared complete by this run (its own or a resumed build).
        instants: the indexing instants it completed.
        skipped: asked-for partitions not built: declared already, or partition stats of a
            non-partitioned table.
    """

    built: list[str] = field(default_factory=list)
    instants: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)


def _writer(ctx: ServiceContext, partitions: Sequence[str]) -> MetadataWriter:
    """The MDT writer of a build of ``partitions`` (with the listing, slices and keys it
    builds from)."""
    state = ctx.state
    state.config = TableConfig.load(state.storage)  # as another writer may have left it
    # True for what it builds, None (keep what the table has) for the rest: False would
    # drop a declared partition from the caught-up instants
    stats = StatsOptions(
        column_stats=True if set(partitions) & set(STATS_PARTITIONS) else None,
        partition_stats=True if PARTITION_STATS_PARTITION in partitions else None,
    )
    mdt = MetadataWriter(
        state,
        committed_listing,
        stats=stats,
        slices=committed_slices,
        record_keys=committed_record_keys,
        record_index=True if RECORD_INDEX_PARTITION in partitions else None,
        bloom=BloomOptions(enable=True if BLOOM_FILTERS_PARTITION in partitions else None),
    )
    # the partitioned record index when asked for, or when the table's definition says so
    mdt.rli.new_partitioned = bool(
        ctx.options.get(WriteConfig.METADATA_RECORD_LEVEL_INDEX_ENABLE)
    ) or record_index_partitioned(state.config, state.storage)
    mdt.rli.partitioned_sizing = partitioned_record_index_sizing(ctx.options)
    return mdt


def _check(ctx: ServiceContext, names: Sequence[str]) -> None:
    unknown = sorted(set(names) - set(INDEXABLE))
    if unknown:
        raise ConfigError(f"--build {', '.join(unknown)}: hudi_ds builds {', '.join(INDEXABLE)}")
    if ctx.config.table_version < 8:
        raise ConfigError(
            f"hudi_ds builds {', '.join(names)} on table versions 8 and 9 (the indexing "
            f"action of Hudi 1.x); {ctx.storage.base_uri} is version {ctx.config.table_version}"
        )
    if RECORD_INDEX_PARTITION in names and not ctx.config.populate_meta_fields:
        raise ConfigError(
            f"{ctx.storage.base_uri}: record_index needs a table with meta fields "
            "(hoodie.populate.meta.fields=true): its keys are read from _hoodie_record_key"
        )


def build_indexes(ctx: ServiceContext, names: Sequence[str]) -> IndexBuild:
    """Build the metadata table partitions ``names`` the table lacks, each group with one
    ``indexing`` action (module docstring), under the table lock.

    Raises:
        ConfigError: a partition hudi_ds does not build, a table version below 8, a record
            index without meta fields, no metadata table.
        CommitConflictError: a write without the lock rolled the build back meanwhile.
    """
    _check(ctx, names)
    out = IndexBuild()
    with ctx.locked(reload=True):
        mdt = _writer(ctx, names)
        if not mdt.present():
            raise ConfigError(
                f"{ctx.storage.base_uri} has no metadata table: create it first (a write "
                "with hoodie.metadata.enable=true, or hudi-py metadata --rebuild)"
            )
        tl = mdt.timeline()
        if mdt.recover(tl):
            tl = mdt.timeline()
        _resume(ctx, out)
        mdt = _writer(ctx, names)
        if mdt._catch_up("", mdt.timeline()):  # the MDT in step before it is built on
            log.info("%s: metadata table caught up", ctx.storage.base_uri)
        partitioned = bool(ctx.config.partition_fields)
        for group in index_groups(names):
            if not partitioned and PARTITION_STATS_PARTITION in group:
                group = [p for p in group if p != PARTITION_STATS_PARTITION]
                out.skipped.append(PARTITION_STATS_PARTITION)
            todo = [p for p in group if p not in declared_partitions(ctx.config)]
            out.skipped += [p for p in group if p not in todo and p in names]
            if not todo:
                continue
            upto = indexed_upto(ctx.timeline())
            inst = ctx.new_instant(INDEXING, index_plan(todo, upto).to_bytes())
            crash_point("indexing")
            _run(ctx, inst, todo, out)
    return out


def _resume(ctx: ServiceContext, out: IndexBuild) -> None:
    """Run again the pending indexing instants a killed build left (from their plan)."""
    for inst in list(ctx.timeline().pending().filter_actions(INDEXING)):
        partitions, _ = plan_partitions(ctx.timeline(), inst)
        if not partitions:  # a plan that cannot be read: nothing to resume from
            abort_indexing(_writer(ctx, partitions), inst, partitions)
            continue
        if not set(partitions) <= set(INDEXABLE):
            continue  # another engine's build of an index hudi_ds does not build
        log.info("%s: resuming indexing %s", ctx.storage.base_uri, inst.requested_time)
        _run(ctx, inst, partitions, out)


def _completed_writes(ctx: ServiceContext) -> set[str]:
    return {
        i.requested_time for i in ctx.timeline().completed() if i.action in FILE_CHANGING_ACTIONS
    }


def _run(ctx: ServiceContext, inst: Instant, partitions: list[str], out: IndexBuild) -> None:
    """Run indexing ``inst`` (requested or inflight) building ``partitions``."""
    ts = inst.requested_time
    if inst.state is State.REQUESTED:
        inst = ctx.writer().transition_to_inflight(inst)
        crash_point("indexing")
    mdt = _writer(ctx, partitions)
    if set(partitions) <= set(mdt.declared):  # killed after hoodie.properties: finish
        _complete(ctx, inst, partitions)
        out.built += partitions
        out.instants.append(ts)
        return
    mark_inflight(mdt, partitions)
    crash_point("indexing")
    defs = _build_caught_up(ctx, inst, partitions)
    # a build that outlived its lock (a writer may have committed without it since) stops
    # here, before readers trust the partitions: the next build or write settles it
    ctx.still_locked(force=True)
    declare_built(_writer(ctx, partitions), partitions, defs)
    crash_point("indexing")
    _complete(ctx, inst, partitions)
    out.built += partitions
    out.instants.append(ts)


def _still_ours(ctx: ServiceContext, inst: Instant, partitions: list[str]) -> None:
    """Raise unless indexing ``inst`` is still pending with ``partitions`` in flight: a write
    that ran without the table lock settles a build it finds (it rolls it back); what this
    build wrote since is rolled back too.

    Raises:
        CommitConflictError: the build was rolled back.
    """
    ctx.reload_timeline()
    ctx.state.config = TableConfig.load(ctx.storage)
    inflight = declared_partitions(ctx.config, METADATA_PARTITIONS_INFLIGHT_KEY)
    if ctx.timeline().get(inst.requested_time) is not None and set(partitions) <= set(inflight):
        return
    abort_indexing(_writer(ctx, partitions), inst, partitions)
    raise CommitConflictError(
        f"indexing {inst.requested_time} was rolled back by a write that ran without the "
        "table lock; run the build again with the lock options (-o "
        "hoodie.write.concurrency.mode=optimistic_concurrency_control and a "
        "hoodie.write.lock.provider)"
    )


def _build_caught_up(ctx: ServiceContext, inst: Instant, partitions: list[str]) -> dict[str, str]:
    """Build ``partitions`` as of the writes completed now, again while writes complete
    meanwhile (possible without the table lock only); the ``hoodie.properties`` entries they
    need.

    Raises:
        CommitConflictError: the build was rolled back, or writes kept completing.
    """
    ts = inst.requested_time
    for _ in range(_MAX_ATTEMPTS):
        before = _completed_writes(ctx)
        defs = build_partitions(_writer(ctx, partitions), ts, partitions)
        crash_point("indexing")
        _still_ours(ctx, inst, partitions)
        if _completed_writes(ctx) <= before:
            return defs
        log.info("%s: writes completed during indexing %s: building again", ctx.storage, ts)
    abort_indexing(_writer(ctx, partitions), inst, partitions)
    raise CommitConflictError(
        f"indexing {ts}: writes kept completing during the build; run it again with the "
        "table lock options"
    )


def _complete(ctx: ServiceContext, inst: Instant, partitions: list[str]) -> None:
    """Complete indexing ``inst`` (fenced as every service's completion)."""
    upto = indexed_upto(ctx.timeline())
    content = commit_metadata(partitions, upto).to_bytes()
    ctx.complete(Instant(inst.requested_time, INDEXING, State.INFLIGHT), content)
    log.info(
        "%s: built metadata table partitions %s (indexing %s)",
        ctx.storage.base_uri,
        ", ".join(partitions),
        inst.requested_time,
    )
