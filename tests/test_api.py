"""The embedded API's input edge (``hudi_ds.api._as_reader``): polars, pandas and Arrow inputs
normalised once, written and read back equal by hudi_ds and hudi-rs."""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd
import polars as pl
import pyarrow as pa
import pytest

import hudi_ds
from hudi_ds import api
from hudi_ds.errors import MissingDependencyError, SchemaError
from hudi_ds.schema.plain import plain_schema, plain_type
from tests.conftest import assert_rows, hudi_rs_table, table_options

COLS = ["id", "ts", "part", "blob", "tags", "addr"]


def _frame(ids: list[str], ts: int) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "id": ids,
            "ts": [ts] * len(ids),
            "part": [f"p{int(i[1:]) % 2}" for i in ids],
            "blob": [i.encode() for i in ids],
            "tags": [[i, "t"] for i in ids],
            "addr": [{"city": f"c{i}"} for i in ids],
        }
    )


def _expected(ids: list[str], ts: int) -> list[tuple]:
    return [(i, ts, f"p{int(i[1:]) % 2}", i.encode(), [i, "t"], {"city": f"c{i}"}) for i in ids]


def _check(path: str, expected: list[tuple]) -> None:
    assert_rows(hudi_ds.read(path), expected, COLS)
    assert_rows(hudi_rs_table(path), expected, COLS)


def test_polars_view_types_normalised_at_the_edge() -> None:
    frame = _frame(["k1", "k2"], 1)
    schema, batches = api._as_reader(frame)
    raw = pa.RecordBatchReader.from_stream(frame).schema
    assert pa.types.is_string_view(raw.field("id").type)  # what polars hands out
    assert schema == plain_schema(raw)
    assert schema.field("id").type == pa.string()
    assert schema.field("blob").type == pa.binary()
    assert schema.field("tags").type == pa.list_(pa.string())
    assert schema.field("addr").type == pa.struct([("city", pa.string())])
    out = list(batches)
    assert all(b.schema == schema for b in out)
    assert sum(b.num_rows for b in out) == 2


def test_plain_type_covers_large_and_view_layouts() -> None:
    assert plain_type(pa.large_string()) == pa.string()
    assert plain_type(pa.large_binary()) == pa.binary()
    assert plain_type(pa.large_list(pa.string_view())) == pa.list_(pa.string())
    m = plain_type(pa.map_(pa.large_string(), pa.binary_view()))
    assert m == pa.map_(pa.string(), pa.binary())
    d = plain_type(pa.dictionary(pa.int32(), pa.large_string()))
    assert d == pa.dictionary(pa.int32(), pa.string())
    assert plain_type(pa.int64()) == pa.int64()


def test_write_polars_dataframe_and_lazy_frame(tmp_path: Path, monkeypatch) -> None:
    """String keys and a string partition column from polars (string_view), then an upsert
    from a LazyFrame collected a few rows at a time."""
    path = str(tmp_path / "t")
    opts = table_options("t", partition="part", table_type="MERGE_ON_READ")
    first = ["k1", "k2", "k3", "k4"]
    hudi_ds.write(path, _frame(first, 1), opts)
    _check(path, _expected(first, 1))

    monkeypatch.setattr(api, "LAZY_FRAME_BATCH_ROWS", 2)
    later = ["k3", "k4", "k5", "k6", "k7"]
    lazy = _frame(later, 0).lazy().with_columns(pl.col("ts") + 2)
    schema, batches = api._as_reader(lazy)
    sizes = [b.num_rows for b in batches]
    assert sum(sizes) == 5 and max(sizes) <= 2, sizes  # collected in batches
    assert schema.field("id").type == pa.string()
    hudi_ds.HudiTable(path).upsert(lazy)
    _check(path, _expected(["k1", "k2"], 1) + _expected(later, 2))


def test_empty_lazy_frame_has_the_schema_of_its_result() -> None:
    lazy = _frame(["k1"], 1).lazy().filter(pl.col("ts") > 5)
    schema, batches = api._as_reader(lazy)
    assert schema.field("id").type == pa.string()
    assert sum(b.num_rows for b in batches) == 0


