"""Structured Streaming through ``hudi_py`` in the shared session: the sink (exactly once
across replays and failed tasks, separate checkpoints per writer identifier) and the source
(every commit's changes delivered once across a restart, admission control, deletes).

Killing the driver itself is ``test_streaming_crash.py`` (separate processes).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import hudi_ds
from hudi_ds.services import run_post_commit_services
from hudi_ds.storage import Storage
from hudi_ds.table.table import ReadableTable
from hudi_ds.timeline.timeline import Timeline
from hudi_ds.write.client import WriteClient
from tests.conftest import table_options

pytestmark = pytest.mark.spark

SCHEMA = "id string, ts long, part string, v double"
OPTS = table_options("s", partition="part", table_type="MERGE_ON_READ")


def events(ids: range, ts: int) -> pa.Table:
    return pa.table(
        {
            "id": [f"k{i:04d}" for i in ids],
            "ts": pa.array([ts + i % 7 for i in ids], pa.int64()),
            "part": [f"p{i % 3}" for i in ids],
            "v": [float(i * ts) for i in ids],
        }
    )


def source_dir(root: Path, tables: list[pa.Table]) -> str:
    """One Parquet file per table, in this order (modification times)."""
    root.mkdir(parents=True, exist_ok=True)
    start = len(list(root.iterdir()))
    for i, t in enumerate(tables, start):
        f = root / f"part-{i:04d}.parquet"
        pq.write_table(t, f)
        os.utime(f, (1_700_000_000 + i, 1_700_000_000 + i))
    return str(root)


def model(tables: list[pa.Table]) -> dict[str, tuple[int, float]]:
    out: dict[str, tuple[int, float]] = {}
    for t in tables:
        for r in t.to_pylist():
            cur = out.get(r["id"])
            if cur is None or r["ts"] >= cur[0]:
                out[r["id"]] = (r["ts"], r["v"])
    return out


def snapshot(path: str) -> dict[str, tuple[int, float]]:
    t = hudi_ds.read(path, columns=["id", "ts", "v"])
    ids = t["id"].to_pylist()
    assert len(ids) == len(set(ids)), "duplicate keys"
    return {r["id"]: (r["ts"], r["v"]) for r in t.to_pylist()}


def sink(spark: Any, src: str, path: str, ck: str, **extra: str) -> Any:
    q = (
        spark.readStream.schema(SCHEMA)
        .option("maxFilesPerTrigger", 1)
        .parquet(src)
        .repartition(2)
        .writeStream.format("hudi_py")
        .options(**OPTS, **extra)
        .option("checkpointLocation", ck)
        .trigger(availableNow=True)
        .start(path)
    )
    q.awaitTermination()
    return q


def instants(path: str) -> list[str]:
    return [repr(i) for i in Timeline.load(Storage(path), 1)]


def test_sink_exactly_once_and_replay_changes_nothing(spark: Any, tmp_path: Path) -> None:
    tables = [events(range(0, 300), 10), events(range(200, 500), 20), events(range(100, 150), 5)]
    src = source_dir(tmp_path / "src", tables)
    path, ck = str(tmp_path / "t"), str(tmp_path / "ck")
    sink(spark, src, path, ck)
    assert snapshot(path) == model(tables)
    client = WriteClient(path, OPTS, post_commit=run_post_commit_services)
    assert client.committed_streaming_batch("default_single_writer") == 2
    assert len(ReadableTable(path).timeline.commits()) == 3

    # a crash after the table commit, before Spark's commit log: Spark replays batch 2
    before, files = instants(path), sorted(p.name for p in Path(path).rglob("*"))
    for f in (Path(ck, "commits", "2"), Path(ck, "commits", ".2.crc")):
        f.unlink(missing_ok=True)
    q = sink(spark, src, path, ck)
    assert [p["batchId"] for p in q.recentProgress if p["numInputRows"]] == [2]
    assert instants(path) == before
    assert sorted(p.name for p in Path(path).rglob("*")) == files
    assert snapshot(path) == model(tables)

    # new data continues at batch 3
    more = [events(range(450, 600), 30)]
    source_dir(tmp_path / "src", more)
    sink(spark, src, path, ck)
    assert snapshot(path) == model(tables + more)
    assert client.committed_streaming_batch("default_single_writer") == 3


def test_two_identifiers_keep_separate_checkpoints(spark: Any, tmp_path: Path) -> None:
    a_tables = [events(range(0, 50), 1), events(range(50, 100), 1), events(range(100, 150), 1)]
    b_tables = [events(range(1000, 1050), 1), events(range(1050, 1100), 1)]
    path = str(tmp_path / "t")
    a_src = source_dir(tmp_path / "a", a_tables)
    b_src = source_dir(tmp_path / "b", b_tables)
    ident = "hoodie.datasource.write.streaming.checkpoint.identifier"
    sink(spark, a_src, path, str(tmp_path / "ck_a"), **{ident: "stream_a"})
    sink(spark, b_src, path, str(tmp_path / "ck_b"), **{ident: "stream_b"})
    client = WriteClient(path, OPTS, post_commit=run_post_commit_services)
    assert client.committed_streaming_batch("stream_a") == 2
    assert client.committed_streaming_batch("stream_b") == 1
    assert snapshot(path) == model(a_tables + b_tables)
    # stream b restarted with a *fresh* checkpoint under identifier a: its batches 0..2 count
    # as committed for a, so they are skipped -- use a new identifier with a new checkpoint
    c_tables = [events(range(2000, 2010), 1)]
    c_src = source_dir(tmp_path / "c", c_tables)
    sink(spark, c_src, path, str(tmp_path / "ck_c"), **{ident: "stream_a"})
    assert snapshot(path) == model(a_tables + b_tables)


def test_failed_tasks_retry_or_abort(spark: Any, tmp_path: Path) -> None:
    tables = [events(range(0, 100), 1), events(range(50, 200), 2)]
    src = source_dir(tmp_path / "src", tables)
    path, ck = str(tmp_path / "t"), str(tmp_path / "ck")
    # local[2,2]: a task failing once is retried; the failed attempt's files are dropped
    sink(spark, src, path, ck, **{"hudi_py.test.fail.partition": "1"})
    assert snapshot(path) == model(tables)
    committed = {
        s.path
        for i in ReadableTable(path).timeline.commits()
        for ss in ReadableTable(path)
        .timeline.read_commit_metadata(i)
        .partition_to_write_stats.values()
        for s in ss
    }
    on_disk = {
        str(p.relative_to(path))
        for p in Path(path).rglob("*.log.*")
        if p.is_file() and ".hoodie" not in p.parts
    }
    assert on_disk == committed
    # a task failing on every attempt fails the batch: abort rolls its instant back
    more = [events(range(300, 400), 3)]
    source_dir(tmp_path / "src", more)
    with pytest.raises(Exception, match="injected failure"):
        sink(
            spark,
            src,
            path,
            ck,
            **{"hudi_py.test.fail.partition": "0", "hudi_py.test.fail.attempts": "9"},
        )
    tl = Timeline.load(Storage(path), 1)
    assert not tl.pending().filter_actions("deltacommit"), instants(path)
    assert snapshot(path) == model(tables)
    sink(spark, src, path, ck)  # the restart writes the batch
    assert snapshot(path) == model(tables + more)


def collect_stream(
    spark: Any, path: str, ck: str, **options: str
) -> list[tuple[int, list[dict[str, Any]]]]:
    """Run a hudi_py source with availableNow; returns (batch id, rows) per micro-batch."""
    got: list[tuple[int, list[dict[str, Any]]]] = []

    def each(df: Any, batch_id: int) -> None:
        got.append((batch_id, [r.asDict() for r in df.collect()]))

    q = (
        spark.readStream.format("hudi_py")
        .options(**options)
        .load(path)
        .writeStream.foreachBatch(each)
        .option("checkpointLocation", ck)
        .trigger(availableNow=True)
        .start()
    )
    q.awaitTermination()
    return [g for g in got if g[1]]


def _last_delta_commit(path: str) -> str:
    return ReadableTable(path).timeline.commits().filter_actions("deltacommit")[-1].requested_time


def test_source_delivers_every_commit_once_across_a_restart(spark: Any, tmp_path: Path) -> None:
    path, ck = str(tmp_path / "t"), str(tmp_path / "ck")
    written = []
    for i in range(5):  # commit i: 40 new keys and updates of 20 earlier ones
        t = pa.concat_tables([events(range(i * 40, i * 40 + 40), 10 + i)])
        if i:
            t = pa.concat_tables([t, events(range(i * 40 - 20, i * 40), 10 + i)])
        hudi_ds.write(path, t, OPTS)  # the fifth also compacts (MOR default): not a change
        written.append(_last_delta_commit(path))
    got = collect_stream(spark, path, ck, maxCommitsPerTrigger="2")
    commit_sets = [sorted({r["_hoodie_commit_time"] for r in rows}) for _, rows in got]
    assert commit_sets == [written[0:2], written[2:4], written[4:5]]
    # each batch = the latest state of the keys its commits wrote, once each
    for _, rows in got:
        assert len({r["id"] for r in rows}) == len(rows)
    first = {r["id"] for r in got[0][1]}
    assert first == {f"k{i:04d}" for i in range(0, 80)}

    # more commits, then the query restarts from its checkpoint: only the new changes
    for i in range(5, 8):
        hudi_ds.write(path, events(range(i * 40, i * 40 + 40), 10 + i), OPTS)
        written.append(_last_delta_commit(path))
    again = collect_stream(spark, path, ck, maxCommitsPerTrigger="2")
    commit_sets = [sorted({r["_hoodie_commit_time"] for r in rows}) for _, rows in again]
    assert commit_sets == [written[5:7], written[7:8]]
    assert again[0][0] > got[-1][0]
    delivered = [r["id"] for _, rows in got + again for r in rows]
    assert set(delivered) == {f"k{i:04d}" for i in range(0, 320)}


def test_source_emits_deletes(spark: Any, tmp_path: Path) -> None:
    path, ck = str(tmp_path / "t"), str(tmp_path / "ck")
    hudi_ds.write(path, events(range(0, 30), 1), OPTS)
    opts = {"hoodie.datasource.read.incr.emit.deletes": "true"}
    first = collect_stream(spark, path, ck, **opts)
    assert len(first) == 1 and not any(r["_hoodie_is_deleted"] for r in first[0][1])
    gone = events(range(0, 5), 9).select(["id", "part", "ts"])
    hudi_ds.write(path, gone, {**OPTS, "hoodie.datasource.write.operation": "delete"})
    hudi_ds.write(path, events(range(30, 33), 2), OPTS)
    second = collect_stream(spark, path, ck, **opts)
    rows = [r for _, rs in second for r in rs]
    deleted = sorted(r["id"] for r in rows if r["_hoodie_is_deleted"])
    assert deleted == [f"k{i:04d}" for i in range(5)]
    assert sorted(r["id"] for r in rows if not r["_hoodie_is_deleted"]) == [
        "k0030",
        "k0031",
        "k0032",
    ]
    # the delete rows carry the last image of the row
    last = {r["id"]: r for r in first[0][1]}
    assert all(r["v"] == last[r["id"]]["v"] for r in rows if r["_hoodie_is_deleted"])
    with pytest.raises(Exception, match="streaming reads"):
        spark.read.format("hudi_py").options(**opts).load(path).collect()


def test_sink_with_state_index_equals_model(spark: Any, tmp_path: Path) -> None:
    """``hudi_py.streaming.state.index``: the workers' state indexes tag every micro-batch as
    SIMPLE would, across another writer's commit between two runs (hudi-rs reads the model)."""
    from hudi_ds.errors import ConfigError
    from hudi_ds.spark import streaming
    from hudi_ds.spark.writer import WriteJob
    from tests.conftest import assert_rows, hudi_rs_table

    opts = {
        **table_options("s", partition="part", table_type="MERGE_ON_READ", buckets=None),
        "hoodie.index.type": "SIMPLE",
    }
    on = {"hudi_py.streaming.state.index": "true"}
    tables = [events(range(0, 300), 10), events(range(200, 500), 20), events(range(100, 150), 5)]
    src = source_dir(tmp_path / "src", tables)
    path, ck = str(tmp_path / "t"), str(tmp_path / "ck")

    def run() -> None:
        q = (
            spark.readStream.schema(SCHEMA)
            .option("maxFilesPerTrigger", 1)
            .parquet(src)
            .repartition(2)
            .writeStream.format("hudi_py")
            .options(**opts, **on)
            .option("checkpointLocation", ck)
            .trigger(availableNow=True)
            .start(path)
        )
        q.awaitTermination()

    run()
    assert snapshot(path) == model(tables)
    other = events(range(400, 700, 2), 40)  # another writer: updates and new keys
    hudi_ds.write(path, other, opts)
    more = [events(range(350, 800), 30)]
    source_dir(tmp_path / "src", more)
    run()
    expected = model([*tables, other, *more])
    assert snapshot(path) == expected
    assert_rows(
        hudi_rs_table(path), [(k, ts, v) for k, (ts, v) in expected.items()], ["id", "ts", "v"]
    )

    # one state per table in a worker; off: the table's own index
    schema = spark.createDataFrame([], SCHEMA).schema
    job = WriteJob(path, opts, on, schema, False)
    first, second = streaming.worker_state_lookup(job), streaming.worker_state_lookup(job)
    assert first is not None and first == second
    assert streaming.worker_state_lookup(WriteJob(path, opts, {}, schema, False)) is None
    # refused where it cannot apply: a batch write, a BUCKET table
    df = spark.createDataFrame(events(range(3), 1).to_pylist(), SCHEMA)
    with pytest.raises(Exception, match="applies to streaming writes"):
        df.write.format("hudi_py").options(**opts, **on).mode("append").save(path)
    bucket = str(tmp_path / "b")
    hudi_ds.write(bucket, events(range(3), 1), OPTS)
    with pytest.raises(ConfigError, match="BUCKET"):
        streaming.HudiStreamWriter.create({**OPTS, **on, "path": bucket}, schema, False)


