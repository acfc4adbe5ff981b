"""Reading the metadata table (MDT) of the fixture tables: its listing, the in-step rule, Java's
valid-instant rule, the read path's choice between the MDT and the storage, and storage calls."""

from __future__ import annotations

import shutil
import zipfile
from pathlib import Path

import pytest

import hudi_ds
from hudi_ds.api import HudiTable
from hudi_ds.layout.naming import parse_base_file_name, parse_log_file_name
from hudi_ds.metadata.reader import (
    MetadataReader,
    lagging_instants,
    valid_instants,
)
from hudi_ds.metadata.records import FILES_PARTITION, declared_partitions, partition_path_of_id
from hudi_ds.services import rollback
from hudi_ds.services.base import ServiceContext
from hudi_ds.storage import Storage
from hudi_ds.table.fs_view import StorageListing
from hudi_ds.table.table import ReadableTable
from hudi_ds.table_config import TableConfig
from hudi_ds.timeline.instant import Instant, State
from hudi_ds.timeline.timeline import Timeline
from tests.fixtures import (
    FIXTURES_DIR,
    GOLDEN_DIR,
    fixture_names,
    fixture_table,
    require_base_file_reader,
    require_fixtures,
)
from tests.golden import golden_set, row_set
from tests.metadata.test_writer import batch, committed_files
from tests.metadata.test_writer import options as writer_options


def _declares_files(name: str) -> bool:
    with zipfile.ZipFile(FIXTURES_DIR / f"{name}.zip") as zf:
        props = [n for n in zf.namelist() if n.endswith(".hoodie/hoodie.properties")]
        top = min(props, key=len)  # the data table's (the MDT's sits deeper)
        text = zf.read(top).decode()
    return any(
        line.startswith("hoodie.table.metadata.partitions=") and "files" in line.split("=", 1)[1]
        for line in text.splitlines()
    )


MDT_FIXTURES = [n for n in fixture_names() if _declares_files(n)]


def open_reader(root: Path) -> MetadataReader:
    storage = Storage(str(root))
    config = TableConfig.load(storage)
    timeline = Timeline.load(storage, config.timeline_layout_version, config.timeline_path)
    reader = MetadataReader.open(storage, config, timeline)
    assert reader is not None
    return reader


def storage_data_files(root: Path) -> dict[str, set[tuple[str, int]]]:
    """Partition -> (name, size) of every data file the storage lists (``.`` non-partitioned)."""
    storage = Storage(str(root))
    listing = StorageListing(storage)
    out: dict[str, set[tuple[str, int]]] = {}
    for p in listing.partitions():
        files = {
            (f.name, f.size)
            for f in listing.files(p)
            if parse_base_file_name(f.name) or parse_log_file_name(f.name)
        }
        out[p or "."] = files
    return out


def test_the_fixtures_include_both_generations() -> None:
    require_fixtures()
    assert "cow_0x_partitioned" in MDT_FIXTURES  # v6, 0.x HBase-written HFiles
    assert any("_v9_" in n for n in MDT_FIXTURES) and any("_v8_" in n for n in MDT_FIXTURES)


@pytest.mark.parametrize("name", MDT_FIXTURES)
def test_mdt_listing_equals_the_storage_listing(name: str, tmp_path_factory) -> None:
    root = fixture_table(name, tmp_path_factory)
    reader = open_reader(root)
    assert reader.in_step, reader.why_not_in_step()
    assert reader.latest_instant is not None
    on_storage = storage_data_files(root)
    listed = {p: {(f.name, f.size) for f in reader.files(p)} for p in reader.partitions()}
    # every partition with data files is listed, with exactly its files and sizes
    assert {p: f for p, f in listed.items() if f} == {p: f for p, f in on_storage.items() if f}
    assert reader.file_count() == sum(len(f) for f in on_storage.values())
    for p in reader.partitions():
        for f in reader.files(p):
            assert f.path == (f.name if p == "." else f"{p}/{f.name}")


