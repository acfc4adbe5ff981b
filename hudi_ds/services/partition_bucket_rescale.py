"""Rescaling a partition-level bucket index: new rules, and the partitions whose bucket count
they change rewritten into it (Hudi 1.1, RFC-89).

Java's ``partition_bucket_index_manager`` Spark procedure (``PartitionBucketIndexManager``,
``overwrite`` / ``add`` / ``dry_run``; its writes by ``DatasetBucketRescaleCommitActionExecutor``):

1. the bucket count of every partition under the latest committed rules (a table without
   rules: its one count) and under the new ones (``bucket_number`` the new default, else the
   old rules' default); the partitions whose count differs are rescaled (``dry_run`` stops
   here and tells them);
2. one ``replacecommit`` with operation type ``BUCKET_RESCALE``: its requested instant, then
   the new rules as that instant's hashing config (``preExecute``), then the latest records of
   the rescaled partitions (base and logs merged) written into new file groups of their new
   buckets, replacing every live file group of those partitions (an insert overwrite); the
   other partitions' files are not touched;
3. configs older than the active timeline are archived (``archiveHashingConfigIfNecessary``).

A failure before the commit leaves a pending replacecommit whose config is not committed
(writers skip it); its rollback deletes the config, then the instant. As Java requires,
writers should be stopped during a rescale: a writer started before it keeps the old rules.
A commit into a rescaled partition that lands while the rescale runs is detected before
the rescale commits and the rescale is rolled back (its rows would be stale).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from hudi_ds.config import Options, WriteConfig
from hudi_ds.errors import CommitConflictError, ConfigError
from hudi_ds.index.core import Index, IndexType, table_bucket_layout
from hudi_ds.index.partition_bucket import (
    HashingConfig,
    RuleType,
    archive_configs,
    save_config,
)
from hudi_ds.schema.meta import META_FIELDS
from hudi_ds.storage import Storage
from hudi_ds.table.fs_view import FileSystemView
from hudi_ds.table.table import ReadableTable
from hudi_ds.write.client import WriteClient
from hudi_ds.write.operation import BUCKET_RESCALE
from hudi_ds.write.task_writer import CHUNK_BYTES, coalesced

log = logging.getLogger("hudi_ds.services")


@dataclass(frozen=True)
class RescalePlan:
    """What a rescale changes.

    Attributes:
        rules: the new rules (their instant is the rescale's once written).
        changes: partition -> (bucket count now, bucket count under the new rules), for
            every partition whose count changes (sorted by partition).
        rewritten: the changed partitions that hold data (their file groups are rewritten).
    """

    rules: HashingConfig
    changes: dict[str, tuple[int, int]]
    rewritten: tuple[str, ...]


@dataclass(frozen=True)
class RescaleResult:
    """A rescale's plan, its replacecommit (None: a dry run) and the configs it archived."""

    plan: RescalePlan
    instant: str | None
    archived: tuple[str, ...] = ()


def plan_rescale(
    table: ReadableTable,
    expressions: str,
    default_bucket_number: int | None = None,
    rule: str = RuleType.REGEX.value,
) -> RescalePlan:
    """The partitions whose bucket count the new rules change (Java ``handleOverwrite``'s
    ``getDifferentPartitions``).

    Args:
        expressions: the new ``hoodie.bucket.index.partition.expressions``.
        default_bucket_number: the new default count (None: the current default). A table
            without rules keeps its count as the default (change it by a second rescale).

    Raises:
        ConfigError: invalid rules, not a SIMPLE bucket-index table, or an upgrade changing
            the default count.
    """
    layout = table_bucket_layout(table.state)
    if layout is None or layout.consistent:
        what = "consistent-hashing" if layout is not None else "non-bucket"
        raise ConfigError(
            f"{table.path}: a bucket rescale is for SIMPLE bucket-index tables, not a {what} one"
        )
    old = layout.rules
    default = layout.num_buckets if default_bucket_number is None else default_bucket_number
    if old is None and default != layout.num_buckets:
        raise ConfigError(
            f"hoodie.bucket.index.num.buckets={default}: the table at {table.path} has "
            f"{layout.num_buckets} buckets in every partition, which stays the default of its "
            "first rules; change the default by a second rescale"
        )
    new = HashingConfig(expressions, default, RuleType.parse(rule))
    partitions = sorted(FileSystemView(table.storage, table.config).partitions())
    live = {s.partition_path for s in table.file_slices(partitions=partitions)}
    changes: dict[str, tuple[int, int]] = {}
    for p in partitions:
        before = old.num_buckets(p) if old is not None else layout.num_buckets
        after = new.num_buckets(p)
        if before != after:
            changes[p] = (before, after)
    return RescalePlan(new, changes, tuple(p for p in changes if p in live))


def rescale_buckets(
    path: str | Storage,
    expressions: str,
    *,
    default_bucket_number: int | None = None,
    rule: str = RuleType.REGEX.value,
    dry_run: bool = False,
    options: Mapping[str, Any] | Options | None = None,
) -> RescaleResult:
    """Give the table at ``path`` new partition-level bucket rules, rewriting the partitions
    whose bucket count changes (see the module doc). An existing SIMPLE bucket table without
    rules is upgraded to them.

    Args:
        expressions: the new rules (``regex,buckets;...``, replacing the current ones).
        default_bucket_number: the new default count (None: keep it).
        rule: ``hoodie.bucket.index.partition.rule.type``.
        dry_run: only plan (nothing is written).
        options: write options of the rewrite (e.g. lock and metadata-table settings);
            ``hoodie.datasource.write.operation`` and the bucket options are the rescale's.

    Returns:
        The plan and, unless a dry run, the completed replacecommit's instant time.

    Raises:
        ConfigError: invalid rules or options, a table that is not a SIMPLE bucket table.
        CommitConflictError: a commit into a rescaled partition completed meanwhile (the
            rescale is rolled back; run it again once writers are stopped).
    """
    storage = path if isinstance(path, Storage) else Storage(str(path))
    table = ReadableTable(storage)
    plan = plan_rescale(table, expressions, default_bucket_number, rule)
    if dry_run:
        return RescaleResult(plan, None)
    client = _rescale_client(storage, plan, options)
    rows = _rows_of(table, set(plan.rewritten))
    schema = _data_schema(table)
    instant = client.start(schema)
    try:
        save_config(storage, plan.rules.at(instant))
        task = client.task_writer(instant)
        for chunk in coalesced(
            rows, max_bytes=min(CHUNK_BYTES, task.options.memory.task_bytes // 8)
        ):
            task.write(chunk)
        statuses = task.close()
        _refuse_concurrent_commits(client, instant, set(plan.changes))
        client.commit(instant, statuses)
    except BaseException as e:
        client.abort_failed(instant, e)
    state = client.table_state()
    archived = archive_configs(storage, state.reload_timeline())
    log.info(
        "rescaled %d partition(s) of %s in %s (rules %r, default %d)",
        len(plan.rewritten),
        storage.base_uri,
        instant,
        plan.rules.expressions,
        plan.rules.default_bucket_number,
    )
    return RescaleResult(plan, instant, tuple(archived))


def _rescale_client(
    storage: Storage, plan: RescalePlan, options: Mapping[str, Any] | Options | None
) -> WriteClient:
    """A write client whose writes are the rescale's: operation BUCKET_RESCALE with the new
    rules (the table's own are the old ones until its replacecommit completes)."""
    opts = dict(Options.of(options).raw)
    for p in (
        WriteConfig.OPERATION,
        WriteConfig.BUCKET_PARTITION_EXPRESSIONS,
        WriteConfig.BUCKET_PARTITION_RULE_TYPE,
        WriteConfig.NUM_BUCKETS,
    ):
        if any(k.lower() in opts for k in p.all_keys()):
            raise ConfigError(
                f"option '{p.key}' is the rescale's own: pass the rescale's arguments"
            )
    opts[WriteConfig.OPERATION.key] = "insert_overwrite"
    client = WriteClient(storage, opts)
    r = client.resolved
    if r.index.type is not IndexType.BUCKET or r.index.bucket is None:
        raise ConfigError(f"{storage.base_uri}: not a bucket-index table")
    layout = dataclasses.replace(
        r.index.bucket, num_buckets=plan.rules.default_bucket_number, rules=plan.rules
    )
    client.resolved = dataclasses.replace(
        r, operation=BUCKET_RESCALE, index=Index(IndexType.BUCKET, layout)
    )
    return client


def _data_schema(table: ReadableTable) -> pa.Schema:
    schema = table.schema
    return pa.schema([f for f in schema if f.name not in META_FIELDS])


def _rows_of(table: ReadableTable, partitions: set[str]) -> Iterator[pa.RecordBatch]:
    """The latest records of ``partitions`` (base files and logs merged), without the meta
    columns (the rewrite gives them anew), batch by batch."""
    plan = table.plan_read()
    slices = [s for s in plan.slices if s.partition_path in partitions]
    schema = _data_schema(table)
    for batch in table.read_plan_slices(plan, slices):
        yield pa.RecordBatch.from_arrays([batch.column(f.name) for f in schema], schema=schema)


def _refuse_concurrent_commits(client: WriteClient, instant: str, partitions: set[str]) -> None:
    """Raise when a commit completed since ``instant`` started wrote into ``partitions``: the
    rescale read their rows before it, so its replacecommit would drop that write."""
    state = client.table_state()
    tl = state.reload_timeline()
    seen = client.plan(instant).visibility.instants
    for other in tl.commits():
        if other.requested_time in seen or other.requested_time == instant:
            continue
        md = tl.read_commit_metadata(other)
        touched = partitions & set(md.partition_to_write_stats)
        if touched:
            raise CommitConflictError(
                f"bucket rescale {instant}: {other.action} {other.requested_time} wrote into "
                f"the rescaled partition(s) {sorted(touched)} meanwhile; stop the table's "
                "writers and rescale again"
            )
