"""The tagged records of a write, kept from tagging until they are routed to handles.

A write that saves its workload profile in the inflight file must tag every record before it
writes any file (:meth:`hudi_ds.write.client.WriteClient.write_profiled`), so the tagged
batches wait. Java keeps its tagged records the same way: the RDD is persisted at
``hoodie.write.tagged.record.storage.level`` (``MEMORY_AND_DISK_SER``) so that building the
profile and writing do not tag twice. Here they stay in memory up to a byte budget; beyond
it each further batch goes to one local spill file, read back in the same order: its Arrow
tables, record batches and arrays as Arrow IPC streams written straight to the file (only the
rows of a slice, where pickling an Arrow slice writes the whole buffers it views: a batch
sliced from a large input table would write that table's buffers again for every batch), the
rest of it pickled.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import os
import pickle
import tempfile
from collections.abc import Iterator
from types import TracebackType
from typing import Any

import numpy as np
import pyarrow as pa

#: how an Arrow value of a spilled batch is rebuilt from its IPC streams
_TABLE, _BATCH, _ARRAY, _CHUNKED = range(4)


def _streams_of(obj: Any) -> tuple[int, list[pa.Table]] | None:
    """The kind of an Arrow value and the tables written as its IPC streams: a table or a
    record batch as its schema (no rows) and then one stream per column, so that each column
    is read back into buffers of its own (a column kept by a handle holds no other column's
    memory, as with the batch before it was spilled); an array as one column."""
    if isinstance(obj, pa.Table | pa.RecordBatch):
        kind = _TABLE if isinstance(obj, pa.Table) else _BATCH
        cols = [
            pa.Table.from_arrays([obj.column(i)], schema=pa.schema([obj.schema.field(i)]))
            for i in range(obj.num_columns)
        ]
        return kind, [obj.schema.empty_table(), *cols]
    if isinstance(obj, pa.Array | pa.ChunkedArray):
        return (_ARRAY if isinstance(obj, pa.Array) else _CHUNKED), [pa.table({"a": obj})]
    return None


def _read(data: pa.Buffer) -> pa.Table:
    with pa.ipc.open_stream(data) as reader:
        return reader.read_all()


def _rebuild(kind: int, tables: list[pa.Table]) -> Any:
    if kind == _ARRAY:
        return tables[0].column(0).combine_chunks()
    if kind == _CHUNKED:
        return tables[0].column(0)
    schema, cols = tables[0].schema, [t.column(0) for t in tables[1:]]
    if kind == _BATCH:
        return pa.RecordBatch.from_arrays([c.combine_chunks() for c in cols], schema=schema)
    return pa.Table.from_arrays(cols, schema=schema)


class _SpillPickler(pickle.Pickler):
    """Pickles a batch's structure; its Arrow values are set aside (persistent ids) for the
    spill file's IPC streams."""

    def __init__(self, file: io.BytesIO) -> None:
        super().__init__(file, protocol=5)
        self.arrow: list[tuple[int, list[pa.Table]]] = []

    def persistent_id(self, obj: Any) -> int | None:
        found = _streams_of(obj)
        if found is None:
            return None
        self.arrow.append(found)
        return len(self.arrow) - 1


class _SpillUnpickler(pickle.Unpickler):
    def __init__(self, file: io.BytesIO, arrow: list[Any]) -> None:
        super().__init__(file)
        self.arrow = arrow

    def persistent_load(self, pid: Any) -> Any:
        return self.arrow[int(pid)]


def nbytes_of(value: Any) -> int:
    """The buffer bytes of ``value``: Arrow tables and arrays, numpy arrays, and dataclasses,
    tuples and lists of them (other values count 0)."""
    if isinstance(value, pa.Table | pa.RecordBatch | pa.Array | pa.ChunkedArray | np.ndarray):
        return int(value.nbytes)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return sum(nbytes_of(getattr(value, f.name)) for f in dataclasses.fields(value))
    if isinstance(value, tuple | list):
        return sum(nbytes_of(v) for v in value)
    return 0


