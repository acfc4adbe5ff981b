"""Parquet files as hudi_ds writes them: base files and the content of Parquet log blocks.

Both use the same column encoding choice (:func:`dictionary_columns_of`). A base file also carries
Hudi's bloom filter of its record keys and their range in its footer (Java
``HoodieBloomFilterWriteSupport``: ``org.apache.hudi.bloomfilter``,
``hoodie_bloom_filter_type_code``, ``hoodie_min_record_key`` / ``hoodie_max_record_key``; see
:mod:`hudi_ds.layout.bloom_filter`) and nested types in Parquet's compliant
list layout, as Spark + Hudi write them; a log block's Parquet content has page checksums
(parquet-mr's default), since the block framing has no checksum of its own.
"""

from __future__ import annotations

import contextlib

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from hudi_ds.layout.bloom_filter import (
    BLOOM_FILTER_FOOTER,
    BLOOM_FILTER_TYPE_CODE_FOOTER,
    BloomFilter,
    BloomFilterSpec,
)
from hudi_ds.schema.meta import IS_DELETED_FIELD, RECORD_KEY_METADATA_FIELD
from hudi_ds.storage import Storage
from hudi_ds.storage_types import OutputStream

#: Footer keys of a base file's smallest and greatest record key
#: (``HoodieBloomFilterWriteSupport.HOODIE_MIN_RECORD_KEY_FOOTER`` / ``..._MAX_...``).
MIN_RECORD_KEY_FOOTER = "hoodie_min_record_key"
MAX_RECORD_KEY_FOOTER = "hoodie_max_record_key"

#: Rows sampled to tell whether a column repeats.
_SAMPLE_ROWS = 4096


def _low_cardinality(col: pa.ChunkedArray | pa.Array) -> bool:
    n = len(col)
    if n == 0:
        return True
    sample = col.slice(0, min(n, _SAMPLE_ROWS))
    limit = len(sample) // 4
    # a column of mostly distinct values shows more than ``limit`` of them in the sample's
    # first ``limit + 64`` rows already: those counted, not the whole sample (same answer)
    head = limit + 64
    if head < len(sample) and pc.count_distinct(sample.slice(0, head)).as_py() > limit:
        return False
    return pc.count_distinct(sample).as_py() <= limit


def dictionary_columns_of(table: pa.Table) -> list[str]:
    """The columns of ``table`` to dictionary-encode in a Parquet file hudi_ds writes.

    Dictionary encoding only for string/binary/integer columns that repeat (a sampled distinct
    count), never for floating point: dictionary-encoding unique values costs several times the
    plain encoding. Column statistics are kept either way (readers prune with them).
    """
    out = []
    for f, col in zip(table.schema, table.columns, strict=True):
        t = f.type
        if (
            pa.types.is_string(t)
            or pa.types.is_large_string(t)
            or pa.types.is_binary(t)
            or pa.types.is_integer(t)
        ) and _low_cardinality(col):
            out.append(f.name)
    return out


def parquet_block_content(
    table: pa.Table,
    compression: str,
    dictionary_columns: list[str],
    metadata_collector: list[pq.FileMetaData] | None = None,
) -> bytes:
    """The Parquet file held by a ``PARQUET_DATA`` log block, with page checksums.

    Args:
        table: the rows, schema metadata included (the ``parquet.avro.schema`` footer).
        compression: Parquet codec (``snappy``, ``gzip``, ``zstd``, ``none``...).
        dictionary_columns: columns to dictionary-encode (see :func:`dictionary_columns_of`).
        metadata_collector: receives the file's footer as written (its column statistics).
    """
    sink = pa.BufferOutputStream()
    pq.write_table(
        table,
        sink,
        compression=compression,
        use_dictionary=dictionary_columns,
        write_page_checksum=True,
        metadata_collector=metadata_collector,
    )
    return sink.getvalue().to_pybytes()


def no_true_flag(pf: pq.ParquetFile) -> bool:
    """Whether the footer's statistics show that no row of ``pf`` has ``_hoodie_is_deleted``
    true (False when a row group has no statistics for it)."""
    md = pf.metadata
    try:
        j = md.schema.names.index(IS_DELETED_FIELD)
    except ValueError:
        return False
    for i in range(md.num_row_groups):
        col = md.row_group(i).column(j)
        if col.path_in_schema != IS_DELETED_FIELD:  # a nested schema: names are not leaves
            return False
        st = col.statistics
        if st is None:
            return False
        if st.has_null_count and st.num_values == 0:  # num_values: the non-null values
            continue
        if not st.has_min_max or st.max is not False:
            return False
    return True


