"""Instants, their states and actions, instant times, and the instant-file grammar.

This module is the ONE place that knows how instant files are named. Everything else calls
:meth:`Instant.parse` and :meth:`Instant.file_name`.

Instant-file grammar (``T`` = requested time, ``C`` = completion time, both ``\\d+``, normally
17 digits ``yyyyMMddHHmmssSSS``; older tables have 14, metadata tables use ``0000...`` ids):

Layout 1 (table version 6; files directly in ``.hoodie/``):

| action        | requested                   | inflight                   | completed         |
|---------------|-----------------------------|----------------------------|-------------------|
| commit        | T.commit.requested          | T.inflight (no action!)    | T.commit          |
| deltacommit   | T.deltacommit.requested     | T.deltacommit.inflight     | T.deltacommit     |
| replacecommit | T.replacecommit.requested   | T.replacecommit.inflight   | T.replacecommit   |
| compaction    | T.compaction.requested      | T.compaction.inflight      | T.commit          |
| logcompaction | T.logcompaction.requested   | T.logcompaction.inflight   | T.deltacommit     |
| clustering    | T.replacecommit.requested   | T.replacecommit.inflight   | T.replacecommit   |
| clean         | T.clean.requested           | T.clean.inflight           | T.clean           |
| rollback      | T.rollback.requested        | T.rollback.inflight        | T.rollback        |
| savepoint     | (none)                      | T.savepoint.inflight       | T.savepoint       |
| restore       | T.restore.requested         | T.restore.inflight         | T.restore         |
| indexing      | T.indexing.requested        | T.indexing.inflight        | T.indexing        |
| schemacommit  | T.schemacommit.requested    | T.schemacommit.inflight    | T.schemacommit    |

Layout 2 (table versions 8 and 9; files in ``.hoodie/timeline/``): pending files are named as in
layout 1 (``T.inflight`` for commit included), except that clustering has its own pending
action: ``T.clustering.requested`` / ``T.clustering.inflight`` (in layout 1 a clustering is a
replacecommit on disk, and ``T.clustering.*`` names are not accepted there). Completed files
carry the completion time: ``T_C.<completed action>``, e.g. ``T_C.deltacommit``; a compaction
completes as ``T_C.commit``, a log compaction as ``T_C.deltacommit``, a clustering as
``T_C.replacecommit``.
A legacy completed file without ``_C`` (``T.commit``, written by 0.x) is accepted; its
completion time is unknown to the grammar (the timeline loader uses the file's mtime, as Java
does).

Because a completed file carries the *completed* action, parsing a completed compaction gives
``Instant(T, "commit", COMPLETED)``: ``parse(file_name(i))`` equals ``i.normalized(layout)``.

Anything else -- ``hoodie.properties``, folders, ``.aux``, hidden or temporary files (``*.tmp``),
unknown actions or states -- is not an instant file and parses to ``None``.
"""

from __future__ import annotations

import contextlib
import os
import re
import tempfile
import threading
from dataclasses import dataclass
from datetime import date, datetime, timedelta, tzinfo
from datetime import timezone as _dt_timezone
from enum import Enum
from functools import lru_cache, total_ordering

from hudi_ds.errors import ConfigError, TimelineError

try:  # POSIX only: cross-process uniqueness of instant times on one host
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

__all__ = [
    "ACTIONS",
    "CLEAN",
    "CLUSTERING",
    "COMMIT",
    "COMPACTION",
    "DELTA_COMMIT",
    "INDEXING",
    "LOG_COMPACTION",
    "REPLACE_COMMIT",
    "RESTORE",
    "ROLLBACK",
    "SAVEPOINT",
    "SCHEMA_COMMIT",
    "Instant",
    "State",
    "completed_action",
    "format_instant_time",
    "instant_time_to_datetime",
    "MAX_INSTANT_AHEAD_MS",
    "new_instant_time",
]

COMMIT = "commit"
DELTA_COMMIT = "deltacommit"
REPLACE_COMMIT = "replacecommit"
COMPACTION = "compaction"
LOG_COMPACTION = "logcompaction"
CLUSTERING = "clustering"
CLEAN = "clean"
ROLLBACK = "rollback"
SAVEPOINT = "savepoint"
RESTORE = "restore"
INDEXING = "indexing"
SCHEMA_COMMIT = "schemacommit"

