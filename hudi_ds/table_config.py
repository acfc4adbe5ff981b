r"""``.hoodie/hoodie.properties``: the table's persistent configuration (``HoodieTableConfig``).

The file uses Java ``Properties.store`` syntax::

    #Updated at 2024-04-18T17:32:14.081Z      <- comment lines start with '#' or '!'
    #Thu Apr 18 17:32:14 UTC 2024
    hoodie.table.name=v6_empty                 <- key=value (or key:value, or key value)
    hoodie.table.create.schema={"type"\:"record",...}
        (':' '=' and backslash escaped, \\uXXXX for non-latin1)

and carries ``hoodie.table.checksum`` = unsigned CRC32 of UTF-8 ``"<database>.<table name>"``,
which Java validates on load.

A new table's file is written once (:meth:`TableConfig.save`); every later change goes through
:func:`update_table_config`, Hudi's backup-file protocol (``hoodie.properties.backup``), so
that a crash at any step leaves a valid config with the old or the new entries.
"""

from __future__ import annotations

import enum
import logging
import time
import zlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone

from hudi_ds.errors import ConfigError, CorruptFileError, TableNotFoundError
from hudi_ds.faults import crash_point
from hudi_ds.keygen import KeyGeneratorType
from hudi_ds.storage import Storage

log = logging.getLogger("hudi_ds.table")

PROPS_FILE = ".hoodie/hoodie.properties"
PROPS_BACKUP = ".hoodie/hoodie.properties.backup"
#: reads of a config found missing (both files) while ``.hoodie`` exists, and the pause before
#: the n-th retry (n x this); Java's ``fetchConfigs`` retries 5 times, 1 s apart
_READ_ATTEMPTS = 4
_READ_RETRY_DELAY_S = 0.05

# payload classes and merge strategy ids (Hudi's own values)
DEFAULT_PAYLOAD = "org.apache.hudi.common.model.DefaultHoodieRecordPayload"
OVERWRITE_LATEST_PAYLOAD = "org.apache.hudi.common.model.OverwriteWithLatestAvroPayload"
EVENT_TIME_STRATEGY_ID = "eeb8d96f-b1e4-49fd-bbf8-28ac514178e5"
COMMIT_TIME_STRATEGY_ID = "ce9acb64-bde0-424c-9b91-f6ebba25356d"
CUSTOM_STRATEGY_ID = "1897ef5f-18bc-4557-939c-9d6a8afd1519"
PAYLOAD_BASED_STRATEGY_ID = "00000000-0000-0000-0000-000000000000"


class TableType(enum.StrEnum):
    """``hoodie.table.type`` (Java ``HoodieTableType``); the value is what the file records."""

    COPY_ON_WRITE = "COPY_ON_WRITE"
    MERGE_ON_READ = "MERGE_ON_READ"

    @classmethod
    def parse(cls, value: str, where: str = "") -> TableType:
        """The table type ``value`` names (case-insensitive).

        Raises:
            ConfigError: neither type, naming ``hoodie.table.type`` and the value.
        """
        try:
            return cls(str(value).strip().upper())
        except ValueError:
            raise ConfigError(
                f"hoodie.table.type={value!r}{f' ({where})' if where else ''}: expected one of "
                f"{', '.join(cls)}"
            ) from None


class MergeMode(enum.StrEnum):
    """``hoodie.record.merge.mode`` (Java ``RecordMergeMode``): how versions of a key merge;
    the value is what ``hoodie.properties`` records."""

    EVENT_TIME_ORDERING = "EVENT_TIME_ORDERING"
    COMMIT_TIME_ORDERING = "COMMIT_TIME_ORDERING"
    CUSTOM = "CUSTOM"


class BaseFileFormat(enum.StrEnum):
    """``hoodie.table.base.file.format`` (Java ``HoodieFileFormat``): the format of a table's
    base files; the value is what ``hoodie.properties`` records."""

    PARQUET = "PARQUET"
    ORC = "ORC"
    HFILE = "HFILE"
    #: Hudi 1.2's Lance base files (``HoodieSparkLanceWriter``), table version 9
    LANCE = "LANCE"

    @property
    def extension(self) -> str:
        """The base file name's extension (``HoodieFileFormat.getFileExtension``)."""
        return "." + self.value.lower()

    @classmethod
    def parse(cls, value: str, where: str = "") -> BaseFileFormat:
        """The format ``value`` names (case-insensitive).

        Raises:
            ConfigError: no such format, naming ``value`` and ``where`` it was read.
        """
        try:
            return cls(str(value).strip().upper())
        except ValueError:
            raise ConfigError(
                f"{where or 'hoodie.table.base.file.format'}={value!r}: expected one of "
                f"{', '.join(cls)}"
            ) from None


