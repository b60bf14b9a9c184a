"""Conformance of a producer over the wire (spec §5, §6.8).

``posewire conformance --producer`` listens as a relay would, accepts one producer
(any implementation, any language), answers its hello with a welcome and watches what it
sends for a while. Each rule below becomes one :class:`~posewire.conformance.CaseResult`
(file ``producer``): OK when every message kept it, FAILED (or NON-STRICT for a SHOULD)
naming the first message that broke it, UNIMPLEMENTED when nothing exercised it.
"""

from __future__ import annotations

import asyncio
import hmac
import time
from dataclasses import dataclass, field

import numpy as np
from websockets.asyncio.server import ServerConnection, serve
from websockets.exceptions import ConnectionClosed
from websockets.typing import Subprotocol

from posewire.codec.errors import DecodeError, UsageError
from posewire.codec.ieee import ordered_norm1
from posewire.codec.quaternion import PALM_CLAMP
from posewire.codec.registry import REGISTRY
from posewire.codec.wire import (
    DEFAULT_MAX_FPS,
    DEFAULT_MAX_MESSAGE_BYTES,
    REGISTRY_HASH8,
    SUBPROTOCOL,
    Bye,
    Calibration,
    ConditionsMessage,
    Frame,
    Hello,
    Message,
    Welcome,
    decode,
    encode,
)

from . import CaseResult

__all__ = ["PRODUCER_RULES", "watch_producer"]

#: id -> (rule, level): what the kit checks of a producer's messages.
PRODUCER_RULES: dict[str, tuple[str, str]] = {
    "subprotocol": ("§5.1 the client offers the subprotocol posewire.v1", "MUST"),
    "hello": ("§5.3 the first message is a valid hello with role producer and pv 1", "MUST"),
    "registry": ("§5.9.5 the hello's registry version and hash match the kit's "
                 "(same MAJOR; same version means same hash)", "MUST"),
    "binary": ("§5.1 every message is one binary websocket message", "MUST"),
    "decodes": ("§5.2 every message decodes without error", "MUST"),
    "canonical": ("§5.2 every message is in the canonical encoding (key order, shortest "
                  "integers, float 64, trailing zero mask bytes dropped)", "MUST"),
    "size": ("§5.8 every message is at most mb bytes", "MUST"),
    "data-only": ("§5.10 after the welcome a producer sends only cal, f, cond or bye",
                  "MUST"),
    "sequence": ("§5.4 s grows by exactly 1 per frame (mod 2^32)", "MUST"),
    "timestamps": ("§5.4 ts is on a monotonic clock: it never decreases", "MUST"),
    "palm-clamp": ("§4.2/§5.4 a palm vector part arrives with |v| <= 0.98", "MUST"),
    "calibration": ("§5.6 a producer sends calibration after the welcome", "SHOULD"),
    "rate": ("§5.8 frames per second stay within the welcome's mf", "SHOULD"),
}


@dataclass
class _Watch:
    token: str | None
    frames_wanted: int
    seconds: float
    broken: dict[str, str] = field(default_factory=dict)
    seen: set[str] = field(default_factory=set)
    frames: int = 0
    frame_times: list[float] = field(default_factory=list)
    done: asyncio.Event = field(default_factory=asyncio.Event)

    def ok(self, rule: str) -> None:
        self.seen.add(rule)

    def fail(self, rule: str, why: str) -> None:
        self.seen.add(rule)
        self.broken.setdefault(rule, why)


def _palm_ok(frame: Frame) -> bool:
    for side in "lr":
        idx = [REGISTRY.index(f"w_q{a}_{side}") for a in "xyz"]
        v = frame.values[idx]
        # spec §5.4, §1.5: |q / 32767| as sqrt((a·a + b·b) + c·c), no slack (the encoder
        # decided on the same arithmetic; np.linalg.norm's order is the BLAS kernel's)
        if not np.isnan(v).any() and ordered_norm1(tuple(v.tolist())) > PALM_CLAMP:
            return False
    return True


async def _handle(ws: ServerConnection, watch: _Watch) -> None:
    if ws.subprotocol == SUBPROTOCOL:
        watch.ok("subprotocol")
    else:
        offered = ws.request.headers.get_all("Sec-WebSocket-Protocol") if ws.request else []
        watch.fail("subprotocol", f"the client offered {offered}")
    try:
        first = await ws.recv()
        if not isinstance(first, bytes):
            watch.fail("binary", "the hello is a text message")
            return
        try:
            hello = decode(first)
        except DecodeError as exc:
            watch.fail("hello", f"the first message does not decode: {exc.code} at {exc.path}")
            return
        if not isinstance(hello, Hello) or hello.role != "producer":
            watch.fail("hello", f"the first message is {hello!r}, not a producer hello")
            return
        watch.ok("hello")
        same_major = hello.registry_version.split(".")[0] == REGISTRY.version.split(".")[0]
        if not same_major or (hello.registry_version == REGISTRY.version
                              and hello.registry_hash != REGISTRY_HASH8):
            watch.fail("registry", f"hello has registry {hello.registry_version} hash "
                       f"{hello.registry_hash.hex()}; the kit has {REGISTRY.version} "
                       f"{REGISTRY_HASH8.hex()}")
            return
        watch.ok("registry")
        if watch.token is not None and (hello.token is None or not hmac.compare_digest(
                hello.token.encode(), watch.token.encode())):
            watch.fail("hello", "the hello lacks the token the kit was given (--token)")
            return
        await ws.send(encode(Welcome("kit-producer-check")))
        await _watch_messages(ws, watch)
    except ConnectionClosed:
        pass
    finally:
        watch.done.set()


