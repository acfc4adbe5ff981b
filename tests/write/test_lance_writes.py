"""Lance base files (``hoodie.table.base.file.format=LANCE``, Hudi 1.2), written with the
optional pylance (``hudi_ds[lance]``).

How Java writes them (``HoodieSparkLanceWriter`` over ``HoodieBaseLanceWriter``, through
``org.lance.file.LanceFileWriter``): one Lance file per base file,
``<fileId>_<token>_<instant>.lance``, in Lance file format 2.0 (footer version 0.3, every base
file of the six fixtures), the meta columns first, and the key footers Parquet keeps in its
footer -- ``org.apache.hudi.bloomfilter``, ``hoodie_bloom_filter_type_code``,
``hoodie_min_record_key``, ``hoodie_max_record_key`` (``HoodieBloomFilterWriteSupport
.finalizeMetadata``) -- as the schema metadata (``finalizeFooterMetadata`` ->
``LanceFileWriter.addSchemaMetadata``), nothing else there.

* The six Lance fixtures (Hudi 1.2, table version 9, each with a metadata table): the scenario
  of tests/write/fixture_model.py (upsert with a late update that loses under event time, new
  keys, a new partition; upsert again; delete), read back equal to the model by hudi_ds and by
  hudi-rs (0.5 reads Lance base files) with and without the metadata table; every base file
  written is a Lance file as Java writes one, and no Parquet base file appears.
* Without pylance a write is refused naming the package, the table byte-for-byte unchanged.
* A new table with ``hoodie.table.base.file.format=LANCE`` (table version 9, as Java 1.2
  creates it): written, updated, compacted (MOR), read back by hudi_ds and hudi-rs.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import hudi_ds
from hudi_ds.api import HudiTable
from hudi_ds.errors import ConfigError, UnsupportedError
from hudi_ds.layout.bloom_filter import BloomFilter
from hudi_ds.services import ServiceContext, compaction
from tests.conftest import hudi_rs_table
from tests.fixtures import require_base_file_reader
from tests.metadata.test_writer import assert_in_step
from tests.write.fixture_model import (
    WRITABLE_LANCE,
    check_merge_mode,
    data_row_set,
    read_props,
    scenario,
    tree_hashes,
)
from tests.write.test_fixture_writes import unzip

#: the schema metadata of every Lance base file Java writes (its key footers)
JAVA_FOOTER_KEYS = {
    "org.apache.hudi.bloomfilter",
    "hoodie_bloom_filter_type_code",
    "hoodie_min_record_key",
    "hoodie_max_record_key",
}


def without_pylance(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make ``import lance`` fail in this process, as without the optional extra."""
    monkeypatch.setitem(sys.modules, "lance", None)
    monkeypatch.setitem(sys.modules, "lance.file", None)


def _lance_file(path: Path) -> tuple[tuple[int, int], pa.Table]:
    from lance.file import LanceFileReader

    reader = LanceFileReader(str(path))
    md = reader.metadata()
    return (md.major_version, md.minor_version), reader.read_all().to_table()


def check_like_java(written: list[Path], java: Path) -> None:
    """Each written Lance base file is one as Java writes it: the file format version and
    schema (without metadata) of the Java-written file ``java`` of the same table, the key
    footers alone as schema metadata, holding the range and a bloom filter of its keys, and
    ``_hoodie_file_name`` its own name."""
    java_version, java_rows = _lance_file(java)
    assert written
    for path in written:
        version, rows = _lance_file(path)
        assert version == java_version == (0, 3), path
        assert rows.schema.remove_metadata() == java_rows.schema.remove_metadata(), path
        footer = {k.decode(): v.decode() for k, v in (rows.schema.metadata or {}).items()}
        # no key range in a file of no rows (finalizeMetadata adds it once a key was seen)
        ranged = {"hoodie_min_record_key", "hoodie_max_record_key"}
        assert set(footer) == (JAVA_FOOTER_KEYS if rows.num_rows else JAVA_FOOTER_KEYS - ranged)
        keys = rows.column("_hoodie_record_key")
        if rows.num_rows:
            mm = pc.min_max(keys)
            assert footer["hoodie_min_record_key"] == mm["min"].as_py()
            assert footer["hoodie_max_record_key"] == mm["max"].as_py()
        bf = BloomFilter.parse(
            footer["org.apache.hudi.bloomfilter"], footer["hoodie_bloom_filter_type_code"]
        )
        assert bf.might_contain(keys).all()
        assert set(rows.column("_hoodie_file_name").to_pylist()) <= {path.name}


