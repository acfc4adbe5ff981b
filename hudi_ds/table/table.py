"""``ReadableTable``: open a Hudi table and read it.

Queries: snapshot, read-optimized, incremental and time travel.
"""

from __future__ import annotations

import dataclasses
import logging
import os
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from hudi_ds.config import Options, ReadConfig, validated
from hudi_ds.errors import (
    ConfigError,
    CorruptFileError,
    InstantNotFoundError,
    MissingFileError,
    UnsupportedError,
)
from hudi_ds.index.bucket import bucket_ids_from_record_keys
from hudi_ds.index.core import records_another_index
from hudi_ds.index.partition_bucket import is_partition_level
from hudi_ds.keygen import KeyGeneratorType, key_string
from hudi_ds.layout.file_group import FileSlice
from hudi_ds.log.archive import latest_archived_commit_after, load_archived
from hudi_ds.merge.modes import custom_classes_option, table_spec
from hudi_ds.metadata.reader import MetadataReader
from hudi_ds.metadata.records import FILES_PARTITION, declared_partitions
from hudi_ds.schema.meta import COMMIT_TIME_METADATA_FIELD
from hudi_ds.storage import Storage, open_storage
from hudi_ds.table.committed import (
    Committed,
    Problem,
    cleaned_by,
    find_problems,
    visible_commits,
)
from hudi_ds.table.filters import Filter, filter_expression, normalize_filters
from hudi_ds.table.fs_view import FileSystemView
from hudi_ds.table.plan import ReadPlan, gc_paused
from hudi_ds.table.reader import ReadStats, SliceReadContext, read_file_slice
from hudi_ds.table.secondary_skipping import SecondaryIndexSkipping
from hudi_ds.table.skipping import DataSkipping, slice_bounds
from hudi_ds.table.slice_pruner import SlicePruner, covered
from hudi_ds.table.unsupported import Use, refuse_unsupported
from hudi_ds.table_config import TableConfig
from hudi_ds.timeline.archived import ArchivedTimeline
from hudi_ds.timeline.instant import Instant, normalize_instant
from hudi_ds.timeline.timeline import Timeline
from hudi_ds.timeline.view import TableState, Visibility

log = logging.getLogger("hudi_ds.read")

SUPPORTED_VERSIONS = (3, 4, 5, 6, 8, 9)


