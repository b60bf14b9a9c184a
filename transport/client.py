"""The client side of a posewire websocket, shared by :mod:`posewire.producers.publisher`
and :mod:`posewire.consumers.subscriber`.

One :class:`ClientLink` is one websocket to a relay driven by a sans-I/O
:class:`posewire.codec.protocol.Connection` (spec §5.10): it connects with the ``posewire.v1``
subprotocol (spec §5.1), sends the hello, waits for the welcome (spec §5.3) and turns
an error message or a close into :class:`RelayError` / :class:`LinkClosedError`.
:class:`Backoff` is the exponential reconnect schedule both clients use;
:class:`RelayUrls` the relays they may use, in turn (spec §5.7.1).
"""

from __future__ import annotations

import asyncio
import random
import socket
import ssl
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Self

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidURI
from websockets.protocol import State as WsState
from websockets.typing import Subprotocol

from posewire.codec.errors import DecodeError, UsageError
from posewire.codec.protocol import (
    CLOSE_CODES,
    Closed,
    Connection,
    Event,
    ProtocolFailure,
    Received,
    SequenceReset,
    Skipped,
    State,
)
from posewire.codec.wire import SUBPROTOCOL, ErrorMessage, Message, Welcome
from posewire.transport.tls import (
    DEFAULT_PING_INTERVAL,
    DEFAULT_PING_TIMEOUT,
    check_liveness,
    client_tls_context,
)

__all__ = [
    "FATAL_CODES",
    "STABLE_S",
    "Backoff",
    "ClientLink",
    "LinkClosedError",
    "RelayClient",
    "RelayError",
    "RelayUrls",
    "connect_failure",
    "retry_connect",
    "retry_line",
]

#: Error codes a reconnect cannot fix (spec §5.8): the client gives up on them.
FATAL_CODES: frozenset[str] = frozenset({"decode.auth", "decode.registry", "decode.version"})
_FATAL_CLOSE = frozenset(CLOSE_CODES[c] for c in FATAL_CODES)
#: Link failures a reconnect cannot fix: ``tls`` = the relay's certificate does not
#: verify (expired, wrong host, unknown CA) — retrying would fail the same way; ``dns`` =
#: the relay's host name does not exist (the resolver's answer, not a failure to ask it).
_FATAL_LINK = frozenset({"tls", "dns"})
#: ``getaddrinfo`` errors that say the name does not exist (``EAI_NONAME``, ``EAI_NODATA``):
#: ``dns``, given up at once. Any other (``EAI_AGAIN``: no answer from the resolver now) is
#: a link failure, retried with the backoff.
_NO_SUCH_HOST = frozenset(e for e in (getattr(socket, "EAI_NONAME", None), getattr(socket, "EAI_NODATA", None))
                          if e is not None)
#: Seconds a closing link waits for the relay's close before dropping the TCP connection
#: (a dead relay never answers: the link must not linger in CLOSING).
_CLOSE_TIMEOUT = 1.0


class RelayError(Exception):
    """The relay (or the link to it) reported an error: stable ``code`` (a key of
    :data:`posewire.codec.errors.ERROR_CODES`, ``"link"`` for transport failures, ``"tls"``
    when the relay's certificate does not verify or ``"dns"`` when its host name does not
    exist), optional
    websocket ``close_code``, ``path`` and ``message``. ``fatal`` errors are not retried."""

    def __init__(self, code: str, message: str, *, close_code: int | None = None,
                 path: str = "") -> None:
        self.code = code
        self.message = message
        self.close_code = close_code
        self.path = path
        # plain language first, the stable code last: "what (close N) (code)"
        super().__init__(message + (f" (close {close_code})" if close_code else "") + f" ({code})")

    @property
    def fatal(self) -> bool:
        """True when reconnecting cannot help (auth, registry, protocol version, a
        certificate that does not verify)."""
        return (self.code in FATAL_CODES or self.code in _FATAL_LINK
                or self.close_code in _FATAL_CLOSE)

    @classmethod
    def from_message(cls, msg: ErrorMessage, close_code: int | None = None) -> RelayError:
        """From a received error message (spec §5.8)."""
        return cls(msg.code, msg.message, close_code=close_code, path=msg.path)


