"""MERGE through ``HudiTable.merge(...)...execute()`` against an independent model.

Each table starts with 180 rows (``k000``..``k179``; city ``sf``/``nyc``/``chennai`` by
``i % 3``; ``ts = i % 7``; ``fare = i``; ``note = "n<i>"``), written by hudi_ds with the
configuration under test. The source holds 60 existing keys (one in three, of every city, with ``ts`` 0..6 again, so some are older than the stored row) and 40 new keys
(``k200``..``k239``). The model below applies the statement row by row in plain Python:
clauses in order, first match wins, updates keep unassigned columns, inserts leave them null,
and an update whose ``ts`` is below the stored one loses (EVENT_TIME_ORDERING). The table
after ``execute()`` must equal it, full rows, read by hudi_ds and by hudi-rs.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import hudi_ds
from hudi_ds.errors import ConfigError, SchemaError, UnsupportedError
from tests.conftest import assert_rows, hudi_rs_table

COLUMNS = ["id", "city", "ts", "fare", "note"]
CITIES = ["sf", "nyc", "chennai"]
Row = dict[str, Any]


def options(table_type: str, index: str, version: int) -> dict[str, str]:
    opts = {
        "hoodie.table.name": "trips",
        "hoodie.datasource.write.recordkey.field": "id",
        "hoodie.datasource.write.partitionpath.field": "city",
        "hoodie.datasource.write.precombine.field": "ts",
        "hoodie.datasource.write.table.type": table_type,
        "hoodie.index.type": index,
        "hoodie.write.table.version": str(version),
        # no compaction or cleaning in the middle of a test: the rows are what is checked
        "hoodie.datasource.compaction.async.enable": "false",
    }
    if index == "BUCKET":
        opts["hoodie.bucket.index.num.buckets"] = "4"
    return opts


def base_rows() -> list[Row]:
    return [
        {"id": f"k{i:03d}", "city": CITIES[i % 3], "ts": i % 7, "fare": float(i), "note": f"n{i}"}
        for i in range(180)
    ]


def source_rows() -> list[Row]:
    old = [
        {
            "id": f"k{i:03d}",
            "city": CITIES[i % 3],
            "ts": (i // 3) % 7,
            "fare": 1000.0 + i,
            "note": f"s{i}",
        }
        for i in (3 * j + j % 3 for j in range(60))
    ]
    new = [
        {"id": f"k{i:03d}", "city": CITIES[i % 3], "ts": i % 7, "fare": 2000.0 + i, "note": f"s{i}"}
        for i in range(200, 240)
    ]
    return old + new


def make_table(root: Path, opts: dict[str, str]) -> hudi_ds.HudiTable:
    hudi_ds.write(str(root), pa.Table.from_pylist(base_rows()), opts)
    return hudi_ds.HudiTable(str(root))


def snapshot(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


# -- the model -------------------------------------------------------------------------------------
# a clause: (kind, action, predicate(s, t) or None, values(s, t) -> dict or None for "all")
ModelClause = tuple[str, str, Callable[[Row | None, Row | None], bool] | None, Any]


def model_merge(
    target: dict[str, Row], source: list[Row], clauses: list[ModelClause]
) -> dict[str, Row]:
    out = {k: dict(v) for k, v in target.items()}
    matched: set[str] = set()

    def first(kind: str, s: Row | None, t: Row | None) -> ModelClause | None:
        for c in clauses:
            if c[0] == kind and (c[2] is None or c[2](s, t)):
                return c
        return None

    for s in source:
        t = target.get(s["id"])
        if t is not None:
            matched.add(s["id"])
            c = first("matched", s, t)
            if c is None:
                continue
            if c[1] == "delete":
                out.pop(s["id"], None)
                continue
            new = dict(t)
            assigned = c[3](s, t) if c[3] else {k: s[k] for k in COLUMNS if k not in ("id", "city")}
            new.update(assigned)
            if new["ts"] >= t["ts"]:  # EVENT_TIME_ORDERING: a lower ordering value loses
                out[s["id"]] = new
        else:
            c = first("not_matched", s, None)
            if c is None:
                continue
            row = dict.fromkeys(COLUMNS)
            row.update(c[3](s, None) if c[3] else s)
            row["id"] = s["id"]
            out[s["id"]] = row
    for k, t in target.items():
        if k not in matched:
            c = first("by_source", None, t)
            if c is not None:
                out.pop(k, None)
    return out


def check(root: Path, model: dict[str, Row]) -> None:
    expected = [tuple(r[c] for c in COLUMNS) for r in model.values()]
    assert_rows(hudi_ds.read(str(root)), expected, COLUMNS)
    assert_rows(hudi_rs_table(str(root)), expected, COLUMNS)


# -- statements: the builder calls and the same statement for the model ------------------------------
def full_statement(m: Any) -> Any:
    return (
        m.when_matched_delete(predicate="s.fare < 1010")
        .when_matched_update(
            set={"fare": "s.fare * 2", "ts": "s.ts", "note": "t.note || '+'"},
            predicate="s.ts > t.ts AND t.city = 'sf'",
        )
        .when_matched_update_all(predicate="s.ts >= t.ts")
        .when_not_matched_insert(
            values={"id": "s.id", "city": "s.city", "ts": "s.ts", "fare": "s.fare"},
            predicate="s.city <> 'nyc'",
        )
        .when_not_matched_insert_all()
        .when_not_matched_by_source_delete(predicate="t.fare > 170")
    )


FULL_MODEL: list[ModelClause] = [
    ("matched", "delete", lambda s, t: s["fare"] < 1010, None),
    (
        "matched",
        "update",
        lambda s, t: s["ts"] > t["ts"] and t["city"] == "sf",
        lambda s, t: {
            "fare": s["fare"] * 2,
            "ts": s["ts"],
            "note": None if t["note"] is None else t["note"] + "+",  # SQL: NULL || x is NULL
        },
    ),
    ("matched", "update", lambda s, t: s["ts"] >= t["ts"], None),
    (
        "not_matched",
        "insert",
        lambda s, t: s["city"] != "nyc",
        lambda s, t: {"id": s["id"], "city": s["city"], "ts": s["ts"], "fare": s["fare"]},
    ),
    ("not_matched", "insert", None, None),
    ("by_source", "delete", lambda s, t: t["fare"] > 170, None),
]

CONFIGS = [
    ("MERGE_ON_READ", "BUCKET", 6),
    ("COPY_ON_WRITE", "SIMPLE", 6),
    ("MERGE_ON_READ", "SIMPLE", 9),
    ("COPY_ON_WRITE", "BUCKET", 9),
]


@pytest.mark.parametrize("table_type, index, version", CONFIGS)
def test_every_clause_together(tmp_path: Path, table_type: str, index: str, version: int) -> None:
    root = tmp_path / "t"
    t = make_table(root, options(table_type, index, version))
    source = pa.Table.from_pylist(source_rows())
    metrics = full_statement(t.merge(source, on="t.id = s.id")).execute()
    target = {r["id"]: r for r in base_rows()}
    model = model_merge(target, source_rows(), FULL_MODEL)
    check(root, model)
    assert metrics.instant is not None and metrics.num_source_rows == 100
    assert metrics.num_target_rows_deleted == len(target) + metrics.num_target_rows_inserted - len(
        model
    )
    assert metrics.num_target_rows_inserted == 40
    # one instant: the timeline grew by one completed write
    assert [i.requested_time for i in t.timeline.commits()][-1] == metrics.instant
    # again, over what the first statement left (MOR: merged from base and log files now)
    again = [{**r, "ts": r["ts"] + 1, "fare": r["fare"] + 0.5} for r in source_rows()]
    full_statement(t.merge(pa.Table.from_pylist(again), on="t.id = s.id")).execute()
    check(root, model_merge(model, again, FULL_MODEL))


SINGLE: list[tuple[str, Callable[[Any], Any], list[ModelClause]]] = [
    (
        "matched_update",
        lambda m: m.when_matched_update(
            set={"fare": "s.fare + t.fare"}, predicate="t.city = 'nyc'"
        ),
        [
            (
                "matched",
                "update",
                lambda s, t: t["city"] == "nyc",
                lambda s, t: {"fare": s["fare"] + t["fare"]},
            )
        ],
    ),
    (
        "matched_update_all",
        lambda m: m.when_matched_update_all(),
        [("matched", "update", None, None)],
    ),
    (
        "matched_delete",
        lambda m: m.when_matched_delete(predicate=pc.field("s.ts") < pc.field("t.ts")),
        [("matched", "delete", lambda s, t: s["ts"] < t["ts"], None)],
    ),
    (
        "not_matched_insert",
        lambda m: m.when_not_matched_insert(
            values={"city": "s.city", "ts": "s.ts", "note": "upper(s.note)"}
        ),
        [
            (
                "not_matched",
                "insert",
                None,
                lambda s, t: {"city": s["city"], "ts": s["ts"], "note": s["note"].upper()},
            )
        ],
    ),
    (
        "not_matched_insert_all",
        lambda m: m.when_not_matched_insert_all(predicate="s.ts BETWEEN 2 AND 4"),
        [("not_matched", "insert", lambda s, t: 2 <= s["ts"] <= 4, None)],
    ),
    (
        "not_matched_by_source_delete",
        lambda m: m.when_not_matched_by_source_delete(),
        [("by_source", "delete", None, None)],
    ),
    (
        "update_then_insert",
        lambda m: m.when_matched_update(set={"note": "'u'"}).when_not_matched_insert_all(),
        [
            ("matched", "update", None, lambda s, t: {"note": "u"}),
            ("not_matched", "insert", None, None),
        ],
    ),
]


@pytest.mark.parametrize("name, build, model_clauses", SINGLE, ids=[c[0] for c in SINGLE])
@pytest.mark.parametrize("table_type", ["MERGE_ON_READ", "COPY_ON_WRITE"])
def test_each_clause(
    tmp_path: Path, table_type: str, name: str, build: Any, model_clauses: Any
) -> None:
    root = tmp_path / "t"
    t = make_table(
        root, options(table_type, "BUCKET" if table_type == "MERGE_ON_READ" else "SIMPLE", 6)
    )
    metrics = build(t.merge(pa.Table.from_pylist(source_rows()), on=["id"])).execute()
    model = model_merge({r["id"]: r for r in base_rows()}, source_rows(), model_clauses)
    check(root, model)
    assert metrics.instant is not None


def test_lower_ordering_value_loses(tmp_path: Path) -> None:
    """The table's EVENT_TIME_ORDERING applies: an update that sets ``ts`` below the stored
    one is written but the stored row stays; one that leaves ``ts`` alone wins."""
    root = tmp_path / "t"
    t = make_table(root, options("MERGE_ON_READ", "BUCKET", 6))
    src = pa.table({"id": ["k006", "k013"], "fare": [1.0, 2.0]})
    t.merge(src, on="t.id = s.id").when_matched_update(
        set={"fare": "s.fare", "ts": "t.ts - 1"}, predicate="s.id = 'k006'"
    ).when_matched_update(set={"fare": "s.fare"}).execute()
    model = {r["id"]: r for r in base_rows()}
    model["k013"] = {**model["k013"], "fare": 2.0}
    check(root, model)


def test_only_matching_file_groups_are_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The source keys become read filters: on a bucket table with the partition in ON, only
    the file group of each source key's bucket in its own partition is read, looking up that
    key alone, and only the columns the statement uses (``fare`` comes from the source)."""
    import hudi_ds.table.table as table_module

    reads: list[tuple[str, list[str] | None, list[str]]] = []
    real = table_module.read_file_slice

    def spy(storage: Any, fslice: Any, *args: Any, **kwargs: Any) -> pa.Table:
        keys = kwargs.get("keys")
        columns = args[3] if len(args) > 3 else kwargs.get("columns")
        reads.append((fslice.partition_path, columns, [] if keys is None else keys.to_pylist()))
        return real(storage, fslice, *args, **kwargs)

    root = tmp_path / "t"
    t = make_table(root, options("MERGE_ON_READ", "BUCKET", 6))
    monkeypatch.setattr(table_module, "read_file_slice", spy)
    # k003 is stored in sf; k300 is new, looked up in nyc's file group of its bucket only
    src = pa.table({"id": ["k003", "k300"], "city": ["sf", "nyc"], "fare": [9.0, 8.0]})
    metrics = (
        t.merge(src, on="t.id = s.id AND t.city = s.city")
        .when_matched_update(set={"fare": "s.fare"})
        .execute()
    )
    monkeypatch.undo()
    assert sorted((p, k) for p, _, k in reads) == [("nyc", ["k300"]), ("sf", ["k003"])]
    assert {tuple(c or ()) for _, c, _ in reads} == {("id", "city", "ts", "note")}
    assert metrics.num_target_rows_read == 1 and metrics.num_target_rows_updated == 1
    model = {r["id"]: r for r in base_rows()}
    model["k003"] = {**model["k003"], "fare": 9.0}
    check(root, model)


