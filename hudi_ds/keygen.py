"""Key generators: record keys and partition paths of whole Arrow batches (vectorised).

Record key grammar (Hudi ``KeyGenUtils``)::

    SIMPLE / NON_PARTITION   <value>                       (the one key field as a string)
    COMPLEX                  <f1>:<v1>,<f2>:<v2>,...       null -> __null__, "" -> __empty__

Partition path: ``<v1>/<v2>`` or, hive style, ``<f1>=<v1>/<f2>=<v2>``; null or empty values
become ``__HIVE_DEFAULT_PARTITION__`` (Hudi's ``PartitionPathEncodeUtils.DEFAULT_PARTITION_PATH``).
"""

from __future__ import annotations

import enum
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from hudi_ds.config import Options, WriteConfig
from hudi_ds.errors import ConfigError, SchemaError, UnsupportedError
from hudi_ds.schema.meta import PARTITION_PATH_METADATA_FIELD, RECORD_KEY_METADATA_FIELD

NULL_PLACEHOLDER = "__null__"
EMPTY_PLACEHOLDER = "__empty__"
DEFAULT_PARTITION = "__HIVE_DEFAULT_PARTITION__"


class KeyGeneratorType(enum.StrEnum):
    """The key generators hudi_ds reproduces, by Hudi's ``KeyGeneratorType`` names (what
    ``hoodie.table.keygenerator.type`` records); each stands for its Java class and the class's
    Avro twin (``hoodie.table.keygenerator.class``)."""

    SIMPLE = "SIMPLE"
    COMPLEX = "COMPLEX"
    NON_PARTITION = "NON_PARTITION"
    TIMESTAMP = "TIMESTAMP"

    @property
    def java_class(self) -> str:
        """The short name of the Java class (``org.apache.hudi.keygen.<name>``)."""
        return _JAVA_CLASSES[self]

    @classmethod
    def named(cls, kind: str) -> KeyGeneratorType | None:
        """The type called ``kind`` (a ``KeyGeneratorType`` name, case-insensitive, without
        an ``_AVRO`` suffix), or None for one hudi_ds does not reproduce."""
        try:
            return cls(kind.strip().upper())
        except ValueError:
            return None

    @classmethod
    def of_class(cls, name: str) -> KeyGeneratorType | None:
        """The type of the Java class ``name`` (full or short name; the Avro twin alike), or
        None for one hudi_ds does not reproduce."""
        short = name.strip().rsplit(".", 1)[-1]
        return next(
            (t for t, java in _JAVA_CLASSES.items() if short in (java, _avro_twin(java))), None
        )

    @classmethod
    def java_names(cls) -> list[str]:
        """The Java classes reproduced, sorted (for messages)."""
        return sorted(_JAVA_CLASSES.values())


_JAVA_CLASSES = {
    KeyGeneratorType.SIMPLE: "SimpleKeyGenerator",
    KeyGeneratorType.COMPLEX: "ComplexKeyGenerator",
    KeyGeneratorType.NON_PARTITION: "NonpartitionedKeyGenerator",
    KeyGeneratorType.TIMESTAMP: "TimestampBasedKeyGenerator",
}


def _avro_twin(java_class: str) -> str:
    """``SimpleKeyGenerator`` -> ``SimpleAvroKeyGenerator`` (Hudi's Avro-record twins)."""
    return java_class.removesuffix("KeyGenerator") + "AvroKeyGenerator"


@dataclass(frozen=True)
class KeySpec:
    """How a table's records are keyed and partitioned (what its key generator makes).

    Attributes:
        record_key_fields: the record key columns.
        partition_fields: the partition path columns.
        hive_style: ``field=value`` partition folders.
        url_encode: partition values URL-encoded.
        complex_key: record keys are ``f1:v1,f2:v2`` (the complex key generator).
        timestamp: the TimestampBasedKeyGenerator's partition path (None: partition values as
            they are).
    """

    record_key_fields: tuple[str, ...]
    partition_fields: tuple[str, ...]
    hive_style: bool
    url_encode: bool
    complex_key: bool
    timestamp: TimestampSpec | None