def _base_file_compression(codec: str) -> str | None:
    return None if codec in ("none", "uncompressed") else codec


#: The footer entries a base file's writer computes from its rows.
_KEY_FOOTERS = frozenset(
    k.encode()
    for k in (
        BLOOM_FILTER_FOOTER,
        BLOOM_FILTER_TYPE_CODE_FOOTER,
        MIN_RECORD_KEY_FOOTER,
        MAX_RECORD_KEY_FOOTER,
    )
)


def file_metadata(pf: pq.ParquetFile, arrow: pa.Schema | None = None) -> dict[bytes, bytes] | None:
    """A Parquet file's schema metadata with its key footers (bloom filter, key range).

    A file that stores an ``ARROW:schema`` (pyarrow's, so hudi_ds's own) reads with that
    schema's metadata only: its other footer entries, where the key footers are, are not in
    ``schema_arrow.metadata``; a file without one (parquet-mr's) has them all there.
    ``arrow``: ``pf.schema_arrow`` when the caller has it (pyarrow builds it anew on every
    access).
    """
    meta = dict((arrow if arrow is not None else pf.schema_arrow).metadata or {})
    footer = pf.metadata.metadata or {}
    meta.update({k: v for k, v in footer.items() if k in _KEY_FOOTERS})
    return meta or None


def _without_key_footers(table: pa.Table) -> pa.Table:
    """``table`` without the key footers of the file its rows were read from (stale for the
    new file, and carried into ``ARROW:schema`` as schema metadata)."""
    meta = table.schema.metadata
    if not meta or not _KEY_FOOTERS.intersection(meta):
        return table
    return table.replace_schema_metadata({k: v for k, v in meta.items() if k not in _KEY_FOOTERS})


class KeyFooters:
    """The key footers of a base file being written: its bloom filter of every record key
    and the min/max record key (no range in a file of no rows), in the order of
    ``pc.min_max`` (UTF-8 bytes, i.e. code points).

    Args:
        bloom: the filter's spec (None: a table without meta fields, whose files have no key
            footers, as Java's).
        bloom_filter: a filter already holding keys (the caller's), added to from here.
    """

    def __init__(self, bloom: BloomFilterSpec | None, bloom_filter: BloomFilter | None = None):
        self._bloom: BloomFilter | None = None
        if bloom is not None:
            self._bloom = bloom_filter if bloom_filter is not None else bloom.new_filter()
        self._min: str | None = None
        self._max: str | None = None

    def add(self, table: pa.Table, bloom: bool = True) -> None:
        """Take the record keys of ``table``'s rows (``bloom`` False: they are in the filter
        already, only their range is taken)."""
        if self._bloom is None or table.num_rows == 0:
            return
        keys = table.column(RECORD_KEY_METADATA_FIELD)
        if bloom:
            self._bloom.add(keys)
        mm = pc.min_max(keys)
        lo, hi = mm["min"].as_py(), mm["max"].as_py()
        if lo is None:
            return
        self._min = lo if self._min is None or lo < self._min else self._min
        self._max = hi if self._max is None or hi > self._max else self._max

    def footer(self) -> dict[str, str]:
        """The footer entries (none without a bloom spec)."""
        if self._bloom is None:
            return {}
        out = self._bloom.footer()
        if self._min is not None:
            out[MIN_RECORD_KEY_FOOTER] = str(self._min)
            out[MAX_RECORD_KEY_FOOTER] = str(self._max)
        return out


def write_base_file(
    storage: Storage,
    path: str,
    table: pa.Table,
    codec: str,
    bloom: BloomFilterSpec | None,
    bloom_filter: BloomFilter | None = None,
    footer: list[pq.FileMetaData] | None = None,
) -> int:
    """Write ``table`` as the Parquet base file ``path`` at once; returns its size.

    With a ``bloom`` spec (None: a table without meta fields, whose files have no key footers,
    as Java's), the footer carries the bloom filter of every record key and the min/max record
    key (:class:`KeyFooters`). ``bloom_filter``: that filter already built by the caller
    (holding every key of ``table``, added in row order). ``footer``: receives the file's
    footer as written (its column statistics without reading the file back).
    """
    table = _without_key_footers(table)
    keys = KeyFooters(bloom, bloom_filter)
    keys.add(table, bloom=bloom_filter is None)
    # an Arrow buffer stream: a Python file object costs a call per page (~8% of the write)
    buf = pa.BufferOutputStream()
    with pq.ParquetWriter(
        buf,
        table.schema,
        compression=_base_file_compression(codec),
        use_compliant_nested_type=True,
        use_dictionary=dictionary_columns_of(table),
        metadata_collector=footer,
    ) as writer:
        writer.write_table(table)
        # footer entries only: schema metadata would also be copied into ARROW:schema
        writer.add_key_value_metadata(keys.footer())
    data = buf.getvalue().to_pybytes()
    storage.write_bytes(path, data)
    return len(data)


