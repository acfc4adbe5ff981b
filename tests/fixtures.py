"""Access to the real Apache Hudi tables of the shared fixtures (unzipped on demand).

The tables are looked up relative to the repository only: ``../shared/fixtures/hudi-tables``
from the project root, or the folder named by the environment variable ``HUDI_DS_FIXTURES``
(docs/testing.md). When the folder is absent, every test that needs it is skipped with a reason
naming the path looked at: :func:`fixture_table` and :func:`require_fixtures` skip, and the
tests parametrized over :func:`fixture_names` (then empty) are skipped by ``tests/conftest.py``.

Under CI (``CI=true``, as ``.ci/run`` sets it) a missing folder fails the run instead, before any
test runs (:func:`missing_shared`, checked by ``tests/conftest.py``): a CI run that skipped every
fixture test would pass without reading one table written by Apache Hudi.
"""

from __future__ import annotations

import json
import os
import zipfile
from functools import cache
from pathlib import Path
from typing import Any

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
FIXTURES_DIR = Path(
    os.environ.get("HUDI_DS_FIXTURES") or REPO_ROOT.parent / "shared" / "fixtures" / "hudi-tables"
)
GOLDEN_DIR = FIXTURES_DIR / "golden"
# Hudi's own Avro schemas (hudi-common/src/main/avro), beside the fixtures
REFERENCE_AVRO_SCHEMAS = REPO_ROOT.parent / "shared" / "reference" / "avro-schemas"
MISSING_REASON = (
    f"the Hudi fixture tables are not at {FIXTURES_DIR} "
    "(../shared/fixtures/hudi-tables from the project root, or set HUDI_DS_FIXTURES)"
)

_unzipped: dict[str, Path] = {}


def on_ci() -> bool:
    """Whether this is a CI run (the environment variable ``CI`` is ``true``)."""
    return os.environ.get("CI", "").strip().lower() == "true"


def missing_shared() -> list[Path]:
    """The shared folders the suite reads that are absent: the fixture tables and Hudi's
    reference Avro schemas."""
    return [p for p in (FIXTURES_DIR, MORE_FIXTURES_DIR, REFERENCE_AVRO_SCHEMAS) if not p.is_dir()]


def ci_missing_message(missing: list[Path]) -> str:
    """Why a CI run stops when ``missing`` (shared folders) are absent."""
    paths = ", ".join(str(p) for p in missing)
    return (
        f"CI=true but the shared test data is missing: {paths} "
        "(../shared beside the project root: fixtures/hudi-tables and reference/avro-schemas; "
        "HUDI_DS_FIXTURES names another fixture folder). Outside CI these tests are skipped."
    )


def fixtures_present() -> bool:
    """Whether the fixture tables' folder exists."""
    return FIXTURES_DIR.is_dir()


def require_fixtures() -> None:
    """Skip the calling test when the fixture tables are absent (the reason names the path)."""
    if not fixtures_present():
        pytest.skip(MISSING_REASON)


def fixture_names() -> list[str]:
    """Names of every fixture table (zip stem); empty when the fixtures are absent."""
    return sorted(p.stem for p in FIXTURES_DIR.glob("*.zip"))


def tables_with_logs() -> list[str]:
    """The fixture tables whose zip holds log files."""
    names = []
    for name in fixture_names():
        with zipfile.ZipFile(FIXTURES_DIR / f"{name}.zip") as zf:
            if any(".log." in n and "__MACOSX" not in n for n in zf.namelist()):
                names.append(name)
    return names


def fixture_table(name: str, tmp_path_factory) -> Path:  # type: ignore[no-untyped-def]
    """Unzip fixture ``name`` once per session and return the table root folder.

    Skips the calling test when the fixture tables are absent.
    """
    require_fixtures()
    if name in _unzipped:
        return _unzipped[name]
    dest = tmp_path_factory.mktemp(f"fx_{name}")
    with zipfile.ZipFile(FIXTURES_DIR / f"{name}.zip") as zf:
        zf.extractall(dest)
    roots = [p for p in dest.iterdir() if p.is_dir() and p.name != "__MACOSX"]
    if len(roots) != 1:
        raise RuntimeError(f"fixture {name}: expected one top folder, found {roots}")
    _unzipped[name] = roots[0]
    return roots[0]


@cache
def has_lance_base_files(name: str) -> bool:
    """Whether fixture ``name`` holds Lance base files (read only with the optional pylance)."""
    with zipfile.ZipFile(FIXTURES_DIR / f"{name}.zip") as zf:
        return any(n.endswith(".lance") for n in zf.namelist())


def require_base_file_reader(name: str) -> None:
    """Skip the calling test when reading fixture ``name``'s base files needs a missing extra.

    Lance base files are read with the optional ``pylance`` package (``hudi_ds[lance]``);
    without it the reader refuses them (``UnsupportedError``), so a test that reads their rows
    is skipped, with the reason, instead of failing.
    """
    require_fixtures()
    if has_lance_base_files(name):
        pytest.importorskip(
            "lance",
            reason=f"{name} has Lance base files: the optional pylance (hudi_ds[lance]) is missing",
        )


# The second set: real tables Apache Hudi wrote for Trino's Hudi connector tests (older table
# versions, the CUSTOM key generator, partition values holding "/"). Each folder holds the
# table's zip and ``expected.json``: the checks Trino's own tests assert on the table.
MORE_FIXTURES_DIR = FIXTURES_DIR.parent / "hudi-tables-more"


def more_fixture_names() -> list[str]:
    """Folder names of the second fixture set; empty when it is absent."""
    return (
        sorted(p.name for p in MORE_FIXTURES_DIR.iterdir() if p.is_dir())
        if MORE_FIXTURES_DIR.is_dir()
        else []
    )


def unzip_more(name: str, dest: Path) -> Path:
    """A fresh, writable copy of the second set's table ``name`` under ``dest``; its root."""
    require_fixtures()
    (zip_path,) = (MORE_FIXTURES_DIR / name).glob("*.zip")
    with zipfile.ZipFile(zip_path) as zf:
        zf.extractall(dest)
    roots = [p for p in dest.iterdir() if p.is_dir() and p.name != "__MACOSX"]
    if len(roots) != 1:
        raise RuntimeError(f"fixture {name}: expected one top folder, found {roots}")
    return roots[0]


def expected_checks(name: str) -> list[dict[str, Any]]:
    """The checks of ``expected.json`` for the second set's table ``name``."""
    checks: list[dict[str, Any]] = json.loads(
        (MORE_FIXTURES_DIR / name / "expected.json").read_text()
    )["checks"]
    return checks
