"""hudi_py on a Spark standalone cluster: master + 2 workers on loopback.

Every job is a ``spark-submit --master spark://...`` driver process; executors are separate JVMs
in the workers' work directories with their own Python workers, which get ``hudi_ds`` only the
way the job ships it:

* an installed environment (the executors' interpreter imports hudi_ds: here the checkout on
  ``spark.executorEnv.PYTHONPATH``, as an installed package would be): the worker-kill job and
  the streaming demo run this way, and the kill job reports where its executors imported
  hudi_ds from (the batch upsert example's own run is shipped the two other ways);
* ``--py-files`` of a zip of ``hudi_ds``;
* ``--archives`` of a packed virtual environment (its site-packages, unpacked in each
  executor's work directory).

Worker loss: a worker and its executor are SIGKILLed while a task is writing files; Spark runs
the task again on the other worker and the table ends exactly once, with the dead attempt's
files gone. The streaming demo through spark-submit with a worker killed after a few
micro-batches ends equal to its model. The cluster's processes are started and stopped by the module fixture, which checks
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
import time
import zipfile
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import hudi_ds
from tests.conftest import assert_rows, hudi_rs_table
from tests.spark.standalone import REPO, StandaloneCluster, finish, kill_job, submit

#: ``make test`` runs these in a pytest process of their own, beside the xdist workers; under
#: xdist with ``--dist loadgroup`` every cluster test would run on one worker, in this order,
#: sharing the one cluster of the session
pytestmark = [
    pytest.mark.spark,
    pytest.mark.cluster,
    pytest.mark.slow,
    pytest.mark.xdist_group("cluster"),
]

EXAMPLES = REPO / "examples"
#: the example's first write: enough rows for every (city, bucket) file group (32) to get
#: several writing tasks in the unclustered upsert
ROWS = 1000
INSTALLED = {"spark.executorEnv.PYTHONPATH": str(REPO)}


def load_example(name: str) -> Any:
    spec = importlib.util.spec_from_file_location(f"examples_{name}", EXAMPLES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StandaloneCluster]:
    """A master and two workers (1 core, 1 GiB each), one for every test of this module (the
    only one that starts a cluster: one per session); afterwards -- whether the tests passed or
    not -- no process of it may live (:meth:`StandaloneCluster.leftovers`)."""
    c = StandaloneCluster(tmp_path_factory.mktemp("cluster")).start()
    try:
        yield c
    finally:
        left = c.stop()
        assert not left, f"cluster processes left behind (killed): {left}"
        assert not c.leftovers(), c.leftovers()


def files_per_file_group(path: Path) -> list[int]:
    """For each completed commit, the most files one file group got in it."""
    from hudi_ds.storage import Storage
    from hudi_ds.timeline.timeline import Timeline

    tl = Timeline.load(Storage(str(path)), 1)
    most = []
    for inst in tl.commits():
        per_group = Counter(
            (s.partition_path, s.file_id)
            for stats in tl.read_commit_metadata(inst).partition_to_write_stats.values()
            for s in stats
        )
        most.append(max(per_group.values()))
    return most


def check_upsert_table(path: Path, rows: int) -> None:
    """The batch upsert example's table, read by hudi_ds and by hudi-rs, equals its model.

    Its insert went through ``cluster_by_bucket``: one file per file group in that commit; its
    upsert did not: several tasks of the cluster wrote log files into the same file group.
    """
    want = load_example("spark_batch_upsert").expected(rows)
    columns = want.column_names
    expected = [tuple(r.values()) for r in want.to_pylist()]
    assert_rows(hudi_ds.HudiTable(str(path)).read(columns=columns), expected, columns)
    assert_rows(hudi_rs_table(str(path)), expected, columns)
    clustered, unclustered = files_per_file_group(path)
    assert clustered == 1 and unclustered > 1, (clustered, unclustered)


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
    # --copies: no symlinks in the archive (Spark unpacks .tar with Hadoop's Java untar); the
    # copied bin/python still needs the base interpreter's libpython at the same path
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", "--copies", str(env)], check=True
    )
    if (env / "lib64").is_symlink():
        (env / "lib64").unlink()
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
        for child in sorted(env.iterdir()):  # no "./" entry: Spark refuses to expand it
            t.add(child, arcname=child.name)
    return tar


def test_batch_upsert_packed_venv_archive(cluster: StandaloneCluster, tmp_path: Path) -> None:
    """``--archives venv.tar#env``: the packed environment's site-packages on the executors.

    ``spark.pyspark.python=./env/bin/python`` -- the usual recipe -- does not run on a
    standalone cluster with pyspark 4.3: Spark unpacks ``.tar``/``.tar.gz`` archives with
    Hadoop's Java untar, which drops the executable bit (``Cannot run program
    "./env/bin/python": error=13, Permission denied``). The nodes' base interpreter (the one the
    venv was made from, which a relocated venv needs anyway) runs instead, with the unpacked
    archive's site-packages first on its path (``spark.executorEnv.PYTHONPATH``, relative to the
    executor's working directory where Spark unpacks it). In client mode the driver's Python
    data source planner runs that interpreter too, on the driver: it gets the same
    site-packages through the driver's ``PYTHONPATH``.
    """
    tar = pack_venv(tmp_path)  # leaves tmp_path/env: the driver's copy
    site = f"lib/python{sys.version_info.major}.{sys.version_info.minor}/site-packages"
    base_python = str(Path(getattr(sys, "_base_executable", sys.executable)).resolve())
    table = tmp_path / "trips"
    out = finish(
        submit(
            cluster,
            EXAMPLES / "spark_batch_upsert.py",
            [str(table), "--rows", str(ROWS)],
            archives=[f"{tar}#env"],
            python=base_python,
            conf={"spark.executorEnv.PYTHONPATH": f"./env/{site}"},
            env={"PYTHONPATH": str(tmp_path / "env" / site)},
        )
    )
    assert out["equal"], out
    where = out["hudi_ds_on_executors"]
    # unpacked in each executor's work directory: <worker dir>/<app>/<executor>/env/...
    assert where and all(
        p.startswith(str(cluster.root)) and p.endswith(f"/env/{site}/hudi_ds") for p in where
    ), where
    check_upsert_table(table, ROWS)


def unreferenced_files(table: Path) -> list[str]:
    """Data files on disk that no completed commit wrote (debris of failed attempts), and
    instants still pending."""
    from hudi_ds.storage import Storage
    from hudi_ds.timeline.timeline import Timeline

    tl = Timeline.load(Storage(str(table)), 1)
    referenced = set()
    for inst in tl.commits():
        for stats in tl.read_commit_metadata(inst).partition_to_write_stats.values():
            referenced.update(s.path for s in stats)
    on_disk = {
        str(p.relative_to(table))
        for p in table.rglob("*")
        if p.is_file() and ".hoodie" not in p.parts and p.name != ".hoodie_partition_metadata"
    }
    pending = [f"pending {i.requested_time}.{i.action}" for i in tl.pending()]
    return sorted(on_disk - referenced) + pending


def wait_for(path: Path, job: subprocess.Popen[str], timeout: float) -> str:
    """The content of ``path`` once the job's task wrote it (fails if the job ends first)."""
    end = time.monotonic() + timeout
    while not path.exists():
        if job.poll() is not None:
            out, err = job.communicate()
            raise AssertionError(f"the job ended before {path.name}:\n{out[-2000:]}\n{err[-6000:]}")
        assert time.monotonic() < end, f"no {path.name} after {timeout}s"
        time.sleep(0.2)
    return path.read_text()


