"""Copy-on-write with several writer tasks: stage in the tasks, merge once per file group.

The same staging carries the insert slots of a non-bucket index written by several tasks (COW
and MOR; see :data:`~hudi_ds.write.assigner.INSERT_SLOTS`): the commit packs each partition's
slots into new file groups and merges each once, so a new key several tasks received is
written once.

A COW file group must get exactly one new base file per commit, but Spark's Python data source
API cannot route all rows of a bucket to one task. So when tasks are not exclusive writers,
each task *stages* its rows for a file group as a log file under
``.hoodie/.temp/<instant>/stage/<partition>/`` (same block format as MOR logs), and the
driver's commit merges the staged rows of each touched file group with its current base file
into the new base file -- one :class:`~hudi_ds.write.merge_handle.MergeHandle`-style merge per
file group. The cost: staged rows are written and read once more, and the merge runs where the
commit runs. Readers never see staged files (they are not in a partition folder).

Merges of different file groups run on a pool of threads, one per core
(:func:`close_merge_handles` for a task's merge handles, and the commit's merges of staged
rows): their work (Parquet decoding and encoding, Arrow kernels, numpy) releases the GIL.
"""

from __future__ import annotations

import functools
import os
import threading
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TypeVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hudi_ds.layout.file_group import FileSlice
from hudi_ds.layout.naming import file_name_of
from hudi_ds.log.block import BlockType
from hudi_ds.log.reader import decode_data_block, decode_delete_block, scan_log_bytes
from hudi_ds.schema.meta import (
    META_FIELDS,
    PARTITION_PATH_METADATA_FIELD,
    RECORD_KEY_METADATA_FIELD,
)
from hudi_ds.schema.write import conform_partial
from hudi_ds.storage import Storage
from hudi_ds.table.fs_view import FileSystemView
from hudi_ds.write.append_handle import AppendHandle
from hudi_ds.write.assigner import (
    INSERT_SLOTS,
    pack_slots,
    records_per_new_file,
    slot_file_id,
    slot_of,
)
from hudi_ds.write.handles import (
    DELETE_ORDERING,
    HandleContext,
    delete_keys,
    delete_schema,
    precombine,
)
from hudi_ds.write.markers import marker_dir
from hudi_ds.write.merge_handle import MergeHandle
from hudi_ds.write.plan import WritePlan
from hudi_ds.write.tagger import first_positions, string_array
from hudi_ds.write.write_status import WriteStatus

T = TypeVar("T")


class StageHandle(AppendHandle):
    """An append handle whose log file lives in the instant's staging folder."""

    staging = True

    def __init__(
        self, ctx: HandleContext, partition_path: str, file_id: str, existing: FileSlice | None
    ) -> None:
        super().__init__(ctx, partition_path, file_id, ctx.instant, 1, None, existing is None)
        name = file_name_of(self.path)
        stage = f"{marker_dir(ctx.instant)}/stage"
        self.path = f"{stage}/{partition_path}/{name}" if partition_path else f"{stage}/{name}"

    def close(self) -> WriteStatus | None:
        st = super().close()
        if st is None:
            return None
        return WriteStatus(st.stat, "stage", st.task)


#: Most COW merge handles closed at once (each holds its merge within its share of the task
#: budget, :attr:`~hudi_ds.write.merge_handle.MergeHandle.merge_budget`, an eighth of it).
MAX_PARALLEL_MERGES = 4


def close_merge_handles(
    handles: Sequence[MergeHandle], threads: int | None = None
) -> list[WriteStatus | None]:
    """Close ``handles`` (each merges and writes its file group's new base file) on a pool of
    threads, one per core up to :data:`MAX_PARALLEL_MERGES` (and up to ``threads``, the task's
    ``write.tasks``); the statuses in ``handles``' order.

    The work of a close -- reading the base file, the merge's Arrow kernels, the bloom
    filter's numpy hashing, Parquet encoding -- runs outside the GIL, so file groups merge on
    all cores.
    """
    workers = _workers(len(handles), threads)
    if workers > 1:
        for h in handles:
            h.read_threads = False  # one read per core already
            h.merges_in_flight = workers  # the merges share the task budget
    return _in_parallel([h.close for h in handles], threads)


