"""Vectorised decoding of Hudi's Avro data block records with numpy (no per-record Python).

An Avro data block holds ``count`` records, each an ``int32`` length then that many bytes of
one schemaless Avro binary datum (:func:`hudi_ds.log.reader.decode_data_block` has the grammar).
:func:`decode_avro_records` decodes them column by column across all records at once:

1. :func:`record_bounds` finds where every record starts and ends (the length chain);
2. a position array (one entry per record) walks the schema field by field: zig-zag varints
   (``int``, ``long``, union branch indexes, enum indexes, string/bytes lengths) are decoded a
   byte column at a time, floats and doubles gathered through overlapping byte windows,
   strings/bytes/fixed values gathered into Arrow ``binary`` arrays by one Arrow ``take`` over
   offsets that point into the block's own bytes (strings are UTF-8 checked by Arrow), booleans
   read as bytes; nullable unions (``["null", T]`` or ``[T, "null"]``) decode ``T`` only for the
   rows whose branch is ``T``; nested records recurse with the same positions;
3. the raw columns become the :func:`hudi_ds.schema.avro_to_arrow_schema` types with
   :func:`hudi_ds.schema.from_physical` -- the conversion the fastavro path applies, so both
   give the same table.

Arrays and maps are not vectorised: a schema holding one anywhere is decoded with fastavro
(:func:`vectorisable` says which). The decoder never guesses: every read is checked against its
record's end and every record must end exactly where its length says. When a check fails,
:func:`decode_avro_records` returns ``None`` and the caller decodes the block the exact (slow)
way, which names the first bad record (a damaged block is raised, never read as wrong rows).
"""

from __future__ import annotations

import struct

import numpy as np
import pyarrow as pa

from hudi_ds.schema import AvroSlot, AvroType, from_physical

_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1
_MAX_OFFSET = 2**31 - 1  # int32 offsets of the Arrow binary arrays built over the block


class _Bad(Exception):
    """The bytes do not decode vectorised: the caller falls back to the exact path."""


def vectorisable(node: AvroType) -> bool:
    """Whether :func:`decode_avro_records` decodes records of ``node`` (no array/map inside)."""
    if node.kind in ("array", "map"):
        return False
    return all(vectorisable(f.type) for f in node.fields)


def record_bounds(content: bytes, start: int, count: int) -> tuple[np.ndarray, np.ndarray] | None:
    """Start and end offsets of the ``count`` length-prefixed records from ``start`` on.

    Record ``i`` is ``content[starts[i]:ends[i]]`` (its ``int32`` length prefix sits just before
    ``starts[i]``). Returns ``None`` unless the chain of lengths is intact and ends exactly at
    the end of ``content`` (then the caller decodes record by record, which names the bad one).
    The chain is sequential by nature -- where a record starts depends on every length before
    it -- so it is followed by ``struct.iter_unpack``-free C-level reads: one ``unpack_from``
    per record, nothing else per record in Python.
    """
    total = len(content)
    unpack = struct.Struct(">i").unpack_from
    starts = np.empty(count, dtype=np.int64)
    pos = start
    try:
        for i in range(count):
            (length,) = unpack(content, pos)
            pos += 4
            starts[i] = pos
            if length < 0:
                return None
            pos += length
    except struct.error:
        return None
    if pos != total:
        return None
    ends = np.empty(count, dtype=np.int64)
    ends[:-1] = starts[1:] - 4
    ends[-1] = total
    return starts, ends


