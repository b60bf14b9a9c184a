"""A small relay with switchable, deliberate faults, for testing the kit's relay suite.

Built on the sans-I/O :class:`posewire.codec.protocol.Connection` and real websockets. With
no fault switched on it follows spec §5.7 closely enough for the suite; each switch breaks
one rule:

* ``ignore_hash`` — a hello's registry hash is not compared (§5.9.5);
* ``stored_late_join`` — a late joiner gets the latest frame's bytes as received, not the
  merged snapshot of §5.7.3;
* ``no_rate_limit`` — frames are never rate limited (§5.8);
* ``no_size_limit`` — messages over the announced ``mb`` are accepted (§5.8);
* ``mixed_producers`` — the merged snapshot is kept across a producer change, so the start
  frame mixes the old producer's dims under the new one's ``s`` (§5.7 rules 3 and 7);
* ``forward_stale`` — frames behind the newest ``s`` are forwarded and kept (§5.7 rule 2);
* ``keep_sequence`` — a new producer's frames are checked against the previous producer's
  ``s``, so one that restarts from 0 is dropped as stale (§5.7 rules 2 and 7, §5.10);
* ``ignore_origin`` — a browser from any ``Origin`` is accepted (§5.7 rule 9);
* ``any_subprotocol`` — a client that does not offer ``posewire.v1`` is accepted (§5.1);
* ``no_hello_deadline`` — a connection that never says hello stays open (§5.7 rule 8);
* ``consumer_data`` — data messages from a consumer are ignored, not refused (§5.10);
* ``data_before_hello`` — data messages before the hello are ignored, not refused (§5.10);
* ``frameless_start_frame`` — a stream without frames still gets a (empty) start frame
  (§5.7 rule 3);
* ``no_auth`` — with ``host`` beyond loopback, hellos without a token are accepted
  (§5.7 rule 5; without the fault such a relay requires ``token``);
* ``oversize_after_welcome`` — right after each welcome the relay sends a message of
  1 MiB + 1 byte, over every client's limit, so each link dies at once (§5.8, §5.10);
* ``close_after_welcome`` — right after each welcome the relay closes the link (1011);
* ``no_reset`` — every frame behind the newest ``s`` is dropped as stale, however far behind:
  a producer's reset (more than 1024 behind, §5.10) never gets through;
* ``no_wrap`` — sequence numbers are compared as plain integers, not mod 2³² (§5.4, §5.10):
  a duplicate of 2³²−1 after the wrap to 0 reads as ahead and is forwarded;
* ``reencode`` — data messages are forwarded re-encoded canonically, not as the producer's
  bytes (§5.7 rule 2);
* ``any_map_keys`` — a map key that is not a str is dropped before validation instead of
  refusing the message (§5.2), and the message is forwarded;
* ``cond_newest_ts`` — a late joiner's ``cond`` carries the newest frame's ``ts``, not that of
  the frame whose ``c`` set the state (§5.7 rule 3).

``welcomes``: a list the relay appends the loop time of each welcome to.

With no fault the relay keeps each of these rules: stale frames dropped, Origin checked
(only origins without one, or this relay's own), the subprotocol required, a 3 s hello
deadline, data only from a producer after its hello, no start frame without frames.
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field, replace

import msgpack
import numpy as np
from websockets.asyncio.server import ServerConnection, serve
from websockets.exceptions import ConnectionClosed
from websockets.http11 import Request, Response
from websockets.typing import Subprotocol

from posewire.codec.errors import DecodeError
from posewire.codec.protocol import Connection, Limits, ProtocolFailure, Received
from posewire.codec.vector import N_DIMS
from posewire.codec.wire import (
    REGISTRY_HASH8,
    SUBPROTOCOL,
    Calibration,
    ConditionsMessage,
    Frame,
    Hello,
    Welcome,
    decode,
    encode,
)

__all__ = ["broken_relay"]


@dataclass
class _Stream:
    producer: ServerConnection | None = None
    consumers: set[ServerConnection] = field(default_factory=set)
    cal: bytes | None = None
    cond: ConditionsMessage | None = None
    last_frame: bytes | None = None
    values: np.ndarray = field(default_factory=lambda: np.full(N_DIMS, np.nan))
    seq: int = 0
    ts: int = 0
    fresh: bool = False
    restart: bool = False
    has_frame: bool = False


@contextlib.asynccontextmanager
async def broken_relay(*, ignore_hash: bool = False, stored_late_join: bool = False,
                       no_rate_limit: bool = False, no_size_limit: bool = False,
                       mixed_producers: bool = False, forward_stale: bool = False,
                       keep_sequence: bool = False,
                       ignore_origin: bool = False, any_subprotocol: bool = False,
                       no_hello_deadline: bool = False, consumer_data: bool = False,
                       data_before_hello: bool = False, frameless_start_frame: bool = False,
                       no_auth: bool = False, oversize_after_welcome: bool = False,
                       close_after_welcome: bool = False, welcomes: list[float] | None = None,
                       no_reset: bool = False, no_wrap: bool = False,
                       reencode: bool = False, any_map_keys: bool = False, cond_newest_ts: bool = False,
                       host: str = "127.0.0.1",
                       token: str | None = None) -> AsyncIterator[str]:
    streams: dict[str, _Stream] = {}
    tasks: set[asyncio.Future[None]] = set()
    limits = Limits()
    loopback = host in ("127.0.0.1", "::1", "localhost")
    required = None if (loopback or no_auth) else (token or "broken-token")

    def check_request(ws: ServerConnection, request: Request) -> Response | None:
        origin = request.headers.get("Origin")
        if not ignore_origin and origin is not None and origin != f"http://{host}":
            return ws.respond(403, "origin not allowed\n")  # spec §5.7 rule 9
        offered = request.headers.get("Sec-WebSocket-Protocol") or ""
        if not any_subprotocol and SUBPROTOCOL not in [p.strip() for p in offered.split(",")]:
            return ws.respond(400, "posewire.v1 required\n")  # spec §5.1
        return None

    async def fail(ws: ServerConnection, failure: ProtocolFailure) -> None:
        if failure.reply:
            await ws.send(failure.reply)
        await ws.close(failure.close_code)

    async def handler(ws: ServerConnection) -> None:
        conn = Connection(side="server", limits=replace(
            limits, max_message_bytes=1 << 20) if no_size_limit else limits)
        stream: _Stream | None = None
        role = ""

        async def overdue() -> None:  # spec §5.7 rule 8: no hello within 3 s
            with contextlib.suppress(Exception):
                await fail(ws, conn.fail(DecodeError("decode.state", "no hello", path="$")))

        deadline = None if no_hello_deadline else asyncio.get_running_loop().call_later(
            3.0, lambda: tasks.add(asyncio.ensure_future(overdue())))
        try:
            async for data in ws:
                if isinstance(data, str):
                    await fail(ws, conn.fail(DecodeError("decode.type", "text", path="$")))
                    return
                if ignore_hash and conn.peer_hello is None:
                    with contextlib.suppress(DecodeError):
                        h = decode(data)
                        if isinstance(h, Hello):
                            data = encode(replace(h, registry_hash=REGISTRY_HASH8))
                if conn.peer_hello is None or role == "consumer":
                    with contextlib.suppress(DecodeError):
                        first = decode(data)
                        if isinstance(first, Calibration | ConditionsMessage | Frame) and (
                                (conn.peer_hello is None and data_before_hello)
                                or (role == "consumer" and consumer_data)):
                            continue  # the fault: data ignored instead of refused (§5.10)
                received = data
                if any_map_keys:  # the fault: non-str keys dropped, the rest judged (§5.2)
                    data = _without_foreign_keys(data)
                for ev in conn.receive_data(data, now=None if no_rate_limit else time.monotonic()):
                    if isinstance(ev, ProtocolFailure):
                        await fail(ws, ev)
                        return
                    if not isinstance(ev, Received):
                        continue
                    msg = ev.message
                    if isinstance(msg, Hello):
                        if deadline is not None:
                            deadline.cancel()
                        if required is not None and msg.token != required:
                            await fail(ws, conn.fail(DecodeError("decode.auth", "token",
                                                                 path="tk")))
                            return
                        stream = streams.setdefault(msg.stream, _Stream())
                        role = msg.role
                        if role == "producer" and stream.producer is not None:
                            await fail(ws, conn.fail(DecodeError("decode.state", "busy", path="s")))
                            return
                        # the welcome announces the default limits, whatever is enforced
                        await ws.send(conn.send(Welcome(secrets.token_hex(4))))
                        if welcomes is not None:
                            welcomes.append(time.monotonic())
                        if oversize_after_welcome:  # the fault: over every client's limit
                            await ws.send(bytes((1 << 20) + 1))
                        if close_after_welcome:  # the fault: the link dies at once
                            await ws.close(1011)
                            return
                        if role == "producer":
                            stream.producer = ws
                            stream.restart = not keep_sequence  # its numbers start afresh
                            if not mixed_producers:  # spec §5.7 rule 3: one producer's
                                stream.fresh = True
                        else:
                            stream.consumers.add(ws)
                            await _late_join(ws, stream, stored=stored_late_join,
                                             frameless=frameless_start_frame, cond_newest_ts=cond_newest_ts)
                        continue
                    if stream is None or role != "producer":
                        continue
                    if isinstance(msg, Calibration):
                        stream.cal = data
                    elif isinstance(msg, ConditionsMessage):
                        stream.cond = msg
                    elif isinstance(msg, Frame):
                        if no_wrap:  # the fault: plain integers, no wrap (§5.4)
                            behind = stream.has_frame and 0 < stream.seq - msg.seq <= 1024
                        else:  # spec §5.10: mod 2³²; the fault no_reset: no 1024 window
                            behind = stream.has_frame and 0 < (stream.seq - msg.seq) % 2**32 <= (
                                2**31 if no_reset else 1024)
                        if (behind or (stream.has_frame and msg.seq == stream.seq)) and not (
                                forward_stale or stream.restart):
                            continue  # spec §5.7 rule 2: dropped, neither sent nor kept
                        stream.has_frame = True
                        stream.restart = False
                        if stream.fresh:
                            stream.values = np.full(N_DIMS, np.nan)
                            stream.fresh = False
                        stream.last_frame = data
                        present = ~np.isnan(msg.values)
                        stream.values[present] = msg.values[present]
                        stream.seq, stream.ts = msg.seq, msg.timestamp_us
                        if msg.conditions is not None:
                            stream.cond = ConditionsMessage(msg.conditions, msg.timestamp_us)
                    out = encode(msg) if reencode else received  # spec §5.7 rule 2: the same bytes
                    for c in list(stream.consumers):
                        with contextlib.suppress(ConnectionClosed):
                            await c.send(out)
                if conn.close_code is not None:  # a bye: orderly close
                    await ws.close(1000)
                    return
        except ConnectionClosed:
            pass
        finally:
            if deadline is not None:
                deadline.cancel()
            if stream is not None:
                stream.consumers.discard(ws)
                if stream.producer is ws:
                    stream.producer = None

    async with serve(handler, host, 0, subprotocols=[Subprotocol(SUBPROTOCOL)],
                     select_subprotocol=lambda ws, offered: (
                         Subprotocol(SUBPROTOCOL) if SUBPROTOCOL in offered else None),
                     process_request=check_request,
                     compression=None, max_size=1 << 21) as server:
        port = server.sockets[0].getsockname()[1] if server.sockets else 0
        yield f"ws://{host}:{port}"


def _without_foreign_keys(data: bytes) -> bytes:
    """``data`` with every map key that is not a str left out, at any depth (the fault
    ``any_map_keys``); bytes that are not msgpack are returned as they are."""
    def strip(obj: object) -> object:
        if isinstance(obj, dict):
            return {k: strip(v) for k, v in obj.items() if isinstance(k, str)}
        if isinstance(obj, list):
            return [strip(v) for v in obj]
        return obj

    try:
        obj = msgpack.unpackb(data, strict_map_key=False, raw=False)
    except (ValueError, msgpack.UnpackException):
        return data
    return msgpack.packb(strip(obj), use_bin_type=True)  # type: ignore[no-any-return]


async def _late_join(ws: ServerConnection, stream: _Stream, *, stored: bool,
                     frameless: bool = False, cond_newest_ts: bool = False) -> None:
    if stream.cal is not None:
        await ws.send(stream.cal)
    if stream.cond is not None:  # the fault cond_newest_ts: the newest frame's ts instead
        await ws.send(encode(replace(stream.cond, timestamp_us=stream.ts) if cond_newest_ts else stream.cond))
    if stream.last_frame is None:
        if frameless and stream.cal is not None:  # the fault: a start frame for a stream
            # that has calibration but no frame (consumers that come first see no change)
            await ws.send(encode(Frame(0, 0, np.full(N_DIMS, np.nan))))
        return
    if stored:  # the fault: the latest frame as it came, partial and without c
        await ws.send(stream.last_frame)
        return
    cond = stream.cond.conditions if stream.cond is not None else None
    await ws.send(encode(Frame(stream.seq, stream.ts, stream.values.copy(), cond)))


async def _main() -> None:  # pragma: no cover - manual use
    async with broken_relay(stored_late_join=True) as url:
        print(url)
        await asyncio.sleep(3600)
