"""Data skipping: reads prune file slices with the metadata table's ``column_stats`` and
partitions with its ``partition_stats`` (``hoodie.enable.data.skipping``), and return exactly
the rows of the unfiltered read filtered with pyarrow.

The fixtures are Java-written version 8/9 tables holding both partitions (COW and MOR,
Parquet and Lance base files, Avro logs, a rollback, an insert_overwrite). The new tables
are version 9, partitioned by ``p`` (``a`` / ``b``), built by five inserts of ten rows into
new file groups (no small-file packing), so the value column ``v`` (``100 * batch + i``)
has a disjoint range per file group; ``n`` is NULL in every third row, ``m`` in the first
three batches. The MOR table then
moves key 3 (batch 0) to ``v = 455`` through a log file, and deletes key 12 through another.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import hudi_ds
from hudi_ds.api import HudiTable
from hudi_ds.table.filters import Filter, filter_expression
from hudi_ds.table.table import ReadableTable
from tests.fixtures import fixture_table

# fixtures with column stats (and partition stats) where the battery below skips something
SKIPPING_FIXTURES = [
    "cow_v9_txns_simple_meta",
    "cow_v9_txns_complex_meta",
    "cow_v9_timebasedkeygen_epochmillis",
    "cow_v9_txns_simple_overwrite",
    "mor_avro_v8_trips_8i3u1d",
    "mor_avro_v9_txns_simple_meta",
    "mor_avro_v9_nonpartitioned_rollback",
    "mor_avro_v9_timebasedkeygen_nonhivestyle",
]
# Lance base files carry no statistics while Java's partition records leave their values out
LANCE_FIXTURES = ["mor_avro_v9_trips_lance", "cow_v9_lance_txns_simple"]


def rows(t: pa.Table) -> list[tuple[Any, ...]]:
    """Full rows, sorted, duplicates kept."""
    names = sorted(t.column_names)
    return sorted(
        (tuple(r[c] for c in names) for r in t.to_pylist()),
        key=repr,
    )


def expected(full: pa.Table, filters: Sequence[Filter]) -> list[tuple[Any, ...]]:
    expr = filter_expression(list(filters))
    return rows(full if expr is None else full.filter(expr))


def _usable(t: pa.DataType) -> bool:
    return not (
        pa.types.is_floating(t)
        or pa.types.is_nested(t)
        or pa.types.is_binary(t)
        or pa.types.is_large_binary(t)
        or pa.types.is_fixed_size_binary(t)
    )


def battery(full: pa.Table) -> list[list[Filter]]:
    """Filter shapes over the comparable columns: =, <, >=, >, !=, in, is null, is not null
    (two per column, in turn), and an AND of two."""
    out: list[list[Filter]] = []
    for f in full.schema:
        if not _usable(f.type) or f.name == "_hoodie_file_name":
            continue
        values = pc.unique(full.column(f.name).drop_null()).to_pylist()
        if not values:
            continue
        values.sort()
        lo, mid, hi = values[0], values[len(values) // 2], values[-1]
        c = f.name
        shapes: list[list[Filter]] = [
            [(c, "=", mid)],
            [(c, "<", mid)],
            [(c, ">=", hi)],
            [(c, ">", hi)],
            [(c, "!=", lo)],
            [(c, "in", [lo, mid])],
            [(c, "is null", None)],
            [(c, "is not null", None)],
        ]
        k = len(out) % len(shapes)
        out += (shapes + shapes)[k : k + 2]
    if len(out) > 3:
        out.append(out[0] + out[3])
    return out


def check(
    table: ReadableTable, options: dict[str, str] | None = None, most: int | None = None
) -> int:
    """Every battery filter read (the first ``most``) equals the unfiltered read filtered;
    returns the slices and partitions data skipping left out over the battery."""
    full = table.read(options)
    skipped = 0
    for flt in battery(full)[:most]:
        got = table.read(options, filters=flt)
        assert rows(got) == expected(full, flt), flt
        st = table.last_read_stats
        skipped += st.data_skipped_slices + st.data_skipped_partitions
    return skipped


@pytest.mark.parametrize("name", SKIPPING_FIXTURES + LANCE_FIXTURES)
def test_fixture_filtered_reads_skip_and_return_the_filtered_rows(name: str, tmp_path_factory):
    table = ReadableTable(str(fixture_table(name, tmp_path_factory)))
    skipped = check(table)
    if name in SKIPPING_FIXTURES:
        assert skipped > 0
    if name.startswith("mor_"):
        check(table, {"hoodie.datasource.query.type": "read_optimized"}, most=8)
    first = table.timeline.commits().first()
    assert first is not None
    check(table, {"as.of.instant": first.requested_time}, most=8)


@pytest.mark.parametrize("name", ["cow_v9_txns_simple_meta", "mor_avro_v8_trips_8i3u1d"])
def test_prefix_reads_of_java_statistics_equal_the_full_read(name: str, tmp_path_factory) -> None:
    """The records of some columns read by key prefix (only the HFile blocks they fall in)
    are exactly those of the whole partition's read, in Java-written metadata tables."""
    from hudi_ds.metadata.column_stats import stats_key_prefix
    from hudi_ds.metadata.stats_reader import read_stats_partition

    table = ReadableTable(str(fixture_table(name, tmp_path_factory)))
    reader = table.metadata_reader()
    assert reader is not None
    for partition in ("column_stats", "partition_stats"):
        args = (reader.storage, reader.timeline, table.timeline, table.config.table_version)
        full = read_stats_partition(*args, partition)
        columns = sorted({r["columnName"] for r in full.values()})
        assert len(columns) > 2
        for cols in (columns[:1], columns[1:3], columns[-1:]):
            prefixes = [stats_key_prefix(c) for c in cols]
            got = read_stats_partition(*args, partition, None, prefixes)
            want = {k: v for k, v in full.items() if k.startswith(tuple(prefixes))}
            assert got == want and want, (partition, cols)


