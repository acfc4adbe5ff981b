"""Upserts and deletes into the second set of real Apache Hudi tables (hudi-tables-more).

* ``trino__stock_ticks_mor``: MERGE_ON_READ, table version 3 (Hudi 0.10, the docker demo), 99
  rows in partition ``2018/08/31`` (a 3-level path: the ``date`` values hold ``/``), one base
  file and one log file with a version-1 Avro block; OverwriteWithLatestAvroPayload.
* ``trino__hudi_non_part_cow``: COPY_ON_WRITE, version 5 (Hudi 0.12/0.13), 2 rows,
  non-partitioned; it declares a metadata table (``files``) that the table does not hold.
* ``trino__hudi_stock_ticks_mor``: MERGE_ON_READ, version 8 (Hudi 1.0), the same 99 rows and
  ``/`` partition values; EVENT_TIME_ORDERING but no ordering field recorded.

The scenario is tests/write/fixture_model.py's (updates with a greater and an older ordering
value, new keys, a new partition ``2018/09/01`` where partitioned, a second upsert, a delete).
Its starting rows are read by hudi-rs, not by hudi_ds: for versions 3 and 5, which hudi-rs does
not open, from a copy whose ``hoodie.properties`` this test edits to say version 6 (the files
are those of version 6 too). Versions 3 and 5 are upgraded to 6 by the first write as Hudi
0.15's ``UpgradeDowngrade`` does (``ThreeToFourUpgradeHandler`` adds the checksum;
``FourToFive`` and ``FiveToSix`` add nothing); a write refused (auto-upgrade off) leaves the
table byte-for-byte unchanged. (Upgrades through 6 to 8 and 9: tests/write/test_upgrade_1x.py.)
"""

from __future__ import annotations

import io
import json
import shutil
import struct
import zlib
from pathlib import Path

import fastavro
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import hudi_ds
from hudi_ds.errors import ConfigError
from hudi_ds.faults import ENV as CRASH_ENV
from hudi_ds.faults import EXIT_CODE
from tests.conftest import hudi_rs_table, spawn_python
from tests.fixtures import expected_checks, unzip_more
from tests.table.test_read_more_fixtures import apply_check
from tests.write.fixture_model import (
    Fixture,
    data_row_set,
    read_props,
    scenario,
    tree_hashes,
)

_TICKS = dict(
    keys=("key",),
    parts=("date",),
    keygen="simple",
    hive=False,
    ordering="ts",
    change="volume",
    new_partition="2018/09/01",
)

#: the second set's tables written here, as the test knows them (from their hoodie.properties)
MORE_WRITABLE: dict[str, Fixture] = {
    "trino__stock_ticks_mor": Fixture(**_TICKS),  # type: ignore[arg-type]
    "trino__hudi_non_part_cow": Fixture(
        keys=("id",), parts=(), keygen="nonpartitioned", hive=True, ordering="ts", change="name"
    ),
    # EVENT_TIME_ORDERING recorded without an ordering field: every record carries the default
    # ordering value, so ties go to the later write (Hudi 1.x's file group reader) -- the
    # older update wins as with OverwriteWithLatestAvroPayload
    "trino__hudi_stock_ticks_mor": Fixture(**_TICKS),  # type: ignore[arg-type]
}


def _log_records(path: Path) -> list[dict[str, object]]:
    """The records of a log file's Avro data blocks, decoded by this test alone (Hudi's block
    framing: magic, int64 length, int32 format version and type, header map with the SCHEMA
    (key 2), int64 content length, content = int32 version, int32 count, then per record an
    int32 length and the Avro datum -- every content version carries the count)."""
    data, pos, out = path.read_bytes(), 0, []
    while pos < len(data):
        assert data[pos : pos + 6] == b"#HUDI#", pos
        (length,) = struct.unpack_from(">q", data, pos + 6)
        cur = pos + 14
        _, block_type, entries = struct.unpack_from(">iii", data, cur)
        cur += 12
        header = {}
        for _ in range(entries):
            key, n = struct.unpack_from(">ii", data, cur)
            header[key] = data[cur + 8 : cur + 8 + n].decode()
            cur += 8 + n
        (content_length,) = struct.unpack_from(">q", data, cur)
        content = data[cur + 8 : cur + 8 + content_length]
        assert block_type == 3  # an Avro data block
        schema = fastavro.parse_schema(json.loads(header[2]))
        (count,) = struct.unpack_from(">i", content, 4)
        at = 8
        for _ in range(count):
            (n,) = struct.unpack_from(">i", content, at)
            out.append(fastavro.schemaless_reader(io.BytesIO(content[at + 4 : at + 4 + n]), schema))
            at += 4 + n
        pos += 14 + length
    return out


def starting_rows(name: str, root: Path, tmp_path: Path) -> pa.Table:
    """The table's rows as hudi-rs reads them (versions below 6: from a copy edited to say 6);
    the version-3 table's log holds a version-1 Avro block hudi-rs does not read: its one
    file slice is merged here (the log's records replace the base file's, as its
    OverwriteWithLatestAvroPayload has it)."""
    props = read_props(root)
    if int(props["hoodie.table.version"]) >= 6:
        return hudi_rs_table(str(root))
    if name == "trino__stock_ticks_mor":
        (base,) = root.rglob("*.parquet")
        (log,) = root.rglob(".*.log.*")
        table = pq.read_table(base, partitioning=None)
        latest = {r["_hoodie_record_key"]: r for r in table.to_pylist()}
        latest.update({r["_hoodie_record_key"]: r for r in _log_records(log)})
        rows = pa.Table.from_pylist(list(latest.values()), schema=table.schema)
        for check in expected_checks(name):
            apply_check(rows, check)
        return rows
    copy = tmp_path / "as-v6"
    shutil.copytree(root, copy)
    path = copy / ".hoodie" / "hoodie.properties"
    text = path.read_text()
    path.write_text(
        text.replace(
            f"hoodie.table.version={props['hoodie.table.version']}", "hoodie.table.version=6"
        )
    )
    rows = hudi_rs_table(str(copy))
    for check in expected_checks(name):  # the oracle itself agrees with Trino's checks
        apply_check(rows, check)
    return rows


