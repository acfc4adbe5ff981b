"""The install a user does, outside this checkout: the wheel (built as ``make dist`` builds it,
setuptools in pip's isolated build environment) in a fresh venv with its runtime dependencies,
and the README's Spark quick start -- its ``<!-- doc-test: wheel -->`` python blocks, unchanged
but for ``/tmp/hudi_ds_docs`` -- run from that venv in a plain SparkSession: no ``register()``,
``PYSPARK_PYTHON`` that venv's interpreter, ``PYTHONPATH`` cleared, the working directory a
temporary one. Spark's Python workers then find ``hudi_py`` through pyspark's static
registration of the installed top-level module ``pyspark_hudi_py``.

Where the fresh venv's dependencies come from:

* ``make test`` (default): the wheel's runtime + ``[spark]`` dependency closure, resolved from
  its metadata, taken from this ``.venv``'s installed copies -- a ``.pth`` file in the fresh
  venv names a directory of links to exactly those distributions -- and the wheel installed
  by pip with ``--no-index``, which finds each requirement satisfied (or fails). Unpacking
  pyspark and pyarrow again costs about 30 s of a 2-core machine; the files are the same.
* ``make test-install`` (``HUDI_DS_INSTALL_FROM_INDEX=1``): ``pip install
  "hudi_ds-....whl[spark]"`` into a venv with pip, everything from the package index.

Either way the venv holds no development package (pytest, hudi-rs, pandas, ...), and the
checkout is on none of its paths. The tables are read back with hudi-rs and hudi_ds.
"""

from __future__ import annotations

import ast
import fcntl
import json
import os
import re
import shlex
import subprocess
import sys
import time
import zipfile
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path

import pytest
from packaging.markers import Marker
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

import hudi_ds
from tests.conftest import assert_rows, hudi_rs_table
from tests.doc_blocks import labelled
from tests.test_packaging import _copy_project

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
#: the doc-snippet label of the blocks this file runs (README's Spark quick start)
LABEL = "wheel"
DOC_PATH = "/tmp/hudi_ds_docs"
FROM_INDEX = os.environ.get("HUDI_DS_INSTALL_FROM_INDEX") == "1"
#: packages of the dev extra that the runtime must not need (nor bring)
DEV_ONLY = {"pytest", "hypothesis", "hudi", "mypy", "ruff", "polars", "duckdb", "moto", "boto3"}


def wheel_blocks() -> list[str]:
    """The README's ``<!-- doc-test: wheel -->`` blocks, in order."""
    blocks = [b.code for b in labelled("README.md", LABEL)]
    assert blocks, f"README.md has no <!-- doc-test: {LABEL} --> block"
    return blocks


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel, built from a copy of the project (nothing written into the checkout), once
    per run: the pytest workers share it through their common base directory."""
    base = tmp_path_factory.getbasetemp()
    # under xdist each worker's base is a folder of the run's own
    shared = (base.parent if "PYTEST_XDIST_WORKER" in os.environ else base) / "hudi_ds_wheel"
    shared.mkdir(exist_ok=True)
    with open(shared / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # the other worker waits for the build, then reuses it
        built = list((shared / "dist").glob("hudi_ds-*.whl"))
        if built:
            return built[0]
        tmp = tmp_path_factory.mktemp("wheel")
        src = _copy_project(tmp / "src")
        cmd = [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(tmp), "."]
        out = subprocess.run(cmd, cwd=src, capture_output=True, text=True, timeout=600)
        assert out.returncode == 0, out.stderr[-3000:]
        (whl,) = tmp.glob("hudi_ds-*.whl")
        (shared / "dist").mkdir()
        return whl.rename(shared / "dist" / whl.name)


def _wheel_metadata(whl: Path) -> tuple[list[str], set[str], dict[str, str]]:
    """The wheel's METADATA (lines), its file names and its dist-info files by name."""
    with zipfile.ZipFile(whl) as z:
        names = set(z.namelist())
        info = {n.split("/", 1)[1]: z.read(n).decode() for n in names if ".dist-info/" in n}
    return info["METADATA"].splitlines(), names, info


