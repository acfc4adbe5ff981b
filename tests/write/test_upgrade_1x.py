"""A write asking ``hoodie.write.table.version=8`` or ``9`` upgrades the table first
(hudi_ds/write/upgrade_1x.py, Hudi 1.x's ``UpgradeDowngrade`` with ``SixToSeven``,
``SevenToEight`` and ``EightToNine`` handlers; versions 3-5 go to 6 first, as Hudi 0.15).

Real tables, each written by Apache Hudi:

* ``mor_avro_v6_trips_8i1u``: MOR, version 6, 8 inserts then 1 update in a log file (Avro
  block), OverwriteWithLatestAvroPayload with ordering field ``ts``; to 8;
* ``mor_parquet_v6_nonpartitioned_rollback``: MOR, version 6, a delta commit rolled back (its
  log holds a command block), log files; to 9;
* ``cow_v6_simplekeygen_nonhivestyle_overwritetable``: COW, version 6, 2 commits then an
  insert_overwrite_table (a completed replace commit), no payload recorded; to 9;
* ``mor_avro_v8_trips_8i1u``: MOR, version 8 (Hudi 1.0); to 9 (properties only);
* ``trino__stock_ticks_mor`` (version 3, MOR, a log file) and ``trino__hudi_non_part_cow``
  (version 5, COW, declares a metadata table it does not hold): to 8 and to 9, through 6.

Each takes the fixture scenario (tests/write/fixture_model.py: updates with a greater and an
older ordering value, new keys, a new partition, a delete) with the option on its first write.
After the upgrade the tables merge by event time (Java maps a MOR table with an ordering field,
and ``DefaultHoodieRecordPayload`` -- 1.x's reading of a COW table recording no payload -- to
``EVENT_TIME_ORDERING``): the older update loses. The rows are read back by hudi_ds and by
hudi-rs with and without the metadata table; ``hoodie.properties`` must hold what Java's
handlers leave (spelled out below, not computed); the timeline is layout 2.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pyarrow as pa
import pytest

import hudi_ds
from hudi_ds.errors import ConfigError
from hudi_ds.faults import ENV as CRASH_ENV
from hudi_ds.faults import EXIT_CODE
from hudi_ds.log.archive import load_archived
from hudi_ds.services import compaction
from hudi_ds.services.base import ServiceContext
from hudi_ds.storage import Storage
from hudi_ds.table.table import ReadableTable
from tests.conftest import hudi_rs_table, spawn_python
from tests.fixtures import unzip_more
from tests.write.fixture_model import (
    WRITABLE,
    WRITABLE_1X,
    data_row_set,
    read_props,
    scenario,
    tree_hashes,
)
from tests.write.test_fixture_writes import unzip
from tests.write.test_more_fixture_writes import MORE_WRITABLE, starting_rows

M = "org.apache.hudi.common.model."
EVENT = "eeb8d96f-b1e4-49fd-bbf8-28ac514178e5"
COMMIT = "ce9acb64-bde0-424c-9b91-f6ebba25356d"
#: SevenToEightUpgradeHandler's entries of an event-time table (upgradeMergeMode)
TO_8_EVENT = {
    "hoodie.table.version": "8",
    "hoodie.timeline.layout.version": "2",
    "hoodie.timeline.path": "timeline",
    "hoodie.table.initial.version": "6",
    "hoodie.compaction.payload.class": M + "DefaultHoodieRecordPayload",
    "hoodie.record.merge.mode": "EVENT_TIME_ORDERING",
    "hoodie.record.merge.strategy.id": EVENT,
    "hoodie.compaction.record.merger.strategy": EVENT,
}
#: ... then EightToNineUpgradeHandler's: the payload class becomes the legacy one, the
#: precombine field the ordering fields
TO_9_EVENT = {
    **{k: v for k, v in TO_8_EVENT.items() if k != "hoodie.compaction.payload.class"},
    "hoodie.table.version": "9",
    "hoodie.table.legacy.payload.class": M + "DefaultHoodieRecordPayload",
}
TO_9_GONE = ("hoodie.compaction.payload.class", "hoodie.table.precombine.field")


def _want_props(before: dict[str, str], version: int, keygen_type: str | None) -> dict[str, str]:
    want = {k: v for k, v in before.items() if k != "hoodie.table.checksum"}
    want.update(TO_8_EVENT if version == 8 else TO_9_EVENT)
    if keygen_type:
        want["hoodie.table.keygenerator.type"] = keygen_type
    if version == 9:
        want["hoodie.table.ordering.fields"] = before["hoodie.table.precombine.field"]
        for k in TO_9_GONE:
            want.pop(k, None)
    return want


def _check_layout2(root: Path, before: list[str]) -> None:
    """Every instant of the version-6 timeline is in ``.hoodie/timeline`` under its layout-2
    name (completed ``T_T.<action>``, Avro commit metadata), none is left in ``.hoodie``."""
    timeline = root / ".hoodie" / "timeline"
    names = {p.name for p in timeline.iterdir()}
    for name in before:
        t, rest = name.split(".", 1)
        if "." in rest or rest == "inflight":
            assert name in names, name
        else:
            assert f"{t}_{t}.{rest}" in names, name
            if rest in ("commit", "deltacommit", "replacecommit"):
                assert (timeline / f"{t}_{t}.{rest}").read_bytes()[:4] == b"Obj\x01"
    left = [p.name for p in (root / ".hoodie").iterdir() if re.match(r"\d+\.", p.name)]
    assert not left, left
    assert (timeline / "history").is_dir()


def _v6_instants(root: Path) -> list[str]:
    return sorted(p.name for p in (root / ".hoodie").iterdir() if re.match(r"\d+\.", p.name))


def _run(root: Path, fx, sc, version: int) -> None:  # type: ignore[no-untyped-def]
    table = hudi_ds.HudiTable(str(root))
    table.upsert(sc.upsert, {**fx.options, "hoodie.write.table.version": str(version)})
    table.upsert(sc.upsert2, dict(fx.options))
    table.delete(sc.delete, dict(fx.options))


def _read_back(root: Path, expected: list[str]) -> None:
    assert data_row_set(hudi_ds.read(str(root))) == expected
    assert data_row_set(hudi_rs_table(str(root))) == expected
    assert data_row_set(hudi_rs_table(str(root), {"hoodie.metadata.enable": "true"})) == expected
    assert data_row_set(hudi_rs_table(str(root), {"hoodie.metadata.enable": "false"})) == expected


@pytest.mark.parametrize(
    ("name", "version", "keygen_type"),
    [
        ("mor_avro_v6_trips_8i1u", 8, "SIMPLE"),
        ("mor_parquet_v6_nonpartitioned_rollback", 9, "NON_PARTITION"),
        ("cow_v6_simplekeygen_nonhivestyle_overwritetable", 9, "SIMPLE"),
    ],
)
def test_v6_fixture_upgraded_by_its_first_write(
    name: str, version: int, keygen_type: str, tmp_path: Path
) -> None:
    fx = dataclasses.replace(WRITABLE[name], event_time=True)
    root = unzip(name, tmp_path)
    before = read_props(root)
    timeline = _v6_instants(root)
    sc = scenario(name, fx, hudi_ds.HudiTable(str(root)).read())
    _run(root, fx, sc, version)
    _read_back(root, sc.expected)
    props = read_props(root)
    assert {k: v for k, v in props.items() if k != "hoodie.table.checksum"} == _want_props(
        before, version, keygen_type
    )
    _check_layout2(root, timeline)


def test_v8_fixture_upgraded_to_9(tmp_path: Path) -> None:
    """EightToNineUpgradeHandler alone: properties only, the timeline is layout 2 already."""
    name = "mor_avro_v8_trips_8i1u"
    fx = WRITABLE_1X[name]
    root = unzip(name, tmp_path)
    before = read_props(root)
    sc = scenario(name, fx, hudi_ds.HudiTable(str(root)).read())
    _run(root, fx, sc, 9)
    _read_back(root, sc.expected)
    want = {k: v for k, v in before.items() if k not in (*TO_9_GONE, "hoodie.table.checksum")}
    want.update(
        {
            "hoodie.table.version": "9",
            "hoodie.table.legacy.payload.class": before["hoodie.compaction.payload.class"],
            "hoodie.table.ordering.fields": before["hoodie.table.precombine.field"],
        }
    )
    props = read_props(root)
    assert {k: v for k, v in props.items() if k != "hoodie.table.checksum"} == want


@pytest.mark.parametrize(
    ("name", "version"), [("trino__stock_ticks_mor", 8), ("trino__hudi_non_part_cow", 9)]
)
def test_version_3_and_5_upgraded_through_6(name: str, version: int, tmp_path: Path) -> None:
    fx = dataclasses.replace(MORE_WRITABLE[name], event_time=True)
    root = unzip_more(name, tmp_path / "t")
    before = read_props(root)
    timeline = _v6_instants(root)
    start = starting_rows(name, root, tmp_path)
    sc = scenario(name, fx, start, golden=start.to_pylist())
    _run(root, fx, sc, version)
    _read_back(root, sc.expected)
    props = read_props(root)
    keygen = {"trino__stock_ticks_mor": "SIMPLE", "trino__hudi_non_part_cow": "NON_PARTITION"}
    want = _want_props(before, version, keygen[name])
    if "hoodie.table.metadata.partitions" in before:  # the MDT is rebuilt, at the new version
        assert read_props(root / ".hoodie" / "metadata")["hoodie.table.version"] == str(version)
    assert {k: v for k, v in props.items() if k != "hoodie.table.checksum"} == want
    _check_layout2(root, timeline)


OPTS = {
    "hoodie.table.name": "up",
    "hoodie.datasource.write.recordkey.field": "id",
    "hoodie.datasource.write.partitionpath.field": "p",
    "hoodie.datasource.write.precombine.field": "ts",
    "hoodie.index.type": "SIMPLE",
    "hoodie.datasource.write.table.type": "MERGE_ON_READ",
    "hoodie.metadata.enable": "true",
}
ROWS = pa.table({"id": ["a", "b"], "ts": [1, 1], "p": ["x", "y"]})
WANT = [("a", 2, "x"), ("b", 1, "y"), ("c", 1, "z")]


def _rows(table: pa.Table) -> list[tuple[object, ...]]:
    return sorted(zip(*(table[c].to_pylist() for c in ("id", "ts", "p")), strict=True))


def _v6_table_with_history(root: Path) -> None:
    """A version-6 MOR table with a metadata table, compacted every 2 delta commits, cleaned
    and archived down to 2-3 commits: its archive holds delta commits, compactions and
    cleans."""
    keep = {
        "hoodie.keep.min.commits": "2",
        "hoodie.keep.max.commits": "3",
        "hoodie.cleaner.commits.retained": "1",
        "hoodie.clean.max.commits": "1",
        "hoodie.compact.inline.max.delta.commits": "2",
    }
    hudi_ds.write(str(root), ROWS, {**OPTS, **keep})
    for _ in range(4):
        hudi_ds.write(str(root), pa.table({"id": ["b"], "ts": [1], "p": ["y"]}), keep)
    hudi_ds.write(str(root), pa.table({"id": ["a"], "ts": [2], "p": ["x"]}), keep)


def test_metadata_table_and_archived_timeline_upgraded(tmp_path: Path) -> None:
    """The metadata table is rebuilt at version 9 and lists the files; the archived instants
    become the LSM history with their metadata (``upgradeToLSMTimeline``)."""
    root = tmp_path / "t"
    _v6_table_with_history(root)
    storage = Storage(str(root))
    archived = load_archived(storage, 1)
    assert {"deltacommit", "commit", "clean"} <= {i.action for i in archived}
    hudi_ds.write(
        str(root),
        pa.table({"id": ["c"], "ts": [1], "p": ["z"]}),
        {"hoodie.write.table.version": "9"},
    )
    props = read_props(root)
    assert props["hoodie.table.version"] == "9"
    assert props["hoodie.table.metadata.partitions"] == "files"
    mdt = read_props(root / ".hoodie" / "metadata")
    assert (mdt["hoodie.table.version"], mdt["hoodie.timeline.layout.version"]) == ("9", "2")
    reader = ReadableTable(str(root), {"hoodie.metadata.enable": "true"})
    assert reader.metadata_reader() is not None
    assert _rows(reader.read()) == WANT
    assert _rows(hudi_rs_table(str(root), {"hoodie.metadata.enable": "true"})) == WANT
    history = load_archived(storage, 2)
    assert [i.requested_time for i in history] == [i.requested_time for i in archived]
    assert [i.action for i in history] == [i.action for i in archived]
    for inst in archived.commits():
        old, new = archived.read_commit_metadata(inst), history.read_commit_metadata(inst)
        assert new is not None and old is not None
        assert new.partition_to_write_stats == old.partition_to_write_stats


def test_pending_compaction_refused_unchanged(tmp_path: Path) -> None:
    """Log files written on top of a pending compaction are named after it in version 6: the
    upgrade refuses, naming it, and the table stays byte for byte."""
    root = tmp_path / "t"
    opts = {k: v for k, v in OPTS.items() if k != "hoodie.metadata.enable"}
    hudi_ds.write(str(root), ROWS, opts)
    hudi_ds.write(str(root), pa.table({"id": ["a"], "ts": [2], "p": ["x"]}), opts)
    ctx = ServiceContext.open(
        str(root),
        {
            "hoodie.compaction.strategy": "UnBoundedCompactionStrategy",
            "hoodie.compact.inline.max.delta.commits": "1",
        },
    )
    instant = compaction.schedule_compaction(ctx)
    assert instant is not None
    before = tree_hashes(root)
    more = pa.table({"id": ["c"], "ts": [1], "p": ["z"]})
    with pytest.raises(ConfigError, match=f"pending compaction {instant}.*compact run"):
        hudi_ds.write(str(root), more, {"hoodie.write.table.version": "8"})
    assert tree_hashes(root) == before


UPGRADING_WRITER = r"""
import sys
import pyarrow as pa
import hudi_ds
hudi_ds.write(sys.argv[1], pa.table({"id": ["c"], "ts": [1], "p": ["z"]}),
              {"hoodie.write.table.version": "8"})
