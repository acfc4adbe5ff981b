"""The files one commit wrote, as columns: path, ``fileSizeInBytes`` and ``logOffset``.

A commit's metadata holds one write stat per file it wrote (Java ``HoodieWriteStat``): a bulk
insert of 100,000 file groups writes 100,000 of them, some 100 MB of JSON. Checking the
committed files of a read needs three fields of each; decoding every stat into a
:class:`~hudi_ds.timeline.metadata.WriteStat` costs seconds. :class:`WrittenFiles` keeps just
those three columns (a few hundred bytes a file), and the timeline caches it per completed
instant file for the whole process (:data:`~hudi_ds.timeline.instant_cache.written_files`), so
a second read of an unchanged table decodes nothing.
"""

from __future__ import annotations

import json
from array import array
from collections.abc import Iterable, Mapping
from typing import Any

from hudi_ds.errors import CorruptFileError
from hudi_ds.timeline.metadata import CommitMetadata, WriteStat

__all__ = ["WrittenFiles"]


class WrittenFiles:
    """The write stats of one commit reduced to ``(path, size, log offset)`` columns.

    Stats without a path are left out; a missing or null ``fileSizeInBytes`` / ``logOffset``
    is 0, as Java's primitive defaults. One path may appear more than once (several stats of
    one file in one commit): :meth:`rows_of` gives every row of a path.

    Shared between threads and table handles: nobody changes it after construction.
    """

    __slots__ = ("_index", "_repeated", "offsets", "paths", "sizes")

    def __init__(self, rows: Iterable[tuple[str, int, int]]) -> None:
        self.paths: list[str] = []
        self.sizes = array("q")
        self.offsets = array("q")
        for path, size, offset in rows:
            self.paths.append(path)
            self.sizes.append(size)
            self.offsets.append(offset)
        #: the row of each path (its last row when it repeats)
        self._index: dict[str, int] = dict(zip(self.paths, range(len(self.paths)), strict=True))
        #: every row of the paths that appear more than once
        self._repeated: dict[str, list[int]] = {}
        if len(self._index) != len(self.paths):
            for i, p in enumerate(self.paths):
                self._repeated.setdefault(p, []).append(i)
            self._repeated = {p: rows for p, rows in self._repeated.items() if len(rows) > 1}

    def __len__(self) -> int:
        return len(self.paths)

    def __contains__(self, path: object) -> bool:
        return path in self._index

    def rows_of(self, path: str) -> list[int]:
        """Every row of ``path`` (empty if this commit did not write it)."""
        rows = self._repeated.get(path)
        if rows is not None:
            return rows
        i = self._index.get(path)
        return [] if i is None else [i]

    def largest_sizes(self) -> dict[str, int]:
        """Path -> its largest size in this commit."""
        out = dict(zip(self.paths, self.sizes, strict=True))
        for p, rows in self._repeated.items():
            out[p] = max(self.sizes[i] for i in rows)
        return out

    # -- decoding -----------------------------------------------------------------------------
    @classmethod
    def from_bytes(cls, data: bytes) -> WrittenFiles:
        """From a commit metadata file: JSON (v6) is walked as plain dicts, without building
        write stat objects; Avro (v8/v9) is decoded as :class:`CommitMetadata`.

        Raises:
            CorruptFileError: neither JSON nor Avro commit metadata.
        """
        text = data.strip()
        if not text.startswith(b"{"):
            return cls.from_metadata(CommitMetadata.from_bytes(data))
        try:
            obj = json.loads(text)
        except (UnicodeDecodeError, ValueError) as e:
            raise CorruptFileError(f"unreadable commit metadata JSON: {e}") from e
        if not isinstance(obj, dict):
            raise CorruptFileError("commit metadata JSON is not an object")
        return cls.from_json(obj)

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> WrittenFiles:
        """From the v6 JSON object (the fields :meth:`WriteStat.from_json` would read)."""
        return cls(
            (st["path"], int(st.get("fileSizeInBytes") or 0), int(st.get("logOffset") or 0))
            for stats in (obj.get("partitionToWriteStats") or {}).values()
            for st in stats or ()
            if isinstance(st, dict) and st.get("path")
        )

    @classmethod
    def from_metadata(cls, md: CommitMetadata) -> WrittenFiles:
        """From decoded commit metadata."""
        return cls(_rows(md.write_stats()))


def _rows(stats: Iterable[WriteStat]) -> Iterable[tuple[str, int, int]]:
    for st in stats:
        if st.path:
            yield st.path, int(st.file_size_in_bytes or 0), int(st.log_offset or 0)
