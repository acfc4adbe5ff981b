"""What storage hands back and counts: listed files (:class:`FileInfo`), object versions
(:class:`ObjectVersion`), output streams (:class:`OutputStream`), the request counters
(:class:`StorageCalls`), and the one rule that turns a full disk into a
:class:`~hudi_ds.errors.StorageError` naming the file (:func:`writing`)."""

from __future__ import annotations

import errno
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import NamedTuple

import pyarrow as pa

from hudi_ds.errors import StorageError


class ObjectVersion(NamedTuple):
    """The version of an object an update is conditional on: its ETag and, where the store
    keeps versions, its version id (see :meth:`ObjectStorage.put_if_version`)."""

    e_tag: str | None
    version: str | None


@dataclass(frozen=True)
class FileInfo:
    """A listed file: path relative to the base path, size in bytes and modification time (ms)."""

    path: str
    size: int
    mtime_ms: int

    @property
    def name(self) -> str:
        return self.path.rsplit("/", 1)[-1]


class StorageCalls:
    """Counts of the storage requests a :class:`Storage` (and the storages it derives with
    :meth:`Storage.sub`) made, by kind.

    Kinds: ``list`` (a directory listing), ``read`` (opening a file to read it), ``head`` (a
    metadata probe of one path: size, type; a batched probe of N paths counts N), ``exists``
    (an existence check). On an object store each is one request (``head`` and ``exists`` are
    HEAD requests, ``list`` a LIST request), which is what the metadata table saves.
    """

    KINDS = ("list", "read", "head", "exists")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts = dict.fromkeys(self.KINDS, 0)

    def add(self, kind: str, n: int = 1) -> None:
        """Count ``n`` requests of ``kind`` (one of :attr:`KINDS`)."""
        with self._lock:
            self._counts[kind] += n

    def snapshot(self) -> dict[str, int]:
        """The counts so far, per kind."""
        with self._lock:
            return dict(self._counts)

    def reset(self) -> None:
        """Set every count back to zero."""
        with self._lock:
            self._counts = dict.fromkeys(self.KINDS, 0)

    def __getitem__(self, kind: str) -> int:
        with self._lock:
            return self._counts[kind]

    def __repr__(self) -> str:
        return f"StorageCalls({self.snapshot()})"


#: errno values meaning "no room left": the device is full or the user's quota is exhausted
_NO_SPACE = {errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)}


def _no_space(e: OSError) -> bool:
    if e.errno in _NO_SPACE:
        return True
    # pyarrow's filesystems report the errno in the message ("[errno 28] No space left ...")
    text = str(e).lower()
    return "no space left on device" in text or "disk quota exceeded" in text


@contextmanager
def writing(path: str) -> Iterator[None]:
    """Translate a full disk (ENOSPC) or exhausted quota (EDQUOT) into :class:`StorageError`.

    Raises:
        StorageError: naming ``path``; other ``OSError`` s pass unchanged.
    """
    try:
        yield
    except StorageError:
        raise
    except OSError as e:
        if not _no_space(e):
            raise
        raise StorageError(f"no space left writing {path}: {e}") from e


class OutputStream:
    """A file being written (from :meth:`Storage.open_output_stream`).

    ``write`` and ``close`` raise :class:`StorageError` naming the file when the disk is full.
    """

    def __init__(self, stream: pa.NativeFile, path: str) -> None:
        self._stream = stream
        self.path = path

    def write(self, data: bytes | pa.Buffer) -> int:
        with writing(self.path):
            return int(self._stream.write(data))

    def tell(self) -> int:
        return int(self._stream.tell())

    def flush(self) -> None:
        with writing(self.path):
            self._stream.flush()

    @property
    def closed(self) -> bool:
        return bool(self._stream.closed)

    def close(self) -> None:
        with writing(self.path):
            self._stream.close()

    def __enter__(self) -> OutputStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
