"""The archived timeline.

:class:`ArchivedTimeline` -- what was archived; :func:`load_lsm_history` reads the v8+ LSM
``.hoodie/timeline/history/*.parquet``. The v6 archive files are Hudi log files, so they are
read one layer up, in :mod:`hudi_ds.log.archive`, whose ``load_archived`` loads the archived
timeline of either layout.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from hudi_ds.errors import CorruptFileError, InstantNotFoundError
from hudi_ds.storage import Storage
from hudi_ds.timeline.instant import Instant, State, completed_action
from hudi_ds.timeline.lsm import parse_lsm_file_name, parse_manifest_name
from hudi_ds.timeline.timeline import Timeline, _Content


@dataclass(frozen=True)
class ArchivedEntry:
    """One archived instant.

    Attributes:
        instant: the archived (completed) instant.
        metadata: its completed content -- raw bytes (v8+ LSM history: the bytes of the original
            instant file) or a decoded Avro record (v6 archive: the ``HoodieArchivedMetaEntry``
            field matching the action).
        plan: the requested content (compaction / clustering / clean plans), same forms.
    """

    instant: Instant
    metadata: bytes | Mapping[str, Any] | None = None
    plan: bytes | Mapping[str, Any] | None = None


class ArchivedTimeline(Timeline):
    """The archived instants (completed only); ``read_*`` decode their archived contents."""

    def __init__(self, entries: Iterable[ArchivedEntry], layout_version: int) -> None:
        self._entries = {e.instant.requested_time: e for e in entries}
        super().__init__((e.instant for e in self._entries.values()), layout_version)

    @property
    def entries(self) -> dict[str, ArchivedEntry]:
        """Archived entries by requested time."""
        return dict(self._entries)

    def _derive(self, instants: Iterable[Instant], presorted: bool = False) -> Timeline:
        keep = {i.requested_time for i in instants}
        return ArchivedTimeline((e for ts, e in self._entries.items() if ts in keep), self._layout)

    def _content(self, requested_time: str, state: State, actions: Iterable[str]) -> _Content:
        e = self._entries.get(requested_time)
        wanted = {a for action in actions for a in (action, completed_action(action))}
        if e is None or e.instant.action not in wanted:
            raise InstantNotFoundError(f"no archived {'/'.join(sorted(wanted))} {requested_time}")
        if state is State.COMPLETED:
            return e.metadata
        if state is State.REQUESTED:
            return e.plan
        return None

    def _state_of(self, instant: Instant | str) -> State:
        return State.COMPLETED if isinstance(instant, str) else instant.state


def load_lsm_history(storage: Storage, folder: str) -> list[ArchivedEntry]:
    """The archived instants of timeline layout 2 (v8+): the LSM history in ``folder``.

    The manifest named by ``_version_`` lists the live ``<min>_<max>_<level>.parquet`` files
    (columns ``instantTime, completionTime, action, metadata, plan``); without a manifest, all
    parquet files are read (Hudi: ``ArchivedTimelineLoaderV2``). Layout 1's archive is Hudi log
    files, read by :mod:`hudi_ds.log.archive`, which also picks the loader by layout.

    Raises:
        CorruptFileError: a history file or the manifest cannot be read.
    """
    by_time: dict[str, ArchivedEntry] = {}
    for name in _lsm_live_files(storage, folder):
        for e in load_lsm_file(storage, folder, name):
            by_time[e.instant.requested_time] = e
    return list(by_time.values())


def lsm_files_after(storage: Storage, folder: str, after: str) -> list[str]:
    """The live LSM history files of ``folder`` that can hold instants requested after
    ``after`` -- those whose name's largest instant time is after it, as
    ``ArchivedTimelineLoaderV2`` skips files by the time range in their names -- newest
    (largest instant time) first."""
    ranged = [(r[1], n) for n in _lsm_live_files(storage, folder) if (r := parse_lsm_file_name(n))]
    return [n for last, n in sorted(ranged, reverse=True) if last > after]


def latest_in_lsm_file(
    storage: Storage, folder: str, name: str, after: str, actions: Iterable[str]
) -> str | None:
    """The latest requested time after ``after`` of an instant of ``actions`` (completed
    actions) in one LSM history file, from its instant columns alone (the archived contents,
    nearly all of the file, are not read); None if there is none or the file is gone.

    Raises:
        CorruptFileError: the file cannot be read.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    table = _read_lsm_file(storage, f"{folder}/{name}", ["instantTime", "action"])
    if table is None or not {"instantTime", "action"} <= set(table.column_names):
        return None
    wanted = sorted(set(actions) | {completed_action(a) for a in actions})
    ts = table["instantTime"]
    mask = pc.and_(
        pc.greater(ts, pa.scalar(after, ts.type)),
        pc.is_in(table["action"], value_set=pa.array(wanted, table["action"].type)),
    )
    latest = pc.max(pc.filter(ts, mask)).as_py()
    return str(latest) if latest else None


def _read_lsm_file(storage: Storage, path: str, columns: list[str] | None = None) -> Any:
    """The table of an LSM history file (``columns`` of it, those it has), None if gone."""
    import pyarrow.parquet as pq

    try:
        with storage.open_input_file(path) as fh:
            if columns is None:
                return pq.read_table(fh)
            pf = pq.ParquetFile(fh)
            return pf.read(columns=[c for c in columns if c in pf.schema_arrow.names])
    except FileNotFoundError:
        return None
    except Exception as e:
        raise CorruptFileError(f"{path}: unreadable LSM timeline file: {e}") from e


def load_lsm_file(storage: Storage, folder: str, name: str) -> list[ArchivedEntry]:
    """The archived instants of one LSM history file (none if it is gone).

    Raises:
        CorruptFileError: the file cannot be read.
    """
    table = _read_lsm_file(storage, f"{folder}/{name}")
    if table is None:
        return []
    with_done = "completionTime" in table.column_names
    out = []
    for row in table.to_pylist():
        ts = row.get("instantTime")
        action = row.get("action")
        if not ts or not action:
            continue
        done = row.get("completionTime") if with_done else None
        inst = Instant(ts, completed_action(action), State.COMPLETED, done or ts)
        out.append(ArchivedEntry(inst, row.get("metadata"), row.get("plan")))
    return out


def _lsm_live_files(storage: Storage, folder: str) -> list[str]:
    listed = storage.list_files(folder)
    version: int | None = None
    names = {f.name for f in listed}
    if "_version_" in names:
        try:
            version = int(storage.read_text(f"{folder}/_version_").strip())
        except (ValueError, FileNotFoundError):
            version = None
    if version is None:
        versions = [v for n in names if (v := parse_manifest_name(n)) is not None]
        version = max(versions) if versions else None
    if version is not None and f"manifest_{version}" in names:
        try:
            manifest = json.loads(storage.read_text(f"{folder}/manifest_{version}"))
            return [e["fileName"] for e in manifest.get("files", [])]
        except (ValueError, KeyError, TypeError) as e:
            raise CorruptFileError(f"{folder}/manifest_{version}: {e}") from e
    return sorted(n for n in names if parse_lsm_file_name(n) is not None)
