"""The embedded write API: ``hudi_ds.write`` and the writable ``HudiTable``.

The top layer: a write runs the table services after its commit
(:func:`hudi_ds.services.run_post_commit_services`), passed to the write client explicitly.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from hudi_ds.config import WriteConfig
from hudi_ds.dml import DmlMetrics, TableMerger, delete_where, update_where
from hudi_ds.dml.expr import Expr
from hudi_ds.errors import ConfigError, SchemaError, import_optional
from hudi_ds.index.lookup import Lookup
from hudi_ds.index.state import StateIndex
from hudi_ds.schema.meta import without_meta_fields
from hudi_ds.schema.plain import plain_batches, plain_schema
from hudi_ds.services import run_post_commit_services
from hudi_ds.services.compaction_execute import CompactionResult
from hudi_ds.services.partition_bucket_rescale import RescaleResult
from hudi_ds.services.partition_bucket_rescale import rescale_buckets as _rescale
from hudi_ds.storage import Storage, open_storage
from hudi_ds.table.filters import Filter
from hudi_ds.table.reader import ReadStats
from hudi_ds.table.table import ReadableTable
from hudi_ds.timeline.instant import Instant
from hudi_ds.timeline.view import TableState
from hudi_ds.write.client import WriteClient
from hudi_ds.write.metadata_sync import tracks_record_keys
from hudi_ds.write.operation import (
    DELETE,
    DELETE_PARTITION,
    INSERT,
    INSERT_OVERWRITE,
    INSERT_OVERWRITE_TABLE,
    UPSERT,
    Replaces,
    WriteOperation,
    partitions_to_delete,
)
from hudi_ds.write.task_writer import CHUNK_BYTES, coalesced
from hudi_ds.write.write_status import WriteStatus

if TYPE_CHECKING:  # pyarrow.dataset imports pandas (0.35 s): only to_pyarrow_dataset needs it
    import pyarrow.dataset as pads

    from hudi_ds.table.dataset import ScanStats

log = logging.getLogger("hudi_ds.api")

ArrowLike = Any  # pa.Table | pa.RecordBatch | pa.RecordBatchReader | __arrow_c_stream__ objects


def _as_reader(data: ArrowLike) -> tuple[pa.Schema, Iterator[pa.RecordBatch]]:
    """The input's schema and its record batches, normalised once here, at the edge.

    Accepted: a pyarrow Table, RecordBatch or RecordBatchReader, a pandas DataFrame (without
    its index), a polars LazyFrame (collected in batches: the whole frame is never held at
    once), anything with ``__arrow_c_stream__`` (a polars DataFrame, DuckDB results, ...) and
    a list of dicts. Types come out plain (:func:`hudi_ds.schema.plain.plain_schema`): string /
    binary / list views and large layouts become ``string`` / ``binary`` / ``list``, the only
    forms a Hudi table's (Avro) schema has, so the rest of the write path sees one form.
    """
    schema, batches = _raw_reader(data)
    target = plain_schema(schema)
    return target, plain_batches(batches, schema, target)


def _raw_reader(data: ArrowLike) -> tuple[pa.Schema, Iterator[pa.RecordBatch]]:
    if isinstance(data, pa.Table):
        return data.schema, iter(data.to_batches())
    if isinstance(data, pa.RecordBatch):
        return data.schema, iter([data])
    if isinstance(data, pa.RecordBatchReader):
        return data.schema, iter(data)
    module = type(data).__module__
    if module.startswith("pandas"):
        t = pa.Table.from_pandas(data, preserve_index=False)
        return t.schema, iter(t.to_batches())
    if module.startswith("polars") and hasattr(data, "collect_batches"):
        return _lazy_frame_batches(data)
    if hasattr(data, "__arrow_c_stream__"):
        reader = pa.RecordBatchReader.from_stream(data)
        return reader.schema, iter(reader)
    if isinstance(data, (list, tuple)) and all(isinstance(r, dict) for r in data):
        t = pa.Table.from_pylist(list(data))
        return t.schema, iter(t.to_batches())
    raise SchemaError(
        f"cannot write {type(data).__name__}: pass a pyarrow Table, RecordBatch, "
        "RecordBatchReader, a pandas DataFrame, a polars DataFrame or LazyFrame, or an object "
        "with __arrow_c_stream__"
    )


#: rows per batch a polars LazyFrame is collected in (bounded memory for a large query)
LAZY_FRAME_BATCH_ROWS = 65536


def _lazy_frame_batches(frame: Any) -> tuple[pa.Schema, Iterator[pa.RecordBatch]]:
    """A polars LazyFrame's schema and batches, collected ``LAZY_FRAME_BATCH_ROWS`` at a time
    (``LazyFrame.collect_batches``: polars' streaming engine runs the query as it is read)."""
    frames = iter(frame.collect_batches(chunk_size=LAZY_FRAME_BATCH_ROWS))
    first = next(frames, None)
    if first is None:  # no rows: the schema of the empty result
        empty = frame.limit(0).collect().to_arrow()
        return empty.schema, iter(empty.to_batches())
    head = first.to_arrow()

    def batches() -> Iterator[pa.RecordBatch]:
        yield from head.to_batches()
        for df in frames:
            yield from df.to_arrow().cast(head.schema).to_batches()

    return head.schema, batches()


def _columns_arg(columns: Sequence[str] | None) -> list[str] | None:
    """``columns`` as a list; a bare string is refused (it would read as its letters)."""
    if columns is None:
        return None
    if isinstance(columns, str):
        raise ConfigError(
            f"columns must be a list of column names, not the string {columns!r} "
            f"(did you mean [{columns!r}]?)"
        )
    return list(columns)


def write(
    path: str | Storage,
    data: ArrowLike,
    options: Mapping[str, Any] | None = None,
    *,
    storage_options: Mapping[str, Any] | None = None,
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
        storage_options: object store credentials and settings, as deltalake and hudi-rs take
            them (``aws_access_key_id``, ``aws_endpoint_url``, ``aws_region``,
            ``google_service_account``, ``azure_storage_account_name``, ...; see
            :mod:`hudi_ds.object_store`); without them the cloud's environment chain is used.

    Returns:
        The instant time of the completed commit; None when the input had no rows and
        ``hoodie.allow.empty.commit`` is false.

    Raises:
        ConfigError: invalid options (an unknown key, a bad value: named). SchemaError: bad
            input (before anything is written).
    """
    storage = open_storage(path, storage_options)
    client = WriteClient(storage, options, post_commit=run_post_commit_services)
    return _write_with(client, data, None)[0]


def rescale_buckets(
    path: str | Storage,
    expressions: str,
    *,
    default_bucket_number: int | None = None,
    rule: str = "regex",
    dry_run: bool = False,
    options: Mapping[str, Any] | None = None,
    storage_options: Mapping[str, Any] | None = None,
) -> RescaleResult:
    """Give a bucket-index table new partition-level bucket rules (Hudi 1.1, RFC-89) and
    rewrite the partitions whose bucket count they change, in one replacecommit; the other
    partitions' files stay as they are. Stop the table's writers first (as Hudi requires).
    See :func:`hudi_ds.services.partition_bucket_rescale.rescale_buckets` and
    docs/partition_bucket_index.md.

    Args:
        expressions: the new ``hoodie.bucket.index.partition.expressions``
            (``'regex,buckets;regex,buckets'``, the first matching rule winning).
        default_bucket_number: the count of partitions no rule matches (None: keep it).
        rule: ``hoodie.bucket.index.partition.rule.type`` (``regex``).
        dry_run: only plan: which partitions change, from and to which count.
        options: write options of the rewrite (locks, metadata table).
        storage_options: object store settings (as :func:`write`).

    Raises:
        ConfigError: invalid rules or options, or not a SIMPLE bucket-index table.
        CommitConflictError: a writer wrote into a rescaled partition meanwhile.
    """
    return _rescale(
        open_storage(path, storage_options),
        expressions,
        default_bucket_number=default_bucket_number,
        rule=rule,
        dry_run=dry_run,
        options=options,
    )


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


def _check_pandas_index(data: ArrowLike, client: WriteClient) -> None:
    """Refuse a pandas frame whose index holds a key, partition or ordering field.

    A frame is written without its index (``preserve_index=False``: a default RangeIndex
    is no data), so a field set as the index (``df.set_index("id")``, a groupby result)
    would be reported missing; the error says how to make it a column.
    """
    if not type(data).__module__.startswith("pandas") or not hasattr(data, "index"):
        return
    levels = [n for n in getattr(data.index, "names", []) if n is not None]
    if not levels:
        return
    r = client.resolved
    fields = [*r.keys.record_key_fields, *r.keys.partition_fields]
    if r.merge.ordering_field:
        fields.append(r.merge.ordering_field)
    columns = {str(c) for c in data.columns}
    in_index = [f for f in fields if f in levels and f not in columns]
    if in_index:
        raise SchemaError(
            f"field(s) {in_index} are the pandas DataFrame's index, not columns: hudi_ds "
            "writes a frame without its index; call df.reset_index() first"
        )


def _write_with(
    client: WriteClient, data: ArrowLike, lookup: Lookup | None
) -> tuple[str | None, list[WriteStatus]]:
    """Run one write of ``data`` through ``client`` (tagging with ``lookup`` instead of the
    table's index when given); the completed instant time (None: an empty input skipped, see
    :func:`write`) and the committed WriteStatuses."""
    _check_pandas_index(data, client)
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
        # a state index (the only lookup given here) learns the keys of the new base files, and
        # a record index's upkeep takes them (neither base file read again)
        track = lookup is not None or (
            client.state is not None and tracks_record_keys(client.state)
        )
        task = client.task_writer(instant, lookup=lookup, track_keys=track)
        # input chunks within an eighth of the task's memory budget (write.task.max.size)
        chunk_bytes = min(CHUNK_BYTES, task.options.memory.task_bytes // 8)
        chunks = coalesced(batches, max_bytes=chunk_bytes)
        if profiled:
            client.write_profiled(instant, task, chunks)
        else:
            for chunk in chunks:
                task.write(chunk)
        statuses = task.close()
        client.commit(
            instant,
            statuses,
            partitions_to_delete=partitions_to_delete(client.options, task.touched_partitions()),
        )
    except BaseException as e:
        client.abort_failed(instant, e)
    return instant, statuses


class HudiTable(ReadableTable):
    """A Hudi table that can be read and written (see :class:`hudi_ds.table.table.ReadableTable`).

    Write methods take the same options as :func:`write`; options given when the table was
    opened are the defaults.

    Args:
        path: the table base path (a local path or an ``s3://``, ``gs://``, ``abfs(s)://``
            URI), an open :class:`~hudi_ds.storage.Storage` or a loaded table state.
        options: the default options of this object's reads and writes (``hoodie.*`` keys).
        state_index: keep the record key -> file group locations in memory across this
            object's writes (:class:`hudi_ds.index.state.StateIndex`, as Flink's index state does)
            instead of reading the keys of the touched partitions' files at every write. For
            tables with a SIMPLE, BLOOM or GLOBAL_* index (a BUCKET table locates keys by
            hash: refused). The state is bootstrapped by the first write of each partition and
            checked against the table's latest file slices before every write (other writers'
            commits, rollbacks, compaction and clustering are read in or dropped; this
            object's own writes and the compactions they run are learnt without reading the
            new files where their key changes are known), so it answers exactly as the
            table's index would. Memory: about the key length plus the partition path length
            (rounded up to 8) plus 12 bytes per record. Apache Hudi has no ``hoodie.*`` key
            for this (Flink's ``index.bootstrap.enabled`` / ``index.state.ttl`` configure
            Flink state), hence an argument.
        storage_options: object store credentials and settings (``aws_access_key_id``,
            ``aws_endpoint_url``, ...; see :mod:`hudi_ds.object_store`).

    Raises:
        TableNotFoundError: there is no ``.hoodie/hoodie.properties`` under ``path``.
        ConfigError: an unknown option key or an invalid value (docs/options.md).
    """

    def __init__(
        self,
        path: str | Storage | TableState,
        options: Mapping[str, Any] | None = None,
        *,
        state_index: bool = False,
        storage_options: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(path, options, storage_options=storage_options)
        #: the state index of this writer (None when not enabled)
        self.state_index: StateIndex | None = StateIndex() if state_index else None
        #: the slice counts of the dataset :meth:`to_pyarrow_dataset` built last (None: none)
        self.last_scan_stats: ScanStats | None = None

    def __repr__(self) -> str:
        try:
            last = self.timeline.commits().last()
            latest = f"{last.requested_time!r} ({last.action})" if last is not None else "None"
            cfg = self.config
            return (
                f"HudiTable({self.path!r}, name={cfg.table_name!r}, type={cfg.table_type}, "
                f"version={cfg.table_version}, latest_commit={latest})"
            )
        except Exception as e:  # a repr never raises: say what could not be read
            return f"HudiTable({self.path!r}, unreadable: {e})"

    # -- Arrow-native reads ----------------------------------------------------------------------
    def scan(
        self,
        columns: Sequence[str] | None = None,
        filters: Sequence[Filter] | pc.Expression | None = None,
        options: Mapping[str, Any] | None = None,
    ) -> pa.RecordBatchReader:
        """Stream the table's rows, one file slice at a time (bounded memory).

        The read is planned here (options, columns and filters are checked now) and the
        slices are read and merged as the reader is consumed, a few in parallel, in order.

        Args:
            columns: the columns to return (default all); only they (and what merging needs)
                are read from the files.
            filters: ``(column, op, value)`` tuples, ANDed (as :meth:`read`): partition
                columns prune partitions, record-key lookups prune the buckets of a BUCKET
                table, and every filter is applied to the merged rows. A
                ``pyarrow.compute.Expression`` is accepted too: it prunes the slices of
                partitions it excludes and filters the rows (:meth:`to_pyarrow_dataset`).
            options: read options as :meth:`read` takes them:
                ``hoodie.datasource.query.type`` (``snapshot`` | ``read_optimized`` |
                ``incremental``), ``as.of.instant`` (time travel),
                ``hoodie.datasource.read.begin.instanttime`` / ``...end.instanttime``.

        Returns:
            A ``pyarrow.RecordBatchReader`` of the rows (schema: ``columns`` of the table's).
        """
        cols = _columns_arg(columns)
        if isinstance(filters, pc.Expression):
            dataset = self.to_pyarrow_dataset(options=options)
            scanned = self.last_scan_stats
            reader = dataset.scanner(columns=cols, filter=filters).to_reader()

            def checked() -> Iterator[pa.RecordBatch]:
                try:
                    yield from reader
                except pa.ArrowException as e:  # a slice failed: raise its own error
                    if scanned is not None and scanned.errors:
                        raise scanned.errors[0] from e
                    raise

            return pa.RecordBatchReader.from_batches(reader.schema, checked())
        plan = self.plan_read(options, cols, filters)
        stats = ReadStats()
        return pa.RecordBatchReader.from_batches(
            plan.output_schema, self.read_plan_slices(plan, plan.slices, stats)
        )

    def __arrow_c_stream__(self, requested_schema: object | None = None) -> object:
        """The table's snapshot as an Arrow C stream (the Arrow PyCapsule protocol), so
        ``pa.table(t)``, ``polars.DataFrame(t)`` and DuckDB's ``select * from t`` read it.
        The rows stream slice by slice (:meth:`scan`)."""
        return self.scan().__arrow_c_stream__(requested_schema)

    def to_pyarrow_dataset(
        self,
        columns: Sequence[str] | None = None,
        filters: Sequence[Filter] | None = None,
        options: Mapping[str, Any] | None = None,
    ) -> pads.Dataset:
        """The read as a lazy ``pyarrow.dataset.Dataset`` for engines that plan their own scans.

        One fragment per file slice (:mod:`hudi_ds.table.dataset`): building it plans the read
        and reads no data file; a slice is read and merged (base file + log blocks, exactly
        as :meth:`read`) only when an engine's scan opens its fragment. Each fragment carries
        its partition values as a guarantee, so a filter on a partition column skips the
        other partitions' slices unread, and (``hoodie.enable.data.skipping``, on by default)
        the bounds the metadata table's column statistics put on its columns, so a filter on
        an indexed column skips the slices whose files hold no matching value; Arrow filters
        the rows read. The snapshot of a
        MERGE_ON_READ table with pending log files is what every engine sees.

        This is what gives DuckDB and polars real laziness with pushdown::

            d = t.to_pyarrow_dataset()
            duckdb.sql("select count(*) from d where part = 'a'")   # reads part=a slices only
            polars.scan_pyarrow_dataset(d).filter(pl.col("part") == "a").collect()

        (An object with only ``__arrow_c_stream__`` -- this table itself, or :meth:`scan`'s
        reader -- is a one-shot stream to them: everything is read, nothing pushed down.)

        ``columns`` and ``filters`` (as :meth:`scan`) narrow the read itself: slices
        are merged with these columns only, filters prune buckets and partitions up front.
        The counts of the dataset's scans -- slices planned and slices read so far -- are in
        :attr:`last_scan_stats`. The plan is fixed when the dataset is built (the table's
        state then); build a new dataset to see later commits.
        """
        cols = _columns_arg(columns)
        plan = self.plan_read(options, cols, filters)
        from hudi_ds.table.dataset import ScanStats, slice_dataset

        stats = ScanStats()
        self.last_scan_stats = stats
        return slice_dataset(self, plan, stats, self.slice_bounds(plan, options))

    def to_pandas(
        self,
        columns: Sequence[str] | None = None,
        filters: Sequence[Filter] | pc.Expression | None = None,
        options: Mapping[str, Any] | None = None,
    ) -> Any:
        """The rows as a ``pandas.DataFrame`` (arguments as :meth:`scan`). Needs the ``pandas``
        package."""
        import_optional("pandas", "HudiTable.to_pandas")
        return self.scan(columns, filters, options).read_all().to_pandas()

    def to_polars(
        self,
        columns: Sequence[str] | None = None,
        filters: Sequence[Filter] | None = None,
        options: Mapping[str, Any] | None = None,
        *,
        lazy: bool = False,
    ) -> Any:
        """The rows as a ``polars.DataFrame``, or with ``lazy=True`` a ``polars.LazyFrame``
        over :meth:`to_pyarrow_dataset` (polars pushes its projection and its filters into the
        scan: partitions it filters out are not read). Needs the ``polars`` package."""
        pl = import_optional("polars", "HudiTable.to_polars")
        if lazy:
            return pl.scan_pyarrow_dataset(self.to_pyarrow_dataset(columns, filters, options))
        return pl.from_arrow(self.scan(columns, filters, options).read_all())

    def _write(
        self, data: ArrowLike, operation: WriteOperation, options: Mapping[str, Any] | None
    ) -> str | None:
        opts = {**self.options.raw, **dict(options or {})}
        opts[WriteConfig.OPERATION.key] = operation.name
        state = self.state_index
        if state is None:
            instant = write(self.storage, data, opts)
        else:
            compactions: list[CompactionResult] = []

            def post_commit(c: WriteClient, done: Instant) -> None:
                # the compactions this commit runs report their key changes: learnt below
                compactions.extend(run_post_commit_services(c, done, track_keys=True))

            client = WriteClient(self.storage, opts, post_commit=post_commit)
            if client.resolved.index.routes_by_hash:
                raise ConfigError(
                    "state_index=True: the table at "
                    f"{self.storage.base_uri} uses the BUCKET index (hoodie.index.type), which "
                    "locates keys by hash; the state index serves SIMPLE, BLOOM and GLOBAL_* "
                    "tables"
                )
            state.begin()
            instant, statuses = _write_with(client, data, state.lookup)
            state.committed(
                self.storage,
                [s.stat for s in statuses],
                {s.path: (s.keys.inserted, s.keys.removed) for s in statuses if s.keys},
            )
            for res in compactions:  # after the write: each compaction's plan came later
                state.compacted(res.stats, res.key_changes)
        self.refresh()
        return instant

    def upsert(self, data: ArrowLike, options: Mapping[str, Any] | None = None) -> str | None:
        """Insert new keys and update existing ones (the table's merge mode decides)."""
        return self._write(data, UPSERT, options)

    def insert(self, data: ArrowLike, options: Mapping[str, Any] | None = None) -> str | None:
        """Insert rows (with the bucket index, an existing key is updated as in upsert)."""
        return self._write(data, INSERT, options)

    def delete(
        self,
        data: ArrowLike | None = None,
        options: Mapping[str, Any] | None = None,
        *,
        predicate: Expr | None = None,
    ) -> Any:
        """Delete the keys of ``data`` (rows or just the key and partition columns), or with
        ``predicate`` the rows it selects (``DELETE FROM t WHERE ...``).

        Args:
            data: the rows or keys to delete (returns the instant, as the other writes).
            predicate: a SQL condition over the table's columns (``"city = 'sf' AND fare <
                10"``) or a ``pyarrow.compute.Expression``; returns a
                :class:`~hudi_ds.dml.DmlMetrics`. Its simple conjuncts prune the read
                (:mod:`hudi_ds.dml.predicate`).
        """
        if predicate is not None:
            if data is not None:
                raise ConfigError("delete: give the rows to delete or a predicate, not both")
            return delete_where(self, predicate, options, run_post_commit_services)
        if data is None:
            raise ConfigError("delete: give the rows (keys) to delete or a predicate=")
        return self._write(data, DELETE, options)

    def update(
        self,
        set: Mapping[str, Expr],
        predicate: Expr | None = None,
        options: Mapping[str, Any] | None = None,
    ) -> DmlMetrics:
        """``UPDATE t SET column = expression, ... WHERE predicate`` as one upsert instant.

        ``set`` maps columns to SQL expressions over the table's columns (``"fare * 2"``) or
        ``pyarrow.compute.Expression``s; without ``predicate`` every row is updated. Returns
        the statement's :class:`~hudi_ds.dml.DmlMetrics`.
        """
        return update_where(self, set, predicate, options, run_post_commit_services)

    def merge(
        self,
        source: ArrowLike,
        on: str | Sequence[str],
        *,
        source_alias: str = "s",
        target_alias: str = "t",
        options: Mapping[str, Any] | None = None,
    ) -> TableMerger:
        """Start a ``MERGE INTO`` of ``source`` (any input :func:`write` takes) on the condition
        ``on`` (``"t.id = s.id"``, or a list of column names both sides hold): add clauses
        (``when_matched_update``, ``when_not_matched_insert_all``, ...) and call
        ``execute()``. See :class:`hudi_ds.dml.merge.TableMerger` for the semantics (Hudi's
        ``MERGE INTO``)."""
        schema, batches = _as_reader(source)
        table = pa.Table.from_batches(list(batches), schema=schema)
        return TableMerger(
            self, table, on, source_alias, target_alias, options, run_post_commit_services
        )

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
        opts[WriteConfig.PARTITIONS_TO_DELETE.key] = ",".join(partitions)
        empty = without_meta_fields(self.schema).empty_table()
        return self._write(empty, DELETE_PARTITION, opts)
