"""``df.write.format("hudi_py")``: every write is read back by Spark, by ``hudi_ds.read`` and by
hudi-rs, and compared with a plain model of the expected rows.

Inputs are repartitioned round-robin into 4 Spark partitions, so every bucket is written by
several tasks in one instant (the Python data source API cannot shuffle by bucket).
"""

from __future__ import annotations

import datetime as dt
import decimal
from pathlib import Path
from typing import Any

import hudi
import numpy as np
import pyarrow as pa
import pytest

import hudi_ds
from hudi_ds.errors import HudiError, SchemaError
from hudi_ds.index.bucket import bucket_ids_from_record_keys
from hudi_ds.spark import cluster_by_bucket, hudi_errors
from hudi_ds.table.table import ReadableTable
from tests.conftest import assert_rows, hudi_rs_table, table_options

pytestmark = pytest.mark.spark

COLS = ["id", "ts", "dt", "region", "amount", "qty", "note"]


def options(table_type: str, **extra: str) -> dict[str, str]:
    return {
        **table_options("trips", partition="dt", table_type=table_type, buckets=4),
        **extra,
    }


def rows(ids: Any, ts: Any, seed: int = 0) -> pa.Table:
    rng = np.random.default_rng(seed)
    ids = list(ids)
    return pa.table(
        {
            "id": pa.array([f"key-{i:04d}" for i in ids]),
            "ts": pa.array(list(ts), pa.int64()),
            "dt": pa.array([f"2024-01-0{i % 3 + 1}" for i in ids]),
            "region": pa.array(["eu" if i % 2 else "us" for i in ids]),
            "amount": pa.array(np.round(rng.normal(size=len(ids)), 6)),
            "qty": pa.array(rng.integers(0, 1000, len(ids)), pa.int32()),
            "note": pa.array([None if i % 7 == 0 else f"n{i}" for i in ids]),
        }
    )


class Model:
    """Key -> row under EVENT_TIME_ORDERING (the greater ``ts`` wins; ties: the later write)."""

    def __init__(self) -> None:
        self.rows: dict[str, dict[str, Any]] = {}

    def upsert(self, t: pa.Table) -> None:
        for r in t.to_pylist():
            cur = self.rows.get(r["id"])
            if cur is None or r["ts"] >= cur["ts"]:
                self.rows[r["id"]] = r

    def delete(self, keys: list[str]) -> None:
        for k in keys:
            self.rows.pop(k, None)

    def expected(self) -> list[tuple[Any, ...]]:
        return sorted(tuple(r[c] for c in COLS) for r in self.rows.values())


def tuples(t: pa.Table) -> list[tuple[Any, ...]]:
    return sorted(zip(*(t.column(c).to_pylist() for c in COLS), strict=True))


def via_spark(spark: Any, path: str) -> list[tuple[Any, ...]]:
    return tuples(spark.read.format("hudi_py").load(path).select(*COLS).toArrow())


def via_hudi_ds(path: str) -> list[tuple[Any, ...]]:
    return tuples(hudi_ds.read(path, columns=COLS))


def via_hudi_rs(path: str) -> list[tuple[Any, ...]]:
    batches = hudi.HudiTableBuilder.from_base_uri(path).build().read(hudi.HudiReadOptions())
    return tuples(pa.Table.from_batches(batches)) if batches else []


def check(spark: Any, path: str, model: Model) -> None:
    expected = model.expected()
    assert via_hudi_ds(path) == expected
    assert via_spark(spark, path) == expected
    assert via_hudi_rs(path) == expected


def save(spark: Any, data: pa.Table, path: str, opts: dict[str, str], mode: str = "append") -> None:
    df = spark.createDataFrame(data).repartition(4)
    df.write.format("hudi_py").mode(mode).options(**opts).save(path)


def data_files(path: str) -> set[str]:
    root = Path(path)
    return {
        str(p.relative_to(root))
        for p in root.rglob("*")
        if p.is_file()
        and ".hoodie" not in p.relative_to(root).parts
        and (p.suffix == ".parquet" or ".log." in p.name)
    }


def compactions(path: str) -> tuple[list[str], list[str]]:
    """(completed, pending) compaction instants."""
    tl = ReadableTable(path).timeline
    done = [
        i.requested_time for i in tl.commits() if tl.origin_action(i.requested_time) == "compaction"
    ]
    return done, [i.requested_time for i in tl.pending_compactions()]


