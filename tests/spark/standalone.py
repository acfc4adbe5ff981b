"""A Spark standalone cluster on loopback, started from pyspark's own launcher.

``spark-class org.apache.spark.deploy.master.Master`` and two ``...deploy.worker.Worker``
processes (1 core, 1 GiB each, their own work directories under one temporary directory), and
``spark-submit`` of a Python job against it. Drivers are separate processes: the pytest process
already holds the local SparkSession of the other Spark tests, and a process has one
SparkContext.

Every process of the cluster -- master, workers, executors (started by the workers in their work
directories) and the executors' Python workers -- runs with its working directory inside the
cluster's directory, so :meth:`StandaloneCluster.leftovers` finds any of them by its ``cwd``.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyspark

import hudi_ds

SPARK_HOME = Path(pyspark.__file__).resolve().parent
REPO = Path(hudi_ds.__file__).resolve().parents[1]
#: JVM flags of every process of the cluster (daemons, drivers, executors): their jobs are tiny
#: and short, so the C1 compiler only (no C2 compilations burning the 2 cores a test machine
#: has) and the serial collector (no parallel GC threads) make them start and run faster
JVM_OPTS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -XX:-UsePerfData"
#: the Spark settings every job on the cluster gets: loopback, no UI, no event log, UTC, small
#: shuffles, no locality wait (every executor is on this host: waiting 3 s for a "better" one
#: per task set only delays tiny jobs). A killed executor is noticed when its connection drops;
#: the heartbeat timeout (no heartbeat for ``spark.network.timeout``) is the fallback, shorter
#: than the default 120 s but long enough for a starved JVM on a loaded 2-core machine
JOB_CONF = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.eventLog.enabled": "false",
    "spark.driver.host": "127.0.0.1",
    "spark.driver.bindAddress": "127.0.0.1",
    "spark.driver.memory": "512m",
    "spark.executor.memory": "640m",
    "spark.driver.extraJavaOptions": JVM_OPTS,
    "spark.executor.extraJavaOptions": JVM_OPTS,
    "spark.sql.shuffle.partitions": "4",
    "spark.sql.adaptive.enabled": "false",
    "spark.sql.session.timeZone": "UTC",
    "spark.locality.wait": "0s",
    "spark.executor.heartbeatInterval": "3s",
    "spark.network.timeout": "60s",
}
START_TIMEOUT = 120.0


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def children(pid: int) -> list[int]:
    """The direct child processes of ``pid``, whichever of its threads started them (a JVM
    starts processes from other threads than its main one)."""
    out: list[int] = []
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except OSError:
        return out
    for t in tasks:
        try:
            out.extend(int(c) for c in (t / "children").read_text().split())
        except OSError:
            continue
    return out


def descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (children first)."""
    out: list[int] = []
    todo = children(pid)
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(children(p))
    return out


def parent(pid: int) -> int:
    """The parent process id of ``pid`` (0 when it is gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0
    return int(stat.rsplit(")", 1)[1].split()[1])


def alive(pid: int) -> bool:
    """``pid`` exists and is not a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def leftovers(root: Path) -> list[str]:
    """Live processes (``pid cmdline``) whose working directory is ``root`` or inside it: the
    cluster, Connect server and pipeline fixtures start every process in their own directory,
    so this finds any of them still running, whoever its parent is now."""
    top = str(root.resolve())
    found = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit() or int(d.name) == os.getpid():
            continue
        try:
            cwd = os.readlink(d / "cwd")
            cmd = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode()[:200]
        except OSError:
            continue
        if (cwd == top or cwd.startswith(top + os.sep)) and alive(int(d.name)):
            found.append(f"{d.name} {cmd}")
    return found


