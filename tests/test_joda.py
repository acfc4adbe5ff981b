"""Joda-Time patterns as Hudi's TimestampBasedKeyGenerator prints and parses them.

Every pattern letter Joda's ``DateTimeFormat.forPattern`` accepts (``parsePatternTo``: G C Y x
w e E y D M d a K h H k m s S z Z, quotes), printed and parsed; the expected strings are
Joda's output by its rules (``DateTimeFormatterBuilder``: padded numbers, two-digit years,
``appendFractionOfSecond(n, n)`` truncation, English text, ``Z`` / ``ZZ`` / ``ZZZ`` offsets and
ids, ``DateTimeParserBucket`` setting fields longest unit first).
"""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest

from hudi_ds import joda
from hudi_ds.config import Options
from hudi_ds.errors import ConfigError, SchemaError
from hudi_ds.keygen import TimestampSpec, partition_paths

# 2024-01-05T03:04:05.067Z, a Friday in ISO week 1 of 2024
FRI = 1704423845067
# 2020-12-31T23:30:00Z: 2021-01-01 08:30 in Tokyo, a Friday in ISO week 53 of 2020
NEW_YEAR = 1609457400000
#: (pattern, instant, zone, Joda's output)
PRINTED = [
    ("yyyy", FRI, "UTC", "2024"),
    ("yy", FRI, "UTC", "24"),
    ("y", FRI, "UTC", "2024"),
    ("yyyyy", FRI, "UTC", "02024"),
    ("YYYY YY", FRI, "UTC", "2024 24"),
    ("xxxx xx", FRI, "UTC", "2024 24"),
    ("C CC", FRI, "UTC", "20 20"),
    ("G", FRI, "UTC", "AD"),
    ("M MM MMM MMMM", FRI, "UTC", "1 01 Jan January"),
    ("d dd", FRI, "UTC", "5 05"),
    ("D DDD", FRI, "UTC", "5 005"),
    ("w ww", FRI, "UTC", "1 01"),
    ("e E EEE EEEE", FRI, "UTC", "5 Fri Fri Friday"),
    ("a", FRI, "UTC", "AM"),
    ("h hh K KK H HH k kk", FRI, "UTC", "3 03 3 03 3 03 3 03"),
    ("m mm s ss", FRI, "UTC", "4 04 5 05"),
    ("S SS SSS SSSS", FRI, "UTC", "0 06 067 0670"),
    ("Z ZZ ZZZ z zzzz", FRI, "UTC", "+0000 +00:00 UTC UTC Coordinated Universal Time"),
    ("yyyy-MM-dd hh", 1749284360000, "UTC", "2025-06-07 08"),
    ("yyyy'T'HH", FRI, "UTC", "2024T03"),
    ("'o''clock' h a", FRI, "UTC", "o'clock 3 AM"),
    ("''yyyy''", FRI, "UTC", "'2024'"),
    ("yyyy/MM/dd", FRI, "UTC", "2024/01/05"),
    ("yyyy xxxx-'W'ww-e", NEW_YEAR, "Asia/Tokyo", "2021 2020-W53-5"),
    ("HH:mm Z ZZ ZZZ z", NEW_YEAR, "Asia/Tokyo", "08:30 +0900 +09:00 Asia/Tokyo JST"),
    ("HH:mm Z ZZ ZZZ z", NEW_YEAR, "+05:30", "05:00 +0530 +05:30 +05:30 +05:30"),
    ("HH:mm z", 1719820800000, "Europe/Paris", "10:00 CEST"),
    ("h a k K", 1719706500000, "UTC", "12 AM 24 0"),  # 2024-06-30T00:15Z
    ("h a k K", 1719749700000, "UTC", "12 PM 12 0"),  # 12:15
    ("h a k K", 1719753300000, "UTC", "1 PM 13 1"),  # 13:15
    ("yyyy-MM-dd HH:mm:ss.SSS", -1, "UTC", "1969-12-31 23:59:59.999"),
]


@pytest.mark.parametrize(("pattern", "instant", "zone", "expected"), PRINTED)
def test_printing_every_letter(pattern: str, instant: int, zone: str, expected: str) -> None:
    got = joda.format_instants(pattern, pa.array([instant], pa.int64()), zone)
    assert got.to_pylist() == [expected]


