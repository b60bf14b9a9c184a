"""The relay (``posewire serve``): options, lifecycle, introspection and each
connection's protocol loop (hello, producers, consumers; spec §5.7); the concerns it
delegates live in the sibling modules."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import secrets
import signal
import socket
import sys
from collections import Counter
from collections.abc import Callable, Iterable
from itertools import count
from pathlib import Path
from time import monotonic
from typing import TYPE_CHECKING, Any, Literal, TextIO

from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.exceptions import ConnectionClosed
from websockets.protocol import State as WsState
from websockets.typing import Subprotocol

from posewire.codec.errors import DecodeError, UsageError
from posewire.codec.protocol import (
    Closed,
    Connection,
    Event,
    Limits,
    ProtocolFailure,
    Received,
    SequenceTracker,
    State,
    TokenBucket,
)
from posewire.codec.wire import (
    DEFAULT_MAX_FPS,
    DEFAULT_MAX_MESSAGE_BYTES,
    SUBPROTOCOL,
    Bye,
    ErrorMessage,
    Frame,
    Hello,
    Message,
    decode,
    encode,
)
from posewire.transport import (
    DEFAULT_PING_INTERVAL,
    DEFAULT_PING_TIMEOUT,
    check_liveness,
    server_tls_context,
)
from posewire.transport.proxy_protocol import TrustedProxies

from .admission import ACCEPT_BATCH, AdmissionMixin
from .auth import MIN_TOKEN_BITS, AuthThrottle, token_bits
from .connection import RelayConnection
from .fanout import FanOutMixin
from .framecheck import check_frame
from .mailbox import Mailbox
from .origin import OriginMixin, is_loopback, looks_like_origin, norm_origin
from .state import Client, Item, Stream
from .stats import ConsumerInfo, LogLimiter, RelayStats

if TYPE_CHECKING:
    from posewire.relay.cluster import Broker


log = logging.getLogger("posewire.relay")

#: Close code when the client did not negotiate the ``posewire.v1`` subprotocol (RFC 6455).
CLOSE_PROTOCOL = 1002
#: A msgpack map whose first key is ``t`` = ``"f"``: how every encoder writes a frame
#: (spec §5.2 canonical order), checked before decoding to drop over-rate frames cheaply.
FRAME_PREFIX = b"\xa1t\xa1f"


#: The most bytes of a WebSocket close reason (RFC 6455 §5.5: a control frame's 125 less the code).
CLOSE_REASON_BYTES = 123


def close_reason(code: str, message: str) -> str:
    """The close reason sent with an error's close code (spec §5.8 "Close reason"):
    ``"<code>: <message>"``, cut to :data:`CLOSE_REASON_BYTES` of UTF-8 at a character
    boundary (the code first, so a cut never loses it)."""
    text = f"{code}: {message}" if message else code
    return text.encode()[:CLOSE_REASON_BYTES].decode(errors="ignore")


def looks_like_frame(data: bytes) -> bool:
    return len(data) > 5 and 0x80 <= data[0] <= 0x8F and data[1:5] == FRAME_PREFIX


class Relay(AdmissionMixin, OriginMixin, FanOutMixin):
    """An asyncio websocket relay (spec §5.7); usable in-process as an async context
    manager (``async with Relay("127.0.0.1", port=0) as relay: relay.port``) or from the
    CLI through :meth:`run`.

    Options (keyword-only):

    * ``token`` — required auth token (compared in constant time); a host beyond loopback
      needs one, always, of at least 128 bits (:func:`posewire.relay.auth.token_bits`;
      ``posewire token`` makes one; spec §5.7 rule 5). ``no_auth=True`` ignores a
      configured token on loopback and is refused beyond it (``usage.bad_option``). After
      a wrong token, an address's next hellos are checked at most 5 a second, slower with
      each wrong one (:class:`posewire.relay.auth.AuthThrottle`).
    * ``tls_cert`` / ``tls_key`` — PEM files: serve ``wss://``. A host beyond loopback
      needs them unless ``insecure=True``.
    * ``allow_origins`` — browser origins (``"https://example.org"``) accepted besides the
      relay's own; a client that sends no ``Origin`` header is not a browser and is
      unaffected.
    * ``max_bytes`` — largest message (spec §5.8). ``max_fps`` / ``burst_s`` / ``on_rate``
      — per-producer token bucket (``"drop"``: excess frames dropped and counted before
      decoding, ``"close"``: the producer is closed with ``decode.rate``).
    * ``max_connections`` / ``max_per_address`` — admission caps (clamped below the
      descriptor limit; at the cap a connection still without hello makes room, one
      that sent no byte first, else the one heard from longest ago, spec §5.7 rule 8);
      ``hello_timeout`` — seconds from accept to hello;
      ``hello_rate`` / ``hello_burst`` — hellos per second per client address.
    * ``ping_interval`` / ``ping_timeout`` — keepalive (None: off); a producer hello for a
      busy stream replaces a producer that does not answer a ping within ``ping_timeout``.
    * ``send_window`` / ``send_window_s`` — the send window W (spec §5.7 rule 4): frames a
      consumer may have in flight beyond the last acknowledged one before the relay holds
      only its newest frame (a window ping every W/2 frames, up to W − 2 for a consumer
      whose pongs come back at once; its pongs stand for keepalive pongs): at most
      ``send_window`` frames and, once the stream's rate is known, at most
      ``send_window_s`` seconds of frames at that rate (None: no time bound), at least 2.
    * ``status_every`` — seconds between status lines on ``status_file`` (0/None: off);
      ``send_buffer`` — kernel send buffer per connection in bytes (None: OS default).
    * ``broker`` — a :class:`posewire.relay.cluster.Broker`: share the streams with the relays
      on the same NATS server (spec §5.7.1).
    * ``proxy_protocol`` / ``trusted_proxies`` — behind a TCP load balancer: connections
      from these networks (``"10.0.0.2/32"``) start with a PROXY protocol header naming
      the client (spec §5.7 rule 12).
    """

    def __init__(self, host: str = "127.0.0.1", port: int = 8765, *, token: str | None = None,
                 no_auth: bool = False, tls_cert: str | Path | None = None,
                 tls_key: str | Path | None = None, insecure: bool = False,
                 allow_origins: Iterable[str] = (),
                 max_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
                 max_fps: int = DEFAULT_MAX_FPS, burst_s: float = 0.25,
                 on_rate: Literal["drop", "close"] = "drop",
                 max_connections: int = 1024, max_per_address: int = 256,
                 hello_timeout: float = 3.0, hello_rate: float = 50.0, hello_burst: int = 200,
                 ping_interval: float | None = DEFAULT_PING_INTERVAL,
                 ping_timeout: float | None = DEFAULT_PING_TIMEOUT,
                 send_window: int = 128, send_window_s: float | None = 0.25,
                 status_every: float | None = None, status_file: TextIO | None = None,
                 send_buffer: int | None = 16384, close_timeout: float = 2.0,
                 broker: Broker | None = None, proxy_protocol: bool = False,
                 trusted_proxies: Iterable[str] = ()) -> None:
        if no_auth and not is_loopback(host):
            # spec §5.7 rule 5: beyond loopback a token is a MUST, with no opt-out
            raise UsageError("usage.bad_option",
                             f"--no-auth is refused on {host or 'all interfaces'}: a relay "
                             "beyond loopback must require a token (spec §5.7 rule 5); "
                             "pass --token T", path="no_auth")
        if token is None and not is_loopback(host):
            # spec §5.7 rule 5: auth is required beyond loopback
            raise UsageError("usage.bad_option",
                             f"refusing to serve on {host or 'all interfaces'} without a "
                             "token (spec §5.7 rule 5): pass --token T", path="token")
        if (tls_cert is None) != (tls_key is None):
            raise UsageError("usage.bad_option", "tls_cert and tls_key go together",
                             path="tls_cert")
        if tls_cert is None and not insecure and not is_loopback(host):
            # spec §5.8: beyond loopback the token (and the stream) need TLS
            raise UsageError("usage.bad_option",
                             f"refusing to serve on {host or 'all interfaces'} without TLS: pass "
                             "--tls-cert/--tls-key (or --insecure explicitly)", path="tls_cert")
        if token is not None and not token:
            raise UsageError("usage.bad_option", "the token must not be empty", path="token")
        if token is not None and not is_loopback(host) and token_bits(token) < MIN_TOKEN_BITS:
            # spec §5.7 rule 5: beyond loopback a token must be one nobody guesses
            raise UsageError("usage.bad_option",
                             f"the token is too weak to serve on {host or 'all interfaces'}: "
                             f"about {token_bits(token):.0f} bits, at least {MIN_TOKEN_BITS} "
                             "needed beyond loopback (spec §5.7 rule 5); make one with "
                             "`posewire token`", path="token")
        if not 256 <= max_bytes <= 2**20:
            raise UsageError("usage.bad_option", "max_bytes must be in [256, 1048576]",
                             path="max_bytes")
        if not 1 <= max_fps <= 1000:
            raise UsageError("usage.bad_option", "max_fps must be in [1, 1000]", path="max_fps")
        if on_rate not in ("drop", "close"):
            raise UsageError("usage.bad_option", "on_rate must be 'drop' or 'close'",
                             path="on_rate")
        for name, value in (("max_connections", max_connections),
                            ("max_per_address", max_per_address), ("hello_burst", hello_burst),
                            ("send_window", send_window)):
            if not 1 <= value <= 1_000_000:
                raise UsageError("usage.bad_option", f"{name} must be in [1, 1000000]", path=name)
        for name, fvalue in (("hello_timeout", hello_timeout), ("hello_rate", hello_rate)):
            if not 0 < fvalue < 3600:
                raise UsageError("usage.bad_option", f"{name} must be positive", path=name)
        if send_window_s is not None and not 0 < send_window_s <= 60:
            raise UsageError("usage.bad_option", "send_window_s must be in (0, 60] s",
                             path="send_window_s")
        check_liveness(ping_interval, ping_timeout)
        trusted = tuple(trusted_proxies)
        if trusted and not proxy_protocol:
            raise UsageError("usage.bad_option", "trusted proxies need the PROXY protocol on",
                             path="trusted_proxy")
        #: spec §5.7 rule 12: the networks whose connections start with a PROXY header
        self.trusted_proxies = TrustedProxies(trusted) if proxy_protocol else None
        self.host = host
        self._requested_port = port
        self.token = token
        self.tls = None if tls_cert is None or tls_key is None else server_tls_context(tls_cert, tls_key)
        self.tls_cert = tls_cert
        #: spec §5.7 rule 9: compared in their ASCII form (an IDN host as punycode)
        self._given_origins = tuple(allow_origins)
        self.allow_origins = frozenset(norm_origin(o) for o in self._given_origins)
        self.limits = Limits(max_message_bytes=max_bytes, max_fps=max_fps, burst_s=burst_s,
                             on_rate=on_rate)
        self.max_connections = max_connections
        self.max_per_address = min(max_per_address, max_connections)
        self.hello_timeout = hello_timeout
        self.hello_rate = hello_rate
        self.hello_burst = hello_burst
        self.ping_interval = ping_interval
        self.ping_timeout = ping_timeout
        self.send_window = send_window
        self.send_window_s = send_window_s
        self._phase = count()
        self.queued = False
        self.status_every = status_every
        self.status_file = status_file
        self.send_buffer = send_buffer
        #: websockets' write high-water mark; also the most a consumer's transport may
        #: hold before its frames go through the latest-wins mailbox (spec §5.7)
        self._write_limit = max(4096, 2 * self.limits.max_message_bytes)
        self.close_timeout = close_timeout
        self.broker = broker
        self.stats = RelayStats()
        self._streams: dict[str, Stream] = {}
        self._clients: set[Client] = set()
        # admission (spec §5.8): admitted connections, per address, those without hello
        self._admitted = 0
        self._per_address: Counter[str] = Counter()
        #: per address, how many of its connections are still without hello
        self._hello_less: Counter[str] = Counter()
        #: per address, its hello-less connections that sent no byte yet (insertion
        #: order = age), and the hello-less ones that did, in the order of their last
        #: bytes (spec §5.7 rule 8: eviction at the cap)
        self._silent: dict[str, dict[RelayConnection, None]] = {}
        self._progressing: dict[RelayConnection, None] = {}
        self._hello_buckets: dict[str, TokenBucket] = {}
        #: spec §5.7 rule 5: wrong tokens answered slowly, per address
        self._auth_throttle = AuthThrottle()
        #: connections per address, taken at accept (spec §5.7 rule 8)
        self._accept_buckets: dict[str, TokenBucket] = {}
        #: trusted proxies' connections whose PROXY header is not read yet
        self._proxy_pending = 0
        self._reject = LogLimiter(log)
        self._too_large_reply = encode(ErrorMessage.from_exception(DecodeError(
            "decode.too_large", f"message exceeds {max_bytes} bytes", path="$")))
        self._server: Server | None = None
        #: descriptors of the listening sockets (failed accepts on them are counted)
        self._listening: set[int] = set()
        self._previous_handler: Callable[[asyncio.AbstractEventLoop, dict[str, Any]], object] | None = None
        self._status_task: asyncio.Task[None] | None = None
        self._closing = False
        #: Called as ``hook(stream, message, data)`` for every data message (frame,
        #: calibration, conditions) a local producer sends and the relay accepts, after
        #: local delivery: the point where a broker forwards it to other relays.
        self.publish_hooks: list[Callable[[str, Message, bytes], None]] = []

    async def start(self) -> None:
        """Bind and start serving (after connecting to the broker, if any)."""
        self._fit_descriptor_limit()
        self._check_certificate()
        if self.broker is not None:
            await self.broker.start(self)
        conn_class = type("RelayConnection", (RelayConnection,), {"relay": self})
        self._server = await serve(
            self._handle, self.host, self._requested_port,
            subprotocols=[Subprotocol(SUBPROTOCOL)],  # spec §5.1
            compression=None,
            process_request=self._check_request,
            create_connection=conn_class,
            # no ssl here: each connection starts its TLS handshake itself once admitted
            # (spec §5.7 rule 8), so pending handshakes count against the caps
            ssl=None,
            # asyncio accepts up to ``backlog`` connections per loop pass: never more
            # than the spare descriptors (spec §5.7 rule 8)
            backlog=ACCEPT_BATCH,
            open_timeout=self.hello_timeout,
            ping_interval=self.ping_interval,
            ping_timeout=self.ping_timeout,
            max_size=self.limits.max_message_bytes,
            max_queue=16,
            write_limit=self._write_limit,
            close_timeout=self.close_timeout,
        )
        # a deep accept queue all the same: under a connection flood a legitimate SYN is
        # queued (and accepted within a few loop passes) instead of dropped and retried a
        # second later (listen() again on a listening socket only sets its queue length)
        deep = min(4096, max(128, self.max_connections))
        for sock in self._server.sockets:
            with contextlib.suppress(OSError), socket.socket(fileno=os.dup(sock.fileno())) as dup:
                dup.listen(deep)
        self._listening = {sock.fileno() for sock in self._server.sockets}
        loop = asyncio.get_running_loop()
        self._previous_handler = loop.get_exception_handler()
        loop.set_exception_handler(self._loop_exception)
        if self.status_every:
            self._status_task = asyncio.create_task(self._status_loop(self.status_every))

    async def close(self, reason: str = "relay shutting down") -> None:
        """Graceful shutdown: a bye to every open client, close all (1000), stop."""
        if self._closing:
            return
        self._closing = True
        loop = asyncio.get_running_loop()
        if loop.get_exception_handler() == self._loop_exception:
            loop.set_exception_handler(self._previous_handler)
        self._listening = set()  # (when another relay's handler sits on top of ours)
        if self._status_task is not None:
            self._status_task.cancel()
        if self._server is not None:
            self._server.close(close_connections=False)
        await asyncio.gather(*(self._say_bye(c, reason) for c in list(self._clients)),
                             return_exceptions=True)
        waiting = [c for silent in self._silent.values() for c in silent]
        for conn in waiting + list(self._progressing):
            self._release(conn)
            if conn.raw_transport is not None:
                conn.raw_transport.abort()
        if self._server is not None:
            await self._server.wait_closed()
        if self.broker is not None:
            await self.broker.close()
        if self._status_task is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await self._status_task

    async def __aenter__(self) -> Relay:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def run(self, *, stop: asyncio.Event | None = None) -> None:
        """Serve until SIGINT/SIGTERM (or ``stop`` is set), then shut down gracefully."""
        stop = stop or asyncio.Event()
        loop = asyncio.get_running_loop()
        installed: list[signal.Signals] = []
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(sig, stop.set)
                installed.append(sig)
        try:
            async with self:
                log.info("posewire relay on %s (auth %s, tls %s, max %d connections, %d per address)",
                         self.url, "on" if self.token else "off", "on" if self.tls else "off",
                         self.max_connections, self.max_per_address)
                for given in self._given_origins:
                    if not looks_like_origin(given):
                        log.warning("--allow-origin %r is not an origin (scheme://host[:port]): "
                                    "no browser sends it", given)
                log.info("%s", self.origins_line(self._given_origins))
                await stop.wait()
        finally:
            for sig in installed:
                loop.remove_signal_handler(sig)

    @property
    def port(self) -> int:
        """The bound port (useful with ``port=0``)."""
        if self._server is None:
            raise UsageError("usage.state", "the relay is not started")
        return int(self._server.sockets[0].getsockname()[1])

    @property
    def url(self) -> str:
        """``ws://host:port`` (``wss://`` with TLS) of this relay (loopback when bound to
        all interfaces)."""
        host = self.host if self.host and self.host not in ("0.0.0.0", "::") else "127.0.0.1"
        if ":" in host:
            host = f"[{host}]"
        return f"{'wss' if self.tls else 'ws'}://{host}:{self.port}"

    @property
    def streams(self) -> dict[str, tuple[int, int]]:
        """``{stream: (producers, consumers)}``."""
        return {n: (len(s.producers), len(s.consumers)) for n, s in self._streams.items()}

    @property
    def connections(self) -> int:
        """Connections admitted and open now (with or without hello)."""
        return self._admitted

    def consumers(self, stream: str | None = None) -> list[ConsumerInfo]:
        """Snapshots of the consumers (of ``stream``, or all)."""
        out = []
        for s in self._streams.values():
            if stream is not None and s.name != stream:
                continue
            for c in s.consumers:
                assert c.mailbox is not None
                out.append(ConsumerInfo(
                    c.session, s.name, c.sent, c.mailbox.dropped["f"],
                    len(c.mailbox), c.ws.transport.get_write_buffer_size(), c.sent - c.acked,
                    s.window))
        return out

    def status_line(self) -> str:
        """One line of counts (spec §5.7)."""
        producers = sum(len(s.producers) for s in self._streams.values())
        consumers = sum(len(s.consumers) for s in self._streams.values())
        st = self.stats
        return (f"posewire relay: streams={len(self._streams)} producers={producers} "
                f"consumers={consumers} frames_in={st.frames_in} frames_out={st.frames_out} "
                f"drops={st.drops} rate_limited={st.rate_limited} errors={st.errors} "
                f"stale={st.stale} connections={self._admitted} refused={st.refused} "
                f"evicted={st.evicted} origin_refused={st.origin_refused} "
                f"replaced={st.replaced} handshake_timeouts={st.handshake_timeouts} "
                f"tls_failed={st.tls_failed} accept_failed={st.accept_failed}"
                + ("" if self.trusted_proxies is None else f" proxy_refused={st.proxy_refused}")
                + ("" if self.broker is None
                   else f" broker_refused={st.broker_refused}" + self.broker.status()))

    async def _status_loop(self, every: float) -> None:
        out = self.status_file or sys.stderr
        while True:
            await asyncio.sleep(every)
            print(self.status_line(), file=out, flush=True)

    async def _handle(self, ws: ServerConnection) -> None:
        assert isinstance(ws, RelayConnection)
        client = Client(ws, Connection(side="server", limits=self.limits,
                                        auth_token=self.token), secrets.token_hex(8))
        ws.client = client
        if ws.deadline is not None:  # the handshakes are done: the hello is timed below
            ws.deadline.cancel()
            ws.deadline = None
        self.stats.connections += 1
        if ws.subprotocol != SUBPROTOCOL:
            await ws.close(CLOSE_PROTOCOL, f"subprotocol {SUBPROTOCOL} required")
            return
        if self._closing:
            await ws.close(1001, "relay shutting down")
            return
        self._clients.add(client)
        loop = asyncio.get_running_loop()
        try:
            try:
                # spec §5.8: the hello deadline counts from accept (handshake included)
                left = max(0.0, ws.accepted_at + self.hello_timeout - loop.time())
                async with asyncio.timeout(left):
                    first = await ws.recv()
            except TimeoutError:
                await self._fail(client, client.conn.fail(DecodeError(
                    "decode.state", "no hello in time", path="t")))
                return
            if not self._hello_allowed(ws.peer_host):
                # spec §5.8: hellos per address are rate limited, checked before decoding
                self.stats.rate_limited += 1
                await self._fail(client, client.conn.fail(DecodeError(
                    "decode.rate", "too many hellos from this address", path="t")))
                return
            if self.token is not None and not await self._auth_slot(client):
                return
            if not await self._on_data(client, first):
                return
            async for data in ws:
                if not await self._on_data(client, data):
                    return
                if self.queued:
                    # let the consumers' sender tasks take what went through their
                    # mailboxes before the next message (websockets returns buffered
                    # messages without yielding)
                    self.queued = False
                    await asyncio.sleep(0)
        except ConnectionClosed:
            pass
        finally:
            self._detach(client)
            client.conn.connection_closed()

    async def _auth_slot(self, client: Client) -> bool:
        """Spec §5.7 rule 5: the hello of an address that sent wrong tokens waits for its
        slot before its token is checked, or is refused unchecked (``decode.rate``) when
        the slot is too far off. False: refused."""
        wait = self._auth_throttle.slot(client.ws.peer_host, asyncio.get_running_loop().time())
        if wait == 0:
            return True
        self.stats.auth_delayed += 1
        if wait is None:
            self.stats.rate_limited += 1
            await self._fail(client, client.conn.fail(DecodeError(
                "decode.rate", "too many wrong tokens from this address; try again later",
                path="tk")))
            return False
        await asyncio.sleep(wait)
        return client.ws.state is WsState.OPEN

    async def _on_data(self, client: Client, data: str | bytes) -> bool:
        """Process one message; False when the connection is done."""
        events: list[Event]
        if isinstance(data, str):
            # spec §5.2: every message is binary
            events = [client.conn.fail(DecodeError("decode.type", "a message must be binary",
                                                   path="$"))]
            data = b""
        else:
            prechecked = False
            bucket = client.bucket
            if bucket is not None and looks_like_frame(data):
                # spec §5.8: the rate limit is checked before the frame is decoded
                if not (bucket.take(monotonic()) or await self._over_rate(client)):
                    return client.conn.state is not State.CLOSED
                prechecked = True
                stream = client.stream
                if client.conn.state is State.OPEN and stream is not None:
                    # spec §5.7 rule 2: a frame in the canonical layout is validated from
                    # its bytes; any other message (or a fault) is decoded in full below,
                    # which names the fault with the decoder's code
                    raw = check_frame(data, max_size=self.limits.max_message_bytes)
                    if raw is not None:
                        if self._deliver(stream, raw, data) and self.publish_hooks:
                            msg = decode(data, max_size=len(data))
                            for hook in self.publish_hooks:
                                hook(stream.name, msg, data)
                        return True
            events = client.conn.receive_data(data)
        for ev in events:
            if isinstance(ev, Received):
                msg = ev.message
                if (isinstance(msg, Frame) and client.bucket is not None and not prechecked
                        and not await self._rate_ok(client)):
                    continue
                await self._on_message(client, msg, data)
                if client.conn.state is State.CLOSED:
                    return False
            elif isinstance(ev, ProtocolFailure):
                await self._fail(client, ev)
                return False
            elif isinstance(ev, Closed):
                await self._close(client, ev.code, "bye")
                return False
        return client.conn.state is not State.CLOSED

    async def _rate_ok(self, client: Client) -> bool:
        """Take a token from the producer's bucket; over the rate: drop (counted) or
        close with ``decode.rate`` (spec §5.8)."""
        assert client.bucket is not None
        return client.bucket.take(monotonic()) or await self._over_rate(client)

    async def _over_rate(self, client: Client) -> bool:
        """A frame over the producer's rate: counted, and the producer closed with
        ``decode.rate`` in close mode (spec §5.8). Always False (the frame is not taken)."""
        self.stats.rate_limited += 1
        if self.limits.on_rate == "close":
            await self._fail(client, client.conn.fail(DecodeError(
                "decode.rate", "frames exceed the rate limit", path="s")))
        return False

    async def _on_message(self, client: Client, msg: Message, data: bytes) -> None:
        if isinstance(msg, Hello):
            await self._on_hello(client, msg)
            return
        stream = client.stream
        if stream is None:  # pragma: no cover - the state machine forbids it
            return
        if self._deliver(stream, msg, data):
            for hook in self.publish_hooks:
                hook(stream.name, msg, data)

    async def _on_hello(self, client: Client, hello: Hello) -> None:
        if self.token is not None:  # spec §5.7 rule 5: the address has the token
            self._auth_throttle.succeeded(client.ws.peer_host)
        if hello.role != "producer":
            await self._attach(client, hello)
            return
        stream = self._streams.get(hello.stream)
        if stream is None or not stream.producers:
            await self._attach(client, hello)
            return
        async with stream.takeover:
            old = next(iter(stream.producers), None)
            if old is not None:
                if await self._answers_ping(old):
                    # spec §5.7 (1): at most one producer per stream
                    await self._fail(client, client.conn.fail(DecodeError(
                        "decode.state", "the stream already has a producer", path="s")))
                    return
                # spec §5.7 (1): the producer stopped answering (half-open): replaced
                self.stats.replaced += 1
                self._reject("stream %r: producer %s does not answer, replaced by %s",
                             stream.name, old.session, client.session)
                self._detach(old)
                old.ws.transport.abort()
            if client.conn.state is State.CLOSED or client.ws.state is not WsState.OPEN:
                return
            await self._attach(client, hello)

    async def _answers_ping(self, client: Client) -> bool:
        """True when ``client`` answers a ping, or keeps sending, within ``ping_timeout``
        (default 3 s) of its last sign of life (spec §5.7 rules 1 and 11)."""
        return await client.ws.alive(self.ping_timeout or DEFAULT_PING_TIMEOUT)

    def late_join_state(self, stream: str) -> list[tuple[str, bytes]]:
        """``[(kind, bytes)]``: what a late joiner of ``stream`` gets now (spec §5.7;
        kinds ``cal``, ``cond``, ``f``); ``[]`` for an unknown stream."""
        s = self._streams.get(stream)
        return [] if s is None else [(kind, item[1]) for kind, item in s.late_join()]

    def restart_sequence(self, stream: str) -> None:
        """A new producer took ``stream`` elsewhere: its frames are numbered from its
        own start, not checked against the previous producer's (spec §5.7.1), and its
        first frame starts the merged snapshot afresh (spec §5.7 rule 3)."""
        s = self._streams.get(stream)
        if s is not None and not s.producers:  # never the sequence of a local producer
            s.sequence = SequenceTracker()
            s.fresh = True

    def merge_stored_frame(self, stream: str, message: Message, data: bytes) -> None:
        """A start frame read from the broker's store after live frames of ``stream``
        arrived: merged under them (spec §5.7.1 rule 3), so this relay's start frame is
        the one the producer's relay gives."""
        s = self._streams.get(stream)
        if s is None or s.producers or not isinstance(message, Frame):
            return
        if len(data) > self.limits.max_message_bytes:
            self.stats.broker_refused += 1
            return
        s.underlay(message, data)

    async def evict_producer(self, stream: str, reason: str) -> None:
        """Close the local producer of ``stream`` with ``decode.state`` (spec §5.7.1: its
        cluster lease was taken)."""
        s = self._streams.get(stream)
        for client in list(s.producers if s is not None else ()):
            await self._fail(client, client.conn.fail(DecodeError("decode.state", reason,
                                                                  path="s")))

    async def _attach(self, client: Client, hello: Hello) -> None:
        if self.broker is not None and not await self.broker.admit(client.session, hello):
            # spec §5.7.1: one producer per stream across the cluster
            await self._fail(client, client.conn.fail(DecodeError(
                "decode.state", "the stream has a producer on another relay", path="s")))
            return
        await client.ws.send(client.conn.accept(client.session))
        self._welcomed(client.ws)
        client.role = "producer" if hello.role == "producer" else "consumer"
        stream = self._streams.get(hello.stream)
        if stream is None:
            stream = self._new_stream(hello.stream)
        client.stream = stream
        if client.role == "producer":
            stream.producers.add(client)
            stream.sequence = SequenceTracker()  # a new producer numbers from its own start
            stream.fresh = True  # spec §5.7 rule 3: its first frame starts the snapshot
            client.bucket = TokenBucket(self.limits.max_fps,
                                        max(1.0, self.limits.max_fps * self.limits.burst_s))
            return
        box: Mailbox[Item] = Mailbox()
        for kind, item in stream.late_join():  # spec §5.7: late joiner
            box.put(kind, item)
        client.mailbox = box
        # spec §5.7 rule 4: the consumers' window pings are spread over W/2 frames (one
        # phase each) instead of all falling on the same frame
        client.phase = next(self._phase)
        stream.consumers.add(client)
        client.sender = asyncio.create_task(self._send_loop(client),
                                            name=f"posewire-send-{client.session}")

    def _detach(self, client: Client) -> None:
        self._clients.discard(client)
        self._welcomed(client.ws)
        if self.broker is not None:
            self.broker.detach(client.session)
        if client.mailbox is not None:
            client.mailbox.close()
        if client.sender is not None:
            client.sender.cancel()
        client.window.set()
        stream = client.stream
        if stream is not None:
            stream.producers.discard(client)
            stream.consumers.discard(client)
            if stream.empty and self._streams.get(stream.name) is stream:
                del self._streams[stream.name]
            client.stream = None

    async def _fail(self, client: Client, failure: ProtocolFailure) -> None:
        """Close one client after a violation: error message (public info) then the
        close code of spec §5.8. Other clients are untouched."""
        self.stats.errors += 1
        self.stats.errors_by_code[failure.error.code] += 1
        if failure.error.code == "decode.auth":  # spec §5.7 rule 5: its next check waits
            self._auth_throttle.failed(client.ws.peer_host, asyncio.get_running_loop().time())
        self._reject("client %s (%s): %s", client.session, client.ws.peer_host, failure.error)
        if client.mailbox is not None:
            client.mailbox.close()
        if failure.reply:
            with contextlib.suppress(ConnectionClosed, TimeoutError):
                async with asyncio.timeout(self.close_timeout):
                    await client.ws.send(failure.reply)
        await self._close(client, failure.close_code, close_reason(failure.error.code, failure.error.message))

    async def _close(self, client: Client, code: int, reason: str) -> None:
        """Close the websocket, discarding what the client still sends meanwhile (its
        unread messages would otherwise stop websockets from reading the close frame)."""
        async def discard() -> None:
            with contextlib.suppress(ConnectionClosed):
                while True:
                    await client.ws.recv()

        drain = asyncio.create_task(discard())
        try:
            await client.ws.close(code, reason)
        finally:
            drain.cancel()

    async def _say_bye(self, client: Client, reason: str) -> None:
        if client.mailbox is not None:
            client.mailbox.close()
        if client.conn.state is State.OPEN:
            with contextlib.suppress(ConnectionClosed, TimeoutError, UsageError):
                async with asyncio.timeout(self.close_timeout):
                    await client.ws.send(client.conn.send(Bye(reason)))
        await self._close(client, 1000, reason)
