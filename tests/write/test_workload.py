"""The workload profile in the ``.inflight`` file (Java
``BaseCommitActionExecutor.saveWorkloadProfileMetadataToInflight``).

* the serialisation reproduces every v6 fixture's ``.inflight`` byte for byte (field order,
  ``"null"`` prevCommit, Java ``HashMap`` order of partitions and file ids);
* replaying a fixture's last commit through the embedded API (SIMPLE index, Hudi's default for
  these tables) writes the same inflight as Java did, ``extraMetadata`` aside (hudi_ds keeps the
  writer schema there);
* the inflight file holding the profile exists before any data file (crash after it: only
  instant files; the next writer rolls it back from markers);
* our conflict resolution and rollback are unaffected by profiles in pending instants;
* the tagged rows wait in bounded memory (spilled to disk beyond the budget).
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import hudi_ds
from hudi_ds.errors import CommitConflictError, WriteError
from hudi_ds.faults import ENV, EXIT_CODE
from hudi_ds.timeline.metadata import NULL_COMMIT, CommitMetadata
from hudi_ds.timeline.timeline import Timeline
from hudi_ds.write.client import WriteClient
from hudi_ds.write.tagged_records import TaggedRecords
from hudi_ds.write.workload import WorkloadProfile, java_hash_map_order
from tests.conftest import OCC_OPTIONS, assert_rows, hudi_rs_table, table_options
from tests.fixtures import fixture_names, fixture_table

# the v6 tables with a commit inflight file (the empty ones have none)
V6_WRITES = [
    n for n in fixture_names() if ("v6" in n or n == "cow_0x_partitioned") and "empty" not in n
]


def _inflight_files(root: Path) -> list[Path]:
    """Java-written ``.inflight`` files of commits and delta commits (not replace commits, not
    the metadata table's, not empty ones: a bulk insert's inflight is empty)."""
    out = []
    for f in sorted((root / ".hoodie").glob("*.inflight")):
        commit = f.name.count(".") == 1 or f.name.endswith(".deltacommit.inflight")
        if commit and f.stat().st_size:
            out.append(f)
    return out


@pytest.mark.parametrize("name", V6_WRITES)
def test_profile_serialisation_is_javas_byte_for_byte(name: str, tmp_path_factory) -> None:  # type: ignore[no-untyped-def]
    root = fixture_table(name, tmp_path_factory)
    files = _inflight_files(root)
    assert files
    for f in files:
        java = f.read_bytes()
        md = CommitMetadata.from_bytes(java)
        profile = WorkloadProfile.from_commit_metadata(md)
        assert profile.partitions  # a real profile, not an empty object
        assert md.operation_type is not None
        ours = profile.to_commit_metadata(md.operation_type, md.extra_metadata)
        assert ours.to_json_bytes() == java, f.name


def _java_hash_map(keys: list[str]) -> list[str]:
    """Java's ``HashMap.put`` then iteration, simulated step by step (table, resize, split)."""

    def h(s: str) -> int:
        x = 0
        for u in np.frombuffer(s.encode("utf-16-le"), "<u2").tolist():
            x = (31 * x + u) & 0xFFFFFFFF
        return x ^ (x >> 16)

    table: list[list[str]] = [[] for _ in range(16)]
    for size, k in enumerate(keys, start=1):
        table[h(k) & (len(table) - 1)].append(k)
        if size > 0.75 * len(table):
            new: list[list[str]] = [[] for _ in range(2 * len(table))]
            for b in table:
                for x in b:
                    new[h(x) & (len(new) - 1)].append(x)
            table = new
    return [k for b in table for k in b]


def test_java_hash_map_order() -> None:
    # orders seen in the fixtures' commit files
    assert java_hash_map_order(["10", "30"]) == ["30", "10"]
    assert java_hash_map_order(["10", "20"]) == ["20", "10"]
    assert java_hash_map_order(["sao_paulo", "chennai", "san_francisco"]) == [
        "san_francisco",
        "sao_paulo",
        "chennai",
    ]
    rng = random.Random(7)
    for n in [0, 1, 5, 12, 13, 24, 25, 100, 700]:
        keys = sorted({f"p{rng.randrange(10**6)}/{rng.random():.6f}" for _ in range(n)})
        assert java_hash_map_order(keys) == _java_hash_map(keys), n


