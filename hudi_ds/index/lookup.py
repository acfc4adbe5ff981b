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
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from hudi_ds.layout.file_group import FileSlice
from hudi_ds.storage import Storage


@dataclass(frozen=True)
class LookupSpec:
    """How an index reads the keys stored in a table's files.

    Attributes:
        record_key_fields, complex_key: the table's key (used when the files carry no
            ``_hoodie_record_key``: tables with ``hoodie.populate.meta.fields=false``).
        meta_fields: the files carry the ``_hoodie_*`` meta columns.
        read_logs: also the keys of log data blocks (MERGE_ON_READ file groups whose keys are
            only in logs are then found).
        prune_by_ranges: BLOOM: skip files whose footer min/max key range excludes the key.
    """

    record_key_fields: tuple[str, ...]
    complex_key: bool
    meta_fields: bool = True
    read_logs: bool = True
    prune_by_ranges: bool = True


@dataclass(frozen=True)
class KeyLocations:
    """Where each looked-up key lives, aligned with the input keys (null: not in the table).

    Attributes:
        file_id: the file group holding the key (string, null where the key is new).
        partition: the partition path of that file group (null where new).
        instant: the base instant time of the file slice holding it (null where new).
        files_read: data files opened for the lookup (base files, log files): each file is
            counted once per lookup, whether only its footer was read (BLOOM) or its keys too.
        keys_read: data files whose record keys were read (a subset of ``files_read``; BLOOM
            reads the keys of a base file only when its footer says a key may be in it).
    """

    file_id: pa.Array
    partition: pa.Array
    instant: pa.Array
    files_read: int = 0
    keys_read: int = 0

    @property
    def found(self) -> pa.Array:
        """Boolean mask: the key is in the table."""
        return pc.is_valid(self.file_id)


#: An index lookup: ``lookup(storage, slices, keys, partitions, spec) -> KeyLocations`` (see the
#: module docstring); :func:`hudi_ds.index.simple.simple_lookup` and
#: :func:`hudi_ds.index.bloom.bloom_lookup` are ones.
Lookup = Callable[
    [Storage, Sequence[FileSlice], pa.Array, "pa.Array | None", LookupSpec], KeyLocations
]
