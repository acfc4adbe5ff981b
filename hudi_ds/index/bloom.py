"""Hudi's BLOOM and GLOBAL_BLOOM indexes: footers first, keys only of the files that may match.

Java (``HoodieBloomIndex.tagLocation`` / ``HoodieGlobalBloomIndex``), per candidate base file:

1. ``loadColumnRangesFromFiles``: the file's key range, the ``hoodie_min_record_key`` /
   ``hoodie_max_record_key`` footers; with ``hoodie.bloom.index.prune.by.ranges`` a key outside
   a file's range is not compared with it (``IntervalTreeBasedIndexFileFilter``); a file without
   a range is a candidate for every key;
2. ``HoodieKeyLookupHandle``: the file's bloom filter (``org.apache.hudi.bloomfilter`` footer,
   :mod:`hudi_ds.layout.bloom_filter`) says which of those keys it may hold;
3. ``HoodieKeyLookupHandle.getLookupResult`` -> ``HoodieIndexUtils.filterKeysFromFile``: the
   keys that may be in the file are confirmed against its actual record keys.

Here each candidate base file is opened once: its Parquet footer is read, the incoming keys in
its range are found by binary search over the sorted distinct incoming keys (of its partition,
or all of them when global), tested against its bloom filter in one vectorised call, and only
when some key may be in it is its key column read (in the same open). A file with no bloom
filter and no range (a table without meta fields, whose files have no key footers, as Java's)
has its keys read as SIMPLE does. Logs are read as SIMPLE reads them (:mod:`hudi_ds.index.simple`,
:func:`~hudi_ds.index.lookup.reads_logs`): Java's BLOOM index does not index log files, but a
key that only a log holds must still be found where it lives, not inserted again.

The range test uses code point order (Arrow's and Python's string order); Java's
``String.compareTo`` orders UTF-16 units, which differs only between characters U+E000..U+FFFF
and supplementary ones. Keys holding a character from U+E000 up are therefore never pruned by
range, nor files whose range bounds hold one: pruning stays conservative.

A key found in several file groups is located as :mod:`hudi_ds.index.simple` documents.

With ``hoodie.bloom.index.use.metadata`` (:attr:`LookupSpec.use_metadata`) the filters come from
the metadata table's ``bloom_filters`` partition and, with range pruning, the key ranges from
its ``column_stats`` (``_hoodie_record_key``), as Java's
``HoodieMetadataBloomFilterProbingFunction`` and ``HoodieBloomIndex.loadColumnRangesFromMetaIndex``
take them: a base file is opened only when
a key may be in it, and then for its keys alone. Java reads the footers when the table does not
declare the partition; hudi_ds does too, with a warning, and also when the metadata table misses
a completed instant (another writer's) -- and per file, for a base file the partition has no
filter of (Java fails the lookup there: ``HoodieKeyLookupHandle``, "BloomFilter missing").

Without it, footer key ranges are cached (:data:`FOOTER_RANGES`), so that a later lookup opens
only the files whose range may hold a key. A base file never changes once written -- its name
carries its file id, write token and instant, and a new version of a file group is a new file --
so what its footer says stays true for as long as the file exists. An entry is keyed by the
file's filesystem, full path and size (as listed, ``BaseFile.size``): a file recreated at the same
path with another size misses. A base file whose size is unknown (0) is never served from the cache.

* The first lookup of a file in a process (a cold cache) still opens its footer; from then on
  a file is opened only when a key falls in its range (and then its bloom filter and keys are
  read as above), when it has no range (no key footers; or range pruning is off), or when the
  entry was evicted.
* The cache holds :class:`FooterRange` (min/max key, whether the footer has a bloom filter, the
  row count), bounded by entries with least-recently-used eviction
  (:data:`DEFAULT_FOOTER_RANGE_ENTRIES` = 200k files; :meth:`FooterRangeCache.resize`, 0
  disables). An entry takes about 600 bytes with 130-character paths and 36-character keys
  (measured: 120 MB at the full 200k). A bound below the number of candidate files of a lookup
  gains nothing: walking the files in order evicts each entry before it is asked for again.
* Decoded bloom filters are not cached. A filter is a few hundred KB (Hudi's default 60000
  entries at fpp 1e-9), so a byte budget small enough to be harmless holds only a few hundred
  files, and it would only spare opening a file whose range holds a key and whose filter
  rejects it: time-ordered keys never fall in old files' ranges, while with random keys every
  range holds keys, the filter would have to be cached for every file, and the files it passes
  are opened for their keys anyway.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hudi_ds.errors import ConfigError, CorruptFileError, HudiError
from hudi_ds.index.lookup import KeyLocations, LookupSpec, reads_logs
from hudi_ds.index.simple import (
    READ_THREADS,
    Candidates,
    check_input,
    log_keys,
    open_base_file,
    ordered_map,
    read_keys,
)
from hudi_ds.layout.base_file import OpenedBaseFile
from hudi_ds.layout.bloom_filter import (
    BLOOM_FILTER_FOOTER,
    BLOOM_FILTER_TYPE_CODE_FOOTER,
    BloomFilter,
)
from hudi_ds.layout.file_group import BaseFile, FileSlice
from hudi_ds.layout.naming import file_name_of
from hudi_ds.layout.parquet import MAX_RECORD_KEY_FOOTER, MIN_RECORD_KEY_FOOTER
from hudi_ds.metadata.bloom_filters import IndexedFile, indexed_files
from hudi_ds.storage import Storage

log = logging.getLogger("hudi_ds.index")

#: characters whose order differs between UTF-16 (Java) and code points (here)
_ORDER_UNSAFE = "[\ue000-\U0010ffff]"


class _KeyGroup:
    """Sorted distinct incoming keys of one partition (or of all, when global)."""

    def __init__(self, keys: pa.Array) -> None:
        self.keys = keys  # sorted ascending, distinct
        self.values = np.asarray(keys.to_numpy(zero_copy_only=False), dtype=object)
        unsafe = pc.match_substring_regex(keys, _ORDER_UNSAFE)
        self.unsafe = keys.filter(unsafe)

    def in_range(self, lo: str, hi: str) -> pa.Array:
        """The keys ``lo <= k <= hi``, plus those that cannot be ordered safely."""
        if _unsafe(lo) or _unsafe(hi):
            return self.keys
        a = int(np.searchsorted(self.values, lo, side="left"))
        b = int(np.searchsorted(self.values, hi, side="right"))
        inside = self.keys.slice(a, max(b - a, 0))
        return pa.concat_arrays([inside, self.unsafe]) if len(self.unsafe) else inside


def _unsafe(bound: str) -> bool:
    return any(ord(c) >= 0xE000 for c in bound)


def _key_groups(keys: pa.Array, partitions: pa.Array | None) -> dict[str | None, _KeyGroup]:
    """The incoming keys by partition (key None: every key, for a global lookup)."""
    if partitions is None:
        distinct = pc.unique(keys)
        return {None: _KeyGroup(distinct.take(pc.sort_indices(distinct)))}
    pairs = (
        pa.table({"p": partitions, "k": keys})
        .group_by(["p", "k"])
        .aggregate([])
        .sort_by([("p", "ascending"), ("k", "ascending")])
    )
    parts = np.asarray(pairs.column("p").to_numpy(), dtype=object)
    sorted_keys = pairs.column("k").combine_chunks()
    out: dict[str | None, _KeyGroup] = {}
    for p in pc.unique(pairs.column("p")).to_pylist():
        a = int(np.searchsorted(parts, p, side="left"))
        b = int(np.searchsorted(parts, p, side="right"))
        out[p] = _KeyGroup(sorted_keys.slice(a, b - a))
    return out


@dataclass(frozen=True, slots=True)
class FooterRange:
    """What a base file's footer says about the keys it holds (cached by :data:`FOOTER_RANGES`).

    Attributes:
        min_key, max_key: ``hoodie_min_record_key`` / ``hoodie_max_record_key`` (None: absent).
        has_filter: the footer carries a bloom filter.
        num_rows: the file's row count (a file of 0 rows holds no key).
    """

    min_key: str | None
    max_key: str | None
    has_filter: bool
    num_rows: int

    @property
    def has_key_footers(self) -> bool:
        """The footer has a bloom filter or a full key range."""
        return self.has_filter or (self.min_key is not None and self.max_key is not None)

    def keys_to_check(self, group: _KeyGroup, prune_by_ranges: bool) -> pa.Array | None:
        """The incoming keys this file may hold by its range (all of them without a range or
        without pruning; none when it has no rows), before its bloom filter; None when the
        footer has neither filter nor range (its keys are read in full, as SIMPLE)."""
        if self.num_rows == 0:
            return group.keys.slice(0, 0)
        if not self.has_key_footers:
            return None
        lo, hi = self.min_key, self.max_key
        if prune_by_ranges and lo is not None and hi is not None:
            return group.in_range(lo, hi)
        return group.keys


#: the default bound of :data:`FOOTER_RANGES` (entries, i.e. base files)
DEFAULT_FOOTER_RANGE_ENTRIES = 200_000

_CacheKey = tuple[str, str, int]


class FooterRangeCache:
    """A bounded, thread-safe, least-recently-used map of base files to their :class:`FooterRange`.

    Keyed by ``(filesystem type, full path, size)``; see the module docstring for why an entry
    stays valid while the file exists.

    Args:
        max_entries: files kept at most (the least recently used is evicted); 0 disables.
    """

    def __init__(self, max_entries: int = DEFAULT_FOOTER_RANGE_ENTRIES) -> None:
        self._entries: OrderedDict[_CacheKey, FooterRange] = OrderedDict()
        self._lock = threading.Lock()
        self.max_entries = 0
        self.resize(max_entries)

    @staticmethod
    def key(storage: Storage, base: BaseFile) -> _CacheKey | None:
        """The cache key of a base file, None when its size is unknown (0: never cached)."""
        if base.size <= 0:
            return None
        return (storage.cache_id, storage.full_path(base.path), base.size)

    def get(self, key: _CacheKey) -> FooterRange | None:
        """The cached range of a file (made the most recently used), or None."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None:
                self._entries.move_to_end(key)
            return entry

    def put(self, key: _CacheKey, entry: FooterRange) -> None:
        """Cache a file's range, evicting the least recently used beyond the bound."""
        with self._lock:
            if self.max_entries == 0:
                return
            self._entries[key] = entry
            self._entries.move_to_end(key)
            while len(self._entries) > self.max_entries:
                self._entries.popitem(last=False)

    def resize(self, max_entries: int) -> None:
        """Change the bound (evicting the least recently used entries beyond it); 0 disables.

        Raises:
            ConfigError: a negative bound.
        """
        if max_entries < 0:
            raise ConfigError(f"footer range cache: max_entries must be >= 0, got {max_entries}")
        with self._lock:
            self.max_entries = max_entries
            while len(self._entries) > max_entries:
                self._entries.popitem(last=False)

    def clear(self) -> None:
        """Forget every entry."""
        with self._lock:
            self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: object) -> bool:
        """Whether a file's range is cached (without making it the most recently used)."""
        with self._lock:
            return key in self._entries


