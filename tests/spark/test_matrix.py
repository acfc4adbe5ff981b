"""The writer acceptance matrix through ``df.write.format("hudi_py")``.

Same sequence as tests/write/test_matrix.py (insert 1,000 -> upsert with updates, late rows and
new keys -> delete by key -> upsert with re-inserts), but every step is a Spark write of a
DataFrame randomly repartitioned into 5 partitions, so every bucket is written by several tasks
of one instant. After each step Spark, hudi_ds and hudi-rs must all return the model's rows.

Nine sequences cover every pair of values of the five dimensions (table version 6/8/9 --
``hoodie.write.table.version`` --, table type, partitioning, log block format, merge mode; each
version runs each table type + block format once); ``HUDI_DS_FULL_MATRIX=1`` adds every
combination on version 6 (18, about 2 minutes more). The Spark path has no per-combination
code -- the DataFrame's Arrow batches reach the same task writer whatever the table --, and
tests/write/test_matrix.py runs every combination of the dimensions that meet without Spark.
"""

from __future__ import annotations

import itertools
import os
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from tests.write.test_matrix import COLS, PARTITIONINGS, Model, matrix_options, ours, rows, theirs

pytestmark = [pytest.mark.spark, pytest.mark.slow]

#: (version, table type, partitioning, block format, merge mode): every pair of values of any
#: two dimensions (test_cases_cover_every_pair); a COPY_ON_WRITE table only with parquet blocks
PAIRWISE = [
    (6, "MERGE_ON_READ", "none", "parquet", "EVENT_TIME_ORDERING"),
    (6, "MERGE_ON_READ", "one", "avro", "EVENT_TIME_ORDERING"),
    (6, "COPY_ON_WRITE", "two", "parquet", "COMMIT_TIME_ORDERING"),
    (8, "MERGE_ON_READ", "none", "avro", "COMMIT_TIME_ORDERING"),
    (8, "COPY_ON_WRITE", "one", "parquet", "EVENT_TIME_ORDERING"),
    (8, "MERGE_ON_READ", "two", "parquet", "EVENT_TIME_ORDERING"),
    (9, "COPY_ON_WRITE", "none", "parquet", "COMMIT_TIME_ORDERING"),
    (9, "MERGE_ON_READ", "one", "parquet", "COMMIT_TIME_ORDERING"),
    (9, "MERGE_ON_READ", "two", "avro", "EVENT_TIME_ORDERING"),
]
#: every combination, but a COPY_ON_WRITE table only with parquet blocks: it writes no log
#: blocks, so its Avro-block run would repeat its parquet-block run
FULL = [
    c
    for c in itertools.product(
        ["MERGE_ON_READ", "COPY_ON_WRITE"],
        sorted(PARTITIONINGS),
        ["parquet", "avro"],
        ["EVENT_TIME_ORDERING", "COMMIT_TIME_ORDERING"],
    )
    if c[0] == "MERGE_ON_READ" or c[2] == "parquet"
]
CASES = PAIRWISE + (
    [(6, *c) for c in FULL if (6, *c) not in PAIRWISE]
    if os.environ.get("HUDI_DS_FULL_MATRIX")
    else []
)


def test_cases_cover_every_pair() -> None:
    """Every pair of values of two dimensions runs (versions 8 and 9 included), and every
    version runs every table type + block format."""
    full = [(v, *c) for v in (6, 8, 9) for c in FULL]

    def pairs(cases: list[tuple]) -> set[tuple]:
        return {(i, c[i], j, c[j]) for c in cases for i in range(5) for j in range(i + 1, 5)}

    assert pairs(PAIRWISE) == pairs(full)
    assert sorted((v, t, b) for v, t, _, b, _ in PAIRWISE) == sorted(
        {(v, t, b) for v, t, _, b, _ in full}
    )


def via_spark(spark: Any, path: str) -> list[tuple]:
    t = spark.read.format("hudi_py").load(path).select(*COLS).toArrow()
    return sorted(zip(*(t.column(c).to_pylist() for c in COLS), strict=True))


@pytest.mark.parametrize("version, ttype, parts, block, merge", CASES)
def test_spark_write_sequence(
    spark: Any, version: int, ttype: str, parts: str, block: str, merge: str, tmp_path: Path
) -> None:
    path = str(tmp_path / "t")
    opts = matrix_options(version, ttype, parts, block, merge)
    rng = np.random.default_rng(11)
    model = Model(event_time=merge == "EVENT_TIME_ORDERING")

    def save(t: pa.Table, op: str = "upsert") -> None:
        t = t.take(pa.array(rng.permutation(t.num_rows)))
        df = spark.createDataFrame(t).repartition(5)
        df.write.format("hudi_py").mode("append").options(
            **{**opts, "hoodie.datasource.write.operation": op}
        ).save(path)

    def check() -> None:
        expected = model.expected()
        assert via_spark(spark, path) == expected
        assert ours(path) == expected
        assert theirs(path) == expected

    t = rows(np.arange(1000), np.full(1000, 100), rng)
    save(t, "insert")
    model.upsert(t)
    check()
    # distinct keys within a batch: across Spark tasks there is no "later row" of a batch
    # (Hudi's Spark pre-combine under commit-time ordering is order-dependent too)
    touched = rng.choice(1000, 300, replace=False)
    upd = rows(touched[:200], np.full(200, 200), rng)
    late = rows(touched[200:], np.full(100, 50), rng)
    new = rows(np.arange(1000, 1150), np.full(150, 100), rng)
    batch = pa.concat_tables([upd, late, new])
    save(batch)
    model.upsert(batch)
    check()
    gone = rng.choice(1150, 120, replace=False)
    keys = rows(gone, np.zeros(120), rng).select(["id", "dt", "region"])
    save(keys, "delete")
    model.delete(keys.column("id").to_pylist())
    check()
    others = np.setdiff1d(np.arange(1150), gone[:100])[:200]
    again = pa.concat_tables(
        [rows(gone[:100], np.full(100, 10), rng), rows(others, np.full(200, 300), rng)]
    )
    save(again)
    model.upsert(again)
    check()
