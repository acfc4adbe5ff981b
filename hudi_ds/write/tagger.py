"""Tagging: the file group of every record of a write, and the write's workload profile.

Java prepares a write in two steps before any file is written: the index tags every record
with the location of its key (``HoodieIndex.tagLocation``: ``HoodieSimpleBucketIndex``,
``HoodieSimpleIndex`` / ``HoodieGlobalSimpleIndex``, ``HoodieBloomIndex`` /
``HoodieGlobalBloomIndex``), and the partitioner gives the untagged records (the inserts)
their buckets (``UpsertPartitioner`` / ``SparkUpsertDeltaCommitPartitioner``: small files
first, then new file groups), counting the ``WorkloadProfile`` of the write on the way.
:class:`Tagger` does both for one task, batch by batch, and holds what they need across the
task's batches: the file groups tagged so far (target numbers), the new keys the task inserted
(so that a key's later versions join its first one), the
:class:`~hudi_ds.write.assigner.InsertAssigner` with the small files it fills, and the
workload profile.

The task writer (:mod:`hudi_ds.write.task_writer`) prepares the rows before tagging and hands
the tagged rows to the file groups' handles after it (Java's write handles).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hudi_ds.index import KeyCache
from hudi_ds.index.bucket import bucket_groups, new_bucket_file_id
from hudi_ds.index.consistent_hashing import Rings
from hudi_ds.index.lookup import KeyLocations, Lookup, LookupSpec
from hudi_ds.index.pending_resize import ChildRouter
from hudi_ds.layout.file_group import FileSlice
from hudi_ds.merge.engine import DataPart, merge_versions
from hudi_ds.schema.meta import PARTITION_PATH_METADATA_FIELD, RECORD_KEY_METADATA_FIELD
from hudi_ds.table.reader import ReadStats, SliceReadContext, read_file_slice
from hudi_ds.table_config import TableType
from hudi_ds.write.assigner import (
    INSERT_SLOTS,
    InsertAssigner,
    insert_slots,
    place,
    records_per_new_file,
    slot_file_id,
    small_files,
)
from hudi_ds.write.handles import HandleContext, delete_keys, precombine, stored_rows
from hudi_ds.write.operation import DELETE, DELETE_PREPPED, UPSERT, Rows
from hudi_ds.write.plan import BucketFiles, WritePlan
from hudi_ds.write.workload import WorkloadProfile

#: operations whose records are tagged by a non-bucket index (Java tags upserts and deletes;
#: ``insert`` and ``bulk_insert`` write every record as an insert, duplicates included).
#: ``delete_prepped``: Java's deletePrepped takes the location the rows were read from
#: (DataSourceUtils.doDeleteOperation sets it from ``_hoodie_file_name``); hudi_ds locates its
#: keys by the index instead, which finds the same file groups
_TAGGING_OPERATIONS = frozenset({UPSERT, DELETE, DELETE_PREPPED})


@dataclass(frozen=True)
class Tagged:
    """A prepared batch with the file group of every row (:meth:`Tagger.tag`).

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


