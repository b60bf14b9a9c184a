"""The posewire relay (``posewire serve``): many producers to many consumers by stream name.

A thin asyncio layer over the sans-I/O :class:`posewire.codec.protocol.Connection` (spec §5.10):
each websocket gets a server-side ``Connection`` that checks the hello (protocol,
registry, auth token), the message size and the per-producer frame rate, and turns
every violation into an error message plus a close code (spec §5.8). What the relay
adds (spec §5.7):

* **streams** — a stream is a name; one producer at a time publishes into it (a second
  is refused, spec §5.7) and any number of consumers subscribe. A late joiner immediately gets the stream's latest
  calibration, the latest condition state and the latest *full* frame: masked partial
  frames are merged into one state that is re-encoded (once, lazily) for late joiners.
* **latest-wins mailboxes** — each consumer has one slot per message kind and one
  sender task. A producer's validated bytes are put, unchanged, into every consumer's
  mailbox (decoded once, never re-encoded per consumer); a consumer that cannot keep up
  has its unsent frame replaced by the newer one and the drop counted, so its memory is
  bounded and it never slows the producer or the other consumers.
* **defence** — an auth token is required when bound beyond loopback (unless
  ``no_auth``); a bad message closes only the client that sent it.

Example (in-process, e.g. from a test)::

    async with Relay("127.0.0.1", port=0) as relay:
        async with Publisher(relay.url, "demo") as pub:
            await pub.send_frame({"h_yaw": 0.25})
        print(relay.stats.frames_in)
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import secrets
import signal
import socket
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from itertools import count
from typing import Generic, Literal, TextIO, TypeVar

import numpy as np
from numpy.typing import NDArray
from websockets.asyncio.server import Server, ServerConnection, broadcast, serve
from websockets.exceptions import ConnectionClosed
from websockets.typing import Subprotocol

from posewire.codec.conditions import Conditions
from posewire.codec.errors import DecodeError, UsageError
from posewire.codec.protocol import (
    Closed,
    Connection,
    Event,
    Limits,
    ProtocolFailure,
    RateLimited,
    Received,
    SequenceGap,
    SequenceReorder,
    SequenceReset,
    State,
)
from posewire.codec.vector import N_DIMS
from posewire.codec.wire import (
    DEFAULT_MAX_FPS,
    DEFAULT_MAX_MESSAGE_BYTES,
    SUBPROTOCOL,
    Bye,
    Calibration,
    ConditionsMessage,
    Frame,
    Hello,
    Message,
    encode,
)

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
#: Websocket-level size limit as a multiple of the codec limit: a message up to this size
#: is read and refused by the codec with ``decode.too_large`` (close 4009, spec §5.8);
#: beyond it websockets closes with 1009 without reading it.
_WS_SIZE_FACTOR = 16


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
    errors_by_code: Counter[str] = field(default_factory=Counter)


@dataclass(frozen=True, slots=True)
class ConsumerInfo:
    """A snapshot of one consumer: frames sent and dropped, what it holds right now
    (``pending`` mailbox slots, at most 3; ``buffered_bytes`` in the transport)."""

    session: str
    stream: str
    delivered: int
    dropped: int
    pending: int
    buffered_bytes: int


_Item = tuple[Message, bytes]


class _Client:
    """The relay's view of one websocket."""

    def __init__(self, ws: ServerConnection, conn: Connection, session: str) -> None:
        self.ws = ws
        self.conn = conn
        self.session = session
        self.role: Literal["producer", "consumer"] | None = None
        self.stream: _Stream | None = None
        self.mailbox: Mailbox[_Item] | None = None
        self.sender: asyncio.Task[None] | None = None


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

    @property
    def empty(self) -> bool:
        return not self.producers and not self.consumers

    def set_conditions(self, msg: ConditionsMessage, data: bytes) -> None:
        self.conditions = msg.conditions
        self._conditions_item = (msg, data)

    def update_frame(self, frame: Frame, data: bytes) -> None:
        """Merge ``frame`` into the latest state (spec §5.7)."""
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


