"""Object stores (S3, GCS, Azure) chosen by URI, configured by ``storage_options``.

The client is `obstore <https://developmental-seed.github.io/obstore/>`_ (Python bindings of the
Rust ``object_store`` crate, the same one delta-rs and hudi-rs use), because it:

* exposes *conditional puts* (``mode="create"``: S3 ``If-None-Match: *``, GCS
  ``ifGenerationMatch=0``, Azure ``If-None-Match: *``), which make an atomic create-if-absent on
  the store possible -- pyarrow's and fsspec's S3 filesystems have no such call;
* takes the same configuration keys as deltalake and hudi-rs (``aws_access_key_id``,
  ``aws_endpoint_url``, ``google_service_account``, ``azure_storage_account_name``, ...), so one
  ``storage_options`` dict works for all three;
* retries transient failures (5xx including S3's 503 SlowDown, 429 throttling, dropped
  connections, timeouts of read requests) with exponential backoff and jitter;
* falls back to each cloud's usual credential chain when keys are not given (environment
  variables, web identity tokens, container and instance metadata credentials; GCS application
  default credentials; Azure managed identity / environment).

Local paths never come here: they keep :mod:`pyarrow.fs` (see :mod:`hudi_ds.storage`).

Keys of ``storage_options`` (case-insensitive):

* the store's own configuration keys, with the cloud's prefix (``aws_*`` for ``s3://``,
  ``google_*`` for ``gs://``, ``azure_*`` for ``abfs(s)://`` / ``az://``) or without it, as
  ``object_store`` defines them; a key the store does not know is refused, naming it;
* HTTP client keys, with or without the cloud's prefix: ``allow_http``,
  ``allow_invalid_certificates``, ``timeout``, ``connect_timeout``, ``proxy_url``, ... (see
  :data:`CLIENT_KEYS`);
* ``max_retries`` (default 10) and ``retry_timeout`` (seconds, default 180): how long a
  transient failure is retried before the call fails with :class:`~hudi_ds.errors.StorageError`.
"""

from __future__ import annotations

import difflib
import logging
import warnings
from collections.abc import Callable, Mapping
from datetime import timedelta
from typing import Any

from hudi_ds.errors import ConfigError

log = logging.getLogger(__name__)

#: URI scheme -> cloud
OBJECT_STORE_SCHEMES = {
    "s3": "s3",
    "s3a": "s3",
    "gs": "gcs",
    "abfs": "azure",
    "abfss": "azure",
    "az": "azure",
    "azure": "azure",
    "adl": "azure",
}
_CLOUD_PREFIX = {"s3": "aws_", "gcs": "google_", "azure": "azure_"}

#: HTTP client keys (``object_store``'s ``ClientConfigKey``) -> whether the value is a boolean
CLIENT_KEYS = {
    "allow_http": True,
    "allow_invalid_certificates": True,
    "connect_timeout": False,
    "default_content_type": False,
    "http1_only": True,
    "http2_only": True,
    "http2_keep_alive_interval": False,
    "http2_keep_alive_timeout": False,
    "http2_keep_alive_while_idle": False,
    "pool_idle_timeout": False,
    "pool_max_idle_per_host": False,
    "proxy_url": False,
    "proxy_ca_certificate": False,
    "proxy_excludes": False,
    "randomize_addresses": True,
    "read_timeout": False,
    "timeout": False,
    "user_agent": False,
}
#: the store's own keys (obstore 0.12's S3Config / GCSConfig / AzureConfig), each also taken
#: with the cloud's prefix: only to suggest a key for a misspelt one (obstore decides what
#: it accepts, aliases included)
STORE_KEYS = {
    "s3": [
        "access_key_id",
        "bucket",
        "checksum_algorithm",
        "conditional_put",
        "container_credentials_relative_uri",
        "container_credentials_full_uri",
        "container_authorization_token_file",
        "copy_if_not_exists",
        "default_region",
        "disable_tagging",
        "disable_bulk_delete",
        "endpoint",
        "endpoint_url",
        "metadata_endpoint",
        "region",
        "request_payer",
        "role_arn",
        "role_session_name",
        "secret_access_key",
        "server_side_encryption",
        "session_token",
        "skip_signature",
        "sse_bucket_key_enabled",
        "sse_kms_key_id",
        "sts_endpoint",
        "unsigned_payload",
        "virtual_hosted_style_request",
        "web_identity_token_file",
    ],
    "gcs": [
        "service_account",
        "service_account_key",
        "base_url",
        "bearer_token",
        "bucket",
        "application_credentials",
        "skip_signature",
    ],
    "azure": [
        "account_name",
        "account_key",
        "client_id",
        "client_secret",
        "credential_type",
        "tenant_id",
        "authority_host",
        "sas_key",
        "token",
        "use_emulator",
        "use_fabric_endpoint",
        "encryption_key",
        "endpoint",
        "msi_endpoint",
        "object_id",
        "msi_resource_id",
        "federated_token_file",
        "use_azure_cli",
        "skip_signature",
        "container_name",
        "disable_tagging",
        "fabric_token_service_url",
        "fabric_workload_host",
        "fabric_session_token",
        "fabric_cluster_identifier",
    ],
}
#: hudi_ds's own keys: the retry policy of transient failures
RETRY_KEYS = ("max_retries", "retry_timeout")
_DEFAULT_MAX_RETRIES = 10
_DEFAULT_RETRY_TIMEOUT_S = 180.0


