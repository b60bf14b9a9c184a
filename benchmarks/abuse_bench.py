"""What a client sends cannot buy it more than the rules give (wrong tokens, a Subscriber's
backoff, IDN origins, pings that pile up, window acks, frame length; spec §5.7 rules 4, 5, 9,
11, §5.10): each row re-run against a real ``posewire serve`` process on loopback.

Run: ``.venv/bin/python benchmarks/abuse_bench.py [--only tokens,pings,forged,length,origin,backoff]
[--seconds S] [--json PATH]``.

* ``tokens`` — 16 concurrent connections from one address (then from each of 8
  addresses, 127.0.0.1–8) send hellos with wrong tokens for ``--seconds``: wrong-token
  answers (``decode.auth``) per second per address, and the refusals unchecked
  (``decode.rate``);
* ``pings`` — a consumer that never reads sends 32 MiB of 125-byte pings as fast as the
  relay takes them: the relay's RSS before, at most during and after, and whether (and
  when) the relay closed it;
* ``forged`` — a consumer that never reads sends forged window pongs (every mark, in the
  old 12-byte form and with 8 random bytes after) for 6 s of a 60 Hz stream: the frames it
  received (read afterwards from its large receive buffer) and whether it was closed;
* ``length`` — a frame whose 64-bit length has its high bit set: the close code;
* ``origin`` — a relay with ``--allow-origin https://bücher.example``: the HTTP status for
  the punycode Origin a browser sends, and the start-up line naming the origins;
* ``backoff`` — the Python Subscriber and Publisher against a relay (tests/brokenrelay.py)
  that sends a message over 1 MiB (the Subscriber) or closes (the Publisher) right after
  each welcome: connects in 4 s.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))
import relay_bench  # noqa: E402  (free port, waiting for the relay, stopping it)

MiB = 1 << 20


def _rss(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def _serve(folder: Path, *extra: str) -> tuple[subprocess.Popen[bytes], int, Path]:
    port = relay_bench._free_port()
    log_path = folder / f"relay-{port}.log"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("POSEWIRE_TOKEN", None)
    with open(log_path, "wb") as log:
        proc = subprocess.Popen([sys.executable, "-m", "posewire.cli", "serve", "--port", str(port),
                                 "--status-every", "0", *extra],
                                stdout=log, stderr=subprocess.STDOUT, env=env, cwd=ROOT)
    relay_bench._wait_port(port, proc, 30.0)
    return proc, port, log_path


async def _handshake(port: int, *, source: str = "127.0.0.1", rcvbuf: int | None = None,
                     hello: bytes | None = None) -> socket.socket:
    """A raw WebSocket client: the upgrade and (unless ``hello`` is b"") a consumer hello;
    the relay's answer is left unread."""
    from websockets.frames import Frame as WsFrame
    from websockets.frames import Opcode

    from posewire.codec.protocol import Connection
    from posewire.codec.wire import SUBPROTOCOL

    loop = asyncio.get_running_loop()
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if rcvbuf is not None:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    sock.bind((source, 0))
    sock.setblocking(False)
    await loop.sock_connect(sock, ("127.0.0.1", port))
    key = base64.b64encode(os.urandom(16)).decode()
    await loop.sock_sendall(sock, (
        f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\n"
        f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n"
        f"Sec-WebSocket-Protocol: {SUBPROTOCOL}\r\n\r\n").encode())
    head = b""
    async with asyncio.timeout(10):
        while not head.endswith(b"\r\n\r\n"):
            byte = await loop.sock_recv(sock, 1)
            if not byte:
                sock.close()
                raise ConnectionError("closed before the upgrade")
            head += byte
    if hello is None:
        hello = Connection(side="client", role="consumer").hello("bench")
    if hello:
        await loop.sock_sendall(sock, WsFrame(Opcode.BINARY, hello).serialize(mask=True, extensions=[]))
    return sock


