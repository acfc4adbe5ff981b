"""Tests of hudi_ds.timeline against the real Hudi fixture tables (no JVM)."""

from __future__ import annotations

import collections
import io
import json
import os
import re
from importlib import resources
from pathlib import Path
from typing import Any

import fastavro
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hudi_ds.errors import CorruptFileError, InstantNotFoundError, TimelineError
from hudi_ds.log.archive import load_archived
from hudi_ds.log.block import BlockType, HeaderKey, encode_block
from hudi_ds.storage import Storage
from hudi_ds.timeline import (
    ACTIONS,
    CLEAN,
    CLUSTERING,
    COMMIT,
    COMPACTION,
    DELTA_COMMIT,
    LOG_COMPACTION,
    REPLACE_COMMIT,
    ROLLBACK,
    SAVEPOINT,
    CleanerPlan,
    CleanMetadata,
    CommitMetadata,
    CompactionOperation,
    CompactionPlan,
    Instant,
    RequestedReplaceMetadata,
    RollbackMetadata,
    RollbackPlan,
    SavepointMetadata,
    State,
    Timeline,
    TimelineWriter,
    WriteStat,
    format_instant_time,
    new_instant_time,
    timeline_dir,
)
from hudi_ds.timeline.avro_record import avro_schema, read_avro_records, write_avro_record
from hudi_ds.timeline.metadata import RuntimeStats
from hudi_ds.timeline.plans import (
    ActionInstant,
    CleanFileInfo,
    CleanPartitionMetadata,
    IndexCommitMetadata,
    IndexPlan,
    InstantInfo,
    RollbackPartitionMetadata,
    RollbackRequest,
    SavepointPartitionMetadata,
)
from tests.fixtures import (
    FIXTURES_DIR,
    REFERENCE_AVRO_SCHEMAS,
    fixture_names,
    fixture_table,
    fixtures_present,
    require_fixtures,
)

FIXTURES = fixture_names()


# -- fixture helpers -------------------------------------------------------------------------------


def _readme_completed_actions() -> dict[str, collections.Counter[str]]:
    """The README's "completed actions" column: independent ground truth per fixture."""
    lines = (FIXTURES_DIR / "README.md").read_text(encoding="utf-8").splitlines()
    rows = [line for line in lines if line.startswith("|")]
    header = [c.strip() for c in rows[0].strip("|").split("|")]
    name_col, actions_col = header.index("name"), header.index("completed actions")
    out: dict[str, collections.Counter[str]] = {}
    for row in rows[2:]:
        cells = [c.strip() for c in row.strip("|").split("|")]
        name = cells[name_col].strip("`")
        counter: collections.Counter[str] = collections.Counter()
        for part in cells[actions_col].split(","):
            part = part.strip()
            if part and part != "—":
                action, _, n = part.partition("\u00d7")  # e.g. "commit\u00d72"
                counter[action.strip()] = int(n)
        out[name] = counter
    return out


README_ACTIONS = _readme_completed_actions() if fixtures_present() else {}


def _layout_of(root: Path) -> int:
    props = (root / ".hoodie" / "hoodie.properties").read_text(encoding="utf-8")
    m = re.search(r"^hoodie\.timeline\.layout\.version=(\d+)\s*$", props, re.M)
    if m:
        return int(m.group(1))
    v = re.search(r"^hoodie\.table\.version=(\d+)\s*$", props, re.M)
    return 2 if v and int(v.group(1)) >= 8 else 1


def _load(name: str, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int, Timeline]:
    root = fixture_table(name, tmp_path_factory)
    layout = _layout_of(root)
    return root, layout, Timeline.load(Storage(str(root)), layout)


def _timeline_files(root: Path, layout: int) -> list[Path]:
    folder = root / timeline_dir(layout)
    return sorted(p for p in folder.iterdir() if p.is_file())


def test_readme_lists_every_fixture() -> None:
    require_fixtures()
    assert set(README_ACTIONS) == set(FIXTURES)


# -- loading real timelines ------------------------------------------------------------------------


