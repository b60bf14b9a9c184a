"""The posewire relay (``posewire serve``): many producers to many consumers by stream name.

A thin asyncio layer over the sans-I/O :class:`posewire.codec.protocol.Connection` (spec §5.10):
each websocket gets a server-side ``Connection`` that checks the hello (protocol,
registry, auth token) and the message size, and turns every violation into an error
message plus a close code (spec §5.8). What the relay adds (spec §5.7):

* **streams** — a stream is a name; one producer at a time publishes into it and any
  number of consumers subscribe. A second producer is refused while the first answers a
  ping; one that stopped answering (half-open) is replaced by the newcomer. A late joiner
  immediately gets the stream's latest calibration, condition state and *full* frame
  (masked partial frames are merged into one state, re-encoded once, lazily).
* **latest wins, end to end** — a producer's validated bytes go, unchanged, to every
  consumer. A consumer whose socket keeps up gets them at once; one that does not, or
  that has more than ``send_window`` frames in flight beyond the last one its websocket
  acknowledged (a ping answered: it read everything before it), gets them through a
  latest-wins mailbox: an unsent frame is replaced by the newer one and the drop counted.
  Its memory and its lag are bounded; it never slows the producer or the other consumers.
  Frames older than the stream's newest are dropped, never kept as the latest.
* **admission** — ``max_connections`` in all and ``max_per_address`` per client address
  (both kept below the descriptor limit, whose soft value is raised at start), counted
  from accept, before the TLS handshake (which each admitted connection starts itself);
  at most ``_ACCEPT_BATCH`` accepts per loop pass; failed accepts and TLS handshakes are
  counted and logged at a bounded rate; a connection whose TLS handshake, WebSocket
  handshake and hello are not done within ``hello_timeout`` is closed, and at the cap
  the oldest such connection makes room for a new one; hellos per address are rate
  limited; frames over the producer's rate are dropped before they are decoded;
  rejections are logged at a bounded rate.
* **origin** — a browser (a client that sends ``Origin``) is accepted only from the
  relay's own origin or ``allow_origins``; clients without ``Origin`` are unaffected.
* **TLS and auth** — ``tls_cert``/``tls_key`` serve ``wss://``. Beyond loopback the
  relay needs a token (always, spec §5.7 rule 5) and TLS (unless ``insecure``).
* **liveness** — keepalive pings every ``ping_interval`` s; a client that neither answers
  nor sends anything within ``ping_timeout`` s is closed.

Example (in-process, e.g. from a test)::

    async with Relay("127.0.0.1", port=0) as relay:
        async with Publisher(relay.url, "demo") as pub:
            await pub.send_frame({"h_yaw": 0.25})
        print(relay.stats.frames_in)

A message broker linking relays hooks in with :meth:`Relay.fan_out` (messages from
elsewhere to local consumers) and :attr:`Relay.publish_hooks` (local producers' messages);
``broker=`` (:class:`posewire.cluster.Broker`) also admits producers and consumers
cluster-wide (spec §5.7.1).
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import ipaddress
import logging
import os
import random
import secrets
import signal
import socket
import ssl
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from itertools import count
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Literal, TextIO, TypeVar

import numpy as np
from numpy.typing import NDArray
from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.exceptions import ConnectionClosed
from websockets.frames import CloseCode, Opcode
from websockets.frames import Frame as WsFrame
from websockets.http11 import Request, Response
from websockets.protocol import State as WsState
from websockets.typing import Subprotocol

from posewire.codec.conditions import Conditions
from posewire.codec.errors import DecodeError, UsageError
from posewire.codec.protocol import (
    CLOSE_CODES,
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
from posewire.codec.vector import N_DIMS
from posewire.codec.wire import (
    DEFAULT_MAX_FPS,
    DEFAULT_MAX_MESSAGE_BYTES,
    SUBPROTOCOL,
    Bye,
    Calibration,
    ConditionsMessage,
    ErrorMessage,
    Frame,
    Hello,
    Message,
    encode,
)
from posewire.transport import (
    DEFAULT_PING_INTERVAL,
    DEFAULT_PING_TIMEOUT,
    certificate_validity,
    check_liveness,
    server_tls_context,
)

if TYPE_CHECKING:
    from posewire.cluster import Broker

__all__ = [
    "ConsumerInfo",
    "Mailbox",
    "Relay",
    "RelayStats",
    "is_loopback",
]

log = logging.getLogger("posewire.relay")

T = TypeVar("T")

#: Close code when the client did not negotiate the ``posewire.v1`` subprotocol (RFC 6455).
_CLOSE_PROTOCOL = 1002
#: Descriptors kept free for the listening socket, logs, files (not for clients).
_FD_RESERVE = 64
#: Connections accepted per loop pass at most (spec §5.7 rule 8): below the spare
#: descriptors, so a burst never runs the process out of them before refused
#: connections are closed. (The kernel's accept queue stays deep, see Relay.start.)
_ACCEPT_BATCH = _FD_RESERVE // 2
#: A msgpack map whose first key is ``t`` = ``"f"``: how every encoder writes a frame
#: (spec §5.2 canonical order), checked before decoding to drop over-rate frames cheaply.
_FRAME_PREFIX = b"\xa1t\xa1f"
#: Payload tag of the relay's send-window pings (spec §5.7 rule 4): the tag, then the
#: count of frames written before the ping (8 bytes, big-endian). websockets' own
#: keepalive pings carry 4 random bytes, so the two never mix.
_WINDOW_TAG = b"pwW1"
#: Seconds between re-probes of a consumer whose window is full (a client may answer only
#: the newest of several pings, RFC 6455 §5.5.3; one pong reopens the window).
_REPROBE_S = 1.0
#: A certificate that expires sooner than this gets a warning at start (spec §5.7 rule 10).
_CERT_WARN_DAYS = 7


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


def _looks_like_frame(data: bytes) -> bool:
    return len(data) > 5 and 0x80 <= data[0] <= 0x8F and data[1:5] == _FRAME_PREFIX


class _LogLimiter:
    """At most ``burst`` lines per ``interval`` seconds; the rest are counted and
    reported in one line when the next interval begins (rejection floods, spec §5.8)."""

    def __init__(self, logger: logging.Logger, *, burst: int = 10, interval: float = 10.0) -> None:
        self.logger = logger
        self.burst = burst
        self.interval = interval
        self._start = -float("inf")
        self._lines = 0
        self.suppressed = 0

    def __call__(self, msg: str, *args: object) -> None:
        now = time.monotonic()
        if now - self._start >= self.interval:
            if self.suppressed:
                self.logger.info("(%d more rejections in the last %.0f s not logged)",
                                 self.suppressed, now - self._start)
            self._start, self._lines, self.suppressed = now, 0, 0
        if self._lines < self.burst:
            self._lines += 1
            self.logger.info(msg, *args)
        else:
            self.suppressed += 1


class Mailbox(Generic[T]):
    """Latest-wins mailbox (spec §5.7): one slot per message kind + an asyncio.Event.

    :meth:`put` never blocks: a message replaces an unsent one of the same kind (a
    counted drop). :meth:`get` returns the pending message that was put first, so the
    order of kinds is kept. At most one message per kind is ever held.
    """

    __slots__ = ("_closed", "_event", "_order", "_slots", "delivered", "dropped")

    def __init__(self) -> None:
        self._slots: dict[str, tuple[int, T]] = {}
        self._event = asyncio.Event()
        self._order = count()
        self._closed = False
        #: Messages replaced before they were sent, per kind.
        self.dropped: Counter[str] = Counter()
        #: Messages handed to the sender, per kind.
        self.delivered: Counter[str] = Counter()

    def __len__(self) -> int:
        return len(self._slots)

    @property
    def closed(self) -> bool:
        """True once :meth:`close` was called."""
        return self._closed

    def put(self, kind: str, item: T) -> None:
        """Store ``item`` in the ``kind`` slot, replacing (and counting) an unsent one."""
        if self._closed:
            return
        if self._slots.pop(kind, None) is not None:
            self.dropped[kind] += 1
        self._slots[kind] = (next(self._order), item)
        self._event.set()

    def pending(self, kind: str) -> T | None:
        """The unsent item of ``kind``, if any."""
        slot = self._slots.get(kind)
        return None if slot is None else slot[1]

    def take(self) -> tuple[str, T] | None:
        """The oldest pending ``(kind, item)`` without waiting, or ``None``."""
        if not self._slots:
            return None
        kind = min(self._slots, key=lambda k: self._slots[k][0])
        _, item = self._slots.pop(kind)
        self.delivered[kind] += 1
        return kind, item

    async def wait(self) -> bool:
        """Wait until a message is pending (True) or the mailbox is closed (False)."""
        while not self._slots:
            if self._closed:
                return False
            self._event.clear()
            await self._event.wait()
        return not self._closed

    async def get(self) -> tuple[str, T] | None:
        """Wait for the oldest pending message; ``None`` once closed."""
        while True:
            if self._closed:
                return None
            item = self.take()
            if item is not None:
                return item
            self._event.clear()
            await self._event.wait()

    def close(self) -> None:
        """Discard pending messages and wake the waiting sender (it gets ``None``)."""
        self._closed = True
        self._slots.clear()
        self._event.set()


@dataclass
class RelayStats:
    """Relay-wide counters (the status line, spec §5.7)."""

    connections: int = 0
    frames_in: int = 0
    frames_out: int = 0
    drops: int = 0
    errors: int = 0
    rate_limited: int = 0
    sequence_events: int = 0
    #: frames older than the stream's newest, dropped (spec §5.7)
    stale: int = 0
    #: connections refused at accept (connection or per-address cap)
    refused: int = 0
    #: hello-less connections closed to make room at the cap
    evicted: int = 0
    #: browsers refused for their Origin
    origin_refused: int = 0
    #: producers replaced because they stopped answering pings
    replaced: int = 0
    #: connections closed at the hello deadline before their TLS or WebSocket handshake
    #: was done
    handshake_timeouts: int = 0
    #: TLS handshakes that failed (or timed out)
    tls_failed: int = 0
    #: accept() calls that failed (out of descriptors or memory)
    accept_failed: int = 0
    #: messages from the broker not taken (the stream's producer is here, too large, over
    #: the frame rate, not a data message; spec §5.7.1 rule 6)
    broker_refused: int = 0
    errors_by_code: Counter[str] = field(default_factory=Counter)


@dataclass(frozen=True, slots=True)
class ConsumerInfo:
    """A snapshot of one consumer: frames written and dropped, what it holds right now
    (``pending`` mailbox slots, at most 3; ``buffered_bytes`` in the transport;
    ``in_flight`` frames written but not yet acknowledged by a pong)."""

    session: str
    stream: str
    delivered: int
    dropped: int
    pending: int
    buffered_bytes: int
    in_flight: int = 0


_Item = tuple[Message, bytes]


class _Client:
    """The relay's view of one websocket."""

    def __init__(self, ws: _RelayConnection, conn: Connection, session: str) -> None:
        self.ws = ws
        self.conn = conn
        self.session = session
        self.role: Literal["producer", "consumer"] | None = None
        self.stream: _Stream | None = None
        self.mailbox: Mailbox[_Item] | None = None
        self.sender: asyncio.Task[None] | None = None
        # consumers: the send window (spec §5.7) — frames written, frames known read
        # (acknowledged by the pong of a ping sent after them), the last ping's mark
        self.sent = 0
        self.acked = 0
        self.ping_mark = 0
        self.window = asyncio.Event()  # set by a pong that acknowledges frames
        # producers: the frame-rate bucket, checked before decoding (spec §5.8)
        self.bucket: TokenBucket | None = None