class TaggedRecords:
    """Tagged batches in write order: in memory up to ``budget_bytes``, spilled beyond it.

    The latest batch always stays in memory (whatever its size): it is routed right after the
    profile is saved, and the task held one whole batch while routing it anyway, so a write of
    one batch (a ``pa.Table``) is never spilled. Use as a context manager: the spill file is
    removed on exit.

    Args:
        budget_bytes: the bytes of batches kept in memory.
        spill_dir: the local folder of the spill file (None: the system temp folder;
            ``hoodie.memory.spillable.map.path``).
    """

    def __init__(self, budget_bytes: int, spill_dir: str | None = None) -> None:
        self.budget_bytes = int(budget_bytes)
        self.spill_dir = spill_dir
        self.in_memory_bytes = 0
        self.spilled = 0  # batches written to the spill file
        self._memory: list[Any] = []
        self._latest: list[Any] = []  # the batch added last (at most one)
        self._spill: pa.NativeFile | None = None
        self._spill_path: str | None = None
        # per spilled batch: its Arrow values (kind, IPC stream lengths), its pickle's length
        self._index: list[tuple[list[tuple[int, list[int]]], int]] = []

    def add(self, tagged: Any) -> None:
        """Keep one tagged batch (after the ones added before it)."""
        if self._latest:
            self._keep(self._latest.pop())
        self._latest.append(tagged)

    def _keep(self, tagged: Any) -> None:
        size = nbytes_of(tagged)
        if self._spill is None and self.in_memory_bytes + size <= self.budget_bytes:
            self._memory.append(tagged)
            self.in_memory_bytes += size
        else:
            if self._spill is None:
                fd, self._spill_path = tempfile.mkstemp(
                    prefix="hudi-tagged-", suffix=".spill", dir=self.spill_dir or None
                )
                os.close(fd)
                self._spill = pa.OSFile(self._spill_path, "wb")
            self._dump(self._spill, tagged)
            self.spilled += 1

    def _dump(self, out: pa.NativeFile, tagged: Any) -> None:
        skeleton = io.BytesIO()
        pickler = _SpillPickler(skeleton)
        pickler.dump(tagged)
        streams = []
        for kind, tables in pickler.arrow:
            lengths = []
            for t in tables:
                start = out.tell()
                with pa.ipc.new_stream(out, t.schema) as writer:
                    writer.write_table(t)
                lengths.append(out.tell() - start)
            streams.append((kind, lengths))
        out.write(skeleton.getbuffer())
        self._index.append((streams, skeleton.tell()))

    def _spilled_batches(self) -> Iterator[Any]:
        assert self._spill is not None and self._spill_path is not None
        self._spill.close()
        index, self._index = self._index, []
        with pa.OSFile(self._spill_path, "rb") as f:
            for streams, skeleton in index:
                arrow = [
                    _rebuild(kind, [_read(pa.py_buffer(f.read(n))) for n in lengths])
                    for kind, lengths in streams
                ]
                yield _SpillUnpickler(io.BytesIO(f.read(skeleton)), arrow).load()
                del arrow

    def drain(self) -> Iterator[Any]:
        """The batches in the order they were added, each released once yielded.

        The in-memory ones come first: once the first batch is spilled, every later one but
        the latest is spilled too, so memory, then file, then the latest is write order.
        """
        memory, self._memory, self.in_memory_bytes = self._memory, [], 0
        memory.reverse()
        while memory:
            yield memory.pop()
        if self._spill is not None:
            yield from self._spilled_batches()
        if self._latest:
            yield self._latest.pop()
        self.close()

    def close(self) -> None:
        """Drop every batch and remove the spill file."""
        self._memory, self._latest, self.in_memory_bytes = [], [], 0
        if self._spill is not None:
            self._spill.close()
            self._spill = None
        self._index = []
        if self._spill_path is not None:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self._spill_path)
            self._spill_path = None

    def __enter__(self) -> TaggedRecords:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
