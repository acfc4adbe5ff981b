"""The ``bucket-rescale`` subcommand: partition-level bucket rules and their rescale (Java's
``partition_bucket_index_manager`` procedure: ``overwrite``, ``add``, ``bucket_number``,
``dry_run``, ``show_config``; a rescale is undone by ``hudi-py rollback``)."""

from __future__ import annotations

from typing import Any

from hudi_ds.cli.command import EXIT_OK, AddCommand, Command, render_table
from hudi_ds.errors import ConfigError
from hudi_ds.index.core import table_bucket_layout
from hudi_ds.index.partition_bucket import (
    committed_instants,
    config_instants,
    load_config,
)
from hudi_ds.services.partition_bucket_rescale import RescaleResult, rescale_buckets


def _show_config(cmd: Command) -> int:
    table = cmd.table()
    storage, tl = table.storage, table.timeline
    committed = set(committed_instants(storage, tl))
    rows: list[dict[str, Any]] = []
    for archived in (True, False):
        for t in config_instants(storage, archived):
            c = load_config(storage, t, archived)
            state = "archived" if archived else "committed" if t in committed else "pending"
            rows.append(
                {
                    "instant": t,
                    "state": state,
                    "expressions": c.expressions,
                    "default_bucket_number": c.default_bucket_number,
                    "rule": c.rule.value,
                }
            )

    def human() -> str:
        if not rows:
            return "no partition-level bucket rules (every partition has the table's count)"
        body = [
            [r["instant"], r["state"], r["rule"], r["default_bucket_number"], r["expressions"]]
            for r in rows
        ]
        return render_table(body, ["hashing config", "state", "rule", "default", "expressions"])

    cmd.emit({"configs": rows}, human)
    return EXIT_OK


def _payload(r: RescaleResult) -> dict[str, Any]:
    return {
        "instant": r.instant,
        "expressions": r.plan.rules.expressions,
        "default_bucket_number": r.plan.rules.default_bucket_number,
        "rule": r.plan.rules.rule.value,
        "partitions": {p: {"from": a, "to": b} for p, (a, b) in r.plan.changes.items()},
        "rewritten": list(r.plan.rewritten),
        "archived_configs": list(r.archived),
    }


def cmd_bucket_rescale(cmd: Command) -> int:
    a = cmd.args
    if a.show_config:
        return _show_config(cmd)
    if (a.overwrite is None) == (a.add is None):
        raise ConfigError("bucket-rescale: give exactly one of --overwrite EXPRS, --add EXPRS")
    expressions = a.overwrite
    if a.add is not None:
        layout = table_bucket_layout(cmd.table().state)
        current = layout.rules.expressions if layout and layout.rules else None
        if current is None:
            raise ConfigError(
                "bucket-rescale --add: the table has no partition-level bucket rules to add to "
                "(use --overwrite)"
            )
        expressions = f"{a.add};{current}"  # (Java handleAdd: the new rule first)
    r = rescale_buckets(
        cmd.storage(),
        expressions,
        default_bucket_number=a.bucket_number,
        rule=a.rule,
        dry_run=a.dry_run,
        options=cmd.options,
    )

    def human() -> str:
        lines = [
            f"{p}: {x} -> {y} buckets" + ("" if p in r.plan.rewritten else " (no data)")
            for p, (x, y) in r.plan.changes.items()
        ] or ["no partition changes its bucket count"]
        if r.instant is None:
            return "dry run, nothing written:\n" + "\n".join(lines)
        head = f"rescaled in replacecommit {r.instant} (rules {r.plan.rules.expressions!r}):"
        return head + "\n" + "\n".join(lines)

    cmd.emit(_payload(r), human)
    return EXIT_OK


def add_bucket_rescale_command(add: AddCommand) -> None:
    """The ``bucket-rescale`` subcommand."""
    sp = add(
        "bucket-rescale",
        cmd_bucket_rescale,
        "set a bucket table's partition-level bucket rules and rewrite the partitions whose "
        "bucket count they change (stop the table's writers first)",
    )
    sp.add_argument("path")
    sp.add_argument("--overwrite", metavar="EXPRS", help="the new rules: 'regex,n;regex,n'")
    sp.add_argument("--add", metavar="EXPRS", help="rules put before the current ones")
    sp.add_argument(
        "--bucket-number", type=int, default=None, help="the new default count (default: keep)"
    )
    sp.add_argument("--rule", default="regex", help="the rule type (regex)")
    sp.add_argument("--dry-run", action="store_true", help="only show what would change")
    sp.add_argument("--show-config", action="store_true", help="list the hashing configs")