KILL_ROWS = 100_000


def test_worker_killed_during_batch_write(cluster: StandaloneCluster, tmp_path: Path) -> None:
    """SIGKILL the worker (and its executor and Python workers) that runs a write task after
    the task created log files of the instant: Spark runs the task again on the other worker;
    the table holds every row once, and the dead attempt's files are deleted by the commit.

    The job ships no hudi_ds: its executors import it from their installed environment
    (``spark.executorEnv.PYTHONPATH`` = this checkout, as an installed package)."""
    table, signals = tmp_path / "kill", tmp_path / "signals"
    signals.mkdir()
    job = submit(
        cluster,
        Path(__file__).resolve().parent / "cluster_kill_job.py",
        [str(table), str(signals), str(KILL_ROWS)],
        conf=INSTALLED,
    )
    try:
        pid = int(wait_for(signals / "writing", job, 400))
        victim = cluster.worker_of(pid)
        token_files = [p.name for p in table.glob("p*/*") if p.name.startswith(".")]
        killed = cluster.kill_worker(victim)
        cluster.add_worker()
        assert len(killed) >= 3, killed  # worker, executor, Python worker(s)
        out = finish(job)
    finally:
        kill_job(job)
    cluster.wait_workers(2)
    assert len(out["commits"]) == 2, out
    assert out["hudi_ds_on_executors"] == [str(REPO / "hudi_ds")], out
    assert token_files, "the killed attempt had written no log file"
    columns = ["id", "ts", "part", "v"]
    n = 2 * KILL_ROWS
    expected = [(f"k{i:07d}", 2, f"p{i % 2}", i * 10 + 2) for i in range(n)]
    assert_rows(hudi_ds.HudiTable(str(table)).read(columns=columns), expected, columns)
    assert_rows(hudi_rs_table(str(table)), expected, columns)
    assert unreferenced_files(table) == []


