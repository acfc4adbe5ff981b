"""Crash at every step of the write path, restart, write again: the table is always right.

Each case runs a writer in a forked process with ``HUDI_DS_CRASH_AT=<point>`` (it dies with
``os._exit(137)``, like SIGKILL, at that step), then checks in this process that readers see
exactly the committed state (hudi_ds and hudi-rs), that the next write succeeds, and that the
failed write's files are gone.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

import hudi_ds
from hudi_ds.faults import EXIT_CODE
from tests.conftest import assert_rows, hudi_rs_table, run_forked, table_options
from tests.metadata.test_writer import assert_in_step

COLUMNS = ["id", "ts", "p"]


def opts(table_type: str, version: int = 6) -> dict[str, str]:
    return {
        **table_options("crash", partition="p", table_type=table_type),
        "hoodie.clean.automatic": "false",
        "hoodie.write.table.version": str(version),
    }


def run_writer(path: str, o: dict, ids: list[int], ts: int, crash: str | None) -> int:
    """A writer process (forked: :func:`tests.conftest.run_forked`) upserting ``ids`` with
    ``ts``, dying at ``crash``; its exit code."""

    def write() -> None:
        t = pa.table(
            {"id": [f"k{i}" for i in ids], "ts": [ts] * len(ids), "p": [f"p{i % 3}" for i in ids]}
        )
        hudi_ds.write(path, t, o)

    return run_forked(write, crash)


def expected_rows(model: dict[str, int]) -> list[tuple]:
    """The full rows (id, ts, p) the model says the table holds."""
    return [(k, ts, f"p{int(k[1:]) % 3}") for k, ts in model.items()]


def check_state(path: str, model: dict[str, int]) -> None:
    """hudi_ds and hudi-rs both read exactly the model's rows: every column, no duplicate."""
    assert_rows(hudi_ds.read(path), expected_rows(model), COLUMNS)
    assert_rows(hudi_rs_table(path), expected_rows(model), COLUMNS)


def apply(model: dict[str, int], ids: list[int], ts: int) -> dict[str, int]:
    out = dict(model)
    for i in ids:
        if out.get(f"k{i}", -1) <= ts:
            out[f"k{i}"] = ts
    return out


def debris(path: str) -> list[str]:
    """Data files no completed instant wrote (after a successful write there are none)."""
    table = hudi_ds.HudiTable(path)
    written = set()
    for inst in table.timeline.commits():
        md = table.timeline.read_commit_metadata(inst)
        for stats in md.partition_to_write_stats.values():
            written.update(s.path for s in stats)
    root = Path(path)
    files = [
        str(p.relative_to(root))
        for p in root.rglob("*")
        if p.is_file() and ".hoodie" not in p.parts and not p.name.startswith(".hoodie_partition")
    ]
    return sorted(f for f in files if f not in written)


POINTS = ["after_requested", "handle_flush", "after_files", "commit_write", "after_commit"]


#: version 6 at every point; version 9 (timeline layout 2) at the commit point in the quick
#: suite, everywhere in the slow one
CASES = [(6, p) for p in POINTS] + [
    pytest.param(9, p, marks=() if p == "commit_write" else pytest.mark.slow) for p in POINTS
]


@pytest.mark.parametrize(("version", "point"), CASES)
@pytest.mark.parametrize("table_type", ["MERGE_ON_READ", "COPY_ON_WRITE"])
def test_crash_at_each_write_step(
    point: str, table_type: str, version: int, tmp_path: Path
) -> None:
    path = str(tmp_path / "t")
    o = opts(table_type, version)
    first = list(range(20))
    hudi_ds.write(
        path,
        pa.table(
            {"id": [f"k{i}" for i in first], "ts": [1] * 20, "p": [f"p{i % 3}" for i in first]}
        ),
        o,
    )
    model = apply({}, first, 1)
    batch = list(range(10, 30))
    assert run_writer(path, o, batch, 5, point) == EXIT_CODE
    if point == "after_commit":
        model = apply(model, batch, 5)  # the commit point was passed: durable
    check_state(path, model)
    again = list(range(25, 40))
    assert run_writer(path, o, again, 9, None) == 0
    model = apply(model, again, 9)
    check_state(path, model)
    assert debris(path) == []
    pending = [i for i in hudi_ds.HudiTable(path).timeline.instants if not i.is_completed]
    assert pending == []


#: the data write's points and the metadata table writer's deltacommit (faults.py: its
#: inflight file exists ``:1``, its log file too ``:2``, it completed, the data instant not ``:3``)
MDT_POINTS = [*POINTS, "metadata:1", "metadata:2", "metadata:3"]

#: version 9 at every point, version 6 at the metadata table's own points (its data-table points
#: are those of the test above); quick suite: the MDT completed, the data instant not; the rest
#: slow
MDT_CASES = [
    pytest.param(v, p, t, marks=() if p == "metadata:3" else pytest.mark.slow)
    for v in (6, 9)
    for p in MDT_POINTS
    for t in ("MERGE_ON_READ", "COPY_ON_WRITE")
    # version 6 at the MDT's own points only (its data-table points are the test's above);
    # version 9's data-table points on MERGE_ON_READ only (suite time)
    if p.startswith("metadata:") or (v == 9 and t == "MERGE_ON_READ")
]


