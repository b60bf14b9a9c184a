"""The publishing client: send pose frames to a posewire relay (spec §5.3–5.6).

Example::

    from posewire.producers.publisher import Publisher

    async with Publisher("ws://127.0.0.1:8765", "alice", token="s3cret") as pub:
        seq = await pub.send_frame({"h_yaw": 0.25, "a_y_r": 0.4})   # a masked frame
        await pub.send_frame(full_vector, conditions=Conditions(affect=Affect("happy", 0.5)))

The publisher numbers frames (uint32 ``seq``, +1 per frame, spec §5.4) and stamps them
with the wall clock in µs unless given ``timestamp_us``. Liveness (spec §5.8): keepalive
pings find a dead relay within ``ping_interval + ping_timeout`` seconds, and a send that
the link does not take within ``send_timeout`` seconds fails the link. While the link is
down, ``send_*`` raise a non-fatal :class:`~posewire.transport.RelayError` (code
``"link"``) at once — the frame is not sent, the caller is never held — and the
publisher reconnects in the background with exponential backoff, sends the hello and the
calibration (and the last condition state) again, and keeps numbering where it left off.
Errors a reconnect cannot fix (auth, registry, protocol version) raise a fatal
:class:`~posewire.transport.RelayError`.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path

import numpy as np
from numpy.typing import ArrayLike, NDArray
from websockets.exceptions import ConnectionClosed

from posewire.codec.calibration import Calibration as AvatarCalibration
from posewire.codec.conditions import Conditions
from posewire.codec.errors import UsageError
from posewire.codec.registry import REGISTRY
from posewire.codec.vector import N_DIMS
from posewire.codec.wire import (
    DEFAULT_MAX_MESSAGE_BYTES,
    Bye,
    Calibration,
    ConditionsMessage,
    Frame,
    Message,
)
from posewire.transport import (
    DEFAULT_PING_INTERVAL,
    DEFAULT_PING_TIMEOUT,
    ClientLink,
    RelayClient,
    RelayError,
)

__all__ = ["Publisher", "RelayError", "frame_values"]

_U32 = 2**32


def frame_values(values: ArrayLike | Mapping[str, float], *,
                 mask: ArrayLike | Iterable[str] | None = None) -> NDArray[np.float64]:
    """The ``(N,)`` frame vector for :meth:`Publisher.send_frame` (NaN = not sent).

    ``values``: a ``(N,)`` vector (NaN entries are not sent) or ``{dim id: value}``
    (only the named dims are sent, spec §5.4). ``mask``: a ``(N,)`` bool array or an
    iterable of dim ids; dims outside it are not sent either.
    """
    if isinstance(values, Mapping):
        vec = np.full(N_DIMS, np.nan)
        for key, value in values.items():
            dim = REGISTRY.by_id.get(key)
            if dim is None:
                raise UsageError("usage.unknown_id", f"no dimension {key!r}", path=key)
            vec[dim.index] = float(value)
    else:
        vec = np.array(values, dtype=np.float64)
        if vec.shape != (N_DIMS,):
            raise UsageError("usage.shape", f"expected shape ({N_DIMS},), got {vec.shape}")
    if mask is not None:
        keep = _mask_array(mask)
        vec[~keep] = np.nan
    return vec


def _mask_array(mask: ArrayLike | Iterable[str]) -> NDArray[np.bool_]:
    if isinstance(mask, np.ndarray) and mask.dtype == np.bool_:
        if mask.shape != (N_DIMS,):
            raise UsageError("usage.shape", f"mask must have shape ({N_DIMS},)", path="mask")
        return mask
    items: list[object] = list(mask)  # type: ignore[arg-type]
    if all(isinstance(m, str) for m in items):
        keep = np.zeros(N_DIMS, dtype=bool)
        for key in items:
            dim = REGISTRY.by_id.get(str(key))
            if dim is None:
                raise UsageError("usage.unknown_id", f"no dimension {key!r}", path="mask")
            keep[dim.index] = True
        return keep
    arr = np.asarray(items, dtype=bool)
    if arr.shape != (N_DIMS,):
        raise UsageError("usage.shape", f"mask must have shape ({N_DIMS},)", path="mask")
    return arr


def _wire_calibration(cal: AvatarCalibration | None) -> Calibration | None:
    return None if cal is None else Calibration.of(cal)


class Publisher(RelayClient):
    """Async producer client of one stream (spec §5.3).

    ``url``: the relay (``ws://host:port`` or ``wss://…``), or several relays of one
    cluster (a list or comma-separated; the next is used when one fails or its link
    drops, spec §5.7.1); ``stream``: the stream name;
    ``token``: the relay's auth token; ``calibration``: the avatar's measurements (spec
    §4.1), sent after every (re)connect. ``ca_file``: PEM file to verify a ``wss://``
    relay with (default: the system store). ``ping_interval`` / ``ping_timeout``:
    keepalive in seconds (None: off). ``send_timeout``: seconds a send may wait for the
    link to take it before the link counts as dead. ``reconnect``: retry a lost link in
    the background with :class:`Backoff` (``backoff_initial`` … ``backoff_max`` seconds,
    at most ``max_retries`` attempts in a row, None = forever). ``on_status(line)``: told
    what the client waits for — each failed connect that will be retried (``relay ws://…
    refused, retrying in 2 s``) and each connect (``connected to ws://…``).
    """

    _role = "producer"
    _what = "publisher"

    def __init__(self, url: str | Sequence[str], stream: str, *, token: str | None = None,
                 calibration: AvatarCalibration | None = None,
                 client: str = "posewire-publisher", reconnect: bool = True,
                 backoff_initial: float = 0.05, backoff_max: float = 5.0,
                 max_retries: int | None = None, open_timeout: float = 5.0,
                 ca_file: str | Path | None = None,
                 ping_interval: float | None = DEFAULT_PING_INTERVAL,
                 ping_timeout: float | None = DEFAULT_PING_TIMEOUT,
                 send_timeout: float = 1.0,
                 on_status: Callable[[str], None] | None = None) -> None:
        super().__init__(url, stream, token=token, client=client, reconnect=reconnect,
                         backoff_initial=backoff_initial, backoff_max=backoff_max,
                         max_retries=max_retries, open_timeout=open_timeout, ca_file=ca_file,
                         ping_interval=ping_interval, ping_timeout=ping_timeout,
                         on_status=on_status)
        if not 0 < send_timeout < 3600:
            raise UsageError("usage.bad_option", "send_timeout must be positive", path="send_timeout")
        self.calibration = _wire_calibration(calibration)
        #: bytes of every message sent so far (status lines: bytes/s)
        self.bytes_sent = 0
        self.send_timeout = send_timeout
        #: The next sequence number (continues across reconnects, spec §5.4).
        self.seq = 0
        self.frames_sent = 0
        #: Frames refused at once because the link was down (reconnecting).
        self.frames_dropped = 0
        self.conditions: Conditions | None = None
        self._reader: asyncio.Task[None] | None = None
        self._reconnecting: asyncio.Task[None] | None = None
        self._error: RelayError | None = None
        self._lock = asyncio.Lock()

    @property
    def max_message_bytes(self) -> int:
        """The relay's announced size limit (spec §5.8)."""
        welcome = self._link.welcome if self._link else None
        return welcome.max_message_bytes if welcome else DEFAULT_MAX_MESSAGE_BYTES

    async def connect(self) -> None:
        """Open the link (hello, welcome, calibration, conditions); retries with backoff
        when ``reconnect`` is set, raises :class:`RelayError` otherwise or when fatal."""
        await self._retry(self._open)

    async def _open(self) -> None:
        self._error = None
        link = await self._open_link()
        try:
            async with asyncio.timeout(self.send_timeout):
                if self.calibration is not None:
                    await link.ws.send(link.conn.send(self.calibration))
                if self.conditions is not None:
                    await link.ws.send(link.conn.send(ConditionsMessage(self.conditions,
                                                                        self._now_us())))
        except ConnectionClosed as exc:
            raise link.closed_error(exc) from None
        except TimeoutError:
            link.ws.transport.abort()
            raise RelayError("link", "the relay does not take data (send deadline)") from None
        self._link = link
        self._ever_connected = True
        self._reader = asyncio.create_task(self._read(link))

    async def _read(self, link: ClientLink) -> None:
        """Watch the link: the relay sends only err / bye to a producer (spec §5.3); when
        it ends (bye, error, keepalive timeout) reconnect in the background."""
        try:
            async for data in link.ws:
                for msg in link.feed(data):
                    if isinstance(msg, Bye):
                        return
        except RelayError as exc:
            self._error = exc
        except ConnectionClosed as exc:
            closed = link.closed_error(exc)
            if isinstance(closed, RelayError):
                self._error = closed
        finally:
            link.conn.connection_closed()
            if self._link is link:
                self._start_reconnect()

    def _start_reconnect(self) -> None:
        """Reconnect in the background (never in the caller's send)."""
        if (self._closed or not self.reconnect or self._reconnecting is not None
                or (self._error is not None and self._error.fatal)):
            return
        self._reconnecting = asyncio.create_task(self._reconnect())

    async def _reconnect(self) -> None:
        try:
            await self._drop_link(keep_reconnect=True)
            self.reconnects += 1
            self.urls.advance()  # the link dropped: try the next relay first
            # spec §5.10: a link that ended right after its welcome was a failed attempt
            delay = self.backoff.ended()
            if delay:
                await asyncio.sleep(delay)
            await self.connect()
        except RelayError as exc:
            self._error = exc  # reported by the next send
        except UsageError:
            pass  # closed meanwhile
        finally:
            self._reconnecting = None

    @staticmethod
    def _now_us() -> int:
        return time.time_ns() // 1000

    def _link_down(self) -> RelayError:
        """The error for a send while the link is down (and start the reconnect)."""
        err = self._error
        if err is not None and err.fatal:
            return err
        if not self.reconnect:
            return err or RelayError("link", "the link to the relay closed")
        self._error = None
        self._start_reconnect()
        return err or RelayError("link", "the link to the relay is down; reconnecting")

    async def _send(self, msg: Message, *, encoded: bytes | None = None) -> None:
        """Send over the link within ``send_timeout``; a link that is down, or does not
        take the bytes in time, raises :class:`RelayError` at once (spec §5.8).
        ``encoded``: the message's bytes as they are to be sent (a recording's, spec §8)."""
        if self._error is not None and self._error.fatal:
            raise self._error
        if not self._ever_connected:
            await self.connect()  # the first connect is the caller's to wait for
        async with self._lock:
            link = self._link
            if link is None or not link.is_open:
                raise self._link_down()
            try:
                data = link.conn.send(msg, encoded=encoded)
                async with asyncio.timeout(self.send_timeout):
                    await link.ws.send(data)
                self.bytes_sent += len(data)
                return
            except TimeoutError:
                # the relay (or the path to it) stopped taking data: the link is dead
                link.conn.connection_closed()
                link.ws.transport.abort()
                self._error = None
                raise self._link_down() from None
            except (ConnectionClosed, UsageError):
                link.conn.connection_closed()
                raise self._link_down() from None

    async def _stop_reader(self) -> None:
        if self._reader is not None:
            self._reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reader
            self._reader = None

    async def _drop_link(self, *, keep_reconnect: bool = False) -> None:
        link, self._link = self._link, None
        await self._stop_reader()
        if not keep_reconnect and self._reconnecting is not None:
            self._reconnecting.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reconnecting
            self._reconnecting = None
        if link is not None:
            with contextlib.suppress(Exception):
                await link.ws.close()

    async def send_frame(self, values: ArrayLike | Mapping[str, float], *,
                         mask: ArrayLike | Iterable[str] | None = None,
                         conditions: Conditions | None = None,
                         timestamp_us: int | None = None) -> int:
        """Send one frame; returns its ``seq``.

        ``values``/``mask``: see :func:`frame_values` (NaN / unnamed dims are not sent,
        spec §5.4). ``conditions``: the full condition state, remembered for reconnects
        (spec §5.5); it rides in the frame only when it differs from the state last sent
        (absent = unchanged, §5.5), so a steady state costs no bytes; ``None`` also means
        unchanged. A reconnect sends the remembered state first. ``timestamp_us``: defaults to the wall
        clock in µs. While the link is down this raises a non-fatal
        :class:`RelayError` at once (the frame is counted in :attr:`frames_dropped`).
        """
        vec = frame_values(values, mask=mask)
        seq = self.seq
        ts = self._now_us() if timestamp_us is None else int(timestamp_us)
        changed = conditions is not None and conditions != self.conditions
        frame = Frame(seq, ts, vec, conditions if changed else None)  # spec §5.5: only when it changes
        if conditions is not None:
            self.conditions = conditions
        try:
            await self._send(frame)
        except RelayError:
            self.frames_dropped += 1
            raise
        self.seq = (seq + 1) % _U32
        self.frames_sent += 1
        return seq

    async def send_recorded(self, message: Message, encoded: bytes | None = None) -> None:
        """Send a recorded data message as it was recorded (spec §8: a replay that is
        byte-identical through the relay): a frame keeps its ``seq``, ``ts`` and ``c`` (the
        numbering continues after it), a calibration or condition state is remembered for
        reconnects as :meth:`send_calibration` / :meth:`send_conditions` do. ``encoded``:
        the exact bytes (a recording's record payload); else the canonical encoding."""
        if isinstance(message, Frame):
            try:
                await self._send(message, encoded=encoded)
            except RelayError:
                self.frames_dropped += 1
                raise
            if message.conditions is not None:
                self.conditions = message.conditions
            self.seq = (message.seq + 1) % _U32
            self.frames_sent += 1
            return
        if isinstance(message, Calibration):
            self.calibration = message
        elif isinstance(message, ConditionsMessage):
            self.conditions = message.conditions
        else:
            raise UsageError("usage.bad_option", f"a recording replays cal, cond and f, not {message.TYPE!r}",
                             path="message")
        await self._send(message, encoded=encoded)

    async def send_calibration(self, calibration: AvatarCalibration) -> None:
        """Send (and remember for reconnects) the avatar calibration (spec §5.6)."""
        cal = _wire_calibration(calibration)
        assert cal is not None
        self.calibration = cal
        await self._send(cal)

    async def send_conditions(self, conditions: Conditions, *,
                              timestamp_us: int | None = None) -> None:
        """Send (and remember) a standalone condition state (spec §5.5)."""
        self.conditions = conditions
        ts = self._now_us() if timestamp_us is None else int(timestamp_us)
        await self._send(ConditionsMessage(conditions, ts))

    async def close(self) -> None:
        """Say bye and close (idempotent)."""
        self._closed = True
        if self._reconnecting is not None:
            self._reconnecting.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reconnecting
            self._reconnecting = None
        link = self._link
        self._link = None
        await self._stop_reader()
        if link is not None:
            await link.close("publisher closing")
