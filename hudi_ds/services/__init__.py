"""Table services: compaction, cleaning, rollback/savepoint/restore, archival.

They run on tables of version 6 (timeline layout 1) and of versions 8 and 9 (timeline layout
2, Hudi 1.x: completion times in instant file names, Avro instant contents, log files sliced by
completion time, the LSM archived timeline).

Each service works on a :class:`~hudi_ds.services.base.ServiceContext` (an opened table plus
options)::

    from hudi_ds.services import ServiceContext, compaction, clean, archival, rollback
    ctx = ServiceContext.open("/data/trips", {"hoodie.cleaner.commits.retained": "5"})
    c = compaction.schedule_compaction(ctx)        # C.compaction.requested, or None
    compaction.run_compaction(ctx, c)              # base files + C.commit
    clean.clean(ctx)                               # C.clean
    archival.archive(ctx)                          # v6: .hoodie/archived/.commits_.archive.N_...
                                                   # v8/v9: .hoodie/timeline/history (LSM)
    rollback.rollback(ctx, "20250101000000000")    # R.rollback

Writers run them after every commit (:func:`run_post_commit_services`, passed to
:class:`~hudi_ds.write.client.WriteClient` as ``post_commit`` by the embedded API and the Spark
connector), as Hudi's write client does: compaction of MOR tables every
``hoodie.compact.inline.max.delta.commits`` (5) delta commits -- by the embedded API right
after the commit unless ``hoodie.datasource.compaction.async.enable=false``; by the Spark
streaming sink's background compactor (:mod:`hudi_ds.services.background`); by Spark batch
writes only with ``hoodie.compact.inline=true``, as Hudi's data source --, cleaning when
``hoodie.clean.automatic`` (default true), archival when
``hoodie.archive.automatic`` (default true). A failing service never undoes the commit that
triggered it; it is logged and retried after the next commit.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from hudi_ds.config import ServiceConfig
from hudi_ds.services import archival, clean, clustering, compaction, rollback
from hudi_ds.services.base import WRITABLE_VERSIONS, ServiceContext
from hudi_ds.services.compaction_execute import CompactionResult

if TYPE_CHECKING:
    from hudi_ds.timeline.instant import Instant
    from hudi_ds.write.client import WriteClient

log = logging.getLogger("hudi_ds.services")

__all__ = [
    "ServiceContext",
    "archival",
    "clean",
    "clustering",
    "compaction",
    "rollback",
    "run_post_commit_services",
]


def run_post_commit_services(
    client: WriteClient,
    instant: Instant,
    async_compactor: compaction.AsyncCompactor | None = None,
    *,
    datasource: bool = False,
    track_keys: bool = False,
) -> list[CompactionResult]:
    """The writer's post-commit table services: compaction (MOR), clustering, cleaning,
    archival.

    Compaction follows :func:`~hudi_ds.services.compaction.run_inline_compaction`. The
    embedded writers (``datasource=False``): by default
    (``hoodie.datasource.compaction.async.enable=true``) a compaction is scheduled every
    ``hoodie.compact.inline.max.delta.commits`` delta commits and executed right after the
    commit. The Spark data source (``datasource=True``) resolves the options as Hudi's does:
    the streaming sink schedules and hands the plan to ``async_compactor``
    (:func:`~hudi_ds.services.background.start_compactor`); a batch write compacts only with
    ``hoodie.compact.inline=true`` (or ``hoodie.datasource.compaction.async.enable=false``,
    which Hudi's data source turns into inline compaction) and schedules only with
    ``hoodie.compact.schedule.inline=true``. Cleaning (``hoodie.clean.automatic``) and
    archival (``hoodie.archive.automatic``), both default true, run after every writer's
    commits, batch ones included, as Hudi's ``BaseHoodieWriteClient`` post-commit
    ``autoCleanOnCommit`` / ``autoArchiveOnCommit`` do.

    They run on the writer's :class:`~hudi_ds.timeline.view.TableState` (``client.state``),
    current after the commit: ``hoodie.properties`` is not read again, and the timeline is not
    listed again unless a service has work (or takes the table lock). Each service first asks
    the state's timeline whether it is due, as Hudi's ``BaseHoodieTableServiceClient`` checks
    its triggers on the commit's timeline before scheduling.

    Returns the compactions completed here; with ``track_keys`` they report their new base
    files' key changes (:attr:`ServiceContext.track_keys`: a writer's state index learns them).
    """
    done: list[CompactionResult] = []
    try:
        state = client.state
        if state is None:  # no table: never after a commit
            return done
        config = state.config
        if (config.table_version, config.timeline_layout_version) not in WRITABLE_VERSIONS:
            return done
        # the writer validated its options
        ctx = ServiceContext(state, client.options, track_keys=track_keys)
        if config.is_mor:
            done += compaction.run_inline_compaction(ctx, async_compactor, datasource=datasource)
        clustering.run_inline_clustering(ctx, async_compactor)
        if ctx.get(ServiceConfig.CLEAN_AUTOMATIC):
            tl = ctx.timeline()
            if clean.clean_due(ctx, tl) and clean.may_have_work(ctx, tl):
                clean.clean(ctx, debris=clean.debris_possible(tl))
        if ctx.get(ServiceConfig.ARCHIVE_AUTOMATIC) and archival.archival_due(ctx):
            archival.archive(ctx)
    except Exception:
        log.exception(
            "a table service after commit %s failed (the commit stands; the service runs "
            "again after the next commit)",
            instant.requested_time,
        )
    return done