def _workers(n: int, threads: int | None = None) -> int:
    return min(n, MAX_PARALLEL_MERGES, threads or os.cpu_count() or 1)


def _in_parallel(calls: Sequence[Callable[[], T]], threads: int | None = None) -> list[T]:
    """:func:`in_parallel` on up to :func:`_workers` threads (the merges' cap)."""
    return in_parallel(calls, _workers(len(calls), threads))


def in_parallel(calls: Sequence[Callable[[], T]], workers: int) -> list[T]:
    """The results of ``calls``, in order, run on up to ``workers`` threads: the calling
    thread and a pool of the others take the next call in turn. After an error no call starts;
    the error of the earliest failed call is raised once the running ones end.

    The calling thread works too: threads other than the main one allocate from their own
    malloc arenas, which give freed memory back eagerly (measured: several times the page
    faults of the same merges on the main thread).
    """
    workers = min(workers, len(calls))
    if workers <= 1:
        return [c() for c in calls]
    results: list[T | None] = [None] * len(calls)
    errors: list[tuple[int, BaseException]] = []
    lock = threading.Lock()
    todo = iter(range(len(calls)))

    def drain() -> None:
        while True:
            with lock:
                i = None if errors else next(todo, None)
            if i is None:
                return
            try:
                results[i] = calls[i]()
            except BaseException as e:  # re-raised below, in the calling thread
                with lock:
                    errors.append((i, e))
                return

    with ThreadPoolExecutor(workers - 1, thread_name_prefix="hudi-write") as pool:
        helpers = [pool.submit(drain) for _ in range(workers - 1)]
        drain()
        for f in helpers:
            f.result()
    if errors:
        raise min(errors, key=lambda e: e[0])[1]
    return results  # type: ignore[return-value]  # every call ran: no None left


def stage_handle(
    ctx: HandleContext, partition_path: str, file_id: str, existing: FileSlice | None
) -> StageHandle:
    """A staging handle for COW rows of ``file_id`` written by a non-exclusive task."""
    return StageHandle(ctx, partition_path, file_id, existing)


def merge_staged(
    storage: Storage, plan: WritePlan, statuses: list[WriteStatus]
) -> list[WriteStatus]:
    """Replace the ``stage`` statuses by one merged base file per touched file group.

    Staged insert slots (:data:`~hudi_ds.write.assigner.INSERT_SLOTS`: the new keys of a
    non-exclusive tagging write, COW or MOR) are packed per partition into new file groups
    (:func:`~hudi_ds.write.assigner.pack_slots`); every version of a key is in one slot, so
    the file group's merge combines the key's versions under the table's merge mode, whichever
    tasks wrote them. With a global index the versions of a new key staged in several
    partitions are combined by key alone first (Java de-duplicates a global write's input by
    key), and the winner goes to its partition.
    """
    out = [s for s in statuses if s.kind != "stage"]
    staged: dict[tuple[str, str], list[WriteStatus]] = defaultdict(list)
    for s in statuses:
        if s.kind == "stage":
            staged[(s.partition_path, s.file_id)].append(s)
    if not staged:
        return out
    packed = _pack_slots(plan, staged)
    latest: dict[tuple[str, str], FileSlice] = {}
    if plan.operation.merges_existing:  # else the rows go into new file groups
        view = FileSystemView(storage, plan.table_config)
        for p in {k[0] for k in staged}:
            for fs in view.latest_file_slices(p, plan.visibility):
                latest[(p, fs.file_id)] = fs
    dschema = _staged_delete_schema(plan)
    moved: dict[tuple[str, str], tuple[pa.Table, pa.Table]] = {}
    dropped: dict[str, pa.Array] = {}
    if plan.options.index.is_global and packed:
        moved, dropped = _combine_across_partitions(storage, plan, staged, packed, dschema)
    merger = _StagedMerger(
        storage,
        plan,
        plan.handle_context(storage, "0-0-0"),
        dschema,
        latest,
        moved,
        dropped,
        {(p, fid) for (p, _), fid in packed.items()},
        _workers(len(staged)),
    )
    # file groups merge on all cores, each within its share of the budget (as in a task)
    results = _in_parallel(
        [functools.partial(merger.merge, p, f, g) for (p, f), g in sorted(staged.items())]
    )
    out.extend(r for r in results if r is not None)
    return out