async def _watch_messages(ws: ServerConnection, watch: _Watch) -> None:
    last_seq: int | None = None
    last_ts: int | None = None
    start = time.monotonic()
    while watch.frames_wanted <= 0 or watch.frames < watch.frames_wanted:
        left = watch.seconds - (time.monotonic() - start)
        if watch.frames_wanted <= 0 and left <= 0:
            return
        try:
            async with asyncio.timeout(max(left, 0.01) if watch.frames_wanted <= 0
                                       else watch.seconds):
                data = await ws.recv()
        except TimeoutError:
            return
        n = watch.frames + 1
        if not isinstance(data, bytes):
            watch.fail("binary", f"a text message after {watch.frames} frames")
            continue
        watch.ok("binary")
        if len(data) > DEFAULT_MAX_MESSAGE_BYTES:
            watch.fail("size", f"a message of {len(data)} bytes (mb = "
                       f"{DEFAULT_MAX_MESSAGE_BYTES})")
        else:
            watch.ok("size")
        try:
            msg: Message = decode(data, max_size=1 << 20)
        except DecodeError as exc:
            watch.fail("decodes", f"message after frame {watch.frames}: {exc.code} at "
                       f"{exc.path or '$'}")
            continue
        watch.ok("decodes")
        try:
            canonical = encode(msg)
        except UsageError:
            canonical = b""
        if canonical == data:
            watch.ok("canonical")
        else:
            watch.fail("canonical", f"a {msg.TYPE} message differs from its canonical bytes "
                       f"({data[:24].hex()}… vs {canonical[:24].hex()}…)")
        if isinstance(msg, Bye):
            return
        if not isinstance(msg, Frame | Calibration | ConditionsMessage):
            watch.fail("data-only", f"a {msg.TYPE} message after the welcome")
            continue
        watch.ok("data-only")
        if isinstance(msg, Calibration):
            if watch.frames == 0:
                watch.ok("calibration")
            continue
        if not isinstance(msg, Frame):
            continue
        if watch.frames == 0 and "calibration" not in watch.seen:
            watch.fail("calibration", "the first frame came before any calibration")
        watch.frames = n
        watch.frame_times.append(time.monotonic())
        if last_seq is not None:
            if msg.seq == (last_seq + 1) % 2**32:
                watch.ok("sequence")
            else:
                watch.fail("sequence", f"frame {n}: s = {msg.seq} after {last_seq}")
        if last_ts is not None:
            if msg.timestamp_us >= last_ts:
                watch.ok("timestamps")
            else:
                watch.fail("timestamps", f"frame {n}: ts = {msg.timestamp_us} after {last_ts}")
        last_seq, last_ts = msg.seq, msg.timestamp_us
        if _palm_ok(msg):
            watch.ok("palm-clamp")
        else:
            watch.fail("palm-clamp", f"frame {n} (s = {msg.seq}) has a palm |v| > 0.98")
    await ws.send(encode(Bye("posewire conformance: done")))


def _rate(watch: _Watch) -> None:
    times = watch.frame_times
    depth = max(1.0, DEFAULT_MAX_FPS * 0.25)
    if len(times) < 2:
        return
    # the token bucket of §5.8 over the frames seen: a frame finding it empty is over the rate
    tokens, last = depth, times[0]
    for i, t in enumerate(times):
        tokens = min(depth, tokens + (t - last) * DEFAULT_MAX_FPS)
        last = t
        if tokens < 1.0:
            watch.fail("rate", f"frame {i + 1} exceeds mf = {DEFAULT_MAX_FPS}/s")
            return
        tokens -= 1.0
    watch.ok("rate")


async def watch_producer(host: str, port: int, *, token: str | None = None,
                         seconds: float = 5.0, frames: int = 0, timeout: float = 60.0,
                         ready: asyncio.Event | None = None) -> list[CaseResult]:
    """Listen on ``host:port``, accept one producer, watch it for ``seconds`` (or until
    ``frames`` frames), and judge every rule of :data:`PRODUCER_RULES`. ``ready`` is set
    once the socket listens (for callers that start the producer themselves)."""
    watch = _Watch(token, frames, seconds)
    busy = False

    async def handler(ws: ServerConnection) -> None:
        nonlocal busy
        if busy:
            await ws.close(1013, "the kit checks one producer at a time")
            return
        busy = True
        await _handle(ws, watch)

    async with serve(handler, host, port, subprotocols=[Subprotocol(SUBPROTOCOL)],
                     compression=None, max_size=1 << 20):
        if ready is not None:
            ready.set()
        try:
            await asyncio.wait_for(watch.done.wait(), timeout=timeout)
        except TimeoutError:
            watch.fail("hello", f"no producer connected within {timeout:.0f} s")
    _rate(watch)
    out = []
    for rid, (rule, level) in PRODUCER_RULES.items():
        if rid in watch.broken:
            out.append(CaseResult("producer", rid, False, watch.broken[rid], op="producer",
                                  rule=rule, level=level))
        elif rid in watch.seen:
            out.append(CaseResult("producer", rid, True, "", op="producer", rule=rule,
                                  level=level))
        else:
            out.append(CaseResult("producer", rid, False, "not exercised by this producer",
                                  skipped=True, op="producer", rule=rule, level=level))
    return out