class LinkClosedError(Exception):
    """The websocket closed without an error message (``code``: close code or None)."""

    def __init__(self, code: int | None, reason: str = "") -> None:
        self.code = code
        self.reason = reason
        super().__init__(f"connection closed ({code}) {reason}".strip())


#: Seconds a link must last after its welcome for its connect to count as a success
#: (spec §5.10): one that ends sooner — a relay that fails every link at once, e.g. with
#: a message over the client's limit — is a failed attempt, and the next one backs off.
STABLE_S = 3.0


@dataclass
class Backoff:
    """Exponential reconnect delays: ``initial · factor^k`` capped at ``maximum``, with
    ±``jitter`` relative randomization. A connect is a success only once its link has
    lasted ``stable_s`` after its welcome (:meth:`opened`, :meth:`ended`): a link that
    dies right after its welcome counts as a failure, so the delays keep growing."""

    initial: float = 0.05
    maximum: float = 5.0
    factor: float = 2.0
    jitter: float = 0.1
    attempt: int = 0
    stable_s: float = STABLE_S
    #: monotonic seconds when the current link was welcomed (None: no link)
    opened_at: float | None = None

    def next_delay(self) -> float:
        """The delay before the next attempt (and count the attempt)."""
        base = min(self.maximum, self.initial * self.factor ** self.attempt)
        self.attempt += 1
        return base * (1.0 + self.jitter * (2.0 * random.random() - 1.0))

    def reset(self) -> None:
        """Back to the initial delay."""
        self.attempt = 0

    def opened(self, now: float | None = None) -> None:
        """A link was welcomed (at monotonic ``now``); the schedule is not reset yet."""
        self.opened_at = time.monotonic() if now is None else now

    def ended(self, now: float | None = None) -> float:
        """The link last :meth:`opened` ended (at monotonic ``now``): the seconds to wait
        before connecting again — 0, and the schedule back to its start, when it lasted
        ``stable_s`` or more; else it was a failed attempt: the next delay."""
        now = time.monotonic() if now is None else now
        opened, self.opened_at = self.opened_at, None
        if opened is not None and now - opened >= self.stable_s:
            self.reset()
            return 0.0
        return self.next_delay()


class RelayUrls:
    """The relays a client may use (spec §5.7.1): one URL, or several relays of one
    cluster (a list, or one string with commas). The client uses :attr:`current`
    and moves to the next one (:meth:`advance`) when a connect fails or the link
    drops, so a client of a relay that died goes on on another. ``ca_file``: the CA
    bundle that verifies the ``wss://`` relays (the system's when None); each URL's TLS
    context is made once, here."""

    def __init__(self, urls: str | Sequence[str], *, ca_file: str | Path | None = None) -> None:
        items = urls.split(",") if isinstance(urls, str) else list(urls)
        self.urls: tuple[str, ...] = tuple(u.strip() for u in items if u.strip())
        if not self.urls:
            raise UsageError("usage.bad_option", "at least one relay URL is needed", path="url")
        self._tls = {u: client_tls_context(u, ca_file) for u in self.urls}
        self._index = 0

    @property
    def current(self) -> str:
        """The URL to use now."""
        return self.urls[self._index]

    @property
    def tls(self) -> ssl.SSLContext | None:
        """The TLS context for :attr:`current` (None for ``ws://``)."""
        return self._tls[self.current]

    def advance(self) -> None:
        """Move to the next URL (wrapping around)."""
        self._index = (self._index + 1) % len(self.urls)