def key_string(column: pa.Array | pa.ChunkedArray, name: str) -> pa.Array:
    """A key column's values as Java would print them (strings, ints, booleans, dates)."""
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    t = column.type
    if pa.types.is_dictionary(t):
        column = column.cast(t.value_type)
        t = column.type
    if pa.types.is_string(t):
        return column
    if pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return column.cast(pa.string())
    if pa.types.is_integer(t) or pa.types.is_date(t):
        return column.cast(pa.string())
    if pa.types.is_boolean(t):
        return pc.if_else(column, "true", "false")
    raise SchemaError(
        f"key column '{name}' has type {t}; supported key types are strings, integers, "
        "booleans and dates"
    )


def record_keys(table: pa.Table, fields: list[str], complex_key: bool) -> pa.Array:
    """Build ``_hoodie_record_key`` for every row of ``table``."""
    cols = [key_string(_column(table, f), f) for f in fields]
    if not complex_key:
        if len(cols) != 1:
            raise SchemaError(f"a simple key needs exactly one field, got {fields}")
        return cols[0]
    parts = []
    for f, c in zip(fields, cols, strict=True):
        v = pc.if_else(pc.equal(c, ""), EMPTY_PLACEHOLDER, c)
        v = pc.fill_null(v, NULL_PLACEHOLDER)
        parts.append(pc.binary_join_element_wise(f"{f}:", v, ""))
    if len(parts) == 1:
        return parts[0]
    return pc.binary_join_element_wise(*parts, ",")


def with_virtual_keys(
    table: pa.Table,
    fields: Sequence[str],
    complex_key: bool,
    partition_path: str | None = None,
) -> pa.Table:
    """``table`` (stored rows of a table without meta fields, whose ``_hoodie_record_key`` and
    ``_hoodie_partition_path`` are null) with those columns set: the record keys built from the
    key ``fields`` (Java's ``BaseKeyGenerator``, as ``HoodieMergeHandle`` keys a base file's
    records when ``populateMetaFields`` is off) and, when given, the file group's
    ``partition_path``. A column the table lacks is left out.

    Raises:
        SchemaError: a key field is missing or has a type keys are not built from.
    """
    cols: list[tuple[str, pa.Array]] = [
        (RECORD_KEY_METADATA_FIELD, record_keys(table, list(fields), complex_key))
    ]
    if partition_path is not None:
        part = pa.repeat(pa.scalar(partition_path, pa.string()), table.num_rows)
        cols.append((PARTITION_PATH_METADATA_FIELD, part))
    for name, values in cols:
        idx = table.schema.get_field_index(name)
        if idx >= 0:
            f = table.schema.field(idx)
            table = table.set_column(idx, f, values.cast(f.type))
    return table


# A partition value may hold '/': with URL encoding off, Java's key generators write it as it is
# (KeyGenUtils.getPartitionPath, SimpleAvroKeyGenerator.getPartitionPath), so '2018/08/31' is a
# 3-level path that round-trips. Refused: what would leave the table or its listings -- a segment
# that is empty (a leading '/', '//', a trailing '/') or starts with '.' ('..', '.', hidden
# folders) -- and backslashes and control characters.
_UNSAFE_PARTITION_VALUE = r"(^|/)(\.|/|$)|[\\\x00-\x1f\x7f]"


