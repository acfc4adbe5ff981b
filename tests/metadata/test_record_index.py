"""The record-level index (``record_index`` MDT partition) of the 1.x fixture tables: what
hudi_ds computes from a table's data files equals what Apache Hudi wrote, record by record.

The fixtures were written by Hudi 1.0 / 1.1 Spark jobs with ``hoodie.metadata.record.index.
enable=true``: inserts, upserts, deletes, clustering, insert_overwrite, a rollback (see the
fixtures' README). Java writes each record's ``instantTime`` when the key enters its file group
(insert, clustering move); a COW update in place keeps it, so a recomputation from the latest
files can only date the key by its slice: there the stored instant must be an earlier commit of
the data timeline that wrote the same file group.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from hudi_ds.layout.naming import parse_base_file_name, parse_log_file_name
from hudi_ds.metadata.record_index import (
    RECORD_INDEX_PARTITION,
    RecordLocation,
    decode_value,
    encode_value,
    file_group_id,
    file_group_indexes,
)
from hudi_ds.storage import Storage
from hudi_ds.table_config import TableConfig
from hudi_ds.timeline.instant import format_instant_time
from hudi_ds.timeline.timeline import Timeline
from tests.fixtures import fixture_table, require_base_file_reader
from tests.metadata.rli_support import (
    assert_delete_block_reencodes,
    fixtures_with,
    java_hash_index,
    key_rows,
    recomputed_record_index,
    stored_record_index,
    writer_timezone,
)

RLI_FIXTURES = fixtures_with(f"{RECORD_INDEX_PARTITION}/")


def test_file_group_of_a_key_is_java_string_hash_mod_count() -> None:
    keys = ["TXN-001", "TXN-002", "", "key-\U0001f600", "ä" * 40, "polygenelubricants"]
    got = file_group_indexes(pa.array(keys), 10).tolist()
    assert got == [java_hash_index(k, 10) for k in keys]
    # "polygenelubricants".hashCode() == Integer.MIN_VALUE: abs stays negative in Java
    assert got[-1] == 8
    assert file_group_id(3) == "record-index-0003-0"


def test_values_round_trip_both_file_id_encodings() -> None:
    from hudi_ds.metadata.records import record_schema

    schema = record_schema(9)
    for fid in ("8b0a8a4e-2c1f-4a4b-9d8e-0123456789ab-0", "00000003-2c1f-4a4b-9d8e-0123456789ab-0"):
        loc = RecordLocation("region=eu", fid, 1772922289244)
        assert decode_value(encode_value(loc, schema), schema) == loc
    raw = RecordLocation("", "not-a-uuid_file", 5)
    assert decode_value(encode_value(raw, schema), schema) == raw


@pytest.mark.parametrize("name", RLI_FIXTURES)
def test_fixture_values_reencode_byte_exact(name: str, tmp_path_factory) -> None:  # type: ignore[no-untyped-def]
    from hudi_ds.layout.hfile import read_hfile

    root = fixture_table(name, tmp_path_factory)
    folder = root / ".hoodie" / "metadata" / RECORD_INDEX_PARTITION
    seen = 0
    for p in sorted(folder.glob("*.hfile")):
        hf = read_hfile(p.read_bytes(), str(p))
        schema = hf.file_info["schema"].decode()
        for value in hf.values:
            assert encode_value(decode_value(value, schema), schema, p.name) == value
            seen += 1
    assert seen or not list(folder.glob("*.hfile"))


@pytest.mark.parametrize("name", RLI_FIXTURES)
def test_record_index_recomputed_from_files_equals_the_fixtures(
    name: str, tmp_path_factory
) -> None:  # type: ignore[no-untyped-def]
    require_base_file_reader(name)
    root = fixture_table(name, tmp_path_factory)
    tz = writer_timezone(root)
    stored = stored_record_index(root)
    computed = recomputed_record_index(root, tz)
    assert stored, "the fixture's record index is empty"
    assert sorted(stored) == sorted(computed)
    storage = Storage(str(root))
    cfg = TableConfig.load(storage)
    tl = Timeline.load(storage, cfg.timeline_layout_version, cfg.timeline_path)
    for key, want in computed.items():
        got = stored[key]
        assert (got.partition, got.file_id) == (want.partition, want.file_id), key
        if got.instant_ms == want.instant_ms:
            continue
        # an update in place: the key entered the file group with an earlier commit
        assert got.instant_ms < want.instant_ms, key
        when = format_instant_time(got.instant_ms, tz)
        inst = tl.get(when)
        assert inst is not None and inst.is_completed, (key, when)
        ids = {s.file_id for s in tl.read_commit_metadata(inst).write_stats()}
        assert want.file_id in ids, (key, when)


@pytest.mark.parametrize(
    # Hudi 1.0's HBase cells (v8) and 1.1's native ones, a base file and log blocks, a rollback
    "name",
    ["mor_avro_v8_trips_8i3u1d", "mor_avro_v9_nonpartitioned_rollback", "cow_v9_txns_simple_meta"],
)
def test_fixture_lookups_by_key_equal_the_whole_index(name: str, tmp_path_factory) -> None:  # type: ignore[no-untyped-def]
    """Looking keys up (only their HFile blocks, searched: Hudi 1.0's HBase cells and 1.1's
    native ones) finds every stored key where the whole read puts it, and no absent key."""
    from hudi_ds.index.record_level import record_index_locations

    root = fixture_table(name, tmp_path_factory)
    whole = stored_record_index(root)
    keys = sorted(whole)
    absent = [k + "~" for k in keys[::3]] + ["", "\x00", keys[0][:-1]]
    got = record_index_locations(Storage(str(root)), keys + absent)
    assert got == whole


# -- kept in step by hudi_ds's writes --------------------------------------------------------------


def assert_index_true(root: Path, instants: bool = False) -> dict[str, RecordLocation]:
    """The table still declares ``record_index`` and its records equal the recomputed ones:
    keys, partitions, file ids; with ``instants``, instants at or before the slice's (a table
    whose writers all ran in this process's time zone: a Java writer's ``LOCAL`` timeline zone
    is its JVM's)."""
    cfg = TableConfig.load(Storage(str(root)))
    assert RECORD_INDEX_PARTITION in (cfg.get("hoodie.table.metadata.partitions") or "").split(",")
    stored = stored_record_index(root)
    computed = recomputed_record_index(root, writer_timezone(root))
    assert sorted(stored) == sorted(computed)
    for key, want in computed.items():
        got = stored[key]
        assert (got.partition, got.file_id) == (want.partition, want.file_id), key
        assert not instants or got.instant_ms <= want.instant_ms, key
    mdt = Storage(str(root / ".hoodie" / "metadata"))
    mcfg = TableConfig.load(mdt)
    if mcfg.timeline_layout_version == 2:  # no file of an undone MDT instant is left behind
        tl = Timeline.load(mdt, 2, mcfg.timeline_path)
        pending = {i.requested_time for i in tl.pending()}  # (a killed write's, undone next)
        for f in (root / ".hoodie" / "metadata" / RECORD_INDEX_PARTITION).iterdir():
            parsed = parse_base_file_name(f.name) or parse_log_file_name(f.name)
            if parsed is not None:
                t = parsed.instant_time
                assert tl.is_completed(t) or tl.is_before_start(t) or t in pending, f.name
    return stored


