"""The consistent-hashing bucket engine (``hoodie.index.bucket.engine=CONSISTENT_HASHING``).

Java's pieces are re-derived independently of the code under test (:mod:`tests.index.ring_decoder`):
a scalar XXH32 written from the xxHash specification (checked against the published test
vectors), Java's hash keys joined as ``ConsistentBucketIdentifier.getBucket`` joins them, the
initial ring of ``HoodieConsistentHashingMetadata.constructDefaultHashingNodes``
(``UUID.nameUUIDFromBytes`` rebuilt as a version-3 UUID whose namespace is the two big-endian
longs), and a decoder of the ``.hashing_meta`` JSON that reads the fields Jackson writes.

The tables: MERGE_ON_READ, partitioned by ``city`` (sf / nyc), 4 initial nodes per partition;
40 inserts, then 30 upserts (20 updates, 10 inserts), then 5 deletes -- 45 rows at the end.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import hudi_ds
from hudi_ds.errors import ConfigError, CorruptFileError, StorageError
from hudi_ds.faults import EXIT_CODE
from hudi_ds.index.consistent_hashing import (
    HashingMetadata,
    key_hashes,
    load_metadata,
    xxhash32,
)
from hudi_ds.services import ServiceContext, clustering
from hudi_ds.storage import Storage
from hudi_ds.table.fs_view import FileSystemView
from hudi_ds.timeline.instant import new_instant_time
from hudi_ds.timeline.plans import (
    ClusteringGroup,
    ClusteringPlan,
    ClusteringStrategy,
    RequestedReplaceMetadata,
    SliceInfo,
)
from hudi_ds.timeline.view import TableState
from tests import builders
from tests.conftest import assert_rows, hudi_rs_table, run_forked
from tests.index.ring_decoder import (
    META_DIR,
    decode_hashing_meta,
    java_initial_nodes,
    node_of,
    ref_hash_keys,
    ref_xxh32,
    ring_ranges,
)

COLUMNS = ["id", "ts", "city", "fare"]
ENGINE = {"hoodie.index.bucket.engine": "CONSISTENT_HASHING"}


@pytest.mark.parametrize(
    ("data", "want"),
    [
        (b"", 0x02CC5D05),
        (b"a", 0x550D7456),
        (b"abc", 0x32D153FF),
        (b"Nobody inspects the spammish repetition", 0xE2293B2F),
    ],
)
def test_xxhash32_matches_the_published_vectors(data: bytes, want: int) -> None:
    assert ref_xxh32(data) == want
    got = xxhash32(np.frombuffer(data, np.uint8), np.array([0, len(data)], np.int64))
    assert int(got[0]) == want


def test_key_hashes_join_the_hash_fields_as_java() -> None:
    keys = [
        "k001",
        "a-much-longer-record-key-of-37-bytes!",
        "id:7,name:x,zone:__null__",
        "id:7,name:__empty__,zone:3",
        "id:abc:d,e,zone:q",  # a value holding ':' and ','
        "",
        "ключ-ü",
    ]
    fields = ["id", "zone"]
    got = key_hashes(pa.array(keys), fields).tolist()
    joined = [ref_hash_keys(k, fields).encode() for k in keys[:4]]
    joined += [b"abc:d,eq", b"", "ключ-ü".encode()]  # id's value ends at the ',' before zone:
    want = [ref_xxh32(j) for j in joined]
    assert got == want


def test_initial_ring_is_javas_and_round_trips() -> None:
    md = HashingMetadata.initial("2021/01/01", 4)
    assert [(n.value, n.file_id_prefix) for n in md.nodes] == java_initial_nodes("2021/01/01", 4)
    doc = decode_hashing_meta(md.to_bytes())
    assert (doc["version"], doc["partitionPath"], doc["instant"]) == (0, "2021/01/01", "0" * 14)
    assert (doc["numBuckets"], doc["seqNo"]) == (4, 0)
    assert [n["tag"] for n in doc["nodes"]] == ["NORMAL"] * 4
    ring_ranges(doc["nodes"])
    assert HashingMetadata.from_bytes(md.to_bytes(), "x") == md
    odd = HashingMetadata.initial("", 7)
    ring_ranges(decode_hashing_meta(odd.to_bytes())["nodes"])


def test_a_ring_with_an_overlap_is_refused() -> None:
    md = HashingMetadata.initial("p", 3)
    doc = json.loads(md.to_bytes())
    doc["nodes"][0]["value"] = doc["nodes"][1]["value"]
    with pytest.raises(CorruptFileError, match="overlaps"):
        HashingMetadata.from_bytes(json.dumps(doc).encode(), "p/x.hashing_meta")


def _opts(**extra: str) -> dict[str, str]:
    return builders.options(
        "t", "MERGE_ON_READ", partition="city", index="BUCKET", buckets=4, **ENGINE, **extra
    )


def _write(path: str, rows: pa.Table, op: str) -> None:
    hudi_ds.write(path, rows, {**_opts(), "hoodie.datasource.write.operation": op})


def _model_rows(model: dict[str, tuple]) -> list[tuple]:
    return list(model.values())


@pytest.mark.parametrize("version", ["6", "8"])
def test_mor_table_routes_keys_to_their_ring_nodes(tmp_path: Path, version: str) -> None:
    path = str(tmp_path / "t")
    extra = {"hoodie.write.table.version": version}
    model: dict[str, tuple] = {}

    def write(rows: pa.Table, op: str) -> None:
        hudi_ds.write(path, rows, {**_opts(**extra), "hoodie.datasource.write.operation": op})
        if op == "delete":
            for k in rows.column("id").to_pylist():
                model.pop(k, None)
            return
        for r in rows.to_pylist():
            model[r["id"]] = (r["id"], r["ts"], r["city"], r["fare"])

    write(builders.trips(range(40), key="k{:03d}"), "upsert")
    write(builders.trips(range(20, 50), ts=2, key="k{:03d}"), "upsert")
    write(builders.trips(range(0, 10, 2), ts=3, key="k{:03d}"), "delete")
    assert len(model) == 45

    got = hudi_ds.read(path)
    assert_rows(got, _model_rows(model), COLUMNS)
    assert_rows(hudi_rs_table(path), _model_rows(model), COLUMNS)

    storage = Storage(path)
    rings = {}
    for city in ("sf", "nyc"):
        folder = f"{META_DIR}/{city}"
        names = sorted(f.name for f in storage.list_files(folder))
        assert names == ["00000000000000.commit", "00000000000000.hashing_meta"]
        assert storage.read_bytes(f"{folder}/00000000000000.commit") == b""
        doc = decode_hashing_meta(storage.read_bytes(f"{folder}/00000000000000.hashing_meta"))
        assert doc["partitionPath"] == city and doc["numBuckets"] == 4
        ring_ranges(doc["nodes"])
        rings[city] = [(n["value"], n["fileIdPrefix"]) for n in doc["nodes"]]
        assert rings[city] == java_initial_nodes(city, 4)
    # every row sits in the file group of its key's node, by Java's hash computed here
    for key, city, file_name in zip(
        got.column("_hoodie_record_key").to_pylist(),
        got.column("city").to_pylist(),
        got.column("_hoodie_file_name").to_pylist(),
        strict=True,
    ):
        want = node_of(rings[city], key, ["id"]) + "-0"
        assert file_name.lstrip(".").startswith(want), (key, file_name, want)
    # 45 keys over 8 nodes: more than one file group per partition is used
    assert len({f.split("_")[0] for f in got.column("_hoodie_file_name").to_pylist()}) > 2


def test_load_metadata_commits_the_initial_file_and_ignores_uncommitted(tmp_path: Path) -> None:
    storage = Storage(str(tmp_path))
    folder = f"{META_DIR}/p"
    storage.makedirs(folder)
    first = HashingMetadata.initial("p", 2)
    storage.write_bytes(f"{folder}/{first.file_name}", first.to_bytes())
    resized = HashingMetadata("p", "20250101000000000", 2, 1, HashingMetadata.initial("p", 3).nodes)
    storage.write_bytes(f"{folder}/{resized.file_name}", resized.to_bytes())
    # the resize's replace commit is not complete: the initial ring stands, and is committed
    assert load_metadata(storage, "p", lambda i: False) == first
    assert storage.exists(f"{folder}/00000000000000.commit")
    assert not storage.exists(f"{folder}/20250101000000000.commit")
    # once it completes, its ring is the partition's
    assert load_metadata(storage, "p", lambda i: i == resized.instant) == resized
    assert storage.exists(f"{folder}/20250101000000000.commit")
    storage.write_bytes(f"{folder}/20250202000000000.commit", b"")
    with pytest.raises(CorruptFileError, match="20250202000000000.hashing_meta"):
        load_metadata(storage, "p", lambda i: False)


def _snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def test_cow_and_engine_changes_are_refused_before_anything_is_written(tmp_path: Path) -> None:
    cow = tmp_path / "cow"
    opts = {**_opts(), "hoodie.datasource.write.table.type": "COPY_ON_WRITE"}
    with pytest.raises(ConfigError, match="does not work with COW table"):
        hudi_ds.write(str(cow), builders.trips(range(3)), opts)
    assert not cow.exists() or not any(cow.iterdir())

    simple = tmp_path / "simple"
    plain = builders.options("t", "MERGE_ON_READ", partition="city", index="BUCKET", buckets=4)
    hudi_ds.write(str(simple), builders.trips(range(3)), plain)
    before = _snapshot(simple)
    with pytest.raises(ConfigError, match="bucket engine is 'SIMPLE'"):
        hudi_ds.write(str(simple), builders.trips(range(3), ts=2), {**plain, **ENGINE})
    assert _snapshot(simple) == before

    ring = tmp_path / "ring"
    _write(str(ring), builders.trips(range(3)), "upsert")
    before = _snapshot(ring)
    with pytest.raises(ConfigError, match="bucket engine is 'CONSISTENT_HASHING'"):
        hudi_ds.write(
            str(ring),
            builders.trips(range(3), ts=2),
            {**_opts(), "hoodie.index.bucket.engine": "SIMPLE"},
        )
    assert _snapshot(ring) == before


def test_a_write_beside_a_resize_plan_without_children_is_refused(tmp_path: Path) -> None:
    """Writers beside a pending resize copy their records to its children
    (tests/index/test_resize_dual_write.py); a resize plan that does not name them cannot be
    written beside: the write fails naming the clustering, the table as it was."""
    path = str(tmp_path / "t")
    _write(path, builders.trips(range(8), key="k{:03d}"), "upsert")
    before = hudi_ds.read(path)
    got = before.filter(pc.equal(before.column("id"), "k001"))
    file_id = got.column("_hoodie_file_name").to_pylist()[0].lstrip(".").split("_")[0]
    city = got.column("city").to_pylist()[0]
    plan = RequestedReplaceMetadata(
        operation_type="CLUSTER",
        clustering_plan=ClusteringPlan(
            input_groups=[
                ClusteringGroup(
                    slices=[SliceInfo(file_id=file_id, partition_path=city)],
                    extra_metadata={"SPLIT_OPERATION": "true"},
                )
            ],
            strategy=ClusteringStrategy("SparkConsistentBucketClusteringExecutionStrategy", {}),
        ),
        extra_metadata={},
    )
    pending = new_instant_time()
    Storage(path).write_bytes(f".hoodie/{pending}.replacecommit.requested", plan.to_bytes())
    with pytest.raises(CorruptFileError, match=f"clustering {pending}: a resize group without"):
        hudi_ds.write(path, builders.trips([1], ts=5, key="k{:03d}"), _opts())
    cols = [*COLUMNS, "_hoodie_file_name"]
    assert_rows(hudi_ds.read(path), builders.sorted_rows(before, cols), cols)


@pytest.mark.parametrize("version", ["6", "8"])
def test_a_resize_splits_large_nodes_through_clustering(tmp_path: Path, version: str) -> None:
    """Nodes whose file group exceeds ``max.file.size * split.threshold`` split in two by a
    clustering (Java's plan metadata), up to ``max.num.buckets``; the new ring (seqNo 1, named
    by the replacecommit, committed) covers the hash space, every key sits once in its new
    node's file group, and writes after the resize follow the new ring."""
    path = str(tmp_path / "t")
    model: dict[str, tuple] = {}
    extra = {"hoodie.write.table.version": version}

    def write(rows: pa.Table) -> None:
        hudi_ds.write(path, rows, {**_opts(**extra), "hoodie.datasource.write.operation": "upsert"})
        for r in rows.to_pylist():
            model[r["id"]] = (r["id"], r["ts"], r["city"], r["fare"])

    write(builders.trips(range(200), key="k{:04d}"))
    opts = {
        **_opts(**extra),
        "hoodie.parquet.max.file.size": "2000",
        "hoodie.bucket.index.split.threshold": "1.0",
        "hoodie.bucket.index.max.num.buckets": "6",
    }
    ctx = ServiceContext.open(path, opts)
    instant = clustering.schedule_clustering(ctx)
    assert instant is not None
    plan = ctx.reload_timeline().read_requested_replace(instant).clustering_plan
    assert plan is not None and plan.strategy is not None
    assert plan.strategy.strategy_class_name.endswith(
        "SparkConsistentBucketClusteringExecutionStrategy"
    )
    groups = plan.input_groups or []
    per_partition = Counter(g.extra_metadata["clustering.group.partition"] for g in groups)
    assert per_partition == {"sf": 2, "nyc": 2}  # 4 nodes each, at most 6: two splits each
    for g in groups:
        assert g.num_output_file_groups == 2 and len(g.slices) == 1
        kids = json.loads(g.extra_metadata["clustering.group.child.node"])
        assert [k["tag"] for k in kids] == ["REPLACE", "REPLACE"]
        assert g.extra_metadata["clustering.group.sequence.no"] == "0"
    clustering.run_clustering(ServiceContext.open(path, opts))

    storage = Storage(path)
    rings = {}
    for city in ("sf", "nyc"):
        folder = f"{META_DIR}/{city}"
        names = {f.name for f in storage.list_files(folder)}
        assert {f"{instant}.hashing_meta", f"{instant}.commit"} <= names
        doc = decode_hashing_meta(storage.read_bytes(f"{folder}/{instant}.hashing_meta"))
        assert (doc["instant"], doc["seqNo"], doc["numBuckets"]) == (instant, 1, 4)
        assert len(doc["nodes"]) == 6
        ring_ranges(doc["nodes"])
        rings[city] = [(n["value"], n["fileIdPrefix"]) for n in doc["nodes"]]

    def check() -> None:
        got = hudi_ds.read(path)
        assert_rows(got, _model_rows(model), COLUMNS)
        assert_rows(hudi_rs_table(path), _model_rows(model), COLUMNS)
        for key, city, file_name in zip(
            got.column("_hoodie_record_key").to_pylist(),
            got.column("city").to_pylist(),
            got.column("_hoodie_file_name").to_pylist(),
            strict=True,
        ):
            want = node_of(rings[city], key, ["id"]) + "-0"
            assert file_name.lstrip(".").startswith(want), (key, file_name, want)

    check()
    write(builders.trips(range(150, 260), ts=2, key="k{:04d}"))
    check()