def committed_files(path: str) -> set[str]:
    table = ReadableTable(path)
    out = set()
    for inst in table.timeline.commits():
        md = table.timeline.read_commit_metadata(inst)
        for stats in (md.partition_to_write_stats if md else {}).values():
            out.update(s.path for s in stats if s.path)
    return out


@pytest.mark.parametrize("table_type", ["MERGE_ON_READ", "COPY_ON_WRITE"])
def test_insert_upsert_delete_overwrite(spark: Any, table_type: str, tmp_path: Path) -> None:
    """MOR: compaction triggers after every delta commit here, yet batch writes compact only with
    ``hoodie.compact.inline=true`` (Hudi's data source: no async compaction without the
    streaming sink's service); the delete carries it."""
    path = str(tmp_path / "t")
    opts = options(table_type, **{"hoodie.compact.inline.max.delta.commits": "1"})
    model = Model()

    first = rows(range(300), [10] * 300, seed=1)
    save(spark, first, path, opts)
    model.upsert(first)
    check(spark, path, model)

    updates = rows(range(0, 100), [20] * 100, seed=2)
    late = rows(range(100, 150), [5] * 50, seed=3)  # older ts: must lose
    new = rows(range(300, 360), [10] * 60, seed=4)
    batch = pa.concat_tables([updates, late, new])
    save(spark, batch, path, opts)
    model.upsert(batch)
    check(spark, path, model)
    if table_type == "MERGE_ON_READ":
        # several tasks wrote log files into the same file group in the last instant
        last = ReadableTable(path).timeline.commits()[-1]
        md = ReadableTable(path).timeline.read_commit_metadata(last)
        per_group: dict[tuple[str, str], int] = {}
        for p, stats in md.partition_to_write_stats.items():
            for s in stats:
                per_group[(p, s.file_id)] = per_group.get((p, s.file_id), 0) + 1
        assert max(per_group.values()) > 1
        assert compactions(path) == ([], [])  # 2 delta commits, trigger 1: none by default

    gone = rows(range(50, 90), [30] * 40, seed=5)
    inline = {"hoodie.compact.inline": "true"} if table_type == "MERGE_ON_READ" else {}
    save(spark, gone, path, {**opts, "hoodie.datasource.write.operation": "delete", **inline})
    model.delete(gone.column("id").to_pylist())
    check(spark, path, model)
    if table_type == "MERGE_ON_READ":
        done, pending = compactions(path)
        assert len(done) == 1 and pending == []  # scheduled and executed in the delete's commit

    fresh = rows(range(1000, 1050), [1] * 50, seed=6)
    save(spark, fresh, path, opts, mode="overwrite")
    model = Model()
    model.upsert(fresh)
    check(spark, path, model)
    assert_no_debris_after_replace(path)


def assert_no_debris_after_replace(path: str) -> None:
    temp = Path(path) / ".hoodie" / ".temp"
    assert not temp.exists() or not any(temp.iterdir())
    assert data_files(path) <= committed_files(path)


