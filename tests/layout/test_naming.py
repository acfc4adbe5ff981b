"""File name grammar, on every data file of every fixture."""

from __future__ import annotations

import pytest

from hudi_ds.layout.naming import (
    base_file_name,
    bucket_file_id,
    bucket_id_of,
    file_name_of,
    file_path,
    log_file_name,
    parse_base_file_name,
    parse_log_file_name,
    partition_of,
    partition_path_of,
    partition_values_of,
    relative_path,
    write_token,
)
from hudi_ds.storage import Storage
from tests.fixtures import fixture_names, fixture_table


@pytest.mark.parametrize("name", fixture_names())
def test_fixture_file_names_round_trip(name: str, tmp_path_factory) -> None:
    root = fixture_table(name, tmp_path_factory)
    for p in root.rglob("*"):
        if ".hoodie" in p.parts or not p.is_file():
            continue
        b = parse_base_file_name(p.name)
        lg = parse_log_file_name(p.name)
        if b is not None:
            assert b.name == p.name
            assert "_" not in b.file_id
        elif lg is not None:
            assert lg.name == p.name and lg.version >= 1
        else:
            assert p.name.startswith((".hoodie_partition_metadata", "._", ".DS_Store"))


def test_format_and_parse() -> None:
    tok = write_token(2, 986, 2794)
    assert tok == "2-986-2794"
    fid = "00000003-afb1-424d-b18a-a8b6423a6780-0"
    name = base_file_name(fid, tok, "20250101000000000")
    assert name == f"{fid}_2-986-2794_20250101000000000.parquet"
    b = parse_base_file_name(name)
    assert b is not None and b.file_id == fid and b.instant_time == "20250101000000000"
    lname = log_file_name(fid, "20250101000000000", 3, "0-1-2")
    assert lname == f".{fid}_20250101000000000.log.3_0-1-2"
    lg = parse_log_file_name(lname)
    assert lg is not None and (lg.file_id, lg.version, lg.write_token) == (fid, 3, "0-1-2")
    with pytest.raises(ValueError):
        base_file_name("bad_id", tok, "1")
    with pytest.raises(ValueError):
        log_file_name(fid, "1", 1, "x")
    assert parse_base_file_name("hoodie.properties") is None
    assert parse_log_file_name("x.parquet") is None


@pytest.mark.parametrize(
    ("name", "want"),
    [
        (".f-0_001.log.2_0-1-2", ("f-0", "001", 2, "0-1-2", "log", False)),
        (".f-0_001.log.1", ("f-0", "001", 1, None, "log", False)),
        (".f-0_001.log.1_0-1-2.cdc", ("f-0", "001", 1, "0-1-2", "log", True)),
        (".f-0_001.archive.4_0-1-2", ("f-0", "001", 4, "0-1-2", "archive", False)),
        # a file id with "_" (no Hudi writer makes one): the last "_" before the instant splits
        (".a_b-0_001.log.1_0-1-2", ("a_b-0", "001", 1, "0-1-2", "log", False)),
        (".f-0_001.log.1_0-1-2\n", ("f-0", "001", 1, "0-1-2", "log", False)),
        (".f\n0_001.log.1", None),
        (".f-0_001.log.x", None),
        (".f-0_001.log.1_0-1", None),
        (".f-0.log.1", None),
    ],
)
def test_log_file_names_parse_by_the_one_grammar(name: str, want: tuple | None) -> None:
    lg = parse_log_file_name.__wrapped__(name)
    got = (
        None
        if lg is None
        else (lg.file_id, lg.instant_time, lg.version, lg.write_token, lg.extension, lg.cdc)
    )
    assert got == want


def test_partition_paths() -> None:
    assert partition_path_of(["a", "b"], ["1", "x"], True) == "a=1/b=x"
    assert partition_path_of(["a"], ["2024/01"], False) == "2024/01"
    assert partition_values_of("a=1/b=x", ["a", "b"], True) == ["1", "x"]
    assert partition_values_of("2024/01/15", ["ts"], False) == ["2024/01/15"]


def test_bucket_file_ids() -> None:
    fid = bucket_file_id(3, "d206069c-afb1-424d-b18a-a8b6423a6780")
    assert fid == "00000003-afb1-424d-b18a-a8b6423a6780-0"
    assert bucket_id_of(fid) == 3
    assert bucket_id_of(bucket_file_id(99_999_999, "x" * 36)) == 99_999_999
    for not_bucket in (
        "d206069c-22c8-4532-b9ea-3cf4282342c4-0",
        "0000001",
        "",
        "０００００００1-x",
    ):
        assert bucket_id_of(not_bucket) is None


def test_data_file_paths(tmp_path) -> None:
    name = "f-0_0-1-1_20250101000000000.parquet"
    assert file_path("a=1/b=x", name) == f"a=1/b=x/{name}"
    assert file_path("", name) == name
    assert partition_of(f"a=1/b=x/{name}") == "a=1/b=x"
    assert partition_of(name) == ""
    assert file_name_of(f"a=1/b=x/{name}") == name
    assert file_name_of(name) == name
    storage = Storage(str(tmp_path))
    assert relative_path(storage, f"{storage.uri()}/p/{name}") == f"p/{name}"
    assert relative_path(storage, f"{storage.full_path()}/p/{name}") == f"p/{name}"
    assert relative_path(storage, f"file:{storage.full_path()}/p/{name}") == f"p/{name}"
    assert relative_path(storage, f"/moved/table/p/{name}", "p") == f"p/{name}"
    assert relative_path(storage, f"s3://other/table/{name}", "") == name
    assert relative_path(storage, f"/p/{name}".lstrip("/")) == f"p/{name}"
