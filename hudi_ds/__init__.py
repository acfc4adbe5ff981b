"""hudi_ds: Apache Hudi's table format and streaming write path in Python.

The embedded API (no JVM)::

    import hudi_ds
    table = hudi_ds.read("/path/to/table")                       # snapshot, as pyarrow.Table
    t = hudi_ds.HudiTable("/path/to/table")                      # timeline, schema, file slices

The Spark data source ``hudi_py`` lives in :mod:`hudi_ds.spark` (it needs pyspark >= 4.0:
``pip install "/path/to/hudi_ds[spark]"``, docs/install.md). Every error is a
:class:`HudiError` (:mod:`hudi_ds.errors`); options are listed in docs/options.md.
"""

from hudi_ds.api import HudiTable, rescale_buckets, write
from hudi_ds.errors import (
    CommitConflictError,
    ConcurrentWriterError,
    ConfigError,
    CorruptBlockError,
    CorruptFileError,
    HudiError,
    HudiWarning,
    IgnoredOptionWarning,
    InstantNotFoundError,
    MissingFileError,
    SchemaError,
    SparkSetupError,
    StorageError,
    TableExistsError,
    TableNotFoundError,
    TimelineError,
    UnsupportedError,
    WriteError,
)
from hudi_ds.table.table import read

__version__ = "0.1.0"

__all__ = [
    "CommitConflictError",
    "ConcurrentWriterError",
    "ConfigError",
    "CorruptBlockError",
    "CorruptFileError",
    "HudiError",
    "HudiTable",
    "HudiWarning",
    "IgnoredOptionWarning",
    "InstantNotFoundError",
    "MissingFileError",
    "SchemaError",
    "SparkSetupError",
    "StorageError",
    "TableExistsError",
    "TableNotFoundError",
    "TimelineError",
    "UnsupportedError",
    "WriteError",
    "__version__",
    "read",
    "rescale_buckets",
    "write",
]
