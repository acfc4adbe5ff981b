"""``hudi-py``: inspect and operate a Hudi table from the command line.

Usage::

    hudi-py <subcommand> <table path> [options]

    timeline   <path> [--archived] [--limit N]        instants: action, state, times, counts
    files      <path> [--partition P]                 file groups and slices, sizes, log counts
    stats      <path>                                 table size, rows, file-size histogram
    compact    schedule|run|unschedule <path> [--instant C]
    clean      <path> [--dry-run]                     delete old file slices (policy options)
    archive    <path> [--dry-run]                     move old instants to the archived timeline
    rollback   <path> <instant>                       undo the latest commit (or a pending one)
    savepoint  create|list|delete <path> [instant] [--comment TEXT]
               (the older ``savepoint <path> [instant] [--list|--delete]`` still works)
    restore    <path> <savepoint>
    show-config <path>                                hoodie.properties and service settings
    metadata   <path> [--rebuild]                     the metadata table: partitions, files,
                                                      in step or not; rebuild it from a listing

Every subcommand takes ``--json`` (machine-readable output on stdout), ``-o key=value``
(``hoodie.*`` options, e.g. ``-o hoodie.cleaner.commits.retained=5``) and ``--progress``
(force the progress bar on stderr; it is drawn by default when stderr is a terminal).
Table services run while writers write take the writers' table lock when given their
concurrency options (``-o hoodie.write.concurrency.mode=optimistic_concurrency_control`` and
``-o hoodie.write.lock.provider=...``), as Hudi requires for table services in other processes.

Times are shown in UTC with the zone (``2024-01-02 03:04:05.678 UTC``): instant times are read
in the table's ``hoodie.table.timeline.timezone`` (UTC for tables hudi_ds creates; LOCAL, the
machine's zone, for Hudi's default) and converted. ``hudi-py --version`` prints the version.

A ``compact run`` whose attempt another process rolled back meanwhile (its heartbeat expired
while it was paused) stops, completes nothing and exits 1 with ``AttemptRolledBackError``; a
service that lost the table lock exits 1 with ``LockLostError`` (docs/concurrency.md).

Exit codes: 0 success, 1 unexpected error, 2 bad usage or options, 3 not a Hudi table,
4 instant not found, 5 refused in the table's current state (pending writes, later commits,
unsupported table version...), 141 stdout closed early (``| head``: no traceback, as other
Unix tools that die of SIGPIPE).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import sys
import time
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from typing import Any, TextIO

from hudi_ds.config import Options, ServiceConfig, all_scopes, properties_of
from hudi_ds.errors import (
    ConfigError,
    HudiError,
    InstantNotFoundError,
    TableNotFoundError,
    TimelineError,
    UnsupportedError,
)
from hudi_ds.metadata.reader import MetadataReader
from hudi_ds.metadata.records import (
    FILES_PARTITION,
    METADATA_PARTITIONS_INFLIGHT_KEY,
    METADATA_PATH,
    declared_partitions,
)
from hudi_ds.metadata.writer import MetadataWriter
from hudi_ds.schema.meta import RECORD_KEY_METADATA_FIELD
from hudi_ds.services import archival, clean, compaction, rollback
from hudi_ds.services.base import ServiceContext
from hudi_ds.storage import Storage
from hudi_ds.table.fs_view import FileSystemView
from hudi_ds.table.table import ReadableTable
from hudi_ds.table_config import PROPS_FILE, TableConfig
from hudi_ds.timeline.instant import State, instant_time_to_datetime
from hudi_ds.timeline.timeline import Timeline
from hudi_ds.write.metadata_sync import committed_listing

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_NOT_A_TABLE = 3
EXIT_NOT_FOUND = 4
EXIT_REFUSED = 5
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, what a Unix tool killed by a closed pipe reports

log = logging.getLogger("hudi_ds.cli")


# -- output helpers -----------------------------------------------------------------------------


def human_size(n: float) -> str:
    """``1536`` -> ``1.5 KB``."""
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if abs(n) < 1024 or unit == "TB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TB"  # pragma: no cover


def instant_str(t: str | None, tz: str = "UTC") -> str:
    """An instant time as ``2024-01-02 03:04:05.678 UTC`` (the raw text if it is not a time).

    Args:
        t: the instant time.
        tz: the zone the instant time was written in (the table's
            ``hoodie.table.timeline.timezone``: ``UTC`` or ``LOCAL``, this machine's zone).
    """
    if not t:
        return ""
    try:
        dt = instant_time_to_datetime(t, tz or "UTC")
    except ValueError:
        return t
    return utc_str(dt)


def utc_str(dt: datetime) -> str:
    """An aware datetime in UTC, with milliseconds and the zone."""
    return dt.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + " UTC"


def render_table(rows: Sequence[Sequence[Any]], headers: Sequence[str]) -> str:
    """A plain-text table with aligned columns (numbers right-aligned)."""
    cells = [[("" if v is None else str(v)) for v in r] for r in rows]
    widths = [len(h) for h in headers]
    for r in cells:
        for i, v in enumerate(r):
            widths[i] = max(widths[i], len(v))
    numeric = [
        all(_is_number(r[i]) for r in rows if r[i] not in (None, "")) and any(rows)
        for i in range(len(headers))
    ]

    def line(vals: Sequence[str]) -> str:
        out = []
        for i, v in enumerate(vals):
            out.append(v.rjust(widths[i]) if numeric[i] else v.ljust(widths[i]))
        return "  ".join(out).rstrip()

    sep = "  ".join("-" * w for w in widths)
    return "\n".join([line(list(headers)), sep, *(line(r) for r in cells)])


def _is_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


class ProgressBar:
    """A one-line progress bar on stderr (only when enabled)."""

    def __init__(self, stream: TextIO, enabled: bool) -> None:
        self.stream = stream
        self.enabled = enabled
        self._last = 0.0
        self._open = False

    def __call__(self, done: int, total: int, what: str) -> None:
        if not self.enabled or total <= 0:
            return
        now = time.monotonic()
        if done < total and now - self._last < 0.1:
            return
        self._last = now
        width = 30
        filled = int(width * done / total)
        bar = "#" * filled + "." * (width - filled)
        self.stream.write(f"\r{what} [{bar}] {done}/{total}")
        self._open = True
        if done >= total:
            self.stream.write("\n")
            self._open = False
        self.stream.flush()

    def close(self) -> None:
        if self._open:
            self.stream.write("\n")
            self._open = False


# -- commands -----------------------------------------------------------------------------------


class Command:
    """Context of one invocation: parsed arguments, output streams, the opened table."""

    def __init__(self, args: argparse.Namespace, out: TextIO, err: TextIO) -> None:
        self.args = args
        self.out = out
        self.err = err
        self.progress = ProgressBar(err, bool(args.progress) or err.isatty())
        self.options = Options.of(_parse_options(args.option or []))
        self.storage_options = _parse_options(args.storage_option or [])
        # every command refuses an unknown -o key, also those that read no option
        self.options.validate(*all_scopes())

    def storage(self) -> Storage:
        """The table's storage, with the ``--storage-option`` s."""
        return Storage(self.args.path, storage_options=self.storage_options)

    def context(self) -> ServiceContext:
        return ServiceContext.open(self.storage(), self.options, self.progress)

    def table(self) -> ReadableTable:
        return ReadableTable(self.storage())

    def emit(self, payload: Any, human: Callable[[], str]) -> None:
        if self.args.json:
            json.dump(payload, self.out, indent=1, default=str)
            self.out.write("\n")
        else:
            self.out.write(human().rstrip("\n") + "\n")


def _parse_options(items: Sequence[str]) -> dict[str, str]:
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"option {item!r} must look like key=value")
        out[key.strip()] = value.strip()
    return out


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


