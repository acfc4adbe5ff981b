"""Tables hudi_ds would read wrongly or damage by writing: refused, before anything is written.

Three features of Apache Hudi tables change what a table's files mean, and hudi_ds does not
implement them yet. Until it does, a table that uses one is refused -- for writes (the embedded
API, the Spark data source and every table service, which all open the table through
:func:`refuse_unsupported`) and, where hudi_ds's read would return other rows than Apache
Hudi's, for reads too -- with an error naming the property or folder that says so and what
hudi_ds lacks, and the table left byte-for-byte unchanged:

* **Change data capture** (``hoodie.table.cdc.enabled=true``, Java
  ``HoodieTableConfig.CDC_ENABLED``): Java's writers log each commit's changes beside the data
  (``HoodieCDCLogger``: ``.cdc`` log files named in the write stats' ``cdcStats``), and its CDC
  reader needs them: ``HoodieCDCExtractor.parseWriteStat`` throws "There should be a cdc log
  file." for an updated base file without one. hudi_ds writes no CDC logs, so a write would
  break every later CDC query; snapshot reads are unaffected.
* **Bootstrap** (``hoodie.bootstrap.base.path``, Java ``HoodieTableConfig.BOOTSTRAP_BASE_PATH``
  / ``HoodieBootstrapConfig.BASE_PATH``): a metadata-only bootstrap leaves skeleton base files
  (instant ``00000000000001``) holding the meta columns alone; the data stays in the source
  files under the bootstrap base path, joined by ``.hoodie/.aux/.bootstrap`` (Java
  ``HFileBootstrapIndex``). hudi_ds reads neither the index nor the source files: a read would
  return rows without their data columns and a write would rewrite skeleton files without
  them. A FULL_RECORD bootstrap (instant ``00000000000002``) records the base path too but
  writes ordinary base files and no index: it passes.
* **Schema on read** (Java ``hoodie.schema.on.read.enable``): each commit records the table's
  internal schema -- column ids, so columns can be renamed and dropped without rewriting files
  -- in its extra metadata (``latest_schema``, Java ``SerDeHelper.LATEST_SCHEMA``) and the
  history in ``.hoodie/.schema/<instant>.schemacommit``
  (``FileBasedInternalSchemaStorageManager.persistHistorySchemaStr``). Java's readers map old
  files' columns through the ids; hudi_ds matches columns by name. A write would record no
  internal schema, so refused whenever the latest commit carries one; a read is refused when
  the history renames or drops a column (old files hold it under another name, or a later
  column of the same name is another one), or when the history is missing.

An empty ``.hoodie/.schema`` folder (every Spark-written table has one), ``.hoodie/.aux``
folders and ``hoodie.table.cdc.enabled=false`` are the ordinary layout and pass.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Iterator, Mapping
from typing import Any

from hudi_ds.errors import CorruptFileError, InstantNotFoundError, UnsupportedError
from hudi_ds.table_config import TableConfig
from hudi_ds.timeline.view import TableState

#: the commit extra-metadata key of a schema-on-read table's internal schema (Java
#: ``SerDeHelper.LATEST_SCHEMA``)
LATEST_INTERNAL_SCHEMA_KEY = "latest_schema"
#: the folder of the internal schema history (Java ``FileBasedInternalSchemaStorageManager``)
SCHEMA_HISTORY_FOLDER = ".hoodie/.schema"
_SCHEMA_COMMIT_SUFFIX = ".schemacommit"
#: the instant of a metadata-only bootstrap (Java ``HoodieTimeline.METADATA_BOOTSTRAP_INSTANT_TS``)
METADATA_BOOTSTRAP_INSTANT = "00000000000001"
#: the bootstrap index by partition (Java ``HFileBootstrapIndex.partitionIndexPath``)
BOOTSTRAP_INDEX_FOLDER = ".hoodie/.aux/.bootstrap/.partitions"


class Use(enum.Enum):
    """What the caller is about to do with the table."""

    READ = "read"
    WRITE = "write"  # a write or a table service: anything that writes files or instants


def refuse_unsupported(state: TableState, use: Use) -> None:
    """Refuse a table that uses a feature hudi_ds does not implement (module docstring).

    What is consulted: ``hoodie.properties``; the latest commit's metadata (the one the table
    schema comes from, read once and cached); the bootstrap index folder only when the table
    names a bootstrap base path, the schema history only when the commit holds an internal
    schema.

    Raises:
        UnsupportedError: naming the property or folder and what hudi_ds lacks.
    """
    _refuse_bootstrap(state, use)
    if use is Use.WRITE:
        _refuse_cdc(state.config, state.storage.base_uri)
    _refuse_schema_on_read(state, use)


def _refuse_bootstrap(state: TableState, use: Use) -> None:
    cfg = state.config
    source = (cfg.get(TableConfig.BOOTSTRAP_BASE_PATH) or "").strip()
    if not source:
        return
    # A FULL_RECORD bootstrap (instant 00000000000002) rewrites the source as ordinary base
    # files; only a METADATA_ONLY one leaves skeletons, and always writes the bootstrap index
    # (HFileBootstrapIndex: present when its partition index file exists)
    skeletons = state.timeline.get(METADATA_BOOTSTRAP_INSTANT) is not None or any(
        f.path.endswith(".hfile") for f in state.storage.list_files(BOOTSTRAP_INDEX_FOLDER)
    )
    if not skeletons:
        return
    raise UnsupportedError(
        f"the table at {state.storage.base_uri} was bootstrapped from {source} "
        f"({TableConfig.BOOTSTRAP_BASE_PATH.key}) with skeleton base files: they hold only "
        "Hudi's meta columns, the data columns stay in the source files, joined through the "
        f"bootstrap index ({BOOTSTRAP_INDEX_FOLDER}); hudi_ds reads neither, so it does not "
        f"{use.value} this table (Apache Hudi does; or bootstrap it with "
        "hoodie.bootstrap.mode.selector choosing FULL_RECORD)"
    )


def _refuse_cdc(cfg: TableConfig, where: str) -> None:
    if not TableConfig.CDC_ENABLED.flag(cfg.props):
        return
    raise UnsupportedError(
        f"the table at {where} logs change data ({TableConfig.CDC_ENABLED.key}=true): "
        "Apache Hudi's writers add CDC log files (.cdc) to every commit and its CDC reader "
        "fails on a commit without them; hudi_ds writes no CDC logs, so it does not write "
        "this table (reads are served)"
    )


def _refuse_schema_on_read(state: TableState, use: Use) -> None:
    commit, latest = _latest_internal_schema(state)
    if latest is None:
        return
    where = state.storage.base_uri
    if use is Use.WRITE:
        raise UnsupportedError(
            f"the table at {where} evolves its schema on read: commit {commit} records an "
            f"internal schema ('{LATEST_INTERNAL_SCHEMA_KEY}' in its metadata, history in "
            f"{SCHEMA_HISTORY_FOLDER}; Apache Hudi's hoodie.schema.on.read.enable); hudi_ds "
            "keeps no internal schema, and a commit without one would make Apache Hudi read "
            "renamed or dropped columns by name, so it does not write this table"
        )
    history = _schema_history(state)
    if history is None:
        raise UnsupportedError(
            f"the table at {where} evolves its schema on read (commit {commit} records "
            f"'{LATEST_INTERNAL_SCHEMA_KEY}') but {SCHEMA_HISTORY_FOLDER} holds no schema "
            "history of a completed commit: without it the columns of older files cannot be "
            "told apart from renamed or dropped ones, so hudi_ds does not read this table"
        )
    changed = _renamed_or_dropped([*history, latest])
    if changed:
        raise UnsupportedError(
            f"the table at {where} renamed or dropped columns on read ({', '.join(changed)}; "
            f"internal schema history in {SCHEMA_HISTORY_FOLDER}): Apache Hudi reads older "
            "files through column ids, hudi_ds by name, so it would return other values; "
            "hudi_ds does not read this table"
        )


def _latest_internal_schema(state: TableState) -> tuple[str, dict[str, Any] | None]:
    """``(commit, internal schema)`` of the latest commit that records a writer schema (the
    table schema's commit, :meth:`TableState.latest_avro_schema`); None when it records no
    internal schema."""
    tl = state.timeline
    for inst in reversed(tl.commits()):
        try:
            extra = tl.read_extra_metadata(inst)
        except (CorruptFileError, InstantNotFoundError):
            return "", None  # the read or write reports the damaged (or archived) commit itself
        if not extra.get("schema"):
            continue
        raw = extra.get(LATEST_INTERNAL_SCHEMA_KEY)
        if not raw:
            return inst.requested_time, None
        return inst.requested_time, _parse_json(raw, f"commit {inst.requested_time}")
    return "", None


def _schema_history(state: TableState) -> list[dict[str, Any]] | None:
    """The internal schema versions of the latest history file of a completed commit (as
    Java's ``getHistorySchemaStrByGivenValidCommits`` picks it), or None."""
    completed = {i.requested_time for i in state.timeline.commits()}
    names = sorted(
        f.path.rsplit("/", 1)[-1]
        for f in state.storage.list_files(SCHEMA_HISTORY_FOLDER)
        if f.path.endswith(_SCHEMA_COMMIT_SUFFIX)
    )
    valid = [n for n in names if n.split(".", 1)[0] in completed]
    if not valid:
        return None
    rel = f"{SCHEMA_HISTORY_FOLDER}/{valid[-1]}"
    doc = _parse_json(state.storage.read_text(rel), rel)
    schemas = doc.get("schemas")
    if not isinstance(schemas, list):
        raise CorruptFileError(f"{state.storage.uri(rel)}: no 'schemas' list")
    return [s for s in schemas if isinstance(s, dict)]


def _parse_json(text: str, what: str) -> dict[str, Any]:
    try:
        doc = json.loads(text)
    except ValueError as e:
        raise CorruptFileError(f"{what}: the internal schema is not JSON ({e})") from None
    if not isinstance(doc, dict):
        raise CorruptFileError(f"{what}: the internal schema is not a JSON object")
    return doc


def _renamed_or_dropped(versions: list[dict[str, Any]]) -> list[str]:
    """The columns some version names otherwise than the last one (``old -> new``) or that
    the last one lacks (``old dropped``), by their internal ids."""
    latest = dict(_column_ids(versions[-1]))
    out: list[str] = []
    for version in versions[:-1]:
        for cid, name in _column_ids(version):
            now = latest.get(cid)
            change = f"{name} dropped" if now is None else f"{name} -> {now}"
            if now != name and change not in out:
                out.append(change)
    return out


def _column_ids(node: Mapping[str, Any], path: str = "") -> Iterator[tuple[int, str]]:
    """``(id, dotted name)`` of every field of an internal schema record (Java ``SerDeHelper``
    JSON: ``fields`` of ``{id, name, type}``, nested records, ``array`` element, ``map``
    value)."""
    t = node.get("type")
    if isinstance(t, dict):
        yield from _column_ids(t, path)
        return
    if t == "record":
        for f in node.get("fields") or []:
            name = f"{path}.{f.get('name')}" if path else str(f.get("name"))
            if isinstance(f.get("id"), int):
                yield f["id"], name
            yield from _column_ids(f, name)
    elif t == "array" and isinstance(node.get("element"), dict):
        yield from _column_ids(node["element"], f"{path}[]")
    elif t == "map" and isinstance(node.get("value"), dict):
        yield from _column_ids(node["value"], f"{path}{{}}")
