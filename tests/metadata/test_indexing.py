"""``hudi-py metadata --build`` as Java's async indexer: the ``indexing`` action.

Tables: a version 9 table written by hudi_ds (30 keys in 3 partitions, two upserts of 12
rows, metadata table on, no index partitions), and Hudi 1.1's ``cow_v9_txns_simple_meta``
whose ``record_index`` is removed and built again. A build writes ``T.indexing.requested``
(``HoodieIndexPlan``), ``T.indexing.inflight`` (empty) and ``T_<c>.indexing``
(``HoodieIndexCommitMetadata``), decoded here with the Avro schemas of the format reference;
the partition is MDT deltacommit T and equals its recomputation from the data files. A build
killed at each step is finished by the next build, or settled by the next write, and never
leaves a partition readers trust half built; a writer committing during a build waits for
its table lock.
"""

from __future__ import annotations

import io
import json
import os
import signal
import time
from pathlib import Path

import fastavro
import pytest

import hudi_ds
from hudi_ds.errors import HudiError
from hudi_ds.faults import STALL_ENV
from hudi_ds.index.record_level import record_index_locations
from hudi_ds.metadata.bloom_filters import BLOOM_FILTERS_PARTITION
from hudi_ds.metadata.column_stats import COLUMN_STATS_PARTITION, PARTITION_STATS_PARTITION
from hudi_ds.metadata.record_index import RECORD_INDEX_PARTITION
from hudi_ds.metadata.records import (
    METADATA_PARTITIONS_INFLIGHT_KEY,
    declared_partitions,
)
from hudi_ds.storage import Storage
from hudi_ds.table.table import ReadableTable
from hudi_ds.table_config import TableConfig
from hudi_ds.timeline.timeline import Timeline
from tests.conftest import OCC_OPTIONS, hudi_rs_table
from tests.fixtures import REFERENCE_AVRO_SCHEMAS
from tests.metadata.rli_support import (
    recomputed_record_index,
    stored_record_index,
    writer_timezone,
)
from tests.metadata.test_bloom_filters import assert_bloom_in_step
from tests.metadata.test_column_stats import assert_stats_in_step
from tests.metadata.test_writer import _crash, assert_in_step, batch
from tests.metadata.test_writer import options as writer_options
from tests.write.fixture_model import data_row_set
from tests.write.test_fixture_writes import unzip

STATS = [COLUMN_STATS_PARTITION, PARTITION_STATS_PARTITION]


def _schema(name: str) -> dict:
    path = REFERENCE_AVRO_SCHEMAS / f"{name}.v9.avsc"
    return fastavro.parse_schema(json.loads(path.read_text()))


def _decode(data: bytes, name: str) -> dict:
    """The one record of an Avro container file, read with the reference schema ``name``."""
    records = list(fastavro.reader(io.BytesIO(data), reader_schema=_schema(name)))
    assert len(records) == 1
    return records[0]


def _opts(**over: str) -> dict[str, str]:
    return writer_options("MERGE_ON_READ", 9, **over)


def _table(tmp_path: Path, **over: str) -> Path:
    root = tmp_path / "t"
    # without the column stats a new version 9 table gets (the builds add them)
    off = {"hoodie.metadata.index.column.stats.enable": "false", **over}
    for k in (1, 2):
        hudi_ds.write(str(root), batch(k), _opts(**off))
    assert declared_partitions(_config(root)) == ["files"]
    return root


def _config(root: Path) -> TableConfig:
    return TableConfig.load(Storage(str(root)))


def _timeline(root: Path, mdt: bool = False) -> Timeline:
    storage = Storage(str(root / ".hoodie" / "metadata" if mdt else root))
    cfg = TableConfig.load(storage)
    return Timeline.load(storage, cfg.timeline_layout_version, cfg.timeline_path)


def _build(root: Path, *names: str, opts: tuple[str, ...] = ()) -> dict:
    from tests.test_cli import run

    args = [a for n in names for a in ("--build", n)]
    code, out, err = run("metadata", str(root), *args, *opts, "--json")
    assert code == 0, err
    return json.loads(out)


def _assert_built(root: Path, names: list[str]) -> None:
    """``names`` declared, none in flight, no pending instant on either timeline, every index
    partition equal to its recomputation, and hudi-rs reads the rows with the MDT on and off."""
    cfg = _config(root)
    assert set(names) <= set(declared_partitions(cfg))
    assert not declared_partitions(cfg, METADATA_PARTITIONS_INFLIGHT_KEY)
    assert not list(_timeline(root).pending())
    assert not list(_timeline(root, mdt=True).pending())
    assert_in_step(root)
    assert_stats_in_step(root)
    if BLOOM_FILTERS_PARTITION in declared_partitions(cfg):
        assert_bloom_in_step(root)
    if RECORD_INDEX_PARTITION in declared_partitions(cfg):
        stored = stored_record_index(root)
        computed = recomputed_record_index(root, writer_timezone(root))
        assert {k: (v.partition, v.file_id) for k, v in stored.items()} == {
            k: (v.partition, v.file_id) for k, v in computed.items()
        }
    expected = data_row_set(hudi_ds.read(str(root)))
    for md in ("true", "false"):
        assert data_row_set(hudi_rs_table(str(root), {"hoodie.metadata.enable": md})) == expected


