"""Hudi's SQL DML statements on ``hudi_py`` tables: ``hudi_ds.spark.sql(spark, statement)``.

pyspark's Python data sources take no ``MERGE INTO`` / ``UPDATE`` / ``DELETE`` from Spark SQL
(Spark plans them only for catalog tables that support row-level operations), so this helper
parses the statement (with sqlglot, Spark's dialect) and runs it through the DataFrame builder
(:mod:`hudi_ds.spark.dml`)::

    MERGE INTO hudi_py.`/path/to/table` [AS] t
    USING <view or table name> | (<query>) [AS] s
    ON t.id = s.id [AND t.city = s.city]
    WHEN MATCHED [AND <cond>] THEN UPDATE SET col = <expr>, ... | UPDATE SET * | DELETE
    WHEN NOT MATCHED [AND <cond>] THEN INSERT (col, ...) VALUES (<expr>, ...) | INSERT *
    WHEN NOT MATCHED BY SOURCE [AND <cond>] THEN DELETE

    UPDATE hudi_py.`/path/to/table` [[AS] t] SET col = <expr>, ... [WHERE <cond>]
    DELETE FROM hudi_py.`/path/to/table` [[AS] t] [WHERE <cond>]

The target is always a path in the ``hudi_py.`<path>``` form (as Spark's own
``parquet.`<path>```): a temporary view over ``hudi_py`` is a query to Spark, which keeps no
path a write could go to. The source is anything Spark resolves: a temporary view, a catalog
table or a subquery, run by ``spark.sql``. Conditions and values are handed to Spark as they
are written (all of Spark SQL).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pyspark.sql import SparkSession

from hudi_ds.engine import DmlMetrics
from hudi_ds.errors import ConfigError, UnsupportedError
from hudi_ds.spark.dml import HudiTable, MergeBuilder
from hudi_ds.spark.options import SOURCE_NAME


def sql(
    spark: SparkSession, statement: str, options: Mapping[str, str] | None = None
) -> DmlMetrics:
    """Run one ``MERGE INTO``, ``UPDATE`` or ``DELETE FROM`` statement on a ``hudi_py`` table
    (see the module docstring for the forms) as one instant; its metrics.

    Args:
        options: ``hoodie.*`` and object store options for the statement's read and write.

    Raises:
        ConfigError: a statement that does not parse, a target not of the
            ``hudi_py.`<path>``` form, and whatever the builder refuses (named).
        UnsupportedError: another kind of statement.
    """
    import sqlglot
    from sqlglot import exp
    from sqlglot.errors import ParseError

    if not isinstance(statement, str) or not statement.strip():
        raise ConfigError(f"sql: expected a SQL statement, not {statement!r}")
    try:
        tree = sqlglot.parse_one(statement, read="spark")
    except ParseError as e:
        raise ConfigError(f"sql: cannot parse the statement ({str(e).splitlines()[0]})") from None
    if isinstance(tree, exp.Merge):
        return _merge(spark, tree, options).execute()
    if isinstance(tree, (exp.Update, exp.Delete)):
        table = _target(spark, tree.this, options, statement)
        where = tree.args.get("where")
        cond = _sql(where.this) if where is not None else None
        if isinstance(tree, exp.Delete):
            return table.delete(cond)
        sets = {_assigned(e): _sql(e.expression) for e in tree.expressions}
        return table.update(cond, sets)
    raise UnsupportedError(
        f"sql: {type(tree).__name__} statements are not run here; MERGE INTO, UPDATE and "
        "DELETE FROM are (queries and INSERTs go to spark.sql)"
    )


def _sql(node: Any) -> str:
    return str(node.sql(dialect="spark"))


def _target(
    spark: SparkSession, node: Any, options: Mapping[str, str] | None, statement: str
) -> HudiTable:
    """The statement's target table (with its alias, ``t`` when it has none)."""
    from sqlglot import exp

    if not isinstance(node, exp.Table) or node.args.get("db") is None or node.db != SOURCE_NAME:
        shown = _sql(node) if node is not None else None
        raise ConfigError(
            f"sql: the target {shown!r} of {statement!r} must be a table path as "
            f"{SOURCE_NAME}.`/path/to/table` (a view keeps no path to write to)"
        )
    table = HudiTable.forPath(spark, node.name, options)
    return table.alias(node.alias) if node.alias else table


def _assigned(node: Any) -> str:
    """The column of ``col = <expr>`` (``t.col`` keeps its alias: the builder checks it)."""
    from sqlglot import exp

    if not isinstance(node, exp.EQ) or not isinstance(node.this, exp.Column):
        raise ConfigError(f"sql: '{_sql(node)}' is not an assignment 'column = expression'")
    return _sql(node.this)


def _merge(spark: SparkSession, tree: Any, options: Mapping[str, str] | None) -> MergeBuilder:
    from sqlglot import exp

    table = _target(spark, tree.this, options, _sql(tree))
    using = tree.args.get("using")
    alias = using.alias or "s"
    if isinstance(using, exp.Subquery):
        source = spark.sql(_sql(using.this))
    elif isinstance(using, exp.Table):
        bare = using.copy()
        bare.set("alias", None)
        source = spark.table(_sql(bare))
    else:
        raise ConfigError(f"sql: MERGE ... USING {_sql(using)!r}: expected a table or (query)")
    builder = table.merge(source, _sql(tree.args["on"]), source_alias=alias)
    whens = tree.args.get("whens")
    for when in whens.expressions if whens is not None else []:
        _add_when(builder, when)
    return builder


def _add_when(builder: MergeBuilder, when: Any) -> None:
    from sqlglot import exp

    cond = when.args.get("condition")
    cond_sql = _sql(cond) if cond is not None else None
    then = when.args.get("then")
    matched, by_source = when.args.get("matched"), when.args.get("source")
    if isinstance(then, exp.Var) and then.name.upper() == "DELETE":
        if by_source:
            builder.whenNotMatchedBySourceDelete(cond_sql)
        elif matched:
            builder.whenMatchedDelete(cond_sql)
        else:
            raise ConfigError("sql: WHEN NOT MATCHED cannot DELETE")
    elif isinstance(then, exp.Update) and matched and not by_source:
        if len(then.expressions) == 1 and isinstance(then.expressions[0], exp.Star):
            builder.whenMatchedUpdateAll(cond_sql)
        else:
            sets = {_assigned(e): _sql(e.expression) for e in then.expressions}
            builder.whenMatchedUpdate(cond_sql, sets)
    elif isinstance(then, exp.Insert) and not matched and not by_source:
        if isinstance(then.this, exp.Star):
            builder.whenNotMatchedInsertAll(cond_sql)
            return
        cols, values = then.this.expressions, then.expression.expressions
        if len(cols) != len(values):
            raise ConfigError(
                f"sql: INSERT names {len(cols)} column(s) but gives {len(values)} value(s)"
            )
        builder.whenNotMatchedInsert(
            cond_sql, {_sql(c): _sql(v) for c, v in zip(cols, values, strict=True)}
        )
    else:
        raise UnsupportedError(
            f"sql: the clause '{_sql(when)}' is not supported (Hudi's MERGE INTO takes WHEN "
            "MATCHED UPDATE/DELETE, WHEN NOT MATCHED INSERT, WHEN NOT MATCHED BY SOURCE DELETE)"
        )


__all__ = ["sql"]
