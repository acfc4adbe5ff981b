"""BLOOM / GLOBAL_BLOOM lookups (hudi_ds.index.bloom): same locations as SIMPLE (checked against
locations computed independently from the files), fewer key column reads, footers honoured; the
process-wide footer range cache: fewer files opened on a warm cache, never a stale entry."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from hudi_ds.errors import ConfigError, CorruptFileError
from hudi_ds.index import LookupSpec
from hudi_ds.index.bloom import (
    DEFAULT_FOOTER_RANGE_ENTRIES,
    FOOTER_RANGES,
    FooterRange,
    FooterRangeCache,
    bloom_lookup,
)
from hudi_ds.index.simple import simple_lookup
from hudi_ds.layout.bloom_filter import BLOOM_FILTER_FOOTER, BloomFilter, BloomFilterSpec
from hudi_ds.layout.file_group import BaseFile, FileSlice
from hudi_ds.layout.naming import base_file_name, parse_base_file_name
from hudi_ds.layout.parquet import MAX_RECORD_KEY_FOOTER, MIN_RECORD_KEY_FOOTER, write_base_file
from tests.fixtures import fixture_table, require_base_file_reader
from tests.index.test_simple import (  # noqa: F401 - *_table: pytest fixtures
    LANCE_FIXTURES,
    NEW,
    PARQUET_FIXTURES,
    CountingStorage,
    as_tuples,
    built_cow_table,
    built_mor_table,
    check_fixture,
    check_lookup,
    cow_table,
    lookup_inputs,
    mor_table,
    table_slices,
)

SPEC = LookupSpec(("id",), False)
PRUNE_OFF = LookupSpec(("id",), False, prune_by_ranges=False)
INSTANT = "20240101000000000"
DEFAULT_BLOOM = BloomFilterSpec()


@pytest.fixture(autouse=True)
def cold_footer_cache() -> Any:
    """Every test starts on a cold footer range cache (and leaves none behind)."""
    FOOTER_RANGES.clear()
    yield
    FOOTER_RANGES.clear()


class KeyReads:
    """Counts key column reads (``ParquetFile.read``) and keys tested against bloom filters."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.reads = 0
        self.tested = 0
        read, might = pq.ParquetFile.read, BloomFilter.might_contain

        def counting_read(pf: pq.ParquetFile, *a: Any, **kw: Any) -> pa.Table:
            self.reads += 1
            return read(pf, *a, **kw)

        def counting_might(bf: BloomFilter, keys: Any) -> np.ndarray:
            self.tested += len(keys)
            return might(bf, keys)

        monkeypatch.setattr(pq.ParquetFile, "read", counting_read)
        monkeypatch.setattr(BloomFilter, "might_contain", counting_might)

    def reset(self) -> None:
        self.reads = self.tested = 0


def _base_file(
    storage: CountingStorage,
    partition: str,
    file_id: str,
    keys: list[str],
    bloom: BloomFilterSpec | None = DEFAULT_BLOOM,
    footer: dict[str, str] | None = None,
    instant: str = INSTANT,
) -> FileSlice:
    """A base file of ``keys`` written as hudi_ds' writers write them (footer=...: a file with
    exactly these footer entries instead), its size as a listing gives it."""
    name = base_file_name(file_id, "0-1-1", instant)
    path = f"{partition}/{name}"
    table = pa.table({"_hoodie_record_key": pa.array(keys, pa.string()), "v": range(len(keys))})
    if footer is None:
        write_base_file(storage, path, table, "snappy", bloom)
    else:
        storage.makedirs(partition)
        with pq.ParquetWriter(storage.full_path(path), table.schema) as w:
            w.write_table(table)
            w.add_key_value_metadata(footer)
    info = storage.info(path)
    assert info is not None
    base = BaseFile(path, parse_base_file_name(name), info.size)  # type: ignore[arg-type]
    return FileSlice(partition, file_id, instant, base)


@pytest.mark.parametrize("name", PARQUET_FIXTURES)
def test_bloom_on_fixture(name: str, tmp_path_factory: Any) -> None:
    """Cold (the first lookup), then warm: the same expected locations."""
    check_fixture(name, bloom_lookup, tmp_path_factory)
    _, slices, _ = table_slices(fixture_table(name, tmp_path_factory))
    assert len(FOOTER_RANGES) == sum(s.base_file is not None for s in slices)
    check_fixture(name, bloom_lookup, tmp_path_factory)


