"""Per-stream and per-client state: what a late joiner gets (calibration, condition
state, the latest full frame; spec §5.7 rule 3) and each client's send-window counters."""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Iterator
from typing import TYPE_CHECKING, Literal

import numpy as np
from numpy.typing import NDArray

from posewire.codec.conditions import Conditions
from posewire.codec.protocol import (
    Connection,
    SequenceTracker,
    TokenBucket,
)
from posewire.codec.vector import N_DIMS
from posewire.codec.wire import (
    ConditionsMessage,
    Frame,
    Message,
    decode,
    encode,
)

from .framecheck import RawFrame
from .mailbox import Mailbox

if TYPE_CHECKING:
    from .connection import RelayConnection


Item = tuple[Message | RawFrame, bytes]
#: frames between two estimates of a stream's rate (spec §5.7 rule 4: the send window)
RATE_EVERY = 16
#: the smallest send window, in frames (a window ping after every frame)
MIN_WINDOW = 2


class Client:
    """The relay's view of one websocket."""

    def __init__(self, ws: RelayConnection, conn: Connection, session: str) -> None:
        self.ws = ws
        #: the websocket's transport and sans-I/O protocol (read for every frame written)
        self.transport = ws.transport
        self.protocol = ws.protocol
        self.conn = conn
        self.session = session
        self.role: Literal["producer", "consumer"] | None = None
        self.stream: Stream | None = None
        self.mailbox: Mailbox[Item] | None = None
        self.sender: asyncio.Task[None] | None = None
        # consumers: the send window (spec §5.7) — frames written, frames known read
        # (acknowledged by the pong of a ping sent after them), the last ping's mark, and
        # the phase of its window pings (a ping when ``sent + phase`` is a multiple of W/2)
        self.sent = 0
        self.acked = 0
        self.ping_mark = 0
        self.phase = 0
        #: frames between its window pings (0: W/2, until its first pong), and the frames
        #: written while its pongs came back (a decaying maximum)
        self.spacing = 0
        self.lag = 0
        self.window = asyncio.Event()  # set by a pong that acknowledges frames
        #: the key of its window pings' values (spec §5.7 rule 4: only a ping the relay
        #: sent can be answered)
        self.window_key = secrets.token_bytes(16)
        # producers: the frame-rate bucket, checked before decoding (spec §5.8)
        self.bucket: TokenBucket | None = None


