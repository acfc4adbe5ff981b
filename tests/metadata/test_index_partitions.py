"""The metadata table's index partitions kept together: a table with column stats, partition
stats and the record index keeps all of them, and ``files``, equal to what is recomputed from
its data files through every action."""

from __future__ import annotations

from pathlib import Path

import hudi_ds
from hudi_ds.api import HudiTable
from hudi_ds.metadata.records import declared_partitions
from hudi_ds.services import ServiceContext, clean, compaction, rollback
from hudi_ds.storage import Storage
from hudi_ds.table_config import TableConfig
from tests.conftest import hudi_rs_table, table_options
from tests.metadata.rli_support import key_rows
from tests.metadata.test_column_stats import assert_stats_in_step
from tests.metadata.test_record_index import assert_index_true
from tests.metadata.test_writer import assert_in_step
from tests.write.fixture_model import data_row_set

_ALL = ["column_stats", "files", "partition_stats", "record_index"]


def _in_step(root: Path) -> dict[str, object]:
    """Every MDT partition equals its recomputation, and hudi-rs reads the table's rows with
    the metadata table on and off; the record index's keys."""
    assert declared_partitions(TableConfig.load(Storage(str(root)))) == _ALL
    assert_in_step(root)
    assert_stats_in_step(root)
    stored = assert_index_true(root)
    expected = data_row_set(hudi_ds.read(str(root)))
    for md in ("true", "false"):
        assert data_row_set(hudi_rs_table(str(root), {"hoodie.metadata.enable": md})) == expected
    return dict(stored)


def test_stats_and_record_index_stay_in_step_together(tmp_path: Path) -> None:
    """A new v9 MOR table with column stats, partition stats and the record index (its
    writes tagged through it) keeps the four partitions in step through inserts, an upsert
    (MDT compactions and cleans on the way), a compaction, a clean and a rollback."""
    root = tmp_path / "t"
    opts = {
        **table_options("all", partition="p", table_type="MERGE_ON_READ", buckets=None),
        "hoodie.write.table.version": "9",
        "hoodie.index.type": "RECORD_INDEX",
        "hoodie.metadata.enable": "true",
        "hoodie.metadata.record.index.enable": "true",
        "hoodie.metadata.index.column.stats.enable": "true",
        "hoodie.metadata.index.partition.stats.enable": "true",
        "hoodie.metadata.compact.max.delta.commits": "3",
        "hoodie.clean.automatic": "false",
        "hoodie.cleaner.commits.retained": "1",
    }
    hudi_ds.write(str(root), key_rows(list(range(12)), ["p0", "p1", "p2"] * 4, 1), opts)
    _in_step(root)
    table = HudiTable(str(root), opts)
    table.upsert(key_rows([1, 2, 20, 21], ["p1", "p2", "p0", "p1"], 2))
    table.upsert(key_rows([3, 22], ["p0", "p2"], 3))
    assert {"k20", "k21", "k22"} <= _in_step(root).keys()
    ctx = ServiceContext.open(str(root), opts)
    assert compaction.schedule_compaction(ctx) is not None
    compaction.run_compaction(ServiceContext.open(str(root), opts))
    _in_step(root)
    table = HudiTable(str(root), opts)
    table.upsert(key_rows([4, 5], ["p1", "p2"], 4))
    clean.clean(ServiceContext.open(str(root), opts))
    _in_step(root)
    last = HudiTable(str(root), opts).delete(key_rows([6, 23], ["p0", "p0"], 5))
    assert last is not None
    assert "k6" not in _in_step(root)
    rollback.rollback(ServiceContext.open(str(root), opts), last)
    assert "k6" in _in_step(root)
