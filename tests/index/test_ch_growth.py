"""Acceptance: a consistent-hashing table whose partitions grow 16x (``make test``) or from 1k to
1M rows (``make test-stress``) through upsert batches, resized as the thresholds say, then
shrunk by deletes so that small nodes merge.

After every batch the resizes run until none is planned (Java plans one split per node per
clustering); after every resize each partition's committed ring is decoded by the independent
:mod:`tests.index.ring_decoder` and checked to cover ``[0, 0x7fffffff]`` once and to hold every
live file group (as hudi-rs lists them); after every batch's resizes every file group is under
``max.file.size * split.threshold``. At the end hudi_ds and hudi-rs read exactly the model's
rows, each key once, each in its node's file group by Java's hash computed here.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import hudi
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import hudi_ds
from hudi_ds.services import ServiceContext, clustering, compaction
from tests import builders
from tests.conftest import hudi_rs_table
from tests.index.ring_decoder import check_ring_matches_file_groups, node_of

CITIES = ("nyc", "sf")  # builders.trips: even ids in nyc, odd in sf
KEY = "k{:08d}"


@dataclass(frozen=True)
class Growth:
    start: int  # rows per partition after the first batch
    end: int  # rows per partition after the last
    batches: int
    max_file_size: int
    update_share: float = 0.1  # existing keys updated per batch, as a share of the new ones
    check_sample: int = 0  # rows whose node is checked at the end (0: all)


def _live(path: str) -> dict[str, dict[str, int]]:
    """Partition -> file id -> size (base and log files) of the latest slices, by hudi-rs."""
    out: dict[str, dict[str, int]] = {c: {} for c in CITIES}
    for s in hudi.HudiTableBuilder.from_base_uri(path).build().get_file_slices():
        size = s.base_file_size + sum(s.log_file_sizes)
        out.setdefault(s.partition_path, {})[s.file_id] = size
    return out


def _expected(ts: np.ndarray) -> pa.Table:
    ids = np.flatnonzero(ts)
    return pa.table(
        {
            "id": [KEY.format(i) for i in ids.tolist()],
            "ts": pa.array(ts[ids], pa.int64()),
            "city": [CITIES[i % 2] for i in ids.tolist()],
            "fare": pa.array(ids * 100.0 + ts[ids], pa.float64()),
        }
    )


def _same_rows(got: pa.Table, want: pa.Table) -> None:
    got = got.select(want.column_names)
    assert pc.count_distinct(got.column("id")).as_py() == got.num_rows, "a key is there twice"
    got = got.sort_by("id").combine_chunks()
    assert got.num_rows == want.num_rows, (got.num_rows, want.num_rows)
    for name in want.column_names:
        assert got.column(name).equals(want.column(name)), name


def _grow(tmp_path: Path, g: Growth) -> None:
    path = str(tmp_path / "t")
    opts = builders.options(
        "t",
        "MERGE_ON_READ",
        partition="city",
        index="BUCKET",
        buckets=2,
        **{
            "hoodie.index.bucket.engine": "CONSISTENT_HASHING",
            "hoodie.parquet.max.file.size": str(g.max_file_size),
            "hoodie.index.bloom.num_entries": "1000",  # small footers: sizes follow the rows
            # a file group of a tenth of its rows (the deletes) is a merge candidate
            "hoodie.bucket.index.merge.threshold": "0.5",
        },
    )
    split_size = 2.0 * g.max_file_size  # hoodie.bucket.index.split.threshold's default
    merge_size = 0.5 * g.max_file_size
    ts = np.zeros(2 * g.end + 2, np.int64)  # the model: each id's ts, 0 when absent
    stats = {"resizes": 0, "max_nodes": 0}
    merged: Counter[str] = Counter()  # nodes removed by merges, per partition

    def resize() -> int:
        """Resizes until none is planned, each plan and ring checked; the number run."""
        n = 0
        while True:
            before = {f: size for live in _live(path).values() for f, size in live.items()}
            ctx = ServiceContext.open(path, opts)
            instant = clustering.schedule_clustering(ctx)
            if instant is None:
                return n
            plan = ctx.reload_timeline().read_requested_replace(instant).clustering_plan
            assert plan is not None
            for group in plan.input_groups or []:  # each group as the thresholds say
                kids = json.loads(group.extra_metadata["clustering.group.child.node"])
                sizes = [before[s.file_id] for s in group.slices or []]
                if [k["tag"] for k in kids] == ["REPLACE", "REPLACE"]:
                    assert sizes[0] > split_size, (instant, sizes)
                else:
                    assert [k["tag"] for k in kids[:-1]] == ["DELETE"] * (len(kids) - 1)
                    assert len(sizes) == len(kids) >= 2 and max(sizes) <= merge_size, sizes
                    merged[group.extra_metadata["clustering.group.partition"]] += len(kids) - 1
            clustering.run_clustering(ctx, instant)
            n += 1
            for city, live in _live(path).items():
                if live:
                    ring = check_ring_matches_file_groups(path, city, live)
                    stats["max_nodes"] = max(stats["max_nodes"], len(ring.nodes))

    def check_sizes(when: str) -> None:
        for city, live in _live(path).items():
            big = {f: s for f, s in live.items() if s > split_size}
            assert not big, f"{when}: file groups of {city} over the split size: {big}"

    growth = (g.end / g.start) ** (1 / (g.batches - 1))
    have = 0  # ids [0, have) written
    for b in range(g.batches):
        want = 2 * round(g.start * growth**b)
        new = np.arange(have, want)
        step = max(1, math.ceil(have / max(1, g.update_share * len(new))))
        upd = np.arange(b % step, have, step) if have else np.zeros(0, np.int64)
        ids = np.concatenate([new, upd])
        rows = builders.trips(ids.tolist(), ts=b + 1, key=KEY)
        hudi_ds.write(path, rows, opts)
        ts[ids] = b + 1
        have = want
        stats["resizes"] += resize()
        check_sizes(f"batch {b}")
    assert stats["resizes"] >= 3 and stats["max_nodes"] >= 6 and not merged, (stats, merged)

    # deletes shrink nyc to a tenth; once compacted, its small neighbouring nodes merge
    nyc_nodes = len(check_ring_matches_file_groups(path, "nyc", _live(path)["nyc"]).nodes)
    gone = np.arange(0, have, 2)
    gone = gone[(gone // 2) % 10 != 0]
    hudi_ds.write(
        path,
        builders.trips(gone.tolist(), ts=g.batches + 1, key=KEY),
        {**opts, "hoodie.datasource.write.operation": "delete"},
    )
    ts[gone] = 0
    ctx = ServiceContext.open(path, opts)
    assert compaction.schedule_compaction(ctx) is not None
    compaction.run_compaction(ctx)
    assert resize() >= 1
    check_sizes("after the deletes")
    ring = check_ring_matches_file_groups(path, "nyc", _live(path)["nyc"])
    assert len(ring.nodes) == nyc_nodes - merged["nyc"] < nyc_nodes, (merged, nyc_nodes)
    assert len(ring.nodes) >= 2  # hoodie.bucket.index.min.num.buckets: the initial count

    want_rows = _expected(ts)
    got = hudi_ds.read(path)
    _same_rows(got, want_rows)
    _same_rows(hudi_rs_table(path), want_rows)
    rings = {c: check_ring_matches_file_groups(path, c, _live(path)[c]).nodes for c in CITIES}
    rows = got.select(["_hoodie_record_key", "city", "_hoodie_file_name"])
    if g.check_sample and rows.num_rows > g.check_sample:
        pick = np.random.default_rng(7).choice(rows.num_rows, g.check_sample, replace=False)
        rows = rows.take(pa.array(np.sort(pick)))
    for key, city, name in zip(*(c.to_pylist() for c in rows.columns), strict=True):
        assert name.lstrip(".").startswith(node_of(rings[city], key, ["id"]) + "-0"), key


def test_partitions_growing_16x_split_and_shrinking_ones_merge(tmp_path: Path) -> None:
    """2k -> 32k rows per partition in 8 batches, ``max.file.size`` 64 KB."""
    _grow(tmp_path, Growth(start=2000, end=32000, batches=8, max_file_size=64 << 10))


@pytest.mark.stress
def test_partitions_growing_from_1k_to_1m_rows(tmp_path: Path) -> None:
    """1k -> 1M rows per partition through 50 upsert batches, ``max.file.size`` 256 KB."""
    _grow(
        tmp_path,
        Growth(start=1000, end=1_000_000, batches=50, max_file_size=256 << 10, check_sample=20_000),
    )
