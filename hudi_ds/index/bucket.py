"""Hudi's SIMPLE bucket index, computed exactly like Java Hudi, vectorised over Arrow arrays.

Java (``BucketIdentifier.getBucketId``, ``KeyGenUtils.extractRecordKeysByFields``)::

    hashKeys = extractRecordKeysByFields(recordKey, indexKeyFields)  # List<String>
    bucket   = (hashKeys.hashCode() & Integer.MAX_VALUE) % numBuckets

``List.hashCode``: ``h = 1; for e in list: h = 31*h + (e == null ? 0 : e.hashCode())`` and
``String.hashCode``: ``h = 0; for unit in utf16_code_units(s): h = 31*h + unit``, both in int32
arithmetic. Here both are computed mod 2**32 with numpy ``uint32`` (which wraps silently).

String hashes are computed straight from an Arrow string array's UTF-8 value buffer: with
``inv = 31**-1 mod 2**32`` (31 is odd, so invertible) and ``u_q`` the q-th UTF-16 unit of a
buffer, the hash of the units ``[a, b)`` is ``31**(b-1) * sum(u_q * inv**q for q in [a, b))``,
so one running sum over the buffer gives every string's hash by two lookups. 2- and 3-byte
UTF-8 sequences are one UTF-16 unit, 4-byte sequences a surrogate pair (two units).

Bucket file ids (``BucketIdentifier.newBucketFileIdPrefix``) are parsed and formatted by
:func:`hudi_ds.layout.naming.bucket_id_of` / :func:`hudi_ds.layout.naming.bucket_file_id`.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from hudi_ds.errors import ConfigError, SchemaError
from hudi_ds.layout.naming import bucket_file_id, bucket_id_of
from hudi_ds.table_config import TableConfig

#: the bucket count and hash fields: write options, persisted as table properties
NUM_BUCKETS_KEY = TableConfig.BUCKET_INDEX_NUM_BUCKETS.key
HASH_FIELD_KEY = TableConfig.BUCKET_INDEX_HASH_FIELD.key
MAX_NUM_BUCKETS = 99_999_999  # the bucket id is the first 8 decimal digits of the fileId

NULL_RECORDKEY_PLACEHOLDER = "__null__"
EMPTY_RECORDKEY_PLACEHOLDER = "__empty__"

_INV31 = pow(31, -1, 1 << 32)
# bytes hashed per step; bounds temporaries and the power tables: 64 KiB steps hash as fast
# as 1 MiB ones (the temporaries stay in cache) and the tables a process builds on its
# first hash are 16 times smaller (measured: 100,000 keys hashed in 11 ms instead of
# 25-45 ms in a fresh process)
_CHUNK_BYTES = 1 << 16
_COMMA = ord(",")
_COLON = ord(":")
_FILE_ID_NAMESPACE = uuid.UUID("5b1f3c2e-8d4a-4f7e-9c61-2a0d7e4b9f13")
_MAX_JAVA_DATE_DAYS = 2_932_896  # 9999-12-31; Java's LocalDate.toString adds '+' beyond

U32 = npt.NDArray[np.uint32]
I32 = npt.NDArray[np.int32]
I64 = npt.NDArray[np.int64]

_pow_tables: tuple[U32, U32] = (np.ones(1, np.uint32), np.ones(1, np.uint32))


def _powers(n: int) -> tuple[U32, U32]:
    """Tables ``31**k`` and ``31**-k`` (mod 2**32) for ``k < n`` (at least), cached."""
    global _pow_tables
    tables = _pow_tables
    if len(tables[0]) >= n:
        return tables
    size = 1 << max(n - 1, 1).bit_length()
    pw = np.full(size, 31, np.uint32)
    inv = np.full(size, _INV31, np.uint32)
    pw[0] = inv[0] = 1
    tables = (np.cumprod(pw, dtype=np.uint32), np.cumprod(inv, dtype=np.uint32))
    _pow_tables = tables
    return tables


def _hash_chunk(buf: npt.NDArray[np.uint8], starts: I64, ends: I64) -> U32:
    """Java hashes of the char-aligned byte spans ``buf[starts[i]:ends[i]]``."""
    m = len(buf)
    if m == 0:
        return np.zeros(len(starts), np.uint32)
    vals = buf.astype(np.uint32)
    if int(buf.max()) < 0x80:  # ASCII: one byte is one UTF-16 unit
        pw, inv = _powers(m)
        terms = vals * inv[:m]
        unit_end = ends
    else:
        cont = (buf & 0xC0) == 0x80
        lead4 = buf >= 0xF0
        width = (~cont).astype(np.int64) + lead4  # UTF-16 units started by each byte
        unit_pos = np.zeros(m + 1, np.int64)
        np.cumsum(width, out=unit_pos[1:])
        pw, inv = _powers(int(unit_pos[-1]) + 1)
        nxt = np.zeros(m + 3, np.uint32)
        nxt[:m] = vals
        vals[buf >= 0x80] = 0
        i2 = np.flatnonzero((buf >= 0xC0) & (buf < 0xE0))
        vals[i2] = ((nxt[i2] & 0x1F) << 6) | (nxt[i2 + 1] & 0x3F)
        i3 = np.flatnonzero((buf >= 0xE0) & (buf < 0xF0))
        vals[i3] = ((nxt[i3] & 0x0F) << 12) | ((nxt[i3 + 1] & 0x3F) << 6) | (nxt[i3 + 2] & 0x3F)
        terms = vals * inv[unit_pos[:-1]]
        i4 = np.flatnonzero(lead4)
        if len(i4):
            cp = (
                ((nxt[i4] & 0x07) << 18)
                | ((nxt[i4 + 1] & 0x3F) << 12)
                | ((nxt[i4 + 2] & 0x3F) << 6)
                | (nxt[i4 + 3] & 0x3F)
            ) - 0x10000
            high = (cp >> 10) + 0xD800
            low = (cp & 0x3FF) + 0xDC00
            q = unit_pos[i4]
            terms[i4] = high * inv[q] + low * inv[q + 1]
        unit_end = unit_pos[ends]
    cum = np.zeros(m + 1, np.uint32)
    np.cumsum(terms, dtype=np.uint32, out=cum[1:])
    seg = cum[ends] - cum[starts]
    return seg * pw[np.maximum(unit_end - 1, 0)]  # empty span: seg == 0


def _hash_spans(data: npt.NDArray[np.uint8], starts: I64, ends: I64) -> U32:
    """Java ``String.hashCode`` of UTF-8 spans of ``data``.

    Spans must be ascending and disjoint (``ends[i] <= starts[i + 1]``) and start/end on
    character boundaries, as the strings of an Arrow array or the values inside record keys do.
    """
    n = len(starts)
    out = np.zeros(n, np.uint32)
    r0 = 0
    while r0 < n:
        lo = int(starts[r0])
        r1 = max(int(np.searchsorted(ends, lo + _CHUNK_BYTES, side="right")), r0 + 1)
        hi = int(ends[r1 - 1])
        out[r0:r1] = _hash_chunk(data[lo:hi], starts[r0:r1] - lo, ends[r0:r1] - lo)
        r0 = r1
    return out


def _is_string_type(t: pa.DataType) -> bool:
    is_view = getattr(pa.types, "is_string_view", None)
    return (
        pa.types.is_string(t)
        or pa.types.is_large_string(t)
        or (is_view is not None and bool(is_view(t)))
    )


def _string_buffers(arr: pa.Array) -> tuple[npt.NDArray[np.uint8], I64]:
    """The value bytes and the ``len + 1`` offsets (int64) of a string/large_string array."""
    bufs = arr.buffers()
    if len(arr) == 0 or bufs[1] is None:
        return np.zeros(0, np.uint8), np.zeros(len(arr) + 1, np.int64)
    width = 8 if pa.types.is_large_string(arr.type) else 4
    offsets = np.frombuffer(
        bufs[1],
        dtype=np.int64 if width == 8 else np.int32,
        count=len(arr) + 1,
        offset=arr.offset * width,
    ).astype(np.int64)
    data = bufs[2]
    values = (
        np.frombuffer(data, dtype=np.uint8)
        if data is not None and data.size
        else np.zeros(0, np.uint8)
    )
    return values, offsets


def _null_mask(arr: pa.Array | pa.ChunkedArray) -> npt.NDArray[np.bool_]:
    return np.asarray(arr.is_null().to_numpy(zero_copy_only=False), dtype=bool)


def _hash_array(arr: pa.Array) -> U32:
    t = arr.type
    if pa.types.is_null(t):
        return np.zeros(len(arr), np.uint32)
    if pa.types.is_dictionary(t):
        if not _is_string_type(t.value_type):
            raise SchemaError(f"java_string_hash needs strings, got {t}")
        dict_hash = _hash_array(arr.dictionary)
        if len(dict_hash) == 0:
            return np.zeros(len(arr), np.uint32)
        idx = np.asarray(arr.indices.fill_null(0).to_numpy(zero_copy_only=False), dtype=np.int64)
        out = dict_hash[idx]
    elif _is_string_type(t):
        if not (pa.types.is_string(t) or pa.types.is_large_string(t)):
            arr = arr.cast(pa.large_string())  # string_view
        data, offsets = _string_buffers(arr)
        out = _hash_spans(data, offsets[:-1], offsets[1:])
    else:
        raise SchemaError(f"java_string_hash needs strings, got {t}")
    if arr.null_count:
        out[_null_mask(arr)] = 0
    return out


def java_string_hash(values: pa.Array | pa.ChunkedArray) -> I32:
    """Java ``String.hashCode()`` of every string, vectorised.

    Args:
        values: string, large_string, string_view or dictionary-of-string values.

    Returns:
        int32 hashes, one per value; null values hash to 0 (as does ``""``).

    Raises:
        SchemaError: the values are not strings.
    """
    if isinstance(values, pa.ChunkedArray):
        parts = [_hash_array(c) for c in values.chunks]
        out = np.concatenate(parts) if parts else np.zeros(0, np.uint32)
    else:
        out = _hash_array(values)
    return out.view(np.int32)


def list_hash(columns: Sequence[npt.ArrayLike]) -> I32:
    """Java ``List<String>.hashCode()`` row by row from per-element string hashes.

    ``h = 1; for e in columns: h = 31*h + e`` in int32 arithmetic (a null element is passed as 0).

    Args:
        columns: one int32 array of :func:`java_string_hash` values per list position.

    Returns:
        int32 list hashes.

    Raises:
        ConfigError: no columns (Java never hashes an empty list here).
        SchemaError: columns of different lengths or non-integer dtype.
    """
    if len(columns) == 0:
        raise ConfigError(f"{HASH_FIELD_KEY}: at least one hash field is needed")
    arrays = [np.asarray(c) for c in columns]
    n = len(arrays[0])
    h = np.ones(n, np.uint32)
    for a in arrays:
        if a.shape != (n,) or not np.issubdtype(a.dtype, np.integer):
            raise SchemaError(f"hash columns must be 1-d integer arrays of length {n}")
        h = h * np.uint32(31) + a.astype(np.int32).view(np.uint32)
    return h.view(np.int32)


def _to_java_strings(col: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
    """The values as Java's key generators render them (see :func:`bucket_ids`)."""
    t = col.type
    if pa.types.is_dictionary(t):
        if _is_string_type(t.value_type):
            return col
        return _to_java_strings(pc.cast(col, t.value_type))
    if _is_string_type(t) or pa.types.is_null(t):
        return col
    if pa.types.is_integer(t) or pa.types.is_boolean(t):
        return pc.cast(col, pa.string())
    if pa.types.is_date(t):
        if pa.types.is_date64(t):
            millis = np.asarray(
                pc.fill_null(pc.cast(col, pa.int64()), 0).to_numpy(zero_copy_only=False)
            )
            days = pa.array(np.floor_divide(millis, 86_400_000), mask=_null_mask(col))
            col = pc.cast(pc.cast(days, pa.int32()), pa.date32())
        text = pc.cast(col, pa.string())
        beyond = pc.greater(pc.cast(col, pa.int32()), _MAX_JAVA_DATE_DAYS)
        if pc.any(beyond).as_py():  # LocalDate.toString writes years > 9999 as "+10000-01-01"
            text = pc.if_else(beyond, pc.binary_join_element_wise("+", text, ""), text)
        return text
    raise SchemaError(
        f"bucket index hash field of type {t} is not supported "
        "(supported: string, integer, boolean, date)"
    )