@pytest.mark.parametrize("name", FIXTURES)
def test_completed_actions_match_readme(
    name: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    _, _, tl = _load(name, tmp_path_factory)
    got = collections.Counter(i.action for i in tl.completed())
    assert got == README_ACTIONS[name]
    assert not tl.pending()  # no fixture has a pending instant
    for inst in tl.completed():
        assert inst.completion_time is not None
        assert tl.completion_time(inst.requested_time) == inst.completion_time
        assert tl.visibility_time(inst) >= inst.requested_time
        assert tl.mtime_ms(inst.requested_time)


@pytest.mark.parametrize("name", FIXTURES)
def test_commit_metadata_of_every_data_instant(
    name: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    root, _, tl = _load(name, tmp_path_factory)
    data = tl.commits()
    n_stats = 0
    for inst in data:
        md = tl.read_commit_metadata(inst)
        assert md is tl.read_commit_metadata(inst.requested_time)  # cached
        stats = list(md.write_stats())  # may be empty: an update that matched no row
        n_stats += len(stats)
        for s in stats:
            assert isinstance(s.file_id, str) and s.file_id, (inst, s)
            assert s.path, (inst, s)
            # no fixture was cleaned: every file a completed instant wrote is still there
            assert (root / s.path).is_file(), s.path
            for lf in s.log_files or []:
                part = s.partition_path or ""
                assert (root / part / lf).is_file(), lf
        assert md.write_paths() == [s.path for s in stats]
        for partition, ids in md.file_ids_by_partition().items():
            assert ids <= {s.file_id for s in md.partition_to_write_stats[partition]}
        if inst.action == REPLACE_COMMIT:
            assert md.is_replace
        else:
            assert not md.replaced_file_ids()
    assert (n_stats > 0) == bool(data)
    if data:
        assert tl.latest_schema() is not None
        last = tl.last_completed(*[a for a in (COMMIT, DELTA_COMMIT, REPLACE_COMMIT)])
        assert last is not None and last in data
    first = tl.first_active_time()
    assert first == (tl[0].requested_time if tl else None)


@pytest.mark.parametrize("name", [n for n in FIXTURES if README_ACTIONS[n].get(REPLACE_COMMIT)])
def test_replacecommits_expose_replaced_file_ids(
    name: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    _, _, tl = _load(name, tmp_path_factory)
    replaces = tl.commits().filter_actions(REPLACE_COMMIT)
    assert len(replaces) == README_ACTIONS[name][REPLACE_COMMIT]
    all_replaced = tl.replaced_file_ids()
    assert all_replaced
    for inst in replaces:
        replaced = tl.read_commit_metadata(inst).replaced_file_ids()
        assert replaced, inst
        # replaced file groups were written by earlier data instants
        earlier: dict[str, set[str]] = {}
        for prev in tl.commits():
            if prev.requested_time >= inst.requested_time:
                continue
            for p, ids in tl.read_commit_metadata(prev).file_ids_by_partition().items():
                earlier.setdefault(p, set()).update(ids)
        for partition, ids in replaced.items():
            assert ids <= earlier.get(partition, set()), (inst, partition)
            assert ids <= all_replaced[partition]
        # as of just before the replacecommit became visible, its file groups are still live
        done = tl.visibility_time(inst)
        before = tl.replaced_file_ids(as_of=str(int(done) - 1).zfill(len(done)))
        at = tl.replaced_file_ids(as_of=done)
        for partition, ids in replaced.items():
            assert ids <= at[partition]
            assert not ids & before.get(partition, set())


@pytest.mark.parametrize(
    ("name", "rolled_back"),
    [
        ("mor_parquet_v6_nonpartitioned_rollback", "20250126040826878"),
        ("mor_avro_v9_nonpartitioned_rollback", "20260403184242950"),
    ],
)
def test_rollback_fixtures_expose_the_rolled_back_instant(
    name: str, rolled_back: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    root, _, tl = _load(name, tmp_path_factory)
    assert tl.rolled_back_instants() == {rolled_back}
    assert not tl.contains(rolled_back)  # its instant files were deleted
    (rb,) = tl.completed().filter_actions(ROLLBACK)
    meta = tl.read_rollback_metadata(rb)
    assert meta.rolled_back_instants == [rolled_back]
    assert meta.instants_rollback == [InstantInfo(rolled_back, DELTA_COMMIT)]
    assert meta.total_files_deleted == 1
    plan = tl.read_rollback_plan(rb)
    assert plan.instant_to_rollback == InstantInfo(rolled_back, DELTA_COMMIT)
    assert plan.rollback_requests
    if "v6" in name:
        # the v6 rollback appended a command block to the log file of the failed instant
        (pm,) = meta.partition_metadata.values()
        assert pm.rollback_log_files and pm.log_files_from_failed_commit
        assert any(".log.2_" in f for f in pm.rollback_log_files)
    inflight = tl.file_paths(rb.requested_time)[State.INFLIGHT]
    assert RollbackPlan.from_bytes((root / inflight).read_bytes()) == RollbackPlan()


@pytest.mark.parametrize(
    "name", [n for n in FIXTURES if "mor" in n and README_ACTIONS[n].get(COMMIT)]
)
def test_compaction_plans_parse_with_existing_files(
    name: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    root, _, tl = _load(name, tmp_path_factory)
    compactions = [i for i in tl.commits() if tl.origin_action(i.requested_time) == COMPACTION]
    assert len(compactions) == README_ACTIONS[name][COMMIT]
    for inst in compactions:
        plan = tl.read_compaction_plan(inst)
        assert plan.version == 2
        assert plan.operations
        md = tl.read_commit_metadata(inst)
        assert md.compacted and md.operation_type == "COMPACT"
        for op in plan.operations:
            assert (
                op.file_id and op.base_instant_time and op.base_instant_time < inst.requested_time
            )
            if op.base_file_rel_path:
                assert (root / op.base_file_rel_path).is_file()
            for rel in op.log_file_rel_paths:
                assert (root / rel).is_file()
            assert op.metrics and op.metrics["TOTAL_LOG_FILES"] == len(op.delta_file_paths or [])
        # the compaction commit rewrote exactly the planned file groups
        planned = {(op.partition_path, op.file_id) for op in plan.operations}
        written = {(s.partition_path, s.file_id) for s in md.write_stats()}
        assert planned == written
        inflight = tl.file_paths(inst.requested_time)[State.INFLIGHT]
        assert (root / inflight).stat().st_size == 0


def test_v8_compaction_plan_details(tmp_path_factory: pytest.TempPathFactory) -> None:
    _, layout, tl = _load("mor_avro_v8_trips_8i3u1d", tmp_path_factory)
    assert layout == 2
    inst = tl.get("20251220210129235")
    assert inst is not None and inst.action == COMMIT and inst.is_completed
    assert inst.completion_time == "20251220210129883"
    assert tl.origin_action(inst.requested_time) == COMPACTION
    plan = tl.read_compaction_plan(inst)
    assert plan.operations is not None and len(plan.operations) == 3
    by_partition = {op.partition_path: op for op in plan.operations}
    op = by_partition["city=chennai"]
    assert op.file_id == "6e1d5cc4-c487-487d-abbe-fe9b30b1c0cc-0"
    assert op.base_instant_time == "20251220210108078"
    assert op.base_file_rel_path == (
        "city=chennai/6e1d5cc4-c487-487d-abbe-fe9b30b1c0cc-0_2-986-2794_20251220210108078.parquet"
    )
    assert len(op.log_file_rel_paths) == 2
    assert plan.extra_metadata == {"_hoodie.spark.sql.writes.prepped": "true"}
    assert plan.missing_schedule_partitions == []
    # the active timeline has no pending compaction any more
    assert not tl.pending_compactions()
    assert isinstance(tl.read_index_plan("20251220210117766"), IndexPlan)
    assert isinstance(tl.read_index_commit_metadata("20251220210117766"), IndexCommitMetadata)


def test_clustering_v9(tmp_path_factory: pytest.TempPathFactory) -> None:
    _, _, tl = _load("mor_avro_v9_txns_simple_meta", tmp_path_factory)
    clustering = [i for i in tl.commits() if tl.origin_action(i.requested_time) == CLUSTERING]
    assert len(clustering) == 1
    (inst,) = clustering
    assert inst.action == REPLACE_COMMIT
    req = tl.read_requested_replace(inst)
    assert req.operation_type == "CLUSTER"
    assert req.clustering_plan is not None and req.clustering_plan.input_groups
    slices = [s for g in req.clustering_plan.input_groups for s in g.slices or []]
    md = tl.read_commit_metadata(inst)
    assert md.operation_type == "CLUSTER"
    replaced = {(p, f) for p, ids in md.replaced_file_ids().items() for f in ids}
    assert replaced == {(s.partition_path, s.file_id) for s in slices}
    # an insert_overwrite's requested metadata is all null
    overwrite = [i for i in tl.commits() if tl.origin_action(i.requested_time) == REPLACE_COMMIT]
    assert overwrite
    assert tl.read_requested_replace(overwrite[0]) == RequestedReplaceMetadata(version=None)


@pytest.mark.parametrize("name", FIXTURES)
def test_archived_timeline_of_fixtures_is_empty(
    name: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    root, layout, _ = _load(name, tmp_path_factory)
    archived = load_archived(Storage(str(root)), layout)
    assert len(archived) == 0


# -- round trips -----------------------------------------------------------------------------------


def _json_files(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    require_fixtures()
    out = []
    for name in FIXTURES:
        root = fixture_table(name, tmp_path_factory)
        if _layout_of(root) != 1:
            continue
        for p in _timeline_files(root, 1):
            if p.read_bytes()[:1] == b"{":
                out.append(p)
    return out


def test_commit_metadata_json_round_trip(tmp_path_factory: pytest.TempPathFactory) -> None:
    files = _json_files(tmp_path_factory)
    assert len(files) >= 50
    kinds: collections.Counter[str] = collections.Counter()
    for path in files:
        raw = path.read_bytes()
        md = CommitMetadata.from_bytes(raw)
        out = md.to_json_bytes()
        again = CommitMetadata.from_bytes(out)
        assert again == md, path
        fixture_obj = json.loads(raw)
        ours = json.loads(out)
        assert ours == fixture_obj, path  # structurally equal, "null" strings included
        assert out == raw, path  # and even byte for byte (Jackson's pretty printer)
        for partition, stats in fixture_obj["partitionToWriteStats"].items():
            for theirs, mine in zip(stats, ours["partitionToWriteStats"][partition], strict=True):
                assert list(mine) == list(theirs)  # same keys, same order
                kinds["delta" if "logFiles" in theirs else "base"] += 1
    assert kinds["delta"] and kinds["base"]


def test_json_details_of_a_v6_deltacommit(tmp_path_factory: pytest.TempPathFactory) -> None:
    root, _, tl = _load("mor_avro_v6_trips_8i1u", tmp_path_factory)
    first = tl.read_commit_metadata("20250331030642808")
    (s,) = first.partition_to_write_stats["city=san_francisco"]
    assert s.prev_commit == "null" and not s.is_delta
    assert s.runtime_stats == RuntimeStats(0, 491, 0)
    second = tl.read_commit_metadata("20250331030645735")
    (d,) = second.partition_to_write_stats["city=san_francisco"]
    assert d.is_delta and d.log_version == 1 and d.log_offset == 0
    assert d.prev_commit == "20250331030642808"
    assert d.log_files == [
        ".d0304c53-6fd2-4b7a-a9d6-5ff632f79224-0_20250331030642808.log.1_0-26-85"
    ]
    assert d.records_stats is None  # Java's empty Option, written back as {"val": null}
    assert d.to_json()["recordsStats"] == {"val": None}
    assert second.operation_type == "UPSERT_PREPPED"
    assert second.schema is not None and json.loads(second.schema)["type"] == "record"
    # inflight metadata: planned file ids, path null
    inflight = tl.read_commit_metadata(Instant("20250331030645735", DELTA_COMMIT, State.INFLIGHT))
    assert [s.file_id for s in inflight.write_stats()] == [
        "",
        "d0304c53-6fd2-4b7a-a9d6-5ff632f79224-0",
    ]
    assert all(s.path is None for s in inflight.write_stats())
    assert tl.read_commit_metadata(Instant("20250331030645735", DELTA_COMMIT, State.REQUESTED)) == (
        CommitMetadata()
    )
    # a new JSON write stat gets Java's shape
    new = CommitMetadata(
        {"p": [WriteStat(file_id="f-0", path="p/x.parquet", partition_path="p", num_writes=3)]},
        operation_type="UPSERT",
        extra_metadata={"schema": "{}"},
    )
    obj = json.loads(new.to_json_bytes())
    assert obj["partitionToWriteStats"]["p"][0]["prevCommit"] == "null"
    assert list(obj) == ["partitionToWriteStats", "compacted", "extraMetadata", "operationType"]
    assert (root / ".hoodie").is_dir()


def _avro_files(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    require_fixtures()
    out = []
    for name in FIXTURES:
        root = fixture_table(name, tmp_path_factory)
        for p in _timeline_files(root, _layout_of(root)):
            if p.read_bytes()[:4] == b"Obj\x01":
                out.append(p)
    return out


_RECORD_CLASSES: dict[str, Any] = {
    "HoodieCompactionPlan": CompactionPlan,
    "HoodieRequestedReplaceMetadata": RequestedReplaceMetadata,
    "HoodieRollbackPlan": RollbackPlan,
    "HoodieRollbackMetadata": RollbackMetadata,
    "HoodieIndexPlan": IndexPlan,
    "HoodieIndexCommitMetadata": IndexCommitMetadata,
}


def test_avro_round_trip(tmp_path_factory: pytest.TempPathFactory) -> None:
    files = _avro_files(tmp_path_factory)
    seen: collections.Counter[str] = collections.Counter()
    for path in files:
        raw = path.read_bytes()
        reader = fastavro.reader(io.BytesIO(raw))
        assert reader.codec == "null"
        writer_schema: dict[str, Any] = reader.writer_schema  # type: ignore[assignment]
        schema_name = writer_schema["name"].rsplit(".", 1)[-1]
        records = list(reader)
        assert len(records) == 1
        if schema_name in ("HoodieCommitMetadata", "HoodieReplaceCommitMetadata"):
            obj: Any = CommitMetadata.from_bytes(raw)
            out = obj.to_avro_bytes()
            assert obj.is_replace == (schema_name == "HoodieReplaceCommitMetadata")
            again: Any = CommitMetadata.from_bytes(out)
        else:
            cls = _RECORD_CLASSES[schema_name]
            obj = cls.from_bytes(raw)
            out = obj.to_bytes()
            again = cls.from_bytes(out)
        assert again == obj, path
        out_reader = fastavro.reader(io.BytesIO(out))
        out_schema: dict[str, Any] = out_reader.writer_schema  # type: ignore[assignment]
        assert out_schema["name"] == writer_schema["name"]
        assert list(out_reader) == records, path
        seen[schema_name] += 1
    assert set(seen) >= {
        "HoodieCommitMetadata",
        "HoodieReplaceCommitMetadata",
        "HoodieCompactionPlan",
        "HoodieRequestedReplaceMetadata",
        "HoodieRollbackPlan",
        "HoodieRollbackMetadata",
    }


def test_packaged_schemas_equal_the_fixture_writer_schemas() -> None:
    ref = REFERENCE_AVRO_SCHEMAS
    if not ref.is_dir():
        pytest.skip(f"Hudi's reference Avro schemas are not at {ref}")
    for name in ["HoodieCommitMetadata", "HoodieReplaceCommitMetadata", "HoodieCompactionPlan"]:
        theirs = fastavro.parse_schema(json.loads((ref / f"{name}.v9.avsc").read_text()))
        assert avro_schema(name) == theirs
    for name in [
        "HoodieCleanerPlan",
        "HoodieCleanMetadata",
        "HoodieSavepointMetadata",
        "HoodieArchivedMetaEntry",
    ]:
        assert avro_schema(name)["name"].endswith(name)


def test_rollback_and_compaction_plan_round_trips() -> None:
    plan = RollbackPlan(
        InstantInfo("20250101000000000", DELTA_COMMIT),
        [
            RollbackRequest(
                "p", "f-0", "20241231000000000", ["p/a.parquet"], {"p/.f-0_x.log.1": 10}
            ),
            RollbackRequest("q", None, None, [], None),
        ],
    )
    assert RollbackPlan.from_bytes(plan.to_bytes()) == plan
    meta = RollbackMetadata(
        "20250101000000001",
        12,
        1,
        ["20250101000000000"],
        {"p": RollbackPartitionMetadata("p", ["p/a.parquet"], [], {"p/.l": 5}, None)},
        1,
        [InstantInfo("20250101000000000", DELTA_COMMIT)],
    )
    assert RollbackMetadata.from_bytes(meta.to_bytes()) == meta
    assert meta.rolled_back_instants == ["20250101000000000"]
    cplan = CompactionPlan(
        [
            CompactionOperation(
                "20250101000000000",
                [".f-0_20250101000000000.log.1_0-1-1"],
                "f-0_0-1-1_20250101000000000.parquet",
                "f-0",
                "p=1",
                {"TOTAL_LOG_FILES": 1.0},
            ),
            CompactionOperation("20250101000000000", [".g-0_x.log.1_0-1-1"], None, "g-0", ""),
        ],
        extra_metadata={"k": "v"},
    )
    back = CompactionPlan.from_bytes(cplan.to_bytes())
    assert back == cplan
    assert back.operations is not None
    assert back.operations[0].base_file_rel_path == "p=1/f-0_0-1-1_20250101000000000.parquet"
    assert back.operations[1].base_file_rel_path is None
    assert back.operations[1].log_file_rel_paths == [".g-0_x.log.1_0-1-1"]


def test_clean_and_savepoint_round_trips() -> None:
    plan = CleanerPlan(
        earliest_instant_to_retain=ActionInstant("20250101000000000", COMMIT, "COMPLETED"),
        last_completed_commit_timestamp="20250102000000000",
        policy="KEEP_LATEST_COMMITS",
        file_paths_to_be_deleted_per_partition={"p": [CleanFileInfo("p/a.parquet", False)]},
        partitions_to_be_deleted=[],
    )
    assert CleanerPlan.from_bytes(plan.to_bytes()) == plan
    meta = CleanMetadata(
        "20250103000000000",
        5,
        1,
        "20250101000000000",
        "20250102000000000",
        {"p": CleanPartitionMetadata("p", "KEEP_LATEST_COMMITS", ["a"], ["a"], [], False)},
    )
    assert CleanMetadata.from_bytes(meta.to_bytes()) == meta
    sp = SavepointMetadata("me", 1, "c", {"p": SavepointPartitionMetadata("p", ["a.parquet"])})
    assert SavepointMetadata.from_bytes(sp.to_bytes()) == sp


def test_empty_content_is_no_content() -> None:
    for cls in (
        CompactionPlan,
        RollbackPlan,
        RollbackMetadata,
        CleanerPlan,
        CleanMetadata,
        RequestedReplaceMetadata,
        SavepointMetadata,
    ):
        assert cls.from_bytes(b"") == cls()
    assert CommitMetadata.from_bytes(b"") == CommitMetadata()
    assert CommitMetadata.from_bytes(b"  \n") == CommitMetadata()
    with pytest.raises(CorruptFileError):
        CommitMetadata.from_bytes(b"garbage")
    with pytest.raises(CorruptFileError):
        CompactionPlan.from_bytes(b"Obj\x01torn")
    with pytest.raises(CorruptFileError):
        read_avro_records(b"{}")


def test_replace_metadata_conversions() -> None:
    md = CommitMetadata(
        {"p": [WriteStat(file_id="n-0", path="p/n.parquet", partition_path="p")]},
        operation_type="INSERT_OVERWRITE",
        partition_to_replace_file_ids={"p": ["o-0"]},
    )
    assert md.is_replace
    recs = read_avro_records(md.to_avro_bytes())
    assert recs[0]["partitionToReplaceFileIds"] == {"p": ["o-0"]}
    assert CommitMetadata.from_bytes(md.to_avro_bytes()) == md
    assert CommitMetadata.from_bytes(md.to_json_bytes()) == md
    assert md.to_bytes(1) == md.to_json_bytes()
    assert md.replaced_file_ids() == {"p": {"o-0"}}
    # JSON -> Avro: fields the v6 JSON lacks get Java's defaults
    stat = md.partition_to_write_stats["p"][0]
    avro = stat.to_avro()
    assert avro["numUpdates"] == 0 and avro["totalLogFiles"] is None
    assert "recordsStats" not in avro
    assert write_avro_record("HoodieCommitMetadata", CommitMetadata().to_avro_record())


# -- instant grammar -------------------------------------------------------------------------------


@pytest.mark.parametrize("name", FIXTURES)
def test_grammar_round_trip_of_fixture_files(
    name: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    root, layout, _ = _load(name, tmp_path_factory)
    hoodie = root / ".hoodie"
    names = [p.name for p in hoodie.iterdir()]
    if layout == 2:
        names += [p.name for p in (hoodie / "timeline").iterdir()]
    instant_files = {p.name for p in _timeline_files(root, layout) if p.name[0].isdigit()}
    parsed = set()
    for file_name in names:
        inst = Instant.parse(file_name, layout)
        if inst is None:
            assert file_name not in instant_files, file_name
            continue
        assert inst.file_name(layout) == file_name
        assert Instant.parse(inst.file_name(layout), layout) == inst
        parsed.add(file_name)
    assert parsed == instant_files


@pytest.mark.parametrize(
    ("file_name", "layout", "expected"),
    [
        ("20240101000000000.inflight", 1, Instant("20240101000000000", COMMIT, State.INFLIGHT)),
        ("20240101000000000.inflight", 2, Instant("20240101000000000", COMMIT, State.INFLIGHT)),
        ("20240101000000000.commit", 1, Instant("20240101000000000", COMMIT, State.COMPLETED)),
        (
            "20240101000000000_20240101000000001.deltacommit",
            2,
            Instant("20240101000000000", DELTA_COMMIT, State.COMPLETED, "20240101000000001"),
        ),
        ("20240101000000000.commit", 2, Instant("20240101000000000", COMMIT, State.COMPLETED)),
        (
            "20240101000000000.clustering.requested",
            2,
            Instant("20240101000000000", CLUSTERING, State.REQUESTED),
        ),
        (
            "20240101000000000.logcompaction.inflight",
            1,
            Instant("20240101000000000", LOG_COMPACTION, State.INFLIGHT),
        ),
        (
            "20240101000000000.savepoint.inflight",
            1,
            Instant("20240101000000000", SAVEPOINT, State.INFLIGHT),
        ),
        ("20240101000000.commit", 1, Instant("20240101000000", COMMIT, State.COMPLETED)),
        ("hoodie.properties", 1, None),
        ("hoodie.properties.backup", 1, None),
        (".aux", 1, None),
        ("archived", 1, None),
        ("timeline", 2, None),
        ("20240101000000000_20240101000000001.deltacommit", 1, None),  # layout 2 name
        ("20240101000000000.commit.inflight", 1, None),  # commit's inflight is T.inflight
        ("20240101000000000_20240101000000001.inflight", 2, None),
        ("20240101000000000_20240101000000001.commit.requested", 2, None),
        ("20240101000000000.compaction", 1, None),  # a compaction completes as commit
        ("20240101000000000.clustering.requested", 1, None),  # layout 1: replacecommit
        ("20240101000000000.savepoint.requested", 1, None),
        ("20240101000000000.commit.tmp", 1, None),
        ("20240101000000000.deltacommit.requested.tmp", 1, None),
        (".20240101000000000_20240101000000001.deltacommit.4f2a.tmp", 2, None),
        ("._20240101000000000.commit", 1, None),  # macOS resource fork
        ("20240101000000000.unknown", 2, None),
        ("2024010100000000a.commit", 2, None),
    ],
)
def test_grammar_cases(file_name: str, layout: int, expected: Instant | None) -> None:
    assert Instant.parse(file_name, layout) == expected


def test_grammar_formatting() -> None:
    t = "20240101000000000"
    assert Instant(t, COMPACTION, State.COMPLETED, "x").file_name(1) == f"{t}.commit"
    assert Instant(t, COMPACTION, State.COMPLETED, "20240101000000009").file_name(2) == (
        f"{t}_20240101000000009.commit"
    )
    assert Instant(t, CLUSTERING, State.INFLIGHT).file_name(1) == f"{t}.replacecommit.inflight"
    assert Instant(t, CLUSTERING, State.INFLIGHT).file_name(2) == f"{t}.clustering.inflight"
    assert Instant(t, CLUSTERING, State.COMPLETED, "2").file_name(2) == f"{t}_2.replacecommit"
    assert Instant(t, LOG_COMPACTION, State.COMPLETED, "2").file_name(2) == f"{t}_2.deltacommit"
    assert Instant(t, COMMIT, State.REQUESTED).file_name(2) == f"{t}.commit.requested"
    with pytest.raises(ValueError):
        Instant(t, SAVEPOINT, State.REQUESTED).file_name(1)
    with pytest.raises(ValueError):
        Instant(t, "bogus", State.REQUESTED).file_name(1)
    with pytest.raises(ValueError):
        Instant(t, COMMIT, State.REQUESTED).file_name(3)


def test_instant_ordering() -> None:
    a = Instant("20240101000000001", COMMIT, State.COMPLETED, "20240101000000009")
    b = Instant("20240101000000002", DELTA_COMMIT, State.REQUESTED)
    c = Instant("20240101000000002", DELTA_COMMIT, State.INFLIGHT)
    d = Instant("20240101000000002", DELTA_COMMIT, State.COMPLETED, "20240101000000003")
    assert sorted([d, c, b, a]) == [a, b, c, d]
    assert a < b < c < d and d > a and a <= a


_digits = st.text(alphabet="0123456789", min_size=14, max_size=20)


@st.composite
def _instants(draw: st.DrawFn) -> Instant:
    action = draw(st.sampled_from(sorted(ACTIONS)))
    states = [s for s in State if not (action == SAVEPOINT and s is State.REQUESTED)]
    state = draw(st.sampled_from(states))
    completion = draw(st.one_of(st.none(), _digits)) if state is State.COMPLETED else None
    return Instant(draw(_digits), action, state, completion)


@settings(max_examples=500, deadline=None)
@given(inst=_instants(), layout=st.sampled_from([1, 2]))
def test_grammar_property(inst: Instant, layout: int) -> None:
    name = inst.file_name(layout)
    parsed = Instant.parse(name, layout)
    assert parsed == inst.normalized(layout)
    assert parsed is not None and parsed.file_name(layout) == name


@settings(max_examples=300, deadline=None)
@given(name=st.text(alphabet="0123456789._abcdefghijklmnopqrstuvwxyz", max_size=40))
def test_grammar_parse_is_total(name: str) -> None:
    for layout in (1, 2):
        inst = Instant.parse(name, layout)
        if inst is not None:  # whatever parses, formats back to itself
            assert inst.file_name(layout) == name


# -- timeline queries ------------------------------------------------------------------------------


def test_visibility_rule_by_layout() -> None:
    # requested order differs from completion order
    a = Instant("20240101000000001", DELTA_COMMIT, State.COMPLETED, "20240101000000009")
    b = Instant("20240101000000002", DELTA_COMMIT, State.COMPLETED, "20240101000000003")
    p = Instant("20240101000000004", COMPACTION, State.REQUESTED)
    tl2 = Timeline([a, b, p], 2)
    assert [i.requested_time for i in tl2.completed_before_or_at("20240101000000005")] == [
        b.requested_time
    ]
    assert tl2.last_completed() == a
    assert list(tl2.pending_compactions()) == [p]
    assert tl2.commits().instants == (a, b)
    tl1 = Timeline([a, b, p], 1)
    assert list(tl1.completed_before_or_at("20240101000000001")) == [a]
    assert tl1.last_completed() == b
    assert tl2.is_completed(a.requested_time) and not tl2.is_completed(p.requested_time)
    assert tl2.completion_time(p.requested_time) is None
    assert tl2.contains_or_before_start("20231231000000000")
    assert not tl2.contains_or_before_start("20240101000000003")
    assert tl2[0] == a and tl2[-1] == p and list(reversed(tl2)) == [p, b, a]
    assert isinstance(tl2[1:], Timeline) and len(tl2[1:]) == 2
    assert "20240101000000002" in tl2 and b in tl2
    with pytest.raises(TimelineError):
        tl2.read_commit_metadata(a)


def test_legacy_layout2_completed_file_uses_mtime(tmp_path: Path) -> None:
    folder = tmp_path / ".hoodie" / "timeline"
    folder.mkdir(parents=True)
    t = "20240101000000000"
    (folder / f"{t}.commit.requested").write_bytes(b"")
    (folder / f"{t}.inflight").write_bytes(b"")
    (folder / f"{t}.commit").write_bytes(CommitMetadata(operation_type="INSERT").to_avro_bytes())
    mtime_ms = 1_704_067_200_123  # 2024-01-01T00:00:00.123Z
    os.utime(folder / f"{t}.commit", ns=(mtime_ms * 1_000_000, mtime_ms * 1_000_000))
    tl = Timeline.load(Storage(str(tmp_path)), 2)
    (inst,) = tl
    assert inst.is_completed and inst.completion_time == "20240101000000123"
    assert inst.completion_time == format_instant_time(mtime_ms)
    assert tl.read_commit_metadata(inst).operation_type == "INSERT"
    assert tl.file_paths(t) == {
        State.REQUESTED: f".hoodie/timeline/{t}.commit.requested",
        State.INFLIGHT: f".hoodie/timeline/{t}.inflight",
        State.COMPLETED: f".hoodie/timeline/{t}.commit",
    }


def test_timeline_starts_at_its_first_non_savepointed_commit(tmp_path: Path) -> None:
    """Archival beyond savepoints leaves holes after a savepointed commit: the timeline starts
    at the first commit-family instant no savepoint carries (Java's findFirstNonSavepointCommit);
    clean and rollback instants never start it."""
    hoodie = tmp_path / ".hoodie"
    hoodie.mkdir()
    t = [f"2024010100000000{k}" for k in range(8)]
    names = [
        f"{t[0]}.clean",  # an old clean left active
        f"{t[1]}.commit",
        f"{t[1]}.savepoint",  # t[2], t[3] archived: a hole
        f"{t[4]}.commit",
        f"{t[4]}.savepoint",
        f"{t[5]}.rollback",
        f"{t[6]}.commit",
        f"{t[7]}.compaction.requested",
    ]
    for n in names:
        (hoodie / n).write_bytes(b"")
    tl = Timeline.load(Storage(str(tmp_path)), 1)
    start = tl.first_non_savepoint_commit()
    assert start is not None and start.requested_time == tl.start_time() == t[6]
    assert tl.first_active_time() == t[0]
    assert tl.contains_or_before_start(t[2]) and tl.is_before_start(t[3])
    assert tl.contains_or_before_start(t[7]) and not tl.is_before_start(t[7])
    assert not tl.contains_or_before_start("20240101000000010")
    # every commit savepointed (after a restore): the first of them
    (hoodie / f"{t[6]}.savepoint").write_bytes(b"")
    (hoodie / f"{t[7]}.compaction.requested").unlink()
    assert Timeline.load(Storage(str(tmp_path)), 1).start_time() == t[1]
    # no savepoint: the first commit-family instant
    for n in (f"{t[1]}.savepoint", f"{t[4]}.savepoint", f"{t[6]}.savepoint"):
        (hoodie / n).unlink()
    assert Timeline.load(Storage(str(tmp_path)), 1).start_time() == t[1]


def test_custom_timeline_path(tmp_path: Path) -> None:
    assert timeline_dir(2, "tl") == ".hoodie/tl"
    assert timeline_dir(2, ".hoodie/tl") == ".hoodie/tl"
    assert timeline_dir(1) == ".hoodie" and timeline_dir(2) == ".hoodie/timeline"
    w = TimelineWriter(Storage(str(tmp_path)), 2, "tl")
    i = Instant(new_instant_time(), DELTA_COMMIT, State.REQUESTED)
    assert w.create_requested(i)
    assert (tmp_path / ".hoodie" / "tl" / i.file_name(2)).is_file()
    assert list(Timeline.load(Storage(str(tmp_path)), 2, "tl")) == [i]


def test_corrupt_instant_file_names_the_file(tmp_path: Path) -> None:
    hoodie = tmp_path / ".hoodie"
    hoodie.mkdir()
    (hoodie / "20240101000000000.deltacommit").write_bytes(b"\x00\x01garbage")
    tl = Timeline.load(Storage(str(tmp_path)), 1)
    with pytest.raises(CorruptFileError, match=re.escape("20240101000000000.deltacommit")):
        tl.read_commit_metadata("20240101000000000")
    with pytest.raises(InstantNotFoundError):
        tl.read_commit_metadata("20240101000000001")
    with pytest.raises(InstantNotFoundError):
        tl.read_compaction_plan("20240101000000000")


# -- writer ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("layout", [1, 2])
def test_writer_transitions(tmp_path: Path, layout: int) -> None:
    storage = Storage(str(tmp_path))
    w = TimelineWriter(storage, layout)
    folder = tmp_path / timeline_dir(layout)
    ts = new_instant_time()
    req = Instant(ts, DELTA_COMMIT, State.REQUESTED)

    assert w.create_requested(req) is True
    assert w.create_requested(req) is False  # the instant exists
    assert w.create_requested(Instant(ts, COMMIT, State.REQUESTED)) is False  # same time
    assert (folder / f"{ts}.deltacommit.requested").read_bytes() == b""
    assert list(Timeline.load(storage, layout)) == [req]

    md = CommitMetadata(
        {"p": [WriteStat(file_id="f-0", path="p/.f-0_x.log.1_0-1-1", log_files=["x"])]},
        extra_metadata={"schema": "{}"},
        operation_type="UPSERT",
    )
    inflight = w.transition_to_inflight(req, md.to_bytes(layout))
    assert inflight == Instant(ts, DELTA_COMMIT, State.INFLIGHT)
    with pytest.raises(TimelineError):
        w.transition_to_inflight(req)
    tl = Timeline.load(storage, layout)
    assert list(tl) == [inflight] and list(tl.pending()) == [inflight]
    assert tl.read_commit_metadata(inflight) == md

    done = w.complete(inflight, md.to_bytes(layout))
    assert done.is_completed and done.action == DELTA_COMMIT
    if layout == 1:
        assert done.completion_time == ts
        assert (folder / f"{ts}.deltacommit").is_file()
    else:
        assert done.completion_time is not None and done.completion_time > ts
        assert (folder / f"{ts}_{done.completion_time}.deltacommit").is_file()
    assert not [p for p in folder.iterdir() if p.name.endswith(".tmp")]
    tl = Timeline.load(storage, layout)
    assert list(tl) == [done] and list(tl.commits()) == [done]
    assert tl.read_commit_metadata(done) == md
    assert set(tl.file_paths(ts)) == set(State)
    with pytest.raises(TimelineError):
        w.complete(inflight, b"")
    with pytest.raises(TimelineError):
        w.transition_to_inflight(req)

    # a compaction: plan in the requested file, completes as a commit
    cts = new_instant_time(after=ts)
    creq = Instant(cts, COMPACTION, State.REQUESTED)
    plan = CompactionPlan([CompactionOperation(ts, ["x"], None, "f-0", "p")])
    assert w.create_requested(creq, plan.to_bytes())
    cinf = w.transition_to_inflight(creq)
    assert list(Timeline.load(storage, layout).pending_compactions()) == [cinf]
    cmd = CommitMetadata(compacted=True, operation_type="COMPACT")
    cdone = w.complete(cinf, cmd.to_bytes(layout))
    assert cdone.action == COMMIT
    tl = Timeline.load(storage, layout)
    assert tl.get(cts) == cdone and tl.origin_action(cts) == COMPACTION
    assert tl.read_compaction_plan(cdone) == plan
    assert not tl.pending_compactions()

    # a failed write: revert, then delete every file of it (rollback)
    fts = new_instant_time(after=cts)
    freq = Instant(fts, DELTA_COMMIT, State.REQUESTED)
    assert w.create_requested(freq)
    finf = w.transition_to_inflight(freq, b"")
    with pytest.raises(InstantNotFoundError):
        w.complete(Instant(fts, COMMIT, State.INFLIGHT), b"")  # wrong action: no such file
    assert w.revert_to_requested(finf) == freq
    assert Timeline.load(storage, layout).get(fts) == freq
    with pytest.raises(TimelineError):
        w.revert_to_requested(done)
    w.transition_to_inflight(freq)
    deleted = w.delete_instant_files(freq)
    assert len(deleted) == 2
    assert not Timeline.load(storage, layout).contains(fts)
    deleted = w.delete_instant_files(cdone)
    assert len(deleted) == 3  # compaction.requested, compaction.inflight, commit
    tl = Timeline.load(storage, layout)
    assert [i.requested_time for i in tl] == [ts]
    assert tl.reload() == tl and tl.path == timeline_dir(layout)


def test_writer_transitions_probe_names_without_listing_layout_1(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Layout 1: creating, starting and completing an instant never lists the timeline folder
    (as Java's HoodieActiveTimeline.createNewInstant / transitionState), yet a time already
    taken by any action is refused and completing twice is an error."""
    storage = Storage(str(tmp_path))
    w = TimelineWriter(storage, 1)
    taken = new_instant_time()
    assert w.create_requested(Instant(taken, ROLLBACK, State.REQUESTED))
    listed: list[str] = []
    real = Storage.list_files

    def list_files(self: Storage, rel: str = "", recursive: bool = False) -> list[Any]:
        listed.append(rel)
        return real(self, rel, recursive)

    monkeypatch.setattr(Storage, "list_files", list_files)
    assert w.create_requested(Instant(taken, DELTA_COMMIT, State.REQUESTED)) is False
    ts = new_instant_time(after=taken)
    req = Instant(ts, DELTA_COMMIT, State.REQUESTED)
    assert w.create_requested(req)
    inflight = w.transition_to_inflight(req, b"{}")
    w.complete(inflight, b"{}")
    with pytest.raises(TimelineError, match="already completed"):
        w.complete(inflight, b"{}")
    with pytest.raises(TimelineError, match="already completed"):
        w.transition_to_inflight(req)
    assert listed == []
    monkeypatch.undo()
    assert Timeline.load(storage, 1).is_completed(ts)


def test_writer_needs_requested_before_inflight(tmp_path: Path) -> None:
    w = TimelineWriter(Storage(str(tmp_path)), 2)
    i = Instant(new_instant_time(), DELTA_COMMIT, State.REQUESTED)
    with pytest.raises(InstantNotFoundError):
        w.transition_to_inflight(i)
    with pytest.raises(InstantNotFoundError):
        w.complete(i, b"")
    with pytest.raises(ValueError):
        TimelineWriter(Storage(str(tmp_path)), 3)


def test_new_instant_time_strictly_increasing() -> None:
    prev = new_instant_time()
    assert len(prev) == 17 and prev.isdigit()
    for _ in range(10_000):
        nxt = new_instant_time()
        assert nxt > prev
        prev = nxt
    after = "20991231235959998"
    assert new_instant_time(after=after) == "20991231235959999"
    assert new_instant_time(after=after) == "20991231235959999"  # `after` is not recorded
    assert new_instant_time() < after
    assert new_instant_time(after="20240101000000") > "20240101000000"
    assert new_instant_time(after="20240402123035233001") > "20240402123035233001"
    assert len(new_instant_time(timezone="LOCAL")) == 17
    assert len(new_instant_time(timezone="Asia/Tokyo")) == 17
    with pytest.raises(TimelineError):
        new_instant_time(after="99999999999999999")


# -- archived timelines ----------------------------------------------------------------------------


def _archived_entry(ts: str, action: str, state: str, **fields: Any) -> dict[str, Any]:
    rec: dict[str, Any] = {"commitTime": ts, "actionType": action, "actionState": state}
    rec.update(fields)
    return rec


def _packaged_schema_text() -> str:
    path = resources.files("hudi_ds.timeline").joinpath("avro", "HoodieArchivedMetaEntry.avsc")
    return json.dumps(json.loads(path.read_text(encoding="utf-8")))


def test_load_archived_v6(tmp_path: Path) -> None:
    schema = avro_schema("HoodieArchivedMetaEntry")
    md = CommitMetadata(
        {"p": [WriteStat(file_id="f-0", path="p/f-0_1-2-3_20240101000000000.parquet")]},
        operation_type="INSERT",
    )
    rb = RollbackMetadata("20240101000000003", 1, 0, ["20240101000000002"], {}, 1, [])
    records = [
        _archived_entry("20240101000000000", COMMIT, "REQUESTED"),
        _archived_entry("20240101000000000", COMMIT, "INFLIGHT"),
        _archived_entry(
            "20240101000000000", COMMIT, "COMPLETED", hoodieCommitMetadata=md.to_avro_record()
        ),
        _archived_entry(
            "20240101000000003", ROLLBACK, "COMPLETED", hoodieRollbackMetadata=rb.to_avro()
        ),
        _archived_entry("20240101000000004", DELTA_COMMIT, "INFLIGHT"),  # never completed
    ]
    payload = [b"\x00\x00\x00\x03", len(records).to_bytes(4, "big")]
    for rec in records:
        buf = io.BytesIO()
        fastavro.schemaless_writer(buf, schema, rec)
        payload += [len(buf.getvalue()).to_bytes(4, "big"), buf.getvalue()]
    block = encode_block(
        BlockType.AVRO_DATA,
        {HeaderKey.INSTANT_TIME: "20240101000000005", HeaderKey.SCHEMA: _packaged_schema_text()},
        b"".join(payload),
    )
    archived = tmp_path / ".hoodie" / "archived"
    archived.mkdir(parents=True)
    (archived / ".commits_.archive.1_1-0-1").write_bytes(block)
    (archived / "ignored.txt").write_bytes(b"x")
    tl = load_archived(Storage(str(tmp_path)), 1)
    assert [(i.requested_time, i.action) for i in tl] == [
        ("20240101000000000", COMMIT),
        ("20240101000000003", ROLLBACK),
    ]
    assert tl.read_commit_metadata("20240101000000000") == md
    assert tl.rolled_back_instants() == {"20240101000000002"}
    assert all(i.is_completed for i in tl)


def test_load_archived_lsm_history(tmp_path: Path) -> None:
    md = CommitMetadata(
        {"p": [WriteStat(file_id="f-0", path="p/f-0_1-2-3_20240101000000000.parquet")]},
        operation_type="INSERT",
    )
    plan = CompactionPlan([CompactionOperation("20240101000000000", [], None, "f-0", "p")])
    history = tmp_path / ".hoodie" / "timeline" / "history"
    history.mkdir(parents=True)
    table = pa.table(
        {
            "instantTime": ["20240101000000000", "20240101000000002"],
            "completionTime": ["20240101000000001", "20240101000000003"],
            "action": [COMMIT, COMMIT],
            "metadata": [md.to_avro_bytes(), CommitMetadata(compacted=True).to_avro_bytes()],
            "plan": [None, plan.to_bytes()],
            "version": [1, 1],
        }
    )
    pq.write_table(table, history / "20240101000000000_20240101000000002_0.parquet")
    pq.write_table(table.slice(0, 1), history / "20230101000000000_20230101000000002_0.parquet")
    manifest = {
        "files": [{"fileName": "20240101000000000_20240101000000002_0.parquet", "fileLen": 1}]
    }
    (history / "manifest_1").write_text(json.dumps(manifest))
    (history / "_version_").write_text("1")
    tl = load_archived(Storage(str(tmp_path)), 2)
    assert [(i.requested_time, i.completion_time) for i in tl] == [
        ("20240101000000000", "20240101000000001"),
        ("20240101000000002", "20240101000000003"),
    ]
    assert tl.read_commit_metadata("20240101000000000") == md
    assert tl.read_compaction_plan("20240101000000002") == plan
    assert tl.completed_before_or_at("20240101000000002").instants == (tl[0],)
    # without manifest: every LSM parquet file is read
    (history / "manifest_1").unlink()
    (history / "_version_").unlink()
    assert len(load_archived(Storage(str(tmp_path)), 2)) == 2


@pytest.mark.parametrize("layout", [1, 2])
def test_completion_time_chosen_after_the_hook(tmp_path: Path, layout: int) -> None:
    """A slow before_complete hook (MDT catch-up, compaction) runs before the completion time
    is chosen: the completed instant is never in the past of a reader that listed while the
    hook ran."""
    storage = Storage(str(tmp_path))
    seen: list[Instant] = []
    after_hook: list[str] = []

    def hook(done: Instant, content: bytes) -> None:
        assert not Timeline.load(storage, layout).get(done.requested_time).is_completed
        seen.append(done)
        after_hook.append(new_instant_time())  # what a reader's clock says meanwhile

    w = TimelineWriter(storage, layout, before_complete=hook)
    ts = new_instant_time()
    w.create_requested(Instant(ts, COMMIT, State.REQUESTED))
    inflight = w.transition_to_inflight(Instant(ts, COMMIT, State.REQUESTED), b"{}")
    done = w.complete(inflight, b"{}")
    assert [(i.requested_time, i.action, i.is_completed) for i in seen] == [(ts, COMMIT, True)]
    loaded = Timeline.load(storage, layout).get(ts)
    assert loaded is not None and loaded.completion_time == done.completion_time
    if layout == 1:
        assert seen[0].completion_time == ts == done.completion_time
    else:
        assert seen[0].completion_time is None
        assert done.completion_time is not None and done.completion_time > after_hook[0]


def _time_in(minutes: float) -> str:
    """The instant time ``minutes`` from now (UTC)."""
    import time

    return format_instant_time(int(time.time() * 1000 + minutes * 60_000))


def test_completion_time_after_every_instant_time_with_the_clock_behind(tmp_path: Path) -> None:
    """Layout 2: another writer's clock runs minutes ahead of this one -- its pending
    compaction and a deltacommit it completed are dated after this clock's now. A completion
    time chosen here still comes after every requested and completion time on the timeline
    (a log file joins the slice its completion time falls in), and a hook that lets another
    instant appear meanwhile is seen too (listed again after it)."""
    storage = Storage(str(tmp_path))
    folder = tmp_path / timeline_dir(2)
    later: list[str] = []

    def hook(done: Instant, content: bytes) -> None:  # another writer completes meanwhile
        later.append(_time_in(9))
        (folder / f"{_time_in(8)}_{later[0]}.clean").write_bytes(b"")

    w = TimelineWriter(storage, 2)
    mine = new_instant_time()
    req = Instant(mine, DELTA_COMMIT, State.REQUESTED)
    assert w.create_requested(req)
    inflight = w.transition_to_inflight(req, b"{}")
    other, compaction, other_done = _time_in(4), _time_in(5), _time_in(7)
    (folder / f"{compaction}.compaction.requested").write_bytes(b"")
    (folder / f"{other}.deltacommit.requested").write_bytes(b"")
    (folder / f"{other}_{other_done}.deltacommit").write_bytes(b"{}")
    tl = Timeline.load(storage, 2)
    assert tl.latest_time() == other_done
    assert w.new_completion_time(mine) > other_done
    done = w.complete(inflight, b"{}")
    assert done.completion_time is not None
    assert mine < compaction < other_done < done.completion_time
    assert Timeline.load(storage, 2).latest_time() == done.completion_time

    hooked = TimelineWriter(storage, 2, before_complete=hook)
    second = Instant(new_instant_time(), DELTA_COMMIT, State.REQUESTED)
    assert hooked.create_requested(second)
    hooked.transition_to_inflight(second, b"{}")
    done2 = hooked.complete(second, b"{}")
    assert done2.completion_time is not None and done2.completion_time > later[0]
    # a completion time given by the caller must obey the same rule
    third = Instant(new_instant_time(), DELTA_COMMIT, State.REQUESTED)
    assert w.create_requested(third)
    w.transition_to_inflight(third, b"{}")
    with pytest.raises(TimelineError, match="not after the latest instant time"):
        w.complete(third, b"{}", completion_time=done2.completion_time)
    assert not Timeline.load(storage, 2).is_completed(third.requested_time)


def test_completion_time_refuses_a_far_future_instant(tmp_path: Path) -> None:
    """An instant dated more than a day after this host's clock (a stray: a broken clock, a
    hand-made file) is named and refused, never copied into completion times; the instant
    stays inflight (to be completed or rolled back once the stray is removed)."""
    storage = Storage(str(tmp_path))
    folder = tmp_path / timeline_dir(2)
    w = TimelineWriter(storage, 2)
    ts = new_instant_time()
    req = Instant(ts, DELTA_COMMIT, State.REQUESTED)
    assert w.create_requested(req)
    inflight = w.transition_to_inflight(req, b"{}")
    (folder / f"{_time_in(1)}_29990101000000000.deltacommit").write_bytes(b"{}")
    with pytest.raises(TimelineError, match="29990101000000000"):
        w.complete(inflight, b"{}")
    assert Timeline.load(storage, 2).get(ts) == inflight
    for p in folder.glob("*29990101000000000*"):
        p.unlink()
    done = w.complete(inflight, b"{}")
    assert done.completion_time is not None and ts < done.completion_time < "2100"


def test_completed_instant_files_are_decoded_once_per_process_until_they_change(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A new timeline of the same table takes a completed instant's decoded metadata from the
    process; a file written again at its path (another size, or the same size at another
    modification time) is decoded afresh, and an in-memory file system's files are not kept."""
    import pyarrow.fs as pafs

    decoded: list[bytes] = []
    real = CommitMetadata.from_bytes.__func__  # type: ignore[attr-defined]

    def counted(cls: type[CommitMetadata], data: bytes) -> CommitMetadata:
        decoded.append(data)
        return real(cls, data)

    monkeypatch.setattr(CommitMetadata, "from_bytes", classmethod(counted))
    folder = tmp_path / ".hoodie"
    folder.mkdir()
    commit = folder / "20240101000000000.commit"

    def write(value: str, mtime_s: int) -> None:
        commit.write_bytes(CommitMetadata(extra_metadata={"k": value}).to_json_bytes())
        os.utime(commit, (mtime_s, mtime_s))

    def extra(storage: Storage) -> str:
        md = Timeline.load(storage, 1).read_commit_metadata("20240101000000000")
        return md.extra_metadata["k"]

    write("a", 1_700_000_000)
    assert [extra(Storage(str(tmp_path))) for _ in range(3)] == ["a"] * 3
    assert len(decoded) == 1
    write("bb", 1_700_000_000)  # another size
    assert extra(Storage(str(tmp_path))) == "bb" and len(decoded) == 2
    write("cc", 1_700_000_001)  # the same size, another modification time
    assert extra(Storage(str(tmp_path))) == "cc" and len(decoded) == 3
    assert extra(Storage(str(tmp_path))) == "cc" and len(decoded) == 3
    mem = pafs._MockFileSystem()
    mem.create_dir("t/.hoodie")
    with mem.open_output_stream(f"t/.hoodie/{commit.name}") as out:
        out.write(commit.read_bytes())
    assert [extra(Storage("t", filesystem=mem)) for _ in range(2)] == ["cc", "cc"]
    assert len(decoded) == 5


def test_an_own_instant_completed_or_rolled_back_elsewhere_is_not_completed_again(
    tmp_path: Path,
) -> None:
    """A writer's own inflight instant probes nothing at its transitions, but on layout 2 the
    listing its completion time needs still refuses an instant that another process completed
    or rolled back meanwhile (a writer paused past its heartbeat): no second completed file,
    no completion of an instant whose files are gone."""
    storage = Storage(str(tmp_path))
    folder = tmp_path / timeline_dir(2)
    a = TimelineWriter(storage, 2)
    ts = new_instant_time()
    req = Instant(ts, CLEAN, State.REQUESTED)
    assert a.create_requested(req)
    inflight = a.transition_to_inflight(req)
    TimelineWriter(storage, 2).complete(inflight, b"{}")  # another process finished it
    with pytest.raises(TimelineError, match="already completed"):
        a.complete(inflight, b"{}")
    assert len([p for p in folder.iterdir() if p.name.endswith(f"{CLEAN}") and "_" in p.name]) == 1

    ts2 = new_instant_time()
    req2 = Instant(ts2, DELTA_COMMIT, State.REQUESTED)
    assert a.create_requested(req2)
    inflight2 = a.transition_to_inflight(req2)
    TimelineWriter(storage, 2).delete_instant_files(inflight2)  # rolled back elsewhere
    with pytest.raises(InstantNotFoundError):
        a.complete(inflight2, b"{}")
    assert not [p for p in folder.iterdir() if p.name.startswith(ts2)]