#: the merge modes by their Hudi names, for the modules that test and pass them
EVENT_TIME_ORDERING = MergeMode.EVENT_TIME_ORDERING
COMMIT_TIME_ORDERING = MergeMode.COMMIT_TIME_ORDERING
CUSTOM = MergeMode.CUSTOM

#: Hudi's built-in payload classes and the merge mode Hudi 1.1 maps each onto (RFC-97).
PAYLOAD_MERGE_MODES = {
    OVERWRITE_LATEST_PAYLOAD: COMMIT_TIME_ORDERING,
    DEFAULT_PAYLOAD: EVENT_TIME_ORDERING,
    "org.apache.hudi.common.model.EventTimeAvroPayload": EVENT_TIME_ORDERING,
    "org.apache.hudi.common.model.OverwriteNonDefaultsWithLatestAvroPayload": (
        COMMIT_TIME_ORDERING
    ),
    "org.apache.hudi.common.model.PartialUpdateAvroPayload": EVENT_TIME_ORDERING,
    "org.apache.hudi.common.model.AWSDmsAvroPayload": COMMIT_TIME_ORDERING,
    "org.apache.hudi.common.model.debezium.MySqlDebeziumAvroPayload": EVENT_TIME_ORDERING,
    "org.apache.hudi.common.model.debezium.PostgresDebeziumAvroPayload": EVENT_TIME_ORDERING,
}
BUILTIN_STRATEGY_IDS = (
    EVENT_TIME_STRATEGY_ID,
    COMMIT_TIME_STRATEGY_ID,
    CUSTOM_STRATEGY_ID,
    PAYLOAD_BASED_STRATEGY_ID,
)
_NOT_CUSTOM = (EVENT_TIME_STRATEGY_ID, COMMIT_TIME_STRATEGY_ID, PAYLOAD_BASED_STRATEGY_ID)


# --------------------------------------------------------------------------- Java properties
def parse_properties(text: str) -> dict[str, str]:
    """Parse Java ``.properties`` text (logical lines, escapes, ``=``/``:``/space separators)."""
    out: dict[str, str] = {}
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i].lstrip()
        i += 1
        if not line or line[0] in "#!":
            continue
        # join continuation lines (odd number of trailing backslashes)
        while _ends_with_continuation(line) and i < len(lines):
            line = line[:-1] + lines[i].lstrip()
            i += 1
        key, value = _split_key_value(line)
        out[_unescape(key)] = _unescape(value)
    return out


def _ends_with_continuation(line: str) -> bool:
    n = len(line) - len(line.rstrip("\\"))
    return n % 2 == 1


def _split_key_value(line: str) -> tuple[str, str]:
    j = 0
    while j < len(line):
        c = line[j]
        if c == "\\":
            j += 2
            continue
        if c in "=: \t\f":
            break
        j += 1
    key = line[:j]
    rest = line[j:].lstrip(" \t\f")
    if rest[:1] in ("=", ":"):
        rest = rest[1:].lstrip(" \t\f")
    return key, rest


_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def _unescape(s: str) -> str:
    if "\\" not in s:
        return s
    out = []
    i = 0
    while i < len(s):
        c = s[i]
        if c == "\\" and i + 1 < len(s):
            n = s[i + 1]
            if n == "u" and i + 6 <= len(s):
                out.append(chr(int(s[i + 2 : i + 6], 16)))
                i += 6
                continue
            out.append(_ESCAPES.get(n, n))
            i += 2
            continue
        out.append(c)
        i += 1
    text = "".join(out)
    # \\uD83D\\uDE00 style surrogate pairs -> one code point
    return text.encode("utf-16", "surrogatepass").decode("utf-16")


def _escape(s: str, is_key: bool) -> str:
    out = []
    for idx, c in enumerate(s):
        if c in "\\=:#!":
            out.append("\\" + c)
        elif c == " " and (is_key or idx == 0):
            out.append("\\ ")
        elif c in "\t\n\r\f":
            out.append({"\t": "\\t", "\n": "\\n", "\r": "\\r", "\f": "\\f"}[c])
        elif ord(c) < 0x20 or ord(c) > 0x7E:
            data = c.encode("utf-16-be")
            for k in range(0, len(data), 2):
                out.append(f"\\u{int.from_bytes(data[k : k + 2], 'big'):04X}")
        else:
            out.append(c)
    return "".join(out)


