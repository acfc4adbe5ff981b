"""The bloom filters of the base files a compaction writes.

A MOR table of 2 partitions x 2 buckets, small dynamic filters (60 keys a row, at most 180):
200 keys inserted and compacted (log-only slices: filters built anew), then compacted again
after each of: 60 new keys (nothing removed: the old filter carried, equal to a fresh one),
updates of 100 keys, some late, plus 60 new keys (carried: every key, the rows of a fresh
filter), and deletes of 12 keys (a carried superset that still holds the deleted keys, within
the bounds of :func:`~hudi_ds.write.cow_merge.carried_bloom_filter`), then deletes of 80
keys (past those bounds: built anew).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import hudi_ds
from hudi_ds.layout.bloom_filter import (
    BLOOM_FILTER_FOOTER,
    BLOOM_FILTER_TYPE_CODE_FOOTER,
    BloomFilter,
    BloomFilterSpec,
)
from hudi_ds.layout.parquet import MAX_RECORD_KEY_FOOTER, MIN_RECORD_KEY_FOOTER
from hudi_ds.schema.meta import RECORD_KEY_METADATA_FIELD
from hudi_ds.services import ServiceContext, compaction, compaction_execute
from hudi_ds.write import cow_merge
from tests.conftest import assert_rows, hudi_rs_table, table_options

COLS = ["id", "ts", "dt", "v"]
SPEC = BloomFilterSpec("DYNAMIC_V0", 60, 0.001, 180)
OPTS = {
    **table_options("mor", partition="dt", table_type="MERGE_ON_READ", buckets=2),
    "hoodie.datasource.compaction.async.enable": "false",
    "hoodie.bloom.index.filter.type": "DYNAMIC_V0",
    "hoodie.index.bloom.num_entries": "60",
    "hoodie.index.bloom.fpp": "0.001",
    "hoodie.bloom.index.filter.dynamic.max.entries": "180",
}


def _rows(ids: np.ndarray, ts: np.ndarray) -> pa.Table:
    return pa.table(
        {
            "id": pa.array([f"id-{i:05d}" for i in ids]),
            "ts": pa.array(ts, pa.int64()),
            "dt": pa.array([f"2024-01-0{i % 2 + 1}" for i in ids]),
            "v": pa.array([float(i) for i in ids]),
        }
    )


def _filters(path: str) -> list[tuple[BloomFilter, pa.Array]]:
    """Each latest base file's filter and keys (its key range footers checked)."""
    table = hudi_ds.HudiTable(path)
    out = []
    for fs in table.file_slices():
        assert fs.base_file is not None and not fs.log_files
        pf = pq.ParquetFile(table.storage.full_path(fs.base_file.path))
        keys = pf.read(columns=[RECORD_KEY_METADATA_FIELD]).column(0).combine_chunks()
        meta = pf.metadata.metadata
        code = meta.get(BLOOM_FILTER_TYPE_CODE_FOOTER.encode(), b"").decode() or None
        out.append((BloomFilter.parse(meta[BLOOM_FILTER_FOOTER.encode()], code), keys))
        assert meta[MIN_RECORD_KEY_FOOTER.encode()].decode() == min(keys.to_pylist())
        assert meta[MAX_RECORD_KEY_FOOTER.encode()].decode() == max(keys.to_pylist())
    assert len(out) == 4
    return out


def _fresh(keys: pa.Array) -> BloomFilter:
    bf = SPEC.new_filter()
    bf.add(keys)
    return bf


def test_compaction_carries_the_base_files_bloom_filters(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the carried filter on files this small (in use from MIN_CARRIED_KEYS keys)
    monkeypatch.setattr(cow_merge, "MIN_CARRIED_KEYS", 0)
    carried: list[bool] = []
    real = compaction_execute.carried_bloom_filter

    def spy(*args: Any, **kwargs: Any) -> BloomFilter | None:
        out = real(*args, **kwargs)
        carried.append(out is not None)
        return out

    monkeypatch.setattr(compaction_execute, "carried_bloom_filter", spy)
    path = str(tmp_path / "t")
    model: dict[str, tuple] = {}

    def write(t: pa.Table, op: str = "upsert") -> None:
        hudi_ds.write(path, t, {**OPTS, "hoodie.datasource.write.operation": op})
        for r in zip(*(t.column(c).to_pylist() for c in COLS), strict=True):
            if r[0] not in model or r[1] >= model[r[0]][1]:
                model[r[0]] = r

    def compact() -> list[tuple[BloomFilter, pa.Array]]:
        carried.clear()
        ctx = ServiceContext.open(path, OPTS)
        assert compaction.schedule_compaction(ctx) is not None
        compaction.run_compaction(ctx)
        want = list(model.values())
        assert_rows(hudi_ds.read(path, columns=COLS), want, COLS)
        assert_rows(hudi_rs_table(path), want, COLS)
        return _filters(path)

    write(_rows(np.arange(200), np.full(200, 10)), "insert")
    for bf, keys in compact():  # log-only slices: built anew
        assert bf.serialize() == _fresh(keys).serialize()
    assert carried == []

    # new keys only: the old keys stay in order, the new ones come after -- a fresh filter
    write(_rows(np.arange(200, 260), np.full(60, 20)))
    for bf, keys in compact():
        assert bf.serialize() == _fresh(keys).serialize()
    assert carried == [True] * 4

    # updates (a third late, kept as they were) and new keys: every key, a fresh one's rows
    rng = np.random.default_rng(7)
    upd = rng.choice(260, 100, replace=False)
    ts = np.where(rng.random(100) < 0.3, 5, 30)
    write(_rows(np.concatenate([upd, np.arange(260, 320)]), np.concatenate([ts, [30] * 60])))
    for bf, keys in compact():
        fresh = _fresh(keys)
        assert bf.might_contain(keys).all()
        assert (len(bf.rows), bf.current) == (len(fresh.rows), fresh.current)
    assert carried == [True] * 4

    # deletes: a superset holding the deleted keys too, in no more rows than a fresh filter
    dels = _rows(rng.choice(320, 12, replace=False), np.zeros(12, np.int64))
    hudi_ds.write(
        path, dels.select(["id", "dt"]), {**OPTS, "hoodie.datasource.write.operation": "delete"}
    )
    gone = dels.column("id").combine_chunks()
    for k in gone.to_pylist():
        del model[k]
    held = np.zeros(len(gone), dtype=bool)
    for bf, keys in compact():
        fresh = _fresh(keys)
        assert bf.might_contain(keys).all()
        assert len(bf.rows) == len(fresh.rows)
        count = (len(bf.rows) - 1) * bf.nr + bf.current
        assert len(keys) <= count <= len(bf.rows) * bf.nr
        held |= bf.might_contain(gone)
    assert carried == [True] * 4
    assert held.all()  # fresh filters at fpp 0.001 would hold about none of them

    # past the bounds (more than one removed key in 8 of a file's): built anew
    dels = _rows(rng.choice(320, 80, replace=False), np.zeros(80, np.int64))
    hudi_ds.write(
        path, dels.select(["id", "dt"]), {**OPTS, "hoodie.datasource.write.operation": "delete"}
    )
    for k in dels.column("id").to_pylist():
        model.pop(k, None)
    for bf, keys in compact():
        assert bf.serialize() == _fresh(keys).serialize()
    assert carried == [False] * 4
