"""The ``hudi_py`` reader and writer driven directly, without a JVM: planning, pruning, packing,
type mapping and the commit protocol (what Spark would call, in the order it calls it)."""

from __future__ import annotations

import datetime as dt
import decimal
import pickle
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql.datasource import EqualTo, GreaterThan, In, IsNotNull, Not
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    ByteType,
    DateType,
    DecimalType,
    LongType,
    MapType,
    ShortType,
    StringType,
    StructField,
    StructType,
    TimestampNTZType,
    TimestampType,
)

import hudi_ds
from hudi_ds.config import Options
from hudi_ds.errors import ConfigError
from hudi_ds.spark.datasource import HudiDataSource, HudiDataSourceWithPushdown
from hudi_ds.spark.reader import (
    HudiBatchReader,
    HudiInputPartition,
    HudiPushdownReader,
    pack_slices,
    spark_filters_to_hudi,
)
from hudi_ds.spark.types import (
    arrow_to_spark_schema,
    conform_batch,
    read_arrow_schema,
    spark_to_arrow_schema,
)
from tests.fixtures import GOLDEN_DIR, fixture_table
from tests.golden import golden_set, row_set

pytestmark = pytest.mark.spark


def plan(ds: HudiDataSource, filters: list[Any] | None = None) -> list[HudiInputPartition]:
    reader = ds.reader(ds.schema())
    if filters is not None:
        assert isinstance(reader, HudiPushdownReader)
        returned = list(reader.pushFilters(filters))
        assert all(any(r is f for f in filters) for r in returned)
        assert len(returned) == len(filters)  # every filter goes back to Spark
    reader = pickle.loads(pickle.dumps(reader))
    parts = reader.partitions()
    assert isinstance(parts, list)
    return parts  # type: ignore[return-value]


def read_all(ds: HudiDataSource, parts: list[HudiInputPartition]) -> pa.Table:
    schema = ds.schema()
    reader = pickle.loads(pickle.dumps(ds.reader(schema)))
    batches = [b for p in parts for b in reader.read(pickle.loads(pickle.dumps(p)))]
    target = read_arrow_schema(schema)
    assert all(b.schema.equals(target) for b in batches)
    return pa.Table.from_batches(batches, target)


# -- types -------------------------------------------------------------------------------------
def test_type_mapping_round_trip() -> None:
    arrow = pa.schema(
        [
            pa.field("b", pa.int8()),
            pa.field("s", pa.int16()),
            pa.field("d", pa.decimal128(12, 3)),
            pa.field("day", pa.date32()),
            pa.field("ts", pa.timestamp("ms", tz="UTC")),
            pa.field("ntz", pa.timestamp("us")),
            pa.field("bin", pa.large_binary()),
            pa.field("txt", pa.large_string()),
            pa.field("arr", pa.list_(pa.field("element", pa.int64(), False))),
            pa.field("m", pa.map_(pa.string(), pa.struct([("x", pa.float64())]))),
            pa.field("st", pa.struct([pa.field("k", pa.string(), False)]), False),
        ]
    )
    spark = arrow_to_spark_schema(arrow)
    assert [f.dataType for f in spark][:8] == [
        ByteType(),
        ShortType(),
        DecimalType(12, 3),
        DateType(),
        TimestampType(),
        TimestampNTZType(),
        BinaryType(),
        StringType(),
    ]
    assert spark["arr"].dataType == ArrayType(LongType(), True)
    assert all(f.nullable for f in spark)
    back = spark_to_arrow_schema(spark)
    assert back.field("ts").type == pa.timestamp("us", tz="UTC")
    assert back.field("txt").type == pa.string()
    # a batch with the Arrow types casts to exactly what pyspark checks
    batch = pa.RecordBatch.from_pylist(
        [
            {
                "b": 1,
                "s": 2,
                "d": decimal.Decimal("1.500"),
                "day": dt.date(2024, 1, 2),
                "ts": dt.datetime(2024, 1, 2, 3, 4, 5, tzinfo=dt.timezone.utc),
                "ntz": dt.datetime(2024, 1, 2),
                "bin": b"\x00",
                "txt": "x",
                "arr": [1, 2],
                "m": [("k", {"x": 1.0})],
                "st": {"k": "v"},
            }
        ],
        schema=arrow,
    )
    target = read_arrow_schema(spark)
    out = conform_batch(batch, target)
    assert out.schema.equals(target)
    assert out.to_pylist()[0]["ts"] == dt.datetime(2024, 1, 2, 3, 4, 5, tzinfo=dt.timezone.utc)


