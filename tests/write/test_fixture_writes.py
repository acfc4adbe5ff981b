"""Upserts and deletes into the real Apache Hudi tables of table version 6 (the fixtures).

For every version-6 fixture hudi_ds writes: unzip it, upsert (updates of existing keys, one
with an older ordering value; new keys; a new partition where partitioned), upsert again, then
delete some keys -- read back by hudi_ds and by hudi-rs equal to the independent model of
tests/write/fixture_model.py, full rows. The fixtures hudi_ds refuses get a clear error before
anything is written and stay byte-for-byte unchanged. Resolution against existing tables
(properties the table does not record, index detection, contradictions) is tested here too.
"""

from __future__ import annotations

import json
import re
import shutil
import zipfile
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import hudi_ds
from hudi_ds.api import HudiTable
from hudi_ds.config import Options
from hudi_ds.errors import ConfigError, SchemaError, UnsupportedError
from hudi_ds.services import compaction
from hudi_ds.services.base import ServiceContext
from hudi_ds.table_config import TableConfig
from hudi_ds.timeline.view import TableState
from hudi_ds.write.options import resolve_options
from tests.conftest import hudi_rs_table
from tests.fixtures import FIXTURES_DIR, GOLDEN_DIR, require_fixtures
from tests.write.fixture_model import (
    REFUSED,
    TIMESTAMP_RECORDED_AS_STRING,
    WRITABLE,
    WRITABLE_1X,
    WRITABLE_1X_TIMESTAMP,
    WRITABLE_LANCE,
    check_merge_mode,
    check_payload,
    data_row_set,
    read_props,
    rows_without_keys,
    scenario,
    tree_hashes,
)
from tests.write.test_matrix import assert_no_meta_values


def unzip(name: str, dest: Path) -> Path:
    """A fresh, writable copy of fixture ``name`` under ``dest``; its table root."""
    require_fixtures()
    with zipfile.ZipFile(FIXTURES_DIR / f"{name}.zip") as zf:
        zf.extractall(dest)
    roots = [p for p in dest.iterdir() if p.is_dir() and p.name != "__MACOSX"]
    assert len(roots) == 1, roots
    return roots[0]


def fixture_names(version_pattern: str = "6", metadata_table: bool | None = None) -> list[str]:
    """Every fixture whose hoodie.properties says a table version matching
    ``version_pattern``; ``metadata_table``: only those with (True) or without (False) a
    metadata table (``.hoodie/metadata``), None: all."""
    if not FIXTURES_DIR.is_dir():
        return []
    out = []
    for z in sorted(FIXTURES_DIR.glob("*.zip")):
        with zipfile.ZipFile(z) as zf:
            names = zf.namelist()
            props = [
                n
                for n in names
                if n.endswith(".hoodie/hoodie.properties")
                and "/metadata/" not in n
                and not n.startswith("__MACOSX")
            ]
            text = zf.read(props[0]).decode()
            has_mdt = any("/.hoodie/metadata/" in n for n in names)
        if not re.search(rf"^hoodie\.table\.version=({version_pattern})$", text, re.M):
            continue
        if metadata_table is None or metadata_table == has_mdt:
            out.append(z.stem)
    return out


def test_every_v6_fixture_is_covered() -> None:
    require_fixtures()
    assert sorted(fixture_names("6")) == sorted([*WRITABLE, *REFUSED])


def test_every_1x_fixture_without_metadata_table_is_covered() -> None:
    """Versions 8 and 9: each fixture without a metadata table is written here (the ones with
    a metadata table are the metadata table writer's, the Lance ones
    tests/write/test_lance_writes.py's)."""
    require_fixtures()
    lance = set(WRITABLE_LANCE)
    assert sorted(set(fixture_names("8|9", metadata_table=False)) - lance) == sorted(WRITABLE_1X)
    assert lance <= set(fixture_names("9"))


@pytest.mark.parametrize("name", sorted(WRITABLE))
def test_upsert_and_delete_into_v6_fixture(name: str, tmp_path: Path) -> None:
    fx = WRITABLE[name]
    root = unzip(name, tmp_path)
    check_payload(read_props(root))
    sc = scenario(name, fx, HudiTable(str(root)).read())
    options = dict(fx.options)
    table = HudiTable(str(root))
    table.upsert(sc.upsert, options)
    table.upsert(sc.upsert2, options)
    table.delete(sc.delete, options)
    got = hudi_ds.read(str(root))
    assert data_row_set(got) == sc.expected
    assert data_row_set(hudi_rs_table(str(root))) == sc.expected
    # the table keeps its configuration: no index or bucket keys added, still version 6
    props = read_props(root)
    assert props["hoodie.table.version"] == "6"
    assert not any(k.startswith(("hoodie.index.", "hoodie.bucket.")) for k in props)
    if not fx.meta_fields:  # written as Java writes such tables: meta columns, null values
        assert props["hoodie.populate.meta.fields"] == "false"
        assert_no_meta_values(root)


