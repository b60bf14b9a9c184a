"""Fan-out with latest wins and the send window (spec §5.7 rules 2-4, §5.7.1): a
producer's (or the broker's) accepted message into its stream's state and to every
consumer, written at once while the consumer keeps up, else through its mailbox."""

from __future__ import annotations

import asyncio
import contextlib
from hashlib import blake2b
from hmac import compare_digest
from time import monotonic
from typing import TYPE_CHECKING

from websockets.exceptions import ConnectionClosed
from websockets.frames import Frame as WsFrame
from websockets.frames import Opcode
from websockets.protocol import State as WsState

from posewire.codec.protocol import (
    Limits,
    State,
    TokenBucket,
)
from posewire.codec.wire import (
    Calibration,
    ConditionsMessage,
    Frame,
    Message,
    encode,
)

from .framecheck import RawFrame
from .state import Client, Item, Stream
from .stats import RelayStats

if TYPE_CHECKING:
    from .connection import RelayConnection


#: Payload tag of the relay's send-window pings (spec §5.7 rule 4): the tag, the count of
#: frames written before the ping (8 bytes, big-endian), then 8 bytes the relay chose that
#: the consumer cannot guess (:func:`window_value`). websockets' own keepalive pings carry
#: 4 random bytes, so the two never mix.
WINDOW_TAG = b"pwW1"
#: The payload of a window ping: tag, mark, value.
WINDOW_PAYLOAD = len(WINDOW_TAG) + 8 + 8
#: Seconds between re-probes of a consumer whose window is full (a client may answer only
#: the newest of several pings, RFC 6455 §5.5.3; one pong reopens the window).
REPROBE_S = 1.0


#: A window ping up to its mark: the (unmasked) PING header and the tag.
_PING_HEAD = WsFrame(Opcode.PING, WINDOW_TAG + bytes(16)).serialize(mask=False, extensions=[])[:-16]


def window_value(key: bytes, mark: int) -> bytes:
    """The 8 bytes a window ping for ``mark`` carries after it (spec §5.7 rule 4): keyed
    BLAKE2b of the mark under the consumer's own random key, so that only a ping the relay
    sent can be answered — a consumer that does not read cannot name a mark it never saw."""
    return blake2b(mark.to_bytes(8, "big"), key=key, digest_size=8).digest()


def window_ping(mark: int, key: bytes) -> bytes:
    """A send-window ping frame (spec §5.7 rule 4), serialized: its payload names the
    ``mark`` frames written before it, then :func:`window_value` under ``key``."""
    return _PING_HEAD + mark.to_bytes(8, "big") + window_value(key, mark)


