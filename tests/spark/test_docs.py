"""The ``<!-- doc-test: spark -->`` snippets of the docs (docs/spark.md, then
docs/troubleshooting.md), run as a new user runs them: a fresh interpreter, a plain
``SparkSession``, the environment deciding which Python Spark's workers run.

The blocks run in order as one script (they share ``spark``, ``opts`` and ``path``), the tables
under this test's tmp dir instead of ``/tmp/hudi_ds_docs`` (tests/doc_blocks.py has the
convention):

* ``PYSPARK_PYTHON`` unset, ``python3`` on ``PATH`` the base interpreter this venv was made from
  (``sys.base_prefix``), ``PYTHONPATH`` cleared: the workers cannot import hudi_ds, and
  ``register(spark)`` fails with ``SparkSetupError`` saying what to set; nothing is written.
  This run is the first block up to its ``register(spark)`` line: nothing after it can run.
* ``PYSPARK_PYTHON`` this interpreter: the snippets write and read the tables; hudi-rs reads
  the rows they wrote.

The driver always imports this checkout's hudi_ds (the script puts it first on ``sys.path``),
never through ``PYTHONPATH``, which Spark hands on to its workers.
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


def _script(body: str, base: Path) -> str:
    return f"import sys\nsys.path.insert(0, {str(REPO)!r})\n" + body.replace(DOC_PATH, str(base))


def _run(tmp: Path, env: dict[str, str], body: str) -> subprocess.Popen[str]:
    tmp.mkdir()
    script = tmp / "quickstart.py"
    script.write_text(_script(body, tmp / "tables"))
    return subprocess.Popen(
        [sys.executable, str(script)],
        cwd=tmp,  # no hudi_ds in the workers' working directory either
        # the driver JVM C1-only with the serial GC (as the suite's other JVMs): flags of the
        # JVM alone, not seen by the snippets or by Spark's choice of the workers' Python
        env={**env, "SPARK_SUBMIT_OPTS": JVM_OPTS},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
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
    unset = _clean_env()
    unset["PATH"] = f"{bin_dir}{os.pathsep}{unset.get('PATH', '')}"
    ok = {**_clean_env(), "PYSPARK_PYTHON": sys.executable, "PYTHONPATH": str(REPO)}

    # both at once: each is mostly JVM and worker start-up
    bad_proc = _run(tmp_path / "unset", unset, setup_snippet())
    good_proc = _run(tmp_path / "set", ok, "\n".join(doc_snippets()))
    bad_out, bad_err = bad_proc.communicate(timeout=600)
    good_out, good_err = good_proc.communicate(timeout=600)

    assert bad_proc.returncode != 0, bad_out[-2000:]
    assert "hudi_ds.errors.SparkSetupError" in bad_err, bad_err[-4000:]
    assert "neither spark.pyspark.python nor PYSPARK_PYTHON is set" in bad_err
    assert f"{bin_dir / 'python3'}" in bad_err  # the interpreter the workers ran
    assert "No module named 'hudi_ds'" in bad_err
    assert f"export PYSPARK_PYTHON={sys.executable}" in bad_err
    assert "PYTHON_DATA_SOURCE_ERROR" not in bad_err
    assert not (tmp_path / "unset" / "tables").exists()  # refused before anything is written

    assert good_proc.returncode == 0, good_err[-4000:]
    table = tmp_path / "set" / "tables" / "trips"
    want = [("t1", "sf", 12.5), *_first_rows()[1:]]
    assert_rows(hudi_rs_table(str(table)), want, ["id", "city", "fare"])
    assert_rows(hudi_ds.read(str(table)), want, ["id", "city", "fare"])
    # show() of the quick start, then local_session()'s count, then the Spark SQL section's
    # view before and after its insert (re-created) and its time travel to the first commit,
    # then the MERGE section's metrics and rows, then troubleshooting.md's SchemaError (caught
    # as its own class through hudi_errors())
    assert re.search(r"\|\s*t1\|\s*sf\|\s*12\.5\|", good_out), good_out
    assert good_out.strip().splitlines()[-7:] == [
        "3",
        "3",
        "4",
        "3",
        "1 1 1",
        "[('t2', 31.0), ('t9', 5.0)]",
        "record key field 'id' holds 1 null value(s)",
    ], good_out
    by_city = tmp_path / "set" / "tables" / "trips_by_city"
    assert_rows(hudi_rs_table(str(by_city)), _first_rows(), ["id", "city", "fare"])
    assert sorted(p.name for p in by_city.iterdir() if not p.name.startswith(".")) == [
        "nyc",
        "sf",
    ]
    dml_rows = [("t2", "nyc", 31.0), ("t9", "la", 5.0)]
    for read in (hudi_rs_table, hudi_ds.read):
        assert_rows(
            read(str(tmp_path / "set" / "tables" / "trips_dml")), dml_rows, ["id", "city", "fare"]
        )
    sql_rows = [*want, ("t4", "la", 9.5)]
    sql_rows[0] = ("t1", "sf", 10.0)  # the SQL section writes the quick start's first rows
    assert_rows(
        hudi_rs_table(str(tmp_path / "set" / "tables" / "trips_sql")),
        sql_rows,
        ["id", "city", "fare"],
    )
