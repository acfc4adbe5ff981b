"""Hudi's bloom filter of a base file's record keys (the ``org.apache.hudi.bloomfilter`` footer).

Java writes one into the footer of every base file of a table with meta fields, so that the
BLOOM index can tell which files may hold a key (hudi-common ``org.apache.hudi.common.bloom``:
``SimpleBloomFilter``, ``HoodieDynamicBoundedBloomFilter`` over ``InternalBloomFilter`` /
``InternalDynamicBloomFilter``, ported from Hadoop's ``org.apache.hadoop.util.bloom``). This
module builds and reads them byte-identically:

* key positions: MurmurHash2 32-bit (Hadoop's ``MurmurHash``) of the key's UTF-8 bytes, chained
  ``nbHash`` times (each round seeded with the previous hash), ``abs(h % vectorSize)``
  (``HashFunction.hash``), computed for a whole batch of keys at once with numpy;
* the serialised form: ``InternalFilter.write`` header (version -1, nbHash, hash type 1 = murmur,
  vectorSize), for a dynamic filter ``nr``, ``currentNbRecord``, the row count and each row as a
  full filter; bits least significant first in each byte; then standard Base64.
"""

from __future__ import annotations

import base64
import math
import struct
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from itertools import pairwise

import numpy as np
import pyarrow as pa

from hudi_ds.config import Options, WriteConfig
from hudi_ds.errors import ConfigError, CorruptFileError

#: Footer key of the serialised filter
#: (``HoodieBloomFilterWriteSupport.HOODIE_AVRO_BLOOM_FILTER_METADATA_KEY``).
BLOOM_FILTER_FOOTER = "org.apache.hudi.bloomfilter"
#: Footer key of the filter's type code, written only for dynamic filters
#: (``HoodieBloomFilterWriteSupport.HOODIE_BLOOM_FILTER_TYPE_CODE``).
BLOOM_FILTER_TYPE_CODE_FOOTER = "hoodie_bloom_filter_type_code"

SIMPLE = "SIMPLE"
DYNAMIC_V0 = "DYNAMIC_V0"

#: ``org.apache.hudi.common.util.hash.Hash.MURMUR_HASH``: the only hash Hudi creates filters with.
MURMUR_HASH = 1
_VERSION = -1  # InternalFilter.VERSION
_M = np.uint32(0x5BD1E995)