def test_compaction_of_mor_fixture_without_meta_fields(tmp_path: Path) -> None:
    """A MERGE_ON_READ table without meta fields compacts: the log records are keyed by their
    record key field, the new base files hold the meta columns with null values (the file
    name aside) as Java's compaction writes them, and every reader still sees the model."""
    name = "mor_parquet_v6_simplekeygen_hivestyle_no_metafields"
    fx = WRITABLE[name]
    root = unzip(name, tmp_path)
    sc = scenario(name, fx, HudiTable(str(root)).read())
    table = HudiTable(str(root))
    table.upsert(sc.upsert)
    table.upsert(sc.upsert2)
    table.delete(sc.delete)
    logs = [p for p in root.rglob(".*.log.*")]
    assert logs  # the updates went to logs: there is something to compact
    opts = {"hoodie.compaction.strategy": "UnBoundedCompactionStrategy"}
    ctx = ServiceContext.open(str(root), {**opts, "hoodie.compact.inline.max.delta.commits": "1"})
    instant = compaction.schedule_compaction(ctx)
    assert instant is not None
    (res,) = compaction.run_compaction(ServiceContext.open(str(root), opts), instant)
    assert res.log_files == len(logs)
    assert data_row_set(hudi_ds.read(str(root))) == sc.expected
    assert data_row_set(hudi_rs_table(str(root))) == sc.expected
    compacted = [p for p in root.rglob(f"*_{instant}.parquet")]
    assert len(compacted) == res.operations
    assert_no_meta_values(root)
    ro = hudi_ds.read(str(root), {"hoodie.datasource.query.type": "read_optimized"})
    assert data_row_set(ro) == sc.expected  # every file group compacted


@pytest.mark.parametrize("name", sorted(WRITABLE_1X))
def test_upsert_and_delete_into_1x_fixture(name: str, tmp_path: Path) -> None:
    """Versions 8 and 9 without a metadata table: the same scenario, merged by the table's
    merge mode (event time: the late update loses); the table keeps its version, timeline
    layout 2 (completed instants named ``<requested>_<completion>.<action>`` with Avro
    metadata) and, on MOR, v8 log naming (each log file carries its own deltacommit)."""
    fx = WRITABLE_1X[name]
    root = unzip(name, tmp_path)
    before = read_props(root)
    check_merge_mode(before, fx)
    sc = scenario(name, fx, HudiTable(str(root)).read())
    options = dict(fx.options)
    table = HudiTable(str(root))
    table.upsert(sc.upsert, options)
    table.upsert(sc.upsert2, options)
    table.delete(sc.delete, options)
    assert data_row_set(hudi_ds.read(str(root))) == sc.expected
    assert data_row_set(hudi_rs_table(str(root))) == sc.expected
    assert data_row_set(hudi_rs_table(str(root), {"hoodie.metadata.enable": "false"})) == (
        sc.expected
    )
    props = read_props(root)
    assert {k: v for k, v in props.items() if k != "hoodie.table.checksum"} == {
        k: v for k, v in before.items() if k != "hoodie.table.checksum"
    }  # hoodie.properties untouched (no index or bucket keys added)
    timeline = root / ".hoodie" / "timeline"
    ours = sorted(
        f.name
        for f in timeline.iterdir()
        if f.name.endswith("commit") and f.name[:17] > _latest_fixture_instant(name)
    )
    # a MOR table compacts after its fifth delta commit (the writers' default): the fixture's
    # delta commits and our three may reach it -- a compaction completes as a commit
    compacted = [n for n in ours if "mor" in name and n.endswith(".commit")]
    assert len(ours) - len(compacted) == 3 and len(compacted) <= 1, ours
    assert all(re.fullmatch(r"\d{17}_\d{17}\.\w+", n) for n in ours), ours
    assert all((timeline / n).read_bytes()[:4] == b"Obj\x01" for n in ours)
    logs = [p for p in root.rglob(".*.log.*") if p.name.split("_")[1][:17] in _times(ours)]
    for p in logs:  # a log file of ours: named with the deltacommit that wrote it, version 1
        assert re.fullmatch(r"\.[\w-]+_\d{17}\.log\.1_\d+-\d+-\d+", p.name), p.name
    if "mor" in name and fx.parts:
        assert logs  # the updates went to log files
    if not fx.meta_fields:  # written as Java writes such tables: meta columns, null values
        assert props["hoodie.populate.meta.fields"] == "false"
        assert_no_meta_values(root)


