"""Reading file slices: base file, then log blocks in timeline order, merged per record key.

For each visible file slice the reader

1. reads the base file (Parquet; Lance when the optional ``pylance`` is installed);
2. scans the slice's log files in order, keeping the blocks of visible instants, dropping blocks
   that a rollback command block invalidates, and skipping (and counting) corrupt blocks;
3. merges every version of every key through the merge engine
   (:func:`hudi_ds.merge.engine.merge_versions`) with the table's merger, honouring delete
   blocks with ordering values, ``_hoodie_is_deleted`` and partial (``IS_PARTIAL``) blocks.

Everything stays Arrow: the only per-row work is inside pyarrow/numpy kernels (and fastavro for
Avro log blocks, which are row-based by nature).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from hudi_ds.errors import (
    CorruptBlockError,
    CorruptFileError,
    MissingFileError,
    StorageError,
    UnsupportedError,
)
from hudi_ds.keygen import record_keys
from hudi_ds.layout.file_group import BaseFile, FileSlice
from hudi_ds.layout.lance import LanceBaseFile
from hudi_ds.layout.parquet import no_true_flag
from hudi_ds.log.block import BlockType, HeaderKey, LogBlock
from hudi_ds.log.reader import (
    decode_data_block,
    decode_data_blocks,
    decode_delete_block,
    scan_log_bytes,
)
from hudi_ds.merge.engine import (
    DataPart,
    DeleteKeys,
    Part,
    _as_string,
    deleted_mask,
    merge_versions,
    resolve_spec,
)
from hudi_ds.merge.modes import MergeSpec
from hudi_ds.merge.single import merge_single_log_versions
from hudi_ds.schema.avro import cached_arrow_schema
from hudi_ds.schema.evolution import promote_table
from hudi_ds.schema.meta import IS_DELETED_FIELD, RECORD_KEY_METADATA_FIELD
from hudi_ds.storage import Storage
from hudi_ds.timeline.view import Visibility

log = logging.getLogger("hudi_ds.read")


@dataclass
class ReadStats:
    """What a read touched and what it skipped (reported, never silently dropped)."""

    base_files: int = 0
    log_files: int = 0
    log_blocks: int = 0
    corrupt_blocks: int = 0
    corrupt_bytes: int = 0
    uncommitted_blocks: int = 0
    rolled_back_blocks: int = 0
    corrupt_files: list[str] = field(default_factory=list)
    #: committed files found missing and skipped (``spark.sql.files.ignoreMissingFiles``)
    missing_files: list[str] = field(default_factory=list)
    #: committed files found truncated or corrupt and skipped (``...ignoreCorruptFiles``)
    damaged_files: list[str] = field(default_factory=list)
    #: times the read re-planned after a clean removed a file it had planned to read
    replans: int = 0
    #: file slices / partitions the metadata table's statistics ruled out (data skipping)
    data_skipped_slices: int = 0
    data_skipped_partitions: int = 0

    def add(self, other: ReadStats) -> None:
        for k in ("base_files", "log_files", "log_blocks", "corrupt_blocks", "corrupt_bytes"):
            setattr(self, k, getattr(self, k) + getattr(other, k))
        self.uncommitted_blocks += other.uncommitted_blocks
        self.rolled_back_blocks += other.rolled_back_blocks
        self.corrupt_files.extend(other.corrupt_files)
        # a file may be reported both when planning and when reading: once is enough
        self.missing_files.extend(f for f in other.missing_files if f not in self.missing_files)
        self.damaged_files.extend(f for f in other.damaged_files if f not in self.damaged_files)
        self.replans += other.replans
        self.data_skipped_slices += other.data_skipped_slices
        self.data_skipped_partitions += other.data_skipped_partitions


@dataclass(frozen=True)
class SliceReadContext:
    """What a task needs to read and merge slices (small and picklable)."""

    schema: pa.Schema
    record_key_fields: tuple[str, ...]
    complex_key: bool
    ordering_field: str | None
    merge_mode: str
    populate_meta_fields: bool = True
    merge: MergeSpec | None = None  # the table's merger (default: built-in of merge_mode)
    #: skip (warn, count) committed files that are missing instead of raising
    ignore_missing_files: bool = False
    #: skip (warn, count) corrupt blocks inside committed bytes / unreadable base files
    ignore_corrupt_files: bool = False
    #: the one record key field holds the record key itself (Hudi's simple key generator on a
    #: string field, as ``_hoodie_record_key`` holds it): a projected read may key the merge on
    #: that field instead of also reading ``_hoodie_record_key``
    key_field_is_key: bool = False
    #: committed ``(start, end, instant)`` byte ranges per log file path (from commit metadata);
    #: a corrupt block starting inside one is an error, one outside is a failed write's tail
    log_ranges: Mapping[str, tuple[tuple[int, int, str], ...]] | None = field(
        default=None, compare=False, hash=False
    )

    @property
    def merge_spec(self) -> MergeSpec:
        """The merge spec (``merge``, or the built-in one of ``merge_mode``)."""
        return resolve_spec(self.merge, self.merge_mode, self.ordering_field)


def read_base_file(
    storage: Storage,
    base: BaseFile,
    schema: pa.Schema,
    columns: list[str] | None = None,
    use_threads: bool = True,
    unread_false_flags: bool = False,
) -> pa.Table:
    """Read a base file and bring it to ``schema`` (optionally only ``columns``; decoding on
    Arrow's thread pool unless ``use_threads`` is False -- callers already running one read
    per core).

    ``unread_false_flags``: the caller reads ``_hoodie_is_deleted`` only to drop or merge the
    deleted rows (it does not return the column). When the Parquet footer's statistics show
    no row group holds a true flag, the column is not decoded: it comes back null, which
    deletes nothing, as false does.
    """
    target = schema if columns is None else pa.schema([schema.field(c) for c in columns])
    try:
        if base.name.extension == ".parquet":
            # the listed size spares an object store a HEAD (a missing file fails the GET) and
            # lets a small file come whole in one GET
            with storage.open_to_read_all(base.path, base.size or None) as f:
                pf = pq.ParquetFile(f)
                names = target.names
                if (
                    unread_false_flags
                    and IS_DELETED_FIELD in names
                    and target.field(IS_DELETED_FIELD).nullable  # promote_table adds nulls
                    and no_true_flag(pf)
                ):
                    names = [n for n in names if n != IS_DELETED_FIELD]
                # columns the file lacks (added by a later schema) are left out of the read
                # (no Arrow schema built from the footer to find them): promote_table adds them
                table = pf.read(columns=names, use_threads=use_threads)
        elif base.name.extension == ".lance":
            table = _read_lance(storage, base, target.names)
        else:
            raise UnsupportedError(f"base file format {base.name.extension} ({base.path})")
    except FileNotFoundError as e:
        raise MissingFileError(
            f"base file {storage.full_path(base.path)} of a committed file slice is missing",
            base.path,
        ) from e
    except StorageError:  # the store failed (after retries): not a damaged file to skip
        raise
    except (OSError, ValueError) as e:  # ArrowInvalid; UnicodeDecodeError of a bad footer
        raise CorruptFileError(f"cannot read base file {storage.full_path(base.path)}: {e}") from e
    return promote_table(table, target)


def _read_lance(storage: Storage, base: BaseFile, names: list[str]) -> pa.Table:
    """The columns of ``names`` a Lance base file holds (the others are added by
    ``promote_table``)."""
    f = LanceBaseFile(storage, base.path)
    return f.read([c for c in names if c in f.names])


def scan_slice_logs(
    storage: Storage,
    fslice: FileSlice,
    vis: Visibility,
    stats: ReadStats,
    ctx: SliceReadContext | None = None,
) -> list[LogBlock]:
    """The valid data and delete blocks of a slice's log files, in application order.

    Raises:
        MissingFileError: a log file of the slice is gone (unless ``ctx.ignore_missing_files``).
        CorruptBlockError: a corrupt block starts inside the committed bytes of a log file
            (``ctx.log_ranges``; unless ``ctx.ignore_corrupt_files``). Corrupt regions outside
            them are torn tails of failed writes: skipped and counted, as Java does.
    """
    blocks: list[LogBlock] = []
    ranges = ctx.log_ranges if ctx is not None and ctx.log_ranges is not None else {}
    for lf in fslice.log_files:
        stats.log_files += 1
        try:
            data = storage.read_bytes(lf.path)
        except FileNotFoundError as e:
            if ctx is not None and ctx.ignore_missing_files:
                log.warning("skipping missing log file %s", storage.full_path(lf.path))
                stats.missing_files.append(lf.path)
                continue
            raise MissingFileError(
                f"log file {storage.full_path(lf.path)} of a committed file slice is missing",
                lf.path,
            ) from e
        # the blocks are decoded right away: their contents stay views of the file bytes
        scan = scan_log_bytes(data, lf.path, copy=False)
        # only a file with a corrupt block needs its committed ranges (they may decode the
        # write stats of every commit)
        committed = ranges.get(lf.path) if scan.corrupt_blocks else None
        if committed:
            for off in scan.corrupt_offsets:
                hit = next((r for r in committed if r[0] <= off < r[1]), None)
                if hit is None:
                    continue
                msg = (
                    f"corrupt log block in {storage.full_path(lf.path)} at offset {off}, inside "
                    f"the bytes [{hit[0]}, {hit[1]}) committed by instant {hit[2]}"
                )
                if ctx is None or not ctx.ignore_corrupt_files:
                    raise CorruptBlockError(msg)
                log.warning("skipping %s", msg)
                stats.damaged_files.append(lf.path)
                break
        if scan.corrupt_blocks:
            stats.corrupt_blocks += scan.corrupt_blocks
            stats.corrupt_bytes += scan.skipped_bytes
            stats.corrupt_files.append(lf.path)
        blocks.extend(scan.blocks)
    stats.log_blocks += len(blocks)
    # rollback command blocks invalidate earlier blocks of their target instant
    out: list[LogBlock] = []
    for b in blocks:
        if b.block_type == BlockType.COMMAND:
            if b.is_rollback_command and b.target_instant_time:
                before = len(out)
                out = [x for x in out if x.instant_time != b.target_instant_time]
                stats.rolled_back_blocks += before - len(out)
            continue
        if b.block_type not in (BlockType.AVRO_DATA, BlockType.PARQUET_DATA, BlockType.DELETE):
            continue
        if not b.instant_time or not vis.sees(b.instant_time):
            stats.uncommitted_blocks += 1
            continue
        out.append(b)
    return out


def read_file_slice(
    storage: Storage,
    fslice: FileSlice,
    vis: Visibility,
    ctx: SliceReadContext,
    stats: ReadStats,
    columns: list[str] | None = None,
    use_threads: bool = True,
    key_changes: list[tuple[pa.Array, pa.Array]] | None = None,
    keys: pa.Array | None = None,
) -> pa.Table:
    """Read one file slice as merged, live rows in ``ctx.schema`` (or ``columns`` of it).

    With ``columns`` only those are read, plus what the merge needs: for a slice without log
    blocks the delete flags only (its rows are not merged); otherwise the record key (the key
    field when ``ctx.key_field_is_key``, else ``_hoodie_record_key``), the ordering field and
    the delete flags. ``use_threads``: decode the base file on Arrow's thread pool (False when
    the caller already reads one slice per core).

    ``key_changes`` (a compaction: for a writer's state index, and to carry the base file's
    bloom filter into the new one): one ``(inserted, removed)`` pair is appended to it, the
    distinct record keys (``_hoodie_record_key``) the returned rows hold that the base file
    does not, and those of the base file they no longer hold -- the change a new base file of
    these rows makes to the file group's keys. Only when the rows carry ``_hoodie_record_key``
    (``columns`` None or naming it).

    ``keys``: only the rows of these record keys (strings, as ``_hoodie_record_key`` holds
    them; ``columns`` must name the record key fields): the base rows and log versions of
    other keys are dropped before the merge, which works per key (a MERGE reads the few keys
    its source holds).
    """
    if key_changes is not None and columns is not None and RECORD_KEY_METADATA_FIELD not in columns:
        raise ValueError(f"key_changes needs the {RECORD_KEY_METADATA_FIELD} column")
    blocks = scan_slice_logs(storage, fslice, vis, stats, ctx) if fslice.log_files else []
    spec = ctx.merge_spec
    if columns is None:
        schema = ctx.schema
    elif not blocks:
        b = spec.builtin
        schema = _projection(ctx, columns, [IS_DELETED_FIELD, b.delete_field if b else None])
    else:
        schema = _merge_projection(ctx, columns, blocks)
    # the delete flags read beside the columns only drop or merge rows: a base file whose
    # statistics show none set needs them not
    flags_unread = columns is not None and IS_DELETED_FIELD not in columns
    base = _base_or_none(storage, fslice.base_file, schema, ctx, stats, use_threads, flags_unread)
    if not blocks:
        if keys is not None and base is not None:
            base = base.filter(pc.is_in(_base_keys(base, ctx), value_set=keys))
        return _unmerged(base, schema, ctx, stats, columns, key_changes)
    if base is not None:
        stats.base_files += 1
    parts = _decode_parts(blocks, schema, ctx, stats, flags_unread)
    if (
        columns is not None
        and schema.get_field_index(RECORD_KEY_METADATA_FIELD) < 0
        and not _keyed_by_field(base, parts, ctx)
    ):
        # a version without its key field value: key by _hoodie_record_key after all
        schema = _merge_projection(ctx, columns, blocks, key_field=False)
        base = _base_or_none(
            storage, fslice.base_file, schema, ctx, ReadStats(), use_threads, flags_unread
        )
        parts = _decode_parts(blocks, schema, ctx, ReadStats(), flags_unread)
    if keys is not None:
        base, parts = _only_keys(base, parts, keys, ctx)
    out = _merge_slice(
        base, parts, spec, schema, ctx, fslice.base_file is not None, columns, key_changes
    )
    return out if columns is None else _project(out, columns)


#: built without pa.array, whose first call imports pandas (a Spark worker that never
#: converts anything would pay ~0.15 s of CPU for it at import)
_NO_KEYS = pa.nulls(0, pa.string())


def _unmerged(
    base: pa.Table | None,
    schema: pa.Schema,
    ctx: SliceReadContext,
    stats: ReadStats,
    columns: list[str] | None,
    key_changes: list[tuple[pa.Array, pa.Array]] | None,
) -> pa.Table:
    """The live rows of a slice without log blocks (:func:`read_file_slice`)."""
    if base is None:
        if key_changes is not None:
            key_changes.append((_NO_KEYS, _NO_KEYS))
        return schema.empty_table() if columns is None else _project(schema.empty_table(), columns)
    stats.base_files += 1
    deleted = deleted_mask(base, ctx.merge_spec)
    if key_changes is not None:
        key_changes.append(
            (_NO_KEYS, _NO_KEYS)
            if deleted is None or not deleted.any()
            else _key_diff(_base_keys(base, ctx), _base_keys(base.filter(pa.array(~deleted)), ctx))
        )
    # project first: the delete flags read beside the columns are not filtered too
    table = base if columns is None else _project(base, columns)
    return table if deleted is None else table.filter(pa.array(~deleted))


def _flagged_keys_gone(
    base_keys: pa.Array | pa.ChunkedArray,
    touched: pa.Array | pa.ChunkedArray,
    deleted: np.ndarray,
    keep: pa.Array | pa.ChunkedArray,
) -> pa.Array:
    """The distinct keys of the base rows not ``touched`` by the logs that leave the file: the
    keys of such rows flagged ``deleted`` (usually none) that no kept row holds -- the kept
    keys are probed against those few, with no hash table of every kept key."""
    flagged = _as_string(base_keys.filter(pc.and_(pc.invert(touched), pa.array(deleted))))
    if not len(flagged):
        return flagged
    kept = _as_string(base_keys.filter(keep))
    held = kept.filter(pc.is_in(kept, value_set=flagged))
    return pc.unique(flagged.filter(pc.invert(pc.is_in(flagged, value_set=held))))


def _key_diff(
    before: pa.Array | pa.ChunkedArray, after: pa.Array | pa.ChunkedArray
) -> tuple[pa.Array, pa.Array]:
    """The distinct keys of ``after`` not in ``before`` and those of ``before`` not in
    ``after`` (hash probes: O(len(before) + len(after)))."""
    before, after = _as_string(before), _as_string(after)
    new = after.filter(pc.invert(pc.is_in(after, value_set=before)))
    gone = before.filter(pc.invert(pc.is_in(before, value_set=after)))
    return pc.unique(new), pc.unique(gone)


def _single_key_changes(
    base_keys: pa.Array | pa.ChunkedArray,
    keep: np.ndarray,
    won: list[pa.Table],
    flagged: np.ndarray | None,
    ctx: SliceReadContext,
) -> tuple[pa.Array, pa.Array]:
    """``key_changes`` of a slice merged by :func:`merge_single_log_versions`: a winning log
    version's base row is never kept, so keys come and go among the dropped base rows and the
    winners only. A touched key is once in the base file (else that merge does not apply);
    an untouched dropped row is one flagged deleted, whose key another, kept row may hold."""
    gone_rows = base_keys.filter(pa.array(~keep))
    won_keys = [_as_string(_keys_of(w, ctx)) for w in won if w.num_rows]
    after = pa.concat_arrays(won_keys) if won_keys else _NO_KEYS
    new, gone = _key_diff(gone_rows, after)
    if len(gone) and flagged is not None and flagged.any():
        kept = _as_string(base_keys.filter(pa.array(keep)))
        held = kept.filter(pc.is_in(kept, value_set=gone))
        if len(held):
            gone = gone.filter(pc.invert(pc.is_in(gone, value_set=held)))
    return new, gone


def _single_rows(
    base: pa.Table,
    keep: np.ndarray,
    won: list[pa.Table],
    schema: pa.Schema,
    columns: list[str] | None,
) -> pa.Table:
    """The rows of a slice merged by :func:`merge_single_log_versions`: the base rows that
    stay, in the file's order, then the log versions that win."""
    target = schema if columns is None else pa.schema([schema.field(c) for c in columns])
    out = [base.filter(pa.array(keep)) if columns is None else _project(base, columns)]
    if columns is not None:
        out[0] = out[0].filter(pa.array(keep))
    out += [w if columns is None else _project(w, columns) for w in won if w.num_rows]
    out = [t if t.schema == target else t.cast(target) for t in out]
    return pa.concat_tables(out) if len(out) > 1 else out[0]


