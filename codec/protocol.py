"""Sans-I/O stream state machine of the ``posewire.v1`` protocol (spec §5.3, §5.8–5.10).

A :class:`Connection` never touches a socket or a clock. The caller feeds each received
binary websocket message to :meth:`Connection.receive_data` (with ``now`` in seconds of
its own monotonic clock when rate limiting matters) and gets back a list of events; it
turns outgoing messages into bytes with :meth:`Connection.send`. The lifecycle is the
explicit table :data:`CLIENT_TRANSITIONS` / :data:`SERVER_TRANSITIONS`
(``(state, trigger) -> next state``); spec §5.10 prints it. A peer message that is not
in the table is a protocol violation (``decode.state``).

Triggers are ``"send:<t>"`` / ``"recv:<t>"`` with ``<t>`` the wire type tag
(:data:`posewire.codec.wire.TYPE_TAGS`), ``"fail"`` (a violation detected here: an error
message is sent and the websocket closed with :data:`CLOSE_CODES`) and ``"close"`` (the
transport closed).
"""

from __future__ import annotations

import enum
import hmac
from dataclasses import dataclass, field, replace
from typing import Literal, TypeAlias

from .errors import DecodeError, UsageError
from .registry import REGISTRY, Registry
from .wire import (
    DEFAULT_MAX_FPS,
    DEFAULT_MAX_MESSAGE_BYTES,
    PROTOCOL_VERSION,
    Bye,
    ErrorMessage,
    Frame,
    Hello,
    Message,
    Welcome,
    decode,
    encode,
    registry_hash8,
)

__all__ = [
    "CLIENT_TRANSITIONS",
    "CLOSE_CODES",
    "DATA_TAGS",
    "NORMAL_CLOSURE",
    "PROTOCOL_ERROR_CLOSURE",
    "REORDER_WINDOW",
    "SERVER_TRANSITIONS",
    "Closed",
    "Connection",
    "Event",
    "Limits",
    "ProtocolFailure",
    "RateLimited",
    "Received",
    "SequenceGap",
    "SequenceReorder",
    "SequenceReset",
    "SequenceTracker",
    "Skipped",
    "State",
    "TokenBucket",
    "check_registry",
    "close_code_for",
]


class State(enum.Enum):
    """Lifecycle states (spec §5.10)."""

    IDLE = "IDLE"  # client: nothing sent yet
    AWAIT_HELLO = "AWAIT_HELLO"  # server: waiting for the client's hello
    AWAIT_WELCOME = "AWAIT_WELCOME"  # hello sent (client) / accepted, welcome due (server)
    OPEN = "OPEN"  # data flows
    CLOSING = "CLOSING"  # bye sent, waiting for the peer's bye or the close
    CLOSED = "CLOSED"  # nothing more is sent or accepted


S = State
#: Data messages (spec §5.4–5.6): producer → relay → consumers.
DATA_TAGS: tuple[str, ...] = ("cal", "f", "cond")

_ALL = tuple(State)


def _table(side: Literal["client", "server"]) -> dict[tuple[State, str], State]:
    t: dict[tuple[State, str], State] = {}
    if side == "client":
        t[(S.IDLE, "send:hello")] = S.AWAIT_WELCOME
        t[(S.AWAIT_WELCOME, "recv:welcome")] = S.OPEN
        pending = S.AWAIT_WELCOME
    else:
        t[(S.AWAIT_HELLO, "recv:hello")] = S.AWAIT_WELCOME
        t[(S.AWAIT_WELCOME, "send:welcome")] = S.OPEN
        t[(S.AWAIT_HELLO, "send:err")] = S.CLOSED
        pending = S.AWAIT_HELLO
    for tag in DATA_TAGS:  # who may send them is checked per role (spec §5.3)
        t[(S.OPEN, f"send:{tag}")] = S.OPEN
        t[(S.OPEN, f"recv:{tag}")] = S.OPEN
        t[(S.CLOSING, f"recv:{tag}")] = S.CLOSING  # in flight when we said bye
    for state in (pending, S.AWAIT_WELCOME, S.OPEN):
        t[(state, "send:err")] = S.CLOSED
        t[(state, "recv:err")] = S.CLOSED
        t[(state, "send:bye")] = S.CLOSING
        t[(state, "recv:bye")] = S.CLOSED
    t[(S.CLOSING, "recv:bye")] = S.CLOSED
    t[(S.CLOSING, "recv:err")] = S.CLOSED
    for state in _ALL:
        if state is not S.CLOSED:
            t[(state, "fail")] = S.CLOSED
        t[(state, "close")] = S.CLOSED
    return t