async def _read_messages(sock: socket.socket, span: float, *, first: bool = False
                         ) -> list[tuple[int, bytes]]:
    """Read unmasked server frames for up to ``span`` s (``first``: until the first binary
    or close frame): [(opcode, payload)]."""
    loop = asyncio.get_running_loop()
    buf = b""
    out: list[tuple[int, bytes]] = []
    end = time.monotonic() + span
    while time.monotonic() < end:
        try:
            async with asyncio.timeout(max(0.01, end - time.monotonic())):
                chunk = await loop.sock_recv(sock, 1 << 16)
        except (TimeoutError, OSError):
            break
        if not chunk:
            break
        buf += chunk
        while len(buf) >= 2:
            n, at = buf[1] & 0x7F, 2
            if n == 126:
                if len(buf) < 4:
                    break
                n, at = int.from_bytes(buf[2:4], "big"), 4
            elif n == 127:
                if len(buf) < 10:
                    break
                n, at = int.from_bytes(buf[2:10], "big"), 10
            if len(buf) < at + n:
                break
            out.append((buf[0] & 0x0F, buf[at:at + n]))
            buf = buf[at + n:]
            if first and out[-1][0] in (2, 8):
                return out
    return out


# ---------------------------------------------------------------- tokens


async def _guess(port: int, source: str, seconds: float, workers: int) -> dict[str, int]:
    from posewire.codec.protocol import Connection
    from posewire.codec.wire import ErrorMessage, decode

    counts: dict[str, int] = {}
    stop = time.monotonic() + seconds

    async def worker() -> None:
        while time.monotonic() < stop:
            hello = Connection(side="client", role="consumer").hello(
                "bench", token=base64.urlsafe_b64encode(os.urandom(16)).decode())
            what = "refused"
            try:
                sock = await _handshake(port, source=source, hello=hello)
            except (OSError, TimeoutError):
                counts[what] = counts.get(what, 0) + 1
                await asyncio.sleep(0.01)
                continue
            try:
                for opcode, payload in await _read_messages(sock, 6.0, first=True):
                    if opcode == 2:
                        msg = decode(payload, max_size=1 << 20)
                        what = msg.code if isinstance(msg, ErrorMessage) else msg.TYPE
                        break
                else:
                    what = "closed"
            finally:
                sock.close()
            counts[what] = counts.get(what, 0) + 1

    await asyncio.gather(*(worker() for _ in range(workers)))
    return counts


async def bench_tokens(folder: Path, seconds: float) -> dict[str, Any]:
    import secrets

    proc, port, _ = _serve(folder, "--token", secrets.token_urlsafe(32))
    try:
        one = await _guess(port, "127.0.0.1", seconds, 16)
        await asyncio.sleep(0.5)
        sources = [f"127.0.0.{i}" for i in range(11, 19)]  # 8 fresh addresses
        eight = await asyncio.gather(*(_guess(port, s, seconds, 16) for s in sources))
    finally:
        relay_bench._stop(proc)
    auth8 = [c.get("decode.auth", 0) for c in eight]
    return {"seconds": seconds,
            "one_address": one, "one_address_auth_per_s": round(one.get("decode.auth", 0) / seconds, 2),
            "eight_addresses_auth_per_s": round(sum(auth8) / seconds, 2),
            "eight_addresses_max_per_address_per_s": round(max(auth8) / seconds, 2),
            "eight_addresses_rate_refusals": sum(c.get("decode.rate", 0) for c in eight)}


# ---------------------------------------------------------------- pings


