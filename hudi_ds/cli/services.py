"""Subcommands that run table services: ``compact``, ``clean``, ``archive``, ``rollback``,
``savepoint``, ``restore``."""

from __future__ import annotations

from typing import Any

from hudi_ds.cli.command import EXIT_OK, AddCommand, Command, human_size, render_table
from hudi_ds.errors import ConfigError
from hudi_ds.services import archival, clean, compaction, rollback
from hudi_ds.services.compaction_execute import CompactionResult
from hudi_ds.services.compaction_plan import compaction_plans


def _compaction_result(r: CompactionResult) -> dict[str, Any]:
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
        plans = compaction_plans(tl)
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


def add_service_commands(add: AddCommand) -> None:
    """The ``compact``, ``clean``, ``archive``, ``rollback``, ``savepoint`` and ``restore``
    subcommands."""
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
