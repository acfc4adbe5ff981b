"""Hudi's ``DynamoDBBasedLockProvider``: an item of a DynamoDB table, kept with the AWS
DynamoDB Lock Client's protocol."""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid

from hudi_ds.concurrency.heartbeat import Periodic
from hudi_ds.concurrency.lock import DYNAMODB_LOCK_NAMES, LEASE_MARGIN_S, LockTimeoutError
from hudi_ds.config import ConcurrencyConfig, Options, WriteConfig, properties_of
from hudi_ds.errors import ConfigError, HudiError, LockLostError
from hudi_ds.storage import ObjectStorage, Storage
from hudi_ds.table_config import TableConfig

log = logging.getLogger("hudi_ds.write")

# -- Hudi's DynamoDBBasedLockProvider ------------------------------------------------------------
#: the lock item's attributes, as the AWS DynamoDB Lock Client (awslabs/amazon-dynamodb-lock-client,
#: ``AmazonDynamoDBLockClient``) that Hudi's provider drives stores them
DDB_KEY = "key"  # the partition key attribute (Hudi's ``DYNAMODB_ATTRIBUTE_NAME``)
DDB_OWNER = "ownerName"
DDB_LEASE = "leaseDuration"  # milliseconds, a string
DDB_RVN = "recordVersionNumber"  # a fresh UUID on every write of the item
DDB_RELEASED = "isReleased"  # "1" on an item released but kept (not written by Hudi's provider)
#: Hudi's default lease (``hoodie.write.lock.wait_time_ms``, 60 s) and the lock client's poll
DDB_DEFAULT_LEASE_MS = 60_000
DDB_MIN_LEASE_MS = 1_000
DDB_POLL_S = 1.0


