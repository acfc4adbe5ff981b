"""Planning a read of a large table stays cheap without giving up a check.

The pieces that make it cheap -- commit write stats reduced to path/size/offset columns and
kept per process, the committed-file check done in bulk with the exact check only for the
suspect partitions, file groups kept per listed partition while its files and sizes are the
same, the one-pass latest slice, the paused garbage collector -- each give the answer the
plain way gives, and a damaged table is still refused after a warm plan.
"""

from __future__ import annotations

import gc
import json
import pickle
import random
from functools import partial
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import hudi_ds
from hudi_ds.errors import ConfigError, CorruptBlockError, CorruptFileError, MissingFileError
from hudi_ds.layout.file_group import BaseFile, FileGroup, LogFile
from hudi_ds.layout.naming import (
    base_file_name,
    log_file_name,
    parse_base_file_name,
    parse_log_file_name,
)
from hudi_ds.table import fs_view
from hudi_ds.table.committed import Committed
from hudi_ds.table.fs_view import FileSystemView
from hudi_ds.timeline.metadata import CommitMetadata
from hudi_ds.timeline.timeline import Timeline
from hudi_ds.timeline.view import Visibility
from hudi_ds.timeline.written import WrittenFiles
from tests.builders import read_rows, sorted_rows
from tests.conftest import table_options

OPTS = {
    **table_options("scale", partition="p", buckets=2),
    "hoodie.datasource.write.table.type": "MERGE_ON_READ",
}
COLS = ["id", "ts", "p", "v"]
FIRST = pa.table(
    {"id": [f"k{i}" for i in range(8)], "ts": [1] * 8, "p": ["x", "y"] * 4, "v": list(range(8))}
)
SECOND = pa.table(
    {"id": ["k0", "k1", "k9"], "ts": [2] * 3, "p": ["x", "y", "x"], "v": [10, 11, 19]}
)
EXPECTED = sorted(
    [(f"k{i}", 1, "x" if i % 2 == 0 else "y", i) for i in range(2, 8)]
    + [("k0", 2, "x", 10), ("k1", 2, "y", 11), ("k9", 2, "x", 19)]
)

rows = partial(sorted_rows, columns=COLS)
hudi_rs = partial(read_rows, columns=COLS, reader="hudi-rs")


def _stat(path: str | None, size: Any, offset: Any = None, **kw: Any) -> dict[str, Any]:
    out = {"fileId": "f", "path": path, "fileSizeInBytes": size, "numWrites": 1, **kw}
    if offset is not None or kw.get("logFiles") is not None:
        out["logOffset"] = offset
    return out


def _commit_json() -> bytes:
    log1 = "x/" + log_file_name("f1-0", "001", 1, "1-2-3")
    return json.dumps(
        {
            "partitionToWriteStats": {
                "x": [
                    _stat("x/" + base_file_name("f0-0", "1-2-3", "001"), 4096),
                    _stat(log1, 900, 100, logFiles=[log1]),
                    _stat(log1, 1200, 900, logFiles=[log1]),  # the same log, appended twice
                    _stat(None, 5),  # an inflight-style stat without a path: not a file
                    _stat("x/" + log_file_name("f2-0", "001", 1, "1-2-3"), None, None),
                ],
                "y": None,
            },
            "compacted": False,
            "extraMetadata": {},
            "operationType": "UPSERT",
        },
        indent=2,
    ).encode()


def _expected_rows(md: CommitMetadata) -> list[tuple[str, int, int]]:
    return [
        (s.path, int(s.file_size_in_bytes or 0), int(s.log_offset or 0))
        for s in md.write_stats()
        if s.path
    ]


def _rows_of(wf: WrittenFiles) -> list[tuple[str, int, int]]:
    return list(zip(wf.paths, wf.sizes, wf.offsets, strict=True))


def test_written_files_read_the_json_as_the_full_decode_does() -> None:
    data = _commit_json()
    md = CommitMetadata.from_bytes(data)
    wf = WrittenFiles.from_bytes(data)
    assert _rows_of(wf) == _expected_rows(md)
    assert len(wf) == 4
    log1 = wf.paths[1]
    assert wf.rows_of(log1) == [1, 2] and wf.largest_sizes()[log1] == 1200
    assert wf.rows_of("x/absent") == []
    # the Avro form (table version 8+) gives the same columns
    assert _rows_of(WrittenFiles.from_bytes(md.to_avro_bytes())) == _expected_rows(md)
    with pytest.raises(CorruptFileError, match="unreadable commit metadata JSON"):
        WrittenFiles.from_bytes(data[:-10])