@pytest.mark.parametrize(
    ("table_type", "version"),
    [("COPY_ON_WRITE", 9), ("MERGE_ON_READ", 9), ("COPY_ON_WRITE", 6), ("MERGE_ON_READ", 6)],
)
def test_new_table_keeps_its_record_index_in_step(
    table_type: str, version: int, tmp_path: Path
) -> None:
    import hudi_ds
    from hudi_ds.api import HudiTable
    from hudi_ds.services import ServiceContext, compaction
    from tests.conftest import assert_rows, hudi_rs_table

    root = tmp_path / "t"
    opts = _rli_options(table_type, version)
    first = key_rows(list(range(12)), ["p0", "p1", "p2"] * 4, 1)
    hudi_ds.write(str(root), first, opts)
    assert len(assert_index_true(root, instants=True)) == 12
    # updates in place, inserts, and a key moving partition (the index is global)
    second = key_rows([1, 2, 20, 21, 3], ["p1", "p2", "p0", "p1", "p1"], 2)
    hudi_ds.write(str(root), second, opts)
    stored = assert_index_true(root, instants=True)
    assert stored["k3"].partition == "p1" and stored["k20"].partition == "p0"
    HudiTable(str(root), opts).delete(key_rows([4, 5], ["p1", "p2"], 3))
    stored = assert_index_true(root)
    assert "k4" not in stored and "k5" not in stored
    if table_type == "MERGE_ON_READ":
        ctx = ServiceContext.open(str(root), opts)
        compaction.schedule_compaction(ctx)
        compaction.run_compaction(ServiceContext.open(str(root), opts))
        assert_index_true(root)
    rows = hudi_ds.read(str(root), columns=["id", "p"])
    assert sorted(rows.column("id").to_pylist()) == sorted(stored)
    expected = [(k, loc.partition) for k, loc in stored.items()]
    assert_rows(rows, expected, ["id", "p"])
    for md in ("true", "false"):
        assert_rows(hudi_rs_table(str(root), {"hoodie.metadata.enable": md}), expected, ["id", "p"])