def test_inline_splits_keep_up_with_a_growing_partition(tmp_path: Path) -> None:
    """8 upserts of 300 new keys (and 100 updates) into one partition with inline clustering
    every 2 commits: the rings split as the file groups pass the threshold, every key stays
    once, and once the resizes catch up every file group is under the split size."""
    path = str(tmp_path / "t")
    opts = {
        **builders.options(
            "t", "MERGE_ON_READ", partition="city", index="BUCKET", buckets=2, **ENGINE
        ),
        "hoodie.parquet.max.file.size": str(24 << 10),
        "hoodie.bucket.index.split.threshold": "1.0",
        "hoodie.bucket.index.max.num.buckets": "32",
        "hoodie.index.bloom.num_entries": "200",  # small footers: sizes follow the rows
        "hoodie.clustering.inline": "true",
        "hoodie.clustering.inline.max.commits": "2",
    }
    model: dict[str, tuple] = {}
    for b in range(8):
        rows = builders.trips(
            [*range(b * 300, b * 300 + 300), *range(0, b * 100, max(b, 1))],
            ts=b + 1,
            city="sf",
            key="k{:05d}",
        )
        hudi_ds.write(path, rows, opts)
        for r in rows.to_pylist():
            model[r["id"]] = (r["id"], r["ts"], r["city"], r["fare"])
    ctx = ServiceContext.open(path, opts)
    while clustering.schedule_clustering(ctx) is not None:  # let the resizes catch up
        clustering.run_clustering(ctx)
        ctx = ServiceContext.open(path, opts)
    assert_rows(hudi_ds.read(path), _model_rows(model), COLUMNS)
    assert_rows(hudi_rs_table(path), _model_rows(model), COLUMNS)
    storage = Storage(path)
    folder = f"{META_DIR}/sf"
    metas = sorted(f.name for f in storage.list_files(folder) if f.name.endswith(".hashing_meta"))
    assert len(metas) > 2  # several resizes ran
    for name in metas:
        instant = name.split(".")[0]
        assert storage.exists(f"{folder}/{instant}.commit")
        ring_ranges(decode_hashing_meta(storage.read_bytes(f"{folder}/{name}"))["nodes"])
    state = TableState.open(path)
    view = FileSystemView(storage, state.config)
    sizes = {
        s.file_id: (s.base_file.size if s.base_file else 0) + sum(lf.size for lf in s.log_files)
        for s in view.latest_file_slices("sf", state.visibility())
    }
    last = decode_hashing_meta(storage.read_bytes(f"{folder}/{metas[-1]}"))
    assert {n["fileIdPrefix"] + "-0" for n in last["nodes"]} >= set(sizes)
    assert max(sizes.values()) <= 24 << 10, sizes


