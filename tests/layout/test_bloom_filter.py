"""Hudi's bloom filter footer of base files (hudi_ds/layout/bloom_filter.py).

The decoder and the hash below are the test's own, written from the format's description
(hudi-common ``org.apache.hudi.common.bloom``: ``InternalFilter.write``,
``InternalDynamicBloomFilter.write``, Hadoop's ``MurmurHash`` and ``HashFunction``); they do not
use the code under test. The filters Java wrote into the fixture tables' base files are rebuilt
byte for byte from their keys.
"""

from __future__ import annotations

import base64
import io
import math
import random
import struct
import uuid
import zipfile
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import hudi_ds
from hudi_ds.config import Options, WriteConfig
from hudi_ds.errors import ConfigError, CorruptFileError
from hudi_ds.layout.bloom_filter import (
    BLOOM_FILTER_FOOTER,
    BLOOM_FILTER_TYPE_CODE_FOOTER,
    BloomFilter,
    BloomFilterSpec,
    key_positions,
)
from hudi_ds.layout.parquet import write_base_file
from hudi_ds.services import ServiceContext, compaction
from hudi_ds.storage import Storage
from hudi_ds.write.client import WriteClient
from tests.builders import trips
from tests.conftest import table_options
from tests.fixtures import FIXTURES_DIR, fixture_names, require_fixtures

M32 = 0xFFFFFFFF


# -- the test's own hash and decoder ----------------------------------------------------------


def murmur(data: bytes, seed: int) -> int:
    """Hadoop's MurmurHash2 (32 bit) of ``data``: a signed int."""
    m, r = 0x5BD1E995, 24
    n = len(data)
    h = (seed ^ n) & M32
    blocks = n // 4
    for i in range(blocks):
        k = int.from_bytes(data[4 * i : 4 * i + 4], "little")
        k = (k * m) & M32
        k ^= k >> r
        k = (k * m) & M32
        h = (h * m) & M32
        h ^= k
    left = n - 4 * blocks
    if left:

        def signed(b: int) -> int:  # a Java byte, sign-extended to an int
            return (b - 256 if b >= 128 else b) & M32

        if left >= 3:
            h ^= (signed(data[n - 3]) << 16) & M32
        if left >= 2:
            h ^= (signed(data[n - 2]) << 8) & M32
        h ^= signed(data[n - 1])
        h = (h * m) & M32
    h ^= h >> 13
    h = (h * m) & M32
    h ^= h >> 15
    return h - (1 << 32) if h >= 1 << 31 else h


def positions(key: str, nb_hash: int, vector_size: int) -> list[int]:
    """``HashFunction.hash``: each round seeded with the previous hash; ``abs(h % size)``."""
    data = key.encode("utf-8")
    out, seed = [], 0
    for _ in range(nb_hash):
        seed = murmur(data, seed)
        rem = abs(seed) % vector_size  # Java: abs(seed % size), same value
        out.append(rem)
    return out


@dataclass
class Decoded:
    nb_hash: int
    hash_type: int
    vector_size: int
    nr: int | None
    current: int | None
    rows: list[bytes]

    def maybe(self, key: str) -> bool:
        pos = positions(key, self.nb_hash, self.vector_size)
        return any(all(row[p >> 3] & (1 << (p & 7)) for p in pos) for row in self.rows)


def decode(text: str, dynamic: bool) -> Decoded:
    raw = base64.b64decode(text, validate=True)
    at = 0

    def take(fmt: str) -> tuple:
        nonlocal at
        size = struct.calcsize(fmt)
        out = struct.unpack_from(fmt, raw, at)
        at += size
        return out

    def header() -> tuple[int, int, int]:
        version, nb_hash, hash_type, vector_size = take(">iibi")
        assert version == -1
        return nb_hash, hash_type, vector_size

    def bits(vector_size: int) -> bytes:
        nonlocal at
        n = (vector_size + 7) // 8
        out = raw[at : at + n]
        assert len(out) == n
        at += n
        if vector_size % 8:
            assert out[-1] >> (vector_size % 8) == 0  # unused high bits are 0
        return out

    nb_hash, hash_type, vector_size = header()
    if not dynamic:
        rows, nr, current = [bits(vector_size)], None, None
    else:
        nr, current, n_rows = take(">iii")
        rows = []
        for _ in range(n_rows):
            assert header() == (nb_hash, hash_type, vector_size)
            rows.append(bits(vector_size))
    assert at == len(raw), "trailing bytes"
    return Decoded(nb_hash, hash_type, vector_size, nr, current, rows)