def format_properties(props: Mapping[str, str], comment: str | None = None) -> str:
    """Format ``props`` as Java ``Properties.store`` would (sorted keys for stable diffs)."""
    now = datetime.now(timezone.utc)
    lines = [f"#{comment}"] if comment else []
    lines.append(now.strftime("#%a %b %d %H:%M:%S UTC %Y"))
    for k in sorted(props):
        lines.append(f"{_escape(k, True)}={_escape(str(props[k]), False)}")
    return "\n".join(lines) + "\n"


def table_checksum(table_name: str, database: str = "") -> int:
    """``hoodie.table.checksum``: unsigned CRC32 of UTF-8 ``"<database>.<table name>"``."""
    return zlib.crc32(f"{database}.{table_name}".encode())


# --------------------------------------------------------------------------- table properties
@dataclass(frozen=True)
class TableProperty:
    """One ``hoodie.properties`` entry (Hudi's ``HoodieTableConfig`` ``ConfigProperty``).

    Declared once, read by :class:`TableConfig`'s accessors and written by table creation
    (:mod:`hudi_ds.table_create`).

    Attributes:
        key: the key in ``hoodie.properties``.
        default: the value readers assume when the key is absent (None: no value).
    """

    key: str
    default: str | None = None

    def of(self, props: Mapping[str, str]) -> str | None:
        """The raw value in ``props`` (the default when absent)."""
        return props.get(self.key, self.default)

    def flag(self, props: Mapping[str, str]) -> bool:
        """A ``true``/``false`` entry as a bool."""
        return self.of(props) == "true"

    def items(self, props: Mapping[str, str]) -> list[str]:
        """A comma separated entry as a list (blank items dropped)."""
        return _split(self.of(props) or "")

    def entry(self, value: str | bool | int | Sequence[str]) -> tuple[str, str]:
        """``(key, text)`` to write: booleans as ``true``/``false``, lists comma separated."""
        if isinstance(value, bool):
            text = str(value).lower()
        elif isinstance(value, (str, int)):
            text = str(value)
        else:
            text = ",".join(value)
        return self.key, text


