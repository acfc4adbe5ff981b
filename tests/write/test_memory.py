"""Memory of a writer task: bounded by ``write.task.max.size``, whatever the input size.

The fast tests stream COW writes through a task writer under a tiny budget (so merge handles
spill and merge partition by partition) and compare every row, and the write statistics, with
the same writes under an unbounded budget, with a model of the expected rows and with hudi-rs.

The slow tests measure peak memory: each case runs in a fresh subprocess that streams rows through
one :class:`~hudi_ds.write.task_writer.TaskWriter` in batches and reports the peak of the memory
its write holds: the peak of Arrow's memory pool (every buffer of the write, parquet's included)
over the bytes it held after imports and a warm-up write, plus the peak of the Python heap during
the write (``tracemalloc``). Both count bytes allocated, not pages resident: the process's RSS
also holds what the allocator has freed but not yet returned, which jemalloc returns on a timer,
so an RSS peak grows with the machine's load (the 32 MB COW case failed under load that way). The
RSS peak is printed beside it. The acceptance bound is ``2 x budget + 100 MB`` for COW (merge
handles) and MOR (append handles), 32 MB and 256 MB.
"""

from __future__ import annotations

import functools
import gc
import json
import os
import subprocess
import sys
import tempfile
import tracemalloc
from pathlib import Path

import hudi
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import hudi_ds
from hudi_ds.services import run_post_commit_services
from hudi_ds.write.client import WriteClient
from tests.conftest import table_options
from tests.write.test_matrix import assert_no_meta_values

MB = 1 << 20
BATCH = 50_000
OPTS = table_options("mem", partition="city")


COW = table_options("spill", partition="city", table_type="COPY_ON_WRITE")
COLS = ["id", "ts", "city", "fare", "note", "_hoodie_is_deleted"]
STEPS = (0, 1, 2)
TINY = "1"  # MB: a merge handle's share is 128 KB, below one file group's rows


def _rows(ids: np.ndarray, ts: np.ndarray, deleted: np.ndarray | None = None) -> pa.Table:
    sid = pa.array(np.char.zfill(ids.astype(str), 6))
    note = pc.binary_join_element_wise("n", sid, "-", pa.array(ts.astype(str)), "")
    return pa.table(
        {
            "id": pc.binary_join_element_wise("k", sid, ""),
            "ts": pa.array(ts, pa.int64()),
            "city": pa.array(np.where(ids % 3 == 0, "nyc", "sf")),
            "fare": pa.array(ids * 1.5 + ts),
            "note": pc.if_else(pa.array(ids % 5 == 0), pa.scalar(None, pa.string()), note),
            "_hoodie_is_deleted": pa.array(
                np.zeros(len(ids), bool) if deleted is None else deleted
            ),
        }
    )


@functools.cache
def _batches(step: int) -> list[pa.Table]:
    """Step 0: 6,000 inserts. Step 1: updates, late updates, inserts, deletes and the same keys
    again in later batches (they merge across spills). Step 2: a few updates and deletes (no
    spill, but the base files are too large to merge in one pass)."""
    rng = np.random.default_rng(11 + step)
    if step == 0:
        ids = rng.permutation(6000)
        return [_rows(ids[i : i + 500], np.full(500, 100)) for i in range(0, 6000, 500)]
    if step == 2:
        ids = rng.choice(9000, 300, replace=False)
        return [_rows(ids, rng.integers(50, 250, 300), rng.random(300) < 0.2)]
    out = []
    for b in range(10):
        ids = rng.choice(9000, 700, replace=False)
        ts = rng.integers(50, 200, 700)
        out.append(_rows(ids, ts, rng.random(700) < 0.1 if b % 2 else None))
    return out


def _model(batches: list[list[pa.Table]]) -> list[tuple]:
    """Expected rows (event-time ordering: the greatest ts wins, ties to the later write; a
    commit stores no tombstones, so a later commit may insert a deleted key at any ts)."""
    state: dict[str, dict] = {}
    for step in batches:
        for t in step:
            for r in t.to_pylist():
                cur = state.get(r["id"])
                if cur is None or r["ts"] >= cur["ts"]:
                    state[r["id"]] = r
        state = {k: r for k, r in state.items() if not r["_hoodie_is_deleted"]}
    return sorted(tuple(r[c] for c in COLS[:-1]) for r in state.values())


def _ours(path: str) -> list[tuple]:
    t = hudi_ds.read(path, columns=COLS[:-1])
    return sorted(zip(*(t.column(c).to_pylist() for c in COLS[:-1]), strict=True))