@pytest.mark.parametrize("name", MDT_FIXTURES)
def test_reads_through_the_mdt_equal_reads_of_the_storage(name: str, tmp_path_factory) -> None:
    require_base_file_reader(name)
    root = fixture_table(name, tmp_path_factory)
    via_mdt = ReadableTable(str(root))
    assert via_mdt.metadata_reader() is not None
    for query in ("snapshot", "read_optimized"):
        opts = {"hoodie.datasource.query.type": query}
        with_mdt = via_mdt.read(opts)
        listed = ReadableTable(str(root), {"hoodie.metadata.enable": "false"}).read(opts)
        expected = golden_set(GOLDEN_DIR / f"{name}.{query}.jsonl")
        assert row_set(with_mdt) == row_set(listed) == expected


def test_fixture_without_declared_mdt_has_no_reader(tmp_path_factory) -> None:
    root = fixture_table("cow_v8_nonpartitioned", tmp_path_factory)
    storage = Storage(str(root))
    config = TableConfig.load(storage)
    assert FILES_PARTITION not in declared_partitions(config)
    timeline = Timeline.load(storage, config.timeline_layout_version, config.timeline_path)
    assert MetadataReader.open(storage, config, timeline) is None
    assert ReadableTable(str(root)).metadata_reader() is None


def _copy(name: str, tmp_path: Path, tmp_path_factory) -> Path:
    src = fixture_table(name, tmp_path_factory)
    dest = tmp_path / src.name
    shutil.copytree(src, dest)
    return dest


def _completed_files(timeline_dir: Path, instant: str) -> list[Path]:
    return [
        p
        for p in timeline_dir.iterdir()
        if p.name.split(".")[0].split("_")[0] == instant
        and not p.name.endswith((".requested", ".inflight"))
    ]


def _timeline_dir(table: Path) -> Path:
    tl = table / ".hoodie" / "timeline"
    return tl if tl.is_dir() else table / ".hoodie"


@pytest.mark.parametrize(
    "name", ["cow_0x_partitioned", "mor_avro_v8_trips_8i3u1d", "mor_avro_v9_txns_simple_meta"]
)
def test_stale_mdt_is_not_in_step_and_reads_list_the_storage(
    name: str, tmp_path: Path, tmp_path_factory, caplog
) -> None:
    """The MDT's latest deltacommit (the mirror of the data table's latest instant) is deleted:
    the reader names the data instant it lacks, and reads list the storage with the right rows."""
    root = _copy(name, tmp_path, tmp_path_factory)
    mdt_tl = _timeline_dir(root / ".hoodie" / "metadata")
    data_tl = _timeline_dir(root)
    # the latest data instant that changed files (an indexing instant does not)
    latest = max(
        p.name.split(".")[0].split("_")[0]
        for p in data_tl.iterdir()
        if p.name.endswith((".commit", ".deltacommit", ".replacecommit"))
    )
    (done,) = [p for p in _completed_files(mdt_tl, latest) if p.name.endswith(".deltacommit")]
    done.unlink()
    reader = open_reader(root)
    assert not reader.in_step
    assert reader.missing_instants == [latest]
    assert latest in reader.why_not_in_step()
    # what a listing through it would have missed: the files the instant wrote
    on_storage = {n for files in storage_data_files(root).values() for n, _ in files}
    listed = {f.name for p in reader.partitions() for f in reader.files(p)}
    assert {n for n in on_storage if latest in n}
    assert not {n for n in listed if latest in n}
    table = ReadableTable(str(root))
    with caplog.at_level("INFO", logger="hudi_ds.read"):
        assert table.metadata_reader() is None
    assert "not in step" in caplog.text and latest in caplog.text
    for query in ("snapshot", "read_optimized"):
        got = table.read({"hoodie.datasource.query.type": query})
        assert row_set(got) == golden_set(GOLDEN_DIR / f"{name}.{query}.jsonl")