ACTIONS: frozenset[str] = frozenset(
    {
        COMMIT,
        DELTA_COMMIT,
        REPLACE_COMMIT,
        COMPACTION,
        LOG_COMPACTION,
        CLUSTERING,
        CLEAN,
        ROLLBACK,
        SAVEPOINT,
        RESTORE,
        INDEXING,
        SCHEMA_COMMIT,
    }
)

# pending action -> the action its completed file carries
_COMPLETES_AS = {COMPACTION: COMMIT, LOG_COMPACTION: DELTA_COMMIT, CLUSTERING: REPLACE_COMMIT}
# actions that never appear in a completed file name
_PENDING_ONLY = frozenset(_COMPLETES_AS)
# actions without a requested state
_NO_REQUESTED = frozenset({SAVEPOINT})

_INFLIGHT = "inflight"
_REQUESTED = "requested"


class State(str, Enum):
    """The state of an instant: requested -> inflight -> completed."""

    REQUESTED = "REQUESTED"
    INFLIGHT = "INFLIGHT"
    COMPLETED = "COMPLETED"

    @property
    def rank(self) -> int:
        """0, 1, 2 in transition order."""
        return _STATE_RANK[self]


_STATE_RANK = {State.REQUESTED: 0, State.INFLIGHT: 1, State.COMPLETED: 2}


def completed_action(action: str) -> str:
    """The action a completed instant of ``action`` carries (compaction -> commit, ...)."""
    return _COMPLETES_AS.get(action, action)


_LAYOUT1_RE = re.compile(r"^(\d+)\.([a-z]+)(?:\.([a-z]+))?$")
_LAYOUT2_RE = re.compile(r"^(\d+)(?:_(\d+))?\.([a-z]+)(?:\.([a-z]+))?$")


@total_ordering
@dataclass(frozen=True, eq=True)
class Instant:
    """One instant of the timeline.

    Instants order by ``(requested_time, state)`` (then action and completion time, to make the
    order total), which is the order of the active timeline.

    Attributes:
        requested_time: the instant time (``yyyyMMddHHmmssSSS``) the action was requested at.
        action: one of the action constants (``commit``, ``deltacommit``...).
        state: requested, inflight or completed.
        completion_time: when the instant completed (completed instants only; ``None`` when the
            file name does not say, i.e. layout 1 and legacy layout-2 files).
    """

    requested_time: str
    action: str
    state: State
    completion_time: str | None = None

    # -- ordering -----------------------------------------------------------------------------
    def sort_key(self) -> tuple[str, int, str, str]:
        """The key of the timeline order (``sorted(instants, key=Instant.sort_key)`` sorts as
        ``sorted(instants)``, comparing tuples instead of calling :meth:`__lt__`)."""
        return (self.requested_time, self.state.rank, self.action, self.completion_time or "")

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, Instant):
            return NotImplemented
        return self.sort_key() < other.sort_key()

    # -- states -------------------------------------------------------------------------------
    @property
    def is_requested(self) -> bool:
        """True in the requested state."""
        return self.state is State.REQUESTED

    @property
    def is_inflight(self) -> bool:
        """True in the inflight state."""
        return self.state is State.INFLIGHT

    @property
    def is_completed(self) -> bool:
        """True in the completed state."""
        return self.state is State.COMPLETED

    def normalized(self, layout: int) -> Instant:
        """The instant as parsing its own file name in ``layout`` gives it back."""
        action = self.action
        completion = self.completion_time
        if self.is_completed:
            action = completed_action(action)
            if layout == 1:
                completion = None
        else:
            completion = None
            if layout == 1 and action == CLUSTERING:
                action = REPLACE_COMMIT
        return Instant(self.requested_time, action, self.state, completion)

    # -- grammar ------------------------------------------------------------------------------
    def file_name(self, layout: int) -> str:
        """The name of this instant's file in timeline layout ``layout`` (1 or 2).

        Raises:
            ValueError: for an unknown action or layout, or a requested savepoint.
        """
        _check_layout(layout)
        t = self.requested_time
        action = self.action
        if action not in ACTIONS:
            raise ValueError(f"unknown action {action!r}")
        if self.state is State.COMPLETED:
            done = completed_action(action)
            if layout == 2 and self.completion_time:
                return f"{t}_{self.completion_time}.{done}"
            return f"{t}.{done}"
        if layout == 1 and action == CLUSTERING:
            action = REPLACE_COMMIT  # 0.x: clustering shares the replacecommit file names
        if self.state is State.INFLIGHT:
            return f"{t}.{_INFLIGHT}" if action == COMMIT else f"{t}.{action}.{_INFLIGHT}"
        if action in _NO_REQUESTED:
            raise ValueError(f"{action} has no requested state")
        return f"{t}.{action}.{_REQUESTED}"

    @classmethod
    def parse(cls, file_name: str, layout: int) -> Instant | None:
        """Parse an instant file name (see the module docstring); ``None`` if it is not one."""
        _check_layout(layout)
        return _parse_name(file_name.rsplit("/", 1)[-1], layout)

    def __str__(self) -> str:
        done = f"->{self.completion_time}" if self.completion_time else ""
        return f"[{self.requested_time}{done}__{self.action}__{self.state.value}]"


