"""Suite-wide settings and shared checks.

Hypothesis profiles (``HYPOTHESIS_PROFILE``, default ``repro``):

* ``repro`` -- derandomized: the same examples every run, no example database, so the suite
  (``make test``) is reproducible;
* ``explore`` -- fresh random examples on every run, many of them, failures saved to the
  example database and printed with a reproduction blob (``make test-explore`` runs the
  hypothesis tests this way for a fixed time, see docs/testing.md).

``HUDI_DS_HYPOTHESIS=explore`` (the older switch) selects ``explore`` too.
"""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
import time
import traceback
import uuid
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import hudi
import pyarrow as pa
import pyarrow.fs as pafs
import pytest
from hypothesis import HealthCheck, settings

import hudi_ds
from hudi_ds.errors import StorageError
from hudi_ds.storage import Storage
from tests.azurite_server import AzuriteServer, ensure_azurite
from tests.fixtures import (
    MISSING_REASON,
    ci_missing_message,
    fixtures_present,
    missing_shared,
    on_ci,
)
from tests.moto_server import MotoServer

#: the bucket the session's S3 server holds the test tables in
S3_BUCKET = "hudi-test"
#: the container of the session's Azure server
AZ_CONTAINER = "hudi-test"

settings.register_profile("repro", derandomize=True, database=None, deadline=None)
settings.register_profile(
    "explore",
    derandomize=False,
    deadline=None,
    max_examples=int(os.environ.get("HYPOTHESIS_MAX_EXAMPLES", "2000")),
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
_profile = os.environ.get("HYPOTHESIS_PROFILE") or (
    "explore" if os.environ.get("HUDI_DS_HYPOTHESIS") == "explore" else "repro"
)
settings.load_profile(_profile)


def table_options(
    name: str,
    *,
    partition: str | None = None,
    precombine: str | None = "ts",
    table_type: str | None = None,
    buckets: int | None = 2,
) -> dict[str, str]:
    """Write options of a test table keyed by ``id``.

    ``partition`` (the partition path field), ``precombine`` (the ordering field),
    ``table_type`` and ``buckets`` (the bucket index's bucket count) are left out when ``None``.
    Tests add the options they vary: ``{**table_options("t"), "hoodie.clean.automatic": "false"}``.
    """
    options = {"hoodie.table.name": name, "hoodie.datasource.write.recordkey.field": "id"}
    if partition is not None:
        options["hoodie.datasource.write.partitionpath.field"] = partition
    if precombine is not None:
        options["hoodie.datasource.write.precombine.field"] = precombine
    if table_type is not None:
        options["hoodie.datasource.write.table.type"] = table_type
    if buckets is not None:
        options["hoodie.bucket.index.num.buckets"] = str(buckets)
    return options


#: optimistic concurrency control with the file-system lock (Hudi's
#: ``FileSystemBasedLockProvider``); tests add their lock wait and retries
OCC_OPTIONS = {
    "hoodie.write.concurrency.mode": "optimistic_concurrency_control",
    "hoodie.write.lock.provider": (
        "org.apache.hudi.client.transaction.lock.FileSystemBasedLockProvider"
    ),
}


def run_forked(fn: Callable[[], Any], crash_at: str | None = None, timeout: float = 300.0) -> int:
    """Run ``fn`` in a forked child of this process; its exit code (0: returned, 1: raised,
    137: it died at ``crash_at``, a ``HUDI_DS_CRASH_AT`` spec, as a SIGKILL would).

    The child is a restarted writer without the cost of a new interpreter (importing pyarrow and
    hudi_ds takes about a second per process): it shares nothing with this process after the
    fork -- what it writes reaches this process through the table's files only, as another
    process's would. A child still running after ``timeout`` seconds is killed (exit -9)."""
    from hudi_ds import faults

    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        code = 0
        try:
            os.environ.pop(faults.ENV, None)
            if crash_at:
                os.environ[faults.ENV] = crash_at
            faults._hits.clear()
            fn()
        except BaseException:
            traceback.print_exc()
            code = 1
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)
    deadline = time.monotonic() + timeout
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        if time.monotonic() > deadline:
            os.kill(pid, 9)
            _, status = os.waitpid(pid, 0)
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.005)