@pytest.mark.slow
def test_the_wheel_carries_its_dependencies_entry_point_and_package_data(wheel: Path) -> None:
    """The wheel's metadata says what pyproject.toml says -- runtime dependencies, each extra,
    the ``hudi-py`` console script -- and it holds the package data (py.typed, the Avro
    schemas), ``pyspark_hudi_py`` and LICENSE, and nothing of tests, examples or bench. The
    install hints of the error messages name requirements of those extras."""
    tomllib = pytest.importorskip("tomllib")  # Python >= 3.11
    meta, names, info = _wheel_metadata(wheel)
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    requires = {ln.removeprefix("Requires-Dist: ") for ln in meta if ln.startswith("Requires-Dist")}
    want = {str(Requirement(r)) for r in project["dependencies"]}
    for extra, reqs in project["optional-dependencies"].items():
        for r in reqs:
            req = Requirement(r)
            req.marker = Marker(f'extra == "{extra}"')
            want.add(str(req))
    assert {str(Requirement(r)) for r in requires} == want
    assert {ln.removeprefix("Provides-Extra: ") for ln in meta if "Provides-Extra" in ln} == set(
        project["optional-dependencies"]
    )
    assert f"Requires-Python: {project['requires-python']}" in meta
    assert "[console_scripts]\nhudi-py = hudi_ds.cli:main" in info["entry_points.txt"]
    tops = {n.split("/", 1)[0] for n in names if not n.startswith("hudi_ds-")}
    assert tops == {"hudi_ds", "pyspark_hudi_py"}, tops
    assert {"hudi_ds/py.typed", "pyspark_hudi_py/__init__.py"} <= names
    for schemas in ("hudi_ds/timeline/avro/", "hudi_ds/metadata/avro/"):
        assert any(n.startswith(schemas) and n.endswith(".avsc") for n in names), schemas
    assert "Apache License" in next(v for k, v in info.items() if k.endswith("LICENSE"))
    # what the install hints tell users to pip install is what the extras require
    from hudi_ds.layout.lance import PYLANCE_REQUIREMENT

    extras = project["optional-dependencies"]
    assert "pyspark[sql]>=4.0" in extras["spark"]
    assert "boto3>=1.28" in extras["aws"]
    assert PYLANCE_REQUIREMENT.strip('"') in extras["lance"]


def _closure(requirements: list[str], extras: set[str]) -> dict[str, metadata.Distribution]:
    """The installed distributions (of this interpreter) that ``requirements`` need, with
    ``extras`` of the first level, recursively; each must satisfy its requirement."""
    found: dict[str, metadata.Distribution] = {}
    todo = [(Requirement(r), extras) for r in requirements]
    while todo:
        req, active = todo.pop()
        if req.marker is not None and not any(
            req.marker.evaluate({"extra": e}) for e in (active or {""})
        ):
            continue
        name = canonicalize_name(req.name)
        if name == "hudi-ds":  # a self-referencing extra: the wheel itself
            continue
        dist = metadata.distribution(req.name)
        assert req.specifier.contains(dist.version, prereleases=True), (req, dist.version)
        if name in found:
            continue
        found[name] = dist
        todo.extend((Requirement(r), set(req.extras)) for r in dist.requires or [])
    return found


def _link_dependencies(deps: dict[str, metadata.Distribution], into: Path) -> None:
    """Links, in ``into``, to the top-level files of each distribution in ``deps`` (packages,
    modules, ``.dist-info``, bundled ``.libs``): a site directory with those alone."""
    into.mkdir()
    for dist in deps.values():
        site = Path(str(dist.locate_file("")))
        tops = {f.parts[0] for f in dist.files or [] if f.parts[0] != ".."}
        for top in tops:
            target = site / top
            if target.exists() and not (into / top).exists():
                (into / top).symlink_to(target)