class DynamoDBLock:
    """Hudi's ``DynamoDBBasedLockProvider`` (``hudi-aws``, ``DynamoDBBasedLockProviderBase``):
    one item per table (partition key ``key`` = ``hoodie.write.lock.dynamodb.partition_key``,
    the table name by default) in the DynamoDB table ``hoodie.write.lock.dynamodb.table``,
    kept with the AWS DynamoDB Lock Client's protocol, so Java writers with that provider and
    hudi_ds writers exclude each other:

    * the item is ``{key, ownerName, leaseDuration (ms, a string), recordVersionNumber (a fresh
      UUID per write)}``; reads are consistent (``ConsistentRead``);
    * acquire: absent -> ``PutItem`` if ``attribute_not_exists(key)``; released (``isReleased``)
      -> ``PutItem`` if it still is; held -> wait: a holder that does not change the record
      version number for its ``leaseDuration`` (counted from when this writer first saw it) is
      dead, and its item is replaced by ``PutItem`` if ``recordVersionNumber`` is still the one
      seen. Of several contenders exactly one conditional write succeeds;
    * heartbeat (a thread, every third of the lease, as Hudi sets it): ``UpdateItem`` of
      ``leaseDuration`` and a new ``recordVersionNumber`` if owner and version are ours; a
      failed condition means the lock was taken over -- the heartbeat stops (:attr:`lost`);
    * release: ``DeleteItem`` if owner and version are ours (Hudi's lock options delete the
      lock on release); a provider that lost the lock deletes nothing.

    The lease is ``hoodie.write.lock.wait_time_ms`` as in Hudi (60 s unless given); the table
    is created when absent (``billing_mode``, ``read_capacity``, ``write_capacity``) and waited
    for up to ``table_creation_timeout`` ms.

    Raises:
        ConfigError: boto3 is not installed, the lease is under 1 s, or no partition key can
            be derived (no ``hoodie.table.name``).
    """

    def __init__(
        self,
        *,
        table: str,
        partition_key: str,
        region: str,
        endpoint_url: str | None = None,
        credentials: dict[str, str] | None = None,
        lease_ms: int = DDB_DEFAULT_LEASE_MS,
        retries: int = 600,
        billing_mode: str = "PAY_PER_REQUEST",
        read_capacity: int = 20,
        write_capacity: int = 10,
        creation_timeout_ms: int = 120_000,
    ) -> None:
        if lease_ms < DDB_MIN_LEASE_MS:
            raise ConfigError(
                f"option {ConcurrencyConfig.LOCK_WAIT_MS.key!r}={lease_ms} is the DynamoDB "
                f"lock's lease duration (as in Hudi's DynamoDBBasedLockProvider) and must be at "
                f"least {DDB_MIN_LEASE_MS} ms"
            )
        try:
            import boto3
            from botocore.config import Config
        except ImportError as e:
            raise ConfigError(
                f'{DYNAMODB_LOCK_NAMES[0]} needs boto3: pip install "boto3>=1.28" ({e})'
            ) from None
        if endpoint_url is not None and "://" not in endpoint_url:
            endpoint_url = "https://" + endpoint_url  # as Hudi's getDynamoDBClient
        self.table = table
        self.partition_key = partition_key
        self.lease_ms = lease_ms
        self.heartbeat_s = lease_ms / 3000  # Hudi: withHeartbeatPeriod(leaseDuration / 3)
        self.poll_s = min(DDB_POLL_S, lease_ms / 10_000)
        self.retries = retries
        #: the lock client's default owner name: host name and a random UUID
        self.owner = f"{socket.gethostname()}{uuid.uuid4()}"
        self.client = boto3.client(
            "dynamodb",
            region_name=region,
            endpoint_url=endpoint_url,
            config=Config(
                retries={"mode": "standard", "max_attempts": 4},
                connect_timeout=10,
                read_timeout=30,
            ),
            **(credentials or {}),
        )
        self._mutex = threading.RLock()
        self._rvn: str | None = None  # the record version number of the item we hold
        self._renewed = 0.0  # monotonic time of the last successful write of our item
        self._heart: Periodic | None = None
        #: the item seen held by another owner: (record version number, monotonic first seen,
        #: its lease in seconds)
        self._watch: tuple[str, float, float] | None = None
        self.last_seen = "no lock item"
        #: True once a heartbeat found the lock taken by another owner while held
        self.lost = False
        self._ensure_table(billing_mode, read_capacity, write_capacity, creation_timeout_ms)

    # -- the lock table ------------------------------------------------------------------------
    def _ensure_table(self, billing: str, rcu: int, wcu: int, timeout_ms: int) -> None:
        """Create the lock table if it does not exist (Hudi's ``createLockTableInDynamoDB``) and
        wait until it is active."""
        status = self._table_status()
        if status is None:
            request: dict[str, object] = {
                "TableName": self.table,
                "KeySchema": [{"AttributeName": DDB_KEY, "KeyType": "HASH"}],
                "AttributeDefinitions": [{"AttributeName": DDB_KEY, "AttributeType": "S"}],
                "BillingMode": billing,
            }
            if billing == "PROVISIONED":
                request["ProvisionedThroughput"] = {
                    "ReadCapacityUnits": rcu,
                    "WriteCapacityUnits": wcu,
                }
            try:
                self.client.create_table(**request)
                log.info("created the DynamoDB lock table %s", self.table)
            except self.client.exceptions.ResourceInUseException:
                pass  # another writer created it meanwhile
            except Exception as e:
                raise HudiError(
                    f"could not create the DynamoDB lock table {self.table}: {e}"
                ) from e
        deadline = time.monotonic() + timeout_ms / 1000
        while status not in ("ACTIVE", "UPDATING"):
            if time.monotonic() > deadline:
                raise HudiError(
                    f"the DynamoDB lock table {self.table} is not active after {timeout_ms} ms "
                    f"(status {status}; {ConcurrencyConfig.DYNAMODB_TABLE_CREATION_TIMEOUT_MS.key})"
                )
            time.sleep(0.2)
            status = self._table_status()

    def _table_status(self) -> str | None:
        try:
            return str(self.client.describe_table(TableName=self.table)["Table"]["TableStatus"])
        except self.client.exceptions.ResourceNotFoundException:
            return None
        except Exception as e:
            raise HudiError(f"could not describe the DynamoDB lock table {self.table}: {e}") from e

    # -- DynamoDB calls ------------------------------------------------------------------------
    def _key(self) -> dict[str, dict[str, str]]:
        return {DDB_KEY: {"S": self.partition_key}}

    def read_item(self) -> dict[str, str] | None:
        """The lock item (attribute -> string value), or None when there is none."""
        item = self.client.get_item(TableName=self.table, Key=self._key(), ConsistentRead=True)
        raw = item.get("Item")
        if not raw:
            return None
        return {k: str(next(iter(v.values()))) for k, v in raw.items()}

    def _is_conditional_failure(self, e: Exception) -> bool:
        return isinstance(e, self.client.exceptions.ConditionalCheckFailedException)

    def _put_if(self, condition: str, names: dict[str, str], values: dict[str, str]) -> str | None:
        """``PutItem`` of our item under ``condition``; its record version number, or None when
        the condition failed."""
        rvn = str(uuid.uuid4())
        item = {
            DDB_KEY: {"S": self.partition_key},
            DDB_OWNER: {"S": self.owner},
            DDB_LEASE: {"S": str(self.lease_ms)},
            DDB_RVN: {"S": rvn},
        }
        kwargs: dict[str, object] = {
            "TableName": self.table,
            "Item": item,
            "ConditionExpression": condition,
            "ExpressionAttributeNames": names,
        }
        if values:
            kwargs["ExpressionAttributeValues"] = {k: {"S": v} for k, v in values.items()}
        try:
            self.client.put_item(**kwargs)
        except Exception as e:
            if self._is_conditional_failure(e):
                # a put retried by the client after a lost answer finds its own first attempt
                current = self.read_item()
                if current and current.get(DDB_OWNER) == self.owner and current.get(DDB_RVN) == rvn:
                    return rvn
                return None
            raise
        return rvn

    # -- acquire / heartbeat / release ---------------------------------------------------------
    @property
    def holds(self) -> bool:
        """This provider holds the lock (acquired, not released or lost)."""
        with self._mutex:
            return self._rvn is not None

    def held_until(self) -> float:
        """See :meth:`FileSystemLock.held_until`: a taker waits a whole lease after it first
        sees the record version number of our last write, which it cannot see before we sent
        that write."""
        with self._mutex:
            return self._renewed + self.lease_ms / 1000 - LEASE_MARGIN_S

    def try_acquire(self) -> bool:
        """One attempt: one consistent read and at most one conditional put. True if this
        provider holds the lock now. A held item is only taken over once this provider has seen
        its record version number unchanged for the item's lease duration."""
        with self._mutex:
            if self._rvn is not None:
                return True
            item = self.read_item()
            now = time.monotonic()
            if item is None:
                rvn = self._put_if("attribute_not_exists(#pk)", {"#pk": DDB_KEY}, {})
            elif DDB_RELEASED in item:
                rvn = self._put_if(
                    "attribute_exists(#pk) AND #ir = :ir",
                    {"#pk": DDB_KEY, "#ir": DDB_RELEASED},
                    {":ir": "1"},
                )
            else:
                seen = item.get(DDB_RVN, "")
                try:
                    lease_s = int(item.get(DDB_LEASE, "")) / 1000
                except ValueError:
                    lease_s = self.lease_ms / 1000
                self.last_seen = f"owner {item.get(DDB_OWNER)}, lease {lease_s:g} s"
                if self._watch is None or self._watch[0] != seen:
                    self._watch = (seen, now, lease_s)  # held, or renewed since last seen
                    return False
                if now - self._watch[1] <= self._watch[2]:
                    return False
                log.warning(
                    "taking over the DynamoDB lock %s/%s of %s (no heartbeat for %.1f s)",
                    self.table,
                    self.partition_key,
                    item.get(DDB_OWNER),
                    now - self._watch[1],
                )
                rvn = self._put_if(
                    "attribute_exists(#pk) AND #rvn = :rvn",
                    {"#pk": DDB_KEY, "#rvn": DDB_RVN},
                    {":rvn": seen},
                )
            if rvn is None:
                return False  # another writer won
            self._rvn = rvn
            self._renewed = now
            self._watch = None
            self.lost = False
            # any error is retried at the next beat (boto3 raises more than OSError)
            self._heart = Periodic(
                self.renew,
                self.heartbeat_s,
                f"dynamodb-lock-{self.owner[-8:]}",
                "DynamoDB lock",
                errors=(Exception,),
            )
            return True

    def acquire(self) -> None:
        """Take the lock, polling; waits at most one lease of the holder seen plus
        ``hoodie.write.lock.num_retries`` polls (as the lock client waits its lease duration
        plus the additional time Hudi gives it). A failing DynamoDB call is retried until then.

        Raises:
            LockTimeoutError: not acquired in that time (says who holds it, or the last error).
        """
        start = time.monotonic()
        last_error: Exception | None = None
        while True:
            try:
                if self.try_acquire():
                    return
                last_error = None
            except (HudiError, ConfigError):
                raise
            except Exception as e:  # botocore: network, throttling -- retried like the client
                last_error = e
                log.warning("DynamoDB lock attempt failed: %s", e)
            lease_s = self._watch[2] if self._watch is not None else 0.0
            if time.monotonic() - start > lease_s + self.retries * self.poll_s:
                why = f"last error: {last_error}" if last_error else f"held by {self.last_seen}"
                raise LockTimeoutError(
                    f"could not acquire the DynamoDB lock {self.table}/{self.partition_key} "
                    f"in {time.monotonic() - start:.1f} s ({why})"
                )
            time.sleep(self.poll_s)

    def renew(self) -> bool:
        """One heartbeat: a new record version number and the lease, if the item is still ours
        (owner and version). False when there is nothing to renew or the lock was lost."""
        with self._mutex:
            if self._rvn is None:
                return False
            now = time.monotonic()
            if now - self._renewed > self.lease_ms / 1000:
                # our lease ran out without a successful heartbeat: others may hold it now
                # (the lock client's LockItem.isExpired stops heartbeating then too)
                log.error("DynamoDB lock %s/%s: lease expired", self.table, self.partition_key)
                self._rvn = None
                self.lost = True
                return False
            new = str(uuid.uuid4())
            try:
                self.client.update_item(
                    TableName=self.table,
                    Key=self._key(),
                    UpdateExpression="SET #ld = :ld, #rvn = :newRvn",
                    ConditionExpression="attribute_exists(#pk) AND #rvn = :rvn AND #on = :on",
                    ExpressionAttributeNames={
                        "#pk": DDB_KEY,
                        "#ld": DDB_LEASE,
                        "#rvn": DDB_RVN,
                        "#on": DDB_OWNER,
                    },
                    ExpressionAttributeValues={
                        ":ld": {"S": str(self.lease_ms)},
                        ":newRvn": {"S": new},
                        ":rvn": {"S": self._rvn},
                        ":on": {"S": self.owner},
                    },
                )
            except Exception as e:
                if not self._is_conditional_failure(e):
                    raise
                current = self.read_item()
                if current and current.get(DDB_RVN) == new and current.get(DDB_OWNER) == self.owner:
                    self._rvn, self._renewed = new, now  # our retried update had landed
                    return True
                log.error(
                    "DynamoDB lock %s/%s was taken by another owner while %s held it",
                    self.table,
                    self.partition_key,
                    self.owner,
                )
                self._rvn = None
                self.lost = True
                return False
            self._rvn, self._renewed = new, now
            return True

    def confirm(self) -> None:
        """Prove that this provider held the lock without a break since it took it: a
        consistent read finds the item still at the owner and record version number this
        provider last wrote (a takeover writes a new version; heartbeats are conditional on
        ours). A lease this provider's heartbeat saw run out counts as lost, even if nobody
        took it over yet.

        Raises:
            LockLostError: the lease ran out or the item is another owner's or version.
        """
        with self._mutex:
            rvn = self._rvn
            item = self.read_item() if rvn is not None else None
            if item is None or item.get(DDB_OWNER) != self.owner or item.get(DDB_RVN) != rvn:
                self._rvn, self.lost = None, True  # not ours: release must not touch it
                raise LockLostError(
                    f"the DynamoDB lock {self.table}/{self.partition_key} of {self.owner} was "
                    f"lost (lease {self.lease_ms} ms; now "
                    f"{'held by ' + str(item.get(DDB_OWNER)) if item else 'not held'})"
                )

    def release(self) -> None:
        """Stop the heartbeat and delete the item if it is still ours (owner and version).

        A lock found taken by another owner is logged ("already stolen", as Hudi) and left.

        Raises:
            HudiError: the delete failed for another reason than the condition.
        """
        heart, self._heart = self._heart, None
        if heart is not None:
            heart.stop()
        with self._mutex:
            rvn, self._rvn = self._rvn, None
            self._renewed = 0.0
            if rvn is None:
                return
            try:
                self.client.delete_item(
                    TableName=self.table,
                    Key=self._key(),
                    ConditionExpression="attribute_exists(#pk) AND #rvn = :rvn AND #on = :on",
                    ExpressionAttributeNames={"#pk": DDB_KEY, "#rvn": DDB_RVN, "#on": DDB_OWNER},
                    ExpressionAttributeValues={":rvn": {"S": rvn}, ":on": {"S": self.owner}},
                )
            except Exception as e:
                if self._is_conditional_failure(e):
                    if self.read_item() is None:
                        return  # our delete retried after a lost answer had landed
                    log.error(
                        "DynamoDB lock %s/%s had already been taken by another owner",
                        self.table,
                        self.partition_key,
                    )
                    return
                raise HudiError(
                    f"could not release the DynamoDB lock {self.table}/{self.partition_key}: {e}"
                ) from e


