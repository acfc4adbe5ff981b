"""``hudi_ds.spark.read_table``: plain Parquet file slices read by Spark's own reader, the rest
merged by hudi_ds -- the same rows, schema and column order as ``spark.read.format("hudi_py")``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import hudi_ds
from hudi_ds.errors import ConfigError
from hudi_ds.spark import HudiTable, read_table
from hudi_ds.spark.options import SliceRestriction, SparkConfig
from tests.builders import options, sorted_rows, trips
from tests.conftest import hudi_rs_table
from tests.fixtures import GOLDEN_DIR, fixture_table
from tests.golden import golden_set, row_set

pytestmark = pytest.mark.spark

RO = {"hoodie.datasource.query.type": "read_optimized"}
#: partitioned fixture tables, COW and MOR, versions 6 and 9 (MOR ones with log files)
FIXTURES = [
    "cow_v6_simplekeygen_nonhivestyle",
    "cow_v9_txns_simple_meta",
    "mor_avro_v6_trips_8i3d",
    "mor_avro_v9_txns_simple_meta",
]


def assert_same(got: Any, expected: Any, *, key: str | None = "id") -> pa.Table:
    """``got`` and ``expected`` (DataFrames) have the same schema and the same rows (as a
    multiset: a row read twice fails); ``key`` appears once per row."""
    assert got.schema == expected.schema
    g, e = got.toArrow(), expected.toArrow()
    assert g.schema == e.schema
    assert row_set(g) == row_set(e)
    if key is not None and key in g.column_names:
        sorted_rows(g, [key])  # fails on a key read twice
    return g


def hudi_py(spark: Any, path: str, opts: dict[str, str] | None = None) -> Any:
    return spark.read.format("hudi_py").options(**(opts or {})).load(path)


def direct_files(df: Any) -> list[str]:
    """The files Spark's Parquet reader reads for ``df`` (not those of the merged part)."""
    return [f for f in df.inputFiles() if f.endswith(".parquet")]


@pytest.fixture(scope="module")
def tables(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[str, list[str]]]:
    """A COW and a MOR table partitioned by city, with ``_hoodie_is_deleted`` rows; the MOR
    one compacted after its second commit, so its third leaves one partition's slices with
    log files and the other's base-only. Values: (path, commit instants)."""
    root = tmp_path_factory.mktemp("direct")
    out = {}
    for kind in ("COPY_ON_WRITE", "MERGE_ON_READ"):
        path = str(root / kind)
        opts = options(
            "t",
            kind,
            partition="city",
            buckets=2,
            **{"hoodie.compact.inline": "true", "hoodie.compact.inline.max.delta.commits": "2"},
        )
        instants = [
            hudi_ds.write(path, trips(range(12), 1, deleted=False), opts),
            hudi_ds.write(path, trips([1, 2, 3], 2, deleted=True), opts),
            hudi_ds.write(path, trips([5, 7, 9, 20], 3, city="sf", deleted=False), opts),
        ]
        out[kind] = (path, [i for i in instants if i])
    return out


