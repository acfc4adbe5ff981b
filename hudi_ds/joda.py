"""Joda-Time date patterns (``org.joda.time.format.DateTimeFormat``), formatted and parsed over
whole Arrow arrays: what Hudi's TimestampBasedKeyGenerator prints into partition paths and
reads from DATE_STRING values.

Pattern grammar (``DateTimeFormat.parsePatternTo``; any other ASCII letter is Java's
``IllegalArgumentException: Illegal pattern component``)::

    pattern := (letters | 'quoted text' | '' | other character)*
    letters := a run of one of  G C Y x w e E y D M d a K h H k m s S z Z

    G era (AD)                      C century of era         y / Y year, year of era
    x weekyear (ISO)                w week of weekyear       e day of week (1 = Monday)
    E day of week text (Mon, EEEE Monday)                    D day of year
    M month (MMM Jan, MMMM January)  d day of month          a halfday (AM / PM)
    h clockhour of halfday (1-12)   K hour of halfday (0-11) H hour of day (0-23)
    k clockhour of day (1-24)       m minute   s second      S fraction of second
    z zone short name (zzzz: long)  Z offset +0800 (ZZ +08:00, ZZZ zone id)

Printing: a number is zero-padded to the run's length; ``yy`` / ``xx`` are the last two
digits; ``S`` * n is the fraction of the second truncated to n digits (``appendFractionOf
Second(n, n)``); text is English (the JVM's default locale, as on Hudi's clusters).
Parsing: numbers take up to their field's digits (year 9 unless a number follows, month 2,
day of year 3, fraction n); ``yy`` is a two-digit year in the 100 years from now - 80
(``appendTwoDigitYear(now - 30)``), a longer number when no number follows; text and
literals match in any case; fields start from 1970-01-01T00:00 and are set in Joda's order
(``DateTimeParserBucket.computeMillis``: longer units first, e.g. a day of week moves the
date within its week); ``z`` reads the names Joda knows (UT, UTC, GMT and the US zones).
"""

from __future__ import annotations

import enum
import re
import zoneinfo
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

import pyarrow as pa
import pyarrow.compute as pc

from hudi_ds.errors import ConfigError, SchemaError

_LETTERS = frozenset("GCYxweEyDMdaKhHkmsSzZ")
_MONTHS = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
]
_DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
#: ``DateTimeUtils.getDefaultTimeZoneNames``: the zone names Joda parses (``z``, ``zzzz``)
_ZONE_NAMES = {
    "UTC": "UTC",
    "UT": "UTC",
    "GMT": "UTC",
    "EST": "America/New_York",
    "EDT": "America/New_York",
    "CST": "America/Chicago",
    "CDT": "America/Chicago",
    "MST": "America/Denver",
    "MDT": "America/Denver",
    "PST": "America/Los_Angeles",
    "PDT": "America/Los_Angeles",
}
_MS_PER_DAY = 86_400_000


class Token(enum.Enum):
    """The kinds of pattern pieces."""

    LETTERS = "letters"
    LITERAL = "literal"


def tokens(pattern: str) -> list[tuple[Token, str]]:
    """Split a Joda pattern into letter runs and literal text (quotes resolved).

    Raises:
        ConfigError: an unterminated quote, or a letter Joda does not accept (names it).
    """
    out: list[tuple[Token, str]] = []
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "'":
            j = i + 1
            text = []
            while True:  # '' inside quotes is one quote
                k = pattern.find("'", j)
                if k < 0:
                    raise ConfigError(f"unterminated quote in date format {pattern!r}")
                text.append(pattern[j:k])
                if pattern[k + 1 : k + 2] == "'" and k + 1 > i + 1:
                    text.append("'")
                    j = k + 2
                    continue
                break
            out.append((Token.LITERAL, "'" if k == i + 1 else "".join(text)))
            i = k + 1
        elif c.isascii() and c.isalpha():
            j = i
            while j < len(pattern) and pattern[j] == c:
                j += 1
            if c not in _LETTERS:
                raise ConfigError(
                    f"date format {pattern!r}: {pattern[i:j]!r} is no Joda pattern letter "
                    "(Java: Illegal pattern component)"
                )
            out.append((Token.LETTERS, pattern[i:j]))
            i = j
        else:
            out.append((Token.LITERAL, c))
            i += 1
    return out


