"""The task writer: one task's rows routed to per-file-group handles under a memory budget.

A task (the embedded write, or one Spark task) handles each input batch in three steps:

* :meth:`TaskWriter.prepare` -- record keys, partition paths and the meta columns, at once;
* :meth:`TaskWriter.tag` -- the file group of every row, by the task's
  :class:`~hudi_ds.write.tagger.Tagger` (Java ``HoodieIndex.tagLocation`` and the
  ``UpsertPartitioner``'s bucket assignment: the bucket index's hash of the key; or, with
  SIMPLE / BLOOM and their global variants, an index lookup for the updates and small files,
  then new file groups for the inserts);
* :meth:`TaskWriter.route` -- zero-copy slices of the batch to one handle per file group (Java
  ``HoodieAppendHandle`` on MERGE_ON_READ, ``HoodieMergeHandle`` on COPY_ON_WRITE and for the
  small files and new file groups of MERGE_ON_READ under a non-bucket index or, on a version
  8+ table with a metadata table, of new buckets; a staging handle
  when several tasks write one COW file group, or one insert slot of a non-bucket index).

The tagging lives in :mod:`hudi_ds.write.tagger` (where a record goes, decided before anything
is written); this module keeps what Java's write handles and their executor do with the
tagged records. Handles flush when they, or the task as a whole, pass their share of the
budget; :meth:`TaskWriter.close` returns their WriteStatuses for the driver's commit.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TypeVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hudi_ds.errors import SchemaError
from hudi_ds.index.lookup import Lookup
from hudi_ds.keygen import KeyField, partition_paths, record_keys
from hudi_ds.layout.bloom_filter import key_buffers
from hudi_ds.layout.naming import PARTITION_METADATA_FILE
from hudi_ds.layout.parquet import dictionary_columns_of
from hudi_ds.schema.evolution import conform_table
from hudi_ds.schema.meta import (
    COMMIT_TIME_METADATA_FIELD,
    DML_DELETE_FIELD,
    FILENAME_METADATA_FIELD,
    IS_DELETED_FIELD,
    META_FIELDS,
    OPERATION_METADATA_FIELD,
    PARTITION_PATH_METADATA_FIELD,
    RECORD_KEY_METADATA_FIELD,
)
from hudi_ds.schema.write import conform_partial, missing_field_message
from hudi_ds.storage import Storage
from hudi_ds.table.fs_view import FileSystemView
from hudi_ds.table_config import TableType
from hudi_ds.write.append_handle import AppendHandle
from hudi_ds.write.cow import close_merge_handles, in_parallel, stage_handle
from hudi_ds.write.handles import delete_keys, delete_schema
from hudi_ds.write.merge_handle import MergeHandle
from hudi_ds.write.operation import Rows
from hudi_ds.write.plan import BucketFiles, WritePlan
from hudi_ds.write.tagger import Tagged, Tagger
from hudi_ds.write.workload import WorkloadProfile
from hudi_ds.write.write_status import WriteStatus

#: a task writer takes its input in tables of about this many rows (or bytes), not in the
#: caller's batches (Spark's are 10,000 rows; a pyarrow table may hold thousands of small
#: chunks): the costs of a call (keys, index lookup, tagging, routing) are mostly fixed, and a
#: global index checks each call's keys against every key the task inserted before it
CHUNK_ROWS = 64 * 1024
CHUNK_BYTES = 32 << 20


def coalesced(
    batches: Iterable[pa.RecordBatch], max_rows: int = CHUNK_ROWS, max_bytes: int = CHUNK_BYTES
) -> Iterator[pa.Table]:
    """``batches`` (of one schema) joined into tables of about ``max_rows`` rows or
    ``max_bytes`` bytes, in order, empty batches dropped."""
    pending: list[pa.RecordBatch] = []
    rows = size = 0
    for b in batches:
        if b.num_rows == 0:
            continue
        pending.append(b)
        rows += b.num_rows
        size += b.nbytes
        if rows >= max_rows or size >= max_bytes:
            yield pa.Table.from_batches(pending).combine_chunks()
            pending, rows, size = [], 0, 0
    if pending:
        yield pa.Table.from_batches(pending).combine_chunks()


@dataclass(frozen=True)
class Prepared:
    """One input batch, prepared (:meth:`TaskWriter.prepare`).

    Attributes:
        data: the records to write, meta columns set (``_hoodie_file_name`` aside).
        deletes: the keys to delete (``_hoodie_record_key``, ``_hoodie_partition_path``, the
            ordering value; null ordering: a natural-order delete).
    """

    data: pa.Table
    deletes: pa.Table


#: meta columns of prepared rows that hold one value in every row (:meth:`TaskWriter.prepare`:
#: the instant, and the file name the handles set)
_CONSTANT_COLUMNS = (COMMIT_TIME_METADATA_FIELD, FILENAME_METADATA_FIELD)


class TaskWriter:
    """Routes one task's rows to per-file-group handles under a memory budget.

    Args:
        exclusive: the only writer task of the instant (the embedded API); False for the tasks
            of a Spark write (see :meth:`Tagger.tag <hudi_ds.write.tagger.Tagger.tag>` for what
            non-exclusive tasks may not do).
        lookup: the index lookup of a non-bucket index (default: the table's,
            :meth:`hudi_ds.index.Index.lookup`); a long-lived writer passes its state index.
        track_keys: the merge handles report the keys each new base file adds and drops
            (:attr:`HandleContext.track_keys <hudi_ds.write.handles.HandleContext.track_keys>`).
        view: a listing of the table's partitions the driver made for this instant (see
            :class:`~hudi_ds.write.plan.BucketFiles`); None: the task lists what it needs.

    Attributes:
        tagger: the task's :class:`~hudi_ds.write.tagger.Tagger` (its tagging state).
    """

    def __init__(
        self,
        storage: Storage,
        plan: WritePlan,
        token: str,
        task_partition_id: int,
        exclusive: bool,
        lookup: Lookup | None = None,
        track_keys: bool = False,
        view: FileSystemView | None = None,
    ) -> None:
        self.storage = storage
        self.plan = plan
        self.token = token
        self.task_partition_id = int(task_partition_id)
        self.exclusive = exclusive
        self.ctx = plan.handle_context(storage, token)
        if track_keys:
            self.ctx = dataclasses.replace(self.ctx, track_keys=True)
        self.handles: dict[tuple[str, str], AppendHandle | MergeHandle] = {}
        self.files = BucketFiles(storage, plan, view)
        self._record_index = 0
        self._seen_partitions: set[str] = set()
        self.rows_in = 0
        self.flushes = 0
        self.options = plan.options
        data_schema = pa.schema([f for f in plan.schema if f.name not in META_FIELDS])
        self._data_schema = data_schema
        ordering = plan.options.merge.ordering_field
        otype = (
            data_schema.field(ordering).type
            if ordering and data_schema.get_field_index(ordering) >= 0
            else pa.null()
        )
        self._delete_schema = delete_schema(otype)
        self.tagger = Tagger(plan, self.ctx, self.files, exclusive, lookup, self._appends_to_log)

    # -- input --------------------------------------------------------------------------------
    def write(self, batch: pa.RecordBatch | pa.Table) -> None:
        """Route the rows of ``batch`` to their file groups' handles
        (``route(tag(prepare(batch)))``)."""
        self.route(self.tag(self.prepare(batch)))

    def prepare(self, batch: pa.RecordBatch | pa.Table) -> Prepared:
        """Record keys, partition paths and meta columns of ``batch``, checked.

        Raises:
            SchemaError: a key or partition column is missing, a key is null or empty, an
                ordering value is NaN (nothing is written).
        """
        table = pa.Table.from_batches([batch]) if isinstance(batch, pa.RecordBatch) else batch
        empty = Prepared(self.plan.schema.empty_table(), self._delete_schema.empty_table())
        if table.num_rows == 0:
            return empty
        self.rows_in += table.num_rows
        o = self.options
        rows = self.plan.operation.rows
        if rows is Rows.PARTITIONS:
            k = o.keys
            parts = partition_paths(
                table,
                list(k.partition_fields),
                k.hive_style,
                k.url_encode,
                k.timestamp,
                k.timestamp_fields,
            )
            self._seen_partitions.update(pc.unique(parts).to_pylist())
            return empty
        if self.plan.operation.prepped:
            return Prepared(self.plan.schema.empty_table(), self._prepped_deletes(table))
        drop = [c for c in table.column_names if c in META_FIELDS or c == OPERATION_METADATA_FIELD]
        if drop:
            table = table.drop_columns(drop)
        if rows is Rows.DELETES:
            data, deletes = self._prepare_deletes(table)
        else:
            data, deletes = self._prepare_upserts(table)
        if self.ctx.dictionary_columns is None and data.num_rows:
            self.ctx = dataclasses.replace(
                self.ctx, dictionary_columns=tuple(dictionary_columns_of(data.slice(0, 4096)))
            )
        return Prepared(data, deletes)

    def _check_keys(self, table: pa.Table) -> None:
        for c in self.options.keys.record_key_fields:
            if c not in table.column_names:
                raise SchemaError(missing_field_message(c, KeyField.RECORD_KEY, table.column_names))
            col = table.column(c)
            if col.null_count:
                raise SchemaError(
                    f"{KeyField.RECORD_KEY} '{c}' holds {col.null_count} null value(s)"
                )
            if not self.options.keys.complex_key and (
                pa.types.is_string(col.type) or pa.types.is_large_string(col.type)
            ):
                empty = pc.sum(pc.equal(col, "")).as_py() or 0
                if empty:
                    raise SchemaError(f"{KeyField.RECORD_KEY} '{c}' holds {empty} empty value(s)")
        for c in self.options.keys.partition_fields:
            if c not in table.column_names:
                raise SchemaError(
                    missing_field_message(c, KeyField.PARTITION_PATH, table.column_names)
                )

    def _check_ordering(self, table: pa.Table, keys: pa.Array) -> None:
        """Refuse NaN ordering values.

        Java's ``Double.compareTo`` (how Hudi's payloads and mergers compare ordering values,
        e.g. DefaultHoodieRecordPayload) sorts NaN above every number, so a NaN would silently
        win every later merge of its key; a NaN is bad input, refused naming a key.
        """
        field = self.options.merge.ordering_field
        if not field or field not in table.column_names:
            return
        col = table.column(field)
        if not pa.types.is_floating(col.type):
            return
        nan = pc.fill_null(pc.is_nan(col), False)
        if pc.any(nan).as_py():
            key = keys.filter(nan.combine_chunks())[0].as_py()
            count = pc.sum(nan).as_py()
            raise SchemaError(
                f"ordering column '{field}' holds {count} NaN value(s) (e.g. record key "
                f"{key!r}); NaN has no order (hoodie.datasource.write.precombine.field)"
            )

    def _keys_and_partitions(
        self, table: pa.Table, generated: pa.Array | None = None
    ) -> tuple[pa.Array, pa.Array]:
        """Record keys and partition paths of ``table``; ``generated``: the keys of an insert
        into a table with Hudi's auto-generated keys (no record key fields)."""
        p = self.options.keys
        if not p.record_key_fields and generated is not None:
            keys = generated
        else:
            keys = record_keys(table, list(p.record_key_fields), p.complex_key)
        # the keys' matching only when some key holds a ',' (keys seldom do)
        if not p.complex_key and _holds_byte(keys, ","):
            bad = pc.and_(pc.match_substring(keys, ","), pc.match_substring(keys, ":"))
            if pc.any(bad).as_py():
                raise SchemaError(
                    f"record key {keys.filter(bad)[0].as_py()!r} in column "
                    f"'{p.record_key_fields[0]}' contains both ',' and ':', which Hudi's bucket "
                    "index would parse as a complex key"
                )
        parts = partition_paths(
            table,
            list(p.partition_fields),
            p.hive_style,
            p.url_encode,
            p.timestamp,
            p.timestamp_fields,
        )
        return keys, parts

    def _prepare_upserts(self, table: pa.Table) -> tuple[pa.Table, pa.Table]:
        p = self.plan
        self._check_keys(table)
        dml = None  # the rows a DML statement deletes (DML_DELETE_FIELD), whatever their order
        if DML_DELETE_FIELD in table.column_names:
            flag = table.column(DML_DELETE_FIELD).combine_chunks().fill_null(False)
            table = table.drop_columns([DML_DELETE_FIELD])
            if pc.any(flag).as_py():
                dml = np.asarray(flag, dtype=bool)
        if p.partial_columns is not None:
            table = conform_partial(table, self._data_schema, p.partial_columns, narrowing=True)
        else:
            table = conform_table(table, self._data_schema)
        n = table.num_rows
        start = self._record_index
        seqno = pc.binary_join_element_wise(
            f"{p.instant}_{self.task_partition_id}_",
            pa.array(np.arange(start, start + n, dtype=np.int64)).cast(pa.string()),
            "",
        )
        # a table with Hudi's auto-generated keys: an insert's keys are its sequence ids
        # (Java AutoRecordGenWrapperKeyGenerator: generateSequenceId(instant, partitionId,
        # rowId++), as _hoodie_commit_seqno)
        keys, parts = self._keys_and_partitions(table, seqno)
        self._check_ordering(table, keys)
        self._record_index += n
        deleted = None
        if IS_DELETED_FIELD in table.column_names:
            flag = table.column(IS_DELETED_FIELD).combine_chunks().fill_null(False)
            if pc.any(flag).as_py():
                deleted = np.asarray(flag, dtype=bool)
        meta = [
            pa.repeat(pa.scalar(p.instant, pa.string()), n),
            seqno,
            keys,
            parts,
            pa.repeat(pa.scalar("", pa.string()), n),
        ]
        ordering = self.options.merge.ordering_field
        full = pa.Table.from_arrays(
            meta + [table.column(i) for i in range(table.num_columns)], schema=p.schema
        )
        if deleted is None and dml is None:
            return full, self._delete_schema.empty_table()
        flagged = np.zeros(n, dtype=bool) if deleted is None else deleted
        if dml is not None:
            flagged = flagged & ~dml
        idx_del = pa.array(np.flatnonzero(flagged))
        dels = delete_keys(
            self._delete_schema,
            keys.take(idx_del),
            parts.take(idx_del),
            table.column(ordering).take(idx_del) if ordering else None,
        )
        if dml is not None:
            idx_dml = pa.array(np.flatnonzero(dml))
            # no ordering value: the delete applies over any stored version (as the delete
            # operation's, see _prepare_deletes)
            plain = delete_keys(self._delete_schema, keys.take(idx_dml), parts.take(idx_dml))
            dels = pa.concat_tables([dels, plain.cast(dels.schema)])
            flagged = flagged | dml
        # (take_rows: the record key column that is the key field stays one column, taken
        # once here and once again by route)
        kept = take_rows(full, np.flatnonzero(~flagged), self.threads, _CONSTANT_COLUMNS)
        return kept, dels

    def _prepare_deletes(self, table: pa.Table) -> tuple[pa.Table, pa.Table]:
        p = self.plan
        self._check_keys(table)
        keys, parts = self._keys_and_partitions(table)
        # The delete operation deletes keys, whatever ordering values the rows carry, as in
        # Hudi 0.15 and 1.x: HoodieSparkSqlWriter (case DELETE) keeps only the HoodieKey of
        # each row (HoodieCreateRecordUtils.getHoodieKeyAndMaybeLocationFromAvroRecord), and
        # HoodieDeleteHelper.execute writes EmptyHoodieRecordPayload records whose ordering
        # value is the default 0, "natural order": the log reader applies such a delete over
        # any record (processNextDeletedRecord / deltaMergeDeleteRecord:
        # `!deleteOrderingVal.equals(0) && ...`). A delete that must lose to newer versions is
        # an upsert with `_hoodie_is_deleted` = true.
        dels = delete_keys(self._delete_schema, keys, parts)
        return p.schema.empty_table(), dels

    def _prepped_deletes(self, table: pa.Table) -> pa.Table:
        """The keys of a prepped delete: the rows' own ``_hoodie_record_key`` and
        ``_hoodie_partition_path`` (no key generator runs; Java
        ``HoodieCreateRecordUtils`` reads them from the meta columns when
        ``_hoodie.spark.sql.writes.prepped`` is set), with the default ordering value of a
        delete (see :meth:`_prepare_deletes`).

        Raises:
            SchemaError: a meta column is missing, or a key or partition path is null or an
                empty key (nothing is written).
        """
        cols = []
        for c in (RECORD_KEY_METADATA_FIELD, PARTITION_PATH_METADATA_FIELD):
            if c not in table.column_names:
                raise SchemaError(f"{self.plan.operation.name}: the input lacks column '{c}'")
            col = table.column(c)
            if col.null_count:
                raise SchemaError(
                    f"{self.plan.operation.name}: column '{c}' holds {col.null_count} null "
                    "value(s); pass the rows as read from the table"
                )
            cols.append(col.combine_chunks().cast(pa.string()))
        empty = pc.sum(pc.equal(cols[0], "")).as_py() or 0
        if empty:
            raise SchemaError(
                f"{self.plan.operation.name}: column '{RECORD_KEY_METADATA_FIELD}' holds "
                f"{empty} empty value(s)"
            )
        return delete_keys(self._delete_schema, cols[0], cols[1])

    # -- tagging ------------------------------------------------------------------------------
    def tag(self, prepared: Prepared) -> Tagged:
        """The file group of every row of ``prepared``, and the task's workload counted
        (:meth:`Tagger.tag <hudi_ds.write.tagger.Tagger.tag>`: the bucket of the key's hash,
        or an index lookup and the insert assignment)."""
        return self.tagger.tag(prepared.data, prepared.deletes)

    @property
    def workload(self) -> WorkloadProfile:
        """The task's :class:`~hudi_ds.write.workload.WorkloadProfile` (filled by :meth:`tag`)."""
        return self.tagger.workload

    def _appends_to_log(self, partition: str, file_id: str) -> bool:
        """This task's updates of the file group already go to a log file (an append handle)."""
        return isinstance(self.handles.get((partition, file_id)), AppendHandle)

    # -- routing ------------------------------------------------------------------------------
    def route(self, tagged: Tagged) -> None:
        """Hand the rows of ``tagged`` to their file groups' handles, then keep the task's
        buffers within its memory budget."""
        targets = tagged.targets
        opened = len(self.handles)
        for rows, tg, is_delete in (
            (tagged.data, tagged.data_targets, False),
            (tagged.deletes, tagged.delete_targets, True),
        ):
            if rows.num_rows == 0:
                continue
            # numpy's stable sort is a radix sort for 16-bit keys (the same order, faster)
            small = len(targets) <= np.iinfo(np.int16).max
            order = np.argsort(tg.astype(np.int16) if small else tg, kind="stable")
            sorted_t = tg[order]
            # one take for the whole batch (its columns on the task's threads), then zero-copy
            # slices per file group
            rows = take_rows(rows, order, self.threads, _CONSTANT_COLUMNS if not is_delete else ())
            starts = np.concatenate([[0], np.flatnonzero(np.diff(sorted_t)) + 1])
            ends = np.append(starts[1:], len(order))
            for a, b in zip(starts.tolist(), ends.tolist(), strict=True):
                partition, file_id = targets[int(sorted_t[a])]
                self._seen_partitions.add(partition)
                handle = self._handle(partition, file_id)
                sl = rows.slice(a, b - a)
                if is_delete:
                    handle.write(None, sl)
                else:
                    handle.write(sl, None)
        # the files of the handles this batch opened, marked at once (one put for all: a
        # handle marks its file itself only if it was not marked here)
        fresh = list(self.handles.values())[opened:]
        self.ctx.mark([h.marker() for h in fresh if isinstance(h, (AppendHandle, MergeHandle))])
        self._enforce_budget()

    def _handle(self, partition: str, file_id: str) -> AppendHandle | MergeHandle:
        key = (partition, file_id)
        h = self.handles.get(key)
        if h is not None:
            return h
        p = self.plan
        children = self.tagger.children
        resize = children.instants.get(key) if children is not None else None
        if resize is not None:
            # a copy into a child of a pending resize: a log file of the slice the resize's
            # base file opens, named after the resize on every table version (readers see it
            # once the resize completes: hudi_ds.index.pending_resize)
            version = self.files.next_log_version(partition, file_id, resize)
            h = AppendHandle(self.ctx, partition, file_id, resize, version, None, False)
            self.handles[key] = h
            return h
        existing = self.files.slice_of(partition, file_id) if p.operation.merges_existing else None
        if p.table_type is TableType.COPY_ON_WRITE and self.exclusive:
            h = MergeHandle(self.ctx, partition, file_id, existing.base_file if existing else None)
        elif p.table_type is TableType.COPY_ON_WRITE:
            h = stage_handle(self.ctx, partition, file_id, existing)
        elif key in self.tagger.rewrites and existing is not None:
            # a MERGE_ON_READ small file (no log files) taking inserts: a new base file version,
            # as Java's BaseSparkDeltaCommitActionExecutor.handleUpdate does for small files
            # under an index that cannot index logs
            h = MergeHandle(self.ctx, partition, file_id, existing.base_file)
        elif existing is None and self.tagger.slotted:
            # an insert slot of a non-exclusive task: staged, and merged into the new file
            # group's base file at commit, like COW (write/cow.py merge_staged). Staging rather
            # than log files appended by each task (as the bucket index does for new buckets):
            # Java's SIMPLE / BLOOM indexes read base files only (canIndexLogFiles() = false)
            # until a compaction, so keys in a log-only file group would be invisible to a
            # Java writer of the table and inserted again.
            h = stage_handle(self.ctx, partition, file_id, None)
        elif existing is None and not self.tagger.bucketed:
            # a new MERGE_ON_READ file group of a non-bucket index starts with a base file
            h = MergeHandle(self.ctx, partition, file_id, None)
        elif existing is None and p.options.bucket_base_files:
            # a new bucket of a version 8+ MERGE_ON_READ table with a metadata table starts with
            # a base file (write/options.py _bucket_base_files: hudi-rs reads no log-only file
            # group there); the tasks of a Spark write stage their rows, merged at commit into
            # the bucket's one base file (write/cow.py merge_staged), as for COW
            if self.exclusive:
                h = MergeHandle(self.ctx, partition, file_id, None)
            else:
                h = stage_handle(self.ctx, partition, file_id, None)
        else:
            if existing is not None and p.table_config.timeline_layout_version >= 2:
                # table version 8+: a log file carries the instant that writes it (Java 1.x
                # HoodieAppendHandle: ``.<fileId>_<deltacommit time>.log.1_<token>``, and
                # prevCommit = that time); readers put it in the slice by its completion time
                base_instant = p.instant
                base_name = existing.base_file.name.name if existing.base_file else None
            elif existing is not None:
                base_instant = p.base_instant_of(existing)
                base_name = (
                    existing.base_file.name.name
                    if existing.base_file is not None
                    and existing.base_file.instant_time == base_instant
                    else None
                )
            else:
                base_instant, base_name = p.instant, None
            version = self.files.next_log_version(partition, file_id, base_instant)
            h = AppendHandle(
                self.ctx, partition, file_id, base_instant, version, base_name, existing is None
            )
        self.handles[key] = h
        return h

    def _enforce_budget(self) -> None:
        """Flush handles so that buffers *and* the copies a flush makes fit the task budget.

        A flush of B buffered bytes briefly needs about 2B more (the concatenated rows, the
        encoded block), and Arrow's allocator keeps some freed memory, so buffers are kept
        under a third of the budget and one handle under a sixth of it; two handles flush at
        a time (their copies: at most two thirds of the budget). Append handles flush
        log blocks; merge handles (COW) spill their rows to local disk and merge them with the
        base file at close, within their share of the budget (see ``MergeHandle``).
        """
        budget = self.options.memory.task_bytes
        per_handle = min(self.options.memory.handle_bytes, budget // 6)
        full = [h for h in self.handles.values() if h.buffered_bytes >= per_handle]
        total = sum(h.buffered_bytes for h in self.handles.values())
        total -= sum(h.buffered_bytes for h in full)
        if total > budget // 3:
            for h in sorted(self.handles.values(), key=lambda x: -x.buffered_bytes):
                if total <= budget // 6:
                    break
                if h.buffered_bytes < per_handle:
                    total -= h.buffered_bytes
                    full.append(h)
        # two flushes at a time hold about twice the copies of one: with more threads the
        # buffers' share of the budget would have to shrink accordingly
        parallel_map(lambda h: h.flush(), full, min(self.threads, 2))
        self.flushes += len(full)
        if full:
            release_unused()

    def touched_partitions(self) -> list[str]:
        """Partition paths of the rows this task has seen."""
        return sorted(self._seen_partitions)

    @property
    def buffered_bytes(self) -> int:
        return sum(h.buffered_bytes for h in self.handles.values())

    def close(self) -> list[WriteStatus]:
        """Flush and close every handle; the WriteStatuses go to the driver's commit.

        The handles close on :attr:`threads` threads (each encodes and writes its own file:
        Parquet encoding and Arrow's kernels release the GIL); COW merge handles through
        :func:`~hudi_ds.write.cow.close_merge_handles` (base files decoded one per core). The
        statuses come in the order the handles were opened, whatever the threads' timing.
        """
        self.tagger.release()  # every row is tagged: the lookups' memory goes to the merges
        handles = list(self.handles.values())
        merges = [h for h in handles if isinstance(h, MergeHandle)]
        others = [h for h in handles if not isinstance(h, MergeHandle)]
        closed: dict[int, WriteStatus | None] = {}
        closed.update(zip(map(id, merges), close_merge_handles(merges, self.threads), strict=True))
        closed.update(
            zip(
                map(id, others),
                parallel_map(lambda h: h.close(), others, self.threads),
                strict=True,
            )
        )
        self.handles.clear()
        out = [st for st in (closed[id(h)] for h in handles) if st is not None]
        # staged rows: the commit writes the metadata of the partitions its merges write into
        # (a staged slot may write nothing); once per partition
        for partition in sorted({st.partition_path for st in out if st.kind != "stage"}):
            if not self.files.partition_metadata_listed(partition):  # listed: no HEAD for it
                write_partition_metadata(self.storage, partition, self.plan.instant)
        return out

    @property
    def threads(self) -> int:
        """Threads writing the task's file groups (``write.tasks``; default: the cores)."""
        return self.options.write_threads or os.cpu_count() or 1


_T = TypeVar("_T")
_R = TypeVar("_R")


def parallel_map(fn: Callable[[_T], _R], items: Sequence[_T], threads: int) -> list[_R]:
    """``[fn(x) for x in items]`` on up to ``threads`` threads, results in ``items``' order
    (:func:`~hudi_ds.write.cow.in_parallel`: after a failure no further call starts; the
    earliest failure is raised)."""
    return in_parallel([functools.partial(fn, x) for x in items], threads)


def _holds_byte(values: pa.Array | pa.ChunkedArray, char: str) -> bool:
    """Whether some string of ``values`` holds the ASCII ``char``: one scan of the strings'
    UTF-8 bytes (no other character's encoding holds an ASCII byte), several times faster
    than ``pc.match_substring`` string by string."""
    if values.null_count:
        return pc.any(pc.match_substring(values, char)).as_py() is True
    data, offsets = key_buffers(values)
    return bool((data[int(offsets[0]) : int(offsets[-1])] == ord(char)).any())


def release_unused() -> None:
    """Give the memory Arrow's allocator keeps after the buffers a flush frees back to the OS.

    pyarrow's default pool (mimalloc) keeps freed pages for reuse, and the pages of the
    short-lived threads :func:`parallel_map` runs (whose segments stay abandoned once their
    thread ends) until a forced collection on the main thread; measured on a streamed MOR
    write, 4M rows: about 180 MB of the process's RSS after the write was such pages, while
    Arrow's live bytes were 0. Called on the writing thread after each round of flushes
    (about 4 ms a call; 52 calls in a 16M-row write).
    """
    pa.default_memory_pool().release_unused()


def _same_data(col: pa.ChunkedArray) -> tuple[object, ...]:
    """What identifies a column's data: its type and its chunks' buffers (two columns over the
    same buffers, e.g. a record key column that is the key field itself, hold the same values)."""
    return (
        col.type,
        tuple(
            (c.offset, len(c), tuple(b.address if b is not None else 0 for b in c.buffers()))
            for c in col.chunks
        ),
    )


def take_rows(
    table: pa.Table, order: np.ndarray, threads: int, constant: Sequence[str] = ()
) -> pa.Table:
    """``table.take(order)`` for row indices ``order`` (a permutation or a selection of the
    rows), its columns taken on up to ``threads`` threads (Arrow's take kernel releases the
    GIL; ``Table.take`` takes one column after the other).

    Columns over the same buffers are taken once (and stay shared in the result), and the
    ``constant`` columns (one value in every row, by construction) are sliced to the rows
    taken instead: any ``len(order)`` of their rows hold the same values.
    """
    idx = pa.array(order)
    cols = table.columns
    todo: dict[tuple[object, ...], pa.ChunkedArray] = {}
    keys: list[tuple[object, ...] | None] = []
    for name, col in zip(table.column_names, cols, strict=True):
        if name in constant and len(order) <= table.num_rows:
            keys.append(None)
            continue
        k = _same_data(col)
        todo.setdefault(k, col)
        keys.append(k)
    taken = dict(
        zip(todo, parallel_map(lambda c: c.take(idx), list(todo.values()), threads), strict=True)
    )
    n = len(order)
    out = [col.slice(0, n) if k is None else taken[k] for col, k in zip(cols, keys, strict=True)]
    return pa.Table.from_arrays(out, schema=table.schema)


def write_partition_metadata(storage: Storage, partition: str, instant: str) -> None:
    """Write ``<partition>/.hoodie_partition_metadata`` unless it exists (Java
    ``HoodiePartitionMetadata.trySave``): the instant that created the partition and its depth."""
    rel = f"{partition}/{PARTITION_METADATA_FILE}" if partition else PARTITION_METADATA_FILE
    if storage.exists(rel):
        return
    depth = len(partition.split("/")) if partition else 0
    when = time.strftime("%a %b %d %H:%M:%S UTC %Y", time.gmtime())
    text = f"#partition metadata\n#{when}\ncommitTime={instant}\npartitionDepth={depth}\n"
    storage.create_if_absent(rel, text.encode())