@pytest.mark.parametrize("version", [9])
def test_sink_bucket_mor_with_mdt_new_buckets(spark: Any, tmp_path: Path, version: int) -> None:
    """A version 8+ MOR bucket table with a metadata table: the micro-batches' new buckets
    (two tasks each) start with one base file each, later batches append logs; hudi_ds and
    hudi-rs (MDT on and off) read the model."""
    from tests.conftest import assert_rows, hudi_rs_table

    extra = {"hoodie.metadata.enable": "true", "hoodie.write.table.version": str(version)}
    wide = events(range(1000, 1040), 50)  # new partitions p3, p4 in the third batch
    wide = wide.set_column(2, "part", pa.array([f"p{3 + i % 2}" for i in range(40)]))
    tables = [events(range(0, 120), 10), events(range(60, 200), 20), wide]
    src = source_dir(tmp_path / "src", tables)
    path, ck = str(tmp_path / "t"), str(tmp_path / "ck")
    sink(spark, src, path, ck, **extra)
    expected = model(tables)
    assert snapshot(path) == expected
    rows = [(k, ts, v) for k, (ts, v) in expected.items()]
    for enable in ("true", "false"):
        assert_rows(
            hudi_rs_table(path, {"hoodie.metadata.enable": enable}), rows, ["id", "ts", "v"]
        )
    groups: dict[tuple[str, str], list[str]] = {}
    for f in Path(path).glob("p*/*"):
        if not f.name.startswith(".hoodie"):
            groups.setdefault((f.parent.name, f.name.lstrip(".")[:8]), []).append(f.name)
    assert {p for p, _ in groups} == {"p0", "p1", "p2", "p3", "p4"}
    for names in groups.values():  # one file group per bucket, with exactly one base file
        assert len({n.lstrip(".").split("_")[0] for n in names}) == 1, names
        assert sum(n.endswith(".parquet") for n in names) == 1, names


