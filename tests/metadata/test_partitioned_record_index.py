"""Hudi 1.1's partitioned record-level index (``hoodie.metadata.record.level.index.enable``):
after every action the index holds exactly the (partition, key) pairs of the table's latest file
slices, each where its slice is; file groups per data partition, named as Java names them; the
RECORD_LEVEL_INDEX lookup tags by (partition, key), so a key written to two partitions is two
records and an upsert never duplicates one.

Tables: 8 keys ``k0..k7`` in partitions ``p0`` and ``p1`` (every key in both), then upserts that
touch both partitions and add ``p2``, deletes, compaction, clean and a rollback of a killed write.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pyarrow as pa
import pytest

import hudi_ds
from hudi_ds.api import HudiTable
from hudi_ds.errors import ConfigError
from hudi_ds.index.record_level import partitioned_record_index_locations
from hudi_ds.metadata.record_index import (
    RecordLocation,
    bootstrap_partitioned,
    data_partition_of,
    file_group_indexes,
    partitioned_file_group_id,
    read_partitioned_locations,
)
from hudi_ds.services import ServiceContext, rollback
from hudi_ds.storage import Storage
from hudi_ds.timeline.timeline import Timeline
from tests.conftest import assert_rows, hudi_rs_table, table_options
from tests.metadata.rli_support import latest_slice_keys, open_mdt
from tests.metadata.test_writer import _crash, assert_in_step

COLS = ["id", "ts", "p", "v"]
KEY = ["p", "id"]
Rows = dict[tuple[str, str], tuple]


def _rows(keys: list[str], parts: list[str], ts: int) -> pa.Table:
    return pa.table(
        {
            "id": keys,
            "ts": pa.array([ts] * len(keys), pa.int64()),
            "p": parts,
            "v": [float(ts * 100 + i) for i in range(len(keys))],
        }
    )


def _apply(model: Rows, t: pa.Table, delete: bool = False) -> Rows:
    out = dict(model)
    for r in t.to_pylist():
        if delete:
            out.pop((r["p"], r["id"]), None)
        else:
            out[(r["p"], r["id"])] = (r["id"], r["ts"], r["p"], r["v"])
    return out


def _opts(table_type: str, **over: str) -> dict[str, str]:
    return {
        **table_options("prli", partition="p", table_type=table_type, buckets=None),
        "hoodie.write.table.version": "9",
        "hoodie.metadata.enable": "true",
        "hoodie.metadata.record.level.index.enable": "true",
        "hoodie.index.type": "RECORD_LEVEL_INDEX",
        "hoodie.clean.automatic": "false",
        **over,
    }


def stored(root: Path) -> dict[tuple[str, str], RecordLocation]:
    return read_partitioned_locations(*open_mdt(root))


def recomputed(root: Path) -> dict[tuple[str, str], tuple[str, str]]:
    by_part = bootstrap_partitioned(latest_slice_keys(root), "UTC")
    return {
        (p, k): (loc.partition, loc.file_id) for p, m in by_part.items() for k, loc in m.items()
    }


def assert_index_in_step(root: Path, model: Rows) -> None:
    """The stored index equals the one recomputed from the files, the model's pairs exactly,
    and every file group of the partition is named for its data partition."""
    got = stored(root)
    assert {pk: (v.partition, v.file_id) for pk, v in got.items()} == recomputed(root)
    assert sorted(got) == sorted(model)
    assert all(v.partition == p for (p, _), v in got.items())
    names = [f.name for f in (root / ".hoodie" / "metadata" / "record_index").iterdir()]
    ids = {n.lstrip(".").split("_")[0] for n in names if n.startswith((".record", "record"))}
    assert ids and all(data_partition_of(i) is not None for i in ids), ids
    assert_in_step(root)


def check_rows(root: Path, model: Rows) -> None:
    expected = list(model.values())
    assert_rows(hudi_ds.read(str(root), columns=COLS), expected, COLS, KEY)
    for mdt in ("true", "false"):
        got = hudi_rs_table(str(root), {"hoodie.metadata.enable": mdt})
        assert_rows(got, expected, COLS, KEY)


def test_file_group_names_as_java() -> None:
    """``HoodieTableMetadataUtil.getFileIDForFileGroup`` with a data partition:
    ``escapeFileName`` (``/``, ``=``, ``-``, ``_`` as %XX), 4 dashes, partition read back."""
    cases = {
        "2021/01/01": "record-index-2021%2F01%2F01-0003-0",
        "dt=2021-01-01": "record-index-dt%3D2021%2D01%2D01-0003-0",
        "a_b": "record-index-a%5Fb-0003-0",
        "": "record-index--0003-0",
    }
    for partition, fid in cases.items():
        assert partitioned_file_group_id(partition, 3) == fid
        assert data_partition_of(fid) == partition
    assert data_partition_of("record-index-0003-0") is None


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_upserts_deletes_compaction_clean(table_type: str, tmp_path: Path) -> None:
    root = tmp_path / "t"
    opts = _opts(
        table_type,
        **{
            "hoodie.compact.inline": "true",
            "hoodie.compact.inline.max.delta.commits": "2",
            "hoodie.clean.automatic": "true",
            "hoodie.cleaner.commits.retained": "1",
            "hoodie.metadata.compact.max.delta.commits": "3",
            # three file groups per partition: keys hashed among them (the alias of
            # hoodie.metadata.record.level.index.min.filegroup.count)
            "hoodie.metadata.partitioned.record.index.min.filegroup.count": "3",
        },
    )
    keys = [f"k{i}" for i in range(8)]
    first = _rows(keys + keys, ["p0"] * 8 + ["p1"] * 8, 1)
    hudi_ds.write(str(root), first, opts)
    model = _apply({}, first)
    assert_index_in_step(root, model)
    defs = json.loads((root / ".hoodie" / ".index_defs" / "index.json").read_text())
    assert defs["indexDefinitions"]["record_index"]["indexOptions"] == {"isPartitioned": "true"}
    for ts in range(2, 6):  # updates in both partitions, a new partition p2
        t = _rows(["k1", "k2", f"n{ts}", "k1"], ["p0", "p1", "p2", "p2"], ts)
        hudi_ds.write(str(root), t, opts)
        model = _apply(model, t)
        assert_index_in_step(root, model)
    gone = _rows(["k1", "k3"], ["p0", "p1"], 9)
    HudiTable(str(root), opts).delete(gone)
    model = _apply(model, gone, delete=True)
    assert_index_in_step(root, model)
    tl = Timeline.load(Storage(str(root)), 2)
    assert tl.completed().filter_actions("clean")
    mdt_tl = Timeline.load(Storage(str(root / ".hoodie" / "metadata")), 2)
    assert mdt_tl.completed().filter_actions("commit"), "the MDT was never compacted"
    if table_type == "MERGE_ON_READ":
        assert tl.completed().filter_actions("commit"), "no data compaction"
    ids = {
        n.name.lstrip(".").split("_")[0]
        for n in (root / ".hoodie" / "metadata" / "record_index").iterdir()
        if "record-index" in n.name
    }
    assert ids == {partitioned_file_group_id(p, i) for p in ("p0", "p1", "p2") for i in range(3)}
    # the keys of p0 do fall in several of its file groups
    assert len(set(file_group_indexes(pa.array(keys), 3).tolist())) > 1
    check_rows(root, model)


@pytest.mark.parametrize("spec", ["metadata:1", "metadata:2", "commit_write"])
def test_killed_write_rolled_back_in_step(spec: str, tmp_path: Path) -> None:
    """A write into a partition new to the index killed before, inside and after its MDT
    deltacommit: the next write rolls it back (with the file groups it created) and the index
    agrees with the files again."""
    root = tmp_path / "t"
    opts = _opts("MERGE_ON_READ")
    keys = [f"k{i}" for i in range(8)]
    first = _rows(keys + keys, ["p0"] * 8 + ["p1"] * 8, 1)
    hudi_ds.write(str(root), first, opts)
    model = _apply({}, first)
    killed = _rows(["k0", "x9"], ["p1", "p3"], 2)
    assert _crash(spec, lambda: hudi_ds.write(str(root), killed, opts)) == 137
    t = _rows(["k0", "k5", "x8"], ["p0", "p4", "p3"], 3)  # p3 new to the index again
    hudi_ds.write(str(root), t, opts)
    model = _apply(model, t)
    assert_index_in_step(root, model)
    p3 = {p.name for p in (root / ".hoodie" / "metadata" / "record_index").glob("*p3*")}
    assert len(p3) == 1 and partitioned_file_group_id("p3", 0) in next(iter(p3)), p3
    check_rows(root, model)


def test_table_without_a_completed_commit_counts_as_new(tmp_path: Path) -> None:
    """A table whose first write was killed (``hoodie.properties``, no completed commit, no
    metadata table) has no key to look up: the next write may use the index it asks for, and
    its commit creates the metadata table with it (a streaming sink's first micro-batch opens
    the table it created again to commit: tests/spark/test_index_partitions.py)."""
    root = tmp_path / "t"
    opts = _opts("MERGE_ON_READ")
    killed = _rows(["k0", "k1"], ["p0", "p1"], 1)
    assert _crash("after_files", lambda: hudi_ds.write(str(root), killed, opts)) == 137
    assert (root / ".hoodie" / "hoodie.properties").is_file()
    assert not (root / ".hoodie" / "metadata").exists()
    t = _rows(["k0", "k2"], ["p0", "p0"], 2)
    hudi_ds.write(str(root), t, opts)
    model = _apply({}, t)
    assert_index_in_step(root, model)
    check_rows(root, model)
    # with a completed commit and no record index, the table is refused as before
    off = {**opts, "hoodie.metadata.record.level.index.enable": "false"}
    plain = tmp_path / "plain"
    hudi_ds.write(str(plain), t, {**off, "hoodie.index.type": "SIMPLE"})
    with pytest.raises(ConfigError, match="has no partitioned record index"):
        hudi_ds.write(str(plain), t, opts)


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_rollback_of_a_completed_write(table_type: str, tmp_path: Path) -> None:
    """The last write (into a partition new to the index) rolled back: its file groups leave
    the index with it; the partition written again gets new ones."""
    root = tmp_path / "t"
    opts = _opts(table_type, **{"hoodie.datasource.compaction.async.enable": "false"})
    first = _rows(["a", "b", "a"], ["p0", "p0", "p1"], 1)
    hudi_ds.write(str(root), first, opts)
    model = _apply({}, first)
    last = hudi_ds.write(str(root), _rows(["a", "c"], ["p0", "p2"], 2), opts)
    rollback.rollback(ServiceContext.open(str(root), opts), last)
    assert_index_in_step(root, model)
    assert not list((root / ".hoodie" / "metadata" / "record_index").glob("*p2*"))
    check_rows(root, model)
    again = _rows(["c", "a"], ["p2", "p1"], 3)
    hudi_ds.write(str(root), again, opts)
    model = _apply(model, again)
    assert_index_in_step(root, model)
    check_rows(root, model)


def test_upsert_through_the_index_never_duplicates(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The same keys upserted again and again in both partitions: one row per pair, tagged
    through the index (no fallback to reading the files)."""
    root = tmp_path / "t"
    opts = _opts("COPY_ON_WRITE")
    model: Rows = {}
    caplog.set_level(logging.INFO, "hudi_ds.write")
    for ts in range(1, 4):
        caplog.clear()  # (the first write, of a new table, has no index to look up)
        t = _rows(["a", "b", "a"], ["p0", "p0", "p1"], ts)
        hudi_ds.write(str(root), t, opts)
        model = _apply(model, t)
    assert "looking keys up in the files" not in caplog.text
    assert "looking them up in the table's files" not in caplog.text
    found = partitioned_record_index_locations(Storage(str(root)), {"p1": ["a", "b"]})
    assert found is not None and list(found) == [("p1", "a")]
    rows = hudi_ds.read(str(root), columns=COLS)
    assert rows.num_rows == 3
    assert_rows(rows, list(model.values()), COLS, KEY)
    assert_index_in_step(root, model)


