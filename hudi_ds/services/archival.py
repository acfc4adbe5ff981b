"""Archival: move old instants from the active timeline to the archived timeline.

The active timeline is read by every query and every writer; archival keeps it short. As
Hudi's ``HoodieTimelineArchiver`` (0.14) does it:

* completed **commits** (commit, deltacommit, replacecommit) are archived once there are more
  than ``hoodie.keep.max.commits`` of them, down to ``hoodie.keep.min.commits``, oldest first,
  stopping at the first savepoint, at the oldest pending write or compaction, at the earliest
  commit the last clean retained, and at a replacecommit whose replaced files are not cleaned
  yet. With ``hoodie.archive.beyond.savepoint`` the savepointed commits stay and the ones
  around them go, which leaves holes in the active timeline; then one commit that is not
  savepointed always stays (where the timeline starts), and archival stops at a commit after a
  savepoint whose files a snapshot still reads (Java's file-system view and hudi-rs take the
  files of a commit in a hole for uncommitted);
* completed **clean** and **rollback** instants likewise by count, per action -- and always the
  ones older than the first commit that stays (so the active timeline starts with a commit);
* table version 6 (timeline layout 1): every file of an archived instant (requested,
  inflight, completed) becomes one ``HoodieArchivedMetaEntry`` record (``actionState`` says
  which), written as an Avro data block of a Hudi log file
  ``.hoodie/archived/.commits_.archive.<N>_<token>``;
* table versions 8 and 9 (timeline layout 2): every archived instant becomes one row of the
  LSM timeline ``.hoodie/timeline/history`` (instant time, completion time, action, the
  completed content, the plan; :mod:`hudi_ds.timeline.lsm`), a new layer-0 parquet file
  committed by a new manifest version; full layers are then merged into the next (Hudi 1.x
  ``TimelineArchiverV2`` / ``LSMTimelineWriter``);
* then the instant files are deleted, the pending states of an instant before its completed
  file;
* with a metadata table (MDT), the data table archives only instants older than the MDT's
  latest compaction (nothing before its first), and then the MDT's own timeline is archived
  the same way into ``.hoodie/metadata/.hoodie/archived`` (v6) or
  ``.hoodie/metadata/.hoodie/timeline/history`` (v8/v9), keeping what its latest compaction
  and the data table's active instants need (:func:`archive_metadata_table`).

Archival runs under the table lock; one that lost it (paused past its lease) stops before its
next change -- before writing an archive file or LSM manifest, between the deletions of instant
files -- and leaves what a killed archival leaves, which the next run resumes.

Data files of archived instants stay: readers treat files older than where the active timeline
starts as committed (Java's ``containsOrBeforeTimelineStarts``; its start is the first
non-savepointed commit-family instant, :meth:`~hudi_ds.timeline.timeline.Timeline
.first_non_savepoint_commit`, so the files of commits in a hole that a savepoint keeps stay
committed; hudi-rs starts at the first active instant). Time travel and
incremental reads that reach archived instants fail with a clear error
(:class:`~hudi_ds.errors.InstantNotFoundError`).
"""

from __future__ import annotations

import io
import json
import logging
import struct
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any

import fastavro

from hudi_ds.config import Options, ServiceConfig
from hudi_ds.errors import InstantNotFoundError, TableNotFoundError
from hudi_ds.faults import crash_point
from hudi_ds.layout.naming import file_name_of, parse_log_file_name
from hudi_ds.log.archive import (
    archive_file_entries,
    archive_file_name,
    archive_files,
    archive_number,
)
from hudi_ds.log.block import BlockType, HeaderKey, encode_block
from hudi_ds.metadata.records import FILES_PARTITION, METADATA_PATH, declared_partitions
from hudi_ds.services.base import ServiceContext, under_table_lock
from hudi_ds.services.clean import STALE_TMP_SECONDS
from hudi_ds.table.fs_view import FileSystemView
from hudi_ds.timeline.avro_record import AVRO_MAGIC, avro_schema
from hudi_ds.timeline.instant import (
    CLEAN,
    CLUSTERING,
    COMMIT,
    COMPACTION,
    DELTA_COMMIT,
    REPLACE_COMMIT,
    ROLLBACK,
    Instant,
    State,
)
from hudi_ds.timeline.lsm import LsmTimelineWriter, entry_of
from hudi_ds.timeline.metadata import CommitMetadata
from hudi_ds.timeline.plans import CleanerPlan
from hudi_ds.timeline.timeline import DATA_ACTIONS, HOODIE_FOLDER, Timeline
from hudi_ds.timeline.view import TableState