class _Decoder:
    """Decodes Avro values at many positions of one byte buffer at once."""

    def __init__(self, content: bytes) -> None:
        self.content = content
        self.data = np.frombuffer(content, dtype=np.uint8)
        self.buffer = pa.py_buffer(content)

    # -- primitives ---------------------------------------------------------------------------

    def varint(self, pos: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Zig-zag varints (Avro ``int``/``long``) at ``pos``: ``(values int64, next pos)``."""
        if len(pos) == 0:
            return np.zeros(0, np.int64), pos
        if (pos >= end).any():
            raise _Bad("a varint runs past its record")
        b = self.data[pos]
        z = (b & 0x7F).astype(np.uint64)
        more = b >= 0x80
        if more.any():
            size = np.ones(len(pos), dtype=np.int64)
            idx = np.flatnonzero(more)
            for k in range(1, 10):
                p = pos[idx] + k
                if (p >= end[idx]).any():
                    raise _Bad("a varint runs past its record")
                b = self.data[p]
                z[idx] |= (b & 0x7F).astype(np.uint64) << np.uint64(7 * k)
                size[idx] += 1
                idx = idx[b >= 0x80]
                if idx.size == 0:
                    break
            else:
                raise _Bad("a varint is longer than 10 bytes")
            pos = pos + size
        else:
            pos = pos + 1
        values = (z >> np.uint64(1)).view(np.int64) ^ -(z & np.uint64(1)).view(np.int64)
        return values, pos

    def fixed_width(
        self, pos: np.ndarray, end: np.ndarray, dtype: str
    ) -> tuple[np.ndarray, np.ndarray]:
        """Little-endian fixed-width numbers (Avro ``float``/``double``) at ``pos``."""
        width = np.dtype(dtype).itemsize
        nxt = pos + width
        if (nxt > end).any():
            raise _Bad("a number runs past its record")
        if len(pos) == 0:
            return np.zeros(0, dtype), nxt
        windows = np.lib.stride_tricks.sliding_window_view(self.data, width)
        return np.ascontiguousarray(windows[pos]).view(dtype).reshape(-1), nxt

    def raw_bytes(
        self, pos: np.ndarray, lengths: np.ndarray, end: np.ndarray
    ) -> tuple[pa.Array, np.ndarray]:
        """A ``binary`` array of ``content[pos[i]:pos[i] + lengths[i]]``, and the next pos."""
        n = len(pos)
        nxt = pos + lengths
        if n and ((lengths < 0).any() or (nxt > end).any()):
            raise _Bad("a string or bytes value runs past its record")
        if n == 0:
            return pa.array([], pa.binary()), nxt
        if int(nxt[-1]) > _MAX_OFFSET:
            raise _Bad("block too large for int32 offsets")
        # values and the gaps between them, as one binary array over the block's bytes; the
        # even entries are the values (positions only grow from one record to the next)
        offsets = np.empty(2 * n + 1, dtype=np.int32)
        offsets[0 : 2 * n : 2] = pos
        offsets[1 : 2 * n : 2] = nxt
        offsets[2 * n] = nxt[-1]
        spread = pa.Array.from_buffers(
            pa.binary(), 2 * n, [None, pa.py_buffer(offsets), self.buffer]
        )
        values = spread.take(pa.array(np.arange(0, 2 * n, 2, dtype=np.int32)))
        return values, nxt

    # -- schema walk --------------------------------------------------------------------------

    def value(self, t: AvroType, pos: np.ndarray, end: np.ndarray) -> tuple[pa.Array, np.ndarray]:
        """The values of type ``t`` at ``pos`` (raw Avro values: ints for temporal types,
        bytes for decimals, the types fastavro gives without logical types)."""
        kind, n = t.kind, len(pos)
        if kind == "null":
            return pa.nulls(n), pos
        if kind == "boolean":
            if (pos >= end).any():
                raise _Bad("a boolean runs past its record")
            return pa.array(self.data[pos] != 0, pa.bool_()), pos + 1
        if kind in ("int", "long"):
            values, pos = self.varint(pos, end)
            if kind == "long":
                return pa.array(values, pa.int64()), pos
            if n and (values.min() < _INT32_MIN or values.max() > _INT32_MAX):
                raise _Bad("an int is out of range")
            return pa.array(values.astype(np.int32), pa.int32()), pos
        if kind in ("float", "double"):
            dtype = "<f4" if kind == "float" else "<f8"
            numbers, pos = self.fixed_width(pos, end, dtype)
            return pa.array(numbers, pa.float32() if kind == "float" else pa.float64()), pos
        if kind in ("string", "bytes"):
            lengths, pos = self.varint(pos, end)
            raw, pos = self.raw_bytes(pos, lengths, end)
            if kind == "bytes":
                return raw, pos
            try:
                return raw.cast(pa.string()), pos
            except pa.ArrowInvalid as e:  # invalid UTF-8
                raise _Bad(str(e)) from e
        if kind == "fixed":
            size = int(t.size or 0)
            return self.raw_bytes(pos, np.full(n, size, dtype=np.int64), end)
        if kind == "enum":
            index, pos = self.varint(pos, end)
            if n and (index.min() < 0 or index.max() >= len(t.symbols)):
                raise _Bad("an enum index is not a symbol")
            symbols = pa.array(t.symbols, pa.string())
            return symbols.take(pa.array(index.astype(np.int32))), pos
        if kind == "record":
            children = []
            for f in t.fields:
                child, pos = self.slot(f, pos, end)
                children.append(child)
            fields = [
                pa.field(f.name, c.type, f.nullable)
                for f, c in zip(t.fields, children, strict=True)
            ]
            if not fields:
                return pa.StructArray.from_arrays([], fields=[], mask=None), pos
            return pa.StructArray.from_arrays(children, fields=fields), pos
        raise _Bad(f"{kind} values are not decoded vectorised")

    def slot(self, s: AvroSlot, pos: np.ndarray, end: np.ndarray) -> tuple[pa.Array, np.ndarray]:
        """The values of a field/element: its union branch index first when it is a union."""
        if not s.union:
            return self.value(s.type, pos, end)
        branch, pos = self.varint(pos, end)
        is_value = branch == (-1 if s.value_index is None else s.value_index)
        is_null = branch == (-1 if s.null_index is None else s.null_index)
        if not (is_value | is_null).all():
            raise _Bad("a union branch index is out of range")
        if s.value_index is None or s.type.kind == "null":
            return pa.nulls(len(pos)), pos
        if is_value.all():
            return self.value(s.type, pos, end)
        rows = np.flatnonzero(is_value)
        values, after = self.value(s.type, pos[rows], end[rows])
        pos = pos.copy()
        pos[rows] = after
        # row i takes value (number of values before it); null rows take a null index
        index = np.cumsum(is_value, dtype=np.int64) - 1
        return values.take(pa.array(index, pa.int64(), mask=~is_value)), pos


def decode_avro_records(
    content: bytes, start: int, count: int, node: AvroType, schema: pa.Schema
) -> pa.Table | None:
    """Decode the ``count`` length-prefixed Avro records of ``content`` from ``start`` on.

    Args:
        content: the block content.
        start: offset of the first record's length prefix.
        count: number of records.
        node: the records' resolved Avro schema (:func:`hudi_ds.schema.resolve_avro`, a
            record that is :func:`vectorisable`).
        schema: its Arrow form (:func:`hudi_ds.schema.avro_to_arrow_schema`).

    Returns:
        The records as a table of ``schema``, exactly what fastavro and
        :func:`hudi_ds.schema.raw_avro_records_to_arrow` give; ``None`` when the bytes do not
        decode cleanly (a length chain that does not add up, a value that runs past its record,
        a record that does not end where its length says, an invalid UTF-8 string or union
        branch, an ``int`` out of range): the caller then decodes the block record by record.
    """
    bounds = record_bounds(content, start, count)
    if bounds is None:
        return None
    starts, ends = bounds
    decoder = _Decoder(content)
    columns = []
    pos = starts
    try:
        for f in node.fields:
            column, pos = decoder.slot(f, pos, ends)
            columns.append(column)
    except _Bad:
        return None
    if not np.array_equal(pos, ends):
        return None
    logical = [from_physical(c, f.type) for c, f in zip(columns, schema, strict=True)]
    return pa.Table.from_arrays(logical, schema=schema)


__all__ = ["decode_avro_records", "record_bounds", "vectorisable"]