class Stream:
    """One named stream: its clients and the state a late joiner needs (spec §5.7)."""

    def __init__(self, name: str, *, send_window: int = 128, window_s: float | None = None,
                 max_fps: int = 120) -> None:
        self.name = name
        self.producers: set[Client] = set()
        self.consumers: set[Client] = set()
        self.calibration: Item | None = None
        self.conditions: Conditions | None = None
        self._conditions_item: Item | None = None
        #: spec §5.7 rule 3: the ts of the frame whose c set the condition state
        self._conditions_ts = 0
        #: the merged values up to the frames in ``_pending`` (NaN = never sent)
        self._values: NDArray[np.float64] = np.full(N_DIMS, np.nan)
        #: frames not merged into ``_values`` yet, oldest first, as (dims present, the
        #: frame or its bytes); one whose dims a newer one all carries is left out
        self._pending: list[tuple[int, Frame | bytes]] = []
        self.seq = 0
        self.timestamp_us = 0
        self.has_frame = False
        self._frame_item: Item | None = None  # the latest full frame, when known
        #: spec §5.7 rule 3/7: the merged snapshot belongs to one producer; set when a new
        #: producer takes the stream, the snapshot starts afresh at its first frame
        self.fresh = False
        #: the newest sequence number seen from the current producer (spec §5.7)
        self.sequence = SequenceTracker()
        #: held while a producer hello checks whether the current producer is alive
        self.takeover = asyncio.Lock()
        #: frames from the broker: the rate of one producer (spec §5.7.1 rule 6)
        self.broker_bucket: TokenBucket | None = None
        #: spec §5.7 rule 4: the send window W in frames — at most ``send_window``, and
        #: at most ``window_s`` seconds of frames at the stream's rate once it is known
        #: (before: at the producers' rate limit ``max_fps``), at least MIN_WINDOW
        self.max_window = send_window
        self.window_s = window_s
        self.window = send_window if window_s is None else max(
            MIN_WINDOW, min(send_window, int(window_s * max_fps)))
        self._rate_count = 0
        self._rate_mark: tuple[float, int] | None = None  # (arrival, ts) RATE_EVERY frames ago

    @property
    def empty(self) -> bool:
        return not self.producers and not self.consumers

    @property
    def values(self) -> NDArray[np.float64]:
        """The merged snapshot's values (NaN = no frame carried the dim)."""
        self._merge()
        return self._values

    def set_conditions(self, msg: ConditionsMessage, data: bytes) -> None:
        self.conditions = msg.conditions
        self._conditions_item = (msg, data)

    def observe_rate(self, now: float, timestamp_us: int) -> None:
        """Spec §5.7 rule 4: every RATE_EVERY frames, the stream's rate — frames over the
        longer of their span in arrival time and in capture time (``ts``), so that a
        burst on the way does not count as a faster stream — and from it the window."""
        self._rate_count += 1
        if self._rate_count < RATE_EVERY:
            return
        self._rate_count = 0
        mark, self._rate_mark = self._rate_mark, (now, timestamp_us)
        if mark is None or self.window_s is None:
            return
        span = max(now - mark[0], (timestamp_us - mark[1]) / 1e6)
        if span > 0:
            fit = int(self.window_s * RATE_EVERY / span + 1e-6)  # (not lost to round-off)
            self.window = max(MIN_WINDOW, min(self.max_window, fit))

    def update_frame(self, frame: Frame | RawFrame, data: bytes) -> None:
        """Merge ``frame`` into the latest state (spec §5.7)."""
        if self.fresh:
            # spec §5.7 rule 3: every dim a frame *since the producer's hello* has carried;
            # the previous producer's dims are not mixed under the new one's s (rule 7)
            self.fresh = False
            self._values = np.full(N_DIMS, np.nan)
            self._pending = []
        self.has_frame = True
        self.seq, self.timestamp_us = frame.seq, frame.timestamp_us
        if frame.conditions is not None:
            self.conditions = frame.conditions
            self._conditions_ts = frame.timestamp_us
            self._conditions_item = None  # built lazily from the state
        held: Frame | bytes
        if isinstance(frame, RawFrame):
            bits, held = frame.bits, data  # decoded only when a late joiner needs it
        else:
            bits = sum(1 << int(i) for i in np.flatnonzero(frame.mask))
            held = frame
        if frame.is_full:
            self._pending = [(bits, held)]
            # forwarded verbatim to late joiners unless it lacks the condition state
            full_state = frame.conditions is not None or self.conditions is None
            self._frame_item = (frame, data) if full_state else None
            return
        # the values of a frame whose dims this one all carries are not needed any more
        pending = [p for p in self._pending if p[0] & ~bits]
        pending.append((bits, held))
        self._pending = pending
        self._frame_item = None
        if len(pending) > 32:
            self._merge()

    def _merge(self) -> None:
        """Merge the pending frames into the values, oldest first."""
        if not self._pending:
            return
        values = self._values
        for bits, held in self._pending:
            frame = held if isinstance(held, Frame) else decode(held, max_size=len(held))
            assert isinstance(frame, Frame)
            if bits == (1 << N_DIMS) - 1:
                values = frame.values.copy()
            else:
                present = ~np.isnan(frame.values)
                values[present] = frame.values[present]
        self._values = values
        self._pending = []

    def underlay(self, frame: Frame, data: bytes) -> None:
        """Merge a stored start frame (spec §5.7.1 rule 3) *under* the live frames: dims
        no live frame carried take its values; ``s``, ``ts`` and the live dims stay."""
        if not self.has_frame:
            self.update_frame(frame, data)
            return
        self._merge()
        missing = np.isnan(self._values) & frame.mask
        if missing.any():
            self._values[missing] = frame.values[missing]
            self._frame_item = None

    def late_join(self) -> Iterator[tuple[str, Item]]:
        """What a new consumer gets at once: calibration, conditions, latest full state."""
        if self.calibration is not None:
            yield "cal", self.calibration
        if self.conditions is not None:
            if self._conditions_item is None:
                # spec §5.7 rule 3: the ts of the frame that set the state, never a later
                # frame's, so every relay of a cluster sends a late joiner the same bytes
                msg = ConditionsMessage(self.conditions, self._conditions_ts)
                self._conditions_item = (msg, encode(msg))
            yield "cond", self._conditions_item
        if self.has_frame:
            yield "f", self.full_frame()

    def full_frame(self) -> Item:
        """The latest full state as a frame: the producer's bytes when its latest frame
        was full, else the merged state encoded once per state change (not per
        consumer), carrying the current conditions."""
        if self._frame_item is None:
            frame = Frame(self.seq, self.timestamp_us, self.values.copy(), self.conditions)
            self._frame_item = (frame, encode(frame))
        return self._frame_item
