"""The ``hudi-py`` command: every subcommand in-process, JSON output, exit codes, and the
installed console script end to end in a subprocess."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest

import hudi_ds
from hudi_ds.cli import (
    EXIT_NOT_A_TABLE,
    EXIT_NOT_FOUND,
    EXIT_OK,
    EXIT_REFUSED,
    EXIT_USAGE,
    human_size,
    main,
    render_table,
)
from tests.conftest import assert_rows, hudi_rs_table, table_options, table_rows

OPTS = {
    **table_options("trips", partition="city"),
    "hoodie.clean.automatic": "false",
}


def trips(ids, ts: int) -> pa.Table:
    ids = list(ids)
    return pa.table(
        {
            "id": [f"t{i}" for i in ids],
            "ts": pa.array([ts] * len(ids), pa.int64()),
            "city": ["sf" if i % 2 else "nyc" for i in ids],
            "fare": [float(i) for i in ids],
        }
    )


def run(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(args), out, err)
    return code, out.getvalue(), err.getvalue()


def run_json(*args: str) -> dict:
    code, out, err = run(*args, "--json")
    assert code == EXIT_OK, err
    return json.loads(out)


COLUMNS = ["id", "ts", "city", "fare"]


def _full_rows(t: pa.Table) -> list[tuple]:
    got = table_rows(t, COLUMNS)
    assert_rows(t, got, COLUMNS)  # no duplicate key
    return got


def rows(path: str) -> list[tuple]:
    """Every row hudi_ds reads (all data columns, sorted; fails on a duplicate key)."""
    return _full_rows(hudi_ds.read(path))


def hudi_rs_rows(path: str) -> list[tuple]:
    """The same as hudi-rs reads it."""
    return _full_rows(hudi_rs_table(path))


@pytest.fixture
def table(tmp_path: Path) -> str:
    path = str(tmp_path / "t")
    for k in range(4):
        hudi_ds.write(path, trips(range(k * 3, k * 3 + 8), k + 1), OPTS)
    return path


def test_timeline_files_stats_show_config(table: str) -> None:
    code, out, _ = run("timeline", table)
    assert code == EXIT_OK and "deltacommit" in out and "COMPLETED" in out
    tl = run_json("timeline", table)
    assert [i["action"] for i in tl["instants"]] == ["deltacommit"] * 4
    assert tl["instants"][0]["records"] == 8 and tl["instants"][0]["files"] == 2
    files = run_json("files", table)
    assert {g["partition"] for g in files["file_groups"]} == {"nyc", "sf"}
    assert sum(g["log_files"] for g in files["file_groups"]) == sum(
        i["files"] for i in tl["instants"]
    )
    code, out, _ = run("files", table, "--partition", "sf")
    assert code == EXIT_OK and "nyc" not in out
    stats = run_json("stats", table)
    n_logs = sum(g["log_files"] for g in files["file_groups"])
    assert stats["rows"] == len(rows(table)) and stats["log_files"] == n_logs
    assert sum(h["log_files"] for h in stats["histogram"]) == n_logs
    code, out, _ = run("stats", table)
    assert "rows" in out and "file sizes" in out
    cfg = run_json("show-config", table, "-o", "hoodie.cleaner.commits.retained=4")
    assert cfg["table"]["hoodie.table.name"] == "trips"
    assert cfg["services"]["hoodie.cleaner.commits.retained"]["value"] == 4
    assert cfg["services"]["hoodie.clean.automatic"]["value"] is True
    code, out, _ = run("show-config", table)
    assert "hoodie.keep.max.commits" in out


def test_compact_clean_archive(table: str) -> None:
    before = rows(table)
    sched = run_json("compact", "schedule", table)
    c = sched["scheduled"]
    assert c and sched["operations"] == 4
    show = run_json("compact", "show", table)
    assert list(show["pending"]) == [c]
    code, out, err = run("compact", "run", table, "--progress")
    assert code == EXIT_OK and f"compaction {c}" in out and "rows/s" in out
    assert "[" in err  # the progress bar
    assert rows(table) == hudi_rs_rows(table) == before
    code, out, _ = run("compact", "run", table)
    assert code == EXIT_OK and "no pending compaction" in out
    for k in range(3):
        hudi_ds.write(table, trips(range(3), 10 + k), OPTS)
    hudi_ds.write(table, trips(range(3), 20), OPTS)
    before = sorted(
        (i, 20, c, f) if i in ("t0", "t1", "t2") else (i, ts, c, f) for i, ts, c, f in before
    )
    assert rows(table) == hudi_rs_rows(table) == before
    res = run_json("compact", "run", table, "--schedule")
    assert len(res["compactions"]) == 1 and res["compactions"][0]["rows_per_second"] > 0
    dry = run_json("clean", table, "--dry-run", "-o", "hoodie.cleaner.commits.retained=1")
    assert dry["dry_run"] and dry["deleted"]
    cl = run_json("clean", table, "-o", "hoodie.cleaner.commits.retained=1")
    assert cl["clean"] and sorted(cl["deleted"]) == sorted(dry["deleted"])
    assert rows(table) == hudi_rs_rows(table) == before
    arch = run_json(
        "archive",
        table,
        "-o",
        "hoodie.keep.min.commits=3",
        "-o",
        "hoodie.keep.max.commits=4",
        "-o",
        "hoodie.cleaner.commits.retained=1",
    )
    assert arch["archived"] and arch["archive_file"]
    tl = run_json("timeline", table, "--archived")
    assert any(i["archived"] for i in tl["instants"])
    assert rows(table) == hudi_rs_rows(table) == before


def test_rollback_savepoint_restore(table: str) -> None:
    tl = run_json("timeline", table)
    last = tl["instants"][-1]["instant"]
    sp = run_json("savepoint", table, tl["instants"][-2]["instant"])["savepoint"]
    assert run_json("savepoint", table, "--list")["savepoints"] == [sp]
    code, _, err = run("rollback", table, sp)
    assert code == EXIT_REFUSED and "savepointed" in err
    code, _, err = run("rollback", table, tl["instants"][0]["instant"])
    assert code == EXIT_REFUSED and "later instants" in err
    rb = run_json("rollback", table, last)
    assert rb["instant"] == last and rb["rollback_instant"] and rb["deleted"]
    at_sp = rows(table)
    hudi_ds.write(table, trips(range(50, 55), 9), OPTS)
    res = run_json("restore", table, sp)
    assert res["savepoint"] == sp and len(res["rolled_back"]) == 1
    assert rows(table) == hudi_rs_rows(table) == at_sp
    assert run_json("savepoint", table, sp, "--delete")["deleted_savepoint"] == sp
    code, out, err = run("restore", table, sp, "--json")
    assert code == EXIT_NOT_FOUND and json.loads(out)["exit_code"] == EXIT_NOT_FOUND


def test_exit_codes(tmp_path: Path, table: str) -> None:
    code, _, err = run("timeline", str(tmp_path / "nothing"))
    assert code == EXIT_NOT_A_TABLE and "not a Hudi table" in err
    code, out, _ = run("stats", str(tmp_path / "nothing"), "--json")
    assert code == EXIT_NOT_A_TABLE and json.loads(out)["error"]
    assert run("rollback", table, "20000101000000000")[0] == EXIT_NOT_FOUND
    assert run("frobnicate", table)[0] == EXIT_USAGE
    assert run("clean", table, "-o", "hoodie.cleaner.policy=NOPE")[0] == EXIT_USAGE
    assert run("clean", table, "-o", "no-equals-sign")[0] == EXIT_USAGE
    assert run("compact", "run", table, "--instant", "20000101000000000")[0] == EXIT_NOT_FOUND
    # a COW table cannot be compacted: refused
    cow = str(tmp_path / "cow")
    hudi_ds.write(
        cow, trips(range(2), 1), {**OPTS, "hoodie.datasource.write.table.type": "COPY_ON_WRITE"}
    )
    assert run("compact", "schedule", cow)[0] == EXIT_REFUSED


def test_helpers() -> None:
    assert human_size(512) == "512 B" and human_size(1536) == "1.5 KB"
    text = render_table([["a", 1], ["bbb", 22]], ["name", "n"])
    lines = text.splitlines()
    assert lines[0].startswith("name") and lines[2].endswith(" 1") and lines[3].endswith("22")


@pytest.mark.slow
def test_installed_console_script_end_to_end(table: str) -> None:
    """The installed ``hudi-py`` in a subprocess: each subcommand, ``--json`` parsed."""
    exe = Path(sys.executable).parent / "hudi-py"
    if not exe.exists():
        pytest.skip("hudi-py is not installed in this environment")

    def cli(*args: str, expect: int = 0) -> dict:
        proc = subprocess.run(
            [str(exe), *args, "--json"], capture_output=True, text=True, env=os.environ, timeout=120
        )
        assert proc.returncode == expect, proc.stderr
        return json.loads(proc.stdout)

    assert len(cli("timeline", table)["instants"]) == 4
    assert cli("files", table)["file_groups"]
    assert cli("stats", table)["rows"] == len(rows(table))
    assert cli("show-config", table)["table"]["hoodie.table.type"] == "MERGE_ON_READ"
    c = cli("compact", "schedule", table)["scheduled"]
    assert cli("compact", "run", table)["compactions"][0]["instant"] == c
    assert "clean" in cli("clean", table)
    sp = cli("savepoint", table)["savepoint"]
    hudi_ds.write(table, trips(range(100, 103), 50), OPTS)
    last = cli("timeline", table)["instants"][-1]["instant"]
    assert cli("rollback", table, last)["instant"] == last
    hudi_ds.write(table, trips(range(200, 203), 60), OPTS)
    assert cli("restore", table, sp)["savepoint"] == sp
    assert "archived" in cli("archive", table)
    assert cli("timeline", table + "-missing", expect=EXIT_NOT_A_TABLE)["exit_code"] == 3
    assert rows(table) == hudi_rs_rows(table)
