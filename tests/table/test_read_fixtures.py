"""Reading every real Apache Hudi table in shared/fixtures: rows equal the golden files exactly.

Each fixture was written by Apache Hudi on Spark (0.14/0.15 for v6, 1.0 for v8, 1.1/1.2 for v9)
and its golden rows were read by hudi-rs 0.5.0; see shared/fixtures/hudi-tables/README.md for the
history of each table (e.g. ``mor_avro_v6_trips_8i3d``: 8 inserts, then a delete block removing
3 keys -> 5 snapshot rows, 8 read-optimized rows).
"""

from __future__ import annotations

import pytest

import hudi_ds
from tests.fixtures import GOLDEN_DIR, fixture_names, fixture_table, require_base_file_reader
from tests.golden import golden_set, row_set

QUERY_TYPES = {"snapshot": "snapshot", "read_optimized": "read_optimized"}


@pytest.mark.parametrize("query", sorted(QUERY_TYPES))
@pytest.mark.parametrize("name", fixture_names())
def test_fixture_rows_equal_golden(name: str, query: str, tmp_path_factory) -> None:
    require_base_file_reader(name)
    root = fixture_table(name, tmp_path_factory)
    got = hudi_ds.read(str(root), {"hoodie.datasource.query.type": QUERY_TYPES[query]})
    expected = golden_set(GOLDEN_DIR / f"{name}.{query}.jsonl")
    assert len(got) == len(expected)
    assert row_set(got) == expected