#: (input pattern, value, the instant Joda parses, as ISO UTC)
PARSED = [
    ("yyyy-MM-dd", "2024-02-29", "2024-02-29T00:00:00.000"),
    ("yyyyMMdd", "20240105", "2024-01-05T00:00:00.000"),
    ("yy/M/d", "24/1/5", "2024-01-05T00:00:00.000"),
    ("dd MMM yyyy", "05 jan 2024", "2024-01-05T00:00:00.000"),
    ("dd MMM yyyy", "05 JANUARY 2024", "2024-01-05T00:00:00.000"),
    ("MMMM d, yyyy h:mm a", "January 5, 2024 3:04 PM", "2024-01-05T15:04:00.000"),
    ("EEE, dd MMM yyyy HH:mm:ss Z", "Fri, 05 Jan 2024 03:04:05 +0100", "2024-01-05T02:04:05.000"),
    # the day of week is set last: it moves the date within its ISO week
    ("EEE yyyy-MM-dd", "Mon 2024-01-05", "2024-01-01T00:00:00.000"),
    ("xxxx-'W'ww-e", "2020-W53-5", "2021-01-01T00:00:00.000"),
    # fields start at 1970-01-01, a Thursday: the weekyear and week keep that day
    ("xxxx-ww", "2024-03", "2024-01-18T00:00:00.000"),
    ("yyyy DDD", "2024 060", "2024-02-29T00:00:00.000"),
    ("yyyy-MM-dd kk:mm", "2024-01-05 24:00", "2024-01-05T00:00:00.000"),
    ("yyyy-MM-dd KK:mm a", "2024-01-05 11:30 PM", "2024-01-05T23:30:00.000"),
    ("yyyy-MM-dd hh:mm a", "2024-01-05 12:10 am", "2024-01-05T00:10:00.000"),
    ("yyyy-MM-dd HH:mm:ss.SSSSSS", "2024-01-05 03:04:05.123456", "2024-01-05T03:04:05.123"),
    ("yyyy-MM-dd HH:mm:ss.S", "2024-01-05 03:04:05.5", "2024-01-05T03:04:05.500"),
    ("yyyy-MM-dd HH:mm ZZZ", "2024-07-01 10:00 Europe/Paris", "2024-07-01T08:00:00.000"),
    ("yyyy-MM-dd HH:mm z", "2024-01-05 10:00 PST", "2024-01-05T18:00:00.000"),
    ("yyyy-MM-dd'T'HH:mm:ssZZ", "2024-01-05T03:04:05Z", "2024-01-05T03:04:05.000"),
    ("G yyyy-MM-dd", "AD 2024-01-05", "2024-01-05T00:00:00.000"),
    ("CCyy-MM-dd", "2024-01-05", "2024-01-05T00:00:00.000"),
    ("Y-M-d H:m:s", "2024-1-5 3:4:5", "2024-01-05T03:04:05.000"),
]


def _spec(**options: str) -> TimestampSpec:
    return TimestampSpec.of(Options.of(options), {})


def _date_string(input_format: str, output: str, **zones: str) -> TimestampSpec:
    return _spec(
        **{
            "hoodie.keygen.timebased.timestamp.type": "DATE_STRING",
            "hoodie.keygen.timebased.input.dateformat": input_format,
            "hoodie.keygen.timebased.input.dateformat.list.delimiter.regex": ";",
            "hoodie.keygen.timebased.output.dateformat": output,
            **zones,
        }
    )


@pytest.mark.parametrize(("pattern", "value", "expected"), PARSED)
def test_parsing_every_letter(pattern: str, value: str, expected: str) -> None:
    spec = _date_string(
        pattern,
        "yyyy-MM-dd'T'HH:mm:ss.SSS",
        **{"hoodie.keygen.timebased.output.timezone": "UTC"},
    )
    got = partition_paths(pa.table({"t": [value]}), ["t"], False, False, spec)
    assert got.to_pylist() == [expected]


def test_zone_of_the_parsed_value_without_output_zone() -> None:
    """``getPartitionPath(Object)``: no output zone -> the zone of the parsed DateTime: the
    offset the value carries (``withOffsetParsed``), or the input zone (``withZone``)."""
    out = "yyyy-MM-dd HH:mm ZZ ZZZ"
    table = pa.table({"t": ["2024-01-05 03:04 +0530", "2024-01-05 03:04 Z"]})
    own = _date_string("yyyy-MM-dd HH:mm Z", out)
    assert partition_paths(table, ["t"], False, False, own).to_pylist() == [
        "2024-01-05 03:04 +05:30 +05:30",
        "2024-01-05 03:04 +00:00 UTC",
    ]
    tokyo = _date_string(
        "yyyy-MM-dd HH:mm Z", out, **{"hoodie.keygen.timebased.input.timezone": "Asia/Tokyo"}
    )
    assert partition_paths(table, ["t"], False, False, tokyo).to_pylist() == [
        "2024-01-05 06:34 +09:00 Asia/Tokyo",
        "2024-01-05 12:04 +09:00 Asia/Tokyo",
    ]