def partition_paths(
    table: pa.Table,
    fields: list[str],
    hive_style: bool,
    url_encode: bool = False,
    timestamp: TimestampSpec | None = None,
) -> pa.Array:
    """Build ``_hoodie_partition_path`` for every row (``""`` when non-partitioned).

    Args:
        timestamp: the table's TimestampBasedKeyGenerator (its one partition field's values
            are formatted times, which may hold ``/``: nested folders, as Java's).

    Raises:
        SchemaError: a value would not make a safe relative path (a ``/``-separated segment
            empty or starting with ``.``, a ``\\`` or a control character) and URL encoding is
            off; the message names the column and the value. A ``/`` itself is kept: the value
            is a nested partition path, as Java writes it.
    """
    if not fields:
        return pa.repeat(pa.scalar("", pa.string()), table.num_rows)
    if timestamp is not None:
        if len(fields) != 1:
            raise SchemaError(
                f"TimestampBasedKeyGenerator takes one partition field, the table has {fields}"
            )
        v = timestamp.partition_values(_column(table, fields[0]), fields[0])
        if url_encode:
            v = _url_encode(v)
        return pc.binary_join_element_wise(f"{fields[0]}=", v, "") if hive_style else v
    parts = []
    for f in fields:
        v = key_string(_column(table, f), f)
        if v.null_count or pc.any(pc.equal(v, "")).as_py():
            v = pc.if_else(pc.or_kleene(pc.is_null(v), pc.equal(v, "")), DEFAULT_PARTITION, v)
        if url_encode:
            v = _url_encode(v)
        # checked on the distinct values (first occurrences in row order): a table has few
        distinct = pc.unique(v)
        bad = pc.match_substring_regex(distinct, _UNSAFE_PARTITION_VALUE)
        if pc.any(bad).as_py():
            first = distinct.filter(bad)[0].as_py()
            raise SchemaError(
                f"unsafe partition value {first!r} in column '{f}': a partition value may "
                "hold '/' (a nested partition path, as Apache Hudi writes it) but no "
                "'/'-separated segment that is empty or starts with '.' (it would leave the "
                "table or be hidden from listings), no '\\' and no control characters"
            )
        parts.append(pc.binary_join_element_wise(f"{f}=", v, "") if hive_style else v)
    if len(parts) == 1:
        return parts[0]
    return pc.binary_join_element_wise(*parts, "/")


def _url_encode(v: pa.Array) -> pa.Array:
    # Java URLEncoder-like escaping of the characters that are unsafe in a path segment
    for ch, code in (("%", "%25"), ("/", "%2F"), ("\\", "%5C"), ("=", "%3D"), (":", "%3A")):
        v = pc.replace_substring(v, ch, code)
    # leading dot would hide the folder
    return pc.replace_substring_regex(v, r"^\.", "%2E")


def _column(table: pa.Table, name: str) -> pa.ChunkedArray:
    if name not in table.column_names:
        raise SchemaError(f"key column '{name}' is missing; columns are {table.column_names}")
    return table.column(name)


# --------------------------------------------------------------------------- timestamp based
#: milliseconds per unit of Java's ``TimeUnit`` (SCALAR values)
_UNIT_MS = {
    "NANOSECONDS": 1e-6,
    "MICROSECONDS": 1e-3,
    "MILLISECONDS": 1,
    "SECONDS": 1000,
    "MINUTES": 60_000,
    "HOURS": 3_600_000,
    "DAYS": 86_400_000,
}
_TYPE_UNIT = {
    "UNIX_TIMESTAMP": "SECONDS",
    "EPOCHMILLISECONDS": "MILLISECONDS",
    "EPOCHMICROSECONDS": "MICROSECONDS",
}
_TIMESTAMP_PROPS = (
    WriteConfig.TIMESTAMP_TYPE,
    WriteConfig.TIMESTAMP_SCALAR_UNIT,
    WriteConfig.TIMESTAMP_INPUT_FORMAT,
    WriteConfig.TIMESTAMP_INPUT_FORMAT_DELIMITER,
    WriteConfig.TIMESTAMP_OUTPUT_FORMAT,
    WriteConfig.TIMESTAMP_TIMEZONE,
    WriteConfig.TIMESTAMP_INPUT_TIMEZONE,
    WriteConfig.TIMESTAMP_OUTPUT_TIMEZONE,
)