def scheme_of(uri: str) -> str:
    """The lower-case scheme of ``uri`` ("" for a plain path)."""
    head, sep, _ = uri.partition("://")
    return head.lower() if sep else ""


def is_object_store_uri(uri: str) -> bool:
    """True when ``uri`` names an object store this module serves (s3, gs, abfs(s), az)."""
    return scheme_of(uri) in OBJECT_STORE_SCHEMES


def normalize_options(options: Mapping[str, Any] | None) -> dict[str, str]:
    """``storage_options`` as a plain ``{lower-case key: str}`` dict.

    Raises:
        ConfigError: a key is not a string, is given twice, or a value is None.
    """
    out: dict[str, str] = {}
    for k, v in (options or {}).items():
        if not isinstance(k, str) or not k:
            raise ConfigError(f"storage option keys are strings, got {k!r}")
        if v is None:
            raise ConfigError(f"storage option {k!r} has no value (None)")
        key = k.strip().lower()
        if key in out:  # keys are case-insensitive: 'AWS_REGION' and 'aws_region' are one
            raise ConfigError(
                f"storage option {k!r} is given twice (keys are case-insensitive): give it once"
            )
        out[key] = ("true" if v else "false") if isinstance(v, bool) else str(v)
    return out


def warn_ignored_for_local(uri: str, options: Mapping[str, str]) -> None:
    """Warn that ``storage_options`` have no effect on a local path."""
    if options:
        warnings.warn(
            f"storage_options {sorted(options)} are ignored: {uri} is a local path",
            UserWarning,
            stacklevel=4,
        )


def _bool(key: str, value: str) -> bool:
    v = value.strip().lower()
    if v in ("true", "1", "yes"):
        return True
    if v in ("false", "0", "no"):
        return False
    raise ConfigError(f"storage option {key!r} must be true or false, got {value!r}")


def split_options(
    uri: str, options: Mapping[str, str]
) -> tuple[dict[str, str], dict[str, Any], dict[str, Any]]:
    """``options`` split into the store's config, the HTTP client options and the retry config.

    Raises:
        ConfigError: a client or retry key has a bad value.
    """
    cloud = OBJECT_STORE_SCHEMES[scheme_of(uri)]
    prefix = _CLOUD_PREFIX[cloud]
    config: dict[str, str] = {}
    client: dict[str, Any] = {}
    max_retries = _DEFAULT_MAX_RETRIES
    retry_timeout = _DEFAULT_RETRY_TIMEOUT_S
    for key, value in options.items():
        bare = key[len(prefix) :] if key.startswith(prefix) else key
        if bare in CLIENT_KEYS:
            client[bare] = _bool(key, value) if CLIENT_KEYS[bare] else value
        elif key == "max_retries":
            try:
                max_retries = int(value)
            except ValueError:
                max_retries = -1
            if max_retries < 0:
                raise ConfigError(
                    f"storage option 'max_retries' must be an int >= 0, got {value!r}"
                )
        elif key == "retry_timeout":
            try:
                retry_timeout = float(value.removesuffix("s"))
            except ValueError:
                retry_timeout = -1.0
            if retry_timeout <= 0:
                raise ConfigError(
                    f"storage option 'retry_timeout' must be seconds > 0, got {value!r}"
                )
        else:
            config[key] = value
    retry = {
        "max_retries": max_retries,
        "retry_timeout": timedelta(seconds=retry_timeout),
        "backoff": {
            "init_backoff": timedelta(milliseconds=100),
            "max_backoff": timedelta(seconds=15),
            "base": 2,
        },
    }
    return config, client, retry


