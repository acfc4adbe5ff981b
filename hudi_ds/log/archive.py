"""The archived timeline: layout 1's archive is Hudi log files, read here.

Timeline layout 1 (table version 6) archives instants into ``.hoodie/archived/
.commits_.archive.N_<token>``: Hudi log files whose Avro data blocks hold
``HoodieArchivedMetaEntry`` records (``commitTime``, ``actionType``, ``actionState`` and one
metadata field per action). Reading them needs the log reader, so it lives in the log layer,
above the timeline (Hudi: ``ArchivedTimelineLoaderV1``). Layout 2's LSM history is parquet and is
read by :func:`hudi_ds.timeline.archived.load_lsm_history`; :func:`load_archived` picks by layout.
Archival (:mod:`hudi_ds.services.archival`) writes these files.
"""

from __future__ import annotations

import io
import json
import re
import struct
from collections.abc import Mapping
from typing import Any, cast

import fastavro

from hudi_ds.errors import CorruptFileError
from hudi_ds.log.block import BlockType, LogBlock
from hudi_ds.log.reader import scan_log_bytes
from hudi_ds.storage import Storage
from hudi_ds.storage_types import FileInfo
from hudi_ds.timeline.archived import (
    ArchivedEntry,
    ArchivedTimeline,
    latest_in_lsm_file,
    load_lsm_history,
    lsm_files_after,
)
from hudi_ds.timeline.instant import (
    CLEAN,
    COMMIT,
    COMPACTION,
    DELTA_COMMIT,
    INDEXING,
    REPLACE_COMMIT,
    ROLLBACK,
    SAVEPOINT,
    Instant,
    State,
    completed_action,
)
from hudi_ds.timeline.timeline import HOODIE_FOLDER, timeline_dir

__all__ = [
    "archive_file_entries",
    "archive_file_name",
    "archive_files",
    "archive_number",
    "archived_records_v1",
    "latest_archived_commit_after",
    "load_archived",
    "load_archived_v1",
]

#: archive file name := ".commits_.archive." number [ "_" write token ]
_V1_ARCHIVE_RE = re.compile(r"^\.commits_\.archive\.(\d+)(?:_.*)?$")

# HoodieArchivedMetaEntry field holding the completed metadata, per archived action
_V1_METADATA_FIELD = {
    COMMIT: "hoodieCommitMetadata",
    DELTA_COMMIT: "hoodieCommitMetadata",
    REPLACE_COMMIT: "hoodieReplaceCommitMetadata",
    CLEAN: "hoodieCleanMetadata",
    ROLLBACK: "hoodieRollbackMetadata",
    SAVEPOINT: "hoodieSavePointMetadata",
    INDEXING: "hoodieIndexCommitMetadata",
    COMPACTION: "hoodieCompactionPlan",
}


def load_archived(
    storage: Storage,
    layout_version: int,
    timeline_path: str | None = None,
    *,
    archive_folder: str = "archived",
    history_path: str = "history",
) -> ArchivedTimeline:
    """Load the archived timeline of either timeline layout.

    * layout 1 (v6): ``.hoodie/<archive_folder>/.commits_.archive.N_<token>`` -- Hudi log files
      whose Avro data blocks hold ``HoodieArchivedMetaEntry`` records (Hudi:
      ``ArchivedTimelineLoaderV1``);
    * layout 2 (v8+): the LSM history ``<timeline>/<history_path>/``
      (:func:`hudi_ds.timeline.archived.load_lsm_history`, Hudi: ``ArchivedTimelineLoaderV2``).

    Args:
        storage: the table's storage.
        layout_version: 1 or 2.
        timeline_path: see :func:`hudi_ds.timeline.timeline.timeline_dir`.
        archive_folder: ``hoodie.archivelog.folder`` (layout 1), relative to ``.hoodie``.
        history_path: ``hoodie.timeline.history.path`` (layout 2), relative to the timeline.

    Raises:
        CorruptFileError: an archive file cannot be read.
    """
    if layout_version == 1:
        entries = load_archived_v1(storage, f"{HOODIE_FOLDER}/{archive_folder.strip('/')}")
    else:
        folder = f"{timeline_dir(layout_version, timeline_path)}/{history_path.strip('/')}"
        entries = load_lsm_history(storage, folder)
    return ArchivedTimeline(entries, layout_version)