def test_streaming_demo_with_a_worker_killed(cluster: StandaloneCluster, tmp_path: Path) -> None:
    """The streaming demo through spark-submit on the cluster, one worker
    (with its executor) SIGKILLed after a few micro-batches; the table equals the model, read
    by hudi_ds, by Spark through hudi_py (in the job) and by hudi-rs; every commit wrote one
    file per file group (the demo's stream goes through ``cluster_by_bucket``)."""
    demo = load_example("demo")
    # 4 micro-batches before the kill, 4 after it
    plan = demo.Plan(out=tmp_path / "demo", batches=8, rows_per_batch=1000, keys=4000)
    log = tmp_path / "demo.log"
    job = submit(
        cluster,
        EXAMPLES / "demo.py",
        [
            "--out",
            str(plan.out),
            "--batches",
            str(plan.batches),
            "--rows-per-batch",
            str(plan.rows_per_batch),
            "--keys",
            str(plan.keys),
        ],
        conf=INSTALLED,
        stdout=log,
    )
    try:
        end = time.monotonic() + 400
        while "batch   3 " not in (log.read_text() if log.exists() else ""):
            assert job.poll() is None, f"the demo ended early:\n{log.read_text()[-3000:]}"
            assert time.monotonic() < end, "no 4th micro-batch after 400 s"
            time.sleep(0.2)
        victim = next(
            w for w in cluster.workers if w.proc.poll() is None and cluster.executors_of(w)
        )
        killed = cluster.kill_worker(victim)
        cluster.add_worker()
        assert len(killed) >= 2, killed  # the worker and its executor
        out = finish(job, timeout=600, stdout=log)
    finally:
        kill_job(job)
    cluster.wait_workers(2)
    assert out["ok"], (out, log.read_text()[-3000:])
    want = demo.expected_state(plan)
    columns = want.column_names
    expected = [tuple(r.values()) for r in want.to_pylist()]
    assert_rows(hudi_ds.HudiTable(str(plan.table)).read(columns=columns), expected, columns)
    assert_rows(hudi_rs_table(str(plan.table)), expected, columns)
    assert unreferenced_files(Path(plan.table)) == []  # plan.table: a URI string
    # the demo clusters each micro-batch by bucket: one file per file group per commit
    assert set(files_per_file_group(plan.table)) == {1}