def test_no_change_writes_nothing(tmp_path: Path) -> None:
    root = tmp_path / "t"
    t = make_table(root, options("COPY_ON_WRITE", "SIMPLE", 6))
    before = snapshot(root)
    src = pa.table({"id": ["k001"], "fare": [1.0]})
    metrics = t.merge(src, on="t.id = s.id").when_matched_delete(predicate="s.fare > 5").execute()
    assert metrics.instant is None and metrics.num_target_rows_deleted == 0
    assert snapshot(root) == before


def test_source_row_matching_two_targets_refused(tmp_path: Path) -> None:
    """A SIMPLE (non-global) table holding ``k001`` in two partitions: ON on the key alone
    matches the source row twice -- refused, naming the key, the table unchanged."""
    root = tmp_path / "t"
    t = make_table(root, options("MERGE_ON_READ", "SIMPLE", 9))
    t.upsert(
        pa.Table.from_pylist([{"id": "k001", "city": "sf", "ts": 9, "fare": 1.0, "note": "x"}])
    )
    before = snapshot(root)
    src = pa.table({"id": ["k001"], "fare": [5.0]})
    with pytest.raises(
        ConfigError, match=r"source row \(key \{'id': 'k001'\}\) matches 2 target rows"
    ):
        t.merge(src, on="t.id = s.id").when_matched_update(set={"fare": "s.fare"}).execute()
    assert snapshot(root) == before