#: Bytes a streamed base file gathers before it writes them to storage: Parquet's writer writes
#: page by page, and a Python call and a system call per page cost more than the copy.
_SINK_BUFFER = 1 << 20


class _BufferedSink:
    """A write-only file over an :class:`~hudi_ds.storage_types.OutputStream` that passes the pages
    Parquet's writer writes on in writes of :data:`_SINK_BUFFER` bytes or more."""

    def __init__(self, out: OutputStream) -> None:
        self._out = out
        self._parts: list[bytes] = []
        self._held = 0
        self._pos = 0
        self.closed = False

    def write(self, data: bytes | pa.Buffer) -> int:
        chunk = bytes(data)
        self._parts.append(chunk)
        self._held += len(chunk)
        self._pos += len(chunk)
        if self._held >= _SINK_BUFFER:
            self.flush()
        return len(chunk)

    def tell(self) -> int:
        return self._pos

    def flush(self) -> None:
        if self._parts:
            self._out.write(b"".join(self._parts))
            self._parts, self._held = [], 0

    def close(self) -> None:
        """Write what is held; the stream under it stays open (its owner closes it)."""
        if not self.closed:
            self.flush()
            self.closed = True


class BaseFileWriter:
    """Writes a Parquet base file row group by row group, streaming to storage.

    The encoding choice is made from the first row group. With a ``bloom`` spec (None: a table
    without meta fields), every row's record key goes into the bloom filter as it is written,
    and :meth:`close` adds the filter and the min/max record key footer of every row written
    (the same key order as :func:`write_base_file`'s ``pc.min_max``: UTF-8 bytes, i.e. code
    points).
    """

    def __init__(
        self,
        storage: Storage,
        path: str,
        codec: str,
        bloom: BloomFilterSpec | None,
        bloom_filter: BloomFilter | None = None,
    ) -> None:
        self.storage = storage
        self.path = path
        self.codec = codec
        self._keys = KeyFooters(bloom, bloom_filter)
        self._out: OutputStream | None = None
        self._sink: _BufferedSink | None = None
        self._writer: pq.ParquetWriter | None = None
        # the footer as written, once closed (its column statistics: no read back)
        self._footer: list[pq.FileMetaData] = []

    @property
    def metadata(self) -> pq.FileMetaData | None:
        """The written file's footer (None until :meth:`close`)."""
        return self._footer[0] if self._footer else None

    def _open(self, table: pa.Table) -> pq.ParquetWriter:
        table = _without_key_footers(table)
        self._out = self.storage.open_output_stream(self.path)
        self._sink = _BufferedSink(self._out)
        self._writer = pq.ParquetWriter(
            self._sink,
            table.schema,
            compression=_base_file_compression(self.codec),
            use_compliant_nested_type=True,
            use_dictionary=dictionary_columns_of(table),
            metadata_collector=self._footer,
        )
        return self._writer

    def write(self, table: pa.Table, keys_added: bool = False) -> None:
        """Append ``table`` (the file's schema) as the next row group(s) (``keys_added``: its
        record keys are in the bloom filter the writer was given, or will be by its close)."""
        if table.num_rows == 0:
            return
        writer = self._writer or self._open(table)
        writer.write_table(table)
        self._keys.add(table, bloom=not keys_added)

    def close(self, schema: pa.Schema) -> int:
        """Finish the file (an empty one of ``schema`` if nothing was written); returns its size."""
        writer = self._writer or self._open(schema.empty_table())
        footer = self._keys.footer()
        if footer:
            writer.add_key_value_metadata(footer)
        writer.close()
        assert self._out is not None and self._sink is not None
        self._sink.close()
        size = self._out.tell()
        self._out.close()
        return int(size)

    def abort(self) -> None:
        """Close what is open after a failure (the partial file is left to the caller)."""
        if self._writer is not None:
            with contextlib.suppress(Exception):  # already failing: keep the first error
                self._writer.close()
        if self._out is not None and not self._out.closed:
            self._out.close()
