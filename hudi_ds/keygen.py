"""Key generators: record keys and partition paths of whole Arrow batches (vectorised).

Record key grammar (Hudi ``KeyGenUtils``)::

    SIMPLE / NON_PARTITION   <value>                       (the one key field as a string)
    COMPLEX                  <f1>:<v1>,<f2>:<v2>,...       null -> __null__, "" -> __empty__
    TIMESTAMP                as SIMPLE
    CUSTOM                   as SIMPLE for one key field, else as COMPLEX

Partition path: ``<v1>/<v2>`` or, hive style, ``<f1>=<v1>/<f2>=<v2>``; null or empty values
become ``__HIVE_DEFAULT_PARTITION__`` (Hudi's ``PartitionPathEncodeUtils.DEFAULT_PARTITION_PATH``).
The CUSTOM key generator names each partition field's kind,
``hoodie.datasource.write.partitionpath.field=country:SIMPLE,date:TIMESTAMP``: a SIMPLE field's
value as above, a TIMESTAMP field's value formatted as the TimestampBasedKeyGenerator does.

Values print as Java's ``HoodieAvroUtils.getNestedFieldValAsString`` does on the Avro record
(``convertValueForSpecificDataTypes``): strings and integers as they are, booleans
``true``/``false``, dates ISO ``yyyy-MM-dd`` (``LocalDate``), decimals as ``BigDecimal.toString``
(``1E-7`` for small ones), floats as ``Double.toString`` / ``Float.toString`` (``1.0``,
``1.0E10``), timestamps and times as the long Avro stores (epoch micros or millis: Hudi's
consistent logical timestamps are off by default).
"""

from __future__ import annotations

import enum
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hudi_ds import joda
from hudi_ds.config import Options, WriteConfig
from hudi_ds.errors import ConfigError, SchemaError, UnsupportedError
from hudi_ds.schema.evolution import whole
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
    CUSTOM = "CUSTOM"

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
    KeyGeneratorType.CUSTOM: "CustomKeyGenerator",
}


class PartitionKind(enum.StrEnum):
    """How the CUSTOM key generator makes one field's part of the partition path (Java
    ``CustomAvroKeyGenerator.PartitionKeyType``)."""

    SIMPLE = "SIMPLE"
    TIMESTAMP = "TIMESTAMP"


