"""Options of the clustering service: :class:`ClusteringConfig` (Java ``HoodieClusteringConfig``,
its keys and defaults), the layout optimisation strategies and the update strategies."""

from __future__ import annotations

import enum

from hudi_ds.config.base import (
    ConfigProperty,
    one_of,
    parse_bool,
    parse_list,
    parse_non_negative,
    parse_positive,
    parse_positive_float,
    parse_str,
)

MB = 1 << 20


class LayoutOptimizeStrategy(enum.Enum):
    """``hoodie.layout.optimize.strategy``: how the sort columns order the rows of a clustering
    group (Java ``HoodieClusteringConfig.LayoutOptimizationStrategy``)."""

    LINEAR = "linear"
    ZORDER = "z-order"
    HILBERT = "hilbert"


class PartitionFilterMode(enum.Enum):
    """``hoodie.clustering.plan.partition.filter.mode`` (Java
    ``ClusteringPlanPartitionFilterMode``)."""

    NONE = "NONE"
    RECENT_DAYS = "RECENT_DAYS"
    SELECTED_PARTITIONS = "SELECTED_PARTITIONS"


class UpdateStrategy(enum.Enum):
    """``hoodie.clustering.updates.strategy``: what a write does to a file group under a pending
    clustering plan (Java ``UpdateStrategy`` implementations)."""

    #: the write fails, naming the file group (Java's default)
    REJECT = "org.apache.hudi.client.clustering.update.strategy.SparkRejectUpdateStrategy"
    #: the write goes ahead; the clustering conflicts at its commit (optimistic concurrency)
    ALLOW = "org.apache.hudi.client.clustering.update.strategy.SparkAllowUpdateStrategy"


def _parse_layout(value: str) -> str:
    v = str(value).strip().lower().replace("_", "-")
    aliases = {"zorder": "z-order", "z-order": "z-order", "linear": "linear", "hilbert": "hilbert"}
    if v not in aliases:
        raise ValueError("expected one of linear, z-order, hilbert")
    return aliases[v]


_parse_layout.choices = ("linear", "z-order", "hilbert")  # type: ignore[attr-defined]


def _parse_update_strategy(value: str) -> str:
    short = str(value).strip().rsplit(".", 1)[-1].lower()
    for s in UpdateStrategy:
        if s.value.rsplit(".", 1)[-1].lower() == short:
            return s.value
    raise ValueError("expected SparkRejectUpdateStrategy or SparkAllowUpdateStrategy")


_parse_update_strategy.choices = tuple(  # type: ignore[attr-defined]
    s.value.rsplit(".", 1)[-1] for s in UpdateStrategy
)

#: the plan and execution strategies hudi_ds implements (Java class names)
PLAN_STRATEGY_CLASS = (
    "org.apache.hudi.client.clustering.plan.strategy.SparkSizeBasedClusteringPlanStrategy"
)
EXECUTION_STRATEGY_CLASS = (
    "org.apache.hudi.client.clustering.run.strategy.SparkSortAndSizeExecutionStrategy"
)


def _only(cls_name: str) -> object:
    short = cls_name.rsplit(".", 1)[-1]

    def parse(value: str) -> str:
        if str(value).strip().rsplit(".", 1)[-1] != short:
            raise ValueError(f"only {short} is implemented")
        return cls_name

    parse.choices = (short,)  # type: ignore[attr-defined]
    return parse