# A name always parses to the same (immutable) instant, and every listing of a timeline parses
# all of its files again: the parsed names are kept (a timeline of 10,000 instants is 30,000
# names, listed by every write several times)
@lru_cache(maxsize=1 << 16)
def _parse_name(name: str, layout: int) -> Instant | None:
    if layout == 1:
        m1 = _LAYOUT1_RE.match(name)
        if not m1:
            return None
        t, completion, action, suffix = m1.group(1), None, m1.group(2), m1.group(3)
    else:
        m2 = _LAYOUT2_RE.match(name)
        if not m2:
            return None
        t, completion, action, suffix = m2.group(1), m2.group(2), m2.group(3), m2.group(4)
    if action == _INFLIGHT:  # T.inflight: the inflight commit
        if suffix is not None or completion is not None:
            return None
        return Instant(t, COMMIT, State.INFLIGHT)
    if action not in ACTIONS or (layout == 1 and action == CLUSTERING):
        return None
    if suffix is None:
        if action in _PENDING_ONLY:
            return None
        return Instant(t, action, State.COMPLETED, completion)
    if completion is not None:
        return None
    if suffix == _INFLIGHT:
        if action == COMMIT:  # commit's inflight file is T.inflight, never T.commit.inflight
            return None
        return Instant(t, action, State.INFLIGHT)
    if suffix == _REQUESTED and action not in _NO_REQUESTED:
        return Instant(t, action, State.REQUESTED)
    return None


def _check_layout(layout: int) -> None:
    if layout not in (1, 2):
        raise ValueError(f"unsupported timeline layout version {layout!r} (expected 1 or 2)")


# -- instant times --------------------------------------------------------------------------------

TimeZoneLike = str | tzinfo


def _tz(timezone: TimeZoneLike) -> tzinfo | None:
    """``None`` means the local time zone."""
    if isinstance(timezone, tzinfo):
        return timezone
    name = timezone.strip()
    if name.upper() == "UTC":
        return _dt_timezone.utc
    if name.upper() == "LOCAL":
        return None
    from zoneinfo import ZoneInfo

    return ZoneInfo(name)


def format_instant_time(epoch_ms: int, timezone: TimeZoneLike = "UTC") -> str:
    """Format epoch milliseconds as a 17-digit ``yyyyMMddHHmmssSSS`` instant time.

    Args:
        epoch_ms: milliseconds since the epoch.
        timezone: ``"UTC"`` (default), ``"LOCAL"`` (Hudi's default
            ``hoodie.table.timeline.timezone``), a zone name or a ``tzinfo``.
    """
    tz = _tz(timezone)
    secs, ms = divmod(int(epoch_ms), 1000)
    dt = datetime.fromtimestamp(secs) if tz is None else datetime.fromtimestamp(secs, tz)
    return f"{dt.strftime('%Y%m%d%H%M%S')}{ms:03d}"


def instant_time_to_datetime(instant_time: str, timezone: TimeZoneLike = "UTC") -> datetime:
    """Parse a 14- or 17-digit instant time into an aware datetime.

    A 14-digit (second precision) time is taken as its last millisecond (``.999``), as Java does.

    Raises:
        ValueError: if the text is not a valid instant time.
    """
    ts = instant_time
    if len(ts) == 14:
        ts += "999"
    if len(ts) != 17 or not ts.isdigit():
        raise ValueError(f"not an instant time: {instant_time!r}")
    naive = datetime.strptime(ts[:14], "%Y%m%d%H%M%S") + timedelta(milliseconds=int(ts[14:]))
    tz = _tz(timezone)
    return naive.astimezone() if tz is None else naive.replace(tzinfo=tz)


_time_lock = threading.Lock()
_last_claimed_ms = 0
# a shared last-claimed value further ahead of the clock than this is ignored (stale or corrupt)
_MAX_CLAIM_LEAD_MS = 60_000


