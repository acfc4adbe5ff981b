"""Arrow <-> Spark SQL type mapping for the ``hudi_py`` data source.

Arrow -> Spark (table schema declared to Spark by ``DataSource.schema()``):

=============================================  ===========================================
Arrow                                          Spark SQL
=============================================  ===========================================
bool                                           boolean
int8 / int16 / int32 / int64                   byte / short / int / bigint
uint8 / uint16 / uint32                        short / int / bigint (widened)
uint64                                         decimal(20,0)
float16 / float32 / float64                    float / float / double
decimal128(p,s), decimal256(p<=38,s)           decimal(p,s)
string / large_string / string_view            string
binary / large_binary / fixed_size_binary      binary
date32 / date64                                date
timestamp(any unit, tz=...)                    timestamp (an instant; Arrow side tz=UTC)
timestamp(any unit, no tz)                     timestamp_ntz
duration                                       interval day to second
list / large_list / fixed_size_list            array<...>
map                                            map<...>
struct                                         struct<...>
dictionary<value>                              mapping of the value type
null                                           void
=============================================  ===========================================

Spark -> Arrow (what the writer validates and hands to the embedded writer) is pyspark's own
mapping with ``timestamp`` as ``timestamp[us, tz=UTC]`` and every field nullable (Spark marks
``spark.range`` ids and literals ``not null``; a Hudi table keeps nullable columns).

Batches yielded by a reader must equal ``to_arrow_schema(spark_schema, timezone="UTC")``
exactly (names, order, types, nullability, ``string`` not ``large_string``):
:func:`conform_batch` casts a batch to that schema.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import types as T
from pyspark.sql.pandas.types import to_arrow_schema, to_arrow_type

from hudi_ds.errors import SchemaError, UnsupportedError

UTC = "UTC"


def arrow_to_spark_type(t: pa.DataType, nullable: bool = True, path: str = "") -> T.DataType:
    """The Spark SQL type of an Arrow type.

    Args:
        t: the Arrow type.
        nullable: declare nested elements/values/fields nullable whatever Arrow says (the safe
            choice for a declared read schema: Spark then never meets a null it was promised
            not to get). With ``False``, Arrow's nullability is kept.
        path: the column path, for error messages.

    Raises:
        UnsupportedError: Spark has no type for ``t`` (the message names the column).
    """
    if pa.types.is_dictionary(t):
        return arrow_to_spark_type(t.value_type, nullable, path)
    if pa.types.is_boolean(t):
        return T.BooleanType()
    if pa.types.is_int8(t):
        return T.ByteType()
    if pa.types.is_int16(t) or pa.types.is_uint8(t):
        return T.ShortType()
    if pa.types.is_int32(t) or pa.types.is_uint16(t):
        return T.IntegerType()
    if pa.types.is_int64(t) or pa.types.is_uint32(t):
        return T.LongType()
    if pa.types.is_uint64(t):
        return T.DecimalType(20, 0)
    if pa.types.is_float16(t) or pa.types.is_float32(t):
        return T.FloatType()
    if pa.types.is_float64(t):
        return T.DoubleType()
    if pa.types.is_decimal(t):
        if t.precision > 38:
            raise UnsupportedError(
                f"column '{path}': {t} has precision {t.precision}; Spark decimals hold at most 38"
            )
        return T.DecimalType(t.precision, t.scale)
    if _is_string(t):
        return T.StringType()
    if _is_binary(t):
        return T.BinaryType()
    if pa.types.is_date(t):
        return T.DateType()
    if pa.types.is_timestamp(t):
        return T.TimestampType() if t.tz is not None else T.TimestampNTZType()
    if pa.types.is_duration(t):
        return T.DayTimeIntervalType()
    if pa.types.is_null(t):
        return T.NullType()
    if _is_list(t):
        f = t.value_field
        return T.ArrayType(
            arrow_to_spark_type(f.type, nullable, f"{path}[]"), nullable or f.nullable
        )
    if pa.types.is_map(t):
        k, v = t.key_field, t.item_field
        return T.MapType(
            arrow_to_spark_type(k.type, nullable, f"{path}.key"),
            arrow_to_spark_type(v.type, nullable, f"{path}.value"),
            nullable or v.nullable,
        )
    if pa.types.is_struct(t):
        return T.StructType(
            [
                T.StructField(
                    f.name,
                    arrow_to_spark_type(f.type, nullable, f"{path}.{f.name}" if path else f.name),
                    nullable or f.nullable,
                )
                for f in (t.field(i) for i in range(t.num_fields))
            ]
        )
    raise UnsupportedError(f"column '{path}': Arrow type {t} has no Spark SQL equivalent")


def arrow_to_spark_schema(schema: pa.Schema, nullable: bool = True) -> T.StructType:
    """The Spark ``StructType`` of an Arrow schema (all fields nullable unless ``nullable=False``).

    Raises:
        UnsupportedError: a column has no Spark type.
    """
    return T.StructType(
        [
            T.StructField(
                f.name, arrow_to_spark_type(f.type, nullable, f.name), nullable or f.nullable
            )
            for f in schema
        ]
    )


def spark_to_arrow_type(dt: T.DataType, path: str = "") -> pa.DataType:
    """The Arrow type the writer stores for a Spark SQL type (nested fields all nullable).

    ``timestamp`` becomes ``timestamp[us, tz=UTC]``, ``timestamp_ntz`` ``timestamp[us]``.

    Raises:
        UnsupportedError: Arrow/Hudi cannot store the type (the message names the column).
    """
    try:
        t = to_arrow_type(dt, timezone=UTC)
    except Exception as e:  # pyspark raises its own error classes
        raise UnsupportedError(f"column '{path}': Spark type {dt.simpleString()}: {e}") from None
    return relax_nullability(t)


def spark_to_arrow_schema(schema: T.StructType) -> pa.Schema:
    """The Arrow schema of a DataFrame as the writer stores it (all fields nullable).

    Raises:
        UnsupportedError: a column type cannot be stored.
        SchemaError: duplicate column names.
    """
    names = schema.fieldNames()
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise SchemaError(f"duplicate column name(s) {dupes}")
    return pa.schema([pa.field(f.name, spark_to_arrow_type(f.dataType, f.name)) for f in schema])


def read_arrow_schema(schema: T.StructType) -> pa.Schema:
    """The exact Arrow schema pyspark expects of a reader's record batches."""
    return to_arrow_schema(schema, timezone=UTC)


