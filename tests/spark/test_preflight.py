"""``register(spark)``'s workers check without a JVM: the verdict on a probe's report, the
Spark Connect paths and the per-context cache (fake sessions; the real thing runs in
test_docs.py)."""

from __future__ import annotations

from typing import Any

import pytest

import hudi_ds
from hudi_ds.errors import ConfigError, HudiError, SparkSetupError, UnsupportedError
from hudi_ds.spark import HudiDataSource, preflight, register
from hudi_ds.spark.preflight import WorkerReport, setup_error

VERSION = hudi_ds.__version__


def test_a_worker_with_the_same_hudi_ds_passes() -> None:
    report = WorkerReport("/venv/bin/python", "3.11.7", VERSION, "/venv/hudi_ds/__init__.py")
    assert setup_error(report, VERSION) is None


def test_a_worker_without_hudi_ds_names_the_interpreter_and_what_to_set() -> None:
    report = WorkerReport(
        "/usr/bin/python3", "3.11.2", error="ModuleNotFoundError: No module named 'hudi_ds'"
    )
    err = setup_error(report, VERSION, driver_python="/venv/bin/python")
    assert isinstance(err, SparkSetupError)
    assert isinstance(err, ConfigError) and isinstance(err, HudiError)
    msg = str(err)
    assert "neither spark.pyspark.python nor PYSPARK_PYTHON is set" in msg
    assert "/usr/bin/python3 (Python 3.11.2)" in msg
    assert "No module named 'hudi_ds'" in msg
    assert "export PYSPARK_PYTHON=/venv/bin/python" in msg
    assert "spark.pyspark.python" in msg and "--archives" in msg
    # only recipes docs/spark.md says work on a cluster: not the ./env/bin/python one
    assert "--conf spark.pyspark.python=./env/bin/python" not in msg
    assert "form fails on a standalone cluster" in msg
    # the --archives recipe docs/spark.md tests: the nodes' python3, the archive's packages
    assert "spark.executorEnv.PYTHONPATH=./env/lib/pythonX.Y/site-packages" in msg
    assert "docs/spark.md, 'Shipping hudi_ds to the executors'" in msg
    assert "spark.submit.pyFiles" in msg and "spark.stop()" in msg


def test_the_setting_that_chose_the_interpreter_is_named() -> None:
    report = WorkerReport("/opt/py", "3.10.1", error="ModuleNotFoundError: x")
    by_conf = str(setup_error(report, VERSION, configured="/opt/py", env_python="/other"))
    assert "(spark.pyspark.python=/opt/py)" in by_conf
    by_env = str(setup_error(report, VERSION, env_python="/opt/py"))
    assert "(PYSPARK_PYTHON=/opt/py)" in by_env


def test_another_hudi_ds_version_on_the_workers_is_refused() -> None:
    report = WorkerReport("/venv/bin/python", "3.11.7", "0.0.1", "/old/hudi_ds/__init__.py")
    msg = str(setup_error(report, VERSION))
    assert "imports hudi_ds 0.0.1 from /old/hudi_ds/__init__.py" in msg
    assert f"the driver runs hudi_ds {VERSION}" in msg


def test_a_failed_probe_job_is_reported() -> None:
    report = WorkerReport(job_error='Py4JJavaError: Cannot run program "/nope": error=2')
    msg = str(setup_error(report, VERSION, configured="/nope"))
    assert "the probe job failed: Py4JJavaError: Cannot run program" in msg
    assert "(spark.pyspark.python=/nope)" in msg


class _Registry:
    def __init__(self) -> None:
        self.registered: list[type] = []

    def register(self, cls: type) -> None:
        self.registered.append(cls)


class _Conf:
    def __init__(self) -> None:
        self.values: dict[str, str] = {}

    def get(self, key: str, default: Any = None) -> Any:
        return self.values.get(key, default)

    def set(self, key: str, value: str) -> None:
        self.values[key] = value


def _connect_session(with_data_source: bool = True) -> Any:
    """An object that looks like a Spark Connect session to ``register``."""
    attrs: dict[str, Any] = {"__module__": "pyspark.sql.connect.session"}
    cls = type("SparkSession", (), attrs)
    spark = cls()
    spark.conf = _Conf()
    spark.session_id = f"session-{id(spark)}"
    if with_data_source:
        spark.dataSource = _Registry()
    return spark


def test_a_connect_session_without_the_data_source_api_is_refused() -> None:
    spark = _connect_session(with_data_source=False)
    assert preflight.is_connect(spark)
    with pytest.raises(UnsupportedError, match=r"Spark Connect session \(pyspark [0-9.]+\).*"):
        register(spark)


def test_connect_workers_without_hudi_ds_are_refused_before_registering(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    spark = _connect_session()
    report = WorkerReport("/srv/python3", "3.11.7", error="ModuleNotFoundError: hudi_ds")
    monkeypatch.setattr(preflight, "probe_workers", lambda s: report)
    with pytest.raises(
        SparkSetupError, match="Spark Connect server runs the hudi_py data source"
    ) as e:
        register(spark)
    assert spark.dataSource.registered == []
    # an install pip can do: hudi_ds is on no package index
    assert "pip install /path/to/hudi_ds-checkout" in str(e.value)
    assert "docs/install.md" in str(e.value) and "hudi_ds[" not in str(e.value)


def test_a_passing_check_runs_once_per_session(monkeypatch: pytest.MonkeyPatch) -> None:
    spark = _connect_session()
    calls = []

    def probe(s: Any) -> WorkerReport:
        calls.append(s)
        return WorkerReport("/venv/bin/python", "3.11.7", VERSION, "/x/hudi_ds/__init__.py")

    monkeypatch.setattr(preflight, "probe_workers", probe)
    assert register(spark) is HudiDataSource
    assert register(spark) is HudiDataSource
    assert len(calls) == 1
    assert spark.dataSource.registered == [HudiDataSource, HudiDataSource]
    other = _connect_session()
    register(other)
    assert len(calls) == 2  # another session: checked again