@dataclass(frozen=True)
class BloomFilterSpec:
    """How the filters of new base files are made (Hudi's ``HoodieIndexConfig`` bloom options).

    Attributes:
        filter_type: ``DYNAMIC_V0`` (grows by rows of ``num_entries`` keys up to
            ``max_entries``) or ``SIMPLE`` (one fixed row).
        num_entries: keys one row is sized for (``hoodie.index.bloom.num_entries``).
        fpp: false positive probability of a row (``hoodie.index.bloom.fpp``).
        max_entries: keys after which a dynamic filter stops growing
            (``hoodie.bloom.index.filter.dynamic.max.entries``).
    """

    filter_type: str = DYNAMIC_V0
    num_entries: int = 60000
    fpp: float = 0.000000001
    max_entries: int = 100000

    @classmethod
    def of(cls, options: Options) -> BloomFilterSpec:
        """The spec the validated write ``options`` ask for.

        Raises:
            ConfigError: the number of keys and the fpp need a row of 2^31 bits or more.
        """
        spec = cls(
            filter_type=options.get(WriteConfig.BLOOM_FILTER_TYPE),
            num_entries=options.get(WriteConfig.BLOOM_NUM_ENTRIES),
            fpp=options.get(WriteConfig.BLOOM_FPP),
            max_entries=options.get(WriteConfig.BLOOM_DYNAMIC_MAX_ENTRIES),
        )
        try:
            bloom_vector_size(spec.num_entries, spec.fpp)
        except ValueError as e:
            raise ConfigError(
                f"options '{WriteConfig.BLOOM_NUM_ENTRIES.key}'={spec.num_entries} and "
                f"'{WriteConfig.BLOOM_FPP.key}'={spec.fpp}: {e}"
            ) from None
        return spec

    @classmethod
    def for_base_files(
        cls, options: Options, populate_meta_fields: bool, index_type: str, mdt_bloom_filters: bool
    ) -> BloomFilterSpec | None:
        """The spec of the key footers a write's base files carry, None for none: Java
        ``HoodieFileWriterFactory.enableBloomFilter`` -- meta fields populated, and
        ``hoodie.parquet.bloom.filter.enabled`` or a BLOOM ``index_type``; here also whenever
        the metadata table keeps its bloom_filters partition (``mdt_bloom_filters``, or the
        option asking for it), whose records are the files' filters.

        Raises:
            ConfigError: as :meth:`of`.
        """
        if not populate_meta_fields:
            return None
        wanted = (
            options.get(WriteConfig.PARQUET_BLOOM_FILTER_ENABLED)
            or "BLOOM" in index_type
            or mdt_bloom_filters
            or bool(options.get(WriteConfig.METADATA_BLOOM_FILTER_ENABLE))
        )
        return cls.of(options) if wanted else None

    @property
    def vector_size(self) -> int:
        """Bits of one row (``BloomFilterUtils.getBitSize``: double arithmetic, ceil, int)."""
        return bloom_vector_size(self.num_entries, self.fpp)

    @property
    def num_hashes(self) -> int:
        """Hash positions per key (``BloomFilterUtils.getNumHashes``)."""
        return math.ceil(math.log(2) * self.vector_size / self.num_entries)

    def new_filter(self) -> BloomFilter:
        """An empty filter of this spec."""
        return BloomFilter(
            vector_size=self.vector_size,
            num_hashes=self.num_hashes,
            dynamic=self.filter_type == DYNAMIC_V0,
            nr=self.num_entries,
            max_nr=self.max_entries,
        )


def bloom_vector_size(num_entries: int, fpp: float) -> int:
    """``ceil(num_entries * -ln(fpp) / ln(2)^2)``, as ``BloomFilterUtils.getBitSize`` computes it.

    Raises:
        ValueError: the size does not fit a Java int (Java would saturate it silently).
    """
    size = math.ceil(num_entries * (-math.log(fpp) / (math.log(2) * math.log(2))))
    if size >= 2**31:
        raise ValueError(f"a filter of {num_entries} keys at fpp {fpp} needs {size} bits (>= 2^31)")
    return size


