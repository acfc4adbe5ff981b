"""Lance base files (``hoodie.table.base.file.format=LANCE``, Hudi 1.2), through the optional
``pylance`` package (``hudi_ds[lance]``).

As Java writes them (``HoodieBaseLanceWriter`` over ``org.lance.file.LanceFileWriter``): one
Lance *file* (not a dataset) ``<fileId>_<writeToken>_<instant>.lance`` in Lance file format 2.0
(major 0, minor 3 in the footer, what Hudi 1.2's writer left in every fixture table), the
table's columns with the meta columns first, every field nullable, and Hudi's key footers --
the bloom filter of the record keys and the min/max record key, the entries Parquet keeps in
its footer (``HoodieBloomFilterWriteSupport.finalizeMetadata``) -- as the Arrow schema's
metadata (``LanceFileWriter.addSchemaMetadata``: Lance has no other file-level key/value
store), and nothing else there.

``pylance`` writes to a path or URI of its own object store, not to a
:class:`~hudi_ds.storage.Storage` stream: a file is written to a local temporary file, then
copied to storage in one stream, so that every store (and every fault-injecting test store)
sees one ordinary write. Reads open the file through its URI, as Lance readers do.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import pyarrow as pa

from hudi_ds.errors import UnsupportedError, import_optional
from hudi_ds.layout.bloom_filter import BloomFilter, BloomFilterSpec
from hudi_ds.layout.parquet import KeyFooters
from hudi_ds.storage import Storage

#: the Lance file format version Hudi 1.2's writer produces (``LanceFileWriter.open`` default
#: of the lance-java it ships with); pylance's own default is newer
LANCE_FILE_VERSION = "2.0"
#: bytes copied from the local temporary file to storage per write
_COPY_CHUNK = 8 << 20


#: what ``pip install`` takes for the optional package (hudi_ds's own ``[lance]`` extra needs a
#: path to hudi_ds, which is on no package index)
PYLANCE_REQUIREMENT = '"pylance>=0.20"'


def lance_file_module(what: str = "Lance base files") -> ModuleType:
    """``lance.file`` of the optional pylance package.

    Raises:
        MissingDependencyError: pylance is not installed (names the pip requirement).
    """
    return import_optional("lance.file", what, package="pylance", install=PYLANCE_REQUIREMENT)


def lance_available() -> bool:
    """Whether pylance can be imported (Lance tables are read and written)."""
    try:
        lance_file_module()
    except UnsupportedError:
        return False
    return True


def _plain_schema(schema: pa.Schema) -> pa.Schema:
    """``schema`` as a Lance base file stores it: every field nullable (Java converts the
    Avro schema, whose fields are unions with null), no schema metadata (the key footers are
    the only entries Java adds)."""
    return pa.schema([f.with_nullable(True).remove_metadata() for f in schema])


class LanceBaseFileWriter:
    """Writes a Lance base file batch by batch (the interface of
    :class:`~hudi_ds.layout.parquet.BaseFileWriter`).

    With a ``bloom`` spec (None: a table without meta fields, whose files carry no key
    footers, as Java's) every record key goes into the bloom filter as it is written, and
    :meth:`close` adds the key footers.
    """

    def __init__(
        self,
        storage: Storage,
        path: str,
        bloom: BloomFilterSpec | None,
        bloom_filter: BloomFilter | None = None,
    ) -> None:
        self._lance = lance_file_module()
        self.storage = storage
        self.path = path
        self._keys = KeyFooters(bloom, bloom_filter)
        self._dir: str | None = None
        self._writer: Any = None
        self._schema: pa.Schema | None = None

    @property
    def metadata(self) -> None:
        """No Parquet footer (column stats of Lance files: none, as Java gives them)."""
        return None

    def _open(self, schema: pa.Schema) -> Any:
        self._dir = tempfile.mkdtemp(prefix="hudi-lance-")
        self._schema = _plain_schema(schema)
        self._writer = self._lance.LanceFileWriter(
            os.path.join(self._dir, "base.lance"), self._schema, version=LANCE_FILE_VERSION
        )
        return self._writer

    def write(self, table: pa.Table, keys_added: bool = False) -> None:
        """Append ``table``'s rows (``keys_added``: its record keys are already in the bloom
        filter the writer was given)."""
        if table.num_rows == 0:
            return
        writer = self._writer or self._open(table.schema)
        assert self._schema is not None
        rows = table.replace_schema_metadata(None).cast(self._schema)
        for batch in rows.to_batches():
            writer.write_batch(batch)
        self._keys.add(table, bloom=not keys_added)

    def close(self, schema: pa.Schema) -> int:
        """Finish the file (an empty one of ``schema`` if nothing was written), copy it to
        storage; returns its size."""
        try:
            writer = self._writer or self._open(schema)
            for k, v in self._keys.footer().items():
                writer.add_schema_metadata(k, v)
            writer.close()
            self._writer = None
            assert self._dir is not None
            local = os.path.join(self._dir, "base.lance")
            size = os.path.getsize(local)
            with open(local, "rb") as src, self.storage.open_output_stream(self.path) as out:
                while chunk := src.read(_COPY_CHUNK):
                    out.write(chunk)
            return size
        finally:
            self._remove_local()

    def abort(self) -> None:
        """Drop what was written (nothing reached storage before :meth:`close`)."""
        if self._writer is not None:
            with contextlib.suppress(Exception):  # already failing: keep the first error
                self._writer.close()
            self._writer = None
        self._remove_local()

    def _remove_local(self) -> None:
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None


def write_lance_base_file(
    storage: Storage,
    path: str,
    table: pa.Table,
    bloom: BloomFilterSpec | None,
    bloom_filter: BloomFilter | None = None,
) -> int:
    """Write ``table`` as the Lance base file ``path`` at once; returns its size.

    ``bloom_filter``: the filter already built by the caller, holding every key of ``table``.
    """
    writer = LanceBaseFileWriter(storage, path, bloom, bloom_filter)
    try:
        writer.write(table, keys_added=bloom_filter is not None)
        return writer.close(table.schema)
    except BaseException:
        writer.abort()
        raise


class LanceBaseFile:
    """An opened Lance base file: its footer, row count and columns (the interface of
    :class:`~hudi_ds.layout.base_file.ParquetBaseFile`)."""

    def __init__(self, storage: Storage, path: str) -> None:
        self._lance = lance_file_module()
        self._uri = storage.uri(path)
        try:
            self._reader = self._lance.LanceFileReader(self._uri)
        except ValueError as e:  # pylance reports a missing object as ValueError("Not found")
            if "not found" in str(e).lower():
                raise FileNotFoundError(self._uri) from e
            raise
        md = self._reader.metadata()
        self.schema: pa.Schema = md.schema
        self.names: list[str] = list(md.schema.names)
        self.num_rows: int = int(md.num_rows)
        #: bytes of encoded column data (the file's pages)
        self.data_bytes: int = int(md.num_data_bytes)

    def footer(self) -> dict[bytes, bytes]:
        """The file's key/value entries (Lance: the schema metadata)."""
        return dict(self.schema.metadata or {})

    def read(self, columns: list[str] | None = None) -> pa.Table:
        """The rows of ``columns`` (None: all), the footer as the schema metadata."""
        if columns is None:
            return self._reader.read_all().to_table()  # type: ignore[no-any-return]
        if not columns:  # no column, the file's row count (as Parquet's read gives it)
            return pa.table({"_": pa.nulls(self.num_rows)}).drop_columns(["_"])
        reader = self._lance.LanceFileReader(self._uri, columns=columns)
        return reader.read_all().to_table()  # type: ignore[no-any-return]

    def batches(self, columns: list[str], batch_rows: int) -> Iterator[pa.RecordBatch]:
        """The rows of ``columns``, ``batch_rows`` at a time (a merge that does not hold the
        whole file)."""
        reader = self._lance.LanceFileReader(self._uri, columns=columns)
        yield from reader.read_all(batch_size=max(batch_rows, 1)).to_batches()