# -- a new table with many small file groups ----------------------------------------------------
BASE_OPTIONS = {
    "hoodie.table.name": "skip",
    "hoodie.datasource.write.recordkey.field": "id",
    "hoodie.datasource.write.partitionpath.field": "p",
    "hoodie.datasource.write.precombine.field": "ts",
    "hoodie.write.table.version": "9",
    "hoodie.index.type": "SIMPLE",
    "hoodie.parquet.small.file.limit": "0",
    "hoodie.clean.automatic": "false",
    "hoodie.compact.inline": "false",
    "hoodie.datasource.compaction.async.enable": "false",
    "hoodie.metadata.enable": "true",
    "hoodie.metadata.index.column.stats.enable": "true",
    "hoodie.metadata.index.partition.stats.enable": "true",
}


def batch(k: int) -> pa.Table:
    ids = list(range(10 * k, 10 * k + 10))
    return pa.table(
        {
            "id": pa.array(ids, pa.int64()),
            "p": ["a" if i % 2 else "b" for i in ids],
            "v": pa.array([100 * k + i % 10 for i in ids], pa.int64()),
            "s": [f"s{i:03d}" for i in ids],
            "n": pa.array([None if i % 3 == 0 else i for i in ids], pa.int32()),
            "m": pa.array([None if k < 3 else f"m{i}" for i in ids], pa.string()),
            "ts": pa.array([1] * 10, pa.int64()),
        }
    )


_BUILT: dict[str, Path] = {}


