"""Subcommands that look at a table: ``timeline``, ``files``, ``stats``, ``show-config``."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

from hudi_ds.cli.command import (
    EXIT_OK,
    AddCommand,
    Command,
    _short,
    human_size,
    instant_str,
    render_table,
    utc_str,
)
from hudi_ds.config import ServiceConfig, properties_of
from hudi_ds.errors import HudiError
from hudi_ds.schema.meta import RECORD_KEY_METADATA_FIELD
from hudi_ds.table.fs_view import FileSystemView
from hudi_ds.table.table import ReadableTable
from hudi_ds.table_config import TableConfig
from hudi_ds.timeline.instant import Instant, State
from hudi_ds.timeline.timeline import Timeline

log = logging.getLogger("hudi_ds.cli")


def _commit_counts(tl: Timeline, ts: str) -> dict[str, int]:
    md = tl.read_commit_metadata(ts)
    stats = list(md.write_stats())
    return {
        "files": len(stats),
        "partitions": len(md.partition_to_write_stats),
        "records": sum(s.num_writes for s in stats),
        "inserts": sum(s.num_inserts for s in stats),
        "updates": sum(s.num_update_writes for s in stats),
        "deletes": sum(s.num_deletes for s in stats),
        "bytes": sum(s.total_write_bytes for s in stats),
    }


def _instant_row(
    inst: Instant, action: str, completed_as: str | None, when: Callable[[str | None], str]
) -> dict[str, Any]:
    return {
        "instant": inst.requested_time,
        "action": action,
        "completed_as": completed_as,
        "state": inst.state.value,
        "requested_at": when(inst.requested_time),
        "completed_at": None,
        "archived": False,
    }


def _active_rows(table: ReadableTable, when: Callable[[str | None], str]) -> list[dict[str, Any]]:
    """One row per instant of the active timeline, savepoints included."""
    tl = table.timeline
    rows: list[dict[str, Any]] = []
    for inst in tl:
        origin = tl.origin_action(inst.requested_time) or inst.action
        row = _instant_row(
            inst,
            origin if origin != inst.action else inst.action,
            inst.action if origin != inst.action else None,
            when,
        )
        if inst.is_completed:
            mtime = tl.mtime_ms(inst.requested_time)
            if table.config.timeline_layout_version >= 2 and inst.completion_time:
                row["completed_at"] = when(inst.completion_time)
            elif mtime:
                row["completed_at"] = utc_str(datetime.fromtimestamp(mtime / 1000, timezone.utc))
            if inst.action in ("commit", "deltacommit", "replacecommit"):
                row.update(_commit_counts(tl, inst.requested_time))
            elif inst.action == "clean":
                md = tl.read_clean_metadata(inst.requested_time)
                row["files"] = md.total_files_deleted
            elif inst.action == "rollback":
                rmd = tl.read_rollback_metadata(inst.requested_time)
                row["files"] = rmd.total_files_deleted
                row["rolled_back"] = rmd.rolled_back_instants
        elif origin == "compaction":
            row["files"] = len(tl.read_compaction_plan(inst.requested_time).operations or [])
        rows.append(row)
    for sp in tl.savepoints():
        rows.append(_instant_row(sp, "savepoint", None, when))
    return rows


def _archived_rows(table: ReadableTable, when: Callable[[str | None], str]) -> list[dict[str, Any]]:
    """One row per archived instant."""
    archived = table.archived_timeline()
    rows: list[dict[str, Any]] = []
    for inst in archived:
        row = _instant_row(inst, inst.action, None, when)
        row["state"] = State.COMPLETED.value
        row["archived"] = True
        if inst.action in ("commit", "deltacommit", "replacecommit"):
            with contextlib.suppress(HudiError):
                row.update(_commit_counts(archived, inst.requested_time))
        rows.append(row)
    return rows


def _timeline_text(table: ReadableTable, rows: list[dict[str, Any]]) -> str:
    headers = ["instant", "action", "state", "requested at", "completed at", "files",
               "records", "deletes", "size"]  # fmt: skip
    body = []
    for r in rows:
        action = r["action"] + (f" ({r['completed_as']})" if r["completed_as"] else "")
        if r["archived"]:
            action += " [archived]"
        body.append(
            [
                r["instant"],
                action,
                r["state"],
                r["requested_at"],
                r["completed_at"] or "",
                r.get("files", ""),
                r.get("records", ""),
                r.get("deletes", ""),
                human_size(r["bytes"]) if "bytes" in r else "",
            ]
        )
    title = f"{table.name} ({table.config.table_type}, v{table.config.table_version}): "
    title += f"{len(rows)} instant(s)"
    return title + "\n" + render_table(body, headers)


def cmd_timeline(cmd: Command) -> int:
    table = cmd.table()
    tz = table.config.timeline_timezone or "LOCAL"

    def when(t: str | None) -> str:
        return instant_str(t, tz)

    rows = _active_rows(table, when)
    if cmd.args.archived:
        rows += _archived_rows(table, when)
    rows.sort(key=lambda r: (r["instant"], r["action"] == "savepoint"))
    if cmd.args.limit:
        rows = rows[-cmd.args.limit :]
    cmd.emit({"table": table.name, "instants": rows}, lambda: _timeline_text(table, rows))
    return EXIT_OK


def cmd_files(cmd: Command) -> int:
    table = cmd.table()
    view = FileSystemView(table.storage, table.config)
    vis = table.visibility()
    parts = [cmd.args.partition] if cmd.args.partition is not None else view.partitions()
    groups: list[dict[str, Any]] = []
    for p in parts:
        latest = {s.file_id: s for s in view.latest_file_slices(p, vis)}
        for g in view.file_groups(p):
            s = latest.get(g.file_id)
            if table.config.timeline_layout_version >= 2:  # logs carry their own instant
                slices = sorted({b.instant_time for b in g.base_files}) or ["log-only"]
            else:
                slices = sorted(
                    {b.instant_time for b in g.base_files} | {lf.instant_time for lf in g.log_files}
                )
            entry = {
                "partition": p,
                "file_id": g.file_id,
                "live": s is not None,
                "slices": len(slices),
                "base_instant": s.base_instant_time if s else None,
                "base_file": s.base_file.name.name if s and s.base_file else None,
                "base_size": s.base_file.size if s and s.base_file else 0,
                "log_files": len(s.log_files) if s else 0,
                "log_size": sum(lf.size for lf in s.log_files) if s else 0,
                "all_files": len(g.base_files) + len(g.log_files),
                "all_size": sum(b.size for b in g.base_files) + sum(lf.size for lf in g.log_files),
            }
            groups.append(entry)

    def human() -> str:
        headers = ["partition", "file id", "slices", "base instant", "base size", "logs",
                   "log size", "files on disk", "size on disk"]  # fmt: skip
        body = [
            [
                g["partition"] or "(none)",
                g["file_id"] + ("" if g["live"] else " (replaced)"),
                g["slices"],
                g["base_instant"] or "",
                human_size(g["base_size"]) if g["base_file"] else "-",
                g["log_files"],
                human_size(g["log_size"]),
                g["all_files"],
                human_size(g["all_size"]),
            ]
            for g in groups
        ]
        return f"{len(groups)} file group(s) in {len(parts)} partition(s)\n" + render_table(
            body, headers
        )

    cmd.emit({"table": table.name, "file_groups": groups}, human)
    return EXIT_OK


HISTOGRAM = [
    ("< 1 MB", 1 << 20),
    ("1-8 MB", 8 << 20),
    ("8-32 MB", 32 << 20),
    ("32-128 MB", 128 << 20),
    ("128-512 MB", 512 << 20),
    (">= 512 MB", None),
]


def cmd_stats(cmd: Command) -> int:
    table = cmd.table()
    view = FileSystemView(table.storage, table.config)
    parts = view.partitions()
    base_sizes: list[int] = []
    log_sizes: list[int] = []
    n_groups = 0
    for k, p in enumerate(parts, start=1):
        for g in view.file_groups(p):
            n_groups += 1
            base_sizes.extend(b.size for b in g.base_files)
            log_sizes.extend(lf.size for lf in g.log_files)
        cmd.progress(k, len(parts), "listing")
    slices = table.file_slices()
    rows = 0
    if len(table.schema):
        key = RECORD_KEY_METADATA_FIELD if RECORD_KEY_METADATA_FIELD in table.schema.names else None
        cols = [key] if key else [table.schema.names[0]]
        rows = table.read(columns=cols).num_rows
    hist = []
    lo = 0
    for label, hi in HISTOGRAM:

        def within(s: int, lo: int = lo, hi: int | None = hi) -> bool:
            return s >= lo and (hi is None or s < hi)

        hist.append(
            {
                "bucket": label,
                "base_files": sum(1 for s in base_sizes if within(s)),
                "log_files": sum(1 for s in log_sizes if within(s)),
            }
        )
        lo = hi or lo
    tl = table.timeline
    payload: dict[str, Any] = {
        "table": table.name,
        "type": table.config.table_type,
        "version": table.config.table_version,
        "partitions": len(parts),
        "file_groups": n_groups,
        "live_file_groups": len(slices),
        "rows": rows,
        "base_files": len(base_sizes),
        "log_files": len(log_sizes),
        "bytes": sum(base_sizes) + sum(log_sizes),
        "live_bytes": sum(s.total_size for s in slices),
        "instants": len(tl),
        "completed_commits": len(tl.commits()),
        "pending_compactions": len(tl.pending_compactions()),
        "savepoints": len(tl.savepoints()),
        "histogram": hist,
    }

    def human() -> str:
        lines = [
            f"table        {payload['table']} ({payload['type']}, version {payload['version']})",
            f"rows         {rows:,}",
            f"partitions   {payload['partitions']}",
            f"file groups  {n_groups} ({len(slices)} live)",
            f"files        {len(base_sizes)} base, {len(log_sizes)} log",
            f"size         {human_size(payload['bytes'])} on disk, "
            f"{human_size(payload['live_bytes'])} in the latest slices",
            f"timeline     {len(tl)} instants, {payload['completed_commits']} commits, "
            f"{payload['pending_compactions']} pending compaction(s), "
            f"{payload['savepoints']} savepoint(s)",
            "",
            "file sizes",
            render_table(
                [[h["bucket"], h["base_files"], h["log_files"]] for h in hist],
                ["size", "base files", "log files"],
            ),
        ]
        return "\n".join(lines)

    cmd.emit(payload, human)
    return EXIT_OK


def cmd_show_config(cmd: Command) -> int:
    storage = cmd.storage()
    cfg = TableConfig.load(storage)
    opts = cmd.options
    services = {}
    for prop in properties_of(ServiceConfig):
        services[prop.key] = {
            "value": opts.get(prop),
            "default": prop.default,
            "set": opts.is_set(prop),
            "doc": prop.doc,
        }
    payload = {
        "path": storage.uri(),
        "table": dict(sorted(cfg.props.items())),
        "services": services,
    }

    def human() -> str:
        table_rows = [[k, _short(v)] for k, v in sorted(cfg.props.items())]
        svc_rows = [
            [k, str(v["value"]) + ("" if v["set"] else " (default)")] for k, v in services.items()
        ]
        return (
            f"hoodie.properties of {storage.uri()}\n"
            + render_table(table_rows, ["key", "value"])
            + "\n\ntable services\n"
            + render_table(svc_rows, ["key", "value"])
        )

    cmd.emit(payload, human)
    return EXIT_OK


def add_table_commands(add: AddCommand) -> None:
    """The ``timeline``, ``files`` and ``stats`` subcommands."""
    sp = add("timeline", cmd_timeline, "instants with action, state, times and counts")
    sp.add_argument("path")
    sp.add_argument("--archived", action="store_true", help="include archived instants")
    sp.add_argument("--limit", type=int, default=0, help="only the last N instants")

    sp = add("files", cmd_files, "file groups and slices per partition, sizes, log counts")
    sp.add_argument("path")
    sp.add_argument("--partition", default=None, help="only this partition path")

    sp = add("stats", cmd_stats, "table size, rows and file-size histogram")
    sp.add_argument("path")


def add_config_command(add: AddCommand) -> None:
    """The ``show-config`` subcommand."""
    sp = add("show-config", cmd_show_config, "hoodie.properties and table service settings")
    sp.add_argument("path")