#: the process-wide cache of base files' footer key ranges used by :func:`bloom_lookup`
FOOTER_RANGES = FooterRangeCache()


def _footer(f: OpenedBaseFile) -> dict[str, str]:
    meta = f.footer()
    wanted = (
        MIN_RECORD_KEY_FOOTER,
        MAX_RECORD_KEY_FOOTER,
        BLOOM_FILTER_FOOTER,
        BLOOM_FILTER_TYPE_CODE_FOOTER,
    )
    out = {}
    for k in wanted:
        v = meta.get(k.encode())
        if v is not None:
            out[k] = v.decode("utf-8")
    return out


def bloom_lookup(
    storage: Storage,
    slices: Sequence[FileSlice],
    keys: pa.Array,
    partitions: pa.Array | None,
    spec: LookupSpec,
) -> KeyLocations:
    """Locate ``keys`` in ``slices`` through the base files' key footers (BLOOM index).

    Same arguments, result and errors as :func:`hudi_ds.index.simple.simple_lookup`
    (``partitions`` None: GLOBAL_BLOOM). ``spec.prune_by_ranges`` enables the min/max key
    range pruning.

    A base file whose key range is cached (:data:`FOOTER_RANGES`) is not opened when no
    incoming key falls in its range (or it has no rows); every other candidate base file is
    opened once: its footer read (and cached), and its key column in the same open when a key
    may be in it. On a cold cache -- the first lookup of these files in this process -- every
    candidate base file is therefore opened; so are those without a range, and all of them when
    ``spec.prune_by_ranges`` is off (their bloom filters are not cached). A base file skipped by
    its cached range is not checked to still exist.

    ``files_read`` counts every base file opened and every log file read; ``keys_read`` the
    base files whose key column was read plus the log files.

    Raises:
        CorruptFileError: also when a base file's bloom filter footer does not decode (the
            message names the file).
    """
    keys, partitions = check_input(keys, partitions)
    cands = Candidates(slices, keys, partitions)
    groups = _key_groups(keys, partitions) if len(keys) else {}
    jobs = [
        (slot, group)
        for slot, s in enumerate(slices)
        if (group := groups.get(None if partitions is None else s.partition_path)) is not None
    ]

    # the cache is asked and filled by this thread, in the slices' order (the probes run in
    # parallel): which entries a bounded cache keeps does not depend on thread timing
    cache_keys = [
        None if (b := slices[slot].base_file) is None else FooterRangeCache.key(storage, b)
        for slot, _ in jobs
    ]
    cached_ranges = [None if k is None else FOOTER_RANGES.get(k) for k in cache_keys]
    indexed = _indexed(storage, slices, [slot for slot, _ in jobs], spec)

    def probe(i: int) -> tuple[list[pa.Array], FooterRange | None, _ProbeCounts]:
        slot, group = jobs[i]
        meta = indexed[i] if indexed is not None else None
        return _probe_slice(storage, slices[slot], group, cached_ranges[i], spec, meta)

    total = _ProbeCounts()
    for (slot, _), cache_key, (found, fr, counts) in zip(
        jobs, cache_keys, ordered_map(probe, range(len(jobs)), READ_THREADS), strict=True
    ):
        if fr is not None and cache_key is not None:
            FOOTER_RANGES.put(cache_key, fr)
        for f in found:
            cands.add(slot, f)
        total.add(counts)
    total.log()
    return cands.locate(total.opened, total.keys_read)


