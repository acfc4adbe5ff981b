"""Exactly-once under driver kills, on S3 and on Azure Blob: the streaming crash test's machinery
(``test_streaming_crash.py``: a replayable Parquet source of change events, a sink that pauses
at named points, SIGKILL of the driver's whole process group, restarts from the checkpoint)
with one driver running two queries of the same source, one into a table on the session's local
S3 server (moto), one into a table on its Azure Blob server (Azurite). The storage options go as
data source options; the executors write to the stores directly. Each SIGKILL comes when both
queries have paused at their named point: a task of a batch has written its files (S3 in the
first run, Azure in the second), right after the commit point before Spark recorded the batch
(Azure first, S3 second). After a final run each table, read by hudi_ds and by hudi-rs (with its
storage options), is the expected state, every micro-batch is committed exactly once, and
nothing is pending or left outside the completed commits. One driver for both stores: the
stores cost one more query per run, not more driver processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

N_FILES = 2
ROWS = 300
#: a run's time limit: calls to the local servers are slower than local files
RUN_TIMEOUT = 300.0
#: per run, the pause of each store's query: (point, batch relative to its next batch to write).
#: S3: batch 0 committed, a task of batch 1 wrote its files | batch 1 redone, committed | batch 1
#: replayed, skipped. Azure: batch 0 committed | batch 0 replayed, skipped, a task of batch 1
#: wrote its files | batch 1 redone. Two files: each micro-batch costs both queries CPU.
PLAN: list[dict[str, tuple[str, int]]] = [
    {"s3": ("write", 1), "az": ("committed", 0)},
    {"s3": ("committed", 0), "az": ("write", 0)},
]  # kills before a commit and at random moments: test_streaming_crash.py (local table)


def drive(src: str, targets_json: str, signal_dir: str) -> None:
    """One run of the streaming job (this file as a script): one query per target table."""
    from tests.spark.test_streaming_crash import OPTIONS, SCHEMA, driver_session

    # a store's paused "write" may hold both tasks of its batch: 4 slots leave the other query
    # 2 to reach its own pause
    spark = driver_session("local[4]", "hudi_ds-stream-crash-stores", signal_dir)
    queries = []
    for t in json.loads(targets_json):
        events = (
            spark.readStream.schema(SCHEMA)
            .option("maxFilesPerTrigger", 1)
            .parquet(src)
            .repartition(2)
        )
        writer = (
            events.writeStream.format("hudi_py")
            .queryName(t["tag"])
            .options(**OPTIONS, **t["so"])
            .option("checkpointLocation", t["checkpoint"])
            .trigger(availableNow=True)
        )
        queries.append(writer.start(t["table"]))
    Path(signal_dir, "started").touch()
    for q in queries:
        q.awaitTermination()
    spark.stop()


def spawn(tmp: Path, run: int, targets: list[dict[str, Any]]) -> Any:
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
        proc = subprocess.Popen(
            [sys.executable, __file__, str(tmp / "src"), json.dumps(targets), str(sig)],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )
    return Driver(run, proc, sig, log)


@pytest.mark.slow
@pytest.mark.spark
def test_exactly_once_under_driver_kills_on_s3_and_azure(
    tmp_path: Path,
    moto_s3: Any,
    s3_uri: str,
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
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
        streaming_commits,
    )

    monkeypatch.setattr(crash, "RUN_TIMEOUT", RUN_TIMEOUT)
    uris = {"s3": s3_uri}
    sos = {"s3": {k: str(v) for k, v in moto_s3.storage_options().items()}}
    try:  # without npm there is no Azurite: S3 alone keeps its kills
        azurite = request.getfixturevalue("azurite")
        uris["az"] = request.getfixturevalue("az_uri")
        sos["az"] = {k: str(v) for k, v in azurite.storage_options().items()}
    except pytest.skip.Exception as e:  # (the Azure batch write's skip names it in -ra)
        print(f"the streaming kills run on S3 only: {e}")
    storages = {tag: Storage(uris[tag], storage_options=sos[tag]) for tag in uris}
    targets = [
        {"tag": tag, "table": uris[tag], "so": sos[tag], "checkpoint": str(tmp_path / f"ck-{tag}")}
        for tag in uris
    ]
    files = make_source(tmp_path / "src", n_files=N_FILES, rows=ROWS)

    def committed_batch(tag: str) -> int:
        if not storages[tag].exists(".hoodie/hoodie.properties"):
            return -1
        got = WriteClient(storages[tag], OPTIONS).committed_streaming_batch(IDENTIFIER)
        return -1 if got is None else got

    def pending(tag: str) -> list[str]:
        return [str(i) for i in Timeline.load(storages[tag], 1).pending()]

    history: list[tuple[Any, ...]] = []
    driver = spawn(tmp_path, 0, targets)
    for run, plan in enumerate(PLAN):
        points = {tag: at for tag, at in plan.items() if tag in uris}
        nxt = {tag: committed_batch(tag) + 1 for tag in uris}
        pause = ",".join(f"{p}:{nxt[tag] + ahead}@{tag}" for tag, (p, ahead) in points.items())
        outcome, secs, driver = go(
            driver, pause, None, lambda r=run: spawn(tmp_path, r + 1, targets)
        )
        history.append((run, pause, outcome, round(secs, 1)))
        assert outcome == "killed", history
        if driver is None:
            driver = spawn(tmp_path, run + 1, targets)
        for tag, (point, ahead) in points.items():
            done = committed_batch(tag)
            if point == "write":
                assert done == nxt[tag] + ahead - 1, (tag, history)
                assert pending(tag), f"{tag}: the killed batch left no pending instant"
            else:  # committed: durable in the table; Spark will replay it
                assert done == nxt[tag], (tag, history)
    outcome, secs, _ = go(driver, None, None, None)
    history.append((len(PLAN), "final", outcome, round(secs, 1)))
    assert outcome == "finished", history

    expected = expected_state(files)
    columns = ["id", "ts", "part", "amount", "note"]
    rows = [(k, *v) for k, v in expected.items()]
    for tag, uri in uris.items():
        so, storage = sos[tag], storages[tag]
        # the snapshot: the expected state, every value (hudi_ds), the same keys (hudi-rs)
        assert_rows(hudi_ds.read(uri, storage_options=so), rows, columns)
        assert_rows(hudi_rs_table(uri, storage_options=so), [(k,) for k in expected], ["id"])

        # each batch committed exactly once, all rows written once, nothing pending or left
        batches, writes, referenced = streaming_commits(storage, tag)
        assert sorted(batches) == list(range(N_FILES)), (tag, batches, history)
        assert writes == N_FILES * ROWS, tag
        assert not pending(tag), tag
        data_files = {
            f.path
            for f in storage.list_files("", recursive=True)
            if not f.path.startswith(".hoodie")
            and not f.path.endswith(".hoodie_partition_metadata")
        }
        assert data_files <= referenced, f"{tag} debris: {sorted(data_files - referenced)}"
    print("runs:", history)


if __name__ == "__main__":
    drive(*sys.argv[1:4])