async def retry_connect(open_once: Callable[[], Awaitable[None]], *, backoff: Backoff,
                        reconnect: bool, max_retries: int | None,
                        is_closed: Callable[[], bool], what: str,
                        on_retry: Callable[[RelayError, float], None] | None = None) -> None:
    """Call ``open_once`` until it succeeds, sleeping ``backoff`` delays between tries
    (spec §5.10); the link it opened then tells ``backoff`` when it ends
    (:meth:`Backoff.ended`). Raises :class:`RelayError` when the failure is fatal (auth,
    registry, version), when ``reconnect`` is off, or after ``max_retries`` failures;
    ``usage.state`` when ``is_closed()`` turns true meanwhile. ``on_retry(error, delay)``
    is told each failure that will be retried, and the seconds until the next try."""
    failures = 0
    while True:
        if is_closed():
            raise UsageError("usage.state", f"the {what} is closed")
        try:
            await open_once()
            backoff.opened()  # a success once the link lasts (Backoff.ended)
            return
        except (RelayError, LinkClosedError) as exc:
            err = exc if isinstance(exc, RelayError) else RelayError(
                "link", str(exc), close_code=exc.code)
            failures += 1
            if err.fatal or not reconnect or (max_retries is not None and failures > max_retries):
                raise err from None
        delay = backoff.next_delay()
        if on_retry is not None:
            on_retry(err, delay)
        await asyncio.sleep(delay)


def retry_line(url: str, err: RelayError, delay: float) -> str:
    """What a client waits for, in one line: ``relay ws://… refused, retrying in 2 s``."""
    what = err.message if err.message.startswith("relay ") else f"relay {url}: {err}"
    return f"{what}, retrying in {delay:.2g} s"


def connect_failure(exc: BaseException, open_timeout: float) -> str:
    """Why a connect failed, in a few words ("refused", "unknown host", ...)."""
    if isinstance(exc, ConnectionRefusedError):
        return "refused"
    if isinstance(exc, socket.gaierror):
        return f"unknown host ({exc.strerror})"
    if isinstance(exc, TimeoutError):
        return f"did not answer within {open_timeout:g} s"
    if isinstance(exc, ssl.SSLError):
        return f"TLS failed ({exc})"
    if isinstance(exc, InvalidURI):
        return f"is not a websocket URL ({exc})"
    if isinstance(exc, InvalidHandshake):
        return f"refused the websocket handshake ({exc})"
    return f"cannot be reached ({exc})"


