"""The record-level index (``record_index`` MDT partition) of the 1.x fixture tables: what
hudi_ds computes from a table's data files equals what Apache Hudi wrote, record by record.

The fixtures were written by Hudi 1.0 / 1.1 Spark jobs with ``hoodie.metadata.record.index.
enable=true``: inserts, upserts, deletes, clustering, insert_overwrite, a rollback (see the
fixtures' README). Java writes each record's ``instantTime`` when the key enters its file group
(insert, clustering move); a COW update in place keeps it, so a recomputation from the latest
files can only date the key by its slice: there the stored instant must be an earlier commit of
the data timeline that wrote the same file group.
"""

from __future__ import annotations

import zipfile

import pyarrow as pa
import pytest

from hudi_ds.metadata.record_index import (
    RECORD_INDEX_PARTITION,
    RecordLocation,
    decode_value,
    encode_value,
    file_group_id,
    file_group_indexes,
)
from hudi_ds.storage import Storage
from hudi_ds.table_config import TableConfig
from hudi_ds.timeline.instant import format_instant_time
from hudi_ds.timeline.timeline import Timeline
from tests.fixtures import FIXTURES_DIR, fixture_names, fixture_table, require_base_file_reader
from tests.metadata.rli_support import (
    recomputed_record_index,
    stored_record_index,
    writer_timezone,
)


def _has_record_index(name: str) -> bool:
    with zipfile.ZipFile(FIXTURES_DIR / f"{name}.zip") as zf:
        return any(f"/metadata/{RECORD_INDEX_PARTITION}/" in n for n in zf.namelist())


RLI_FIXTURES = [n for n in fixture_names() if _has_record_index(n)]


def _java_hash_index(key: str, n: int) -> int:
    h = 0
    units = key.encode("utf-16-be")
    for i in range(0, len(units), 2):
        h = (31 * h + (units[i] << 8 | units[i + 1])) & 0xFFFFFFFF
    if h >= 1 << 31:
        h -= 1 << 32
    return abs(abs(h) % n)


def test_file_group_of_a_key_is_java_string_hash_mod_count() -> None:
    keys = ["TXN-001", "TXN-002", "", "key-\U0001f600", "ä" * 40, "polygenelubricants"]
    got = file_group_indexes(pa.array(keys), 10).tolist()
    assert got == [_java_hash_index(k, 10) for k in keys]
    # "polygenelubricants".hashCode() == Integer.MIN_VALUE: abs stays negative in Java
    assert got[-1] == 8
    assert file_group_id(3) == "record-index-0003-0"


def test_values_round_trip_both_file_id_encodings() -> None:
    from hudi_ds.metadata.records import record_schema

    schema = record_schema(9)
    for fid in ("8b0a8a4e-2c1f-4a4b-9d8e-0123456789ab-0", "00000003-2c1f-4a4b-9d8e-0123456789ab-0"):
        loc = RecordLocation("region=eu", fid, 1772922289244)
        assert decode_value(encode_value(loc, schema), schema) == loc
    raw = RecordLocation("", "not-a-uuid_file", 5)
    assert decode_value(encode_value(raw, schema), schema) == raw


@pytest.mark.parametrize("name", RLI_FIXTURES)
def test_fixture_values_reencode_byte_exact(name: str, tmp_path_factory) -> None:  # type: ignore[no-untyped-def]
    from hudi_ds.layout.hfile import read_hfile

    root = fixture_table(name, tmp_path_factory)
    folder = root / ".hoodie" / "metadata" / RECORD_INDEX_PARTITION
    seen = 0
    for p in sorted(folder.glob("*.hfile")):
        hf = read_hfile(p.read_bytes(), str(p))
        schema = hf.file_info["schema"].decode()
        for value in hf.values:
            assert encode_value(decode_value(value, schema), schema, p.name) == value
            seen += 1
    assert seen or not list(folder.glob("*.hfile"))


@pytest.mark.parametrize("name", RLI_FIXTURES)
def test_record_index_recomputed_from_files_equals_the_fixtures(
    name: str, tmp_path_factory
) -> None:  # type: ignore[no-untyped-def]
    require_base_file_reader(name)
    root = fixture_table(name, tmp_path_factory)
    tz = writer_timezone(root)
    stored = stored_record_index(root)
    computed = recomputed_record_index(root, tz)
    assert stored, "the fixture's record index is empty"
    assert sorted(stored) == sorted(computed)
    storage = Storage(str(root))
    cfg = TableConfig.load(storage)
    tl = Timeline.load(storage, cfg.timeline_layout_version, cfg.timeline_path)
    for key, want in computed.items():
        got = stored[key]
        assert (got.partition, got.file_id) == (want.partition, want.file_id), key
        if got.instant_ms == want.instant_ms:
            continue
        # an update in place: the key entered the file group with an earlier commit
        assert got.instant_ms < want.instant_ms, key
        when = format_instant_time(got.instant_ms, tz)
        inst = tl.get(when)
        assert inst is not None and inst.is_completed, (key, when)
        ids = {s.file_id for s in tl.read_commit_metadata(inst).write_stats()}
        assert want.file_id in ids, (key, when)