def _merge_slice(
    base: pa.Table | None,
    parts: list[Part],
    spec: MergeSpec,
    schema: pa.Schema,
    ctx: SliceReadContext,
    has_base: bool,
    columns: list[str] | None = None,
    key_changes: list[tuple[pa.Array, pa.Array]] | None = None,
) -> pa.Table:
    """The live rows of a slice: its base rows merged with its log versions ``parts``.

    With a built-in merger only the base rows whose key has a log version go through the
    merge: a key with one version is that version (or gone when it is a delete), as
    a slice without logs is read. After a compaction the logs hold a
    few keys of the base file, so the merge works on those instead of every base row. The
    rows come out untouched base rows first, in the base file's order, then the merged ones.
    When the logs name each key once (:func:`~hudi_ds.merge.single.merge_single_log_versions`)
    the base rows that stay -- untouched or winning over their log version -- come out in the
    base file's order, then the log versions that win.
    With ``columns`` the untouched base rows come out as those columns only (one filter of
    the columns returned, not of what the merge reads beside them). ``key_changes``: as
    :func:`read_file_slice`'s (on both paths only the keys of the merged rows are compared,
    not every base row's).
    """
    key_fn = lambda t: _keys_of(t, ctx)  # noqa: E731
    if base is not None and base.num_rows and spec.builtin is not None:
        part_keys = [_part_keys(p, ctx) for p in parts]
        logged = [k for k in part_keys if len(k)]
        base_keys = _base_keys(base, ctx) if logged else None
        single = (
            merge_single_log_versions(base, base_keys, parts, part_keys, spec)
            if base_keys is not None
            else None
        )
        if single is not None:
            # each key has at most its base row and one log version
            keep, won = single
            if key_changes is not None:
                flagged = deleted_mask(base, spec)
                key_changes.append(_single_key_changes(base_keys, keep, won, flagged, ctx))
            return _single_rows(base, keep, won, schema, columns)
        if base_keys is not None:
            touched = pc.is_in(base_keys, value_set=pa.concat_arrays(logged))
            n_touched = pc.sum(touched).as_py() or 0
            if n_touched < base.num_rows:
                keep = pc.invert(touched)
                deleted = deleted_mask(base, spec)
                if deleted is not None:
                    keep = pc.and_(keep, pa.array(~deleted))
                kept = (base if columns is None else _project(base, columns)).filter(keep)
                result = merge_versions(
                    [base.filter(touched), *parts], spec, schema, key_fn=key_fn, has_base=True
                )
                rows = result.rows
                if key_changes is not None:
                    # the untouched rows stay unless flagged deleted; the merged ones changed
                    before = [base_keys.filter(touched)]
                    if deleted is not None:
                        before.append(_flagged_keys_gone(base_keys, touched, deleted, keep))
                    key_changes.append(
                        _key_diff(pa.concat_arrays([_as_string(b) for b in before]), key_fn(rows))
                    )
                if columns is not None:
                    rows = _project(rows, columns)
                if kept.schema != rows.schema:
                    kept = kept.cast(rows.schema)
                return pa.concat_tables([kept, rows]) if kept.num_rows else rows
    if base is not None:
        parts.insert(0, base)
    out = merge_versions(parts, spec, schema, key_fn=key_fn, has_base=has_base).rows
    if key_changes is not None:
        before_keys = _base_keys(base, ctx) if base is not None else _NO_KEYS
        key_changes.append(_key_diff(before_keys, key_fn(out)))
    return out


