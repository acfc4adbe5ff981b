"""The task writer: one task's rows routed to per-file-group handles under a memory budget.

A task (the embedded write, or one Spark task) prepares each input batch at once -- record keys,
partition paths, bucket ids, the meta columns -- and hands zero-copy slices of it to one handle
per file group (Java ``HoodieAppendHandle`` on MERGE_ON_READ, ``HoodieMergeHandle`` on
COPY_ON_WRITE, a staging handle when several tasks write one COW file group). Handles flush
when they, or the task as a whole, pass their share of the budget; :meth:`TaskWriter.close`
returns their WriteStatuses for the driver's commit.
"""

from __future__ import annotations

import dataclasses
import time

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hudi_ds.errors import SchemaError
from hudi_ds.index.bucket import bucket_ids_from_record_keys, new_bucket_file_id
from hudi_ds.keygen import partition_paths, record_keys
from hudi_ds.layout.naming import PARTITION_METADATA_FILE
from hudi_ds.layout.parquet import dictionary_columns_of
from hudi_ds.schema import (
    IS_DELETED_FIELD,
    META_FIELDS,
    OPERATION_METADATA_FIELD,
    RECORD_KEY_METADATA_FIELD,
    conform_partial,
    conform_table,
)
from hudi_ds.storage import Storage
from hudi_ds.write.cow import stage_handle
from hudi_ds.write.handles import (
    DELETE_ORDERING,
    AppendHandle,
    MergeHandle,
    delete_schema,
)
from hudi_ds.write.operation import Rows
from hudi_ds.write.plan import BucketFiles, WritePlan
from hudi_ds.write.write_status import WriteStatus


