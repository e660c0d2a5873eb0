"""``aws_conn_id``: object-store credentials from an Airflow AWS connection (users already have ``aws_default``).

A ``delta`` connection's ``storage_options`` (or its extra ``aws_conn_id``) may name an AWS connection
instead of holding keys. The credentials are resolved here, in the Airflow process, into the options
the engine takes (``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``, ``AWS_SESSION_TOKEN``, ``AWS_REGION``,
``AWS_ENDPOINT_URL``):

- with apache-airflow-providers-amazon installed, through its ``AwsBaseHook``: everything that
  provider supports (static keys, profiles, assumed roles, web identity) works;
- without it, from the connection itself, in the AWS connection's documented layout: ``login`` is
  the access key id, ``password`` the secret, the extra may hold ``aws_session_token``,
  ``region_name`` and ``endpoint_url``.

Keys given explicitly in ``storage_options`` win over the connection's. Nothing resolved here is
logged: callers log ``core.storage.options.redacted(...)`` when they log options at all.
"""

from __future__ import annotations

from typing import Any

from airflow.sdk import BaseHook
from airflow.sdk.exceptions import AirflowException

AWS_CONN_ID_KEY = "aws_conn_id"


def _from_amazon_provider(conn_id: str) -> dict[str, str] | None:
    try:
        from airflow.providers.amazon.aws.hooks.base_aws import AwsBaseHook  # lazy: optional provider
    except ImportError:
        return None
    hook = AwsBaseHook(aws_conn_id=conn_id, client_type="s3")
    credentials = hook.get_credentials()
    options = {"AWS_ACCESS_KEY_ID": credentials.access_key, "AWS_SECRET_ACCESS_KEY": credentials.secret_key}
    if credentials.token:
        options["AWS_SESSION_TOKEN"] = credentials.token
    if hook.conn_region_name:
        options["AWS_REGION"] = hook.conn_region_name
    endpoint = getattr(hook.conn_config, "endpoint_url", None)
    if endpoint:
        options["AWS_ENDPOINT_URL"] = endpoint
    return options


def _from_connection(conn_id: str) -> dict[str, str]:
    conn = BaseHook.get_connection(conn_id)
    extra: dict[str, Any] = conn.extra_dejson or {}
    options: dict[str, str] = {}
    if conn.login:
        options["AWS_ACCESS_KEY_ID"] = str(conn.login)
    if conn.password:
        options["AWS_SECRET_ACCESS_KEY"] = str(conn.password)
    for key, option in (("aws_session_token", "AWS_SESSION_TOKEN"), ("region_name", "AWS_REGION"),
                        ("endpoint_url", "AWS_ENDPOINT_URL")):
        if extra.get(key):
            options[option] = str(extra[key])
    if not options:
        raise AirflowException(
            f"Cannot take credentials from AWS connection {conn_id!r}: it has no login/password or "
            "extras, and apache-airflow-providers-amazon (which resolves profiles and roles) is not "
            "installed. Set the access key id as login and the secret as password, or install the provider."
        )
    return options


def aws_connection_options(conn_id: str) -> dict[str, str]:
    """Storage options holding the credentials (region, endpoint) of the AWS connection ``conn_id``.

    Raises:
        AirflowException: the connection does not exist or holds no credentials.
    """
    options = _from_amazon_provider(conn_id)
    return options if options is not None else _from_connection(conn_id)


def with_aws_connection(options: dict[str, str], aws_conn_id: str | None = None) -> dict[str, str]:
    """``options`` with ``aws_conn_id`` (a key of ``options``, or the argument) replaced by its credentials.

    Example:
        >>> with_aws_connection({"AWS_REGION": "eu-west-1"})  # no aws_conn_id: unchanged
        {'AWS_REGION': 'eu-west-1'}
    """
    explicit = {k: v for k, v in options.items() if k.lower() != AWS_CONN_ID_KEY}
    conn_id = next((v for k, v in options.items() if k.lower() == AWS_CONN_ID_KEY), None) or aws_conn_id
    if not conn_id:
        return explicit
    lowered = {k.lower() for k in explicit}
    resolved = {k: v for k, v in aws_connection_options(str(conn_id)).items() if k.lower() not in lowered}
    return {**resolved, **explicit}
