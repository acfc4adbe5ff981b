"""Options of the ``hudi_py`` Spark data source.

Hudi's own ``hoodie.*`` keys mean what they mean in the embedded API and are validated by it.
Keys that only make sense inside Spark live in the ``hudi_py.`` namespace (Hudi has no key for
them); they are validated here and never reach the embedded API. Spark's own streaming options
(``maxCommitsPerTrigger``, ``maxRowsPerTrigger``, ``checkpointLocation``) are
:class:`SparkStreamConfig`. Every other key must be one of the core's options: an unknown key is
refused here, before anything is planned or written, with the closest known key.

Spark hands options over lower-cased (a ``CaseInsensitiveDict``) with ``path`` added by
``load(path)`` / ``save(path)``. For a catalog table (``CREATE TABLE ... USING hudi_py``) Spark
adds keys of its own, which are never taken for the user's: its reserved table properties
(:data:`SPARK_TABLE_PROPERTIES`, ``TableCatalog.PROP_*``), ``location`` (the path, in Hadoop's
``file:/`` form), the ``OPTIONS`` again under the ``option.`` prefix
(``TableCatalog.OPTION_PREFIX``) and the ``TBLPROPERTIES``. pyspark hands a catalog table's
options to the source only while Spark infers its schema (``CREATE TABLE`` without columns): its
reads and writes get none (``PythonDataSourceV2.getTable`` drops the table's properties), so
:func:`require_path` names that cause and the temporary view that works instead.

Object store credentials and settings are data source options too, under the key names
deltalake and hudi-rs use (``aws_access_key_id``, ``aws_endpoint_url``, ``aws_region``,
``google_service_account``, ``azure_storage_account_name``, the HTTP client keys such as
``allow_http``, and ``max_retries`` / ``retry_timeout``; see :mod:`hudi_ds.object_store`), or
with the prefix ``hudi_py.storage.`` (``hudi_py.storage.aws_region``). They travel with the
table's :class:`~hudi_ds.storage.Storage` to the executors, which read and write the store
directly.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hudi_ds.config import (
    IGNORED_HUDI_KEYS,
    ConfigProperty,
    Options,
    all_scopes,
    parse_bool,
    parse_int,
    parse_positive_int,
    parse_size,
    parse_str,
    properties_of,
    unknown_option,
)
from hudi_ds.engine import TableLocation, is_option_key, is_storage_option, table_location
from hudi_ds.errors import ConfigError

PREFIX = "hudi_py."
#: the table properties Spark itself sets on a catalog table and passes to the source with its
#: options (``TableCatalog.PROP_LOCATION``, ``PROP_IS_MANAGED_LOCATION``, ``PROP_EXTERNAL``,
#: ``PROP_COMMENT``, ``PROP_COLLATION``, ``PROP_PROVIDER``, ``PROP_OWNER``:
#: ``CatalogV2Util.TABLE_RESERVED_PROPERTIES``)
SPARK_TABLE_PROPERTIES = frozenset(
    ("location", "is_managed_location", "external", "comment", "collation", "provider", "owner")
)
#: the format's name (``HudiDataSource.name()``): Spark's ``provider`` of a catalog table of it
SOURCE_NAME = "hudi_py"
#: the prefix under which Spark repeats a catalog table's OPTIONS (``TableCatalog.OPTION_PREFIX``)
SPARK_OPTION_PREFIX = "option."
#: connector options holding a storage option (``hudi_py.storage.<storage option key>``)
STORAGE_PREFIX = "hudi_py.storage."


class SparkConfig:
    """Connector-only options (``hudi_py.*``)."""

    SPLIT_BYTES = ConfigProperty(
        "hudi_py.read.split.bytes",
        128 << 20,
        parse_size,
        "Reads: file slices are packed into one Spark partition up to this many bytes "
        "(like spark.sql.files.maxPartitionBytes).",
    )
    OPEN_COST_BYTES = ConfigProperty(
        "hudi_py.read.open.cost.bytes",
        4 << 20,
        parse_size,
        "Reads: the estimated cost of opening one file slice, in bytes, added to its size when "
        "packing (like spark.sql.files.openCostInBytes).",
    )
    PARALLELISM = ConfigProperty(
        "hudi_py.read.parallelism",
        None,
        parse_int,
        "Reads: the cores the read tasks run on (like spark.default.parallelism; default: the "
        "CPU count of the planning process, i.e. the driver host). A read with enough data is "
        "spread over at least twice this many tasks, balanced by size.",
    )
    FILTER_PUSHDOWN = ConfigProperty(
        "hudi_py.read.filter.pushdown",
        None,
        parse_bool,
        "Reads: use Spark's filters for partition and bucket pruning. Needs "
        "spark.sql.python.filterPushdown.enabled=true (default: on when hudi_ds.spark.register "
        "saw that conf enabled).",
    )
    DIRECT_OBJECT_STORE = ConfigProperty(
        "hudi_py.read.direct.object.store",
        False,
        parse_bool,
        "hudi_ds.spark.read_table on a table in an object store: let Spark's own Parquet "
        "reader open its plain Parquet base files (true only when the session's Hadoop file "
        "system reads the table's URIs: S3A for s3://, the GCS connector, ABFS). Default "
        "false: every file slice is read by hudi_ds's Python tasks, as hudi_py reads it.",
    )
    READ_SLICES = ConfigProperty(
        "hudi_py.internal.read.slices",
        None,
        parse_str,
        "Internal, set by hudi_ds.spark.read_table only (not for users): the file groups this "
        'read returns and the instants its plan saw, as JSON {"instants": [...], '
        '"groups": [[partition path, file id], ...]}; the other file groups are read by '
        "Spark's Parquet reader.",
    )
    STREAMING_STATE_INDEX = ConfigProperty(
        "hudi_py.streaming.state.index",
        False,
        parse_bool,
        "Streaming writes into a SIMPLE / BLOOM / GLOBAL_* table: each Python worker keeps the "
        "record key -> file group locations of the table in memory across micro-batches "
        "(hudi_ds.index.state.StateIndex), checked against the table's latest file slices "
        "before every micro-batch, instead of reading the keys of the touched partitions' files "
        "in every task. Apache Hudi has no key for this (Flink's index.bootstrap.enabled / "
        "index.state.ttl configure Flink state).",
    )
    TEST_FAIL_PARTITION = ConfigProperty(
        "hudi_py.test.fail.partition",
        None,
        parse_int,
        "Tests only: the write task of this Spark partition raises after writing its data.",
    )
    TEST_FAIL_ATTEMPTS = ConfigProperty(
        "hudi_py.test.fail.attempts",
        1,
        parse_int,
        "Tests only: how many attempts of that task fail (then it succeeds).",
    )


class SparkStreamConfig:
    """Spark's own options of streaming queries that the ``hudi_py`` source and sink read."""

    MAX_COMMITS = ConfigProperty(
        "maxCommitsPerTrigger",
        None,
        parse_positive_int,
        "Streaming reads: data commits admitted per micro-batch (compactions do not count); "
        "default all.",
    )
    MAX_ROWS = ConfigProperty(
        "maxRowsPerTrigger",
        None,
        parse_positive_int,
        "Streaming reads: rows written by the admitted commits per micro-batch (at least one "
        "commit is admitted); default all.",
    )
    CHECKPOINT_LOCATION = ConfigProperty(
        "checkpointLocation",
        None,
        parse_str,
        "Spark's checkpoint folder of a streaming query (used by Spark; the sink records its "
        "batch ids in the table's commits).",
    )
    QUERY_NAME = ConfigProperty(
        "queryName",
        None,
        parse_str,
        "The streaming query's name: Spark Declarative Pipelines pass it to a sink among its "
        "options (used by Spark; the sink does not read it).",
    )


