"""Several processes write one table at the default concurrency mode (``single_writer``).

A single writer rolls back the failed writes it finds when it starts (Hudi's EAGER policy).
The write of another *live* writer is not failed: a writer that finds one refuses to start
(``ConcurrentWriterError``, naming ``optimistic_concurrency_control``) instead of rolling it
back; two writers that start at the same moment are decided at commit (the older instant
commits, the younger is refused); a writer stalled past its heartbeat is rolled back and
refused at its commit. Whatever the interleaving, every acknowledged row is in the table,
nothing unacknowledged is, and both readers (hudi_ds, hudi-rs) read it.

The writer processes are :data:`tests.conftest.WRITER` (a loop of upserts of random keys of a
shared key space, ``ts = time.time_ns()``, the acknowledged batches logged) and
:data:`ONE_WRITE` (one upsert, stalled where ``HUDI_DS_STALL_AT`` says).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pyarrow as pa
import pytest

import hudi_ds
from hudi_ds.concurrency.heartbeat import heartbeat_expired
from hudi_ds.errors import ConcurrentWriterError
from hudi_ds.storage import Storage
from tests.conftest import (
    assert_rows,
    finish_process,
    hudi_rs_table,
    spawn_python,
    spawn_writer,
    table_options,
    wait_stopped,
)

COLUMNS = ["id", "ts", "p", "who", "v"]
PARTITIONS = 4
OPTION = "hoodie.write.concurrency.mode=optimistic_concurrency_control"


def options(table_type: str) -> dict[str, str]:
    """A new user's options: no concurrency option, the table services at their defaults."""
    return table_options("single", partition="p", table_type=table_type)


SEED = pa.table({"id": ["seed"], "ts": [0], "p": ["p0"], "who": [0], "v": ["seed"]})
SEED_ROW = ("seed", 0, "p0", 0, "seed")


def run_writers(
    path: str, opts: dict[str, str], writers: int, seconds: float, tmp: Path
) -> list[dict]:
    """``writers`` :data:`~tests.conftest.WRITER` processes upserting into ``path`` for
    ``seconds``; per writer (seed order 1..n) its stats, acknowledged batches and errors."""
    hudi_ds.write(path, SEED, opts)  # the table exists before the writers race
    procs = []
    for seed in range(1, writers + 1):
        log, errors = tmp / f"w{seed}.jsonl", tmp / f"w{seed}.errors.jsonl"
        proc = spawn_writer(
            path,
            opts,
            seconds,
            seed,
            log,
            key_space=3000,
            batch_keys=300,
            partitions=PARTITIONS,
            errors=errors,
        )
        procs.append((proc, log, errors))
    results = []
    for proc, log, errors in procs:
        stats = finish_process(proc, seconds + 120)
        results.append(
            {
                "stats": stats,
                "batches": [json.loads(x) for x in log.read_text().splitlines()],
                "errors": [json.loads(x) for x in errors.read_text().splitlines()],
            }
        )
    return results


def expected_rows(results: list[dict]) -> list[tuple]:
    """Per key the full row of the acknowledged batch with the greatest ts (event-time
    ordering): (id, ts, p, who, v)."""
    state: dict[str, tuple] = {"seed": SEED_ROW}
    for who, r in enumerate(results, start=1):
        for b in r["batches"]:
            ts = b["ts"]
            for k in b["keys"]:
                cur = state.get(f"k{k}")
                if cur is None or ts >= cur[1]:
                    state[f"k{k}"] = (f"k{k}", ts, f"p{k % PARTITIONS}", who, f"w{who}-{ts}-k{k}")
    return list(state.values())


def check_table(path: str, expected: list[tuple]) -> None:
    """Both readers read exactly ``expected``; nothing is pending, no writer is registered."""
    assert_rows(hudi_ds.read(path), expected, COLUMNS)
    assert_rows(hudi_rs_table(path), expected, COLUMNS)
    table = hudi_ds.HudiTable(path)
    assert [i for i in table.timeline.instants if not i.is_completed] == []
    hoodie = Path(path) / ".hoodie"
    assert not list((hoodie / ".aux" / ".hudi_py_writers").glob("*"))
    assert not [f for f in (hoodie / ".heartbeat").glob("*") if f.is_file()]


def check_writers(path: str, opts: dict[str, str], writers: int, seconds: float, tmp: Path) -> None:
    results = run_writers(path, opts, writers, seconds, tmp)
    errors = [e for r in results for e in r["errors"]]
    # every failed write says what happened and what to do
    unclear = [e for e in errors if e["type"] != "hudi_ds.errors.ConcurrentWriterError"]
    assert not unclear, "\n".join(e["trace"] for e in unclear[:3])
    assert all(OPTION in e["message"] for e in errors), errors[:5]
    assert errors, "the writers never met: the test proves nothing"
    assert all(len(r["batches"]) >= 2 for r in results), [len(r["batches"]) for r in results]
    check_table(path, expected_rows(results))