#: ``(state, trigger) -> next state`` of a client (producer or consumer), spec §5.10.
CLIENT_TRANSITIONS: dict[tuple[State, str], State] = _table("client")
#: ``(state, trigger) -> next state`` of the relay's end of one client, spec §5.10.
SERVER_TRANSITIONS: dict[tuple[State, str], State] = _table("server")

#: Websocket close code after a clean bye (RFC 6455).
NORMAL_CLOSURE = 1000
#: Close code for a violation with no more specific code.
PROTOCOL_ERROR_CLOSURE = 4000
#: Error code -> websocket application close code (spec §5.8): 4000 + number − 2000.
CLOSE_CODES: dict[str, int] = {
    "decode.malformed": 4001,
    "decode.type": 4002,
    "decode.missing_field": 4003,
    "decode.unknown_type": 4004,
    "decode.not_finite": 4005,
    "decode.out_of_range": 4006,
    "decode.unknown_id": 4007,
    "decode.length": 4008,
    "decode.too_large": 4009,
    "decode.version": 4010,
    "decode.registry": 4011,
    "decode.auth": 4012,
    "decode.state": 4013,
    "decode.rate": 4014,
    "decode.sequence": 4015,
}


def close_code_for(code: str) -> int:
    """The close code of an error code (:data:`CLOSE_CODES`; 4000 when unlisted)."""
    return CLOSE_CODES.get(code, PROTOCOL_ERROR_CLOSURE)


def check_registry(local: Registry, peer_version: str, peer_hash: bytes, *,
                   path: str = "rv") -> None:
    """Registry negotiation (spec §5.9). Raises ``decode.registry`` unless compatible:
    same MAJOR version; and when the versions are equal, equal 8-byte hashes. A
    different MINOR/PATCH is accepted (dims are append-only; older ends ignore newer
    dims)."""
    mine = local.version.split(".")
    theirs = peer_version.split(".")
    if mine[0] != theirs[0]:
        raise DecodeError("decode.registry", f"registry {peer_version} is not compatible "
                          f"with {local.version}", path=path)
    if peer_version == local.version and peer_hash != registry_hash8(local):
        raise DecodeError("decode.registry", "registry hash does not match", path="rh")


@dataclass(frozen=True, slots=True)
class Limits:
    """Server-side limits (spec §5.8), announced in the welcome.

    ``max_message_bytes``: largest accepted message; ``max_fps``: sustained frames per
    second per producer; ``burst_s``: token-bucket depth in seconds of ``max_fps``;
    ``on_rate``: ``"drop"`` (drop + :class:`RateLimited` event) or ``"close"``
    (``decode.rate`` violation).
    """

    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
    max_fps: int = DEFAULT_MAX_FPS
    burst_s: float = 0.25
    on_rate: Literal["drop", "close"] = "drop"


class TokenBucket:
    """Token bucket over caller-supplied timestamps (seconds; never reads a clock).

    Holds at most ``capacity`` tokens, refills ``rate`` per second, starts full; a time
    going backwards refills nothing.
    """

    def __init__(self, rate: float, capacity: float) -> None:
        if rate <= 0 or capacity < 1:
            raise UsageError("usage.bad_option", "rate must be > 0 and capacity >= 1")
        self.rate = float(rate)
        self.capacity = float(capacity)
        self.tokens = float(capacity)
        self.last: float | None = None

    def take(self, now: float) -> bool:
        """Spend one token at time ``now``; False (nothing spent) when empty."""
        if self.last is not None and now > self.last:
            self.tokens = min(self.capacity, self.tokens + (now - self.last) * self.rate)
        if self.last is None or now > self.last:
            self.last = now
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            return True
        return False


