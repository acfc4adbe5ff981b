"""Option validation at every entry point: unknown keys refused with "did you mean",
keys without effect warn why, bad values and bad option containers refused naming key and
value, before anything is written."""

from __future__ import annotations

import os
import subprocess
import sys
import warnings
from pathlib import Path

import pyarrow as pa
import pytest

import hudi_ds
from hudi_ds.config import IGNORED_HUDI_KEYS, Options, all_scopes
from hudi_ds.errors import ConfigError, IgnoredOptionWarning, SchemaError
from tests.conftest import assert_rows, hudi_rs_table, table_options

REPO = Path(__file__).resolve().parents[1]
OPTS = table_options("t")
COLUMNS = ["id", "ts", "v"]


def data(n: int = 3) -> pa.Table:
    return pa.table(
        {
            "id": pa.array([f"k{i}" for i in range(n)], pa.string()),
            "ts": pa.array(range(n), pa.int64()),
            "v": pa.array([float(i) for i in range(n)], pa.float64()),
        }
    )


def expected(n: int = 3) -> list[tuple]:
    return [(f"k{i}", i, float(i)) for i in range(n)]


def fresh(code: str) -> subprocess.CompletedProcess[str]:
    """``code`` in a fresh interpreter, as a user's script runs."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120
    )


@pytest.mark.parametrize(
    ("key", "suggestion"),
    [
        ("write.batch.sise", "write.batch.size"),  # Flink-style key
        ("hoodie.datasource.write.recordkey.feild", "hoodie.datasource.write.recordkey.field"),
        ("as.of.instan", "as.of.instant"),  # a read option given to a write
        ("hoodie.cleaner.comits.retained", "hoodie.cleaner.commits.retained"),
    ],
)
def test_unknown_write_keys_refused_before_anything_is_written(
    tmp_path: Path, key: str, suggestion: str
) -> None:
    path = tmp_path / "t"
    with pytest.raises(ConfigError) as e:
        hudi_ds.write(str(path), data(), {**OPTS, key: "1"})
    assert f"unknown option '{key}'" in str(e.value)
    assert f"did you mean '{suggestion}'?" in str(e.value)
    assert not path.exists()


def test_unknown_read_key_refused_not_ignored(tmp_path: Path) -> None:
    """``as.of.instan`` used to return the latest snapshot instead of time travel."""
    path = str(tmp_path / "t")
    first = hudi_ds.write(path, data(2), OPTS)
    hudi_ds.write(path, data(3), OPTS)
    with pytest.raises(
        ConfigError, match=r"unknown option 'as.of.instan'.*did you mean 'as.of.instant'"
    ):
        hudi_ds.read(path, options={"as.of.instan": first})
    with pytest.raises(ConfigError, match="did you mean 'as.of.instant'"):
        hudi_ds.HudiTable(path).read({"as.of.instan": first})
    assert_rows(hudi_ds.read(path, options={"as.of.instant": first}), expected(2), COLUMNS)


def test_invalid_values_and_containers_name_key_and_value(tmp_path: Path) -> None:
    path = tmp_path / "t"
    cases = [
        ({**OPTS, "write.task.max.size": "-5"}, "'write.task.max.size'", "'-5'"),
        ({**OPTS, "write.task.max.size": -5}, "'write.task.max.size'", "'-5'"),
        (
            {**OPTS, "hoodie.bucket.index.num.buckets": {"n": 4}},
            "'hoodie.bucket.index.num.buckets'",
            "{'n': 4}",
        ),
        ({**OPTS, "hoodie.metadata.enable": object}, "'hoodie.metadata.enable'", "type"),
        (
            {**OPTS, "hoodie.index.bucket.engine": "CONSISTENT"},
            "'hoodie.index.bucket.engine'",
            "'CONSISTENT'",
        ),
        ({**OPTS, "write.batch.size": float("nan")}, "'write.batch.size'", "nan"),
        (
            {**OPTS, "hoodie.table.timeline.timezone": "LOCAL"},
            "'hoodie.table.timeline.timezone'",
            "'LOCAL'",
        ),
    ]
    for options, key, value in cases:
        with pytest.raises(ConfigError) as e:
            hudi_ds.write(str(path), data(), options)
        assert key in str(e.value) and value in str(e.value), str(e.value)
    for bad in ([("hoodie.table.name", "t")], "hoodie.table.name=t"):
        with pytest.raises(ConfigError, match="options must be a mapping"):
            hudi_ds.write(str(path), data(), bad)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="option key 1"):
        Options.of({1: "x"})
    assert not path.exists()
    hudi_ds.write(str(path), data(), OPTS)
    with pytest.raises(ConfigError, match="options must be a mapping"):
        hudi_ds.read(str(path), options=["as.of.instant"])  # type: ignore[arg-type]
    assert_rows(hudi_rs_table(str(path)), expected(), COLUMNS)


def test_keys_without_effect_warn_why(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    with pytest.warns(
        IgnoredOptionWarning,
        match=r"'hoodie.datasource.hive_sync.enable'='true' has no effect.*catalog sync",
    ):
        hudi_ds.write(path, data(), {**OPTS, "hoodie.datasource.hive_sync.enable": "true"})
    with pytest.warns(IgnoredOptionWarning, match=r"'hoodie.clean.async'.*synchronously"):
        hudi_ds.write(path, data(), {**OPTS, "hoodie.clean.async": "true"})
    assert_rows(hudi_rs_table(path), expected(), COLUMNS)
    # every ignored key says why, and none is also a key we act on
    known = {
        k.lower()
        for s in all_scopes()
        for p in vars(s).values()
        if hasattr(p, "all_keys")
        for k in p.all_keys()
    }
    for key, why in IGNORED_HUDI_KEYS.items():
        assert why and key.lower() not in known, key
    # the metadata table option is acted on (not ignored): false leaves no metadata table
    p2 = str(tmp_path / "t2")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        hudi_ds.write(p2, data(), {**OPTS, "hoodie.metadata.enable": "false"})
    assert not (Path(p2) / ".hoodie" / "metadata").exists()
    hudi_ds.write(p2, data(), {**OPTS, "hoodie.metadata.enable": "true"})
    assert (Path(p2) / ".hoodie" / "metadata" / ".hoodie" / "hoodie.properties").exists()


def test_key_generator_we_cannot_honour_is_refused(tmp_path: Path) -> None:
    """A key generator hudi_ds cannot reproduce on a new table is refused, not replaced by the
    simple one; a TimestampBasedKeyGenerator without its timestamp type likewise (the simple
    one wrote the partition '1700000000000')."""
    path = tmp_path / "t"
    base = {**OPTS, "hoodie.datasource.write.partitionpath.field": "ts"}
    cls = "hoodie.datasource.write.keygenerator.class"
    with pytest.raises(ConfigError, match="keygenerator.class"):
        hudi_ds.write(
            str(path), data(), {**base, cls: "org.apache.hudi.keygen.GlobalDeleteKeyGenerator"}
        )
    timestamp = {**base, cls: "org.apache.hudi.keygen.TimestampBasedKeyGenerator"}
    with pytest.raises(ConfigError, match="'hoodie.keygen.timebased.timestamp.type' is required"):
        hudi_ds.write(str(path), data(), timestamp)
    assert not path.exists()


def test_refused_first_write_leaves_nothing_and_the_retry_succeeds(tmp_path: Path) -> None:
    path = tmp_path / "t"
    bad = data().set_column(0, "id", pa.array(["k0", None, "k2"]))
    with pytest.raises(SchemaError, match="'id'"):
        hudi_ds.write(str(path), bad, OPTS)
    assert not (path / ".hoodie").exists()
    with pytest.raises(SchemaError, match="'nope'"):
        hudi_ds.write(
            str(path), data(), {**OPTS, "hoodie.datasource.write.recordkey.field": "nope"}
        )
    assert not (path / ".hoodie").exists()
    hudi_ds.write(str(path), data(), OPTS)
    assert_rows(hudi_rs_table(str(path)), expected(), COLUMNS)


def test_zero_row_writes_follow_hudi(tmp_path: Path) -> None:
    """Apache Hudi commits an empty instant for an empty input (hoodie.allow.empty.commit
    defaults to true); with false nothing is written, not even the table."""
    path = tmp_path / "t"
    skipped = hudi_ds.write(str(path), data(0), {**OPTS, "hoodie.allow.empty.commit": "false"})
    assert skipped is None and not path.exists()
    # an empty input is still checked
    with pytest.raises(SchemaError, match="'id'"):
        hudi_ds.write(
            str(path), data(0).drop_columns(["id"]), {**OPTS, "hoodie.allow.empty.commit": "false"}
        )
    empty = hudi_ds.write(str(path), data(0), OPTS)
    assert empty is not None
    table = hudi_ds.HudiTable(str(path))
    assert [i.requested_time for i in table.timeline.commits()] == [empty]
    assert table.read().num_rows == 0
    first = hudi_ds.write(str(path), data(), OPTS)
    assert hudi_ds.write(str(path), data(0), {**OPTS, "hoodie.allow.empty.commit": "false"}) is None
    table.refresh()
    assert [i.requested_time for i in table.timeline.commits()] == [empty, first]
    assert_rows(hudi_rs_table(str(path)), expected(), COLUMNS)


def test_read_arguments_refused_clearly(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    hudi_ds.write(path, data(), OPTS)
    with pytest.raises(
        ConfigError, match=r"columns must be a list of column names, not the string 'id'"
    ):
        hudi_ds.read(path, columns="id")
    with pytest.raises(ConfigError, match=r"filter \('ts', '=', 'x'\).*column 'ts' of type int64"):
        hudi_ds.read(path, filters=[("ts", "=", "x")])
    with pytest.raises(
        ConfigError, match=r"filter \('v', 'in', \['a'\]\).*column 'v' of type double"
    ):
        hudi_ds.read(path, filters=[("v", "in", ["a"])])
    with pytest.raises(ConfigError, match=r"pass \[\('ts', '=', 1\)\]"):
        hudi_ds.read(path, filters=("ts", "=", 1))  # type: ignore[arg-type]
    import pyarrow.compute as pc

    with pytest.raises(ConfigError, match="filters must be a list of"):
        hudi_ds.read(path, filters=pc.field("ts") == 1)  # type: ignore[arg-type]
    assert_rows(
        hudi_ds.read(path, columns=["id", "ts", "v"], filters=[("ts", ">=", 1)]),
        expected()[1:],
        COLUMNS,
    )


def test_spark_option_keys_checked_without_a_jvm() -> None:
    """The Spark data source's options: hudi_py.* and Spark's stream keys are known, typos are
    refused with the closest key (no SparkSession needed: the check runs on the driver)."""
    pytest.importorskip("pyspark")
    from hudi_ds.spark.options import SparkStreamConfig, split_options

    path, hudi, conn = split_options(
        {
            "path": "/t",
            "maxCommitsPerTrigger": "2",
            "hoodie.table.name": "t",
            "hudi_py.read.parallelism": "3",
        }
    )
    assert path == "/t" and hudi == {"hoodie.table.name": "t"}
    assert conn == {SparkStreamConfig.MAX_COMMITS.key: "2", "hudi_py.read.parallelism": "3"}
    for key, hint in [
        ("maxCommitPerTrigger", "maxCommitsPerTrigger"),
        ("maxcommitpertrigger", "maxCommitsPerTrigger"),  # Spark lower-cases keys
        ("hudi_py.read.paralelism", "hudi_py.read.parallelism"),
        ("write.batch.sise", "write.batch.size"),
        ("as.of.instan", "as.of.instant"),
    ]:
        with pytest.raises(ConfigError, match=f"did you mean '{hint}'"):
            split_options({"path": "/t", key: "1"})
    with pytest.raises(ConfigError, match=r"'maxRowsPerTrigger'"):
        split_options({"path": "/t", "maxRowsPerTrigger": "0"})


def test_fresh_interpreter_errors() -> None:
    """As a user meets them: a typo in a fresh interpreter, and hudi_ds.spark without pyspark."""
    typo = fresh(
        "import hudi_ds, pyarrow as pa\n"
        "hudi_ds.write('/nonexistent/never', pa.table({'id': [1]}), "
        "{'hoodie.table.name': 't', 'write.batch.sise': '8'})"
    )
    assert typo.returncode == 1
    assert "hudi_ds.errors.ConfigError: unknown option 'write.batch.sise'" in typo.stderr
    assert "did you mean 'write.batch.size'" in typo.stderr
    no_spark = fresh(
        "import sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'pyspark' or name.startswith('pyspark.'):\n"
        "            raise ModuleNotFoundError(\"No module named 'pyspark'\", name=name)\n"
        "sys.meta_path.insert(0, Block())\n"
        "import hudi_ds\n"
        "try:\n"
        "    import hudi_ds.spark\n"
        "except ImportError as e:\n"
        "    print(e)\n"
    )
    assert no_spark.returncode == 0, no_spark.stderr
    # hudi_ds is on no package index: the hint names what pip can find
    assert 'pip install "pyspark[sql]>=4.0"' in no_spark.stdout
    assert "hudi_ds[spark]" not in no_spark.stdout


def test_table_options_checked_when_the_table_is_opened(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    hudi_ds.write(path, data(), OPTS)
    with pytest.raises(ConfigError, match="did you mean 'as.of.instant'"):
        hudi_ds.HudiTable(path, {"as.of.instan": "20240101000000"})
    with pytest.raises(ConfigError, match="options must be a mapping"):
        hudi_ds.HudiTable(path, ["hoodie.table.name"])  # type: ignore[arg-type]
    t = hudi_ds.HudiTable(path, OPTS)  # write options serve reads too
    assert_rows(t.read(), expected(), COLUMNS)
    assert issubclass(hudi_ds.IgnoredOptionWarning, hudi_ds.HudiWarning)
    assert issubclass(hudi_ds.ConfigError, hudi_ds.HudiError)


def test_every_entry_validates_from_one_registry(tmp_path: Path) -> None:
    """The write client, a table's reads, the services, the CLI, the engine API and the Spark
    source's option split know the same keys: a key one accepts, every one accepts, and an
    unknown key gets the same error everywhere (a write option given to a read, or a service
    option given to a write, is never "unknown" at one entry and known at another)."""
    import io

    from hudi_ds import engine
    from hudi_ds.cli import main as cli_main
    from hudi_ds.services.base import ServiceContext
    from hudi_ds.spark.options import split_options
    from hudi_ds.write.client import WriteClient

    path = str(tmp_path / "t")
    hudi_ds.write(path, data(), OPTS)
    shared = {
        "hoodie.datasource.write.partitions.to.delete": "p0",
        "hoodie.cleaner.commits.retained": "3",
        "as.of.instant": "20240101000000",
        "hoodie.write.lock.wait_time_ms": "100",
    }
    entries = {
        "write": lambda o: WriteClient(path, {**OPTS, **o}),
        "table": lambda o: hudi_ds.HudiTable(path, o),
        "read": lambda o: hudi_ds.HudiTable(path)._read_options(o),
        "service": lambda o: ServiceContext.open(path, o),
        "engine": engine.validate_options,
        # the Spark source splits its own keys off, then the core validates the rest
        "spark": lambda o: engine.validate_options(split_options({"path": path, **o})[1]),
    }
    typo = {"hoodie.cleaner.comits.retained": "3"}
    contradiction = {"hoodie.keep.min.commits": "5", "hoodie.keep.max.commits": "4"}
    for entry in entries.values():
        entry(shared)  # every entry knows every key of the registry
        with pytest.raises(ConfigError, match=r"unknown option 'hoodie\.cleaner\.comits\."):
            entry(typo)
        with pytest.raises(ConfigError, match="must be greater than"):
            entry(contradiction)
    err = io.StringIO()
    assert (
        cli_main(["timeline", path, "-o", "hoodie.cleaner.comits.retained=3"], io.StringIO(), err)
        != 0
    )
    assert "unknown option 'hoodie.cleaner.comits.retained'" in err.getvalue()
    ok = cli_main(
        ["timeline", path, *(a for k, v in shared.items() for a in ("-o", f"{k}={v}"))],
        io.StringIO(),
        io.StringIO(),
    )
    assert ok == 0