def _base_keys(base: pa.Table, ctx: SliceReadContext) -> pa.Array | pa.ChunkedArray:
    """The base rows' record keys as :func:`_keys_of` gives them, left in the file's chunks
    when they are a string column already (no copy of a large table's keys)."""
    names = base.column_names
    name = None
    if (
        RECORD_KEY_METADATA_FIELD in names
        and base.column(RECORD_KEY_METADATA_FIELD).null_count < base.num_rows
    ):
        name = RECORD_KEY_METADATA_FIELD
    elif not ctx.complex_key and len(ctx.record_key_fields) == 1:
        name = ctx.record_key_fields[0]
    if name is not None and name in names and pa.types.is_string(base.schema.field(name).type):
        return base.column(name)
    return _as_string(_keys_of(base, ctx))


def _only_keys(
    base: pa.Table | None, parts: list[Part], keys: pa.Array, ctx: SliceReadContext
) -> tuple[pa.Table | None, list[Part]]:
    """``base`` and ``parts`` reduced to the rows and delete entries of ``keys``."""
    if base is not None:
        base = base.filter(pc.is_in(_base_keys(base, ctx), value_set=keys))
    out: list[Part] = []
    for p in parts:
        mask = pc.is_in(_part_keys(p, ctx), value_set=keys)
        if isinstance(p, DeleteKeys):
            out.append(
                replace(
                    p,
                    keys=p.keys.filter(mask),
                    ordering=None if p.ordering is None else p.ordering.filter(mask),
                    partitions=None if p.partitions is None else p.partitions.filter(mask),
                )
            )
        elif isinstance(p, DataPart):
            kept = None if p.keys is None else p.keys.filter(mask)
            out.append(replace(p, table=p.table.filter(mask), keys=kept))
        else:
            out.append(p.filter(mask))
    return base, out