def _indexing_files(root: Path) -> dict[str, list[Path]]:
    out: dict[str, list[Path]] = {}
    for f in sorted((root / ".hoodie" / "timeline").iterdir()):
        if ".indexing" in f.name:
            out.setdefault(f.name.split(".")[0].split("_")[0], []).append(f)
    return out


@pytest.mark.parametrize(
    ("names", "version"),
    [
        (STATS, 9),
        ([RECORD_INDEX_PARTITION], 9),
        ([RECORD_INDEX_PARTITION], 8),
        ([BLOOM_FILTERS_PARTITION], 9),
    ],
    ids=["stats", "rli", "rli-v8", "bloom"],
)
def test_build_writes_the_indexing_action(names: list[str], version: int, tmp_path: Path) -> None:
    """The three instant files in Java's format, MDT deltacommit T holding the partition, the
    partitions declared and equal to their recomputation; the next write keeps them so."""
    root = _table(tmp_path, **{"hoodie.write.table.version": str(version)})
    upto = _timeline(root).completed().last_completed()
    assert upto is not None
    out = _build(root, *names)
    assert out["built"] == names and len(out["indexing_instants"]) == 1
    ts = out["indexing_instants"][0]
    files = _indexing_files(root)
    assert list(files) == [ts]
    by_state = {f.name.split(".", 1)[1]: f for f in files[ts]}
    assert sorted(by_state) == ["indexing", "indexing.inflight", "indexing.requested"]
    assert by_state["indexing.inflight"].read_bytes() == b""
    plan = _decode(by_state["indexing.requested"].read_bytes(), "HoodieIndexPlan")
    infos = [
        (i["metadataPartitionPath"], i["indexUptoInstant"]) for i in plan["indexPartitionInfos"]
    ]
    assert infos == [(n, upto.requested_time) for n in names]
    done = _decode(by_state["indexing"].read_bytes(), "HoodieIndexCommitMetadata")
    assert done["operationType"] is None and done["version"] == 1
    assert [i["metadataPartitionPath"] for i in done["indexPartitionInfos"]] == names
    # the partition is MDT deltacommit T, named after the indexing instant
    mdt = _timeline(root, mdt=True)
    assert mdt.is_completed(ts) and mdt.get(ts).action == "deltacommit"  # type: ignore[union-attr]
    for n in names:
        built = [p.name for p in (root / ".hoodie" / "metadata" / n).iterdir()]
        assert any(ts in name for name in built if name.endswith(".hfile")), built
    index_json = root / ".hoodie" / ".index_defs" / "index.json"
    defs = json.loads(index_json.read_text()) if index_json.exists() else {}
    if names == [BLOOM_FILTERS_PARTITION]:
        assert_bloom_in_step(root)
    elif version == 8:  # Hudi 1.0 records no record index definition
        assert not index_json.exists()
    elif names == STATS:
        assert defs["indexDefinitions"]["column_stats"]["sourceFields"][:3] == [
            "_hoodie_commit_time",
            "_hoodie_partition_path",
            "_hoodie_record_key",
        ]
    else:  # Hudi 1.1's definition of a global record index
        assert defs["indexDefinitions"]["record_index"]["indexOptions"] == {
            "isPartitioned": "false"
        }
    _assert_built(root, names)
    hudi_ds.write(str(root), batch(3), _opts(**{"hoodie.write.table.version": str(version)}))
    _assert_built(root, names)
    again = _build(root, *names)  # nothing left to build
    assert again["built"] == [] and sorted(again["skipped"]) == sorted(names)


