"""What a user installs: py.typed and LICENSE in the distribution, project metadata, and the
public API typed for ``mypy --strict`` users (not ``Any``)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def _copy_project(dest: Path) -> Path:
    """The files a build reads, copied so that the build leaves nothing in the checkout."""
    dest.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(REPO / name, dest / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for pkg in ("hudi_ds", "pyspark_hudi_py"):
        shutil.copytree(REPO / pkg, dest / pkg, ignore=ignore)
    return dest


def test_sdist_and_package_files_hold_py_typed_and_license(tmp_path: Path) -> None:
    """setuptools, as pip runs it: the sdist holds LICENSE and py.typed, its metadata the
    license file, URLs and classifiers; build_py (what goes into the wheel) copies py.typed
    and the Avro schemas."""
    src = _copy_project(tmp_path / "src")
    assert "Apache License" in (src / "LICENSE").read_text()[:200]
    code = "import sys; from setuptools import build_meta as b; print(b.build_sdist(sys.argv[1]))"
    out = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "dist")],
        cwd=src,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    sdist = tmp_path / "dist" / out.stdout.strip().splitlines()[-1]
    with tarfile.open(sdist) as tar:
        names = {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}
        pkg_info = tar.extractfile(f"{sdist.name.removesuffix('.tar.gz')}/PKG-INFO")
        assert pkg_info is not None
        meta = pkg_info.read().decode()
    assert {"LICENSE", "hudi_ds/py.typed", "hudi_ds/__init__.py"} <= names
    assert "License-File: LICENSE" in meta
    assert "Classifier: Typing :: Typed" in meta
    assert "License-Expression: Apache-2.0" in meta
    assert "Project-URL: Apache Hudi, https://hudi.apache.org" in meta
    # build_py is the step that fills the wheel with the package's files
    build = subprocess.run(
        [sys.executable, "-c", "import setuptools; setuptools.setup()", "-q", "build_py",
         "-d", str(tmp_path / "lib")],
        cwd=src, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert build.returncode == 0, build.stderr
    lib = tmp_path / "lib" / "hudi_ds"
    assert (lib / "py.typed").exists()
    assert list((lib / "timeline" / "avro").glob("*.avsc"))


@pytest.mark.slow
def test_mypy_strict_user_script_sees_real_types(tmp_path: Path) -> None:
    """A user's script under ``mypy --strict``: hudi_ds is analysed as an installed typed
    package (errors inside it silenced, as for site-packages), the script passes, and the
    public API's types are hudi_ds's own, not ``Any``. (pyarrow ships no type information,
    so ``pyarrow.Table`` is ``Any`` to mypy whatever hudi_ds declares.)"""
    mypy = shutil.which("mypy", path=str(Path(sys.executable).parent)) or shutil.which("mypy")
    if mypy is None:
        pytest.skip("mypy is not installed")
    script = tmp_path / "user.py"
    script.write_text(
        textwrap.dedent(
            """
            from collections.abc import Mapping

            import hudi_ds
            from hudi_ds import HudiTable
            from hudi_ds.errors import HudiError

            OPTS: Mapping[str, str] = {"hoodie.table.name": "t"}


            def ingest(path: str, rows: list[dict[str, object]]) -> str:
                instant = hudi_ds.write(path, rows, OPTS)
                reveal_type(instant)
                table = HudiTable(path, OPTS)
                reveal_type(table)
                reveal_type(table.upsert)
                reveal_type(table.timeline)
                reveal_type(table.config)
                reveal_type(hudi_ds.read)
                try:
                    table.delete(rows)
                except HudiError as e:
                    reveal_type(e)
                return instant or ""
            """
        )
    )
    env = {**os.environ, "MYPYPATH": str(REPO)}
    out = subprocess.run(
        [mypy, "--strict", "--follow-imports=silent", "--no-incremental", str(script)],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=600,
    )
    notes = [
        ln.split("Revealed type is ", 1)[1]
        for ln in out.stdout.splitlines()
        if "Revealed type" in ln
    ]
    assert "Success: no issues found" in out.stdout or out.returncode == 1, out.stdout
    errors = [ln for ln in out.stdout.splitlines() if ": error:" in ln]
    assert not errors, errors
    assert notes == [
        '"str | None"',
        '"hudi_ds.api.HudiTable"',
        '"def (data: Any, options: typing.Mapping[str, Any] | None =) -> str | None"',
        '"hudi_ds.timeline.timeline.Timeline"',
        '"hudi_ds.table_config.TableConfig"',
        notes[5],
        '"hudi_ds.errors.HudiError"',
    ], notes
    assert notes[5].startswith(
        '"def (path: str, options: typing.Mapping[str, Any] | None =, columns:'
    )
