"""Websocket plumbing shared by the clients and the relay (below ``producers/`` and
``consumers/``, above ``codec/``): the client link, reconnect backoff, TLS contexts and
liveness settings (spec §5.7, §5.8).

Imported as ``posewire.transport``.
"""

from posewire.transport.client import (
    FATAL_CODES,
    Backoff,
    ClientLink,
    LinkClosedError,
    RelayError,
    retry_connect,
)

__all__ = [
    "FATAL_CODES",
    "Backoff",
    "ClientLink",
    "LinkClosedError",
    "RelayError",
    "retry_connect",
]