@pytest.mark.slow
@pytest.mark.parametrize(
    ("table_type", "writers"),
    [
        # make test: each table type and each number of writers once; the other two under
        # make test-stress (timed writers: each case is its seconds plus the writers' start)
        pytest.param("MERGE_ON_READ", 2, marks=pytest.mark.stress),
        ("MERGE_ON_READ", 3),
        ("COPY_ON_WRITE", 2),
        pytest.param("COPY_ON_WRITE", 3, marks=pytest.mark.stress),
    ],
)
def test_writers_at_the_default_mode_lose_nothing(
    tmp_path: Path, table_type: str, writers: int
) -> None:
    """The writers take turns: each write either commits (and stays) or is refused with a
    ConcurrentWriterError; no acknowledged row is lost (before: commits failed with
    InstantNotFoundError or a raw OSError, the table became unreadable, rows went missing)."""
    seconds = float(os.environ.get("HUDI_DS_SINGLE_WRITER_SECONDS", "10"))
    check_writers(str(tmp_path / "t"), options(table_type), writers, seconds, tmp_path)


@pytest.mark.stress
@pytest.mark.parametrize("table_type", ["MERGE_ON_READ", "COPY_ON_WRITE"])
def test_three_writers_at_the_default_mode_for_a_minute(tmp_path: Path, table_type: str) -> None:
    """The same as above for 60 s: the table services (compaction, cleaning, archival) run
    many times between the writers' turns."""
    check_writers(str(tmp_path / "t"), options(table_type), 3, 60, tmp_path)


# One upsert of rows given as JSON: prints {"instant"} or {"error": type, "message"}.
ONE_WRITE = r"""
import json, sys
import pyarrow as pa
import hudi_ds
path, opts, rows = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3])
try:
    instant = hudi_ds.write(path, pa.table(rows), opts)
except Exception as e:
    print(json.dumps({"error": f"{type(e).__module__}.{type(e).__qualname__}",
                      "message": str(e)}))
else:
    print(json.dumps({"instant": instant}))
"""


def rows_of(who: int, keys: list[str], ts: int) -> dict[str, list]:
    return {
        "id": keys,
        "ts": [ts] * len(keys),
        "p": [f"p{ord(k[0]) % PARTITIONS}" for k in keys],
        "who": [who] * len(keys),
        "v": [f"w{who}-{k}" for k in keys],
    }


def as_tuples(rows: dict[str, list]) -> list[tuple]:
    return list(zip(*(rows[c] for c in COLUMNS), strict=True))


def spawn_one(
    path: str, opts: dict[str, str], rows: dict[str, list], stall: str
) -> subprocess.Popen[str]:
    proc = spawn_python(
        ONE_WRITE, path, json.dumps(opts), json.dumps(rows), env={"HUDI_DS_STALL_AT": stall}
    )
    wait_stopped(proc)
    return proc


def resume(proc: subprocess.Popen[str]) -> dict:
    proc.send_signal(signal.SIGCONT)
    return finish_process(proc, 60)


def merged(*parts: list[tuple]) -> list[tuple]:
    """The rows of successive writes (a later write's row of a key wins)."""
    out: dict[str, tuple] = {}
    for part in parts:
        out.update((r[0], r) for r in part)
    return list(out.values())


@pytest.mark.parametrize("table_type", ["MERGE_ON_READ", "COPY_ON_WRITE"])
def test_a_live_writer_is_not_rolled_back(tmp_path: Path, table_type: str) -> None:
    """Writer A is stopped with its files written and its heartbeat fresh: writer B refuses
    to start, naming the option, and leaves A's write alone; A then commits. (Before: B
    rolled back A's instant as a failed write, and A's commit failed on a missing file.)"""
    path = str(tmp_path / "t")
    opts = options(table_type)
    hudi_ds.write(path, SEED, opts)
    a_rows = rows_of(1, ["a", "b", "c"], 1)
    a = spawn_one(path, opts, a_rows, "after_files")
    b_rows = rows_of(2, ["b", "d"], 2)
    try:
        with pytest.raises(ConcurrentWriterError, match=OPTION) as refused:
            hudi_ds.write(path, pa.table(b_rows), opts)
    finally:
        done = resume(a)
    assert "heartbeat younger than" in str(refused.value)
    assert "instant" in done, done
    check_table(path, merged([SEED_ROW], as_tuples(a_rows)))


#: heartbeats every 0.3 s, failed after 0.6 s without one
SHORT_HEARTBEAT = {
    "hoodie.client.heartbeat.interval_in_ms": "300",
    "hoodie.client.heartbeat.tolerable.misses": "2",
}


def wait_heartbeat_expired(path: str, timeout_s: float = 0.6) -> None:
    """Until the heartbeat of the table's one pending write is older than ``timeout_s`` (its
    writer is stopped: the heartbeat is not refreshed any more)."""
    pending = [i for i in hudi_ds.HudiTable(path).timeline.instants if not i.is_completed]
    instant = pending[0].requested_time if pending else None
    if instant is None:  # completed, its record not yet released: the record's heartbeat
        records = list((Path(path) / ".hoodie" / ".aux" / ".hudi_py_writers").iterdir())
        instant = records[0].name
    storage = Storage(path)
    deadline = time.monotonic() + 30
    while not heartbeat_expired(storage, instant, timeout_s):
        assert time.monotonic() < deadline, "the stopped writer's heartbeat stays fresh"
        time.sleep(0.05)


