"""Hudi 1.1's partition-level bucket index (RFC-89): a bucket count per partition, from rules.

The rules are ``hoodie.bucket.index.partition.expressions`` read by
``hoodie.bucket.index.partition.rule.type`` (only ``regex``): ``"re1,n1;re2,n2"`` gives a
partition whose path matches ``re1`` (``Matcher.find``: anywhere in the path) ``n1`` buckets,
and so on, the first matching rule winning; other partitions get the default bucket number
(``hoodie.bucket.index.num.buckets``). Java ``PartitionBucketIndexCalculator``
(``RegexRuleEngine``) splits on ``;`` then ``,``, trims both parts and caches the count per
partition path; here the compiled rules are cached per expression string and the counts per
partition on the rules object.

Each version of a table's rules is a hashing config file (Java
``PartitionBucketIndexHashingConfig``) ``.hoodie/.bucket_index/partition_bucket_index_meta/
configs/<instant>.hashing_config``, Jackson's pretty-printed JSON of
``{expressions, defaultBucketNumber, rule, version, instant}``. A new table's is
``00000000000000000.hashing_config``; a rescale writes its replacecommit's. A config whose
instant is a pending replacecommit is not committed (a rescale in flight, or a failed one
whose rollback deletes the file before the instant: ``rollbackHashingConfig``). Writers use
the latest committed config (``loadingLatestHashingConfig``); configs older than the active
timeline are moved to ``.../archive/`` (``archiveHashingConfigIfNecessary``), the latest of
them kept. The table is a partition-level one when the configs folder exists
(``PartitionBucketIndexUtils.isPartitionSimpleBucketIndex``).

Java's regex dialect is not Python's in every corner (possessive quantifiers, ``\\p{..}``
classes): an expression Python's ``re`` cannot compile is refused, naming it.
"""

from __future__ import annotations

import enum
import functools
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from hudi_ds.errors import ConfigError, CorruptFileError
from hudi_ds.storage import Storage
from hudi_ds.timeline.instant import REPLACE_COMMIT
from hudi_ds.timeline.timeline import Timeline

EXPRESSIONS_KEY = "hoodie.bucket.index.partition.expressions"
RULE_KEY = "hoodie.bucket.index.partition.rule.type"
#: Java ``HoodieTableMetaClient.BUCKET_INDEX_METAFOLDER`` (the folder of the index's metadata)
BUCKET_INDEX_DIR = ".hoodie/.bucket_index"
#: Java ``HoodieTableMetaClient.BUCKET_INDEX_METAFOLDER_CONFIG_FOLDER`` under ``.hoodie``
CONFIGS_DIR = f"{BUCKET_INDEX_DIR}/partition_bucket_index_meta/configs"
#: ``BUCKET_INDEX_METAFOLDER_CONFIG_ARCHIVE_FOLDER``
ARCHIVE_DIR = ".hoodie/.bucket_index/partition_bucket_index_meta/archive"
SUFFIX = ".hashing_config"
#: ``HoodieTimeline.INIT_INSTANT_TS``: the instant of a new table's config
INITIAL_INSTANT = "00000000000000000"
#: ``PartitionBucketIndexHashingConfig.CURRENT_VERSION``
VERSION = 1
_MAX_BUCKETS = 99_999_999


class RuleType(enum.StrEnum):
    """``hoodie.bucket.index.partition.rule.type`` (Java ``PartitionBucketIndexRule``)."""

    REGEX = "regex"

    @classmethod
    def parse(cls, value: str) -> RuleType:
        """Raises: ConfigError: not a rule type."""
        try:
            return cls(str(value).strip().lower())
        except ValueError:
            raise ConfigError(
                f"{RULE_KEY}={value!r}: the rule types are {', '.join(cls)}"
            ) from None


def _java_split(text: str, sep: str) -> list[str]:
    """Java ``String.split``: trailing empty strings are dropped (``"a,1;"`` is one rule)."""
    parts = text.split(sep)
    while len(parts) > 1 and parts[-1] == "":
        parts.pop()
    return parts