#: How far the latest instant of a timeline may be ahead of this host's clock before
#: :func:`new_instant_time` (with ``max_ahead_ms``) refuses to allocate instants after it. A day
#: covers clock skew between hosts and any time zone offset (a table whose timeline zone is
#: LOCAL, written in UTC+14, read here in UTC); a stray instant dated years ahead is refused.
MAX_INSTANT_AHEAD_MS = 24 * 3600 * 1000


def new_instant_time(
    after: str | None = None, timezone: TimeZoneLike = "UTC", max_ahead_ms: int | None = None
) -> str:
    """A new instant time: the current time, strictly greater than ``after``.

    The clock reading is claimed uniquely: strictly increasing within a process and -- through
    a small lock file in the temp folder holding the last claimed epoch millisecond -- across
    the processes of one user on one host (``max(now, last claimed + 1 ms)``). The result is
    then ``max(claim, after + 1 ms)``; values derived from ``after`` are not recorded, so a
    far-future ``after`` does not drag other tables along. Writers still create the requested
    file with ``create_if_absent``, which settles any remaining collision.

    Args:
        after: the result is strictly greater than this instant time: writers pass the
            latest requested or completion time on the timeline
            (:meth:`~hudi_ds.timeline.timeline.Timeline.latest_time`), for requested and
            completion times alike.
        timezone: the timeline time zone (``hoodie.table.timeline.timezone``; Hudi's default is
            ``LOCAL``, this function's default is ``"UTC"``).
        max_ahead_ms: refuse an ``after`` more than this far ahead of the clock (writers pass
            :data:`MAX_INSTANT_AHEAD_MS`). Hudi takes instant times from the clock alone
            (``HoodieInstantTimeGenerator.createNewInstantTime`` with a ``TimeGenerator`` such
            as ``SkewAdjustingTimeGenerator``), never from the timeline, so one stray
            far-future instant must not drag every later instant to its year.

    Raises:
        TimelineError: no time after ``after`` can be formatted (e.g. ``after`` is all nines),
            or ``after`` is more than ``max_ahead_ms`` ahead of the clock (names ``after``).
    """
    global _last_claimed_ms
    now_ms = int(datetime.now(_dt_timezone.utc).timestamp() * 1000)
    with _time_lock:
        claim = _claim_across_processes(max(now_ms, _last_claimed_ms + 1), now_ms)
        _last_claimed_ms = claim
    candidate = claim
    if after is not None:
        with contextlib.suppress(ValueError, OverflowError):
            after_ms = int(instant_time_to_datetime(after, timezone).timestamp() * 1000)
            candidate = max(candidate, after_ms + 1)
        if max_ahead_ms is not None and candidate - now_ms > max_ahead_ms:
            ahead = timedelta(milliseconds=candidate - now_ms)
            raise TimelineError(
                f"the latest instant time on the timeline, {after}, is {ahead} ahead of this "
                f"host's clock ({format_instant_time(now_ms, timezone)}): refusing to date new "
                f"instants after it. Remove the stray instant's files (named with {after}) "
                "from the timeline folder or fix the clock that wrote it"
            )
    for _ in range(10_000):
        try:
            result = format_instant_time(candidate, timezone)
        except (ValueError, OverflowError, OSError) as e:
            raise TimelineError(f"cannot generate an instant time after {after!r}") from e
        if after is None or result > after:
            return result
        candidate += 1  # e.g. a DST fold or a non-time `after`: step until it sorts after
    raise TimelineError(f"cannot generate an instant time after {after!r}")


def _claim_across_processes(candidate_ms: int, now_ms: int) -> int:
    if fcntl is None:  # pragma: no cover - Windows
        return candidate_ms
    uid = os.getuid() if hasattr(os, "getuid") else 0
    path = os.path.join(tempfile.gettempdir(), f"hudi_ds-instant-time-{uid}.lock")
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    except OSError:
        return candidate_ms
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        raw = os.pread(fd, 32, 0).strip()
        try:
            last = int(raw) if raw else 0
        except ValueError:
            last = 0
        if last - now_ms > _MAX_CLAIM_LEAD_MS:
            last = 0
        candidate_ms = max(candidate_ms, last + 1)
        os.pwrite(fd, b"%020d" % candidate_ms, 0)
    except OSError:
        pass
    finally:
        os.close(fd)  # releases the lock
    return candidate_ms