def _theirs(path: str) -> list[tuple]:
    batches = hudi.HudiTableBuilder.from_base_uri(path).build().read(hudi.HudiReadOptions())
    t = pa.Table.from_batches(batches)
    return sorted(zip(*(t.column(c).to_pylist() for c in COLS[:-1]), strict=True))


def _write(path: str, options: dict, exclusive: bool) -> tuple[list[dict], int, int, list[str]]:
    """Every step through task writers; returns the write stats, the peak bytes the tasks
    buffered, how many flushes they made and the files of the last commit."""
    stats: list[dict] = []
    files: list[str] = []
    peak = flushes = 0
    for step in STEPS:
        client = WriteClient(path, options, post_commit=run_post_commit_services)
        data = _batches(step)
        inst = client.start(data[0].schema)
        statuses = []
        if exclusive:
            tasks = [client.task_writer(inst)]
        else:  # two Spark-like tasks: COW rows are staged and merged by the commit
            tasks = [client.task_writer(inst, i, 1, 0, exclusive=False) for i in range(2)]
        for i, b in enumerate(data):
            task = tasks[i % len(tasks)]
            task.write(b)
            peak = max(peak, task.buffered_bytes)
        for task in tasks:
            flushes += task.flushes
            statuses += task.close()
        client.commit(inst, statuses)
        timeline = hudi_ds.HudiTable(path).timeline
        md = timeline.read_commit_metadata(timeline.commits()[-1])
        files = [w.path for ws in md.partition_to_write_stats.values() for w in ws]
        for ws in md.partition_to_write_stats.values():
            for w in ws:
                stats.append(
                    {
                        "step": step,
                        "group": (w.partition_path, w.file_id[:8]),  # bucket
                        "num_writes": w.num_writes,
                        "num_deletes": w.num_deletes,
                        "num_update_writes": w.num_update_writes,
                        "num_inserts": w.num_inserts,
                    }
                )
    return sorted(stats, key=lambda s: (s["step"], s["group"])), peak, flushes, files


_FEW_DESCRIPTORS = """
import resource, sys
import numpy as np, pyarrow as pa
import hudi_ds
resource.setrlimit(resource.RLIMIT_NOFILE, (128, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
ids = np.arange(40_000)
rows = pa.table({"id": pa.array(np.char.add("k", ids.astype(str))), "ts": pa.array(ids),
                 "city": pa.array(np.where(ids % 2 == 0, "nyc", "sf")),
                 "fare": pa.array(ids * 1.5), "note": pa.array(np.char.add("n", ids.astype(str))),
                 "_hoodie_is_deleted": pa.array(np.zeros(len(ids), bool))})
opts = {**dict(a.split("=", 1) for a in sys.argv[2:])}
batches = rows.to_batches(2_000)
hudi_ds.write(sys.argv[1], pa.RecordBatchReader.from_batches(rows.schema, batches), opts)
"""


def test_a_write_into_more_file_groups_than_open_files_allowed(tmp_path: Path) -> None:
    """A MOR task flushing under its budget into more file groups than the process may hold
    files open (here 128) closes each local log file between flushes and appends to it on the
    next: the write completes with every row."""
    path = str(tmp_path / "t")
    opts = {**OPTS, "hoodie.bucket.index.num.buckets": "200", "write.task.max.size": TINY}
    args = [f"{k}={v}" for k, v in opts.items()]
    subprocess.run([sys.executable, "-c", _FEW_DESCRIPTORS, path, *args], check=True)
    t = hudi_ds.read(path, columns=["id", "ts"])
    assert t.num_rows == 40_000 == len(set(t.column("id").to_pylist()))
    assert sorted(t.column("ts").to_pylist()) == list(range(40_000))
    logs = [f.name for f in Path(path).rglob(".*.log.*")]
    assert 300 < len(logs) <= 400  # one log file a file group, appended to by every flush
    theirs = hudi.HudiTableBuilder.from_base_uri(path).build().read(hudi.HudiReadOptions())
    assert sum(b.num_rows for b in theirs) == 40_000