@dataclass(frozen=True)
class SliceRestriction:
    """The value of ``hudi_py.internal.read.slices`` (:attr:`SparkConfig.READ_SLICES`): the
    file groups a ``hudi_py`` read returns and the instants the plan that chose them saw
    (``hudi_ds.spark.read_table`` reads the other file groups with Spark's Parquet reader;
    both halves must show one snapshot).
    """

    instants: frozenset[str]
    groups: frozenset[tuple[str, str]]

    def encode(self) -> str:
        return json.dumps(
            {"instants": sorted(self.instants), "groups": sorted(map(list, self.groups))},
            separators=(",", ":"),
        )

    @classmethod
    def parse(cls, value: str | None) -> SliceRestriction | None:
        """The restriction in ``value`` (None: no restriction).

        Raises:
            ConfigError: ``value`` is not what :meth:`encode` writes (names the key).
        """
        if value is None:
            return None
        key = SparkConfig.READ_SLICES.key
        try:
            raw = json.loads(value)
            instants = frozenset(str(t) for t in raw["instants"])
            groups = frozenset((str(p), str(f)) for p, f in raw["groups"])
        except (ValueError, TypeError, KeyError) as e:
            raise ConfigError(
                f"{key}: internal option of hudi_ds.spark.read_table, not for users; "
                f"cannot parse {value[:80]!r} ({e})"
            ) from None
        return cls(instants, groups)