def check_pattern(pattern: str) -> None:
    """Validate ``pattern`` as :func:`tokens` does (before anything is written)."""
    tokens(pattern)


# --------------------------------------------------------------------------- civil arithmetic
def _floordiv(a: pa.Array, b: int) -> pa.Array:
    """Floor division by a positive ``b`` (Arrow's integer division truncates toward zero)."""
    q = pc.divide(a, b)
    return pc.if_else(pc.greater(pc.multiply(q, b), a), pc.subtract(q, 1), q)


def _mod(a: pa.Array, b: int) -> pa.Array:
    return pc.subtract(a, pc.multiply(_floordiv(a, b), b))


def _days_from_civil(y: pa.Array, m: pa.Array, d: pa.Array) -> pa.Array:
    """Epoch days of proleptic Gregorian dates (H. Hinnant's ``days_from_civil``)."""
    y, m, d = (pc.cast(v, pa.int64()) for v in (y, m, d))
    y = pc.subtract(y, pc.cast(pc.less_equal(m, 2), pa.int64()))
    era = _floordiv(y, 400)
    yoe = pc.subtract(y, pc.multiply(era, 400))
    mp = _mod(pc.add(m, 9), 12)
    doy = pc.add(pc.divide(pc.add(pc.multiply(mp, 153), 2), 5), pc.subtract(d, 1))
    doe = pc.add(
        pc.subtract(
            pc.add(pc.multiply(yoe, 365), pc.divide(yoe, 4)),
            pc.divide(yoe, 100),
        ),
        doy,
    )
    return pc.subtract(pc.add(pc.multiply(era, 146097), doe), 719468)


def _civil(days: pa.Array) -> tuple[pa.Array, pa.Array, pa.Array]:
    dates = pc.cast(pc.cast(days, pa.int32()), pa.date32())
    return (
        pc.cast(pc.year(dates), pa.int64()),
        pc.cast(pc.month(dates), pa.int64()),
        pc.cast(pc.day(dates), pa.int64()),
    )


def _month_length(y: pa.Array, m: pa.Array) -> pa.Array:
    ny = pc.if_else(pc.equal(m, 12), pc.add(y, 1), y)
    nm = pc.if_else(pc.equal(m, 12), 1, pc.add(m, 1))
    one = pa.repeat(pa.scalar(1, pa.int64()), len(y))
    return pc.subtract(_days_from_civil(ny, nm, one), _days_from_civil(y, m, one))


def _iso_dow(days: pa.Array) -> pa.Array:
    """1 = Monday ... 7 = Sunday (1970-01-01 was a Thursday)."""
    return pc.add(_mod(pc.add(days, 3), 7), 1)


def _iso_week_start(weekyear: pa.Array) -> pa.Array:
    """Epoch day of the Monday of ISO week 1 of ``weekyear`` (the week holding January 4)."""
    n = len(weekyear)
    jan4 = _days_from_civil(
        weekyear, pa.repeat(pa.scalar(1, pa.int64()), n), pa.repeat(pa.scalar(4, pa.int64()), n)
    )
    return pc.subtract(jan4, pc.subtract(_iso_dow(jan4), 1))


def _iso_fields(days: pa.Array) -> tuple[pa.Array, pa.Array]:
    """(weekyear, week of weekyear) of epoch days."""
    dates = pc.cast(pc.cast(days, pa.int32()), pa.date32())
    return pc.cast(pc.iso_year(dates), pa.int64()), pc.cast(pc.iso_week(dates), pa.int64())


# --------------------------------------------------------------------------- printing
def _pad(values: pa.Array, width: int) -> pa.Array:
    s = pc.cast(values, pa.string())
    return pc.utf8_lpad(s, width=width, padding="0") if width > 1 else s


def _take_names(index: pa.Array, names: list[str]) -> pa.Array:
    return pc.take(pa.array(names), pc.cast(index, pa.int64()))


