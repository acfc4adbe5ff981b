"""The base of typed options: :class:`ConfigProperty`, :class:`Options`, the value parsers and
the errors and warnings of unknown keys and keys without effect (:data:`IGNORED_HUDI_KEYS`).

Every option a user passes is checked on the driver, before anything is written: an unknown
key (``hoodie.*`` or not), or a value its parser refuses, raises
:class:`~hudi_ds.errors.ConfigError` that names the key and the value (and the valid values, or
the closest known key: "did you mean"). Hudi keys accepted without effect
(:data:`IGNORED_HUDI_KEYS`, or a property with ``no_effect``) warn with
:class:`~hudi_ds.errors.IgnoredOptionWarning`, saying why.
"""

from __future__ import annotations

import difflib
import math
import os
import sys
import warnings
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import date, datetime
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


def parse_size_or_zero(value: str) -> int:
    """A byte size as :func:`parse_size`, or 0 (nothing)."""
    if str(value).strip() in ("0", "0b", "0B"):
        return 0
    return parse_size(value)


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
    def of(cls, options: Mapping[str, Any] | Options | None) -> Options:
        """Options from a mapping of key to value (str, bool, int, float, a list of them, or a
        ``datetime``/``date``, kept as ISO-8601 text).

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

    def validate(self, *scopes: type) -> None:
        """Refuse unknown keys and values that do not parse; warn about keys without effect.

        Args:
            scopes: the namespace classes whose properties are known (the entries of the
                core validate against all of them: :func:`hudi_ds.config.validated`).

        Raises:
            ConfigError: a key no scope knows (with the closest known key), or a value its
                property's parser refuses (naming key and value).

        Warns:
            IgnoredOptionWarning: a key of :data:`IGNORED_HUDI_KEYS` or a property with
                ``no_effect`` is given (the message says why it has no effect).
        """
        props = [p for s in scopes for p in properties_of(s)]
        known = {k.lower(): p for p in props for k in p.all_keys()}
        for key, value in self.raw.items():
            if key in known:
                prop = known[key]
                prop.parse(value)
                if prop.no_effect:
                    warn_no_effect(key, value, prop.no_effect)
            elif key in _IGNORED_LOWER:
                warn_no_effect(key, value, _IGNORED_LOWER[key])
            else:
                names = [k for p in props for k in p.all_keys()]
                raise unknown_option(key, value, names)


_TIME_TRAVEL = (
    "Hudi's time travel option is as.of.instant: an instant time, a timestamp (yyyy-MM-dd "
    "HH:mm:ss, ISO-8601, a datetime) or epoch milliseconds"
)
#: options of other table formats' readers that users type for a Hudi table: lower-cased key
#: -> (the Hudi key to use, why). Delta Lake's Spark reader takes versionAsOf/timestampAsOf.
FOREIGN_KEYS: dict[str, tuple[str, str]] = {
    "versionasof": ("as.of.instant", "Hudi tables have no version numbers; " + _TIME_TRAVEL),
    "timestampasof": ("as.of.instant", _TIME_TRAVEL),
}


def unknown_option(key: str, value: Any, known: Iterable[str]) -> ConfigError:
    """The error of an unknown option ``key``, suggesting the closest of ``known`` (or the Hudi
    key of another format's option, :data:`FOREIGN_KEYS`)."""
    by_lower = {k.lower(): k for k in known}
    foreign = FOREIGN_KEYS.get(key.lower())
    close = difflib.get_close_matches(key.lower(), list(by_lower), n=1, cutoff=0.6)
    if foreign is not None:
        hint = f"; did you mean '{foreign[0]}'? ({foreign[1]})"
    else:
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


# the folder holding the hudi_ds package (this module is hudi_ds/config/base.py)
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


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
    if isinstance(v, (datetime, date)):
        # instant options take timestamps (as.of.instant): ISO-8601 keeps an aware one's offset
        return v.isoformat()
    raise ConfigError(
        f"invalid value {_short(v)} for option '{key}': expected a string, number or boolean "
        f"(or a list of them, or a datetime), not {type(v).__name__}"
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