def relax_nullability(t: pa.DataType) -> pa.DataType:
    """``t`` with every nested field nullable (map keys stay non-null, as Arrow requires)."""
    if _is_list(t):
        f = t.value_field
        return pa.list_(pa.field(f.name, relax_nullability(f.type), True))
    if pa.types.is_map(t):
        k, v = t.key_field, t.item_field
        return pa.map_(
            pa.field(k.name, relax_nullability(k.type), False),
            pa.field(v.name, relax_nullability(v.type), True),
        )
    if pa.types.is_struct(t):
        return pa.struct(
            [
                pa.field(f.name, relax_nullability(f.type), True)
                for f in (t.field(i) for i in range(t.num_fields))
            ]
        )
    return t


def conform_batch(batch: pa.RecordBatch, target: pa.Schema) -> pa.RecordBatch:
    """Select and cast ``batch``'s columns (by name) to exactly ``target``.

    Timestamps change unit and time zone label (the instant is kept; sub-microsecond digits are
    truncated); strings/binaries become their 32-bit-offset forms; nested types are cast field
    by field.

    Raises:
        SchemaError: a target column is missing or a value cannot be cast.
    """
    if batch.schema.equals(target):
        return batch
    arrays = []
    for f in target:
        idx = batch.schema.get_field_index(f.name)
        if idx < 0:
            raise SchemaError(f"column '{f.name}' is missing; columns are {batch.schema.names}")
        arrays.append(cast_array(batch.column(idx), f.type, f.name))
    return pa.RecordBatch.from_arrays(arrays, schema=target)


def cast_array(arr: pa.Array, target: pa.DataType, path: str = "") -> pa.Array:
    """Cast one array to ``target`` (see :func:`conform_batch`)."""
    if arr.type.equals(target):
        return arr
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
        if arr.type.equals(target):
            return arr
    try:
        if pa.types.is_struct(target) and pa.types.is_struct(arr.type):
            return _cast_struct(arr, target, path)
        if pa.types.is_timestamp(target) and pa.types.is_timestamp(arr.type):
            return pc.cast(arr, target, safe=False)
        return pc.cast(arr, target)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
        raise SchemaError(f"column '{path}': cannot cast {arr.type} to {target}: {e}") from None


def _cast_struct(arr: pa.Array, target: pa.DataType, path: str) -> pa.Array:
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    children = []
    for i in range(target.num_fields):
        f = target.field(i)
        idx = arr.type.get_field_index(f.name)
        if idx < 0:
            raise SchemaError(f"column '{path}': struct field '{f.name}' is missing")
        children.append(cast_array(arr.field(idx), f.type, f"{path}.{f.name}"))
    return pa.StructArray.from_arrays(
        children,
        fields=[target.field(i) for i in range(target.num_fields)],
        mask=arr.is_null() if arr.null_count else None,
    )


def _is_string(t: pa.DataType) -> bool:
    is_view = getattr(pa.types, "is_string_view", None)
    return pa.types.is_string(t) or pa.types.is_large_string(t) or bool(is_view and is_view(t))


def _is_binary(t: pa.DataType) -> bool:
    is_view = getattr(pa.types, "is_binary_view", None)
    return (
        pa.types.is_binary(t)
        or pa.types.is_large_binary(t)
        or pa.types.is_fixed_size_binary(t)
        or bool(is_view and is_view(t))
    )


def _is_list(t: pa.DataType) -> bool:
    is_view = getattr(pa.types, "is_list_view", None)
    is_large_view = getattr(pa.types, "is_large_list_view", None)
    return (
        pa.types.is_list(t)
        or pa.types.is_large_list(t)
        or pa.types.is_fixed_size_list(t)
        or bool(is_view and is_view(t))
        or bool(is_large_view and is_large_view(t))
    )