# --------------------------------------------------------------------------- TableConfig
@dataclass
class TableConfig:
    """The parsed ``hoodie.properties`` with typed accessors for what readers and writers need.

    The class attributes declare the entries (:class:`TableProperty`, Hudi's
    ``HoodieTableConfig`` names).
    """

    props: dict[str, str] = field(default_factory=dict)

    NAME = TableProperty("hoodie.table.name")
    DATABASE_NAME = TableProperty("hoodie.database.name", "")
    TYPE = TableProperty("hoodie.table.type", "COPY_ON_WRITE")
    VERSION = TableProperty("hoodie.table.version", "6")
    #: the version a table was created at (Hudi 1.x)
    INITIAL_VERSION = TableProperty("hoodie.table.initial.version")
    TIMELINE_LAYOUT_VERSION = TableProperty("hoodie.timeline.layout.version")
    TIMELINE_PATH = TableProperty("hoodie.timeline.path", "timeline")
    #: the LSM archived timeline's folder under the timeline folder (layout 2)
    TIMELINE_HISTORY_PATH = TableProperty("hoodie.timeline.history.path", "history")
    #: ``native`` for Hudi's own format (Hudi 1.1)
    TABLE_FORMAT = TableProperty("hoodie.table.format", "native")
    TIMELINE_TIMEZONE = TableProperty("hoodie.table.timeline.timezone", "LOCAL")
    ARCHIVELOG_FOLDER = TableProperty("hoodie.archivelog.folder", "archived")
    RECORDKEY_FIELDS = TableProperty("hoodie.table.recordkey.fields", "")
    PARTITION_FIELDS = TableProperty("hoodie.table.partition.fields", "")
    ORDERING_FIELDS = TableProperty("hoodie.table.ordering.fields")
    PRECOMBINE_FIELD = TableProperty("hoodie.table.precombine.field", "")
    HIVE_STYLE_PARTITIONING = TableProperty(
        "hoodie.datasource.write.hive_style_partitioning", "false"
    )
    URL_ENCODE_PARTITIONING = TableProperty(
        "hoodie.datasource.write.partitionpath.urlencode", "false"
    )
    DROP_PARTITION_COLUMNS = TableProperty(
        "hoodie.datasource.write.drop.partition.columns", "false"
    )
    POPULATE_META_FIELDS = TableProperty("hoodie.populate.meta.fields", "true")
    BASE_FILE_FORMAT = TableProperty("hoodie.table.base.file.format", "PARQUET")
    KEY_GENERATOR_CLASS = TableProperty("hoodie.table.keygenerator.class", "")
    KEY_GENERATOR_TYPE = TableProperty("hoodie.table.keygenerator.type")
    CREATE_SCHEMA = TableProperty("hoodie.table.create.schema")
    PAYLOAD_CLASS = TableProperty("hoodie.compaction.payload.class")
    TABLE_PAYLOAD_CLASS = TableProperty("hoodie.table.payload.class")
    #: the payload class a Hudi 1.1 table was migrated from (its merge mode replaces it)
    LEGACY_PAYLOAD_CLASS = TableProperty("hoodie.table.legacy.payload.class")
    PARTIAL_UPDATE_MODE = TableProperty("hoodie.table.partial.update.mode")
    RECORD_MERGE_MODE = TableProperty("hoodie.record.merge.mode")
    RECORD_MERGE_STRATEGY_ID = TableProperty("hoodie.record.merge.strategy.id")
    #: the merge strategy id of version-6 tables
    RECORD_MERGER_STRATEGY = TableProperty("hoodie.compaction.record.merger.strategy")
    CHECKSUM = TableProperty("hoodie.table.checksum")
    #: the index and bucket layout of a table hudi_ds created (Java ignores these keys)
    INDEX_TYPE = TableProperty("hoodie.index.type")
    BUCKET_INDEX_NUM_BUCKETS = TableProperty("hoodie.bucket.index.num.buckets")
    BUCKET_INDEX_HASH_FIELD = TableProperty("hoodie.bucket.index.hash.field", "")
    BUCKET_INDEX_ENGINE = TableProperty("hoodie.index.bucket.engine")
    #: the table's writers log change data (Java ``HoodieTableConfig.CDC_ENABLED``)
    CDC_ENABLED = TableProperty("hoodie.table.cdc.enabled", "false")
    #: where the source files of a metadata-bootstrapped table live (Java
    #: ``HoodieTableConfig.BOOTSTRAP_BASE_PATH``)
    BOOTSTRAP_BASE_PATH = TableProperty("hoodie.bootstrap.base.path")
    #: the Hudi 1.x index definitions file
    #: (Java ``HoodieTableConfig.RELATIVE_INDEX_DEFINITION_PATH``)
    INDEX_DEFS_PATH = TableProperty("hoodie.table.index.defs.path")

    # -- IO ---------------------------------------------------------------------------------
    @classmethod
    def load(cls, storage: Storage) -> TableConfig:
        """Read ``hoodie.properties``, or ``hoodie.properties.backup`` when it is not valid.

        As Java's ``ConfigUtils.fetchConfigs`` (called by ``HoodieTableConfig``'s constructor)
        does: the main file, then the backup that ``HoodieTableConfig.modify`` writes before
        rewriting the main file; a file is taken when it parses and its
        ``hoodie.table.checksum`` (if any) matches. Stricter than Java, a file that does not
        decode, lacks ``hoodie.table.name``, or looks truncated (no checksum, or no final line
        break: ``Properties.store`` ends every line with one) gives way to a valid backup.

        Both files can be missing for a moment to a reader that looks between an update's
        steps (main file gone, backup read after the update deleted it); as Java's
        ``fetchConfigs`` retries, so does this, when ``.hoodie`` exists.

        Raises:
            TableNotFoundError: neither file exists.
            CorruptFileError: no valid file (the message names each file and what is wrong).
        """
        for attempt in range(_READ_ATTEMPTS):
            found = cls._load_once(storage)
            if found is not None:
                return found
            if attempt + 1 < _READ_ATTEMPTS and storage.is_dir(".hoodie"):
                time.sleep(_READ_RETRY_DELAY_S * (attempt + 1))
                continue
            break
        raise TableNotFoundError(
            f"no Hudi table at {storage.base_uri}: {PROPS_FILE} does not exist"
        )

    @classmethod
    def _load_once(cls, storage: Storage) -> TableConfig | None:
        """One pass of :meth:`load`: the config, or None when neither file exists."""
        problems: list[str] = []
        suspect: tuple[TableConfig, str] | None = None
        for rel in (PROPS_FILE, PROPS_BACKUP):
            try:
                data = storage.read_bytes(rel)
            except FileNotFoundError:
                continue
            where = storage.full_path(rel)
            try:
                cfg, doubt = cls._parse_file(data)
            except CorruptFileError as e:
                problems.append(f"{where}: {e}")
                log.warning("invalid table config %s: %s", where, e)
                continue
            if doubt is None:
                if suspect is not None:
                    problems.append(suspect[1])
                if problems:
                    log.warning("using %s instead: %s", where, "; ".join(problems))
                return cfg
            if suspect is None:
                suspect = (cfg, f"{where}: {doubt}")
        if suspect is not None:  # the best there is (Java would take it as well)
            log.debug("table config %s", suspect[1])
            return suspect[0]
        if problems:
            raise CorruptFileError("; ".join(problems))
        return None

    @classmethod
    def _parse_file(cls, data: bytes) -> tuple[TableConfig, str | None]:
        """Parse one properties file: the config and a doubt about it (None: valid).

        Raises:
            CorruptFileError: it does not decode or parse, has no ``hoodie.table.name`` or
                its checksum does not match.
        """
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as e:
            raise CorruptFileError(
                f"byte {e.start} (0x{data[e.start]:02x}) is not valid text: the file is damaged"
            ) from None
        try:
            cfg = cls(parse_properties(text))
        except (ValueError, UnicodeError) as e:
            raise CorruptFileError(f"does not parse as Java properties: {e}") from None
        if cls.NAME.key not in cfg.props:
            raise CorruptFileError("no hoodie.table.name (empty or truncated file)")
        stored = cls.CHECKSUM.of(cfg.props)
        if stored is not None:
            try:
                ok = cfg.validate_checksum()
            except ValueError:
                ok = False
            if not ok:
                raise CorruptFileError(
                    f"{cls.CHECKSUM.key}={stored!r} does not match the table name "
                    f"{cfg.table_name!r}"
                )
        if stored is None:
            return cfg, "no hoodie.table.checksum (truncated?)"
        if not data.endswith((b"\n", b"\r")):
            return cfg, "its last line is cut off (truncated?)"
        return cfg, None

    def save(self, storage: Storage) -> None:
        """Write a new table's file atomically (temp file + rename), with a fresh checksum.

        Only for creating a table: an existing table's file is changed with
        :func:`update_table_config` (the backup-file protocol).
        """
        self.props[self.CHECKSUM.key] = str(
            table_checksum(self.table_name, self.DATABASE_NAME.of(self.props) or "")
        )
        storage.write_atomic(PROPS_FILE, format_properties(self.props).encode("utf-8"))

    def validate_checksum(self) -> bool:
        """True when the stored checksum matches (or none is stored)."""
        stored = self.CHECKSUM.of(self.props)
        if stored is None:
            return True
        expected = table_checksum(self.table_name, self.DATABASE_NAME.of(self.props) or "")
        return int(stored) == expected

    # -- accessors ----------------------------------------------------------------------------
    def get(self, key: str | TableProperty, default: str | None = None) -> str | None:
        """The raw value of ``key`` (a declared property: its default unless ``default``)."""
        if isinstance(key, TableProperty):
            return self.props.get(key.key, key.default if default is None else default)
        return self.props.get(key, default)

    @property
    def table_name(self) -> str:
        return self.props[self.NAME.key]

    @property
    def table_type(self) -> TableType:
        """The table's type.

        Raises:
            ConfigError: the file records another value.
        """
        return TableType.parse(self.TYPE.of(self.props) or "", "in hoodie.properties")

    @property
    def is_mor(self) -> bool:
        return self.table_type is TableType.MERGE_ON_READ

    @property
    def table_version(self) -> int:
        return int(self.VERSION.of(self.props) or "6")

    @property
    def timeline_layout_version(self) -> int:
        v = self.TIMELINE_LAYOUT_VERSION.of(self.props)
        if v is not None:
            return int(v)
        return 2 if self.table_version >= 8 else 1

    @property
    def timeline_path(self) -> str:
        """Folder of the active timeline, relative to the base path."""
        if self.timeline_layout_version >= 2:
            return ".hoodie/" + (self.TIMELINE_PATH.of(self.props) or "timeline")
        return ".hoodie"

    @property
    def record_key_fields(self) -> list[str]:
        return self.RECORDKEY_FIELDS.items(self.props)

    @property
    def partition_fields(self) -> list[str]:
        """Partition fields without key-generator type suffixes (``f:SIMPLE`` in 1.x)."""
        return [f.split(":")[0] for f in self.PARTITION_FIELDS.items(self.props)]

    @property
    def value_partition_fields(self) -> list[str]:
        """The partition fields whose folder value is the column's own value, which reads
        may prune on: every field of the SIMPLE and COMPLEX key generators, the ``:SIMPLE``
        fields of the CUSTOM key generator as the table records them (version 8 on; a
        table that records no types has none), no field of the others (TIMESTAMP formats
        its value)."""
        kg = self.key_generator
        if kg in (KeyGeneratorType.SIMPLE, KeyGeneratorType.COMPLEX):
            return self.partition_fields
        if kg is KeyGeneratorType.CUSTOM:
            entries = (e.partition(":") for e in self.PARTITION_FIELDS.items(self.props))
            return [name for name, _, kind in entries if kind.strip().upper() == "SIMPLE"]
        return []

    @property
    def ordering_fields(self) -> list[str]:
        v = self.ORDERING_FIELDS.of(self.props) or self.PRECOMBINE_FIELD.of(self.props)
        return _split(v or "")

    @property
    def hive_style_partitioning(self) -> bool:
        return self.HIVE_STYLE_PARTITIONING.flag(self.props)

    @property
    def url_encode_partitions(self) -> bool:
        return self.URL_ENCODE_PARTITIONING.flag(self.props)

    @property
    def populate_meta_fields(self) -> bool:
        return self.POPULATE_META_FIELDS.flag(self.props)

    @property
    def base_file_format(self) -> BaseFileFormat:
        return BaseFileFormat.parse(
            self.BASE_FILE_FORMAT.of(self.props) or "PARQUET", self.BASE_FILE_FORMAT.key
        )

    @property
    def recorded_key_generator(self) -> KeyGeneratorType | None:
        """The key generator the table records (its class, else its type as Hudi 1.x records
        it; the Avro twins alike), or None: none recorded, or one hudi_ds does not reproduce
        (:attr:`recorded_key_generator_name` names it)."""
        cls = self.KEY_GENERATOR_CLASS.of(self.props)
        if cls:
            return KeyGeneratorType.of_class(cls)
        kind = (self.KEY_GENERATOR_TYPE.of(self.props) or "").strip().upper()
        return KeyGeneratorType.named(kind.removesuffix("_AVRO")) if kind else None

    @property
    def recorded_key_generator_name(self) -> tuple[str, str] | None:
        """``(property, value)`` of the key generator the table records, if any."""
        for prop in (self.KEY_GENERATOR_CLASS, self.KEY_GENERATOR_TYPE):
            value = prop.of(self.props)
            if value:
                return prop.key, value
        return None

    @property
    def key_generator(self) -> KeyGeneratorType:
        """The key generator the table's keys are read with: the recorded one, else COMPLEX
        for several record key fields and SIMPLE for one (what Hudi's writers infer)."""
        recorded = self.recorded_key_generator
        if recorded is not None:
            return recorded
        several = len(self.record_key_fields) > 1
        return KeyGeneratorType.COMPLEX if several else KeyGeneratorType.SIMPLE

    @property
    def complex_record_key(self) -> bool:
        """Keys are ``f1:v1,f2:v2``: complex keygen, or several fields with the nonpartitioned
        or CUSTOM key generator (``CustomAvroKeyGenerator``: Complex keys for more than one
        field)."""
        kg = self.key_generator
        several = len(self.record_key_fields) > 1
        return kg is KeyGeneratorType.COMPLEX or (
            kg in (KeyGeneratorType.NON_PARTITION, KeyGeneratorType.CUSTOM) and several
        )

    @property
    def create_schema(self) -> str | None:
        return self.CREATE_SCHEMA.of(self.props)

    @property
    def payload_class(self) -> str | None:
        return self.PAYLOAD_CLASS.of(self.props) or self.TABLE_PAYLOAD_CLASS.of(self.props)

    @property
    def merge_mode(self) -> MergeMode:
        """The record merge mode readers must apply (v8+ property; v6 derived from the payload)."""
        mode = self.RECORD_MERGE_MODE.of(self.props)
        if mode:
            mode = mode.upper()
            if mode not in set(MergeMode):
                raise ConfigError(f"unknown hoodie.record.merge.mode {mode!r} in hoodie.properties")
            return MergeMode(mode)
        strategy = self.merge_strategy_id
        payload = self.payload_class or ""
        if strategy == COMMIT_TIME_STRATEGY_ID:
            return COMMIT_TIME_ORDERING
        if strategy and strategy not in _NOT_CUSTOM:
            return CUSTOM  # Hudi's custom strategy id or a user merger's own one
        if payload.endswith("OverwriteWithLatestAvroPayload") or not payload:
            if self.table_version >= 8 and not payload:
                return EVENT_TIME_ORDERING if self.ordering_fields else COMMIT_TIME_ORDERING
            return COMMIT_TIME_ORDERING
        mode = PAYLOAD_MERGE_MODES.get(payload)
        if mode == EVENT_TIME_ORDERING and not self.ordering_fields:
            return COMMIT_TIME_ORDERING
        return mode or CUSTOM

    @property
    def merge_strategy_id(self) -> str | None:
        """The record merge strategy id (v8+ key, else the version-6 one)."""
        return self.RECORD_MERGE_STRATEGY_ID.of(self.props) or self.RECORD_MERGER_STRATEGY.of(
            self.props
        )

    @property
    def timeline_history_path(self) -> str:
        """The LSM history folder of timeline layout 2 (``hoodie.timeline.history.path``),
        relative to the base path."""
        return f"{self.timeline_path}/{self.TIMELINE_HISTORY_PATH.of(self.props) or 'history'}"

    @property
    def archive_folder(self) -> str:
        """The archived timeline's folder under ``.hoodie`` (``hoodie.archivelog.folder``)."""
        return self.ARCHIVELOG_FOLDER.of(self.props) or "archived"

    @property
    def timeline_timezone(self) -> str:
        return (self.TIMELINE_TIMEZONE.of(self.props) or "").upper()