@pytest.mark.parametrize(("version", "point", "table_type"), MDT_CASES)
def test_crash_at_each_write_step_with_metadata_table(
    point: str, table_type: str, version: int, tmp_path: Path
) -> None:
    """A write that also updates the metadata table dies at each step: the data table and the
    MDT agree after the next write, hudi_ds and hudi-rs (through the MDT on v9) read the model."""
    path = str(tmp_path / "t")
    o = {**opts(table_type, version), "hoodie.metadata.enable": "true"}
    assert run_writer(path, o, list(range(20)), 1, None) == 0
    model = apply({}, list(range(20)), 1)
    assert_in_step(Path(path))
    batch = list(range(10, 30))
    assert run_writer(path, o, batch, 5, point) == EXIT_CODE
    if point == "after_commit":
        model = apply(model, batch, 5)  # the commit point was passed: durable
    if point.startswith("metadata:"):
        # the crash left the MDT's deltacommit of the failed data instant as faults.py says
        failed = [i for i in hudi_ds.HudiTable(path).timeline.instants if not i.is_completed]
        assert len(failed) == 1
        mdt = Path(path, ".hoodie", "metadata", ".hoodie")
        names = [f.name for f in (mdt / "timeline" if version >= 8 else mdt).iterdir()]
        mine = [n for n in names if n.startswith(failed[0].requested_time)]
        done = [n for n in mine if n.endswith(".deltacommit")]
        assert any(n.endswith(".deltacommit.inflight") for n in mine), mine
        assert len(done) == (point == "metadata:3"), mine
    check_state_mdt(path, model, version)
    again = list(range(25, 40))
    assert run_writer(path, o, again, 9, None) == 0
    model = apply(model, again, 9)
    check_state_mdt(path, model, version)
    assert_in_step(Path(path))
    assert debris(path) == []
    pending = [i for i in hudi_ds.HudiTable(path).timeline.instants if not i.is_completed]
    assert pending == []


def check_state_mdt(path: str, model: dict[str, int], version: int) -> None:
    """:func:`check_state`, and hudi-rs listing through the MDT (it does on version 8+)."""
    check_state(path, model)
    if version >= 8:
        rs = hudi_rs_table(path, {"hoodie.metadata.enable": "true"})
        assert_rows(rs, expected_rows(model), COLUMNS)


@pytest.mark.slow
@pytest.mark.parametrize("table_type", ["MERGE_ON_READ", "COPY_ON_WRITE"])
def test_crash_during_rollback_of_a_failed_write(table_type: str, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    o = opts(table_type)
    model: dict[str, int] = {}
    assert run_writer(path, o, list(range(30)), 1, None) == 0
    model = apply(model, list(range(30)), 1)
    assert run_writer(path, o, list(range(30)), 2, "after_files") == EXIT_CODE
    # the next writer starts rolling the failed write back and dies half way
    assert run_writer(path, o, [100], 3, "rollback") == EXIT_CODE
    check_state(path, model)
    assert run_writer(path, o, [101], 4, None) == 0
    model = apply(model, [101], 4)
    check_state(path, model)
    assert debris(path) == []


@pytest.mark.slow
@pytest.mark.parametrize("point", ["compaction", "clean"])
def test_crash_in_table_services(point: str, tmp_path: Path) -> None:
    """A write whose inline compaction / automatic clean dies half way: the write stands, the
    service is finished (or redone) by the next writer, readers are exact throughout."""
    path = str(tmp_path / "t")
    o = {
        **opts("MERGE_ON_READ"),
        "hoodie.clean.automatic": "true",
        "hoodie.cleaner.commits.retained": "1",
        "hoodie.compact.inline": "true",
        "hoodie.compact.inline.max.delta.commits": "3",
    }
    model: dict[str, int] = {}
    for ts in range(1, 3):
        assert run_writer(path, o, list(range(30)), ts, None) == 0
        model = apply(model, list(range(30)), ts)
    # write until the service runs: that write dies inside it (after its own commit)
    for crash_ts in range(3, 12):
        code = run_writer(path, o, list(range(30)), crash_ts, point)
        model = apply(model, list(range(30)), crash_ts)  # the write itself committed
        if code == EXIT_CODE:
            break
        assert code == 0
    else:
        pytest.fail(f"{point} never ran")
    pending = [i.action for i in hudi_ds.HudiTable(path).timeline.instants if not i.is_completed]
    assert pending == (["compaction"] if point == "compaction" else ["clean"])
    check_state(path, model)
    for ts in (20, 21, 22):
        assert run_writer(path, o, list(range(10, 40)), ts, None) == 0
        model = apply(model, list(range(10, 40)), ts)
        check_state(path, model)
    table = hudi_ds.HudiTable(path)
    done = {i.action for i in table.timeline.instants if i.is_completed}
    assert ("commit" if point == "compaction" else "clean") in done
    assert [i for i in table.timeline.instants if not i.is_completed] == []