log = logging.getLogger("hudi_ds.services")

__all__ = [
    "ArchiveResult",
    "archival_due",
    "archive",
    "archive_metadata_table",
    "instants_to_archive",
]

ARCHIVE_TOKEN = "1-0-1"


@dataclass
class ArchiveResult:
    """What an archival did.

    Attributes:
        archived: requested times of the archived instants.
        archive_file: the archive log file written (relative path), or None.
        deleted: instant files deleted.
        metadata_archived: the metadata table's archived instants.
    """

    archived: list[str] = field(default_factory=list)
    archive_file: str | None = None
    deleted: list[str] = field(default_factory=list)
    #: requested times of the metadata table's instants archived with them
    metadata_archived: list[str] = field(default_factory=list)


def _replaced_files_remain(ctx: ServiceContext, tl: Timeline, inst: Instant) -> bool:
    md = tl.read_commit_metadata(inst)
    replaced = md.replaced_file_ids()
    if not replaced:
        return False
    view = FileSystemView(ctx.storage, ctx.config)
    for p, ids in replaced.items():
        for g in view.file_groups(p):
            if g.file_id in ids and (g.base_files or g.log_files):
                return True
    return False


def _live_files(ctx: ServiceContext, tl: Timeline) -> set[str]:
    """Paths (relative) of the files of every latest file slice: what a snapshot read reads."""
    vis = TableState(ctx.storage, ctx.config, tl).visibility()
    view = FileSystemView(ctx.storage, ctx.config)
    out: set[str] = set()
    for p in view.partitions():
        for s in view.latest_file_slices(p, vis):
            if s.base_file is not None:
                out.add(s.base_file.path)
            out.update(lf.path for lf in s.log_files)
    return out


def _written_files(md: CommitMetadata) -> set[str]:
    """Paths (relative) of the files a commit wrote, log files appended to included."""
    out: set[str] = set()
    for s in md.write_stats():
        if s.path:
            out.add(s.path)
        part = s.partition_path or ""
        out.update(f"{part}/{name}" if part else name for name in s.log_files or [])
    return out


def _written_logs(md: CommitMetadata) -> set[str]:
    """Paths (relative) of the log files a commit wrote."""
    return {f for f in _written_files(md) if parse_log_file_name(file_name_of(f)) is not None}


def instants_to_archive(
    ctx: ServiceContext, tl: Timeline | None = None, *, data_timeline: Timeline | None = None
) -> list[Instant]:
    """The completed instants an archival now would move (see the module docstring).

    Args:
        ctx: the table (the data table, or with ``data_timeline`` its metadata table).
        tl: its active timeline (``ctx.timeline()`` when None).
        data_timeline: when ``ctx`` is a metadata table, the data table's active timeline.
    """
    tl = tl if tl is not None else ctx.timeline()
    hi = ctx.get(ServiceConfig.KEEP_MAX_COMMITS)
    lo = ctx.get(ServiceConfig.KEEP_MIN_COMMITS)
    out: list[Instant] = []
    commits = list(tl.commits())
    finished = tl.completed()
    if len(commits) <= hi and all(len(finished.filter_actions(a)) <= hi for a in (CLEAN, ROLLBACK)):
        return []  # nothing is due (without opening the metadata table)
    bound = _archival_bound(ctx, tl, data_timeline)
    if bound == "":
        return []
    if len(commits) > hi:
        out = _commits_to_archive(ctx, tl, commits, bound, lo)
    if tl.layout_version == 2:
        out = _completed_before_the_rest(tl, commits, out)
    out += _services_to_archive(tl, commits, out, hi, lo)
    if bound is not None:
        out = [i for i in out if i.requested_time < bound]
    return sorted(out)