def _bucket_of(h: npt.NDArray[np.uint32] | I32, num_buckets: int | npt.NDArray[Any]) -> I32:
    masked = np.asarray(h).view(np.uint32) & np.uint32(0x7FFFFFFF)
    if isinstance(num_buckets, np.ndarray):
        return (masked % num_buckets.astype(np.uint32)).astype(np.int32)
    return (masked % np.uint32(num_buckets)).astype(np.int32)


def bucket_ids(hash_columns: Sequence[pa.Array | pa.ChunkedArray], num_buckets: int) -> I32:
    """Bucket of every row from its hash-field values, as Java's SIMPLE bucket index.

    ``(List.of(str(v1), str(v2), ...).hashCode() & 0x7fffffff) % num_buckets`` where ``str`` is
    Java's rendering of the value: strings as is, integers as decimal, booleans ``true``/``false``,
    dates ``yyyy-MM-dd`` (``LocalDate.toString``). A null value is a null list element (adds 0),
    like ``__null__`` in a complex key; ``""`` (``__empty__``) adds 0 too.

    Java hashes the values it extracts from the record key string. This function matches that
    when the columns are given in record-key-field order (see :func:`validate_hash_fields`) and
    the key is (a) a simple key whose value does not contain both ``,`` and ``:``, or (b) a complex
    key of two or more fields. A single-field complex key ``f:v`` has no ``,``, so Java hashes the
    whole ``"f:v"``: use :func:`bucket_ids_from_record_keys` for such tables.

    Args:
        hash_columns: one array per hash field, in record-key-field order.
        num_buckets: the table's ``hoodie.bucket.index.num.buckets``.

    Returns:
        int32 bucket ids in ``[0, num_buckets)``.

    Raises:
        ConfigError: bad ``num_buckets`` or no hash columns.
        SchemaError: a column type is not supported, or the lengths differ.
    """
    validate_num_buckets(num_buckets)
    if len(hash_columns) == 0:
        raise ConfigError(f"{HASH_FIELD_KEY}: at least one hash field is needed")
    hashes = [java_string_hash(_to_java_strings(c)) for c in hash_columns]
    return _bucket_of(list_hash(hashes), num_buckets)