def _part_keys(p: Part, ctx: SliceReadContext) -> pa.Array:
    """The record keys of one merge part, as the merge engine takes them."""
    if isinstance(p, DeleteKeys):
        return _as_string(p.keys)
    if isinstance(p, DataPart):
        return _as_string(p.keys) if p.keys is not None else _as_string(_keys_of(p.table, ctx))
    return _as_string(_keys_of(p, ctx))


def _projection(ctx: SliceReadContext, columns: list[str], extra: list[str | None]) -> pa.Schema:
    """``columns`` and those of ``extra`` the table has, in the table's types."""
    schema = ctx.schema
    wanted = list(columns) + [
        c for c in dict.fromkeys(extra) if c and c not in columns and schema.get_field_index(c) >= 0
    ]
    return pa.schema([schema.field(c) for c in wanted])


def _merge_projection(
    ctx: SliceReadContext, columns: list[str], blocks: list[LogBlock], key_field: bool = True
) -> pa.Schema:
    """``columns`` plus what merging the versions needs."""
    by_field = (
        key_field
        and ctx.key_field_is_key
        and len(ctx.record_key_fields) == 1
        and not any(is_partial_block(b) for b in blocks)
    )
    keys = list(ctx.record_key_fields) if by_field else [RECORD_KEY_METADATA_FIELD]
    return _projection(
        ctx,
        columns,
        [
            *keys,
            ctx.ordering_field,
            IS_DELETED_FIELD,
            *ctx.record_key_fields,
            *ctx.merge_spec.required_columns(),
        ],
    )


