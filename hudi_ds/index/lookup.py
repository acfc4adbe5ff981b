"""What an index lookup answers: where each incoming record key lives in the table.

Java tags each incoming ``HoodieRecord`` with a ``HoodieRecordLocation(instantTime, fileId)``
(``HoodieIndex.tagLocation``); an untagged record is an insert. Here a lookup answers for a
whole Arrow array of keys at once with a :class:`KeyLocations`, aligned with the input.

The lookups (``index.simple``, ``index.bloom``, ``index.state``) share one shape::

    lookup(storage, slices, keys, partitions, spec) -> KeyLocations

* ``slices``: the candidate file slices -- the latest slice of every file group of the
  touched partitions (every partition for a global index), as the write's visibility sees them.
* ``keys``: the incoming record keys (string array).
* ``partitions``: the incoming records' partition paths (a non-global index matches
  ``(key, partition)``), or None for a global index (matches on the key alone).
* ``spec``: :class:`LookupSpec`, how keys are read from the files.

A key held by several file groups (``insert`` / ``bulk_insert`` write every record as new, so
a key written twice may live in two file groups of a partition; a global index's key may live
in several partitions) is answered with every location: the primary one in ``group`` and the
others in ``more_rows`` / ``more_groups``. Java's SIMPLE and BLOOM indexes tag an incoming record
once per location holding its key (``HoodieSimpleIndex.tagLocationInternal`` and
``HoodieBloomIndex.tagLocationBacktoRecords`` left-outer-join the incoming records with the
``(key, location)`` pairs of the files; the global variants do the same through
``HoodieIndexUtils.tagGlobalLocationBackToRecords``), so an update or a delete reaches every
copy.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import pyarrow as pa

from hudi_ds.layout.file_group import FileSlice
from hudi_ds.storage import Storage


@dataclass(frozen=True)
class LookupSpec:
    """How an index reads the keys stored in a table's files.

    Attributes:
        record_key_fields, complex_key: the table's key (used when the files carry no
            ``_hoodie_record_key``: tables with ``hoodie.populate.meta.fields=false``).
        meta_fields: the files carry the ``_hoodie_*`` meta columns.
        read_logs: also the keys of log data blocks of slices that have a base file
            (MERGE_ON_READ file groups whose keys an index that indexes logs put only in logs
            are then found). The logs of a slice without a base file are always read
            (:func:`reads_logs`).
        prune_by_ranges: BLOOM: skip files whose footer min/max key range excludes the key.
        use_metadata: BLOOM: take bloom filters and key ranges from the metadata table
            (``hoodie.bloom.index.use.metadata``) instead of the files' footers.
        logged_inserts: names of log files that took inserts (their commits' write stats say
            so): the logs of a slice holding one are read (:func:`reads_logs`).
    """

    record_key_fields: tuple[str, ...]
    complex_key: bool
    meta_fields: bool = True
    read_logs: bool = True
    prune_by_ranges: bool = True
    use_metadata: bool = False
    # not compared: a state index keeps its keys when the set grows (the groups whose files
    # it changes are read again, their files differ)
    logged_inserts: frozenset[str] = field(default=frozenset(), compare=False)


@dataclass(frozen=True)
class KeyLocations:
    """Where each looked-up key lives, aligned with the input keys (null: not in the table).

    Held as one integer per key -- the number of the file group holding it (-1: new) -- and
    the file id, partition and base instant of each numbered group, so that a writer tags its
    rows with integer work; the per-key string columns are built on first use.

    Attributes:
        group: per key, the number of the file group holding it (int64, -1 where new).
        group_file_ids, group_partitions, group_instants: by group number, the file id, the
            partition path and the base instant time of the file slice (string arrays; a
            number no key refers to may hold nulls).
        files_read: data files opened for the lookup (base files, log files): each file is
            counted once per lookup, whether only its footer was read (BLOOM) or its keys too.
        keys_read: data files whose record keys were read (a subset of ``files_read``; BLOOM
            reads the keys of a base file only when its footer says a key may be in it).
        more_rows, more_groups: the other locations of keys held by several file groups
            (aligned int64 arrays): the incoming position of a key and one more group holding
            it besides ``group``, once per (position, group); empty when no key is held twice.
    """

    group: np.ndarray
    group_file_ids: pa.Array
    group_partitions: pa.Array
    group_instants: pa.Array
    files_read: int = 0
    keys_read: int = 0
    more_rows: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))
    more_groups: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))

    @cached_property
    def _take(self) -> pa.Array:
        g = np.asarray(self.group, dtype=np.int64)
        return pa.array(np.maximum(g, 0), mask=g < 0)

    @cached_property
    def file_id(self) -> pa.Array:
        """The file group holding each key (string, null where the key is new)."""
        return self.group_file_ids.take(self._take)

    @cached_property
    def partition(self) -> pa.Array:
        """The partition path of that file group (null where new)."""
        return self.group_partitions.take(self._take)

    @cached_property
    def instant(self) -> pa.Array:
        """The base instant time of the file slice holding each key (null where new)."""
        return self.group_instants.take(self._take)

    @property
    def found(self) -> pa.Array:
        """Boolean mask: the key is in the table."""
        return pa.array(np.asarray(self.group) >= 0, pa.bool_())


def reads_logs(spec: LookupSpec, fslice: FileSlice) -> bool:
    """Whether a lookup reads the keys of ``fslice``'s log files.

    With ``spec.read_logs``, always. Otherwise when the slice has no base file, or one of its
    log files took inserts (``spec.logged_inserts``): such a file group was written by an index
    that indexes log files (Flink's state index, the bucket index, the record-level index put
    inserts in logs), and those keys live nowhere else. Java's SIMPLE and BLOOM indexes read
    base files only (``canIndexLogFiles()`` is false;
    ``HoodieIndexUtils.getLatestBaseFilesForPartition`` lists base files), so an upsert of such
    a key with them inserts it a second time; reading these logs finds it where it lives
    instead. The other slices are not read for logs: under SIMPLE and BLOOM a MOR insert goes
    to a base file (Java's ``SparkUpsertDeltaCommitPartitioner`` and hudi_ds' assigner), so
    their logs hold updates of keys their base file holds.
    """
    if not fslice.log_files:
        return False
    if spec.read_logs or fslice.base_file is None:
        return True
    logged = spec.logged_inserts
    return bool(logged) and any(lf.path.rsplit("/", 1)[-1] in logged for lf in fslice.log_files)


#: An index lookup: ``lookup(storage, slices, keys, partitions, spec) -> KeyLocations`` (see the
#: module docstring); :func:`hudi_ds.index.simple.simple_lookup` and
#: :func:`hudi_ds.index.bloom.bloom_lookup` are ones.
Lookup = Callable[
    [Storage, Sequence[FileSlice], pa.Array, "pa.Array | None", LookupSpec], KeyLocations
]
