"""Bad input is refused before anything is written, with an error naming what is wrong.

Every case runs against an existing table; afterwards every file of the table (data and
timeline) is byte-for-byte what it was.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

import hudi_ds
from hudi_ds.errors import (
    ConfigError,
    HudiError,
    SchemaError,
    TableExistsError,
    TableNotFoundError,
    UnsupportedError,
)

OPTS = {
    "hoodie.table.name": "bad",
    "hoodie.datasource.write.recordkey.field": "id",
    "hoodie.datasource.write.partitionpath.field": "city",
    "hoodie.datasource.write.precombine.field": "ts",
    "hoodie.bucket.index.num.buckets": "4",
}


def good(**over: Any) -> pa.Table:
    cols: dict[str, Any] = {"id": ["a", "b"], "ts": [1, 2], "city": ["x", "y"], "fare": [1.0, 2.0]}
    cols.update(over)
    return pa.table({k: v for k, v in cols.items() if v is not None})


CASES = [
    ("null key", good(id=["a", None]), {}, SchemaError, "'id'"),
    ("empty key", good(id=["a", ""]), {}, SchemaError, "'id'"),
    ("key with , and :", good(id=["a", "x,y:z"]), {}, SchemaError, "x,y:z"),
    ("missing key column", good(id=None), {}, SchemaError, "'id'"),
    ("missing partition column", good(city=None), {}, SchemaError, "'city'"),
    ("missing ordering column", good(ts=None), {}, SchemaError, "'ts'"),
    (
        "unorderable ordering column",
        good(ts=pa.array([[1], [2]])),
        {},
        SchemaError,
        "'ts'",
    ),
    ("unsafe type change", good(fare=["cheap", "dear"]), {}, SchemaError, "'fare'"),
    ("missing table column", good(fare=None), {}, SchemaError, "fare"),
    ("partition value ..", good(city=["..", "y"]), {}, SchemaError, "'..'"),
    ("partition value with /", good(city=["a/b", "y"]), {}, SchemaError, "a/b"),
    ("absolute partition path", good(city=["/etc", "y"]), {}, SchemaError, "/etc"),
    ("hidden partition", good(city=[".hoodie", "y"]), {}, SchemaError, ".hoodie"),
    ("control char in partition", good(city=["a\nb", "y"]), {}, SchemaError, "city"),
    (
        "unknown table type",
        good(),
        {"hoodie.datasource.write.table.type": "MERGE_ON_WRITE"},
        ConfigError,
        "hoodie.datasource.write.table.type",
    ),
    (
        "unknown operation",
        good(),
        {"hoodie.datasource.write.operation": "merge"},
        ConfigError,
        "hoodie.datasource.write.operation",
    ),
    (
        "unknown merge mode",
        good(),
        {"hoodie.write.record.merge.mode": "LATEST"},
        ConfigError,
        "hoodie.write.record.merge.mode",
    ),
    ("unknown index", good(), {"hoodie.index.type": "BLOOM"}, ConfigError, "hoodie.index.type"),
    (
        "zero buckets",
        good(),
        {"hoodie.bucket.index.num.buckets": "0"},
        ConfigError,
        "hoodie.bucket.index.num.buckets",
    ),
    (
        "negative buckets",
        good(),
        {"hoodie.bucket.index.num.buckets": "-3"},
        ConfigError,
        "hoodie.bucket.index.num.buckets",
    ),
    (
        "bucket count differs from the table's",
        good(),
        {"hoodie.bucket.index.num.buckets": "8"},
        ConfigError,
        "hoodie.bucket.index.num.buckets",
    ),
    (
        "misspelt option",
        good(),
        {"hoodie.datasource.write.precombine.feild": "ts"},
        ConfigError,
        "precombine.field",
    ),
    (
        "hash field outside the key",
        good(),
        {"hoodie.bucket.index.hash.field": "city"},
        ConfigError,
        "hoodie.bucket.index.hash.field",
    ),
]


def snapshot(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


@pytest.mark.parametrize(
    "data, options, error, match", [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_bad_input_matrix(data, options, error, match, tmp_path: Path) -> None:
    root = tmp_path / "t"
    hudi_ds.write(str(root), good(), OPTS)
    before = snapshot(root)
    with pytest.raises(error, match=match) as info:
        hudi_ds.write(str(root), data, {**OPTS, **options})
    assert isinstance(info.value, HudiError)
    assert snapshot(root) == before


def test_path_that_is_not_a_table(tmp_path: Path) -> None:
    (tmp_path / "data.csv").write_text("a,b\n1,2\n")
    with pytest.raises(TableExistsError, match="data.csv"):
        hudi_ds.write(str(tmp_path), good(), OPTS)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data.csv"]
    with pytest.raises(TableNotFoundError, match="hoodie.properties"):
        hudi_ds.read(str(tmp_path))
    f = tmp_path / "file"
    f.write_text("x")
    with pytest.raises(TableExistsError, match="file"):
        hudi_ds.write(str(f), good(), OPTS)


def test_unsupported_table_version(tmp_path: Path) -> None:
    root = tmp_path / "t"
    hudi_ds.write(str(root), good(), OPTS)
    props = root / ".hoodie" / "hoodie.properties"
    props.write_text(props.read_text().replace("hoodie.table.version=6", "hoodie.table.version=5"))
    with pytest.raises(UnsupportedError, match="version 5"):
        hudi_ds.read(str(root))
    with pytest.raises(ConfigError, match="hoodie.table.version"):
        hudi_ds.write(str(root), good(), OPTS)
