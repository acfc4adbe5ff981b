"""Exactly-once under crashes: a streaming write into ``hudi_py`` whose driver is SIGKILLed.

A deterministic, replayable source (Parquet files, one per micro-batch) of change events --
inserts, updates, late updates carrying an older event time, deletes -- is streamed into a
partitioned MOR bucket-index table by a separate driver process (this file run as a script,
each run with its own SparkSession). The test kills the driver's whole process group (the
Python driver, its JVM and Python workers) with SIGKILL twice -- between the writes and the
commit, and at a random moment -- restarting from the same checkpoint each time, and finally
checks (the kills during task writes and right after the commit point, before Spark recorded
the batch, run in ``test_streaming_object_stores.py``: the same sink, on S3 and on Azure, one
driver for both, so the suite pays for those driver runs once):

* the snapshot equals the expected state (event-time ordering, deletes competing by event
  time): zero duplicate keys, zero lost updates -- read by hudi_ds and by hudi-rs;
* every micro-batch is committed exactly once: the completed commits carry the batch ids
  0..N-1 once each, and together wrote exactly the source's rows (keys are unique per file,
  so nothing is pre-combined away);
* no pending instant and no data file outside the completed commits is left.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.conftest import table_options

FILES = 12
ROWS = 1500
KEYS = 3000
PARTS = 3
IDENTIFIER = "crash_test"
OPTIONS = {
    **table_options("events", partition="part", table_type="MERGE_ON_READ"),
    "hoodie.datasource.write.streaming.checkpoint.identifier": IDENTIFIER,
    # the expected state lets a delete beat a later-arriving update with an older event time;
    # a compaction drops the delete's tombstone (as in Hudi), after which such an update
    # inserts the key again -- so this model holds only without compaction. The background
    # compactor's kills: tests/services/test_compaction_defaults.py. Both keys: async off alone
    # turns inline compaction on in a Spark write, as in Hudi's data source
    "hoodie.datasource.compaction.async.enable": "false",
    "hoodie.compact.inline": "false",
}
SCHEMA = "id string, ts long, part string, amount double, note string, _hoodie_is_deleted boolean"
RUN_TIMEOUT = 150.0


def make_source(src: Path, seed: int = 7, n_files: int = FILES, rows: int = ROWS) -> list[pa.Table]:
    """``n_files`` Parquet files of ``rows`` change events each; event times are unique, some
    are late."""
    rng = np.random.default_rng(seed)
    src.mkdir(parents=True)
    files = []
    for f in range(n_files):
        keys = rng.choice(KEYS, rows, replace=False)  # unique per file: no pre-combining
        seq = f * rows + np.arange(rows)
        late = rng.random(rows) < 0.15
        ts = np.where(late, (seq - 2 * rows) * 10 + 5, seq * 10)  # late ones: ts % 10 == 5
        t = pa.table(
            {
                "id": pa.array([f"k{k:05d}" for k in keys]),
                "ts": pa.array(ts, pa.int64()),
                "part": pa.array([f"p{k % PARTS}" for k in keys]),
                "amount": pa.array(rng.normal(100, 10, rows).round(3)),
                "note": pa.array([f"f{f}r{i}" for i in range(rows)]),
                "_hoodie_is_deleted": pa.array(rng.random(rows) < 0.08),
            }
        )
        path = src / f"events-{f:03d}.parquet"
        pq.write_table(t, path)
        os.utime(path, (1_700_000_000 + f * 10, 1_700_000_000 + f * 10))  # the file order
        files.append(t)
    return files


def expected_state(files: list[pa.Table]) -> dict[str, tuple[Any, ...]]:
    """Key -> (ts, part, amount, note) of the surviving version; deletes compete by ts."""
    best: dict[str, dict[str, Any]] = {}
    for t in files:
        for r in t.to_pylist():
            cur = best.get(r["id"])
            if cur is None or r["ts"] > cur["ts"]:
                best[r["id"]] = r
    return {
        k: (r["ts"], r["part"], r["amount"], r["note"])
        for k, r in best.items()
        if not r["_hoodie_is_deleted"]
    }


# ------------------------------------------------------------------------------ the driver
#: a directory; when it holds a file ``pause`` listing ``point:batchId[,...]`` with point
#: ``write`` (a task, files written, message not returned), ``commit`` (driver, before the
#: commit point) or ``committed`` (after it, before Spark records the batch), the process
#: touches ``<dir>/<point>-<batchId>`` there and sleeps, to be killed. ``point:batchId@tag``
#: pauses only the query into the table whose URI scheme is ``tag`` (a driver running one
#: query per store, tests/spark/test_streaming_object_stores.py) and touches ``<point>-<batchId>@<tag>``.
SIGNAL_ENV = "HUDI_PY_TEST_STREAM_SIGNAL"


def pause_at(point: str, batch_id: int, tag: str = "") -> None:
    """Sleep at ``point`` of micro-batch ``batch_id`` when the signal directory asks for it."""
    signal_dir = os.environ.get(SIGNAL_ENV)
    if not signal_dir:
        return
    try:
        spec = {x.strip() for x in Path(signal_dir, "pause").read_text().split(",")}
    except OSError:
        return
    for name, asked in (
        (f"{point}-{batch_id}", f"{point}:{batch_id}"),
        (f"{point}-{batch_id}@{tag}", f"{point}:{batch_id}@{tag}"),
    ):
        if asked in spec:
            Path(signal_dir, name).touch()
            time.sleep(3600)


def pausing_source() -> type:
    """``hudi_py`` whose stream writer pauses at the points :func:`pause_at` names.

    The classes are local, so Spark pickles them by value into the processes that run the
    sink's tasks and its commits (which inherit the signal directory's environment).
    """
    from hudi_ds.spark.datasource import HudiDataSource
    from hudi_ds.spark.streaming import HudiStreamCommitMessage, HudiStreamWriter

    class PausingStreamWriter(HudiStreamWriter):
        def write(self, iterator: Any) -> HudiStreamCommitMessage:
            msg = super().write(iterator)
            if not msg.skipped:
                pause_at("write", msg.batch_id, self.tag)
            return msg

        def publish(self, instant: str, messages: Any, batch_id: int) -> None:
            pause_at("commit", batch_id, self.tag)
            super().publish(instant, messages, batch_id)
            pause_at("committed", batch_id, self.tag)

        @property
        def tag(self) -> str:
            """The table URI's scheme (``s3``, ``az``; ``""`` for a local path)."""
            head, sep, _ = self.job.path.partition("://")
            return head if sep else ""

    class PausingDataSource(HudiDataSource):
        def streamWriter(self, schema: Any, overwrite: bool) -> PausingStreamWriter:
            return PausingStreamWriter.create(self.options, schema, overwrite)

    return PausingDataSource


