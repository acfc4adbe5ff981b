"""The task writer: one task's rows routed to per-file-group handles under a memory budget.

A task (the embedded write, or one Spark task) handles each input batch in three steps:

* :meth:`TaskWriter.prepare` -- record keys, partition paths and the meta columns, at once;
* :meth:`TaskWriter.tag` -- the file group of every row: with the bucket index its bucket's
  (a hash of the key, as today); with SIMPLE / BLOOM and their global variants an index lookup
  (Java ``HoodieIndex.tagLocation``) sends updates to the file group holding the key, and the
  :mod:`~hudi_ds.write.assigner` packs inserts into small files, then new file groups;
* :meth:`TaskWriter.route` -- zero-copy slices of the batch to one handle per file group (Java
  ``HoodieAppendHandle`` on MERGE_ON_READ, ``HoodieMergeHandle`` on COPY_ON_WRITE and for the
  small files and new file groups of MERGE_ON_READ under a non-bucket index, a staging handle
  when several tasks write one COW file group).

Handles flush when they, or the task as a whole, pass their share of the budget;
:meth:`TaskWriter.close` returns their WriteStatuses for the driver's commit.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hudi_ds.errors import SchemaError
from hudi_ds.index import lookup_of
from hudi_ds.index.bucket import bucket_ids_from_record_keys, new_bucket_file_id
from hudi_ds.index.lookup import Lookup, LookupSpec
from hudi_ds.keygen import partition_paths, record_keys
from hudi_ds.layout.file_group import FileSlice
from hudi_ds.layout.naming import PARTITION_METADATA_FILE
from hudi_ds.layout.parquet import dictionary_columns_of
from hudi_ds.merge.engine import DataPart, merge_versions
from hudi_ds.schema import (
    IS_DELETED_FIELD,
    META_FIELDS,
    OPERATION_METADATA_FIELD,
    PARTITION_PATH_METADATA_FIELD,
    RECORD_KEY_METADATA_FIELD,
    conform_partial,
    conform_table,
)
from hudi_ds.storage import Storage
from hudi_ds.table.reader import ReadStats, SliceReadContext, read_file_slice
from hudi_ds.write.assigner import (
    InsertAssigner,
    place,
    records_per_new_file,
    small_files,
)
from hudi_ds.write.cow import stage_handle
from hudi_ds.write.handles import (
    DELETE_ORDERING,
    AppendHandle,
    MergeHandle,
    delete_schema,
    precombine,
)
from hudi_ds.write.operation import Rows
from hudi_ds.write.plan import BucketFiles, WritePlan
from hudi_ds.write.workload import WorkloadProfile
from hudi_ds.write.write_status import WriteStatus

#: operations whose records are tagged by a non-bucket index (Java tags upserts and deletes;
#: ``insert`` and ``bulk_insert`` write every record as an insert, duplicates included)
_TAGGING_OPERATIONS = frozenset({"upsert", "delete"})


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


@dataclass(frozen=True)
class Tagged:
    """A prepared batch with the file group of every row (:meth:`TaskWriter.tag`).

    Attributes:
        data, deletes: the rows (a global index may have moved some to another partition,
            and dropped deletes of keys the table does not hold).
        data_targets, delete_targets: per row, the index of its file group in ``targets``.
        targets: ``(partition, file id)`` of the file groups.
    """

    data: pa.Table
    data_targets: np.ndarray
    deletes: pa.Table
    delete_targets: np.ndarray
    targets: Sequence[tuple[str, str]]


class TaskWriter:
    """Routes one task's rows to per-file-group handles under a memory budget.

    Args:
        exclusive: the only writer task of the instant (the embedded API); False for the tasks
            of a Spark write (see :meth:`tag` for what non-exclusive tasks may not do).
        lookup: the index lookup of a non-bucket index (default: the table's,
            :func:`hudi_ds.index.lookup_of`); a long-lived writer passes its state index.

    Attributes:
        workload: the task's :class:`~hudi_ds.write.workload.WorkloadProfile` (filled by
            :meth:`tag`).
    """

    def __init__(
        self,
        storage: Storage,
        plan: WritePlan,
        token: str,
        task_partition_id: int,
        exclusive: bool,
        lookup: Lookup | None = None,
    ) -> None:
        self.storage = storage
        self.plan = plan
        self.token = token
        self.task_partition_id = int(task_partition_id)
        self.exclusive = exclusive
        self.ctx = plan.handle_context(storage, token)
        self.handles: dict[tuple[str, str], AppendHandle | MergeHandle] = {}
        self.files = BucketFiles(storage, plan)
        self._record_index = 0
        self._seen_partitions: set[str] = set()
        self.rows_in = 0
        self.flushes = 0
        self.options = plan.options
        self.workload = WorkloadProfile()
        data_schema = pa.schema([f for f in plan.schema if f.name not in META_FIELDS])
        self._data_schema = data_schema
        ordering = plan.options.ordering_field
        otype = (
            data_schema.field(ordering).type
            if ordering and data_schema.get_field_index(ordering) >= 0
            else pa.null()
        )
        self._delete_schema = delete_schema(otype)
        o = plan.options
        self.bucketed = o.index_type == "BUCKET"
        self.lookup: Lookup | None = None
        if not self.bucketed:
            self.lookup = lookup if lookup is not None else lookup_of(o.index_type)
        # file groups (partition, file id) by target number, stable for the task's life
        self._targets: list[tuple[str, str]] = []
        self._target_ids: dict[tuple[str, str], int] = {}
        # MERGE_ON_READ small files taking inserts: rewritten by a MergeHandle (new base file)
        self._rewrites: set[tuple[str, str]] = set()
        # the new keys this task inserted (match string -> target), so that later versions of
        # a key in later batches join the file group its first version went to
        self._new_keys: list[pa.Array] = []
        self._new_targets: list[np.ndarray] = []
        self._new_index: tuple[pa.Array, np.ndarray] | None = None
        self._assigner = InsertAssigner(
            plan.avg_record_size,
            o.max_file_size,
            records_per_new_file(
                o.max_file_size, plan.avg_record_size, o.auto_split, o.insert_split_size
            ),
        )
        self.lookup_files_read = 0

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
            parts = partition_paths(table, list(o.partition_fields), o.hive_style, o.url_encode)
            self._seen_partitions.update(pc.unique(parts).to_pylist())
            return empty
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
        parts = partition_paths(table, list(p.partition_fields), p.hive_style, p.url_encode)
        return keys, parts

    def _prepare_upserts(self, table: pa.Table) -> tuple[pa.Table, pa.Table]:
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
            return full, self._delete_schema.empty_table()
        idx_del = pa.array(np.flatnonzero(deleted))
        idx_keep = pa.array(np.flatnonzero(~deleted))
        dels = self._delete_table(
            keys.take(idx_del),
            parts.take(idx_del),
            table.column(ordering).take(idx_del) if ordering else None,
        )
        return full.take(idx_keep), dels

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
        dels = self._delete_table(keys, parts, None)
        return p.schema.empty_table(), dels

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

    # -- tagging ------------------------------------------------------------------------------
    def tag(self, prepared: Prepared) -> Tagged:
        """The file group of every row of ``prepared``, and the task's workload counted.

        Bucket index: the file group of the key's bucket (hash of the key), as Hudi's bucket
        index. SIMPLE / BLOOM / GLOBAL_*: the keys are looked up (once per batch) in the
        latest slices of the touched partitions (every partition for a global index); an
        update goes to the file group holding its key, a delete of a key the table does not
        hold is dropped (Java ``HoodieDeleteHelper``), and inserts are packed by the
        :class:`~hudi_ds.write.assigner.InsertAssigner`: small files first, then new file
        groups (``insert`` / ``bulk_insert`` are not tagged: every record is an insert, as in
        Java).

        Non-exclusive tasks (several tasks write one instant) send inserts only to new file
        groups of their own: two tasks never pack the same small file past its size, and no
        MERGE_ON_READ base file is rewritten by two tasks of one instant (their updates stage
        for the commit's merge on COPY_ON_WRITE, and append to logs on MERGE_ON_READ).
        """
        data, dels = prepared.data, prepared.deletes
        if data.num_rows + dels.num_rows == 0:
            return Tagged(data, np.empty(0, np.int64), dels, np.empty(0, np.int64), self._targets)
        if self.bucketed:
            return self._tag_buckets(data, dels)
        return self._tag_located(data, dels)

    def _target(self, partition: str, file_id: str) -> int:
        key = (partition, file_id)
        t = self._target_ids.get(key)
        if t is None:
            t = self._target_ids[key] = len(self._targets)
            self._targets.append(key)
        return t

    def _targets_of(self, parts: pa.Array, file_ids: pa.Array) -> np.ndarray:
        """Target numbers of aligned ``(partition, file id)`` arrays (vectorised)."""
        if len(parts) == 0:
            return np.empty(0, np.int64)
        pair = pc.binary_join_element_wise(parts, file_ids, "/")
        enc = pc.dictionary_encode(pair)
        idx = np.asarray(enc.indices, dtype=np.int64)
        firsts = _first_positions(idx, len(enc.dictionary))
        ps = parts.take(pa.array(firsts)).to_pylist()
        fs = file_ids.take(pa.array(firsts)).to_pylist()
        ids = np.array([self._target(p, f) for p, f in zip(ps, fs, strict=True)], np.int64)
        return ids[idx]

    def _tag_buckets(self, data: pa.Table, dels: pa.Table) -> Tagged:
        """Bucket index: every row goes to its bucket's file group (Java
        ``HoodieSimpleBucketIndex.tagLocation``). A row whose bucket has a file group is tagged
        with it (an update in the workload profile, prev commit the slice's base instant); a
        row of a bucket without one is an insert into a new file group. A delete of a key
        whose bucket has no file group is dropped, as ``HoodieDeleteHelper`` drops untagged
        deletes (the table cannot hold the key; no empty file group is created for it)."""
        o = self.options
        drop_untagged = self.plan.operation.rows is Rows.DELETES
        out: list[np.ndarray] = []
        for rows in (data, dels):
            if rows.num_rows == 0:
                out.append(np.empty(0, np.int64))
                continue
            keys = rows.column(RECORD_KEY_METADATA_FIELD)
            parts = _string(rows.column(PARTITION_PATH_METADATA_FIELD))
            buckets = bucket_ids_from_record_keys(
                keys, list(o.hash_fields), o.num_buckets, o.complex_key
            )
            enc = pc.dictionary_encode(parts)
            pidx = np.asarray(enc.indices, dtype=np.int64)
            names = enc.dictionary.to_pylist()
            group = pidx * o.num_buckets + buckets.astype(np.int64)
            uniq, inverse = np.unique(group, return_inverse=True)
            counts = np.bincount(inverse.reshape(-1), minlength=len(uniq))
            ids = np.empty(len(uniq), np.int64)
            for i, g in enumerate(uniq.tolist()):
                partition, bucket = names[g // o.num_buckets], g % o.num_buckets
                file_id, base = self._bucket_location(partition, bucket)
                n = int(counts[i])
                if base is not None:
                    self.workload.add_updates(partition, file_id, base, n)
                elif rows is dels and drop_untagged:
                    ids[i] = -1
                    continue
                else:
                    self.workload.add_inserts(partition, n)
                ids[i] = self._target(partition, file_id)
            out.append(ids[inverse.reshape(-1)])
        del_t = out[1]
        if len(del_t) and (del_t < 0).any():
            keep = del_t >= 0
            dels, del_t = dels.filter(pa.array(keep)), del_t[keep]
        return Tagged(data, out[0], dels, del_t, self._targets)

    def _bucket_location(self, partition: str, bucket: int) -> tuple[str, str | None]:
        """The file id of ``bucket``'s file group in ``partition`` and the base instant of its
        latest slice (a pending compaction's when one is planned on it, as Java's file-system
        view opens that slice); a bucket without a file group gets the new file group's id
        and None."""
        p = self.plan
        existing = self.files.slices(partition).get(bucket) if p.operation.merges_existing else None
        if existing is not None:
            base = p.pending_compaction.get(
                (partition, existing.file_id), existing.base_instant_time
            )
            return existing.file_id, base
        return new_bucket_file_id(partition, bucket, p.instant), None

    def _lookup_spec(self) -> LookupSpec:
        o = self.options
        return LookupSpec(
            record_key_fields=tuple(o.record_key_fields),
            complex_key=o.complex_key,
            meta_fields=self.plan.table_config.populate_meta_fields,
            # SIMPLE / BLOOM index base files only (Java canIndexLogFiles() = false): inserts
            # never go to logs alone under these indexes (new file groups get base files)
            read_logs=False,
            prune_by_ranges=o.prune_by_ranges,
        )

    def _candidate_slices(self, parts: pa.Array) -> list[FileSlice]:
        """The latest slices a lookup searches: of the touched partitions, or of every
        partition for a global index (each partition listed once per task)."""
        if self.options.is_global_index:
            names = self.files.partitions()
        else:
            names = pc.unique(parts).to_pylist()
        return [s for p in names for s in self.files.by_file_id(p).values()]

    def _tag_located(self, data: pa.Table, dels: pa.Table) -> Tagged:
        o = self.options
        op = self.plan.operation
        if o.is_global_index:
            # Java de-duplicates a global index's input by record key alone before tagging
            # (HoodieWriteHelper.deduplicateRecords): one version per key, whatever partition
            # the others name. Across the batches of a task, later versions of a key join the
            # file group its first version went to (see _remember).
            data, dels = precombine(
                data, dels, o.ordering_field, o.merge_mode, o.merge_spec, self.plan.partial_columns
            )
        nd = data.num_rows
        dkeys = _string(data.column(RECORD_KEY_METADATA_FIELD))
        dparts = _string(data.column(PARTITION_PATH_METADATA_FIELD))
        xkeys = _string(dels.column(RECORD_KEY_METADATA_FIELD))
        xparts = _string(dels.column(PARTITION_PATH_METADATA_FIELD))
        data_t = np.full(nd, -1, np.int64)
        del_t = np.full(dels.num_rows, -1, np.int64)
        inserts = np.ones(nd, dtype=bool)
        moving = np.zeros(nd, dtype=bool)
        if op.merges_existing and op.name in _TAGGING_OPERATIONS:
            assert self.lookup is not None
            keys = pa.concat_arrays([dkeys, xkeys])
            parts = pa.concat_arrays([dparts, xparts])
            loc = self.lookup(
                self.storage,
                self._candidate_slices(parts),
                keys,
                None if o.is_global_index else parts,
                self._lookup_spec(),
            )
            self.lookup_files_read += loc.files_read
            found = np.asarray(loc.found, dtype=bool)
            fid = _string(loc.file_id).fill_null("")
            fpart = _string(loc.partition).fill_null("")
            finst = _string(loc.instant).fill_null("")
            # -- updates
            dfound = found[:nd]
            again = np.zeros(nd, dtype=bool)
            if o.is_global_index and nd and self._new_keys:
                # a key this task already moved to another partition joins its moved version
                # (Java de-duplicates a global write's input by key before tagging)
                again = dfound & (self._remembered(dkeys, dparts) >= 0)
                dfound = dfound & ~again
            if o.is_global_index and nd:
                other = dfound & ~np.asarray(
                    pc.equal(fpart.slice(0, nd), dparts).fill_null(False), dtype=bool
                )
                if other.any():
                    if o.update_partition_path:
                        # HoodieIndexUtils.mergeForPartitionUpdatesIfNeeded (below)
                        moving = other
                        dfound = dfound & ~other
                    else:
                        # re-keyed to the partition holding the key, updated in place
                        data = _set_partitions(data, other, fpart.slice(0, nd))
                        dparts = _string(data.column(PARTITION_PATH_METADATA_FIELD))
            upd = np.flatnonzero(dfound)
            if len(upd):
                sel = pa.array(upd)
                up, uf, ui = fpart.take(sel), fid.take(sel), finst.take(sel)
                data_t[upd] = self._targets_of(up, uf)
                self._count_updates(up, uf, ui)
                if o.is_global_index:
                    self._remember(dkeys.take(sel), up, data_t[upd])
            inserts = ~found[:nd] | again  # moving keys are handled below
            # -- deletes: at the key's location; a key the table does not hold is dropped
            xf = found[nd:].copy()
            if o.is_global_index and dels.num_rows and self._new_keys:
                # a key this task wrote elsewhere is deleted where this task put it
                rem = self._remembered(xkeys, xparts)
                took = rem >= 0
                if took.any():
                    del_t[took] = rem[took]
                    where = np.array([self._targets[t][0] for t in rem[took].tolist()], object)
                    full = np.empty(len(took), object)
                    full[took] = where
                    dels = _set_partitions(dels, took, pa.array(full, pa.string()))
                    xf &= ~took
            hit = np.flatnonzero(xf)
            if len(hit):
                sel = pa.array(hit + nd)
                xp, xfid = fpart.take(sel), fid.take(sel)
                if o.is_global_index:
                    dels = _set_partitions(dels, xf, fpart.slice(nd))
                del_t[hit] = self._targets_of(xp, xfid)
                # a tagged delete is an update of its file group in Java's workload profile
                self._count_updates(xp, xfid, finst.take(sel))
            if moving.any():
                data, data_t, dels, del_t, more = self._move_partitions(
                    data,
                    data_t,
                    dels,
                    del_t,
                    moving,
                    (fpart.slice(0, nd), fid.slice(0, nd), finst.slice(0, nd)),
                )
                inserts = np.concatenate([inserts, more[nd:]])
        # -- inserts: where this task put the key before, else packed
        ins = np.flatnonzero(inserts)
        if len(ins):
            data, data_t = self._tag_inserts(data, data_t, ins)
        # deletes of keys this task inserted (not yet in the table) join them; others drop
        miss = np.flatnonzero(del_t < 0)
        if len(miss) and self._new_keys:
            sel = pa.array(miss)
            t = self._remembered(xkeys.take(sel), xparts.take(sel))
            del_t[miss] = t
        keep_d = del_t >= 0
        if not keep_d.all():
            if op.rows is not Rows.DELETES:
                # `_hoodie_is_deleted` rows of keys the table does not hold: Java routes them
                # as untagged records (inserts that write nothing), counted as inserts in
                # its workload profile (BaseSparkCommitActionExecutor.buildProfile)
                gone = pc.value_counts(
                    _string(dels.column(PARTITION_PATH_METADATA_FIELD)).filter(pa.array(~keep_d))
                )
                for entry in gone.to_pylist():
                    self.workload.add_inserts(entry["values"], entry["counts"])
            dels = dels.filter(pa.array(keep_d))
            del_t = del_t[keep_d]
        keep = data_t >= 0
        if not keep.all():  # rows a partition move dropped (merged into a delete)
            data = data.filter(pa.array(keep))
            data_t = data_t[keep]
        return Tagged(data, data_t, dels, del_t, self._targets)

    def _count_updates(self, parts: pa.Array, file_ids: pa.Array, instants: pa.Array) -> None:
        pair = pc.binary_join_element_wise(parts, file_ids, "/")
        enc = pc.dictionary_encode(pair)
        idx = np.asarray(enc.indices, dtype=np.int64)
        counts = np.bincount(idx, minlength=len(enc.dictionary))
        firsts = _first_positions(idx, len(enc.dictionary))
        sel = pa.array(firsts)
        for p, f, i, n in zip(
            parts.take(sel).to_pylist(),
            file_ids.take(sel).to_pylist(),
            instants.take(sel).to_pylist(),
            counts.tolist(),
            strict=True,
        ):
            self.workload.add_updates(p, f, i, n)

    def _match(self, keys: pa.Array, parts: pa.Array) -> pa.Array:
        """What identifies a new key: the key (global index) or partition and key."""
        if self.options.is_global_index:
            return keys
        return pc.binary_join_element_wise(parts, keys, "\x00")

    def _remembered(self, keys: pa.Array, parts: pa.Array) -> np.ndarray:
        """Targets of keys this task inserted before (-1 where it did not)."""
        if not self._new_keys:
            return np.full(len(keys), -1, np.int64)
        if self._new_index is None:
            self._new_index = (
                pa.concat_arrays(self._new_keys),
                np.concatenate(self._new_targets),
            )
            self._new_keys = [self._new_index[0]]
            self._new_targets = [self._new_index[1]]
        known, targets = self._new_index
        pos = pc.index_in(self._match(keys, parts), value_set=known)
        p = np.asarray(pos.fill_null(-1), dtype=np.int64)
        return np.where(p >= 0, targets[np.maximum(p, 0)], -1)

    def _tag_inserts(
        self, data: pa.Table, data_t: np.ndarray, rows: np.ndarray
    ) -> tuple[pa.Table, np.ndarray]:
        """Targets of the insert rows ``rows`` of ``data``: the file group a key went to
        earlier in this task, else the :class:`InsertAssigner`'s (distinct keys in input
        order, contiguously per bucket: see :func:`~hudi_ds.write.assigner.place`)."""
        o = self.options
        sel = pa.array(rows)
        keys = _string(data.column(RECORD_KEY_METADATA_FIELD)).take(sel)
        parts = _string(data.column(PARTITION_PATH_METADATA_FIELD)).take(sel)
        before = self._remembered(keys, parts)
        if o.is_global_index and (before >= 0).any():
            # a later version of a new key joins its first version's file group (and partition)
            again = np.zeros(data.num_rows, dtype=bool)
            again[rows[before >= 0]] = True
            tp = np.array([self._targets[t][0] for t in before[before >= 0].tolist()], object)
            full = np.empty(data.num_rows, object)
            full[again] = tp
            data = _set_partitions(data, again, pa.array(full, pa.string()))
        data_t[rows[before >= 0]] = before[before >= 0]
        fresh = rows[before < 0]
        if not len(fresh):
            return data, data_t
        fsel = pa.array(np.flatnonzero(before < 0))
        fkeys, fparts = keys.take(fsel), parts.take(fsel)
        match = self._match(fkeys, fparts)
        enc = pc.dictionary_encode(match)
        idx = np.asarray(enc.indices, dtype=np.int64)
        n_unique = len(enc.dictionary)
        firsts = _first_positions(idx, n_unique)
        uparts = fparts.take(pa.array(firsts))
        penc = pc.dictionary_encode(uparts)
        pidx = np.asarray(penc.indices, dtype=np.int64)
        unique_t = np.empty(n_unique, np.int64)
        for j, partition in enumerate(penc.dictionary.to_pylist()):
            members = np.flatnonzero(pidx == j)
            self._open_partition(partition)
            assigned = self._assigner.assign(partition, len(members))
            ids = np.array([self._target(b.partition, b.file_id) for b, _ in assigned], np.int64)
            for b, _ in assigned:
                if b.small_file and self.plan.table_type == "MERGE_ON_READ":
                    self._rewrites.add((b.partition, b.file_id))
            unique_t[members] = ids[place([n for _, n in assigned])]
            self.workload.add_inserts(partition, len(members))
        data_t[fresh] = unique_t[idx]
        self._new_keys.append(enc.dictionary)
        self._new_targets.append(unique_t)
        self._new_index = None
        return data, data_t

    def _remember(self, keys: pa.Array, parts: pa.Array, targets: np.ndarray) -> None:
        """Global index: later versions of ``keys`` in this task go to ``targets`` (the file
        groups these versions went to), so that a key ends in one partition per write."""
        self._new_keys.append(self._match(keys, parts))
        self._new_targets.append(np.asarray(targets, np.int64))
        self._new_index = None

    def _open_partition(self, partition: str) -> None:
        """Give the assigner ``partition``'s small files (once per task)."""
        if self._assigner.has_partition(partition):
            return
        p = self.plan
        if not (self.exclusive and p.operation.merges_existing):
            self._assigner.open_partition(partition, [])
            return

        def excluded(part: str, file_id: str) -> bool:
            if (part, file_id) in p.pending_compaction or (part, file_id) in p.pending_clustering:
                return True  # Java lists slices without those in pending compaction/clustering
            h = self.handles.get((part, file_id))
            return isinstance(h, AppendHandle)  # its updates already go to a log

        o = self.options
        files = small_files(
            self.files.by_file_id(partition).values(),
            p.table_type,
            o.small_file_limit,
            o.small_file_candidates,
            excluded,
        )
        self._assigner.open_partition(partition, files)

    def _move_partitions(
        self,
        data: pa.Table,
        data_t: np.ndarray,
        dels: pa.Table,
        del_t: np.ndarray,
        moving: np.ndarray,
        old: tuple[pa.Array, pa.Array, pa.Array],
    ) -> tuple[pa.Table, np.ndarray, pa.Table, np.ndarray, np.ndarray]:
        """Global index, ``update.partition.path``: keys arriving in another partition than
        the one holding them (Java ``HoodieIndexUtils.mergeForPartitionUpdatesIfNeeded``).

        The stored record of each moving key is read (merged with its logs) and merged with the
        incoming versions under the table's merge mode. A merged record in the old partition
        (the stored record won) updates in place; one in the new partition becomes a delete at
        the old location plus an insert of the merged record in the new partition; a merge
        that deletes the key deletes it at the old location; a key whose stored record is gone
        (deleted in a log) is inserted.

        Args:
            moving: the ``data`` rows whose key is held in another partition.
            old: where the keys of ``data`` are held: partitions, file ids, base instants.

        Returns:
            ``data``, ``data_targets``, ``deletes``, ``delete_targets`` with the moves applied
            (rows to drop have target -1), and the mask of the ``data`` rows to insert.
        """
        rows = np.flatnonzero(moving)
        sel = pa.array(rows)
        mv = data.take(sel)
        mkeys = _string(mv.column(RECORD_KEY_METADATA_FIELD))
        opart, ofid, oinst = (a.take(sel) for a in old)
        stored = self._read_stored(opart, ofid, mkeys)
        schema = self.plan.schema
        res = merge_versions(
            [stored, DataPart(self.ctx.carried(mv), partial=self.plan.partial_columns is not None)],
            self.ctx.merge_spec,
            schema,
            has_base=True,
        )
        merged = res.rows
        skeys = _string(stored.column(RECORD_KEY_METADATA_FIELD))
        # where each moving key lives (first incoming version's old location)
        okey_pos = np.asarray(pc.index_in(mkeys, value_set=mkeys), dtype=np.int64)
        first = np.unique(okey_pos)
        loc_keys = mkeys.take(pa.array(first))
        loc_part = opart.take(pa.array(first))
        loc_fid = ofid.take(pa.array(first))
        loc_inst = oinst.take(pa.array(first))
        mk = _string(merged.column(RECORD_KEY_METADATA_FIELD))
        mpos = np.asarray(pc.index_in(mk, value_set=loc_keys), dtype=np.int64)
        mpart = _string(merged.column(PARTITION_PATH_METADATA_FIELD))
        in_place = np.asarray(pc.equal(mpart, loc_part.take(pa.array(mpos))), dtype=bool)
        had_stored = np.asarray(pc.is_in(mk, value_set=skeys), dtype=bool)
        # the old rows of moving data are replaced by the merged records
        data_t[rows] = -1
        new_rows: list[pa.Table] = []
        new_t: list[np.ndarray] = []
        insert_mask: list[np.ndarray] = []
        # 1. stored record won: update in place (written as the merged record)
        keep = np.flatnonzero(in_place)
        if len(keep):
            t = merged.take(pa.array(keep))
            new_rows.append(t)
            ks = pa.array(mpos[keep])
            tp, tf = loc_part.take(ks), loc_fid.take(ks)
            in_place_t = self._targets_of(tp, tf)
            new_t.append(in_place_t)
            self._count_updates(tp, tf, loc_inst.take(ks))
            self._remember(_string(t.column(RECORD_KEY_METADATA_FIELD)), tp, in_place_t)
            insert_mask.append(np.zeros(len(keep), dtype=bool))
        # 2. merged record in another partition: an insert there ...
        moved = np.flatnonzero(~in_place)
        if len(moved):
            new_rows.append(merged.take(pa.array(moved)))
            new_t.append(np.full(len(moved), -1, np.int64))
            insert_mask.append(np.ones(len(moved), dtype=bool))
        # ... and a delete at the old location (of stored records only), and 3. merges that
        # delete the key: a delete at the old location
        gone = np.flatnonzero(~in_place & had_stored)
        dead_keys = []
        if len(gone):
            dead_keys.append(mk.take(pa.array(gone)))
        deleted_versions = res.deleted
        if len(deleted_versions):
            all_keys = pa.concat_arrays([skeys, mkeys])
            dead_keys.append(all_keys.take(pa.array(deleted_versions, pa.int64())))
        if dead_keys:
            dk = pc.unique(pa.concat_arrays(dead_keys))
            dpos = np.asarray(pc.index_in(dk, value_set=loc_keys), dtype=np.int64)
            dp, df = loc_part.take(pa.array(dpos)), loc_fid.take(pa.array(dpos))
            self._count_updates(dp, df, loc_inst.take(pa.array(dpos)))
            extra = self._delete_table(dk, dp, None)
            dels = pa.concat_tables([dels, extra]) if dels.num_rows else extra
            del_t = np.concatenate([del_t, self._targets_of(dp, df)])
        if new_rows:
            add = pa.concat_tables(new_rows).cast(data.schema)
            data = pa.concat_tables([data, add])
            data_t = np.concatenate([data_t, *new_t])
            more = np.concatenate([np.zeros(len(moving), dtype=bool), *insert_mask])
        else:
            more = np.zeros(len(moving), dtype=bool)
        return data, data_t, dels, del_t, more

    def _read_stored(self, parts: pa.Array, file_ids: pa.Array, keys: pa.Array) -> pa.Table:
        """The stored (merged) records of ``keys`` in the file groups holding them."""
        p = self.plan
        o = self.options
        rctx = SliceReadContext(
            schema=p.schema,
            record_key_fields=tuple(o.record_key_fields),
            complex_key=o.complex_key,
            ordering_field=o.ordering_field,
            merge_mode=o.merge_mode,
            populate_meta_fields=p.table_config.populate_meta_fields,
            merge=o.merge_spec,
        )
        stats = ReadStats()
        out = []
        groups = sorted(set(zip(parts.to_pylist(), file_ids.to_pylist(), strict=True)))
        for part, fid in groups:
            fslice = self.files.by_file_id(part).get(fid)
            if fslice is None:
                continue
            rows = read_file_slice(self.storage, fslice, p.visibility, rctx, stats)
            hit = pc.is_in(rows.column(RECORD_KEY_METADATA_FIELD), value_set=keys)
            out.append(rows.filter(hit))
        return pa.concat_tables(out) if out else p.schema.empty_table()

    # -- routing ------------------------------------------------------------------------------
    def route(self, tagged: Tagged) -> None:
        """Hand the rows of ``tagged`` to their file groups' handles, then keep the task's
        buffers within its memory budget."""
        targets = tagged.targets
        for rows, tg, is_delete in (
            (tagged.data, tagged.data_targets, False),
            (tagged.deletes, tagged.delete_targets, True),
        ):
            if rows.num_rows == 0:
                continue
            order = np.argsort(tg, kind="stable")
            sorted_t = tg[order]
            # one take for the whole batch, then zero-copy slices per file group
            rows = rows.take(pa.array(order))
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
        self._enforce_budget()

    def _handle(self, partition: str, file_id: str) -> AppendHandle | MergeHandle:
        key = (partition, file_id)
        h = self.handles.get(key)
        if h is not None:
            return h
        p = self.plan
        existing = (
            self.files.by_file_id(partition).get(file_id) if p.operation.merges_existing else None
        )
        if p.table_type == "COPY_ON_WRITE" and self.exclusive:
            h = MergeHandle(self.ctx, partition, file_id, existing.base_file if existing else None)
        elif p.table_type == "COPY_ON_WRITE":
            h = stage_handle(self.ctx, partition, file_id, existing)
        elif key in self._rewrites and existing is not None:
            # a MERGE_ON_READ small file (no log files) taking inserts: a new base file version,
            # as Java's BaseSparkDeltaCommitActionExecutor.handleUpdate does for small files
            # under an index that cannot index logs
            h = MergeHandle(self.ctx, partition, file_id, existing.base_file)
        elif existing is None and not self.bucketed:
            # a new MERGE_ON_READ file group of a non-bucket index starts with a base file
            h = MergeHandle(self.ctx, partition, file_id, None)
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


def _string(a: pa.Array | pa.ChunkedArray) -> pa.Array:
    """``a`` as one string array."""
    arr = a.combine_chunks() if isinstance(a, pa.ChunkedArray) else a
    return arr if arr.type == pa.string() else arr.cast(pa.string())


def _first_positions(indices: np.ndarray, n: int) -> np.ndarray:
    """For dictionary ``indices`` over ``n`` values, the first position of each value."""
    first = np.full(n, len(indices), np.int64)
    np.minimum.at(first, indices, np.arange(len(indices), dtype=np.int64))
    return first


def _set_partitions(table: pa.Table, mask: np.ndarray, parts: pa.Array) -> pa.Table:
    """``table`` with ``_hoodie_partition_path`` replaced by ``parts`` where ``mask``."""
    i = table.schema.get_field_index(PARTITION_PATH_METADATA_FIELD)
    col = pc.if_else(pa.array(mask), parts, _string(table.column(i)))
    return table.set_column(i, table.schema.field(i), col)
