"""Helpers of the record-index tests: the record index a table's metadata table holds, and the
one recomputed from the table's data files."""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pyarrow as pa

from hudi_ds.metadata.reader import completed_or_archived, valid_instants
from hudi_ds.metadata.record_index import RecordLocation, bootstrap_locations, read_locations
from hudi_ds.metadata.records import METADATA_PATH
from hudi_ds.storage import Storage
from hudi_ds.table.table import ReadableTable
from hudi_ds.table_config import TableConfig
from hudi_ds.timeline.timeline import Timeline


def writer_timezone(root: Path) -> timezone:
    """The zone of the JVM that wrote the fixture: ``hoodie.properties`` carries the same save
    time twice, as UTC (``#Updated at ...Z``) and in the JVM's zone (``java.util.Properties``
    header)."""
    text = (root / ".hoodie" / "hoodie.properties").read_text()
    utc = re.search(r"#Updated at (\S+)Z", text)
    local = re.search(r"#\w{3} (\w{3} \d{2} \d{2}:\d{2}:\d{2}) \w+ (\d{4})", text)
    if utc is None or local is None:
        return timezone.utc
    u = datetime.fromisoformat(utc.group(1)).replace(microsecond=0)
    lt = datetime.strptime(f"{local.group(2)} {local.group(1)}", "%Y %b %d %H:%M:%S")
    minutes = round((lt - u).total_seconds() / 900) * 15
    return timezone(timedelta(minutes=minutes))


def stored_record_index(root: Path) -> dict[str, RecordLocation]:
    """The ``record_index`` of the table at ``root`` as its metadata table holds it."""
    storage = Storage(str(root))
    cfg = TableConfig.load(storage)
    data_tl = Timeline.load(storage, cfg.timeline_layout_version, cfg.timeline_path)
    mdt = storage.sub(METADATA_PATH)
    mcfg = TableConfig.load(mdt)
    tl = Timeline.load(mdt, mcfg.timeline_layout_version, mcfg.timeline_path)
    valid = valid_instants(data_tl, tl, cfg.table_version)
    return read_locations(mdt, tl, lambda t: completed_or_archived(tl, t) and t in valid)


def recomputed_record_index(root: Path, tz: timezone) -> dict[str, RecordLocation]:
    """The record index recomputed from the table's latest file slices."""
    table = ReadableTable(str(root))
    plan = table.plan_read(columns=["_hoodie_record_key"])
    slices = []
    for s in plan.slices:
        batches = list(table.read_plan_slices(plan, [s]))
        keys = (
            pa.concat_arrays([b.column("_hoodie_record_key") for b in batches])
            if batches
            else pa.array([], pa.string())
        )
        slices.append((s.partition_path, s.file_id, s.base_instant_time, keys))
    return bootstrap_locations(slices, tz)