class ReadableTable:
    """A Hudi table at ``path`` (a local path or a URI), opened to be read.

    The public :class:`hudi_ds.HudiTable` extends it with writes.

    Args:
        path: the table base path (a local path or an ``s3://``, ``gs://``, ``abfs(s)://`` URI).
        options: read options (``hoodie.*`` keys).
        storage_options: object store credentials and settings (``aws_access_key_id``,
            ``aws_endpoint_url``, ...; see :mod:`hudi_ds.object_store`).

    Raises:
        TableNotFoundError: there is no ``.hoodie/hoodie.properties`` under ``path``.
        ConfigError: an unknown option key or an invalid value (docs/options.md).
    """

    def __init__(
        self,
        path: str | Storage | TableState,
        options: Mapping[str, Any] | None = None,
        *,
        storage_options: Mapping[str, Any] | None = None,
    ) -> None:
        self.state = (
            path
            if isinstance(path, TableState)
            else TableState.open(open_storage(path, storage_options))
        )
        self.storage = self.state.storage
        # refused now rather than at the first read or write (ConfigError naming the key)
        self.options = validated(options)
        if self.config.table_version not in SUPPORTED_VERSIONS:
            raise UnsupportedError(
                f"{self.storage.base_uri} is a Hudi table of version "
                f"{self.config.table_version} (hoodie.table.version); hudi_ds reads versions "
                f"{', '.join(map(str, SUPPORTED_VERSIONS))}"
            )
        self.last_read_stats = ReadStats()
        # the metadata table as read for one data timeline (a refresh loads a new timeline)
        self._metadata: tuple[Timeline, MetadataReader | None] | None = None
        #: threads reading file slices in parallel (embedded reads; Spark tasks use one)
        self.read_threads = os.cpu_count() or 1

    # -- metadata ----------------------------------------------------------------------------
    @property
    def path(self) -> str:
        """The table's base path as a URI."""
        return self.storage.uri()

    @property
    def name(self) -> str:
        """``hoodie.table.name``."""
        return self.config.table_name

    @property
    def config(self) -> TableConfig:
        """The table's ``hoodie.properties``."""
        return self.state.config

    @property
    def timeline(self) -> Timeline:
        """The active timeline (listed once; call :meth:`refresh` after writes)."""
        return self.state.timeline

    def refresh(self) -> None:
        """Forget the cached timeline, re-read ``hoodie.properties`` (another writer committed)."""
        self.state.refresh()

    @property
    def schema(self) -> pa.Schema:
        """The table schema (Arrow), with Hudi's meta fields first when the table keeps them."""
        return self.state.schema

    def _view(self, options: Options | None = None) -> FileSystemView:
        """The file-system view of a read: listed through the metadata table when it serves
        (:meth:`metadata_reader`), else by listing the storage."""
        return FileSystemView.of(self.storage, self.config, self.metadata_reader(options))

    def metadata_reader(self, options: Options | None = None) -> MetadataReader | None:
        """The metadata table's reader when a read may list files through it, else None.

        It may when the table declares the MDT's ``files`` partition
        (``hoodie.table.metadata.partitions``), the read option ``hoodie.metadata.enable`` is
        not false, the MDT is there and it is in step with the data timeline
        (:attr:`MetadataReader.in_step`). Otherwise the read lists the storage; why is logged
        (info when the MDT is there but cannot be used).
        """
        opts = options if options is not None else self.options
        if FILES_PARTITION not in declared_partitions(self.config):
            log.debug("%s: no metadata table declared; listing the storage", self.path)
            return None
        if opts.get(ReadConfig.METADATA_ENABLE) is False:
            log.debug("%s: hoodie.metadata.enable=false; listing the storage", self.path)
            return None
        timeline = self.timeline
        if self._metadata is not None and self._metadata[0] is timeline:
            reader = self._metadata[1]
        else:
            try:
                reader = MetadataReader.open(self.storage, self.config, timeline)
            except CorruptFileError as e:
                log.warning(
                    "%s: the metadata table is unreadable (%s); listing the storage", self.path, e
                )
                return None
            self._metadata = (timeline, reader)
        if reader is None:
            log.info("%s: the declared metadata table is absent; listing the storage", self.path)
            return None
        if not reader.in_step:
            log.info(
                "%s: the metadata table is not in step (%s); listing the storage",
                self.path,
                reader.why_not_in_step(),
            )
            return None
        log.debug(
            "%s: listing through the metadata table (latest instant %s)",
            self.path,
            reader.latest_instant,
        )
        return reader

    # -- visibility --------------------------------------------------------------------------
    def visibility(self, as_of: str | None = None) -> Visibility:
        """The instants a read as of ``as_of`` (default: the latest) may see."""
        return self.state.visibility(as_of)

    def file_slices(
        self, as_of: str | None = None, partitions: Sequence[str] | None = None
    ) -> list[FileSlice]:
        """The latest visible file slice of every live file group (as of ``as_of``)."""
        vis = self.visibility(as_of)
        view = self._view()
        parts = view.partitions() if partitions is None else partitions
        return [s for p in parts for s in view.latest_file_slices(p, vis)]

    def read_context(self, options: Options | None = None) -> SliceReadContext:
        """How slices are read and merged (``options`` may name CUSTOM merger classes)."""
        cfg = self.config
        ordering = cfg.ordering_fields[0] if cfg.ordering_fields else None
        spec = table_spec(cfg, custom_classes_option(options or self.options))
        return SliceReadContext(
            schema=self.schema,
            record_key_fields=tuple(cfg.record_key_fields),
            complex_key=cfg.complex_record_key,
            ordering_field=ordering,
            merge_mode=spec.mode,
            populate_meta_fields=cfg.populate_meta_fields,
            merge=spec,
            key_field_is_key=_key_field_is_key(cfg),
        )

    # -- reads ---------------------------------------------------------------------------------
    def read(
        self,
        options: Mapping[str, Any] | None = None,
        columns: Sequence[str] | None = None,
        filters: Sequence[Filter] | None = None,
    ) -> pa.Table:
        """Read the table into one Arrow table.

        Args:
            options: ``hoodie.datasource.query.type`` (``snapshot`` | ``read_optimized`` |
                ``incremental``), ``hoodie.datasource.read.begin.instanttime`` /
                ``hoodie.datasource.read.end.instanttime`` (incremental: begin exclusive, end
                inclusive), ``as.of.instant`` (time travel).
            columns: columns to return (default all).
            filters: ``(column, op, value)`` tuples, ANDed; ops ``= != < <= > >= in``,
                ``not in``, ``is null``, ``is not null`` (value ignored).
                Partition columns prune partitions first, the metadata table's column
                statistics file slices (``hoodie.enable.data.skipping``); every filter is
                applied to the rows.

        Returns:
            The rows as a ``pyarrow.Table``.
        """
        batches = list(self.iter_batches(options, columns, filters))
        schema = self._output_schema(columns)
        if not batches:
            return schema.empty_table()
        return pa.Table.from_batches(batches, schema=schema)

    def _output_schema(self, columns: Sequence[str] | None) -> pa.Schema:
        if columns is None:
            return self.schema
        return pa.schema([self._field(c) for c in columns])

    def _field(self, name: str) -> pa.Field:
        idx = self.schema.get_field_index(name)
        if idx < 0:
            raise ConfigError(f"unknown column '{name}'; columns are {self.schema.names}")
        return self.schema.field(idx)

    def iter_batches(
        self,
        options: Mapping[str, Any] | None = None,
        columns: Sequence[str] | None = None,
        filters: Sequence[Filter] | None = None,
    ) -> Iterator[pa.RecordBatch]:
        """Like :meth:`read`, but yields record batches one file slice at a time.

        A read racing the cleaner re-plans once: when a planned file is gone because a clean
        that completed meanwhile deleted it (its slice was superseded by a compaction or a
        newer version), the timeline is reloaded and the file groups not yet returned are read
        from the new plan. Any other missing committed file is a :class:`MissingFileError`.
        """
        plan = self.plan_read(options, columns, filters)
        stats = ReadStats()
        done: set[tuple[str, str]] = set()
        try:
            for s, t in self._slice_tables(plan, plan.slices, stats):
                done.add((s.partition_path, s.file_id))
                if t.num_rows:
                    yield from t.to_batches()
        except MissingFileError as e:
            clean = self._cleaned_by(e.path)
            if clean is None or plan.replans:
                raise
            log.warning(
                "%s was deleted by clean %s while the read ran: re-planning the read", e.path, clean
            )
            self.refresh()
            again = self.plan_read(options, columns, filters, _attempt=1)
            replaced = again.visibility.replaced
            if any(fid in replaced.get(p, ()) for p, fid in done):
                raise MissingFileError(
                    f"{e}; a replacecommit rewrote file groups this read already returned "
                    f"while it ran (clean {clean} removed the old files): read again",
                    e.path,
                ) from e
            stats.replans += 1
            rest = [s for s in again.slices if (s.partition_path, s.file_id) not in done]
            for _, t in self._slice_tables(again, rest, stats):
                if t.num_rows:
                    yield from t.to_batches()
        self._report(stats)

    def _cleaned_by(self, path: str) -> str | None:
        """The completed clean (on the freshly loaded timeline) that deleted ``path``."""
        if not path:
            return None
        return cleaned_by(self.state.load_timeline(), path)

    @gc_paused
    def plan_read(
        self,
        options: Mapping[str, Any] | None = None,
        columns: Sequence[str] | None = None,
        filters: Sequence[Filter] | None = None,
        _attempt: int = 0,
        *,
        pinned: frozenset[str] | None = None,
    ) -> ReadPlan:
        """Validate options and choose the file slices a read needs (the driver side of a read).

        ``pinned``: see only these instants (:meth:`_pinned_range`).
        Every file that the visible commits wrote into the latest slice of a file group the
        read covers must be listed, base files with their committed size and log files with at
        least it (:mod:`hudi_ds.table.committed`).

        Raises:
            MissingFileError: a committed file is missing (unless
                ``spark.sql.files.ignoreMissingFiles``); a file a completed clean deleted
                meanwhile makes the plan reload the timeline and re-plan once instead.
            CorruptFileError: a committed file is shorter than committed (unless
                ``spark.sql.files.ignoreCorruptFiles``).
            UnsupportedError: a table hudi_ds would read wrongly
                (:func:`~hudi_ds.table.unsupported.refuse_unsupported`).
            InstantNotFoundError: a ``pinned`` instant left the active timeline.
        """
        # every read plans here (embedded, Arrow dataset, Spark): bootstrap skeletons and
        # renamed columns would read other rows than Apache Hudi's
        refuse_unsupported(self.state, Use.READ)
        opts = self._read_options(options)
        qtype = opts.get(ReadConfig.QUERY_TYPE)
        cols = column_list(columns)
        for c in cols or ():
            self._field(c)
        flt = normalize_filters([] if filters is None else filters, self.schema)
        vis, commit_times, touched = self._read_range(opts, qtype, pinned)
        view = self._view(opts)
        early = self._prefetch_committed(view, vis)
        keep = SlicePruner(self.config, self.schema, flt, touched, self._key_buckets(flt))
        include_logs = qtype != "read_optimized"
        ctx = dataclasses.replace(
            self.read_context(opts),
            ignore_missing_files=bool(opts.get(ReadConfig.IGNORE_MISSING_FILES)),
            ignore_corrupt_files=bool(opts.get(ReadConfig.IGNORE_CORRUPT_FILES)),
        )
        latest = touched is None and vis.as_of is None
        skip = self._data_skipping(opts, flt, view, ctx, latest=latest)
        si = self._secondary_skipping(opts, flt, view) if latest and include_logs else None
        slices = [
            s
            for p in view.partitions()
            if keep.partition(p) and (skip is None or skip.partition(p))
            for s in view.latest_file_slices(p, vis, include_logs=include_logs)
            if keep.group(p, s.file_id)
            and (include_logs or s.base_file is not None)
            and (skip is None or skip.keep_slice(s))
            and (si is None or si.keep(p, s.file_id))
        ]
        # every committed file of the slices read (not those the statistics ruled out) is whole
        committed, problems = self._committed_problems(
            view, vis, include_logs, keep, skip, trust_metadata=True, prefetched=early
        )
        skipped_missing: list[str] = []
        skipped_damaged: list[str] = []
        if problems:
            if _attempt == 0 and self._reloaded_after_clean(problems):
                again = self.plan_read(options, columns, filters, _attempt=1, pinned=pinned)
                again.replans += 1
                return again
            slices = self._skip_problems(problems, slices, ctx, skipped_missing, skipped_damaged)
        ctx = dataclasses.replace(ctx, log_ranges=committed.log_ranges())
        plan = ReadPlan(vis, ctx, slices, cols, flt, commit_times, self._output_schema(cols))
        plan.missing_files, plan.damaged_files = skipped_missing, skipped_damaged
        if skip is not None:
            plan.data_skipped_slices = skip.skipped_slices
            plan.data_skipped_partitions = skip.skipped_partitions
        if si is not None:
            plan.data_skipped_slices += si.skipped_slices
        return plan

    def _prefetch_committed(self, view: FileSystemView, vis: Visibility) -> Committed | None:
        """The visible commits' decode started on another thread (:meth:`Committed.prefetch`)
        when the plan will check the committed files against a storage listing: it runs
        while this thread lists the storage. None through the metadata table (trusted)."""
        if isinstance(view.listing, MetadataReader):
            return None
        layout2 = self.config.timeline_layout_version >= 2
        return Committed.prefetch(self.timeline, visible_commits(self.timeline, vis), layout2)

    def _data_skipping(
        self,
        opts: Options,
        filters: list[Filter],
        view: FileSystemView,
        ctx: SliceReadContext,
        *,
        latest: bool,
    ) -> DataSkipping | None:
        """The read's data skipping (:mod:`hudi_ds.table.skipping`), None when it skips
        nothing: no filters, ``hoodie.enable.data.skipping=false``, or no metadata table in
        step with the data timeline (the view then lists the storage)."""
        if not filters or opts.get(ReadConfig.ENABLE_DATA_SKIPPING) is False:
            return None
        custom = ctx.merge is not None and ctx.merge.mode == "CUSTOM"
        return DataSkipping.plan(
            self.config,
            self.schema,
            self.timeline,
            view.listing if isinstance(view.listing, MetadataReader) else None,
            filters,
            latest=latest,
            custom_merge=custom or ctx.merge_mode == "CUSTOM",
        )

    def _secondary_skipping(
        self, opts: Options, filters: list[Filter], view: FileSystemView
    ) -> SecondaryIndexSkipping | None:
        """A latest snapshot's pruning by the secondary indexes
        (:mod:`hudi_ds.table.secondary_skipping`), under the same switch as data skipping."""
        if not filters or opts.get(ReadConfig.ENABLE_DATA_SKIPPING) is False:
            return None
        return SecondaryIndexSkipping.plan(
            self.config,
            self.storage,
            self.schema,
            self.timeline,
            view.listing if isinstance(view.listing, MetadataReader) else None,
            filters,
        )

    def slice_bounds(
        self, plan: ReadPlan, options: Mapping[str, Any] | None = None
    ) -> dict[tuple[str, str], pc.Expression]:
        """Per slice of ``plan``, the bounds its files' column statistics put on its rows
        (:func:`hudi_ds.table.skipping.slice_bounds`); empty when data skipping is off or
        the metadata table cannot answer (not in step, statistics unreadable)."""
        opts = self._read_options(options)
        reader = self.metadata_reader(opts)
        if reader is None or opts.get(ReadConfig.ENABLE_DATA_SKIPPING) is False:
            return {}
        custom = plan.context.merge is not None and plan.context.merge.mode == "CUSTOM"
        try:
            return slice_bounds(
                self.config,
                plan.output_schema,
                self.timeline,
                reader,
                plan.slices,
                custom_merge=custom or plan.context.merge_mode == "CUSTOM",
            )
        except CorruptFileError as e:
            log.warning("data skipping is off for this dataset: %s", e)
            return {}

    def _read_options(self, options: Mapping[str, Any] | None) -> Options:
        """The read's options over the table's defaults, validated (one option dict may serve
        writes and reads: every core option is known here)."""
        return validated({**self.options.raw, **Options.of(options).raw})

    def _read_range(
        self, opts: Options, qtype: str, pinned: frozenset[str] | None = None
    ) -> tuple[Visibility, frozenset[str] | None, set[tuple[str, str]] | None]:
        if pinned is None:
            return self._query_range(opts, qtype)
        vis, commit_times, touched = self._query_range(opts, qtype)
        return (*self._pinned_range(vis, commit_times, pinned), touched)

    def _query_range(
        self, opts: Options, qtype: str
    ) -> tuple[Visibility, frozenset[str] | None, set[tuple[str, str]] | None]:
        """What of the timeline a read sees: its visibility, and for an incremental query the
        commits whose rows it returns and the file groups they touched (None otherwise).

        Raises:
            UnsupportedError: an incremental query of a table without meta fields.
            ConfigError: an incremental query without a begin instant.
        """
        if qtype != "incremental":
            as_of = opts.get(ReadConfig.AS_OF_INSTANT)
            if as_of is not None:
                as_of = self._instant_option(as_of, ReadConfig.AS_OF_INSTANT.key)
                self._check_as_of(as_of)
            return self.visibility(as_of), None, None
        if not self.config.populate_meta_fields:
            # Java IncrementalRelation: no _hoodie_commit_time to select the rows by
            raise UnsupportedError(
                f"incremental queries are not supported on the table at "
                f"{self.storage.base_uri}: it has hoodie.populate.meta.fields=false, so its "
                "rows carry no _hoodie_commit_time to select the changed ones by"
            )
        begin = opts.get(ReadConfig.BEGIN_INSTANT)
        if begin is None:
            raise ConfigError("incremental queries need 'hoodie.datasource.read.begin.instanttime'")
        end = opts.get(ReadConfig.END_INSTANT)
        commits = self._incremental_commits(begin, end)
        vis = self.state.visibility_of(self._commits_up_to(commits))
        commit_times = frozenset(i.requested_time for i in commits)
        return vis, commit_times, self._touched_file_groups(commits)

    def _pinned_range(
        self, vis: Visibility, commit_times: frozenset[str] | None, pinned: frozenset[str]
    ) -> tuple[Visibility, frozenset[str] | None]:
        """A read's visibility and incremental commits narrowed to the ``pinned`` instants:
        those an earlier planning of the same read saw (:attr:`Visibility.instants` of its
        plan), whatever completed since -- an engine planning one read in two places
        (``hudi_ds.spark.read_table``) shows one snapshot."""
        if vis.instants == pinned:
            return vis, commit_times
        commits = {i.requested_time: i for i in self.timeline.commits()}
        gone = sorted(pinned - commits.keys())
        if gone:
            raise InstantNotFoundError(
                f"this read of {self.path} was planned to see instant(s) {', '.join(gone[:3])}, "
                "which are no longer on the active timeline (archived since): plan the read again"
            )
        vis = self.state.visibility_of([commits[t] for t in sorted(pinned)], vis.as_of)
        return vis, None if commit_times is None else commit_times & pinned

    def _reloaded_after_clean(self, problems: list[Problem]) -> bool:
        """Whether the plan's problems are all missing files of which the first was deleted by
        a completed clean: the plan was made against a timeline older than a compaction (or a
        newer file version) and the clean that followed it. The timeline is then reloaded, for
        the caller to plan again."""
        missing = [x for x in problems if x.kind == "missing"]
        if not missing or len(missing) != len(problems):
            return False
        clean = self._cleaned_by(missing[0].path)
        if clean is None:
            return False
        log.warning(
            "%s was deleted by clean %s: reloading the timeline and re-planning",
            missing[0].path,
            clean,
        )
        self.refresh()
        return True

    def _committed_problems(
        self,
        view: FileSystemView,
        vis: Visibility,
        include_logs: bool,
        keep: SlicePruner | None = None,
        skip: DataSkipping | None = None,
        *,
        trust_metadata: bool = False,
        prefetched: Committed | None = None,
    ) -> tuple[Committed, list[Problem]]:
        """The files the visible commits wrote and those missing or short on storage: those
        of the file groups the pruner ``keep`` covers (None: all) less the ones the
        statistics ruled out (not read).

        ``trust_metadata``: a listing through the metadata table is trusted, as Java's reader
        does (``HoodieBackedTableMetadata``): in step with the timeline it lists exactly the
        files the commits wrote, with their committed sizes, so the check would find nothing;
        the commits are then decoded only when :attr:`Committed.written` is first used.
        ``prefetched``: what :meth:`Committed.prefetch` started decoding for ``vis``."""
        layout2 = self.config.timeline_layout_version >= 2
        commits = visible_commits(self.timeline, vis)
        if trust_metadata and isinstance(view.listing, MetadataReader):
            return Committed.deferred(self.timeline, commits, layout2), []
        committed = (
            prefetched
            if prefetched is not None
            else Committed.load(self.timeline, commits, layout2)
        )
        if keep is None:
            return committed, find_problems(committed, view, include_logs, vis.replaced)
        part = None if keep.keeps_all else keep.partition
        groups = covered(keep, skip)
        return committed, find_problems(committed, view, include_logs, vis.replaced, groups, part)

    def verify_committed_files(
        self, view: FileSystemView, vis: Visibility, *, recheck_cleaned: bool = False
    ) -> Committed:
        """Check that the latest slices' committed files are all listed and whole.

        For writers and table services (compaction), which must never bake a loss into a new
        base file. With ``recheck_cleaned`` (a caller that plans from a fresh view afterwards),
        a missing file that a completed clean deleted -- another writer committed a newer
        version and cleaned this one after this table's timeline was loaded -- makes the check
        reload the timeline and the listing and run once more.

        Returns:
            What the visible commits wrote (:meth:`Committed.files`: per ``(partition,
            file id)``, with their committed log ranges).

        Raises:
            MissingFileError: a committed file is missing (names it and its instant).
            CorruptFileError: a committed file is shorter than its commit recorded.
        """
        committed, problems = self._committed_problems(view, vis, True)
        if recheck_cleaned and any(
            x.kind == "missing" and self._cleaned_by(x.path) is not None for x in problems
        ):
            self.refresh()
            vis = self.visibility()  # the timeline first, then the listing
            return self.verify_committed_files(FileSystemView(self.storage, self.config), vis)
        for x in problems:
            where = self.storage.full_path(x.path)
            if x.kind == "missing":
                raise MissingFileError(x.describe(where), x.path)
            raise CorruptFileError(f"{x.describe(where)}: it is truncated or damaged")
        return committed

    def _skip_problems(
        self,
        problems: list[Problem],
        slices: list[FileSlice],
        ctx: SliceReadContext,
        skipped_missing: list[str],
        skipped_damaged: list[str],
    ) -> list[FileSlice]:
        """Raise for the first problem, or (when the user opted in) skip the files and warn."""
        drop_base: set[str] = set()
        for x in problems:
            where = self.storage.full_path(x.path)
            if x.kind == "missing":
                if not ctx.ignore_missing_files:
                    clean = self._cleaned_by(x.path)
                    why = (
                        f"; clean {clean} deleted it: the file versions this read needs were "
                        "cleaned (retain more with hoodie.cleaner.commits.retained / "
                        "hoodie.cleaner.fileversions.retained)"
                        if clean is not None
                        else "; the read would silently lose its rows (set "
                        "spark.sql.files.ignoreMissingFiles=true to skip it)"
                    )
                    raise MissingFileError(f"{x.describe(where)}{why}", x.path)
                skipped_missing.append(x.path)
            else:
                if not ctx.ignore_corrupt_files:
                    raise CorruptFileError(
                        f"{x.describe(where)}: it is truncated or damaged "
                        "(set spark.sql.files.ignoreCorruptFiles=true to skip it)"
                    )
                skipped_damaged.append(x.path)
                if not x.is_log:
                    drop_base.add(x.path)
            log.warning("read skips: %s", x.describe(where))
        if not drop_base:
            return slices
        out = []
        for s in slices:
            if s.base_file is not None and s.base_file.path in drop_base:
                s = FileSlice(s.partition_path, s.file_id, s.base_instant_time, None, s.log_files)
            if not s.is_empty:
                out.append(s)
        return out

    def read_plan_slices(
        self,
        plan: ReadPlan,
        slices: Sequence[FileSlice],
        stats: ReadStats | None = None,
        slice_keys: Callable[[FileSlice], pa.Array] | None = None,
    ) -> Iterator[pa.RecordBatch]:
        """Read ``slices`` of ``plan`` (runs on executors in the Spark reader); ``slice_keys``:
        only the rows of these record keys of each slice (a MERGE's keys of the slice, see
        :func:`~hudi_ds.table.reader.read_file_slice`)."""
        stats = stats if stats is not None else ReadStats()
        for _, t in self._slice_tables(plan, slices, stats, slice_keys):
            if t.num_rows:
                yield from t.to_batches()
        self._report(stats)

    def _report(self, stats: ReadStats) -> None:
        if stats.corrupt_blocks:
            log.warning(
                "skipped %d corrupt log block(s) (%d bytes) in %s",
                stats.corrupt_blocks,
                stats.corrupt_bytes,
                sorted(set(stats.corrupt_files)),
            )

    def _slice_tables(
        self,
        plan: ReadPlan,
        slices: Sequence[FileSlice],
        stats: ReadStats,
        slice_keys: Callable[[FileSlice], pa.Array] | None = None,
    ) -> Iterator[tuple[FileSlice, pa.Table]]:
        """Read ``slices`` (a few in parallel), yielding each with its rows, in slice order."""
        self.last_read_stats = stats
        planned = ReadStats(
            replans=plan.replans,
            data_skipped_slices=plan.data_skipped_slices,
            data_skipped_partitions=plan.data_skipped_partitions,
        )
        planned.missing_files, planned.damaged_files = plan.missing_files, plan.damaged_files
        stats.add(planned)
        expr = filter_expression(plan.filters)
        needed = None
        if plan.columns is not None:
            needed = list(plan.columns)
            extra = [c for c, _, _ in plan.filters]
            if plan.commit_times is not None:
                extra.append(COMMIT_TIME_METADATA_FIELD)
            for c in extra:
                if c not in needed and plan.context.schema.get_field_index(c) >= 0:
                    needed.append(c)
        commit_set = pa.array(sorted(plan.commit_times)) if plan.commit_times is not None else None

        # slices are independent: read them on a few threads (Arrow and numpy release the
        # GIL), at most 2 per thread in flight to bound memory, results in slice order; each
        # slice decodes on its own thread then (Arrow's pool on top only adds hand-offs)
        workers = max(1, min(len(slices), self.read_threads))

        def one(s: FileSlice) -> tuple[pa.Table, ReadStats]:
            st = ReadStats()
            keys = None if slice_keys is None else slice_keys(s)
            t = read_file_slice(
                self.storage, s, plan.visibility, plan.context, st, needed, workers == 1, keys=keys
            )
            if commit_set is not None and COMMIT_TIME_METADATA_FIELD in t.column_names:
                t = t.filter(pc.is_in(t.column(COMMIT_TIME_METADATA_FIELD), commit_set))
            if expr is not None and t.num_rows:
                t = t.filter(expr)
            if plan.columns is not None:
                t = t.select(plan.columns)
            return t, st

        if workers == 1:
            for s in slices:
                t, st = one(s)
                stats.add(st)
                yield s, t
        else:
            with ThreadPoolExecutor(workers) as pool:
                pending: deque[Future[tuple[pa.Table, ReadStats]]] = deque()
                it = iter(slices)
                order: deque[FileSlice] = deque()
                for s in it:
                    pending.append(pool.submit(one, s))
                    order.append(s)
                    if len(pending) >= 2 * workers:
                        break
                while pending:
                    t, st = pending.popleft().result()
                    done = order.popleft()
                    nxt = next(it, None)
                    if nxt is not None:
                        pending.append(pool.submit(one, nxt))
                        order.append(nxt)
                    stats.add(st)
                    yield done, t

    def _key_buckets(self, filters: list[tuple[str, str, Any]]) -> set[int] | None:
        """Buckets holding the keys of a record-key lookup (``key = v`` / ``key in [...]``).

        Only for bucket-index tables whose bucket layout is recorded in hoodie.properties
        (tables written by hudi_ds) and keyed by one field; None means "no pruning" (the
        fileIds of other indexes say nothing about the keys they hold).
        """
        cfg = self.config
        n = cfg.get(TableConfig.BUCKET_INDEX_NUM_BUCKETS)
        keys = cfg.record_key_fields
        if n is None or records_another_index(cfg) or len(keys) != 1 or cfg.complex_record_key:
            return None
        if is_partition_level(self.storage, self.state.timeline):
            return None  # each partition's count is its rules' as of the read: not pruned
        hash_fields = TableConfig.BUCKET_INDEX_HASH_FIELD.items(cfg.props)
        wanted: set[int] | None = None
        for col, op, value in filters:
            if col != keys[0] or op not in ("=", "in"):
                continue
            values = [value] if op == "=" else list(value)
            arr = key_string(pa.array(values), col)
            ids = bucket_ids_from_record_keys(arr, hash_fields or keys, int(n), False)
            found = {int(b) for b in ids}
            wanted = found if wanted is None else wanted & found
        return wanted

    # -- incremental / time travel helpers -------------------------------------------------------
    def _instant_option(self, value: str, key: str) -> str:
        """The instant time option ``key`` means (an instant, a timestamp, epoch time: see
        :func:`~hudi_ds.timeline.instant.normalize_instant`), in the table's timeline zone."""
        return normalize_instant(value, key, self.config.timeline_timezone or "LOCAL")

    def _check_as_of(self, as_of: str) -> None:
        commits = self.timeline.commits()
        if commits and as_of < commits[0].requested_time:
            if self._archived_covers(as_of):
                raise InstantNotFoundError(
                    f"as.of.instant {as_of} reaches the archived timeline: the active timeline "
                    f"starts at {commits[0].requested_time} and older instants were archived "
                    "(time travel reads the active timeline only; keep more instants with "
                    "hoodie.keep.min.commits / hoodie.keep.max.commits)"
                )
            raise InstantNotFoundError(
                f"as.of.instant {as_of} is before the first commit of the table "
                f"({commits[0].requested_time})"
            )
        self._check_retained(as_of, "as.of.instant")

    def archived_timeline(self) -> ArchivedTimeline:
        """The archived timeline, loaded on each call (``hoodie.archivelog.folder`` of a layout 1
        table, the LSM history of layout 2: see :func:`~hudi_ds.log.archive.load_archived`).
        """
        return load_archived(
            self.storage,
            self.config.timeline_layout_version,
            self.config.timeline_path,
            archive_folder=self.config.archive_folder,
        )

    def _readable_archive(self) -> ArchivedTimeline | None:
        """The archived timeline, or None (logged) when it cannot be read."""
        try:
            return self.archived_timeline()
        except Exception:
            log.warning("cannot read the archived timeline of %s", self.path, exc_info=True)
            return None

    def _archived_covers(self, as_of: str) -> bool:
        """True when the archived timeline holds a commit at or before ``as_of``."""
        archived = self._readable_archive()
        if archived is None:  # an unreadable archive still means: archived
            return True
        return any(i.requested_time <= as_of for i in archived.commits())

    def _check_retained(self, instant: str, what: str) -> None:
        """Refuse reads as of an instant older than what the last clean kept files for."""
        tl = self.timeline
        for c in reversed(tl.completed().filter_actions("clean")):
            md = tl.read_clean_metadata(c)
            e = md.earliest_commit_to_retain
            if not e:
                continue
            if md.total_files_deleted and instant < e:
                raise InstantNotFoundError(
                    f"{what} {instant} is older than the earliest commit the cleaner retained "
                    f"({e}, clean {c.requested_time}); the file versions it needs were cleaned "
                    "(retain more with hoodie.cleaner.commits.retained)"
                )
            return

    def _incremental_commits(self, begin: str, end: str | None) -> list[Instant]:
        begin = self._instant_option(begin, ReadConfig.BEGIN_INSTANT.key)
        end = self._instant_option(end, ReadConfig.END_INSTANT.key) if end is not None else None
        first = self.timeline.commits().first()
        # archived commits lie before where the timeline starts, its first non-savepointed
        # commit (archival beyond savepoints leaves holes after a savepointed first commit)
        start = max(first.requested_time if first else "", self.timeline.start_time() or "")
        if start and begin < start:
            archived_after = self._archived_commit_after(begin)
            if archived_after is not None:
                raise InstantNotFoundError(
                    f"incremental read from {begin} reaches the archived timeline: archived "
                    f"commits after it (such as {archived_after}) are no longer on the "
                    f"active timeline, which starts at {start}; start at or after that instant"
                )
        if end is not None:
            self._check_retained(end, "incremental read up to")
        layout2 = self.config.timeline_layout_version >= 2
        out = []
        for i in self.timeline.commits():
            t = (i.completion_time or i.requested_time) if layout2 else i.requested_time
            if t > begin and (end is None or t <= end):
                out.append(i)
        return out

    def _archived_commit_after(self, begin: str) -> str | None:
        """An archived commit after ``begin``, if any (only the archive files that can hold
        one are read, see :func:`~hudi_ds.log.archive.latest_archived_commit_after`)."""
        try:
            return latest_archived_commit_after(
                self.storage,
                self.config.timeline_layout_version,
                begin,
                self.config.timeline_path,
                archive_folder=self.config.archive_folder,
            )
        except Exception:
            log.warning("cannot read the archived timeline of %s", self.path, exc_info=True)
            return None

    def _commits_up_to(self, commits: list[Instant]) -> list[Instant]:
        if not commits:
            return []
        last = max(i.requested_time for i in commits)
        layout2 = self.config.timeline_layout_version >= 2
        if layout2:
            last_done = max(i.completion_time or i.requested_time for i in commits)
            return [
                i
                for i in self.timeline.commits()
                if (i.completion_time or i.requested_time) <= last_done
            ]
        return [i for i in self.timeline.commits() if i.requested_time <= last]

    def _touched_file_groups(self, commits: list[Instant]) -> set[tuple[str, str]]:
        out: set[tuple[str, str]] = set()
        for i in commits:
            md = self.timeline.read_commit_metadata(i)
            if md is None:
                continue
            for p, stats in md.partition_to_write_stats.items():
                for st in stats:
                    if st.file_id:
                        out.add((p, st.file_id))
        return out


