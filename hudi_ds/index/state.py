"""The state index: a long-lived writer's in-memory map record key -> file group.

Seed 003 (RFC-24) gives Flink writers an index *state*: the ``BucketAssignFunction`` keeps
``HoodieRecordGlobalLocation`` per key in Flink state, bootstrapped from the table
(``BootstrapOperator``) and updated as records are assigned, so a record is tagged without
reading the table. :class:`StateIndex` is that state for a writer that stays open in Python (a
:class:`hudi_ds.HudiTable` used for many upserts, a streaming sink's worker): it answers the
shared lookup shape (:mod:`hudi_ds.index.lookup`)::

    StateIndex().lookup(storage, slices, keys, partitions, spec) -> KeyLocations

with exactly the answer a file-reading lookup over the same ``slices`` gives, without reading
files that did not change.

How it stays exact. The state remembers, per file group, the *files* its keys were read from:
the base file (path, size) and, when ``spec.read_logs``, the log files (path, size) -- Hudi's
files are immutable once committed (a v6 log file that another writer appends to changes size).
Every lookup compares the given latest slices with that record:

* a group whose slice still has the remembered files: its keys are current (no I/O);
* a group that is new, or whose files differ (another writer's commit, a compaction -- same
  file id, new base instant and base file --, a rollback that removed files or appended a
  rollback command block, a restore): its keys are read again from its current slice only;
* a remembered group of a looked-up partition that is no longer among the slices (replaced by
  clustering / insert_overwrite, a deleted partition, a restore): its keys are dropped.

The first lookup of a partition is its bootstrap (every group is new). The base instant
reported for a key is always the given slice's, so compaction's new base instants are reported
without a read. This comparison sees every change the timeline could announce (a completed
instant of another writer, a rollback, a restore, a replacecommit, a compaction), because each
of them changes which files make up the latest slices; it needs no timeline parsing and cannot
miss an action it does not know.

Learning its own writes (:meth:`StateIndex.committed`): after the writer's commit the state
takes the new files into its record without reading them where the key set provably did not
change: a log file appended by the commit to a group whose record was current -- with
``spec.read_logs`` False logs are not indexed at all (Hudi's SIMPLE/BLOOM on MERGE_ON_READ,
``HoodieSimpleIndex.canIndexLogFiles() == false``); with ``read_logs`` they hold only keys that
were found in that group unless the lookups since the last commit found new keys, in which case
only the new log files' keys are read. Delete blocks never change a group's key set (a deleted
key stays in the base file it was found in, as for the file-reading lookups). A new base file
is taken in without a read when its write stat proves its keys (no change; only the deletes
the lookups found in it; or exactly the keys the lookups did not find in its partition, when it
inserted as many -- Java's index ``updateLocation`` learns the written keys the same way);
any other new base file is read at the next lookup like any changed group. When the writer's
merge handles report the keys each new base file added and dropped (``WriteStatus.keys``, as
:class:`hudi_ds.HudiTable` asks them to), a new base file (version) of a non-global lookup is
learnt from them exactly, whatever mix of inserts, updates and deletes it took (a small file
rewritten with a batch's inserts and some deletes: the usual shape of a SIMPLE upsert). The
compactions the writer runs after its commits (MERGE_ON_READ's inline compaction) report their
key changes the same way (:meth:`StateIndex.compacted`): every compacted file group's new base
file is learnt without reading it (the keys of deletes that won the merge leave).

Storage: keys are held as one fixed-width byte array (numpy ``S<width>``, the width a multiple
of 8; the key and, for a non-global index, ``\\0`` + its partition path) with a parallel int32
array of group numbers, ordered by a 64-bit fingerprint of the key bytes (:func:`_fingerprints`,
held in a parallel uint64 array). A lookup sorts the incoming fingerprints and finds them with
``searchsorted`` on integers (several times faster than sorting and searching the byte strings
themselves), then compares the keys at the positions found: the answer is exact, a
fingerprint shared by different keys only costs comparing each of them. New entries go to a
second, small sorted run (searched too), merged into the main one when it holds an eighth as many.
Memory is about (key length + partition length, rounded up to 8, + 12) bytes per key.

A key present in several file groups (duplicates written by ``insert``, or a key in the base
file of its old partition after a global partition move on MERGE_ON_READ) is located as
:func:`~hudi_ds.index.simple.simple_lookup` locates it: in every group holding it, the primary
one the slice with the greatest base instant, then the smallest file id.

Cost: a lookup is O(incoming keys x log(state)) plus the reads of the changed groups; the
first write of a partition pays the bootstrap (the same reads as one SIMPLE lookup).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hudi_ds.errors import HudiError
from hudi_ds.index.lookup import KeyLocations, LookupSpec, reads_logs
from hudi_ds.index.simple import (
    READ_THREADS,
    base_file_keys,
    check_input,
    log_keys,
    ordered_map,
)
from hudi_ds.layout.bloom_filter import key_buffers
from hudi_ds.layout.file_group import FileSlice, LogFile
from hudi_ds.layout.naming import file_name_of, parse_base_file_name, parse_log_file_name
from hudi_ds.storage import Storage
from hudi_ds.timeline.metadata import NULL_COMMIT, WriteStat

#: reads the record keys a lookup sees in one file slice (string array, duplicates allowed) and
#: counts the files it opened
KeyReader = Callable[[Storage, FileSlice, LookupSpec], tuple[pa.Array, int]]

_SEP = "\x00"

#: the small run of new entries is merged into the main run once it holds 1/this as many
SMALL_RUN_FRACTION = 8

#: a group's record of files: (base path, base size) or None, then ((log path, size), ...)
_Files = tuple[tuple[str, int] | None, tuple[tuple[str, int], ...]]


class StateIndexError(HudiError):
    """The state index cannot hold a key (a record key containing a NUL character)."""


def slice_keys(storage: Storage, fslice: FileSlice, spec: LookupSpec) -> tuple[pa.Array, int]:
    """The record keys of a file slice as the SIMPLE lookup reads them, and the files read.

    The base file's key column and, when :func:`~hudi_ds.index.lookup.reads_logs`, the keys of
    the log data blocks
    (:func:`hudi_ds.index.simple.base_file_keys`, :func:`hudi_ds.index.simple.log_keys`: the
    same reading as :func:`~hudi_ds.index.simple.simple_lookup`, so the answers agree).
    """
    parts: list[pa.Array] = []
    read = 0
    if fslice.base_file is not None:
        parts.append(base_file_keys(storage, fslice.base_file, spec))
        read += 1
    if reads_logs(spec, fslice):
        keys, n = log_keys(storage, fslice, spec)
        parts.append(keys)
        read += n
    if not parts:
        return pa.array([], pa.string()), read
    return pa.concat_arrays([p.cast(pa.string()) for p in parts]), read


def _fixed_width(strings: pa.Array, width: int) -> np.ndarray:
    """``strings`` (UTF-8) as a numpy ``S<width>`` array (NUL padded), vectorised."""
    n = len(strings)
    if n == 0:
        return np.empty(0, dtype=f"S{max(width, 1)}")
    if pc.all(pc.string_is_ascii(strings)).as_py():
        padded = pc.utf8_rpad(strings, width, padding=_SEP)
        if padded.offset:
            padded = pa.concat_arrays([padded])
        offsets = np.frombuffer(padded.buffers()[1], dtype=np.int32, count=n + 1)
        data = np.frombuffer(padded.buffers()[2], dtype=np.uint8)
        return data[offsets[0] : offsets[0] + n * width].view(f"S{width}")
    # multi-byte characters: utf8_rpad pads by code points, so go through Python bytes objects
    return strings.cast(pa.binary()).to_numpy(zero_copy_only=False).astype(f"S{width}")


def _has_nul(strings: pa.Array) -> bool:
    """Whether a value of ``strings`` holds a NUL byte (one scan of the value bytes)."""
    if len(strings) == 0:
        return False
    data, offs = key_buffers(strings)
    return bool(np.any(data[int(offs[0]) : int(offs[-1])] == 0))


def _byte_width(strings: pa.Array) -> int:
    """The fixed width holding every string of ``strings``: a multiple of 8 (whole words)."""
    if len(strings) == 0:
        return 8
    longest = int(pc.max(pc.binary_length(strings)).as_py() or 1)
    return max(8, -(-longest // 8) * 8)


_MIX = np.uint64(0xFF51AFD7ED558CCD)
_SHIFT = np.uint64(29)


def _fingerprints(fixed: np.ndarray) -> np.ndarray:
    """64-bit fingerprints of fixed-width keys (numpy ``S<w>``, ``w`` a multiple of 8): the
    8-byte words multiplied and mixed (vectorised). Equal keys have equal fingerprints; a
    fingerprint shared by different keys is possible, so every match is confirmed on the keys."""
    n, width = len(fixed), fixed.dtype.itemsize
    if n == 0:
        return np.empty(0, dtype=np.uint64)
    words = np.ascontiguousarray(fixed).view(np.uint64).reshape(n, width // 8)
    h = words[:, 0] * _MIX
    for j in range(1, width // 8):
        h ^= h >> _SHIFT
        h = (h ^ words[:, j]) * _MIX
    h ^= h >> _SHIFT
    return h


@dataclass
class _Group:
    gid: int
    partition: str
    file_id: str
    files: _Files
    instant: str


class _Learnt:
    """What one commit teaches a :class:`StateIndex`: entries to drop and entries to add,
    applied together once every write stat is seen (one removal and one re-sort per commit).

    What the commit's lookups found (by group) and missed (by partition) is worked out at the
    first stat that needs it, and once.
    """

    def __init__(
        self,
        found_by_group: Callable[[], dict[int, np.ndarray]],
        missed_by_partition: Callable[[], dict[str, pa.Array]],
    ) -> None:
        self.drop: list[np.ndarray] = []  # positions in the key arrays of deleted entries
        self.new_keys: list[pa.Array] = []
        self.new_gids: list[np.ndarray] = []
        self._found_by_group = found_by_group
        self._missed_by_partition = missed_by_partition
        self._found: dict[int, np.ndarray] | None = None
        self._missed: dict[str, pa.Array] | None = None

    def add(self, keys: pa.Array, gids: np.ndarray) -> None:
        """Entries to add: ``keys`` (as held) of the groups ``gids``."""
        self.new_keys.append(keys)
        self.new_gids.append(gids)

    def found(self) -> dict[int, np.ndarray]:
        """The held keys the commit's lookups found, by group."""
        if self._found is None:
            self._found = self._found_by_group()
        return self._found

    def missed(self) -> dict[str, pa.Array]:
        """The keys the commit's lookups did not find, by partition (non-global)."""
        if self._missed is None:
            self._missed = self._missed_by_partition()
        return self._missed