def test_bad_options_and_schema_fail_before_writing(spark: Any, tmp_path: Path) -> None:
    path = tmp_path / "t"
    df = spark.createDataFrame(rows(range(10), [1] * 10))
    cases = [
        ({"hoodie.datasource.write.table.type": "BOGUS"}, "hoodie.datasource.write.table.type"),
        ({"hoodie.datasource.write.recordkey.feild": "id"}, "did you mean"),
        ({"hoodie.datasource.write.recordkey.field": "nope"}, "nope"),
        ({"hoodie.datasource.write.precombine.field": "missing_ts"}, "missing_ts"),
        ({"hoodie.bucket.index.num.buckets": "zero"}, "hoodie.bucket.index.num.buckets"),
        ({"hudi_py.read.split.bytez": "1"}, "hudi_py.read.split.bytez"),
        ({"write.batch.sise": "8"}, "did you mean 'write.batch.size'"),
        ({"write.task.max.size": "-5"}, "'write.task.max.size'"),
        ({"hoodie.index.bucket.engine": "CONSISTENT"}, "'CONSISTENT'"),
    ]
    from hudi_ds.spark.writer import HudiBatchWriter

    for n, (extra, match) in enumerate(cases):
        if n < 3:  # through Spark (each refused write costs a data source worker: seconds)
            # refused in the driver's planning worker: its class back through hudi_errors
            with pytest.raises(HudiError, match=match), hudi_errors():
                df.write.format("hudi_py").mode("append").options(
                    **{**options("MERGE_ON_READ"), **extra}
                ).save(str(path))
        else:  # the same driver-side check Spark's writer() runs
            with pytest.raises(Exception, match=match):
                HudiBatchWriter.create(
                    {"path": str(path), **options("MERGE_ON_READ"), **extra}, df.schema, False
                )
        assert not path.exists(), extra
    with pytest.raises(Exception, match="UNSUPPORTED_DATA_SOURCE_SAVE_MODE"):
        df.write.format("hudi_py").options(**options("MERGE_ON_READ")).save(str(path))
    # an existing table: a contradicting option is refused before anything is written
    save(spark, rows(range(10), [1] * 10), str(path), options("MERGE_ON_READ"))
    before = sorted(p.name for p in path.rglob("*"))
    with pytest.raises(Exception, match="hoodie.datasource.write.table.type"):
        df.write.format("hudi_py").mode("append").options(**options("COPY_ON_WRITE")).save(
            str(path)
        )
    with pytest.raises(Exception, match="region"):
        df.drop("region").write.format("hudi_py").mode("append").options(
            **options("MERGE_ON_READ")
        ).save(str(path))
    assert sorted(p.name for p in path.rglob("*")) == before


def test_empty_dataframe_follows_hudi(spark: Any, tmp_path: Path) -> None:
    """An empty DataFrame commits an empty instant (Hudi's hoodie.allow.empty.commit=true);
    with false nothing is committed and a table the write created is removed again."""
    path = tmp_path / "t"
    empty = rows(range(1, 2), [1]).slice(0, 0)
    save(
        spark, empty, str(path), {**options("MERGE_ON_READ"), "hoodie.allow.empty.commit": "false"}
    )
    assert not path.exists()
    save(spark, empty, str(path), options("MERGE_ON_READ"))
    assert len(ReadableTable(str(path)).timeline.commits()) == 1
    save(spark, rows(range(5), [1] * 5), str(path), options("MERGE_ON_READ"))
    save(
        spark, empty, str(path), {**options("MERGE_ON_READ"), "hoodie.allow.empty.commit": "false"}
    )
    assert len(ReadableTable(str(path)).timeline.commits()) == 2
    model = Model()
    model.upsert(rows(range(5), [1] * 5))
    check(spark, str(path), model)


def test_refused_first_write_creates_no_table(spark: Any, tmp_path: Path) -> None:
    """A first write refused in the tasks (a null key) leaves no table."""
    path = tmp_path / "t"
    good = rows(range(10), [1] * 10)
    ids = good.column("id").to_pylist()
    bad = good.set_column(0, "id", pa.array([None, *ids[1:]], pa.string()))
    # refused in an executor's task: hudi_errors gives the worker's error back as its class
    with pytest.raises(SchemaError) as e, hudi_errors():
        save(spark, bad, str(path), options("MERGE_ON_READ"))
    assert str(e.value) == "record key field 'id' holds 1 null value(s)"
    assert not path.exists()
    # the corrected retry may choose other settings (here: another partition column)
    save(spark, good, str(path), options("MERGE_ON_READ", **{PARTITION_KEY: "region"}))
    model = Model()
    model.upsert(good)
    check(spark, str(path), model)


PARTITION_KEY = "hoodie.datasource.write.partitionpath.field"


