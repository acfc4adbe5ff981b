"""Pruning file slices with the metadata table's secondary indexes (Java
``SecondaryIndexSupport``, used by ``HoodieFileIndex`` when ``hoodie.enable.data.skipping``).

A filter ``column = value`` or ``column in (values)`` on a column a secondary index covers
(:mod:`hudi_ds.metadata.secondary_index`) is answered by the index: the record keys holding
those values, then where the global record index (``record_index``) places those keys -- the
file groups a matching row lives in. Every other file slice is skipped. The indexes describe the
*latest* merged rows, so this prunes reads of the latest snapshot only (not read-optimized,
incremental or time-travel reads, whose rows may be older versions), and only when the metadata
table is in step with the data timeline. Filters are ANDed, so the slices kept are those every
such filter keeps. A null never equals a value, so ``= null`` keeps nothing through the index
and is left to the row filter instead.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from hudi_ds.errors import CorruptFileError, HudiError
from hudi_ds.index.core import record_index_partitioned
from hudi_ds.metadata.reader import MetadataReader, completed_or_archived, valid_instants
from hudi_ds.metadata.record_index import RECORD_INDEX_PARTITION, read_locations
from hudi_ds.metadata.records import declared_partitions
from hudi_ds.metadata.secondary_index import (
    PARTITION_PREFIX,
    definitions,
    lookup_record_keys,
    secondary_strings,
)
from hudi_ds.storage import Storage
from hudi_ds.table.filters import Filter
from hudi_ds.table_config import TableConfig
from hudi_ds.timeline.timeline import Timeline

__all__ = ["SecondaryIndexSkipping"]

log = logging.getLogger("hudi_ds.read")

# an IN list longer than this is not looked up (each value may read a file group)
_MAX_VALUES = 256


def _rendered(values: list[Any], field: pa.Field) -> list[str] | None:
    try:
        arr = pa.array(values, type=field.type)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError):
        return None
    out = secondary_strings(arr)
    if out is None:
        return None
    return [v for v in out.to_pylist() if v is not None]


class SecondaryIndexSkipping:
    """The file groups a read's ``=`` / ``in`` filters on indexed columns may find rows in.

    Build it with :meth:`plan`; :meth:`keep` answers, :attr:`skipped_slices` counts.
    """

    def __init__(self, groups: set[tuple[str, str]]) -> None:
        self._groups = groups
        self.skipped_slices = 0

    @classmethod
    def plan(
        cls,
        config: TableConfig,
        storage: Storage,
        schema: pa.Schema,
        data_timeline: Timeline,
        reader: MetadataReader | None,
        filters: Sequence[Filter],
    ) -> SecondaryIndexSkipping | None:
        """The pruning of a latest-snapshot read, or None when no filter can use an index.

        Args:
            config: the data table's ``hoodie.properties``.
            storage: the data table's storage.
            schema: the table schema.
            data_timeline: the data timeline the metadata table was checked against.
            reader: the metadata table's reader when it is in step, else None.
            filters: the read's normalized filters.
        """
        if reader is None or not filters:
            return None
        declared = declared_partitions(config)
        if RECORD_INDEX_PARTITION not in declared or not any(
            p.startswith(PARTITION_PREFIX) for p in declared
        ):
            return None
        try:
            if record_index_partitioned(config, storage):
                return None  # keys are unique per partition only: not a key -> file group map
            defs = definitions(config, storage)
            groups = cls._candidates(config, schema, data_timeline, reader, filters, defs)
        except (CorruptFileError, HudiError, OSError) as e:
            # the index only narrows a read: without it every slice is read
            log.warning("secondary index pruning is off for this read: %s", e)
            return None
        return None if groups is None else cls(groups)

    @staticmethod
    def _candidates(
        config: TableConfig,
        schema: pa.Schema,
        data_timeline: Timeline,
        reader: MetadataReader,
        filters: Sequence[Filter],
        defs: dict[str, Any],
    ) -> set[tuple[str, str]] | None:
        declared = set(declared_partitions(config))
        by_column = {
            d.column: d for name, d in defs.items() if name in declared and d.column is not None
        }
        mdt, tl = reader.storage, reader.timeline
        valid = valid_instants(data_timeline, tl, config.table_version)

        def keep(t: str) -> bool:
            return completed_or_archived(tl, t) and t in valid

        out: set[tuple[str, str]] | None = None
        for column, op, value in filters:
            d = by_column.get(column)
            if d is None or op not in ("=", "in"):
                continue
            values = [value] if op == "=" else list(value)
            if len(values) > _MAX_VALUES:
                continue
            rendered = _rendered(values, schema.field(column))
            if rendered is None:
                continue
            keys = lookup_record_keys(mdt, tl, d.name, d.version, rendered, keep)
            found = read_locations(mdt, tl, keep, sorted(keys)) if keys else {}
            groups = {(loc.partition, loc.file_id) for loc in found.values()}
            out = groups if out is None else out & groups
        return out

    def keep(self, partition: str, file_id: str) -> bool:
        """Whether the slice of file group ``file_id`` in ``partition`` may hold rows."""
        if (partition, file_id) in self._groups:
            return True
        self.skipped_slices += 1
        return False
