"""Which tables pre-combine a write batch by ordering value, and how (merge specs).

Java 0.x de-duplicates an upsert batch with the payload's ``preCombine``
(``HoodieWriteHelper.deduplicateRecords`` -> ``HoodieAvroRecordMerger.merge`` with the
de-duping flag -> ``newer.preCombine(older)``); ``OverwriteWithLatestAvroPayload.preCombine``
returns ``older`` only when its ordering value is strictly greater. Java 1.x de-duplicates a
table that records ``hoodie.record.merge.mode=COMMIT_TIME_ORDERING`` with its commit-time merger:
the later version wins. Readers fold log blocks by commit time either way.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from hudi_ds.config import Options
from hudi_ds.merge.engine import merge_versions
from hudi_ds.merge.modes import BEHAVIOURS, MergeSpec, builtin_spec, table_spec, write_spec
from hudi_ds.table_config import TableConfig

MODEL = "org.apache.hudi.common.model."
V6 = {"hoodie.table.name": "t", "hoodie.table.version": "6", "hoodie.table.precombine.field": "ts"}
SCHEMA = pa.schema(
    [
        ("_hoodie_record_key", pa.string()),
        ("ts", pa.int64()),
        ("name", pa.string()),
        ("price", pa.string()),
        ("Op", pa.string()),
    ]
)


def spec_of(**props: str) -> MergeSpec:
    return table_spec(TableConfig({**V6, **props}))


@pytest.mark.parametrize(
    ("props", "expected"),
    [
        ({}, True),  # Hudi 0.14 COW: no payload recorded, the writer's default payload
        ({"hoodie.compaction.payload.class": MODEL + "OverwriteWithLatestAvroPayload"}, True),
        (
            {
                "hoodie.compaction.payload.class": MODEL + "OverwriteWithLatestAvroPayload",
                "hoodie.compaction.record.merger.strategy": "eeb8d96f-b1e4-49fd-bbf8-28ac514178e5",
            },
            True,
        ),
        (
            {
                "hoodie.compaction.payload.class": MODEL
                + "OverwriteNonDefaultsWithLatestAvroPayload"
            },
            True,
        ),
        ({"hoodie.compaction.payload.class": MODEL + "AWSDmsAvroPayload"}, True),
        ({"hoodie.compaction.payload.class": MODEL + "DefaultHoodieRecordPayload"}, False),
        # merge mode / commit-time strategy recorded: Java 1.x semantics
        (
            {
                "hoodie.compaction.payload.class": MODEL + "OverwriteWithLatestAvroPayload",
                "hoodie.record.merge.mode": "COMMIT_TIME_ORDERING",
            },
            False,
        ),
        (
            {"hoodie.compaction.record.merger.strategy": "ce9acb64-bde0-424c-9b91-f6ebba25356d"},
            False,
        ),
        (
            {
                "hoodie.table.version": "8",
                "hoodie.compaction.payload.class": MODEL + "OverwriteWithLatestAvroPayload",
                "hoodie.record.merge.strategy.id": "ce9acb64-bde0-424c-9b91-f6ebba25356d",
                "hoodie.record.merge.mode": "COMMIT_TIME_ORDERING",
            },
            False,
        ),
        ({"hoodie.table.precombine.field": ""}, False),  # no ordering field
    ],
)
def test_table_spec_marks_payload_tables(props: dict[str, str], expected: bool) -> None:
    spec = spec_of(**props)
    assert spec.payload_precombine is expected
    if expected:
        assert spec.mode == "COMMIT_TIME_ORDERING" and spec.ordering_fields == ("ts",)


@pytest.mark.parametrize(
    ("options", "by_payload"),
    [
        ({"hoodie.write.record.merge.mode": "COMMIT_TIME_ORDERING"}, False),
        (
            {"hoodie.write.record.merge.strategy.id": "ce9acb64-bde0-424c-9b91-f6ebba25356d"},
            False,
        ),
        ({"hoodie.datasource.write.payload.class": MODEL + "OverwriteWithLatestAvroPayload"}, True),
        (
            {"hoodie.datasource.write.payload.class": "OverwriteNonDefaultsWithLatestAvroPayload"},
            True,
        ),
        ({"hoodie.datasource.write.payload.class": MODEL + "AWSDmsAvroPayload"}, True),
    ],
)
def test_first_and_later_writes_agree(options: dict[str, str], by_payload: bool) -> None:
    """A new table records its choice: the writes after the first pre-combine alike."""
    first = write_spec(Options.of(options), "ts")
    assert first.payload_precombine is by_payload
    recorded = first.table_properties()
    assert ("hoodie.record.merge.mode" in recorded) is not by_payload
    later = table_spec(TableConfig({**V6, **recorded}))
    assert later == first


def test_without_ordering_field_nothing_to_order_by() -> None:
    spec = write_spec(Options.of({}), None)
    assert spec.mode == "COMMIT_TIME_ORDERING" and spec.by_payload
    assert not spec.payload_precombine
    assert "hoodie.record.merge.mode" not in spec.table_properties()
    assert spec.precombine_props() == spec.props()


def table(rows: list[tuple[Any, ...]]) -> pa.Table:
    return pa.Table.from_pylist([dict(zip(SCHEMA.names, r, strict=True)) for r in rows], SCHEMA)


def merged_rows(res: Any) -> list[tuple[Any, ...]]:
    return sorted(tuple(r.values()) for r in res.rows.to_pylist())


BATCH = [
    ("k1", 5, "a", "p1", None),
    ("k2", 2, "x", "p2", None),
    ("k1", 3, "b", "p3", None),
    ("k3", 1, "p", "p4", None),
    ("k2", 2, "y", "p5", None),  # tie: the later version
    ("k3", 4, "q", "p6", None),
    ("k4", 9, "only", None, None),
]


def test_batch_keeps_greatest_ordering_ties_to_later() -> None:
    spec = builtin_spec(BEHAVIOURS["overwrite_with_latest"], ("ts",), payload=True)
    res = merge_versions([table(BATCH)], spec, SCHEMA, spec.precombine_props())
    assert merged_rows(res) == [
        ("k1", 5, "a", "p1", None),
        ("k2", 2, "y", "p5", None),
        ("k3", 4, "q", "p6", None),
        ("k4", 9, "only", None, None),
    ]
    assert sorted(res.winners.tolist()) == [0, 4, 5, 6]


def test_commit_time_table_keeps_later_version() -> None:
    """Chosen by merge mode (Java 1.x): the batch keeps the later version of each key."""
    spec = builtin_spec(BEHAVIOURS["overwrite_with_latest"], ("ts",), payload=False)
    assert spec.precombine_props() == spec.props()
    res = merge_versions([table(BATCH)], spec, SCHEMA, spec.precombine_props())
    assert merged_rows(res) == [
        ("k1", 3, "b", "p3", None),
        ("k2", 2, "y", "p5", None),
        ("k3", 4, "q", "p6", None),
        ("k4", 9, "only", None, None),
    ]


def test_overwrite_non_defaults_batch_keeps_whole_version() -> None:
    """0.14/0.15 OverwriteNonDefaultsWithLatestAvroPayload inherits preCombine: the whole
    version with the greatest ordering value, no null filling within the batch."""
    spec = builtin_spec(BEHAVIOURS["overwrite_non_defaults"], ("ts",), payload=True)
    batch = table([("k1", 2, "name_1", None, None), ("k1", 1, None, "price_1", None)])
    res = merge_versions([batch], spec, SCHEMA, spec.precombine_props())
    assert merged_rows(res) == [("k1", 2, "name_1", None, None)]
    # the stored record then meets the batch's winner by commit time, nulls keep stored values
    stored = table([("k1", 0, "stored", "p0", None)])
    res = merge_versions([stored, res.rows], spec, SCHEMA, has_base=True)
    assert merged_rows(res) == [("k1", 2, "name_1", "p0", None)]


def test_aws_dms_delete_competes_by_ordering() -> None:
    spec = builtin_spec(BEHAVIOURS["aws_dms"], ("ts",), payload=True)
    batch = table(
        [
            ("k1", 5, "a", None, "D"),
            ("k1", 3, "b", None, "U"),
            ("k2", 1, "c", None, "D"),
            ("k2", 3, "d", None, "U"),
        ]
    )
    res = merge_versions([batch], spec, SCHEMA, spec.precombine_props())
    assert merged_rows(res) == [("k2", 3, "d", None, "U")]
    assert res.deleted.tolist() == [0]


def test_readers_fold_blocks_by_commit_time() -> None:
    """Log blocks (one pre-combined version per key each) fold in write order under the
    table's own props: a later block wins with a smaller ordering value."""
    spec = spec_of()
    assert spec.payload_precombine
    base = table([("k1", 10, "base", "p0", None), ("k2", 10, "base2", "p0", None)])
    block1 = table([("k1", 7, "b1", "p1", None)])
    block2 = table([("k1", 3, "b2", "p2", None), ("k2", 1, "b2", "p3", None)])
    res = merge_versions([base, block1, block2], spec, SCHEMA, has_base=True)
    assert merged_rows(res) == [("k1", 3, "b2", "p2", None), ("k2", 1, "b2", "p3", None)]
    assert np.array_equal(np.sort(res.winners), [3, 4])