def _keyed_by_field(base: pa.Table | None, parts: list[Part], ctx: SliceReadContext) -> bool:
    """Every data version carries its key field (no nulls): the merge may key on it."""
    name = ctx.record_key_fields[0]
    tables = [base] if base is not None else []
    tables += [p.table if isinstance(p, DataPart) else p for p in parts]
    for t in tables:
        if not isinstance(t, pa.Table) or t.num_rows == 0:
            continue
        i = t.schema.get_field_index(name)
        if i < 0 or t.column(i).null_count or not pa.types.is_string(t.schema.field(i).type):
            return False
    return True


def _decode_parts(
    blocks: list[LogBlock],
    schema: pa.Schema,
    ctx: SliceReadContext,
    stats: ReadStats,
    unread_false_flags: bool = False,
) -> list[Part]:
    """The slice's log blocks as merge parts (``schema``'s columns), in application order.

    The whole-record data blocks decode together first (:func:`decode_data_blocks`: Avro
    blocks of one schema in one walk); if one of them is corrupt, block by block below.
    ``unread_false_flags``: as :func:`~hudi_ds.log.reader.decode_data_block`'s.
    """
    whole = [b for b in blocks if b.block_type != BlockType.DELETE and not is_partial_block(b)]
    decoded: dict[int, pa.Table] = {}
    if len(whole) > 1:
        try:
            decoded = {
                id(b): t
                for b, t in zip(
                    whole, decode_data_blocks(whole, schema, unread_false_flags), strict=True
                )
            }
        except CorruptBlockError:
            decoded = {}  # found again, reported or skipped, one block at a time
    parts: list[Part] = []
    for b in blocks:
        try:
            if b.block_type == BlockType.DELETE:
                parts.append(DeleteKeys.from_table(decode_delete_block(b)))
            elif is_partial_block(b):
                carried = set(cached_arrow_schema(b.schema).names) if b.schema else set()
                sub = pa.schema([f for f in schema if f.name in carried])
                parts.append(DataPart(decode_data_block(b, sub), partial=True))
            elif id(b) in decoded:
                parts.append(decoded[id(b)])
            else:
                parts.append(decode_data_block(b, schema, unread_false_flags))
        except CorruptBlockError as e:
            if not ctx.ignore_corrupt_files:
                raise  # the message names the log file and the block's offset
            log.warning("skipping an undecodable log block: %s", e)
            stats.corrupt_blocks += 1
            stats.damaged_files.append(b.path)
    return parts