def test_kind_mismatch_refused_before_writing(tmp_path: Path) -> None:
    root = tmp_path / "t"
    opts = _opts("COPY_ON_WRITE")
    hudi_ds.write(str(root), _rows(["a"], ["p0"], 1), opts)
    before = sorted(p.relative_to(root).as_posix() for p in root.rglob("*"))
    glob = {
        **opts,
        "hoodie.metadata.record.level.index.enable": "false",
        "hoodie.metadata.record.index.enable": "true",
        "hoodie.index.type": "SIMPLE",
    }
    with pytest.raises(ConfigError, match="has a partitioned record index"):
        hudi_ds.write(str(root), _rows(["b"], ["p0"], 2), glob)
    both = {**opts, "hoodie.metadata.record.index.enable": "true"}
    with pytest.raises(ConfigError, match="both true"):
        hudi_ds.write(str(root), _rows(["b"], ["p0"], 2), both)
    assert sorted(p.relative_to(root).as_posix() for p in root.rglob("*")) == before
    v6 = {**_opts("COPY_ON_WRITE"), "hoodie.write.table.version": "6"}
    with pytest.raises(ConfigError, match="table versions 8 and 9"):
        hudi_ds.write(str(tmp_path / "v6"), _rows(["a"], ["p0"], 1), v6)
    assert not (tmp_path / "v6").exists()