def cmd_timeline(cmd: Command) -> int:
    table = cmd.table()
    tl = table.timeline
    tz = table.config.timeline_timezone or "LOCAL"

    def when(t: str | None) -> str:
        return instant_str(t, tz)

    rows: list[dict[str, Any]] = []
    for inst in tl:
        origin = tl.origin_action(inst.requested_time) or inst.action
        row: dict[str, Any] = {
            "instant": inst.requested_time,
            "action": origin if origin != inst.action else inst.action,
            "completed_as": inst.action if origin != inst.action else None,
            "state": inst.state.value,
            "requested_at": when(inst.requested_time),
            "completed_at": None,
            "archived": False,
        }
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
        rows.append(
            {
                "instant": sp.requested_time,
                "action": "savepoint",
                "completed_as": None,
                "state": sp.state.value,
                "requested_at": when(sp.requested_time),
                "completed_at": None,
                "archived": False,
            }
        )
    if cmd.args.archived:
        archived = table.archived_timeline()
        for inst in archived:
            row = {
                "instant": inst.requested_time,
                "action": inst.action,
                "completed_as": None,
                "state": State.COMPLETED.value,
                "requested_at": when(inst.requested_time),
                "completed_at": None,
                "archived": True,
            }
            if inst.action in ("commit", "deltacommit", "replacecommit"):
                with contextlib.suppress(HudiError):
                    row.update(_commit_counts(archived, inst.requested_time))
            rows.append(row)
    rows.sort(key=lambda r: (r["instant"], r["action"] == "savepoint"))
    if cmd.args.limit:
        rows = rows[-cmd.args.limit :]

    def human() -> str:
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

    cmd.emit({"table": table.name, "instants": rows}, human)
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


