"""Helpers of the secondary-index tests: the secondary indexes a table's metadata table holds,
and the ones recomputed from the table's data files."""

from __future__ import annotations

from pathlib import Path

from hudi_ds.metadata.records import METADATA_PATH
from hudi_ds.metadata.secondary_index import (
    definitions,
    file_group_count,
    file_group_indexes,
    index_keys,
    read_index,
    secondary_strings,
)
from hudi_ds.storage import Storage
from hudi_ds.table.table import ReadableTable
from hudi_ds.table_config import TableConfig
from tests.metadata.rli_support import open_mdt


def stored_secondary_index(root: Path, partition: str) -> dict[str, int]:
    """Row key -> file group index of MDT partition ``partition`` of the table at ``root``."""
    mdt, tl, counts = open_mdt(root)
    return read_index(mdt, tl, partition, counts)


def recomputed_secondary_index(root: Path, partition: str) -> dict[str, int]:
    """Row key -> file group index of secondary index ``partition`` recomputed from the table's
    latest file slices (a snapshot read of the record key and the indexed column), the file
    group count taken from the stored partition."""
    storage = Storage(str(root))
    cfg = TableConfig.load(storage)
    d = definitions(cfg, storage)[partition]
    assert d.column is not None, d.unevaluable
    table = ReadableTable(str(root), {"hoodie.metadata.enable": "false"})
    rows = table.read(columns=["_hoodie_record_key", d.column])
    rendered = secondary_strings(rows.column(d.column))
    assert rendered is not None
    keys = index_keys(rows.column("_hoodie_record_key").combine_chunks(), rendered)
    count = file_group_count(storage.sub(METADATA_PATH), partition)
    groups = file_group_indexes(keys, count, d.version).tolist()
    out = dict(zip(keys.to_pylist(), groups, strict=True))
    assert len(out) == len(keys), "a row key twice: duplicate records"
    return out


def secondary_partitions(root: Path) -> list[str]:
    """The secondary-index partitions the table declares."""
    cfg = TableConfig.load(Storage(str(root)))
    return [
        p
        for p in (cfg.get("hoodie.table.metadata.partitions") or "").split(",")
        if p.startswith("secondary_index_")
    ]


def assert_secondary_indexes_true(root: Path) -> None:
    """Every secondary index the table declares holds exactly the records recomputed from its
    files, each in its file group."""
    for partition in secondary_partitions(root):
        assert (root / ".hoodie" / "metadata" / partition).is_dir(), partition
        stored = stored_secondary_index(root, partition)
        recomputed = recomputed_secondary_index(root, partition)
        assert stored == recomputed, (
            partition,
            sorted(set(stored.items()) - set(recomputed.items())),
            sorted(set(recomputed.items()) - set(stored.items())),
        )
