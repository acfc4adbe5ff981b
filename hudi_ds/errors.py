"""The one error hierarchy of hudi_ds.

Users catch :class:`HudiError`; tests assert the exact child.
"""

from __future__ import annotations

import importlib
from typing import Any


class HudiError(Exception):
    """Base class of every error raised by hudi_ds."""


class ConfigError(HudiError, ValueError):
    """An option is unknown, missing or has an invalid value (the message names key and value)."""


class SchemaError(HudiError, ValueError):
    """Input data does not fit the table schema (missing, mistyped or null key columns...)."""


class TableNotFoundError(HudiError, FileNotFoundError):
    """The path holds no Hudi table (no ``.hoodie/hoodie.properties``)."""


class TableExistsError(HudiError):
    """A table was to be created where one already exists with incompatible settings."""


class UnsupportedError(HudiError, NotImplementedError):
    """A feature of the Hudi format that hudi_ds does not handle (named in the message)."""


class MissingDependencyError(UnsupportedError, ImportError):
    """An optional package a call needs is not installed (the message names the package and
    the ``pip install`` command). Also an ``ImportError``, as the bare import error was."""


def import_optional(
    module: str, what: str, *, package: str | None = None, install: str | None = None
) -> Any:
    """``module`` imported, or :class:`MissingDependencyError` saying that ``what`` needs
    ``package`` (default: the module's top-level name) and the ``pip install`` argument that
    brings it (``install``, default: the package)."""
    try:
        return importlib.import_module(module)
    except ImportError as e:
        package = package or module.split(".")[0]
        err = MissingDependencyError(
            f"{what} needs the '{package}' package, which is not installed: "
            f"pip install {install or package}"
        )
        err.name = module
        raise err from e


class CorruptFileError(HudiError):
    """A file that a committed instant needs cannot be read (the message names the file)."""


class CorruptBlockError(CorruptFileError):
    """A log block is torn or malformed (the message names the file and the offset).

    Readers skip torn blocks past a log file's committed size (the tail of a failed write) and
    count them; a corrupt block inside the committed bytes is raised.
    """


class MissingFileError(HudiError, FileNotFoundError):
    """A file that a completed instant committed is gone (the message names file and instant).

    Attributes:
        path: the missing file, relative to the table's base path.
    """

    def __init__(self, message: str, path: str = "") -> None:
        super().__init__(message)
        self.path = path


class TimelineError(HudiError):
    """The timeline is inconsistent or an instant transition is not allowed."""


class InstantNotFoundError(TimelineError):
    """A requested instant (time travel, incremental bound, rollback target) does not exist."""


class CommitConflictError(HudiError):
    """Another writer committed a conflicting change first; this write was rolled back."""


class LockLostError(HudiError):
    """This process no longer holds the table lock it took -- its lease ran out while it was
    stalled, or another writer took the lock over -- so what it was completing under the lock
    is withdrawn and not committed: retry it."""


class AttemptRolledBackError(HudiError):
    """This attempt of a table service (a compaction) was rolled back by another process -- its
    heartbeat had expired, e.g. the process was paused -- or the instant was completed or
    unscheduled elsewhere meanwhile. The attempt stopped, removed the files it wrote that
    the rollback could not know of, and completed nothing; the instant is completed by the
    attempt that rolled it back (or by the next ``hudi-py compact run``)."""


class StorageError(HudiError, OSError):
    """A storage operation failed: the disk or quota is full (names the file).

    Also an ``OSError``, so code that handles I/O errors generically still catches it.
    """


class WriteError(HudiError):
    """A write failed; the instant was rolled back and nothing became visible."""


class ConcurrentWriterError(WriteError):
    """Another writer is writing the table while this one, a single writer
    (``hoodie.write.concurrency.mode=single_writer``, the default), writes it: this write was
    refused, or not committed, and nothing of it became visible. Several writers need
    ``hoodie.write.concurrency.mode=optimistic_concurrency_control``; otherwise retry once
    the other write is done (docs/concurrency.md)."""


class HudiWarning(UserWarning):
    """Base class of every warning issued by hudi_ds."""


class IgnoredOptionWarning(HudiWarning):
    """An option was accepted but has no effect in hudi_ds (the message says why).

    Hudi users paste their option sets: keys that only tune the JVM engine (shuffle
    parallelism, the timeline server) or name services hudi_ds does not run (Hive sync) are
    accepted with this warning rather than refused. Turn it into an error with
    ``warnings.simplefilter("error", IgnoredOptionWarning)``.
    """


class SparkSetupError(ConfigError):
    """Spark's Python workers cannot run hudi_ds (``hudi_ds.spark.register`` checks it): the
    message names the interpreter they ran, the import error, and what to set
    (``PYSPARK_PYTHON`` / ``spark.pyspark.python``, ``--archives``, ``spark.submit.pyFiles``)."""