def _commits_to_archive(
    ctx: ServiceContext, tl: Timeline, commits: list[Instant], bound: str | None, lo: int
) -> list[Instant]:
    """The oldest commits of ``commits`` an archival moves, keeping the newest ``lo``: up to
    the first that must stay (see :func:`_archive_limit` and the checks below), oldest first.
    """
    saved = [sp.requested_time for sp in tl.savepoints() if sp.is_completed]
    beyond = ctx.get(ServiceConfig.ARCHIVE_BEYOND_SAVEPOINT)
    limit = _archive_limit(tl, bound, saved, beyond)
    budget = len(commits) - lo
    if beyond:
        # the timeline starts at its first commit that no savepoint keeps: with none left
        # after the archived ones (only savepointed commits active), readers would start at
        # a savepointed commit and lose the files of the commits archived after it (Java's
        # limit(count - minInstantsToKeep) counts the savepointed commits too)
        budget = min(budget, sum(c.requested_time not in saved for c in commits) - 1)
    out: list[Instant] = []
    live: set[str] | None = None  # files of the latest slices, listed on first need
    for c in commits:
        if budget <= 0 or (limit is not None and c.requested_time >= limit):
            break
        if beyond and c.requested_time in saved:
            continue
        if c.action == REPLACE_COMMIT and _replaced_files_remain(ctx, tl, c):
            break
        if beyond and c.requested_time > min(saved, default=c.requested_time):
            # archived after a savepointed commit that stays, c leaves a hole in the
            # timeline. Java's file-system view asks containsOrBeforeTimelineStarts of its
            # write timeline, which holds no savepoint instants (AbstractTableFileSystemView
            # .refreshTimeline -> getWriteTimeline, HoodieFileGroup.isFileSliceCommitted),
            # and hudi-rs bounds the archived instants by the earliest active one: both
            # take the files of such a c for uncommitted. So c goes only when a snapshot
            # no longer reads any file it wrote (cleaned, or superseded by a later slice).
            if live is None:
                live = _live_files(ctx, tl)
            if not live.isdisjoint(_written_files(tl.read_commit_metadata(c))):
                break
        if tl.layout_version == 2 and c.action == DELTA_COMMIT:
            # table versions 8/9 name a log file after its delta commit, and hudi-rs (0.5)
            # drops the log files of a delta commit that is no longer on the active
            # timeline (it finds no completion time for them; Java looks it up in the
            # LSM history): a delta commit stays while a snapshot still reads its logs
            if live is None:
                live = _live_files(ctx, tl)
            if not live.isdisjoint(_written_logs(tl.read_commit_metadata(c))):
                break
        out.append(c)
        budget -= 1
    return out


def _archive_limit(tl: Timeline, bound: str | None, saved: list[str], beyond: bool) -> str | None:
    """The first commit time archival must not reach (None: no limit): the archival
    ``bound``, the oldest pending data instant, compaction or clustering, the oldest savepoint
    (unless archiving beyond savepoints) and the last clean's earliest commit to retain."""
    limits = [bound] if bound is not None else []
    pending = [i for i in tl.pending() if i.action in (*DATA_ACTIONS, COMPACTION, CLUSTERING)]
    if pending:
        limits.append(pending[0].requested_time)
    if saved and not beyond:
        limits.append(min(saved))
    for c in reversed(tl.completed().filter_actions(CLEAN)):
        e = tl.read_clean_metadata(c).earliest_commit_to_retain
        if e:
            limits.append(e)
            break
    return min(limits) if limits else None


def _services_to_archive(
    tl: Timeline, commits: list[Instant], out: list[Instant], hi: int, lo: int
) -> list[Instant]:
    """The cleans and rollbacks an archival moves beside the commits ``out``: the oldest
    beyond ``lo`` of an action that has more than ``hi``, and, once anything is archived,
    those older than the first commit kept (or pending)."""
    kept = [c for c in commits if c not in out]
    first_kept = min(
        [c.requested_time for c in kept]
        + [
            i.requested_time
            for i in tl.pending()
            if i.action in (*DATA_ACTIONS, COMPACTION, CLUSTERING)
        ],
        default=None,
    )
    more: list[Instant] = []
    for action in (CLEAN, ROLLBACK):
        done = list(tl.completed().filter_actions(action))
        n_by_count = len(done) - lo if len(done) > hi else 0
        for k, i in enumerate(done):
            older = first_kept is not None and i.requested_time < first_kept
            # once any instant is archived (a commit, or a clean or rollback by count), the
            # older ones go too
            if k < n_by_count or (older and (out or more)):
                more.append(i)
    return more


