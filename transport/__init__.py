"""Websocket plumbing shared by the clients and the relay (below ``producers/`` and
``consumers/``, above ``codec/``): the client link, reconnect backoff, TLS contexts and
liveness settings (spec §5.7, §5.8).

Imported as ``posewire.transport``.
"""

from posewire.transport.client import (
    FATAL_CODES,
    STABLE_S,
    Backoff,
    ClientLink,
    LinkClosedError,
    RelayClient,
    RelayError,
    RelayUrls,
    connect_failure,
    retry_connect,
    retry_line,
)
from posewire.transport.tls import (
    DEFAULT_PING_INTERVAL,
    DEFAULT_PING_TIMEOUT,
    certificate_validity,
    check_liveness,
    client_tls_context,
    server_tls_context,
)

__all__ = [
    "DEFAULT_PING_INTERVAL",
    "DEFAULT_PING_TIMEOUT",
    "FATAL_CODES",
    "STABLE_S",
    "Backoff",
    "ClientLink",
    "LinkClosedError",
    "RelayClient",
    "RelayError",
    "RelayUrls",
    "certificate_validity",
    "check_liveness",
    "client_tls_context",
    "connect_failure",
    "retry_connect",
    "retry_line",
    "server_tls_context",
]