# --------------------------------------------------------------------------- updates
def recover_table_config(storage: Storage) -> bool:
    """Finish or undo an interrupted :func:`update_table_config` (``HoodieTableConfig.recover``).

    Java's ``ConfigUtils.recoverIfNeeded`` copies the backup over a *missing*
    ``hoodie.properties`` and then deletes the backup. Stricter, as :meth:`TableConfig.load` is:
    a main file that is present but not valid (damaged, wrong checksum, cut off) is replaced by
    a valid backup too; the backup is deleted only once the main file is valid, so the last
    good copy is never lost.

    Returns:
        True when ``hoodie.properties`` was restored from the backup.

    Raises:
        TableNotFoundError: neither file exists.
        CorruptFileError: neither file is valid (nothing is changed).
    """
    main = _valid_config_bytes(storage, PROPS_FILE)
    if main is not None:
        storage.delete(PROPS_BACKUP)  # a leftover of an update that completed (or never began)
        return False
    backup = _valid_config_bytes(storage, PROPS_BACKUP)
    if backup is None and not storage.is_file(PROPS_FILE):
        # a missing main file takes the backup as it parses, as Java's recoverIfNeeded does: a
        # table of Hudi before 0.11 (version 3) has no checksum, nor has its backup
        backup = _valid_config_bytes(storage, PROPS_BACKUP, doubt_ok=True)
    if backup is None:
        TableConfig.load(storage)  # raises the error naming each file and what is wrong
        return False  # a doubtful main file (e.g. no checksum) and no backup: keep it
    where = storage.full_path(PROPS_FILE)
    log.warning("restoring %s from %s", where, storage.full_path(PROPS_BACKUP))
    storage.write_atomic(PROPS_FILE, backup)
    storage.delete(PROPS_BACKUP)
    return True