def set_bits(row: bytes) -> int:
    return int(np.unpackbits(np.frombuffer(row, np.uint8)).sum())


# -- hashing -------------------------------------------------------------------------------------


def _random_keys(rng: random.Random, n: int) -> list[str]:
    alphabet = "abcXYZ019_-:/é€\u00ff\U0001f600"
    return ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 23))) for _ in range(n)]


def test_positions_match_the_reference_hash_for_all_lengths_and_signed_tails() -> None:
    rng = random.Random(7)
    keys = [*_random_keys(rng, 300), "a", "ab", "abc", "abcd", "\xff", "\xff\xfe", "é€"]
    got = key_positions(keys, 30, 2587966)
    want = [positions(k, 30, 2587966) for k in keys]
    assert got.tolist() == want
    # the same from a large_string slice with an offset, and from a chunked array
    arr = pa.array(["pad", *keys], pa.large_string()).slice(1)
    assert key_positions(arr, 30, 2587966).tolist() == want
    chunked = pa.chunked_array([pa.array(keys[:5]), pa.array(keys[5:])])
    assert key_positions(chunked, 30, 2587966).tolist() == want


def test_known_murmur_values() -> None:
    # Hadoop MurmurHash.hash(bytes, seed): values of the reference implementation above
    assert murmur(b"", 0) == 0
    for key in ("hello", "id-1", "\x80\x81\x82"):
        pos = key_positions([key], 3, 1000).tolist()[0]
        assert pos == positions(key, 3, 1000)


def test_empty_and_null_keys_are_refused() -> None:
    with pytest.raises(ValueError, match="empty"):
        key_positions(["a", ""], 30, 100)
    with pytest.raises(ValueError, match="null"):
        key_positions(pa.array(["a", None]), 30, 100)


# -- building, serialising, reading --------------------------------------------------------------


def test_default_spec_sizes() -> None:
    spec = BloomFilterSpec()
    assert (spec.vector_size, spec.num_hashes) == (2587966, 30)
    text = spec.new_filter().serialize()
    assert len(text) == 431380
    # version -1, nbHash 30, murmur, vectorSize, nr 60000, currentNbRecord 0, 1 row, its header
    assert base64.b64decode(text)[:38].hex() == (
        "ffffffff0000001e0100277d3e0000ea600000000000000001ffffffff0000001e0100277d3e"
    )


def test_round_trip_and_membership() -> None:
    keys = [str(uuid.UUID(int=random.Random(1).getrandbits(128) + i)) for i in range(2000)]
    bf = BloomFilterSpec().new_filter()
    bf.add(pa.array(keys))
    back = BloomFilter.parse(bf.serialize(), "DYNAMIC_V0")
    assert back.might_contain(keys).all()
    absent = [f"absent-{i}" for i in range(2000)]
    assert not back.might_contain(absent).any()
    assert back.serialize() == bf.serialize()
    dec = decode(bf.serialize(), dynamic=True)
    assert dec.current == 2000 and len(dec.rows) == 1
    assert all(dec.maybe(k) for k in keys[:50])
    with pytest.raises(CorruptFileError):
        BloomFilter.parse(bf.serialize()[:-8], "DYNAMIC_V0")
    with pytest.raises(CorruptFileError):
        BloomFilter.parse("not base64!", None)


def _row_of_each_key(keys: list[str], dec: Decoded) -> list[set[int]]:
    return [
        {
            r
            for r, row in enumerate(dec.rows)
            if all(row[p >> 3] & (1 << (p & 7)) for p in positions(k, dec.nb_hash, dec.vector_size))
        }
        for k in keys
    ]


def test_dynamic_growth_and_saturation() -> None:
    # nr=30, maxNr=60: row 2 opens at key 31; key 61 saturates (2 rows * 30 >= 60) and goes to
    # row 0; then the round robin counter starts at 0: row 0, 1, 0, 1 ...
    # (InternalDynamicBloomFilter.getActiveStandardBF)
    spec = BloomFilterSpec(num_entries=30, fpp=0.001, max_entries=60)
    keys = [f"key-{i:03d}" for i in range(100)]
    bf = spec.new_filter()
    bf.add(keys[:45])  # across batches: the state carries over
    bf.add(keys[45:])
    dec = decode(bf.serialize(), dynamic=True)
    assert dec.nr == 30 and len(dec.rows) == 2
    assert dec.current == 30 + 40  # keys of the last row, counting on once saturated
    assert dec.vector_size == math.ceil(30 * -math.log(0.001) / math.log(2) ** 2)
    expected = [0] * 30 + [1] * 30 + [0] + [(i % 2) for i in range(39)]
    rows = _row_of_each_key(keys, dec)
    for k, want, got in zip(keys, expected, rows, strict=True):
        assert want in got, k
    # one key at a time gives the same filter
    one = spec.new_filter()
    for k in keys:
        one.add([k])
    assert one.serialize() == bf.serialize()