def test_write_pandas_large_strings_without_index(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    df = pd.DataFrame(
        {"id": ["a", "b"], "ts": [1, 2], "part": ["x", "y"]},
        index=pd.Index([10, 11], name="row"),
    )
    schema, _ = api._as_reader(df)
    assert schema.names == ["id", "ts", "part"]  # the index is not a column
    assert schema.field("id").type == pa.string()
    hudi_ds.write(path, df, table_options("t", partition="part"))
    expected = [("a", 1, "x"), ("b", 2, "y")]
    assert_rows(hudi_ds.read(path), expected, ["id", "ts", "part"])
    assert_rows(hudi_rs_table(path), expected, ["id", "ts", "part"])


def test_a_pandas_key_in_the_index_is_refused_with_the_reset_index_hint(tmp_path: Path) -> None:
    path = tmp_path / "t"
    df = pd.DataFrame({"ts": [1, 2]}, index=pd.Index(["a", "b"], name="id"))
    with pytest.raises(SchemaError) as e:
        hudi_ds.write(str(path), df, table_options("t"))
    assert str(e.value) == (
        "field(s) ['id'] are the pandas DataFrame's index, not columns: hudi_ds writes a "
        "frame without its index; call df.reset_index() first"
    )
    assert not path.exists()
    hudi_ds.write(str(path), df.reset_index(), table_options("t"))
    assert_rows(hudi_ds.read(str(path)), [("a", 1), ("b", 2)], ["id", "ts"])
    assert_rows(hudi_rs_table(str(path)), [("a", 1), ("b", 2)], ["id", "ts"])


def test_a_nested_key_field_is_named_unsupported_not_missing(tmp_path: Path) -> None:
    data = pa.table({"s": [{"a": 1}, {"a": 2}], "ts": [1, 2]})
    opts = {**table_options("t"), "hoodie.datasource.write.recordkey.field": "s.a"}
    with pytest.raises(SchemaError) as e:
        hudi_ds.write(str(tmp_path / "t"), data, opts)
    assert str(e.value) == (
        "record key field 's.a' (hoodie.datasource.write.recordkey.field) is a nested field "
        "of struct column 's': hudi_ds does not support nested key or partition fields; add "
        "a top-level column holding it (e.g. in pyarrow pc.struct_field(col, 'a')) and name "
        "that column"
    )
    assert not (tmp_path / "t").exists()


@pytest.mark.parametrize("method", ["to_pandas", "to_polars"])
def test_a_missing_optional_package_is_named_with_its_pip_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, method: str
) -> None:
    path = str(tmp_path / "t")
    hudi_ds.write(path, pa.table({"id": ["a"], "ts": [1]}), table_options("t"))
    package = method.removeprefix("to_")
    monkeypatch.setitem(sys.modules, package, None)  # import now raises ImportError
    with pytest.raises(MissingDependencyError) as e:
        getattr(hudi_ds.HudiTable(path), method)()
    assert str(e.value) == (
        f"HudiTable.{method} needs the '{package}' package, which is not installed: "
        f"pip install {package}"
    )
    assert isinstance(e.value, ImportError) and e.value.name == package


def test_arrow_large_types_written_as_plain(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    data = pa.table(
        {
            "id": pa.array(["a", "b"], pa.large_string()),
            "ts": [1, 2],
            "payload": pa.array([b"x", b"yy"], pa.large_binary()),
        }
    )
    reader = pa.RecordBatchReader.from_batches(data.schema, data.to_batches())
    hudi_ds.write(path, reader, table_options("t"))
    got = hudi_ds.read(path)
    assert got.schema.field("id").type == pa.string()
    expected = [("a", 1, b"x"), ("b", 2, b"yy")]
    assert_rows(got, expected, ["id", "ts", "payload"])
    assert_rows(hudi_rs_table(path), expected, ["id", "ts", "payload"])


def test_unknown_input_is_refused() -> None:
    with pytest.raises(SchemaError, match="LazyFrame"):
        api._as_reader(object())


@pytest.mark.parametrize("index", ["GLOBAL_SIMPLE", "BUCKET"])
def test_input_of_many_small_chunks_is_tagged_in_few_calls(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, index: str
) -> None:
    """A pyarrow table of 500 small chunks is tagged in one call, not 500 (each call pays an
    index lookup, and a global index checks every key the task inserted before it: 1,000
    chunks of 200 rows took 50 s instead of 1 s); the rows stay in order, the later version of
    a key winning."""
    from hudi_ds.write.task_writer import TaskWriter

    calls: list[int] = []
    tag = TaskWriter.tag

    def counted(self: TaskWriter, prepared):  # type: ignore[no-untyped-def]
        calls.append(prepared.data.num_rows)
        return tag(self, prepared)

    monkeypatch.setattr(TaskWriter, "tag", counted)
    n = 5000
    ids = [f"k{i % 4000}" for i in range(n)]  # the last 1,000 rows update the first keys
    t = pa.table({"id": ids, "ts": [1] * n, "p": ["p0", "p1"] * (n // 2), "v": list(range(n))})
    chunked = pa.Table.from_batches(t.to_batches(max_chunksize=10))
    path = str(tmp_path / "t")
    buckets = 2 if index == "BUCKET" else None
    opts = {**table_options("t", partition="p", buckets=buckets), "hoodie.index.type": index}
    hudi_ds.write(path, chunked, opts)
    assert calls == [n]
    last = {k: (v, p) for k, v, p in zip(ids, range(n), t.column("p").to_pylist(), strict=True)}
    expected = [(k, p, v) for k, (v, p) in last.items()]
    assert_rows(hudi_ds.read(path), expected, ["id", "p", "v"])
    assert_rows(hudi_rs_table(path), expected, ["id", "p", "v"])