def lose_response_of_completed_file(monkeypatch: pytest.MonkeyPatch, instant: str) -> Any:
    """The data table's completed file of ``instant`` is written, then the store reports an
    error for it (a lost response of a put that landed); returns the real ``write_atomic``."""
    real = Storage.write_atomic

    def lossy(self: Storage, rel: str, data: bytes, crash_point_name: str | None = None) -> Any:
        real(self, rel, data, crash_point_name)
        name = rel.rsplit("/", 1)[-1]  # C.<action> (layout 1) or C_<completion>.<action>
        completed = name.startswith((f"{instant}.", f"{instant}_")) and name.count(".") == 1
        if completed and "/metadata/" not in rel:
            raise StorageError(f"put {rel} failed: injected")

    monkeypatch.setattr(Storage, "write_atomic", lossy)
    return real


def spawn_python(code: str, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    """``python -c code args`` in a new process (text pipes), this checkout's hudi_ds first;
    ``env`` adds to the environment (e.g. ``HUDI_DS_STALL_AT``)."""
    repo = str(Path(hudi_ds.__file__).resolve().parents[1])
    env = {
        **os.environ,
        **(env or {}),
        "PYTHONPATH": repo + os.pathsep + os.environ.get("PYTHONPATH", ""),
    }
    return subprocess.Popen(
        [sys.executable, "-c", code, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def wait_stopped(proc: subprocess.Popen[str], timeout: float = 60.0) -> None:
    """Wait until ``proc`` stopped itself at its ``HUDI_DS_STALL_AT`` point (SIGSTOP: state
    ``T`` in ``/proc/<pid>/stat``); fails if it exits or does not stop in ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            err = proc.communicate()[1]
            raise AssertionError(f"exited {proc.returncode} before its stall point: {err[-3000:]}")
        try:
            stat = Path(f"/proc/{proc.pid}/stat").read_text()
        except FileNotFoundError:
            stat = ""
        if stat and stat.rsplit(")", 1)[1].split()[0] == "T":
            return
        time.sleep(0.01)
    proc.kill()
    raise AssertionError(f"process {proc.pid} did not reach its stall point in {timeout} s")


def finish_process(proc: subprocess.Popen[str], timeout: float) -> dict:
    """Wait for ``proc``; it must exit 0. Returns the JSON object of its last output line."""
    out, err = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, err[-3000:]
    return json.loads(out.strip().splitlines()[-1])


# A writer process for the concurrency tests: for ``seconds`` it upserts batches of
# ``batch_keys`` random keys ``k<n>`` (n < ``key_space``) with ``ts = time.time_ns()``, partition
# ``p<n % partitions>``, ``who = seed`` and ``v = w<seed>-<ts>-k<n>``, retries a batch whose
# commit conflicts with a fresh ``ts``, logs each batch whose write returned (JSON lines
# ``{"keys", "ts"}``) and pauses up to ``pace`` seconds between batches. Prints
# ``{"conflicts", "batches"}``. With an ``errors`` log, any other exception of a write is
# logged there (JSON lines ``{"type", "message", "trace"}``, the type with its module) and the batch
# given up (not logged as written), after a pause of up to ``pace`` (or 0.05) seconds.
WRITER = r"""
import json, random, sys, time, traceback
import pyarrow as pa
import hudi_ds
from hudi_ds.errors import CommitConflictError
path, opts, seconds, seed, log = (sys.argv[1], json.loads(sys.argv[2]), float(sys.argv[3]),
    int(sys.argv[4]), sys.argv[5])
key_space, batch_keys, partitions, pace = (int(sys.argv[6]), int(sys.argv[7]), int(sys.argv[8]),
    float(sys.argv[9]))
errors = open(sys.argv[10], "w") if len(sys.argv) > 10 and sys.argv[10] else None
rng = random.Random(seed)
end = time.time() + seconds
conflicts = 0
with open(log, "w") as out:
    while time.time() < end:
        keys = rng.sample(range(key_space), batch_keys)
        while True:
            ts = time.time_ns()
            t = pa.table({
                "id": [f"k{k}" for k in keys], "ts": [ts] * len(keys),
                "p": [f"p{k % partitions}" for k in keys], "who": [seed] * len(keys),
                "v": [f"w{seed}-{ts}-k{k}" for k in keys],
            })
            try:
                hudi_ds.write(path, t, opts)
            except CommitConflictError:
                conflicts += 1
                continue
            except Exception as e:
                if errors is None:
                    raise
                kind = f"{type(e).__module__}.{type(e).__qualname__}"
                trace = traceback.format_exc()[-2000:]
                errors.write(json.dumps({"type": kind, "message": str(e), "trace": trace}) + "\n")
                errors.flush()
                time.sleep(rng.uniform(0, pace or 0.05))
                break
            out.write(json.dumps({"keys": keys, "ts": ts}) + "\n")
            out.flush()
            break
        if pace:
            time.sleep(rng.uniform(0.5 * pace, pace))
    batches = sum(1 for _ in open(log))
print(json.dumps({"conflicts": conflicts, "batches": batches}))
"""


def spawn_writer(
    path: str,
    options: Mapping[str, str],
    seconds: float,
    seed: int,
    log: Path,
    *,
    key_space: int,
    batch_keys: int,
    partitions: int,
    pace: float = 0.0,
    errors: Path | None = None,
) -> subprocess.Popen[str]:
    """Start a :data:`WRITER` process upserting into ``path`` for ``seconds`` (``errors``: the
    log of its failed writes, which it then survives)."""
    return spawn_python(
        WRITER,
        path,
        json.dumps(dict(options)),
        str(seconds),
        str(seed),
        str(log),
        str(key_space),
        str(batch_keys),
        str(partitions),
        str(pace),
        str(errors) if errors is not None else "",
    )


def hudi_rs_table(
    path: str, options: dict[str, str] | None = None, storage_options: dict[str, str] | None = None
) -> pa.Table:
    """The snapshot of the table at ``path`` as hudi-rs (the ``hudi`` package) reads it.

    ``options``: hudi options, e.g. ``{"hoodie.metadata.enable": "true"}`` to list files
    through the metadata table (hudi-rs uses it on table versions 8 and above only).
    ``storage_options``: object store keys (``aws_endpoint_url``, ...).
    """
    builder = hudi.HudiTableBuilder.from_base_uri(path)
    if options:
        builder = builder.with_hudi_options(options)
    if storage_options:
        builder = builder.with_storage_options(storage_options)
    batches = builder.build().read(hudi.HudiReadOptions())
    if not batches:
        return pa.table({})
    return pa.Table.from_batches(batches)


@pytest.fixture(scope="session")
def moto_s3() -> Iterator[MotoServer]:
    """One real local S3 server (moto in server mode on a free loopback port) for the session,
    with the bucket :data:`S3_BUCKET`; stopped at the end, and checked to be gone."""
    server = MotoServer().start()
    try:
        server.create_bucket(S3_BUCKET)
        yield server
    finally:
        proc = server.proc
        server.stop()
        assert proc is None or proc.poll() is not None, "moto server left running"


@pytest.fixture
def s3_uri(moto_s3: MotoServer) -> str:
    """A fresh table URI on the session's S3 server (a new key prefix per test)."""
    return f"s3://{S3_BUCKET}/t-{uuid.uuid4().hex[:12]}"


@pytest.fixture(scope="session")
def azurite() -> Iterator[AzuriteServer]:
    """One real local Azure Blob server (Azurite, installed with npm on first use) for the
    session, with the container :data:`AZ_CONTAINER`; skipped with the reason when npm is
    absent; stopped at the end and checked to be gone."""
    exe, why = ensure_azurite()
    if exe is None:
        pytest.skip(why)
    server = AzuriteServer(exe).start()
    try:
        server.create_container(AZ_CONTAINER)
        yield server
    finally:
        proc = server.proc
        server.stop()
        assert proc is None or proc.poll() is not None, "azurite left running"


@pytest.fixture
def az_uri(azurite: AzuriteServer) -> str:
    """A fresh table URI on the session's Azure server."""
    return f"az://{AZ_CONTAINER}/t-{uuid.uuid4().hex[:12]}"


def object_store_table(request: pytest.FixtureRequest, store: str) -> tuple[str, dict[str, str]]:
    """``(uri, storage_options)`` of a fresh table on ``store``: ``"s3"`` (the moto server) or
    ``"azure"`` (Azurite), for tests parametrized over both."""
    if store == "s3":
        return request.getfixturevalue("s3_uri"), request.getfixturevalue(
            "moto_s3"
        ).storage_options()
    return request.getfixturevalue("az_uri"), request.getfixturevalue("azurite").storage_options()


def table_rows(table: pa.Table, columns: Sequence[str]) -> list[tuple]:
    """The rows of ``table`` as tuples of ``columns`` (sorted; every value compared)."""
    if table.num_rows == 0:
        return []
    missing = [c for c in columns if c not in table.column_names]
    assert not missing, f"columns {missing} missing from {table.column_names}"
    cols = [table.column(c).to_pylist() for c in columns]
    return sorted(zip(*cols, strict=True), key=repr)


def assert_rows(
    table: pa.Table,
    expected: Sequence[tuple],
    columns: Sequence[str],
    key: Sequence[str] | None = None,
) -> None:
    """``table`` holds exactly the rows ``expected`` (tuples of ``columns``).

    Checks first that no key (``key`` columns, default the first column) appears twice, so a
    duplicated record cannot hide behind a dict or a count, then compares every value of
    every row (sorted, so row order does not matter).
    """
    key = list(key or columns[:1])
    rows = table_rows(table, columns)
    idx = [list(columns).index(k) for k in key]
    keys = Counter(tuple(r[i] for i in idx) for r in rows)
    dups = sorted((k for k, c in keys.items() if c > 1), key=repr)
    assert not dups, f"duplicate keys {dups[:10]} ({len(dups)} in all)"
    want = sorted((tuple(r) for r in expected), key=repr)
    if rows != want:
        have, need = set(rows), set(want)
        raise AssertionError(
            f"rows differ: {len(rows)} read, {len(want)} expected; "
            f"unexpected {sorted(have - need, key=repr)[:10]}, "
            f"missing {sorted(need - have, key=repr)[:10]}"
        )


class FullDisk(pafs.FileSystemHandler):
    """A local filesystem whose writes fail with ENOSPC once ``fail(path)`` is true.

    ``at_open``: the file cannot be created; otherwise it is created and writing it fails.
    """

    def __init__(self, fail: Any, at_open: bool) -> None:
        self.fs = pafs.LocalFileSystem()
        self.fail = fail
        self.at_open = at_open
        self.failed: list[str] = []

    def __eq__(self, other: object) -> bool:
        return self is other

    def __ne__(self, other: object) -> bool:
        return self is not other

    def get_type_name(self) -> str:
        return "full-disk"

    def normalize_path(self, path: str) -> str:
        return self.fs.normalize_path(path)

    def get_file_info(self, paths: Any) -> Any:
        return self.fs.get_file_info(paths)

    def get_file_info_selector(self, selector: Any) -> Any:
        return self.fs.get_file_info(selector)

    def create_dir(self, path: str, recursive: bool) -> None:
        self.fs.create_dir(path, recursive=recursive)

    def delete_dir(self, path: str) -> None:
        self.fs.delete_dir(path)

    def delete_dir_contents(self, path: str, missing_dir_ok: bool = False) -> None:
        self.fs.delete_dir_contents(path, missing_dir_ok=missing_dir_ok)

    def delete_root_dir_contents(self) -> None:
        raise NotImplementedError

    def delete_file(self, path: str) -> None:
        self.fs.delete_file(path)

    def move(self, src: str, dest: str) -> None:
        self.fs.move(src, dest)

    def copy_file(self, src: str, dest: str) -> None:
        self.fs.copy_file(src, dest)

    def open_input_stream(self, path: str) -> Any:
        return self.fs.open_input_stream(path)

    def open_input_file(self, path: str) -> Any:
        return self.fs.open_input_file(path)

    def open_append_stream(self, path: str, metadata: Any) -> Any:
        return self.fs.open_append_stream(path, metadata=metadata)

    def open_output_stream(self, path: str, metadata: Any) -> Any:
        if not (self.fail is not None and self.fail(path)):
            return self.fs.open_output_stream(path, metadata=metadata)
        self.failed.append(path)
        if self.at_open:
            raise OSError(errno.ENOSPC, "No space left on device", path)
        inner = self.fs.open_output_stream(path, metadata=metadata)

        class Full:
            closed = False

            def write(self, data: Any) -> int:
                inner.write(memoryview(data)[:7])  # a torn prefix reaches the disk
                raise OSError(errno.ENOSPC, "No space left on device")

            def close(self) -> None:
                self.closed = True
                inner.close()

            def flush(self) -> None:
                pass

        return pa.PythonFile(Full(), mode="w")


def pytest_configure(config: pytest.Config) -> None:
    """Under CI (``CI=true``) the run fails at once when the shared fixtures are missing,
    naming the paths looked for; a local run skips the tests that need them instead."""
    if on_ci():
        missing = missing_shared()
        if missing:
            raise pytest.UsageError(ci_missing_message(missing))


def _is_hypothesis_test(item: object) -> bool:
    obj = getattr(item, "obj", None)
    if getattr(obj, "is_hypothesis_test", False):
        return True
    cls = getattr(item, "cls", None)
    return cls is not None and any(
        c.__module__.startswith("hypothesis.stateful") for c in cls.__mro__
    )


def pytest_collection_modifyitems(config: object, items: list) -> None:
    """``HUDI_DS_HYPOTHESIS_ONLY=1`` keeps only the property-based tests (``make test-explore``).

    On an xdist worker the ``slow`` tests go first (see below).

    Without the fixture tables, a test parametrized over them has an empty parameter set: it is
    skipped with the reason naming the path looked at (``tests.fixtures.MISSING_REASON``).
    """
    if not fixtures_present():
        missing = pytest.mark.skip(reason=MISSING_REASON)
        for item in items:
            skip = item.get_closest_marker("skip")
            if skip is not None and str(skip.kwargs.get("reason", "")).startswith(
                "got empty parameter set"
            ):
                item.add_marker(missing, append=False)
    if os.environ.get("HUDI_DS_STRESS") != "1":
        soak = pytest.mark.skip(
            reason="a soak, or a matrix case make test leaves out: make test-stress (HUDI_DS_STRESS=1)"
        )
        for item in items:
            if item.get_closest_marker("stress") is not None:
                item.add_marker(soak)
    if hasattr(config, "workerinput"):
        # an xdist worker (make test): the tests marked slow first, in their order, so that the
        # two workers end together on short tests (longest first), not one on a 2-minute test
        # while the other idles; every worker collects the same order, as xdist requires
        items.sort(key=lambda item: item.get_closest_marker("slow") is None)
    if os.environ.get("HUDI_DS_HYPOTHESIS_ONLY") != "1":
        return
    keep = [i for i in items if _is_hypothesis_test(i)]
    dropped = [i for i in items if not _is_hypothesis_test(i)]
    items[:] = keep
    hook = getattr(config, "hook", None)
    if dropped and hook is not None:
        hook.pytest_deselected(items=dropped)


#: test files whose tests share one server per session (the Spark standalone cluster, the Spark
#: Connect server): their tests carry ``xdist_group("cluster")``
CLUSTER_GROUP_FILES = ("tests/spark/test_cluster.py", "tests/spark/test_cluster_connect.py")


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: Any, log: Any) -> Any:
    """``--dist loadgroup`` (``make test``): the tests of :data:`CLUSTER_GROUP_FILES` form one
    work unit, sent to one worker and run there in order (one cluster, one Connect server at a
    time, set up once); every other test is a unit of its own. Being the largest unit it is
    handed out first (xdist's ``--loadscope-reorder``), so it starts at once on one worker while
    the other works through the rest.

    pytest-xdist's own loadgroup groups by the ``@group`` suffix it appends to the node ids of
    ``xdist_group`` tests on the workers; with pytest 9 that suffix is lost (the node id is no
    longer ``item._nodeid``) and the group's tests are spread over both workers. This
    scheduler groups by file on the controller, which needs no worker-side renaming, and still
    honours a ``@group`` suffix when xdist adds one.
    """
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadGroupScheduling

    class ClusterGroupScheduling(LoadGroupScheduling):
        def _split_scope(self, nodeid: str) -> str:
            scope = str(super()._split_scope(nodeid))
            if scope == nodeid and nodeid.split("::", 1)[0] in CLUSTER_GROUP_FILES:
                return "cluster"
            return scope

    return ClusterGroupScheduling(config, log)


def complete_pending_compactions(
    uri: str, storage_options: Mapping[str, Any] | None = None
) -> None:
    """Run the compactions a table has pending (a failed compaction whose rollback also failed
    stays pending, as in Hudi, and is run again later). hudi-rs 0.5.0 does not read the log
    files of a pending compaction's slice (a known gap of that reader, see
    tests/services/test_race.py): tests complete them before comparing hudi-rs's rows."""
    from hudi_ds.services import compaction
    from hudi_ds.services.base import ServiceContext
    from hudi_ds.storage import Storage

    compaction.run_compaction(ServiceContext.open(Storage(uri, storage_options=storage_options)))