@dataclass(frozen=True)
class _Clock:
    """Wall-clock fields of instants in their zones (what the printers read)."""

    days: pa.Array  # local epoch days
    ms_of_day: pa.Array
    offset_ms: pa.Array  # local - UTC
    zones: pa.Array  # Joda zone ids: "UTC", "+02:00", "Asia/Tokyo"
    utc_ms: pa.Array


def _clock(utc_ms: pa.Array, zones: pa.Array) -> _Clock:
    local = pc.cast(utc_ms, pa.int64())
    for zone in pc.unique(zones).to_pylist():
        rows = pc.equal(zones, zone)
        ts = pc.cast(pc.cast(utc_ms, pa.int64()), pa.timestamp("ms", zone))
        zone_local = pc.cast(pc.local_timestamp(ts), pa.int64())
        local = pc.if_else(rows, zone_local, local)
    return _Clock(
        days=_floordiv(local, _MS_PER_DAY),
        ms_of_day=_mod(local, _MS_PER_DAY),
        offset_ms=pc.subtract(local, utc_ms),
        zones=zones,
        utc_ms=utc_ms,
    )


def _offset_text(offset_ms: pa.Array, colon: bool) -> pa.Array:
    minutes = pc.divide(offset_ms, 60_000)
    sign = pc.if_else(pc.less(minutes, 0), "-", "+")
    a = pc.abs(minutes)
    hh = _pad(pc.divide(a, 60), 2)
    mm = _pad(_mod(a, 60), 2)
    return pc.binary_join_element_wise(sign, hh, ":" if colon else "", mm, "")


def _zone_names(clock: _Clock, long: bool) -> pa.Array:
    """Joda's ``getShortName`` / ``getName``: UTC's, a fixed offset's id, a region's
    abbreviation (tz database, the JDK's for the zones whose abbreviation is a word)."""
    out = pa.nulls(len(clock.zones), pa.string())
    for zone in pc.unique(clock.zones).to_pylist():
        rows = pc.equal(clock.zones, zone)
        if zone == "UTC":
            name: pa.Array | str = "Coordinated Universal Time" if long else "UTC"
        elif zone[:1] in "+-":
            name = zone
        elif long:
            raise ConfigError(
                f"output date format with 'zzzz' in zone {zone!r}: the JDK's long zone names "
                "are not reproduced by hudi_ds (UTC and fixed offsets are); use 'z' or 'ZZZ'"
            )
        else:
            ts = pc.cast(clock.utc_ms, pa.timestamp("ms", zone))
            name = pc.strftime(ts, format="%Z")
            numeric = pc.match_substring_regex(name, r"^[+-]")
            if pc.any(pc.and_(rows, numeric)).as_py():
                raise ConfigError(
                    f"output date format with 'z' in zone {zone!r}: the zone has no "
                    "abbreviation in the tz database (the JDK names it differently); use "
                    "'Z', 'ZZ' or 'ZZZ'"
                )
        out = pc.if_else(rows, name, out)
    return out


