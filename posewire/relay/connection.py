"""One relay connection at the transport level: admission at accept, its progress until
its hello (rule 8), its first bytes read through its own transport before the handshakes
take it (the PROXY header of a trusted proxy, spec §5.7 rule 12), the TLS handshake
after admission, from those first bytes (rule 8), the
send-window pongs (rule 4), reading paused while the peer's writes are backed up (rule 4),
decode.too_large for oversized messages (§5.8) and 1002 for a length no frame can have."""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import sys
from typing import TYPE_CHECKING, Any, ClassVar

from websockets.exceptions import PayloadTooBig
from websockets.frames import CloseCode
from websockets.protocol import State as WsState
from websockets.streams import StreamReader

from posewire.codec.protocol import CLOSE_CODES
from posewire.transport.proxy_protocol import (
    ProxyHeaderError,
    looks_like_proxy_header,
    parse_proxy_header,
)

from .fanout import WINDOW_PAYLOAD, WINDOW_TAG
from .liveness import LivenessMixin

if TYPE_CHECKING:
    from .server import Relay
    from .state import Client


#: A client's PONG frame with a window payload: FIN + opcode 0xA, masked, length 20
#: (RFC 6455 §5.2); it is a window ping's pong (spec §5.7 rule 4) when it unmasks to the
#: tag, a mark and a value.
_PONG_HEAD = bytes((0x8A, 0x80 | WINDOW_PAYLOAD))
_PONG_SIZE = 2 + 4 + WINDOW_PAYLOAD
_TAG = int.from_bytes(WINDOW_TAG, "big")
_MARK = 2**64 - 1
#: RFC 6455 §5.2: "the most significant bit MUST be 0" of a 64-bit payload length
_LENGTH_MSB = 2**63
#: websockets' parser waits at a frame boundary inside StreamReader.at_eof
_AT_EOF = StreamReader.at_eof.__code__