def test_readers_treat_an_inflight_partition_as_absent(tmp_path: Path) -> None:
    """A build stopped after it built its partition but before it declared it: reads do not
    prune with it, writes do not look keys up in it; once the next build finishes it, they
    do."""
    root = _table(tmp_path)
    assert _crash("indexing:4", lambda: _build(root, COLUMN_STATS_PARTITION)) == 137
    cfg = _config(root)
    assert declared_partitions(cfg, METADATA_PARTITIONS_INFLIGHT_KEY) == [COLUMN_STATS_PARTITION]
    assert COLUMN_STATS_PARTITION not in declared_partitions(cfg)
    assert (root / ".hoodie" / "metadata" / COLUMN_STATS_PARTITION).is_dir()
    skipping = {"hoodie.enable.data.skipping": "true"}
    table = ReadableTable(str(root))
    assert table.read(skipping, filters=[("ts", "=", 99)]).num_rows == 0
    assert table.last_read_stats.data_skipped_slices == 0
    _build(root, COLUMN_STATS_PARTITION)  # finished: now it prunes every slice
    table = ReadableTable(str(root))
    assert table.read(skipping, filters=[("ts", "=", 99)]).num_rows == 0
    assert table.last_read_stats.data_skipped_slices == 3
    # the record index: no lookups while it is in flight
    rli = _table(tmp_path / "r")
    assert _crash("indexing:4", lambda: _build(rli, RECORD_INDEX_PARTITION)) == 137
    assert record_index_locations(Storage(str(rli)), ["k7"]) is None
    _build(rli, RECORD_INDEX_PARTITION)
    found = record_index_locations(Storage(str(rli)), ["k7"])
    assert found is not None and found["k7"].partition == "p1"


# a build killed: after its requested file (1), its inflight file (2), marking its partitions
# inflight (3), building them (4), declaring them (5); inside the updates of hoodie.properties
# (the backup protocol's third step) that mark them inflight (3) and declare them (8)
KILLS = [
    "indexing:1",
    "indexing:2",
    "indexing:3",
    "indexing:4",
    "indexing:5",
    "table_config:3",
    "table_config:8",
]


@pytest.mark.parametrize("spec", KILLS)
def test_killed_build_is_finished_by_the_next_build(spec: str, tmp_path: Path) -> None:
    root = _table(tmp_path)
    assert _crash(spec, lambda: _build(root, *STATS)) == 137
    cfg = _config(root)
    # never a partition declared while the indexing instant is pending, but after step 5
    if spec != "indexing:5":
        assert not set(STATS) & set(declared_partitions(cfg))
    out = _build(root, *STATS)
    assert set(STATS) <= set(out["built"]) | set(out["skipped"])
    assert len(_indexing_files(root)) == 1  # the killed instant, finished
    _assert_built(root, STATS)


@pytest.mark.parametrize("spec", ["indexing:2", "metadata:1", "indexing:4", "indexing:5"])
def test_killed_build_is_settled_by_the_next_write(spec: str, tmp_path: Path) -> None:
    """The next write rolls a killed build back (its instant, MDT deltacommit and partition
    folder go), or completes it once its partitions were declared (step 5)."""
    root = _table(tmp_path)
    assert _crash(spec, lambda: _build(root, RECORD_INDEX_PARTITION)) == 137
    hudi_ds.write(str(root), batch(3), _opts())
    cfg = _config(root)
    if spec == "indexing:5":
        assert len(_indexing_files(root)) == 1
        _assert_built(root, [RECORD_INDEX_PARTITION])
        return
    assert _indexing_files(root) == {}
    assert RECORD_INDEX_PARTITION not in declared_partitions(cfg)
    assert not (root / ".hoodie" / "metadata" / RECORD_INDEX_PARTITION).exists()
    _assert_built(root, [])
    _build(root, RECORD_INDEX_PARTITION)
    _assert_built(root, [RECORD_INDEX_PARTITION])


