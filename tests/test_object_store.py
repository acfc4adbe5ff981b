"""Object stores: storage_options, the Storage primitives and Hudi tables on a real local S3
server (moto in server mode, the session's ``moto_s3`` fixture), read back by hudi_ds and by
hudi-rs with the same storage options."""

from __future__ import annotations

import itertools
import pickle
import socket
import threading
from functools import partial
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest

import hudi_ds
from hudi_ds.errors import ConfigError, StorageError
from hudi_ds.services import ServiceContext, clean, compaction, rollback
from hudi_ds.storage import ObjectStorage, Storage, open_storage
from tests.builders import options, rows
from tests.conftest import (
    assert_rows,
    complete_pending_compactions,
    hudi_rs_table,
    object_store_table,
)
from tests.fault_proxy import FaultProxy
from tests.moto_server import MotoServer, free_port

COLUMNS = ["id", "p", "ts", "v"]


def _storage(moto_s3: MotoServer, uri: str) -> Storage:
    return Storage(uri, storage_options=moto_s3.storage_options())


# -- storage_options: chosen by URI, validated, pickled ------------------------------------------
def test_object_store_uris_choose_object_storage_and_local_paths_keep_pyarrow(
    tmp_path: Path,
) -> None:
    opts = {"aws_region": "us-east-1", "aws_skip_signature": "true"}
    assert isinstance(Storage("s3://bucket/t", storage_options=opts), ObjectStorage)
    assert isinstance(Storage("s3a://bucket/t", storage_options=opts), ObjectStorage)
    local = Storage(str(tmp_path))
    assert type(local) is Storage and local.is_local
    assert isinstance(local.fs, pafs.LocalFileSystem)


def test_unknown_or_bad_storage_options_are_refused_naming_the_key(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="'aws_acces_key_id'"):
        Storage("s3://bucket/t", storage_options={"aws_acces_key_id": "k"})
    with pytest.raises(ConfigError, match="'azure_storage_account_name'"):
        Storage("s3://bucket/t", storage_options={"azure_storage_account_name": "a"})
    with pytest.raises(ConfigError, match="'aws_allow_http' must be true or false, got 'maybe'"):
        Storage("s3://bucket/t", storage_options={"aws_allow_http": "maybe"})
    with pytest.raises(ConfigError, match="'max_retries'"):
        Storage("s3://bucket/t", storage_options={"max_retries": "-1"})
    with pytest.raises(ConfigError, match="given with a Storage"):
        open_storage(Storage(str(tmp_path)), {"aws_region": "us-east-1"})
    # the public entry points validate them before anything is written
    with pytest.raises(ConfigError, match="'aws_bogus'"):
        hudi_ds.write("s3://bucket/t", pa.table({"id": [1]}), storage_options={"aws_bogus": "x"})
    with pytest.raises(ConfigError, match="'aws_bogus'"):
        hudi_ds.read("s3://bucket/t", storage_options={"aws_bogus": "x"})
    with pytest.warns(UserWarning, match="ignored: .* is a local path"):
        Storage(str(tmp_path), storage_options={"aws_region": "us-east-1"})


def test_a_misspelt_or_repeated_storage_option_is_named_with_a_hint() -> None:
    with pytest.raises(ConfigError, match="'aws_endpont' .*did you mean 'aws_endpoint'"):
        Storage("s3://bucket/t", storage_options={"aws_endpont": "http://x"})
    with pytest.raises(ConfigError, match="did you mean 'azure_storage_account_name'"):
        Storage("az://c/t", storage_options={"azure_storage_acount_name": "a"})
    # object_store's aliases of one setting: both keys named, not its "Duplicate key"
    for so in (
        {"aws_endpoint": "http://x", "aws_endpoint_url": "http://y"},
        {"region": "eu-west-1", "aws_region": "us-east-1"},
    ):
        with pytest.raises(ConfigError) as e:
            Storage("s3://bucket/t", storage_options=so)
        assert str(e.value) == (
            f"storage options {list(so)} for s3://bucket/t name the same setting "
            "(object_store takes them as aliases of one another): give only one of them"
        )
    with pytest.raises(ConfigError, match="'aws_region' is given twice"):
        Storage("s3://bucket/t", storage_options={"AWS_REGION": "x", "aws_region": "y"})


