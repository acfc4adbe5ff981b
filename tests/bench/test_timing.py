"""bench/timing.py: the timing loop the process-per-run benchmarks share."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.timing import on_copy, report_scale_run, run_json, timed


def test_timed_returns_the_result_and_counts_cpu_not_sleep() -> None:
    import time

    out, wall, cpu = timed(lambda: sum(range(200_000)))
    assert out == sum(range(200_000)) and wall > 0 and cpu >= 0
    _, wall, cpu = timed(lambda: time.sleep(0.05))
    assert wall >= 0.05 and cpu < wall


def test_run_json_reads_the_last_line_or_the_error(tmp_path: Path) -> None:
    f = tmp_path / "r.json"
    f.write_text('{"merge_s": 0.25,\n "check": {"correct": true}}')
    assert run_json("json.tool", ["--compact", str(f)]) == {
        "merge_s": 0.25,
        "check": {"correct": True},
    }
    err = run_json("bench.no_such_module", [], error_chars=500)
    assert set(err) == {"error"} and "No module named" in err["error"]
    assert len(run_json("bench.no_such_module", [], error_chars=20)["error"]) == 20


def test_on_copy_runs_on_a_fresh_copy_and_removes_it(tmp_path: Path) -> None:
    base = tmp_path / "base"
    base.mkdir()
    (base / "f").write_text("x")
    copy = tmp_path / "copy"

    def change(p: str) -> str:
        (Path(p) / "f").write_text("y")
        return (Path(p) / "f").read_text()

    assert on_copy(str(base), str(copy), change) == "y"
    assert (base / "f").read_text() == "x" and not copy.exists()


def test_report_scale_run_keeps_the_run_and_prints_its_rows(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    drawn: list[Path] = []
    out = tmp_path / "run.json"
    rc = report_scale_run(
        [{"n": 1, "t": 0.5}, {"n": 10, "t": 1.5}],
        0.1,
        lambda res: {"growth": res["results"][-1]["t"] / res["results"][0]["t"]},
        lambda res: f"table of {len(res['results'])} rows",
        lambda res: [("growth", "<= 2x", f"{res['summary']['growth']:.1f}x", "no")],
        out,
        (lambda res, path: drawn.append(path), tmp_path / "chart.png"),
    )
    assert rc == 0
    kept = json.loads(out.read_text())
    assert kept["scale"] == 0.1 and kept["summary"] == {"growth": 3.0}
    assert [r["n"] for r in kept["results"]] == [1, 10] and len(kept["loadavg"]) == 3
    printed = capsys.readouterr().out
    assert "table of 2 rows" in printed and "growth: 3.0x (goal <= 2x: no)" in printed
    assert drawn == [tmp_path / "chart.png"]