@pytest.mark.parametrize("name", sorted(WRITABLE_LANCE))
def test_upsert_and_delete_into_lance_fixture(name: str, tmp_path: Path) -> None:
    require_base_file_reader(name)
    fx = WRITABLE_LANCE[name]
    root = unzip(name, tmp_path)
    before = read_props(root)
    assert before["hoodie.table.base.file.format"] == "LANCE"
    check_merge_mode(before, fx)
    java = sorted(root.rglob("*.lance"))
    sc = scenario(name, fx, HudiTable(str(root)).read())
    table = HudiTable(str(root))
    table.upsert(sc.upsert, dict(fx.options))
    table.upsert(sc.upsert2, dict(fx.options))
    table.delete(sc.delete, dict(fx.options))
    assert data_row_set(hudi_ds.read(str(root))) == sc.expected
    for mdt in ("false", "true"):
        got = hudi_rs_table(str(root), {"hoodie.metadata.enable": mdt})
        assert data_row_set(got) == sc.expected, f"hudi-rs, hoodie.metadata.enable={mdt}"
    assert_in_step(root)
    after = read_props(root)
    assert after["hoodie.table.base.file.format"] == "LANCE"
    assert after["hoodie.table.version"] == "9"
    assert not [p for p in root.rglob("*.parquet") if ".hoodie" not in p.parts]
    # COW rewrites its file groups; MOR inserts (the new partition) into new base files
    check_like_java(sorted(set(root.rglob("*.lance")) - set(java)), java[0])


