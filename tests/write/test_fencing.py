"""A writer stalled inside its commit past its lock lease never completes that commit, whatever
step the stall falls on: black-box, with real processes under every lock provider.

Writer A (a child process) upserts and stops itself (SIGSTOP: a GC or VM pause; its heartbeats
and lock renewals stop too) at a named step of its commit while it holds the table lock. Its
lease runs out; writer B takes the lock over and commits an upsert touching A's file group (on
MOR with a compaction right after it, which supersedes the slice A's log files hang off). A is
continued. Every write either landed whole or raised, and the table reads as the model of the
acknowledged writes in hudi_ds and hudi-rs."""

from __future__ import annotations

import json
import signal
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import hudi_ds
from hudi_ds.errors import CommitConflictError, LockLostError
from hudi_ds.services import ServiceContext
from hudi_ds.services.compaction import run_compaction, schedule_compaction
from hudi_ds.storage import open_storage
from tests.builders import who_rows
from tests.conftest import (
    assert_rows,
    hudi_rs_table,
    spawn_python,
    table_options,
    wait_stopped,
)
from tests.moto_server import ACCESS_KEY, REGION, SECRET_KEY, MotoServer

ONE_WRITE = r"""
import json, sys
import pyarrow as pa
import hudi_ds
from hudi_ds.errors import HudiError
path, opts, so, rows = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3]), json.loads(sys.argv[4])
try:
    inst = hudi_ds.write(path, pa.Table.from_pylist(rows), opts, storage_options=so or None)
    print(json.dumps({"ok": inst}))
except HudiError as e:
    print(json.dumps({"error": type(e).__name__, "message": str(e)}))
"""

COLUMNS = ["id", "ts", "p", "who"]


rows = who_rows


def lock_options(provider: str, moto: MotoServer | None) -> dict[str, str]:
    """Optimistic concurrency with ``provider`` and a short lease (about 2 s; the storage-based
    lock's shortest is Hudi's 10 s)."""
    occ = {"hoodie.write.concurrency.mode": "optimistic_concurrency_control"}
    if provider == "filesystem":
        return {
            **occ,
            "hoodie.write.lock.provider": "filesystem",
            "hoodie.write.lock.filesystem.expire": str(2 / 60),
        }
    if provider == "storage":
        return {
            **occ,
            "hoodie.write.lock.provider": "storage",
            "hoodie.write.lock.storage.validity.timeout.secs": "10",
            "hoodie.write.lock.storage.heartbeat.poll.secs": "1",
        }
    assert provider == "dynamodb" and moto is not None
    return {
        **occ,
        "hoodie.write.lock.provider": "dynamodb",
        "hoodie.write.lock.dynamodb.table": f"locks-{uuid.uuid4().hex[:8]}",
        "hoodie.write.lock.dynamodb.region": REGION,
        "hoodie.write.lock.dynamodb.endpoint_url": moto.endpoint,
        "hoodie.aws.access.key": ACCESS_KEY,
        "hoodie.aws.secret.key": SECRET_KEY,
        "hoodie.write.lock.wait_time_ms": "2000",
    }


@pytest.fixture
def where(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, dict, Any]]:
    """(table path, storage options, the moto server or None) for the case's store."""
    store = request.param
    if store == "local":
        yield str(tmp_path / "t"), {}, None
        return
    moto: MotoServer = request.getfixturevalue("moto_s3")
    so = {k: str(v) for k, v in moto.storage_options().items()}
    yield request.getfixturevalue("s3_uri"), so, moto


