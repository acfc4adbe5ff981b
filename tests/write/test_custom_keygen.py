"""The CUSTOM and TIMESTAMP key generators, and partition fields of non-string types, written
as Java writes them.

* ``trino__hudi_custom_keygen_pt_v8_mor`` (../shared/fixtures/hudi-tables-more): a version-8
  MERGE_ON_READ table Apache Hudi 1.1 wrote through Spark SQL for Trino's tests with
  ``CustomKeyGenerator`` (``hoodie.table.keygenerator.type=CUSTOM``, ``hoodie.table.partition.
  fields=partition_field_country:SIMPLE,partition_field_date:TIMESTAMP``, EPOCHMILLISECONDS
  formatted ``yyyy-MM-dd`` in UTC, hive style), record key ``id``, EVENT_TIME_ORDERING on
  ``ts``; 7 rows (the create script's inserts, ``expected.json``), one per commit. An upsert
  (an update with a greater ``ts``, one with a smaller ``ts`` that must lose, a new key in an
  existing partition, a new key in a new partition) then a delete are checked against a model
  built here from Java's rules (``CustomAvroKeyGenerator.getPartitionPath``: each part made
  by its own generator, joined by ``/``; ``SimpleAvroKeyGenerator`` keys).
* New tables with either key generator, and partition fields of decimal, date, float,
  timestamp and boolean types: partition paths and record keys as Java prints the values
  (``HoodieAvroUtils.getNestedFieldValAsString``), the properties Java records
  (``HoodieTableConfig.getPartitionFieldPropForKeyGenerator``: types kept from version 8;
  ``PERSISTED_CONFIG_LIST``: the ``hoodie.keygen.timebased.*`` options), read back by
  hudi-rs where it reads the table.

hudi-rs 0.5 reads no table whose ``hoodie.table.partition.fields`` holds the CUSTOM types
(version 8 on: "Partition field `f\\:SIMPLE` ... is not present in the table schema"), the
fixture as Java wrote it included, and it fails on the fixture's metadata-table base file (Hudi
1.1's short-cell HFile: "GZIP decompression failed"), which it reads for every version-8 table
declaring a metadata table. So the fixture is compared with hudi-rs on a copy whose properties
name the fields without their types and whose metadata table is dropped as Java drops it
(``HoodieTableMetadataUtil.deleteMetadataTable``): hudi-rs lists the data files.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import hudi_ds
from hudi_ds.api import HudiTable
from hudi_ds.errors import ConfigError
from tests.conftest import hudi_rs_table
from tests.fixtures import expected_checks, unzip_more
from tests.write.fixture_model import read_props, tree_hashes
from tests.write.test_fixture_writes import drop_metadata_table

FIXTURE = "trino__hudi_custom_keygen_pt_v8_mor"
COUNTRY, DATE = "partition_field_country", "partition_field_date"
DATA = ("id", "name", "price", "ts", COUNTRY, DATE)


def _custom_path(row: dict[str, Any]) -> str:
    """Java's path: ``country`` as it is (SIMPLE), the epoch millis as ``yyyy-MM-dd`` in UTC
    (TIMESTAMP, EPOCHMILLISECONDS), hive style."""
    day = dt.datetime.fromtimestamp(row[DATE] / 1000, dt.UTC).strftime("%Y-%m-%d")
    return f"{COUNTRY}={row[COUNTRY]}/{DATE}={day}"


def _rows(table: pa.Table) -> list[str]:
    cols = [*DATA, "_hoodie_record_key", "_hoodie_partition_path"]
    return sorted(json.dumps(r, sort_keys=True) for r in table.select(cols).to_pylist())


def _without_custom_types(root: Path, dest: Path) -> Path:
    """A copy of the table whose hoodie.properties names the partition fields without their
    CUSTOM types and that has no metadata table (what hudi-rs 0.5 can read)."""
    copy = Path(shutil.copytree(root, dest / root.name))
    drop_metadata_table(copy)
    props = copy / ".hoodie" / "hoodie.properties"
    props.write_text(props.read_text().replace("\\:SIMPLE", "").replace("\\:TIMESTAMP", ""))
    return copy


def custom_scenario(root: Path) -> tuple[pa.Table, pa.Table, list[str]]:
    """The upsert, the delete and the rows expected after both, for the CUSTOM fixture at
    ``root``: an update with a newer ``ts`` (wins), one with an older (loses: the table
    records EVENT_TIME_ORDERING), a new key in an existing partition, a new partition; then a
    delete of an existing key and of the new one. The model starts from ``expected.json``."""
    (check,) = [c for c in expected_checks(FIXTURE) if c["columns"] == list(DATA)]
    model = {str(r[0]): dict(zip(DATA, r, strict=True)) for r in check["rows"]}
    schema = HudiTable(str(root)).read().select(list(DATA)).schema
    updates = [
        {**model["1"], "name": "a1-upd", "ts": 2000},  # newer: wins
        {**model["2"], "name": "a2-old", "ts": 10},  # older: loses (EVENT_TIME_ORDERING)
        {**model["7"], "id": 8, "name": "a8", "ts": 1000},  # new key, existing partition
        {"id": 9, "name": "a9", "price": 9.5, "ts": 1000, COUNTRY: "FR", DATE: 1700000000000},
    ]
    deletes = [model["3"], {**model["7"], "id": 8, "name": "a8", "ts": 1000}]
    for u in updates:
        k = str(u["id"])
        if k not in model or model[k]["ts"] <= u["ts"]:
            model[k] = dict(u)
    for d in deletes:
        model.pop(str(d["id"]))
    expected = sorted(
        json.dumps(
            {**r, "_hoodie_record_key": k, "_hoodie_partition_path": _custom_path(r)},
            sort_keys=True,
        )
        for k, r in model.items()
    )
    assert len(expected) == 7
    return (
        pa.Table.from_pylist(updates, schema=schema),
        pa.Table.from_pylist(deletes, schema=schema),
        expected,
    )


def check_custom_fixture(root: Path, expected: list[str], tmp_path: Path) -> None:
    """The CUSTOM fixture after :func:`custom_scenario`'s writes: read by hudi_ds and hudi-rs
    (on a copy without the type suffixes and the metadata table, which hudi-rs 0.5 does not
    read), its new partition a folder of its own as Java names it, its properties kept."""
    assert _rows(hudi_ds.read(str(root))) == expected
    assert (root / f"{COUNTRY}=FR" / f"{DATE}=2023-11-14").is_dir()
    props = read_props(root)
    assert props["hoodie.table.keygenerator.type"] == "CUSTOM"
    assert props["hoodie.table.partition.fields"] == f"{COUNTRY}:SIMPLE,{DATE}:TIMESTAMP"
    copy = _without_custom_types(root, tmp_path / "rs")
    assert _rows(hudi_rs_table(str(copy))) == expected


def test_upsert_and_delete_into_custom_keygen_fixture(tmp_path: Path) -> None:
    root = unzip_more(FIXTURE, tmp_path / "t")
    upsert, delete, expected = custom_scenario(root)
    table = HudiTable(str(root))
    table.upsert(upsert)
    table.delete(delete)
    check_custom_fixture(root, expected, tmp_path)


def test_custom_keygen_fixture_needs_no_types_from_the_writer_but_checks_them(
    tmp_path: Path,
) -> None:
    """The table records the types; a writer's partition field option must name the same
    fields (Java ``HoodieWriterUtils.validateTableConfig``)."""
    root = unzip_more(FIXTURE, tmp_path)
    rows = HudiTable(str(root)).read().select(list(DATA)).slice(0, 1)
    before = tree_hashes(root)
    for asked in (f"{DATE}:TIMESTAMP", f"{COUNTRY}:SIMPLE,{DATE}:SIMPLE"):
        with pytest.raises(ConfigError, match="contradicts the existing table"):
            HudiTable(str(root)).upsert(
                rows, {"hoodie.datasource.write.partitionpath.field": asked}
            )
    assert tree_hashes(root) == before
    # the same fields and types, any case, are the table's own
    HudiTable(str(root)).upsert(
        rows, {"hoodie.datasource.write.partitionpath.field": f"{COUNTRY}:simple,{DATE}:timestamp"}
    )


def _new_table_rows() -> pa.Table:
    return pa.table(
        {
            "id": pa.array([1, 2, 3], pa.int64()),
            "region": ["eu", "us", None],
            "ts": pa.array([1704423845067, 1719753300000, 0], pa.int64()),
            "v": pa.array([1.0, 2.0, 3.0]),
        }
    )


@pytest.mark.parametrize("version", [6, 9])
def test_new_table_with_custom_keygen(version: int, tmp_path: Path) -> None:
    """CUSTOM on a new table: SIMPLE part (null -> __HIVE_DEFAULT_PARTITION__), TIMESTAMP part
    in the Joda output format (``yyyy/MM/dd hh`` spans folders, ``hh`` the clockhour), keys of
    the one key field as they are; version 6 records the field names and the class, 9 the
    ``field:TYPE`` entries and the type (Hudi 1.x)."""
    path = str(tmp_path / "t")
    options = {
        "hoodie.table.name": "t",
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.partitionpath.field": "region:SIMPLE,ts:TIMESTAMP",
        "hoodie.datasource.write.keygenerator.class": "org.apache.hudi.keygen.CustomKeyGenerator",
        "hoodie.keygen.timebased.timestamp.type": "EPOCHMILLISECONDS",
        "hoodie.keygen.timebased.output.dateformat": "yyyy/MM/dd hh",
        "hoodie.keygen.timebased.output.timezone": "UTC",
        "hoodie.datasource.write.precombine.field": "v",
        "hoodie.write.table.version": str(version),
    }
    hudi_ds.write(path, _new_table_rows(), options)
    got = hudi_ds.read(path).select(["id", "_hoodie_record_key", "_hoodie_partition_path"])
    assert sorted(got.to_pylist(), key=lambda r: r["id"]) == [
        {"id": 1, "_hoodie_record_key": "1", "_hoodie_partition_path": "eu/2024/01/05 03"},
        {"id": 2, "_hoodie_record_key": "2", "_hoodie_partition_path": "us/2024/06/30 01"},
        {
            "id": 3,
            "_hoodie_record_key": "3",
            "_hoodie_partition_path": "__HIVE_DEFAULT_PARTITION__/1970/01/01 12",
        },
    ]
    props = read_props(Path(path))
    assert props["hoodie.keygen.timebased.timestamp.type"] == "EPOCHMILLISECONDS"
    assert props["hoodie.keygen.timebased.output.dateformat"] == "yyyy/MM/dd hh"
    assert props["hoodie.keygen.timebased.output.timezone"] == "UTC"
    fields = props["hoodie.table.partition.fields"].replace("\\:", ":")
    if version == 6:
        assert props["hoodie.table.keygenerator.class"].endswith(".CustomKeyGenerator")
        assert fields == "region,ts"
        rs = hudi_rs_table(path).select(["id", "_hoodie_partition_path"])
        assert sorted(rs.to_pylist(), key=lambda r: r["id"]) == sorted(
            got.select(["id", "_hoodie_partition_path"]).to_pylist(), key=lambda r: r["id"]
        )
    else:
        assert props["hoodie.table.keygenerator.type"] == "CUSTOM"
        assert fields == "region:SIMPLE,ts:TIMESTAMP"
    # an upsert of the existing table finds the keys where Java put them; version 6 records
    # no types, so its writers name them again (as Spark writers of Hudi 0.x do)
    update = _new_table_rows().slice(0, 1).set_column(3, "v", pa.array([9.0]))
    again: dict[str, str] = {}
    if version == 6:
        before = tree_hashes(Path(path))
        with pytest.raises(ConfigError, match="without their types"):
            HudiTable(path).upsert(update)
        assert tree_hashes(Path(path)) == before
        again = {"hoodie.datasource.write.partitionpath.field": "region:SIMPLE,ts:TIMESTAMP"}
    HudiTable(path).upsert(update, again)
    after = hudi_ds.read(path).select(["id", "v"]).to_pylist()
    assert sorted(after, key=lambda r: r["id"]) == [
        {"id": 1, "v": 9.0},
        {"id": 2, "v": 2.0},
        {"id": 3, "v": 3.0},
    ]


def test_new_table_with_timestamp_keygen_and_several_key_fields_refused(tmp_path: Path) -> None:
    options = {
        "hoodie.table.name": "t",
        "hoodie.datasource.write.recordkey.field": "id,region",
        "hoodie.datasource.write.partitionpath.field": "ts",
        "hoodie.datasource.write.keygenerator.type": "TIMESTAMP",
        "hoodie.keygen.timebased.timestamp.type": "EPOCHMILLISECONDS",
        "hoodie.keygen.timebased.output.dateformat": "yyyy",
    }
    with pytest.raises(ConfigError, match="TimestampBasedKeyGenerator \\(one key field"):
        hudi_ds.write(str(tmp_path / "t"), _new_table_rows(), options)
    assert not (tmp_path / "t").exists()


def test_new_table_with_timestamp_keygen_type(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    options = {
        "hoodie.table.name": "t",
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.partitionpath.field": "ts",
        "hoodie.datasource.write.keygenerator.type": "TIMESTAMP",
        "hoodie.keygen.timebased.timestamp.type": "EPOCHMILLISECONDS",
        "hoodie.keygen.timebased.output.dateformat": "yyyy-MM-dd EEE",
        "hoodie.datasource.write.hive_style_partitioning": "true",
    }
    hudi_ds.write(path, _new_table_rows(), options)
    parts = sorted(hudi_ds.read(path).column("_hoodie_partition_path").to_pylist())
    assert parts == ["ts=1970-01-01 Thu", "ts=2024-01-05 Fri", "ts=2024-06-30 Sun"]
    props = read_props(Path(path))
    assert props["hoodie.table.keygenerator.class"].endswith(".TimestampBasedKeyGenerator")
    rs = hudi_rs_table(path)
    assert sorted(rs.column("_hoodie_partition_path").to_pylist()) == parts


#: (arrow column, Java's partition value) -- HoodieAvroUtils.getNestedFieldValAsString
#: (strings, integers, booleans and dates were keys before: tests/test_keygen.py and the
#: fixture writes cover them)
TYPED = [
    (pa.array([decimal.Decimal("12.30")], pa.decimal128(10, 2)), "12.30"),
    (pa.array([decimal.Decimal("0.0000001")], pa.decimal128(10, 7)), "1E-7"),
    (pa.array([1.0], pa.float64()), "1.0"),
    (pa.array([1.5e10], pa.float64()), "1.5E10"),
    (pa.array([0.25], pa.float32()), "0.25"),
    (
        pa.array(
            [dt.datetime(2024, 1, 5, 3, 4, 5, 67000, tzinfo=dt.UTC)], pa.timestamp("us", "UTC")
        ),
        "1704423845067000",
    ),
]


@pytest.mark.parametrize(("column", "value"), TYPED, ids=[str(c.type) for c, _ in TYPED])
def test_partition_and_key_fields_of_other_types(
    column: pa.Array, value: str, tmp_path: Path
) -> None:
    """A partition field (and a second key field) of each type: Java's string of the value
    in the path and the complex key; read back by hudi-rs."""
    path = str(tmp_path / "t")
    rows = pa.table({"id": pa.array([1], pa.int64()), "p": column, "v": pa.array([1])})
    options = {
        "hoodie.table.name": "t",
        "hoodie.datasource.write.recordkey.field": "id,p",
        "hoodie.datasource.write.partitionpath.field": "p",
        "hoodie.datasource.write.hive_style_partitioning": "true",
    }
    hudi_ds.write(path, rows, options)
    got = hudi_ds.read(path)
    assert got.column("_hoodie_partition_path").to_pylist() == [f"p={value}"]
    assert got.column("_hoodie_record_key").to_pylist() == [f"id:1,p:{value}"]
    assert (Path(path) / f"p={value}").is_dir()
    rs = hudi_rs_table(path)
    assert rs.column("_hoodie_record_key").to_pylist() == [f"id:1,p:{value}"]
    assert rs.column("p").to_pylist() == got.column("p").to_pylist()
    # an update finds the key: still one row
    HudiTable(path).upsert(rows.set_column(2, "v", pa.array([2])))
    assert hudi_ds.read(path).column("v").to_pylist() == [2]


def test_custom_keygen_with_two_key_fields_writes_complex_keys(tmp_path: Path) -> None:
    """``CustomAvroKeyGenerator``: ComplexAvroKeyGenerator keys for more than one key field,
    which the table's readers and the bucket index then take as complex keys too."""
    path = str(tmp_path / "t")
    options = {
        "hoodie.table.name": "t",
        "hoodie.datasource.write.recordkey.field": "id,region",
        "hoodie.datasource.write.partitionpath.field": "region:simple",
        "hoodie.datasource.write.keygenerator.type": "CUSTOM",
        "hoodie.index.type": "BUCKET",
        "hoodie.bucket.index.num.buckets": "2",
        "hoodie.write.table.version": "8",
    }
    rows = _new_table_rows().slice(0, 2)
    hudi_ds.write(path, rows, options)
    got = hudi_ds.read(path).select(["_hoodie_record_key", "_hoodie_partition_path"])
    assert sorted(got.to_pylist(), key=lambda r: r["_hoodie_record_key"]) == [
        {"_hoodie_record_key": "id:1,region:eu", "_hoodie_partition_path": "eu"},
        {"_hoodie_record_key": "id:2,region:us", "_hoodie_partition_path": "us"},
    ]
    assert read_props(Path(path))["hoodie.table.partition.fields"] == "region:SIMPLE"
    HudiTable(path).upsert(rows.set_column(3, "v", pa.array([7.0, 8.0])))
    after = hudi_ds.read(path).select(["id", "v"]).to_pylist()
    assert sorted(after, key=lambda r: r["id"]) == [{"id": 1, "v": 7.0}, {"id": 2, "v": 8.0}]
