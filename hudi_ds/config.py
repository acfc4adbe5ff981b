"""Typed configuration: Hudi's own ``hoodie.*`` keys, their defaults, aliases and parsers.

Every option a user passes is checked here, on the driver, before anything is written: an unknown
key (``hoodie.*`` or not), or a value its parser refuses, raises
:class:`~hudi_ds.errors.ConfigError` that names the key and the value (and the valid values, or
the closest known key: "did you mean"). Hudi keys accepted without effect
(:data:`IGNORED_HUDI_KEYS`, or a property with ``no_effect``) warn with
:class:`~hudi_ds.errors.IgnoredOptionWarning`, saying why.

Each scope (table, write, read) is a namespace class of :class:`ConfigProperty` entries.
"""

from __future__ import annotations

import difflib
import math
import os
import sys
import warnings
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from hudi_ds.errors import ConfigError, IgnoredOptionWarning

T = TypeVar("T")


def parse_bool(value: str) -> bool:
    v = str(value).strip().lower()
    if v in ("true", "1", "yes"):
        return True
    if v in ("false", "0", "no"):
        return False
    raise ValueError("expected true or false")


def parse_int(value: str) -> int:
    return int(str(value).strip())


def parse_str(value: str) -> str:
    return str(value)


def parse_list(value: Any) -> list[str]:
    """A comma separated list (empty items dropped); a Python list is accepted as is."""
    if isinstance(value, str):
        return [v.strip() for v in value.split(",") if v.strip()]
    return [str(v).strip() for v in value if str(v).strip()]


def parse_size(value: str) -> int:
    """A byte size: ``1048576``, ``64mb``, ``1g``, ``512k``."""
    v = str(value).strip().lower().removesuffix("b")
    mult = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}.get(v[-1:] if v else "", 1)
    if mult != 1:
        v = v[:-1]
    n = int(float(v) * mult)
    if n <= 0:
        raise ValueError("must be positive")
    return n


def parse_positive_float(value: str) -> float:
    """A finite number > 0 (``write.task.max.size``, ``write.batch.size`` in MB)."""
    n = float(str(value).strip())
    if not math.isfinite(n) or n <= 0:
        raise ValueError("must be a finite number > 0")
    return n


def parse_positive_int(value: str) -> int:
    """An integer > 0 that fits a Java int."""
    n = int(str(value).strip())
    if n <= 0 or n >= 2**31:
        raise ValueError("must be an integer > 0 (a Java int)")
    return n


def parse_probability(value: str) -> float:
    """A probability strictly between 0 and 1 (``hoodie.index.bloom.fpp``)."""
    n = float(str(value).strip())
    if not 0 < n < 1:
        raise ValueError("must be a number > 0 and < 1")
    return n


def parse_non_negative_float(value: str) -> float:
    """A finite number >= 0."""
    n = float(str(value).strip())
    if not math.isfinite(n) or n < 0:
        raise ValueError("must be a finite number >= 0")
    return n


def parse_table_version(value: str) -> int:
    """A table version hudi_ds writes: 6 (Hudi 0.14/0.15), 8 (1.0) or 9 (1.1)."""
    n = int(str(value).strip())
    if n not in (6, 8, 9):
        raise ValueError("expected 6, 8 or 9")
    return n


def parse_utc_only(value: str) -> str:
    """``UTC``: the only time zone hudi_ds writes instant times in."""
    if str(value).strip().upper() != "UTC":
        raise ValueError(
            "hudi_ds writes instant times in UTC only (hoodie.table.timeline.timezone=UTC); "
            "LOCAL would make its instant times disagree with the writer's zone"
        )
    return "UTC"


parse_utc_only.choices = ("UTC",)  # type: ignore[attr-defined]


def one_of(*choices: str, upper: bool = True) -> Callable[[str], str]:
    """A parser accepting one of ``choices`` (case-insensitive)."""

    def parse(value: str) -> str:
        v = str(value).strip()
        norm = v.upper() if upper else v.lower()
        for c in choices:
            if (c.upper() if upper else c.lower()) == norm:
                return c
        raise ValueError(f"expected one of {', '.join(choices)}")

    parse.choices = choices  # type: ignore[attr-defined]
    return parse


@dataclass(frozen=True)
class ConfigProperty(Generic[T]):
    """One option: its ``hoodie.*`` key, default, deprecated aliases, parser and doc."""

    key: str
    default: T | None
    parser: Callable[[Any], T] = parse_str  # type: ignore[assignment]
    doc: str = ""
    aliases: tuple[str, ...] = ()
    #: accepted for compatibility but without effect: why (a warning when the key is given)
    no_effect: str = ""

    def all_keys(self) -> tuple[str, ...]:
        return (self.key, *self.aliases)

    def parse(self, value: Any) -> T:
        try:
            return self.parser(value)
        except (ValueError, TypeError, OverflowError) as e:
            raise ConfigError(f"invalid value {value!r} for option '{self.key}': {e}") from None


