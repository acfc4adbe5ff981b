"""Time travel by the forms users type: instant times, datetimes, epoch time, ISO-8601, Java's
``yyyy-MM-dd HH:mm:ss[.SSS]`` (Java ``HoodieSqlCommonUtils.formatQueryInstant``, hudi-rs
``timeline::util::format_timestamp``), and the refusals of everything else.

The table (MERGE_ON_READ, UTC timeline, written here): commit 1 inserts a=1, b=1; commit 2
updates a to 2; commit 3 deletes b and inserts c=3. Final: a=2, c=3.
"""

from __future__ import annotations

from datetime import date, datetime, timedelta, timezone
from pathlib import Path
from zoneinfo import ZoneInfo

import pyarrow as pa
import pytest

import hudi_ds
from hudi_ds.errors import ConfigError
from hudi_ds.timeline.instant import instant_time_to_datetime, normalize_instant
from tests.conftest import assert_rows, hudi_rs_table

OPTS = {
    "hoodie.table.name": "tt",
    "hoodie.datasource.write.recordkey.field": "id",
    "hoodie.datasource.write.precombine.field": "ts",
    "hoodie.datasource.write.table.type": "MERGE_ON_READ",
}
COLUMNS = ["id", "ts", "v"]
STATES = [
    [("a", 1, 1), ("b", 1, 1)],
    [("a", 2, 2), ("b", 1, 1)],
    [("a", 2, 2), ("c", 3, 3)],
]
PLUS8 = timezone(timedelta(hours=8))


def _rows(rows: list[tuple[str, int, int]]) -> pa.Table:
    ids, ts, v = zip(*rows, strict=True)
    return pa.table({"id": list(ids), "ts": list(ts), "v": list(v)})


def _three_commits(path: str) -> list[str]:
    first = hudi_ds.write(path, _rows(STATES[0]), OPTS)
    second = hudi_ds.write(path, _rows([("a", 2, 2)]), OPTS)
    third = hudi_ds.write(
        path, _rows([("b", 1, 1)]), {**OPTS, "hoodie.datasource.write.operation": "delete"}
    )
    fourth = hudi_ds.write(path, _rows([("c", 3, 3)]), OPTS)
    assert first and second and third and fourth
    # the delete and the insert of commit "3" are two instants: time travel to the later one
    return [first, second, fourth]


def _forms(instant: str) -> dict[str, object]:
    """Every way a user may name the moment of ``instant`` (a 17-digit UTC instant time)."""
    dt = instant_time_to_datetime(instant, "UTC")
    naive = dt.replace(tzinfo=None)
    millis = int(dt.timestamp() * 1000)
    iso = naive.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3]
    return {
        "instant": instant,
        "naive datetime": naive,
        "aware datetime +08:00": dt.astimezone(PLUS8),
        "epoch millis int": millis,
        "epoch millis digits": str(millis),
        "ISO-8601 Z": iso + "Z",
        "ISO-8601 +08:00": dt.astimezone(PLUS8).isoformat(timespec="milliseconds"),
        "ISO-8601 naive": iso,
        "Java yyyy-MM-dd HH:mm:ss.SSS": iso.replace("T", " "),
        "Spark option text of an aware datetime": str(dt.astimezone(PLUS8)),
    }