def _printer(tok: str) -> Callable[[_Clock], pa.Array]:
    """The printer of one letter run (``DateTimeFormat.parsePatternTo``'s builder calls)."""
    c, n = tok[0], len(tok)

    def date_part(f: Callable[[pa.Array], pa.Array]) -> Callable[[_Clock], pa.Array]:
        return lambda k: f(pc.cast(pc.cast(k.days, pa.int32()), pa.date32()))

    def hour(k: _Clock) -> pa.Array:
        return pc.divide(k.ms_of_day, 3_600_000)

    if c in "yY":
        if n == 2:
            return date_part(lambda d: _pad(_mod(pc.cast(pc.year(d), pa.int64()), 100), 2))
        return date_part(lambda d: _pad(pc.year(d), n))
    if c == "x":
        if n == 2:
            return date_part(lambda d: _pad(_mod(pc.cast(pc.iso_year(d), pa.int64()), 100), 2))
        return date_part(lambda d: _pad(pc.iso_year(d), n))
    if c == "C":
        return date_part(lambda d: _pad(pc.divide(pc.cast(pc.year(d), pa.int64()), 100), n))
    if c == "G":
        return lambda k: pa.repeat(pa.scalar("AD"), len(k.days))
    if c == "M":
        if n >= 3:
            names = _MONTHS if n >= 4 else [m[:3] for m in _MONTHS]
            return date_part(lambda d: _take_names(pc.subtract(pc.month(d), 1), names))
        return date_part(lambda d: _pad(pc.month(d), n))
    if c == "d":
        return date_part(lambda d: _pad(pc.day(d), n))
    if c == "D":
        return date_part(lambda d: _pad(pc.day_of_year(d), n))
    if c == "w":
        return date_part(lambda d: _pad(pc.iso_week(d), n))
    if c == "e":
        return lambda k: _pad(_iso_dow(k.days), n)
    if c == "E":
        names = _DAYS if n >= 4 else [d[:3] for d in _DAYS]
        return lambda k: _take_names(pc.subtract(_iso_dow(k.days), 1), names)
    if c == "a":
        return lambda k: pc.if_else(pc.less(hour(k), 12), "AM", "PM")
    if c == "H":
        return lambda k: _pad(hour(k), n)
    if c == "k":  # clockhour of day: 24 for midnight
        return lambda k: _pad(pc.if_else(pc.equal(hour(k), 0), 24, hour(k)), n)
    if c == "K":
        return lambda k: _pad(_mod(hour(k), 12), n)
    if c == "h":  # clockhour of halfday: 12 for 0
        return lambda k: _pad(pc.add(_mod(pc.add(hour(k), 11), 12), 1), n)
    if c == "m":
        return lambda k: _pad(_mod(pc.divide(k.ms_of_day, 60_000), 60), n)
    if c == "s":
        return lambda k: _pad(_mod(pc.divide(k.ms_of_day, 1000), 60), n)
    if c == "S":
        # Fraction printer: the millis scaled to n digits, truncated, zero-padded to n
        def fraction(k: _Clock) -> pa.Array:
            ms = _mod(k.ms_of_day, 1000)
            scaled = (
                pc.divide(pc.multiply(ms, 10**n), 1000) if n < 3 else pc.multiply(ms, 10 ** (n - 3))
            )
            return _pad(scaled, n)

        return fraction
    if c == "Z":
        if n >= 3:
            return lambda k: k.zones
        return lambda k: _offset_text(k.offset_ms, colon=n == 2)
    if c == "z":
        return lambda k: _zone_names(k, long=n >= 4)
    raise ConfigError(f"{tok!r} is no Joda pattern letter")  # tokens() refused it already


def format_instants(pattern: str, utc_ms: pa.Array, zones: pa.Array | str) -> pa.Array:
    """Print the instants ``utc_ms`` (epoch millis) in their ``zones`` (Joda ids: ``UTC``,
    ``+02:00``, region names; one for all rows or one per row) with ``pattern``.

    Raises:
        ConfigError: a pattern Joda refuses, or zone names hudi_ds cannot print (``zzzz`` of
            a region, ``z`` of a zone the tz database names by its offset).
    """
    n = len(utc_ms)
    zone_array = pa.repeat(pa.scalar(zones), n) if isinstance(zones, str) else zones
    clock = _clock(pc.cast(utc_ms, pa.int64()), zone_array)
    parts: list[pa.Array | str] = []
    for kind, text in tokens(pattern):
        parts.append(text if kind is Token.LITERAL else _printer(text)(clock))
    if not parts:
        return pa.repeat(pa.scalar("", pa.string()), n)
    return pc.binary_join_element_wise(*parts, "")


# --------------------------------------------------------------------------- parsing
@dataclass(frozen=True)
class _Field:
    """One letter run of an input pattern: its regex and its place in Joda's set order."""

    letters: str
    regex: str
    order: int


#: Joda's ``SavedField`` order: longer duration first, then longer range
_ORDER = {
    "G": 0,
    "C": 1,
    "y": 2,
    "Y": 2,
    "x": 2,
    "M": 3,
    "w": 4,
    "D": 5,
    "d": 6,
    "e": 7,
    "E": 7,
    "a": 8,
    "H": 9,
    "k": 9,
    "K": 10,
    "h": 10,
    "m": 11,
    "s": 12,
    "S": 13,
    "Z": 14,
    "z": 14,
}
_NUMERIC_MAX = {
    "M": 2,
    "d": 2,
    "H": 2,
    "k": 2,
    "K": 2,
    "h": 2,
    "m": 2,
    "s": 2,
    "w": 2,
    "D": 3,
    "e": 1,
}


