"""Predicates and value expressions of DML statements, compiled once into Arrow expressions.

A statement's conditions (``"s.ts > t.ts AND t.city = 'sf'"``) and assigned values
(``"s.fare * 2"``) are given as SQL-style strings or as ``pyarrow.compute.Expression``s.
Strings are parsed by `sqlglot <https://github.com/tobymao/sqlglot>`_ (Spark's dialect, the
SQL Hudi users write their ``MERGE INTO`` in) and translated here into ``pyarrow.compute``
expressions, which Arrow's Acero engine evaluates over whole tables: the data path stays in
Arrow, with no per-row Python and no second query engine holding a copy of the rows.

Why sqlglot: it is pure Python (no native wheel to match, ~1 MB), parses only (we need the
tree, not an engine), is actively maintained with releases every few weeks, and knows Spark
SQL's grammar (``<>``, ``||``, ``NOT IN``, ``BETWEEN``, ``CAST``, ``CASE``), so what a user
pastes from a Hudi ``MERGE INTO`` parses as Spark parses it. DuckDB and DataFusion parse as
well, but they are engines of 30-60 MB whose expression trees come out as JSON or plans of
their own dialect; evaluating with them would mean handing them the rows.

The translated subset: ``AND``/``OR``/``NOT``, comparisons (``= <> != < <= > >=``),
``IS [NOT] NULL``, ``[NOT] IN (literals)``, ``BETWEEN``, ``LIKE``, ``+ - * /`` (``/`` is
a floating-point division, as in Spark), unary minus, ``||``, ``CAST``, ``CASE WHEN``,
``lower``, ``upper``, ``coalesce``, ``abs``, ``length``, ``concat``, and literals (numbers,
strings, ``TRUE``/``FALSE``, ``NULL``). Anything else is refused naming the construct.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias

import pyarrow as pa
import pyarrow.compute as pc

from hudi_ds.errors import ConfigError, UnsupportedError

Expr: TypeAlias = "str | pc.Expression"

#: what a statement's expressions may be written as (the messages name it)
EXPRESSION_FORMS = "a SQL string or a pyarrow.compute.Expression"


@dataclass(frozen=True)
class Scope:
    """The columns an expression may name, and the column of the evaluated table each maps to.

    ``tables`` maps an alias (``"s"``, ``"t"``) to its column names; a column ``c`` of alias
    ``a`` is the evaluated table's column :meth:`column_name` ``(a, c)``. A bare name resolves
    when exactly one alias has it (Spark's rule: a name two sides hold is ambiguous).
    ``bare``: the alias whose columns keep their plain names (a one-table statement).
    """

    tables: Mapping[str, Sequence[str]]
    bare: str | None = None
    _index: dict[str, list[str]] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        for alias, cols in self.tables.items():
            for c in cols:
                self._index.setdefault(c.lower(), []).append(alias)

    def column_name(self, alias: str, column: str) -> str:
        """The evaluated table's name of ``alias``'s ``column``."""
        return column if alias == self.bare else f"{alias}.{column}"

    def resolve(self, qualifier: str, name: str, text: str) -> str:
        """The evaluated table's column for ``qualifier.name`` (qualifier "" when bare).

        Raises:
            ConfigError: unknown alias, unknown column (the known ones listed), ambiguous name.
        """
        if qualifier:
            cols = self.tables.get(qualifier)
            if cols is None:
                raise ConfigError(
                    f"{text!r}: unknown table alias '{qualifier}' in '{qualifier}.{name}'; "
                    f"the aliases are {sorted(self.tables)}"
                )
            match = [c for c in cols if c.lower() == name.lower()]
            if not match:
                raise ConfigError(
                    f"{text!r}: unknown column '{qualifier}.{name}'; {qualifier} has {list(cols)}"
                )
            return self.column_name(qualifier, match[0])
        aliases = self._index.get(name.lower(), [])
        if not aliases:
            known = {a: list(c) for a, c in self.tables.items()}
            raise ConfigError(f"{text!r}: unknown column '{name}'; the columns are {known}")
        if len(aliases) > 1:
            raise ConfigError(
                f"{text!r}: column '{name}' is ambiguous (in {sorted(aliases)}): qualify it, "
                f"e.g. '{aliases[0]}.{name}'"
            )
        alias = aliases[0]
        real = next(c for c in self.tables[alias] if c.lower() == name.lower())
        return self.column_name(alias, real)


def compile_expr(value: Expr, scope: Scope, what: str) -> pc.Expression:
    """``value`` (a SQL string or an Arrow expression) as an Arrow expression over ``scope``.

    A ``pyarrow.compute.Expression`` is taken as it is (its field names must be the evaluated
    table's: ``"s.fare"``, ``"t.ts"``; plain names in one-table statements).

    Raises:
        ConfigError: not a string or expression, a SQL syntax error, an unknown or ambiguous
            column (``what`` says where the expression came from).
        UnsupportedError: a SQL construct outside the translated subset (named).
    """
    if isinstance(value, pc.Expression):
        return value
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{what}: expected {EXPRESSION_FORMS}, not {value!r}")
    import sqlglot
    from sqlglot.errors import ParseError

    try:
        tree = sqlglot.parse_one(value, read="spark")
    except ParseError as e:
        first = str(e).splitlines()[0]
        raise ConfigError(f"{what}: cannot parse {value!r} as SQL ({first})") from None
    return _Translator(scope, value, what).expr(tree)


def _literal_value(node: Any) -> Any:
    from sqlglot import exp

    if isinstance(node, exp.Literal):
        if node.is_string:
            return node.this
        text = node.this
        try:
            return int(text)
        except ValueError:
            return float(text)
    if isinstance(node, exp.Boolean):
        return bool(node.this)
    if isinstance(node, exp.Null):
        return None
    if isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal):
        return -_literal_value(node.this)
    raise TypeError(type(node).__name__)


#: SQL type names (sqlglot's ``DataType.Type``) -> Arrow types, for CAST
_CAST_TYPES: dict[str, pa.DataType] = {
    "BOOLEAN": pa.bool_(),
    "TINYINT": pa.int8(),
    "SMALLINT": pa.int16(),
    "INT": pa.int32(),
    "BIGINT": pa.int64(),
    "FLOAT": pa.float32(),
    "DOUBLE": pa.float64(),
    "VARCHAR": pa.string(),
    "TEXT": pa.string(),
    "CHAR": pa.string(),
    "DATE": pa.date32(),
    "TIMESTAMP": pa.timestamp("us", tz="UTC"),
}


class _Translator:
    """One SQL tree -> one Arrow expression (see the module docstring for the subset)."""

    def __init__(self, scope: Scope, text: str, what: str) -> None:
        self.scope = scope
        self.text = text
        self.what = what

    def unsupported(self, node: Any) -> UnsupportedError:
        return UnsupportedError(
            f"{self.what}: {type(node).__name__} ({node.sql(dialect='spark')!r}) in "
            f"{self.text!r} is not supported; supported are AND/OR/NOT, comparisons, IS [NOT] "
            "NULL, [NOT] IN (literals), BETWEEN, LIKE, + - * /, ||, CAST, CASE WHEN, lower, "
            "upper, coalesce, abs, length, concat and literals -- or pass a "
            "pyarrow.compute.Expression"
        )

    def expr(self, node: Any) -> pc.Expression:
        from sqlglot import exp

        binary: dict[type, Callable[[Any, Any], Any]] = {
            exp.EQ: pc.equal,
            exp.NEQ: pc.not_equal,
            exp.GT: pc.greater,
            exp.GTE: pc.greater_equal,
            exp.LT: pc.less,
            exp.LTE: pc.less_equal,
            exp.And: pc.and_kleene,
            exp.Or: pc.or_kleene,
            exp.Add: pc.add_checked,
            exp.Sub: pc.subtract_checked,
            exp.Mul: pc.multiply_checked,
        }
        unary: dict[type, Callable[[Any], Any]] = {
            exp.Lower: pc.utf8_lower,
            exp.Upper: pc.utf8_upper,
            exp.Abs: pc.abs_checked,
            exp.Length: pc.utf8_length,
            exp.Neg: pc.negate_checked,
            exp.Not: pc.invert,
        }
        kind = type(node)
        if kind in binary:
            return binary[kind](self.expr(node.this), self.expr(node.expression))
        if kind in unary:
            return unary[kind](self.expr(node.this))
        if isinstance(node, exp.Paren):
            return self.expr(node.this)
        if isinstance(node, exp.Column):
            if not isinstance(node.this, exp.Identifier):  # t.* and the like
                raise self.unsupported(node)
            return pc.field(self.scope.resolve(node.table, node.name, self.text))
        if isinstance(node, (exp.Literal, exp.Boolean, exp.Null)):
            return pc.scalar(_literal_value(node))
        if isinstance(node, exp.Div):  # Spark's '/' divides as doubles
            return pc.divide(
                self.expr(node.this).cast(pa.float64()),
                self.expr(node.expression).cast(pa.float64()),
            )
        if isinstance(node, exp.Is) and isinstance(node.expression, exp.Null):
            return pc.is_null(self.expr(node.this))
        if isinstance(node, exp.In) and not node.args.get("query"):
            return self._in(node)
        if isinstance(node, exp.Between):
            x = self.expr(node.this)
            return pc.and_kleene(
                pc.greater_equal(x, self.expr(node.args["low"])),
                pc.less_equal(x, self.expr(node.args["high"])),
            )
        if isinstance(node, exp.Like) and isinstance(node.expression, exp.Literal):
            return pc.match_like(self.expr(node.this), node.expression.this)
        if isinstance(node, (exp.DPipe, exp.Concat)):
            parts = (
                [node.this, node.expression] if isinstance(node, exp.DPipe) else node.expressions
            )
            return pc.binary_join_element_wise(*[self.expr(p) for p in parts], pc.scalar(""))
        if isinstance(node, exp.Coalesce):
            return pc.coalesce(self.expr(node.this), *[self.expr(e) for e in node.expressions])
        if isinstance(node, (exp.Cast, exp.TryCast)):
            return self._cast(node)
        if isinstance(node, exp.Case) and node.this is None:
            return self._case(node)
        raise self.unsupported(node)

    def _in(self, node: Any) -> pc.Expression:
        try:
            values = [_literal_value(v) for v in node.expressions]
        except TypeError:
            raise self.unsupported(node) from None
        x = self.expr(node.this)
        found = pc.is_in(x, value_set=pa.array(values))
        # SQL: NULL IN (...) is unknown, not false (NOT IN must not take the row either)
        return pc.if_else(pc.is_null(x), pc.scalar(pa.scalar(None, pa.bool_())), found)

    def _cast(self, node: Any) -> pc.Expression:
        dtype = node.to
        name = dtype.this.name
        if name == "DECIMAL":
            args = [int(_literal_value(p.this)) for p in dtype.expressions]
            target: pa.DataType = pa.decimal128(*(args or [10, 0]))
        elif name in _CAST_TYPES:
            target = _CAST_TYPES[name]
        else:
            raise self.unsupported(node)
        # Spark's (non-ANSI) CAST truncates fractions and wraps, it does not fail
        return self.expr(node.this).cast(target, safe=False)

    def _case(self, node: Any) -> pc.Expression:
        ifs = node.args.get("ifs") or []
        conds = [self.expr(i.this) for i in ifs]
        values = [self.expr(i.args["true"]) for i in ifs]
        default = node.args.get("default")
        otherwise = self.expr(default) if default is not None else pc.scalar(None)
        names = [str(i) for i in range(len(conds))]
        return pc.case_when(pc.make_struct(*conds, field_names=names), *values, otherwise)


def evaluate(
    table: pa.Table,
    exprs: Mapping[str, pc.Expression],
    what: str,
    described: Mapping[str, str] | None = None,
) -> pa.Table:
    """Evaluate ``exprs`` (name -> expression) over ``table`` in one Acero projection, rows
    in order.

    Raises:
        ConfigError: an expression does not fit the columns (unknown field, types that do
            not compare or compute, an overflow): the message names the expression (its
            ``described`` text, else ``what``) and the error.
    """
    if not exprs:
        return pa.table({})
    try:
        return _project(table, exprs)
    except ConfigError as e:
        for name, ex in exprs.items():  # which one: types are bound on the empty table
            try:
                _project(table.slice(0, 0), {name: ex})
            except ConfigError as one:
                label = (described or {}).get(name, what)
                raise ConfigError(f"{label} ({ex}): {one}") from None
        raise ConfigError(f"{what}: {e}") from None


def _project(table: pa.Table, exprs: Mapping[str, pc.Expression]) -> pa.Table:
    # imported here: pyarrow.acero imports pyarrow.dataset and with it pandas (~0.3 s), which
    # every process importing hudi_ds paid -- each of Spark's Python workers of a write too
    import pyarrow.acero as acero

    plan = acero.Declaration.from_sequence(
        [
            acero.Declaration("table_source", acero.TableSourceNodeOptions(table)),
            acero.Declaration(
                "project", acero.ProjectNodeOptions(list(exprs.values()), list(exprs))
            ),
        ]
    )
    try:
        return plan.to_table(use_threads=False)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError, TypeError) as e:
        first = str(e).splitlines()[0]
        raise ConfigError(f"{first}; the columns are {table.column_names}") from None


def as_mask(column: pa.ChunkedArray | pa.Array, what: str) -> pa.Array:
    """A predicate's result as a boolean mask (NULL is not true, as in SQL's WHERE).

    Raises:
        ConfigError: the predicate is not boolean.
    """
    if not pa.types.is_boolean(column.type) and not pa.types.is_null(column.type):
        raise ConfigError(f"{what} is of type {column.type}, not boolean")
    arr = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    return pc.fill_null(arr.cast(pa.bool_()), False)


_PUSHABLE = {"EQ": "=", "NEQ": "!=", "GT": ">", "GTE": ">=", "LT": "<", "LTE": "<="}
_FLIPPED = {"=": "=", "!=": "!=", ">": "<", ">=": "<=", "<": ">", "<=": ">="}


def pushdown_filters(text: str, columns: Sequence[str]) -> list[tuple[str, str, Any]]:
    """The ``(column, op, value)`` read filters implied by the top-level ``AND``s of the SQL
    predicate ``text`` over a one-table statement's ``columns``: a comparison, ``IN`` or
    ``IS [NOT] NULL`` of a column with literals. The read prunes partitions, buckets and (with
    the metadata table's statistics) file slices with them; the whole predicate is still
    evaluated on the rows read. Conjuncts of other shapes push nothing."""
    import sqlglot
    from sqlglot import exp

    names = {c.lower(): c for c in columns}
    out: list[tuple[str, str, Any]] = []
    stack = [sqlglot.parse_one(text, read="spark")]
    while stack:
        node = stack.pop()
        if isinstance(node, exp.Paren):
            stack.append(node.this)
            continue
        if isinstance(node, exp.And):
            stack.extend([node.this, node.expression])
            continue
        found = _pushable(node, names)
        if found is not None:
            out.append(found)
    return out


def _pushable(node: Any, names: Mapping[str, str]) -> tuple[str, str, Any] | None:
    from sqlglot import exp

    def column(n: Any) -> str | None:
        ok = isinstance(n, exp.Column) and isinstance(n.this, exp.Identifier)
        return names.get(n.name.lower()) if ok else None

    try:
        op = _PUSHABLE.get(type(node).__name__)
        if op is not None:
            left, right = column(node.this), column(node.expression)
            if left is not None and right is None:
                value = _literal_value(node.expression)
                return None if value is None else (left, op, value)
            if right is not None and left is None:
                value = _literal_value(node.this)
                return None if value is None else (right, _FLIPPED[op], value)
            return None
        if isinstance(node, exp.In) and column(node.this) and not node.args.get("query"):
            values = [_literal_value(v) for v in node.expressions]
            return None if None in values else (column(node.this), "in", values)  # type: ignore[return-value]
        if isinstance(node, exp.Is) and isinstance(node.expression, exp.Null) and column(node.this):
            return (column(node.this), "is null", None)  # type: ignore[return-value]
    except TypeError:  # a non-literal side
        return None
    return None
