"""Records of the metadata table's ``files`` partition: Avro values, merge rule, instant changes."""

from __future__ import annotations

import json

import pytest

from hudi_ds.errors import CorruptFileError
from hudi_ds.metadata.records import (
    ALL_PARTITIONS,
    FILE_LIST,
    NON_PARTITIONED,
    PARTITION_LIST,
    FilesChanges,
    clean_changes,
    commit_changes,
    decode_files_value,
    encode_files_value,
    instant_changes,
    merge_files,
    merge_records,
    record_schema,
    restore_changes,
    rollback_changes,
)
from hudi_ds.timeline.instant import Instant, State
from hudi_ds.timeline.metadata import CommitMetadata, WriteStat
from hudi_ds.timeline.plans import (
    CleanMetadata,
    CleanPartitionMetadata,
    RestoreMetadata,
    RollbackMetadata,
    RollbackPartitionMetadata,
)


@pytest.mark.parametrize("version", [6, 8, 9])
def test_schema_meta_fields_first(version: int) -> None:
    schema = json.loads(record_schema(version))
    names = [f["name"] for f in schema["fields"]]
    assert names[:8] == [
        "_hoodie_commit_time",
        "_hoodie_commit_seqno",
        "_hoodie_record_key",
        "_hoodie_partition_path",
        "_hoodie_file_name",
        "key",
        "type",
        "filesystemMetadata",
    ]
    assert ("SecondaryIndexMetadata" in names) == (version >= 8)
    # compact JSON, as Java's Schema.toString() writes it (the v9 fixture's 8910 bytes)
    assert " " not in record_schema(version).split('"doc"')[0]
    if version == 9:
        assert len(record_schema(version).encode()) == 8910
    if version == 8:  # the v8 fixture's (Hudi 1.0) schema: no ArrayWrapper in column stats
        assert "ArrayWrapper" not in record_schema(8) and "ArrayWrapper" in record_schema(9)


def test_empty_partition_list_is_the_reference_13_bytes() -> None:
    value = encode_files_value(PARTITION_LIST, {}, record_schema(9))
    assert value == bytes.fromhex("00000000000002020000000000")
    assert decode_files_value(value, record_schema(9)) == (PARTITION_LIST, {})
    # v6 has one union fewer (no SecondaryIndexMetadata)
    assert encode_files_value(PARTITION_LIST, {}, record_schema(6)) == bytes.fromhex(
        "000000000000020200000000"
    )


def test_map_entry_bytes() -> None:
    value = encode_files_value(FILE_LIST, {"a.parquet": (300, False)}, record_schema(9))
    # meta fields, key "", type 2 -> 04, union 1, one-entry block, name, size 300 zigzag, false, end
    expected = (
        bytes(5) + b"\x00" + b"\x04" + b"\x02" + b"\x02" + b"\x12a.parquet" + b"\xd8\x04" + b"\x00"
    )
    assert value == expected + b"\x00" + bytes(4)


@pytest.mark.parametrize("version", [6, 9])
def test_round_trip(version: int) -> None:
    files = {
        "f1.parquet": (123456789012, False),
        ".f_1.log.1_0-1-2": (77, False),
        "gone": (0, True),
    }
    schema = record_schema(version)
    assert decode_files_value(encode_files_value(FILE_LIST, files, schema), schema) == (
        FILE_LIST,
        files,
    )


def test_live_entry_needs_positive_size() -> None:
    with pytest.raises(ValueError, match="positive size"):
        encode_files_value(FILE_LIST, {"x.parquet": (0, False)}, record_schema(9))
    # a tombstone has size 0; a partition list entry too
    encode_files_value(FILE_LIST, {"x.parquet": (0, True)}, record_schema(9))
    encode_files_value(PARTITION_LIST, {"p": (0, False)}, record_schema(9))


def test_decode_torn_value_raises() -> None:
    value = encode_files_value(FILE_LIST, {"a.parquet": (300, False)}, record_schema(9))
    with pytest.raises(CorruptFileError):
        decode_files_value(value[:9], record_schema(9))


def test_merge_rule() -> None:
    older = {"a": (10, False), "b": (5, False), "t": (0, True), "c": (7, False)}
    newer = {"a": (4, False), "b": (0, True), "t": (3, False), "d": (0, True), "e": (9, False)}
    assert merge_files(older, newer) == {
        "a": (10, False),  # max size
        "t": (3, False),  # tombstone then add: the add
        "c": (7, False),
        "d": (0, True),  # new tombstone kept until merged away
        "e": (9, False),
    }
    merged = merge_records(
        {ALL_PARTITIONS: (PARTITION_LIST, {"p": (0, False)}), "p": (FILE_LIST, older)},
        {"p": (FILE_LIST, newer), "q": (FILE_LIST, {"z": (1, False)})},
    )
    assert merged["p"] == (FILE_LIST, merge_files(older, newer))
    assert merged["q"] == (FILE_LIST, {"z": (1, False)})
    assert merged[ALL_PARTITIONS] == (PARTITION_LIST, {"p": (0, False)})


def _stat(path: str | None, size: int, **kw: object) -> WriteStat:
    return WriteStat(file_id="f", path=path, file_size_in_bytes=size, **kw)  # type: ignore[arg-type]