@dataclass(frozen=True)
class TimestampSpec:
    """The partition path of Java's ``TimestampBasedAvroKeyGenerator`` (one partition field).

    The field's value is read as a time -- a number of ``unit`` since the epoch
    (UNIX_TIMESTAMP, EPOCHMILLISECONDS, EPOCHMICROSECONDS, SCALAR) or a string in one of the
    Joda ``input_formats`` (DATE_STRING) -- and formatted with the Joda ``output_format``.
    Time zones as Java's ``getPartitionPath(Object)``: the output zone when one is set, else
    the zone the DATE_STRING value carries (or the input zone); numbers without an output zone
    are formatted in UTC (Java: the JVM's default zone).

    Supported Joda letters: ``yyyy MM M dd d HH H mm m ss s S..`` (output: without ``S``),
    ``Z``/``ZZ`` (input offsets such as ``Z``, ``+0200``, ``+02:00``), quoted literals.
    """

    timestamp_type: str
    input_formats: tuple[str, ...] = ()
    output_format: str = ""
    input_timezone: str = ""
    output_timezone: str = ""
    scalar_unit: str = "SECONDS"

    @classmethod
    def of(cls, options: Options, table_props: Mapping[str, str]) -> TimestampSpec:
        """The spec from the write ``options``, else the table's ``hoodie.properties``.

        Raises:
            ConfigError: no timestamp type (``hoodie.keygen.timebased.timestamp.type``), no
                output format, no input format for DATE_STRING, MIXED (not supported), or a
                Joda pattern with letters this generator does not support.
        """
        values: dict[str, Any] = {}
        for prop in _TIMESTAMP_PROPS:
            if options.is_set(prop):
                values[prop.key] = options.get(prop)
                continue
            stored = next((table_props[k] for k in prop.all_keys() if k in table_props), None)
            values[prop.key] = prop.parse(stored) if stored is not None else prop.default
        ttype = values[WriteConfig.TIMESTAMP_TYPE.key]
        if not ttype:
            raise ConfigError(
                f"option '{WriteConfig.TIMESTAMP_TYPE.key}' is required: the table's key "
                "generator is TimestampBasedKeyGenerator and hoodie.properties does not record "
                "how its partition field holds time (UNIX_TIMESTAMP, DATE_STRING, "
                "EPOCHMILLISECONDS, EPOCHMICROSECONDS or SCALAR)"
            )
        if ttype == "MIXED":
            raise ConfigError(
                f"'{WriteConfig.TIMESTAMP_TYPE.key}'=MIXED is not supported by hudi_ds "
                "(UNIX_TIMESTAMP, DATE_STRING, EPOCHMILLISECONDS, EPOCHMICROSECONDS, SCALAR are)"
            )
        out_format = values[WriteConfig.TIMESTAMP_OUTPUT_FORMAT.key]
        if not out_format:
            raise ConfigError(f"option '{WriteConfig.TIMESTAMP_OUTPUT_FORMAT.key}' is required")
        in_formats: tuple[str, ...] = ()
        if ttype == "DATE_STRING":
            raw = values[WriteConfig.TIMESTAMP_INPUT_FORMAT.key]
            delim = values[WriteConfig.TIMESTAMP_INPUT_FORMAT_DELIMITER.key] or ","
            in_formats = tuple(f.strip() for f in re.split(delim, raw) if f.strip())
            if not in_formats:
                raise ConfigError(
                    f"option '{WriteConfig.TIMESTAMP_INPUT_FORMAT.key}' is required when "
                    f"'{WriteConfig.TIMESTAMP_TYPE.key}' is DATE_STRING"
                )
        both = values[WriteConfig.TIMESTAMP_TIMEZONE.key]
        spec = cls(
            timestamp_type=ttype,
            input_formats=in_formats,
            output_format=out_format,
            # Java HoodieDateTimeParser: hoodie.keygen.timebased.timezone wins over both
            input_timezone=both or values[WriteConfig.TIMESTAMP_INPUT_TIMEZONE.key],
            output_timezone=both or values[WriteConfig.TIMESTAMP_OUTPUT_TIMEZONE.key],
            scalar_unit=values[WriteConfig.TIMESTAMP_SCALAR_UNIT.key],
        )
        for f in spec.input_formats:
            _input_regex(f)  # validated now, before anything is written
        _strftime_format(spec.output_format)
        return spec

    def check_table_field(self, name: str, table_type: pa.DataType) -> None:
        """Refuse writing records (upsert, insert, ...) into a table whose latest schema
        records the numeric time field ``name`` as a string, before anything is written.

        Apache Hudi's Spark SQL UPDATE / DELETE on a table with this key generator (Spark
        gives its partition columns StringType) record the field as ``string`` in their
        commit schema and write it as strings (UPSERT_PREPPED / DELETE_PREPPED: the partition
        path comes from ``_hoodie_partition_path``, no key generator runs). A later write by
        key generator cannot build a partition path there in Java either:
        ``HoodieSchemaUtils.deduceWriterSchema`` promotes an incoming long to the table's
        string ("we promote types to the latest table schema"), ``HoodieCreateRecordUtils``
        runs the key generator on records of that writer schema, and
        ``TimestampBasedAvroKeyGenerator.getPartitionPath(Object)`` rejects a CharSequence
        unless the type is DATE_STRING/MIXED ("Missing input formatter"); strings given as
        they are read fail the same way. (A delete is not refused: Java keys its rows in the
        input's own schema, so the original numbers work.)

        Raises:
            UnsupportedError: the type is UNIX_TIMESTAMP, EPOCHMILLISECONDS,
                EPOCHMICROSECONDS or SCALAR and ``table_type`` is a string (names the field).
        """
        if self.timestamp_type == "DATE_STRING":
            return
        if pa.types.is_string(table_type) or pa.types.is_large_string(table_type):
            raise UnsupportedError(
                f"partition column '{name}': the table's latest schema records it as string "
                "(as Hudi's Spark SQL UPDATE/DELETE leave it) while "
                f"hoodie.keygen.timebased.timestamp.type={self.timestamp_type} needs numbers; "
                "Apache Hudi's TimestampBasedAvroKeyGenerator cannot build a partition path "
                "from the string a write would carry (Java refuses it: 'Missing input "
                "formatter'), whether the column is passed as read (strings) or as the "
                "original integers, so records cannot be written here; a delete with the "
                "column as the original integers works, and Hudi's Spark SQL UPDATE/DELETE "
                "(records keep their _hoodie_partition_path) still update this table"
            )

    def partition_values(self, column: pa.Array | pa.ChunkedArray, name: str) -> pa.Array:
        """The formatted partition value of every row of the partition field ``name``.

        Raises:
            SchemaError: a null value, a value that matches no input format, or a column type
                that does not fit the timestamp type (the message names column and value).
        """
        if isinstance(column, pa.ChunkedArray):
            column = column.combine_chunks()
        if column.null_count:
            raise SchemaError(
                f"partition column '{name}' holds {column.null_count} null value(s); the "
                "TimestampBasedKeyGenerator's default for nulls is not supported by hudi_ds"
            )
        fmt = _strftime_format(self.output_format)
        if self.timestamp_type == "DATE_STRING":
            wall, utc_ms = self._parse_strings(column, name)
            if not self.output_timezone:
                # Java formats in the zone the value was parsed in: its own wall clock
                return pc.strftime(_whole_seconds(wall), format=fmt)
            ts = utc_ms.cast(pa.timestamp("ms", "UTC"))
        else:
            t = column.type
            if not (pa.types.is_integer(t) or pa.types.is_floating(t)):
                raise SchemaError(
                    f"partition column '{name}' has type {t}; {self.timestamp_type} partition "
                    "values must be numbers (Java's TimestampBasedAvroKeyGenerator parses "
                    "strings for DATE_STRING only): pass the epoch values as integers"
                )
            unit = _TYPE_UNIT.get(self.timestamp_type, self.scalar_unit)
            # Java: value.longValue(), then TimeUnit.MILLISECONDS.convert (truncating)
            whole = pc.trunc(column) if pa.types.is_floating(t) else column
            ms = _truncating_ms(whole.cast(pa.int64()), _UNIT_MS[unit])
            ts = ms.cast(pa.timestamp("ms", "UTC"))
        zone = self.output_timezone or "UTC"
        local = pc.local_timestamp(ts.cast(pa.timestamp("ms", _zone(zone))))
        return pc.strftime(_whole_seconds(local), format=fmt)

    def _parse_strings(self, column: pa.Array, name: str) -> tuple[pa.Array, pa.Array]:
        """(wall clock as naive ms timestamps, UTC epoch ms) of DATE_STRING values."""
        if not (pa.types.is_string(column.type) or pa.types.is_large_string(column.type)):
            raise SchemaError(
                f"partition column '{name}' has type {column.type}; DATE_STRING partition "
                "values must be strings"
            )
        column = column.cast(pa.string())
        n = len(column)
        wall = pa.nulls(n, pa.timestamp("ms"))
        offset = pa.nulls(n, pa.int64())
        for f in self.input_formats:
            regex, has_zone = _input_regex(f)
            todo = pc.is_null(wall)
            if not pc.any(todo).as_py():
                break
            ok = pc.and_(todo, pc.match_substring_regex(column, regex))
            if not pc.any(ok).as_py():
                continue
            parts = pc.extract_regex(pc.if_else(ok, column, pa.scalar(None, pa.string())), regex)
            try:
                w, off = _assemble(parts, has_zone)
            except pa.ArrowInvalid as e:  # e.g. month 13: matches the pattern, is no date
                raise SchemaError(
                    f"partition column '{name}' holds a value that is no valid date for "
                    f"format {f!r}: {e}"
                ) from None
            wall = pc.if_else(ok, w, wall)
            offset = pc.if_else(ok, off, offset)
        bad = pc.is_null(wall)
        if pc.any(bad).as_py():
            raise SchemaError(
                f"partition value {column.filter(bad)[0].as_py()!r} of column '{name}' matches "
                f"none of the input date formats {list(self.input_formats)} "
                f"('{WriteConfig.TIMESTAMP_INPUT_FORMAT.key}')"
            )
        utc = pc.subtract(wall.cast(pa.int64()), pc.multiply(offset, 60_000))
        if utc.null_count:
            # no offset in the value: a wall clock of the input zone (Java: or the JVM's)
            zone = _zone(self.input_timezone or "UTC")
            utc = pc.coalesce(utc, pc.assume_timezone(wall, zone).cast(pa.int64()))
        return wall, utc


