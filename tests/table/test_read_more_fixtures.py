"""Reading the second set of real Apache Hudi tables: the checks Trino's own tests assert.

The tables of ``../shared/fixtures/hudi-tables-more`` were written by Apache Hudi on Spark for
Trino's Hudi connector tests; each comes with ``expected.json``, the checks Trino's tests make on
it (a row count, or rows of given columns, optionally filtered, made distinct or aggregated).
Every check holds for hudi_ds's snapshot read.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import hudi_ds
from tests.fixtures import expected_checks, more_fixture_names, unzip_more

# Every table of the second set: versions 3 and 5 (Hudi 0.9-0.13) as well as 8.
READABLE_MORE = {
    "trino__hudi_custom_keygen_pt_v8_mor",
    "trino__hudi_non_part_cow",
    "trino__hudi_stock_ticks_mor",
    "trino__stock_ticks_mor",
}


def apply_check(rows: pa.Table, check: dict[str, Any]) -> None:
    """Assert one check of ``expected.json`` on ``rows`` (a snapshot read), naming it on failure."""
    source = check["source"]
    if "count" in check:
        assert rows.num_rows == check["count"], source
        return
    for column, value in check.get("where", {}).items():
        rows = rows.filter(pc.equal(rows[column], value))
    columns = check["columns"]
    got = [tuple(r[c] for c in columns) for r in rows.select(columns).to_pylist()]
    if "agg" in check:
        func, column = check["agg"].split(":")
        assert func == "max", check["agg"]
        keys = [c for c in columns if c != column]
        best: dict[tuple[Any, ...], Any] = {}
        for row in got:
            key = tuple(v for c, v in zip(columns, row, strict=True) if c != column)
            value = row[columns.index(column)]
            best[key] = value if key not in best else max(best[key], value)
        got = [(*k, v) if columns[-1] == column else (v, *k) for k, v in best.items()]
        assert keys == columns[:-1] or keys == columns[1:], columns
    if check.get("distinct"):
        got = list(set(got))
    expected = [tuple(r) for r in check["rows"]]
    assert Counter(got) == Counter(expected), source


@pytest.mark.parametrize("name", sorted(READABLE_MORE))
def test_more_fixture_satisfies_its_checks(name: str, tmp_path: Path) -> None:
    root = unzip_more(name, tmp_path)
    rows = hudi_ds.read(str(root))
    for check in expected_checks(name):
        apply_check(rows, check)


def test_every_more_fixture_is_covered() -> None:
    assert set(more_fixture_names()) == READABLE_MORE


def test_custom_keygen_prunes_its_simple_fields_only(tmp_path: Path) -> None:
    """CUSTOM key generator (``partition_field_country:SIMPLE,partition_field_date:TIMESTAMP``):
    a filter on the SIMPLE field prunes partitions as for the SIMPLE key generator (the folder
    holds the value); one on the TIMESTAMP field (folders hold the formatted day, the column
    the epoch millis) is applied to the rows."""
    root = unzip_more("trino__hudi_custom_keygen_pt_v8_mor", tmp_path)
    table = hudi_ds.HudiTable(str(root))
    plan = table.plan_read(filters=[("partition_field_country", "=", "SG")])
    assert {s.partition_path.split("/")[0] for s in plan.slices} == {"partition_field_country=SG"}
    rows = table.read(filters=[("partition_field_country", "=", "SG")])
    assert sorted(rows.column("id").to_pylist()) == [1, 2, 6, 7]
    dated = table.read(filters=[("partition_field_date", "=", 1749204000000)])
    assert sorted(dated.column("id").to_pylist()) == [2, 7]
    # (the column statistics would rule every slice out: folder pruning alone is checked)
    no_skipping = {"hoodie.enable.data.skipping": "false"}
    assert len(table.plan_read(no_skipping, filters=[("partition_field_date", "=", 1)]).slices) == 5
