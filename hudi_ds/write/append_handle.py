"""The append handle (MOR, Java ``HoodieAppendHandle``): the rows of one file group appended to a
new log file of the task attempt.

:class:`AppendHandle` buffers Arrow slices of prepared rows and delete keys, and on
:meth:`~AppendHandle.flush` pre-combines them and appends a data block (Parquet or Avro) and a
delete block to its own new log file ``.<fileId>_<baseInstant>.log.<version>_<token>``
(table version 6: the slice's base instant and the next version; 8 and 9: the writing
deltacommit's own instant, version 1 -- readers place it by its completion time).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from hudi_ds.faults import crash_point
from hudi_ds.layout.naming import file_name_of, log_file_name
from hudi_ds.log.writer import (
    encode_avro_data_block,
    encode_delete_block,
    encode_parquet_data_block,
)
from hudi_ds.metadata.column_stats import (
    ColumnRange,
    ValueType,
    merge_ranges,
    ranges_of_table,
    ranges_of_written_rows,
)
from hudi_ds.schema.avro import cached_arrow_schema
from hudi_ds.schema.evolution import conform_table
from hudi_ds.schema.meta import (
    PARTITION_PATH_METADATA_FIELD,
    RECORD_KEY_METADATA_FIELD,
    clear_meta_values,
)
from hudi_ds.storage_types import OutputStream
from hudi_ds.timeline.metadata import NULL_COMMIT, WriteStat
from hudi_ds.write.handles import (
    DELETE_ORDERING,
    BufferedHandle,
    HandleContext,
    empty_deletes,
    partial_avro_schema,
    precombine,
    set_file_name,
)
from hudi_ds.write.write_status import LoggedKeys, WriteStatus

#: the marker kind of a log file (Java ``IOType.APPEND``)
MARKER_KIND = "APPEND"


class AppendHandle(BufferedHandle):
    """Appends the rows of one MOR file group to a new log file of this task attempt.

    ``base_instant`` names the log file and is its write stat's ``prevCommit``: the slice's
    base instant on table version 6, the writing instant on 8 and 9 (as Java 1.x does).

    In a table without meta fields its data blocks carry the meta columns with null values, as
    Java's (``HoodieAppendHandle.populateMetadataFields``), unless :attr:`staging`.
    """

    #: the log file is a staged one, read back by the commit (:mod:`hudi_ds.write.cow`): its
    #: rows keep their meta values, the keys the commit merges by
    staging = False

    def __init__(
        self,
        ctx: HandleContext,
        partition_path: str,
        file_id: str,
        base_instant: str,
        log_version: int,
        base_file_name: str | None,
        is_new: bool,
    ) -> None:
        self.ctx = ctx
        self.partition_path = partition_path
        self.file_id = file_id
        self.base_instant = base_instant
        self.is_new = is_new
        self.base_file_name = base_file_name or ""
        name = log_file_name(file_id, base_instant, log_version, ctx.token)
        self.log_version = log_version
        self.path = f"{partition_path}/{name}" if partition_path else name
        self._data: list[pa.Table] = []
        self._deletes: list[pa.Table] = []
        self.buffered_bytes = 0
        self._out: OutputStream | None = None
        self._created = False
        self._written = 0
        self.num_writes = 0
        self.num_deletes = 0
        self.blocks = 0
        # the column stats of the rows written so far (HandleContext.stats_columns)
        self._ranges: list[ColumnRange] | None = None
        # the keys of the blocks written so far (HandleContext.track_keys)
        tracked = ctx.track_keys and ctx.options.populate_meta_fields and not self.staging
        self._keys: tuple[list[pa.Array], list[pa.Array]] | None = ([], []) if tracked else None

    def flush(self) -> None:
        """Pre-combine the buffer and append it as log blocks."""
        if not self._data and not self._deletes:
            return
        ctx = self.ctx
        data = pa.concat_tables(self._data) if self._data else ctx.schema.empty_table()
        dels = pa.concat_tables(self._deletes) if self._deletes else empty_deletes(ctx)
        self._data, self._deletes, self.buffered_bytes = [], [], 0
        data, dels = precombine(data, dels, ctx.merge_spec, ctx.partial_columns)
        out = self._stream()
        if data.num_rows:
            if ctx.options.populate_meta_fields or self.staging:
                data = set_file_name(data, self.file_id)
            else:
                data = clear_meta_values(data, file_name=False)
            data = ctx.carried(data)
            partial = ctx.partial_columns is not None
            avro_schema = (
                partial_avro_schema(ctx.avro_schema, tuple(data.column_names))
                if partial
                else ctx.avro_schema
            )
            ranged = ctx.stats_columns is not None and not self.staging
            footer: list[pq.FileMetaData] = []
            if ctx.options.block_format == "avro":
                block = encode_avro_data_block(data, ctx.instant, avro_schema, partial=partial)
            else:
                names = set(data.column_names)  # (a new list at every call)
                dict_cols = (
                    [c for c in ctx.dictionary_columns if c in names]
                    if ctx.dictionary_columns is not None
                    else None
                )
                block = encode_parquet_data_block(
                    data,
                    ctx.instant,
                    avro_schema,
                    compression=ctx.options.codec,
                    dictionary_columns=dict_cols,
                    partial=partial,
                    metadata_collector=footer if ranged else None,
                )
            out.write(block)
            crash_point("handle_flush")
            self._written += len(block)
            self.blocks += 1
            self.num_writes += data.num_rows
            if self._keys is not None:
                self._keys[0].extend(data.column(RECORD_KEY_METADATA_FIELD).chunks)
            if ranged and ctx.stats_columns is not None:
                self._add_ranges(data, avro_schema, ctx.stats_columns, footer)
        if dels.num_rows:
            block = encode_delete_block(
                dels.column(RECORD_KEY_METADATA_FIELD).combine_chunks(),
                dels.column(PARTITION_PATH_METADATA_FIELD).combine_chunks(),
                dels.column(DELETE_ORDERING).combine_chunks(),
                ctx.instant,
                ctx.avro_schema,
            )
            out.write(block)
            crash_point("handle_flush")
            self._written += len(block)
            self.blocks += 1
            self.num_deletes += dels.num_rows
            if self._keys is not None:
                self._keys[1].extend(dels.column(RECORD_KEY_METADATA_FIELD).chunks)
        self._release()

    def marker(self) -> tuple[str, str]:
        """The marker of the log file this handle writes: its path and marker kind."""
        return self.path, MARKER_KIND

    def _stream(self) -> OutputStream:
        if self._out is None and not self._created:
            self.ctx.mark([self.marker()])
            self._out = self.ctx.storage.open_output_stream(self.path)
            self._created = True
        elif self._out is None:
            self._out = self.ctx.storage.open_append_stream(self.path)
        return self._out

    def _release(self) -> None:
        """Close a local log file between flushes (the next flush appends to it): a task
        writing into many file groups would otherwise hold a file descriptor for each until
        it ends, past the process's limit (a bulk insert into 100,000 buckets). An object
        store's upload holds no descriptor and cannot be reopened: it stays open."""
        if self._out is not None and self.ctx.storage.is_local:
            self._out.close()
            self._out = None

    def close(self) -> WriteStatus | None:
        """Flush, close the log file and describe it (None if nothing was written)."""
        self.flush()
        if not self._created:
            return None
        if self._out is not None:
            self._out.close()
            self._out = None
        stat = WriteStat(
            file_id=self.file_id,
            path=self.path,
            prev_commit=NULL_COMMIT if self.is_new else self.base_instant,
            num_writes=self.num_writes,
            num_deletes=self.num_deletes,
            num_update_writes=0 if self.is_new else self.num_writes,
            num_inserts=self.num_writes if self.is_new else 0,
            total_write_bytes=self._written,
            partition_path=self.partition_path,
            total_log_records=self.num_writes + self.num_deletes,
            total_log_blocks=self.blocks,
            file_size_in_bytes=self._written,
            log_version=self.log_version,
            log_offset=0,
            base_file=self.base_file_name,
            log_files=[file_name_of(self.path)],
        )
        logged = None
        if self._keys is not None:
            logged = LoggedKeys(*(_joined(k) for k in self._keys))
        return WriteStatus(
            stat, "append", self.ctx.token, column_ranges=self._file_ranges(), logged=logged
        )

    def _add_ranges(
        self,
        data: pa.Table,
        avro_schema: str,
        columns: Sequence[str],
        footer: Sequence[pq.FileMetaData] = (),
    ) -> None:
        """Count the rows of a data block just written into the file's column stats.

        The rows are taken in the types the block stores them in (the Arrow types of its Avro
        schema, as the block encoders conform them), so that the ranges equal those of the
        block's records read back (:func:`hudi_ds.metadata.stats_build.file_ranges`); the
        columns whose statistics the Parquet block's writer computed are taken from its
        ``footer``, the others computed from the rows."""
        name = file_name_of(self.path)
        from_footer = ranges_of_written_rows(footer[0], name, columns) if footer else {}
        rest = [c for c in columns if c not in from_footer]
        computed: dict[str, ColumnRange] = {}
        if rest:
            fields = _stats_fields(avro_schema, tuple(rest))
            have = set(data.column_names)
            present = [f.name for f in fields if f.name in have]
            rows = conform_table(data.select(present), fields)
            computed = {r.column: r for r in ranges_of_table(rows, name, rest)}
        got = [from_footer.get(c) or computed[c] for c in columns]
        if self._ranges is None:
            self._ranges = got
        else:
            self._ranges = [_merged(a, b) for a, b in zip(self._ranges, got, strict=True)]

    def _file_ranges(self) -> tuple[ColumnRange, ...] | None:
        """The file's column stats (None when not computed); a log file of deletes only has
        empty ones, as its records read back give."""
        columns = self.ctx.stats_columns
        if columns is None or self.staging:
            return None
        if self._ranges is not None:
            return tuple(self._ranges)
        name = file_name_of(self.path)
        return tuple(ColumnRange(name, c, None, None, 0, 0, 0, 0, ValueType.NULL) for c in columns)


