"""The metadata table's secondary indexes: partitions ``secondary_index_<name>`` (Hudi 1.x).

A secondary index maps the value of one column of the data table to the record keys holding
it. Its definition lives in the table's index definitions file (``.hoodie/.index_defs/
index.json``, ``hoodie.table.index.defs.path``)::

    "secondary_index_rider_idx": {"indexName": "secondary_index_rider_idx",
        "indexType": "secondary_index", "indexFunction": "identity",
        "sourceFields": ["rider"], "indexOptions": {}, "version": "V2"}

hudi_ds evaluates the ``identity`` function of one top-level column of a type whose Java
``toString`` it reproduces (:func:`secondary_strings`); any other definition (an expression
index, a nested field, a float) it cannot keep in step.

Records (Java ``HoodieMetadataPayload.createSecondaryIndexRecord``): one per live data record,
HFile row key ``<escaped secondary value>$<escaped record key>`` (Java
``SecondaryIndexKeyUtils.constructSecondaryIndexKey``: ``\\``, ``$`` and NUL are preceded by
``\\``; a null value is the single character NUL, unescaped), value a ``HoodieMetadataRecord``
of ``type`` 7 whose ``SecondaryIndexMetadata`` (``HoodieSecondaryIndexInfo``) is
``{isDeleted: false}``. A record leaves the index through a DELETE block of the file group's
log (the v8 fixture's Hudi 1.0 writes them so; a data-block record with ``isDeleted: true``
is read as a delete too). The secondary value is the Java ``toString`` of the Spark value:
strings as they are, integers in decimal, dates as days since the epoch, timestamps as epoch
microseconds, booleans ``true``/``false``.

File groups ``secondary-index-<name with - for _>-<i %04d>-0`` (Java
``HoodieTableMetadataUtil.getFileIDForFileGroup``), ``i`` (Java
``getSecondaryKeyToFileGroupMappingFunction``): index version ``V1`` (Hudi 1.0, table version
8, no ``version`` in the definition) hashes the whole row key, ``V2`` (Hudi 1.1) only its
secondary part up to and including the ``$`` -- every key of one value is in one file group,
so a lookup reads one. The hash is Java's ``String.hashCode``, ``abs(abs(h) % n)``
(``mapRecordKeyToFileGroupIndex``).
"""

from __future__ import annotations

import functools
import io
import json
import typing
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import fastavro
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hudi_ds.errors import ConfigError, CorruptFileError
from hudi_ds.index.bucket import java_string_hash
from hudi_ds.layout.file_group import FileSlice
from hudi_ds.layout.hfile import read_hfile
from hudi_ds.layout.naming import parse_base_file_name, parse_log_file_name
from hudi_ds.log.block import BlockType
from hudi_ds.log.reader import decode_delete_block
from hudi_ds.schema.meta import RECORD_KEY_METADATA_FIELD
from hudi_ds.storage import Storage
from hudi_ds.table_config import TableConfig
from hudi_ds.timeline.timeline import Timeline

__all__ = [
    "PARTITION_PREFIX",
    "SECONDARY_INDEX_TYPE",
    "SecondaryIndexDef",
    "definitions",
    "encode_value",
    "file_group_count",
    "file_group_id",
    "file_group_indexes",
    "index_keys",
    "lookup_record_keys",
    "read_index",
    "records_of",
    "secondary_strings",
    "undefined",
]

PARTITION_PREFIX = "secondary_index_"
"""MDT partitions of secondary indexes: ``secondary_index_<name>`` (the index's own name)."""
EXPRESSION_PREFIX = "expr_index_"
"""MDT partitions of expression indexes (never kept: hudi_ds evaluates no expression)."""
SECONDARY_INDEX_TYPE = 7
"""``type`` of its records (Java ``MetadataPartitionType.SECONDARY_INDEX.getRecordType()``)."""
_NUL = "\x00"


@dataclass(frozen=True)
class SecondaryIndexDef:
    """One secondary index definition of the table.

    Attributes:
        name: the MDT partition (``indexName``: ``secondary_index_<name>``).
        column: the indexed column (None: not one hudi_ds evaluates).
        version: the index version (1: Hudi 1.0's layout, 2: Hudi 1.1's).
        unevaluable: why hudi_ds cannot keep it in step ("" when it can).
    """

    name: str
    column: str | None
    version: int
    unevaluable: str = ""


