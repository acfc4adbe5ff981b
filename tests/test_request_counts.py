"""Requests per upsert commit and per snapshot read on S3 (the session's moto server behind a
counting proxy, :mod:`tests.fault_proxy`): the counts of ``bench/bench_s3_calls.py`` on a small
MERGE_ON_READ bucket-index table, pinned so that a change adding a request fails here. Where a
count must change, the proxy's log (method, path, Range) printed on failure says which."""

from __future__ import annotations

from collections import Counter

import pyarrow as pa
import pytest

import hudi_ds
from hudi_ds.storage import Storage
from tests.conftest import assert_rows, hudi_rs_table
from tests.fault_proxy import FaultProxy
from tests.moto_server import MotoServer

COLUMNS = ["id", "ts", "part", "value"]
OPTS = {
    "hoodie.table.name": "counts",
    "hoodie.datasource.write.recordkey.field": "id",
    "hoodie.datasource.write.partitionpath.field": "part",
    "hoodie.datasource.write.precombine.field": "ts",
    "hoodie.datasource.write.table.type": "MERGE_ON_READ",
    "hoodie.index.type": "BUCKET",
    "hoodie.bucket.index.num.buckets": "2",
}


def _rows(ids: range | list[int], ts: int) -> pa.Table:
    ids = list(ids)
    return pa.table(
        {
            "id": [f"k{i:04d}" for i in ids],
            "ts": pa.array([ts] * len(ids), pa.int64()),
            "part": [f"p{i % 2}" for i in ids],
            "value": [float(i + ts) for i in ids],
        }
    )


def _show(log: list[tuple[str, str, str, str]]) -> str:
    return "\n".join(" ".join(x for x in entry if x) for entry in log)


#: requests by kind of the last upsert and of the read, per table type and metadata table. The
#: upsert: GET hoodie.properties, the latest commit (COW: + each base file merged, in one GET;
#: the keys the bucket-count check samples come from the footers the last write wrote); LIST
#: the timeline, the root and the partitions, the instant time probe, the writer records, the
#: markers (once: their deletion takes the commit's listing), the timeline at the commit; HEAD
#: the writer record at the commit and after it (the transitions of an instant this writer
#: created probe nothing: the commit's listing answers); PUT the writer record, heartbeat,
#: requested/inflight/completed files, MARKERS.type + one MARKERS list, the data files (4);
#: POST one delete of the markers, the writer record and the heartbeat. With the metadata
#: table: GET its hoodie.properties, LIST its timeline, its partitions and its files
#: partition, PUT its deltacommit's three instant files and its log (its archival check after
#: the commit reads none of it again). The read: hoodie.properties, the latest commit (its
#: schema), the timeline and partitions listed, each data file in one GET (MOR: 4 file groups
#: x 3 log files; COW: 4 base files); with the metadata table the partitions are not listed:
#: its hoodie.properties, its timeline and files partition listed, the files partition's
#: slice read (its HFile, the log its creation wrote and one per commit since)
EXPECTED = {
    ("MERGE_ON_READ", False): (
        {"get": 2, "list": 8, "head": 2, "put": 11, "post": 1},
        {"get": 14, "list": 4},
    ),
    ("COPY_ON_WRITE", False): (
        {"get": 6, "list": 8, "head": 2, "put": 11, "post": 1},
        {"get": 6, "list": 4},
    ),
    ("MERGE_ON_READ", True): (
        {"get": 3, "list": 11, "head": 2, "put": 15, "post": 1},
        {"get": 20, "list": 3},
    ),
    ("COPY_ON_WRITE", True): (
        {"get": 7, "list": 11, "head": 2, "put": 15, "post": 1},
        {"get": 12, "list": 3},
    ),
}


@pytest.mark.parametrize(("table_type", "metadata"), sorted(EXPECTED))
def test_upsert_and_read_request_counts_on_s3(
    moto_s3: MotoServer, s3_uri: str, table_type: str, metadata: bool
) -> None:
    """The last of two upserts into a table of 2 partitions x 2 buckets (4 file groups) and a
    snapshot read after it, with and without the metadata table: the requests by kind, no
    object read twice by the upsert or the read, the data files' markers in one object; the
    rows read back by hudi_ds and hudi-rs."""
    opts = {**OPTS, "hoodie.datasource.write.table.type": table_type}
    if metadata:
        opts["hoodie.metadata.enable"] = "true"
    with FaultProxy(moto_s3.endpoint) as proxy:
        so = {**moto_s3.storage_options(), "aws_endpoint_url": proxy.endpoint}
        hudi_ds.write(
            s3_uri,
            _rows(range(100), 0),
            {**opts, "hoodie.datasource.write.operation": "insert"},
            storage_options=so,
        )
        hudi_ds.write(s3_uri, _rows(range(50, 150), 1), opts, storage_options=so)
        proxy.take(), proxy.take_log()
        hudi_ds.write(s3_uri, _rows([*range(0, 20), *range(150, 170)], 2), opts, storage_options=so)
        upsert, upsert_log = proxy.take(), proxy.take_log()
        got = hudi_ds.read(s3_uri, storage_options=so)
        read, read_log = proxy.take(), proxy.take_log()
        rs = hudi_rs_table(s3_uri, storage_options=so)

    expected = {i: (f"k{i:04d}", 0, f"p{i % 2}", float(i)) for i in range(100)}
    for i in range(50, 150):
        expected[i] = (f"k{i:04d}", 1, f"p{i % 2}", float(i + 1))
    for i in [*range(0, 20), *range(150, 170)]:
        expected[i] = (f"k{i:04d}", 2, f"p{i % 2}", float(i + 2))
    assert_rows(got, list(expected.values()), COLUMNS)
    assert_rows(rs, list(expected.values()), COLUMNS)

    want_upsert, want_read = EXPECTED[(table_type, metadata)]
    assert upsert == want_upsert, _show(upsert_log)
    assert read == want_read, _show(read_log)
    # the markers went with the write's end (one request), none left behind
    direct = Storage(s3_uri, storage_options=moto_s3.storage_options())
    assert direct.list_files(".hoodie/.temp", recursive=True) == []
    puts = [p for k, _, p, _ in upsert_log if k == "put"]
    assert sum("/.hoodie/.temp/" in p for p in puts) == 2, _show(upsert_log)
    for log in (upsert_log, read_log):
        gets = Counter(p for k, _, p, _ in log if k == "get")
        assert max(gets.values()) == 1, _show(log)
