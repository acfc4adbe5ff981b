"""The record-index benchmark: its upserts leave the table as written, its floor does the work
of the last batch's commit (the same files, as many rows each) and the report sets each goal
beside what the floor allows."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq

from bench import record_index as ri

ROWS = 40_000
UPDATES = 2_000


def test_upsert_reports_the_floor_of_the_last_commit(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    ri.build(path, ROWS)
    res = ri.upsert(path, "RECORD_INDEX", ROWS, UPDATES)
    assert res["check"]["correct"], res["check"]
    files, inserts = ri._last_commit_files(path)
    fl = res["floor"]
    # the batch's new keys; at this size every partition's one file group is a small file
    # the batch rewrites (updates and inserts in one new base file)
    assert inserts == fl["inserts"] == UPDATES // 5
    assert fl["files"] == len(files) == fl["log_files"] + fl["base_rewrites"] == 8
    assert fl["rows_written"] == sum(n for _, n, _ in files)
    # each rewritten base file is the previous one of its file group plus the batch's rows
    for written, n, prev in files:
        if prev is not None:
            assert (
                pq.ParquetFile(prev).metadata.num_rows
                < n
                == pq.ParquetFile(written).metadata.num_rows
            )
    assert fl["base_rewrites"] == sum(1 for *_, prev in files if prev is not None) >= 1
    assert 0 < fl["cpu_s"] < res["cpu_s"] * 10


def _run(rows: int, index: str, cpu: float, floor: float | None = None) -> dict:
    r = {
        "rows": rows,
        "index": index,
        "updates": 100,
        "upsert_s": cpu,
        "cpu_s": cpu,
        "cold_s": cpu,
        "cold_cpu_s": cpu,
        "second_s": cpu,
        "second_cpu_s": cpu,
        "check": {"correct": True},
    }
    if floor is not None:
        r["floor"] = {
            "cpu_s": floor,
            "files": 3,
            "log_files": 2,
            "base_rewrites": 1,
            "rows_written": 150,
            "inserts": 20,
        }
    return r


def test_the_report_sets_each_goal_beside_its_floor() -> None:
    res = {
        "updates": 100,
        "runs": [
            _run(10, "RECORD_INDEX", 1.0, 0.5),
            _run(10, "GLOBAL_SIMPLE", 1.2),
            _run(160, "RECORD_INDEX", 2.0, 0.8),
            _run(160, "GLOBAL_SIMPLE", 4.0),
        ],
    }
    text = "\n".join(ri.table(res))
    assert "| floor: pyarrow/numpy writing the last batch's 3 files (2 log, 1 base rewrites" in text
    assert (
        "| RECORD_INDEX speed-up over GLOBAL_SIMPLE at 160 rows | >= 3x | 2.00x (4.00 / 2.00) | 5.00x"
        in text
    )
    assert (
        "| RECORD_INDEX batch growth 10 -> 160 rows | <= 1.3x | 2.00x (1.00 -> 2.00) | floor grows 1.60x (0.50 -> 0.80) |"
        in text
    )