def test_storage_pickles_with_its_options_and_its_filesystem(tmp_path: Path) -> None:
    opts = {"AWS_REGION": "eu-west-1", "aws_endpoint_url": "http://127.0.0.1:1", "max_retries": 0}
    s = Storage("s3://bucket/base", storage_options=opts)
    back = pickle.loads(pickle.dumps(s))
    assert isinstance(back, ObjectStorage)
    assert back.storage_options == {
        "aws_region": "eu-west-1",
        "aws_endpoint_url": "http://127.0.0.1:1",
        "max_retries": "0",
    }
    sub = pickle.loads(pickle.dumps(s.sub(".hoodie/metadata")))
    assert sub.uri("files") == "s3://bucket/base/.hoodie/metadata/files"
    assert sub.storage_options == back.storage_options
    # a Storage on an explicit filesystem stays on it (it used to become a local Storage)
    sub_fs = pafs.SubTreeFileSystem(str(tmp_path), pafs.LocalFileSystem())
    explicit = pickle.loads(pickle.dumps(Storage("t", sub_fs)))
    assert isinstance(explicit.fs, pafs.SubTreeFileSystem) and explicit.root == "t"


# -- primitives on the S3 server ----------------------------------------------------------------
def test_object_storage_primitives(moto_s3: MotoServer, s3_uri: str) -> None:
    s = _storage(moto_s3, s3_uri)
    assert not s.exists("") and s.list_files("") == []
    s.makedirs(".hoodie")  # nothing to do on an object store
    s.write_bytes("p1/a.bin", b"abc")
    s.write_atomic(".hoodie/hoodie.properties", b"x=1\n")
    with s.open_output_stream("p2/q/b.bin") as out:
        out.write(b"de")
        out.write(pa.py_buffer(b"f"))
        assert out.tell() == 3
    assert s.read_bytes("p2/q/b.bin") == b"def"
    assert s.read_text(".hoodie/hoodie.properties") == "x=1\n"
    assert s.exists("p1/a.bin") and s.exists("p2") and s.is_dir("p2") and not s.is_dir("p1/a")
    assert not s.exists("p1/zzz")
    assert s.existing(["p1/a.bin", "p1/nope"]) == ["p1/a.bin"]
    # the possible files of one instant time: one listing from their common prefix
    for name in ("001.commit", "001.deltacommit.inflight", "0010.commit", "002.clean", "000.x"):
        s.write_bytes(f".hoodie/{name}", b"")
    s.calls.reset()
    probe = [
        ".hoodie/001.commit.requested",
        ".hoodie/001.deltacommit.inflight",
        ".hoodie/001.commit",
        ".hoodie/001.clean",
    ]
    assert s.existing(probe) == [".hoodie/001.deltacommit.inflight", ".hoodie/001.commit"]
    assert s.existing([".hoodie/003.commit", ".hoodie/003.clean", ".hoodie/003.rollback"]) == []
    assert s.calls.snapshot() == {"list": 2, "read": 0, "head": 0, "exists": 0}
    for name in ("001.commit", "001.deltacommit.inflight", "0010.commit", "002.clean", "000.x"):
        s.delete(f".hoodie/{name}")
    info = s.info("p1/a.bin")
    assert info is not None and info.size == 3 and info.mtime_ms > 0
    assert s.info("nope") is None
    files, dirs = s.list_entries("")
    assert files == [] and sorted(dirs) == [".hoodie", "p1", "p2"]
    assert sorted(f.path for f in s.list_files("", recursive=True)) == [
        ".hoodie/hoodie.properties",
        "p1/a.bin",
        "p2/q/b.bin",
    ]
    assert sorted(s.list_dirs("p2", recursive=True)) == ["p2/q"]
    sub = s.sub("p2")
    assert [f.path for f in sub.list_files("q")] == ["q/b.bin"]
    assert sub.uri("q/b.bin") == f"{s3_uri}/p2/q/b.bin"
    # parquet through ranged reads
    t = pa.table({"k": list(range(1000)), "s": [str(i) for i in range(1000)]})
    buf = pa.BufferOutputStream()
    pq.write_table(t, buf, row_group_size=300)
    s.write_bytes("p1/t.parquet", buf.getvalue().to_pybytes())
    with s.open_input_file("p1/t.parquet") as f:
        assert pq.ParquetFile(f).read().equals(t)
    s.rename("p1/a.bin", "p1/c.bin")
    assert s.existing(["p1/a.bin", "p1/c.bin"]) == ["p1/c.bin"]
    assert s.delete("p1/c.bin") and not s.delete("p1/c.bin")
    s.delete_dir("p2")
    assert not s.exists("p2")
    with pytest.raises(FileNotFoundError, match=r"nope\.bin"):
        s.read_bytes("nope.bin")
    with pytest.raises(FileNotFoundError):
        s.open_input_file("nope.bin")


