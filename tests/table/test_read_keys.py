"""Reading only some record keys of each file slice (``read_plan_slices(slice_keys=...)``,
``read_file_slice(keys=...)``), as a MERGE reads its target.

Each table: 40 rows ``k00``..``k39`` in one partition (``ts`` 1, ``v`` = i, ``note`` "n<i>"),
then an upsert of ``k00``..``k09`` (``ts`` 2, ``v`` = 100 + i), then a delete of ``k05``..``k14``.
MERGE_ON_READ with the SIMPLE index: a base file and log blocks (data, delete) on it;
MERGE_ON_READ with BUCKET: log blocks only; COPY_ON_WRITE: base files only. Reading the keys
``k03`` (updated), ``k07`` (updated, then deleted), ``k12`` (deleted), ``k20`` (untouched)
and ``k99`` (absent) must give exactly the snapshot's rows of those keys, full rows.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import hudi_ds
from hudi_ds.schema.meta import without_meta_fields

KEYS = ["k03", "k07", "k12", "k20", "k99"]


def _table(root: Path, table_type: str, index: str) -> hudi_ds.HudiTable:
    opts = {
        "hoodie.table.name": "keys",
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.partitionpath.field": "p",
        "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.datasource.write.table.type": table_type,
        "hoodie.index.type": index,
        "hoodie.bucket.index.num.buckets": "2",
        "hoodie.datasource.compaction.async.enable": "false",
    }

    def rows(ids: range, ts: int, base: int) -> pa.Table:
        return pa.table(
            {
                "id": [f"k{i:02d}" for i in ids],
                "p": ["a"] * len(ids),
                "ts": pa.array([ts] * len(ids), pa.int64()),
                "v": pa.array([base + i for i in ids], pa.int64()),
                "note": [f"n{i}" for i in ids],
            }
        )

    hudi_ds.write(str(root), rows(range(40), 1, 0), opts)
    hudi_ds.write(str(root), rows(range(10), 2, 100), opts)
    t = hudi_ds.HudiTable(str(root))
    t.delete(rows(range(5, 15), 3, 0).select(["id", "p"]), opts)
    return hudi_ds.HudiTable(str(root))


@pytest.mark.parametrize(
    "table_type, index",
    [("MERGE_ON_READ", "SIMPLE"), ("MERGE_ON_READ", "BUCKET"), ("COPY_ON_WRITE", "BUCKET")],
)
def test_slice_keys_give_the_snapshot_rows_of_those_keys(
    tmp_path: Path, table_type: str, index: str
) -> None:
    t = _table(tmp_path / "t", table_type, index)
    cols = without_meta_fields(t.schema).names
    plan = t.plan_read(columns=cols)
    if table_type == "MERGE_ON_READ":
        assert any(s.log_files for s in plan.slices)
    keys = pa.array(KEYS)
    got = pa.Table.from_batches(
        list(t.read_plan_slices(plan, plan.slices, slice_keys=lambda s: keys)),
        schema=plan.output_schema,
    ).sort_by("id")
    full = t.read(columns=cols)
    want = full.filter(pc.is_in(full["id"], value_set=keys)).sort_by("id")
    assert got.to_pylist() == want.to_pylist()
    assert got["id"].to_pylist() == ["k03", "k20"]
    assert got.to_pylist()[0]["v"] == 103
