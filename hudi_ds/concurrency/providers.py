"""The table lock named by the ``hoodie.write.lock.*`` options."""

from __future__ import annotations

from hudi_ds.concurrency.dynamodb_lock import DYNAMODB_OPTION_KEYS, dynamodb_lock
from hudi_ds.concurrency.file_system_lock import FileSystemLock
from hudi_ds.concurrency.in_process_lock import InProcessLock
from hudi_ds.concurrency.lock import (
    DYNAMODB_LOCK_NAMES,
    FS_LOCK_NAMES,
    IN_PROCESS_NAMES,
    STORAGE_LOCK_NAMES,
    TableLock,
)
from hudi_ds.concurrency.storage_lock import StorageBasedLock
from hudi_ds.config import ConcurrencyConfig, Options, warn_no_effect
from hudi_ds.errors import ConfigError
from hudi_ds.storage import Storage


def table_lock(storage: Storage, options: Options) -> TableLock | None:
    """The table lock that writers and table services take, from the ``hoodie.write.lock.*``
    options; None for a single writer (``hoodie.write.concurrency.mode=single_writer``)."""
    if options.get(ConcurrencyConfig.MODE) == "single_writer":
        return None
    provider = options.get(ConcurrencyConfig.LOCK_PROVIDER)
    if provider in DYNAMODB_LOCK_NAMES:
        return dynamodb_lock(storage, options)
    for key in DYNAMODB_OPTION_KEYS:
        if options.get_str(key) is not None:
            warn_no_effect(
                key,
                options.get_str(key),
                f"only the DynamoDB-based lock reads it (hoodie.write.lock.provider is {provider})",
            )
    return make_lock(
        options.get(ConcurrencyConfig.LOCK_PROVIDER),
        storage,
        options.get(ConcurrencyConfig.LOCK_EXPIRE_MIN),
        options.get(ConcurrencyConfig.LOCK_WAIT_MS),
        options.get(ConcurrencyConfig.LOCK_RETRIES),
        options.get(ConcurrencyConfig.STORAGE_LOCK_VALIDITY_S),
        options.get(ConcurrencyConfig.STORAGE_LOCK_HEARTBEAT_S),
    )


def make_lock(
    provider: str,
    storage: Storage,
    expire_min: float,
    wait_ms: int,
    retries: int,
    validity_s: int = 300,
    heartbeat_s: int = 30,
) -> TableLock:
    """The lock provider named by ``hoodie.write.lock.provider``.

    Raises:
        ConfigError: an unknown provider, or the storage-based lock's periods break Hudi's rules
            (validity >= 10 s and >= 10 x the heartbeat poll), or it is asked of a local path.
    """
    if provider in FS_LOCK_NAMES:
        return FileSystemLock(
            storage, expire_min * 60 if expire_min > 0 else 600.0, wait_ms, retries
        )
    if provider in STORAGE_LOCK_NAMES:
        # Hudi's StorageBasedLockConfig.checkRequiredProps
        v_key = ConcurrencyConfig.STORAGE_LOCK_VALIDITY_S.key
        h_key = ConcurrencyConfig.STORAGE_LOCK_HEARTBEAT_S.key
        if validity_s < 10:
            raise ConfigError(f"option {v_key!r}={validity_s} must be at least 10 seconds")
        if validity_s < 10 * heartbeat_s:
            raise ConfigError(
                f"option {v_key!r}={validity_s} must be at least 10 x {h_key!r}={heartbeat_s}"
            )
        return StorageBasedLock(storage, float(validity_s), float(heartbeat_s), wait_ms, retries)
    if provider in IN_PROCESS_NAMES:
        return InProcessLock(storage)
    if provider in DYNAMODB_LOCK_NAMES:
        return dynamodb_lock(storage, Options.of({}))
    raise ConfigError(
        f"unsupported lock provider {provider!r} (hoodie.write.lock.provider); use "
        f"{FS_LOCK_NAMES[0]}, {STORAGE_LOCK_NAMES[0]}, {DYNAMODB_LOCK_NAMES[0]} or "
        f"{IN_PROCESS_NAMES[0]}"
    )