def latest_archived_commit_after(
    storage: Storage,
    layout_version: int,
    begin: str,
    timeline_path: str | None = None,
    *,
    archive_folder: str = "archived",
    history_path: str = "history",
) -> str | None:
    """The requested time of an archived commit (commit, deltacommit, replacecommit) after
    ``begin`` -- the latest one of the newest archive file that holds any -- or None if the
    archived timeline has none: what an incremental query reaching the archived timeline
    needs to know, from one archive file rather than the whole history.

    * layout 2: the LSM files whose names' time range reaches past ``begin``, newest first
      (:func:`~hudi_ds.timeline.archived.lsm_files_after`), their instant columns only (not
      the archived contents); the others are not read;
    * layout 1: the archive files' names carry no time range (Java's ``HoodieArchivedTimeline``
      reads them all), so they are read newest first, up to the first that holds one --
      archival writes newer instants into newer files, but a commit archived late (a
      savepoint hole closed) may sit in a newer file than younger commits, so no file is
      skipped before one is found.

    Raises:
        CorruptFileError: an archive file cannot be read.
    """
    from hudi_ds.timeline.timeline import DATA_ACTIONS

    if layout_version != 1:
        folder = f"{timeline_dir(layout_version, timeline_path)}/{history_path.strip('/')}"
        for name in lsm_files_after(storage, folder, begin):
            found = latest_in_lsm_file(storage, folder, name, begin, DATA_ACTIONS)
            if found is not None:
                return found
        return None
    for f in reversed(archive_files(storage, f"{HOODIE_FOLDER}/{archive_folder.strip('/')}")):
        hits = [
            ts
            for ts, action, state in archive_file_entries(storage, f.path)
            if state is State.COMPLETED and completed_action(action) in DATA_ACTIONS and ts > begin
        ]
        if hits:
            return max(hits)
    return None


def load_archived_v1(storage: Storage, folder: str) -> list[ArchivedEntry]:
    """The archived instants of timeline layout 1: every archive file of ``folder``.

    An instant's entry is its COMPLETED record (instants archived without one are left out);
    its plan comes from its REQUESTED record when the archive has one.

    Raises:
        CorruptFileError: an archive file cannot be read.
    """
    files = archive_files(storage, folder)
    if not files:
        return []
    by_time: dict[str, dict[State, tuple[Instant, Mapping[str, Any]]]] = {}
    for f in files:
        scan = scan_log_bytes(storage.read_bytes(f.path), f.path)
        for block in scan.blocks:
            for rec in _archived_records(block, f.path):
                ts = rec.get("commitTime")
                action = rec.get("actionType")
                if not ts or not action:
                    continue
                state_name = (rec.get("actionState") or "COMPLETED").upper()
                try:
                    state = State(state_name)
                except ValueError:
                    continue
                inst = Instant(ts, action, state)
                by_time.setdefault(ts, {})[state] = (inst, rec)
    out = []
    for ts, states in by_time.items():
        if State.COMPLETED not in states:
            continue
        inst, rec = states[State.COMPLETED]
        action = completed_action(inst.action)
        meta = rec.get(_V1_METADATA_FIELD.get(action, ""))
        plan = None
        requested = states.get(State.REQUESTED)
        if requested is not None:
            req = requested[1]
            plan = (
                req.get("hoodieCompactionPlan")
                or req.get("hoodieCleanerPlan")
                or req.get("hoodieRequestedReplaceMetadata")
            )
        plan = plan or rec.get("hoodieCompactionPlan") or rec.get("hoodieCleanerPlan")
        out.append(ArchivedEntry(Instant(ts, action, State.COMPLETED, ts), meta, plan))
    return out


