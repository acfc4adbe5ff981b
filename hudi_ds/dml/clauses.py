"""The clause model of a ``MERGE INTO`` and its checks, shared by every engine that runs one.

The embedded :class:`~hudi_ds.dml.merge.TableMerger` evaluates the clauses as Arrow
expressions; the Spark builder (``hudi_ds.spark.HudiTable.merge``) as Spark expressions over a
join Spark runs. Both take the statement apart here: the ON condition into key equalities,
each clause's assignments into target columns, with the same refusals and messages (Hudi's
``MergeIntoHoodieTableCommand`` rules, see :mod:`hudi_ds.dml.merge`).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from hudi_ds.dml.expr import EXPRESSION_FORMS, Scope
from hudi_ds.errors import ConfigError


class Action(enum.Enum):
    """What a clause does to the rows it takes."""

    UPDATE = "update"
    DELETE = "delete"
    INSERT = "insert"


class Match(enum.Enum):
    """Which rows a clause is tried on."""

    MATCHED = "WHEN MATCHED"
    NOT_MATCHED = "WHEN NOT MATCHED"
    NOT_MATCHED_BY_SOURCE = "WHEN NOT MATCHED BY SOURCE"


#: the actions each kind of clause may take (Spark's MERGE grammar)
ALLOWED: dict[Match, tuple[Action, ...]] = {
    Match.MATCHED: (Action.UPDATE, Action.DELETE),
    Match.NOT_MATCHED: (Action.INSERT,),
    Match.NOT_MATCHED_BY_SOURCE: (Action.DELETE,),
}


@dataclass(frozen=True)
class Clause:
    """One ``WHEN ... THEN ...``: ``values`` None means all columns (``UPDATE *``/``INSERT *``).

    ``predicate`` and the values are the engine's expressions (SQL strings, Arrow or Spark
    expressions); only the engine evaluates them.
    """

    match: Match
    action: Action
    predicate: Any
    values: Mapping[str, Any] | None

    def describe(self) -> str:
        return f"{self.match.value} {self.action.name} clause"


def new_clause(
    match: Match, action: Action, predicate: Any, values: Mapping[str, Any] | None
) -> Clause:
    """A clause, its values checked to be a non-empty mapping when given.

    Raises:
        ConfigError: an empty or non-mapping ``values``, or an action the match cannot take.
    """
    if action not in ALLOWED[match]:
        raise ConfigError(f"{match.value} cannot {action.name}")
    if values is not None and (not isinstance(values, Mapping) or not values):
        raise ConfigError(
            f"{match.value} {action.name}: expected a non-empty dict of column -> "
            f"{EXPRESSION_FORMS}, not {values!r}"
        )
    return Clause(match, action, predicate, values)


@dataclass(frozen=True)
class SourceColumn:
    """An assigned value that is the source's column ``name`` as it is (``UPDATE *``,
    ``INSERT *`` and the ON columns an insert does not assign)."""

    name: str


def check_update_set(
    set: Mapping[str, Any] | None, columns: Sequence[str], fixed: Sequence[str]
) -> None:
    """Check the assignments of an ``UPDATE ... SET``: a non-empty mapping of the table's
    columns, none a record key or partition column.

    Raises:
        ConfigError: names the bad column.
    """
    if not isinstance(set, Mapping) or not set:
        raise ConfigError(f"update: set must be a non-empty dict of column -> value, not {set!r}")
    for col in set:
        if col not in columns:
            raise ConfigError(f"update: the table has no column '{col}' ({list(columns)})")
        if col in fixed:
            raise ConfigError(
                f"update: '{col}' is a record key or partition column; a record's key and "
                "partition cannot change in place (Hudi's UpdateHoodieTableCommand refuses it too)"
            )


def check_sql_columns(text: str, scope: Scope, what: str) -> None:
    """Resolve every column a SQL expression names against ``scope`` (the check an engine
    that evaluates the SQL itself runs first, for the embedded API's messages).

    Raises:
        ConfigError: the text does not parse, or names an unknown or ambiguous column.
    """
    import sqlglot
    from sqlglot import exp
    from sqlglot.errors import ParseError

    try:
        tree = sqlglot.parse_one(text, read="spark")
    except ParseError as e:
        first = str(e).splitlines()[0]
        raise ConfigError(f"{what}: cannot parse {text!r} as SQL ({first})") from None
    lambda_vars = {v.name.lower() for node in tree.find_all(exp.Lambda) for v in node.expressions}
    for col in tree.find_all(exp.Column):
        if not isinstance(col.this, exp.Identifier):
            continue  # t.* and the like: the engine says what it makes of them
        if not col.table and col.name.lower() in lambda_vars:
            continue
        scope.resolve(col.table, col.name, text)


def no_clause_error() -> ConfigError:
    return ConfigError(
        "merge: no clause given: add when_matched_update(...), when_not_matched_insert"
        "_all(), ... before execute()"
    )


def cardinality_error(side: str, key: Mapping[str, Any], n: int, on: Any) -> ConfigError:
    """A source row matching several target rows (``side`` "source") or the reverse."""
    other = "target" if side == "source" else "source"
    if side == "source":
        hint = (
            ": the key is held in several partitions (a non-global index); add the partition "
            "field to ON"
        )
    else:
        hint = ": de-duplicate the source first"
    return ConfigError(
        f"merge: a {side} row (key {dict(key)}) matches {n} {other} rows; each row may "
        f"match at most one (ON {on!r}){hint}"
    )


@dataclass(frozen=True)
class MergeShape:
    """The two sides of a MERGE: their columns, the table's key fields and the aliases."""

    target_cols: Sequence[str]
    source_cols: Sequence[str]
    key_fields: Sequence[str]
    partition_fields: Sequence[str]
    source_alias: str = "s"
    target_alias: str = "t"

    def __post_init__(self) -> None:
        if self.source_alias == self.target_alias:
            raise ConfigError(
                f"source_alias and target_alias are both '{self.source_alias}': give them apart"
            )

    @property
    def key_columns(self) -> list[str]:
        """The record key and partition fields: what a record cannot change in place."""
        return [*self.key_fields, *self.partition_fields]

    def scope(self) -> Scope:
        return Scope({self.source_alias: self.source_cols, self.target_alias: self.target_cols})

    def scopes(self) -> dict[Match, Scope]:
        """What each kind of clause sees (Spark resolves NOT MATCHED clauses against the
        source alone, NOT MATCHED BY SOURCE ones against the target alone)."""
        return {
            Match.MATCHED: self.scope(),
            Match.NOT_MATCHED: Scope({self.source_alias: self.source_cols}),
            Match.NOT_MATCHED_BY_SOURCE: Scope({self.target_alias: self.target_cols}),
        }

    # -- ON ------------------------------------------------------------------------------------
    def on_pairs(self, on: str | Sequence[str]) -> list[tuple[str, str]]:
        """(target column, source column) of each equality of ON; every record key field
        covered, the others partition path fields.

        Raises:
            ConfigError: ON is not a conjunction of target = source column equalities over
                key and partition fields, or leaves a record key field out.
        """
        if isinstance(on, str):
            pairs = _equalities(on, self.source_alias, self.target_alias, self.scope())
        elif isinstance(on, Sequence) and on and all(isinstance(c, str) for c in on):
            pairs = [(c, c) for c in on]
        else:
            raise ConfigError(
                f'merge: on must be a SQL condition ("t.id = s.id") or a list of column '
                f"names both sides hold, not {on!r}"
            )
        for t, s in pairs:
            if t not in self.target_cols:
                raise ConfigError(
                    f"merge on: the target has no column '{t}' ({list(self.target_cols)})"
                )
            if s not in self.source_cols:
                raise ConfigError(
                    f"merge on: the source has no column '{s}' ({list(self.source_cols)})"
                )
            if t not in self.key_columns:
                raise ConfigError(
                    f"merge on {on!r}: '{t}' is neither a record key field "
                    f"{list(self.key_fields)} nor a partition path field "
                    f"{list(self.partition_fields)}; Hudi's MERGE INTO matches on those only "
                    "(MergeIntoHoodieTableCommand)"
                )
        missing = [k for k in self.key_fields if k not in {t for t, _ in pairs}]
        if missing:
            raise ConfigError(
                f"merge on {on!r}: the record key field(s) {missing} must be matched, e.g. "
                f"'{self.target_alias}.{missing[0]} = {self.source_alias}.{missing[0]}'"
            )
        return pairs

    # -- assignments ---------------------------------------------------------------------------
    def assignments(self, i: int, c: Clause, pairs: Sequence[tuple[str, str]]) -> dict[str, Any]:
        """The target columns clause #``i`` assigns: each a :class:`SourceColumn` or the
        clause's own (uncompiled) expression; the others keep their stored values (update) or
        are null (insert).

        Raises:
            ConfigError: an unknown target column, an update assigning a key or partition
                column, ``UPDATE *`` from a source that lacks target columns.
        """
        what = f"the {c.describe()} #{i + 1}"
        values: dict[str, Any]
        if c.values is None:  # UPDATE * / INSERT *: every target column from the source
            absent = [
                t
                for t in self.target_cols
                if t not in self.source_cols and t not in self.key_columns
            ]
            if absent and c.action is Action.UPDATE:
                raise ConfigError(
                    f"{what} (all columns): the source lacks the target columns {absent}"
                )
            # the key and partition columns keep the stored values: ON matched the key, and a
            # record does not move partition in place
            values = {
                t: SourceColumn(t)
                for t in self.target_cols
                if t in self.source_cols
                and (c.action is Action.INSERT or t not in self.key_columns)
            }
        else:
            values = {self.target_column(col, what): v for col, v in c.values.items()}
            if c.action is Action.UPDATE:
                fixed = [t for t in values if t in self.key_columns]
                if fixed:
                    raise ConfigError(
                        f"{what} assigns the record key / partition column(s) {fixed}: a "
                        "record's key and partition cannot change in place; delete it and "
                        "insert the new one"
                    )
        if c.action is Action.INSERT:  # ON's columns not assigned: from the source (as
            # Hudi's getProcessedInputDf adds them to the source rows)
            for t, src in pairs:
                values.setdefault(t, SourceColumn(src))
        return values

    def target_column(self, name: str, what: str) -> str:
        bare = name.split(".", 1)[1] if name.startswith(f"{self.target_alias}.") else name
        if bare not in self.target_cols:
            raise ConfigError(
                f"{what}: the target has no column '{name}' ({list(self.target_cols)})"
            )
        return bare


def _equalities(text: str, sa: str, ta: str, scope: Scope) -> list[tuple[str, str]]:
    """``t.a = s.b AND ...`` as [(a, b), ...]; anything else refused."""
    import sqlglot
    from sqlglot import exp
    from sqlglot.errors import ParseError

    try:
        tree = sqlglot.parse_one(text, read="spark")
    except ParseError as e:
        raise ConfigError(f"merge on: cannot parse {text!r} ({str(e).splitlines()[0]})") from None
    out: list[tuple[str, str]] = []
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, (exp.And, exp.Paren)):
            stack.extend(n for n in (node.this, node.args.get("expression")) if n is not None)
            continue
        sides = (node.this, node.args.get("expression")) if isinstance(node, exp.EQ) else ()
        cols = [
            n for n in sides if isinstance(n, exp.Column) and isinstance(n.this, exp.Identifier)
        ]
        if len(cols) != 2:
            raise ConfigError(
                f"merge on {text!r}: '{node.sql(dialect='spark')}' is not an equality of a "
                f"target and a source column; Hudi's MERGE INTO takes conditions of the form "
                f"'{ta}.id = {sa}.id' joined by AND (MergeIntoHoodieTableCommand)"
            )
        resolved = [scope.resolve(c.table, c.name, text) for c in cols]
        by_alias = {r.split(".", 1)[0]: r.split(".", 1)[1] for r in resolved}
        if set(by_alias) != {sa, ta}:
            raise ConfigError(
                f"merge on {text!r}: '{node.sql(dialect='spark')}' must compare a "
                f"'{ta}.' column with a '{sa}.' column"
            )
        out.append((by_alias[ta], by_alias[sa]))
    return out
