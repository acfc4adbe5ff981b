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


# -- issue 12: input that used to be accepted and then broke the table ----------------------------


def _rows(path: Path | str) -> list[dict[str, Any]]:
    t = hudi_ds.read(str(path))
    cols = [c for c in t.column_names if c == "_hoodie_commit_time" or not c.startswith("_hoodie")]
    return sorted(t.select(cols).to_pylist(), key=lambda r: r["id"])


def _hudi_rs_rows(path: Path | str) -> list[dict[str, Any]]:
    import hudi

    batches = hudi.HudiTableBuilder.from_base_uri(str(path)).build().read(hudi.HudiReadOptions())
    t = pa.Table.from_batches(batches)
    cols = [c for c in t.column_names if c == "_hoodie_commit_time" or not c.startswith("_hoodie")]
    return sorted(t.select(cols).to_pylist(), key=lambda r: r["id"])


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
@pytest.mark.parametrize(
    "narrow, wide, big, rounded",
    [
        (pa.int64(), pa.float64(), 2**53 + 1, float(2**53)),
        (pa.int32(), pa.float32(), 2**24 + 1, float(2**24)),
    ],
    ids=["int64->double", "int32->float32"],
)
def test_widening_int_to_float_keeps_table_readable(
    table_type: str, narrow: pa.DataType, wide: pa.DataType, big: int, rounded: float, tmp_path
) -> None:
    """Finding 4: int -> float widening rounds old values as Avro/Java do, never breaks reads."""
    root = tmp_path / "t"
    opts = {**OPTS, "hoodie.datasource.write.table.type": table_type}
    first = pa.table(
        {
            "id": ["a", "b"],
            "ts": [1, 1],
            "city": ["x", "x"],
            "fare": [1.0, 2.0],
            "v": pa.array([big, 7], narrow),
        }
    )
    t1 = hudi_ds.write(str(root), first, opts)
    second = pa.table(
        {"id": ["c"], "ts": [1], "city": ["x"], "fare": [3.0], "v": pa.array([1.5], wide)}
    )
    t2 = hudi_ds.write(str(root), second, opts)
    assert hudi_ds.read(str(root)).schema.field("v").type == wide
    # Java's Avro resolution reads the stored int/long under the float/double reader schema as
    # ``(double) value`` (round to nearest): 2**53 + 1 -> 2**53, 2**24 + 1 -> 2**24 (float32)
    expected = [
        {"_hoodie_commit_time": t1, "id": "a", "ts": 1, "city": "x", "fare": 1.0, "v": rounded},
        {"_hoodie_commit_time": t1, "id": "b", "ts": 1, "city": "x", "fare": 2.0, "v": 7.0},
        {"_hoodie_commit_time": t2, "id": "c", "ts": 1, "city": "x", "fare": 3.0, "v": 1.5},
    ]
    assert _rows(root) == expected
    assert _hudi_rs_rows(root) == expected
    # later writes still work: an update of the rounded row and an int input cast to the wide type
    third = pa.table(
        {"id": ["a", "d"], "ts": [2, 1], "city": ["x", "x"], "fare": [9.0, 4.0], "v": [big, 5]},
        schema=pa.schema(
            [("id", pa.string()), ("ts", pa.int64()), ("city", pa.string()), ("fare", pa.float64()),
             ("v", narrow)]
        ),
    )
    t3 = hudi_ds.write(str(root), third, opts)
    expected = [
        {"_hoodie_commit_time": t3, "id": "a", "ts": 2, "city": "x", "fare": 9.0, "v": rounded},
        expected[1],
        expected[2],
        {"_hoodie_commit_time": t3, "id": "d", "ts": 1, "city": "x", "fare": 4.0, "v": 5.0},
    ]
    assert _rows(root) == expected
    assert _hudi_rs_rows(root) == expected
