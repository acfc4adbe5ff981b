"""Can Spark's Python workers import hudi_ds? Checked once per SparkContext by ``register``.

Every ``hudi_py`` read and write runs hudi_ds inside Spark's Python workers (the planner and
commit processes on the driver machine, the tasks on the executors), not in the driver's own
interpreter. Those workers run ``spark.pyspark.python`` / ``PYSPARK_PYTHON`` (default: the
``python3`` on the executors' ``PATH``), which need not be the interpreter the driver runs in:
without a check, the first query fails deep inside Spark with
``PYTHON_DATA_SOURCE_ERROR ... ModuleNotFoundError: No module named 'hudi_ds'``.

:func:`check_workers` runs one tiny job (one partition, one Python task) that imports hudi_ds
in a worker and returns its version, its file and the worker's interpreter, and raises
:class:`~hudi_ds.errors.SparkSetupError` -- saying what to set -- when the import fails or
the versions differ. A passing check is remembered per SparkContext (application id) or, on
Spark Connect, per session, so registering again costs nothing.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from hudi_ds.errors import SparkSetupError, UnsupportedError

__all__ = [
    "WorkerReport",
    "check_workers",
    "is_connect",
    "probe_workers",
    "setup_error",
]

#: the Spark settings that choose the workers' interpreter
PYTHON_CONF = "spark.pyspark.python"
PYTHON_ENV = "PYSPARK_PYTHON"

_passed: set[tuple[str, str]] = set()
_lock = threading.Lock()


@dataclass(frozen=True)
class WorkerReport:
    """What the probe found in one Python worker.

    Attributes:
        python: the worker's ``sys.executable``.
        python_version: its ``major.minor.micro``.
        version: ``hudi_ds.__version__`` there (None when the import failed).
        file: ``hudi_ds.__file__`` there.
        error: ``"<ExceptionType>: message"`` of a failed import, else None.
        job_error: the probe job itself failed (the interpreter could not be started...).
    """

    python: str | None = None
    python_version: str | None = None
    version: str | None = None
    file: str | None = None
    error: str | None = None
    job_error: str | None = None


def is_connect(spark: Any) -> bool:
    """Whether ``spark`` is a Spark Connect session (``SparkSession.builder.remote(...)``)."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


def _make_probe() -> Any:
    # defined inside a function: cloudpickle serialises a nested function by value, so the
    # worker can run it without importing hudi_ds first (which is what it tests)
    def probe(_: Any = None) -> str:
        import importlib as _imp
        import json as _json
        import sys as _sys

        out: dict[str, Any] = {
            "python": _sys.executable,
            "python_version": ".".join(str(v) for v in _sys.version_info[:3]),
        }
        try:
            mod = _imp.import_module("hudi_ds")
            out["version"] = str(getattr(mod, "__version__", None))
            out["file"] = str(getattr(mod, "__file__", None))
        except Exception as e:  # the report says what failed
            out["error"] = f"{type(e).__name__}: {e}"
        return _json.dumps(out)

    return probe


def probe_workers(spark: Any) -> WorkerReport:
    """Run the probe in one Python worker of ``spark`` and return what it found.

    A classic session runs it as a one-partition RDD job; a Spark Connect session as a Python
    UDF over ``spark.range(1)`` (Connect has no RDDs). A job that fails (the interpreter
    cannot be started, the worker crashes) is reported in ``job_error``.
    """
    probe = _make_probe()
    try:
        if is_connect(spark):
            from pyspark.sql import functions as F

            udf = F.udf(probe, "string", useArrow=False)
            rows = spark.range(0, 1, 1, 1).select(udf(F.lit(0)).alias("r")).collect()
            raw = rows[0]["r"]
        else:
            sc = spark.sparkContext

            def each(part: Iterable[Any]) -> Iterator[str]:
                yield probe()

            raw = sc.parallelize([0], 1).mapPartitions(each).collect()[0]
    except Exception as e:
        first = str(e).strip().splitlines()
        return WorkerReport(job_error=f"{type(e).__name__}: {' '.join(first[:3])[:800]}")
    data = json.loads(raw)
    return WorkerReport(**{k: data.get(k) for k in WorkerReport.__dataclass_fields__})


def driver_version() -> str:
    """``hudi_ds.__version__`` of this (driver) process: the package this module belongs to."""
    # the package root (already imported: this module is part of it), looked up by name so
    # that the layering check does not take the connector as depending on the api layer
    return str(importlib.import_module("hudi_ds").__version__)


def _configured_python(spark: Any) -> str | None:
    try:
        value = spark.conf.get(PYTHON_CONF, None)
    except Exception:  # a Connect server may refuse to show it
        value = None
    return str(value) if value else None


#: where the recipes for shipping hudi_ds to a cluster's executors are (each tested)
CLUSTER_DOC = "docs/spark.md, 'Shipping hudi_ds to the executors'"
INSTALL_DOC = "docs/install.md"