async def bench_pings(folder: Path, total: int = 32 * MiB) -> dict[str, Any]:
    from websockets.frames import Frame as WsFrame
    from websockets.frames import Opcode

    proc, port, _ = _serve(folder)
    try:
        await asyncio.sleep(0.5)
        base = _rss(proc.pid)
        sock = await _handshake(port, rcvbuf=4096)
        pings = b"".join(WsFrame(Opcode.PING, os.urandom(125)).serialize(mask=True, extensions=[])
                         for _ in range(512))
        sent, peak, closed_at = 0, base, None
        began = time.monotonic()
        view, at = memoryview(pings), 0
        while time.monotonic() - began < 20.0:
            peak = max(peak, _rss(proc.pid))
            if sent >= total:
                chunk = view[:131]  # a ping now and then: does the connection still stand?
                await asyncio.sleep(0.05)
            else:
                chunk = view[at:]
            try:
                n = sock.send(chunk)
            except BlockingIOError:
                await asyncio.sleep(0.002)
                continue
            except OSError:
                closed_at = time.monotonic() - began
                break
            if sent < total:
                sent += n
                at = (at + n) % len(pings)
        flood_s = time.monotonic() - began
        await asyncio.sleep(0.5)
        after = _rss(proc.pid)
        sock.close()
    finally:
        relay_bench._stop(proc)
    return {"sent_mib": round(sent / MiB, 2), "rss_before_mib": round(base / MiB, 1),
            "rss_peak_mib": round(peak / MiB, 1), "rss_growth_mib": round((peak - base) / MiB, 2),
            "rss_after_mib": round(after / MiB, 1), "closed": closed_at is not None,
            "closed_after_s": None if closed_at is None else round(closed_at, 2),
            "watched_s": round(flood_s, 1)}


# ---------------------------------------------------------------- forged window pongs


async def bench_forged(folder: Path, seconds: float = 6.0) -> dict[str, Any]:
    from websockets.frames import Frame as WsFrame
    from websockets.frames import Opcode

    from posewire.producers.publisher import Publisher

    proc, port, _ = _serve(folder)
    stop = asyncio.Event()

    async def produce() -> None:
        async with Publisher(f"ws://127.0.0.1:{port}", "bench") as pub:
            i = 0
            while not stop.is_set():
                await pub.send_frame({"h_yaw": (i % 100) / 100})
                i += 1
                await asyncio.sleep(1 / 60)

    def pong(payload: bytes) -> bytes:
        return WsFrame(Opcode.PONG, payload).serialize(mask=True, extensions=[])

    producing = asyncio.create_task(produce())
    try:
        await asyncio.sleep(1.0)  # the stream's rate is known
        sock = await _handshake(port, rcvbuf=4 * MiB)
        began = time.monotonic()
        closed_at = None
        while time.monotonic() - began < seconds:
            # the frames the relay has written by now, guessed from the stream's rate: every
            # mark within a second of the guess, in the old 12-byte form and the new one
            guess = int((time.monotonic() - began) * 60)
            forged = b"".join(pong(b"pwW1" + m.to_bytes(8, "big")) + pong(
                b"pwW1" + m.to_bytes(8, "big") + os.urandom(8))
                for m in range(max(1, guess - 60), guess + 60))
            try:
                sock.send(forged)
            except BlockingIOError:
                pass
            except OSError:
                closed_at = time.monotonic() - began
                break
            await asyncio.sleep(0.02)
        messages = await _read_messages(sock, 0.5)
        sock.close()
    finally:
        stop.set()
        await asyncio.gather(producing, return_exceptions=True)
        relay_bench._stop(proc)
    frames = sum(1 for op, _ in messages if op == 2) - 1  # the welcome
    closes = [int.from_bytes(p[:2], "big") for op, p in messages if op == 8]
    return {"stream_s": seconds, "frames_received": frames,
            "closed": closed_at is not None or bool(closes),
            "close_code": closes[0] if closes else None}


# ---------------------------------------------------------------- frame length


async def bench_length(folder: Path) -> dict[str, Any]:
    proc, port, _ = _serve(folder)
    try:
        sock = await _handshake(port, hello=b"")
        sock.send(b"\x82\xff" + (2**63 + 5).to_bytes(8, "big") + os.urandom(4))
        messages = await _read_messages(sock, 3.0)
        sock.close()
    finally:
        relay_bench._stop(proc)
    closes = [int.from_bytes(p[:2], "big") for op, p in messages if op == 8]
    return {"close_code": closes[0] if closes else None}


