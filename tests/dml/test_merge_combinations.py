"""MERGE statements made of random combinations of clauses, against the model of
:mod:`tests.dml.test_merge`.

Each example draws a list of clauses (each kind, with and without conditions, in any order,
unconditional ones before conditional ones included: first match wins, so a later clause of
the kind may be unreachable) and a table configuration, merges the standard source into a copy
of the standard table and compares the result, full rows, with the model -- read by hudi_ds and
by hudi-rs.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hudi_ds
from tests.dml.test_merge import (
    CONFIGS,
    ModelClause,
    base_rows,
    check,
    make_table,
    model_merge,
    options,
    source_rows,
)

Clause = tuple[str, Callable[[Any], Any], ModelClause]

#: (name, builder call, model clause)
POOL: list[Clause] = [
    (
        "matched_delete_cheap",
        lambda m: m.when_matched_delete(predicate="s.fare < 1010"),
        ("matched", "delete", lambda s, t: s["fare"] < 1010, None),
    ),
    (
        "matched_delete",
        lambda m: m.when_matched_delete(),
        ("matched", "delete", None, None),
    ),
    (
        "matched_update_sf",
        lambda m: m.when_matched_update(
            set={"fare": "s.fare * 2", "ts": "s.ts", "note": "t.note || '+'"},
            predicate="s.ts > t.ts AND t.city = 'sf'",
        ),
        (
            "matched",
            "update",
            lambda s, t: s["ts"] > t["ts"] and t["city"] == "sf",
            lambda s, t: {
                "fare": s["fare"] * 2,
                "ts": s["ts"],
                "note": None if t["note"] is None else t["note"] + "+",
            },
        ),
    ),
    (
        "matched_update_fare",
        lambda m: m.when_matched_update(
            set={"fare": "s.fare + t.fare"}, predicate="t.city = 'nyc'"
        ),
        (
            "matched",
            "update",
            lambda s, t: t["city"] == "nyc",
            lambda s, t: {"fare": s["fare"] + t["fare"]},
        ),
    ),
    (
        "matched_update_all_newer",
        lambda m: m.when_matched_update_all(predicate="s.ts >= t.ts"),
        ("matched", "update", lambda s, t: s["ts"] >= t["ts"], None),
    ),
    (
        "matched_update_all",
        lambda m: m.when_matched_update_all(),
        ("matched", "update", None, None),
    ),
    (
        "matched_update_note",
        lambda m: m.when_matched_update(set={"note": "'u'"}),
        ("matched", "update", None, lambda s, t: {"note": "u"}),
    ),
    (
        "insert_values",
        lambda m: m.when_not_matched_insert(
            values={"id": "s.id", "city": "s.city", "ts": "s.ts", "fare": "s.fare"},
            predicate="s.city <> 'nyc'",
        ),
        (
            "not_matched",
            "insert",
            lambda s, t: s["city"] != "nyc",
            lambda s, t: {"id": s["id"], "city": s["city"], "ts": s["ts"], "fare": s["fare"]},
        ),
    ),
    (
        "insert_all_between",
        lambda m: m.when_not_matched_insert_all(predicate="s.ts BETWEEN 2 AND 4"),
        ("not_matched", "insert", lambda s, t: 2 <= s["ts"] <= 4, None),
    ),
    (
        "insert_all",
        lambda m: m.when_not_matched_insert_all(),
        ("not_matched", "insert", None, None),
    ),
    (
        "by_source_delete_dear",
        lambda m: m.when_not_matched_by_source_delete(predicate="t.fare > 170"),
        ("by_source", "delete", lambda s, t: t["fare"] > 170, None),
    ),
    (
        "by_source_delete",
        lambda m: m.when_not_matched_by_source_delete(),
        ("by_source", "delete", None, None),
    ),
]

_bases: dict[tuple[str, str, int], Path] = {}


@pytest.fixture(scope="module")
def workdir() -> Any:
    with tempfile.TemporaryDirectory(prefix="merge-combos-") as d:
        yield Path(d)
    _bases.clear()


def _fresh_table(workdir: Path, config: tuple[str, str, int], n: int) -> Path:
    """A copy of the standard table in ``config`` (written once per configuration)."""
    base = _bases.get(config)
    if base is None:
        base = workdir / "base-{}-{}-{}".format(*config)
        make_table(base, options(*config))
        _bases[config] = base
    root = workdir / f"t{n}"
    shutil.copytree(base, root)
    return root


_counter = iter(range(1_000_000))


@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    config=st.sampled_from(CONFIGS),
    picks=st.lists(st.sampled_from(range(len(POOL))), min_size=1, max_size=5, unique=True),
)
def test_random_clause_combinations(workdir: Path, config: Any, picks: list[int]) -> None:
    root = _fresh_table(workdir, config, next(_counter))
    clauses = [POOL[i] for i in picks]
    builder = hudi_ds.HudiTable(str(root)).merge(
        pa.Table.from_pylist(source_rows()), on="t.id = s.id"
    )
    for _, call, _ in clauses:
        builder = call(builder)
    metrics = builder.execute()
    model = model_merge({r["id"]: r for r in base_rows()}, source_rows(), [c[2] for c in clauses])
    check(root, model)
    assert metrics.num_source_rows == len(source_rows())
    shutil.rmtree(root)
