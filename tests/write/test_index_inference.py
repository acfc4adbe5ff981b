"""The index of an existing table that records none, inferred from its metadata table.

``cow_v9_txns_simple_meta`` (Hudi 1.1, COPY_ON_WRITE, keyed by ``txn_id``, partitioned by
``region`` hive style, EVENT_TIME_ORDERING on ``txn_ts``) was written with Java's record-level
index: its ``hoodie.properties`` declares the ``record_index`` metadata-table partition
(``hoodie.table.metadata.partitions``) and its index definitions
(``.hoodie/.index_defs/index.json``) say ``isPartitioned=false`` -- a global index -- and it
records no ``hoodie.index.type`` (Java never does). A key arriving with another region must
stay one record: hudi_ds writes with GLOBAL_SIMPLE (the key moves, as
``hoodie.simple.index.update.partition.path`` says), logs the choice, and records it when its
metadata table drops the record index it does not maintain, so the next write keeps it. A
partitioned record index (``isPartitioned=true``, Hudi 1.1) keeps keys per partition: SIMPLE.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import hudi_ds
from hudi_ds.api import HudiTable
from hudi_ds.errors import ConfigError
from tests.conftest import hudi_rs_table
from tests.write.fixture_model import data_row_set, read_props, tree_hashes
from tests.write.test_fixture_writes import unzip

NAME = "cow_v9_txns_simple_meta"


def _moved(rows: pa.Table, key: str, region: str) -> pa.Table:
    """Row ``key`` (data columns) with ``region`` and a later ``txn_ts``."""
    data = rows.drop_columns([c for c in rows.column_names if c.startswith("_hoodie_")])
    row = data.filter(pc.equal(data["txn_id"], key))
    assert row.num_rows == 1
    row = row.set_column(row.schema.get_field_index("region"), "region", pa.array([region]))
    later = pc.add(row["txn_ts"].combine_chunks().cast(pa.int64()), 1).cast(row["txn_ts"].type)
    return row.set_column(row.schema.get_field_index("txn_ts"), "txn_ts", later)


def _copies(t: pa.Table, key: str) -> list[str]:
    """The regions holding ``key``."""
    return sorted(t.filter(pc.equal(t["txn_id"], key))["region"].to_pylist())


@pytest.mark.parametrize("partitioned", [False, True], ids=["global", "partitioned"])
def test_record_index_table_keeps_its_key_uniqueness(
    partitioned: bool, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    root = unzip(NAME, tmp_path)
    defs = root / ".hoodie" / ".index_defs" / "index.json"
    if partitioned:  # Hudi 1.1's partitioned record index
        doc = json.loads(defs.read_text())
        doc["indexDefinitions"]["record_index"]["indexOptions"]["isPartitioned"] = "true"
        defs.write_text(json.dumps(doc))
    props = read_props(root)
    assert "record_index" in props["hoodie.table.metadata.partitions"].split(",")
    assert "hoodie.index.type" not in props
    rows = hudi_ds.read(str(root))
    key = rows["txn_id"][0].as_py()
    home = rows["region"][0].as_py()
    away = next(r for r in ("apac", "eu", "us") if r != home)
    before = data_row_set(rows)
    with caplog.at_level(logging.WARNING, logger="hudi_ds.write"):
        HudiTable(str(root)).upsert(_moved(rows, key, away))
    got = hudi_ds.read(str(root))
    expected_regions = sorted([home, away]) if partitioned else [away]
    assert _copies(got, key) == expected_regions  # main: a second copy in `away`
    assert _copies(hudi_rs_table(str(root)), key) == expected_regions
    chosen = "SIMPLE" if partitioned else "GLOBAL_SIMPLE"
    assert f"writing with hoodie.index.type={chosen}" in caplog.text
    assert "record-level index" in caplog.text
    props = read_props(root)
    if partitioned:
        # the metadata table dropped the partitioned record_index (not kept in step); the
        # choice is the table's now
        assert "record_index" not in props["hoodie.table.metadata.partitions"].split(",")
        assert props["hoodie.index.type"] == chosen
    else:
        # the global record index is kept in step: it says where the key went, and stays the
        # evidence of the table's global index
        from tests.metadata.test_record_index import assert_index_true

        assert "hoodie.index.type" not in props
        assert assert_index_true(root)[key].partition == f"region={away}"
    # every other row as it was
    others = {r for r in data_row_set(got) if key not in r}
    assert others == {r for r in before if key not in r}
    # the next write keeps the index: back home, still one copy (global)
    HudiTable(str(root)).upsert(_moved(got.filter(pc.equal(got["region"], away)), key, home))
    again = hudi_ds.read(str(root))
    assert _copies(again, key) == (sorted([home, away]) if partitioned else [home])
    if not partitioned:  # a non-global index would break the uniqueness: refused, untouched
        hashes = tree_hashes(root)
        with pytest.raises(ConfigError, match=r"'SIMPLE'.*'GLOBAL_SIMPLE'"):
            HudiTable(str(root)).upsert(_moved(again, key, away), {"hoodie.index.type": "SIMPLE"})
        assert tree_hashes(root) == hashes


def test_record_index_type_spellings() -> None:
    from hudi_ds.index.core import IndexType

    # Hudi 1.1's partitioned record index, looked up by (partition, key)
    assert IndexType.parse("PARTITIONED_RECORD_INDEX") is IndexType.RECORD_LEVEL_INDEX
    assert not IndexType.RECORD_LEVEL_INDEX.is_global
    # the global record index is looked up in the metadata table (Java 1.1's other spelling)
    assert IndexType.parse("global_record_level_index") is IndexType.RECORD_INDEX