print("survived")
"""


@pytest.mark.parametrize("step", [2, 4])
def test_upgrade_killed_midway_is_finished_by_the_next_write(
    step: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Killed once the layout-2 timeline is written (step 2: still version 6) or once
    ``hoodie.properties`` says 8 (step 4: the layout-1 files and the metadata table not yet
    redone): the table reads exactly by hudi_ds and hudi-rs; a version-6 write in between
    (step 2) is not lost when the next write redoes the upgrade and completes it."""
    root = tmp_path / "t"
    hudi_ds.write(str(root), ROWS, OPTS)
    hudi_ds.write(str(root), pa.table({"id": ["a"], "ts": [2], "p": ["x"]}))
    monkeypatch.setenv(CRASH_ENV, f"upgrade:{step}")
    proc = spawn_python(UPGRADING_WRITER, str(root))
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == EXIT_CODE, (out, err)
    monkeypatch.delenv(CRASH_ENV)
    want_now = [("a", 2, "x"), ("b", 1, "y")]
    assert read_props(root)["hoodie.table.version"] == ("6" if step == 2 else "8")
    assert _rows(hudi_ds.read(str(root))) == want_now
    assert _rows(hudi_rs_table(str(root))) == want_now
    if step == 2:
        hudi_ds.write(str(root), pa.table({"id": ["b"], "ts": [3], "p": ["y"]}))
        want_now = [("a", 2, "x"), ("b", 3, "y")]
    hudi_ds.write(
        str(root),
        pa.table({"id": ["c"], "ts": [1], "p": ["z"]}),
        {"hoodie.write.table.version": "8"},
    )
    want = [*want_now, ("c", 1, "z")]
    props = read_props(root)
    assert (props["hoodie.table.version"], props["hoodie.table.metadata.partitions"]) == (
        "8",
        "files",
    )
    assert read_props(root / ".hoodie" / "metadata")["hoodie.table.version"] == "8"
    assert _rows(hudi_ds.read(str(root))) == want
    assert _rows(hudi_rs_table(str(root), {"hoodie.metadata.enable": "true"})) == want
    completed = [p.name for p in (root / ".hoodie" / "timeline").glob("*_*.deltacommit")]
    assert len(completed) == len({n[:17] for n in completed}) == (4 if step == 2 else 3)