def test_duplicate_source_keys_refused(tmp_path: Path) -> None:
    root = tmp_path / "t"
    t = make_table(root, options("COPY_ON_WRITE", "BUCKET", 6))
    before = snapshot(root)
    src = pa.table({"id": ["k002", "k002"], "fare": [1.0, 2.0]})
    with pytest.raises(
        ConfigError, match=r"target row \(key \{'id': 'k002'\}\) matches 2 source rows"
    ):
        t.merge(src, on="t.id = s.id").when_matched_update(set={"fare": "s.fare"}).execute()
    assert snapshot(root) == before


BAD = [
    (
        lambda m: m.when_matched_update(set={"fare": "s.nope"}),
        ConfigError,
        r"unknown column 's.nope'",
    ),
    (
        lambda m: m.when_matched_update(set={"nope": "s.fare"}),
        ConfigError,
        r"target has no column 'nope'",
    ),
    (lambda m: m.when_matched_update(set={"fare": "fare"}), ConfigError, r"'fare' is ambiguous"),
    (
        lambda m: m.when_matched_update(set={"city": "'x'"}),
        ConfigError,
        r"record key / partition column",
    ),
    (
        lambda m: m.when_matched_delete(predicate="s.fare > 'abc'"),
        ConfigError,
        r"predicate of the WHEN MATCHED DELETE clause #1 .*'greater' has no kernel",
    ),
    (lambda m: m.when_matched_delete(predicate="s.fare IN (SELECT 1)"), UnsupportedError, r"In"),
    (lambda m: m.when_matched_delete(predicate="s.fare >"), ConfigError, r"cannot parse"),
    (
        lambda m: m.when_not_matched_insert(values={"fare": "s.fare"}),
        SchemaError,
        r"'city' would be null",
    ),
    (lambda m: m, ConfigError, r"no clause given"),
    (
        lambda m: m.when_not_matched_insert_all(predicate="t.fare > 1"),
        ConfigError,
        r"unknown table alias 't'.*the aliases are \['s'\]",
    ),
    (
        lambda m: m.when_not_matched_by_source_delete(predicate="s.fare > 1"),
        ConfigError,
        r"unknown table alias 's'.*the aliases are \['t'\]",
    ),
]