@pytest.mark.parametrize("name", sorted(MORE_WRITABLE))
def test_upsert_and_delete_into_more_fixture(name: str, tmp_path: Path) -> None:
    fx = MORE_WRITABLE[name]
    root = unzip_more(name, tmp_path / "t")
    before = read_props(root)
    start = starting_rows(name, root, tmp_path)
    golden = start.to_pylist()
    sc = scenario(name, fx, start, golden=golden)
    table = hudi_ds.HudiTable(str(root))
    table.upsert(sc.upsert)
    table.upsert(sc.upsert2)
    table.delete(sc.delete)
    assert data_row_set(hudi_ds.read(str(root))) == sc.expected
    if name == "trino__stock_ticks_mor":
        # hudi-rs does not read the version-1 Avro block of Hudi 0.10's log file; the fifth
        # delta commit (the fixture's two and our three) compacted every file group inline
        # (hoodie.compact.inline.max.delta.commits=5), so the latest slices hold none of it
        assert list((root / ".hoodie").glob("*.commit")), "no compaction ran"
    assert data_row_set(hudi_rs_table(str(root))) == sc.expected
    assert data_row_set(hudi_rs_table(str(root), {"hoodie.metadata.enable": "true"})) == (
        sc.expected
    )
    props = read_props(root)
    version = int(before["hoodie.table.version"])
    want = dict(before)
    if version < 6:
        # ThreeToFourUpgradeHandler: the checksum of "<database>.<table name>"
        database = before.get("hoodie.database.name", "")
        checksum = zlib.crc32(f"{database}.{before['hoodie.table.name']}".encode())
        want.update({"hoodie.table.version": "6", "hoodie.table.checksum": str(checksum)})
    assert props == want
    if fx.parts:  # the new partition is a nested path, as Java writes '2018/09/01'
        assert (root / "2018" / "09" / "01" / ".hoodie_partition_metadata").is_file()


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"hoodie.write.auto.upgrade": "false"}, "hoodie.write.auto.upgrade'=false"),
        (
            {"hoodie.write.auto.upgrade": "false", "hoodie.write.table.version": "8"},
            "hoodie.write.auto.upgrade'=false",
        ),
    ],
)
@pytest.mark.parametrize("name", ["trino__stock_ticks_mor", "trino__hudi_non_part_cow"])
def test_upgrade_refused_leaves_table_unchanged(
    name: str, options: dict[str, str], match: str, tmp_path: Path
) -> None:
    root = unzip_more(name, tmp_path)
    rows = hudi_ds.read(str(root))
    data = rows.drop_columns([c for c in rows.column_names if c.startswith("_hoodie_")])
    before = tree_hashes(root)
    with pytest.raises(ConfigError, match=match):
        hudi_ds.write(str(root), data.slice(0, 1), options)
    assert tree_hashes(root) == before


UPGRADING_WRITER = r"""
import sys
import pyarrow.parquet as pq
import hudi_ds
hudi_ds.write(sys.argv[1], pq.read_table(sys.argv[2]))
print("survived")
"""


@pytest.mark.parametrize("step", [3, 5])
def test_upgrade_killed_midway_leaves_a_readable_table(
    step: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A write killed while the upgrade replaces ``hoodie.properties`` (Hudi's backup-file
    protocol: step 3 has only the backup, step 5 the new file and the backup) leaves a table
    read exactly, at version 3 or 6; the next write finishes the upgrade and its own rows."""
    root = unzip_more("trino__stock_ticks_mor", tmp_path / "t")
    rows = hudi_ds.read(str(root))
    data = rows.drop_columns([c for c in rows.column_names if c.startswith("_hoodie_")])
    one = tmp_path / "one.parquet"
    pq.write_table(data.slice(0, 1), one)
    expected = data_row_set(rows)
    monkeypatch.setenv(CRASH_ENV, f"table_config:{step}")
    proc = spawn_python(UPGRADING_WRITER, str(root), str(one))
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == EXIT_CODE, (out, err)
    monkeypatch.delenv(CRASH_ENV)
    assert (root / ".hoodie" / "hoodie.properties.backup").is_file()
    assert hudi_ds.HudiTable(str(root)).config.table_version == (6 if step == 5 else 3)
    assert data_row_set(hudi_ds.read(str(root))) == expected
    hudi_ds.write(str(root), data.slice(0, 1))
    assert read_props(root)["hoodie.table.version"] == "6"
    # step 3 is finished by the next upgrade; after step 5 the table is upgraded and the
    # backup stays until the next update of hoodie.properties, as with Java's
    # HoodieTableConfig (recoverIfNeeded runs on updates), and harms no reader
    assert (root / ".hoodie" / "hoodie.properties.backup").exists() == (step == 5)
    assert data_row_set(hudi_ds.read(str(root))) == expected
