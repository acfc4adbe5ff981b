"""hoodie.properties: Java properties syntax, checksum, typed accessors, on every fixture."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

import hudi_ds
from hudi_ds.errors import ConfigError, CorruptFileError, TableExistsError, TableNotFoundError
from hudi_ds.faults import ENV as CRASH_ENV
from hudi_ds.faults import EXIT_CODE
from hudi_ds.index import BucketLayout, Index, IndexType
from hudi_ds.schema.meta import with_meta_fields
from hudi_ds.storage import Storage
from hudi_ds.table_config import (
    COMMIT_TIME_ORDERING,
    EVENT_TIME_ORDERING,
    PROPS_BACKUP,
    PROPS_FILE,
    MergeMode,
    TableConfig,
    TableProperty,
    TableType,
    format_properties,
    parse_properties,
    recover_table_config,
    table_checksum,
    update_table_config,
)
from hudi_ds.table_create import (
    TABLE_FOLDERS,
    NewTable,
    check_path_is_free,
    create_table,
    table_properties,
)
from tests.conftest import assert_rows, hudi_rs_table, spawn_python, table_options
from tests.fixtures import fixture_names, fixture_table


@pytest.mark.parametrize("name", fixture_names())
def test_fixture_properties_parse_and_checksum(name: str, tmp_path_factory) -> None:
    root = fixture_table(name, tmp_path_factory)
    cfg = TableConfig.load(Storage(str(root)))
    assert cfg.validate_checksum()
    assert cfg.table_version in (6, 8, 9)
    assert cfg.timeline_layout_version == (1 if cfg.table_version == 6 else 2)
    schema = cfg.create_schema
    assert schema is None or schema.startswith("{")  # \: escapes were undone
    # merge mode as the fixture README states it
    expected = COMMIT_TIME_ORDERING if "v6" in name or "0x" in name else EVENT_TIME_ORDERING
    if name in ("cow_v8_empty",):
        expected = COMMIT_TIME_ORDERING
    assert cfg.merge_mode == expected


def test_checksum_known_value() -> None:
    # hoodie.table.checksum of fixture cow_v9_txns_simple_nometa (database 'default')
    assert table_checksum("v9_txns_cow_simple_nometa", "default") == 2616127535


@given(
    st.dictionaries(
        st.text(min_size=1).filter(lambda k: k.strip() == k and "\n" not in k),
        st.text(),
        max_size=8,
    )
)
def test_properties_round_trip(props: dict[str, str]) -> None:
    assert parse_properties(format_properties(props)) == props


def test_java_syntax_variants() -> None:
    text = "# c\n! c2\na=1\nb : 2\nc 3\nlong = x\\\n   y\nesc=a\\:b\\=c\\\\d\\u00e9\n"
    assert parse_properties(text) == {
        "a": "1",
        "b": "2",
        "c": "3",
        "long": "xy",
        "esc": "a:b=c\\dé",
    }


def test_save_and_load(tmp_path: Path) -> None:
    st_ = Storage(str(tmp_path))
    cfg = TableConfig({"hoodie.table.name": "t", "hoodie.table.type": "MERGE_ON_READ"})
    cfg.save(st_)
    back = TableConfig.load(st_)
    assert back.is_mor and back.validate_checksum()
    assert back.props["hoodie.table.checksum"] == str(table_checksum("t"))


def test_missing_table(tmp_path: Path) -> None:
    with pytest.raises(TableNotFoundError):
        TableConfig.load(Storage(str(tmp_path)))


# ------------------------------------------------------------------ declared table properties
def test_table_property_reads_and_writes() -> None:
    flag = TableProperty("k.flag", "false")
    assert flag.of({}) == "false" and not flag.flag({}) and flag.flag({"k.flag": "true"})
    listed = TableProperty("k.list", "")
    assert listed.items({"k.list": "a, b,,c"}) == ["a", "b", "c"] and listed.items({}) == []
    assert TableProperty("k.none").of({}) is None
    assert flag.entry(True) == ("k.flag", "true")
    assert listed.entry(("a", "b")) == ("k.list", "a,b")
    assert TableProperty("k.n").entry(6) == ("k.n", "6")
    cfg = TableConfig({"hoodie.table.name": "t"})
    assert cfg.get(TableConfig.ARCHIVELOG_FOLDER) == "archived" == cfg.archive_folder
    assert cfg.get(TableConfig.ARCHIVELOG_FOLDER, "x") == "x"
    assert cfg.get("hoodie.archivelog.folder") is None
    cfg.props[TableConfig.RECORD_MERGER_STRATEGY.key] = "v6-id"
    assert cfg.merge_strategy_id == "v6-id"
    cfg.props[TableConfig.RECORD_MERGE_STRATEGY_ID.key] = "v8-id"
    assert cfg.merge_strategy_id == "v8-id"


NEW = NewTable(
    table_name="my-table",
    table_type="MERGE_ON_READ",
    record_key_fields=("id", "k2"),
    partition_fields=("city",),
    hive_style=True,
    url_encode=False,
    complex_key=True,
    index_properties=Index(IndexType.BUCKET, BucketLayout(4, ("id",))).table_properties(),
    ordering_field="ts",
    database_name="db",
    merge_properties={"hoodie.compaction.payload.class": "P"},
)
SCHEMA = with_meta_fields(pa.schema([("id", pa.string()), ("k2", pa.int64()), ("ts", pa.int64())]))


def test_new_table_properties_read_back() -> None:
    props = table_properties(NEW, SCHEMA)
    cfg = TableConfig(props)
    assert cfg.table_name == "my-table" and cfg.table_type == "MERGE_ON_READ"
    assert cfg.table_version == 6 and cfg.timeline_layout_version == 1
    assert cfg.record_key_fields == ["id", "k2"] and cfg.partition_fields == ["city"]
    assert cfg.hive_style_partitioning and not cfg.url_encode_partitions
    assert cfg.key_generator == "COMPLEX" and cfg.complex_record_key
    assert cfg.ordering_fields == ["ts"] and cfg.payload_class == "P"
    assert cfg.populate_meta_fields and cfg.base_file_format == "PARQUET"
    assert cfg.timeline_timezone == "UTC" and cfg.archive_folder == "archived"
    assert props["hoodie.database.name"] == "db"
    assert props["hoodie.bucket.index.num.buckets"] == "4"
    assert props["hoodie.bucket.index.hash.field"] == "id"
    assert props["hoodie.index.type"] == "BUCKET"
    schema = cfg.create_schema or ""
    assert '"name":"my_table_record"' in schema and "_hoodie_commit_time" not in schema
    # the key generator follows the keys
    simple = dataclasses.replace(NEW, complex_key=False, record_key_fields=("id",))
    assert TableConfig(table_properties(simple, SCHEMA)).key_generator == "SIMPLE"
    unpartitioned = dataclasses.replace(NEW, partition_fields=(), database_name=None)
    props = table_properties(unpartitioned, SCHEMA)
    assert TableConfig(props).key_generator == "NON_PARTITION"
    assert "hoodie.database.name" not in props
    with pytest.raises(ConfigError, match="hoodie.table.name"):
        table_properties(dataclasses.replace(NEW, table_name=""), SCHEMA)


def test_create_table(tmp_path: Path) -> None:
    storage = Storage(str(tmp_path / "t"))
    check_path_is_free(storage)  # missing folder
    cfg = create_table(storage, NEW, SCHEMA)
    assert cfg.validate_checksum() and cfg.props["hoodie.table.checksum"]
    assert TableConfig.load(storage).props == cfg.props
    assert all((tmp_path / "t" / d).is_dir() for d in TABLE_FOLDERS)
    with pytest.raises(TableExistsError, match="meanwhile"):
        create_table(storage, NEW, SCHEMA)


def test_check_path_is_free(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "x.csv").write_text("1")
    with pytest.raises(TableExistsError, match="x.csv"):
        check_path_is_free(Storage(str(tmp_path / "data")))
    with pytest.raises(TableExistsError, match="is a file"):
        check_path_is_free(Storage(str(tmp_path / "data" / "x.csv")))
    (tmp_path / "empty" / ".hoodie").mkdir(parents=True)
    check_path_is_free(Storage(str(tmp_path / "empty")))


# ------------------------------------------------------------------ updates: backup-file protocol
MDT_KEY = "hoodie.table.metadata.partitions"


def _table(tmp_path: Path) -> tuple[str, Storage]:
    """A table hudi_ds wrote (two rows), its config as created."""
    path = str(tmp_path / "t")
    data = pa.table({"id": ["a", "b"], "ts": [1, 2], "p": ["x", "y"]})
    hudi_ds.write(path, data, table_options("t", partition="p"))
    return path, Storage(path)


ROWS = [("a", 1, "x"), ("b", 2, "y")]


def test_update_sets_and_deletes(tmp_path: Path) -> None:
    path, storage = _table(tmp_path)
    before = TableConfig.load(storage).props
    new = update_table_config(storage, {MDT_KEY: "files", "x.key": "a=b:c\\d é"}, ["nope"])
    assert new.props == {**before, MDT_KEY: "files", "x.key": "a=b:c\\d é"}
    assert TableConfig.load(storage).props == new.props
    assert not storage.exists(PROPS_BACKUP)
    text = storage.read_text(PROPS_FILE)
    assert "x.key=a\\=b\\:c\\\\d \\u00E9\n" in text  # Java Properties escapes
    back = update_table_config(storage, deletes=[MDT_KEY, "x.key"])
    assert back.props == before and TableConfig.load(storage).props == before
    assert_rows(hudi_ds.read(path), ROWS, ["id", "ts", "p"])
    assert_rows(hudi_rs_table(path), ROWS, ["id", "ts", "p"])


def test_update_renames_with_fresh_checksum(tmp_path: Path) -> None:
    _, storage = _table(tmp_path)
    new = update_table_config(storage, {"hoodie.table.name": "u", "hoodie.database.name": "db"})
    loaded = TableConfig.load(storage)
    assert loaded.props == new.props and loaded.validate_checksum()
    assert loaded.props["hoodie.table.checksum"] == str(table_checksum("u", "db"))


@pytest.mark.parametrize(
    ("updates", "deletes", "match"),
    [
        ({"hoodie.table.checksum": "1"}, [], "computed"),
        ({}, ["hoodie.table.checksum"], "computed"),
        ({}, ["hoodie.table.name"], "hoodie.table.name"),
        ({"hoodie.table.name": " "}, [], "hoodie.table.name"),
        ({"k": "1"}, ["k"], "both set and deleted"),
        ({"": "1"}, [], "key ''"),
        ({"k": 1}, [], "value of k must be a string"),
    ],
)
def test_update_refuses_bad_input(tmp_path: Path, updates, deletes, match) -> None:
    _, storage = _table(tmp_path)
    before = storage.read_bytes(PROPS_FILE)
    with pytest.raises(ConfigError, match=match):
        update_table_config(storage, updates, deletes)
    assert storage.read_bytes(PROPS_FILE) == before and not storage.exists(PROPS_BACKUP)


def test_update_without_table(tmp_path: Path) -> None:
    with pytest.raises(TableNotFoundError):
        update_table_config(Storage(str(tmp_path)), {"k": "v"})


UPDATER = r"""
import sys
from hudi_ds.storage import Storage
from hudi_ds.table_config import update_table_config
update_table_config(Storage(sys.argv[1]), {"x.new": "1"}, ["x.old"])
print("survived")
"""


@pytest.mark.parametrize("step", [1, 2, 3, 4, 5])
def test_update_crash_at_each_step(tmp_path: Path, monkeypatch, step: int) -> None:
    """Killed at each step, the table reads with the old or the new config; the next update
    recovers (hoodie.properties valid, no backup left) and hudi-rs reads the table."""
    path, storage = _table(tmp_path)
    old = update_table_config(storage, {"x.old": "0"}).props
    new = {**{k: v for k, v in old.items() if k != "x.old"}, "x.new": "1"}
    monkeypatch.setenv(CRASH_ENV, f"table_config:{step}")
    proc = spawn_python(UPDATER, path)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == EXIT_CODE, (out, err)
    monkeypatch.delenv(CRASH_ENV)
    main, backup = storage.exists(PROPS_FILE), storage.exists(PROPS_BACKUP)
    # old config up to the rename of the new file, the new one from then on
    expected = new if step == 5 else old
    assert (main, backup) == {
        1: (True, False),
        2: (True, True),
        3: (False, True),
        4: (False, True),
        5: (True, True),
    }[step]
    assert TableConfig.load(storage).props == expected
    assert hudi_ds.HudiTable(path).config.props == expected
    assert_rows(hudi_ds.read(path), ROWS, ["id", "ts", "p"])
    # recovery: the main file restored from the backup where it is missing, the backup gone
    assert recover_table_config(storage) == (step in (3, 4))
    assert not storage.exists(PROPS_BACKUP)
    assert TableConfig.load(storage).props == expected
    assert recover_table_config(storage) is False  # idempotent
    # the next update applies on top of what survived
    final = update_table_config(storage, {"k": "v"})
    assert final.props == {**expected, "k": "v"} and not storage.exists(PROPS_BACKUP)
    assert_rows(hudi_rs_table(path), ROWS, ["id", "ts", "p"])
    hudi_ds.write(path, pa.table({"id": ["c"], "ts": [3], "p": ["x"]}), table_options("t"))
    assert_rows(hudi_rs_table(path), [*ROWS, ("c", 3, "x")], ["id", "ts", "p"])


def test_update_prefers_valid_backup_over_damaged_main(tmp_path: Path) -> None:
    """A main file torn by a writer without atomic rename (Java's create on HDFS) loses to the
    backup; Java's recoverIfNeeded would keep the torn file and delete the backup."""
    _, storage = _table(tmp_path)
    good = storage.read_bytes(PROPS_FILE)
    storage.write_bytes(PROPS_BACKUP, good)
    storage.write_bytes(PROPS_FILE, good[: len(good) // 3])
    new = update_table_config(storage, {"k": "v"})
    assert new.props == {**parse_properties(good.decode()), "k": "v"}
    assert TableConfig.load(storage).props == new.props and not storage.exists(PROPS_BACKUP)


def test_recover_with_nothing_valid(tmp_path: Path) -> None:
    _, storage = _table(tmp_path)
    good = storage.read_bytes(PROPS_FILE)
    storage.write_bytes(PROPS_FILE, good.replace(b"checksum=", b"checksum=9"))
    storage.write_bytes(PROPS_BACKUP, b"\xff\xfe")
    with pytest.raises(CorruptFileError, match="hoodie.properties"):
        recover_table_config(storage)
    with pytest.raises(CorruptFileError):
        update_table_config(storage, {"k": "v"})
    assert storage.exists(PROPS_BACKUP)  # nothing deleted


class _RacingStorage(Storage):
    """Storage whose first ``misses`` reads of either config file find nothing, as a reader
    between an update's steps does (main file deleted, then the backup deleted)."""

    def __init__(self, base_uri: str, misses: int) -> None:
        super().__init__(base_uri)
        self.misses = misses

    def read_bytes(self, rel: str) -> bytes:
        if rel in (PROPS_FILE, PROPS_BACKUP) and self.misses > 0:
            self.misses -= 1
            raise FileNotFoundError(rel)
        return super().read_bytes(rel)


def test_load_retries_a_config_caught_between_update_steps(tmp_path: Path) -> None:
    path, storage = _table(tmp_path)
    props = TableConfig.load(storage).props
    assert TableConfig.load(_RacingStorage(path, misses=2)).props == props  # one pass missed
    assert TableConfig.load(_RacingStorage(path, misses=6)).props == props  # three passes
    with pytest.raises(TableNotFoundError):  # it gives up
        TableConfig.load(_RacingStorage(path, misses=100))
    with pytest.raises(TableNotFoundError):  # no .hoodie: no retry
        TableConfig.load(_RacingStorage(str(tmp_path / "none"), misses=0))


def test_readers_during_updates_see_old_or_new(tmp_path: Path) -> None:
    """Readers racing a stream of updates always get a valid config, never one older than
    what they read before."""
    import threading

    _, storage = _table(tmp_path)
    update_table_config(storage, {"x.n": "0"})
    done = threading.Event()

    def updates() -> None:
        try:
            for i in range(1, 40):
                update_table_config(storage, {"x.n": str(i)})
        finally:
            done.set()

    writer = threading.Thread(target=updates)
    writer.start()
    seen = [0]
    while not done.is_set():
        cfg = TableConfig.load(storage)
        assert cfg.validate_checksum()
        seen.append(int(cfg.props["x.n"]))
    writer.join()
    assert seen == sorted(seen) and len(seen) > 2
    assert TableConfig.load(storage).props["x.n"] == "39" and not storage.exists(PROPS_BACKUP)


#: what a table hudi_ds creates records beyond Hudi's own keys: its index and bucket layout
#: (Java ignores them), and defaults Java leaves implicit
HUDI_DS_EXTRAS = {
    "hoodie.index.type",
    "hoodie.bucket.index.num.buckets",
    "hoodie.bucket.index.hash.field",
    "hoodie.populate.meta.fields",
    "hoodie.table.base.file.format",
    "hoodie.table.timeline.timezone",
}


@pytest.mark.parametrize(
    ("version", "fixture", "strategy_recorded"),
    [(8, "cow_v8_complexkeygen_hivestyle", True), (9, "cow_v9_txns_complex_nometa", False)],
)
def test_new_1x_table_properties_as_hudi_writes_them(
    version: int, fixture: str, strategy_recorded: bool, tmp_path_factory, tmp_path: Path
) -> None:
    """A new version-8/9 table records the keys the fixtures of Hudi 1.0 / 1.1 show for the same
    kind of table (COW, complex keys, partitioned, event-time ordering), with their values where
    they do not depend on the data; version 9 adds the strategy id Hudi 1.1's
    ``inferMergingConfigsForV9TableCreation`` records (the 1.2-written fixture omits it)."""
    from hudi_ds.merge.modes import spec_for_mode

    theirs = TableConfig.load(Storage(str(fixture_table(fixture, tmp_path_factory)))).props
    spec = spec_for_mode("EVENT_TIME_ORDERING", ("ts",))
    new = dataclasses.replace(
        NEW,
        table_type="COPY_ON_WRITE",
        database_name="default",
        merge_properties=spec.table_properties(version),
        table_version=version,
    )
    ours = table_properties(new, SCHEMA)
    expected = set(theirs) | HUDI_DS_EXTRAS | {"hoodie.table.create.schema"}
    if not strategy_recorded:
        expected.add("hoodie.record.merge.strategy.id")
    assert set(ours) | {"hoodie.table.checksum"} == expected
    same = (
        "hoodie.table.version",
        "hoodie.table.initial.version",
        "hoodie.timeline.layout.version",
        "hoodie.timeline.path",
        "hoodie.timeline.history.path",
        "hoodie.archivelog.folder",
        "hoodie.table.keygenerator.type",
        "hoodie.record.merge.mode",
        "hoodie.table.format",
        "hoodie.compaction.payload.class",
        "hoodie.datasource.write.hive_style_partitioning",
        "hoodie.datasource.write.drop.partition.columns",
    )
    assert {k: ours.get(k) for k in same} == {k: theirs.get(k) for k in same}
    if strategy_recorded:
        assert ours["hoodie.record.merge.strategy.id"] == theirs["hoodie.record.merge.strategy.id"]
    # v8 names the ordering field precombine, v9 ordering fields
    ordering = "hoodie.table.precombine.field" if version == 8 else "hoodie.table.ordering.fields"
    assert ours[ordering] == "ts" and ordering in theirs
    cfg = TableConfig(ours)
    assert (cfg.table_version, cfg.timeline_layout_version, cfg.timeline_path) == (
        version,
        2,
        ".hoodie/timeline",
    )
    assert (cfg.merge_mode, cfg.ordering_fields, cfg.key_generator) == (
        "EVENT_TIME_ORDERING",
        ["ts"],
        "COMPLEX",
    )


@pytest.mark.parametrize("version", [8, 9])
def test_create_1x_table_folders(version: int, tmp_path: Path) -> None:
    storage = Storage(str(tmp_path / "t"))
    create_table(storage, dataclasses.replace(NEW, table_version=version), SCHEMA)
    hoodie = tmp_path / "t" / ".hoodie"
    assert (hoodie / "timeline" / "history").is_dir() and not (hoodie / "archived").exists()
    assert all((tmp_path / "t" / d).is_dir() for d in TABLE_FOLDERS)
    with pytest.raises(ConfigError, match="hoodie.write.table.version=7"):
        table_properties(dataclasses.replace(NEW, table_version=7), SCHEMA)


def test_table_type_and_merge_mode_are_enums_of_hudi_spellings() -> None:
    cfg = TableConfig({"hoodie.table.name": "t", "hoodie.table.type": "merge_on_read"})
    assert cfg.table_type is TableType.MERGE_ON_READ and cfg.is_mor
    assert TableConfig({"hoodie.table.name": "t"}).table_type is TableType.COPY_ON_WRITE
    with pytest.raises(ConfigError, match="hoodie.table.type='MOR' .in hoodie.properties"):
        TableConfig({"hoodie.table.name": "t", "hoodie.table.type": "MOR"}).table_type  # noqa: B018
    mode = TableConfig({"hoodie.table.name": "t", "hoodie.record.merge.mode": "custom"}).merge_mode
    assert mode is MergeMode.CUSTOM and str(mode) == "CUSTOM"
