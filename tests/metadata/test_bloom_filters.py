"""The metadata table's ``bloom_filters`` partition (hudi_ds.metadata.bloom_filters) and the
BLOOM index reading it (``hoodie.bloom.index.use.metadata``).

No fixture carries the partition, so its records are checked against what they stand for: for
every committed base file on storage, the bloom filter its Parquet footer holds (read here with
pyarrow), and no live record for any other file; the records are decoded with the reference
Avro schemas of ``HoodieMetadataRecord`` (``/work/shared/reference/avro-schemas``).

Tables: 3 partitions ``p0..p2``, 30 keys, batches of 12 overlapping keys (tests.builders.batch).
"""

from __future__ import annotations

import io
import json
import logging
from pathlib import Path
from typing import Any

import fastavro
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import hudi_ds
from hudi_ds.index import bloom as index_bloom
from hudi_ds.index.bloom import FOOTER_RANGES, bloom_lookup
from hudi_ds.layout.bloom_filter import BLOOM_FILTER_FOOTER, BLOOM_FILTER_TYPE_CODE_FOOTER
from hudi_ds.layout.naming import parse_base_file_name
from hudi_ds.metadata.bloom_filters import (
    BLOOM_FILTERS_PARTITION,
    FileBloomFilter,
    bloom_filter_key,
    decode_bloom_value,
    encode_bloom_value,
    indexed_files,
    read_bloom_filters,
)
from hudi_ds.metadata.records import declared_partitions, record_schema
from hudi_ds.services import ServiceContext, clean, compaction, rollback
from hudi_ds.storage import Storage
from hudi_ds.table_config import TableConfig
from tests.builders import apply
from tests.conftest import hudi_rs_table
from tests.index.test_simple import table_slices
from tests.metadata.rli_support import open_timelines
from tests.metadata.test_writer import (
    Rows,
    _crash,
    assert_in_step,
    batch,
    check_rows,
    committed_files,
    new_table_partitions,
    options,
)
from tests.write.fixture_model import data_row_set

REFERENCE = Path("/work/shared/reference/avro-schemas")
BLOOM = {"hoodie.metadata.index.bloom.filter.enable": "true"}


def footer_filters(root: Path) -> dict[str, tuple[str, bytes]]:
    """Record key -> (type code, serialised filter) of every committed base file's footer."""
    out = {}
    for part, names in committed_files(root).items():
        for name in names:
            if parse_base_file_name(name) is None:
                continue
            meta = pq.read_metadata(root / part / name).metadata or {}
            code = meta.get(BLOOM_FILTER_TYPE_CODE_FOOTER.encode(), b"SIMPLE").decode()
            out[bloom_filter_key(part, name)] = (code, meta[BLOOM_FILTER_FOOTER.encode()])
    return out


def mdt_filters(root: Path) -> dict[str, tuple[str, bytes]]:
    """Record key -> (type code, serialised filter) of the live records of the partition."""
    cfg, data_tl, mdt, mdt_tl = open_timelines(root)
    recs = read_bloom_filters(mdt, mdt_tl, data_tl, cfg.table_version)
    return {k: (r.type_code, r.serialized) for k, r in recs.items() if not r.deleted}


def assert_bloom_in_step(root: Path) -> None:
    assert BLOOM_FILTERS_PARTITION in declared_partitions(TableConfig.load(Storage(str(root))))
    expected = footer_filters(root)
    got = mdt_filters(root)
    assert sorted(got) == sorted(expected)
    assert got == expected


def in_step(root: Path) -> None:
    """files and bloom_filters equal storage; hudi-rs reads the table with the MDT on and off."""
    assert_in_step(root)
    assert_bloom_in_step(root)
    rows = data_row_set(hudi_ds.read(str(root)))
    assert data_row_set(hudi_rs_table(str(root))) == rows
    assert data_row_set(hudi_rs_table(str(root), {"hoodie.metadata.enable": "true"})) == rows