def _rli_options(table_type: str, version: int) -> dict[str, str]:
    from tests.conftest import table_options

    return {
        **table_options("rli", partition="p", table_type=table_type, buckets=None),
        "hoodie.metadata.enable": "true",
        "hoodie.metadata.record.index.enable": "true",
        "hoodie.index.type": "GLOBAL_SIMPLE",
        "hoodie.clean.automatic": "false",
        "hoodie.write.table.version": str(version),
    }


@pytest.mark.parametrize("version", [9, 6])
def test_rollback_undoes_the_record_index_or_removes_it(version: int, tmp_path: Path) -> None:
    """Table version 9 mirrors a rollback by undoing the MDT deltacommit: its record-index log
    files go with it and the index is true again. Version 6 mirrors it with tombstones, which
    cannot undo an insert's index entry: the partition is removed (and the global index it
    stood for recorded)."""
    import hudi_ds
    from hudi_ds.services import ServiceContext, rollback

    root = tmp_path / "t"
    opts = _rli_options("MERGE_ON_READ", version)
    hudi_ds.write(str(root), key_rows(list(range(8)), ["p0", "p1"] * 4, 1), opts)
    hudi_ds.write(str(root), key_rows([1, 30, 31], ["p0", "p0", "p1"], 2), opts)
    before = stored_record_index(root)
    assert "k30" in before and before["k1"].partition == "p0"
    cfg = TableConfig.load(Storage(str(root)))
    tl = Timeline.load(Storage(str(root)), cfg.timeline_layout_version, cfg.timeline_path)
    last = tl.completed().last_completed()
    assert last is not None
    rollback.rollback(ServiceContext.open(str(root), opts), last.requested_time)
    if version == 9:
        stored = assert_index_true(root, instants=True)
        assert "k30" not in stored and stored["k1"].partition == "p1"
    else:
        props = TableConfig.load(Storage(str(root)))
        assert props.get("hoodie.table.metadata.partitions") == "files"
        assert not (root / ".hoodie" / "metadata" / RECORD_INDEX_PARTITION).exists()
        assert props.get("hoodie.index.type") == "GLOBAL_SIMPLE"


@pytest.mark.parametrize("spec", ["metadata:1", "metadata:2", "metadata:3", "commit_write"])
@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_killed_write_leaves_the_record_index_true(
    spec: str, table_type: str, tmp_path: Path
) -> None:
    """A write killed before, inside and after its MDT deltacommit (record-index log files
    included): readers ignore what it wrote, the next write rolls it back, the index is true."""
    import hudi_ds
    from tests.metadata.test_writer import _crash

    root = tmp_path / "t"
    opts = _rli_options(table_type, 9)
    hudi_ds.write(str(root), key_rows(list(range(8)), ["p0", "p1"] * 4, 1), opts)
    moved = key_rows([1, 40, 41], ["p0", "p1", "p1"], 2)
    assert _crash(spec, lambda: hudi_ds.write(str(root), moved, opts)) == 137
    stored = assert_index_true(root, instants=True)
    assert "k40" not in stored and stored["k1"].partition == "p1"
    hudi_ds.write(str(root), key_rows([2, 50], ["p1", "p0"], 3), opts)
    stored = assert_index_true(root, instants=True)
    assert "k40" not in stored and stored["k2"].partition == "p1" and "k50" in stored


