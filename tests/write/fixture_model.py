"""The write scenario of the version-6 fixture tables and its independent model.

Shared by the embedded test (tests/write/test_fixture_writes.py) and the Spark one
(tests/spark/test_fixture_writes.py). The model is written from Hudi's rules, not from
hudi_ds: the record key and partition path of a row follow the table's key generator as
Java's ``SimpleAvroKeyGenerator`` / ``ComplexAvroKeyGenerator`` / ``NonpartitionedAvroKeyGenerator``
/ ``TimestampBasedAvroKeyGenerator`` build them (computed here row by row in plain Python), and
the merge follows the payload class of these tables: every v6 fixture merges with
``OverwriteWithLatestAvroPayload`` (recorded for the MOR ones; Hudi 0.14's default for the COW
ones, which record none), whose ``combineAndGetUpdateValue`` returns the incoming record
whatever its ordering value -- so an update carrying an OLDER ordering value still replaces the
stored record; a delete removes the key.

The starting rows are the fixture's golden rows (read by hudi-rs 0.5.0 when the fixtures were
made), not a read by the code under test.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from tests.fixtures import GOLDEN_DIR
from tests.golden import golden_rows, norm, norm_golden

META = ("_hoodie_commit_time", "_hoodie_commit_seqno", "_hoodie_file_name")
KEY, PART = "_hoodie_record_key", "_hoodie_partition_path"
OVERWRITE_WITH_LATEST = "org.apache.hudi.common.model.OverwriteWithLatestAvroPayload"


@dataclass(frozen=True)
class Fixture:
    """What the test knows about one v6 fixture table (from its hoodie.properties).

    Attributes:
        keys: record key fields; parts: partition fields.
        keygen: ``simple``, ``complex``, ``nonpartitioned`` or ``timestamp``.
        hive: hive-style partition folders.
        ordering: the precombine field (None: none recorded).
        change: a data column every update changes (not a key, partition or ordering column).
        new_partition: a value of the (first) partition field no row has yet.
        options: write options the table needs from the writer (what it does not record).
        meta_fields: the table populates the meta columns (``hoodie.populate.meta.fields``);
            without, readers return no ``_hoodie_*`` columns and keys come from the key fields.
        event_time: the table merges by event time (``EVENT_TIME_ORDERING`` recorded, Hudi
            1.x): an incoming record with an older ordering value loses to the stored one.
    """

    keys: tuple[str, ...]
    parts: tuple[str, ...]
    keygen: str
    hive: bool
    ordering: str | None
    change: str
    new_partition: Any = None
    options: Mapping[str, str] = field(default_factory=dict)
    meta_fields: bool = True
    event_time: bool = False


_TYPED_PART = dict(keys=("id",), parts=("byteField",), keygen="simple", ordering="longField")
_TRIPS = dict(
    keys=("uuid",), parts=("city",), keygen="simple", hive=True, ordering="ts", change="rider"
)
_NONPART = dict(keys=("id",), parts=(), keygen="nonpartitioned", hive=True, ordering="longField")

#: every version-6 fixture table hudi_ds writes
WRITABLE: dict[str, Fixture] = {
    "cow_v6_complexkeygen_hivestyle": Fixture(
        keys=("id", "name"),
        parts=("byteField", "shortField"),
        keygen="complex",
        hive=True,
        ordering="longField",
        change="intField",
        new_partition=77,
    ),
    "mor_parquet_v6_complexkeygen_hivestyle": Fixture(
        keys=("id", "name"),
        parts=("byteField", "shortField"),
        keygen="complex",
        hive=True,
        ordering="longField",
        change="intField",
        new_partition=77,
    ),
    "cow_v6_empty": Fixture(
        keys=("id",), parts=(), keygen="nonpartitioned", hive=True, ordering=None, change="name"
    ),
    "mor_parquet_v6_empty": Fixture(
        keys=("id",), parts=(), keygen="nonpartitioned", hive=True, ordering=None, change="name"
    ),
    "cow_v6_nonpartitioned": Fixture(**_NONPART, change="intField"),  # type: ignore[arg-type]
    "mor_parquet_v6_nonpartitioned": Fixture(**_NONPART, change="intField"),  # type: ignore[arg-type]
    "mor_parquet_v6_nonpartitioned_rollback": Fixture(**_NONPART, change="intField"),  # type: ignore[arg-type]
    "cow_v6_simplekeygen_nonhivestyle": Fixture(
        **_TYPED_PART,  # type: ignore[arg-type]
        hive=False,
        change="intField",
        new_partition=77,
    ),
    "mor_parquet_v6_simplekeygen_nonhivestyle": Fixture(
        **_TYPED_PART,  # type: ignore[arg-type]
        hive=False,
        change="intField",
        new_partition=77,
    ),
    "cow_v6_simplekeygen_nonhivestyle_overwritetable": Fixture(
        **_TYPED_PART,  # type: ignore[arg-type]
        hive=False,
        change="intField",
        new_partition=77,
    ),
    "mor_parquet_v6_simplekeygen_nonhivestyle_overwritetable": Fixture(
        **_TYPED_PART,  # type: ignore[arg-type]
        hive=False,
        change="intField",
        new_partition=77,
    ),
    "cow_v6_timebasedkeygen_nonhivestyle": Fixture(
        keys=("id",),
        parts=("ts_str",),
        keygen="timestamp",
        hive=False,
        ordering="longField",
        change="intField",
        new_partition="2023-05-06T07:08:09.123Z",
        # hoodie.properties records the formats but not the type (Java needs it from the writer)
        options={"hoodie.keygen.timebased.timestamp.type": "DATE_STRING"},
    ),
    # hoodie.populate.meta.fields=false: Java's files hold the meta columns with null values
    # (_hoodie_file_name aside); keys are built from the record key field
    "cow_v6_simplekeygen_hivestyle_no_metafields": Fixture(
        **_TYPED_PART,  # type: ignore[arg-type]
        hive=True,
        change="intField",
        new_partition=77,
        meta_fields=False,
    ),
    "mor_parquet_v6_simplekeygen_hivestyle_no_metafields": Fixture(
        **_TYPED_PART,  # type: ignore[arg-type]
        hive=True,
        change="intField",
        new_partition=77,
        meta_fields=False,
    ),
    "mor_avro_v6_trips_8i1u": Fixture(**_TRIPS, new_partition="new_city"),  # type: ignore[arg-type]
    "mor_avro_v6_trips_8i3d": Fixture(**_TRIPS, new_partition="new_city"),  # type: ignore[arg-type]
}

#: version-6 fixture tables hudi_ds refuses to write, and why (matched in the error)
REFUSED: dict[str, tuple[str, dict[str, str]]] = {
    # Hudi 0.14 auto-generated record keys (<instant>_<task>_<row>): no column addresses a
    # row, Java itself refuses a record key option on such a table; only a delete of rows as
    # read (their _hoodie_record_key, DELETE_PREPPED) is taken
    # (test_delete_as_read_from_auto_keyed_fixture)
    "cow_0x_partitioned": (
        "generated by Hudi",
        {"hoodie.datasource.write.recordkey.field": "uuid", "hoodie.table.name": "trips_table"},
    ),
}


_V8 = dict(event_time=True)
_TXNS = dict(keys=("txn_id",), ordering="txn_ts", change="merchant_name", event_time=True)

#: every Hudi 1.x fixture table (versions 8 and 9) without a metadata table that hudi_ds
#: writes; all but cow_v8_empty (COMMIT_TIME_ORDERING) record EVENT_TIME_ORDERING
WRITABLE_1X: dict[str, Fixture] = {
    "cow_v8_complexkeygen_hivestyle": Fixture(
        keys=("id", "name"),
        parts=("byteField", "shortField"),
        keygen="complex",
        hive=True,
        ordering="longField",
        change="intField",
        new_partition=77,
        event_time=True,
    ),
    "cow_v8_empty": Fixture(
        keys=("id",), parts=(), keygen="nonpartitioned", hive=True, ordering=None, change="name"
    ),
    "cow_v8_nonpartitioned": Fixture(**_NONPART, change="intField", **_V8),  # type: ignore[arg-type]
    "cow_v8_simplekeygen_nonhivestyle": Fixture(
        **_TYPED_PART,  # type: ignore[arg-type]
        hive=False,
        change="intField",
        new_partition=77,
        **_V8,  # type: ignore[arg-type]
    ),
    "cow_v8_simplekeygen_nonhivestyle_overwritetable": Fixture(
        **_TYPED_PART,  # type: ignore[arg-type]
        hive=False,
        change="intField",
        new_partition=77,
        **_V8,  # type: ignore[arg-type]
    ),
    # hoodie.populate.meta.fields=false: keys from the record key field, meta values null
    "cow_v8_simplekeygen_hivestyle_no_metafields": Fixture(
        **_TYPED_PART,  # type: ignore[arg-type]
        hive=True,
        change="intField",
        new_partition=77,
        meta_fields=False,
        **_V8,  # type: ignore[arg-type]
    ),
    "mor_avro_v8_trips_8i1u": Fixture(**_TRIPS, new_partition="new_city", **_V8),  # type: ignore[arg-type]
    "mor_avro_v8_trips_8i3d": Fixture(**_TRIPS, new_partition="new_city", **_V8),  # type: ignore[arg-type]
}
for _t in ("cow", "mor_avro"):
    WRITABLE_1X[f"{_t}_v9_txns_simple_nometa"] = Fixture(
        **_TXNS,  # type: ignore[arg-type]
        parts=("region",),
        keygen="simple",
        hive=True,
        new_partition="new_region",
    )
    WRITABLE_1X[f"{_t}_v9_txns_complex_nometa"] = Fixture(
        **{**_TXNS, "keys": ("txn_id", "account_id")},  # type: ignore[arg-type]
        parts=("region",),
        keygen="complex",
        hive=True,
        new_partition="new_region",
    )
    WRITABLE_1X[f"{_t}_v9_txns_nonpart_nometa"] = Fixture(
        **_TXNS,  # type: ignore[arg-type]
        parts=(),
        keygen="nonpartitioned",
        hive=True,
    )

_V9_TS = dict(
    keys=("txn_id",),
    keygen="timestamp",
    hive=False,
    ordering="txn_ts",
    change="merchant_name",
    event_time=True,
)
#: Hudi 1.1 fixture tables with a metadata table and a timestamp key generator: written here
#: after removing their metadata table as Apache Hudi does for ``hoodie.metadata.enable=false``
#: (the metadata table itself is the metadata table writer's). The EPOCHMILLISECONDS and
#: UNIX_TIMESTAMP ones are in TIMESTAMP_RECORDED_AS_STRING.
WRITABLE_1X_TIMESTAMP: dict[str, Fixture] = {
    "cow_v9_timebasedkeygen_nonhivestyle": Fixture(
        **_V9_TS,  # type: ignore[arg-type]
        parts=("ts_str",),
        new_partition="2023-05-06T07:08:09.123Z",
    ),
    "mor_avro_v9_timebasedkeygen_nonhivestyle": Fixture(
        **_V9_TS,  # type: ignore[arg-type]
        parts=("ts_str",),
        new_partition="2023-05-06T07:08:09.123Z",
    ),
}

#: Hudi 1.1 fixture tables with a numeric timestamp key generator (EPOCHMILLISECONDS,
#: UNIX_TIMESTAMP) whose schema Hudi itself turned to ``string`` (fixture -> partition column).
#: Their last two commits are Spark SQL UPDATE / DELETE (UPSERT_PREPPED / DELETE_PREPPED:
#: partition paths from ``_hoodie_partition_path``, no key generator): Spark types a
#: TimestampBasedKeyGenerator table's partition columns as strings (the relation factories
#: build their ``HoodieFileIndex`` with ``shouldUseStringTypeForTimestampPartitionKeyType =
#: true``, ``SparkHoodieTableFileIndex.getPartitionSchema``), so those commits record
#: the column as ``string`` (``extraMetadata.schema``) and their files hold strings
#: ("1705367700000"), the older files int64; readers return strings. What Java does next:
#:
#: * upsert (any record-writing operation): fails whatever the user passes. The strings as
#:   read, or the original longs, which ``HoodieSchemaUtils.deduceWriterSchema`` promotes to
#:   the table's string (``canonicalizeSchema`` -> ``AvroSchemaEvolutionUtils
#:   .reconcileSchemaRequirements``; ``SchemaChangeUtils.shouldPromoteType(long, string)``)
#:   before ``HoodieCreateRecordUtils.createHoodieRecordRdd`` runs the key generator on records
#:   of that writer schema -- ``TimestampBasedAvroKeyGenerator.getPartitionPath(Object)``
#:   rejects a CharSequence for these types ("Missing input formatter"). Refused here too.
#: * delete: ``HoodieSparkSqlWriter`` builds the keys from ``HoodieSparkUtils.createRdd(df,..)``
#:   in the input's OWN schema, so the original int64 column works (the path built from the
#:   epoch value) and strings fail as above.
TIMESTAMP_RECORDED_AS_STRING: dict[str, str] = {
    "cow_v9_timebasedkeygen_epochmillis": "ts_millis",
    "cow_v9_timebasedkeygen_unixtimestamp": "ts_epoch",
}


def rows_without_keys(name: str, keys: set[str]) -> list[str]:
    """The fixture's golden rows (meta columns a write changes dropped) without the records
    of ``keys``, as :func:`data_row_set` gives a read."""
    out = []
    for g in golden_rows(GOLDEN_DIR / f"{name}.snapshot.jsonl"):
        if g[KEY] not in keys:
            out.append(json.dumps(norm_golden({k: v for k, v in g.items() if k not in META})))
    return sorted(out)


_LANCE_TXNS = dict(
    keys=("txn_id",), ordering="txn_ts", change="merchant_name", event_time=True, hive=True
)
#: Hudi 1.2 fixture tables with Lance base files (``hoodie.table.base.file.format=LANCE``) and
#: a metadata table, written with the optional pylance (``hudi_ds[lance]``): new base files
#: are Lance files as Java's ``HoodieSparkLanceWriter`` writes them
#: (tests/write/test_lance_writes.py)
WRITABLE_LANCE: dict[str, Fixture] = {
    "cow_v9_lance_nonpartitioned": Fixture(
        keys=("id",),
        parts=(),
        keygen="nonpartitioned",
        hive=True,
        ordering="updated_at",
        change="name",
        event_time=True,
    ),
    "cow_v9_lance_txns_nonpart": Fixture(
        **_LANCE_TXNS,  # type: ignore[arg-type]
        parts=(),
        keygen="nonpartitioned",
    ),
    "cow_v9_lance_txns_simple": Fixture(
        **_LANCE_TXNS,  # type: ignore[arg-type]
        parts=("region",),
        keygen="simple",
        new_partition="new_region",
    ),
    "cow_v9_trips_lance": Fixture(
        **_TRIPS,  # type: ignore[arg-type]
        new_partition="new_city",
        event_time=True,
    ),
    "mor_avro_v9_trips_lance": Fixture(
        **_TRIPS,  # type: ignore[arg-type]
        new_partition="new_city",
        event_time=True,
    ),
    "mor_avro_v9_lance_nonhivestyle": Fixture(
        keys=("event_id",),
        parts=("event_date",),
        keygen="simple",
        hive=False,
        ordering="event_ts",
        change="payload",
        new_partition="2024-02-29",
        event_time=True,
    ),
}


# --------------------------------------------------------------------------- keys (model)
def _java_string(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def record_key(fx: Fixture, row: Mapping[str, Any]) -> str:
    """``KeyGenUtils.getRecordKey``: one field's value, or ``f1:v1,f2:v2`` (complex)."""
    if fx.keygen == "complex" or len(fx.keys) > 1:
        return ",".join(f"{f}:{_java_string(row[f])}" for f in fx.keys)
    return _java_string(row[fx.keys[0]])


