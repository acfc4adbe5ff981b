"""The writer's acceptance matrix: every write is read back by us and by hudi-rs.

On new tables of version {6, 8, 9} (``hoodie.write.table.version``), {MOR, COW},
{partitioned by one field, by two fields, non-partitioned}, {parquet, avro log blocks},
{EVENT_TIME_ORDERING, COMMIT_TIME_ORDERING}, the sequence

1. insert 1,000 rows;
2. upsert: 200 updates with a newer ``ts``, 100 late updates with an older ``ts``, 150 new keys;
3. delete 120 keys (by key only);
4. upsert again: 100 re-inserts of deleted keys, 200 updates

is checked after every step against a plain in-memory model of the expected rows.

Not every combination runs (suite time, docs/testing.md): each test runs every combination of
the dimensions whose code paths meet (table version x table type x log block format x merge
mode: the timeline layout, the file-group layout of a new bucket, the merge on read or on
write; the index with the table type and the partitioning), and cycles the remaining one
through them so that every value of it meets every value of each other dimension (every pair,
most triples: :func:`test_cases_cover_every_pair` checks it); ``HUDI_DS_FULL_MATRIX=1`` runs
every combination (127 tests, about 2 minutes instead of 50 s). The partitioning is the key
generator's and the partition path's business, the same code whatever the table version, type
or merge mode; the table version changes the timeline and the table config, not how an index
finds a key.
"""

from __future__ import annotations

import itertools
import os
from pathlib import Path

import hudi
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import hudi_ds
from hudi_ds.log.block import BlockType
from hudi_ds.log.reader import decode_data_block, scan_log_bytes
from hudi_ds.schema.avro import avro_to_arrow_schema
from hudi_ds.schema.meta import META_FIELDS
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


VERSIONS = [6, 8, 9]
PARTS = sorted(PARTITIONINGS)
MERGES = ["EVENT_TIME_ORDERING", "COMMIT_TIME_ORDERING"]
TTYPES = ["MERGE_ON_READ", "COPY_ON_WRITE"]
INDEXES = ["BUCKET", "SIMPLE", "BLOOM"]


def _run(cases: list[tuple], *dims: list) -> list[tuple]:
    """``cases``, or with ``HUDI_DS_FULL_MATRIX=1`` every combination of ``dims`` (as ordered
    in the cases)."""
    return list(itertools.product(*dims)) if os.environ.get("HUDI_DS_FULL_MATRIX") else cases


def matrix_options(version: int, ttype: str, parts: str, block: str, merge: str) -> dict[str, str]:
    """The options of a matrix table: table version, type, partitioning (``PARTITIONINGS``),
    log block format and merge mode."""
    return {
        **table_options(
            "matrix", partition=",".join(PARTITIONINGS[parts]), table_type=ttype, buckets=4
        ),
        "hoodie.datasource.write.hive_style_partitioning": "true" if parts == "two" else "false",
        "hoodie.write.record.merge.mode": merge,
        "hoodie.logfile.data.block.format": block,
        "hoodie.write.table.version": str(version),
    }


#: every (version, table type + block format, merge mode), the partitioning cycling through them:
#: every (partitioning, x) pair, and every (partitioning, merge mode, version or type + block)
#: triple (18 of the 54 combinations)
SEQUENCE_CASES = [
    (v, type_block, PARTS[(vi + ti + mi) % 3], merge)
    for vi, v in enumerate(VERSIONS)
    for ti, type_block in enumerate(TYPE_BLOCKS)
    for mi, merge in enumerate(MERGES)
]


@pytest.mark.parametrize(
    "version, ttype, block, parts, merge",
    [
        (v, t, b, p, m)
        for v, (t, b), p, m in _run(SEQUENCE_CASES, VERSIONS, TYPE_BLOCKS, PARTS, MERGES)
    ],
)
def test_write_sequence(
    version: int, ttype: str, parts: str, block: str, merge: str, tmp_path: Path
) -> None:
    path = str(tmp_path / "t")
    opts = matrix_options(version, ttype, parts, block, merge)
    run_sequence(path, opts, Model(event_time=merge == "EVENT_TIME_ORDERING"))
    check_version(tmp_path / "t", version)


#: every (version, partitioning) -- the MDT's layout is the version's, its ``files`` partition
#: lists the data table's partitions --, the table type alternating: every (version, type) and
#: (partitioning, type) pair (9 of the 18 combinations)
MDT_CASES = [
    (v, TTYPES[(vi + pi) % 2], parts)
    for vi, v in enumerate(VERSIONS)
    for pi, parts in enumerate(PARTS)
]


@pytest.mark.parametrize("version, ttype, parts", _run(MDT_CASES, VERSIONS, TTYPES, PARTS))
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
    # versions 8 and 9: column stats by default, and partition stats when partitioned
    declared = (
        "files"
        if version < 8
        else "column_stats,files" + (",partition_stats" if PARTITIONINGS[parts] else "")
    )
    assert f"\nhoodie.table.metadata.partitions={declared}\n" in props
    assert_in_step(root)
    if version >= 8:
        from tests.metadata.test_column_stats import assert_stats_in_step  # imports this module

        assert_stats_in_step(root)
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


#: every (table type, partitioning, index) -- an index looks keys up per partition, and on MOR
#: routes updates to logs --, the table version cycling through them: every (version, x) pair,
#: every (version, type, index) and (version, type, partitioning) triple (18 of the 54)
NO_META_CASES = [
    (VERSIONS[(ti + pi + ii) % 3], ttype, parts, index)
    for ti, ttype in enumerate(TTYPES)
    for pi, parts in enumerate(PARTS)
    for ii, index in enumerate(INDEXES)
]


def _pairs(cases: list[tuple]) -> set[tuple]:
    """(dimension, value, other dimension, its value) of every two dimensions of ``cases``."""
    n = len(cases[0])
    return {(i, c[i], j, c[j]) for c in cases for i in range(n) for j in range(i + 1, n)}


def test_cases_cover_every_pair() -> None:
    """Each reduced matrix still has every pair of values of any two of its dimensions, and
    every combination of the dimensions it runs in full."""
    for cases, dims in (
        (SEQUENCE_CASES, [VERSIONS, TYPE_BLOCKS, PARTS, MERGES]),
        (MDT_CASES, [VERSIONS, TTYPES, PARTS]),
        (NO_META_CASES, [VERSIONS, TTYPES, PARTS, INDEXES]),
    ):
        assert _pairs(cases) == _pairs(list(itertools.product(*dims)))
    assert sorted((v, tb, m) for v, tb, _, m in SEQUENCE_CASES) == sorted(
        itertools.product(VERSIONS, TYPE_BLOCKS, MERGES)
    )
    assert sorted(c[1:] for c in NO_META_CASES) == sorted(itertools.product(TTYPES, PARTS, INDEXES))


@pytest.mark.parametrize(
    "version, ttype, parts, index", _run(NO_META_CASES, VERSIONS, TTYPES, PARTS, INDEXES)
)
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