def test_spark_schema_of_a_map_and_session_timezone_batch() -> None:
    spark = StructType(
        [
            StructField("ts", TimestampType(), False),
            StructField("m", MapType(StringType(), LongType(), False)),
        ]
    )
    target = spark_to_arrow_schema(spark)
    assert target.field("ts").nullable
    batch = pa.RecordBatch.from_pydict(
        {
            "ts": pa.array([0], pa.timestamp("us", tz="America/New_York")),
            "m": pa.array([[("a", 1)]], pa.map_(pa.string(), pa.int64())),
        }
    )
    out = conform_batch(batch, target)
    assert out.schema.equals(target)
    assert out.column(0).to_pylist()[0] == dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)


# -- filters and planning ------------------------------------------------------------------------
def test_filter_translation_keeps_only_safe_filters() -> None:
    schema = pa.schema([("a", pa.string()), ("x", pa.float64()), ("n", pa.int64())])
    got = spark_filters_to_hudi(
        [
            EqualTo(("a",), "v"),
            GreaterThan(("x",), 1.0),  # floats: NaN ordering differs, skipped
            In(("n",), [1, None, 2]),
            Not(EqualTo(("n",), 3)),
            IsNotNull(("a",)),
            EqualTo(("s", "y"), 1),  # nested
            EqualTo(("n",), "not a number"),  # Arrow cannot compare: skipped
        ],
        schema,
    )
    assert got == [
        ("a", "=", "v"),
        ("n", "in", [1, 2]),
        ("n", "!=", 3),
        ("a", "is not null", None),
    ]


def test_reader_class_follows_pushdown(tmp_path_factory) -> None:
    root = str(fixture_table("cow_v6_nonpartitioned", tmp_path_factory))
    ds = HudiDataSource({"path": root})
    assert type(ds.reader(ds.schema())) is HudiBatchReader
    on = HudiDataSource({"path": root, "hudi_py.read.filter.pushdown": "true"})
    assert type(on.reader(on.schema())) is HudiPushdownReader
    off = HudiDataSourceWithPushdown({"path": root, "hudi_py.read.filter.pushdown": "false"})
    assert type(off.reader(off.schema())) is HudiBatchReader
    with pytest.raises(ConfigError, match="hudi_py.read.split.bytez"):
        HudiDataSource({"path": root, "hudi_py.read.split.bytez": "1"}).reader(ds.schema())
    with pytest.raises(ConfigError, match="no table path"):
        HudiDataSource({}).schema()


def test_partition_filters_prune_partitions(tmp_path_factory) -> None:
    root = str(fixture_table("mor_avro_v9_txns_simple_nometa", tmp_path_factory))
    ds = HudiDataSourceWithPushdown({"path": root})
    everything = plan(ds)
    all_parts = {s.partition_path for p in everything for s in p.slices}
    assert len(all_parts) > 1
    parts = plan(ds, [EqualTo(("region",), "us")])
    assert {s.partition_path for p in parts for s in p.slices} == {"region=us"}
    got = read_all(ds, parts)
    assert set(got.column("region").to_pylist()) == {"us"}
    assert got.num_rows == hudi_ds.read(root, filters=[("region", "=", "us")]).num_rows


def test_slices_are_packed_by_size(tmp_path_factory) -> None:
    root = str(fixture_table("mor_avro_v9_txns_simple_nometa", tmp_path_factory))
    one = plan(HudiDataSource({"path": root}))
    assert len(one) == 1  # a tiny table: one task
    each = plan(
        HudiDataSource(
            {"path": root, "hudi_py.read.split.bytes": "1", "hudi_py.read.open.cost.bytes": "1"}
        )
    )
    slices = [s for p in one for s in p.slices]
    assert len(each) == len(slices)
    assert read_all(HudiDataSource({"path": root}), each).num_rows == hudi_ds.read(root).num_rows
    groups = pack_slices(slices, max_bytes=2 * max(s.total_size for s in slices), open_cost=0)
    assert sum(len(g) for g in groups) == len(slices)
    assert 1 < len(groups) < len(slices)


@dataclass(frozen=True)
class _Sized:
    """What pack_slices reads of a file slice."""

    partition_path: str
    file_id: str
    total_size: int


def _loads(groups: list[list[Any]], open_cost: int) -> list[int]:
    return [sum(s.total_size + open_cost for s in g) for g in groups]


