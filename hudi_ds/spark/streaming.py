"""The streaming sink ``df.writeStream.format("hudi_py")``: one micro-batch is one instant,
committed exactly once.

::

    (events.writeStream.format("hudi_py")
        .options(**hoodie_opts)
        .option("checkpointLocation", ck)
        .start(path))

Process model (pyspark 4.3, see the reference notes) and where each step happens:

* ``streamWriter()`` runs once per micro-batch in a planner worker (the writer it returns is
  pickled to that batch's tasks) **and** once per commit in the sink's commit runner, on a fresh
  instance that never saw the tasks. Neither knows the batch id. It therefore only validates
  the options and the schema, creates the table if needed (idempotent) and *allocates* an
  instant time T after every instant on the timeline -- no instant file is written, so the
  commit runner's own allocation is harmless. It also reads the writer identifier's latest
  abort record (below), which the tasks compare with the one they find.
* Each task (``write``) reads the batch id from its ``TaskContext``. If the table already
  recorded that batch id for this writer identifier, the task writes nothing. Otherwise the
  first non-empty Arrow batch *joins* instant T: ``T.<action>.requested`` and ``.inflight`` are
  created unless another task of the micro-batch did it first (every task writes the same
  content: schema, operation, and a ``_hudi_py_streaming_batch`` marker naming the identifier
  and batch id). All tasks of one micro-batch share one pickled writer, hence one T.
* ``commit(messages, batchId)`` (commit runner): if the batch id is already recorded it returns
  (a replay after a crash between the table commit and Spark's own commit log). Otherwise it
  rolls back pending writes older than T (earlier attempts of this or a previous batch that
  crashed: Hudi's eager rollback of a single writer), then publishes T with
  ``_hudi_streaming_sink_checkpoint = {"<identifier>": "<batchId>"}`` in its extra metadata
  (Hudi's key and format, so Hudi's own sink resumes from it too). Table services registered
  as post-commit hooks (cleaning, archival, inline compaction) run inside that commit. On MOR
  tables a compaction is *scheduled* there every ``hoodie.compact.inline.max.delta.commits``
  (5) delta commits and executed off the critical path by a background compactor, a thread of
  the commit runner (warm, idle between commits), or a process on the driver machine when
  an attempt died with its worker (:mod:`hudi_ds.services.background`; Hudi's sink runs its
  async compaction service in a driver thread, ``hoodie.datasource.compaction.async.enable``,
  default true): the next micro-batch does not wait for it. ``hoodie.compact.inline=true``
  executes it in the commit instead, and so does
  ``hoodie.datasource.compaction.async.enable=false`` unless ``hoodie.compact.inline`` is
  given (Hudi's ``DataSourceUtils.createHoodieConfig``: inline compaction on MOR when async
  compaction is off); both false: no compaction.
* ``abort(messages, batchId)`` first records the abort (a small file per writer identifier in
  Hudi's auxiliary folder, :class:`~hudi_ds.engine.StreamSink`), then rolls back the batch's pending
  instant (named by the messages or found through the marker when every message is
  ``None``). A completed instant is never rolled back: Spark calls ``abort`` after a
  ``commit`` that raised, possibly after the commit point. The commit runner never knows T
  unless a message or the timeline names it: when the job failed before any task created
  T's files, nothing names it, and tasks Spark has not yet stopped would create them
  afterwards (a dangling ``.inflight`` with files). So a task refuses to create T when the
  identifier's abort record differs from the one its planner read (a later abort; batches of
  one query run one at a time, so it is this batch's), checked before creating T's files and
  again after (the write client's ``withdrawn``): the abort records itself before looking for
  T, so either it finds T or the task sees the record. A restarted query's planner reads the
  record, so its tasks write the batch again.

A micro-batch with no rows writes no instant and records nothing (replaying it writes nothing
either).

With ``hudi_py.streaming.state.index`` (SIMPLE / BLOOM / GLOBAL_* tables) the tasks tag their
rows with a state index their Python worker keeps per table across micro-batches
(:func:`worker_state_lookup`) instead of reading the keys of the touched file groups.

Single writer: concurrent writers into one table are not supported (a sink's commit rolls
back every older pending write; it refuses with ``ConcurrentWriterError`` while a single
writer's batch or embedded write is alive, and a single writer starting while a micro-batch's
tasks beat its heartbeat refuses too: docs/concurrency.md). Several streams may write one
table *one after another*;
each keeps its own checkpoint under its identifier
(``hoodie.datasource.write.streaming.checkpoint.identifier``, default
``default_single_writer``). A query restarted with a *new* Spark checkpoint restarts at batch
0: give it a new identifier, or its batches are skipped as already written.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any

import pyarrow as pa
from pyspark import TaskContext
from pyspark.sql.types import StructType

from hudi_ds.config import Options, WriteConfig
from hudi_ds.engine import Lookup, StateIndex, StreamSink, post_commit_services
from hudi_ds.errors import ConfigError, WriteError
from hudi_ds.spark import options as opt
from hudi_ds.spark.options import SparkConfig
from hudi_ds.spark.writer import HudiCommitMessage, TaskIdentity, WriteJob

try:  # pyspark >= 4.1: Arrow batches straight from the JVM
    from pyspark.sql.datasource import DataSourceStreamArrowWriter as _StreamWriterBase

    ARROW_STREAM_WRITER = True
except ImportError:  # pragma: no cover - pyspark 4.0: Rows, converted to Arrow here
    from pyspark.sql.datasource import (  # type: ignore[assignment]
        DataSourceStreamWriter as _StreamWriterBase,
    )

    ARROW_STREAM_WRITER = False

log = logging.getLogger("hudi_ds.spark.streaming")

#: task-local properties Spark sets in every task of a micro-batch.
BATCH_ID_PROPERTY = "streaming.sql.batchId"
QUERY_ID_PROPERTY = "sql.streaming.queryId"
ROW_CHUNK = 10_000


def task_batch_id() -> int | None:
    """The micro-batch id of the running Spark task (None outside a streaming task)."""
    ctx = TaskContext.get()
    raw = ctx.getLocalProperty(BATCH_ID_PROPERTY) if ctx is not None else None
    return int(raw) if raw not in (None, "") else None


def task_query_id() -> str | None:
    """The streaming query id of the running Spark task (stable across restarts)."""
    ctx = TaskContext.get()
    return ctx.getLocalProperty(QUERY_ID_PROPERTY) if ctx is not None else None


@dataclass(frozen=True)
class HudiStreamCommitMessage(HudiCommitMessage):
    """What one streaming write task reports (see :class:`HudiCommitMessage`).

    Attributes:
        batch_id: the micro-batch the task wrote.
        skipped: the task found the batch already committed and wrote nothing.
    """

    batch_id: int = -1
    skipped: bool = False


class HudiStreamWriter(_StreamWriterBase):  # type: ignore[misc,valid-type]
    """The streaming sink's writer (one instance per micro-batch, and one per commit).

    Args:
        job: the validated write (shared with batch writes).
        instant: the instant time allocated for this micro-batch (written only when a task
            joins it).
        identifier: the writer identifier the batch ids are recorded under.
        planned_after_abort: the identifier's abort record when the writer was built
            (:meth:`~hudi_ds.engine.StreamSink.latest_abort`).
    """

    def __init__(
        self,
        job: WriteJob,
        instant: str,
        identifier: str,
        planned_after_abort: str | None = None,
    ) -> None:
        self.job = job
        self.instant = instant
        self.identifier = identifier
        self.planned_after_abort = planned_after_abort
        #: the sink's batch ids, markers and abort records in the table
        self.sink = StreamSink(job.client, identifier)
        #: seconds :meth:`create` took (table creation, validation, instant allocation)
        self.setup_seconds = 0.0

    @classmethod
    def create(
        cls, options: Mapping[str, Any], schema: StructType, overwrite: bool
    ) -> HudiStreamWriter:
        """Validate options and schema, create the table if needed, allocate an instant time.

        Raises:
            ConfigError, SchemaError, UnsupportedError: as :class:`WriteJob`.
        """
        t0 = time.perf_counter()
        path, hudi, connector = opt.split_options(options)
        job = WriteJob(opt.require_path(path), hudi, connector, schema, overwrite)
        # MOR compaction off the critical path, as Hudi's HoodieStreamingSink runs it (async
        # compaction service): scheduled in the commit, executed by a background compactor
        job.client.post_commit = post_commit_services(datasource=True, async_compaction=True)
        state_key = SparkConfig.STREAMING_STATE_INDEX
        if opt.get(connector, state_key) and job.client.resolved.index.routes_by_hash:
            raise ConfigError(
                f"'{state_key.key}'=true: the table at {job.client.storage.base_uri} uses the "
                "BUCKET index (hoodie.index.type), which locates keys by hash; the state index "
                "serves SIMPLE, BLOOM and GLOBAL_* tables"
            )
        job.client.create_table_if_absent(job.arrow_schema)
        identifier = Options.of(hudi).get(WriteConfig.STREAMING_CHECKPOINT_ID)
        sink = StreamSink(job.client, identifier)
        writer = cls(job, sink.allocate_instant(), identifier, sink.latest_abort())
        writer.setup_seconds = time.perf_counter() - t0
        return writer

    # -- executors -------------------------------------------------------------------------------
    def write(self, iterator: Iterator[Any]) -> HudiStreamCommitMessage:
        """Write one task's rows of the micro-batch (nothing if the batch is committed)."""
        batch_id = task_batch_id()
        if batch_id is None:
            raise WriteError("the hudi_py stream writer runs only inside a streaming micro-batch")
        task = TaskIdentity.current()
        batches = iterator if ARROW_STREAM_WRITER else _rows_to_batches(iterator, self.job)
        committed = self.sink.committed_batch()
        if committed is not None and batch_id <= committed:
            for _ in batches:  # the rows were already written by an earlier attempt
                pass
            return HudiStreamCommitMessage(
                self.instant,
                task.partition_id,
                task.attempt_number,
                batch_id=batch_id,
                skipped=True,
            )
        marker = self.sink.batch_marker(batch_id, task_query_id())
        msg = self.job.write_task(
            self.instant, self._joining(batches, marker), worker_state_lookup(self.job)
        )
        return HudiStreamCommitMessage(**_fields_of(msg), batch_id=batch_id)

    def _joining(
        self, batches: Iterator[pa.RecordBatch], marker: dict[str, str]
    ) -> Iterator[pa.RecordBatch]:
        """``batches``, joining the instant before the first non-empty one goes on."""
        joined = False
        for b in batches:
            if not joined and b.num_rows:
                # the inflight file holds the writer schema, no workload profile: each task
                # tags only its own rows, so no one knows the micro-batch's profile before
                # files are written (markers name each file before it is written)
                self.job.client.start(
                    self.job.arrow_schema,
                    instant=self.instant,
                    rollback_failed=False,
                    extra_metadata=marker,
                    withdrawn=self._aborted_since_planned,
                )
                joined = True
            yield b

    def _aborted_since_planned(self) -> bool:
        """Whether the driver aborted a micro-batch of this writer since this one was planned
        (then it was this one: the tasks of an aborted batch that Spark has not stopped yet)."""
        return self.sink.latest_abort() != self.planned_after_abort

    # -- driver ----------------------------------------------------------------------------------
    def commit(self, messages: Sequence[Any], batchId: int) -> None:
        """Publish the micro-batch's instant with its batch id, unless already committed.

        Raises:
            WriteError: a task failed (``None`` message), or the messages disagree on the
                instant or the batch; nothing is published and Spark calls :meth:`abort`.
        """
        client = self.job.client
        msgs = list(messages)
        committed = self.sink.committed_batch()
        if committed is not None and batchId <= committed:
            log.warning(
                "batch %d of writer %r is already committed (up to %d): skipped",
                batchId,
                self.identifier,
                committed,
            )
            self.sink.roll_back(self._written_instants(msgs))
            return
        for i, m in enumerate(msgs):
            if not isinstance(m, HudiStreamCommitMessage):
                raise WriteError(f"batch {batchId}: no commit message from Spark partition {i}")
            if m.batch_id != batchId:
                raise WriteError(f"batch {batchId}: partition {i} wrote batch {m.batch_id}")
            if m.skipped:
                raise WriteError(
                    f"batch {batchId}: a task found it committed, but the table's latest batch "
                    f"for writer {self.identifier!r} is {committed}"
                )
        instants = {m.instant for m in msgs}
        if len(instants) > 1:
            raise WriteError(f"batch {batchId}: tasks wrote different instants {sorted(instants)}")
        if not instants:
            return
        instant = instants.pop()
        assert client.state is not None
        if not getattr(client, "multi_writer", False):
            # earlier attempts that crashed before their commit (Hudi's eager rollback of a
            # single writer; with several writers the lazy, heartbeat-based policy applies);
            # refused while another single writer's write is alive
            client.rollback_failed_before(instant)
        # listed again: the rollback above and other attempts of this batch changed the table
        if not self.sink.on_timeline(instant):
            if any(m.statuses for m in msgs):
                raise WriteError(f"batch {batchId}: instant {instant} is gone (rolled back?)")
            log.info(
                "batch %d of writer %r had no rows: nothing committed", batchId, self.identifier
            )
            return
        self.publish(instant, msgs, batchId)

    def publish(
        self, instant: str, messages: Sequence[HudiStreamCommitMessage], batch_id: int
    ) -> None:
        """The commit point of micro-batch ``batch_id``: publish ``instant`` with the batch id
        as its streaming checkpoint (then the post-commit table services run).

        Called by :meth:`commit` once the messages are checked and the instant is pending.
        A subclass may wrap it to observe the commit -- the crash tests stop the process just
        before and after it, the streaming benchmark times it.
        """
        self.job.commit(instant, list(messages), self.sink.checkpoint(batch_id))

    def abort(self, messages: Sequence[Any], batchId: int) -> None:
        """Record the abort, then roll back the micro-batch's pending instant; a completed one
        is left alone."""
        # first: a task that creates the instant's files after the listing below sees it
        self.sink.record_abort(batchId)
        instants = self._written_instants(list(messages))
        instants.update(self.sink.pending_instants_of(batchId))
        self.sink.roll_back(instants)

    def _written_instants(self, msgs: list[Any]) -> set[str]:
        return {
            m.instant
            for m in msgs
            if isinstance(m, HudiCommitMessage) and not getattr(m, "skipped", False)
        }