class FanOutMixin:
    """The relay's fan-out and send window (mixed into :class:`Relay`)."""

    # the relay's state this concern reads and writes (set in Relay.__init__)
    stats: RelayStats
    limits: Limits
    send_window: int
    send_window_s: float | None
    _write_limit: int
    _streams: dict[str, Stream]
    #: set when a message went through a consumer's mailbox (its sender task should run
    #: before the producer's next message is read)
    queued: bool

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
            s = self._new_stream(stream)
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

    def _new_stream(self, name: str) -> Stream:
        stream = self._streams[name] = Stream(name, send_window=self.send_window,
                                              window_s=self.send_window_s,
                                              max_fps=self.limits.max_fps)
        return stream

    def _deliver(self, stream: Stream, msg: Message | RawFrame, data: bytes) -> bool:
        """One data message into ``stream``: its state, then its consumers."""
        if isinstance(msg, Frame | RawFrame):
            stale, event = stream.sequence.observe(msg.seq)
            if event is not None:
                self.stats.sequence_events += 1
            if stale:
                # spec §5.7: a frame behind the newest is never kept nor sent as the latest
                self.stats.stale += 1
                return False
            self.stats.frames_in += 1
            stream.observe_rate(monotonic(), msg.timestamp_us)
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

    def _broadcast(self, stream: Stream, kind: str, item: Item) -> None:
        # spec §5.7: never blocks; a full slot is a counted drop
        msg, data = item
        is_frame = kind == "f"
        window, limit = stream.window, self._write_limit
        half = max(1, window // 2)
        # the WebSocket frame around ``data``, serialized once for every consumer written
        # now: a server's frames are unmasked and the relay negotiates no extension
        # (compression=None), so they are the same bytes on every connection
        wire: bytes | None = None
        written = 0
        now = 0.0
        is_open, ws_open = State.OPEN, WsState.OPEN
        for consumer in stream.consumers:
            box = consumer.mailbox
            assert box is not None
            if consumer.conn.state is not is_open or consumer.protocol.state is not ws_open:
                continue  # closing: the handler cleans up
            transport = consumer.transport
            if (not box.slots and consumer.sent - consumer.acked < window
                    and transport.get_write_buffer_size() < limit):
                # fast path: nothing is queued for this consumer, its socket keeps up and
                # its window is open, so the bytes are written now (in order: an item its
                # sender took was already written when it was taken)
                if wire is None:
                    wire = WsFrame(Opcode.BINARY, data).serialize(mask=False, extensions=[])
                out = wire
                if is_frame:
                    sent = consumer.sent = consumer.sent + 1
                    if (sent + consumer.phase) % (consumer.spacing or half) == 0:
                        # the window ping goes in the same write (one send, one segment)
                        consumer.ping_mark = sent
                        out = wire + window_ping(sent, consumer.window_key)
                        if not now:
                            now = monotonic()
                        consumer.ws.window_pinged(now)
                try:
                    transport.write(out)
                except RuntimeError:
                    continue  # the transport is closing: the handler cleans up
                written += 1
                continue
            self.queued = True
            unsent = box.pending(kind)
            if unsent is not None and is_frame:
                self.stats.drops += 1
                old = unsent[0]
                assert isinstance(old, Frame | RawFrame) and isinstance(msg, Frame | RawFrame)
                if not msg.is_full or (old.conditions is not None and msg.conditions is None):
                    # the dropped frame held dims (or conditions) this one lacks: send the
                    # merged latest state instead, so nothing is lost but the stale values
                    box.put(kind, stream.full_frame())
                    continue
            box.put(kind, item)
        if is_frame:
            self.stats.frames_out += written

    def _window_probe(self, consumer: Client) -> None:
        """Send ``consumer`` a window ping now (its sender wrote a frame, or its window is
        full): its pong acknowledges the ``sent`` frames written before it."""
        consumer.ping_mark = consumer.sent
        ws = consumer.ws
        # a peer that leaves a full write buffer unread could not answer anyway: what the
        # relay holds for it stays bounded (spec §5.7 rule 4)
        if (ws.protocol.state is WsState.OPEN
                and ws.transport.get_write_buffer_size() < self._write_limit):
            with contextlib.suppress(RuntimeError):
                ws.transport.write(window_ping(consumer.sent, consumer.window_key))
                ws.window_pinged(monotonic())

    def _window_pong(self, ws: RelayConnection, mark: int, value: bytes) -> None:
        """A pong with a window ping's tag: it acknowledges ``mark`` only when ``value`` is
        the one the relay's ping for that mark carried (spec §5.7 rule 4); a forged one
        changes nothing and is no answer to the relay's probes (rule 11)."""
        consumer = ws.client
        if consumer is None or consumer.mailbox is None:
            return
        if not compare_digest(value, window_value(consumer.window_key, mark)):
            self.stats.window_forged += 1
            return
        ws.answered_at = monotonic()
        self._window_ack(ws, mark)

    def _window_ack(self, ws: RelayConnection, mark: int) -> None:
        """A window pong that verified: the consumer's websocket read the ``mark`` frames
        written before its ping (one TCP stream). A mark beyond what was written is
        ignored."""
        consumer = ws.client
        if consumer is None or consumer.mailbox is None or not consumer.acked < mark <= consumer.sent:
            return
        consumer.acked = mark
        consumer.window.set()
        # spec §5.7 rule 4: the frames written while this pong came back (decaying by one
        # per pong) set how far apart the next pings may be: W/2 for a consumer slow to
        # answer, up to W − 2 for one whose pongs come back within a frame
        lag = consumer.sent - mark
        consumer.lag = lag if lag >= consumer.lag else consumer.lag - 1
        stream = consumer.stream
        if stream is not None:
            window = stream.window
            consumer.spacing = max(1, window // 2, window - 2 - 2 * consumer.lag)

    async def _send_loop(self, client: Client) -> None:
        box = client.mailbox
        assert box is not None
        try:
            while await box.wait():
                stream = client.stream
                if stream is None or client.conn.state is not State.OPEN:
                    return  # detached or closing: the handler cleans up
                if client.sent - client.acked >= stream.window:
                    # the window is full: probe, and wait for the pong that acknowledges
                    # frames; probe again now and then (a client may answer only the
                    # newest ping, and one pong reopens the window)
                    self._window_probe(client)
                    client.window.clear()
                    with contextlib.suppress(TimeoutError):
                        async with asyncio.timeout(REPROBE_S):
                            await client.window.wait()
                    continue
                item = box.take()
                if item is None:
                    continue
                kind, (_, data) = item
                # spec §5.10: data messages to a consumer whose state is OPEN (checked
                # above), forwarded as the bytes the relay holds
                await client.ws.send(data)
                if kind == "f":
                    self.stats.frames_out += 1
                    client.sent += 1
                    if (client.sent + client.phase) % (client.spacing or max(1, stream.window // 2)) == 0:
                        self._window_probe(client)
        except ConnectionClosed:
            pass  # closed under us; the handler cleans up
