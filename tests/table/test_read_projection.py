"""Projected reads (``columns=[...]``) return exactly those columns of the full read's rows.

A projected read reads less: the record key field instead of ``_hoodie_record_key`` under the
simple key generator, only the delete flags for slices without logs. These tables mix what the
merge must still see: late updates (a lower ordering value that must lose), updates that win,
new keys, and deletes, in MOR log blocks of both formats and in COW base files.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import hudi_ds
from hudi_ds.layout.file_group import BaseFile
from hudi_ds.layout.naming import base_file_name, parse_base_file_name
from hudi_ds.schema.meta import IS_DELETED_FIELD
from hudi_ds.storage import Storage
from hudi_ds.table.reader import no_true_flag, read_base_file
from tests.builders import options
from tests.golden import row_set


def _rows(ids: np.ndarray, ts: np.ndarray, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    return pa.table(
        {
            "id": pa.array([f"k{i}" for i in ids]),  # builds the fixture, not a hot path
            "ts": pa.array(ts, pa.int64()),
            "dt": pa.array([f"p{i % 3}" for i in ids]),
            "v": pa.array(rng.random(len(ids))),
            "n": pa.array(rng.integers(0, 1000, len(ids)), pa.int32()),
        }
    )


def _model(batches: list[pa.Table], deleted: list[str]) -> dict[str, tuple[int, float]]:
    state: dict[str, tuple[int, float]] = {}
    for b in batches:
        for k, t, v in zip(
            b["id"].to_pylist(), b["ts"].to_pylist(), b["v"].to_pylist(), strict=True
        ):
            if k not in state or t >= state[k][0]:
                state[k] = (t, v)
    for k in deleted:
        state.pop(k, None)
    return state


@pytest.mark.parametrize(
    "table_type,block",
    [("MERGE_ON_READ", "parquet"), ("MERGE_ON_READ", "avro"), ("COPY_ON_WRITE", "parquet")],
)
def test_projected_reads_equal_full_read(tmp_path: Path, table_type: str, block: str) -> None:
    path = str(tmp_path / "t")
    opts = options(
        "t",
        table_type,
        partition="dt",
        index="BUCKET",
        buckets=2,
        **{"hoodie.logfile.data.block.format": block},
    )
    base = _rows(np.arange(600), np.full(600, 10), 1)
    hudi_ds.write(path, base, {**opts, "hoodie.datasource.write.operation": "insert"})
    # updates of 200 keys: half late (ts 5 loses to 10), half winning (ts 20); 100 new keys
    upd = _rows(np.arange(0, 600, 3), np.where(np.arange(200) % 2 == 0, 5, 20), 2)
    new = _rows(np.arange(600, 700), np.full(100, 20), 3)
    batch = pa.concat_tables([upd, new])
    hudi_ds.write(path, batch, opts)
    dels = _rows(np.arange(1, 700, 7), np.zeros(100, dtype=np.int64), 4).select(["id", "dt"])
    hudi_ds.write(path, dels, {**opts, "hoodie.datasource.write.operation": "delete"})

    full = hudi_ds.read(path)
    model = _model([base, batch], dels["id"].to_pylist())
    got_model = {
        k: (t, v)
        for k, t, v in zip(
            full["id"].to_pylist(), full["ts"].to_pylist(), full["v"].to_pylist(), strict=True
        )
    }
    assert full.num_rows == len(got_model) == len(model)
    assert got_model == model
    for cols in (["id", "ts", "v"], ["v"], ["n", "dt"], ["_hoodie_record_key", "v"], ["ts"]):
        got = hudi_ds.read(path, columns=cols)
        assert got.column_names == cols
        assert got.num_rows == full.num_rows, cols
        assert row_set(got) == row_set(full.select(cols)), cols


def test_delete_flags_left_unread_only_when_the_footer_shows_none_set(tmp_path: Path) -> None:
    """A projected read decodes ``_hoodie_is_deleted`` of a base file only when a row may be
    flagged: statistics showing every flag false or null leave it unread (null deletes nothing,
    as false); a true flag, a file without statistics, or a caller that returns the column
    (or a non-nullable flag field, which nulls cannot stand for) read it."""
    storage = Storage(str(tmp_path))
    storage.makedirs("p")
    schema = pa.schema([("id", pa.string()), ("v", pa.float64()), (IS_DELETED_FIELD, pa.bool_())])
    cases = {  # flags, write statistics -> left unread
        "false": ([False, False, False], True, True),
        "null": ([None, None, None], True, True),
        "one_true": ([False, True, None], True, False),
        "no_stats": ([False, False, False], False, False),
    }
    for i, (tag, (flags, stats, unread)) in enumerate(cases.items()):
        rows = pa.table({"id": ["a", "b", "c"], "v": [1.0, 2.0, 3.0], IS_DELETED_FIELD: flags})
        name = base_file_name(f"{i:08d}-0000-0000-0000-000000000000-0", "0-0-0", "001")
        pq.write_table(rows.cast(schema), storage.full_path(f"p/{name}"), write_statistics=stats)
        base = BaseFile(f"p/{name}", parse_base_file_name(name))  # type: ignore[arg-type]
        assert no_true_flag(pq.ParquetFile(storage.full_path(base.path))) is unread, tag
        got = read_base_file(storage, base, schema, unread_false_flags=True)
        assert got.select(["id", "v"]).equals(rows.select(["id", "v"])), tag
        want = pa.nulls(3, pa.bool_()) if unread else pa.array(flags, pa.bool_())
        assert got.column(IS_DELETED_FIELD).combine_chunks().equals(want), tag
        # returned (the default) or not nullable: read as written
        assert read_base_file(storage, base, schema).equals(rows.cast(schema)), tag
        strict = pa.schema([*[*schema][:2], pa.field(IS_DELETED_FIELD, pa.bool_(), False)])
        if None not in flags:
            assert read_base_file(storage, base, strict, unread_false_flags=True).equals(
                rows.cast(strict)
            ), tag


def test_log_block_delete_flags_left_unread_only_when_none_is_set() -> None:
    """A Parquet log block's ``_hoodie_is_deleted`` is left undecoded (null, deleting nothing)
    only when asked and its footer shows no true flag, as a base file's."""
    from hudi_ds.layout.parquet import parquet_block_content
    from hudi_ds.log.block import BlockType, LogBlock
    from hudi_ds.log.reader import decode_data_block

    schema = pa.schema([("id", pa.string()), ("v", pa.float64()), (IS_DELETED_FIELD, pa.bool_())])
    cases = {  # flags, write statistics -> left unread
        "false": ([False, False, False], True, True),
        "null": ([None, None, None], True, True),
        "one_true": ([False, True, None], True, False),
        "no_stats": ([False, False, False], False, False),
    }
    for tag, (flags, stats, unread) in cases.items():
        rows = pa.table({"id": ["a", "b", "c"], "v": [1.0, 2.0, 3.0], IS_DELETED_FIELD: flags})
        rows = rows.cast(schema)
        if stats:
            content = parquet_block_content(rows, "snappy", [])
        else:
            sink = pa.BufferOutputStream()
            pq.write_table(rows, sink, write_statistics=False, write_page_checksum=True)
            content = sink.getvalue().to_pybytes()
        block = LogBlock(BlockType.PARQUET_DATA, content=content)
        got = decode_data_block(block, schema, unread_false_flags=True)
        assert got.select(["id", "v"]).equals(rows.select(["id", "v"])), tag
        want = pa.nulls(3, pa.bool_()) if unread else pa.array(flags, pa.bool_())
        assert got.column(IS_DELETED_FIELD).combine_chunks().equals(want), tag
        assert decode_data_block(block, schema).equals(rows), tag  # by default: as written