def _compaction_result(r: compaction.CompactionResult) -> dict[str, Any]:
    return {
        "instant": r.instant,
        "operations": r.operations,
        "rows": r.rows,
        "bytes_written": r.bytes_written,
        "log_files_compacted": r.log_files,
        "seconds": round(r.seconds, 3),
        "rows_per_second": round(r.rows_per_second, 1),
    }


def cmd_compact(cmd: Command) -> int:
    ctx = cmd.context()
    action = cmd.args.action
    if action == "schedule":
        c = compaction.schedule_compaction(ctx)
        ops = 0
        if c is not None:
            ops = len(ctx.timeline().read_compaction_plan(c).operations or [])
        cmd.emit(
            {"scheduled": c, "operations": ops},
            lambda: (
                f"scheduled compaction {c} of {ops} file slice(s)"
                if c
                else "nothing to compact (no file slice with log files)"
            ),
        )
        return EXIT_OK
    if action == "unschedule":
        if not cmd.args.instant:
            raise ConfigError("compact unschedule needs --instant <compaction instant>")
        moved = compaction.unschedule_compaction(ctx, cmd.args.instant)
        cmd.emit(
            {"unscheduled": cmd.args.instant, "renamed_log_files": [list(m) for m in moved]},
            lambda: (
                f"unscheduled compaction {cmd.args.instant} ({len(moved)} log file(s) moved back)"
            ),
        )
        return EXIT_OK
    if action == "show":
        tl = ctx.timeline()
        plans = compaction.compaction_plans(tl)
        payload = {
            c: [
                {
                    "partition": op.partition_path,
                    "file_id": op.file_id,
                    "base_instant": op.base_instant_time,
                    "base_file": op.data_file_path,
                    "log_files": len(op.delta_file_paths or []),
                    "metrics": op.metrics,
                }
                for op in p.operations or []
            ]
            for c, p in plans.items()
        }

        def human() -> str:
            if not payload:
                return "no pending compaction"
            body = [
                [c, o["partition"] or "(none)", o["file_id"], o["base_instant"], o["log_files"]]
                for c, ops in payload.items()
                for o in ops
            ]
            return render_table(body, ["compaction", "partition", "file id", "base", "logs"])

        cmd.emit({"pending": payload}, human)
        return EXIT_OK
    # run
    if cmd.args.schedule:
        compaction.schedule_compaction(ctx)
    results = compaction.run_compaction(ctx, cmd.args.instant)
    cmd.progress.close()
    payload = {"compactions": [_compaction_result(r) for r in results]}

    def human_run() -> str:
        if not results:
            return "no pending compaction to run"
        return "\n".join(
            f"compaction {r.instant}: {r.operations} file slice(s), {r.rows:,} rows, "
            f"{human_size(r.bytes_written)} written in {r.seconds:.2f}s "
            f"({r.rows_per_second:,.0f} rows/s)"
            for r in results
        )

    cmd.emit(payload, human_run)
    return EXIT_OK


def cmd_clean(cmd: Command) -> int:
    ctx = cmd.context()
    res = clean.clean(ctx, dry_run=cmd.args.dry_run)
    cmd.progress.close()
    payload = {
        "clean": res.instant,
        "policy": res.policy,
        "earliest_commit_to_retain": res.earliest_commit_to_retain or None,
        "dry_run": cmd.args.dry_run,
        "deleted": res.deleted,
        "failed": res.failed,
        "debris": res.debris,
    }

    def human() -> str:
        if cmd.args.dry_run:
            head = f"would delete {len(res.deleted)} file(s) ({res.policy})"
            return "\n".join([head, *(f"  {f}" for f in res.deleted)])
        if res.instant is None:
            return f"nothing to clean ({res.policy})"
        return (
            f"clean {res.instant} ({res.policy}, earliest commit retained "
            f"{res.earliest_commit_to_retain or '-'}): deleted {len(res.deleted)} file(s)"
            f"{f', {len(res.debris)} of failed writes' if res.debris else ''}"
            f"{f', {len(res.failed)} failed' if res.failed else ''}"
        )

    cmd.emit(payload, human)
    return EXIT_OK


