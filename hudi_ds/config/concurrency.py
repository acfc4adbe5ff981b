"""Multi-writer options: :class:`ConcurrencyConfig` (concurrency mode, locks, heartbeats)."""

from __future__ import annotations

from hudi_ds.config.base import (
    ConfigProperty,
    one_of,
    parse_non_negative,
    parse_non_negative_float,
    parse_positive,
    parse_str,
)


class ConcurrencyConfig:
    """Multi-writer options: optimistic concurrency control, locks, heartbeats."""

    MODE = ConfigProperty(
        "hoodie.write.concurrency.mode",
        "single_writer",
        one_of(
            "single_writer",
            "optimistic_concurrency_control",
            "non_blocking_concurrency_control",
            upper=False,
        ),
        "single_writer, or optimistic concurrency control for several writers.",
    )
    LOCK_PROVIDER = ConfigProperty(
        "hoodie.write.lock.provider",
        "org.apache.hudi.client.transaction.lock.FileSystemBasedLockProvider",
        parse_str,
        "Lock provider class: file-system based (the default), storage based (conditional "
        "writes on an object store), DynamoDB based (Hudi's hudi-aws lock, needs boto3: "
        '`pip install "boto3>=1.28"`) or in-process.',
    )
    LOCK_WAIT_MS = ConfigProperty(
        "hoodie.write.lock.wait_time_ms",
        100,
        parse_non_negative,
        "Wait between lock attempts (ms); for the DynamoDB-based lock, as in Hudi, the lease "
        "duration (default then 60000, heartbeat every third of it).",
    )
    LOCK_RETRIES = ConfigProperty(
        "hoodie.write.lock.num_retries", 600, parse_non_negative, "Lock attempts before giving up."
    )
    LOCK_EXPIRE_MIN = ConfigProperty(
        "hoodie.write.lock.filesystem.expire",
        10.0,
        parse_non_negative_float,
        "Minutes after which a file-system lock of a dead holder is broken.",
    )
    STORAGE_LOCK_VALIDITY_S = ConfigProperty(
        "hoodie.write.lock.storage.validity.timeout.secs",
        300,
        parse_positive,
        "Storage-based lock: seconds each lock lease is valid for (renewed by its holder's "
        "heartbeat); at least 10 and at least 10 x the heartbeat poll.",
    )
    STORAGE_LOCK_HEARTBEAT_S = ConfigProperty(
        "hoodie.write.lock.storage.heartbeat.poll.secs",
        30,
        parse_positive,
        "Storage-based lock: seconds between renewals of the lease by its holder.",
    )
    # Hudi's DynamoDbBasedLockConfig (hudi-aws), for the DynamoDB-based lock provider
    DYNAMODB_TABLE = ConfigProperty(
        "hoodie.write.lock.dynamodb.table",
        "hudi_locks",
        parse_str,
        "DynamoDB-based lock: the DynamoDB table holding the locks (created if absent, with "
        "the partition key attribute `key`).",
    )
    DYNAMODB_PARTITION_KEY = ConfigProperty(
        "hoodie.write.lock.dynamodb.partition_key",
        None,
        parse_str,
        "DynamoDB-based lock: the lock item's key, the same for every writer of the table; "
        "default: the table name (hoodie.table.name).",
    )
    DYNAMODB_REGION = ConfigProperty(
        "hoodie.write.lock.dynamodb.region",
        None,
        parse_str,
        "DynamoDB-based lock: AWS region of the lock table; default: the AWS_REGION "
        "environment variable, else us-east-1.",
    )
    DYNAMODB_ENDPOINT_URL = ConfigProperty(
        "hoodie.write.lock.dynamodb.endpoint_url",
        None,
        parse_str,
        "DynamoDB-based lock: endpoint of the DynamoDB service (https:// is prefixed when it "
        "has no scheme); default: the region's AWS endpoint.",
    )
    DYNAMODB_BILLING_MODE = ConfigProperty(
        "hoodie.write.lock.dynamodb.billing_mode",
        "PAY_PER_REQUEST",
        one_of("PAY_PER_REQUEST", "PROVISIONED"),
        "DynamoDB-based lock: billing mode of a lock table it creates.",
    )
    DYNAMODB_READ_CAPACITY = ConfigProperty(
        "hoodie.write.lock.dynamodb.read_capacity",
        20,
        parse_positive,
        "DynamoDB-based lock: read capacity units of a lock table it creates (PROVISIONED).",
    )
    DYNAMODB_WRITE_CAPACITY = ConfigProperty(
        "hoodie.write.lock.dynamodb.write_capacity",
        10,
        parse_positive,
        "DynamoDB-based lock: write capacity units of a lock table it creates (PROVISIONED).",
    )
    DYNAMODB_TABLE_CREATION_TIMEOUT_MS = ConfigProperty(
        "hoodie.write.lock.dynamodb.table_creation_timeout",
        120_000,
        parse_positive,
        "DynamoDB-based lock: milliseconds to wait for a lock table it creates to become active.",
    )
    AWS_ACCESS_KEY = ConfigProperty(
        "hoodie.aws.access.key",
        None,
        parse_str,
        "DynamoDB-based lock: AWS access key (with hoodie.aws.secret.key); default: the "
        "table's S3 storage options, else the AWS credential chain.",
    )
    AWS_SECRET_KEY = ConfigProperty(
        "hoodie.aws.secret.key", None, parse_str, "DynamoDB-based lock: AWS secret key."
    )
    AWS_SESSION_TOKEN = ConfigProperty(
        "hoodie.aws.session.token", None, parse_str, "DynamoDB-based lock: AWS session token."
    )
    HEARTBEAT_MS = ConfigProperty(
        "hoodie.client.heartbeat.interval_in_ms",
        60_000,
        parse_positive,
        "Writer heartbeat interval.",
    )
    HEARTBEAT_MISSES = ConfigProperty(
        "hoodie.client.heartbeat.tolerable.misses",
        2,
        parse_non_negative,
        "Missed heartbeats after which another writer rolls a pending write back.",
    )
    FAILED_WRITES_POLICY = ConfigProperty(
        "hoodie.cleaner.policy.failed.writes",
        None,
        one_of("EAGER", "LAZY", "NEVER"),
        "EAGER (single writer default): roll back pending writes at start; LAZY (multi-writer "
        "default): only those whose heartbeat expired.",
    )