def test_projected_reads_of_log_blocks_with_delete_flags(tmp_path: Path) -> None:
    """Parquet log blocks carrying ``_hoodie_is_deleted`` (all false: left unread by a
    projected read) beside deleted keys: projected reads equal the full read's rows."""
    path = str(tmp_path / "t")
    opts = options(
        "t",
        "MERGE_ON_READ",
        partition="dt",
        index="BUCKET",
        buckets=1,
        **{"hoodie.logfile.data.block.format": "parquet"},
    )

    def flagged(t: pa.Table, flags: np.ndarray) -> pa.Table:
        return t.append_column(IS_DELETED_FIELD, pa.array(flags))

    base = flagged(_rows(np.arange(300), np.full(300, 10), 1), np.zeros(300, dtype=bool))
    hudi_ds.write(path, base, {**opts, "hoodie.datasource.write.operation": "insert"})
    upd = flagged(_rows(np.arange(0, 300, 2), np.full(150, 20), 2), np.zeros(150, dtype=bool))
    hudi_ds.write(path, upd, opts)
    gone = np.arange(1, 300, 3)
    dels = flagged(_rows(gone, np.full(len(gone), 30), 3), np.arange(len(gone)) % 5 == 0)
    hudi_ds.write(path, dels, opts)

    full = hudi_ds.read(path)
    deleted = set(dels.filter(dels[IS_DELETED_FIELD])["id"].to_pylist())
    assert deleted and not deleted & set(full["id"].to_pylist())
    assert full.num_rows == 300 - len(deleted)
    model = _model([base, upd, dels], sorted(deleted))
    assert {
        k: (t, v)
        for k, t, v in zip(
            full["id"].to_pylist(), full["ts"].to_pylist(), full["v"].to_pylist(), strict=True
        )
    } == model
    for cols in (["id", "v"], ["v", "ts"]):
        got = hudi_ds.read(path, columns=cols)
        assert row_set(got) == row_set(full.select(cols)), cols