def test_dynamic_growth_below_the_bound() -> None:
    spec = BloomFilterSpec(num_entries=30, fpp=0.01, max_entries=100)
    bf = spec.new_filter()
    bf.add([f"k{i}" for i in range(95)])
    dec = decode(bf.serialize(), dynamic=True)
    # rows open at keys 31, 61, 91 (3*30 < 100); the 4th row holds 5 keys
    assert len(dec.rows) == 4 and dec.current == 5


def test_simple_filter_has_no_type_code() -> None:
    spec = BloomFilterSpec(filter_type="SIMPLE", num_entries=1000, fpp=0.0001)
    bf = spec.new_filter()
    keys = [f"k{i}" for i in range(500)]
    bf.add(keys)
    footer = bf.footer()
    assert set(footer) == {BLOOM_FILTER_FOOTER}
    dec = decode(footer[BLOOM_FILTER_FOOTER], dynamic=False)
    assert dec.nr is None and len(dec.rows) == 1 and all(dec.maybe(k) for k in keys)
    assert BloomFilter.parse(footer[BLOOM_FILTER_FOOTER], None).might_contain(keys).all()


def test_options_declared_and_validated() -> None:
    o = Options.of(
        {
            "hoodie.bloom.index.filter.type": "simple",
            "hoodie.index.bloom.num_entries": "1000",
            "hoodie.index.bloom.fpp": "0.01",
            "hoodie.bloom.index.filter.dynamic.max.entries": "5000",
        }
    )
    o.validate(WriteConfig)
    assert BloomFilterSpec.of(o) == BloomFilterSpec("SIMPLE", 1000, 0.01, 5000)
    assert BloomFilterSpec.of(Options.of({})) == BloomFilterSpec()
    for key, bad in (
        ("hoodie.index.bloom.fpp", "0"),
        ("hoodie.index.bloom.fpp", "1.5"),
        ("hoodie.index.bloom.num_entries", "-3"),
        ("hoodie.index.bloom.num_entries", "many"),
        ("hoodie.bloom.index.filter.dynamic.max.entries", "0"),
        ("hoodie.bloom.index.filter.type", "CUCKOO"),
    ):
        with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
            Options.of({key: bad}).validate(WriteConfig)
    huge = Options.of({"hoodie.index.bloom.num_entries": "2000000000"})
    with pytest.raises(ConfigError, match=r"hoodie\.index\.bloom\.num_entries"):
        BloomFilterSpec.of(huge)


# -- Java's filters, rebuilt byte for byte --------------------------------------------------------


def _fixture_base_files() -> list[tuple[str, str, bytes]]:
    out = []
    for name in fixture_names():
        with zipfile.ZipFile(FIXTURES_DIR / f"{name}.zip") as zf:
            for member in zf.namelist():
                if not member.endswith(".parquet") or "/.hoodie/" in member:
                    continue
                data = zf.read(member)
                if data[:4] == data[-4:] == b"PAR1":  # not the zips' __MACOSX resource forks
                    out.append((name, member, data))
    return out


def test_java_filters_rebuilt_byte_identically() -> None:
    require_fixtures()
    checked = 0
    for name, member, data in _fixture_base_files():
        pf = pq.ParquetFile(io.BytesIO(data))
        meta = {k.decode(): v.decode() for k, v in (pf.metadata.metadata or {}).items()}
        text = meta.get(BLOOM_FILTER_FOOTER)
        if text is None:
            continue
        keys = pf.read(columns=["_hoodie_record_key"]).column(0)
        dynamic = "DYNAMIC" in meta.get(BLOOM_FILTER_TYPE_CODE_FOOTER, "")
        spec = BloomFilterSpec(filter_type="DYNAMIC_V0" if dynamic else "SIMPLE")
        bf = spec.new_filter()
        bf.add(keys)
        assert bf.serialize() == text, f"{name}: {member}"
        assert (
            BloomFilter.parse(text, meta.get(BLOOM_FILTER_TYPE_CODE_FOOTER))
            .might_contain(keys)
            .all()
        )
        checked += 1
    assert checked == 280  # every Java-written base file with a filter (the reference: 280)