#: what :func:`normalize_instant` accepts, for its errors
INSTANT_FORMS = (
    "an instant time yyyyMMddHHmmss[SSS], epoch seconds/millis/micros/nanos (10/13/16/19 "
    "digits), yyyy-MM-dd, yyyy-MM-dd HH:mm:ss[.SSS], ISO-8601 (2024-03-15T14:25:30Z, "
    "+08:00 offsets) or a datetime"
)


def normalize_instant(value: object, key: str | None = None, timezone: TimeZoneLike = "UTC") -> str:
    """The instant time a user means by ``value`` (time travel, incremental ranges, offsets).

    Accepted forms, as Java's ``HoodieSqlCommonUtils.formatQueryInstant`` and hudi-rs's
    ``timeline::util::format_timestamp`` take them:

    * an instant time, 14 or 17 digits: returned as is (checked to be a date, except Hudi's
      reserved ``0000...`` instants); fewer than 8 digits (Hudi's ``000`` = "the beginning")
      are returned as is too, they sort before every instant;
    * epoch time as digits or an ``int``, told apart from instant times by length as hudi-rs
      does: up to 10 digits seconds, up to 13 milliseconds, up to 16 microseconds, up to 19
      nanoseconds; 8 digits stay ``yyyyMMdd`` (a date, as hudi_ds always took them);
    * ``yyyy-MM-dd`` (midnight) and ``yyyy-MM-dd HH:mm:ss[.SSS]``: wall-clock time of the
      timeline's zone (Java formats them without conversion,
      ``HoodieInstantTimeGenerator.getInstantForDateString``);
    * ISO-8601 with ``T`` or a space, any fraction (cut to milliseconds), optional ``Z`` or
      ``+HH:MM``: with an offset converted to the timeline's zone, without one taken as is;
    * a ``datetime`` (naive: the timeline's zone, aware: converted) or a ``date`` (midnight).

    Args:
        value: what the user gave.
        key: the option it came from (named in the error).
        timezone: the table's ``hoodie.table.timeline.timezone`` (``UTC``, ``LOCAL``...).

    Returns:
        ``yyyyMMddHHmmssSSS`` for a parsed time; a given instant time unchanged.

    Raises:
        ConfigError: none of these forms (naming the option ``key`` when given).
    """
    try:
        return _normalize_instant(value, timezone)
    except (ValueError, OverflowError, OSError):
        where = f" for option '{key}'" if key else ""
        raise ConfigError(
            f"invalid instant time {value!r}{where}: expected {INSTANT_FORMS}"
        ) from None


def _normalize_instant(value: object, timezone: TimeZoneLike) -> str:
    if isinstance(value, bool):
        raise ValueError("a boolean")
    if isinstance(value, datetime):
        return _instant_of_datetime(value, timezone)
    if isinstance(value, date):
        return _instant_of_datetime(datetime(value.year, value.month, value.day), timezone)
    v = str(value).strip()
    if v.isascii() and v.isdigit():
        return _instant_of_digits(v, timezone)
    # "t"/"z" in lower case: the streaming source lower-cases its start offset
    iso = _ISO_FRACTION.sub(lambda m: m.group(0)[:7], v.upper())
    return _instant_of_datetime(datetime.fromisoformat(iso), timezone)


# a fraction of a second past microseconds (nanoseconds from pandas, Java): cut to six digits
_ISO_FRACTION = re.compile(r"\.\d{7,}")


def _instant_of_digits(v: str, timezone: TimeZoneLike) -> str:
    n = len(v)
    if n in (14, 17):
        if not v.startswith("0000"):  # Hudi's reserved instants (init, bootstrap) are not dates
            datetime.strptime(v[:14], "%Y%m%d%H%M%S")
        return v
    if n < 8:
        return v
    if n == 8:
        return datetime.strptime(v, "%Y%m%d").strftime("%Y%m%d%H%M%S") + "000"
    if n > 19:
        raise ValueError("too many digits")
    # hudi-rs timeline::util::parse_epoch_time: the unit follows from the number of digits
    scale = 1 if n <= 10 else 1_000 if n <= 13 else 1_000_000 if n <= 16 else 1_000_000_000
    epoch_ms = int(v) * 1000 // scale
    return format_instant_time(epoch_ms, timezone)


def _instant_of_datetime(dt: datetime, timezone: TimeZoneLike) -> str:
    if dt.tzinfo is not None:
        dt = dt.astimezone(_tz(timezone))  # _tz: None is the local zone
    return f"{dt.strftime('%Y%m%d%H%M%S')}{dt.microsecond // 1000:03d}"