def archive_file_entries(storage: Storage, path: str) -> list[tuple[str, str, State]]:
    """``(commitTime, actionType, actionState)`` of every ``HoodieArchivedMetaEntry`` record
    of one v6 archive file (``.hoodie/archived/.commits_.archive.N_token``), in file order.

    Archival reads its newest archive files with this to resume a run killed after its
    archive file was written: records already there are not written twice.

    Raises:
        CorruptFileError: the file cannot be read.
    """
    out = []
    scan = scan_log_bytes(storage.read_bytes(path), path)
    for block in scan.blocks:
        for rec in _archived_records(block, path):
            ts, action = rec.get("commitTime"), rec.get("actionType")
            try:
                state = State((rec.get("actionState") or "COMPLETED").upper())
            except ValueError:
                continue
            if ts and action:
                out.append((ts, action, state))
    return out


def archived_records_v1(storage: Storage, folder: str) -> list[Mapping[str, Any]]:
    """Every ``HoodieArchivedMetaEntry`` record of the v6 archive in ``folder``, oldest file
    first, as decoded dicts (``commitTime``, ``actionType``, ``actionState``,
    ``stateTransitionTime`` and the per-action metadata fields): what an upgrade to the LSM
    history converts (Java ``LegacyArchivedMetaEntryReader``).

    Raises:
        CorruptFileError: an archive file cannot be read.
    """
    out: list[Mapping[str, Any]] = []
    for f in archive_files(storage, folder):
        scan = scan_log_bytes(storage.read_bytes(f.path), f.path)
        for block in scan.blocks:
            out.extend(_archived_records(block, f.path))
    return out


def archive_files(storage: Storage, folder: str) -> list[FileInfo]:
    """The v6 archive files of ``folder`` (``.hoodie/<archive folder>``), oldest first."""
    files = [f for f in storage.list_files(folder) if archive_number(f.name) is not None]
    return sorted(files, key=lambda f: archive_number(f.name) or 0)


def archive_number(name: str) -> int | None:
    """The number N of archive file ``name`` (``.commits_.archive.N_<token>``), None if the
    name is not an archive file's."""
    m = _V1_ARCHIVE_RE.match(name)
    return int(m.group(1)) if m else None


def archive_file_name(number: int, write_token: str) -> str:
    """The name of archive file ``number``: ``.commits_.archive.<number>_<write token>``."""
    return f".commits_.archive.{number}_{write_token}"


def _archived_records(block: LogBlock, path: str) -> list[Mapping[str, Any]]:
    """Decode the ``HoodieArchivedMetaEntry`` records of an Avro data block, as dicts.

    Content: int32 version (1-3), int32 record count (version >= 2), then per record an int32
    length and one Avro binary datum written with the block's ``SCHEMA`` header.
    """
    if block.block_type != BlockType.AVRO_DATA:
        return []
    if block.schema is None:
        raise CorruptFileError(f"{path}: archived data block without a SCHEMA header")
    buf = bytes(block.content)
    out: list[Mapping[str, Any]] = []
    try:
        schema = fastavro.parse_schema(json.loads(block.schema))
        (version,) = struct.unpack_from(">i", buf, 0)
        pos = 4
        count = -1
        if version >= 2:
            (count,) = struct.unpack_from(">i", buf, 4)
            pos = 8
        while pos < len(buf) and count != 0:
            (n,) = struct.unpack_from(">i", buf, pos)
            pos += 4
            rec = fastavro.schemaless_reader(io.BytesIO(buf[pos : pos + n]), schema, None)
            pos += n
            count -= 1
            out.append(cast(dict[str, Any], rec))
    except (struct.error, EOFError, ValueError, TypeError) as e:
        raise CorruptFileError(f"{path}: unreadable archived data block: {e}") from e
    return out