def _version(definition: dict[str, Any], table_version: int) -> int:
    v = str(definition.get("version") or "").upper()
    if v.startswith("V") and v[1:].isdigit():
        return int(v[1:])
    # a definition without a version is as old as its table (Java HoodieIndexVersion's
    # per-table-version default: V1 on table version 8, V2 on 9)
    return 2 if table_version >= 9 else 1


def _definition(name: str, d: dict[str, Any], table_version: int) -> SecondaryIndexDef:
    version = _version(d, table_version)
    kind = str(d.get("indexType") or "")
    function = str(d.get("indexFunction") or "")
    fields = [str(f) for f in d.get("sourceFields") or []]
    why = ""
    if kind != "secondary_index":
        why = f"index type {kind!r} is not a secondary index"
    elif function not in ("", "identity"):
        why = f"its function {function!r} is an expression hudi_ds does not evaluate"
    elif len(fields) != 1:
        why = f"it indexes {len(fields)} fields (hudi_ds evaluates one)"
    elif "." in fields[0]:
        why = f"its field {fields[0]!r} is nested (hudi_ds evaluates a top-level column)"
    elif version not in (1, 2):
        why = f"index version V{version} is not one hudi_ds knows (V1, V2)"
    column = fields[0] if not why else None
    return SecondaryIndexDef(name, column, version, why)


def definitions(config: TableConfig, storage: Storage) -> dict[str, SecondaryIndexDef]:
    """The table's secondary index definitions by MDT partition name (``.hoodie/.index_defs``).

    Args:
        config: the data table's config.
        storage: the data table's storage.

    Raises:
        ConfigError: the definitions file does not parse.
    """
    rel = config.get(TableConfig.INDEX_DEFS_PATH)
    out: dict[str, SecondaryIndexDef] = {}
    if rel and storage.exists(rel):
        try:
            doc = json.loads(storage.read_text(rel))
            defs = dict(doc.get("indexDefinitions") or {})
        except (ValueError, AttributeError, TypeError) as e:
            raise ConfigError(
                f"{storage.uri(rel)} ({TableConfig.INDEX_DEFS_PATH.key}) cannot be read ({e}): "
                "the table's secondary index definitions cannot be told"
            ) from None
        for name, d in defs.items():
            if str(name).startswith(PARTITION_PREFIX) and isinstance(d, dict):
                out[str(name)] = _definition(str(name), d, config.table_version)
    return out


def undefined(name: str) -> SecondaryIndexDef:
    """The stand-in of a secondary index partition the definitions file does not define."""
    return SecondaryIndexDef(name, None, 2, "the table has no definition of it")


# ------------------------------------------------------------------------------------------
# Record keys
# ------------------------------------------------------------------------------------------


def secondary_strings(values: pa.Array | pa.ChunkedArray) -> pa.Array | None:
    """The Java ``toString`` of each value as Spark's reader hands it to Java's generator
    (``SecondaryIndexRecordGenerationUtils``: ``secondaryKey.toString()``), nulls kept; None
    for a type whose rendering hudi_ds does not reproduce (floating point, decimal, binary,
    nested: Java's own formatting rules)."""
    arr = values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values
    t = arr.type
    if pa.types.is_dictionary(t):
        arr = arr.dictionary_decode()
        t = arr.type
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return pc.cast(arr, pa.string())
    if pa.types.is_integer(t) or pa.types.is_boolean(t):
        return pc.cast(arr, pa.string())
    if pa.types.is_date32(t):  # Spark DateType: days since the epoch
        return pc.cast(pc.cast(arr, pa.int32()), pa.string())
    if pa.types.is_timestamp(t):  # Spark TimestampType(NTZ): epoch microseconds
        micros = pc.cast(arr, pa.timestamp("us", t.tz), safe=False)
        return pc.cast(pc.cast(micros, pa.int64()), pa.string())
    return None


