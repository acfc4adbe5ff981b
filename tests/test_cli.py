"""The ``hudi-py`` command: every subcommand in-process, JSON output, exit codes, and the
installed console script end to end in a subprocess."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
from functools import partial
from pathlib import Path

import pyarrow as pa
import pytest

import hudi_ds
from hudi_ds.cli import main
from hudi_ds.cli.command import (
    EXIT_NOT_A_TABLE,
    EXIT_NOT_FOUND,
    EXIT_OK,
    EXIT_REFUSED,
    EXIT_USAGE,
    human_size,
    render_table,
)
from hudi_ds.layout.naming import parse_base_file_name, parse_log_file_name
from hudi_ds.storage import Storage
from hudi_ds.table.fs_view import StorageListing
from tests import builders
from tests.builders import copy_table
from tests.conftest import assert_rows, hudi_rs_table, table_options, table_rows
from tests.fixtures import GOLDEN_DIR, fixture_table
from tests.golden import golden_set, row_set

OPTS = {
    **table_options("trips", partition="city"),
    "hoodie.clean.automatic": "false",
}


trips = partial(builders.trips, fare=lambda i, ts: float(i))


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


@pytest.fixture(scope="module")
def built_table(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Four delta commits, written once for the module (tests get a copy: see ``table``)."""
    path = tmp_path_factory.mktemp("cli") / "t"
    for k in range(4):
        hudi_ds.write(str(path), trips(range(k * 3, k * 3 + 8), k + 1), OPTS)
    return path


@pytest.fixture
def table(built_table: Path, tmp_path: Path) -> str:
    return str(copy_table(built_table, tmp_path / "t"))


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
    """The installed ``hudi-py`` in a subprocess: a listing, a compaction scheduled and run,
    a missing table's exit code, ``--json`` parsed. Every subcommand goes through the same
    ``main`` in-process above (each launch here costs about a second of imports)."""
    exe = Path(sys.executable).parent / "hudi-py"
    if not exe.exists():
        pytest.skip("hudi-py is not installed in this environment")

    def cli(*args: str, expect: int = 0) -> dict:
        proc = subprocess.run(
            [str(exe), *args, "--json"], capture_output=True, text=True, env=os.environ, timeout=120
        )
        assert proc.returncode == expect, proc.stderr
        return json.loads(proc.stdout)

    before = rows(table)
    assert len(cli("timeline", table)["instants"]) == 4
    c = cli("compact", "schedule", table)["scheduled"]
    assert cli("compact", "run", table)["compactions"][0]["instant"] == c
    assert cli("timeline", table + "-missing", expect=EXIT_NOT_A_TABLE)["exit_code"] == 3
    assert rows(table) == hudi_rs_rows(table) == before


def _mdt_fixture_copy(name: str, tmp_path: Path, tmp_path_factory) -> Path:
    src = fixture_table(name, tmp_path_factory)
    dest = tmp_path / src.name
    shutil.copytree(src, dest)
    return dest


def _storage_file_count(path: Path) -> int:
    listing = StorageListing(Storage(str(path)))
    return sum(
        1
        for p in listing.partitions()
        for f in listing.files(p)
        if parse_base_file_name(f.name) or parse_log_file_name(f.name)
    )


def test_metadata_shows_the_metadata_table(tmp_path_factory) -> None:
    name = "cow_v9_txns_simple_meta"
    path = fixture_table(name, tmp_path_factory)
    md = run_json("metadata", str(path))
    assert "files" in md["declared_partitions"] and md["present"]
    assert md["in_step"] is True and md["used_by_reads"] is True
    assert md["missing_instants"] == [] and md["problems"] == []
    assert md["table_version"] == 9 and md["bootstrap_instant"] == "00000000000000000"
    assert md["partitions"] == len(md["files_per_partition"]) == 3
    assert md["files"] == sum(md["files_per_partition"].values()) == _storage_file_count(path)
    (group,) = md["file_groups"]
    assert group["file_id"] == "files-0000-0" and group["base_file"].endswith(".hfile")
    assert group["blocks_merged"] >= 1 and group["log_files"]
    code, out, _ = run("metadata", str(path))
    assert code == EXIT_OK
    assert "in step              yes" in out and "files-0000-0" in out
    assert f"{md['partitions']} partition(s), {md['files']} file(s)" in out