def _whole_seconds(ts: pa.Array) -> pa.Array:
    # strftime's %S prints fractions of finer units; the output patterns have none
    return pc.floor_temporal(ts, unit="second").cast(pa.timestamp("s"))


def _truncating_ms(values: pa.Array, ms_per_unit: float) -> pa.Array:
    if ms_per_unit >= 1:
        return pc.multiply_checked(values, int(ms_per_unit))
    # integer division truncates toward zero, as Java's TimeUnit.convert
    return pc.divide(values, round(1 / ms_per_unit))


def _zone(name: str) -> str:
    """A Java zone id as Arrow takes it (``GMT``/``Z`` are UTC; ``GMT+2`` style offsets)."""
    n = name.strip()
    if n.upper() in ("UTC", "GMT", "Z", "UT"):
        return "UTC"
    m = re.fullmatch(r"(?:GMT|UTC)?([+-])(\d{1,2}):?(\d{2})?", n)
    if m:
        return f"{m.group(1)}{int(m.group(2)):02d}:{m.group(3) or '00'}"
    return n


def _joda_tokens(pattern: str) -> list[tuple[str, str]]:
    """Split a Joda pattern into ``("letters", "yyyy")`` and ``("literal", "-")`` tokens."""
    out: list[tuple[str, str]] = []
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "'":
            j = pattern.find("'", i + 1)
            if j < 0:
                raise ConfigError(f"unterminated quote in date format {pattern!r}")
            out.append(("literal", "'" if j == i + 1 else pattern[i + 1 : j]))
            i = j + 1
        elif c.isascii() and c.isalpha():
            j = i
            while j < len(pattern) and pattern[j] == c:
                j += 1
            out.append(("letters", pattern[i:j]))
            i = j
        else:
            out.append(("literal", c))
            i += 1
    return out


