"""Arrow-native scans of a table: ``HudiTable.scan``, ``to_pyarrow_dataset`` (the lazy
dataset of :mod:`hudi_ds.table.dataset`), the Arrow C stream, pandas and polars, and DuckDB
and polars scanning a MERGE_ON_READ table with pending log files lazily.

Every result is compared row by row with the rows the writes make, with ``hudi_ds.read`` and
with hudi-rs."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import duckdb
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pads
import pytest

import hudi_ds
from hudi_ds.errors import ConfigError, MissingFileError
from hudi_ds.table.dataset import partition_guarantee
from tests.builders import rows
from tests.conftest import assert_rows, hudi_rs_table, table_options, table_rows
from tests.fixtures import fixture_table, require_base_file_reader, tables_with_logs

COLS = ["id", "ts", "part", "v"]


_rows = partial(
    rows, key=None, part="part", part_of=lambda i: f"p{i % 3}", value=lambda i, ts: f"v{i}.{ts}"
)


@pytest.fixture(scope="module")
def mor(tmp_path_factory) -> tuple[str, list[tuple]]:
    """A MOR table of 3 partitions x 2 buckets: compacted base files with log files on top
    (updates, inserts and deletes not yet compacted); and its expected rows."""
    path = str(tmp_path_factory.mktemp("scan") / "t")
    opts = {
        **table_options("t", partition="part", table_type="MERGE_ON_READ"),
        "hoodie.compact.inline": "true",
        "hoodie.compact.inline.max.delta.commits": "2",
    }
    model: dict[int, tuple] = {}

    def apply(ids: list[int], ts: int) -> None:
        for i in ids:
            model[i] = (i, ts, f"p{i % 3}", f"v{i}.{ts}")

    hudi_ds.write(path, _rows(list(range(30)), 1), opts)
    apply(list(range(30)), 1)
    hudi_ds.write(path, _rows(list(range(0, 30, 2)), 2), opts)  # compacts
    apply(list(range(0, 30, 2)), 2)
    pending = {
        **opts,
        "hoodie.compact.inline": "false",
        "hoodie.datasource.compaction.async.enable": "false",  # logs stay pending
    }
    hudi_ds.write(path, _rows(list(range(25, 35)), 3), pending)
    apply(list(range(25, 35)), 3)
    hudi_ds.HudiTable(path).delete(_rows([1, 3, 4], 4), pending)
    for i in (1, 3, 4):
        del model[i]
    slices = hudi_ds.HudiTable(path).file_slices()
    assert len(slices) == 6
    assert all(s.base_file is not None and s.log_files for s in slices)  # pending logs
    return path, sorted(model.values())


def _where(rows: list[tuple], part: str) -> list[tuple]:
    return [r for r in rows if r[2] == part]


def test_expected_rows_are_what_both_readers_return(mor) -> None:
    path, expected = mor
    assert_rows(hudi_ds.read(path), expected, COLS)
    assert_rows(hudi_rs_table(path), expected, COLS)


def test_dataset_is_lazy_and_gives_the_snapshot(mor) -> None:
    path, expected = mor
    t = hudi_ds.HudiTable(path)
    d = t.to_pyarrow_dataset()
    assert isinstance(d, pads.Dataset)
    stats = t.last_scan_stats
    assert stats is not None
    assert (stats.slices_planned, stats.slices_read) == (6, 0)
    assert stats.read.base_files == stats.read.log_files == 0  # no data file read yet
    assert d.schema == t.schema
    got = d.to_table()
    assert got.schema == t.schema
    assert_rows(got, expected, COLS)
    assert stats.slices_read == 6  # each slice merged once
    assert stats.read.base_files == 6 and stats.read.log_files >= 6


def test_duckdb_scans_lazily_and_prunes_partitions(mor) -> None:
    path, expected = mor
    t = hudi_ds.HudiTable(path)
    d = t.to_pyarrow_dataset()  # noqa: F841 (DuckDB finds it by name)
    con = duckdb.connect()
    assert t.last_scan_stats.slices_read == 0
    full = con.sql("select id, ts, part, v from d").to_arrow_table()
    assert_rows(full, expected, COLS)
    rs = hudi_rs_table(path)
    assert_rows(full, [tuple(r[c] for c in COLS) for r in rs.to_pylist()], COLS)  # = hudi-rs
    full_reads = t.last_scan_stats.slices_read
    assert full_reads == 6

    d2 = t.to_pyarrow_dataset()  # noqa: F841 (DuckDB finds it by name)
    got = con.sql("select id, ts, part, v from d2 where part = 'p1' and id >= 10").to_arrow_table()
    assert_rows(got, [r for r in _where(expected, "p1") if r[0] >= 10], COLS)
    assert t.last_scan_stats.slices_read == 2 < full_reads  # the 2 slices of p1 only

    d3 = t.to_pyarrow_dataset()  # noqa: F841 (DuckDB finds it by name)
    got = con.sql("select count(*), sum(ts) from d3 where part in ('p0', 'p2')").fetchall()
    rows = _where(expected, "p0") + _where(expected, "p2")
    assert got == [(len(rows), sum(r[1] for r in rows))]
    assert t.last_scan_stats.slices_read == 4


def test_polars_scans_lazily_and_prunes_partitions(mor) -> None:
    path, expected = mor
    t = hudi_ds.HudiTable(path)
    lazy = t.to_polars(lazy=True)
    assert isinstance(lazy, pl.LazyFrame)
    assert t.last_scan_stats.slices_read == 0
    got = lazy.filter(pl.col("part") == "p2").select(COLS).collect().to_arrow()
    assert_rows(got, _where(expected, "p2"), COLS)
    assert t.last_scan_stats.slices_read == 2
    d = t.to_pyarrow_dataset()
    everything = pl.scan_pyarrow_dataset(d).collect()
    assert_rows(everything.to_arrow(), expected, COLS)
    assert t.last_scan_stats.slices_read == 6
    eager = t.to_polars(columns=COLS)
    assert isinstance(eager, pl.DataFrame)
    assert_rows(eager.to_arrow(), expected, COLS)


def test_scan_streams_slice_by_slice_with_projection_and_filters(mor) -> None:
    path, expected = mor
    t = hudi_ds.HudiTable(path)
    reader = t.scan(columns=["id", "v"], filters=[("part", "in", ["p0", "p1"]), ("ts", ">", 1)])
    assert isinstance(reader, pa.RecordBatchReader)
    assert reader.schema == pa.schema([t.schema.field("id"), t.schema.field("v")])
    batches = list(reader)
    want = [(r[0], r[3]) for r in expected if r[2] != "p2" and r[1] > 1]
    assert_rows(pa.Table.from_batches(batches, reader.schema), want, ["id", "v"])
    assert len(batches) >= 4  # one slice's rows at a time, not one table
    # a pyarrow expression prunes and filters too
    got = t.scan(columns=COLS, filters=pc.field("part") == "p0").read_all()
    assert_rows(got, _where(expected, "p0"), COLS)
    assert t.last_scan_stats.slices_read == 2


def test_stream_protocol_pandas_and_repr(mor) -> None:
    path, expected = mor
    t = hudi_ds.HudiTable(path)
    assert_rows(pa.table(t), expected, COLS)  # __arrow_c_stream__
    assert_rows(pl.DataFrame(t).to_arrow(), expected, COLS)
    got = duckdb.connect().sql("select id, ts, part, v from t").to_arrow_table()
    assert_rows(got, expected, COLS)
    df = t.to_pandas(columns=COLS)
    assert_rows(pa.Table.from_pandas(df, preserve_index=False), expected, COLS)
    last = t.timeline.commits().last()
    text = repr(t)
    for part in (path, "type=MERGE_ON_READ", "version=6", last.requested_time, last.action):
        assert part in text, text


def test_time_travel_and_bad_arguments(mor) -> None:
    path, _ = mor
    t = hudi_ds.HudiTable(path)
    first = t.timeline.commits().first().requested_time
    options = {"as.of.instant": first}
    want = [(i, 1, f"p{i % 3}", f"v{i}.1") for i in range(30)]
    assert_rows(t.scan(columns=COLS, options=options).read_all(), want, COLS)
    assert_rows(t.to_pyarrow_dataset(options=options).to_table(columns=COLS), want, COLS)
    with pytest.raises(ConfigError, match=r"did you mean \['id'\]"):
        t.scan(columns="id")
    with pytest.raises(ConfigError, match="nope"):
        t.scan(columns=["nope"])
    with pytest.raises(ConfigError, match="nope"):
        t.to_pyarrow_dataset(filters=[("nope", "=", 1)])


def test_a_missing_log_file_fails_the_engine_scan(tmp_path: Path, caplog) -> None:
    path = tmp_path / "t"
    opts = table_options("t", partition="part", table_type="MERGE_ON_READ")
    hudi_ds.write(str(path), _rows(list(range(6)), 1), opts)
    t = hudi_ds.HudiTable(str(path))
    d = t.to_pyarrow_dataset()
    victim = sorted(path.glob("p1/.*.log.*"))[0]
    fid = victim.name[1:].split("_")[0]
    victim.unlink()
    with caplog.at_level("ERROR", logger="hudi_ds.read"):
        with pytest.raises(pa.ArrowInvalid, match=f"p1/{fid}.arrow"):
            d.to_table()
        with pytest.raises(duckdb.Error, match=f"p1/{fid}.arrow"):
            duckdb.connect().sql("select * from d").fetchall()
    assert victim.name in caplog.text  # the cause, logged
    assert all(isinstance(e, MissingFileError) for e in t.last_scan_stats.errors)
    assert t.last_scan_stats.errors
    # partitions the filter prunes are not read: the others still answer
    got = duckdb.connect().sql("select id, ts, part, v from d where part = 'p0'").to_arrow_table()
    assert_rows(got, [(i, 1, "p0", f"v{i}.1") for i in (0, 3)], COLS)
    # scan() raises the slice's own error
    with pytest.raises(MissingFileError, match=victim.name):
        t.scan(filters=pc.field("part") == "p1").read_all()


def test_integer_partition_guarantee(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    data = pa.table({"id": list(range(6)), "ts": [1] * 6, "year": [2020 + i % 2 for i in range(6)]})
    hudi_ds.write(path, data, table_options("t", partition="year", table_type="MERGE_ON_READ"))
    t = hudi_ds.HudiTable(path)
    assert str(partition_guarantee(t, "2021", t.schema)) == "(year == 2021)"
    assert partition_guarantee(t, "0021", t.schema) is None  # not how 21 is written
    assert partition_guarantee(t, "__HIVE_DEFAULT_PARTITION__", t.schema) is None
    d = t.to_pyarrow_dataset()  # noqa: F841 (DuckDB finds it by name)
    got = duckdb.connect().sql("select id, ts, year from d where year = 2021").to_arrow_table()
    assert_rows(got, [(i, 1, 2021) for i in (1, 3, 5)], ["id", "ts", "year"])
    assert t.last_scan_stats.slices_read < t.last_scan_stats.slices_planned


@pytest.mark.parametrize("name", [n for n in tables_with_logs() if n.startswith("mor_")])
def test_fixture_tables_through_the_dataset(name: str, tmp_path_factory) -> None:
    """Apache Hudi's MOR tables with log files: the dataset and DuckDB give what read() gives
    (its golden rows are checked in test_read_fixtures; some hold a key twice, so the rows
    are compared as sorted lists, every value)."""
    require_base_file_reader(name)
    t = hudi_ds.HudiTable(str(fixture_table(name, tmp_path_factory)))
    want = t.read()
    cols = want.column_names
    d = t.to_pyarrow_dataset()
    got = d.to_table()
    assert got.schema == want.schema
    assert table_rows(got, cols) == table_rows(want, cols)
    assert t.last_scan_stats.slices_read == t.last_scan_stats.slices_planned  # each once
    via_duckdb = duckdb.connect().sql("select * from d").to_arrow_table()
    assert table_rows(via_duckdb, cols) == table_rows(want, cols)


def test_slices_without_logs_are_read_as_parquet(tmp_path: Path) -> None:
    """Compacted slices are their base files, read by the engine itself (its projection and
    row-group pruning); slices with logs are merged: one union dataset, the snapshot rows."""
    path = str(tmp_path / "t")
    opts = {
        **table_options("t", partition="part", table_type="MERGE_ON_READ"),
        "hoodie.compact.inline": "true",
        "hoodie.compact.inline.max.delta.commits": "1",
    }
    hudi_ds.write(path, _rows(list(range(12)), 1), opts)  # compacted at once
    model = {i: (i, 1, f"p{i % 3}", f"v{i}.1") for i in range(12)}
    pending = {
        **opts,
        "hoodie.compact.inline": "false",
        "hoodie.datasource.compaction.async.enable": "false",  # logs stay pending
    }
    hudi_ds.write(path, _rows([0, 3, 6, 30], 2), pending)  # logs in p0 only
    model.update({i: (i, 2, "p0", f"v{i}.2") for i in (0, 3, 6, 30)})
    expected = sorted(model.values())
    assert_rows(hudi_rs_table(path), expected, COLS)
    t = hudi_ds.HudiTable(path)
    d = t.to_pyarrow_dataset()
    assert isinstance(d, pads.UnionDataset)
    kinds = sorted(type(c.format).__name__ for c in d.children)
    assert kinds == ["IpcFileFormat", "ParquetFileFormat"]
    assert_rows(d.to_table(), expected, COLS)
    got = duckdb.connect().sql("select id, ts, part, v from d where part <> 'p0'").to_arrow_table()
    assert_rows(got, [r for r in expected if r[2] != "p0"], COLS)
    # a read's own filters apply to the Parquet slices too
    f = t.to_pyarrow_dataset(columns=["id", "v"], filters=[("id", ">=", 6)])
    assert_rows(f.to_table(), [(r[0], r[3]) for r in expected if r[0] >= 6], ["id", "v"])
    got = duckdb.connect().sql("select id, v from f").to_arrow_table()
    assert_rows(got, [(r[0], r[3]) for r in expected if r[0] >= 6], ["id", "v"])
