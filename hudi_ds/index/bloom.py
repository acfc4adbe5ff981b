"""Hudi's BLOOM and GLOBAL_BLOOM indexes: footers first, keys only of the files that may match.

Java (``HoodieBloomIndex.tagLocation`` / ``HoodieGlobalBloomIndex``), per candidate base file:

1. ``loadColumnRangesFromFiles``: the file's key range, the ``hoodie_min_record_key`` /
   ``hoodie_max_record_key`` footers; with ``hoodie.bloom.index.prune.by.ranges`` a key outside
   a file's range is not compared with it (``IntervalTreeBasedIndexFileFilter``); a file without
   a range is a candidate for every key;
2. ``HoodieKeyLookupHandle``: the file's bloom filter (``org.apache.hudi.bloomfilter`` footer,
   :mod:`hudi_ds.layout.bloom`) says which of those keys it may hold;
3. ``HoodieKeyLookupHandle.getLookupResult`` -> ``HoodieIndexUtils.filterKeysFromFile``: the
   keys that may be in the file are confirmed against its actual record keys.

Here each candidate base file is opened once: its Parquet footer is read, the incoming keys in
its range are found by binary search over the sorted distinct incoming keys (of its partition,
or all of them when global), tested against its bloom filter in one vectorised call, and only
when some key may be in it is its key column read (in the same open). A file with no bloom
filter and no range (a table without meta fields, whose files have no key footers, as Java's)
has its keys read as SIMPLE does. Logs are read as SIMPLE reads them (:mod:`hudi_ds.index.simple`,
``spec.read_logs``): Java's BLOOM index does not index log files, but a key that only a log
holds must still be found where it lives, not inserted again.

The range test uses code point order (Arrow's and Python's string order); Java's
``String.compareTo`` orders UTF-16 units, which differs only between characters U+E000..U+FFFF
and supplementary ones. Keys holding a character from U+E000 up are therefore never pruned by
range, nor files whose range bounds hold one: pruning stays conservative.

A key found in several file groups is located as :mod:`hudi_ds.index.simple` documents.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from hudi_ds.errors import CorruptFileError, HudiError
from hudi_ds.index.lookup import KeyLocations, LookupSpec
from hudi_ds.index.simple import (
    Candidates,
    check_input,
    log_keys,
    open_base_file,
    read_parquet_keys,
)
from hudi_ds.layout.bloom import BLOOM_FILTER_FOOTER, BLOOM_FILTER_TYPE_CODE_FOOTER, BloomFilter
from hudi_ds.layout.file_group import FileSlice
from hudi_ds.layout.parquet import MAX_RECORD_KEY_FOOTER, MIN_RECORD_KEY_FOOTER
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


def _footer(pf: pq.ParquetFile) -> dict[str, str]:
    meta = pf.metadata.metadata or {}
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

    ``files_read`` counts every base file opened (each once: its footer, and its key column in
    the same open when a key may be in it) and every log file read; ``keys_read`` the base files
    whose key column was read plus the log files.

    Raises:
        CorruptFileError: also when a base file's bloom filter footer does not decode (the
            message names the file).
    """
    keys, partitions = check_input(keys, partitions)
    cands = Candidates(slices, pc.unique(keys))
    opened = keys_read = no_footer = 0
    groups = _key_groups(keys, partitions) if len(keys) else {}
    for slot, s in enumerate(slices):
        group = groups.get(None if partitions is None else s.partition_path)
        if group is None:
            continue
        if s.base_file is not None:
            where = f"base file {storage.full_path(s.base_file.path)}"
            with open_base_file(storage, s.base_file) as pf:
                opened += 1
                footer = _footer(pf)
                maybe = group.keys
                lo, hi = footer.get(MIN_RECORD_KEY_FOOTER), footer.get(MAX_RECORD_KEY_FOOTER)
                serialized = footer.get(BLOOM_FILTER_FOOTER)
                if serialized is None and (lo is None or hi is None):
                    no_footer += 1  # no key footers: read the keys, as SIMPLE
                else:
                    if spec.prune_by_ranges and lo is not None and hi is not None:
                        maybe = group.in_range(lo, hi)
                    if serialized is not None and len(maybe):
                        try:
                            bf = BloomFilter.parse(
                                serialized, footer.get(BLOOM_FILTER_TYPE_CODE_FOOTER)
                            )
                        except CorruptFileError as e:
                            raise CorruptFileError(f"{where}: {e}") from e
                        maybe = maybe.filter(pa.array(bf.might_contain(maybe)))
                if len(maybe):
                    try:
                        file_keys = read_parquet_keys(pf, spec, where)
                    except HudiError:
                        raise  # already names the file
                    except (OSError, ValueError) as e:
                        raise CorruptFileError(f"cannot read the keys of {where}: {e}") from e
                    keys_read += 1
                    cands.add(slot, file_keys.filter(pc.is_in(file_keys, value_set=maybe)))
        if spec.read_logs and s.log_files:
            lk, n_logs = log_keys(storage, s, spec)
            opened += n_logs
            keys_read += n_logs
            cands.add(slot, lk)
    if no_footer:
        log.info(
            "BLOOM lookup: %d base file(s) without bloom filter or key range: keys read in full",
            no_footer,
        )
    return cands.locate(keys, partitions, opened, keys_read)