def key_buffers(keys: pa.Array | pa.ChunkedArray | Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """The UTF-8 bytes and the int64 start offsets (length n+1) of ``keys`` (no copy of the
    bytes of a string array).

    Raises:
        ValueError: a key is null.
    """
    if isinstance(keys, pa.ChunkedArray):
        keys = keys.combine_chunks()
    if not isinstance(keys, pa.Array):
        keys = pa.array(keys, pa.string())
    if pa.types.is_dictionary(keys.type):
        keys = keys.dictionary_decode()
    if not (pa.types.is_large_string(keys.type) or pa.types.is_string(keys.type)):
        keys = keys.cast(pa.string())
    if keys.null_count:
        raise ValueError("a bloom filter key can not be null")
    large = pa.types.is_large_string(keys.type)
    bufs = keys.buffers()
    otype = np.int64 if large else np.int32
    offsets = np.frombuffer(bufs[1], dtype=otype, count=len(keys) + 1 + keys.offset)
    offsets = offsets[keys.offset :].astype(np.int64)
    data = (
        np.frombuffer(bufs[2], dtype=np.uint8)
        if bufs[2] is not None
        else np.zeros(0, dtype=np.uint8)
    )
    return data, offsets


def key_positions(
    keys: pa.Array | pa.ChunkedArray | Sequence[str], num_hashes: int, vector_size: int
) -> np.ndarray:
    """The bit positions of each key: an ``(n, num_hashes)`` uint32 array.

    Hadoop's ``HashFunction.hash`` with ``MurmurHash.hash(bytes, seed)`` (MurmurHash2, 32 bit):
    ``h = seed ^ len``; every 4-byte block little-endian ``k *= m; k ^= k >>> 24; k *= m;
    h *= m; h ^= k``; a 1-3 byte tail xor-ed in as Java *signed* bytes (sign-extended), then
    ``h *= m``; final ``h ^= h >>> 13; h *= m; h ^= h >>> 15``. Round ``i`` is seeded with round
    ``i-1``'s hash (the first with 0); position = ``abs(h % vector_size)`` in Java's int
    arithmetic, which equals ``abs(h) % vector_size``.

    Raises:
        ValueError: a key is null or empty (Java: "key length must be > 0").
    """
    order, rounds = _hash_rounds(keys, num_hashes, vector_size)
    out = np.empty((num_hashes, len(keys)), dtype=np.uint32)
    for i, pos in enumerate(rounds):
        out[i] = pos
    if order is not None:
        inverse = np.empty(len(order), dtype=np.int64)
        inverse[order] = np.arange(len(order))
        out = out[:, inverse]
    return out.T


def _hash_rounds(
    keys: pa.Array | pa.ChunkedArray | Sequence[str], num_hashes: int, vector_size: int
) -> tuple[np.ndarray | None, Iterator[np.ndarray]]:
    """The bit positions of :func:`key_positions`, round by round: ``(order, rounds)``, where
    ``rounds`` yields each round's positions (native ints) of the keys in the order ``order``
    (None: the keys' own order). The yielded array is reused by the next round: consume it
    before asking for the next one.

    All keys are hashed together: the block words and the tail are computed once, then each
    round is a few in-place uint32 array operations over keys sorted by their block count (so
    block ``j`` applies to a prefix of the keys). The keys are checked before this returns.

    Raises:
        ValueError: a key is null or empty.
    """
    data, offsets = key_buffers(keys)
    n = len(offsets) - 1
    if n == 0:
        return None, iter(())
    starts = offsets[:-1]
    lengths = offsets[1:] - starts
    if int(lengths.min()) <= 0:
        raise ValueError("a bloom filter key must not be empty (key length must be > 0)")
    nblocks = lengths >> 2
    order = None if nblocks.min() == nblocks.max() else np.argsort(-nblocks, kind="stable")
    if order is not None:
        starts, lengths, nblocks = starts[order], lengths[order], nblocks[order]
    return order, _rounds(data, starts, lengths, nblocks, num_hashes, vector_size)


def _rounds(
    data: np.ndarray,
    starts: np.ndarray,
    lengths: np.ndarray,
    nblocks: np.ndarray,
    num_hashes: int,
    vector_size: int,
) -> Iterator[np.ndarray]:
    """The rounds of :func:`_hash_rounds` (keys sorted by descending block count)."""
    n = len(starts)
    # room to read a full word past any key end
    padded = np.concatenate([data, np.zeros(4, dtype=np.uint8)])
    # the little-endian uint32 starting at each byte: a view with a stride of one byte
    word_at = np.ndarray((len(padded) - 3,), dtype="<u4", buffer=padded, strides=(1,))
    # the mixed block words: k *= m; k ^= k >>> 24; k *= m (independent of the seed)
    words: list[np.ndarray] = []
    for j in range(int(nblocks[0])):
        count = int(np.searchsorted(-nblocks, -(j + 1), side="right"))
        k = word_at[starts[:count] + 4 * j].astype(np.uint32)
        k *= _M
        k ^= k >> np.uint32(24)
        k *= _M
        words.append(k)
    # the tail: bytes as Java signed bytes, sign-extended before the shift
    left = lengths & 3
    tail = np.zeros(n, dtype=np.uint32)
    end = starts + lengths
    for back, shift in ((3, 16), (2, 8), (1, 0)):
        has = left >= back
        b = padded[np.where(has, end - back, 0)].view(np.int8).astype(np.int32)
        tail ^= np.where(has, (b << shift).astype(np.uint32), np.uint32(0))
    has_tail = left > 0
    any_tail = bool(has_tail.any())
    # ``h ^= tail; h *= m`` for the keys with a tail: xor-ing 0 and multiplying by 1 leave the
    # others as they are (no select per round)
    tail_mul = None if has_tail.all() else np.where(has_tail, _M, np.uint32(1)).astype(np.uint32)
    len32 = lengths.astype(np.uint32)
    size = np.uint32(vector_size)
    # one round's positions, as native ints: numpy scatters through those about twice as
    # fast as through uint32
    pos = np.empty(n, dtype=np.intp)
    h = np.zeros(n, dtype=np.uint32)  # the seed of the first round
    tmp = np.empty(n, dtype=np.uint32)
    quot = np.empty(n, dtype=np.uint32)
    # the views and constants of the rounds made once (a round is ~15 small array operations:
    # their Python overhead counts)
    blocks = [(h[: len(k)], k) for k in words]
    h_int, tmp_int = h.view(np.int32), tmp.view(np.int32)
    mul_tail = _M if tail_mul is None else tail_mul
    s13, s15 = np.uint32(13), np.uint32(15)
    xor, mul, rshift = np.bitwise_xor, np.multiply, np.right_shift
    for _ in range(num_hashes):
        xor(h, len32, out=h)
        for hc, k in blocks:
            mul(hc, _M, out=hc)
            xor(hc, k, out=hc)
        if any_tail:
            xor(h, tail, out=h)
            mul(h, mul_tail, out=h)
        rshift(h, s13, out=tmp)
        xor(h, tmp, out=h)
        mul(h, _M, out=h)
        rshift(h, s15, out=tmp)
        xor(h, tmp, out=h)
        # abs of the signed hash; abs(INT_MIN) = 2^31 read as unsigned
        np.abs(h_int, out=tmp_int)
        # tmp % size as tmp - (tmp // size) * size: numpy divides by a scalar divisor with a
        # multiply-shift (libdivide), several times faster than its remainder loop
        np.floor_divide(tmp, size, out=quot)
        mul(quot, size, out=quot)
        np.subtract(tmp, quot, out=pos, casting="unsafe")
        yield pos


#: Keys hashed at once by :meth:`BloomFilter.add`.
_ADD_SLICE = 16384


@dataclass
class BloomFilter:
    """A Hudi bloom filter: SIMPLE (one row) or DYNAMIC_V0 (rows added as keys come).

    Each row is a bit vector of ``vector_size`` bits (a numpy bool array). A dynamic filter adds
    keys to its last row until it holds ``nr`` keys, then opens a new row while
    ``rows * nr < max_nr``; after that it is saturated and keys go to the rows in turn
    (``InternalDynamicBloomFilter.getActiveStandardBF``: the key that saturates it goes to row 0
    and the round robin counter starts at row 0 after it, so row 0 gets two keys in a row).
    ``current`` counts the keys of the last row (all keys once saturated, from ``nr`` on).

    Attributes:
        vector_size, num_hashes: the size of a row and the positions per key.
        dynamic: DYNAMIC_V0 (else SIMPLE).
        nr, max_nr: keys per row and the growth bound (dynamic only).
        current: ``currentNbRecord`` (dynamic only).
        rows: the bit vectors.
    """

    vector_size: int
    num_hashes: int
    dynamic: bool = True
    nr: int = 60000
    max_nr: int = 100000
    current: int = 0
    rows: list[np.ndarray] = field(default_factory=list)
    _saturated: bool = field(default=False, init=False, repr=False)
    # curMatrixIndex: not serialised (Java restarts at 0 after a read too)
    _cursor: int = field(default=0, init=False, repr=False)

    def __post_init__(self) -> None:
        if not self.rows:
            self.rows = [np.zeros(self.vector_size, dtype=bool)]

    @property
    def type_code(self) -> str:
        """``DYNAMIC_V0`` or ``SIMPLE``."""
        return DYNAMIC_V0 if self.dynamic else SIMPLE

    def add(self, keys: pa.Array | pa.ChunkedArray | Sequence[str]) -> None:
        """Add a batch of keys (strings; added as their UTF-8 bytes), in order.

        Raises:
            ValueError: a key is null or empty.
        """
        if isinstance(keys, pa.ChunkedArray):
            keys = keys.combine_chunks()
        if not isinstance(keys, pa.Array):
            keys = pa.array(keys, pa.string())
        n = len(keys)
        if n == 0:
            return
        target = self._rows_of(n) if self.dynamic else np.zeros(n, dtype=np.int64)
        # a slice of keys at a time, each round's positions set as soon as they are computed:
        # the hash state and the positions stay in the CPU caches
        # while a dynamic filter fills its rows, the keys go to a row in runs: slices are cut
        # at the run ends too, so that each goes to one row (no per-row selection of positions)
        ends = np.flatnonzero(target[1:] != target[:-1]) + 1
        if len(ends) > len(self.rows):  # saturated: the keys go to the rows in turn
            ends = ends[:0]
        cuts = [0]
        for end in [*ends.tolist(), n]:
            # the run in slices of about equal size (the fewest of at most _ADD_SLICE keys)
            start, pieces = cuts[-1], -(-(end - cuts[-1]) // _ADD_SLICE)
            cuts += [start + (end - start) * (k + 1) // pieces for k in range(pieces)]
        for lo, hi in pairwise(cuts):
            order, rounds = _hash_rounds(keys.slice(lo, hi - lo), self.num_hashes, self.vector_size)
            t = target[lo:hi]
            first, last = int(t.min()), int(t.max())
            if first == last:
                row = self.rows[first]
                for pos in rounds:
                    row[pos] = True
                continue
            if order is not None:
                t = t[order]  # the row of each hashed (sorted) key
            # keys of several rows (a saturated filter's round robin): each row's keys picked
            # once per slice, then one scatter per row per round (no mask per row per round)
            picks = [(self.rows[r], np.flatnonzero(t == r)) for r in np.unique(t)]
            for pos in rounds:
                for row, at in picks:
                    row[pos[at]] = True

    def _rows_of(self, n: int) -> np.ndarray:
        """The row each of ``n`` keys added next goes to (a dynamic filter), rows opened and
        the counters advanced as Java's ``InternalDynamicBloomFilter.add`` does."""
        target = np.empty(n, dtype=np.int64)
        i = 0
        while i < n and not self._saturated:
            if self.current >= self.nr:
                if len(self.rows) * self.nr < self.max_nr:
                    self.rows.append(np.zeros(self.vector_size, dtype=bool))
                    self.current = 0
                else:
                    # this key goes to row 0; the round robin starts after it, at row 0
                    self._saturated = True
                    target[i] = 0
                    self.current += 1
                    i += 1
                    continue
            take = min(n - i, self.nr - self.current)
            target[i : i + take] = len(self.rows) - 1
            self.current += take
            i += take
        if i < n:
            rest = n - i
            target[i:] = (self._cursor + np.arange(rest, dtype=np.int64)) % len(self.rows)
            self._cursor += rest
            self.current += rest
        return target

    def reset(self, empty: BloomFilter) -> None:
        """Become ``empty`` (a filter holding no key), in place: whoever holds this filter
        sees the keys added from now on only."""
        self.vector_size, self.num_hashes, self.dynamic = (
            empty.vector_size,
            empty.num_hashes,
            empty.dynamic,
        )
        self.nr, self.max_nr, self.current = empty.nr, empty.max_nr, empty.current
        self.rows = [r.copy() for r in empty.rows]
        self._saturated, self._cursor = empty._saturated, empty._cursor

    def might_contain(self, keys: pa.Array | pa.ChunkedArray | Sequence[str]) -> np.ndarray:
        """Per key, whether it may be in the filter (any row has all its bits); a bool array."""
        pos = key_positions(keys, self.num_hashes, self.vector_size)
        out = np.zeros(len(pos), dtype=bool)
        for row in self.rows:
            out |= row[pos].all(axis=1)
        return out

    def _header(self) -> bytes:
        return struct.pack(">iibi", _VERSION, self.num_hashes, MURMUR_HASH, self.vector_size)

    def _row_bytes(self, row: np.ndarray) -> bytes:
        return self._header() + np.packbits(row, bitorder="little").tobytes()

    def to_bytes(self) -> bytes:
        """The serialised filter (``InternalBloomFilter.write``,
        ``InternalDynamicBloomFilter.write``)."""
        if not self.dynamic:
            return self._row_bytes(self.rows[0])
        parts = [
            self._header(),
            struct.pack(">iii", self.nr, self.current, len(self.rows)),
            *(self._row_bytes(r) for r in self.rows),
        ]
        return b"".join(parts)

    def serialize(self) -> str:
        """The footer value: standard Base64 of :meth:`to_bytes` (``Base64CodecUtil.encode``)."""
        return base64.b64encode(self.to_bytes()).decode("ascii")

    def footer(self) -> dict[str, str]:
        """The base file footer entries of this filter (the type code only when dynamic, as
        ``HoodieBloomFilterWriteSupport.finalizeMetadata`` writes it)."""
        out = {BLOOM_FILTER_FOOTER: self.serialize()}
        if self.dynamic:
            out[BLOOM_FILTER_TYPE_CODE_FOOTER] = DYNAMIC_V0
        return out

    @classmethod
    def parse(cls, serialized: str | bytes, type_code: str | None) -> BloomFilter:
        """Read a footer's filter; ``type_code`` is the type-code footer (None if absent).

        As ``BloomFilterFactory.fromString``: a type code containing ``DYNAMIC`` is dynamic,
        anything else (or none) SIMPLE.

        Raises:
            CorruptFileError: the bytes are not a murmur-hashed filter of that type.
        """
        try:
            raw = base64.b64decode(serialized, validate=True)
        except ValueError as e:
            raise CorruptFileError(f"bloom filter footer is not Base64: {e}") from None
        dynamic = type_code is not None and "DYNAMIC" in type_code
        reader = _Reader(raw)
        nb_hash, vector_size = reader.header()
        if not dynamic:
            row = reader.bits(vector_size)
            reader.done()
            return cls(vector_size, nb_hash, dynamic=False, rows=[row])
        nr, current, n_rows = reader.ints(3)
        if n_rows < 1:
            raise CorruptFileError(f"dynamic bloom filter with {n_rows} rows")
        rows = []
        for _ in range(n_rows):
            rh, rv = reader.header()
            if (rh, rv) != (nb_hash, vector_size):
                raise CorruptFileError("bloom filter row of another size than its filter")
            rows.append(reader.bits(rv))
        reader.done()
        return cls(vector_size, nb_hash, dynamic=True, nr=nr, current=current, rows=rows)


class _Reader:
    def __init__(self, raw: bytes) -> None:
        self.raw, self.at = raw, 0

    def take(self, n: int) -> bytes:
        if self.at + n > len(self.raw):
            raise CorruptFileError("bloom filter footer is truncated")
        out = self.raw[self.at : self.at + n]
        self.at += n
        return out

    def ints(self, n: int) -> tuple[int, ...]:
        return struct.unpack(f">{n}i", self.take(4 * n))

    def header(self) -> tuple[int, int]:
        (version,) = self.ints(1)
        if version >= 0:
            # the unversioned format: Jenkins hash, which Hudi never writes
            raise CorruptFileError("unversioned (Jenkins-hashed) bloom filters are not supported")
        if version != _VERSION:
            raise CorruptFileError(f"unknown bloom filter version {version}")
        (nb_hash,) = self.ints(1)
        (hash_type,) = struct.unpack(">b", self.take(1))
        (vector_size,) = self.ints(1)
        if hash_type != MURMUR_HASH:
            raise CorruptFileError(f"bloom filter hash type {hash_type} is not murmur (1)")
        if nb_hash <= 0 or vector_size <= 0:
            raise CorruptFileError(f"bloom filter of {nb_hash} hashes, {vector_size} bits")
        return nb_hash, vector_size

    def bits(self, vector_size: int) -> np.ndarray:
        packed = np.frombuffer(self.take((vector_size + 7) // 8), dtype=np.uint8)
        # 0/1 bytes read as bools in place (no copy of a vector of millions of bits)
        return np.unpackbits(packed, bitorder="little")[:vector_size].view(bool)

    def done(self) -> None:
        if self.at != len(self.raw):
            raise CorruptFileError(f"{len(self.raw) - self.at} bytes after the bloom filter")