def _span_equals(
    data: npt.NDArray[np.uint8], starts: I64, lengths: I64, text: bytes
) -> npt.NDArray[np.bool_]:
    """Which spans ``data[starts[i]:starts[i] + lengths[i]]`` equal ``text``."""
    hit = lengths == len(text)
    cand = np.flatnonzero(hit)
    ok = np.ones(len(cand), bool)
    for i, byte in enumerate(text):
        ok &= data[starts[cand] + i] == byte
    hit[cand] = ok
    return hit


@dataclass(frozen=True)
class HashKeySpans:
    """The hash-key values Java extracts from record keys (``extractRecordKeysByFields``), as
    byte spans of the keys' UTF-8 buffer ``data``: value ``i`` of key ``rows[i]`` is
    ``data[starts[i]:ends[i]]`` (values in key order), ``null[i]`` when it is ``__null__``
    (null) and ``empty[i]`` when it is ``__empty__`` (``""``); keys in ``whole`` are one value,
    the whole key (``data[key_starts[r]:key_ends[r]]``)."""

    data: npt.NDArray[np.uint8]
    key_starts: I64
    key_ends: I64
    rows: I64
    starts: I64
    ends: I64
    null: npt.NDArray[np.bool_]
    empty: npt.NDArray[np.bool_]
    whole: I64