@functools.lru_cache(maxsize=64)
def _stats_fields(avro_schema: str, columns: tuple[str, ...]) -> pa.Schema:
    """The fields of the indexed ``columns`` in the Arrow types of the block schema."""
    target = cached_arrow_schema(avro_schema)
    return pa.schema([target.field(c) for c in columns if target.get_field_index(c) >= 0])


def _is_nan(v: Any) -> bool:
    return isinstance(v, float) and math.isnan(v)


def _merged(a: ColumnRange, b: ColumnRange) -> ColumnRange:
    """The ranges of two data blocks of one file combined as one ``pc.min_max`` over all their
    rows gives them: NaN counts only when no other value is there."""
    out = merge_ranges(a, b)
    lows = [v for v in (a.min_value, b.min_value) if v is not None and not _is_nan(v)]
    highs = [v for v in (a.max_value, b.max_value) if v is not None and not _is_nan(v)]
    if lows and _is_nan(out.min_value):
        out = replace(out, min_value=min(lows))
    if highs and _is_nan(out.max_value):
        out = replace(out, max_value=max(highs))
    return out


def _joined(chunks: list[pa.Array]) -> pa.Array:
    """``chunks`` of keys as one string array."""
    return (
        pa.concat_arrays([c.cast(pa.string()) for c in chunks])
        if chunks
        else pa.array([], pa.string())
    )