@pytest.mark.parametrize("stall", ["after_files", "commit_locked"])
def test_a_writer_stalled_past_its_heartbeat_is_rolled_back_and_refused(
    tmp_path: Path, stall: str
) -> None:
    """Writer A is stopped (every thread, its heartbeat's too) past its heartbeat's expiry:
    it counts as failed, writer B rolls it back and commits. A, continued, does not publish
    its rolled-back instant: it fails with a ConcurrentWriterError. (Before: A failed with a
    raw InstantNotFoundError -- or, stopped after its commit check, published an instant
    whose files were gone.)"""
    path = str(tmp_path / "t")
    opts = {**options("MERGE_ON_READ"), **SHORT_HEARTBEAT}
    hudi_ds.write(path, SEED, opts)
    a = spawn_one(path, opts, rows_of(1, ["a", "b", "c"], 1), stall)
    try:
        wait_heartbeat_expired(path)
        b_rows = rows_of(2, ["b", "d"], 2)
        hudi_ds.write(path, pa.table(b_rows), opts)
    finally:
        done = resume(a)
    assert done.get("error") == "hudi_ds.errors.ConcurrentWriterError", done
    assert OPTION in done["message"]
    check_table(path, merged([SEED_ROW], as_tuples(b_rows)))
    debris = [p for p in Path(path).rglob("*") if p.is_file() and ".hoodie" not in p.parts]
    table = hudi_ds.HudiTable(path)
    written = {
        Path(s.path).name
        for i in table.timeline.commits()
        for stats in table.timeline.read_commit_metadata(i).partition_to_write_stats.values()
        for s in stats
    }
    assert not [
        p for p in debris if not p.name.startswith(".hoodie_partition") and p.name not in written
    ]


def test_a_writer_stalled_after_its_commit_keeps_it(tmp_path: Path) -> None:
    """Writer A is stopped right after writing its completed instant, past its heartbeat's
    expiry: writer B finds A's write done (it only forgets A's writer record) and writes;
    A, continued, keeps its commit -- both writes stand."""
    path = str(tmp_path / "t")
    opts = {**options("COPY_ON_WRITE"), **SHORT_HEARTBEAT}
    hudi_ds.write(path, SEED, opts)
    a_rows = rows_of(1, ["a", "b", "c"], 1)
    a = spawn_one(path, opts, a_rows, "commit_written")
    try:
        wait_heartbeat_expired(path)
        b_rows = rows_of(2, ["b", "d"], 2)
        hudi_ds.write(path, pa.table(b_rows), opts)
    finally:
        done = resume(a)
    assert "instant" in done, done
    check_table(path, merged([SEED_ROW], as_tuples(a_rows), as_tuples(b_rows)))


def test_a_writer_starting_while_another_claims_refuses(tmp_path: Path) -> None:
    """Writer B is stopped right after claiming its instant, before it looked for other
    writers; writer A, starting then, finds B's claim alive and refuses (each writer claims
    before it looks: of two writers starting together, at least one sees the other). B then
    finds no one and commits."""
    path = str(tmp_path / "t")
    opts = options("MERGE_ON_READ")
    hudi_ds.write(path, SEED, opts)
    b_rows = rows_of(2, ["a", "d"], 2)
    b = spawn_one(path, opts, b_rows, "start_claimed")
    try:
        with pytest.raises(ConcurrentWriterError, match=OPTION):
            hudi_ds.write(path, pa.table(rows_of(1, ["a", "b", "c"], 1)), opts)
    finally:
        done = resume(b)
    assert "instant" in done, done
    check_table(path, merged([SEED_ROW], as_tuples(b_rows)))


def test_a_write_planned_before_another_commit_is_refused(tmp_path: Path) -> None:
    """Writer B is stopped after reading the table, before claiming its instant; writer A
    writes and commits meanwhile. B, continued, finds no other writer, but its plan does not
    know A's commit: its commit is refused -- on a COW table its merge would rewrite the file
    group without A's update."""
    path = str(tmp_path / "t")
    opts = options("COPY_ON_WRITE")
    hudi_ds.write(path, SEED, opts)
    b = spawn_one(path, opts, rows_of(2, ["a", "d"], 2), "start_opened")
    a_rows = rows_of(1, ["a", "b", "c"], 1)
    try:
        hudi_ds.write(path, pa.table(a_rows), opts)
    finally:
        done = resume(b)
    assert done.get("error") == "hudi_ds.errors.ConcurrentWriterError", done
    assert OPTION in done["message"] and "committed instant" in done["message"]
    check_table(path, merged([SEED_ROW], as_tuples(a_rows)))