@dataclass
class Options:
    """A validated bag of options (keys as given by Hudi; case-insensitive lookup)."""

    raw: dict[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, options: Mapping[str, Any] | None) -> Options:
        """Options from a mapping of key to value (str, bool, int, float or a list of them).

        Raises:
            ConfigError: ``options`` is not a mapping, a key is not a string, or a value is not
                one of those types (names the key and the value).
        """
        if options is None:
            return cls({})
        if isinstance(options, Options):
            return cls(dict(options.raw))
        if not isinstance(options, Mapping):
            raise ConfigError(
                f"options must be a mapping of option key to value (a dict), not "
                f"{type(options).__name__}: {_short(options)}"
            )
        out: dict[str, str] = {}
        for k, v in options.items():
            if not isinstance(k, str):
                raise ConfigError(f"option key {k!r} (value {_short(v)}) is not a string")
            if v is None:
                continue
            out[k.strip().lower()] = v if isinstance(v, str) else _to_str(k, v)
        return cls(out)

    def get(self, prop: ConfigProperty[T]) -> T:
        """The parsed value of ``prop`` (first of key and aliases present) or its default."""
        for k in prop.all_keys():
            if k.lower() in self.raw:
                return prop.parse(self.raw[k.lower()])
        return prop.default  # type: ignore[return-value]

    def is_set(self, prop: ConfigProperty[Any]) -> bool:
        return any(k.lower() in self.raw for k in prop.all_keys())

    def get_str(self, key: str, default: str | None = None) -> str | None:
        return self.raw.get(key.lower(), default)

    def with_defaults(self, defaults: Mapping[str, str]) -> Options:
        merged = {k.lower(): v for k, v in defaults.items()}
        merged.update(self.raw)
        return Options(merged)

    def validate(
        self, *scopes: type, ignored: Iterable[str] = (), extra: Iterable[str] = ()
    ) -> None:
        """Refuse unknown keys and values that do not parse; warn about keys without effect.

        Args:
            scopes: the namespace classes whose properties are known.
            ignored: further keys read by their owners (not properties of a scope).
            extra: further known keys, only offered as "did you mean" suggestions.

        Raises:
            ConfigError: a key no scope knows (with the closest known key), or a value its
                property's parser refuses (naming key and value).

        Warns:
            IgnoredOptionWarning: a key of :data:`IGNORED_HUDI_KEYS` or a property with
                ``no_effect`` is given (the message says why it has no effect).
        """
        props = [p for s in scopes for p in properties_of(s)]
        known = {k.lower(): p for p in props for k in p.all_keys()}
        ignored_set = {k.lower() for k in ignored}
        for key, value in self.raw.items():
            if key in known:
                prop = known[key]
                prop.parse(value)
                if prop.no_effect:
                    warn_no_effect(key, value, prop.no_effect)
            elif key in ignored_set:
                continue
            elif key in _IGNORED_LOWER:
                warn_no_effect(key, value, _IGNORED_LOWER[key])
            else:
                names = [k for p in props for k in p.all_keys()]
                raise unknown_option(key, value, [*names, *ignored, *extra])


def unknown_option(key: str, value: Any, known: Iterable[str]) -> ConfigError:
    """The error of an unknown option ``key``, suggesting the closest of ``known``."""
    by_lower = {k.lower(): k for k in known}
    close = difflib.get_close_matches(key.lower(), list(by_lower), n=1, cutoff=0.6)
    hint = f"; did you mean '{by_lower[close[0]]}'?" if close else ""
    return ConfigError(
        f"unknown option '{key}' (value {_short(value)}){hint} (docs/options.md lists every option)"
    )


def warn_no_effect(key: str, value: Any, why: str) -> None:
    """Warn that option ``key`` is accepted without effect, and why."""
    warnings.warn(
        f"option '{key}'={_short(value)} has no effect in hudi_ds: {why}",
        IgnoredOptionWarning,
        stacklevel=_caller_level(),
    )


_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _caller_level() -> int:
    """The ``stacklevel`` of the first frame outside hudi_ds (the user's call)."""
    frame = sys._getframe(1)
    level = 1
    while frame is not None and frame.f_code.co_filename.startswith(
        os.path.join(_PACKAGE_DIR, "hudi_ds")
    ):
        frame = frame.f_back  # type: ignore[assignment]
        level += 1
    return level


