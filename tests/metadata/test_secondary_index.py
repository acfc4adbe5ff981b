"""The metadata table's secondary indexes (``secondary_index_<name>``) of the Hudi 1.x fixtures:
what hudi_ds computes from a table's data files equals what Apache Hudi wrote, record by record
and file group by file group, and hudi_ds keeps them so through its writes and services.

The fixtures: the v9 ``*_txns_*_meta`` tables (Hudi 1.1, index version V2) index
``merchant_name`` (a string, one row null) and ``txn_date`` (a date); ``mor_avro_v8_trips_8i3u1d``
(Hudi 1.0, V1) indexes ``rider`` and went through 8 inserts, 3 updates and a delete, so its
index holds DELETE blocks and a compacted base file (see the fixtures' README).
"""

from __future__ import annotations

import logging
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import hudi_ds
from hudi_ds.api import HudiTable
from hudi_ds.metadata.records import METADATA_PARTITIONS_KEY
from hudi_ds.metadata.secondary_index import (
    PARTITION_PREFIX,
    definitions,
    file_group_id,
    file_group_indexes,
    index_keys,
    secondary_strings,
)
from hudi_ds.services import ServiceContext, clean, compaction, rollback
from hudi_ds.storage import Storage
from hudi_ds.table_config import TableConfig
from hudi_ds.timeline.timeline import Timeline
from tests.conftest import hudi_rs_table
from tests.fixtures import fixture_table
from tests.metadata.rli_support import (
    assert_delete_block_reencodes,
    fixtures_with,
    java_hash_index,
)
from tests.metadata.si_support import (
    assert_secondary_indexes_true,
    recomputed_secondary_index,
    secondary_partitions,
    stored_secondary_index,
)
from tests.write.fixture_model import data_row_set
from tests.write.test_fixture_writes import unzip

SI_FIXTURES = fixtures_with(PARTITION_PREFIX)


def test_row_keys_escape_and_null_as_java() -> None:
    """``SecondaryIndexKeyUtils.constructSecondaryIndexKey``: ``\\``, ``$`` and NUL escaped, a
    null value is one NUL; V1 hashes the whole key, V2 the secondary part with its ``$``."""
    values = pa.array(["plain", "a$b", "back\\slash", None, "nul\x00"])
    keys = index_keys(pa.array(["k1", "k$2", "k3", "k4", "k5"]), values)
    assert keys.to_pylist() == [
        "plain$k1",
        "a\\$b$k\\$2",
        "back\\\\slash$k3",
        "\x00$k4",
        "nul\\\x00$k5",
    ]
    heads = ["plain$", "a\\$b$", "back\\\\slash$", "\x00$", "nul\\\x00$"]
    assert file_group_indexes(keys, 10, 2).tolist() == [java_hash_index(h, 10) for h in heads]
    assert file_group_indexes(keys, 7, 1).tolist() == [
        java_hash_index(k, 7) for k in keys.to_pylist()
    ]
    assert file_group_id("secondary_index_rider_idx", 3) == "secondary-index-rider-idx-0003-0"


def test_secondary_values_render_as_java_to_string() -> None:
    """Spark hands Java's generator dates as days, timestamps as epoch micros; floating point
    values (Java's own formatting) are not rendered."""
    assert secondary_strings(pa.array([19743, None], pa.date32())).to_pylist() == ["19743", None]
    ts = pa.array([1_700_000_000_123], pa.timestamp("ms"))
    assert secondary_strings(ts).to_pylist() == ["1700000000123000"]
    assert secondary_strings(pa.array([True, False])).to_pylist() == ["true", "false"]
    assert secondary_strings(pa.array([-7], pa.int64())).to_pylist() == ["-7"]
    assert secondary_strings(pa.array([1.5])) is None