def test_mdt_blocks_of_a_pending_data_instant_are_not_listed(
    tmp_path: Path, tmp_path_factory
) -> None:
    """Java's valid-instant rule: the MDT deltacommit of data instant T completes before T; if
    T is then pending (failed), its MDT block is ignored and its files are not listed, while the
    MDT stays in step (the pending T is not owed)."""
    name = "mor_avro_v9_txns_simple_meta"
    root = _copy(name, tmp_path, tmp_path_factory)
    data_tl = _timeline_dir(root)
    before = open_reader(root)
    latest = max(
        p.name.split(".")[0].split("_")[0]
        for p in data_tl.iterdir()
        if p.name.endswith((".deltacommit", ".commit"))
    )
    (done,) = [p for p in _completed_files(data_tl, latest) if "commit" in p.name]
    done.unlink()  # T is inflight again on the data timeline
    after = open_reader(root)
    assert after.in_step, after.why_not_in_step()
    assert latest not in after.valid_instants and latest in before.valid_instants
    skipped = [s for g in after.file_groups for s in g.skipped if s[1] == latest]
    assert skipped and "pending" in skipped[0][2]
    gone = {(p, f.name) for p in before.partitions() for f in before.files(p) if latest in f.name}
    assert gone, "the latest instant wrote files"
    now = {(p, f.name) for p in after.partitions() for f in after.files(p)}
    assert not gone & now
    # both listings give the rows of the table without T
    mdt_rows = row_set(ReadableTable(str(root)).read())
    storage_rows = row_set(ReadableTable(str(root), {"hoodie.metadata.enable": "false"}).read())
    assert mdt_rows == storage_rows


def test_reads_through_the_mdt_make_fewer_list_calls(tmp_path_factory) -> None:
    name = "cow_v9_txns_simple_meta"  # several partitions
    root = fixture_table(name, tmp_path_factory)
    counts = {}
    for enable in ("true", "false"):
        table = ReadableTable(str(root), {"hoodie.metadata.enable": enable})
        table.storage.calls.reset()
        rows = table.read()
        counts[enable] = table.storage.calls.snapshot()
        assert row_set(rows) == golden_set(GOLDEN_DIR / f"{name}.snapshot.jsonl")
    partitions = len(StorageListing(Storage(str(root))).partitions())
    assert partitions >= 3
    assert counts["true"]["list"] < counts["false"]["list"], counts
    # listing the storage: the timeline, the base folder and every partition once; through
    # the MDT: the data timeline, the MDT's timeline and its files partition
    assert counts["false"]["list"] == 2 + partitions
    assert counts["true"]["list"] == 3


def _tl(layout: int, *items: tuple[str, str, str | None]) -> Timeline:
    """A timeline of ``(requested time, action, completion time or None = pending)``."""
    out = []
    for t, action, done in items:
        if done is None:
            out.append(Instant(t, action, State.INFLIGHT))
        else:
            out.append(Instant(t, action, State.COMPLETED, done if layout == 2 else t))
    return Timeline(out, layout)


def test_lagging_instants_after_a_bootstrap_named_after_a_data_instant() -> None:
    # Java creates the MDT of a table with commits at <latest completed data instant> + suffix
    data = _tl(
        2,
        ("20240101000000001", "commit", "20240101000000002"),
        ("20240101000000003", "commit", "20240101000000004"),
        ("20240101000000005", "savepoint", "20240101000000006"),
        ("20240101000000007", "clean", "20240101000000008"),
        ("20240101000000009", "deltacommit", None),  # pending: not owed yet
        ("20240101000000011", "indexing", "20240101000000012"),  # changes no data file
    )
    mdt = _tl(2, ("20240101000000003010", "deltacommit", "20240101000000004"))
    assert lagging_instants(data, mdt) == ["20240101000000007"]
    mdt = _tl(
        2,
        ("20240101000000003010", "deltacommit", "20240101000000004"),
        ("20240101000000007", "deltacommit", "20240101000000008"),
    )
    assert lagging_instants(data, mdt) == []


