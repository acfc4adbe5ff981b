"""Base files by the table's format (``hoodie.table.base.file.format``): the one place that
chooses between Parquet (:mod:`hudi_ds.layout.parquet`) and Lance (:mod:`hudi_ds.layout.lance`).

Writers ask for a writer or a whole-file write of the table's :class:`BaseFileFormat`; index
lookups open a base file of either format as an :class:`OpenedBaseFile` (footer, row count,
columns). Both formats carry the same key footers (bloom filter, min/max record key).
"""

from __future__ import annotations

from typing import Protocol

import pyarrow as pa
import pyarrow.parquet as pq

from hudi_ds.errors import UnsupportedError
from hudi_ds.layout.bloom_filter import BloomFilter, BloomFilterSpec
from hudi_ds.layout.lance import LanceBaseFile, LanceBaseFileWriter, write_lance_base_file
from hudi_ds.layout.parquet import BaseFileWriter, write_base_file
from hudi_ds.storage import Storage
from hudi_ds.table_config import BaseFileFormat

#: the base file formats hudi_ds writes
WRITTEN_FORMATS = (BaseFileFormat.PARQUET, BaseFileFormat.LANCE)


class StreamedBaseFileWriter(Protocol):
    """A base file written batch by batch (Parquet row groups, Lance batches)."""

    def write(self, table: pa.Table, keys_added: bool = False) -> None: ...

    def close(self, schema: pa.Schema) -> int: ...

    def abort(self) -> None: ...

    @property
    def metadata(self) -> pq.FileMetaData | None:
        """A Parquet file's footer once closed (None: not Parquet, or not closed)."""
        ...


def _written(fmt: BaseFileFormat) -> BaseFileFormat:
    if fmt not in WRITTEN_FORMATS:
        raise UnsupportedError(f"hudi_ds writes Parquet and Lance base files, not {fmt}")
    return fmt


def new_base_file_writer(
    fmt: BaseFileFormat,
    storage: Storage,
    path: str,
    codec: str,
    bloom: BloomFilterSpec | None,
    bloom_filter: BloomFilter | None = None,
) -> StreamedBaseFileWriter:
    """A streamed writer of base file ``path`` in ``fmt`` (``codec``: Parquet's compression;
    Lance files are written with Lance's own encodings, as Java's writer does).
    ``bloom_filter``: the filter the footer gets, kept by the caller (the writer adds the keys
    of what it writes to it, unless told they are added)."""
    if _written(fmt) is BaseFileFormat.LANCE:
        return LanceBaseFileWriter(storage, path, bloom, bloom_filter)
    return BaseFileWriter(storage, path, codec, bloom, bloom_filter)


def write_whole_base_file(
    fmt: BaseFileFormat,
    storage: Storage,
    path: str,
    table: pa.Table,
    codec: str,
    bloom: BloomFilterSpec | None,
    bloom_filter: BloomFilter | None = None,
    footer: list[pq.FileMetaData] | None = None,
) -> int:
    """Write ``table`` as base file ``path`` in ``fmt`` at once; returns its size (the key
    footers as :func:`hudi_ds.layout.parquet.write_base_file` describes them; ``footer``
    receives a Parquet file's footer as written)."""
    if _written(fmt) is BaseFileFormat.LANCE:
        return write_lance_base_file(storage, path, table, bloom, bloom_filter)
    return write_base_file(storage, path, table, codec, bloom, bloom_filter, footer)


class OpenedBaseFile(Protocol):
    """An opened base file of any format: what index lookups read of it."""

    names: list[str]
    num_rows: int

    def footer(self) -> dict[bytes, bytes]: ...

    def read(self, columns: list[str] | None = None) -> pa.Table: ...


class ParquetBaseFile:
    """An opened Parquet base file (its footer read once)."""

    def __init__(self, f: pa.NativeFile) -> None:
        self._pf = pq.ParquetFile(f)
        self.names: list[str] = list(self._pf.schema_arrow.names)
        self.num_rows: int = self._pf.metadata.num_rows

    def footer(self) -> dict[bytes, bytes]:
        return dict(self._pf.metadata.metadata or {})

    def read(self, columns: list[str] | None = None) -> pa.Table:
        return self._pf.read(columns=columns, use_threads=False)


def open_lance_base_file(storage: Storage, path: str) -> OpenedBaseFile:
    """A Lance base file, opened (raises ``FileNotFoundError`` when it is gone)."""
    return LanceBaseFile(storage, path)