def test_time_travel_by_every_form(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    instants = _three_commits(path)
    assert_rows(hudi_rs_table(path), STATES[-1], COLUMNS)
    for instant, state in zip(instants, STATES, strict=True):
        for form, value in _forms(instant).items():
            got = hudi_ds.read(path, {"as.of.instant": value}, columns=COLUMNS)
            try:
                assert_rows(got, state, COLUMNS)
            except AssertionError as e:
                raise AssertionError(f"as.of.instant={value!r} ({form}): {e}") from None
    # the long key and a moment between two commits (1 ms before commit 2: commit 1's rows)
    before_second = instant_time_to_datetime(instants[1], "UTC") - timedelta(milliseconds=1)
    opts = {"hoodie.datasource.read.as.of.instant": before_second}
    assert_rows(hudi_ds.read(path, opts, columns=COLUMNS), STATES[0], COLUMNS)
    # incremental ranges take the same forms: (commit 1, commit 2] by datetimes
    begin = instant_time_to_datetime(instants[0], "UTC")
    incr = {
        "hoodie.datasource.query.type": "incremental",
        "hoodie.datasource.read.begin.instanttime": begin,
        "hoodie.datasource.read.end.instanttime": int(before_second.timestamp() * 1000) + 1,
    }
    assert_rows(hudi_ds.read(path, incr, columns=COLUMNS), [("a", 2, 2)], COLUMNS)


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        ("yesterday", "'yesterday'"),
        ("20241399000000", "'20241399000000'"),  # 14 digits, but month 13
        ("2024-02-30 10:00:00", "'2024-02-30 10:00:00'"),
        ("12345678901234567890123", "'12345678901234567890123'"),  # no epoch unit that long
        (True, "'true'"),
    ],
)
def test_bad_instants_name_key_and_value(tmp_path: Path, value: object, shown: str) -> None:
    path = str(tmp_path / "t")
    hudi_ds.write(path, _rows(STATES[0]), OPTS)
    with pytest.raises(ConfigError) as e:
        hudi_ds.read(path, {"as.of.instant": value})
    msg = str(e.value)
    assert "for option 'as.of.instant'" in msg and shown in msg, msg
    assert "ISO-8601" in msg and "epoch" in msg, msg


@pytest.mark.parametrize("key", ["versionAsOf", "timestampAsOf"])
def test_delta_time_travel_keys_point_to_as_of_instant(tmp_path: Path, key: str) -> None:
    path = str(tmp_path / "t")
    hudi_ds.write(path, _rows(STATES[0]), OPTS)
    with pytest.raises(ConfigError) as e:
        hudi_ds.read(path, {key: "1"})
    msg = str(e.value)
    assert f"unknown option '{key.lower()}'" in msg or f"unknown option '{key}'" in msg, msg
    assert "did you mean 'as.of.instant'?" in msg, msg


def test_forms_and_timeline_zones() -> None:
    """As hudi-rs's ``format_timestamp`` tests: digits by length, zones by the timeline's."""
    sg = ZoneInfo("Asia/Singapore")
    assert normalize_instant("20240315142530") == "20240315142530"
    assert normalize_instant("20240315142530123") == "20240315142530123"
    assert normalize_instant("000") == "000"  # Hudi's "from the beginning"
    assert normalize_instant("00000000000000") == "00000000000000"  # reserved, not a date
    assert normalize_instant("1710512730") == "20240315142530000"  # epoch seconds
    assert normalize_instant("1710512730123") == "20240315142530123"  # millis
    assert normalize_instant(1710512730123) == "20240315142530123"
    assert normalize_instant("1710512730123456") == "20240315142530123"  # micros
    assert normalize_instant("1710512730123456789") == "20240315142530123"  # nanos
    assert normalize_instant("20240315") == "20240315000000000"
    assert normalize_instant("2024-03-15") == "20240315000000000"
    assert normalize_instant(date(2024, 3, 15)) == "20240315000000000"
    assert normalize_instant("2024-03-15 14:25:30") == "20240315142530000"
    assert normalize_instant("2024-03-15t14:25:30.123456789z") == "20240315142530123"
    # epoch time and offsets convert to the timeline's zone; wall-clock forms do not
    assert normalize_instant("1710512730123", timezone=sg) == "20240315222530123"
    assert normalize_instant("2024-03-15T14:25:30Z", timezone=sg) == "20240315222530000"
    aware = datetime(2024, 3, 15, 14, 25, 30, tzinfo=timezone.utc)
    assert normalize_instant(aware, timezone=sg) == "20240315222530000"
    assert normalize_instant(aware.replace(tzinfo=None), timezone=sg) == "20240315142530000"
    assert normalize_instant("2024-03-15 14:25:30", timezone=sg) == "20240315142530000"
