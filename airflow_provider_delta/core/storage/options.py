"""``storage_options``: the keys a user passes for an object store, checked and put in canonical form.

The keys are those of delta-rs and the Rust ``object_store`` crate (case-insensitive), so options a
team already uses with delta-rs work unchanged, e.g. ``{"AWS_ENDPOINT_URL": "http://127.0.0.1:9000",
"AWS_ALLOW_HTTP": "true", "AWS_REGION": "eu-west-1"}``. Each key maps to one of three groups that
obstore takes separately: the store's own config (credentials, region, endpoint), HTTP client
options (``allow_http``, timeouts) and the retry policy (``max_retries``, ``retry_timeout``).
Keys delta-rs needs only for stores without conditional PUT (a DynamoDB lock, unsafe rename) are
accepted and ignored: commits here always use the store's put-if-absent.

Values that are secrets (keys, tokens, SAS) never appear in messages: ``redacted`` masks them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urlparse

from airflow_provider_delta.exceptions import InvalidStorageOptionsError

if TYPE_CHECKING:
    from collections.abc import Mapping

Provider = Literal["s3", "gcs", "azure", "memory"]

#: URI scheme -> obstore provider.
SCHEMES: dict[str, Provider] = {
    "s3": "s3",
    "s3a": "s3",
    "s3n": "s3",
    "gs": "gcs",
    "gcs": "gcs",
    "az": "azure",
    "azure": "azure",
    "abfs": "azure",
    "abfss": "azure",
    "adl": "azure",
    "memory": "memory",
}

_S3: dict[str, str] = {
    "aws_access_key_id": "access_key_id",
    "access_key_id": "access_key_id",
    "aws_secret_access_key": "secret_access_key",
    "secret_access_key": "secret_access_key",
    "aws_session_token": "session_token",
    "aws_token": "session_token",
    "session_token": "session_token",
    "token": "session_token",
    "aws_region": "region",
    "region": "region",
    "aws_default_region": "region",
    "default_region": "region",
    "aws_endpoint_url": "endpoint",
    "aws_endpoint_url_s3": "endpoint",
    "aws_endpoint": "endpoint",
    "endpoint_url": "endpoint",
    "endpoint": "endpoint",
    "aws_virtual_hosted_style_request": "virtual_hosted_style_request",
    "virtual_hosted_style_request": "virtual_hosted_style_request",
    "aws_skip_signature": "skip_signature",
    "skip_signature": "skip_signature",
    "aws_request_payer": "request_payer",
    "request_payer": "request_payer",
    "aws_server_side_encryption": "server_side_encryption",
    "aws_sse_kms_key_id": "sse_kms_key_id",
    "aws_sse_bucket_key_enabled": "sse_bucket_key_enabled",
    "aws_role_arn": "role_arn",
    "aws_role_session_name": "role_session_name",
    "aws_web_identity_token_file": "web_identity_token_file",
    "aws_sts_endpoint": "sts_endpoint",
    "aws_unsigned_payload": "unsigned_payload",
    "aws_checksum_algorithm": "checksum_algorithm",
    "aws_metadata_endpoint": "metadata_endpoint",
    "aws_container_credentials_relative_uri": "container_credentials_relative_uri",
}
_GCS: dict[str, str] = {
    "google_service_account": "service_account",
    "google_service_account_path": "service_account",
    "service_account": "service_account",
    "service_account_path": "service_account",
    "google_service_account_key": "service_account_key",
    "service_account_key": "service_account_key",
    "google_application_credentials": "application_credentials",
    "application_credentials": "application_credentials",
}
_AZURE: dict[str, str] = {
    "azure_storage_account_name": "account_name",
    "account_name": "account_name",
    "azure_storage_account_key": "account_key",
    "azure_storage_access_key": "account_key",
    "account_key": "account_key",
    "access_key": "account_key",
    "azure_storage_sas_token": "sas_key",
    "azure_storage_sas_key": "sas_key",
    "sas_token": "sas_key",
    "sas_key": "sas_key",
    "azure_storage_client_id": "client_id",
    "azure_client_id": "client_id",
    "client_id": "client_id",
    "azure_storage_client_secret": "client_secret",
    "azure_client_secret": "client_secret",
    "client_secret": "client_secret",
    "azure_storage_tenant_id": "tenant_id",
    "azure_tenant_id": "tenant_id",
    "tenant_id": "tenant_id",
    "azure_storage_token": "token",
    "bearer_token": "token",
    "azure_storage_use_emulator": "use_emulator",
    "use_emulator": "use_emulator",
    "azure_storage_endpoint": "endpoint",
    "azure_endpoint": "endpoint",
    "azure_use_azure_cli": "use_azure_cli",
    "use_azure_cli": "use_azure_cli",
    "azure_use_fabric_endpoint": "use_fabric_endpoint",
}
_CLIENT: dict[str, str] = {
    "allow_http": "allow_http",
    "aws_allow_http": "allow_http",
    "azure_allow_http": "allow_http",
    "allow_invalid_certificates": "allow_invalid_certificates",
    "aws_allow_invalid_certificates": "allow_invalid_certificates",
    "timeout": "timeout",
    "connect_timeout": "connect_timeout",
    "pool_idle_timeout": "pool_idle_timeout",
    "proxy_url": "proxy_url",
    "user_agent": "user_agent",
}
_RETRY = {"max_retries", "retry_timeout"}
#: delta-rs keys for stores without conditional PUT: not needed here (commits are put-if-absent).
_IGNORED = {
    "aws_s3_allow_unsafe_rename",
    "aws_s3_locking_provider",
    "aws_conditional_put",
    "conditional_put",
    "aws_copy_if_not_exists",
    "copy_if_not_exists",
    "delta_dynamo_table_name",
    "dynamo_lock_table_name",
}
_PROVIDER_KEYS: dict[Provider, dict[str, str]] = {"s3": _S3, "gcs": _GCS, "azure": _AZURE, "memory": {}}
_BOOLEAN = {"allow_http", "allow_invalid_certificates", "virtual_hosted_style_request", "skip_signature",
            "unsigned_payload", "sse_bucket_key_enabled", "use_emulator", "use_azure_cli", "use_fabric_endpoint"}
_SECRET_WORDS = ("secret", "key", "token", "password", "sas", "credential")


def is_secret_key(key: str) -> bool:
    """Whether an option's value must never be shown (credentials, tokens, SAS keys).

    Example:
        >>> is_secret_key("AWS_SECRET_ACCESS_KEY"), is_secret_key("AWS_REGION")
        (True, False)
    """
    lowered = key.lower()
    return any(word in lowered for word in _SECRET_WORDS) and lowered not in {"aws_sse_kms_key_id"}


def redacted(options: Mapping[str, Any] | None) -> dict[str, Any]:
    """``options`` with every secret value replaced by ``'***'`` (for logs and messages).

    Example:
        >>> redacted({"AWS_ACCESS_KEY_ID": "AKIA...", "AWS_REGION": "eu-west-1"})
        {'AWS_ACCESS_KEY_ID': '***', 'AWS_REGION': 'eu-west-1'}
    """
    return {k: ("***" if is_secret_key(str(k)) and v not in (None, "") else v) for k, v in (options or {}).items()}


@dataclass(frozen=True)
class StoreOptions:
    """``storage_options`` sorted into what obstore takes: store config, client options, retries."""

    provider: Provider
    config: dict[str, Any] = field(default_factory=dict)
    client: dict[str, Any] = field(default_factory=dict)
    retry: dict[str, Any] = field(default_factory=dict)

    def __repr__(self) -> str:
        # Never print credentials, even by accident (a repr in a log line or a traceback).
        return f"StoreOptions({self.provider!r}, config={redacted(self.config)}, client={self.client})"


def _boolean(key: str, value: object) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("true", "1", "yes", "on"):
        return True
    if text in ("false", "0", "no", "off", ""):
        return False
    raise InvalidStorageOptionsError(f"Cannot use storage option {key!r}: expected true or false, found {value!r}")


def _seconds(key: str, value: object) -> timedelta:
    text = str(value).strip().lower()
    try:
        if text.endswith("ms"):
            return timedelta(milliseconds=float(text[:-2]))
        if text.endswith("s"):
            return timedelta(seconds=float(text[:-1]))
        return timedelta(seconds=float(text))
    except ValueError:
        raise InvalidStorageOptionsError(
            f"Cannot use storage option {key!r}: expected seconds (e.g. '30' or '30s'), found {value!r}"
        ) from None


def parse_options(location: str, options: Mapping[str, Any] | None) -> StoreOptions:
    """Sort ``options`` for the store of ``location``'s scheme.

    Raises:
        InvalidStorageOptionsError: an unknown key (the message lists the nearest known ones), a bad
            value, or a scheme without an object store.

    Example:
        >>> parse_options("s3://b/t", {"AWS_REGION": "eu-west-1", "AWS_ALLOW_HTTP": "true"}).config
        {'region': 'eu-west-1'}
    """
    scheme = urlparse(location).scheme.lower()
    provider = SCHEMES.get(scheme)
    if provider is None:
        raise InvalidStorageOptionsError(
            f"Cannot open table {location!r}: no object store for scheme {scheme!r} "
            f"(supported: {', '.join(sorted(SCHEMES))})"
        )
    known = _PROVIDER_KEYS[provider]
    parsed = StoreOptions(provider)
    for raw_key, value in (options or {}).items():
        key = str(raw_key).strip().lower()
        if value is None or key in _IGNORED:
            continue
        if key in known:
            canonical = known[key]
            parsed.config[canonical] = _boolean(raw_key, value) if canonical in _BOOLEAN else str(value)
        elif key in _CLIENT:
            canonical = _CLIENT[key]
            if canonical in _BOOLEAN:
                parsed.client[canonical] = _boolean(raw_key, value)
            elif canonical.endswith("timeout"):
                parsed.client[canonical] = _seconds(raw_key, value)
            else:
                parsed.client[canonical] = str(value)
        elif key == "max_retries":
            try:
                parsed.retry["max_retries"] = int(value)
            except (TypeError, ValueError):
                raise InvalidStorageOptionsError(
                    f"Cannot use storage option {raw_key!r}: expected an integer, found {value!r}"
                ) from None
        elif key == "retry_timeout":
            parsed.retry["retry_timeout"] = _seconds(raw_key, value)
        else:
            accepted = sorted({*known, *_CLIENT, *_RETRY})
            hint = [k for k in accepted if key.split("_")[-1] in k][:6] or accepted[:6]
            raise InvalidStorageOptionsError(
                f"Cannot use storage option {raw_key!r} for {scheme}:// tables: unknown key "
                f"(did you mean one of {', '.join(hint)}?). Keys follow delta-rs and object_store, "
                "case-insensitive."
            )
    return parsed


__all__ = ["SCHEMES", "StoreOptions", "is_secret_key", "parse_options", "redacted"]
