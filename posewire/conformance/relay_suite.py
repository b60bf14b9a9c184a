"""Conformance of a relay over the wire (spec §5, §6.7): a scripted client suite.

``posewire conformance --relay ws://host:port`` connects real websocket clients to any
relay and runs the checks of :data:`CHECKS`: the handshake, ordering and same bytes, the
late join snapshot, a producer's sequence reset and the 2³² wrap, non-canonical messages
forwarded as their bytes, map-key types, version, registry hash, auth, size, text messages, a
second producer, close codes, isolation of a bad client, and the rate limit. Each check is a
:class:`~posewire.conformance.CaseResult` (file ``relay``) with the rule it pins and a
verdict. Every check uses its own random stream name, so checks never see each other.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import msgpack
import numpy as np
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidStatus
from websockets.typing import Origin, Subprotocol

from posewire.codec.conditions import Affect, Conditions
from posewire.codec.errors import DecodeError
from posewire.codec.protocol import CLOSE_CODES
from posewire.codec.registry import REGISTRY
from posewire.codec.vector import DEFAULTS, N_DIMS
from posewire.codec.wire import (
    REGISTRY_HASH8,
    SUBPROTOCOL,
    Bye,
    Calibration,
    ConditionsMessage,
    ErrorMessage,
    Frame,
    Hello,
    Message,
    Welcome,
    decode,
    encode,
)
from posewire.relay.origin import is_loopback

from . import CaseResult

__all__ = ["CHECKS", "Check", "run_relay_suite"]


class _RuleError(Exception):
    """A check found the relay breaking its rule (the message says how)."""


class _NotRunError(Exception):
    """A check that cannot run with what the kit was given (reported UNIMPLEMENTED)."""


@dataclass
class _Ctx:
    url: str
    token: str | None
    timeout: float
    stream_prefix: str
    opened: list[ClientConnection] = field(default_factory=list)
    #: the longest hello deadline the kit accepts (spec §5.7 rule 8: the reference's is 3 s)
    hello_deadline: float = 10.0

    def stream(self, name: str) -> str:
        return f"{self.stream_prefix}-{name}-{secrets.token_hex(4)}"


@dataclass
class _Client:
    ws: ClientConnection
    welcome: Welcome | None
    timeout: float

    async def send(self, data: bytes | str) -> None:
        await self.ws.send(data)

    async def recv_bytes(self, timeout: float | None = None) -> bytes:
        async with asyncio.timeout(self.timeout if timeout is None else timeout):
            data = await self.ws.recv()
        if not isinstance(data, bytes):
            raise _RuleError("§5.1 the relay sent a text message")
        return data

    async def recv(self, timeout: float | None = None) -> Message:
        data = await self.recv_bytes(timeout)
        try:
            return decode(data, max_size=1 << 20)
        except DecodeError as exc:
            raise _RuleError(f"§5.2 the relay sent bytes that do not decode: {exc.code}") from exc

    async def until_closed(self) -> tuple[list[Message], int | None]:
        """Everything received until the relay closes, and the close code."""
        got = await _until_closed(self.ws, self.timeout,
                                  f"the relay did not close the connection within {self.timeout} s")
        await self.ws.wait_closed()
        return got, self.ws.close_code


async def _until_closed(ws: ClientConnection, seconds: float, still_open: str) -> list[Message]:
    """The messages that decode, received until the relay closes ``ws``; the rule error
    ``still_open`` after ``seconds``."""
    got: list[Message] = []
    try:
        async with asyncio.timeout(seconds):
            async for data in ws:
                if isinstance(data, bytes):
                    with contextlib.suppress(DecodeError):
                        got.append(decode(data, max_size=1 << 20))
    except ConnectionClosed:
        pass
    except TimeoutError as exc:
        raise _RuleError(still_open) from exc
    return got


async def _open(ctx: _Ctx, role: str, stream: str, *, hello: bytes | None = None,
                token: str | bool | None = True, expect_welcome: bool = True) -> _Client:
    try:
        ws = await connect(ctx.url, subprotocols=[Subprotocol(SUBPROTOCOL)], compression=None,
                           proxy=None, open_timeout=ctx.timeout, max_size=1 << 21)
    except (OSError, InvalidHandshake, TimeoutError) as exc:
        raise _RuleError(f"§5.1 cannot open a websocket with subprotocol {SUBPROTOCOL}: {exc}"
                    ) from exc
    ctx.opened.append(ws)
    if ws.subprotocol != SUBPROTOCOL:
        raise _RuleError(f"§5.1 the server selected subprotocol {ws.subprotocol!r}, "
                    f"not {SUBPROTOCOL}")
    tk = ctx.token if token is True else (None if token is False else token)
    data = hello if hello is not None else encode(Hello(role, stream, client="posewire-kit",
                                                        token=tk))
    await ws.send(data)
    client = _Client(ws, None, ctx.timeout)
    if expect_welcome:
        try:
            msg = await client.recv()
        except (TimeoutError, ConnectionClosed) as exc:
            raise _RuleError(f"§5.3 no welcome after a valid {role} hello "
                        f"(close code {ws.close_code})") from exc
        if not isinstance(msg, Welcome):
            raise _RuleError(f"§5.3 the answer to a valid hello is {type(msg).__name__}, "
                        "not welcome")
        client.welcome = msg
    return client


async def _expect_refusal(client: _Client, code: str, rule: str) -> None:
    try:
        first = await client.recv()
    except ConnectionClosed:
        first = None
    if isinstance(first, Welcome):
        raise _RuleError(f"{rule}: the relay accepted the hello (welcome) instead of "
                         f"refusing it with {code}")
    rest, close = await client.until_closed()
    got: list[Message] = [*([] if first is None else [first]), *rest]
    errors = [m for m in got if isinstance(m, ErrorMessage)]
    want = CLOSE_CODES[code]
    if close != want:
        raise _RuleError(f"{rule}: expected close code {want} ({code}), got {close}")
    if not errors or errors[0].code != code:
        seen = errors[0].code if errors else "none"
        raise _RuleError(f"{rule}: expected an err message {code} before the close, got {seen}")


def _full_values(seed: int) -> np.ndarray[Any, np.dtype[np.float64]]:
    rng = np.random.default_rng(seed)
    values = DEFAULTS.copy()
    for d in REGISTRY.dimensions:
        if d.row.group in ("face", "mouth", "head", "fingers"):
            lo = -1.0 if d.row.polarity == "bipolar" else 0.0
            values[d.index] = rng.uniform(lo, 1.0)
    return values


def _partial(values: dict[str, float]) -> np.ndarray[Any, np.dtype[np.float64]]:
    v = np.full(N_DIMS, np.nan)
    for k, x in values.items():
        v[REGISTRY.index(k)] = x
    return v


_CAL = Calibration(0.19, 0.5, 0.56, 0.36)
_COND = Conditions(tracking={"hand_l": "lost"}, affect=Affect("happy", 0.5, "blend"))


# ---------------------------------------------------------------------------- checks


async def _handshake(ctx: _Ctx) -> None:
    c = await _open(ctx, "consumer", ctx.stream("handshake"))
    w = c.welcome
    assert w is not None
    if w.protocol != 1:
        raise _RuleError(f"§5.3 welcome pv is {w.protocol}, not 1")
    if w.registry_version.split(".")[0] != REGISTRY.version.split(".")[0]:
        raise _NotRunError(f"the relay speaks registry {w.registry_version}; this kit "
                      f"{REGISTRY.version}")


async def _same_bytes(ctx: _Ctx) -> None:
    stream = ctx.stream("order")
    c = await _open(ctx, "consumer", stream)
    p = await _open(ctx, "producer", stream)
    sent = [encode(_CAL), encode(ConditionsMessage(_COND, 5))]
    values = _full_values(1)
    for seq in range(1, 7):
        v = values if seq % 2 else _partial({"h_yaw": seq / 10, "m_jaw": -seq / 10})
        sent.append(encode(Frame(seq, 1000 * seq, v, _COND if seq == 3 else None)))
    for data in sent:
        await p.send(data)
        await asyncio.sleep(0.01)  # slower than any rate limit and any latest-wins slot
    got = [await c.recv_bytes() for _ in sent]
    for i, (a, b) in enumerate(zip(sent, got, strict=True)):
        if a != b:
            raise _RuleError(f"§5.7.2 message {i + 1} ({decode(a).TYPE}) was not forwarded as the "
                        f"same bytes, in order ({len(b)} bytes instead of {len(a)})")


async def _late_join_snapshot(ctx: _Ctx) -> None:
    stream = ctx.stream("late")
    p = await _open(ctx, "producer", stream)
    full = _full_values(2)
    cal, cond = encode(_CAL), encode(ConditionsMessage(_COND, 7))
    frames = [Frame(10, 100, full), Frame(11, 200, _partial({"h_yaw": 0.25})),
              Frame(12, 300, _partial({"m_jaw": -0.5, "b_yaw": 0.125}))]
    for data in (cal, cond, *map(encode, frames)):
        await p.send(data)
        await asyncio.sleep(0.01)
    await asyncio.sleep(0.1)
    c = await _open(ctx, "consumer", stream)
    got = [await c.recv_bytes() for _ in range(3)]
    if got[0] != cal:
        raise _RuleError("§5.7.3 a late joiner first gets the latest calibration (same bytes)")
    m = decode(got[1])
    if not isinstance(m, ConditionsMessage) or m.conditions != _COND:
        raise _RuleError(f"§5.7.3 a late joiner then gets the condition state, got {m!r}")
    start = decode(got[2])
    if not isinstance(start, Frame):
        raise _RuleError(f"§5.7.3 a late joiner then gets the start frame, got {start!r}")
    expect = full.copy()
    for f in frames[1:]:
        present = ~np.isnan(f.values)
        expect[present] = f.values[present]
    wire_frame = decode(encode(Frame(12, 300, expect)))  # quantized like the wire
    assert isinstance(wire_frame, Frame)
    expect = wire_frame.values
    if (start.seq, start.timestamp_us) != (12, 300):
        raise _RuleError("§5.7.3 the start frame carries s and ts of the newest frame (12, 300), "
                    f"got ({start.seq}, {start.timestamp_us})")
    if not np.array_equal(start.values, expect, equal_nan=True):
        bad = [REGISTRY.dimensions[i].id for i in
               np.flatnonzero(~((start.values == expect) | (np.isnan(start.values)
                                                           & np.isnan(expect))))]
        raise _RuleError(f"§5.7.3 the start frame is the merged snapshot: newest value of every "
                    f"dim; differs at {bad[:5]}")
    if start.conditions != _COND:
        raise _RuleError("§5.7.3 the start frame carries c = the current condition state")


async def _late_join_full_bytes(ctx: _Ctx) -> None:
    stream = ctx.stream("latefull")
    p = await _open(ctx, "producer", stream)
    newest = encode(Frame(5, 50, _full_values(3), _COND))
    for data in (encode(Frame(4, 40, _partial({"h_yaw": 0.5}))), newest):
        await p.send(data)
        await asyncio.sleep(0.02)
    await asyncio.sleep(0.1)
    c = await _open(ctx, "consumer", stream)
    got = [await c.recv_bytes() for _ in range(2)]  # cond, then the start frame
    if got[-1] != newest:
        raise _RuleError("§5.7.3 when the newest frame was full and carried c, the start frame "
                    "is that frame's bytes unchanged")


async def _late_join_cond_timestamp(ctx: _Ctx) -> None:
    stream = ctx.stream("condts")
    p = await _open(ctx, "producer", stream)
    for frame in (Frame(1, 100, _partial({"h_yaw": 0.25}), _COND), Frame(2, 200, _partial({"h_yaw": 0.5}))):
        await p.send(encode(frame))
        await asyncio.sleep(0.02)
    await asyncio.sleep(0.1)
    c = await _open(ctx, "consumer", stream)
    got = decode(await c.recv_bytes())
    if not isinstance(got, ConditionsMessage) or got.conditions != _COND:
        raise _RuleError(f"§5.7.3 a late joiner first gets the condition state as a cond message, got {got!r}")
    if got.timestamp_us != 100:
        raise _RuleError("§5.7.3 the late joiner's cond carries the ts of the frame whose c set the state (100), "
                         f"not a later frame's: got ts {got.timestamp_us}")


async def _late_join_new_producer(ctx: _Ctx) -> None:
    stream = ctx.stream("newprod")
    holder = await _open(ctx, "consumer", stream)  # the stream lives on between producers
    p1 = await _open(ctx, "producer", stream)
    await p1.send(encode(Frame(100, 1000, _full_values(4))))
    await asyncio.sleep(0.02)
    await p1.send(encode(Bye("done")))
    await p1.until_closed()
    p2 = await _open(ctx, "producer", stream)
    newest = encode(Frame(0, 5, _partial({"h_yaw": 0.5})))
    await p2.send(newest)
    for _ in range(2):  # the old producer's frame, then the new one's
        await holder.recv_bytes()
    c = await _open(ctx, "consumer", stream)
    start = decode(await c.recv_bytes())
    if not isinstance(start, Frame):
        raise _RuleError(f"§5.7.3 a late joiner gets the start frame, got {start!r}")
    present = [REGISTRY.dimensions[i].id for i in np.flatnonzero(start.mask)]
    if (start.seq, start.timestamp_us) != (0, 5) or present != ["h_yaw"]:
        raise _RuleError("§5.7.3 the snapshot belongs to one producer: after a producer change "
                         "the start frame carries only the new producer's dims (s 0, h_yaw), "
                         f"got s {start.seq} with {len(present)} dims")


async def _stale_frames(ctx: _Ctx) -> None:
    stream = ctx.stream("stale")
    c = await _open(ctx, "consumer", stream)
    p = await _open(ctx, "producer", stream)
    frames = {s: encode(Frame(s, 100 + s, _partial({"h_yaw": s / 100}))) for s in (10, 11, 9, 12)}
    for s in (10, 11, 9, 11, 12):  # 9: reordered, 11 again: a duplicate
        await p.send(frames[s])
        await asyncio.sleep(0.02)
    got = [decode(await c.recv_bytes()) for _ in range(3)]
    seqs = [m.seq for m in got if isinstance(m, Frame)]
    if seqs != [10, 11, 12]:
        raise _RuleError("§5.7.2 a frame whose s is behind the newest (a reorder or a duplicate) "
                         f"is dropped, not forwarded: sent s 10, 11, 9, 11, 12, got {seqs}")
    late = await _open(ctx, "consumer", stream)
    start = decode(await late.recv_bytes())
    if not isinstance(start, Frame) or start.seq != 12:
        raise _RuleError("§5.7.2 a stale frame is never kept as the stream's latest state: the "
                         f"start frame has s {getattr(start, 'seq', None)}, not 12")


async def _new_producer_numbers_afresh(ctx: _Ctx) -> None:
    stream = ctx.stream("restart")
    holder = await _open(ctx, "consumer", stream)  # the stream lives on between producers
    p1 = await _open(ctx, "producer", stream)
    for s in range(300, 303):
        await p1.send(encode(Frame(s, 1000 + s, _partial({"h_yaw": s / 1000}))))
        await asyncio.sleep(0.02)
    await p1.send(encode(Bye("restarting")))
    await p1.until_closed()
    # the same producer restarted: numbered from 0, well within 1024 of its last number
    p2 = await _open(ctx, "producer", stream)
    for s in range(3):
        await p2.send(encode(Frame(s, 10 + s, _partial({"m_jaw": s / 10}))))
        await asyncio.sleep(0.02)
    got: list[int] = []
    with contextlib.suppress(TimeoutError):
        while len(got) < 6:
            msg = decode(await holder.recv_bytes())
            if isinstance(msg, Frame):
                got.append(msg.seq)
    if got != [300, 301, 302, 0, 1, 2]:
        raise _RuleError("§5.7.7 a new producer numbers from its own start: its frames are not "
                         "checked against the previous producer's (sent s 300–302, then a new "
                         f"producer's 0–2), got {got}")


async def _frames_of(client: _Client, count: int) -> list[int]:
    """The ``s`` of the frames ``client`` receives, until ``count`` came or none for 0.5 s."""
    got: list[int] = []
    with contextlib.suppress(TimeoutError):
        while len(got) < count:
            msg = decode(await client.recv_bytes(timeout=0.5))
            if isinstance(msg, Frame):
                got.append(msg.seq)
    return got


async def _start_frame_seq(ctx: _Ctx, stream: str) -> int | None:
    late = await _open(ctx, "consumer", stream)
    start = decode(await late.recv_bytes())
    return start.seq if isinstance(start, Frame) else None


async def _producer_reset(ctx: _Ctx) -> None:
    stream = ctx.stream("reset")
    c = await _open(ctx, "consumer", stream)
    p = await _open(ctx, "producer", stream)
    sent = [5000, 5001, 5002, 10, 11]  # 10 is 4992 behind 5002: more than 1024, a reset
    for s in sent:
        await p.send(encode(Frame(s, 100 + s, _partial({"h_yaw": s / 10000}))))
        await asyncio.sleep(0.02)
    got = await _frames_of(c, len(sent))
    if got != sent:
        raise _RuleError("§5.10 a frame more than 1024 behind the newest is a reset of the producer's "
                         f"numbers: it and those after it are forwarded (sent s {sent}, got {got})")
    if (start := await _start_frame_seq(ctx, stream)) != 11:
        raise _RuleError(f"§5.10 after a reset the numbers go on from the reset: the start frame has s {start}, "
                         "not 11")


async def _sequence_wrap(ctx: _Ctx) -> None:
    stream = ctx.stream("wrap")
    c = await _open(ctx, "consumer", stream)
    p = await _open(ctx, "producer", stream)
    top = 2**32 - 1
    # s wraps 2³²−1 → 0 (§5.4); the second 2³²−1 is then one behind 0 (mod 2³²): a duplicate
    for s in (top - 1, top, 0, top, 1):
        await p.send(encode(Frame(s, 7, _partial({"m_jaw": 0.25}))))
        await asyncio.sleep(0.02)
    got = await _frames_of(c, 5)
    if got != [top - 1, top, 0, 1]:
        raise _RuleError("§5.4/§5.10 sequence numbers wrap 2³²−1 → 0 and are compared mod 2³²: sent s "
                         f"2³²−2, 2³²−1, 0, 2³²−1 (a duplicate), 1, got {got}")
    if (start := await _start_frame_seq(ctx, stream)) != 1:
        raise _RuleError(f"§5.10 after the wrap the newest frame is s 1: the start frame has s {start}")


def _raw_map(*pairs: tuple[object, bytes]) -> bytes:
    """A msgpack map of ``(key, packed value)`` pairs in the given order (values packed by the
    caller, so a value can take a form the canonical encoding never writes)."""
    assert len(pairs) < 16
    return bytes([0x80 | len(pairs)]) + b"".join(msgpack.packb(k) + v for k, v in pairs)


def _pk(value: Any, *, single: bool = False) -> bytes:
    return msgpack.packb(value, use_bin_type=True, use_single_float=single)  # type: ignore[no-any-return]


def _non_canonical() -> list[bytes]:
    """Valid producer messages that are not their canonical encoding (§5.2): keys out of order,
    an unknown key, integers in longer forms, float 32 reals, a mask with a trailing zero byte."""
    m, v = (msgpack.unpackb(encode(Frame(1, 1, _partial({"h_yaw": 0.5, "m_jaw": -0.25}))))[k] for k in "mv")
    share = [0.25, *([0] * 13), 0.5]
    cal = _raw_map(("t", _pk("cal")), ("sw", _pk(0.36, single=True)), ("hl", _pk(0.19, single=True)),
                   ("al", _pk(0.56)), ("tl", _pk(None)))
    cond = _raw_map(("ts", b"\xcf" + (9).to_bytes(8, "big")), ("t", _pk("cond")),
                    ("c", _raw_map(("tracking", _pk({"hand_l": "lost"})),
                                   ("mouthing", bytes([0x90 | 15]) + b"".join(_pk(x, single=True) for x in share)))))
    frame = _raw_map(("t", _pk("f")), ("ts", b"\xcf" + (100).to_bytes(8, "big")),
                     ("s", b"\xce" + (1).to_bytes(4, "big")), ("v", _pk(v)), ("m", _pk(m)), ("kit", _pk("x")))
    padded = _raw_map(("t", _pk("f")), ("s", _pk(2)), ("ts", _pk(200)), ("m", _pk(m + b"\x00")), ("v", _pk(v)))
    messages = [cal, cond, frame, padded]
    for data in messages:  # each decodes and is not what the canonical encoder writes
        assert encode(decode(data)) != data
    return messages


async def _same_bytes_non_canonical(ctx: _Ctx) -> None:
    stream = ctx.stream("noncanonical")
    c = await _open(ctx, "consumer", stream)
    p = await _open(ctx, "producer", stream)
    sent = _non_canonical()
    for data in sent:
        await p.send(data)
        await asyncio.sleep(0.01)
    for i, data in enumerate(sent):
        got = await c.recv_bytes()
        if got != data:
            raise _RuleError(f"§5.7.2 a relay forwards the producer's own bytes, never re-encoded: message {i + 1} "
                             f"({decode(data).TYPE}, valid but not canonical) arrived as {len(got)} other bytes "
                             f"instead of its {len(data)}")


async def _map_key_types(ctx: _Ctx) -> None:
    stream = ctx.stream("mapkeys")
    c = await _open(ctx, "consumer", stream)
    m, v = (msgpack.unpackb(encode(Frame(1, 1, _partial({"h_yaw": 0.5}))))[k] for k in "mv")
    bad = (msgpack.packb({"t": "f", "s": 1, "ts": 1, "m": m, "v": v, 7: 1}, use_bin_type=True),
           msgpack.packb({"t": "cond", "ts": 0, "c": {"tracking": {b"hand_l": "lost"}}}, use_bin_type=True))
    for data, where in zip(bad, ("an integer key at the top", "a bin key inside c"), strict=True):
        p = await _open(ctx, "producer", stream)
        await p.send(data)
        rule = f"§5.2 a map key that is not a str ({where})"
        try:
            await _expect_refusal(p, "decode.malformed", rule)
        except TimeoutError as exc:
            raise _RuleError(f"{rule} was accepted: no err decode.malformed, no close 4001") from exc
    with contextlib.suppress(TimeoutError):
        got = await c.recv_bytes(timeout=0.3)
        raise _RuleError(f"§5.2 a message with a non-str map key is refused, never forwarded: the consumer got "
                         f"{len(got)} bytes")


async def _late_join_no_frames(ctx: _Ctx) -> None:
    stream = ctx.stream("noframes")
    p = await _open(ctx, "producer", stream)
    cal = encode(_CAL)
    await p.send(cal)
    await asyncio.sleep(0.1)
    c = await _open(ctx, "consumer", stream)
    if await c.recv_bytes() != cal:
        raise _RuleError("§5.7.3 a late joiner gets the stream's calibration first")
    try:
        extra = await c.recv_bytes(timeout=0.3)
    except TimeoutError:
        extra = None
    if extra is not None:
        raise _RuleError("§5.7.3 a stream without frames has no start frame: the late joiner "
                         f"got a {decode(extra).TYPE} message of {len(extra)} bytes")
    data = encode(Frame(1, 1, _partial({"h_yaw": 0.5})))
    await p.send(data)
    if await c.recv_bytes() != data:
        raise _RuleError("§5.7.3 the first frame a late joiner of a frameless stream gets is "
                         "the producer's next frame, as the same bytes")


async def _origin(ctx: _Ctx) -> None:
    try:
        ws = await connect(ctx.url, subprotocols=[Subprotocol(SUBPROTOCOL)], compression=None,
                           proxy=None, open_timeout=ctx.timeout,
                           origin=Origin("https://evil.example.invalid"))
    except InvalidStatus as exc:
        if exc.response.status_code != 403:
            raise _RuleError("§5.7.9 a foreign Origin is refused with HTTP 403, got "
                             f"{exc.response.status_code}") from exc
        return
    except (OSError, InvalidHandshake, TimeoutError) as exc:
        raise _RuleError(f"§5.7.9 a foreign Origin is refused with HTTP 403, got {exc!r}") from exc
    ctx.opened.append(ws)
    raise _RuleError("§5.7.9 a browser from a foreign Origin (https://evil.example.invalid) "
                     "was accepted: it must be refused with HTTP 403")


async def _subprotocol(ctx: _Ctx) -> None:
    try:
        ws = await connect(ctx.url, subprotocols=[Subprotocol("chat.v9")], compression=None,
                           proxy=None, open_timeout=ctx.timeout)
    except (InvalidHandshake, OSError, TimeoutError):
        return  # refused in the handshake
    ctx.opened.append(ws)
    if ws.subprotocol is None or ws.subprotocol != SUBPROTOCOL:
        # a server that cannot select posewire.v1 must refuse; closing at once also refuses
        try:
            async with asyncio.timeout(ctx.timeout):
                await ws.recv()
        except ConnectionClosed:
            return
        except TimeoutError:
            pass
        raise _RuleError("§5.1 a client that does not offer posewire.v1 is refused: the relay "
                         f"accepted it (subprotocol {ws.subprotocol!r})")


async def _hello_deadline(ctx: _Ctx) -> None:
    try:
        ws = await connect(ctx.url, subprotocols=[Subprotocol(SUBPROTOCOL)], compression=None,
                           proxy=None, open_timeout=ctx.timeout)
    except (OSError, InvalidHandshake, TimeoutError) as exc:
        raise _RuleError(f"§5.1 cannot open a websocket: {exc}") from exc
    ctx.opened.append(ws)
    got = await _until_closed(ws, ctx.hello_deadline + ctx.timeout,
                              "§5.7.8 a connection without a hello is closed at the hello deadline: "
                              f"still open after {ctx.hello_deadline + ctx.timeout:.0f} s")
    code = ws.close_code
    errors = [m for m in got if isinstance(m, ErrorMessage)]
    if code not in (CLOSE_CODES["decode.state"], 1000, 1001, 1006, None) or (
            code == CLOSE_CODES["decode.state"] and errors and errors[0].code != "decode.state"):
        raise _RuleError(f"§5.7.8 the hello deadline closes with decode.state (4013) or a plain "
                         f"close, got close {code}")


async def _data_refused(ctx: _Ctx, role: str | None, rule: str) -> None:
    stream = ctx.stream("state")
    if role is None:  # data before any hello
        try:
            ws = await connect(ctx.url, subprotocols=[Subprotocol(SUBPROTOCOL)],
                               compression=None, proxy=None, open_timeout=ctx.timeout)
        except (OSError, InvalidHandshake, TimeoutError) as exc:
            raise _RuleError(f"§5.1 cannot open a websocket: {exc}") from exc
        ctx.opened.append(ws)
        client = _Client(ws, None, ctx.timeout)
    else:
        client = await _open(ctx, role, stream)
    await client.send(encode(Frame(1, 1, _partial({"h_yaw": 0.5}))))
    await _expect_refusal(client, "decode.state", rule)


async def _consumer_data(ctx: _Ctx) -> None:
    await _data_refused(ctx, "consumer", "§5.10 a data message from a consumer")


async def _data_before_hello(ctx: _Ctx) -> None:
    await _data_refused(ctx, None, "§5.10 a data message before the hello")


async def _auth_beyond_loopback(ctx: _Ctx) -> None:
    host = urlsplit(ctx.url).hostname or ""
    if is_loopback(host):
        raise _NotRunError("not run: the relay's URL is a loopback address (§5.7.5 needs a token "
                           "only beyond loopback)")
    c = await _open(ctx, "consumer", "", hello=_raw_hello(s=ctx.stream("nl")),
                    expect_welcome=False)
    await _expect_refusal(c, "decode.auth", "§5.7.5 beyond loopback a hello without a token")


def _raw_hello(**over: Any) -> bytes:
    obj: dict[str, Any] = {"t": "hello", "pv": 1, "ro": "consumer", "s": "kit", "rv":
                           REGISTRY.version, "rh": REGISTRY_HASH8, "cn": "posewire-kit"}
    obj.update(over)
    return msgpack.packb(obj, use_bin_type=True)  # type: ignore[no-any-return]


def _with_token(ctx: _Ctx, **over: Any) -> bytes:
    if ctx.token is not None:
        over.setdefault("tk", ctx.token)
    return _raw_hello(**over)


async def _version(ctx: _Ctx) -> None:
    c = await _open(ctx, "consumer", "", hello=_with_token(ctx, pv=2, s=ctx.stream("v")),
                    expect_welcome=False)
    await _expect_refusal(c, "decode.version", "§5.9.6 pv other than 1")


async def _hash(ctx: _Ctx) -> None:
    bad = bytes(b ^ 0xFF for b in REGISTRY_HASH8)
    c = await _open(ctx, "consumer", "", hello=_with_token(ctx, rh=bad, s=ctx.stream("h")),
                    expect_welcome=False)
    await _expect_refusal(c, "decode.registry",
                          "§5.9.5 the same registry version with another hash")


async def _major(ctx: _Ctx) -> None:
    major = int(REGISTRY.version.split(".")[0]) + 1
    c = await _open(ctx, "consumer", "", hello=_with_token(ctx, rv=f"{major}.0.0",
                                                           s=ctx.stream("m")),
                    expect_welcome=False)
    await _expect_refusal(c, "decode.registry", "§5.9.5 another registry MAJOR version")


async def _auth(ctx: _Ctx) -> None:
    if ctx.token is None:
        raise _NotRunError("not run: give the relay's token (--token) to check §5.7.5")
    for tk in (None, ctx.token + "x"):
        c = await _open(ctx, "consumer", "", hello=_raw_hello(s=ctx.stream("a"), **(
            {} if tk is None else {"tk": tk})), expect_welcome=False)
        await _expect_refusal(c, "decode.auth", "§5.7.5 a missing or wrong token")


async def _size(ctx: _Ctx) -> None:
    p = await _open(ctx, "producer", ctx.stream("size"))
    assert p.welcome is not None
    limit = p.welcome.max_message_bytes
    big = msgpack.packb({"t": "cond", "ts": 0, "c": {"pad": "x" * (limit + 16)}},
                        use_bin_type=True)
    await p.send(big)
    await _expect_refusal(p, "decode.too_large", f"§5.8 a message over mb = {limit} bytes")


async def _text(ctx: _Ctx) -> None:
    p = await _open(ctx, "producer", ctx.stream("text"))
    await p.send('{"t": "f"}')
    await _expect_refusal(p, "decode.type", "§5.1 a text websocket message")


async def _second_producer(ctx: _Ctx) -> None:
    stream = ctx.stream("second")
    c = await _open(ctx, "consumer", stream)
    p1 = await _open(ctx, "producer", stream)
    p2 = await _open(ctx, "producer", stream, expect_welcome=False)
    await _expect_refusal(p2, "decode.state", "§5.7.1 a second producer on a busy stream")
    data = encode(Frame(1, 1, _partial({"h_yaw": 0.5})))
    await p1.send(data)
    if await c.recv_bytes() != data:
        raise _RuleError("§5.7.1 the first producer keeps its stream after a second is refused")


async def _close_malformed(ctx: _Ctx) -> None:
    p = await _open(ctx, "producer", ctx.stream("malformed"))
    await p.send(b"\xc1")
    await _expect_refusal(p, "decode.malformed", "§5.8 close code 4001 for bad msgpack")


async def _close_unknown_type(ctx: _Ctx) -> None:
    p = await _open(ctx, "producer", ctx.stream("unknown"))
    await p.send(msgpack.packb({"t": "nope"}))
    await _expect_refusal(p, "decode.unknown_type", "§5.8 close code 4004 for an unknown t")


async def _close_bye(ctx: _Ctx) -> None:
    p = await _open(ctx, "producer", ctx.stream("bye"))
    await p.send(encode(Bye("done")))
    got, close = await p.until_closed()
    if close != 1000:
        raise _RuleError(f"§5.3 after a bye the websocket is closed with 1000, got {close}")
    if any(not isinstance(m, Bye) for m in got):
        raise _RuleError("§5.3 after a bye only a final bye answer may follow")


async def _isolation(ctx: _Ctx) -> None:
    stream = ctx.stream("isolation")
    c = await _open(ctx, "consumer", stream)
    p = await _open(ctx, "producer", stream)
    yaw = REGISTRY.index("h_yaw")  # a 16-bit dim alone: mask bit yaw (spec §5.4)
    mask = bytes(yaw // 8) + bytes([1 << (yaw % 8)])
    bad = msgpack.packb({"t": "f", "s": 1, "ts": 1, "m": mask, "v": b"\x80\x00"}, use_bin_type=True)  # q = -32768
    await p.send(bad)
    await _expect_refusal(p, "decode.out_of_range", "§5.7.2 a bad frame closes its sender")
    p2 = await _open(ctx, "producer", stream)
    data = encode(Frame(1, 2, _partial({"h_yaw": 0.25})))
    await p2.send(data)
    try:
        got = await c.recv_bytes()
    except (TimeoutError, ConnectionClosed) as exc:
        raise _RuleError("§5.7.2 a bad message closes only its sender: the consumer lost its "
                    "stream") from exc
    if got != data:
        raise _RuleError("§5.7.2 the consumer got something else than the next good frame")


async def _rate(ctx: _Ctx) -> None:
    stream = ctx.stream("rate")
    c = await _open(ctx, "consumer", stream)
    p = await _open(ctx, "producer", stream)
    assert p.welcome is not None
    mf = p.welcome.max_fps
    n = min(4 * mf, 2000)
    frames = [encode(Frame(i + 1, i, _partial({"h_yaw": 0.5}))) for i in range(n)]
    start = time.monotonic()
    closed = None
    try:
        for data in frames:
            await p.send(data)
    except ConnectionClosed:
        pass
    elapsed = time.monotonic() - start
    received: set[int] = set()
    last = start
    try:
        while True:
            m = await c.recv(timeout=0.3)
            if isinstance(m, Frame):
                received.add(m.seq)
                last = time.monotonic()
    except (TimeoutError, ConnectionClosed):
        pass
    # the relay handled every forwarded frame between our first send and its arrival here
    elapsed = max(elapsed, last - start)
    if p.ws.close_code is not None:
        closed = p.ws.close_code
    if closed == CLOSE_CODES["decode.rate"]:
        return  # §5.8: a relay MAY close instead of dropping
    allowed = max(1.0, mf * 0.25) + mf * (elapsed + 0.05) * 1.1 + 2
    if len(received) > allowed:
        raise _RuleError(f"§5.8 rate limit mf = {mf}/s (token bucket, depth max(1, mf/4)): "
                    f"{n} frames sent in {elapsed:.3f} s, {len(received)} forwarded "
                    f"(at most {allowed:.0f} allowed)")


@dataclass(frozen=True)
class Check:
    """One scripted check: its id, the rule it pins, MUST or SHOULD, and the script."""

    id: str
    rule: str
    run: Callable[[_Ctx], Awaitable[None]]
    level: str = "MUST"


CHECKS: tuple[Check, ...] = (
    Check("handshake", "§5.1/§5.3 subprotocol posewire.v1 selected; a hello gets a welcome",
          _handshake),
    Check("same-bytes-in-order", "§5.7.2 valid producer messages reach consumers as the same "
          "bytes, in order", _same_bytes),
    Check("late-join-snapshot", "§5.7.3 a late joiner gets cal, cond and the merged snapshot "
          "(newest s/ts, newest value per dim, c added)", _late_join_snapshot),
    Check("late-join-full-bytes", "§5.7.3 a full newest frame with c is sent as its bytes",
          _late_join_full_bytes),
    Check("late-join-cond-timestamp", "§5.7.3 the late joiner's cond carries the ts of the message that "
          "set the state (a frame's c: that frame's ts)", _late_join_cond_timestamp),
    Check("late-join-new-producer", "§5.7.3/§5.7.7 after a producer change the start frame "
          "holds only the new producer's dims", _late_join_new_producer),
    Check("new-producer-numbers-afresh", "§5.7.7/§5.10 a new producer's frames numbered "
          "from 0, behind its predecessor's last s, are forwarded", _new_producer_numbers_afresh),
    Check("producer-reset", "§5.10 a frame more than 1024 behind the newest is the producer's reset: "
          "forwarded, and the numbers go on from it", _producer_reset),
    Check("sequence-wrap", "§5.4/§5.10 s wraps 2³²−1 → 0 and is compared mod 2³²: the frames after the "
          "wrap are forwarded, a duplicate across it is dropped", _sequence_wrap),
    Check("same-bytes-non-canonical", "§5.7.2 valid messages that are not canonical (key order, unknown "
          "key, longer integers, float 32, a padded mask) reach consumers as the producer's bytes",
          _same_bytes_non_canonical),
    Check("map-key-types", "§5.2 a map key that is not a str (an integer, a bin inside c) is "
          "decode.malformed, close 4001, never forwarded", _map_key_types),
    Check("late-join-no-frames", "§5.7.3 a stream without frames sends no start frame; the "
          "first frame is the producer's next", _late_join_no_frames),
    Check("stale-frames", "§5.7.2 a frame behind the newest (reorder, duplicate) is neither "
          "forwarded nor kept", _stale_frames),
    Check("origin", "§5.7.9 a foreign browser Origin is refused with HTTP 403", _origin),
    Check("subprotocol", "§5.1 a client that does not offer posewire.v1 is refused",
          _subprotocol),
    Check("hello-deadline", "§5.7.8 a connection without a hello is closed at the hello "
          "deadline (4013 or a plain close)", _hello_deadline),
    Check("consumer-data", "§5.10 a data message from a consumer is decode.state, close 4013",
          _consumer_data),
    Check("data-before-hello", "§5.10 a data message before the hello is decode.state, close "
          "4013", _data_before_hello),
    Check("auth-beyond-loopback", "§5.7.5 beyond loopback a hello without a token is "
          "decode.auth, close 4012 (UNIMPLEMENTED on loopback)", _auth_beyond_loopback),
    Check("version", "§5.9.6 pv other than 1 is decode.version, close 4010", _version),
    Check("registry-hash", "§5.9.5 same version, other hash is decode.registry, close 4011",
          _hash),
    Check("registry-major", "§5.9.5 another MAJOR is decode.registry, close 4011", _major),
    Check("auth", "§5.7.5 a missing or wrong token is decode.auth, close 4012", _auth),
    Check("size", "§5.8 a message over mb is decode.too_large, close 4009", _size),
    Check("text", "§5.1 a text message is decode.type, close 4002", _text),
    Check("second-producer", "§5.7.1 a second producer is decode.state, close 4013",
          _second_producer),
    Check("close-malformed", "§5.8 bad msgpack: err decode.malformed, close 4001",
          _close_malformed),
    Check("close-unknown-type", "§5.8 unknown t: err decode.unknown_type, close 4004",
          _close_unknown_type),
    Check("close-bye", "§5.3 bye ends with close 1000", _close_bye),
    Check("isolation", "§5.7.2 a bad message closes only its sender", _isolation),
    Check("rate-limit", "§5.8 frames beyond the token bucket are dropped (or 4014)", _rate),
)


async def _run_one(check: Check, ctx: _Ctx) -> CaseResult:
    def result(passed: bool, why: str = "", skipped: bool = False) -> CaseResult:
        return CaseResult("relay", check.id, passed, why, skipped=skipped, op="relay",
                          rule=check.rule, level=check.level)

    try:
        await asyncio.wait_for(check.run(ctx), timeout=10 * ctx.timeout)
    except _RuleError as exc:
        why = str(exc)
        return result(False, why if why.startswith("§") else f"{check.rule}: {why}")
    except _NotRunError as exc:
        return result(False, str(exc), skipped=True)
    except (TimeoutError, ConnectionClosed) as exc:
        return result(False, f"{check.rule}: no answer ({type(exc).__name__})")
    except (OSError, ValueError, TypeError) as exc:  # a relay that answers nonsense
        return result(False, f"{check.rule}: {type(exc).__name__}: {exc}")
    finally:
        for ws in ctx.opened:
            await ws.close()
        ctx.opened.clear()
    return result(True)


async def run_relay_suite(url: str, *, token: str | None = None, timeout: float = 2.0,
                          only: tuple[str, ...] = (), hello_deadline: float = 10.0
                          ) -> list[CaseResult]:
    """Run :data:`CHECKS` (or the ids in ``only``) against the relay at ``url``.
    ``hello_deadline``: the longest hello deadline accepted (spec §5.7 rule 8)."""
    ctx = _Ctx(url, token, timeout, f"kit{secrets.token_hex(2)}", hello_deadline=hello_deadline)
    return [await _run_one(c, ctx) for c in CHECKS if not only or c.id in only]