@dataclass
class _ProbeCounts:
    """What the probes of a BLOOM lookup did: files opened, key reads (base files whose key
    column was read, and log files), base files without key footers, and base files skipped
    by their cached key range -- for the lookup's counts and log lines."""

    opened: int = 0
    keys_read: int = 0
    no_footer: int = 0
    skipped: int = 0

    def add(self, other: _ProbeCounts) -> None:
        """Count ``other``'s probes in these."""
        self.opened += other.opened
        self.keys_read += other.keys_read
        self.no_footer += other.no_footer
        self.skipped += other.skipped

    def log(self) -> None:
        """Log what a lookup's probes did (base files without footers at info level: their
        keys are read in full, which a user may want to know)."""
        if self.no_footer:
            log.info(
                "BLOOM lookup: %d base file(s) without bloom filter or key range: keys read in "
                "full",
                self.no_footer,
            )
        log.debug(
            "BLOOM lookup: %d base file(s) skipped by cached key ranges, %d file(s) opened",
            self.skipped,
            self.opened,
        )


def _indexed(
    storage: Storage, slices: Sequence[FileSlice], slots: Sequence[int], spec: LookupSpec
) -> list[IndexedFile | None] | None:
    """With ``spec.use_metadata``, what the metadata table says of the base file of each slice
    of ``slots`` (None: the file's footer is read); None when it cannot answer (warned)."""
    if not spec.use_metadata or not any(slices[slot].base_file for slot in slots):
        return None
    files = [
        (slices[slot].partition_path, file_name_of(b.path))
        for slot in slots
        if (b := slices[slot].base_file) is not None
    ]
    found, why = indexed_files(storage, files, spec.prune_by_ranges)
    if found is None:
        log.warning(
            "%s: hoodie.bloom.index.use.metadata: %s; reading the base files' footers",
            storage.base_uri,
            why,
        )
        return None
    out: list[IndexedFile | None] = []
    for slot in slots:
        b = slices[slot].base_file
        entry = (
            None if b is None else found.get((slices[slot].partition_path, file_name_of(b.path)))
        )
        out.append(entry if entry is not None and entry.bloom is not None else None)
    missing = sum(
        1 for slot, e in zip(slots, out, strict=True) if e is None and slices[slot].base_file
    )
    if missing:
        log.warning(
            "%s: the metadata table has no bloom filter of %d base file(s): their footers are read",
            storage.base_uri,
            missing,
        )
    return out