@functools.lru_cache(maxsize=64)
def parse_expressions(expressions: str) -> tuple[tuple[re.Pattern[str], int], ...]:
    """The ``(pattern, buckets)`` rules of an expression string, in priority order.

    Raises:
        ConfigError: a rule is not ``regex,buckets``, a regex does not compile, or a bucket
            count is not an integer in ``[1, 99999999]`` (named with the rule).
    """
    rules = []
    for raw in _java_split(expressions, ";"):
        parts = _java_split(raw.strip(), ",")
        if len(parts) != 2:
            raise ConfigError(
                f"{EXPRESSIONS_KEY}={expressions!r}: rule {raw!r} is not 'regex,bucketNumber' "
                "(rules are separated by ';', a regex may not contain ',' or ';')"
            )
        regex, count = parts[0].strip(), parts[1].strip()
        try:
            n = int(count)
        except ValueError:
            raise ConfigError(
                f"{EXPRESSIONS_KEY}={expressions!r}: bucket number {count!r} of rule {raw!r} "
                "is not an integer"
            ) from None
        if not 1 <= n <= _MAX_BUCKETS:
            raise ConfigError(
                f"{EXPRESSIONS_KEY}={expressions!r}: bucket number {n} of rule {raw!r} must be "
                f"in [1, {_MAX_BUCKETS}]"
            )
        try:
            pattern = re.compile(regex)
        except re.error as e:
            raise ConfigError(
                f"{EXPRESSIONS_KEY}={expressions!r}: regex {regex!r} does not compile ({e})"
            ) from None
        rules.append((pattern, n))
    return tuple(rules)


@dataclass(frozen=True)
class HashingConfig:
    """One version of a table's rules (Java ``PartitionBucketIndexHashingConfig``): small,
    frozen, picklable; :meth:`num_buckets` is the bucket count of a partition."""

    expressions: str
    default_bucket_number: int
    rule: RuleType = RuleType.REGEX
    version: int = VERSION
    instant: str = INITIAL_INSTANT
    _counts: dict[str, int] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        if not self.expressions:
            raise ConfigError(f"{EXPRESSIONS_KEY}: empty (no rule)")
        n = self.default_bucket_number
        if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= _MAX_BUCKETS:
            raise ConfigError(
                f"hoodie.bucket.index.num.buckets={n!r}: the default bucket number must be an "
                f"integer in [1, {_MAX_BUCKETS}]"
            )
        parse_expressions(self.expressions)

    def num_buckets(self, partition: str) -> int:
        """The bucket count of ``partition`` (its relative path): the first rule whose regex
        is found in it, else the default."""
        got = self._counts.get(partition)
        if got is None:
            got = next(
                (n for p, n in parse_expressions(self.expressions) if p.search(partition)),
                self.default_bucket_number,
            )
            self._counts[partition] = got
        return got

    def counts(self, partitions: Sequence[str]) -> np.ndarray:
        """The bucket count of each of ``partitions`` (int64)."""
        return np.fromiter((self.num_buckets(p) for p in partitions), np.int64, len(partitions))

    def same_rules(self, other: HashingConfig) -> bool:
        """Both give every partition the same count (same expressions, rule and default)."""
        return (self.expressions, self.default_bucket_number, self.rule) == (
            other.expressions,
            other.default_bucket_number,
            other.rule,
        )

    def at(self, instant: str) -> HashingConfig:
        """These rules as the config of ``instant``."""
        return HashingConfig(
            self.expressions, self.default_bucket_number, self.rule, self.version, instant
        )

    def to_json(self) -> bytes:
        """The file's bytes, as Jackson's default pretty printer writes the Java object."""
        fields = {
            "expressions": self.expressions,
            "defaultBucketNumber": self.default_bucket_number,
            "rule": self.rule.value,
            "version": self.version,
            "instant": self.instant,
        }
        body = ",\n".join(
            f"  {json.dumps(k)} : {json.dumps(v, ensure_ascii=False)}" for k, v in fields.items()
        )
        return ("{\n" + body + "\n}").encode()

    @classmethod
    def from_json(cls, data: bytes, where: str = "") -> HashingConfig:
        """Parse a hashing config file (unknown fields ignored, as Java's
        ``@JsonIgnoreProperties(ignoreUnknown = true)``).

        Raises:
            CorruptFileError: not JSON, or a field missing or of the wrong type.
            ConfigError: the rules it holds are invalid.
        """
        try:
            obj = json.loads(data.decode("utf-8"))
            expressions = obj["expressions"]
            default = obj["defaultBucketNumber"]
            if not isinstance(expressions, str) or isinstance(default, bool):
                raise TypeError("expressions must be a string")
            return cls(
                expressions,
                int(default),
                RuleType.parse(obj.get("rule") or RuleType.REGEX.value),
                int(obj.get("version", VERSION)),
                str(obj.get("instant") or INITIAL_INSTANT),
            )
        except (ValueError, KeyError, TypeError, AttributeError) as e:
            raise CorruptFileError(f"hashing config {where}: cannot be read ({e})") from None