def hash_key_spans(arr: pa.Array, hash_fields: Sequence[str]) -> HashKeySpans:
    """``extractRecordKeysByFields(key, hash_fields)`` of every key of a string array, as spans
    (:class:`HashKeySpans`; see :func:`bucket_ids_from_record_keys` for Java's rule)."""
    n = len(arr)
    data, offsets = _string_buffers(arr)
    starts, ends = offsets[:-1], offsets[1:]
    lo, hi = int(offsets[0]), int(offsets[-1])
    region = data[lo:hi]
    sep = np.flatnonzero((region == _COMMA) | (region == _COLON)).astype(np.int64) + lo
    row = np.searchsorted(offsets, sep, side="right") - 1
    is_colon = data[sep] == _COLON
    has_colon = np.zeros(n, bool)
    has_comma = np.zeros(n, bool)
    has_colon[row[is_colon]] = True
    has_comma[row[~is_colon]] = True
    parsed = has_colon & has_comma  # Java: no ',' or no ':' -> [recordKey]

    keep = parsed[row]
    sep, row, is_colon = sep[keep], row[keep], is_colon[keep]
    k = len(sep)
    # A value ends at the last ',' before the next ':' that has a ',' between it and the
    # current field's ':'. So the ':' that start fields are the first ':' of a key and every
    # ':' whose preceding separator is ','; that preceding ',' ends the previous value.
    first_sep = np.ones(k, bool)
    first_sep[1:] = row[1:] != row[:-1]
    prev_comma = np.zeros(k, bool)
    prev_comma[1:] = ~is_colon[:-1]
    fc = np.flatnonzero(is_colon & (first_sep | prev_comma))
    fc_pos, fc_row = sep[fc], row[fc]
    f = len(fc)
    first_fc = np.ones(f, bool)
    first_fc[1:] = fc_row[1:] != fc_row[:-1]
    last_fc = np.ones(f, bool)
    last_fc[:-1] = fc_row[:-1] != fc_row[1:]
    field_start = np.where(first_fc, starts[fc_row], sep[fc - 1] + 1)
    value_start = fc_pos + 1
    value_end = np.where(last_fc, ends[fc_row], sep[np.roll(fc, -1) - 1])
    # Java loops forever on a non-hash last field whose value holds ':'; here it just ends.

    if len(hash_fields) == 0 or list(hash_fields) == [""]:  # Java's "all fields" cases
        matched = np.ones(f, bool)
    else:
        matched = np.zeros(f, bool)
        field_len = fc_pos - field_start
        for name in set(hash_fields):
            matched |= _span_equals(data, field_start, field_len, name.encode("utf-8"))
    m_row = fc_row[matched]
    v_start, v_end = value_start[matched], value_end[matched]
    v_len = v_end - v_start
    counts = np.bincount(m_row, minlength=n)
    return HashKeySpans(
        data=data,
        key_starts=starts,
        key_ends=ends,
        rows=m_row,
        starts=v_start,
        ends=v_end,
        null=_span_equals(data, v_start, v_len, NULL_RECORDKEY_PLACEHOLDER.encode()),
        empty=_span_equals(data, v_start, v_len, EMPTY_RECORDKEY_PLACEHOLDER.encode()),
        # unparsed keys, or no hash field matched
        whole=np.flatnonzero(counts == 0).astype(np.int64),
    )