def update_table_config(
    storage: Storage,
    updates: Mapping[str, str] | None = None,
    deletes: Iterable[str] = (),
) -> TableConfig:
    """Set and remove ``hoodie.properties`` entries of an existing table, crash-safely.

    The one way hudi_ds changes an existing table's config. Hudi's backup-file protocol
    (``HoodieTableConfig.modify``): recover from an interrupted update
    (:func:`recover_table_config`); copy ``hoodie.properties`` to ``hoodie.properties.backup``;
    delete ``hoodie.properties`` (readers now take the backup, see :meth:`TableConfig.load`);
    write the new ``hoodie.properties`` with a fresh ``hoodie.table.checksum``; read it back and
    check the checksum; delete the backup. Each file is written atomically (temp + rename), so
    a crash at any step leaves a readable config holding either the old or the new entries,
    and the next update (or :func:`recover_table_config`) finishes the cleanup. Concurrent
    writers must hold the table lock, as in Hudi.

    Args:
        storage: the table's storage (base path).
        updates: entries to set (added or replaced).
        deletes: keys to remove (absent ones are ignored).

    Returns:
        The new config, as written.

    Raises:
        ConfigError: ``hoodie.table.checksum`` given (it is computed), ``hoodie.table.name``
            deleted or set empty, a key both set and deleted, or a key that is empty or not a
            string.
        TableNotFoundError / CorruptFileError: no valid ``hoodie.properties`` or backup.
    """
    updates = dict(updates or {})
    gone = set(deletes)
    _check_update(updates, gone)
    recover_table_config(storage)
    data = _valid_config_bytes(storage, PROPS_FILE)
    if data is None:  # a doubtful file without a backup (TableConfig.load took it)
        data = storage.read_bytes(PROPS_FILE)
    old = TableConfig(parse_properties(data.decode("utf-8")))
    props = {k: v for k, v in old.props.items() if k not in gone}
    props.update(updates)
    new = TableConfig(props)
    new.props[TableConfig.CHECKSUM.key] = str(
        table_checksum(new.table_name, TableConfig.DATABASE_NAME.of(new.props) or "")
    )
    # 1. the backup: readers take it while hoodie.properties is absent
    storage.write_atomic(PROPS_BACKUP, data, crash_point_name="table_config")
    crash_point("table_config")
    # 2. delete the main file (as Java does: a store without atomic rename never shows a mix)
    storage.delete(PROPS_FILE)
    crash_point("table_config")
    # 3. the new main file
    text = format_properties(new.props, "Updated by hudi_ds").encode("utf-8")
    storage.write_atomic(PROPS_FILE, text, crash_point_name="table_config")
    crash_point("table_config")
    # 4. verify it (Java compares the checksum read back), 5. drop the backup
    back = _valid_config_bytes(storage, PROPS_FILE)
    if back is None or parse_properties(back.decode("utf-8")) != new.props:
        storage.delete(PROPS_FILE)  # readers keep taking the backup; the next update recovers
        raise CorruptFileError(
            f"{storage.full_path(PROPS_FILE)} did not read back as written; the table keeps "
            f"its previous config in {storage.full_path(PROPS_BACKUP)}"
        )
    storage.delete(PROPS_BACKUP)
    log.info(
        "updated %s: set %s, removed %s",
        storage.full_path(PROPS_FILE),
        sorted(updates),
        sorted(gone & old.props.keys()),
    )
    return new


