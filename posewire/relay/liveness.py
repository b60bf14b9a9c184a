"""Liveness independent of the buffers (spec §5.7 rule 11): keepalive pings from when
they are due, any bytes from the peer as a sign of life, and a link that cannot take
its ping dropped at once."""

from __future__ import annotations

import asyncio
import contextlib
import random

from websockets.asyncio.server import ServerConnection
from websockets.exceptions import ConnectionClosed
from websockets.frames import CloseCode
from websockets.protocol import State as WsState


class LivenessMixin(ServerConnection):
    """Keepalive of one relay connection (mixed into :class:`RelayConnection`)."""

    heard_at: float
    #: loop time of the newest send-window ping written to the peer (spec §5.7 rule 4)
    window_ping_at: float = -float("inf")
    #: loop time of the oldest window ping written since the peer last answered one (when
    #: it is after ``answered_at``, that ping is unanswered)
    probe_at: float = 0.0
    #: loop time of the peer's last window pong that verified (spec §5.7 rule 4): the
    #: answer to a window ping is its pong, not any bytes — a consumer sends nothing the
    #: pong could wait behind, and a forged pong answers nothing
    answered_at: float = 0.0

    def window_pinged(self, now: float) -> None:
        """A send-window ping was written at loop time ``now``."""
        self.window_ping_at = now
        if self.probe_at <= self.answered_at:
            self.probe_at = now

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
        # A consumer that was sent send-window pings within the last interval gets no
        # keepalive ping: those pings are its probes, and one unanswered (no window pong
        # that verified since it was written) for the timeout closes it the same way.
        if self.ping_interval is None:
            return
        await asyncio.sleep(random.uniform(0.0, self.ping_interval))
        pong: asyncio.Future[float] | None = None
        with contextlib.suppress(ConnectionClosed):
            while True:
                await asyncio.sleep(self.ping_interval)
                since = self.loop.time()
                if since - self.window_ping_at < self.ping_interval:
                    probe = self.probe_at
                    if self.ping_timeout is None or probe <= self.answered_at:
                        continue  # answered since (or no timeout): alive
                    left = probe + self.ping_timeout - since
                    if left > 0:
                        await asyncio.sleep(left)
                    if self.answered_at > probe:
                        continue
                    self._fail_keepalive()
                    return
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