class CompactorWatch:
    """Samples ``/proc`` every 10 ms on a thread: the command lines of the processes that ran
    ``hudi_ds.services.background`` for the table, and of those that held its compactor lock
    (``/proc/locks``, by the lock file's inode)."""

    def __init__(self, base_uri: str) -> None:
        import threading

        from hudi_ds.services.background import compactor_lock_path

        self.base_uri, self.lock = base_uri, compactor_lock_path(base_uri)
        self.processes: set[bytes] = set()
        self.holders: set[bytes] = set()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._loop, daemon=True)

    @staticmethod
    def _cmdline(pid: str) -> bytes | None:
        try:
            return Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            return None

    def _loop(self) -> None:
        while not self.stop.wait(0.01):
            for pid in filter(str.isdigit, os.listdir("/proc")):
                cmd = self._cmdline(pid)
                if cmd and b"hudi_ds.services.background" in cmd and self.base_uri.encode() in cmd:
                    self.processes.add(cmd)
            try:
                inode = os.stat(self.lock).st_ino
            except FileNotFoundError:
                continue
            for line in Path("/proc/locks").read_text().splitlines():
                # "1: FLOCK  ADVISORY  WRITE <pid> <major>:<minor>:<inode> 0 EOF" (a holder)
                f = line.split()
                if f[1] == "FLOCK" and f[5].rsplit(":", 1)[-1] == str(inode):
                    cmd = self._cmdline(f[4])
                    if cmd:
                        self.holders.add(cmd)

    def __enter__(self) -> CompactorWatch:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join()