def _base_or_none(
    storage: Storage,
    base: BaseFile | None,
    schema: pa.Schema,
    ctx: SliceReadContext,
    stats: ReadStats,
    use_threads: bool = True,
    unread_false_flags: bool = False,
) -> pa.Table | None:
    """The slice's base file rows (None: no base file, or a skipped missing/corrupt one);
    ``unread_false_flags`` as :func:`read_base_file`'s."""
    if base is None:
        return None
    try:
        return read_base_file(
            storage, base, schema, use_threads=use_threads, unread_false_flags=unread_false_flags
        )
    except MissingFileError:
        if not ctx.ignore_missing_files:
            raise
        log.warning("skipping missing base file %s", storage.full_path(base.path))
        stats.missing_files.append(base.path)
    except CorruptFileError:
        if not ctx.ignore_corrupt_files:
            raise
        log.warning("skipping unreadable base file %s", storage.full_path(base.path))
        stats.damaged_files.append(base.path)
    return None


def is_partial_block(b: LogBlock) -> bool:
    """A data block written with a partial schema (Hudi 1.x ``IS_PARTIAL`` header)."""
    return b.header.get(HeaderKey.IS_PARTIAL, "").strip().lower() == "true"


def _keys_of(t: pa.Table, ctx: SliceReadContext) -> pa.Array:
    if (
        RECORD_KEY_METADATA_FIELD in t.column_names
        and t.column(RECORD_KEY_METADATA_FIELD).null_count < t.num_rows
    ):
        return _as_string(t.column(RECORD_KEY_METADATA_FIELD))
    return record_keys(t, list(ctx.record_key_fields), ctx.complex_key)


def _project(table: pa.Table, columns: list[str]) -> pa.Table:
    return table.select(columns)