def drop_metadata_table(root: Path) -> None:
    """Remove the table's metadata table as Apache Hudi does for a write with
    ``hoodie.metadata.enable=false`` (``HoodieTableMetadataUtil.deleteMetadataTable``: the
    ``.hoodie/metadata`` folder goes, ``hoodie.table.metadata.partitions`` is cleared)."""
    shutil.rmtree(root / ".hoodie" / "metadata")
    path = root / ".hoodie" / "hoodie.properties"
    lines = path.read_text().splitlines(keepends=True)
    path.write_text(
        "".join(ln for ln in lines if not ln.startswith("hoodie.table.metadata.partitions"))
    )


@pytest.mark.parametrize("name", sorted(WRITABLE_1X_TIMESTAMP))
def test_upsert_and_delete_into_v9_timestamp_keygen_fixture(name: str, tmp_path: Path) -> None:
    """Hudi 1.1's TIMESTAMP key generator type (recorded as ``hoodie.table.keygenerator.type``
    with the DATE_STRING formats): partition paths as Java builds them, a new partition
    included, once the table has no metadata table. The fixture holds a key Hudi wrote twice
    (left alone by the scenario)."""
    fx = WRITABLE_1X_TIMESTAMP[name]
    root = unzip(name, tmp_path)
    drop_metadata_table(root)
    check_merge_mode(read_props(root), fx)
    sc = scenario(name, fx, HudiTable(str(root)).read())
    table = HudiTable(str(root))
    table.upsert(sc.upsert)
    table.upsert(sc.upsert2)
    table.delete(sc.delete)
    assert data_row_set(hudi_ds.read(str(root))) == sc.expected
    assert data_row_set(hudi_rs_table(str(root))) == sc.expected
    assert read_props(root)["hoodie.table.version"] == "9"


def _as_int64(rows: pa.Table, column: str) -> pa.Table:
    """``rows`` with ``column`` (epoch numbers read as strings) as the original int64."""
    return rows.set_column(rows.column_names.index(column), column, rows[column].cast(pa.int64()))


@pytest.mark.parametrize("as_read", [True, False], ids=["strings-as-read", "int64"])
@pytest.mark.parametrize("name", sorted(TIMESTAMP_RECORDED_AS_STRING))
def test_upsert_into_timestamp_keygen_fixture_recorded_as_string_refused(
    name: str, as_read: bool, tmp_path: Path
) -> None:
    """EPOCHMILLISECONDS / UNIX_TIMESTAMP fixtures whose schema Hudi's own Spark SQL
    UPDATE/DELETE turned to ``string`` (TIMESTAMP_RECORDED_AS_STRING): an upsert fails in Java
    whether the column comes as read or as the original int64; hudi_ds refuses both before
    writing anything, naming the column and the one way Hudi still writes such a table."""
    column = TIMESTAMP_RECORDED_AS_STRING[name]
    root = unzip(name, tmp_path)
    before = tree_hashes(root)
    rows = hudi_ds.read(str(root))
    assert rows.schema.field(column).type == pa.string()  # what Hudi's commit schema says
    # the table's files hold both: int64 (INSERT commits) and strings (the Spark SQL UPDATE)
    types = {
        str(pq.read_schema(p).field(column).type)
        for p in root.rglob("*.parquet")
        if ".hoodie" not in p.parts
    }
    assert types == {"int64", "string"}, types
    data = rows.drop_columns([c for c in rows.column_names if c.startswith("_hoodie_")])
    data = data.slice(0, 2)
    if not as_read:
        data = _as_int64(data, column)
    with pytest.raises(UnsupportedError, match=f"partition column '{column}'.*Spark SQL"):
        HudiTable(str(root)).upsert(data)
    assert tree_hashes(root) == before