def _escape(arr: pa.Array) -> pa.Array:
    """Java ``SecondaryIndexKeyUtils.escapeSpecialChars``: ``\\``, ``$``, NUL escaped with
    ``\\``; a null becomes the single NUL character."""
    escaped = pc.replace_substring_regex(arr, pattern=r"([\\$\x00])", replacement=r"\\\1")
    return pc.fill_null(escaped, _NUL)


def index_keys(record_keys: pa.Array, secondary: pa.Array) -> pa.Array:
    """The row keys ``<escaped secondary>$<escaped record key>`` of (record key, secondary
    value) pairs (``secondary``: :func:`secondary_strings`), vectorised."""
    return pc.binary_join_element_wise(
        _escape(pc.cast(secondary, pa.string())), _escape(pc.cast(record_keys, pa.string())), "$"
    )


def _separator_end(keys: pa.Array) -> pa.Array:
    """The escaped secondary part of each row key with its ``$`` (Java
    ``getUnescapedSecondaryKeyPrefixFromSecondaryIndexKey``: up to the first unescaped
    ``$``)."""
    # an escaped part is a run of plain characters and \x pairs; the first unescaped $ ends it
    return pc.extract_regex(keys, r"^(?P<p>(?:[^\\$]|\\.)*\$)").field("p")


def file_group_indexes(keys: pa.Array, count: int, version: int) -> np.ndarray:
    """The file group index of each row key (see the module docstring), vectorised.

    Raises:
        ValueError: ``count`` is not positive.
    """
    if count <= 0:
        raise ValueError(f"a secondary index needs at least one file group, not {count}")
    hashed = _separator_end(keys) if version >= 2 else keys
    h = java_string_hash(hashed).astype(np.int64)
    return np.asarray(np.abs(h) % count, dtype=np.int64)


def file_id_prefix(partition: str) -> str:
    """``secondary-index-<name>-``: the file id of file group ``i`` is this + ``%04d-0``."""
    return partition.replace("_", "-") + "-"


def file_group_id(partition: str, index: int) -> str:
    """The file id of file group ``index`` of MDT partition ``partition``."""
    return f"{file_id_prefix(partition)}{index:04d}-0"


def file_group_count(storage: Storage, partition: str) -> int:
    """How many file groups MDT partition ``partition`` has (its files' distinct file ids)."""
    prefix = file_id_prefix(partition)
    ids = set()
    for f in storage.list_files(partition):
        p = parse_base_file_name(f.name) or parse_log_file_name(f.name)
        if p is not None and p.file_id.startswith(prefix):
            ids.add(p.file_id)
    return len(ids)


# ------------------------------------------------------------------------------------------
# Values
# ------------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=16)
def _parsed(schema_json: str) -> Any:
    return fastavro.parse_schema(json.loads(schema_json))


@functools.lru_cache(maxsize=64)
def encode_value(schema_json: str, file_name: str | None = None, deleted: bool = False) -> bytes:
    """The HFile value of a secondary-index record: raw Avro ``HoodieMetadataRecord`` (meta
    fields null but ``_hoodie_file_name`` in base files, ``key`` blank as in every MDT HFile).
    The row key is not in the value, so all values of one file are the same."""
    names = [f["name"] for f in json.loads(schema_json)["fields"]]
    record: dict[str, Any] = dict.fromkeys(names)
    record["key"] = ""
    record["_hoodie_file_name"] = file_name
    record["type"] = SECONDARY_INDEX_TYPE
    record["SecondaryIndexMetadata"] = {"isDeleted": deleted}
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, _parsed(schema_json), record)
    return buf.getvalue()


@functools.lru_cache(maxsize=256)
def _is_deleted(value: bytes, schema_json: str) -> bool:
    try:
        record = typing.cast(
            dict[str, Any],
            fastavro.schemaless_reader(io.BytesIO(value), _parsed(schema_json), None),
        )
        if int(record["type"]) != SECONDARY_INDEX_TYPE:
            raise ValueError(f"type {record['type']} is not a secondary-index record")
        info = record.get("SecondaryIndexMetadata") or {}
        return bool(info.get("isDeleted"))
    except Exception as e:  # fastavro raises assorted errors on torn bytes
        raise CorruptFileError(f"unreadable secondary-index value ({len(value)} bytes): {e}") from e


# ------------------------------------------------------------------------------------------
# Reading a partition
# ------------------------------------------------------------------------------------------


