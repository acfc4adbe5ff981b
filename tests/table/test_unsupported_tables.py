"""Tables that use a feature hudi_ds does not implement: refused, untouched.

Each table is built as Apache Hudi leaves it, on top of a small COPY_ON_WRITE table hudi_ds
writes (``trips`` keyed by ``id``, partitioned by ``city``; two commits: 4 inserts, then 2
updates):

* CDC: ``hoodie.table.cdc.enabled=true`` (``HoodieTableConfig.CDC_ENABLED``) and the second
  commit's ``.cdc`` log file named in its write stat's ``cdcStats`` (``HoodieCDCLogger``,
  ``HoodieMergeHandleWithChangeLog``). Reads are served; writes and services refused.
* Bootstrap: ``hoodie.bootstrap.base.path`` (``HoodieTableConfig.BOOTSTRAP_BASE_PATH``), the
  metadata-only bootstrap instant ``00000000000001`` whose skeleton file holds the meta columns
  alone, and the bootstrap index files (``HFileBootstrapIndex``: ``.hoodie/.aux/.bootstrap/
  .partitions`` and ``.fileids``, ``<BOOTSTRAP_INDEX_FILE_ID>_1-0-1_00000000000001.hfile``).
  Reads, writes and services refused. With the property alone (a FULL_RECORD bootstrap, whose
  files are ordinary) the table reads and writes.
* Schema on read: a third commit as Spark SQL's ``ALTER TABLE ... RENAME COLUMN`` leaves it
  with ``hoodie.schema.on.read.enable`` (an ``alter_schema`` commit whose extra metadata holds
  the Avro ``schema`` and the internal schema ``latest_schema``, ``SerDeHelper``), and the
  history in ``.hoodie/.schema/<instant>.schemacommit``
  (``FileBasedInternalSchemaStorageManager.persistHistorySchemaStr``). A rename or a drop
  refuses reads; any internal schema refuses writes; an empty ``.schema`` folder is ordinary.

A refused table stays byte-for-byte unchanged (``tree_hashes``).
"""

from __future__ import annotations

import io
import json
import re
import time
import uuid
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import hudi_ds
from hudi_ds.api import HudiTable
from hudi_ds.cli import main
from hudi_ds.errors import UnsupportedError
from hudi_ds.services import clean, compaction
from hudi_ds.services.base import ServiceContext
from hudi_ds.storage import Storage
from hudi_ds.table_config import update_table_config
from hudi_ds.timeline.instant import new_instant_time
from tests import builders
from tests.conftest import table_options
from tests.write.fixture_model import tree_hashes

OPTS = {
    **table_options("trips", partition="city", table_type="COPY_ON_WRITE", buckets=None),
    "hoodie.index.type": "SIMPLE",
}
COLS = ["id", "ts", "city", "fare"]


def _rows(t: pa.Table, cols: list[str] = COLS) -> list[tuple]:
    return sorted(zip(*(t.column(c).to_pylist() for c in cols), strict=True))


def _table(tmp_path: Path) -> Path:
    """The base table: 4 trips, then t0 and t1 updated (fare of ts 2)."""
    root = tmp_path / "t"
    hudi_ds.write(str(root), builders.trips(range(4)), OPTS)
    hudi_ds.write(str(root), builders.trips(range(2), ts=2), OPTS)
    return root


def _commits(root: Path) -> list[Path]:
    return sorted(p for p in (root / ".hoodie").iterdir() if p.name.endswith(".commit"))


def _assert_writes_refused(root: Path, match: str) -> None:
    """Every way of writing is refused before anything is written: the embedded writes (the
    write client the Spark data source uses too), the table services, the CLI."""
    before = tree_hashes(root)
    path = str(root)
    with pytest.raises(UnsupportedError, match=match):
        hudi_ds.write(path, builders.trips([1, 7], ts=5), OPTS)
    delete = {**OPTS, "hoodie.datasource.write.operation": "delete"}
    with pytest.raises(UnsupportedError, match=match):
        hudi_ds.write(path, builders.trips([0], ts=5), delete)
    with pytest.raises(UnsupportedError):  # the writable table: refused to read or to write
        HudiTable(path).upsert(builders.trips([1], ts=5), OPTS)
    with pytest.raises(UnsupportedError, match=match):
        clean.clean(ServiceContext.open(path))
    with pytest.raises(UnsupportedError, match=match):
        compaction.schedule_compaction(ServiceContext.open(path))
    out, err = io.StringIO(), io.StringIO()
    assert main(["clean", str(root)], out, err) == 5, out.getvalue()  # refused
    assert re.search(match, err.getvalue()), err.getvalue()
    assert tree_hashes(root) == before