def _metadata_state(ctx: ServiceContext) -> TableState | None:
    """The data table's metadata table, opened (None: it has none)."""
    if FILES_PARTITION not in declared_partitions(ctx.config):
        return None
    known = ctx.state.take_metadata()  # as the commit's metadata writer left it
    if known is not None:
        return known
    try:
        return TableState.open(ctx.storage.sub(METADATA_PATH))
    except TableNotFoundError:
        return None


def _archival_bound(
    ctx: ServiceContext, tl: Timeline, data_timeline: Timeline | None
) -> str | None:
    """Java ``HoodieTimelineArchiver.getInstantsToArchive``'s limits from the metadata table:
    only instants older than the returned time are archived (None: no limit; ``""``: none).

    * a data table with a metadata table: instants older than the MDT's latest compaction
      (none before its first compaction) -- the MDT's valid instants and its catch-up need
      the data instants its log files mirror;
    * a metadata table: the same (its slices and log files after the latest compaction need
      their deltacommits; Java keeps them for compaction scheduling,
      ``CompactionUtils.getOldestInstantToRetainForCompaction``), and instants older than the
      data table's earliest commit and earliest pending instant
      (``TimelineUtils.getEarliestInstantForMetadataArchival``): every data instant still
      active keeps its mirror active, so the reader's in-step check stays exact.
    """
    if data_timeline is None:
        mdt = _metadata_state(ctx)
        if mdt is None:
            return None
        mdt_tl = mdt.timeline
    else:
        mdt_tl = tl
    compactions = mdt_tl.completed().filter_actions(COMMIT)
    if not compactions:
        return ""
    bounds = [compactions.instants[-1].requested_time]
    if data_timeline is not None:
        beyond = ctx.get(ServiceConfig.ARCHIVE_BEYOND_SAVEPOINT)
        saved = {sp.requested_time for sp in data_timeline.savepoints()}
        first_commit = next(
            (
                i.requested_time
                for i in data_timeline
                if i.action in (COMMIT, DELTA_COMMIT, REPLACE_COMMIT)
                and not (beyond and i.requested_time in saved)
            ),
            None,
        )
        first_pending = next((i.requested_time for i in data_timeline.pending()), None)
        bounds += [t for t in (first_commit, first_pending) if t is not None]
    return min(bounds)


def _completed_before_the_rest(
    tl: Timeline, commits: list[Instant], chosen: list[Instant]
) -> list[Instant]:
    """Layout 2: the longest prefix of ``chosen`` whose every commit completed before the
    first instant that stays active was requested.

    Table versions 8 and 9 slice log files by completion time: a delta commit requested before
    a compaction C but completed after it wrote into C's slice. Once archived, its completion
    time is no longer on the active timeline, and readers that do not consult the LSM history
    (hudi-rs, and our file-system view, which take an archived instant's files as committed
    at their requested time) would put its log into the slice before C and lose it. Java's
    readers look the completion time up in the archive (``CompletionTimeQueryView``); keeping
    such a commit active keeps every reader right.
    """
    out = list(chosen)
    while out:
        staying = [c.requested_time for c in commits if c not in out]
        staying += [
            i.requested_time
            for i in tl.pending()
            if i.action in (*DATA_ACTIONS, COMPACTION, CLUSTERING)
        ]
        boundary = min(staying, default=None)
        if boundary is None:
            return out
        late = [k for k, c in enumerate(out) if (c.completion_time or c.requested_time) > boundary]
        if not late:
            return out
        out = out[: late[0]]
    return out


# -- archive records ----------------------------------------------------------------------------


@cache
def _entry_schema_text() -> str:
    path = resources.files("hudi_ds.timeline").joinpath("avro", "HoodieArchivedMetaEntry.avsc")
    return json.dumps(json.loads(path.read_text(encoding="utf-8")))


