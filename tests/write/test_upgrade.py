"""The first write of a table of version 3-5 upgrades it to 6 (hudi_ds/write/upgrade.py).

The real tables of versions 3 and 5 are written in tests/write/test_more_fixture_writes.py;
here the handlers' other steps, on tables built by hudi_ds at version 6 whose
``hoodie.properties`` the test then rewrites to an older version -- what a table of that
version holds for each step (Hudi 0.15's ``UpgradeDowngrade.run`` and handlers):

* a metadata table: its own ``hoodie.properties`` is upgraded first; from version 3 the data
  table gains ``hoodie.table.metadata.partitions=files`` (``ThreeToFourUpgradeHandler``), and
  ``hoodie.database.name`` when the write names a database;
* a pending requested compaction whose plan Hudi before 0.14 also kept in ``.hoodie/.aux``:
  that copy is deleted (``FiveToSixUpgradeHandler``);
* a partition ``default`` (hive style ``p=default``) of a version 4 table: refused
  (``FourToFiveUpgradeHandler``) unless ``hoodie.skip.default.partition.validation``.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow as pa
import pytest

import hudi_ds
from hudi_ds.errors import ConfigError
from hudi_ds.services import compaction
from hudi_ds.services.base import ServiceContext
from hudi_ds.table.table import ReadableTable
from tests.conftest import assert_rows
from tests.write.fixture_model import read_props, tree_hashes

OPTS = {
    "hoodie.table.name": "old",
    "hoodie.datasource.write.recordkey.field": "id",
    "hoodie.datasource.write.partitionpath.field": "p",
    "hoodie.datasource.write.precombine.field": "ts",
    "hoodie.datasource.write.hive_style_partitioning": "true",
    "hoodie.index.type": "SIMPLE",
}
ROWS = pa.table({"id": ["a", "b"], "ts": [1, 1], "p": ["x", "y"]})


def _as_version(props: Path, version: int, drop: tuple[str, ...] = ()) -> None:
    """Rewrite ``props`` as a table of ``version`` (no checksum before version 4)."""
    lines = []
    for line in props.read_text().splitlines():
        key = line.split("=", 1)[0]
        if key == "hoodie.table.version":
            line = f"hoodie.table.version={version}"
        if key in drop or (version < 4 and key == "hoodie.table.checksum"):
            continue
        lines.append(line)
    props.write_text("\n".join(lines) + "\n")


def test_metadata_table_upgraded_first_and_declared(tmp_path: Path) -> None:
    root = tmp_path / "t"
    hudi_ds.write(str(root), ROWS, {**OPTS, "hoodie.metadata.enable": "true"})
    mdt_props = root / ".hoodie" / "metadata" / ".hoodie" / "hoodie.properties"
    _as_version(root / ".hoodie" / "hoodie.properties", 3, ("hoodie.table.metadata.partitions",))
    _as_version(mdt_props, 3)
    hudi_ds.write(
        str(root),
        pa.table({"id": ["a", "c"], "ts": [2, 1], "p": ["x", "z"]}),
        {"hoodie.database.name": "db"},
    )
    props = read_props(root)
    assert props["hoodie.table.version"] == "6"
    assert props["hoodie.table.metadata.partitions"] == "files"
    assert props["hoodie.database.name"] == "db"
    assert read_props(root / ".hoodie" / "metadata")["hoodie.table.version"] == "6"
    want = [("a", 2, "x"), ("b", 1, "y"), ("c", 1, "z")]
    # the metadata table was kept in step through the upgrade: listing by it gives the rows
    reader = ReadableTable(str(root), {"hoodie.metadata.enable": "true"})
    assert reader.metadata_reader() is not None
    assert_rows(reader.read(), want, ["id", "ts", "p"])


def test_aux_copy_of_pending_compaction_plan_deleted(tmp_path: Path) -> None:
    root = tmp_path / "t"
    opts = {**OPTS, "hoodie.datasource.write.table.type": "MERGE_ON_READ"}
    hudi_ds.write(str(root), ROWS, opts)
    hudi_ds.write(str(root), pa.table({"id": ["a"], "ts": [2], "p": ["x"]}), opts)
    strategy = {"hoodie.compaction.strategy": "UnBoundedCompactionStrategy"}
    ctx = ServiceContext.open(
        str(root), {**strategy, "hoodie.compact.inline.max.delta.commits": "1"}
    )
    instant = compaction.schedule_compaction(ctx)
    assert instant is not None
    aux = root / ".hoodie" / ".aux"
    aux.mkdir(exist_ok=True)
    plan = root / ".hoodie" / f"{instant}.compaction.requested"
    shutil.copy(plan, aux / plan.name)
    kept = aux / "20200101000000000.compaction.requested"  # no such pending compaction
    shutil.copy(plan, kept)
    _as_version(root / ".hoodie" / "hoodie.properties", 5)
    hudi_ds.write(str(root), pa.table({"id": ["b"], "ts": [2], "p": ["y"]}))
    assert read_props(root)["hoodie.table.version"] == "6"
    assert not (aux / plan.name).exists()
    assert kept.exists()
    assert plan.exists()  # the timeline's own plan stays
    assert_rows(hudi_ds.read(str(root)), [("a", 2, "x"), ("b", 2, "y")], ["id", "ts", "p"])


def test_deprecated_default_partition_refused_unless_skipped(tmp_path: Path) -> None:
    root = tmp_path / "t"
    hudi_ds.write(str(root), pa.table({"id": ["a"], "ts": [1], "p": ["default"]}), OPTS)
    _as_version(root / ".hoodie" / "hoodie.properties", 4)
    before = tree_hashes(root)
    more = pa.table({"id": ["b"], "ts": [1], "p": ["x"]})
    with pytest.raises(ConfigError, match="partition 'p=default'.*FourToFiveUpgradeHandler"):
        hudi_ds.write(str(root), more)
    assert tree_hashes(root) == before
    hudi_ds.write(str(root), more, {"hoodie.skip.default.partition.validation": "true"})
    assert read_props(root)["hoodie.table.version"] == "6"
    assert_rows(hudi_ds.read(str(root)), [("a", 1, "default"), ("b", 1, "x")], ["id", "ts", "p"])
