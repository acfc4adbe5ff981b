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

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

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
    if end - start >= _VECTOR_MIN_BYTES:
        found = _vector_columns(text, start, end)
        if found is not None:
            return _without_empty_paths(*found)
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
    return _without_empty_paths(paths, sizes, offsets)


def _without_empty_paths(
    paths: list[str], sizes: array[int], offsets: array[int]
) -> tuple[list[str], array[int], array[int]]:
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


# -- the same scan over whole arrays -----------------------------------------------------------
# A bulk insert's commit is about 100 MB: the regular expression above walks it in about a
# quarter of a second holding the interpreter lock. The same members found with numpy and
# Arrow compute cost about the same CPU time but mostly outside the lock, so a plan can
# decode its commits on another core while it lists the storage (:meth:`Committed.prefetch`).
# Each line it cannot decide exactly as the regular expression would leaves the whole text
# to the regular expression.
#: commit JSON smaller than this is scanned by the regular expression (the arrays' fixed
#: costs would outweigh it)
_VECTOR_MIN_BYTES = 1 << 20
_VECTOR_CHUNK_BYTES = 1 << 22
_MEMBER_START = b'\n      "'
_NEWLINE, _QUOTE, _OPEN = 10, 34, 123
_MEMBER_WORD = int.from_bytes(_MEMBER_START, "little")
#: kinds of a member line, as :data:`_STAT_MEMBER`'s alternatives (in its order of preference)
_K_NONE, _K_OPENS, _K_PATH, _K_SIZE, _K_OFFSET = 0, 1, 2, 3, 4
#: per kind with a value: (offset of a distinctive byte from the line's newline, that byte, the
#: line's exact pattern; a line holds its leading newline, and its end is where the regular
#: expression's lookahead saw a newline)
_VECTOR_KINDS = (
    (_K_PATH, 12, ord('"'), r'^\n {6}"path" : "(?P<v>[^"\\\n]*)"(?:,|$)'),
    (_K_SIZE, 12, ord("S"), r'^\n {6}"fileSizeInBytes" : (?P<v>-?\d+|null)(?:,|$)'),
    (_K_OFFSET, 11, ord("O"), r'^\n {6}"logOffset" : (?P<v>-?\d+|null)(?:,|$)'),
)
_KEY_FIRST = {_K_PATH: ord("p"), _K_SIZE: ord("f"), _K_OFFSET: ord("l")}
#: the member sequences :func:`_stats_in_order` accepts, as (kind, next kind) pairs
_NEXT_KINDS = np.array(
    [
        _K_OPENS * 8 + _K_PATH,
        _K_PATH * 8 + _K_SIZE,
        _K_SIZE * 8 + _K_OFFSET,
        _K_SIZE * 8 + _K_OPENS,
        _K_OFFSET * 8 + _K_OPENS,
    ]
)