def setup_error(
    report: WorkerReport,
    expected_version: str,
    *,
    connect: bool = False,
    configured: str | None = None,
    env_python: str | None = None,
    driver_python: str | None = None,
) -> SparkSetupError | None:
    """The error to raise for ``report`` (None when the workers can run hudi_ds).

    Args:
        report: what the probe found.
        expected_version: the driver's hudi_ds version.
        connect: the session is a Spark Connect session (the server's workers were probed).
        configured: ``spark.pyspark.python`` of the session, if set.
        env_python: ``PYSPARK_PYTHON`` of the driver's environment, if set.
        driver_python: the driver's interpreter (suggested as the workers' one).
    """
    if report.job_error is None and report.error is None and report.version == expected_version:
        return None
    chosen = (
        f"spark.pyspark.python={configured}"
        if configured
        else f"PYSPARK_PYTHON={env_python}"
        if env_python
        else "neither spark.pyspark.python nor PYSPARK_PYTHON is set, so Spark ran 'python3' "
        "from the workers' PATH"
    )
    where = f"{report.python} (Python {report.python_version})" if report.python else "?"
    if report.job_error is not None:
        found = f"the probe job failed: {report.job_error}"
    elif report.error is not None:
        found = f"the worker's interpreter {where} cannot import hudi_ds: {report.error}"
    else:
        found = (
            f"the worker's interpreter {where} imports hudi_ds {report.version} from "
            f"{report.file}, but the driver runs hudi_ds {expected_version}: both sides must "
            "run the same version"
        )
    if connect:
        fix = (
            "The Spark Connect server runs the hudi_py data source in its own Python workers: "
            f"install hudi_ds {expected_version} into the interpreter the server's workers "
            "use (pip install /path/to/hudi_ds-checkout, or the wheel of make dist: "
            f"{INSTALL_DOC}), or start the server with "
            "--conf spark.pyspark.python=/path/to/python-with-hudi_ds. "
            f"See {CLUSTER_DOC}."
        )
    else:
        suggestion = driver_python or "/path/to/python-with-hudi_ds"
        fix = (
            "Point Spark's Python workers at an interpreter that has hudi_ds installed, "
            "before the session starts: export PYSPARK_PYTHON="
            f"{suggestion} (or SparkSession.builder.config('spark.pyspark.python', "
            f"'{suggestion}')). On a cluster: install hudi_ds at the same path on every "
            "node and set spark.pyspark.python to that interpreter, or ship the package "
            "with spark-submit --py-files hudi_ds.zip (spark.submit.pyFiles) when the "
            "executors' Python already has pyarrow, fastavro and numpy, or "
            "ship a packed virtualenv with --archives venv.tar#env and run the nodes' own "
            "python3 with spark.executorEnv.PYTHONPATH=./env/lib/pythonX.Y/site-packages (the "
            "common spark.pyspark.python=./env/bin/python form fails on a standalone cluster: "
            "Spark's untar drops the executable bit). The workers' interpreter is fixed "
            "when the SparkContext starts: call spark.stop() and build the session again. "
            f"See {CLUSTER_DOC}."
        )
    return SparkSetupError(f"Spark's Python workers cannot run hudi_ds ({chosen}); {found}. {fix}")


def _cache_key(spark: Any) -> tuple[str, str]:
    if is_connect(spark):
        return ("connect", str(getattr(spark, "session_id", id(spark))))
    return ("classic", str(spark.sparkContext.applicationId))


def check_workers(spark: Any) -> None:
    """Check once per SparkContext (Connect: per session) that the Python workers of
    ``spark`` import the same hudi_ds as the driver.

    Raises:
        SparkSetupError: they cannot (the message names the interpreter the workers ran,
            the import error, and what to set: ``PYSPARK_PYTHON`` / ``spark.pyspark.python``,
            ``--archives``, ``spark.submit.pyFiles``).
    """
    key = _cache_key(spark)
    with _lock:
        if key in _passed:
            return
    error = setup_error(
        probe_workers(spark),
        driver_version(),
        connect=is_connect(spark),
        configured=_configured_python(spark),
        env_python=os.environ.get(PYTHON_ENV) or None,
        driver_python=sys.executable,
    )
    if error is not None:
        raise error
    with _lock:
        _passed.add(key)


def require_data_source_api(spark: Any) -> None:
    """Refuse a session whose pyspark cannot register Python data sources.

    Raises:
        UnsupportedError: no ``spark.dataSource`` (pyspark < 4.0, or a Spark Connect client
            without the Python Data Source API).
    """
    if getattr(spark, "dataSource", None) is None:
        import pyspark

        kind = "Spark Connect session" if is_connect(spark) else "SparkSession"
        raise UnsupportedError(
            f"this {kind} (pyspark {pyspark.__version__}) has no spark.dataSource: the hudi_py "
            "data source needs pyspark >= 4.0's Python Data Source API (on Spark Connect, "
            "pyspark >= 4.0 on both the client and the server)"
        )
