"""A table's read as a ``pyarrow.dataset.Dataset``: one lazy fragment per file slice.

Engines that plan their own scans (DuckDB, polars' ``scan_pyarrow_dataset``, Arrow's own
scanner) take a ``pyarrow.dataset.Dataset`` and push their projection and filter into its
``scanner(columns=, filter=)``. pyarrow's ``Dataset`` is a Cython class that cannot be
subclassed in Python, and its in-memory forms (``InMemoryDataset``, a dataset over a
``RecordBatchReader``, ``Scanner.from_batches``) are either materialised up front or
one-shot streams that cannot prune anything. So the adapter gives the engine what it does
know how to prune: file system datasets over a read-only file system (:class:`SliceFiles`,
a ``pyarrow.fs.PyFileSystem``) with one fragment per file slice of the read's plan:

* a slice with log files is an Arrow IPC file that does not exist until it is opened:
  opening it reads and merges the slice (base file + log blocks, through
  :meth:`ReadableTable.read_plan_slices`, the same code as ``hudi_ds.read``) and hands the
  engine the merged rows as an in-memory IPC file;
* a slice without log files is its Parquet base file, opened in the table's storage and read
  by the engine itself, with its own projection and row-group statistics pruning
  (:func:`reads_directly` says when the reader must see the rows instead).

With both kinds the dataset is a ``UnionDataset`` of the two.

* Laziness: building the dataset plans the read (timeline, listing) and reads no data file.
* Pruning: each fragment carries its partition as a guarantee (``partition_expression``:
  ``part == 'a'`` for the SIMPLE and COMPLEX key generators, whose partition paths hold the
  column values), so an engine's filter on a partition column skips whole slices unopened;
  with data skipping on, the guarantee also bounds each column by the slice's files' column
  statistics (``v >= 3 and v <= 9``), so a filter on any indexed column skips slices too;
  Arrow's scanner then filters the rows it reads. Filters given to
  :func:`slice_dataset` itself also prune by bucket (record-key lookups on BUCKET tables) and
  are applied inside the slice reads.
* Projection: the engine's projection selects columns of the merged rows; to keep the merge
  itself to fewer columns, name them in ``columns`` when building the dataset.
* Memory: a slice is merged when the scanner opens it, its IPC bytes are kept until the
  scanner has opened it for both its schema and its rows (or a few slices later), so a scan
  holds about as many merged slices as the scanner reads ahead (4 fragments by default).
* Counting: :class:`ScanStats` counts the slices planned and the slices actually read (a
  merged slice at every merge, a Parquet base file at its first opening).
* Errors: a slice that cannot be read (a file removed since the plan, a damaged block) is
  logged with its cause (logger ``hudi_ds.read``), kept in :attr:`ScanStats.errors`, and
  fails the engine's scan as Arrow's "Could not open IPC input source '<partition>/<file
  id>.arrow'" (or a Parquet error naming the base file). It is not raised through Arrow as
  a Python exception: pyarrow's ``Scanner.to_reader()`` (what DuckDB calls) holds the GIL
  while it starts the scan, and Arrow's abort path formats a Python error's traceback under
  the GIL on its own thread, so a slice failing while a scan starts would deadlock the two
  (seen with pyarrow 26 and DuckDB 2). :meth:`hudi_ds.HudiTable.scan` raises the logged
  error itself.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.fs as pafs

from hudi_ds.layout.file_group import FileSlice
from hudi_ds.layout.naming import partition_values_of
from hudi_ds.schema.meta import IS_DELETED_FIELD
from hudi_ds.table.filters import filter_expression
from hudi_ds.table.reader import ReadStats

if TYPE_CHECKING:
    from hudi_ds.table.table import ReadableTable, ReadPlan

log = logging.getLogger("hudi_ds.read")

#: the partition value Hudi writes for a null or empty partition column
DEFAULT_PARTITION = "__HIVE_DEFAULT_PARTITION__"


@dataclass
class ScanStats:
    """What a dataset scan did: slices in the plan, slices read (merged), and the reads' stats.

    ``slices_read`` grows as engines open fragments: a filter that prunes partitions leaves
    it below ``slices_planned``.
    """

    slices_planned: int = 0
    slices_read: int = 0
    read: ReadStats = field(default_factory=ReadStats)
    #: the errors of slices that could not be read (each also logged)
    errors: list[Exception] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def failed(self, error: Exception) -> None:
        """Record the error of a slice that could not be read."""
        with self._lock:
            self.errors.append(error)

    def add(self, stats: ReadStats) -> None:
        """Count one slice read, with its read stats."""
        with self._lock:
            self.slices_read += 1
            self.read.add(stats)


class SliceFiles(pafs.FileSystemHandler):
    """A read-only ``pyarrow.fs`` handler whose files are a plan's file slices as IPC files.

    ``<partition>/<file id>.arrow`` is that file group's slice in the plan (:meth:`path_of`).
    Opening it reads and merges the slice;
    the bytes are cached until the file has been opened twice (Arrow opens an IPC fragment
    once for its schema and once for its batches) or ``cache_slots`` newer slices were made.
    """

    def __init__(
        self,
        table: ReadableTable,
        plan: ReadPlan,
        stats: ScanStats,
        cache_slots: int = 8,
    ) -> None:
        self.table = table
        self.plan = plan
        self.stats = stats
        self.cache_slots = cache_slots
        self._lock = threading.Lock()
        self._cache: OrderedDict[str, tuple[Future[pa.Buffer], int]] = OrderedDict()
        self._slices = {self.path_of(s): s for s in plan.slices}
        #: base files read as they are (slices without log files, :func:`reads_directly`)
        self._bases = {
            s.base_file.path: s
            for s in plan.slices
            if s.base_file is not None and reads_directly(plan, s)
        }
        self._opened: set[str] = set()

    @staticmethod
    def path_of(s: FileSlice) -> str:
        """The file name of slice ``s``: its partition path and file id."""
        return f"{s.partition_path}/{s.file_id}.arrow" if s.partition_path else f"{s.file_id}.arrow"

    def _slice(self, path: str) -> FileSlice:
        s = self._slices.get(path)
        if s is None:
            raise FileNotFoundError(f"{path}: not a file slice of this dataset")
        return s

    def _merged(self, s: FileSlice) -> pa.Buffer:
        try:
            return self._read(s)
        except Exception as e:  # see the module docstring: never raised through Arrow
            log.error("reading file slice %s of %s failed: %s", self.path_of(s), self.table.path, e)
            self.stats.failed(e)
            return pa.py_buffer(b"")

    def _read(self, s: FileSlice) -> pa.Buffer:
        st = ReadStats()
        batches = list(self.table.read_plan_slices(self.plan, [s], st))
        self.stats.add(st)
        sink = pa.BufferOutputStream()
        with pa.ipc.new_file(sink, self.plan.output_schema) as w:
            for b in batches:
                w.write_batch(b)
        return sink.getvalue()

    def _open_base(self, path: str) -> pa.NativeFile:
        """A base file of a slice without log files, opened in the table's storage."""
        try:
            f = self.table.storage.open_input_file(path)
        except Exception as e:  # see the module docstring: never raised through Arrow
            log.error("opening base file %s of %s failed: %s", path, self.table.path, e)
            self.stats.failed(e)
            return pa.BufferReader(pa.py_buffer(b""))
        with self._lock:
            first = path not in self._opened
            self._opened.add(path)
        if first:
            self.stats.add(ReadStats(base_files=1))
        return f

    def open_input_file(self, path: str) -> pa.NativeFile:
        if path in self._bases:
            return self._open_base(path)
        s = self._slice(path)
        with self._lock:
            hit = self._cache.get(path)
            if hit is not None:
                fut, opens = hit
                if opens >= 1:  # the second open: hand over, forget
                    del self._cache[path]
                else:
                    self._cache[path] = (fut, opens + 1)
                mine = False
            else:
                fut = Future()
                self._cache[path] = (fut, 0)
                while len(self._cache) > self.cache_slots:
                    self._cache.popitem(last=False)
                mine = True
        if mine:
            buf = self._merged(s)
            if not buf.size:  # failed: the next open tries again
                with self._lock:
                    self._cache.pop(path, None)
            fut.set_result(buf)
        return pa.BufferReader(fut.result())

    def open_input_stream(self, path: str) -> pa.NativeFile:
        return self.open_input_file(path)

    def get_type_name(self) -> str:
        return "hudi-file-slices"

    def normalize_path(self, path: str) -> str:
        return path

    def get_file_info(self, paths: Sequence[str]) -> list[pafs.FileInfo]:
        return [
            pafs.FileInfo(
                p,
                pafs.FileType.File
                if p in self._slices or p in self._bases
                else pafs.FileType.NotFound,
            )
            for p in paths
        ]

    def get_file_info_selector(self, selector: pafs.FileSelector) -> list[pafs.FileInfo]:
        return [pafs.FileInfo(p, pafs.FileType.File) for p in [*self._slices, *self._bases]]

    def _read_only(self, *args: Any, **kwargs: Any) -> Any:
        raise OSError("the file slices of a Hudi table dataset are read-only")

    create_dir = delete_dir = delete_dir_contents = delete_root_dir_contents = _read_only
    delete_file = move = copy_file = open_output_stream = open_append_stream = _read_only