def test_metadata_says_when_it_is_not_in_step(tmp_path: Path, tmp_path_factory) -> None:
    path = _mdt_fixture_copy("cow_0x_partitioned", tmp_path, tmp_path_factory)
    (path / ".hoodie" / "metadata" / ".hoodie" / "20240402144910683.deltacommit").unlink()
    md = run_json("metadata", str(path))
    assert md["in_step"] is False and md["used_by_reads"] is False
    assert md["missing_instants"] == ["20240402144910683"]
    code, out, _ = run("metadata", str(path))
    assert code == EXIT_OK and "NO (reads list the storage)" in out and "20240402144910683" in out


def test_metadata_of_a_table_without_one(table: str) -> None:
    md = run_json("metadata", table)
    assert md["declared_partitions"] == [] and md["in_step"] is None and not md["present"]
    code, out, _ = run("metadata", table)
    assert code == EXIT_OK and "reads list the storage" in out


def test_metadata_rebuild_from_a_listing(table: str) -> None:
    """A table without a metadata table gets one; reads list through it with the same rows."""
    before = rows(table)
    md = run_json("metadata", table, "--rebuild")
    assert md["rebuilt"] and not md["replaced_existing"]
    assert md["declared_partitions"] == ["files"] and md["in_step"] and md["used_by_reads"]
    assert md["files"] == _storage_file_count(Path(table))
    assert set(md["files_per_partition"]) == {"nyc", "sf"}
    assert rows(table) == before
    assert _full_rows(hudi_ds.read(table, {"hoodie.metadata.enable": "false"})) == before
    hudi_ds.write(table, trips(range(20, 24), 9), OPTS)  # the writer keeps it in step
    md = run_json("metadata", table)
    assert md["in_step"] and md["files"] == _storage_file_count(Path(table))
    assert rows(table) == _full_rows(hudi_ds.read(table, {"hoodie.metadata.enable": "false"}))


def test_metadata_rebuild_replaces_a_stale_one(tmp_path: Path, tmp_path_factory) -> None:
    name = "mor_avro_v9_txns_simple_meta"
    path = _mdt_fixture_copy(name, tmp_path, tmp_path_factory)
    tl = path / ".hoodie" / "metadata" / ".hoodie" / "timeline"
    (stale,) = tl.glob("20260307162620509_*.deltacommit")
    stale.unlink()
    assert run_json("metadata", str(path))["in_step"] is False
    code, out, _ = run("metadata", str(path), "--rebuild")
    assert code == EXIT_OK and "rebuilt the metadata table" in out and "in step: yes" in out
    md = run_json("metadata", str(path))
    # its record index and stats partitions (hudi_ds keeps them in step) are built again from
    # the table's keys and files
    declared = ["column_stats", "files", "partition_stats", "record_index"]
    assert md["in_step"] and md["declared_partitions"] == declared
    assert md["files"] == _storage_file_count(path)
    from tests.metadata.test_column_stats import _diff, computed_column_stats, fixture_records
    from tests.metadata.test_record_index import assert_index_true

    assert_index_true(path)
    # (partition stats built anew count each partition's latest slices, as Java's build does;
    # its incremental ones still count the file groups a clustering replaced)
    assert _diff(computed_column_stats(path), fixture_records(path, "column_stats")) == []
    expected = golden_set(GOLDEN_DIR / f"{name}.snapshot.jsonl")
    assert row_set(hudi_ds.read(str(path))) == expected
    with_mdt = hudi_rs_table(str(path), {"hoodie.metadata.enable": "true"})
    assert row_set(with_mdt) == expected


