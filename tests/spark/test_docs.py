"""The ``<!-- doc-test: spark -->`` snippets of the docs (docs/spark.md, then
docs/troubleshooting.md), run as a new user runs them: a fresh interpreter, a plain
``SparkSession``, the environment deciding which Python Spark's workers run.

One driver process, two sessions one after the other, as docs/spark.md tells a user to recover
("after changing it, call ``spark.stop()`` and build the session again"):

* first ``PYSPARK_PYTHON`` unset, ``python3`` on ``PATH`` the base interpreter this venv was
  made from (``sys.base_prefix``), ``PYTHONPATH`` cleared: the workers cannot import hudi_ds,
  and the first block's ``register(spark)`` fails with ``SparkSetupError`` saying what to set;
  nothing is written. Only the first block up to that line runs: nothing after it could;
* then, the session stopped, ``PYSPARK_PYTHON`` set: the blocks run in order as one script
  (they share ``spark``, ``opts`` and ``path``) and write and read the tables; hudi-rs reads
  the rows they wrote.

The tables go under this test's tmp dir instead of ``/tmp/hudi_ds_docs`` (tests/doc_blocks.py
has the convention). The driver always imports this checkout's hudi_ds (the script puts it
first on ``sys.path``), never through ``PYTHONPATH``, which Spark hands on to its workers; the
workers' interpreter of the second session is this one, with this checkout on its path. The
second session reuses the first one's JVM: one JVM start instead of two.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import hudi_ds
from tests.conftest import assert_rows, hudi_rs_table
from tests.doc_blocks import REPO, labelled
from tests.spark.standalone import JVM_OPTS

pytestmark = [pytest.mark.spark, pytest.mark.slow]

LABEL = "spark"  # the blocks marked <!-- doc-test: spark -->
PAGES = ("docs/spark.md", "docs/troubleshooting.md")
DOC_PATH = "/tmp/hudi_ds_docs"
REFUSED = "== the setup was refused"


def doc_snippets() -> list[str]:
    """The ``<!-- doc-test: spark -->`` blocks of :data:`PAGES`, in order."""
    blocks = [b.code for page in PAGES for b in labelled(page, LABEL)]
    assert blocks, f"no <!-- doc-test: {LABEL} --> block in {PAGES}"
    return blocks


def setup_snippet() -> str:
    """The first block up to its ``register(spark)`` line (the workers check)."""
    first = doc_snippets()[0]
    end = first.index("register(spark)")
    return first[: first.index("\n", end) + 1]


def _script(tables: Path, workers_python: Path) -> str:
    """The driver script: the refused setup, then (session stopped, ``PYSPARK_PYTHON`` set)
    every block."""
    setup = setup_snippet().replace(DOC_PATH, str(tables))
    body = "\n".join(doc_snippets()).replace(DOC_PATH, str(tables))
    return "\n".join(
        [
            "import os, sys, traceback",
            f"sys.path.insert(0, {str(REPO)!r})",
            "try:",
            "    exec(compile(" + repr(setup) + ", 'setup', 'exec'))",
            "except Exception:",
            "    traceback.print_exc()",
            f"    print({REFUSED!r}, file=sys.stderr, flush=True)",
            "else:",
            "    sys.exit('register(spark) passed with workers that cannot import hudi_ds')",
            f"assert not os.path.exists({str(tables)!r}), 'the refused setup wrote'",
            "from pyspark.sql import SparkSession",
            "SparkSession.builder.getOrCreate().stop()",
            f"os.environ['PYSPARK_PYTHON'] = {str(workers_python)!r}",
            body,
        ]
    )


def _first_rows() -> list[tuple[str, str, float]]:
    """The quick start's first rows (``trips``), as (id, city, fare)."""
    return [("t1", "sf", 10.0), ("t2", "nyc", 22.5), ("t3", "sf", 7.0)]


