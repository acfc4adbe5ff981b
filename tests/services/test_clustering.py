"""Clustering (``hudi_ds.services.clustering``) against a model of the rows.

Each table: 4 insert batches of 24 rows (ids 0..95) over partitions ``a``/``b`` with the SIMPLE
index and small-file packing off -- 8 small file groups --, then an upsert of 6 ids (MOR: log
files on 4 file groups) and a delete of 2 ids. Final: 94 rows. Clustering must keep exactly
those rows (every column, each commit time), in fewer file groups, readable by hudi_ds and
hudi-rs, with the metadata table on and off.
"""

from __future__ import annotations

import io
import itertools
import json
from collections import Counter
from pathlib import Path

import fastavro
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import hudi_ds
from hudi_ds.errors import (
    AttemptRolledBackError,
    CommitConflictError,
    StorageError,
    UnsupportedError,
)
from hudi_ds.faults import EXIT_CODE
from hudi_ds.services import ServiceContext, clustering
from hudi_ds.storage import Storage
from hudi_ds.table.fs_view import FileSystemView
from hudi_ds.table.table import ReadableTable
from tests.conftest import (
    assert_rows,
    hudi_rs_table,
    lose_response_of_completed_file,
    run_forked,
    table_options,
)
from tests.fixtures import REFERENCE_AVRO_SCHEMAS

COLS = ["id", "ts", "p", "v", "_hoodie_commit_time"]
DATA = ["id", "ts", "p", "v"]


def _opts(table_type: str, version: int, mdt: bool) -> dict[str, str]:
    return {
        **table_options("clu", partition="p", table_type=table_type, buckets=None),
        "hoodie.index.type": "SIMPLE",
        "hoodie.parquet.small.file.limit": "0",
        "hoodie.write.table.version": str(version),
        "hoodie.metadata.enable": str(mdt).lower(),
        "hoodie.compact.inline": "false",
        "hoodie.datasource.compaction.async.enable": "false",
        "hoodie.clean.automatic": "false",
    }


def _batch(ids: list[int], ts: int) -> pa.Table:
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "ts": pa.array([ts] * len(ids), pa.int64()),
            "p": ["a" if i % 2 else "b" for i in ids],
            "v": [float(i * 10 + ts) for i in ids],
        }
    )


def _build(path: str, opts: dict[str, str]) -> dict[int, tuple]:
    model: dict[int, tuple] = {}
    for k in range(4):
        t = _batch(list(range(k * 24, k * 24 + 24)), 1)
        hudi_ds.write(path, t, {**opts, "hoodie.datasource.write.operation": "insert"})
        for r in t.to_pylist():
            model[r["id"]] = tuple(r[c] for c in DATA)
    up = _batch([1, 2, 30, 31, 60, 61], 2)
    hudi_ds.write(path, up, opts)
    for r in up.to_pylist():
        model[r["id"]] = tuple(r[c] for c in DATA)
    hudi_ds.write(path, _batch([5, 50], 3), {**opts, "hoodie.datasource.write.operation": "delete"})
    del model[5], model[50]
    return model


def _read(path: str) -> pa.Table:
    return hudi_ds.read(path)


def _check(path: str, model: dict[int, tuple], mdt: bool, version: int) -> None:
    assert_rows(_read(path), list(model.values()), DATA)
    rs_opts = {"hoodie.metadata.enable": "true"} if mdt and version >= 8 else None
    assert_rows(hudi_rs_table(path, rs_opts), list(model.values()), DATA)


def _commit_times(t: pa.Table) -> dict[int, str]:
    ids, times = t.column("id").to_pylist(), t.column("_hoodie_commit_time").to_pylist()
    return dict(zip(ids, times, strict=True))


def _live_groups(path: str) -> dict[str, int]:
    table = ReadableTable(path)
    view = FileSystemView(Storage(path), table.config)
    vis = table.visibility()
    return {p: len(view.latest_file_slices(p, vis)) for p in view.partitions()}


CASES = [
    ("COPY_ON_WRITE", 6, False),
    ("MERGE_ON_READ", 6, True),
    ("COPY_ON_WRITE", 9, True),
    ("MERGE_ON_READ", 9, False),
]