@pytest.mark.parametrize("name", sorted(TIMESTAMP_RECORDED_AS_STRING))
def test_delete_from_timestamp_keygen_fixture_recorded_as_string(name: str, tmp_path: Path) -> None:
    """A delete builds its keys from the input's own schema in Java (HoodieSparkSqlWriter's
    DELETE branch), so the original int64 column deletes (the partition path built from the
    epoch value, the metadata table kept in step) and the strings as read are refused, naming
    the column, before anything is written. Read back by hudi_ds and by hudi-rs with and
    without the metadata table: the fixture's rows without the deleted keys."""
    column = TIMESTAMP_RECORDED_AS_STRING[name]
    root = unzip(name, tmp_path)
    before = tree_hashes(root)
    rows = hudi_ds.read(str(root))
    data = rows.drop_columns([c for c in rows.column_names if c.startswith("_hoodie_")])
    keys = data["txn_id"].to_pylist()
    single = [k for k in sorted(set(keys)) if keys.count(k) == 1]  # not the key Hudi wrote twice
    assert len(single) >= 3, keys
    gone = data.filter(pc.is_in(data["txn_id"], pa.array(single[-2:])))
    assert gone.num_rows == 2
    absent = gone.slice(0, 1).set_column(0, "txn_id", pa.array(["TXN-ABSENT"]))
    batch = pa.concat_tables([gone, absent])
    with pytest.raises(SchemaError, match=f"partition path field '{column}' has type string"):
        HudiTable(str(root)).delete(batch)
    assert tree_hashes(root) == before
    HudiTable(str(root)).delete(_as_int64(batch, column))
    expected = rows_without_keys(name, set(single[-2:]))
    assert data_row_set(hudi_ds.read(str(root))) == expected
    assert data_row_set(hudi_rs_table(str(root), {"hoodie.metadata.enable": "true"})) == expected
    assert data_row_set(hudi_rs_table(str(root), {"hoodie.metadata.enable": "false"})) == expected
    assert (root / ".hoodie" / "metadata" / "files").is_dir()  # kept, in step
    assert read_props(root)["hoodie.table.version"] == "9"


def _times(completed: list[str]) -> set[str]:
    return {n[:17] for n in completed}


def _latest_fixture_instant(name: str) -> str:
    """The latest requested time on the fixture's own timeline."""
    with zipfile.ZipFile(FIXTURES_DIR / f"{name}.zip") as zf:
        times = [
            m.group(1)
            for n in zf.namelist()
            if (m := re.search(r"/\.hoodie/timeline/(\d{17})[._]", n)) and "__MACOSX" not in n
        ]
    return max(times, default="0")


@pytest.mark.parametrize("operation", ["upsert", "delete"])
@pytest.mark.parametrize("name", sorted(REFUSED))
def test_refused_v6_fixture_stays_unchanged(name: str, operation: str, tmp_path: Path) -> None:
    match, options = REFUSED[name]
    root = unzip(name, tmp_path)
    before = tree_hashes(root)
    rows = hudi_ds.read(str(root))
    data = rows.drop_columns([c for c in rows.column_names if c.startswith("_hoodie_")])
    with pytest.raises(UnsupportedError, match=re.escape(match)):
        getattr(HudiTable(str(root)), operation)(data.slice(0, 2), options)
    assert tree_hashes(root) == before


AUTO_KEYED = "cow_0x_partitioned"


@pytest.mark.parametrize("mdt", [False, True], ids=["mdt-off", "mdt-on"])
def test_delete_as_read_from_auto_keyed_fixture(mdt: bool, tmp_path: Path) -> None:
    """Hudi 0.14 auto-generated record keys: rows as read are deleted by their
    _hoodie_record_key / _hoodie_partition_path (Java's Spark SQL DELETE FROM, a
    DELETE_PREPPED commit); base files are rewritten without them, the metadata table in step."""
    from tests.golden import golden_rows
    from tests.metadata.test_writer import assert_in_step

    root = unzip(AUTO_KEYED, tmp_path)
    before = hudi_ds.read(str(root))
    golden = golden_rows(GOLDEN_DIR / f"{AUTO_KEYED}.snapshot.jsonl")
    assert sorted(r["_hoodie_record_key"] for r in golden) == sorted(
        before.column("_hoodie_record_key").to_pylist()
    )
    doomed = pc.is_in(
        before.column("_hoodie_partition_path"), pa.array(["san_francisco", "chennai"])
    )
    gone = before.filter(doomed)
    assert 0 < gone.num_rows < before.num_rows
    # the doomed rows minus one partition's worth: a partition keeps live rows
    victims = gone.slice(0, gone.num_rows - 1)
    instant = HudiTable(str(root)).delete(victims, {"hoodie.metadata.enable": str(mdt).lower()})
    keys = pa.array(victims.column("_hoodie_record_key").to_pylist())
    expected = data_row_set(before.filter(pc.invert(pc.is_in(before["_hoodie_record_key"], keys))))
    assert len(expected) == before.num_rows - victims.num_rows
    meta = json.loads((root / ".hoodie" / f"{instant}.commit").read_text())
    assert meta["operationType"] == "DELETE_PREPPED"
    assert (
        sum(s["numDeletes"] for stats in meta["partitionToWriteStats"].values() for s in stats)
        == victims.num_rows
    )
    for enable in ("false", "true"):
        assert data_row_set(hudi_ds.read(str(root), {"hoodie.metadata.enable": enable})) == expected
        assert data_row_set(hudi_rs_table(str(root), {"hoodie.metadata.enable": enable})) == (
            expected
        )
    assert (root / ".hoodie" / "metadata").is_dir() == mdt
    if mdt:
        assert_in_step(root)
    assert "hoodie.table.recordkey.fields" not in read_props(root)