def _short(v: Any) -> str:
    r = repr(v)
    return r if len(r) <= 80 else r[:77] + "..."


_SCALARS = (str, bool, int, float)


def _to_str(key: str, v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (list, tuple)) and all(isinstance(x, _SCALARS) for x in v):
        return ",".join(_to_str(key, x) for x in v)
    if isinstance(v, float) and not math.isfinite(v):
        raise ConfigError(f"invalid value {v!r} for option '{key}': not a finite number")
    if isinstance(v, _SCALARS):
        return str(v)
    raise ConfigError(
        f"invalid value {_short(v)} for option '{key}': expected a string, number or boolean "
        f"(or a list of them), not {type(v).__name__}"
    )


def properties_of(scope: type) -> list[ConfigProperty[Any]]:
    """Every ConfigProperty declared on a scope class."""
    return [v for v in vars(scope).values() if isinstance(v, ConfigProperty)]


_NO_SPARK_SHUFFLE = (
    "hudi_ds shuffles no records: the Spark data source writes the DataFrame's own partitions "
    "(repartition it, or use hudi_ds.spark.cluster_by_bucket), the embedded API uses "
    "write.tasks threads"
)
_NO_CATALOG_SYNC = (
    "hudi_ds runs no catalog sync (Hive, Glue, DataHub...): register the table in the catalog "
    "with Apache Hudi's sync tool or the catalog's own DDL"
)
_ALWAYS_READER = "hudi_ds always reads through its own file group reader (merging base and logs)"
_TIME_BOUND_BY_TIMELINE = (
    "hudi_ds does not wait out a clock skew: it dates new instants and completions after every "
    "instant time on the timeline, under the table lock (docs/concurrency.md)"
)

#: Apache Hudi keys a user may paste that have no effect here: key -> why. Accepted with an
#: :class:`~hudi_ds.errors.IgnoredOptionWarning` saying why (none of them changes what is
#: written, so ignoring them never writes other data than asked for).
IGNORED_HUDI_KEYS: dict[str, str] = {
    "hoodie.upsert.shuffle.parallelism": _NO_SPARK_SHUFFLE,
    "hoodie.insert.shuffle.parallelism": _NO_SPARK_SHUFFLE,
    "hoodie.bulkinsert.shuffle.parallelism": _NO_SPARK_SHUFFLE,
    "hoodie.delete.shuffle.parallelism": _NO_SPARK_SHUFFLE,
    "hoodie.embed.timeline.server": (
        "hudi_ds has no timeline server: every writer and reader lists the timeline itself"
    ),
    "hoodie.datasource.hive_sync.enable": _NO_CATALOG_SYNC,
    "hoodie.datasource.meta.sync.enable": _NO_CATALOG_SYNC,
    "hoodie.storage.layout.type": (
        "the file layout follows hoodie.index.type (BUCKET names file groups by bucket)"
    ),
    "hoodie.storage.layout.partitioner.class": (
        "the file layout follows hoodie.index.type (BUCKET names file groups by bucket)"
    ),
    "hoodie.datasource.write.table.name": (
        "it names the table for catalog sync, which hudi_ds does not run; the table's name is "
        "hoodie.table.name"
    ),
    "hoodie.write.markers.type": (
        "hudi_ds writes direct markers (no timeline server for TIMELINE_SERVER_BASED ones)"
    ),
    "hoodie.schema.on.read.enable": (
        "hudi_ds evolves schemas on write (added nullable columns, widened types); it keeps no "
        "internal schema history"
    ),
    "hoodie.datasource.read.use.new.parquet.file.format": _ALWAYS_READER,
    "hoodie.file.group.reader.enabled": _ALWAYS_READER,
    "hoodie.read.use.read_optimized.mode": (
        "use hoodie.datasource.query.type=read_optimized to read base files only"
    ),
    "hoodie.time.generator.type": _TIME_BOUND_BY_TIMELINE,
    "hoodie.time.generator.max_expected_clock_skew_ms": _TIME_BOUND_BY_TIMELINE,
}
_IGNORED_LOWER = {k.lower(): why for k, why in IGNORED_HUDI_KEYS.items()}


def all_scopes() -> tuple[type, ...]:
    """Every option scope of the core (the Spark data source adds its own)."""
    return (WriteConfig, ReadConfig, ServiceConfig, ConcurrencyConfig)


