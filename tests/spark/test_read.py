"""``spark.read.format("hudi_py")`` over the real Apache Hudi fixture tables: rows equal the
golden files (read by hudi-rs), and the query types work through options."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

import hudi_ds
from tests.fixtures import (
    GOLDEN_DIR,
    fixture_names,
    fixture_table,
    require_base_file_reader,
    require_fixtures,
)
from tests.golden import golden_set, row_set

pytestmark = pytest.mark.spark

#: a representative set for read-optimized (snapshot runs over every fixture).
RO_FIXTURES = [
    "cow_v6_complexkeygen_hivestyle",
    "mor_avro_v6_trips_8i3d",
    "mor_parquet_v6_nonpartitioned_rollback",
    "mor_avro_v8_trips_8i3u1d",
    "mor_avro_v9_txns_complex_nometa",
    "mor_avro_v9_timebasedkeygen_nonhivestyle",
]


#: the fixtures whose Spark snapshot ``make test`` compares with the golden rows: one of each
#: kind the Spark read path meets -- every table version (0.x, 6, 8, 9), COW and MOR, Avro and
#: Parquet log blocks, each schema family (the all-types one, trips, txns, timestamp keys, Lance
#: base files), empty, non-partitioned, virtual keys, replacecommits, rollbacks, a metadata
#: table. The rest are ``stress`` cases (``make test-stress``): the Spark layer adds planning
#: and the Arrow -> Spark schema to the embedded reader, which tests/table/test_read_fixtures.py
#: compares with the golden rows on every fixture, so another table of a kind listed here
#: takes the same Spark code path.
SNAPSHOT_DEFAULT = frozenset(
    {
        "cow_0x_partitioned",
        "cow_v6_complexkeygen_hivestyle",
        "cow_v6_empty",
        "cow_v6_simplekeygen_hivestyle_no_metafields",
        "cow_v6_simplekeygen_nonhivestyle_overwritetable",
        "cow_v6_timebasedkeygen_nonhivestyle",
        "mor_avro_v6_trips_8i3d",
        "mor_parquet_v6_nonpartitioned_rollback",
        "cow_v8_complexkeygen_hivestyle",
        "mor_avro_v8_trips_8i3u1d",
        "cow_v9_txns_complex_meta",
        "cow_v9_timebasedkeygen_epochmillis",
        "cow_v9_lance_txns_simple",
        "mor_avro_v9_txns_complex_nometa",
        "mor_avro_v9_timebasedkeygen_nonhivestyle",
        "mor_avro_v9_lance_nonhivestyle",
        "mor_avro_v9_txns_simple_overwrite",
        "mor_avro_v9_nonpartitioned_rollback",
    }
)


def collect(df: Any) -> pa.Table:
    return df.toArrow()


def test_snapshot_default_set_names_fixtures() -> None:
    """A renamed fixture does not drop out of the default run unnoticed."""
    require_fixtures()
    assert set(fixture_names()) >= SNAPSHOT_DEFAULT


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(n, marks=() if n in SNAPSHOT_DEFAULT else pytest.mark.stress)
        for n in fixture_names()
    ],
)
def test_snapshot_equals_golden(spark: Any, name: str, tmp_path_factory) -> None:
    require_base_file_reader(name)
    root = fixture_table(name, tmp_path_factory)
    got = collect(spark.read.format("hudi_py").load(str(root)))
    expected = golden_set(GOLDEN_DIR / f"{name}.snapshot.jsonl")
    assert row_set(got) == expected


@pytest.mark.parametrize("name", RO_FIXTURES)
def test_read_optimized_equals_golden(spark: Any, name: str, tmp_path_factory) -> None:
    root = fixture_table(name, tmp_path_factory)
    df = (
        spark.read.format("hudi_py")
        .option("hoodie.datasource.query.type", "read_optimized")
        .load(str(root))
    )
    assert row_set(collect(df)) == golden_set(GOLDEN_DIR / f"{name}.read_optimized.jsonl")


def test_declared_schema_maps_every_type(spark: Any, tmp_path_factory) -> None:
    root = fixture_table("cow_v6_complexkeygen_hivestyle", tmp_path_factory)
    schema = spark.read.format("hudi_py").load(str(root)).schema
    types = {f.name: f.dataType.simpleString() for f in schema}
    assert types["decimalField"] == "decimal(10,5)"
    assert types["dateField"] == "date"
    assert types["timestampField"] == "timestamp"
    assert types["binaryField"] == "binary"
    assert types["arrayField"] == "array<struct<arr_struct_f1:string,arr_struct_f2:int>>"
    assert types["mapField"].startswith("map<string,struct<")
    assert types["structField"].startswith("struct<field1:string")
    assert list(schema.fieldNames())[:5] == [
        "_hoodie_commit_time",
        "_hoodie_commit_seqno",
        "_hoodie_record_key",
        "_hoodie_partition_path",
        "_hoodie_file_name",
    ]


def _first_and_last_commit(path: str) -> tuple[str, str]:
    commits = hudi_ds.HudiTable(path).timeline.commits()
    return commits[0].requested_time, commits[-1].requested_time


@pytest.mark.parametrize("name", ["mor_avro_v6_trips_8i1u", "mor_avro_v8_trips_8i3u1d"])
def test_incremental_and_time_travel_match_embedded_reader(
    spark: Any, name: str, tmp_path_factory
) -> None:
    root = str(fixture_table(name, tmp_path_factory))
    first, _ = _first_and_last_commit(root)
    for opts in (
        {
            "hoodie.datasource.query.type": "incremental",
            "hoodie.datasource.read.begin.instanttime": first,
        },
        {"as.of.instant": first},
    ):
        got = collect(spark.read.format("hudi_py").options(**opts).load(root))
        expected = hudi_ds.read(root, opts)
        assert row_set(got) == row_set(expected), opts


def test_user_schema_projects_and_casts(spark: Any, tmp_path_factory) -> None:
    root = str(fixture_table("cow_v6_nonpartitioned", tmp_path_factory))
    df = spark.read.format("hudi_py").schema("id int, name string, longField bigint").load(root)
    got = sorted(tuple(r) for r in df.collect())
    t = hudi_ds.read(root, columns=["id", "name", "longField"])
    assert got == sorted(zip(*(t.column(c).to_pylist() for c in t.column_names), strict=True))


def test_filters_return_the_same_rows(spark: Any, tmp_path_factory) -> None:
    root = str(fixture_table("mor_avro_v9_txns_simple_nometa", tmp_path_factory))
    df = spark.read.format("hudi_py").load(root)
    full = df.toArrow().to_pylist()
    for where, keep in (
        ("region = 'us'", lambda r: r["region"] == "us"),
        ("region in ('us', 'eu') and txn_ts > 0", lambda r: r["region"] in ("us", "eu")),
        ("region != 'us'", lambda r: r["region"] != "us"),
    ):
        got = df.where(where).toArrow()
        assert row_set(got) == row_set(pa.Table.from_pylist([r for r in full if keep(r)])), where


def test_bad_read_options_fail_at_load(spark: Any, tmp_path_factory) -> None:
    root = str(fixture_table("cow_v6_nonpartitioned", tmp_path_factory))
    with pytest.raises(Exception, match="hoodie.datasource.query.type"):
        spark.read.format("hudi_py").option("hoodie.datasource.query.type", "bogus").load(
            root
        ).collect()
    with pytest.raises(Exception, match=r"hoodie\.datasource\.query\.typo"):
        spark.read.format("hudi_py").option("hoodie.datasource.query.typo", "x").load(root)
    # keys outside hoodie.* too: a typo of time travel is refused, not a latest snapshot
    with pytest.raises(Exception, match="did you mean 'as.of.instant'"):
        spark.read.format("hudi_py").option("as.of.instan", "20240101000000").load(root)


def test_reused_dataframe_is_not_narrowed_by_an_earlier_filter(spark, tmp_path) -> None:
    """pyspark 4.3 keeps pushed filters across queries of one DataFrame; default is no pushdown."""
    import pyarrow as pa
    from pyspark.sql import functions as F

    import hudi_ds

    path = str(tmp_path / "t")
    rows = pa.table({"id": [f"k{i}" for i in range(50)], "ts": [1] * 50, "dt": ["a", "b"] * 25})
    hudi_ds.write(
        path,
        rows,
        {
            "hoodie.table.name": "reuse",
            "hoodie.datasource.write.recordkey.field": "id",
            "hoodie.datasource.write.partitionpath.field": "dt",
            "hoodie.datasource.write.precombine.field": "ts",
        },
    )
    df = spark.read.format("hudi_py").load(path)
    assert df.filter(F.col("id").isin(["k1", "k2"])).count() == 2
    assert df.filter(F.col("dt") == "a").count() == 25
    assert df.count() == 50
