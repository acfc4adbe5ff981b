"""The options of a write resolved against the table (hudi_ds/write/options.py)."""

from __future__ import annotations

from hudi_ds.config import Options
from hudi_ds.layout.bloom import BloomFilterSpec
from hudi_ds.table_config import TableConfig
from hudi_ds.write.options import resolve_options

TABLE_PROPS = {
    "hoodie.table.name": "t",
    "hoodie.table.type": "COPY_ON_WRITE",
    "hoodie.table.version": "6",
    "hoodie.table.recordkey.fields": "id",
}
BLOOM_OPTIONS = {
    "hoodie.bloom.index.filter.type": "SIMPLE",
    "hoodie.index.bloom.num_entries": "1000",
    "hoodie.index.bloom.fpp": "0.001",
}


def test_bloom_filter_of_new_base_files() -> None:
    o = Options.of(BLOOM_OPTIONS)
    want = BloomFilterSpec("SIMPLE", 1000, 0.001, 100000)
    assert resolve_options(o, None).bloom == want  # a new table has meta fields
    assert resolve_options(o, TableConfig(dict(TABLE_PROPS))).bloom == want
    assert resolve_options(Options.of({}), None).bloom == BloomFilterSpec()


def test_no_bloom_filter_without_meta_fields() -> None:
    # as Java: the files of a table with hoodie.populate.meta.fields=false have no key footers
    cfg = TableConfig({**TABLE_PROPS, "hoodie.populate.meta.fields": "false"})
    assert resolve_options(Options.of(BLOOM_OPTIONS), cfg).bloom is None