def new_table(table_type: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The module's table of ``table_type`` (built once), see the module docstring."""
    if table_type not in _BUILT:
        root = tmp_path_factory.mktemp(f"skip_{table_type}") / "t"
        opts = {**BASE_OPTIONS, "hoodie.datasource.write.table.type": table_type}
        for k in range(5):
            hudi_ds.write(str(root), batch(k), opts)
        if table_type == "MERGE_ON_READ":
            moved = batch(0).slice(3, 1)
            moved = moved.set_column(2, "v", pa.array([455], pa.int64()))
            moved = moved.set_column(6, "ts", pa.array([2], pa.int64()))
            hudi_ds.write(str(root), moved, opts)
            hudi_ds.write(
                str(root),
                batch(1).slice(2, 1),
                {**opts, "hoodie.datasource.write.operation": "delete"},
            )
        _BUILT[table_type] = root
    return _BUILT[table_type]


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
def test_new_table_filtered_reads(table_type: str, tmp_path_factory) -> None:
    root = new_table(table_type, tmp_path_factory)
    table = ReadableTable(str(root))
    assert check(table) > 0
    # a selective filter on a non-partition, non-key column: of ten file groups, the two
    # of batch 2 (partition b holds 204, a's range 201..209 spans it)
    table.read(filters=[("v", "=", 204)])
    st = table.last_read_stats
    assert st.data_skipped_slices == 8 and st.base_files == 2
    # NULLs never match a comparison: a file group is kept for its non-null values only
    got = table.read(filters=[("n", ">", 40)])
    assert sorted(got.column("id").to_pylist()) == [41, 43, 44, 46, 47, 49]
    # null counts: m is NULL in the six file groups of batches 0..2 only
    got = table.read(filters=[("m", "is not null", None)])
    assert sorted(got.column("id").to_pylist()) == list(range(30, 50))
    assert table.last_read_stats.data_skipped_slices == 6
    got = table.read(filters=[("m", "is null", None)])
    assert table.last_read_stats.data_skipped_slices == 4
    assert rows(got) == expected(table.read(), [("m", "is null", None)])
    commits = table.timeline.commits()
    # column stats name files: they prune a time travel and an incremental read too (Java's
    # HoodieFileIndex prunes a time travel's slices with them; its incremental relations
    # prune by partition only, so here an incremental read skips more than Java's)
    assert check(table, {"as.of.instant": commits[2].requested_time}) > 0
    incremental = {
        "hoodie.datasource.query.type": "incremental",
        "hoodie.datasource.read.begin.instanttime": commits[1].requested_time,
    }
    assert check(table, incremental) > 0
    # v 204 is in batch 2's file groups, which the incremental read sees with the others its
    # commits touched (MOR: also key 3's and key 12's, by their log files)
    table.read(incremental, filters=[("v", "=", 204)])
    st = table.last_read_stats
    skipped = {"COPY_ON_WRITE": 6, "MERGE_ON_READ": 7}[table_type]
    assert (st.base_files, st.data_skipped_slices) == (2, skipped)


def test_mor_slice_with_a_matching_log_update_is_read(tmp_path_factory) -> None:
    root = new_table("MERGE_ON_READ", tmp_path_factory)
    table = ReadableTable(str(root))
    # key 3's base file holds v 0..9, its log v = 455: the slice must be read
    got = table.read(filters=[("v", "=", 455)])
    assert got.column("id").to_pylist() == [3]
    st = table.last_read_stats
    # partition b's statistics (v 100..408) rule it out, four of a's five slices too
    assert (st.data_skipped_partitions, st.data_skipped_slices) == (1, 4)
    assert (st.base_files, st.log_files) == (1, 1)
    # the old value is gone from the merged rows although the base file's range holds it
    assert table.read(filters=[("v", "=", 3)]).num_rows == 0
    # read-optimized reads the base file only: the old row is there
    ro = table.read({"hoodie.datasource.query.type": "read_optimized"}, filters=[("v", "=", 3)])
    assert ro.column("id").to_pylist() == [3]
    # the deleted key stays deleted
    assert table.read(filters=[("id", "=", 12)]).num_rows == 0


def test_data_skipping_off_prunes_nothing(tmp_path_factory) -> None:
    root = new_table("COPY_ON_WRITE", tmp_path_factory)
    table = ReadableTable(str(root))
    flt: list[Filter] = [("v", "=", 204)]
    table.read(filters=flt)
    assert table.last_read_stats.data_skipped_slices == 8
    got = table.read({"hoodie.enable.data.skipping": "false"}, filters=flt)
    st = table.last_read_stats
    assert st.data_skipped_slices == 0 and st.data_skipped_partitions == 0
    assert st.base_files == 10
    assert got.column("id").to_pylist() == [24]


def test_stale_index_prunes_nothing(tmp_path_factory, tmp_path: Path) -> None:
    """A data commit the metadata table does not hold moves key 3 to v = 9999 in a new base
    file: the statistics (of the old file group and of partition ``a``'s old range) would
    leave it out, so nothing is skipped while the metadata table lags."""
    root = tmp_path / "t"
    shutil.copytree(new_table("COPY_ON_WRITE", tmp_path_factory), root)
    mdt = root / ".hoodie" / "metadata"
    before = tmp_path / "mdt"
    shutil.copytree(mdt, before)
    moved = batch(0).slice(3, 1).set_column(2, "v", pa.array([9999], pa.int64()))
    hudi_ds.write(str(root), moved, {**BASE_OPTIONS, "hoodie.table.type": "COPY_ON_WRITE"})
    shutil.rmtree(mdt)
    shutil.copytree(before, mdt)
    table = ReadableTable(str(root))
    got = table.read(filters=[("v", "=", 9999)])
    assert got.column("id").to_pylist() == [3]
    st = table.last_read_stats
    assert st.data_skipped_slices == 0 and st.data_skipped_partitions == 0
    assert rows(table.read(filters=[("v", ">", 400)])) == expected(table.read(), [("v", ">", 400)])


def test_scan_and_dataset_skip_too(tmp_path_factory) -> None:
    root = new_table("MERGE_ON_READ", tmp_path_factory)
    table = HudiTable(str(root))
    flt: list[Filter] = [("v", "=", 455)]
    want = expected(table.read(), flt)
    assert rows(table.scan(filters=flt).read_all()) == want
    assert rows(table.to_pyarrow_dataset(filters=flt).to_table()) == want
    assert table.last_scan_stats is not None
    assert table.last_scan_stats.slices_planned == 1


@pytest.mark.parametrize(
    ("table_type", "expr", "flt", "read"),
    [
        ("COPY_ON_WRITE", pc.field("v") == 204, [("v", "=", 204)], 2),
        ("COPY_ON_WRITE", pc.field("v") < 5, [("v", "<", 5)], 2),
        ("COPY_ON_WRITE", pc.field("m").is_valid(), [("m", "is not null", None)], 4),
        # NULLs in n: the bounds allow them, which Arrow cannot use to prune
        ("COPY_ON_WRITE", pc.field("n") > 40, [("n", ">", 40)], 10),
        # key 3's slice bounds v by the union of its base (0..9) and log (455) ranges
        ("MERGE_ON_READ", pc.field("v") == 455, [("v", "=", 455)], 1),
        ("MERGE_ON_READ", pc.field("v") == 204, [("v", "=", 204)], 3),
    ],
)
def test_dataset_fragments_carry_the_column_stats_bounds(
    table_type: str, expr: pc.Expression, flt: list[Filter], read: int, tmp_path_factory
) -> None:
    """An engine's own filter on a dataset (as DuckDB and polars push theirs) skips the
    slices whose column statistics rule it out, unopened."""
    table = HudiTable(str(new_table(table_type, tmp_path_factory)))
    got = table.to_pyarrow_dataset().to_table(filter=expr)
    assert rows(got) == expected(table.read(), flt)
    assert table.last_scan_stats is not None
    assert (table.last_scan_stats.slices_planned, table.last_scan_stats.slices_read) == (10, read)
    off = table.to_pyarrow_dataset(options={"hoodie.enable.data.skipping": "false"})
    assert rows(off.to_table(filter=expr)) == expected(table.read(), flt)
    assert table.last_scan_stats.slices_read == 10


def test_the_statistics_of_a_column_are_decoded_once(tmp_path_factory, monkeypatch) -> None:
    """Reads, plans and datasets of one table handle share the ranges decoded for a column
    (the handle's metadata reader stands while its timeline does); a refreshed or new handle
    finds them in the process while the statistics' files are the same; a commit that
    changes them makes the next read decode them again."""
    from hudi_ds.metadata.stats_reader import StatsSources

    calls: list[tuple[str, ...]] = []
    real = StatsSources.read

    def counted(self: StatsSources, *args: Any, **kwargs: Any) -> Any:
        if args[1] is not None:  # a read's (a writer reads every record)
            calls.append(tuple(args[1]))
        return real(self, *args, **kwargs)

    monkeypatch.setattr(StatsSources, "read", counted)
    path = tmp_path_factory.mktemp("decoded") / "t"
    shutil.copytree(new_table("COPY_ON_WRITE", tmp_path_factory), path)
    table = HudiTable(str(path))
    assert table.read(filters=[("v", "=", 204)]).column("id").to_pylist() == [24]
    assert len(calls) == 2  # column_stats and partition_stats, the column v only
    assert table.read(filters=[("v", ">", 400), ("s", "<", "s045")]).num_rows == 4
    assert len(calls) == 4 and all(len(c) == 1 for c in calls)  # s only
    assert table.read(filters=[("v", "<", 5), ("s", ">", "s0")]).num_rows == 5
    assert len(calls) == 4
    assert table.last_read_stats.data_skipped_slices == 8
    table.refresh()
    assert table.read(filters=[("v", "=", 204)]).column("id").to_pylist() == [24]
    assert HudiTable(str(path)).read(filters=[("v", "=", 204)]).num_rows == 1
    assert len(calls) == 4
    change = batch(2).slice(4, 1).set_column(2, "v", pa.array([9999], pa.int64()))
    hudi_ds.write(str(path), change.set_column(6, "ts", pa.array([2], pa.int64())), BASE_OPTIONS)
    got = HudiTable(str(path)).read(filters=[("v", "=", 9999)])
    assert got.column("id").to_pylist() == [24] and len(calls) == 6


def test_unreadable_statistics_skip_nothing(tmp_path_factory, tmp_path: Path, caplog) -> None:
    root = tmp_path / "t"
    shutil.copytree(new_table("COPY_ON_WRITE", tmp_path_factory), root)
    stats = root / ".hoodie" / "metadata" / "column_stats"
    for f in stats.iterdir():
        if ".hfile" in f.name or ".log." in f.name:
            f.write_bytes(f.read_bytes()[:40])
    table = ReadableTable(str(root))
    got = table.read(filters=[("v", "=", 204)])
    assert got.column("id").to_pylist() == [24]
    assert table.last_read_stats.data_skipped_slices == 0
    assert "data skipping is off for this read" in caplog.text


def test_the_metadata_listing_is_grouped_once_per_state(tmp_path_factory, monkeypatch) -> None:
    """Reads through one state of the metadata table share its file groups, in one handle
    and across handles (a refresh too); a commit changes the listing: the next read groups
    it again and sees the new file."""
    from hudi_ds.table.fs_view import FileSystemView

    grouped: list[str] = []
    real = FileSystemView._load_groups

    def counted(self: FileSystemView, partition: str) -> Any:
        grouped.append(partition)
        return real(self, partition)

    path = tmp_path_factory.mktemp("grouped") / "t"
    shutil.copytree(new_table("MERGE_ON_READ", tmp_path_factory), path)
    monkeypatch.setattr(FileSystemView, "_load_groups", counted)
    table = HudiTable(str(path))
    first = table.read(filters=[("v", ">", 400)])
    assert sorted(grouped) == ["a", "b"]
    assert rows(table.read(filters=[("v", ">", 400)])) == rows(first)
    assert rows(table.read()) == rows(HudiTable(str(path)).read())
    table.refresh()
    assert rows(table.read(filters=[("v", ">", 400)])) == rows(first)
    assert len(grouped) == 2
    opts = {**BASE_OPTIONS, "hoodie.datasource.write.table.type": "MERGE_ON_READ"}
    hudi_ds.write(str(path), batch(9).slice(0, 1), opts)  # id 90, v 900: partition b
    fresh = HudiTable(str(path))
    got = fresh.read(filters=[("v", ">", 400)])
    assert len(grouped) > 2
    assert 90 in got.column("id").to_pylist() and got.num_rows == first.num_rows + 1
    assert rows(got) == expected(fresh.read(), [("v", ">", 400)])
