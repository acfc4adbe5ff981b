"""Timeline Avro files are written as Hudi writes them: every Avro instant file of the v8/v9
fixtures, decoded and encoded again, comes back byte for byte (but the random sync marker)."""

from __future__ import annotations

import io
import json
import zipfile
from collections import Counter

import fastavro

from hudi_ds.timeline.avro_record import java_schema_text, write_avro_record
from hudi_ds.timeline.metadata import CommitMetadata
from hudi_ds.timeline.plans import (
    ActionInstant,
    CleanerPlan,
    CleanFileInfo,
    CompactionPlan,
    RequestedReplaceMetadata,
    RollbackMetadata,
    RollbackPlan,
    SavepointMetadata,
)
from tests.fixtures import FIXTURES_DIR, require_fixtures

# instant file suffix -> content class (completed files: "<T>_<C>.<action>")
KINDS = {
    ".compaction.requested": CompactionPlan,
    ".clustering.requested": RequestedReplaceMetadata,
    ".replacecommit.requested": RequestedReplaceMetadata,
    ".rollback.requested": RollbackPlan,
    ".rollback": RollbackMetadata,
    ".commit": CommitMetadata,
    ".deltacommit": CommitMetadata,
    ".replacecommit": CommitMetadata,
}


def _kind(name: str) -> type | None:
    base = name.rsplit("/", 1)[-1]
    for suffix, cls in KINDS.items():
        if base.endswith(suffix) and ("requested" in suffix or "_" in base.split(".")[0]):
            return cls
    return None


def _without_sync(data: bytes) -> tuple[bytes, bytes]:
    """The file without its two copies of the 16-byte sync marker."""
    sync = data[-16:]
    head = data.index(sync)
    return data[:head] + data[head + 16 : -16], sync


def test_every_fixture_avro_instant_is_re_encoded_byte_for_byte() -> None:
    require_fixtures()
    seen: Counter[str] = Counter()
    for z in sorted(FIXTURES_DIR.glob("*_v[89]_*.zip")):
        with zipfile.ZipFile(z) as zf:
            for name in zf.namelist():
                cls = _kind(name)
                if "__MACOSX" in name or "/timeline/" not in name or cls is None:
                    continue
                data = zf.read(name)
                if not data.startswith(b"Obj\x01"):
                    continue
                obj = cls.from_bytes(data)
                out = obj.to_bytes(2) if cls is CommitMetadata else obj.to_bytes()
                want, _ = _without_sync(data)
                got, _ = _without_sync(out)
                assert got == want, f"{z.name}:{name} re-encodes differently"
                seen[cls.__name__] += 1
    # every kind hudi_ds writes on layout 2 was compared at least once
    assert set(seen) == {c.__name__ for c in KINDS.values()}, seen


def test_header_holds_only_javas_schema_text() -> None:
    data = write_avro_record("HoodieCompactionPlan", CompactionPlan().to_avro())
    reader = fastavro.reader(io.BytesIO(data))
    assert set(reader.metadata) == {"avro.schema"}  # no avro.codec: Java omits it for null
    assert reader.metadata["avro.schema"] == java_schema_text("HoodieCompactionPlan")
    text = java_schema_text("HoodieRollbackPlan")
    # compact, "type" first, namespaces once, Hudi's array defaults kept as properties
    assert text.startswith('{"type":"record","name":"HoodieRollbackPlan",')
    assert text.count('"namespace"') == 1
    assert '"items":{"type":"string","avro.java.string":"String"},"default":[]}' in text


def test_clean_and_savepoint_files_read_back() -> None:
    # no v8/v9 fixture holds a clean or a savepoint: their files must decode to what was
    # written, with the Java schema text parsing to the same schema
    plan = CleanerPlan(
        earliest_instant_to_retain=ActionInstant("20250101000000000", "commit", "COMPLETED"),
        last_completed_commit_timestamp="20250102000000000",
        policy="KEEP_LATEST_COMMITS",
        version=2,
        file_paths_to_be_deleted_per_partition={
            "p": [CleanFileInfo("file:///t/p/f.parquet", False)]
        },
    )
    assert CleanerPlan.from_bytes(plan.to_bytes()) == plan
    sp = SavepointMetadata(savepointed_by="u", savepointed_at=5, comments="c", version=1)
    assert SavepointMetadata.from_bytes(sp.to_bytes()) == sp
    for name in ("HoodieCleanerPlan", "HoodieCleanMetadata", "HoodieSavepointMetadata"):
        parsed = fastavro.parse_schema(json.loads(java_schema_text(name)))
        assert parsed["name"] == f"org.apache.hudi.avro.model.{name}"