class ClientLink:
    """One websocket to a relay with its protocol state machine (spec §5.3, §5.10)."""

    def __init__(self, ws: ClientConnection, conn: Connection) -> None:
        self.ws = ws
        self.conn = conn
        self.welcome: Welcome | None = None
        #: Whether the last frame fed was behind the newest seen (spec §5.4); never on a
        #: link from a relay, whose frames come in producer order (spec §5.10).
        self.last_stale = False
        #: Whether the last frame fed started a new producer's numbering: the same or an
        #: earlier ``s`` than the newest on this link (spec §5.10 reset).
        self.last_reset = False
        #: Messages from the relay that did not decode and were skipped (spec §5.10),
        #: and the last one's error.
        self.skipped = 0
        self.last_skip: DecodeError | None = None

    @classmethod
    async def open(cls, url: str, stream: str, *, role: Literal["producer", "consumer"],
                   token: str | None, client: str, open_timeout: float,
                   max_size: int, tls: ssl.SSLContext | None = None,
                   ping_interval: float | None = DEFAULT_PING_INTERVAL,
                   ping_timeout: float | None = DEFAULT_PING_TIMEOUT) -> ClientLink:
        """Connect, send the hello and wait for the welcome.

        ``tls``: the context for a ``wss://`` URL (:func:`~posewire.transport.client_tls_context`;
        None: the system default). ``ping_interval`` / ``ping_timeout``: keepalive; a relay
        that does not answer a ping in time closes the link (1011).
        Raises :class:`RelayError` when the relay answers with an error (e.g. auth) or
        the transport fails (code ``"link"``).
        """
        try:
            ws = await connect(url, subprotocols=[Subprotocol(SUBPROTOCOL)],
                               open_timeout=open_timeout, max_size=max_size,
                               compression=None, proxy=None, ssl=tls,
                               ping_interval=ping_interval, ping_timeout=ping_timeout,
                               close_timeout=_CLOSE_TIMEOUT)
        except ssl.SSLCertVerificationError as exc:
            # fatal: the same certificate fails the same way on every retry
            raise RelayError("tls", f"the TLS certificate of {url} does not verify: "
                             f"{exc.verify_message or exc.reason}") from None
        except socket.gaierror as exc:
            # an unknown host is reported once and not retried (a name that does not exist
            # will not start to); a resolver that cannot answer now is retried
            code = "dns" if exc.errno in _NO_SUCH_HOST else "link"
            raise RelayError(code, f"relay {url} {connect_failure(exc, open_timeout)}") from None
        except (OSError, InvalidHandshake, InvalidURI, TimeoutError, ssl.SSLError) as exc:
            raise RelayError("link", f"relay {url} {connect_failure(exc, open_timeout)}") from None
        link = cls(ws, Connection(side="client", role=role))
        try:
            await ws.send(link.conn.hello(stream, client=client, token=token))
            async with asyncio.timeout(open_timeout):
                while link.conn.state is State.AWAIT_WELCOME:
                    for msg in link.feed(await ws.recv()):
                        if isinstance(msg, Welcome):
                            link.welcome = msg
        except ConnectionClosed as exc:
            raise link.closed_error(exc) from None
        except TimeoutError:
            await ws.close()
            raise RelayError("link", f"relay {url} sent no welcome within {open_timeout:g} s") from None
        except RelayError:
            await ws.close()
            raise
        return link

    @property
    def is_open(self) -> bool:
        """True while both the protocol and the websocket are open (a keepalive timeout
        moves the websocket to closing before the reader sees the close)."""
        return self.conn.state is State.OPEN and self.ws.state is WsState.OPEN

    def feed(self, data: bytes | str) -> list[Message]:
        """Feed one received websocket message to the state machine; the valid messages.

        A message that does not decode (malformed, over the size the welcome announced)
        is skipped and counted in :attr:`skipped` (spec §5.10). An error message from the
        relay raises :class:`RelayError`; any other violation by the relay raises
        :class:`RelayError` with its code (we close the link).
        """
        if isinstance(data, str):
            error = DecodeError("decode.type", "a message must be binary", path="$")
            if self.conn.state in (State.OPEN, State.CLOSING):
                self.skipped += 1  # spec §5.10: skipped like any message that does not decode
                self.last_skip = error
                return []
            events: list[Event] = [self.conn.fail(error)]
        else:
            events = self.conn.receive_data(data)
        out: list[Message] = []
        reset = False
        for ev in events:
            if isinstance(ev, Received):
                if isinstance(ev.message, ErrorMessage):
                    raise RelayError.from_message(ev.message)
                if ev.message.TYPE == "f":
                    self.last_stale = ev.stale
                    self.last_reset = reset
                    reset = False
                out.append(ev.message)
            elif isinstance(ev, SequenceReset):
                reset = True
            elif isinstance(ev, ProtocolFailure):
                raise RelayError(ev.error.code, f"relay sent bad data: {ev.error.message}",
                                 close_code=ev.close_code, path=ev.error.path)
            elif isinstance(ev, Skipped):
                self.skipped += 1
                self.last_skip = ev.error
            elif isinstance(ev, Closed):
                break
        return out

    def closed_error(self, exc: ConnectionClosed) -> RelayError | LinkClosedError:
        """The exception for a close seen as ``exc`` (an app close code → RelayError)."""
        code = exc.rcvd.code if exc.rcvd is not None else None
        reason = exc.rcvd.reason if exc.rcvd is not None else ""
        self.conn.connection_closed()
        if code is not None and 4000 <= code < 5000:
            known = {v: k for k, v in CLOSE_CODES.items()}
            name = known.get(code, reason or "decode.state")
            # spec §5.8: the reason is "<code>: <message>"; the code is said once, last
            message = reason.removeprefix(f"{name}: ") or "closed by the relay"
            return RelayError(name, message, close_code=code)
        return LinkClosedError(code, reason)

    async def close(self, reason: str = "") -> None:
        """Say bye (when allowed) and close the websocket (1000)."""
        try:
            if self.conn.state is State.OPEN:
                await self.ws.send(self.conn.bye(reason))
        except ConnectionClosed:
            pass
        await self.ws.close()
        self.conn.connection_closed()


