"""One invocation of a subcommand (:class:`Command`: its table, options and output streams)
and what the commands print: exit codes, sizes and times, tables, the progress bar."""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from typing import Any, TextIO

from hudi_ds.config import validated
from hudi_ds.errors import ConfigError
from hudi_ds.services.base import ServiceContext
from hudi_ds.storage import Storage
from hudi_ds.table.table import ReadableTable
from hudi_ds.timeline.instant import instant_time_to_datetime

EXIT_OK = 0


EXIT_ERROR = 1


EXIT_USAGE = 2


EXIT_NOT_A_TABLE = 3


EXIT_NOT_FOUND = 4


EXIT_REFUSED = 5


EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, what a Unix tool killed by a closed pipe reports


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


class Command:
    """Context of one invocation: parsed arguments, output streams, the opened table."""

    def __init__(self, args: argparse.Namespace, out: TextIO, err: TextIO) -> None:
        self.args = args
        self.out = out
        self.err = err
        self.progress = ProgressBar(err, bool(args.progress) or err.isatty())
        # every command refuses an unknown -o key, also those that read no option
        self.options = validated(_parse_options(args.option or []))
        self.storage_options = _parse_options(args.storage_option or [])

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


def _short(v: str, n: int = 80) -> str:
    return v if len(v) <= n else v[: n - 3] + "..."


AddCommand = Callable[[str, Callable[[Command], int], str], argparse.ArgumentParser]
"""``add(name, fn, help)``: a subcommand's parser (with the common options), which runs ``fn``."""