class _Stream:
    """One named stream: its clients and the state a late joiner needs (spec §5.7)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.producers: set[_Client] = set()
        self.consumers: set[_Client] = set()
        self.calibration: _Item | None = None
        self.conditions: Conditions | None = None
        self._conditions_item: _Item | None = None
        self.values: NDArray[np.float64] = np.full(N_DIMS, np.nan)  # NaN = never sent
        self.seq = 0
        self.timestamp_us = 0
        self.has_frame = False
        self._frame_item: _Item | None = None  # the latest full frame, when known
        #: spec §5.7 rule 3/7: the merged snapshot belongs to one producer; set when a new
        #: producer takes the stream, the snapshot starts afresh at its first frame
        self.fresh = False
        #: the newest sequence number seen from the current producer (spec §5.7)
        self.sequence = SequenceTracker()
        #: held while a producer hello checks whether the current producer is alive
        self.takeover = asyncio.Lock()
        #: frames from the broker: the rate of one producer (spec §5.7.1 rule 6)
        self.broker_bucket: TokenBucket | None = None

    @property
    def empty(self) -> bool:
        return not self.producers and not self.consumers

    def set_conditions(self, msg: ConditionsMessage, data: bytes) -> None:
        self.conditions = msg.conditions
        self._conditions_item = (msg, data)

    def update_frame(self, frame: Frame, data: bytes) -> None:
        """Merge ``frame`` into the latest state (spec §5.7)."""
        if self.fresh:
            # spec §5.7 rule 3: every dim a frame *since the producer's hello* has carried;
            # the previous producer's dims are not mixed under the new one's s (rule 7)
            self.fresh = False
            self.values = np.full(N_DIMS, np.nan)
        self.has_frame = True
        self.seq, self.timestamp_us = frame.seq, frame.timestamp_us
        if frame.conditions is not None:
            self.conditions = frame.conditions
            self._conditions_item = None  # built lazily from the state
        if frame.is_full:
            self.values = frame.values.copy()
            # forwarded verbatim to late joiners unless it lacks the condition state
            full_state = frame.conditions is not None or self.conditions is None
            self._frame_item = (frame, data) if full_state else None
        else:
            present = frame.mask
            self.values[present] = frame.values[present]
            self._frame_item = None

    def underlay(self, frame: Frame, data: bytes) -> None:
        """Merge a stored start frame (spec §5.7.1 rule 3) *under* the live frames: dims
        no live frame carried take its values; ``s``, ``ts`` and the live dims stay."""
        if not self.has_frame:
            self.update_frame(frame, data)
            return
        missing = np.isnan(self.values) & frame.mask
        if missing.any():
            self.values[missing] = frame.values[missing]
            self._frame_item = None

    def late_join(self) -> Iterator[tuple[str, _Item]]:
        """What a new consumer gets at once: calibration, conditions, latest full state."""
        if self.calibration is not None:
            yield "cal", self.calibration
        if self.conditions is not None:
            if self._conditions_item is None:
                msg = ConditionsMessage(self.conditions, self.timestamp_us)
                self._conditions_item = (msg, encode(msg))
            yield "cond", self._conditions_item
        if self.has_frame:
            yield "f", self.full_frame()

    def full_frame(self) -> _Item:
        """The latest full state as a frame: the producer's bytes when its latest frame
        was full, else the merged state encoded once per state change (not per
        consumer), carrying the current conditions."""
        if self._frame_item is None:
            frame = Frame(self.seq, self.timestamp_us, self.values.copy(), self.conditions)
            self._frame_item = (frame, encode(frame))
        return self._frame_item


class _RelayConnection(ServerConnection):
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
        self.client: _Client | None = None
        fail = self.protocol.fail
        relay = self.relay

        def fail_too_large(code: CloseCode | int, reason: str = "") -> None:
            # websockets refuses a message over max_size from its header (1009, unread);
            # spec §5.8: every oversized message is decode.too_large, with its error
            if code == CloseCode.MESSAGE_TOO_BIG and self.protocol.state is WsState.OPEN:
                self.protocol.send_binary(relay._too_large_reply)
                code = CLOSE_CODES["decode.too_large"]
                reason = "decode.too_large"
                relay.stats.errors += 1
                relay.stats.errors_by_code["decode.too_large"] += 1
            fail(code, reason)

        self.protocol.fail = fail_too_large  # type: ignore[method-assign]

    def data_received(self, data: bytes) -> None:
        # spec §5.7 rule 11: bytes from the peer are a sign of life, like a pong
        self.heard_at = self.loop.time()
        super().data_received(data)

    async def _answered(self, pong: asyncio.Future[float], timeout: float,
                        since: float | None = None) -> bool:
        """True when ``pong`` comes, or the peer sends anything (after ``since``, loop
        time, default now), within ``timeout`` s (spec §5.7 rule 11: a busy peer's pong
        may wait behind data the relay has not read yet, and its bytes are a sign of
        life like a pong)."""
        if since is None:
            since = self.loop.time()
        done, _ = await asyncio.wait({pong}, timeout=timeout)
        if done:
            return not pong.cancelled() and pong.exception() is None
        return self.heard_at > since

    async def _ping(self, timeout: float) -> asyncio.Future[float] | None:
        """A ping, or None when websockets could not take it within ``timeout`` s: it
        waits for the write buffer to drain, which a peer that stopped reading never
        does (spec §5.7 rule 11: liveness does not depend on the buffers)."""
        try:
            async with asyncio.timeout(timeout):
                return asyncio.ensure_future(await self.ping())
        except TimeoutError:
            return None

    async def alive(self, timeout: float) -> bool:
        """Ping; True when the peer answers or sends within ``timeout`` s."""
        since = self.loop.time()
        try:
            pong = await self._ping(timeout)
        except ConnectionClosed:
            return False
        if pong is None:
            return self.heard_at > since
        return await self._answered(pong, max(0.0, since + timeout - self.loop.time()), since)

    def _fail_keepalive(self) -> None:
        """Close 1011 (spec §5.7 rule 11) without waiting behind the write buffer: a
        peer that does not read would never let the close frame through, so its
        connection is dropped now (after ``close_timeout`` when nothing is buffered)."""
        if self.protocol.state is WsState.OPEN:
            self.protocol.fail(CloseCode.INTERNAL_ERROR, "keepalive ping timeout")
            with contextlib.suppress(RuntimeError, OSError):
                self.send_data()
        if self.transport.get_write_buffer_size() > 0 or not self.close_timeout:
            self.transport.abort()
        else:
            self.loop.call_later(self.close_timeout, self.transport.abort)

    async def keepalive(self) -> None:
        # spec §5.7 rule 11: a phase per connection (its first keepalive ping comes up to
        # one interval later), so connections opened together do not all ping together;
        # a peer that answers, or sends anything, within the timeout is alive, and a ping
        # it has not answered yet is not repeated. The timeout runs from when the ping is
        # due, even while the ping waits behind a write buffer the peer does not drain.
        if self.ping_interval is None:
            return
        await asyncio.sleep(random.uniform(0.0, self.ping_interval))
        pong: asyncio.Future[float] | None = None
        with contextlib.suppress(ConnectionClosed):
            while True:
                await asyncio.sleep(self.ping_interval)
                since = self.loop.time()
                limit = self.ping_timeout if self.ping_timeout is not None else self.ping_interval
                if pong is None or pong.done():
                    pong = await self._ping(limit)
                if self.ping_timeout is None:
                    continue
                if pong is None:
                    alive = self.heard_at > since
                else:
                    left = max(0.0, since + self.ping_timeout - self.loop.time())
                    alive = await self._answered(pong, left, since)
                if not alive:
                    self._fail_keepalive()
                    return

    def acknowledge_pings(self, data: bytes) -> None:
        # spec §5.7 rule 4: the pong of a send-window ping acknowledges the frames
        # written before it (its payload says how many); other pongs are websockets' own
        if len(data) == 12 and data.startswith(_WINDOW_TAG):
            self.relay._window_ack(self, int.from_bytes(data[4:], "big"))
            return
        super().acknowledge_pings(data)

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.raw_transport = transport
        if not self.relay._admit(self, transport):
            # refused before websockets does any work for it (no handler, no parsing)
            self.refused = True
            transport.abort()
            return
        tls = self.relay.tls
        if tls is None:
            self.attached = True
            super().connection_made(transport)
            return
        # spec §5.7 rule 8: the TLS handshake comes after admission, so a pending one
        # counts against the caps and the hello deadline (nothing is read before)
        transport.pause_reading()
        self.tls_task = self.loop.create_task(self._start_tls(transport, tls),
                                              name=f"posewire-tls-{self.peer_host}")

    async def _start_tls(self, raw: asyncio.Transport, tls: ssl.SSLContext) -> None:
        relay = self.relay
        early = _EarlyData()
        left = self.accepted_at + relay.hello_timeout - self.loop.time()
        try:
            secure = await self.loop.start_tls(raw, early, tls, server_side=True,
                                               ssl_handshake_timeout=max(0.001, left))
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
        self.attached = True
        super().connection_made(secure)
        # application data that came with the end of the handshake, before websockets
        # was attached, is handed over in order
        for data in early.data:
            self.data_received(data)
        if early.eof:
            self.eof_received()

    def connection_lost(self, exc: Exception | None) -> None:
        self.relay._release(self)
        if self.attached:
            super().connection_lost(exc)


class _EarlyData(asyncio.Protocol):
    """The application side of a TLS handshake run by :meth:`_RelayConnection._start_tls`:
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