class StateIndex:
    """In-memory record key -> file group state of a long-lived writer (module docstring).

    Use its :meth:`lookup` as the writer's lookup (``WriteClient.task_writer(...,
    lookup=state.lookup)``) and call :meth:`committed` with the write stats of each commit.

    Args:
        read_keys: reads one slice's keys (default :func:`slice_keys`).

    Attributes:
        groups_read: file groups whose keys were read (bootstraps and refreshes), cumulative.
        files_read: files opened for that, cumulative.
        resets: times the whole state was dropped (the lookup mode or the key spec changed).
    """

    def __init__(self, read_keys: KeyReader | None = None) -> None:
        self.read_keys: KeyReader = read_keys or slice_keys
        self.groups_read = 0
        self.files_read = 0
        self.resets = 0
        self._reset()

    def _reset(self) -> None:
        self._mode: tuple[bool, LookupSpec] | None = None
        self._groups: dict[tuple[str, str], _Group] = {}
        self._by_gid: dict[int, _Group] = {}
        self._next_gid = 0
        # held entries, ordered by fingerprint (module docstring): the main run, and a small
        # run of the entries added since it was last merged (positions past the main run's)
        self._keys = np.empty(0, dtype="S8")
        self._prints = np.empty(0, dtype=np.uint64)
        self._gids = np.empty(0, dtype=np.int32)
        self._dkeys = np.empty(0, dtype="S8")
        self._dprints = np.empty(0, dtype=np.uint64)
        self._dgids = np.empty(0, dtype=np.int32)
        # entries removed in place (group -1), left in the arrays until they are many
        self._dead = 0
        self._new_keys_seen = False
        # (held keys, their groups) the lookups since the last commit found
        self._found: list[tuple[np.ndarray, np.ndarray]] = []
        # (probe strings, partitions) of the keys those lookups did not find (non-global)
        self._missed: list[tuple[pa.Array, pa.Array]] = []

    def clear(self) -> None:
        """Drop everything (the next lookup bootstraps again)."""
        self._reset()
        self.resets += 1

    @property
    def spec(self) -> LookupSpec | None:
        """The key spec of the lookups the state answers (None before the first)."""
        return None if self._mode is None else self._mode[1]

    @property
    def is_global(self) -> bool | None:
        """Whether the state matches keys alone (a global index; None before the first)."""
        return None if self._mode is None else self._mode[0]

    def __len__(self) -> int:
        """Number of (key, file group) entries held."""
        return len(self._keys) + len(self._dkeys) - self._dead

    @property
    def nbytes(self) -> int:
        """Memory held by the key arrays."""
        return int(
            self._keys.nbytes
            + self._prints.nbytes
            + self._gids.nbytes
            + self._dkeys.nbytes
            + self._dprints.nbytes
            + self._dgids.nbytes
        )

    # -- the lookup ---------------------------------------------------------------------------
    def lookup(
        self,
        storage: Storage,
        slices: Sequence[FileSlice],
        keys: pa.Array,
        partitions: pa.Array | None,
        spec: LookupSpec,
    ) -> KeyLocations:
        """Where each key lives in ``slices`` (null: new), answered from the state.

        Same contract and answer as :func:`hudi_ds.index.simple.simple_lookup` (non-global when
        ``partitions`` is given, global when None, one location per key: the slice with the
        greatest base instant, then the smallest file id); the state is first brought up to
        date with ``slices`` (module docstring). ``files_read`` / ``keys_read`` count the files
        whose keys this call read.

        Raises:
            SchemaError: bad ``keys`` / ``partitions``.
            StateIndexError: a record key holds a NUL character.
            MissingFileError, CorruptFileError: a file to be read is gone or unreadable.
        """
        keys, partitions = check_input(keys, partitions)
        global_ = partitions is None
        mode = (global_, spec)
        if self._mode is not None and self._mode != mode:
            self.clear()
        self._mode = mode
        _refuse_nul(keys, "")
        if not global_:
            assert partitions is not None
            wanted = set(pc.unique(partitions).to_pylist())
            slices = [s for s in slices if s.partition_path in wanted]
            probe = _with_partitions(keys, partitions)
        else:
            wanted = None
            probe = keys
        before = self.files_read
        self._refresh(storage, slices, spec, wanted)
        gids, more_rows, more_groups = self._probe(probe)
        found = gids >= 0
        if len(found) and not bool(found.all()):
            self._new_keys_seen = True
            if partitions is not None:
                miss = pa.array(~found)
                self._missed.append((probe.filter(miss), partitions.filter(miss)))
        fids, parts, insts = self._group_columns()
        read = self.files_read - before
        return KeyLocations(
            group=np.where(found, gids, -1),
            group_file_ids=fids,
            group_partitions=parts,
            group_instants=insts,
            files_read=read,
            keys_read=read,
            more_rows=more_rows,
            more_groups=more_groups,
        )

    def _group_columns(self) -> tuple[pa.Array, pa.Array, pa.Array]:
        """file id, partition, base instant by group number (null for dropped groups)."""
        n = self._next_gid
        fids: list[str | None] = [None] * n
        parts: list[str | None] = [None] * n
        insts: list[str | None] = [None] * n
        for g in self._by_gid.values():
            fids[g.gid], parts[g.gid], insts[g.gid] = g.file_id, g.partition, g.instant
        return (
            pa.array(fids, pa.string()),
            pa.array(parts, pa.string()),
            pa.array(insts, pa.string()),
        )

    def _probe(self, probe: pa.Array) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Group number of each probe (-1: absent), and the other groups of probes held by
        several (:attr:`KeyLocations.more_rows` / ``more_groups``)."""
        out = np.full(len(probe), -1, dtype=np.int64)
        none = np.empty(0, np.int64)
        if len(self._keys) + len(self._dkeys) == 0 or len(probe) == 0:
            return out, none, none
        width = self._keys.dtype.itemsize
        # a probe longer than every held key cannot match
        fits = np.asarray(pc.less_equal(pc.binary_length(probe), width), dtype=bool)
        sel = np.flatnonzero(fits)
        if len(sel) == 0:
            return out, none, none
        q = _fixed_width(probe if len(sel) == len(probe) else probe.take(pa.array(sel)), width)
        h = _fingerprints(q)
        order = np.argsort(h)  # sorted probes walk the state in order
        hs, qs = h[order], q[order]
        res, _, (mprobe, mgid) = self._find(hs, qs)
        hit_rows = res >= 0
        self._found.append((qs[hit_rows], res[hit_rows].astype(np.int32)))
        got = np.empty(len(qs), dtype=np.int64)
        got[order] = res
        out[sel] = got
        more_rows = sel[order[mprobe]]
        by_row = np.argsort(more_rows, kind="stable")
        return out, more_rows[by_row], mgid[by_row]

    def _find(
        self, prints: np.ndarray, keys: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, tuple[np.ndarray, np.ndarray]]:
        """For sorted ``prints`` of fixed-width ``keys`` (the state's width): the group holding
        each key (-1: none; a key held by several groups: the one simple_lookup picks), the
        position of its entry (-1: none, or several entries; the small run's positions follow
        the main run's), and the other groups of keys held by several: ``(key positions,
        groups)``, one per distinct (key, group)."""
        res, at, many = self._find_in(self._prints, self._keys, self._gids, prints, keys)
        if len(self._dkeys) == 0:
            return res, at, _others(res, [many])
        dres, dat, dmany = self._find_in(self._dprints, self._dkeys, self._dgids, prints, keys)
        # every (key, group) match of both runs, before res picks one per key
        hits = np.flatnonzero(res >= 0)
        dhits = np.flatnonzero(dres >= 0)
        matches = [many, dmany, (hits, res[hits]), (dhits, dres[dhits])]
        only = (res < 0) & (dres >= 0)
        res[only] = dres[only]
        at[only] = dat[only] + len(self._keys)
        both = np.flatnonzero((res >= 0) & (dres >= 0) & ~only)
        if len(both):  # held by groups in both runs: the one simple_lookup picks
            run = np.repeat(np.arange(len(both)), 2)
            cand = np.stack([res[both], dres[both]], axis=1).ravel()
            which, best = self._best_of(run, cand)
            res[both[which]] = best
            at[both] = -1
        return res, at, _others(res, matches)

    def _find_in(
        self,
        held: np.ndarray,
        held_keys: np.ndarray,
        held_gids: np.ndarray,
        prints: np.ndarray,
        keys: np.ndarray,
    ) -> tuple[np.ndarray, np.ndarray, tuple[np.ndarray, np.ndarray]]:
        """:meth:`_find` in one run (``held`` its prints, positions in that run); the third
        value: every (key position, group) match of keys with several entries."""
        n = len(held)
        lo = np.searchsorted(held, prints, side="left")
        # entries per print: 0 or 1 read from the neighbours; several (rare) searched again
        inside = lo < n
        count = np.zeros(len(prints), dtype=np.int64)
        count[inside] = held[lo[inside]] == prints[inside]
        more = np.flatnonzero(count.astype(bool) & (lo + 1 < n))
        if len(more):
            more = more[held[lo[more] + 1] == prints[more]]
            if len(more):
                hi = np.searchsorted(held, prints[more], side="right")
                count[more] = hi - lo[more]
        res = np.full(len(keys), -1, dtype=np.int64)
        at = np.full(len(keys), -1, dtype=np.int64)
        many_at = many_gid = np.empty(0, np.int64)
        one = np.flatnonzero(count == 1)
        if len(one):
            pos = lo[one]
            eq = (held_keys[pos] == keys[one]) & (held_gids[pos] >= 0)
            res[one[eq]] = held_gids[pos[eq]]
            at[one[eq]] = pos[eq]
        many = np.flatnonzero(count > 1)  # a key held by several groups, or a shared print
        if len(many):
            counts = count[many]
            run = np.repeat(np.arange(len(many)), counts)
            starts = np.repeat(lo[many] - np.concatenate([[0], np.cumsum(counts)[:-1]]), counts)
            pos = starts + np.arange(int(counts.sum()))
            eq = (held_keys[pos] == keys[many][run]) & (held_gids[pos] >= 0)
            run, pos = run[eq], pos[eq]
            if len(run):
                many_at, many_gid = many[run], held_gids[pos].astype(np.int64)
                best = self._best_of(run, many_gid)
                res[many[best[0]]] = best[1]
                single = np.bincount(run, minlength=len(many)) == 1
                at[many[single]] = pos[np.isin(run, np.flatnonzero(single))]
        return res, at, (many_at, many_gid)

    def _best_of(self, run: np.ndarray, cand: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """For candidate groups ``cand`` of runs ``run`` (one run per key held by several
        groups, ascending): each run and the group simple_lookup picks (greatest base
        instant, then smallest file id)."""
        ranked = sorted(
            self._by_gid.values(), key=lambda g: (_desc(g.instant), g.file_id)
        )  # one entry per file group, not per row
        rank = np.zeros(self._next_gid, dtype=np.int64)
        rank[[g.gid for g in ranked]] = np.arange(len(ranked))
        order = np.lexsort((rank[cand], run))
        first = np.ones(len(order), dtype=bool)
        first[1:] = run[order][1:] != run[order][:-1]
        return run[order][first], cand[order][first]

    # -- keeping it current -------------------------------------------------------------------
    def _refresh(
        self,
        storage: Storage,
        slices: Sequence[FileSlice],
        spec: LookupSpec,
        wanted: set[str] | None,
    ) -> None:
        """Bring the groups of ``slices`` (of the ``wanted`` partitions; all when None) up to
        date: read new and changed groups, drop the ones that left."""
        seen: set[tuple[str, str]] = set()
        stale: list[int] = []
        to_read: list[tuple[_Group, FileSlice]] = []
        for s in slices:
            k = (s.partition_path, s.file_id)
            seen.add(k)
            files = _files_of(s, reads_logs(spec, s))
            g = self._groups.get(k)
            if g is None:
                g = _Group(self._next_gid, s.partition_path, s.file_id, files, s.base_instant_time)
                self._next_gid += 1
                self._groups[k] = g
                self._by_gid[g.gid] = g
                to_read.append((g, s))
                continue
            g.instant = s.base_instant_time
            if g.files != files:
                stale.append(g.gid)
                g.files = files
                to_read.append((g, s))
        for k, g in list(self._groups.items()):
            if k not in seen and (wanted is None or g.partition in wanted):
                stale.append(g.gid)  # replaced, or its partition was dropped
                del self._groups[k]
                del self._by_gid[g.gid]
        if not stale and not to_read:
            return
        new_keys: list[pa.Array] = []
        new_gids: list[np.ndarray] = []
        reads = ordered_map(lambda gs: self.read_keys(storage, gs[1], spec), to_read, READ_THREADS)
        for (g, _), (ks, n) in zip(to_read, reads, strict=True):
            self.groups_read += 1
            self.files_read += n
            if len(ks):
                _refuse_nul(ks, f" in file group {g.file_id} of partition {g.partition!r}")
                new_keys.append(ks if wanted is None else _with_partition(ks, g.partition))
                new_gids.append(np.full(len(ks), g.gid, dtype=np.int32))
        self._replace(np.asarray(stale, dtype=np.int32), new_keys, new_gids)

    def _replace(
        self, drop_gids: np.ndarray, new_keys: list[pa.Array], new_gids: list[np.ndarray]
    ) -> None:
        """Remove the entries of ``drop_gids``, then merge the new entries in (kept sorted).

        New entries go to the small run; it is merged into the main run once it holds an
        eighth as many entries (or when the keys widen), so a commit that adds a batch's keys
        to a large state costs O(batch), not a copy of every entry (amortised: each entry is
        copied into the main run a bounded number of times)."""
        if len(drop_gids) and len(self._keys) + len(self._dkeys):
            drop = np.flatnonzero(np.isin(self._gids, drop_gids))
            ddrop = np.flatnonzero(np.isin(self._dgids, drop_gids)) + len(self._keys)
            self._remove(np.concatenate([drop, ddrop]))
        if not new_keys:
            return
        incoming = pa.concat_arrays([k.cast(pa.string()) for k in new_keys])
        width = max(_byte_width(incoming), self._keys.dtype.itemsize)
        if width > self._keys.dtype.itemsize:  # wider keys: new prints, a new order
            self._merge_runs()
            self._keys = self._keys.astype(f"S{width}")
            self._dkeys = self._dkeys.astype(f"S{width}")
            self._prints = _fingerprints(self._keys)
            order = np.argsort(self._prints)
            self._keys, self._prints = self._keys[order], self._prints[order]
            self._gids = self._gids[order]
        add = _fixed_width(incoming, width)
        add_h = _fingerprints(add)
        add_g = np.concatenate(new_gids)
        order = np.argsort(add_h)  # entries of one print may come in any order
        add, add_h, add_g = add[order], add_h[order], add_g[order]
        if len(self._keys) == 0:
            self._keys, self._prints, self._gids = add, add_h, add_g
            self._dkeys, self._dprints, self._dgids = add[:0], add_h[:0], add_g[:0]
            return
        at = np.searchsorted(self._dprints, add_h, side="right")
        self._dkeys = np.insert(self._dkeys, at, add)
        self._dprints = np.insert(self._dprints, at, add_h)
        self._dgids = np.insert(self._dgids, at, add_g)
        if len(self._dkeys) * SMALL_RUN_FRACTION >= len(self._keys):
            self._merge_runs()

    def _merge_runs(self) -> None:
        """Merge the small run into the main run (positions change)."""
        if len(self._dkeys) == 0:
            return
        at = np.searchsorted(self._prints, self._dprints, side="right")
        self._keys = np.insert(self._keys, at, self._dkeys)
        self._prints = np.insert(self._prints, at, self._dprints)
        self._gids = np.insert(self._gids, at, self._dgids)
        self._dkeys = self._dkeys[:0]
        self._dprints = self._dprints[:0]
        self._dgids = self._dgids[:0]

    def _remove(self, positions: np.ndarray) -> None:
        """Remove the entries at ``positions`` (distinct, live; the small run's after the main
        run's): marked dead in place (group -1, which :meth:`_find` never matches), so that a
        commit that drops a few keys of a large state costs O(dropped), not a copy of every
        entry; the dead are compacted away once they are a quarter of the entries (amortised
        O(1) per removal)."""
        if len(positions) == 0:
            return
        n = len(self._keys)
        self._gids[positions[positions < n]] = -1
        self._dgids[positions[positions >= n] - n] = -1
        self._dead += len(positions)
        if self._dead * 4 >= n + len(self._dkeys):
            self._merge_runs()
            keep = self._gids >= 0
            self._keys, self._prints, self._gids = (
                self._keys[keep],
                self._prints[keep],
                self._gids[keep],
            )
            self._dead = 0

    def begin(self) -> None:
        """Start a write: what earlier lookups found is forgotten, so that :meth:`committed`
        learns from the lookups of this write only."""
        self._new_keys_seen = False
        self._found = []
        self._missed = []

    def committed(
        self,
        storage: Storage,
        stats: Sequence[WriteStat],
        changes: Mapping[str, tuple[pa.Array, pa.Array]] | None = None,
    ) -> None:
        """Learn the files of this writer's own commit (its write stats, from the commit
        metadata or the WriteStatuses).

        ``changes``: by base file path, the record keys the new base file added to its file
        group and the ones it dropped (``WriteStatus.keys``, reported by the merge handles of
        a write asked to track them). A new base file (version) with changes is learnt from
        them exactly (non-global lookups), whatever mix of inserts, updates and deletes it
        took; the rules below serve the files without.

        Call :meth:`begin` before a write and this after its commit, before the next write.
        Files of groups whose record was current when the write looked its keys up are taken
        into the record without being read where the write stats prove the group's key set:

        * a log file: with ``read_logs`` False logs are not indexed (nothing changes); with
          ``read_logs``, unchanged when the write's lookups found every key (its rows were
          updates of keys already in that group), else only the new log file is read;
        * a new version of the base file (COW merge, MOR small-file rewrite): its
          ``numInserts`` / ``numDeletes`` are counted on the rows themselves
          (``merge_into_base``); no inserts and no deletes: the same keys; no inserts and as
          many deletes as keys the write's lookups found in that group: those keys are gone;
          no deletes and as many inserts as distinct keys the write's lookups did not find in
          the group's partition (non-global): every one of those keys was inserted there (an
          inserted key is one the lookups did not find, so the counts agree only when the
          group took them all) -- the usual shape of a small file taking a batch's inserts.

        A new file group's base file is learnt likewise when its inserts are all the keys the
        lookups did not find in its partition. Every other file (inserts split among file
        groups) makes its group differ from the record: read at the next lookup.
        """
        if self._mode is None:
            return
        global_, spec = self._mode
        learnt = _Learnt(self._found_by_group, self._missed_by_partition)
        changes = changes or {}
        for st in stats:
            path = st.path or ""
            g = self._groups.get((st.partition_path or "", st.file_id or ""))
            change = None if global_ else changes.get(path)
            if change is not None and (g is None or st.prev_commit == g.instant):
                by_changes = self._learn_changes(g, st, change)
                if by_changes is not None:
                    gone, added = by_changes
                    if gone is not None:
                        learnt.drop.append(gone)
                    if added is not None:
                        learnt.add(*added)
                    continue
            if g is None and not global_ and not st.num_deletes:
                # a file group this write created: its base file holds its inserts only
                created = self._learn_new_group(st, learnt.missed().get(st.partition_path or ""))
                if created is not None:
                    learnt.add(*created)
                continue
            if g is None or st.prev_commit != g.instant:
                continue  # a new group, or another slice: left to the next lookup
            size = int(st.file_size_in_bytes)
            lf = _log_file(path, size)
            if lf is None:  # a new base file version of g
                self._learn_base_version(g, st, (path, size), global_, learnt)
            elif spec.read_logs or g.files[0] is None or g.files[1]:  # logs indexed
                self._learn_log(storage, g, (path, size), lf, spec, global_, learnt)
        if learnt.drop:
            self._remove(np.unique(np.concatenate(learnt.drop)))
        if learnt.new_keys:
            self._replace(np.empty(0, dtype=np.int32), learnt.new_keys, learnt.new_gids)
        self._new_keys_seen = False
        self._found = []
        self._missed = []

    def _learn_base_version(
        self, g: _Group, st: WriteStat, file: tuple[str, int], global_: bool, learnt: _Learnt
    ) -> None:
        """Learn a new version ``file`` (path, size) of ``g``'s base file from its write stat
        ``st`` where the counts prove its key set (:meth:`committed`); otherwise ``g`` keeps
        its record, which no longer matches its files, and is read at the next lookup."""
        base, logs = g.files
        if base is None or logs:
            return
        if st.num_inserts:
            if global_ or st.num_deletes:
                return
            added = learnt.missed().get(g.partition)
            if added is None or len(added) != st.num_inserts:
                return
            learnt.add(added, np.full(len(added), g.gid, dtype=np.int32))
        elif st.num_deletes:
            gone = self._entries_of(g.gid, learnt.found().get(g.gid))
            if gone is None or len(gone) != st.num_deletes:
                return
            learnt.drop.append(gone)
        g.files = (file, ())

    def _learn_log(
        self,
        storage: Storage,
        g: _Group,
        file: tuple[str, int],
        lf: LogFile,
        spec: LookupSpec,
        global_: bool,
        learnt: _Learnt,
    ) -> None:
        """Learn the new log file ``lf`` (``file``: path, size) of ``g`` (logs indexed): read
        only when the write's lookups missed keys -- it may hold inserts -- or the index is
        global (found keys may have moved here from another partition)."""
        path = file[0]
        base, logs = g.files
        if self._new_keys_seen or global_:
            one = FileSlice(g.partition, g.file_id, g.instant, None, [lf])
            ks, n = log_keys(storage, one, spec)
            self.files_read += n
            if len(ks):
                _refuse_nul(ks, f" in {path}")
                learnt.add(
                    ks if global_ else _with_partition(ks, g.partition),
                    np.full(len(ks), g.gid, dtype=np.int32),
                )
        g.files = (base, tuple(sorted({*logs, file})))

    def compacted(
        self, stats: Sequence[WriteStat], changes: Mapping[str, tuple[pa.Array, pa.Array]]
    ) -> None:
        """Learn the new base files of a compaction this writer ran (its write stats and
        :attr:`~hudi_ds.services.compaction_execute.CompactionResult.key_changes`), after
        :meth:`committed` of the write that triggered it.

        A compaction merges a file group's base file with its logs into a new base file of the
        same file id. Its key changes, against the base file it compacted (the keys of the
        merged rows that file did not hold -- none while only SIMPLE/BLOOM writers add logs,
        whose logs hold updates of base keys -- and the keys the merge dropped: deletes that
        won under the merge mode), turn the group's entries into the new file's keys exactly,
        without reading it. Only for a group whose record is that base file (its entries are
        that file's keys) and with logs not indexed (``read_logs`` False: Hudi's SIMPLE/BLOOM;
        with ``read_logs`` the entries also hold the logs' keys). Any other group (no key
        changes: a compaction run elsewhere; a record of another base file; a dropped key held
        by several entries) keeps its old record, so the next lookup sees its files differ and
        reads it, as for a compaction of another writer.
        """
        if self._mode is None:
            return
        global_, spec = self._mode
        if spec.read_logs:
            return
        drop: list[np.ndarray] = []
        new_keys: list[pa.Array] = []
        new_gids: list[np.ndarray] = []
        width = self._keys.dtype.itemsize
        for st in stats:
            path = st.path or ""
            change = changes.get(path)
            g = self._groups.get((st.partition_path or "", st.file_id or ""))
            name = parse_base_file_name(file_name_of(path))
            if change is None or g is None or name is None:
                continue
            base, logs = g.files
            if base is None or logs or file_name_of(base[0]) != st.prev_base_file:
                continue
            inserted, removed = change
            if len(removed):
                held = removed.cast(pa.string())
                if not global_:
                    held = _with_partition(held, g.partition)
                if int(pc.max(pc.binary_length(held)).as_py()) > width:
                    continue  # not held at all: the record is not that file's keys
                gone = self._entries_of(g.gid, _fixed_width(held, width))
                if gone is None:
                    continue
                drop.append(gone)
            if len(inserted):
                _refuse_nul(inserted, f" in {path}")
                ins = inserted.cast(pa.string())
                new_keys.append(ins if global_ else _with_partition(ins, g.partition))
                new_gids.append(np.full(len(inserted), g.gid, dtype=np.int32))
            g.files = ((path, int(st.file_size_in_bytes)), ())
            g.instant = name.instant_time
        if drop:
            self._remove(np.unique(np.concatenate(drop)))
        if new_keys:
            self._replace(np.empty(0, dtype=np.int32), new_keys, new_gids)

    def _learn_changes(
        self, g: _Group | None, st: WriteStat, change: tuple[pa.Array, pa.Array]
    ) -> tuple[np.ndarray | None, tuple[pa.Array, np.ndarray] | None] | None:
        """Learn the new base file of ``st`` from its key changes (non-global): the positions
        of the entries it removes and the entries it adds; None when they cannot be applied
        (the group's record is not current, a removed key is not held by exactly that
        group's entry): the group is then read at the next lookup, as without changes."""
        path = st.path or ""
        inserted, removed = change
        partition = st.partition_path or ""
        if g is None:
            name = parse_base_file_name(file_name_of(path))
            if name is None or st.prev_commit not in (None, NULL_COMMIT) or len(removed):
                return None
            files: _Files = ((path, int(st.file_size_in_bytes)), ())
            g = _Group(self._next_gid, partition, st.file_id or "", files, name.instant_time)
            self._next_gid += 1
            self._groups[(partition, g.file_id)] = g
            self._by_gid[g.gid] = g
        else:
            base, logs = g.files
            if base is None or logs:
                return None
        gone = None
        if len(removed):
            held = _with_partition(removed, g.partition)
            if int(pc.max(pc.binary_length(held)).as_py()) > self._keys.dtype.itemsize:
                return None
            gone = self._entries_of(g.gid, _fixed_width(held, self._keys.dtype.itemsize))
            if gone is None:
                return None
        g.files = ((path, int(st.file_size_in_bytes)), ())
        added = None
        if len(inserted):
            added = (
                _with_partition(inserted, g.partition),
                np.full(len(inserted), g.gid, dtype=np.int32),
            )
        return gone, added

    def _learn_new_group(
        self, st: WriteStat, missed: pa.Array | None
    ) -> tuple[pa.Array, np.ndarray] | None:
        """Register the new file group of ``st`` holding the keys ``missed`` (the keys the
        write's lookups did not find in its partition) when its base file inserted exactly as
        many keys (then it took them all); its entries, or None (left to the next lookup)."""
        path = st.path or ""
        name = parse_base_file_name(file_name_of(path))
        if (
            missed is None
            or name is None
            or st.prev_commit not in (None, NULL_COMMIT)
            or len(missed) != st.num_inserts
            or st.num_writes != st.num_inserts
        ):
            return None
        partition, file_id = st.partition_path or "", st.file_id or ""
        files: _Files = ((path, int(st.file_size_in_bytes)), ())
        g = _Group(self._next_gid, partition, file_id, files, name.instant_time)
        self._next_gid += 1
        self._groups[(partition, file_id)] = g
        self._by_gid[g.gid] = g
        return missed, np.full(len(missed), g.gid, dtype=np.int32)

    def _missed_by_partition(self) -> dict[str, pa.Array]:
        """The distinct keys (as held: key, NUL, partition) the lookups since the last commit
        did not find, by partition (non-global lookups)."""
        if not self._missed:
            return {}
        probes = pa.concat_arrays([k for k, _ in self._missed])
        parts = pa.concat_arrays([p for _, p in self._missed])
        enc = pc.dictionary_encode(parts)
        codes = np.asarray(enc.indices, dtype=np.int64)
        order = np.argsort(codes, kind="stable")  # sorted once, cut per partition
        bounds = np.searchsorted(codes[order], np.arange(len(enc.dictionary) + 1))
        return {
            name: pc.unique(probes.take(pa.array(order[bounds[i] : bounds[i + 1]])))
            for i, name in enumerate(enc.dictionary.to_pylist())
        }

    def _found_by_group(self) -> dict[int, np.ndarray]:
        """The distinct held keys the lookups since the last commit found, by group."""
        if not self._found:
            return {}
        width = self._keys.dtype.itemsize
        keys = np.concatenate([k.astype(f"S{width}") for k, _ in self._found])
        gids = np.concatenate([g for _, g in self._found])
        if len(keys) == 0:
            return {}
        # sorted by group and fingerprint (integers): a key's repeats follow each other unless
        # another key of the group shares its fingerprint -- then by the keys themselves
        prints = _fingerprints(keys)
        order = np.lexsort((prints, gids))
        keys, gids, prints = keys[order], gids[order], prints[order]
        same = (gids[1:] == gids[:-1]) & (prints[1:] == prints[:-1])
        if bool((same & (keys[1:] != keys[:-1])).any()):
            order = np.lexsort((keys, gids))
            keys, gids = keys[order], gids[order]
            same = (gids[1:] == gids[:-1]) & (keys[1:] == keys[:-1])
        first = np.ones(len(keys), dtype=bool)
        first[1:] = ~same
        keys, gids = keys[first], gids[first]
        cuts = np.flatnonzero(np.diff(gids)) + 1
        return {
            int(part_g[0]): part_k
            for part_k, part_g in zip(np.split(keys, cuts), np.split(gids, cuts), strict=True)
        }

    def _entries_of(self, gid: int, keys: np.ndarray | None) -> np.ndarray | None:
        """Positions of ``keys``' entries of group ``gid`` (None: a key not held by exactly
        that entry, e.g. held by several groups)."""
        if keys is None or len(keys) == 0:
            return None
        keys = keys.astype(self._keys.dtype)
        h = _fingerprints(keys)
        order = np.argsort(h)
        res, at, _ = self._find(h[order], keys[order])
        if not bool((at >= 0).all() and (res == gid).all()):
            return None
        return at


def _others(
    res: np.ndarray, matches: Sequence[tuple[np.ndarray, np.ndarray]]
) -> tuple[np.ndarray, np.ndarray]:
    """The (key position, group) ``matches`` whose group is not the key's pick ``res``, each
    pair once."""
    pos = np.concatenate([np.asarray(m[0], np.int64) for m in matches])
    gid = np.concatenate([np.asarray(m[1], np.int64) for m in matches])
    other = gid != res[pos]
    if not other.any():
        return np.empty(0, np.int64), np.empty(0, np.int64)
    pairs = np.unique(np.stack([pos[other], gid[other]], axis=1), axis=0)
    return pairs[:, 0], pairs[:, 1]


def _desc(instant: str) -> tuple[int, ...]:
    """Sort key ordering instant times descending (they are digit strings)."""
    return tuple(-ord(c) for c in instant)


def _refuse_nul(keys: pa.Array, where: str) -> None:
    if not _has_nul(keys):  # a scan of the value bytes; the key named only when one has
        return
    bad = pc.match_substring(keys, _SEP)
    if pc.any(bad).as_py():
        key = keys.filter(bad)[0].as_py()
        raise StateIndexError(
            f"record key {key!r}{where} contains a NUL character, which the state index cannot "
            "hold: write without the state index"
        )


def _with_partitions(keys: pa.Array, partitions: pa.Array) -> pa.Array:
    return pc.binary_join_element_wise(keys, partitions, _SEP)


def _with_partition(keys: pa.Array, partition: str) -> pa.Array:
    return pc.binary_join_element_wise(
        keys.cast(pa.string()), pa.scalar(partition, pa.string()), _SEP
    )


def _files_of(s: FileSlice, with_logs: bool) -> _Files:
    base = (s.base_file.path, int(s.base_file.size)) if s.base_file is not None else None
    if not with_logs:
        return (base, ())
    return (base, tuple(sorted((lf.path, int(lf.size)) for lf in s.log_files)))


def _log_file(path: str, size: int) -> LogFile | None:
    """The log file at ``path`` (None: not a log file name)."""
    name = parse_log_file_name(file_name_of(path))
    return None if name is None else LogFile(path, name, int(size))
