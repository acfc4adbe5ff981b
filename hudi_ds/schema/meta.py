"""Hudi's meta columns (Java ``HoodieRecord.HoodieMetadataField``) and helpers on them."""

from __future__ import annotations

import pyarrow as pa

from hudi_ds.errors import SchemaError

# Hudi's meta columns (Java ``HoodieRecord.HoodieMetadataField``), the first five columns of every
# base file and data block, in this order (``HoodieRecord.HOODIE_META_COLUMNS``).
COMMIT_TIME_METADATA_FIELD = "_hoodie_commit_time"


COMMIT_SEQNO_METADATA_FIELD = "_hoodie_commit_seqno"


RECORD_KEY_METADATA_FIELD = "_hoodie_record_key"


PARTITION_PATH_METADATA_FIELD = "_hoodie_partition_path"


FILENAME_METADATA_FIELD = "_hoodie_file_name"


META_FIELDS = [
    COMMIT_TIME_METADATA_FIELD,
    COMMIT_SEQNO_METADATA_FIELD,
    RECORD_KEY_METADATA_FIELD,
    PARTITION_PATH_METADATA_FIELD,
    FILENAME_METADATA_FIELD,
]


#: The optional sixth meta column (``HoodieMetadataField.OPERATION_METADATA_FIELD``): the
#: operation that wrote the row, present when the writer was configured to add it.
OPERATION_METADATA_FIELD = "_hoodie_operation"


#: A data column that marks a row as a delete when true (``HoodieRecord.HOODIE_IS_DELETED_FIELD``).
IS_DELETED_FIELD = "_hoodie_is_deleted"

#: hudi_ds's own column, never written: an upsert row flagged true is the delete of its key,
#: applied whatever ordering value the stored record has -- the delete of a MERGE INTO's
#: ``WHEN MATCHED ... THEN DELETE`` clause, which Hudi's ``ExpressionPayload`` turns into an
#: empty record in the same upsert (``MergeIntoHoodieTableCommand.executeUpsert``). Unlike
#: ``_hoodie_is_deleted`` it never becomes a column of the table.
DML_DELETE_FIELD = "_hudi_ds_dml_delete"


#: Name of the Arrow list item field. Spark's parquet files (and so pyarrow reading them) use
#: ``element``; using the same name keeps avro-block and base-file tables identical.
LIST_ITEM_NAME = "element"


def with_meta_fields(schema: pa.Schema) -> pa.Schema:
    """Return ``schema`` with the five Hudi meta columns first (string, nullable).

    Meta columns already present keep their field definition and move to the front.
    """
    present = {f.name: f for f in schema if f.name in META_FIELDS}
    meta = [present.get(n, pa.field(n, pa.string())) for n in META_FIELDS]
    rest = [f for f in schema if f.name not in META_FIELDS]
    return pa.schema(meta + rest, metadata=schema.metadata)


def check_unique_names(schema: pa.Schema | pa.StructType, path: str = "") -> None:
    """Refuse duplicate column (and struct field) names, compared case-insensitively.

    Spark resolves column names case-insensitively by default and refuses such a schema
    (``SchemaUtils.checkColumnNameDuplication``, which Hudi's Spark writer relies on); Avro
    record fields must be unique too.

    Raises:
        SchemaError: names the duplicated column (with its path inside structs).
    """
    seen: dict[str, str] = {}
    for f in schema:
        full = f"{path}{f.name}"
        other = seen.get(f.name.lower())
        if other is not None:
            same = "" if other == f.name else f" (and {path}{other!r})"
            raise SchemaError(f"duplicate column name {full!r}{same}")
        seen[f.name.lower()] = f.name
        t = f.type
        while pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_map(t):
            t = t.item_type if pa.types.is_map(t) else t.value_type
        if pa.types.is_struct(t):
            check_unique_names(t, f"{full}.")


def clear_meta_values(table: pa.Table, file_name: bool) -> pa.Table:
    """``table``'s rows as a table without meta fields (``hoodie.populate.meta.fields=false``,
    Hudi's virtual keys) stores them: the five meta columns stay, their values null -- except
    ``_hoodie_file_name`` when ``file_name`` (base files).

    Java keeps the meta columns in the written schema (``HoodieWriteHandle``
    ``writeSchemaWithMetaFields``) but fills none of their values: ``HoodieCreateHandle`` and
    ``HoodieMergeHandle.writeToFile`` set only the file name (``MetadataValues.setFileName``),
    ``HoodieAppendHandle.populateMetadataFields`` nothing, and the Parquet writers add the key
    values only when meta fields are populated (``writeAvroWithMetadata``).
    """
    clear = [f for f in META_FIELDS if not (file_name and f == FILENAME_METADATA_FIELD)]
    for name in clear:
        idx = table.schema.get_field_index(name)
        if idx >= 0:
            f = table.schema.field(idx)
            table = table.set_column(idx, f, pa.nulls(table.num_rows, f.type))
    return table


def without_meta_fields(schema: pa.Schema) -> pa.Schema:
    """Return ``schema`` without the Hudi meta columns (the five and ``_hoodie_operation``)."""
    drop = {*META_FIELDS, OPERATION_METADATA_FIELD}
    return pa.schema([f for f in schema if f.name not in drop], metadata=schema.metadata)