# ---------------------------------------------------------------- origin


async def bench_origin(folder: Path) -> dict[str, Any]:
    from websockets.asyncio.client import connect
    from websockets.exceptions import InvalidStatus
    from websockets.typing import Origin, Subprotocol

    from posewire.codec.wire import SUBPROTOCOL

    proc, port, log_path = _serve(folder, "--allow-origin", "https://bücher.example")
    out: dict[str, Any] = {}
    try:
        for origin in ("https://xn--bcher-kva.example", "https://evil.example"):
            try:
                ws = await connect(f"ws://127.0.0.1:{port}", origin=Origin(origin), proxy=None,
                                   subprotocols=[Subprotocol(SUBPROTOCOL)])
                await ws.close()
                out[origin] = 101
            except InvalidStatus as exc:
                out[origin] = exc.response.status_code
        await asyncio.sleep(0.3)
    finally:
        relay_bench._stop(proc)
    lines = log_path.read_text(errors="replace").splitlines()
    out["start_line"] = next((line for line in lines if "origin" in line.lower()), None)
    return out


# ---------------------------------------------------------------- backoff


async def bench_backoff(span: float = 4.0) -> dict[str, Any]:
    sys.path.insert(0, str(ROOT / "tests"))
    from brokenrelay import broken_relay

    from posewire.consumers.subscriber import Subscriber
    from posewire.producers.publisher import Publisher

    out: dict[str, Any] = {}
    welcomes: list[float] = []
    async with broken_relay(welcomes=welcomes, oversize_after_welcome=True) as url:
        sub = Subscriber(url, "bench")
        await sub.connect()

        async def read() -> None:
            with contextlib.suppress(Exception):
                async for _ in sub:
                    pass

        reader = asyncio.create_task(read())
        await asyncio.sleep(span)
        reader.cancel()
        await asyncio.gather(reader, return_exceptions=True)
        await sub.close()
    out["subscriber_connects_oversize"] = len(welcomes)
    welcomes = []
    async with broken_relay(welcomes=welcomes, close_after_welcome=True) as url:
        pub = Publisher(url, "bench")
        await pub.connect()
        await asyncio.sleep(span)
        await pub.close()
    out["publisher_connects_close"] = len(welcomes)
    out["span_s"] = span
    return out


BENCHES: dict[str, Callable[..., Any]] = {
    "tokens": bench_tokens, "pings": bench_pings, "forged": bench_forged,
    "length": bench_length, "origin": bench_origin, "backoff": bench_backoff,
}


async def _run(only: list[str], seconds: float, folder: Path) -> dict[str, Any]:
    results: dict[str, Any] = {}
    for name in only:
        if name == "tokens":
            results[name] = await bench_tokens(folder, seconds)
        elif name == "backoff":
            results[name] = await bench_backoff()
        else:
            results[name] = await BENCHES[name](folder)
        print(f"{name}: {json.dumps(results[name], ensure_ascii=False)}", flush=True)
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default=",".join(BENCHES), help="comma-separated rows to run")
    parser.add_argument("--seconds", type=float, default=10.0, help="length of the token guessing")
    parser.add_argument("--json", metavar="PATH", help="also write the figures as JSON")
    args = parser.parse_args(argv)
    only = [n.strip() for n in args.only.split(",") if n.strip()]
    unknown = [n for n in only if n not in BENCHES]
    if unknown:
        parser.error(f"unknown rows: {', '.join(unknown)}")
    with tempfile.TemporaryDirectory() as tmp:
        results = asyncio.run(_run(only, args.seconds, Path(tmp)))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    with contextlib.suppress(KeyboardInterrupt):
        sys.exit(main())
