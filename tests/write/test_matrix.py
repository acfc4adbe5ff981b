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
import pyarrow.parquet as pq
import pytest

import hudi_ds
from hudi_ds.log.block import BlockType
from hudi_ds.log.reader import decode_data_block, scan_log_bytes
from hudi_ds.schema import META_FIELDS, avro_to_arrow_schema
from tests.conftest import table_options
from tests.metadata.test_writer import assert_in_step

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


def theirs(path: str, options: dict[str, str] | None = None) -> list[tuple]:
    builder = hudi.HudiTableBuilder.from_base_uri(path)
    table = (builder.with_hudi_options(options) if options else builder).build()
    batches = table.read(hudi.HudiReadOptions())
    t = pa.Table.from_batches(batches) if batches else None
    if t is None:
        return []
    return sorted(zip(*(t.column(c).to_pylist() for c in COLS), strict=True))


#: (table type, log block format): a COPY_ON_WRITE table writes no log blocks, so its run with
#: Avro blocks would repeat its run with parquet blocks
TYPE_BLOCKS = [
    ("MERGE_ON_READ", "parquet"),
    ("MERGE_ON_READ", "avro"),
    ("COPY_ON_WRITE", "parquet"),
]


@pytest.mark.parametrize("merge", ["EVENT_TIME_ORDERING", "COMMIT_TIME_ORDERING"])
@pytest.mark.parametrize("parts", sorted(PARTITIONINGS))
@pytest.mark.parametrize("ttype, block", TYPE_BLOCKS)
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
    run_sequence(path, opts, Model(event_time=merge == "EVENT_TIME_ORDERING"))
    check_version(tmp_path / "t", version)


@pytest.mark.parametrize("parts", sorted(PARTITIONINGS))
@pytest.mark.parametrize("ttype", ["MERGE_ON_READ", "COPY_ON_WRITE"])
@pytest.mark.parametrize("version", [6, 8, 9])
def test_write_sequence_with_metadata_table(
    version: int, ttype: str, parts: str, tmp_path: Path
) -> None:
    """The same sequence on a table created with ``hoodie.metadata.enable=true`` (parquet log
    blocks): after every step hudi_ds (listing through the MDT) and hudi-rs with and without the
    MDT read the model (hudi-rs ignores the MDT of a v6 table); at the end the MDT lists exactly
    the committed files and hudi_ds reads the same without it.

    EVENT_TIME_ORDERING but on MOR of version 8+: there a new bucket starts with a base file
    (``write.options._bucket_base_files``), so a deleted key re-inserted with an older ``ts``
    lands in the log of a file group whose base file still holds the key and loses to that base
    record (as in Java): not the model, so COMMIT_TIME_ORDERING there."""
    path = str(tmp_path / "t")
    event_time = ttype == "COPY_ON_WRITE" or version < 8
    opts = {
        **table_options(
            "matrix", partition=",".join(PARTITIONINGS[parts]), table_type=ttype, buckets=4
        ),
        "hoodie.datasource.write.hive_style_partitioning": "true" if parts == "two" else "false",
        "hoodie.write.record.merge.mode": (
            "EVENT_TIME_ORDERING" if event_time else "COMMIT_TIME_ORDERING"
        ),
        "hoodie.logfile.data.block.format": "parquet",
        "hoodie.write.table.version": str(version),
        "hoodie.metadata.enable": "true",
    }
    model = Model(event_time=event_time)
    run_sequence(path, opts, model)
    root = tmp_path / "t"
    check_version(root, version)
    props = (root / ".hoodie" / "hoodie.properties").read_text()
    assert "\nhoodie.table.metadata.partitions=files\n" in props
    assert_in_step(root)
    expected = model.expected()
    t = hudi_ds.read(path, {"hoodie.metadata.enable": "false"}, columns=COLS)
    assert sorted(zip(*(t.column(c).to_pylist() for c in COLS), strict=True)) == expected
    assert theirs(path, {"hoodie.metadata.enable": "true"}) == expected
    assert theirs(path, {"hoodie.metadata.enable": "false"}) == expected