def run_case(
    path: str,
    so: dict[str, str],
    moto: MotoServer | None,
    *,
    provider: str,
    table_type: str,
    version: int,
    metadata: bool,
    point: str,
) -> None:
    opts = {
        **table_options("fence", partition="p", table_type=table_type, buckets=1),
        **lock_options(provider, moto),
        "hoodie.write.table.version": str(version),
        "hoodie.metadata.enable": str(metadata).lower(),
        "hoodie.clean.automatic": "false",
    }
    if table_type == "MERGE_ON_READ":
        # B's commit is followed by a compaction that supersedes the slice A writes into
        opts["hoodie.compact.inline"] = "true"
        opts["hoodie.compact.inline.max.delta.commits"] = "2"
    hudi_ds.write(path, pa.Table.from_pylist(rows(range(10), 1, 0)), opts, storage_options=so)
    state = {r["id"]: r for r in rows(range(10), 1, 0)}

    a_rows = rows(range(0, 5), 2, 1)
    a = spawn_python(
        ONE_WRITE,
        path,
        json.dumps(opts),
        json.dumps(so),
        json.dumps(a_rows),
        env={"HUDI_DS_STALL_AT": point},
    )
    try:
        wait_stopped(a, 120)
        b_rows = rows(range(3, 8), 3, 2)
        b_ok = False
        for _ in range(3):
            try:
                hudi_ds.write(path, pa.Table.from_pylist(b_rows), opts, storage_options=so)
                b_ok = True
                break
            except CommitConflictError:  # B saw A's commit (A wrote it within its lease)
                break
            except LockLostError:
                # B's own lease ran out (a machine too loaded to renew a 2 s lease in time):
                # B was fenced and raised, as it must; a user retries the write
                continue
    finally:
        a.send_signal(signal.SIGCONT)
    out, err = a.communicate(timeout=180)
    assert a.returncode == 0, err[-3000:]
    result = json.loads(out.strip().splitlines()[-1])
    if "error" in result:
        assert result["error"] == "LockLostError", result
        assert "lock" in result["message"], result
    a_ok = "ok" in result
    # the lease ran out while A was stopped before its completed file: A must not complete
    if point in ("commit_check", "commit_locked", "commit_write"):
        assert not a_ok, result
    assert a_ok or b_ok, "one of the two writes lands"
    for ok, batch in sorted([(a_ok, a_rows), (b_ok, b_rows)], key=lambda x: x[1][0]["ts"]):
        if ok:
            state.update({r["id"]: r for r in batch})
    expected = [tuple(r[c] for c in COLUMNS) for r in state.values()]
    assert_rows(hudi_ds.read(path, storage_options=so or None), expected, COLUMNS)
    assert_rows(hudi_rs_table(path, storage_options=so or None), expected, COLUMNS)
    if metadata:
        off = {"hoodie.metadata.enable": "false"}
        assert_rows(hudi_ds.read(path, off, storage_options=so or None), expected, COLUMNS)
    # and the table takes the next write
    hudi_ds.write(path, pa.Table.from_pylist(rows(range(8, 10), 4, 3)), opts, storage_options=so)
    state.update({r["id"]: r for r in rows(range(8, 10), 4, 3)})
    expected = [tuple(r[c] for c in COLUMNS) for r in state.values()]
    assert_rows(hudi_ds.read(path, storage_options=so or None), expected, COLUMNS)


POINTS = ["commit_check", "commit_locked", "commit_write", "commit_written"]


@pytest.mark.parametrize("where", ["local"], indirect=True)
@pytest.mark.parametrize("point", POINTS)
@pytest.mark.parametrize(
    ("table_type", "version", "metadata"),
    [("COPY_ON_WRITE", 6, False), ("MERGE_ON_READ", 9, True)],
)
def test_file_system_lock_stalled_commit(
    where: tuple[str, dict, Any], point: str, table_type: str, version: int, metadata: bool
) -> None:
    path, so, moto = where
    run_case(
        path,
        so,
        moto,
        provider="filesystem",
        table_type=table_type,
        version=version,
        metadata=metadata,
        point=point,
    )