@pytest.mark.parametrize("name", ["cow_v9_txns_simple_meta", "mor_avro_v9_txns_simple_meta"])
def test_fixture_record_index_stays_true_through_writes_compaction_and_rollback(
    name: str, tmp_path: Path
) -> None:
    """Java's record index of a Hudi 1.1 table: hudi_ds moves a key to another region,
    inserts one, deletes one, compacts (MOR) and rolls its last write back; after each step the
    index is Java's records plus exactly those changes, and hudi-rs reads the table with the
    metadata table on and off."""
    import pyarrow.compute as pc

    import hudi_ds
    from hudi_ds.api import HudiTable
    from hudi_ds.services import ServiceContext, compaction, rollback
    from tests.conftest import hudi_rs_table
    from tests.write.fixture_model import data_row_set
    from tests.write.test_fixture_writes import unzip

    root = unzip(name, tmp_path)
    java = stored_record_index(root)
    rows = hudi_ds.read(str(root))
    data = rows.drop_columns([c for c in rows.column_names if c.startswith("_hoodie_")])
    first = data.slice(0, 1)
    key, home = first["txn_id"][0].as_py(), first["region"][0].as_py()
    away = next(r for r in ("apac", "eu", "us") if r != home)
    bumped = pc.add(first["txn_ts"].combine_chunks().cast(pa.int64()), 1)
    moved = first.set_column(first.schema.get_field_index("region"), "region", pa.array([away]))
    moved = moved.set_column(
        moved.schema.get_field_index("txn_ts"), "txn_ts", bumped.cast(first["txn_ts"].type)
    )
    new = moved.set_column(moved.schema.get_field_index("txn_id"), "txn_id", pa.array(["NEW-1"]))
    table = HudiTable(str(root))
    table.upsert(pa.concat_tables([moved, new]))
    stored = assert_index_true(root)
    assert stored[key].partition == f"region={away}" and "NEW-1" in stored
    victim = next(k for k in java if k != key)
    gone = data.filter(pc.equal(data["txn_id"], victim))
    table.delete(gone)
    stored = assert_index_true(root)
    assert victim not in stored
    assert {k: v for k, v in stored.items() if k not in (key, "NEW-1")} == {
        k: v for k, v in java.items() if k not in (key, victim)
    }
    if name.startswith("mor"):
        compaction.schedule_compaction(ServiceContext.open(str(root)))
        compaction.run_compaction(ServiceContext.open(str(root)))
        assert assert_index_true(root) == stored
    cfg = TableConfig.load(Storage(str(root)))
    tl = Timeline.load(Storage(str(root)), cfg.timeline_layout_version, cfg.timeline_path)
    last = tl.completed().filter_actions("commit", "deltacommit").last_completed()
    assert last is not None
    rollback.rollback(ServiceContext.open(str(root)), last.requested_time)
    after = assert_index_true(root)
    expected = data_row_set(hudi_ds.read(str(root)))
    for md in ("true", "false"):
        assert data_row_set(hudi_rs_table(str(root), {"hoodie.metadata.enable": md})) == expected
    assert sorted(after) == sorted(
        hudi_ds.read(str(root), columns=["txn_id"])["txn_id"].to_pylist()
    )


# -- looked up: hoodie.index.type=RECORD_INDEX -------------------------------------------------------


def test_hfile_lookup_decodes_only_the_blocks_of_its_keys() -> None:
    from hudi_ds.layout.hfile import read_hfile, write_hfile
    from hudi_ds.layout.hfile_lookup import lookup_hfile

    keys = [f"key-{i:05d}".encode() for i in range(3000)]
    values = [b"v" * 40 + k for k in keys]
    data = write_hfile(keys, values, block_size=4096)
    found, info, decoded = lookup_hfile(data, [keys[7], keys[2500], b"key-99999", b"a"])
    assert found == {keys[7]: values[7], keys[2500]: values[2500]}
    # two blocks for the two present keys, and the absent one past the last block's first key
    assert decoded == 3 and "hfile.LASTKEY" in info
    assert read_hfile(data).keys == keys  # (a file of many blocks)


