"""Options of the table services (compaction, cleaning, archival): :class:`ServiceConfig`,
its compaction strategies and the cross-option checks."""

from __future__ import annotations

from hudi_ds.config.base import (
    ConfigProperty,
    Options,
    one_of,
    parse_bool,
    parse_non_negative,
    parse_positive,
)
from hudi_ds.config.clustering import ClusteringConfig
from hudi_ds.errors import ConfigError

COMPACTION_STRATEGIES = (
    "LogFileSizeBasedCompactionStrategy",
    "LogFileNumBasedCompactionStrategy",
    "BoundedIOCompactionStrategy",
    "UnBoundedCompactionStrategy",
)
_STRATEGY_PACKAGE = "org.apache.hudi.table.action.compact.strategy."


def parse_compaction_strategy(value: str) -> str:
    """A compaction strategy: Hudi's class name (short or fully qualified)."""
    short = str(value).strip().rsplit(".", 1)[-1]
    for s in COMPACTION_STRATEGIES:
        if s.lower() == short.lower():
            return s
    raise ValueError(f"expected one of {', '.join(COMPACTION_STRATEGIES)}")


parse_compaction_strategy.choices = COMPACTION_STRATEGIES  # type: ignore[attr-defined]


def compaction_strategy_class(short: str) -> str:
    """The fully qualified Java class name of a strategy (as Hudi records it in plans)."""
    return _STRATEGY_PACKAGE + short


class ServiceConfig:
    """Options of the table services: compaction, cleaning and archival (Hudi's keys and defaults).

    Writers accept them (inline services run after each commit); ``hudi-py`` and
    :mod:`hudi_ds.services` take them too.
    """

    # -- compaction ---------------------------------------------------------------------------
    COMPACT_INLINE = ConfigProperty(
        "hoodie.compact.inline",
        False,
        parse_bool,
        "MOR: schedule and run a compaction after a commit once the trigger is met.",
    )
    COMPACT_ASYNC = ConfigProperty(
        # Hudi's DataSourceWriteOptions.ASYNC_COMPACT_ENABLE (default true): its streaming sink
        # schedules a compaction in the commit once the trigger is met and executes it in a
        # driver thread (HoodieStreamingSink's async compaction service); a batch datasource
        # write has no such service (HoodieSparkSqlWriter.isAsyncCompactionEnabled needs the
        # sink's asyncCompactionTriggerFn) and, with this true, does not compact; false turns
        # inline compaction on for MOR unless hoodie.compact.inline is given
        # (DataSourceUtils.createHoodieConfig). Flink's compaction.async.enabled: default true,
        # every compaction.delta_commits = 5. See services.compaction.run_inline_compaction.
        "hoodie.datasource.compaction.async.enable",
        True,
        parse_bool,
        "MOR: schedule a compaction when the trigger is met (every "
        "`hoodie.compact.inline.max.delta.commits` delta commits by default) and run it off the "
        "write path. The Spark streaming sink runs it in a background process on the driver; "
        "Spark batch writes have no such process and, as Hudi's, do not compact (`false` there: "
        "inline compaction, as Hudi's data source, unless `hoodie.compact.inline` is given); "
        "the embedded API (`hudi_ds.write`, `HudiTable`) runs it right after the commit "
        "(`false` there, with `hoodie.compact.inline` not set: no compaction).",
    )
    COMPACT_SCHEDULE_INLINE = ConfigProperty(
        "hoodie.compact.schedule.inline",
        False,
        parse_bool,
        "MOR: only schedule compactions after commits (run them with `hudi-py compact run`); "
        "Spark writes schedule only while no compaction is pending, as Hudi.",
    )
    COMPACT_MAX_DELTA_COMMITS = ConfigProperty(
        "hoodie.compact.inline.max.delta.commits",
        5,
        parse_positive,
        "Delta commits since the last compaction that trigger the next one.",
    )
    COMPACT_MAX_DELTA_SECONDS = ConfigProperty(
        "hoodie.compact.inline.max.delta.seconds",
        3600,
        parse_positive,
        "Seconds since the last compaction that trigger the next one (TIME_ELAPSED...).",
    )
    COMPACT_TRIGGER_STRATEGY = ConfigProperty(
        "hoodie.compact.inline.trigger.strategy",
        "NUM_COMMITS",
        one_of("NUM_COMMITS", "TIME_ELAPSED", "NUM_AND_TIME", "NUM_OR_TIME"),
        "When inline compaction triggers: by delta commits, elapsed time, or both/either.",
    )
    COMPACTION_STRATEGY = ConfigProperty(
        "hoodie.compaction.strategy",
        "LogFileSizeBasedCompactionStrategy",
        parse_compaction_strategy,
        "Which file slices a compaction takes (ordered by log size or count, bounded by IO).",
    )
    COMPACTION_TARGET_IO_MB = ConfigProperty(
        "hoodie.compaction.target.io",
        500 * 1024,
        parse_positive,
        "IO budget of one compaction in MB (read base + logs, write base) for bounded strategies.",
    )
    COMPACTION_LOG_SIZE_THRESHOLD = ConfigProperty(
        "hoodie.compaction.logfile.size.threshold",
        0,
        parse_non_negative,
        "LogFileSizeBased: only slices whose log files total at least this many bytes.",
    )
    COMPACTION_LOG_NUM_THRESHOLD = ConfigProperty(
        "hoodie.compaction.logfile.num.threshold",
        0,
        parse_non_negative,
        "LogFileNumBased: only slices with at least this many log files.",
    )
    COMPACTION_PRESERVE_META = ConfigProperty(
        "hoodie.compaction.preserve.commit.metadata",
        True,
        parse_bool,
        "Keep each record's _hoodie_commit_time/_hoodie_commit_seqno (only true is supported).",
    )
    # -- cleaning -----------------------------------------------------------------------------
    CLEAN_AUTOMATIC = ConfigProperty(
        "hoodie.clean.automatic",
        True,
        parse_bool,
        "Clean after every commit (when the policy finds something to delete).",
    )
    CLEAN_ASYNC = ConfigProperty(
        "hoodie.clean.async",
        False,
        parse_bool,
        "Accepted for compatibility; cleaning runs synchronously after the commit.",
        no_effect="cleaning runs synchronously after each commit (hoodie.clean.automatic)",
    )
    CLEANER_POLICY = ConfigProperty(
        "hoodie.cleaner.policy",
        "KEEP_LATEST_COMMITS",
        one_of("KEEP_LATEST_COMMITS", "KEEP_LATEST_FILE_VERSIONS", "KEEP_LATEST_BY_HOURS"),
        "Which old file slices the cleaner deletes.",
        aliases=("hoodie.clean.policy",),
    )
    CLEANER_COMMITS_RETAINED = ConfigProperty(
        "hoodie.cleaner.commits.retained",
        10,
        parse_positive,
        "KEEP_LATEST_COMMITS: time travel and incremental reads stay possible over this many "
        "latest commits.",
        aliases=("hoodie.clean.commits.retained",),
    )
    CLEANER_FILE_VERSIONS_RETAINED = ConfigProperty(
        "hoodie.cleaner.fileversions.retained",
        3,
        parse_positive,
        "KEEP_LATEST_FILE_VERSIONS: file slices kept per file group.",
        aliases=("hoodie.clean.fileversions.retained",),
    )
    CLEANER_HOURS_RETAINED = ConfigProperty(
        "hoodie.cleaner.hours.retained",
        24,
        parse_positive,
        "KEEP_LATEST_BY_HOURS: keep what commits of the last N hours need.",
        aliases=("hoodie.clean.hours.retained",),
    )
    CLEAN_MAX_COMMITS = ConfigProperty(
        "hoodie.clean.max.commits",
        1,
        parse_positive,
        "Commits since the last clean before automatic cleaning is attempted again.",
    )
    # -- archival -----------------------------------------------------------------------------
    ARCHIVE_AUTOMATIC = ConfigProperty(
        "hoodie.archive.automatic",
        True,
        parse_bool,
        "Archive old instants after every commit (beyond hoodie.keep.max.commits).",
    )
    KEEP_MIN_COMMITS = ConfigProperty(
        "hoodie.keep.min.commits",
        20,
        parse_positive,
        "Archival keeps at least this many commits on the active timeline.",
    )
    KEEP_MAX_COMMITS = ConfigProperty(
        "hoodie.keep.max.commits",
        30,
        parse_positive,
        "Archival starts when the active timeline holds more commits than this.",
    )
    METADATA_KEEP_MIN_COMMITS = ConfigProperty(
        "hoodie.metadata.keep.min.commits",
        20,
        parse_positive,
        "Archival of the metadata table's timeline keeps at least this many commits (or "
        "hoodie.keep.min.commits when larger; Java HoodieMetadataWriteUtils).",
    )
    METADATA_KEEP_MAX_COMMITS = ConfigProperty(
        "hoodie.metadata.keep.max.commits",
        30,
        parse_positive,
        "Archival of the metadata table's timeline starts beyond this many commits (or "
        "hoodie.keep.max.commits when larger).",
    )
    ARCHIVE_BEYOND_SAVEPOINT = ConfigProperty(
        "hoodie.archive.beyond.savepoint",
        False,
        parse_bool,
        "Archive commits after the first savepoint (the savepointed commits stay active).",
    )
    TIMELINE_COMPACTION_BATCH_SIZE = ConfigProperty(
        "hoodie.timeline.compaction.batch.size",
        10,
        parse_positive,
        "LSM timeline (table versions 8 and 9): this many files of one layer of the archived "
        "timeline are merged into one file of the next layer.",
    )
    ARCHIVAL_BATCH = ConfigProperty(
        "hoodie.commits.archival.batch",
        10,
        parse_positive,
        "Accepted for compatibility (archived instants are written in one block per run).",
        no_effect="archival writes the instants it archives in one block per run",
    )