def test_insert_into_auto_keyed_fixture_generates_keys(tmp_path: Path) -> None:
    """Hudi 0.14 inserts into a table with auto-generated keys with new ones,
    ``<instant>_<partitionId>_<rowId>`` (AutoRecordGenWrapperKeyGenerator); the table keeps no
    record key fields, the new rows are read by hudi_ds and hudi-rs, and a delete finds them."""
    from tests.metadata.test_writer import assert_in_step

    root = unzip(AUTO_KEYED, tmp_path)
    before = hudi_ds.read(str(root))
    data = before.drop_columns([c for c in before.column_names if c.startswith("_hoodie_")])
    new = data.slice(0, 3)
    instant = HudiTable(str(root)).insert(new)
    after = hudi_ds.read(str(root))
    added = after.filter(pc.equal(after["_hoodie_commit_time"], instant))
    keys = sorted(added.column("_hoodie_record_key").to_pylist())
    assert keys == [f"{instant}_0_{i}" for i in range(3)]
    assert sorted(added.column("_hoodie_commit_seqno").to_pylist()) == keys
    assert data_row_set(added.select(new.column_names)) == data_row_set(new)
    assert data_row_set(after) == sorted([*data_row_set(before), *data_row_set(added)])
    for enable in ("false", "true"):
        assert data_row_set(hudi_rs_table(str(root), {"hoodie.metadata.enable": enable})) == (
            data_row_set(after)
        )
    assert_in_step(root)
    assert "hoodie.table.recordkey.fields" not in read_props(root)
    HudiTable(str(root)).delete(added.slice(0, 1))
    assert data_row_set(hudi_ds.read(str(root))) == sorted(
        [*data_row_set(before), *data_row_set(added.slice(1))]
    )
    assert_in_step(root)


def test_delete_without_meta_columns_from_auto_keyed_fixture_refused(tmp_path: Path) -> None:
    root = unzip(AUTO_KEYED, tmp_path)
    before = tree_hashes(root)
    rows = hudi_ds.read(str(root))
    data = rows.drop_columns(["_hoodie_record_key", "_hoodie_partition_path"])
    with pytest.raises(SchemaError, match="_hoodie_record_key.*as read from the table"):
        HudiTable(str(root)).delete(data.slice(0, 2))
    nulls = rows.set_column(
        rows.schema.get_field_index("_hoodie_record_key"),
        "_hoodie_record_key",
        pa.nulls(rows.num_rows, pa.string()),
    )
    with pytest.raises(SchemaError, match="_hoodie_record_key' holds [0-9]+ null"):
        HudiTable(str(root)).delete(nulls)
    assert tree_hashes(root) == before
    # an upsert of rows as read is still refused: no column addresses a row
    with pytest.raises(UnsupportedError, match="delete.*of rows as read from the table"):
        HudiTable(str(root)).upsert(rows.slice(0, 2))
    assert tree_hashes(root) == before


# --------------------------------------------------------------------------- resolution
def _strip_props(root: Path, *keys: str) -> None:
    path = root / ".hoodie" / "hoodie.properties"
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(ln for ln in lines if ln.split("=", 1)[0] not in keys))


