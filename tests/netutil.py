"""Helpers for the networking tests: raw protocol clients over real loopback websockets."""

from __future__ import annotations

import asyncio
import base64
import os
import socket
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

import msgpack
import numpy as np
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed
from websockets.frames import Frame as WsFrame
from websockets.frames import Opcode
from websockets.typing import Subprotocol

from posewire.codec.protocol import Connection
from posewire.codec.registry import REGISTRY
from posewire.codec.vector import DEFAULTS
from posewire.codec.wire import (
    SUBPROTOCOL,
    ErrorMessage,
    Frame,
    Hello,
    Message,
    Welcome,
    decode,
    encode,
)

__all__ = ["TIMEOUT", "Closed", "RawClient", "open_raw", "padded_frame", "raw_upgrade",
           "upgrade_request", "wait_for"]

#: Upper bound for any single wait in these tests (seconds).
TIMEOUT = 2.0


@dataclass
class Closed:
    """How a connection ended: the messages received before, and the close code."""

    messages: list[Message] = field(default_factory=list)
    code: int | None = None
    reason: str = ""

    @property
    def error(self) -> ErrorMessage | None:
        errs = [m for m in self.messages if isinstance(m, ErrorMessage)]
        return errs[0] if errs else None


@dataclass
class RawClient:
    """A websocket speaking posewire by hand (to send bad data on purpose)."""

    ws: ClientConnection
    conn: Connection

    async def send(self, msg: Message) -> None:
        await self.ws.send(self.conn.send(msg))

    async def recv(self) -> Message:
        async with asyncio.timeout(TIMEOUT):
            data = await self.ws.recv()
        assert isinstance(data, bytes)
        return decode(data)

    async def until_closed(self) -> Closed:
        """Read everything until the relay closes the connection."""
        out = Closed()
        try:
            async with asyncio.timeout(TIMEOUT):
                async for data in self.ws:
                    assert isinstance(data, bytes)
                    out.messages.append(decode(data, max_size=1 << 20))
        except ConnectionClosed:
            pass
        await self.ws.wait_closed()
        if self.ws.close_code is not None:
            out.code = self.ws.close_code
            out.reason = self.ws.close_reason or ""
        return out


async def open_raw(url: str, role: Literal["producer", "consumer"], stream: str, *,
                   token: str | None = None, hello: Hello | bytes | None = None,
                   welcome: bool = True, rcvbuf: int | None = None,
                   max_queue: int = 16,
                   connection_class: type[ClientConnection] | None = None) -> RawClient:
    """Connect and send a hello (``hello`` overrides it); with ``welcome``, expect it.
    ``connection_class``: a websockets ``ClientConnection`` subclass (to watch frames)."""
    kwargs: dict[str, object] = {}
    if connection_class is not None:
        kwargs["create_connection"] = connection_class
    if rcvbuf is not None:
        host, port = url.removeprefix("ws://").rsplit(":", 1)
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        sock.setblocking(False)
        await asyncio.get_running_loop().sock_connect(sock, (host, int(port)))
        kwargs["sock"] = sock
    ws = await connect(url, subprotocols=[Subprotocol(SUBPROTOCOL)], compression=None,
                       proxy=None, max_queue=max_queue, **kwargs)  # type: ignore[arg-type]
    conn = Connection(side="client", role=role)
    client = RawClient(ws, conn)
    if hello is None:
        await ws.send(conn.hello(stream, token=token))
    else:  # bytes: a hello no encoder writes (spec §5.3: an encoder writes pv = 1 only)
        await ws.send(hello if isinstance(hello, bytes) else encode(hello))
    if welcome:
        msg = await client.recv()
        assert isinstance(msg, Welcome), msg
        conn.receive_data(encode(msg))
    return client


def upgrade_request(port: int, headers: str = "") -> bytes:
    """A WebSocket upgrade request for the posewire subprotocol (RFC 6455 §4.1);
    ``headers``: more header lines, each ending with CRLF."""
    key = base64.b64encode(os.urandom(16)).decode()
    return (f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\n"
            f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n"
            f"Sec-WebSocket-Protocol: {SUBPROTOCOL}\r\n{headers}\r\n").encode()