def check_version(root: Path, version: int) -> None:
    """The table at ``root`` is of table ``version``, its timeline of the matching layout."""
    props = (root / ".hoodie" / "hoodie.properties").read_text()
    assert f"\nhoodie.table.version={version}\n" in props
    assert f"\nhoodie.timeline.layout.version={1 if version == 6 else 2}\n" in props
    timeline = root / ".hoodie" / ("timeline" if version >= 8 else "")
    completed = [f.name for f in timeline.iterdir() if f.name.endswith(("commit", "deltacommit"))]
    # layout 2: completed instants are <requested>_<completion>.<action> files
    assert completed and all(("_" in n) == (version >= 8) for n in completed), completed


@pytest.mark.parametrize("index", ["BUCKET", "SIMPLE", "BLOOM"])
@pytest.mark.parametrize("parts", sorted(PARTITIONINGS))
@pytest.mark.parametrize("ttype", ["MERGE_ON_READ", "COPY_ON_WRITE"])
@pytest.mark.parametrize("version", [6, 8, 9])
def test_write_sequence_without_meta_fields(
    version: int, ttype: str, parts: str, index: str, tmp_path: Path
) -> None:
    """``hoodie.populate.meta.fields=false`` (Hudi's virtual keys): the same sequence, keys
    looked up and merged from the record key fields; the files keep the meta columns with
    null values (``_hoodie_file_name`` aside in base files), as Java writes them."""
    path = str(tmp_path / "t")
    # EVENT_TIME_ORDERING but on MOR under a non-bucket index, where a re-inserted deleted key
    # goes to the log of the file group whose base file still holds it, and the older
    # re-insert then loses to that base record (as in Java, meta fields or not): not the model
    event_time = ttype == "COPY_ON_WRITE" or index == "BUCKET"
    opts = {
        **table_options(
            "matrix",
            partition=",".join(PARTITIONINGS[parts]),
            table_type=ttype,
            buckets=4 if index == "BUCKET" else None,
        ),
        "hoodie.populate.meta.fields": "false",
        "hoodie.index.type": index,
        "hoodie.write.table.version": str(version),
        "hoodie.write.record.merge.mode": (
            "EVENT_TIME_ORDERING" if event_time else "COMMIT_TIME_ORDERING"
        ),
    }
    run_sequence(path, opts, Model(event_time=event_time))
    check_version(tmp_path / "t", version)
    assert (
        "hoodie.populate.meta.fields=false"
        in (tmp_path / "t/.hoodie/hoodie.properties").read_text()
    )
    assert_no_meta_values(tmp_path / "t")


def assert_no_meta_values(root: Path) -> None:
    """Every base file and log data block under ``root`` has the five meta columns, all null
    but a base file's ``_hoodie_file_name`` (its own name), and no key footers."""
    files = [f for f in root.rglob("*") if f.is_file() and ".hoodie" not in f.parts]
    bases = [f for f in files if f.suffix == ".parquet"]
    logs = [f for f in files if ".log." in f.name]
    assert bases or logs
    for f in bases:
        pf = pq.ParquetFile(f)
        assert not any(k.startswith((b"hoodie_", b"org.apache.hudi")) for k in pf.metadata.metadata)
        t = pf.read(columns=META_FIELDS)
        for c in META_FIELDS[:4]:
            assert t.column(c).null_count == t.num_rows, (f, c)
        assert set(t.column("_hoodie_file_name").to_pylist()) <= {f.name}
    for f in logs:
        for b in scan_log_bytes(f.read_bytes(), str(f)).blocks:
            if b.block_type in (BlockType.AVRO_DATA, BlockType.PARQUET_DATA):
                t = decode_data_block(b, avro_to_arrow_schema(b.schema))
                assert t.schema.names[:5] == META_FIELDS
                assert all(t.column(c).null_count == t.num_rows for c in META_FIELDS), f


def run_sequence(path: str, opts: dict[str, str], model: Model) -> None:
    """Steps 1-4 of the module docstring, each checked against ``model``."""
    rng = np.random.default_rng(7)
    version = int(opts.get("hoodie.write.table.version", "6"))

    def check() -> None:
        expected = model.expected()
        assert ours(path) == expected
        assert theirs(path) == expected
        if version >= 8:  # hudi-rs lists v8+ tables through a metadata table when asked to
            assert theirs(path, {"hoodie.metadata.enable": "true"}) == expected

    # 1. insert 1,000 rows
    ids = np.arange(1000)
    t = rows(ids, np.full(1000, 100), rng)
    hudi_ds.write(path, t, {**opts, "hoodie.datasource.write.operation": "insert"})
    model.upsert(t)
    check()
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