#: the streaming sink's state indexes of this Python worker, by table base URI
_WORKER_STATES: dict[str, StateIndex] = {}


def worker_state_lookup(job: WriteJob) -> Lookup | None:
    """The state index lookup of this Python worker for the job's table, or None when
    ``hudi_py.streaming.state.index`` is off (a BUCKET table with it on is refused by
    :meth:`HudiStreamWriter.create`).

    Spark reuses Python workers across tasks and micro-batches (``spark.python.worker.reuse``),
    so a module-level state outlives one task: it is bootstrapped by the first task that
    touches a partition in this worker and then only reads the file groups that changed since
    (:class:`~hudi_ds.index.state.StateIndex` compares the slices of every micro-batch's plan
    with what it read: the other tasks' and other writers' commits are read in, replaced file
    groups dropped). The driver never sees rows: nothing is learnt there.
    """
    if not opt.get(job.connector, SparkConfig.STREAMING_STATE_INDEX):
        return None
    key = job.client.storage.base_uri
    state = _WORKER_STATES.get(key)
    if state is None:
        state = _WORKER_STATES[key] = StateIndex()
    return state.lookup


def _fields_of(msg: HudiCommitMessage) -> dict[str, Any]:
    """The fields of a batch commit message (WriteStatuses kept as they are)."""
    return {f.name: getattr(msg, f.name) for f in fields(HudiCommitMessage)}


def _rows_to_batches(rows: Iterator[Any], job: WriteJob) -> Iterator[pa.RecordBatch]:
    """pyspark 4.0's stream writer gets Rows: chunks of them as Arrow batches."""
    chunk: list[dict[str, Any]] = []
    for r in rows:
        chunk.append(r.asDict(recursive=True))
        if len(chunk) >= ROW_CHUNK:
            yield pa.RecordBatch.from_pylist(chunk, schema=job.arrow_schema)
            chunk = []
    if chunk:
        yield pa.RecordBatch.from_pylist(chunk, schema=job.arrow_schema)