@pytest.mark.parametrize("build, error, match", BAD)
def test_bad_statement_refused_before_writing(
    tmp_path: Path, build: Any, error: type, match: str
) -> None:
    root = tmp_path / "t"
    t = make_table(root, options("MERGE_ON_READ", "BUCKET", 6))
    before = snapshot(root)
    src = pa.table({"id": ["k001", "k500"], "fare": [1.0, 2.0]})
    with pytest.raises(error, match=match):
        build(t.merge(src, on="t.id = s.id")).execute()
    assert snapshot(root) == before


@pytest.mark.parametrize(
    "on, match",
    [
        ("t.city = s.city", r"record key field\(s\) \['id'\] must be matched"),
        ("t.id = s.id AND t.fare = s.fare", r"'fare' is neither a record key field"),
        ("t.id = s.id OR t.city = s.city", r"not an equality"),
        ("t.id > s.id", r"not an equality"),
    ],
)
def test_bad_on_refused(tmp_path: Path, on: str, match: str) -> None:
    root = tmp_path / "t"
    t = make_table(root, options("COPY_ON_WRITE", "SIMPLE", 6))
    src = pa.table({"id": ["k001"], "city": ["nyc"], "fare": [1.0]})
    with pytest.raises(ConfigError, match=match):
        t.merge(src, on=on).when_matched_delete().execute()