# -- CDC -----------------------------------------------------------------------------------------
def _enable_cdc(root: Path) -> None:
    """The second commit as Java's CDC writer leaves it: a ``.cdc`` log per updated file group,
    named in the write stat (``cdcStats``), and the table property."""
    last = _commits(root)[-1]
    md = json.loads(last.read_text())
    for part, stats in md["partitionToWriteStats"].items():
        for st in stats:
            name = f".{st['fileId']}_{last.name[:17]}.log.1_0-1-0.cdc"
            (root / part / name).write_bytes(b"#HUDI#" + bytes(64))
            st["cdcStats"] = {f"{part}/{name}": 70}
    last.write_text(json.dumps(md, indent=2))
    update_table_config(
        Storage(str(root)),
        {
            "hoodie.table.cdc.enabled": "true",
            "hoodie.table.cdc.supplemental.logging.mode": "DATA_BEFORE_AFTER",
        },
    )


def test_cdc_table_reads_but_refuses_writes(tmp_path: Path) -> None:
    root = _table(tmp_path)
    update_table_config(Storage(str(root)), {"hoodie.table.cdc.enabled": "false"})
    hudi_ds.write(str(root), builders.trips([3], ts=9), OPTS)  # false: an ordinary table
    expected = _rows(hudi_ds.read(str(root)))
    assert ("t3", 9, "sf", 309.0) in expected and len(expected) == 4
    _enable_cdc(root)
    assert _rows(hudi_ds.read(str(root))) == expected  # snapshot reads are unaffected
    _assert_writes_refused(root, r"hoodie\.table\.cdc\.enabled=true")


# -- bootstrap -----------------------------------------------------------------------------------
_BOOTSTRAP_INDEX = "00000000-0000-0000-0000-000000000000-0_1-0-1_00000000000001.hfile"


def _metadata_bootstrap(root: Path, tmp_path: Path) -> None:
    """A METADATA_ONLY bootstrap of a source file with trips t8, t9 in ``la``: the skeleton
    file (meta columns alone), its commit at ``00000000000001``, the bootstrap index and the
    table property naming the source."""
    source = tmp_path / "source"
    (source / "la").mkdir(parents=True)
    src = builders.trips([8, 9], city="la")
    pq.write_table(src, source / "la" / "part-0.parquet")
    file_id = f"{uuid.uuid4()}-0"
    skeleton = f"{file_id}_0-1-0_00000000000001.parquet"
    meta = pa.table(
        {
            "_hoodie_commit_time": ["00000000000001"] * 2,
            "_hoodie_commit_seqno": ["00000000000001_0_0", "00000000000001_0_1"],
            "_hoodie_record_key": ["t8", "t9"],
            "_hoodie_partition_path": ["la", "la"],
            "_hoodie_file_name": [skeleton] * 2,
        }
    )
    (root / "la").mkdir()
    pq.write_table(meta, root / "la" / skeleton)
    first = json.loads(_commits(root)[0].read_text())
    stat = {**first["partitionToWriteStats"]["nyc"][0], "fileId": file_id, "path": f"la/{skeleton}"}
    size = (root / "la" / skeleton).stat().st_size
    stat.update(partitionPath="la", prevCommit="null", numWrites=2, numInserts=2)
    stat.update(totalWriteBytes=size, fileSizeInBytes=size)
    md = {**first, "partitionToWriteStats": {"la": [stat]}, "operationType": "BOOTSTRAP"}
    hoodie = root / ".hoodie"
    (hoodie / "00000000000001.commit.requested").write_bytes(b"")
    (hoodie / "00000000000001.inflight").write_bytes(b"")
    (hoodie / "00000000000001.commit").write_text(json.dumps(md, indent=2))
    for folder in (".partitions", ".fileids"):
        index = hoodie / ".aux" / ".bootstrap" / folder
        index.mkdir(parents=True, exist_ok=True)
        (index / _BOOTSTRAP_INDEX).write_bytes(b"HFILE" + bytes(32))
    update_table_config(
        Storage(str(root)),
        {
            "hoodie.bootstrap.base.path": str(source),
            "hoodie.bootstrap.index.class": (
                "org.apache.hudi.common.bootstrap.index.hfile.HFileBootstrapIndex"
            ),
        },
    )


