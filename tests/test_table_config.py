"""hoodie.properties: Java properties syntax, checksum, typed accessors, on every fixture."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hudi_ds.errors import TableNotFoundError
from hudi_ds.storage import Storage
from hudi_ds.table_config import (
    COMMIT_TIME_ORDERING,
    EVENT_TIME_ORDERING,
    TableConfig,
    format_properties,
    parse_properties,
    table_checksum,
)
from tests.fixtures import fixture_names, fixture_table


@pytest.mark.parametrize("name", fixture_names())
def test_fixture_properties_parse_and_checksum(name: str, tmp_path_factory) -> None:
    root = fixture_table(name, tmp_path_factory)
    cfg = TableConfig.load(Storage(str(root)))
    assert cfg.validate_checksum()
    assert cfg.table_version in (6, 8, 9)
    assert cfg.timeline_layout_version == (1 if cfg.table_version == 6 else 2)
    schema = cfg.create_schema
    assert schema is None or schema.startswith("{")  # \: escapes were undone
    # merge mode as the fixture README states it
    expected = COMMIT_TIME_ORDERING if "v6" in name or "0x" in name else EVENT_TIME_ORDERING
    if name in ("cow_v8_empty",):
        expected = COMMIT_TIME_ORDERING
    assert cfg.merge_mode == expected


def test_checksum_known_value() -> None:
    # hoodie.table.checksum of fixture cow_v9_txns_simple_nometa (database 'default')
    assert table_checksum("v9_txns_cow_simple_nometa", "default") == 2616127535


@given(
    st.dictionaries(
        st.text(min_size=1).filter(lambda k: k.strip() == k and "\n" not in k),
        st.text(),
        max_size=8,
    )
)
def test_properties_round_trip(props: dict[str, str]) -> None:
    assert parse_properties(format_properties(props)) == props


def test_java_syntax_variants() -> None:
    text = "# c\n! c2\na=1\nb : 2\nc 3\nlong = x\\\n   y\nesc=a\\:b\\=c\\\\d\\u00e9\n"
    assert parse_properties(text) == {
        "a": "1",
        "b": "2",
        "c": "3",
        "long": "xy",
        "esc": "a:b=c\\dé",
    }


def test_save_and_load(tmp_path: Path) -> None:
    st_ = Storage(str(tmp_path))
    cfg = TableConfig({"hoodie.table.name": "t", "hoodie.table.type": "MERGE_ON_READ"})
    cfg.save(st_)
    back = TableConfig.load(st_)
    assert back.is_mor and back.validate_checksum()
    assert back.props["hoodie.table.checksum"] == str(table_checksum("t"))


def test_missing_table(tmp_path: Path) -> None:
    with pytest.raises(TableNotFoundError):
        TableConfig.load(Storage(str(tmp_path)))
