"""``HudiTable.update(set=..., predicate=...)`` and ``HudiTable.delete(predicate=...)``, and
the SQL expressions they (and MERGE) take.

Tables as in ``test_merge``: 180 rows ``k000``..``k179`` over three cities. Each statement's
result is compared, full rows, with the same statement applied to the rows in plain Python,
read by hudi_ds and by hudi-rs.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import hudi_ds
from hudi_ds.dml.expr import Scope, compile_expr, evaluate, pushdown_filters
from hudi_ds.errors import ConfigError, UnsupportedError
from tests.conftest import assert_rows, hudi_rs_table
from tests.dml.test_merge import base_rows, check, make_table, options, snapshot

CONFIGS = [("MERGE_ON_READ", "BUCKET", 6), ("COPY_ON_WRITE", "SIMPLE", 9)]


@pytest.mark.parametrize("table_type, index, version", CONFIGS)
def test_update_where(tmp_path: Path, table_type: str, index: str, version: int) -> None:
    root = tmp_path / "t"
    t = make_table(root, options(table_type, index, version))
    metrics = t.update(
        set={"fare": "fare * 2 + 1", "note": "concat(note, '-', city)"},
        predicate="city = 'nyc' AND fare >= 100",
    )
    model = {r["id"]: r for r in base_rows()}
    for r in model.values():
        if r["city"] == "nyc" and r["fare"] >= 100:
            r["fare"] = r["fare"] * 2 + 1
            r["note"] = f"{r['note']}-{r['city']}"
    check(root, model)
    assert metrics.num_target_rows_updated == 27 and metrics.instant is not None
    # both conjuncts were pushed into the read (its rows are the 27 selected)
    assert metrics.num_target_rows_read == 27


@pytest.mark.parametrize("table_type, index, version", CONFIGS)
def test_delete_where(tmp_path: Path, table_type: str, index: str, version: int) -> None:
    root = tmp_path / "t"
    t = make_table(root, options(table_type, index, version))
    metrics = t.delete(predicate="ts IN (1, 2) OR note LIKE 'n17%'")
    model = {
        r["id"]: r for r in base_rows() if not (r["ts"] in (1, 2) or r["note"].startswith("n17"))
    }
    check(root, model)
    assert metrics.num_target_rows_deleted == 180 - len(model)


def test_arrow_expression_predicates(tmp_path: Path) -> None:
    root = tmp_path / "t"
    t = make_table(root, options("MERGE_ON_READ", "BUCKET", 6))
    t.update(set={"ts": pc.field("ts") + 10}, predicate=pc.field("city") == "sf")
    t.delete(predicate=(pc.field("city") == "chennai") & (pc.field("fare") < 50))
    model = {
        r["id"]: {**r, "ts": r["ts"] + 10} if r["city"] == "sf" else r
        for r in base_rows()
        if not (r["city"] == "chennai" and r["fare"] < 50)
    }
    check(root, model)


def test_delete_by_keys_still_works(tmp_path: Path) -> None:
    root = tmp_path / "t"
    t = make_table(root, options("COPY_ON_WRITE", "SIMPLE", 6))
    t.delete(pa.table({"id": ["k001"], "city": ["nyc"]}))
    check(root, {r["id"]: r for r in base_rows() if r["id"] != "k001"})


def test_no_matching_row_commits_nothing(tmp_path: Path) -> None:
    root = tmp_path / "t"
    t = make_table(root, options("MERGE_ON_READ", "BUCKET", 6))
    before = snapshot(root)
    assert t.update(set={"fare": "0"}, predicate="fare > 1000").instant is None
    assert t.delete(predicate="city = 'paris'").instant is None
    assert snapshot(root) == before


@pytest.mark.parametrize(
    "call, error, match",
    [
        (lambda t: t.update(set={"nope": "1"}), ConfigError, r"no column 'nope'"),
        (lambda t: t.update(set={"city": "'x'"}), ConfigError, r"record key or partition"),
        (lambda t: t.update(set={"id": "'x'"}), ConfigError, r"record key or partition"),
        (lambda t: t.update(set={"fare": "nope + 1"}), ConfigError, r"unknown column 'nope'"),
        (
            lambda t: t.update(set={"ts": "'abc'"}),
            ConfigError,
            r"column 'ts' \(string\) does not fit",
        ),
        (lambda t: t.update(set={"fare": "1"}, predicate="fare"), ConfigError, r"not boolean"),
        (lambda t: t.delete(predicate="fare % 2 = 0"), UnsupportedError, r"Mod"),
        (lambda t: t.delete(predicate="x.fare > 1"), ConfigError, r"unknown table alias 'x'"),
        (
            lambda t: t.delete(pa.table({"id": ["k1"]}), predicate="fare > 1"),
            ConfigError,
            "not both",
        ),
    ],
)
def test_bad_statements_refused(tmp_path: Path, call, error, match) -> None:
    root = tmp_path / "t"
    t = make_table(root, options("MERGE_ON_READ", "BUCKET", 6))
    before = snapshot(root)
    with pytest.raises(error, match=match):
        call(t)
    assert snapshot(root) == before


def test_sql_expressions_translate() -> None:
    """The SQL subset against hand-computed values (NULLs follow SQL: unknown is not true)."""
    table = pa.table({"a": [1, 2, None, 4], "b": ["x", "Yz", "q", None], "c": [1.5, 2.0, 3.0, 4.5]})
    scope = Scope({"t": table.column_names}, bare="t")
    cases = {
        "a + 1": [2, 3, None, 5],
        "t.a * 2 - 1": [1, 3, None, 7],
        "a / 2": [0.5, 1.0, None, 2.0],
        "-a": [-1, -2, None, -4],
        "a BETWEEN 2 AND 4": [False, True, None, True],
        "a IN (1, 4)": [True, False, None, True],
        "a NOT IN (1, 4)": [False, True, None, False],
        "a IS NULL": [False, False, True, False],
        "b IS NOT NULL AND a <> 2": [True, False, None, False],
        "lower(b) = 'yz' OR upper(b) = 'X'": [True, True, False, None],
        "coalesce(a, 0)": [1, 2, 0, 4],
        "b || '!'": ["x!", "Yz!", "q!", None],
        "length(b)": [1, 2, 1, None],
        "abs(c - 3)": [1.5, 1.0, 0.0, 1.5],
        "CAST(c AS BIGINT)": [1, 2, 3, 4],
        "CASE WHEN a > 2 THEN 'big' WHEN a > 0 THEN 'small' ELSE 'none' END": [
            "small",
            "small",
            "none",
            "big",
        ],
        "b LIKE 'Y%'": [False, True, False, None],
        "TRUE AND a = 1": [True, False, None, False],
        "NULL": [None, None, None, None],
    }
    exprs = {text: compile_expr(text, scope, text) for text in cases}
    got = evaluate(table, {str(i): e for i, e in enumerate(exprs.values())}, "test")
    for i, (text, want) in enumerate(cases.items()):
        assert got.column(str(i)).to_pylist() == want, text


def test_pushdown_filters() -> None:
    """The simple conjuncts of a predicate become read filters; anything under OR or a
    function call pushes nothing (it is still evaluated on the rows read)."""
    cols = ["id", "city", "fare"]

    def pushed(text: str) -> list:
        return sorted(pushdown_filters(text, cols), key=repr)

    assert pushed("city = 'sf' AND (fare > 3 OR id = 'a') AND 5 <= t.fare") == [
        ("city", "=", "sf"),
        ("fare", ">=", 5),
    ]
    assert pushed("id IN ('a', 'b') AND fare IS NULL") == [
        ("fare", "is null", None),
        ("id", "in", ["a", "b"]),
    ]
    assert pushed("lower(city) = 'sf' OR fare > 1") == []


def test_keyless_table(tmp_path: Path) -> None:
    """Apache Hudi's table with auto-generated keys (fixture ``cow_0x_partitioned``, 5 rows):
    DELETE by predicate deletes the rows by the keys they were read with (a DELETE_PREPPED
    commit, as Hudi's DeleteHoodieTableCommand); MERGE and UPDATE, which write upserts by key,
    are refused before anything is written, as Hudi refuses upserts there."""
    from tests.write.test_fixture_writes import unzip

    root = unzip("cow_0x_partitioned", tmp_path)
    t = hudi_ds.HudiTable(str(root))
    rows = t.read().to_pylist()
    before = snapshot(root)
    with pytest.raises(ConfigError, match="no record key fields"):
        t.update(set={"fare": "0"})
    with pytest.raises(ConfigError, match="no record key fields"):
        t.merge(pa.table({"uuid": ["x"]}), on=["uuid"]).when_matched_delete().execute()
    assert snapshot(root) == before
    metrics = t.delete(predicate="fare > 20 AND city <> 'chennai'")
    cols = ["uuid", "ts", "rider", "driver", "fare", "city"]
    expected = [
        tuple(r[c] for c in cols) for r in rows if not (r["fare"] > 20 and r["city"] != "chennai")
    ]
    assert 0 < metrics.num_target_rows_deleted == len(rows) - len(expected)
    assert_rows(hudi_ds.read(str(root)), expected, cols)
    assert_rows(hudi_rs_table(str(root)), expected, cols)
