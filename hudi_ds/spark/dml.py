"""``MERGE``, ``UPDATE`` and ``DELETE`` on a ``hudi_py`` table, run by Spark.

::

    from hudi_ds.spark import HudiTable
    t = HudiTable.forPath(spark, path)
    (t.merge(updates_df, "t.id = s.id")
      .whenMatchedUpdate(set={"fare": "s.fare"})
      .whenNotMatchedInsertAll()
      .execute())
    t.update("city = 'sf'", {"fare": "fare * 2"})
    t.delete(F.col("fare") < 5)

The shape is delta-spark's ``DeltaTable`` (``forPath``, ``alias``, ``merge``, the
``whenMatched...`` clauses, ``execute``, ``update``, ``delete``, ``toDF``); the semantics are
Hudi's ``MERGE INTO`` as the embedded :class:`hudi_ds.dml.merge.TableMerger` implements them,
whose clause model and checks (ON on key equalities, assignments, the cardinality rule, the
messages) this module shares through :mod:`hudi_ds.engine`.

Spark does the work, the driver collects no table rows: the target is read with
``spark.read.format("hudi_py")`` -- narrowed, when the source has few distinct keys, by an
``IN`` filter of its keys, which with filter pushdown prunes buckets, partitions and file
slices --, joined with the source (left outer, full outer with ``whenNotMatchedBySource``),
each joined row takes the first clause whose kind and condition fit it (one ``CASE WHEN``
chain), and the result is written through ``hudi_py`` as one upsert whose deleted rows carry
the internal delete flag (:data:`~hudi_ds.engine.DML_DELETE_FIELD`): one instant, as Hudi's
``MergeIntoHoodieTableCommand.executeUpsert``. Before anything is written, aggregations over
the persisted join check that no source row matches several target rows and no target row
several source rows (the error names the key) and that inserted rows have their key columns.
Expressions are Spark ``Column`` s or SQL strings, which Spark evaluates (all of Spark SQL);
the columns a SQL string names are first resolved as the embedded API resolves them (same
messages). The metrics are :class:`~hudi_ds.engine.DmlMetrics`; a MERGE's
``num_target_rows_read`` counts the target rows the join paired with the source.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from pyspark import StorageLevel
from pyspark.errors import AnalysisException
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from hudi_ds.config import WriteConfig
from hudi_ds.engine import (
    DML_DELETE_FIELD,
    META_FIELDS,
    PARTITION_PATH_METADATA_FIELD,
    RECORD_KEY_METADATA_FIELD,
    Action,
    Clause,
    DmlMetrics,
    Match,
    MergeShape,
    ReadableTable,
    Scope,
    SourceColumn,
    cardinality_error,
    check_sql_columns,
    check_update_set,
    dml_instant,
    latest_instant_time,
    new_clause,
    no_clause_error,
)
from hudi_ds.errors import ConfigError, SchemaError
from hudi_ds.spark import options as opt
from hudi_ds.spark.direct import read_table
from hudi_ds.spark.options import SOURCE_NAME, SparkConfig
from hudi_ds.spark.worker_errors import hudi_errors

#: Spark's switch for Python data sources' filter pushdown
PUSHDOWN_CONF = "spark.sql.python.filterPushdown.enabled"

#: at most this many distinct source keys become an ``IN`` filter of the target read
MAX_PUSHED_KEYS = 1000

_SID, _HAS_S, _HAS_T, _CLAUSE = "__hudi_sid", "__hudi_s", "__hudi_t", "__hudi_clause"


@contextmanager
def _resolved(what: str) -> Iterator[None]:
    """Spark's analysis errors (an unknown column, types that do not fit) of a statement's
    expressions as ``ConfigError`` s; raised before anything is written."""
    try:
        yield
    except AnalysisException as e:
        first = str(e).strip().splitlines()[0]
        raise ConfigError(f"{what}: Spark cannot resolve the statement: {first}") from None


def _column(value: Any, what: str, scope: Scope | None = None) -> Column:
    """A Spark expression from a ``Column`` or a SQL string (its columns resolved against
    ``scope`` first, with the embedded API's messages)."""
    if isinstance(value, Column):
        return value
    if isinstance(value, str) and value.strip():
        if scope is not None:
            check_sql_columns(value, scope, what)
        return F.expr(value)
    raise ConfigError(f"{what}: expected a Spark Column or a SQL string, not {value!r}")


class HudiTable:
    """A ``hudi_py`` table for DML, as delta-spark's ``DeltaTable``.

    Args:
        spark: the session (with ``hudi_py`` registered: :func:`hudi_ds.spark.register`).
        path: the table's base path.
        options: ``hoodie.*`` and object store options for the statement's read and write.
    """

    def __init__(
        self,
        spark: SparkSession,
        path: str,
        options: Mapping[str, str] | None = None,
        alias: str = "t",
    ) -> None:
        self.spark = spark
        self.path = path
        self.options = {str(k): str(v) for k, v in (options or {}).items()}
        _, _, connector = opt.split_options({**self.options, "path": path})
        self.location = opt.open_path(path, connector)
        self.table = ReadableTable(self.location)  # refuses a path that is no Hudi table
        self._alias = alias

    @classmethod
    def forPath(
        cls, spark: SparkSession, path: str, options: Mapping[str, str] | None = None
    ) -> HudiTable:
        """The table at ``path`` (``TableNotFoundError`` when there is none)."""
        return cls(spark, path, options)

    for_path = forPath

    def alias(self, name: str) -> HudiTable:
        """The same table under the alias ``name`` (``t`` by default) in expressions."""
        if not isinstance(name, str) or not name.isidentifier():
            raise ConfigError(f"alias: expected an identifier, not {name!r}")
        return HudiTable(self.spark, self.path, self.options, name)

    def toDF(self) -> DataFrame:
        """The table's snapshot as a DataFrame, as of this call: its plain Parquet file slices
        read by Spark's own reader (:func:`hudi_ds.spark.direct.read_table`)."""
        return read_table(self.spark, self.path, self.options)

    def _pruned_read(self) -> DataFrame:
        """A fresh read that prunes with the filters Spark pushes, where the session allows
        (pyspark refuses a pushdown reader while ``spark.sql.python.filterPushdown.enabled``
        is false). Safe from pyspark 4.3's reuse of one query's pushed filters by later
        queries of the DataFrame: every query of a MERGE's target carries the same filters."""
        df = self.spark.read.format(SOURCE_NAME).options(**self.options)
        enabled = str(self.spark.conf.get(PUSHDOWN_CONF, "false")).strip().lower() == "true"
        key = SparkConfig.FILTER_PUSHDOWN.key
        if enabled and key not in {k.lower() for k in self.options}:
            df = df.option(key, "true")
        return df.load(self.path)

    to_df = toDF

    # -- shape ---------------------------------------------------------------------------------
    def data_columns(self) -> list[str]:
        return [n for n in self.table.schema.names if n not in META_FIELDS]

    def _scope(self) -> Scope:
        """What a one-table statement's SQL may name: the columns, bare or aliased."""
        return Scope({self._alias: self.data_columns()}, bare=self._alias)

    def _need_keys(self, what: str) -> None:
        # each statement sees the table as it is now (schema, key fields): other writers may
        # have changed it since this handle was made
        self.table = ReadableTable(self.location)
        if not self.table.config.record_key_fields:
            raise ConfigError(
                f"{what}: the table at {self.path} has no record key fields (Hudi's "
                "auto-generated keys): hudi_ds writes its statements as writes by key; use the "
                "embedded HudiTable.delete(predicate=...) for such tables"
            )

    # -- statements ----------------------------------------------------------------------------
    def merge(
        self,
        source: DataFrame,
        condition: str | Column | Sequence[str],
        source_alias: str = "s",
    ) -> MergeBuilder:
        """Start a ``MERGE`` of ``source`` (aliased ``source_alias``; the table is ``t``
        unless :meth:`alias` says otherwise) on ``condition``: ``"t.id = s.id"``, a Column
        of key equalities, or column names both sides hold. Add clauses, then ``execute()``."""
        return MergeBuilder(self, source, condition, source_alias)

    def update(
        self, condition: str | Column | None = None, set: Mapping[str, Any] | None = None
    ) -> DmlMetrics:
        """``UPDATE t SET ... WHERE condition`` as one upsert (``condition`` None: every row);
        ``set`` maps columns to Columns or SQL strings over the table's columns."""
        self._need_keys("update")
        cfg = self.table.config
        data = self.data_columns()
        check_update_set(set, data, [*cfg.record_key_fields, *cfg.partition_fields])
        assert set is not None
        with _resolved("update"):
            target = self._target().alias(self._alias)
            scope = self._scope()
            where = (
                F.lit(True) if condition is None else _column(condition, "update condition", scope)
            )
            types = {f.name: f.dataType for f in target.schema.fields}
            cols = [
                _column(set[c], f"update of column '{c}'", scope).cast(types[c]).alias(c)
                if c in set
                else F.col(c)
                for c in data
            ]
            rows = target.where(where).select(*cols)
            counts = _selected_counts(target, where)
        return self._write_selected(counts, rows, "upsert", updated=True)

    def delete(self, condition: str | Column | None = None) -> DmlMetrics:
        """``DELETE FROM t WHERE condition`` as one delete instant (None: every row)."""
        self._need_keys("delete")
        with _resolved("delete"):
            target = self._target().alias(self._alias)
            where = (
                F.lit(True)
                if condition is None
                else _column(condition, "delete condition", self._scope())
            )
            rows = target.where(where).select(*self.data_columns())
            counts = _selected_counts(target, where)
        return self._write_selected(counts, rows, "delete", updated=False)

    def _target(self) -> DataFrame:
        return self.toDF().select(*self.data_columns())

    def _write_selected(
        self, counts: tuple[int, int], rows: DataFrame, op: str, updated: bool
    ) -> DmlMetrics:
        read, selected = counts
        instant, files = None, 0
        if selected:
            instant, files = self.write(rows, op)
        return DmlMetrics(
            0, read, 0, selected if updated else 0, 0 if updated else selected, files, instant
        )

    def write(self, rows: DataFrame, operation: str) -> tuple[str | None, int]:
        """Write ``rows`` with ``operation`` as one instant: the instant and file groups."""
        before = latest_instant_time(self.location)
        with hudi_errors():  # a write refused in a worker raises its hudi_ds class here
            (
                rows.write.format(SOURCE_NAME)
                .mode("append")
                .options(**self.options)
                .option(WriteConfig.OPERATION.key, operation)
                .save(self.path)
            )
        self.table = ReadableTable(self.location)
        return dml_instant(self.location, before)


def _selected_counts(target: DataFrame, where: Column) -> tuple[int, int]:
    """The target rows read and those ``where`` selects (one aggregation)."""
    row = target.agg(
        F.count(F.lit(1)).alias("read"), F.count(F.when(where, 1)).alias("selected")
    ).first()
    assert row is not None
    return int(row["read"]), int(row["selected"])


class MergeBuilder:
    """A MERGE built clause by clause (each method returns the builder), run by
    :meth:`execute`. Clause names as delta-spark's, snake_case ones too."""

    def __init__(
        self,
        table: HudiTable,
        source: DataFrame,
        condition: str | Column | Sequence[str],
        source_alias: str = "s",
    ) -> None:
        if not isinstance(source, DataFrame):
            raise ConfigError(f"merge: the source must be a Spark DataFrame, not {source!r}")
        self.table = table
        self.source = source
        self.condition = condition
        self.source_alias = source_alias
        self.clauses: list[Clause] = []

    def _add(self, match: Match, action: Action, condition: Any, values: Any) -> MergeBuilder:
        self.clauses.append(new_clause(match, action, condition, values))
        return self

    def whenMatchedUpdate(
        self, condition: str | Column | None = None, set: Mapping[str, Any] | None = None
    ) -> MergeBuilder:
        """Update the matched target rows ``condition`` holds for with ``set`` (target column
        -> Column or SQL string); the other columns keep their values."""
        if set is None:
            raise ConfigError("whenMatchedUpdate: set is required (or whenMatchedUpdateAll)")
        return self._add(Match.MATCHED, Action.UPDATE, condition, set)

    def whenMatchedUpdateAll(self, condition: str | Column | None = None) -> MergeBuilder:
        """Update every column of the matched rows from the source's same-named one."""
        return self._add(Match.MATCHED, Action.UPDATE, condition, None)

    def whenMatchedDelete(self, condition: str | Column | None = None) -> MergeBuilder:
        """Delete the matched target rows ``condition`` holds for."""
        return self._add(Match.MATCHED, Action.DELETE, condition, None)

    def whenNotMatchedInsert(
        self, condition: str | Column | None = None, values: Mapping[str, Any] | None = None
    ) -> MergeBuilder:
        """Insert the unmatched source rows with ``values``; columns not given are null."""
        if values is None:
            raise ConfigError("whenNotMatchedInsert: values is required (or ...InsertAll)")
        return self._add(Match.NOT_MATCHED, Action.INSERT, condition, values)

    def whenNotMatchedInsertAll(self, condition: str | Column | None = None) -> MergeBuilder:
        """Insert the unmatched source rows, every target column from the same-named one."""
        return self._add(Match.NOT_MATCHED, Action.INSERT, condition, None)

    def whenNotMatchedBySourceDelete(self, condition: str | Column | None = None) -> MergeBuilder:
        """Delete the target rows no source row matches (reads the whole table)."""
        return self._add(Match.NOT_MATCHED_BY_SOURCE, Action.DELETE, condition, None)

    when_matched_update = whenMatchedUpdate
    when_matched_update_all = whenMatchedUpdateAll
    when_matched_delete = whenMatchedDelete
    when_not_matched_insert = whenNotMatchedInsert
    when_not_matched_insert_all = whenNotMatchedInsertAll
    when_not_matched_by_source_delete = whenNotMatchedBySourceDelete

    def execute(self) -> DmlMetrics:
        """Run the MERGE as one upsert instant; its metrics.

        Raises:
            ConfigError: no clause, a bad ON condition, an unknown column, an assignment to
                a key or partition column, a row matching several rows of the other side
                (named by its key) -- all before anything is written.
            SchemaError: an inserted row without a key or partition value.
        """
        if not self.clauses:
            raise no_clause_error()
        self.table._need_keys("merge")
        return _MergeRun(self).run()


class _MergeRun:
    """One execution of a :class:`MergeBuilder`."""

    def __init__(self, b: MergeBuilder) -> None:
        self.b = b
        t = b.table
        cfg = t.table.config
        self.data = t.data_columns()
        self.shape = MergeShape(
            self.data,
            b.source.columns,
            list(cfg.record_key_fields),
            list(cfg.partition_fields),
            b.source_alias,
            t._alias,
        )
        self.scopes = self.shape.scopes()
        self.on_text = _on_text(b.condition)
        self.pairs = self.shape.on_pairs(self.on_text)
        self.values = {
            i: self.shape.assignments(i, c, self.pairs)
            for i, c in enumerate(b.clauses)
            if c.action is not Action.DELETE
        }
        self.by_source = any(c.match is Match.NOT_MATCHED_BY_SOURCE for c in b.clauses)
        for i, c in enumerate(b.clauses):  # SQL columns resolved before any Spark job
            what = f"the {c.describe()} #{i + 1}"
            if isinstance(c.predicate, str):
                check_sql_columns(c.predicate, self.scopes[c.match], f"the condition of {what}")
            for col, v in self.values.get(i, {}).items():
                if isinstance(v, str):
                    check_sql_columns(v, self.scopes[c.match], f"{what}, column '{col}'")

    def run(self) -> DmlMetrics:
        t, sa, ta = self.b.table, self.shape.source_alias, self.shape.target_alias
        read = t.toDF() if self.by_source else t._pruned_read()
        target = read.select(*self.data, RECORD_KEY_METADATA_FIELD, PARTITION_PATH_METADATA_FIELD)
        target = self._narrowed(target).withColumn(_HAS_T, F.lit(True)).alias(ta)
        source = (
            self.b.source.withColumn(_SID, F.monotonically_increasing_id())
            .withColumn(_HAS_S, F.lit(True))
            .alias(sa)
        )
        on = F.expr(self.on_text) if isinstance(self.b.condition, str) else self._on_column()
        how = "full_outer" if self.by_source else "left_outer"
        with _resolved("merge"):
            joined = source.join(target, on, how).persist(StorageLevel.MEMORY_AND_DISK)
        try:
            with _resolved("merge"):
                self._check_cardinality(joined)
                chosen = joined.withColumn(_CLAUSE, self._clause_chain()).where(
                    F.col(_CLAUSE).isNotNull()
                )
                n_source, n_read, counts = self._counts(joined, chosen)
                rows = self._rows(chosen, target)
            instant, files = None, 0
            if sum(counts.values()):
                instant, files = t.write(rows, "upsert")
        finally:
            joined.unpersist()
        return DmlMetrics(
            n_source,
            n_read,
            counts[Action.INSERT],
            counts[Action.UPDATE],
            counts[Action.DELETE],
            files,
            instant,
        )

    def _on_column(self) -> Column:
        cond = self.b.condition
        if isinstance(cond, Column):
            return cond
        sa, ta = self.shape.source_alias, self.shape.target_alias
        out = None
        for tc, sc in self.pairs:
            eq = F.col(f"{ta}.{tc}") == F.col(f"{sa}.{sc}")
            out = eq if out is None else out & eq
        assert out is not None
        return out

    def _narrowed(self, target: DataFrame) -> DataFrame:
        """The target read narrowed by ``IN`` filters of the source's ON values (a record key
        of one field, partition fields), when there are few; none when every target row is a
        candidate (``whenNotMatchedBySource``)."""
        if self.by_source:
            return target
        keys = self.shape.key_fields
        types = {f.name: f.dataType for f in target.schema.fields}
        for tc, sc in self.pairs:
            if tc in keys and len(keys) > 1:
                continue  # the bucket pruning of a complex key needs every field
            values = (
                self.b.source.select(F.col(sc).cast(types[tc]).alias("v"))
                .where(F.col("v").isNotNull())
                .distinct()
                .limit(MAX_PUSHED_KEYS + 1)
                .collect()
            )
            if len(values) <= MAX_PUSHED_KEYS:
                target = target.where(F.col(tc).isin([r["v"] for r in values]))
        return target

    def _check_cardinality(self, joined: DataFrame) -> None:
        sa, ta = self.shape.source_alias, self.shape.target_alias
        both = joined.where(F.col(_HAS_S).isNotNull() & F.col(_HAS_T).isNotNull())
        key = [F.first(F.col(f"{sa}.{s}")).alias(s) for _, s in self.pairs]
        sides = (
            ("source", [F.col(_SID)]),
            (
                "target",
                [
                    F.col(f"{ta}.{RECORD_KEY_METADATA_FIELD}"),
                    F.col(f"{ta}.{PARTITION_PATH_METADATA_FIELD}"),
                ],
            ),
        )
        for side, by in sides:
            many = (
                both.groupBy(*by)
                .agg(F.count(F.lit(1)).alias("__n"), *key)
                .where(F.col("__n") > 1)
                .limit(1)
                .collect()
            )
            if many:
                row = many[0]
                raise cardinality_error(
                    side, {s: row[s] for _, s in self.pairs}, int(row["__n"]), self.b.condition
                )

    def _clause_chain(self) -> Column:
        has_s, has_t = F.col(_HAS_S).isNotNull(), F.col(_HAS_T).isNotNull()
        groups = {
            Match.MATCHED: has_s & has_t,
            Match.NOT_MATCHED: has_s & ~has_t,
            Match.NOT_MATCHED_BY_SOURCE: ~has_s & has_t,
        }
        chain: Any = F
        for i, c in enumerate(self.b.clauses):
            cond = groups[c.match]
            if c.predicate is not None:
                what = f"the condition of the {c.describe()} #{i + 1}"
                cond = cond & _column(c.predicate, what, self.scopes[c.match])
            chain = chain.when(cond, F.lit(i))
        return chain  # type: ignore[no-any-return]

    def _counts(self, joined: DataFrame, chosen: DataFrame) -> tuple[int, int, dict[Action, int]]:
        """Source rows, target rows paired by the join and rows per action; inserted rows
        without a key or partition value refused (before anything is written)."""
        clause = F.col(_CLAUSE)
        aggs = [F.count(F.when(clause == i, 1)).alias(f"c{i}") for i in range(len(self.b.clauses))]
        nulls: dict[str, tuple[int, str]] = {}
        for i, c in enumerate(self.b.clauses):
            if c.action is not Action.INSERT:
                continue
            for col in self.shape.key_columns:
                v = self.values[i].get(col)
                if v is not None:
                    name = f"n{len(nulls)}"
                    what = f"the {c.describe()} #{i + 1}, column '{col}'"
                    is_null = self._value(v, what, c.match).isNull()
                    aggs.append(F.count(F.when((clause == i) & is_null, 1)).alias(name))
                    nulls[name] = (i, col)
        row = chosen.agg(*aggs).first()
        sizes = joined.agg(
            F.count(F.when(F.col(_HAS_S).isNotNull(), 1)).alias("s"),
            F.count(F.when(F.col(_HAS_T).isNotNull(), 1)).alias("t"),
        ).first()
        assert row is not None and sizes is not None
        counts = dict.fromkeys(Action, 0)
        for i, c in enumerate(self.b.clauses):
            n = int(row[f"c{i}"])
            counts[c.action] += n
            absent = [k for k in self.shape.key_columns if k not in self.values.get(i, {})]
            if n and c.action is Action.INSERT and absent:
                raise _null_key(absent[0], n)
        for name, (_, col) in nulls.items():
            if row[name]:
                raise _null_key(col, int(row[name]))
        return int(sizes["s"]), int(sizes["t"]), counts

    def _value(self, v: Any, what: str, match: Match) -> Column:
        if isinstance(v, SourceColumn):
            return F.col(f"{self.shape.source_alias}.{v.name}")
        return _column(v, what, self.scopes[match])

    def _rows(self, chosen: DataFrame, target: DataFrame) -> DataFrame:
        """The target columns of each chosen row (the clause's values, else the stored ones,
        null for inserts) and the delete flag."""
        ta = self.shape.target_alias
        types = {f.name: f.dataType for f in target.schema.fields}
        deletes = [i for i, c in enumerate(self.b.clauses) if c.action is Action.DELETE]
        cols = []
        for col in self.data:
            out: Any = F
            for i, values in self.values.items():
                if col in values:
                    what = f"the {self.b.clauses[i].describe()} #{i + 1}, column '{col}'"
                    v = self._value(values[col], what, self.b.clauses[i].match).cast(types[col])
                    out = out.when(F.col(_CLAUSE) == i, v)
            stored = F.col(f"{ta}.{col}")  # null on an insert's row: no target side
            cols.append((stored if out is F else out.otherwise(stored)).alias(col))
        flag = F.col(_CLAUSE).isin(deletes) if deletes else F.lit(False)
        return chosen.select(*cols, flag.alias(DML_DELETE_FIELD))


def _null_key(col: str, n: int) -> SchemaError:
    return SchemaError(
        f"merge: key/partition column '{col}' would be null in {n} row(s); assign it a value"
    )


def _infix(text: str) -> str:
    """pyspark 4's prefix form of a Column (``and(=(t.id, s.id), =(t.c, s.c))``) as SQL
    (``(t.id = s.id) AND (t.c = s.c)``); other text is returned as it is."""
    pos = 0

    def term() -> str:
        nonlocal pos
        start = pos
        while pos < len(text) and text[pos] not in "(),":
            pos += 1
        name = text[start:pos].strip()
        if pos < len(text) and text[pos] == "(" and name in ("=", "and", "AND"):
            pos += 1
            args = [term()]
            while pos < len(text) and text[pos] == ",":
                pos += 1
                args.append(term())
            if pos >= len(text) or text[pos] != ")":
                raise ValueError(text)
            pos += 1
            op = " = " if name == "=" else " AND "
            return "(" + op.join(args) + ")"
        return name

    try:
        out = term()
    except ValueError:
        return text
    return out if pos == len(text) else text


def _on_text(condition: Any) -> Any:
    """The ON condition as the shared checks take it: SQL text or column names."""
    if isinstance(condition, str):
        return condition
    if isinstance(condition, Column):
        text = str(condition)
        if text.startswith("Column<'") and text.endswith("'>"):
            text = text[len("Column<'") : -2]
        return _infix(text)
    if isinstance(condition, Sequence) and all(isinstance(c, str) for c in condition):
        return list(condition)
    raise ConfigError(
        f"merge: the condition must be a SQL string, a Column or a list of column names, "
        f"not {condition!r}"
    )


__all__ = ["HudiTable", "MergeBuilder"]