def custom_partition_fields(
    spec: Sequence[str], what: str
) -> tuple[tuple[str, PartitionKind], ...]:
    """``(field, kind)`` of each ``field:TYPE`` entry of a CUSTOM key generator's partition
    fields (``CustomAvroKeyGenerator.getPartitionFieldAndKeyType``: the type is any case).

    Args:
        what: the option or property the entries come from (named in errors).

    Raises:
        ConfigError: an entry without a type or with another type than SIMPLE / TIMESTAMP
            (Java: "Unable to find field names for partition path in proper format").
    """
    out = []
    for entry in spec:
        name, _, kind = entry.strip().partition(":")
        try:
            out.append((name.strip(), PartitionKind(kind.strip().upper())))
        except ValueError:
            raise ConfigError(
                f"{what}: partition field {entry!r} of the CUSTOM key generator needs a type, "
                "SIMPLE or TIMESTAMP, as 'field1:SIMPLE,field2:TIMESTAMP' (Java "
                "CustomAvroKeyGenerator)"
            ) from None
    return tuple(out)


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
        timestamp_fields: the partition fields ``timestamp`` formats (the TIMESTAMP key
            generator's one field, the CUSTOM key generator's ``:TIMESTAMP`` fields).
        generator: the key generator, when the writer or the table names one that the
            fields alone do not tell (TIMESTAMP, CUSTOM); None: SIMPLE / COMPLEX /
            NON_PARTITION as the fields say.
    """

    record_key_fields: tuple[str, ...]
    partition_fields: tuple[str, ...]
    hive_style: bool
    url_encode: bool
    complex_key: bool
    timestamp: TimestampSpec | None
    timestamp_fields: tuple[str, ...] = ()
    generator: KeyGeneratorType | None = None

    def partition_field_entries(self) -> tuple[str, ...]:
        """The partition fields as a CUSTOM key generator's table records them from version 8
        on (``field:SIMPLE`` / ``field:TIMESTAMP``; Java ``HoodieTableConfig.
        getPartitionFieldPropForKeyGenerator``), the names alone otherwise."""
        if self.generator is not KeyGeneratorType.CUSTOM:
            return self.partition_fields
        return tuple(
            f"{f}:{PartitionKind.TIMESTAMP if f in self.timestamp_fields else PartitionKind.SIMPLE}"
            for f in self.partition_fields
        )


class KeyField(enum.StrEnum):
    """What a column is to the key generator: errors name a column by its part."""

    RECORD_KEY = "record key field"
    PARTITION_PATH = "partition path field"

    @property
    def option(self) -> str:
        """The option that names such fields."""
        if self is KeyField.RECORD_KEY:
            return WriteConfig.RECORD_KEY_FIELDS.key
        return WriteConfig.PARTITION_FIELDS.key


def key_string(
    column: pa.Array | pa.ChunkedArray, name: str, role: KeyField = KeyField.RECORD_KEY
) -> pa.Array:
    """A key column's values as Java prints them (module docstring); ``role`` names the
    column's part in errors (a record key field, a partition path field).

    Raises:
        SchemaError: a type keys are not made of (binary, nested), naming the column.
    """
    column = whole(column)
    t = column.type
    if pa.types.is_dictionary(t):
        column = column.cast(t.value_type)
        t = column.type
    if pa.types.is_string(t):
        return column
    if pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return column.cast(pa.string())
    if pa.types.is_integer(t) or pa.types.is_date(t) or pa.types.is_decimal(t):
        # Arrow prints decimals as BigDecimal.toString does (scientific below 1E-6)
        return column.cast(pa.string())
    if pa.types.is_boolean(t):
        return pc.if_else(column, "true", "false")
    if pa.types.is_floating(t):
        return _java_floats(column)
    if pa.types.is_timestamp(t):
        unit = "ms" if t.unit in ("s", "ms") else "us"  # the Avro logical type hudi_ds writes
        return column.cast(pa.timestamp(unit, t.tz), safe=False).cast(pa.int64()).cast(pa.string())
    if pa.types.is_time(t):
        unit = "ms" if t.unit in ("s", "ms") else "us"
        cast = pa.time32(unit) if unit == "ms" else pa.time64(unit)
        width = pa.int32() if unit == "ms" else pa.int64()
        return column.cast(cast, safe=False).cast(width).cast(pa.string())
    raise SchemaError(
        f"{role} '{name}' has type {t}; record keys and partition paths are made of "
        "strings, integers, booleans, dates, decimals, floats, timestamps and times "
        "(e.g. cast the column to string)"
    )


def _java_floats(column: pa.Array) -> pa.Array:
    """``Double.toString`` / ``Float.toString`` of each value: the shortest digits that
    identify it, plain for 1E-3 <= |v| < 1E7 with at least one decimal, else ``d.dddE<n>``.
    Printed once per distinct value (a key column has few), then taken back per row."""
    single = column.type == pa.float32()
    distinct = pc.unique(column)
    printed = pa.array(
        [None if v is None else _java_float(v, single) for v in distinct.to_pylist()],
        pa.string(),
    )
    return pc.take(printed, pc.index_in(column, distinct))


def _java_float(v: float, single: bool) -> str:
    if v != v:
        return "NaN"
    if v in (float("inf"), float("-inf")):
        return "Infinity" if v > 0 else "-Infinity"
    if v == 0:
        return "-0.0" if str(v).startswith("-") else "0.0"
    text = np.format_float_scientific(np.float32(v) if single else v, unique=True, trim="-")
    mantissa, _, exp_text = text.partition("e")
    exp = int(exp_text)
    sign = "-" if mantissa.startswith("-") else ""
    ds = mantissa.lstrip("-").replace(".", "")
    if 1e-3 <= abs(v) < 1e7:
        point = exp + 1
        if point <= 0:
            whole, frac = "0", "0" * -point + ds
        else:
            ds = ds.ljust(point, "0")
            whole, frac = ds[:point], ds[point:]
        return f"{sign}{whole}.{frac or '0'}"
    return f"{sign}{ds[0]}.{ds[1:] or '0'}E{exp}"


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
    timestamp_fields: Sequence[str] | None = None,
) -> pa.Array:
    """Build ``_hoodie_partition_path`` for every row (``""`` when non-partitioned).

    Args:
        timestamp: the TimestampBasedKeyGenerator's spec: formats the ``timestamp_fields``
            (formatted times may hold ``/``: nested folders, as Java's).
        timestamp_fields: the fields ``timestamp`` formats (None: the one partition field,
            the TIMESTAMP key generator's); the others are SIMPLE parts (the CUSTOM key
            generator, ``CustomAvroKeyGenerator.getPartitionPath``: each part made by its own
            generator, joined by ``/``).

    Raises:
        SchemaError: a value would not make a safe relative path (a ``/``-separated segment
            empty or starting with ``.``, a ``\\`` or a control character) and URL encoding is
            off; the message names the column and the value. A ``/`` itself is kept: the value
            is a nested partition path, as Java writes it. Also: the TIMESTAMP key generator
            with several partition fields.
    """
    if not fields:
        return pa.repeat(pa.scalar("", pa.string()), table.num_rows)
    if timestamp is not None and timestamp_fields is None:
        if len(fields) != 1:
            raise SchemaError(
                f"TimestampBasedKeyGenerator takes one partition field, the table has {fields}"
            )
        timestamp_fields = fields
    formatted = set(timestamp_fields or ()) if timestamp is not None else set()
    parts = []
    for f in fields:
        if f in formatted:
            assert timestamp is not None
            v = timestamp.partition_values(_column(table, f, KeyField.PARTITION_PATH), f)
            if url_encode:
                v = _url_encode(v)
        else:
            v = _simple_partition_values(table, f, url_encode)
        parts.append(pc.binary_join_element_wise(f"{f}=", v, "") if hive_style else v)
    if len(parts) == 1:
        return parts[0]
    return pc.binary_join_element_wise(*parts, "/")


def _simple_partition_values(table: pa.Table, f: str, url_encode: bool) -> pa.Array:
    """One SIMPLE field's partition values (``KeyGenUtils.getPartitionPath``)."""
    v = key_string(_column(table, f, KeyField.PARTITION_PATH), f, KeyField.PARTITION_PATH)
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
    return v


def _url_encode(v: pa.Array) -> pa.Array:
    # Java URLEncoder-like escaping of the characters that are unsafe in a path segment
    for ch, code in (("%", "%25"), ("/", "%2F"), ("\\", "%5C"), ("=", "%3D"), (":", "%3A")):
        v = pc.replace_substring(v, ch, code)
    # leading dot would hide the folder
    return pc.replace_substring_regex(v, r"^\.", "%2E")


def _column(table: pa.Table, name: str, role: KeyField = KeyField.RECORD_KEY) -> pa.ChunkedArray:
    if name not in table.column_names:
        raise SchemaError(f"{role} '{name}' is missing; columns are {table.column_names}")
    return table.column(name)


# --------------------------------------------------------------------------- timestamp based
class TimestampType(enum.StrEnum):
    """How a TimestampBasedKeyGenerator's field holds time (Java ``TimestampType``)."""

    UNIX_TIMESTAMP = "UNIX_TIMESTAMP"
    DATE_STRING = "DATE_STRING"
    MIXED = "MIXED"
    EPOCHMILLISECONDS = "EPOCHMILLISECONDS"
    EPOCHMICROSECONDS = "EPOCHMICROSECONDS"
    SCALAR = "SCALAR"

    @property
    def parses_strings(self) -> bool:
        """Values are strings read with the input formats. MIXED is DATE_STRING in Java too:
        its numbers have no time unit (``convertLongTimeToMillis`` throws)."""
        return self in (TimestampType.DATE_STRING, TimestampType.MIXED)


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
#: epoch millis of 0001-01-01T00:00Z and of the last milli of 9999-12-31
_YEAR_1_MS = -62_135_596_800_000
_YEAR_9999_END_MS = 253_402_300_799_999
_TYPE_UNIT = {
    TimestampType.UNIX_TIMESTAMP: "SECONDS",
    TimestampType.EPOCHMILLISECONDS: "MILLISECONDS",
    TimestampType.EPOCHMICROSECONDS: "MICROSECONDS",
}
#: the options Java records in hoodie.properties (``HoodieTableConfig.PERSISTED_CONFIG_LIST``:
#: the ``hoodie.keygen.timebased.*`` configs, under their own keys)
TIMESTAMP_PROPS = (
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
    """The partition path of Java's ``TimestampBasedAvroKeyGenerator`` (the TIMESTAMP key
    generator's one field, or each ``field:TIMESTAMP`` of the CUSTOM key generator).

    The field's value is read as a time -- a number of ``unit`` since the epoch
    (UNIX_TIMESTAMP, EPOCHMILLISECONDS, EPOCHMICROSECONDS, SCALAR: integers, floats and
    decimals truncated, dates as their epoch day, timestamps as the long Avro stores) or a
    string in one of the Joda ``input_formats`` (DATE_STRING, MIXED) -- and printed with the
    Joda ``output_format`` (every pattern letter Joda accepts: :mod:`hudi_ds.joda`). Zones as
    Java's ``getPartitionPath(Object)``: the output zone when one is set, else the zone of
    the parsed value (the input zone, or the offset / zone the value carries); numbers
    without an output zone are printed in UTC (Java: the JVM's default zone). A null value
    is Java's default (``getDefaultPartitionVal``): 1 unit after the epoch, or for strings
    that instant printed with the first input format.
    """

    timestamp_type: TimestampType
    input_formats: tuple[str, ...] = ()
    output_format: str = ""
    input_timezone: str = ""
    output_timezone: str = ""
    scalar_unit: str = "SECONDS"
    #: the options as given, for a new table's hoodie.properties
    recorded: tuple[tuple[str, str], ...] = ()

    @classmethod
    def of(cls, options: Options, table_props: Mapping[str, str]) -> TimestampSpec:
        """The spec from the write ``options``, else the table's ``hoodie.properties``.

        Raises:
            ConfigError: no timestamp type (``hoodie.keygen.timebased.timestamp.type``), no
                output format, no input format for DATE_STRING / MIXED, a pattern Joda
                refuses, or an unknown time zone.
        """
        values: dict[str, Any] = {}
        recorded: list[tuple[str, str]] = []
        for prop in TIMESTAMP_PROPS:
            if options.is_set(prop):
                values[prop.key] = options.get(prop)
                recorded.append((prop.key, str(values[prop.key])))
                continue
            stored = next((table_props[k] for k in prop.all_keys() if k in table_props), None)
            values[prop.key] = prop.parse(stored) if stored is not None else prop.default
        raw_type = values[WriteConfig.TIMESTAMP_TYPE.key]
        if not raw_type:
            raise ConfigError(
                f"option '{WriteConfig.TIMESTAMP_TYPE.key}' is required: the key generator "
                "formats a partition field as a time (TimestampBasedKeyGenerator, or a CUSTOM "
                "field:TIMESTAMP) and neither the options nor hoodie.properties say how the "
                "field holds time (UNIX_TIMESTAMP, DATE_STRING, MIXED, EPOCHMILLISECONDS, "
                "EPOCHMICROSECONDS or SCALAR)"
            )
        ttype = TimestampType(raw_type)
        out_format = values[WriteConfig.TIMESTAMP_OUTPUT_FORMAT.key]
        if not out_format:
            raise ConfigError(f"option '{WriteConfig.TIMESTAMP_OUTPUT_FORMAT.key}' is required")
        in_formats: tuple[str, ...] = ()
        if ttype.parses_strings:
            raw = values[WriteConfig.TIMESTAMP_INPUT_FORMAT.key]
            delim = values[WriteConfig.TIMESTAMP_INPUT_FORMAT_DELIMITER.key] or ","
            in_formats = tuple(f.strip() for f in re.split(delim, raw) if f.strip())
            if not in_formats:
                raise ConfigError(
                    f"option '{WriteConfig.TIMESTAMP_INPUT_FORMAT.key}' is required when "
                    f"'{WriteConfig.TIMESTAMP_TYPE.key}' is {ttype}"
                )
        # Java HoodieDateTimeParser: hoodie.keygen.timebased.timezone wins over both
        both = values[WriteConfig.TIMESTAMP_TIMEZONE.key]
        in_zone = both or values[WriteConfig.TIMESTAMP_INPUT_TIMEZONE.key]
        out_zone = both or values[WriteConfig.TIMESTAMP_OUTPUT_TIMEZONE.key]
        spec = cls(
            timestamp_type=ttype,
            input_formats=in_formats,
            output_format=out_format,
            input_timezone=joda.java_zone(in_zone) if in_zone.strip() else "",
            output_timezone=joda.java_zone(out_zone) if out_zone.strip() else "",
            scalar_unit=values[WriteConfig.TIMESTAMP_SCALAR_UNIT.key],
            recorded=tuple(recorded),
        )
        for f in spec.input_formats:
            joda.InputPattern.of(f)  # validated now, before anything is written
        joda.check_pattern(spec.output_format)
        return spec

    def table_properties(self) -> dict[str, str]:
        """The ``hoodie.keygen.timebased.*`` entries a new table records: the options given
        (Java ``HoodieTableMetaClient.TableBuilder.set``: ``PERSISTED_CONFIG_LIST``)."""
        return dict(self.recorded)

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
        if self.timestamp_type.parses_strings:
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

    @property
    def unit(self) -> str:
        """The Java ``TimeUnit`` numeric values are read in (SCALAR: the scalar unit)."""
        return _TYPE_UNIT.get(self.timestamp_type, self.scalar_unit)

    def partition_values(self, column: pa.Array | pa.ChunkedArray, name: str) -> pa.Array:
        """The formatted partition value of every row of the partition field ``name``.

        Raises:
            SchemaError: a value that matches no input format or is no valid date, or a
                column type that does not fit the timestamp type (names column and value).
        """
        if isinstance(column, pa.ChunkedArray):
            column = column.combine_chunks()
        if pa.types.is_dictionary(column.type):
            column = column.cast(column.type.value_type)
        if self.timestamp_type.parses_strings:
            parsed = self._parse_strings(column, name)
            utc, zones = parsed.utc_ms, parsed.zones
        else:
            try:
                utc = self._epoch_ms(column, name)
            except pa.ArrowInvalid as e:
                raise self._out_of_range(name, e) from None
            lo, hi = pc.min_max(utc).values()
            if lo.is_valid and (lo.as_py() < _YEAR_1_MS or hi.as_py() > _YEAR_9999_END_MS):
                # Java formats such years (epoch micros read as millis: year 57970); they are
                # a unit mistake, not dates, so hudi_ds refuses them
                bad = lo.as_py() if lo.as_py() < _YEAR_1_MS else hi.as_py()
                raise self._out_of_range(name, f"{bad} ms is outside the years 1-9999")
            zones = pa.repeat(pa.scalar("UTC"), len(utc))
        if self.output_timezone:
            zones = pa.repeat(pa.scalar(self.output_timezone), len(utc))
        try:
            return joda.format_instants(self.output_format, utc, zones)
        except pa.ArrowInvalid as e:
            raise self._out_of_range(name, e) from None

    def _out_of_range(self, name: str, cause: object) -> SchemaError:
        unit = self.unit.lower()
        return SchemaError(
            f"partition path field '{name}' holds values that are no date as {unit} since the "
            f"epoch (hoodie.keygen.timebased.timestamp.type={self.timestamp_type}): check the "
            f"type against the column's unit ({cause})"
        )

    def _epoch_ms(self, column: pa.Array, name: str) -> pa.Array:
        """Epoch millis of numeric values (Java ``convertLongTimeToMillis``)."""
        t = column.type
        if pa.types.is_date(t):
            whole = column.cast(pa.date32()).cast(pa.int32()).cast(pa.int64())
        elif pa.types.is_timestamp(t):
            # the long Avro holds (timestamp-millis / -micros) unless Hudi's consistent logical
            # timestamps are on (they are off by default)
            unit = "ms" if t.unit in ("s", "ms") else "us"
            held = "MILLISECONDS" if unit == "ms" else "MICROSECONDS"
            if self.unit != held:
                # Java reads the long in the configured unit whatever the column's logical
                # type, and writes partition paths thousands of years away: refused instead
                right = "EPOCHMILLISECONDS" if unit == "ms" else "EPOCHMICROSECONDS"
                raise SchemaError(
                    f"partition path field '{name}' is a {t} column, whose values Hudi keys as "
                    f"epoch {held.lower()}, but hoodie.keygen.timebased.timestamp.type="
                    f"{self.timestamp_type} reads them in another unit (the partition paths "
                    f"would be wrong dates): use {right}"
                )
            whole = column.cast(pa.timestamp(unit, t.tz), safe=False).cast(pa.int64())
        elif pa.types.is_decimal(t):
            whole = column.cast(pa.int64(), safe=False)  # BigDecimal.longValue
        elif pa.types.is_floating(t):
            whole = pc.trunc(column).cast(pa.int64())  # Double.longValue
        elif pa.types.is_integer(t):
            whole = column.cast(pa.int64())
        else:
            raise SchemaError(
                f"partition path field '{name}' has type {t}; with "
                f"hoodie.keygen.timebased.timestamp.type={self.timestamp_type} its values "
                "must be numbers (Java's TimestampBasedAvroKeyGenerator parses strings for "
                "DATE_STRING and MIXED only): pass the epoch values as integers"
            )
        # getDefaultPartitionVal: 1 (of the unit) for a null
        whole = pc.fill_null(whole, 1)
        unit_name = self.unit
        return _truncating_ms(whole, _UNIT_MS[unit_name])

    def _parse_strings(self, column: pa.Array, name: str) -> joda.ParsedInstants:
        if not (pa.types.is_string(column.type) or pa.types.is_large_string(column.type)):
            hint = (
                "; for a timestamp column use EPOCHMICROSECONDS (EPOCHMILLISECONDS for a "
                "timestamp[ms] column)"
                if pa.types.is_timestamp(column.type)
                else ""
            )
            raise SchemaError(
                f"partition path field '{name}' has type {column.type}; with "
                f"hoodie.keygen.timebased.timestamp.type={self.timestamp_type} its values "
                f"must be strings: pass a string column{hint}"
            )
        column = column.cast(pa.string())
        if column.null_count:
            # getDefaultPartitionVal: the epoch's first milli in the input (else output, else
            # GMT) zone, printed with the first input format
            zone = self.input_timezone or self.output_timezone or "UTC"
            one = pa.array([1], pa.int64())
            default = joda.format_instants(self.input_formats[0], one, zone)[0]
            column = pc.fill_null(column, default)
        patterns = [joda.InputPattern.of(f) for f in self.input_formats]
        return joda.parse_instants(column, patterns, self.input_timezone or None, name)


def _truncating_ms(values: pa.Array, ms_per_unit: float) -> pa.Array:
    if ms_per_unit >= 1:
        return pc.multiply_checked(values, int(ms_per_unit))
    # integer division truncates toward zero, as Java's TimeUnit.convert
    return pc.divide(values, round(1 / ms_per_unit))
