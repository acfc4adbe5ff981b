"""The metadata table's own layout, as Java writes it for each table version: its
``hoodie.properties`` (:func:`metadata_table_properties`), the one file group of the ``files``
partition (:data:`FILES_FILE_ID`), the bootstrap instant (:func:`bootstrap_instant`) and the
latest file slice (:class:`MetadataSlice`)."""

from __future__ import annotations

from dataclasses import dataclass, field

from hudi_ds.table_config import TableConfig

FILES_FILE_ID = "files-0000-0"
#: the write token in the names of the files the metadata table's writers write (Java's MDT
#: writer names them with task 0, stage 0, attempt 0)
MDT_WRITE_TOKEN = "0-0-0"


def bootstrap_instant(table_version: int) -> str:
    """The instant of the deltacommit that creates the MDT (Java ``SOLO_COMMIT_TIMESTAMP``
    ``00000000000000`` + ``010`` in 0.x, ``000`` in 1.x)."""
    return "00000000000000010" if table_version < 8 else "00000000000000000"


def metadata_table_properties(data: TableConfig) -> dict[str, str]:
    """The MDT's ``hoodie.properties`` entries for data table ``data`` (without the checksum,
    which :meth:`TableConfig.save` adds), as Java writes them for its table version."""
    version = data.table_version
    props = {
        "hoodie.table.name": f"{data.table_name}_metadata",
        "hoodie.table.type": "MERGE_ON_READ",
        "hoodie.table.version": str(version),
        "hoodie.table.base.file.format": "HFILE",
        "hoodie.table.recordkey.fields": "key",
        "hoodie.populate.meta.fields": "false",
        "hoodie.compaction.payload.class": "org.apache.hudi.metadata.HoodieMetadataPayload",
        "hoodie.datasource.write.drop.partition.columns": "false",
    }
    if version < 8:
        props.update(
            {
                "hoodie.table.keygenerator.class": (
                    "org.apache.hudi.metadata.HoodieTableMetadataKeyGenerator"
                ),
                "hoodie.compaction.record.merger.strategy": "eeb8d96f-b1e4-49fd-bbf8-28ac514178e5",
                "hoodie.archivelog.folder": "archived",
                "hoodie.timeline.layout.version": "1",
            }
        )
    else:
        props.update(
            {
                "hoodie.table.initial.version": str(version),
                "hoodie.table.keygenerator.type": "HOODIE_TABLE_METADATA",
                "hoodie.record.merge.strategy.id": "00000000-0000-0000-0000-000000000000",
                "hoodie.record.merge.mode": "CUSTOM",
                "hoodie.archivelog.folder": "history",
                "hoodie.timeline.layout.version": "2",
                "hoodie.timeline.path": "timeline",
                "hoodie.timeline.history.path": "history",
            }
        )
    return props


@dataclass
class MetadataSlice:
    """The latest file slice of ``files-0000-0``.

    Attributes:
        base_instant: instant of the base file (bootstrap or latest MDT compaction).
        base_file: its name (None if missing).
        log_files: log file names of the slice, in merge order.
        delta_commits: deltacommits in the slice (the bootstrap's log not counted).
    """

    base_instant: str
    base_file: str | None
    log_files: list[str] = field(default_factory=list)
    delta_commits: int = 0
