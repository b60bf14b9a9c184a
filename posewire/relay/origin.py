"""Who may connect: browser origins (spec §5.7 rule 9), the loopback rule for auth and
TLS (rules 5 and 10), and the certificate check at start (rule 10)."""

from __future__ import annotations

import datetime
import ipaddress
import logging
import ssl
from collections.abc import Iterable
from pathlib import Path

import idna
from websockets.asyncio.server import Server, ServerConnection
from websockets.http11 import Request, Response

from posewire.transport import certificate_validity

from .connection import RelayConnection
from .stats import LogLimiter, RelayStats

log = logging.getLogger("posewire.relay")

#: A certificate that expires sooner than this gets a warning at start (spec §5.7 rule 10).
CERT_WARN_DAYS = 7


def is_loopback(host: str | None) -> bool:
    """True when ``host`` only listens on the loopback interface (no auth needed)."""
    if not host:
        return False  # all interfaces
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


_DEFAULT_PORTS = {"http": "80", "https": "443", "ws": "80", "wss": "443"}


def ascii_host(host: str) -> str:
    """``host`` as browsers send it in ``Origin``: an internationalized name in its ASCII
    (punycode) form by UTS #46 non-transitional processing, as browsers map hosts
    (``bücher.example`` → ``xn--bcher-kva.example``), lowercased; an IP literal or a name
    IDNA refuses (an underscore) lowercased only."""
    if host.startswith("[") or not host:
        return host.lower()
    try:
        return idna.encode(host, uts46=True, transitional=False).decode("ascii")
    except (idna.IDNAError, UnicodeError, ValueError):
        return host.lower()


def norm_origin(origin: str) -> str:
    """An origin in the form it is compared in (spec §5.7 rule 9): its ASCII serialization
    (RFC 6454 §6.2) — scheme and host lowercased, the host in its punycode form
    (:func:`ascii_host`), the scheme's default port left out — without a trailing slash.
    Anything that is not ``scheme://host[:port]`` (``null``) is only lowercased."""
    text = origin.strip().rstrip("/")
    scheme, sep, rest = text.partition("://")
    if not sep or not rest or "/" in rest:
        return text.lower()
    scheme = scheme.lower()
    host, port = rest, ""
    if rest.startswith("["):
        end = rest.find("]")
        if end > 0 and rest[end + 1:end + 2] == ":":
            host, port = rest[:end + 1], rest[end + 2:]
    elif rest.count(":") == 1:
        host, port = rest.split(":")
    if port and port == _DEFAULT_PORTS.get(scheme):
        port = ""
    return f"{scheme}://{ascii_host(host)}" + (f":{port}" if port else "")


def looks_like_origin(origin: str) -> bool:
    """True when ``origin`` is ``scheme://host[:port]`` (what a browser sends)."""
    scheme, sep, rest = origin.strip().rstrip("/").partition("://")
    return bool(sep and scheme and rest and "/" not in rest and " " not in rest)


class OriginMixin:
    """The relay's Origin check and certificate warning (mixed into :class:`Relay`)."""

    # the relay's state this concern reads (set in Relay.__init__)
    stats: RelayStats
    host: str
    tls: ssl.SSLContext | None
    tls_cert: str | Path | None
    allow_origins: frozenset[str]
    _reject: LogLimiter
    _server: Server | None

    @property
    def port(self) -> int:
        raise NotImplementedError  # Relay.port

    @property
    def origins(self) -> frozenset[str]:
        """Browser origins accepted (spec §5.8): the relay's own (its viewer, served
        from the same host and port) and ``allow_origins``."""
        scheme = "https" if self.tls else "http"
        hosts = {self.host} if self.host and self.host not in ("0.0.0.0", "::") else set()
        if not self.host or is_loopback(self.host) or self.host in ("0.0.0.0", "::"):
            hosts |= {"127.0.0.1", "localhost", "::1"}
        own = set()
        if self._server is not None:
            for h in hosts:
                own.add(norm_origin(f"{scheme}://{f'[{h}]' if ':' in h else h}:{self.port}"))
        return frozenset(own) | self.allow_origins

    def origins_line(self, given: Iterable[str] = ()) -> str:
        """What browsers may connect from, in one line for the log at start (spec §5.7
        rule 9): the origins as compared (each ``--allow-origin`` in ``given`` whose
        compared form differs follows in brackets, as it was given)."""
        shown = {norm_origin(o): o.strip().rstrip("/") for o in given}
        own = sorted(self.origins - self.allow_origins)
        allowed = [o + (f" (given as {shown[o]})" if shown.get(o, o) != o else "")
                   for o in sorted(self.allow_origins)]
        return ("browser origins allowed: " + ", ".join(own + allowed)
                + " (clients that send no Origin are not browsers: unaffected)")

    def _check_request(self, ws: ServerConnection, request: Request) -> Response | None:
        """Origin check before the upgrade (spec §5.8): browsers only from allowed origins."""
        host = ws.peer_host if isinstance(ws, RelayConnection) else "?"
        origins = request.headers.get_all("Origin")
        if len(origins) > 1:
            # spec §5.7 rule 9: one Origin at most (RFC 6454 §7.3); a bad request, answered
            # once with 400 — never an internal error
            self.stats.origin_refused += 1
            self._reject("refused a request from %s: %d Origin headers", host, len(origins))
            return ws.respond(400, "one Origin header at most\n")
        origin = origins[0] if origins else None
        if origin is None or norm_origin(origin) in self.origins:
            return None
        self.stats.origin_refused += 1
        self._reject("refused a browser from %s: origin %r not allowed", host, origin[:100])
        return ws.respond(403, "origin not allowed\n")

    def _check_certificate(self) -> None:
        """Warn when the certificate has expired, is not valid yet, or expires within
        ``CERT_WARN_DAYS`` days (spec §5.7 rule 10): clients will refuse it."""
        if self.tls_cert is None:
            return
        validity = certificate_validity(self.tls_cert)
        if validity is None:
            return
        not_before, not_after = validity
        now = datetime.datetime.now(datetime.UTC)
        left = (not_after - now).total_seconds() / 86400
        if left < 0:
            log.warning("the TLS certificate %s EXPIRED %.1f days ago (%s): clients will "
                        "refuse it", self.tls_cert, -left, not_after.isoformat())
        elif left < CERT_WARN_DAYS:
            log.warning("the TLS certificate %s expires in %.1f days (%s)", self.tls_cert,
                        left, not_after.isoformat())
        if not_before > now:
            log.warning("the TLS certificate %s is not valid before %s: clients will "
                        "refuse it", self.tls_cert, not_before.isoformat())
