"""The embedded write API: ``hudi_ds.write`` and the writable ``HudiTable``.

The top layer: a write runs the table services after its commit
(:func:`hudi_ds.services.run_post_commit_services`), passed to the write client explicitly.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pyarrow as pa

from hudi_ds.config import WriteConfig
from hudi_ds.errors import ConfigError, SchemaError
from hudi_ds.index.lookup import Lookup
from hudi_ds.index.state import StateIndex
from hudi_ds.schema import without_meta_fields
from hudi_ds.services import run_post_commit_services
from hudi_ds.storage import Storage
from hudi_ds.table.table import ReadableTable
from hudi_ds.timeline.view import TableState
from hudi_ds.write.client import WriteClient
from hudi_ds.write.operation import (
    DELETE,
    DELETE_PARTITION,
    INSERT,
    INSERT_OVERWRITE,
    INSERT_OVERWRITE_TABLE,
    PARTITIONS_TO_DELETE_KEY,
    UPSERT,
    Replaces,
    WriteOperation,
    partitions_to_delete,
)
from hudi_ds.write.write_status import WriteStatus

log = logging.getLogger("hudi_ds.api")

ArrowLike = Any  # pa.Table | pa.RecordBatch | pa.RecordBatchReader | __arrow_c_stream__ objects


def _as_reader(data: ArrowLike) -> tuple[pa.Schema, Iterator[pa.RecordBatch]]:
    if isinstance(data, pa.Table):
        return data.schema, iter(data.to_batches())
    if isinstance(data, pa.RecordBatch):
        return data.schema, iter([data])
    if isinstance(data, pa.RecordBatchReader):
        return data.schema, iter(data)
    if hasattr(data, "__arrow_c_stream__"):
        reader = pa.RecordBatchReader.from_stream(data)
        return reader.schema, iter(reader)
    if type(data).__module__.startswith("pandas"):
        t = pa.Table.from_pandas(data, preserve_index=False)
        return t.schema, iter(t.to_batches())
    if isinstance(data, (list, tuple)) and all(isinstance(r, dict) for r in data):
        t = pa.Table.from_pylist(list(data))
        return t.schema, iter(t.to_batches())
    raise SchemaError(
        f"cannot write {type(data).__name__}: pass a pyarrow Table, RecordBatch, "
        "RecordBatchReader or an object with __arrow_c_stream__ (pandas, polars)"
    )


def write(
    path: str | Storage, data: ArrowLike, options: Mapping[str, Any] | None = None
) -> str | None:
    """Write ``data`` to the Hudi table at ``path`` (creating it on the first write).

    Every option and the input's schema are checked before anything is written: a refused
    write (ConfigError, SchemaError) leaves no trace, not even the table's ``.hoodie`` folder
    on a first write, so the corrected retry creates the table.

    An input without rows follows Apache Hudi (``hoodie.allow.empty.commit``, default true,
    Java ``HoodieWriteConfig.ALLOW_EMPTY_COMMIT``; Hudi's ``TestEmptyCommit`` writes an empty
    DataFrame and finds a new commit only when it is true): it commits an empty instant (and
    creates the table on a first write). With ``hoodie.allow.empty.commit=false`` nothing is
    written at all and None is returned. Operations whose empty input means something
    (``insert_overwrite_table`` empties the table, ``delete_partition`` takes no rows) always
    commit.

    Args:
        path: table base path or URI.
        data: a pyarrow Table/RecordBatch/RecordBatchReader, or anything with
            ``__arrow_c_stream__`` (pandas, polars). Streams go through bounded memory.
        options: Hudi write options (docs/options.md), e.g. ``hoodie.table.name``,
            ``hoodie.datasource.write.recordkey.field``,
            ``hoodie.datasource.write.partitionpath.field``,
            ``hoodie.datasource.write.precombine.field``, ``hoodie.datasource.write.operation``.

    Returns:
        The instant time of the completed commit; None when the input had no rows and
        ``hoodie.allow.empty.commit`` is false.

    Raises:
        ConfigError: invalid options (an unknown key, a bad value: named). SchemaError: bad
            input (before anything is written).
    """
    client = WriteClient(path, options, post_commit=run_post_commit_services)
    return _write_with(client, data, None)[0]


def _skip_empty(
    client: WriteClient, batches: Iterator[pa.RecordBatch]
) -> Iterator[pa.RecordBatch] | None:
    """``batches`` unchanged, or None when the write is to be skipped: no row in the input,
    ``hoodie.allow.empty.commit=false`` and an operation whose empty input changes nothing.
    Only the leading empty batches are consumed (a stream is not read ahead)."""
    op = client.operation
    if client.options.get(WriteConfig.ALLOW_EMPTY_COMMIT) or op.replaces is not Replaces.NOTHING:
        return batches
    for batch in batches:
        if batch.num_rows:
            return itertools.chain([batch], batches)
    log.info(
        "nothing written to %s: the input has no rows and hoodie.allow.empty.commit=false",
        client.storage.base_uri,
    )
    return None


def _write_with(
    client: WriteClient, data: ArrowLike, lookup: Lookup | None
) -> tuple[str | None, list[WriteStatus]]:
    """Run one write of ``data`` through ``client`` (tagging with ``lookup`` instead of the
    table's index when given); the completed instant time (None: an empty input skipped, see
    :func:`write`) and the committed WriteStatuses."""
    schema, all_batches = _as_reader(data)
    batches = _skip_empty(client, all_batches)
    if batches is None:
        client.validate_schema(schema)  # a bad input is refused even when nothing is written
        return None, []
    # one process tags the whole input: the inflight file holds the workload profile, as
    # Java's writes save it (WriteClient.write_profiled)
    profiled = client.operation.saves_workload_profile
    instant = client.start(schema, inflight=not profiled)
    try:
        task = client.task_writer(instant, lookup=lookup)
        if profiled:
            client.write_profiled(instant, task, batches)
        else:
            for batch in batches:
                task.write(batch)
        statuses = task.close()
        client.commit(
            instant,
            statuses,
            partitions_to_delete=partitions_to_delete(client.options, task.touched_partitions()),
        )
    except BaseException:
        client.abort(instant)
        raise
    return instant, statuses


class HudiTable(ReadableTable):
    """A Hudi table that can be read and written (see :class:`hudi_ds.table.table.ReadableTable`).

    Write methods take the same options as :func:`write`; options given when the table was
    opened are the defaults.

    Args:
        path, options: as :class:`~hudi_ds.table.table.ReadableTable`.
        state_index: keep the record key -> file group locations in memory across this
            object's writes (:class:`hudi_ds.index.state.StateIndex`, seed 003's index state)
            instead of reading the keys of the touched partitions' files at every write. For
            tables with a SIMPLE, BLOOM or GLOBAL_* index (a BUCKET table locates keys by
            hash: refused). The state is bootstrapped by the first write of each partition and
            checked against the table's latest file slices before every write (other writers'
            commits, rollbacks, compaction and clustering are read in or dropped), so it
            answers exactly as the table's index would. Memory: about the key length plus the
            partition path length (rounded up to 8) plus 12 bytes per record. Apache Hudi has
            no ``hoodie.*`` key for this (Flink's ``index.bootstrap.enabled`` /
            ``index.state.ttl`` configure Flink state), hence an argument.
    """

    def __init__(
        self,
        path: str | Storage | TableState,
        options: Mapping[str, Any] | None = None,
        *,
        state_index: bool = False,
    ) -> None:
        super().__init__(path, options)
        #: the state index of this writer (None when not enabled)
        self.state_index: StateIndex | None = StateIndex() if state_index else None

    def _write(
        self, data: ArrowLike, operation: WriteOperation, options: Mapping[str, Any] | None
    ) -> str | None:
        opts = {**self.options.raw, **dict(options or {})}
        opts[WriteConfig.OPERATION.key] = operation.name
        state = self.state_index
        if state is None:
            instant = write(self.storage, data, opts)
        else:
            client = WriteClient(self.storage, opts, post_commit=run_post_commit_services)
            if client.resolved.index_type == "BUCKET":
                raise ConfigError(
                    "state_index=True: the table at "
                    f"{self.storage.base_uri} uses the BUCKET index (hoodie.index.type), which "
                    "locates keys by hash; the state index serves SIMPLE, BLOOM and GLOBAL_* "
                    "tables"
                )
            state.begin()
            instant, statuses = _write_with(client, data, state.lookup)
            state.committed(self.storage, [s.stat for s in statuses])
        self.refresh()
        return instant

    def upsert(self, data: ArrowLike, options: Mapping[str, Any] | None = None) -> str | None:
        """Insert new keys and update existing ones (the table's merge mode decides)."""
        return self._write(data, UPSERT, options)

    def insert(self, data: ArrowLike, options: Mapping[str, Any] | None = None) -> str | None:
        """Insert rows (with the bucket index, an existing key is updated as in upsert)."""
        return self._write(data, INSERT, options)

    def delete(self, data: ArrowLike, options: Mapping[str, Any] | None = None) -> str | None:
        """Delete the keys of ``data`` (rows or just the key and partition columns)."""
        return self._write(data, DELETE, options)

    def insert_overwrite(
        self, data: ArrowLike, options: Mapping[str, Any] | None = None
    ) -> str | None:
        """Replace the partitions that ``data`` touches with its rows."""
        return self._write(data, INSERT_OVERWRITE, options)

    def insert_overwrite_table(
        self, data: ArrowLike, options: Mapping[str, Any] | None = None
    ) -> str | None:
        """Replace the whole table with ``data``."""
        return self._write(data, INSERT_OVERWRITE_TABLE, options)

    def delete_partition(
        self, partitions: Sequence[str], options: Mapping[str, Any] | None = None
    ) -> str | None:
        """Drop whole partitions (given as relative partition paths)."""
        opts = dict(options or {})
        opts[PARTITIONS_TO_DELETE_KEY] = ",".join(partitions)
        empty = without_meta_fields(self.schema).empty_table()
        return self._write(empty, DELETE_PARTITION, opts)
