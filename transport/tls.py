"""TLS contexts and liveness defaults shared by the relay and its clients (spec §5.8).

A relay with a certificate serves ``wss://``; a client connecting to a ``wss://`` URL
verifies the relay's certificate against the system store, or against ``ca_file`` (a
PEM bundle, e.g. a private CA or a self-signed certificate), and its host against the
certificate's subjectAltName only (never the subject's CN). :func:`certificate_validity`
reads a certificate's validity period (the relay warns at start when it is near its end).
"""

from __future__ import annotations

import base64
import datetime
import re
import ssl
from pathlib import Path

from posewire.codec.errors import UsageError

__all__ = [
    "DEFAULT_PING_INTERVAL",
    "DEFAULT_PING_TIMEOUT",
    "certificate_validity",
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


_PEM_CERT = re.compile(rb"-----BEGIN CERTIFICATE-----(.+?)-----END CERTIFICATE-----", re.S)


def _der_item(data: bytes, i: int) -> tuple[int, int, int]:
    """``(tag, start, end)`` of the DER item at ``i`` (its content is ``data[start:end]``)."""
    tag, length = data[i], data[i + 1]
    i += 2
    if length & 0x80:
        n = length & 0x7F
        length = int.from_bytes(data[i:i + n], "big")
        i += n
    if i + length > len(data):
        raise ValueError("truncated DER")
    return tag, i, i + length


def _der_time(tag: int, text: bytes) -> datetime.datetime:
    s = text.decode("ascii").rstrip("Z")
    if tag == 0x17:  # UTCTime YYMMDDHHMMSS (RFC 5280 §4.1.2.5.1: YY < 50 is 20YY)
        year = int(s[:2])
        s = f"{2000 + year if year < 50 else 1900 + year}{s[2:]}"
    return datetime.datetime.strptime(s[:14], "%Y%m%d%H%M%S").replace(tzinfo=datetime.UTC)


def certificate_validity(cert: str | Path) -> tuple[datetime.datetime, datetime.datetime] | None:
    """``(not_before, not_after)`` (UTC) of the first certificate in the PEM file
    ``cert`` (RFC 5280 §4.1.2.5), or None when it cannot be read."""
    try:
        match = _PEM_CERT.search(Path(cert).read_bytes())
        if match is None:
            return None
        der = base64.b64decode(b"".join(match.group(1).split()))
        _, i, _ = _der_item(der, 0)  # Certificate
        _, i, _ = _der_item(der, i)  # TBSCertificate
        fields: list[tuple[int, int]] = []
        while len(fields) < 4:  # [0] version (optional), serial, signature, issuer, validity
            tag, start, end = _der_item(der, i)
            if not (tag == 0xA0 and not fields):
                fields.append((start, end))
            i = end
        start, _ = fields[3]
        tag1, s1, e1 = _der_item(der, start)
        tag2, s2, e2 = _der_item(der, e1)
        return _der_time(tag1, der[s1:e1]), _der_time(tag2, der[s2:e2])
    except (OSError, ValueError, IndexError):
        return None


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
    # spec §5.7 rule 10: the host is checked against the subjectAltName only (RFC 6125
    # §6.4.4); Python's default falls back to the subject's CN when a certificate has no
    # SAN, so a CN-only certificate would be accepted
    ctx.hostname_checks_common_name = False
    return ctx