def test_build_adds_it_to_an_existing_table(tmp_path: Path) -> None:
    """``hudi-py metadata --build record_index`` with the partitioned option: the indexing
    action builds it from the files (file groups sized per partition, the definition written);
    later writes keep it and look keys up in it."""
    from tests.test_cli import run

    root = tmp_path / "t"
    plain = {
        **_opts("MERGE_ON_READ"),
        "hoodie.metadata.record.level.index.enable": "false",
        "hoodie.index.type": "SIMPLE",
    }
    keys = [f"k{i}" for i in range(6)]
    first = _rows(keys + keys[:3], ["p0"] * 6 + ["p1"] * 3, 1)
    hudi_ds.write(str(root), first, plain)
    model = _apply({}, first)
    assert not (root / ".hoodie" / "metadata" / "record_index").exists()
    opt = ("-o", "hoodie.metadata.record.level.index.enable=true")
    code, _, err = run("metadata", str(root), "--build", "record_index", *opt, "--json")
    assert code == 0, err
    assert_index_in_step(root, model)
    defs = json.loads((root / ".hoodie" / ".index_defs" / "index.json").read_text())
    assert defs["indexDefinitions"]["record_index"]["indexOptions"] == {"isPartitioned": "true"}
    t = _rows(["k0", "k4"], ["p1", "p1"], 2)
    hudi_ds.write(str(root), t, _opts("MERGE_ON_READ"))
    model = _apply(model, t)
    assert_index_in_step(root, model)
    # a write naming neither the index nor its type keeps it; a rebuild keeps its kind
    unnamed = {k: v for k, v in plain.items() if "record.level" not in k}
    t = _rows(["k5", "z1"], ["p0", "p3"], 3)
    hudi_ds.write(str(root), t, unnamed)
    model = _apply(model, t)
    assert_index_in_step(root, model)
    code, _, err = run("metadata", str(root), "--rebuild", "--json")
    assert code == 0, err
    assert_index_in_step(root, model)
    check_rows(root, model)
