"""Suite-wide settings and shared checks.

Hypothesis profiles (``HYPOTHESIS_PROFILE``, default ``repro``):

* ``repro`` -- derandomized: the same examples every run, no example database, so the suite
  (``make test``) is reproducible;
* ``explore`` -- fresh random examples on every run, many of them, failures saved to the
  example database and printed with a reproduction blob (``make test-explore`` runs the
  hypothesis tests this way for a fixed time, see docs/testing.md).

``HUDI_DS_HYPOTHESIS=explore`` (the older switch) selects ``explore`` too.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Sequence

import hudi
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, settings

from tests.fixtures import MISSING_REASON, fixtures_present

settings.register_profile("repro", derandomize=True, database=None, deadline=None)
settings.register_profile(
    "explore",
    derandomize=False,
    deadline=None,
    max_examples=int(os.environ.get("HYPOTHESIS_MAX_EXAMPLES", "2000")),
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
_profile = os.environ.get("HYPOTHESIS_PROFILE") or (
    "explore" if os.environ.get("HUDI_DS_HYPOTHESIS") == "explore" else "repro"
)
settings.load_profile(_profile)


def hudi_rs_table(path: str) -> pa.Table:
    """The snapshot of the table at ``path`` as hudi-rs (the ``hudi`` package) reads it."""
    batches = hudi.HudiTableBuilder.from_base_uri(path).build().read(hudi.HudiReadOptions())
    if not batches:
        return pa.table({})
    return pa.Table.from_batches(batches)


def table_rows(table: pa.Table, columns: Sequence[str]) -> list[tuple]:
    """The rows of ``table`` as tuples of ``columns`` (sorted; every value compared)."""
    if table.num_rows == 0:
        return []
    missing = [c for c in columns if c not in table.column_names]
    assert not missing, f"columns {missing} missing from {table.column_names}"
    cols = [table.column(c).to_pylist() for c in columns]
    return sorted(zip(*cols, strict=True), key=repr)


def assert_rows(
    table: pa.Table,
    expected: Sequence[tuple],
    columns: Sequence[str],
    key: Sequence[str] | None = None,
) -> None:
    """``table`` holds exactly the rows ``expected`` (tuples of ``columns``).

    Checks first that no key (``key`` columns, default the first column) appears twice, so a
    duplicated record cannot hide behind a dict or a count, then compares every value of
    every row (sorted, so row order does not matter).
    """
    key = list(key or columns[:1])
    rows = table_rows(table, columns)
    idx = [list(columns).index(k) for k in key]
    keys = Counter(tuple(r[i] for i in idx) for r in rows)
    dups = sorted((k for k, c in keys.items() if c > 1), key=repr)
    assert not dups, f"duplicate keys {dups[:10]} ({len(dups)} in all)"
    want = sorted((tuple(r) for r in expected), key=repr)
    if rows != want:
        have, need = set(rows), set(want)
        raise AssertionError(
            f"rows differ: {len(rows)} read, {len(want)} expected; "
            f"unexpected {sorted(have - need, key=repr)[:10]}, "
            f"missing {sorted(need - have, key=repr)[:10]}"
        )


def _is_hypothesis_test(item: object) -> bool:
    obj = getattr(item, "obj", None)
    if getattr(obj, "is_hypothesis_test", False):
        return True
    cls = getattr(item, "cls", None)
    return cls is not None and any(
        c.__module__.startswith("hypothesis.stateful") for c in cls.__mro__
    )


def pytest_collection_modifyitems(config: object, items: list) -> None:
    """``HUDI_DS_HYPOTHESIS_ONLY=1`` keeps only the property-based tests (``make test-explore``).

    Without the fixture tables, a test parametrized over them has an empty parameter set: it is
    skipped with the reason naming the path looked at (``tests.fixtures.MISSING_REASON``).
    """
    if not fixtures_present():
        missing = pytest.mark.skip(reason=MISSING_REASON)
        for item in items:
            skip = item.get_closest_marker("skip")
            if skip is not None and str(skip.kwargs.get("reason", "")).startswith(
                "got empty parameter set"
            ):
                item.add_marker(missing, append=False)
    if os.environ.get("HUDI_DS_HYPOTHESIS_ONLY") != "1":
        return
    keep = [i for i in items if _is_hypothesis_test(i)]
    dropped = [i for i in items if not _is_hypothesis_test(i)]
    items[:] = keep
    hook = getattr(config, "hook", None)
    if dropped and hook is not None:
        hook.pytest_deselected(items=dropped)
