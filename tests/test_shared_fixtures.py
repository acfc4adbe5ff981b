"""The shared fixtures' rule (tests/fixtures.py): without ../shared a local run skips the tests
that read it, a CI run (``CI=true``) fails before any test runs, naming the paths looked for."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from tests.fixtures import REPO_ROOT

#: a fixture test: it reads a fixture table's zip
FIXTURE_TEST = "tests/test_keygen.py::test_timestamp_partition_paths_equal_javas"


def _pytest(tmp_path: Path, ci: str | None, *args: str) -> subprocess.CompletedProcess[str]:
    """A pytest run of this checkout's suite with the fixture tables looked for at a path that
    does not exist (and ``CI`` as given: unset when ``None``)."""
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    env["HUDI_DS_FIXTURES"] = str(tmp_path / "no-shared" / "hudi-tables")
    env["PYTHONPATH"] = str(REPO_ROOT)
    if ci is not None:
        env["CI"] = ci
    return subprocess.run(
        [
            *(sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist"),
            f"--basetemp={tmp_path / 'run'}",
            *args,
        ],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_ci_fails_the_run_naming_the_missing_path(tmp_path: Path) -> None:
    run = _pytest(tmp_path, "true", FIXTURE_TEST)
    out = run.stdout + run.stderr
    assert run.returncode == 4, out[-3000:]  # pytest's usage error: no test ran
    missing = tmp_path / "no-shared" / "hudi-tables"
    assert f"CI=true but the shared test data is missing: {missing}" in out, out[-3000:]
    assert not re.search(r"\d+ (passed|skipped|failed)", out), out[-3000:]


def test_a_local_run_skips_with_the_path(tmp_path: Path) -> None:
    for ci in (None, "false"):
        run = _pytest(tmp_path, ci, "-rs", FIXTURE_TEST)
        out = run.stdout + run.stderr
        assert run.returncode == 0, out[-3000:]
        assert re.search(r"\b\d+ skipped\b", out), out[-3000:]
        assert not re.search(r"\d+ (passed|failed|error)", out), out[-3000:]
        missing = tmp_path / "no-shared" / "hudi-tables"
        assert f"the Hudi fixture tables are not at {missing}" in out, out[-3000:]


def test_ci_run_script_sets_ci() -> None:
    """``.ci/run`` counts as CI however it is started (a plain ``bash .ci/run`` too): it exports
    ``CI=true`` before it runs the suite."""
    lines = (REPO_ROOT / ".ci" / "run").read_text().splitlines()
    exports = [i for i, line in enumerate(lines) if line.strip() == "export CI=true"]
    runs = [i for i, line in enumerate(lines) if line.strip() == "make test"]
    assert exports and runs and exports[0] < runs[0], lines