@pytest.mark.parametrize("table_type", ["MERGE_ON_READ", "COPY_ON_WRITE"])
def test_task_failing_once_commits_exactly_once(
    spark: Any, table_type: str, tmp_path: Path
) -> None:
    path = str(tmp_path / "t")
    opts = options(table_type)
    model = Model()
    first = rows(range(100), [1] * 100)
    save(spark, first, path, opts)
    model.upsert(first)
    more = rows(range(50, 200), [2] * 150, seed=9)
    # partition 1 writes all its data, then fails; its retry succeeds (local[2,2])
    sc = spark.sparkContext
    group = f"fail-once-{table_type}"
    sc.setJobGroup(group, "hudi_py write with one failing task attempt")
    try:
        save(spark, more, path, {**opts, "hudi_py.test.fail.partition": "1"})
    finally:
        sc.setJobGroup("", "")
    tracker = sc.statusTracker()
    failed = 0
    for job in tracker.getJobIdsForGroup(group):
        info = tracker.getJobInfo(job)
        for stage in info.stageIds if info else []:
            st = tracker.getStageInfo(stage)
            failed += st.numFailedTasks if st else 0
    assert failed == 1  # the injected failure happened, once
    model.upsert(more)
    check(spark, path, model)
    assert_clean(path)  # the failed attempt's files were deleted before the commit point