def _record_key_list_hash(arr: pa.Array, hash_fields: Sequence[str]) -> U32:
    """``List.hashCode`` of ``extractRecordKeysByFields(key, hash_fields)`` per key (Hudi 1.0+)."""
    n = len(arr)
    sp = hash_key_spans(arr, hash_fields)
    if len(sp.whole) == n:
        # every key is its one value (simple keys: no field:value pairs): the list of one
        # string hashes to 31 + its hash, without the per-value folding below
        return np.uint32(31) + _hash_spans(sp.data, sp.key_starts, sp.key_ends)
    data, m_row = sp.data, sp.rows
    elem = _hash_spans(data, sp.starts, sp.ends)
    elem[sp.null | sp.empty] = 0  # null / ""

    counts = np.bincount(m_row, minlength=n)
    first = np.cumsum(counts) - counts
    pw, _ = _powers(int(counts.max(initial=0)) + 1)
    rank = np.arange(len(m_row)) - first[m_row]
    terms = elem * pw[counts[m_row] - 1 - rank]
    cum = np.zeros(len(terms) + 1, np.uint32)
    np.cumsum(terms, dtype=np.uint32, out=cum[1:])
    out = pw[counts] + (cum[first + counts] - cum[first])

    whole = sp.whole
    out[whole] = np.uint32(31) + _hash_spans(data, sp.key_starts[whole], sp.key_ends[whole])
    return out