@pytest.mark.parametrize("operation", ["upsert", "delete"])
@pytest.mark.parametrize("name", ["cow_v9_trips_lance", "mor_avro_v9_lance_nonhivestyle"])
def test_lance_fixture_refused_without_pylance(
    name: str, operation: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = unzip(name, tmp_path)
    before = tree_hashes(root)
    without_pylance(monkeypatch)
    data = pa.table({"uuid": ["x"], "ts": [1], "city": ["c"]})
    with pytest.raises(
        UnsupportedError, match=r"LANCE base files.*'pylance'.*pip install \"pylance>=0.20\""
    ):
        getattr(HudiTable(str(root)), operation)(data)
    assert tree_hashes(root) == before


def _rows(start: int, n: int, ts: int, city: str = "a") -> pa.Table:
    return pa.table(
        {
            "id": pa.array([f"k{i:03d}" for i in range(start, start + n)]),
            "ts": pa.array([ts] * n, pa.int64()),
            "city": pa.array([city] * n),
            "v": pa.array([f"v{ts}-{i}" for i in range(start, start + n)]),
        }
    )


def _new_table_options(table_type: str, **over: str) -> dict[str, str]:
    return {
        "hoodie.table.name": "lance_new",
        "hoodie.datasource.write.table.type": table_type,
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.partitionpath.field": "city",
        "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.table.base.file.format": "LANCE",
        "hoodie.write.table.version": "9",
        "hoodie.index.type": "BLOOM",
        "hoodie.compact.inline.max.delta.commits": "100",
        **over,
    }


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_new_lance_table_written_compacted_read_back(table_type: str, tmp_path: Path) -> None:
    """A new table of Lance base files: inserts, updates (found through the Lance files' bloom
    footers: BLOOM index), a delete; MOR compacts its logs into new Lance base files."""
    pytest.importorskip("lance")
    root = tmp_path / "t"
    opts = _new_table_options(table_type)
    hudi_ds.write(str(root), pa.concat_tables([_rows(0, 6, 1), _rows(6, 4, 1, "b")]), opts)
    hudi_ds.write(str(root), pa.concat_tables([_rows(2, 3, 5), _rows(20, 2, 5, "c")]), opts)
    hudi_ds.write(
        str(root), _rows(0, 1, 9), {**opts, "hoodie.datasource.write.operation": "delete"}
    )
    model = {r["id"]: r for r in _rows(0, 6, 1).to_pylist() + _rows(6, 4, 1, "b").to_pylist()}
    model.update(
        {r["id"]: r for r in _rows(2, 3, 5).to_pylist() + _rows(20, 2, 5, "c").to_pylist()}
    )
    del model["k000"]
    expected = sorted(model.values(), key=lambda r: r["id"])
    props = read_props(root)
    assert props["hoodie.table.base.file.format"] == "LANCE"
    assert props["hoodie.table.version"] == "9"
    if table_type == "MERGE_ON_READ":
        assert list(root.rglob(".*.log.*"))  # the updates went to log files
        ctx = ServiceContext.open(str(root))
        instant = compaction.schedule_compaction(ctx)
        assert instant is not None
        compaction.run_compaction(ServiceContext.open(str(root)), instant)
        compacted = sorted(root.rglob(f"*_{instant}.lance"))
        assert compacted
        check_like_java(compacted, compacted[0])
    bases = [p for p in root.rglob("*") if p.suffix in (".lance", ".parquet")]
    assert bases and all(p.suffix == ".lance" for p in bases if ".hoodie" not in p.parts)
    cols = ["id", "ts", "city", "v"]
    got = hudi_ds.read(str(root)).select(cols).sort_by("id").to_pylist()
    assert got == expected
    rs = hudi_rs_table(str(root)).select(cols).sort_by("id").to_pylist()
    assert rs == expected


def test_new_lance_table_needs_version_9(tmp_path: Path) -> None:
    """Lance base files came with Hudi 1.2 (table version 9): a version-6 table of them would
    be unreadable by the Hudi releases that read version 6."""
    root = tmp_path / "t"
    opts = _new_table_options("COPY_ON_WRITE", **{"hoodie.write.table.version": "6"})
    with pytest.raises(ConfigError, match=r"LANCE needs table version 9"):
        hudi_ds.write(str(root), _rows(0, 2, 1), opts)
    assert not root.exists() or not any(root.rglob("*"))


def test_new_lance_table_refused_without_pylance(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    without_pylance(monkeypatch)
    root = tmp_path / "t"
    with pytest.raises(UnsupportedError, match=r"'pylance'.*pip install \"pylance>=0.20\""):
        hudi_ds.write(str(root), _rows(0, 2, 1), _new_table_options("COPY_ON_WRITE"))
    assert not root.exists() or not any(root.rglob("*"))


def test_lance_cow_merge_under_budget_keeps_every_row(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The memory-bounded COW merges (spilled partitions, the base file streamed batch by
    batch) read and write Lance base files as they do Parquet ones: the rows and write stats
    of an unbounded merge, each file's key footers over every row it holds."""
    pytest.importorskip("lance")
    from hudi_ds.write import merge_handle
    from tests.write import test_memory as mem

    monkeypatch.setattr(merge_handle, "_BASE_READ_ROWS", 512, raising=False)
    lance = {
        **mem.COW,
        "hoodie.table.base.file.format": "LANCE",
        "hoodie.write.table.version": "9",
    }
    small, big = str(tmp_path / "small"), str(tmp_path / "big")
    stats_small, _, flushes, last = mem._write(
        small, {**lance, "write.task.max.size": mem.TINY}, True
    )
    stats_big, _, _, _ = mem._write(big, lance, True)
    assert flushes > 0
    expected = mem._model([mem._batches(s) for s in mem.STEPS])
    assert mem._ours(small) == mem._ours(big) == expected
    assert mem._theirs(small) == expected
    assert stats_small == stats_big
    assert last and all(f.endswith(".lance") for f in last)
    written = sorted(Path(small).rglob("*.lance"))
    check_like_java(written, written[0])
    for f in written:
        _, rows = _lance_file(f)
        keys = rows.column("_hoodie_record_key").to_pylist()
        assert len(keys) == len(set(keys)), f