def _record(
    ctx: ServiceContext, tl: Timeline, inst: Instant, state: State, origin: str
) -> dict[str, Any]:
    ts = inst.requested_time
    rec: dict[str, Any] = {
        "commitTime": ts,
        "actionState": state.value,
        "version": 1,
        "stateTransitionTime": None,
    }
    if origin == COMPACTION and state is not State.COMPLETED:
        rec["actionType"] = COMPACTION
        try:
            rec["hoodieCompactionPlan"] = tl.read_compaction_plan(ts).to_avro()
        except InstantNotFoundError:
            # the plan file went with an earlier archival that was killed half way (its
            # record is in the archive already); the inflight record carries no plan
            rec["hoodieCompactionPlan"] = None
        return rec
    action = inst.action
    rec["actionType"] = action
    if action in ("commit", "deltacommit"):
        md = _commit_metadata(ctx, tl, ts, state)
        if md is not None:
            rec["hoodieCommitMetadata"] = md.to_avro_record()
    elif action == REPLACE_COMMIT:
        if state is State.COMPLETED:
            md = _commit_metadata(ctx, tl, ts, state)
            if md is not None:
                md.is_replace = True
                rec["hoodieReplaceCommitMetadata"] = md.to_avro_record()
        elif state is State.INFLIGHT:
            md = _commit_metadata(ctx, tl, ts, state)
            if md is not None:
                md.is_replace = False
                md.partition_to_replace_file_ids = {}
                rec["HoodieInflightReplaceMetadata"] = md.to_avro_record()
        else:
            data = _raw(ctx, tl, ts, state)
            if data.startswith(AVRO_MAGIC):
                rec["hoodieRequestedReplaceMetadata"] = tl.read_requested_replace(ts).to_avro()
    elif action == CLEAN:
        if state is State.COMPLETED:
            rec["hoodieCleanMetadata"] = tl.read_clean_metadata(ts).to_avro()
        else:
            # the plan as the state's own file holds it (the inflight file repeats it), as
            # Java's CleanerUtils.getCleanerPlan(metaClient, instant) reads the instant's own
            # content: a killed archival may have deleted the requested file already
            data = _raw(ctx, tl, ts, state)
            rec["hoodieCleanerPlan"] = (
                CleanerPlan.from_bytes(data).to_avro() if data.strip() else None
            )
    elif action == ROLLBACK and state is State.COMPLETED:
        rec["hoodieRollbackMetadata"] = tl.read_rollback_metadata(ts).to_avro()
    return rec


def _raw(ctx: ServiceContext, tl: Timeline, ts: str, state: State) -> bytes:
    path = tl.file_paths(ts).get(state)
    if path is None:
        return b""
    try:
        return ctx.storage.read_bytes(path)
    except FileNotFoundError:
        return b""


def _commit_metadata(
    ctx: ServiceContext, tl: Timeline, ts: str, state: State
) -> CommitMetadata | None:
    data = _raw(ctx, tl, ts, state)
    if not data.strip():
        return None
    return CommitMetadata.from_bytes(data)


def _encode_entries(records: list[Mapping[str, Any]]) -> bytes:
    schema = avro_schema("HoodieArchivedMetaEntry")
    parts = [struct.pack(">ii", 3, len(records))]
    for rec in records:
        buf = io.BytesIO()
        fastavro.schemaless_writer(buf, schema, dict(rec))
        parts.append(struct.pack(">i", len(buf.getvalue())))
        parts.append(buf.getvalue())
    return encode_block(
        BlockType.AVRO_DATA, {HeaderKey.SCHEMA: _entry_schema_text()}, b"".join(parts)
    )


def _archive_folder(ctx: ServiceContext) -> str:
    name = ctx.config.archive_folder
    return f"{HOODIE_FOLDER}/{name}"


def _next_archive_file(ctx: ServiceContext) -> str:
    files = archive_files(ctx.storage, _archive_folder(ctx))
    n = (archive_number(files[-1].name) or 0) if files else 0
    return f"{_archive_folder(ctx)}/{archive_file_name(n + 1, ARCHIVE_TOKEN)}"


def _delete_stale_temp(ctx: ServiceContext, folder: str) -> None:
    """Temporary files of archive files whose write was killed (``..commits_.archive.N_<token>
    .<uuid>.tmp``, ``.<min>_<max>_<layer>.parquet.<uuid>.tmp``, never read as archive files),
    once older than a running write can be."""
    now_ms = time.time() * 1000
    for f in ctx.storage.list_files(folder):
        if f.name.endswith(".tmp") and now_ms - f.mtime_ms > STALE_TMP_SECONDS * 1000:
            ctx.storage.delete(f.path)


