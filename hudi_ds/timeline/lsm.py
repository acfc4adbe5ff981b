"""The LSM timeline (timeline layout 2, table versions 8 and 9): the archived instants' writer.

Layout (Hudi 1.x ``LSMTimelineWriter`` / ``LSMTimeline``), in ``.hoodie/timeline/history``::

    <minInstant>_<maxInstant>_<layer>.parquet   one row per archived instant, sorted by time:
                                                instantTime, completionTime, action (the
                                                completed action), metadata (the completed
                                                file's bytes), plan (the plan's bytes), version
    manifest_<N>                                the live files of snapshot version N (Jackson
                                                pretty JSON ``{"files" : [ {"fileName" : ...,
                                                "fileLen" : ...} ]}``)
    _version_                                   N of the latest snapshot, as text

An archival writes one layer-0 file, then the next manifest and ``_version_`` (the commit point:
a file no manifest lists is not read). When a layer holds ``hoodie.timeline.compaction.batch.size``
files, its oldest ones (at most that many, under 1 GB together) are merged into one file of the
next layer, and old manifests and the files only they list are removed
(``LSMTimelineWriter.compactAndClean``). The reader is
:func:`hudi_ds.timeline.archived.load_lsm_history`.
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import pyarrow as pa

from hudi_ds.errors import CorruptFileError
from hudi_ds.storage import Storage
from hudi_ds.timeline.avro_record import java_schema_text
from hudi_ds.timeline.instant import (
    CLEAN,
    CLUSTERING,
    COMPACTION,
    LOG_COMPACTION,
    REPLACE_COMMIT,
    completed_action,
)
from hudi_ds.timeline.metadata import jackson_pretty

__all__ = [
    "LSM_INSTANT_SCHEMA",
    "LsmEntry",
    "LsmTimelineWriter",
    "entry_of",
    "lsm_file_name",
    "parse_lsm_file_name",
    "parse_manifest_name",
]

#: ``<min>_<max>_<layer>.parquet``
_FILE_RE = re.compile(r"^(\d+)_(\d+)_(\d+)\.parquet$")
_MANIFEST_RE = re.compile(r"^manifest_(\d+)$")
VERSION_FILE = "_version_"
#: ``LSMTimeline.LSM_TIMELINE_INSTANT_VERSION_1``
LSM_INSTANT_VERSION = 1
#: a compaction's inputs stay under this size together (Java's timeline compaction target size)
COMPACTION_TARGET_BYTES = 1024 * 1024 * 1024
#: manifest versions kept by the cleaning after a compaction, besides one per compacted layer
MANIFEST_RETAINED_VERSIONS = 3

#: The parquet schema of the history files (``HoodieLSMTimelineInstant``).
LSM_INSTANT_SCHEMA = pa.schema(
    [
        pa.field("instantTime", pa.string()),
        pa.field("completionTime", pa.string()),
        pa.field("action", pa.string()),
        pa.field("metadata", pa.binary()),
        pa.field("plan", pa.binary()),
        pa.field("version", pa.int32(), nullable=False),
    ]
)


@dataclass(frozen=True)
class LsmEntry:
    """One archived instant: a row of a history file.

    Attributes:
        instant_time: requested time.
        completion_time: completion time.
        action: the completed action (``commit`` for a compaction, ``replacecommit`` for a
            clustering).
        metadata: the completed instant file's bytes (None when it was empty).
        plan: the plan's bytes (clean plan, compaction plan, requested replace metadata or
            the inflight replacecommit's metadata), or None.
    """

    instant_time: str
    completion_time: str | None
    action: str
    metadata: bytes | None
    plan: bytes | None


def lsm_file_name(min_instant: str, max_instant: str, layer: int) -> str:
    """``<min>_<max>_<layer>.parquet`` (``LSMTimelineWriter.newFileName``)."""
    return f"{min_instant}_{max_instant}_{layer}.parquet"


def parse_manifest_name(name: str) -> int | None:
    """N of a ``manifest_<N>`` file name, or None for other files."""
    m = _MANIFEST_RE.match(name)
    return int(m.group(1)) if m else None


def parse_lsm_file_name(name: str) -> tuple[str, str, int] | None:
    """``(min, max, layer)`` of a history file name, or None for other files."""
    m = _FILE_RE.match(name)
    return (m.group(1), m.group(2), int(m.group(3))) if m else None


def _encode(entries: Sequence[LsmEntry]) -> bytes:
    table = pa.table(
        {
            "instantTime": [e.instant_time for e in entries],
            "completionTime": [e.completion_time for e in entries],
            "action": [e.action for e in entries],
            "metadata": pa.array([e.metadata for e in entries], pa.binary()),
            "plan": pa.array([e.plan for e in entries], pa.binary()),
            "version": pa.array([LSM_INSTANT_VERSION] * len(entries), pa.int32()),
        },
        schema=LSM_INSTANT_SCHEMA.with_metadata(
            # Hudi writes it with parquet-avro (HoodieAvroParquetWriter): the Avro schema in
            # the footer, as its readers look for it
            {
                "parquet.avro.schema": java_schema_text("HoodieLSMTimelineInstant"),
                "writer.model.name": "avro",
            }
        ),
    )
    import pyarrow.parquet as pq  # only archival and readers of the history need it

    buf = io.BytesIO()
    pq.write_table(table, buf, compression="gzip")
    return buf.getvalue()


class LsmTimelineWriter:
    """Writes the LSM history of a layout-2 timeline (Hudi's ``LSMTimelineWriter``).

    Args:
        storage: the table's storage.
        folder: the history folder relative to the base path (``.hoodie/timeline/history``).
        batch_size: ``hoodie.timeline.compaction.batch.size`` -- files of one layer merged
            into the next at once.
    """

    def __init__(self, storage: Storage, folder: str, batch_size: int = 10) -> None:
        self.storage = storage
        self.folder = folder.strip("/")
        self.batch_size = batch_size

    def _path(self, name: str) -> str:
        return f"{self.folder}/{name}"

    # -- manifests ----------------------------------------------------------------------------
    def versions(self) -> list[int]:
        """Every manifest version present, ascending."""
        names = (f.name for f in self.storage.list_files(self.folder))
        return sorted(v for n in names if (v := parse_manifest_name(n)) is not None)

    def latest_version(self) -> int:
        """The latest snapshot version: ``_version_``, else the highest manifest; -1 for none
        (``LSMTimeline.latestSnapshotVersion``)."""
        try:
            return int(self.storage.read_text(self._path(VERSION_FILE)).strip())
        except (FileNotFoundError, ValueError):
            versions = self.versions()
            return versions[-1] if versions else -1

    def manifest(self, version: int | None = None) -> list[tuple[str, int]]:
        """``(fileName, fileLen)`` of the files of a snapshot (default: the latest).

        Raises:
            CorruptFileError: the manifest is not readable.
        """
        v = self.latest_version() if version is None else version
        if v < 0:
            return []
        path = self._path(f"manifest_{v}")
        try:
            doc = json.loads(self.storage.read_text(path))
            return [(str(e["fileName"]), int(e["fileLen"])) for e in doc.get("files", [])]
        except FileNotFoundError:
            return []
        except (ValueError, KeyError, TypeError, AttributeError) as e:
            raise CorruptFileError(f"{path}: unreadable LSM timeline manifest: {e}") from e

    def _write_manifest(self, files: Sequence[tuple[str, int]], current: int) -> int:
        """Write ``manifest_<current+1>`` then ``_version_`` (``createManifestFile``)."""
        new = 1 if current < 0 else current + 1
        body = {"files": [{"fileName": n, "fileLen": size} for n, size in files]}
        path = self._path(f"manifest_{new}")
        # a run killed between the manifest and _version_ left this manifest behind
        self.storage.delete(path)
        self.storage.write_atomic(path, jackson_pretty(body).encode("utf-8"))
        self.storage.write_atomic(self._path(VERSION_FILE), str(new).encode("utf-8"))
        return new

    def _update_manifest(self, remove: Iterable[str], add: str) -> int:
        current = self.latest_version()
        gone = set(remove)
        files = [(n, s) for n, s in self.manifest(current) if n not in gone]
        info = self.storage.info(self._path(add))
        if info is None:
            raise FileNotFoundError(self._path(add))
        files.append((add, info.size))
        return self._write_manifest(files, current)

    # -- reading what is archived ---------------------------------------------------------------
    def archived_times(self, since: str | None = None) -> set[str]:
        """Requested times archived in the live files whose range reaches ``since`` (all files
        when None): what an earlier archival, killed after committing its file, archived."""
        out: set[str] = set()
        for name, size in self.manifest():
            parsed = parse_lsm_file_name(name)
            if parsed is None or (since is not None and parsed[1] < since):
                continue
            times = self._read(name, ["instantTime"], size).column("instantTime")
            out.update(times.to_pylist())
        return out

    def _read(
        self, name: str, columns: list[str] | None = None, size: int | None = None
    ) -> pa.Table:
        """One LSM file (``size``: its ``fileLen`` in the manifest, which saves a HEAD)."""
        import pyarrow.parquet as pq

        path = self._path(name)
        try:
            with self.storage.open_input_file(path, size or None) as fh:
                return pq.read_table(fh, columns=columns)
        except FileNotFoundError:
            raise
        except Exception as e:
            raise CorruptFileError(f"{path}: unreadable LSM timeline file: {e}") from e

    # -- writing ---------------------------------------------------------------------------------
    def write(self, entries: Sequence[LsmEntry]) -> str | None:
        """Write ``entries`` (sorted by instant time) as a new layer-0 file and commit it to a
        new manifest version (``LSMTimelineWriter.write``). A file of the same name that a
        manifest lists already (an archival killed after its commit point) is kept as is; one
        that none lists (killed before) is written again.

        Returns:
            The file's path, or None for no entries.
        """
        if not entries:
            return None
        entries = sorted(entries, key=lambda e: e.instant_time)
        name = lsm_file_name(entries[0].instant_time, entries[-1].instant_time, 0)
        if any(n == name for n, _ in self.manifest()):
            return self._path(name)
        self.storage.write_atomic(self._path(name), _encode(entries), crash_point_name="archive")
        self._update_manifest((), name)
        return self._path(name)

    def compact_and_clean(self) -> list[str]:
        """Merge full layers into the next one, then drop old snapshots
        (``LSMTimelineWriter.compactAndClean``).

        Returns:
            The compacted files written.
        """
        written: list[str] = []
        layer = 0
        while (name := self._compact(layer)) is not None:
            written.append(name)
            layer += 1
        self._clean(layer)
        return written

    def _compact(self, layer: int) -> str | None:
        files = sorted(
            (n, s)
            for n, s in self.manifest()
            if (p := parse_lsm_file_name(n)) is not None and p[2] == layer
        )
        if len(files) < self.batch_size:
            return None
        # LSMTimelineWriter.getCandidateFiles: consecutive oldest files, at most a batch, the
        # group under the target size (a lone file above it is skipped)
        candidates: list[str] = []
        sizes: dict[str, int] = {}
        total = 0
        for n, s in files:
            total += s
            candidates.append(n)
            sizes[n] = s
            if len(candidates) >= self.batch_size:
                break
            if total > COMPACTION_TARGET_BYTES:
                if len(candidates) < 2:
                    total = 0
                    candidates.clear()
                else:
                    break
        if len(candidates) < 2:
            return None
        ranges = [p for n in candidates if (p := parse_lsm_file_name(n)) is not None]
        name = lsm_file_name(min(r[0] for r in ranges), max(r[1] for r in ranges), layer + 1)
        table = pa.concat_tables(
            [self._read(n, None, sizes[n]).select(LSM_INSTANT_SCHEMA.names) for n in candidates]
        )
        rows = [
            LsmEntry(r["instantTime"], r["completionTime"], r["action"], r["metadata"], r["plan"])
            for r in table.to_pylist()
        ]
        self.storage.delete(self._path(name))
        self.storage.write_atomic(self._path(name), _encode(rows))
        self._update_manifest(candidates, name)
        return name

    def _clean(self, compacted_layers: int) -> None:
        versions = self.versions()
        keep_n = MANIFEST_RETAINED_VERSIONS + compacted_layers
        if len(versions) <= keep_n:
            return
        keep = sorted(versions, reverse=True)[:keep_n]
        live = {n for v in keep for n, _ in self.manifest(v)}
        for v in versions:
            if v not in keep:
                self.storage.delete(self._path(f"manifest_{v}"))
        for f in self.storage.list_files(self.folder):
            if parse_lsm_file_name(f.name) is not None and f.name not in live:
                self.storage.delete(f.path)


def entry_of(
    instant_time: str,
    completion_time: str | None,
    action: str,
    contents: Mapping[str, bytes],
) -> LsmEntry:
    """The row of an archived instant from its instant files' contents by state
    (``requested`` / ``inflight`` / ``completed``), as Hudi's
    ``MetadataConversionUtils.createLSMTimelineInstant`` builds it: ``metadata`` is the
    completed content; ``plan`` the clean / compaction plan (the requested content), for a
    replacecommit or clustering the requested replace metadata, replaced by the inflight
    content when that is not empty."""
    done = contents.get("completed") or None
    plan = contents.get("requested") or None
    if action in (REPLACE_COMMIT, CLUSTERING):
        plan = contents.get("inflight") or plan
    elif action == CLEAN:
        # the inflight file repeats the plan (left alone when a killed archival took the
        # requested file already)
        plan = plan or contents.get("inflight") or None
    elif action not in (COMPACTION, LOG_COMPACTION):
        plan = None
    return LsmEntry(instant_time, completion_time, completed_action(action), done, plan)
