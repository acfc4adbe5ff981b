"""Clustering beside a writer under optimistic concurrency control, killed at each step and
resumed; sorted clusterings of MOR tables; the metadata table (``files`` and ``column_stats``)
kept in step. Full rows against a model, read back by hudi_ds and by hudi-rs with the metadata
table on and off.

The tables are those of ``test_clustering.py`` (8 small file groups over partitions ``a``/``b``,
MOR: logs on 4 of them); here clustering plans partition ``a`` only
(``...partition.regex.pattern``), so a writer beside it updates ``b`` freely while an update
of a key in ``a`` is a write into a file group of the pending plan.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import hudi_ds
from hudi_ds.api import HudiTable
from hudi_ds.concurrency.file_system_lock import LOCK_FILE
from hudi_ds.concurrency.heartbeat import heartbeat_expired
from hudi_ds.errors import CommitConflictError
from hudi_ds.faults import EXIT_CODE
from hudi_ds.services import ServiceContext, clustering
from hudi_ds.storage import Storage
from hudi_ds.timeline.view import TableState
from tests.conftest import OCC_OPTIONS, assert_rows, hudi_rs_table, run_forked
from tests.metadata.test_writer import assert_in_step
from tests.services.test_clustering import DATA, _batch, _build, _live_groups, _opts

Rows = dict[int, tuple]
HEARTBEAT_MS = 200

#: every step a clustering of one group into one file passes, in order: its plan about to be
#: written; its new base file written; its metadata-table deltacommit inflight, its log block
#: written, completed (the data instant not); its replacecommit written
STEPS = [
    "service_plan:1",
    "clustering:1",
    "metadata:1",
    "metadata:2",
    "metadata:3",
    "service_written:1",
]


def _occ(table_type: str, version: int) -> dict[str, str]:
    return {
        **_opts(table_type, version, True),
        **OCC_OPTIONS,
        "hoodie.clustering.plan.strategy.partition.regex.pattern": "a",
        # a killed attempt's heartbeat is taken for dead 0.2 s after its last beat
        "hoodie.client.heartbeat.interval_in_ms": str(HEARTBEAT_MS),
        "hoodie.client.heartbeat.tolerable.misses": "1",
    }


def _wait_heartbeat_expired(path: str, instant: str) -> None:
    deadline = time.monotonic() + 15
    while not heartbeat_expired(Storage(path), instant, HEARTBEAT_MS / 1000):
        assert time.monotonic() < deadline, "the killed attempt's heartbeat did not expire"
        time.sleep(0.02)


def _apply(model: Rows, t: pa.Table) -> None:
    model.update({r["id"]: tuple(r[c] for c in DATA) for r in t.to_pylist()})


def _check_all(path: str, model: Rows, hudi_rs: bool = True) -> None:
    """hudi_ds, hudi-rs listing the storage and hudi-rs through the metadata table read the
    model's rows; the metadata table's ``files`` partition lists exactly the committed files."""
    expected = list(model.values())
    assert_rows(hudi_ds.read(path), expected, DATA)
    if hudi_rs:
        assert_rows(hudi_rs_table(path), expected, DATA)
        assert_rows(hudi_rs_table(path, {"hoodie.metadata.enable": "true"}), expected, DATA)
    assert_in_step(Path(path))


@pytest.fixture(scope="module")
def bases(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, int], tuple[str, Rows]]:
    root = tmp_path_factory.mktemp("clustering-bases")
    out = {}
    for table_type, version in [("MERGE_ON_READ", 9), ("COPY_ON_WRITE", 6)]:
        path = str(root / f"{table_type}-{version}")
        out[(table_type, version)] = (path, _build(path, _occ(table_type, version)))
    return out


@pytest.mark.parametrize(("table_type", "version"), [("MERGE_ON_READ", 9), ("COPY_ON_WRITE", 6)])
def test_killed_at_each_step_beside_an_occ_writer(
    table_type: str, version: int, bases: dict, tmp_path: Path
) -> None:
    """For each step: the clustering (its own process) is killed there; a writer under OCC
    then updates partition ``b`` and inserts new keys into ``a`` -- committed --, while its
    update of a key in a file group of the left-over plan is refused (Java's
    ``SparkRejectUpdateStrategy``) and leaves nothing visible; the next run rolls the dead
    attempt back and completes the plan (or plans again when the kill came before the plan
    or after the completion), after which the same update commits. Every state: the model's
    rows, the metadata table in step."""
    src, base_model = bases[(table_type, version)]
    opts = _occ(table_type, version)
    for spec in STEPS:
        path = str(tmp_path / spec.replace(":", "-"))
        shutil.copytree(src, path)
        model = dict(base_model)

        def run() -> None:
            ctx = ServiceContext.open(path, opts)  # noqa: B023 - runs in this iteration
            clustering.run_clustering(ctx, clustering.schedule_clustering(ctx))

        assert run_forked(run, spec) == EXIT_CODE, spec
        # the killed process held the table lock at most steps: its lease would run out (and
        # a writer then take the lock over); the test does not wait for it
        (Path(path) / LOCK_FILE).unlink(missing_ok=True)
        left = clustering.pending_clusterings(ServiceContext.open(path).reload_timeline())
        assert len(left) == (0 if spec in ("service_plan:1", "service_written:1") else 1), spec
        _check_all(path, model, hudi_rs=False)  # hudi-rs reads the table once the writer wrote

        beside = _batch([10, 12, 300, 301], 5)  # b's keys, new keys (300: a, 301: b)
        hudi_ds.write(path, beside, opts)
        _apply(model, beside)
        into_plan = _batch([3, 7], 6)  # a's keys, in file groups of the plan
        if left:
            with pytest.raises(CommitConflictError, match="pending clustering"):
                hudi_ds.write(path, into_plan, opts)
        _check_all(path, model)

        if left:  # the next run waits for the dead attempt's heartbeat to run out
            _wait_heartbeat_expired(path, left[0].requested_time)
        ctx = ServiceContext.open(path, opts)
        done = clustering.run_clustering(ctx) or clustering.run_clustering(
            ctx, clustering.schedule_clustering(ctx)
        )
        assert len(done) == 1, spec
        # the insert into a made a file group outside the left-over plan: clustered by a
        # new plan (run above when nothing was left over), here when one was
        if left:
            assert done[0].instant == left[0].requested_time
            (more,) = clustering.run_clustering(ctx, clustering.schedule_clustering(ctx))
            assert more.replaced == 2
        assert _live_groups(path)["a"] == 1, spec
        hudi_ds.write(path, into_plan, opts)
        _apply(model, into_plan)
        tl = TableState.open(path).reload_timeline()
        assert not [i for i in tl if not i.is_completed], spec
        _check_all(path, model)


def _grid_table(table_type: str, version: int, mdt: bool, path: str) -> Rows:
    """A 16 x 16 grid of cells ``(x, y)`` in random order, inserted in two commits (two file
    groups, each covering the whole grid), then (MOR: logs) an update of 16 cells."""
    opts = _grid_opts(table_type, version, mdt)
    cells = np.random.default_rng(3).permutation(256)
    model: Rows = {}

    def rows(ids: np.ndarray, ts: int) -> pa.Table:
        return pa.table(
            {
                "id": pa.array(ids, pa.int64()),
                "ts": pa.array([ts] * len(ids), pa.int64()),
                "x": pa.array(ids // 16, pa.int64()),
                "y": pa.array(ids % 16, pa.int64()),
                "v": pa.array(ids * 0.5 + ts, pa.float64()),
            }
        )

    for k in range(2):
        t = rows(cells[k * 128 : (k + 1) * 128], 1)
        hudi_ds.write(path, t, {**opts, "hoodie.datasource.write.operation": "insert"})
        model.update({r["id"]: tuple(r.values()) for r in t.to_pylist()})
    up = rows(cells[::16], 2)
    hudi_ds.write(path, up, opts)
    model.update({r["id"]: tuple(r.values()) for r in up.to_pylist()})
    return model


def _grid_opts(table_type: str, version: int, mdt: bool) -> dict[str, str]:
    return {
        **_opts(table_type, version, mdt),
        "hoodie.datasource.write.partitionpath.field": "",
        "hoodie.metadata.index.column.stats.enable": str(mdt).lower(),
    }


GRID = ["id", "ts", "x", "y", "v"]


def _base_bytes(path: str) -> int:
    """The size of the latest base file of each file group (the plan's input size)."""
    latest: dict[str, Path] = {}
    for f in sorted(Path(path).glob("*.parquet"), key=lambda f: f.name.rsplit("_", 1)[-1]):
        latest[f.name.split("_", 1)[0]] = f
    return sum(f.stat().st_size for f in latest.values())


@pytest.mark.parametrize(
    ("table_type", "version", "mdt", "strategy"),
    [
        ("MERGE_ON_READ", 9, True, "z-order"),
        ("MERGE_ON_READ", 6, False, "hilbert"),
        ("COPY_ON_WRITE", 9, True, "linear"),
    ],
)
def test_sorted_clustering_keeps_rows_and_column_stats(
    table_type: str, version: int, mdt: bool, strategy: str, tmp_path: Path
) -> None:
    """A sorted clustering (MOR: base files and logs merged) into 4 files: the model's rows as
    hudi_ds and hudi-rs read them (metadata table on and off); with the metadata table its
    ``files`` partition is in step and ``column_stats`` covers the new files -- a query on the
    sort columns opens fewer files than before (every file covered the grid), and the
    replaced files are never opened. The cleaner then deletes the replaced file groups."""
    path = str(tmp_path / "t")
    model = _grid_table(table_type, version, mdt, path)
    sort = {
        "hoodie.clustering.plan.strategy.sort.columns": "x,y",
        "hoodie.layout.optimize.strategy": strategy,
        "hoodie.clustering.plan.strategy.target.file.max.bytes": str(_base_bytes(path) // 4 + 1),
    }
    opts = {**_grid_opts(table_type, version, mdt), **sort}
    flt = [("x", "<=", 3), ("y", "<=", 3)]  # a corner of the grid: 16 cells
    want = sorted(i for i, r in model.items() if r[2] <= 3 and r[3] <= 3)

    def filtered() -> tuple[list[int], int]:
        t = HudiTable(path)
        out = t.read(filters=flt, columns=["id"])
        st = t.last_read_stats
        return sorted(out.column("id").to_pylist()), st.base_files + st.log_files

    ids, opened_before = filtered()
    assert ids == want
    ctx = ServiceContext.open(path, opts)
    (res,) = clustering.run_clustering(ctx, clustering.schedule_clustering(ctx))
    assert res.replaced == 2 and res.created == 4 and res.rows == len(model)
    expected = list(model.values())
    assert_rows(hudi_ds.read(path), expected, GRID)
    assert_rows(hudi_rs_table(path), expected, GRID)
    if mdt:
        assert_rows(hudi_rs_table(path, {"hoodie.metadata.enable": "true"}), expected, GRID)
        assert_in_step(Path(path))
        ids, opened_after = filtered()
        assert ids == want
        # z-order / hilbert: the corner is in one or two of the 4 curve segments; linear
        # on x first: x <= 3 is the first quarter of the order
        mor = table_type == "MERGE_ON_READ"
        assert opened_before == (4 if mor else 2)  # both base files (MOR: and their logs)
        assert 1 <= opened_after <= 2, opened_after
    # the cleaner deletes the replaced file groups (base files and logs) once the
    # replacecommit is past its retention; the metadata table follows
    replaced = {
        f
        for f in Path(path).iterdir()
        if (f.suffix == ".parquet" or ".log." in f.name) and res.instant not in f.name
    }
    assert replaced
    cleaning = {**opts, "hoodie.clean.automatic": "true", "hoodie.cleaner.commits.retained": "1"}
    for ts in (3, 4):
        up = pa.table(
            {"id": [0, 255], "ts": [ts, ts], "x": [0, 15], "y": [0, 15], "v": [0.5, 0.5]},
            schema=pa.schema([(c, pa.float64() if c == "v" else pa.int64()) for c in GRID]),
        )
        hudi_ds.write(path, up, cleaning)
        model.update({r["id"]: tuple(r.values()) for r in up.to_pylist()})
    assert not [f for f in replaced if f.exists()]
    expected = list(model.values())
    assert_rows(hudi_ds.read(path), expected, GRID)
    assert_rows(hudi_rs_table(path), expected, GRID)
    if mdt:
        assert_rows(hudi_rs_table(path, {"hoodie.metadata.enable": "true"}), expected, GRID)
        assert_in_step(Path(path))


@pytest.mark.parametrize("strategy", ["SparkRejectUpdateStrategy", "SparkAllowUpdateStrategy"])
def test_single_writer_beside_a_completing_clustering(strategy: str, tmp_path: Path) -> None:
    """The default concurrency mode (the streaming sink's): a write (its own process, stopped
    once its files are written) runs while a clustering planned before it completes. A write
    that kept out of the plan's file groups (the default update strategy refuses updates into
    them) commits; one that updated a file group of the plan (``SparkAllowUpdateStrategy``) is
    refused at its commit, naming the clustering -- its records would be in a replaced file
    group. Either way the table is the model's."""
    from tests.conftest import spawn_python, wait_stopped
    from tests.write.test_single_writer import ONE_WRITE, resume

    path = str(tmp_path / "t")
    opts = {
        **_opts("MERGE_ON_READ", 9, True),
        "hoodie.clustering.plan.strategy.partition.regex.pattern": "a",
        "hoodie.clustering.updates.strategy": strategy,
    }
    model = _build(path, opts)
    c = clustering.schedule_clustering(ServiceContext.open(path, opts))
    reject = strategy == "SparkRejectUpdateStrategy"
    # b's keys and new keys; or a's keys too (file groups of the plan)
    t = _batch([10, 12, 300, 301] if reject else [3, 7, 10], 5)
    env = {"HUDI_DS_STALL_AT": "after_files"}
    proc = spawn_python(ONE_WRITE, path, json.dumps(opts), json.dumps(t.to_pydict()), env=env)
    try:
        wait_stopped(proc)
        (res,) = clustering.run_clustering(ServiceContext.open(path, opts))
        assert res.instant == c
    finally:
        out = resume(proc)
    if reject:
        assert "instant" in out, out
        _apply(model, t)
    else:
        assert out.get("error") == "hudi_ds.errors.CommitConflictError", out
        assert f"conflicts with clustering {c}" in out["message"]
    tl = TableState.open(path).reload_timeline()
    assert not [i for i in tl if not i.is_completed]
    _check_all(path, model)


def test_allow_strategy_beside_a_background_clustering_warns(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Handing a plan to the background process with ``SparkAllowUpdateStrategy`` and a single
    writer warns (no lock orders the two commits); under optimistic concurrency control not."""
    for k, extra in enumerate([{}, OCC_OPTIONS]):
        path = str(tmp_path / f"t{k}")
        opts = {
            **_opts("MERGE_ON_READ", 6, False),
            **extra,
            "hoodie.clustering.async.enabled": "true",
            "hoodie.clustering.inline.max.commits": "2",
            "hoodie.clustering.updates.strategy": "SparkAllowUpdateStrategy",
        }
        for ids in (range(0, 6), range(6, 12)):
            t = _batch(list(ids), 1)
            hudi_ds.write(path, t, {**opts, "hoodie.clustering.async.enabled": "false"})
        handed: list[ServiceContext] = []
        caplog.clear()
        with caplog.at_level("WARNING", logger="hudi_ds.services"):
            clustering.run_inline_clustering(ServiceContext.open(path, opts), handed.append)
        assert len(handed) == 1
        warned = [r for r in caplog.records if "optimistic_concurrency_control" in r.message]
        assert len(warned) == (0 if extra else 1)