class ClusteringConfig:
    """Options of clustering (Hudi's keys and defaults, ``HoodieClusteringConfig``).

    Writers accept them (inline clustering after commits); ``hudi-py clustering`` and
    :mod:`hudi_ds.services.clustering` take them too.
    """

    INLINE = ConfigProperty(
        "hoodie.clustering.inline",
        False,
        parse_bool,
        "Schedule and run a clustering after a commit once "
        "`hoodie.clustering.inline.max.commits` commits completed since the last one.",
    )
    INLINE_MAX_COMMITS = ConfigProperty(
        "hoodie.clustering.inline.max.commits",
        4,
        parse_positive,
        "Commits after the last clustering that make inline clustering due.",
    )
    ASYNC = ConfigProperty(
        "hoodie.clustering.async.enabled",
        False,
        parse_bool,
        "Schedule a clustering after a commit once due and run it off the write path: the "
        "Spark streaming sink's background process runs it (beside its compactions); the "
        "embedded API runs it right after the commit.",
    )
    SCHEDULE_INLINE = ConfigProperty(
        "hoodie.clustering.schedule.inline",
        False,
        parse_bool,
        "Only schedule clusterings after commits (run them with `hudi-py clustering run`).",
    )
    PLAN_STRATEGY = ConfigProperty(
        "hoodie.clustering.plan.strategy.class",
        PLAN_STRATEGY_CLASS,
        _only(PLAN_STRATEGY_CLASS),  # type: ignore[arg-type]
        "The plan strategy (only Hudi's size-based strategy is implemented).",
    )
    EXECUTION_STRATEGY = ConfigProperty(
        "hoodie.clustering.execution.strategy.class",
        EXECUTION_STRATEGY_CLASS,
        _only(EXECUTION_STRATEGY_CLASS),  # type: ignore[arg-type]
        "The execution strategy (only Hudi's sort-and-size strategy is implemented).",
    )
    SMALL_FILE_LIMIT = ConfigProperty(
        "hoodie.clustering.plan.strategy.small.file.limit",
        300 * MB,
        parse_non_negative,
        "Bytes: file slices whose base file is smaller are clustered.",
    )
    MAX_BYTES_PER_GROUP = ConfigProperty(
        "hoodie.clustering.plan.strategy.max.bytes.per.group",
        2048 * MB,
        parse_positive,
        "Bytes of base files one clustering group reads at most.",
    )
    MAX_NUM_GROUPS = ConfigProperty(
        "hoodie.clustering.plan.strategy.max.num.groups",
        30,
        parse_positive,
        "Clustering groups one plan holds at most.",
    )
    TARGET_FILE_MAX_BYTES = ConfigProperty(
        "hoodie.clustering.plan.strategy.target.file.max.bytes",
        1024 * MB,
        parse_positive,
        "Bytes: the size of the files a clustering writes (a group writes "
        "ceil(group size / this) files).",
    )
    SINGLE_GROUP = ConfigProperty(
        "hoodie.clustering.plan.strategy.single.group.clustering.enabled",
        True,
        parse_bool,
        "Plan groups of a single file slice too (always, with sort columns).",
    )
    SORT_COLUMNS = ConfigProperty(
        "hoodie.clustering.plan.strategy.sort.columns",
        None,
        parse_list,
        "Comma-separated columns the clustered rows are sorted by.",
    )
    LAYOUT_STRATEGY = ConfigProperty(
        "hoodie.layout.optimize.strategy",
        "linear",
        _parse_layout,
        "How the sort columns order the rows: `linear` (lexicographic), `z-order`, `hilbert`.",
    )
    PARTITION_FILTER_MODE = ConfigProperty(
        "hoodie.clustering.plan.partition.filter.mode",
        "NONE",
        one_of(*(m.value for m in PartitionFilterMode)),
        "Which partitions are planned: all (`NONE`), the latest "
        "(`RECENT_DAYS`: `...daybased.lookback.partitions` after skipping "
        "`...daybased.skipfromlatest.partitions`, by partition path order) or "
        "`SELECTED_PARTITIONS` (`hoodie.clustering.plan.strategy.partition.selected`).",
    )
    LOOKBACK_PARTITIONS = ConfigProperty(
        "hoodie.clustering.plan.strategy.daybased.lookback.partitions",
        2,
        parse_positive,
        "RECENT_DAYS: how many of the latest partitions are planned.",
    )
    SKIP_LATEST_PARTITIONS = ConfigProperty(
        "hoodie.clustering.plan.strategy.daybased.skipfromlatest.partitions",
        0,
        parse_non_negative,
        "RECENT_DAYS: how many of the latest partitions are skipped first.",
    )
    PARTITION_SELECTED = ConfigProperty(
        "hoodie.clustering.plan.strategy.partition.selected",
        None,
        parse_list,
        "Comma-separated partition paths to plan (any filter mode).",
    )
    PARTITION_REGEX = ConfigProperty(
        "hoodie.clustering.plan.strategy.partition.regex.pattern",
        None,
        parse_str,
        "Only partitions whose path matches this regular expression are planned.",
    )
    UPDATES_STRATEGY = ConfigProperty(
        "hoodie.clustering.updates.strategy",
        UpdateStrategy.REJECT.value,
        _parse_update_strategy,
        "A write touching a file group under a pending clustering: `SparkRejectUpdateStrategy` "
        "fails it naming the file group (Java's default); `SparkAllowUpdateStrategy` lets it "
        "write, and the clustering then conflicts at its commit.",
    )
    BUCKET_SPLIT_THRESHOLD = ConfigProperty(
        "hoodie.bucket.index.split.threshold",
        2.0,
        parse_positive_float,
        "Consistent-hashing bucket index: a clustering splits a node whose file group (base "
        "and log files) is larger than this times hoodie.parquet.max.file.size.",
    )
    BUCKET_MAX_NUM_BUCKETS = ConfigProperty(
        "hoodie.bucket.index.max.num.buckets",
        None,
        parse_positive,
        "Consistent-hashing bucket index: splits stop at this many nodes per partition (unset: "
        "no bound but the hash space).",
    )
    BUCKET_MERGE_THRESHOLD = ConfigProperty(
        "hoodie.bucket.index.merge.threshold",
        0.2,
        parse_positive_float,
        "Consistent-hashing bucket index: a clustering merges runs of neighbouring nodes whose "
        "file groups (base and log files) are each no larger than this times "
        "hoodie.parquet.max.file.size.",
    )
    BUCKET_MIN_NUM_BUCKETS = ConfigProperty(
        "hoodie.bucket.index.min.num.buckets",
        None,
        parse_positive,
        "Consistent-hashing bucket index: merges stop at this many nodes per partition (unset, "
        "or above hoodie.bucket.index.num.buckets: the initial node count, as Java).",
    )
    PRESERVE_META = ConfigProperty(
        "hoodie.clustering.preserve.commit.metadata",
        True,
        parse_bool,
        "Keep each record's _hoodie_commit_time/_hoodie_commit_seqno (only true is supported).",
    )