@pytest.mark.parametrize("version", [6, 9])
def test_records_in_javas_layout(version: int) -> None:
    """A record written with hudi_ds' schema decodes with the reference schema of Java's
    ``HoodieMetadataRecord`` (type 4, ``BloomFilterMetadata``, key blank) and back."""
    schema = record_schema(version)
    rec = FileBloomFilter("DYNAMIC_V0", "20240101000000000", b"/wAAAB4BAA==")
    value = encode_bloom_value(rec, schema)
    name = "v6" if version == 6 else "v9"
    ref = json.loads((REFERENCE / f"HoodieMetadataRecord.{name}.written.avsc").read_text())
    got = fastavro.schemaless_reader(io.BytesIO(value), fastavro.parse_schema(ref), None)
    assert isinstance(got, dict)
    assert got["key"] == "" and got["type"] == 4
    assert got["filesystemMetadata"] is None and got["ColumnStatsMetadata"] is None
    assert got["BloomFilterMetadata"] == {
        "type": "DYNAMIC_V0",
        "timestamp": "20240101000000000",
        "bloomFilter": b"/wAAAB4BAA==",
        "isDeleted": False,
    }
    assert decode_bloom_value(value, schema) == rec
    # the key: PartitionIndexID ('.' when non-partitioned) + FileIndexID, 12 + 24 base64 chars
    key = bloom_filter_key("", "f1_0-0-0_001.parquet")
    assert len(key) == 36 and key != bloom_filter_key("p0", "f1_0-0-0_001.parquet")
    assert key == bloom_filter_key(".", "f1_0-0-0_001.parquet")


_SERVICES = {
    "hoodie.metadata.compact.max.delta.commits": "2",
    "hoodie.cleaner.commits.retained": "1",
    **BLOOM,
}


@pytest.mark.parametrize("version", [6, 9])
@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_new_table_stays_in_step(table_type: str, version: int, tmp_path: Path) -> None:
    """A new table asking for bloom filters gets the partition at the MDT's creation; it
    stays equal to the base files' footers through upserts (the MDT compacted every second
    deltacommit: new base files, older slices cleaned), a compaction, a clean and a
    rollback; hudi-rs reads the table with the MDT on and off."""
    root = tmp_path / "t"
    # MOR: the bucket index, whose updates go to logs (compacted below)
    opts = options(table_type, version, bucket=table_type == "MERGE_ON_READ", **_SERVICES)
    model: Rows = {}
    for k in (1, 2, 3):
        t = batch(k)
        hudi_ds.write(str(root), t, opts)
        model = apply(model, t)
    stats = new_table_partitions(version).split(",")
    assert set(declared_partitions(TableConfig.load(Storage(str(root))))) == {
        *stats,
        BLOOM_FILTERS_PARTITION,
    }
    in_step(root)
    ctx = ServiceContext.open(str(root), opts)
    if table_type == "MERGE_ON_READ":
        assert compaction.schedule_compaction(ctx) is not None
        compaction.run_compaction(ctx)
    t = batch(4)
    hudi_ds.write(str(root), t, opts)
    model = apply(model, t)
    assert clean.clean(ServiceContext.open(str(root), opts)) is not None
    in_step(root)
    last = hudi_ds.write(str(root), batch(5), opts)
    assert last is not None
    rollback.rollback(ServiceContext.open(str(root), opts), last)
    in_step(root)
    check_rows(root, model)
    mdt = root / ".hoodie" / "metadata" / BLOOM_FILTERS_PARTITION
    bases = sorted(p.name for p in mdt.iterdir() if p.name.endswith(".hfile"))
    assert len({n.split("_")[0] for n in bases}) == 4  # hoodie...file.group.count: 4
    assert len(bases) <= 8  # two slices per file group: the older ones cleaned


@pytest.mark.parametrize("version", [6, 9])
def test_restore_tombstones_what_it_undoes(version: int, tmp_path: Path) -> None:
    """A restore to a savepoint: the base files written after it lose their records (Java
    marks them deleted), those before keep theirs."""
    root = tmp_path / "t"
    opts = options("COPY_ON_WRITE", version, bucket=False, **BLOOM)
    first = hudi_ds.write(str(root), batch(1), opts)
    assert first is not None
    rollback.create_savepoint(ServiceContext.open(str(root), opts), first)
    for k in (2, 3):
        hudi_ds.write(str(root), batch(k), opts)
    rollback.restore(ServiceContext.open(str(root), opts), first)
    in_step(root)
    check_rows(root, apply({}, batch(1)))


@pytest.mark.parametrize("spec", ["after_files", "metadata:2", "commit_write"])
@pytest.mark.parametrize("version", [6, 9])
def test_killed_write_leaves_the_partition_in_step(spec: str, version: int, tmp_path: Path) -> None:
    """A write killed before, inside and after its MDT deltacommit: the next write rolls it
    back and the partition equals the footers again."""
    root = tmp_path / "t"
    opts = options("COPY_ON_WRITE", version, bucket=False, **BLOOM)
    for k in (1, 2):
        hudi_ds.write(str(root), batch(k), opts)
    assert _crash(spec, lambda: hudi_ds.write(str(root), batch(3), opts)) == 137
    hudi_ds.write(str(root), batch(4), opts)
    in_step(root)


