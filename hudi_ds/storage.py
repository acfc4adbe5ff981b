"""Storage: the only module that touches files.

One storage layer chosen by URI. Local paths (and ``file://``, ``hdfs://`` or an explicit
:mod:`pyarrow.fs` filesystem) go through :mod:`pyarrow.fs`; object stores (``s3://``,
``s3a://``, ``gs://``, ``abfs(s)://``, ``az://``) through :class:`ObjectStorage`, built on
obstore (:mod:`hudi_ds.object_store` says why) with ``storage_options``. ``Storage(uri,
storage_options=...)`` returns the right one. Paths handed to and returned by :class:`Storage`
are *relative to the table base path* and use ``/`` separators.

Two primitives carry the writer's atomicity:

* :meth:`Storage.create_if_absent` -- atomic create-if-absent (``O_EXCL`` locally; on object
  stores a conditional put, ``If-None-Match: *`` / ``ifGenerationMatch=0``);
* :meth:`Storage.write_atomic` -- write to a temporary name, then rename over the target, so a
  reader sees the old file or the complete new one, never a torn one (on object stores a plain
  put, which is atomic there).
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import uuid
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs

from hudi_ds.errors import ConfigError, StorageError, UnsupportedError
from hudi_ds.faults import crash_point
from hudi_ds.object_store import (
    RangeReader,
    build_store,
    is_object_store_uri,
    normalize_options,
    short_error,
    warn_ignored_for_local,
)
from hudi_ds.storage_types import FileInfo, ObjectVersion, OutputStream, StorageCalls, writing


def _join(*parts: str) -> str:
    return "/".join(p.strip("/") for p in parts if p and p.strip("/"))


class Storage:
    """File access rooted at a table's base path.

    ``Storage(uri)`` with an object store URI (``s3://``, ``gs://``, ``abfs(s)://``, ``az://``)
    and no explicit filesystem is an :class:`ObjectStorage`.

    Args:
        base_uri: a local path, an object store URI, or a URI understood by
            ``pyarrow.fs.FileSystem.from_uri`` (``file://``, ``hdfs://``).
        filesystem: an explicit pyarrow filesystem (then ``base_uri`` is a path inside it).
        calls: the request counters to add to (default: new ones; :meth:`sub` shares them).
        storage_options: credentials and settings of an object store (``aws_access_key_id``,
            ``aws_endpoint_url``, ``google_service_account``, ``azure_storage_account_name``,
            ...; see :mod:`hudi_ds.object_store`); ignored with a warning for local paths.

    Raises:
        ConfigError: an unknown storage option (named) or a bad value.
    """

    def __new__(
        cls,
        base_uri: str,
        filesystem: pafs.FileSystem | None = None,
        calls: StorageCalls | None = None,
        storage_options: Mapping[str, Any] | None = None,
        **_internal: Any,
    ) -> Storage:
        if cls is Storage and filesystem is None and is_object_store_uri(str(base_uri)):
            return super().__new__(ObjectStorage)
        return super().__new__(cls)

    def __init__(
        self,
        base_uri: str,
        filesystem: pafs.FileSystem | None = None,
        calls: StorageCalls | None = None,
        storage_options: Mapping[str, Any] | None = None,
    ) -> None:
        self.base_uri = str(base_uri)
        #: requests made so far, per kind (see :class:`StorageCalls`)
        self.calls = calls if calls is not None else StorageCalls()
        #: the storage options (none for pyarrow filesystems)
        self.storage_options: dict[str, str] = {}
        warn_ignored_for_local(self.base_uri, normalize_options(storage_options))
        self._explicit_fs = filesystem is not None
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
        # see shared_cache_id (a sub storage inherits it from its parent)
        self._shared_fs = filesystem is None or self.is_local

    def __reduce__(self) -> tuple[Any, ...]:
        # pickles as its URI (cheap to send to Spark executors), with an explicit filesystem
        # when it was given one (pyarrow filesystems pickle with their options)
        if self._explicit_fs:
            return (Storage, (self.root, self.fs))
        uri = self.base_uri if "://" in self.base_uri else self.root
        return (Storage, (uri,))

    @property
    def cache_id(self) -> str:
        """Names the file system, for caches keyed by file (with :meth:`full_path`)."""
        return str(self.fs.type_name)

    @property
    def shared_cache_id(self) -> str | None:
        """:attr:`cache_id` when a path names the same file for every storage of the process
        (the local file system, or one built from the URI), for caches kept per process; None
        for a file system object the caller made (an in-memory one: its paths name nothing
        outside it, and another such object may reuse them)."""
        return self.cache_id if self._shared_fs else None

    #: whether :meth:`put_if_version` can update an existing object against its version
    #: (object stores' conditional puts); every storage can create one if absent with it
    conditional_update = False

    def read_with_version(self, rel: str) -> tuple[bytes, ObjectVersion]:
        """The content of ``rel`` and the version it was read at, for a later
        :meth:`put_if_version` (an object store's ETag / version id; none locally).

        Raises:
            FileNotFoundError: ``rel`` does not exist.
        """
        return self.read_bytes(rel), ObjectVersion(None, None)

    def put_if_version(
        self, rel: str, data: bytes, version: ObjectVersion | None
    ) -> ObjectVersion | None:
        """Write ``data`` to ``rel`` only if it is still at ``version`` or, with ``version``
        None, only if it does not exist: a compare-and-swap. Returns the new version, or None
        when the precondition failed (someone else wrote or created it).

        Here (a file system) only the create is atomic (:meth:`create_if_absent`).

        Raises:
            UnsupportedError: ``version`` given on a storage without conditional updates
                (:attr:`conditional_update` is False).
        """
        if version is not None:
            raise UnsupportedError(f"{self.base_uri}: no conditional update on this file system")
        return ObjectVersion(None, None) if self.create_if_absent(rel, data) else None

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
        out = Storage(self.full_path(rel), self.fs, self.calls)
        out._shared_fs = self._shared_fs
        return out

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

    def is_file(self, rel: str) -> bool:
        """Whether the file ``rel`` exists: one probe of that name (on an object store a HEAD,
        without :meth:`exists`' listing of a folder by that name)."""
        self.calls.add("head")
        return self.fs.get_file_info(self.full_path(rel)).type == pafs.FileType.File

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
        root, directory = self.root, pafs.FileType.Directory
        for fi in infos:  # (a partition of a large table lists thousands: no call per file)
            path = fi.path
            if path.startswith(root):
                path = path[prefix:]
            mt = fi.mtime_ns
            yield (
                FileInfo(path, int(fi.size or 0), mt // 1_000_000 if mt is not None else 0),
                fi.type == directory,
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

    def open_input_file(self, rel: str, size: int | None = None) -> pa.NativeFile:
        """A random-access file (for Parquet). ``size``: the file's size when known (from a
        listing), which spares an object store the HEAD request that asks for it."""
        self.calls.add("read")
        return self.fs.open_input_file(self.full_path(rel))

    def small_file_bytes(self, rel: str, size: int | None) -> bytes | None:
        """The whole content of ``rel`` when one GET of it beats ranged reads: on an object
        store, a file whose (listed) ``size`` is at most :data:`WHOLE_READ_BYTES`; None
        otherwise, and always for a local file (read in place)."""
        return None

    def open_to_read_all(self, rel: str, size: int | None = None) -> pa.NativeFile:
        """:meth:`open_input_file` for a caller that reads most of the file (all its rows):
        a small object store file comes in one GET (:meth:`small_file_bytes`)."""
        data = self.small_file_bytes(rel, size)
        return pa.BufferReader(data) if data is not None else self.open_input_file(rel, size)

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

    def open_append_stream(self, rel: str) -> OutputStream:
        """The existing file ``rel`` opened to write at its end (local files only: an object
        store's object cannot grow).

        Raises:
            UnsupportedError: not a local file system.
        """
        if not self.is_local:
            raise UnsupportedError(f"{self.full_path(rel)}: cannot append to an object")
        with writing(self.full_path(rel)):
            return OutputStream(
                self.fs.open_append_stream(self.full_path(rel)), self.full_path(rel)
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
        is a check-then-write (what Hudi does there);
        :class:`~hudi_ds.concurrency.file_system_lock.FileSystemLock` tolerates the short window
        in which such a file exists without its body.
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

    def discard(self, rel: str) -> None:
        """Delete a file if present, without asking whether it was (on an object store one
        request, where :meth:`delete` asks first)."""
        self.delete(rel)

    def discard_all(self, rels: Sequence[str]) -> None:
        """:meth:`discard` each of ``rels`` (on an object store in batched requests)."""
        for rel in rels:
            self.discard(rel)

    def delete_dir(self, rel: str) -> None:
        if self.is_dir(rel):
            self.fs.delete_dir(self.full_path(rel))

    def _ensure_parent(self, rel: str) -> None:
        parent = rel.rpartition("/")[0]
        if parent:
            self.fs.create_dir(self.full_path(parent), recursive=True)
        elif not self.exists(""):
            self.fs.create_dir(self.root, recursive=True)


def open_storage(
    path: str | os.PathLike[str] | Storage, storage_options: Mapping[str, Any] | None = None
) -> Storage:
    """The :class:`Storage` of ``path`` (a path, a URI or a Storage) with ``storage_options``.

    Raises:
        ConfigError: ``storage_options`` given with a ready :class:`Storage` (it has its own),
            or an unknown storage option (named).
    """
    if isinstance(path, Storage):
        if storage_options:
            raise ConfigError(
                f"storage_options {sorted(storage_options)} given with a Storage for "
                f"{path.base_uri}: build the Storage with them instead"
            )
        return path
    return Storage(os.fspath(path), storage_options=storage_options)


def _mtime_ms(fi: pafs.FileInfo) -> int:
    mt = fi.mtime_ns
    return int(mt // 1_000_000) if mt is not None else 0


#: concurrent HEAD requests of one :meth:`ObjectStorage.existing` probe
_PROBE_THREADS = 16


class ObjectStorage(Storage):
    """:class:`Storage` on an object store (S3, GCS, Azure) through obstore.

    Built by ``Storage(uri, storage_options=...)`` for an object store URI. Folders are key
    prefixes: :meth:`makedirs` does nothing, a folder exists while a key lies below it.

    * :meth:`create_if_absent` is a conditional put (S3 ``If-None-Match: *``, GCS
      ``ifGenerationMatch=0``, Azure ``If-None-Match: *``): of two writers creating the same
      key exactly one gets True, and the object appears whole, with its content.
    * :meth:`write_atomic` is a plain put: a put is atomic on an object store (a reader sees the
      old object or the new one), so no temporary object and no rename.
    * Transient failures (5xx, throttling, dropped connections, timeouts) are retried with
      exponential backoff by the client (``max_retries`` / ``retry_timeout`` storage options);
      a call that finally fails raises :class:`StorageError` naming the operation and the URI.
      A missing object raises ``FileNotFoundError`` as locally.

    It pickles with its URI and its storage options, so Spark executors reach the same store
    with the same credentials.
    """

    def __init__(
        self,
        base_uri: str,
        filesystem: pafs.FileSystem | None = None,
        calls: StorageCalls | None = None,
        storage_options: Mapping[str, Any] | None = None,
        _store: Any = None,
        _prefix: str = "",
    ) -> None:
        self.base_uri = str(base_uri).rstrip("/")
        self.calls = calls if calls is not None else StorageCalls()
        self.storage_options = normalize_options(storage_options)
        self._explicit_fs = False
        #: the key prefix of the base path inside :attr:`store` ("" at the store's root)
        self.root = _prefix.strip("/")
        #: the obstore store (rooted at the URI it was first built for; :meth:`sub` shares it)
        self.store = (
            _store if _store is not None else build_store(self.base_uri, self.storage_options)
        )
        self.is_local = False

    def __reduce__(self) -> tuple[Any, ...]:
        base = self.base_uri
        if self.root:  # a sub storage: rebuild the root's store, then descend
            base = base[: -len(self.root) - 1]
            return (_object_sub, (base, self.storage_options, self.root))
        return (Storage, (base, None, None, self.storage_options))

    @property
    def fs(self) -> Any:  # type: ignore[override]
        raise AttributeError(
            f"{self.base_uri} is on an object store: use Storage's methods, not a pyarrow "
            "filesystem"
        )

    @property
    def cache_id(self) -> str:
        return f"obstore:{self.base_uri.partition('://')[0]}"

    @property
    def shared_cache_id(self) -> str | None:
        # one bucket name may live on several endpoints: the options tell them apart
        opts = ",".join(f"{k}={v}" for k, v in sorted(self.storage_options.items()))
        return f"{self.cache_id}[{opts}]"

    # -- paths -------------------------------------------------------------------------------
    def _key(self, rel: str) -> str:
        return _join(self.root, rel)

    def full_path(self, rel: str = "") -> str:
        """The URI of ``rel`` (what error messages name)."""
        return self.uri(rel)

    def uri(self, rel: str = "") -> str:
        return self.base_uri if not rel else f"{self.base_uri}/{rel.lstrip('/')}"

    def sub(self, rel: str) -> Storage:
        return ObjectStorage(
            self.uri(rel),
            calls=self.calls,
            storage_options=self.storage_options,
            _store=self.store,
            _prefix=self._key(rel),
        )

    @contextmanager
    def _op(self, op: str, rel: str) -> Iterator[None]:
        """Translate a failed obstore call into StorageError naming ``op`` and the URI; a
        missing object stays ``FileNotFoundError``."""
        try:
            yield
        except FileNotFoundError as e:
            raise FileNotFoundError(f"{op} {self.uri(rel)}: not found") from e
        except (StorageError, KeyboardInterrupt, SystemExit):
            raise
        except Exception as e:
            raise StorageError(f"{op} {self.uri(rel)} failed: {short_error(e)}") from e

    def _head(self, rel: str) -> dict[str, Any] | None:
        import obstore

        try:
            with self._op("head", rel):
                return dict(obstore.head(self.store, self._key(rel)))
        except FileNotFoundError:
            return None

    def _has_children(self, rel: str) -> bool:
        import obstore

        self.calls.add("list")
        with self._op("list", rel):
            for chunk in obstore.list(self.store, self._key(rel) or None, chunk_size=1):
                if chunk:
                    return True
        return False

    # -- queries -----------------------------------------------------------------------------
    def exists(self, rel: str) -> bool:
        self.calls.add("exists")
        if rel.strip("/") and self._head(rel) is not None:
            return True
        return self._has_children(rel)

    def existing(self, rels: Sequence[str]) -> list[str]:
        """Which of ``rels`` exist.

        Names of one folder sharing a prefix (the possible files of one instant time) are
        probed with one listing that starts at the prefix (S3 ``start-after``): keys come in
        order, so the scan stops at the first key past the prefix. Other names get one HEAD
        each, sent concurrently.
        """
        groups: dict[str, list[str]] = {}
        for r in rels:
            groups.setdefault(r.rpartition("/")[0], []).append(r)
        found: set[str] = set()
        single: list[str] = []
        for parent, members in groups.items():
            names = [m.rpartition("/")[2] for m in members]
            common = os.path.commonprefix(names)  # noqa: RUF071 - a character prefix
            if len(members) < 3 or not common or common in names:
                single.extend(members)
            else:
                found |= self._listed_from(parent, common, set(members))
        self.calls.add("head", len(single))
        if len(single) == 1:
            found |= {r for r in single if self._head(r) is not None}
        elif single:
            with ThreadPoolExecutor(min(len(single), _PROBE_THREADS)) as pool:
                metas = list(pool.map(self._head, single))
            found |= {r for r, m in zip(single, metas, strict=True) if m is not None}
        return [r for r in rels if r in found]

    def _listed_from(self, parent: str, prefix: str, wanted: set[str]) -> set[str]:
        """Which of ``wanted`` (names in ``parent`` starting with ``prefix``) exist: one
        listing of ``parent`` from ``prefix`` on, read while the keys start with it."""
        import obstore

        start = _join(self._key(parent), prefix)
        cut = len(self.root) + 1 if self.root else 0
        found: set[str] = set()
        self.calls.add("list")
        with self._op("list", parent):
            for chunk in obstore.list(self.store, self._key(parent) or None, offset=start):
                for meta in chunk:
                    path = meta["path"]
                    if not path.startswith(start):
                        return found
                    if path[cut:] in wanted:
                        found.add(path[cut:])
        return found

    def is_dir(self, rel: str) -> bool:
        return self._has_children(rel)

    def is_file(self, rel: str) -> bool:
        self.calls.add("head")
        return self._head(rel) is not None

    def info(self, rel: str) -> FileInfo | None:
        self.calls.add("head")
        meta = self._head(rel)
        if meta is None:
            return None
        return FileInfo(rel, int(meta["size"]), _meta_mtime_ms(meta))

    def _list(self, rel: str, recursive: bool) -> Iterator[tuple[FileInfo, bool]]:
        import obstore

        key = self._key(rel)
        cut = len(self.root) + 1 if self.root else 0
        self.calls.add("list")
        with self._op("list", rel):
            if not recursive:
                res = obstore.list_with_delimiter(self.store, key or None)
                metas = list(res["objects"])
                prefixes = list(res["common_prefixes"])
            else:
                metas = [m for chunk in obstore.list(self.store, key or None) for m in chunk]
                seen: set[str] = set()
                start = len(key) + 1 if key else 0
                for m in metas:
                    parts = m["path"][start:].split("/")[:-1]
                    for i in range(1, len(parts) + 1):
                        seen.add(_join(key, *parts[:i]))
                prefixes = sorted(seen)
        for p in prefixes:
            yield FileInfo(p[cut:], 0, 0), True
        for m in metas:
            yield FileInfo(m["path"][cut:], int(m["size"]), _meta_mtime_ms(m)), False

    # -- reads -------------------------------------------------------------------------------
    def read_bytes(self, rel: str) -> bytes:
        import obstore

        self.calls.add("read")
        with self._op("get", rel):
            return bytes(obstore.get(self.store, self._key(rel)).bytes())

    def open_input_file(self, rel: str, size: int | None = None) -> pa.NativeFile:
        """A random-access file (for Parquet): ranged GETs of the object. Without ``size``
        (known from a listing) one HEAD asks for it; a missing object then raises
        ``FileNotFoundError`` here, else at the first read (the GET fails cleanly)."""
        self.calls.add("read")
        if size is None:
            meta = self._head(rel)
            if meta is None:
                raise FileNotFoundError(f"open {self.uri(rel)}: not found")
            size = int(meta["size"])
        return pa.PythonFile(RangeReader(functools.partial(self._get_range, rel), size), mode="r")

    def _get_range(self, rel: str, start: int, end: int) -> bytes:
        import obstore

        with self._op("get", rel):
            return bytes(obstore.get_range(self.store, self._key(rel), start=start, end=end))

    def small_file_bytes(self, rel: str, size: int | None) -> bytes | None:
        """The object read whole by one GET when its (listed) ``size`` is at most
        :data:`WHOLE_READ_BYTES` (None: larger, or its size unknown: ranged GETs)."""
        if size is not None and 0 < size <= WHOLE_READ_BYTES:
            return self.read_bytes(rel)
        return None

    # -- writes ------------------------------------------------------------------------------
    def makedirs(self, rel: str) -> None:
        """Nothing to do: folders are key prefixes on an object store."""

    def _ensure_parent(self, rel: str) -> None:
        return None

    def _put(self, rel: str, data: bytes, mode: str = "overwrite") -> None:
        import obstore

        with self._op("put", rel):
            obstore.put(self.store, self._key(rel), data, mode=mode)  # type: ignore[arg-type]

    def write_bytes(self, rel: str, data: bytes) -> None:
        """Write (or overwrite) an object (one atomic put)."""
        self._put(rel, data)

    def open_output_stream(self, rel: str) -> OutputStream:
        """A new object to write: a multipart upload that becomes visible whole at close."""
        import obstore

        with self._op("put", rel):
            writer = obstore.open_writer(self.store, self._key(rel))
        return OutputStream(_ObjectWriter(self, rel, writer), self.uri(rel))  # type: ignore[arg-type]

    def write_atomic(self, rel: str, data: bytes, crash_point_name: str | None = None) -> None:
        """Put ``data`` at ``rel``: a put is atomic on an object store (no temporary object)."""
        if crash_point_name:
            crash_point(crash_point_name)
        self._put(rel, data)

    def create_if_absent(self, rel: str, data: bytes = b"") -> bool:
        """Create ``rel`` with ``data`` unless it exists, in one conditional put (atomic on the
        store). Returns True if this call created it, False if the object already existed.

        The object carries a random token in its user metadata: a put that the client retried
        after a lost response (its first attempt had landed) finds its own object, and tells it
        from another writer's by the token.
        """
        return self.put_if_version(rel, data, None) is not None

    def read_with_version(self, rel: str) -> tuple[bytes, ObjectVersion]:
        """The content of ``rel`` and the version it was read at (its ETag, and its version id
        where the store keeps versions), for a later :meth:`put_if_version`.

        Raises:
            FileNotFoundError: ``rel`` does not exist.
            StorageError: the call failed (after the client's retries).
        """
        import obstore

        self.calls.add("read")
        with self._op("get", rel):
            got = obstore.get(self.store, self._key(rel))
            data = bytes(got.bytes())
        meta = got.meta
        return data, ObjectVersion(meta.get("e_tag"), meta.get("version"))

    def put_if_version(
        self, rel: str, data: bytes, version: ObjectVersion | None
    ) -> ObjectVersion | None:
        """Write ``data`` to ``rel`` only if the object is still at ``version`` (S3/Azure
        ``If-Match: <etag>``, GCS ``ifGenerationMatch``), or, with ``version`` None, only if it
        does not exist (``If-None-Match: *``): a compare-and-swap on the store. Returns the new
        version, or None when the precondition failed (someone else wrote or created it).

        Of several writers updating the same version, at most one succeeds. A put retried by
        the client after a lost response, whose first attempt landed, fails its own
        precondition: the object's user metadata carries a random token of each put, so such a
        put is still told apart from another writer's and succeeds.
        """
        import obstore
        from obstore.exceptions import AlreadyExistsError, PreconditionError

        mode: Any = "create"
        if version is not None:
            if version.e_tag is None and version.version is None:
                raise StorageError(
                    f"conditional update of {self.uri(rel)}: the store returned no ETag/version"
                )
            mode = {k: v for k, v in version._asdict().items() if v is not None}
        token = uuid.uuid4().hex
        op = "create" if version is None else "put"
        try:
            with self._op(op, rel):
                try:
                    res = obstore.put(
                        self.store, self._key(rel), data, mode=mode, attributes={_TOKEN: token}
                    )
                except (AlreadyExistsError, PreconditionError, FileNotFoundError):
                    return self._written_by(rel, token)
        except StorageError as e:
            # some S3-compatible servers answer a lost race with 409 ConditionalRequestConflict
            # (409 as a number of its own: the message also holds the endpoint, whose port may
            # start with 409)
            if _HTTP_409.search(str(e)) or "Conflict" in str(e):
                return self._written_by(rel, token)
            raise
        return ObjectVersion(res.get("e_tag"), res.get("version"))

    def _written_by(self, rel: str, token: str) -> ObjectVersion | None:
        """The version of ``rel`` if its current content was written by the put carrying
        ``token`` (a retried conditional put whose first attempt landed), else None."""
        import obstore

        self.calls.add("read")
        try:
            with self._op("get", rel):
                got = obstore.get(self.store, self._key(rel))
        except FileNotFoundError:
            return None
        if got.attributes.get(_TOKEN) != token:
            return None
        return ObjectVersion(got.meta.get("e_tag"), got.meta.get("version"))

    conditional_update = True

    def rename(self, src: str, dst: str) -> None:
        """Copy ``src`` to ``dst``, then delete ``src`` (an object store has no rename)."""
        import obstore

        with self._op("rename", src):
            obstore.rename(self.store, self._key(src), self._key(dst))

    def delete(self, rel: str) -> bool:
        """Delete an object if present. Returns True if something was deleted."""
        import obstore

        if self._head(rel) is None:
            return False
        with self._op("delete", rel):
            obstore.delete(self.store, self._key(rel))
        return True

    def discard(self, rel: str) -> None:
        """Delete an object if present: one DELETE (S3 answers a missing key's as done; GCS
        and Azure answer 404, taken as done too)."""
        import obstore

        try:
            with self._op("delete", rel):
                obstore.delete(self.store, self._key(rel))
        except FileNotFoundError:
            pass

    def discard_all(self, rels: Sequence[str]) -> None:
        """Delete the objects ``rels`` that are present: one request per 1,000 keys where
        the store deletes in batches (S3 ``DeleteObjects``, which answers a missing key as
        deleted); a store that answers one as missing gets the rest one by one."""
        import obstore

        keys = list(dict.fromkeys(self._key(r) for r in rels))
        for i in range(0, len(keys), 1000):
            chunk = keys[i : i + 1000]
            try:
                with self._op("delete", rels[0]):
                    obstore.delete(self.store, chunk)
            except FileNotFoundError:
                cut = len(self.root) + 1 if self.root else 0
                for k in chunk:
                    self.discard(k[cut:])

    def delete_dir(self, rel: str) -> None:
        """Delete every object below ``rel`` (batched deletes)."""
        import obstore

        key = self._key(rel)
        self.calls.add("list")
        with self._op("delete", rel):
            paths = [m["path"] for c in obstore.list(self.store, key or None) for m in c]
            for i in range(0, len(paths), 1000):
                obstore.delete(self.store, paths[i : i + 1000])


#: user metadata key of a conditional put's token (see :meth:`ObjectStorage.put_if_version`);
#: letters only: Azure takes metadata names that are C# identifiers (no "-")
_TOKEN = "hudidsputtoken"


#: an HTTP 409 in a store error's message (not digits of a port or a size)
_HTTP_409 = re.compile(r"(?<!\d)409(?!\d)")


def _object_sub(base_uri: str, options: dict[str, str], prefix: str) -> Storage:
    return Storage(base_uri, storage_options=options).sub(prefix)


def _meta_mtime_ms(meta: Mapping[str, Any]) -> int:
    lm = meta.get("last_modified")
    return int(lm.timestamp() * 1000) if lm is not None else 0


#: an object store file of at most this size that a caller reads all of (a base file a merge
#: rewrites, a base file a snapshot reads) is fetched by one GET and parsed from memory: a
#: Parquet reader would otherwise make a GET for the footer and one per column chunk, each a
#: round trip of tens of ms; 8 MiB transfer in about two such round trips on a cloud VM's
#: ~1 Gbit/s link, and bound what a read holds in memory per open file
WHOLE_READ_BYTES = 8 << 20


class _ObjectWriter:
    """The stream under :class:`OutputStream` for an object being uploaded."""

    def __init__(self, storage: ObjectStorage, rel: str, writer: Any) -> None:
        self._storage = storage
        self._rel = rel
        self._writer = writer
        self._pos = 0
        self.closed = False

    def write(self, data: bytes | pa.Buffer) -> int:
        view = memoryview(data)
        if view.format != "B" or view.ndim != 1:
            view = view.cast("B")  # pyarrow buffers export signed bytes
        with self._storage._op("put", self._rel):
            self._writer.write(view)
        self._pos += view.nbytes
        return view.nbytes

    def tell(self) -> int:
        return self._pos

    def flush(self) -> None:
        return None

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        with self._storage._op("put", self._rel):
            self._writer.close()