def cmd_archive(cmd: Command) -> int:
    ctx = cmd.context()
    res = archival.archive(ctx, dry_run=cmd.args.dry_run)
    payload = {
        "archived": res.archived,
        "archive_file": res.archive_file,
        "metadata_archived": res.metadata_archived,
        "dry_run": cmd.args.dry_run,
    }
    mdt = len(res.metadata_archived)
    cmd.emit(
        payload,
        lambda: (
            f"{'would archive' if cmd.args.dry_run else 'archived'} {len(res.archived)} "
            f"instant(s)"
            + (f" into {res.archive_file}" if res.archive_file else "")
            + (f"; {mdt} of the metadata table" if mdt else "")
        ),
    )
    return EXIT_OK


def cmd_rollback(cmd: Command) -> int:
    ctx = cmd.context()
    res = rollback.rollback(ctx, cmd.args.instant)
    payload = {
        "instant": res.instant,
        "action": res.action,
        "rollback_instant": res.rollback_instant,
        "deleted": res.deleted,
        "command_block_logs": res.command_logs,
    }
    cmd.emit(
        payload,
        lambda: (
            f"rolled back {res.action} {res.instant}"
            + (f" as rollback {res.rollback_instant}" if res.rollback_instant else "")
            + f": {len(res.deleted)} file(s) deleted"
            + (f", {len(res.command_logs)} rollback block(s) written" if res.command_logs else "")
        ),
    )
    return EXIT_OK


def cmd_savepoint(cmd: Command) -> int:
    ctx = cmd.context()
    if cmd.args.delete:
        if not cmd.args.instant:
            raise ConfigError("savepoint --delete needs the savepointed instant")
        rollback.delete_savepoint(ctx, cmd.args.instant)
        cmd.emit(
            {"deleted_savepoint": cmd.args.instant},
            lambda: f"deleted savepoint {cmd.args.instant}",
        )
        return EXIT_OK
    if cmd.args.list:
        tl = ctx.timeline()
        sps = [s.requested_time for s in tl.savepoints() if s.is_completed]
        cmd.emit({"savepoints": sps}, lambda: "\n".join(sps) or "no savepoint")
        return EXIT_OK
    t = rollback.create_savepoint(ctx, cmd.args.instant, comment=cmd.args.comment or "")
    cmd.emit({"savepoint": t}, lambda: f"savepointed {t}")
    return EXIT_OK


def cmd_restore(cmd: Command) -> int:
    ctx = cmd.context()
    md = rollback.restore(ctx, cmd.args.savepoint)
    cmd.progress.close()
    payload = {
        "restore": md.start_restore_time,
        "savepoint": cmd.args.savepoint,
        "rolled_back": md.instants_to_rollback,
    }
    cmd.emit(
        payload,
        lambda: (
            f"restored to savepoint {cmd.args.savepoint} as {md.start_restore_time}: "
            f"rolled back {len(md.instants_to_rollback)} instant(s)"
        ),
    )
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


def _metadata_report(table: ReadableTable) -> dict[str, Any]:
    cfg = table.config
    declared = declared_partitions(cfg)
    inflight = declared_partitions(cfg, METADATA_PARTITIONS_INFLIGHT_KEY)
    payload: dict[str, Any] = {
        "table": table.name,
        "path": table.path,
        "declared_partitions": declared,
        "inflight_partitions": inflight,
        "present": table.storage.exists(f"{METADATA_PATH}/{PROPS_FILE}"),
    }
    reader = MetadataReader.open(table.storage, cfg, table.timeline)
    if reader is None:
        payload["in_step"] = None
        payload["used_by_reads"] = False
        return payload
    groups = []
    for g in reader.file_groups:
        s = g.slice
        groups.append(
            {
                "file_id": g.file_id,
                "base_instant": s.base_instant_time or None,
                "base_file": s.base_file.name.name if s.base_file else None,
                "base_size": s.base_file.size if s.base_file else 0,
                "log_files": [lf.name.name for lf in s.log_files],
                "log_size": sum(lf.size for lf in s.log_files),
                "blocks_merged": len(g.blocks),
                "blocks_skipped": [
                    {"log_file": f, "instant": t, "why": why} for f, t, why in g.skipped
                ],
            }
        )
    partitions = reader.partitions()
    payload.update(
        {
            "table_version": reader.config.table_version,
            "latest_instant": reader.latest_instant,
            "bootstrap_instant": reader.bootstrap_instant,
            "mdt_instants": len(reader.timeline.completed()),
            "file_groups": groups,
            "partitions": len(partitions),
            "files": reader.file_count(),
            "files_per_partition": {p: len(reader.files(p)) for p in partitions},
            "in_step": reader.in_step,
            "missing_instants": reader.missing_instants,
            "problems": reader.problems,
            "used_by_reads": table.metadata_reader() is not None,
        }
    )
    return payload


