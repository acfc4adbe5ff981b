"""Exactly-once under driver kills, on S3: the streaming crash test's machinery
(``test_streaming_crash.py``: a replayable Parquet source of change events, a sink that pauses
at named points, SIGKILL of the driver's whole process group, restarts from the checkpoint)
with the table on the session's local S3 server (moto). The storage options go as data source
options; the executors write to the store directly. After two kills -- a task of a batch has
written its files, right after the commit point before Spark recorded the batch -- and a final
run, the table read by hudi_ds and by hudi-rs (with its storage options)
is the expected state, every micro-batch is committed exactly once, and nothing is pending or
left outside the completed commits."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

N_FILES = 4
ROWS = 300
#: a run's time limit: S3 calls to moto are slower than local files
RUN_TIMEOUT = 300.0
PLAN: list[tuple[str | None, int, float | None]] = [
    ("write", 1, None),  # a task of the run's 2nd batch has written its files to S3
    ("committed", 0, None),  # committed in the table, not yet in Spark's checkpoint
]  # kills at random moments: test_streaming_crash.py (local table; the same sink code)


def drive(src: str, table: str, checkpoint: str, signal_dir: str, so_json: str) -> None:
    """One run of the streaming job into the S3 table (this file as a script)."""
    from pyspark.sql import SparkSession

    from hudi_ds.spark import register
    from tests.spark.test_streaming_crash import OPTIONS, SCHEMA, pausing_source

    spark = (
        SparkSession.builder.master("local[2]")
        .appName("hudi_ds-stream-crash-s3")
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
    spark.dataSource.register(pausing_source())
    Path(signal_dir, "ready").touch()
    while not Path(signal_dir, "go").exists():
        time.sleep(0.02)
    events = (
        spark.readStream.schema(SCHEMA).option("maxFilesPerTrigger", 1).parquet(src).repartition(2)
    )
    q = (
        events.writeStream.format("hudi_py")
        .options(**OPTIONS, **json.loads(so_json))
        .option("checkpointLocation", checkpoint)
        .trigger(availableNow=True)
        .start(table)
    )
    Path(signal_dir, "started").touch()
    q.awaitTermination()
    spark.stop()


def spawn(tmp: Path, run: int, table: str, so: dict[str, str]) -> Any:
    """A driver process of this script, started ahead of its turn (its own process group)."""
    import hudi_ds
    from tests.spark.test_streaming_crash import SIGNAL_ENV, Driver

    sig = tmp / f"signal-{run}"
    sig.mkdir()
    repo = str(Path(hudi_ds.__file__).resolve().parents[1])
    env = {
        **os.environ,
        "PYSPARK_PYTHON": sys.executable,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
        "PYTHONPATH": os.pathsep.join(p for p in (repo, os.environ.get("PYTHONPATH")) if p),
        SIGNAL_ENV: str(sig),
    }
    log = tmp / f"driver-{run}.log"
    with open(log, "w") as out:
        args = [str(tmp / "src"), table, str(tmp / "ck"), str(sig), json.dumps(so)]
        proc = subprocess.Popen(
            [sys.executable, __file__, *args],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )
    return Driver(run, proc, sig, log)


@pytest.mark.slow
@pytest.mark.spark
def test_exactly_once_under_driver_kills_on_s3(
    tmp_path: Path, moto_s3: Any, s3_uri: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import hudi_ds
    import tests.spark.test_streaming_crash as crash
    from hudi_ds.storage import Storage
    from hudi_ds.timeline.timeline import Timeline
    from hudi_ds.write.client import WriteClient
    from tests.conftest import assert_rows, hudi_rs_table
    from tests.spark.test_streaming_crash import (
        IDENTIFIER,
        OPTIONS,
        expected_state,
        go,
        make_source,
    )

    monkeypatch.setattr(crash, "RUN_TIMEOUT", RUN_TIMEOUT)
    so = {k: str(v) for k, v in moto_s3.storage_options().items()}
    storage = Storage(s3_uri, storage_options=so)
    files = make_source(tmp_path / "src", n_files=N_FILES, rows=ROWS)

    def committed_batch() -> int:
        if not storage.exists(".hoodie/hoodie.properties"):
            return -1
        got = WriteClient(storage, OPTIONS).committed_streaming_batch(IDENTIFIER)
        return -1 if got is None else got

    def pending() -> list[str]:
        return [str(i) for i in Timeline.load(storage, 1).pending()]

    history = []
    driver = spawn(tmp_path, 0, s3_uri, so)
    for run, (point, ahead, delay) in enumerate(PLAN):
        nxt = committed_batch() + 1
        pause = f"{point}:{nxt + ahead}" if point else None
        outcome, secs, driver = go(
            driver, pause, delay, lambda r=run: spawn(tmp_path, r + 1, s3_uri, so)
        )
        history.append((run, pause or f"after {delay:.1f}s", outcome, round(secs, 1)))
        if driver is None:
            driver = spawn(tmp_path, run + 1, s3_uri, so)
        done = committed_batch()
        if point == "write" and outcome == "killed":
            assert done == nxt + ahead - 1, history
            assert pending(), "the killed batch left no pending instant"
        if point == "committed" and outcome == "killed":
            assert done == nxt, history  # durable in the table; Spark will replay it
    assert sum(1 for h in history if h[2] == "killed") >= 2, history
    outcome, secs, _ = go(driver, None, None, None)
    history.append((len(PLAN), "final", outcome, round(secs, 1)))
    assert outcome == "finished", history

    # the snapshot: the expected state, every value (hudi_ds), the same keys (hudi-rs)
    expected = expected_state(files)
    columns = ["id", "ts", "part", "amount", "note"]
    rows = [(k, *v) for k, v in expected.items()]
    assert_rows(hudi_ds.read(s3_uri, storage_options=so), rows, columns)
    assert_rows(hudi_rs_table(s3_uri, storage_options=so), [(k,) for k in expected], ["id"])

    # each batch committed exactly once, all rows written once, nothing pending or left over
    tl = Timeline.load(storage, 1)
    batches, writes, referenced = [], 0, set()
    for inst in tl.commits():
        md = tl.read_commit_metadata(inst)
        raw = md.extra_metadata.get("_hudi_streaming_sink_checkpoint")
        assert raw, f"{inst} has no streaming checkpoint"
        batches.append(int(json.loads(raw)[IDENTIFIER]))
        for stats in md.partition_to_write_stats.values():
            for s in stats:
                writes += s.num_writes + s.num_deletes
                referenced.add(s.path)
    assert sorted(batches) == list(range(N_FILES)), (batches, history)
    assert writes == N_FILES * ROWS
    assert not pending()
    data_files = {
        f.path
        for f in storage.list_files("", recursive=True)
        if not f.path.startswith(".hoodie") and not f.path.endswith(".hoodie_partition_metadata")
    }
    assert data_files <= referenced, f"debris: {sorted(data_files - referenced)}"
    print("runs:", history)


if __name__ == "__main__":
    drive(*sys.argv[1:6])