def test_conditional_create_is_atomic_one_winner_and_the_loser_gets_false(
    moto_s3: MotoServer, s3_uri: str
) -> None:
    s = _storage(moto_s3, s3_uri)
    assert s.create_if_absent(".hoodie/001.commit.requested", b"")
    assert not s.create_if_absent(".hoodie/001.commit.requested", b"again")
    assert s.read_bytes(".hoodie/001.commit.requested") == b""
    # racing writers: exactly one creates the object, and it holds the winner's body whole
    results: dict[int, bool] = {}
    barrier = threading.Barrier(6)

    def race(i: int) -> None:
        mine = pickle.loads(pickle.dumps(s))  # each writer with its own client
        barrier.wait()
        results[i] = mine.create_if_absent("lock", f"holder-{i}".encode() * 100)

    threads = [threading.Thread(target=race, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    winners = [i for i, won in results.items() if won]
    assert len(results) == 6 and len(winners) == 1
    assert s.read_bytes("lock") == f"holder-{winners[0]}".encode() * 100


def _free_port_409xx() -> int:
    """A free loopback port whose number starts with 409 (else any free port)."""
    for port in range(40900, 41000):
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    return free_port()


def test_a_call_that_finally_fails_names_the_operation_and_the_path() -> None:
    # nothing listens there: every attempt is refused, then retried. A port starting with 409:
    # the create's failure names the endpoint, and must not pass for an HTTP 409 conflict
    # (it once did, for a random free port, and was reported as a failed get)
    port = _free_port_409xx()
    s = Storage(
        "s3://bucket/t",
        storage_options={
            "aws_endpoint_url": f"http://127.0.0.1:{port}",
            "aws_allow_http": "true",
            "aws_access_key_id": "k",
            "aws_secret_access_key": "s",
            "aws_region": "us-east-1",
            "max_retries": "2",
            "retry_timeout": "5",
        },
    )
    with pytest.raises(StorageError, match=r"^get s3://bucket/t/\.hoodie/x failed: ") as e:
        s.read_bytes(".hoodie/x")
    assert isinstance(e.value, OSError) and isinstance(e.value, hudi_ds.HudiError)
    with pytest.raises(StorageError, match=r"^create s3://bucket/t/y failed"):
        s.create_if_absent("y", b"1")


# -- tables on the S3 server -------------------------------------------------------------------
_opts = partial(options, "s3t", partition="p")


def _apply(model: dict[str, tuple], t: pa.Table, delete: bool = False) -> None:
    for row in zip(*(t.column(c).to_pylist() for c in COLUMNS), strict=True):
        if delete:
            model.pop(row[0], None)
        else:
            model[row[0]] = row


def _check(uri: str, so: dict[str, Any], model: dict[str, tuple]) -> None:
    assert_rows(hudi_ds.read(uri, storage_options=so), list(model.values()), COLUMNS)
    complete_pending_compactions(uri, so)  # hudi-rs 0.5 skips a pending compaction's logs
    assert_rows(hudi_ds.read(uri, storage_options=so), list(model.values()), COLUMNS)
    assert_rows(hudi_rs_table(uri, storage_options=so), list(model.values()), COLUMNS)


def test_upsert_on_s3_reads_back_by_hudi_ds_and_hudi_rs(moto_s3: MotoServer, s3_uri: str) -> None:
    so = moto_s3.storage_options()
    model: dict[str, tuple] = {}
    first = rows(range(6), 1)
    hudi_ds.write(
        s3_uri,
        first,
        {**_opts("MERGE_ON_READ"), "hoodie.datasource.write.operation": "insert"},
        storage_options=so,
    )
    _apply(model, first)
    table = hudi_ds.HudiTable(s3_uri, _opts("MERGE_ON_READ"), storage_options=so)
    second = rows(range(3, 9), 2)
    table.upsert(second)
    _apply(model, second)
    _check(s3_uri, so, model)
    assert table.storage.calls["list"] > 0  # the requests went to the store


@pytest.mark.slow
@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
@pytest.mark.parametrize("store", ["s3", "azure"])
def test_write_matrix_and_services_on_object_stores(
    request: pytest.FixtureRequest, store: str, table_type: str
) -> None:
    """insert, upsert, delete; compaction (MOR), rollback of the last commit, clean: the
    table read back by hudi_ds and hudi-rs equals the model after each step -- on the local S3
    server (moto) and on Azure Blob (Azurite)."""
    uri, so = object_store_table(request, store)
    opts = {
        **_opts(table_type),
        "hoodie.clean.automatic": "false",
        "hoodie.compact.inline": "false",
    }
    model: dict[str, tuple] = {}
    ins = rows(range(10), 1)
    hudi_ds.write(
        uri, ins, {**opts, "hoodie.datasource.write.operation": "insert"}, storage_options=so
    )
    _apply(model, ins)
    table = hudi_ds.HudiTable(uri, opts, storage_options=so)
    up = rows(range(5, 14), 2)
    table.upsert(up)
    _apply(model, up)
    gone = rows(range(0, 3), 3)
    table.delete(gone)
    _apply(model, gone, delete=True)
    _check(uri, so, model)
    storage = Storage(uri, storage_options=so)
    if table_type == "MERGE_ON_READ":
        ctx = ServiceContext.open(storage, opts)
        planned = compaction.schedule_compaction(ctx)
        assert planned is not None
        done = compaction.run_compaction(ctx, planned)
        assert [r.instant for r in done] == [planned]
        _check(uri, so, model)
    later = rows(range(0, 12), 4)
    last = table.upsert(later)  # rolled back below: the model keeps the rows before it
    rolled = rollback.rollback(ServiceContext.open(storage, opts), last)
    assert rolled.instant == last
    _check(uri, so, model)
    cleaned = clean.clean(
        ServiceContext.open(storage, {**opts, "hoodie.cleaner.commits.retained": "1"})
    )
    assert not cleaned.failed
    if table_type == "COPY_ON_WRITE":  # the upserted and deleted-from base files' old versions
        assert cleaned.instant is not None and cleaned.deleted
    _check(uri, so, model)


# -- the CLI and the Spark options ----------------------------------------------------------------
def test_cli_storage_option_reaches_the_store(moto_s3: MotoServer, s3_uri: str) -> None:
    import io
    import json

    from hudi_ds.cli import main

    so = moto_s3.storage_options()
    hudi_ds.write(s3_uri, rows(range(4), 1), _opts("COPY_ON_WRITE"), storage_options=so)
    flags = [a for k, v in so.items() for a in ("--storage-option", f"{k}={v}")]
    out, err = io.StringIO(), io.StringIO()
    assert main(["timeline", s3_uri, "--json", *flags], out, err) == 0, err.getvalue()
    instants = json.loads(out.getvalue())["instants"]
    assert [i["state"] for i in instants] == ["COMPLETED"]
    out, err = io.StringIO(), io.StringIO()
    code = main(["timeline", s3_uri, *flags, "--storage-option", "aws_bogus=1"], out, err)
    assert code == 2 and "'aws_bogus'" in err.getvalue()


def test_spark_options_carry_storage_options_to_a_picklable_storage() -> None:
    from hudi_ds.spark import options as opt

    path, hudi, conn = opt.split_options(
        {
            "path": "s3://bucket/t",
            "hoodie.table.name": "t",
            "AWS_REGION": "eu-west-1",
            "hudi_py.storage.aws_endpoint_url": "http://127.0.0.1:1",
            "allow_http": "true",
        }
    )
    assert hudi == {"hoodie.table.name": "t"}
    assert opt.storage_options(conn) == {
        "aws_region": "eu-west-1",
        "aws_endpoint_url": "http://127.0.0.1:1",
        "allow_http": "true",
    }
    assert path is not None
    storage = opt.open_path(path, conn)
    assert isinstance(storage, ObjectStorage)
    assert pickle.loads(pickle.dumps(storage)).storage_options == opt.storage_options(conn)
    assert opt.open_path("/tmp/t", {}) == "/tmp/t"
    with pytest.raises(ConfigError, match="'aws_regoin'"):
        opt.open_path(path, {"hudi_py.storage.aws_regoin": "x"})


def test_throttled_calls_are_retried_with_backoff(moto_s3: MotoServer, s3_uri: str) -> None:
    flaky = FaultProxy(moto_s3.endpoint)
    for _ in range(3):
        flaky.force("transient")
    try:
        so = {**moto_s3.storage_options(), "aws_endpoint_url": flaky.endpoint, "max_retries": "5"}
        s = Storage(s3_uri, storage_options=so)
        s.write_bytes("a", b"payload")  # 503, 503, 503, then through
        assert flaky.counts["transient"] == 3
        assert s.read_bytes("a") == b"payload"
        assert s.create_if_absent("b", b"1") and not s.create_if_absent("b", b"2")
        for _ in range(2):  # two more throttled answers, then the read goes through
            flaky.force("transient")
        assert s.read_bytes("b") == b"1"
        assert flaky.counts["transient"] == 5
        # forwarded: write, create x2, read x2, and the failed create's GET of the object (is
        # it this put's own, landed before a lost answer? its put token tells)
        assert flaky.take() == {"put": 3, "get": 3}
        for _ in range(10):  # more failures than retries: a StorageError naming op and path
            flaky.force("transient")
        so_few = {**so, "max_retries": "1"}
        with pytest.raises(StorageError, match=rf"^get {s3_uri}/b failed: .*503"):
            Storage(s3_uri, storage_options=so_few).read_bytes("b")
    finally:
        flaky.close()


def test_a_parquet_footer_is_one_ranged_get_and_a_listed_size_needs_no_head(
    moto_s3: MotoServer, s3_uri: str
) -> None:
    """Requests counted by the proxy: opening a Parquet file with the size its listing gave
    and reading its footer is one GET (of the object's tail); without the size, a HEAD asks
    for it first; a small file is read whole by that GET; a missing object fails cleanly."""
    proxy = FaultProxy(moto_s3.endpoint)
    try:
        s = Storage(
            s3_uri,
            storage_options={**moto_s3.storage_options(), "aws_endpoint_url": proxy.endpoint},
        )
        t = pa.table({"k": [f"k{i}" for i in range(500)], "v": list(range(500))})
        sink = pa.BufferOutputStream()
        pq.write_table(t, sink)
        s.write_bytes("p/f.parquet", sink.getvalue().to_pybytes())
        (info,) = s.list_files("p")
        proxy.take()
        with s.open_input_file(info.path, info.size) as f:
            pf = pq.ParquetFile(f)
            assert pf.metadata.num_rows == 500
            assert pf.read().equals(t)
        assert proxy.take() == {"get": 1}
        with s.open_input_file(info.path) as f:
            assert pq.ParquetFile(f).metadata.num_rows == 500
        assert proxy.take() == {"head": 1, "get": 1}
        with (
            pytest.raises(FileNotFoundError, match="p/gone.parquet"),
            s.open_input_file("p/gone.parquet", 1000) as f,
        ):
            pq.ParquetFile(f)
    finally:
        proxy.close()


# -- Azure Blob (Azurite) -------------------------------------------------------------------------
@pytest.mark.slow  # the first run installs Azurite with npm
def test_azure_blob_conditional_create_and_a_mor_table(azurite: Any, az_uri: str) -> None:
    """On Azurite: the conditional create (``If-None-Match: *``) has one winner; insert,
    upsert, delete and a compaction of a MOR table read back by hudi_ds and hudi-rs."""
    so = azurite.storage_options()
    s = Storage(az_uri, storage_options=so)
    assert s.create_if_absent("lock", b"a") and not s.create_if_absent("lock", b"b")
    assert s.read_bytes("lock") == b"a"
    s.delete("lock")
    opts = {**_opts("MERGE_ON_READ"), "hoodie.compact.inline": "false"}
    model: dict[str, tuple] = {}
    ins = rows(range(8), 1)
    hudi_ds.write(
        az_uri, ins, {**opts, "hoodie.datasource.write.operation": "insert"}, storage_options=so
    )
    _apply(model, ins)
    table = hudi_ds.HudiTable(az_uri, opts, storage_options=so)
    up = rows(range(4, 10), 2)
    table.upsert(up)
    _apply(model, up)
    gone = rows(range(0, 2), 3)
    table.delete(gone)
    _apply(model, gone, delete=True)
    _check(az_uri, so, model)
    ctx = ServiceContext.open(Storage(az_uri, storage_options=so), opts)
    planned = compaction.schedule_compaction(ctx)
    assert planned is not None
    assert [r.instant for r in compaction.run_compaction(ctx, planned)] == [planned]
    _check(az_uri, so, model)


# -- the table lock on S3 -----------------------------------------------------------------------
def test_an_expired_lock_on_s3_is_taken_over_by_exactly_one_writer(
    moto_s3: MotoServer, s3_uri: str
) -> None:
    import json
    import time

    from hudi_ds.concurrency.file_system_lock import LOCK_FILE, FileSystemLock
    from hudi_ds.concurrency.lock import LockTimeoutError
    from tests.write.lock_helpers import wait_until_written_ago

    s = _storage(moto_s3, s3_uri)
    dead = json.dumps({"owner": "dead-writer", "expires": time.time() - 1}).encode()
    assert s.create_if_absent(LOCK_FILE, dead)
    # dead: expired by its body and not written for a whole lease on the store's clock
    wait_until_written_ago(s, LOCK_FILE, 2.6)
    locks = [
        FileSystemLock(pickle.loads(pickle.dumps(s)), expire_s=1.0, retries=0) for _ in range(5)
    ]
    won: list[str] = []
    barrier = threading.Barrier(len(locks))

    def take(lock: FileSystemLock) -> None:
        barrier.wait()
        try:
            lock.acquire()
            won.append(lock.owner)
        except LockTimeoutError:
            pass

    threads = [threading.Thread(target=take, args=(lk,)) for lk in locks]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(won) == 1
    assert json.loads(s.read_bytes(LOCK_FILE))["owner"] == won[0]
    # a live lock is not taken over
    late = FileSystemLock(pickle.loads(pickle.dumps(s)), retries=0)
    with pytest.raises(LockTimeoutError):
        late.acquire()
    next(lk for lk in locks if lk.owner == won[0]).release()
    # released by a conditional put (never a delete): free for the next writer at once
    assert json.loads(s.read_bytes(LOCK_FILE)) == {
        "owner": won[0],
        "expires": 0,
        "released": True,
    }
    late.acquire()
    late.release()


@pytest.mark.slow
def test_writers_contending_for_the_s3_lock_never_hold_it_together(
    moto_s3: MotoServer, s3_uri: str
) -> None:
    """Three writers take the lock 8 times each (one of them dies holding it once, so the others
    must take over its expired lock): no two holdings overlap while both are within their
    leases.

    A lease lock promises that much and no more: a holder stalled past its lease (a loaded
    machine stalls a thread for seconds, and its heartbeat with it) may be taken over, which is
    why a commit is fenced by ``held_until``/``confirm``. So each holding counts from its
    ``acquire`` to its release or to the end of its lease (``held_until``), whichever is first,
    all on one monotonic clock (the writers are threads of this process)."""
    import time

    from hudi_ds.concurrency.file_system_lock import FileSystemLock

    s = _storage(moto_s3, s3_uri)
    holdings: list[tuple[str, float, float]] = []  # owner, taken, held until
    guard = threading.Lock()
    errors: list[str] = []

    def writer(i: int) -> None:
        try:
            take_turns(i)
        except BaseException as e:  # reported by the test, with what it was
            errors.append(f"writer {i}: {type(e).__name__}: {e}")

    def take_turns(i: int) -> None:
        # the others poll every 200 ms, not 20: polls flooding the S3 server make the holder's
        # renewals fail, and a holding then ends early (at held_until) -- allowed, but it
        # makes the test weaker
        lock = FileSystemLock(pickle.loads(pickle.dumps(s)), expire_s=5.0, wait_ms=200, retries=300)
        for n in range(8):
            lock.acquire()
            taken = time.monotonic()
            time.sleep(0.02)
            until = min(time.monotonic(), lock.held_until())
            with guard:
                holdings.append((lock.owner, taken, until))
            if i == 0 and n == 3:  # dies holding it: its heartbeat stops, the lock expires
                assert lock._heart is not None
                lock._heart.stop()
                lock = FileSystemLock(
                    pickle.loads(pickle.dumps(s)), expire_s=5.0, wait_ms=200, retries=300
                )
                continue
            lock.release()

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert len(holdings) == 24
    holdings.sort(key=lambda h: h[1])
    for (owner, _, until), (next_owner, taken, _) in itertools.pairwise(holdings):
        assert taken >= until, (
            f"two holders: {owner} held it until {until}, {next_owner} took it at {taken}"
        )


# -- fault injection ------------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_writes_under_random_store_failures_keep_exactly_the_acknowledged_commits(
    moto_s3: MotoServer, s3_uri: str, table_type: str
) -> None:
    """A proxy fails 8% of the requests (503) and the client retries once only, so some calls
    finally fail in every part of the write path (instant creation, markers, data files,
    commit, rollback of the previous failure, table services). After twelve upserts the table
    -- read without faults by hudi_ds and hudi-rs -- holds exactly the acknowledged writes."""
    proxy = FaultProxy(moto_s3.endpoint, seed=7)
    try:
        so = {
            **moto_s3.storage_options(),
            "aws_endpoint_url": proxy.endpoint,
            "max_retries": "1",
            "retry_timeout": "5",
        }
        opts = {
            **_opts(table_type),
            "hoodie.compact.inline.max.delta.commits": "3",
            "hoodie.cleaner.commits.retained": "2",
        }
        model: dict[str, tuple] = {}
        first = rows(range(20), 0)
        hudi_ds.write(
            s3_uri,
            first,
            {**opts, "hoodie.datasource.write.operation": "insert"},
            storage_options=so,
        )
        _apply(model, first)
        proxy.set_rates(transient=0.08)
        failures: list[str] = []
        for i in range(1, 10):
            t = rows(range(i * 3, i * 3 + 10), i)
            try:
                hudi_ds.write(s3_uri, t, opts, storage_options=so)
            except StorageError as e:  # a store failure, named: never a "corrupt file"
                failures.append(str(e))
                continue
            _apply(model, t)
        proxy.set_rates()
        assert proxy.counts["transient"] > 0
        _check(s3_uri, moto_s3.storage_options(), model)
    finally:
        proxy.close()
