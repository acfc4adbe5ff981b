"""Writes of ``df.write.format("hudi_py")``: the driver coordinates, tasks write file groups.

One :class:`WriteJob` holds everything a write needs and is shared by the batch writer here and
the streaming writer; they differ only in how an instant is started and committed.

Process model (pyspark 4.3, see the reference notes):

* ``DataSource.writer()`` runs in a planner worker on the driver, at execution time, before any
  task: :meth:`WriteJob.prepare` validates every option and the DataFrame schema (raising
  there fails ``save()`` with nothing written), then :meth:`WriteClient.start` creates the
  table if needed, rolls back failed earlier writes and opens instant T.
* ``write(batches)`` runs once per Spark partition on an executor, on an unpickled copy of the
  writer: rows go to a task writer (per-file-group handles, bounded memory) whose WriteStatuses
  come back in one :class:`HudiCommitMessage`.
* ``commit(messages)`` runs in *another* planner process on a copy of the writer as it was when
  ``writer()`` returned, with the messages of the successful attempts only:
  :meth:`WriteClient.commit` deletes the files of failed or superseded attempts (found through
  their markers) and publishes T atomically. ``abort(messages)`` rolls T back (messages of
  failed tasks are ``None``; the markers still name their files).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark import TaskContext
from pyspark.sql.datasource import DataSourceArrowWriter, WriterCommitMessage
from pyspark.sql.types import StructType

from hudi_ds.config import WriteConfig
from hudi_ds.engine import (
    CHUNK_BYTES,
    CHUNK_ROWS,
    DML_DELETE_FIELD,
    Lookup,
    WriteClient,
    WriteStatus,
    coalesced,
    partitions_to_delete,
    post_commit_services,
    skips_empty_commit,
)
from hudi_ds.errors import ConfigError, WriteError
from hudi_ds.spark import options as opt
from hudi_ds.spark.options import SparkConfig
from hudi_ds.spark.types import conform_batch, spark_to_arrow_schema

OPERATION_KEY = WriteConfig.OPERATION.key
#: operations a ``mode("overwrite")`` write may carry (anything else becomes
#: ``insert_overwrite_table``).
OVERWRITE_OPERATIONS = ("insert_overwrite", "insert_overwrite_table")
#: operations that make no sense with ``mode("overwrite")``.
NON_OVERWRITE_OPERATIONS = ("delete", "delete_partition")


@dataclass(frozen=True)
class HudiCommitMessage(WriterCommitMessage):  # type: ignore[misc]
    """What one write task reports to the driver.

    Attributes:
        instant: the instant the task wrote for.
        partition_id: the Spark partition the task wrote.
        attempt: the task attempt number (0 for the first attempt).
        statuses: one WriteStatus per file written.
        partitions: the partition paths of the rows the task received (``delete_partition``
            drops these unless ``hoodie.datasource.write.partitions.to.delete`` names others).
    """

    instant: str
    partition_id: int
    attempt: int
    statuses: tuple[WriteStatus, ...] = ()
    partitions: tuple[str, ...] = ()

    @property
    def num_files(self) -> int:
        return len(self.statuses)


@dataclass(frozen=True)
class TaskIdentity:
    """Which Spark task attempt is writing (part of every file's write token)."""

    partition_id: int
    stage_id: int
    task_attempt_id: int
    attempt_number: int

    @classmethod
    def current(cls) -> TaskIdentity:
        """The running Spark task (all zeros outside Spark, e.g. in unit tests)."""
        ctx = TaskContext.get()
        if ctx is None:
            return cls(0, 0, 0, 0)
        return cls(ctx.partitionId(), ctx.stageId(), ctx.taskAttemptId(), ctx.attemptNumber())


class WriteJob:
    """A validated write into one table: the options, the Arrow schema and the write client.

    Built on the driver (``writer()`` / ``streamWriter()``) and pickled to executors and to the
    commit process. Construction raises before anything is written when an option or the schema
    is invalid.

    Args:
        path: the table base path.
        options: the ``hoodie.*`` write options.
        connector: the validated ``hudi_py.*`` options.
        schema: the DataFrame's Spark schema.
        overwrite: ``mode("overwrite")`` (or streaming complete mode).

    Raises:
        ConfigError: a bad option (named with its value), or an operation that cannot overwrite.
        SchemaError: the DataFrame does not fit the table (missing or mistyped key, partition or
            ordering column...).
        UnsupportedError: a column type that a Hudi table cannot store.
    """

    def __init__(
        self,
        path: str,
        options: Mapping[str, str],
        connector: Mapping[str, str],
        schema: StructType,
        overwrite: bool,
    ) -> None:
        self.path = path
        self.options = dict(options)
        self.connector = dict(connector)
        self.overwrite = overwrite
        # the rows' schema; the table's lacks the DML delete flag (hudi_ds.spark.dml's
        # MERGE marks its deletes inside its one upsert with it; the task writer drops it)
        self.input_schema = spark_to_arrow_schema(schema)
        self.arrow_schema = pa.schema([f for f in self.input_schema if f.name != DML_DELETE_FIELD])
        self.operation = resolve_operation(self.options, overwrite)
        if len(self.arrow_schema) != len(self.input_schema) and self.operation not in (
            None,
            "upsert",
        ):
            raise ConfigError(
                f"column '{DML_DELETE_FIELD}' (a MERGE's delete flag) needs "
                f"{OPERATION_KEY}=upsert, not {self.operation!r}"
            )
        if self.operation is not None:  # the client's operation, chosen once
            self.options[OPERATION_KEY] = self.operation
        # table services after the commit as Hudi's data source runs them: a batch write has
        # no async compaction service (Hudi's HoodieSparkSqlWriter gets no
        # asyncCompactionTriggerFn from DefaultSource.createRelation), so MOR compaction runs
        # only inline (hoodie.compact.inline); cleaning and archival run at their defaults.
        # The streaming sink replaces this with its background compactor (spark/streaming.py).
        self.client: WriteClient = WriteClient(
            opt.open_path(path, self.connector),
            self.options,
            post_commit=post_commit_services(datasource=True),
        )
        self.client.validate_schema(self.arrow_schema)

    # -- driver ----------------------------------------------------------------------------------
    def start(self) -> str:
        """Open a new instant (creates the table on the first write); returns its time.

        The inflight file holds the writer schema but no workload profile: Spark's tasks tag
        their own rows (the Python data source API gives the driver no pass over the data
        before the tasks write), so the driver cannot know the profile before files are
        written, where Java's driver builds it from the tagged RDD. The marker of each file,
        created before the file, names it for rollback and for early conflict detection.
        """
        return self.client.start(schema=self.arrow_schema)

    def commit(
        self,
        instant: str,
        messages: Sequence[WriterCommitMessage | None],
        extra_metadata: Mapping[str, str] | None = None,
    ) -> None:
        """Publish ``instant`` with the files of the successful task attempts.

        Raises:
            WriteError: a message is missing or belongs to another instant (the instant is not
                published; Spark then calls abort).
        """
        statuses: list[WriteStatus] = []
        touched: set[str] = set()
        for i, m in enumerate(messages):
            if not isinstance(m, HudiCommitMessage):
                raise WriteError(
                    f"instant {instant}: no commit message from Spark partition {i} ({m!r})"
                )
            if m.instant != instant:
                raise WriteError(
                    f"instant {instant}: partition {m.partition_id} wrote for instant {m.instant}"
                )
            statuses.extend(m.statuses)
            touched.update(m.partitions)
        self.client.commit(
            instant,
            statuses,
            dict(extra_metadata) if extra_metadata else None,
            partitions_to_delete=partitions_to_delete(self.options, touched),
        )

    def abort(self, instant: str) -> None:
        """Roll ``instant`` back: its files and instant files are removed."""
        self.client.abort(instant)

    # -- executors -------------------------------------------------------------------------------
    def write_task(
        self, instant: str, batches: Iterator[pa.RecordBatch], lookup: Lookup | None = None
    ) -> HudiCommitMessage:
        """Write one Spark partition's rows for ``instant`` (runs in an executor task).

        Args:
            lookup: the index lookup to tag rows with instead of the table's (the streaming
                sink's per-worker state index).
        """
        task = TaskIdentity.current()
        writer = None
        # the task writer works on one chunk in a thread while this thread takes in the next
        # one from Spark (pyarrow releases the GIL): at most two chunks in memory
        with ThreadPoolExecutor(1, thread_name_prefix="hudi-task-writer") as pool:
            pending: Future[None] | None = None
            for chunk in coalesce_batches(batches, self.input_schema):
                if writer is None:
                    # exclusive=False: other tasks write the same file groups in this instant
                    # (the API cannot shuffle by bucket); tasks stage the rows of COW file
                    # groups and the new keys of an upsert under a non-bucket index (insert
                    # slots: new file groups, COW or MOR), and commit() merges them
                    # (write/cow.py merge_staged).
                    writer = self.client.task_writer(
                        instant,
                        task.partition_id,
                        task.stage_id,
                        task.task_attempt_id,
                        exclusive=False,
                        lookup=lookup,
                    )
                if pending is not None:
                    pending.result()
                pending = pool.submit(writer.write, chunk)
            if pending is not None:
                pending.result()
        statuses: tuple[WriteStatus, ...] = ()
        partitions: tuple[str, ...] = ()
        if writer is not None:
            statuses = tuple(writer.close())
            partitions = tuple(writer.touched_partitions())
        self._maybe_fail(task)
        return HudiCommitMessage(
            instant, task.partition_id, task.attempt_number, statuses, partitions
        )

    def _maybe_fail(self, task: TaskIdentity) -> None:
        """Test hook: fail after the data is written (``hudi_py.test.fail.*``)."""
        part = opt.get(self.connector, SparkConfig.TEST_FAIL_PARTITION)
        if part is None or part != task.partition_id:
            return
        if task.attempt_number < opt.get(self.connector, SparkConfig.TEST_FAIL_ATTEMPTS):
            raise RuntimeError(
                f"hudi_py.test.fail.partition: injected failure of partition {part}, "
                f"attempt {task.attempt_number}"
            )


def coalesce_batches(
    batches: Iterator[pa.RecordBatch],
    schema: pa.Schema,
    max_rows: int = CHUNK_ROWS,
    max_bytes: int = CHUNK_BYTES,
) -> Iterator[pa.Table]:
    """Spark's record batches (``spark.sql.execution.arrow.maxRecordsPerBatch`` rows, 10,000 by
    default) conformed to ``schema`` and joined into tables of about ``max_rows`` rows or
    ``max_bytes`` bytes, in order, empty batches dropped (:func:`hudi_ds.engine.coalesced`)."""
    conformed = (conform_batch(b, schema) for b in batches if b.num_rows)
    return coalesced(conformed, max_rows, max_bytes)


def resolve_operation(options: Mapping[str, str], overwrite: bool) -> str | None:
    """The operation a write runs: the configured one, or ``insert_overwrite_table`` for
    ``mode("overwrite")`` (an explicit ``insert_overwrite`` is kept: it replaces only the
    partitions written).

    Returns:
        The operation to start, or None for the configured default (``upsert``).

    Raises:
        ConfigError: ``mode("overwrite")`` with ``delete`` / ``delete_partition``.
    """
    configured = options.get(OPERATION_KEY)
    op = configured.strip().lower() if configured else None
    if not overwrite:
        return op
    if op in NON_OVERWRITE_OPERATIONS:
        raise ConfigError(
            f"{OPERATION_KEY}={configured!r} cannot be used with mode('overwrite'); "
            "use mode('append')"
        )
    return op if op in OVERWRITE_OPERATIONS else "insert_overwrite_table"


class HudiBatchWriter(DataSourceArrowWriter):  # type: ignore[misc]
    """The batch writer: one instant per ``save()``.

    Args:
        job: the validated write.
        instant: the instant started on the driver by ``HudiDataSource.writer``.
    """

    def __init__(self, job: WriteJob, instant: str) -> None:
        self.job = job
        self.instant = instant

    @classmethod
    def create(
        cls,
        options: Mapping[str, Any],
        schema: StructType,
        overwrite: bool,
    ) -> HudiBatchWriter:
        """Validate options and schema, then start the instant (driver side of ``writer()``)."""
        path, hudi, connector = opt.split_options(options)
        if opt.get(connector, SparkConfig.STREAMING_STATE_INDEX):
            raise ConfigError(
                f"'{SparkConfig.STREAMING_STATE_INDEX.key}' applies to streaming writes "
                "(writeStream); a batch write reads the keys of the touched file groups"
            )
        job = WriteJob(opt.require_path(path), hudi, connector, schema, overwrite)
        return cls(job, job.start())

    def write(self, iterator: Iterator[pa.RecordBatch]) -> HudiCommitMessage:
        return self.job.write_task(self.instant, iterator)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        """Publish the instant; with ``hoodie.allow.empty.commit=false`` an input without rows
        is rolled back instead (nothing committed, a table this write created removed), as
        Apache Hudi skips the commit of an empty DataFrame then (see :func:`hudi_ds.write`)."""
        if skips_empty_commit(self.job.client) and all(
            isinstance(m, HudiCommitMessage) and not m.statuses for m in messages
        ):
            self.job.abort(self.instant)
            return
        self.job.commit(self.instant, messages)

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        self.job.abort(self.instant)
