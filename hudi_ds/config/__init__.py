"""Typed configuration: Hudi's own ``hoodie.*`` keys, their defaults, aliases and parsers.

Every option a user passes is checked here, on the driver, before anything is written: an unknown
key (``hoodie.*`` or not), or a value its parser refuses, raises
:class:`~hudi_ds.errors.ConfigError` that names the key and the value (and the valid values, or
the closest known key: "did you mean"). Hudi keys accepted without effect
(:data:`IGNORED_HUDI_KEYS`, or a property with ``no_effect``) warn with
:class:`~hudi_ds.errors.IgnoredOptionWarning`, saying why.

Each scope is a namespace class of :class:`ConfigProperty` entries, in a module of its own
(:mod:`.read`, :mod:`.write`, :mod:`.services`, :mod:`.concurrency`) on :mod:`.base`; this
package re-exports what callers import. The scopes together are the one registry: every entry
of the core validates a user's options with :func:`validated`.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from hudi_ds.config.base import (
    IGNORED_HUDI_KEYS,
    ConfigProperty,
    Options,
    one_of,
    parse_bool,
    parse_int,
    parse_list,
    parse_non_negative,
    parse_non_negative_float,
    parse_positive,
    parse_positive_float,
    parse_positive_int,
    parse_probability,
    parse_size,
    parse_str,
    parse_table_version,
    parse_utc_only,
    properties_of,
    unknown_option,
    warn_no_effect,
)
from hudi_ds.config.clustering import (
    ClusteringConfig,
    LayoutOptimizeStrategy,
    PartitionFilterMode,
    UpdateStrategy,
)
from hudi_ds.config.concurrency import ConcurrencyConfig
from hudi_ds.config.read import ReadConfig
from hudi_ds.config.services import (
    COMPACTION_STRATEGIES,
    ServiceConfig,
    compaction_strategy_class,
    parse_compaction_strategy,
    validate_service_options,
)
from hudi_ds.config.write import WriteConfig

__all__ = [
    "COMPACTION_STRATEGIES",
    "ClusteringConfig",
    "LayoutOptimizeStrategy",
    "PartitionFilterMode",
    "UpdateStrategy",
    "IGNORED_HUDI_KEYS",
    "ConcurrencyConfig",
    "ConfigProperty",
    "Options",
    "ReadConfig",
    "ServiceConfig",
    "WriteConfig",
    "all_scopes",
    "compaction_strategy_class",
    "is_option_key",
    "one_of",
    "parse_bool",
    "parse_compaction_strategy",
    "parse_int",
    "parse_list",
    "parse_non_negative",
    "parse_non_negative_float",
    "parse_positive",
    "parse_positive_float",
    "parse_positive_int",
    "parse_probability",
    "parse_size",
    "parse_str",
    "parse_table_version",
    "parse_utc_only",
    "properties_of",
    "unknown_option",
    "validate_service_options",
    "validated",
    "warn_no_effect",
]


def all_scopes() -> tuple[type, ...]:
    """Every option scope of the core (the Spark data source adds its own)."""
    return (WriteConfig, ReadConfig, ServiceConfig, ClusteringConfig, ConcurrencyConfig)


def validated(options: Mapping[str, Any] | Options | None) -> Options:
    """``options`` checked against the one registry of the core: every entry (a write client,
    a table's reads, the services, the CLI, the engine API) validates the same way, so one
    option dict serves a write, a read and a table service alike.

    Raises:
        ConfigError: a key no scope declares and Hudi does not define (with the closest known
            key), a value its property refuses, or a contradiction between options.

    Warns:
        IgnoredOptionWarning: a key accepted without effect, saying why.
    """
    opts = Options.of(options)
    opts.validate(*all_scopes())
    validate_service_options(opts)
    return opts


@functools.cache
def _known_keys() -> frozenset[str]:
    keys = {k.lower() for s in all_scopes() for p in properties_of(s) for k in p.all_keys()}
    return frozenset(keys | {k.lower() for k in IGNORED_HUDI_KEYS})


def is_option_key(key: str) -> bool:
    """Whether the registry knows ``key`` (lower case): a declared option or alias, or a Hudi
    key accepted without effect."""
    return key in _known_keys()
