"""``HudiDataSource``: the ``hudi_py`` format of Spark's Python data source API (pyspark >= 4.0).

::

    from hudi_ds.spark import register
    register(spark)
    df.write.format("hudi_py").mode("append").options(**hoodie_opts).save(path)
    spark.read.format("hudi_py").load(path)

Options are Hudi's own ``hoodie.*`` keys (validated on the driver, before any task runs, with
the key and the bad value in the error) plus a few connector keys ``hudi_py.*``
(:mod:`hudi_ds.spark.options`).

Save modes: ``append`` runs the configured operation (``hoodie.datasource.write.operation``,
``upsert`` by default); ``overwrite`` runs ``insert_overwrite_table`` (or ``insert_overwrite``
when that is configured). Spark's default mode ``errorifexists`` and ``ignore`` are refused by
Spark itself for Python data sources: always call ``.mode(...)``.

Streaming: ``df.writeStream.format("hudi_py")...start(path)`` (append or complete output mode)
and ``spark.readStream.format("hudi_py").load(path)``.
"""

from __future__ import annotations

from typing import ClassVar

from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
)
from pyspark.sql.types import StructType

from hudi_ds.config import Options, ReadConfig
from hudi_ds.engine import ReadableTable
from hudi_ds.errors import ConfigError
from hudi_ds.spark import options as opt
from hudi_ds.spark.options import SparkConfig
from hudi_ds.spark.reader import HudiBatchReader, HudiPushdownReader, validate_read_options
from hudi_ds.spark.stream_reader import HudiStreamReader, stream_schema
from hudi_ds.spark.streaming import HudiStreamWriter
from hudi_ds.spark.types import arrow_to_spark_schema
from hudi_ds.spark.writer import HudiBatchWriter

NAME = opt.SOURCE_NAME


class HudiDataSource(DataSource):  # type: ignore[misc]
    """The ``hudi_py`` data source (batch and streaming reads and writes)."""

    #: whether readers use Spark's filters for pruning when ``hudi_py.read.filter.pushdown`` is
    #: not given (see :func:`hudi_ds.spark.register`).
    filter_pushdown_default: ClassVar[bool] = False

    @classmethod
    def name(cls) -> str:
        return NAME

    def schema(self) -> StructType:
        """The table's schema (latest commit), with Hudi's meta columns first (and
        ``_hoodie_is_deleted`` for streaming reads that emit deletes).

        Raises:
            ConfigError: no path, or a bad read option.
            TableNotFoundError: no Hudi table at the path.
        """
        path, hudi, connector = opt.split_options(self.options)
        validate_read_options(hudi)
        table = ReadableTable(opt.open_path(opt.require_path(path), connector))
        schema = arrow_to_spark_schema(table.schema)
        return stream_schema(schema, Options.of(hudi).get(ReadConfig.INCREMENTAL_EMIT_DELETES))

    def reader(self, schema: StructType) -> DataSourceReader:
        path, hudi, connector = opt.split_options(self.options)
        validate_read_options(hudi)
        if Options.of(hudi).get(ReadConfig.INCREMENTAL_EMIT_DELETES):
            raise ConfigError(
                "hoodie.datasource.read.incr.emit.deletes=true is supported by streaming reads "
                "(spark.readStream) only"
            )
        pushdown = opt.get(connector, SparkConfig.FILTER_PUSHDOWN)
        if pushdown is None:
            pushdown = self.filter_pushdown_default
        cls = HudiPushdownReader if pushdown else HudiBatchReader
        return cls(opt.require_path(path), hudi, connector, schema)

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        return HudiBatchWriter.create(self.options, schema, overwrite)

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        """The streaming sink: one instant per micro-batch, exactly once
        (:mod:`hudi_ds.spark.streaming`). ``overwrite`` is Spark's complete output mode."""
        return HudiStreamWriter.create(self.options, schema, overwrite)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        """The streaming source: completed instants are offsets, each micro-batch an
        incremental read (:mod:`hudi_ds.spark.stream_reader`)."""
        return HudiStreamReader.create(self.options, schema)


class HudiDataSourceWithPushdown(HudiDataSource):
    """``hudi_py`` whose readers prune with Spark's filters by default.

    Registered by :func:`hudi_ds.spark.register` when
    ``spark.sql.python.filterPushdown.enabled`` is true (pyspark refuses a reader that overrides
    ``pushFilters`` while that conf is false).
    """

    filter_pushdown_default: ClassVar[bool] = True