# ---------------------------------------------------------------- events


@dataclass(frozen=True, slots=True)
class Received:
    """A valid peer message. ``stale``: a frame older than one already delivered
    (see :class:`SequenceReorder`); latest-wins consumers drop it."""

    message: Message
    stale: bool = False


@dataclass(frozen=True, slots=True)
class SequenceGap:
    """Frames were lost: ``missing`` sequence numbers between ``expected`` and
    ``received`` (spec §5.4, uint32 wrapping)."""

    expected: int
    received: int
    missing: int


@dataclass(frozen=True, slots=True)
class SequenceReorder:
    """A frame arrived at or behind ``last`` (duplicate or reordered) by ``behind``."""

    last: int
    received: int
    behind: int


@dataclass(frozen=True, slots=True)
class SequenceReset:
    """A new baseline (spec §5.10): the sequence went back further than the tracker's
    reorder window — on a link in producer order (a relay's link to a consumer), any
    step back — so a new producer numbers the frames from ``received`` on."""

    last: int
    received: int


@dataclass(frozen=True, slots=True)
class RateLimited:
    """A frame over the rate limit was dropped (``Limits.on_rate == "drop"``)."""

    seq: int
    now: float


@dataclass(frozen=True, slots=True)
class ProtocolFailure:
    """The peer violated the protocol. Send ``reply`` (an encoded error message, may be
    empty when the state forbids it) and close the websocket with ``close_code``."""

    error: DecodeError
    reply: bytes
    close_code: int


@dataclass(frozen=True, slots=True)
class Closed:
    """The connection reached CLOSED; ``code`` is the websocket close code to use."""

    code: int


@dataclass(frozen=True, slots=True)
class Skipped:
    """Client, OPEN or CLOSING: a message from the relay failed to decode (``error``); it
    was skipped and the connection stays as it was (spec §5.10 client rule)."""

    error: DecodeError


Event: TypeAlias = (Received | SequenceGap | SequenceReorder | SequenceReset | RateLimited
                    | ProtocolFailure | Closed | Skipped)

#: A frame up to this far behind the newest is a reorder; further back a reset (spec
#: §5.10, for a receiver whose input may repeat or reorder frames: a relay).
REORDER_WINDOW = 1024
_U32 = 2**32


@dataclass
class SequenceTracker:
    """uint32 wrapping sequence checks (spec §5.4, §5.10). Never raises.

    ``producer_order``: the frames come over a link that keeps them in the producer's
    order and drops the rest — a relay's link to a consumer (spec §5.7 rule 2) — so a
    frame that is not ahead of the newest (the same number, or any step back) is a new
    producer: a :class:`SequenceReset`, never a reorder (spec §5.10). Without it (a
    relay's own input) a frame up to :data:`REORDER_WINDOW` behind is a reorder.
    """

    last: int | None = None
    gaps: int = 0
    reorders: int = 0
    resets: int = 0
    producer_order: bool = field(default=False, kw_only=True)

    def observe(self, seq: int) -> tuple[bool, SequenceGap | SequenceReorder | SequenceReset | None]:
        """``(stale, event)`` for a frame numbered ``seq``; updates the newest seen."""
        if self.last is None:
            self.last = seq
            return False, None
        ahead = (seq - self.last) % _U32
        last = self.last
        if 0 < ahead < _U32 // 2:
            self.last = seq
            if ahead == 1:
                return False, None
            self.gaps += 1
            return False, SequenceGap((last + 1) % _U32, seq, ahead - 1)
        behind = (last - seq) % _U32
        if not self.producer_order and behind <= REORDER_WINDOW:
            self.reorders += 1
            return True, SequenceReorder(last, seq, behind)
        self.last = seq
        self.resets += 1
        return False, SequenceReset(last, seq)