def test_log_ranges_are_those_of_every_commit_in_order() -> None:
    log1 = "x/" + log_file_name("f1-0", "001", 1, "1-2-3")
    log2 = "x/" + log_file_name("f2-0", "001", 1, "1-2-3")
    first = WrittenFiles([(log1, 900, 100), (log1, 1200, 900), (log2, 0, 0)])
    second = WrittenFiles([(log1, 1500, 1600), ("x/other", 7, 0)])  # offset past the size: 0
    ranges = Committed([("001", "001", first), ("002", "002", second)], False).log_ranges()
    want = {
        log1: ((100, 900, "001"), (900, 1200, "001"), (0, 1500, "002")),
        "x/other": ((0, 7, "002"),),
    }
    assert dict(ranges) == want and len(ranges) == 2 and bool(ranges)
    assert log2 not in ranges and "x/none" not in ranges
    with pytest.raises(KeyError):
        ranges[log2]
    assert pickle.loads(pickle.dumps(ranges)) == want
    assert not Committed([("001", "001", WrittenFiles([(log2, 0, 0)]))], False).log_ranges()


def test_the_one_pass_latest_slice_is_the_general_one() -> None:
    """Random file groups (base and log files of several instants, some not visible, some
    older than the active timeline): the slice of the fast path (no pending compaction,
    layout 1) equals the general path's."""
    rng = random.Random(7)
    view = FileSystemView.__new__(FileSystemView)
    times = [f"{t:03d}" for t in range(1, 9)]
    for case in range(300):
        vis = Visibility(
            instants=frozenset(t for t in times if rng.random() < 0.6), first_active="003"
        )
        bases = [
            BaseFile(
                f"x/{n}", parse_base_file_name(n), 10
            )  # two base files of one instant happen after a retried write
            for t in rng.sample(times, rng.randint(0, 3))
            for n in [base_file_name("g-0", f"0-{case}-{rng.randint(0, 1)}", t)]
        ]
        logs = [
            LogFile(f"x/{n}", parse_log_file_name(n), 5)
            for t in rng.sample(times, rng.randint(0, 3))
            for v in range(1, rng.randint(2, 4))
            for n in [log_file_name("g-0", t, v, f"0-{rng.randint(0, 9)}-0")]
        ]
        rng.shuffle(logs)
        group = FileGroup("x", "g-0", bases, logs)
        for include_logs in (True, False):
            fast = view._latest_slice(group, vis, include_logs, False, [])
            # a pending list that names no pending compaction of vis: the general path
            general = view._latest_slice(group, vis, include_logs, False, ["999"])
            assert fast == general, (case, include_logs)


def _table(tmp_path: Path) -> str:
    path = str(tmp_path / "t")
    hudi_ds.write(path, FIRST, OPTS)
    hudi_ds.write(path, SECOND, OPTS)
    return path