def cmd_metadata(cmd: Command) -> int:
    """``hudi-py metadata PATH [--rebuild]``: report the metadata table (declared partitions,
    its ``files`` partition's file groups and blocks, what it lists, whether it is in step with
    the data timeline), or rebuild it from a listing of the storage."""
    if cmd.args.rebuild:
        return _rebuild_metadata(cmd)
    table = cmd.table()
    payload = _metadata_report(table)

    def human() -> str:
        lines = [f"metadata table of {payload['table']} ({payload['path']})"]
        declared = ", ".join(payload["declared_partitions"]) or "(none)"
        lines.append(f"declared partitions  {declared}")
        if payload["inflight_partitions"]:
            lines.append(f"inflight partitions  {', '.join(payload['inflight_partitions'])}")
        if payload["in_step"] is None:
            where = "present" if payload["present"] else "absent"
            lines.append(
                f"{FILES_PARTITION} partition not declared or no metadata table ({where}); "
                "reads list the storage"
            )
            return "\n".join(lines)
        lines += [
            f"table version        {payload['table_version']}",
            f"latest instant       {payload['latest_instant']}",
            f"bootstrap instant    {payload['bootstrap_instant']}",
            f"lists                {payload['partitions']} partition(s), "
            f"{payload['files']} file(s)",
        ]
        if payload["in_step"]:
            lines.append("in step              yes (reads list through it)")
        else:
            lines.append("in step              NO (reads list the storage)")
            if payload["missing_instants"]:
                lines.append(f"  missing instants   {', '.join(payload['missing_instants'])}")
            for p in payload["problems"]:
                lines.append(f"  problem            {p}")
        rows = [
            [
                g["file_id"],
                g["base_file"] or "-",
                human_size(g["base_size"]) if g["base_file"] else "-",
                len(g["log_files"]),
                human_size(g["log_size"]),
                g["blocks_merged"],
                len(g["blocks_skipped"]),
            ]
            for g in payload["file_groups"]
        ]
        headers = ["file group", "base file", "base size", "logs", "log size", "blocks",
                   "skipped"]  # fmt: skip
        lines.append(f"\n{FILES_PARTITION} partition: {len(rows)} file group(s)")
        lines.append(render_table(rows, headers))
        for g in payload["file_groups"]:
            for b in g["blocks_skipped"]:
                lines.append(f"  skipped {b['log_file']} block {b['instant']}: {b['why']}")
        return "\n".join(lines)

    cmd.emit(payload, human)
    return EXIT_OK


def _rebuild_metadata(cmd: Command) -> int:
    """Delete the metadata table and create it again from the committed files the storage
    lists (Java's ``hudi-cli metadata delete`` + ``metadata create``): a write, so the table
    version must be one hudi_ds writes, and it runs under the table lock (``-o`` lock
    options) with the current ``hoodie.properties``."""
    ctx = cmd.context()  # validates -o (unknown keys refused)
    ctx.require_writable("metadata rebuild")
    with ctx.locked():
        state = ctx.state
        state.config = TableConfig.load(state.storage)  # as another writer may have left it
        writer = MetadataWriter(state, committed_listing, enable=True)
        had = writer.present()
        writer.delete()
        writer.create()
    table = cmd.table()
    payload = _metadata_report(table)
    payload["rebuilt"] = True
    payload["replaced_existing"] = had

    def human() -> str:
        verb = "rebuilt" if had else "created"
        return (
            f"{verb} the metadata table of {payload['table']}: {payload['partitions']} "
            f"partition(s), {payload['files']} file(s), bootstrap instant "
            f"{payload['bootstrap_instant']}; in step: {'yes' if payload['in_step'] else 'NO'}"
        )

    cmd.emit(payload, human)
    return EXIT_OK if payload["in_step"] else EXIT_ERROR