def test_profile_round_trip_and_empty_profile() -> None:
    p = WorkloadProfile()
    p.add_inserts("a", 3)
    p.add_updates("a", "f1-0", "20240101000000000", 2)
    p.add_updates("b", "f2-0", "20240101000000001", 5)
    md = p.to_commit_metadata("UPSERT", {"schema": "s"})
    stats = {k: [(s.file_id, s.prev_commit, s.num_inserts, s.num_update_writes) for s in v]
             for k, v in md.partition_to_write_stats.items()}  # fmt: skip
    assert stats == {
        "a": [("", NULL_COMMIT, 3, 0), ("f1-0", "20240101000000000", 0, 2)],
        "b": [("", NULL_COMMIT, 0, 0), ("f2-0", "20240101000000001", 0, 5)],
    }
    back = WorkloadProfile.from_commit_metadata(CommitMetadata.from_bytes(md.to_json_bytes()))
    assert back.updates == p.updates
    assert back.inserts == {"a": 3, "b": 0}  # the partition's insert stat, with 0 inserts
    # a delete that finds nothing: Java saves an empty profile
    empty = WorkloadProfile().to_commit_metadata("DELETE")
    assert json.loads(empty.to_json_bytes())["partitionToWriteStats"] == {}


# -- replaying a fixture's last commit ----------------------------------------------------------

REPLAY = [
    "cow_v6_simplekeygen_nonhivestyle",
    "cow_v6_complexkeygen_hivestyle",
    "cow_v6_nonpartitioned",
    "mor_parquet_v6_simplekeygen_nonhivestyle",
    "mor_parquet_v6_complexkeygen_hivestyle",
    "mor_parquet_v6_nonpartitioned",
]


def _fixture_options(props: dict[str, str]) -> dict[str, str]:
    o = {
        "hoodie.table.name": props["hoodie.table.name"],
        "hoodie.datasource.write.recordkey.field": props["hoodie.table.recordkey.fields"],
        "hoodie.datasource.write.precombine.field": props["hoodie.table.precombine.field"],
        "hoodie.datasource.write.keygenerator.class": props["hoodie.table.keygenerator.class"],
        "hoodie.datasource.write.hive_style_partitioning": props[
            "hoodie.datasource.write.hive_style_partitioning"
        ],
        "hoodie.datasource.write.table.type": props["hoodie.table.type"],
    }
    if props.get("hoodie.table.partition.fields"):
        o["hoodie.datasource.write.partitionpath.field"] = props["hoodie.table.partition.fields"]
    return o


def _properties(root: Path) -> dict[str, str]:
    out = {}
    for line in (root / ".hoodie" / "hoodie.properties").read_text().splitlines():
        if line and not line.startswith("#") and "=" in line:
            k, v = line.split("=", 1)
            out[k] = v.replace("\\:", ":")
    return out