def column_list(columns: Sequence[str] | None) -> list[str] | None:
    """``columns`` as a list of names (None: all columns).

    Raises:
        ConfigError: ``columns`` is a single string (``columns="id"`` would otherwise be read
            as the columns 'i' and 'd') or holds something other than strings.
    """
    if columns is None:
        return None
    if isinstance(columns, str):
        raise ConfigError(
            f"columns must be a list of column names, not the string {columns!r}: "
            f"pass columns=[{columns!r}]"
        )
    out = list(columns)
    bad = [c for c in out if not isinstance(c, str)]
    if bad:
        raise ConfigError(f"columns must be column names (strings); got {bad!r}")
    return out


def _key_field_is_key(cfg: TableConfig) -> bool:
    """Whether ``_hoodie_record_key`` is the one record key field's value, as is.

    Only Hudi's own simple key generator is trusted to write it so (a user's key generator
    class may build keys any way); the field's type is checked on the rows read.
    """
    return (
        cfg.recorded_key_generator is KeyGeneratorType.SIMPLE
        and cfg.populate_meta_fields
        and not cfg.complex_record_key
        and len(cfg.record_key_fields) == 1
    )


def read(
    path: str,
    options: Mapping[str, Any] | None = None,
    columns: Sequence[str] | None = None,
    filters: Sequence[Filter] | None = None,
    *,
    storage_options: Mapping[str, Any] | None = None,
) -> pa.Table:
    """Read the Hudi table at ``path`` (see :meth:`ReadableTable.read`; ``storage_options``:
    object store credentials and settings, see :mod:`hudi_ds.object_store`)."""
    return ReadableTable(path, options, storage_options=storage_options).read(
        options, columns, filters
    )