def test_hfile_lookup_searches_rows_and_passes_over_their_bytes_in_values(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A lookup searches each block for its rows instead of walking every cell: a value holding
    another row's bytes (without a whole cell around them) is passed over, absent rows are
    not found, and a lookup of mostly absent rows falls back to the walk with the same
    answer."""
    import random

    from hudi_ds.layout import hfile_lookup
    from hudi_ds.layout.hfile import write_hfile
    from hudi_ds.layout.hfile_lookup import lookup_hfile

    keys = [f"key-{i:05d}".encode() for i in range(0, 6000, 2)]
    # each value carries the next row as a cell would (int16 length + row): a decoy
    values = [
        b"v" * (i % 7) + len(keys[i + 1]).to_bytes(2, "big") + keys[i + 1] + b"tail"
        if i + 1 < len(keys)
        else b"last"
        for i in range(len(keys))
    ]
    data = write_hfile(keys, values, block_size=8192)
    cells = dict(zip(keys, values, strict=True))

    def walked(*_a: object) -> None:
        raise AssertionError("a lookup of present rows walked the cells")

    rng = random.Random(7)
    wanted = rng.sample(keys, 400)
    with monkeypatch.context() as m:
        m.setattr(hfile_lookup, "_walk_cells", walked)
        found, _, _ = lookup_hfile(data, wanted)
    assert found == {k: cells[k] for k in wanted}
    # odd numbers are absent; mixed with present ones, then nearly all absent (the walk)
    for share in (2, 50):
        wanted = sorted(rng.sample(keys, 3000 // share)) + [
            f"key-{i:05d}".encode() for i in range(1, 6000, 2)
        ]
        found, _, _ = lookup_hfile(data, wanted)
        assert found == {k: cells[k] for k in wanted if k in cells}


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
@pytest.mark.parametrize("move", [False, True])
def test_record_index_upserts_never_duplicate_a_key(
    table_type: str, move: bool, tmp_path: Path
) -> None:
    """Upserts and deletes tagged through the record index: a key arriving with another
    partition is updated where it lives (Java's default) or moved there
    (``hoodie.record.index.update.partition.path``); never two copies; the lookup reads no
    data file."""
    import hudi_ds
    from hudi_ds.api import HudiTable
    from hudi_ds.index.record_level import record_index_lookup
    from hudi_ds.index.simple import simple_lookup
    from hudi_ds.table.fs_view import FileSystemView
    from tests.conftest import assert_rows, hudi_rs_table

    root = tmp_path / "t"
    opts = {
        **_rli_options(table_type, 9),
        "hoodie.index.type": "RECORD_INDEX",
        "hoodie.record.index.update.partition.path": str(move).lower(),
    }
    hudi_ds.write(str(root), key_rows(list(range(10)), ["p0", "p1"] * 5, 1), opts)
    # key -> (p column, v, partition path it lives in)
    model = {f"k{i}": ("p0" if i % 2 == 0 else "p1", float(i)) for i in range(10)}
    where = {k: p for k, (p, _) in model.items()}
    batch = key_rows([1, 2, 30], ["p0", "p1", "p1"], 2)  # k1 p1->p0, k2 p0->p1, k30 new
    HudiTable(str(root), opts).upsert(batch)
    model.update({"k1": ("p0", 2.0), "k2": ("p1", 4.0), "k30": ("p1", 60.0)})
    if move:
        where.update({"k1": "p0", "k2": "p1"})
    where["k30"] = "p1"
    HudiTable(str(root), opts).delete(key_rows([3], ["p0"], 3))  # deleted where it lives (p1)
    del model["k3"], where["k3"]
    cols = ["id", "p", "v", "_hoodie_partition_path"]
    expected = [(k, p, v, where[k]) for k, (p, v) in model.items()]
    assert_rows(hudi_ds.read(str(root), columns=cols), expected, cols)
    for md in ("true", "false"):
        got = hudi_rs_table(str(root), {"hoodie.metadata.enable": md})
        assert_rows(got, expected, cols)
    stored = assert_index_true(root, instants=True)
    assert {k: loc.partition for k, loc in stored.items()} == where
    # the lookup answers as the file-reading one, reading no data file
    from hudi_ds.timeline.view import TableState

    state = TableState.open(Storage(str(root)))
    storage = state.storage
    view = FileSystemView(storage, state.config)
    vis = state.visibility()
    slices = [s for p in view.partitions() for s in view.latest_file_slices(p, vis)]
    keys = pa.array(["k1", "k2", "k30", "k3", "k99"])
    from hudi_ds.index.lookup import LookupSpec

    spec = LookupSpec(("id",), False)
    got = record_index_lookup(storage, slices, keys, None, spec)
    want = simple_lookup(storage, slices, keys, None, spec)
    assert got.files_read == 0 and want.files_read > 0
    # (a key deleted through a MOR log is still in its base file for SIMPLE; the index,
    # like Java's, has let it go)
    assert got.file_id.to_pylist()[:3] == want.file_id.to_pylist()[:3]
    assert got.file_id.to_pylist()[3:] == [None, None]


def test_record_index_type_without_a_record_index_is_refused(tmp_path: Path) -> None:
    import hudi_ds
    from hudi_ds.errors import ConfigError

    root = tmp_path / "t"
    opts = {**_rli_options("COPY_ON_WRITE", 9), "hoodie.index.type": "RECORD_INDEX"}
    del opts["hoodie.metadata.record.index.enable"]
    with pytest.raises(ConfigError, match="RECORD_INDEX.*hoodie.metadata.record.index.enable"):
        hudi_ds.write(str(root), key_rows([1], ["p0"], 1), opts)
    assert not (root / ".hoodie" / "hoodie.properties").exists()


@pytest.mark.parametrize("name", RLI_FIXTURES)
def test_fixture_log_blocks_are_what_hudi_ds_writes(name: str, tmp_path_factory) -> None:  # type: ignore[no-untyped-def]
    """Every record-index log block Java wrote -- HFILE_DATA blocks of puts and DELETE blocks --
    is what hudi_ds writes for the same records, byte for byte (the HFile's creation time
    taken from Java's). Hudi 1.0 (version 8) wrote its HFiles with HBase's writer, whose
    layout hudi_ds reads but does not write (it writes Hudi 1.1's for every version): there
    the records are compared."""
    import struct

    from hudi_ds.layout.hfile import CREATE_TIME_TS, read_hfile, write_hfile
    from hudi_ds.log.block import BlockType
    from hudi_ds.log.reader import scan_log_bytes

    root = fixture_table(name, tmp_path_factory)
    seen = 0
    for p in sorted((root / ".hoodie" / "metadata" / RECORD_INDEX_PARTITION).glob(".*.log.*")):
        for b in scan_log_bytes(p.read_bytes(), str(p)).blocks:
            assert b.schema is not None or b.block_type == BlockType.DELETE
            if b.block_type == BlockType.HFILE_DATA:
                assert b.schema is not None
                hf = read_hfile(b.content)
                made = struct.unpack(">q", hf.file_info[CREATE_TIME_TS])[0]
                values = [encode_value(decode_value(v, b.schema), b.schema) for v in hf.values]
                info = {"schema": b.schema.encode()}
                mine = write_hfile(hf.keys, values, file_info=info, create_time_ms=made)
                if "_v8_" in name:
                    assert read_hfile(mine).values == hf.values
                else:
                    assert mine == bytes(b.content)
                seen += 1
            elif b.block_type == BlockType.DELETE and b.schema is not None:
                assert_delete_block_reencodes(b, RECORD_INDEX_PARTITION)
                seen += 1
    assert seen


def test_record_index_turned_on_for_a_table_with_a_metadata_table(tmp_path: Path) -> None:
    """A table whose metadata table has no record index gets one with the first write asking
    for it (hoodie.metadata.record.index.enable=true), true from then on."""
    import hudi_ds

    root = tmp_path / "t"
    opts = _rli_options("MERGE_ON_READ", 9)
    without = {k: v for k, v in opts.items() if k != "hoodie.metadata.record.index.enable"}
    hudi_ds.write(str(root), key_rows(list(range(6)), ["p0", "p1"] * 3, 1), without)
    cfg = TableConfig.load(Storage(str(root)))
    # a new version 9 table: column and partition stats by default, no record index
    assert cfg.get("hoodie.table.metadata.partitions") == "column_stats,files,partition_stats"
    hudi_ds.write(str(root), key_rows([1, 9], ["p0", "p0"], 2), opts)
    stored = assert_index_true(root, instants=True)
    assert sorted(stored) == sorted(f"k{i}" for i in (0, 1, 2, 3, 4, 5, 9))
    assert stored["k1"].partition == "p0"  # moved (hoodie.simple.index.update.partition.path)
    hudi_ds.write(str(root), key_rows([10], ["p1"], 3), without)  # kept by writers not asking
    assert "k10" in assert_index_true(root, instants=True)


def test_overwrites_and_partition_deletes_remove_the_keys_they_drop(tmp_path: Path) -> None:
    """INSERT_OVERWRITE / INSERT_OVERWRITE_TABLE / DELETE_PARTITION: the keys of the replaced
    file groups that the instant did not write again leave the index (Java
    ``getRecordIndexAdditionalUpserts``)."""
    import hudi_ds
    from hudi_ds.api import HudiTable

    root = tmp_path / "t"
    opts = _rli_options("COPY_ON_WRITE", 9)
    hudi_ds.write(str(root), key_rows(list(range(9)), ["p0", "p1", "p2"] * 3, 1), opts)
    table = HudiTable(str(root), opts)
    table.insert_overwrite(key_rows([0, 20], ["p0", "p0"], 2))  # p0 held k0, k3, k6
    stored = assert_index_true(root, instants=True)
    assert sorted(k for k, loc in stored.items() if loc.partition == "p0") == ["k0", "k20"]
    table.delete_partition(["p1"])
    stored = assert_index_true(root, instants=True)
    assert sorted(stored) == ["k0", "k2", "k20", "k5", "k8"]
    table.insert_overwrite_table(key_rows([5, 30], ["p2", "p1"], 4))
    assert sorted(assert_index_true(root, instants=True)) == ["k30", "k5"]


def test_record_index_turned_off(tmp_path: Path) -> None:
    """``hoodie.metadata.record.index.enable=false`` removes the partition (its folder and
    its name in ``hoodie.table.metadata.partitions``)."""
    import hudi_ds

    root = tmp_path / "t"
    opts = _rli_options("COPY_ON_WRITE", 9)
    hudi_ds.write(str(root), key_rows([1, 2], ["p0", "p1"], 1), opts)
    off = {**opts, "hoodie.metadata.record.index.enable": "false"}
    hudi_ds.write(str(root), key_rows([3], ["p0"], 2), off)
    cfg = TableConfig.load(Storage(str(root)))
    assert cfg.get("hoodie.table.metadata.partitions") == "column_stats,files,partition_stats"
    assert not (root / ".hoodie" / "metadata" / RECORD_INDEX_PARTITION).exists()


@pytest.mark.parametrize(("table_type", "version"), [("MERGE_ON_READ", 9), ("COPY_ON_WRITE", 6)])
def test_mdt_compaction_compacts_the_record_index(
    table_type: str, version: int, tmp_path: Path
) -> None:
    """The MDT compaction writes every record-index file group a new base HFile of its merged
    records (deleted keys dropped, each naming its file) and the clean that follows removes the
    slices older than the two latest: the index stays equal to its recomputation, lookups
    answer from the new slices, and the log files no longer pile up."""
    import hudi_ds
    from hudi_ds.api import HudiTable
    from hudi_ds.index.record_level import record_index_locations
    from hudi_ds.layout.hfile import read_hfile
    from tests.conftest import assert_rows, hudi_rs_table

    root = tmp_path / "t"
    opts = {
        **_rli_options(table_type, version),
        "hoodie.index.type": "RECORD_INDEX",
        "hoodie.metadata.compact.max.delta.commits": "2",
    }
    hudi_ds.write(str(root), key_rows(list(range(12)), ["p0", "p1", "p2"] * 4, 1), opts)
    model = {f"k{i}": ["p0", "p1", "p2"][i % 3] for i in range(12)}
    folder = root / ".hoodie" / "metadata" / RECORD_INDEX_PARTITION
    for step in range(2, 6):
        new = [100 + step, step]
        HudiTable(str(root), opts).upsert(key_rows(new, ["p1", "p1"], step))
        model[f"k{100 + step}"] = "p1"
        model.setdefault(f"k{step}", "p1")
        if step % 3 == 0:
            HudiTable(str(root), opts).delete(key_rows([step + 5], ["p0"], step))
            model.pop(f"k{step + 5}", None)
        stored = assert_index_true(root)
        assert {k: loc.partition for k, loc in stored.items()} == model
    bases: dict[str, list[str]] = {}
    for f in folder.iterdir():
        b = parse_base_file_name(f.name)
        if b is not None:
            bases.setdefault(b.file_id, []).append(f.name)
    assert len(bases) == 10 and all(len(names) == 2 for names in bases.values()), bases
    logs = [f.name for f in folder.iterdir() if parse_log_file_name(f.name) is not None]
    assert len(logs) < 10 * 5, "old slices are cleaned"
    # a compacted base file: the live keys of its file group, each naming the file
    stored = stored_record_index(root)
    name = max(bases[file_group_id(0)])
    hf = read_hfile((folder / name).read_bytes())
    schema = hf.file_info["schema"].decode()
    want = sorted(k for k in stored if file_group_indexes(pa.array([k]), 10)[0] == 0)
    assert [k.decode() for k in hf.keys] == sorted(want, key=str.encode)
    assert all(
        decode_value(v, schema) == stored[k.decode()]
        for k, v in zip(hf.keys, hf.values, strict=True)
    )
    assert encode_value(stored[want[0]], schema, name) == hf.values[0]
    got = record_index_locations(Storage(str(root)), [*model, "k999"])
    assert got == stored
    cols = ["id", "_hoodie_partition_path"]  # (an update keeps its key where it lives)
    rows = [(k, p) for k, p in model.items()]
    assert_rows(hudi_ds.read(str(root), columns=cols), rows, cols)
    for md in ("true", "false"):
        assert_rows(hudi_rs_table(str(root), {"hoodie.metadata.enable": md}), rows, cols)


@pytest.mark.parametrize(("spec", "before"), [("metadata:1", 2), ("metadata:2", 4)])
def test_killed_mdt_compaction_of_the_record_index(spec: str, before: int, tmp_path: Path) -> None:
    """A write killed inside the MDT compaction (:1, the first one) or the clean after it
    (:2, the second one, which has a slice to clean): the next write undoes the pending MDT
    instant, compacts again, and the record index stays true."""
    import hudi_ds
    from hudi_ds.timeline.instant import COMMIT
    from tests.metadata.test_writer import _crash

    root = tmp_path / "t"
    opts = {**_rli_options("MERGE_ON_READ", 9), "hoodie.metadata.compact.max.delta.commits": "2"}
    hudi_ds.write(str(root), key_rows(list(range(8)), ["p0", "p1"] * 4, 1), opts)
    for k in range(1, before):
        hudi_ds.write(str(root), key_rows([3, 50 + k], ["p0", "p1"], 2), opts)
    mdt = Storage(str(root / ".hoodie" / "metadata"))
    done = len(Timeline.load(mdt, 2).completed().filter_actions(COMMIT))
    moved = key_rows([1, 60], ["p0", "p1"], 2)
    assert _crash(spec, lambda: hudi_ds.write(str(root), moved, opts)) == 137
    pending = Timeline.load(mdt, 2).pending()
    assert [i.action for i in pending] == ["compaction" if spec.endswith("1") else "clean"]
    hudi_ds.write(str(root), key_rows([2, 61], ["p1", "p0"], 3), opts)
    stored = assert_index_true(root, instants=True)
    assert not Timeline.load(mdt, 2).pending()
    assert len(Timeline.load(mdt, 2).completed().filter_actions(COMMIT)) > done
    assert "k60" not in stored and "k61" in stored and len(stored) == 8 + before


def test_file_group_count_follows_java_estimate() -> None:
    """Java ``HoodieTableMetadataUtil.estimateFileGroupCount``: the keys times the growth
    factor (a float product) over what a file group of the maximum size holds at 48 bytes a
    key, truncated, within the min / max counts; min == max fixes the count."""
    from hudi_ds.metadata.record_index_writer import RecordIndexSizing

    java = RecordIndexSizing()
    # 4e8 / 22369621 = 17.9: Java truncates
    assert java.file_groups(200_000_000) == 17
    assert java.file_groups(2_000_000_000) == 178
    assert java.file_groups(16_000_000) == 10  # (1.4: the minimum)
    assert java.file_groups(10**12) == 10000
    assert RecordIndexSizing(min_file_groups=3, max_file_groups=3).file_groups(10**12) == 3
    small = RecordIndexSizing(min_file_groups=1, max_file_group_bytes=48 * 100, growth_factor=1.5)
    assert small.file_groups(1000) == 15  # 1500 keys, 100 a group


def test_record_index_file_group_options(tmp_path: Path) -> None:
    """``hoodie.metadata.global.record.level.index.min/max.filegroup.count`` (Hudi 1.1's
    names; the 0.14 ones are aliases, as is ``...global.record.level.index.enable`` of
    ``hoodie.metadata.record.index.enable``) size a new record index; a minimum above the
    maximum is refused before anything is written."""
    import hudi_ds
    from hudi_ds.errors import ConfigError

    root = tmp_path / "t"
    opts = {
        **_rli_options("COPY_ON_WRITE", 9),
        "hoodie.metadata.record.index.min.filegroup.count": "3",
        "hoodie.metadata.global.record.level.index.max.filegroup.count": "3",
    }
    del opts["hoodie.metadata.record.index.enable"]
    opts["hoodie.metadata.global.record.level.index.enable"] = "true"
    bad = {**opts, "hoodie.metadata.record.index.min.filegroup.count": "4"}
    with pytest.raises(ConfigError, match=r"min\.filegroup\.count \(4\) exceeds"):
        hudi_ds.write(str(root), key_rows([1], ["p0"], 1), bad)
    assert not root.exists()
    hudi_ds.write(str(root), key_rows(list(range(20)), ["p0", "p1"] * 10, 1), opts)
    folder = root / ".hoodie" / "metadata" / RECORD_INDEX_PARTITION
    ids = {p.file_id for f in folder.iterdir() if (p := parse_base_file_name(f.name))}
    assert ids == {file_group_id(i) for i in range(3)}
    assert len(assert_index_true(root, instants=True)) == 20


def test_record_index_hfiles_have_small_blocks(tmp_path: Path) -> None:
    """hudi_ds writes the record index's HFiles with 64 KiB data blocks (Java: 1 MiB, some
    11k keys a block), so that looking up one key inflates one small block."""
    import hudi_ds
    from hudi_ds.layout.hfile import _open
    from hudi_ds.layout.hfile_lookup import lookup_hfile
    from hudi_ds.log.reader import scan_log_bytes

    root = tmp_path / "t"
    opts = {
        **_rli_options("MERGE_ON_READ", 9),
        "hoodie.metadata.record.index.min.filegroup.count": "1",
        "hoodie.metadata.record.index.max.filegroup.count": "1",
    }
    hudi_ds.write(str(root), key_rows(list(range(3000)), ["p0", "p1"] * 1500, 1), opts)
    folder = root / ".hoodie" / "metadata" / RECORD_INDEX_PARTITION
    blocks = [
        b
        for f in sorted(folder.glob(".record-index-0000-0_*"))
        for b in scan_log_bytes(f.read_bytes(), str(f)).blocks
        if b.block_type.name == "HFILE_DATA"
    ]
    (block,) = blocks
    found, _, decoded = lookup_hfile(bytes(block.content), [b"k1234"])
    assert set(found) == {b"k1234"} and decoded == 1
    o = _open(bytes(block.content))
    assert len(o.entries) >= 3  # 3,000 keys: several blocks
    assert max(s for _, s, _ in o.entries) <= 64 * 1024 + 4096