# ---------------------------------------------------------------- connection


@dataclass
class Connection:
    """One end of one posewire websocket (spec §5.10), sans I/O.

    ``side="client"``: a producer or consumer (``role``, sent in its hello).
    ``side="server"``: the relay's end of one client; it checks the hello (protocol,
    registry, ``auth_token`` when set — compared in constant time) and enforces
    ``limits``. Violations never raise from :meth:`receive_data`: they come back as a
    :class:`ProtocolFailure` event and the state becomes CLOSED.
    """

    side: Literal["client", "server"]
    role: Literal["producer", "consumer"] | None = None
    registry: Registry = REGISTRY
    limits: Limits = field(default_factory=Limits)
    auth_token: str | None = None
    state: State = field(init=False)
    peer_hello: Hello | None = field(default=None, init=False)
    peer_welcome: Welcome | None = field(default=None, init=False)
    #: spec §5.10: a client's frames come from a relay, in producer order (a step back is
    #: a new producer); a relay's own input may repeat or reorder them
    sequence: SequenceTracker = field(init=False)
    close_code: int | None = field(default=None, init=False)
    _bucket: TokenBucket = field(init=False)

    def __post_init__(self) -> None:
        if self.side not in ("client", "server"):
            raise UsageError("usage.bad_option", "side must be 'client' or 'server'")
        if self.side == "client" and self.role not in ("producer", "consumer"):
            raise UsageError("usage.bad_option", "a client needs role producer or consumer")
        self.state = State.IDLE if self.side == "client" else State.AWAIT_HELLO
        self.sequence = SequenceTracker(producer_order=self.side == "client")
        self._bucket = TokenBucket(self.limits.max_fps,
                                   max(1.0, self.limits.max_fps * self.limits.burst_s))

    @property
    def transitions(self) -> dict[tuple[State, str], State]:
        return CLIENT_TRANSITIONS if self.side == "client" else SERVER_TRANSITIONS

    def _producer_end(self) -> Literal["producer", "consumer"] | None:
        """The role of the client on this connection (ours or the peer's)."""
        if self.side == "client":
            return self.role
        return None if self.peer_hello is None else self.peer_hello.role  # type: ignore[return-value]

    # -------------------------------------------------------------- sending

    def send(self, message: Message, *, encoded: bytes | None = None) -> bytes:
        """Check that ``message`` may be sent now, advance the state, return its bytes.

        ``encoded``: bytes already encoded (a relay forwarding a producer's frame
        verbatim); returned as is. Not allowed now → ``usage.state``.
        """
        tag = message.TYPE
        nxt = self.transitions.get((self.state, f"send:{tag}"))
        if nxt is None:
            raise UsageError("usage.state", f"cannot send {tag!r} in state {self.state.value}")
        if tag in DATA_TAGS:
            sender = "producer" if self.side == "client" else "consumer"
            if self._producer_end() != sender:
                raise UsageError("usage.state", f"a {self._producer_end()} connection "
                                 f"cannot carry {tag!r} this way")
        if isinstance(message, Hello) and message.role != self.role:
            raise UsageError("usage.state", "hello role differs from the connection role")
        data = encoded if encoded is not None else encode(message, registry=self.registry)
        self.state = nxt
        if nxt is State.CLOSED:
            self.close_code = (close_code_for(message.code) if isinstance(message, ErrorMessage)
                               else NORMAL_CLOSURE)
        return data

    def hello(self, stream: str, *, client: str = "", token: str | None = None) -> bytes:
        """Client: encode and send the hello for this connection's role and registry."""
        if self.role is None:
            raise UsageError("usage.state", "only a client sends hello")
        return self.send(Hello(self.role, stream, client=client, token=token,
                               registry_version=self.registry.version,
                               registry_hash=registry_hash8(self.registry)))

    def accept(self, session: str) -> bytes:
        """Server: the welcome for an accepted hello, with this end's limits."""
        return self.send(Welcome(session, self.limits.max_message_bytes, self.limits.max_fps,
                                 self.registry.version, registry_hash8(self.registry),
                                 PROTOCOL_VERSION))

    def bye(self, reason: str = "") -> bytes:
        """Orderly goodbye (→ CLOSING)."""
        return self.send(Bye(reason))

    def fail(self, error: DecodeError) -> ProtocolFailure:
        """Report ``error`` to the peer and close (→ CLOSED); used for violations found
        here and by the caller (e.g. a relay-level rule)."""
        reply = b""
        if (self.state, "send:err") in self.transitions:
            reply = encode(ErrorMessage.from_exception(error), registry=self.registry)
        self.state = self.transitions.get((self.state, "fail"), State.CLOSED)
        self.close_code = close_code_for(error.code)
        return ProtocolFailure(error, reply, self.close_code)

    def connection_closed(self) -> None:
        """The transport closed (→ CLOSED)."""
        if self.close_code is None:
            self.close_code = NORMAL_CLOSURE
        self.state = State.CLOSED

    # -------------------------------------------------------------- receiving

    def receive_data(self, data: bytes, *, now: float | None = None) -> list[Event]:
        """Process one received websocket message (``now``: caller's monotonic seconds,
        used by the rate limit only). Never raises for peer data."""
        if self.state is State.CLOSED:
            return []
        try:
            msg = decode(data, max_size=self.limits.max_message_bytes, registry=self.registry)
        except DecodeError as exc:
            if self.side == "client" and self.state in (State.OPEN, State.CLOSING):
                # spec §5.10: a client skips (and reports) a message from the relay that
                # does not decode; one bad message never ends its link
                return [Skipped(exc)]
            return [self.fail(exc), Closed(self.close_code or PROTOCOL_ERROR_CLOSURE)]
        try:
            return self._receive(msg, now)
        except DecodeError as exc:
            return [self.fail(exc), Closed(self.close_code or PROTOCOL_ERROR_CLOSURE)]

    def _receive(self, msg: Message, now: float | None) -> list[Event]:
        tag = msg.TYPE
        nxt = self.transitions.get((self.state, f"recv:{tag}"))
        if nxt is None:
            raise DecodeError("decode.state", f"{tag!r} is not allowed in state "
                              f"{self.state.value}", path="t")
        if tag in DATA_TAGS:
            sender = "consumer" if self.side == "client" else "producer"
            if self._producer_end() != sender:
                raise DecodeError("decode.state", f"{tag!r} is not allowed from this peer",
                                  path="t")
        events: list[Event] = []
        stale = False
        if isinstance(msg, Hello):
            check_registry(self.registry, msg.registry_version, msg.registry_hash)
            if self.auth_token is not None and (
                    msg.token is None
                    or not hmac.compare_digest(msg.token.encode(), self.auth_token.encode())):
                raise DecodeError("decode.auth", "auth token missing or wrong", path="tk")
            self.peer_hello = msg
        elif isinstance(msg, Welcome):
            check_registry(self.registry, msg.registry_version, msg.registry_hash)
            self.peer_welcome = msg
            # spec §5.8: a client accepts messages up to the size its relay announced
            self.limits = replace(self.limits, max_message_bytes=msg.max_message_bytes)
        elif isinstance(msg, Frame):
            if (self.side == "server" and now is not None
                    and not self._bucket.take(now)):
                if self.limits.on_rate == "close":
                    raise DecodeError("decode.rate", "frames exceed the rate limit", path="s")
                return [RateLimited(msg.seq, now)]
            stale, seq_event = self.sequence.observe(msg.seq)
            if seq_event is not None:
                events.append(seq_event)
        self.state = nxt
        events.append(Received(msg, stale))
        if nxt is State.CLOSED:
            self.close_code = NORMAL_CLOSURE
            events.append(Closed(NORMAL_CLOSURE))
        return events
