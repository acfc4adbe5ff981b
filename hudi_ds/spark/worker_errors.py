"""hudi_ds errors raised inside Spark, given back as their own class.

A ``hudi_py`` read or write runs hudi_ds in Spark's Python workers: the planning calls
(``DataSource.schema`` / ``reader`` / ``writer``) and ``commit`` in workers on the driver, the
reads and writes of each task on the executors. pyspark does not hand their exceptions back:
the JVM receives the worker's formatted traceback and raises its own ``AnalysisException``
(planning: ``PYTHON_DATA_SOURCE_ERROR``) or ``PythonException`` (tasks), whose text ends with
``hudi_ds.errors.SchemaError: <message>``. :func:`hudi_errors` turns such an exception back
into the hudi_ds class with that message, so ``except hudi_ds.errors.SchemaError`` works
around a Spark action; the Spark exception stays reachable as the error's ``spark_error``.

The traceback lines before the message are pyspark's to print:
``spark.sql.execution.pyspark.udf.hideTraceback.enabled=true`` leaves only the
``hudi_ds.errors.X: message`` line (docs/troubleshooting.md).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager

from hudi_ds import errors
from hudi_ds.errors import HudiError

#: a worker's hudi_ds error, class and message: a traceback's last line, or after the JVM's
#: prefix when the traceback is hidden
_RAISED = re.compile(r"(?<![\w.])hudi_ds\.errors\.(\w+): ")
#: what the JVM appends after the worker's text
_TRAILER = re.compile(r"\s*(?:SQLSTATE: \w+|\n\s*JVM stacktrace:.*)\s*$", re.DOTALL)


def hudi_error_of(error: BaseException) -> HudiError | None:
    """The hudi_ds error that ``error`` -- an exception pyspark raised for a failed Python
    worker -- carries (its class and message), or None when it carries none."""
    if isinstance(error, HudiError):
        return error
    text = str(error)
    found = list(_RAISED.finditer(text))
    if not found:
        return None
    last = found[-1]  # a traceback ends with the exception that was raised
    if "Traceback (most recent call last)" in text[last.end() :]:
        return None  # a hudi_ds error led to another exception, which is what failed
    cls = getattr(errors, last.group(1), None)
    if not (isinstance(cls, type) and issubclass(cls, HudiError)):
        return None
    message = _TRAILER.sub("", text[last.end() :]).rstrip()
    hudi = cls(message)
    hudi.spark_error = error  # type: ignore[attr-defined]
    return hudi


@contextmanager
def hudi_errors() -> Iterator[None]:
    """Raise a hudi_ds error that failed a Spark action in its own class.

    Example::

        with hudi_ds.spark.hudi_errors():
            df.write.format("hudi_py").options(**opts).mode("append").save(path)
        # a null record key raises hudi_ds.errors.SchemaError, not PythonException

    The Spark exception is the error's ``spark_error`` (not its ``__cause__``, whose
    traceback would be printed above the message again).
    """
    try:
        yield
    except HudiError:
        raise
    except Exception as e:
        hudi = hudi_error_of(e)
        if hudi is None:
            raise
        raise hudi from None
