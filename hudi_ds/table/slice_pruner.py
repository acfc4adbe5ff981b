"""Which partitions and file groups a read covers (:class:`SlicePruner`), and whose committed
files it therefore checks (:func:`covered`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pyarrow as pa

from hudi_ds.keygen import KeyGeneratorType
from hudi_ds.layout.naming import bucket_id_of, partition_values_of
from hudi_ds.table.filters import prune_partition
from hudi_ds.table.skipping import DataSkipping
from hudi_ds.table_config import TableConfig


class SlicePruner:
    """Which partitions and file groups a read covers: partitions by the filters on partition
    fields (each partition decided once), file groups by the commits of an incremental query
    and the buckets of a record-key lookup.

    Args:
        touched: the file groups an incremental query's commits wrote (None: every one).
        buckets: the buckets holding the keys looked up (None: every bucket).
    """

    def __init__(
        self,
        config: TableConfig,
        schema: pa.Schema,
        filters: list[tuple[str, str, Any]],
        touched: set[tuple[str, str]] | None,
        buckets: set[int] | None,
    ) -> None:
        self._config = config
        self._fields = config.partition_fields
        self._schema = schema
        self._filters = filters
        self._touched = touched
        self._buckets = buckets
        self._kept: dict[str, bool] = {}
        #: covers every partition and file group (no partition filter, all commits, keys)
        self.keeps_all = (not self._fields or not filters) and touched is None and buckets is None

    def partition(self, p: str) -> bool:
        """Whether the read covers partition ``p``."""
        if p not in self._kept:
            fields = self._fields
            # a CUSTOM key generator's formatted time may span several folders: its fields
            # are told apart only when each took one
            aligned = self._config.key_generator is not KeyGeneratorType.CUSTOM or len(
                p.split("/")
            ) == len(fields)
            self._kept[p] = (
                not fields
                or not aligned
                or prune_partition(
                    partition_values_of(p, fields, self._config.hive_style_partitioning),
                    fields,
                    self._filters,
                    self._schema,
                    self._config.value_partition_fields,
                )
            )
        return self._kept[p]

    def group(self, p: str, fid: str) -> bool:
        """Whether the read covers file group ``fid`` (of a covered partition ``p``)."""
        if self._touched is not None and (p, fid) not in self._touched:
            return False
        return self._buckets is None or bucket_id_of(fid) in self._buckets

    def file_group(self, p: str, fid: str) -> bool:
        """Whether the read covers file group ``fid`` of partition ``p``."""
        return self.partition(p) and self.group(p, fid)


def covered(keep: SlicePruner, skip: DataSkipping | None) -> Callable[[str, str], bool] | None:
    """The file groups whose committed files a read checks: those the pruner keeps, less the
    ones the statistics ruled out (not read); None: every one."""
    group = None if keep.keeps_all else keep.file_group
    if skip is None:
        return group
    ruled_out = skip.ruled_out
    return lambda p, fid: (group is None or group(p, fid)) and not ruled_out(p, fid)