def build_store(uri: str, options: Mapping[str, str]) -> Any:
    """An obstore store rooted at ``uri`` (bucket/container and key prefix) with ``options``.

    Raises:
        ConfigError: an unknown key (named), a bad value, or a URI the store cannot parse.
    """
    try:
        from obstore.exceptions import UnknownConfigurationKeyError
        from obstore.store import from_url
    except ImportError as e:  # pragma: no cover - obstore is a declared dependency
        raise ConfigError(f"{uri} needs the obstore package (pip install obstore)") from e
    config, client, retry = split_options(uri, options)
    try:
        make: Any = from_url  # its overloads type each cloud's config separately
        return make(uri, config=config or None, client_options=client or None, retry_config=retry)
    except UnknownConfigurationKeyError as e:
        bad = [k for k in config if f"'{k}'" in str(e)]
        name = bad[0] if bad else str(e).split("\n", 1)[0]
        raise ConfigError(
            f"unknown storage option {name!r} for {uri}{_did_you_mean(uri, name)}"
        ) from e
    except BaseException as e:  # obstore raises ValueError / GenericError / a Rust panic
        if isinstance(e, (KeyboardInterrupt, SystemExit)):
            raise
        if "Duplicate key" in str(e):
            raise ConfigError(_duplicate_message(uri, config, make)) from e
        raise ConfigError(
            f"cannot open {uri} with storage options {sorted(options)}: "
            f"{str(e).splitlines()[0] if str(e) else type(e).__name__}"
        ) from e


def _did_you_mean(uri: str, key: str) -> str:
    """A hint for a misspelt key: the closest key of the store, the client or the retry."""
    cloud = OBJECT_STORE_SCHEMES[scheme_of(uri)]
    prefixes = [_CLOUD_PREFIX[cloud], *(["azure_storage_"] if cloud == "azure" else [])]
    bare = [*STORE_KEYS[cloud], *CLIENT_KEYS]
    known = [*bare, *(p + k for p in prefixes for k in bare), *RETRY_KEYS]
    close = difflib.get_close_matches(key, known, n=1, cutoff=0.75)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    return (
        f"{hint} (keys: the store's own, e.g. {prefixes[0]}..., HTTP client keys such as "
        f"'allow_http' or 'timeout', or {list(RETRY_KEYS)}: docs/object_stores.md)"
    )


def _duplicate_message(uri: str, config: Mapping[str, str], make: Any) -> str:
    """Which of ``config``'s keys name the same setting: ``object_store`` takes aliases
    (``aws_endpoint``, ``aws_endpoint_url``, ``endpoint``; ``aws_region``, ``region``) and
    refuses two of one setting as a "Duplicate key" of its own spelling, which names neither
    key given. Each key is opened alone (no request is made) to learn the setting it names."""
    by_setting: dict[str, list[str]] = {}
    for key, value in config.items():
        try:
            names = [n for n in make(uri, config={key: value}).config if n != "bucket"]
        except Exception:  # a value the store refuses alone: it is not one of the aliases
            continue
        for name in names:
            by_setting.setdefault(name, []).append(key)
    same = [keys for keys in by_setting.values() if len(keys) > 1]
    keys = same[0] if same else sorted(config)
    return (
        f"storage options {keys} for {uri} name the same setting (object_store takes them as "
        "aliases of one another): give only one of them"
    )


def short_error(e: BaseException) -> str:
    """The first line of an obstore error (its Debug dump follows on further lines)."""
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__


#: bytes of an object's tail fetched by the first read that falls in it: a Parquet reader
#: reads the file's last 64 KiB (the footer length), then the rest of a longer footer, then
#: the column chunks. Hudi's base files carry a bloom filter of the keys in the footer's
#: key-value metadata (``org.apache.hudi.bloomfilter``, some 100-500 KiB at the default
#: 60,000 entries), so the footer costs one GET only with a tail that large; a file smaller
#: than the tail is read whole by that one GET (its column chunks come from it too)
TAIL_BYTES = 1 << 20


class RangeReader:
    """A read-only file over an object: every read is one ranged GET (pyarrow's Parquet reader
    reads the footer, then whole column chunks), except that the first read within the last
    :data:`TAIL_BYTES` fetches the whole tail, so the footer length and the footer that
    precedes it cost one request."""

    def __init__(self, get_range: Callable[[int, int], bytes], size: int) -> None:
        self._get = get_range  # (start, end) -> the bytes
        self._size = size
        self._pos = 0
        self._tail: bytes | None = None
        self._tail_start = max(0, size - TAIL_BYTES)
        self.closed = False

    def size(self) -> int:
        return self._size

    def seekable(self) -> bool:
        return True

    def readable(self) -> bool:
        return True

    def writable(self) -> bool:
        return False

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = 0) -> int:
        base = {0: 0, 1: self._pos, 2: self._size}[whence]
        self._pos = max(0, base + offset)
        return self._pos

    def read(self, n: int = -1) -> bytes:
        end = self._size if n is None or n < 0 else min(self._size, self._pos + n)
        if end <= self._pos:
            return b""
        start = self._pos
        if start >= self._tail_start:
            if self._tail is None:
                self._tail = self._get(self._tail_start, self._size)
            data = self._tail[start - self._tail_start : end - self._tail_start]
        else:
            data = self._get(start, end)
        self._pos = end
        return data

    def close(self) -> None:
        self.closed = True