@pytest.mark.parametrize(("table_type", "version", "mdt"), CASES)
def test_size_based_clustering(table_type: str, version: int, mdt: bool, tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    opts = _opts(table_type, version, mdt)
    model = _build(path, opts)
    commit_times = _commit_times(_read(path))
    assert _live_groups(path) == {"a": 4, "b": 4}
    ctx = ServiceContext.open(path, opts)
    c = clustering.schedule_clustering(ctx)
    assert c is not None
    tl = ctx.timeline()
    pending = tl.get(c)
    assert pending is not None
    assert pending.action == ("clustering" if version == 9 else "replacecommit")
    res = clustering.run_clustering(ServiceContext.open(path, opts))
    assert [r.instant for r in res] == [c]
    assert res[0].replaced == 8 and res[0].created == 2 and res[0].rows == len(model)
    assert _live_groups(path) == {"a": 1, "b": 1}
    _check(path, model, mdt, version)
    # each record keeps the commit time it had (preserveHoodieMetadata)
    after = _read(path)
    assert _commit_times(after) == commit_times
    # the completed replacecommit names the replaced file groups and the new files
    md = ServiceContext.open(path).timeline().read_commit_metadata(c)
    assert (md.operation_type or "").upper() == "CLUSTER"
    assert sorted(len(v) for v in md.partition_to_replace_file_ids.values()) == [4, 4]
    # writes go on into the new file groups
    up = _batch([0, 3, 95], 4)
    hudi_ds.write(path, up, opts)
    for r in up.to_pylist():
        model[r["id"]] = tuple(r[c] for c in DATA)
    _check(path, model, mdt, version)


@pytest.mark.parametrize("version", [6, 9])
def test_plan_decodes_with_hudi_schema(version: int, tmp_path: Path) -> None:
    """The requested file is a ``HoodieRequestedReplaceMetadata`` Apache Hudi's schema reads."""
    path = str(tmp_path / "t")
    opts = _opts("COPY_ON_WRITE", version, False)
    _build(path, opts)
    sort = {"hoodie.clustering.plan.strategy.sort.columns": "v,id"}
    c = clustering.schedule_clustering(ServiceContext.open(path, {**opts, **sort}))
    name = f"{c}.{'clustering' if version == 9 else 'replacecommit'}.requested"
    folder = Path(path) / ".hoodie" / ("timeline" if version == 9 else "")
    schema_file = REFERENCE_AVRO_SCHEMAS / f"HoodieRequestedReplaceMetadata.v{version}.avsc"
    reader = fastavro.parse_schema(json.loads(schema_file.read_text()))
    (rec,) = list(fastavro.reader(io.BytesIO((folder / name).read_bytes()), reader))
    assert rec["operationType"] == "CLUSTER"
    plan = rec["clusteringPlan"]
    assert plan["strategy"]["strategyClassName"].endswith("SparkSortAndSizeExecutionStrategy")
    assert plan["strategy"]["strategyParams"] == {
        "hoodie.clustering.plan.strategy.sort.columns": "v,id"
    }
    assert plan["preserveHoodieMetadata"] is True and plan["version"] == 1
    slices = [(s["partitionPath"], s["fileId"]) for g in plan["inputGroups"] for s in g["slices"]]
    assert len(slices) == len(set(slices)) == 8
    for g in plan["inputGroups"]:
        assert g["numOutputFileGroups"] == 1
        assert set(g["metrics"]) >= {"TOTAL_IO_MB", "TOTAL_LOG_FILES"}
        for s in g["slices"]:
            # full paths, as Java's getFileSliceInfo records them
            assert s["dataFilePath"].startswith(path) and s["dataFilePath"].endswith(".parquet")


def _zorder(x: int, y: int, bits: int = 32) -> int:
    out = 0
    for b in range(bits):
        out |= ((x >> b) & 1) << (2 * b + 1)
        out |= ((y >> b) & 1) << (2 * b)
    return out


@pytest.mark.parametrize("strategy", ["linear", "z-order", "hilbert"])
def test_sorted_clustering(strategy: str, tmp_path: Path) -> None:
    """Every new file is in the strategy's order of the sort columns; files of one group hold
    consecutive runs of that order."""
    path = str(tmp_path / "t")
    opts = {**_opts("COPY_ON_WRITE", 6, False), "hoodie.datasource.write.partitionpath.field": ""}
    rng = np.random.default_rng(7)
    cells = rng.permutation(256)  # every (x, y) of a 16 x 16 grid once, in random order
    model = {}
    for k in range(2):
        part = cells[k * 128 : (k + 1) * 128]
        t = pa.table(
            {
                "id": pa.array(part, pa.int64()),
                "ts": pa.array([1] * 128, pa.int64()),
                "x": pa.array(part // 16, pa.int64()),
                "y": pa.array(part % 16, pa.int64()),
            }
        )
        hudi_ds.write(path, t, {**opts, "hoodie.datasource.write.operation": "insert"})
        model.update({r["id"]: (r["id"], r["ts"], r["x"], r["y"]) for r in t.to_pylist()})
    sort = {
        "hoodie.clustering.plan.strategy.sort.columns": "x,y",
        "hoodie.layout.optimize.strategy": strategy,
        # about 4 new files
        "hoodie.clustering.plan.strategy.target.file.max.bytes": str(
            sum(f.stat().st_size for f in Path(path).glob("*.parquet")) // 4 + 1
        ),
    }
    ctx = ServiceContext.open(path, {**opts, **sort})
    clustering.schedule_clustering(ctx)
    (res,) = clustering.run_clustering(ServiceContext.open(path, {**opts, **sort}))
    assert res.created == 4
    files = sorted((Path(path) / s.path for s in res.stats), key=lambda p: p.name)
    seq = []
    for f in files:
        t = pq.read_table(f, columns=["x", "y"])
        seq.append(list(zip(t.column("x").to_pylist(), t.column("y").to_pylist(), strict=True)))
    if strategy == "linear":
        keys = [[pt for pt in rows] for rows in seq]
    elif strategy == "z-order":
        keys = [[_zorder(x, y) for x, y in rows] for rows in seq]
    for rows in seq if strategy == "hilbert" else []:
        # the Hilbert curve steps from a cell to a neighbour: consecutive rows are adjacent
        for (x0, y0), (x1, y1) in itertools.pairwise(rows):
            assert abs(x0 - x1) + abs(y0 - y1) == 1, (x0, y0, x1, y1)
    if strategy != "hilbert":
        for k in keys:
            assert k == sorted(k)
        # the files of the group cut one order: their ranges do not overlap
        flat = [v for k in sorted(keys, key=lambda k: k[0]) for v in k]
        assert flat == sorted(flat)
    assert_rows(_read(path), list(model.values()), ["id", "ts", "x", "y"])


KILLS = [
    ("COPY_ON_WRITE", 6, "service_plan:1"),
    ("COPY_ON_WRITE", 6, "clustering:1"),
    ("MERGE_ON_READ", 6, "service_written:1"),
    ("MERGE_ON_READ", 9, "clustering:2"),
    ("COPY_ON_WRITE", 9, "service_written:1"),
    ("MERGE_ON_READ", 9, "service_plan:1"),
]


@pytest.mark.parametrize(("table_type", "version", "spec"), KILLS)
def test_killed_clustering_resumes(
    table_type: str, version: int, spec: str, tmp_path: Path
) -> None:
    """A clustering killed at each step (before its plan, after a new file, after its
    completed file): the rows stay the model's; the next run rolls a left-over attempt back
    and completes the plan."""
    path = str(tmp_path / "t")
    opts = _opts(table_type, version, True)
    model = _build(path, opts)

    def run() -> None:
        ctx = ServiceContext.open(path, opts)
        clustering.run_clustering(ctx, clustering.schedule_clustering(ctx))

    assert run_forked(run, spec) == EXIT_CODE
    _check(path, model, True, version)
    res = clustering.run_clustering(ServiceContext.open(path, opts))
    tl = ServiceContext.open(path).timeline()
    if spec.startswith("clustering:"):
        assert len(res) == 1 and res[0].rows == len(model)
        # the killed attempt's files went with a rollback
        assert tl.completed().filter_actions("rollback")
    else:  # killed before its plan was written, or after its completion was
        assert res == []
    done = [i for i in tl.commits() if tl.is_clustering(i)]
    assert len(done) == (0 if spec == "service_plan:1" else 1)
    assert not clustering.pending_clusterings(ServiceContext.open(path).reload_timeline())
    _check(path, model, True, version)


@pytest.mark.parametrize("version", [6, 9])
def test_clustering_failing_after_its_completed_file_is_written_stands(
    version: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The store reports an error for the replacecommit after writing it: the error is raised,
    but the timeline, listed again, shows the clustering completed, so it is not rolled back
    -- its new file groups stay, every row reads back, nothing is left pending."""
    path = str(tmp_path / "t")
    opts = _opts("MERGE_ON_READ", version, True)
    model = _build(path, opts)
    c = clustering.schedule_clustering(ServiceContext.open(path, opts))
    assert c is not None
    real = lose_response_of_completed_file(monkeypatch, c)
    with pytest.raises(StorageError, match="injected"):
        clustering.run_clustering(ServiceContext.open(path, opts), c)
    monkeypatch.setattr(Storage, "write_atomic", real)
    tl = ServiceContext.open(path).reload_timeline()
    inst = tl.get(c)
    assert inst is not None and inst.is_completed
    assert not list(tl.filter_actions("rollback"))
    named = [
        s.path
        for sts in tl.read_commit_metadata(inst).partition_to_write_stats.values()
        for s in sts
    ]
    assert named and all((Path(path) / p).is_file() for p in named)
    assert sum(_live_groups(path).values()) < 8
    assert not clustering.pending_clusterings(tl)
    _check(path, model, True, version)


def test_killed_clustering_whose_rollback_is_killed(tmp_path: Path) -> None:
    """Killed mid-way, then the next run killed while rolling that attempt back: the run after
    finishes the rollback with its plan and completes the clustering; a writer in between
    leaves the pending clustering alone."""
    path = str(tmp_path / "t")
    opts = _opts("MERGE_ON_READ", 9, True)
    model = _build(path, opts)

    def run() -> None:
        ctx = ServiceContext.open(path, opts)
        clustering.run_clustering(ctx, clustering.schedule_clustering(ctx))

    assert run_forked(run, "clustering:1") == EXIT_CODE
    again = lambda: clustering.run_clustering(ServiceContext.open(path, opts))  # noqa: E731
    assert run_forked(again, "rollback:1") == EXIT_CODE
    new = _batch([300, 301], 5)  # new keys: new file groups, beside the pending plan
    hudi_ds.write(path, new, {**opts, "hoodie.datasource.write.operation": "insert"})
    model.update({r["id"]: tuple(r[k] for k in DATA) for r in new.to_pylist()})
    (c,) = clustering.pending_clusterings(ServiceContext.open(path).timeline())
    (res,) = clustering.run_clustering(ServiceContext.open(path, opts))
    assert res.instant == c.requested_time
    tl = ServiceContext.open(path).reload_timeline()
    assert not [i for i in tl if not i.is_completed]
    _check(path, model, True, 9)


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_update_into_pending_clustering_is_rejected(table_type: str, tmp_path: Path) -> None:
    """Java's default update strategy: a write touching a file group of a pending clustering
    fails naming it; the clustering then runs, and the same write succeeds afterwards."""
    path = str(tmp_path / "t")
    opts = _opts(table_type, 6, True)
    model = _build(path, opts)
    c = clustering.schedule_clustering(ServiceContext.open(path, opts))
    assert c is not None
    if table_type == "MERGE_ON_READ":  # compaction leaves file groups being clustered alone
        from hudi_ds.services import compaction

        assert compaction.schedule_compaction(ServiceContext.open(path, opts)) is None
    up = _batch([0, 7], 9)
    with pytest.raises(CommitConflictError, match=f"pending clustering {c} rewrites"):
        hudi_ds.write(path, up, opts)
    _check(path, model, True, 6)  # the refused write left nothing visible
    # inserts of new keys go to new file groups and commit beside the plan
    new = _batch([200, 201], 9)
    hudi_ds.write(path, new, {**opts, "hoodie.datasource.write.operation": "insert"})
    for r in new.to_pylist():
        model[r["id"]] = tuple(r[c] for c in DATA)
    (res,) = clustering.run_clustering(ServiceContext.open(path, opts))
    assert res.instant == c
    hudi_ds.write(path, up, opts)
    for r in up.to_pylist():
        model[r["id"]] = tuple(r[c] for c in DATA)
    _check(path, model, True, 6)


def test_allowed_update_makes_clustering_conflict(tmp_path: Path) -> None:
    """``SparkAllowUpdateStrategy``: the write commits; the clustering conflicts, is rolled
    back with its stale plan, and a new plan clusters the table with the update in."""
    path = str(tmp_path / "t")
    opts = {
        **_opts("MERGE_ON_READ", 9, True),
        "hoodie.clustering.updates.strategy": "SparkAllowUpdateStrategy",
    }
    model = _build(path, opts)
    c = clustering.schedule_clustering(ServiceContext.open(path, opts))
    up = _batch([0, 7], 9)
    hudi_ds.write(path, up, opts)
    for r in up.to_pylist():
        model[r["id"]] = tuple(r[c] for c in DATA)
    with pytest.raises(CommitConflictError, match=f"clustering {c} conflicts"):
        clustering.run_clustering(ServiceContext.open(path, opts))
    assert not clustering.pending_clusterings(ServiceContext.open(path).reload_timeline())
    _check(path, model, True, 9)
    clustering.schedule_clustering(ServiceContext.open(path, opts))
    assert clustering.run_clustering(ServiceContext.open(path, opts))
    _check(path, model, True, 9)


def test_inline_clustering_and_bucket_refusal(tmp_path: Path) -> None:
    """``hoodie.clustering.inline``: every ``...inline.max.commits`` commits; a bucket-index
    table is refused with the reason, and left unchanged."""
    path = str(tmp_path / "t")
    opts = {
        **_opts("COPY_ON_WRITE", 6, False),
        "hoodie.clustering.inline": "true",
        "hoodie.clustering.inline.max.commits": "3",
    }
    for k in range(3):
        hudi_ds.write(path, _batch(list(range(k * 10, k * 10 + 10)), 1), opts)
    tl = ServiceContext.open(path).timeline()
    done = [i for i in tl.commits() if tl.is_clustering(i)]
    assert len(done) == 1 and _live_groups(path) == {"a": 1, "b": 1}
    bucket = str(tmp_path / "b")
    hudi_ds.write(bucket, _batch(list(range(10)), 1), table_options("b", partition="p"))
    before = sorted(p.name for p in (Path(bucket) / ".hoodie").iterdir())
    with pytest.raises(UnsupportedError, match="bucket index"):
        clustering.schedule_clustering(ServiceContext.open(bucket))
    assert sorted(p.name for p in (Path(bucket) / ".hoodie").iterdir()) == before


def test_cli(tmp_path: Path) -> None:
    """``hudi-py clustering schedule|list|run`` (JSON), and the bucket refusal's exit code."""
    from hudi_ds.cli import main

    path = str(tmp_path / "t")
    opts = _opts("COPY_ON_WRITE", 6, False)
    model = _build(path, opts)

    def cli(*args: str, expect: int = 0) -> dict:
        out, err = io.StringIO(), io.StringIO()
        assert main([*args, "--json"], out, err) == expect, err.getvalue()
        return json.loads(out.getvalue()) if expect == 0 else {}

    c = cli("clustering", "schedule", path)["scheduled"]
    (pending,) = cli("clustering", "list", path)["pending"]
    assert pending["instant"] == c and pending["file_slices"] == 8
    (done,) = cli("clustering", "run", path)["clusterings"]
    assert done["instant"] == c and done["rows"] == len(model)
    assert cli("clustering", "list", path)["pending"] == []
    assert_rows(_read(path), list(model.values()), DATA)
    bucket = str(tmp_path / "b")
    hudi_ds.write(bucket, _batch(list(range(10)), 1), table_options("b", partition="p"))
    cli("clustering", "schedule", bucket, expect=5)


def test_record_index_follows_and_cleaner_removes_replaced(tmp_path: Path) -> None:
    """A RECORD_INDEX table (metadata table, version 9): after clustering, updates find their
    keys in the new file groups (the record index followed the move); the cleaner deletes the
    replaced file groups once the replacecommit is past its retention."""
    path = str(tmp_path / "t")
    opts = {
        **_opts("COPY_ON_WRITE", 9, True),
        "hoodie.index.type": "RECORD_INDEX",
        "hoodie.metadata.record.index.enable": "true",
    }
    model = _build(path, opts)
    (res,) = clustering.run_clustering(
        ServiceContext.open(path, opts), clustering.schedule_clustering(ServiceContext.open(path))
    )
    replaced = {p for p in Path(path).glob("*/*.parquet") if res.instant not in p.name}
    assert "record_index" in (Path(path) / ".hoodie" / "hoodie.properties").read_text()
    for ts in (5, 6):
        up = _batch([0, 1, 33], ts)
        hudi_ds.write(path, up, {**opts, "hoodie.clean.automatic": "true",
                                 "hoodie.cleaner.commits.retained": "1"})  # fmt: skip
        for r in up.to_pylist():
            model[r["id"]] = tuple(r[c] for c in DATA)
    assert _live_groups(path) == {"a": 1, "b": 1}
    assert not any(p.exists() for p in replaced)
    _check(path, model, True, 9)


def _tree(path: str) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for p in sorted(Path(path).rglob("*")) if p.is_file()}


def test_refusals_leave_the_table_unchanged(tmp_path: Path) -> None:
    """Bad options and plans hudi_ds cannot execute are refused by name, before anything is
    written."""
    from hudi_ds.config import ClusteringConfig
    from hudi_ds.errors import ConfigError
    from hudi_ds.services.clustering_plan import plan_clustering, requested_metadata

    path = str(tmp_path / "t")
    opts = _opts("MERGE_ON_READ", 9, True)
    _build(path, opts)
    before = _tree(path)
    bad = {
        "hoodie.clustering.plan.strategy.sort.columns": "v,nope",
        "hoodie.clustering.preserve.commit.metadata": "false",
        "hoodie.layout.optimize.strategy": "spiral",
        "hoodie.clustering.execution.strategy.class": "SparkSingleFileSortExecutionStrategy",
        "hoodie.clustering.plan.partition.filter.mode": "SELECTED_PARTITIONS",
    }
    for key, value in bad.items():
        with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
            clustering.schedule_clustering(ServiceContext.open(path, {**opts, key: value}))
    assert _tree(path) == before
    # a plan of another execution strategy (Java's single-file sort keeps file ids)
    ctx = ServiceContext.open(path, opts)
    plan = plan_clustering(ctx)
    assert plan is not None and plan.strategy is not None
    plan.strategy.strategy_class_name = (
        "org.apache.hudi.client.clustering.run.strategy.SparkSingleFileSortExecutionStrategy"
    )
    ctx.new_instant("clustering", requested_metadata(plan).to_bytes())
    before = _tree(path)
    with pytest.raises(UnsupportedError, match="SparkSingleFileSortExecutionStrategy"):
        clustering.run_clustering(ServiceContext.open(path, opts))
    assert _tree(path) == before
    assert ClusteringConfig.UPDATES_STRATEGY.default.endswith("SparkRejectUpdateStrategy")


def test_async_clustering_hands_plans_to_the_background_runner(tmp_path: Path) -> None:
    """``hoodie.clustering.async.enabled``: a commit of the streaming sink schedules the plan
    and hands it to its background process (``async_compactor``), whose body runs it; the
    embedded API runs it right after the commit."""
    from hudi_ds.services import background

    path = str(tmp_path / "t")
    opts = {**_opts("MERGE_ON_READ", 6, False), "hoodie.clustering.inline.max.commits": "2"}
    model: dict[int, tuple] = {}
    for k in range(2):
        t = _batch(list(range(k * 10, k * 10 + 10)), 1)
        hudi_ds.write(path, t, {**opts, "hoodie.datasource.write.operation": "insert"})
        model.update({r["id"]: tuple(r[c] for c in DATA) for r in t.to_pylist()})
    on = {**opts, "hoodie.clustering.async.enabled": "true"}
    handed: list[ServiceContext] = []
    assert clustering.run_inline_clustering(ServiceContext.open(path, on), handed.append) == []
    assert len(handed) == 1
    (c,) = clustering.pending_clusterings(ServiceContext.open(path).timeline())
    assert background.run_pending(path, on) == 1
    tl = ServiceContext.open(path).timeline()
    assert not clustering.pending_clusterings(tl) and tl.get(c.requested_time).is_completed
    assert _live_groups(path) == {"a": 1, "b": 1}
    assert_rows(_read(path), list(model.values()), DATA)
    # the embedded API: run right after the commit that scheduled it
    for k in range(2, 4):
        t = _batch(list(range(k * 10, k * 10 + 10)), 1)
        hudi_ds.write(path, t, {**on, "hoodie.datasource.write.operation": "insert"})
        model.update({r["id"]: tuple(r[c] for c in DATA) for r in t.to_pylist()})
    assert _live_groups(path) == {"a": 1, "b": 1}
    assert_rows(_read(path), list(model.values()), DATA)


@pytest.mark.parametrize("strategy", ["SparkRejectUpdateStrategy", "SparkAllowUpdateStrategy"])
def test_writer_beside_running_clustering_under_occ(
    strategy: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Optimistic concurrency control, a writer updating a clustered file group while the
    clustering executes (a hook after its first group is written, deterministic): rejected
    (the default), or committed -- then the clustering conflicts and is rolled back. Either
    way every row is the model's."""
    from tests.conftest import OCC_OPTIONS

    path = str(tmp_path / "t")
    opts = {
        **_opts("MERGE_ON_READ", 9, True),
        **OCC_OPTIONS,
        "hoodie.clustering.updates.strategy": strategy,
    }
    model = _build(path, opts)
    up = _batch([0, 7], 9)
    outcome: list[object] = []
    real = clustering.execute_group

    def group_then_write(job: object, index: int) -> object:
        stats = real(job, index)  # type: ignore[arg-type]
        if index == 0:
            try:
                hudi_ds.write(path, up, opts)
                outcome.append("committed")
            except CommitConflictError as e:
                outcome.append(e)
        return stats

    monkeypatch.setattr(clustering, "execute_group", group_then_write)
    c = clustering.schedule_clustering(ServiceContext.open(path, opts))
    if strategy == "SparkRejectUpdateStrategy":
        (res,) = clustering.run_clustering(ServiceContext.open(path, opts))
        assert res.instant == c
        (err,) = outcome
        assert isinstance(err, CommitConflictError) and f"pending clustering {c}" in str(err)
    else:
        with pytest.raises(CommitConflictError, match=f"clustering {c} conflicts"):
            clustering.run_clustering(ServiceContext.open(path, opts))
        assert outcome == ["committed"]
        model.update({r["id"]: tuple(r[k] for k in DATA) for r in up.to_pylist()})
        assert _live_groups(path) == {"a": 4, "b": 4}
    tl = ServiceContext.open(path).reload_timeline()
    assert not clustering.pending_clusterings(tl)
    assert not [i for i in tl if not i.is_completed]
    _check(path, model, True, 9)


@pytest.mark.parametrize("name", ["cow_v9_txns_simple_nometa", "mor_avro_v9_txns_complex_meta"])
def test_tables_written_by_apache_hudi(
    name: str, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Fixture tables of Apache Hudi 1.x (COW; MOR with logs, a metadata table and its record
    index): clustered, every row -- meta columns but the file name included -- stays, as
    hudi_ds and hudi-rs read them."""
    import shutil

    from tests.fixtures import fixture_table

    root = tmp_path / "t"
    shutil.copytree(fixture_table(name, tmp_path_factory), root)
    path = str(root)
    before = _read(path)
    cols = [c for c in before.column_names if c != "_hoodie_file_name"]
    expected = table_rows_of(before, cols)
    (res,) = clustering.run_clustering(
        ServiceContext.open(path), clustering.schedule_clustering(ServiceContext.open(path))
    )
    assert res.rows == before.num_rows and res.replaced > res.created
    assert_rows(_read(path), expected, cols, key=["_hoodie_record_key"])
    theirs = hudi_rs_table(path)
    assert_rows(theirs, expected, [c for c in cols if c in theirs.column_names],
                key=["_hoodie_record_key"])  # fmt: skip


def table_rows_of(t: pa.Table, cols: list[str]) -> list[tuple]:
    return list(zip(*(t.column(c).to_pylist() for c in cols), strict=True))


def test_attempt_undone_by_another_process_does_not_complete(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A clustering paused past its heartbeat is taken for failed and rolled back by another
    process (a hook after its first group, deterministic); when it goes on it must not complete
    -- its first files are gone -- and deletes what it wrote since. The plan then runs again."""
    path = str(tmp_path / "t")
    opts = _opts("COPY_ON_WRITE", 6, True)
    model = _build(path, opts)
    real = clustering.execute_group

    def group_then_undone(job: object, index: int) -> object:
        stats = real(job, index)  # type: ignore[arg-type]
        if index == 0:
            clustering.rollback_inflight_clustering(ServiceContext.open(path, opts), c)
        return stats

    c = clustering.schedule_clustering(ServiceContext.open(path, opts))
    assert c is not None
    monkeypatch.setattr(clustering, "execute_group", group_then_undone)
    with pytest.raises(AttemptRolledBackError, match="rollback .* undid it"):
        clustering.run_clustering(ServiceContext.open(path, opts))
    assert [i.requested_time for i in clustering.pending_clusterings(
        ServiceContext.open(path).reload_timeline())] == [c]  # fmt: skip
    assert not [p for p in Path(path).glob(f"*/*_{c}.parquet")]
    _check(path, model, True, 6)
    monkeypatch.setattr(clustering, "execute_group", real)
    (res,) = clustering.run_clustering(ServiceContext.open(path, opts))
    assert res.instant == c
    assert sorted(Path(path).glob(f"*/*_{c}.parquet")) == sorted(
        Path(path) / s.path for s in res.stats
    )
    _check(path, model, True, 6)


def test_partition_selection() -> None:
    """``hoodie.clustering.plan.partition.filter.mode`` and the selected / regex options (Java
    ``ClusteringPlanPartitionFilter``)."""
    from hudi_ds.config import validated
    from hudi_ds.services.clustering_plan import select_partitions

    parts = ["2024/01/03", "2024/01/01", "2024/01/04", "2024/01/02", "2023/12/31"]

    def pick(**o: str) -> list[str]:
        opts = validated({k.replace("_", "."): v for k, v in o.items()})
        return select_partitions(ServiceContext(None, opts), parts)  # type: ignore[arg-type]

    assert pick() == sorted(parts)
    p = "hoodie_clustering_plan_"
    s = "hoodie_clustering_plan_strategy_"
    assert pick(**{f"{p}partition_filter_mode": "RECENT_DAYS"}) == ["2024/01/03", "2024/01/04"]
    assert pick(
        **{
            f"{p}partition_filter_mode": "RECENT_DAYS",
            f"{s}daybased_lookback_partitions": "3",
            f"{s}daybased_skipfromlatest_partitions": "1",
        }
    ) == ["2024/01/01", "2024/01/02", "2024/01/03"]
    assert pick(**{f"{s}partition_selected": "2023/12/31,2024/01/02"}) == [
        "2023/12/31",
        "2024/01/02",
    ]
    assert pick(**{f"{s}partition_regex_pattern": r"2024/01/0[12]"}) == ["2024/01/01", "2024/01/02"]


def test_unsorted_group_written_in_several_files(tmp_path: Path) -> None:
    """Without sort columns a group's files are cut at slice boundaries once they hold their
    share of the input: 4 slices of one partition and a target of half their base bytes give
    2 new files, each of whole slices."""
    path = str(tmp_path / "t")
    opts = _opts("MERGE_ON_READ", 6, False)
    model = _build(path, opts)
    base = sum(f.stat().st_size for f in Path(path).glob("a/*.parquet"))
    sizing = {"hoodie.clustering.plan.strategy.target.file.max.bytes": str(base // 2 + 1)}
    ctx = ServiceContext.open(path, {**opts, **sizing})
    (res,) = clustering.run_clustering(ctx, clustering.schedule_clustering(ctx))
    per_partition = Counter(s.partition_path for s in res.stats)
    assert per_partition["a"] == 2
    counts = sorted(s.num_writes for s in res.stats if s.partition_path == "a")
    in_a = sum(1 for i in model if i % 2)
    assert sum(counts) == in_a and counts[0] >= 11  # 12 rows a slice, id 5 deleted
    _check(path, model, False, 6)