@pytest.mark.parametrize("version", [8, 9])
@pytest.mark.parametrize(
    "options",
    [
        {},
        {"hoodie.write.record.merge.mode": "COMMIT_TIME_ORDERING"},
        {"hoodie.write.record.merge.mode": "EVENT_TIME_ORDERING"},
        *[{"hoodie.datasource.write.payload.class": b.payload_class} for b in BEHAVIOURS.values()],
    ],
)
def test_first_and_later_writes_agree_on_1x_tables(options: dict[str, str], version: int) -> None:
    """A new version-8/9 table records its merge choice as Hudi 1.0 / 1.1 does; reading it back
    gives the spec the first write used (merged by mode: no payload pre-combine)."""
    ordering = "_event_lsn" if "Postgres" in str(options) else "ts"
    first = write_spec(
        Options.of({**options, "hoodie.write.table.version": str(version)}), ordering
    )
    first = dataclasses.replace(first, by_payload=False)  # what resolve_options does for 8+
    recorded = first.table_properties(version)
    key = "hoodie.table.precombine.field" if version == 8 else "hoodie.table.ordering.fields"
    props = {
        "hoodie.table.name": "t",
        "hoodie.table.version": str(version),
        key: ",".join(first.ordering_fields),
        **recorded,
    }
    assert table_spec(TableConfig(props)) == first
    assert "hoodie.record.merge.mode" in recorded
    if version == 9:  # Hudi 1.1 records no payload class (a legacy one for special payloads)
        assert "hoodie.compaction.payload.class" not in recorded
    else:
        assert recorded["hoodie.compaction.payload.class"] == first.payload_class