def validate_service_options(options: Options) -> None:
    """Cross-option checks of :class:`ServiceConfig` (as Hudi's write config does them).

    Raises:
        ConfigError: ``hoodie.keep.min.commits`` is not greater than
            ``hoodie.cleaner.commits.retained``, or ``hoodie.keep.max.commits`` is not greater
            than ``hoodie.keep.min.commits``.
    """
    lo = options.get(ServiceConfig.KEEP_MIN_COMMITS)
    hi = options.get(ServiceConfig.KEEP_MAX_COMMITS)
    retained = options.get(ServiceConfig.CLEANER_COMMITS_RETAINED)
    if hi <= lo:
        raise ConfigError(
            f"option 'hoodie.keep.max.commits'={hi} must be greater than "
            f"'hoodie.keep.min.commits'={lo}"
        )
    if lo <= retained:
        raise ConfigError(
            f"option 'hoodie.keep.min.commits'={lo} must be greater than "
            f"'hoodie.cleaner.commits.retained'={retained}; otherwise archival could drop "
            "instants that incremental reads inside the retained window need"
        )
    if not options.get(ClusteringConfig.PRESERVE_META):
        raise ConfigError(
            "option 'hoodie.clustering.preserve.commit.metadata'=false is not supported "
            "(clustering keeps each record's commit time and sequence number)"
        )
    if not options.get(ServiceConfig.COMPACTION_PRESERVE_META):
        raise ConfigError(
            "option 'hoodie.compaction.preserve.commit.metadata'=false is not supported "
            "(compaction keeps each record's commit time and sequence number)"
        )
