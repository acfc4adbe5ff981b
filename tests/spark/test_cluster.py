"""hudi_py on a Spark standalone cluster (issue 19): master + 2 workers on loopback.

Every job is a ``spark-submit --master spark://...`` driver process; executors are separate JVMs
in the workers' work directories with their own Python workers, which get ``hudi_ds`` only the
way the job ships it:

* an installed environment (the executors' interpreter imports hudi_ds: here the checkout on
  ``spark.executorEnv.PYTHONPATH``, as an installed package would be);
* ``--py-files`` of a zip of ``hudi_ds``;
* ``--archives`` of a packed virtual environment (``./env/bin/python`` in each executor's work
  directory).

Worker loss: a worker and its executor are SIGKILLed while a task is writing files; Spark runs
the task again on the other worker and the table ends exactly once, with the dead attempt's
files gone. The cluster's processes are started and stopped by the module fixture, which checks
that none is left behind.

The tests run in definition order and share the cluster: a test that kills a worker starts a
replacement before it returns.
"""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import hudi_ds
from tests.conftest import assert_rows, hudi_rs_table
from tests.spark.standalone import REPO, StandaloneCluster, finish, submit

pytestmark = [pytest.mark.spark, pytest.mark.cluster, pytest.mark.slow]

EXAMPLES = REPO / "examples"
JOBS = Path(__file__).resolve().parent / "cluster_jobs"
ROWS = 4000
INSTALLED = {"spark.executorEnv.PYTHONPATH": str(REPO)}


def load_example(name: str) -> Any:
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StandaloneCluster]:
    """A master and two workers (1 core, 1 GiB each); afterwards no process of it may live."""
    c = StandaloneCluster(tmp_path_factory.mktemp("cluster")).start()
    try:
        yield c
    finally:
        c.stop()
        left = c.leftovers()
        assert not left, f"cluster processes left behind: {left}"


def check_upsert_table(path: Path, rows: int) -> None:
    """The batch upsert example's table, read by hudi_ds and by hudi-rs, equals its model."""
    want = load_example("spark_batch_upsert").expected(rows)
    columns = want.column_names
    expected = [tuple(r.values()) for r in want.to_pylist()]
    assert_rows(hudi_ds.HudiTable(str(path)).read(columns=columns), expected, columns)
    assert_rows(hudi_rs_table(str(path)), expected, columns)


def test_batch_upsert_installed_environment(cluster: StandaloneCluster, tmp_path: Path) -> None:
    """Executors run an interpreter that imports hudi_ds (PYSPARK_PYTHON = the venv's python)."""
    table = tmp_path / "trips"
    job = submit(
        cluster,
        EXAMPLES / "spark_batch_upsert.py",
        [str(table), "--rows", str(ROWS)],
        conf=INSTALLED,
    )
    out = finish(job)
    assert out["equal"] and out["master"] == cluster.url, out
    assert out["hudi_ds_on_executors"] == [str(REPO / "hudi_ds")], out
    check_upsert_table(table, ROWS)


def test_batch_upsert_py_files(cluster: StandaloneCluster, tmp_path: Path) -> None:
    """``--py-files hudi_ds.zip``: executors import hudi_ds from the shipped zip."""
    zpath = tmp_path / "hudi_ds.zip"
    with zipfile.ZipFile(zpath, "w") as z:
        for f in sorted((REPO / "hudi_ds").rglob("*")):
            if f.is_file() and "__pycache__" not in f.parts:
                z.write(f, f.relative_to(REPO).as_posix())
    table = tmp_path / "trips"
    out = finish(
        submit(
            cluster,
            EXAMPLES / "spark_batch_upsert.py",
            [str(table), "--rows", str(ROWS)],
            py_files=[zpath],
        )
    )
    assert out["equal"], out
    where = out["hudi_ds_on_executors"]
    assert where and all(p.endswith("hudi_ds.zip/hudi_ds") for p in where), where
    check_upsert_table(table, ROWS)


def pack_venv(dest: Path) -> Path:
    """A packed virtual environment: a new venv with hudi_ds and its dependencies, as a tar.

    The venv is made without pip (``python -m venv --without-pip``); its site-packages gets
    copies of what hudi_ds imports on executors (pyarrow, numpy, fastavro) and of hudi_ds
    itself (not an editable install: that would point back at this checkout). The tar is
    relocatable to any directory of a node where the base interpreter the venv was made from
    (``home`` in ``pyvenv.cfg``) exists at the same path: ``bin/python`` is a symlink to it,
    and Python finds ``pyvenv.cfg`` next to the symlink, not next to its target.
    """
    env = dest / "env"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env)], check=True)
    site = Path(sysconfig.get_paths()["purelib"])
    ver = f"python{sys.version_info.major}.{sys.version_info.minor}"
    target = env / "lib" / ver / "site-packages"
    for name in ("pyarrow", "numpy", "numpy.libs", "fastavro"):
        if (site / name).exists():
            shutil.copytree(site / name, target / name, ignore=shutil.ignore_patterns("tests"))
    for name in ("hudi_ds", "pyspark_hudi_py"):
        shutil.copytree(REPO / name, target / name, ignore=shutil.ignore_patterns("__pycache__"))
    tar = dest / "venv.tar"
    with tarfile.open(tar, "w") as t:
        t.add(env, arcname=".")
    shutil.rmtree(env)
    return tar


def test_batch_upsert_packed_venv_archive(cluster: StandaloneCluster, tmp_path: Path) -> None:
    """``--archives venv.tar#env`` with ``spark.pyspark.python=./env/bin/python``."""
    tar = pack_venv(tmp_path)
    table = tmp_path / "trips"
    out = finish(
        submit(
            cluster,
            EXAMPLES / "spark_batch_upsert.py",
            [str(table), "--rows", str(ROWS)],
            archives=[f"{tar}#env"],
            python="./env/bin/python",
        )
    )
    assert out["equal"], out
    where = out["hudi_ds_on_executors"]
    # unpacked in each executor's work directory: <worker dir>/<app>/<executor>/env/...
    assert where and all(
        p.startswith(str(cluster.root)) and p.endswith("/env/lib/python3.11/site-packages/hudi_ds")
        for p in where
    ), where
    check_upsert_table(table, ROWS)