def _venv(path: Path, with_pip: bool) -> Path:
    base = Path(sys.base_prefix) / "bin" / "python3"
    args = [str(base), "-m", "venv", str(path)] + ([] if with_pip else ["--without-pip"])
    subprocess.run(args, check=True, timeout=300)
    return path / "bin" / "python"


def _site_packages(python: Path) -> Path:
    out = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    )
    return Path(out.stdout.strip())


@pytest.fixture(scope="module")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A fresh venv with the wheel and its ``[spark]`` dependencies; its python."""
    tmp = tmp_path_factory.mktemp("venv")
    started = time.perf_counter()
    cpu = time.process_time()
    if FROM_INDEX:
        python = _venv(tmp / "venv", with_pip=True)
        cmd = [str(python), "-m", "pip", "install", "-q", f"{wheel}[spark]"]
    else:
        python = _venv(tmp / "venv", with_pip=False)
        meta, _, _ = _wheel_metadata(wheel)
        requires = [
            ln.removeprefix("Requires-Dist: ") for ln in meta if ln.startswith("Requires-Dist")
        ]
        deps = _closure(requires, {"spark"})
        _link_dependencies(deps, tmp / "deps")
        (_site_packages(python) / "_hudi_ds_test_deps.pth").write_text(f"{tmp / 'deps'}\n")
        # pip of this interpreter, run for the fresh one: it sees the linked distributions as
        # installed there and may fetch nothing
        cmd = [sys.executable, "-m", "pip", "--python", str(python), "install", "-q"]
        cmd += ["--no-index", f"{wheel}[spark]"]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=900, cwd=tmp)
    assert out.returncode == 0, out.stderr[-3000:]
    print(
        f"fresh venv + wheel[spark] ({'from the index' if FROM_INDEX else 'linked deps'}): "
        f"{time.perf_counter() - started:.1f} s wall"
        f" ({time.process_time() - cpu:.1f} s CPU in this process)"
    )
    yield python


def _env() -> dict[str, str]:
    drop = {"PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "PYTHONPATH", "SPARK_HOME", "VIRTUAL_ENV"}
    return {k: v for k, v in os.environ.items() if k not in drop}


@pytest.mark.spark
@pytest.mark.slow
def test_readme_spark_quick_start_runs_from_the_installed_wheel(
    installed: Path, tmp_path: Path
) -> None:
    blocks = wheel_blocks()
    assert not any("register(" in b for b in blocks), "the quick start relies on register()"
    env = _env()
    # the venv: hudi_ds installed as files (not editable), no dev package, not the checkout
    probe = subprocess.run(
        [
            str(installed),
            "-c",
            "import json, sys, hudi_ds, pyspark_hudi_py\n"
            "from importlib import metadata\n"
            "d = metadata.distribution('hudi_ds')\n"
            "print(json.dumps({'file': hudi_ds.__file__, 'path': sys.path,"
            " 'direct_url': d.read_text('direct_url.json') or '',"
            " 'dists': sorted(x.metadata['Name'].lower() for x in metadata.distributions())}))",
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    assert probe.returncode == 0, probe.stderr
    found = json.loads(probe.stdout)
    venv = installed.parent.parent
    assert Path(found["file"]).is_relative_to(venv), found["file"]
    assert '"editable": true' not in found["direct_url"]
    assert not [p for p in found["path"] if p and Path(p).resolve().is_relative_to(REPO)]
    assert not DEV_ONLY & set(found["dists"]), found["dists"]
    assert {"hudi_ds", "pyspark", "pyarrow"} <= set(found["dists"])

    tables = tmp_path / "tables"
    script = tmp_path / "quickstart.py"
    script.write_text("\n".join(blocks).replace(DOC_PATH, str(tables)))
    from tests.spark.standalone import JVM_OPTS

    run = subprocess.run(
        [str(installed), str(script)],
        capture_output=True,
        text=True,
        env={**env, "PYSPARK_PYTHON": str(installed), "SPARK_SUBMIT_OPTS": JVM_OPTS},
        cwd=tmp_path,
        timeout=600,
    )
    assert run.returncode == 0, run.stderr[-5000:]
    assert "PYTHON_DATA_SOURCE" not in run.stderr
    want = [("r1", 2, "sf", 12.5), ("r2", 1, "nyc", 22.5), ("r3", 2, "la", 9.0)]
    columns = ["id", "ts", "city", "fare"]
    table = str(tables / "readme_spark" / "rides")  # the batch write, then the stream's upserts
    assert_rows(hudi_rs_table(table), want, columns)
    assert_rows(hudi_ds.read(table), want, columns)
    assert re.search(r"\|\s*r1\|\s*12\.5\|", run.stdout), run.stdout


def test_the_demo_ends_with_commands_that_read_its_table(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The lines ``make demo`` ends with, split as the shell splits them: the interpreter and
    the CLI of the demo's environment, the hudi_ds one-liner and the ``hudi-py`` commands run
    on a small table (in this process: the same code, without a process start each), the
    Spark one-liner compiled (it would start a JVM)."""
    sys.path.insert(0, str(REPO / "examples"))
    try:
        import demo
    finally:
        sys.path.remove(str(REPO / "examples"))
    from hudi_ds.cli import main as cli_main

    table = tmp_path / "my events"  # a path the shell must quote
    row = {"event_id": "e1", "event_ts": 1, "region": "us", "amount": 2.5, "status": "new"}
    hudi_ds.write(
        str(table),
        [row],
        {
            "hoodie.table.name": "events",
            "hoodie.datasource.write.recordkey.field": "event_id",
            "hoodie.datasource.write.precombine.field": "event_ts",
            "hoodie.datasource.write.partitionpath.field": "region",
        },
    )
    lines = demo.how_to_read(str(table), sys.executable)
    assert lines[0] == f"read the table at {table}:"
    commands = [shlex.split(ln) for ln in lines if ln.startswith("    ")]
    assert len(commands) == 5, lines
    (py1, flag1, embedded), (py2, flag2, via_spark), *cli = commands
    assert (py1, flag1, py2, flag2) == (sys.executable, "-c", sys.executable, "-c")
    capsys.readouterr()
    exec(compile(embedded, "<demo's hudi_ds line>", "exec"), {})
    printed = capsys.readouterr().out.splitlines()
    assert printed == ["1 rows", str([row])]
    hudi_py = str(Path(sys.executable).with_name("hudi-py"))
    assert [c[:2] for c in cli] == [[hudi_py, "timeline"], [hudi_py, "files"], [hudi_py, "stats"]]
    for command in cli:
        assert command[2:] == [str(table)]
        assert cli_main(command[1:]) == 0, command
        assert capsys.readouterr().out.strip(), command
    ast.parse(via_spark)
    assert f'.load("{table}")' in via_spark and "local_session(" in via_spark


def test_make_targets_install_what_they_need(tmp_path: Path) -> None:
    """``make demo`` installs the runtime, Spark and hudi-rs (extra ``demo``), not the dev
    toolchain; ``make test`` adds it on top; ``make dist`` builds into ``dist/`` (dry runs
    with a venv that does not exist yet)."""

    def dry(*args: str) -> str:
        out = subprocess.run(
            ["make", "-n", "-C", str(REPO), *args, f"VENV={tmp_path / 'venv'}"],
            capture_output=True,
            text=True,
            check=True,
        )
        return out.stdout

    demo = dry("demo")
    assert "pip install -q -e '.[demo]'" in demo and "[dev]" not in demo
    assert "python examples/demo.py --store local" in demo
    assert "pip install -q -e '.[dev]'" in dry("demo", "STORE=s3")  # moto, the local S3 server
    test = dry("test-quick")
    assert test.index("'.[demo]'") < test.index("'.[dev]'")
    dist = dry("dist")
    assert "-m build --outdir dist ." in dist and "[dev]" not in dist