@pytest.mark.parametrize("where", ["s3"], indirect=True)
@pytest.mark.parametrize("point", ["commit_locked", "commit_written"])
@pytest.mark.parametrize(
    ("provider", "table_type", "version", "metadata"),
    [
        ("dynamodb", "MERGE_ON_READ", 6, False),
        ("dynamodb", "COPY_ON_WRITE", 9, True),
        ("filesystem", "MERGE_ON_READ", 9, False),
        pytest.param("storage", "COPY_ON_WRITE", 6, True, marks=pytest.mark.slow),
    ],
)
def test_object_store_locks_stalled_commit(
    where: tuple[str, dict, Any],
    point: str,
    provider: str,
    table_type: str,
    version: int,
    metadata: bool,
) -> None:
    path, so, moto = where
    run_case(
        path,
        so,
        moto,
        provider=provider,
        table_type=table_type,
        version=version,
        metadata=metadata,
        point=point,
    )


@pytest.mark.stress
@pytest.mark.parametrize("where", ["s3"], indirect=True)
@pytest.mark.parametrize("metadata", [False, True])
@pytest.mark.parametrize("version", [6, 9])
@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
@pytest.mark.parametrize("point", POINTS)
@pytest.mark.parametrize("provider", ["filesystem", "storage", "dynamodb"])
def test_every_lock_provider_and_step(
    where: tuple[str, dict, Any],
    provider: str,
    point: str,
    table_type: str,
    version: int,
    metadata: bool,
) -> None:
    """The whole matrix on S3 (make test-stress): every object-store lock provider, every step
    of the commit, both table types, table versions 6 and 9, the metadata table on and off."""
    path, so, moto = where
    run_case(
        path,
        so,
        moto,
        provider=provider,
        table_type=table_type,
        version=version,
        metadata=metadata,
        point=point,
    )


@pytest.mark.parametrize(
    ("point", "table_type", "compaction"),
    [
        ("after_requested", "MERGE_ON_READ", False),
        ("handle_flush", "COPY_ON_WRITE", False),
        ("after_files", "COPY_ON_WRITE", False),
        ("handle_flush", "MERGE_ON_READ", False),
        ("after_files", "MERGE_ON_READ", True),
    ],
)
def test_writer_rolled_back_while_stalled_raises_a_write_error(
    tmp_path: Path, point: str, table_type: str, compaction: bool
) -> None:
    """Writer A stops while writing its files (``handle_flush``) or after them (``after_files``)
    for longer than its heartbeat tolerates; writer B rolls A's instant back as failed and
    commits (and schedules a compaction of A's file group, whose slice A's commit would move
    its log files into). A is continued: its write raises WriteError saying another writer
    rolled it back (not the raw FileNotFoundError of its deleted files), and the table reads as
    B left it."""
    path = str(tmp_path / "t")
    opts = {
        **table_options("stalled", partition="p", table_type=table_type, buckets=1),
        "hoodie.write.concurrency.mode": "optimistic_concurrency_control",
        "hoodie.write.lock.filesystem.expire": str(2 / 60),  # A may stall holding it
        "hoodie.client.heartbeat.interval_in_ms": "300",
        "hoodie.client.heartbeat.tolerable.misses": "1",
        "hoodie.clean.automatic": "false",
    }
    hudi_ds.write(path, pa.Table.from_pylist(rows(range(10), 1, 0)), opts)
    a = spawn_python(
        ONE_WRITE,
        path,
        json.dumps(opts),
        "{}",
        json.dumps(rows(range(0, 5), 2, 1)),
        env={"HUDI_DS_STALL_AT": point},
    )
    try:
        wait_stopped(a, 120)
        time.sleep(1.0)  # A is stopped: its heartbeat (300 ms, 1 miss tolerated) expires
        hudi_ds.write(path, pa.Table.from_pylist(rows(range(3, 8), 3, 2)), opts)
        if compaction:
            assert schedule_compaction(ServiceContext.open(path, opts)) is not None
    finally:
        a.send_signal(signal.SIGCONT)
    out, err = a.communicate(timeout=180)
    assert a.returncode == 0, err[-3000:]
    result = json.loads(out.strip().splitlines()[-1])
    assert result.get("error") == "WriteError", result
    assert "rolled back by another writer" in result["message"], result
    state = {r["id"]: r for r in rows(range(10), 1, 0)}
    state.update({r["id"]: r for r in rows(range(3, 8), 3, 2)})
    expected = [tuple(r[c] for c in COLUMNS) for r in state.values()]
    assert_rows(hudi_ds.read(path), expected, COLUMNS)
    assert_rows(hudi_rs_table(path), expected, COLUMNS)


