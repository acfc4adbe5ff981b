"""``hoodie.parquet.bloom.filter.enabled``: base files without key footers where nothing reads
them, with them wherever an index or the metadata table does.

Java ``HoodieFileWriterFactory.enableBloomFilter``: meta fields populated and (the option or a
BLOOM index type). Here also whenever the metadata table keeps a bloom_filters partition.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import hudi_ds
from hudi_ds.errors import ConfigError
from hudi_ds.layout.bloom_filter import (
    BLOOM_FILTER_FOOTER,
    BLOOM_FILTER_TYPE_CODE_FOOTER,
    BloomFilter,
)
from hudi_ds.layout.parquet import MAX_RECORD_KEY_FOOTER, MIN_RECORD_KEY_FOOTER
from hudi_ds.services import ServiceContext, compaction
from tests.conftest import assert_rows, hudi_rs_table, table_options

COLS = ["id", "ts", "dt", "v"]
OFF = {"hoodie.parquet.bloom.filter.enabled": "false"}


def _rows(ids: range, ts: int) -> pa.Table:
    return pa.table(
        {
            "id": [f"id-{i:03d}" for i in ids],
            "ts": pa.array([ts] * len(ids), pa.int64()),
            "dt": [f"2024-01-0{i % 2 + 1}" for i in ids],
            "v": [float(i * ts) for i in ids],
        }
    )


def _footers(path: str) -> list[set[str]]:
    """The key footers of every latest base file (at least one)."""
    table = hudi_ds.HudiTable(path)
    wanted = {BLOOM_FILTER_FOOTER, MIN_RECORD_KEY_FOOTER, MAX_RECORD_KEY_FOOTER}
    out = []
    for fs in table.file_slices():
        if fs.base_file is None:
            continue
        meta = pq.ParquetFile(table.storage.full_path(fs.base_file.path)).metadata.metadata
        out.append({k.decode() for k in meta or {}} & wanted)
    assert out
    return out


def _expected(n: int, ts: int) -> list[tuple]:
    return [(f"id-{i:03d}", ts, f"2024-01-0{i % 2 + 1}", float(i * ts)) for i in range(n)]


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_off_writes_base_files_without_key_footers(tmp_path: Path, table_type: str) -> None:
    path = str(tmp_path / "t")
    opts = {
        **table_options("t", partition="dt", table_type=table_type),
        "hoodie.datasource.compaction.async.enable": "false",
        **OFF,
    }
    hudi_ds.write(path, _rows(range(40), 1), opts)
    hudi_ds.write(path, _rows(range(40), 2), opts)  # a COW merge / MOR log blocks
    if table_type == "MERGE_ON_READ":
        ctx = ServiceContext.open(path, OFF)
        inst = compaction.schedule_compaction(ctx)
        assert inst is not None
        compaction.run_compaction(ctx, inst)
    assert all(f == set() for f in _footers(path))
    assert_rows(hudi_ds.read(path, columns=COLS), _expected(40, 2), COLS)
    assert_rows(hudi_rs_table(path).select(COLS), _expected(40, 2), COLS)


def test_on_by_default_and_for_a_compaction_without_the_option(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    opts = {
        **table_options("t", partition="dt", table_type="MERGE_ON_READ"),
        "hoodie.datasource.compaction.async.enable": "false",
    }
    hudi_ds.write(path, _rows(range(40), 1), {**opts, **OFF})
    ctx = ServiceContext.open(path)
    inst = compaction.schedule_compaction(ctx)
    assert inst is not None
    compaction.run_compaction(ctx, inst)
    full = {BLOOM_FILTER_FOOTER, MIN_RECORD_KEY_FOOTER, MAX_RECORD_KEY_FOOTER}
    assert all(f == full for f in _footers(path))


@pytest.mark.parametrize(
    "extra",
    [
        {"hoodie.index.type": "BLOOM", "hoodie.bucket.index.num.buckets": None},
        {"hoodie.metadata.index.bloom.filter.enable": "true", "hoodie.metadata.enable": "true"},
    ],
    ids=["bloom-index", "mdt-bloom-filters"],
)
def test_footers_stay_where_an_index_reads_them(tmp_path: Path, extra: dict) -> None:
    path = str(tmp_path / "t")
    opts = {**table_options("t", partition="dt", table_type="COPY_ON_WRITE"), **OFF, **extra}
    opts = {k: v for k, v in opts.items() if v is not None}
    hudi_ds.write(path, _rows(range(40), 1), opts)
    hudi_ds.write(path, _rows(range(0, 40, 2), 2), opts)
    full = {BLOOM_FILTER_FOOTER, MIN_RECORD_KEY_FOOTER, MAX_RECORD_KEY_FOOTER}
    assert all(f == full for f in _footers(path))
    # a later write that leaves the option out keeps the metadata table's partition fed too
    later = {k: v for k, v in opts.items() if k != "hoodie.metadata.index.bloom.filter.enable"}
    hudi_ds.write(path, _rows(range(1, 40, 2), 3), later)
    assert all(f == full for f in _footers(path))


def test_bloom_lookup_reads_the_keys_of_files_without_a_filter(tmp_path: Path) -> None:
    """A SIMPLE table's files written without filters, then upserted with the BLOOM index:
    its lookup reads their keys, nothing is duplicated."""
    path = str(tmp_path / "t")
    base = {**table_options("t", partition="dt", buckets=None), "hoodie.index.type": "SIMPLE"}
    hudi_ds.write(path, _rows(range(40), 1), {**base, **OFF})
    assert all(f == set() for f in _footers(path))
    hudi_ds.write(path, _rows(range(40), 2), {**base, "hoodie.index.type": "BLOOM"})
    assert_rows(hudi_ds.read(path, columns=COLS), _expected(40, 2), COLS)


def test_a_bad_value_is_refused_naming_the_option(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="hoodie.parquet.bloom.filter.enabled"):
        hudi_ds.write(
            str(tmp_path / "t"),
            _rows(range(4), 1),
            {**table_options("t"), "hoodie.parquet.bloom.filter.enabled": "maybe"},
        )
    assert not (tmp_path / "t" / ".hoodie").exists()


def test_a_merge_with_the_filter_on_builds_it_for_a_file_that_had_none(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    opts = table_options("t", partition="dt", table_type="COPY_ON_WRITE")
    hudi_ds.write(path, _rows(range(40), 1), {**opts, **OFF})
    hudi_ds.write(path, _rows(range(0, 40, 3), 2), opts)  # every file group merged
    table = hudi_ds.HudiTable(path)
    for fs in table.file_slices():
        assert fs.base_file is not None
        pf = pq.ParquetFile(table.storage.full_path(fs.base_file.path))
        meta = pf.metadata.metadata
        keys = pf.read(columns=["_hoodie_record_key"]).column(0)
        bf = BloomFilter.parse(
            meta[BLOOM_FILTER_FOOTER.encode()],
            (meta.get(BLOOM_FILTER_TYPE_CODE_FOOTER.encode()) or b"").decode() or None,
        )
        assert bf.might_contain(keys).all()
        assert meta[MIN_RECORD_KEY_FOOTER.encode()].decode() == min(keys.to_pylist())