def record_key_strings(record_keys: pa.Array | pa.ChunkedArray) -> list[pa.Array]:
    """The chunks of ``record_keys`` as string / large_string arrays without nulls.

    Raises:
        SchemaError: the keys are not strings or contain nulls.
    """
    chunks = record_keys.chunks if isinstance(record_keys, pa.ChunkedArray) else [record_keys]
    out: list[pa.Array] = []
    for arr in chunks:
        t = arr.type
        if pa.types.is_null(t) and len(arr) == 0:
            continue
        if pa.types.is_dictionary(t) and _is_string_type(t.value_type):
            arr = pc.cast(arr, t.value_type)
            t = arr.type
        if not _is_string_type(t):
            raise SchemaError(f"record keys must be strings, got {t}")
        if not (pa.types.is_string(t) or pa.types.is_large_string(t)):
            arr = arr.cast(pa.large_string())
        if arr.null_count:
            raise SchemaError(f"record keys contain {arr.null_count} null value(s)")
        out.append(arr)
    return out


def bucket_ids_from_record_keys(
    record_keys: pa.Array | pa.ChunkedArray,
    hash_fields: Sequence[str],
    num_buckets: int | npt.NDArray[Any],
    complex_key: bool,
) -> I32:
    """Bucket of every ``_hoodie_record_key``, exactly as Java Hudi 1.0+ computes it.

    Hash-key extraction (``KeyGenUtils.extractRecordKeysByFields``, HUDI-8403): a key without
    ``,`` or without ``:`` is one value; otherwise it is scanned as ``field:value`` pairs where a
    value ends at the last ``,`` before the next ``field:`` (values may hold ``,`` and ``:``),
    keeping the values of ``hash_fields`` (all if empty) in key order, ``__null__`` -> null,
    ``__empty__`` -> ``""``; if nothing is kept, the whole key is the one value. Agrees with
    :func:`bucket_ids` on the same data (see there for the exact conditions).

    Args:
        record_keys: the record key strings.
        hash_fields: ``hoodie.bucket.index.hash.field`` (empty: all key fields).
        num_buckets: the table's ``hoodie.bucket.index.num.buckets``, or the bucket count of
            each key's partition (partition-level bucket index, aligned with the keys).
        complex_key: whether the table uses a complex key generator. Java applies the same rule
            to every key, so the result does not depend on it (a simple key holding both ``,``
            and ``:`` is parsed as pairs by Java, and here too).

    Returns:
        int32 bucket ids in ``[0, num_buckets)``.

    Raises:
        ConfigError: bad ``num_buckets``.
        SchemaError: the keys are not strings or contain nulls.
    """
    del complex_key  # documented above: Java's extraction is keygen-agnostic
    if isinstance(num_buckets, np.ndarray):
        if num_buckets.shape != (len(record_keys),) or (
            len(num_buckets) and not 1 <= num_buckets.min() <= num_buckets.max() <= MAX_NUM_BUCKETS
        ):
            raise ConfigError(
                f"{NUM_BUCKETS_KEY}: one bucket count in [1, {MAX_NUM_BUCKETS}] per key is needed"
            )
    else:
        validate_num_buckets(num_buckets)
    parts = [_record_key_list_hash(arr, hash_fields) for arr in record_key_strings(record_keys)]
    h = np.concatenate(parts) if parts else np.zeros(0, np.uint32)
    return _bucket_of(h, num_buckets)


def validate_num_buckets(num_buckets: int) -> int:
    """Check ``hoodie.bucket.index.num.buckets``.

    Returns:
        ``num_buckets``.

    Raises:
        ConfigError: not an int in ``[1, 99999999]`` (bucket ids must fit 8 digits).
    """
    if (
        isinstance(num_buckets, bool)
        or not isinstance(num_buckets, int | np.integer)
        or not 1 <= num_buckets <= MAX_NUM_BUCKETS
    ):
        raise ConfigError(
            f"{NUM_BUCKETS_KEY}={num_buckets!r}: must be an integer in [1, {MAX_NUM_BUCKETS}]"
        )
    return int(num_buckets)