def partition_guarantee(
    table: ReadableTable, partition_path: str, schema: pa.Schema
) -> pc.Expression | None:
    """What every row of ``partition_path`` satisfies, as an Arrow expression on the columns
    of ``schema`` (a read's output schema), or None.

    Only for the fields whose partition values are the columns' values as written
    (``TableConfig.value_partition_fields``: SIMPLE and COMPLEX key generators, the CUSTOM
    one's ``:SIMPLE`` fields; others derive them), only for columns of string, integer, boolean and
    date types whose value reads back unambiguously (one path segment per field, no
    default partition, no URL-encoding); a column it cannot vouch for gets no condition.
    This is the rule of :func:`hudi_ds.table.filters.prune_partition`, which prunes
    ``hudi_ds.read``'s partitions.
    """
    cfg = table.config
    fields = list(cfg.partition_fields)
    prunable = cfg.value_partition_fields
    if not fields or not prunable:
        return None
    segments = partition_path.split("/") if partition_path else []
    if len(segments) != len(fields):
        return None
    values = partition_values_of(partition_path, fields, cfg.hive_style_partitioning)
    expr: pc.Expression | None = None
    for name, raw in zip(fields, values, strict=True):
        idx = schema.get_field_index(name)
        if name not in prunable or idx < 0 or raw == DEFAULT_PARTITION or "%" in raw:
            continue
        t = schema.field(idx).type
        if not (
            pa.types.is_string(t)
            or pa.types.is_integer(t)
            or pa.types.is_boolean(t)
            or pa.types.is_date(t)
        ):
            continue
        if not pa.types.is_string(t) and raw == "":
            continue
        try:
            value = pa.array([raw]).cast(t)[0]
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
            continue
        if pa.types.is_integer(t) and str(value.as_py()) != raw:
            continue  # "007" is not how 7 is written
        e = pc.field(name) == value
        expr = e if expr is None else expr & e
    return expr


