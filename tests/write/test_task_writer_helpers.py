"""The task writer's Arrow helpers: ``take_rows`` (the rows a task routes, taken column by
column: a selection of the rows, as a write's prepare drops its delete rows, or a permutation,
as routing orders them by file group), equal to ``Table.take``; ``_holds_byte`` (the check
of simple record keys for ','), equal to ``pc.match_substring``."""

from __future__ import annotations

import importlib

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

task_writer = importlib.import_module("hudi_ds.write.task_writer")


def _table(n: int) -> pa.Table:
    keys = pa.array([f"k{i}" for i in range(n)])
    return pa.table(
        {
            "_hoodie_commit_time": pa.repeat(pa.scalar("001"), n),
            "_hoodie_record_key": keys,
            "id": keys,  # the key field: the same buffers as the record key column
            "v": pa.array(np.arange(n, dtype=np.int64)),
        }
    )


@pytest.mark.parametrize(
    "order",
    [np.array([4, 0, 2, 1, 3, 5]), np.array([0, 2, 5]), np.array([], np.int64), np.array([3])],
)
@pytest.mark.parametrize("threads", [1, 2])
def test_take_rows_equals_table_take(order: np.ndarray, threads: int) -> None:
    table = _table(6)
    got = task_writer.take_rows(table, order, threads, ("_hoodie_commit_time",))
    assert got.schema == table.schema
    assert got.to_pylist() == table.take(pa.array(order, pa.int64())).to_pylist()


def test_take_rows_keeps_shared_columns_shared() -> None:
    """The record key column over the key field's buffers stays over the same buffers as it,
    so that the next take (routing) takes the two once."""
    got = task_writer.take_rows(_table(6), np.array([5, 1, 3]), 1)
    key, field = (got.column(c).chunk(0) for c in ("_hoodie_record_key", "id"))
    assert [b.address for b in key.buffers() if b] == [b.address for b in field.buffers() if b]


@pytest.mark.parametrize(
    "values",
    [
        pa.array(["a", "b,c", "d"]),
        pa.array(["a", "b,c", "d"]).slice(2),  # the ',' before the slice is not seen
        pa.array(["a,", "b"]).slice(1),
        pa.array(["\u00e9,", "x"], pa.large_string()),
        pa.chunked_array([pa.array(["a"]), pa.array(["b", ","])]),
        pa.chunked_array([], pa.string()),
        pa.array([], pa.string()),
        pa.array(["a", None, "b,"]),
    ],
)
def test_holds_byte_equals_match_substring(values: pa.Array | pa.ChunkedArray) -> None:
    want = bool(pc.any(pc.match_substring(values, ",")).as_py())
    assert task_writer._holds_byte(values, ",") is want