def test_metadata_bootstrapped_table_is_refused(tmp_path: Path) -> None:
    root = _table(tmp_path)
    # the property alone (a FULL_RECORD bootstrap writes ordinary base files): served
    update_table_config(Storage(str(root)), {"hoodie.bootstrap.base.path": str(tmp_path / "s")})
    hudi_ds.write(str(root), builders.trips([2], ts=9), OPTS)
    got = {r[0]: r for r in _rows(hudi_ds.read(str(root)))}
    assert got["t2"] == ("t2", 9, "nyc", 209.0) and len(got) == 4
    _metadata_bootstrap(root, tmp_path)
    before = tree_hashes(root)
    with pytest.raises(UnsupportedError, match=r"hoodie\.bootstrap\.base\.path.*skeleton"):
        hudi_ds.read(str(root))  # today: t8 and t9 with null data columns
    _assert_writes_refused(root, r"hoodie\.bootstrap\.base\.path")
    assert tree_hashes(root) == before


# -- schema on read ------------------------------------------------------------------------------
def _internal(version: str, names: list[tuple[int, str, str]]) -> dict:
    fields = [{"id": i, "name": n, "optional": True, "type": t} for i, n, t in names]
    top = max(i for i, _, _ in names)
    return {"max_column_id": top, "version_id": int(version), "type": "record", "fields": fields}


_V1 = [(0, "id", "string"), (1, "ts", "long"), (2, "city", "string"), (3, "fare", "double")]


def _alter_schema(root: Path, new: list[tuple[int, str, str]], history: bool = True) -> None:
    """An ``alter_schema`` commit as Spark SQL's ALTER TABLE leaves it with schema on read:
    the new Avro schema and internal schema in its metadata, the history file beside."""
    first_commit = _commits(root)[0]
    last = json.loads(_commits(root)[-1].read_text())
    avro = json.loads(last["extraMetadata"]["schema"])
    types = {"string": "string", "long": "long", "double": "double"}
    avro["fields"] = [{"name": n, "type": ["null", types[t]], "default": None} for _, n, t in new]
    time.sleep(0.002)
    instant = new_instant_time()
    latest = _internal(instant, new)
    md = {
        "partitionToWriteStats": {},
        "compacted": False,
        "extraMetadata": {"schema": json.dumps(avro), "latest_schema": json.dumps(latest)},
        "operationType": "ALTER_SCHEMA",
    }
    hoodie = root / ".hoodie"
    (hoodie / f"{instant}.commit.requested").write_bytes(b"")
    (hoodie / f"{instant}.inflight").write_bytes(b"")
    (hoodie / f"{instant}.commit").write_text(json.dumps(md, indent=2))
    if history:
        v1 = _internal(first_commit.name[:17], _V1)
        doc = {"schemas": [latest, v1]}
        (hoodie / ".schema" / f"{instant}.schemacommit").write_text(json.dumps(doc))


@pytest.mark.parametrize(
    ("change", "history", "refused"),
    [
        ("rename fare -> price", True, r"renamed or dropped columns on read \(fare -> price"),
        ("drop fare", True, r"renamed or dropped columns on read \(fare dropped"),
        ("add note", False, r"\.hoodie/\.schema holds no schema history"),
    ],
)
def test_schema_on_read_history_refuses_reads(
    change: str, history: bool, refused: str, tmp_path: Path
) -> None:
    root = _table(tmp_path)
    new = {
        "rename fare -> price": [*_V1[:3], (3, "price", "double")],
        "drop fare": _V1[:3],
        "add note": [*_V1, (4, "note", "string")],
    }[change]
    _alter_schema(root, new, history)
    before = tree_hashes(root)
    with pytest.raises(UnsupportedError, match=refused):
        hudi_ds.read(str(root))  # today: price read as null, or a dropped column back
    _assert_writes_refused(root, r"evolves its schema on read.*'latest_schema'")
    assert tree_hashes(root) == before


def test_schema_on_read_added_column_reads_but_refuses_writes(tmp_path: Path) -> None:
    root = _table(tmp_path)
    schema_folder = root / ".hoodie" / ".schema"
    assert schema_folder.is_dir() and not any(schema_folder.iterdir())  # ordinary: written
    hudi_ds.write(str(root), builders.trips([0], ts=9), OPTS)
    expected = [(*r, None) for r in _rows(hudi_ds.read(str(root)))]
    assert ("t0", 9, "nyc", 9.0, None) in expected
    _alter_schema(root, [*_V1, (4, "note", "string")])
    assert _rows(hudi_ds.read(str(root)), [*COLS, "note"]) == expected
    _assert_writes_refused(root, r"evolves its schema on read.*'latest_schema'")