def test_lagging_instants_after_a_synthetic_bootstrap() -> None:
    data = _tl(
        2,
        ("20240101000000001", "commit", "20240101000000002"),
        ("20240101000000003", "deltacommit", "20240101000000009"),
        ("20240101000000010", "rollback", "20240101000000011"),
    )
    # layout 2: what completed before the bootstrap did is covered by it
    mdt = _tl(2, ("00000000000000000", "deltacommit", "20240101000000005"))
    assert lagging_instants(data, mdt) == ["20240101000000003", "20240101000000010"]
    mdt = _tl(
        2,
        ("00000000000000000", "deltacommit", "20240101000000005"),
        ("20240101000000003", "deltacommit", "20240101000000008"),
        ("20240101000000010", "rollback", "20240101000000011"),
    )
    assert lagging_instants(data, mdt) == []
    # layout 1 (no completion times): covered up to the first data instant the MDT mirrors
    data1 = _tl(
        1,
        ("20240101000000001", "commit", ""),
        ("20240101000000003", "commit", ""),
        ("20240101000000005", "clean", ""),
        ("20240101000000007", "commit", ""),
    )
    assert lagging_instants(data1, _tl(1, ("00000000000000010", "deltacommit", ""))) == []
    mdt1 = _tl(
        1,
        ("00000000000000010", "deltacommit", ""),
        ("20240101000000003", "deltacommit", ""),
        ("20240101000000007", "deltacommit", ""),
    )
    assert lagging_instants(data1, mdt1) == ["20240101000000005"]
    assert lagging_instants(data1, _tl(1)) == [
        "20240101000000001",
        "20240101000000003",
        "20240101000000005",
        "20240101000000007",
    ]


def test_valid_instants_follow_java() -> None:
    data = _tl(
        2,
        ("20240101000000001", "commit", "20240101000000002"),
        ("20240101000000003", "deltacommit", None),  # failed after its MDT deltacommit
        ("20240101000000005", "deltacommit", "20240101000000006"),
    )
    mdt = _tl(
        2,
        ("00000000000000000", "deltacommit", "20240101000000000"),
        ("20240101000000001", "deltacommit", "20240101000000002"),
        ("20240101000000003", "deltacommit", "20240101000000004"),
        ("20240101000000005", "deltacommit", "20240101000000006"),
        ("20240101000000007", "rollback", "20240101000000008"),
        ("20240101000000009", "deltacommit", None),
    )
    valid = valid_instants(data, mdt, 9)
    assert "20240101000000003" not in valid and "20240101000000009" not in valid
    assert {"00000000000000000", "20240101000000001", "20240101000000005"} <= valid
    assert "20240101000000007" in valid  # the MDT's own rollback
    # 0.x: an MDT deltacommit counts only as a data instant's mirror or as an MDT-only one
    data6 = _tl(1, ("20240101000000001", "commit", ""))
    mdt6 = _tl(
        1,
        ("00000000000000010", "deltacommit", ""),
        ("20240101000000001", "deltacommit", ""),
        ("20240101000000001001", "commit", ""),  # an MDT compaction
        ("20240101000000001004", "deltacommit", ""),  # the async indexer's
        ("20240101000000002", "deltacommit", ""),  # a data instant not on the data timeline
    )
    valid6 = valid_instants(data6, mdt6, 6)
    assert {"00000000000000010", "20240101000000001", "20240101000000001004"} <= valid6
    assert "20240101000000002" not in valid6


