"""The subscribing client: receive decoded pose frames from a posewire relay (spec §5.3–5.7).

Example::

    from posewire.consumers.subscriber import Subscriber

    async with Subscriber("ws://127.0.0.1:8765", "alice", token="s3cret") as sub:
        async for frame in sub:
            print(frame.seq, frame.values[frame.mask], sub.calibration)

Latest wins up to the application (spec §5.7): a background task reads the link as fast
as frames arrive and merges them into the stream state, so the websocket never backs up;
each item is the **newest** state — an application that reads slower than the producer
sends skips the frames in between (their dims merged, ``merged`` says how many frames
one item covers) instead of working through a backlog. Each item is a
:class:`SubscribedFrame`: ``values`` holds the latest value of every dim carried since
the previous item (NaN elsewhere), or the merged latest state of every dim seen so far
when ``merge=True``; ``conditions`` and ``calibration`` are the latest states (spec
§5.5–5.6). On joining, the relay sends the stream's calibration and latest full frame
at once (spec §5.7). A frame numbered at or behind the newest is a new producer on the
stream (a restart, a takeover, a producer on another relay of a cluster: spec §5.10,
the relay forwards nothing else out of order): it is delivered at once, marked
``reset``, and the merged state starts afresh from it. Messages up
to the size the relay announced in its welcome are accepted; one that does not decode
is skipped, counted (``messages_skipped``) and logged at a bounded rate, never the end
of the subscriber (spec §5.10). A lost link (keepalive: no pong within
``ping_timeout``), an error message from the relay or any other error that is not final
re-opens the link with exponential backoff (a link that ends within
:data:`~posewire.transport.STABLE_S` seconds of its welcome counts as a failed attempt, so a
relay that fails every link at once is not hammered); errors a reconnect cannot fix (auth,
registry, version, a relay certificate that does not verify) raise
:class:`~posewire.transport.RelayError`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import NDArray
from websockets.exceptions import ConnectionClosed

from posewire.codec.conditions import Conditions
from posewire.codec.errors import DecodeError, UsageError
from posewire.codec.protocol import State
from posewire.codec.vector import N_DIMS
from posewire.codec.wire import Bye, Calibration, ConditionsMessage, Frame, Message
from posewire.transport import (
    DEFAULT_PING_INTERVAL,
    DEFAULT_PING_TIMEOUT,
    ClientLink,
    RelayClient,
    RelayError,
)

__all__ = ["RelayError", "SubscribedFrame", "Subscriber"]

log = logging.getLogger("posewire.subscriber")
#: Skipped messages logged one by one; after these, one line per 100 more.
_SKIP_LOG_FIRST = 10


@dataclass(frozen=True, slots=True, eq=False)
class SubscribedFrame:
    """The newest state of the stream (spec §5.4, §5.7).

    ``seq`` / ``timestamp_us``: of the newest frame; ``values``: float64 ``(N,)``, the
    latest value of every dim carried by the frames since the previous item, NaN elsewhere
    (or, with ``merge=True``, the latest value of every dim seen, NaN only where never
    sent); ``mask``: bool ``(N,)``, the dims those frames carried; ``conditions`` /
    ``calibration``: the latest states (``None`` = never received); ``reset``: a new
    producer took the stream at this item's frames — its numbering went back or repeated
    (a restart, a takeover; spec §5.10) — and ``values`` / ``mask`` hold only its dims;
    ``received_at``: local monotonic seconds when the newest frame arrived; ``merged``:
    how many received frames this item covers (1 when the application keeps up);
    ``wire_bytes``: the size of the newest frame's message as it came over the wire (a frame
    carries its condition state only when it changed, spec §5.5).
    """

    seq: int
    timestamp_us: int
    values: NDArray[np.float64]
    mask: NDArray[np.bool_]
    conditions: Conditions | None
    calibration: Calibration | None
    reset: bool = False
    received_at: float = 0.0
    merged: int = 1
    wire_bytes: int = 0


class Subscriber(RelayClient):
    """Async consumer client of one stream (spec §5.3), an async iterator of
    :class:`SubscribedFrame` (the newest state, never a backlog).

    ``url``: the relay, or several relays of one cluster (a list or comma-separated;
    the next is used when one fails or its link drops, spec §5.7.1).
    ``merge``: yield the merged latest state of every dim instead of the dims carried
    since the previous item. ``ca_file``: PEM file to verify a ``wss://`` relay with.
    ``ping_interval`` / ``ping_timeout``: keepalive in seconds (None: off).
    ``reconnect``: re-open a lost link with :class:`Backoff` (``backoff_initial`` …
    ``backoff_max`` seconds, at most ``max_retries`` failed attempts in a row, None =
    forever). Iteration stops after :meth:`close`, or when the relay says bye and
    ``reconnect`` is off. ``on_status(line)``: told what the client waits for — each
    failed connect that will be retried (``relay ws://… refused, retrying in 2 s``) and
    each connect (``connected to ws://…``). ``on_message(data, message)``: told every data
    message (cal, cond, f) as it arrives, with its exact bytes, before any merging (a
    recorder, spec §8).
    """

    _role = "consumer"
    _what = "subscriber"

    def __init__(self, url: str | Sequence[str], stream: str, *, token: str | None = None,
                 merge: bool = False, on_message: Callable[[bytes, Message], None] | None = None,
                 client: str = "posewire-subscriber", reconnect: bool = True,
                 backoff_initial: float = 0.05, backoff_max: float = 5.0,
                 max_retries: int | None = None, open_timeout: float = 5.0,
                 ca_file: str | Path | None = None,
                 ping_interval: float | None = DEFAULT_PING_INTERVAL,
                 ping_timeout: float | None = DEFAULT_PING_TIMEOUT,
                 on_status: Callable[[str], None] | None = None) -> None:
        super().__init__(url, stream, token=token, client=client, reconnect=reconnect,
                         backoff_initial=backoff_initial, backoff_max=backoff_max,
                         max_retries=max_retries, open_timeout=open_timeout, ca_file=ca_file,
                         ping_interval=ping_interval, ping_timeout=ping_timeout,
                         on_status=on_status)
        self.on_message = on_message
        self.merge = merge
        #: Latest calibration and condition state of the stream (spec §5.5–5.6).
        self.calibration: Calibration | None = None
        self.conditions: Conditions | None = None
        #: Merged latest value of every dim (NaN = never received).
        self.state: NDArray[np.float64] = np.full(N_DIMS, np.nan)
        #: Frames received from the relay; new producers seen (sequence resets, spec §5.10).
        self.frames_received = 0
        self.producer_resets = 0
        #: Items handed to the application (fewer than frames when it reads slower).
        self.frames_yielded = 0
        #: Messages from the relay that did not decode (malformed, over the announced
        #: size) and were skipped (spec §5.10), and the last one's error.
        self.messages_skipped = 0
        self.last_skip: DecodeError | None = None
        #: The last non-fatal error that made the subscriber reconnect.
        self.last_error: RelayError | None = None
        self._reader: asyncio.Task[None] | None = None
        self._error: BaseException | None = None
        self._finished = False
        self._wake = asyncio.Event()
        # the newest frame not yet handed out, and what it covers
        self._fresh: NDArray[np.bool_] = np.zeros(N_DIMS, dtype=bool)
        self._wire_bytes = 0
        self._count = 0
        self._seq = 0
        self._ts = 0
        self._reset = False
        self._at = 0.0

    def __aiter__(self) -> Subscriber:
        return self

    async def __anext__(self) -> SubscribedFrame:
        frame = await self.recv()
        if frame is None:
            raise StopAsyncIteration
        return frame

    async def _open_once(self) -> None:
        self._link = await self._open_link()
        if self._ever_connected:
            self.reconnects += 1
        self._ever_connected = True

    async def connect(self) -> None:
        """Open the link (hello → welcome) and start reading; retries with backoff when
        ``reconnect`` is set; raises :class:`RelayError` when fatal or out of retries."""
        if self._reader is not None:
            return
        await self._retry(self._open_once)
        self._reader = asyncio.create_task(self._read_loop())

    async def _read_loop(self) -> None:
        """Read every message as it arrives (the link never backs up); reconnect."""
        try:
            while not self._closed:
                link = self._link
                # a link the relay is closing is read to its end first: the messages it
                # sent before its close (an error message, frames) are not lost
                if link is None or link.conn.state is State.CLOSED:
                    if not self.reconnect:
                        return
                    # spec §5.10: a link that ended right after its welcome was a failed
                    # attempt: wait the next delay (one that lasted reconnects at once)
                    delay = self.backoff.ended()
                    if delay:
                        self._status(f"relay {self._tried}: the link ended soon after its "
                                     f"welcome, retrying in {delay:.2g} s")
                        await asyncio.sleep(delay)
                    await self._retry(self._open_once)
                    continue
                try:
                    data = await link.ws.recv()
                except ConnectionClosed as exc:
                    closed = link.closed_error(exc)
                    if self._closed:
                        return
                    if isinstance(closed, RelayError) and (closed.fatal or not self.reconnect):
                        raise closed from None
                    self.urls.advance()  # the link dropped: try the next relay first
                    continue
                skipped = link.skipped
                try:
                    messages = link.feed(data)  # RelayError on an error message
                except RelayError as exc:
                    # spec §5.10: an error from the relay that a reconnect may fix (state,
                    # rate, a violation by the relay) re-opens the link; a final one ends
                    if exc.fatal or not self.reconnect or self._closed:
                        raise
                    self.last_error = exc
                    log.warning("subscriber %r: %s; reconnecting", self.stream, exc)
                    await link.close()
                    self.urls.advance()
                    continue
                if link.skipped != skipped:
                    self._on_skipped(link)
                for msg in messages:
                    if self.on_message is not None and isinstance(msg, Frame | Calibration | ConditionsMessage):
                        self.on_message(data if isinstance(data, bytes) else data.encode(), msg)
                    if isinstance(msg, Frame):
                        self._wire_bytes = len(data)
                        self._on_frame(msg, reset=link.last_reset)
                    elif isinstance(msg, Calibration):
                        self.calibration = msg
                    elif isinstance(msg, ConditionsMessage):
                        self.conditions = msg.conditions
                    elif isinstance(msg, Bye):
                        await link.ws.close()
                        link.conn.connection_closed()
                        self.urls.advance()
        except (RelayError, UsageError) as exc:
            if not self._closed:
                self._error = exc
        finally:
            self._finished = True
            self._wake.set()

    def _on_skipped(self, link: ClientLink) -> None:
        # spec §5.10: a message that does not decode is skipped and reported, not fatal
        self.messages_skipped += 1
        self.last_skip = link.last_skip
        n = self.messages_skipped
        if n <= _SKIP_LOG_FIRST or n % 100 == 0:
            log.warning("subscriber %r: skipped a message from %s (%d so far): %s",
                        self.stream, self.url, n, link.last_skip)

    def _on_frame(self, frame: Frame, *, reset: bool) -> None:
        self.frames_received += 1
        if reset:
            # spec §5.10: a new producer; its state is not mixed with its predecessor's
            # (as the relay's start frame, spec §5.7 rule 3)
            self.producer_resets += 1
            self.state[:] = np.nan
            self._fresh[:] = False
            self._reset = True
        mask = frame.mask
        self.state[mask] = frame.values[mask]
        if frame.conditions is not None:
            self.conditions = frame.conditions
        self._fresh |= mask
        self._count += 1
        self._seq, self._ts = frame.seq, frame.timestamp_us
        self._at = time.monotonic()
        self._wake.set()

    async def recv(self) -> SubscribedFrame | None:
        """The newest state (waits for a frame newer than the last one returned);
        ``None`` when the subscriber is finished (closed, or the link ended and
        ``reconnect`` is off). Errors a reconnect cannot fix raise :class:`RelayError`."""
        if self._reader is None and not self._closed:
            await self.connect()
        while not self._closed:
            if self._count:
                return self._take()
            if self._finished:
                err, self._error = self._error, None
                if err is not None:
                    raise err
                return None
            self._wake.clear()
            await self._wake.wait()
        return None

    def _take(self) -> SubscribedFrame:
        mask = self._fresh
        values = self.state.copy() if self.merge else np.where(mask, self.state, np.nan)
        out = SubscribedFrame(self._seq, self._ts, values, mask, self.conditions,
                              self.calibration, self._reset, self._at, self._count, self._wire_bytes)
        self._fresh = np.zeros(N_DIMS, dtype=bool)
        self._count = 0
        self._reset = False
        self.frames_yielded += 1
        return out

    async def close(self) -> None:
        """Say bye and close (idempotent); iteration then stops."""
        self._closed = True
        self._wake.set()
        reader, self._reader = self._reader, None
        if reader is not None:
            reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await reader
        link, self._link = self._link, None
        if link is not None:
            await link.close("subscriber closing")