def driver_session(master: str, app: str, signal_dir: str) -> Any:
    """A killable driver's SparkSession, hudi_py replaced by the pausing source; returns once
    the test says "go". The session starts ahead of time (its JVM warms up while the previous
    run works) and announces it with the ``ready`` signal."""
    from pyspark.sql import SparkSession

    from hudi_ds.spark import register

    spark = (
        SparkSession.builder.master(master)
        .appName(app)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.extraJavaOptions", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)
    spark.dataSource.register(pausing_source())  # replaces the plain hudi_py
    Path(signal_dir, "ready").touch()
    while not Path(signal_dir, "go").exists():
        time.sleep(0.02)
    return spark


def drive(src: str, table: str, checkpoint: str, signal_dir: str) -> None:
    """One run of the streaming job (this file as a script): all files, then exit 0."""
    spark = driver_session("local[2]", "hudi_ds-stream-crash", signal_dir)
    events = (
        spark.readStream.schema(SCHEMA)
        .option("maxFilesPerTrigger", 1)
        .parquet(src)
        # two tasks per micro-batch: both join the batch's instant
        .repartition(2)
    )
    q = (
        events.writeStream.format("hudi_py")
        .options(**OPTIONS)
        .option("checkpointLocation", checkpoint)
        .trigger(availableNow=True)
        .start(table)
    )
    Path(signal_dir, "started").touch()
    q.awaitTermination()
    spark.stop()


# ------------------------------------------------------------------------------ the test
def committed_batch(table: Path) -> int:
    from hudi_ds.write.client import WriteClient

    if not (table / ".hoodie" / "hoodie.properties").exists():
        return -1
    got = WriteClient(str(table), OPTIONS).committed_streaming_batch(IDENTIFIER)
    return -1 if got is None else got


@dataclass
class Driver:
    """A driver process started ahead of its turn (SparkSession up, waiting for ``go``)."""

    run: int
    proc: subprocess.Popen[bytes]
    sig: Path
    log: Path


def spawn(tmp: Path, run: int) -> Driver:
    sig = tmp / f"signal-{run}"
    sig.mkdir()
    # the driver is this file run as a script: it imports the tests package from the repository
    repo = str(Path(__file__).resolve().parents[2])
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(p for p in (repo, os.environ.get("PYTHONPATH")) if p),
        "PYSPARK_PYTHON": sys.executable,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
        SIGNAL_ENV: str(sig),
    }
    log = tmp / f"driver-{run}.log"
    with open(log, "w") as out:
        args = [str(tmp / "src"), str(tmp / "table"), str(tmp / "ck"), str(sig)]
        proc = subprocess.Popen(
            [sys.executable, __file__, *args],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,  # its JVM and Python workers share its process group
        )
    return Driver(run, proc, sig, log)


