"""hudi_ds errors carried by pyspark's exceptions, turned back into their class (without a
JVM: the texts are what pyspark 4.3 raised for a refused write; the real thing runs in
test_write.py)."""

from __future__ import annotations

import pytest

from hudi_ds.errors import ConfigError, MissingFileError, SchemaError, TableNotFoundError
from hudi_ds.spark import hudi_error_of, hudi_errors

# an executor task's failure (PythonException), its traceback shortened
TASK = """An exception was thrown from the Python worker:
Traceback (most recent call last):
  File "/x/hudi_ds/spark/writer.py", line 334, in write
    return self.job.write_task(self.instant, iterator)
  File "/x/hudi_ds/write/task_writer.py", line 229, in _check_keys
    raise SchemaError(f"record key field '{c}' holds {col.null_count} null value(s)")
hudi_ds.errors.SchemaError: record key field 'id' holds 1 null value(s)
"""
# a planning call's failure on the driver (AnalysisException), with the traceback hidden
PLAN = (
    "[PYTHON_DATA_SOURCE_ERROR] Failed to create Python data source instance: "
    "hudi_ds.errors.TableNotFoundError: no Hudi table at /t: .hoodie/hoodie.properties does "
    "not exist\n SQLSTATE: 38000"
)


class CapturedError(Exception):
    """Stands for pyspark's captured exceptions: only their text matters."""


def test_the_hudi_error_in_a_workers_traceback_is_its_own_class_and_message() -> None:
    task = hudi_error_of(CapturedError(TASK))
    assert type(task) is SchemaError
    assert str(task) == "record key field 'id' holds 1 null value(s)"
    plan = hudi_error_of(CapturedError(PLAN))
    assert type(plan) is TableNotFoundError
    assert str(plan) == "no Hudi table at /t: .hoodie/hoodie.properties does not exist"
    missing = hudi_error_of(CapturedError("hudi_ds.errors.MissingFileError: gone f.parquet"))
    assert type(missing) is MissingFileError and str(missing) == "gone f.parquet"
    # not ours: a name hudi_ds.errors lacks, another error after ours, no hudi_ds error at all
    assert hudi_error_of(CapturedError("hudi_ds.errors.Bogus: x")) is None
    chained = TASK + "\nDuring handling...\nTraceback (most recent call last):\nKeyError: 'x'"
    assert hudi_error_of(CapturedError(chained)) is None
    assert hudi_error_of(CapturedError("java.lang.OutOfMemoryError")) is None


def test_hudi_errors_reraises_the_class_and_keeps_the_spark_exception() -> None:
    spark_error = CapturedError(PLAN.replace("TableNotFoundError", "ConfigError"))
    with pytest.raises(ConfigError) as e, hudi_errors():
        raise spark_error
    assert e.value.spark_error is spark_error  # type: ignore[attr-defined]
    assert e.value.__cause__ is None and e.value.__suppress_context__
    with pytest.raises(CapturedError), hudi_errors():
        raise CapturedError("java.lang.OutOfMemoryError")