def _check_update(updates: Mapping[str, str], deletes: set[str]) -> None:
    """Refuse an update that would leave an invalid config (see :func:`update_table_config`)."""
    for key in [*updates, *deletes]:
        if not isinstance(key, str) or not key.strip():
            raise ConfigError(f"hoodie.properties key {key!r} is not a non-empty string")
    for key, value in updates.items():
        if not isinstance(value, str):
            raise ConfigError(
                f"hoodie.properties value of {key} must be a string, got {type(value).__name__}"
            )
    both = sorted(deletes & updates.keys())
    if both:
        raise ConfigError(f"hoodie.properties keys both set and deleted: {both}")
    if TableConfig.CHECKSUM.key in updates or TableConfig.CHECKSUM.key in deletes:
        raise ConfigError(f"{TableConfig.CHECKSUM.key} is computed, not set")
    if TableConfig.NAME.key in deletes or updates.get(TableConfig.NAME.key, "x").strip() == "":
        raise ConfigError(f"{TableConfig.NAME.key} cannot be removed or emptied")


def _valid_config_bytes(storage: Storage, rel: str, doubt_ok: bool = False) -> bytes | None:
    """The bytes of ``rel`` when it exists and is a valid config file (else None);
    ``doubt_ok``: one that parses but has no checksum or no final line break will do."""
    try:
        data = storage.read_bytes(rel)
    except FileNotFoundError:
        return None
    try:
        _, doubt = TableConfig._parse_file(data)
    except CorruptFileError:
        return None
    return data if doubt is None or doubt_ok else None


def _split(v: str) -> list[str]:
    return [s.strip() for s in v.split(",") if s.strip()]