def test_sink_compacts_off_the_critical_path(spark: Any, tmp_path: Path) -> None:
    """MOR: the sink's commit schedules a compaction every 5 delta commits (Hudi's default)
    and leaves its execution to a background compactor: with the compactor held off (its
    lock taken here) every micro-batch still commits; once free, the next commit starts it,
    as a thread of the sink's commit runner: no compactor process starts."""
    import time

    from hudi_ds.services.background import _exclusive, compactor_lock_path
    from hudi_ds.timeline.view import TableState

    tables = [events(range(i * 20, i * 20 + 60), 10 + i) for i in range(6)]
    src = source_dir(tmp_path / "src", tables)
    path, ck = str(tmp_path / "t"), str(tmp_path / "ck")
    uri = Storage(path).base_uri
    with _exclusive(compactor_lock_path(uri)) as held:
        assert held is not None
        sink(spark, src, path, ck)
    tl = TableState.open(path).reload_timeline()
    assert len(tl.completed().filter_actions("deltacommit")) == 6
    (pending,) = tl.pending_compactions()
    assert pending.is_requested  # scheduled by the fifth commit, not executed by any commit
    assert snapshot(path) == model(tables)

    more = [events(range(100, 130), 40)]
    source_dir(tmp_path / "src", more)
    with CompactorWatch(uri) as watch:
        sink(spark, src, path, ck)  # its commit starts the compactor
        deadline = time.monotonic() + 600
        while not TableState.open(path).reload_timeline().is_completed(pending.requested_time):
            assert time.monotonic() < deadline, "the background compaction did not complete"
            time.sleep(0.05)
    assert watch.processes == set()
    # seen when the compaction outlasted a sample: the holder is the sink's commit runner
    assert all(b"python_streaming_sink_runner" in c for c in watch.holders), watch.holders
    assert snapshot(path) == model(tables + more)
    ro = hudi_ds.read(path, {"hoodie.datasource.query.type": "read_optimized"}, columns=["id"])
    # the keys of the five compacted delta commits (later ones went to logs on top of it)
    assert sorted(ro["id"].to_pylist()) == sorted(model(tables[:5]))