def _short(v: str, n: int = 80) -> str:
    return v if len(v) <= n else v[: n - 3] + "..."


# -- parser ---------------------------------------------------------------------------------------


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # argparse exits with 2, as we want
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    common = _Parser(add_help=False)
    common.add_argument("--json", action="store_true", help="machine-readable output")
    common.add_argument(
        "-o",
        "--option",
        action="append",
        metavar="KEY=VALUE",
        help="a hoodie.* option (repeatable), e.g. -o hoodie.cleaner.commits.retained=5",
    )
    common.add_argument(
        "--storage-option",
        action="append",
        metavar="KEY=VALUE",
        help="an object store option (repeatable), as deltalake and hudi-rs name them, e.g. "
        "--storage-option aws_endpoint_url=http://localhost:9000 (aws_*, google_*, azure_*, "
        "allow_http, max_retries...); default: the cloud's environment credentials",
    )
    common.add_argument("--progress", action="store_true", help="always draw progress on stderr")
    common.add_argument("-v", "--verbose", action="store_true", help="log what services do")

    p = _Parser(
        prog="hudi-py",
        description="Inspect and operate a Hudi table (hudi_ds). Times are shown in UTC.",
        epilog="exit codes: 0 ok, 1 error, 2 usage, 3 not a Hudi table, 4 instant not found, "
        "5 refused in the current table state, 141 output pipe closed",
    )
    p.add_argument("--version", action="version", version=f"hudi-py (hudi_ds) {_version()}")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)

    def add(name: str, fn: Callable[[Command], int], help: str) -> argparse.ArgumentParser:
        sp = sub.add_parser(name, parents=[common], help=help, description=help)
        sp.set_defaults(fn=fn)
        return sp

    sp = add("timeline", cmd_timeline, "instants with action, state, times and counts")
    sp.add_argument("path")
    sp.add_argument("--archived", action="store_true", help="include archived instants")
    sp.add_argument("--limit", type=int, default=0, help="only the last N instants")

    sp = add("files", cmd_files, "file groups and slices per partition, sizes, log counts")
    sp.add_argument("path")
    sp.add_argument("--partition", default=None, help="only this partition path")

    sp = add("stats", cmd_stats, "table size, rows and file-size histogram")
    sp.add_argument("path")

    sp = add("compact", cmd_compact, "schedule, run, show or unschedule compactions (MOR)")
    sp.add_argument("action", choices=["schedule", "run", "show", "unschedule"])
    sp.add_argument("path")
    sp.add_argument("--instant", default=None, help="a compaction instant (run/unschedule)")
    sp.add_argument("--schedule", action="store_true", help="run: schedule a new compaction first")

    sp = add(
        "clean", cmd_clean, "delete file slices outside the retention (and failed-write debris)"
    )
    sp.add_argument("path")
    sp.add_argument("--dry-run", action="store_true", help="only show what would be deleted")

    sp = add("archive", cmd_archive, "move old instants to the archived timeline")
    sp.add_argument("path")
    sp.add_argument("--dry-run", action="store_true", help="only show what would be archived")

    sp = add("rollback", cmd_rollback, "roll back an instant (the latest commit, or pending)")
    sp.add_argument("path")
    sp.add_argument("instant")

    sp = add(
        "savepoint",
        cmd_savepoint,
        "savepoint create|list|delete PATH [INSTANT]: savepoint a commit (default the latest), "
        "list or delete savepoints",
    )
    sp.add_argument("words", nargs="+", metavar="ARG", help="[create|list|delete] PATH [INSTANT]")
    sp.usage = (
        "hudi-py savepoint {create,list,delete} PATH [INSTANT] [--comment TEXT] [--json] "
        "[-o KEY=VALUE]\n       hudi-py savepoint PATH [INSTANT] [--list | --delete] (older form)"
    )
    sp.add_argument("--delete", action="store_true", help="delete the savepoint of INSTANT")
    sp.add_argument("--list", action="store_true", help="list savepoints")
    sp.add_argument("--comment", default="", help="a comment stored with the savepoint")

    sp = add("restore", cmd_restore, "restore the table to a savepoint")
    sp.add_argument("path")
    sp.add_argument("savepoint")

    sp = add("show-config", cmd_show_config, "hoodie.properties and table service settings")
    sp.add_argument("path")

    sp = add(
        "metadata",
        cmd_metadata,
        "the metadata table: declared partitions, its files partition, what it lists, in step",
    )
    sp.add_argument("path")
    sp.add_argument(
        "--rebuild",
        action="store_true",
        help="delete the metadata table and create it again from a listing of the storage",
    )
    return p