def config_path(instant: str, archived: bool = False) -> str:
    """The table-relative path of ``instant``'s hashing config."""
    return f"{ARCHIVE_DIR if archived else CONFIGS_DIR}/{instant}{SUFFIX}"


def is_partition_level(storage: Storage, timeline: Timeline | None = None) -> bool:
    """The table keeps partition-level bucket rules (its configs folder exists).

    With ``timeline``, a listing of ``.hoodie`` (layout 1) that showed no ``.bucket_index``
    folder answers without a request: a table whose rules appeared after that listing became
    partition-level by a write this timeline does not see yet."""
    if timeline is not None and timeline.listed_folder(BUCKET_INDEX_DIR) is False:
        return False
    return storage.is_dir(CONFIGS_DIR)


def config_instants(storage: Storage, archived: bool = False) -> list[str]:
    """The instants of the hashing configs in the active (or archive) folder, ascending."""
    names = [
        f.path.rsplit("/", 1)[-1]
        for f in storage.list_files(ARCHIVE_DIR if archived else CONFIGS_DIR)
    ]
    return sorted(n.split(".", 1)[0] for n in names if n.endswith(SUFFIX))


def committed_instants(storage: Storage, timeline: Timeline) -> list[str]:
    """The active configs' instants minus the pending replacecommits' (Java
    ``getCommittedHashingConfigInstants``), ascending."""
    pending = {i.requested_time for i in timeline.pending() if i.action == REPLACE_COMMIT}
    return [t for t in config_instants(storage) if t not in pending]


def load_config(storage: Storage, instant: str, archived: bool = False) -> HashingConfig:
    """Read ``instant``'s hashing config.

    Raises:
        CorruptFileError: it cannot be read.
    """
    path = config_path(instant, archived)
    return HashingConfig.from_json(storage.read_bytes(path), storage.full_path(path))


def latest_config(storage: Storage, timeline: Timeline) -> HashingConfig | None:
    """The rules writers use now: the latest committed config; None for a table without
    partition-level rules (no configs folder, or an empty one).

    Raises:
        CorruptFileError: the configs folder holds no committed config, or it is unreadable.
    """
    if not is_partition_level(storage, timeline):
        return None
    committed = committed_instants(storage, timeline)
    if not committed and not config_instants(storage):
        return None  # (the folder a rolled back upgrade left empty)
    if not committed:
        raise CorruptFileError(
            f"{storage.full_path(CONFIGS_DIR)}: a partition-level bucket table without a "
            "committed hashing config (a rescale in flight or failed left only its own; roll "
            "it back)"
        )
    return load_config(storage, committed[-1])


def save_config(storage: Storage, config: HashingConfig) -> None:
    """Write ``config`` as its instant's file (immutable: Java ``createImmutableFileInPath``).

    Raises:
        ConfigError: a different config of that instant exists.
    """
    path = config_path(config.instant)
    storage.makedirs(CONFIGS_DIR)
    if not storage.create_if_absent(path, config.to_json()):
        existing = HashingConfig.from_json(storage.read_bytes(path), storage.full_path(path))
        if not existing.same_rules(config):
            raise ConfigError(
                f"{storage.full_path(path)} exists with other rules ({existing.expressions!r})"
            )


def delete_config(storage: Storage, instant: str) -> bool:
    """Delete ``instant``'s config, the first step of rolling back its replacecommit (Java
    ``rollbackHashingConfig``): then the instant never looks committed with it."""
    return storage.delete(config_path(instant))


def configs_to_archive(committed: Iterable[str], timeline_start: str | None) -> list[str]:
    """The committed configs older than the active timeline's first commit, except the
    latest of them (Java ``getHashingConfigToArchive``: every config before that one)."""
    if timeline_start is None:
        return []
    older = [t for t in committed if t < timeline_start]
    return older[:-1]


def archive_configs(storage: Storage, timeline: Timeline) -> list[str]:
    """Move the configs :func:`configs_to_archive` names to the archive folder.

    Returns:
        Their instants.
    """
    first = timeline.commits().first()
    moved = configs_to_archive(
        committed_instants(storage, timeline), first.requested_time if first else None
    )
    if moved:
        storage.makedirs(ARCHIVE_DIR)
    for t in moved:
        storage.rename(config_path(t), config_path(t, archived=True))
    return moved