@pytest.mark.parametrize("version", [6, 9])
def test_enabled_on_an_existing_table_then_disabled(version: int, tmp_path: Path) -> None:
    """Enabling it on a table with a metadata table builds it from the committed base files
    (version 9: an MDT-only deltacommit; version 6: the MDT created again with it); a write
    without the option keeps it; false removes it."""
    root = tmp_path / "t"
    opts = options("COPY_ON_WRITE", version, bucket=False)
    for k in (1, 2):
        hudi_ds.write(str(root), batch(k), opts)
    stats = new_table_partitions(version).split(",")
    assert declared_partitions(TableConfig.load(Storage(str(root)))) == stats
    hudi_ds.write(str(root), batch(3), {**opts, **BLOOM})
    in_step(root)
    hudi_ds.write(str(root), batch(4), opts)
    in_step(root)
    off = {**opts, "hoodie.metadata.index.bloom.filter.enable": "false"}
    hudi_ds.write(str(root), batch(5), off)
    assert declared_partitions(TableConfig.load(Storage(str(root)))) == stats
    assert not (root / ".hoodie" / "metadata" / BLOOM_FILTERS_PARTITION).exists()
    assert_in_step(root)


@pytest.mark.parametrize("spec", ["metadata:1", "metadata:2"])
def test_killed_build_is_built_again(spec: str, tmp_path: Path) -> None:
    """A write killed right after building the partition (before declaring it) or inside its
    own MDT deltacommit: the next write removes or keeps what it finds and the partition ends
    declared and equal to the footers."""
    root = tmp_path / "t"
    opts = options("COPY_ON_WRITE", 9, bucket=False)
    for k in (1, 2):
        hudi_ds.write(str(root), batch(k), opts)
    with_bloom = {**opts, **BLOOM}
    assert _crash(spec, lambda: hudi_ds.write(str(root), batch(3), with_bloom)) == 137
    hudi_ds.write(str(root), batch(4), with_bloom)
    in_step(root)


def test_column_list_beyond_the_key_is_ignored_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    root = tmp_path / "t"
    opts = options("COPY_ON_WRITE", 9, bucket=False, **BLOOM)
    listed = {**opts, "hoodie.metadata.index.bloom.filter.column.list": "id,v"}
    with caplog.at_level(logging.WARNING, logger="hudi_ds.write"):
        hudi_ds.write(str(root), batch(1), listed)
    assert "hoodie.metadata.index.bloom.filter.column.list=id,v" in caplog.text
    assert "v ignored" in caplog.text
    assert_bloom_in_step(root)


# -- hoodie.bloom.index.use.metadata -----------------------------------------------------------


def _bloom_table(root: Path, version: int = 9, **over: str) -> None:
    opts = options(
        "COPY_ON_WRITE",
        version,
        bucket=False,
        **{
            "hoodie.metadata.index.column.stats.enable": "true",
            "hoodie.parquet.small.file.limit": "0",  # a file group per batch and partition
            "hoodie.metadata.compact.max.delta.commits": "2",  # filters in base HFiles too
            **BLOOM,
            **over,
        },
    )
    opts["hoodie.index.type"] = "BLOOM"  # (options() sets SIMPLE without a bucket index)
    for k in (1, 2, 3):
        hudi_ds.write(str(root), batch(k), opts)


def _lookup(root: Path, keys: list[str], parts: list[str], use: bool) -> tuple[list, list[str]]:
    FOOTER_RANGES.clear()
    storage, slices, spec = table_slices(root)
    from dataclasses import replace

    spec = replace(spec, use_metadata=use)
    loc = bloom_lookup(storage, slices, pa.array(keys), pa.array(parts), spec)
    data_reads = [p for p in storage.opened if not p.startswith(".hoodie")]
    got = list(zip(loc.file_id.to_pylist(), loc.partition.to_pylist(), strict=True))
    return got, data_reads