def _probe_slice(
    storage: Storage,
    s: FileSlice,
    group: _KeyGroup,
    cached: FooterRange | None,
    spec: LookupSpec,
    meta: IndexedFile | None = None,
) -> tuple[list[pa.Array], FooterRange | None, _ProbeCounts]:
    """Probe slice ``s`` for the keys of ``group``: its base file unless its ``cached`` key
    range -- or the metadata table's filter and range, ``meta`` -- rules every key out, then
    its logs when they are indexed.

    Returns:
        The slice's keys among the group's, the footer range read (None: the base file was
        not opened), and what the probe did.
    """
    found: list[pa.Array] = []
    fr: FooterRange | None = None
    counts = _ProbeCounts()
    base = s.base_file
    if base is not None and meta is not None:
        read = _probe_indexed(storage, base, group, meta, spec)
        counts.skipped += read is None
        counts.opened += read is not None
        counts.keys_read += read is not None
        if read is not None:
            found.append(read)
    elif base is not None:
        maybe = None if cached is None else cached.keys_to_check(group, spec.prune_by_ranges)
        if maybe is not None and len(maybe) == 0:
            counts.skipped += 1
        else:
            counts.opened += 1
            fr, read = _probe_base_file(storage, base, group, spec)
            counts.no_footer += not fr.has_key_footers and fr.num_rows > 0
            if read is not None:
                counts.keys_read += 1
                found.append(read)
    if reads_logs(spec, s):
        lk, n_logs = log_keys(storage, s, spec)
        counts.opened += n_logs
        counts.keys_read += n_logs
        found.append(lk)
    return found, fr, counts