def _vector_columns(
    text: bytes, start: int, end: int
) -> tuple[list[str], array[int], array[int]] | None:
    """What :func:`_jackson_columns` finds in ``text[start:end]`` (before dropping empty
    paths), found with whole-array operations, a few megabytes at a time (their temporary
    arrays stay small and reused); None when a line is not what they decide (the last line
    is a member, a path is not UTF-8, a number does not fit 64 bits, the members are out of
    order), for the regular expression to decide."""
    n = end - start
    if n < 8:
        return None
    buf = np.frombuffer(text, np.uint8, n, start)
    # the 8 bytes from each position read as one (unaligned) integer
    words = np.ndarray((n - 7,), "<u8", text, start, (1,))
    kinds: list[np.ndarray] = []
    rows: dict[int, list[np.ndarray]] = {k: [] for k, _, _, _ in _VECTOR_KINDS}
    values: dict[int, list[pa.Array]] = {k: [] for k, _, _, _ in _VECTOR_KINDS}
    members = 0
    lo = 0
    while lo < n:
        # a chunk ends where a member line starts (the next chunk's first line)
        hi = text.find(_MEMBER_START, start + lo + _VECTOR_CHUNK_BYTES, end)
        hi = n if hi < 0 else hi - start
        nl = np.flatnonzero(buf[lo:hi] == _NEWLINE)
        nl += lo
        # member lines: a newline, six spaces, a quote (all inside the range)
        cand = nl[: np.searchsorted(nl, n - 8, "right")]
        member_rows = np.flatnonzero(words[cand] == _MEMBER_WORD)  # rows of ``nl``
        if hi == n and len(member_rows) and member_rows[-1] == len(nl) - 1:
            return None  # the last line: its lookahead would be the end of the range
        at = nl[member_rows]
        chunk_kinds = np.zeros(len(at), np.int8)
        # each line of the chunk, its newline first (zero copy)
        ends = np.append(nl, hi) - lo
        lines = pa.Array.from_buffers(
            pa.large_binary(), len(nl), [None, pa.py_buffer(ends), pa.py_buffer(buf[lo:hi])]
        )
        # (a member line is not the last line: its key's bytes are inside the range)
        first = buf[at + 8]
        for kind, off, byte, pattern in _VECTOR_KINDS:
            maybe = np.flatnonzero(first == _KEY_FIRST[kind])
            maybe = maybe[buf[np.minimum(at[maybe] + off, n - 1)] == byte]
            got = pc.extract_regex(lines.take(_int64_array(member_rows[maybe])), pattern)
            ok = got.is_valid()
            found = maybe[_numpy_int64(pc.indices_nonzero(ok).cast(pa.int64()))]
            chunk_kinds[found] = kind
            rows[kind].append(found + members)
            values[kind].append(got.filter(ok).field("v"))
        opens = chunk_kinds == _K_NONE
        opens &= buf[at - 1] == _OPEN  # (the range starts with a line that is no member)
        chunk_kinds[opens] = _K_OPENS
        kinds.append(chunk_kinds)
        members += len(at)
        lo = hi
    all_kinds = np.concatenate(kinds)
    seq = all_kinds[all_kinds != _K_NONE].astype(np.int64)
    if len(seq) == 0 or seq[0] != _K_OPENS or seq[-1] not in (_K_SIZE, _K_OFFSET):
        return None
    if not np.isin(seq[:-1] * 8 + seq[1:], _NEXT_KINDS).all():
        return None
    try:
        paths: list[str] = []
        for raw in values[_K_PATH]:
            paths += pc.cast(raw, pa.large_string()).to_pylist()
        sizes = np.concatenate([_vector_longs(v) for v in values[_K_SIZE]])
        offset_values = np.concatenate([_vector_longs(v) for v in values[_K_OFFSET]])
    except pa.ArrowInvalid:
        return None
    # a stat's offset is its offset member's (0 without one)
    stat_of = np.cumsum(all_kinds == _K_OPENS) - 1
    offsets = np.zeros(len(paths), np.int64)
    offsets[stat_of[np.concatenate(rows[_K_OFFSET])]] = offset_values
    return paths, array("q", sizes.tobytes()), array("q", offsets.tobytes())


def _int64_array(values: np.ndarray) -> pa.Array:
    """An Arrow view of int64 ``values`` (``pa.array`` would import pandas to look at them)."""
    values = np.ascontiguousarray(values, np.int64)
    return pa.Array.from_buffers(pa.int64(), len(values), [None, pa.py_buffer(values)])


def _numpy_int64(values: pa.Array) -> np.ndarray:
    """A numpy view of an int64 Arrow array without nulls (``to_numpy`` would import
    pandas)."""
    data = values.buffers()[1]
    if data is None:
        return np.zeros(0, np.int64)
    return np.frombuffer(data, np.int64, len(values), values.offset * 8)


def _vector_longs(raw: pa.Array) -> np.ndarray:
    """``-?\\d+`` or ``null`` (0) as int64 (ArrowInvalid: out of range)."""
    text = pc.replace_substring_regex(pc.cast(raw, pa.large_string()), "^null$", "0")
    return _numpy_int64(pc.cast(text, pa.int64()))