_IN_GROUPS = {
    "yyyy": ("y", r"\d{4}"),
    "MM": ("M", r"\d{2}"),
    "M": ("M", r"\d{1,2}"),
    "dd": ("d", r"\d{2}"),
    "d": ("d", r"\d{1,2}"),
    "HH": ("H", r"\d{2}"),
    "H": ("H", r"\d{1,2}"),
    "mm": ("m", r"\d{2}"),
    "m": ("m", r"\d{1,2}"),
    "ss": ("s", r"\d{2}"),
    "s": ("s", r"\d{1,2}"),
    "Z": ("z", r"Z|[+-]\d{2}:?\d{2}"),
    "ZZ": ("z", r"Z|[+-]\d{2}:?\d{2}"),
}
_OUT_CODES = {
    "yyyy": "%Y",
    "yy": "%y",
    "MM": "%m",
    "dd": "%d",
    "HH": "%H",
    "mm": "%M",
    "ss": "%S",
}


def _input_regex(pattern: str) -> tuple[str, bool]:
    """A regex with named groups for a Joda input pattern, and whether it holds an offset."""
    parts = []
    seen: set[str] = set()
    for kind, tok in _joda_tokens(pattern):
        if kind == "literal":
            parts.append(re.escape(tok))
            continue
        if set(tok) == {"S"}:
            group, rx = "f", r"\d{1,9}"
        elif tok in _IN_GROUPS:
            group, rx = _IN_GROUPS[tok]
        else:
            raise ConfigError(
                f"date format {pattern!r}: Joda letters {tok!r} are not supported by hudi_ds's "
                "TimestampBasedKeyGenerator (yyyy MM dd HH mm ss S Z and literals are)"
            )
        if group in seen:
            raise ConfigError(f"date format {pattern!r} repeats the field {tok!r}")
        seen.add(group)
        parts.append(f"(?P<{group}>{rx})")
    if "y" not in seen:
        raise ConfigError(f"date format {pattern!r} has no year (yyyy)")
    return "^" + "".join(parts) + "$", "z" in seen


