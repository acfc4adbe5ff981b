"""bench/check.py: the benchmark's final-table check finds every kind of difference."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from bench.check import compare, verdict


@pytest.fixture
def ref() -> pa.Table:
    return pa.table(
        {
            "id": [f"id-{i}" for i in range(6)],
            "ts": pa.array([1, 2, 3, 4, 5, 6], pa.int64()),
            "s": ["a", None, "c", "d", "e", "f"],
            "x": [0.5, 1.5, None, 3.5, 4.5, 5.5],
        }
    )


def test_equal_tables_in_any_order_and_with_extra_columns(ref: pa.Table) -> None:
    got = ref.take([5, 3, 1, 0, 2, 4]).append_column("_hoodie_commit_time", pa.array(["c"] * 6))
    c = compare(got, ref)
    assert c["correct"] and c["mismatched_rows"] == 0 and verdict(c).startswith("yes")


def test_types_are_conformed(ref: pa.Table) -> None:
    got = ref.cast(
        pa.schema(
            [
                ("id", pa.large_string()),
                ("ts", pa.int64()),
                ("s", pa.large_string()),
                ("x", pa.float64()),
            ]
        )
    )
    got = got.set_column(2, "s", pc.dictionary_encode(got["s"]))
    assert compare(got, ref)["correct"]


def test_duplicates_missing_extra_and_values(ref: pa.Table) -> None:
    dup = pa.concat_tables([ref, ref.slice(0, 2)])
    c = compare(dup, ref)
    assert not c["correct"] and c["duplicate_keys"] == 2 and c["duplicate_rows"] == 2

    c = compare(ref.slice(1), ref)
    assert not c["correct"] and c["missing"] == 1 and c["rows"] == 5

    extra = pa.concat_tables([ref, ref.slice(0, 1).set_column(0, "id", pa.array(["id-99"]))])
    c = compare(extra, ref)
    assert not c["correct"] and c["extra"] == 1

    # one changed value, one null where a value was, one value where a null was
    changed = ref.set_column(1, "ts", pa.array([1, 2, 3, 4, 5, 7], pa.int64()))
    changed = changed.set_column(3, "x", pa.array([None, 1.5, 2.5, 3.5, 4.5, 5.5]))
    c = compare(changed, ref)
    assert not c["correct"] and c["differing"] == 3 and c["mismatched_rows"] == 3
    assert c["rows"] == c["expected_rows"]  # same count, still caught


def test_missing_column_mismatches(ref: pa.Table) -> None:
    assert not compare(ref.drop_columns(["s"]), ref)["correct"]
