"""The files one commit wrote, as columns: path, ``fileSizeInBytes`` and ``logOffset``.

A commit's metadata holds one write stat per file it wrote (Java ``HoodieWriteStat``): a bulk
insert of 100,000 file groups writes 100,000 of them, some 100 MB of JSON. Checking the
committed files of a read needs three fields of each; decoding every stat into a
:class:`~hudi_ds.timeline.metadata.WriteStat` costs seconds. :class:`WrittenFiles` keeps just
those three columns (a few hundred bytes a file), and the timeline caches it per completed
instant file for the whole process (:data:`~hudi_ds.timeline.instant_cache.written_files`), so
a second read of an unchanged table decodes nothing.

The JSON of table version 6 is not even parsed when it has the shape Jackson's pretty printer
gives it (Java ``HoodieCommitMetadata.toJsonString``, and
:func:`~hudi_ds.timeline.metadata.jackson_pretty`): the three fields are found by their
indentation (:func:`_jackson_columns`), a fifth of the time of ``json.loads``; any other text
is parsed.
"""

from __future__ import annotations

import json
import re
from array import array
from collections.abc import Iterable, Mapping
from operator import itemgetter
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
        self._index_paths()

    @classmethod
    def from_columns(cls, paths: list[str], sizes: array[int], offsets: array[int]) -> WrittenFiles:
        """From the three columns (of one length; taken, not copied)."""
        if not len(paths) == len(sizes) == len(offsets):
            raise ValueError("written file columns of different lengths")
        out = cls.__new__(cls)
        out.paths, out.sizes, out.offsets = paths, sizes, offsets
        out._index_paths()
        return out

    def _index_paths(self) -> None:
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
            columns = _jackson_columns(text)
        except UnicodeDecodeError as e:
            raise CorruptFileError(f"unreadable commit metadata JSON: {e}") from e
        if columns is not None:
            return cls.from_columns(*columns)
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


# Jackson's DefaultPrettyPrinter: every object member on its own line, indented two spaces per
# enclosing object (arrays stay inline: "[ {", "}, {"), "key" : value. A write stat is an
# object three objects deep (root > partitionToWriteStats > stat, its list adds no level), so
# its members are the lines indented six spaces; a raw newline never occurs inside a JSON
# string, so such a line always starts a member.
_STATS_KEY = b'\n  "partitionToWriteStats" :'
_STATS_START = _STATS_KEY + b" {\n"
_STATS_END = b"\n  }"
#: per member line of a stat: (path, size, offset, "{" when it is the stat's first member)
_STAT_MEMBER = re.compile(
    rb'\n {6}"(?:path" : "([^"\\\n]*)"(?=[,\n])|fileSizeInBytes" : (-?\d+|null)(?=[,\n])'
    rb'|logOffset" : (-?\d+|null)(?=[,\n])|(?<=(\{)\n {6}"))'
)
_Member = tuple[bytes, bytes, bytes, bytes]


def _jackson_columns(text: bytes) -> tuple[list[str], array[int], array[int]] | None:
    """Path, ``fileSizeInBytes`` and ``logOffset`` of every write stat of commit metadata JSON
    in Jackson's pretty-printed shape, as :meth:`WrittenFiles.from_json` reads them from the
    parsed object; None when ``text`` is not in that shape, or holds what this scan does not
    decode (a path with an escape, a stat without a string path and an integer size, a
    member out of Jackson's order or repeated), for the caller to parse it.

    Raises:
        UnicodeDecodeError: a path is not UTF-8.
    """
    if not (text.startswith(b'{\n  "') and text.endswith(b"\n}")):
        return None
    start = text.find(_STATS_START)
    if start < 0:
        return None
    end = text.find(_STATS_END, start)
    # another partitionToWriteStats member (the last one counts): parsed
    if end < 0 or text.find(_STATS_KEY, end) >= 0:
        return None
    members: list[_Member] = _STAT_MEMBER.findall(text, start, end)
    # each stat in Jackson's member order (HoodieWriteStat's, then HoodieDeltaWriteStat's):
    # its opening, its path, its size, then its offset in every stat or in none
    for width in (4, 3):
        if len(members) % width == 0 and _in_order(members, width):
            n = len(members) // width
            raw_paths = [m[0] for m in members[1::width]]
            sizes = _longs(m[1] for m in members[2::width])
            offsets = (
                _longs(m[2] for m in members[3::width]) if width == 4 else array("q", bytes(8 * n))
            )
            break
    else:
        stats = _stats_in_order(members)
        if stats is None:
            return None
        raw_paths, sizes, offsets = stats
    # one decode for all (a path holds no newline)
    paths = b"\n".join(raw_paths).decode("utf-8", "surrogatepass").split("\n") if raw_paths else []
    if all(paths):
        return paths, sizes, offsets
    # a stat with an empty path is not a file (as from_json skips it)
    keep = [i for i, p in enumerate(paths) if p]
    return (
        [paths[i] for i in keep],
        array("q", (sizes[i] for i in keep)),
        array("q", (offsets[i] for i in keep)),
    )


def _in_order(members: list[_Member], width: int) -> bool:
    """Whether ``members`` are stats of ``width`` members each: opening, path, size (and
    offset when ``width`` is 4); a member's kind is the one group it has (a path may be
    empty: no group)."""
    opening, path, size = members[0::width], members[1::width], members[2::width]
    return (
        all(map(_OPENING, opening))
        and not any(map(_SIZE, path))
        and not any(map(_OFFSET, path))
        and not any(map(_OPENING, path))
        and all(map(_SIZE, size))
        and (width == 3 or all(map(_OFFSET, members[3::width])))
    )


_SIZE, _OFFSET, _OPENING = itemgetter(1), itemgetter(2), itemgetter(3)


def _longs(values: Iterable[bytes]) -> array[int]:
    return array("q", [0 if v == b"null" else int(v) for v in values])


def _stats_in_order(
    members: list[_Member],
) -> tuple[list[bytes], array[int], array[int]] | None:
    """:func:`_in_order` for stats with and without an offset mixed (one at a time)."""
    raw_paths: list[bytes] = []
    sizes, offsets = array("q"), array("q")
    expect = 0  # 0: an opening, 1: a path, 2: a size, 3: an offset or an opening
    for path, size, offset, opening in members:
        if opening:
            if expect not in (0, 3):
                return None
            offsets.append(0)
            expect = 1
        elif size:
            if expect != 2:
                return None
            sizes.extend(_longs((size,)))
            expect = 3
        elif offset:
            if expect != 3:
                return None
            offsets[-1] = _longs((offset,))[0]
            expect = 0
        else:
            if expect != 1:
                return None
            raw_paths.append(path)
            expect = 2
    return (raw_paths, sizes, offsets) if expect in (0, 3) else None
