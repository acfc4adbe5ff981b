"""Keeping the metadata table's secondary indexes (``secondary_index_<name>``) in step with the
data table: which of them hudi_ds keeps, what each data instant changes in them, and the log
files that write the change (record format: :mod:`hudi_ds.metadata.secondary_index`).

What an instant changes (Java 1.1 ``SecondaryIndexRecordGenerationUtils.
convertWriteStatsToSecondaryIndexRecords``): for every file group it writes, the
(record key, secondary value) pairs of the file group's merged slice before the instant and
after it are compared -- a pair only after is put, a pair only before is deleted (a changed
value is both); the keys of file groups an insert overwrite replaces without writing them again
are deleted; a row key both put and deleted by one instant (a record moving between file
groups) is put (Java ``reduceByKeys``). Compaction, log compaction and clean change nothing
(the merged rows stay the same). A rollback the MDT mirrors by undoing its deltacommits (table
versions 8/9) deletes the index logs of those deltacommits with them; a rollback or restore it
mirrors with tombstones (the undone files are gone) compares each index with the one
recomputed from every latest file slice and writes the difference. The MDT's compaction gives
every file group a new base HFile of its live records, its clean drops the older slices.

An index hudi_ds does not keep -- a definition it does not evaluate (an expression, a nested
field, a float column), ``hoodie.metadata.index.secondary.enable=false`` (Java deletes every
secondary index then), a table without meta fields -- or a change it cannot read (a file group
unreadable) removes the partition with a warning naming it and why: a stale secondary index
would make Java's readers skip files holding matching rows.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import pyarrow as pa

from hudi_ds.errors import HudiError
from hudi_ds.layout.file_group import FileSlice
from hudi_ds.layout.hfile import write_hfile
from hudi_ds.layout.naming import (
    base_file_name,
    file_name_of,
    parse_base_file_name,
    parse_log_file_name,
)
from hudi_ds.log.writer import encode_delete_block, encode_hfile_data_block
from hudi_ds.metadata.layout import MDT_WRITE_TOKEN
from hudi_ds.metadata.mdt_files import (
    mdt_base_hfile,
    mdt_write_stat,
    next_log_name,
    older_slices_files,
)
from hudi_ds.metadata.reader import completed_or_archived, files_slices, valid_instants
from hudi_ds.metadata.record_index_writer import IndexFile
from hudi_ds.metadata.records import METADATA_PARTITIONS_INFLIGHT_KEY, declared_partitions
from hudi_ds.metadata.secondary_index import (
    PARTITION_PREFIX,
    SecondaryIndexDef,
    definitions,
    encode_value,
    file_group_count,
    file_group_id,
    file_group_indexes,
    file_id_prefix,
    read_index,
    read_slice,
    records_of,
    undefined,
)
from hudi_ds.schema.meta import RECORD_KEY_METADATA_FIELD
from hudi_ds.storage import Storage
from hudi_ds.table_config import TableConfig
from hudi_ds.timeline.instant import CLEAN, COMMIT, DELTA_COMMIT, REPLACE_COMMIT
from hudi_ds.timeline.metadata import CommitMetadata
from hudi_ds.timeline.timeline import Timeline
from hudi_ds.timeline.view import TableState

__all__ = ["SecondaryIndexWriter", "SliceValues"]

log = logging.getLogger("hudi_ds.metadata")

_NO_CHANGE_OPERATIONS = frozenset({"COMPACT", "LOG_COMPACT"})

FileGroup = tuple[str, str]
"""``(data partition path, file id)``."""

SliceValues = Callable[
    [TableState, Sequence[FileGroup] | None, Sequence[str], str, bool],
    Mapping[FileGroup, pa.Table],
]
"""``values(state, groups, columns, instant, include)``: the merged live rows
(``_hoodie_record_key`` and ``columns``) of the latest slice of each file group of ``groups``
that has one (None: of every file group), as of the completed instants other than
``instant`` -- and ``instant`` too when ``include`` (its files written, its completion
pending). The write layer reads them through its file-system view and slice reader; this layer
may not import them."""


@dataclass
class _Changes:
    puts: set[str] = field(default_factory=set)
    deletes: set[str] = field(default_factory=set)


class SecondaryIndexWriter:
    """The secondary-index side of a :class:`~hudi_ds.metadata.writer.MetadataWriter`.

    Args:
        state: the data table.
        storage: the MDT's storage.
        values: reads file groups' merged rows (None: the write layer gives no reader, so no
            secondary index is kept).
        enable: ``hoodie.metadata.index.secondary.enable`` (False removes every secondary
            index, as Java does; None and True keep them).
    """

    def __init__(
        self,
        state: TableState,
        storage: Storage,
        values: SliceValues | None = None,
        enable: bool | None = None,
    ) -> None:
        self.state = state
        self.storage = storage
        self.values = values
        self.enable = enable
        # the definitions file, read once per hoodie.properties (an index created or dropped
        # changes hoodie.table.metadata.partitions too)
        self._read: tuple[TableConfig, dict[str, SecondaryIndexDef]] | None = None

    # -- which partitions --------------------------------------------------------------------
    def _definitions(self, declared: Sequence[str]) -> dict[str, SecondaryIndexDef]:
        names = [p for p in declared if p.startswith(PARTITION_PREFIX)]
        if not names:
            return {}
        cfg = self.state.config
        if self._read is not None and self._read[0] is cfg:
            found = self._read[1]
        else:
            try:
                found = definitions(cfg, self.state.storage)
            except (OSError, HudiError) as e:
                why = f"its definition is unreadable: {e}"
                found = {n: SecondaryIndexDef(n, None, 2, why) for n in names}
            self._read = (cfg, found)
        return {n: found.get(n) or undefined(n) for n in names}

    def why_not(self, declared: Sequence[str]) -> dict[str, str]:
        """Each declared secondary index hudi_ds does not keep, with the reason."""
        inflight = declared_partitions(self.state.config, METADATA_PARTITIONS_INFLIGHT_KEY)
        out: dict[str, str] = {}
        for name, d in self._definitions(declared).items():
            if self.enable is False:
                out[name] = "hoodie.metadata.index.secondary.enable=false"
            elif d.unevaluable:
                out[name] = d.unevaluable
            elif name in inflight:
                out[name] = "it is being built by another writer"
            elif self.values is None:
                out[name] = "this writer reads no file slices"
            elif not self.state.config.populate_meta_fields:
                out[name] = "the table has no meta fields (hoodie.populate.meta.fields)"
            elif not self.storage.is_dir(name):
                out[name] = "its folder is missing"
        return out

    def maintained(self, declared: Sequence[str]) -> list[str]:
        """The declared secondary indexes hudi_ds keeps in step."""
        skip = self.why_not(declared)
        return [n for n in self._definitions(declared) if n not in skip]

    # -- updates -----------------------------------------------------------------------------
    def plan(
        self,
        instant: str,
        action: str,
        content: bytes,
        mdt: Timeline,
        schema: str,
        partitions: Sequence[str],
    ) -> dict[str, list[IndexFile] | None]:
        """Per secondary index of ``partitions``, the log files of MDT deltacommit ``instant``
        mirroring data ``action`` (``content``: its metadata); None for an index whose change
        cannot be written (the caller removes it)."""
        if not partitions:
            return {}
        defs = self._definitions(partitions)
        try:
            if action in (CLEAN, COMMIT, DELTA_COMMIT, REPLACE_COMMIT):
                changes = self._changes(instant, action, content, defs)
            else:
                changes = self._resync(instant, defs, mdt)
        except (HudiError, OSError, pa.ArrowException) as e:  # unexpressible, a file unreadable
            for name in partitions:
                log.warning(
                    "metadata table: secondary index %s cannot follow %s %s: %s",
                    name,
                    action,
                    instant,
                    e,
                )
            return dict.fromkeys(partitions)
        out: dict[str, list[IndexFile] | None] = {}
        for name in partitions:
            c = changes.get(name)
            if c is None:
                out[name] = None
            elif not (c.puts or c.deletes):
                out[name] = []
            else:
                out[name] = self._log_files(instant, name, defs[name].version, c, mdt, schema)
        return out

    def _changes(
        self, instant: str, action: str, content: bytes, defs: Mapping[str, SecondaryIndexDef]
    ) -> dict[str, _Changes | None]:
        nothing: dict[str, _Changes | None] = {n: _Changes() for n in defs}
        if action == CLEAN:
            return nothing
        meta = CommitMetadata.from_bytes(content)
        op = (meta.operation_type or "").upper()
        if op in _NO_CHANGE_OPERATIONS or meta.compacted:
            return nothing
        written: dict[FileGroup, None] = {}
        for partition, stats in meta.partition_to_write_stats.items():
            for stat in stats:
                if stat.path and stat.file_id:
                    written[(partition, stat.file_id)] = None
        replaced = [
            (p, fid)
            for p, ids in (meta.replaced_file_ids().items() if meta.is_replace else [])
            for fid in ids
            if (p, fid) not in written
        ]
        if not written and not replaced:
            return nothing
        assert self.values is not None
        columns = sorted({d.column for d in defs.values() if d.column is not None})
        before = self.values(self.state, [*written, *replaced], columns, instant, False)
        after = self.values(self.state, list(written), columns, instant, True)
        return _diff(defs, before.values(), after.values())

    def _resync(
        self, instant: str, defs: Mapping[str, SecondaryIndexDef], mdt: Timeline
    ) -> dict[str, _Changes | None]:
        """A rollback or restore the MDT mirrors with tombstones (its files are gone, what they
        held cannot be read): each index is compared with the one recomputed from every latest
        file slice, and the difference written -- a scan of the table, for these rare
        actions. Java restores its metadata table instead."""
        assert self.values is not None
        columns = sorted({d.column for d in defs.values() if d.column is not None})
        # the timeline as it is now: the undone instants' completed files are gone already
        fresh = TableState(self.state.storage, self.state.config)
        now = self.values(fresh, None, columns, instant, True)
        valid = valid_instants(fresh.timeline, mdt, self.state.config.table_version)

        def keep(t: str) -> bool:
            return completed_or_archived(mdt, t) and t in valid

        out: dict[str, _Changes | None] = {}
        for name, d in defs.items():
            assert d.column is not None
            stored = set(read_index(self.storage, mdt, name, keep))
            recomputed = _row_keys(now.values(), d.column)
            out[name] = (
                None if recomputed is None else _Changes(recomputed - stored, stored - recomputed)
            )
        return out

    # -- compaction and clean ----------------------------------------------------------------
    def compaction_files(
        self, when: str, mdt: Timeline, schema: str, partitions: Sequence[str]
    ) -> list[IndexFile]:
        """The new base HFile of every file group of the secondary indexes ``partitions``:
        its live records merged from the latest slice (deletes and rolled-back blocks dropped),
        each naming the file in ``_hoodie_file_name`` (Java compacts every MDT file group at
        once, as the v8 fixture's compacted secondary index shows)."""
        if not partitions:
            return []
        valid = valid_instants(self.state.timeline, mdt, self.state.config.table_version)

        def keep(t: str) -> bool:
            return completed_or_archived(mdt, t) and t in valid

        out: list[IndexFile] = []
        for partition in partitions:
            prefix = file_id_prefix(partition)
            for s in files_slices(self.storage, mdt, partition):
                if not s.file_id.startswith(prefix):
                    continue
                keys = sorted(read_slice(self.storage, s, keep), key=lambda k: k.encode("utf-8"))
                name = base_file_name(s.file_id, MDT_WRITE_TOKEN, when, ".hfile")
                value = encode_value(schema, name)
                data = mdt_base_hfile(
                    [k.encode("utf-8") for k in keys], [value] * len(keys), schema
                )
                prev = s.base_instant_time or when
                stat = mdt_write_stat(partition, s.file_id, name, len(data), len(keys), prev)
                out.append(IndexFile(f"{partition}/{name}", data, stat))
        return out

    def older_files(self, mdt: Timeline, partitions: Sequence[str]) -> dict[str, list[str]]:
        """Per secondary index of ``partitions``, the files of slices older than each file
        group's two latest (what an MDT clean deletes)."""
        out: dict[str, list[str]] = {}
        for partition in partitions:
            names = [f.name for f in self.storage.list_files(partition)]
            ids = sorted(
                {
                    p.file_id
                    for n in names
                    if (p := parse_base_file_name(n) or parse_log_file_name(n)) is not None
                }
            )
            doomed = [n for fid in ids for n in older_slices_files(mdt, names, fid)]
            if doomed:
                out[partition] = sorted(doomed)
        return out

    def _log_files(
        self,
        instant: str,
        partition: str,
        version: int,
        changes: _Changes,
        mdt: Timeline,
        schema: str,
    ) -> list[IndexFile] | None:
        count = file_group_count(self.storage, partition)
        if not count:
            log.warning("metadata table: secondary index %s has no file group", partition)
            return None
        slices = {s.file_id: s for s in files_slices(self.storage, mdt, partition)}
        names = [f.name for f in self.storage.list_files(partition)]
        by_group: dict[int, tuple[list[str], list[str]]] = {}
        for keys, is_put in ((changes.puts, True), (changes.deletes, False)):
            ordered = sorted(keys, key=lambda k: k.encode("utf-8"))
            if not ordered:
                continue
            idx = file_group_indexes(pa.array(ordered, pa.string()), count, version)
            for k, i in zip(ordered, idx.tolist(), strict=True):
                by_group.setdefault(i, ([], []))[0 if is_put else 1].append(k)
        out = []
        for i, (puts, gone) in sorted(by_group.items()):
            fid = file_group_id(partition, i)
            sl = slices.get(fid) or FileSlice(partition, fid, "")
            data = b""
            if puts:
                value = encode_value(schema)
                hfile = write_hfile(
                    [k.encode("utf-8") for k in puts],
                    [value] * len(puts),
                    file_info={"schema": schema.encode("utf-8")},
                )
                data += encode_hfile_data_block(instant, schema, hfile)
            if gone:
                data += encode_delete_block(
                    pa.array(gone, pa.string()),
                    pa.array([partition] * len(gone), pa.string()),
                    None,
                    instant,
                    schema,
                )
            name = next_log_name(mdt.layout_version, fid, sl.base_instant_time, instant, names)
            logs = [file_name_of(lf.path) for lf in sl.log_files] + [name]
            base = file_name_of(sl.base_file.path) if sl.base_file is not None else None
            stat = mdt_write_stat(
                partition,
                fid,
                name,
                len(data),
                len(puts) + len(gone),
                sl.base_instant_time,
                base,
                logs,
            )
            out.append(IndexFile(f"{partition}/{name}", data, stat))
        return out


def _row_keys(tables: Iterable[pa.Table], column: str) -> set[str] | None:
    """The row keys of the rows of ``tables`` (None: the column's type is not rendered)."""
    out: set[str] = set()
    for t in tables:
        if not t.num_rows:
            continue
        keys = t.column(RECORD_KEY_METADATA_FIELD).combine_chunks()
        if t.schema.get_field_index(column) < 0:
            values = pa.nulls(t.num_rows, pa.string())
        else:
            values = t.column(column).combine_chunks()
        found = records_of(keys, values)
        if found is None:
            return None
        out.update(found)
    return out


def _diff(
    defs: Mapping[str, SecondaryIndexDef],
    before: Iterable[pa.Table],
    after: Iterable[pa.Table],
) -> dict[str, _Changes | None]:
    """Per index, the row keys only ``after``'s rows hold (put) and only ``before``'s
    (deleted); None for an index whose column type is not rendered."""
    before, after = list(before), list(after)
    out: dict[str, _Changes | None] = {}
    for name, d in defs.items():
        assert d.column is not None
        old = _row_keys(before, d.column)
        new = _row_keys(after, d.column)
        if old is None or new is None:
            log.warning(
                "metadata table: secondary index %s: column %s has a type hudi_ds does not "
                "render as Java does",
                name,
                d.column,
            )
            out[name] = None
            continue
        out[name] = _Changes(new - old, old - new)
    return out