def kill(d: Driver) -> None:
    if d.proc.poll() is None:
        os.killpg(d.proc.pid, signal.SIGKILL)
        d.proc.wait()


def go(
    d: Driver, pause: str | None, kill_after: float | None, warm_next: Callable[[], Driver] | None
) -> tuple[str, float, Driver | None]:
    """Let ``d`` start its query; SIGKILL its process group when it pauses (or ``kill_after``
    seconds after the query started). The next run's driver is spawned once this one's query
    runs. Returns ``(outcome, seconds, next driver)``: outcome ``killed`` or ``finished``.

    ``pause`` lists points (``point:batchId[@tag]``, comma-separated): the kill waits until the
    process has paused at each of them (one per query of a driver running several)."""
    if pause:
        (d.sig / "pause").write_text(pause)
    (d.sig / "go").touch()
    t0 = time.monotonic()
    started: float | None = None
    nxt: Driver | None = None
    try:
        while True:
            if d.proc.poll() is not None:
                assert d.proc.returncode == 0, _tail(d.log)
                return "finished", time.monotonic() - t0, nxt
            names = {p.name for p in d.sig.iterdir()}
            if started is None and "started" in names:
                started = time.monotonic()
                if warm_next is not None:
                    nxt = warm_next()
            at = [n for n in names if n.split("-")[0] in ("write", "commit", "committed")]
            paused = len(at) >= (len(pause.split(",")) if pause else 1)
            timed = kill_after is not None and started is not None
            if paused or (timed and time.monotonic() - started >= kill_after):  # type: ignore[operator]
                kill(d)
                return "killed", time.monotonic() - t0, nxt
            if time.monotonic() - t0 > RUN_TIMEOUT:
                raise AssertionError(f"run {d.run} timed out\n" + _tail(d.log))
            time.sleep(0.05)
    except BaseException:
        kill(d)
        if nxt is not None:
            kill(nxt)
        raise


def _tail(path: Path, n: int = 40) -> str:
    return "\n".join(path.read_text(errors="replace").splitlines()[-n:])