@pytest.mark.parametrize("meta", [True, False], ids=["meta-fields", "virtual-keys"])
@pytest.mark.parametrize("exclusive", [True, False], ids=["task-merge", "staged-merge"])
def test_cow_merge_under_budget_spills_and_keeps_every_row(
    exclusive: bool, meta: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without meta fields (``virtual-keys``) the streamed and partitioned merges key the base
    file's rows by their record key field."""
    from hudi_ds.write import merge_handle

    # base files stream in several batches
    monkeypatch.setattr(merge_handle, "_BASE_READ_ROWS", 512, raising=False)
    small, big = str(tmp_path / "small"), str(tmp_path / "big")
    cow = COW if meta else {**COW, "hoodie.populate.meta.fields": "false"}
    opts = {**cow, "write.task.max.size": TINY}
    stats_small, peak, flushes, last = _write(small, opts, exclusive)
    stats_big, _, _, _ = _write(big, cow, exclusive)
    budget = float(TINY) * MB
    # the task's buffers stay under a third of the budget after every batch ...
    assert 0 < peak <= budget / 3, peak
    assert flushes > 0
    # ... and the rows and write statistics are those of an unbounded merge
    expected = _model([_batches(s) for s in STEPS])
    assert _ours(small) == _ours(big) == expected
    assert _theirs(small) == expected
    assert stats_small == stats_big
    if not meta:
        assert_no_meta_values(Path(small))
    # the new base files were written partition by partition (several row groups), with
    # Hudi's min/max record key footer over all of them
    for f in Path(small).rglob("*.parquet") if meta else ():
        pf = pq.ParquetFile(f)
        keys = pf.read(columns=["_hoodie_record_key"]).column(0).to_pylist()
        md = pf.schema_arrow.metadata or {}
        meta = pf.metadata.metadata
        assert meta[b"hoodie_min_record_key"].decode() == min(keys), (f, md)
        assert meta[b"hoodie_max_record_key"].decode() == max(keys)
        assert len(keys) == len(set(keys))
    assert max(pq.ParquetFile(f).num_row_groups for f in Path(small).rglob("*.parquet")) > 1
    # the last step spilled nothing, but its base files were too large to merge in one pass:
    # they streamed batch by batch against the incoming rows
    assert last and all(pq.ParquetFile(Path(small) / f).num_row_groups > 1 for f in last)


def test_spill_files_live_in_the_spill_path_until_close(tmp_path: Path) -> None:
    spill = tmp_path / "spill"
    spill.mkdir()
    path = str(tmp_path / "t")
    opts = {**COW, "write.task.max.size": TINY, "hoodie.memory.spillable.map.path": str(spill)}
    client = WriteClient(path, opts, post_commit=run_post_commit_services)
    data = _batches(0)
    inst = client.start(data[0].schema)
    task = client.task_writer(inst)
    for b in data:
        task.write(b)
    assert list(spill.rglob("*.arrows")), "merge handles spilled nothing"
    client.commit(inst, task.close())
    assert not list(spill.iterdir())
    assert _ours(path) == _theirs(path) == _model([data])
    # a failed task's spill files go when its handles are collected
    inst = client.start(data[0].schema)
    failed = client.task_writer(inst)
    for b in data:
        failed.write(b)
    assert list(spill.iterdir())
    del failed
    gc.collect()
    assert not list(spill.iterdir())


@pytest.mark.parametrize("bits", [1, 4, 6])
def test_key_partitions_keep_each_key_whole_and_in_write_order(bits: int, tmp_path: Path) -> None:
    from hudi_ds.write.merge_handle import _KeyPartitions  # spill files of merge handles

    rng = np.random.default_rng(bits)
    keys = np.concatenate([rng.permutation(3000) for _ in range(3)])  # 3 versions per key
    rows = pa.table(
        {
            "_hoodie_record_key": pa.array([f"key-{k}" for k in keys]),
            "seq": pa.array(np.arange(len(keys))),
        }
    )
    spilled = _KeyPartitions(str(tmp_path), "data", 4)  # rows spill into 16 partitions ...
    for i in range(0, rows.num_rows, 700):
        spilled.add(rows.slice(i, 700))
    parts = list(spilled.regrouped(bits))  # ... the merge reads them as 2**bits
    assert len(parts) == 1 << bits
    seen: dict[str, int] = {}
    got = []
    for p, t in enumerate(parts):
        assert t is not None and t.num_rows > 0.5 * rows.num_rows / len(parts)  # spread
        for k in set(t.column(0).to_pylist()):
            assert seen.setdefault(k, p) == p  # a key lives in one partition
        got += t.to_pylist()
    # every version once; per key in write order
    assert sorted(got, key=lambda r: r["seq"]) == rows.to_pylist()
    order: dict[str, list[int]] = {}
    for r in got:
        order.setdefault(r["_hoodie_record_key"], []).append(r["seq"])
    assert all(v == sorted(v) for v in order.values())
    assert not list(tmp_path.iterdir())  # read partitions are deleted


def _status_kb(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"{field} not in /proc/self/status")


def _batch(start: int, n: int) -> pa.Table:
    i = np.arange(start, start + n, dtype=np.int64)
    ids = pc.binary_join_element_wise("k", pa.array(i).cast(pa.string()), "")
    return pa.table(
        {
            "id": ids,
            "ts": pa.array(i % 1000, pa.int64()),
            "city": pa.array(np.where(i % 2 == 0, "nyc", "sf")),
            "fare": pa.array(i.astype(np.float64) / 7),
            "note": pc.binary_join_element_wise("note-", ids, "-xxxxxxxx", ""),
        }
    )


def _stream(client: WriteClient, start: int, rows: int) -> None:
    inst = client.start(_batch(0, 10).schema)
    task = client.task_writer(inst)
    for s in range(start, start + rows, BATCH):
        task.write(_batch(s, min(BATCH, start + rows - s)))
    statuses = task.close()
    client.commit(inst, statuses)


def _child(
    table_type: str,
    budget_mb: int,
    rows: int,
    root: str,
    upsert: int,
    build: bool,
    extra: dict[str, str],
) -> None:
    """Stream ``rows`` rows through one task writer and print its peak memory growth (JSON).

    With ``upsert`` > 0 the ``rows`` are the table an earlier child wrote (``build``), and the
    measured write upserts ``upsert`` rows (half updates, half new keys) into it.
    """
    opts = {
        **OPTS,
        "hoodie.datasource.write.table.type": table_type,
        "write.task.max.size": str(budget_mb),
        **extra,
    }
    path = os.path.join(root, "t")
    if build:
        _stream(WriteClient(path, opts, post_commit=run_post_commit_services), 0, rows)
        return
    # warm-up: import and run every code path once on a small table
    warm = WriteClient(os.path.join(root, "warm"), opts, post_commit=run_post_commit_services)
    inst = warm.start(_batch(0, 10).schema)
    task = warm.task_writer(inst)
    task.write(_batch(0, 1000))
    warm.commit(inst, task.close())
    del warm, task
    gc.collect()
    pool = pa.default_memory_pool()
    pool.release_unused()
    base_kb = _status_kb("VmRSS")
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # reset VmHWM to the current RSS
    except OSError:
        base_kb = _status_kb("VmHWM")
    # the pool's peak counts from the process's start: the warm-up's (1,000 rows) is far below
    arrow_base = pool.bytes_allocated()
    tracemalloc.start()
    if upsert:
        _stream(
            WriteClient(path, opts, post_commit=run_post_commit_services),
            rows - upsert // 2,
            upsert,
        )
    else:
        _stream(WriteClient(path, opts, post_commit=run_post_commit_services), 0, rows)
    python_peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    arrow_peak = pool.max_memory() - arrow_base
    peak_kb = _status_kb("VmHWM")
    print(
        json.dumps(
            {
                "growth_mb": (arrow_peak + python_peak) / MB,
                "arrow_mb": arrow_peak / MB,
                "python_mb": python_peak / MB,
                "rss_growth_mb": (peak_kb - base_kb) / 1024,
            }
        )
    )


def _measure(
    table_type: str, budget_mb: int, rows: int, upsert: int = 0, extra: str = "{}"
) -> float:
    """Peak memory growth in MB (Arrow's pool and the Python heap) of a subprocess streaming
    ``rows`` rows."""
    import hudi_ds

    repo = str(Path(hudi_ds.__file__).resolve().parent.parent)
    env = {**os.environ, "PYTHONPATH": repo + os.pathsep + os.environ.get("PYTHONPATH", "")}
    with tempfile.TemporaryDirectory(prefix="hudi-mem-") as root:
        args = [sys.executable, __file__, table_type, str(budget_mb), str(rows), root, str(upsert)]
        for build in ([True] if upsert else []) + [False]:
            out = subprocess.run(
                [*args, "build" if build else "measure", extra],
                env=env,
                capture_output=True,
                text=True,
                timeout=600,
                check=False,
            )
            assert out.returncode == 0, out.stderr[-4000:]
    print(table_type, budget_mb, rows, upsert, out.stdout.strip().splitlines()[-1])  # RSS too
    return float(json.loads(out.stdout.strip().splitlines()[-1])["growth_mb"])


#: the other bounds of buffered rows lifted, so that only the task budget can hold the peak:
#: a handle's own flush size (``write.batch.size``, 64 MB) and the largest log data block
#: (``hoodie.logfile.data.block.max.size``, 256 MB) -- with them at their defaults a MOR write
#: of 2M rows peaks at ~530 MB even with an unbounded task budget, under the 256 MB case's bound
ONLY_THE_BUDGET = json.dumps(
    {"write.batch.size": "100000", "hoodie.logfile.data.block.max.size": "64g"}
)


def _assert_within_budget(table_type: str, budget_mb: int, growth: float) -> None:
    assert growth <= 2 * budget_mb + 100, f"{table_type} {budget_mb} MB: grew {growth:.0f} MB"


@pytest.mark.slow
@pytest.mark.parametrize(
    ("table_type", "budget_mb"),
    [("MERGE_ON_READ", 32), ("COPY_ON_WRITE", 256), ("MERGE_ON_READ", 256)],
)
def test_peak_memory_streaming_within_budget(table_type: str, budget_mb: int) -> None:
    """2M rows under 32 MB, 3M (COW) and 4M (MOR) under 256 MB: enough that buffering them all
    would break the bound. Measured with ``write.task.max.size=100000`` (bytes allocated, Arrow's
    pool and the Python heap): 2M rows MOR ~410 MB, against 164; 3M rows COW ~820 MB, MOR ~590
    MB, against 612 -- so MOR writes 4M rows there (~780 MB). COW under 32 MB: below, with the
    growth check (one measurement of its 2M rows, whichever xdist worker runs it)."""
    big = {"COPY_ON_WRITE": 3_000_000, "MERGE_ON_READ": 4_000_000}
    rows = 2_000_000 if budget_mb < 100 else big[table_type]
    _assert_within_budget(
        table_type, budget_mb, _measure(table_type, budget_mb, rows, extra=ONLY_THE_BUDGET)
    )


@pytest.mark.slow
def test_peak_memory_does_not_grow_with_input_size() -> None:
    """COW under 32 MB: 2M rows within the budget (as the cases above), and about the peak of
    1M rows."""
    one = _measure("COPY_ON_WRITE", 32, 1_000_000, extra=ONLY_THE_BUDGET)
    two = _measure("COPY_ON_WRITE", 32, 2_000_000, extra=ONLY_THE_BUDGET)
    _assert_within_budget("COPY_ON_WRITE", 32, two)
    # twice the rows, about the same peak (allocator noise aside)
    assert two - one <= 48, f"1M rows: {one:.0f} MB, 2M rows: {two:.0f} MB"


@pytest.mark.slow
def test_peak_memory_of_upsert_into_large_file_groups_within_budget() -> None:
    # 1M rows in 4 file groups (each ~4x the merge's 8 MB share), then 100k upserts: the
    # merge streams the base files instead of holding them
    growth = _measure("COPY_ON_WRITE", 64, 1_000_000, 100_000)
    assert growth <= 2 * 64 + 100, f"grew {growth:.0f} MB"


if __name__ == "__main__":
    a = sys.argv
    _child(a[1], int(a[2]), int(a[3]), a[4], int(a[5]), a[6] == "build", json.loads(a[7]))


def test_streamed_base_batches_are_whole_across_row_groups(tmp_path: Path) -> None:
    """A base file read as dictionaries ends a batch at every row group (each has its own
    dictionary); the streamed merge regroups the slivers into whole batches, in order, so it
    does not write them as row groups of a few rows (which its next merge would split again)."""
    from hudi_ds.write.merge_handle import _rebatched

    path = tmp_path / "groups.parquet"
    rows = pa.table({"k": [f"k{i}" for i in range(40)], "c": ["ab"[i % 2] for i in range(40)]})
    pq.write_table(rows, path, row_group_size=7)
    pf = pq.ParquetFile(path, read_dictionary=["c"])
    pieces = [pa.Table.from_batches([b]) for b in pf.iter_batches(batch_size=10)]
    assert sorted({t.num_rows for t in pieces}) != [10]  # slivers at row group ends
    out = list(_rebatched(iter(pieces), 10))
    assert [t.num_rows for t in out] == [10, 10, 10, 10]
    assert pa.concat_tables(out).column("k").to_pylist() == rows.column("k").to_pylist()
    assert [t.num_rows for t in _rebatched(iter(pieces[:3]), 16)] == [
        sum(t.num_rows for t in pieces[:3])
    ]