@pytest.mark.parametrize("name", SI_FIXTURES)
def test_secondary_index_recomputed_from_files_equals_the_fixtures(
    name: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Every record of every secondary index of the fixture -- row key and file group -- is what
    hudi_ds computes from the table's latest file slices, and nothing else."""
    root = fixture_table(name, tmp_path_factory)
    partitions = secondary_partitions(root)
    assert partitions
    for partition in partitions:
        stored = stored_secondary_index(root, partition)
        assert stored and stored == recomputed_secondary_index(root, partition)


@pytest.mark.parametrize("name", SI_FIXTURES)
def test_fixture_values_and_delete_blocks_are_what_hudi_ds_writes(
    name: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Every value of Java's secondary-index base HFiles re-encodes byte for byte (Hudi 1.0
    names the base file in ``_hoodie_file_name``, Hudi 1.1 leaves it null), and every DELETE
    block Java wrote is what hudi_ds writes for the same row keys."""
    from hudi_ds.layout.hfile import read_hfile
    from hudi_ds.log.block import BlockType
    from hudi_ds.log.reader import scan_log_bytes
    from hudi_ds.metadata.secondary_index import encode_value

    root = fixture_table(name, tmp_path_factory)
    values = deletes = 0
    for partition in secondary_partitions(root):
        folder = root / ".hoodie" / "metadata" / partition
        for p in sorted(folder.glob("*.hfile")):
            hf = read_hfile(p.read_bytes(), str(p))
            schema = hf.file_info["schema"].decode()
            own = p.name if "_v8_" in name else None
            for value in hf.values:
                assert encode_value(schema, own) == value
                values += 1
        for p in sorted(folder.glob(".*.log.*")):
            for b in scan_log_bytes(p.read_bytes(), str(p)).blocks:
                assert b.block_type == BlockType.DELETE
                if b.schema is None:
                    continue  # the empty block of a file group's creation
                assert_delete_block_reencodes(b, partition)
                deletes += 1
    assert values and (deletes or "_v8_" not in name)


def _indexed(root: Path) -> dict[str, str]:
    """Secondary index partition -> its column."""
    defs = definitions(TableConfig.load(Storage(str(root))), Storage(str(root)))
    return {n: d.column for n, d in defs.items() if d.column is not None}


def _changed_rows(data: pa.Table, key_field: str, columns: list[str]) -> pa.Table:
    """Row 0 with every indexed string column set to a value needing escapes, row 1 with the
    indexed columns null, and a new key copying row 2."""
    rows = data.slice(0, 3)
    for c in columns:
        i = rows.schema.get_field_index(c)
        t = rows.schema.field(c).type
        old = rows.column(c).to_pylist()
        first = "Caf\u00e9 $5 \\ deal" if pa.types.is_string(t) else old[0]
        rows = rows.set_column(i, c, pa.array([first, None, old[2]], t))
    i = rows.schema.get_field_index(key_field)
    keys = rows.column(key_field).to_pylist()
    return rows.set_column(i, key_field, pa.array([keys[0], keys[1], "NEW-SI-1"]))


@pytest.mark.parametrize(
    "name", ["cow_v9_txns_simple_meta", "mor_avro_v9_txns_simple_meta", "mor_avro_v8_trips_8i3u1d"]
)
def test_fixture_secondary_indexes_stay_true_through_writes_and_services(
    name: str, tmp_path: Path
) -> None:
    """Java's secondary indexes through hudi_ds's upsert (values changed, set null, needing
    escapes; a new key), delete, compaction (MOR), rollback of its last write and clean: after
    each step every index is still declared and on storage, and its records equal the ones
    recomputed from the table's files; hudi-rs reads the table with the metadata table on and
    off."""
    root = unzip(name, tmp_path)
    declared = list(_indexed(root))
    assert declared
    cfg = TableConfig.load(Storage(str(root)))
    key_field = cfg.record_key_fields[0]
    rows = hudi_ds.read(str(root))
    data = rows.drop_columns([c for c in rows.column_names if c.startswith("_hoodie_")])
    table = HudiTable(str(root))

    def in_step() -> None:
        props = TableConfig.load(Storage(str(root))).get(METADATA_PARTITIONS_KEY) or ""
        assert set(declared) <= set(props.split(",")), props
        assert_secondary_indexes_true(root)

    changed = _changed_rows(data, key_field, sorted(set(_indexed(root).values())))
    table.upsert(changed)
    in_step()
    escaped = "Caf\u00e9 \\$5 \\\\ deal$" + str(changed.column(key_field)[0])
    if "merchant" in ",".join(declared) or "rider" in ",".join(declared):
        assert any(escaped in stored_secondary_index(root, p) for p in declared)
    victim = data.filter(pc.equal(data[key_field], data[key_field][3]))
    table.delete(victim)
    in_step()
    if name.startswith("mor"):
        compaction.schedule_compaction(ServiceContext.open(str(root)))
        compaction.run_compaction(ServiceContext.open(str(root)))
        in_step()
    tl = Timeline.load(Storage(str(root)), cfg.timeline_layout_version, cfg.timeline_path)
    last = tl.completed().filter_actions("commit", "deltacommit").last_completed()
    assert last is not None
    rollback.rollback(ServiceContext.open(str(root)), last.requested_time)
    in_step()
    retain = {"hoodie.cleaner.commits.retained": "1"}
    clean.clean(ServiceContext.open(str(root), retain))
    in_step()
    expected = data_row_set(hudi_ds.read(str(root)))
    for md in ("true", "false"):
        assert data_row_set(hudi_rs_table(str(root), {"hoodie.metadata.enable": md})) == expected


def test_insert_overwrite_drops_the_replaced_records(tmp_path: Path) -> None:
    """An insert overwrite of one region: the records of the file groups it replaces leave the
    secondary indexes, the rewritten rows' records stay or come in."""
    root = unzip("cow_v9_txns_simple_meta", tmp_path)
    rows = hudi_ds.read(str(root))
    data = rows.drop_columns([c for c in rows.column_names if c.startswith("_hoodie_")])
    region = data["region"][0].as_py()
    keep = data.filter(pc.equal(data["region"], region)).slice(0, 1)
    before = stored_secondary_index(root, "secondary_index_merchant_idx")
    opts = {"hoodie.datasource.write.operation": "insert_overwrite"}
    i = keep.schema.get_field_index("merchant_name")
    keep = keep.set_column(i, "merchant_name", pa.array(["Overwritten"]))
    hudi_ds.write(str(root), keep, opts)
    assert_secondary_indexes_true(root)
    after = stored_secondary_index(root, "secondary_index_merchant_idx")
    gone = data.filter(pc.equal(data["region"], region)).num_rows - 1
    assert gone > 0 and len(after) == len(before) - gone
    assert f"Overwritten${keep['txn_id'][0]}" in after


@pytest.mark.parametrize("spec", ["metadata:1", "metadata:2", "metadata:3", "commit_write"])
def test_killed_write_leaves_the_secondary_indexes_true(spec: str, tmp_path: Path) -> None:
    """A write killed before, inside and after its MDT deltacommit (secondary-index log files
    included): readers ignore what it wrote, the next write rolls it back, the indexes are
    true."""
    from tests.metadata.test_writer import _crash

    root = unzip("mor_avro_v9_txns_simple_meta", tmp_path)
    rows = hudi_ds.read(str(root))
    data = rows.drop_columns([c for c in rows.column_names if c.startswith("_hoodie_")])
    changed = _changed_rows(data, "txn_id", ["merchant_name", "txn_date"])
    assert _crash(spec, lambda: HudiTable(str(root)).upsert(changed)) == 137
    assert_secondary_indexes_true(root)
    HudiTable(str(root)).upsert(changed.slice(1, 2))
    assert_secondary_indexes_true(root)
    assert len(secondary_partitions(root)) == 2


def test_secondary_index_disabled_or_unevaluable_is_removed(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """``hoodie.metadata.index.secondary.enable=false`` removes every secondary index (as
    Java does); a definition hudi_ds does not evaluate (here: an expression) is removed with a
    warning naming the index and why; the other indexes stay true."""
    import json

    root = unzip("cow_v9_txns_simple_meta", tmp_path / "a")
    defs = root / ".hoodie" / ".index_defs" / "index.json"
    doc = json.loads(defs.read_text())
    doc["indexDefinitions"]["secondary_index_txn_date_idx"]["indexFunction"] = "year"
    defs.write_text(json.dumps(doc))
    rows = hudi_ds.read(str(root))
    data = rows.drop_columns([c for c in rows.column_names if c.startswith("_hoodie_")])
    with caplog.at_level(logging.WARNING, logger="hudi_ds.metadata"):
        HudiTable(str(root)).upsert(data.slice(0, 1))
    assert "secondary_index_txn_date_idx: its function 'year' is an expression" in caplog.text
    assert secondary_partitions(root) == ["secondary_index_merchant_idx"]
    assert not (root / ".hoodie" / "metadata" / "secondary_index_txn_date_idx").exists()
    assert_secondary_indexes_true(root)

    root = unzip("cow_v9_txns_simple_meta", tmp_path / "b")
    off = {"hoodie.metadata.index.secondary.enable": "false"}
    HudiTable(str(root), off).upsert(data.slice(0, 1))
    assert secondary_partitions(root) == []
    left = sorted(p.name for p in (root / ".hoodie" / "metadata").iterdir())
    assert not [p for p in left if p.startswith(PARTITION_PREFIX)]


@pytest.mark.parametrize("name", ["cow_v9_txns_simple_meta", "mor_avro_v9_txns_simple_meta"])
def test_equality_filters_read_only_the_file_groups_the_index_names(
    name: str, tmp_path: Path
) -> None:
    """``=`` / ``in`` on an indexed column: the read opens only the file groups where the
    secondary index and the record index place matching rows (Java's ``SecondaryIndexSupport``),
    and returns what a read without skipping returns -- also after hudi_ds moved a value (a MOR
    log update), and for a read-optimized query, which the index does not prune."""
    from hudi_ds.table.table import ReadableTable

    root = unzip(name, tmp_path)
    off = {"hoodie.enable.data.skipping": "false"}

    def check(filters: list, options: dict | None = None) -> int:
        t = ReadableTable(str(root))
        opts = options or {}
        got = t.read(filters=filters, options=opts)
        opened = t.last_read_stats.base_files
        want = ReadableTable(str(root)).read(filters=filters, options={**opts, **off})
        assert data_row_set(got) == data_row_set(want)
        if not opts:
            holding = {
                (r["_hoodie_partition_path"], r["_hoodie_file_name"].split("_")[0])
                for r in want.select(["_hoodie_partition_path", "_hoodie_file_name"]).to_pylist()
            }
            planned = t.plan_read(filters=filters)
            assert {(s.partition_path, s.file_id) for s in planned.slices} == holding
            assert opened == len(holding)
        return want.num_rows

    assert check([("merchant_name", "=", "Amazon")]) == 1
    assert check([("merchant_name", "in", ["Amazon", "Uber", "nobody"])]) == 2
    assert check([("merchant_name", "=", "nobody")]) == 0
    rows = hudi_ds.read(str(root), filters=[("merchant_name", "=", "Amazon")])
    data = rows.drop_columns([c for c in rows.column_names if c.startswith("_hoodie_")])
    i = data.schema.get_field_index("merchant_name")
    HudiTable(str(root)).upsert(data.set_column(i, "merchant_name", pa.array(["Zeta"])))
    assert check([("merchant_name", "=", "Amazon")]) == 0
    assert check([("merchant_name", "=", "Zeta")]) == 1
    ro = {"hoodie.datasource.query.type": "read_optimized"}
    check([("merchant_name", "=", "Amazon")], ro)


def test_catch_up_keeps_the_secondary_indexes_true(tmp_path: Path) -> None:
    """A write completed by a writer without the metadata hook (its MDT deltacommit missing):
    the next write mirrors it first, reading its file groups as they were before and after it,
    then its own; the indexes end true."""
    from hudi_ds.write.client import WriteClient

    root = unzip("cow_v9_txns_simple_meta", tmp_path)
    rows = hudi_ds.read(str(root))
    data = rows.drop_columns([c for c in rows.column_names if c.startswith("_hoodie_")])
    changed = _changed_rows(data, "txn_id", ["merchant_name", "txn_date"])
    foreign = WriteClient(str(root), {})
    t1 = foreign.start(changed.schema)
    task = foreign.task_writer(t1)
    task.write(changed)
    statuses = task.close()
    foreign.table_state().before_complete = None  # T1 completes without the hook
    foreign.commit(t1, statuses)
    i = data.schema.get_field_index("merchant_name")
    again = changed.slice(0, 1).set_column(i, "merchant_name", pa.array(["Again"]))
    mdt = Storage(str(root / ".hoodie" / "metadata"))
    assert Timeline.load(mdt, 2).get(t1) is None
    HudiTable(str(root)).upsert(again)
    assert Timeline.load(mdt, 2).get(t1) is not None  # mirrored by the catch-up
    assert_secondary_indexes_true(root)
    stored = stored_secondary_index(root, "secondary_index_merchant_idx")
    first, second = changed["txn_id"][0].as_py(), changed["txn_id"][1].as_py()
    assert f"Again${first}" in stored and f"\x00${second}" in stored
    assert any(k.endswith("$NEW-SI-1") for k in stored)


@pytest.mark.parametrize("name", ["cow_v9_txns_simple_meta", "mor_avro_v9_txns_simple_meta"])
def test_restore_brings_the_secondary_indexes_back(name: str, tmp_path: Path) -> None:
    """Writes after a savepoint, then a restore to it (mirrored with tombstones): the indexes
    are compared with the table's files and corrected -- Java's records again."""
    root = unzip(name, tmp_path)
    java = {p: stored_secondary_index(root, p) for p in secondary_partitions(root)}
    saved = rollback.create_savepoint(ServiceContext.open(str(root)))
    rows = hudi_ds.read(str(root))
    data = rows.drop_columns([c for c in rows.column_names if c.startswith("_hoodie_")])
    table = HudiTable(str(root))
    table.upsert(_changed_rows(data, "txn_id", ["merchant_name", "txn_date"]))
    table.delete(data.slice(3, 1))
    assert_secondary_indexes_true(root)
    rollback.restore(ServiceContext.open(str(root)), saved)
    assert_secondary_indexes_true(root)
    assert {p: stored_secondary_index(root, p) for p in secondary_partitions(root)} == java
    expected = data_row_set(hudi_ds.read(str(root)))
    for md in ("true", "false"):
        assert data_row_set(hudi_rs_table(str(root), {"hoodie.metadata.enable": md})) == expected


def test_rollback_mirrored_with_tombstones_keeps_the_indexes_true(tmp_path: Path) -> None:
    """A rollback of a write whose metadata-table deltacommit a compaction has since folded
    into the ``files`` base file is mirrored with tombstones: the secondary indexes are
    compared with the table's files and stay, true."""
    root = unzip("cow_v9_txns_simple_meta", tmp_path)
    # the metadata table compacts at every deltacommit; this test is about the secondary indexes
    opts = {
        "hoodie.metadata.compact.max.delta.commits": "1",
        "hoodie.metadata.index.column.stats.enable": "false",
    }
    rows = hudi_ds.read(str(root))
    data = rows.drop_columns([c for c in rows.column_names if c.startswith("_hoodie_")])
    java = {p: stored_secondary_index(root, p) for p in secondary_partitions(root)}
    written = HudiTable(str(root), opts).upsert(
        _changed_rows(data, "txn_id", ["merchant_name", "txn_date"])
    )
    clean.clean(ServiceContext.open(str(root), {**opts, "hoodie.cleaner.commits.retained": "1"}))
    assert_secondary_indexes_true(root)
    rollback.rollback(ServiceContext.open(str(root), opts), str(written))
    mdt = Timeline.load(Storage(str(root / ".hoodie" / "metadata")), 2)
    assert not mdt.completed().filter_actions("rollback")  # tombstones, not an MDT rollback
    assert_secondary_indexes_true(root)
    assert {p: stored_secondary_index(root, p) for p in secondary_partitions(root)} == java


def test_metadata_compaction_and_clean_cover_the_secondary_indexes(tmp_path: Path) -> None:
    """The metadata table's compaction writes a new base HFile for every secondary-index file
    group (its live records, each naming the file, as Java's compacted base files do) and its
    clean removes the slices older than the two latest; the indexes stay true and hudi-rs
    reads the table through the metadata table."""
    from hudi_ds.layout.hfile import read_hfile
    from hudi_ds.metadata.secondary_index import encode_value

    root = unzip("mor_avro_v9_txns_simple_meta", tmp_path)
    opts = {"hoodie.metadata.compact.max.delta.commits": "1"}
    rows = hudi_ds.read(str(root))
    data = rows.drop_columns([c for c in rows.column_names if c.startswith("_hoodie_")])
    i = data.schema.get_field_index("merchant_name")
    table = HudiTable(str(root), opts)
    for n in range(3):
        table.upsert(data.slice(n, 1).set_column(i, "merchant_name", pa.array([f"M{n}"])))
        assert_secondary_indexes_true(root)
    mdt = Timeline.load(Storage(str(root / ".hoodie" / "metadata")), 2)
    compactions = [c.requested_time for c in mdt.completed().filter_actions("commit")]
    folder = root / ".hoodie" / "metadata" / "secondary_index_merchant_idx"
    bases = sorted(folder.glob("*.hfile"))
    assert {b.name.rsplit("_", 1)[1][:-6] for b in bases} <= set(compactions[-2:])
    assert len(bases) == 2 * 10  # ten file groups, two slices each (the older ones cleaned)
    for b in bases:
        hf = read_hfile(b.read_bytes(), str(b))
        schema = hf.file_info["schema"].decode()
        assert all(v == encode_value(schema, b.name) for v in hf.values)
    expected = data_row_set(hudi_ds.read(str(root)))
    assert data_row_set(hudi_rs_table(str(root), {"hoodie.metadata.enable": "true"})) == expected