_SAVEPOINT_ACTIONS = ("create", "list", "delete")


def _savepoint_words(args: argparse.Namespace) -> str | None:
    """Resolve ``savepoint ACTION PATH [INSTANT]`` (or the older ``savepoint PATH [INSTANT]
    [--list|--delete]``) into ``args.path`` / ``args.instant`` / the flags; an error message
    when the words do not fit."""
    words: list[str] = list(args.words)
    if words[0] in _SAVEPOINT_ACTIONS and len(words) == 1 and not os.path.isdir(words[0]):
        return f"savepoint {words[0]}: the table PATH is missing"
    if words[0] in _SAVEPOINT_ACTIONS and len(words) >= 2:
        action, rest = words[0], words[1:]
    else:
        action = "delete" if args.delete else "list" if args.list else "create"
        rest = words
    if len(rest) > 2 or (action == "list" and len(rest) > 1):
        return f"savepoint {action}: unexpected arguments {rest[1:]}"
    args.path = rest[0]
    args.instant = rest[1] if len(rest) > 1 else None
    args.delete = action == "delete"
    args.list = action == "list"
    return None


def _version() -> str:
    from hudi_ds import __version__

    return __version__


def main(
    argv: Sequence[str] | None = None, out: TextIO | None = None, err: TextIO | None = None
) -> int:
    """Run ``hudi-py``; returns the exit code (the console script exits with it).

    A closed stdout (``hudi-py timeline t --json | head -1``) ends the command quietly with
    exit code 141, as Unix tools killed by SIGPIPE do.
    """
    out = out or sys.stdout
    err = err or sys.stderr
    try:
        return _main(argv, out, err)
    except BrokenPipeError:
        # the reader went away: point stdout at devnull so that the interpreter's final flush
        # does not raise again (the recipe of Python's signal module documentation)
        with contextlib.suppress(OSError, ValueError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, out.fileno())
        return EXIT_BROKEN_PIPE


def _main(argv: Sequence[str] | None, out: TextIO, err: TextIO) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:
        return int(e.code) if isinstance(e.code, int) else EXIT_USAGE
    if args.command == "savepoint":
        problem = _savepoint_words(args)
        if problem is not None:
            err.write(f"hudi-py savepoint: error: {problem}\n")
            return EXIT_USAGE
    if args.verbose:
        logging.basicConfig(level=logging.INFO, stream=err, format="%(levelname)s %(message)s")
    try:
        cmd = Command(args, out, err)
        return int(args.fn(cmd))
    except TableNotFoundError as e:
        return _fail(out, err, args, f"not a Hudi table: {args.path} ({e})", EXIT_NOT_A_TABLE)
    except InstantNotFoundError as e:
        return _fail(out, err, args, str(e), EXIT_NOT_FOUND)
    except ConfigError as e:
        return _fail(out, err, args, str(e), EXIT_USAGE)
    except (TimelineError, UnsupportedError) as e:
        return _fail(out, err, args, str(e), EXIT_REFUSED)
    except HudiError as e:
        return _fail(out, err, args, f"{type(e).__name__}: {e}", EXIT_ERROR)
    except KeyboardInterrupt:
        return _fail(out, err, args, "interrupted", 130)
    except BrokenPipeError:
        raise  # main: a closed stdout is no error of the table
    except Exception as e:  # an unexpected failure: say what, not a traceback (unless -v)
        if args.verbose:
            log.exception("unexpected error")
        return _fail(out, err, args, f"unexpected {type(e).__name__}: {e}", EXIT_ERROR)


def _fail(out: TextIO, err: TextIO, args: argparse.Namespace, message: str, code: int) -> int:
    err.write(f"hudi-py {args.command}: error: {message}\n")
    if getattr(args, "json", False):  # scripts parse stdout: keep it JSON
        json.dump({"error": message, "exit_code": code}, out)
        out.write("\n")
    return code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