def _resizable_table(path: str, extra: dict[str, str]) -> tuple[dict[str, str], dict[str, tuple]]:
    """100 rows in partition ``sf`` (4 nodes); returns the options of a resize that splits
    one node (at most 5) and the rows."""
    opts = {**_opts(**extra), "hoodie.parquet.max.file.size": "2000"}
    opts |= {"hoodie.bucket.index.max.num.buckets": "5"}
    rows = builders.trips(range(100), key="k{:04d}", city="sf")
    hudi_ds.write(path, rows, _opts(**extra))
    return opts, {r["id"]: (r["id"], r["ts"], r["city"], r["fare"]) for r in rows.to_pylist()}


def _next_write_follows(
    path: str, ring: HashingMetadata, model: dict[str, tuple], extra: dict[str, str]
) -> None:
    """An upsert of 80 keys (30 new) into ``sf``: every row reads back (hudi_ds and hudi-rs)
    and each key sits in the file group of its node on ``ring``."""
    more = builders.trips(range(50, 130), ts=2, key="k{:04d}", city="sf")
    hudi_ds.write(path, more, _opts(**extra))
    model |= {r["id"]: (r["id"], r["ts"], r["city"], r["fare"]) for r in more.to_pylist()}
    got = hudi_ds.read(path)
    assert_rows(got, list(model.values()), COLUMNS)
    assert_rows(hudi_rs_table(path), list(model.values()), COLUMNS)
    nodes = [(n.value, n.file_id_prefix) for n in ring.nodes]
    for key, file_name in zip(
        got.column("_hoodie_record_key").to_pylist(),
        got.column("_hoodie_file_name").to_pylist(),
        strict=True,
    ):
        assert file_name.lstrip(".").startswith(node_of(nodes, key, ["id"]) + "-0")


