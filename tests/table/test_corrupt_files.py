"""Torn and corrupt files: skipped (and reported) when Hudi would skip them, an error naming
the file when committed data cannot be read."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

import hudi_ds
from hudi_ds.errors import CorruptFileError
from tests.conftest import table_options

OPTS = table_options("torn", partition="p", buckets=1)
ROWS = pa.table({"id": ["a", "b", "c"], "ts": [1, 1, 1], "p": ["x", "x", "x"]})


def ids(path: str) -> list[str]:
    return sorted(hudi_ds.read(path, columns=["id"])["id"].to_pylist())


def test_zero_length_log_file_is_ignored(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    hudi_ds.write(path, ROWS, OPTS)
    log = next((tmp_path / "t" / "x").glob(".*.log.*"))
    name = log.name.replace(".log.1_", ".log.7_")
    (log.parent / name).write_bytes(b"")
    table = hudi_ds.HudiTable(path)
    assert sorted(table.read(columns=["id"])["id"].to_pylist()) == ["a", "b", "c"]
    assert table.last_read_stats.corrupt_blocks == 0


def test_truncated_base_file_of_an_uncommitted_instant_is_ignored(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    cow = {**OPTS, "hoodie.datasource.write.table.type": "COPY_ON_WRITE"}
    hudi_ds.write(path, ROWS, cow)
    base = next((tmp_path / "t" / "x").glob("*.parquet"))
    fid = base.name.split("_")[0]
    torn = base.parent / f"{fid}_0-9-9_29990101000000000.parquet"
    torn.write_bytes(base.read_bytes()[:100])  # a later write that never completed
    assert ids(path) == ["a", "b", "c"]


def test_corrupt_base_file_of_a_committed_instant_names_the_file(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    cow = {**OPTS, "hoodie.datasource.write.table.type": "COPY_ON_WRITE"}
    hudi_ds.write(path, ROWS, cow)
    base = next((tmp_path / "t" / "x").glob("*.parquet"))
    base.write_bytes(base.read_bytes()[:-40])
    with pytest.raises(CorruptFileError, match=base.name):
        hudi_ds.read(path)
    base.write_bytes(b"")
    with pytest.raises(CorruptFileError, match=base.name):
        hudi_ds.read(path)


def test_torn_block_at_the_end_of_a_log_file_is_skipped_and_reported(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    hudi_ds.write(path, ROWS, OPTS)
    hudi_ds.write(path, pa.table({"id": ["d"], "ts": [2], "p": ["x"]}), OPTS)
    logs = sorted((tmp_path / "t" / "x").glob(".*.log.*"))
    last = logs[-1]
    data = last.read_bytes()
    last.write_bytes(data + data[: len(data) // 2])  # a torn copy of the block appended
    table = hudi_ds.HudiTable(path)
    assert sorted(table.read(columns=["id"])["id"].to_pylist()) == ["a", "b", "c", "d"]
    assert table.last_read_stats.corrupt_blocks == 1
    assert table.last_read_stats.corrupt_files == [str(last.relative_to(tmp_path / "t"))]
