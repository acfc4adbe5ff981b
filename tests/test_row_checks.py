"""The shared table checks see what dicts, id lists and counts hid."""

from __future__ import annotations

import os

import pyarrow as pa
import pytest
from hypothesis import settings

from tests.conftest import assert_rows

COLS = ["id", "ts", "v"]


def test_a_duplicated_key_fails_even_when_the_dict_view_matches() -> None:
    t = pa.table({"id": ["a", "a", "b"], "ts": [1, 2, 1], "v": ["x", "y", "z"]})
    expected = [("a", 2, "y"), ("b", 1, "z")]
    # what the old checks compared: a dict of id -> ts collapses the duplicate
    assert dict(zip(t["id"].to_pylist(), t["ts"].to_pylist(), strict=True)) == {"a": 2, "b": 1}
    with pytest.raises(AssertionError, match=r"duplicate keys \[\('a',\)\]"):
        assert_rows(t, expected, COLS)


def test_a_wrong_value_fails_even_when_ids_and_counts_match() -> None:
    t = pa.table({"id": ["a", "b"], "ts": [2, 1], "v": ["stale", "z"]})
    assert sorted(t["id"].to_pylist()) == ["a", "b"] and t.num_rows == 2
    with pytest.raises(AssertionError, match="unexpected .*'stale'"):
        assert_rows(t, [("a", 2, "y"), ("b", 1, "z")], COLS)


def test_composite_keys_and_a_passing_table() -> None:
    t = pa.table({"id": ["a", "a"], "ts": [1, 2], "v": ["x", "y"]})
    assert_rows(t, [("a", 2, "y"), ("a", 1, "x")], COLS, key=["id", "ts"])
    assert_rows(pa.table({"id": pa.array([], pa.string())}), [], ["id"])


def test_hypothesis_profiles() -> None:
    """`make test` is derandomized; the explore profile draws fresh examples."""
    if os.environ.get("HYPOTHESIS_PROFILE", "repro") == "repro":
        assert settings.default.derandomize is True and settings.default.database is None
    explore = settings.get_profile("explore")
    assert explore.derandomize is False and explore.deadline is None
    assert explore.max_examples >= 1000
