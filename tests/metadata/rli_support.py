"""Helpers of the record-index tests (and of the other index partitions' tests, which share
their set-up): the metadata table opened as its readers see it, the record index it holds,
the one recomputed from the table's data files, and Java's ``String.hashCode`` file group."""

from __future__ import annotations

import re
import zipfile
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pyarrow as pa

from hudi_ds.log.block import LogBlock
from hudi_ds.log.reader import decode_delete_block, scan_log_bytes
from hudi_ds.log.writer import encode_delete_block
from hudi_ds.metadata.reader import completed_or_archived, valid_instants
from hudi_ds.metadata.record_index import (
    RecordLocation,
    SliceKeys,
    bootstrap_locations,
    read_locations,
)
from hudi_ds.metadata.records import METADATA_PATH
from hudi_ds.storage import Storage
from hudi_ds.table.table import ReadableTable
from hudi_ds.table_config import TableConfig
from hudi_ds.timeline.timeline import Timeline
from tests.fixtures import FIXTURES_DIR, fixture_names


def fixtures_with(folder: str) -> list[str]:
    """The fixtures whose metadata table has a path starting with ``folder`` (a partition
    name and ``/``, or a name prefix such as ``secondary_index_``)."""
    out = []
    for name in fixture_names():
        with zipfile.ZipFile(FIXTURES_DIR / f"{name}.zip") as zf:
            if any(f"/.hoodie/metadata/{folder}" in n for n in zf.namelist()):
                out.append(name)
    return out


def key_rows(ids: list[int], parts: list[str], ts: int) -> pa.Table:
    """Rows of keys ``k<i>`` in partitions ``parts`` at ordering value ``ts``, ``v = i * ts``
    (an update changes it)."""
    return pa.table(
        {
            "id": [f"k{i}" for i in ids],
            "ts": pa.array([ts] * len(ids), pa.int64()),
            "p": parts,
            "v": [float(i * ts) for i in ids],
        }
    )


def assert_delete_block_reencodes(block: LogBlock, partition: str) -> None:
    """A DELETE block of MDT partition ``partition`` is, header and content, the one hudi_ds
    writes for its keys."""
    keys = decode_delete_block(block).column("_hoodie_record_key")
    parts = pa.array([partition] * len(keys))
    assert block.schema is not None
    mine = encode_delete_block(keys, parts, None, block.instant_time or "", block.schema)
    (again,) = scan_log_bytes(mine, "mine").blocks
    assert bytes(again.content) == bytes(block.content) and again.header == block.header


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


def java_hash_index(key: str, n: int) -> int:
    """The file group of ``key`` among ``n`` as Java picks it: ``String.hashCode`` (UTF-16
    code units) mod ``n``, ``Math.abs`` twice (``Integer.MIN_VALUE`` stays negative once)."""
    h = 0
    units = key.encode("utf-16-be")
    for i in range(0, len(units), 2):
        h = (31 * h + (units[i] << 8 | units[i + 1])) & 0xFFFFFFFF
    if h >= 1 << 31:
        h -= 1 << 32
    return abs(abs(h) % n)


def open_timelines(root: Path) -> tuple[TableConfig, Timeline, Storage, Timeline]:
    """The table at ``root``: its config, its timeline, its metadata table's storage and
    timeline."""
    storage = Storage(str(root))
    cfg = TableConfig.load(storage)
    data_tl = Timeline.load(storage, cfg.timeline_layout_version, cfg.timeline_path)
    mdt = storage.sub(METADATA_PATH)
    mcfg = TableConfig.load(mdt)
    return cfg, data_tl, mdt, Timeline.load(mdt, mcfg.timeline_layout_version, mcfg.timeline_path)


def open_mdt(root: Path) -> tuple[Storage, Timeline, Callable[[str], bool]]:
    """The metadata table of the table at ``root``: its storage, its timeline, and which of
    its instants count for readers (completed or archived, and valid against the data
    timeline)."""
    cfg, data_tl, mdt, tl = open_timelines(root)
    valid = valid_instants(data_tl, tl, cfg.table_version)
    return mdt, tl, lambda t: completed_or_archived(tl, t) and t in valid


def stored_record_index(root: Path) -> dict[str, RecordLocation]:
    """The ``record_index`` of the table at ``root`` as its metadata table holds it."""
    return read_locations(*open_mdt(root))


def latest_slice_keys(root: Path) -> list[SliceKeys]:
    """``(partition, file id, base instant, record keys)`` of every latest file slice of the
    table at ``root``, read as a snapshot merges it."""
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
    return slices


def recomputed_record_index(root: Path, tz: timezone) -> dict[str, RecordLocation]:
    """The record index recomputed from the table's latest file slices."""
    return bootstrap_locations(latest_slice_keys(root), tz)
