"""Key generators: the partition paths of Java's TimestampBasedAvroKeyGenerator; partition
values holding '/' (nested paths, as Java's key generators write them).

Checked against the rows Apache Hudi stored in the fixtures (``_hoodie_partition_path`` next
to the partition field's value, read straight from the base files with pyarrow), and against
hand-computed values for the zone rules of ``TimestampBasedAvroKeyGenerator.getPartitionPath``.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import hudi_ds
from hudi_ds.config import Options
from hudi_ds.errors import ConfigError, SchemaError, UnsupportedError
from hudi_ds.keygen import KeyGeneratorType, TimestampSpec, partition_paths
from hudi_ds.table_config import TableConfig, parse_properties
from tests.conftest import assert_rows, hudi_rs_table
from tests.fixtures import FIXTURES_DIR, require_fixtures
from tests.write.fixture_model import tree_hashes

#: fixture -> the options its hoodie.properties leaves to the writer
TIMESTAMP_FIXTURES = {
    "cow_v6_timebasedkeygen_nonhivestyle": {
        "hoodie.keygen.timebased.timestamp.type": "DATE_STRING"
    },
    "cow_v9_timebasedkeygen_nonhivestyle": {},
    "cow_v9_timebasedkeygen_epochmillis": {},
    "cow_v9_timebasedkeygen_unixtimestamp": {},
    "mor_avro_v9_timebasedkeygen_nonhivestyle": {},
}


@pytest.mark.parametrize("name", sorted(TIMESTAMP_FIXTURES))
def test_timestamp_partition_paths_equal_javas(name: str, tmp_path: Path) -> None:
    require_fixtures()
    with zipfile.ZipFile(FIXTURES_DIR / f"{name}.zip") as zf:
        zf.extractall(tmp_path)
    root = next(p for p in tmp_path.iterdir() if p.is_dir() and p.name != "__MACOSX")
    cfg = TableConfig(parse_properties((root / ".hoodie" / "hoodie.properties").read_text()))
    spec = TimestampSpec.of(Options.of(TIMESTAMP_FIXTURES[name]), cfg.props)
    field = cfg.partition_fields[0]
    checked = 0
    for f in root.rglob("*.parquet"):
        if ".hoodie" in f.parts:
            continue
        t = pq.read_table(f, partitioning=None)
        if pa.types.is_string(t.schema.field(field).type) != (spec.timestamp_type == "DATE_STRING"):
            continue  # a file of an earlier schema (the v9 fixtures evolve the column's type)
        got = partition_paths(t, [field], cfg.hive_style_partitioning, False, spec)
        assert got.to_pylist() == t.column("_hoodie_partition_path").to_pylist(), f
        checked += t.num_rows
    assert checked >= 4


def _spec(**options: str) -> TimestampSpec:
    return TimestampSpec.of(Options.of(options), {})


@pytest.mark.parametrize("ttype", ["EPOCHMILLISECONDS", "UNIX_TIMESTAMP", "SCALAR"])
def test_numeric_timestamp_field_recorded_as_string_refused(ttype: str) -> None:
    """A table whose schema records a numeric time field as a string (Hudi's Spark SQL
    UPDATE/DELETE leave it so) cannot be written by this key generator, in Java neither."""
    spec = _spec(
        **{
            "hoodie.keygen.timebased.timestamp.type": ttype,
            "hoodie.keygen.timebased.output.dateformat": "yyyy/MM/dd",
        }
    )
    for ok in (pa.int64(), pa.int32(), pa.float64()):
        spec.check_table_field("ts", ok)
    for bad in (pa.string(), pa.large_string()):
        with pytest.raises(UnsupportedError, match=f"partition column 'ts'.*{ttype}"):
            spec.check_table_field("ts", bad)
    date_string = _spec(
        **{
            "hoodie.keygen.timebased.timestamp.type": "DATE_STRING",
            "hoodie.keygen.timebased.input.dateformat": "yyyy-MM-dd",
            "hoodie.keygen.timebased.output.dateformat": "yyyy/MM/dd",
        }
    )
    date_string.check_table_field("ts", pa.string())  # strings are its input


def test_date_string_zones() -> None:
    values = pa.array(["2023-04-04T23:30:00.000+0200", "2023-04-04T23:30:00.000Z"])
    table = pa.table({"ts": values})
    base = {
        "hoodie.keygen.timebased.timestamp.type": "DATE_STRING",
        "hoodie.keygen.timebased.input.dateformat": "yyyy-MM-dd'T'HH:mm:ss.SSSZ",
        "hoodie.keygen.timebased.output.dateformat": "yyyy-MM-dd/HH",
    }
    # no output zone: each value's own wall clock (Java: the parsed DateTime's zone)
    assert partition_paths(table, ["ts"], False, False, _spec(**base)).to_pylist() == [
        "2023-04-04/23",
        "2023-04-04/23",
    ]
    # an output zone: the instant in that zone
    utc = _spec(**base, **{"hoodie.keygen.timebased.output.timezone": "UTC"})
    assert partition_paths(table, ["ts"], True, False, utc).to_pylist() == [
        "ts=2023-04-04/21",
        "ts=2023-04-04/23",
    ]
    tokyo = _spec(**base, **{"hoodie.keygen.timebased.timezone": "Asia/Tokyo"})
    assert partition_paths(table, ["ts"], False, False, tokyo).to_pylist() == [
        "2023-04-05/06",
        "2023-04-05/08",
    ]


def test_date_string_several_formats_and_no_offset() -> None:
    spec = _spec(
        **{
            "hoodie.keygen.timebased.timestamp.type": "DATE_STRING",
            "hoodie.keygen.timebased.input.dateformat": "yyyy-MM-dd HH:mm,yyyyMMdd",
            "hoodie.keygen.timebased.input.timezone": "Asia/Kolkata",
            "hoodie.keygen.timebased.output.timezone": "UTC",
            "hoodie.keygen.timebased.output.dateformat": "yyyy/MM/dd/HH",
        }
    )
    table = pa.table({"d": ["2024-01-01 03:00", "20240102"]})
    # 03:00 IST = 21:30 UTC the day before; 2024-01-02 00:00 IST = 2024-01-01 18:30 UTC
    assert partition_paths(table, ["d"], False, False, spec).to_pylist() == [
        "2023/12/31/21",
        "2024/01/01/18",
    ]
    with pytest.raises(SchemaError, match="'2024/01/02' of column 'd' matches none"):
        partition_paths(pa.table({"d": ["2024/01/02"]}), ["d"], False, False, spec)
    with pytest.raises(SchemaError, match="column 'd' holds a value that is no valid date"):
        partition_paths(pa.table({"d": ["20241340"]}), ["d"], False, False, spec)


def test_a_partition_field_of_the_wrong_type_is_named_with_what_to_do() -> None:
    ts = pa.table({"d": pa.array([1_700_000_000_000_000], pa.timestamp("us", "UTC"))})
    spec = _spec(
        **{
            "hoodie.keygen.timebased.timestamp.type": "DATE_STRING",
            "hoodie.keygen.timebased.input.dateformat": "yyyy-MM-dd",
            "hoodie.keygen.timebased.output.dateformat": "yyyy/MM/dd",
        }
    )
    with pytest.raises(SchemaError) as e:
        partition_paths(ts, ["d"], False, False, spec)
    assert str(e.value) == (
        "partition path field 'd' has type timestamp[us, tz=UTC]; with "
        "hoodie.keygen.timebased.timestamp.type=DATE_STRING its values must be strings: pass "
        "a string column; for a timestamp column use EPOCHMICROSECONDS (EPOCHMILLISECONDS for "
        "a timestamp[ms] column)"
    )
    micros = _spec(
        **{
            "hoodie.keygen.timebased.timestamp.type": "EPOCHMICROSECONDS",
            "hoodie.keygen.timebased.output.dateformat": "yyyy/MM/dd",
        }
    )
    assert partition_paths(ts, ["d"], False, False, micros).to_pylist() == ["2023/11/14"]
    with pytest.raises(SchemaError, match="^partition path field 'b' has type binary; "):
        partition_paths(pa.table({"b": [b"x"]}), ["b"], False, False)


@pytest.mark.parametrize(
    ("ttype", "value", "unit", "expected"),
    [
        ("UNIX_TIMESTAMP", 1705311000, None, "2024-01-15 09"),
        ("EPOCHMILLISECONDS", 1705311000999, None, "2024-01-15 09"),
        ("EPOCHMICROSECONDS", 1705311000999999, None, "2024-01-15 09"),
        ("SCALAR", 19737, "DAYS", "2024-01-15 00"),
        ("SCALAR", 28421850, "MINUTES", "2024-01-15 09"),
        ("SCALAR", 1705311000, None, "2024-01-15 09"),  # the default unit: seconds
    ],
)
def test_numeric_types(ttype: str, value: int, unit: str | None, expected: str) -> None:
    options = {
        "hoodie.keygen.timebased.timestamp.type": ttype,
        "hoodie.keygen.timebased.output.dateformat": "yyyy-MM-dd HH",
    }
    if unit:
        options["hoodie.keygen.timebased.timestamp.scalar.time.unit"] = unit
    got = partition_paths(pa.table({"t": [value]}), ["t"], False, False, _spec(**options))
    assert got.to_pylist() == [expected]


def test_refusals() -> None:
    with pytest.raises(ConfigError, match="'hoodie.keygen.timebased.timestamp.type' is required"):
        _spec(**{"hoodie.keygen.timebased.output.dateformat": "yyyy"})
    with pytest.raises(ConfigError, match="'qq' is no Joda pattern letter"):
        _spec(
            **{
                "hoodie.keygen.timebased.timestamp.type": "UNIX_TIMESTAMP",
                "hoodie.keygen.timebased.output.dateformat": "yyyy-qq",
            }
        )
    spec = _spec(
        **{
            "hoodie.keygen.timebased.timestamp.type": "UNIX_TIMESTAMP",
            "hoodie.keygen.timebased.output.dateformat": "yyyy",
        }
    )
    # a null is Java's getDefaultPartitionVal: 1 (second) after the epoch
    nulls = partition_paths(pa.table({"t": pa.array([1, None])}), ["t"], False, False, spec)
    assert nulls.to_pylist() == ["1970", "1970"]
    with pytest.raises(SchemaError, match="must be numbers"):
        partition_paths(pa.table({"t": ["1"]}), ["t"], False, False, spec)


def test_key_generator_types_and_their_java_classes() -> None:
    kg = KeyGeneratorType
    assert kg.of_class("org.apache.hudi.keygen.TimestampBasedAvroKeyGenerator") is kg.TIMESTAMP
    assert kg.of_class("NonpartitionedAvroKeyGenerator") is kg.NON_PARTITION
    assert kg.of_class("org.apache.hudi.keygen.CustomKeyGenerator") is kg.CUSTOM
    assert kg.of_class("org.apache.hudi.keygen.CustomAvroKeyGenerator") is kg.CUSTOM
    assert kg.of_class("org.apache.hudi.keygen.GlobalDeleteKeyGenerator") is None
    assert kg.named(" complex ") is kg.COMPLEX and kg.named("GLOBAL_DELETE") is None
    assert kg.SIMPLE.java_class == "SimpleKeyGenerator"
    assert kg.java_names() == [
        "ComplexKeyGenerator",
        "CustomKeyGenerator",
        "NonpartitionedKeyGenerator",
        "SimpleKeyGenerator",
        "TimestampBasedKeyGenerator",
    ]


@pytest.mark.parametrize(("hive", "index"), [(False, "SIMPLE"), (True, "BLOOM"), (False, "BUCKET")])
def test_partition_values_with_slash_are_nested_paths(
    hive: bool, index: str, tmp_path: Path
) -> None:
    """With URL encoding off, Java's key generators keep a '/' of a partition value
    (``KeyGenUtils.getPartitionPath``), so ``2018/08/31`` is a 3-level partition path
    (``date=2018/08/31`` hive style): new rows land there, updates of its keys find them
    (no duplicate), a new such value makes a new nested partition, and every reader agrees.
    What would leave the table (a ``..`` segment) is refused, the table unchanged."""
    root = tmp_path / "t"
    opts = {
        "hoodie.table.name": "slashes",
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.partitionpath.field": "date",
        "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.datasource.write.hive_style_partitioning": str(hive).lower(),
        "hoodie.index.type": index,
    }
    if index == "BUCKET":
        opts["hoodie.bucket.index.num.buckets"] = "2"
    first = pa.table({"id": ["a", "b"], "ts": [1, 1], "date": ["2018/08/31", "2018/08/31"]})
    hudi_ds.write(str(root), first, opts)
    prefix = "date=" if hive else ""
    assert (root / f"{prefix}2018" / "08" / "31" / ".hoodie_partition_metadata").is_file()
    again = pa.table({"id": ["a", "c"], "ts": [2, 1], "date": ["2018/08/31", "2018/09/01"]})
    hudi_ds.write(str(root), again, opts)
    path = f"{prefix}2018/08/31"
    want = [("a", 2, "2018/08/31", path), ("b", 1, "2018/08/31", path)]
    want.append(("c", 1, "2018/09/01", f"{prefix}2018/09/01"))
    cols = ["id", "ts", "date", "_hoodie_partition_path"]
    assert_rows(hudi_ds.read(str(root)), want, cols)
    assert_rows(hudi_rs_table(str(root)), want, cols)
    before = tree_hashes(root)
    bad = pa.table({"id": ["d"], "ts": [1], "date": ["2018/../../x"]})
    with pytest.raises(SchemaError, match=r"'2018/\.\./\.\./x' in column 'date'"):
        hudi_ds.write(str(root), bad, opts)
    assert tree_hashes(root) == before


@pytest.mark.parametrize("ttype", ["EPOCHMILLISECONDS", "UNIX_TIMESTAMP", "SCALAR"])
def test_a_timestamp_column_read_in_another_unit_is_refused(ttype: str) -> None:
    """Java keys a timestamp[us] column as epoch micros and reads them in the configured unit:
    partition paths thousands of years away (or an overflow). hudi_ds refuses, naming the
    type that fits."""
    us = pa.table({"d": pa.array([1_767_225_600_000_000], pa.timestamp("us", "UTC"))})
    spec = _spec(
        **{
            "hoodie.keygen.timebased.timestamp.type": ttype,
            "hoodie.keygen.timebased.output.dateformat": "yyyy/MM/dd",
        }
    )
    with pytest.raises(SchemaError, match="'d' is a timestamp.*: use EPOCHMICROSECONDS"):
        partition_paths(us, ["d"], False, False, spec)
    ms = pa.table({"d": pa.array([1_767_225_600_000], pa.timestamp("ms", "UTC"))})
    millis = _spec(
        **{
            "hoodie.keygen.timebased.timestamp.type": "EPOCHMILLISECONDS",
            "hoodie.keygen.timebased.output.dateformat": "yyyy/MM/dd",
        }
    )
    assert partition_paths(ms, ["d"], False, False, millis).to_pylist() == ["2026/01/01"]


def test_epoch_values_out_of_range_for_their_unit_are_named() -> None:
    """Epoch microseconds given to UNIX_TIMESTAMP (seconds) overflow: a SchemaError naming
    the field and the unit, not Arrow's error."""
    table = pa.table({"d": pa.array([1_767_225_600_000_000], pa.int64())})
    spec = _spec(
        **{
            "hoodie.keygen.timebased.timestamp.type": "UNIX_TIMESTAMP",
            "hoodie.keygen.timebased.output.dateformat": "yyyy/MM/dd",
        }
    )
    with pytest.raises(SchemaError, match="^partition path field 'd' holds values that are no"):
        partition_paths(table, ["d"], False, False, spec)
    # epoch micros read as millis: year 57970, which Java would print; refused too
    millis = _spec(
        **{
            "hoodie.keygen.timebased.timestamp.type": "EPOCHMILLISECONDS",
            "hoodie.keygen.timebased.output.dateformat": "yyyy/MM/dd",
        }
    )
    with pytest.raises(SchemaError, match="outside the years 1-9999"):
        partition_paths(table, ["d"], False, False, millis)
