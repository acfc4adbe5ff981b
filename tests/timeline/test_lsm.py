"""The LSM timeline writer (timeline layout 2's archived timeline): files, manifests, version
file and layer compaction as Hudi 1.x's ``LSMTimelineWriter`` lays them out, read back by the
reader (:func:`hudi_ds.timeline.archived.load_lsm_history`)."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq

from hudi_ds.storage import Storage
from hudi_ds.timeline.archived import load_lsm_history
from hudi_ds.timeline.avro_record import java_schema_text
from hudi_ds.timeline.lsm import LsmEntry, LsmTimelineWriter, entry_of

FOLDER = ".hoodie/timeline/history"


def _entries(start: int, n: int) -> list[LsmEntry]:
    return [
        LsmEntry(
            f"2025010100000{k:04d}", f"2025010100000{k:04d}"[:-1] + "9", "commit", b"m%d" % k, None
        )
        for k in range(start, start + n)
    ]


def test_write_commits_a_file_through_manifest_and_version(tmp_path: Path) -> None:
    storage = Storage(str(tmp_path))
    w = LsmTimelineWriter(storage, FOLDER, batch_size=10)
    path = w.write(list(reversed(_entries(0, 3))))  # sorted by instant time on write
    assert path == f"{FOLDER}/20250101000000000_20250101000000002_0.parquet"
    hist = tmp_path / FOLDER
    assert (hist / "_version_").read_text() == "1"
    size = (hist / "20250101000000000_20250101000000002_0.parquet").stat().st_size
    # Jackson's pretty printer, as HoodieLSMTimelineManifest.toJsonString writes it
    assert (hist / "manifest_1").read_text() == (
        '{\n  "files" : [ {\n    "fileName" : "20250101000000000_20250101000000002_0.parquet",\n'
        f'    "fileLen" : {size}\n  }} ]\n}}'
    )
    table = pq.read_table(hist / "20250101000000000_20250101000000002_0.parquet")
    assert table.column_names == [
        "instantTime",
        "completionTime",
        "action",
        "metadata",
        "plan",
        "version",
    ]
    assert table.column("instantTime").to_pylist() == [e.instant_time for e in _entries(0, 3)]
    assert table.column("version").to_pylist() == [1, 1, 1]
    footer = table.schema.metadata or {}
    assert footer[b"parquet.avro.schema"].decode() == java_schema_text("HoodieLSMTimelineInstant")
    got = {e.instant.requested_time: e for e in load_lsm_history(storage, FOLDER)}
    assert sorted(got) == [e.instant_time for e in _entries(0, 3)]
    e0 = got["20250101000000000"]
    assert (e0.instant.action, e0.instant.completion_time, e0.metadata) == (
        "commit",
        "20250101000000009",
        b"m0",
    )
    # the same file again (an archival killed after its commit point): nothing new
    assert w.write(_entries(0, 3)) == path
    assert (hist / "_version_").read_text() == "1"


def test_full_layers_are_compacted_and_old_snapshots_cleaned(tmp_path: Path) -> None:
    storage = Storage(str(tmp_path))
    w = LsmTimelineWriter(storage, FOLDER, batch_size=2)
    for k in range(8):
        w.write(_entries(k * 2, 2))
        w.compact_and_clean()
    live = [n for n, _ in w.manifest()]
    # 8 L0 files -> 4 L1 -> 2 L2 -> 1 L3
    assert live == ["20250101000000000_20250101000000015_3.parquet"], live
    hist = tmp_path / FOLDER
    on_disk = sorted(p.name for p in hist.glob("*.parquet"))
    assert "20250101000000000_20250101000000015_3.parquet" in on_disk
    versions = sorted(int(p.name.split("_")[1]) for p in hist.glob("manifest_*"))
    assert int((hist / "_version_").read_text()) == versions[-1]
    assert len(versions) <= 3 + 3  # retained snapshots + one per compacted layer
    for v in versions:  # every retained snapshot is readable: its files exist
        for name, size in w.manifest(v):
            assert (hist / name).stat().st_size == size
    got = sorted(e.instant.requested_time for e in load_lsm_history(storage, FOLDER))
    assert got == [e.instant_time for e in _entries(0, 16)]


def test_entry_of_takes_plans_as_hudi_does() -> None:
    c = {"requested": b"plan", "inflight": b"", "completed": b"md"}
    assert entry_of("1", "2", "compaction", c) == LsmEntry("1", "2", "commit", b"md", b"plan")
    assert entry_of("1", "2", "deltacommit", c) == LsmEntry("1", "2", "deltacommit", b"md", None)
    assert entry_of("1", "2", "clean", {"inflight": b"p", "completed": b"md"}).plan == b"p"
    rc = {"requested": b"req", "inflight": b"inf", "completed": b"md"}
    assert entry_of("1", "2", "clustering", rc) == LsmEntry(
        "1", "2", "replacecommit", b"md", b"inf"
    )
    assert entry_of("1", "2", "replacecommit", {**rc, "inflight": b""}).plan == b"req"