class Tagger:
    """Tags one task's records with their file groups (index lookup and bucket assignment).

    Args:
        plan: the write's plan (operation, options, instant, pending compactions).
        ctx: the task's handle context (storage; the merge spec of a partition move).
        files: the latest slices of the partitions the task writes (shared with its handles).
        exclusive: the only writer task of the instant (the embedded API); False for the tasks
            of a Spark write (see :meth:`tag` for what non-exclusive tasks may not do).
        lookup: the index lookup of a non-bucket index (default: the table's,
            :meth:`hudi_ds.index.Index.lookup`, with a key cache so that the task's batches read
            each candidate file once); a long-lived writer passes its state index.
        appends_to_log: whether the task's updates of a file group ``(partition, file id)``
            already go to a log file (such a file group takes no inserts).

    Attributes:
        workload: the task's :class:`~hudi_ds.write.workload.WorkloadProfile`.
        index: the write's index (:class:`~hudi_ds.index.Index`).
        bucketed: the table has a bucket index (rows are routed by the hash of their key).
        slotted: the new keys go to insert slots (a tagging write of a non-exclusive task).
        rewrites: the MERGE_ON_READ small files taking inserts, rewritten by a merge handle (a
            new base file).
    """

    def __init__(
        self,
        plan: WritePlan,
        ctx: HandleContext,
        files: BucketFiles,
        exclusive: bool,
        lookup: Lookup | None,
        appends_to_log: Callable[[str, str], bool],
    ) -> None:
        self.plan = plan
        self.options = o = plan.options
        self.storage = ctx.storage
        self._ctx = ctx
        self.files = files
        self.exclusive = exclusive
        self._appends_to_log = appends_to_log
        self.workload = WorkloadProfile()
        self.index = index = o.index
        self.bucketed = index.routes_by_hash
        self.lookup: Lookup | None = None
        self._key_cache = KeyCache()
        self._rings: Rings | None = None  # consistent hashing: the partitions' rings
        self.children: ChildRouter | None = None  # ... and the pending resizes' children
        if self.bucketed and index.layout.consistent:
            vis = plan.visibility
            self._rings = Rings(self.storage, index.layout, lambda i: i in vis.instants)
            if plan.pending_resizes:
                self.children = ChildRouter(plan.pending_resizes, self._rings.ring, index.layout)
        if not self.bucketed:
            # one key cache per task: its batches' lookups read each candidate file once
            self.lookup = lookup if lookup is not None else index.lookup(self._key_cache)
        # file groups (partition, file id) by target number, stable for the task's life
        self._targets: list[tuple[str, str]] = []
        self._target_ids: dict[tuple[str, str], int] = {}
        # MERGE_ON_READ small files taking inserts: rewritten by a MergeHandle (new base file)
        self.rewrites: set[tuple[str, str]] = set()
        # the new keys this task inserted (match string -> target), so that later versions of
        # a key in later batches join the file group its first version went to
        self._new_keys: list[pa.Array] = []
        self._new_targets: list[np.ndarray] = []
        self._new_index: tuple[pa.Array, np.ndarray] | None = None
        sizing = o.sizing
        self._assigner = InsertAssigner(
            plan.avg_record_size,
            sizing.max_file_size,
            records_per_new_file(
                sizing.max_file_size,
                plan.avg_record_size,
                sizing.auto_split,
                sizing.insert_split_size,
            ),
        )
        # inserts of a tagging write by non-exclusive tasks go to insert slots (_tag_inserts)
        self.slotted = not self.bucketed and not exclusive and plan.operation in _TAGGING_OPERATIONS

    def tag(self, data: pa.Table, deletes: pa.Table) -> Tagged:
        """The file group of every row of a prepared batch (its records ``data`` and delete
        keys ``deletes``, :meth:`hudi_ds.write.task_writer.TaskWriter.prepare`), and the
        task's workload counted.

        Bucket index: the file group of the key's bucket (hash of the key), as Hudi's bucket
        index. SIMPLE / BLOOM / GLOBAL_*: the keys are looked up (once per batch) in the
        latest slices of the touched partitions (every partition for a global index); an
        update goes to the file group holding its key, a delete of a key the table does not
        hold is dropped (Java ``HoodieDeleteHelper``), and inserts are packed by the
        :class:`~hudi_ds.write.assigner.InsertAssigner`: small files first, then new file
        groups (``insert`` / ``bulk_insert`` are not tagged: every record is an insert, as in
        Java).

        Non-exclusive tasks (several tasks write one instant, e.g. Spark's) take no small
        files: two tasks never pack the same small file past its size, and no MERGE_ON_READ
        base file is rewritten by two tasks of one instant (their updates stage for the
        commit's merge on COPY_ON_WRITE, and append to logs on MERGE_ON_READ). The new keys of
        an upsert go to the *insert slot* of a hash of the key
        (:data:`~hudi_ds.write.assigner.INSERT_SLOTS` per partition, file ids derived from the
        instant, partition and slot), the same in every task, so the versions of a key that
        several tasks receive meet in one file group; the slots are staged and the commit
        packs them into new file groups with base files (:func:`hudi_ds.write.cow.merge_staged`),
        combining each key's versions under the table's merge mode.
        """
        dels = deletes
        if data.num_rows + dels.num_rows == 0:
            return Tagged(data, np.empty(0, np.int64), dels, np.empty(0, np.int64), self._targets)
        if self.bucketed:
            return self._tag_buckets(data, dels)
        return self._tag_located(data, dels)

    def release(self) -> None:
        """The task's input is all tagged: free what only its lookups needed (the keys the
        SIMPLE lookups kept, before the handles' merges need the memory)."""
        self._key_cache.clear()

    def _target(self, partition: str, file_id: str) -> int:
        key = (partition, file_id)
        t = self._target_ids.get(key)
        if t is None:
            t = self._target_ids[key] = len(self._targets)
            self._targets.append(key)
        return t

    def _tag_updates(self, parts: pa.Array, file_ids: pa.Array, instants: pa.Array) -> np.ndarray:
        """Target numbers of rows tagged to existing file groups (aligned ``(partition, file
        id)`` arrays, vectorised), each group counted as updated in the workload profile with
        its prev commit from ``instants``."""
        if len(parts) == 0:
            return np.empty(0, np.int64)
        pair = pc.binary_join_element_wise(parts, file_ids, "/")
        enc = pc.dictionary_encode(pair)
        idx = np.asarray(enc.indices, dtype=np.int64)
        counts = np.bincount(idx, minlength=len(enc.dictionary))
        sel = pa.array(first_positions(idx, len(enc.dictionary)))
        ids = np.empty(len(enc.dictionary), np.int64)
        for g, (p, f, i, n) in enumerate(
            zip(
                parts.take(sel).to_pylist(),
                file_ids.take(sel).to_pylist(),
                instants.take(sel).to_pylist(),
                counts.tolist(),
                strict=True,
            )
        ):
            ids[g] = self._target(p, f)
            self.workload.add_updates(p, f, i, n)
        return ids[idx]

    def _tag_groups(self, groups: np.ndarray, loc: KeyLocations) -> np.ndarray:
        """Target numbers of rows located in the file groups numbered ``groups`` of ``loc``
        (integer work; one step per file group), each group counted as updated in the workload
        profile with its base instant as prev commit, in the order the groups first occur
        (as :meth:`_tag_updates`)."""
        if len(groups) == 0:
            return np.empty(0, np.int64)
        counts = np.bincount(groups)  # group numbers are small (one per candidate slice)
        uniq = np.flatnonzero(counts)
        counts = counts[uniq]
        dense = np.empty(int(uniq[-1]) + 1, np.int64)
        dense[uniq] = np.arange(len(uniq))
        inverse = dense[groups]
        first = first_positions(inverse, len(uniq))
        ids = np.empty(len(uniq), np.int64)
        order = np.argsort(first, kind="stable")
        sel = pa.array(uniq[order])
        for g, p, f, i in zip(
            order.tolist(),
            loc.group_partitions.take(sel).to_pylist(),
            loc.group_file_ids.take(sel).to_pylist(),
            loc.group_instants.take(sel).to_pylist(),
            strict=True,
        ):
            ids[g] = self._target(p, f)
            self.workload.add_updates(p, f, i, int(counts[g]))
        return ids[inverse]

    def _tag_buckets(self, data: pa.Table, dels: pa.Table) -> Tagged:
        """Bucket index: every row goes to its bucket's file group (Java
        ``HoodieSimpleBucketIndex.tagLocation``). A row whose bucket has a file group is tagged
        with it (an update in the workload profile, prev commit the slice's base instant); a
        row of a bucket without one is an insert into a new file group. A delete of a key
        whose bucket has no file group is dropped, as ``HoodieDeleteHelper`` drops untagged
        deletes (the table cannot hold the key; no empty file group is created for it)."""
        drop_untagged = self.plan.operation.rows is Rows.DELETES
        out: list[np.ndarray] = []
        for rows in (data, dels):
            if rows.num_rows == 0:
                out.append(np.empty(0, np.int64))
                continue
            keys = rows.column(RECORD_KEY_METADATA_FIELD)
            parts = string_array(rows.column(PARTITION_PATH_METADATA_FIELD))
            enc = pc.dictionary_encode(parts)
            pidx = np.asarray(enc.indices, dtype=np.int64)
            names = enc.dictionary.to_pylist()
            buckets, width = self._buckets_of(keys, pidx, names)
            uniq, inverse, counts = bucket_groups(pidx * width + buckets, len(names) * width)
            ids = np.empty(len(uniq), np.int64)
            for i, g in enumerate(uniq.tolist()):
                partition, bucket = names[g // width], g % width
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
            out.append(ids[inverse])
        del_t = out[1]
        if len(del_t) and (del_t < 0).any():
            keep = del_t >= 0
            dels, del_t = dels.filter(pa.array(keep)), del_t[keep]
        data_t = out[0]
        if self.children is not None:  # copies of the rows under a pending resize
            data, data_t = self.children.add(data, data_t, self._targets, self._child)
            dels, del_t = self.children.add(dels, del_t, self._targets, self._child)
        return Tagged(data, data_t, dels, del_t, self._targets)

    def _child(self, partition: str, file_id: str, instant: str, n: int) -> int:
        self.workload.add_updates(partition, file_id, instant, n)  # (a copy: ChildRouter)
        return self._target(partition, file_id)

    def _buckets_of(
        self, keys: pa.Array, pidx: np.ndarray, names: list[str]
    ) -> tuple[np.ndarray, int]:
        """The bucket of every row (rows of partition ``names[pidx[i]]``) and an upper bound of
        the bucket numbers (consistent hashing: its node in the partition's ring)."""
        layout = self.index.layout
        if self._rings is not None:  # consistent hashing
            return self._rings.nodes_of(keys, pidx, names)
        per = layout.buckets_in(names)  # a partition-level table's counts differ
        buckets = layout.bucket_ids(keys, self.options.keys.complex_key, per[pidx])
        return buckets.astype(np.int64), int(per.max(initial=1))

    def _bucket_location(self, partition: str, bucket: int) -> tuple[str, str | None]:
        """The file id of ``bucket``'s file group in ``partition`` and the base instant of its
        latest slice (a pending compaction's when one is planned on it, as Java's file-system
        view opens that slice); a bucket without a file group gets the new file group's id
        and None. Consistent hashing: the file group of the ring's node ``bucket``."""
        p = self.plan
        if self._rings is not None:
            file_id = self._rings.file_id(partition, bucket)
            found = self.files.by_file_id(partition).get(file_id)
            if found is not None and p.operation.merges_existing:
                return file_id, p.base_instant_of(found)
            return file_id, None
        existing = p.operation.merges_existing and self.files.bucket_slice(partition, bucket)
        if existing:
            return existing.file_id, p.base_instant_of(existing)
        return new_bucket_file_id(partition, bucket, p.instant), None

    def _lookup_spec(self) -> LookupSpec:
        o = self.options
        return LookupSpec(
            record_key_fields=tuple(o.keys.record_key_fields),
            complex_key=o.keys.complex_key,
            meta_fields=self.plan.table_config.populate_meta_fields,
            # SIMPLE / BLOOM index base files only (Java canIndexLogFiles() = false): their
            # inserts never go to logs (new file groups get base files), so their lookups read
            # the logs only of slices whose keys another index put in logs (reads_logs)
            read_logs=self.index.can_index_log_files,
            prune_by_ranges=self.index.prune_by_ranges,
            use_metadata=self.index.use_metadata,
            logged_inserts=self.plan.logged_inserts,
        )

    def _candidate_slices(self, parts: pa.Array) -> list[FileSlice]:
        """The latest slices a lookup searches: of the touched partitions, or of every
        partition for a global index (each partition listed once per task)."""
        global_ = self.index.is_global
        names = self.files.partitions() if global_ else pc.unique(parts).to_pylist()
        return [s for p in names for s in self.files.by_file_id(p).values()]

    def _tag_located(self, data: pa.Table, dels: pa.Table) -> Tagged:
        """SIMPLE / BLOOM / GLOBAL_* indexes: rows whose keys the table holds go to those file
        groups, the others are inserts (where this task put the key before, else packed), and
        deletes of keys neither the table nor this task holds are dropped."""
        o = self.options
        op = self.plan.operation
        if self.index.is_global:
            # Java de-duplicates a global index's input by record key alone before tagging
            # (HoodieWriteHelper.deduplicateRecords): one version per key, whatever partition
            # the others name. Across the batches of a task, later versions of a key join the
            # file group its first version went to (see _remember).
            data, dels = precombine(data, dels, o.merge, self.plan.partial_columns)
        nd = data.num_rows
        dkeys = string_array(data.column(RECORD_KEY_METADATA_FIELD))
        dparts = string_array(data.column(PARTITION_PATH_METADATA_FIELD))
        xkeys = string_array(dels.column(RECORD_KEY_METADATA_FIELD))
        xparts = string_array(dels.column(PARTITION_PATH_METADATA_FIELD))
        copies: _Copies | None = None
        if op.merges_existing and op in _TAGGING_OPERATIONS:
            data, data_t, dels, del_t, inserts, copies = self._tag_stored(
                data, dels, (dkeys, dparts, xkeys, xparts)
            )
        else:
            data_t = np.full(nd, -1, np.int64)
            del_t = np.full(dels.num_rows, -1, np.int64)
            inserts = np.ones(nd, dtype=bool)
        # -- inserts: where this task put the key before, else packed
        ins = np.flatnonzero(inserts)
        if len(ins):
            data, data_t = self._tag_inserts(data, data_t, ins)
        self._tag_unstored_deletes(del_t, xkeys, xparts)
        dels, del_t = self._drop_untagged_deletes(dels, del_t)
        keep = data_t >= 0
        if not keep.all():  # rows a partition move dropped (merged into a delete)
            data = data.filter(pa.array(keep))
            data_t = data_t[keep]
        if copies is not None:
            data, data_t, dels, del_t = self._add_copies(data, data_t, dels, del_t, copies)
        return Tagged(data, data_t, dels, del_t, self._targets)

    def _copies(self, loc: KeyLocations, keys: pa.Array, parts: pa.Array) -> _Copies | None:
        """The keys held by several file groups among the looked-up ``keys`` (in ``parts``):
        each key's identity, its primary group and its other groups (None: no key is held
        twice)."""
        if not len(loc.more_rows):
            return None
        sel = pa.array(loc.more_rows)
        enc = pc.dictionary_encode(self._match(keys.take(sel), parts.take(sel)))
        idx = np.asarray(enc.indices, dtype=np.int64)
        n_groups = len(loc.group_file_ids)
        pairs = np.unique(idx * n_groups + loc.more_groups)  # sorted by identity
        first = first_positions(idx, len(enc.dictionary))
        primary = np.asarray(loc.group, dtype=np.int64)[loc.more_rows[first]]
        return _Copies(enc.dictionary, primary, pairs // n_groups, pairs % n_groups, loc)

    def _add_copies(
        self, data: pa.Table, data_t: np.ndarray, dels: pa.Table, del_t: np.ndarray, c: _Copies
    ) -> tuple[pa.Table, np.ndarray, pa.Table, np.ndarray]:
        """The tagged rows with a copy of every row tagged to the primary file group of a key
        held by several, for each other group holding it: Java's join tags an incoming record
        once per location, so an update or a delete reaches every copy of the key. A global
        index's copy takes the partition of the group it goes to, as Java's
        ``HoodieIndexUtils.createNewTaggedHoodieRecord`` keys it.

        With ``update.partition.path`` a global key ends in one partition: the copies in other
        partitions than the one its update lands in are deleted. (Java's
        ``mergeForPartitionUpdatesIfNeeded`` merges the update with each copy and inserts the
        merged record once per copy that moves, leaving the key several times in its new
        partition.)
        """
        move = self.index.is_global and self.index.update_partition_path
        data, data_t, stale = self._copy_rows(data, data_t, c, move)
        dels, del_t, _ = self._copy_rows(dels, del_t, c, False)
        if stale is not None:
            rows, groups = stale
            parts = c.loc.group_partitions.take(pa.array(groups))
            extra = delete_keys(dels.schema, rows.column(RECORD_KEY_METADATA_FIELD), parts)
            dels = pa.concat_tables([dels, extra]) if dels.num_rows else extra
            del_t = np.concatenate([del_t, self._tag_groups(groups, c.loc)])
        return data, data_t, dels, del_t

    def _copy_rows(
        self, rows: pa.Table, targets: np.ndarray, c: _Copies, split: bool
    ) -> tuple[pa.Table, np.ndarray, tuple[pa.Table, np.ndarray] | None]:
        """``rows`` and ``targets`` with the copies of :meth:`_add_copies`; with ``split``, the
        copies bound for another partition than their row's are left out and returned with
        their groups (to be deleted there)."""
        if rows.num_rows == 0:
            return rows, targets, None
        loc = c.loc
        row_parts = string_array(rows.column(PARTITION_PATH_METADATA_FIELD))
        ident = self._match(string_array(rows.column(RECORD_KEY_METADATA_FIELD)), row_parts)
        pos = np.asarray(pc.index_in(ident, value_set=c.identities).fill_null(-1), np.int64)
        prim = pa.array(c.primary)
        primary_t = np.array(
            [  # one per key held twice
                self._target_ids.get((p, f), -2)
                for p, f in zip(
                    loc.group_partitions.take(prim).to_pylist(),
                    loc.group_file_ids.take(prim).to_pylist(),
                    strict=True,
                )
            ],
            np.int64,
        )
        hit = np.flatnonzero(pos >= 0)
        hit = hit[targets[hit] == primary_t[pos[hit]]]
        if not len(hit):
            return rows, targets, None
        n = np.bincount(c.owner, minlength=len(c.identities))[pos[hit]]
        src = np.repeat(hit, n)
        starts = np.searchsorted(c.owner, pos[hit])
        offsets = np.arange(len(src), dtype=np.int64) - np.repeat(np.cumsum(n) - n, n)
        groups = c.groups[np.repeat(starts, n) + offsets]
        gparts = loc.group_partitions.take(pa.array(groups))
        stale = None
        if split:
            away = ~np.asarray(pc.equal(gparts, row_parts.take(pa.array(src))), dtype=bool)
            if away.any():
                stale = (rows.take(pa.array(src[away])), groups[away])
                src, groups, gparts = src[~away], groups[~away], gparts.filter(pa.array(~away))
        extra = rows.take(pa.array(src))
        if self.index.is_global:
            extra = _set_partitions(extra, np.ones(len(src), dtype=bool), gparts)
        extra_t = self._tag_groups(groups, loc)
        return pa.concat_tables([rows, extra]), np.concatenate([targets, extra_t]), stale

    def _tag_stored(
        self,
        data: pa.Table,
        dels: pa.Table,
        keys: tuple[pa.Array, pa.Array, pa.Array, pa.Array],
    ) -> tuple[pa.Table, np.ndarray, pa.Table, np.ndarray, np.ndarray, _Copies | None]:
        """Look the keys of a tagging write up (one lookup for the batch's records and
        deletes) and tag the rows whose keys the table holds (in their primary file group;
        :meth:`_add_copies` adds the other copies of keys held twice).

        Args:
            keys: record keys and partitions of ``data``, then of ``dels``.

        Returns:
            ``data``, its targets, ``dels``, their targets (-1: not tagged; a global index
            may have re-partitioned rows and added the deletes of partition moves), the
            mask of the ``data`` rows still to insert, and the keys held twice.
        """
        dkeys, dparts, xkeys, xparts = keys
        nd = data.num_rows
        assert self.lookup is not None
        parts = pa.concat_arrays([dparts, xparts])
        all_keys = pa.concat_arrays([dkeys, xkeys])
        loc = self.lookup(
            self.storage,
            self._candidate_slices(parts),
            all_keys,
            self.index.lookup_partitions(parts),
            self._lookup_spec(),
        )
        copies = self._copies(loc, all_keys, parts)
        grp = np.asarray(loc.group, dtype=np.int64)
        held: tuple[pa.Array, pa.Array, pa.Array] | None = None
        if self.index.is_global:  # a global index compares and moves partitions by name
            held = (
                string_array(loc.partition).fill_null(""),
                string_array(loc.file_id).fill_null(""),
                string_array(loc.instant).fill_null(""),
            )
        data, data_t, inserts, moving = self._tag_stored_updates(
            data, dkeys, dparts, grp[:nd], loc, None if held is None else held[0].slice(0, nd)
        )
        dels, del_t = self._tag_stored_deletes(
            dels, xkeys, xparts, grp[nd:], loc, None if held is None else held[0].slice(nd)
        )
        if moving.any():
            assert held is not None  # only a global index moves keys
            data, data_t, dels, del_t, more = self._move_partitions(
                data,
                data_t,
                dels,
                del_t,
                moving,
                (held[0].slice(0, nd), held[1].slice(0, nd), held[2].slice(0, nd)),
            )
            inserts = np.concatenate([inserts, more[nd:]])
        return data, data_t, dels, del_t, inserts, copies

    def _tag_stored_updates(
        self,
        data: pa.Table,
        keys: pa.Array,
        parts: pa.Array,
        grp: np.ndarray,
        loc: KeyLocations,
        held_parts: pa.Array | None,
    ) -> tuple[pa.Table, np.ndarray, np.ndarray, np.ndarray]:
        """Tag the records whose keys the table holds (``grp``: their group in ``loc``, -1
        where not held) with those file groups.

        Args:
            held_parts: a global index's partitions holding the keys (None: not global). A key
                held in another partition is re-keyed to it, or, with
                ``update.partition.path``, left to :meth:`_move_partitions`.

        Returns:
            ``data`` (re-keyed), its targets (-1: not tagged), the mask of rows to insert (the
            keys the table does not hold, and keys this task already moved, which join their
            moved version), and the mask of rows whose keys move partitions.
        """
        nd = data.num_rows
        data_t = np.full(nd, -1, np.int64)
        moving = np.zeros(nd, dtype=bool)
        found = grp >= 0
        dfound = found
        again = np.zeros(nd, dtype=bool)
        if held_parts is not None and nd and self._new_keys:
            # a key this task already moved to another partition joins its moved version
            # (Java de-duplicates a global write's input by key before tagging)
            again = dfound & (self._remembered(keys, parts) >= 0)
            dfound = dfound & ~again
        if held_parts is not None and nd:
            other = dfound & ~np.asarray(pc.equal(held_parts, parts).fill_null(False), dtype=bool)
            if other.any():
                if self.index.update_partition_path:
                    # HoodieIndexUtils.mergeForPartitionUpdatesIfNeeded (_move_partitions)
                    moving = other
                    dfound = dfound & ~other
                else:
                    # re-keyed to the partition holding the key, updated in place
                    data = _set_partitions(data, other, held_parts)
        upd = np.flatnonzero(dfound)
        if len(upd):
            data_t[upd] = self._tag_groups(grp[upd], loc)
            if held_parts is not None:
                sel = pa.array(upd)
                self._remember(keys.take(sel), held_parts.take(sel), data_t[upd])
        return data, data_t, ~found | again, moving

    def _tag_stored_deletes(
        self,
        dels: pa.Table,
        keys: pa.Array,
        parts: pa.Array,
        grp: np.ndarray,
        loc: KeyLocations,
        held_parts: pa.Array | None,
    ) -> tuple[pa.Table, np.ndarray]:
        """Tag the deletes at their keys' locations: where this task put the key (a global
        index), else the file group holding it (``grp``: its group in ``loc``, -1 where not
        held; ``held_parts``: a global index's partitions holding the keys).

        Returns:
            ``dels`` re-partitioned to where their keys are, and their targets (-1: a key the
            table does not hold, dropped unless this task inserts it).
        """
        del_t = np.full(dels.num_rows, -1, np.int64)
        xf = grp >= 0
        if held_parts is not None and dels.num_rows and self._new_keys:
            # a key this task wrote elsewhere is deleted where this task put it
            rem = self._remembered(keys, parts)
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
            if held_parts is not None:
                dels = _set_partitions(dels, xf, held_parts)
            # a tagged delete is an update of its file group in Java's workload profile
            del_t[hit] = self._tag_groups(grp[hit], loc)
        return dels, del_t

    def _tag_unstored_deletes(self, del_t: np.ndarray, keys: pa.Array, parts: pa.Array) -> None:
        """Tag, in ``del_t``, the deletes of keys the table does not hold: a key this task
        inserted (not yet in the table) is deleted where it went; in a non-exclusive upsert
        a key another task may insert is deleted in the key's insert slot."""
        miss = np.flatnonzero(del_t < 0)
        if len(miss) and self._new_keys:
            sel = pa.array(miss)
            del_t[miss] = self._remembered(keys.take(sel), parts.take(sel))
        miss = np.flatnonzero(del_t < 0)
        if len(miss) and self.slotted and self.plan.operation == UPSERT:
            # ==: executors hold unpickled copies.
            # another task of this write may insert the key: the delete (an upsert with
            # _hoodie_is_deleted) goes to the key's insert slot, where the commit's merge
            # weighs it against that insert by the merge mode (Java combines a key's versions
            # before tagging); a slot holding only deletes writes no file group (merge_staged)
            sel = pa.array(miss)
            del_t[miss] = self._slot_targets(keys.take(sel), parts.take(sel))

    def _drop_untagged_deletes(
        self, dels: pa.Table, del_t: np.ndarray
    ) -> tuple[pa.Table, np.ndarray]:
        """``dels`` and ``del_t`` without the untagged deletes (keys nobody holds), which an
        upsert's workload profile counts as inserts as Java's does."""
        keep_d = del_t >= 0
        if keep_d.all():
            return dels, del_t
        if self.plan.operation.rows is not Rows.DELETES:
            # `_hoodie_is_deleted` rows of keys the table does not hold: Java routes them
            # as untagged records (inserts that write nothing), counted as inserts in
            # its workload profile (BaseSparkCommitActionExecutor.buildProfile)
            gone = pc.value_counts(
                string_array(dels.column(PARTITION_PATH_METADATA_FIELD)).filter(pa.array(~keep_d))
            )
            for entry in gone.to_pylist():
                self.workload.add_inserts(entry["values"], entry["counts"])
        return dels.filter(pa.array(keep_d)), del_t[keep_d]

    def _match(self, keys: pa.Array, parts: pa.Array) -> pa.Array:
        """What identifies a new key (:meth:`~hudi_ds.index.Index.identities`)."""
        return self.index.identities(keys, parts)

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

    def _slot_targets(self, keys: pa.Array, parts: pa.Array) -> np.ndarray:
        """Targets of the insert slots of ``keys`` in ``parts`` (see ``_tag_inserts``)."""
        if len(keys) == 0:
            return np.empty(0, np.int64)
        enc = pc.dictionary_encode(parts)
        names = enc.dictionary.to_pylist()
        pairs = np.asarray(enc.indices, dtype=np.int64) * INSERT_SLOTS + insert_slots(keys)
        uniq, inverse = np.unique(pairs, return_inverse=True)
        instant = self.plan.instant
        ids = np.array(
            [
                self._target(
                    names[g // INSERT_SLOTS],
                    slot_file_id(instant, names[g // INSERT_SLOTS], g % INSERT_SLOTS),
                )
                for g in uniq.tolist()
            ],
            np.int64,
        )
        return ids[inverse.reshape(-1)]

    def _tag_inserts(
        self, data: pa.Table, data_t: np.ndarray, rows: np.ndarray
    ) -> tuple[pa.Table, np.ndarray]:
        """Targets of the insert rows ``rows`` of ``data``: the file group a key went to
        earlier in this task, else the :class:`InsertAssigner`'s (distinct keys in input
        order, contiguously per bucket: see :func:`~hudi_ds.write.assigner.place`)."""
        sel = pa.array(rows)
        keys = string_array(data.column(RECORD_KEY_METADATA_FIELD)).take(sel)
        parts = string_array(data.column(PARTITION_PATH_METADATA_FIELD)).take(sel)
        before = self._remembered(keys, parts)
        if self.index.is_global and (before >= 0).any():
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
        firsts = first_positions(idx, n_unique)
        uparts = fparts.take(pa.array(firsts))
        penc = pc.dictionary_encode(uparts)
        pidx = np.asarray(penc.indices, dtype=np.int64)
        unique_t = np.empty(n_unique, np.int64)
        if self.slotted:
            # several tasks write this instant: a new key goes to the insert slot of its hash,
            # the same in every task, so that its versions meet in one file group (Java
            # shuffles the records by key before tagging); the commit merges each slot once
            # (write/cow.py merge_staged) and packs the slots into new file groups
            unique_t = self._slot_targets(string_array(fkeys.take(pa.array(firsts))), uparts)
            names = penc.dictionary.to_pylist()
            for j, partition in enumerate(names):
                self.workload.add_inserts(partition, int((pidx == j).sum()))
        for j, partition in enumerate([] if self.slotted else penc.dictionary.to_pylist()):
            members = np.flatnonzero(pidx == j)
            self._open_partition(partition)
            assigned = self._assigner.assign(partition, len(members))
            ids = np.array([self._target(b.partition, b.file_id) for b, _ in assigned], np.int64)
            for b, _ in assigned:
                if b.small_file and self.plan.table_type is TableType.MERGE_ON_READ:
                    self.rewrites.add((b.partition, b.file_id))
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
            return self._appends_to_log(part, file_id)  # its updates already go to a log

        o = self.options
        files = small_files(
            self.files.by_file_id(partition).values(),
            p.table_type,
            o.sizing.small_file_limit,
            o.sizing.small_file_candidates,
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
        mkeys = string_array(mv.column(RECORD_KEY_METADATA_FIELD))
        opart, ofid, oinst = (a.take(sel) for a in old)
        stored = self._read_stored(opart, ofid, mkeys)
        res = merge_versions(
            [
                stored,
                DataPart(self._ctx.carried(mv), partial=self.plan.partial_columns is not None),
            ],
            self._ctx.merge_spec,
            self.plan.schema,
            has_base=True,
        )
        merged = res.rows
        skeys = string_array(stored.column(RECORD_KEY_METADATA_FIELD))
        held = _first_locations(mkeys, opart, ofid, oinst)
        mk = string_array(merged.column(RECORD_KEY_METADATA_FIELD))
        mpos = np.asarray(pc.index_in(mk, value_set=held.keys), dtype=np.int64)
        mpart = string_array(merged.column(PARTITION_PATH_METADATA_FIELD))
        in_place = np.asarray(pc.equal(mpart, held.partitions.take(pa.array(mpos))), dtype=bool)
        had_stored = np.asarray(pc.is_in(mk, value_set=skeys), dtype=bool)
        # the old rows of moving data are replaced by the merged records
        data_t[rows] = -1
        new_rows, new_t, insert_mask = self._place_merged(merged, in_place, mpos, held)
        # a record moved to another partition is deleted at its old location (of stored
        # records only), and 3. a merge that deletes the key deletes it at the old location
        gone = np.flatnonzero(~in_place & had_stored)
        dead_keys = []
        if len(gone):
            dead_keys.append(mk.take(pa.array(gone)))
        deleted_versions = res.deleted
        if len(deleted_versions):
            all_keys = pa.concat_arrays([skeys, mkeys])
            dead_keys.append(all_keys.take(pa.array(deleted_versions, pa.int64())))
        if dead_keys:
            dels, del_t = self._delete_at_old(
                dels, del_t, pc.unique(pa.concat_arrays(dead_keys)), held
            )
        if new_rows:
            add = pa.concat_tables(new_rows).cast(data.schema)
            data = pa.concat_tables([data, add])
            data_t = np.concatenate([data_t, *new_t])
            more = np.concatenate([np.zeros(len(moving), dtype=bool), *insert_mask])
        else:
            more = np.zeros(len(moving), dtype=bool)
        return data, data_t, dels, del_t, more

    def _place_merged(
        self, merged: pa.Table, in_place: np.ndarray, mpos: np.ndarray, held: _Held
    ) -> tuple[list[pa.Table], list[np.ndarray], list[np.ndarray]]:
        """The merged records of moving keys, their targets and insert masks: 1. where the
        stored record won (``in_place``), an update of the file group holding the key
        (``mpos``: the key's position in ``held``); 2. the others, inserts in their new
        partition (untagged)."""
        new_rows: list[pa.Table] = []
        new_t: list[np.ndarray] = []
        insert_mask: list[np.ndarray] = []
        # 1. stored record won: update in place (written as the merged record)
        keep = np.flatnonzero(in_place)
        if len(keep):
            t = merged.take(pa.array(keep))
            new_rows.append(t)
            ks = pa.array(mpos[keep])
            tp, tf = held.partitions.take(ks), held.file_ids.take(ks)
            in_place_t = self._tag_updates(tp, tf, held.instants.take(ks))
            new_t.append(in_place_t)
            self._remember(string_array(t.column(RECORD_KEY_METADATA_FIELD)), tp, in_place_t)
            insert_mask.append(np.zeros(len(keep), dtype=bool))
        # 2. merged record in another partition: an insert there (and a delete at the old
        # location, _move_partitions)
        moved = np.flatnonzero(~in_place)
        if len(moved):
            new_rows.append(merged.take(pa.array(moved)))
            new_t.append(np.full(len(moved), -1, np.int64))
            insert_mask.append(np.ones(len(moved), dtype=bool))
        return new_rows, new_t, insert_mask

    def _delete_at_old(
        self, dels: pa.Table, del_t: np.ndarray, keys: pa.Array, held: _Held
    ) -> tuple[pa.Table, np.ndarray]:
        """``dels`` and ``del_t`` with deletes of the moving ``keys`` at the file groups holding
        them (each an update of its group in the workload profile)."""
        dpos = np.asarray(pc.index_in(keys, value_set=held.keys), dtype=np.int64)
        dp, df = held.partitions.take(pa.array(dpos)), held.file_ids.take(pa.array(dpos))
        dt = self._tag_updates(dp, df, held.instants.take(pa.array(dpos)))
        extra = delete_keys(dels.schema, keys, dp)
        dels = pa.concat_tables([dels, extra]) if dels.num_rows else extra
        return dels, np.concatenate([del_t, dt])

    def _read_stored(self, parts: pa.Array, file_ids: pa.Array, keys: pa.Array) -> pa.Table:
        """The stored (merged) records of ``keys`` in the file groups holding them."""
        p = self.plan
        o = self.options
        rctx = SliceReadContext(
            schema=p.schema,
            record_key_fields=tuple(o.keys.record_key_fields),
            complex_key=o.keys.complex_key,
            ordering_field=o.merge.ordering_field,
            merge_mode=o.merge.mode,
            populate_meta_fields=p.table_config.populate_meta_fields,
            merge=o.merge,
        )
        stats = ReadStats()
        out = []
        groups = sorted(set(zip(parts.to_pylist(), file_ids.to_pylist(), strict=True)))
        for part, fid in groups:
            fslice = self.files.by_file_id(part).get(fid)
            if fslice is None:
                continue
            rows = stored_rows(
                read_file_slice(self.storage, fslice, p.visibility, rctx, stats), self._ctx, part
            )
            hit = pc.is_in(rows.column(RECORD_KEY_METADATA_FIELD), value_set=keys)
            out.append(rows.filter(hit))
        return pa.concat_tables(out) if out else p.schema.empty_table()


def string_array(a: pa.Array | pa.ChunkedArray) -> pa.Array:
    """``a`` as one (unchunked) string array."""
    arr = a.combine_chunks() if isinstance(a, pa.ChunkedArray) else a
    return arr if arr.type == pa.string() else arr.cast(pa.string())


def first_positions(indices: np.ndarray, n: int) -> np.ndarray:
    """For dictionary ``indices`` over ``n`` values, the first position of each value."""
    first = np.full(n, len(indices), np.int64)
    np.minimum.at(first, indices, np.arange(len(indices), dtype=np.int64))
    return first


class _Copies(NamedTuple):
    """The keys of a lookup held by several file groups (:meth:`Tagger._copies`).

    Attributes:
        identities: what identifies each such key (:meth:`~hudi_ds.index.Index.identities`).
        primary: per key, its primary group in ``loc``.
        owner, groups: the other groups holding the keys (aligned; ``owner``: the key's
            position in ``identities``, ascending).
        loc: the lookup's answer (the groups' file ids, partitions, instants).
    """

    identities: pa.Array
    primary: np.ndarray
    owner: np.ndarray
    groups: np.ndarray
    loc: KeyLocations


class _Held(NamedTuple):
    """Where each moving key is held: one entry per distinct key (aligned arrays)."""

    keys: pa.Array
    partitions: pa.Array
    file_ids: pa.Array
    instants: pa.Array


def _first_locations(
    keys: pa.Array, partitions: pa.Array, file_ids: pa.Array, instants: pa.Array
) -> _Held:
    """Where each distinct key of ``keys`` lives: the old location of its first incoming
    version (aligned ``partitions``, ``file_ids``, ``instants``)."""
    first = pa.array(np.unique(np.asarray(pc.index_in(keys, value_set=keys), dtype=np.int64)))
    return _Held(
        keys.take(first), partitions.take(first), file_ids.take(first), instants.take(first)
    )


def _set_partitions(table: pa.Table, mask: np.ndarray, parts: pa.Array) -> pa.Table:
    """``table`` with ``_hoodie_partition_path`` replaced by ``parts`` where ``mask``."""
    i = table.schema.get_field_index(PARTITION_PATH_METADATA_FIELD)
    col = pc.if_else(pa.array(mask), parts, string_array(table.column(i)))
    return table.set_column(i, table.schema.field(i), col)