def partition_path(fx: Fixture, row: Mapping[str, Any]) -> str:
    """The partition path Java's key generator builds for ``row``."""
    if fx.keygen == "nonpartitioned":
        return ""
    values = []
    for f in fx.parts:
        v = row[f]
        if fx.keygen == "timestamp":
            # DATE_STRING yyyy-MM-dd'T'HH:mm:ss.SSSZ -> yyyy/MM/dd/HH in the value's own zone
            t = dt.datetime.strptime(v.replace("Z", "+0000"), "%Y-%m-%dT%H:%M:%S.%f%z")
            v = t.strftime("%Y/%m/%d/%H")
        else:
            v = _java_string(v)
        values.append(f"{f}={v}" if fx.hive else v)
    return "/".join(values)


# --------------------------------------------------------------------------- the scenario
@dataclass
class Scenario:
    """The batches of the write scenario and the rows the table must hold after them."""

    upsert: pa.Table
    upsert2: pa.Table
    delete: pa.Table
    expected: list[str]


def _changed(v: Any, i: int) -> Any:
    if isinstance(v, str):
        return f"{v}-upd{i}"
    if isinstance(v, bool):
        return not v
    return v + 1000 + i


def _shifted(v: Any, delta: int) -> Any:
    """An ordering value greater (``delta`` > 0) or smaller than ``v``; a string (Java's
    ``String.compareTo``) grows by a character or loses its last one."""
    if isinstance(v, str):
        return v + "~" if delta > 0 else v[:-1]
    return v + delta