def stop_group(proc: subprocess.Popen[Any], root: Path, timeout: float = 60.0) -> list[str]:
    """SIGTERM ``proc``'s process group (started with ``start_new_session``), SIGKILL it after
    ``timeout``; then wait up to ``timeout`` for every process under ``root`` (by working
    directory) to end and SIGKILL those still alive. Returns what had to be SIGKILLed there
    (the caller asserts it is empty: a clean stop leaves nothing)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    end = time.monotonic() + timeout
    while leftovers(root) and time.monotonic() < end:
        time.sleep(0.2)
    left = leftovers(root)
    for line in left:
        with contextlib.suppress(ProcessLookupError):
            os.kill(int(line.split()[0]), signal.SIGKILL)
    return left


@dataclass
class Worker:
    """One worker process, its work directory and its log."""

    proc: subprocess.Popen[bytes]
    work_dir: Path
    log: Path
    killed: bool = False


@dataclass
class StandaloneCluster:
    """A master and workers on 127.0.0.1 under ``root``; :meth:`start` then :meth:`stop`."""

    root: Path
    workers_wanted: int = 2
    cores: int = 1
    memory: str = "1g"
    master_port: int = 0
    ui_port: int = 0
    master: subprocess.Popen[bytes] | None = None
    workers: list[Worker] = field(default_factory=list)
    started: list[int] = field(default_factory=list)

    @property
    def url(self) -> str:
        """The master URL for ``--master``."""
        return f"spark://127.0.0.1:{self.master_port}"

    def env(self) -> dict[str, str]:
        """The environment of the cluster's daemons (and so of their executors)."""
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYSPARK_PYTHON")}
        # no PYTHONPATH: executors import hudi_ds only the ways a job ships it
        return {
            **env,
            "SPARK_HOME": str(SPARK_HOME),
            "SPARK_LOCAL_IP": "127.0.0.1",
            "SPARK_LOCAL_DIRS": str(self.root / "local"),
            "SPARK_LOG_DIR": str(self.root / "logs"),
            "SPARK_DAEMON_MEMORY": "256m",
            # a worker that stops heartbeating is dead after 20 s (default 60 s); a killed one
            # is removed at once, when its connection to the master drops
            "SPARK_DAEMON_JAVA_OPTS": f"{JVM_OPTS} -Dspark.worker.timeout=20",
            "SPARK_NO_DAEMONIZE": "1",
        }

    def _spawn(self, args: Sequence[str], log: Path, cwd: Path) -> subprocess.Popen[bytes]:
        cwd.mkdir(parents=True, exist_ok=True)
        with open(log, "ab") as out:
            proc = subprocess.Popen(
                [str(SPARK_HOME / "bin" / "spark-class"), *args],
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                cwd=cwd,
                env=self.env(),
                start_new_session=True,
            )
        self.started.append(proc.pid)
        return proc

    def start(self) -> StandaloneCluster:
        """Start the master and the workers; return once every worker is registered ALIVE."""
        (self.root / "logs").mkdir(parents=True, exist_ok=True)
        (self.root / "local").mkdir(parents=True, exist_ok=True)
        self.master_port, self.ui_port = free_port(), free_port()
        self.master = self._spawn(
            [
                "org.apache.spark.deploy.master.Master",
                "--host",
                "127.0.0.1",
                "--port",
                str(self.master_port),
                "--webui-port",
                str(self.ui_port),
            ],
            self.root / "logs" / "master.log",
            self.root / "master",
        )
        try:
            for _ in range(self.workers_wanted):
                self.add_worker()
            self.wait_workers(self.workers_wanted)
        except BaseException:
            self.stop()
            raise
        return self

    def add_worker(self) -> Worker:
        """Start one more worker (its own work directory and log)."""
        n = len(self.workers)
        work = self.root / f"worker{n}"
        log = self.root / "logs" / f"worker{n}.log"
        proc = self._spawn(
            [
                "org.apache.spark.deploy.worker.Worker",
                "--host",
                "127.0.0.1",
                "--port",
                str(free_port()),
                "--webui-port",
                str(free_port()),
                "--cores",
                str(self.cores),
                "--memory",
                self.memory,
                "--work-dir",
                str(work),
                self.url,
            ],
            log,
            work,
        )
        w = Worker(proc, work, log)
        self.workers.append(w)
        return w

    def state(self) -> dict[str, Any]:
        """The master's JSON status page (``/json``)."""
        with urllib.request.urlopen(f"http://127.0.0.1:{self.ui_port}/json", timeout=5) as r:
            return dict(json.load(r))

    def alive_workers(self) -> int:
        """Workers the master sees ALIVE (0 while its UI is not up yet, or answers a starting
        page that is not its JSON status yet)."""
        try:
            return sum(w["state"] == "ALIVE" for w in self.state()["workers"])
        except (OSError, ValueError, KeyError):
            return 0

    def wait_workers(self, n: int, timeout: float = START_TIMEOUT) -> None:
        """Wait until ``n`` workers are ALIVE at the master."""
        end = time.monotonic() + timeout
        while self.alive_workers() < n:
            for p in [self.master, *(w.proc for w in self.workers if not w.killed)]:
                if p is not None and p.poll() is not None:
                    raise RuntimeError(f"a cluster process exited early:\n{self.logs()}")
            if time.monotonic() > end:
                raise TimeoutError(f"{n} workers not ALIVE after {timeout}s:\n{self.logs()}")
            time.sleep(0.5)

    def logs(self, tail: int = 3000) -> str:
        """The end of every daemon log (for failure messages)."""
        return "\n".join(
            f"== {p.name}\n{p.read_text(errors='replace')[-tail:]}"
            for p in sorted((self.root / "logs").glob("*.log"))
        )

    def executors_of(self, worker: Worker) -> list[int]:
        """The executor JVMs a worker runs (its child processes)."""
        return children(worker.proc.pid)

    def worker_of(self, pid: int) -> Worker:
        """The worker whose process tree holds ``pid`` (e.g. a Python worker of a task)."""
        p = pid
        while p > 1:
            for w in self.workers:
                if w.proc.pid == p:
                    return w
            p = parent(p)
        raise LookupError(f"process {pid} belongs to no worker of the cluster")

    def kill_worker(self, worker: Worker) -> list[int]:
        """SIGKILL a worker and everything under it (executor JVM, Python workers), as when
        the machine dies. Returns the killed process ids."""
        worker.killed = True
        pids = [worker.proc.pid, *descendants(worker.proc.pid)]
        for p in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(p, signal.SIGKILL)
        worker.proc.wait(timeout=30)
        end = time.monotonic() + 30
        while any(alive(p) for p in pids) and time.monotonic() < end:
            time.sleep(0.1)
        return pids

    def leftovers(self) -> list[str]:
        """Live processes whose working directory is inside the cluster's directory."""
        return leftovers(self.root)

    def stop(self, timeout: float = 30.0) -> list[str]:
        """Stop the workers (they stop their executors), then the master; SIGKILL whatever is
        still running after ``timeout``, and then any process left in the cluster's directory
        (a driver, an executor, a Python worker). Returns those last ones: the caller asserts
        there were none (a clean stop leaves nothing)."""
        procs = [w.proc for w in self.workers] + ([self.master] if self.master else [])
        for p in procs:
            if p.poll() is None:
                p.terminate()
        end = time.monotonic() + timeout
        for p in procs:
            try:
                p.wait(timeout=max(0.1, end - time.monotonic()))
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        end = time.monotonic() + timeout
        while self.leftovers() and time.monotonic() < end:
            time.sleep(0.2)
        left = self.leftovers()
        for line in left:
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(line.split()[0]), signal.SIGKILL)
        return left


