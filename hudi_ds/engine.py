"""The core API an engine adapter uses: everything ``hudi_ds.spark`` needs, nothing more.

An engine (Spark here; a second one would use the same names) plans on its driver, runs tasks
on its executors, and commits on its driver. It never opens the timeline, names a file or hashes
a key itself: it asks the core. Besides this module an adapter may import only
``hudi_ds.errors`` (the error family) and ``hudi_ds.config`` (typed options), which
``tools/check_layers.py`` enforces for ``hudi_ds/spark``.

Options
    :func:`validate_options`, :func:`is_option_key`, :func:`is_storage_option`;
    :func:`table_location` (a path plus object-store options, as every call below takes it).
Reads
    :class:`ReadableTable` opens a table (schema, :meth:`~ReadableTable.plan_read`);
    :class:`ReadPlan` is the driver's plan, its :class:`FileSlice` s the unit of work (a task
    carries :meth:`ReadPlan.for_slices` and its slices); :meth:`ReadableTable.read_plan_slices`
    reads slices as Arrow batches in a task. :func:`pruning_filters` and :func:`prune_buckets`
    narrow a plan with the engine's filters; :func:`split_direct` (:class:`DirectSplit`) says
    which slices an engine reads as plain Parquet files with its own reader.
Streaming reads
    :class:`CommitStream` (:class:`StreamCommit`): offsets, admission and the read options of
    a range; :func:`normalize_instant` checks an instant time given by the user.
Writes
    :class:`WriteClient` starts an instant (driver), gives each task a task writer that
    returns :class:`WriteStatus` es, and commits or aborts them (driver);
    :func:`post_commit_services` are the table services run after a commit;
    :func:`partitions_to_delete` and :func:`skips_empty_commit` decide the commit of a batch
    write; :class:`StreamSink` is the table side of an exactly-once streaming sink;
    :class:`StateIndex` / :data:`Lookup` a long-lived worker's index of record keys;
    :func:`bucket_ids_of_rows` the bucket of each row of a bucket-index table, whose layout
    an :class:`Index` resolved from the options holds; on a consistent-hashing table
    :func:`ring_router` (the driver's snapshot of the rings) and :func:`file_ids_of_rows` the
    file group of each row instead.
DML
    an engine that runs a ``MERGE`` join itself shares the clause model and its checks
    (:class:`MergeShape`, :class:`Clause`, :class:`Match`, :class:`Action`,
    :func:`new_clause`, :func:`cardinality_error`), flags the rows a statement deletes with
    :data:`DML_DELETE_FIELD` in its upsert, and reports :class:`DmlMetrics`
    (:func:`dml_instant` finds the instant the statement wrote).
Compaction
    :func:`compact` runs a table's compactions with an engine's executor, which runs each
    operation of a :class:`CompactionJob` with :func:`compaction_task`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from hudi_ds.config import Options, WriteConfig, is_option_key, validated
from hudi_ds.dml.clauses import (
    Action,
    Clause,
    Match,
    MergeShape,
    SourceColumn,
    cardinality_error,
    check_sql_columns,
    check_update_set,
    new_clause,
    no_clause_error,
)
from hudi_ds.dml.commit import DmlMetrics
from hudi_ds.dml.expr import Scope
from hudi_ds.index import Index
from hudi_ds.index.bucket import bucket_ids_from_record_keys
from hudi_ds.index.consistent_hashing import RingRouter, load_committed_rings
from hudi_ds.index.core import BucketLayout
from hudi_ds.index.lookup import Lookup
from hudi_ds.index.state import StateIndex
from hudi_ds.keygen import partition_paths, record_keys
from hudi_ds.layout.file_group import FileSlice
from hudi_ds.object_store import CLIENT_KEYS, RETRY_KEYS
from hudi_ds.schema.meta import (
    COMMIT_TIME_METADATA_FIELD,
    DML_DELETE_FIELD,
    IS_DELETED_FIELD,
    META_FIELDS,
    PARTITION_PATH_METADATA_FIELD,
    RECORD_KEY_METADATA_FIELD,
)
from hudi_ds.services import run_post_commit_services
from hudi_ds.services.background import start_compactor
from hudi_ds.services.base import ServiceContext
from hudi_ds.services.compaction import run_compaction, schedule_compaction
from hudi_ds.services.compaction_execute import (
    CompactionJob,
    CompactionResult,
    attempt_token,
    execute_operation,
)
from hudi_ds.storage import Storage
from hudi_ds.table.bucket_pruning import prune_buckets
from hudi_ds.table.direct import DirectSplit, split_direct
from hudi_ds.table.filters import normalize_filters, pruning_filters
from hudi_ds.table.stream import CommitStream, StreamCommit
from hudi_ds.table.table import ReadableTable, ReadPlan
from hudi_ds.timeline.instant import normalize_instant
from hudi_ds.timeline.metadata import WriteStat
from hudi_ds.write import operation
from hudi_ds.write.client import WriteClient
from hudi_ds.write.operation import Replaces
from hudi_ds.write.stream_sink import StreamSink
from hudi_ds.write.task_writer import CHUNK_BYTES, CHUNK_ROWS, coalesced
from hudi_ds.write.write_status import WriteStatus

__all__ = [
    "CHUNK_BYTES",
    "CHUNK_ROWS",
    "COMMIT_TIME_METADATA_FIELD",
    "DML_DELETE_FIELD",
    "DirectSplit",
    "PARTITION_PATH_METADATA_FIELD",
    "Action",
    "Clause",
    "DmlMetrics",
    "Match",
    "MergeShape",
    "Scope",
    "SourceColumn",
    "cardinality_error",
    "check_sql_columns",
    "check_update_set",
    "META_FIELDS",
    "dml_instant",
    "latest_instant_time",
    "new_clause",
    "no_clause_error",
    "Index",
    "IS_DELETED_FIELD",
    "RECORD_KEY_METADATA_FIELD",
    "CommitStream",
    "CompactionJob",
    "CompactionResult",
    "FileSlice",
    "Lookup",
    "ReadPlan",
    "ReadableTable",
    "StateIndex",
    "StreamCommit",
    "StreamSink",
    "TableLocation",
    "WriteClient",
    "WriteStat",
    "WriteStatus",
    "coalesced",
    "bucket_ids_of_rows",
    "file_ids_of_rows",
    "ring_router",
    "RingRouter",
    "compact",
    "compaction_task",
    "is_option_key",
    "is_storage_option",
    "normalize_filters",
    "normalize_instant",
    "partitions_to_delete",
    "post_commit_services",
    "prune_buckets",
    "pruning_filters",
    "split_direct",
    "skips_empty_commit",
    "table_location",
    "validate_options",
]

#: a table as every call of the core takes it: its base path, or a
#: :class:`~hudi_ds.storage.Storage` carrying object store options (see :func:`table_location`)
TableLocation = str | Storage

#: object store option families (see :mod:`hudi_ds.object_store`)
_STORAGE_KEY_PREFIXES = ("aws_", "google_", "azure_")


# -- options -------------------------------------------------------------------------------------
def validate_options(options: Mapping[str, Any]) -> None:
    """Check ``hoodie.*`` options against the core's registry (ConfigError naming a bad key or
    value); one option dict serves a write and a read."""
    validated(options)


def is_storage_option(key: str) -> bool:
    """Whether ``key`` (lower case) is an object store option (see :mod:`hudi_ds.object_store`)."""
    return key.startswith(_STORAGE_KEY_PREFIXES) or key in CLIENT_KEYS or key in RETRY_KEYS


def table_location(path: str, storage_options: Mapping[str, str]) -> TableLocation:
    """The table at ``path`` as the core takes it: a :class:`~hudi_ds.storage.Storage` with
    the object store options when there are some (it pickles with them to the executors),
    else the path.

    Raises:
        ConfigError: an unknown storage option (named) or a bad value.
    """
    return Storage(path, storage_options=dict(storage_options)) if storage_options else path


# -- writes --------------------------------------------------------------------------------------
def post_commit_services(
    *, datasource: bool = True, async_compaction: bool = False
) -> Callable[..., Any]:
    """The table services a data source's writer runs after each commit, as Hudi's data source
    runs them (:func:`hudi_ds.services.run_post_commit_services`): cleaning and archival, and
    MOR compaction inline only -- or, with ``async_compaction``, scheduled in the commit and
    executed by a background compactor (Hudi's streaming sink), a thread of the committing
    process when it can (:func:`~hudi_ds.services.background.start_compactor`).

    Picklable: pass it as ``WriteClient(..., post_commit=...)`` or set it on the client.
    """
    if async_compaction:
        return functools.partial(
            run_post_commit_services,
            # the streaming sink's commit runner is a warm process that idles between commits
            async_compactor=functools.partial(start_compactor, in_this_process=True),
            datasource=datasource,
        )
    return functools.partial(run_post_commit_services, datasource=datasource)


def partitions_to_delete(options: Mapping[str, str], touched: Iterable[str]) -> list[str]:
    """The partitions a ``delete_partition`` commit drops: those named by
    ``hoodie.datasource.write.partitions.to.delete``, else the partitions of the rows written."""
    return operation.partitions_to_delete(Options.of(options), touched)


def skips_empty_commit(client: WriteClient) -> bool:
    """Whether a write of ``client`` that wrote no file is rolled back instead of committed:
    ``hoodie.allow.empty.commit=false`` and an operation that replaces nothing (Apache Hudi
    skips the commit of an empty DataFrame then)."""
    return (
        not client.options.get(WriteConfig.ALLOW_EMPTY_COMMIT)
        and client.operation.replaces is Replaces.NOTHING
    )


def bucket_ids_of_rows(
    rows: pa.Table,
    key_fields: Sequence[str],
    complex_key: bool,
    hash_fields: Sequence[str],
    num_buckets: int,
    rules: Any = None,
    key_spec: Any = None,
) -> npt.NDArray[np.int32]:
    """The Hudi bucket id of every row of ``rows`` (holding the record key columns): its
    record key built as the writer builds it, hashed as Java Hudi does. With partition-level
    ``rules`` (a :class:`~hudi_ds.index.partition_bucket.HashingConfig`) the count is the one
    of each row's partition, its path built by ``key_spec`` (the writer's ``KeySpec``) from
    the partition columns ``rows`` then holds too."""
    keys = record_keys(rows, list(key_fields), complex_key)
    counts: Any = num_buckets
    if rules is not None:
        k = key_spec
        parts = partition_paths(
            rows,
            list(k.partition_fields),
            k.hive_style,
            k.url_encode,
            k.timestamp,
            k.timestamp_fields,
        )
        counts = BucketLayout(num_buckets, tuple(hash_fields), rules=rules).row_counts(parts)
    return bucket_ids_from_record_keys(keys, list(hash_fields), counts, complex_key)


def ring_router(location: TableLocation, layout: BucketLayout) -> RingRouter:
    """The committed rings of a consistent-hashing table (``layout`` its bucket layout), loaded
    once to route rows by on the tasks; an empty snapshot for a table that does not exist yet
    (every partition then gets the ring its writer will create).

    Raises:
        CorruptFileError: a bad hashing metadata file.
    """
    storage = location if isinstance(location, Storage) else Storage(str(location))
    rings = {}
    if storage.exists(".hoodie/hoodie.properties"):
        vis = ReadableTable(location).visibility()
        rings = load_committed_rings(storage, lambda i: i in vis.instants)
    return RingRouter(rings, layout.num_buckets, tuple(layout.hash_fields))


def file_ids_of_rows(
    rows: pa.Table, key_fields: Sequence[str], complex_key: bool, key_spec: Any, router: RingRouter
) -> pa.Array:
    """The file group id of every row of ``rows`` (holding the record key and partition
    columns) of a consistent-hashing table: its record key and partition path built as the
    writer (``key_spec``, its ``KeySpec``) builds them, routed by ``router``'s rings."""
    keys = record_keys(rows, list(key_fields), complex_key)
    k = key_spec
    parts = partition_paths(
        rows, list(k.partition_fields), k.hive_style, k.url_encode, k.timestamp, k.timestamp_fields
    )
    return router.file_ids(keys, parts)