def test_job_failing_leaves_the_table_as_it_was(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    opts = options("MERGE_ON_READ")
    model = Model()
    first = rows(range(100), [1] * 100)
    save(spark, first, path, opts)
    model.upsert(first)
    files = data_files(path)
    failing = {**opts, "hudi_py.test.fail.partition": "2", "hudi_py.test.fail.attempts": "9"}
    with pytest.raises(Exception, match="injected failure"):
        save(spark, rows(range(50, 200), [2] * 150), path, failing)
    check(spark, path, model)
    assert data_files(path) == files
    assert_clean(path)
    # the next write works
    again = rows(range(150, 160), [3] * 10)
    save(spark, again, path, opts)
    model.upsert(again)
    check(spark, path, model)


def assert_clean(path: str) -> None:
    """No file outside the completed commits, no markers, no pending instant."""
    assert data_files(path) == committed_files(path)
    temp = Path(path) / ".hoodie" / ".temp"
    assert not temp.exists() or not any(temp.iterdir())
    table = ReadableTable(path)
    pending = [i for i in table.timeline.instants if not i.is_completed]
    assert pending == []


def test_cluster_by_bucket_puts_each_bucket_in_one_task(spark: Any, tmp_path: Path) -> None:
    from pyspark.sql.functions import spark_partition_id

    path = str(tmp_path / "t")
    opts = options("MERGE_ON_READ", **{"hoodie.bucket.index.num.buckets": "8"})
    data = rows(range(400), [1] * 400)
    df = spark.createDataFrame(data).repartition(4)
    clustered = cluster_by_bucket(df, opts, num_partitions=4)
    placed = clustered.select("id", "dt", spark_partition_id().alias("pid")).toArrow()
    buckets = bucket_ids_from_record_keys(placed.column("id"), ["id"], 8, False)
    where: dict[tuple[str, int], set[int]] = {}
    for d, b, p in zip(
        placed.column("dt").to_pylist(), buckets, placed.column("pid").to_pylist(), strict=True
    ):
        where.setdefault((d, int(b)), set()).add(p)
    assert len(where) == 24
    assert all(len(p) == 1 for p in where.values())
    clustered.write.format("hudi_py").mode("append").options(**opts).save(path)
    model = Model()
    model.upsert(data)
    check(spark, path, model)
    # one new file per file group
    table = ReadableTable(path)
    md = table.timeline.read_commit_metadata(table.timeline.commits()[-1])
    groups = [(p, s.file_id) for p, st in md.partition_to_write_stats.items() for s in st]
    assert len(groups) == len(set(groups)) == 24


def test_spark_types_round_trip(spark: Any, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    df = spark.sql(
        """
        select cast(id as string) as id, id as ts, cast(id % 2 as string) as p,
               cast(id as byte) as b, cast(id * 100 as short) as s, cast(id as int) as i,
               cast(id * 1.25 as decimal(10, 2)) as d, cast(id as float) as f,
               date_add(date'2024-01-01', cast(id as int)) as day,
               timestamp'2024-01-01 00:00:00' + make_interval(0, 0, 0, 0, 0, 0, id) as t,
               unhex(lpad(hex(id), 4, '0')) as bin, id % 3 = 0 as flag,
               named_struct('a', id, 'b', cast(id as string), 'c', named_struct('x', 1.5D)) as st,
               array(id, id + 1) as arr,
               array(named_struct('k', 'a', 'v', id)) as arr_st,
               map('k', id, 'l', id + 1) as m,
               if(id % 4 = 0, null, concat('n', id)) as maybe
        from range(20)
        """
    ).repartition(3)
    opts = {
        "hoodie.table.name": "types",
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.partitionpath.field": "p",
        "hoodie.datasource.write.precombine.field": "ts",
    }
    df.write.format("hudi_py").mode("append").options(**opts).save(path)
    back = spark.read.format("hudi_py").load(path)
    cols = df.columns
    got = {r["id"]: r.asDict(recursive=True) for r in back.select(*cols).collect()}
    want = {r["id"]: r.asDict(recursive=True) for r in df.collect()}
    assert got == want
    types = {f.name: f.dataType.simpleString() for f in back.schema}
    assert types["d"] == "decimal(10,2)"
    assert types["t"] == "timestamp"
    assert types["day"] == "date"
    assert types["bin"] == "binary"
    # and hudi-rs reads the same values
    rs = pa.Table.from_batches(
        hudi.HudiTableBuilder.from_base_uri(path).build().read(hudi.HudiReadOptions())
    )
    row = {r["id"]: r for r in rs.to_pylist()}["5"]
    assert row["d"] == decimal.Decimal("6.25")
    assert row["day"] == dt.date(2024, 1, 6)
    assert row["t"] == dt.datetime(2024, 1, 1, 0, 0, 5, tzinfo=dt.timezone.utc)
    assert row["bin"] == b"\x00\x05"


def test_timestamp_ntz_refused_then_cast(spark: Any, tmp_path: Path) -> None:
    """A TimestampNTZType column is refused on the driver before anything is written (no
    representation reads alike in Apache Hudi and hudi-rs); cast to TIMESTAMP as the message
    says, it is written and every reader sees the same instants."""
    path = tmp_path / "t"
    df = spark.sql(
        """
        select cast(id as string) as id, id as ts, cast(id % 2 as string) as p,
               timestamp_ntz'2024-01-01 00:00:00' + make_interval(0, 0, 0, 0, 0, 0, id) as t
        from range(6)
        """
    )
    opts = table_options("ntz", partition="p", table_type="MERGE_ON_READ")
    with pytest.raises(
        Exception, match=r"without a time zone \['t'\].*cast the column to TIMESTAMP"
    ):
        df.write.format("hudi_py").mode("append").options(**opts).save(str(path))
    assert not path.exists()
    fixed = df.withColumn("t", df["t"].cast("timestamp"))  # session time zone: UTC
    fixed.write.format("hudi_py").mode("append").options(**opts).save(str(path))
    utc = dt.timezone.utc
    expected = [
        (str(i), i, str(i % 2), dt.datetime(2024, 1, 1, 0, 0, i, tzinfo=utc)) for i in range(6)
    ]
    columns = ["id", "ts", "p", "t"]
    back = spark.read.format("hudi_py").load(str(path))
    assert dict(back.dtypes)["t"] == "timestamp"
    assert_rows(back.select(*columns).toArrow(), expected, columns)
    assert_rows(hudi_ds.read(str(path)), expected, columns)
    assert_rows(hudi_rs_table(str(path)), expected, columns)


@pytest.mark.parametrize("version", [6, 9])
def test_metadata_table_kept_in_step(spark: Any, version: int, tmp_path: Path) -> None:
    """Spark writes with ``hoodie.metadata.enable=true``: the driver's commit mirrors each
    instant in the metadata table first; its files listing equals the committed files, and
    hudi-rs (through the MDT on version 9) reads the model's rows."""
    from tests.metadata.test_writer import assert_in_step

    path = str(tmp_path / "t")
    opts = options(
        "COPY_ON_WRITE",
        **{"hoodie.metadata.enable": "true", "hoodie.write.table.version": str(version)},
    )
    model = Model()
    first = rows(range(0, 40), [1] * 40)
    save(spark, first, path, opts)
    model.upsert(first)
    second = rows(range(20, 60), [2] * 40, seed=1)
    save(spark, second, path, opts)
    model.upsert(second)
    gone = rows(range(0, 5), [3] * 5)
    save(spark, gone, path, {**opts, "hoodie.datasource.write.operation": "delete"})
    model.delete([f"key-{i:04d}" for i in range(5)])
    assert_in_step(Path(path))
    check(spark, path, model)