def test_unrecorded_key_and_ordering_fields_come_from_the_writer(tmp_path: Path) -> None:
    """An older table without hoodie.table.recordkey.fields / precombine field: the writer's
    options fill them in (not a contradiction); without them the error names the key."""
    name = "cow_v6_simplekeygen_nonhivestyle"
    root = unzip(name, tmp_path)
    _strip_props(root, "hoodie.table.recordkey.fields", "hoodie.table.precombine.field")
    existing = HudiTable(str(root)).read()
    before = tree_hashes(root)
    data = existing.drop_columns([c for c in existing.column_names if c.startswith("_hoodie_")])
    with pytest.raises(ConfigError, match="'hoodie.datasource.write.recordkey.field' is required"):
        HudiTable(str(root)).upsert(data.slice(0, 1))
    assert tree_hashes(root) == before
    fx = WRITABLE[name]
    sc = scenario(name, fx, existing)
    options = {
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.precombine.field": "longField",
    }
    table = HudiTable(str(root))
    table.upsert(sc.upsert, options)
    table.upsert(sc.upsert2, options)
    table.delete(sc.delete, options)
    assert data_row_set(hudi_ds.read(str(root))) == sc.expected
    assert data_row_set(hudi_rs_table(str(root))) == sc.expected


def test_cow_table_without_payload_merges_with_the_writers(tmp_path: Path) -> None:
    """A Hudi 0.14 COW table records no payload class: the writer's decides (Java merges with
    hoodie.datasource.write.payload.class); with DefaultHoodieRecordPayload an update carrying
    an older ordering value loses to the stored record."""
    name = "cow_v6_simplekeygen_nonhivestyle"
    root = unzip(name, tmp_path)
    assert "hoodie.compaction.payload.class" not in read_props(root)
    fx = WRITABLE[name]
    sc = scenario(name, fx, HudiTable(str(root)).read(), event_time=True)
    options = {
        "hoodie.datasource.write.payload.class": (
            "org.apache.hudi.common.model.DefaultHoodieRecordPayload"
        )
    }
    table = HudiTable(str(root))
    table.upsert(sc.upsert, options)
    table.upsert(sc.upsert2, options)
    table.delete(sc.delete, options)
    assert data_row_set(hudi_ds.read(str(root))) == sc.expected
    assert data_row_set(hudi_rs_table(str(root))) == sc.expected
    # the second upsert's older record lost: its key keeps the first upsert's row
    older = sc.upsert2.to_pylist()[0]
    got = hudi_ds.read(str(root), filters=[("id", "=", older["id"])]).to_pylist()
    assert len(got) == 1 and got[0]["intField"] != older["intField"]
    assert "hoodie.compaction.payload.class" not in read_props(root)


def test_mor_table_keeps_its_recorded_payload(tmp_path: Path) -> None:
    root = unzip("mor_parquet_v6_simplekeygen_nonhivestyle", tmp_path)
    with pytest.raises(ConfigError, match="DefaultHoodieRecordPayload.*contradicts"):
        _resolve(
            root,
            {
                "hoodie.datasource.write.payload.class": (
                    "org.apache.hudi.common.model.DefaultHoodieRecordPayload"
                )
            },
        )


def _resolve(root: Path, options: dict[str, str]):  # type: ignore[no-untyped-def]
    state = TableState.open(str(root))
    return resolve_options(Options.of(options), state.config, str(root), state)


def test_contradictions_name_both_values(tmp_path: Path) -> None:
    root = unzip("cow_v6_simplekeygen_nonhivestyle", tmp_path)
    cases = {
        "hoodie.index.type": ("BUCKET", r"'BUCKET'.*'SIMPLE'"),
        "hoodie.datasource.write.recordkey.field": ("name", r"\['name'\].*\['id'\]"),
        "hoodie.datasource.write.partitionpath.field": ("shortField", r"shortField.*byteField"),
        "hoodie.datasource.write.precombine.field": ("intField", r"intField.*longField"),
        "hoodie.datasource.write.hive_style_partitioning": ("true", r"True.*False"),
    }
    for key, (value, pattern) in cases.items():
        with pytest.raises(ConfigError, match=f"{re.escape(key)}.*{pattern}"):
            _resolve(root, {key: value})
    # what the table records is used; SIMPLE <-> BLOOM only changes the lookup
    assert _resolve(root, {}).index.type == "SIMPLE"
    assert _resolve(root, {"hoodie.index.type": "BLOOM"}).index.type == "BLOOM"