class RelayClient:
    """What the reference publisher and subscriber share: the relay URLs of a cluster
    (the next one after a failure, spec §5.7.1), the hello's fields, the keepalive, the
    retry loop with its backoff (spec §5.10) and the lines that say what the client waits
    for (``on_status``). Subclasses open their link with :meth:`_open_link` and connect
    with :meth:`_retry`."""

    _role: Literal["producer", "consumer"]
    _what: str

    def __init__(self, url: str | Sequence[str], stream: str, *, token: str | None, client: str,
                 reconnect: bool, backoff_initial: float, backoff_max: float,
                 max_retries: int | None, open_timeout: float, ca_file: str | Path | None,
                 ping_interval: float | None, ping_timeout: float | None,
                 on_status: Callable[[str], None] | None) -> None:
        check_liveness(ping_interval, ping_timeout)
        self.urls = RelayUrls(url, ca_file=ca_file)
        self.stream = stream
        self.token = token
        self.client = client
        self.reconnect = reconnect
        self.backoff = Backoff(initial=backoff_initial, maximum=backoff_max)
        self.max_retries = max_retries
        self.open_timeout = open_timeout
        self.ping_interval = ping_interval
        self.ping_timeout = ping_timeout
        self.on_status = on_status
        self.reconnects = 0
        self._tried = self.urls.current
        self._link: ClientLink | None = None
        self._closed = False
        self._ever_connected = False

    async def __aenter__(self) -> Self:
        await self.connect()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def connect(self) -> None:  # pragma: no cover - every subclass has its own
        raise NotImplementedError

    async def close(self) -> None:  # pragma: no cover - every subclass has its own
        raise NotImplementedError

    @property
    def url(self) -> str:
        """The relay in use (or tried next)."""
        return self.urls.current

    @property
    def tls(self) -> ssl.SSLContext | None:
        """The TLS context for :attr:`url` (None for ``ws://``)."""
        return self.urls.tls

    @property
    def connected(self) -> bool:
        """True while the link is open."""
        return self._link is not None and self._link.is_open

    def _status(self, line: str) -> None:
        if self.on_status is not None:
            self.on_status(line)

    def _retrying(self, err: RelayError, delay: float) -> None:
        self._status(retry_line(self._tried, err, delay))

    async def _open_link(self) -> ClientLink:
        """One hello → welcome on :attr:`url`; a failure moves to the next relay."""
        self._tried = self.url
        try:
            return await ClientLink.open(
                self.url, self.stream, role=self._role, token=self.token, client=self.client,
                open_timeout=self.open_timeout, max_size=2**20, tls=self.tls,
                ping_interval=self.ping_interval, ping_timeout=self.ping_timeout)
        except (RelayError, LinkClosedError):
            self.urls.advance()  # spec §5.7.1: the next relay of the cluster
            raise

    async def _retry(self, open_once: Callable[[], Awaitable[None]]) -> None:
        """:func:`retry_connect` with this client's options, then ``connected to …``."""
        await retry_connect(open_once, backoff=self.backoff, reconnect=self.reconnect,
                            max_retries=self.max_retries, is_closed=lambda: self._closed,
                            what=self._what, on_retry=self._retrying)
        self._status(f"connected to {self.url}")