def _is_numeric(tok: tuple[Token, str] | None) -> bool:
    """``DateTimeFormat.isNumericToken``."""
    if tok is None or tok[0] is Token.LITERAL:
        return False
    c, n = tok[1][0], len(tok[1])
    return c in "CxyYwedDdhHkKmsS" or (c == "M" and n <= 2)


def _alternation(names: list[str]) -> str:
    return "(?i:" + "|".join(re.escape(x) for x in sorted(names, key=len, reverse=True)) + ")"


def _field(tok: str, next_tok: tuple[Token, str] | None) -> _Field:
    c, n = tok[0], len(tok)
    numeric_next = _is_numeric(next_tok)
    if c in "yYx":
        if n == 2:
            rx = r"\d{2}" if numeric_next else r"[-+]?\d{1,9}"
        else:
            rx = rf"[-+]?\d{{1,{n if numeric_next else 9}}}"
    elif c == "C":
        rx = rf"\d{{1,{n}}}"
    elif c == "M" and n >= 3:
        rx = _alternation(_MONTHS + [m[:3] for m in _MONTHS])
    elif c == "E":
        rx = _alternation(_DAYS + [d[:3] for d in _DAYS])
    elif c == "a":
        rx = "(?i:AM|PM)"
    elif c == "G":
        rx = "(?i:AD|BC|CE|BCE)"
    elif c == "S":
        rx = rf"\d{{1,{n}}}"
    elif c == "Z":
        rx = r"Z|[+-]\d{2}:?\d{2}" if n < 3 else r"[A-Za-z][A-Za-z0-9_+\-]*(?:/[A-Za-z0-9_+\-]+)*"
    elif c == "z":
        rx = "|".join(sorted(_ZONE_NAMES, key=len, reverse=True))
    else:
        rx = rf"\d{{1,{_NUMERIC_MAX[c]}}}"
    return _Field(tok, rx, _ORDER[c])


@dataclass(frozen=True)
class InputPattern:
    """A compiled Joda input pattern: a regex with one group per letter run."""

    pattern: str
    regex: str
    fields: tuple[_Field, ...]

    @classmethod
    def of(cls, pattern: str) -> InputPattern:
        """Compile ``pattern``.

        Raises:
            ConfigError: a pattern Joda refuses.
        """
        toks = tokens(pattern)
        parts: list[str] = []
        fields: list[_Field] = []
        for i, (kind, text) in enumerate(toks):
            if kind is Token.LITERAL:
                parts.append("(?i:" + re.escape(text) + ")")
                continue
            f = _field(text, toks[i + 1] if i + 1 < len(toks) else None)
            parts.append(f"(?P<g{len(fields)}>{f.regex})")
            fields.append(f)
        return cls(pattern, "^" + "".join(parts) + "$", tuple(fields))

    @property
    def has_zone(self) -> bool:
        """Whether a value in this pattern carries its offset or zone."""
        return any(f.letters[0] in "Zz" for f in self.fields)


@dataclass
class _Parsed:
    """Rows matched by one pattern: local date and time, and the zone they carry."""

    days: pa.Array
    ms: pa.Array
    offset_min: pa.Array  # parsed offsets (null: none)
    zone: pa.Array  # parsed zone ids (null: none)


def _int(values: pa.Array) -> pa.Array:
    return pc.cast(pc.utf8_ltrim(values, characters="+"), pa.int64())


def _set_year(p: _Parsed, year: pa.Array) -> None:
    _, m, d = _civil(p.days)
    d = pc.min_element_wise(d, _month_length(year, m))
    p.days = _days_from_civil(year, m, d)


def _set_weekyear(p: _Parsed, weekyear: pa.Array) -> None:
    # Joda BasicWeekyearDateTimeField.set: keeps the week (at most the new year's last) and
    # the day of week
    _, week = _iso_fields(p.days)
    dow = _iso_dow(p.days)
    start = _iso_week_start(weekyear)
    weeks = pc.divide(pc.subtract(_iso_week_start(pc.add(weekyear, 1)), start), 7)
    week = pc.min_element_wise(week, weeks)
    p.days = pc.add(start, pc.add(pc.multiply(pc.subtract(week, 1), 7), pc.subtract(dow, 1)))