def _staged_delete_schema(plan: WritePlan) -> pa.Schema:
    """The schema of the staged delete keys: their ordering value typed as the table's
    ordering field (null without one)."""
    ordering = plan.options.merge.ordering_field
    otype = (
        plan.schema.field(ordering).type
        if ordering and plan.schema.get_field_index(ordering) >= 0
        else pa.null()
    )
    return delete_schema(otype)


@dataclass(frozen=True)
class _StagedMerger:
    """Merges the staged files of one file group into its new base file (:func:`merge_staged`),
    with what the file groups of the commit share.

    Attributes:
        latest: the latest slices of the touched partitions (empty when the write does not
            merge into existing file groups).
        moved, dropped: a global index's keys combined across partitions
            (:func:`_combine_across_partitions`): the records each packed file group takes,
            and per partition the keys whose staged versions its new file groups skip.
        new_groups: the packed new file groups.
        workers: file groups merging at once (they share the task's memory budget).
    """

    storage: Storage
    plan: WritePlan
    ctx: HandleContext
    dschema: pa.Schema
    latest: dict[tuple[str, str], FileSlice]
    moved: dict[tuple[str, str], tuple[pa.Table, pa.Table]]
    dropped: dict[str, pa.Array]
    new_groups: set[tuple[str, str]]
    workers: int

    def merge(self, part: str, fid: str, group: list[WriteStatus]) -> WriteStatus | None:
        """The merged base file of file group ``fid`` of ``part`` from its staged files
        ``group`` (None: no file group)."""
        existing = self.latest.get((part, fid))
        if (
            existing is None
            and (part, fid) not in self.moved
            and not any(st.stat.num_writes for st in group)
        ):
            return None  # a new file group staged only deletes (of keys no task inserted)
        handle = MergeHandle(self.ctx, part, fid, existing.base_file if existing else None)
        handle.read_threads = self.workers <= 1  # else file groups merge one per core
        handle.merges_in_flight = self.workers  # and share the task budget
        drop = self.dropped.get(part) if (part, fid) in self.new_groups else None
        for st in sorted(group, key=lambda s: s.task):
            for rows, dels in _staged_blocks(self.storage, self.plan, st, self.dschema):
                if drop is not None:
                    rows, dels = _without(rows, drop), _without(dels, drop)
                if rows is not None and rows.num_rows:
                    handle.write(rows, None)
                if dels is not None and dels.num_rows:
                    handle.write(None, dels)
                budget = handle.merge_budget
                if budget is not None and handle.buffered_bytes >= budget:
                    handle.flush()  # spill: the merge below runs within the budget
        extra = self.moved.get((part, fid))
        if extra is not None:
            if extra[0].num_rows:
                handle.write(extra[0], None)
            if extra[1].num_rows:
                handle.write(None, extra[1])
        merged = handle.close()
        if merged is not None and existing is None and merged.stat.num_writes == 0:
            # a new file group whose staged rows all were deleted (or only deletes of keys no
            # task inserted): no file group; the commit removes the marked empty file
            return None
        return merged


