"""The writer's acceptance matrix: every write is read back by us and by hudi-rs.

For each new table of version {6, 8, 9} (``hoodie.write.table.version``) x {MOR, COW} x
{partitioned by one field, by two fields, non-partitioned} x {parquet, avro log blocks} x
{EVENT_TIME_ORDERING, COMMIT_TIME_ORDERING}, the sequence

1. insert 1,000 rows;
2. upsert: 200 updates with a newer ``ts``, 100 late updates with an older ``ts``, 150 new keys;
3. delete 120 keys (by key only);
4. upsert again: 100 re-inserts of deleted keys, 200 updates

is checked after every step against a plain in-memory model of the expected rows.
"""

from __future__ import annotations

from pathlib import Path

import hudi
import numpy as np
import pyarrow as pa
import pytest

import hudi_ds
from tests.conftest import table_options

PARTITIONINGS = {"one": ["dt"], "two": ["dt", "region"], "none": []}


def rows(ids: np.ndarray, ts: np.ndarray, rng: np.random.Generator) -> pa.Table:
    return pa.table(
        {
            "id": pa.array([f"key-{i:05d}" for i in ids]),
            "ts": pa.array(ts, pa.int64()),
            "dt": pa.array([f"2024-01-0{i % 3 + 1}" for i in ids]),
            "region": pa.array(["eu" if i % 2 else "us" for i in ids]),
            "amount": pa.array(rng.normal(size=len(ids))),
            "qty": pa.array(rng.integers(0, 1000, len(ids)), pa.int32()),
            "note": pa.array([None if i % 7 == 0 else f"n{i}" for i in ids]),
        }
    )


class Model:
    """The expected state: key -> row, applying Hudi's merge rules one row at a time."""

    def __init__(self, event_time: bool) -> None:
        self.event_time = event_time
        self.rows: dict[str, dict] = {}

    def upsert(self, t: pa.Table) -> None:
        for r in t.to_pylist():
            cur = self.rows.get(r["id"])
            if cur is None or not self.event_time or r["ts"] >= cur["ts"]:
                self.rows[r["id"]] = r

    def delete(self, ids: list[str]) -> None:
        for i in ids:
            self.rows.pop(i, None)

    def expected(self) -> list[tuple]:
        return sorted(tuple(r[c] for c in COLS) for r in self.rows.values())


COLS = ["id", "ts", "dt", "region", "amount", "qty", "note"]


def ours(path: str) -> list[tuple]:
    t = hudi_ds.read(path, columns=COLS)
    return sorted(zip(*(t.column(c).to_pylist() for c in COLS), strict=True))


def theirs(path: str) -> list[tuple]:
    table = hudi.HudiTableBuilder.from_base_uri(path).build()
    batches = table.read(hudi.HudiReadOptions())
    t = pa.Table.from_batches(batches) if batches else None
    if t is None:
        return []
    return sorted(zip(*(t.column(c).to_pylist() for c in COLS), strict=True))


@pytest.mark.parametrize("merge", ["EVENT_TIME_ORDERING", "COMMIT_TIME_ORDERING"])
@pytest.mark.parametrize("block", ["parquet", "avro"])
@pytest.mark.parametrize("parts", sorted(PARTITIONINGS))
@pytest.mark.parametrize("ttype", ["MERGE_ON_READ", "COPY_ON_WRITE"])
@pytest.mark.parametrize("version", [6, 8, 9])
def test_write_sequence(
    version: int, ttype: str, parts: str, block: str, merge: str, tmp_path: Path
) -> None:
    path = str(tmp_path / "t")
    opts = {
        **table_options(
            "matrix", partition=",".join(PARTITIONINGS[parts]), table_type=ttype, buckets=4
        ),
        "hoodie.datasource.write.hive_style_partitioning": "true" if parts == "two" else "false",
        "hoodie.write.record.merge.mode": merge,
        "hoodie.logfile.data.block.format": block,
        "hoodie.write.table.version": str(version),
    }
    rng = np.random.default_rng(7)
    model = Model(event_time=merge == "EVENT_TIME_ORDERING")

    def check() -> None:
        expected = model.expected()
        assert ours(path) == expected
        assert theirs(path) == expected

    # 1. insert 1,000 rows
    ids = np.arange(1000)
    t = rows(ids, np.full(1000, 100), rng)
    hudi_ds.write(path, t, {**opts, "hoodie.datasource.write.operation": "insert"})
    model.upsert(t)
    check()
    props = (tmp_path / "t" / ".hoodie" / "hoodie.properties").read_text()
    assert f"\nhoodie.table.version={version}\n" in props
    assert f"\nhoodie.timeline.layout.version={1 if version == 6 else 2}\n" in props
    timeline = tmp_path / "t" / ".hoodie" / ("timeline" if version >= 8 else "")
    completed = [f.name for f in timeline.iterdir() if f.name.endswith(("commit", "deltacommit"))]
    # layout 2: completed instants are <requested>_<completion>.<action> files
    assert completed and all(("_" in n) == (version >= 8) for n in completed), completed
    # 2. updates (newer), late updates (older ts), new keys -- shuffled together
    upd = rows(rng.choice(1000, 200, replace=False), np.full(200, 200), rng)
    late = rows(rng.choice(1000, 100, replace=False), np.full(100, 50), rng)
    new = rows(np.arange(1000, 1150), np.full(150, 100), rng)
    batch = pa.concat_tables([upd, late, new])
    batch = batch.take(pa.array(rng.permutation(batch.num_rows)))
    hudi_ds.write(path, batch, opts)
    model.upsert(batch)
    check()
    # 3. delete some keys, by key (and partition columns) only
    gone = rng.choice(1150, 120, replace=False)
    keys = rows(gone, np.zeros(120), rng).select(["id", "dt", "region"])
    hudi_ds.write(path, keys, {**opts, "hoodie.datasource.write.operation": "delete"})
    model.delete(keys.column("id").to_pylist())
    check()
    # 4. re-insert deleted keys and update others
    again = pa.concat_tables(
        [rows(gone[:100], np.full(100, 10), rng), rows(np.arange(200, 400), np.full(200, 300), rng)]
    )
    hudi_ds.write(path, again, opts)
    model.upsert(again)
    check()