COMPACT_SCHEDULE = r"""
import json, sys
from hudi_ds.cli import main
path, opts, so = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3])
flags = [a for k, v in opts.items() for a in ("-o", f"{k}={v}")]
flags += [a for k, v in so.items() for a in ("--storage-option", f"{k}={v}")]
sys.exit(main(["compact", "schedule", path, *flags]))
"""


@pytest.mark.parametrize(
    ("where", "provider", "version"),
    [
        ("local", "filesystem", 6),
        ("local", "filesystem", 9),
        ("s3", "dynamodb", 6),
        pytest.param("s3", "storage", 9, marks=pytest.mark.slow),
    ],
    indirect=["where"],
)
def test_compaction_planned_after_its_lease_ran_out_is_withdrawn(
    where: tuple[str, dict, Any], provider: str, version: int
) -> None:
    """``hudi-py compact schedule`` stops after making its plan under the lock, before writing
    it, past its lease; a writer takes the lock over and commits log files into the file groups
    the plan compacts. The plan, written when the scheduler continues, lacks those logs: it is
    withdrawn (LockLostError), and the writer's rows survive the next compaction."""
    path, so, moto = where
    opts = {
        **table_options("plan", partition="p", table_type="MERGE_ON_READ", buckets=1),
        **lock_options(provider, moto),
        "hoodie.write.table.version": str(version),
        "hoodie.compact.inline.max.delta.commits": "1",
        "hoodie.datasource.compaction.async.enable": "false",
        "hoodie.clean.automatic": "false",
    }
    sopt = so or None
    hudi_ds.write(path, pa.Table.from_pylist(rows(range(10), 1, 0)), opts, storage_options=sopt)
    log_rows = pa.Table.from_pylist(rows(range(0, 4), 2, 1))
    hudi_ds.write(path, log_rows, opts, storage_options=sopt)  # a log file
    services = {k: v for k, v in opts.items() if not k.startswith("hoodie.datasource")}
    a = spawn_python(
        COMPACT_SCHEDULE,
        path,
        json.dumps(services),
        json.dumps(so),
        env={"HUDI_DS_STALL_AT": "service_plan"},
    )
    try:
        wait_stopped(a, 120)
        b_rows = pa.Table.from_pylist(rows(range(3, 8), 3, 2))
        hudi_ds.write(path, b_rows, opts, storage_options=sopt)
    finally:
        a.send_signal(signal.SIGCONT)
    _, err = a.communicate(timeout=180)
    assert a.returncode == 1, err[-3000:]
    assert "LockLostError" in err or "lock" in err, err[-3000:]
    state = {r["id"]: r for r in rows(range(10), 1, 0)}
    state.update({r["id"]: r for r in rows(range(0, 4), 2, 1)})
    state.update({r["id"]: r for r in rows(range(3, 8), 3, 2)})
    expected = [tuple(r[c] for c in COLUMNS) for r in state.values()]
    storage = open_storage(path, storage_options=sopt)
    schedule_compaction(ServiceContext.open(storage, services))
    run_compaction(ServiceContext.open(storage, services))  # every pending compaction
    tl = hudi_ds.HudiTable(path, storage_options=sopt).timeline
    assert not [i for i in tl if not i.is_completed]
    assert_rows(hudi_ds.read(path, storage_options=sopt), expected, COLUMNS)
    assert_rows(hudi_rs_table(path, storage_options=sopt), expected, COLUMNS)