def test_sink_clusters_asynchronously(spark: Any, tmp_path: Path) -> None:
    """``hoodie.clustering.async.enabled``: the second micro-batch commit schedules a
    clustering of the small file groups and hands it to the sink's background process, which
    runs it while the stream goes on writing new keys (an insert-only stream: updates into a
    file group under a pending plan are refused, as Java's ``SparkRejectUpdateStrategy``
    does). Clusterings complete, and the table is the model's as hudi_ds and hudi-rs read it."""
    import time

    from hudi_ds.services import ServiceContext, clustering
    from hudi_ds.services.background import compactor_running
    from hudi_ds.timeline.view import TableState
    from tests.conftest import assert_rows, hudi_rs_table

    opts = {
        **table_options("s", partition="part", table_type="MERGE_ON_READ", buckets=None),
        "hoodie.index.type": "SIMPLE",
        "hoodie.clustering.async.enabled": "true",
        "hoodie.clustering.inline.max.commits": "2",
        # every micro-batch's inserts make new file groups: small ones to cluster
        "hoodie.parquet.small.file.limit": "0",
    }
    tables = [events(range(i * 40, i * 40 + 40), 10 + i) for i in range(3)]
    src = source_dir(tmp_path / "src", tables)
    path, ck = str(tmp_path / "t"), str(tmp_path / "ck")
    q = (
        spark.readStream.schema(SCHEMA)
        .option("maxFilesPerTrigger", 1)
        .parquet(src)
        .writeStream.format("hudi_py")
        .options(**opts)
        .option("checkpointLocation", ck)
        .trigger(availableNow=True)
        .start(path)
    )
    q.awaitTermination()
    uri = Storage(path).base_uri
    tl = TableState.open(path).reload_timeline()
    assert len(tl.completed().filter_actions("deltacommit")) == 3
    assert not [i for i in tl if not i.is_completed and not tl.is_clustering(i)]
    # the second commit scheduled the first clustering and started the background process
    first = min(i.requested_time for i in tl if tl.is_clustering(i))
    deadline = time.monotonic() + 120
    while not tl.is_completed(first) or compactor_running(uri):
        assert time.monotonic() < deadline, "the background clustering did not finish"
        time.sleep(0.2)
        tl = TableState.open(path).reload_timeline()
    done = [i for i in tl.completed() if tl.is_clustering(i)]
    ctx = ServiceContext.open(path)
    for c in done:  # each replaced small file groups by fewer ones
        replaced = ctx.timeline().read_commit_metadata(c).partition_to_replace_file_ids
        assert sum(len(v) for v in replaced.values()) >= 2
    expected = model(tables)
    assert snapshot(path) == expected
    rows = [(k, ts, v) for k, (ts, v) in expected.items()]
    assert_rows(hudi_rs_table(path), rows, ["id", "ts", "v"])
    # a plan scheduled as the background process stopped waits for the next commit: run it
    # here, and the table stays the model's
    clustering.run_clustering(ServiceContext.open(path, opts))
    assert snapshot(path) == expected