def test_pack_slices_spreads_over_the_cores_balanced() -> None:
    mb = 1 << 20
    slices: list[Any] = [
        _Sized(f"p{i % 3}", f"f{i:02d}", (i * 7919 % 23 + 1) * mb) for i in range(40)
    ]
    groups = pack_slices(slices, max_bytes=1 << 30, open_cost=4 * mb, min_groups=4)
    assert len(groups) == 4  # one group would hold them all: min_groups decides
    flat = [s for g in groups for s in g]
    assert sorted(flat, key=lambda s: s.file_id) == sorted(slices, key=lambda s: s.file_id)
    loads = _loads(groups, 4 * mb)
    assert max(loads) - min(loads) <= max(s.total_size for s in slices) + 4 * mb
    # more data than min_groups * max_bytes: the split size decides
    many = pack_slices(slices, max_bytes=64 * mb, open_cost=4 * mb, min_groups=4)
    total = sum(_loads([slices], 4 * mb))
    assert len(many) == -(-total // (64 * mb))
    assert sum(len(g) for g in many) == len(slices)
    # a tiny table stays one task: no group would get open.cost bytes of data
    tiny: list[Any] = [_Sized("p", f"t{i}", 1000) for i in range(5)]
    assert [len(g) for g in pack_slices(tiny, 128 * mb, 4 * mb, min_groups=4)] == [5]
    # never more groups than slices
    two: list[Any] = [_Sized("p", "a", 50 * mb), _Sized("p", "b", 60 * mb)]
    assert sorted(len(g) for g in pack_slices(two, 128 * mb, 4 * mb, min_groups=4)) == [1, 1]
    assert pack_slices([], 128 * mb, 4 * mb, min_groups=4) == []


def test_empty_table_plans_nothing(tmp_path_factory) -> None:
    root = str(fixture_table("cow_v8_empty", tmp_path_factory))
    ds = HudiDataSource({"path": root})
    assert plan(ds) == []
    reader = ds.reader(ds.schema())
    from pyspark.sql.datasource import InputPartition

    assert list(reader.read(InputPartition(None))) == []


# -- bucket pruning --------------------------------------------------------------------------------
def test_record_key_filter_reads_one_file_group_per_partition(tmp_path: Path) -> None:
    from hudi_ds.api import write

    path = str(tmp_path / "t")
    n = 2000
    data = pa.table(
        {
            "id": [f"key-{i:05d}" for i in range(n)],
            "ts": pa.array(range(n), pa.int64()),
            "dt": ["2024-01-01" if i % 2 else "2024-01-02" for i in range(n)],
            "v": [float(i) for i in range(n)],
        }
    )
    opts = {
        "hoodie.table.name": "t",
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.partitionpath.field": "dt",
        "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.bucket.index.num.buckets": "64",
    }
    write(path, data, opts)
    ds = HudiDataSourceWithPushdown({"path": path, **opts})
    all_slices = [s for p in plan(ds) for s in p.slices]
    assert len(all_slices) > 64  # most of the 2 x 64 buckets hold rows
    parts = plan(ds, [EqualTo(("id",), "key-00007"), IsNotNull(("id",))])
    slices = [s for p in parts for s in p.slices]
    assert sorted(s.partition_path for s in slices) == ["2024-01-01", "2024-01-02"]
    got = read_all(ds, parts)
    assert got.column("id").to_pylist() == ["key-00007"]
    # IN: at most one file group per key and partition
    keys = ["key-00001", "key-00002", "key-00003"]
    parts = plan(ds, [In(("id",), keys)])
    assert len([s for p in parts for s in p.slices]) <= 2 * len(keys)
    assert sorted(read_all(ds, parts).column("id").to_pylist()) == keys
    # the writer keeps the bucket count in hoodie.properties: no read option needed
    bare = HudiDataSourceWithPushdown({"path": path})
    assert len([s for p in plan(bare, [EqualTo(("id",), "key-00007")]) for s in p.slices]) == 2
    # a table without it (e.g. written by Java Hudi): nothing is pruned
    props = Path(path) / ".hoodie" / "hoodie.properties"
    props.write_text(
        "\n".join(
            line
            for line in props.read_text().splitlines()
            if not line.startswith("hoodie.bucket.index.")
        )
    )
    unpruned = plan(bare, [EqualTo(("id",), "key-00007")])
    assert len([s for p in unpruned for s in p.slices]) == len(all_slices)


def test_auto_registration_module() -> None:
    import pyspark_hudi_py

    assert pyspark_hudi_py.DefaultSource is HudiDataSource
    assert pyspark_hudi_py.DefaultSource.name() == "hudi_py"


def test_planning_lists_through_the_metadata_table(tmp_path_factory) -> None:
    """The driver plans through the table's metadata table unless hoodie.metadata.enable=false
    (then it lists the storage); both plans read the same rows."""
    name = "mor_avro_v9_txns_simple_meta"
    root = str(fixture_table(name, tmp_path_factory))
    got = {}
    for enable in ("true", "false"):
        ds = HudiDataSource({"path": root, "hoodie.metadata.enable": enable})
        reader = ds.reader(ds.schema())
        assert isinstance(reader, HudiBatchReader)
        table, _ = reader.plan()
        assert (table.metadata_reader(Options.of(reader.read_options())) is not None) == (
            enable == "true"
        )
        got[enable] = row_set(read_all(ds, plan(ds)))
    assert got["true"] == got["false"] == golden_set(GOLDEN_DIR / f"{name}.snapshot.jsonl")
