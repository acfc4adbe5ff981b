"""Partial updates: rows that carry only some columns (``hoodie.write.partial.updates``).

MOR writes them as Hudi 1.x partial log blocks (``IS_PARTIAL`` header, the ``SCHEMA`` header
holds only the written columns); snapshot reads and compaction take the other columns from the
older version. COW merges them into the base file directly.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pyarrow as pa
import pytest

import hudi_ds
from hudi_ds.errors import ConfigError
from hudi_ds.log.block import BlockType, HeaderKey
from hudi_ds.log.reader import scan_log_bytes
from hudi_ds.merge.modes import PARTIAL_UPDATE_PAYLOAD
from hudi_ds.services import ServiceContext, compaction
from tests.conftest import table_options

SCHEMA = pa.schema(
    [
        ("id", pa.string()),
        ("ts", pa.int64()),
        ("name", pa.string()),
        ("price", pa.float64()),
        ("note", pa.string()),
    ]
)
TYPES = ["MERGE_ON_READ", "COPY_ON_WRITE"]


def opts(table_type: str, fmt: str = "parquet", **extra: str) -> dict[str, str]:
    o = {
        **table_options("p", table_type=table_type, buckets=1),
        "hoodie.logfile.data.block.format": fmt,
        "hoodie.write.partial.updates": "true",
    }
    o.update(extra)
    return o


def base_rows() -> pa.Table:
    return pa.Table.from_pylist(
        [
            {"id": "a", "ts": 1, "name": "alice", "price": 1.0, "note": "n1"},
            {"id": "b", "ts": 1, "name": "bob", "price": 2.0, "note": None},
        ],
        schema=SCHEMA,
    )


def state(path: str) -> dict[str, tuple]:
    t = hudi_ds.read(path)
    return {r["id"]: (r["ts"], r["name"], r["price"], r["note"]) for r in t.to_pylist()}


def data_blocks(path: str) -> list:
    out = []
    for f in sorted(Path(path).rglob(".*.log.*")):
        out.extend(
            b for b in scan_log_bytes(f.read_bytes()).blocks if b.block_type != BlockType.DELETE
        )
    return out


@pytest.mark.parametrize("version", ["6", "8", "9"])
@pytest.mark.parametrize("fmt", ["parquet", "avro"])
@pytest.mark.parametrize("table_type", TYPES)
def test_partial_update_keeps_other_columns(
    tmp_path: Path, table_type: str, fmt: str, version: str
) -> None:
    p = str(tmp_path / "t")
    o = opts(table_type, fmt, **{"hoodie.write.table.version": version})
    hudi_ds.write(p, base_rows(), o)
    # price only; a null written explicitly is a value (it replaces the stored one)
    hudi_ds.write(
        p, pa.table({"id": ["a", "b"], "ts": pa.array([2, 2], pa.int64()), "price": [9.0, None]}), o
    )
    # a partial update of a new key: the columns it lacks are null
    hudi_ds.write(p, pa.table({"id": ["c"], "ts": pa.array([1], pa.int64()), "name": ["carol"]}), o)
    # a late partial update (older ts) loses under event time
    hudi_ds.write(p, pa.table({"id": ["a"], "ts": pa.array([0], pa.int64()), "note": ["late"]}), o)
    assert state(p) == {
        "a": (2, "alice", 9.0, "n1"),
        "b": (2, "bob", None, None),
        "c": (1, "carol", None, None),
    }
    if table_type == "MERGE_ON_READ":
        blocks = data_blocks(p)
        partial = [b for b in blocks if b.header.get(HeaderKey.IS_PARTIAL) == "true"]
        assert len(partial) == 3 and len(blocks) == 4
        fields = [f["name"] for f in json.loads(partial[0].schema)["fields"]]
        assert "price" in fields and "name" not in fields and "note" not in fields
        assert "_hoodie_record_key" in fields


@pytest.mark.parametrize("version", ["6", "9"])
@pytest.mark.parametrize("table_type", TYPES)
def test_partial_update_commit_time(tmp_path: Path, table_type: str, version: str) -> None:
    p = str(tmp_path / "t")
    o = opts(
        table_type,
        **{
            "hoodie.write.record.merge.mode": "COMMIT_TIME_ORDERING",
            "hoodie.write.table.version": version,
        },
    )
    hudi_ds.write(p, base_rows(), o)
    hudi_ds.write(p, pa.table({"id": ["a"], "ts": pa.array([0], pa.int64()), "note": ["late"]}), o)
    # two partial versions of a key in one batch, then a full one
    hudi_ds.write(
        p,
        pa.table({"id": ["b", "b"], "ts": pa.array([5, 6], pa.int64()), "name": ["b5", "b6"]}),
        o,
    )
    assert state(p) == {"a": (0, "alice", 1.0, "late"), "b": (6, "b6", 2.0, None)}


@pytest.mark.parametrize("table_type", TYPES)
def test_partial_update_in_one_batch_under_event_time(tmp_path: Path, table_type: str) -> None:
    """Event time + partial rows is not associative: nothing is pre-combined, readers fold."""
    p = str(tmp_path / "t")
    o = opts(table_type)
    hudi_ds.write(p, base_rows(), o)
    hudi_ds.write(
        p,
        pa.table(
            {
                "id": ["a", "a", "b"],
                "ts": pa.array([5, 3, 0], pa.int64()),
                "price": [5.0, 3.0, 0.0],
            }
        ),
        o,
    )
    assert state(p) == {"a": (5, "alice", 5.0, "n1"), "b": (1, "bob", 2.0, None)}


def test_partial_blocks_compact_to_full_rows(tmp_path: Path) -> None:
    p = str(tmp_path / "t")
    o = opts("MERGE_ON_READ")
    hudi_ds.write(p, base_rows(), o)
    hudi_ds.write(p, pa.table({"id": ["a"], "ts": pa.array([2], pa.int64()), "name": ["al"]}), o)
    hudi_ds.write(p, pa.table({"id": ["b"], "ts": pa.array([3], pa.int64()), "note": ["nb"]}), o)
    before = state(p)
    ctx = ServiceContext.open(p, o)
    instant = compaction.schedule_compaction(ctx)
    assert instant is not None
    compaction.run_compaction(ctx, instant)
    assert state(p) == before == {"a": (2, "al", 1.0, "n1"), "b": (3, "bob", 2.0, "nb")}
    # and later partial updates apply on top of the compacted base file
    hudi_ds.write(p, pa.table({"id": ["a"], "ts": pa.array([4], pa.int64()), "price": [4.0]}), o)
    assert state(p)["a"] == (4, "al", 4.0, "n1")


def test_partial_update_needs_keys_and_ordering(tmp_path: Path) -> None:
    from hudi_ds.errors import SchemaError

    p = str(tmp_path / "t")
    o = opts("MERGE_ON_READ")
    hudi_ds.write(p, base_rows(), o)
    with pytest.raises(SchemaError, match="ordering column 'ts'"):
        hudi_ds.write(p, pa.table({"id": ["a"], "price": [1.0]}), o)


STRICT = pa.schema(
    [
        pa.field("id", pa.string(), nullable=False),
        pa.field("ts", pa.int64(), nullable=False),
        pa.field("name", pa.string(), nullable=False),
        pa.field("price", pa.float64()),
    ]
)


@pytest.mark.parametrize("table_type", TYPES)
def test_partial_update_by_several_tasks_with_required_columns(
    tmp_path: Path, table_type: str
) -> None:
    """Tasks that are not exclusive writers (Spark): COW stages partial rows, the commit merges
    them; a required column the partial rows leave out is taken from the stored row."""
    from hudi_ds.services import run_post_commit_services
    from hudi_ds.write.client import WriteClient

    p = str(tmp_path / "t")
    o = opts(table_type)
    full = pa.Table.from_pylist(
        [{"id": k, "ts": 1, "name": k.upper(), "price": 1.0} for k in "abcd"], schema=STRICT
    )
    hudi_ds.write(p, full, o)
    upd = pa.table(
        {"id": list("abcd"), "ts": pa.array([2] * 4, pa.int64()), "price": [2.0, 3.0, 4.0, 5.0]}
    )
    client = WriteClient(p, o, post_commit=run_post_commit_services)
    instant = client.start(upd.schema)
    statuses = []
    for task, rows in enumerate((upd.slice(0, 2), upd.slice(2, 2))):
        w = client.task_writer(instant, task, 0, 0, exclusive=False)
        w.write(rows)
        statuses.extend(w.close())
    client.commit(instant, statuses)
    got = {r["id"]: (r["ts"], r["name"], r["price"]) for r in hudi_ds.read(p).to_pylist()}
    assert got == {"a": (2, "A", 2.0), "b": (2, "B", 3.0), "c": (2, "C", 4.0), "d": (2, "D", 5.0)}


@pytest.mark.parametrize(
    ("extra", "why"),
    [
        ({"hoodie.datasource.write.payload.class": PARTIAL_UPDATE_PAYLOAD}, "IGNORE_DEFAULTS"),
        ({"hoodie.index.type": "GLOBAL_SIMPLE"}, "global index GLOBAL_SIMPLE"),
        (
            {
                "hoodie.write.record.merge.mode": "CUSTOM",
                "hoodie.write.record.merge.custom.implementation.classes": (
                    "hudi_ds.merge.payloads.DefaultMerger"
                ),
            },
            "merge mode is CUSTOM",
        ),
    ],
)
@pytest.mark.parametrize("version", ["8", "9"])
def test_no_partial_blocks_where_hudi_1x_writes_none(
    tmp_path: Path, version: str, extra: dict[str, str], why: str
) -> None:
    """Hudi 1.x writes IS_PARTIAL blocks into a version 8+ MOR table only under a built-in
    merge mode without a partial update mode and with a non-global index; otherwise a partial
    update is refused before anything is written (whole rows still go in)."""
    p = tmp_path / "t"
    o = opts("MERGE_ON_READ", **{"hoodie.write.table.version": version, **extra})
    if "GLOBAL" in why:
        del o["hoodie.bucket.index.num.buckets"]
    hudi_ds.write(str(p), base_rows(), o)
    before = sorted(f.name for f in p.rglob("*"))
    with pytest.raises(ConfigError, match=re.escape(why)):
        hudi_ds.write(str(p), pa.table({"id": ["a"], "ts": pa.array([2], pa.int64())}), o)
    assert sorted(f.name for f in p.rglob("*")) == before