def test_timestamp_keygen_needs_its_type_from_the_writer(tmp_path: Path) -> None:
    root = unzip("cow_v6_timebasedkeygen_nonhivestyle", tmp_path)
    with pytest.raises(ConfigError, match="'hoodie.keygen.timebased.timestamp.type' is required"):
        _resolve(root, {})
    # MIXED reads the strings with the input formats, as DATE_STRING does
    mixed = _resolve(root, {"hoodie.keygen.timebased.timestamp.type": "MIXED"})
    assert mixed.keys.timestamp is not None and mixed.keys.timestamp.input_formats
    # the older deltastreamer key is an alias
    r = _resolve(root, {"hoodie.deltastreamer.keygen.timebased.timestamp.type": "DATE_STRING"})
    assert r.keys.timestamp is not None and r.keys.timestamp.output_format == "yyyy/MM/dd/HH"


def test_unknown_key_generator_refused_unchanged(tmp_path: Path) -> None:
    root = unzip("cow_v6_simplekeygen_nonhivestyle", tmp_path)
    path = root / ".hoodie" / "hoodie.properties"
    path.write_text(
        path.read_text().replace(
            "org.apache.hudi.keygen.SimpleKeyGenerator", "com.example.ShardedKeyGenerator"
        )
    )
    before = tree_hashes(root)
    data = pa.table({"id": [1], "byteField": [10], "longField": [1]})
    with pytest.raises(UnsupportedError, match="ShardedKeyGenerator"):
        HudiTable(str(root)).upsert(data)
    assert tree_hashes(root) == before


def _bucket_options(name: str) -> dict[str, str]:
    return {
        "hoodie.table.name": name,
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.bucket.index.num.buckets": "4",
    }


def test_bucket_table_recognised_by_file_ids(tmp_path: Path) -> None:
    """A bucket-index table that records no index (as Java's Spark writer leaves it) is
    recognised by its fileIds; its bucket count must then come from the writer."""
    root = tmp_path / "t"
    rows = pa.table({"id": list(range(20)), "ts": [1] * 20, "v": ["a"] * 20})
    hudi_ds.write(str(root), rows, _bucket_options("t"))
    _strip_props(
        root,
        "hoodie.index.type",
        "hoodie.bucket.index.num.buckets",
        "hoodie.bucket.index.hash.field",
    )
    with pytest.raises(ConfigError, match="'hoodie.bucket.index.num.buckets' is required"):
        _resolve(root, {})
    with pytest.raises(ConfigError, match=r"'SIMPLE'.*'BUCKET'.*bucket-index fileIds"):
        _resolve(root, {"hoodie.index.type": "SIMPLE"})
    r = _resolve(root, {"hoodie.bucket.index.num.buckets": "4"})
    assert (r.index.type, r.index.layout.num_buckets) == ("BUCKET", 4)
    # and a write keeps to the buckets: the updated keys stay in their file groups
    more = pa.table({"id": [3, 25], "ts": [2, 2], "v": ["b", "b"]})
    HudiTable(str(root)).upsert(more, {"hoodie.bucket.index.num.buckets": "4"})
    got = hudi_ds.read(str(root))
    assert sorted(zip(got["id"].to_pylist(), got["v"].to_pylist(), strict=True)) == sorted(
        [(i, "b" if i in (3, 25) else "a") for i in [*range(20), 25]]
    )
    file_ids = {
        f.name.lstrip(".").split("_")[0]
        for f in root.iterdir()
        if f.is_file() and not f.name.startswith(".hoodie")
    }
    assert file_ids and all(f[:8].isdigit() for f in file_ids), file_ids


@pytest.mark.parametrize("index", ["SIMPLE", "BLOOM", "GLOBAL_SIMPLE", "GLOBAL_BLOOM"])
def test_new_non_bucket_table_records_its_index_only(index: str, tmp_path: Path) -> None:
    root = tmp_path / "t"
    rows = pa.table({"id": list(range(10)), "ts": [1] * 10, "v": ["a"] * 10})
    options = {**_bucket_options("t"), "hoodie.index.type": index}
    del options["hoodie.bucket.index.num.buckets"]
    hudi_ds.write(str(root), rows, options)
    props = read_props(root)
    assert props["hoodie.index.type"] == index
    assert not any(k.startswith("hoodie.bucket.") for k in props)
    # read back: the index is the table's, and a key lookup prunes nothing by bucket
    assert _resolve(root, {}).index.type == index
    t = HudiTable(str(root))
    assert t._key_buckets([("id", "=", 3)]) is None
    assert hudi_ds.read(str(root), filters=[("id", "=", 3)]).column("v").to_pylist() == ["a"]
    # a global index is not swapped for a non-global one (or back): they dedupe differently
    other = "SIMPLE" if index.startswith("GLOBAL_") else "GLOBAL_SIMPLE"
    with pytest.raises(ConfigError, match=f"'{other}'.*'{index}'"):
        _resolve(root, {"hoodie.index.type": other})