# -- the files hudi_ds writes ---------------------------------------------------------------------


def _base_files(path: str) -> list[Path]:
    return sorted(p for p in Path(path).rglob("*.parquet") if ".hoodie" not in p.parts)


DEFAULT_SPEC = BloomFilterSpec()


def check_base_file(file: Path, spec: BloomFilterSpec = DEFAULT_SPEC, absent: int = 300) -> int:
    """Decode the footer of ``file`` with the test's decoder and check it against its keys."""
    pf = pq.ParquetFile(file)
    meta = {k.decode(): v.decode() for k, v in (pf.metadata.metadata or {}).items()}
    keys = pf.read(columns=["_hoodie_record_key"]).column(0).to_pylist()
    dynamic = spec.filter_type == "DYNAMIC_V0"
    assert (meta.get(BLOOM_FILTER_TYPE_CODE_FOOTER) == "DYNAMIC_V0") is dynamic
    dec = decode(meta[BLOOM_FILTER_FOOTER], dynamic)
    vector_size = math.ceil(spec.num_entries * -math.log(spec.fpp) / math.log(2) ** 2)
    assert (dec.nb_hash, dec.hash_type, dec.vector_size) == (
        math.ceil(math.log(2) * vector_size / spec.num_entries),
        1,
        vector_size,
    )
    if dynamic and len(keys) <= spec.num_entries:
        assert dec.nr == spec.num_entries and dec.current == len(keys) and len(dec.rows) == 1
    assert all(dec.maybe(k) for k in keys)
    if len(keys) <= spec.num_entries:  # within the sizing: false positives near the fpp
        rng = random.Random(file.name)
        probes = [f"absent-{rng.getrandbits(64):x}" for _ in range(absent)]
        assert sum(dec.maybe(k) for k in probes if k not in keys) <= absent // 100
    if keys:
        assert (meta["hoodie_min_record_key"], meta["hoodie_max_record_key"]) == (
            min(keys),
            max(keys),
        )
    else:
        assert "hoodie_min_record_key" not in meta and "hoodie_max_record_key" not in meta
    return len(keys)


_rows = partial(trips, key="id-{}", fare=None)


def test_mor_upsert_and_compaction_files_carry_the_filter(tmp_path: Path) -> None:
    path = str(tmp_path / "mor")
    opts = table_options("mor", partition="city", table_type="MERGE_ON_READ")
    hudi_ds.write(path, _rows(range(0, 300), 1), opts)
    hudi_ds.write(path, _rows(range(200, 500), 2), opts)
    ctx = ServiceContext.open(path)
    assert compaction.schedule_compaction(ctx) is not None
    compaction.run_compaction(ctx)
    files = _base_files(path)
    assert files
    assert sum(check_base_file(f) for f in files) == 500


def test_cow_files_carry_the_filter(tmp_path: Path) -> None:
    path = str(tmp_path / "cow")
    opts = table_options("cow", partition="city", table_type="COPY_ON_WRITE")
    hudi_ds.write(path, _rows(range(0, 300), 1), opts)
    hudi_ds.write(path, _rows(range(200, 500), 2), opts)  # merges: carried-over rows too
    latest: dict[str, Path] = {}
    for f in _base_files(path):  # the latest base file of each file group
        fid = f.name.split("_")[0]
        if fid not in latest or f.name.rsplit("_", 1)[1] > latest[fid].name.rsplit("_", 1)[1]:
            latest[fid] = f
    for f in _base_files(path):
        check_base_file(f)
    assert sum(len(pq.read_table(f, columns=["id"])) for f in latest.values()) == 500