def test_metadata_rebuild_checks_options_version_and_locks(table: str) -> None:
    """--rebuild is a write: unknown -o keys and table versions hudi_ds does not write are
    refused before anything changes; it runs with lock options (multi-writer)."""
    mdt = Path(table) / ".hoodie" / "metadata"
    code, _, err = run("metadata", table, "--rebuild", "-o", "hoodie.no.such.key=1")
    assert code == EXIT_USAGE and "hoodie.no.such.key" in err and not mdt.exists()
    props = Path(table) / ".hoodie" / "hoodie.properties"
    original = props.read_text()
    props.write_text(original.replace("hoodie.table.version=6", "hoodie.table.version=7"))
    code, _, err = run("metadata", table, "--rebuild")
    assert code == EXIT_REFUSED and "metadata rebuild" in err and not mdt.exists()
    props.write_text(original)
    before = rows(table)
    md = run_json(
        "metadata",
        table,
        "--rebuild",
        "-o",
        "hoodie.write.concurrency.mode=optimistic_concurrency_control",
        "-o",
        "hoodie.write.lock.provider="
        "org.apache.hudi.client.transaction.lock.FileSystemBasedLockProvider",
    )
    assert md["rebuilt"] and md["in_step"] and md["files"] == _storage_file_count(Path(table))
    assert rows(table) == before
    assert _full_rows(hudi_rs_table(table, {"hoodie.metadata.enable": "true"})) == before


# -- first contact: run as a user runs it, in a subprocess ---------------------------------------

REPO = Path(__file__).resolve().parents[1]