def streaming_commits(storage: Any, where: str) -> tuple[list[int], int, set[str]]:
    """The completed commits of a streamed table: the micro-batch of each (its checkpoint under
    ``IDENTIFIER``; a commit without one fails, naming ``where``), the records they wrote and
    deleted in all, and the files they reference."""
    from hudi_ds.timeline.timeline import Timeline

    tl = Timeline.load(storage, 1)
    batches, writes, referenced = [], 0, set()
    for inst in tl.commits():
        md = tl.read_commit_metadata(inst)
        raw = md.extra_metadata.get("_hudi_streaming_sink_checkpoint")
        assert raw, f"{where}: {inst} has no streaming checkpoint"
        batches.append(int(json.loads(raw)[IDENTIFIER]))
        for stats in md.partition_to_write_stats.values():
            for s in stats:
                writes += s.num_writes + s.num_deletes
                referenced.add(s.path)
    return batches, writes, referenced


def pending_instants(table: Path) -> list[str]:
    from hudi_ds.storage import Storage
    from hudi_ds.timeline.timeline import Timeline

    tl = Timeline.load(Storage(str(table)), 1)
    return [f"{i.requested_time}.{i.action}.{i.state.name}" for i in tl.pending()]


@pytest.mark.slow
@pytest.mark.spark
def test_exactly_once_under_driver_kills(tmp_path: Path) -> None:
    from hudi_ds.table.table import ReadableTable

    files = make_source(tmp_path / "src")
    table = tmp_path / "table"
    rng = random.Random(5)
    history = []
    # (pause point relative to the next batch to write, or a random kill delay)
    plan: list[tuple[str | None, int, float | None]] = [
        ("commit", 1, None),  # batch 0 committed; all tasks of batch 1 wrote, before its commit
        (None, 0, rng.uniform(1.0, 8.0)),  # a random moment (one: the suite's time budget)
    ]
    driver: Driver | None = spawn(tmp_path, 0)
    for run, (point, ahead, delay) in enumerate(plan):
        assert driver is not None
        nxt = committed_batch(table) + 1
        pause = f"{point}:{nxt + ahead}" if point else None
        outcome, secs, driver = go(driver, pause, delay, lambda r=run: spawn(tmp_path, r + 1))
        history.append((run, pause or f"after {delay:.1f}s", outcome, round(secs, 1)))
        if driver is None:  # finished before its query started the next one
            driver = spawn(tmp_path, run + 1)
        done = committed_batch(table)
        if point == "commit" and outcome == "killed":
            assert done == nxt + ahead - 1, (done, history)
            assert pending_instants(table), "the killed batch left no pending instant"
    kills = sum(1 for h in history if h[2] == "killed")
    assert kills >= 2, history
    assert driver is not None
    outcome, secs, _ = go(driver, None, None, None)
    history.append((len(plan), "final", outcome, round(secs, 1)))
    assert outcome == "finished", history

    # the snapshot: the expected state, no duplicates, nothing lost (hudi_ds and hudi-rs)
    expected = expected_state(files)
    snap = ReadableTable(str(table)).read(columns=["id", "ts", "part", "amount", "note"])
    ids = snap["id"].to_pylist()
    assert len(ids) == len(set(ids)), "duplicate keys"
    got = {r["id"]: (r["ts"], r["part"], r["amount"], r["note"]) for r in snap.to_pylist()}
    assert got == expected, (len(got), len(expected), history)
    import hudi

    rs = hudi.HudiTableBuilder.from_base_uri(str(table)).build().read(hudi.HudiReadOptions())
    rs_ids = sorted(i for b in rs for i in b.column("id").to_pylist())
    assert rs_ids == sorted(expected), "hudi-rs disagrees"

    # each batch committed exactly once, and all rows written exactly once
    from hudi_ds.storage import Storage

    batches, writes, referenced = streaming_commits(Storage(str(table)), "local")
    assert sorted(batches) == list(range(FILES)), (batches, history)
    assert writes == FILES * ROWS
    assert not pending_instants(table)
    on_disk = {
        str(p.relative_to(table))
        for p in table.rglob("*")
        if p.is_file() and ".hoodie" not in p.parts and p.name != ".hoodie_partition_metadata"
    }
    assert on_disk <= referenced, f"debris: {sorted(on_disk - referenced)}"
    print("runs:", history)


if __name__ == "__main__":
    drive(*sys.argv[1:5])
