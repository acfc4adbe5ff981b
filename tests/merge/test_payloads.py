"""Built-in merge behaviours end to end: by merge mode and by Hudi payload class, MOR and COW.

Each test writes through ``hudi_ds.write`` and reads back through ``hudi_ds.read``; where hudi-rs
implements the same semantics (commit/event time, deletes) the table is read with hudi-rs too.
The id/ts/name/price tables and the order-status story are the examples of seed 004 (Hudi's
"Record Mergers" page).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import hudi
import pyarrow as pa
import pytest

import hudi_ds
from hudi_ds.errors import ConfigError, SchemaError
from hudi_ds.merge.modes import BEHAVIOURS
from hudi_ds.storage import Storage
from hudi_ds.table_config import TableConfig
from tests.conftest import table_options

TYPES = ["MERGE_ON_READ", "COPY_ON_WRITE"]
SCHEMA = pa.schema(
    [("id", pa.string()), ("ts", pa.int64()), ("name", pa.string()), ("price", pa.string())]
)
MODEL = "org.apache.hudi.common.model."


def opts(table_type: str, precombine: str | None = "ts", **extra: str) -> dict[str, str]:
    o = table_options("t", precombine=None, table_type=table_type, buckets=1)
    if precombine:
        o["hoodie.datasource.write.precombine.field"] = precombine
    o.update(extra)
    return o


def write(path: str, rows: list[dict[str, Any]], o: dict[str, str], schema=SCHEMA) -> None:
    hudi_ds.write(path, pa.Table.from_pylist(rows, schema=schema), o)


def read(path: str, options: dict[str, str] | None = None) -> dict[str, dict[str, Any]]:
    t = hudi_ds.read(path, options)
    out = {}
    for r in t.to_pylist():
        out[r["id"]] = {k: v for k, v in r.items() if not k.startswith("_hoodie")}
    assert len(out) == t.num_rows, "hudi_ds reads a key twice"
    return out


def hudi_rs(path: str) -> dict[str, dict[str, Any]]:
    batches = hudi.HudiTableBuilder.from_base_uri(path).build().read(hudi.HudiReadOptions())
    if not batches:
        return {}
    t = pa.Table.from_batches(batches)
    out = {
        r["id"]: {k: v for k, v in r.items() if not k.startswith("_hoodie")} for r in t.to_pylist()
    }
    assert len(out) == t.num_rows, "hudi-rs reads a key twice"
    return out


def row(id_: str, ts: int, name: str | None, price: str | None) -> dict[str, Any]:
    return {"id": id_, "ts": ts, "name": name, "price": price}


# -- seed 004: the id/ts/name/price tables ---------------------------------------------------

SELECTORS = {
    # behaviour -> ways to ask for it
    "overwrite_with_latest": [
        {"hoodie.write.record.merge.mode": "COMMIT_TIME_ORDERING"},
        {"hoodie.datasource.write.payload.class": MODEL + "OverwriteWithLatestAvroPayload"},
    ],
    "default": [
        {"hoodie.write.record.merge.mode": "EVENT_TIME_ORDERING"},
        {},  # the default with an ordering field
        {"hoodie.datasource.write.payload.class": MODEL + "DefaultHoodieRecordPayload"},
    ],
    "event_time": [{"payload.class": MODEL + "EventTimeAvroPayload"}],
    "partial_update": [
        {"hoodie.datasource.write.payload.class": MODEL + "PartialUpdateAvroPayload"},
        {"hoodie.datasource.write.payload.class": "PartialUpdateAvroPayload"},
    ],
    "overwrite_non_defaults": [
        {
            "hoodie.datasource.write.payload.class": MODEL
            + "OverwriteNonDefaultsWithLatestAvroPayload"
        },
    ],
}
CASES = [(b, i, t) for b, sels in SELECTORS.items() for i in range(len(sels)) for t in TYPES]

# stored (1, 2, name_2, price_2) then incoming (1, 1, name_1, price_1)
FULL_EXPECTED = {
    "overwrite_with_latest": row("1", 1, "name_1", "price_1"),
    "default": row("1", 2, "name_2", "price_2"),
    "event_time": row("1", 2, "name_2", "price_2"),
    "partial_update": row("1", 2, "name_2", "price_2"),
    "overwrite_non_defaults": row("1", 1, "name_1", "price_1"),
}
# stored (1, 2, name_1, null) then incoming (1, 1, null, price_1)
PARTIAL_EXPECTED = {
    "overwrite_with_latest": row("1", 1, None, "price_1"),
    "default": row("1", 2, "name_1", None),
    "event_time": row("1", 2, "name_1", None),
    "partial_update": row("1", 2, "name_1", "price_1"),
    "overwrite_non_defaults": row("1", 1, "name_1", "price_1"),
}


@pytest.mark.parametrize(("behaviour", "sel", "table_type"), CASES)
def test_seed_examples_across_commits(
    tmp_path: Path, behaviour: str, sel: int, table_type: str
) -> None:
    o = opts(table_type, **SELECTORS[behaviour][sel])
    full, partial = str(tmp_path / "full"), str(tmp_path / "partial")
    write(full, [row("1", 2, "name_2", "price_2")], o)
    write(full, [row("1", 1, "name_1", "price_1")], o)
    assert read(full) == {"1": FULL_EXPECTED[behaviour]}
    write(partial, [row("1", 2, "name_1", None)], o)
    write(partial, [row("1", 1, None, "price_1")], o)
    assert read(partial) == {"1": PARTIAL_EXPECTED[behaviour]}
    cfg = TableConfig.load(Storage(full))
    assert cfg.props["hoodie.compaction.payload.class"] == BEHAVIOURS[behaviour].payload_class
    if behaviour in ("overwrite_with_latest", "default", "event_time"):
        assert hudi_rs(full) == read(full)
        assert hudi_rs(partial) == read(partial)


@pytest.mark.parametrize(("behaviour", "sel", "table_type"), CASES)
def test_seed_examples_in_one_batch(
    tmp_path: Path, behaviour: str, sel: int, table_type: str
) -> None:
    """Pre-combine: the same two versions arriving in one write give the same result -- except
    for a commit-time payload chosen by its class: Java 0.x de-duplicates the batch with the
    payload's preCombine (HoodieWriteHelper.deduplicateRecords -> HoodieAvroRecordMerger.merge
    -> ``newer.preCombine(older)``), and OverwriteWithLatestAvroPayload.preCombine (inherited by
    OverwriteNonDefaultsWithLatestAvroPayload in 0.14/0.15) returns ``older`` when its ordering
    value is greater: the whole ts=2 version is kept, no field of the ts=1 one."""
    o = opts(table_type, **SELECTORS[behaviour][sel])
    p = str(tmp_path / "t")
    write(p, [row("1", 2, "name_1", None), row("1", 1, None, "price_1")], o)
    by_payload = "hoodie.datasource.write.payload.class" in SELECTORS[behaviour][sel]
    if by_payload and behaviour in ("overwrite_with_latest", "overwrite_non_defaults"):
        assert read(p) == {"1": row("1", 2, "name_1", None)}
        assert "hoodie.record.merge.mode" not in TableConfig.load(Storage(p)).props
    else:
        assert read(p) == {"1": PARTIAL_EXPECTED[behaviour]}


@pytest.mark.parametrize("table_type", TYPES)
def test_partial_update_payload_docs_case_1(tmp_path: Path, table_type: str) -> None:
    p = str(tmp_path / "t")
    o = opts(table_type, **{"hoodie.datasource.write.payload.class": "PartialUpdateAvroPayload"})
    write(p, [row("1", 1, "name_1", "price_1")], o)
    write(p, [row("1", 2, None, "price_2")], o)
    assert read(p) == {"1": row("1", 2, "name_1", "price_2")}


@pytest.mark.parametrize("table_type", TYPES)
@pytest.mark.parametrize(
    "payload", ["PartialUpdateAvroPayload", "OverwriteNonDefaultsWithLatestAvroPayload"]
)
def test_null_means_unchanged_accepts_rows_without_columns(
    tmp_path: Path, table_type: str, payload: str
) -> None:
    """Under PartialUpdate / OverwriteNonDefaults an update may leave columns out."""
    p = str(tmp_path / "t")
    o = opts(table_type, **{"hoodie.datasource.write.payload.class": payload})
    write(p, [row("1", 1, "a", "p1"), row("2", 1, "b", "p2")], o)
    hudi_ds.write(p, pa.table({"id": ["1"], "ts": pa.array([5], pa.int64()), "price": ["p9"]}), o)
    assert read(p) == {"1": row("1", 5, "a", "p9"), "2": row("2", 1, "b", "p2")}


# -- the order-status story (event time vs commit time) ------------------------------------

ORDER = pa.schema([("id", pa.string()), ("ts", pa.int64()), ("status", pa.string())])


@pytest.mark.parametrize("table_type", TYPES)
@pytest.mark.parametrize("mode", ["EVENT_TIME_ORDERING", "COMMIT_TIME_ORDERING"])
def test_order_status_story(tmp_path: Path, table_type: str, mode: str) -> None:
    p = str(tmp_path / "orders")
    o = opts(table_type, **{"hoodie.write.record.merge.mode": mode})

    def w(rows):
        hudi_ds.write(p, pa.Table.from_pylist(rows, schema=ORDER), o)

    w([{"id": "o1", "ts": 10, "status": "created"}, {"id": "o2", "ts": 10, "status": "created"}])
    w([{"id": "o1", "ts": 30, "status": "paid"}, {"id": "o2", "ts": 40, "status": "cancelled"}])
    # the late events from the other microservice arrive after the newer state
    w([{"id": "o1", "ts": 20, "status": "created"}, {"id": "o2", "ts": 30, "status": "created"}])
    status = {k: v["status"] for k, v in read(p).items()}
    if mode == "EVENT_TIME_ORDERING":
        assert status == {"o1": "paid", "o2": "cancelled"}  # no jumping back in time
    else:
        assert status == {"o1": "created", "o2": "created"}  # latest write wins
    assert hudi_rs(p) == read(p)  # every column, not only the status


# -- deletes -----------------------------------------------------------------------------------

DEL = pa.schema(
    [
        ("id", pa.string()),
        ("ts", pa.int64()),
        ("v", pa.string()),
        ("_hoodie_is_deleted", pa.bool_()),
    ]
)


@pytest.mark.parametrize("table_type", TYPES)
@pytest.mark.parametrize(
    "payload",
    [
        "OverwriteWithLatestAvroPayload",
        "DefaultHoodieRecordPayload",
        "EventTimeAvroPayload",
        "OverwriteNonDefaultsWithLatestAvroPayload",
        "PartialUpdateAvroPayload",
        "AWSDmsAvroPayload",
    ],
)
def test_hoodie_is_deleted_everywhere(tmp_path: Path, table_type: str, payload: str) -> None:
    p = str(tmp_path / "t")
    o = opts(table_type, **{"hoodie.datasource.write.payload.class": payload})

    def w(rows):
        hudi_ds.write(p, pa.Table.from_pylist(rows, schema=DEL), o)

    w([{"id": k, "ts": 1, "v": k, "_hoodie_is_deleted": False} for k in "abc"])
    w([{"id": "a", "ts": 2, "v": None, "_hoodie_is_deleted": True}])
    # in one batch: an insert and its delete
    w(
        [
            {"id": "d", "ts": 1, "v": "d", "_hoodie_is_deleted": False},
            {"id": "d", "ts": 2, "v": None, "_hoodie_is_deleted": True},
        ]
    )
    expected = {k: {"id": k, "ts": 1, "v": k} for k in "bc"}
    assert read(p) == expected
    if payload in ("OverwriteWithLatestAvroPayload", "DefaultHoodieRecordPayload"):
        assert hudi_rs(p) == expected


@pytest.mark.parametrize("table_type", TYPES)
def test_event_time_delete_with_older_ordering_is_ignored(tmp_path: Path, table_type: str) -> None:
    p = str(tmp_path / "t")
    o = opts(table_type)

    def w(rows):
        hudi_ds.write(p, pa.Table.from_pylist(rows, schema=DEL), o)

    w([{"id": k, "ts": 10, "v": k, "_hoodie_is_deleted": False} for k in "ab"])
    w([{"id": "a", "ts": 5, "v": None, "_hoodie_is_deleted": True}])  # older: loses
    w([{"id": "b", "ts": 15, "v": None, "_hoodie_is_deleted": True}])  # newer: deletes
    assert read(p) == {"a": {"id": "a", "ts": 10, "v": "a"}}
    assert hudi_rs(p) == read(p)


DMS = pa.schema([("id", pa.string()), ("Op", pa.string()), ("v", pa.int64())])


@pytest.mark.parametrize("table_type", TYPES)
def test_aws_dms_op_column(tmp_path: Path, table_type: str) -> None:
    p = str(tmp_path / "t")
    o = opts(table_type, None, **{"hoodie.datasource.write.payload.class": "AWSDmsAvroPayload"})

    def w(rows):
        hudi_ds.write(p, pa.Table.from_pylist(rows, schema=DMS), o)

    w([{"id": k, "Op": None, "v": 1} for k in "abcd"])  # full load: no Op
    w(
        [
            {"id": "a", "Op": "U", "v": 2},
            {"id": "b", "Op": "D", "v": 1},
            {"id": "e", "Op": "I", "v": 1},
        ]
    )
    # commit time: the latest change wins, whatever its values; lower-case d deletes too
    w([{"id": "c", "Op": "d", "v": 1}, {"id": "e", "Op": "U", "v": 0}])
    # in one batch: delete then re-insert, and insert then delete
    w(
        [
            {"id": "b", "Op": "I", "v": 7},
            {"id": "d", "Op": "U", "v": 3},
            {"id": "d", "Op": "D", "v": 3},
        ]
    )
    got = {k: (r["Op"], r["v"]) for k, r in read(p).items()}
    assert got == {"a": ("U", 2), "b": ("I", 7), "e": ("U", 0)}
    cfg = TableConfig.load(Storage(p))
    assert cfg.merge_mode == "COMMIT_TIME_ORDERING"
    assert cfg.props["hoodie.compaction.payload.class"] == MODEL + "AWSDmsAvroPayload"


MYSQL = pa.schema(
    [
        ("id", pa.string()),
        ("name", pa.string()),
        ("_change_operation_type", pa.string()),
        ("_event_seq", pa.string()),
    ]
)


@pytest.mark.parametrize("table_type", TYPES)
def test_mysql_debezium(tmp_path: Path, table_type: str) -> None:
    p = str(tmp_path / "t")
    payload = MODEL + "debezium.MySqlDebeziumAvroPayload"
    o = opts(table_type, None, **{"hoodie.datasource.write.payload.class": payload})

    def w(rows):
        hudi_ds.write(p, pa.Table.from_pylist(rows, schema=MYSQL), o)

    w(
        [
            {"id": "a", "name": "a0", "_change_operation_type": "r", "_event_seq": "1.90"},
            {"id": "b", "name": "b0", "_change_operation_type": "r", "_event_seq": "1.90"},
            {"id": "c", "name": "c0", "_change_operation_type": "c", "_event_seq": "1.95"},
        ]
    )
    w(
        [
            # (file 1, pos 100) is after (1, 90): numerically, not as a string
            {"id": "a", "name": "a1", "_change_operation_type": "u", "_event_seq": "1.100"},
            # older position: ignored
            {"id": "b", "name": "bX", "_change_operation_type": "u", "_event_seq": "1.80"},
            # delete in a later binlog file
            {"id": "c", "name": "c0", "_change_operation_type": "d", "_event_seq": "2.1"},
        ]
    )
    # a late delete of a: older than the update, so ignored
    w([{"id": "a", "name": "a1", "_change_operation_type": "d", "_event_seq": "1.99"}])
    got = {k: (r["name"], r["_event_seq"]) for k, r in read(p).items()}
    assert got == {"a": ("a1", "1.100"), "b": ("b0", "1.90")}
    cfg = TableConfig.load(Storage(p))
    assert cfg.ordering_fields == ["_event_seq"] and cfg.merge_mode == "EVENT_TIME_ORDERING"


PG = pa.schema(
    [
        ("id", pa.string()),
        ("doc", pa.string()),
        ("blob", pa.binary()),
        ("n", pa.int64()),
        ("_change_operation_type", pa.string()),
        ("_event_lsn", pa.int64()),
    ]
)
TOAST = "__debezium_unavailable_value"


@pytest.mark.parametrize("table_type", TYPES)
def test_postgres_debezium_toast_and_deletes(tmp_path: Path, table_type: str) -> None:
    p = str(tmp_path / "t")
    payload = MODEL + "debezium.PostgresDebeziumAvroPayload"
    o = opts(table_type, None, **{"hoodie.datasource.write.payload.class": payload})

    def w(rows):
        hudi_ds.write(p, pa.Table.from_pylist(rows, schema=PG), o)

    w(
        [
            {
                "id": "a",
                "doc": "big",
                "blob": b"B",
                "n": 1,
                "_change_operation_type": "r",
                "_event_lsn": 10,
            },
            {
                "id": "b",
                "doc": "x",
                "blob": b"x",
                "n": 1,
                "_change_operation_type": "r",
                "_event_lsn": 10,
            },
        ]
    )
    # an update whose TOASTed columns were not sent: they keep their values; a null is a value
    w(
        [
            {
                "id": "a",
                "doc": TOAST,
                "blob": TOAST.encode(),
                "n": None,
                "_change_operation_type": "u",
                "_event_lsn": 20,
            },
            {
                "id": "b",
                "doc": "y",
                "blob": b"y",
                "n": 2,
                "_change_operation_type": "d",
                "_event_lsn": 5,
            },
        ]
    )
    got = {k: (r["doc"], r["blob"], r["n"], r["_event_lsn"]) for k, r in read(p).items()}
    assert got == {"a": ("big", b"B", None, 20), "b": ("x", b"x", 1, 10)}  # b's delete is older
    w(
        [
            {
                "id": "b",
                "doc": "y",
                "blob": b"y",
                "n": 2,
                "_change_operation_type": "d",
                "_event_lsn": 30,
            }
        ]
    )
    assert sorted(read(p)) == ["a"]
    assert TableConfig.load(Storage(p)).ordering_fields == ["_event_lsn"]


# -- configuration -----------------------------------------------------------------------------


def test_unknown_payload_is_refused(tmp_path: Path) -> None:
    o = opts("MERGE_ON_READ", **{"hoodie.datasource.write.payload.class": "com.acme.MyPayload"})
    with pytest.raises(ConfigError, match=r"hoodie.datasource.write.payload.class.*MyPayload"):
        write(str(tmp_path / "t"), [row("1", 1, "a", "b")], o)


def test_contradicting_mode_and_payload(tmp_path: Path) -> None:
    o = opts(
        "MERGE_ON_READ",
        **{
            "hoodie.write.record.merge.mode": "COMMIT_TIME_ORDERING",
            "hoodie.datasource.write.payload.class": "PartialUpdateAvroPayload",
        },
    )
    with pytest.raises(ConfigError, match="contradicts option 'hoodie.write.record.merge.mode'"):
        write(str(tmp_path / "t"), [row("1", 1, "a", "b")], o)


def test_contradicting_strategy_id(tmp_path: Path) -> None:
    o = opts(
        "MERGE_ON_READ",
        **{
            "hoodie.write.record.merge.mode": "EVENT_TIME_ORDERING",
            "hoodie.write.record.merge.strategy.id": "ce9acb64-bde0-424c-9b91-f6ebba25356d",
        },
    )
    with pytest.raises(ConfigError, match="hoodie.write.record.merge.strategy.id"):
        write(str(tmp_path / "t"), [row("1", 1, "a", "b")], o)


def test_event_time_payload_needs_ordering(tmp_path: Path) -> None:
    o = opts(
        "MERGE_ON_READ",
        None,
        **{"hoodie.datasource.write.payload.class": "PartialUpdateAvroPayload"},
    )
    with pytest.raises(ConfigError, match="ordering field"):
        write(str(tmp_path / "t"), [row("1", 1, "a", "b")], o)


def test_strategy_id_selects_mode(tmp_path: Path) -> None:
    p = str(tmp_path / "t")
    o = opts(
        "MERGE_ON_READ",
        **{"hoodie.write.record.merge.strategy.id": "ce9acb64-bde0-424c-9b91-f6ebba25356d"},
    )
    write(p, [row("1", 2, "a", "b")], o)
    write(p, [row("1", 1, "c", "d")], o)
    assert read(p)["1"]["name"] == "c"
    assert TableConfig.load(Storage(p)).merge_mode == "COMMIT_TIME_ORDERING"


@pytest.mark.parametrize(
    "change",
    [
        {"hoodie.write.record.merge.mode": "COMMIT_TIME_ORDERING"},
        {"hoodie.datasource.write.payload.class": "PartialUpdateAvroPayload"},
        {"hoodie.write.record.merge.strategy.id": "ce9acb64-bde0-424c-9b91-f6ebba25356d"},
    ],
)
def test_merge_choice_cannot_change(tmp_path: Path, change: dict[str, str]) -> None:
    p = str(tmp_path / "t")
    write(p, [row("1", 1, "a", "b")], opts("MERGE_ON_READ"))
    with pytest.raises(ConfigError, match="cannot change"):
        write(p, [row("1", 2, "a", "b")], opts("MERGE_ON_READ", **change))
    # the same choice restated is fine
    write(
        p,
        [row("1", 2, "a", "b")],
        opts("MERGE_ON_READ", **{"hoodie.write.record.merge.mode": "EVENT_TIME_ORDERING"}),
    )


@pytest.mark.parametrize("name", sorted(BEHAVIOURS))
def test_payload_persisted_and_recognised(tmp_path: Path, name: str) -> None:
    b = BEHAVIOURS[name]
    p = str(tmp_path / "t")
    schema = pa.schema(
        [
            ("id", pa.string()),
            ("ts", pa.int64()),
            ("Op", pa.string()),
            ("_change_operation_type", pa.string()),
            ("_event_seq", pa.string()),
            ("_event_lsn", pa.int64()),
        ]
    )
    rows = [
        {
            "id": "1",
            "ts": 1,
            "Op": "I",
            "_change_operation_type": "c",
            "_event_seq": "1.1",
            "_event_lsn": 1,
        }
    ]
    hudi_ds.write(
        p,
        pa.Table.from_pylist(rows, schema=schema),
        opts("COPY_ON_WRITE", **{"payload.class": b.payload_class}),
    )
    cfg = TableConfig.load(Storage(p))
    assert cfg.props["hoodie.compaction.payload.class"] == b.payload_class
    assert (
        cfg.props["hoodie.compaction.record.merger.strategy"]
        == "eeb8d96f-b1e4-49fd-bbf8-28ac514178e5"
    )
    assert cfg.merge_mode == b.mode
    from hudi_ds.merge.modes import table_spec

    assert table_spec(cfg).behaviour == name
    # hudi-rs reads the single version of every payload-based table alike
    assert hudi_rs(p) == read(p) and sorted(read(p)) == ["1"]


def test_missing_columns_still_refused_without_partial_semantics(tmp_path: Path) -> None:
    p = str(tmp_path / "t")
    write(p, [row("1", 1, "a", "b")], opts("MERGE_ON_READ"))
    with pytest.raises(SchemaError, match="hoodie.write.partial.updates"):
        hudi_ds.write(
            p, pa.table({"id": ["1"], "ts": pa.array([2], pa.int64())}), opts("MERGE_ON_READ")
        )


def test_table_spec_of_java_tables() -> None:
    """How tables written by Hudi 1.x map onto behaviours (v8 payload-based CUSTOM, v9)."""
    from hudi_ds.merge.modes import table_spec

    def spec(**props: str):
        return table_spec(TableConfig({"hoodie.table.name": "t", **props}))

    v8_partial = spec(
        **{
            "hoodie.table.version": "8",
            "hoodie.record.merge.mode": "CUSTOM",
            "hoodie.record.merge.strategy.id": "00000000-0000-0000-0000-000000000000",
            "hoodie.compaction.payload.class": MODEL + "PartialUpdateAvroPayload",
            "hoodie.table.precombine.field": "ts",
        }
    )
    assert v8_partial.behaviour == "partial_update" and v8_partial.ordering_fields == ("ts",)
    v9_legacy = spec(
        **{
            "hoodie.table.version": "9",
            "hoodie.record.merge.mode": "COMMIT_TIME_ORDERING",
            "hoodie.table.legacy.payload.class": MODEL + "AWSDmsAvroPayload",
        }
    )
    assert v9_legacy.behaviour == "aws_dms"
    v9_native = spec(
        **{
            "hoodie.table.version": "9",
            "hoodie.record.merge.mode": "EVENT_TIME_ORDERING",
            "hoodie.table.ordering.fields": "ts",
            "hoodie.table.partial.update.mode": "IGNORE_DEFAULTS",
        }
    )
    assert v9_native.behaviour == "partial_update"
    with pytest.raises(
        ConfigError, match="hoodie.write.record.merge.custom.implementation.classes"
    ):
        spec(
            **{
                "hoodie.table.version": "8",
                "hoodie.record.merge.mode": "CUSTOM",
                "hoodie.record.merge.strategy.id": "aaaaaaaa-0000-0000-0000-000000000000",
            }
        )
    with pytest.raises(ConfigError, match="com.acme.Payload"):
        spec(
            **{
                "hoodie.table.version": "8",
                "hoodie.record.merge.mode": "CUSTOM",
                "hoodie.record.merge.strategy.id": "00000000-0000-0000-0000-000000000000",
                "hoodie.compaction.payload.class": "com.acme.Payload",
            }
        )