def _two_digit_year(v: pa.Array) -> pa.Array:
    # TwoDigitYear with pivot (now - 30): 100 years starting at pivot - 50
    low = datetime.now(UTC).year - 30 - 50
    t = low % 100
    return pc.add(pc.add(v, low - t), pc.if_else(pc.less(v, t), 100, 0))


def _check_range(values: pa.Array, low: int | pa.Array, high: int | pa.Array, what: str) -> None:
    bad = pc.or_(pc.less(values, low), pc.greater(values, high))
    if pc.any(bad).as_py():
        raise SchemaError(f"value {values.filter(bad)[0].as_py()} is no valid {what}")


def _apply(p: _Parsed, f: _Field, text: pa.Array) -> None:
    """Set the field ``f`` of the matched rows to the parsed ``text`` (Joda ``set``)."""
    c, n = f.letters[0], len(f.letters)
    if c in "yY":
        year = _int(text)
        if n == 2:  # two digits: the pivot's century; a longer number is the year itself
            plain = pc.match_substring_regex(text, r"^\d{2}$")
            year = pc.if_else(plain, _two_digit_year(year), year)
        _set_year(p, year)
    elif c == "x":
        wy = _int(text)
        if n == 2:
            plain = pc.match_substring_regex(text, r"^\d{2}$")
            wy = pc.if_else(plain, _two_digit_year(wy), wy)
        _set_weekyear(p, wy)
    elif c == "C":
        y, _, _ = _civil(p.days)
        _set_year(p, pc.add(pc.multiply(_int(text), 100), _mod(y, 100)))
    elif c == "G":
        if pc.any(pc.match_substring_regex(text, "^(?i:BC|BCE)$")).as_py():
            raise SchemaError("dates before the common era (BC) are not supported")
    elif c == "M":
        if n >= 3:
            low = pc.utf8_lower(pc.utf8_slice_codeunits(text, 0, 3))
            month = pc.add(pc.index_in(low, pa.array([m[:3].lower() for m in _MONTHS])), 1)
        else:
            month = _int(text)
        _check_range(month, 1, 12, "month")
        y, _, d = _civil(p.days)
        d = pc.min_element_wise(d, _month_length(y, month))
        p.days = _days_from_civil(y, month, d)
    elif c == "w":
        week = _int(text)
        wy, _ = _iso_fields(p.days)
        start = _iso_week_start(wy)
        weeks = pc.divide(pc.subtract(_iso_week_start(pc.add(wy, 1)), start), 7)
        _check_range(week, 1, weeks, "week of weekyear")
        p.days = pc.add(
            start, pc.add(pc.multiply(pc.subtract(week, 1), 7), pc.subtract(_iso_dow(p.days), 1))
        )
    elif c == "D":
        doy = _int(text)
        y, _, _ = _civil(p.days)
        one = pa.repeat(pa.scalar(1, pa.int64()), len(y))
        jan1 = _days_from_civil(y, one, one)
        _check_range(
            doy, 1, pc.subtract(_days_from_civil(pc.add(y, 1), one, one), jan1), "day of year"
        )
        p.days = pc.add(jan1, pc.subtract(doy, 1))
    elif c == "d":
        day = _int(text)
        y, m, _ = _civil(p.days)
        _check_range(day, 1, _month_length(y, m), "day of month")
        p.days = _days_from_civil(y, m, day)
    elif c in "eE":
        if c == "E":
            low = pc.utf8_lower(pc.utf8_slice_codeunits(text, 0, 3))
            dow = pc.add(pc.index_in(low, pa.array([d[:3].lower() for d in _DAYS])), 1)
        else:
            dow = _int(text)
        _check_range(dow, 1, 7, "day of week")
        p.days = pc.add(p.days, pc.subtract(dow, _iso_dow(p.days)))
    elif c in "aHkKhmsS":
        _apply_time(p, c, text)
    elif c == "Z":
        if n >= 3:
            p.zone = text
            return
        digits = pc.replace_substring(pc.utf8_slice_codeunits(text, 1), ":", "")
        zulu = pc.equal(pc.utf8_upper(text), "Z")
        hh = pc.cast(pc.if_else(zulu, "0", pc.utf8_slice_codeunits(digits, 0, 2)), pa.int64())
        mm = pc.cast(pc.if_else(zulu, "0", pc.utf8_slice_codeunits(digits, 2, 4)), pa.int64())
        minutes = pc.add(pc.multiply(hh, 60), mm)
        p.offset_min = pc.multiply(minutes, pc.if_else(pc.starts_with(text, "-"), -1, 1))
    elif c == "z":
        p.zone = pc.take(
            pa.array(list(_ZONE_NAMES.values())),
            pc.index_in(pc.utf8_upper(text), pa.array(list(_ZONE_NAMES))),
        )