def test_null_values_take_javas_default() -> None:
    """``getDefaultPartitionVal``: 1 unit after the epoch; for strings that instant printed
    with the first input format in the input zone (else GMT), then parsed."""
    strings = _date_string("yyyy-MM-dd HH;yyyy", "yyyy/MM/dd/HH")
    t = pa.table({"t": pa.array(["2024-01-05 03", None], pa.string())})
    assert partition_paths(t, ["t"], False, False, strings).to_pylist() == [
        "2024/01/05/03",
        "1970/01/01/00",
    ]
    for ttype, unit in (("SCALAR", "DAYS"), ("EPOCHMILLISECONDS", None)):
        options = {
            "hoodie.keygen.timebased.timestamp.type": ttype,
            "hoodie.keygen.timebased.output.dateformat": "yyyy-MM-dd HH:mm:ss.SSS",
        }
        if unit:
            options["hoodie.keygen.timebased.timestamp.scalar.time.unit"] = unit
        t = pa.table({"t": pa.array([None], pa.int64())})
        got = partition_paths(t, ["t"], False, False, _spec(**options)).to_pylist()
        assert got == ["1970-01-02 00:00:00.000" if unit else "1970-01-01 00:00:00.001"]


@pytest.mark.parametrize(
    ("column", "expected"),
    [
        (pa.array([1704423845], pa.int32()), "2024-01-05 03"),
        (pa.array([1704423845.9], pa.float64()), "2024-01-05 03"),  # Double.longValue
        (pa.array([19727], pa.int64()), "1970-01-01 05"),  # a number is seconds here
        (pa.array([dt.date(2024, 1, 5)], pa.date32()), "1970-01-01 05"),  # epoch day 19727
    ],
)
def test_numeric_types_as_java_reads_them(column: pa.Array, expected: str) -> None:
    """``getPartitionPath(Object)`` takes Integer, Long, Float, Double, BigDecimal and
    LocalDate (its epoch day) as numbers of the unit (UNIX_TIMESTAMP: seconds)."""
    spec = _spec(
        **{
            "hoodie.keygen.timebased.timestamp.type": "UNIX_TIMESTAMP",
            "hoodie.keygen.timebased.output.dateformat": "yyyy-MM-dd HH",
        }
    )
    got = partition_paths(pa.table({"t": column}), ["t"], False, False, spec)
    assert got.to_pylist() == [expected]


def test_mixed_reads_strings() -> None:
    spec = _spec(
        **{
            "hoodie.keygen.timebased.timestamp.type": "MIXED",
            "hoodie.keygen.timebased.input.dateformat": "yyyy-MM-dd",
            "hoodie.keygen.timebased.output.dateformat": "yyyy/MM",
        }
    )
    got = partition_paths(pa.table({"t": ["2024-03-09"]}), ["t"], False, False, spec)
    assert got.to_pylist() == ["2024/03"]


def test_refusals_name_the_pattern_and_value() -> None:
    with pytest.raises(ConfigError, match="'b' is no Joda pattern letter"):
        joda.check_pattern("yyyy-b")
    with pytest.raises(ConfigError, match="unterminated quote"):
        joda.check_pattern("yyyy'T")
    with pytest.raises(ConfigError, match="unknown time zone 'Mars/Base'"):
        _spec(
            **{
                "hoodie.keygen.timebased.timestamp.type": "UNIX_TIMESTAMP",
                "hoodie.keygen.timebased.output.dateformat": "yyyy",
                "hoodie.keygen.timebased.output.timezone": "Mars/Base",
            }
        )
    spec = _date_string("yyyy-MM-dd", "yyyy")
    with pytest.raises(SchemaError, match="'2024-02-30'.*no valid day of month|no valid"):
        partition_paths(pa.table({"t": ["2024-02-30"]}), ["t"], False, False, spec)
    with pytest.raises(SchemaError, match="'2024/02/01' of column 't' matches none"):
        partition_paths(pa.table({"t": ["2024/02/01"]}), ["t"], False, False, spec)
