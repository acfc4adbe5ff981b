"""Key generators: record keys and partition paths of whole Arrow batches (vectorised).

Record key grammar (Hudi ``KeyGenUtils``)::

    SIMPLE / NON_PARTITION   <value>                       (the one key field as a string)
    COMPLEX                  <f1>:<v1>,<f2>:<v2>,...       null -> __null__, "" -> __empty__

Partition path: ``<v1>/<v2>`` or, hive style, ``<f1>=<v1>/<f2>=<v2>``; null or empty values
become ``__HIVE_DEFAULT_PARTITION__`` (Hudi's ``PartitionPathEncodeUtils.DEFAULT_PARTITION_PATH``).
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from hudi_ds.errors import SchemaError

NULL_PLACEHOLDER = "__null__"
EMPTY_PLACEHOLDER = "__empty__"
DEFAULT_PARTITION = "__HIVE_DEFAULT_PARTITION__"


def key_string(column: pa.Array | pa.ChunkedArray, name: str) -> pa.Array:
    """A key column's values as Java would print them (strings, ints, booleans, dates)."""
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    t = column.type
    if pa.types.is_dictionary(t):
        column = column.cast(t.value_type)
        t = column.type
    if pa.types.is_string(t):
        return column
    if pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return column.cast(pa.string())
    if pa.types.is_integer(t) or pa.types.is_date(t):
        return column.cast(pa.string())
    if pa.types.is_boolean(t):
        return pc.if_else(column, "true", "false")
    raise SchemaError(
        f"key column '{name}' has type {t}; supported key types are strings, integers, "
        "booleans and dates"
    )


def record_keys(table: pa.Table, fields: list[str], complex_key: bool) -> pa.Array:
    """Build ``_hoodie_record_key`` for every row of ``table``."""
    cols = [key_string(_column(table, f), f) for f in fields]
    if not complex_key:
        if len(cols) != 1:
            raise SchemaError(f"a simple key needs exactly one field, got {fields}")
        return cols[0]
    parts = []
    for f, c in zip(fields, cols, strict=True):
        v = pc.if_else(pc.equal(c, ""), EMPTY_PLACEHOLDER, c)
        v = pc.fill_null(v, NULL_PLACEHOLDER)
        parts.append(pc.binary_join_element_wise(f"{f}:", v, ""))
    if len(parts) == 1:
        return parts[0]
    return pc.binary_join_element_wise(*parts, ",")


# a partition value must stay one safe folder name
_UNSAFE_PARTITION_VALUE = r"(^\.)|[/\\\x00-\x1f]"


def partition_paths(
    table: pa.Table, fields: list[str], hive_style: bool, url_encode: bool = False
) -> pa.Array:
    """Build ``_hoodie_partition_path`` for every row (``""`` when non-partitioned).

    Raises:
        SchemaError: a value would not be one safe folder name (contains ``/``, ``\\`` or a
            control character, or starts with ``.``) and URL encoding is off; the message names
            the column and the value.
    """
    if not fields:
        return pa.repeat(pa.scalar("", pa.string()), table.num_rows)
    parts = []
    for f in fields:
        v = key_string(_column(table, f), f)
        v = pc.if_else(pc.or_kleene(pc.is_null(v), pc.equal(v, "")), DEFAULT_PARTITION, v)
        if url_encode:
            v = _url_encode(v)
        bad = pc.match_substring_regex(v, _UNSAFE_PARTITION_VALUE)
        if pc.any(bad).as_py():
            first = v.filter(bad)[0].as_py()
            raise SchemaError(
                f"unsafe partition value {first!r} in column '{f}': a partition value may not "
                "contain '/', '\\' or control characters, nor start with '.' (set "
                "hoodie.datasource.write.partitionpath.urlencode=true to encode it)"
            )
        parts.append(pc.binary_join_element_wise(f"{f}=", v, "") if hive_style else v)
    if len(parts) == 1:
        return parts[0]
    return pc.binary_join_element_wise(*parts, "/")


def _url_encode(v: pa.Array) -> pa.Array:
    # Java URLEncoder-like escaping of the characters that are unsafe in a path segment
    for ch, code in (("%", "%25"), ("/", "%2F"), ("\\", "%5C"), ("=", "%3D"), (":", "%3A")):
        v = pc.replace_substring(v, ch, code)
    # leading dot would hide the folder
    return pc.replace_substring_regex(v, r"^\.", "%2E")


def _column(table: pa.Table, name: str) -> pa.ChunkedArray:
    if name not in table.column_names:
        raise SchemaError(f"key column '{name}' is missing; columns are {table.column_names}")
    return table.column(name)