def _already_archived(ctx: ServiceContext, tl: Timeline) -> set[tuple[str, State]]:
    """``(instant time, state)`` records of still-active instants that an earlier archival,
    killed after writing its archive file, already archived.

    A killed run's records are in the newest archive files: they are read newest first, up to
    the first one that holds neither an active instant nor one as recent as the oldest active
    instant (normally only the newest file is read, and nothing is found). Readers collapse
    duplicates anyway (ours by instant and state, Java's ``HoodieArchivedTimeline`` into a
    set); this keeps the archive free of them.
    """
    active = {i.requested_time for i in tl}
    if not active:
        return set()
    first = min(active)
    found: set[tuple[str, State]] = set()
    for f in reversed(archive_files(ctx.storage, _archive_folder(ctx))):
        entries = archive_file_entries(ctx.storage, f.path)
        hits = {(ts, st) for ts, _, st in entries if ts in active}
        if not hits and all(ts < first for ts, _, _ in entries):
            break
        found |= hits
    return found


def _archive_log(ctx: ServiceContext, tl: Timeline, chosen: list[Instant]) -> str | None:
    """Layout 1: the instants' records into a new archive log file (None: all are there)."""
    _delete_stale_temp(ctx, _archive_folder(ctx))
    done = _already_archived(ctx, tl)
    records: list[Mapping[str, Any]] = []
    for inst in chosen:
        ts = inst.requested_time
        origin = tl.origin_action(ts) or inst.action
        paths = tl.file_paths(ts)
        for state in (State.REQUESTED, State.INFLIGHT, State.COMPLETED):
            if state in paths and (ts, state) not in done:
                records.append(_record(ctx, tl, inst, state, origin))
    if not records:
        log.info("resuming an interrupted archival: every record is archived already")
        return None
    target = _next_archive_file(ctx)
    ctx.storage.write_atomic(target, _encode_entries(records), crash_point_name="archive")
    return target


def _lsm_writer(ctx: ServiceContext) -> LsmTimelineWriter:
    return LsmTimelineWriter(
        ctx.storage,
        ctx.config.timeline_history_path,
        ctx.get(ServiceConfig.TIMELINE_COMPACTION_BATCH_SIZE),
    )


def _archive_lsm(ctx: ServiceContext, tl: Timeline, chosen: list[Instant]) -> str | None:
    """Layout 2: one row per instant (``HoodieLSMTimelineInstant``: completed content as
    ``metadata``, the plan as ``plan``) into a new layer-0 file of the LSM history, committed
    by a new manifest version (Hudi 1.x ``HoodieTimelineArchiver`` -> ``LSMTimelineWriter``).
    Instants an earlier, killed run committed already are not written again."""
    writer = _lsm_writer(ctx)
    _delete_stale_temp(ctx, writer.folder)
    done = writer.archived_times(since=chosen[0].requested_time)
    entries = []
    for inst in chosen:
        ts = inst.requested_time
        if ts in done:
            continue
        origin = tl.origin_action(ts) or inst.action
        contents = {st.value.lower(): _raw(ctx, tl, ts, st) for st in tl.file_paths(ts)}
        entries.append(entry_of(ts, inst.completion_time, origin, contents))
    if not entries:
        log.info("resuming an interrupted archival: every instant is archived already")
        return None
    return writer.write(entries)


@under_table_lock
def archive(ctx: ServiceContext, *, dry_run: bool = False) -> ArchiveResult:
    """Archive the instants :func:`instants_to_archive` selects, then those of the table's
    metadata table (:func:`archive_metadata_table`).

    Resumable: a run killed at any step leaves the archive file written (or not) and some of
    the instant files deleted. Deleting pending states before completed ones (as Hudi's
    ``TimelineArchiverV1.deleteArchivedInstants`` does) keeps every instant that is left
    completed; the next run selects what is left, writes no record twice (records already in
    the newest archive files are skipped), reads a clean plan from whichever state file is
    left, and deletes the rest.

    Returns:
        What was archived (nothing when the active timeline is short enough).
    """
    ctx.require_writable("archival")
    tl = ctx.timeline()
    chosen = instants_to_archive(ctx, tl)
    if dry_run:
        return ArchiveResult([i.requested_time for i in chosen])
    result = _archive_instants(ctx, tl, chosen) if chosen else ArchiveResult()
    result.metadata_archived = archive_metadata_table(ctx).archived
    return result