class Relay:
    """An asyncio websocket relay (spec §5.7); usable in-process as an async context
    manager (``async with Relay("127.0.0.1", port=0) as relay: relay.port``) or from the
    CLI through :meth:`run`.

    Options: ``token`` — required auth token (compared in constant time); a host
    beyond loopback needs one unless ``no_auth=True``. ``max_bytes`` — largest message
    (spec §5.8). ``max_fps`` / ``burst_s`` / ``on_rate`` — per-producer token bucket
    (``"drop"``: excess frames dropped and counted, ``"close"``: the producer is closed
    with ``decode.rate``). ``status_every`` — seconds between status lines on
    ``status_file`` (0/None: off). ``hello_timeout`` — seconds a new connection has to
    send its hello. ``send_buffer`` — kernel send buffer per connection in bytes (small
    = latest-wins kicks in sooner for a slow consumer); None leaves the OS default.
    """

    def __init__(self, host: str = "127.0.0.1", port: int = 8765, *, token: str | None = None,
                 no_auth: bool = False, max_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
                 max_fps: int = DEFAULT_MAX_FPS, burst_s: float = 0.25,
                 on_rate: Literal["drop", "close"] = "drop",
                 status_every: float | None = None, status_file: TextIO | None = None,
                 hello_timeout: float = 10.0, send_buffer: int | None = 16384,
                 close_timeout: float = 2.0) -> None:
        if token is None and not no_auth and not is_loopback(host):
            # spec §5.8: auth is on by default beyond loopback
            raise UsageError("usage.bad_option",
                             f"refusing to serve on {host or 'all interfaces'} without a "
                             "token: pass --token T (or --no-auth explicitly)", path="token")
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
        self.host = host
        self._requested_port = port
        self.token = token
        self.limits = Limits(max_message_bytes=max_bytes, max_fps=max_fps, burst_s=burst_s,
                             on_rate=on_rate)
        self.status_every = status_every
        self.status_file = status_file
        self.hello_timeout = hello_timeout
        self.send_buffer = send_buffer
        #: websockets' write high-water mark; also the most a consumer's transport may
        #: hold before its frames go through the latest-wins mailbox (spec §5.7)
        self._write_limit = max(4096, 2 * self.limits.max_message_bytes)
        self.close_timeout = close_timeout
        self.stats = RelayStats()
        self._streams: dict[str, _Stream] = {}
        self._clients: set[_Client] = set()
        self._server: Server | None = None
        self._status_task: asyncio.Task[None] | None = None
        self._closing = False
        #: Called as ``hook(stream, message, data)`` for every data message (frame,
        #: calibration, conditions) a local producer sends and the relay accepts, after
        #: local delivery: the point where a broker forwards it to other relays.
        self.publish_hooks: list[Callable[[str, Message, bytes], None]] = []

    # ------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        """Bind and start serving."""
        self._server = await serve(
            self._handle, self.host, self._requested_port,
            subprotocols=[Subprotocol(SUBPROTOCOL)],  # spec §5.1
            compression=None,
            max_size=self.limits.max_message_bytes * _WS_SIZE_FACTOR,
            max_queue=16,
            write_limit=self._write_limit,
            close_timeout=self.close_timeout,
        )
        if self.status_every:
            self._status_task = asyncio.create_task(self._status_loop(self.status_every))

    async def close(self, reason: str = "relay shutting down") -> None:
        """Graceful shutdown: a bye to every open client, close all (1000), stop."""
        if self._closing:
            return
        self._closing = True
        if self._status_task is not None:
            self._status_task.cancel()
        if self._server is not None:
            self._server.close(close_connections=False)
        await asyncio.gather(*(self._say_bye(c, reason) for c in list(self._clients)),
                             return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()
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
                log.info("posewire relay on %s (auth %s)", self.url,
                         "on" if self.token else "off")
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
        """``ws://host:port`` of this relay (loopback when bound to all interfaces)."""
        host = self.host if self.host and self.host not in ("0.0.0.0", "::") else "127.0.0.1"
        if ":" in host:
            host = f"[{host}]"
        return f"ws://{host}:{self.port}"

    # ------------------------------------------------------------ introspection

    @property
    def streams(self) -> dict[str, tuple[int, int]]:
        """``{stream: (producers, consumers)}``."""
        return {n: (len(s.producers), len(s.consumers)) for n, s in self._streams.items()}

    def consumers(self, stream: str | None = None) -> list[ConsumerInfo]:
        """Snapshots of the consumers (of ``stream``, or all)."""
        out = []
        for s in self._streams.values():
            if stream is not None and s.name != stream:
                continue
            for c in s.consumers:
                assert c.mailbox is not None
                out.append(ConsumerInfo(
                    c.session, s.name, c.mailbox.delivered["f"], c.mailbox.dropped["f"],
                    len(c.mailbox), c.ws.transport.get_write_buffer_size()))
        return out

    def status_line(self) -> str:
        """One line of counts (spec §5.7)."""
        producers = sum(len(s.producers) for s in self._streams.values())
        consumers = sum(len(s.consumers) for s in self._streams.values())
        st = self.stats
        return (f"posewire relay: streams={len(self._streams)} producers={producers} "
                f"consumers={consumers} frames_in={st.frames_in} frames_out={st.frames_out} "
                f"drops={st.drops} rate_limited={st.rate_limited} errors={st.errors}")

    async def _status_loop(self, every: float) -> None:
        out = self.status_file or sys.stderr
        while True:
            await asyncio.sleep(every)
            print(self.status_line(), file=out, flush=True)

    # ------------------------------------------------------------ connections

    async def _handle(self, ws: ServerConnection) -> None:
        client = _Client(ws, Connection(side="server", limits=self.limits,
                                        auth_token=self.token), secrets.token_hex(8))
        self.stats.connections += 1
        if self.send_buffer:
            sock = ws.transport.get_extra_info("socket")
            if sock is not None:
                with contextlib.suppress(OSError):
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, self.send_buffer)
        if ws.subprotocol != SUBPROTOCOL:
            await ws.close(_CLOSE_PROTOCOL, f"subprotocol {SUBPROTOCOL} required")
            return
        if self._closing:
            await ws.close(1001, "relay shutting down")
            return
        self._clients.add(client)
        try:
            try:
                async with asyncio.timeout(self.hello_timeout):
                    first = await ws.recv()
            except TimeoutError:
                await self._fail(client, client.conn.fail(DecodeError(
                    "decode.state", "no hello in time", path="t")))
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
            events = client.conn.receive_data(data, now=asyncio.get_running_loop().time())
        for ev in events:
            if isinstance(ev, Received):
                await self._on_message(client, ev.message, data)
                if client.conn.state is State.CLOSED:
                    return False
            elif isinstance(ev, RateLimited):
                self.stats.rate_limited += 1
            elif isinstance(ev, SequenceGap | SequenceReorder | SequenceReset):
                self.stats.sequence_events += 1
            elif isinstance(ev, ProtocolFailure):
                await self._fail(client, ev)
                return False
            elif isinstance(ev, Closed):
                await self._close(client, ev.code, "bye")
                return False
        return client.conn.state is not State.CLOSED

    async def _on_message(self, client: _Client, msg: Message, data: bytes) -> None:
        if isinstance(msg, Hello):
            busy = self._streams.get(msg.stream)
            if msg.role == "producer" and busy is not None and busy.producers:
                # spec §5.7 (1): at most one producer per stream
                await self._fail(client, client.conn.fail(DecodeError(
                    "decode.state", "the stream already has a producer", path="s")))
                return
            await self._attach(client, msg)
            return
        stream = client.stream
        if stream is None:  # pragma: no cover - the state machine forbids it
            return
        if self._deliver(stream, msg, data):
            for hook in self.publish_hooks:
                hook(stream.name, msg, data)
        # Bye / ErrorMessage: the state machine moved to CLOSED; _on_data closes

    def fan_out(self, stream: str, message: Message, data: bytes | None = None) -> bool:
        """Deliver a data message (frame, calibration, conditions) that arrived from
        elsewhere (e.g. a message broker linking relays) to this relay's consumers of
        ``stream``, exactly as if its local producer had sent it: the stream's late-join
        state is updated and every consumer gets it latest-wins (spec §5.7). ``data``: the
        message's encoded bytes (encoded here when omitted). Returns False when the
        message was not taken (an out-of-order frame, or not a data message).
        :attr:`publish_hooks` are not called (no echo back to the broker)."""
        if not isinstance(message, Frame | Calibration | ConditionsMessage):
            return False
        s = self._streams.get(stream)
        if s is None:
            s = self._streams[stream] = _Stream(stream)
        return self._deliver(s, message, encode(message) if data is None else data)

    def _deliver(self, stream: _Stream, msg: Message, data: bytes) -> bool:
        """One data message into ``stream``: its state, then its consumers."""
        if isinstance(msg, Frame):
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
        direct: list[ServerConnection] = []
        for consumer in stream.consumers:
            box = consumer.mailbox
            assert box is not None
            if not box and consumer.ws.transport.get_write_buffer_size() < self._write_limit:
                # fast path: nothing is queued for this consumer and its socket keeps up,
                # so the bytes are written now (in order: an item its sender took was
                # already written when it was taken) instead of waking its sender task
                try:
                    consumer.conn.send(msg, encoded=data)
                except UsageError:
                    continue  # closing: the handler cleans up
                direct.append(consumer.ws)
                box.delivered[kind] += 1
                continue
            unsent = box.pending(kind)
            if unsent is not None and kind == "f":
                self.stats.drops += 1
                old = unsent[0]
                assert isinstance(old, Frame) and isinstance(msg, Frame)
                if not msg.is_full or (old.conditions is not None and msg.conditions is None):
                    # the dropped frame held dims (or conditions) this one lacks: send the
                    # merged latest state instead, so nothing is lost but the stale values
                    box.put(kind, stream.full_frame())
                    continue
            box.put(kind, item)
        if direct:
            broadcast(direct, data)
            if kind == "f":
                self.stats.frames_out += len(direct)

    async def _attach(self, client: _Client, hello: Hello) -> None:
        await client.ws.send(client.conn.accept(client.session))
        client.role = "producer" if hello.role == "producer" else "consumer"
        stream = self._streams.get(hello.stream)
        if stream is None:
            stream = self._streams[hello.stream] = _Stream(hello.stream)
        client.stream = stream
        if client.role == "producer":
            stream.producers.add(client)
            return
        box: Mailbox[_Item] = Mailbox()
        for kind, item in stream.late_join():  # spec §5.7: late joiner
            box.put(kind, item)
        client.mailbox = box
        stream.consumers.add(client)
        client.sender = asyncio.create_task(self._send_loop(client),
                                            name=f"posewire-send-{client.session}")

    async def _send_loop(self, client: _Client) -> None:
        box = client.mailbox
        assert box is not None
        try:
            while (item := await box.get()) is not None:
                kind, (msg, data) = item
                out = client.conn.send(msg, encoded=data)
                await client.ws.send(out)
                if kind == "f":
                    self.stats.frames_out += 1
        except (ConnectionClosed, UsageError):
            pass  # closed under us; the handler cleans up

    def _detach(self, client: _Client) -> None:
        self._clients.discard(client)
        if client.mailbox is not None:
            client.mailbox.close()
        if client.sender is not None:
            client.sender.cancel()
        stream = client.stream
        if stream is not None:
            stream.producers.discard(client)
            stream.consumers.discard(client)
            if stream.empty:
                del self._streams[stream.name]
            client.stream = None

    async def _fail(self, client: _Client, failure: ProtocolFailure) -> None:
        """Close one client after a violation: error message (public info) then the
        close code of spec §5.8. Other clients are untouched."""
        self.stats.errors += 1
        self.stats.errors_by_code[failure.error.code] += 1
        log.info("client %s: %s", client.session, failure.error)
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
