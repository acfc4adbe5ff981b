"""Parquet files as hudi_ds writes them (hudi_ds.layout.parquet)."""

from __future__ import annotations

import io

import pyarrow as pa
import pyarrow.parquet as pq

from hudi_ds.layout.bloom_filter import BLOOM_FILTER_FOOTER, BloomFilterSpec
from hudi_ds.layout.parquet import (
    MAX_RECORD_KEY_FOOTER,
    MIN_RECORD_KEY_FOOTER,
    BaseFileWriter,
    dictionary_columns_of,
    parquet_block_content,
    write_base_file,
)
from hudi_ds.schema.meta import RECORD_KEY_METADATA_FIELD
from hudi_ds.storage import Storage


def _rows(keys: list[str]) -> pa.Table:
    n = len(keys)
    return pa.table(
        {
            RECORD_KEY_METADATA_FIELD: keys,
            "city": ["paris"] * n,
            "n": list(range(n)),
            "x": [float(i) for i in range(n)],
        }
    )


def test_dictionary_columns_only_repeating_strings_and_integers() -> None:
    t = _rows([f"k{i}" for i in range(100)])
    assert dictionary_columns_of(t) == ["city"]
    t = t.set_column(2, "n", pa.array([1] * 100))
    assert dictionary_columns_of(t) == ["city", "n"]


def test_base_file_footer_holds_the_record_key_range(tmp_path) -> None:
    storage = Storage(str(tmp_path))
    one = _rows(["b", "é", "a"])
    size = write_base_file(storage, "p/one.parquet", one, "snappy", BloomFilterSpec())
    assert size == (tmp_path / "p" / "one.parquet").stat().st_size
    writer = BaseFileWriter(storage, "p/two.parquet", "none", BloomFilterSpec())
    writer.write(one.slice(0, 1))
    writer.write(one.slice(1))
    assert writer.close(one.schema) == (tmp_path / "p" / "two.parquet").stat().st_size
    for name in ("one", "two"):
        md = pq.read_metadata(tmp_path / "p" / f"{name}.parquet").metadata
        assert md[MIN_RECORD_KEY_FOOTER.encode()] == b"a"
        assert md[MAX_RECORD_KEY_FOOTER.encode()] == "é".encode()
        assert pq.read_table(tmp_path / "p" / f"{name}.parquet").equals(one)
    # the same filter, written at once or row group by row group
    blooms = {
        pq.read_metadata(tmp_path / "p" / f"{name}.parquet").metadata[BLOOM_FILTER_FOOTER.encode()]
        for name in ("one", "two")
    }
    assert len(blooms) == 1


def test_base_file_without_meta_fields_has_no_key_footers(tmp_path) -> None:
    storage = Storage(str(tmp_path))
    t = pa.table({"id": ["a", "b"], "n": [1, 2]})
    write_base_file(storage, "one.parquet", t, "snappy", None)
    writer = BaseFileWriter(storage, "two.parquet", "snappy", None)
    writer.write(t)
    writer.close(t.schema)
    for name in ("one", "two"):
        md = pq.read_metadata(tmp_path / f"{name}.parquet").metadata or {}
        assert not {k for k in md if k.startswith((b"hoodie", b"org.apache.hudi"))}
        assert pq.read_table(tmp_path / f"{name}.parquet").equals(t)


def test_empty_base_file_has_no_key_range(tmp_path) -> None:
    storage = Storage(str(tmp_path))
    writer = BaseFileWriter(storage, "empty.parquet", "snappy", BloomFilterSpec())
    writer.close(_rows([]).schema)
    md = pq.read_metadata(tmp_path / "empty.parquet")
    assert md.num_rows == 0
    assert MIN_RECORD_KEY_FOOTER.encode() not in (md.metadata or {})
    assert BLOOM_FILTER_FOOTER.encode() in (md.metadata or {})  # as Java: a filter of no keys


def test_block_content_is_a_parquet_file() -> None:
    t = _rows(["a", "b"])
    content = parquet_block_content(t, "gzip", dictionary_columns_of(t))
    assert pq.read_table(io.BytesIO(content)).equals(t)