@pytest.mark.parametrize(
    ("version", "spec"),
    [
        ("6", "service_plan:1"),
        ("6", "clustering:1"),
        ("9", "clustering:2"),
        ("6", "service_written:1"),
        ("9", "service_written:1"),
    ],
)
def test_a_killed_resize_resumes(tmp_path: Path, version: str, spec: str) -> None:
    """A resize killed before its plan, after a child's file, or after its replacecommit (its
    rings' commit markers not written): the next run rolls a left-over attempt back and
    completes it (or finds nothing to do); the committed ring is then the resize's, the keys
    are each once in their node's file group, and the next write follows that ring."""
    path = str(tmp_path / "t")
    extra = {"hoodie.write.table.version": version}
    opts, model = _resizable_table(path, extra)

    def run() -> None:
        ctx = ServiceContext.open(path, opts)
        clustering.run_clustering(ctx, clustering.schedule_clustering(ctx))

    assert run_forked(run, spec) == EXIT_CODE
    assert_rows(hudi_ds.read(path), list(model.values()), COLUMNS)
    clustering.run_clustering(ServiceContext.open(path, opts))
    state = TableState.open(path)
    tl = state.timeline
    done = [i.requested_time for i in tl.commits() if tl.is_clustering(i)]
    assert len(done) == (0 if spec == "service_plan:1" else 1)
    assert not clustering.pending_clusterings(tl)
    storage = Storage(path)
    ring = load_metadata(storage, "sf", lambda i: i in state.visibility().instants)
    assert ring is not None
    assert ring.instant == (done[0] if done else "00000000000000")
    assert len(ring.nodes) == (4 if spec == "service_plan:1" else 5)
    assert storage.exists(f"{META_DIR}/sf/{ring.instant}.commit")
    ring_ranges(decode_hashing_meta(ring.to_bytes())["nodes"])
    _next_write_follows(path, ring, model, extra)


