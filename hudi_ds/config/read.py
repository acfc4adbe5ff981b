"""Options of a read: :class:`ReadConfig`."""

from __future__ import annotations

from hudi_ds.config.base import (
    ConfigProperty,
    one_of,
    parse_bool,
    parse_list,
    parse_str,
)


class ReadConfig:
    """Options of a read (``hudi_ds.read`` and ``spark.read.format("hudi_py")``)."""

    METADATA_ENABLE: ConfigProperty[bool | None] = ConfigProperty(
        "hoodie.metadata.enable",
        None,
        parse_bool,
        "List files through the table's metadata table when it is present and in step with "
        "the data timeline (default); false lists the storage.",
    )
    ENABLE_DATA_SKIPPING = ConfigProperty(
        "hoodie.enable.data.skipping",
        True,
        parse_bool,
        "Skip file slices whose column statistics (the metadata table's column_stats "
        "partition) rule out the read's filters, and partitions whose partition_stats do "
        "(latest snapshot reads); used only while the metadata table is in step with the "
        "data timeline. false reads every file the other pruning keeps.",
    )
    QUERY_TYPE = ConfigProperty(
        "hoodie.datasource.query.type",
        "snapshot",
        one_of("snapshot", "read_optimized", "incremental", upper=False),
        "snapshot: latest merged rows; read_optimized: base files only; incremental: changes.",
    )
    BEGIN_INSTANT = ConfigProperty(
        "hoodie.datasource.read.begin.instanttime",
        None,
        parse_str,
        "Incremental queries: changes after this instant (exclusive); the forms of "
        "as.of.instant are accepted.",
    )
    END_INSTANT = ConfigProperty(
        "hoodie.datasource.read.end.instanttime",
        None,
        parse_str,
        "Incremental queries: changes up to this instant (inclusive); default the latest.",
    )
    AS_OF_INSTANT = ConfigProperty(
        "as.of.instant",
        None,
        parse_str,
        "Time travel: read the table as of this instant (inclusive): an instant time "
        "(yyyyMMddHHmmss[SSS]), a datetime, epoch seconds/millis (10/13 digits), yyyy-MM-dd, "
        "yyyy-MM-dd HH:mm:ss[.SSS] or ISO-8601 (2024-03-15T14:25:30Z); times without an "
        "offset are in the table's timeline zone (hoodie.table.timeline.timezone).",
        aliases=("hoodie.datasource.read.as.of.instant",),
    )
    INCREMENTAL_EMIT_DELETES = ConfigProperty(
        "hoodie.datasource.read.incr.emit.deletes",
        False,
        parse_bool,
        "Incremental queries: also return deleted keys (with _hoodie_is_deleted=true).",
    )
    STREAMING_START_OFFSET = ConfigProperty(
        "hoodie.datasource.streaming.startOffset",
        "earliest",
        parse_str,
        "Streaming reads without a checkpoint: start at 'earliest' (the whole table), 'latest' "
        "(only later commits) or after a given instant time.",
    )
    IGNORE_MISSING_FILES = ConfigProperty(
        "spark.sql.files.ignoreMissingFiles",
        False,
        parse_bool,
        "Spark's option: skip (warn, report in the read stats) committed files that are gone "
        "instead of failing the read. Off by default: a missing committed file is an error.",
        aliases=("ignoreMissingFiles",),
    )
    IGNORE_CORRUPT_FILES = ConfigProperty(
        "spark.sql.files.ignoreCorruptFiles",
        False,
        parse_bool,
        "Spark's option: skip (warn, report) committed files shorter than their commit recorded, "
        "unreadable base files and corrupt log blocks inside committed bytes instead of failing.",
        aliases=("ignoreCorruptFiles",),
    )
    MERGE_CUSTOM_CLASSES = ConfigProperty(
        "hoodie.write.record.merge.custom.implementation.classes",
        None,
        parse_list,
        "CUSTOM merge mode: importable Python class paths of RecordMerger implementations.",
    )