def reads_directly(plan: ReadPlan, s: FileSlice) -> bool:
    """Whether slice ``s`` is read as its Parquet base file, as it is, by the engine.

    A slice without log files needs no merge: its rows are its base file's, minus delete
    rows, brought to the table schema. The engine reads such a base file itself (its own
    projection, its row-group statistics pruning) unless something else must happen to
    the rows: the table has a delete column (``_hoodie_is_deleted`` or the merge mode's
    delete marker), the read is incremental (rows chosen by commit time), or the read skips
    damaged or missing files on request. Those slices go through the reader.
    """
    ctx = plan.context
    if s.log_files or s.base_file is None or s.base_file.name.extension != ".parquet":
        return False
    if plan.commit_times is not None or ctx.ignore_missing_files or ctx.ignore_corrupt_files:
        return False
    schema = ctx.schema
    builtin = ctx.merge_spec.builtin
    delete_field = builtin.delete_field if builtin is not None else None
    return schema.get_field_index(IS_DELETED_FIELD) < 0 and (
        not delete_field or schema.get_field_index(delete_field) < 0
    )


def slice_dataset(
    table: ReadableTable,
    plan: ReadPlan,
    stats: ScanStats | None = None,
    bounds: Mapping[tuple[str, str], pc.Expression] | None = None,
) -> ds.Dataset:
    """The rows of ``plan`` as a lazy dataset with one fragment per file slice (see the
    module docstring); ``stats`` counts the slices it reads; ``bounds`` are the slices'
    column-statistics guarantees (:meth:`ReadableTable.slice_bounds`), added to their
    partitions'.

    Slices with log files are IPC fragments merged when opened; slices without are their
    Parquet base files (:func:`reads_directly`), with the read's filters applied by Arrow
    (``Dataset.filter``, which engines' scanners combine with their own).
    With both kinds the result is a ``UnionDataset`` of the two.
    """
    stats = stats if stats is not None else ScanStats()
    stats.slices_planned = len(plan.slices)
    handler = SliceFiles(table, plan, stats, cache_slots=max(8, 2 * table.read_threads))
    fs = pafs.PyFileSystem(handler)
    always = pc.scalar(True)
    guarantees: dict[str, pc.Expression] = {}

    def partition(p: str) -> pc.Expression:
        if p not in guarantees:
            g = partition_guarantee(table, p, plan.output_schema)
            guarantees[p] = always if g is None else g
        return guarantees[p]

    def guarantee(s: FileSlice) -> pc.Expression:
        b = bounds.get((s.partition_path, s.file_id)) if bounds else None
        return partition(s.partition_path) if b is None else partition(s.partition_path) & b

    merged = [s for s in plan.slices if not reads_directly(plan, s)]
    direct = [s for s in plan.slices if reads_directly(plan, s)]
    parts: list[ds.Dataset] = []
    if merged or not direct:
        parts.append(
            ds.FileSystemDataset.from_paths(
                [SliceFiles.path_of(s) for s in merged],
                schema=plan.output_schema,
                format=ds.IpcFileFormat(),
                filesystem=fs,
                partitions=[guarantee(s) for s in merged],
            )
        )
    if direct:
        bases = ds.FileSystemDataset.from_paths(
            [s.base_file.path for s in direct if s.base_file is not None],
            schema=plan.output_schema,
            format=ds.ParquetFileFormat(),
            filesystem=fs,
            partitions=[guarantee(s) for s in direct],
        )
        parts.append(bases)
    out = parts[0] if len(parts) == 1 else ds.dataset(parts)
    # the read's filters: applied in the merge to merged slices (again here: harmless),
    # by Arrow to the Parquet ones (a union takes filters on the whole only)
    expr = filter_expression(plan.filters) if direct else None
    return out if expr is None else out.filter(expr)