# -- DML -----------------------------------------------------------------------------------------
def dml_instant(location: TableLocation, before: str | None) -> tuple[str | None, int]:
    """The data instant a DML statement's write completed after ``before`` (the latest
    instant time before it, :meth:`Timeline.latest_time`), and the file groups it wrote;
    ``(None, 0)`` when it committed none. Table services run after the commit (cleaning,
    inline compaction) are not it."""
    timeline = ReadableTable(location).timeline
    written = None
    for i in timeline.completed().filter_actions("commit", "deltacommit"):
        if before is not None and i.requested_time <= before:
            continue
        md = timeline.read_commit_metadata(i)
        if md.compacted or md.operation_type in ("COMPACT", "CLUSTER", "LOG_COMPACT"):
            continue
        groups = {(p, s.file_id) for p, stats in md.partition_to_write_stats.items() for s in stats}
        written = (i.requested_time, len(groups))
    return written or (None, 0)


def latest_instant_time(location: TableLocation) -> str | None:
    """The greatest instant time on the table's timeline (the ``before`` of :func:`dml_instant`)."""
    return ReadableTable(location).timeline.latest_time()


# -- compaction ----------------------------------------------------------------------------------
def compact(
    path: str,
    instant: str | None = None,
    options: Mapping[str, Any] | None = None,
    *,
    schedule: bool = False,
    executor: Callable[[CompactionJob], list[WriteStat]] | None = None,
) -> list[CompactionResult]:
    """Run pending compactions of the table at ``path`` (or ``instant``), each job's
    operations run by ``executor`` (default: here, one after the other).

    Args:
        schedule: schedule a new compaction first (nothing runs when none is pending then).

    Returns:
        One result per completed compaction.
    """
    ctx = ServiceContext.open(path, options)
    if schedule:
        scheduled = schedule_compaction(ctx)
        if instant is None and scheduled is None and not ctx.timeline().pending_compactions():
            return []
    return run_compaction(ctx, instant, executor=executor)


def compaction_task(
    job: CompactionJob, index: int, task: tuple[int, int] | None = None
) -> WriteStat:
    """Run operation ``index`` of ``job`` (merge one file slice into a new base file).

    Args:
        task: the engine's ``(task number, task attempt id)``: part of the files' write token,
            so the completion deletes the files of failed task attempts of its own compaction
            attempt only.
    """
    if task is None:
        return execute_operation(job, index)
    return execute_operation(job, index, attempt_token(job, *task))
