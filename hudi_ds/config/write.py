"""Options of a write: :class:`WriteConfig`."""

from __future__ import annotations

from hudi_ds.config.base import (
    ConfigProperty,
    one_of,
    parse_bool,
    parse_int,
    parse_list,
    parse_non_negative_float,
    parse_positive_float,
    parse_positive_int,
    parse_probability,
    parse_size,
    parse_size_or_zero,
    parse_str,
    parse_table_version,
    parse_utc_only,
)
from hudi_ds.config.read import ReadConfig


class WriteConfig:
    """Options of a write (``hudi_ds.write``, ``df.write.format("hudi_py")``, the stream sink)."""

    TABLE_NAME = ConfigProperty(
        "hoodie.table.name", None, parse_str, "Table name (required when creating a table)."
    )
    DATABASE_NAME = ConfigProperty(
        "hoodie.database.name", None, parse_str, "Database name stored in hoodie.properties."
    )
    RECORD_KEY_FIELDS: ConfigProperty[list[str]] = ConfigProperty(
        "hoodie.datasource.write.recordkey.field",
        None,
        parse_list,
        "Record key field(s), comma separated.",
        aliases=("hoodie.table.recordkey.fields",),
    )
    PARTITION_FIELDS: ConfigProperty[list[str]] = ConfigProperty(
        "hoodie.datasource.write.partitionpath.field",
        list[str](),
        parse_list,
        "Partition field(s), comma separated; empty for a non-partitioned table. The CUSTOM "
        "key generator takes each with its type: field1:SIMPLE,field2:TIMESTAMP.",
        aliases=("hoodie.table.partition.fields",),
    )
    HIVE_STYLE = ConfigProperty(
        "hoodie.datasource.write.hive_style_partitioning",
        False,
        parse_bool,
        "Partition folders named field=value.",
    )
    URL_ENCODE = ConfigProperty(
        "hoodie.datasource.write.partitionpath.urlencode",
        False,
        parse_bool,
        "URL-encode partition values (otherwise unsafe values are refused).",
    )
    PRECOMBINE_FIELD = ConfigProperty(
        "hoodie.datasource.write.precombine.field",
        None,
        parse_str,
        "The ordering field: with EVENT_TIME_ORDERING the greatest value wins.",
        aliases=("hoodie.table.precombine.field", "hoodie.table.ordering.fields"),
    )
    TABLE_TYPE = ConfigProperty(
        "hoodie.datasource.write.table.type",
        "MERGE_ON_READ",
        one_of("MERGE_ON_READ", "COPY_ON_WRITE"),
        "MERGE_ON_READ (log files, merged on read) or COPY_ON_WRITE (base files rewritten).",
        aliases=("hoodie.table.type",),
    )
    OPERATION = ConfigProperty(
        "hoodie.datasource.write.operation",
        "upsert",
        one_of(
            "upsert",
            "insert",
            "bulk_insert",
            "delete",
            "insert_overwrite",
            "insert_overwrite_table",
            "delete_partition",
            upper=False,
        ),
        "The write operation.",
    )
    PARTITIONS_TO_DELETE: ConfigProperty[list[str]] = ConfigProperty(
        "hoodie.datasource.write.partitions.to.delete",
        None,
        parse_list,
        "Partitions a delete_partition operation drops (comma separated partition paths); "
        "empty: the partitions of the rows written.",
    )
    METADATA_ENABLE: ConfigProperty[bool | None] = ConfigProperty(
        "hoodie.metadata.enable",
        None,
        parse_bool,
        "The metadata table (its files partition): true creates it when the table has none; "
        "false deletes it as Apache Hudi does (.hoodie/metadata removed, "
        "hoodie.table.metadata.partitions cleared); unset keeps what the table has, kept in "
        "step on every action.",
    )
    METADATA_RECORD_INDEX_ENABLE: ConfigProperty[bool | None] = ConfigProperty(
        "hoodie.metadata.record.index.enable",
        None,
        parse_bool,
        "The metadata table's record-level index (record_index partition, global): true builds "
        "one from the table's record keys when the table has none (with the metadata table, "
        "rebuilt); false removes it; unset keeps what the table has. A table's record_index "
        "is kept in step on every commit, delta commit, replace commit, compaction and clean "
        "(a rollback or restore the metadata table mirrors with tombstones removes it).",
        aliases=("hoodie.metadata.global.record.level.index.enable",),
    )
    METADATA_RECORD_INDEX_MIN_FILE_GROUPS = ConfigProperty(
        "hoodie.metadata.global.record.level.index.min.filegroup.count",
        10,
        parse_positive_int,
        "File groups a new record_index gets at least (Java's estimate: the keys times the "
        "growth factor over what a file group of the maximum size holds, at 48 bytes a key).",
        aliases=("hoodie.metadata.record.index.min.filegroup.count",),
    )
    METADATA_RECORD_INDEX_MAX_FILE_GROUPS = ConfigProperty(
        "hoodie.metadata.global.record.level.index.max.filegroup.count",
        10000,
        parse_positive_int,
        "File groups a new record_index gets at most (equal to the minimum: exactly that many).",
        aliases=("hoodie.metadata.record.index.max.filegroup.count",),
    )
    METADATA_RECORD_INDEX_MAX_FILE_GROUP_SIZE = ConfigProperty(
        "hoodie.metadata.record.index.max.filegroup.size",
        1024 * 1024 * 1024,
        parse_positive_int,
        "Bytes a record_index file group should grow to at most, for the file group count of a "
        "new record_index.",
    )
    METADATA_RECORD_INDEX_GROWTH_FACTOR = ConfigProperty(
        "hoodie.metadata.record.index.growth.factor",
        2.0,
        parse_positive_float,
        "How many times its keys a new record_index is sized for (its file group count).",
    )
    METADATA_RECORD_INDEX_CACHE_MAX_BYTES = ConfigProperty(
        "hoodie.metadata.record.index.cache.max.bytes",
        1 << 30,
        parse_size_or_zero,
        "Bytes of decoded record_index files (sorted keys and locations) a process keeps "
        "between its lookups (RECORD_INDEX / RECORD_LEVEL_INDEX tagging and the record "
        "index's upkeep): a writer doing many batches then reads only the metadata table's "
        "files written since its last batch. Process-wide (the last write that sets it "
        "wins); least recently used files go first; 0 keeps nothing (each lookup inflates "
        "the HFile blocks its keys fall in). Sizes as 512m, 2g.",
    )
    METADATA_RECORD_LEVEL_INDEX_ENABLE: ConfigProperty[bool | None] = ConfigProperty(
        "hoodie.metadata.record.level.index.enable",
        None,
        parse_bool,
        "Hudi 1.1's partitioned record-level index (record_index partition, a record per "
        "(partition path, record key), file groups per data partition; tables of version 8 "
        "and 9): true builds one when the table has no record index; false removes it; unset "
        "keeps what the table has. Kept in step as the global one is; looked up by "
        "hoodie.index.type=RECORD_LEVEL_INDEX.",
    )
    METADATA_RECORD_LEVEL_INDEX_MIN_FILE_GROUPS = ConfigProperty(
        "hoodie.metadata.record.level.index.min.filegroup.count",
        1,
        parse_positive_int,
        "File groups per data partition of a new partitioned record index at least, and the "
        "count a data partition new to it gets.",
        aliases=("hoodie.metadata.partitioned.record.index.min.filegroup.count",),
    )
    METADATA_RECORD_LEVEL_INDEX_MAX_FILE_GROUPS = ConfigProperty(
        "hoodie.metadata.record.level.index.max.filegroup.count",
        10,
        parse_positive_int,
        "File groups per data partition of a new partitioned record index at most.",
        aliases=("hoodie.metadata.partitioned.record.index.max.filegroup.count",),
    )
    METADATA_SECONDARY_INDEX_ENABLE = ConfigProperty(
        "hoodie.metadata.index.secondary.enable",
        True,
        parse_bool,
        "The metadata table's secondary indexes (secondary_index_<name> partitions, defined in "
        ".hoodie/.index_defs by Apache Hudi's CREATE INDEX): true keeps each one whose "
        "definition hudi_ds evaluates (identity of one top-level string, integer, boolean, "
        "date or timestamp column) in step on every action; false removes every secondary "
        "index, as Apache Hudi does.",
    )
    METADATA_COMPACT_MAX_DELTA_COMMITS = ConfigProperty(
        "hoodie.metadata.compact.max.delta.commits",
        10,
        parse_positive_int,
        "Delta commits of the metadata table after which it is compacted (a new base HFile "
        "holding the merged file listing).",
    )
    METADATA_COLUMN_STATS_ENABLE: ConfigProperty[bool | None] = ConfigProperty(
        "hoodie.metadata.index.column.stats.enable",
        None,
        parse_bool,
        "The metadata table's column_stats partition (per file and column: min, max, null "
        "and value counts, sizes), kept in step on every action when the table has it; false "
        "removes it (and partition_stats, which needs it); true builds it for a table of "
        "version 8 or 9 that lacks it (from its committed files); unset keeps what the table "
        "has, and a new metadata table of a version 8 or 9 table gets it (with partition_stats "
        "when partitioned), as Hudi 1.x's Spark writer; version 6 tables get none.",
    )
    METADATA_COLUMN_STATS_COLUMNS: ConfigProperty[list[str]] = ConfigProperty(
        "hoodie.metadata.index.column.stats.column.list",
        None,
        parse_list,
        "The columns column stats cover (comma separated; the record key, partition path and "
        "commit time meta columns are always added); empty: the first "
        "hoodie.metadata.index.column.stats.max.columns.to.index columns of a supported type. "
        "A table whose index definition (.hoodie/.index_defs) lists them keeps its list.",
    )
    METADATA_COLUMN_STATS_MAX_COLUMNS = ConfigProperty(
        "hoodie.metadata.index.column.stats.max.columns.to.index",
        32,
        parse_positive_int,
        "How many top-level columns column stats cover when no column list is given.",
    )
    METADATA_COLUMN_STATS_FILE_GROUPS = ConfigProperty(
        "hoodie.metadata.index.column.stats.file.group.count",
        2,
        parse_positive_int,
        "File groups of a column_stats partition hudi_ds builds.",
    )
    METADATA_PARTITION_STATS_FILE_GROUPS = ConfigProperty(
        "hoodie.metadata.index.partition.stats.file.group.count",
        1,
        parse_positive_int,
        "File groups of a partition_stats partition hudi_ds builds.",
    )
    METADATA_PARTITION_STATS_ENABLE: ConfigProperty[bool | None] = ConfigProperty(
        "hoodie.metadata.index.partition.stats.enable",
        None,
        parse_bool,
        "The metadata table's partition_stats partition (column stats aggregated per data "
        "partition), kept in step when the table has it; false removes it (and keeps it out "
        "of a new metadata table); true builds it (with column stats) for a partitioned table "
        "of version 8 or 9; unset keeps what the table has, and follows column stats in a new "
        "one (Hudi 1.x deprecates this key for the column stats one).",
    )
    METADATA_BLOOM_FILTER_ENABLE: ConfigProperty[bool | None] = ConfigProperty(
        "hoodie.metadata.index.bloom.filter.enable",
        None,
        parse_bool,
        "The metadata table's bloom_filters partition (per base file: the bloom filter of its "
        "record keys, as its footer holds it), kept in step on every action when the table "
        "has it; true builds it (with the metadata table on version 6, from the committed "
        "files on 8 and 9); false removes it; unset keeps what the table has (Hudi's default "
        "is false: a new table gets none).",
    )
    METADATA_BLOOM_FILTER_FILE_GROUPS = ConfigProperty(
        "hoodie.metadata.index.bloom.filter.file.group.count",
        4,
        parse_positive_int,
        "File groups of a bloom_filters partition hudi_ds builds.",
    )
    METADATA_BLOOM_FILTER_COLUMNS: ConfigProperty[list[str]] = ConfigProperty(
        "hoodie.metadata.index.bloom.filter.column.list",
        None,
        parse_list,
        "Accepted for Hudi's sake: like Hudi's writer, hudi_ds puts in bloom_filters the base "
        "files' record-key filters only; other columns are ignored with a warning.",
    )
    POPULATE_META_FIELDS = ConfigProperty(
        "hoodie.populate.meta.fields",
        True,
        parse_bool,
        "A new table's files carry the values of the _hoodie_* meta columns (default); false "
        "leaves them null (only _hoodie_file_name is set in base files) and record keys are "
        "built from the record key fields (Hudi's virtual keys). An existing table keeps its "
        "own (a contradicting value is an error).",
    )
    WRITE_TABLE_VERSION = ConfigProperty(
        "hoodie.write.table.version",
        6,
        parse_table_version,
        "Table version of a new table: 6 (Hudi 0.14/0.15), 8 (1.0) or 9 (1.1). An existing "
        "table keeps its version, except tables of versions 3-5, upgraded to 6 on their "
        "first write, and tables of a smaller version than the one asked (8 or 9), upgraded "
        "to it first as Hudi 1.x does (a version below 6 through 6); never downgraded.",
    )
    AUTO_UPGRADE = ConfigProperty(
        "hoodie.write.auto.upgrade",
        True,
        parse_bool,
        "Upgrade a table of version 3, 4 or 5 (Hudi 0.10-0.13) to version 6 on its first "
        "write, as Hudi 0.14/0.15 does, and a table of version 6 or 8 to the greater version "
        "hoodie.write.table.version asks, as Hudi 1.x does; false refuses to write a table "
        "below 6 (hudi_ds does not write those versions), and writes a table of version 6+ at "
        "its own version when hoodie.write.table.version asks a greater one (as Hudi 1.x).",
    )
    SKIP_DEFAULT_PARTITION_VALIDATION = ConfigProperty(
        "hoodie.skip.default.partition.validation",
        False,
        parse_bool,
        "Upgrading a version 3 or 4 table: do not refuse a partition named 'default' (Hudi "
        "0.12 renamed the default partition to __HIVE_DEFAULT_PARTITION__).",
    )
    INDEX_TYPE = ConfigProperty(
        "hoodie.index.type",
        "BUCKET",
        one_of(
            "BUCKET",
            "SIMPLE",
            "GLOBAL_SIMPLE",
            "BLOOM",
            "GLOBAL_BLOOM",
            "RECORD_INDEX",
            "GLOBAL_RECORD_LEVEL_INDEX",
            "RECORD_LEVEL_INDEX",
            "PARTITIONED_RECORD_INDEX",
        ),
        "Record index: BUCKET (hash of the key to a fixed file group; the default of tables "
        "hudi_ds creates), SIMPLE / BLOOM (look keys up in the partition's base files; Hudi's "
        "Spark default is SIMPLE), their GLOBAL_ variants (keys unique across partitions), or "
        "RECORD_INDEX (alias GLOBAL_RECORD_LEVEL_INDEX: keys unique across partitions, looked "
        "up in the metadata table's record_index, only the HFile blocks they fall in; needs "
        "hoodie.metadata.record.index.enable=true on a new table, or a table that has one), "
        "RECORD_LEVEL_INDEX (alias PARTITIONED_RECORD_INDEX: keys unique per partition, "
        "looked up by (partition, key) in Hudi 1.1's partitioned record index; needs "
        "hoodie.metadata.record.level.index.enable=true on a new table, or a table that has "
        "one). An existing table keeps its index.",
    )
    KEYGEN_CLASS = ConfigProperty(
        "hoodie.datasource.write.keygenerator.class",
        None,
        parse_str,
        "Key generator class: must be the existing table's (its Avro twin is the same); a new "
        "table takes Simple-, Complex-, Nonpartitioned-, TimestampBased- or CustomKeyGenerator.",
    )
    KEYGEN_TYPE = ConfigProperty(
        "hoodie.datasource.write.keygenerator.type",
        None,
        one_of("SIMPLE", "COMPLEX", "NON_PARTITION", "TIMESTAMP", "CUSTOM", "GLOBAL_DELETE"),
        "Key generator type (instead of the class): as hoodie.datasource.write.keygenerator.class.",
    )
    # TimestampBasedKeyGenerator (Java ``TimestampKeyGeneratorConfig``; the older
    # ``hoodie.deltastreamer.keygen.timebased.*`` names are aliases); an existing table's
    # ``hoodie.properties`` entries of the same keys are used when the option is not given
    TIMESTAMP_TYPE = ConfigProperty(
        "hoodie.keygen.timebased.timestamp.type",
        None,
        one_of(
            "UNIX_TIMESTAMP",
            "DATE_STRING",
            "MIXED",
            "EPOCHMILLISECONDS",
            "EPOCHMICROSECONDS",
            "SCALAR",
        ),
        "TimestampBasedKeyGenerator: how the partition field holds time (UNIX_TIMESTAMP "
        "seconds, EPOCHMILLISECONDS, EPOCHMICROSECONDS, SCALAR in the scalar time unit, "
        "DATE_STRING and MIXED parsed with the input date formats).",
        aliases=("hoodie.deltastreamer.keygen.timebased.timestamp.type",),
    )
    TIMESTAMP_SCALAR_UNIT = ConfigProperty(
        "hoodie.keygen.timebased.timestamp.scalar.time.unit",
        "SECONDS",
        one_of(
            "NANOSECONDS", "MICROSECONDS", "MILLISECONDS", "SECONDS", "MINUTES", "HOURS", "DAYS"
        ),
        "TimestampBasedKeyGenerator: the unit of a SCALAR partition value.",
        aliases=("hoodie.deltastreamer.keygen.timebased.timestamp.scalar.time.unit",),
    )
    TIMESTAMP_INPUT_FORMAT = ConfigProperty(
        "hoodie.keygen.timebased.input.dateformat",
        "",
        parse_str,
        "TimestampBasedKeyGenerator: Joda pattern(s) of DATE_STRING values (several separated "
        "by the list delimiter).",
        aliases=("hoodie.deltastreamer.keygen.timebased.input.dateformat",),
    )
    TIMESTAMP_INPUT_FORMAT_DELIMITER = ConfigProperty(
        "hoodie.keygen.timebased.input.dateformat.list.delimiter.regex",
        ",",
        parse_str,
        "TimestampBasedKeyGenerator: the regex separating several input date formats.",
        aliases=("hoodie.deltastreamer.keygen.timebased.input.dateformat.list.delimiter.regex",),
    )
    TIMESTAMP_OUTPUT_FORMAT = ConfigProperty(
        "hoodie.keygen.timebased.output.dateformat",
        "",
        parse_str,
        "TimestampBasedKeyGenerator: Joda pattern of the partition path.",
        aliases=("hoodie.deltastreamer.keygen.timebased.output.dateformat",),
    )
    TIMESTAMP_TIMEZONE = ConfigProperty(
        "hoodie.keygen.timebased.timezone",
        "",
        parse_str,
        "TimestampBasedKeyGenerator: the time zone of both input and output (wins over the "
        "input / output time zones).",
        aliases=("hoodie.deltastreamer.keygen.timebased.timezone",),
    )
    TIMESTAMP_INPUT_TIMEZONE = ConfigProperty(
        "hoodie.keygen.timebased.input.timezone",
        "",
        parse_str,
        "TimestampBasedKeyGenerator: the time zone of DATE_STRING values without an offset.",
        aliases=("hoodie.deltastreamer.keygen.timebased.input.timezone",),
    )
    TIMESTAMP_OUTPUT_TIMEZONE = ConfigProperty(
        "hoodie.keygen.timebased.output.timezone",
        "",
        parse_str,
        "TimestampBasedKeyGenerator: the time zone of the partition path.",
        aliases=("hoodie.deltastreamer.keygen.timebased.output.timezone",),
    )
    SIMPLE_UPDATE_PARTITION_PATH = ConfigProperty(
        "hoodie.simple.index.update.partition.path",
        True,
        parse_bool,
        "GLOBAL_SIMPLE: a key arriving with another partition moves there (deleted in the old "
        "one); false updates it in place in its old partition.",
    )
    RECORD_INDEX_UPDATE_PARTITION_PATH = ConfigProperty(
        "hoodie.record.index.update.partition.path",
        False,
        parse_bool,
        "RECORD_INDEX: a key arriving with another partition moves there (deleted in the old "
        "one); false (Java's default) updates it in place in its old partition.",
    )
    BLOOM_UPDATE_PARTITION_PATH = ConfigProperty(
        "hoodie.bloom.index.update.partition.path",
        True,
        parse_bool,
        "GLOBAL_BLOOM: as hoodie.simple.index.update.partition.path.",
    )
    BLOOM_USE_METADATA = ConfigProperty(
        "hoodie.bloom.index.use.metadata",
        False,
        parse_bool,
        "BLOOM / GLOBAL_BLOOM: take the base files' bloom filters from the metadata table's "
        "bloom_filters partition (and, with range pruning, their key ranges from column_stats) "
        "instead of opening each file's footer; only files whose filter may hold a key are "
        "opened, for their keys. Without those partitions in step with the timeline the "
        "footers are read (with a warning).",
    )
    BLOOM_PRUNE_BY_RANGES = ConfigProperty(
        "hoodie.bloom.index.prune.by.ranges",
        True,
        parse_bool,
        "BLOOM: skip base files whose min/max record key range excludes the key.",
    )
    SMALL_FILE_LIMIT = ConfigProperty(
        "hoodie.parquet.small.file.limit",
        104857600,
        parse_int,
        "Base files below this size (bytes) receive inserts before new file groups open "
        "(<= 0 turns small-file handling off). Not used by the BUCKET index.",
    )
    MAX_FILE_SIZE = ConfigProperty(
        "hoodie.parquet.max.file.size",
        125829120,
        parse_positive_int,
        "Target size (bytes) of a base file: inserts fill file groups up to it.",
    )
    RECORD_SIZE_ESTIMATE = ConfigProperty(
        "hoodie.copyonwrite.record.size.estimate",
        1024,
        parse_positive_int,
        "Bytes per record assumed until a large enough commit gives a measured average.",
    )
    RECORD_SIZE_ESTIMATION_THRESHOLD = ConfigProperty(
        "hoodie.record.size.estimation.threshold",
        1.0,
        parse_non_negative_float,
        "A commit gives the average record size once it wrote more than this fraction of "
        "hoodie.parquet.small.file.limit bytes.",
    )
    INSERT_SPLIT_SIZE = ConfigProperty(
        "hoodie.copyonwrite.insert.split.size",
        500000,
        parse_positive_int,
        "Records per new file group when hoodie.copyonwrite.insert.auto.split is false.",
    )
    INSERT_AUTO_SPLIT = ConfigProperty(
        "hoodie.copyonwrite.insert.auto.split",
        True,
        parse_bool,
        "Size new file groups from max.file.size / average record size.",
    )
    SMALL_FILE_GROUP_CANDIDATES = ConfigProperty(
        "hoodie.merge.small.file.group.candidates.limit",
        1,
        parse_int,
        "MERGE_ON_READ: small file groups (without log files) per partition that receive inserts.",
    )
    BUCKET_ENGINE = ConfigProperty(
        "hoodie.index.bucket.engine",
        "SIMPLE",
        one_of("SIMPLE", "CONSISTENT_HASHING"),
        "BUCKET index: SIMPLE (a fixed number of buckets per partition) or CONSISTENT_HASHING "
        "(MERGE_ON_READ only: a hash ring per partition, kept in Java's hashing metadata "
        "files, that starts with hoodie.bucket.index.num.buckets nodes). Fixed when the table "
        "is created.",
    )
    NUM_BUCKETS = ConfigProperty(
        "hoodie.bucket.index.num.buckets",
        4,
        parse_int,
        "Buckets (file groups) per partition; fixed for the life of the table.",
    )
    HASH_FIELD: ConfigProperty[list[str]] = ConfigProperty(
        "hoodie.bucket.index.hash.field",
        list[str](),
        parse_list,
        "Fields hashed to the bucket (a subset of the record key fields; default all).",
    )
    BUCKET_PARTITION_EXPRESSIONS = ConfigProperty(
        "hoodie.bucket.index.partition.expressions",
        None,
        parse_str,
        "Partition-level bucket index (Hudi 1.1, RFC-89), SIMPLE bucket engine: "
        "'regex1,buckets1;regex2,buckets2' gives the partitions whose path matches regex1 "
        "(searched anywhere in the path) buckets1 buckets, and so on, the first matching rule "
        "winning; other partitions get hoodie.bucket.index.num.buckets. Recorded with a new "
        "table in .hoodie/.bucket_index/partition_bucket_index_meta/configs/; an existing "
        "table's rules change only by a rescale (hudi-py bucket-rescale).",
    )
    BUCKET_PARTITION_RULE_TYPE = ConfigProperty(
        "hoodie.bucket.index.partition.rule.type",
        "regex",
        one_of("regex", upper=False),
        "How hoodie.bucket.index.partition.expressions are read: regex (the only rule Hudi has).",
    )
    MERGE_MODE = ConfigProperty(
        "hoodie.write.record.merge.mode",
        None,
        one_of("EVENT_TIME_ORDERING", "COMMIT_TIME_ORDERING", "CUSTOM"),
        "EVENT_TIME_ORDERING (default with an ordering field), COMMIT_TIME_ORDERING or CUSTOM.",
        aliases=("hoodie.record.merge.mode",),
    )
    MERGE_STRATEGY_ID = ConfigProperty(
        "hoodie.write.record.merge.strategy.id",
        None,
        parse_str,
        "Merge strategy UUID (CUSTOM: picks the merger class with this strategy_id).",
        aliases=("hoodie.record.merge.strategy.id",),
    )
    MERGE_CUSTOM_CLASSES = ReadConfig.MERGE_CUSTOM_CLASSES
    PAYLOAD_CLASS = ConfigProperty(
        "hoodie.datasource.write.payload.class",
        None,
        parse_str,
        "Hudi payload class name (Java name; mapped onto a built-in merge behaviour).",
        aliases=("hoodie.compaction.payload.class", "payload.class"),
    )
    PARTIAL_UPDATES = ConfigProperty(
        "hoodie.write.partial.updates",
        False,
        parse_bool,
        "hudi_ds: input rows may omit table columns, which keep their stored values (MOR "
        "writes IS_PARTIAL log blocks: read by hudi_ds and Hudi >= 1.0, not by Hudi 0.x).",
    )
    LOG_BLOCK_FORMAT = ConfigProperty(
        "hoodie.logfile.data.block.format",
        "parquet",
        one_of("parquet", "avro", upper=False),
        "Format of log data blocks.",
    )
    LOG_BLOCK_MAX_SIZE = ConfigProperty(
        "hoodie.logfile.data.block.max.size",
        256 << 20,
        parse_size,
        "Largest log data block (bytes of buffered Arrow data).",
    )
    BASE_FILE_FORMAT = ConfigProperty(
        "hoodie.table.base.file.format",
        "PARQUET",
        one_of("PARQUET", "LANCE"),
        "A new table's base file format: PARQUET, or LANCE (Hudi 1.2's Lance files, table "
        "version 9, with the optional pylance: pip install 'pylance>=0.20'). An existing table "
        "keeps its own (a contradicting value is an error).",
        aliases=("hoodie.base.file.format",),
    )
    PARQUET_CODEC = ConfigProperty(
        "hoodie.parquet.compression.codec",
        "snappy",
        one_of("snappy", "gzip", "zstd", "lz4", "none", "uncompressed", upper=False),
        "Compression of base files and parquet log blocks.",
    )
    TASK_MAX_SIZE_MB = ConfigProperty(
        "write.task.max.size",
        256.0,
        parse_positive_float,
        "Memory budget of one writer task in MB (Flink's key): buffered rows beyond it flush.",
    )
    BATCH_SIZE_MB = ConfigProperty(
        "write.batch.size",
        64.0,
        parse_positive_float,
        "Buffer size in MB of one file group's handle before it flushes a block (Flink's key).",
    )
    WRITE_TASKS: ConfigProperty[int | None] = ConfigProperty(
        "write.tasks",
        None,
        parse_positive_int,
        "Threads that encode and write the file groups of one writer task (Flink's key, the "
        "parallelism of its write tasks); default: the machine's cores. Parquet encoding and "
        "Arrow kernels release the GIL, so the file groups' blocks are written in parallel.",
    )
    SPILLABLE_MAP_PATH = ConfigProperty(
        "hoodie.memory.spillable.map.path",
        "",
        parse_str,
        "Local folder where a COW merge spills rows that do not fit its memory budget "
        "(default: the system temp folder, TMPDIR or /tmp as in Hudi).",
    )
    ALLOW_EMPTY_COMMIT = ConfigProperty(
        "hoodie.allow.empty.commit",
        True,
        parse_bool,
        "A write whose input has no rows still commits an (empty) instant, as Apache Hudi "
        "does by default; false writes nothing at all for such an input (no commit, and no "
        "table created).",
    )
    STREAMING_CHECKPOINT_ID = ConfigProperty(
        "hoodie.datasource.write.streaming.checkpoint.identifier",
        "default_single_writer",
        parse_str,
        "Writer identifier under which a streaming sink records its batch ids.",
    )
    SET_NULL_FOR_MISSING = ConfigProperty(
        "hoodie.write.set.null.for.missing.columns",
        False,
        parse_bool,
        "Fill table columns missing from the input with nulls instead of failing.",
    )
    PARQUET_BLOOM_FILTER_ENABLED = ConfigProperty(
        "hoodie.parquet.bloom.filter.enabled",
        True,
        parse_bool,
        "Write the bloom filter of every record key (and the min/max key) into each base "
        "file's footer, as Hudi does by default. false saves its hashing (30 hashes a key at "
        "the default fpp: about as much CPU as the Parquet encoding of a compaction) where "
        "nothing reads it; the footers are still written while the index type is BLOOM or "
        "GLOBAL_BLOOM (as Java) or the metadata table has or is asked for its bloom_filters "
        "partition (safer than Java, which writes files that partition then has no record "
        "of). A BLOOM lookup reads the record keys of a file without a filter.",
    )
    BLOOM_FILTER_TYPE = ConfigProperty(
        "hoodie.bloom.index.filter.type",
        "DYNAMIC_V0",
        one_of("DYNAMIC_V0", "SIMPLE"),
        "Bloom filter written into each base file's footer: DYNAMIC_V0 (grows by rows of "
        "num_entries keys up to the dynamic max entries) or SIMPLE (one fixed row).",
    )
    BLOOM_NUM_ENTRIES = ConfigProperty(
        "hoodie.index.bloom.num_entries",
        60000,
        parse_positive_int,
        "Keys one bloom filter row is sized for (with the fpp: its bits and hash count).",
    )
    BLOOM_FPP = ConfigProperty(
        "hoodie.index.bloom.fpp",
        0.000000001,
        parse_probability,
        "False positive probability a bloom filter row is sized for (0 < fpp < 1).",
    )
    BLOOM_DYNAMIC_MAX_ENTRIES = ConfigProperty(
        "hoodie.bloom.index.filter.dynamic.max.entries",
        100000,
        parse_positive_int,
        "DYNAMIC_V0: keys after which the bloom filter stops adding rows.",
    )
    TIMELINE_TIMEZONE = ConfigProperty(
        "hoodie.table.timeline.timezone",
        "UTC",
        parse_utc_only,
        "Time zone of instant times: hudi_ds writes them in UTC (and records UTC in a new "
        "table's hoodie.properties); LOCAL, Apache Hudi's default, is refused rather than "
        "ignored.",
    )
