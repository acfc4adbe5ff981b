"""The timeline benchmark's history builder and the costs it found growing with the history:
a built table reads exactly (hudi_ds and hudi-rs), listing and viewing a long active timeline
sorts nothing per view, and an incremental query that reaches the archived timeline reads only
the archive files that can answer it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bench import timeline_scale as ts
from hudi_ds.api import HudiTable
from hudi_ds.errors import InstantNotFoundError
from hudi_ds.log.archive import archive_files, latest_archived_commit_after, load_archived
from hudi_ds.storage import Storage
from hudi_ds.timeline.archived import latest_in_lsm_file, load_lsm_file, lsm_files_after
from hudi_ds.timeline.instant import Instant
from hudi_ds.timeline.view import TableState

N = 300  # three runs of the archiver: three v6 archive files, three LSM layer-0 files


def _incremental(path: str, begin: str) -> bool:
    """Plan an incremental query from ``begin``: True if refused (archived)."""
    try:
        HudiTable(path).plan_read(
            options={
                "hoodie.datasource.query.type": "incremental",
                "hoodie.datasource.read.begin.instanttime": begin,
            }
        )
    except InstantNotFoundError as e:
        assert "reaches the archived timeline" in str(e)
        return True
    return False


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Paths of the archive files read (v6 log files, LSM parquet files)."""
    seen: list[str] = []
    read_bytes, open_input = Storage.read_bytes, Storage.open_input_file

    def rb(self: Storage, rel: str) -> bytes:
        seen.append(rel)
        return read_bytes(self, rel)

    def oi(self: Storage, rel: str, *a: Any, **kw: Any) -> Any:
        seen.append(rel)
        return open_input(self, rel, *a, **kw)

    monkeypatch.setattr(Storage, "read_bytes", rb)
    monkeypatch.setattr(Storage, "open_input_file", oi)
    return seen


def _archive_reads(seen: list[str]) -> list[str]:
    return [p for p in seen if "/archived/" in p or ("/history/" in p and p.endswith(".parquet"))]


@pytest.mark.parametrize("version", [6, 9])
def test_built_history_reads_exactly_and_incremental_reads_the_newest_archive(
    tmp_path: Path, version: int, reads: list[str]
) -> None:
    path = str(tmp_path / "t")
    times = ts.build_history(path, version, N, archived=True, n_rows=64)
    ts.validate(path, n_rows=64)  # every row once, hudi_ds and hudi-rs
    state = TableState.open(path)
    archived = load_archived(state.storage, state.config.timeline_layout_version)
    active = [i.requested_time for i in state.load_timeline().commits()]
    # the archiver kept the active timeline's default 20 commits: the history and the data
    # commit are all there, once, on one of the two timelines
    assert len(active) == 20
    assert sorted(i.requested_time for i in archived.commits()) + active[:-1] == times
    if version == 6:
        assert len(archive_files(state.storage, ".hoodie/archived")) == 3
    reads.clear()
    assert _incremental(path, times[0])
    # one archive file answers (the newest: it holds commits after the first instant), not
    # the whole archived timeline
    assert len(set(_archive_reads(reads))) == 1
    # an incremental query from the last archived commit does not reach the archive: v9 reads
    # no LSM file (their names' ranges end at or before it), v6 all three (names carry none)
    last_archived = times[N - 20]
    reads.clear()
    assert not _incremental(path, last_archived)
    assert len(set(_archive_reads(reads))) == (3 if version == 6 else 0)
    layout = state.config.timeline_layout_version
    # the newest archived commit, from the newest archive file
    assert latest_archived_commit_after(state.storage, layout, times[N // 2]) == last_archived
    assert latest_archived_commit_after(state.storage, layout, last_archived) is None
    if version == 9:  # from the instant columns, as the whole file says
        folder = ".hoodie/timeline/history"
        newest = lsm_files_after(state.storage, folder, times[N // 2])[0]
        full = load_lsm_file(state.storage, folder, newest)
        assert max(e.instant.requested_time for e in full) == last_archived
        assert latest_in_lsm_file(state.storage, folder, newest, times[0], ["clean"]) is None


def test_long_active_timeline_views_sort_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = str(tmp_path / "t")
    times = ts.build_history(path, 9, N, archived=False, n_rows=64)
    state = TableState.open(path)
    expected = sorted(state.load_timeline().instants)

    def no_compare(self: Instant, other: object) -> bool:
        raise AssertionError("Instant.__lt__ called: a view sorted its instants one by one")

    monkeypatch.setattr(Instant, "__lt__", no_compare)
    tl = TableState.open(path).load_timeline()
    assert list(tl.instants) == expected
    commits = tl.commits()
    assert [i.requested_time for i in commits][:-1] == times
    assert list(commits[10:20]) == list(tl.commits())[10:20]
    assert list(commits[::-1]) == list(commits) and list(commits[::2]) == list(commits)[::2]
    assert tl.completed().filter_actions("deltacommit").last() == commits.last()


def test_summary_and_acceptance_rows() -> None:
    def row(version: int, shape: str, n: int, t: float) -> dict[str, Any]:
        return {
            "version": version,
            "metadata_table": True,
            "shape": shape,
            "instants": n,
            **{
                f: t
                for f in (
                    "upsert_cpu_median_s",
                    "plan_first_cpu_s",
                    "commit_cpu_median_s",
                    "incr_first_cpu_s",
                )
            },
        }

    res = {
        "results": [
            row(6, "archived", 100, 0.1),
            row(6, "archived", 10_000, 0.12),
            row(6, "active", 100, 0.1),
            row(6, "active", 10_000, 0.9),
        ]
    }
    s = ts.summary(res)
    assert s["worst_archived"]["growth"] == pytest.approx(1.2)
    assert s["growth"]["v6_mdt_active"]["commit_cpu_median_s"] == pytest.approx(9.0)
    (r,) = ts.acceptance_rows({"summary": s})
    assert r[3] == "yes" and "9.0x" in r[2]
    res["results"][1]["upsert_cpu_median_s"] = 0.2
    (r,) = ts.acceptance_rows({"summary": ts.summary(res)})
    assert r[3] == "no" and "2.00x (upsert, v6_mdt_archived; CPU time)" in r[2]
    assert ts.acceptance_rows(None)[0][2].startswith("not measured")