def _clean_env() -> dict[str, str]:
    drop = {"PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "PYTHONPATH", "SPARK_HOME"}
    return {k: v for k, v in os.environ.items() if k not in drop}


def test_doc_snippets_from_a_plain_session(tmp_path: Path) -> None:
    base_python = Path(sys.base_prefix) / "bin" / "python3"
    assert base_python.exists(), base_python
    probe = subprocess.run(
        [str(base_python), "-c", "import hudi_ds"],
        env=_clean_env(),
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert probe.returncode != 0, "the base interpreter imports hudi_ds: no 'not importable' case"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "python3").symlink_to(base_python)
    # the second session's workers: this interpreter with this checkout first on its path (the
    # JVM, started without PYTHONPATH for the first session, cannot hand it on)
    workers = bin_dir / "python-with-checkout"
    workers.write_text(f'#!/bin/sh\nPYTHONPATH={REPO} exec {sys.executable} "$@"\n')
    workers.chmod(0o755)
    env = _clean_env()
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    # the driver JVM C1-only with the serial GC (as the suite's other JVMs): flags of the JVM
    # alone, not seen by the snippets or by Spark's choice of the workers' Python
    env["SPARK_SUBMIT_OPTS"] = JVM_OPTS
    work = tmp_path / "work"  # no hudi_ds in the workers' working directory either
    work.mkdir()
    script = work / "quickstart.py"
    tables = tmp_path / "tables"
    script.write_text(_script(tables, workers))
    proc = subprocess.run(
        [sys.executable, str(script)],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    err, out = proc.stderr, proc.stdout
    assert REFUSED in err, err[-4000:]
    bad_err = err[: err.index(REFUSED)]
    assert "hudi_ds.errors.SparkSetupError" in bad_err, bad_err[-4000:]
    assert "neither spark.pyspark.python nor PYSPARK_PYTHON is set" in bad_err
    assert f"{bin_dir / 'python3'}" in bad_err  # the interpreter the workers ran
    assert "No module named 'hudi_ds'" in bad_err
    assert f"export PYSPARK_PYTHON={sys.executable}" in bad_err
    assert "PYTHON_DATA_SOURCE_ERROR" not in bad_err

    assert proc.returncode == 0, err[-4000:]
    table = tables / "trips"
    want = [("t1", "sf", 12.5), *_first_rows()[1:]]
    assert_rows(hudi_rs_table(str(table)), want, ["id", "city", "fare"])
    assert_rows(hudi_ds.read(str(table)), want, ["id", "city", "fare"])
    # show() of the quick start, then local_session()'s count, then the Spark SQL section's
    # view before and after its insert (re-created) and its time travel to the first commit,
    # then the MERGE section's metrics and rows, then cluster_by_bucket's count, then
    # troubleshooting.md's SchemaError (caught as its own class through hudi_errors())
    assert re.search(r"\|\s*t1\|\s*sf\|\s*12\.5\|", out), out
    assert out.strip().splitlines()[-8:] == [
        "3",
        "3",
        "4",
        "3",
        "1 1 1",
        "[('t2', 31.0), ('t9', 5.0)]",
        "3",
        "record key field 'id' holds 1 null value(s)",
    ], out
    dml_rows = [("t2", "nyc", 31.0), ("t9", "la", 5.0)]
    for read in (hudi_rs_table, hudi_ds.read):
        assert_rows(read(str(tables / "trips_dml")), dml_rows, ["id", "city", "fare"])
    sql_rows = [*want, ("t4", "la", 9.5)]
    sql_rows[0] = ("t1", "sf", 10.0)  # the SQL section writes the quick start's first rows
    assert_rows(hudi_rs_table(str(tables / "trips_sql")), sql_rows, ["id", "city", "fare"])
    # the partitionBy section's table, partitioned through Hudi's option
    by_city = tables / "trips_by_city"
    assert_rows(hudi_rs_table(str(by_city)), _first_rows(), ["id", "city", "fare"])
    assert sorted(p.name for p in by_city.iterdir() if not p.name.startswith(".")) == [
        "nyc",
        "sf",
    ]
    assert_rows(
        hudi_rs_table(str(tables / "trips_clustered")), _first_rows(), ["id", "city", "fare"]
    )
    assert not (tables / "nulls").exists()  # the refused write wrote nothing
