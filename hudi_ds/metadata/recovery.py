"""Undoing metadata table instants that no reader counts: the MDT instants a crash left
pending (:func:`undo_pending`) and a completed MDT deltacommit whose data instant did not
complete (:func:`undo_completed`), for :class:`hudi_ds.metadata.writer.MetadataWriter`.

Both delete the files the instant wrote -- in every MDT partition it may have written
(``files`` and the index partitions) -- and then its instant files, so that the instant can
be written again.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from hudi_ds.errors import CorruptFileError
from hudi_ds.layout.naming import file_name_of, parse_base_file_name, parse_log_file_name
from hudi_ds.storage import Storage
from hudi_ds.timeline.instant import Instant, State
from hudi_ds.timeline.metadata import CommitMetadata
from hudi_ds.timeline.timeline import Timeline
from hudi_ds.timeline.writer import TimelineWriter

__all__ = ["undo_completed", "undo_pending"]

log = logging.getLogger("hudi_ds.metadata")


def _written_paths(storage: Storage, path: str | None) -> list[str]:
    """The paths the commit metadata at ``path`` names (none when it is missing or damaged:
    the files carrying the instant's time are found by name)."""
    if path is None:
        return []
    try:
        return CommitMetadata.from_bytes(storage.read_bytes(path)).write_paths()
    except (CorruptFileError, FileNotFoundError):
        return []


def undo_pending(
    storage: Storage, writer: TimelineWriter, tl: Timeline, partitions: Sequence[str]
) -> bool:
    """Undo the MDT instants of ``tl`` a crash left pending: delete the files they wrote
    (named in their inflight metadata, or carrying their instant, in MDT ``partitions``) and
    their instant files. Their blocks never counted (readers merge completed MDT instants
    only).

    Returns:
        Whether something was undone.
    """
    pending = list(tl.pending())
    if not pending:
        return False
    paths = [
        f"{part}/{f.name}"
        for part in partitions
        for f in (storage.list_files(part) if storage.is_dir(part) else [])
    ]
    for inst in pending:
        ts = inst.requested_time
        doomed = set(_written_paths(storage, tl.file_paths(ts).get(State.INFLIGHT)))
        for path in paths:
            b = parse_base_file_name(file_name_of(path))
            lf = parse_log_file_name(file_name_of(path))
            if (b is not None and b.instant_time == ts) or (
                lf is not None and lf.instant_time == ts and tl.layout_version >= 2
            ):
                doomed.add(path)
        for path in sorted(doomed):
            storage.delete(path)
        writer.delete_instant_files(inst)
        log.info("metadata table: undid pending %s %s", inst.action, ts)
    return True


def undo_completed(storage: Storage, writer: TimelineWriter, inst: Instant, tl: Timeline) -> None:
    """Undo completed MDT deltacommit ``inst`` that no reader counts yet (its data instant
    is not completed): the files it wrote and its instant files are deleted."""
    written = _written_paths(storage, tl.file_paths(inst.requested_time).get(State.COMPLETED))
    writer.delete_instant_files(inst.requested_time)
    for p in written:
        storage.delete(p)
    log.info("metadata table: undid %s %s to mirror it again", inst.action, inst.requested_time)