def _apply_time(p: _Parsed, c: str, text: pa.Array) -> None:
    hour = pc.divide(p.ms, 3_600_000)
    rest = _mod(p.ms, 3_600_000)
    if c == "a":
        pm = pc.equal(pc.utf8_upper(text), "PM")
        hour = pc.add(_mod(hour, 12), pc.if_else(pm, 12, 0))
    elif c == "S":
        digits = pc.utf8_slice_codeunits(pc.utf8_rpad(text, width=3, padding="0"), 0, 3)
        p.ms = pc.add(pc.subtract(p.ms, _mod(p.ms, 1000)), pc.cast(digits, pa.int64()))
        return
    elif c in "ms":
        v = _int(text)
        _check_range(v, 0, 59, "minute" if c == "m" else "second")
        unit = 60_000 if c == "m" else 1000
        old = _mod(pc.divide(p.ms, unit), 60)
        p.ms = pc.add(p.ms, pc.multiply(pc.subtract(v, old), unit))
        return
    else:
        v = _int(text)
        if c == "H":
            _check_range(v, 0, 23, "hour of day")
            hour = v
        elif c == "k":  # 24 is midnight
            _check_range(v, 1, 24, "clockhour of day")
            hour = _mod(v, 24)
        elif c == "K":
            _check_range(v, 0, 11, "hour of halfday")
            hour = pc.add(pc.multiply(pc.divide(hour, 12), 12), v)
        else:  # h: 12 is the halfday's hour 0
            _check_range(v, 1, 12, "clockhour of halfday")
            hour = pc.add(pc.multiply(pc.divide(hour, 12), 12), _mod(v, 12))
    p.ms = pc.add(pc.multiply(hour, 3_600_000), rest)


@dataclass(frozen=True)
class ParsedInstants:
    """Instants parsed from strings (Joda ``DateTimeFormatter.parseDateTime``).

    Attributes:
        utc_ms: epoch millis.
        zones: the zone each value is in (Joda ids): the formatter's zone when it has one,
            else the offset or zone the value carried, else UTC (the JVM zone Hudi's
            clusters run in).
    """

    utc_ms: pa.Array
    zones: pa.Array


def parse_instants(
    values: pa.Array, patterns: list[InputPattern], zone: str | None, name: str
) -> ParsedInstants:
    """Parse the strings ``values`` of column ``name`` with the first of ``patterns`` each one
    matches whole (Joda's ``append(null, parsers)`` takes the longest parse; only a whole
    match parses), as ``HoodieDateTimeParser`` builds its formatter: ``withZone(zone)``
    when an input zone is set, else ``withOffsetParsed()``.

    Raises:
        SchemaError: a value no pattern matches, or an impossible date (names the column).
    """
    n = len(values)
    utc = pa.nulls(n, pa.int64())
    zones = pa.nulls(n, pa.string())
    for pattern in patterns:
        todo = pc.is_null(utc)
        if not pc.any(todo).as_py():
            break
        ok = pc.fill_null(pc.and_(todo, pc.match_substring_regex(values, pattern.regex)), False)
        if not pc.any(ok).as_py():
            continue
        matched = values.filter(ok)
        groups = pc.extract_regex(matched, pattern.regex)
        k = len(matched)
        p = _Parsed(
            days=pa.repeat(pa.scalar(0, pa.int64()), k),
            ms=pa.repeat(pa.scalar(0, pa.int64()), k),
            offset_min=pa.nulls(k, pa.int64()),
            zone=pa.nulls(k, pa.string()),
        )
        order = sorted(range(len(pattern.fields)), key=lambda i: pattern.fields[i].order)
        try:
            for i in order:
                _apply(p, pattern.fields[i], groups.field(f"g{i}"))
        except SchemaError as e:
            raise SchemaError(
                f"partition column '{name}' holds a value that is no valid date for format "
                f"{pattern.pattern!r}: {e}"
            ) from None
        u, z = _to_utc(p, zone, name)
        idx = pc.subtract(pc.cumulative_sum(pc.cast(ok, pa.int64())), 1)
        utc = pc.if_else(ok, pc.take(u, pc.max_element_wise(idx, 0)), utc)
        zones = pc.if_else(ok, pc.take(z, pc.max_element_wise(idx, 0)), zones)
    bad = pc.is_null(utc)
    if pc.any(bad).as_py():
        raise SchemaError(
            f"partition value {values.filter(bad)[0].as_py()!r} of column '{name}' matches "
            f"none of the input date formats {[p.pattern for p in patterns]} "
            "('hoodie.keygen.timebased.input.dateformat')"
        )
    return ParsedInstants(utc, zones)