#: the storage-option keys (deltalake / object_store names) of the table's S3 credentials
_S3_CREDENTIAL_KEYS = {
    "aws_access_key_id": ("aws_access_key_id", "access_key_id"),
    "aws_secret_access_key": ("aws_secret_access_key", "secret_access_key"),
    "aws_session_token": ("aws_session_token", "session_token", "token"),
}


def dynamodb_lock(storage: Storage, options: Options) -> DynamoDBLock:
    """The DynamoDB-based lock from the ``hoodie.write.lock.dynamodb.*`` options.

    Credentials: ``hoodie.aws.access.key`` / ``secret.key`` / ``session.token`` when given
    (Hudi's keys), else the table's S3 storage options' keys, else boto3's credential chain.

    Raises:
        ConfigError: no partition key (neither the option nor a table name), credentials given
            in part, or what :class:`DynamoDBLock` refuses.
    """
    c = ConcurrencyConfig
    pk: str | None = options.get(c.DYNAMODB_PARTITION_KEY) or options.get(WriteConfig.TABLE_NAME)
    if not pk:
        try:
            pk = TableConfig.load(storage).table_name
        except (HudiError, OSError):
            pk = None
    if not pk:
        raise ConfigError(
            f"{DYNAMODB_LOCK_NAMES[0]} needs option {c.DYNAMODB_PARTITION_KEY.key!r} (or "
            f"{WriteConfig.TABLE_NAME.key!r}, its default) for {storage.full_path()}"
        )
    creds: dict[str, str] = {}
    if options.is_set(c.AWS_ACCESS_KEY) or options.is_set(c.AWS_SECRET_KEY):
        access, secret = options.get(c.AWS_ACCESS_KEY), options.get(c.AWS_SECRET_KEY)
        if not access or not secret:
            raise ConfigError(
                f"options {c.AWS_ACCESS_KEY.key!r} and {c.AWS_SECRET_KEY.key!r} go together"
            )
        creds = {"aws_access_key_id": access, "aws_secret_access_key": secret}
        if options.get(c.AWS_SESSION_TOKEN):
            creds["aws_session_token"] = str(options.get(c.AWS_SESSION_TOKEN))
    elif isinstance(storage, ObjectStorage) and storage.base_uri.startswith(("s3://", "s3a://")):
        so = storage.storage_options
        for arg, keys in _S3_CREDENTIAL_KEYS.items():
            found = next((so[k] for k in keys if k in so), None)
            if found:
                creds[arg] = found
        if "aws_access_key_id" not in creds or "aws_secret_access_key" not in creds:
            creds = {}
    lease = options.get(c.LOCK_WAIT_MS) if options.is_set(c.LOCK_WAIT_MS) else DDB_DEFAULT_LEASE_MS
    return DynamoDBLock(
        table=options.get(c.DYNAMODB_TABLE) or "hudi_locks",
        partition_key=str(pk),
        region=options.get(c.DYNAMODB_REGION) or os.environ.get("AWS_REGION") or "us-east-1",
        endpoint_url=options.get(c.DYNAMODB_ENDPOINT_URL),
        credentials=creds,
        lease_ms=int(lease),
        retries=options.get(c.LOCK_RETRIES),
        billing_mode=options.get(c.DYNAMODB_BILLING_MODE),
        read_capacity=options.get(c.DYNAMODB_READ_CAPACITY),
        write_capacity=options.get(c.DYNAMODB_WRITE_CAPACITY),
        creation_timeout_ms=options.get(c.DYNAMODB_TABLE_CREATION_TIMEOUT_MS),
    )


#: the options only the DynamoDB-based lock reads
DYNAMODB_OPTION_KEYS = tuple(
    p.key
    for p in properties_of(ConcurrencyConfig)
    if p.key.startswith(("hoodie.write.lock.dynamodb.", "hoodie.aws."))
)