def test_bucket_table_keeps_bucket_pruning(tmp_path: Path) -> None:
    root = tmp_path / "t"
    rows = pa.table({"id": list(range(10)), "ts": [1] * 10, "v": ["a"] * 10})
    hudi_ds.write(str(root), rows, _bucket_options("t"))
    cfg = TableConfig.load(HudiTable(str(root)).storage)
    assert cfg.get(TableConfig.INDEX_TYPE) == "BUCKET"
    buckets = HudiTable(str(root))._key_buckets([("id", "=", 3)])
    assert buckets is not None and len(buckets) == 1


@pytest.mark.parametrize("how", ["recorded", "folder"])
def test_table_with_incomplete_metadata_table_rebuilt(how: str, tmp_path: Path) -> None:
    """A table whose hoodie.properties declares a metadata table that is not there, or that
    holds one it does not declare (Hudi < 0.11, an interrupted creation): the first write
    rebuilds it from the committed files and keeps it in step."""
    from tests.metadata.test_writer import assert_in_step

    root = unzip("cow_v6_simplekeygen_nonhivestyle", tmp_path / "t")
    if how == "recorded":
        path = root / ".hoodie" / "hoodie.properties"
        path.write_text(path.read_text() + "hoodie.table.metadata.partitions=files\n")
    else:  # a stale metadata table (of another table) that hoodie.properties does not announce
        mdt = unzip("cow_0x_partitioned", tmp_path / "m") / ".hoodie" / "metadata"
        shutil.copytree(mdt, root / ".hoodie" / "metadata")
    rows = hudi_ds.read(str(root))
    data = rows.drop_columns([c for c in rows.column_names if c.startswith("_hoodie_")])
    HudiTable(str(root)).upsert(data.slice(0, 1))
    cfg = TableConfig.load(HudiTable(str(root)).storage)
    assert cfg.get("hoodie.table.metadata.partitions") == "files"
    assert_in_step(root)
    assert hudi_ds.read(str(root)).num_rows == rows.num_rows


@pytest.mark.parametrize(
    "name", ["cow_v6_simplekeygen_nonhivestyle", "mor_parquet_v6_simplekeygen_nonhivestyle"]
)
def test_batch_duplicates_of_v6_overwrite_with_latest_table_keep_greatest_ordering(
    tmp_path: Path, name: str
) -> None:
    """One upsert batch holding two versions of a key: Java 0.x keeps the greater ordering value
    (``HoodieWriteHelper.deduplicateRecords`` -> ``OverwriteWithLatestAvroPayload.preCombine``;
    the COW table records no payload class, the writer's default is that payload), a tie goes to
    the later version; across commits the later commit still wins whatever its ordering value."""
    root = unzip(name, tmp_path)
    rows = hudi_ds.read(str(root))
    data = rows.drop_columns([c for c in rows.column_names if c.startswith("_hoodie_")])
    first, second = data.slice(0, 1).to_pylist()[0], data.slice(1, 1).to_pylist()[0]
    newer = {**first, "intField": 1, "longField": first["longField"] + 100}
    older = {**first, "intField": 2, "longField": first["longField"] - 100}
    tie_a = {**second, "intField": 3, "longField": second["longField"] + 5}
    tie_b = {**second, "intField": 4, "longField": second["longField"] + 5}
    batch = pa.Table.from_pylist([newer, tie_a, older, tie_b], schema=data.schema)
    HudiTable(str(root)).upsert(batch)
    untouched = data.slice(2).to_pylist()
    expected = data_row_set(pa.Table.from_pylist([newer, tie_b, *untouched], schema=data.schema))
    cols = data.column_names
    assert data_row_set(hudi_ds.read(str(root)).select(cols)) == expected
    assert data_row_set(hudi_rs_table(str(root)).select(cols)) == expected
    # the next commit overwrites by commit time (combineAndGetUpdateValue), older or not
    HudiTable(str(root)).upsert(pa.Table.from_pylist([older], schema=data.schema))
    expected = data_row_set(pa.Table.from_pylist([older, tie_b, *untouched], schema=data.schema))
    assert data_row_set(hudi_ds.read(str(root)).select(cols)) == expected
    assert data_row_set(hudi_rs_table(str(root)).select(cols)) == expected