class ReadConfig:
    """Options of a read (``hudi_ds.read`` and ``spark.read.format("hudi_py")``)."""

    METADATA_ENABLE: ConfigProperty[bool | None] = ConfigProperty(
        "hoodie.metadata.enable",
        None,
        parse_bool,
        "List files through the table's metadata table when it is present and in step with "
        "the data timeline (default); false lists the storage.",
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
        "Incremental queries: changes after this instant (exclusive).",
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
        "Time travel: read the table as of this instant (inclusive).",
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
        "Partition field(s), comma separated; empty for a non-partitioned table.",
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
    METADATA_ENABLE: ConfigProperty[bool | None] = ConfigProperty(
        "hoodie.metadata.enable",
        None,
        parse_bool,
        "The metadata table (its files partition): true creates it when the table has none; "
        "false deletes it as Apache Hudi does (.hoodie/metadata removed, "
        "hoodie.table.metadata.partitions cleared); unset keeps what the table has, kept in "
        "step on every action.",
    )
    METADATA_COMPACT_MAX_DELTA_COMMITS = ConfigProperty(
        "hoodie.metadata.compact.max.delta.commits",
        10,
        parse_positive_int,
        "Delta commits of the metadata table after which it is compacted (a new base HFile "
        "holding the merged file listing).",
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
        "table keeps its version.",
    )
    INDEX_TYPE = ConfigProperty(
        "hoodie.index.type",
        "BUCKET",
        one_of("BUCKET", "SIMPLE", "GLOBAL_SIMPLE", "BLOOM", "GLOBAL_BLOOM"),
        "Record index: BUCKET (hash of the key to a fixed file group; the default of tables "
        "hudi_ds creates), SIMPLE / BLOOM (look keys up in the partition's base files; Hudi's "
        "Spark default is SIMPLE) or their GLOBAL_ variants (keys unique across partitions). "
        "An existing table keeps its index.",
    )
    KEYGEN_CLASS = ConfigProperty(
        "hoodie.datasource.write.keygenerator.class",
        None,
        parse_str,
        "Key generator class: must be the existing table's (its Avro twin is the same); a new "
        "table takes Simple-, Complex- or NonpartitionedKeyGenerator.",
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
        "DATE_STRING parsed with the input date format).",
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
    BLOOM_UPDATE_PARTITION_PATH = ConfigProperty(
        "hoodie.bloom.index.update.partition.path",
        True,
        parse_bool,
        "GLOBAL_BLOOM: as hoodie.simple.index.update.partition.path.",
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
        one_of("SIMPLE"),
        "BUCKET index: SIMPLE (a fixed number of buckets per partition). Hudi's "
        "CONSISTENT_HASHING engine (buckets that split and merge) is refused: its file groups "
        "are laid out by a hashing metadata file hudi_ds does not keep.",
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


def parse_non_negative(value: str) -> int:
    n = int(str(value).strip())
    if n < 0:
        raise ValueError("must be >= 0")
    return n


def parse_positive(value: str) -> int:
    n = int(str(value).strip())
    if n <= 0:
        raise ValueError("must be > 0")
    return n


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
    if not options.get(ServiceConfig.COMPACTION_PRESERVE_META):
        raise ConfigError(
            "option 'hoodie.compaction.preserve.commit.metadata'=false is not supported "
            "(compaction keeps each record's commit time and sequence number)"
        )


class ConcurrencyConfig:
    """Multi-writer options: optimistic concurrency control, locks, heartbeats."""

    MODE = ConfigProperty(
        "hoodie.write.concurrency.mode",
        "single_writer",
        one_of(
            "single_writer",
            "optimistic_concurrency_control",
            "non_blocking_concurrency_control",
            upper=False,
        ),
        "single_writer, or optimistic concurrency control for several writers.",
    )
    LOCK_PROVIDER = ConfigProperty(
        "hoodie.write.lock.provider",
        "org.apache.hudi.client.transaction.lock.FileSystemBasedLockProvider",
        parse_str,
        "Lock provider class: file-system based (the default), storage based (conditional "
        "writes on an object store), DynamoDB based (Hudi's hudi-aws lock, `pip install "
        "hudi_ds[aws]`) or in-process.",
    )
    LOCK_WAIT_MS = ConfigProperty(
        "hoodie.write.lock.wait_time_ms",
        100,
        parse_non_negative,
        "Wait between lock attempts (ms); for the DynamoDB-based lock, as in Hudi, the lease "
        "duration (default then 60000, heartbeat every third of it).",
    )
    LOCK_RETRIES = ConfigProperty(
        "hoodie.write.lock.num_retries", 600, parse_non_negative, "Lock attempts before giving up."
    )
    LOCK_EXPIRE_MIN = ConfigProperty(
        "hoodie.write.lock.filesystem.expire",
        10.0,
        parse_non_negative_float,
        "Minutes after which a file-system lock of a dead holder is broken.",
    )
    STORAGE_LOCK_VALIDITY_S = ConfigProperty(
        "hoodie.write.lock.storage.validity.timeout.secs",
        300,
        parse_positive,
        "Storage-based lock: seconds each lock lease is valid for (renewed by its holder's "
        "heartbeat); at least 10 and at least 10 x the heartbeat poll.",
    )
    STORAGE_LOCK_HEARTBEAT_S = ConfigProperty(
        "hoodie.write.lock.storage.heartbeat.poll.secs",
        30,
        parse_positive,
        "Storage-based lock: seconds between renewals of the lease by its holder.",
    )
    # Hudi's DynamoDbBasedLockConfig (hudi-aws), for the DynamoDB-based lock provider
    DYNAMODB_TABLE = ConfigProperty(
        "hoodie.write.lock.dynamodb.table",
        "hudi_locks",
        parse_str,
        "DynamoDB-based lock: the DynamoDB table holding the locks (created if absent, with "
        "the partition key attribute `key`).",
    )
    DYNAMODB_PARTITION_KEY = ConfigProperty(
        "hoodie.write.lock.dynamodb.partition_key",
        None,
        parse_str,
        "DynamoDB-based lock: the lock item's key, the same for every writer of the table; "
        "default: the table name (hoodie.table.name).",
    )
    DYNAMODB_REGION = ConfigProperty(
        "hoodie.write.lock.dynamodb.region",
        None,
        parse_str,
        "DynamoDB-based lock: AWS region of the lock table; default: the AWS_REGION "
        "environment variable, else us-east-1.",
    )
    DYNAMODB_ENDPOINT_URL = ConfigProperty(
        "hoodie.write.lock.dynamodb.endpoint_url",
        None,
        parse_str,
        "DynamoDB-based lock: endpoint of the DynamoDB service (https:// is prefixed when it "
        "has no scheme); default: the region's AWS endpoint.",
    )
    DYNAMODB_BILLING_MODE = ConfigProperty(
        "hoodie.write.lock.dynamodb.billing_mode",
        "PAY_PER_REQUEST",
        one_of("PAY_PER_REQUEST", "PROVISIONED"),
        "DynamoDB-based lock: billing mode of a lock table it creates.",
    )
    DYNAMODB_READ_CAPACITY = ConfigProperty(
        "hoodie.write.lock.dynamodb.read_capacity",
        20,
        parse_positive,
        "DynamoDB-based lock: read capacity units of a lock table it creates (PROVISIONED).",
    )
    DYNAMODB_WRITE_CAPACITY = ConfigProperty(
        "hoodie.write.lock.dynamodb.write_capacity",
        10,
        parse_positive,
        "DynamoDB-based lock: write capacity units of a lock table it creates (PROVISIONED).",
    )
    DYNAMODB_TABLE_CREATION_TIMEOUT_MS = ConfigProperty(
        "hoodie.write.lock.dynamodb.table_creation_timeout",
        120_000,
        parse_positive,
        "DynamoDB-based lock: milliseconds to wait for a lock table it creates to become active.",
    )
    AWS_ACCESS_KEY = ConfigProperty(
        "hoodie.aws.access.key",
        None,
        parse_str,
        "DynamoDB-based lock: AWS access key (with hoodie.aws.secret.key); default: the "
        "table's S3 storage options, else the AWS credential chain.",
    )
    AWS_SECRET_KEY = ConfigProperty(
        "hoodie.aws.secret.key", None, parse_str, "DynamoDB-based lock: AWS secret key."
    )
    AWS_SESSION_TOKEN = ConfigProperty(
        "hoodie.aws.session.token", None, parse_str, "DynamoDB-based lock: AWS session token."
    )
    HEARTBEAT_MS = ConfigProperty(
        "hoodie.client.heartbeat.interval_in_ms",
        60_000,
        parse_positive,
        "Writer heartbeat interval.",
    )
    HEARTBEAT_MISSES = ConfigProperty(
        "hoodie.client.heartbeat.tolerable.misses",
        2,
        parse_non_negative,
        "Missed heartbeats after which another writer rolls a pending write back.",
    )
    FAILED_WRITES_POLICY = ConfigProperty(
        "hoodie.cleaner.policy.failed.writes",
        None,
        one_of("EAGER", "LAZY", "NEVER"),
        "EAGER (single writer default): roll back pending writes at start; LAZY (multi-writer "
        "default): only those whose heartbeat expired.",
    )
