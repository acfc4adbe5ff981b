"""Storage: the only module that touches files.

Everything goes through :mod:`pyarrow.fs`, so local paths and URIs (``file://``, ``s3://``,
``gs://``, ``hdfs://``) work the same. Paths handed to and returned by :class:`Storage` are
*relative to the table base path* and use ``/`` separators.

Two primitives carry the writer's atomicity:

* :meth:`Storage.create_if_absent` -- atomic create-if-absent (``O_EXCL`` locally; on object
  stores a check-then-write, which is what Hudi itself does there);
* :meth:`Storage.write_atomic` -- write to a temporary name, then rename over the target, so a
  reader sees the old file or the complete new one, never a torn one.
"""

from __future__ import annotations

import contextlib
import errno
import os
import threading
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.fs as pafs

from hudi_ds.errors import StorageError
from hudi_ds.faults import crash_point


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


def _join(*parts: str) -> str:
    return "/".join(p.strip("/") for p in parts if p and p.strip("/"))


class Storage:
    """File access rooted at a table's base path.

    Args:
        base_uri: a local path or a URI understood by ``pyarrow.fs.FileSystem.from_uri``.
        filesystem: an explicit pyarrow filesystem (then ``base_uri`` is a path inside it).
        calls: the request counters to add to (default: new ones; :meth:`sub` shares them).
    """

    def __init__(
        self,
        base_uri: str,
        filesystem: pafs.FileSystem | None = None,
        calls: StorageCalls | None = None,
    ) -> None:
        self.base_uri = str(base_uri)
        #: requests made so far, per kind (see :class:`StorageCalls`)
        self.calls = calls if calls is not None else StorageCalls()
        if filesystem is not None:
            self.fs = filesystem
            self.root = self.base_uri.rstrip("/")
        elif "://" in self.base_uri:
            self.fs, root = pafs.FileSystem.from_uri(self.base_uri)
            self.root = root.rstrip("/")
        else:
            self.fs = pafs.LocalFileSystem()
            self.root = os.path.abspath(self.base_uri).rstrip("/") or "/"
        self.is_local = isinstance(self.fs, pafs.LocalFileSystem)

    def __reduce__(self) -> tuple[type, tuple[str]]:
        # pickles as its URI: cheap to send to Spark executors
        uri = self.base_uri if "://" in self.base_uri else self.root
        return (Storage, (uri,))

    # -- paths -------------------------------------------------------------------------------
    def full_path(self, rel: str = "") -> str:
        """The filesystem path of ``rel`` (relative to the base path)."""
        return self.root if not rel else f"{self.root}/{rel.lstrip('/')}"

    def uri(self, rel: str = "") -> str:
        """A URI of ``rel`` suitable for other readers (hudi-rs, Spark)."""
        if "://" in self.base_uri:
            base = self.base_uri.rstrip("/")
            return base if not rel else f"{base}/{rel.lstrip('/')}"
        return self.full_path(rel)

    def sub(self, rel: str) -> Storage:
        """A Storage rooted at a sub folder (e.g. the metadata table); it counts its requests
        in this storage's :attr:`calls`."""
        return Storage(self.full_path(rel), self.fs, self.calls)

    # -- queries -----------------------------------------------------------------------------
    def exists(self, rel: str) -> bool:
        self.calls.add("exists")
        return self.fs.get_file_info(self.full_path(rel)).type != pafs.FileType.NotFound

    def existing(self, rels: Sequence[str]) -> list[str]:
        """Which of the paths ``rels`` exist: one batched probe of exact names, no listing."""
        self.calls.add("head", len(rels))
        infos = self.fs.get_file_info([self.full_path(r) for r in rels])
        return [r for r, fi in zip(rels, infos, strict=True) if fi.type != pafs.FileType.NotFound]

    def is_dir(self, rel: str) -> bool:
        self.calls.add("head")
        return self.fs.get_file_info(self.full_path(rel)).type == pafs.FileType.Directory

    def info(self, rel: str) -> FileInfo | None:
        self.calls.add("head")
        fi = self.fs.get_file_info(self.full_path(rel))
        if fi.type != pafs.FileType.File:
            return None
        return FileInfo(rel, int(fi.size or 0), _mtime_ms(fi))

    def list_files(self, rel: str = "", recursive: bool = False) -> list[FileInfo]:
        """Files directly in ``rel`` (or below it when ``recursive``); empty if it is missing."""
        return [f for f, is_dir in self._list(rel, recursive) if not is_dir]

    def list_dirs(self, rel: str = "", recursive: bool = False) -> list[str]:
        """Sub folders directly in ``rel`` (or below it when ``recursive``; relative paths)."""
        return [f.path for f, is_dir in self._list(rel, recursive) if is_dir]

    def list_entries(self, rel: str = "") -> tuple[list[FileInfo], list[str]]:
        """The files and the sub folders directly in ``rel``, from one listing request."""
        files: list[FileInfo] = []
        dirs: list[str] = []
        for f, is_dir in self._list(rel, False):
            if is_dir:
                dirs.append(f.path)
            else:
                files.append(f)
        return files, dirs

    def _list(self, rel: str, recursive: bool) -> Iterator[tuple[FileInfo, bool]]:
        sel = pafs.FileSelector(self.full_path(rel), allow_not_found=True, recursive=recursive)
        prefix = len(self.root) + 1 if self.root != "/" else 1
        self.calls.add("list")
        try:
            infos = self.fs.get_file_info(sel)
        except FileNotFoundError:
            # a folder below ``rel`` went while it was being listed (e.g. the markers of an
            # instant that completed meanwhile): list again, what is gone is not listed
            self.calls.add("list")
            try:
                infos = self.fs.get_file_info(sel)
            except FileNotFoundError:
                if self.is_dir(rel):
                    raise
                infos = []
        for fi in infos:
            path = fi.path[prefix:] if fi.path.startswith(self.root) else fi.path
            yield (
                FileInfo(path, int(fi.size or 0), _mtime_ms(fi)),
                fi.type == pafs.FileType.Directory,
            )

    # -- reads -------------------------------------------------------------------------------
    def read_bytes(self, rel: str) -> bytes:
        self.calls.add("read")
        try:
            if self.is_local:
                # a local file's size is known: one read into one buffer (a stream reads in
                # chunks and joins them, several times the CPU on large log files)
                with self.fs.open_input_file(self.full_path(rel)) as f:
                    return bytes(f.read())
            with self.fs.open_input_stream(self.full_path(rel)) as f:
                return bytes(f.read())
        except FileNotFoundError:
            raise
        except OSError as e:
            if not self.exists(rel):
                raise FileNotFoundError(self.full_path(rel)) from e
            raise

    def read_text(self, rel: str) -> str:
        return self.read_bytes(rel).decode("utf-8")

    def open_input_file(self, rel: str) -> pa.NativeFile:
        """A random-access file (for Parquet)."""
        self.calls.add("read")
        return self.fs.open_input_file(self.full_path(rel))

    # -- writes ------------------------------------------------------------------------------
    def makedirs(self, rel: str) -> None:
        with writing(self.full_path(rel)):
            self.fs.create_dir(self.full_path(rel), recursive=True)

    def write_bytes(self, rel: str, data: bytes) -> None:
        """Write (or overwrite) a file in place; use :meth:`write_atomic` for commit points.

        Raises:
            StorageError: the disk or quota is full (the message names the file).
        """
        with writing(self.full_path(rel)):
            self._ensure_parent(rel)
            with self.fs.open_output_stream(self.full_path(rel)) as f:
                f.write(data)

    def open_output_stream(self, rel: str) -> OutputStream:
        """A new file to write (its ``write``/``close`` raise StorageError on a full disk)."""
        with writing(self.full_path(rel)):
            self._ensure_parent(rel)
            return OutputStream(
                self.fs.open_output_stream(self.full_path(rel)), self.full_path(rel)
            )

    def write_atomic(self, rel: str, data: bytes, crash_point_name: str | None = None) -> None:
        """Write ``data`` to a temporary sibling, then rename it onto ``rel``.

        Raises:
            StorageError: the disk or quota is full (names the file; ``rel`` is unchanged).
        """
        parent, _, name = rel.rpartition("/")
        tmp = _join(parent, f".{name}.{uuid.uuid4().hex}.tmp")
        try:
            with writing(self.full_path(rel)):
                self._ensure_parent(rel)
                with self.fs.open_output_stream(self.full_path(tmp)) as f:
                    f.write(data)
        except BaseException:
            self.delete(tmp)
            raise
        if crash_point_name:
            crash_point(crash_point_name)
        try:
            self.fs.move(self.full_path(tmp), self.full_path(rel))
        except Exception:
            self.delete(tmp)
            raise

    def create_if_absent(self, rel: str, data: bytes = b"") -> bool:
        """Atomically create ``rel`` with ``data`` unless it exists. Returns True if created.

        Locally the file appears *with its content*: ``data`` goes to a temporary sibling that
        is then hard-linked to ``rel`` (``link`` fails if ``rel`` exists), so a reader never
        sees the new file empty or half-written (a lock holder's body, a timeline instant).
        Where hard links are not supported, ``O_EXCL`` creation is used. On other storage it
        is a check-then-write (what Hudi does there); :class:`~hudi_ds.write.lock.FileSystemLock`
        tolerates the short window in which such a file exists without its body.
        """
        with writing(self.full_path(rel)):
            self._ensure_parent(rel)
            if self.is_local:
                target = self.full_path(rel)
                if not data:
                    return self._create_excl(target, data)
                parent, _, name = target.rpartition("/")
                tmp = f"{parent}/.{name}.{uuid.uuid4().hex}.tmp"
                fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
                try:
                    try:
                        os.write(fd, data)
                    finally:
                        os.close(fd)
                    try:
                        os.link(tmp, target)
                    except FileExistsError:
                        return False
                    except OSError:  # no hard links on this file system
                        return self._create_excl(target, data)
                    return True
                finally:
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(tmp)
            if self.exists(rel):
                return False
            try:
                self.write_bytes(rel, data)
            except BaseException:
                self.delete(rel)  # ours, just created: leave no empty or torn file
                raise
            return True

    @staticmethod
    def _create_excl(target: str, data: bytes) -> bool:
        try:
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            return False
        try:
            try:
                os.write(fd, data)
            finally:
                os.close(fd)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(target)  # ours, just created: leave no empty or torn file
            raise
        return True

    def rename(self, src: str, dst: str) -> None:
        self._ensure_parent(dst)
        self.fs.move(self.full_path(src), self.full_path(dst))

    def delete(self, rel: str) -> bool:
        """Delete a file if present. Returns True if something was deleted."""
        try:
            self.fs.delete_file(self.full_path(rel))
            return True
        except FileNotFoundError:
            return False
        except OSError:
            if self.exists(rel):
                raise
            return False

    def delete_dir(self, rel: str) -> None:
        if self.is_dir(rel):
            self.fs.delete_dir(self.full_path(rel))

    def _ensure_parent(self, rel: str) -> None:
        parent = rel.rpartition("/")[0]
        if parent:
            self.fs.create_dir(self.full_path(parent), recursive=True)
        elif not self.exists(""):
            self.fs.create_dir(self.root, recursive=True)


def _mtime_ms(fi: pafs.FileInfo) -> int:
    mt = fi.mtime_ns
    return int(mt // 1_000_000) if mt is not None else 0


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