def split_options(options: Mapping[str, Any]) -> tuple[str | None, dict[str, str], dict[str, str]]:
    """Split Spark's options into ``(path, hudi options, connector options)``.

    Connector options (``hudi_py.*`` and :class:`SparkStreamConfig`, keyed by their declared
    key) are parsed; the Hudi options are checked to be known keys (their values are parsed by
    the core where they are used).

    Raises:
        ConfigError: an unknown key (with the closest known one) or a connector value that does
            not parse.
    """
    given = Options.of(options).raw  # refuses a non-mapping and non-scalar values
    raw = spark_catalog_options(given)
    # a catalog table's TBLPROPERTIES come with its options: table properties, not read or
    # write options (Hudi's SQL takes primaryKey, type...), so they are not refused there
    catalog = given.get("provider", "").lower() == SOURCE_NAME
    connector_props = [*properties_of(SparkConfig), *properties_of(SparkStreamConfig)]
    conn_known = {p.key.lower(): p for p in connector_props}
    core_props = [p for s in all_scopes() for p in properties_of(s)]
    path: str | None = None
    hudi: dict[str, str] = {}
    conn: dict[str, str] = {}
    for key, value in raw.items():
        if key == "path":
            path = value
        elif key.startswith(STORAGE_PREFIX) and key != STORAGE_PREFIX:
            conn[key] = value  # validated when the table's Storage is built
        elif is_storage_option(key):
            conn[STORAGE_PREFIX + key] = value
        elif key in conn_known:
            prop = conn_known[key]
            prop.parse(value)
            conn[prop.key] = value
        elif is_option_key(key):
            hudi[key] = value
        elif catalog:
            continue
        else:
            names = [
                "path",
                *(p.key for p in connector_props),
                *(k for p in core_props for k in p.all_keys()),
                *IGNORED_HUDI_KEYS,
            ]
            raise unknown_option(key, value, names)
    return path, hudi, conn


def spark_catalog_options(raw: Mapping[str, str]) -> dict[str, str]:
    """``raw`` without the keys Spark adds for a catalog table: its reserved table properties,
    and ``option.<key>`` repeating an option; ``location`` is the path when none is given (a
    Hadoop ``file:/path`` as ``file:///path``)."""
    out = {k: v for k, v in raw.items() if k not in SPARK_TABLE_PROPERTIES}
    for key, value in raw.items():
        if key.startswith(SPARK_OPTION_PREFIX) and key != SPARK_OPTION_PREFIX:
            del out[key]
            out.setdefault(key[len(SPARK_OPTION_PREFIX) :], value)
    path = out.get("path") or raw.get("location")
    if path:
        out["path"] = _hadoop_local_uri(path)
    return out


def _hadoop_local_uri(path: str) -> str:
    """Hadoop's ``file:/tmp/t`` (how Spark's catalog writes a local location) as the URI
    ``file:///tmp/t``; any other path as it is."""
    if path.startswith("file:/") and not path.startswith("file://"):
        return "file://" + path[len("file:") :]
    return path


def get(conn: Mapping[str, str], prop: ConfigProperty[Any]) -> Any:
    """The parsed value of a connector option (or its default)."""
    raw = conn.get(prop.key)
    return prop.default if raw is None else prop.parse(raw)


def storage_options(conn: Mapping[str, str]) -> dict[str, str]:
    """The storage options among the connector options (without their prefix)."""
    n = len(STORAGE_PREFIX)
    return {k[n:]: v for k, v in conn.items() if k.startswith(STORAGE_PREFIX)}


def open_path(path: str, conn: Mapping[str, str]) -> TableLocation:
    """The table at ``path`` as the core takes it (:func:`hudi_ds.engine.table_location`): with
    the storage options when there are some (they pickle with it to the executors).

    Raises:
        ConfigError: an unknown storage option (named) or a bad value.
    """
    return table_location(path, storage_options(conn))


def require_path(path: str | None) -> str:
    """The table path, or ConfigError when neither ``load(path)``/``save(path)`` gave one."""
    if not path:
        raise ConfigError(
            "no table path: use .load(path) / .save(path) or .option('path', ...). A catalog "
            "table (CREATE TABLE ... USING hudi_py, saveAsTable) cannot be read or written "
            "through: pyspark gives a Python data source none of the table's options or "
            "location (PythonDataSourceV2.getTable drops them), so name the table by a "
            "temporary view instead: CREATE TEMPORARY VIEW t USING hudi_py OPTIONS (path "
            "'/path/to/table') -- SELECT, INSERT INTO and INSERT OVERWRITE work on it "
            "(docs/spark.md, 'Spark SQL')"
        )
    return path