@pytest.mark.parametrize("name", LANCE_FIXTURES)
def test_bloom_on_lance_fixture(name: str, tmp_path_factory: Any) -> None:
    """Lance base files keep the key footers in their schema metadata (Java
    ``HoodieBaseLanceWriter.finalizeFooterMetadata``): read as Parquet footers are, their key
    ranges cached."""
    require_base_file_reader(name)
    check_fixture(name, bloom_lookup, tmp_path_factory)
    storage, slices, _ = table_slices(fixture_table(name, tmp_path_factory))
    bases = [s.base_file for s in slices if s.base_file is not None]
    assert bases and all(b.name.extension == ".lance" for b in bases)
    for b in bases:
        key = FooterRangeCache.key(storage, b)
        assert key is not None
        fr = FOOTER_RANGES.get(key)
        assert fr is not None and fr.has_filter and fr.min_key and fr.num_rows > 0
    check_fixture(name, bloom_lookup, tmp_path_factory)


@pytest.mark.parametrize("global_", [False, True])
@pytest.mark.parametrize("table", ["cow_table", "mor_table"])
def test_bloom_equals_simple_on_hudi_ds_tables(
    table: str, global_: bool, request: pytest.FixtureRequest
) -> None:
    root: Path = request.getfixturevalue(table)
    storage, slices, spec = table_slices(root)
    keys, parts = lookup_inputs(root, slices, spec)
    p = None if global_ else parts
    simple = simple_lookup(
        storage, slices, pa.array(keys), None if p is None else pa.array(p), spec
    )
    prune_off = LookupSpec(spec.record_key_fields, spec.complex_key, prune_by_ranges=False)
    # cold, warm, then without pruning on the warm cache
    for s, cached in ((spec, 0), (spec, len(slices)), (prune_off, len(slices))):
        assert len(FOOTER_RANGES) == cached
        r = check_lookup(bloom_lookup, root, storage, slices, keys, p, s)
        assert as_tuples(r) == as_tuples(simple)


def test_time_ordered_keys_read_few_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """20 base files of increasing keys: looking up one file's keys plus new, larger keys, BLOOM
    reads the key column of that one file; SIMPLE reads all 20."""
    storage = CountingStorage(str(tmp_path))
    slices = [
        _base_file(
            storage, "p", f"f{f:02d}-0", [f"k{i:06d}" for i in range(f * 100 + 1, f * 100 + 101)]
        )
        for f in range(20)
    ]
    keys = [f"k{i:06d}" for i in range(701, 801)] + [f"k{i:06d}" for i in range(2001, 2051)]
    parts = ["p"] * len(keys)
    counted = KeyReads(monkeypatch)

    storage.opened.clear()
    r = check_lookup(simple_lookup, tmp_path, storage, slices, keys, parts, SPEC)
    assert r.file_id.to_pylist() == ["f07-0"] * 100 + [None] * 50
    assert (r.files_read, r.keys_read, counted.reads, len(storage.opened)) == (20, 20, 20, 20)

    storage.opened.clear()
    counted.reset()
    rb = check_lookup(bloom_lookup, tmp_path, storage, slices, keys, parts, SPEC)
    assert as_tuples(rb) == as_tuples(r)
    # every footer opened once; one key column read; only file 7's keys met its bloom filter
    assert (rb.files_read, rb.keys_read, counted.reads, len(storage.opened)) == (20, 1, 1, 20)
    assert sorted(storage.opened) == sorted(s.base_file.path for s in slices if s.base_file)
    assert counted.tested == 100

    # without range pruning every key meets every bloom filter, still one key column read
    counted.reset()
    ro = check_lookup(bloom_lookup, tmp_path, storage, slices, keys, parts, PRUNE_OFF)
    assert as_tuples(ro) == as_tuples(r)
    assert (ro.keys_read, counted.reads, counted.tested) == (1, 1, 20 * 150)

    # global: the same
    counted.reset()
    rg = check_lookup(bloom_lookup, tmp_path, storage, slices, keys, None, SPEC)
    assert as_tuples(rg) == as_tuples(r) and counted.reads == 1


def _time_ordered_table(storage: CountingStorage) -> list[FileSlice]:
    """20 base files of 100 increasing keys each: f00 k000001..k000100, ..., f19 ..k002000."""
    return [
        _base_file(
            storage, "p", f"f{f:02d}-0", [f"k{i:06d}" for i in range(f * 100 + 1, f * 100 + 101)]
        )
        for f in range(20)
    ]


