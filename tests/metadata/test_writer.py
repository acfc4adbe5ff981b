"""The metadata table's writer: after every action the MDT ``files`` listing equals the committed
files on storage (decoded here independently: HFiles, log blocks, Hudi's merge rule)."""

from __future__ import annotations

import logging
import os
import shutil
import traceback
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import hudi_ds
from hudi_ds import faults
from hudi_ds.api import HudiTable
from hudi_ds.errors import TimelineError
from hudi_ds.faults import ENV
from hudi_ds.layout.hfile import read_hfile
from hudi_ds.layout.naming import parse_base_file_name, parse_log_file_name
from hudi_ds.log.block import BlockType
from hudi_ds.log.reader import scan_log_bytes
from hudi_ds.metadata.layout import bootstrap_instant
from hudi_ds.metadata.records import (
    ALL_PARTITIONS,
    FileEntry,
    decode_files_value,
    merge_files,
    partition_path_of_id,
)
from hudi_ds.metadata.writer import METADATA_PARTITIONS_KEY
from hudi_ds.services import ServiceContext, compaction, rollback
from hudi_ds.storage import Storage
from hudi_ds.table_config import TableConfig, parse_properties
from hudi_ds.timeline.instant import COMMIT, DELTA_COMMIT, REPLACE_COMMIT
from hudi_ds.timeline.timeline import Timeline
from tests import builders
from tests.builders import apply
from tests.conftest import assert_rows, hudi_rs_table, table_options

COLS = ["id", "ts", "p", "v"]
Rows = dict[str, tuple]


# -- the two listings ------------------------------------------------------------------------------