@pytest.mark.parametrize("kind", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_queries_equal_hudi_py(spark: Any, tables: dict, kind: str) -> None:
    path, instants = tables[kind]
    first, second = instants[0], instants[1]
    incremental = {"hoodie.datasource.query.type": "incremental"}
    queries = [{}, {**incremental, "hoodie.datasource.read.begin.instanttime": first}]
    if kind == "COPY_ON_WRITE":  # time travel to base files (MOR's first commit: logs only)
        queries.append({"as.of.instant": first})
    else:  # a COW table's read-optimized query is its snapshot
        queries += [
            RO,
            {
                **incremental,
                "hoodie.datasource.read.begin.instanttime": "000",
                "hoodie.datasource.read.end.instanttime": second,
            },
        ]
    for q in queries:
        got = read_table(spark, path, q)
        assert_same(got, hudi_py(spark, path, q))
    snapshot = read_table(spark, path)
    rows = snapshot.toArrow()
    # deletes dropped, the last upsert applied, and the same rows as hudi-rs reads
    assert sorted(rows.column("id").to_pylist()) == sorted(f"t{i}" for i in [0, *range(4, 12), 20])
    cols = ["id", "ts", "city", "fare"]
    assert sorted_rows(rows, cols) == sorted_rows(hudi_rs_table(path), cols)
    assert direct_files(snapshot), "Spark's Parquet reader read no base file"
    if kind == "MERGE_ON_READ":
        t = hudi_ds.HudiTable(path)
        plan = t.plan_read()
        logs = [s for s in plan.slices if s.log_files]
        assert logs and len(logs) < len(plan.slices)  # both kinds of slices in one read
        assert len(direct_files(snapshot)) == len(plan.slices) - len(logs)


def test_columns_filters_and_to_df(spark: Any, tables: dict) -> None:
    path, _ = tables["MERGE_ON_READ"]
    got = read_table(
        spark, path, columns=["id", "fare"], filters=[("city", "=", "sf"), ("fare", ">", 150.0)]
    )
    expected = hudi_py(spark, path).filter("city = 'sf' AND fare > 150").select("id", "fare")
    assert got.columns == ["id", "fare"]
    assert assert_same(got, expected).num_rows > 0
    # partition pruning: only the sf partition's files are opened
    assert all("/sf/" in f for f in direct_files(got))
    nulls = read_table(spark, path, filters=[("city", "not in", ["sf"])])
    assert_same(nulls, hudi_py(spark, path).filter("city NOT IN ('sf')"))
    assert_same(HudiTable.forPath(spark, path).toDF(), hudi_py(spark, path))
    # bad input is refused before anything runs, naming what is wrong
    with pytest.raises(ConfigError, match="nope"):
        read_table(spark, path, filters=[("nope", "=", 1)])
    with pytest.raises(ConfigError, match="nope"):
        read_table(spark, path, columns=["id", "nope"])
    with pytest.raises(ConfigError, match="hoodie.datasource.query.typo"):
        read_table(spark, path, {"hoodie.datasource.query.typo": "snapshot"})
    with pytest.raises(ConfigError, match="internal"):
        read_table(spark, path, {SparkConfig.READ_SLICES.key: "{}"})
    with pytest.raises(ConfigError, match=SparkConfig.READ_SLICES.key):
        SliceRestriction.parse('{"groups": []}')
    r = SliceRestriction(frozenset({"001"}), frozenset({("sf", "f-0")}))
    assert SliceRestriction.parse(r.encode()) == r


@pytest.mark.parametrize("name", FIXTURES)
def test_fixture_tables(spark: Any, name: str, tmp_path_factory: pytest.TempPathFactory) -> None:
    path = str(fixture_table(name, tmp_path_factory))
    for q, golden in (({}, "snapshot"), (RO, "read_optimized")):
        got = assert_same(read_table(spark, path, q), hudi_py(spark, path, q), key=None)
        assert row_set(got) == golden_set(GOLDEN_DIR / f"{name}.{golden}.jsonl")
    assert direct_files(read_table(spark, path, RO))


def evolved_table(path: str) -> dict[str, str]:
    """A COW table whose three partitions' base files hold three schemas: ``nyc`` the first
    (``w`` int32, no ``fare``), ``la`` the second (``w`` widened to int64, still no ``fare``),
    ``sf`` the latest (``fare`` added)."""
    opts = options("t", "COPY_ON_WRITE", partition="city", buckets=1)
    w32 = pa.array([7, 8], pa.int32())
    hudi_ds.write(path, trips([0, 2], 1, city="nyc", fare=None).append_column("w", w32), opts)
    w64 = pa.array([2**40], pa.int64())
    hudi_ds.write(path, trips([4], 2, city="la", fare=None).append_column("w", w64), opts)
    hudi_ds.write(path, trips([1], 3, city="sf").append_column("w", w64), opts)
    return opts


def test_evolved_schema(spark: Any, tmp_path: Path) -> None:
    """Base files written before a column was added (read by Spark: nulls) or before a column
    was widened (merged by hudi_ds) come out in the table schema; the DataFrame keeps showing
    the snapshot of its call, in both halves, after another commit."""
    path = str(tmp_path / "t")
    opts = evolved_table(path)
    df = read_table(spark, path)
    got = assert_same(df, hudi_py(spark, path))
    assert got.schema.field("w").type == pa.int64()
    rows = {r["id"]: (r["fare"], r["w"]) for r in got.to_pylist()}
    assert rows == {"t0": (None, 7), "t2": (None, 8), "t4": (None, 2**40), "t1": (103.0, 2**40)}
    assert sorted(Path(f).parent.name for f in direct_files(df)) == ["la", "sf"]
    upsert = trips([0, 1], 4).append_column("w", pa.array([5, 5], pa.int64()))
    hudi_ds.write(path, upsert, opts)  # rewrites nyc (merged part) and sf (Spark's part)
    assert row_set(df.toArrow()) == row_set(got)
    assert {r["id"]: r["w"] for r in read_table(spark, path).toArrow().to_pylist()}["t0"] == 5


def test_which_files_spark_opens() -> None:
    """Local files unless Spark would read the path as a glob; an object store's only when
    hudi_py.read.direct.object.store says the session's Hadoop file system reads them."""
    from types import SimpleNamespace

    from hudi_ds.spark.direct import _spark_opens

    local = SimpleNamespace(storage=SimpleNamespace(is_local=True))
    remote = SimpleNamespace(storage=SimpleNamespace(is_local=False))
    assert _spark_opens("/t/sf/f.parquet", local, False)
    assert not _spark_opens("/t/a{b}/f.parquet", local, False)
    assert not _spark_opens("/t/10:00/f.parquet", local, False)
    assert not _spark_opens("s3://b/t/sf/f.parquet", remote, False)
    assert _spark_opens("s3://b/t/sf/f.parquet", remote, True)
