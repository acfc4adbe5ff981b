"""One merge engine everywhere: the same random history of writes gives identical rows

* read as a MOR snapshot (log blocks merged on read),
* read after compacting the MOR table (half way, and at the end),
* written as a COW table (merged on write),

for every merge mode and built-in payload behaviour, and for a custom merger. Also checks the
compaction-facing entry point :func:`hudi_ds.merge.merge_versions` against the reader.

Deletes follow the rule that keeps them consistent in Hudi too: a delete that carries an
ordering value is never followed by a version of the key with a smaller one (once compacted,
a tombstone no longer exists to win against it), and a key deleted by the delete operation is
re-inserted only above every ordering value it had (below, Hudi returns the base file's old row
on MOR but the re-insert on COW: tests/merge/test_delete_semantics.py).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import hudi_ds
from hudi_ds.layout.file_group import FileSlice
from hudi_ds.log.block import BlockType, HeaderKey
from hudi_ds.log.reader import decode_data_block, decode_delete_block
from hudi_ds.merge import merge_versions
from hudi_ds.merge.engine import DataPart, DeleteKeys
from hudi_ds.services import ServiceContext, compaction
from hudi_ds.storage import Storage
from hudi_ds.table.reader import ReadStats, read_file_slice, scan_slice_logs
from hudi_ds.table.table import ReadableTable
from tests.conftest import table_options

TOAST = "__debezium_unavailable_value"
SCHEMA = pa.schema(
    [
        ("id", pa.string()),
        ("ts", pa.int64()),
        ("name", pa.string()),
        ("price", pa.int64()),
        ("Op", pa.string()),
        ("_change_operation_type", pa.string()),
        ("_event_lsn", pa.int64()),
        ("_hoodie_is_deleted", pa.bool_()),
    ]
)
DATA = [f.name for f in SCHEMA]
CUSTOM_CLASSES = "tests.merge.test_custom.CounterMerger"
MODES = {
    "commit_time": {"hoodie.write.record.merge.mode": "COMMIT_TIME_ORDERING"},
    "event_time": {"hoodie.write.record.merge.mode": "EVENT_TIME_ORDERING"},
    "event_time_payload": {"hoodie.datasource.write.payload.class": "EventTimeAvroPayload"},
    "partial_update": {"hoodie.datasource.write.payload.class": "PartialUpdateAvroPayload"},
    "overwrite_non_defaults": {
        "hoodie.datasource.write.payload.class": "OverwriteNonDefaultsWithLatestAvroPayload"
    },
    "aws_dms": {"hoodie.datasource.write.payload.class": "AWSDmsAvroPayload"},
    "postgres": {
        "hoodie.datasource.write.payload.class": "PostgresDebeziumAvroPayload",
        "hoodie.datasource.write.precombine.field": "_event_lsn",
    },
    "custom": {
        "hoodie.write.record.merge.mode": "CUSTOM",
        "hoodie.write.record.merge.custom.implementation.classes": CUSTOM_CLASSES,
    },
}


def options(mode: str, table_type: str) -> dict[str, str]:
    o = {
        **table_options("h", table_type=table_type),
        "write.batch.size": "0.002",  # small: MOR handles flush several blocks per write
    }
    o.update(MODES[mode])
    return o


def history(seed: int, writes: int = 6) -> list[tuple[str, pa.Table]]:
    rng = np.random.default_rng(seed)
    out: list[tuple[str, pa.Table]] = []
    top: dict[str, int] = {}  # greatest ordering value each key had
    floor: dict[str, int] = {}  # keys the delete operation removed: re-insert above this
    for w in range(writes):
        n = int(rng.integers(4, 14))
        rows = []
        for _ in range(n):
            key = f"k{int(rng.integers(0, 8))}"
            ts = 10 * (w + 1) + int(rng.integers(0, 16))
            deleted = bool(rng.random() < 0.1)
            if deleted:
                ts = 10 * (w + 1)  # deletes never outrank a later write
            ts = max(ts, floor.get(key, -1) + 1)
            top[key] = max(top.get(key, ts), ts)
            marker = rng.random() < 0.12
            rows.append(
                {
                    "id": key,
                    "ts": ts,
                    "name": [None, "x", "y", TOAST][int(rng.integers(0, 4))],
                    "price": None if rng.random() < 0.3 else int(rng.integers(0, 9)),
                    "Op": "D" if marker else ["I", "U"][int(rng.integers(0, 2))],
                    "_change_operation_type": "d" if marker else "u",
                    "_event_lsn": 10 * (w + 1) if marker else ts,
                    "_hoodie_is_deleted": deleted,
                }
            )
        out.append(("upsert", pa.Table.from_pylist(rows, schema=SCHEMA)))
        if rng.random() < 0.35:
            ids = sorted({f"k{int(i)}" for i in rng.integers(0, 8, 2)})
            out.append(("delete", pa.table({"id": ids})))
            floor.update({k: top[k] for k in ids if k in top})
    return out


def rows_of(path: str, mode: str) -> list[tuple]:
    opts = {}
    if mode == "custom":
        opts["hoodie.write.record.merge.custom.implementation.classes"] = CUSTOM_CLASSES
    t = hudi_ds.read(path, opts)
    return sorted(tuple(r[c] for c in DATA) for r in t.to_pylist())


def apply(path: str, ops: list[tuple[str, pa.Table]], o: dict[str, str]) -> None:
    for op, t in ops:
        hudi_ds.write(path, t, {**o, "hoodie.datasource.write.operation": op})


def compact(path: str, o: dict[str, str]) -> None:
    ctx = ServiceContext.open(path, o)
    instant = compaction.schedule_compaction(ctx)
    if instant is not None:
        compaction.run_compaction(ctx, instant)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("mode", sorted(MODES))
def test_mor_snapshot_compaction_and_cow_agree(tmp_path: Path, mode: str, seed: int) -> None:
    ops = history(seed)
    mor, mor_c, cow = (str(tmp_path / n) for n in ("mor", "mor_c", "cow"))
    apply(mor, ops, options(mode, "MERGE_ON_READ"))
    apply(cow, ops, options(mode, "COPY_ON_WRITE"))
    snapshot = rows_of(mor, mode)
    assert snapshot == rows_of(cow, mode)
    assert snapshot, "the history should leave rows"
    half = len(ops) // 2
    o = options(mode, "MERGE_ON_READ")
    apply(mor_c, ops[:half], o)
    compact(mor_c, o)
    apply(mor_c, ops[half:], o)
    assert rows_of(mor_c, mode) == snapshot
    compact(mor_c, o)
    assert rows_of(mor_c, mode) == snapshot


def _slice_parts(storage: Storage, table: ReadableTable, fs: FileSlice, schema: pa.Schema) -> list:
    """What a compaction hands the engine for one file slice (oldest first)."""
    from hudi_ds.schema.avro import cached_arrow_schema
    from hudi_ds.table.reader import read_base_file

    parts: list = []
    if fs.base_file is not None:
        parts.append(read_base_file(storage, fs.base_file, schema))
    for b in scan_slice_logs(storage, fs, table.visibility(), ReadStats()):
        if b.block_type == BlockType.DELETE:
            parts.append(DeleteKeys.from_table(decode_delete_block(b)))
        else:
            t = decode_data_block(b, schema)
            if b.header.get(HeaderKey.IS_PARTIAL) == "true":
                keep = set(cached_arrow_schema(b.schema).names)
                parts.append(
                    DataPart(t.select([c for c in t.column_names if c in keep]), partial=True)
                )
            else:
                parts.append(t)
    return parts


@pytest.mark.parametrize("mode", sorted(MODES))
def test_compaction_facing_merge_equals_reader(tmp_path: Path, mode: str) -> None:
    p = str(tmp_path / "t")
    o = options(mode, "MERGE_ON_READ")
    apply(p, history(5), o)
    read_opts = {k: v for k, v in o.items() if "custom" in k}
    table = ReadableTable(p, read_opts)
    ctx = table.read_context()
    storage = Storage(p)
    for fs in table.file_slices():
        parts = _slice_parts(storage, table, fs, table.schema)
        merged = merge_versions(parts, ctx.merge_spec, table.schema)
        read = read_file_slice(storage, fs, table.visibility(), ctx, ReadStats())
        assert merged.rows.to_pylist() == read.to_pylist()