def committed_files(root: Path) -> dict[str, dict[str, int]]:
    """Data files on storage whose instant is completed (v6 logs: their slice's base instant;
    a slice under a pending compaction counts), partition -> name -> size."""
    storage = Storage(str(root))
    cfg = TableConfig.load(storage)
    tl = Timeline.load(storage, cfg.timeline_layout_version, cfg.timeline_path)
    done = {
        i.requested_time
        for i in tl.completed().filter_actions(COMMIT, DELTA_COMMIT, REPLACE_COMMIT)
    }
    pending_compactions = {i.requested_time for i in tl.pending_compactions()}
    # an indexing instant is never archived (Java's archival leaves it too): not a start
    first = min((i.requested_time for i in tl if i.action != "indexing"), default=None)
    out: dict[str, dict[str, int]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        rel = os.path.relpath(dirpath, root)
        if rel.split(os.sep)[0] == ".hoodie":
            dirnames[:] = []
            continue
        partition = "" if rel == "." else rel.replace(os.sep, "/")
        for name in filenames:
            b = parse_base_file_name(name)
            lg = parse_log_file_name(name)
            if b is not None:
                t = b.instant_time
            elif lg is not None:
                t = lg.instant_time
            else:
                continue
            archived = first is not None and t < first
            layout1_pending = (
                lg is not None and cfg.timeline_layout_version == 1 and t in pending_compactions
            )
            if t in done or archived or layout1_pending:
                out.setdefault(partition, {})[name] = os.path.getsize(os.path.join(dirpath, name))
    return out


def mdt_files(root: Path) -> dict[str, dict[str, int]]:
    """The MDT ``files`` partition merged: latest base HFile, then the HFILE_DATA blocks of its
    slice from completed MDT deltacommits whose data instant is not pending (Java's valid
    instants: a killed write's mirror does not count until its rollback), Hudi's merge rule;
    live entries only."""
    data = Storage(str(root))
    data_cfg = TableConfig.load(data)
    data_tl = Timeline.load(data, data_cfg.timeline_layout_version, data_cfg.timeline_path)
    pending = {i.requested_time for i in data_tl.pending()}
    mdt = Storage(str(root / ".hoodie" / "metadata"))
    cfg = TableConfig.load(mdt)
    tl = Timeline.load(mdt, cfg.timeline_layout_version, cfg.timeline_path)
    done = tl.completed()
    deltas = {i.requested_time: i for i in done.filter_actions(DELTA_COMMIT)}
    names = sorted(p.name for p in (root / ".hoodie" / "metadata" / "files").iterdir())
    bases = {}
    for n in names:
        b = parse_base_file_name(n)
        if b is not None and (
            b.instant_time in deltas or done.filter_actions(COMMIT).contains(b.instant_time)
        ):
            inst = tl.get(b.instant_time)
            assert inst is not None
            bases[(inst.completion_time or inst.requested_time, b.instant_time)] = n
    (_, base_ts), base_name = max(bases.items())
    logs = []
    for n in names:
        lg = parse_log_file_name(n)
        if lg is None:
            continue
        if cfg.timeline_layout_version == 1:
            if lg.instant_time == base_ts:
                logs.append(((lg.version, ""), n))
        elif lg.instant_time in deltas:
            # Java's HoodieFileGroup: the newest base instant <= the log's completion time
            when = deltas[lg.instant_time].completion_time or ""
            if lg.instant_time == base_ts or when >= base_ts:
                logs.append(((0, when), n))
    files_dir = root / ".hoodie" / "metadata" / "files"
    hf = read_hfile((files_dir / base_name).read_bytes())
    schema = hf.file_info["schema"].decode()
    merged: dict[str, dict[str, FileEntry]] = {}
    for k, v in zip(hf.keys, hf.values, strict=True):
        merged[k.decode()] = decode_files_value(v, schema)[1]
    for _, n in sorted(logs):
        for block in scan_log_bytes((files_dir / n).read_bytes()).blocks:
            if block.block_type != BlockType.HFILE_DATA or block.instant_time not in deltas:
                continue
            if block.instant_time in pending:
                continue
            assert block.schema is not None
            bh = read_hfile(block.content)
            for k, v in zip(bh.keys, bh.values, strict=True):
                key = k.decode()
                merged[key] = merge_files(
                    merged.get(key, {}), decode_files_value(v, block.schema)[1]
                )
    partitions = [p for p, (_, d) in merged.get(ALL_PARTITIONS, {}).items() if not d]
    out: dict[str, dict[str, int]] = {}
    for key in partitions:
        live = {n: s for n, (s, d) in merged.get(key, {}).items() if not d}
        if live:
            out[partition_path_of_id(key)] = live
    return out


def assert_in_step(root: Path) -> None:
    assert mdt_files(root) == committed_files(root)


# -- writes ------------------------------------------------------------------------------------


batch = partial(builders.batch, keys=30, n=12, partitions=3)


def check_rows(root: Path, model: Rows) -> None:
    """Full rows read back by hudi_ds and by hudi-rs (which lists storage on version 6)."""
    expected = list(model.values())
    assert_rows(hudi_ds.read(str(root), columns=COLS), expected, COLS)
    assert_rows(hudi_rs_table(str(root), {"hoodie.metadata.enable": "true"}), expected, COLS)


def options(
    table_type: str, version: int = 6, bucket: bool | None = None, **over: str
) -> dict[str, str]:
    """Write options of the test table. Version 8/9 MOR tables use the SIMPLE index by default
    (their bucket-index writes: test_bucket_mor_new_buckets_start_with_base_files)."""
    if bucket is None:
        bucket = not (version >= 8 and table_type == "MERGE_ON_READ")
    out = {
        **table_options("mdt", partition="p", table_type=table_type, buckets=2 if bucket else None),
        "hoodie.metadata.enable": "true",
        "hoodie.clean.automatic": "false",
        "hoodie.write.table.version": str(version),
        **over,
    }
    if not bucket:
        out["hoodie.index.type"] = "SIMPLE"
    return out


def new_table_partitions(version: int) -> str:
    """The MDT partitions a new partitioned table declares: files, and on versions 8 and 9
    column and partition stats (Hudi 1.x's default)."""
    return "files" if version == 6 else "column_stats,files,partition_stats"


def layout_of(version: int) -> int:
    return 1 if version == 6 else 2


@pytest.mark.parametrize("version", [6, 8, 9])
@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_create_upsert_delete(table_type: str, version: int, tmp_path: Path) -> None:
    root = tmp_path / "t"
    opts = options(table_type, version)
    model: Rows = {}
    for k in range(1, 4):
        t = batch(k)
        hudi_ds.write(str(root), t, opts)
        model = apply(model, t)
        assert_in_step(root)
    gone = ["k1", "k8"]
    HudiTable(str(root), opts).delete(
        pa.table(
            {"id": gone, "ts": pa.array([9, 9], pa.int64()), "p": ["p1", "p2"], "v": [0.0, 0.0]}
        )
    )
    for key in gone:
        model.pop(key, None)
    assert_in_step(root)
    check_rows(root, model)
    # the MDT as Java lays it out (reference 1.2, 1.4, 1.5, 6.2)
    data = TableConfig.load(Storage(str(root)))
    assert data.get(METADATA_PARTITIONS_KEY) == new_table_partitions(version)
    mdt = root / ".hoodie" / "metadata"
    props = parse_properties((mdt / ".hoodie" / "hoodie.properties").read_text())
    assert props["hoodie.table.name"] == "mdt_metadata"
    assert props["hoodie.table.type"] == "MERGE_ON_READ"
    assert props["hoodie.table.version"] == str(version)
    assert props["hoodie.table.base.file.format"] == "HFILE"
    if version == 6:
        assert props["hoodie.table.keygenerator.class"].endswith("HoodieTableMetadataKeyGenerator")
        assert props["hoodie.timeline.layout.version"] == "1"
    else:
        assert props["hoodie.table.keygenerator.type"] == "HOODIE_TABLE_METADATA"
        assert props["hoodie.timeline.layout.version"] == "2"
        assert props["hoodie.record.merge.mode"] == "CUSTOM"
        assert (mdt / ".hoodie" / "timeline" / "history").is_dir()
    assert TableConfig(props).validate_checksum()
    boot = bootstrap_instant(version)
    names = {p.name for p in (mdt / "files").iterdir()}
    assert f"files-0000-0_0-0-0_{boot}.hfile" in names
    assert (mdt / "files" / f".files-0000-0_{boot}.log.1_0-0-0").stat().st_size == 80
    assert f"commitTime={boot}" in (mdt / "files" / ".hoodie_partition_metadata").read_text()
    layout = layout_of(version)
    data_tl = Timeline.load(Storage(str(root)), layout)
    mdt_tl = Timeline.load(Storage(str(mdt)), layout)
    mirrored = {i.requested_time for i in mdt_tl.completed().filter_actions(DELTA_COMMIT)}
    assert {i.requested_time for i in data_tl.completed()} <= mirrored
    assert len({p for p in names if ".log." in p}) == 1 + len(data_tl.completed())
    if version >= 8:  # one log file per deltacommit, named with it
        for i in data_tl.completed():
            assert f".files-0000-0_{i.requested_time}.log.1_0-0-0" in names


def file_groups_on_storage(root: Path) -> dict[tuple[str, str], list[str]]:
    """(partition, file id) -> the names of its data files, from a storage walk."""
    out: dict[tuple[str, str], list[str]] = {}
    for dirpath, _, filenames in os.walk(root):
        rel = os.path.relpath(dirpath, root)
        if rel.startswith(".hoodie"):
            continue
        for name in filenames:
            parsed = parse_base_file_name(name) or parse_log_file_name(name)
            if parsed is not None:
                part = "" if rel == "." else rel
                out.setdefault((part, parsed.file_id), []).append(name)
    return out


def check_rows_everywhere(root: Path, model: Rows) -> None:
    """Full rows read back by hudi_ds and by hudi-rs with the MDT on and off."""
    expected = list(model.values())
    assert_rows(hudi_ds.read(str(root), columns=COLS), expected, COLS)
    assert_rows(hudi_ds.read(str(root), {"hoodie.metadata.enable": "false"}), expected, COLS)
    for enable in ("true", "false"):
        assert_rows(hudi_rs_table(str(root), {"hoodie.metadata.enable": enable}), expected, COLS)


@pytest.mark.parametrize("version", [8, 9])
def test_bucket_mor_new_buckets_start_with_base_files(version: int, tmp_path: Path) -> None:
    """Version 8+ MOR bucket tables with an MDT: a new bucket's first write is a base file (hudi-rs
    builds file groups from the MDT listing out of base files only), later writes append logs;
    inserts into new buckets and partitions, updates and deletes read back everywhere, also a
    write whose tasks are not exclusive (Spark's: their rows meet in one staged base file)."""
    from hudi_ds.write.client import WriteClient

    root = tmp_path / "t"
    opts = options("MERGE_ON_READ", version, bucket=True)
    model: Rows = {}
    for k in range(1, 4):
        t = batch(k)
        hudi_ds.write(str(root), t, opts)
        model = apply(model, t)
        assert_in_step(root)
    groups = file_groups_on_storage(root)
    assert {p for p, _ in groups} == {"p0", "p1", "p2"}
    for names in groups.values():
        assert sum(n.endswith(".parquet") for n in names) == 1, names
        assert any(".log." in n for n in names), names  # the later writes appended logs
    # a new partition (new buckets) written by two non-exclusive tasks sharing its keys
    client = WriteClient(str(root), opts)
    new = pa.table(
        {
            "id": ["n1", "n2", "n3", "k2"],
            "ts": pa.array([5, 5, 5, 5], pa.int64()),
            "p": ["p9", "p9", "p9", "p2"],
            "v": [1.0, 2.0, 3.0, 4.0],
        }
    )
    again = pa.table({"id": ["n1"], "ts": pa.array([6], pa.int64()), "p": ["p9"], "v": [9.0]})
    instant = client.start(new.schema)
    statuses = []
    for task, rows in enumerate((new, again)):
        tw = client.task_writer(instant, task, exclusive=False)
        tw.write(rows)
        statuses += tw.close()
    client.commit(instant, statuses)
    model = apply(apply(model, new), again)
    assert_in_step(root)
    new_groups = {g: n for g, n in file_groups_on_storage(root).items() if g[0] == "p9"}
    assert new_groups and all(
        len(n) == 1 and n[0].endswith(f"_{instant}.parquet") for n in new_groups.values()
    ), new_groups
    gone = ["k1", "n2"]
    HudiTable(str(root), opts).delete(
        pa.table(
            {"id": gone, "ts": pa.array([9, 9], pa.int64()), "p": ["p1", "p9"], "v": [0.0, 0.0]}
        )
    )
    for key in gone:
        model.pop(key, None)
    assert_in_step(root)
    check_rows_everywhere(root, model)


@pytest.mark.parametrize("version", [6, 9])
def test_compaction_clean_and_mdt_compaction(version: int, tmp_path: Path) -> None:
    """Inline data compaction and cleaning through the writer's state, MDT compaction every 3
    deltacommits and MDT cleaning after it: in step after each commit."""
    root = tmp_path / "t"
    opts = options(
        "MERGE_ON_READ",
        version,
        **{
            "hoodie.compact.inline": "true",
            "hoodie.compact.inline.max.delta.commits": "2",
            "hoodie.clean.automatic": "true",
            "hoodie.cleaner.commits.retained": "1",
            "hoodie.metadata.compact.max.delta.commits": "3",
        },
    )
    model: Rows = {}
    for k in range(1, 9):
        t = batch(k)
        hudi_ds.write(str(root), t, opts)
        model = apply(model, t)
        assert_in_step(root)
    tl = Timeline.load(Storage(str(root)), layout_of(version))
    assert tl.completed().filter_actions("clean")
    assert tl.completed().filter_actions(COMMIT)  # data compactions
    mdt_tl = Timeline.load(Storage(str(root / ".hoodie" / "metadata")), layout_of(version))
    compactions = [i.requested_time for i in mdt_tl.completed().filter_actions(COMMIT)]
    assert compactions, "the MDT was never compacted"
    for c in compactions:
        if version == 6:  # Java 0.x: <latest deltacommit>001
            assert len(c) == 20 and c.endswith("001") and mdt_tl.contains(c[:-3])
        else:  # Java 1.x: a new instant time
            assert len(c) == 17 and not tl.contains(c)
    # the MDT is cleaned after its compactions: the two latest slices stay
    assert len(compactions) >= 2
    names = sorted(p.name for p in (root / ".hoodie" / "metadata" / "files").iterdir())
    assert len([n for n in names if n.endswith(".hfile")]) == 2, names
    assert f"files-0000-0_0-0-0_{bootstrap_instant(version)}.hfile" not in names
    cleans = [i.requested_time for i in mdt_tl.completed().filter_actions("clean")]
    assert cleans
    if version == 6:  # Java 0.x: <deltacommit>002
        assert all(c.endswith("002") and c[:-3] + "001" in compactions for c in cleans)
    check_rows(root, model)


def _crash(spec: str, fn: Callable[[], Any]) -> int:
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        code = 0
        try:
            os.environ[ENV] = spec
            faults._hits.clear()
            fn()
        except BaseException:
            traceback.print_exc()
            code = 1
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


@pytest.mark.parametrize(
    "spec",
    ["after_files", "metadata:1", "metadata:2", "metadata:3", "commit_write"],
)
@pytest.mark.parametrize("version", [6, 9])
@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_failed_write_rolled_back_in_step(
    spec: str, version: int, table_type: str, tmp_path: Path
) -> None:
    """A write killed before, inside and after its MDT deltacommit: the next write rolls it back
    and the MDT agrees with storage again (the rollback's deltacommit tombstones its files)."""
    root = tmp_path / "t"
    opts = options(table_type, version)
    model: Rows = {}
    for k in (1, 2):
        t = batch(k)
        hudi_ds.write(str(root), t, opts)
        model = apply(model, t)
    assert _crash(spec, lambda: hudi_ds.write(str(root), batch(3), opts)) == 137
    t = batch(4)
    hudi_ds.write(str(root), t, opts)
    model = apply(model, t)
    assert_in_step(root)
    check_rows(root, model)
    mdt_tl = Timeline.load(Storage(str(root / ".hoodie" / "metadata")), layout_of(version))
    assert not mdt_tl.pending()
    data_tl = Timeline.load(Storage(str(root)), layout_of(version))
    rollbacks = list(data_tl.completed().filter_actions("rollback"))
    assert len(rollbacks) == 1
    mirror = mdt_tl.get(rollbacks[0].requested_time)
    assert mirror is not None and mirror.is_completed
    killed = data_tl.read_rollback_metadata(rollbacks[0]).rolled_back_instants
    if version >= 8:  # Hudi 1.x: MDT rollback R undoes the killed instant's deltacommit
        assert mirror.action == "rollback"
        assert killed and all(mdt_tl.get(t) is None for t in killed)
    else:  # Hudi 0.x: deltacommit R with tombstones
        assert mirror.action == DELTA_COMMIT


def test_crash_while_creating_the_mdt(tmp_path: Path) -> None:
    """Killed after the MDT was built but before hoodie.properties declares it: the next write
    builds it again from the committed files."""
    root = tmp_path / "t"
    plain = options("MERGE_ON_READ", **{"hoodie.metadata.enable": "false"})
    hudi_ds.write(str(root), batch(1), plain)
    opts = options("MERGE_ON_READ")
    assert _crash("metadata:1", lambda: hudi_ds.write(str(root), batch(2), opts)) == 137
    assert TableConfig.load(Storage(str(root))).get(METADATA_PARTITIONS_KEY) is None
    model = apply(apply({}, batch(1)), batch(3))
    hudi_ds.write(
        str(root), batch(3), {k: v for k, v in opts.items() if k != "hoodie.metadata.enable"}
    )
    assert_in_step(root)
    check_rows(root, model)


@pytest.mark.parametrize("version", [6, 8])
def test_enable_false_deletes_and_true_rebuilds(version: int, tmp_path: Path) -> None:
    root = tmp_path / "t"
    model: Rows = {}
    for k, enable in ((1, "true"), (2, None), (3, "false"), (4, None), (5, "true")):
        opts = options("MERGE_ON_READ", version)
        if enable is None:
            opts.pop("hoodie.metadata.enable")
        else:
            opts["hoodie.metadata.enable"] = enable
        t = batch(k)
        hudi_ds.write(str(root), t, opts)
        model = apply(model, t)
        has = (root / ".hoodie" / "metadata").exists()
        declared = TableConfig.load(Storage(str(root))).get(METADATA_PARTITIONS_KEY)
        assert has == (k in (1, 2, 5)) and (declared == new_table_partitions(version)) == has, k
        if has:
            assert_in_step(root)
    check_rows(root, model)


@pytest.mark.parametrize("version", [6, 9])
def test_savepoint_restore_and_rollback_of_completed(version: int, tmp_path: Path) -> None:
    root = tmp_path / "t"
    # the rollback of the last delta commit: no compaction after it (a completed compaction
    # would have to be rolled back first), so the writers' default compaction is off
    opts = options(
        "MERGE_ON_READ", version, **{"hoodie.datasource.compaction.async.enable": "false"}
    )
    model: Rows = {}
    snaps = {}
    for k in range(1, 4):
        t = batch(k)
        inst = hudi_ds.write(str(root), t, opts)
        model = apply(model, t)
        snaps[inst] = model
    first = next(iter(snaps))
    rollback.create_savepoint(ServiceContext.open(str(root), opts), first)
    for k in range(4, 6):
        t = batch(k)
        inst = hudi_ds.write(str(root), t, opts)
        model = apply(model, t)
        snaps[inst] = model
    last = list(snaps)[-1]
    rollback.rollback(ServiceContext.open(str(root), opts), last)
    assert_in_step(root)
    check_rows(root, snaps[list(snaps)[-2]])
    rollback.restore(ServiceContext.open(str(root), opts), first)
    assert_in_step(root)
    check_rows(root, snaps[first])
    t = batch(9)
    hudi_ds.write(str(root), t, opts)
    assert_in_step(root)
    check_rows(root, apply(snaps[first], t))


@pytest.mark.parametrize("version", [6, 9])
def test_standalone_compaction_in_step(version: int, tmp_path: Path) -> None:
    """Bucket index: the updates go to log files, and the compaction gives every file group a
    base file (hudi-rs reads v9 file groups through the MDT only with one)."""
    root = tmp_path / "t"
    opts = options("MERGE_ON_READ", version, bucket=True)
    model: Rows = {}
    for k in range(1, 4):
        t = batch(k)
        hudi_ds.write(str(root), t, opts)
        model = apply(model, t)
    ctx = ServiceContext.open(str(root), opts)
    assert compaction.schedule_compaction(ctx) is not None
    compaction.run_compaction(ctx)
    assert_in_step(root)
    check_rows(root, model)


def test_fixture_mdt_appended_by_a_rollback(tmp_path: Path) -> None:
    """Java 0.14's MDT (HBase-generation HFiles, v6 log versions) takes our deltacommit: the
    rollback of the fixture's last commit (its keys are generated by Hudi, so hudi_ds does
    not upsert it) tombstones the commit's files in log version 4."""
    from tests.write.test_fixture_writes import unzip

    root = unzip("cow_0x_partitioned", tmp_path / "t")
    assert_in_step(root)
    tl = Timeline.load(Storage(str(root)), 1)
    last = tl.completed().filter_actions(COMMIT)[-1].requested_time
    before = committed_files(root)
    rollback.rollback(ServiceContext.open(str(root)), last)
    assert committed_files(root) != before
    assert_in_step(root)
    names = sorted(p.name for p in (root / ".hoodie" / "metadata" / "files").iterdir())
    assert ".files-0000-0_00000000000000010.log.4_0-0-0" in names
    rb = Timeline.load(Storage(str(root)), 1).completed().filter_actions("rollback")[-1]
    mdt_tl = Timeline.load(Storage(str(root / ".hoodie" / "metadata")), 1)
    assert mdt_tl.is_completed(rb.requested_time)


def test_unmaintained_partitions_dropped(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    root = tmp_path / "t"
    opts = options("COPY_ON_WRITE")
    hudi_ds.write(str(root), batch(1), opts)
    extra = root / ".hoodie" / "metadata" / "column_stats"
    extra.mkdir()
    (extra / "x").write_bytes(b"stale")
    props = root / ".hoodie" / "hoodie.properties"
    text = props.read_text().replace(
        "hoodie.table.metadata.partitions=files",
        "hoodie.table.metadata.partitions=column_stats,files,record_index",
    )
    shutil.copy(props, props.with_suffix(".orig"))
    cfg = TableConfig(parse_properties(text))
    cfg.save(Storage(str(root)))
    with caplog.at_level(logging.WARNING, logger="hudi_ds.metadata"):
        hudi_ds.write(str(root), batch(2), opts)
    assert "column_stats, record_index" in caplog.text
    assert not extra.exists()
    assert TableConfig.load(Storage(str(root))).get(METADATA_PARTITIONS_KEY) == "files"
    assert_in_step(root)


#: Hudi 1.x fixtures with a metadata table that hudi_ds writes (the Lance ones are
#: tests/write/test_lance_writes.py's)
MDT_FIXTURES_1X = [
    "cow_v9_timebasedkeygen_nonhivestyle",
    "cow_v9_txns_complex_meta",
    "cow_v9_txns_nonpart_meta",
    "cow_v9_txns_simple_meta",
    "cow_v9_txns_simple_overwrite",
    "mor_avro_v8_trips_8i3u1d",
    "mor_avro_v9_nonpartitioned_rollback",
    "mor_avro_v9_timebasedkeygen_nonhivestyle",
    "mor_avro_v9_txns_complex_meta",
    "mor_avro_v9_txns_nonpart_meta",
    "mor_avro_v9_txns_simple_meta",
    "mor_avro_v9_txns_simple_overwrite",
]


@pytest.mark.parametrize("name", MDT_FIXTURES_1X)
def test_1x_fixture_with_mdt_upsert_and_delete(
    name: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A Hudi 1.0/1.1 table with an MDT (files plus column_stats, partition_stats, record
    index, secondary indexes): the first write drops the indexes hudi_ds does not maintain
    (warning naming them), appends to Java's files partition with the MDT's own schema, keeps
    column_stats, partition_stats, the record index and the secondary indexes equal to the
    records recomputed from the table's files, and hudi-rs -- which lists v8+ tables through the MDT -- reads the written rows."""
    from tests.metadata.test_column_stats import assert_stats_in_step
    from tests.write.fixture_model import data_row_set
    from tests.write.test_fixture_writes import unzip

    root = unzip(name, tmp_path / "t")
    assert_in_step(root)
    declared = TableConfig.load(Storage(str(root))).get(METADATA_PARTITIONS_KEY) or ""
    # the record index is kept in step (tests/metadata/test_record_index.py), but on tables
    # whose base files hudi_ds reads the keys of only through pylance
    rli = "record_index" in declared.split(",") and "lance" not in name
    maintained = ["files", "record_index"] if rli else ["files"]
    # secondary indexes too (tests/metadata/test_secondary_index.py)
    maintained += [p for p in declared.split(",") if p.startswith("secondary_index_")]
    others = sorted(p for p in declared.split(",") if p and p not in maintained)
    rows = hudi_ds.read(str(root), options={"hoodie.metadata.enable": "false"})
    # upserted as they are: rows of keys the table holds once (an upsert reaches every copy of
    # a key held twice, tests/write/test_duplicate_keys.py, which would change the kept rows);
    # the delete removes every copy of its key
    keys = rows["_hoodie_record_key"].to_pylist()
    once = [i for i, k in enumerate(keys) if keys.count(k) == 1][:2]
    victim = next(i for i in range(rows.num_rows) if i not in once)
    rows = rows.take(
        [*once, victim, *(i for i in range(rows.num_rows) if i not in (*once, victim))]
    )
    data = rows.drop_columns([c for c in rows.column_names if c.startswith("_hoodie_")])
    kept = pc.invert(pc.equal(rows["_hoodie_record_key"], keys[victim]))
    expected = data_row_set(rows.filter(kept))
    table = HudiTable(str(root))
    with caplog.at_level(logging.WARNING, logger="hudi_ds.metadata"):
        table.upsert(data.slice(0, len(once)))
    stats = [p for p in others if p in ("column_stats", "partition_stats")]
    dropped = [p for p in others if p not in stats]
    if dropped:
        assert ", ".join(dropped) in caplog.text
    table.delete(data.slice(len(once), 1))
    assert_in_step(root)
    kept = sorted([*maintained, *stats])
    assert TableConfig.load(Storage(str(root))).get(METADATA_PARTITIONS_KEY) == ",".join(kept)
    left = sorted(p.name for p in (root / ".hoodie" / "metadata").iterdir())
    assert left == [".hoodie", *kept]
    assert_stats_in_step(root)
    if rli:
        from tests.metadata.test_record_index import assert_index_true

        assert keys[victim] not in assert_index_true(root)
    from tests.metadata.si_support import assert_secondary_indexes_true

    assert_secondary_indexes_true(root)
    assert data_row_set(hudi_ds.read(str(root))) == expected
    assert data_row_set(hudi_rs_table(str(root))) == expected
    assert data_row_set(hudi_rs_table(str(root), {"hoodie.metadata.enable": "true"})) == expected


@pytest.mark.parametrize("version", [6, 9])
def test_mdt_compaction_waits_for_a_killed_write(version: int, tmp_path: Path) -> None:
    """The MDT mirrors a write that is then killed before its data commit; while it stays
    pending (writers that do not roll back failed writes) the MDT compaction that is due waits
    (Java's validateTimelineBeforeSchedulingCompaction), so that the rollback can still undo
    its deltacommit; after the rollback it runs, and everything stays in step."""
    root = tmp_path / "t"
    opts = options("COPY_ON_WRITE", version, **{"hoodie.metadata.compact.max.delta.commits": "2"})
    never = {**opts, "hoodie.cleaner.policy.failed.writes": "NEVER"}
    model: Rows = {}
    t = batch(1)
    hudi_ds.write(str(root), t, opts)
    model = apply(model, t)
    assert _crash("metadata:3", lambda: hudi_ds.write(str(root), batch(2), opts)) == 137
    mdt = Storage(str(root / ".hoodie" / "metadata"))
    for k in (3, 4):
        t = batch(k)
        hudi_ds.write(str(root), t, never)
        model = apply(model, t)
        assert_in_step(root)
    assert not Timeline.load(mdt, layout_of(version)).completed().filter_actions(COMMIT)
    for k in (5, 6):
        t = batch(k)
        hudi_ds.write(str(root), t, opts)  # rolls the killed write back first
        model = apply(model, t)
        assert_in_step(root)
    check_rows(root, model)
    mdt_tl = Timeline.load(mdt, layout_of(version))
    assert mdt_tl.completed().filter_actions(COMMIT)  # compacted since
    data_tl = Timeline.load(Storage(str(root)), layout_of(version))
    (rb,) = data_tl.completed().filter_actions("rollback")
    mirror = mdt_tl.get(rb.requested_time)
    assert mirror is not None
    assert mirror.action == ("rollback" if version >= 8 else DELTA_COMMIT)


@pytest.mark.parametrize("spec", ["metadata:1", "metadata:2"])
@pytest.mark.parametrize("version", [6, 9])
def test_killed_mdt_compaction_and_clean(spec: str, version: int, tmp_path: Path) -> None:
    """The fifth write compacts the MDT (the second time) and cleans its oldest slice first;
    killed inside the compaction (:1) or the clean (:2), the next write undoes the pending MDT
    instant and everything is in step again."""
    from hudi_ds.metadata.writer import MetadataWriter
    from hudi_ds.timeline.view import TableState
    from hudi_ds.write.metadata_sync import committed_listing

    root = tmp_path / "t"
    opts = options("COPY_ON_WRITE", version, **{"hoodie.metadata.compact.max.delta.commits": "2"})
    model: Rows = {}
    for k in range(1, 5):
        t = batch(k)
        hudi_ds.write(str(root), t, opts)
        model = apply(model, t)
    mdt = Storage(str(root / ".hoodie" / "metadata"))
    assert len(Timeline.load(mdt, layout_of(version)).completed().filter_actions(COMMIT)) == 1
    assert _crash(spec, lambda: hudi_ds.write(str(root), batch(5), opts)) == 137
    pending = Timeline.load(mdt, layout_of(version)).pending()
    assert [i.action for i in pending] == ["compaction" if spec.endswith("1") else "clean"]
    for k in (6, 7):
        t = batch(k)
        hudi_ds.write(str(root), t, opts)
        model = apply(model, t)
        assert_in_step(root)
    check_rows(root, model)
    assert not Timeline.load(mdt, layout_of(version)).pending()
    # the writer's own reading of the MDT agrees
    state = TableState.open(str(root))
    assert MetadataWriter(state, committed_listing).files() == committed_files(root)


@pytest.mark.parametrize("version", [6, 9])
def test_delete_partition(version: int, tmp_path: Path) -> None:
    """DELETE_PARTITION tombstones the partition in ``__all_partitions__`` (its file record
    stays until a clean deletes the replaced files, as in Java): readers through the MDT and
    through the storage agree, also once a later write brings the partition back."""
    root = tmp_path / "t"
    opts = options("COPY_ON_WRITE", version)
    model: Rows = {}
    for k in (1, 2):
        t = batch(k)
        hudi_ds.write(str(root), t, opts)
        model = apply(model, t)
    HudiTable(str(root), opts).delete_partition(["p1"])
    model = {k: r for k, r in model.items() if r[2] != "p1"}
    assert "p1" not in mdt_files(root) and "p1" in committed_files(root)
    check_rows(root, model)
    assert_rows(
        hudi_rs_table(str(root), {"hoodie.metadata.enable": "false"}), list(model.values()), COLS
    )
    t = batch(3)
    hudi_ds.write(str(root), t, opts)
    model = apply(model, t)
    assert "p1" in mdt_files(root)
    check_rows(root, model)


def test_deltacommit_completing_during_mdt_compaction(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Version 9: an MDT deltacommit T completes after MDT compaction C was requested and
    before C completed. C's base does not hold T's records, so T's log belongs to C's slice
    (Java's HoodieFileGroup slices by completion time against the base's *requested* time):
    the writer's slice, the reader's slice and the test's decode agree, the writer undoes T
    with an MDT rollback when the data write is rolled back, and everything stays in step."""
    from hudi_ds.metadata import writer as writer_mod
    from hudi_ds.metadata.reader import MetadataReader
    from hudi_ds.metadata.writer import MetadataWriter
    from hudi_ds.timeline.instant import Instant, State
    from hudi_ds.timeline.view import TableState
    from hudi_ds.timeline.writer import TimelineWriter
    from hudi_ds.write.metadata_sync import committed_listing

    root = tmp_path / "t"
    opts = options("COPY_ON_WRITE", 9)
    model: Rows = {}
    for k in (1, 2):
        t = batch(k)
        hudi_ds.write(str(root), t, opts)
        model = apply(model, t)
    # killed after its MDT deltacommit wrote its log, before completing it
    assert _crash("metadata:2", lambda: hudi_ds.write(str(root), batch(3), opts)) == 137
    mdt = Storage(str(root / ".hoodie" / "metadata"))
    (pending,) = Timeline.load(mdt, 2, "timeline").pending()
    t_time = pending.requested_time
    inflight = Timeline.load(mdt, 2, "timeline").file_paths(t_time)[State.INFLIGHT]
    content = mdt.read_bytes(inflight)

    def complete_t(_name: str) -> None:  # while C is inflight
        tl = Timeline.load(mdt, 2, "timeline")
        if not tl.is_completed(t_time):
            TimelineWriter(mdt, 2, "timeline").complete(
                Instant(t_time, DELTA_COMMIT, State.INFLIGHT), content
            )

    w = MetadataWriter(TableState.open(str(root)), committed_listing)
    monkeypatch.setattr(writer_mod, "crash_point", complete_t)
    c_time = w.compact()
    monkeypatch.undo()
    tl = Timeline.load(mdt, 2, "timeline")
    c, t_inst = tl.get(c_time), tl.get(t_time)
    assert c is not None and t_inst is not None and c.completion_time and t_inst.completion_time
    assert c_time < t_inst.completion_time < c.completion_time  # the case the rules differ on
    log_t = f".files-0000-0_{t_time}.log.1_0-0-0"
    sl = w.latest_slice()
    assert sl.base_instant == c_time and sl.log_files == [log_t]
    data = Storage(str(root))
    cfg = TableConfig.load(data)
    reader = MetadataReader.open(data, cfg, Timeline.load(data, 2, cfg.timeline_path))
    assert reader is not None
    (group,) = reader.file_groups
    assert [lf.path.rsplit("/", 1)[-1] for lf in group.slice.log_files] == sl.log_files
    # the writer reads what the reader reads (T's block is not valid: its data write is pending)
    assert w.read_records() == reader.records()
    # the next write rolls the killed write back: T is not compacted, an MDT rollback undoes it
    t = batch(4)
    hudi_ds.write(str(root), t, opts)
    model = apply(model, t)
    assert_in_step(root)
    check_rows(root, model)
    tl = Timeline.load(mdt, 2, "timeline")
    assert tl.get(t_time) is None
    assert not (root / ".hoodie" / "metadata" / "files" / log_t).exists()


@pytest.mark.parametrize("version", [6, 9])
@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_resumed_rollback_of_completed_tombstones_every_file(
    table_type: str, version: int, tmp_path: Path
) -> None:
    """A rollback of a completed commit killed half way through its deletes, then run again:
    the files the first attempt deleted are tombstoned in the MDT too."""
    root = tmp_path / "t"
    opts = options(table_type, version, bucket=False)
    model: Rows = {}
    insts = []
    for k in (1, 2, 3):
        t = batch(k, n=30)
        insts.append(hudi_ds.write(str(root), t, opts))
        if k < 3:
            model = apply(model, t)
    last = insts[-1]
    code = _crash(
        "rollback:3", lambda: rollback.rollback(ServiceContext.open(str(root), opts), last)
    )
    assert code == 137
    rollback.rollback(ServiceContext.open(str(root), opts), last)
    assert_in_step(root)
    check_rows(root, model)
    t = batch(4)
    hudi_ds.write(str(root), t, opts)
    assert_in_step(root)
    check_rows(root, apply(model, t))


def test_unschedule_compaction_v6_keeps_the_mdt_true(tmp_path: Path) -> None:
    """Version 6: unscheduling a compaction with log files on top of it would rename committed
    files the MDT cannot record -- refused before anything changes; without logs on top it
    works. Either way the MDT listing equals storage and reads are exact."""
    root = tmp_path / "t"
    # the writes must leave the plan pending: the writers' default compaction is off
    off = {"hoodie.datasource.compaction.async.enable": "false"}
    opts = options("MERGE_ON_READ", 6, bucket=True, **off)
    model: Rows = {}
    for k in (1, 2):
        t = batch(k)
        hudi_ds.write(str(root), t, opts)
        model = apply(model, t)
    ctx = ServiceContext.open(str(root), opts)
    c = compaction.schedule_compaction(ctx)
    assert c is not None
    t = batch(3)
    hudi_ds.write(str(root), t, opts)
    model = apply(model, t)
    with pytest.raises(TimelineError, match=f"cannot unschedule compaction {c}.*metadata table"):
        compaction.unschedule_compaction(ServiceContext.open(str(root), opts), c)
    assert_in_step(root)
    # hudi-rs does not merge a v6 slice under a pending compaction with the one before it:
    # hudi_ds only here, both once the compaction ran
    assert_rows(hudi_ds.read(str(root), columns=COLS), list(model.values()), COLS)
    assert HudiTable(str(root)).timeline.get(c) is not None
    compaction.run_compaction(ServiceContext.open(str(root), opts))
    assert_in_step(root)
    check_rows(root, model)
    # a plan with nothing written on top of it: unscheduled, nothing renamed
    c2 = compaction.schedule_compaction(ServiceContext.open(str(root), opts))
    assert c2 is not None
    moved = compaction.unschedule_compaction(ServiceContext.open(str(root), opts), c2)
    assert moved == []
    t = batch(4)
    hudi_ds.write(str(root), t, opts)
    model = apply(model, t)
    assert_in_step(root)
    check_rows(root, model)


@pytest.mark.parametrize("version", [8, 9])
def test_catch_up_replays_what_the_reader_misses(version: int, tmp_path: Path) -> None:
    """A write requested before the MDT existed and completed after its bootstrap by a writer
    without the hook: the next write replays it (the catch-up and the reader share one rule
    of what the bootstrap covers), the reader is in step and the listing exact."""
    from hudi_ds.metadata.reader import MetadataReader
    from hudi_ds.write.client import WriteClient
    from tests.conftest import OCC_OPTIONS

    root = tmp_path / "t"
    opts = {**options("COPY_ON_WRITE", version, bucket=False), **OCC_OPTIONS}
    model: Rows = {}
    t = batch(1)
    hudi_ds.write(str(root), t, {**opts, "hoodie.metadata.enable": "false"})
    model = apply(model, t)
    foreign = WriteClient(str(root), opts)
    rows = pa.table(
        {
            "id": ["x1", "x2", "x3"],
            "ts": pa.array([7, 7, 7], pa.int64()),
            "p": ["px", "px", "px"],
            "v": [7.0, 7.5, 8.0],
        }
    )
    t1 = foreign.start(rows.schema)
    task = foreign.task_writer(t1)
    task.write(rows)
    statuses = task.close()
    t = batch(2)
    hudi_ds.write(str(root), t, opts)  # creates the MDT: T1 is pending, not in its bootstrap
    model = apply(model, t)
    foreign.table_state().before_complete = None  # T1 completes without the hook
    foreign.commit(t1, statuses)
    model = apply(model, rows)
    t = batch(3)
    hudi_ds.write(str(root), t, opts)
    model = apply(model, t)
    assert_in_step(root)
    storage = Storage(str(root))
    cfg = TableConfig.load(storage)
    reader = MetadataReader.open(
        storage, cfg, Timeline.load(storage, cfg.timeline_layout_version, cfg.timeline_path)
    )
    assert reader is not None and reader.in_step
    check_rows(root, model)


def test_enable_false_waits_for_a_write(tmp_path: Path) -> None:
    """Opening a table with hoodie.metadata.enable=false (services context, read-only CLI
    commands) leaves its MDT alone; the first write deletes it and readers list storage."""
    from hudi_ds.cli import main

    root = tmp_path / "t"
    opts = options("MERGE_ON_READ", 9)
    hudi_ds.write(str(root), batch(1), opts)
    mdt = root / ".hoodie" / "metadata"
    assert mdt.exists()
    off = {"hoodie.metadata.enable": "false"}
    ServiceContext.open(str(root), off)
    assert main(["compact", "show", str(root), "-o", "hoodie.metadata.enable=false"]) == 0
    assert mdt.exists()
    assert TableConfig.load(Storage(str(root))).get(METADATA_PARTITIONS_KEY) == (
        new_table_partitions(9)
    )
    assert_in_step(root)
    hudi_ds.write(str(root), batch(2), {**opts, **off})
    assert not mdt.exists()
    assert TableConfig.load(Storage(str(root))).get(METADATA_PARTITIONS_KEY) is None
    check_rows(root, apply(apply({}, batch(1)), batch(2)))


def test_hook_reads_current_properties(tmp_path: Path) -> None:
    """Two writers: while the first one writes (its hoodie.properties read at open, MDT
    declared), the second disables the MDT. The first one's commit acts on the properties of
    now: it does not rebuild the MDT the other writer deleted."""
    from hudi_ds.write.client import WriteClient
    from tests.conftest import OCC_OPTIONS

    root = tmp_path / "t"
    opts = {**options("COPY_ON_WRITE", 9), **OCC_OPTIONS}
    hudi_ds.write(str(root), batch(1), opts)
    keep = {k: v for k, v in opts.items() if k != "hoodie.metadata.enable"}
    first = WriteClient(str(root), keep)
    t = batch(2, n=3)
    i1 = first.start(t.schema)
    w = first.task_writer(i1)
    w.write(t)
    other = batch(3).set_column(2, "p", pa.array(["p9"] * batch(3).num_rows))  # no conflict
    hudi_ds.write(str(root), other, {**opts, "hoodie.metadata.enable": "false"})
    assert not (root / ".hoodie" / "metadata").exists()
    first.commit(i1, w.close())
    assert not (root / ".hoodie" / "metadata").exists()
    assert TableConfig.load(Storage(str(root))).get(METADATA_PARTITIONS_KEY) is None
    check_rows(root, apply(apply(apply({}, batch(1)), other), t))


@pytest.mark.parametrize("version", [6, 9])
def test_damaged_mdt_dropped_and_write_goes_on(
    version: int, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The MDT's base HFile lost: the next write warns (naming the error and the rebuild
    command), deletes the MDT and commits; readers list storage; enable=true rebuilds it."""
    root = tmp_path / "t"
    opts = options("MERGE_ON_READ", version)
    hudi_ds.write(str(root), batch(1), opts)
    files = root / ".hoodie" / "metadata" / "files"
    for f in files.iterdir():
        if parse_base_file_name(f.name) is not None:
            f.unlink()
    keep = {k: v for k, v in opts.items() if k != "hoodie.metadata.enable"}
    with caplog.at_level(logging.WARNING, logger="hudi_ds.metadata"):
        hudi_ds.write(str(root), batch(2), keep)
    assert "metadata --rebuild" in caplog.text and "cannot be updated" in caplog.text
    assert not (root / ".hoodie" / "metadata").exists()
    assert TableConfig.load(Storage(str(root))).get(METADATA_PARTITIONS_KEY) is None
    tl = hudi_ds.HudiTable(str(root)).timeline
    assert [i for i in tl.instants if not i.is_completed] == []
    model = apply(apply({}, batch(1)), batch(2))
    check_rows(root, model)
    hudi_ds.write(str(root), batch(3), opts)
    assert_in_step(root)
    check_rows(root, apply(model, batch(3)))