def _strftime_format(pattern: str) -> str:
    """The strftime format of a Joda output pattern."""
    out = []
    for kind, tok in _joda_tokens(pattern):
        if kind == "literal":
            out.append(tok.replace("%", "%%"))
        elif tok in _OUT_CODES:
            out.append(_OUT_CODES[tok])
        else:
            raise ConfigError(
                f"output date format {pattern!r}: Joda letters {tok!r} are not supported by "
                "hudi_ds's TimestampBasedKeyGenerator (yyyy yy MM dd HH mm ss and literals are)"
            )
    return "".join(out)


def _assemble(parts: pa.StructArray, has_zone: bool) -> tuple[pa.Array, pa.Array]:
    """(naive ms timestamps, offset minutes or nulls) from the regex groups of one format."""
    names = {parts.type.field(i).name for i in range(parts.type.num_fields)}

    def field(g: str, width: int, default: str) -> pa.Array:
        if g not in names:
            return pa.repeat(pa.scalar(default), len(parts))
        return pc.utf8_lpad(parts.field(g), width=width, padding="0")

    frac = (
        pc.utf8_slice_codeunits(pc.utf8_rpad(parts.field("f"), width=3, padding="0"), 0, 3)
        if "f" in names
        else pa.repeat(pa.scalar("000"), len(parts))
    )
    iso = pc.binary_join_element_wise(
        field("y", 4, "1970"),
        "-",
        field("M", 2, "01"),
        "-",
        field("d", 2, "01"),
        "T",
        field("H", 2, "00"),
        ":",
        field("m", 2, "00"),
        ":",
        field("s", 2, "00"),
        ".",
        frac,
        "",
    )
    # rows another format matches are null structs (their fields are empty, not null)
    iso = pc.if_else(pc.is_valid(parts), iso, pa.scalar(None, pa.string()))
    wall = iso.cast(pa.timestamp("ms"))
    if not has_zone:
        return wall, pa.nulls(len(parts), pa.int64())
    z = parts.field("z")
    digits = pc.replace_substring(pc.utf8_slice_codeunits(z, 1), ":", "")
    hh = pc.utf8_slice_codeunits(digits, 0, 2)
    mm = pc.utf8_slice_codeunits(digits, 2, 4)
    minutes = pc.add(
        pc.multiply(
            pc.fill_null(pc.cast(pc.if_else(pc.equal(z, "Z"), "0", hh), pa.int64()), 0), 60
        ),
        pc.cast(pc.if_else(pc.equal(z, "Z"), "0", mm), pa.int64()),
    )
    sign = pc.if_else(pc.starts_with(z, "-"), -1, 1)
    return wall, pc.multiply(minutes, sign)
