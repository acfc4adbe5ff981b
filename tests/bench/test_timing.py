"""bench/timing.py: the timing loop the process-per-run benchmarks share."""

from __future__ import annotations

from pathlib import Path

from bench.timing import on_copy, run_json, timed


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
