"""Copy-on-write with several writer tasks: stage in the tasks, merge once per file group.

A COW file group must get exactly one new base file per commit, but Spark's Python data source
API cannot route all rows of a bucket to one task. So when tasks are not exclusive writers,
each task *stages* its rows for a file group as a log file under
``.hoodie/.temp/<instant>/stage/<partition>/`` (same block format as MOR logs), and the
driver's commit merges the staged rows of each touched file group with its current base file
into the new base file -- one :class:`~hudi_ds.write.handles.MergeHandle`-style merge per
file group. The cost: staged rows are written and read once more, and the merge runs where the
commit runs. Readers never see staged files (they are not in a partition folder).
"""

from __future__ import annotations

from collections import defaultdict

import pyarrow as pa

from hudi_ds.layout.file_group import FileSlice
from hudi_ds.layout.naming import file_name_of
from hudi_ds.log.block import BlockType
from hudi_ds.log.reader import decode_data_block, decode_delete_block, scan_log_bytes
from hudi_ds.schema import META_FIELDS, conform_partial
from hudi_ds.storage import Storage
from hudi_ds.table.fs_view import FileSystemView
from hudi_ds.write.handles import (
    DELETE_ORDERING,
    AppendHandle,
    HandleContext,
    MergeHandle,
    delete_schema,
)
from hudi_ds.write.markers import marker_dir
from hudi_ds.write.plan import WritePlan
from hudi_ds.write.write_status import WriteStatus


class StageHandle(AppendHandle):
    """An append handle whose log file lives in the instant's staging folder."""

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


def stage_handle(
    ctx: HandleContext, partition_path: str, file_id: str, existing: FileSlice | None
) -> StageHandle:
    """A staging handle for COW rows of ``file_id`` written by a non-exclusive task."""
    return StageHandle(ctx, partition_path, file_id, existing)


def merge_staged(
    storage: Storage, plan: WritePlan, statuses: list[WriteStatus]
) -> list[WriteStatus]:
    """Replace the ``stage`` statuses by one merged base file per touched file group."""
    out = [s for s in statuses if s.kind != "stage"]
    staged: dict[tuple[str, str], list[WriteStatus]] = defaultdict(list)
    for s in statuses:
        if s.kind == "stage":
            staged[(s.partition_path, s.file_id)].append(s)
    if not staged:
        return out
    view = FileSystemView(storage, plan.table_config)
    latest: dict[tuple[str, str], FileSlice] = {}
    for p in {k[0] for k in staged}:
        if not plan.operation.merges_existing:
            continue  # the rows go into new file groups
        for fs in view.latest_file_slices(p, plan.visibility):
            latest[(p, fs.file_id)] = fs
    ctx = plan.handle_context(storage, "0-0-0")
    ordering = plan.options.ordering_field
    otype = (
        plan.schema.field(ordering).type
        if ordering and plan.schema.get_field_index(ordering) >= 0
        else pa.null()
    )
    dschema = delete_schema(otype)
    for (part, fid), group in sorted(staged.items()):
        existing = latest.get((part, fid))
        handle = MergeHandle(ctx, part, fid, existing.base_file if existing else None)
        for st in sorted(group, key=lambda s: s.task):
            for block in scan_log_bytes(storage.read_bytes(st.path), st.path).blocks:
                if block.block_type == BlockType.DELETE:
                    d = decode_delete_block(block)
                    ov = d.column(DELETE_ORDERING).combine_chunks()
                    ov = ov.cast(otype) if ov.type != otype else ov
                    handle.write(
                        None,
                        pa.Table.from_arrays(
                            [d.column(0).cast(pa.string()), d.column(1).cast(pa.string()), ov],
                            schema=dschema,
                        ),
                    )
                elif block.block_type in (BlockType.AVRO_DATA, BlockType.PARQUET_DATA):
                    if plan.partial_columns is not None:
                        # staged partial rows: decode their columns, the rest stays null
                        names = {*META_FIELDS, *plan.partial_columns}
                        sub = pa.schema([f for f in plan.schema if f.name in names])
                        rows = conform_partial(decode_data_block(block, sub), plan.schema)
                    else:
                        rows = decode_data_block(block, plan.schema)
                    handle.write(rows, None)
                budget = handle.merge_budget
                if budget is not None and handle.buffered_bytes >= budget:
                    handle.flush()  # spill: the merge below runs within the budget
        merged = handle.close()
        if merged is not None:
            out.append(merged)
    return out