class Relay:
    """An asyncio websocket relay (spec §5.7); usable in-process as an async context
    manager (``async with Relay("127.0.0.1", port=0) as relay: relay.port``) or from the
    CLI through :meth:`run`.

    Options (keyword-only):

    * ``token`` — required auth token (compared in constant time); a host beyond loopback
      needs one, always (spec §5.7 rule 5). ``no_auth=True`` ignores a configured token on
      loopback and is refused beyond it (``usage.bad_option``).
    * ``tls_cert`` / ``tls_key`` — PEM files: serve ``wss://``. A host beyond loopback
      needs them unless ``insecure=True``.
    * ``allow_origins`` — browser origins (``"https://example.org"``) accepted besides the
      relay's own; a client that sends no ``Origin`` header is not a browser and is
      unaffected.
    * ``max_bytes`` — largest message (spec §5.8). ``max_fps`` / ``burst_s`` / ``on_rate``
      — per-producer token bucket (``"drop"``: excess frames dropped and counted before
      decoding, ``"close"``: the producer is closed with ``decode.rate``).
    * ``max_connections`` / ``max_per_address`` — admission caps (clamped below the
      descriptor limit); ``hello_timeout`` — seconds from accept to hello;
      ``hello_rate`` / ``hello_burst`` — hellos per second per client address.
    * ``ping_interval`` / ``ping_timeout`` — keepalive (None: off); a producer hello for a
      busy stream replaces a producer that does not answer a ping within ``ping_timeout``.
    * ``send_window`` — frames a consumer may have in flight beyond the last
      acknowledged one before the relay holds only its newest frame (a window ping after
      every half window, spec §5.7 rule 4).
    * ``status_every`` — seconds between status lines on ``status_file`` (0/None: off);
      ``send_buffer`` — kernel send buffer per connection in bytes (None: OS default).
    * ``broker`` — a :class:`posewire.cluster.Broker`: share the streams with the relays
      on the same NATS server (spec §5.7.1).
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
                 send_window: int = 128,
                 status_every: float | None = None, status_file: TextIO | None = None,
                 send_buffer: int | None = 16384, close_timeout: float = 2.0,
                 broker: Broker | None = None) -> None:
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
        check_liveness(ping_interval, ping_timeout)
        self.host = host
        self._requested_port = port
        self.token = token
        self.tls = None if tls_cert is None or tls_key is None else server_tls_context(tls_cert, tls_key)
        self.tls_cert = tls_cert
        self.allow_origins = frozenset(_norm_origin(o) for o in allow_origins)
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
        self._ping_every = max(1, send_window // 2)
        self._phase = count()
        self.status_every = status_every
        self.status_file = status_file
        self.send_buffer = send_buffer
        #: websockets' write high-water mark; also the most a consumer's transport may
        #: hold before its frames go through the latest-wins mailbox (spec §5.7)
        self._write_limit = max(4096, 2 * self.limits.max_message_bytes)
        self.close_timeout = close_timeout
        self.broker = broker
        self.stats = RelayStats()
        self._streams: dict[str, _Stream] = {}
        self._clients: set[_Client] = set()
        # admission (spec §5.8): admitted connections, per address, those without hello
        self._admitted = 0
        self._per_address: Counter[str] = Counter()
        #: per address, its connections still without hello (insertion order = age)
        self._hello_less: dict[str, dict[_RelayConnection, None]] = {}
        self._hello_buckets: dict[str, TokenBucket] = {}
        self._reject = _LogLimiter(log)
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

    # ------------------------------------------------------------ lifecycle

    def _fit_descriptor_limit(self) -> None:
        """Raise the soft RLIMIT_NOFILE towards what the caps need; clamp the caps below
        what the process may open (spec §5.8 admission)."""
        try:
            import resource
        except ImportError:  # pragma: no cover - not POSIX
            return
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        want = self.max_connections + _FD_RESERVE
        if soft != resource.RLIM_INFINITY and soft < want:
            new = want if hard == resource.RLIM_INFINITY else min(hard, want)
            with contextlib.suppress(ValueError, OSError):
                resource.setrlimit(resource.RLIMIT_NOFILE, (new, hard))
                soft = new
        if soft != resource.RLIM_INFINITY and self.max_connections > soft - _FD_RESERVE:
            fit = max(1, soft - _FD_RESERVE)
            log.warning("max_connections %d lowered to %d (descriptor limit %d)",
                        self.max_connections, fit, soft)
            self.max_connections = fit
        self.max_per_address = min(self.max_per_address, self.max_connections)

    def _check_certificate(self) -> None:
        """Warn when the certificate has expired, is not valid yet, or expires within
        ``_CERT_WARN_DAYS`` days (spec §5.7 rule 10): clients will refuse it."""
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
        elif left < _CERT_WARN_DAYS:
            log.warning("the TLS certificate %s expires in %.1f days (%s)", self.tls_cert,
                        left, not_after.isoformat())
        if not_before > now:
            log.warning("the TLS certificate %s is not valid before %s: clients will "
                        "refuse it", self.tls_cert, not_before.isoformat())

    async def start(self) -> None:
        """Bind and start serving (after connecting to the broker, if any)."""
        self._fit_descriptor_limit()
        self._check_certificate()
        if self.broker is not None:
            await self.broker.start(self)
        conn_class = type("RelayConnection", (_RelayConnection,), {"relay": self})
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
            backlog=_ACCEPT_BATCH,
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

    def _loop_exception(self, loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        """The loop's exception handler while the relay runs: a failed accept() on one
        of its listening sockets (out of descriptors or memory; asyncio retries a second
        later) is counted and logged at a bounded rate without a traceback (spec §5.7
        rule 8); anything else goes to the previous handler."""
        sock = context.get("socket")
        fileno = sock.fileno() if sock is not None and hasattr(sock, "fileno") else -1
        if (self._listening and fileno in self._listening
                and str(context.get("message", "")).startswith("socket.accept()")):
            self.stats.accept_failed += 1
            exc = context.get("exception")
            self._reject("accept() failed: %s", exc if exc is not None else context["message"])
            return
        if self._previous_handler is not None:
            self._previous_handler(loop, context)
        else:
            loop.default_exception_handler(context)

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
        for waiting in list(self._hello_less.values()):
            for conn in list(waiting):
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
                own.add(_norm_origin(f"{scheme}://{f'[{h}]' if ':' in h else h}:{self.port}"))
        return frozenset(own) | self.allow_origins

    # ------------------------------------------------------------ introspection

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
                    len(c.mailbox), c.ws.transport.get_write_buffer_size(), c.sent - c.acked))
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
                + ("" if self.broker is None
                   else f" broker_refused={st.broker_refused}" + self.broker.status()))

    async def _status_loop(self, every: float) -> None:
        out = self.status_file or sys.stderr
        while True:
            await asyncio.sleep(every)
            print(self.status_line(), file=out, flush=True)

    # ------------------------------------------------------------ admission (spec §5.8)

    def _admit(self, conn: _RelayConnection, transport: asyncio.BaseTransport) -> bool:
        """At accept, before reading (spec §5.7 rule 8): the per-address cap, then the
        connection cap — for a newcomer from an address with no connection awaiting its
        hello, the oldest such connection of the address holding the most of them makes
        room; a newcomer from an address that has some is refused. False: refuse."""
        peer = transport.get_extra_info("peername")
        host = str(peer[0]) if isinstance(peer, tuple) and peer else ""
        conn.peer_host = host
        conn.accepted_at = asyncio.get_running_loop().time()
        why = ""
        if self._closing:
            why = "shutting down"
        elif self._per_address[host] >= self.max_per_address:
            why = f"{host} has {self.max_per_address} connections (per-address cap)"
        elif self._admitted >= self.max_connections:
            top = max(self._hello_less, key=lambda h: len(self._hello_less[h]), default=None)
            if top is None:
                why = f"{self.max_connections} connections (cap)"
            elif host in self._hello_less:
                why = f"{self.max_connections} connections (cap); {host} has some without hello"
            else:
                victim = next(iter(self._hello_less[top]))
                self._release(victim)
                if victim.raw_transport is not None:
                    victim.raw_transport.abort()
                self.stats.evicted += 1
        if why:
            self.stats.refused += 1
            self._reject("refused a connection from %s: %s", host, why)
            return False
        conn.admitted = True
        self._admitted += 1
        self._per_address[host] += 1
        self._hello_less.setdefault(host, {})[conn] = None
        # spec §5.7 rule 8: the TLS and WebSocket handshakes must be done by the hello
        # deadline (the hello itself is timed by the handler, which answers decode.state)
        conn.deadline = asyncio.get_running_loop().call_at(
            conn.accepted_at + self.hello_timeout, self._handshake_overdue, conn)
        if self.send_buffer:
            sock = transport.get_extra_info("socket")
            if sock is not None:
                with contextlib.suppress(OSError):
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, self.send_buffer)
        return True

    def _welcomed(self, conn: _RelayConnection) -> None:
        """``conn`` said hello (or is gone): no longer waiting, never evicted."""
        waiting = self._hello_less.get(conn.peer_host)
        if waiting is not None and waiting.pop(conn, 0) is None and not waiting:
            del self._hello_less[conn.peer_host]

    def _handshake_overdue(self, conn: _RelayConnection) -> None:
        """The hello deadline passed before the handshakes were done (no handler yet)."""
        conn.deadline = None
        if conn.admitted and conn.client is None and conn.raw_transport is not None:
            self.stats.handshake_timeouts += 1
            self._reject("closed a connection from %s: no handshake within %.1f s",
                         conn.peer_host, self.hello_timeout)
            self._release(conn)
            conn.raw_transport.abort()

    def _release(self, conn: _RelayConnection) -> None:
        if conn.deadline is not None:
            conn.deadline.cancel()
            conn.deadline = None
        if not conn.admitted:
            return
        conn.admitted = False
        self._admitted -= 1
        self._welcomed(conn)
        host = conn.peer_host
        self._per_address[host] -= 1
        if self._per_address[host] <= 0:
            del self._per_address[host]
            bucket = self._hello_buckets.get(host)
            now = asyncio.get_running_loop().time()
            if bucket is not None and (bucket.last is None or bucket.tokens + (
                    now - bucket.last) * bucket.rate >= bucket.capacity):
                del self._hello_buckets[host]  # refilled: forget the address

    def _hello_allowed(self, host: str) -> bool:
        bucket = self._hello_buckets.get(host)
        if bucket is None:
            if len(self._hello_buckets) >= 4 * self.max_connections:
                # bounded memory under many addresses: forget those with no connection
                for gone in [h for h in self._hello_buckets if h not in self._per_address]:
                    del self._hello_buckets[gone]
            bucket = self._hello_buckets[host] = TokenBucket(self.hello_rate, self.hello_burst)
        return bucket.take(asyncio.get_running_loop().time())

    def _check_request(self, ws: ServerConnection, request: Request) -> Response | None:
        """Origin check before the upgrade (spec §5.8): browsers only from allowed origins."""
        host = ws.peer_host if isinstance(ws, _RelayConnection) else "?"
        origins = request.headers.get_all("Origin")
        if len(origins) > 1:
            # spec §5.7 rule 9: one Origin at most (RFC 6454 §7.3); a bad request, answered
            # once with 400 — never an internal error
            self.stats.origin_refused += 1
            self._reject("refused a request from %s: %d Origin headers", host, len(origins))
            return ws.respond(400, "one Origin header at most\n")
        origin = origins[0] if origins else None
        if origin is None or _norm_origin(origin) in self.origins:
            return None
        self.stats.origin_refused += 1
        self._reject("refused a browser from %s: origin %r not allowed", host, origin[:100])
        return ws.respond(403, "origin not allowed\n")

    # ------------------------------------------------------------ connections

    async def _handle(self, ws: ServerConnection) -> None:
        assert isinstance(ws, _RelayConnection)
        client = _Client(ws, Connection(side="server", limits=self.limits,
                                        auth_token=self.token), secrets.token_hex(8))
        ws.client = client
        if ws.deadline is not None:  # the handshakes are done: the hello is timed below
            ws.deadline.cancel()
            ws.deadline = None
        self.stats.connections += 1
        if ws.subprotocol != SUBPROTOCOL:
            await ws.close(_CLOSE_PROTOCOL, f"subprotocol {SUBPROTOCOL} required")
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
            if not await self._on_data(client, first):
                return
            async for data in ws:
                if not await self._on_data(client, data):
                    return
                # let the consumers' sender tasks take the frame before the next message
                # (websockets returns buffered messages without yielding)
                await asyncio.sleep(0)
        except ConnectionClosed:
            pass
        finally:
            self._detach(client)
            client.conn.connection_closed()

    async def _on_data(self, client: _Client, data: str | bytes) -> bool:
        """Process one message; False when the connection is done."""
        events: list[Event]
        if isinstance(data, str):
            # spec §5.2: every message is binary
            events = [client.conn.fail(DecodeError("decode.type", "a message must be binary",
                                                   path="$"))]
            data = b""
        else:
            prechecked = False
            if client.bucket is not None and _looks_like_frame(data):
                # spec §5.8: the rate limit is checked before the frame is decoded
                if not await self._rate_ok(client):
                    return client.conn.state is not State.CLOSED
                prechecked = True
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

    async def _rate_ok(self, client: _Client) -> bool:
        """Take a token from the producer's bucket; over the rate: drop (counted) or
        close with ``decode.rate`` (spec §5.8)."""
        assert client.bucket is not None
        if client.bucket.take(asyncio.get_running_loop().time()):
            return True
        self.stats.rate_limited += 1
        if self.limits.on_rate == "close":
            await self._fail(client, client.conn.fail(DecodeError(
                "decode.rate", "frames exceed the rate limit", path="s")))
        return False

    async def _on_message(self, client: _Client, msg: Message, data: bytes) -> None:
        if isinstance(msg, Hello):
            await self._on_hello(client, msg)
            return
        stream = client.stream
        if stream is None:  # pragma: no cover - the state machine forbids it
            return
        if self._deliver(stream, msg, data):
            for hook in self.publish_hooks:
                hook(stream.name, msg, data)
        # Bye / ErrorMessage: the state machine moved to CLOSED; _on_data closes

    async def _on_hello(self, client: _Client, hello: Hello) -> None:
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

    async def _answers_ping(self, client: _Client) -> bool:
        """True when ``client`` answers a ping, or keeps sending, within ``ping_timeout``
        (default 3 s) of its last sign of life (spec §5.7 rules 1 and 11)."""
        return await client.ws.alive(self.ping_timeout or DEFAULT_PING_TIMEOUT)

    def fan_out(self, stream: str, message: Message, data: bytes | None = None) -> bool:
        """Deliver a data message (frame, calibration, conditions) that arrived from
        elsewhere (e.g. a message broker linking relays) to this relay's consumers of
        ``stream``, exactly as if its local producer had sent it: the stream's late-join
        state is updated and every consumer gets it latest-wins (spec §5.7). ``data``: the
        message's encoded bytes (encoded here when omitted). Returns False when the
        message was not taken (a frame older than the stream's newest, not a data
        message, a stream whose producer is connected here, a message over this relay's
        size limit, a frame over the producer frame rate: spec §5.7.1 rule 6).
        :attr:`publish_hooks` are not called (no echo back to the broker)."""
        if not isinstance(message, Frame | Calibration | ConditionsMessage):
            self.stats.broker_refused += 1
            return False
        s = self._streams.get(stream)
        if s is not None and s.producers:
            # spec §5.7.1 rule 6: the stream's producer is here; nothing from the broker
            # overrides it (its own messages never come back: the broker link has no echo)
            self.stats.broker_refused += 1
            return False
        if data is None:
            data = encode(message)
        if len(data) > self.limits.max_message_bytes:
            # spec §5.7.1 rule 6: the size limit of a client message (spec §5.8)
            self.stats.broker_refused += 1
            return False
        if s is None:
            s = self._streams[stream] = _Stream(stream)
        if isinstance(message, Frame):
            # spec §5.7.1 rule 6: the frame rate of a producer (spec §5.8), per stream, so
            # that one stream's broker input cannot crowd out the others
            if s.broker_bucket is None:
                fps = self.limits.max_fps
                s.broker_bucket = TokenBucket(fps, max(1.0, fps * self.limits.burst_s, fps))
            if not s.broker_bucket.take(asyncio.get_running_loop().time()):
                self.stats.rate_limited += 1
                self.stats.broker_refused += 1
                return False
        return self._deliver(s, message, data)

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

    def _deliver(self, stream: _Stream, msg: Message, data: bytes) -> bool:
        """One data message into ``stream``: its state, then its consumers."""
        if isinstance(msg, Frame):
            stale, event = stream.sequence.observe(msg.seq)
            if event is not None:
                self.stats.sequence_events += 1
            if stale:
                # spec §5.7: a frame behind the newest is never kept nor sent as the latest
                self.stats.stale += 1
                return False
            self.stats.frames_in += 1
            stream.update_frame(msg, data)
            self._broadcast(stream, "f", (msg, data))
        elif isinstance(msg, Calibration):
            stream.calibration = (msg, data)
            self._broadcast(stream, "cal", (msg, data))
        elif isinstance(msg, ConditionsMessage):
            stream.set_conditions(msg, data)
            self._broadcast(stream, "cond", (msg, data))
        else:
            return False
        return True

    def _broadcast(self, stream: _Stream, kind: str, item: _Item) -> None:
        # spec §5.7: never blocks; a full slot is a counted drop
        msg, data = item
        is_frame = kind == "f"
        window, limit, every = self.send_window, self._write_limit, self._ping_every
        # the WebSocket frame around ``data``, serialized once for every consumer written
        # now: a server's frames are unmasked and the relay negotiates no extension
        # (compression=None), so they are the same bytes on every connection
        wire: bytes | None = None
        written = 0
        for consumer in stream.consumers:
            box = consumer.mailbox
            assert box is not None
            ws = consumer.ws
            if consumer.conn.state is not State.OPEN or ws.protocol.state is not WsState.OPEN:
                continue  # closing: the handler cleans up
            transport = ws.transport
            if (not box and consumer.sent - consumer.acked < window
                    and transport.get_write_buffer_size() < limit):
                # fast path: nothing is queued for this consumer, its socket keeps up and
                # its window is open, so the bytes are written now (in order: an item its
                # sender took was already written when it was taken)
                if wire is None:
                    wire = WsFrame(Opcode.BINARY, data).serialize(mask=False, extensions=[])
                out = wire
                if is_frame:
                    consumer.sent += 1
                    if consumer.sent - consumer.ping_mark >= every:
                        # the window ping goes in the same write (one send, one segment)
                        consumer.ping_mark = consumer.sent
                        out = wire + _window_ping(consumer.sent)
                try:
                    transport.write(out)
                except RuntimeError:
                    continue  # the transport is closing: the handler cleans up
                written += 1
                continue
            unsent = box.pending(kind)
            if unsent is not None and is_frame:
                self.stats.drops += 1
                old = unsent[0]
                assert isinstance(old, Frame) and isinstance(msg, Frame)
                if not msg.is_full or (old.conditions is not None and msg.conditions is None):
                    # the dropped frame held dims (or conditions) this one lacks: send the
                    # merged latest state instead, so nothing is lost but the stale values
                    box.put(kind, stream.full_frame())
                    continue
            box.put(kind, item)
        if is_frame:
            self.stats.frames_out += written

    # ------------------------------------------------------------ send window (spec §5.7)

    def _window_probe(self, consumer: _Client) -> None:
        """Send ``consumer`` a window ping now (its sender wrote a frame, or its window is
        full): its pong acknowledges the ``sent`` frames written before it."""
        consumer.ping_mark = consumer.sent
        ws = consumer.ws
        # a peer that leaves a full write buffer unread could not answer anyway: what the
        # relay holds for it stays bounded (spec §5.7 rule 4)
        if (ws.protocol.state is WsState.OPEN
                and ws.transport.get_write_buffer_size() < self._write_limit):
            with contextlib.suppress(RuntimeError):
                ws.transport.write(_window_ping(consumer.sent))

    def _window_ack(self, ws: _RelayConnection, mark: int) -> None:
        """A window pong: the consumer's websocket read the ``mark`` frames written before
        its ping (one TCP stream). A mark beyond what was written is ignored."""
        consumer = ws.client
        if consumer is None or consumer.mailbox is None or not consumer.acked < mark <= consumer.sent:
            return
        consumer.acked = mark
        consumer.window.set()

    async def _attach(self, client: _Client, hello: Hello) -> None:
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
            stream = self._streams[hello.stream] = _Stream(hello.stream)
        client.stream = stream
        if client.role == "producer":
            stream.producers.add(client)
            stream.sequence = SequenceTracker()  # a new producer numbers from its own start
            stream.fresh = True  # spec §5.7 rule 3: its first frame starts the snapshot
            client.bucket = TokenBucket(self.limits.max_fps,
                                        max(1.0, self.limits.max_fps * self.limits.burst_s))
            return
        box: Mailbox[_Item] = Mailbox()
        for kind, item in stream.late_join():  # spec §5.7: late joiner
            box.put(kind, item)
        client.mailbox = box
        # spec §5.7 rule 4: the consumers' window pings are spread over W/2 frames (one
        # phase each) instead of all falling on the same frame
        client.ping_mark = -(next(self._phase) % self._ping_every)
        stream.consumers.add(client)
        client.sender = asyncio.create_task(self._send_loop(client),
                                            name=f"posewire-send-{client.session}")

    async def _send_loop(self, client: _Client) -> None:
        box = client.mailbox
        assert box is not None
        try:
            while await box.wait():
                if client.sent - client.acked >= self.send_window:
                    # the window is full: probe, and wait for the pong that acknowledges
                    # frames; probe again now and then (a client may answer only the
                    # newest ping, and one pong reopens the window)
                    self._window_probe(client)
                    client.window.clear()
                    with contextlib.suppress(TimeoutError):
                        async with asyncio.timeout(_REPROBE_S):
                            await client.window.wait()
                    continue
                item = box.take()
                if item is None:
                    continue
                kind, (msg, data) = item
                out = client.conn.send(msg, encoded=data)
                await client.ws.send(out)
                if kind == "f":
                    self.stats.frames_out += 1
                    client.sent += 1
                    if client.sent - client.ping_mark >= self._ping_every:
                        self._window_probe(client)
        except (ConnectionClosed, UsageError):
            pass  # closed under us; the handler cleans up

    def _detach(self, client: _Client) -> None:
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

    async def _fail(self, client: _Client, failure: ProtocolFailure) -> None:
        """Close one client after a violation: error message (public info) then the
        close code of spec §5.8. Other clients are untouched."""
        self.stats.errors += 1
        self.stats.errors_by_code[failure.error.code] += 1
        self._reject("client %s (%s): %s", client.session, client.ws.peer_host, failure.error)
        if client.mailbox is not None:
            client.mailbox.close()
        if failure.reply:
            with contextlib.suppress(ConnectionClosed, TimeoutError):
                async with asyncio.timeout(self.close_timeout):
                    await client.ws.send(failure.reply)
        await self._close(client, failure.close_code, failure.error.code)

    async def _close(self, client: _Client, code: int, reason: str) -> None:
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

    async def _say_bye(self, client: _Client, reason: str) -> None:
        if client.mailbox is not None:
            client.mailbox.close()
        if client.conn.state is State.OPEN:
            with contextlib.suppress(ConnectionClosed, TimeoutError, UsageError):
                async with asyncio.timeout(self.close_timeout):
                    await client.ws.send(client.conn.send(Bye(reason)))
        await self._close(client, 1000, reason)


def _window_ping(mark: int) -> bytes:
    """A send-window ping frame (spec §5.7 rule 4), serialized: its payload names the
    ``mark`` frames written before it."""
    return WsFrame(Opcode.PING, _WINDOW_TAG + mark.to_bytes(8, "big")).serialize(
        mask=False, extensions=[])


def _norm_origin(origin: str) -> str:
    """Origins compare case-insensitively, without a trailing slash."""
    return origin.strip().rstrip("/").lower()
