"""Compaction on Spark: the operations of a compaction plan run as Spark tasks.

The driver schedules (optionally) and prepares the job exactly as
:func:`hudi_ds.services.compaction.run_compaction` does; each file slice of the plan becomes one
task that merges the slice and writes its new base file
(:func:`~hudi_ds.services.compaction_execute.execute_operation`); the driver collects the write
stats and completes ``C.commit``. A failed task is retried by Spark (its write token carries the
compaction attempt and the task attempt, and files of failed task attempts are deleted at
completion); a failed job rolls the
attempt back and leaves the compaction pending for the next run.

::

    from hudi_ds.spark.compaction import compact
    results = compact(spark, "/data/trips", schedule=True)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pyspark import TaskContext

from hudi_ds.services.base import ServiceContext
from hudi_ds.services.compaction import run_compaction, schedule_compaction
from hudi_ds.services.compaction_execute import (
    CompactionJob,
    CompactionResult,
    attempt_token,
    execute_operation,
)
from hudi_ds.timeline.metadata import WriteStat

__all__ = ["compact", "spark_executor"]


def _run_task(job: CompactionJob, index: int) -> WriteStat:
    ctx = TaskContext.get()
    if ctx is None:  # pragma: no cover - local fallback
        return execute_operation(job, index)
    # the compaction attempt in the middle: the completion then deletes the files of failed
    # task attempts of its own attempt only (CompactionAttempt.owns)
    return execute_operation(job, index, attempt_token(job, ctx.partitionId(), ctx.taskAttemptId()))


def spark_executor(spark: Any, parallelism: int | None = None) -> Any:
    """An executor for :func:`run_compaction` that runs each operation as one Spark task."""

    def run(job: CompactionJob) -> list[WriteStat]:
        n = len(job.operations)
        if n == 0:
            return []
        sc = spark.sparkContext
        slices = max(1, min(n, parallelism or sc.defaultParallelism * 4))
        return list(sc.parallelize(range(n), slices).map(lambda i: _run_task(job, i)).collect())

    return run


def compact(
    spark: Any,
    path: str,
    instant: str | None = None,
    options: Mapping[str, Any] | None = None,
    *,
    schedule: bool = False,
    parallelism: int | None = None,
) -> list[CompactionResult]:
    """Run pending compactions of the table at ``path`` (or ``instant``) on Spark.

    Args:
        spark: the SparkSession.
        path: table base path (visible to the executors).
        instant: one pending compaction (default: all, oldest first).
        options: ``hoodie.*`` options (strategy, codec...).
        schedule: schedule a new compaction first.
        parallelism: number of Spark partitions (default: up to 4 per default parallelism).

    Returns:
        One result per completed compaction.
    """
    ctx = ServiceContext.open(path, options)
    if schedule:
        scheduled = schedule_compaction(ctx)
        if instant is None and scheduled is None and not ctx.timeline().pending_compactions():
            return []
    return run_compaction(ctx, instant, executor=spark_executor(spark, parallelism))