#: a later write's keys on the time-ordered table: updates of file 7, then new larger keys
LATER_KEYS = [f"k{i:06d}" for i in range(701, 801)] + [f"k{i:06d}" for i in range(2001, 2051)]


def test_time_ordered_keys_open_one_file_on_a_warm_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The acceptance count: a later BLOOM lookup in the same process opens only the file
    whose key range holds keys (1 of 20); SIMPLE opens and reads all 20."""
    storage = CountingStorage(str(tmp_path))
    slices = _time_ordered_table(storage)
    parts = ["p"] * len(LATER_KEYS)
    counted = KeyReads(monkeypatch)
    f07 = slices[7].base_file.path  # type: ignore[union-attr]

    # a first write's lookup (cold): every footer is opened, its range cached
    first = [f"k{i:06d}" for i in range(2001, 2101)]  # only new keys
    r0 = check_lookup(bloom_lookup, tmp_path, storage, slices, first, ["p"] * 100, SPEC)
    assert not any(r0.found.to_pylist())
    assert (r0.files_read, r0.keys_read, counted.reads, len(storage.opened)) == (20, 0, 0, 20)
    assert len(FOOTER_RANGES) == 20

    # the later write's lookup (warm): one file opened, its key column read
    storage.opened.clear()
    counted.reset()
    rb = check_lookup(bloom_lookup, tmp_path, storage, slices, LATER_KEYS, parts, SPEC)
    assert rb.file_id.to_pylist() == ["f07-0"] * 100 + [None] * 50
    assert (rb.files_read, rb.keys_read, counted.reads, storage.opened) == (1, 1, 1, [f07])
    assert counted.tested == 100  # only file 7's in-range keys met a bloom filter

    storage.opened.clear()
    counted.reset()
    rs = check_lookup(simple_lookup, tmp_path, storage, slices, LATER_KEYS, parts, SPEC)
    assert as_tuples(rs) == as_tuples(rb)
    assert (rs.files_read, rs.keys_read, counted.reads, len(storage.opened)) == (20, 20, 20, 20)

    # global: the same single open
    storage.opened.clear()
    rg = check_lookup(bloom_lookup, tmp_path, storage, slices, LATER_KEYS, None, SPEC)
    assert as_tuples(rg) == as_tuples(rb) and storage.opened == [f07]

    # only new keys: nothing opened at all
    storage.opened.clear()
    rn = check_lookup(bloom_lookup, tmp_path, storage, slices, LATER_KEYS[100:], parts[100:], SPEC)
    assert (rn.files_read, storage.opened) == (0, []) and not any(rn.found.to_pylist())

    # without range pruning the filters are needed: every file opened (filters are not cached)
    storage.opened.clear()
    ro = check_lookup(bloom_lookup, tmp_path, storage, slices, LATER_KEYS, parts, PRUNE_OFF)
    assert as_tuples(ro) == as_tuples(rb) and ro.files_read == 20


def test_a_new_version_of_a_file_is_not_served_from_the_cache(tmp_path: Path) -> None:
    """File 19's group takes the new keys 2001..2050 in a new base file (new instant, new path):
    its old cached range (..2000) must not prune them."""
    storage = CountingStorage(str(tmp_path))
    slices = _time_ordered_table(storage)
    parts = ["p"] * len(LATER_KEYS)
    check_lookup(bloom_lookup, tmp_path, storage, slices, LATER_KEYS, parts, SPEC)  # warm up
    old = slices[19].base_file.path  # type: ignore[union-attr]
    slices[19] = _base_file(
        storage,
        "p",
        "f19-0",
        [f"k{i:06d}" for i in range(1901, 2051)],
        instant="20240102000000000",
    )
    new = slices[19].base_file.path  # type: ignore[union-attr]
    assert new != old
    storage.opened.clear()
    r = check_lookup(bloom_lookup, tmp_path, storage, slices, LATER_KEYS, parts, SPEC)
    assert (
        as_tuples(r) == [("f07-0", "p", INSTANT)] * 100 + [("f19-0", "p", "20240102000000000")] * 50
    )
    assert sorted(storage.opened) == sorted([slices[7].base_file.path, new])  # type: ignore[union-attr]
    assert len(FOOTER_RANGES) == 21  # the old file's entry is simply never asked for again


def test_a_cached_path_listed_with_another_size_misses(tmp_path: Path) -> None:
    """The same path rewritten with other keys (another size): the entry cached for the old
    size is not used; a base file of unknown size (0) is never served from the cache."""
    storage = CountingStorage(str(tmp_path))
    slices = _time_ordered_table(storage)
    parts = ["p"] * len(LATER_KEYS)
    check_lookup(bloom_lookup, tmp_path, storage, slices, LATER_KEYS, parts, SPEC)  # warm up
    before = slices[19].base_file
    assert before is not None
    slices[19] = _base_file(storage, "p", "f19-0", [f"k{i:06d}" for i in range(1901, 2051)])
    after = slices[19].base_file
    assert after is not None and after.path == before.path and after.size != before.size
    storage.opened.clear()
    r = check_lookup(bloom_lookup, tmp_path, storage, slices, LATER_KEYS, parts, SPEC)
    assert r.file_id.to_pylist() == ["f07-0"] * 100 + ["f19-0"] * 50
    assert sorted(storage.opened) == sorted([slices[7].base_file.path, after.path])  # type: ignore[union-attr]

    unknown = [
        FileSlice(s.partition_path, s.file_id, s.base_instant_time, replace(s.base_file, size=0))  # type: ignore[arg-type]
        for s in slices
    ]
    storage.opened.clear()
    r = check_lookup(bloom_lookup, tmp_path, storage, unknown, LATER_KEYS, parts, SPEC)
    assert r.files_read == len(storage.opened) == 20


def test_footer_range_cache_is_bounded_lru(tmp_path: Path) -> None:
    cache = FooterRangeCache(max_entries=2)
    entry = FooterRange("a", "b", True, 1)
    keys = [("local", f"/t/f{i}", 10) for i in range(3)]
    cache.put(keys[0], entry)
    cache.put(keys[1], entry)
    assert cache.get(keys[0]) == entry  # now the most recently used
    cache.put(keys[2], entry)  # evicts keys[1]
    assert (cache.get(keys[1]), cache.get(keys[0]), cache.get(keys[2]), len(cache)) == (
        None,
        entry,
        entry,
        2,
    )
    cache.resize(1)
    assert len(cache) == 1 and cache.get(keys[2]) == entry
    cache.resize(0)  # disabled
    cache.put(keys[0], entry)
    assert len(cache) == 0 and cache.get(keys[0]) is None
    with pytest.raises(ConfigError, match="max_entries"):
        cache.resize(-1)

    # the process cache bounded below the table's 20 files: a lookup asks the cache for every
    # file first, then fills it in the files' order (whatever order the parallel probes finish
    # in), so the last 5 files stay cached and the next lookup opens only the other 15 (still
    # right); bounded at 20, one
    storage = CountingStorage(str(tmp_path))
    slices = _time_ordered_table(storage)
    parts = ["p"] * len(LATER_KEYS)
    try:
        for bound, opened in ((5, 15), (20, 1)):
            FOOTER_RANGES.resize(bound)
            check_lookup(bloom_lookup, tmp_path, storage, slices, LATER_KEYS, parts, SPEC)
            assert len(FOOTER_RANGES) == bound
            cached = [FooterRangeCache.key(storage, s.base_file) in FOOTER_RANGES for s in slices]  # type: ignore[arg-type]
            assert cached == [False] * (20 - bound) + [True] * bound
            r = check_lookup(bloom_lookup, tmp_path, storage, slices, LATER_KEYS, parts, SPEC)
            assert r.files_read == opened
    finally:
        FOOTER_RANGES.resize(DEFAULT_FOOTER_RANGE_ENTRIES)


def test_files_without_key_footers_have_their_keys_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    storage = CountingStorage(str(tmp_path))
    slices = [
        _base_file(storage, "p", "plain-0", ["a1", "a2"], bloom=None),  # no footers at all
        _base_file(
            storage,
            "p",
            "range-0",
            ["m1", "m2"],
            footer={MIN_RECORD_KEY_FOOTER: "m1", MAX_RECORD_KEY_FOOTER: "m2"},
        ),  # range, no filter
        _base_file(storage, "p", "bloom-0", ["x1", "x2"]),
        _base_file(storage, "p", "empty-0", []),  # a filter, no range (0 rows)
    ]
    counted = KeyReads(monkeypatch)
    keys = ["a2", "m2", "x1", "zz", "b0"]
    r = check_lookup(bloom_lookup, tmp_path, storage, slices, keys, ["p"] * 5, SPEC)
    assert r.file_id.to_pylist() == ["plain-0", "range-0", "bloom-0", None, None]
    assert (r.files_read, r.keys_read, counted.reads) == (4, 3, 3)
    # keys outside the range file's range and not in the filter: only the plain file is read
    FOOTER_RANGES.clear()
    counted.reset()
    r = bloom_lookup(storage, slices, pa.array(["zz", "b0"]), pa.array(["p", "p"]), SPEC)
    assert as_tuples(r) == [NEW, NEW]
    assert (r.files_read, r.keys_read, counted.reads) == (4, 1, 1)
    # warm: the ranged files and the empty one are not even opened; the plain one is, always
    counted.reset()
    storage.opened.clear()
    r = bloom_lookup(storage, slices, pa.array(["zz", "b0"]), pa.array(["p", "p"]), SPEC)
    assert as_tuples(r) == [NEW, NEW]
    assert (r.files_read, r.keys_read, counted.reads) == (1, 1, 1)
    assert storage.opened == [slices[0].base_file.path]  # type: ignore[union-attr]
    # a key in the range file's range: it is opened (no filter: its keys are read)
    r = check_lookup(bloom_lookup, tmp_path, storage, slices, ["m2", "m15"], ["p"] * 2, SPEC)
    assert r.file_id.to_pylist() == ["range-0", None] and r.files_read == 2


def test_corrupt_bloom_filter_footer_names_the_file(tmp_path: Path) -> None:
    storage = CountingStorage(str(tmp_path))
    s = _base_file(storage, "p", "bad-0", ["k1"], footer={BLOOM_FILTER_FOOTER: "AAAA"})
    with pytest.raises(CorruptFileError, match="bad-0_0-1-1"):
        bloom_lookup(storage, [s], pa.array(["k1"]), None, SPEC)


def test_range_pruning_is_safe_for_java_utf16_order(tmp_path: Path) -> None:
    """Java orders keys by UTF-16 units: U+1F600 (surrogates D83D..) sorts before U+FFFD, the
    reverse of code point order. A file whose footer Java wrote with min=U+1F600, max=U+FFFD
    still holds both keys and a key between them."""
    storage = CountingStorage(str(tmp_path))
    emoji, high, mid = "\U0001f600", "\ufffd", "\ufffa"
    bf = BloomFilterSpec().new_filter()
    bf.add([emoji, high, mid])
    footer = {**bf.footer(), MIN_RECORD_KEY_FOOTER: emoji, MAX_RECORD_KEY_FOOTER: high}
    s = _base_file(storage, "p", "utf16-0", [emoji, high, mid], footer=footer)
    for keys in ([emoji, high, mid, "a"], [mid], [emoji]):
        r = check_lookup(bloom_lookup, tmp_path, storage, [s], keys, None, SPEC)
        assert r.found.to_pylist() == [k != "a" for k in keys]


def test_partitions_are_pruned_before_footers(tmp_path: Path) -> None:
    storage = CountingStorage(str(tmp_path))
    slices = [
        _base_file(storage, "a", "fa-0", ["k1", "k2"]),
        _base_file(storage, "b", "fb-0", ["k1", "k3"]),
    ]
    r = check_lookup(bloom_lookup, tmp_path, storage, slices, ["k1", "k3"], ["b", "a"], SPEC)
    assert as_tuples(r) == [("fb-0", "b", INSTANT), NEW]
    assert r.files_read == 2
    storage.opened.clear()
    r = check_lookup(bloom_lookup, tmp_path, storage, slices, ["k1"], ["a"], SPEC)
    assert as_tuples(r) == [("fa-0", "a", INSTANT)]
    assert storage.opened == ["a/" + base_file_name("fa-0", "0-1-1", INSTANT)]


@pytest.mark.parametrize("name", PARQUET_FIXTURES)
def test_java_footers_spare_key_reads(name: str, tmp_path_factory: Any) -> None:
    """Keys of no file: BLOOM reads the key column only of base files without key footers (and
    the logs, always); every base file is opened once for its footer."""
    root = fixture_table(name, tmp_path_factory)
    storage, slices, spec = table_slices(root)
    bases = [s.base_file for s in slices if s.base_file is not None]
    no_footer = 0
    for b in bases:
        meta = pq.ParquetFile(root / b.path).metadata.metadata or {}
        no_footer += BLOOM_FILTER_FOOTER.encode() not in meta and (
            MIN_RECORD_KEY_FOOTER.encode() not in meta
        )
    n_logs = sum(len(s.log_files) for s in slices) if spec.read_logs else 0
    r = bloom_lookup(storage, slices, pa.array(["~~no-such-key", "  no-such-key"]), None, spec)
    assert as_tuples(r) == [NEW, NEW]
    assert r.files_read == len(bases) + n_logs
    assert r.keys_read == no_footer + n_logs