def _metadata_context(ctx: ServiceContext) -> ServiceContext | None:
    """The metadata table as a service context, with the archival options Java gives it
    (``HoodieMetadataWriteUtils.createMetadataWriteConfig``: keep min/max commits the larger
    of the metadata table's and the data table's)."""
    state = _metadata_state(ctx)
    if state is None:
        return None
    lo = max(
        ctx.get(ServiceConfig.KEEP_MIN_COMMITS), ctx.get(ServiceConfig.METADATA_KEEP_MIN_COMMITS)
    )
    hi = max(
        ctx.get(ServiceConfig.KEEP_MAX_COMMITS), ctx.get(ServiceConfig.METADATA_KEEP_MAX_COMMITS)
    )
    batch = ctx.get(ServiceConfig.TIMELINE_COMPACTION_BATCH_SIZE)
    opts = Options.of(
        {
            ServiceConfig.KEEP_MIN_COMMITS.key: str(lo),
            ServiceConfig.KEEP_MAX_COMMITS.key: str(max(hi, lo + 1)),
            ServiceConfig.TIMELINE_COMPACTION_BATCH_SIZE.key: str(batch),
        }
    )
    # under the data table's lock, confirmed as the data table's services confirm it
    return ServiceContext(state, opts, held_lock=ctx.held_lock)


def archive_metadata_table(ctx: ServiceContext) -> ArchiveResult:
    """Archive the timeline of data table ``ctx``'s metadata table, as Java's metadata writer
    does after its compaction and clean (``HoodieBackedTableMetadataWriter
    .performTableServices`` -> ``writeClient.archive()``, with the metadata table's limits,
    :func:`_archival_bound`): v6 into ``.hoodie/metadata/.hoodie/archived``, v8/v9 into the LSM
    timeline ``.hoodie/metadata/.hoodie/timeline/history``. Runs under the data table's lock
    (the caller's); nothing when the table has no metadata table."""
    mctx = _metadata_context(ctx)
    if mctx is None:
        return ArchiveResult()
    tl = mctx.timeline()
    chosen = instants_to_archive(mctx, tl, data_timeline=ctx.timeline())
    if not chosen:
        return ArchiveResult()
    result = _archive_instants(mctx, tl, chosen)
    log.info("metadata table: archived %d instant(s)", len(chosen))
    return result


def archival_due(ctx: ServiceContext) -> bool:
    """Whether :func:`archive` has work: instants of the table or of its metadata table."""
    if instants_to_archive(ctx, ctx.timeline()):
        return True
    mctx = _metadata_context(ctx)
    return mctx is not None and bool(
        instants_to_archive(mctx, mctx.timeline(), data_timeline=ctx.timeline())
    )


def _archive_instants(ctx: ServiceContext, tl: Timeline, chosen: list[Instant]) -> ArchiveResult:
    files: list[tuple[int, str, str]] = []
    for inst in chosen:
        paths = tl.file_paths(inst.requested_time)
        files.extend((st.rank, inst.requested_time, p) for st, p in paths.items())
    archive_into = _archive_lsm if ctx.layout == 2 else _archive_log
    # An archival that lost the table lock (paused past its lease) stops before its next
    # change: another archival may have written archive files or LSM manifest versions since,
    # which a late write of ours would duplicate or (a manifest) overwrite. What it did before
    # is what a killed archival leaves, which the next run resumes.
    ctx.still_locked(force=True)
    target = archive_into(ctx, tl, chosen)
    crash_point("archive")
    ctx.still_locked(force=True)
    deleted = []
    # Hudi's deleteArchivedInstants: requested -> inflight -> completed, the completed files
    # last and in ascending time -- a completed file removed first would make the instant look
    # pending to the other services, and a gap in the completed instants would hide data
    try:
        for _, _, path in sorted(files):
            ctx.still_locked()
            if ctx.storage.delete(path):
                deleted.append(path)
            crash_point("archive")
    finally:
        ctx.reload_timeline()  # the archived instants are gone from the active timeline
    if ctx.layout == 2:
        # LSMTimelineWriter.compactAndClean, after the active files are gone (as Java's
        # archiver runs it): merge full layers, drop old snapshots
        ctx.still_locked(force=True)
        _lsm_writer(ctx).compact_and_clean()
    log.info("archived %d instant(s) into %s", len(chosen), target)
    return ArchiveResult([i.requested_time for i in chosen], target, deleted)