class TaskWriter:
    """Routes one task's rows to per-file-group handles under a memory budget."""

    def __init__(
        self,
        storage: Storage,
        plan: WritePlan,
        token: str,
        task_partition_id: int,
        exclusive: bool,
    ) -> None:
        self.storage = storage
        self.plan = plan
        self.token = token
        self.task_partition_id = int(task_partition_id)
        self.exclusive = exclusive
        self.ctx = plan.handle_context(storage, token)
        self.handles: dict[tuple[str, int], AppendHandle | MergeHandle] = {}
        self.files = BucketFiles(storage, plan)
        self._record_index = 0
        self._seen_partitions: set[str] = set()
        self.rows_in = 0
        self.flushes = 0
        self.options = plan.options
        data_schema = pa.schema([f for f in plan.schema if f.name not in META_FIELDS])
        self._data_schema = data_schema
        ordering = plan.options.ordering_field
        otype = (
            data_schema.field(ordering).type
            if ordering and data_schema.get_field_index(ordering) >= 0
            else pa.null()
        )
        self._delete_schema = delete_schema(otype)

    # -- input --------------------------------------------------------------------------------
    def write(self, batch: pa.RecordBatch | pa.Table) -> None:
        """Route the rows of ``batch`` to their file groups' handles."""
        table = pa.Table.from_batches([batch]) if isinstance(batch, pa.RecordBatch) else batch
        if table.num_rows == 0:
            return
        self.rows_in += table.num_rows
        o = self.options
        rows = self.plan.operation.rows
        if rows is Rows.PARTITIONS:
            parts = partition_paths(
                table, list(o.partition_fields), o.hive_style, o.url_encode, o.timestamp
            )
            self._seen_partitions.update(pc.unique(parts).to_pylist())
            return
        drop = [c for c in table.column_names if c in META_FIELDS or c == OPERATION_METADATA_FIELD]
        if drop:
            table = table.drop_columns(drop)
        if rows is Rows.DELETES:
            data, deletes, data_parts, del_parts = self._prepare_deletes(table)
        else:
            data, deletes, data_parts, del_parts = self._prepare_upserts(table)
        if self.ctx.dictionary_columns is None and data.num_rows:
            self.ctx = dataclasses.replace(
                self.ctx, dictionary_columns=tuple(dictionary_columns_of(data.slice(0, 4096)))
            )
        self._route(data, deletes, data_parts, del_parts)
        self._enforce_budget()

    def _check_keys(self, table: pa.Table) -> None:
        for c in self.options.record_key_fields:
            if c not in table.column_names:
                raise SchemaError(f"key column '{c}' is missing from the input")
            col = table.column(c)
            if col.null_count:
                raise SchemaError(f"key column '{c}' holds {col.null_count} null value(s)")
            if not self.options.complex_key and (
                pa.types.is_string(col.type) or pa.types.is_large_string(col.type)
            ):
                empty = pc.sum(pc.equal(col, "")).as_py() or 0
                if empty:
                    raise SchemaError(f"key column '{c}' holds {empty} empty value(s)")
        for c in self.options.partition_fields:
            if c not in table.column_names:
                raise SchemaError(f"partition column '{c}' is missing from the input")

    def _check_ordering(self, table: pa.Table, keys: pa.Array) -> None:
        """Refuse NaN ordering values.

        Java's ``Double.compareTo`` (how Hudi's payloads and mergers compare ordering values,
        e.g. DefaultHoodieRecordPayload) sorts NaN above every number, so a NaN would silently
        win every later merge of its key; a NaN is bad input, refused naming a key.
        """
        field = self.options.ordering_field
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

    def _keys_and_partitions(self, table: pa.Table) -> tuple[pa.Array, pa.Array]:
        p = self.options
        keys = record_keys(table, list(p.record_key_fields), p.complex_key)
        if not p.complex_key:
            bad = pc.and_(pc.match_substring(keys, ","), pc.match_substring(keys, ":"))
            if pc.any(bad).as_py():
                raise SchemaError(
                    f"record key {keys.filter(bad)[0].as_py()!r} in column "
                    f"'{p.record_key_fields[0]}' contains both ',' and ':', which Hudi's bucket "
                    "index would parse as a complex key"
                )
        parts = partition_paths(
            table, list(p.partition_fields), p.hive_style, p.url_encode, p.timestamp
        )
        return keys, parts

    def _prepare_upserts(self, table: pa.Table) -> tuple[pa.Table, pa.Table, pa.Array, pa.Array]:
        p = self.plan
        self._check_keys(table)
        if p.partial_columns is not None:
            table = conform_partial(table, self._data_schema, p.partial_columns, narrowing=True)
        else:
            table = conform_table(table, self._data_schema)
        keys, parts = self._keys_and_partitions(table)
        self._check_ordering(table, keys)
        n = table.num_rows
        deleted = None
        if IS_DELETED_FIELD in table.column_names:
            flag = table.column(IS_DELETED_FIELD).combine_chunks().fill_null(False)
            if pc.any(flag).as_py():
                deleted = np.asarray(flag, dtype=bool)
        start = self._record_index
        self._record_index += n
        seqno = pc.binary_join_element_wise(
            f"{p.instant}_{self.task_partition_id}_",
            pa.array(np.arange(start, start + n, dtype=np.int64)).cast(pa.string()),
            "",
        )
        meta = [
            pa.repeat(pa.scalar(p.instant, pa.string()), n),
            seqno,
            keys,
            parts,
            pa.repeat(pa.scalar("", pa.string()), n),
        ]
        ordering = self.options.ordering_field
        full = pa.Table.from_arrays(
            meta + [table.column(i) for i in range(table.num_columns)], schema=p.schema
        )
        if deleted is None:
            return full, self._delete_schema.empty_table(), parts, pa.array([], pa.string())
        idx_del = pa.array(np.flatnonzero(deleted))
        idx_keep = pa.array(np.flatnonzero(~deleted))
        dels = self._delete_table(
            keys.take(idx_del),
            parts.take(idx_del),
            table.column(ordering).take(idx_del) if ordering else None,
        )
        return full.take(idx_keep), dels, parts.take(idx_keep), parts.take(idx_del)

    def _prepare_deletes(self, table: pa.Table) -> tuple[pa.Table, pa.Table, pa.Array, pa.Array]:
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
        dels = self._delete_table(keys, parts, None)
        return p.schema.empty_table(), dels, pa.array([], pa.string()), parts

    def _delete_table(
        self, keys: pa.Array, parts: pa.Array, ordering: pa.ChunkedArray | pa.Array | None
    ) -> pa.Table:
        otype = self._delete_schema.field(DELETE_ORDERING).type
        if ordering is None:
            ov = pa.nulls(len(keys), otype)
        else:
            ov = ordering.combine_chunks() if isinstance(ordering, pa.ChunkedArray) else ordering
            ov = ov.cast(otype) if ov.type != otype else ov
        return pa.Table.from_arrays(
            [keys.cast(pa.string()), parts.cast(pa.string()), ov], schema=self._delete_schema
        )

    # -- routing ------------------------------------------------------------------------------
    def _route(
        self, data: pa.Table, deletes: pa.Table, data_parts: pa.Array, del_parts: pa.Array
    ) -> None:
        for rows, parts, is_delete in ((data, data_parts, False), (deletes, del_parts, True)):
            if rows.num_rows == 0:
                continue
            keys = rows.column(RECORD_KEY_METADATA_FIELD)
            o = self.options
            buckets = bucket_ids_from_record_keys(
                keys, list(o.hash_fields), o.num_buckets, o.complex_key
            )
            enc = pc.dictionary_encode(
                parts.combine_chunks() if isinstance(parts, pa.ChunkedArray) else parts
            )
            pidx = np.asarray(enc.indices, dtype=np.int64)
            names = enc.dictionary.to_pylist()
            self._seen_partitions.update(names)
            group = pidx * o.num_buckets + buckets.astype(np.int64)
            order = np.argsort(group, kind="stable")
            sorted_groups = group[order]
            # one take for the whole batch, then zero-copy slices per file group
            rows = rows.take(pa.array(order))
            starts = np.concatenate([[0], np.flatnonzero(np.diff(sorted_groups)) + 1])
            ends = np.append(starts[1:], len(order))
            for a, b in zip(starts.tolist(), ends.tolist(), strict=True):
                g = int(sorted_groups[a])
                handle = self._handle(names[g // o.num_buckets], g % o.num_buckets)
                sl = rows.slice(a, b - a)
                if is_delete:
                    handle.write(None, sl)
                else:
                    handle.write(sl, None)

    def _handle(self, partition: str, bucket: int) -> AppendHandle | MergeHandle:
        key = (partition, bucket)
        h = self.handles.get(key)
        if h is not None:
            return h
        p = self.plan
        existing = self.files.slices(partition).get(bucket) if p.operation.merges_existing else None
        if existing is not None:
            file_id = existing.file_id
        else:
            file_id = new_bucket_file_id(partition, bucket, p.instant)
        if p.table_type == "COPY_ON_WRITE" and self.exclusive:
            h = MergeHandle(self.ctx, partition, file_id, existing.base_file if existing else None)
        elif p.table_type == "COPY_ON_WRITE":
            h = stage_handle(self.ctx, partition, file_id, existing)
        else:
            if existing is not None:
                base_instant = p.pending_compaction.get(
                    (partition, file_id), existing.base_instant_time
                )
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
        under a third of the budget and one handle under a sixth of it. Append handles flush
        log blocks; merge handles (COW) spill their rows to local disk and merge them with the
        base file at close, within their share of the budget (see ``MergeHandle``).
        """
        budget = self.options.task_budget_bytes
        per_handle = min(self.options.handle_budget_bytes, budget // 6)
        for h in self.handles.values():
            if h.buffered_bytes >= per_handle:
                h.flush()
                self.flushes += 1
        total = sum(h.buffered_bytes for h in self.handles.values())
        if total <= budget // 3:
            return
        for h in sorted(self.handles.values(), key=lambda x: -x.buffered_bytes):
            if total <= budget // 6:
                break
            total -= h.buffered_bytes
            h.flush()
            self.flushes += 1

    def touched_partitions(self) -> list[str]:
        """Partition paths of the rows this task has seen."""
        return sorted(self._seen_partitions)

    @property
    def buffered_bytes(self) -> int:
        return sum(h.buffered_bytes for h in self.handles.values())

    def close(self) -> list[WriteStatus]:
        """Flush and close every handle; the WriteStatuses go to the driver's commit."""
        out = []
        for h in self.handles.values():
            st = h.close()
            if st is not None:
                write_partition_metadata(self.storage, st.partition_path, self.plan.instant)
                out.append(st)
        self.handles.clear()
        return out


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