def _new_key(fx: Fixture, row: dict[str, Any], i: int) -> None:
    k = fx.keys[0]
    v = row[k]
    row[k] = f"new-key-{i}" if isinstance(v, str) else v + 100 * (i + 1)


def scenario(
    name: str,
    fx: Fixture,
    existing: pa.Table,
    event_time: bool = False,
    golden: list[dict[str, Any]] | None = None,
) -> Scenario:
    """Build the batches from the table's ``existing`` data rows (the input only) and the
    expected rows from the golden file (or ``golden``: the starting rows, meta columns
    included, as another reader returned them) and the rules in the module docstring.

    * upsert 1: two existing keys updated (``change`` column changed; the first with a newer
      ordering value, the second with an OLDER one: both win, OverwriteWithLatestAvroPayload),
      two new keys in an existing partition, one new key in a new partition;
    * upsert 2: one of the new keys updated again (an older ordering value: it wins);
    * delete: an untouched existing key, an updated key and a new key.

    ``event_time`` (or :attr:`Fixture.event_time`): the writer merges with
    ``DefaultHoodieRecordPayload`` / ``EVENT_TIME_ORDERING`` instead
    (``needUpdatingPersistedRecord``: the stored record stays when its ordering value is
    greater than the incoming one's; ties go to the incoming record). Deletes remove the key
    whatever its ordering value (the delete operation writes natural-order deletes).
    """
    event_time = event_time or fx.event_time
    data_cols = [c for c in existing.column_names if not c.startswith("_hoodie_")]
    schema = existing.select(data_cols).schema
    rows = sorted(existing.select(data_cols).to_pylist(), key=lambda r: record_key(fx, r))
    # a key the fixture's own writer stored twice (cow_v9_timebasedkeygen_nonhivestyle holds
    # TXN-001 in two file groups of one partition) is left alone: which copies an update
    # reaches depends on the index, not on the rules modelled here
    counts = Counter(record_key(fx, r) for r in rows)
    rows = [r for r in rows if counts[record_key(fx, r)] == 1]
    # rows whose changed and ordering columns hold values first: those are updated
    rows.sort(key=lambda r: r[fx.change] is None or bool(fx.ordering and r[fx.ordering] is None))
    if not rows:  # an empty table: rows of its create schema
        rows = [{c: _seed_value(schema.field(c).type, i) for c in data_cols} for i in range(1, 4)]
        updates: list[dict[str, Any]] = []
        template = rows
    else:
        updates = [dict(r) for r in rows[:2]]
        template = rows
    for i, u in enumerate(updates):
        u[fx.change] = _changed(u[fx.change], i)
        if fx.ordering:
            u[fx.ordering] = _shifted(u[fx.ordering], 10 if i == 0 else -10)
    news = []
    for i in range(2):
        r = dict(template[i % len(template)])
        _new_key(fx, r, i + 10)
        r[fx.change] = _changed(r[fx.change], 50 + i)
        news.append(r)
    if fx.parts:
        r = dict(template[-1])
        _new_key(fx, r, 20)
        r[fx.parts[0]] = fx.new_partition
        news.append(r)
    if not updates:  # the empty tables: every seed row is new
        news = rows + news
    upsert = pa.Table.from_pylist(updates + news, schema=schema)
    again = dict(news[0])
    again[fx.change] = _changed(again[fx.change], 90)
    if fx.ordering:
        again[fx.ordering] = _shifted(again[fx.ordering], -1000)
    upsert2 = pa.Table.from_pylist([again], schema=schema)
    untouched = rows[len(updates) :] if updates else []
    # the new partition's row stays: the final read must show it
    gone = untouched[-1:] + (updates[-1:] or [news[2]]) + [news[1]]
    delete = pa.Table.from_pylist(gone, schema=schema)

    # -- the model
    model: dict[str, dict[str, Any]] = {}
    copies: list[dict[str, Any]] = []  # further copies of a duplicated key (left alone)
    start = golden if golden is not None else golden_rows(GOLDEN_DIR / f"{name}.snapshot.jsonl")
    for g in start:
        g = {k: v for k, v in g.items() if k not in META}
        gk = g[KEY] if fx.meta_fields else record_key(fx, g)
        (copies if gk in model else []).append(norm_golden(g))
        model.setdefault(gk, norm_golden(g))
    for r in [*updates, *news, again]:  # OverwriteWithLatestAvroPayload: the incoming wins
        k = record_key(fx, r)
        stored = model.get(k)
        if (
            event_time
            and stored is not None
            and fx.ordering
            and stored[fx.ordering] > r[fx.ordering]
        ):
            continue  # DefaultHoodieRecordPayload: the older incoming record loses
        # a table without meta fields is read without the _hoodie_* columns
        meta = {KEY: k, PART: partition_path(fx, r)} if fx.meta_fields else {}
        model[k] = {**norm(r), **meta}
    for r in gone:
        model.pop(record_key(fx, r))
    expected = sorted(json.dumps(v, sort_keys=True) for v in [*model.values(), *copies])
    return Scenario(upsert, upsert2, delete, expected)