def test_a_resize_whose_ring_commit_marker_fails_stands(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The commit marker of the resized ring cannot be written (a store error) after the
    resize's replacecommit completed: the resize stands -- ``run_clustering`` returns it,
    nothing is rolled back, its file groups stay -- and the next load of the ring writes the
    marker (the replacecommit is completed); every row reads back and the next write follows
    the new ring."""
    path = str(tmp_path / "t")
    opts, model = _resizable_table(path, {})
    instant = clustering.schedule_clustering(ServiceContext.open(path, opts))
    assert instant is not None
    marker = f"{META_DIR}/sf/{instant}.commit"
    real = Storage.create_if_absent

    def failing(self: Storage, rel: str, data: bytes = b"") -> bool:
        if rel == marker:
            raise StorageError(f"put {rel} failed: injected")
        return real(self, rel, data)

    monkeypatch.setattr(Storage, "create_if_absent", failing)
    (res,) = clustering.run_clustering(ServiceContext.open(path, opts), instant)
    monkeypatch.setattr(Storage, "create_if_absent", real)
    storage = Storage(path)
    assert res.instant == instant and not storage.exists(marker)
    state = TableState.open(path)
    assert state.timeline.is_completed(instant)
    assert not list(state.timeline.filter_actions("rollback"))
    assert res.stats and all(storage.exists(s.path) for s in res.stats)
    assert_rows(hudi_ds.read(path), list(model.values()), COLUMNS)
    ring = load_metadata(storage, "sf", lambda i: i in state.visibility().instants)
    assert ring is not None and ring.instant == instant and len(ring.nodes) == 5
    assert storage.exists(marker)
    _next_write_follows(path, ring, model, {})


def test_ring_router_routes_as_the_writer(tmp_path: Path) -> None:
    """The engine's snapshot of the rings (what ``cluster_by_bucket`` ships to Spark tasks)
    puts every key in the file group the writer put it in: after a resize, and in a partition
    without a ring yet (the ring its writer creates)."""
    from hudi_ds.engine import ring_router
    from hudi_ds.index.core import BucketEngine, BucketLayout

    path = str(tmp_path / "t")
    layout = BucketLayout(4, (), BucketEngine.CONSISTENT_HASHING)
    assert ring_router(path, layout).rings == {}  # no table yet
    hudi_ds.write(path, builders.trips(range(60), key="k{:03d}"), _opts())
    resize = {**_opts(), "hoodie.parquet.max.file.size": "2000"}
    assert clustering.schedule_clustering(ServiceContext.open(path, resize)) is not None
    clustering.run_clustering(ServiceContext.open(path, resize))
    router = ring_router(path, layout)
    assert {p: r.seq_no for p, r in router.rings.items()} == {"sf": 1, "nyc": 1}
    la = builders.trips(range(100, 130), city="la", key="k{:03d}")
    want_la = router.file_ids(la.column("id"), la.column("city")).to_pylist()
    hudi_ds.write(path, la, _opts())
    got = hudi_ds.read(path)
    want = router.file_ids(got.column("_hoodie_record_key"), got.column("_hoodie_partition_path"))
    files = [f.lstrip(".").split("_")[0] for f in got.column("_hoodie_file_name").to_pylist()]
    assert files == want.to_pylist()
    keys = got.column("_hoodie_record_key").to_pylist()
    assert [files[keys.index(k)] for k in la.column("id").to_pylist()] == want_la
    assert len(set(want_la)) > 1