def validate_hash_fields(
    hash_fields: str | Sequence[str] | None, record_key_fields: Sequence[str]
) -> list[str]:
    """Check ``hoodie.bucket.index.hash.field`` against the record key fields.

    Args:
        hash_fields: comma-separated string or list of field names; empty/None means the record
            key fields. Names are not trimmed (Java does not trim them either).
        record_key_fields: the table's record key fields, in key order.

    Returns:
        The hash fields in record-key order without duplicates -- the order in which Java
        extracts their values from the key, hence the column order :func:`bucket_ids` needs.

    Raises:
        ConfigError: no record key fields, or a hash field is not a record key field.
    """
    keys = list(dict.fromkeys(record_key_fields))
    if not keys:
        raise ConfigError(f"{HASH_FIELD_KEY}: the table has no record key fields")
    items = hash_fields.split(",") if isinstance(hash_fields, str) else list(hash_fields or [])
    wanted = {f for f in items if f != ""}
    if not wanted:
        return keys
    for field in items:
        if field != "" and field not in keys:
            raise ConfigError(
                f"{HASH_FIELD_KEY}={','.join(items)!r}: field {field!r} is not a record key "
                f"field (record key fields: {','.join(keys)})"
            )
    return [f for f in keys if f in wanted]


def bucket_id_from_file_id(file_id: str) -> int:
    """Bucket id of a bucket-index fileId: its first 8 chars as a decimal int.

    Raises:
        ConfigError: the fileId does not start with 8 digits (not a bucket file group).
    """
    bucket = bucket_id_of(file_id)
    if bucket is None:
        raise ConfigError(
            f"fileId {file_id!r} is not a bucket-index fileId (it must start with 8 digits)"
        )
    return bucket


def new_bucket_file_id(partition_path: str, bucket: int, instant_time: str) -> str:
    """A fileId for a new file group of ``bucket``, deterministic per (partition, bucket, instant).

    Java's ``newBucketFileIdPrefix`` takes a random UUID; here it is the UUID5 of
    ``"<partition_path>/<bucket>/<instant_time>"`` so every writer task of one instant derives
    the same file group for a new bucket. Format: ``%08d`` of the bucket, the UUID's tail, ``-0``,
    e.g. ``00000003-afb1-524d-b18a-a8b6423a6780-0`` (no ``_``).

    Raises:
        ConfigError: ``bucket`` is not in ``[0, 99999999]``.
    """
    if isinstance(bucket, bool) or not isinstance(bucket, int | np.integer):
        raise ConfigError(f"bucket id {bucket!r} must be an int")
    if not 0 <= bucket <= MAX_NUM_BUCKETS:
        raise ConfigError(f"bucket id {bucket} must be in [0, {MAX_NUM_BUCKETS}]")
    name = f"{partition_path}/{int(bucket)}/{instant_time}"
    return bucket_file_id(int(bucket), str(uuid.uuid5(_FILE_ID_NAMESPACE, name)))


def bucket_groups(group: np.ndarray, bound: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``np.unique(group, return_inverse=True)`` and each value's count, for values in
    ``[0, bound)`` (rows numbered by partition and bucket): counted in a table of ``bound``
    slots when that is not much larger than ``group`` (linear; the sort ``np.unique`` does
    took a third of a bucket tagging)."""
    if bound > 4 * len(group) + 4096:
        uniq, inverse = np.unique(group, return_inverse=True)
        inverse = inverse.reshape(-1)
        return uniq, inverse, np.bincount(inverse, minlength=len(uniq))
    counts = np.bincount(group, minlength=bound)
    uniq = np.flatnonzero(counts)
    dense = np.zeros(len(counts), np.int64)  # (a value past ``bound`` only widens the table)
    dense[uniq] = np.arange(len(uniq))
    return uniq, dense[group], counts[uniq]