def _proc(*args: str, shell_tail: str = "") -> subprocess.CompletedProcess[str]:
    """``python -m hudi_ds.cli ARGS`` in a fresh interpreter (``| shell_tail`` when given)."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    cmd = [sys.executable, "-m", "hudi_ds.cli", *args]
    if shell_tail:
        line = " ".join(f"'{c}'" for c in cmd) + " | " + shell_tail
        return subprocess.run(
            ["bash", "-c", "set -o pipefail; " + line],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)


@pytest.mark.slow
def test_cli_first_contact_in_a_subprocess(table: str) -> None:
    """What only a fresh interpreter shows: --version; an unknown -o key exits with the usage
    code, "did you mean" on stderr, and deletes nothing; a closed pipe ends quietly; times are
    UTC with the zone. (Each launch imports hudi_ds anew, about a second of CPU: the parsing
    of the other arguments, the same ``main``, is checked in-process below.)"""
    version = _proc("--version")
    assert (
        version.returncode == 0
        and version.stdout.strip() == f"hudi-py (hudi_ds) {hudi_ds.__version__}"
    )
    before = rows(table)
    files_before = sorted(p.name for p in Path(table).rglob("*") if p.is_file())
    bad = _proc("clean", table, "-o", "cleaner.commits.retained=1")
    assert bad.returncode == EXIT_USAGE, bad.stderr
    assert "unknown option 'cleaner.commits.retained'" in bad.stderr
    assert "did you mean 'hoodie.cleaner.commits.retained'" in bad.stderr
    assert sorted(p.name for p in Path(table).rglob("*") if p.is_file()) == files_before
    # a reader that stops after one line: no traceback, SIGPIPE's exit code
    piped = _proc("timeline", table, "--json", shell_tail="head -1")
    assert piped.stdout == "{\n", piped.stdout
    assert "Traceback" not in piped.stderr and "BrokenPipe" not in piped.stderr, piped.stderr
    # times: UTC, the zone shown
    tl = json.loads(_proc("timeline", table, "--json").stdout)["instants"]
    assert all(i["requested_at"].endswith(" UTC") for i in tl)
    assert all(i["completed_at"].endswith(" UTC") for i in tl if i["state"] == "COMPLETED")
    first = tl[0]
    t = first["instant"]
    assert first["requested_at"] == (
        f"{t[:4]}-{t[4:6]}-{t[6:8]} {t[8:10]}:{t[10:12]}:{t[12:14]}.{t[14:17]} UTC"
    )  # tables hudi_ds creates have hoodie.table.timeline.timezone=UTC
    assert rows(table) == hudi_rs_rows(table) == before


def test_option_typos_and_savepoint_actions(table: str) -> None:
    """A misspelt -o key names the key it means; a bad value is a usage error naming the key;
    savepoint ACTION PATH [INSTANT], as compact, and the old PATH [INSTANT] [--list] form."""
    before = rows(table)
    code, _, err = run("timeline", table, "-o", "hoodie.metadata.enabel=true")
    assert code == EXIT_USAGE and "did you mean 'hoodie.metadata.enable'" in err
    code, out, _ = run("clean", table, "-o", "hoodie.cleaner.commits.retained=-1", "--json")
    assert code == EXIT_USAGE
    assert "'hoodie.cleaner.commits.retained'" in json.loads(out)["error"]
    tl = run_json("timeline", table)["instants"]
    assert run_json("savepoint", "list", table) == {"savepoints": []}
    made = run_json("savepoint", "create", table, tl[-2]["instant"])
    assert made == {"savepoint": tl[-2]["instant"]}
    assert run_json("savepoint", table, "--list") == {"savepoints": [tl[-2]["instant"]]}
    gone = run_json("savepoint", "delete", table, tl[-2]["instant"])
    assert gone == {"deleted_savepoint": tl[-2]["instant"]}
    assert run_json("savepoint", "list", table) == {"savepoints": []}
    code, _, err = run("savepoint", "list")
    assert code == EXIT_USAGE and "the table PATH is missing" in err
    code, _, err = run("savepoint", "list", table, "x")
    assert code == EXIT_USAGE and "unexpected arguments ['x']" in err
    assert rows(table) == hudi_rs_rows(table) == before


def test_every_listing_command_speaks_json(table: str) -> None:
    """``--json`` on every command that lists something: stdout parses as JSON."""
    for args in (
        ("timeline", table),
        ("files", table),
        ("stats", table),
        ("show-config", table),
        ("compact", "show", table),
        ("savepoint", "list", table),
        ("metadata", table),
        ("clean", table, "--dry-run"),
        ("archive", table, "--dry-run"),
    ):
        code, out, err = run(*args, "--json")
        assert code == EXIT_OK, (args, err)
        assert isinstance(json.loads(out), dict), args


@pytest.mark.slow
def test_progress_on_a_terminal_only(table: str) -> None:
    """Long work (compaction, clean) draws a progress bar on stderr when stderr is a terminal,
    and nothing when it is a pipe; stdout stays clean JSON either way."""
    import pty

    main_fd, term_fd = pty.openpty()
    try:
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        args = [sys.executable, "-m", "hudi_ds.cli"]
        comp = subprocess.run(
            [*args, "compact", "run", table, "--schedule", "--json"],
            stdout=subprocess.PIPE, stderr=term_fd, text=True, env=env, timeout=120,
        )  # fmt: skip
        assert comp.returncode == 0
        assert json.loads(comp.stdout)["compactions"]
        for k in range(2):  # later commits make the pre-compaction slices cleanable
            hudi_ds.write(table, trips(range(8), 20 + k), OPTS)
        cl = subprocess.run(
            [*args, "clean", table, "-o", "hoodie.cleaner.commits.retained=1", "--json"],
            stdout=subprocess.PIPE, stderr=term_fd, text=True, env=env, timeout=120,
        )  # fmt: skip
        assert cl.returncode == 0 and json.loads(cl.stdout)["deleted"]
        os.close(term_fd)
        term_fd = -1
        drawn = b""
        while True:
            try:
                chunk = os.read(main_fd, 65536)
            except OSError:
                break
            if not chunk:
                break
            drawn += chunk
    finally:
        if term_fd >= 0:
            os.close(term_fd)
        os.close(main_fd)
    text = drawn.decode()
    assert "compaction " in text and "clean " in text and "#" in text, text
    piped = _proc("timeline", table)
    assert piped.returncode == 0 and "[" not in piped.stderr