class RelayConnection(LivenessMixin):
    """websockets' server connection with the relay's admission control (at accept,
    before any byte is read) and ``decode.too_large`` for every oversized message."""

    relay: ClassVar[Relay]  # set on a per-relay subclass (Relay.start)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.peer_host = ""
        self.accepted_at = 0.0
        self.heard_at = 0.0  # loop time of the last bytes from the peer (spec §5.7 rule 11)
        self.admitted = False
        self.refused = False
        #: websockets' connection_made ran (after the TLS handshake, with TLS)
        self.attached = False
        #: the TCP transport (under TLS, the one beneath websockets' transport)
        self.raw_transport: asyncio.Transport | None = None
        #: closes the connection if its handshakes are not done by the hello deadline
        self.deadline: asyncio.TimerHandle | None = None
        #: the TLS handshake under way (a reference keeps the task alive)
        self.tls_task: asyncio.Task[None] | None = None
        #: spec §5.7 rule 8: admitted and not said hello yet (may be evicted at the cap);
        #: bytes came from the peer meanwhile (evicted after the silent ones)
        self.waiting = False
        self.progressed = False
        #: the first bytes, read before the handshakes take the connection (None: taken):
        #: with TLS the handshake starts when they come (spec §5.7 rule 8: progress, and
        #: no TLS state for a silent connection); with the PROXY protocol the header is
        #: looked for in them (rule 12: ``_header`` "read" from a trusted proxy, "refuse"
        #: from any other address). A trusted proxy's connection is timed by its own
        #: deadline until its header is read (it is not admitted before)
        self.head: bytearray | None = None
        self._header = ""
        self._proxy_deadline: asyncio.TimerHandle | None = None
        self.client: Client | None = None
        #: spec §5.7 rule 4: reading paused — websockets' message queue is full, or the
        #: peer's writes are backed up (what it sends must not grow what the relay holds)
        self._queue_full = False
        self._backed_up = False
        self._reading_held = False
        fail = self.protocol.fail
        relay = self.relay

        def fail_too_large(code: CloseCode | int, reason: str = "") -> None:
            # websockets refuses a message over max_size from its header (1009, unread);
            # spec §5.8: every oversized message is decode.too_large, with its error —
            # but a 64-bit length with its high bit set is no length at all: a protocol
            # error (RFC 6455 §5.2, close 1002), which websockets reads as too big
            if code == CloseCode.MESSAGE_TOO_BIG:
                exc = sys.exc_info()[1]  # (called from websockets' parser, in its except)
                if isinstance(exc, PayloadTooBig) and (exc.size or 0) >= _LENGTH_MSB:
                    fail(CloseCode.PROTOCOL_ERROR, "payload length with its high bit set")
                    return
            if code == CloseCode.MESSAGE_TOO_BIG and self.protocol.state is WsState.OPEN:
                self.protocol.send_binary(relay._too_large_reply)
                code = CLOSE_CODES["decode.too_large"]
                reason = "decode.too_large"
                relay.stats.errors += 1
                relay.stats.errors_by_code["decode.too_large"] += 1
            fail(code, reason)

        self.protocol.fail = fail_too_large  # type: ignore[method-assign]

    def data_received(self, data: bytes) -> None:
        if self.head is not None:
            self._first_data(data)
            return
        if self.waiting:  # spec §5.7 rule 8: a hello-less connection making progress
            self.relay._progress(self)
        # spec §5.7 rule 4: a consumer's window pongs are read here, without websockets'
        # frame parser (a pong every W/2 frames per consumer: parsing them was a large
        # share of the relay's own cost); anything else goes to websockets as before
        if data[:2] == _PONG_HEAD and self.client is not None and self.client.mailbox is not None:
            data = self._window_pongs(data)
            if not data:
                self.heard_at = self.loop.time()  # a sign of life (spec §5.7 rule 11)
                return
        super().data_received(data)

    def _window_pongs(self, data: bytes) -> bytes:
        """Take the window pongs at the start of ``data`` (whole masked PONG frames with a
        12-byte window payload), when websockets' parser waits for a new frame with
        nothing buffered; return the bytes left for websockets (from a frame boundary)."""
        protocol = self.protocol
        if protocol.state is not WsState.OPEN or protocol.reader.buffer:
            return data
        waiting: Any = protocol.parser
        while getattr(waiting, "gi_yieldfrom", None) is not None:
            waiting = waiting.gi_yieldfrom
        if getattr(waiting, "gi_code", None) is not _AT_EOF:
            return data  # in the middle of a frame: websockets reads on
        relay = self.relay
        while len(data) >= _PONG_SIZE and data[:2] == _PONG_HEAD:
            key = int.from_bytes(data[2:6] * 5, "big")
            payload = int.from_bytes(data[6:_PONG_SIZE], "big") ^ key
            if payload >> 128 != _TAG:
                break  # another pong: websockets' own (keepalive)
            relay._window_pong(self, payload >> 64 & _MARK, (payload & _MARK).to_bytes(8, "big"))
            data = data[_PONG_SIZE:]
        return data

    def acknowledge_pings(self, data: bytes) -> None:
        # spec §5.7 rule 4: the pong of a send-window ping acknowledges the frames
        # written before it (its payload says how many); other pongs are websockets' own
        if len(data) == WINDOW_PAYLOAD and data.startswith(WINDOW_TAG):
            self.relay._window_pong(self, int.from_bytes(data[4:12], "big"), data[12:])
            return
        super().acknowledge_pings(data)

    # spec §5.7 rule 4: what a peer sends cannot grow what the relay holds for it. The
    # replies websockets writes by itself (a pong for each ping) go to the same write
    # buffer as the peer's frames: while that buffer is over its high-water mark, the
    # relay reads nothing more from the peer (TCP then holds the peer back), until the
    # buffer drains below its low-water mark. A peer that floods pings without reading
    # holds at most the high-water mark plus the replies to one read, and, heard from no
    # more, is closed by liveness (rule 11).

    def _set_reading(self) -> None:
        hold = self._queue_full or self._backed_up
        if hold != self._reading_held:
            self._reading_held = hold
            with contextlib.suppress(RuntimeError, AttributeError):
                if hold:
                    self.transport.pause_reading()
                else:
                    self.transport.resume_reading()

    def _queue_pause(self) -> None:
        self._queue_full = True
        self._set_reading()

    def _queue_resume(self) -> None:
        self._queue_full = False
        self._set_reading()

    def _attach(self, transport: asyncio.Transport) -> None:
        """websockets takes the connection; its message queue pauses reading through
        :meth:`_set_reading`, like the write buffer."""
        self.attached = True
        super().connection_made(transport)
        self.recv_messages.pause = self._queue_pause
        self.recv_messages.resume = self._queue_resume

    def pause_writing(self) -> None:
        super().pause_writing()
        self._backed_up = True
        self._set_reading()

    def resume_writing(self) -> None:
        super().resume_writing()
        self._backed_up = False
        self._set_reading()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.raw_transport = transport
        relay = self.relay
        self.accepted_at = self.loop.time()
        peer = transport.get_extra_info("peername")
        self.peer_host = str(peer[0]) if isinstance(peer, tuple) and peer else ""
        trusted = relay.trusted_proxies is not None and self.peer_host in relay.trusted_proxies
        # spec §5.7 rule 12: a trusted proxy's connection is admitted by the client address
        # its PROXY header names, once read; any other by its own address, at once
        admitted = relay._proxy_pending_ok(self) if trusted else relay._admit(self, transport)
        if not admitted:
            # refused before websockets does any work for it (no handler, no parsing)
            self.refused = True
            transport.abort()
            return
        if relay.trusted_proxies is not None or relay.tls is not None:
            # the first bytes come through data_received like any others (no second
            # descriptor, no polling, spec §5.7 rule 12): a PROXY header is taken from
            # them, and what follows it is handed to the handshakes
            self.head = bytearray()
            self._header = ("" if relay.trusted_proxies is None
                            else "read" if trusted else "refuse")
            if trusted:
                self._proxy_deadline = self.loop.call_at(
                    self.accepted_at + relay.hello_timeout, self._proxy_overdue)
            return
        self._handshake(transport)

    def _first_data(self, data: bytes) -> None:
        """The first bytes of a connection, before the handshakes take it. Spec §5.7
        rule 12: from a trusted proxy, take the PROXY header off them and admit the
        connection by the address it names; from any other address, refuse a connection
        that starts with one; more bytes needed: wait for them. Then the handshakes get
        the rest."""
        relay = self.relay
        head = self.head
        raw = self.raw_transport
        assert head is not None and raw is not None
        head += data
        if self.waiting:  # admitted (not a trusted proxy's): making progress (rule 8)
            relay._progress(self)
        why = ""
        rest: bytes | None = None
        if not self._header:
            rest = bytes(head)
        elif self._header == "refuse":
            if not looks_like_proxy_header(bytes(head)):
                rest = bytes(head)  # a direct client
            elif len(head) >= 12 or head.startswith(b"PROXY "):
                why = "a PROXY header from an untrusted address"
        else:
            try:
                header = parse_proxy_header(bytes(head))
            except ProxyHeaderError as exc:
                why = f"a bad PROXY header from a trusted proxy: {exc}"
            else:
                if header is not None:
                    rest = bytes(head[header.length:])
                    if header.source is not None:
                        self.peer_host = header.source
        if not why and rest is None:
            return  # a partial header: the next bytes come through data_received
        self.head = None
        self._proxy_done()
        if why:
            relay.stats.proxy_refused += 1
            relay._reject("refused a connection from %s: %s", self.peer_host, why)
            relay._release(self)
            raw.abort()
            return
        assert rest is not None
        if self._header == "read" and not relay._admit(self, raw):
            self.refused = True
            raw.abort()
            return
        self._handshake(raw, rest)

    def _proxy_done(self) -> None:
        """A trusted proxy's connection is no longer pending its header."""
        if self._proxy_deadline is not None:
            self._proxy_deadline.cancel()
            self._proxy_deadline = None
            self.relay._proxy_pending -= 1

    def _proxy_overdue(self) -> None:
        """Spec §5.7 rule 12: no PROXY header within the hello deadline."""
        self._proxy_deadline = None
        self.relay._proxy_pending -= 1
        if self.head is not None and self.raw_transport is not None:
            self.head = None
            self.relay.stats.handshake_timeouts += 1
            self.raw_transport.abort()

    def eof_received(self) -> None:
        if self.head is not None:
            return  # closed before the handshakes took it: the transport closes
        super().eof_received()

    def _handshake(self, transport: asyncio.Transport, first: bytes = b"") -> None:
        """Admitted: the TLS handshake, or websockets takes the connection; ``first``:
        the bytes already read after a PROXY header (spec §5.7 rule 12), handed on."""
        tls = self.relay.tls
        if tls is None:
            self._attach(transport)
            if first:
                self.data_received(first)
            return
        # spec §5.7 rule 8: the TLS handshake comes after admission, so a pending one
        # counts against the caps and the hello deadline (it starts with the first bytes)
        transport.pause_reading()
        self.tls_task = self.loop.create_task(self._start_tls(transport, tls, first),
                                              name=f"posewire-tls-{self.peer_host}")

    async def _start_tls(self, raw: asyncio.Transport, tls: ssl.SSLContext,
                         first: bytes = b"") -> None:
        relay = self.relay
        early = _EarlyData()
        left = self.accepted_at + relay.hello_timeout - self.loop.time()
        try:
            starting = asyncio.ensure_future(self.loop.start_tls(
                raw, early, tls, server_side=True, ssl_handshake_timeout=max(0.001, left)))
            if first:
                # the start of the ClientHello, read already (with a PROXY header, or
                # as the first bytes): the TLS layer gets it before anything the transport
                # reads next (start_tls puts its protocol on the transport in its first
                # step, reading still paused)
                while raw.get_protocol() is self and not starting.done():
                    await asyncio.sleep(0)
                if not starting.done():
                    _feed(raw.get_protocol(), first)
            secure = await starting
        except (OSError, TimeoutError, ConnectionError, ValueError, RuntimeError) as exc:
            # a failed or timed-out handshake: counted and logged at a bounded rate
            # (ssl.SSLError is an OSError), never a traceback; one the relay closed
            # (deadline, eviction, shutdown) was counted there
            if self.admitted:
                relay.stats.tls_failed += 1
                relay._reject("TLS handshake from %s failed: %s", self.peer_host,
                              (str(exc) or type(exc).__name__)[:160])
            raw.abort()
            relay._release(self)
            return
        if early.lost or secure is None or secure.is_closing() or not self.admitted:
            relay._release(self)
            raw.abort()
            return
        secure.set_protocol(self)
        self._attach(secure)
        if self.waiting:  # spec §5.7 rule 8: the TLS handshake done is progress
            relay._progress(self)
        # application data that came with the end of the handshake, before websockets
        # was attached, is handed over in order
        for data in early.data:
            self.data_received(data)
        if early.eof:
            self.eof_received()

    def connection_lost(self, exc: Exception | None) -> None:
        self.relay._release(self)
        self.head = None
        self._proxy_done()
        if self.attached:
            super().connection_lost(exc)


def _feed(protocol: asyncio.BaseProtocol, data: bytes) -> None:
    """Give ``data`` to a transport's protocol as if the transport had read it."""
    if isinstance(protocol, asyncio.BufferedProtocol):
        view = memoryview(data)
        while view:
            buf = memoryview(protocol.get_buffer(len(view)))
            n = min(len(buf), len(view))
            buf[:n] = view[:n]
            protocol.buffer_updated(n)
            view = view[n:]
    elif isinstance(protocol, asyncio.Protocol):
        protocol.data_received(data)


class _EarlyData(asyncio.Protocol):
    """The application side of a TLS handshake run by :meth:`RelayConnection._start_tls`:
    it keeps what arrives between the end of the handshake and websockets taking over."""

    def __init__(self) -> None:
        self.data: list[bytes] = []
        self.eof = False
        self.lost = False

    def data_received(self, data: bytes) -> None:
        self.data.append(data)

    def eof_received(self) -> bool:
        self.eof = True
        return True

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