def _put_hfile(out: dict[str, bool], data: bytes | memoryview, where: str, schema: str) -> None:
    hf = read_hfile(data, where)
    schema = schema or hf.file_info.get("schema", b"").decode("utf-8")
    for k, v in zip(hf.keys, hf.values, strict=True):
        out[k.decode("utf-8")] = not _is_deleted(bytes(v), schema)


def read_slice(storage: Storage, fslice: FileSlice, keep: Callable[[str], bool]) -> set[str]:
    """The live row keys of one secondary-index file slice (base HFile, then the blocks of
    the MDT instants ``keep`` accepts, in log order)."""
    from hudi_ds.metadata.reader import counted_blocks, slice_log_blocks

    out: dict[str, bool] = {}
    if fslice.base_file is not None:
        path = fslice.base_file.path
        _put_hfile(out, storage.read_bytes(path), storage.full_path(path), "")
    partition = fslice.partition_path
    for b in counted_blocks(slice_log_blocks(storage, fslice), keep, partition):
        if b.block_type == BlockType.HFILE_DATA:
            _put_hfile(out, b.content, f"{b.path} block at offset {b.offset}", b.schema or "")
        else:
            for key in decode_delete_block(b).column(RECORD_KEY_METADATA_FIELD).to_pylist():
                if key is not None:
                    out[key] = False
    return {k for k, live in out.items() if live}


def read_index(
    storage: Storage, timeline: Timeline, partition: str, keep: Callable[[str], bool]
) -> dict[str, int]:
    """Every live row key of MDT partition ``partition`` with the index of the file group
    holding it (as of the MDT instants ``keep`` accepts).

    Raises:
        CorruptFileError: a file of the partition does not decode.
    """
    from hudi_ds.metadata.reader import files_slices

    prefix = file_id_prefix(partition)
    out: dict[str, int] = {}
    for s in files_slices(storage, timeline, partition):
        if not s.file_id.startswith(prefix):
            continue
        i = int(s.file_id[len(prefix) :].split("-")[0])
        for k in read_slice(storage, s, keep):
            out[k] = i
    return out


def records_of(keys: pa.Array, values: pa.Array) -> Sequence[str] | None:
    """The row keys a secondary index holds for rows ``(keys, values)``; None when the
    values' type is not one hudi_ds renders as Java does."""
    rendered = secondary_strings(values)
    if rendered is None:
        return None
    return typing.cast(list[str], index_keys(keys, rendered).to_pylist())


def _unescape(escaped: str) -> str:
    """Java ``SecondaryIndexKeyUtils.unescapeSpecialChars`` of a record key part."""
    out = []
    it = iter(escaped)
    for c in it:
        out.append(next(it, "") if c == "\\" else c)
    return "".join(out)


def lookup_record_keys(
    storage: Storage,
    timeline: Timeline,
    partition: str,
    version: int,
    rendered: Sequence[str],
    keep: Callable[[str], bool],
) -> set[str]:
    """The record keys whose indexed value is one of ``rendered`` (:func:`secondary_strings`
    of the values, none null), as MDT partition ``partition`` holds them: with index version
    V2 only the file groups those values hash to are read (Java ``SecondaryIndexSupport``'s
    lookup), with V1 every file group.

    Raises:
        CorruptFileError: a file of the partition does not decode.
    """
    from hudi_ds.metadata.reader import files_slices

    if not rendered:
        return set()
    prefixes = _escape(pa.array(list(rendered), pa.string())).to_pylist()
    heads = tuple(f"{p}$" for p in prefixes)
    slices = {s.file_id: s for s in files_slices(storage, timeline, partition)}
    count = len(slices)
    if not count:
        return set()
    if version >= 2:
        idx = file_group_indexes(pa.array(list(heads), pa.string()), count, 2)
        wanted = {file_group_id(partition, int(i)) for i in np.unique(idx)}
    else:
        wanted = set(slices)
    out: set[str] = set()
    for fid in sorted(wanted):
        s = slices.get(fid)
        if s is None:
            continue
        for k in read_slice(storage, s, keep):
            for h in heads:
                if k.startswith(h):
                    out.add(_unescape(k[len(h) :]))
    return out