@pytest.mark.parametrize("name", ["cow_0x_partitioned", "mor_avro_v8_trips_8i3u1d"])
def test_incremental_and_time_travel_reads_are_the_same_both_ways(
    name: str, tmp_path_factory
) -> None:
    root = fixture_table(name, tmp_path_factory)
    table = ReadableTable(str(root))
    commits = [i.requested_time for i in table.timeline.commits()]
    assert len(commits) >= 2
    queries = [
        {"as.of.instant": commits[len(commits) // 2]},
        {
            "hoodie.datasource.query.type": "incremental",
            "hoodie.datasource.read.begin.instanttime": commits[0],
        },
    ]
    for q in queries:
        with_mdt = ReadableTable(str(root)).read(q)
        listed = ReadableTable(str(root), {"hoodie.metadata.enable": "false"}).read(q)
        assert with_mdt.num_rows > 0
        assert row_set(with_mdt) == row_set(listed)


def test_an_unreadable_mdt_falls_back_to_listing(tmp_path: Path, tmp_path_factory, caplog) -> None:
    name = "mor_avro_v9_txns_nonpart_meta"
    root = _copy(name, tmp_path, tmp_path_factory)
    files = root / ".hoodie" / "metadata" / "files"
    bases = sorted(files.glob("files-0000-0_*.hfile"))
    latest = bases[-1]
    latest.write_bytes(latest.read_bytes()[:-100])  # the trailer is gone
    with caplog.at_level("WARNING", logger="hudi_ds.read"):
        got = ReadableTable(str(root)).read()
    assert "unreadable" in caplog.text and latest.name in caplog.text
    assert row_set(got) == golden_set(GOLDEN_DIR / f"{name}.snapshot.jsonl")


def test_a_table_caches_its_mdt_reader_per_data_timeline(tmp_path_factory) -> None:
    root = fixture_table("cow_v9_txns_nonpart_meta", tmp_path_factory)
    table = ReadableTable(str(root))
    first = table.metadata_reader()
    assert first is not None and table.metadata_reader() is first
    table.storage.calls.reset()
    table.read()
    assert table.storage.calls["list"] == 0  # timeline and MDT as already read
    table.refresh()
    assert table.metadata_reader() is not first


# -- tables hudi_ds writes with the MDT ----------------------------------------------------------


def _reader_agrees(root: Path) -> None:
    """The reader is in step with what hudi_ds wrote, lists exactly the committed files, reads
    go through it, and they return the rows a storage listing gives."""
    reader = open_reader(root)
    assert reader.in_step, reader.why_not_in_step()
    listed = {
        partition_path_of_id(p): {f.name: f.size for f in reader.files(p)}
        for p in reader.partitions()
    }
    assert {p: f for p, f in listed.items() if f} == committed_files(root)
    table = ReadableTable(str(root))
    assert table.metadata_reader() is not None
    no_mdt = ReadableTable(str(root), {"hoodie.metadata.enable": "false"})
    assert no_mdt.metadata_reader() is None
    assert row_set(table.read()) == row_set(no_mdt.read())


@pytest.mark.parametrize("version", [6, 9])
def test_tables_hudi_ds_writes_are_read_through_their_mdt(version: int, tmp_path: Path) -> None:
    """Upserts, a delete, inline compaction and clean, MDT compaction, a savepoint, the rollback
    of a completed commit and a restore: after each the reader is in step and agrees."""
    root = tmp_path / "t"
    opts = writer_options(
        "MERGE_ON_READ",
        version,
        **{
            "hoodie.compact.inline": "true",
            "hoodie.compact.inline.max.delta.commits": "2",
            "hoodie.clean.automatic": "true",
            "hoodie.cleaner.commits.retained": "2",
            "hoodie.metadata.compact.max.delta.commits": "3",
        },
    )
    for k in range(1, 7):
        hudi_ds.write(str(root), batch(k), opts)
        _reader_agrees(root)
    HudiTable(str(root), opts).delete(batch(2).slice(0, 3))
    _reader_agrees(root)
    mdt_tl = open_reader(root).timeline
    assert mdt_tl.completed().filter_actions("commit"), "the MDT was compacted"
    saved = rollback.create_savepoint(ServiceContext.open(str(root), opts), None)
    opts = {
        **opts,
        "hoodie.compact.inline": "false",
        "hoodie.datasource.compaction.async.enable": "false",
        "hoodie.clean.automatic": "false",
    }
    later = hudi_ds.write(str(root), batch(7), opts)
    _reader_agrees(root)
    rollback.rollback(ServiceContext.open(str(root), opts), later)
    _reader_agrees(root)
    hudi_ds.write(str(root), batch(8), opts)
    rollback.restore(ServiceContext.open(str(root), opts), saved)
    _reader_agrees(root)
