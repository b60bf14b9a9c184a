"""TLS contexts and liveness defaults shared by the relay and its clients (spec §5.8).

A relay with a certificate serves ``wss://``; a client connecting to a ``wss://`` URL
verifies the relay's certificate against the system store, or against ``ca_file`` (a
PEM bundle, e.g. a private CA or a self-signed certificate).
"""

from __future__ import annotations

import ssl
from pathlib import Path

from posewire.codec.errors import UsageError

__all__ = [
    "DEFAULT_PING_INTERVAL",
    "DEFAULT_PING_TIMEOUT",
    "check_liveness",
    "client_tls_context",
    "server_tls_context",
]

#: Seconds between keepalive pings (relay and clients, spec §5.8 liveness).
DEFAULT_PING_INTERVAL = 2.0
#: Seconds a ping may wait for its pong before the link counts as dead (a busy machine
#: may hold a process back for a second; a half-open producer is still replaced in < 5 s).
DEFAULT_PING_TIMEOUT = 3.0


def check_liveness(ping_interval: float | None, ping_timeout: float | None) -> None:
    """Raise ``usage.bad_option`` unless both are None or positive and finite."""
    for name, value in (("ping_interval", ping_interval), ("ping_timeout", ping_timeout)):
        if value is not None and not 0 < value < 3600:
            raise UsageError("usage.bad_option", f"{name} must be in (0, 3600) seconds or None",
                             path=name)


def _readable(path: str | Path, what: str) -> str:
    p = Path(path)
    if not p.is_file():
        raise UsageError("usage.bad_option", f"{what} {str(p)!r} is not a readable file", path=what)
    return str(p)


def server_tls_context(cert: str | Path, key: str | Path) -> ssl.SSLContext:
    """A server context (TLS 1.2+) from a PEM certificate chain and its private key."""
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        ctx.load_cert_chain(_readable(cert, "tls_cert"), _readable(key, "tls_key"))
    except ssl.SSLError as exc:
        raise UsageError("usage.bad_option", f"cannot load the TLS certificate/key: {exc.reason}",
                         path="tls_cert") from None
    return ctx


def client_tls_context(url: str, ca_file: str | Path | None = None) -> ssl.SSLContext | None:
    """The context for connecting to ``url``: None for ``ws://`` (``ca_file`` is then a
    usage error), a verifying context for ``wss://`` (system store, or ``ca_file``)."""
    scheme = url.split(":", 1)[0].lower()
    if scheme == "ws":
        if ca_file is not None:
            raise UsageError("usage.bad_option", "ca_file needs a wss:// URL", path="ca_file")
        return None
    if scheme != "wss":
        raise UsageError("usage.bad_option", f"the relay URL must start with ws:// or wss://: {url!r}",
                         path="url")
    ctx = ssl.create_default_context(
        cafile=None if ca_file is None else _readable(ca_file, "ca_file"))
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    return ctx
