"""Access to the real Apache Hudi tables in ``shared/fixtures/hudi-tables`` (unzipped on demand)."""

from __future__ import annotations

import os
import zipfile
from pathlib import Path


def _fixtures_dir() -> Path:
    env = os.environ.get("HUDI_DS_FIXTURES")
    if env:
        return Path(env)
    for cand in (
        Path(__file__).resolve().parents[2] / "shared" / "fixtures" / "hudi-tables",
        Path("/work/shared/fixtures/hudi-tables"),
    ):
        if cand.is_dir():
            return cand
    return Path(__file__).resolve().parents[2] / "shared" / "fixtures" / "hudi-tables"


FIXTURES_DIR = _fixtures_dir()
GOLDEN_DIR = FIXTURES_DIR / "golden"

_unzipped: dict[str, Path] = {}


def fixture_names() -> list[str]:
    """Names of every fixture table (zip stem)."""
    return sorted(p.stem for p in FIXTURES_DIR.glob("*.zip"))


def fixture_table(name: str, tmp_path_factory) -> Path:  # type: ignore[no-untyped-def]
    """Unzip fixture ``name`` once per session and return the table root folder."""
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