@pytest.mark.parametrize("name", REPLAY)
def test_replayed_fixture_write_saves_javas_inflight(name: str, tmp_path_factory, tmp_path) -> None:  # type: ignore[no-untyped-def]
    src = fixture_table(name, tmp_path_factory)
    root = tmp_path / "t"
    shutil.copytree(src, root)
    timeline = Timeline.load(hudi_ds.storage.Storage(str(root)), 1, ".hoodie")
    last = timeline.commits().instants[-1]
    java_inflight = next(
        f for f in _inflight_files(root) if f.name.startswith(last.requested_time)
    ).read_bytes()
    # the rows the last commit wrote, as the table holds them
    snap = hudi_ds.read(str(root))
    rows = snap.filter(pc.equal(snap["_hoodie_commit_time"], last.requested_time))
    assert rows.num_rows
    expected = snap  # the table as Java left it
    # take the last commit back: its files and instant files
    md = timeline.read_commit_metadata(last)
    for path in md.write_paths():
        (root / path).unlink()
    for f in (root / ".hoodie").glob(f"{last.requested_time}.*"):
        f.unlink()
    data = rows.drop_columns([c for c in rows.column_names if c.startswith("_hoodie")])
    instant = hudi_ds.write(str(root), data, _fixture_options(_properties(root)))
    action = "deltacommit." if "MERGE" in _properties(root)["hoodie.table.type"] else ""
    ours = CommitMetadata.from_bytes(
        (root / ".hoodie" / f"{instant}.{action}inflight").read_bytes()
    )
    assert ours.extra_metadata["schema"]  # the writer schema, read back by rebuild_plan
    ours.extra_metadata = {}
    assert ours.to_json_bytes() == java_inflight
    # and the table holds the same records again
    cols = [c for c in expected.column_names if not c.startswith("_hoodie")]
    key = [c for c in _properties(root)["hoodie.table.recordkey.fields"].split(",")]
    again = hudi_ds.read(str(root)).select(cols)
    assert_rows(again, [tuple(r.values()) for r in expected.select(cols).to_pylist()], cols, key)


# -- the embedded path: profile before data ------------------------------------------------------

OPTS = {**table_options("w", partition="p"), "hoodie.clean.automatic": "false"}


def _batch(ids: list[int], ts: int) -> pa.Table:
    return pa.table(
        {
            "id": [f"k{i}" for i in ids],
            "ts": pa.array([ts] * len(ids), pa.int64()),
            "p": [f"p{i % 2}" for i in ids],
            "v": [f"v{ts}-{i}" for i in ids],
        }
    )


def _data_files(path: str) -> list[str]:
    root = Path(path)
    return sorted(
        str(f.relative_to(root))
        for f in root.rglob("*")
        if f.is_file() and ".hoodie" not in f.parts and not f.name.startswith(".hoodie_partition")
    )


def _model(*batches: pa.Table) -> list[tuple]:
    m: dict[str, tuple] = {}
    for b in batches:
        for r in b.to_pylist():
            m[r["id"]] = (r["id"], r["ts"], r["p"], r["v"])
    return list(m.values())


