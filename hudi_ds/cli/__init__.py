"""``hudi-py``: inspect and operate a Hudi table from the command line.

Usage::

    hudi-py <subcommand> <table path> [options]

    timeline   <path> [--archived] [--limit N]        instants: action, state, times, counts
    files      <path> [--partition P]                 file groups and slices, sizes, log counts
    stats      <path>                                 table size, rows, file-size histogram
    compact    schedule|run|unschedule <path> [--instant C]
    clustering schedule|run|list <path> [--instant T] [--schedule]
    bucket-rescale <path> --overwrite|--add EXPRS [--bucket-number N] [--dry-run]
               (or --show-config)                  partition-level bucket rules, rescaled
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
from collections.abc import Callable, Sequence
from typing import Any, TextIO

from hudi_ds.cli.bucket_rescale import add_bucket_rescale_command
from hudi_ds.cli.clustering import add_clustering_command
from hudi_ds.cli.command import (
    EXIT_BROKEN_PIPE,
    EXIT_ERROR,
    EXIT_NOT_A_TABLE,
    EXIT_NOT_FOUND,
    EXIT_REFUSED,
    EXIT_USAGE,
    Command,
)
from hudi_ds.cli.inspect import add_config_command, add_table_commands
from hudi_ds.cli.metadata import add_metadata_command
from hudi_ds.cli.services import add_service_commands
from hudi_ds.errors import (
    ConfigError,
    HudiError,
    InstantNotFoundError,
    TableNotFoundError,
    TimelineError,
    UnsupportedError,
)

log = logging.getLogger("hudi_ds.cli")


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

    add_table_commands(add)
    add_service_commands(add)
    add_clustering_command(add)
    add_bucket_rescale_command(add)
    add_config_command(add)
    add_metadata_command(add)
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
