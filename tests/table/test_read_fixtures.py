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


@pytest.mark.parametrize("name", fixture_names())
def test_fixture_projected_reads_equal_full_read(name: str, tmp_path_factory) -> None:
    """A read of some columns returns those columns of the full read's rows, every row.

    Projected reads read less than the full read: no ``_hoodie_record_key`` when the record
    key field keys the merge (simple key generator), only the delete flags for slices without
    logs; every fixture's history (updates, deletes, rollbacks, partial blocks) must still
    give the same rows.
    """
    require_base_file_reader(name)
    root = str(fixture_table(name, tmp_path_factory))
    full = hudi_ds.read(root)
    data = [c for c in full.column_names if not c.startswith("_hoodie")]
    keys = hudi_ds.HudiTable(root).config.record_key_fields
    subsets = [data, data[:1], data[-1:], [k for k in keys if k in data]]
    if "_hoodie_record_key" in full.column_names:
        subsets.append(["_hoodie_record_key", *data[-1:]])
    for cols in subsets:
        if not cols:
            continue
        got = hudi_ds.read(root, columns=cols)
        assert got.column_names == cols
        assert got.num_rows == full.num_rows, cols
        assert row_set(got) == row_set(full.select(cols)), cols
