"""Statistics of a relay: its counters, consumer snapshots and the bounded log of
rejections (spec §5.7 status line, §5.7 rule 8 bounded logging)."""

from __future__ import annotations

import logging
import time
from collections import Counter
from dataclasses import dataclass, field


class LogLimiter:
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
    #: connections refused for their PROXY header: a bad or missing one from a trusted
    #: proxy, any from another address (spec §5.7 rule 12)
    proxy_refused: int = 0
    #: window pongs whose value is not the one the relay's ping carried (spec §5.7 rule 4)
    window_forged: int = 0
    #: hellos whose token was checked late, or refused unchecked, because their address
    #: sent wrong tokens (spec §5.7 rule 5)
    auth_delayed: int = 0
    errors_by_code: Counter[str] = field(default_factory=Counter)


@dataclass(frozen=True, slots=True)
class ConsumerInfo:
    """A snapshot of one consumer: frames written and dropped, what it holds right now
    (``pending`` mailbox slots, at most 3; ``buffered_bytes`` in the transport;
    ``in_flight`` frames written but not yet acknowledged by a pong; ``window`` the
    stream's send window W in frames, spec §5.7 rule 4)."""

    session: str
    stream: str
    delivered: int
    dropped: int
    pending: int
    buffered_bytes: int
    in_flight: int = 0
    window: int = 0