def submit(
    cluster: StandaloneCluster | str,
    script: Path | str,
    args: Sequence[str] = (),
    *,
    conf: Mapping[str, str] | None = None,
    py_files: Sequence[Path] = (),
    archives: Sequence[str] = (),
    python: str | None = None,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    stdout: Path | None = None,
) -> subprocess.Popen[str]:
    """Start ``spark-submit --master spark://... script args`` (client mode); the caller waits.

    ``cluster``: the cluster, or any master URL (``local[2]``).

    ``python`` is the executors' Python (``spark.pyspark.python``; default this interpreter);
    the driver always runs this interpreter with this checkout first on its path. ``stdout``:
    a file for the job's output (to follow it while it runs) instead of a pipe.
    """
    settings = {**JOB_CONF, **(conf or {})}
    settings.setdefault("spark.pyspark.python", python or sys.executable)
    settings.setdefault("spark.pyspark.driver.python", sys.executable)
    master = cluster if isinstance(cluster, str) else cluster.url
    cmd = [str(SPARK_HOME / "bin" / "spark-submit"), "--master", master]
    for k, v in settings.items():
        cmd += ["--conf", f"{k}={v}"]
    if py_files:
        cmd += ["--py-files", ",".join(map(str, py_files))]
    if archives:
        cmd += ["--archives", ",".join(archives)]
    cmd += [str(script), *args]
    run_env = {
        **os.environ,
        "SPARK_HOME": str(SPARK_HOME),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
        **(env or {}),
    }
    run_env.pop("PYSPARK_PYTHON", None)
    run_env.pop("PYSPARK_DRIVER_PYTHON", None)
    # to files, not pipes, when the caller follows the output: a pipe nobody reads fills up
    # with Spark's log and blocks the driver
    out = open(stdout, "w") if stdout else None  # noqa: SIM115 (the child holds them)
    err = open(f"{stdout}.err", "w") if stdout else None  # noqa: SIM115
    proc = subprocess.Popen(
        cmd,
        stdout=out or subprocess.PIPE,
        stderr=err or subprocess.PIPE,
        text=True,
        env=run_env,
        # not the checkout: the driver creates spark-warehouse/ in its working directory
        cwd=cwd or (Path(tempfile.gettempdir()) if isinstance(cluster, str) else cluster.root),
        start_new_session=True,
    )
    for f in (out, err):
        if f is not None:
            f.close()
    return proc


def kill_job(proc: subprocess.Popen[str]) -> None:
    """SIGKILL a submitted job's process group (driver JVM, its Python) if it still runs."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def finish(
    proc: subprocess.Popen[str], timeout: float = 300.0, stdout: Path | None = None
) -> dict[str, Any]:
    """Wait for a submitted job; it must exit 0. Returns the JSON object of the last line of
    its output that starts with ``{`` (the demo prints how to read its table after it) (the
    pipe, or the ``stdout`` file it was started with, ``stdout.err`` for its standard
    error)."""
    try:
        out, err = proc.communicate(timeout=timeout)
        if stdout is not None:
            out = stdout.read_text()
            err = Path(f"{stdout}.err").read_text()
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        if stdout is not None:
            out, err = stdout.read_text(), Path(f"{stdout}.err").read_text()
        raise AssertionError(
            f"job timed out after {timeout}s\n{out[-2000:]}\n{err[-5000:]}"
        ) from None
    if proc.returncode != 0:
        # the driver's Python traceback, then the end of Spark's log
        i = err.rfind("Traceback (most recent call last)")
        tb = err[i : i + 6000] if i >= 0 else ""
        raise AssertionError(f"job failed ({proc.returncode})\n{out[-3000:]}\n{tb}\n{err[-3000:]}")
    objects = [ln for ln in out.splitlines() if ln.startswith("{")]
    assert objects, f"the job printed no JSON line\n{out[-3000:]}"
    return dict(json.loads(objects[-1]))
