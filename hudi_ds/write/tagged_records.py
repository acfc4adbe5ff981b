"""The tagged records of a write, kept from tagging until they are routed to handles.

A write that saves its workload profile in the inflight file must tag every record before it
writes any file (:meth:`hudi_ds.write.client.WriteClient.write_profiled`), so the tagged
batches wait. Java keeps its tagged records the same way: the RDD is persisted at
``hoodie.write.tagged.record.storage.level`` (``MEMORY_AND_DISK_SER``) so that building the
profile and writing do not tag twice. Here they stay in memory up to a byte budget; beyond
it each further batch is pickled to one local spill file, read back in the same order. Arrow
tables, record batches and arrays in a batch are written in Arrow's IPC format: it writes only
the rows of a slice, where pickling an Arrow slice writes the whole buffers it views (a batch
sliced from a large input table would write that table's buffers again for every batch).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import pickle
import tempfile
from collections.abc import Iterator
from types import TracebackType
from typing import IO, Any

import numpy as np
import pyarrow as pa


def _from_ipc(data: bytes | bytearray | memoryview) -> pa.Table:
    with pa.ipc.open_stream(pa.py_buffer(data)) as reader:
        return reader.read_all()


def _batch_from_ipc(data: bytes | bytearray | memoryview) -> pa.RecordBatch:
    with pa.ipc.open_stream(pa.py_buffer(data)) as reader:
        return reader.read_next_batch()


def _array_from_ipc(data: bytes | bytearray | memoryview) -> pa.Array:
    return _from_ipc(data).column(0).combine_chunks()


def _chunked_from_ipc(data: bytes | bytearray | memoryview) -> pa.ChunkedArray:
    return _from_ipc(data).column(0)


def _ipc(data: pa.Table | pa.RecordBatch) -> pickle.PickleBuffer:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, data.schema) as writer:
        if isinstance(data, pa.RecordBatch):
            writer.write_batch(data)
        else:
            writer.write_table(data)
    return pickle.PickleBuffer(sink.getvalue())


class _SpillPickler(pickle.Pickler):
    """Pickles Arrow values in Arrow's IPC format (only the rows of a slice are written)."""

    def reducer_override(self, obj: Any) -> Any:
        if isinstance(obj, pa.Table):
            return _from_ipc, (_ipc(obj),)
        if isinstance(obj, pa.RecordBatch):
            return _batch_from_ipc, (_ipc(obj),)
        if isinstance(obj, pa.Array):
            return _array_from_ipc, (_ipc(pa.table({"a": obj})),)
        if isinstance(obj, pa.ChunkedArray):
            return _chunked_from_ipc, (_ipc(pa.table({"a": obj})),)
        return NotImplemented


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
        self._spill: IO[bytes] | None = None
        self._spill_path: str | None = None

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
                    prefix="hudi-tagged-", suffix=".pkl", dir=self.spill_dir or None
                )
                self._spill = os.fdopen(fd, "w+b")
            _SpillPickler(self._spill, protocol=5).dump(tagged)
            self.spilled += 1

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
            self._spill.flush()
            self._spill.seek(0)
            for _ in range(self.spilled):
                yield pickle.load(self._spill)
        if self._latest:
            yield self._latest.pop()
        self.close()

    def close(self) -> None:
        """Drop every batch and remove the spill file."""
        self._memory, self._latest, self.in_memory_bytes = [], [], 0
        if self._spill is not None:
            self._spill.close()
            self._spill = None
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
