"""``df.write.format("hudi_py")`` into the real Apache Hudi tables of table versions 6, 8 and 9.

The scenario and the independent model of tests/write/fixture_model.py (upsert with updates of
existing keys -- one carrying an older ordering value --, new keys and a new partition; a second
upsert; a delete), run through Spark with the rows spread over two tasks into every fixture
hudi_ds writes (with or without a metadata table), read back by hudi_ds and by hudi-rs with
``hoodie.metadata.enable`` false and true. Refused fixtures fail ``save()`` and stay
byte-for-byte unchanged.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import hudi_ds
from hudi_ds.api import HudiTable
from hudi_ds.services import ServiceContext, compaction
from tests.conftest import hudi_rs_table
from tests.fixtures import more_fixture_names, require_fixtures, unzip_more
from tests.metadata.test_writer import assert_in_step
from tests.write.fixture_model import (
    REFUSED,
    TIMESTAMP_RECORDED_AS_STRING,
    WRITABLE,
    WRITABLE_1X,
    WRITABLE_1X_TIMESTAMP,
    WRITABLE_LANCE,
    Fixture,
    check_merge_mode,
    check_payload,
    data_row_set,
    read_props,
    rows_without_keys,
    scenario,
    tree_hashes,
)
from tests.write.test_custom_keygen import FIXTURE as CUSTOM_FIXTURE
from tests.write.test_custom_keygen import check_custom_fixture, custom_scenario
from tests.write.test_fixture_writes import unzip
from tests.write.test_matrix import assert_no_meta_values
from tests.write.test_more_fixture_writes import MORE_WRITABLE, starting_rows

pytestmark = pytest.mark.spark


def _save(spark: Any, rows: Any, root: Path, options: dict[str, str]) -> None:
    df = spark.createDataFrame(rows).repartition(2)
    df.write.format("hudi_py").mode("append").options(**options).save(str(root))


_TXNS_MDT = dict(
    keys=("txn_id",), ordering="txn_ts", change="merchant_name", event_time=True, hive=True
)
#: the Hudi 1.x fixtures with a metadata table hudi_ds writes (keeping the metadata table in
#: step; tests/metadata/test_writer.MDT_FIXTURES_1X), beside the timestamp-keygen ones of
#: WRITABLE_1X_TIMESTAMP: their hoodie.properties as the model needs them
WRITABLE_1X_MDT: dict[str, Fixture] = {
    "mor_avro_v8_trips_8i3u1d": Fixture(
        keys=("uuid",),
        parts=("city",),
        keygen="simple",
        hive=True,
        ordering="ts",
        change="rider",
        new_partition="new_city",
        event_time=True,
    ),
    "mor_avro_v9_nonpartitioned_rollback": Fixture(
        **_TXNS_MDT,  # type: ignore[arg-type]
        parts=(),
        keygen="nonpartitioned",
    ),
}
for _t in ("cow", "mor_avro"):
    WRITABLE_1X_MDT[f"{_t}_v9_txns_simple_meta"] = Fixture(
        **_TXNS_MDT,  # type: ignore[arg-type]
        parts=("region",),
        keygen="simple",
        new_partition="new_region",
    )
    WRITABLE_1X_MDT[f"{_t}_v9_txns_complex_meta"] = Fixture(
        **{**_TXNS_MDT, "keys": ("txn_id", "account_id")},  # type: ignore[arg-type]
        parts=("region",),
        keygen="complex",
        new_partition="new_region",
    )
    WRITABLE_1X_MDT[f"{_t}_v9_txns_nonpart_meta"] = Fixture(
        **_TXNS_MDT,  # type: ignore[arg-type]
        parts=(),
        keygen="nonpartitioned",
    )
    WRITABLE_1X_MDT[f"{_t}_v9_txns_simple_overwrite"] = Fixture(
        **{**_TXNS_MDT, "hive": False},  # type: ignore[arg-type]
        parts=("region",),
        keygen="simple",
        new_partition="new_region",
    )

#: every fixture hudi_ds writes, of every table version
ALL_WRITABLE: dict[str, Fixture] = {
    **WRITABLE,
    **WRITABLE_1X,
    **WRITABLE_1X_TIMESTAMP,
    **WRITABLE_1X_MDT,
    **WRITABLE_LANCE,
}

#: run by default: each kind of v6 fixture once and the 1.x ones the default run always
#: covered, plus one of each further kind (table version x table type x metadata table x key generator, meta
#: fields or not, replaced file groups); the rest are ``stress`` cases (``make test-stress``;
#: each costs 1.5-3 s of Spark writes): tests/write/test_fixture_writes.py and
#: tests/write/test_more_fixture_writes.py run the same scenario embedded on every one of
#: them, and what Spark adds -- the rows spread over two tasks of one instant, the data
#: source's options and types -- takes the same path on another table of a kind listed here
DEFAULT_RUN = frozenset(
    {
        # v6: each key generator / layout kind once, COW or MOR (Parquet and Avro log blocks),
        # each table type on several kinds; their other table type is a stress case
        "cow_v6_complexkeygen_hivestyle",
        "cow_v6_nonpartitioned",
        "cow_v6_simplekeygen_nonhivestyle",
        "cow_v6_timebasedkeygen_nonhivestyle",
        "mor_parquet_v6_empty",
        "mor_parquet_v6_simplekeygen_hivestyle_no_metafields",
        "mor_parquet_v6_simplekeygen_nonhivestyle_overwritetable",
        "mor_parquet_v6_nonpartitioned_rollback",
        "mor_avro_v6_trips_8i1u",
        "mor_avro_v6_trips_8i3d",
        # v8/v9 without a metadata table: COW complex, MOR simple, no meta fields
        "cow_v8_complexkeygen_hivestyle",
        "mor_avro_v8_trips_8i1u",
        "cow_v8_simplekeygen_hivestyle_no_metafields",
        "cow_v9_txns_simple_nometa",
        "mor_avro_v9_txns_complex_nometa",
        # with a metadata table: v8 MOR, v9 COW/MOR, timestamp key generator, replacecommits
        "mor_avro_v8_trips_8i3u1d",
        "cow_v9_txns_complex_meta",
        "mor_avro_v9_txns_nonpart_meta",
        "mor_avro_v9_timebasedkeygen_nonhivestyle",
        "cow_v9_txns_simple_overwrite",
        # Lance base files (pylance): COW partitioned, MOR not hive-style
        "cow_v9_lance_txns_simple",
        "mor_avro_v9_lance_nonhivestyle",
    }
)


def _param(name: str) -> Any:
    return pytest.param(
        name, marks=() if name in DEFAULT_RUN else (pytest.mark.slow, pytest.mark.stress)
    )


def test_every_fixture_is_covered_through_spark() -> None:
    """Each fixture table is written or refused here, and the default run keeps one of each
    kind."""
    require_fixtures()
    from tests.metadata.test_writer import MDT_FIXTURES_1X
    from tests.write.test_fixture_writes import fixture_names

    assert set(WRITABLE_1X_MDT) | set(WRITABLE_1X_TIMESTAMP) == set(MDT_FIXTURES_1X)
    refused = {*REFUSED, *TIMESTAMP_RECORDED_AS_STRING}
    assert sorted(fixture_names("6|8|9")) == sorted({*ALL_WRITABLE, *refused})
    assert set(ALL_WRITABLE) >= DEFAULT_RUN
    kinds = {n.split("_v6_")[1] for n in WRITABLE}
    assert kinds == {n.split("_v6_")[1] for n in DEFAULT_RUN if "_v6_" in n}
    assert {"cow", "mor"} == {n[:3] for n in DEFAULT_RUN if "_v6_" in n}


@pytest.mark.parametrize("name", [_param(n) for n in sorted(ALL_WRITABLE)])
def test_spark_upsert_and_delete_into_fixture(spark: Any, name: str, tmp_path: Path) -> None:
    """Upsert, upsert again, delete through ``df.write.format("hudi_py")``; hudi_ds and hudi-rs
    with and without the metadata table read exactly the model's rows. The table keeps its
    version; a metadata table stays in step; a table without meta fields gets null meta
    values."""
    fx = ALL_WRITABLE[name]
    root = unzip(name, tmp_path)
    before = read_props(root)
    if name in WRITABLE:
        check_payload(before)
    else:
        check_merge_mode(before, fx)
    has_mdt = (root / ".hoodie" / "metadata").is_dir()
    sc = scenario(name, fx, HudiTable(str(root)).read())
    options = dict(fx.options)
    _save(spark, sc.upsert, root, options)
    _save(spark, sc.upsert2, root, options)
    _save(spark, sc.delete, root, {**options, "hoodie.datasource.write.operation": "delete"})
    assert data_row_set(hudi_ds.read(str(root))) == sc.expected
    for mdt in ("false", "true"):
        got = hudi_rs_table(str(root), {"hoodie.metadata.enable": mdt})
        assert data_row_set(got) == sc.expected, f"hudi-rs, hoodie.metadata.enable={mdt}"
    assert read_props(root)["hoodie.table.version"] == before["hoodie.table.version"]
    if has_mdt:
        assert_in_step(root)
    if not fx.meta_fields:
        assert_no_meta_values(root)


@pytest.mark.parametrize(
    ("name", "version"),
    [*((n, None) for n in sorted(MORE_WRITABLE)), ("trino__hudi_non_part_cow", "9")],
)
def test_spark_upsert_and_delete_into_more_fixture(
    spark: Any, name: str, version: str | None, tmp_path: Path
) -> None:
    """The second fixture set (hudi-tables-more) through ``df.write.format("hudi_py")``: the
    same scenario as the embedded API's (tests/write/test_more_fixture_writes.py), read back
    by hudi_ds and by hudi-rs with and without the metadata table; tables below version 6
    upgraded by the first ``save()`` (to 9 when ``hoodie.write.table.version`` asks)."""
    # upgraded to 1.x, a table with an ordering field merges by event time (Hudi 1.x's
    # upgrade handlers infer EVENT_TIME_ORDERING from it): the older update loses
    fx = dataclasses.replace(MORE_WRITABLE[name], event_time=bool(version))
    root = unzip_more(name, tmp_path / "t")
    start = starting_rows(name, root, tmp_path)
    sc = scenario(name, fx, start, golden=start.to_pylist())
    options = dict(fx.options)
    if version:
        options["hoodie.write.table.version"] = version
    _save(spark, sc.upsert, root, options)
    _save(spark, sc.upsert2, root, options)
    _save(spark, sc.delete, root, {**options, "hoodie.datasource.write.operation": "delete"})
    assert data_row_set(hudi_ds.read(str(root))) == sc.expected
    if name == "trino__stock_ticks_mor":
        # hudi-rs 0.5 reads log blocks of version 3 only, and Hudi 0.10's log holds a version-1
        # block until a compaction rewrites its file group (Spark batch writes do not compact
        # inline, as Hudi's data source): compact, then compare
        ctx = ServiceContext.open(str(root))
        instant = compaction.schedule_compaction(ctx)
        assert instant is not None
        compaction.run_compaction(ctx, instant)
        assert data_row_set(hudi_ds.read(str(root))) == sc.expected
    for mdt in ("false", "true"):
        got = hudi_rs_table(str(root), {"hoodie.metadata.enable": mdt})
        assert data_row_set(got) == sc.expected, f"hudi-rs, hoodie.metadata.enable={mdt}"
    assert int(read_props(root)["hoodie.table.version"]) == int(version or 6) or (
        version is None and name == "trino__hudi_stock_ticks_mor"  # version 8 kept
    )


def test_spark_upsert_and_delete_into_custom_keygen_fixture(spark: Any, tmp_path: Path) -> None:
    """The CUSTOM key generator's fixture through ``df.write.format("hudi_py")``: the scenario
    of tests/write/test_custom_keygen.py, the same rows read back."""
    root = unzip_more(CUSTOM_FIXTURE, tmp_path / "t")
    upsert, delete, expected = custom_scenario(root)
    _save(spark, upsert, root, {})
    _save(spark, delete, root, {"hoodie.datasource.write.operation": "delete"})
    check_custom_fixture(root, expected, tmp_path)


def test_every_more_fixture_is_written_through_spark() -> None:
    require_fixtures()
    assert {*MORE_WRITABLE, CUSTOM_FIXTURE} == set(more_fixture_names())


def _refused_cases() -> list[Any]:
    """(fixture, operation, error pattern, options): every refused fixture, the upsert and
    (where Java refuses it too) the delete."""
    cases = [(n, op, m, o) for n, (m, o) in REFUSED.items() for op in ("upsert", "delete")]
    cases += [
        (n, "upsert", f"partition column '{c}'.*Spark SQL", {})
        for n, c in TIMESTAMP_RECORDED_AS_STRING.items()
    ]
    default = {
        "cow_0x_partitioned",
        "cow_v9_timebasedkeygen_epochmillis",
    }
    # the others: make test-stress (tests/write/test_fixture_writes.py refuses each of them
    # embedded; through Spark the refusal takes the same path)
    return [
        pytest.param(
            *c,
            marks=()
            if c[0] in default and c[1] == "upsert"
            else (pytest.mark.slow, pytest.mark.stress),
        )
        for c in sorted(cases, key=lambda c: (c[0], c[1]))
    ]


@pytest.mark.parametrize(("name", "operation", "match", "options"), _refused_cases())
def test_spark_refused_fixture_stays_unchanged(
    spark: Any, name: str, operation: str, match: str, options: dict[str, str], tmp_path: Path
) -> None:
    """Hudi-generated record keys, a timestamp partition column Hudi turned to string:
    ``save()`` fails naming why, and the table stays byte-for-byte unchanged."""
    root = unzip(name, tmp_path)
    before = tree_hashes(root)
    rows = hudi_ds.read(str(root))
    data = rows.drop_columns([c for c in rows.column_names if c.startswith("_hoodie_")])
    data = data.slice(0, 2)
    with pytest.raises(Exception, match=match):
        _save(spark, data, root, {**options, "hoodie.datasource.write.operation": operation})
    assert tree_hashes(root) == before


def test_spark_delete_as_read_from_auto_keyed_fixture(spark: Any, tmp_path: Path) -> None:
    """Hudi-generated record keys: a delete of the rows as read (the DataFrame carries
    _hoodie_record_key / _hoodie_partition_path, as Spark SQL DELETE FROM's does) is a
    DELETE_PREPPED commit; without them it is refused and the table stays unchanged."""
    root = unzip("cow_0x_partitioned", tmp_path)
    rows = hudi_ds.read(str(root))
    before = tree_hashes(root)
    data = rows.drop_columns(["_hoodie_record_key", "_hoodie_partition_path"])
    with pytest.raises(Exception, match="as read from the table"):
        _save(spark, data, root, {"hoodie.datasource.write.operation": "delete"})
    assert tree_hashes(root) == before
    victims = rows.slice(0, 2)
    _save(spark, victims, root, {"hoodie.datasource.write.operation": "delete"})
    keys = pa.array(victims.column("_hoodie_record_key").to_pylist())
    expected = data_row_set(rows.filter(pc.invert(pc.is_in(rows["_hoodie_record_key"], keys))))
    assert len(expected) == rows.num_rows - 2
    assert data_row_set(hudi_ds.read(str(root))) == expected
    for mdt in ("false", "true"):
        got = hudi_rs_table(str(root), {"hoodie.metadata.enable": mdt})
        assert data_row_set(got) == expected, f"hudi-rs, hoodie.metadata.enable={mdt}"
    assert_in_step(root)
    commits = sorted((root / ".hoodie").glob("*.commit"))
    assert '"operationType" : "DELETE_PREPPED"' in commits[-1].read_text()


def test_cluster_by_bucket_refuses_non_bucket_table(spark: Any, tmp_path: Path) -> None:
    from hudi_ds.errors import ConfigError
    from hudi_ds.spark import cluster_by_bucket

    root = unzip("cow_v6_simplekeygen_nonhivestyle", tmp_path)
    df = spark.createDataFrame(hudi_ds.read(str(root)).select(["id", "byteField"]))
    with pytest.raises(ConfigError, match="bucket-index tables.*uses the SIMPLE index"):
        cluster_by_bucket(df, {}, path=str(root))


def test_spark_bucket_pruning_only_for_bucket_tables(tmp_path: Path) -> None:
    """A read option naming a bucket count prunes nothing on a table hudi_ds created with
    another index (its fileIds are no buckets)."""
    import pyarrow as pa

    from hudi_ds.table.bucket_pruning import bucket_config
    from hudi_ds.table.table import ReadableTable

    rows = pa.table({"id": list(range(10)), "ts": [1] * 10})
    base = {"hoodie.table.name": "t", "hoodie.datasource.write.recordkey.field": "id"}
    hudi_ds.write(str(tmp_path / "s"), rows, {**base, "hoodie.index.type": "SIMPLE"})
    hudi_ds.write(str(tmp_path / "b"), rows, {**base, "hoodie.bucket.index.num.buckets": "4"})
    asked = {"hoodie.bucket.index.num.buckets": "4"}
    assert bucket_config(ReadableTable(str(tmp_path / "s")), asked) is None
    assert bucket_config(ReadableTable(str(tmp_path / "b")), asked) == (4, ["id"])


@pytest.mark.parametrize(
    "name",
    [
        # the other unit: make test-stress (embedded, both: tests/write/test_fixture_writes.py)
        pytest.param(n, marks=() if "epochmillis" in n else (pytest.mark.slow, pytest.mark.stress))
        for n in sorted(TIMESTAMP_RECORDED_AS_STRING)
    ],
)
def test_spark_delete_from_timestamp_keygen_fixture_recorded_as_string(
    spark: Any, name: str, tmp_path: Path
) -> None:
    """The delete Java still does on these tables (keys built from the input's own schema):
    the column as read (strings) is refused unchanged, the original int64 deletes; hudi_ds and
    hudi-rs with and without the metadata table read the fixture's rows without those keys."""
    column = TIMESTAMP_RECORDED_AS_STRING[name]
    root = unzip(name, tmp_path)
    before = tree_hashes(root)
    rows = hudi_ds.read(str(root))
    data = rows.drop_columns([c for c in rows.column_names if c.startswith("_hoodie_")])
    keys = data["txn_id"].to_pylist()
    single = [k for k in sorted(set(keys)) if keys.count(k) == 1]
    gone = data.filter(pc.is_in(data["txn_id"], pa.array(single[-2:])))
    assert gone.num_rows == 2
    delete = {"hoodie.datasource.write.operation": "delete"}
    with pytest.raises(Exception, match=f"partition path field '{column}' has type string"):
        _save(spark, gone, root, delete)
    assert tree_hashes(root) == before
    epochs = gone.set_column(gone.column_names.index(column), column, gone[column].cast(pa.int64()))
    _save(spark, epochs, root, delete)
    expected = rows_without_keys(name, set(single[-2:]))
    assert data_row_set(hudi_ds.read(str(root))) == expected
    for mdt in ("false", "true"):
        got = hudi_rs_table(str(root), {"hoodie.metadata.enable": mdt})
        assert data_row_set(got) == expected, f"hudi-rs, hoodie.metadata.enable={mdt}"
    assert_in_step(root)