def _to_utc(p: _Parsed, zone: str | None, name: str) -> tuple[pa.Array, pa.Array]:
    """UTC millis of the parsed wall clocks and the zone of each result."""
    wall = pc.add(pc.multiply(p.days, _MS_PER_DAY), p.ms)
    default = zone or "UTC"
    # a named zone parsed, else the formatter's (or the JVM's) zone
    wall_zones = pc.fill_null(p.zone, default)
    utc = pa.nulls(len(wall), pa.int64())
    for z in pc.unique(wall_zones).to_pylist():
        rows = pc.equal(wall_zones, z)
        if z[:1] not in "+-" and z != "UTC":
            try:
                zoneinfo.ZoneInfo(z)
            except (zoneinfo.ZoneInfoNotFoundError, ValueError):
                raise SchemaError(
                    f"partition column '{name}' names the unknown zone {z!r}"
                ) from None
        ts = pc.cast(wall, pa.timestamp("ms"))
        try:
            local = pc.assume_timezone(ts, timezone=z, ambiguous="earliest", nonexistent="raise")
        except pa.ArrowInvalid as e:  # Joda: IllegalInstantException in a DST gap
            raise SchemaError(
                f"partition column '{name}' holds a time that does not exist in zone {z!r}: {e}"
            ) from None
        utc = pc.if_else(rows, pc.cast(local, pa.int64()), utc)
    with_offset = pc.subtract(wall, pc.multiply(p.offset_min, 60_000))
    utc = pc.coalesce(with_offset, utc)
    if zone:  # DateTime.withZone(iZone)
        return utc, pa.repeat(pa.scalar(zone), len(wall))
    minutes = p.offset_min
    offset_id = pc.if_else(
        pc.equal(minutes, 0), "UTC", _offset_text(pc.multiply(minutes, 60_000), colon=True)
    )
    return utc, pc.coalesce(offset_id, p.zone, pa.scalar("UTC"))


def java_zone(name: str) -> str:
    """A Java zone id as Joda names it (``DateTimeZone.forTimeZone(TimeZone.getTimeZone
    (name))``): ``UTC``/``GMT``/``Z``/``UT`` are UTC, ``GMT+2`` style offsets are
    ``+02:00``, region ids stay.

    Raises:
        ConfigError: a zone id Java would not know (Java silently takes GMT for it).
    """
    n = name.strip()
    if n.upper() in ("UTC", "GMT", "Z", "UT", "ETC/UTC", "ETC/GMT"):
        return "UTC"
    m = re.fullmatch(r"(?:GMT|UTC)?([+-])(\d{1,2}):?(\d{2})?", n)
    if m:
        if int(m.group(2)) == 0 and int(m.group(3) or 0) == 0:
            return "UTC"
        return f"{m.group(1)}{int(m.group(2)):02d}:{m.group(3) or '00'}"
    try:
        zoneinfo.ZoneInfo(n)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        raise ConfigError(
            f"unknown time zone {name!r} (Java's TimeZone.getTimeZone would silently use GMT)"
        ) from None
    return n