def _stalled_build(root: Path, name: str, opts: tuple[str, ...] = ()) -> int:
    """A forked child building ``name``, stopped (SIGSTOP) once its partition is built: its
    pid."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        code = 1
        try:
            os.environ[STALL_ENV] = "indexing:4"
            _build(root, name, opts=opts)
            code = 0
        finally:
            os._exit(code)
    _stopped(pid)
    return pid


def _resume(pid: int) -> int:
    os.kill(pid, signal.SIGCONT)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


def _stopped(pid: int, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        stat = Path(f"/proc/{pid}/stat").read_text()
        if stat.rsplit(")", 1)[1].split()[0] == "T":
            return
        time.sleep(0.01)
    raise AssertionError("the build did not reach its stall point")


def test_a_writer_waits_for_the_build_lock(tmp_path: Path) -> None:
    """A build stopped (SIGSTOP) with its partition built, under the file-system lock: a
    write gives up on the lock and leaves no instant; once the build completes, the write
    goes through and the partition follows it."""
    occ = {
        **OCC_OPTIONS,
        "hoodie.write.lock.wait_time_ms": "10",
        "hoodie.write.lock.num_retries": "1",
    }
    root = _table(tmp_path, **occ)
    lock_opts = tuple(a for k, v in occ.items() for a in ("-o", f"{k}={v}"))
    pid = _stalled_build(root, RECORD_INDEX_PARTITION, lock_opts)
    try:
        before = [i.requested_time for i in _timeline(root).completed()]
        with pytest.raises(HudiError, match="lock"):
            hudi_ds.write(str(root), batch(3), _opts(**occ))
        assert [i.requested_time for i in _timeline(root).completed()] == before
    finally:
        code = _resume(pid)
    assert code == 0
    hudi_ds.write(str(root), batch(3), _opts(**occ))
    _assert_built(root, [RECORD_INDEX_PARTITION])


def test_a_write_without_the_lock_rolls_the_build_back(tmp_path: Path) -> None:
    """Single-writer mode (no lock): a write committed while a build is stopped settles it
    (rolls it back); the build, continued, finds it gone, fails and leaves nothing of it; the
    next build succeeds."""
    root = _table(tmp_path)
    pid = _stalled_build(root, RECORD_INDEX_PARTITION)
    try:
        hudi_ds.write(str(root), batch(3), _opts())
    finally:
        code = _resume(pid)
    assert code == 1
    assert _indexing_files(root) == {}
    assert not (root / ".hoodie" / "metadata" / RECORD_INDEX_PARTITION).exists()
    data = {i.requested_time for i in _timeline(root)}
    mdt_only = [t.requested_time for t in _timeline(root, mdt=True).filter_actions("deltacommit")]
    assert [t for t in mdt_only if t not in data and not t.startswith("0000")] == []
    _assert_built(root, [])
    _build(root, RECORD_INDEX_PARTITION)
    _assert_built(root, [RECORD_INDEX_PARTITION])


def test_fixture_record_index_built_again(tmp_path: Path) -> None:
    """Hudi 1.1's record index of ``cow_v9_txns_simple_meta``, removed
    (``hoodie.metadata.record.index.enable=false`` on a write), built again by the indexing
    action: the same key -> (partition, file group) entries Java wrote, plus the write's."""
    root = unzip("cow_v9_txns_simple_meta", tmp_path)
    java = stored_record_index(root)
    rows = hudi_ds.read(str(root))
    data = rows.drop_columns([c for c in rows.column_names if c.startswith("_hoodie_")])
    off = {"hoodie.metadata.record.index.enable": "false"}
    hudi_ds.write(
        str(root), data.slice(0, 1), {"hoodie.datasource.write.operation": "upsert", **off}
    )
    assert RECORD_INDEX_PARTITION not in declared_partitions(_config(root))
    out = _build(root, RECORD_INDEX_PARTITION)
    assert out["built"] == [RECORD_INDEX_PARTITION]
    _assert_built(root, [RECORD_INDEX_PARTITION])
    rebuilt = stored_record_index(root)
    assert {k: (v.partition, v.file_id) for k, v in rebuilt.items()} == {
        k: (v.partition, v.file_id) for k, v in java.items()
    }


def test_archival_and_metadata_compaction_after_a_build(tmp_path: Path) -> None:
    """Writes after a build archive the data and MDT timelines and compact the MDT; the
    indexing instant stays on the active timeline (it is not a commit: Java's archival leaves
    it too), the built partitions stay in step and hudi-rs reads the table."""
    from tests.metadata.test_archival import KEEP

    opts = _opts(**{**KEEP, "hoodie.clean.automatic": "true"})
    root = _table(tmp_path, **opts)
    ts = _build(root, *STATS, RECORD_INDEX_PARTITION)["indexing_instants"]
    assert len(ts) == 2
    for k in range(3, 7):
        hudi_ds.write(str(root), batch(k), opts)
    assert list((root / ".hoodie" / "timeline" / "history").iterdir())
    tl = _timeline(root)
    assert all(tl.is_completed(t) and tl.get(t).action == "indexing" for t in ts)  # type: ignore[union-attr]
    assert tl.first_non_savepoint_commit().requested_time > min(ts)  # type: ignore[union-attr]
    assert _timeline(root, mdt=True).completed().filter_actions("commit")  # MDT compacted
    _assert_built(root, [*STATS, RECORD_INDEX_PARTITION])


def _snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


@pytest.mark.parametrize(
    ("case", "names", "error"),
    [
        ("v9", ["secondary_index_x"], "column_stats, partition_stats, record_index, bloom_filters"),
        ("no_meta", [RECORD_INDEX_PARTITION], "meta fields"),
    ],
)
def test_refused_builds_leave_the_table_unchanged(
    case: str, names: list[str], error: str, tmp_path: Path
) -> None:
    """A partition hudi_ds does not build, a record index of a table without meta fields:
    refused with the reason, the table byte for byte as it was (versions below 8 and tables
    without a metadata table: test_column_stats)."""
    from tests.test_cli import run

    root = tmp_path / "t"
    over = {
        "v9": {},
        "no_meta": {"hoodie.populate.meta.fields": "false"},
    }[case]
    hudi_ds.write(str(root), batch(1), {**_opts(), **over})
    before = _snapshot(root)
    code, _, err = run("metadata", str(root), *[a for n in names for a in ("--build", n)])
    assert code != 0 and error in err, err
    assert _snapshot(root) == before