def _seed_value(t: pa.DataType, i: int) -> Any:
    if pa.types.is_integer(t):
        return i
    if pa.types.is_boolean(t):
        return i % 2 == 0
    if pa.types.is_string(t):
        return f"seed-{i}"
    raise AssertionError(f"no seed value for type {t}")


def data_row_set(table: pa.Table) -> list[str]:
    """The rows of a read, without the meta columns a write changes, as sorted JSON."""
    cols = [c for c in table.column_names if c not in META]
    return sorted(json.dumps(norm(r), sort_keys=True) for r in table.select(cols).to_pylist())


def tree_hashes(root: Path) -> dict[str, str]:
    """SHA-256 of every file under ``root`` (relative path -> digest)."""
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def check_payload(props: Mapping[str, str]) -> None:
    """The model's merge rule holds for the table: OverwriteWithLatestAvroPayload (recorded,
    or none recorded: Hudi 0.14's default), no merge mode of its own."""
    payload = props.get("hoodie.compaction.payload.class", OVERWRITE_WITH_LATEST)
    assert payload == OVERWRITE_WITH_LATEST, payload
    assert "hoodie.record.merge.mode" not in props


def check_merge_mode(props: Mapping[str, str], fx: Fixture) -> None:
    """The model's merge rule holds for a Hudi 1.x table: it records the merge mode the
    fixture entry says (event time with its ordering field, else commit time)."""
    want = "EVENT_TIME_ORDERING" if fx.event_time else "COMMIT_TIME_ORDERING"
    assert props.get("hoodie.record.merge.mode") == want, props.get("hoodie.record.merge.mode")
    recorded = props.get("hoodie.table.ordering.fields") or props.get(
        "hoodie.table.precombine.field"
    )
    assert recorded == fx.ordering, (recorded, fx.ordering)


def read_props(root: Path) -> dict[str, str]:
    """``hoodie.properties`` as plain ``key=value`` lines (the test's own parse)."""
    out = {}
    for line in (root / ".hoodie" / "hoodie.properties").read_text().splitlines():
        if line and not line.startswith("#") and "=" in line:
            k, v = line.split("=", 1)
            out[k] = v.replace("\\:", ":").replace("\\=", "=")
    return out


Reader = Callable[[str], pa.Table]