def test_a_warm_plan_decodes_and_groups_nothing_and_still_finds_damage(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _table(tmp_path)
    assert rows(hudi_ds.read(path)) == EXPECTED == hudi_rs(path)
    decoded: list[int] = []
    grouped: list[str] = []
    real_decode, real_group = WrittenFiles.from_bytes, FileSystemView._group
    monkeypatch.setattr(
        WrittenFiles, "from_bytes", lambda data: decoded.append(1) or real_decode(data)
    )
    monkeypatch.setattr(
        FileSystemView,
        "_group",
        staticmethod(lambda p, files: grouped.append(p) or real_group(p, files)),
    )
    plan = hudi_ds.HudiTable(path).plan_read()
    assert decoded == [] and grouped == []  # a new handle: from the process's caches
    assert {s.partition_path for s in plan.slices} == {"x", "y"} and all(
        plan.context.log_ranges[lf.path] for s in plan.slices for lf in s.log_files
    )

    # a log file that grew past its commit (a write in flight): suspect, then found whole
    log = sorted((Path(path) / "x").glob(".*.log.*"))[-1]
    saved = log.read_bytes()
    log.write_bytes(saved + b"\0" * 16)
    assert rows(hudi_ds.read(path)) == EXPECTED
    assert grouped == ["x"]  # its size changed: partition x grouped again, y not
    # cut short: the cached groups and write stats do not hide it
    log.write_bytes(saved[: len(saved) // 2])
    with pytest.raises(CorruptFileError, match=log.name):
        hudi_ds.HudiTable(path).plan_read()
    log.unlink()
    with pytest.raises(MissingFileError, match=log.name):
        hudi_ds.HudiTable(path).plan_read()
    log.write_bytes(saved)
    assert rows(hudi_ds.read(path)) == EXPECTED == hudi_rs(path)
    assert decoded == []


def test_planning_pauses_the_garbage_collector_and_restores_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _table(tmp_path)
    seen: list[bool] = []
    real = FileSystemView.partitions
    monkeypatch.setattr(
        FileSystemView, "partitions", lambda v: seen.append(gc.isenabled()) or real(v)
    )
    table = hudi_ds.HudiTable(path)
    assert gc.isenabled()
    assert rows(table.read()) == EXPECTED
    assert seen and not any(seen) and gc.isenabled()
    gc.disable()  # the caller's choice is kept
    try:
        table.plan_read()
        assert not gc.isenabled()
    finally:
        gc.enable()
    # a failing plan restores it too
    with pytest.raises(ConfigError, match=r"hoodie\.no\.such"):
        table.plan_read({"hoodie.no.such": "1"})
    assert gc.isenabled()


def test_shared_groups_are_regrouped_when_the_listing_changes() -> None:
    shared = fs_view._SharedGroups(max_files=10)
    loads: list[int] = []

    def load(n: int) -> Any:
        return lambda: loads.append(n) or ([], {f"f{i}": i for i in range(n)})

    key = ("fs", "/t/x")
    first = shared.get_if_listed(key, {"f0": 0, "f1": 1}, load(2))
    assert shared.get_if_listed(key, {"f0": 0, "f1": 1}, load(2)) is first
    assert shared.get_if_listed(key, {"f0": 0, "f1": 2}, load(2)) is not first  # a size
    assert shared.get_if_listed(key, {"f0": 0}, load(1))[1] == {"f0": 0}  # a file went
    assert loads == [2, 2, 1]
    shared.get_if_listed(("fs", "/t/big"), {}, load(11))  # over the bound: not kept
    assert shared.get_if_listed(("fs", "/t/big"), {}, load(11)) is not None and loads[-2:] == [
        11,
        11,
    ]


def test_a_partition_filtered_read_checks_the_partitions_it_reads(tmp_path: Path) -> None:
    path = _table(tmp_path)
    gone = sorted((Path(path) / "y").glob(".*.log.*"))[-1]
    gone.unlink()
    table = hudi_ds.HudiTable(path)
    # partition y is not read: its committed files are not checked
    got = table.read(filters=[("p", "=", "x")])
    assert rows(got) == [r for r in EXPECTED if r[2] == "x"]
    with pytest.raises(MissingFileError, match=gone.name):
        table.read(filters=[("p", "=", "y")])
    with pytest.raises(MissingFileError, match=gone.name):
        table.read()


def test_a_plan_listed_by_the_metadata_table_decodes_no_commit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The metadata table lists the committed files with their committed sizes: a plan
    through it trusts it (as Java's reader does) and decodes the commits' write stats only
    when a log file holds a corrupt block (whose committed ranges tell damage from a torn
    tail); a storage listing is still checked against them."""
    opts = {**OPTS, "hoodie.metadata.enable": "true"}
    path = str(tmp_path / "t")
    hudi_ds.write(path, FIRST, opts)
    hudi_ds.write(path, SECOND, opts)
    decoded: list[str] = []
    real = Timeline.read_written_files
    monkeypatch.setattr(
        Timeline,
        "read_written_files",
        lambda tl, inst: decoded.append(str(inst)) or real(tl, inst),
    )
    table = hudi_ds.HudiTable(path)
    plan = table.plan_read()
    assert decoded == []
    assert rows(table.read()) == EXPECTED and decoded == []
    assert table.last_read_stats.log_files > 0
    listed = table.plan_read({"hoodie.metadata.enable": "false"})  # checked
    assert len(decoded) == 2 and listed.slices == plan.slices
    # a torn tail after the committed bytes is skipped, a flipped byte inside them refused:
    # the ranges are decoded for the file with a corrupt block
    decoded.clear()
    log = sorted((Path(path) / "x").glob(".*.log.*"))[-1]
    saved = log.read_bytes()
    log.write_bytes(saved + saved[: len(saved) // 3])
    assert rows(table.read()) == EXPECTED and len(decoded) == 2
    assert table.last_read_stats.corrupt_blocks == 1
    flipped = bytearray(saved)
    flipped[3] ^= 0xFF  # in the magic of the first block
    log.write_bytes(bytes(flipped))
    with pytest.raises(CorruptBlockError, match=log.name):
        hudi_ds.HudiTable(path).read()
    log.write_bytes(saved)
    assert rows(hudi_ds.read(path)) == EXPECTED == hudi_rs(path)