@pytest.mark.parametrize("version", [6, 9])
def test_lookup_through_the_metadata_table(version: int, tmp_path: Path) -> None:
    """The same locations with and without ``use.metadata``; with it, no data file is opened
    for keys the table does not hold (filters and key ranges come from the MDT), and only the
    files holding a key are opened for the others."""
    root = tmp_path / "t"
    _bloom_table(root, version)
    rows = hudi_ds.read(str(root), columns=["id", "p", "_hoodie_file_name"]).to_pylist()
    rows = [r for r in rows if r["_hoodie_file_name"] == rows[0]["_hoodie_file_name"]]
    keys = [r["id"] for r in rows] + ["new1", "new2"]
    parts = [r["p"] for r in rows] + ["p0", "p1"]
    off, off_reads = _lookup(root, keys, parts, False)
    on, on_reads = _lookup(root, keys, parts, True)
    assert on == off
    assert all(fid is not None for fid, _ in on[: len(rows)]) and on[-2:] == [(None, None)] * 2
    holding = {(p, fid) for fid, p in on if fid is not None}
    assert len(holding) == 1 and len(on_reads) == 1 < len(off_reads)
    _, new_reads = _lookup(root, ["new1", "new2", "zz"], ["p0", "p1", "p2"], True)
    assert new_reads == []
    _, footer_reads = _lookup(root, ["new1", "new2", "zz"], ["p0", "p1", "p2"], False)
    assert footer_reads


def test_lookup_falls_back_to_the_footers(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Without the partition the footers are read, with a warning naming the option."""
    root = tmp_path / "t"
    _bloom_table(root, **{"hoodie.metadata.index.bloom.filter.enable": "false"})
    assert BLOOM_FILTERS_PARTITION not in declared_partitions(TableConfig.load(Storage(str(root))))
    with caplog.at_level(logging.WARNING, logger="hudi_ds.index"):
        got, reads = _lookup(root, ["k1", "new"], ["p1", "p0"], True)
    assert "hoodie.bloom.index.use.metadata" in caplog.text and "no bloom_filters" in caplog.text
    assert got[0][0] is not None and got[1] == (None, None) and reads


def test_upserts_with_use_metadata(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Upserts tagged through the metadata table (no fallback to the footers): full rows as
    the model says, read back by hudi-rs too."""
    answered = []

    def counted(*args: Any) -> Any:
        found, why = indexed_files(*args)
        answered.append(found is not None)
        return found, why

    monkeypatch.setattr(index_bloom, "indexed_files", counted)
    root = tmp_path / "t"
    opts = options(
        "MERGE_ON_READ",
        9,
        bucket=False,
        **{"hoodie.bloom.index.use.metadata": "true", **BLOOM},
    )
    opts["hoodie.index.type"] = "BLOOM"  # (options() sets SIMPLE without a bucket index)
    model: Rows = {}
    for k in (1, 2, 3):
        t = batch(k)
        with caplog.at_level(logging.INFO, logger="hudi_ds.index"):
            hudi_ds.write(str(root), t, opts)
        model = apply(model, t)
    assert "footers" not in caplog.text
    assert answered and all(answered)
    in_step(root)
    check_rows(root, model)


def test_cli_builds_and_rebuild_keeps_the_partition(tmp_path: Path) -> None:
    """``hudi-py metadata PATH --build bloom_filters`` builds it for a version 9 table from its
    base files; ``--rebuild`` keeps it; a version 6 table is refused, unchanged."""
    from tests.test_cli import run, run_json

    root = tmp_path / "t"
    opts = options("COPY_ON_WRITE", 9, bucket=False)
    for k in (1, 2):
        hudi_ds.write(str(root), batch(k), opts)
    out = run_json("metadata", str(root), "--build", BLOOM_FILTERS_PARTITION)
    assert out["built"] == [BLOOM_FILTERS_PARTITION]
    in_step(root)
    run_json("metadata", str(root), "--rebuild")
    in_step(root)
    hudi_ds.write(str(root), batch(3), opts)
    in_step(root)
    v6 = tmp_path / "v6"
    hudi_ds.write(str(v6), batch(1), options("COPY_ON_WRITE", 6, bucket=False))
    before = (v6 / ".hoodie" / "hoodie.properties").read_bytes()
    code, _, err = run("metadata", str(v6), "--build", BLOOM_FILTERS_PARTITION)
    assert code != 0 and "versions 8 and 9" in err
    assert (v6 / ".hoodie" / "hoodie.properties").read_bytes() == before


def test_version_6_keeps_its_record_index_when_bloom_filters_are_added(tmp_path: Path) -> None:
    """On version 6 the metadata table is created again to add bloom_filters: a record index
    the table has is built again with it, not lost."""
    root = tmp_path / "t"
    opts = options("COPY_ON_WRITE", 6, bucket=False)
    rli = {**opts, "hoodie.metadata.record.index.enable": "true"}
    hudi_ds.write(str(root), batch(1), rli)
    assert "record_index" in declared_partitions(TableConfig.load(Storage(str(root))))
    hudi_ds.write(str(root), batch(2), {**opts, **BLOOM})
    declared = declared_partitions(TableConfig.load(Storage(str(root))))
    assert {"record_index", BLOOM_FILTERS_PARTITION} <= set(declared)
    in_step(root)
