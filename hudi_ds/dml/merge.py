"""``MERGE INTO`` as a builder: ``HudiTable(path).merge(source, on=...)...execute()``.

The shape is delta-rs's ``TableMerger`` (``when_matched_update(set=..., predicate=...)``,
``when_not_matched_insert_all()``, ...); the semantics are Hudi's ``MERGE INTO``
(``MergeIntoHoodieTableCommand`` and its ``ExpressionPayload``):

* the ON condition is a conjunction of equalities ``t.<col> = s.<col>`` that names every record
  key field and may name partition path fields, nothing else
  (``recordKeyAttributeToConditionExpression``: "Only simple conditions of the form
  `t.id = s.id` are allowed on the primary-key and partition path column");
* clauses of a kind are tried in order, the first whose predicate holds wins; a row no
  clause takes is left as it is;
* ``UPDATE SET`` of some columns keeps the others' stored values
  (``PartialAssignmentMode.ORIGINAL_VALUE``): the merged full row is written; ``INSERT`` of
  some columns leaves the others null (``PartialAssignmentMode.NULL_VALUE``);
* everything is one upsert (``executeUpsert``), so the table's merge mode and ordering field
  apply to the written rows as to any upsert: under EVENT_TIME_ORDERING an update whose
  ordering value is lower than the stored one loses (an update that does not assign the
  ordering field carries the stored value and wins as the later write); deletes apply
  whatever the stored ordering value (the payload's empty record);
* a source row matching several target rows (a key held in several partitions of a table
  with a non-global index, when ON does not name the partition) and a target row matched by
  several source rows are refused, naming the key, before anything is written (SQL's
  cardinality rule; Hudi would silently pick one). Source rows of one new key that no target
  row matches are all inserted into the one upsert, whose pre-combine keeps one of them by the
  table's merge mode, as in Hudi;
* a ``WHEN NOT MATCHED`` clause sees the source columns only, a ``WHEN NOT MATCHED BY SOURCE``
  clause the target columns only (Spark's resolution of MERGE clauses).

Only the target rows that can match are read: ON's partition fields prune partitions, the
source's record keys (built as the writer builds them, kept an Arrow array) prune the buckets
of a BUCKET table, and each file group read keeps only the base rows and log versions of its
keys before merging them. ``when_not_matched_by_source_delete`` needs every target row, so it
reads the whole table. Only the target columns the statement uses are read: ON's, those the
expressions name, and those the written rows keep from the target -- a partial update's rows
carry the assigned columns with the key, partition and ordering fields, and a deleted row
only what the write takes from it (its key, partition and ordering value; the other columns
are null where they may be).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hudi_ds.dml.clauses import (
    Action,
    Clause,
    Match,
    MergeShape,
    SourceColumn,
    cardinality_error,
    new_clause,
    no_clause_error,
)
from hudi_ds.dml.commit import DmlMetrics, DmlWrite, check_keys_present
from hudi_ds.dml.expr import Expr, as_mask, compile_expr, evaluate
from hudi_ds.dml.predicate import need_keys
from hudi_ds.errors import ConfigError, HudiError
from hudi_ds.keygen import KeySpec, partition_paths, record_keys
from hudi_ds.layout.file_group import FileSlice
from hudi_ds.layout.naming import bucket_id_of
from hudi_ds.schema.meta import DML_DELETE_FIELD, without_meta_fields
from hudi_ds.table.bucket_pruning import Location, keys_by_location
from hudi_ds.table.filters import pruning_filters
from hudi_ds.table.table import ReadableTable
from hudi_ds.table_config import TableType
from hudi_ds.write.operation import UPSERT


class TableMerger:
    """A MERGE of ``source`` into a table, built clause by clause, run by :meth:`execute`.

    Made by :meth:`hudi_ds.HudiTable.merge`; each ``when_*`` method returns the merger, so
    calls chain. Expressions are SQL strings over the aliases (``"s.fare * 2"``,
    ``"s.ts > t.ts AND t.city = 'sf'"``) or ``pyarrow.compute.Expression``s over the
    columns ``"<alias>.<column>"`` (``pc.field("s.fare")``).
    """

    def __init__(
        self,
        table: ReadableTable,
        source: pa.Table,
        on: str | Sequence[str],
        source_alias: str = "s",
        target_alias: str = "t",
        options: Mapping[str, Any] | None = None,
        post_commit: Callable[..., Any] | None = None,
    ) -> None:
        if source_alias == target_alias:
            raise ConfigError(
                f"source_alias and target_alias are both '{source_alias}': give them apart"
            )
        self.table = table
        self.source = source
        self.on = on
        self.source_alias = source_alias
        self.target_alias = target_alias
        self.options = dict(options or {})
        self.post_commit = post_commit
        self.clauses: list[Clause] = []

    # -- the clauses ---------------------------------------------------------------------------
    def _add(
        self,
        match: Match,
        action: Action,
        predicate: Expr | None,
        values: Mapping[str, Expr] | None,
    ) -> TableMerger:
        self.clauses.append(new_clause(match, action, predicate, values))
        return self

    def when_matched_update(
        self, set: Mapping[str, Expr], predicate: Expr | None = None
    ) -> TableMerger:
        """Update the matched target rows (those ``predicate`` holds for) with ``set``
        (target column -> expression); the other columns keep their values."""
        return self._add(Match.MATCHED, Action.UPDATE, predicate, set)

    def when_matched_update_all(self, predicate: Expr | None = None) -> TableMerger:
        """Update every column of the matched target rows from the source's same-named one."""
        return self._add(Match.MATCHED, Action.UPDATE, predicate, None)

    def when_matched_delete(self, predicate: Expr | None = None) -> TableMerger:
        """Delete the matched target rows (those ``predicate`` holds for)."""
        return self._add(Match.MATCHED, Action.DELETE, predicate, None)

    def when_not_matched_insert(
        self, values: Mapping[str, Expr], predicate: Expr | None = None
    ) -> TableMerger:
        """Insert the source rows that match no target row, with ``values`` (target column ->
        expression over the source); columns not given are null."""
        return self._add(Match.NOT_MATCHED, Action.INSERT, predicate, values)

    def when_not_matched_insert_all(self, predicate: Expr | None = None) -> TableMerger:
        """Insert the unmatched source rows, every target column from the same-named one."""
        return self._add(Match.NOT_MATCHED, Action.INSERT, predicate, None)

    def when_not_matched_by_source_delete(self, predicate: Expr | None = None) -> TableMerger:
        """Delete the target rows no source row matches (reads the whole table)."""
        return self._add(Match.NOT_MATCHED_BY_SOURCE, Action.DELETE, predicate, None)

    # -- execution -----------------------------------------------------------------------------
    def execute(self) -> DmlMetrics:
        """Run the statement as one upsert instant and return its metrics.

        Every expression, column and key is checked, and the target rows joined, before
        anything is written; a refused statement leaves the table unchanged.

        Raises:
            ConfigError: no clause, a bad ON condition, an unknown or ambiguous column, an
                expression that does not fit the columns, a source row matching several
                target rows (or the reverse), an assignment to a key or partition column.
            UnsupportedError: a SQL construct hudi_ds does not translate (named).
            SchemaError: an inserted row without a key or partition value.
        """
        if not self.clauses:
            raise no_clause_error()
        plan = _MergePlan(self)
        opts = {**self.table.options.raw, **self.options}
        # opened first: a partial update's rows carry (and the join reads) fewer columns
        write = DmlWrite(self.table.storage, opts, UPSERT, self.post_commit, plan.partial_columns())
        plan.write_columns(write.columns)
        plan.key_spec = write.client.resolved.keys
        joined, s_idx, t_idx, target_rows = plan.join()
        rows, counts = plan.apply(joined, s_idx, t_idx)
        instant, files = None, 0
        if rows.num_rows:
            check_keys_present(rows, plan.key_columns, "merge")
            instant, files = write.write(rows)
            self.table.refresh()
        return DmlMetrics(
            num_source_rows=self.source.num_rows,
            num_target_rows_read=target_rows,
            num_target_rows_inserted=counts[Action.INSERT],
            num_target_rows_updated=counts[Action.UPDATE],
            num_target_rows_deleted=counts[Action.DELETE],
            num_target_files_written=files,
            instant=instant,
        )