@pytest.mark.parametrize("index", ["BUCKET", "SIMPLE", "GLOBAL_SIMPLE"])
def test_partial_update_on_mor_writes_partial_blocks(tmp_path: Path, index: str) -> None:
    """A version-9 MOR table: updates that assign ``fare`` only are written as Hudi 1.x
    IS_PARTIAL log blocks (the key, partition and ordering columns and ``fare``) where they
    go to log files, as
    ``MergeIntoHoodieTableCommand.isPartialUpdateActionForMOR`` writes them; the rows read
    back whole, with the other columns' stored values. A global index takes no partial
    blocks: the merge then reads and writes whole rows."""
    from hudi_ds.log.block import HeaderKey
    from hudi_ds.log.reader import scan_log_bytes

    root = tmp_path / "t"
    t = make_table(root, options("MERGE_ON_READ", index, 9))
    src = pa.Table.from_pylist(source_rows())
    t.merge(src, on="t.id = s.id").when_matched_update(
        set={"fare": "s.fare"}, predicate="s.ts >= t.ts"
    ).when_matched_delete().when_not_matched_insert(
        values={"city": "s.city", "ts": "s.ts"}
    ).execute()
    model = model_merge(
        {r["id"]: r for r in base_rows()},
        source_rows(),
        [
            (
                "matched",
                "update",
                lambda s, t: s["ts"] >= t["ts"],
                lambda s, t: {"fare": s["fare"]},
            ),
            ("matched", "delete", None, None),
            ("not_matched", "insert", None, lambda s, t: {"city": s["city"], "ts": s["ts"]}),
        ],
    )
    blocks = [
        b
        for f in sorted(root.rglob(".*.log.*"))
        for b in scan_log_bytes(f.read_bytes()).blocks
        if HeaderKey.SCHEMA in b.header
    ]
    partial = [b for b in blocks if b.header.get(HeaderKey.IS_PARTIAL) == "true"]
    if index == "BUCKET":  # (SIMPLE: the small base files take the rows, merged whole)
        assert partial, [b.header for b in blocks]
    if index.startswith("GLOBAL"):
        assert not partial, [b.header for b in partial]
    assert all('"note"' not in b.header[HeaderKey.SCHEMA] for b in partial)
    expected = [tuple(r[c] for c in COLUMNS) for r in model.values()]
    assert_rows(hudi_ds.read(str(root)), expected, COLUMNS)
    assert_rows(hudi_rs_table(str(root)), expected, COLUMNS)