async def raw_upgrade(port: int, *, source: str = "127.0.0.1", rcvbuf: int | None = None,
                      hello: bytes = b"", welcome: bool = False, pieces: int = 1,
                      spread: float = 0.0, pause: asyncio.Event | None = None,
                      timeout: float = TIMEOUT) -> socket.socket:
    """A WebSocket client on a raw socket from loopback address ``source`` to the relay
    on ``port``: the upgrade request — in ``pieces`` pieces, one every ``spread`` /
    ``pieces`` s, the last ``spread`` s after the connect (a slow link; with ``pause``,
    each piece after the first waits for that event instead) — and the 101
    answer read byte by byte (nothing after it is read); then ``hello`` (encoded
    posewire message, if any) as a masked binary frame and, with ``welcome``, the relay's
    answer read and checked to be a welcome. Raises :class:`ConnectionError` when the
    relay closes or answers otherwise; the socket is the caller's to close."""
    loop = asyncio.get_running_loop()
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        if rcvbuf is not None:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        sock.bind((source, 0))
        sock.setblocking(False)
        async with asyncio.timeout(timeout + spread):
            await loop.sock_connect(sock, ("127.0.0.1", port))
            request = upgrade_request(port)
            cut = [len(request) * i // pieces for i in range(pieces + 1)]
            for i in range(pieces):
                if pause is not None and i:
                    await pause.wait()
                elif spread:
                    await asyncio.sleep(spread / pieces)
                await loop.sock_sendall(sock, request[cut[i]:cut[i + 1]])
            head = b""
            while not head.endswith(b"\r\n\r\n"):
                byte = await loop.sock_recv(sock, 1)
                if not byte:
                    raise ConnectionError("closed before the upgrade")
                head += byte
            if not head.startswith(b"HTTP/1.1 101 "):
                raise ConnectionError(head.split(b"\r\n", 1)[0].decode(errors="replace"))
            if hello:
                await loop.sock_sendall(sock, WsFrame(Opcode.BINARY, hello).serialize(
                    mask=True, extensions=[]))
            if welcome:
                header = await loop.sock_recv(sock, 2)
                if len(header) < 2 or header[0] != 0x82 or header[1] >= 126:
                    raise ConnectionError(f"not a short binary frame: {header!r}")
                body = b""
                while len(body) < header[1]:
                    chunk = await loop.sock_recv(sock, header[1] - len(body))
                    if not chunk:
                        raise ConnectionError("closed before the welcome")
                    body += chunk
                if not isinstance(decode(body), Welcome):
                    raise ConnectionError(f"not a welcome: {decode(body)!r}")
    except BaseException:
        sock.close()
        raise
    return sock


async def wait_for(predicate: Callable[[], bool], *, timeout: float = TIMEOUT) -> None:
    """Poll ``predicate`` on the loop (for relay-side state that has no event)."""
    async with asyncio.timeout(timeout):
        while not predicate():
            await asyncio.sleep(0.002)


def padded_frame(seq: int, yaw: float, size: int) -> bytes:
    """A valid full frame (``h_yaw`` = ``yaw``) of exactly ``size`` bytes (at least 300):
    an unknown key pads it (spec §5.9 rule 4: ignored)."""
    values = np.array(DEFAULTS, dtype=np.float64)
    values[REGISTRY.index("h_yaw")] = yaw
    obj = msgpack.unpackb(encode(Frame(seq, 1000 + seq, values)))
    obj["zz"] = ""
    pad = size - len(msgpack.packb(obj))
    # a str8 (2-byte header, up to 255 bytes) or str16 (3-byte header) replaces a 1-byte fixstr
    obj["zz"] = "x" * (pad - 1 if pad - 1 <= 255 else pad - 2)
    data = bytes(msgpack.packb(obj))
    assert len(data) == size
    return data