class _MergePlan:
    """One execution of a :class:`TableMerger`: the compiled clauses, the join, the rows."""

    def __init__(self, merger: TableMerger) -> None:
        self.m = merger
        need_keys(merger.table, "merge")
        cfg = merger.table.config
        self.data_schema = without_meta_fields(merger.table.schema)
        self.target_cols = self.data_schema.names
        self.source_cols = merger.source.column_names
        self.shape = MergeShape(
            self.target_cols,
            self.source_cols,
            list(cfg.record_key_fields),
            list(cfg.partition_fields),
            merger.source_alias,
            merger.target_alias,
        )
        self.key_fields = list(cfg.record_key_fields)
        self.key_columns = self.shape.key_columns
        self.scope = self.shape.scope()
        self.scopes = self.shape.scopes()
        self.pairs = self.shape.on_pairs(merger.on)
        self.values = self._compile_values()
        # assignments that copy a column as it is (``d1 = s.d1``, ``INSERT *``): the written
        # rows take it from the side's own table by row index, with no joined copy of it
        # (Arrow prints a field reference as its name and nothing else as exactly that)
        columns = {
            self.scope.column_name(a, c): (a, c)
            for a, cols in self.scope.tables.items()
            for c in cols
        }
        self.copies = {
            (i, col): columns[str(e)]
            for i, values in self.values.items()
            for col, e in values.items()
            if str(e) in columns
        }
        self.predicates = {
            i: compile_expr(
                c.predicate, self.scopes[c.match], f"predicate of the {c.describe()} #{i + 1}"
            )
            for i, c in enumerate(merger.clauses)
            if c.predicate is not None
        }
        self.used = self._used_names()
        # what a deleted row must carry: the write takes its key and partition (and checks
        # its ordering value); a non-nullable column keeps its stored value, any other is null
        self.delete_keeps = {*self.key_columns, *cfg.ordering_fields}
        self.write_columns(None)
        #: how the write keys and partitions the rows (set by :meth:`TableMerger.execute`)
        self.key_spec: KeySpec | None = None

    def write_columns(self, partial: list[str] | None) -> None:
        """The data columns the written rows carry: ``partial`` (a partial update's, see
        :class:`~hudi_ds.dml.commit.DmlWrite`) or None for every column."""
        names = self.target_cols if partial is None else partial
        self.out_schema = pa.schema([self.data_schema.field(c) for c in names]).append(
            pa.field(DML_DELETE_FIELD, pa.bool_())
        )

    def partial_columns(self) -> list[str] | None:
        """The columns a partial update writes, or None for full rows.

        As Hudi 1.x's MERGE INTO (``isPartialUpdateActionForMOR``: a MERGE_ON_READ table of
        version 8 or later, some update clause, not every column assigned): the columns some
        clause assigns, with the record key, partition and ordering fields. Inserts among them
        leave the others null anyway; the write client checks the rest of Hudi's rule (merge
        mode, partial update mode, global index) and writes full rows where it fails.
        """
        cfg = self.m.table.config
        if cfg.table_type is not TableType.MERGE_ON_READ or cfg.table_version < 8:
            return None
        if not any(c.action is Action.UPDATE for c in self.m.clauses):
            return None
        keep = {*self.key_columns, *cfg.ordering_fields}
        for values in self.values.values():
            keep.update(values)
        if keep >= set(self.target_cols):
            return None
        return [c for c in self.target_cols if c in keep]

    # -- assignments ---------------------------------------------------------------------------
    def _compile_values(self) -> dict[int, dict[str, pc.Expression]]:
        out: dict[int, dict[str, pc.Expression]] = {}
        sa = self.m.source_alias
        for i, c in enumerate(self.m.clauses):
            if c.action is Action.DELETE:
                continue
            what = f"the {c.describe()} #{i + 1}"
            out[i] = {
                t: pc.field(self.scope.column_name(sa, v.name))
                if isinstance(v, SourceColumn)
                else compile_expr(v, self.scopes[c.match], f"{what}, column '{t}'")
                for t, v in self.shape.assignments(i, c, self.pairs).items()
            }
        return out

    def _takes_from_target(self, i: int, c: Clause, f: pa.Field) -> bool:
        """Whether clause ``i`` writes column ``f`` as the matched target row holds it."""
        if (i, f.name) in self.copies or f.name in self.values.get(i, {}):
            return False
        if c.action is Action.INSERT:
            return False
        return c.action is Action.UPDATE or f.name in self.delete_keeps or not f.nullable

    def read_columns(self) -> list[str]:
        """The target columns the statement reads: ON's, those its expressions name, those
        its copies take from the target and those the written rows keep from it (a partial
        update's rows carry a few columns: only those are read)."""
        ta = self.m.target_alias
        need = {t for t, _ in self.pairs}
        need.update(c for c in self.target_cols if self.scope.column_name(ta, c) in self.used)
        need.update(name for alias, name in self.copies.values() if alias == ta)
        written = [f for f in self.out_schema if f.name != DML_DELETE_FIELD]
        for i, c in enumerate(self.m.clauses):
            need.update(f.name for f in written if self._takes_from_target(i, c, f))
        return [c for c in self.target_cols if c in need]

    # -- the join ------------------------------------------------------------------------------
    def _read_target(self) -> pa.Table:
        """The target rows the source can match (every row for NOT MATCHED BY SOURCE).

        ON's partition fields prune partitions. The source's record keys, built as the
        writer builds them, stay an Arrow array: on a BUCKET table only their buckets' file
        groups are read, and every file group read keeps only the base rows and log versions
        of its keys before merging them (an ``in`` filter of all the keys over the merged
        rows would merge every row and hash the whole key set again for each file group).
        """
        table = self.m.table
        columns = self.read_columns()
        if any(c.match is Match.NOT_MATCHED_BY_SOURCE for c in self.m.clauses):
            return table.read(columns=columns)
        value_parts = set(table.config.value_partition_fields)
        filters = []
        cast = {}
        for t, s in self.pairs:
            cast[t] = _key_cast(self.m.source.column(s), self.data_schema.field(t).type, t)
            if t in value_parts:
                filters.append((t, "in", pc.unique(cast[t].drop_null()).to_pylist()))
        cfg = table.config
        # ON naming every partition field: a key can match only in its own partition
        on_parts = bool(cfg.partition_fields) and all(f in cast for f in cfg.partition_fields)
        fields = [*self.key_fields, *(cfg.partition_fields if on_parts else [])]
        keyed = pa.table({f: cast[f] for f in dict.fromkeys(fields)}).drop_null()
        row_keys = record_keys(keyed, self.key_fields, cfg.complex_record_key)
        paths = self._partition_paths(keyed) if on_parts else None
        # keys in several rows (a source row matching twice, refused by the join) are looked
        # up twice: cheaper than a pass to make them unique
        keys = row_keys if paths is not None else pc.unique(row_keys)
        where = keys_by_location(table, keys, paths)
        if where is None and len(self.key_fields) == 1 and keyed.num_rows:
            # the keys' range: data skipping (the metadata table's column stats) prunes by it
            bounds, name = pc.min_max(keyed.column(0)), self.key_fields[0]
            lo, hi = bounds["min"].as_py(), bounds["max"].as_py()
            filters += pruning_filters([(name, ">=", lo), (name, "<=", hi)], table.schema)
        # the filters only prune: the join matches the key and partition columns itself
        plan = dataclasses.replace(table.plan_read(columns=columns, filters=filters), filters=[])
        slices = plan.slices
        if where is not None:
            # a file group none of whose keys the source holds is not read
            slices = [s for s in slices if len(self._keys_of(s, keys, where, paths))]

        def of_slice(s: FileSlice) -> pa.Array:
            return keys if where is None else self._keys_of(s, keys, where, paths)

        batches = list(table.read_plan_slices(plan, slices, slice_keys=of_slice))
        return pa.Table.from_batches(batches, schema=plan.output_schema)

    def _partition_paths(self, keyed: pa.Table) -> pa.Array | None:
        """The partition path of each source row as the write builds it (None where a value
        makes no path the write would take: the rows are then looked up in every partition,
        and the write refuses them)."""
        spec = self.key_spec
        if spec is None:
            return None
        try:
            return partition_paths(
                keyed,
                list(spec.partition_fields),
                spec.hive_style,
                spec.url_encode,
                spec.timestamp,
                spec.timestamp_fields,
            )
        except (HudiError, pa.ArrowException):
            return None

    @staticmethod
    def _keys_of(
        s: FileSlice,
        keys: pa.Array,
        where: dict[Location, pa.Array],
        paths: pa.Array | None,
    ) -> pa.Array:
        """The source keys file slice ``s`` may hold (``where``: :func:`keys_by_location`)."""
        if not where:
            return keys.slice(0, 0)
        b = bucket_id_of(s.file_id)
        bucketed = next(iter(where))[1] is not None
        if bucketed and b is None:  # not a bucket file group: any key of its partition
            found = [k for (p, _), k in where.items() if paths is None or p == s.partition_path]
            return pa.concat_arrays(found) if found else keys.slice(0, 0)
        at = (s.partition_path if paths is not None else None, b if bucketed else None)
        return where.get(at, keys.slice(0, 0))

    def join(self) -> tuple[pa.Table, pa.Array, pa.Array, int]:
        """The joined rows (``<alias>.<column>`` of both sides, nulls for the side that has
        none), their source and target row indexes (null: none), and the target rows read."""
        # the data columns only: the meta columns are strings not worth decoding here
        target = self._read_target()
        source = self.m.source
        names = [f"k{i}" for i in range(len(self.pairs))]
        left = {
            n: _key_cast(source.column(s), target.schema.field(t).type, t)
            for n, (t, s) in zip(names, self.pairs, strict=True)
        }
        right = {n: target.column(t) for n, (t, _) in zip(names, self.pairs, strict=True)}
        left["__s"] = pa.array(np.arange(source.num_rows, dtype=np.int64))
        right["__t"] = pa.array(np.arange(target.num_rows, dtype=np.int64))
        by_source = any(c.match is Match.NOT_MATCHED_BY_SOURCE for c in self.m.clauses)
        pairs = pa.table(left).join(
            pa.table(right), keys=names, join_type="full outer" if by_source else "left outer"
        )
        s_idx = pairs.column("__s").combine_chunks()
        t_idx = pairs.column("__t").combine_chunks()
        self._check_cardinality(s_idx, t_idx, source)
        # the rows written take their other columns from the target itself (:meth:`_rows`)
        self._sides = {self.m.source_alias: (source, s_idx), self.m.target_alias: (target, t_idx)}
        sa, ta = self.m.source_alias, self.m.target_alias
        used = self.used
        cols = {
            n: source.column(c).take(s_idx)
            for c in self.source_cols
            if (n := self.scope.column_name(sa, c)) in used
        }
        cols.update(
            {
                n: target.column(c).take(t_idx)
                for c in target.column_names
                if (n := self.scope.column_name(ta, c)) in used
            }
        )
        joined = pa.table(cols) if cols else _no_columns(len(s_idx))
        return joined, s_idx, t_idx, target.num_rows

    def _used_names(self) -> set[str]:
        """The joined columns the clauses' expressions may name: every ``<alias>.<column>``
        written inside one of them (Arrow prints a field by its name, so this holds every
        column an expression reads, and perhaps a few more)."""
        texts = [str(e) for e in self.predicates.values()]
        texts += [
            str(e)
            for i, values in self.values.items()
            for col, e in values.items()
            if (i, col) not in self.copies
        ]
        names = [
            self.scope.column_name(alias, c)
            for alias, cols in self.scope.tables.items()
            for c in cols
        ]
        return {n for n in names if any(n in t for t in texts)}

    def _check_cardinality(self, s_idx: pa.Array, t_idx: pa.Array, source: pa.Table) -> None:
        # row indexes counted with numpy (no hash table): the matched rows of each side
        # are indexes below its row count, so a bincount finds an index paired twice
        both = np.asarray(pc.and_(s_idx.is_valid(), t_idx.is_valid()), dtype=bool)
        sides = (("source", s_idx), ("target", t_idx))
        for side, idx in sides:
            matched = np.asarray(idx.fill_null(0), dtype=np.int64)[both]
            if not len(matched):
                continue
            counts = np.bincount(matched)
            row = int(counts.argmax())
            if counts[row] > 1:
                key = self._key_of(side, row, s_idx, t_idx, source)
                raise cardinality_error(side, key, int(counts[row]), self.m.on)

    def _key_of(
        self, side: str, row: int, s_idx: pa.Array, t_idx: pa.Array, source: pa.Table
    ) -> dict[str, Any]:
        if side == "target":  # a source row matched to it names the key
            paired = pc.and_(pc.fill_null(pc.equal(t_idx, row), False), s_idx.is_valid())
            row = s_idx.filter(paired)[0].as_py()
        return {s: source.column(s)[row].as_py() for _, s in self.pairs}

    # -- the clauses on the joined rows --------------------------------------------------------
    def apply(
        self, joined: pa.Table, s_idx: pa.Array, t_idx: pa.Array
    ) -> tuple[pa.Table, dict[Action, int]]:
        """The rows to upsert (target columns + the delete flag) and the count per action."""
        has_s = np.asarray(s_idx.is_valid())
        has_t = np.asarray(t_idx.is_valid())
        groups = {
            Match.MATCHED: has_s & has_t,
            Match.NOT_MATCHED: has_s & ~has_t,
            Match.NOT_MATCHED_BY_SOURCE: ~has_s & has_t,
        }
        exprs = {f"p{i}": e for i, e in self.predicates.items()}
        names = {
            f"p{i}": f"the predicate of the {self.m.clauses[i].describe()} #{i + 1}"
            for i in self.predicates
        }
        for i, values in self.values.items():
            exprs.update({f"v{i}:{c}": e for c, e in values.items() if (i, c) not in self.copies})
            what = f"the {self.m.clauses[i].describe()} #{i + 1}"
            names.update({f"v{i}:{c}": f"{what}, column '{c}'" for c in values})
        evaluated = evaluate(joined, exprs, "merge", names) if exprs else None
        taken = np.zeros(joined.num_rows, dtype=bool)
        pieces: list[pa.Table] = []
        counts = dict.fromkeys(Action, 0)
        for i, c in enumerate(self.m.clauses):
            rows = groups[c.match] & ~taken
            if evaluated is not None and i in self.predicates:
                what = f"the predicate of the {c.describe()} #{i + 1}"
                rows &= np.asarray(as_mask(evaluated.column(f"p{i}"), what))
            taken |= rows
            idx = pa.array(np.flatnonzero(rows))
            if not len(idx):
                continue
            counts[c.action] += len(idx)
            pieces.append(self._rows(i, c, joined, evaluated, idx))
        if not pieces:
            return self.out_schema.empty_table(), counts
        return pa.concat_tables(pieces), counts

    def _rows(
        self, i: int, c: Clause, joined: pa.Table, evaluated: pa.Table | None, idx: pa.Array
    ) -> pa.Table:
        values = self.values.get(i, {})
        rows = {a: (t, ix.take(idx)) for a, (t, ix) in self._sides.items()}
        target, t_rows = rows[self.m.target_alias]
        cols = []
        for f in self.out_schema:
            if f.name == DML_DELETE_FIELD:
                cols.append(pa.repeat(pa.scalar(c.action is Action.DELETE), len(idx)))
                continue
            if (i, f.name) in self.copies:
                alias, name = self.copies[(i, f.name)]
                col = rows[alias][0].column(name).take(rows[alias][1])
            elif f.name in values:
                assert evaluated is not None
                col = evaluated.column(f"v{i}:{f.name}").take(idx)
            elif self._takes_from_target(i, c, f):
                col = target.column(f.name).take(t_rows)
            else:
                col = pa.nulls(len(idx), f.type)
            cols.append(_cast(col, f, c.describe()))
        return pa.Table.from_arrays(cols, schema=self.out_schema)


def _no_columns(rows: int) -> pa.Table:
    """A table of ``rows`` rows and no columns (the clauses read none)."""
    return pa.table({"": pa.nulls(rows)}).drop_columns([""])


def _cast(col: Any, f: pa.Field, what: str) -> pa.ChunkedArray | pa.Array:
    if col.type == f.type:
        return col
    try:
        return col.cast(f.type)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
        first = str(e).splitlines()[0]
        raise ConfigError(
            f"{what}: the value of column '{f.name}' ({col.type}) does not fit its type "
            f"{f.type}: {first}"
        ) from None


def _key_cast(col: pa.ChunkedArray, to: pa.DataType, name: str) -> pa.ChunkedArray:
    """A source ON column as the target column's type (Hudi up-casts the source side:
    ``MergeIntoHoodieTableCommand.doCasting``)."""
    return _cast(col, pa.field(name, to), f"merge on '{name}'")  # type: ignore[return-value]