def _staged_blocks(
    storage: Storage, plan: WritePlan, st: WriteStatus, dschema: pa.Schema
) -> Iterator[tuple[pa.Table | None, pa.Table | None]]:
    """The blocks of one staged file in write order: ``(rows, None)`` or ``(None, deletes)``."""
    for block in scan_log_bytes(storage.read_bytes(st.path), st.path).blocks:
        if block.block_type == BlockType.DELETE:
            d = decode_delete_block(block)
            yield None, delete_keys(dschema, d.column(0), d.column(1), d.column(DELETE_ORDERING))
        elif block.block_type in (BlockType.AVRO_DATA, BlockType.PARQUET_DATA):
            if plan.partial_columns is not None:
                # staged partial rows: decode their columns, the rest stays null
                names = {*META_FIELDS, *plan.partial_columns}
                sub = pa.schema([f for f in plan.schema if f.name in names])
                yield conform_partial(decode_data_block(block, sub), plan.schema), None
            else:
                yield decode_data_block(block, plan.schema), None


def _without(rows: pa.Table | None, keys: pa.Array) -> pa.Table | None:
    """``rows`` without the records of ``keys``."""
    if rows is None or rows.num_rows == 0:
        return rows
    hit = pc.is_in(rows.column(RECORD_KEY_METADATA_FIELD), value_set=keys)
    return rows.filter(pc.invert(hit))


def _pack_slots(
    plan: WritePlan, staged: dict[tuple[str, str], list[WriteStatus]]
) -> dict[tuple[str, int], str]:
    """Move the staged insert slots of every partition to their packed file groups (in
    place); returns the packed file id of each staged ``(partition, slot)``."""
    sizing = plan.options.sizing
    per_new_file = records_per_new_file(
        sizing.max_file_size, plan.avg_record_size, sizing.auto_split, sizing.insert_split_size
    )
    packed: dict[tuple[str, int], str] = {}
    for part in sorted({k[0] for k in staged}):
        slots = slot_of(plan.instant, part)
        keys = [k for k in staged if k[0] == part and k[1] in slots]
        if not keys:
            continue
        counts = np.zeros(INSERT_SLOTS, np.int64)
        for k in keys:
            counts[slots[k[1]]] += sum(s.stat.num_writes for s in staged[k])
        group = pack_slots(counts.tolist(), per_new_file)
        first = np.searchsorted(group, np.arange(int(group.max()) + 1))
        for k in keys:
            slot = slots[k[1]]
            fid = slot_file_id(plan.instant, part, int(first[group[slot]]))
            packed[(part, slot)] = fid
            moving = staged.pop(k)
            staged.setdefault((part, fid), []).extend(moving)
    return packed


def _combine_across_partitions(
    storage: Storage,
    plan: WritePlan,
    staged: dict[tuple[str, str], list[WriteStatus]],
    packed: dict[tuple[str, int], str],
    dschema: pa.Schema,
) -> tuple[dict[tuple[str, str], tuple[pa.Table, pa.Table]], dict[str, pa.Array]]:
    """Global index: the new keys staged in more than one partition (several tasks got the
    key with different partition values), combined by key alone under the table's merge
    mode (Java ``HoodieWriteHelper.deduplicateRecords`` on a global index).

    A key's versions all hash to one slot number, so only the staged files of one slot number
    are compared (each is read once more). Returns the combined records per packed file group
    of the winner's partition, and per partition the keys whose staged versions the merge
    skips.
    """
    by_slot = _staged_by_slot(plan, staged, packed)
    moved: dict[tuple[str, str], list[pa.Table]] = defaultdict(list)
    dropped: dict[str, list[pa.Array]] = defaultdict(list)
    for slot in sorted(by_slot):
        files = sorted(by_slot[slot], key=lambda st: st.task)
        if len({st.partition_path for st in files}) < 2:
            continue
        blocks = [(st, b) for st in files for b in _staged_blocks(storage, plan, st, dschema)]
        clash_keys = _keys_in_several_partitions(blocks)
        if clash_keys is None:
            continue
        win = _combine_versions(plan, [b for _, b in blocks], clash_keys, dschema)
        for st in files:
            dropped[st.partition_path].append(clash_keys)
        wparts = string_array(win.column(PARTITION_PATH_METADATA_FIELD))
        for wp in pc.unique(wparts).to_pylist():
            moved[(wp, packed[(wp, slot)])].append(win.filter(pc.equal(wparts, wp)))
    out = {k: (pa.concat_tables(v), dschema.empty_table()) for k, v in moved.items()}
    return out, {p: pc.unique(pa.concat_arrays(v)) for p, v in dropped.items()}