def test_commit_changes() -> None:
    meta = CommitMetadata(
        partition_to_write_stats={
            "p=1": [
                _stat("p=1/a.parquet", 100),
                _stat("p=1/.f_1.log.1_0-1-2", 40, log_version=1),
                _stat("p=1/.f_1.log.1_0-1-2", 90, log_version=1),  # appended again: final size
            ],
            "": [_stat("b.parquet", 5), _stat(None, 0)],
        }
    )
    recs = commit_changes(meta).records()
    assert recs == {
        ALL_PARTITIONS: (PARTITION_LIST, {"p=1": (0, False), NON_PARTITIONED: (0, False)}),
        "p=1": (FILE_LIST, {"a.parquet": (100, False), ".f_1.log.1_0-1-2": (90, False)}),
        NON_PARTITIONED: (FILE_LIST, {"b.parquet": (5, False)}),
    }
    # dispatch by action (v6 JSON and v8 Avro content parse alike)
    for layout in (1, 2):
        inst = Instant("20240101000000000", "deltacommit", State.COMPLETED)
        got = instant_changes(inst, meta.to_bytes(layout))
        assert got is not None and got.records() == recs


def test_delete_partition_tombstones_partition_list() -> None:
    meta = CommitMetadata(
        partition_to_write_stats={},
        operation_type="DELETE_PARTITION",
        partition_to_replace_file_ids={"p=1": ["f1"]},
    )
    assert commit_changes(meta).records() == {ALL_PARTITIONS: (PARTITION_LIST, {"p=1": (0, True)})}


def test_clean_changes() -> None:
    meta = CleanMetadata(
        partition_metadata={
            "p=1": CleanPartitionMetadata(
                partition_path="p=1", delete_path_patterns=["a.parquet", "b.parquet"]
            ),
            "p=2": CleanPartitionMetadata(
                partition_path="p=2", delete_path_patterns=["c.parquet"], is_partition_deleted=True
            ),
        }
    )
    assert clean_changes(meta).records() == {
        "p=1": (FILE_LIST, {"a.parquet": (0, True), "b.parquet": (0, True)}),
        "p=2": (FILE_LIST, {"c.parquet": (0, True)}),
        ALL_PARTITIONS: (PARTITION_LIST, {"p=2": (0, True)}),
    }
    inst = Instant("20240101000000000", "clean", State.COMPLETED)
    got = instant_changes(inst, meta.to_bytes())
    assert got is not None and got.records() == clean_changes(meta).records()


def _rollback() -> RollbackMetadata:
    return RollbackMetadata(
        commits_rollback=["1"],
        partition_metadata={
            "": RollbackPartitionMetadata(
                partition_path="",
                success_delete_files=["file:/t/a.parquet"],
                rollback_log_files={"file:/t/.f_0.log.1_0-1-2": 200},
            )
        },
    )


def test_rollback_and_restore_changes() -> None:
    expected = {
        NON_PARTITIONED: (FILE_LIST, {"a.parquet": (0, True), ".f_0.log.1_0-1-2": (200, False)})
    }
    assert rollback_changes(_rollback()).records() == expected
    second = RollbackMetadata(
        commits_rollback=["0"],
        partition_metadata={
            "": RollbackPartitionMetadata(
                partition_path="", success_delete_files=["/t/.f_0.log.1_0-1-2"]
            )
        },
    )
    restore = RestoreMetadata(hoodie_restore_metadata={"1": [_rollback()], "0": [second]})
    # the log file got a block, then was deleted by the older instant's rollback
    assert restore_changes(restore).records() == {
        NON_PARTITIONED: (FILE_LIST, {"a.parquet": (0, True), ".f_0.log.1_0-1-2": (0, True)})
    }
    inst = Instant("2", "restore", State.COMPLETED)
    got = instant_changes(inst, restore.to_bytes())
    assert got is not None and got.records() == restore_changes(restore).records()
    assert instant_changes(Instant("2", "savepoint", State.COMPLETED), b"") is None
    assert not FilesChanges()


@pytest.mark.parametrize(
    "name",
    [
        "cow_0x_partitioned",
        "mor_avro_v8_trips_8i3u1d",
        "cow_v9_txns_simple_meta",
        "cow_v9_txns_nonpart_meta",
        "mor_avro_v9_nonpartitioned_rollback",
    ],
)
def test_fixture_values_decode_and_reencode_byte_exact(name: str, tmp_path_factory) -> None:  # type: ignore[no-untyped-def]
    """Every files-partition value Java wrote (base HFiles and HFile log blocks) decodes, and
    encoding the decoded record gives the same bytes (one map block, key blank, nulls)."""
    from hudi_ds.layout.hfile import read_hfile
    from hudi_ds.log.block import BlockType
    from hudi_ds.log.reader import scan_log_bytes
    from tests.fixtures import fixture_table

    root = fixture_table(name, tmp_path_factory)
    files_dir = root / ".hoodie" / "metadata" / "files"
    hfiles = []
    for p in sorted(files_dir.iterdir()):
        if p.name.endswith(".hfile"):
            hf = read_hfile(p.read_bytes(), str(p))
            # base-file records name their file in _hoodie_file_name, except the bootstrap base
            # file of Hudi 1.1 (v9)
            own = None if "v9" in name and p.name.endswith("_00000000000000000.hfile") else p.name
            hfiles.append((hf, hf.file_info["schema"].decode(), own))
        elif ".log." in p.name:
            for b in scan_log_bytes(p.read_bytes(), str(p)).blocks:
                if b.block_type == BlockType.HFILE_DATA:
                    assert b.schema is not None
                    hfiles.append((read_hfile(b.content, str(p)), b.schema, None))
    assert hfiles
    seen_partition_list = False
    for hf, schema, own in hfiles:
        for key, value in zip(hf.keys, hf.values, strict=True):
            rtype, files = decode_files_value(value, schema)
            assert rtype == (PARTITION_LIST if key == ALL_PARTITIONS.encode() else FILE_LIST)
            seen_partition_list |= rtype == PARTITION_LIST
            assert encode_files_value(rtype, files, schema, file_name=own) == value
            for fname, (size, deleted) in files.items():
                assert deleted or size > 0 or rtype == PARTITION_LIST, fname
    assert seen_partition_list
