"""Merging small consistent-hashing nodes (Java ``BaseConsistentHashingBucketClusteringPlanStrategy
.buildMergeClusteringGroup``, ``ConsistentBucketIdentifier.mergeBucket``): the plan's runs,
their DELETE / REPLACE children as Java's JSON, and a merge executed through clustering, its ring
checked with the independent decoder of :mod:`tests.index.ring_decoder`."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest

import hudi_ds
from hudi_ds.index.consistent_hashing import HashingMetadata, NodeTag, nodes_to_json
from hudi_ds.services import ServiceContext, clustering
from hudi_ds.services.bucket_resize import plan_merges, plan_splits
from tests import builders
from tests.conftest import assert_rows, hudi_rs_table
from tests.index.ring_decoder import (
    check_ring_matches_file_groups,
    decode_hashing_meta,
    node_of,
    ring_ranges,
)

COLUMNS = ["id", "ts", "city", "fare"]


def _runs(ring: HashingMetadata, sizes: list[tuple[int, int]], limit: int, slots: int) -> list:
    return [run for run, _ in plan_merges(ring, sizes, limit, slots)]


def test_merge_runs_follow_javas_rules() -> None:
    ring = HashingMetadata.initial("p", 8)
    small, big = 10, 1000
    # backwards first, then forwards; a big node ends a run; the run wraps past the last node
    sizes = [(0, small), (1, small), (2, big), (3, small), (4, small), (5, small), (6, big)]
    sizes.append((7, small))
    assert _runs(ring, sizes, 100, 8) == [[7, 0, 1], [3, 4, 5]]
    # the slots (nodes that may go) bound the runs
    assert _runs(ring, sizes, 100, 3) == [[7, 0, 1], [3, 4]]
    assert _runs(ring, sizes, 100, 0) == []
    # a node without a file group (no slice) is no neighbour: the run stops there
    assert _runs(ring, [(0, small), (2, small), (3, small)], 100, 8) == [[2, 3]]
    # the run so far must stay under the threshold before it takes another node
    assert _runs(ring, [(i, 60) for i in range(4)], 100, 8) == [[0, 1], [2, 3]]
    # a whole ring of small nodes merges to one, not into itself
    assert _runs(ring, [(i, 1) for i in range(8)], 100, 8) == [[1, 2, 3, 4, 5, 6, 7, 0]]


def test_merge_children_are_javas_and_give_a_covering_ring() -> None:
    ring = HashingMetadata.initial("p", 4)
    kids = ring.merge([3, 0])  # wraps: the last node's range joins the first's
    assert [(k.value, k.tag) for k in kids] == [
        (ring.nodes[3].value, NodeTag.DELETE),
        (ring.nodes[0].value, NodeTag.REPLACE),
    ]
    doc = json.loads(nodes_to_json(kids))
    assert doc[0] == {"value": ring.nodes[3].value, "fileIdPrefix": None, "tag": "DELETE"}
    assert doc[1]["tag"] == "REPLACE" and doc[1]["fileIdPrefix"] == kids[1].file_id_prefix
    merged = ring.with_children(kids, "20250101000000000", "t")
    nodes = decode_hashing_meta(merged.to_bytes())["nodes"]
    assert [n["value"] for n in nodes] == [n.value for n in ring.nodes[:3]]
    ranges = dict(ring_ranges(nodes))
    first = ring.nodes[0].value
    assert ranges[kids[1].file_id_prefix] == [(0, first), (ring.nodes[2].value + 1, 0x7FFFFFFF)]
    with pytest.raises(ValueError, match="not neighbours"):
        ring.merge([0, 2])
    # splits come first and leave the rest to the merges
    splits, rest = plan_splits(ring, [(0, 500), (1, 5), (2, 5), (3, 5)], 100, 1)
    assert [p for p, _ in splits] == [0] and rest == [(1, 5), (2, 5), (3, 5)]


def test_small_nodes_merge_through_clustering_down_to_min_num_buckets(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """8 initial nodes of a 120-row partition, ``min.num.buckets=3``: one clustering merges
    runs of small nodes (5 of them go), the ring (seqNo 1) covers the hash space, every key sits
    once in its node's file group, and writes after it follow the merged ring."""
    path = str(tmp_path / "t")
    opts = builders.options(
        "t",
        "MERGE_ON_READ",
        partition="city",
        index="BUCKET",
        buckets=8,
        **{"hoodie.index.bucket.engine": "CONSISTENT_HASHING"},
    )
    model: dict[str, tuple] = {}

    def write(rows: pa.Table) -> None:
        hudi_ds.write(path, rows, opts)
        model.update({r["id"]: (r["id"], r["ts"], r["city"], r["fare"]) for r in rows.to_pylist()})

    write(builders.trips(range(120), city="sf", key="k{:04d}"))
    # a minimum above the table's 8 buckets is the 8 buckets (warned, as Java): nothing merges
    above = {**opts, "hoodie.bucket.index.min.num.buckets": "20"}
    with caplog.at_level("WARNING", logger="hudi_ds.services.bucket_resize"):
        assert clustering.schedule_clustering(ServiceContext.open(path, above)) is None
    assert "hoodie.bucket.index.min.num.buckets=20 is larger than the table's 8" in caplog.text
    resize = {
        **opts,
        "hoodie.parquet.max.file.size": str(1 << 20),
        "hoodie.bucket.index.min.num.buckets": "3",
    }
    ctx = ServiceContext.open(path, resize)
    instant = clustering.schedule_clustering(ctx)
    assert instant is not None
    plan = ctx.reload_timeline().read_requested_replace(instant).clustering_plan
    assert plan is not None
    removed = 0
    for g in plan.input_groups or []:
        kids = json.loads(g.extra_metadata["clustering.group.child.node"])
        assert [k["tag"] for k in kids] == ["DELETE"] * (len(kids) - 1) + ["REPLACE"]
        assert all(k["fileIdPrefix"] is None for k in kids[:-1])
        assert g.num_output_file_groups == 1 and len(g.slices) == len(kids) >= 2
        removed += len(kids) - 1
    assert removed == 5
    clustering.run_clustering(ServiceContext.open(path, resize))

    def check() -> None:
        live = {s.file_id: s.total_size_bytes for s in _hudi_rs_slices(path)}
        ring = check_ring_matches_file_groups(path, "sf", live)
        assert (ring.instant, ring.seq_no, len(ring.nodes)) == (instant, 1, 3)
        got = hudi_ds.read(path)
        assert_rows(got, list(model.values()), COLUMNS)
        assert_rows(hudi_rs_table(path), list(model.values()), COLUMNS)
        for key, name in zip(
            got.column("_hoodie_record_key").to_pylist(),
            got.column("_hoodie_file_name").to_pylist(),
            strict=True,
        ):
            assert name.lstrip(".").startswith(node_of(ring.nodes, key, ["id"]) + "-0")

    check()
    assert clustering.schedule_clustering(ServiceContext.open(path, resize)) is None  # at min
    write(builders.trips(range(100, 160), ts=2, city="sf", key="k{:04d}"))
    check()


def _hudi_rs_slices(path: str) -> list:
    import hudi

    return list(hudi.HudiTableBuilder.from_base_uri(path).build().get_file_slices())