def _probe_indexed(
    storage: Storage, base: BaseFile, group: _KeyGroup, meta: IndexedFile, spec: LookupSpec
) -> pa.Array | None:
    """Probe a base file with its filter and key range from the metadata table: opened only
    when a key may be in it, for its keys. Returns the file's keys among ``group`` (None:
    not opened)."""
    where = f"base file {storage.full_path(base.path)}"
    maybe = group.keys
    if spec.prune_by_ranges and meta.min_key is not None and meta.max_key is not None:
        maybe = group.in_range(meta.min_key, meta.max_key)
    if len(maybe) and meta.bloom is not None:
        try:
            bf = meta.bloom.bloom_filter()
        except CorruptFileError as e:
            raise CorruptFileError(f"the metadata table's bloom filter of {where}: {e}") from e
        maybe = maybe.filter(pa.array(bf.might_contain(maybe)))
    if not len(maybe):
        return None
    with open_base_file(storage, base) as f:
        try:
            file_keys = read_keys(f, spec, where)
        except HudiError:
            raise  # already names the file
        except (OSError, ValueError) as e:
            raise CorruptFileError(f"cannot read the keys of {where}: {e}") from e
    return file_keys.filter(pc.is_in(file_keys, value_set=maybe))


def _probe_base_file(
    storage: Storage,
    base: BaseFile,
    group: _KeyGroup,
    spec: LookupSpec,
) -> tuple[FooterRange, pa.Array | None]:
    """Open a base file once: its footer (the caller caches its key range), then its bloom
    filter, then its key column when a key may be in it.

    Returns:
        The footer's :class:`FooterRange` and the file's keys among ``group`` (None when its
        key column was not read).
    """
    where = f"base file {storage.full_path(base.path)}"
    with open_base_file(storage, base) as f:
        footer = _footer(f)
        serialized = footer.get(BLOOM_FILTER_FOOTER)
        fr = FooterRange(
            footer.get(MIN_RECORD_KEY_FOOTER),
            footer.get(MAX_RECORD_KEY_FOOTER),
            serialized is not None,
            f.num_rows,
        )
        maybe = fr.keys_to_check(group, spec.prune_by_ranges)
        if maybe is None:  # no key footers: read the keys, as SIMPLE
            maybe = group.keys
        elif serialized is not None and len(maybe):
            try:
                bf = BloomFilter.parse(serialized, footer.get(BLOOM_FILTER_TYPE_CODE_FOOTER))
            except CorruptFileError as e:
                raise CorruptFileError(f"{where}: {e}") from e
            maybe = maybe.filter(pa.array(bf.might_contain(maybe)))
        if not len(maybe):
            return fr, None
        try:
            file_keys = read_keys(f, spec, where)
        except HudiError:
            raise  # already names the file
        except (OSError, ValueError) as e:
            raise CorruptFileError(f"cannot read the keys of {where}: {e}") from e
    return fr, file_keys.filter(pc.is_in(file_keys, value_set=maybe))
