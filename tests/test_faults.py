"""Fault injection under the write path: writes to an S3 table through a proxy that fails a
seeded random fraction of the requests (:mod:`tests.fault_proxy`: throttled, lost responses,
access denied). After every write the table, read without faults, is readable and holds exactly
the acknowledged writes: a write that raised left nothing visible."""

from __future__ import annotations

import random

import pyarrow as pa
import pytest

import hudi_ds
from hudi_ds.errors import HudiError, StorageError
from tests.conftest import (
    OCC_OPTIONS,
    assert_rows,
    complete_pending_compactions,
    hudi_rs_table,
    table_options,
)
from tests.fault_proxy import FaultProxy
from tests.moto_server import MotoServer

COLUMNS = ["id", "ts", "v"]


@pytest.mark.parametrize(
    ("seed", "table_type", "lock"),
    [
        (1, "COPY_ON_WRITE", False),
        # the storage-based lock's conditional puts go through the faults too
        pytest.param(2, "MERGE_ON_READ", True, marks=pytest.mark.slow),
    ],
)
def test_writes_under_random_storage_faults_keep_exactly_the_acknowledged_commits(
    moto_s3: MotoServer, s3_uri: str, seed: int, table_type: str, lock: bool
) -> None:
    clean = moto_s3.storage_options()
    opts = {**table_options("faults", table_type=table_type), "hoodie.clean.automatic": "false"}
    if lock:
        opts.update(OCC_OPTIONS)
        opts["hoodie.write.lock.provider"] = (
            "org.apache.hudi.client.transaction.lock.StorageBasedLockProvider"
        )
        # a release that fails for good leaves the lease held until it expires (as in Hudi):
        # the shortest validity Hudi allows, so the next writer takes it over within its wait
        opts["hoodie.write.lock.storage.validity.timeout.secs"] = "10"
        opts["hoodie.write.lock.storage.heartbeat.poll.secs"] = "1"
    rng = random.Random(seed)
    model: dict[str, tuple] = {}
    with FaultProxy(moto_s3.endpoint, seed) as proxy:
        faulty = {
            **clean,
            "aws_endpoint_url": proxy.endpoint,
            "max_retries": "8",
            "retry_timeout": "60",
        }
        first = pa.table({"id": ["k0"], "ts": [0], "v": ["seed"]})
        hudi_ds.write(s3_uri, first, opts, storage_options=clean)
        model["k0"] = ("k0", 0, "seed")
        failures: list[str] = []
        for i in range(1, 4):
            keys = [f"k{k}" for k in rng.sample(range(30), 6)]
            batch = pa.table({"id": keys, "ts": [i] * 6, "v": [f"b{i}"] * 6})
            # odd writes: some requests also fail for good; even ones: only retried faults
            permanent = 0.08 if i % 2 else 0.0
            proxy.set_rates(transient=0.05, lost=0.03, permanent=permanent)
            if not permanent:
                # a throttled request, and the answer to the second conditional create (the
                # instant's inflight file) lost: the client's retry finds the object there
                proxy.force("transient")
                proxy.force("forwarded", header="if-none-match")
                proxy.force("lost", header="if-none-match")
            try:
                hudi_ds.write(s3_uri, batch, opts, storage_options=faulty)
            except HudiError as e:
                # a permanent fault: a StorageError naming the operation and the URI
                assert permanent, f"write {i} failed on retried faults only: {e}"
                assert isinstance(e, StorageError) or isinstance(e.__cause__, StorageError), e
                assert s3_uri in str(e), e
                failures.append(i)
            else:
                model.update({k: (k, i, f"b{i}") for k in keys})
            proxy.set_rates()
            got = hudi_ds.read(s3_uri, storage_options=clean)
            assert_rows(got, list(model.values()), COLUMNS)
        # a clean write after the faults finishes (rolls back what failed writes left)
        last = pa.table({"id": ["k0"], "ts": [99], "v": ["last"]})
        hudi_ds.write(s3_uri, last, opts, storage_options=faulty)
        model["k0"] = ("k0", 99, "last")
    assert_rows(hudi_ds.read(s3_uri, storage_options=clean), list(model.values()), COLUMNS)
    complete_pending_compactions(s3_uri, clean)  # hudi-rs 0.5 skips a pending compaction's logs
    assert_rows(hudi_ds.read(s3_uri, storage_options=clean), list(model.values()), COLUMNS)
    assert_rows(hudi_rs_table(s3_uri, storage_options=clean), list(model.values()), COLUMNS)
    # the faults did happen: retried ones (the even write acknowledged), and failed writes
    assert proxy.counts["transient"] > 0 and proxy.counts["lost"] > 0, proxy.counts
    assert failures and set(failures) <= {1, 3}, failures
