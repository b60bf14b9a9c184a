"""The subscribing client: receive decoded pose frames from a posewire relay (spec §5.3–5.7).

Example::

    from posewire.consumers.subscriber import Subscriber

    async with Subscriber("ws://127.0.0.1:8765", "alice", token="s3cret") as sub:
        async for frame in sub:
            print(frame.seq, frame.values[frame.mask], sub.calibration)

Each item is a :class:`SubscribedFrame`: ``values`` is the ``(N,)`` vector of the frame
with NaN for dims not in its mask (spec §5.4), or the merged latest state of every dim
seen so far when ``merge=True``; ``conditions`` and ``calibration`` are the latest
states (spec §5.5–5.6). On joining, the relay sends the stream's calibration and latest
full frame at once (spec §5.7). A lost link is re-opened with exponential backoff;
errors a reconnect cannot fix raise :class:`~posewire.transport.RelayError`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from websockets.exceptions import ConnectionClosed

from posewire.codec.conditions import Conditions
from posewire.codec.protocol import State
from posewire.codec.vector import N_DIMS
from posewire.codec.wire import Bye, Calibration, ConditionsMessage, Frame
from posewire.transport import Backoff, ClientLink, RelayError, retry_connect

__all__ = ["RelayError", "SubscribedFrame", "Subscriber"]


@dataclass(frozen=True, slots=True, eq=False)
class SubscribedFrame:
    """One received frame (spec §5.4).

    ``values``: float64 ``(N,)``, NaN where the dim is not in this frame (or, with
    ``merge=True``, the latest value of every dim seen, NaN only where never sent);
    ``mask``: bool ``(N,)``, the dims this frame carried; ``conditions`` /
    ``calibration``: the latest states (``None`` = never received); ``stale``: the
    sequence went back (another producer on the stream, or a restarted one);
    ``received_at``: local monotonic seconds.
    """

    seq: int
    timestamp_us: int
    values: NDArray[np.float64]
    mask: NDArray[np.bool_]
    conditions: Conditions | None
    calibration: Calibration | None
    stale: bool = False
    received_at: float = 0.0


class Subscriber:
    """Async consumer client of one stream (spec §5.3), an async iterator of
    :class:`SubscribedFrame`.

    ``merge``: yield the merged latest state instead of the frame's own dims.
    ``reconnect``: re-open a lost link with :class:`Backoff` (``backoff_initial`` …
    ``backoff_max`` seconds, at most ``max_retries`` failed attempts in a row, None =
    forever). Iteration stops after :meth:`close`, or when the relay says bye and
    ``reconnect`` is off.
    """

    def __init__(self, url: str, stream: str, *, token: str | None = None, merge: bool = False,
                 client: str = "posewire-subscriber", reconnect: bool = True,
                 backoff_initial: float = 0.05, backoff_max: float = 5.0,
                 max_retries: int | None = None, open_timeout: float = 5.0) -> None:
        self.url = url
        self.stream = stream
        self.token = token
        self.merge = merge
        self.client = client
        self.reconnect = reconnect
        self.backoff = Backoff(initial=backoff_initial, maximum=backoff_max)
        self.max_retries = max_retries
        self.open_timeout = open_timeout
        #: Latest calibration and condition state of the stream (spec §5.5–5.6).
        self.calibration: Calibration | None = None
        self.conditions: Conditions | None = None
        #: Merged latest value of every dim (NaN = never received).
        self.state: NDArray[np.float64] = np.full(N_DIMS, np.nan)
        self.frames_received = 0
        self.reconnects = 0
        self._link: ClientLink | None = None
        self._closed = False
        self._ever_connected = False

    async def __aenter__(self) -> Subscriber:
        await self.connect()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def __aiter__(self) -> Subscriber:
        return self

    async def __anext__(self) -> SubscribedFrame:
        frame = await self.recv()
        if frame is None:
            raise StopAsyncIteration
        return frame

    @property
    def connected(self) -> bool:
        """True while the link is open."""
        return self._link is not None and self._link.conn.state is State.OPEN

    async def connect(self) -> None:
        """Open the link (hello → welcome); retries with backoff when ``reconnect`` is
        set; raises :class:`RelayError` when fatal or out of retries."""
        async def open_once() -> None:
            self._link = await ClientLink.open(
                self.url, self.stream, role="consumer", token=self.token,
                client=self.client, open_timeout=self.open_timeout, max_size=2**20)
            if self._ever_connected:
                self.reconnects += 1
            self._ever_connected = True

        await retry_connect(open_once, backoff=self.backoff, reconnect=self.reconnect,
                            max_retries=self.max_retries, is_closed=lambda: self._closed,
                            what="subscriber")

    async def recv(self) -> SubscribedFrame | None:
        """The next frame; ``None`` when the subscriber is finished (closed, or the
        link ended and ``reconnect`` is off). Calibration and condition messages update
        :attr:`calibration` / :attr:`conditions` on the way."""
        while not self._closed:
            if not self.connected:
                if self._ever_connected and not self.reconnect:
                    return None
                await self.connect()
            link = self._link
            assert link is not None
            try:
                data = await link.ws.recv()
            except ConnectionClosed as exc:
                closed = link.closed_error(exc)
                if self._closed:
                    return None
                if isinstance(closed, RelayError) and (closed.fatal or not self.reconnect):
                    raise closed from None
                continue
            for msg in link.feed(data):  # RelayError on an error message
                if isinstance(msg, Frame):
                    return self._on_frame(msg, link)
                if isinstance(msg, Calibration):
                    self.calibration = msg
                elif isinstance(msg, ConditionsMessage):
                    self.conditions = msg.conditions
                elif isinstance(msg, Bye):
                    await link.ws.close()
                    link.conn.connection_closed()
        return None

    def _on_frame(self, frame: Frame, link: ClientLink) -> SubscribedFrame:
        mask = frame.mask
        self.state[mask] = frame.values[mask]
        if frame.conditions is not None:
            self.conditions = frame.conditions
        self.frames_received += 1
        stale = link.last_stale
        values = self.state.copy() if self.merge else frame.values
        return SubscribedFrame(frame.seq, frame.timestamp_us, values, mask, self.conditions,
                               self.calibration, stale, time.monotonic())

    async def close(self) -> None:
        """Say bye and close (idempotent); iteration then stops."""
        self._closed = True
        link, self._link = self._link, None
        if link is not None:
            await link.close("subscriber closing")