def _run_crashing(path: str, options: dict[str, str], data: pa.Table, point: str) -> int:
    code = (
        "import sys, json, pyarrow as pa, hudi_ds\n"
        "t = pa.Table.from_pylist(json.loads(sys.argv[2]))\n"
        "hudi_ds.write(sys.argv[1], t, json.loads(sys.argv[3]))\n"
    )
    repo = str(Path(hudi_ds.__file__).resolve().parents[1])
    env = {**os.environ, ENV: point, "PYTHONPATH": repo}
    proc = subprocess.run(
        [sys.executable, "-c", code, path, json.dumps(data.to_pylist()), json.dumps(options)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    return proc.returncode


@pytest.mark.parametrize("index", ["BUCKET", "SIMPLE"])
@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_inflight_holds_the_profile_before_any_data_file(
    index: str, table_type: str, tmp_path: Path
) -> None:
    path = str(tmp_path / "t")
    o = {**OPTS, "hoodie.datasource.write.table.type": table_type, "hoodie.index.type": index}
    if index != "BUCKET":
        o.pop("hoodie.bucket.index.num.buckets")
    first = _batch(list(range(8)), 1)
    t1 = hudi_ds.write(path, first, o)
    files = _data_files(path)
    second = _batch([0, 1, 2, 10, 11, 13], 2)  # updates k0..k2, inserts k10, k11, k13
    assert _run_crashing(path, o, second, "after_inflight") == EXIT_CODE
    assert _data_files(path) == files  # no data file yet
    tl = Timeline.load(hudi_ds.storage.Storage(path), 1, ".hoodie")
    pending = tl.pending().instants
    assert len(pending) == 1 and pending[0].is_inflight
    md = tl.read_commit_metadata(pending[0])
    profile = WorkloadProfile.from_commit_metadata(md)
    assert profile.inserts == {"p0": 1, "p1": 2}  # k10 | k11, k13
    # every update is tagged with the file group holding its key, at the base instant
    by_key = {
        r["_hoodie_record_key"]: (r["_hoodie_partition_path"], r["_hoodie_file_name"])
        for r in hudi_ds.read(path).to_pylist()
    }
    want: dict[tuple[str, str], int] = {}
    for k in ["k0", "k1", "k2"]:
        part, name = by_key[k]
        fid = name.split("_")[0]
        want[(part, fid)] = want.get((part, fid), 0) + 1
    assert {k: u.count for k, u in profile.updates.items()} == want
    assert {u.prev_commit for u in profile.updates.values()} == {t1}
    assert md.operation_type == "UPSERT" and md.extra_metadata["schema"]
    # the next writer rolls the pending write back and the table is whole
    third = _batch([2, 3, 20], 3)
    hudi_ds.write(path, third, o)
    expected = _model(first, third)
    assert_rows(hudi_ds.read(path), expected, ["id", "ts", "p", "v"])
    assert_rows(hudi_rs_table(path), expected, ["id", "ts", "p", "v"])


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_pending_write_with_profile_rolls_back_from_markers(
    table_type: str, tmp_path: Path
) -> None:
    path = str(tmp_path / "t")
    o = {**OPTS, "hoodie.datasource.write.table.type": table_type, "hoodie.index.type": "SIMPLE"}
    o.pop("hoodie.bucket.index.num.buckets")
    first = _batch(list(range(8)), 1)
    hudi_ds.write(path, first, o)
    files = _data_files(path)
    # dies with every data file written, before the commit: the inflight names file groups
    # (the profile) but the files themselves are known only from their markers
    assert _run_crashing(path, o, _batch([0, 1, 30, 31], 2), "after_files") == EXIT_CODE
    assert _data_files(path) != files
    second = _batch([1, 40], 3)
    hudi_ds.write(path, second, o)
    new = set(_data_files(path)) - set(files)
    tl = Timeline.load(hudi_ds.storage.Storage(path), 1, ".hoodie")
    written = {p for i in tl.commits() for p in tl.read_commit_metadata(i).write_paths()}
    assert new <= written  # nothing of the failed write is left
    assert [i for i in tl.instants if not i.is_completed] == []
    expected = _model(first, second)
    assert_rows(hudi_ds.read(path), expected, ["id", "ts", "p", "v"])
    assert_rows(hudi_rs_table(path), expected, ["id", "ts", "p", "v"])


def test_delete_saves_the_profile_of_the_keys_found(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    o = {
        **OPTS,
        "hoodie.index.type": "SIMPLE",
        "hoodie.datasource.write.table.type": "COPY_ON_WRITE",
    }
    o.pop("hoodie.bucket.index.num.buckets")
    t1 = hudi_ds.write(path, _batch(list(range(6)), 1), o)
    d = {**o, "hoodie.datasource.write.operation": "delete"}
    t2 = hudi_ds.write(path, _batch([0, 2, 3, 77], 0), d)  # k77 is not in the table
    md = CommitMetadata.from_bytes((Path(path) / ".hoodie" / f"{t2}.inflight").read_bytes())
    assert md.operation_type == "DELETE"
    profile = WorkloadProfile.from_commit_metadata(md)
    assert profile.inserts == {"p0": 0, "p1": 0}
    assert sum(u.count for u in profile.updates.values()) == 3
    assert {u.prev_commit for u in profile.updates.values()} == {t1}
    t3 = hudi_ds.write(path, _batch([90, 91], 0), d)  # nothing found: an empty profile
    md = CommitMetadata.from_bytes((Path(path) / ".hoodie" / f"{t3}.inflight").read_bytes())
    assert md.partition_to_write_stats == {}
    assert_rows(hudi_ds.read(path), _model(_batch([1, 4, 5], 1)), ["id", "ts", "p", "v"])


def test_spark_style_start_keeps_the_schema_only_inflight(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    hudi_ds.write(path, _batch([0, 1], 1), OPTS)
    client = WriteClient(path, OPTS)
    instant = client.start(_batch([0], 2).schema)  # tasks tag: no profile on the driver
    md = client.table_state().reload_timeline().read_commit_metadata(instant)
    assert md.partition_to_write_stats == {} and md.extra_metadata["schema"]
    with pytest.raises(WriteError, match="not a requested write"):
        client.save_workload_profile(instant, WorkloadProfile())
    client.abort(instant)
    deferred = client.start(_batch([0], 2).schema, inflight=False)
    assert client.table_state().reload_timeline().get(deferred).is_requested
    with pytest.raises(WriteError, match="still requested"):
        client.commit(deferred, [])
    client.abort(deferred)
    assert list(client.table_state().reload_timeline().pending().instants) == []
    with pytest.raises(ValueError, match="joining"):
        client.start(_batch([0], 2).schema, instant="20990101000000000", inflight=False)


def test_conflict_check_reads_completed_writes_not_pending_profiles(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    o = {
        **OPTS,
        **OCC_OPTIONS,
        "hoodie.index.type": "SIMPLE",
        "hoodie.datasource.write.table.type": "COPY_ON_WRITE",
        "hoodie.write.lock.wait_time_ms": "2000",
    }
    o.pop("hoodie.bucket.index.num.buckets")
    first = _batch(list(range(6)), 1)
    hudi_ds.write(path, first, o)
    # A tags and saves its profile (k0 in p0's file group), then pauses before writing
    a = WriteClient(path, o)
    ta = a.start(first.schema, inflight=False)
    task = a.task_writer(ta)
    tagged = task.tag(task.prepare(_batch([0], 5)))
    a.save_workload_profile(ta, task.workload)
    assert WorkloadProfile.from_commit_metadata(
        a.table_state().reload_timeline().read_commit_metadata(ta)
    ).updates
    # B writes another partition: A's pending profile is no conflict for B (Hudi's simple
    # strategy compares with completed instants), and B's commit is none for A either
    hudi_ds.write(path, _batch([1], 2), o)
    task.route(tagged)
    a.commit(ta, task.close())
    # C starts, B' then rewrites C's file group and commits first: C conflicts
    c = WriteClient(path, o)
    tc = c.start(first.schema, inflight=False)
    ctask = c.task_writer(tc)
    ctag = ctask.tag(ctask.prepare(_batch([2], 7)))
    c.save_workload_profile(tc, ctask.workload)
    hudi_ds.write(path, _batch([4], 3), o)  # k4 shares p0's file group with k2
    ctask.route(ctag)
    with pytest.raises(CommitConflictError):
        c.commit(tc, ctask.close())
    expected = _model(first, _batch([0], 5), _batch([1], 2), _batch([4], 3))
    assert_rows(hudi_ds.read(path), expected, ["id", "ts", "p", "v"])
    assert_rows(hudi_rs_table(path), expected, ["id", "ts", "p", "v"])


# -- tagged rows in bounded memory -------------------------------------------------------------


def test_tagged_records_spill_beyond_budget_in_order(tmp_path: Path) -> None:
    batches = [pa.table({"x": np.arange(i * 100, i * 100 + 100)}) for i in range(10)]
    with TaggedRecords(3 * batches[0].nbytes, str(tmp_path)) as t:
        for b in batches:
            t.add(b)
        # three in memory, the latest kept for routing, six in the file
        assert t.spilled == 6 and t.in_memory_bytes == 3 * batches[0].nbytes
        assert len(list(tmp_path.iterdir())) == 1
        out = list(t.drain())
    assert [b.equals(o) for b, o in zip(batches, out, strict=True)] == [True] * 10
    assert list(tmp_path.iterdir()) == []  # the spill file is gone
    with TaggedRecords(10, str(tmp_path)) as t:  # one batch larger than the budget
        t.add(batches[0])
        assert [o.equals(batches[0]) for o in t.drain()] == [True]
        assert t.spilled == 0


def test_tagged_records_spill_only_the_rows_of_slices(tmp_path: Path) -> None:
    """Batches sliced from one large input (a RecordBatchReader over a table) spill their own
    rows: the spill file is about the batches' size, not the input's once per batch (pickling
    an Arrow slice writes the whole buffers it views)."""
    n = 200_000
    big = pa.table(
        {
            "k": pa.array([f"key-{i}" for i in range(n)]),
            "v": np.arange(n, dtype=np.float64),
            "d": pa.array(np.arange(n) % 3).dictionary_encode(),
        }
    )
    batches = [big.slice(i, 10_000) for i in range(0, n, 10_000)]
    extra = (np.arange(5), [("p", "f")])  # numpy and plain values travel along
    with TaggedRecords(0, str(tmp_path)) as t:
        for b in batches:
            t.add((b, b.to_batches()[0], b.column("k"), *extra))
        (spill,) = tmp_path.iterdir()
        assert t.spilled == len(batches) - 1
        assert spill.stat().st_size < 3 * big.nbytes  # about 2x (two copies of each batch)
        out = list(t.drain())
    assert len(out) == len(batches)
    for b, (table, batch, col, arr, plain) in zip(batches, out, strict=True):
        assert table.equals(b) and batch.equals(b.to_batches()[0]) and col.equals(b.column("k"))
        assert arr.tolist() == [0, 1, 2, 3, 4] and plain == [("p", "f")]


def test_embedded_write_spills_tagged_rows_and_keeps_every_row(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spilled: list[int] = []

    class Counting(TaggedRecords):
        def drain(self):  # type: ignore[no-untyped-def]
            spilled.append(self.spilled)
            return super().drain()

    monkeypatch.setattr(sys.modules[WriteClient.__module__], "TaggedRecords", Counting)
    path = str(tmp_path / "t")
    spill = tmp_path / "spill"
    spill.mkdir()
    o = {
        **OPTS,
        "hoodie.datasource.write.table.type": "MERGE_ON_READ",
        "write.task.max.size": "1",  # MB: the tagged rows exceed a third of it
        "hoodie.memory.spillable.map.path": str(spill),
    }
    first = _batch(list(range(20_000)), 1)
    hudi_ds.write(path, first, o)
    second = _batch(list(range(10_000, 40_000)), 2)
    reader = pa.RecordBatchReader.from_batches(second.schema, second.to_batches(max_chunksize=2000))
    t2 = hudi_ds.write(path, reader, o)
    md = CommitMetadata.from_bytes(
        (Path(path) / ".hoodie" / f"{t2}.deltacommit.inflight").read_bytes()
    )
    profile = WorkloadProfile.from_commit_metadata(md)
    # the bucket index tags every key with its bucket's file group (both buckets of both
    # partitions exist): all 30000 rows are updates of those four file groups
    assert profile.inserts == {"p0": 0, "p1": 0}
    assert sum(u.count for u in profile.updates.values()) == 30_000
    assert len(profile.updates) == 4
    assert spilled[-1] > 0  # most tagged batches went to disk ...
    assert list(spill.iterdir()) == []  # ... and the spill file is gone
    expected = _model(first, second)
    assert_rows(hudi_ds.read(path), expected, ["id", "ts", "p", "v"])
    assert_rows(hudi_rs_table(path), expected, ["id", "ts", "p", "v"])


def test_profiled_inflight_keeps_what_rebuild_plan_reads(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    o = {
        **table_options("pu", table_type="MERGE_ON_READ", buckets=1),
        "hoodie.write.partial.updates": "true",
    }
    full = pa.table({"id": ["a", "b"], "ts": pa.array([1, 1], pa.int64()), "price": [1.0, 2.0]})
    hudi_ds.write(path, full, o)
    part = pa.table({"id": ["a"], "ts": pa.array([2], pa.int64())})
    client = WriteClient(path, o)
    instant = client.start(part.schema, inflight=False, extra_metadata={"mine": "x"})
    task = client.task_writer(instant)
    tagged = task.tag(task.prepare(part))
    client.save_workload_profile(instant, task.workload)
    # another client (a commit in another process) rebuilds the plan from the inflight
    other = WriteClient(path, o)
    plan = other.plan(instant)
    assert plan.partial_columns == ("id", "ts")
    assert plan.schema == client.plan(instant).schema
    md = other.table_state().timeline.read_commit_metadata(instant)
    assert md.extra_metadata["mine"] == "x"
    assert WorkloadProfile.from_commit_metadata(md).updates  # key a's file group
    task.route(tagged)
    other.commit(instant, task.close())
    assert_rows(hudi_ds.read(path), [("a", 2, 1.0), ("b", 1, 2.0)], ["id", "ts", "price"])
    assert_rows(hudi_rs_table(path), [("a", 2, 1.0), ("b", 1, 2.0)], ["id", "ts", "price"])


@pytest.mark.parametrize("index", ["BUCKET", "SIMPLE", "GLOBAL_BLOOM"])
def test_is_deleted_rows_of_unknown_keys_count_as_inserts(index: str, tmp_path: Path) -> None:
    # Java tags them as records without a location: inserts in the profile, nothing written
    path = str(tmp_path / "t")
    o = {**OPTS, "hoodie.index.type": index, "hoodie.datasource.write.table.type": "COPY_ON_WRITE"}
    if index != "BUCKET":
        o.pop("hoodie.bucket.index.num.buckets")
    first = _batch([0, 1], 1)
    hudi_ds.write(path, first, o)
    rows = _batch([0, 50, 51], 2).append_column("_hoodie_is_deleted", pa.array([True] * 3))
    rows = rows.set_column(2, "p", pa.array(["p0", "p7", "p7"]))  # k50, k51: a new partition
    t2 = hudi_ds.write(path, rows, o)
    md = CommitMetadata.from_bytes((Path(path) / ".hoodie" / f"{t2}.inflight").read_bytes())
    profile = WorkloadProfile.from_commit_metadata(md)
    assert profile.inserts == {"p0": 0, "p7": 2}
    assert sum(u.count for u in profile.updates.values()) == 1  # k0's file group
    assert_rows(hudi_ds.read(path), _model(_batch([1], 1)), ["id", "ts", "p", "v"])
    assert_rows(hudi_rs_table(path), _model(_batch([1], 1)), ["id", "ts", "p", "v"])


def test_a_task_cannot_join_an_instant_rolled_back_before_it_started(tmp_path: Path) -> None:
    """The streaming sink's driver aborts a micro-batch (a task failed on every attempt) and
    rolls its instant back; a task of that batch starting late must not create the instant's
    files again (a dangling .inflight), whether it saw the rollback when it loaded the timeline
    or only after it created them."""
    from hudi_ds.storage import Storage
    from hudi_ds.write.markers import create_marker

    path = str(tmp_path / "t")
    hudi_ds.write(path, _batch([0, 1], 1), OPTS)
    driver = WriteClient(path, OPTS)
    schema = _batch([0], 2).schema
    late = WriteClient(path, OPTS)
    late.table_state()  # loads the timeline now, before the rollback
    instant = driver.start(schema)
    # a file an attempt wrote: the abort then rolls the instant back (a rollback instant)
    storage = Storage(path)
    rel = "p0/.gone-0_" + instant + ".log.1_0-1-1"
    storage.write_bytes(rel, b"x")
    create_marker(storage, instant, rel, "APPEND")
    driver.abort(instant)
    tl = driver.table_state().reload_timeline()
    assert [i.action for i in tl.completed().filter_actions("rollback")] == ["rollback"]
    for task in (WriteClient(path, OPTS), late):  # sees the rollback / sees it only after
        with pytest.raises(WriteError, match="was rolled back"):
            task.start(schema, instant=instant)
        assert not Timeline.load(Storage(path), 1).pending().filter_actions("deltacommit")
    assert_rows(hudi_ds.read(path), _model(_batch([0, 1], 1)), ["id", "ts", "p", "v"])