def _staged_by_slot(
    plan: WritePlan,
    staged: dict[tuple[str, str], list[WriteStatus]],
    packed: dict[tuple[str, int], str],
) -> dict[int, list[WriteStatus]]:
    """The staged files of insert slots, by slot number (across partitions)."""
    slot_ids = {p: slot_of(plan.instant, p) for p, _ in packed}
    by_slot: dict[int, list[WriteStatus]] = defaultdict(list)
    for sts in staged.values():
        for st in sts:
            slot = slot_ids.get(st.partition_path, {}).get(st.file_id)
            if slot is not None:
                by_slot[slot].append(st)
    return by_slot


def _keys_in_several_partitions(
    blocks: list[tuple[WriteStatus, tuple[pa.Table | None, pa.Table | None]]],
) -> pa.Array | None:
    """The keys whose rows or deletes the staged ``blocks`` hold in more than one partition
    (None: none), found by Arrow group-bys over (key, partition)."""
    kp = [
        (string_array(t.column(RECORD_KEY_METADATA_FIELD)), st.partition_path)
        for st, pair in blocks
        for t in pair
        if t is not None and t.num_rows
    ]
    if not kp:
        return None
    pairs = pa.table(
        {
            "k": pa.concat_arrays([k for k, _ in kp]),
            "p": pa.concat_arrays([pa.repeat(pa.scalar(p), len(k)) for k, p in kp]),
        }
    )
    distinct = pairs.group_by(["k", "p"]).aggregate([])
    per_key = distinct.group_by("k").aggregate([("p", "count")])
    clash = per_key.filter(pc.greater(per_key.column("p_count"), 1)).column("k")
    if len(clash) == 0:
        return None
    return clash.combine_chunks()


def _combine_versions(
    plan: WritePlan,
    blocks: list[tuple[pa.Table | None, pa.Table | None]],
    keys: pa.Array,
    dschema: pa.Schema,
) -> pa.Table:
    """The versions of ``keys`` in the staged ``blocks`` combined by key alone under the
    table's merge mode: the winning records, each in the partition of its key's first
    version (a key whose delete wins is not written at all)."""
    rows = [
        r.filter(pc.is_in(r.column(RECORD_KEY_METADATA_FIELD), value_set=keys))
        for r, _ in blocks
        if r is not None
    ]
    dels = [
        d.filter(pc.is_in(d.column(RECORD_KEY_METADATA_FIELD), value_set=keys))
        for _, d in blocks
        if d is not None
    ]
    win, gone = precombine(
        pa.concat_tables(rows) if rows else plan.schema.empty_table(),
        pa.concat_tables(dels) if dels else dschema.empty_table(),
        plan.options.merge,
        plan.partial_columns,
    )
    # a delete winning over a new key's versions: the key is not written at all
    if gone.num_rows:
        win = win.filter(
            pc.invert(pc.is_in(win.column(RECORD_KEY_METADATA_FIELD), value_set=gone.column(0)))
        )
    # a merger that does not combine in groups keeps every version: they all go to the
    # partition of the key's first version (as later versions in one task do)
    return _first_partition(win)


def _first_partition(rows: pa.Table) -> pa.Table:
    """``rows`` with every version of a key in the partition of the key's first version."""
    keys = string_array(rows.column(RECORD_KEY_METADATA_FIELD))
    if pc.count_distinct(keys).as_py() == rows.num_rows:
        return rows
    enc = pc.dictionary_encode(keys)
    idx = np.asarray(enc.indices, dtype=np.int64)
    first = first_positions(idx, len(enc.dictionary))
    i = rows.schema.get_field_index(PARTITION_PATH_METADATA_FIELD)
    parts = string_array(rows.column(i)).take(pa.array(first[idx]))
    return rows.set_column(i, rows.schema.field(i), parts)