def test_cow_with_bloom_options(tmp_path: Path) -> None:
    path = str(tmp_path / "cow_simple")
    opts = {
        **table_options("c", table_type="COPY_ON_WRITE", buckets=1),
        "hoodie.bloom.index.filter.type": "SIMPLE",
        "hoodie.index.bloom.num_entries": "1000",
        "hoodie.index.bloom.fpp": "0.0001",
    }
    hudi_ds.write(path, _rows(range(0, 50), 1), opts)
    (f,) = _base_files(path)
    assert check_base_file(f, BloomFilterSpec("SIMPLE", 1000, 0.0001)) == 50
    path = str(tmp_path / "cow_dyn")
    opts = {
        **table_options("c", table_type="COPY_ON_WRITE", buckets=1),
        "hoodie.index.bloom.num_entries": "30",
        "hoodie.index.bloom.fpp": "0.001",
        "hoodie.bloom.index.filter.dynamic.max.entries": "60",
    }
    hudi_ds.write(path, _rows(range(0, 100), 1), opts)
    (f,) = _base_files(path)
    spec = BloomFilterSpec("DYNAMIC_V0", 30, 0.001, 60)
    assert check_base_file(f, spec) == 100
    text = pq.read_metadata(f).metadata[BLOOM_FILTER_FOOTER.encode()].decode()
    dec = decode(text, dynamic=True)
    assert len(dec.rows) == 2 and dec.current == 70


def test_bad_bloom_option_refused_by_the_writer(tmp_path: Path) -> None:
    opts = {**table_options("c"), "hoodie.index.bloom.fpp": "2"}
    with pytest.raises(ConfigError, match=r"hoodie\.index\.bloom\.fpp"):
        hudi_ds.write(str(tmp_path / "t"), _rows(range(3), 1), opts)


def test_zero_row_base_file(tmp_path: Path) -> None:
    storage = Storage(str(tmp_path))
    schema = pa.schema([("_hoodie_record_key", pa.string()), ("x", pa.int64())])
    write_base_file(storage, "e.parquet", schema.empty_table(), "snappy", BloomFilterSpec())
    assert check_base_file(tmp_path / "e.parquet") == 0


def test_cow_delete_of_every_row_leaves_a_zero_row_file_with_a_filter(tmp_path: Path) -> None:
    path = str(tmp_path / "cow_empty")
    opts = table_options("c", table_type="COPY_ON_WRITE", buckets=1)
    hudi_ds.write(path, _rows(range(0, 5), 1), opts)
    hudi_ds.write(
        path, _rows(range(0, 5), 2), {**opts, "hoodie.datasource.write.operation": "delete"}
    )
    counts = sorted(check_base_file(f) for f in _base_files(path))
    assert counts == [0, 5]  # the merge's file of no rows: a filter, no key range (as Java)
    for f in _base_files(path):
        # nothing of the merged file's footer carried over through the Arrow schema
        stored = base64.b64decode(pq.read_metadata(f).metadata[b"ARROW:schema"])
        arrow = pa.ipc.read_schema(pa.py_buffer(stored)).metadata or {}
        assert not {k for k in arrow if k.startswith((b"hoodie", b"org.apache.hudi"))}


@pytest.mark.parametrize("table_type", ["COPY_ON_WRITE", "MERGE_ON_READ"])
@pytest.mark.parametrize("index", ["SIMPLE", "GLOBAL_BLOOM"])
def test_files_of_non_bucket_index_writes_carry_the_filter(
    index: str, table_type: str, tmp_path: Path
) -> None:
    """Every base file a non-bucket index writes -- new file groups, small files rewritten
    with inserts (COW and MOR), insert slots of several tasks packed at commit -- carries a
    filter holding each of its keys (decoded by the test's own decoder)."""
    path = str(tmp_path / "t")
    opts = {
        **table_options("t", partition="city", table_type=table_type),
        "hoodie.index.type": index,
        "hoodie.parquet.max.file.size": 40_000,
        "hoodie.parquet.small.file.limit": 30_000,
        "hoodie.copyonwrite.record.size.estimate": 100,
    }
    hudi_ds.write(path, _rows(range(0, 200), 1), opts)
    hudi_ds.write(path, _rows(range(150, 400), 2), opts)  # updates, small files, new groups
    client = WriteClient(path, opts)  # two Spark-like tasks: insert slots packed at commit
    parts = (_rows(range(390, 460), 3), _rows(range(430, 520), 3))
    instant = client.start(parts[0].schema)
    statuses = []
    for i, part in enumerate(parts):
        task = client.task_writer(instant, i, exclusive=False)
        task.write(part)
        statuses += task.close()
    client.commit(instant, statuses)
    files = _base_files(path)
    assert len(files) >= 4
    written = [check_base_file(f) for f in files]
    assert all(n > 0 for n in written)
    ids = hudi_ds.read(path, columns=["id"]).column("id").to_pylist()
    assert sorted(ids) == sorted(f"id-{i}" for i in range(520))  # each key once
